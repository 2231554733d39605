"""``@yewpy.jit`` against the hand-written Cython apps, plain Python and plain C, side by side.

Each case runs the jitted plain-Python class and its reference on the same tree, alternating,
``--repeat`` times in one process after a warm-up, and prints nodes/s and the ratio of medians.
The classes are those of ``tests/jit_searches.py`` (the tutorial's, Part 3), imported from there.

    python benchmarks/bench_jit.py                      # everything (a few minutes)
    python benchmarks/bench_jit.py --only queens clique --repeat 5
    python benchmarks/bench_jit.py --only compile mpi

Cases: ``queens`` (n-queens 14 and 13 against ``yewpy nqueens``; plain Python on n = 11 and
13 for the 20x goal), ``knapsack`` (every ``shared/instances/knapsack/yewpar_kp`` file of at most 63
items, against the compiled ``Knapsack``), ``clique`` (brock200_1 and a sweep of DIMACS graphs
against ``yewpy maxclique``), ``mis`` (``shared/bench/mis_ref.c``'s tree: a jitted class against
plain C), ``compile`` (first-call compile and cached start-up, in fresh processes), ``mpi``
(jitted n-queens 15 on 2 ranks against 1, with the machine's ceiling from two 1-rank runs
started together).
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import textwrap
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SHARED = Path(os.environ.get("YEWPY_SHARED", ROOT.parent / "shared"))
sys.path.insert(0, str(ROOT / "tests"))

import numpy as np  # noqa: E402
from jit_searches import BitQueens, BitsetClique, MaskKnapsack  # noqa: E402

import yewpy  # noqa: E402


def timed(make, repeat: int) -> tuple[float, object]:
    """Median seconds of ``make().search()`` (after one warm-up run) and the last result."""
    make().search()
    times, result = [], None
    for _ in range(repeat):
        start = time.perf_counter()
        result = make().search()
        times.append(time.perf_counter() - start)
    return statistics.median(times), result


def side_by_side(name: str, jitted, reference, repeat: int) -> float:
    """Alternate the two, ``repeat`` rounds; print nodes/s and return jit/reference speed."""
    jitted().search()
    reference().search()
    tj, tr = [], []
    for _ in range(repeat):
        for make, out in ((jitted, tj), (reference, tr)):
            start = time.perf_counter()
            result = make().search()
            out.append(time.perf_counter() - start)
    rj, rr = jitted().search(), reference().search()
    assert (rj.nodes, rj.value if rj.kind == "enumeration" else rj.objective) == \
        (rr.nodes, rr.value if rr.kind == "enumeration" else rr.objective), name
    mj, mr = statistics.median(tj), statistics.median(tr)
    ratio = mr / mj
    print(f"{name:28} nodes {rj.nodes:>11,}  jit {rj.nodes / mj / 1e6:7.2f} M/s ({mj:.3f} s)  "
          f"ref {rr.nodes / mr / 1e6:7.2f} M/s ({mr:.3f} s)  jit/ref {ratio:.2f}")
    del result
    return ratio


def bench_queens(repeat: int) -> None:
    from yewpy.apps.nqueens import NQueens

    jq = yewpy.jit(BitQueens)
    side_by_side("nqueens 14", lambda: jq(14), lambda: NQueens(14), repeat)
    side_by_side("nqueens 13", lambda: jq(13), lambda: NQueens(13), repeat)
    for n in (11, 13):                  # the same tree plain and jitted (plain n = 14 takes ~25 s)
        tp, plain = timed(lambda n=n: BitQueens(n), 3)
        tj, fast = timed(lambda n=n: jq(n), repeat)
        print(f"{f'plain Python nqueens {n}':28} {plain.nodes / tp / 1e6:7.2f} M/s ({tp:.2f} s); jitted "
              f"{fast.nodes / tj / 1e6:.2f} M/s ({tj:.3f} s): jit/plain {tp / tj:.0f}x")


def bench_knapsack(repeat: int) -> None:
    from yewpy.apps.knapsack import Knapsack, read_knapsack

    jk = yewpy.jit(MaskKnapsack)
    ratios = []
    for path in sorted((SHARED / "instances" / "knapsack" / "yewpar_kp").glob("*.kp")):
        inst = read_knapsack(str(path))
        if len(inst.profits) > 63:
            continue
        args = (inst.profits, inst.weights, inst.capacity)
        if Knapsack(*args).search().nodes < 100000:
            continue                    # too small to time
        ratios.append(side_by_side(path.name, lambda a=args: jk(*a), lambda a=args: Knapsack(*a), repeat))
    import random

    for seed, n in ((3, 45), (5, 50), (7, 55), (11, 60), (13, 48)):     # Part 1's hard family, bigger
        rng = random.Random(seed)
        weights = [rng.randint(100, 1000) for _ in range(n)]
        args = ([w + 100 for w in weights], weights, sum(weights) // 2)
        if Knapsack(*args).search().nodes < 100000:
            continue
        ratios.append(side_by_side(f"w+100 family n={n} seed={seed}", lambda a=args: jk(*a),
                                   lambda a=args: Knapsack(*a), repeat))
    if ratios:
        print(f"knapsack jit/compiled: median {statistics.median(ratios):.2f}, worst {min(ratios):.2f} "
              f"over {len(ratios)} instances")


def bench_clique(repeat: int) -> None:
    from yewpy.apps.maxclique import MaxClique

    jc = yewpy.jit(BitsetClique)
    ratios, sizes = [], []
    names = ["brock200_1.clq", "brock200_2.clq", "brock200_4.clq", "san200_0.7_1.clq",
             "san200_0.9_1.clq", "p_hat300-1.clq", "p_hat300-2.clq", "p_hat300-3.clq", "keller4.clq",
             "MANN_a27.clq", "C125.9.clq", "johnson8-4-4.clq"]
    for name in names:
        graph = MaxClique.from_file(str(SHARED / "instances" / "clique" / name))
        rows = graph.rows.reshape(graph.size, -1)
        ratios.append(side_by_side(name, lambda r=rows, g=graph: jc(r, g.size), lambda g=graph: g, repeat))
        sizes.append(graph.search().nodes)
    print(f"maxclique jit/Cython: median {statistics.median(ratios):.2f}, worst {min(ratios):.2f} over "
          f"{len(ratios)} graphs")
    big = [r for r, n in zip(ratios, sizes) if n >= 100000]
    print(f"  on the {len(big)} trees of 100,000 nodes or more: median {statistics.median(big):.2f}, "
          f"worst {min(big):.2f}")


class MIS(yewpy.Optimisation):
    """Maximum independent set, the tree of shared/bench/mis_ref.c: branch on the lowest candidate,
    bound = size + popcount(candidates)."""

    def __init__(self, neighbours, n):
        self.nb = neighbours
        self.full = (1 << n) - 1

    def root(self):
        return (0, self.full)

    def children(self, node):
        size, cand = node
        while cand:
            low = cand & -cand
            v = low.bit_length() - 1
            cand ^= low
            yield (size + 1, cand & ~self.nb[v])

    def objective(self, node):
        return node[0]

    def bound(self, node):
        return node[0] + node[1].bit_count()


def mis_graph(n: int, p: float, seed: int) -> list:
    import random

    rng = random.Random(seed)
    g = [0] * n
    for a in range(n):
        for b in range(a + 1, n):
            if rng.random() < p:
                g[a] |= 1 << b
                g[b] |= 1 << a
    return g


def bench_mis(repeat: int) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        exe = Path(tmp) / "mis_ref"
        subprocess.run(["cc", "-O3", "-march=native", "-o", str(exe), str(SHARED / "bench" / "mis_ref.c")],
                       check=True)
        jm = yewpy.jit(MIS)
        ratios = []
        for n, p, seed in ((60, 0.12, 1), (58, 0.15, 2), (62, 0.1, 3), (50, 0.08, 4)):
            g = mis_graph(n, p, seed)
            feed = f"{n}\n" + " ".join(map(str, g)) + "\n"
            c_times, best, nodes = [], None, None
            jm(g, n).search()
            j_times = []
            for _ in range(repeat):
                out = subprocess.run([str(exe)], input=feed, capture_output=True, text=True, check=True)
                best, nodes, secs = out.stdout.split()
                c_times.append(float(secs))
                start = time.perf_counter()
                r = jm(g, n).search()
                j_times.append(time.perf_counter() - start)
            assert (int(r.objective), r.nodes) == (int(best), int(nodes)), (r.objective, r.nodes, best, nodes)
            mc, mj = statistics.median(c_times), statistics.median(j_times)
            ratios.append(mc / mj)
            print(f"MIS n={n} p={p} seed={seed}: {r.nodes:,} nodes; C {r.nodes / mc / 1e6:.0f} M/s, jit "
                  f"{r.nodes / mj / 1e6:.1f} M/s: jit/C {mc / mj:.2f}")
        print(f"MIS jit/C: median {statistics.median(ratios):.2f}, worst {min(ratios):.2f}")


COMPILE_SCRIPT = textwrap.dedent("""
    import sys, time
    start = time.perf_counter()
    sys.path.insert(0, {tests!r})
    import yewpy
    from jit_searches import BitQueens, MaskKnapsack, BitsetClique, tutorial_knapsack, random_graph
    cls, make = {{"queens": (BitQueens, lambda c: c(8)), "knapsack": (MaskKnapsack,
                  lambda c: c(*tutorial_knapsack())),
                  "clique": (BitsetClique, lambda c: c(random_graph(70, 0.5, 3), 70))}}[sys.argv[1]]
    imported = time.perf_counter()
    make(yewpy.jit(cls)).search()
    print(imported - start, time.perf_counter() - imported)
