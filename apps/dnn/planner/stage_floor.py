"""The memory-aware stage floor of a pipeline shape on one part or several: a min-max cut of the blocks
into the shape's stages in which each stage may take only what fits in its memory.

Eq. 1 charges c1 tau + exposed for the costliest stage, and where memory binds the early stages,
which hold the most micro-batches, must recompute, shard their state with ZeRO (whose
communication is then exposed) or take fewer blocks. :class:`StageFloor` answers, for one shape,
whether the blocks cut into its p stages (empty ones allowed: a relaxation that keeps the greedy
exact) so that every stage fits under some option at a cost of at most a cap (``cuts``), and
bisects for the least such cap (``least``); :class:`PartsFloor` does the same for a shape whose
stages lie on several parts (GPU kinds), so many on each in any order. Every option's cost over
blocks [lo, hi) is the largest of a few prefix-sum differences (``Mode.terms``), so a stage's reach
under a cap is a bisection in a prefix array, and its reach in memory another. The loops are
compiled (``_stage_floor``): the search asks this of hundreds of shapes, whose floors share their
modes packed once (:class:`ModeSet`).
"""

from __future__ import annotations

from typing import NamedTuple

from yewpy.apps.dnn.planner._stage_floor import PARTS_LIMIT, ModeSet, PartsFloor, StageFloor

__all__ = ["PARTS_LIMIT", "Mode", "ModeSet", "PartsFloor", "StageFloor"]


class Mode(NamedTuple):
    """One (recompute, ZeRO) option as the floor sees it (a tuple: a search builds tens of thousands)."""

    terms: tuple  # 1 to 6 (prefix, offset) pairs; the cost of [lo, hi): max(prefix[hi] - prefix[lo] + offset)
    act: list  # activation bytes per in-flight micro-batch, prefix sums
    working_set: float  # bytes held once besides the activations (full recomputation's one block)
    state: float  # model-state bytes per dense parameter on a GPU
    state_e: float  # ... per expert parameter
    gather: float  # ZeRO-3's gathered-weight buffer
