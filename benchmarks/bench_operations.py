"""What progress lines, periodic checkpoints and profiles cost, side by side with a plain run.

Alternates, ``--repeat`` times, runs of the same ``yewpy`` command with ``--quiet`` (baseline),
with progress lines every ``--every`` seconds, with a checkpoint every ``--every`` seconds, and
with ``--profile``, on 1 and 2 ranks; prints the median search seconds and each median's ratio
to the baseline's (1.00 = free).

    python benchmarks/bench_operations.py --repeat 5
    python benchmarks/bench_operations.py --ranks 1 --app maxclique g.clq
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_mpi_speedup import run  # noqa: E402


def seconds(ranks: int, args: list[str]) -> float:
    return run(ranks, args)["seconds"]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--ranks", default="1,2")
    parser.add_argument("--every", type=float, default=1.0, help="seconds between lines / checkpoints")
    parser.add_argument("--app", nargs=argparse.REMAINDER, default=["nqueens", "15"])
    args = parser.parse_args()
    tmp = Path(tempfile.mkdtemp())
    every = str(args.every)
    variants = {"baseline (--quiet)": ["--quiet"],
                f"progress every {every} s": ["--progress-every", every],
                f"checkpoint every {every} s": ["--quiet", "--checkpoint", str(tmp / "c.ckpt"),
                                                "--checkpoint-every", every],
                "profile": ["--quiet", "--profile", str(tmp / "p.json")]}
    for ranks in map(int, args.ranks.split(",")):
        times: dict[str, list[float]] = {name: [] for name in variants}
        for _ in range(args.repeat):
            for name, extra in variants.items():
                times[name].append(seconds(ranks, [*args.app, "--skeleton", "stacksteal", *extra]))
        base = statistics.median(times["baseline (--quiet)"])
        print(f"{' '.join(args.app)}, stacksteal, {ranks} rank(s), medians of {args.repeat}:")
        for name, values in times.items():
            median = statistics.median(values)
            print(f"  {name:28s} {median:8.3f} s   x{median / base:.3f}")


if __name__ == "__main__":
    main()
