"""Depth-bounded spawning with known leaves kept (``Engine.keep_leaves``) against sent, in one process.

UTS T3's spawned tasks run one after another on the same engine, so what differs is only the
tasks made, pooled and started; each round runs both settings, alternating, and the medians and
their ratio (kept / sent) are printed per spawn depth.

    python benchmarks/bench_keep_leaves.py --rounds 5
"""

from __future__ import annotations

import argparse
import statistics
import time

from yewpy._engine import DONE, Engine
from yewpy.apps.uts import UTS, parse_uts_params

T3 = "-t 0 -b 2000 -q 0.124875 -m 8 -r 42"


def once(keep: bool, depth: int) -> tuple[float, int]:
    """Seconds to search T3 with spawning to ``depth``, and the tasks made."""
    engine = Engine(UTS(**parse_uts_params(T3)).core(), spawn_depth=depth)
    engine.keep_leaves = keep
    began = time.perf_counter()
    engine.start_root()
    assert engine.run(-1) == DONE
    tasks, engine.spawned, done = engine.spawned, [], 0
    while done < len(tasks):
        engine.start(tasks[done])
        assert engine.run(-1) == DONE
        tasks += engine.spawned
        engine.spawned = []
        done += 1
    assert engine.nodes == 4112897
    return time.perf_counter() - began, len(tasks)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--depths", type=int, nargs="*", default=[1, 2, 3])
    opts = parser.parse_args()
    for depth in opts.depths:
        runs: dict[bool, list] = {True: [], False: []}
        for _ in range(opts.rounds):
            for keep in (True, False):
                runs[keep].append(once(keep, depth))
        kept, sent = (statistics.median(s for s, _ in runs[k]) for k in (True, False))
        print(f"spawn depth {depth}: tasks {runs[False][0][1]:,} -> {runs[True][0][1]:,}; "
              f"sent {sent:.3f} s, kept {kept:.3f} s, kept/sent {kept / sent:.2f}")


if __name__ == "__main__":
    main()
