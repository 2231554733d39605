"""TSP: sequential times and node counts on the 42-52 city TSPLIB instances, and 2 MPI ranks vs 1.

``seq``: in-process ``Tsp.from_file(...).search()`` per instance and configuration, rounds
interleaved over the instances, medians reported; set-up (reading, the first tour, the root's
subgradient ascent) is timed apart from the search.  Configurations: ``default`` (Held-Karp
penalties, local-search seed), ``nearest`` (Held-Karp penalties, plain nearest-neighbour seed)
and ``mst`` (no penalties, local-search seed); each search stops at ``--time-limit``.
``mpi``: ``mpiexec -n 1`` vs ``-n 2`` of the ``yewpy tsp`` command, alternating, with the
machine's ceiling (benchmarks/bench_mpi_speedup.py's method).  No C reference exists in
shared/bench for the TSP, so there is no side-by-side against one.

    python benchmarks/bench_tsp.py seq --repeat 3
    python benchmarks/bench_tsp.py seq --configs nearest mst --repeat 1 --time-limit 300
    python benchmarks/bench_tsp.py mpi --repeat 5 --cases gr48 eil51 eil51-nearest gr48-nearest
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_mpi_speedup import report, shared_dir  # noqa: E402

from yewpy.apps.tsp import Tsp  # noqa: E402
from yewpy.apps.tsplib import read_tsplib  # noqa: E402

INSTANCES = ["dantzig42", "swiss42", "att48", "gr48", "hk48", "eil51", "berlin52", "brazil58"]
CONFIGS = {"default": {"bound": "held-karp", "incumbent": "local-search"},
           "nearest": {"bound": "held-karp", "incumbent": "nearest"},
           "mst": {"bound": "mst", "incumbent": "local-search"}}


def optima(shared: Path) -> dict[str, int]:
    """The optimum column of shared/instances/tsp/README.md, by instance name."""
    out = {}
    for line in (shared / "instances" / "tsp" / "README.md").read_text().splitlines():
        cells = [c.strip() for c in line.strip("|").split("|")]
        if len(cells) >= 4 and cells[0].endswith(".tsp") and cells[3].isdigit():
            out[cells[0][:-4]] = int(cells[3])
    return out


def one_run(path: Path, config: dict, time_limit: float) -> dict:
    t0 = time.perf_counter()
    problem = Tsp.from_file(str(path), **config)
    t1 = time.perf_counter()
    result = problem.search(time_limit=time_limit)
    assert problem.length(result.solution) == result.objective
    return {"setup": t1 - t0, "search": result.seconds, "nodes": result.nodes, "status": result.status,
            "objective": result.objective, "first": problem.tour_length, "root": problem.root_bound,
            "iterations": problem.iterations}


def seq(opts: argparse.Namespace) -> None:
    shared = shared_dir()
    best = optima(shared)
    names = opts.instances or INSTANCES
    for config_name in opts.configs:
        runs: dict[str, list[dict]] = {name: [] for name in names}
        for k in range(opts.repeat):
            for name in names if k % 2 == 0 else names[::-1]:
                runs[name].append(one_run(shared / "instances" / "tsp" / f"{name}.tsp", CONFIGS[config_name],
                                          opts.time_limit))
        print(f"\n[{config_name}] {CONFIGS[config_name]}, time limit {opts.time_limit:g} s, "
              f"medians of {opts.repeat}")
        print(f"{'instance':10} {'n':>3} {'optimum':>8} {'first':>8} {'root lb':>8} {'found':>8} "
              f"{'status':>10} {'nodes':>12} {'setup s':>8} {'search s':>9} {'nodes/s':>10}")
        for name in names:
            r = runs[name]
            search = statistics.median(x["search"] for x in r)
            nodes = statistics.median(x["nodes"] for x in r)
            n = read_tsplib(str(shared / "instances" / "tsp" / f"{name}.tsp")).dimension
            status = ",".join(sorted({x["status"] for x in r}))
            found = ",".join(sorted({str(x["objective"]) for x in r}))
            if status == "optimal":
                assert {x["objective"] for x in r} == {best[name]}, (name, found, best[name])
            setup = statistics.median(x["setup"] for x in r)
            print(f"{name:10} {n:3} {best[name]:8} {r[0]['first']:8} {r[0]['root']:8} {found:>8} "
                  f"{status:>10} {nodes:12.0f} {setup:8.3f} {search:9.3f} {nodes / search:10.0f}", flush=True)


def mpi(opts: argparse.Namespace) -> None:
    tsp = shared_dir() / "instances" / "tsp"
    table = {"gr48": ["tsp", str(tsp / "gr48.tsp")], "eil51": ["tsp", str(tsp / "eil51.tsp")],
             "eil51-nearest": ["tsp", str(tsp / "eil51.tsp"), "--incumbent", "nearest"],
             "gr48-nearest": ["tsp", str(tsp / "gr48.tsp"), "--incumbent", "nearest"],
             "brazil58": ["tsp", str(tsp / "brazil58.tsp")]}
    report(table, opts)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="what", required=True)
    s = sub.add_parser("seq", help="sequential times and node counts")
    s.add_argument("--repeat", type=int, default=3)
    s.add_argument("--instances", nargs="*")
    s.add_argument("--configs", nargs="*", default=["default"], choices=list(CONFIGS))
    s.add_argument("--time-limit", type=float, default=300.0)
    m = sub.add_parser("mpi", help="mpiexec -n 1 vs -n 2, alternating")
    m.add_argument("--repeat", type=int, default=5)
    m.add_argument("--cases", nargs="*")
    m.add_argument("--skeleton", default="seq")
    m.add_argument("--chunked", action="store_true")
    opts = parser.parse_args(argv)
    seq(opts) if opts.what == "seq" else mpi(opts)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
