"""Numerical semigroups by genus: sequential speed, node counts per coordination, 1 vs 2 ranks.

There is no C reference for this tree in shared/bench, so the sequential comparison is against
a plain-C baseline written for this benchmark (``BASELINE`` below): a recursive walk of the same
tree with the same node layout (decomposition numbers as bytes, 3G + 3 of them), every node
built, compiled ``-O3`` like yewpy's cores.  ``ratio`` = baseline seconds / yewpy seconds is
yewpy's speed as a fraction of plain C.  Runs alternate so machine noise hits both alike; only
search time is compared (the baseline's own clock, yewpy's ``--json`` ``seconds``).

    python benchmarks/bench_semigroups.py seq --genus 30 32 --repeat 5
    python benchmarks/bench_semigroups.py nodes --genus 30 --repeat 3
    python benchmarks/bench_semigroups.py ranks --genus 33 --repeat 5

``nodes`` runs every coordination on one rank: the node count must be the README's tree size
and each genus count n(g).  ``ranks`` alternates ``mpiexec -n 1`` and ``-n 2`` (as
bench_mpi_speedup.py does, with its ``ceiling``: 2 x one run alone / two independent runs at
once, the best speed-up this machine allows).
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

from bench_mpi_speedup import bench as rank_bench
from bench_mpi_speedup import tool

BASELINE = r"""
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static int G, SIZE;
static long long counts[512];

/* Count S (genus `genus`) and walk its children S \ {x}, x a generator in [cond, cond + mult). */
static void walk(const uint8_t *dec, int cond, int mult, int genus, uint8_t *child) {
    counts[genus]++;
    if (genus == G) return;
    for (int x = cond; x < cond + mult; x++) {
        if (dec[x] != 1) continue;
        memcpy(child, dec, x);
        for (int y = x; y < SIZE; y++) child[y] = dec[y] - (dec[y - x] != 0);
        walk(child, x + 1, x == mult ? x + 1 : mult, genus + 1, child + SIZE);
    }
}

int main(int argc, char **argv) {
    G = argc > 1 ? atoi(argv[1]) : 20;
    if (G < 0 || G > 160) { fprintf(stderr, "genus 0..160\n"); return 2; }
    SIZE = 3 * G + 3;
    uint8_t *buf = malloc((size_t)(G + 2) * SIZE);
    for (int x = 0; x < SIZE; x++) buf[x] = x / 2 + 1;      /* N: dec(x) = x // 2 + 1 */
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    walk(buf, 1, 1, 0, buf + SIZE);                           /* N's window is [1, 2) */
    clock_gettime(CLOCK_MONOTONIC, &t1);
    long long nodes = 0;
    for (int g = 0; g <= G; g++) nodes += counts[g];
    printf("value=%lld nodes=%lld seconds=%.6f\n", counts[G], nodes,
           (t1.tv_sec - t0.tv_sec) + 1e-9 * (t1.tv_nsec - t0.tv_nsec));
    return 0;
}
"""
BASELINE_LINE = re.compile(r"value=(\d+) nodes=(\d+) seconds=([0-9.eE+-]+)")

COORDINATIONS = {
    "seq": [],
    "stacksteal": ["--skeleton", "stacksteal"],
    "stacksteal-chunked": ["--skeleton", "stacksteal", "--chunked"],
    "depthbounded-d10": ["--skeleton", "depthbounded", "-d", "10"],
    "budget-b100000": ["--skeleton", "budget", "-b", "100000"],
    "budget-b1000-all": ["--skeleton", "budget", "-b", "1000", "--spawn-all"],
}


def shared_dir() -> Path:
    """shared/ beside the repository root, or $YEWPY_SHARED."""
    env = os.environ.get("YEWPY_SHARED")
    return Path(env) if env else Path(__file__).resolve().parents[1].parent / "shared"


def readme_counts() -> list[int]:
    """n(0..70) from the machine-readable block of shared/instances/semigroups/README.md."""
    text = (shared_dir() / "instances" / "semigroups" / "README.md").read_text()
    return [int(w) for w in re.search(r"g = 0\.\.\d+:\n```\n([\d ]+)\n```", text).group(1).split()]


def build_baseline(folder: Path) -> Path:
    """Compile BASELINE into ``folder`` (a temporary directory) and return the binary."""
    source, binary = folder / "semigroups_baseline.c", folder / "semigroups_baseline"
    source.write_text(BASELINE)
    subprocess.run(["cc", "-O3", "-o", str(binary), str(source)], check=True)
    return binary


def yewpy(genus: int, extra: list[str]) -> dict:
    out = subprocess.run([tool("yewpy"), "semigroups", "-g", str(genus), *extra, "--json"],
                         capture_output=True, text=True, check=True)
    return json.loads(out.stdout)


def baseline(binary: Path, genus: int) -> dict:
    out = subprocess.run([str(binary), str(genus)], capture_output=True, text=True, check=True)
    value, nodes, seconds = BASELINE_LINE.search(out.stdout).groups()
    return {"value": int(value), "nodes": int(nodes), "seconds": float(seconds)}


def check(run: dict, counts: list[int], genus: int) -> None:
    """Every run must give the README's n(genus) and tree size (and per-genus counts, if any)."""
    if run["value"] != counts[genus] or run["nodes"] != sum(counts[: genus + 1]):
        raise SystemExit(f"wrong answer at genus {genus}: {run['value']} / {run['nodes']} nodes")
    by_genus = run.get("metrics", {}).get("by_genus")
    if by_genus is not None and by_genus != counts[: genus + 1]:
        raise SystemExit(f"wrong per-genus counts at genus {genus}")


