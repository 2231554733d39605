"""Speed-up of 2 MPI ranks over 1, measured side by side, with this machine's own ceiling.

For each case the script alternates ``mpiexec -n 1`` and ``mpiexec -n 2`` runs of the ``yewpy``
command (search seconds from ``--json``), and also times two independent 1-rank runs started
together: their slowdown is what two busy processes cost each other on this machine, so
``ceiling = 2 * t(alone) / t(pair)`` is the best speed-up any runtime could show here.

    python benchmarks/bench_mpi_speedup.py --repeat 5
    python benchmarks/bench_mpi_speedup.py --cases nqueens14 --skeleton stacksteal --chunked
    python benchmarks/bench_mpi_speedup.py --cases uts-T3L uts-T1L --skeleton stacksteal --steal one
    python benchmarks/bench_mpi_speedup.py --cases p_hat300-3 --skeleton ordered --extra "-d 1 --window 1"
    python benchmarks/bench_mpi_speedup.py --cases dnn-mixed-18.4b --skeleton stacksteal --repeat 5
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


def shared_dir() -> Path:
    return Path(os.environ.get("YEWPY_SHARED", Path(__file__).resolve().parents[1].parent / "shared"))


def cases(shared: Path) -> dict[str, list[str]]:
    clique, knap = shared / "instances" / "clique", shared / "instances" / "knapsack"
    return {
        "uts-T3L": ["uts", "--tree", "T3L"],
        "uts-T1L": ["uts", "--tree", "T1L"],
        "nqueens14": ["nqueens", "14"],
        "nqueens15": ["nqueens", "15"],
        "brock400_4": ["maxclique", str(clique / "brock400_4.clq")],
        "brock400_4-dec33": ["maxclique", str(clique / "brock400_4.clq"), "--decision", "33"],
        "brock200_1-dec22": ["maxclique", str(clique / "brock200_1.clq"), "--decision", "22"],
        "p_hat300-3": ["maxclique", str(clique / "p_hat300-3.clq")],
        "p_hat700-2": ["maxclique", str(clique / "p_hat700-2.clq.gz")],
        "knapPI_3_2000-20s": ["knapsack", str(knap / "large_scale" / "knapPI_3_2000_1000_1"),
                              "--time-limit", "20"],
        "knapsackTest1-python": ["knapsack", str(knap / "yewpar_kp" / "knapsackTest1.kp"), "--python"],
        "f8-python": ["knapsack", str(knap / "low-dimensional" / "f8_l-d_kp_23_10000"), "--python"],
        "dnn-mixed-18.4b": ["dnn-plan", "--model", "megatron-18.4b", "--cluster",
                            "dgx-a100-80g:4x8+dgx-v100-32g:4x8", "--global-batch", "512"],
    }


def tool(name: str) -> str:
    here = Path(sys.executable).parent / name
    return str(here) if here.exists() else name


def run(ranks: int, args: list[str]) -> dict:
    out = subprocess.run([tool("mpiexec"), "-n", str(ranks), tool("yewpy"), *args, "--json"],
                         capture_output=True, text=True, check=True)
    return json.loads(out.stdout)


def pair(args: list[str]) -> float:
    """Two independent 1-rank runs at once (each under its own mpiexec, like the runs it is
    compared with): the slower one's search seconds."""
    procs = [subprocess.Popen([tool("mpiexec"), "-n", "1", tool("yewpy"), *args, "--json"],
                              stdout=subprocess.PIPE, text=True) for _ in range(2)]
    return max(json.loads(p.communicate()[0])["seconds"] for p in procs)


def bench(args: list[str], repeat: int) -> dict:
    one, two, twin = [], [], []
    for k in range(repeat):
        order = (1, 2) if k % 2 == 0 else (2, 1)
        for ranks in order:
            (one if ranks == 1 else two).append(run(ranks, args))
        twin.append(pair(args))
        time.sleep(0.2)
    t1 = statistics.median(r["seconds"] for r in one)
    t2 = statistics.median(r["seconds"] for r in two)
    n1 = statistics.median(r["nodes"] for r in one)
    n2 = statistics.median(r["nodes"] for r in two)
    answer = {r.get("value", r.get("found", r.get("objective"))) for r in one + two}
    return {"t1": t1, "t2": t2, "n1": n1, "n2": n2, "speedup": t1 / t2,
            "rate_speedup": (n2 / t2) / (n1 / t1), "ceiling": 2 * t1 / statistics.median(twin),
            "answers": sorted(map(str, answer)), "status": sorted({r["status"] for r in one + two})}


def report(table: dict[str, list[str]], opts: argparse.Namespace) -> None:
    """Bench the chosen cases of ``table`` (``opts``: repeat, cases, skeleton, chunked); one row each."""
    extra = ["--skeleton", opts.skeleton] + (["--chunked"] if opts.chunked else [])
    extra += ["--steal", opts.steal] if opts.steal else []
    extra += opts.extra.split()
    print(f"# --skeleton {opts.skeleton}{' --chunked' if opts.chunked else ''}"
          f"{' --steal ' + opts.steal if opts.steal else ''} {opts.extra}; medians of {opts.repeat}")
    print(f"{'case':22} {'t1 s':>8} {'t2 s':>8} {'nodes 1':>11} {'nodes 2':>11} {'speedup':>8} "
          f"{'nodes/s x':>9} {'ceiling':>8} {'of ceil':>7}  answer / status")
    for name in opts.cases or list(table):
        r = bench(table[name] + extra, opts.repeat)
        print(f"{name:22} {r['t1']:8.3f} {r['t2']:8.3f} {r['n1']:11.0f} {r['n2']:11.0f} "
              f"{r['speedup']:8.2f} {r['rate_speedup']:9.2f} {r['ceiling']:8.2f} "
              f"{r['speedup'] / r['ceiling']:7.2f}  "
              f"{','.join(r['answers'])} / {','.join(r['status'])}", flush=True)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--cases", nargs="*", help="subset of the case names")
    parser.add_argument("--skeleton", default="seq")
    parser.add_argument("--chunked", action="store_true")
    parser.add_argument("--steal", default=None, help="half, level or one (default: the CLI's)")
    parser.add_argument("--extra", default="", help="more yewpy flags, e.g. '-d 2 --window 4'")
    report(cases(shared_dir()), parser.parse_args(argv))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
