"""Run under mpiexec by test_mpi_stealing.py: every steal mode (with and without steal ahead) x
coordination x kind on this job's ranks.

Writes ``steal.<rank>.json``: for each case the answer (and, for enumerations, the node count) this
rank got; ``--small`` runs the cases meant for 16-32 oversubscribed ranks.
"""

import json
import os
import random
import sys

from mpi_matrix import random_shape

from support import DepthHistogram
from yewpy.apps.knapsack import read_knapsack
from yewpy.apps.knapsack_python import KnapsackPy
from yewpy.apps.maxclique import MaxClique
from yewpy.apps.nqueens import NQueens
from yewpy.apps.uts import UTS, parse_uts_params

#: a binomial UTS tree of 70,037 nodes, 7 in 8 of them leaves: splits keep the leaves (Core.leaf)
BINOMIAL = "-t 0 -b 300 -q 0.124875 -m 8 -r 3"

RANK = os.environ.get("PMI_RANK") or os.environ.get("OMPI_COMM_WORLD_RANK", "0")  # Hydra, Open MPI

#: (steal mode, steal-ahead low-water mark): every mode as it was, and two with steal ahead
STEALS = [("half", 0), ("level", 0), ("one", 0), ("half", 1), ("one", 3)]
COORDINATIONS = [("stacksteal", {}), ("depthbounded", {"spawn_depth": 2}), ("budget", {"backtracks": 50})]
ORDERED = [("ordered", {"spawn_depth": 1, "window": 1}), ("ordered", {"spawn_depth": 2, "window": 3}),
           ("ordered", {"spawn_depth": 1, "discrepancy": True})]


def cases(shared, small):
    rng = random.Random(5)
    shapes = [random_shape(rng, rng.randrange(50, 600)) for _ in range(2 if small else 3)]
    graph = MaxClique.from_file(f"{shared}/clique/{'hamming6-4' if small else 'brock200_4'}.clq")
    kp = read_knapsack(f"{shared}/knapsack/yewpar_kp/knapsackTest1.kp")
    kp = (kp.profits, kp.weights, kp.capacity)
    if small:   # its first 15 items in three quarters of the room: 4,222 nodes, not 248,094
        kp = (kp[0][:15], kp[1][:15], kp[2] * 3 // 4)
    queens = 8 if small else 10
    return shapes, graph, kp, queens


def main(shared, small):
    shapes, graph, kp, queens = cases(shared, small)
    target = 4 if small else 17
    out = {}
    for steal, ahead in STEALS:
        for name, params in COORDINATIONS:
            params = {**params, "steal": steal, **({"steal_ahead": ahead} if ahead else {})}
            key = f"{name}{json.dumps(params, sort_keys=True)}"
            q = NQueens(queens).search(name, **params)
            out[key + " nqueens"] = [q.value, q.nodes, q.status]
            u = UTS(**parse_uts_params(BINOMIAL)).search(name, **params)
            out[key + " uts"] = [u.value, u.nodes]
            trees = [DepthHistogram(s).search(name, **params) for s in shapes]
            out[key + " trees"] = [[list(map(list, t.value)), t.nodes] for t in trees]
            best = graph.search(name, **params)
            out[key + " clique"] = [best.objective, best.status]
            yes, no = (graph.search(name, decision=t, **params) for t in (target, target + 1))
            out[key + " clique=target"] = [yes.found, yes.status]     # a status tells a search cut
            out[key + " clique>target"] = [no.found, no.status]       # short by a stale STOP
            python_kp = KnapsackPy(*kp)
            out[key + " knapsack_py"] = python_kp.search(name, **params).objective
    for name, params in ORDERED:
        key = f"{name}{json.dumps(params, sort_keys=True)}"
        runs = [graph.search(name, **params) for _ in range(2)]
        out[key + " clique"] = [runs[0].objective, runs[1].status]
        out[key + " replicable"] = runs[0].nodes == runs[1].nodes and runs[0].objective == runs[1].objective
        yes, no = (graph.search(name, decision=t, **params) for t in (target, target + 1))
        out[key + " clique=target"] = [yes.found, yes.status]
        out[key + " clique>target"] = [no.found, no.status]
    with open(f"steal.{RANK}.json", "w") as f:
        json.dump(out, f)


if __name__ == "__main__":
    main(sys.argv[1], "--small" in sys.argv)
