"""The runtime's stealing knobs at P ranks, side by side (issue 25: UTS T3L's idle time at 16 ranks).

Each variant is a setting of the runtime's experiment knobs, read from the environment:
``YEWPY_DOORBELLS=0`` (victims answer only between slices), ``YEWPY_TASKPACK=python`` (shares
packed and unpacked in Python rather than C), ``YEWPY_KEEP_LEAVES=0`` (a split sends the children
its core knows to be leaves, as before they were kept), ``YEWPY_BACKOFF_CAP`` (the longest
wait after failed steals), ``YEWPY_HALF_MOST`` (the most tasks of a half share)
and ``YEWPY_SLICE_TARGET`` (seconds of search between two looks at the network).
Every round runs each small tree once sequentially and once per variant at P ranks (stacksteal), so
the variants and the 1-rank baseline share the machine's state. Then the ceiling (P time-limited
1-rank runs at once against one alone), then the big trees with today's settings against the
variant that was fastest on T3L. Writes OUT/runs.jsonl and OUT/summary.md as it goes, so a run cut
short keeps what it has.

    python benchmarks/bench_steal_tuning.py --out /tmp/tune                      # 16 ranks
    python benchmarks/bench_steal_tuning.py --out /tmp/tune --ranks 2 --small    # a dry run
    python benchmarks/bench_steal_tuning.py --out /tmp/sw --ranks 2 --sweep --variants today sendleaves
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

from bench_mpi_speedup import tool
from bench_scaling_big import ceiling, note

# Refusal hints (YEWPY_STEAL_HINTS, variants "hints...") were measured at commit dde810f and removed:
# thieves followed hints from idle rank to idle rank (docs/benchmarks.md). So was a work board in
# node-shared memory that thieves drew victims from in proportion to their open work
# (YEWPY_RICH_VICTIMS, variant "rich", commit 9cf8550): T3L 5% slower. The final gather's old path
# (YEWPY_SUM_DEPTHS=0, variant "gatherdepths", commit 39e3abb) was measured and removed too.
VARIANTS: dict[str, dict[str, str]] = {
    "today": {},
    "nobells": {"YEWPY_DOORBELLS": "0"},        # and so 100 us slices (MPITransport.slice_target)
    "pytaskpack": {"YEWPY_TASKPACK": "python"},
    "sendleaves": {"YEWPY_KEEP_LEAVES": "0"},
    "bells300us": {"YEWPY_SLICE_TARGET": "300e-6"},   # today's default on one node, since the fifth lease
    "slice100us": {"YEWPY_SLICE_TARGET": "100e-6"},   # the default before it (and still across nodes)
    "bells1ms": {"YEWPY_SLICE_TARGET": "1e-3"},
    "cap2ms": {"YEWPY_BACKOFF_CAP": "0.002"},
    "half1024": {"YEWPY_HALF_MOST": "1024"},
    "half64": {"YEWPY_HALF_MOST": "64"},
    "slice50us": {"YEWPY_SLICE_TARGET": "50e-6"},
}
# the fifth lease's second call named bells300us, today (then 100 us) and bells1ms
DEFAULT_VARIANTS = ["today", "slice100us", "bells1ms"]
SMALL = {"T3L": ["uts", "--tree", "T3L"], "T1L": ["uts", "--tree", "T1L"]}
BIG = {"T3XXL": ["uts", "--tree", "T3XXL"], "T1XL": ["uts", "--tree", "T1XL"], "NQ17": ["nqueens", "17"]}
DRY_SMALL = {"T3": ["uts", "--tree", "T3"], "T1": ["uts", "--tree", "T1"]}
# --sweep: every UTS sample tree a 2-core machine finishes in seconds, and n-queens, as the small set
SWEEP = {**{t: ["uts", "--tree", t] for t in ("T3L", "T1", "T2", "T3", "T4", "T5", "T1L", "T2L")},
         **{f"NQ{n}": ["nqueens", str(n)] for n in (13, 14, 15)}}
DRY_BIG = {"T3L": ["uts", "--tree", "T3L"]}


def one(out: Path, case: str, variant: str, ranks: int, args: list[str]) -> dict:
    """One run's JSON result, reduced to what the tables need, appended to OUT/runs.jsonl."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("YEWPY_")}
    env.update(VARIANTS.get(variant, {}))
    skeleton = ["--skeleton", "seq"] if ranks == 1 else ["--skeleton", "stacksteal"]
    began = time.perf_counter()
    command = [tool("mpiexec"), "-n", str(ranks), tool("yewpy"), *args, *skeleton, "--json", "--quiet"]
    proc = subprocess.run(command, capture_output=True, text=True, env=env, check=True)
    wall = time.perf_counter() - began
    result = json.loads(proc.stdout)
    rows = result["metrics"].get("per_rank", [])
    protocol = result["metrics"].get("protocol") or {}
    row = {"case": case, "variant": variant, "ranks": ranks, "seconds": result["seconds"], "wall": wall,
           "nodes": result["nodes"], "idle": sum(r["idle_seconds"] for r in rows),
           "steals": sum(r["steals_attempted"] for r in rows),
           "won": sum(r["steals_succeeded"] for r in rows),
           "latency": protocol.get("steal_latency_mean"), "termination": protocol.get("termination_seconds")}
    with (out / "runs.jsonl").open("a") as f:
        f.write(json.dumps(row) + "\n")
    return row


