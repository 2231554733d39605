"""Dominance filters over a stage's options: an option no better in any cost term than another of the
same stage can never lead to a faster plan, whatever the path (sums add, maxima take the larger)."""

from __future__ import annotations

from collections.abc import Callable

from yewpy.apps.dnn.cost import zero_base

# Galvatron's rule on the first and last stages' ZeRO-3 (``PlanSearch._galvatron_ends``): a stage's
# options only under ZeRO-3, only not, or the best of each kind apart
ZERO3_END, OTHER_END, EACH_END = "zero3", "other", "each"


def end_kind(z: int) -> str:
    """Which side of Galvatron's end rule ZeRO option code ``z`` is on: ZERO3_END or OTHER_END."""
    return ZERO3_END if zero_base(z) == 3 else OTHER_END


def pareto_options(options: list, scalar: bool, ends: str | None = None) -> tuple:
    """Drop options no better in any stage term (a, b, c) than another of the same stage: whatever the
    path, the dropped one's state would be dominated (sums add a, maxima take b and c). Options are
    rows (a, b, c, rc, z); ``ends`` keeps only one kind of ZeRO, or compares each kind apart."""
    if ends == ZERO3_END or ends == OTHER_END:
        options = [o for o in options if end_kind(o[4]) == ends]
    if len(options) < 2:
        return tuple(options)
    keep = pareto_scalar if scalar else pareto_vector
    return tuple(per_end(options, keep) if ends == EACH_END else keep(options))


def per_end(items: list, keep: Callable[[list], list]) -> list:
    """``keep`` applied to the ZeRO-3 rows and to the others apart (Galvatron's ``EACH_END``)."""
    return [o for kind in (ZERO3_END, OTHER_END) for o in keep([o for o in items if end_kind(o[4]) == kind])]


def pareto_scalar(items: list) -> list:
    """Pareto filter of (a, b, c, ...) rows on their first three numbers."""
    items.sort(key=lambda o: (o[0], o[1], o[2]))
    kept: list = []
    for o in items:
        b, c = o[1], o[2]
        for k in kept:  # sorted: every kept row has a <= o's
            if k[1] <= b and k[2] <= c:
                break
        else:
            kept.append(o)
    return kept


def pareto_vector(items: list) -> list:
    """Pareto filter of (avec, bvec, c, ...) rows."""
    items.sort(key=lambda o: (o[0], o[1], o[2]))
    kept: list = []
    for o in items:
        vec = o[0] + o[1] + (o[2],)
        if not any(all(x <= y for x, y in zip(k[0] + k[1] + (k[2],), vec)) for k in kept):
            kept.append(o)
    return kept
