"""The planner's lower bounds: memory floors and the least time of every completion of a state.

A mixin of :class:`~yewpy.apps.dnn.planner.search.PlanSearch` (it reads the search's shapes and
stage tables). Every bound is shrunk by ``SAFETY`` against rounding, so equal times are never cut.
"""

from __future__ import annotations

import math
from bisect import bisect_right
from dataclasses import replace
from typing import Callable

import numpy as np

from yewpy.apps.dnn.cost import (
    TP_LAYERS,
    ZERO3_OVERLAP,
    ZERO_LAYERS,
    StageTables,
    allreduce,
    flat_ring,
    hierarchical_allreduce,
    inflight,
    p2p_sends,
    per_layer_tp,
    per_layer_zero,
    state_bytes_per_param,
    zero3_collectives,
)
from yewpy.apps.dnn.planner._fill_floor import FillFloor
from yewpy.apps.dnn.planner._packing import PackedPart, packed_floor
from yewpy.apps.dnn.planner.shares import water_fill
from yewpy.apps.dnn.planner.stage_floor import PARTS_LIMIT, Mode, ModeSet, PartsFloor, StageFloor

SAFETY = 1.0 - 1e-9  # bounds are shrunk by this factor against rounding
FLOOR_STEPS = 10  # bisection steps of the stage floor: within 0.05% of its bracket's low end
PER_LAYER_BUCKETS = 4  # stage-floor modes per per-layer ZeRO option: sharded shares in quarters
RECOMPUTE_BUCKETS = 4  # stage-floor modes per per-layer recomputation option: recomputed shares in quarters
PARTS_SPLITS = 4096  # the most splits of its stages over its parts a shape's several-part floor tracks


