"""The strategy planner: branch and bound over pipeline shape, then stage by stage.

Tree (docs/dnn.md has the details and the bound's proof):

1. formation: which device groups are used and how many pipeline stages each gets (``pipe`` mode:
   stages of one group are equal, node-aligned slices, or of two widths under DAPPLE's per-stage
   replication; a group's stages of one width are a *part* of the shape) or, where a data-parallel group mixes
   device types (``hap`` mode), how many whole pipeline replicas each group holds;
2. the data-parallel degree d (the stage tensor-parallel degree follows: t = width / d);
3. the micro-batch b and the schedule (1F1B, interleaved with v chunks, kFkB with groups of k, GPipe);
4. stage by stage: the part (pipe mode), the number of blocks, recomputation and ZeRO stage.

Nodes are tuples (picklable, small); a stage-level node is ``("s", shape, blocks used, stages left
per group, S, X, E, stages, order)`` with S, X, E the pipeline sum, maximum and exposed DP terms so far
and ``order`` its place in depth-first order (per stage: its (part, k) slot and its place among the
slot's options, whatever was pruned); a stage is (part, k, recompute, ZeRO), hap stages part 0.
The search is a top-K search (:class:`yewpy.TopK`): the ``top`` best distinct shapes, each by its
best leaf under the total order (iteration seconds, shape, order). It prunes against the top-K bar,
which the engine shares between workers, and against the shape's own best. The order has no ties,
so every coordination and rank count reports the identical plans.

The concepts live in mixins beside this module: the shapes of levels 1-3 (``shapes``), what a stage
costs (``stage_costs``), the lower bounds (``bounds``), the seed (``seed``) and the dominance memo
(``dominance``). This module holds the tree itself and the top-K rules.
"""

from __future__ import annotations

import copy
import math
from typing import Any

from yewpy.apps.dnn.cluster import Cluster
from yewpy.apps.dnn.cost import (
    Training,
    p2p_sends,
    per_layer_tp,
    stage_cost,
)
from yewpy.apps.dnn.models import Model
from yewpy.apps.dnn.planner.bounds import SAFETY, Bounds, pipe_bound
from yewpy.apps.dnn.planner.dominance import Dominance
from yewpy.apps.dnn.planner.pareto import EACH_END, end_kind, pareto_scalar, pareto_vector, per_end
from yewpy.apps.dnn.planner.seed import Seeding
from yewpy.apps.dnn.planner.shapes import Shape, Shapes, mixed_tp_cluster
from yewpy.apps.dnn.planner.shares import integer_shares
from yewpy.apps.dnn.planner.stage_costs import StageCosts
from yewpy.kinds import TopK
from yewpy.ranking import Ranking


