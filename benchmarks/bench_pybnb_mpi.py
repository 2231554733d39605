"""The pure-Python knapsack on 2 MPI ranks: yewpy's work stealing against pybnb's dispatcher.

Run it with the benchmark venv that has pybnb (see docs/benchmarks.md); it launches both sides
under ``mpiexec -n RANKS`` in alternation and prints nodes per second and their ratio:

    /tmp/benchenv/bin/python benchmarks/bench_pybnb_mpi.py --repeat 5

(``--pybnb-rank`` is the mode the script itself runs under mpiexec for the pybnb side.)
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from bench_knapsack_python import Tree, pybnb_problem, shared_dir  # noqa: E402

DEFAULT = "knapsack/yewpar_kp/knapsackTest1.kp"


def pybnb_rank(path: str) -> None:
    """One rank of a pybnb solve (rank 0 prints the JSON line)."""
    import pybnb
    from mpi4py import MPI

    from yewpy.apps.knapsack import read_knapsack

    inst = read_knapsack(path)
    problem = pybnb_problem(Tree(inst.profits, inst.weights, inst.capacity), eager_bounds=False)
    MPI.COMM_WORLD.Barrier()
    t = time.perf_counter()
    res = pybnb.solve(problem, comm=MPI.COMM_WORLD, queue_strategy="depth", log=None, track_bound=False)
    seconds = time.perf_counter() - t
    if MPI.COMM_WORLD.rank == 0:
        print(json.dumps({"objective": res.objective, "nodes": res.nodes, "seconds": seconds}))


def tool(name: str) -> str:
    here = Path(sys.executable).parent / name
    return str(here) if here.exists() else name


def one(command: list[str]) -> dict:
    out = subprocess.run(command, capture_output=True, text=True, check=True).stdout
    return json.loads([line for line in out.splitlines() if line.startswith("{")][-1])


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--ranks", type=int, default=2)
    parser.add_argument("--instance", default=DEFAULT, help="path under shared/instances")
    parser.add_argument("--pybnb-rank", action="store_true", help=argparse.SUPPRESS)
    opts = parser.parse_args(argv)
    path = str(shared_dir() / "instances" / opts.instance)
    if opts.pybnb_rank:
        pybnb_rank(path)
        return 0
    launch = [tool("mpiexec"), "-n", str(opts.ranks)]
    sides = {"yewpy": launch + [tool("yewpy"), "knapsack", path, "--python", "--json"],
             "pybnb": launch + [sys.executable, __file__, "--instance", opts.instance, "--pybnb-rank"]}
    runs: dict[str, list] = {name: [] for name in sides}
    for k in range(opts.repeat):
        for name in (list(sides) if k % 2 == 0 else list(sides)[::-1]):
            runs[name].append(one(sides[name]))
    rate = {}
    for name, results in runs.items():
        nodes = statistics.median(r["nodes"] for r in results)
        seconds = statistics.median(r["seconds"] for r in results)
        rate[name] = statistics.median(r["nodes"] / r["seconds"] for r in results)
        print(f"{name:6} ranks={opts.ranks} objective={results[0]['objective']} nodes={nodes:.0f} "
              f"seconds={seconds:.3f} nodes/s={rate[name]:,.0f}")
    seconds = {name: statistics.median(r["seconds"] for r in results) for name, results in runs.items()}
    print(f"yewpy/pybnb nodes per second: {rate['yewpy'] / rate['pybnb']:.1f}x; "
          f"pybnb time / yewpy time: {seconds['pybnb'] / seconds['yewpy']:.1f}x")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
