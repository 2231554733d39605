"""What the MPI runtime's 1 ms slices cost a search, measured side by side in one process.

At 1 rank ``search()`` runs the engine unsliced (no runtime at all); on several ranks each rank
runs 1 ms slices and polls MPI between them.  This compares the two loops on the same tree:

    python benchmarks/bench_slice_overhead.py --repeat 7
"""

from __future__ import annotations

import argparse
import statistics
import time

from yewpy._engine import PAUSED, Engine
from yewpy.apps.knapsack import read_knapsack
from yewpy.apps.knapsack_python import KnapsackPy
from yewpy.apps.nqueens import NQueens
from yewpy.search import core_of

SLICE_SECONDS = 0.001


def timed(make_core, slice_seconds: float, prune_level: bool) -> float:
    engine = Engine(make_core(), prune_level=prune_level)
    engine.start_root()
    start = time.perf_counter()
    while engine.run(-1, slice_seconds) == PAUSED:
        pass
    return time.perf_counter() - start


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=7)
    opts = parser.parse_args()
    from bench_mpi_speedup import shared_dir

    kp = read_knapsack(str(shared_dir() / "instances/knapsack/low-dimensional/f8_l-d_kp_23_10000"))
    cases = {"nqueens 14 (compiled)": (lambda: NQueens(14), False),
             "f8 KnapsackPy (Python)": (lambda: core_of(KnapsackPy(kp.profits, kp.weights, kp.capacity)),
                                        True)}
    for name, (make, prune) in cases.items():
        plain, sliced = [], []
        for k in range(opts.repeat):
            for which in ((0, 1) if k % 2 == 0 else (1, 0)):
                (plain if which == 0 else sliced).append(timed(make, SLICE_SECONDS * which, prune))
        ratio = statistics.median(s / p for s, p in zip(sliced, plain))
        print(f"{name:24} unsliced {statistics.median(plain):.3f} s  "
              f"sliced {statistics.median(sliced):.3f} s  sliced/unsliced {ratio:.3f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
