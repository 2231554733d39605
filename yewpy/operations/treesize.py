"""Tree-size estimates: Knuth's path sampling (``yewpy._probe``) summed over probes and ranks.

A run's progress carries one (``Sampler``: each rank probes a copy of its core for a small share
of the time), and ``yewpy.estimate`` makes one before a run. For an optimisation the probes prune
against the incumbent of the moment, so the estimate is of the tree under that incumbent, and
it starts again when the incumbent improves.
"""

from __future__ import annotations

import math
import os
import time
from dataclasses import dataclass
from typing import Any

from yewpy._probe import Prober

#: the share of each rank's time that side probes may take during a run (YEWPY_PROBE_SHARE
#: overrides it: more probes, a tighter estimate, a slower search)
PROBE_SHARE = float(os.environ.get("YEWPY_PROBE_SHARE", "0.02"))
#: the half-width of the range, in standard errors of the mean
SPREAD = 2.0

#: (probes, sum of estimates, sum of their squares, the incumbent they pruned against or None)
Row = tuple[int, float, float, Any]
EMPTY: Row = (0, 0.0, 0.0, None)


def merge_rows(a: Row, b: Row, sign: float) -> Row:
    """Two ranks' probes as one; under different incumbents only the better one's probes count
    (the others estimate a tree that is no longer searched)."""
    if a[0] and b[0] and a[3] != b[3]:
        if a[3] is None or (b[3] is not None and sign * b[3] > sign * a[3]):
            return b
        return a
    under = a[3] if a[0] else b[3]
    return (a[0] + b[0], a[1] + b[1], a[2] + b[2], under)


@dataclass(frozen=True)
class TreeSize:
    """An estimate of a tree's node count: the mean of ``probes`` Knuth estimates, with a range of
    ``SPREAD`` standard errors. ``under``: the incumbent the probes pruned against (None: no
    pruning). On heavy-tailed trees (near-critical binomial ones) the standard error itself is
    underestimated; see docs/estimates.md."""

    probes: int
    nodes: float
    stderr: float
    under: Any = None

    @classmethod
    def of(cls, row: Row) -> TreeSize | None:
        probes, total, total_sq, under = row
        if probes == 0:
            return None
        mean = total / probes
        var = max(total_sq / probes - mean * mean, 0.0)
        return cls(probes, mean, math.sqrt(var / probes), under)

    def at_least(self, done: int) -> float:
        """The estimate, never below the ``done`` nodes already searched."""
        return max(self.nodes, float(done))

    def consistent(self, done: int) -> bool:
        """False when the nodes already searched exceed the whole range: the probes have missed
        the heavy tail of the tree, and the estimate is only the lower bound ``done``."""
        return done <= self.nodes + SPREAD * self.stderr

    def range(self, done: int = 0) -> tuple[float, float]:
        """Low and high node counts; never below the ``done`` nodes already searched."""
        low = max(self.nodes - SPREAD * self.stderr, float(done), 1.0)
        return low, max(self.nodes + SPREAD * self.stderr, low)

    def left(self, done: int, rate: float) -> tuple[float, float, float] | None:
        """Seconds left at ``rate`` nodes per second: (estimate, low, high), or None."""
        if rate <= 0:
            return None
        low, high = self.range(done)
        return ((self.at_least(done) - done) / rate, (low - done) / rate, (high - done) / rate)

    def to_dict(self, done: int = 0) -> dict:
        low, high = self.range(done)
        return {"nodes": self.at_least(done), "low": low, "high": high, "probes": self.probes,
                "consistent": self.consistent(done), "estimator": "knuth-1975", "under_incumbent": self.under}


class Sampler:
    """One rank's side probes during a run, on a core that no engine uses."""

    def __init__(self, core: Any, options: dict, seed: int) -> None:
        self.prober = Prober(core, max_depth=options.get("max_depth"),
                             prune_level=bool(options.get("prune_level")), target=options.get("target"),
                             seed=seed)
        self.under: Any = None
        self.spent = 0.0

    def sample(self, incumbent: Any, elapsed: float) -> None:
        """Probe until probing has taken ``PROBE_SHARE`` of ``elapsed`` (at least one probe)."""
        self.run(max(PROBE_SHARE * elapsed - self.spent, 0.0), incumbent)

    def run(self, seconds: float, incumbent: Any) -> None:
        """Probe for about ``seconds`` (at least one probe) pruning against ``incumbent``, starting
        again if it changed since the last probes."""
        if incumbent != self.under:
            self.prober.reset()
            self.under = incumbent
        started = time.perf_counter()
        self.prober.run(seconds, incumbent)
        self.spent += time.perf_counter() - started

    def row(self) -> Row:
        p = self.prober
        return (p.probes, p.total, p.total_sq, self.under)
