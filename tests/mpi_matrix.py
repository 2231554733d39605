"""Run under mpiexec by test_mpi.py: every kind x coordination on this job's ranks.

Writes ``matrix.<rank>.json``: for each case the answer and node count every rank got.
"""

import json
import os
import random
import sys

from support import DepthHistogram
from yewpy.apps.knapsack import Knapsack, read_knapsack
from yewpy.apps.knapsack_python import KnapsackPy
from yewpy.apps.maxclique import MaxClique
from yewpy.apps.nqueens import NQueens

RANK = os.environ.get("PMI_RANK") or os.environ.get("OMPI_COMM_WORLD_RANK", "0")  # Hydra, Open MPI

COORDINATIONS = [("seq", {}), ("stacksteal", {}), ("stacksteal", {"chunked": True}),
                 ("depthbounded", {"spawn_depth": 2}), ("budget", {"backtracks": 100}),
                 ("budget", {"backtracks": 20, "spawn_all": True, "pool": "deque"})]
ORDERED = [("ordered", {"spawn_depth": 1}), ("ordered", {"spawn_depth": 2, "discrepancy": True})]


def random_shape(rng, n):
    shape = {}
    for child in range(1, n):
        shape.setdefault(rng.randrange(child), []).append(child)
    return shape


def main(shared, seed):
    graph = MaxClique.from_file(f"{shared}/clique/brock200_4.clq")
    kp = read_knapsack(f"{shared}/knapsack/yewpar_kp/knapsackTest1.kp")
    rng = random.Random(seed)
    shapes = [random_shape(rng, rng.randrange(1, 400)) for _ in range(5)]
    out = {}
    for name, params in COORDINATIONS + ORDERED:
        key = f"{name}{json.dumps(params, sort_keys=True)}"
        if name == "ordered":                   # replicable: the same node counts run after run
            twice = [graph.search(name, **params).nodes for _ in range(2)]
            twice += [Knapsack.from_instance(kp).search(name, **params).nodes for _ in range(2)]
            out[key + " replicable"] = twice[0] == twice[1] and twice[2] == twice[3]
        else:
            queens = NQueens(10).search(name, **params)
            out[key + " nqueens"] = [queens.value, queens.nodes]
            trees = [DepthHistogram(s).search(name, max_depth=9, **params) for s in shapes]
            out[key + " trees"] = [[list(map(list, t.value)), t.nodes] for t in trees]
        out[key + " clique"] = graph.search(name, **params).objective
        yes = graph.search(name, decision=17, **params)
        out[key + " clique17"] = [yes.found, graph.is_clique(yes.solution)]
        out[key + " clique18"] = graph.search(name, decision=18, **params).found
        out[key + " knapsack"] = Knapsack.from_instance(kp).search(name, **params).objective
        python_kp = KnapsackPy(kp.profits, kp.weights, kp.capacity)
        out[key + " knapsack_py"] = python_kp.search(name, **params).objective
    with open(f"matrix.{RANK}.json", "w") as f:
        json.dump(out, f)


if __name__ == "__main__":
    main(sys.argv[1], int(sys.argv[2]))
