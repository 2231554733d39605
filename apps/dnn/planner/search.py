"""The strategy planner: branch and bound over pipeline shape, then stage by stage.

Tree (docs/dnn.md has the details and the bound's proof):

1. formation: which device groups are used and how many pipeline stages each gets (``pipe`` mode:
   stages of one group are equal, node-aligned slices) or, where a data-parallel group mixes
   device types (``hap`` mode), how many whole pipeline replicas each group holds;
2. the data-parallel degree d (the stage tensor-parallel degree follows: t = width / d);
3. the micro-batch b and the schedule (1F1B, interleaved with v chunks, kFkB with groups of k, GPipe);
4. stage by stage: the device group (pipe mode), the number of blocks, recomputation and ZeRO stage.

Nodes are tuples (picklable, small); a stage-level node is ``("s", shape, blocks used, stages left
per group, S, X, E, stages, order)`` with S, X, E the pipeline sum, maximum and exposed DP terms so far
and ``order`` its place in depth-first order (per stage: its (group, k) slot and its place among the
slot's options, whatever was pruned).
The search is an enumeration whose value is the ``top`` best distinct shapes, each by its best leaf
under the total order (iteration seconds, shape, order): the search prunes against this worker's own
top-th best shape and the shape's own best, and the workers' lists merge (``combine``) into the global
one. The order has no ties, so every coordination and rank count reports the identical plans without
a second pass.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace
from typing import Any

from yewpy.apps.dnn.cluster import Cluster
from yewpy.apps.dnn.cost import (
    RECOMPUTE,
    ZERO3_OVERLAP,
    StageTables,
    Training,
    allreduce,
    flat_ring,
    hierarchical_allreduce,
    inflight,
    p2p_sends,
    stage_cost,
    state_bytes_per_param,
    zero3_collectives,
)
from yewpy.apps.dnn.models import Model
from yewpy.apps.dnn.planner.bounds import SAFETY, Bounds, pipe_bound
from yewpy.apps.dnn.planner.pareto import pareto_options, pareto_scalar, pareto_vector
from yewpy.apps.dnn.planner.seed import Seeding
from yewpy.apps.dnn.planner.shares import integer_shares
from yewpy.kinds import TopK
from yewpy.ranking import Ranking


@dataclass(frozen=True)
class Shape:
    """The global decisions of a plan (levels 1-3)."""

    mode: str  # "pipe": per-stage device groups; "hap": replicas of different groups
    parts: tuple  # pipe: ((group, stages, t), ...); hap: ((group, replicas), ...)
    p: int
    d: int
    t: int  # hap: the common TP degree; pipe: 0 (per group in parts)
    b: int
    m: int  # pipe: micro-batches per replica; hap: micro-batches in all (B / b)
    schedule: str
    v: int = 1
    k: int = 1
    rc: str = ""  # the one recomputation mode of every stage, when the launcher needs one (else "")
    ep: int = 1  # expert-parallel degree (MoE models): a divisor of gcd(d, experts)
    c: int = 1  # context-parallel degree: each sequence split over c ranks (pipe mode, dense models)

    @property
    def replicas(self) -> int:
        """Ranks that hold the same parameters, all-reduce their gradients and share ZeRO state: the
        data-parallel ranks times the context-parallel ones (Megatron-LM's data-context group)."""
        return self.d * self.c

    @property
    def div(self) -> int:
        """What Eq. 1 divides the stages' summed time by: v for the interleaved schedule, else 1."""
        return self.v if self.schedule == "interleaved" else 1

    @property
    def c1(self) -> float:
        """Eq. 1's factor on the largest stage's time: m - 1/v (interleaved) or m - 1."""
        return self.m - 1 / self.div

    def form(self) -> tuple:
        if self.mode == "pipe":
            return ("pipe", tuple((g, s) for g, s, _ in self.parts))
        return ("hap", self.p, self.t, tuple(g for g, _ in self.parts))


def heads_not_divided(model: Model, t: int) -> tuple[int, str] | None:
    """The head count that tensor-parallel degree ``t`` does not divide, and what it counts, or None:
    Megatron-LM's ``arguments.py`` asserts that tp divides the attention heads and the key/value
    head groups."""
    meta = model.meta or {}
    for key, what in (("heads", "attention heads"), ("kv_heads", "key/value head groups")):
        count = meta.get(key)
        if count and count % t:
            return count, what
    return None


def divisors(n: int) -> list[int]:
    return [x for x in range(1, n + 1) if n % x == 0]


def aligned(width: int, g: int) -> bool:
    """A group of ``width`` GPUs on nodes of ``g``: inside one node or whole nodes. For a
    tensor-parallel group the latter is TP across nodes, its all-reduces costed on the network."""
    return width % g == 0 or g % width == 0


class PlanSearch(Seeding, Bounds, TopK):
    """The ``top`` fastest shapes (predicted iteration time) for training ``model`` on ``cluster``.

    A top-K search: ``Result.solutions`` holds the ``top`` best ``(seconds, leaf)``, one per shape
    (``key``), ties to the first leaf in depth-first order (``tiebreak``). ``children`` bounds what
    it makes (``time_bound``) against the bar and the shape's own best, before the dominance memo,
    so the engine is given no bound to compute again."""

    sense = "min"

    #: children of one (group, blocks) are also filtered by dominance of the combined state
    #: (sum, max, exposed); the exhaustive tree keeps only the path-independent option filter
    combined_pareto = True
    #: children whose bound cannot enter the top list are not generated (the exhaustive tree: all are)
    pruning = True

    @property
    def top(self) -> int:
        """How many plans the search keeps (``--top``): the top-K kind's ``k``."""
        return self.k

    def tp_fits(self, t: int) -> bool:
        """A tensor-parallel degree Megatron-LM can build: at most ``--max-tp``, and dividing the
        model's heads (:func:`heads_not_divided`)."""
        return t <= self.train.max_tp and heads_not_divided(self.model, t) is None

    def __init__(
        self, model: Model, cluster: Cluster, train: Training, memo: bool = True, rank: bool = True,
        top: int = 1,
    ) -> None:
        self.model, self.cluster, self.train = model, cluster, train
        self.k = max(1, top)
        self.found: dict = {}  # shape -> the best time this worker has seen
        self.seeded: dict = {}  # shape -> the time of a leaf the seed met in it (a limit, not a record)
        self.seed_bar = math.inf  # the seed's top-th best shape time: the bar before the search
        self.n = len(model.blocks)
        self.memo_on = memo
        self.memo: dict = {}
        self.tables: dict = {}
        self.costs: dict = {}
        self.opts: dict = {}
        self._slots_cache: dict = {}
        self._consts: dict = {}
        self._allowed_cache: dict = {}
        self._minmax_cache: dict = {}
        self._jensen_cache: dict = {}
        self._floors_cache: dict = {}
        self.shapes = self._shapes()
        if not rank:  # only for replaying known plans (sensitivity sweeps)
            return
        self.floors = [self.memory_floor(i) for i in range(len(self.shapes))]
        self.root_lb = [
            self._bound_state(i, 0, self.start_counts(i), *self.zero_state(i)) if need <= usable else math.inf
            for i, (need, usable) in enumerate(self.floors)
        ]
        forms: dict = {}
        for i, sh in enumerate(self.shapes):
            forms.setdefault(sh.form(), {}).setdefault(sh.d, []).append(i)
        self.forms = [
            (key, {d: sorted(ids, key=lambda i: (self.root_lb[i], i)) for d, ids in by_d.items()})
            for key, by_d in forms.items()
        ]
        self.form_lb = [min(self.root_lb[i] for ids in by_d.values() for i in ids) for _, by_d in self.forms]
        self.form_order = sorted(range(len(self.forms)), key=lambda f: (self.form_lb[f], f))
        if self.pruning:
            self.seed_bar = self._seed()

    def _shapes(self) -> list[Shape]:
        tr, fix, groups = self.train, self.train.fix, self.cluster.groups
        out = []
        subsets = [[g for g in range(len(groups)) if mask >> g & 1] for mask in range(1, 1 << len(groups))]
        for subset in subsets:
            # pipe mode
            choices = [
                [
                    (p, groups[g].gpus // p)
                    for p in divisors(groups[g].gpus)
                    if aligned(groups[g].gpus // p, groups[g].gpus_per_node)
                ]
                for g in subset
            ]
            for combo in _product(choices):
                p = sum(c[0] for c in combo)
                if p > self.n or fix.get("pp", p) != p:
                    continue
                widths = [c[1] for c in combo]
                room = math.gcd(*widths)  # ranks per stage and group that d, cp and t share
                for d, cp in [(dd, cp) for dd in divisors(room) for cp in self._context_degrees(room // dd)]:
                    ts = [w // (d * cp) for w in widths]
                    if tr.one_tp and len(set(ts)) > 1:
                        continue
                    if any(not self.tp_fits(t) or not aligned(t * cp, groups[g].gpus_per_node)
                           for g, t in zip(subset, ts)):
                        continue
                    if fix.get("dp", d) != d or any(fix.get("tp", t) != t for t in ts):
                        continue
                    parts = tuple((g, c[0], t) for g, c, t in zip(subset, combo, ts))
                    shapes = self._schedules("pipe", parts, p, d, 0, tr.global_batch)
                    out += [replace(sh, c=cp) for sh in shapes] if cp > 1 else shapes
            # hap mode: replicas of whole pipelines on different groups
            if len(subset) < 2 or not tr.hap:
                continue
            for p in range(1, self.n + 1):
                if fix.get("pp", p) != p:
                    continue
                for t in (1, 2, 4, 8, 16, 32, 64):
                    if not self.tp_fits(t) or fix.get("tp", t) != t:
                        continue
                    reps = []
                    for g in subset:
                        gr = groups[g]
                        if gr.gpus % (p * t) or not aligned(t, gr.gpus_per_node):
                            break
                        dg = gr.gpus // (p * t)
                        if not aligned(dg * t, gr.gpus_per_node):
                            break
                        reps.append((g, dg))
                    else:
                        d = sum(r[1] for r in reps)
                        if fix.get("dp", d) == d:
                            out += self._schedules("hap", tuple(reps), p, d, t, tr.global_batch)
        return out

    def _context_degrees(self, room: int) -> list[int]:
        """The context-parallel degrees a pipeline shape may take when ``room`` ranks per stage and
        replica are left for TP and CP: divisors of ``room`` up to ``--max-cp``, for dense models,
        splitting the sequence into 2c equal chunks (Megatron-LM's load-balanced causal split)."""
        tr = self.train
        if tr.max_cp == 1 or self.model.moe:
            return [1] if tr.fix.get("cp", 1) == 1 else []
        return [c for c in divisors(room)
                if c <= tr.max_cp and (c == 1 or tr.seq % (2 * c) == 0) and tr.fix.get("cp", c) == c]

    def _schedules(self, mode: str, parts: tuple, p: int, d: int, t: int, B: int) -> list[Shape]:
        tr, fix = self.train, self.train.fix
        out = []
        for b in tr.microbatches:
            if fix.get("mb", b) != b:
                continue
            if mode == "pipe":
                if B % (d * b):
                    continue
                m = B // (d * b)
            else:
                if B % b or B // b < d:
                    continue
                m = B // b
            for sched in tr.schedules:
                if fix.get("schedule", sched) != sched or (p == 1 and sched != "1f1b"):
                    continue
                if sched == "interleaved":
                    if mode == "hap" or m % p or p < tr.interleave_min_pp:
                        continue
                    for v in tr.interleave:
                        if p * v <= self.n and fix.get("v", v) == v:
                            out.append(Shape(mode, parts, p, d, t, b, m, sched, v=v))
                elif sched == "kfkb":
                    for k in tr.group_sizes:
                        if k < (m if mode == "pipe" else m // d):
                            out.append(Shape(mode, parts, p, d, t, b, m, sched, k=k))
                elif sched == "gpipe" and mode == "hap":
                    continue
                else:
                    out.append(Shape(mode, parts, p, d, t, b, m, sched))
        if tr.uniform_recompute:
            out = [replace(sh, rc=rc) for sh in out for rc in self._recompute_modes()]
        experts = math.gcd(*(blk.experts for blk in self.model.blocks))
        if experts:  # MoE: every expert-parallel degree that divides d and every MoE block's experts
            eps = [e for e in divisors(math.gcd(d, experts)) if fix.get("ep", e) == e]
            out = [replace(sh, ep=e) for sh in out for e in eps]
        return out

    def _recompute_modes(self) -> list[str]:
        tr = self.train
        return [rc for rc in RECOMPUTE if rc in tr.recompute and tr.fix.get("recompute", rc) == rc]

    # -- per-shape data ----------------------------------------------------------------------------

    def table(self, g: int, t: int, sh: Shape) -> StageTables:
        """Group ``g``'s per-block prefix tables at TP ``t`` for shape ``sh`` (its d, b, ep and c); cached."""
        key = (g, t, sh.d, sh.b, sh.ep, sh.c)
        tab = self.tables.get(key)
        if tab is None:
            gr = self.cluster.groups[g]
            tab = StageTables(self.model, gr, t, sh.d, sh.b, self.train,
                              ep_group_inter=sh.d * t > gr.gpus_per_node, ep=sh.ep, c=sh.c)
            self.tables[key] = tab
        return tab

    def _classes(self, sid: int) -> list:
        """Pipe: one class (the replicas), groups per stage. Hap: one class per group: (g, replicas)."""
        sh = self.shapes[sid]
        if sh.mode == "pipe":
            return [(None, sh.d)]
        return list(sh.parts)

    def start_counts(self, sid: int) -> tuple:
        sh = self.shapes[sid]
        return tuple(s for _, s, _ in sh.parts) if sh.mode == "pipe" else (sh.p,)

    def zero_state(self, sid: int) -> tuple:
        c = len(self._classes(sid))
        return (0.0,) * c, (0.0,) * c, 0.0

    def start_node(self, sid: int) -> tuple:
        """Shape ``sid``'s first stage-level node: no blocks placed, every stage left."""
        return ("s", sid, 0, self.start_counts(sid), *self.zero_state(sid), (), ())

    def dp_link(self, sid: int, g: int, t: int) -> tuple:
        sh, eff = self.shapes[sid], self.train.link_efficiency
        gr = self.cluster.groups[g]
        if sh.mode == "pipe":  # the data x context group, its ranks t apart (TP innermost)
            d = sh.replicas
            k1 = d if d * t <= gr.gpus_per_node else max(1, gr.gpus_per_node // t)
            return (
                k1,
                d // k1,
                gr.intra_bandwidth * eff,
                gr.inter_bandwidth * eff,
                gr.intra_latency,
                gr.inter_latency,
            )
        groups = [self.cluster.groups[x] for x, _ in sh.parts]
        k1 = min(
            r
            if r * t <= self.cluster.groups[x].gpus_per_node
            else max(1, self.cluster.groups[x].gpus_per_node // t)
            for x, r in sh.parts
        )
        return (
            k1,
            -(-sh.d // k1),
            min(x.intra_bandwidth for x in groups) * eff,
            min(x.inter_bandwidth for x in groups) * eff,
            max(x.intra_latency for x in groups),
            max(x.inter_latency for x in groups),
        )

    def _p2p_link(self, sid: int, prev: int | None, g: int, t: int) -> tuple | None:
        """The link a stage on group g receives its input over (None for the first stage)."""
        if prev is None:
            return None
        sh, eff = self.shapes[sid], self.train.link_efficiency
        gr = self.cluster.groups[g]
        if prev != g:
            bw, lat = self.cluster.link(self.cluster.groups[prev], gr)
            return bw * eff, lat
        if sh.replicas * t >= gr.gpus_per_node:
            return gr.inter_bandwidth * eff, gr.inter_latency
        return gr.intra_bandwidth * eff, gr.intra_latency

    # -- the tree --------------------------------------------------------------------------------

    def root(self) -> tuple:
        return ("root",)

    def children(self, node: tuple) -> Any:
        if not self.pruning or node[0] == "s":  # a stage's children are bounded where they are made
            yield from self._children(node)
            return
        for child in self._children(node):
            if self._promising(child):
                yield child

    def _promising(self, child: tuple, limit: float | None = None) -> bool:
        """Whether the child's bound reaches neither the top-K threshold nor its shape's best time
        (``limit``, when the caller has it)."""
        bound = self.time_bound(child)
        if limit is None:
            limit = self._limit(child[1]) if child[0] == "s" else self._bar()
        return bound <= limit and bound != math.inf  # bounds are shrunk: equal times stay

    def _bar(self) -> float:
        """The top-K bar as a time: the engine's (this worker's and every rank's it has heard), or
        the seed's before the search."""
        bar = self.threshold
        return self.seed_bar if bar is None or self.seed_bar < bar else bar

    def _limit(self, sid: int) -> float:
        """What a bound in shape ``sid`` must not exceed: the top-K bar or the best time known in
        the shape (a leaf found, or the seed's)."""
        own = min(self.found.get(sid, math.inf), self.seeded.get(sid, math.inf))
        bar = self._bar()
        return own if own < bar else bar

    def ranking(self) -> Ranking:
        """The engine's ranking, its bar already at the seed's top-th best time."""
        ranking = super().ranking()
        if self.seed_bar < math.inf:
            ranking.adopt(ranking.inclusive(self.seed_bar))
        return ranking

    def key(self, leaf: tuple) -> int:
        """One plan per shape."""
        return leaf[1]

    def tiebreak(self, leaf: tuple) -> tuple:
        """Equal times: the lower shape, then the first leaf in depth-first order (``order``, a
        leaf's child indices, does not depend on what was pruned)."""
        return leaf[1], leaf[8]

    def _children(self, node: tuple) -> Any:
        tag = node[0]
        if tag == "root":
            for f in self.form_order:
                yield ("form", f)
        elif tag == "form":
            for d in sorted(self.forms[node[1]][1]):
                yield ("dp", node[1], d)
        elif tag == "dp":
            for sid in self.forms[node[1]][1][node[2]]:
                yield self.start_node(sid)
        else:
            yield from self._stage_children(node)

    def _allowed(self, sid: int) -> tuple:
        """The (recompute, ZeRO) pairs a stage of shape ``sid`` may take, in the order children use."""
        hit = self._allowed_cache.get(sid)
        if hit is not None:
            return hit
        sh, tr = self.shapes[sid], self.train
        rcs = [sh.rc] if sh.rc else self._recompute_modes()
        zs = [z for z in sorted(tr.zero) if tr.fix.get("zero", z) == z]
        if sh.replicas == 1:
            zs = [0] if (not zs or 0 in zs or "zero" not in tr.fix) else []
        elif 1 in zs and 0 in zs:
            zs.remove(0)  # ZeRO-1 is never slower and always smaller than plain DP
        hit = self._allowed_cache[sid] = tuple((rc, z) for rc in rcs for z in zs)
        return hit

    def _stage_children(self, node: tuple) -> Any:
        _, sid, lo, counts, S, X, E, stages, order = node
        sh = self.shapes[sid]
        if not any(counts):
            return
        pipe = sh.mode == "pipe"
        j = len(stages)
        prev = stages[-1][0] if pipe and stages else None
        combined, pruning, megatron = self.combined_pareto, self.pruning, self.train.megatron_stages
        div, c1 = sh.div, sh.c1
        # A child's part of ``order``: its (group, k) slot times the most options a stage can have,
        # plus its place among that slot's options, so it does not depend on what was pruned.
        stride = len(self._allowed(sid))
        # The limit changes only while a child is out (the search meets leaves below it): read it again
        # after each yield, not for each of the many slots that the floors prune.
        limit = self._limit(sid)
        S0, X0 = S[0], X[0]
        for slot, (g, k, newcounts, opts, floor, floors) in enumerate(self._slots(sid, lo, counts, prev)):
            if megatron and not self._megatron_stage(sh, lo, k, j, stages):
                continue
            base = slot * stride
            if pipe:
                if pruning:  # the least each term could be: if even that is pruned, every option is
                    a, x, c = floor
                    least = pipe_bound(floors, S0 + a, x if x > X0 else X0, c if c > E else E, div, c1)
                    if least * SAFETY > limit:
                        continue
                kids = [(a, x if x > X0 else X0, c if c > E else E, rc, z) for a, x, c, rc, z in opts]
                if combined and len(kids) > 1:
                    kids = pareto_scalar(kids)
                for i, (a, x, c, rc, z) in enumerate(kids):
                    child = ("s", sid, lo + k, newcounts, (S0 + a,), (x,), c, stages + ((g, k, rc, z),),
                             order + (base + i,))
                    if pruning and not self._promising(child, limit):
                        continue  # bounded before the memo: what it would dominate is pruned too
                    if self.memo_on and self._dominated(child):
                        continue
                    yield child
                    limit = self._limit(sid)
            else:
                kids = [
                    (tuple(s + a for s, a in zip(S, av)), tuple(x if x > y else y for x, y in zip(bv, X)),
                     c if c > E else E, rc, z)
                    for av, bv, c, rc, z in opts
                ]
                if combined and len(kids) > 1:
                    kids = pareto_vector(kids)
                for i, (s2, x2, c, rc, z) in enumerate(kids):
                    child = ("s", sid, lo + k, newcounts, s2, x2, c, stages + ((0, k, rc, z),),
                             order + (base + i,))
                    if pruning and not self._promising(child, limit):
                        continue
                    if self.memo_on and self._dominated(child):
                        continue
                    yield child
                    limit = self._limit(sid)

    def _slots(self, sid: int, lo: int, counts: tuple, prev: int | None) -> list:
        """The next stage's choices from blocks ``lo`` with ``counts`` stages left, in child order:
        (group, k blocks, counts after, its options, the least of each option term (pipe), the
        floors of the blocks after it). Fastest group first, k by discrepancy from the group's
        share of the rest. Depends only on the arguments, so cached."""
        key = (sid, lo, counts, prev)
        hit = self._slots_cache.get(key)
        if hit is not None:
            return hit
        sh = self.shapes[sid]
        q = sum(counts)
        R = self.n - lo
        j = sh.p - q
        if sh.mode == "pipe":
            rates = {g: self.table(g, t, sh).rate for g, _, t in sh.parts}
            cap = sum(c * rates[g] for (g, _, _), c in zip(sh.parts, counts))
            choices = [(g, max(1, round(R * rates[g] / cap)))
                       for (g, _, _), c in zip(sh.parts, counts) if c > 0]
            choices.sort(key=lambda o: -rates[o[0]])
        else:
            choices = [(None, max(1, round(R / q)))]
        hi_max = self.n - (q - 1) * sh.v
        hit = []
        for g, share in choices:
            if sh.mode == "pipe":
                i = [pg for pg, _, _ in sh.parts].index(g)
                newcounts = counts[:i] + (counts[i] - 1,) + counts[i + 1 :]
            else:
                newcounts = (counts[0] - 1,)
            for k in [R] if q == 1 else _discrepancy(share, sh.v, hi_max - lo):
                opts = self._stage_options(sid, g, lo, lo + k, j, prev)
                if opts:
                    floor = tuple(min(o[t] for o in opts) for t in range(3)) if sh.mode == "pipe" else None
                    hit.append((g, k, newcounts, opts, floor, self._floors(sid, lo + k, newcounts)))
        self._slots_cache[key] = hit
        return hit

    def _megatron_stage(self, sh: Shape, lo: int, k: int, j: int, stages: tuple) -> bool:
        """Megatron-LM's stage rule for blocks [lo, lo + k) as stage ``j``: at least one transformer
        layer (the embedding and head blocks are not layers), a multiple of v layers, and the middle
        stages all equal (``--decoder-first/last-pipeline-num-layers`` set the ends)."""
        layers = k - (lo == 0) - (lo + k == self.n)
        if layers < 1 or layers % sh.v:
            return False
        return not 2 <= j <= sh.p - 2 or k == stages[1][1]

    def _stage_options(self, sid: int, g: int | None, lo: int, hi: int, j: int, prev: int | None) -> tuple:
        """The memory-feasible (recompute, ZeRO) options of blocks [lo, hi) as stage ``j``, less those
        no better in every stage term than another: pipe (a, b, c, rc, z) with a = tau + 2 p2p (the
        fill term), b = tau + e p2p (the steady term), c = exposed DP + optimizer; hap the same with
        a and b per class. Cached: the options depend only on the key, not on the path."""
        key = (sid, g, lo, hi, j, prev)
        hit = self.opts.get(key)
        if hit is not None:
            return hit
        out = pareto_options(self.stage_terms(sid, g, lo, hi, j, prev), self.shapes[sid].mode == "pipe")
        self.opts[key] = out
        return out

    def stage_terms(self, sid: int, g: int | None, lo: int, hi: int, j: int, prev: int | None) -> list:
        """Every memory-feasible option of blocks [lo, hi) as stage ``j`` (see ``_stage_options``).

        The arithmetic of :func:`stage_cost` for all (recompute, ZeRO) pairs at once, with the
        per-(shape, group) constants hoisted (``_class_consts``); a test checks it against stage_cost."""
        sh = self.shapes[sid]
        allowed = self._allowed(sid)
        if sh.mode == "pipe":
            classes = ((g, prev),)
        else:
            classes = tuple((gg, gg if j else None) for gg, _ in sh.parts)
        per_class = []
        for gg, before in classes:
            cc = self._class_consts(sid, gg, before)
            tab, usable, zc, e, dp_one, zero3, infl, p2p_c = cc
            params = tab.params[hi] - tab.params[lo]
            if tab.tied and lo == 0 and hi == self.n:
                params -= tab.head_params
            local = params / tab.t
            dense = (tab.dense[hi] - tab.dense[lo]) / tab.t
            experts = (tab.expert[hi] - tab.expert[lo]) / tab.t
            one = collectives = 0.0
            if dp_one is not None:
                one, collectives = dp_one(dense, experts), zero3(dense, experts, hi - lo)
            p2p = 0.0 if p2p_c is None else p2p_c[0] + p2p_c[1] * tab.boundaries[hi - 1]
            fj = infl[j]
            terms = []
            for rc, z in allowed:
                tau = tab.time[rc][hi] - tab.time[rc][lo]
                state, gbuf, touched_f, m_dp, state_e, touched_e = zc[z]
                memory = ((local - experts) * state + experts * state_e + gbuf
                          + (tab.act[rc][hi] - tab.act[rc][lo]) * fj)
                if rc == "full":
                    memory += tab.working_set
                if memory > usable:
                    terms.append(None)
                    continue
                exposed = 0.0
                if dp_one is not None:
                    if z == 3:
                        tau += max(0.0, collectives - ZERO3_OVERLAP * tau)
                    else:
                        dp = one / 2 * m_dp + one / 2 if z == 2 else one
                        exposed = max(0.0, dp - tau * 2 / 3)
                exposed += (local - experts) * touched_f + experts * touched_e
                terms.append((tau + 2 * p2p, tau + e * p2p, exposed))
            per_class.append(terms)
        out = []
        for i, (rc, z) in enumerate(allowed):
            row = [terms[i] for terms in per_class]
            if any(r is None for r in row):
                continue
            if sh.mode == "pipe":
                out.append((row[0][0], row[0][1], row[0][2], rc, z))
            else:
                avec, bvec = tuple(r[0] for r in row), tuple(r[1] for r in row)
                out.append((avec, bvec, max(r[2] for r in row), rc, z))
        return out

    def _class_consts(self, sid: int, gg: int, before: int | None) -> tuple:
        """What the stage cost of shape ``sid`` on group ``gg`` needs besides the blocks, computed once."""
        key = (sid, gg, before)
        hit = self._consts.get(key)
        if hit is not None:
            return hit
        sh, tr = self.shapes[sid], self.train
        t = self._tp(sid, gg)
        tab = self.table(gg, t, sh)
        m_mem = sh.m if sh.mode == "pipe" else sh.p
        zc = {}
        r = tab.expert_replicas
        for z in (0, 1, 2, 3):
            state = state_bytes_per_param(z, sh.replicas, tr.weight_bytes, tr.grad_bytes, tr.optimizer_bytes)
            state_e = state_bytes_per_param(z, r, tr.weight_bytes, tr.grad_bytes, tr.optimizer_bytes)
            gbuf = tab.gather_buffer / t * tr.weight_bytes if z == 3 else 0.0
            touched_f = 2 * tr.state_bytes / tab.group.hbm_bandwidth / (sh.replicas if z >= 1 else 1)
            touched_e = 2 * tr.state_bytes / tab.group.hbm_bandwidth / (r if z >= 1 else 1)
            zc[z] = (state, gbuf, touched_f, m_mem, state_e, touched_e)
        e = p2p_sends(sh.schedule, sh.v, sh.k)
        dp_one = zero3 = None
        if sh.replicas > 1:
            link = self.dp_link(sid, gg, t)

            def dp_one(dense: float, experts: float, link: tuple = link) -> float:
                out = hierarchical_allreduce(dense * tr.grad_bytes, *link)
                if experts and r > 1:
                    out += allreduce(experts * tr.grad_bytes, r, *tab.expert_ring)
                return out

            def zero3(dense: float, experts: float, blocks: int, link: tuple = link) -> float:
                out = zero3_collectives(dense, blocks, sh.replicas, flat_ring(link), tr.weight_bytes)
                if experts and r > 1:
                    out += zero3_collectives(experts, blocks, r, tab.expert_ring, tr.weight_bytes)
                return out

        infl = [inflight(sh.schedule, j, sh.p, m_mem, sh.v, sh.k) for j in range(sh.p)]
        p2p_c = None
        link2 = self._p2p_link(sid, before, gg, t)
        if link2 is not None:
            bw, lat = link2
            p2p_c = (lat, 2.0 * sh.b * tr.seq / sh.c / t / bw)
        out = (tab, tr.usable(self.cluster.groups[gg]), zc, e, dp_one, zero3, infl, p2p_c)
        self._consts[key] = out
        return out

    def _tp(self, sid: int, g: int) -> int:
        sh = self.shapes[sid]
        if sh.mode == "hap":
            return sh.t
        return next(t for pg, _, t in sh.parts if pg == g)

    def _dominated(self, child: tuple) -> bool:
        """Per-worker memo: drop a state no better than one seen at equal (shape, blocks, stages left,
        last group: the next stage's p2p link depends on it) that comes first in depth-first order.
        Every completion of the kept state is then no slower and sorts first, so the plan does not
        depend on which state a worker met first (a sequential search meets them in that order)."""
        key = (child[1], child[2], child[3], child[7][-1][0])
        if self.train.megatron_stages and len(child[7]) > 1:  # the middle stages' size binds the rest
            key += (child[7][1][1],)
        seen = self.memo.get(key)
        order = child[8]
        if len(child[4]) == 1:  # pipe: (sum, max, exposed) scalars, compared without generators
            s, x, e = child[4][0], child[5][0], child[6]
            if seen is None:
                self.memo[key] = [(s, x, e, order)]
                return False
            for o in seen:
                if o[0] <= s and o[1] <= x and o[2] <= e and o[3] < order:
                    return True
            seen[:] = [o for o in seen if not (s <= o[0] and x <= o[1] and e <= o[2] and order < o[3])]
            seen.append((s, x, e, order))
            return False
        vec = child[4] + child[5] + (child[6],)
        if seen is None:
            self.memo[key] = [(vec, order)]
            return False
        for old, old_order in seen:
            if old_order < order and all(a <= b for a, b in zip(old, vec)):
                return True
        seen[:] = [(old, old_order) for old, old_order in seen
                   if not (order < old_order and all(a <= b for a, b in zip(vec, old)))]
        seen.append((vec, order))
        return False

    def make(self, sid: int, node: tuple, g: int | None, t: int, k: int, rc: str, z: int) -> tuple | None:
        _, _, lo, counts, S, X, E, stages, order = node
        sh, tr = self.shapes[sid], self.train
        hi = lo + k
        j = len(stages)
        e = p2p_sends(sh.schedule, sh.v, sh.k)
        newS, newX, newE = list(S), list(X), E
        if sh.mode == "pipe":
            classes = [(g, sh.d, sh.m)]
        else:
            classes = [(gg, r, sh.p) for gg, r in sh.parts]  # in-flight never above p - j (1F1B/kFkB)
        prev = stages[-1][0] if stages else None
        for c, (gg, _, m_mem) in enumerate(classes):
            before = prev if sh.mode == "pipe" else (gg if stages else None)
            ckey = (sid, gg, t, lo, hi, rc, z, j, before)
            cost = self.costs.get(ckey)
            if cost is None:  # a stage's cost depends only on the key: many nodes share it
                cost = self.costs[ckey] = stage_cost(
                    self.table(gg, t, sh),
                    lo,
                    hi,
                    rc,
                    z,
                    j,
                    sh.p,
                    m_mem,
                    sh.schedule,
                    sh.v,
                    sh.k,
                    tr,
                    self.dp_link(sid, gg, t),
                    self._p2p_link(sid, before, gg, t),
                    self.n - 1,
                )
            if cost.memory > tr.usable(self.cluster.groups[gg]):
                return None
            newS[c] += cost.tau + 2 * cost.p2p
            newX[c] = max(newX[c], cost.tau + e * cost.p2p)
            newE = max(newE, cost.exposed)
        newcounts = list(counts)
        if sh.mode == "pipe":
            newcounts[[pg for pg, _, _ in sh.parts].index(g)] -= 1
        else:
            newcounts[0] -= 1
        rest = sum(newcounts)
        if rest == 0 and hi != self.n:
            return None
        if rest and self.n - hi < rest * sh.v:
            return None
        key = (g if sh.mode == "pipe" else 0, k, rc, z)
        return ("s", sid, hi, tuple(newcounts), tuple(newS), tuple(newX), newE, stages + (key,), order)

    def replay(self, leaf: tuple) -> float:
        """The time of a leaf's plan (found by another PlanSearch with the same shapes) on this cluster."""
        sid, stages = leaf[1], leaf[7]
        sh = self.shapes[sid]
        node = self.start_node(sid)
        tps = {g: t for g, _, t in sh.parts} if sh.mode == "pipe" else {}
        for g, k, rc, z in stages:
            nxt = self.make(sid, node, g, tps.get(g, sh.t), k, rc, z)
            if nxt is None:
                return math.inf
            node = nxt
        return self.leaf_time(node)[0]

    # -- objective and bound ---------------------------------------------------------------------

    def objective(self, node: tuple) -> float:
        """A leaf's predicted iteration time (inf: not a plan). It also notes the shape's best
        time, the limit of the shape's own pruning: a shape enters the top list once."""
        if node[0] != "s" or sum(node[3]) or node[2] != self.n:
            return math.inf
        seconds = self.leaf_time(node)[0]
        if seconds < self.found.get(node[1], math.inf):
            self.found[node[1]] = seconds
        return seconds

    def leaf_time(self, node: tuple) -> tuple:
        _, sid, _, _, S, X, E = node[:7]
        sh = self.shapes[sid]
        if sh.mode == "pipe":
            return S[0] / sh.div + sh.c1 * X[0] + E, None
        A = [S[c] - X[c] for c in range(len(S))]
        worst, counts = integer_shares(A, list(X), [r for _, r in sh.parts], sh.m)
        return worst + E, counts

class ExhaustivePlanSearch(PlanSearch):
    """The same tree with no bound and no dominance memo (for tests: the oracle BnB must equal)."""

    def __init__(self, model: Model, cluster: Cluster, train: Training, top: int = 1) -> None:
        super().__init__(model, cluster, train, memo=False, top=top)

    combined_pareto = False
    pruning = False


def _product(lists: list) -> list:
    out: list = [()]
    for options in lists:
        out = [o + (x,) for o in out for x in options]
    return out


def _discrepancy(share: int, low: int, high: int) -> list[int]:
    """low..high ordered by distance from ``share`` (share first, then +1, -1, +2, -2, ...)."""
    share = min(max(share, low), high)
    out = [share]
    for delta in range(1, high - low + 1):
        for k in (share + delta, share - delta):
            if low <= k <= high:
                out.append(k)
    return out