""")


def bench_compile(repeat: int) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        script = Path(tmp) / "first.py"
        script.write_text(COMPILE_SCRIPT.format(tests=str(ROOT / "tests")))
        for case in ("queens", "knapsack", "clique"):
            first, cached = [], []
            for k in range(repeat):
                env = dict(os.environ, YEWPY_JIT_CACHE=str(Path(tmp) / f"cache-{case}-{k}"))
                for out in (first, cached):
                    done = subprocess.run([sys.executable, str(script), case], capture_output=True, text=True,
                                          env=env, check=True)
                    out.append(float(done.stdout.split()[1]))
            print(f"{case:9} first search (compile + run) {statistics.median(first):.2f} s, cached "
                  f"start-up + run {statistics.median(cached):.3f} s (medians of {repeat}, import of yewpy "
                  "excluded)")


MPI_SCRIPT = textwrap.dedent("""
    import sys, time
    sys.path.insert(0, {tests!r})
    import yewpy
    from jit_searches import BitQueens
    from yewpy.runtime.ranks import world
    q = yewpy.jit(BitQueens)
    q(6).search()
    start = time.perf_counter()
    r = q(15).search("stacksteal")
    if world() is None or world().Get_rank() == 0:
        print(r.value, time.perf_counter() - start)
""")


def bench_mpi(repeat: int) -> None:
    mpiexec = str(Path(sys.executable).parent / "mpiexec")
    with tempfile.TemporaryDirectory() as tmp:
        script = Path(tmp) / "q15.py"
        script.write_text(MPI_SCRIPT.format(tests=str(ROOT / "tests")))

        def one(ranks: int) -> float:
            out = subprocess.run([mpiexec, "-n", str(ranks), sys.executable, str(script)],
                                 capture_output=True, text=True, check=True)
            value, secs = out.stdout.split()
            assert value == "2279184"
            return float(secs)

        def pair() -> float:
            procs = [subprocess.Popen([mpiexec, "-n", "1", sys.executable, str(script)],
                                      stdout=subprocess.PIPE, text=True) for _ in range(2)]
            return max(float(p.communicate()[0].split()[1]) for p in procs)

        t1, t2, tp = [], [], []
        for _ in range(repeat):
            t1.append(one(1))
            t2.append(one(2))
            tp.append(pair())
        m1, m2, mp = (statistics.median(t) for t in (t1, t2, tp))
        print(f"jitted nqueens 15 stacksteal: 1 rank {m1:.2f} s, 2 ranks {m2:.2f} s: speed-up {m1 / m2:.2f}; "
              f"ceiling 2*t1/t(pair) {2 * m1 / mp:.2f}; of the ceiling {(m1 / m2) / (2 * m1 / mp):.2f}")


CASES = {"queens": bench_queens, "knapsack": bench_knapsack, "clique": bench_clique, "mis": bench_mis,
         "compile": bench_compile, "mpi": bench_mpi}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--only", nargs="*", choices=sorted(CASES), default=list(CASES))
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    np.seterr(all="ignore")
    for name in args.only:
        print(f"== {name}", flush=True)
        CASES[name](args.repeat)


if __name__ == "__main__":
    main()
