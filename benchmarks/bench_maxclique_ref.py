"""Compiled maxclique against the plain C reference solver shared/bench/mcs_ref.c.

Both search the same tree (bitset MCSa1 with BBMC colouring), so yewpy's expansions must equal
mcs_ref's node count; the ratio ref_time / yewpy_time is yewpy's speed as a fraction of plain C
(goal: >= 0.8).  Runs alternate between the two solvers so that machine noise hits both alike;
only search time is compared (mcs_ref's own clock, yewpy's ``Result.seconds``), never parsing.

    python benchmarks/bench_maxclique_ref.py [--repeat 5] [--instances brock200_1 keller4]

shared/ is found beside the repository (``../shared``) unless YEWPY_SHARED names it.
"""

from __future__ import annotations

import argparse
import os
import re
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

INSTANCES = ("brock200_1", "brock200_4", "keller4", "p_hat300-3")
REF_LINE = re.compile(r"omega=(\d+) nodes=(\d+) seconds=([0-9.eE+-]+)")


def shared_dir() -> Path:
    """shared/ beside the repository root, or $YEWPY_SHARED."""
    env = os.environ.get("YEWPY_SHARED")
    return Path(env) if env else Path(__file__).resolve().parents[1].parent / "shared"


def build_ref(source: Path, folder: Path) -> Path:
    """Compile mcs_ref.c into ``folder`` (never into the project) and return the binary."""
    binary = folder / "mcs_ref"
    subprocess.run(["cc", "-O3", "-march=native", "-o", str(binary), str(source)], check=True)
    return binary


def run_ref(binary: Path, graph: Path) -> tuple[int, int, float]:
    """One mcs_ref run: omega, nodes (expand calls) and its own search-only seconds."""
    out = subprocess.run([str(binary), str(graph)], check=True, capture_output=True, text=True).stdout
    match = REF_LINE.search(out)
    if match is None:
        raise RuntimeError(f"unexpected mcs_ref output: {out!r}")
    return int(match[1]), int(match[2]), float(match[3])


def run_yewpy(graph: Path) -> tuple[int, int, float]:
    """One yewpy run on a freshly parsed graph: omega, expansions and search-only seconds."""
    from yewpy.apps.maxclique import MaxClique

    g = MaxClique.from_file(str(graph))
    r = g.search()
    return r.objective, r.metrics["expansions"], r.seconds


def bench(binary: Path, graph: Path, repeat: int) -> dict:
    """``repeat`` interleaved runs of both solvers (alternating which goes first); medians."""
    ref_times, yew_times = [], []
    omega = nodes = None
    for k in range(repeat):
        order = (run_ref, run_yewpy) if k % 2 == 0 else (run_yewpy, run_ref)
        for fn in order:
            if fn is run_ref:
                w, n, s = run_ref(binary, graph)
                ref_times.append(s)
            else:
                w, n, s = run_yewpy(graph)
                yew_times.append(s)
            if omega is None:
                omega, nodes = w, n
            assert (w, n) == (omega, nodes), f"{graph.name}: omega/nodes differ: {(w, n)} vs {(omega, nodes)}"
    ref, yew = statistics.median(ref_times), statistics.median(yew_times)
    return {"instance": graph.stem, "omega": omega, "nodes": nodes, "ref": ref, "yewpy": yew,
            "ratio": ref / yew, "ratios": sorted(r / y for r, y in zip(ref_times, yew_times))}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=5, help="runs of each solver per instance (default 5)")
    parser.add_argument("--instances", nargs="+", default=list(INSTANCES), help="DIMACS names in clique/")
    args = parser.parse_args(argv)
    shared = shared_dir()
    source = shared / "bench" / "mcs_ref.c"
    if not source.exists():
        sys.exit(f"cannot find {source}: set YEWPY_SHARED to the shared/ folder")
    with tempfile.TemporaryDirectory() as tmp:
        binary = build_ref(source, Path(tmp))
        print(f"{'instance':<12} {'omega':>5} {'nodes':>9} {'mcs_ref s':>10} {'yewpy s':>10} {'ratio':>6}"
              "  per-pair ratios (sorted)")
        for name in args.instances:
            row = bench(binary, shared / "instances" / "clique" / f"{name}.clq", args.repeat)
            pairs = " ".join(f"{r:.2f}" for r in row["ratios"])
            print(f"{row['instance']:<12} {row['omega']:>5} {row['nodes']:>9} {row['ref']:>10.4f} "
                  f"{row['yewpy']:>10.4f} {row['ratio']:>6.2f}  {pairs}", flush=True)
    print("ratio = median mcs_ref seconds / median yewpy seconds (yewpy's speed as a fraction of C)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