def seq(genera: list[int], repeat: int, counts: list[int]) -> None:
    print(f"{'genus':>5} {'nodes':>11} {'C base s':>9} {'yewpy s':>8} {'C Mnodes/s':>10} "
          f"{'yewpy Mnodes/s':>14} {'ratio':>6}")
    with tempfile.TemporaryDirectory() as tmp:
        binary = build_baseline(Path(tmp))
        for genus in genera:
            ref, ours = [], []
            for k in range(repeat):
                for which in ((0, 1) if k % 2 == 0 else (1, 0)):
                    run = baseline(binary, genus) if which == 0 else yewpy(genus, [])
                    check(run, counts, genus)
                    (ref if which == 0 else ours).append(run["seconds"])
            nodes = sum(counts[: genus + 1])
            tr, ty = statistics.median(ref), statistics.median(ours)
            print(f"{genus:5} {nodes:11} {tr:9.3f} {ty:8.3f} {nodes / tr / 1e6:10.1f} "
                  f"{nodes / ty / 1e6:14.1f} {tr / ty:6.2f}", flush=True)


def nodes(genera: list[int], repeat: int, counts: list[int]) -> None:
    print(f"{'genus':>5} {'coordination':20} {'nodes':>11} {'README tree':>11} {'seconds':>8} "
          f"{'Mnodes/s':>9}")
    for genus in genera:
        times: dict[str, list[float]] = {name: [] for name in COORDINATIONS}
        seen: dict[str, set[int]] = {name: set() for name in COORDINATIONS}
        for k in range(repeat):
            names = list(COORDINATIONS) if k % 2 == 0 else list(reversed(COORDINATIONS))
            for name in names:
                run = yewpy(genus, COORDINATIONS[name])
                check(run, counts, genus)
                times[name].append(run["seconds"])
                seen[name].add(run["nodes"])
        for name, ts in times.items():
            total, t = sum(counts[: genus + 1]), statistics.median(ts)
            print(f"{genus:5} {name:20} {'/'.join(map(str, sorted(seen[name]))):>11} {total:11} {t:8.3f} "
                  f"{total / t / 1e6:9.1f}", flush=True)


def ranks(genera: list[int], repeat: int, counts: list[int], which: list[str]) -> None:
    print(f"{'genus':>5} {'coordination':20} {'t1 s':>7} {'t2 s':>7} {'speedup':>8} {'ceiling':>8}  answer")
    for genus in genera:
        for name in which:
            r = rank_bench(["semigroups", "-g", str(genus), *COORDINATIONS[name]], repeat)
            if r["answers"] != [str(counts[genus])] or {r["n1"], r["n2"]} != {sum(counts[: genus + 1])}:
                raise SystemExit(f"wrong answer at genus {genus} under {name}: {r}")
            print(f"{genus:5} {name:20} {r['t1']:7.3f} {r['t2']:7.3f} {r['speedup']:8.2f} "
                  f"{r['ceiling']:8.2f}  {r['answers'][0]}", flush=True)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("what", choices=["seq", "nodes", "ranks"])
    parser.add_argument("--genus", type=int, nargs="+", default=[30])
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--coordinations", nargs="*", default=["stacksteal", "stacksteal-chunked",
                                                                 "depthbounded-d10", "budget-b100000"],
                        choices=list(COORDINATIONS), help="ranks: which coordinations")
    opts = parser.parse_args(argv)
    counts = readme_counts()
    if opts.what == "seq":
        seq(opts.genus, opts.repeat, counts)
    elif opts.what == "nodes":
        nodes(opts.genus, opts.repeat, counts)
    else:
        ranks(opts.genus, opts.repeat, counts, opts.coordinations)
    return 0


if __name__ == "__main__":
    sys.exit(main())
