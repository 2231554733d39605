"""What a victim gives a thief: a share of its open work, from its pool first, else its engine."""

from __future__ import annotations

import os
from typing import Any

# half: every other task of the pool, or every other open child of the engine's frames, shallowest
# first (the victim keeps the rest in its pool); level: the shallowest depth of the pool, or every
# remaining child of the engine's shallowest open frame; one: one task or child (YewPar's default).
STEALS = ("half", "level", "one")
# A half share stops growing at HALF_MOST tasks for the thief: on a tree 17,844 levels deep (UTS
# T3L) all the open children are tens of thousands of nodes, and a share that large costs the
# victim and the thief milliseconds to make, send and unpack, while a few hundred of the
# shallowest are already most of the work.
HALF_MOST = int(os.environ.get("YEWPY_HALF_MOST") or 256)   # the override is for experiments
# A split keeps the children its core knows to be leaves (``Engine.keep_leaves``); ``0`` sends
# them as tasks like any other, for side-by-side runs.
KEEP_LEAVES = os.environ.get("YEWPY_KEEP_LEAVES", "1") != "0"


def give(engine: Any, pool: Any, mode: str) -> list:
    """Take the thief's share out of ``pool`` or ``engine`` (``mode``: one of ``STEALS``)."""
    if len(pool):
        return pool.steal(mode, HALF_MOST)
    if not engine.active:
        return []
    engine.keep_leaves = KEEP_LEAVES
    if mode == "one":
        return engine.split(False)
    if mode == "level":
        return engine.split(True)
    tasks = engine.split(True, True, 2 * HALF_MOST)
    pool.extend(tasks[1::2])
    return tasks[0::2]
