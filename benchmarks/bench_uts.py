"""Compiled UTS against the C reference shared/bench/uts_ref.c, and 1 vs 2 MPI ranks.

Sequential: uts_ref (OpenSSL's SHA-1) and yewpy (its own SHA-1) count the same trees; runs
alternate between the two so machine noise hits both alike, and only search time is compared
(uts_ref's own clock, yewpy's ``Result.seconds``). Nodes, leaves and depth must agree, and agree
with shared/instances/uts/README.md. ratio = ref seconds / yewpy seconds (goal: >= 0.8).
``--sha1 portable`` times yewpy's portable SHA-1 instead of SHA-NI; ``--ref-without-shani``
stops OpenSSL from using the SHA extensions (OPENSSL_ia32cap), for the like-for-like pairing.

MPI: alternating ``mpiexec -n 1`` and ``mpiexec -n 2`` runs of ``yewpy uts --tree T --json``,
plus two independent 1-rank runs started together, whose slowdown bounds any speed-up this
machine can show: ceiling = 2 * t(alone) / t(pair).

    python benchmarks/bench_uts.py [--trees T1L T3L] [--repeat 3] [--mpi-trees T1L] [--skeleton stacksteal]

shared/ is found beside the repository (``../shared``) unless YEWPY_SHARED names it.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

REF_LINE = re.compile(r"nodes=(\d+) leaves=(\d+) depth=(\d+) seconds=([0-9.eE+-]+)")
NO_SHANI = {"OPENSSL_ia32cap": ":~0x20000000"}      # CPUID(7).EBX bit 29: the SHA extensions


def shared_dir() -> Path:
    """shared/ beside the repository root, or $YEWPY_SHARED."""
    env = os.environ.get("YEWPY_SHARED")
    return Path(env) if env else Path(__file__).resolve().parents[1].parent / "shared"


def tool(name: str) -> str:
    here = Path(sys.executable).parent / name
    return str(here) if here.exists() else name


def readme_counts(shared: Path) -> dict[str, tuple]:
    """name -> (nodes, leaves, depth) from the README's table (None where not given)."""
    out = {}
    for line in (shared / "instances" / "uts" / "README.md").read_text().splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) >= 7 and cells[0].startswith("T"):
            def num(text: str) -> int | None:
                digits = text.replace(",", "")
                return int(digits) if digits.isdigit() else None
            out[cells[0]] = (num(cells[3]), num(cells[5]), num(cells[4]))
    return out


def build_ref(source: Path, folder: Path) -> Path:
    """Compile uts_ref.c into ``folder`` (never into the project) and return the binary."""
    binary = folder / "uts_ref"
    subprocess.run(["cc", "-O3", "-march=native", "-o", str(binary), str(source), "-lcrypto", "-lm"],
                   check=True)
    return binary


def run_ref(binary: Path, params: str, no_shani: bool) -> tuple[tuple, float]:
    env = dict(os.environ, **NO_SHANI) if no_shani else None
    out = subprocess.run([str(binary), *params.split()], check=True, capture_output=True, text=True,
                         env=env).stdout
    match = REF_LINE.search(out)
    if match is None:
        raise RuntimeError(f"unexpected uts_ref output: {out!r}")
    return (int(match[1]), int(match[2]), int(match[3])), float(match[4])


def run_yewpy(name: str) -> tuple[tuple, float]:
    from yewpy.apps.uts import UTS

    r = UTS.named(name).search()
    return (r.value, r.metrics["leaves"], r.metrics["depth"]), r.seconds


def sequential(binary: Path, name: str, repeat: int, no_shani: bool, expected: tuple | None) -> dict:
    from yewpy.apps.uts import NAMED_TREES

    ref_times, yew_times, answers = [], [], set()
    for k in range(repeat):
        for which in ((0, 1) if k % 2 == 0 else (1, 0)):
            if which == 0:
                answer, s = run_ref(binary, NAMED_TREES[name], no_shani)
                ref_times.append(s)
            else:
                answer, s = run_yewpy(name)
                yew_times.append(s)
            answers.add(answer)
    if len(answers) != 1:
        raise AssertionError(f"{name}: uts_ref and yewpy disagree: {answers}")
    answer = answers.pop()
    if expected is not None and any(e is not None and e != a for e, a in zip(expected, answer)):
        raise AssertionError(f"{name}: {answer} differs from the README's {expected}")
    ref, yew = statistics.median(ref_times), statistics.median(yew_times)
    return {"answer": answer, "ref": ref, "yewpy": yew, "ratio": ref / yew,
            "ratios": sorted(r / y for r, y in zip(ref_times, yew_times))}


def run_ranks(ranks: int, args: list[str]) -> dict:
    out = subprocess.run([tool("mpiexec"), "-n", str(ranks), tool("yewpy"), "uts", *args, "--json"],
                         capture_output=True, text=True, check=True)
    return json.loads(out.stdout)


