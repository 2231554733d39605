"""How long each fault takes to end a job, over many runs (issue 11's goal: under 10 s, with the
last good checkpoint intact and resumable to the exact answer).

Runs the scenarios of ``tests/fault_scenarios.py`` on real ranks and prints, per fault, the runs
that ended cleanly and the slowest time from the fault to the end of the job.

    python benchmarks/bench_faults.py --runs 10
"""

from __future__ import annotations

import argparse
import signal
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))

import fault_scenarios as faults  # noqa: E402

SCENARIOS = {
    "input missing on 1 of 2 ranks": lambda d: faults.partial_input(1, 1),
    "input missing on 3 of 4 ranks": lambda d: faults.partial_input(1, 3),
    "kill -9 of rank 2 of 3": lambda d: faults.kill_9_one_rank(d, 3),
    "SIGTERM, a rank not yet in MPI_Init": lambda d: faults.sigterm_in_a_collective(d, "unstarted"),
    "SIGTERM, rank 0 in the start-up agreement": lambda d: faults.sigterm_in_a_collective(d, "joined"),
    "SIGINT twice, 20 ms apart (2 ranks)": lambda d: faults.double_signal(d, 2, signal.SIGINT),
    "exception planted on rank 1 of 2": lambda d: faults.planted_exception(d, 2),
    "exception planted on rank 3 of 4": lambda d: faults.planted_exception(d, 4),
}


def clean(report: dict) -> bool:
    """Ended, without a traceback unless one was planted, and any checkpoint resumed exactly."""
    if report["seconds"] is None:
        return False
    if "shown" in report:
        return report["shown"]
    return "Traceback" not in report["stderr"] and report.get("resumed", True)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5)
    opts = parser.parse_args(argv)
    worst_all = 0.0
    print(f"{'fault':44s} {'clean':>7s} {'slowest end (s)':>16s}")
    for name, scenario in SCENARIOS.items():
        good, slowest = 0, 0.0
        for _ in range(opts.runs):
            with tempfile.TemporaryDirectory() as folder:
                report = scenario(Path(folder))
            good += clean(report)
            slowest = max(slowest, report["seconds"] if report["seconds"] is not None else float("inf"))
        worst_all = max(worst_all, slowest)
        print(f"{name:44s} {good:>3d}/{opts.runs:<3d} {slowest:16.3f}", flush=True)
    return 0 if worst_all < 10 else 1


if __name__ == "__main__":
    raise SystemExit(main())
