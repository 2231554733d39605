"""The pure-Python knapsack (``KnapsackPy``) against pybnb and against a hand-written recursion.

All three search the same tree: items in non-increasing profit/weight order, the children of a
node are the later items that still fit (in that order), the bound is Dantzig's (floored when
profits are integers) and the objective is the profit.  Goals: at least 20x pybnb's nodes per
second, and at most 2x the hand-written recursion's time.  Runs are interleaved (the order
rotates each round) and medians are reported, so machine noise hits all solvers alike.

pybnb is not a project dependency: run this script from a separate benchmark venv, e.g.

    python3 -m venv /tmp/benchenv
    /tmp/benchenv/bin/pip install pybnb==0.6.2 numpy cloudpickle mpi4py mpich cython setuptools wheel
    /tmp/benchenv/bin/pip install --no-build-isolation .
    /tmp/benchenv/bin/python benchmarks/bench_knapsack_python.py [--repeat 5]

Without pybnb it still compares yewpy with the recursion.  shared/ is found beside the
repository (``../shared``) unless YEWPY_SHARED names it.
"""

from __future__ import annotations

import argparse
import math
import os
import statistics
import sys
import time
from bisect import bisect_right
from collections.abc import Callable, Sequence
from itertools import accumulate
from pathlib import Path
from typing import Any

INSTANCES = ("yewpar_kp/knapsackTest1.kp", "low-dimensional/f8_l-d_kp_23_10000")
PYBNB_HINT = ("pybnb is not installed: the pybnb comparison is skipped.  Install it in a separate "
              "benchmark venv (never as a project dependency), see this script's docstring.")

Run = tuple[float, int, float]  # objective, nodes, seconds


def shared_dir() -> Path:
    """shared/ beside the repository root, or $YEWPY_SHARED."""
    env = os.environ.get("YEWPY_SHARED")
    return Path(env) if env else Path(__file__).resolve().parents[1].parent / "shared"


class Tree:
    """The items in density order, prefix sums and the Dantzig bound, shared by the baselines."""

    def __init__(self, profits: Sequence[float], weights: Sequence[float], capacity: float) -> None:
        order = sorted(range(len(profits)), key=lambda i: -profits[i] / weights[i])
        self.p = [profits[i] for i in order]
        self.w = [weights[i] for i in order]
        self.capacity = capacity
        self.cum_p = [0, *accumulate(self.p)]
        self.cum_w = [0, *accumulate(self.w)]
        self.integral = all(float(x).is_integer() for x in self.p)

    def bound(self, i: int, profit: float, weight: float) -> float:
        """Dantzig: whole items from i on while they fit, then a fraction of the next one."""
        limit = self.cum_w[i] + self.capacity - weight
        k = bisect_right(self.cum_w, limit, lo=i) - 1
        b = profit + self.cum_p[k] - self.cum_p[i]
        if k < len(self.p):
            b += (limit - self.cum_w[k]) * self.p[k] / self.w[k]
        return math.floor(b) if self.integral else b


def recursion(tree: Tree) -> Callable[[], tuple[float, Any, int]]:
    """A hand-written depth-first branch and bound over the same tree: what yewpy competes with.

    Node accounting follows yewpy's engine: the root and every generated child count, the child
    that fails its bound included; that child ends the loop over its siblings ("break").
    """
    p, w, n, capacity, bound = tree.p, tree.w, len(tree.p), tree.capacity, tree.bound

    def search() -> tuple[float, Any, int]:
        best, best_taken, nodes = -math.inf, None, 1

        def expand(i: int, profit: float, weight: float, taken: Any) -> None:
            nonlocal best, best_taken, nodes
            room = capacity - weight
            for j in range(i, n):
                if w[j] <= room:
                    cp, cw, ct = profit + p[j], weight + w[j], (j, taken)
                    nodes += 1
                    if bound(j + 1, cp, cw) <= best:
                        break
                    if cp > best:
                        best, best_taken = cp, ct
                    expand(j + 1, cp, cw, ct)

        expand(0, 0, 0, None)
        return best, best_taken, nodes

    return search


def pybnb_problem(tree: Tree, eager_bounds: bool) -> Any:
    """The same tree as a ``pybnb.Problem``; each node's ``branch()`` yields all its children.

    With ``eager_bounds`` each child carries its bound from ``branch()``, so pybnb drops failing
    children before queueing them; otherwise a child's bound is computed when it is explored.
    """
    import pybnb

    class Knapsack(pybnb.Problem):
        def __init__(self) -> None:
            self.state = (0, 0, 0, None, None)      # next item, profit, weight, taken, known bound

        def sense(self) -> int:
            return pybnb.maximize

        def objective(self) -> float:
            return self.state[1]

        def bound(self) -> float:
            i, profit, weight, _, known = self.state
            return tree.bound(i, profit, weight) if known is None else known

        def save_state(self, node: Any) -> None:
            node.state = self.state

        def load_state(self, node: Any) -> None:
            self.state = node.state

        def branch(self) -> Any:
            i, profit, weight, taken, _ = self.state
            room = tree.capacity - weight
            for j in range(i, len(tree.p)):
                if tree.w[j] <= room:
                    child = pybnb.Node()
                    cp, cw = profit + tree.p[j], weight + tree.w[j]
                    known = tree.bound(j + 1, cp, cw) if eager_bounds else None
                    child.state = (j + 1, cp, cw, (j, taken), known)
                    if eager_bounds:
                        child.bound = known
                    yield child

    return Knapsack()


