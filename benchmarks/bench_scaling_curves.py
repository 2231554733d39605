"""Scaling curves at 1-16 ranks (issue 10's sweep), each beside this machine's own ceiling.

For each case the script runs ``yewpy scaling --ranks R --repeat N --skeletons S --out OUT/CASE``
(every run's answer checked against the others, CSV and plots written), then starts as many
independent 1-rank runs at once as the largest rank count, each for a few seconds, and one alone:
their node rate against the lone run's is what that many busy processes cost each other here
(shared caches, memory, turbo, SMT), so ``ceiling = rate(P at once) / rate(alone)`` is the best
efficiency any runtime could show at P ranks.
It prints one Markdown row per case and keeps OUT/summary.md up to date as it goes.

    python benchmarks/bench_scaling_curves.py --out /tmp/curves --cases uts-T1L uts-T3L nqueens16
    python benchmarks/bench_scaling_curves.py --out /tmp/curves --ranks 1,2,4 --repeat 1 --cases nqueens14
"""

from __future__ import annotations

import argparse
import json
import random
import statistics
import subprocess
import sys
from pathlib import Path

from bench_mpi_speedup import cases, shared_dir, tool

from yewpy.tools.speedup import medians, read_runs


def subset_sum(path: Path, n: int = 32, top: int = 100_000, seed: int = 1) -> Path:
    """Write a knapsack with no exact fill (even weights = profits, odd capacity), so the search must
    prove its optimum: n = 32 is 536 M nodes and 13 s on one rank of the 2-core VM. None of the
    shared knapsack instances lies between 0.05 s and minutes. Optimum for the defaults: 1502100
    (a dynamic program over the capacity agrees)."""
    rng = random.Random(seed)
    weights = [2 * rng.randint(1, top) for _ in range(n)]
    path.write_text(f"{n} {sum(weights) // 2 | 1}\n" + "".join(f"{w} {w}\n" for w in weights))
    return path


def curve_cases(shared: Path, out: Path) -> dict[str, list[str]]:
    """bench_mpi_speedup's cases and the longer ones a 16-core machine needs."""
    clique = shared / "instances" / "clique"
    return {**cases(shared),
            "nqueens16": ["nqueens", "16"],
            "brock400_1": ["maxclique", str(clique / "brock400_1.clq")],
            "subsetsum32": ["knapsack", str(subset_sum(out / "subsetsum32.txt"))]}


def timed_runs(args: list[str], copies: int, seconds: float) -> list[dict]:
    """The JSON results of ``copies`` independent 1-rank runs of ``seconds`` started together."""
    procs = [subprocess.Popen([tool("mpiexec"), "-n", "1", tool("yewpy"), *args, "--time-limit", str(seconds),
                               "--json"], stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
             for _ in range(copies)]
    return [json.loads(p.communicate()[0]) for p in procs]


def rate(args: list[str], copies: int, seconds: float) -> float:
    """Median nodes per second of ``copies`` independent 1-rank runs of ``seconds`` started together."""
    return statistics.median(r["nodes"] / r["seconds"] for r in timed_runs(args, copies, seconds))


def sweep(name: str, args: list[str], opts: argparse.Namespace) -> str:
    """One case's sweep and ceiling; its Markdown row."""
    out = opts.out / name
    subprocess.run([tool("yewpy"), "scaling", "--ranks", opts.ranks, "--repeat", str(opts.repeat),
                    "--skeletons", opts.skeleton, "--timeout", str(opts.timeout), "--out", str(out),
                    "--", *args], check=True)
    rows = medians(read_runs(out / "scaling.csv"))
    first, last = rows[0], rows[-1]
    ceil = rate(args, last.ranks, opts.ceiling_seconds) / rate(args, 1, opts.ceiling_seconds)
    curve = " ".join(f"{m.ranks}:{m.efficiency:.2f}" for m in rows)
    eff = last.efficiency
    return (f"| {name} | {first.seconds:.3f} | {last.ranks} | {last.seconds:.3f} | {eff:.2f} | {ceil:.2f} "
            f"| {eff / ceil:.2f} | {curve} | {first.nodes:,.0f} / {last.nodes:,.0f} | {first.answer} |")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--ranks", default="1,2,4,8,16")
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--skeleton", default="stacksteal")
    parser.add_argument("--timeout", type=int, default=1800)
    parser.add_argument("--ceiling-seconds", type=float, default=5.0,
                        help="length of the time-limited runs that measure the ceiling")
    parser.add_argument("--cases", nargs="*", help="subset of the case names")
    opts = parser.parse_args(argv)
    opts.out.mkdir(parents=True, exist_ok=True)
    table = curve_cases(shared_dir(), opts.out)
    lines = [f"# --skeletons {opts.skeleton}, ranks {opts.ranks}, medians of {opts.repeat}",
             "| case | 1 rank s | P | P ranks s | efficiency | ceiling | of ceiling | efficiency by P "
             "| nodes 1 / P | answer |",
             "|---|---:|---:|---:|---:|---:|---:|---|---|---|"]
    print("\n".join(lines), flush=True)
    for name in opts.cases or list(table):
        lines.append(sweep(name, table[name], opts))
        print(lines[-1], flush=True)
        (opts.out / "summary.md").write_text("\n".join(lines) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
