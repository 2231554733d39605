"""A steal's share on the wire, packed and unpacked in C against Python, side by side (issue 25).

A share of 54 UTS-like tasks (24-byte nodes, a few depths) is packed, then unpacked into a DepthPool,
by ``yewpy.runtime.taskpack`` with ``COMPILED`` on and off, alternating; medians of the rounds.

    python benchmarks/bench_taskpack.py [--tasks 54] [--rounds 7]
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import timeit

from yewpy.runtime import taskpack
from yewpy.skeletons.pool import DepthPool


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tasks", type=int, default=54)
    parser.add_argument("--rounds", type=int, default=7)
    opts = parser.parse_args(argv)
    tasks = [(100 + i // 10, os.urandom(24)) for i in range(opts.tasks)]
    times: dict = {(mode, step): [] for mode in ("c", "python") for step in ("pack", "unpack+pool")}
    for _ in range(opts.rounds):
        for mode in ("c", "python"):
            taskpack.COMPILED = mode == "c"
            payload = taskpack.pack(tasks)
            assert taskpack.unpack(payload) == tasks

            def pool(payload: object = payload) -> None:
                DepthPool().extend(taskpack.unpack(payload))

            n = 5000
            times[mode, "pack"].append(timeit.timeit(lambda: taskpack.pack(tasks), number=n) / n * 1e6)
            times[mode, "unpack+pool"].append(timeit.timeit(pool, number=n) / n * 1e6)
    taskpack.COMPILED = True
    for step in ("pack", "unpack+pool"):
        c, py = (statistics.median(times[mode, step]) for mode in ("c", "python"))
        print(f"{step}: C {c:.2f} us, Python {py:.2f} us, ratio {py / c:.1f}x ({opts.tasks} tasks)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