def time_yewpy(inst: Any) -> Run:
    """One KnapsackPy search (construction not timed)."""
    from yewpy.apps.knapsack_python import KnapsackPy

    k = KnapsackPy(inst.profits, inst.weights, inst.capacity)
    t = time.perf_counter()
    r = k.search()
    return r.objective, r.nodes, time.perf_counter() - t


def time_recursion(inst: Any) -> Run:
    """One run of the hand-written recursion (setup not timed)."""
    search = recursion(Tree(inst.profits, inst.weights, inst.capacity))
    t = time.perf_counter()
    best, _, nodes = search()
    return best, nodes, time.perf_counter() - t


def time_pybnb(inst: Any, node_limit: int | None, eager_bounds: bool) -> Run:
    """One serial pybnb solve, depth-first; nodes = pybnb's explored nodes."""
    import pybnb

    problem = pybnb_problem(Tree(inst.profits, inst.weights, inst.capacity), eager_bounds)
    t = time.perf_counter()
    res = pybnb.solve(problem, comm=None, queue_strategy="depth", log=None, track_bound=False,
                      node_limit=node_limit)
    return res.objective, res.nodes, time.perf_counter() - t


def bench(path: Path, repeat: int, solvers: dict) -> dict:
    """``repeat`` rounds of every solver, rotating their order; medians per solver."""
    from yewpy.apps.knapsack import read_knapsack

    inst = read_knapsack(str(path))
    names = list(solvers)
    runs: dict = {name: [] for name in names}
    for k in range(repeat):
        for name in names[k % len(names):] + names[:k % len(names)]:
            runs[name].append(solvers[name](inst))
    out = {"instance": path.name, "optimum": inst.optimum}
    for name in names:
        objectives = {r[0] for r in runs[name]}
        nodes = {r[1] for r in runs[name]}
        assert len(objectives) == 1 and len(nodes) == 1, f"{name}: runs differ: {runs[name]}"
        out[name] = {"objective": objectives.pop(), "nodes": nodes.pop(),
                     "seconds": statistics.median(r[2] for r in runs[name])}
        out[name]["rate"] = out[name]["nodes"] / out[name]["seconds"]
    y, rec = out["yewpy"], out["recursion"]
    assert y["nodes"] == rec["nodes"], f"tree differs: yewpy {y['nodes']} nodes, recursion {rec['nodes']}"
    assert y["objective"] == rec["objective"], (y["objective"], rec["objective"])
    if inst.optimum is not None:
        assert y["objective"] == inst.optimum, (y["objective"], inst.optimum)
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=5, help="runs of each solver per instance (default 5)")
    parser.add_argument("--instances", nargs="+", default=list(INSTANCES),
                        help="paths under shared/instances/knapsack/")
    parser.add_argument("--pybnb-node-limit", type=int, default=None,
                        help="stop pybnb after this many explored nodes (nodes/s is still comparable)")
    parser.add_argument("--pybnb-eager-bounds", action="store_true",
                        help="pybnb children carry their bound from branch() (fewer explored nodes)")
    parser.add_argument("--no-pybnb", action="store_true", help="skip the pybnb comparison")
    args = parser.parse_args(argv)
    solvers: dict = {"yewpy": time_yewpy, "recursion": time_recursion}
    if not args.no_pybnb:
        try:
            import pybnb  # noqa: F401
        except ImportError:
            print(PYBNB_HINT)
        else:
            solvers["pybnb"] = lambda inst: time_pybnb(inst, args.pybnb_node_limit, args.pybnb_eager_bounds)
    root = shared_dir() / "instances" / "knapsack"
    print(f"{'instance':<24} {'solver':<10} {'objective':>9} {'nodes':>9} {'median s':>9} {'nodes/s':>10}")
    for name in args.instances:
        row = bench(root / name, args.repeat, solvers)
        for solver in solvers:
            r = row[solver]
            print(f"{row['instance']:<24} {solver:<10} {r['objective']:>9} {r['nodes']:>9} "
                  f"{r['seconds']:>9.4f} {r['rate']:>10.0f}")
        y, rec = row["yewpy"], row["recursion"]
        if "pybnb" in row and args.pybnb_node_limit is None:
            assert row["pybnb"]["objective"] == y["objective"], (row["pybnb"]["objective"], y["objective"])
        line = f"  yewpy time / recursion time = {y['seconds'] / rec['seconds']:.2f} (goal <= 2)"
        if "pybnb" in row:
            pb = row["pybnb"]
            line += (f"; yewpy / pybnb nodes/s = {y['rate'] / pb['rate']:.1f} (goal >= 20)"
                     f"; pybnb time / yewpy time = {pb['seconds'] / y['seconds']:.1f}")
            if args.pybnb_node_limit is not None and pb["nodes"] >= args.pybnb_node_limit:
                line += " (pybnb stopped at the node limit: its time is for a partial search)"
        print(line, flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
