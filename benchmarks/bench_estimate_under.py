"""How good the optimisation estimate is against what it claims to estimate: the tree under the
incumbent of the moment. One rank, the engine walked by node counts (10%, 25%, 50%, 75% of the
final count); at each point the recursive estimate (with the tops of unexplored children counted)
against the open work counted exactly with that incumbent held fixed (``Prober.expand`` and
``Prober.size``, which follow the engine's pruning rules), and against the final node count.

    python benchmarks/bench_estimate_under.py [--shared /path/to/instances] [--unlimited]

The probes' time is that of a run at 2 million nodes per second (2% of it, as in a run), or, with
``--unlimited``, as much as the counts take (what a long run with its default 5-second progress
lines approaches). gen200_p0.9_55 is left out: its tree under the early incumbents is too big to
count exactly in reasonable time.
"""

from __future__ import annotations

import argparse
import os
from pathlib import Path

from yewpy._engine import Engine
from yewpy._probe import Prober
from yewpy.apps.knapsack import read_knapsack
from yewpy.apps.knapsack_python import KnapsackPy
from yewpy.apps.maxclique import MaxClique, read_dimacs
from yewpy.operations.treesize import Sampler
from yewpy.search import core_of

RATE = 2e6      # nodes per second the walk pretends to run at (the probes' share is of that time)


def cases(shared: Path) -> dict:
    def clique(name: str):
        n, edges = read_dimacs(str(shared / "clique" / name))
        return lambda: MaxClique(n, edges).core()

    kp = read_knapsack(str(shared / "knapsack/yewpar_kp/knapsackTest1.kp"))
    def knapsack():
        return core_of(KnapsackPy(kp.profits, kp.weights, kp.capacity))

    return {"knapsack knapsackTest1 --python": knapsack,
            "maxclique p_hat300-3": clique("p_hat300-3.clq"),
            "maxclique brock200_1": clique("brock200_1.clq")}


def row(make_core, unlimited: bool) -> list[str]:
    engine = Engine(make_core(), prune_level=True)
    engine.start_root()
    while engine.active:
        engine.run(-1)
    final = engine.nodes
    engine = Engine(make_core(), prune_level=True, tracking=True)
    sampler = Sampler(make_core(), {"prune_level": True}, seed=1)
    exact = Prober(make_core(), prune_level=True)
    engine.start_root()
    cells = []
    for fraction in (0.10, 0.25, 0.50, 0.75):
        target = int(fraction * final)
        while engine.active and engine.nodes < target:      # a report every 5,000 nodes
            engine.run(max(min(target - engine.nodes, 5000), 1))
            sampler.left(engine, None, 1e9 if unlimited else engine.nodes / RATE)
        left = sampler.left(engine, None, 1e9 if unlimited else engine.nodes / RATE)[0]
        incumbent = engine.incumbent
        open_work = 0
        for f, (depth, _, _, generated, _, exhausted) in enumerate(engine.frontier()[0]):
            if not exhausted:
                for child in exact.expand(engine.frame_node(f), depth, incumbent)[generated:]:
                    open_work += 1 + (exact.size(child, depth + 1, incumbent) if child is not None else 0)
        under = engine.nodes + open_work
        estimate = engine.nodes + left
        cells.append(f"**{estimate / under:.2f}** ({estimate / final:.2f}, {under / final:.2f})")
    return [f"{final:,}", *cells]


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--shared", type=Path, default=Path(os.environ.get("YEWPY_SHARED", "/work/shared"))
                        / "instances")
    parser.add_argument("--unlimited", action="store_true", help="no limit on the counts' time")
    opts = parser.parse_args()
    print("Each cell: estimate / the tree under the incumbent "
          "(estimate / final count, that tree / final count)")
    print("| case | final nodes | at 10% | at 25% | at 50% | at 75% |")
    print("|---|---|---|---|---|---|")
    for name, make_core in cases(opts.shared).items():
        print("| " + " | ".join([name, *row(make_core, opts.unlimited)]) + " |", flush=True)


if __name__ == "__main__":
    main()
