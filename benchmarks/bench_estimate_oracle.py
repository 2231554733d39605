"""How well could any estimator do on a binomial UTS tree? The progress estimate against an oracle
that knows the tree's generator.

    python benchmarks/bench_estimate_oracle.py [T3L] [T3] [T3XXL]

In a binomial tree (UTS ``-t 0``) every node below the root has m children with probability q, or
none, drawn independently. Once part of the tree is searched, what is left is U unexplored
subtrees (the children the engine's stack has not generated yet), each an independent
Galton-Watson tree, and the tree is finite. So the remaining nodes follow a known law: the total
progeny of U trees, conditioned on finiteness (Dwass's hitting-time theorem:
P(T_U = n) = U/n P(m Bin(n, q) = n - U)). Its mean is the best estimate in squared error, its
median the best in absolute error; no estimator that knows only the searched part can do better
on average. This script walks the engine to 10%, 25%, 50% and 75% of the tree and prints, as
ratios to the true count: the oracle's mean, median and 5%-95% interval, and yewpy's recursive
estimate with its range (``Sampler.left``, given the share of the time so far that a progress
line's would have; the headline a run prints also weighs Knuth's probes: bench_estimate.py).
"""

from __future__ import annotations

import copy
import math
import sys
import time

from yewpy._engine import Engine
from yewpy.apps.uts import NAMED_TREES, UTS, parse_uts_params
from yewpy.operations.treesize import Sampler, TreeSize
from yewpy.search import core_of

FRACTIONS = (0.10, 0.25, 0.50, 0.75)
#: the true node counts (docs/benchmarks.md, "App: UTS"; T3XXL: "Heavy tails")
TRUTH = {"T3": 4_112_897, "T3L": 111_345_631, "T3XXL": 2_793_220_501}


def extinction(q: float, m: int) -> float:
    """The probability that a node's subtree is finite: the least root of s = 1 - q + q s^m."""
    s = 0.0
    for _ in range(100_000_000):
        nxt = 1 - q + q * s ** m
        if nxt - s < 1e-17:
            return nxt
        s = nxt
    return s


def forest_law(u: int, q: float, m: int, points: int = 40_000) -> tuple[list[float], list[float]]:
    """The law of the total size of u independent subtrees, conditioned on all being finite: sizes
    n = u + m k and their cumulative probabilities, on a grid (every k up to 2,000, then
    geometric), integrated by the trapezoid rule where the grid is sparse."""
    log_q, log_p = math.log(q), math.log1p(-q)

    def log_pmf(k: float) -> float:
        n = u + m * k
        return (math.log(u / n) + math.lgamma(n + 1) - math.lgamma(k + 1) - math.lgamma(n - k + 1)
                + k * log_q + (n - k) * log_p)

    ks = list(range(2_000))
    top, k = 1e13 / m, 2_000.0
    ratio = (top / k) ** (1 / points)
    while k < top:
        ks.append(k)
        k *= ratio
    sizes, cdf, total = [], [], 0.0
    prev_k, prev_p = None, 0.0
    for k in ks:
        p = math.exp(log_pmf(k))
        if prev_k is None or k - prev_k == 1:
            total += p
        else:
            total += (p + prev_p) / 2 * (k - prev_k)
        prev_k, prev_p = k, p
        sizes.append(u + m * k)
        cdf.append(total)
    finite = extinction(q, m) ** u
    if abs(total / finite - 1) > 1e-3:
        raise RuntimeError(f"the grid holds {total:.6g} of the law's {finite:.6g}")
    return sizes, [c / total for c in cdf]


def quantile(sizes: list[float], cdf: list[float], p: float) -> float:
    """The size at cumulative probability ``p``, interpolated linearly between grid points."""
    for i, c in enumerate(cdf):
        if c >= p:
            if i == 0:
                return sizes[0]
            lo = cdf[i - 1]
            return sizes[i - 1] + (sizes[i] - sizes[i - 1]) * (p - lo) / (c - lo)
    return sizes[-1]


def main() -> None:
    names = sys.argv[1:] or ["T3L"]
    for name in names:
        params = parse_uts_params(NAMED_TREES[name])
        q, m, truth = params["q"], params["m"], TRUTH[name]
        eta = extinction(q, m)
        mean_subtree = 1 / (1 - m * q * eta ** (m - 1))      # E[size of a subtree | finite]
        whole = 1 + params["b0"] * mean_subtree
        print(f"{name}: q {q}, m {m}, {truth:,} nodes; a subtree below the root holds "
              f"{mean_subtree:,.0f} nodes on average (given that it is finite), so the whole tree "
              f"{whole:,.0f} ({whole / truth:.2f} of it)")
        print(f"{'at':>4} {'unexplored':>10} {'oracle mean':>11} {'median':>7} {'5%-95%':>15} {'yewpy':>6} "
              f"{'range':>15}")
        problem = UTS.named(name).core()
        engine = Engine(core_of(problem), tracking=True)
        engine.start_root()
        started = time.perf_counter()
        for fraction in FRACTIONS:
            target = int(fraction * truth)
            while engine.active and engine.nodes < target:
                engine.run(target - engine.nodes)
            frames, _ = engine.frontier()
            sampler = Sampler(core_of(copy.deepcopy(problem)), {}, seed=1)   # fresh: no earlier line to reuse
            unexplored = sum(
                sampler.prober.count(engine.frame_node(f), depth, None) - generated
                for f, (depth, _, _, generated, _, exhausted) in enumerate(frames) if not exhausted)
            sizes, cdf = forest_law(unexplored, q, m)
            done = engine.nodes

            def ratio(left: float, done: int = done, truth: int = truth) -> float:
                return (done + left) / truth

            left = sampler.left(engine, None, elapsed=time.perf_counter() - started)
            estimate = TreeSize.recursive(done, left)
            low, high = (x / truth for x in estimate.range(done))
            high = f"{high:.2f}" if estimate.bounded else "open"
            spread = f"[{ratio(quantile(sizes, cdf, 0.05)):.2f}, {ratio(quantile(sizes, cdf, 0.95)):.2f}]"
            print(f"{fraction:4.0%} {unexplored:10,} {ratio(unexplored * mean_subtree):11.2f} "
                  f"{ratio(quantile(sizes, cdf, 0.5)):7.2f} {spread:>15} {estimate.nodes / truth:6.2f} "
                  f"{f'[{low:.2f}, {high}]':>15}", flush=True)


if __name__ == "__main__":
    main()