def pair(args: list[str]) -> float:
    """Two independent 1-rank runs at once: the slower one's search seconds."""
    procs = [subprocess.Popen([tool("mpiexec"), "-n", "1", tool("yewpy"), "uts", *args, "--json"],
                              stdout=subprocess.PIPE, text=True) for _ in range(2)]
    return max(json.loads(p.communicate()[0])["seconds"] for p in procs)


def ranks_1_vs_2(name: str, repeat: int, extra: list[str]) -> dict:
    args = ["--tree", name, *extra]
    one, two, twin = [], [], []
    for k in range(repeat):
        for ranks in ((1, 2) if k % 2 == 0 else (2, 1)):
            (one if ranks == 1 else two).append(run_ranks(ranks, args))
        twin.append(pair(args))
    values = {(r["value"], r["metrics"]["leaves"], r["metrics"]["depth"]) for r in one + two}
    if len(values) != 1:
        raise AssertionError(f"{name}: 1 and 2 ranks disagree: {values}")
    t1 = statistics.median(r["seconds"] for r in one)
    t2 = statistics.median(r["seconds"] for r in two)
    return {"answer": values.pop(), "t1": t1, "t2": t2, "speedup": t1 / t2,
            "ceiling": 2 * t1 / statistics.median(twin),
            "t1s": [round(r["seconds"], 2) for r in one], "t2s": [round(r["seconds"], 2) for r in two]}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--trees", nargs="*", default=["T1L", "T3L"], help="named trees for uts_ref vs yewpy")
    parser.add_argument("--repeat", type=int, default=3, help="runs of each per tree (default 3)")
    parser.add_argument("--sha1", choices=["auto", "portable", "sha-ni"], default="auto",
                        help="yewpy's SHA-1 in the sequential runs (default: the fastest here)")
    parser.add_argument("--ref-without-shani", action="store_true", help="OpenSSL without the SHA extensions")
    parser.add_argument("--mpi-trees", nargs="*", default=["T1L"], help="named trees for 1 vs 2 ranks")
    parser.add_argument("--mpi-repeat", type=int, default=3)
    parser.add_argument("--skeleton", default="stacksteal", help="coordination for the MPI runs")
    parser.add_argument("--chunked", action="store_true", help="stacksteal: steal a whole level")
    args = parser.parse_args(argv)
    from yewpy.apps import _uts

    if args.sha1 != "auto":
        _uts.set_sha1_implementation(args.sha1)
    shared = shared_dir()
    source = shared / "bench" / "uts_ref.c"
    if not source.exists():
        sys.exit(f"cannot find {source}: set YEWPY_SHARED to the shared/ folder")
    expected = readme_counts(shared)
    if args.trees:
        with tempfile.TemporaryDirectory() as tmp:
            binary = build_ref(source, Path(tmp))
            print(f"yewpy SHA-1: {_uts.sha1_implementation()}; uts_ref: OpenSSL "
                  f"{'without' if args.ref_without_shani else 'with'} SHA-NI (when the CPU has it)")
            print(f"{'tree':<6} {'nodes':>11} {'leaves':>11} {'depth':>6} {'uts_ref s':>10} {'yewpy s':>9} "
                  f"{'ratio':>6}  per-pair ratios (sorted)")
            for name in args.trees:
                row = sequential(binary, name, args.repeat, args.ref_without_shani, expected.get(name))
                nodes, leaves, depth = row["answer"]
                pairs = " ".join(f"{r:.2f}" for r in row["ratios"])
                print(f"{name:<6} {nodes:>11} {leaves:>11} {depth:>6} {row['ref']:>10.3f} "
                      f"{row['yewpy']:>9.3f} {row['ratio']:>6.2f}  {pairs}", flush=True)
            print("ratio = median uts_ref seconds / median yewpy seconds (yewpy's speed as a fraction of C)")
    extra = ["--skeleton", args.skeleton] + (["--chunked"] if args.chunked else [])
    if args.mpi_trees:
        print(f"\n1 vs 2 MPI ranks ({' '.join(extra)}); search seconds from --json")
        print(f"{'tree':<6} {'nodes':>11} {'1 rank s':>9} {'2 ranks s':>9} {'speedup':>8} {'ceiling':>8}"
              "  runs")
        for name in args.mpi_trees:
            row = ranks_1_vs_2(name, args.mpi_repeat, extra)
            print(f"{name:<6} {row['answer'][0]:>11} {row['t1']:>9.3f} {row['t2']:>9.3f} "
                  f"{row['speedup']:>8.2f} {row['ceiling']:>8.2f}  1: {row['t1s']} 2: {row['t2s']}",
                  flush=True)
        print("ceiling = 2 * t(1 rank alone) / t(two 1-rank runs at once): "
              "the best speed-up this machine allows")
    return 0


if __name__ == "__main__":
    sys.exit(main())
