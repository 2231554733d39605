"""The outcome of a search: the answer, how it ended, and what it cost."""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

FINISHED = ("optimal", "exhausted", "found")            # the search proved its answer
STOPPED = ("interrupted", "time_limit", "node_limit")   # it stopped early: the answer is the best known
BOUNDED = ("optimisation", "topk")                       # the kinds whose answer ``bound`` bounds
ANSWER_KEY = {"enumeration": "value", "decision": "found", "optimisation": "objective",   # per kind
              "topk": "solutions"}


@dataclass
class Result:
    """What ``search()`` returns.

    ``status`` is ``optimal`` (optimisation proved), ``exhausted`` (enumeration finished, or a
    decision search found nothing), ``found`` (decision witness), ``time_limit``,
    ``node_limit`` or ``interrupted`` (stopped early: the answer is the best known, not proved).
    A top-K search (kind ``topk``) has ``solutions``: ``(objective, solution)`` pairs, best first;
    ``objective`` and ``solution`` are the first of them.

    ``bound`` (optimisation and top-K): the best objective any solution can have, proven. It is
    ``objective`` when the search finished, whatever an app makes of an empty answer; a stopped
    search bounds the work it left open (its open frames and tasks, with the search's ``bound``)
    and takes the better of that and its answer (``stopped_bound``); None where that work could
    not be bounded (no ``bound``, ``estimate=``, a coordination that does not hold its work in the
    engine and pool), or for an answer that is only evaluated. A top-K search's bound is that of
    its best solution. ``gap`` is how far the answer may still be from the optimum.
    """

    kind: str
    status: str
    nodes: int
    seconds: float
    value: Any = None
    found: bool | None = None
    objective: Any = None
    solution: Any = None
    solutions: list | None = None
    metrics: dict = field(default_factory=dict)
    extras: dict = field(default_factory=dict)   # app-specific top-level JSON keys
    timed: str = "search only"                   # what ``seconds`` covers, as the CLI labels it
    stopped_bound: Any = None                    # ``bound`` of a stopped search (parts.proven_bound)

    @property
    def bound(self) -> Any:
        """The proven bound (see the class docstring): the objective once finished."""
        if self.kind not in BOUNDED:
            return None
        if self.status in FINISHED:
            return self.objective
        return self.stopped_bound if self.status in STOPPED else None

    @property
    def gap(self) -> float | None:
        """|bound - objective| / |objective|, as MIP solvers report it (0 when proven optimal,
        inf when the objective is 0 and the bound is not); None where either is unknown."""
        if self.bound is None or self.objective is None:
            return None
        diff = abs(self.bound - self.objective)
        return diff / abs(self.objective) if self.objective else (math.inf if diff else 0.0)

    @property
    def answer(self) -> Any:
        """The kind's headline answer: value, found or objective."""
        return getattr(self, ANSWER_KEY[self.kind])

    def to_dict(self) -> dict:
        """The JSON-ready fields (the answer under the kind's own key)."""
        answer = self.answer
        if self.kind == "topk":
            answer = [{"objective": objective, "solution": solution} for objective, solution in answer]
        ranked = {"objective": self.objective} if self.kind == "topk" else {}
        if self.kind in BOUNDED:
            gap = self.gap
            ranked.update(bound=self.bound, gap=None if gap is None or math.isinf(gap) else gap)
        return {"kind": self.kind, ANSWER_KEY[self.kind]: answer, **ranked, "solution": self.solution,
                "nodes": self.nodes, "seconds": self.seconds, "status": self.status, "metrics": self.metrics,
                **self.extras}