def table(out: Path, rows: list[dict], cases: dict, variants: list[str],
          ranks: int) -> dict[str, dict[str, float]]:
    """Per case and variant: median seconds, and the efficiency against the median sequential run."""
    medians: dict[str, dict[str, float]] = {}
    note(out, "\n| case | variant | ranks | median s | efficiency | runs | idle rank-s | steals (won) "
              "| latency ms |")
    note(out, "|---|---|---|---|---|---|---|---|---|")
    for case in cases:
        seq = [r["seconds"] for r in rows if r["case"] == case and r["ranks"] == 1]
        base = statistics.median(seq) if seq else float("nan")
        note(out, f"| {case} | seq | 1 | {base:.3f} | 1 | {', '.join(f'{s:.3f}' for s in seq)} | | | |")
        medians[case] = {}
        for variant in variants:
            mine = [r for r in rows if r["case"] == case and r["variant"] == variant and r["ranks"] == ranks]
            if not mine:
                continue
            med = statistics.median(r["seconds"] for r in mine)
            medians[case][variant] = med
            idle = statistics.median(r["idle"] for r in mine)
            steals = statistics.median(r["steals"] for r in mine)
            won = statistics.median(r["won"] for r in mine)
            lat = statistics.median(r["latency"] or 0 for r in mine) * 1e3
            runs = ", ".join(f"{r['seconds']:.3f}" for r in mine)
            note(out, f"| {case} | {variant} | {ranks} | {med:.3f} | {base / med / ranks:.3f} | {runs} | "
                      f"{idle:.2f} | {steals:.0f} ({won:.0f}) | {lat:.2f} |")
    return medians


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--ranks", type=int, default=16)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--big-rounds", type=int, default=2)
    parser.add_argument("--ceiling-seconds", type=float, default=4.0)
    parser.add_argument("--variants", nargs="*", default=DEFAULT_VARIANTS, choices=list(VARIANTS))
    parser.add_argument("--small", action="store_true", help="the dry run's trees, for a 2-core machine")
    parser.add_argument("--no-big", action="store_true", help="the small trees and their ceilings only")
    parser.add_argument("--sweep", action="store_true",
                        help="UTS sample trees up to T3L and n-queens 13-15 as the small set; no big trees")
    parser.add_argument("--big", nargs="*", choices=list(BIG), help="these big trees only (default: all)")
    parser.add_argument("--big-variants", nargs="*", choices=list(VARIANTS),
                        help="the big trees' variants (default: today and the fastest on the first tree)")
    opts = parser.parse_args(argv)
    opts.out.mkdir(parents=True, exist_ok=True)
    small, big = (DRY_SMALL, DRY_BIG) if opts.small else (SMALL, BIG)
    if opts.sweep:
        small, big = SWEEP, {}
    if opts.no_big:
        big = {}
    elif opts.big and not opts.small:
        big = {case: BIG[case] for case in opts.big}
    rows: list[dict] = []
    for round_ in range(opts.rounds):
        for case, args in small.items():
            rows.append(one(opts.out, case, "seq", 1, args))
            for variant in opts.variants:
                rows.append(one(opts.out, case, variant, opts.ranks, args))
        note(opts.out, f"round {round_ + 1} of {opts.rounds} done")
    best = "today"                      # --rounds 0: the big trees alone
    if opts.rounds:
        medians = table(opts.out, rows, small, opts.variants, opts.ranks)
        for case, args in small.items():
            _, ceil = ceiling(opts.out, case, args, opts.ranks, opts.ceiling_seconds)
            fastest = min(medians[case], key=medians[case].get)
            note(opts.out, f"ceiling {case} at {opts.ranks}: {ceil:.3f}; fastest variant {fastest}")
        first = next(iter(small))
        best = min(medians[first], key=medians[first].get)
    pair = opts.big_variants or (["today", best] if best != "today" else ["today"])
    big_rows: list[dict] = []
    for case, args in big.items():
        rate, ceil = ceiling(opts.out, case, args, opts.ranks, 6.0)
        for _ in range(opts.big_rounds):
            for variant in pair:
                big_rows.append(one(opts.out, case, variant, opts.ranks, args))
        nodes = big_rows[-1]["nodes"]
        note(opts.out, f"{case}: {nodes:,} nodes, 1 rank {nodes / rate:.1f} s at the lone rate; "
                       f"ceiling {ceil:.3f}")
        for variant in pair:
            mine = [r["seconds"] for r in big_rows if r["case"] == case and r["variant"] == variant]
            med = statistics.median(mine)
            note(opts.out, f"  {variant}: {', '.join(f'{s:.2f}' for s in mine)} s; efficiency "
                           f"{nodes / rate / med / opts.ranks:.3f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
