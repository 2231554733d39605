"""How good the tree-size estimates are: progress estimates at 10%, 25% and 50% of a run, and
``--estimate`` before it, against the node count the run ends with (one rank).

    python benchmarks/bench_estimate.py [--shared /path/to/instances] [--estimate-seconds 2] [--sweep]
    python benchmarks/bench_estimate.py --before-only [--sweep]   # --estimate alone, each estimator's ratio

For each case: the run's JSON progress lines (every 1/40 of a timing run), the estimates of the
line nearest each fraction of the run, and their ratios to the true count (estimate / truth):
the headline (the recursive estimate from the searched part, combined with Knuth's probes where
those are trusted) and its range ("open": no upper end, the tree is heavy-tailed), then the
recursive and Knuth's alone, then
``--estimate`` (a short search plus probes) against the truth. Optimisation cases estimate the
tree under the incumbent of the moment; their ratios are reported as they come.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from pathlib import Path

YEWPY = [str(Path(sys.executable).parent / "yewpy")]


def cases(shared: Path) -> dict:
    return {
        "uts T1L": ["uts", "--tree", "T1L"],
        "uts T3L": ["uts", "--tree", "T3L"],
        "nqueens 16": ["nqueens", "16"],
        "knapsack knapsackTest1 --python": ["knapsack", str(shared / "knapsack/yewpar_kp/knapsackTest1.kp"),
                                            "--python"],
        "maxclique p_hat300-3": ["maxclique", str(shared / "clique/p_hat300-3.clq")],
    }


def sweep(shared: Path) -> dict:
    """Cases the estimators were not tuned on (``--sweep``): other UTS shapes, another n-queens, a
    knapsack and two maximum-clique instances."""
    return {
        "uts T2 (geometric, cyclic)": ["uts", "--tree", "T2"],
        "uts T2L (geometric, cyclic)": ["uts", "--tree", "T2L"],
        "uts T4 (hybrid)": ["uts", "--tree", "T4"],
        "uts T5 (geometric, linear)": ["uts", "--tree", "T5"],
        "nqueens 15": ["nqueens", "15"],
        "knapsack knapPI_11_20_1000_1 --python": ["knapsack", str(shared / "knapsack/yewpar_kp" /
                                                              "knapPI_11_20_1000_1.kp"), "--python"],
        "maxclique brock200_1": ["maxclique", str(shared / "clique/brock200_1.clq")],
        "maxclique gen200_p0.9_55": ["maxclique", str(shared / "clique/gen200_p0.9_55.clq")],
    }


def _range(estimate: dict, truth: int) -> str:
    """An estimate's range as ratios to the truth; "open" where it has no upper end (heavy tails)."""
    high = "open" if estimate["high"] is None else f"{estimate['high'] / truth:.2f}"
    return f"[{estimate['low'] / truth:.2f}, {high}]"


def run(args: list[str]) -> subprocess.CompletedProcess:
    return subprocess.run([*YEWPY, *args], capture_output=True, text=True, timeout=900)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--shared", type=Path, default=Path(os.environ.get("YEWPY_SHARED", "/work/shared"))
                        / "instances")
    parser.add_argument("--estimate-seconds", type=float, default=2.0)
    parser.add_argument("--sweep", action="store_true", help="the cases not tuned on instead")
    parser.add_argument("--before-only", action="store_true",
                        help="only --estimate against one timed run: which estimator stood, and its ratio")
    opts = parser.parse_args()
    if opts.before_only:
        before_only(opts)
        return
    print("| case | nodes | seconds | at 10% | at 25% | at 50% | --estimate | probes at 50% |")
    print("|   |   |   | headline [range] (recursive, Knuth) | same | same |   |   |")
    print("|---|---|---|---|---|---|---|---|")
    for name, args in (sweep if opts.sweep else cases)(opts.shared).items():
        timing = json.loads(run([*args, "--json", "--quiet"]).stdout)
        every = max(timing["seconds"] / 40, 0.01)
        out = run([*args, "--json", "--progress-every", f"{every:.3f}"])
        final = json.loads(out.stdout)
        truth, seconds = final["nodes"], final["seconds"]
        records = [json.loads(line)["progress"] for line in out.stderr.splitlines() if line.startswith("{")]
        cells = []
        probes = 0
        for fraction in (0.10, 0.25, 0.50):
            near = min(records, key=lambda r: abs(r["seconds"] - fraction * seconds), default=None)
            if near is None or "estimate" not in near:
                cells.append("-")
                continue
            est, rec, knuth = near["estimate"], near["estimate_recursive"], near["estimate_knuth"]
            flag = "" if knuth["consistent"] else " lower bound"
            cells.append(f"**{est['nodes'] / truth:.2f}** {_range(est, truth)} ({rec['nodes'] / truth:.2f}, "
                         f"{knuth['nodes'] / truth:.2f}{flag})")
            probes = knuth["probes"]
        before = json.loads(run([*args, "--estimate", str(opts.estimate_seconds), "--json"]).stdout)
        report = before["metrics"]["estimate"]
        exact = " (exact)" if report["exact"] else ""
        ratio = report["nodes"] / truth
        row = [name, f"{truth:,}", f"{seconds:.2f}", *cells, f"{ratio:.2f}{exact} {_range(report, truth)}",
               f"{probes:,}"]
        print("| " + " | ".join(row) + " |", flush=True)


def before_only(opts: argparse.Namespace) -> None:
    """``--estimate`` alone against the run's node count: the headline's ratio and estimator, and
    each estimator's ratio alone (recursive, Knuth's, sampled subtrees)."""
    print("| case | nodes | seconds | --estimate | stands | recursive | Knuth's | sampled (subtrees) |")
    print("|---|---|---|---|---|---|---|---|")
    for name, args in (sweep if opts.sweep else cases)(opts.shared).items():
        final = json.loads(run([*args, "--json", "--quiet"]).stdout)
        truth = final["nodes"]
        report = json.loads(run([*args, "--estimate", str(opts.estimate_seconds), "--json"]).stdout
                            )["metrics"]["estimate"]
        if report["exact"]:
            alone = ["-", "-", "-"]
        else:
            alone = []
            for key in ("estimate_recursive", "estimate_knuth", "estimate_sampled"):
                one = report.get(key)
                alone.append("-" if not one else f"{one['nodes'] / truth:.2f} ({one['probes']:,})"
                             if key != "estimate_recursive" else f"{one['nodes'] / truth:.2f}")
        stands = "exact" if report["exact"] else report["estimator"]
        print(f"| {name} | {truth:,} | {final['seconds']:.2f} | {report['nodes'] / truth:.2f} "
              f"{_range(report, truth)} | {stands} | " + " | ".join(alone)
              + " |", flush=True)


if __name__ == "__main__":
    main()