class Bounds:
    """``memory_floor``, ``time_bound`` and the floors they are built from."""

    def memory_floor(self, sid: int) -> tuple[float, float]:
        """A lower bound on the model-state bytes (weights, gradients, optimizer state) on the fullest
        GPU of any plan of shape ``sid`` at its most sharded ZeRO stage, and the most usable memory
        its GPUs have: the shape is infeasible when the first is larger. Some stage j holds at least
        the parameters x t_j / sum(t) (the average), so a GPU holds parameters / sum(t); expert
        parameters are further split over ep ranks and their ZeRO state over d/ep replicas. Per-layer
        ZeRO counts as ZeRO-3; per-layer TP (dense models) as every parameter on twice the GPUs, its
        ZeRO state over half the replicas."""
        sh, tr = self.shapes[sid], self.train
        zeros = {3 if per_layer_zero(z) else z for _, z in self._allowed(sid)} or {0}
        params, experts = self._model_params

        def per_param(z: int, replicas: int) -> float:
            return state_bytes_per_param(z, replicas, tr.weight_bytes, tr.grad_bytes, tr.optimizer_bytes)

        state_bytes = min(params * per_param(z - TP_LAYERS, sh.replicas // 2) / 2 if per_layer_tp(z)
                          else (params - experts) * per_param(z, sh.replicas)
                          + experts * per_param(z, sh.d // sh.ep) / sh.ep for z in zeros)
        if sh.mode == "pipe":  # the largest d (DAPPLE: the widest stage's) shards the least state
            width = sum(stages * t for _, stages, t, _ in sh.parts)
            groups = [part[0] for part in sh.parts]
        else:
            width = sh.p * sh.t
            groups = [g for g, _ in sh.parts]
        usable = max(tr.usable(self.cluster.groups[g]) for g in groups)
        return state_bytes / width, usable

    def rank_key(self, sid: int) -> tuple:
        """What shape ``sid``'s memory floor and root bound (``_bound_state`` of its start node before
        it is reached) read: every field of the shape but its schedule, which they read only as
        Eq. 1's divisor and c1 (m and ``div``), and, across sites, as the sends it exposes on a
        wide-area link (``_with_crossings``). 1F1B, kFkB and GPipe shapes of one layout share it."""
        sh = self.shapes[sid]
        sends = (sh.schedule, sh.v, sh.k) if self._sites > 1 else None
        return sh.mode, sh.parts, sh.p, sh.d, sh.t, sh.b, sh.m, sh.div, sh.rc, sh.ep, sh.c, sh.n, sends

    # -- shapes ----------------------------------------------------------------------------------

    def time_bound(self, node: tuple, limit: float | None = None) -> float:
        """A lower bound on the time of every leaf below ``node`` (shrunk by SAFETY). With ``limit``,
        tight enough to tell whether it exceeds ``limit`` (``_settle``)."""
        tag = node[0]
        if tag == "root":
            return min(self.form_lb) * SAFETY if self.form_lb else math.inf
        if tag == "form":
            return self.form_lb[node[1]] * SAFETY
        if tag == "dp":
            return min(self.root_lb[i] for i in self.forms[node[1]][1][node[2]]) * SAFETY
        _, sid, lo, counts, S, X, E, stages = node[:8]
        last = stages[-1][0] if stages else None
        bound = self._bound_state(sid, lo, counts, S, X, E, last) * SAFETY
        if limit is not None and bound <= limit and self._settle(sid, lo, counts, S[0], limit):
            bound = self._bound_state(sid, lo, counts, S, X, E, last) * SAFETY
        if limit is not None and bound <= limit and self._settle_shape(sid, lo, counts, S[0], limit):
            bound = self._bound_state(sid, lo, counts, S, X, E, last) * SAFETY
        return bound

    def _bound_state(self, sid: int, lo: int, counts: tuple, S: tuple, X: tuple, E: float,
                     last: int | None = None, reached: bool = True, several: float | None = None) -> float:
        """A lower bound on the time of every completion of the state: the state's own sums and
        maxima joined with the remaining blocks' floors (``_floors``), and in pipe mode one more
        wide-area send where the last stage's part ``last`` is at a site no remaining part is at. It
        never decreases in S, X or E, so a state the bound prunes also prunes every state it
        dominates (the dominance memo compares states of one last part). ``reached``: with the
        several-part stage floor (``_parts_floor``, as far as it is known: ``time_bound`` with a
        limit settles it) and the hap floors, made for a shape the first time one of its states is
        bounded (the root bounds that order the shapes leave them out). ``several``: a value at most
        the several-part floor, used in its place (its siblings', ``_sibling_parts_floor``)."""
        sh = self.shapes[sid]
        floors = self._floors(sid, lo, counts)
        if sh.mode == "pipe":
            floor = self.stage_floors[sid]  # the stage floor bounds the Jensen term's quantity
            if reached and len(sh.parts) > 1:
                if several is None:
                    several = self._parts_floor(sid)
                floor = several if several > floor else floor
            if floor > floors[2]:
                floors = (floors[0], floors[1], floor, floors[3])
            if last is not None and self._sites > 1 and self._leaves_its_site(sid, counts, last):
                floors = self._with_crossings(sid, floors, 1)
            return pipe_bound(floors, S[0], X[0], E, sh.div, sh.c1)
        if reached and lo == 0 and sh.p == 1:
            return self._hap_one_stage(sid)  # the start node of a one-stage shape: its options are its plans
        A, Xs = [], []
        for c, (total, x_lb) in enumerate(floors):
            if reached and lo == 0 and sh.p > 1:  # the hap floor of the whole shape, when it is reached
                x_lb = self._hap_root(sid, c, x_lb)
            if x_lb == math.inf:
                return math.inf  # no cut of the blocks left fits this class's memory
            xc = X[c] if X[c] > x_lb else x_lb
            A.append(S[c] + total - xc)
            Xs.append(xc)
        return water_fill(A, Xs, [r for _, r in sh.parts], sh.m) + E

    def _floors(self, sid: int, lo: int, counts: tuple) -> tuple:
        """What the remaining blocks [lo, n) on ``counts`` stages add at least, whatever the state:
        pipe (sum of their times, largest stage, the Jensen floor of the slowest stage's steady and
        data-parallel time or -inf, and the fill floor of stages left on several GPU kinds or None:
        ``pipe_bound`` raises it by the state's own); hap (sum, largest stage) per class. Cached;
        ``_settle`` raises a cached several-part floor in place."""
        key = (sid, lo, counts)
        hit = self._floors_cache.get(key)
        if hit is None:
            hit = self._floors_cache[key] = self._remaining_floors(sid, lo, counts)
        return hit

    def _remaining_floors(self, sid: int, lo: int, counts: tuple) -> tuple:
        sh = self.shapes[sid]
        q = sum(counts)
        R = self.n - lo
        if sh.mode == "pipe":
            floors, largest = self._pipe_time_floors(sid, lo, counts)
            if q and 0 < lo and len(sh.parts) > 1 and sh.c1 >= 1:  # memory counted, as the whole shape's
                self._parts_floor(sid)  # makes the shape's compiled cut where it has one
                if sid in self._parts_cores:  # every plan's is at least c1 x the largest stage's floor,
                    # and the input sends of the stages left (``_with_sends``) come on top
                    sends = sh.c1 * self._exposed_sends(sid) if self._sites == 1 else 0.0
                    low = sh.c1 * largest
                    self._suffix_caps[(sid, lo, counts)] = [low, math.inf, sends]
                    if low + sends > floors[2]:
                        floors = (floors[0], floors[1], low + sends, floors[3])
            return floors
        out = []
        for i in range(len(sh.parts)):
            tab = self.part_table(sid, i)
            total = tab.time["none"][self.n] - tab.time["none"][lo] if q else 0.0
            x_lb = max(total / q, tab.sorted_time[-(-R // q)]) if q else 0.0
            if q and lo and sh.p > 1:  # at lo 0: _bound_state, once the shape is reached
                x_lb = self._hap_suffix(sid, i, lo, q, x_lb)
            out.append((total, x_lb))
        return tuple(out)

    def _floors_without_parts(self, sid: int, lo: int, counts: tuple) -> tuple:
        """``_floors`` of a pipe state without the several-part floor of the stages left: every term at
        most ``_floors``' (the several-part floor raises only the Jensen term), and cheaper, so a slot is
        tested against these first."""
        return self._pipe_time_floors(sid, lo, counts)[0]

    def _pipe_time_floors(self, sid: int, lo: int, counts: tuple) -> tuple:
        """A pipe state's time floors with its wide-area crossings, and their largest stage before
        the crossings (the several-part floor's start). Cached."""
        key = (sid, lo, counts)
        hit = self._time_floors_cache.get(key)
        if hit is not None:
            return hit
        sh = self.shapes[sid]
        q = sum(counts)
        live = [(i, c) for i, c in enumerate(counts) if c > 0]
        if q == 0:
            hit = (0.0, 0.0, -math.inf, None), 0.0
        else:
            floors = self._time_floors(sid, lo, q, live)
            largest = floors[1]
            crossings = len({self.cluster.groups[sh.parts[i][0]].site for i, _ in live}) - 1
            if crossings:  # they raise the sum and the largest stage, never the Jensen term
                floors = self._with_crossings(sid, floors, crossings)
            if lo and self._sites == 1:
                floors = self._with_sends(sid, floors, lo, q)
            hit = floors, largest
        self._time_floors_cache[key] = hit
        return hit

    def _hap_one_stage(self, sid: int) -> float:
        """The least time of one-stage hap shape ``sid``: over its stage's options (memory counted),
        the water-filled shares of each option's per-class times (the bound's relaxation of the
        integer shares a leaf takes). Cached; like ``_hap_root``, left out of the root bounds."""
        hit = self._hap_roots.get((sid, None))
        if hit is None:
            sh = self.shapes[sid]
            replicas = [r for _, r in sh.parts]
            hit = self._hap_roots[sid, None] = min(
                (water_fill([a - b for a, b in zip(av, bv)], list(bv), replicas, sh.m) + c
                 for av, bv, c, _, _ in self._stage_options(sid, None, 0, self.n, 0, None)), default=math.inf)
        return hit

    def _hap_root(self, sid: int, i: int, low: float) -> float:
        """``_hap_suffix`` of all of hap shape ``sid``'s stages on class ``i``, cached. Like the
        several-part floor, it is left out of the root bounds that order the shapes and computed when
        the search first bounds one of the shape's states: many hap shapes are pruned first."""
        hit = self._hap_roots.get((sid, i))
        if hit is None:
            hit = self._hap_roots[sid, i] = self._hap_suffix(sid, i, 0, self.shapes[sid].p, low)
        return hit

    def _hap_suffix(self, sid: int, i: int, lo: int, q: int, low: float) -> float:
        """A lower bound on class ``i``'s largest stage time (tau) over the last q stages of hap shape
        ``sid``, blocks [lo, n), memory counted: the stage floor's cut (``StageFloor``) with each
        option costed by its tau alone (``_hap_modes``), given ``low``, a value known to be at most
        it. Every class holds each stage at its own in-flight count, p - j, whatever its share of
        the micro-batches, so the cut of one class bounds that class's stages; the classes' common
        cut and common options are relaxed."""
        floor = self._hap_cores.get((sid, i))
        if floor is None:
            floor = self._hap_cores[sid, i] = self._part_floor(sid, i, self._hap_modes)
        return _least_cap(floor, low, lo, self.shapes[sid].p - q)

    def _hap_modes(self, sid: int, tab: StageTables, zc: dict, part: int) -> list[Mode]:
        """Hap shape ``sid``'s (recompute, ZeRO) options on class ``part`` as the stage floor sees
        them, costed by a stage's tau: its time, and under ZeRO-3 the collectives that
        ``ZERO3_OVERLAP`` of it does not hide. "block" as ``_block_variants`` gives it for pipe
        shapes: on layers that cost alike one mode per quarter of the recomputed share, otherwise
        its least time and activations at any count with one block's working set, and without
        recomputation where ("none", z) is not allowed; per-layer ZeRO (with "block" too: one
        mode, not split as the pipe floor's ``_per_layer_modes`` splits it) at ZeRO-3's state with
        no gather buffer and no collectives (below it at any count)."""
        arrays = tab.arrays()
        zero3 = None
        out = []
        for rc, z in self._allowed(sid):
            if per_layer_zero(z):
                variants: tuple = ((arrays["time_" + ("none" if rc == "block" else rc)],
                                    arrays["act_block" if rc == "block" else "act_" + rc],
                                    tab.working_set if rc == "full" else 0.0),)
                state, state_e, gbuf = zc[3][0], zc[3][4], 0.0
            else:
                if rc == "block":
                    variants = self._block_variants(sid, tab, z)
                else:
                    variants = ((arrays["time_" + rc], arrays["act_" + rc],
                                 tab.working_set if rc == "full" else 0.0),)
                state, state_e, gbuf = zc[z][0], zc[z][4], zc[z][1]
            for times, act, working_set in variants:
                terms: tuple = ((times, 0.0),)
                if z == 3 and tab.d > 1:
                    if zero3 is None:
                        zero3 = self._zero3_prefix(sid, tab, part)
                    terms += ((times * (1 - ZERO3_OVERLAP) + zero3, 0.0),)
                out.append(Mode(terms, act, working_set, state, state_e, gbuf))
        return out

    def _time_floors(self, sid: int, lo: int, q: int, live: list) -> tuple:
        """A pipe state's floors from the time of blocks [lo, n) on the q stages left on the ``live``
        (part, stages) parts. Groups of one kind of GPU at one t and d cost blocks alike, so several
        of them are bounded as one group of all their stages (identical groups on different sites,
        say); other mixes by FLOPs over the fastest and over all stages' rates, each part's FLOPs
        those of its own share of a micro-batch, and their fill floor (a ``FillFloor``, the
        fourth entry; None for one kind)."""
        sh, R = self.shapes[sid], self.n - lo
        _, kinds, alike = self._part_keys(sid)
        if len(live) > 1 and len({kinds[i] for i, _ in live}) > 1:
            # keyed by what the parts' tables cost, not the shape: shapes that differ only in
            # schedule share it, and so do DAPPLE's parts of one kind at different widths
            key = (alike[0], tuple((alike[i], c) for i, c in live), lo)
            hit = self._mixed_floors_cache.get(key)
            if hit is None:
                hit = self._mixed_floors_cache[key] = self._mixed_floors(sid, lo, live)
            total, largest, fill = hit
            if not fill:
                return total, largest, -math.inf, None
            floor = self._fill_floors.get((key, sh.c1, sh.div))
            if floor is None:
                floor = self._fill_floors[key, sh.c1, sh.div] = FillFloor(fill, total, largest, sh.c1, sh.div)
            return total, largest, floor.least, floor
        tab = self.part_table(sid, live[0][0])
        total = tab.time["none"][self.n] - tab.time["none"][lo]
        x_lb = max(total / q, tab.sorted_time[-(-R // q)] if R <= self.n else 0.0)
        if q > 1:
            x_lb = self._minmax(tab, lo, q, x_lb)
        c1 = sh.c1
        ev = -math.inf
        if tab.d > 1 and c1 >= 1:
            # Some remaining stage j has c1 tau_j + exposed_j >= f(average stage), f convex
            # (Jensen) and below every ZeRO stage's cost: c1 tau + max(0, DP - 2/3 tau) for
            # ZeRO 0-2, c1 (tau + max(0, C3 - o tau)) for ZeRO-3; with ZeRO-3 allowed f takes
            # the smaller slope of DP and c1 C3 in the parameters (no latency) and the larger of
            # 2/3 and c1 o in tau (docs/dnn.md). The state's E and X only raise the steady term.
            dense = (tab.dense[self.n] - tab.dense[lo]) / q / tab.t
            latency, per_byte, zero3 = self._jensen_terms(sid, live[0][0])
            if self._per_layer_tp(sid):
                latency, per_byte = self._widened_dp(sid, live[0][0])
            avg = total / q
            if zero3 is None:
                dp, hide = latency + per_byte * dense * self.train.grad_bytes, 2 / 3
            else:
                dp = min(per_byte * dense * self.train.grad_bytes, c1 * zero3 * dense)
                hide = max(2 / 3, c1 * ZERO3_OVERLAP)
            if self._per_layer_zero(sid):
                slope, hide = self._per_layer_line(c1, per_byte, zero3)
                dp = slope * dense
            ev = c1 * avg + max(0.0, dp - avg * hide)
        if 0 < lo and len(sh.parts) == 1 and c1 >= 1 and self.stage_floors[sid] > -math.inf:
            ev = max(ev, self._suffix_floor(sid, lo, q, c1 * x_lb))  # the whole shape's: _bound_state
        return total, x_lb, ev, None

    def _mixed_floors(self, sid: int, lo: int, live: list) -> tuple:
        """``_time_floors`` where the ``live`` (part, stages) parts are of different kinds: by FLOPs
        over the fastest and over all stages' rates, each part's FLOPs those of its own share of a
        micro-batch, then by time ratios, by whole blocks per stage (each of a part's c stages holds
        a block of its own: the largest takes at least the part's c-th least block time) and by
        packing."""
        keys = self._part_keys(sid)[2]  # read once: the root bounds ask this of every shape
        tabs = [(self._table(*keys[i]), c) for i, c in live]
        speeds = [(tab.rate / (tab.work[self.n] - tab.work[lo]), c) for tab, c in tabs]  # [lo, n) per s
        fastest, together = max(u for u, _ in speeds), sum(u * c for u, c in speeds)
        total, largest = 1 / fastest, 1 / together
        # The same by time: part i takes at least ratio_i times part 0's time for any blocks
        # from lo on (``_time_ratios``), which counts what FLOPs at peak leave out (efficiency,
        # pass overheads, TP communication); the larger of the two floors holds.
        ref = self._table(*keys[0]).time["none"]
        work = ref[self.n] - ref[lo]
        ratios = [(self._time_ratios(keys[i], keys[0])[lo], c) for i, c in live]
        fill: tuple = ()
        if work > 0 and all(0 < r < math.inf for r, _ in ratios):
            total = max(total, work * min(r for r, _ in ratios))
            largest = max(largest, work / sum(c / r for r, c in ratios))
            fill = _fill_curve(work, ratios)
        # Every stage holds a block or more, each its own: a part's c stages hold c blocks, so the
        # largest of them takes at least the c-th least block time on that part (sixteen stages on
        # single V100s hold a GPT-3 layer each, where the floors above let them hold none).
        for tab, c in tabs:
            nth = self._nth_least_block(tab, c)
            if nth > largest:
                largest = nth
        return total, self._packing_floor(sid, lo, live, largest), fill

    @staticmethod
    def _nth_least_block(tab: StageTables, c: int) -> float:
        """The c-th least block time without recomputation on ``tab`` (from its sorted running sums)."""
        return tab.sorted_time[c] - tab.sorted_time[c - 1]

    def _packing_floor(self, sid: int, lo: int, live: list, start: float) -> float:
        """``start``, a floor on the largest steady term of the stages left on the ``live`` (part,
        stages) parts, raised where blocks are whole (a slow GPU's stage holds one block or more,
        not a fraction): to the least T at which those stages could hold blocks [lo, n) if each
        held the most blocks it can within T, its cheapest ones on its own part (``packed_floor``,
        compiled). Taken with every block, and without those under half the median time on part 0
        (an embedding would let every stage hold one more block): fewer blocks never need a larger T.
        A part's running sums depend only on its table, part 0's and lo: packed once per those."""
        keys = self._part_keys(sid)[2]
        ref, cache = keys[0], self._packed_cache
        parts = []
        for i, _ in live:
            packed = cache.get((keys[i], ref, lo))
            if packed is None:
                packed = PackedPart(self._block_times(keys[i]), self._block_times(ref), lo)
                cache[keys[i], ref, lo] = packed
            parts.append(packed)
        return packed_floor(parts, [c for _, c in live], start)

    def _block_times(self, key: tuple) -> np.ndarray:
        """Each block's time without recomputation on the tables of ``key`` (a ``table_key``); cached."""
        hit = self._blocks_cache.get(key)
        if hit is None:
            hit = self._blocks_cache[key] = np.diff(self._table(*key).arrays()["time_none"])
        return hit

    def _time_ratios(self, key: tuple, ref_key: tuple) -> list[float]:
        """For each lo: the least ratio, over blocks from lo on, of a block's time on the tables of
        ``key`` to its time on those of ``ref_key`` (``table_key``s: a part's and part 0's; no
        recomputation: every option takes at least that), inf past the last block; so the part's
        time of any blocks from lo on is at least that ratio times part 0's. Cached."""
        hit = self._ratio_cache.get((key, ref_key))
        if hit is None:
            mine, ref = self._block_times(key), self._block_times(ref_key)
            ratio = np.full(self.n, np.inf)
            np.divide(mine, ref, out=ratio, where=ref > 0)
            least = np.minimum.accumulate(ratio[::-1])[::-1]
            hit = self._ratio_cache[key, ref_key] = [*least.tolist(), math.inf]
        return hit

    def _part_keys(self, sid: int) -> tuple:
        """Each part's ``table_key``, ``_gpu_kind`` and ``_alike`` key in shape ``sid``, as three
        tuples; cached (the mixed floors ask for them on every state)."""
        hit = self._parts_cache.get(sid)
        if hit is None:
            keys = tuple(self.table_key(sid, i) for i in range(len(self.shapes[sid].parts)))
            hit = self._parts_cache[sid] = (keys, tuple(self._gpu_kind(sid, i) for i in range(len(keys))),
                                            tuple(self._alike(key) for key in keys))
        return hit

    def _alike(self, key: tuple) -> tuple:
        """The first table key seen whose tables cost the blocks as ``key``'s do: the same time of
        each block without recomputation, the same FLOPs and the same rate, all that the mixed
        floors read of a part. DAPPLE's parts of one GPU kind at different widths are the common
        case (Llama-3.1-70B on three kinds: 931 tables, 119 such classes). Cached."""
        hit = self._alike_cache.get(key)
        if hit is None:
            tab = self._table(*key)
            costs = (tab.rate, tuple(tab.work), tuple(tab.time["none"]))
            hit = self._alike_cache[key] = self._alike_by_costs.setdefault(costs, key)
        return hit

    def _gpu_kind(self, sid: int, i: int) -> tuple:
        """Part ``i`` of shape ``sid`` as a kind: parts whose groups differ only in name, site and
        node count, at one t, d and micro-batch, cost every block alike. Cached per those."""
        key = self.table_key(sid, i)[:4]
        hit = self._kind_cache.get(key)
        if hit is None:
            hit = self._kind_cache[key] = (replace(self.cluster.groups[key[0]], name="", site="", nodes=0),
                                           *key[1:])
        return hit

    def _leaves_its_site(self, sid: int, counts: tuple, last: int) -> bool:
        """True when stages remain and none of them can be at the site of part ``last``: the
        pipeline crosses a wide-area link once more than the remaining parts' sites need; cached."""
        key = (sid, counts, last)
        hit = self._leave_cache.get(key)
        if hit is None:
            groups, parts = self.cluster.groups, self.shapes[sid].parts
            live = {groups[parts[i][0]].site for i, c in enumerate(counts) if c > 0}
            hit = self._leave_cache[key] = bool(live) and groups[parts[last][0]].site not in live
        return hit

    def _with_crossings(self, sid: int, floors: tuple, crossings: int) -> tuple:
        """Pipe ``floors`` with ``crossings`` more site boundaries: each puts a stage's input on a
        wide-area link, two of the least sends in the sum, and in that stage's steady term e of them
        or the link's busy time for two, whichever is more (``cost.steady_seconds``)."""
        sh, (send, busy) = self.shapes[sid], self._wan_floor(sid)
        exposed = p2p_sends(sh.schedule, sh.v, sh.k) * send
        largest = max(floors[1], exposed, 2 * busy)
        return floors[0] + 2 * crossings * send, largest, floors[2], floors[3]

    def _with_sends(self, sid: int, floors: tuple, lo: int, q: int) -> tuple:
        """Pipe ``floors`` of the q stages left from block ``lo`` > 0 with their input sends, on one
        site: each stage left receives its input, two sends in the sum (the fill term) and e in its
        steady term (``steady_seconds``), so in the largest stage too, and c1 e in the Jensen term.
        At the least send of the shape. (At lo = 0 the first stage receives none; left out there,
        as the root bounds of shapes never reached would pay for the sends' links.)"""
        send, exposed = self._least_send(sid), self._exposed_sends(sid)
        fill = None if floors[3] is None else floors[3].with_sends(exposed)
        return floors[0] + 2 * q * send, floors[1] + exposed, floors[2] + self.shapes[sid].c1 * exposed, fill

    def _exposed_sends(self, sid: int) -> float:
        """The least input sends a stage of shape ``sid`` after its first exposes in its steady term."""
        sh = self.shapes[sid]
        return p2p_sends(sh.schedule, sh.v, sh.k) * self._least_send(sid)

    def _least_send(self, sid: int) -> float:
        """The least time of one stage-to-stage send of pipe shape ``sid`` (as ``_class_consts``
        costs it: any part after any, at the narrowest boundary a stage may start after); cached."""
        hit = self._send_cache.get(sid)
        if hit is None:
            parts = range(len(self.shapes[sid].parts))
            hit = math.inf
            for i in parts:
                narrowest = min(self.part_table(sid, i).boundaries[:-1], default=0.0)
                elements = self.send_bytes(sid, i) * narrowest
                for before in parts:
                    bw, lat = self.sent_link(sid, before, i)
                    hit = min(hit, lat + elements / bw)
            self._send_cache[sid] = hit
        return hit

    def _wan_floor(self, sid: int) -> tuple[float, float]:
        """The least time one stage-to-stage send of shape ``sid`` takes over a wide-area link (the
        narrowest boundary, the best compression), and the least of it without its latency, for
        the bound; cached."""
        hit = self._wan_cache.get(sid)
        if hit is None:
            sh, groups = self.shapes[sid], self.cluster.groups
            narrowest = min(self.part_table(sid, 0).boundaries)
            send = busy = math.inf
            for a, part_a in enumerate(sh.parts):
                for b, part_b in enumerate(sh.parts):
                    if groups[part_a[0]].site != groups[part_b[0]].site:
                        lat, per_element = self._class_consts(sid, b, a)[7]
                        send = min(send, lat + per_element * narrowest)
                        busy = min(busy, per_element * narrowest)
            hit = self._wan_cache[sid] = (send, busy)
        return hit

    def _jensen_terms(self, sid: int, i: int) -> tuple:
        """The data-parallel all-reduce of part ``i`` of shape ``sid`` as latency + per-byte seconds,
        and ZeRO-3's collectives per parameter (None where no option shards with ZeRO-3), for the bound;
        cached."""
        hit = self._jensen_cache.get((sid, i))
        if hit is None:
            link = self.dp_link(sid, i)
            latency = hierarchical_allreduce(0.0, *link)
            per_byte = hierarchical_allreduce(1.0, *link) - latency
            zero3 = None
            if any(z == 3 for _, z in self._allowed(sid)) or self._per_layer_zero(sid):
                ring = flat_ring(link)
                zero3 = zero3_collectives(1.0, 0, self.part_table(sid, i).d, ring, self.train.weight_bytes)
            hit = self._jensen_cache[(sid, i)] = (latency, per_byte, zero3)
        return hit

    def _per_layer_line(self, c1: float, per_byte: float, per_param3: float) -> tuple[float, float]:
        """(a, b) with c1 tau + max(0, a P - b tau) at most the cost of a stage that shards any share
        of its P dense parameters with ZeRO-3 and all-reduces the rest (per-layer ZeRO), given the
        data-parallel all-reduce's seconds per byte and ZeRO-3's collectives per parameter, with
        c1 >= 1: a line below both cases, the rest's all-reduce exposed or hidden (docs/dnn.md)."""
        o = ZERO3_OVERLAP
        slope = min(0.6 * per_byte * self.train.grad_bytes, min(0.6 * c1, c1 - 2 / 3) * per_param3)
        return slope, max(0.6 * c1 * o + 0.4, (c1 - 2 / 3) * o + 2 / 3)

    def _least_layer(self, tab: StageTables) -> float:
        """The dense parameters per GPU of the smallest layer (``StageTables.layers``) in ``tab``: what
        a stage that shards any layer with per-layer ZeRO shards at least; 0 without layers. Cached
        per table (with ``_recompute_steps``' entry: both read only the table)."""
        key = ("least layer", id(tab))
        hit = self._steps_cache.get(key)
        if hit is None:
            first, end = tab.layers(0, self.n)
            dense = tab.dense
            least = min((dense[i + 1] - dense[i] for i in range(first, end)), default=0.0)
            hit = self._steps_cache[key] = (tab, least / tab.t)  # the table kept: its id stays its own
        return hit[1]

    def _per_layer_zero(self, sid: int) -> bool:
        """Whether a stage of shape ``sid`` may shard only some layers with ZeRO-3 (``ZERO_LAYERS``)."""
        return any(per_layer_zero(z) for _, z in self._allowed(sid))

    def _per_layer_tp(self, sid: int) -> bool:
        """Whether a stage of shape ``sid`` may run some layers at twice its TP degree (``TP_LAYERS``)."""
        return any(per_layer_tp(z) for _, z in self._allowed(sid))

    def _widened_dp(self, sid: int, i: int) -> tuple[float, float]:
        """The least latency and seconds per byte (of the narrow layout's gradients) of any stage's
        data-parallel all-reduce on part ``i`` under per-layer TP: a widened layer all-reduces half
        the bytes on its own ring (none where that ring is one rank)."""
        latency, per_byte, _ = self._jensen_terms(sid, i)
        wide, link = self.widened(sid, i)
        if wide.d == 1:
            return 0.0, 0.0
        wide_latency = hierarchical_allreduce(0.0, *link)
        wide_per_byte = hierarchical_allreduce(1.0, *link) - wide_latency
        return min(latency, wide_latency), min(per_byte, wide_per_byte / 2)

    def _minmax(self, tab: StageTables, lo: int, q: int, start: float) -> float:
        """A lower bound on the largest of q contiguous stages over blocks [lo, n) (times without
        recompute or p2p): the largest T, to 2^-14 of a block, at which greedy cutting into stages
        of at most T fails. Integral blocks make it exceed the average (``start``, itself a bound)."""
        key = (id(tab), lo, q)
        hit = self._minmax_cache.get(key)
        if hit is not None:
            return hit
        pre, n = tab.time["none"], self.n

        def fits(T: float) -> bool:
            pos = lo
            for _ in range(q):
                pos = bisect_right(pre, pre[pos] + T, pos, n + 1) - 1
                if pos >= n:
                    return True
            return False

        low, high = start, start + tab.max_block_time
        if not fits(low):
            for _ in range(14):
                mid = (low + high) / 2
                if fits(mid):
                    high = mid
                else:
                    low = mid
        self._minmax_cache[key] = low
        return low


    def stage_floor(self, sid: int) -> float:
        """A lower bound on max_j (c1 tau_j + exposed_j) over the stages of every plan of shape
        ``sid``, memory counted (``stage_floor.py``); -inf where it does not apply (several groups,
        hap, or c1 < 1, where c1 tau + exposed may fall as tau grows), inf where no plan fits.

        Where memory binds (large models on few GPUs) the early stages, which hold the most
        micro-batches, must recompute, shard their state with ZeRO (whose communication is then
        exposed) or take fewer blocks; the time-only floors miss all three and were about 20% low
        on the 1T model on 512 A100 (docs/dnn.md)."""
        sh = self.shapes[sid]
        if sh.mode != "pipe" or len(sh.parts) > 1 or sh.c1 < 1:
            return -math.inf
        p = sh.parts[0][1]
        if p == 1:  # one stage: its options are the plans
            options = self._stage_options(sid, 0, 0, self.n, 0, None)
            return min((sh.c1 * b + c for _, b, c, _, _ in options), default=math.inf)
        tab = self.part_table(sid, 0)
        return self._suffix_floor(sid, 0, p, sh.c1 * self._minmax(tab, 0, p, tab.time["none"][self.n] / p))

    def _stage_floored(self, sid: int) -> None:
        """Adds shape ``sid``'s stage floor (``stage_floor``) to its root bound, once: the search's
        constructor leaves it out of the root bounds until the seed's bar says which shapes can
        be reached (two-kind Mixtral: none of its 2,343 one-part shapes, whose floors took 0.3 s)."""
        if self._staged[sid] or self.stage_floors[sid] == math.inf:  # inf: no plan fits its memory
            return
        self._staged[sid] = True
        floor = self.stage_floor(sid)
        if floor > -math.inf:
            self.stage_floors[sid] = floor
            self.root_lb[sid] = self._bound_state(sid, 0, self.start_counts(sid), *self.zero_state(sid),
                                                  reached=False)

    def _parts_floor(self, sid: int) -> float:
        """``stage_floor`` of a pipe shape on several parts (GPU kinds, or a pair and a group): the
        same cut with each stage on any part, as many on each as the shape has (``PartsFloor``; for
        DAPPLE's two widths, each part's modes at its own share of a micro-batch and its own
        replicas); -inf where per-layer TP is searched, c1 < 1, or past ``PARTS_SPLITS``. Computed
        when the search first bounds one of the shape's states (many such shapes are pruned by
        their time-only root bounds first), then cached with its compiled cut (``_parts_cores``,
        for ``_settle``). Since stop 62 it starts at its known lower value and is raised only as far as
        a decision needs (``_settle_shape``), or bisected where the seed ranks the shape
        (``_bisect_parts_floor``): the value returned is what is known so far."""
        hit = self._parts_floors.get(sid)
        if hit is None:
            hit = self._parts_floors[sid] = self._new_parts_floor(sid)
            self._sibling_floors.setdefault(self.rank_key(sid), []).append((self._inflight(sid), sid))
        return hit

    def _bisect_parts_floor(self, sid: int) -> float:
        """``_parts_floor`` bisected to ``FLOOR_STEPS`` within what is known of it, once: the seed ranks
        shapes by their start bounds and orders a cut by the floor's (``_part_sequences``)."""
        floor = self._parts_floor(sid)
        caps = self._shape_caps.get(sid)
        if caps is None or caps[2]:
            return floor
        low, high = caps[0], caps[1]
        if high > low:
            low = low if self._parts_cores[sid].cuts(low) else \
                self._parts_cores[sid].least(low, high, FLOOR_STEPS)
        caps[0], caps[2] = low, True
        self._parts_floors[sid] = low
        return low

    def _settle_shape(self, sid: int, lo: int, counts: tuple, s: float, limit: float) -> bool:
        """``_settle`` for the whole shape's several-part floor (``_parts_floor``), which every state
        of the shape takes as its Jensen term's floor: one cut at the cap that would prune a state of
        sum ``s`` whose stages left are ``counts`` from block ``lo``, where what is known does not
        tell. True if the floor rose. Siblings (``_sibling_parts_floor``) read it as far as it is
        settled, so they prune fewer start nodes than the bisected floor let them. Bisecting it for
        each shape the search reached took 1.9 of GPT-3's 7.2 s on four kinds."""
        caps = self._shape_caps.get(sid)  # pipe shapes on several parts only
        if caps is None:
            return False
        cap = (limit / SAFETY - (s + self._floors(sid, lo, counts)[0]) / self.shapes[sid].div) * (1 + 1e-9)
        if not _cut_once(caps, cap, self._parts_cores[sid]):
            return False
        self._parts_floors[sid] = cap
        return True

    def _sibling_parts_floor(self, sid: int) -> float:
        """A value at most shape ``sid``'s several-part floor, from the shapes of its ``rank_key``
        whose floor is known (as far as each is settled): the largest of theirs whose every stage
        holds at most as many micro-batches as the same stage of ``sid`` (1F1B's for kFkB and GPipe).
        They cut the same tables with the same modes (``_floor_modes``), and more micro-batches only
        leave a stage fewer modes that fit; -inf where none is known."""
        mine = self._inflight(sid)
        known = self._sibling_floors.get(self.rank_key(sid), ())
        return max((self._parts_floors[other] for theirs, other in known
                    if all(a <= b for a, b in zip(theirs, mine))), default=-math.inf)

    def _inflight(self, sid: int) -> tuple:
        """The micro-batches each stage of pipe shape ``sid`` holds at its peak (``cost.inflight``)."""
        sh = self.shapes[sid]
        return tuple(inflight(sh.schedule, j, sh.p, sh.m, sh.v, sh.k) for j in range(sh.p))

    def _new_parts_floor(self, sid: int) -> float:
        """What ``_parts_floor`` caches: the floor's known lower value (c1 x the time floors' largest
        stage), its compiled cut kept in ``_parts_cores`` and what is known of it in ``_shape_caps``;
        -inf where the shape has no such floor."""
        sh = self.shapes[sid]
        if sh.c1 < 1 or self.widenable(sid) or len(sh.parts) > PARTS_LIMIT \
                or math.prod(stages + 1 for _, stages, _, _ in sh.parts) > PARTS_SPLITS:
            return -math.inf
        parts = range(len(sh.parts))
        floors = [self._part_floor(sid, part, self._packed_floor_modes) for part in parts]
        self._parts_cores[sid] = PartsFloor(floors, [sh.parts[i][1] for i in parts])
        low = sh.c1 * self._time_floors(sid, 0, sh.p, [(i, sh.parts[i][1]) for i in parts])[1]
        self._shape_caps[sid] = [low, math.inf, False]  # a cap below it, one at or above it, bisected
        return low

    def _settle(self, sid: int, lo: int, counts: tuple, s: float, limit: float) -> bool:
        """Raise the several-part floor of the stages a pipe node has left (``counts`` per part,
        blocks [lo, n)) far enough to tell whether it prunes a state of sum ``s`` at ``limit``: one
        cut (``PartsFloor.cuts``) at the cap that would prune, where what is known of the least cap
        (``_suffix_caps``: a value below it, a cap at or above it) does not tell. True if what is
        known rose (and with it the cached floors, unless their Jensen term was already higher).
        Across sites the cap leaves out the crossing ``_bound_state`` adds where the state's last
        stage leaves its site: it is then higher than it must be, and prunes no less than it may.
        Bisecting each such floor to 0.05% took ten or more cuts, half of GPT-3's time on four GPU
        kinds; most nodes need one answer at one limit."""
        key = (sid, lo, counts)
        caps = self._suffix_caps.get(key)
        if caps is None:
            return False
        floors = self._floors_cache[key]
        sh = self.shapes[sid]
        sends = caps[2]
        cap = (limit / SAFETY - (s + floors[0]) / sh.div - sends) * (1 + 1e-9)  # what would prune
        if not _cut_once(caps, cap, self._parts_cores[sid], lo, sh.p - sum(counts), counts):
            return False
        if cap + sends > floors[2]:
            self._floors_cache[key] = (floors[0], floors[1], cap + sends, floors[3])
        return True

    def _pipe_pruned(self, sid: int, lo: int, counts: tuple, s: float, x: float, e: float,
                     limit: float) -> bool:
        """Whether every completion of a pipe state of sum ``s``, largest stage ``x`` and exposed time
        ``e`` whose stages left are ``counts`` from block ``lo`` exceeds ``limit``, by ``_floors``
        raised as far as that needs (``_settle``)."""
        sh = self.shapes[sid]
        if pipe_bound(self._floors(sid, lo, counts), s, x, e, sh.div, sh.c1) * SAFETY > limit:
            return True
        return self._settle(sid, lo, counts, s, limit) and \
            pipe_bound(self._floors_cache[(sid, lo, counts)], s, x, e, sh.div, sh.c1) * SAFETY > limit

    def _suffix_floor(self, sid: int, lo: int, q: int, low: float) -> float:
        """``stage_floor`` for the last q stages over blocks [lo, n) (the stages a node has left),
        given ``low``, a value known to be at most it."""
        floor = self._stage_floor_cores.get(sid)
        if floor is None:
            floor = self._stage_floor_cores[sid] = self._part_floor(sid, 0, self._packed_floor_modes)
        return _least_cap(floor, low, lo, self.shapes[sid].p - q)

    def _part_floor(self, sid: int, part: int, modes_of: Callable) -> StageFloor:
        """The compiled cut of part ``part`` of shape ``sid`` over all the shape's p stages, each at its
        in-flight count, under the modes ``modes_of(sid, tables, ZeRO constants, part)`` gives."""
        tab, usable, zc, _, _, _, infl, _ = self._class_consts(sid, part, None)
        arrays = tab.arrays()
        return StageFloor(modes_of(sid, tab, zc, part), arrays["params"], arrays["expert"], tab.t, usable,
                          infl[:self.shapes[sid].p])

    def _floor_modes(self, sid: int, tab: StageTables, zc: dict, part: int = 0) -> list[Mode]:
        """``_new_floor_modes``, cached by what they read: shapes that differ only in a schedule of
        one block per stage (1F1B, kFkB, GPipe: one c1 = m) share them."""
        return self._modes_and_packed(sid, tab, zc, part)[0]

    def _packed_floor_modes(self, sid: int, tab: StageTables, zc: dict, part: int = 0) -> ModeSet:
        """``_floor_modes`` packed for the compiled floors, once per set of modes."""
        return self._modes_and_packed(sid, tab, zc, part)[1]

    def _modes_and_packed(self, sid: int, tab: StageTables, zc: dict, part: int) -> tuple:
        sh = self.shapes[sid]
        key = (self.table_key(sid, part), sh.mode, sh.c1, sh.m, sh.replicas, self._allowed(sid))
        hit = self._modes_cache.get(key)
        if hit is None:
            modes = self._new_floor_modes(sid, tab, zc, part)
            hit = self._modes_cache[key] = (modes, ModeSet(modes, self.n + 1))
        return hit

    def _new_floor_modes(self, sid: int, tab: StageTables, zc: dict, part: int = 0) -> list[Mode]:
        """Shape ``sid``'s (recompute, ZeRO) options as the stage floor sees them: a stage's
        c1 tau + exposed over [lo, hi) is the largest of prefix[hi] - prefix[lo] + offset over a
        mode's terms (``stage_terms``' arithmetic, regrouped: every part is linear in the blocks'
        prefix sums). Latencies of expert all-reduces are left out (a floor may be low). "block"
        is relaxed to the time of no recompute and the activations of recomputing every block
        where that stores less: its least time and memory at any count. ``part``: the shape's part
        whose tables ``tab`` are (a several-part shape's floor has modes per part)."""
        sh, tr, arrays = self.shapes[sid], self.train, tab.arrays()
        c1, t = sh.c1, tab.t
        params, expert, dense = arrays["params"], arrays["expert"], arrays["dense"]
        dp_byte = None  # the data-parallel all-reduce's seconds per gradient prefix entry, latency
        if tab.d > 1:  # the part's replicas (DAPPLE: a narrow part may have one), as ``stage_cost``'s
            latency, per_byte, _ = self._jensen_terms(sid, part)
            dp_byte = per_byte * tr.grad_bytes * dense / t
            if tab.expert_replicas > 1:
                ring = (tab.expert_replicas, *tab.expert_ring)
                dp_byte = dp_byte + (allreduce(tr.grad_bytes, *ring) - allreduce(0.0, *ring)) * expert / t
        zero3 = None
        out = []
        touched: dict = {}  # per ZeRO stage: the optimizer's touched bytes, prefix sums
        per_rc: dict = {}  # per recompute mode: the per-layer ZeRO modes' cost terms, per bucket
        for rc, z in self._allowed(sid):
            if per_layer_tp(z):
                out.append(self._widened_mode(sid, tab, zc, rc, z - TP_LAYERS))
                continue
            if per_layer_zero(z):
                out += self._per_layer_modes(sid, tab, zc, rc, z - ZERO_LAYERS, per_rc, part)
                continue
            state, gbuf, touched_f, m_dp, state_e, touched_e = zc[z]
            if z not in touched:
                touched[z] = ((params - expert) * touched_f + expert * touched_e) / t
            if rc == "block":
                variants = self._block_variants(sid, tab, z)
            else:
                working_set = tab.working_set if rc == "full" else 0.0
                variants = ((arrays["time_" + rc], arrays["act_" + rc], working_set),)
            for times, act, working_set in variants:
                steady = c1 * times + touched[z]
                terms: tuple = ((steady, 0.0),)
                if z == 3:
                    if zero3 is None:
                        zero3 = c1 * self._zero3_prefix(sid, tab, part)
                    terms += ((steady - ZERO3_OVERLAP * c1 * times + zero3, 0.0),)
                elif dp_byte is not None:
                    scale = (m_dp + 1) / 2 if z == 2 else 1.0
                    terms += ((steady - 2 / 3 * times + scale * dp_byte, scale * latency),)
                out.append(Mode(terms, act, working_set, state, state_e, gbuf))
        return out

    def _block_variants(self, sid: int, tab: StageTables, z: int) -> tuple:
        """Option ("block", ``z``) as (times, activations, working set) prefix arrays, one floor mode
        each, below every count of recomputed layers in cost and memory. Where the layers cost alike
        (``_recompute_steps``): RECOMPUTE_BUCKETS modes, bucket k for a stage recomputing a share of
        its L layers in [k/K, (k+1)/K]: no recomputation's time plus k/K L layers' extra time, its
        activations less (k+1)/K L layers' savings, and one block's working set for k > 0 (bucket 0
        holds the count 0, which has none). Otherwise one mode at the least time and activations of
        any count with the working set, and where ("none", ``z``) is not allowed a second without
        recomputation for a stage that recomputes no layer (``_block_unrecomputed``)."""
        arrays = tab.arrays()
        steps = self._recompute_steps(tab)
        none_t, none_a = arrays["time_none"], arrays["act_none"]
        if steps is not None:
            extra, saving = steps
            K, ws = RECOMPUTE_BUCKETS, tab.working_set
            return tuple((none_t + k / K * extra, none_a - (k + 1) / K * saving, ws if k else 0.0)
                         for k in range(K))
        out = ((none_t, arrays["act_block"], tab.working_set),)
        if self._block_unrecomputed(sid, z):
            out += ((none_t, none_a, 0.0),)
        return out

    def _recompute_steps(self, tab: StageTables) -> tuple | None:
        """Per-layer recomputation's extra time and activation savings as prefix arrays over the blocks
        (a layer's in each layer block, none elsewhere: ``StageTables.layers``), where every layer
        takes the same extra time and saves the same bytes, at most its activations (transformer
        layers); None otherwise. Cached per table."""
        key = id(tab)
        hit = self._steps_cache.get(key, False)
        if hit is not False:
            return hit[1]
        arrays, n = tab.arrays(), self.n
        layers = np.zeros(n)
        first, end = tab.layers(0, n)
        layers[first:end] = 1.0
        held = np.diff(arrays["act_none"])  # each block's activations without recomputation
        extra = np.diff(arrays["time_full"]) - np.diff(arrays["time_none"])
        saving = held - np.diff(arrays["act_full"])
        hit = None
        if end > first:
            e, a = extra[first:end], saving[first:end]
            step_t, step_a = float(e.min()), float(a.max())
            if (step_t >= 0 and step_a >= 0 and e.max() - step_t <= 1e-9 * e.max()
                    and step_a - a.min() <= 1e-9 * step_a and (held[first:end] >= step_a).all()):
                cnt = np.concatenate(([0.0], np.cumsum(layers)))
                hit = (step_t * cnt, step_a * cnt)
        self._steps_cache[key] = (tab, hit)  # the table kept alive, so its id is not reused
        return hit

    def _block_unrecomputed(self, sid: int, z: int) -> bool:
        """Whether option ("block", ``z``) needs a second floor mode for the stages where it
        recomputes no layer (a stage without layers, or one that fits without): they hold every
        activation and no working set, which the "block" mode's fewest activations plus one
        block's working set may exceed. Not where ("none", ``z``) is allowed: its mode is that one."""
        return ("none", z) not in self._allowed(sid)

    def _per_layer_modes(self, sid: int, tab: StageTables, zc: dict, rc: str, base: int, per_rc: dict,
                         part: int = 0) -> list[Mode]:
        """Option (``rc``, per-layer ZeRO-3 over ZeRO-``base``) as PER_LAYER_BUCKETS floor modes: the
        mode for a sharded share of the dense parameters in (k/K, (k+1)/K] holds the state of
        (k+1)/K sharded (and every expert parameter's ZeRO-3 state) and ZeRO-3's gather buffer (a
        stage that shards no layer is the option (``rc``, ``base``), always allowed beside it), and
        costs at least the steady term, the per-layer line (``_per_layer_line``), the ZeRO-3
        collectives of k/K of its parameters and of one layer beyond what ``ZERO3_OVERLAP`` of its
        compute hides (their latencies left out), and the all-reduce of the 1 - (k+1)/K it does not
        shard, latency included, beyond what 2/3 of its compute hides (docs/dnn.md); over ZeRO-2
        the line and that all-reduce take the rest's (m + 1) / 2 reduce-scatters. Every count's
        cost and memory lie above one mode's. "block" takes these for each of its recomputed shares
        (``_block_variants``), where its layers cost alike. The terms depend on ``rc``, that share
        and the base's all-reduce scale alone: cached in ``per_rc`` for the shape's other bases."""
        state3, gbuf3, touched_f, _, state3_e, touched_e = zc[3]  # the least touched bytes at any count
        arrays = tab.arrays()
        if rc != "block":
            working_set = tab.working_set if rc == "full" else 0.0
            variants: tuple = ((arrays["time_" + rc], arrays["act_" + rc], working_set),)
        elif self._recompute_steps(tab) is not None:
            variants = self._block_variants(sid, tab, base)  # its recomputed shares by quarters
        else:  # the least time and activations at any count; no working set (none where none is recomputed)
            variants = ((arrays["time_none"], arrays["act_block"], 0.0),)
        # ZeRO-2 reduce-scatters the rest's gradients at every micro-batch: (m + 1) / 2 all-reduces
        scale = (zc[base][3] + 1) / 2 if base == 2 else 1.0
        out = []
        for v, (times, act, working_set) in enumerate(variants):
            terms = per_rc.get((rc, v, scale))
            if terms is None:  # the terms of each bucket
                sh = self.shapes[sid]
                c1, t = sh.c1, tab.t
                params, expert, dense = arrays["params"], arrays["expert"], arrays["dense"]
                steady = c1 * times + ((params - expert) * touched_f + expert * touched_e) / t
                K = PER_LAYER_BUCKETS
                terms = [((steady, 0.0),)] * K
                if tab.d > 1 and c1 >= 1:
                    latency, per_byte, per_param3 = self._jensen_terms(sid, part)
                    slope, hide = self._per_layer_line(c1, scale * per_byte, per_param3)
                    line = (steady - hide * times + slope * dense / t, 0.0)
                    # Bucket k shards more than k/K of the parameters, and at least one layer: their
                    # ZeRO-3 collectives past what o tau hides; and all-reduces at least 1 - (k+1)/K
                    # of them, exposed past 2/3 tau (both least at tau' = tau, as c1 >= 2/3).
                    hidden = steady - c1 * ZERO3_OVERLAP * times
                    one = c1 * per_param3 * self._least_layer(tab)
                    quarter = c1 * per_param3 / K / t * dense  # ZeRO-3's collectives of 1/K of them
                    dp = scale * per_byte * self.train.grad_bytes / K / t * dense  # the all-reduce of 1/K
                    sharded, rest = hidden, steady - 2 / 3 * times + dp * (K - 1)
                    terms = []
                    for k in range(K):  # the arrays built once per bucket: these are many on MoE searches
                        terms.append(((steady, 0.0), line, (hidden, one)) + (((sharded, 0.0),) if k else ())
                                     + (((rest, scale * latency),) if k < K - 1 else ()))
                        sharded, rest = sharded + quarter, rest - dp
                per_rc[rc, v, scale] = terms
            for k, mode_terms in enumerate(terms):
                high = (k + 1) / PER_LAYER_BUCKETS
                state = zc[base][0] * (1 - high) + state3 * high
                out.append(Mode(mode_terms, act, working_set, state, state3_e, gbuf3))
        return out

    def _widened_mode(self, sid: int, tab: StageTables, zc: dict, rc: str, base: int) -> Mode:
        """Option (``rc``, per-layer TP over ZeRO-``base``) as one floor mode, below it at every count of
        widened layers: the narrow layout's time (a widened layer takes no less), each block's
        smaller activations of the two layouts, the widened layout's state per parameter (half the
        parameters per GPU), and the least data-parallel all-reduce (``_widened_dp``)."""
        sh, tr, arrays = self.shapes[sid], self.train, tab.arrays()
        wide, _ = self.widened(sid, 0)
        c1, t = sh.c1, tab.t
        state, _, touched_f, m_dp, state_e, _ = zc[base]
        wide_state = state_bytes_per_param(base, wide.d, tr.weight_bytes, tr.grad_bytes, tr.optimizer_bytes)
        wide_touched = 2 * tr.state_bytes / tab.group.hbm_bandwidth / (wide.d if base >= 1 else 1)
        times = arrays["time_" + rc]
        steady = c1 * times + arrays["params"] * min(touched_f, wide_touched / 2) / t
        terms: tuple = ((steady, 0.0),)
        if sh.replicas > 1:
            latency, per_byte = self._widened_dp(sid, 0)
            scale = (m_dp + 1) / 2 if base == 2 else 1.0
            terms += ((steady - 2 / 3 * times + scale * per_byte * tr.grad_bytes * arrays["dense"] / t,
                       scale * latency),)
        least = np.minimum(np.diff(arrays["act_" + rc]), np.diff(wide.arrays()["act_" + rc]))
        act = np.concatenate(([0.0], np.cumsum(least)))
        working_set = min(tab.working_set, wide.working_set) if rc == "full" else 0.0
        return Mode(terms, act, working_set, min(state, wide_state / 2), state_e, 0.0)

    def _zero3_prefix(self, sid: int, tab: StageTables, part: int = 0) -> np.ndarray:
        """Prefix sums of ZeRO-3's collectives per micro-batch on part ``part``: ``zero3_collectives``
        (dense and expert) over the prefix arrays, as it is linear in the blocks and their parameters.
        Over the part's own replicas, as ``stage_cost``'s (DAPPLE: not the widest part's)."""
        wb, arrays = self.train.weight_bytes, tab.arrays()
        ring = flat_ring(self.dp_link(sid, part))
        blocks = np.arange(self.n + 1, dtype=float)
        out = zero3_collectives(arrays["dense"] / tab.t, blocks, tab.d, ring, wb)
        if tab.expert_replicas > 1 and tab.expert[self.n] > 0:
            experts = arrays["expert"] / tab.t
            out = out + zero3_collectives(experts, blocks, tab.expert_replicas, tab.expert_ring, wb)
        return out


def _fill_curve(work: float, ratios: list) -> tuple:
    """The least summed time of the stages left as a function of their largest time X, as its
    breakpoints ((X_k, sum at X_k), X falling): ``work`` (part 0's time of the blocks left) spread
    over parts of time ratio r with c stages each, a part holding at most c X / r of it, the
    cheapest ratios filled first. At X_k the k cheapest parts just hold it all, each full, so the
    sum is X_k times their stages; it is linear between breakpoints, and constant above the first."""
    points = []
    held = stages = 0.0  # c / r and c of the cheapest parts so far
    for r, c in sorted(ratios):
        held += c / r
        stages += c
        x = work / held
        points.append((x, x * stages))
    return tuple(points)


def _cut_once(caps: list, cap: float, core: PartsFloor, *start: object) -> bool:
    """One cut of ``core`` at ``cap`` (from ``start``: lo, first stage, stages left), where what is
    known of its least cap (``caps``: a value below it, a cap that cuts) does not tell whether it
    is above ``cap``; True, and ``caps[0]`` raised to ``cap``, if it is."""
    if cap <= caps[0] or cap >= caps[1]:
        return False
    if core.cuts(cap, *start):
        caps[1] = cap
        return False
    caps[0] = cap
    return True


def _least_cap(floor: StageFloor, low: float, lo: int, first: int) -> float:
    """The least cap at which ``floor`` cuts blocks [lo, n) into stages first .. p - 1, given ``low``,
    a value known to be at most it (to ``FLOOR_STEPS`` bisections)."""
    return low if floor.cuts(low, lo, first) else floor.least(low, math.inf, FLOOR_STEPS, lo, first)


def pipe_bound(floors: tuple, s: float, x: float, e: float, div: int, c1: float) -> float:
    """A pipe-mode state's bound: its sum ``s``, maximum ``x`` and exposed time ``e`` joined with the
    remaining blocks' floors (sum, largest stage, Jensen term, and the fill floor of stages left on
    several GPU kinds or None), Megatron's Eq. 1 with c1 = m - 1/v. The fill floor leaves the exposed
    time out, so the state's ``e`` adds to it, and it rises with ``x`` (``FillFloor.at``)."""
    s_lb, x_lb, ev, fill = floors
    steady = c1 * (x if x > x_lb else x_lb) + e
    if fill is not None:
        filled = fill.at(x) + e
        if filled > ev:
            ev = filled
    return (s + s_lb) / div + (ev if ev > steady else steady)
