"""What one pipeline stage costs: the per-(shape, group) constants, the links it talks over, and
its time, exposed data-parallel time and memory under every (recomputation, ZeRO) option.

A mixin of :class:`~yewpy.apps.dnn.planner.search.PlanSearch`; it evaluates the arithmetic of
:func:`~yewpy.apps.dnn.cost.stage_cost` for all options at once, and caches by what each result
depends on, not by path, so the many stage nodes that share a key share the work.
"""

from __future__ import annotations

from collections.abc import Callable

from yewpy.apps.dnn.cluster import Cluster, DeviceGroup
from yewpy.apps.dnn.cost import (
    TP_LAYERS,
    ZERO3_OVERLAP,
    ZERO_LAYERS,
    StageTables,
    Training,
    allreduce,
    flat_ring,
    hierarchical_allreduce,
    inflight,
    p2p_sends,
    per_layer_tp,
    per_layer_zero,
    state_bytes_per_param,
    steady_seconds,
    wan_seconds_per_byte,
    widened_stage,
    zero3_collectives,
    zero_base,
)
from yewpy.apps.dnn.models import Model
from yewpy.apps.dnn.planner.pareto import pareto_options
from yewpy.apps.dnn.planner.shapes import Shape


class StageCosts:
    """The stage cost tables and options (``stage_terms``, ``_stage_options``) and the links."""

    model: Model
    cluster: Cluster
    train: Training
    n: int
    shapes: list[Shape]
    tables: dict
    _any_d_tables: dict
    opts: dict
    _consts: dict
    _allowed_cache: dict
    _table_keys: dict

    _recompute_modes: Callable[[], list[str]]  # from Shapes
    tp_fits: Callable[[int], bool]  # from Shapes

    def part_table(self, sid: int, i: int) -> StageTables:
        """The per-block prefix tables of part ``i`` of shape ``sid`` (pipe: a group's stages of one
        width; hap: a group's replicas): its group at its t, d and micro-batch, and the shape's ep,
        c and token slices; cached by those, so shapes share them."""
        return self._table(*self.table_key(sid, i))

    def table_key(self, sid: int, i: int) -> tuple:
        """What part ``i`` of shape ``sid``'s tables depend on: (group, t, d, b, ep, c, token slices).
        Shapes that differ only in schedule share it, and so do the bounds read from those tables.
        Cached: the bounds ask for it on every state."""
        hit = self._table_keys.get((sid, i))
        if hit is None:
            sh = self.shapes[sid]
            hit = self._table_keys[sid, i] = (sh.parts[i][0], self._tp(sid, i), sh.part_d(i), sh.part_b(i),
                                              sh.ep, sh.c, sh.n)
        return hit

    def _table(self, g: int, t: int, d: int, b: int, ep: int, c: int, n: int) -> StageTables:
        """The prefix tables of group ``g`` at (t, d, b) with ep, c and n token slices; cached. With
        the expert-parallel degree given (every shape gives it), the blocks cost alike at every d, so
        the tables at another d are copied, not rebuilt (three-kind Mixtral: 225 builds for 1,727)."""
        key = (g, t, d, b, ep, c, n)
        tab = self.tables.get(key)
        if tab is None:
            gr = self.cluster.groups[g]
            inter = d * t > gr.gpus_per_node
            like = self._any_d_tables.get((g, t, b, ep, c, n)) if ep else None
            if like is not None:
                tab = like.with_replicas(d, inter)
            else:
                tab = StageTables(self.model, gr, t, d, b, self.train, ep_group_inter=inter, ep=ep, c=c,
                                  slices=n)
                if ep:
                    self._any_d_tables[g, t, b, ep, c, n] = tab
            self.tables[key] = tab
        return tab

    def part_group(self, sid: int, i: int) -> int:
        """The device group (an index into the cluster's groups) of part ``i`` of shape ``sid``."""
        return self.shapes[sid].parts[i][0]

    def dp_link(self, sid: int, i: int) -> tuple:
        """The data-parallel ring of part ``i``: ranks per node, nodes, and their links."""
        sh, eff = self.shapes[sid], self.train.link_efficiency
        gr, t = self.cluster.groups[self.part_group(sid, i)], self._tp(sid, i)
        if sh.mode == "pipe":  # the data x context group, its ranks t apart (TP innermost)
            return self._pipe_ring(gr, t, sh.part_d(i) * sh.c)
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

    def _pipe_ring(self, gr: DeviceGroup, t: int, d: int) -> tuple:
        """The data-parallel ring of d ranks t apart on group ``gr`` (``dp_link``'s form)."""
        k1 = d if d * t <= gr.gpus_per_node else max(1, gr.gpus_per_node // t)
        eff = self.train.link_efficiency / gr.busier_share  # a paired group: its busier half's bytes
        return (
            k1,
            -(-d // k1),  # a DAPPLE stage may fill its last node in part
            gr.intra_bandwidth * eff,
            gr.inter_bandwidth * eff,
            gr.intra_latency,
            gr.inter_latency,
        )

    def widenable(self, sid: int) -> bool:
        """Whether a stage of shape ``sid`` may run some layers at twice its TP degree (per-layer TP,
        ``TP_LAYERS``): asked for, a pipe shape of a dense model without context parallelism or token
        slices, one data-parallel degree for every stage, and on every part an even one, with twice
        the TP degree allowed, dividing the heads and within a node, on real nodes (not paired ones)."""
        sh, tr = self.shapes[sid], self.train
        if not tr.tp_layers or sh.mode != "pipe" or self.model.moe or sh.c > 1 or sh.n > 1 or sh.uneven:
            return False
        for g, _, t, d in sh.parts:
            gr = self.cluster.groups[g]
            if d % 2 or 2 * t > gr.gpus_per_node or not self.tp_fits(2 * t) or gr.tp_shares:
                return False
        return True

    def widened(self, sid: int, i: int) -> tuple:
        """Per-layer TP's second layout on part ``i`` of shape ``sid``: the tables of its group at twice
        the TP degree, half the data-parallel degree and twice the micro-batch per TP group, and the
        data-parallel ring of that layout; cached with the other tables."""
        sh = self.shapes[sid]
        g, t, d, b = sh.parts[i][0], self._tp(sid, i), sh.part_d(i), sh.part_b(i)
        tab = self._table(g, 2 * t, d // 2, 2 * b, sh.ep, sh.c, sh.n)
        return tab, self._pipe_ring(self.cluster.groups[g], 2 * t, d // 2)

    def _p2p_link(self, sid: int, prev: int | None, i: int) -> tuple | None:
        """The link a stage on part ``i`` receives its input over from one on part ``prev`` (None for
        the first stage), as (bandwidth, latency) for the receiving GPU's own share (``tab.b``). Where
        the sending stage has fewer replicas (DAPPLE), each sender's larger share sets the time: the
        bandwidth is scaled down by the ratio of the shares. Between a stage narrower than a node
        and a wider one, the narrow side's traffic is split between NVLink and the node's NIC."""
        if prev is None:
            return None
        sh, eff = self.shapes[sid], self.train.link_efficiency
        g, before, t = self.part_group(sid, i), self.part_group(sid, prev), self._tp(sid, i)
        gr, replicas = self.cluster.groups[g], sh.part_d(i) * sh.c
        slower = sh.part_b(i) / max(sh.part_b(i), sh.part_b(prev))  # 1 unless the senders carry more
        if before != g:
            wan = self.cluster.wan(self.cluster.groups[before], gr)
            if wan is not None:  # the stage's t x replicas GPUs send at once over one wide-area link
                return wan[0] / (t * replicas) * slower, wan[1]
            bw, lat = self.cluster.link(self.cluster.groups[before], gr)
            return bw * eff * slower, lat
        n, mine, theirs = gr.gpus_per_node, replicas * t, sh.part_d(prev) * sh.c * self._tp(sid, prev)
        narrow, wide = min(mine, theirs), max(mine, theirs)
        if wide < n:
            return gr.intra_bandwidth * eff * slower, gr.intra_latency
        if narrow >= n or narrow == wide:
            return gr.inter_bandwidth * eff * slower, gr.inter_latency
        # DAPPLE's split and concatenation: the wide stage's GPUs on the narrow stage's node (it
        # fills the rest of that node) send over NVLink, the others over the whole node's NIC,
        # which the narrow stage's GPUs share; the slower of the two sets the time
        near = min(wide, n - narrow)
        nic = gr.inter_bandwidth * n / narrow
        per_byte = max((wide - near) / wide / nic, near / wide / gr.intra_bandwidth)
        return eff * slower / per_byte, gr.inter_latency if near < wide else gr.intra_latency

    def sent_link(self, sid: int, prev: int | None, i: int) -> tuple | None:
        """``_p2p_link`` as the stage's sends see it: on a wide-area link at the best ratio of
        ``--wan-compression``, its bandwidth is the compressed sends' bytes per second."""
        link = self._p2p_link(sid, prev, i)
        send = self._wan_send(sid, prev, i, link)
        if send is not None and send[1] > 1:
            return 1.0 / send[0], link[1]
        return link

    def wan_ratio(self, sid: int, prev: int | None, i: int) -> float:
        """The top-k ratio on the link into a stage on part ``i`` after one on ``prev`` (1: none)."""
        send = self._wan_send(sid, prev, i)
        return 1.0 if send is None else send[1]

    def _wan_send(self, sid: int, prev: int | None, i: int,
                  link: tuple | None = None) -> tuple[float, float] | None:
        """(seconds per byte, top-k ratio) of the sends into a stage on part ``i`` after one on
        ``prev`` over a wide-area link, at the best of ``--wan-compression`` (FusionLLM compresses
        only the slow links); None within a site. The ratio only shortens the sends, so the least
        p2p time is the best choice on every path. ``link``: ``_p2p_link``'s answer, where the
        caller has it."""
        groups = self.cluster.groups
        if prev is None:
            return None
        g, before = self.part_group(sid, i), self.part_group(sid, prev)
        if before == g or self.cluster.wan(groups[before], groups[g]) is None:
            return None
        bw, _ = link if link is not None else self._p2p_link(sid, prev, i)
        return wan_seconds_per_byte(bw, groups[g].hbm_bandwidth, self.train.wan_compression)

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
        bases = [z for z in zs if z < 3]
        if tr.zero_layers and sh.replicas > 1 and "zero" not in tr.fix:  # per-layer ZeRO-3 over each base
            zs += [ZERO_LAYERS + z for z in bases]
        if self.widenable(sid):  # per-layer TP over each base, with a tabled recomputation mode
            zs += [TP_LAYERS + z for z in bases]
        hit = self._allowed_cache[sid] = tuple((rc, z) for rc in rcs for z in zs
                                               if not (per_layer_tp(z) and rc == "block"))
        return hit

    def _stage_options(self, sid: int, part: int | None, lo: int, hi: int, j: int, prev: int | None,
                       ends: str | None = None) -> tuple:
        """The memory-feasible (recompute, ZeRO) options of blocks [lo, hi) as stage ``j``, less those
        no better in every stage term than another: pipe (a, b, c, rc, z) with a = tau + 2 p2p (the
        fill term), b = tau + e p2p or the input link's busy time if more (the steady term,
        ``steady_seconds``), c = exposed DP + optimizer; hap the same with a and b per class
        (``ends``: see ``pareto_options``). Cached: the options depend only on the key, not on the
        path. A pipe stage's depend on its index only through its in-flight count, and on the part
        before it only through the link between them (``stage_terms``): GPipe's stages, which all
        hold every micro-batch, share them wherever they start, and so do stages after parts
        joined to theirs by like links (kept under both keys: the first is the cheaper to ask)."""
        key = (sid, part, lo, hi, j, prev, ends)
        hit = self.opts.get(key)
        if hit is not None:
            return hit
        shared = None
        if self.shapes[sid].mode == "pipe":
            consts = self._class_consts(sid, part, prev)
            shared = (sid, part, lo, hi, ("pipe", consts[6][j], consts[7]), ends)
            hit = self.opts.get(shared)
        if hit is None:
            hit = pareto_options(self.stage_terms(sid, part, lo, hi, j, prev), shared is not None, ends)
            if shared is not None:
                self.opts[shared] = hit
        self.opts[key] = hit
        return hit

    def stage_terms(self, sid: int, part: int | None, lo: int, hi: int, j: int, prev: int | None) -> list:
        """Every memory-feasible option of blocks [lo, hi) as stage ``j`` on part ``part`` (pipe;
        None in hap mode: every class) (see ``_stage_options``).

        The arithmetic of :func:`stage_cost` for all (recompute, ZeRO) pairs at once, with the
        per-(shape, group) constants hoisted (``_class_consts``); a test checks it against stage_cost."""
        sh = self.shapes[sid]
        allowed = self._allowed(sid)
        if sh.mode == "pipe":
            classes = ((part, prev),)
        else:
            classes = tuple((c, c if j else None) for c in range(len(sh.parts)))
        layered: dict = {}  # (recompute, ZeRO) -> layers a per-layer option changes, over the classes
        paired: dict = {}  # ("block", per-layer ZeRO) -> [layers recomputed, sharded], over the classes
        per_class = []
        for cpart, before in classes:
            cc = self._class_consts(sid, cpart, before)
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
            lat = 0.0 if p2p_c is None else p2p_c[0]
            p2p = 0.0 if p2p_c is None else lat + p2p_c[1] * tab.boundaries[lo - 1]  # its input
            fj = infl[j]
            terms = []
            for rc, z in allowed:
                if per_layer_tp(z):  # its own arithmetic, shared with stage_cost: an opt-in option
                    wide, wide_link = self.widened(sid, cpart)
                    q, tau, memory, exposed = widened_stage(tab, wide, lo, hi, rc, zero_base(z), fj,
                                                            zc[0][3], self.train, self.dp_link(sid, cpart),
                                                            wide_link)
                    if memory > usable:
                        terms.append(None)
                        continue
                    layered[rc, z] = layered.get((rc, z), 0) + q
                    terms.append((tau + 2 * p2p, steady_seconds(tau, p2p, lat, e), exposed))
                    continue
                base = zero_base(z)
                state, gbuf, touched_f, m_dp, state_e, touched_e = zc[base]
                memory = (local - experts) * state + experts * state_e + gbuf
                shard = None
                if rc == "block" and per_layer_zero(z):  # both per layer (see recompute_and_shard)
                    if dp_one is None:
                        terms.append(None)
                        continue
                    state3, gbuf3, _, _, state3_e, _ = zc[3]
                    over = memory + tab.partial(tab.act, lo, hi, 0) * fj - usable
                    def shard_traffic(s: int, tab: StageTables = tab, zero3: Callable = zero3) -> float:
                        return zero3(*tab.sharded(lo, hi, s), s)

                    both = tab.recompute_and_shard(lo, hi, over, fj, state - state3, state_e - state3_e,
                                                   gbuf3, shard_traffic)
                    if both is None:
                        terms.append(None)
                        continue
                    layers, shard = both
                    counts = paired.setdefault((rc, z), [0, 0])
                    counts[0] += layers
                    counts[1] += shard
                    tau = tab.partial(tab.time, lo, hi, layers)
                elif rc == "block":
                    layers = tab.fewest_recomputed(lo, hi, usable - memory, fj)
                    if layers is None:
                        terms.append(None)
                        continue
                    layered[rc, z] = layered.get((rc, z), 0) + layers
                    tau = tab.partial(tab.time, lo, hi, layers)
                else:
                    tau = tab.time[rc][hi] - tab.time[rc][lo]
                    memory += (tab.act[rc][hi] - tab.act[rc][lo]) * fj
                    if rc == "full":
                        memory += tab.working_set
                    if not per_layer_zero(z) and memory > usable:
                        terms.append(None)
                        continue
                exposed = (local - experts) * touched_f + experts * touched_e
                if per_layer_zero(z):  # the fewest first layers under ZeRO-3, the rest under ZeRO-base
                    if dp_one is None:  # a class without replicas (hap mode): nothing to shard
                        terms.append(None)
                        continue
                    state3, gbuf3, touched3_f, _, state3_e, touched3_e = zc[3]
                    if shard is None:
                        shard = tab.fewest_sharded(lo, hi, memory - usable, state - state3,
                                                   state_e - state3_e, gbuf3)
                        if shard is None:
                            terms.append(None)
                            continue
                        layered[rc, z] = layered.get((rc, z), 0) + shard
                    s_dense, s_experts = tab.sharded(lo, hi, shard)
                    tau += max(0.0, zero3(s_dense, s_experts, shard) - ZERO3_OVERLAP * tau) if shard else 0.0
                    rest = dp_one(dense - s_dense, experts - s_experts)
                    dp = rest / 2 * m_dp + rest / 2 if base == 2 else rest
                    exposed += (max(0.0, dp - tau * 2 / 3) + s_dense * (touched3_f - touched_f)
                                + s_experts * (touched3_e - touched_e))
                elif dp_one is not None:
                    if z == 3:
                        tau += max(0.0, collectives - ZERO3_OVERLAP * tau)
                    else:
                        dp = one / 2 * m_dp + one / 2 if z == 2 else one
                        exposed += max(0.0, dp - tau * 2 / 3)
                terms.append((tau + 2 * p2p, steady_seconds(tau, p2p, lat, e), exposed))
            per_class.append(terms)
        out = []
        for i, (rc, z) in enumerate(allowed):
            row = [terms[i] for terms in per_class]
            if any(r is None for r in row):
                continue
            if (rc, z) in paired:  # recomputes or shards none: an option of one choice alone, if allowed
                recomputed, sharded = paired[rc, z]
                if ((not recomputed and ("none", z) in allowed)
                        or (not sharded and (rc, zero_base(z)) in allowed)):
                    continue
            elif ((z >= ZERO_LAYERS or ("none", z) in allowed) and (rc == "block" or z >= ZERO_LAYERS)
                    and not layered[rc, z]):
                continue  # changes no layer: the option without per-layer choice, itself allowed
            if sh.mode == "pipe":
                out.append((row[0][0], row[0][1], row[0][2], rc, z))
            else:
                avec, bvec = tuple(r[0] for r in row), tuple(r[1] for r in row)
                out.append((avec, bvec, max(r[2] for r in row), rc, z))
        return out

    def _class_consts(self, sid: int, part: int, before: int | None) -> tuple:
        """What the stage cost of shape ``sid`` on part ``part`` after part ``before`` needs besides the
        blocks, computed once."""
        key = (sid, part, before)
        hit = self._consts.get(key)
        if hit is not None:
            return hit
        sh, tr = self.shapes[sid], self.train
        t = self._tp(sid, part)
        tab = self.part_table(sid, part)
        replicas = tab.d  # the part's data x context ranks
        m_mem = sh.m if sh.mode == "pipe" else sh.p
        zc = {}
        r = tab.expert_replicas
        for z in (0, 1, 2, 3):
            state = state_bytes_per_param(z, replicas, tr.weight_bytes, tr.grad_bytes, tr.optimizer_bytes)
            state_e = state_bytes_per_param(z, r, tr.weight_bytes, tr.grad_bytes, tr.optimizer_bytes)
            gbuf = tab.gather_buffer / t * tr.weight_bytes if z == 3 else 0.0
            touched_f = 2 * tr.state_bytes / tab.group.hbm_bandwidth / (replicas if z >= 1 else 1)
            touched_e = 2 * tr.state_bytes / tab.group.hbm_bandwidth / (r if z >= 1 else 1)
            zc[z] = (state, gbuf, touched_f, m_mem, state_e, touched_e)
        e = p2p_sends(sh.schedule, sh.v, sh.k)
        dp_one = zero3 = None
        if replicas > 1:
            link = self.dp_link(sid, part)

            def dp_one(dense: float, experts: float, link: tuple = link) -> float:
                out = hierarchical_allreduce(dense * tr.grad_bytes, *link)
                if experts and r > 1:
                    out += allreduce(experts * tr.grad_bytes, r, *tab.expert_ring)
                return out

            def zero3(dense: float, experts: float, blocks: int, link: tuple = link) -> float:
                out = zero3_collectives(dense, blocks, replicas, flat_ring(link), tr.weight_bytes)
                if experts and r > 1:
                    out += zero3_collectives(experts, blocks, r, tab.expert_ring, tr.weight_bytes)
                return out

        infl = [inflight(sh.schedule, j, sh.p, m_mem, sh.v, sh.k) for j in range(sh.p)]
        p2p_c = None
        link2 = self.sent_link(sid, before, part)
        if link2 is not None:
            bw, lat = link2
            p2p_c = (lat, self.send_bytes(sid, part) / bw)
        usable = tr.usable(self.cluster.groups[self.part_group(sid, part)])
        out = (tab, usable, zc, e, dp_one, zero3, infl, p2p_c)
        self._consts[key] = out
        return out

    def send_bytes(self, sid: int, part: int) -> float:
        """Bytes a stage on part ``part`` of shape ``sid`` receives as its input per element of the
        boundary's width: its share of a micro-batch's activations, 16-bit, over its TP ranks."""
        return 2.0 * self.part_table(sid, part).b * self.train.seq / self.shapes[sid].c / self._tp(sid, part)

    def _tp(self, sid: int, i: int) -> int:
        """Part ``i``'s tensor-parallel degree."""
        sh = self.shapes[sid]
        return sh.t if sh.mode == "hap" else sh.parts[i][2]
