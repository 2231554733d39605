"""Ada-Grouper under the cost model: for each network condition, the kFkB group size k that trains
the chosen shape fastest within memory, and its gain over 1F1B.

A condition is a slowdown factor f: the network between nodes is f times slower (a congested or
shared fabric; NVLink inside a node is not the network). A bandwidth trace (seconds at each factor)
weights the conditions by their time. For each f the shape's (tp, pp, dp, micro-batch) stay fixed
and the stages are searched again for 1F1B and for kFkB with each k of ``KS``, memory checked as
always; kFkB hides all but 2/k of the stage-to-stage sends behind the group's other micro-batches
(docs/dnn.md), so its gain grows with the share of p2p time, i.e. with f.
"""

from __future__ import annotations

import math
from dataclasses import replace

from yewpy.apps.dnn.cluster import Cluster
from yewpy.apps.dnn.cost import Training
from yewpy.apps.dnn.models import Model
from yewpy.apps.dnn.planner.search import PlanSearch
from yewpy.apps.input_files import read_text
from yewpy.apps.input_numbers import parse_float
from yewpy.errors import InputError

KS = (2, 4, 8, 16)


def slowed(cluster: Cluster, factor: float) -> Cluster:
    """``cluster`` with the inter-node bandwidth divided by ``factor``."""
    return cluster.scaled(inter=1 / factor)


MAX_TRACE_SECONDS = 1e9  # a trace line of over 30 years is a typo (1e308 made the weights' sum inf)


def read_trace(path: str) -> list[tuple[float, float]]:
    """A bandwidth trace: lines ``SECONDS FACTOR`` (``#`` comments), both positive, factor >= 1."""
    lines = read_text(path).splitlines()
    trace = []
    for number, line in enumerate(lines, 1):
        words = line.split("#", 1)[0].split()
        if not words:
            continue
        try:
            seconds, factor = (parse_float(w) for w in words) if len(words) == 2 else (None, None)
        except ValueError:
            seconds = factor = None
        if (seconds is None or factor is None or not 0 < seconds <= MAX_TRACE_SECONDS or factor < 1
                or factor > 1e6):
            raise InputError(path, number, "expected 'SECONDS FACTOR' (0 < seconds <= 1e9, 1 <= factor <= "
                                           f"1e6), got {line.strip()!r}")
        trace.append((seconds, factor))
    if not trace:
        raise InputError(path, 1, "the trace has no 'SECONDS FACTOR' lines")
    return trace


def _best(model: Model, cluster: Cluster, train: Training, fix: dict, schedule: str, ks: tuple) -> tuple:
    narrowed = replace(train, fix=dict(fix, schedule=schedule), schedules=(schedule,), group_sizes=ks)
    search = PlanSearch(model, cluster, narrowed, top=1)
    result = search.search()
    if not result.solutions:
        return math.inf, None
    seconds, leaf = result.solutions[0]
    return seconds, search.shapes[leaf[1]].k


def ada_grouper(model: Model, cluster: Cluster, train: Training, plan: dict, levels: list) -> dict | None:
    """Per slowdown level (``levels``: (weight seconds, factor) pairs), 1F1B against the best kFkB
    for ``plan``'s tp, pp, dp and micro-batch; None when the plan has no pipeline (pp = 1) or mixes
    device groups in data parallelism (hap)."""
    if plan["pp"] < 2 or plan["mode"] != "pipe" or isinstance(plan["tp"], list):
        return None
    fix = {"tp": plan["tp"], "pp": plan["pp"], "dp": plan["dp"], "mb": plan["microbatch"]}
    weights: dict[float, float] = {}
    for seconds, factor in levels:
        weights[factor] = weights.get(factor, 0.0) + seconds
    rows = []
    for factor in sorted(weights):
        net = slowed(cluster, factor)
        one, _ = _best(model, net, train, fix, "1f1b", train.group_sizes)
        kfkb, k = _best(model, net, train, fix, "kfkb", KS)
        best_k, best = (k, kfkb) if kfkb < one else (1, one)   # k = 1 is 1F1B
        rows.append({"slowdown": factor, "weight_seconds": weights[factor], "1f1b_seconds": one,
                     "best_k": best_k, "best_seconds": best,
                     "gain": one / best - 1 if math.isfinite(best) and best > 0 else 0.0})
    total = sum(r["weight_seconds"] for r in rows)
    weighted = sum(r["gain"] * r["weight_seconds"] for r in rows) / total
    return {"levels": rows, "weighted_gain": weighted, "ks": list(KS)}