class PlanSearch(Shapes, StageCosts, Bounds, Seeding, Dominance, TopK):
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
    #: ``children`` bounds what it makes (``time_bound``): the engine bounds only what a stopped
    #: search leaves open (``Result.bound``)
    bounded_children = True

    #: caches whose entries depend only on their keys, and what the constructor writes once (the
    #: seed's plans): a copy shares them (see ``__deepcopy__``)
    SHARED = frozenset({
        "model", "cluster", "given", "covers", "rests", "train", "shapes", "tables", "_any_d_tables", "costs",
        "opts",
        "_slots_cache", "_slot_cache",
        "_least_cache",
        "_consts", "_allowed_cache", "_minmax_cache", "_jensen_cache", "_floors_cache", "stage_floors",
        "_stage_floor_cores", "_wan_cache", "_kind_cache", "_table_keys", "_twins_cache", "_ratio_cache",
        "_ranking", "seed_plans",
        "_leave_cache", "_blocks_cache", "_packed_cache", "_mixed_floors_cache",
        "_parts_floors",
        "_sibling_floors", "_parts_cores", "_suffix_caps", "_shape_caps", "_hap_cores", "_hap_roots",
        "_time_floors_cache",
        "_modes_cache", "_parts_cache", "_steps_cache", "_send_cache", "_alike_cache", "_alike_by_costs",
        "_fill_floors",
    })

    def __deepcopy__(self, memo: dict) -> PlanSearch:
        """A copy for the progress probes: the inputs, the key-only caches and the engine's ranking
        (read, never written, by a probe) are shared; what a search writes (the shapes' best times,
        the dominance memo) is copied. A full copy of the caches cost 5 s of a 13.6 s megatron-1t run."""
        clone = copy.copy(self)
        for name, value in vars(self).items():
            if name not in self.SHARED:
                setattr(clone, name, copy.deepcopy(value, memo))
        return clone

    @property
    def top(self) -> int:
        """How many plans the search keeps (``--top``): the top-K kind's ``k``."""
        return self.k

    def __init__(
        self, model: Model, cluster: Cluster, train: Training, memo: bool = True, rank: bool = True,
        top: int = 1, shapes: list[Shape] | None = None,
    ) -> None:
        self.given = cluster  # as the user gave it; ``cluster`` adds the paired groups of --mixed-tp
        self.covers: dict = {}  # a paired group's index -> its two real groups (--mixed-tp)
        self.rests: dict = {}  # a paired group's index -> the group of the nodes it leaves over
        if train.mixed_tp and train.sequence_parallel:   # the share rule counts on SP (cost.share_bytes)
            cluster, self.covers, self.rests = mixed_tp_cluster(cluster, train)
        self.model, self.cluster, self.train = model, cluster, train
        self.k = max(1, top)
        self.found: dict = {}  # shape -> the best time this worker has seen
        self.seeded: dict = {}  # shape -> the time of a leaf the seed met in it (a limit, not a record)
        self.seed_bar = math.inf  # the seed's top-th best shape time: the bar before the search
        self.seed_plans: dict = {}  # shape -> the leaf behind ``seeded[shape]`` (``best_known``)
        self.n = len(model.blocks)
        self.memo_on = memo
        self.memo: dict = {}
        self.tables: dict = {}
        self._any_d_tables: dict = {}  # (group, t, b, ep, c, slices) -> the tables at some d (_table)
        self.costs: dict = {}
        self.opts: dict = {}
        self._slots_cache: dict = {}
        self._slot_cache: dict = {}
        self._least_cache: dict = {}  # (shape, part or stage counts) -> least block times (_least_blocks)
        self._consts: dict = {}
        self._allowed_cache: dict = {}
        self._minmax_cache: dict = {}
        self._jensen_cache: dict = {}
        self._floors_cache: dict = {}
        # ``shapes``: another search's, on a cluster that differs only in its links' speeds (the
        # sensitivity sweep's), so they are not enumerated again
        self.shapes = self._shapes() if shapes is None else shapes
        self.stage_floors = [-math.inf] * len(self.shapes)  # per shape: bounds.stage_floor, once ranked
        self._wan_cache: dict = {}  # shape -> the least wide-area send (bounds._wan_floor)
        self._send_cache: dict = {}  # shape -> the least stage-to-stage send (bounds._least_send)
        self._leave_cache: dict = {}  # (shape, counts, last part) -> bounds._leaves_its_site
        # keyed by the parts' tables (table_key), so shapes that differ only in schedule share them:
        self._blocks_cache: dict = {}  # a table -> its block times (bounds._block_times)
        self._packed_cache: dict = {}  # (table, part 0's table, lo) -> a PackedPart (bounds._packing_floor)
        self._alike_cache: dict = {}  # a table -> the first table that costs the blocks alike (bounds._alike)
        self._alike_by_costs: dict = {}  # (rate, FLOPs, block times) -> that first table
        self._mixed_floors_cache: dict = {}  # (part 0's table, live tables and stages, lo) -> _mixed_floors
        self._fill_floors: dict = {}  # (that key, c1, div) -> its compiled FillFloor (bounds._time_floors)
        self._sites = len({g.site for g in cluster.groups})
        self._table_keys: dict = {}  # (shape, part) -> what its tables depend on (table_key)
        self._kind_cache: dict = {}  # (group, t) -> its GPU kind (bounds._gpu_kind)
        self._parts_cache: dict = {}  # shape -> its parts' table keys and kinds (bounds._part_keys)
        self._twins_cache: dict = {}  # shape -> its interchangeable parts (_twins)
        self._ratio_cache: dict = {}  # (table, part 0's table) -> the time ratios (bounds._time_ratios)
        self._stage_floor_cores: dict = {}  # shape -> its compiled StageFloor (bounds._suffix_floor)
        self._parts_floors: dict = {}  # shape -> its several-part stage floor, once reached (_parts_floor)
        # rank key -> (in-flight counts, shape) of its shapes whose floor is known (_sibling_parts_floor)
        self._sibling_floors: dict = {}
        self._parts_cores: dict = {}  # shape -> its compiled PartsFloor, for the stages a node has left
        # (shape, lo, stages left) -> [a value below the least cap, a cap that cuts, sends] (bounds._settle)
        self._suffix_caps: dict = {}
        self._shape_caps: dict = {}  # shape -> the same, bisected or not, for its whole floor (_settle_shape)
        self._time_floors_cache: dict = {}  # (shape, blocks used, stages left) -> bounds._pipe_time_floors
        self._modes_cache: dict = {}  # what they read -> a floor's modes, and packed (bounds._floor_modes)
        self._steps_cache: dict = {}  # id(table) -> (table, its per-layer recompute steps) (_recompute_steps)
        # (hap shape, class) -> its floor from the first block (bounds._hap_root); (shape, None) -> a
        # one-stage shape's least plan time (bounds._hap_one_stage)
        self._hap_roots: dict = {}
        self._hap_cores: dict = {}  # (hap shape, class) -> its compiled StageFloor (bounds._hap_suffix)
        self._model_params = (model.params, sum(blk.expert_params for blk in model.blocks))
        if not rank:  # only for replaying known plans (sensitivity sweeps)
            return
        # Shapes that differ only in what neither reads share their memory floor and root bound
        # (``rank_key``): three-kind Mixtral's 20,637 shapes have 7,487 of each.
        keys = [self.rank_key(i) for i in range(len(self.shapes))]
        floors: dict = {}
        for i, key in enumerate(keys):
            if key not in floors:
                floors[key] = self.memory_floor(i)
        self.floors = [floors[key] for key in keys]
        # The root bounds start without the compiled floors: a one-part shape's stage floor is added
        # for the shapes the seed ranks and then for those whose root bound the seed's bar does not
        # prune (``_stage_floored``); the several-part and hap floors when the search reaches a shape.
        self.stage_floors = [-math.inf if need <= usable else math.inf for need, usable in self.floors]
        self._staged = [False] * len(self.shapes)
        roots: dict = {}
        for i, key in enumerate(keys):
            if key not in roots and self.stage_floors[i] < math.inf:
                roots[key] = self._bound_state(i, 0, self.start_counts(i), *self.zero_state(i), reached=False)
        self.root_lb = [roots.get(key, math.inf) for key in keys]
        if self.pruning:
            self.seed_bar = self._seed()
        for i, bound in enumerate(self.root_lb):
            if bound * SAFETY <= self.seed_bar or not self.pruning:  # the others are pruned at the root
                self._stage_floored(i)
        forms: dict = {}
        for i, sh in enumerate(self.shapes):
            forms.setdefault(sh.form(), {}).setdefault(sh.d, []).append(i)
        self.forms = [
            (key, {d: sorted(ids, key=lambda i: (self.root_lb[i], i)) for d, ids in by_d.items()})
            for key, by_d in forms.items()
        ]
        self.form_lb = [min(self.root_lb[i] for ids in by_d.values() for i in ids) for _, by_d in self.forms]
        self.form_order = sorted(range(len(self.forms)), key=lambda f: (self.form_lb[f], f))

    # -- per-shape data ----------------------------------------------------------------------------

    def _classes(self, sid: int) -> list:
        """Pipe: one class (the replicas), groups per stage. Hap: one class per group: (g, replicas)."""
        sh = self.shapes[sid]
        if sh.mode == "pipe":
            return [(None, sh.d)]
        return list(sh.parts)

    def start_counts(self, sid: int) -> tuple:
        sh = self.shapes[sid]
        return tuple(part[1] for part in sh.parts) if sh.mode == "pipe" else (sh.p,)

    def zero_state(self, sid: int) -> tuple:
        c = len(self._classes(sid))
        return (0.0,) * c, (0.0,) * c, 0.0

    def start_node(self, sid: int) -> tuple:
        """Shape ``sid``'s first stage-level node: no blocks placed, every stage left."""
        return ("s", sid, 0, self.start_counts(sid), *self.zero_state(sid), (), ())

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

    def bound(self, node: tuple) -> float:
        """``time_bound``: the least time of any plan below ``node``."""
        return self.time_bound(node)

    def _promising(self, child: tuple, limit: float | None = None) -> bool:
        """Whether the child's bound reaches neither the top-K threshold nor its shape's best time
        (``limit``, when the caller has it)."""
        if limit is None:
            limit = self._limit(child[1]) if child[0] == "s" else self._bar()
        bound = self.time_bound(child, limit)
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
        """The engine's ranking, its bar already at the seed's top-th best time over SAFETY. The
        seed costs its plans with ``stage_cost`` (``replay``), the tree with ``stage_terms``'
        arithmetic, and the two can differ in the last bits: the bar keeps plans within the bounds'
        allowance (SAFETY) of the seed's time, or the seed's own plan, met in the tree a bit dearer,
        is lost."""
        ranking = super().ranking()
        if self.seed_bar < math.inf:
            ranking.adopt(ranking.inclusive(self.seed_bar / SAFETY))
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
                # pruned on its root bound before its start node is bounded (which would compute
                # the shape's several-part floor: bounds._parts_floor), then on its siblings' floor
                if self.pruning and (self.root_lb[sid] * SAFETY > self._limit(sid)
                                     or self._siblings_prune(sid)):
                    continue
                yield self.start_node(sid)
        else:
            yield from self._stage_children(node)

    def _siblings_prune(self, sid: int) -> bool:
        """Whether shape ``sid``'s start node is pruned on its siblings' several-part floor
        (``_sibling_parts_floor``) before its own is computed: on three-kind Mixtral, half of the
        1,424 shapes whose floor was computed were kFkB and GPipe shapes of a 1F1B one."""
        sh = self.shapes[sid]
        if sh.mode != "pipe" or len(sh.parts) < 2 or sid in self._parts_floors:
            return False
        several = self._sibling_parts_floor(sid)
        if several == -math.inf:
            return False
        bound = self._bound_state(sid, 0, self.start_counts(sid), *self.zero_state(sid), several=several)
        return bound * SAFETY > self._limit(sid)

    def _stage_children(self, node: tuple) -> Any:
        _, sid, lo, counts, S, X, E, stages, order = node
        sh = self.shapes[sid]
        if not any(counts):
            return
        pipe = sh.mode == "pipe"
        j = len(stages)
        prev = stages[-1][0] if pipe and stages else None
        combined, pruning, megatron = self.combined_pareto, self.pruning, self.train.megatron_stages
        galvatron = self.train.galvatron_stages
        div, c1 = sh.div, sh.c1
        # A child's part of ``order``: its (part, k) slot times the most options a stage can have,
        # plus its place among that slot's options, so it does not depend on what was pruned.
        stride = len(self._allowed(sid))
        # The limit changes only while a child is out (the search meets leaves below it): read it again
        # after each yield, not for each of the many slots that the floors prune.
        limit = self._limit(sid)
        S0, X0 = S[0], X[0]
        q = sum(counts)
        slots, sweep = self._slots(sid, lo, counts)
        least_cache = self._least_cache  # read inline: the slot tests ask it a million times on big searches
        dead = [False, False, False]  # per side of the share (see ``_sweep``): pruned from here on
        longer_dead: set = set()  # parts whose longer stages (side 1) the least-blocks test pruned
        for slot, (part, k, newcounts, side) in enumerate(slots):
            if side == 1 and part in longer_dead:
                continue
            if megatron and not self._megatron_stage(sh, lo, k, j, stages):
                continue
            if galvatron and self._layers(lo, lo + k) < 1:
                continue  # Galvatron's stages each hold a transformer layer
            if side and pruning and sweep is not None:
                if dead[side]:
                    continue
                total, pre, rest = sweep
                # Every child of this slot, and of every slot further out on its side, is at least
                # this: the sum of the blocks' least times, and the largest stage at least this
                # stage (more blocks: side 1) or the average of the stages after it (fewer: side 2).
                x = pre[lo + k] - pre[lo] if side == 1 else (pre[self.n] - pre[lo + k]) / rest
                if ((S0 + total) / div + c1 * (x if x > X0 else X0) + E) * SAFETY > limit:
                    dead[side] = True
                    continue
            if pipe and pruning:
                # Before its options: every child of the slot adds at least this stage's time
                # without recomputation, and the blocks after it cost at least their floors (which
                # no option changes); with several parts left (mixed groups, two widths), a cheaper
                # test first: each remaining block's least time on a part with stages left.
                here = least_cache.get((sid, part)) or self._least_blocks(sid, part)
                x = here[lo + k] - here[lo]
                xm = x if x > X0 else X0
                if sweep is None and q > 1:
                    rest = least_cache.get((sid, newcounts)) or self._least_blocks(sid, newcounts)
                    if ((S0 + x + rest[self.n] - rest[lo + k]) / div + c1 * xm + E) * SAFETY > limit:
                        if side == 1 and newcounts[part]:
                            # A block more on this part adds its time here and takes at most that
                            # from ``rest`` (this part still has stages, so rest is at most its
                            # time): the test only grows with k, and the longer slots are pruned too.
                            longer_dead.add(part)
                        continue
                # the floors without the several-part one first (cheaper): most slots end there
                cheap = self._floors_without_parts(sid, lo + k, newcounts)
                if pipe_bound(cheap, S0 + x, xm, E, div, c1) * SAFETY > limit:
                    continue
                if self._pipe_pruned(sid, lo + k, newcounts, S0 + x, xm, E, limit):
                    continue
            elif pruning and self._hap_slot_bound(sid, lo, k, newcounts, S, X, E) * SAFETY > limit:
                continue  # hap: even each class's time without recomputation is pruned
            ends = self._galvatron_ends(stages, lo + k) if galvatron else None
            got = self._slot_options(sid, part, lo, k, j, prev, ends)
            if got is None:
                continue
            opts, floor = got
            base = slot * stride
            if pipe:
                if pruning:  # the least each term could be: if even that is pruned, every option is
                    a, x, c = floor
                    x, c = (x if x > X0 else X0), (c if c > E else E)
                    if self._pipe_pruned(sid, lo + k, newcounts, S0 + a, x, c, limit):
                        continue
                kids = [(a, x if x > X0 else X0, c if c > E else E, rc, z) for a, x, c, rc, z in opts]
                if combined and len(kids) > 1:
                    kids = pareto_scalar(kids) if ends != EACH_END else per_end(kids, pareto_scalar)
                for i, (a, x, c, rc, z) in enumerate(kids):
                    child = ("s", sid, lo + k, newcounts, (S0 + a,), (x,), c, stages + ((part, k, rc, z),),
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
                    kids = pareto_vector(kids) if ends != EACH_END else per_end(kids, pareto_vector)
                for i, (s2, x2, c, rc, z) in enumerate(kids):
                    child = ("s", sid, lo + k, newcounts, s2, x2, c, stages + ((0, k, rc, z),),
                             order + (base + i,))
                    if pruning and not self._promising(child, limit):
                        continue
                    if self.memo_on and self._dominated(child):
                        continue
                    yield child
                    limit = self._limit(sid)

    def _hap_slot_bound(self, sid: int, lo: int, k: int, newcounts: tuple, S: tuple, X: tuple,
                        E: float) -> float:
        """The bound of every child of a hap slot (blocks [lo, lo + k) as the next stage) before its
        options are computed: each class's stage takes at least its time without recomputation
        (``_bound_state`` of that least child; the bound never decreases in S or X)."""
        hi = lo + k
        S2, X2 = [], []
        for c, (s, x) in enumerate(zip(S, X)):
            pre = self.part_table(sid, c).time["none"]
            here = pre[hi] - pre[lo]
            S2.append(s + here)
            X2.append(here if here > x else x)
        return self._bound_state(sid, hi, newcounts, tuple(S2), tuple(X2), E)

    def _slots(self, sid: int, lo: int, counts: tuple) -> tuple:
        """The next stage's (part, k blocks, counts after, side) from blocks ``lo`` with ``counts``
        stages left, in child order: fastest part first, k by discrepancy from the part's share of
        the rest (side 0: the share, 1: more blocks, 2: fewer); and the sweep data of the bound that
        cuts a side off (``_sweep``). Depends only on the arguments, so cached; a slot's options are
        computed only when it is reached (``_slot_options``)."""
        key = (sid, lo, counts)
        hit = self._slots_cache.get(key)
        if hit is not None:
            return hit
        sh = self.shapes[sid]
        q = sum(counts)
        R = self.n - lo
        if sh.mode == "pipe":
            rates = self._part_rates(sid)
            cap = sum(c * rate for rate, c in zip(rates, counts))
            twins = self._twins(sid) if self.pruning else {}
            untouched = {i for i, (part, c) in enumerate(zip(sh.parts, counts)) if c == part[1]}
            choices = [(i, max(1, round(R * rates[i] / cap)))
                       for i, c in enumerate(counts)
                       if c > 0 and not (i in untouched and twins.get(i) in untouched)]
            choices.sort(key=lambda o: -rates[o[0]])
        else:
            choices = [(None, max(1, round(R / q)))]
        hi_max = self.n - (q - 1) * sh.v
        slots = []
        for part, share in choices:
            if part is not None:
                newcounts = counts[:part] + (counts[part] - 1,) + counts[part + 1 :]
            else:
                newcounts = (counts[0] - 1,)
            if q == 1:
                slots.append((part, R, newcounts, 0))
                continue
            first = min(max(share, sh.v), hi_max - lo)
            for k in _discrepancy(share, sh.v, hi_max - lo):
                slots.append((part, k, newcounts, 0 if k == first else 1 if k > first else 2))
        hit = self._slots_cache[key] = (tuple(slots), self._sweep(sid, lo, counts))
        return hit

    def _part_rates(self, sid: int) -> list[float]:
        """Each part's speed on pipe shape ``sid``'s micro-batches: its replicas' rate times d. The
        tree's slots and the seed's cut take the faster parts first."""
        return [self.part_table(sid, i).rate * part[3] for i, part in enumerate(self.shapes[sid].parts)]

    def _twins(self, sid: int) -> dict:
        """Part index -> the previous part of its class in pipe shape ``sid``: parts any two of which
        swap in any plan at the same time (groups of one GPU kind, stage count, t and d, with the same
        links to every other group). The search starts a part only after that one (symmetry
        breaking: of the plans that differ by such swaps it keeps one order), so identical groups
        on identical sites are not ordered in every way. Cached; the exhaustive tree keeps all."""
        hit = self._twins_cache.get(sid)
        if hit is not None:
            return hit
        sh, groups = self.shapes[sid], self.cluster.groups
        hit = {}

        def relation(a: int, x: int) -> tuple | None:  # a's link to x, beyond what a's kind decides
            return None if groups[a].site == groups[x].site else self.cluster.wan(groups[a], groups[x])

        def swappable(i: int, e: int) -> bool:
            (g, stages, _, _), (h, other_stages, _, _) = sh.parts[i], sh.parts[e]
            return (g != h and stages == other_stages and self._gpu_kind(sid, i) == self._gpu_kind(sid, e)
                    and all(relation(g, x[0]) == relation(h, x[0]) for x in sh.parts if x[0] not in (g, h)))

        classes: list[list[int]] = []  # parts any two of which can swap: any order of a class is a symmetry
        for i in range(len(sh.parts)):
            for members in classes:
                if all(swappable(i, e) for e in members):
                    hit[i] = members[-1]  # started only after the class's previous part
                    members.append(i)
                    break
            else:
                classes.append([i])
        self._twins_cache[sid] = hit
        return hit

    def _sweep(self, sid: int, lo: int, counts: tuple) -> tuple | None:
        """For a pipe shape with one group left: the least time of blocks [lo, n), that group's
        prefix times without recomputation, and the stages after the next one. The bound they give a
        slot grows with the distance from the share on either side, so the first slot it prunes on a
        side prunes the rest of that side without computing their options. None otherwise."""
        sh = self.shapes[sid]
        if sh.mode != "pipe" or sum(counts) < 2:
            return None
        live = [i for i, c in enumerate(counts) if c > 0]
        if len(live) != 1:
            return None
        pre = self.part_table(sid, live[0]).time["none"]
        return pre[self.n] - pre[lo], pre, sum(counts) - 1

    def _least_blocks(self, sid: int, where: Any) -> list:
        """Prefix sums over the blocks of each block's least time without recomputation: on part
        ``where`` of pipe shape ``sid`` (an int), or on the parts that the stage counts ``where``
        (a tuple) leave stages on. Cached per (shape, where); the second per the parts with stages."""
        key = (sid, where)
        hit = self._least_cache.get(key)
        if hit is not None:
            return hit
        if isinstance(where, int):
            hit = self.part_table(sid, where).time["none"]
        else:
            live = tuple(i for i, c in enumerate(where) if c > 0)
            hit = self._least_cache.get((sid, "live", live))
            if hit is None:
                tables = [self.part_table(sid, i).time["none"] for i in live]
                hit = [0.0]
                for b in range(self.n):
                    hit.append(hit[-1] + min((pre[b + 1] - pre[b] for pre in tables), default=0.0))
                self._least_cache[sid, "live", live] = hit
        self._least_cache[key] = hit
        return hit

    def _slot_options(
        self, sid: int, part: int | None, lo: int, k: int, j: int, prev: int | None, ends: str | None = None,
    ) -> tuple | None:
        """A slot's options and, in pipe mode, the least of each option term; None when no option fits.
        Depends only on the arguments, so cached. ``ends``: Galvatron's rule on the ZeRO-3 of the first
        and last stages (``_galvatron_ends``)."""
        key = (sid, part, lo, k, j, prev, ends)
        hit = self._slot_cache.get(key, False)
        if hit is not False:
            return hit
        opts = self._stage_options(sid, part, lo, lo + k, j, prev, ends)
        hit = None
        if opts:
            pipe = self.shapes[sid].mode == "pipe"
            hit = (opts, tuple(min(o[t] for o in opts) for t in range(3)) if pipe else None)
        self._slot_cache[key] = hit
        return hit

    def _layers(self, lo: int, hi: int) -> int:
        """Transformer layers in blocks [lo, hi): the embedding (first block) and the head (last) are not."""
        return hi - lo - (lo == 0) - (hi == self.n)

    def _galvatron_ends(self, stages: tuple, hi: int) -> str | None:
        """Galvatron shards the embedding and the output layer together (one vocab_sdp), so the first
        and last stages are both under ZeRO-3 or neither: the last stage takes only its first stage's
        kind, and a first stage of several keeps the best options of each kind (``EACH_END``), since
        which one completes depends on what the last stage can hold."""
        if stages and hi == self.n:
            return end_kind(stages[0][3])
        if not stages and hi < self.n:
            return EACH_END
        return None

    def _megatron_stage(self, sh: Shape, lo: int, k: int, j: int, stages: tuple) -> bool:
        """Megatron-LM's stage rule for blocks [lo, lo + k) as stage ``j``: at least one transformer
        layer (the embedding and head blocks are not layers), a multiple of v layers, and the middle
        stages all equal (``--decoder-first/last-pipeline-num-layers`` set the ends)."""
        layers = self._layers(lo, lo + k)
        if layers < 1 or layers % sh.v:
            return False
        return not 2 <= j <= sh.p - 2 or k == stages[1][1]

    def make(self, sid: int, node: tuple, chosen: int | None, k: int, rc: str, z: int) -> tuple | None:
        """The child of stage node ``node`` that puts the next ``k`` blocks on part ``chosen`` (pipe
        mode; hap: every class, ``chosen`` None) with recomputation ``rc`` and ZeRO stage ``z``
        (None: it does not fit or cannot complete), costed by :func:`stage_cost` itself (the tree
        uses its arithmetic in bulk: ``stage_terms``)."""
        _, _, lo, counts, S, X, E, stages, order = node
        sh, tr = self.shapes[sid], self.train
        hi = lo + k
        j = len(stages)
        e = p2p_sends(sh.schedule, sh.v, sh.k)
        newS, newX, newE = list(S), list(X), E
        if sh.mode == "pipe":
            classes = [(chosen, sh.m)]
        else:
            classes = [(c, sh.p) for c in range(len(sh.parts))]  # in-flight never above p - j (1F1B/kFkB)
        prev = stages[-1][0] if stages else None
        for c, (part, m_mem) in enumerate(classes):
            before = prev if sh.mode == "pipe" else (part if stages else None)
            ckey = (sid, part, lo, hi, rc, z, j, before)
            cost = self.costs.get(ckey)
            if cost is None:  # a stage's cost depends only on the key: many nodes share it
                cost = self.costs[ckey] = stage_cost(
                    self.part_table(sid, part),
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
                    self.dp_link(sid, part),
                    self.sent_link(sid, before, part),
                    self.n - 1,
                    self.widened(sid, part) if per_layer_tp(z) else None,
                )
            if cost.memory > tr.usable(self.cluster.groups[sh.parts[part][0]]):
                return None
            newS[c] += cost.tau + 2 * cost.p2p
            newX[c] = max(newX[c], cost.steady(e))
            newE = max(newE, cost.exposed)
        newcounts = list(counts)
        newcounts[chosen if sh.mode == "pipe" else 0] -= 1
        rest = sum(newcounts)
        if rest == 0 and hi != self.n:
            return None
        if rest and self.n - hi < rest * sh.v:
            return None
        key = (chosen if sh.mode == "pipe" else 0, k, rc, z)
        return ("s", sid, hi, tuple(newcounts), tuple(newS), tuple(newX), newE, stages + (key,), order)

    def replay(self, leaf: tuple) -> float:
        """The time of a leaf's plan (found by another PlanSearch with the same shapes) on this cluster."""
        node = self.rebuild(leaf)
        return math.inf if node is None else self.leaf_time(node)[0]

    def rebuild(self, leaf: tuple) -> tuple | None:
        """A leaf's stages (``leaf[7]``, from this or another PlanSearch with the same shapes) made
        again on this cluster (``make``): the leaf with its sums and an empty ``order``, or None
        where a stage does not fit."""
        sid, stages = leaf[1], leaf[7]
        pipe = self.shapes[sid].mode == "pipe"
        node = self.start_node(sid)
        for part, k, rc, z in stages:
            node = self.make(sid, node, part if pipe else None, k, rc, z)
            if node is None:
                return None
        return node

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


def _discrepancy(share: int, low: int, high: int) -> list[int]:
    """low..high ordered by distance from ``share`` (share first, then +1, -1, +2, -2, ...)."""
    share = min(max(share, low), high)
    out = [share]
    for delta in range(1, high - low + 1):
        for k in (share + delta, share - delta):
            if low <= k <= high:
                out.append(k)
    return out


