"""The proven bound of a stopped optimisation (``Result.bound``): how close it is, and what it costs.

    python benchmarks/bench_bound.py [--shared /path/to/instances] [--limits 0.5,2,8] [--ranks 1]

For each case and time limit: the answer, the bound and the gap the CLI prints, the known optimum
(from the instance's README or .opt file), whether the optimum lies between answer and bound on
the right side, and the seconds past the limit (``wall - limit``: the bounding's share, 5% of
the run clamped to 0.01-1 s, plus the end of the run). One run each.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from pathlib import Path

BIN = Path(sys.executable).parent


#: one node each of six GPU kinds (docs/benchmarks.md, issue 24's many-kind cases)
SIX_KINDS = "+".join(f"{kind}:1x8" for kind in ("dgx-a100-80g", "dgx-a100-40g", "dgx-h100-80g",
                                                 "dgx-v100-32g", "dgx-v100-16g", "p3.16xlarge"))


def cases(shared: Path) -> list[tuple[str, list[str], float]]:
    """(name, CLI arguments, known optimum: the instances' README and .opt files, the planner's
    own full search). maxclique and knapsack maximise, tsp and dnn-plan minimise."""
    knap = shared / "knapsack" / "large_scale" / "knapPI_1_10000_1000_1"
    knap_optimum = int(Path(f"{knap}.opt").read_text().split()[0])
    plan = ["dnn-plan", "--model", "megatron-1.7b", "--global-batch", "64", "--cluster", SIX_KINDS]
    return [
        ("maxclique brock400_1", ["maxclique", str(shared / "clique" / "brock400_1.clq")], 27),
        ("maxclique C250.9", ["maxclique", str(shared / "clique" / "C250.9.clq")], 44),
        ("knapsack knapPI_1_10000 --python", ["knapsack", str(knap), "--python"], knap_optimum),
        ("tsp eil51", ["tsp", str(shared / "tsp" / "eil51.tsp")], 426),
        ("dnn-plan 1.7B on six kinds", plan, 0.30379),
    ]


def main() -> None:
    parser = argparse.ArgumentParser()
    here = Path(__file__).resolve().parents[1]
    parser.add_argument("--shared", type=Path, default=here / "shared" / "instances")
    parser.add_argument("--limits", default="0.5,2,8")
    parser.add_argument("--ranks", type=int, default=1)
    args = parser.parse_args()
    for name, argv, optimum in cases(args.shared):
        for limit in map(float, args.limits.split(",")):
            command = [str(BIN / "yewpy"), *argv, "--time-limit", str(limit), "--json", "--quiet"]
            if args.ranks > 1:
                command = [str(BIN / "mpiexec"), "-n", str(args.ranks), *command]
            out = subprocess.run(command, capture_output=True, text=True, check=True)
            data = json.loads(next(line for line in out.stdout.splitlines() if line.startswith("{")))
            objective = data.get("objective")
            gap = data.get("gap")
            spent = data["seconds"]
            gap_text = "-" if gap is None else f"{gap:.2%}"
            print(f"{name:34} limit {limit:4} s: {data['status']:10} answer {objective:<10g} bound "
                  f"{data.get('bound')!s:<20} gap {gap_text:>7}  optimum {optimum:<9g}"
                  f" sound {sound(data, optimum, argv[0] in ('tsp', 'dnn-plan'))}  past the limit"
                  f" {spent - limit:+.2f} s", flush=True)


def sound(data: dict, optimum: float, minimise: bool) -> bool:
    """The bound is at least as good as the optimum, the answer no better (to 1e-9, the
    planner's times)."""
    bound, objective = data.get("bound"), data.get("objective")
    if bound is None or objective is None:
        return False
    low, high = (bound, objective) if minimise else (objective, bound)
    return low - 1e-9 * abs(low) <= optimum <= high + 1e-9 * abs(high)


if __name__ == "__main__":
    main()
