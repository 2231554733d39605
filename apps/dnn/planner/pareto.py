"""Dominance filters over a stage's options: an option no better in any cost term than another of the
same stage can never lead to a faster plan, whatever the path (sums add, maxima take the larger)."""

from __future__ import annotations


def pareto_options(options: list, scalar: bool) -> tuple:
    """Drop options no better in any stage term (a, b, c) than another of the same stage: whatever the
    path, the dropped one's state would be dominated (sums add a, maxima take b and c)."""
    if len(options) < 2:
        return tuple(options)
    if scalar:
        return tuple(pareto_scalar(options))
    return tuple(pareto_vector(options))


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
