"""Subgraph isomorphism: sequential speed and node counts beside the CP2015 paper's, and 1 vs 2 ranks.

There is no C reference for SIP in shared/bench, so the sequential part compares with the
figures recorded in shared/instances/sip (the paper's sequential solver with backjumping, 2015
hardware; LAD's nodes): node counts compare directly, times only loosely.  Each instance is
searched ``--repeat`` times, the instances rotating, and medians are reported.

The MPI part alternates ``mpiexec -n 1`` and ``mpiexec -n 2`` runs of the ``yewpy sip`` command
(search seconds from ``--json``; whole-process wall seconds too), and times two independent
1-rank runs started together: ``ceiling = 2 * t(alone) / t(pair)`` is the best speed-up this
machine allows at that moment.

    python benchmarks/bench_sip.py seq --repeat 5
    python benchmarks/bench_sip.py mpi --repeat 5 --skeleton stacksteal
"""

from __future__ import annotations

import argparse
import csv
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

from yewpy.apps.sip import SubgraphIsomorphism

# Sequential set: curated rows plus LV pairs whose trees take our search 0.5-5 s.
SEQ = ["g12-g20", "g5-g16", "g11-g48", "si2_r001_m600.05", "si2_r01_m200.06", "C.20", "PR15-7",
       "g18-g50", "g8-g48", "g17-g42", "g19-g46"]
# MPI set: unsatisfiable trees (the same nodes on any number of ranks) and two satisfiable ones.
MPI = ["g8-g48", "g17-g42", "g19-g46", "si2_r01_m200.06", "g18-g50"]


def shared_dir() -> Path:
    return Path(os.environ.get("YEWPY_SHARED", Path(__file__).resolve().parents[1].parent / "shared"))


def table() -> dict[str, dict]:
    """answers.tsv and LV_all_answers.tsv rows by name (answers.tsv first)."""
    rows: dict[str, dict] = {}
    for name in ("LV_all_answers.tsv", "answers.tsv"):
        with open(shared_dir() / "instances" / "sip" / name, newline="") as f:
            rows.update({r["name"]: r for r in csv.DictReader(f, delimiter="\t")})
    return rows


def paths(row: dict) -> tuple[str, str]:
    base = shared_dir() / "instances" / "sip"
    return str(base / row["pattern"]), str(base / row["target"])


def sequential(names: list[str], repeat: int) -> None:
    rows = table()
    runs: dict[str, list[tuple[float, float, int]]] = {n: [] for n in names}
    for k in range(repeat):
        for name in names[k % len(names):] + names[:k % len(names)]:
            problem = SubgraphIsomorphism.from_files(*paths(rows[name]))
            result = problem.search()
            expected = rows[name]["satisfiable"] == "true"
            assert result.found == expected and (not expected or problem.is_embedding(result.solution)), name
            runs[name].append((problem.preprocess_seconds, result.seconds, result.nodes))
    print(f"{'instance':18} {'sat':5} {'prep s':>7} {'search s':>9} {'nodes':>10} {'nodes/s':>10} "
          f"{'paper nodes':>12} {'paper ms':>9} {'LAD nodes':>10}")
    for name in names:
        row = rows[name]
        prep = statistics.median(r[0] for r in runs[name])
        search = statistics.median(r[1] for r in runs[name])
        nodes = {r[2] for r in runs[name]}
        assert len(nodes) == 1, f"{name}: node counts differ between sequential runs"
        n = nodes.pop()
        rate = n / max(search, 1e-9)
        print(f"{name:18} {row['satisfiable']:5} {prep:7.3f} {search:9.3f} {n:10d} {rate:10.0f} "
              f"{row['glasgow2015_seq_nodes']:>12} {row['glasgow2015_seq_ms']:>9} {row['lad_nodes']:>10}",
              flush=True)


def tool(name: str) -> str:
    here = Path(sys.executable).parent / name
    return str(here) if here.exists() else name


def run(ranks: int, args: list[str]) -> dict:
    start = time.perf_counter()
    out = subprocess.run([tool("mpiexec"), "-n", str(ranks), tool("yewpy"), "sip", *args, "--json"],
                         capture_output=True, text=True, check=True)
    data = json.loads(out.stdout)
    data["wall"] = time.perf_counter() - start
    return data


def pair(args: list[str]) -> float:
    """Two independent 1-rank runs at once: the slower one's search seconds."""
    procs = [subprocess.Popen([tool("mpiexec"), "-n", "1", tool("yewpy"), "sip", *args, "--json"],
                              stdout=subprocess.PIPE, text=True) for _ in range(2)]
    return max(json.loads(p.communicate()[0])["seconds"] for p in procs)


def ranks(names: list[str], repeat: int, extra: list[str]) -> None:
    rows = table()
    print(f"{'instance':18} {'sat':5} {'t1 s':>7} {'t2 s':>7} {'wall1 s':>8} {'wall2 s':>8} {'nodes 1':>10} "
          f"{'nodes 2':>10} {'speedup':>8} {'ceiling':>8}")
    for name in names:
        args = [*paths(rows[name]), *extra]
        one, two, twin = [], [], []
        for k in range(repeat):
            for n in ((1, 2) if k % 2 == 0 else (2, 1)):
                (one if n == 1 else two).append(run(n, args))
            twin.append(pair(args))
        expected = rows[name]["satisfiable"] == "true"
        assert all(r["found"] == expected for r in one + two), name
        med = statistics.median
        t1, t2 = med(r["seconds"] for r in one), med(r["seconds"] for r in two)
        print(f"{name:18} {rows[name]['satisfiable']:5} {t1:7.3f} {t2:7.3f} "
              f"{med(r['wall'] for r in one):8.3f} {med(r['wall'] for r in two):8.3f} "
              f"{med(r['nodes'] for r in one):10.0f} {med(r['nodes'] for r in two):10.0f} "
              f"{t1 / t2:8.2f} {2 * t1 / med(twin):8.2f}", flush=True)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("part", choices=["seq", "mpi"])
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--instances", nargs="*", help="names from answers.tsv / LV_all_answers.tsv")
    parser.add_argument("--skeleton", default="stacksteal")
    parser.add_argument("--chunked", action="store_true")
    opts = parser.parse_args(argv)
    if opts.part == "seq":
        sequential(opts.instances or SEQ, opts.repeat)
    else:
        extra = ["--skeleton", opts.skeleton] + (["--chunked"] if opts.chunked else [])
        ranks(opts.instances or MPI, opts.repeat, extra)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
