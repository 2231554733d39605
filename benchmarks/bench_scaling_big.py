"""16-rank runs of the big trees and the steal-ahead mark, beside the machine's ceiling (issue 25).

Made for one lent 16-core machine and a few minutes of its time, so every step writes its results as
it goes (OUT/summary.md, OUT/rates.jsonl, one ``yewpy scaling`` folder per case) and a run cut short
keeps what it measured:

1. **The mark.** UTS T3L and T1L at P ranks under ``stacksteal`` with each ``--steal-ahead`` mark,
   every mark in every round (``yewpy scaling --baseline seq``: each round also times one plain
   sequential run, the 1-rank baseline). The mark with the lowest median on T3L is "the best".
2. **The big trees** (UTS T3XXL and T1XL, n-queens 17) at P ranks with mark 0 and the best mark.
   One rank cannot finish them inside the machine's lease (T3XXL: about 5 minutes), so their 1-rank
   time is the node count of the P-rank runs over the node rate of a time-limited 1-rank run.
3. **The ceiling** of each kind of work: P time-limited 1-rank runs started together against one
   alone (node rates), as in bench_scaling_curves.py; the lone run is also step 2's node rate.
4. **More points of the big trees' curves** (``--curve-ranks``, mark 0), last because they cost most.

    python benchmarks/bench_scaling_big.py --out /tmp/big                    # 16 ranks
    python benchmarks/bench_scaling_big.py --out /tmp/big --ranks 2 --small  # a dry run on a laptop
"""

from __future__ import annotations

import argparse
import json
import shlex
import statistics
import subprocess
import sys
import time
from pathlib import Path

from bench_mpi_speedup import tool
from bench_scaling_curves import timed_runs

from yewpy.tools.speedup import medians, read_runs

SMALL = {"uts-T3L": ["uts", "--tree", "T3L"], "uts-T1L": ["uts", "--tree", "T1L"]}
BIG = {"uts-T3XXL": ["uts", "--tree", "T3XXL"], "uts-T1XL": ["uts", "--tree", "T1XL"],
       "nqueens17": ["nqueens", "17"]}
# --small: the same steps on trees a 2-core machine finishes in seconds
DRY_SMALL = {"uts-T3": ["uts", "--tree", "T3"], "uts-T1": ["uts", "--tree", "T1"]}
DRY_BIG = {"uts-T3L": ["uts", "--tree", "T3L"], "nqueens13": ["nqueens", "13"]}


def note(out: Path, line: str) -> None:
    print(line, flush=True)
    with (out / "summary.md").open("a") as f:
        f.write(line + "\n")


def scaling(out: Path, name: str, args: list[str], ranks: int, marks: list[int], repeat: int,
            baseline: str) -> list:
    """One ``yewpy scaling`` sweep at ``ranks`` over the marks; its per-configuration medians."""
    variants = [arg for mark in marks for arg in ("--skeleton-args", f"stacksteal:--steal-ahead {mark}")]
    subprocess.run([tool("yewpy"), "scaling", "--ranks", str(ranks), "--repeat", str(repeat),
                    "--baseline", baseline, "--skeletons", "stacksteal", *variants,
                    "--out", str(out / name), "--", *args], check=True)
    return medians(read_runs(out / name / "scaling.csv"), baseline)


def ceiling(out: Path, name: str, args: list[str], ranks: int, seconds: float) -> tuple[float, float]:
    """(node rate of one run alone, ceiling at ``ranks``): the lone run's rate, and the median rate of
    ``ranks`` runs at once over it."""
    alone = timed_runs(args, 1, seconds)
    together = timed_runs(args, ranks, seconds)
    with (out / "rates.jsonl").open("a") as f:
        for copies, results in ((1, alone), (ranks, together)):
            for r in results:
                f.write(json.dumps({"case": name, "copies": copies, "nodes": r["nodes"],
                                    "seconds": r["seconds"]}) + "\n")
    rate = alone[0]["nodes"] / alone[0]["seconds"]
    return rate, statistics.median(r["nodes"] / r["seconds"] for r in together) / rate


def by_mark(rows: list, ranks: int) -> dict[int, object]:
    """The P-rank medians keyed by their steal-ahead mark."""
    return {int(shlex.split(m.parameters)[-1]): m for m in rows if m.ranks == ranks and m.skeleton != "seq"}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--ranks", type=int, default=16)
    parser.add_argument("--marks", default="0,1,2,8", help="steal-ahead marks to compare on the small trees")
    parser.add_argument("--repeat", type=int, default=2, help="rounds of the small-tree sweeps")
    parser.add_argument("--ceiling-seconds", type=float, default=6.0)
    parser.add_argument("--curve-ranks", default="8", help="more rank counts for the big trees, last")
    parser.add_argument("--small", action="store_true", help="a dry run on small trees")
    opts = parser.parse_args(argv)
    out, p = opts.out, opts.ranks
    out.mkdir(parents=True, exist_ok=True)
    small, big = (DRY_SMALL, DRY_BIG) if opts.small else (SMALL, BIG)
    marks = [int(m) for m in opts.marks.split(",")]
    started = time.perf_counter()
    note(out, f"# {p} ranks, stacksteal, marks {marks}, medians of {opts.repeat}")
    note(out, "| case | 1 rank s | mark | P ranks s | efficiency | idle s (all ranks) | steals |")
    best: int | None = None
    for name, args in small.items():
        rows = scaling(out, name, args, p, marks, opts.repeat, "seq")
        seq = next(m for m in rows if m.skeleton == "seq")
        table = by_mark(rows, p)
        for mark, m in table.items():
            note(out, f"| {name} | {seq.seconds:.3f} | {mark} | {m.seconds:.3f} | "
                      f"{seq.seconds / (p * m.seconds):.3f} | {m.idle_seconds:.2f} | {m.steals:.0f} |")
        if best is None:
            best = min(table, key=lambda mark: table[mark].seconds)
            note(out, f"best mark on {name}: {best} ({time.perf_counter() - started:.0f} s so far)")
    assert best is not None
    note(out, "\n| case | nodes | rate alone /s | 1 rank s (nodes / rate) | ceiling | mark | P ranks s "
              "| efficiency | of ceiling | idle s | steals |")
    for name, args in big.items():
        rate, ceil = ceiling(out, name, args, p, opts.ceiling_seconds)
        rows = scaling(out, name, args, p, sorted({0, best}), 1, "smallest")
        for mark, m in by_mark(rows, p).items():
            one = m.nodes / rate
            eff = one / (p * m.seconds)
            note(out, f"| {name} | {m.nodes:,.0f} | {rate:,.0f} | {one:.1f} | {ceil:.2f} | {mark} | "
                      f"{m.seconds:.3f} | {eff:.3f} | {eff / ceil:.3f} | {m.idle_seconds:.2f} "
                      f"| {m.steals:.0f} |")
        note(out, f"({time.perf_counter() - started:.0f} s so far)")
    for name, args in small.items():
        rate, ceil = ceiling(out, name, args, p, opts.ceiling_seconds)
        note(out, f"ceiling of {name} at {p}: {ceil:.3f} (rate alone {rate:,.0f} /s)")
    for r in [int(r) for r in opts.curve_ranks.split(",") if r]:
        for name, args in big.items():
            m = by_mark(scaling(out, f"{name}-{r}", args, r, [0], 1, "smallest"), r)[0]
            note(out, f"| {name} | {m.nodes:,.0f} | | | | 0 | {m.seconds:.3f} at {r} ranks | | | "
                      f"{m.idle_seconds:.2f} | {m.steals:.0f} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
