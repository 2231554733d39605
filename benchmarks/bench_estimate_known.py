"""Planning a run that proves a known value optimal: ``--estimate S --better-than V`` against the run
``--better-than V`` itself (V the instance's published optimum), one rank.

    python benchmarks/bench_estimate_known.py [--shared /path/to/instances] [--seconds 1,4]

For each case: the nodes and seconds of the run under V (the truth), and for each S the estimate's
nodes and one-rank time as ratios to it (estimate / truth), with the range's ends. The same cases
without ``--better-than`` are timed once too, to show how much of a plain run the proof is.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from pathlib import Path

YEWPY = [str(Path(sys.executable).parent / "yewpy")]


def cases(shared: Path) -> list[tuple[str, list[str], int]]:
    """DIMACS graphs whose proof takes seconds to minutes (TSPLIB's up to 52 cities prove in under a
    tenth of a second: their estimates are exact)."""
    clique = shared / "clique"
    return [
        ("maxclique san200_0.9_3", ["maxclique", str(clique / "san200_0.9_3.clq")], 44),
        ("maxclique san400_0.9_1", ["maxclique", str(clique / "san400_0.9_1.clq")], 100),
        ("maxclique sanr200_0.9", ["maxclique", str(clique / "sanr200_0.9.clq")], 42),
        ("maxclique p_hat500-3", ["maxclique", str(clique / "p_hat500-3.clq")], 50),
        ("maxclique brock400_4", ["maxclique", str(clique / "brock400_4.clq")], 33),
    ]


def run(args: list[str]) -> dict:
    out = subprocess.run([*YEWPY, *args, "--json", "--quiet"], capture_output=True, text=True, timeout=3600)
    if out.returncode != 0:
        raise SystemExit(f"{' '.join(args)}: {out.stderr.strip()}")
    return json.loads(out.stdout)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--shared", type=Path, default=Path(os.environ.get("YEWPY_SHARED", "/work/shared"))
                        / "instances")
    parser.add_argument("--seconds", default="1,4", help="the S of --estimate S, comma-separated")
    parser.add_argument("--only", default="", help="run only the cases whose name contains this")
    opts = parser.parse_args()
    budgets = [float(s) for s in opts.seconds.split(",")]
    print("| case | V | plain run: nodes, s | run under V: nodes, s | "
          + " | ".join(f"--estimate {s:g}: nodes (range), time" for s in budgets) + " |")
    print("|---|---|---|---|" + "---|" * len(budgets))
    for name, args, value in cases(opts.shared):
        if opts.only not in name:
            continue
        plain = run(args)
        truth = run([*args, "--better-than", str(value)])
        cells = []
        for seconds in budgets:
            est = run([*args, "--better-than", str(value), "--estimate", str(seconds)])["metrics"]["estimate"]
            n = truth["nodes"]
            high = "open" if est["high"] is None else f"{est['high'] / n:.2f}"
            cells.append(f"{est['nodes'] / n:.2f} ({est['low'] / n:.2f}-{high}), "
                         f"{est['seconds_one_rank'] / truth['seconds']:.2f}")
        print(f"| {name} | {value} | {plain['nodes']:,}, {plain['seconds']:.1f} | "
              f"{truth['nodes']:,}, {truth['seconds']:.1f} | " + " | ".join(cells) + " |", flush=True)


if __name__ == "__main__":
    main()
