"""The symbolic cost model: FLOPs, memory and communication per stage, combined by the pipeline formula.

No profiling: every time is ``FLOPs / (t * eta * peak)`` or ``latency + bytes / (efficiency *
bandwidth)``, so a ranking depends on the hardware only through the ratios peak/bandwidth and
the relative device speeds, plus the absolute memory capacities (SMSG's idea; see docs/dnn.md).
Formulas: Megatron SC'21 Eqs. 1-3, Korthikanti et al. 2022 Table 2, ZeRO (SC'20) §5/§7, the NCCL
ring/hierarchical all-reduce.
"""

from __future__ import annotations

import copy
import math
from bisect import bisect_left
from dataclasses import dataclass, field

import numpy as np

from yewpy.apps.dnn.cluster import GIB, DeviceGroup
from yewpy.apps.dnn.models import Block, Model

#: recomputation modes: "block" recomputes in full the fewest of a stage's layers that let it fit in
#: memory, first layers first (per-layer recomputation: Galvatron-BMW; Megatron-LM's --recompute-method
#: block); the others apply to every block of the stage
RECOMPUTE = ("none", "selective", "full", "block")
DEFAULT_RECOMPUTE = ("none", "selective", "full")
TABLED = ("none", "selective", "full")  # the modes StageTables sums block by block
SCHEDULES = ("1f1b", "interleaved", "kfkb", "gpipe", "terapipe")
#: seconds each TeraPipe token slice adds per block and pass, on top of the pass overhead: its runtime
#: (PyTorch, V100) launches every kernel once per slice; fitted on TeraPipe's GPT3-175B setting (10),
#: 5.0x over GPipe (Li et al., ICML 2021, Table 1 and Fig. 5; docs/dnn.md)
TERAPIPE_SLICE_OVERHEAD = 1e-3
#: the schedules searched unless the user names others: TeraPipe's token slices (Li et al., ICML 2021)
#: only when asked for, as no launcher runs them
DEFAULT_SCHEDULES = ("1f1b", "interleaved", "kfkb", "gpipe")
# GEMM efficiency eta(h) = ETA * h / (h + ETA_H0), h the block's hidden width: the non-GEMM work per
# token (norms, softmax, dropout, bias-GeLU: memory-bound, ~h) against GEMM FLOPs (~h^2).
# Fixed seconds a block adds to every pass over a micro-batch (kernel launches, GEMM tiles a small
# per-GPU matrix leaves idle): with it the achieved rate depends on the per-GPU GEMM shape, b*s/cp
# tokens by h/t columns, so a small micro-batch or a wide TP group costs more than its FLOPs.
# The overhead is the least (10 us grid) at which Megatron SC'21 Fig. 16's best micro-batch (2, for the
# 91B model at (t, p) = (8, 8)) is predicted; ETA and ETA_H0 are then fitted on the odd Table 1 rows and
# validated on the even ones (benchmarks/calibrate_dnn_eta.py, docs/dnn.md).
DEFAULT_ETA = 0.668
DEFAULT_ETA_H0 = 1000.0
DEFAULT_PASS_OVERHEAD = 20e-6
# Share of a micro-batch's compute that hides ZeRO-3's collectives (prefetched gathers, reduce-scatters
# during the backward pass). Fitted on Megatron SC'21 Table 2's 768-GPU ZeRO-3 row and validated on
# its 384- and 1536-GPU rows (docs/dnn.md, tests/test_dnn_plan.py).
ZERO3_OVERLAP = 0.8
#: per-layer ZeRO (Galvatron-BMW's per-layer sharded data parallelism): option code ZERO_LAYERS + b runs
#: the fewest of a stage's transformer layers that let it fit under ZeRO-3, first layers first, and
#: the rest under ZeRO-b (b = 0, 1, 2); searched only when asked for (``Training.zero_layers``)
ZERO_LAYERS = 4
#: per-layer tensor parallelism (Galvatron's per-layer TP degrees): option code TP_LAYERS + b runs the
#: fewest of a stage's transformer layers that let it fit at twice the shape's TP degree and half its
#: data-parallel degree (each TP group then takes twice the samples), first layers first, every layer
#: under ZeRO-b (b = 0, 1, 2); searched only when asked for (``Training.tp_layers``)
TP_LAYERS = 8


def zero_base(z: int) -> int:
    """The ZeRO stage of a stage option's unsharded layers: ``z`` itself, or b for per-layer codes 4 + b
    and 8 + b."""
    if z >= TP_LAYERS:
        return z - TP_LAYERS
    return z - ZERO_LAYERS if z >= ZERO_LAYERS else z


def per_layer_zero(z: int) -> bool:
    """Whether option code ``z`` shards some layers with ZeRO-3 and not others (``ZERO_LAYERS``)."""
    return ZERO_LAYERS <= z < TP_LAYERS


def per_layer_tp(z: int) -> bool:
    """Whether option code ``z`` runs some layers at twice the TP degree (``TP_LAYERS``)."""
    return z >= TP_LAYERS


@dataclass(frozen=True)
class Training:
    """What the user trains with and what the planner may use."""

    global_batch: int
    seq: int
    weight_bytes: float = 2.0  # 16-bit weights
    grad_bytes: float = 4.0  # fp32 gradient buffers (Megatron); also the all-reduce width
    optimizer_bytes: float = 12.0  # Adam: fp32 master copy, momentum, variance
    eta: float = DEFAULT_ETA  # achieved fraction of peak FLOP/s for very wide GEMMs
    eta_h0: float = DEFAULT_ETA_H0  # hidden width at which eta is half of that
    pass_overhead: float = DEFAULT_PASS_OVERHEAD  # seconds each block adds per pass (forward, backward x2)
    link_efficiency: float = 0.7  # achieved fraction of link bandwidth
    tp_overlap: float = 0.0  # share of each pass's TP communication hidden behind its GEMMs, with sequence
    #                          parallelism (Megatron-Core's --tp-comm-overlap; 0: all exposed, as in SC'21)
    sequence_parallel: bool = True
    recompute: tuple = DEFAULT_RECOMPUTE
    zero: tuple = (0, 1, 2, 3)
    zero_layers: bool = False  # Galvatron-BMW: a stage may shard only some layers with ZeRO-3 (ZERO_LAYERS)
    tp_layers: bool = False  # Galvatron: a stage may run some layers at twice its TP degree (TP_LAYERS)
    schedules: tuple = DEFAULT_SCHEDULES
    token_slices: tuple = (2, 4, 8, 16, 32, 64)  # TeraPipe: n slices of equal cost per sequence
    wan_compression: tuple = (1.0,)  # FusionLLM: top-k ratios allowed on links between sites (1: none)
    stage_replication: bool = False  # DAPPLE: stages may differ in data-parallel degree (off: one d for all)
    mixed_tp: bool = False  # HAP: TP groups of two GPU kinds with uneven shares (uneven_tp_group)
    slice_overhead: float = TERAPIPE_SLICE_OVERHEAD  # seconds a token slice adds per block and pass
    microbatches: tuple = (1, 2, 4, 8, 16)
    interleave: tuple = (2, 4)  # v for the interleaved schedule
    group_sizes: tuple = (2, 4)  # k for kFkB
    max_tp: int = 8
    max_cp: int = 1  # largest context-parallel degree (1: none)
    memory_fraction: float = 0.9  # usable = fraction * capacity - reserve
    memory_reserve: float = 2 * GIB
    fix: dict = field(default_factory=dict)
    precision: str = "bf16"  # bf16 or fp16 (16-bit weights either way) or fp32
    # What the launcher can run (launch.restrict sets these): one recomputation mode for every stage,
    # heterogeneous replicas (hap mode), per-group TP degrees, the least pp for interleaving, and
    # Megatron-LM's stage rule (first and last stages free, middle stages equal, each a multiple of v),
    # and Galvatron's (each stage a transformer layer or more; the first and last stages, which hold
    # the embedding and the output layer, both under ZeRO-3 or neither: its one vocab_sdp).
    launcher: str = "none"
    uniform_recompute: bool = False
    hap: bool = True
    one_tp: bool = False
    interleave_min_pp: int = 2
    megatron_stages: bool = False
    galvatron_stages: bool = False

    @property
    def state_bytes(self) -> float:
        return self.weight_bytes + self.grad_bytes + self.optimizer_bytes

    def usable(self, group: DeviceGroup) -> float:
        return self.memory_fraction * group.memory - self.memory_reserve


# -- uneven tensor-parallel shares on two GPU kinds (HAP) ----------------------------------------


#: the least difference between two tried shares of a paired group (tp_share_choices)
SHARE_STEP = 0.02


def share_bytes(x: float) -> float:
    """At most how many times an even share's bytes a GPU whose half of a TP group takes the share
    ``x`` holds: 2x of the state and of the activations split by heads, but its sequence-parallel
    activations split evenly, so never less than one even share (1 for x <= 1/2, 2x above)."""
    return max(2.0 * x, 1.0)


def uneven_tp_group(a: DeviceGroup, b: DeviceGroup, x: float, train: Training) -> DeviceGroup:
    """The nodes of ``a`` paired one to one with those of ``b`` (HAP's sharding ratios): every
    tensor-parallel group takes t/2 GPUs of each kind, its ``a`` half does the share ``x`` of each
    layer's work and holds that share of its parameters, the ``b`` half 1 - x; its all-reduces
    cross the network. Returned as the group whose GPUs, sharing evenly, would cost the same: a TP
    group's time is max(2x/r_a, 2(1-x)/r_b) W/t, so the per-GPU rate (and HBM bandwidth, for the
    optimizer step) is 1 / (2 max(x/r_a, (1-x)/r_b)); the usable memory, in bytes of an even share,
    is min(u_a / share_bytes(x), u_b / share_bytes(1 - x)). Its data-parallel rings carry the busier
    half's bytes (``DeviceGroup.busier_share``: ``StageCosts._pipe_ring``)."""
    def rate(ra: float, rb: float) -> float:
        return 1.0 / (2.0 * max(x / ra, (1.0 - x) / rb))

    usable = min(train.usable(a) / share_bytes(x), train.usable(b) / share_bytes(1.0 - x))
    bandwidth = min(a.inter_bandwidth, b.inter_bandwidth)
    latency = max(a.inter_latency, b.inter_latency)
    return DeviceGroup(
        f"{a.name}+{b.name}", a.nodes, a.gpus_per_node + b.gpus_per_node,
        (usable + train.memory_reserve) / train.memory_fraction, rate(a.peak_flops, b.peak_flops),
        rate(a.hbm_bandwidth, b.hbm_bandwidth), bandwidth, bandwidth, latency, latency, a.bf16 and b.bf16,
        a.site, ((a.name, x), (b.name, 1.0 - x)))


def tp_share_choices(a: DeviceGroup, b: DeviceGroup, train: Training) -> tuple[float, ...]:
    """The shares of the ``a`` half that the planner tries, each giving the faster kind y >= 1/2 of
    the work (less never helps: slower, and no more memory): even (y = 1/2, one share per GPU), in
    proportion to peak FLOP/s (no GPU waits: HAP's LP without memory rows), the most before the
    faster kind's memory binds before the slower's (u_fast / 2 u_slow) where that lies between, and
    halfway between even and speed."""
    fast, slow = (a, b) if a.peak_flops >= b.peak_flops else (b, a)
    speed = fast.peak_flops / (fast.peak_flops + slow.peak_flops)
    candidates = [0.5, speed, (0.5 + speed) / 2]
    uf, us = train.usable(fast), train.usable(slow)
    if us > 0 and 0.5 < uf / (2 * us) < speed:
        candidates.append(uf / (2 * us))
    kept: list[float] = []
    for y in candidates:
        if all(abs(y - z) >= SHARE_STEP for z in kept):    # closer shares cost within a percent
            kept.append(y)
    return tuple(sorted(y if fast is a else 1.0 - y for y in kept))


# -- closed forms (test vectors) -----------------------------------------------------------------


def gemm_efficiency(eta: float, h0: float, width: float) -> float:
    """Achieved fraction of peak for a block of hidden width ``width``: eta * width / (width + h0)."""
    if h0 <= 0 or width <= 0:
        return eta
    return eta * width / (width + h0)


def megatron_params(layers: int, hidden: int, vocab: int, seq: int) -> float:
    """Megatron SC'21 Eq. 2: 12 L h^2 (1 + 13/(12h) + (V + s)/(12 L h))."""
    L, h = layers, hidden
    return 12 * L * h * h * (1 + 13 / (12 * h) + (vocab + seq) / (12 * L * h))


def megatron_flops(
    batch: int, seq: int, layers: int, hidden: int, vocab: int, recompute: bool = True
) -> float:
    """Megatron SC'21 Eq. 3 (full recompute: 96, else 72) FLOPs per iteration."""
    B, s, L, h, V = batch, seq, layers, hidden, vocab
    if recompute:
        return 96 * B * s * L * h * h * (1 + s / (6 * h) + V / (16 * L * h))
    return 72 * B * s * L * h * h * (1 + s / (6 * h) + V / (12 * L * h))


def state_bytes_per_param(
    stage: int, d: int, weight: float = 2, grad: float = 2, optimizer: float = 12
) -> float:
    """Model-state bytes per parameter per device under ZeRO ``stage`` over ``d`` ranks (ZeRO §5)."""
    if stage == 0:
        return weight + grad + optimizer
    if stage == 1:
        return weight + grad + optimizer / d
    if stage == 2:
        return weight + (grad + optimizer) / d
    return (weight + grad + optimizer) / d


def allreduce(nbytes: float, n: int, bandwidth: float, latency: float) -> float:
    """Ring all-reduce of ``nbytes`` over ``n`` ranks: 2(n-1)alpha + 2(n-1)/n S/B."""
    if n <= 1:
        return 0.0
    return 2 * (n - 1) * latency + 2 * (n - 1) / n * nbytes / bandwidth


def hierarchical_allreduce(
    nbytes: float, k1: int, k2: int, intra: float, inter: float, intra_lat: float, inter_lat: float
) -> float:
    """Reduce-scatter in the node (k1 GPUs), all-reduce across k2 nodes on S/k1, all-gather in the node."""
    t = allreduce(nbytes, k1, intra, intra_lat)
    if k2 > 1:
        t += allreduce(nbytes / k1, k2, inter, inter_lat)
    return t


def flat_ring(dp_link: tuple) -> tuple[float, float]:
    """(bandwidth, latency) of a flat ring over a data-parallel group whose hierarchical link is
    ``dp_link``: the network when the group spans nodes, else inside the node."""
    _, k2, intra, inter, lat_i, lat_o = dp_link
    return (inter, lat_o) if k2 > 1 else (intra, lat_i)


def zero3_collectives(params: float, blocks: int, d: int, ring: tuple, weight_bytes: float) -> float:
    """Seconds per micro-batch of ZeRO-3's collectives for ``params`` parameters per rank (before
    sharding) in ``blocks`` blocks: per block two all-gathers of the weights and one reduce-scatter of
    the gradients, both 16-bit (ZeRO §7: 3 Psi per step), as DeepSpeed runs them: flat rings over all
    ``d`` ranks on ``ring`` = (bandwidth, latency), so across nodes every byte passes one NIC per node
    (no hierarchical split)."""
    bw, lat = ring
    return (d - 1) * (3 * blocks * lat + 3 * weight_bytes * params / d / bw)


#: top-k sparsification of what crosses a wide-area link (FusionLLM's AdaTopK): a kept element goes
#: with its int32 index, and selecting then scattering costs passes over the tensor in HBM
COMPRESS_INDEX_BYTES = 4
COMPRESS_PASSES = 4  # our assumption: read to select, write the kept pairs, read and scatter at the receiver


def wan_seconds_per_byte(bandwidth: float, hbm_bandwidth: float, ratios: tuple) -> tuple[float, float]:
    """Seconds per byte of a boundary tensor (16-bit elements) sent over a wide-area link of
    ``bandwidth`` bytes/s, at the best of ``ratios`` (1 keeps every element; r > 1 keeps one in r,
    with its index, after COMPRESS_PASSES passes of HBM), and that ratio."""
    best = (1.0 / bandwidth, 1.0)
    for r in ratios:
        if r > 1:
            cost = (2 + COMPRESS_INDEX_BYTES) / 2 / r / bandwidth + COMPRESS_PASSES / hbm_bandwidth
            if cost < best[0]:
                best = (cost, r)
    return best


def p2p_sends(schedule: str, v: int, k: int) -> float:
    """Stage-to-stage sends a micro-batch exposes in the steady state: 1F1B 2 (forward out, backward
    out), interleaved 2v, kFkB 2/k (a group's sends overlap its own later micro-batches), GPipe and
    TeraPipe (GPipe's order over token slices) none."""
    return {"1f1b": 2.0, "interleaved": 2.0 * v, "kfkb": 2.0 / k, "gpipe": 0.0, "terapipe": 0.0}[schedule]


def steady_seconds(tau: float, p2p: float, latency: float, e: float) -> float:
    """A stage's time per micro-batch in the pipeline's steady state: its compute ``tau`` plus the
    ``e`` sends its schedule exposes, and never less than its input link is busy. That link carries
    each micro-batch's activation forward and its gradient back, two sends without their latency
    (which does not occupy it), whatever the schedule overlaps: on a slow wide-area link a GPipe,
    TeraPipe or kFkB pipeline runs at the link's pace, not its compute's."""
    exposed = tau + e * p2p
    busy = 2.0 * (p2p - latency)
    return exposed if exposed >= busy else busy


def inflight(schedule: str, j: int, p: int, m: int, v: int = 1, k: int = 1) -> float:
    """Micro-batches whose activations stage ``j`` (0-based) holds at its peak (Korthikanti §4.3)."""
    if schedule in ("gpipe", "terapipe"):
        return m
    if schedule == "kfkb":
        return min(k * (p - j), m)
    base = min(p - j, m)
    if schedule == "interleaved":
        return base * (1 + (p - 1) / (p * v))
    return base


# -- per-stage tables ------------------------------------------------------------------------------


class StageTables:
    """Prefix sums over the blocks for one (device group, t, d, b): time, FLOPs, params, activations.

    A stage over blocks [lo, hi) costs O(1): differences of prefix sums.
    """

    def __init__(
        self, model: Model, group: DeviceGroup, t: int, d: int, b: int, train: Training, ep_group_inter: bool,
        ep: int = 0, c: int = 1, slices: int = 1,
    ) -> None:
        # TeraPipe's token slices: each pass over a micro-batch is ``slices`` passes over slices of
        # its sequences (dense models, c = 1), each paying the fixed cost of a pass and the
        # latency of its own TP all-reduces; the FLOPs are the same.
        # Context parallelism: each of c ranks holds s/c tokens of every sequence and attends to all s
        # (ring attention, load-balanced causal chunks): FLOPs and activations per rank fall by c,
        # and the K/V chunks go round the ring, hidden behind the attention core where they can be.
        context = train.seq
        s = context / c
        rates = [t * gemm_efficiency(train.eta, train.eta_h0, blk.boundary) * group.peak_flops
                 for blk in model.blocks]
        eff = train.link_efficiency
        overlap = train.tp_overlap if train.sequence_parallel else 0.0    # Megatron overlaps only with SP
        intra, lat = group.intra_bandwidth * eff, group.intra_latency
        network = (group.inter_bandwidth * eff, group.inter_latency)  # (bandwidth, latency) off the node
        self.t, self.b, self.c, self.group = t, b, c, group
        self.d = d * c  # the ranks that all-reduce these gradients and share ZeRO state: data x context
        n = len(model.blocks)
        self.time = {rc: [0.0] * (n + 1) for rc in TABLED}
        self.flops = {rc: [0.0] * (n + 1) for rc in TABLED}
        self.act = {rc: [0.0] * (n + 1) for rc in TABLED}
        self.params = [0.0] * (n + 1)
        self.dense = [0.0] * (n + 1)  # params all-reduced over the whole DP group
        self.expert = [0.0] * (n + 1)  # expert params per rank (E/ep experts), replicated d/ep times
        self.expert_replicas = d  # d/ep: the ranks that hold the same experts and all-reduce them
        # their flat ring: the replicas are ep ranks apart, across nodes when the data-parallel group is
        self.expert_ring = network if ep_group_inter else (intra, lat)
        self._rings = (network, (intra, lat))
        self.block_time = []
        self._ep = 0  # the expert blocks' expert-parallel degree (0: no expert block)
        per_pass = train.pass_overhead + (train.slice_overhead if slices > 1 else 0.0)  # per slice
        work = []
        biggest_act = biggest_params = 0.0
        seen: dict = {}  # a model repeats its layers: each kind of block's terms are computed once
        for i, (blk, kind) in enumerate(zip(model.blocks, model.kinds)):
            terms = seen.get(kind)
            if terms is None:
                terms = self._block_terms(blk, rates[i], train, b, context, s, c, t, d, ep, slices, per_pass,
                                          overlap, network, intra, lat, eff)
                seen[kind] = terms
            per_mode, f, local, dense, expert, ep_blk, act = terms
            for rc, (fl, compute, tp_comm, a2a, passes, stored) in per_mode:
                self.flops[rc][i + 1] = self.flops[rc][i] + fl
                self.time[rc][i + 1] = self.time[rc][i] + compute + tp_comm + a2a + passes
                self.act[rc][i + 1] = self.act[rc][i] + stored
            self.block_time.append(self.time["none"][i + 1] - self.time["none"][i])
            work.append(3 * f)
            self.params[i + 1] = self.params[i] + local
            self.dense[i + 1] = self.dense[i] + dense
            self.expert[i + 1] = self.expert[i] + expert
            if blk.experts:
                self.expert_replicas = d // ep_blk
                self._ep = ep_blk
            biggest_act = max(biggest_act, act)
            biggest_params = max(biggest_params, local)
        self.work = [0.0]
        for w in work:
            self.work.append(self.work[-1] + w)
        self.rate = max(rates)  # the fastest block's FLOP/s: FLOPs / rate bounds any stage's time
        self.max_block_time = max(self.block_time)
        self.sorted_time = [0.0]
        for x in sorted(self.block_time):
            self.sorted_time.append(self.sorted_time[-1] + x)
        self.working_set = biggest_act  # full recompute re-materialises one block at a time
        self.gather_buffer = 2 * biggest_params  # ZeRO-3 prefetch: two blocks' gathered weights
        self.head_params = model.blocks[-1].params if model.blocks[-1].tied else 0.0
        self.tied = model.blocks[-1].tied and len(model.blocks) > 1
        self.boundaries = [blk.boundary for blk in model.blocks]
        self.n = n
        self._arrays: dict | None = None

    def with_replicas(self, d: int, ep_group_inter: bool) -> StageTables:
        """These tables at data-parallel degree ``d``, for tables built with their expert-parallel
        degree given (``ep`` > 0; any dense model's): the blocks cost alike at every d, so only the
        replica counts and the expert ring change (no prefix sum is recomputed)."""
        other = copy.copy(self)
        other.d, other.expert_replicas = d * self.c, d // self._ep if self._ep else d
        other.expert_ring = self._rings[0] if ep_group_inter else self._rings[1]
        return other

    def _block_terms(self, blk: Block, rate: float, train: Training, b: int, context: float, s: float, c: int,
                     t: int, d: int, ep: int, slices: int, per_pass: float, overlap: float, network: tuple,
                     intra: float, lat: float, eff: float) -> tuple:
        """One block's additions to the tables: per tabled mode (FLOPs, compute seconds, exposed TP
        communication, all-to-alls, fixed pass costs, activation bytes), then its forward FLOPs,
        parameters on a rank, dense and expert parameters, expert-parallel degree and activations
        without recomputation. The time's parts are kept apart so the prefix sums add them in the
        same order as always."""
        group = self.group
        f = blk.forward_flops(b, context) / c
        attention = blk.attention_flops(b, context) / c
        extra = {"none": 0.0, "selective": attention, "full": f}
        ring = 0.0  # one pass's K/V exchange not hidden behind its attention core
        if c > 1 and blk.kv:
            across = c * t > group.gpus_per_node  # the c ranks are t apart, as TP is innermost
            bw, l2 = network if across else (intra, lat)
            chunk = b * s * blk.kv * train.weight_bytes / t
            ring = max(0.0, (c - 1) * (l2 + chunk / bw) - attention / rate)
        ar = 0.0
        if t > group.gpus_per_node:  # TP across nodes: in the node, then over the network
            g = group.gpus_per_node
            ar = slices * hierarchical_allreduce(2.0 * b * s * blk.boundary / slices, g, t // g, intra,
                                                 group.inter_bandwidth * eff, lat, group.inter_latency)
        elif t > 1:
            ar = slices * allreduce(2.0 * b * s * blk.boundary / slices, t, intra, lat)
        # the expert-parallel degree (0: the largest, gcd(d, E)); it divides both, as launchers require
        ep_blk = (ep or math.gcd(d, blk.experts)) if blk.experts else 1
        a2a = 0.0
        if blk.a2a and ep_blk > 1:  # the ep ranks of an all-to-all are t apart in the data-parallel group
            across = ep_blk * t > group.gpus_per_node
            bw, l2 = network if across else (intra, lat)
            a2a = (ep_blk - 1) * l2 + (ep_blk - 1) / ep_blk * 2.0 * b * s * blk.a2a / t / bw
        per_mode = []
        for rc in TABLED:
            fl = 3 * f + extra[rc]
            n_ar = 2 * blk.tp_allreduces + (blk.tp_allreduces if rc == "full" else 0)
            n_a2a = 4 + (2 if rc == "full" else 0)
            passes = 3 + (1 if rc == "full" else 0)  # forward, backward (twice the work), recompute
            tp_comm = n_ar * ar - min(overlap * n_ar * ar, fl / rate)
            stored = blk.activation_bytes(b, s, t, train.sequence_parallel, rc, context)
            per_mode.append((rc, (fl, fl / rate, tp_comm, n_a2a * a2a if blk.a2a else 0,
                                  passes * (ring + slices * per_pass), stored)))
        local = blk.params - blk.expert_params + blk.expert_params / ep_blk
        act = per_mode[TABLED.index("none")][1][5]  # stored without recomputation
        return per_mode, f, local, blk.params - blk.expert_params, blk.expert_params / ep_blk, ep_blk, act

    def arrays(self) -> dict:
        """The prefix tables as numpy arrays, built once: ``params``, ``expert``, ``dense``,
        ``time_<mode>`` and ``act_<mode>`` per tabled recompute mode, and ``act_block``, the
        activations of recomputing each layer in full where that stores less (the least any
        per-layer recomputation count can hold)."""
        if self._arrays is None:
            out = {"params": np.asarray(self.params), "expert": np.asarray(self.expert),
                   "dense": np.asarray(self.dense)}
            for rc in TABLED:
                out["time_" + rc] = np.asarray(self.time[rc])
                out["act_" + rc] = np.asarray(self.act[rc])
            least = np.minimum(np.diff(out["act_full"]), np.diff(out["act_none"]))
            out["act_block"] = np.concatenate(([0.0], np.cumsum(least)))
            self._arrays = out
        return self._arrays

    def layers(self, lo: int, hi: int) -> tuple[int, int]:
        """The blocks of [lo, hi) that per-layer recomputation may recompute: all but the model's first
        and last (the embedding and the head, which Megatron-LM's block method leaves alone too)."""
        if self.n < 3:
            return lo, hi
        return max(lo, 1), min(hi, self.n - 1)

    def partial(self, table: dict, lo: int, hi: int, r: int) -> float:
        """``table`` (``time``, ``act`` or ``flops``) summed over blocks [lo, hi) when the first ``r``
        of its layers are recomputed in full and the rest not at all."""
        first, _ = self.layers(lo, hi)
        full, none = table["full"], table["none"]
        return none[hi] - none[lo] + full[first + r] - full[first] - none[first + r] + none[first]

    def fewest_recomputed(self, lo: int, hi: int, room: float, inflight: float) -> int | None:
        """The fewest layers of [lo, hi) to recompute, first ones first, for its activations times
        ``inflight`` (plus one block's working set once any is recomputed) to fit in ``room`` bytes;
        None if recomputing every layer is not enough."""
        return self._fewest_layers(lo, hi, lambda r: self.partial(self.act, lo, hi, r) * inflight
                                   + (self.working_set if r else 0.0) <= room)

    def sharded(self, lo: int, hi: int, r: int) -> tuple[float, float]:
        """Dense and expert parameters per rank of the first ``r`` layers of [lo, hi) (see ``layers``)."""
        first, _ = self.layers(lo, hi)
        return ((self.dense[first + r] - self.dense[first]) / self.t,
                (self.expert[first + r] - self.expert[first]) / self.t)

    def fewest_sharded(self, lo: int, hi: int, over: float, per_dense: float, per_expert: float,
                       gather: float) -> int | None:
        """The fewest layers of [lo, hi) to shard with ZeRO-3, first ones first, to save ``over``
        bytes, when a layer's dense and expert parameters each save ``per_dense`` and ``per_expert``
        bytes and any sharding adds ZeRO-3's ``gather`` buffer; None if sharding every layer is not
        enough."""
        first, end = self.layers(lo, hi)
        if over <= 0:
            return 0
        if self.expert[end] == self.expert[first] and per_dense > 0:  # dense layers: one bisection in C
            need = self.dense[first] + (over + gather) * self.t / per_dense
            r = bisect_left(self.dense, need, first + 1, end + 1)
            return r - first if r <= end else None

        def fits(r: int) -> bool:
            dense, expert = self.sharded(lo, hi, r)
            return dense * per_dense + expert * per_expert - (gather if r else 0.0) >= over

        return self._fewest_layers(lo, hi, fits)

    def recompute_and_shard(self, lo: int, hi: int, over: float, inflight: float, per_dense: float,
                            per_expert: float, gather: float, collectives) -> tuple[int, int] | None:
        """Per-layer recomputation and per-layer ZeRO-3 in one stage: (r, s), the first r layers of
        [lo, hi) recomputed and the first s sharded, for a stage ``over`` bytes above its memory with
        neither (activations at ``inflight`` micro-batches). ZeRO-3's traffic costs nothing while
        ``ZERO3_OVERLAP`` of the compute hides it (``collectives(s)``, seconds), so r is the fewest
        layers whose recomputation, with the sharding hidden behind the stage's compute then, fits;
        s is then the fewest that fit. Where no r does, every layer is recomputed and s is the fewest
        that fit; None if none does."""
        first, end = self.layers(lo, hi)
        layers = end - first
        act0 = self.partial(self.act, lo, hi, 0) * inflight

        def act_saving(r: int) -> float:
            return act0 - self.partial(self.act, lo, hi, r) * inflight - (self.working_set if r else 0.0)

        def shard_saving(s: int) -> float:
            dense, expert = self.sharded(lo, hi, s)
            return dense * per_dense + expert * per_expert - (gather if s else 0.0)

        traffic: dict[int, float] = {}  # collectives(s), read once: every r's bisection starts alike

        def hidden(r: int) -> int:  # the most layers whose ZeRO-3 traffic r recomputed layers hide
            tau = ZERO3_OVERLAP * self.partial(self.time, lo, hi, r)
            low, high = 0, layers + 1  # collectives(low) <= tau < collectives(high)
            while high - low > 1:
                mid = (low + high) // 2
                seconds = traffic.get(mid)
                if seconds is None:
                    seconds = traffic[mid] = collectives(mid)
                if seconds <= tau:
                    low = mid
                else:
                    high = mid
            return low

        def fits(r: int) -> bool:
            return act_saving(r) + max(0.0, shard_saving(hidden(r))) >= over

        if layers < 1:
            return None
        r = self._fewest_layers(lo, hi, fits)
        if r is None:
            r = layers
        s = self.fewest_sharded(lo, hi, over - act_saving(r), per_dense, per_expert, gather)
        return None if s is None else (r, s)

    def _fewest_layers(self, lo: int, hi: int, fits) -> int | None:
        """The least r in [0, layers of [lo, hi)] with ``fits(r)``, None if none; ``fits`` is
        monotone from r = 1 on (r = 0 may fit where 1 does not): bisection."""
        first, end = self.layers(lo, hi)
        if fits(0):
            return 0
        if end <= first or not fits(end - first):
            return None
        low, high = 0, end - first  # fits(high), not fits(low)
        while high - low > 1:
            mid = (low + high) // 2
            if fits(mid):
                high = mid
            else:
                low = mid
        return high


@dataclass
class StageCost:
    """One stage of a plan: its time per micro-batch, its exposed DP and optimizer time, its memory."""

    tau: float  # compute + TP communication per micro-batch (fwd + bwd + recompute)
    p2p: float  # one boundary send into this stage, latency included
    exposed: float  # DP communication not hidden behind the last backward + optimizer step
    memory: float  # peak bytes per device
    flops: float  # executed FLOPs per micro-batch on one replica of this stage (all t ranks)
    recomputed: int = 0  # layers recomputed in full under per-layer recomputation ("block")
    sharded: int = 0  # layers under ZeRO-3 under per-layer ZeRO (ZERO_LAYERS)
    widened: int = 0  # layers at twice the TP degree under per-layer TP (TP_LAYERS)
    p2p_latency: float = 0.0  # the latency part of ``p2p``

    def steady(self, e: float) -> float:
        """Its steady-state time per micro-batch where the schedule exposes ``e`` sends."""
        return steady_seconds(self.tau, self.p2p, self.p2p_latency, e)


def stage_cost(
    tab: StageTables,
    lo: int,
    hi: int,
    rc: str,
    zero: int,
    j: int,
    p: int,
    m: int,
    schedule: str,
    v: int,
    k: int,
    train: Training,
    dp_link: tuple,
    p2p_link: tuple | None,
    last_block: int,
    wide: tuple | None = None,
) -> StageCost:
    """The cost of blocks [lo, hi) as stage ``j`` of ``p`` (see docs/dnn.md for every term); ``wide``
    is per-layer TP's second layout, (tables, data-parallel ring), for option codes ``TP_LAYERS + b``."""
    t, d, b = tab.t, tab.d, tab.b
    p2p = lat = 0.0
    if p2p_link is not None:
        bw, lat = p2p_link
        p2p = lat + 2.0 * b * train.seq / tab.c * tab.boundaries[lo - 1] / t / bw  # its input
    if per_layer_tp(zero):
        assert wide is not None, "per-layer TP needs its widened tables"
        in_flight = inflight(schedule, j, p, m, v, k)
        q, tau, memory, exposed = widened_stage(tab, wide[0], lo, hi, rc, zero_base(zero), in_flight, m,
                                                train, dp_link, wide[1])
        flops = tab.flops[rc][hi] - tab.flops[rc][lo]
        return StageCost(tau, p2p, exposed, memory, flops, widened=q, p2p_latency=lat)
    params = tab.params[hi] - tab.params[lo]
    if tab.tied and lo == 0 and hi == last_block + 1:
        params -= tab.head_params  # embedding and tied head on one stage: one copy
    local = params / t
    experts = (tab.expert[hi] - tab.expert[lo]) / t  # sharded by ZeRO over d/ep replicas, not d
    r = tab.expert_replicas
    base = zero_base(zero)

    def per_param(z: int, replicas: int) -> float:
        return state_bytes_per_param(z, replicas, train.weight_bytes, train.grad_bytes, train.optimizer_bytes)

    def zero3_traffic(dense_p: float, experts_p: float, blocks: int) -> float:
        """ZeRO-3's collectives per micro-batch for these parameters in ``blocks`` blocks."""
        out = zero3_collectives(dense_p, blocks, d, flat_ring(dp_link), train.weight_bytes)
        if experts_p and r > 1:
            out += zero3_collectives(experts_p, blocks, r, tab.expert_ring, train.weight_bytes)
        return out

    gather = tab.gather_buffer / t * train.weight_bytes
    memory = (local - experts) * per_param(base, d) + experts * per_param(base, r)
    if zero == 3:
        memory += gather
    in_flight = inflight(schedule, j, p, m, v, k)
    room = train.usable(tab.group)
    saving_dense = per_param(base, d) - per_param(3, d)
    saving_experts = per_param(base, r) - per_param(3, r)
    first, end = tab.layers(lo, hi)
    layers = sharded = 0
    both = None  # per-layer recomputation and per-layer ZeRO-3 together: (r, s)
    if rc == "block" and per_layer_zero(zero):
        over = memory + tab.partial(tab.act, lo, hi, 0) * in_flight - room
        both = tab.recompute_and_shard(lo, hi, over, in_flight, saving_dense, saving_experts, gather,
                                       lambda s: zero3_traffic(*tab.sharded(lo, hi, s), s))
        layers, sharded = both if both else (end - first, end - first)  # None: over memory even so
    if rc == "block":
        if both is None and not per_layer_zero(zero):
            fewest = tab.fewest_recomputed(lo, hi, room - memory, in_flight)
            layers = end - first if fewest is None else fewest  # None: over memory even so
        tau = tab.partial(tab.time, lo, hi, layers)
        flops = tab.partial(tab.flops, lo, hi, layers)
        memory += tab.partial(tab.act, lo, hi, layers) * in_flight + (tab.working_set if layers else 0.0)
    else:
        tau = tab.time[rc][hi] - tab.time[rc][lo]
        flops = tab.flops[rc][hi] - tab.flops[rc][lo]
        memory += (tab.act[rc][hi] - tab.act[rc][lo]) * in_flight
        if rc == "full":
            memory += tab.working_set
    sharded_dense, sharded_experts = 0.0, 0.0  # per-layer ZeRO: the layers under ZeRO-3
    if per_layer_zero(zero):
        if rc != "block":
            fewest = tab.fewest_sharded(lo, hi, memory - room, saving_dense, saving_experts, gather)
            sharded = end - first if fewest is None else fewest  # None: over memory even so
        sharded_dense, sharded_experts = tab.sharded(lo, hi, sharded)
        memory -= sharded_dense * saving_dense + sharded_experts * saving_experts
        if sharded:
            memory += gather
    # data parallel: the gradients of this stage's shard, over d ranks (hierarchical when spanning nodes)
    exposed = 0.0
    if d > 1:
        dense = (tab.dense[hi] - tab.dense[lo]) / t
        if zero == 3:  # every micro-batch gathers and reduce-scatters; what compute does not hide
            sharded_dense, sharded_experts, sharded_blocks = dense, experts, hi - lo
        else:
            sharded_blocks = sharded
        if sharded_blocks:
            traffic = zero3_traffic(sharded_dense, sharded_experts, sharded_blocks)
            tau += max(0.0, traffic - ZERO3_OVERLAP * tau)
        if zero != 3:
            one = hierarchical_allreduce((dense - sharded_dense) * train.grad_bytes, *dp_link)
            if experts - sharded_experts and r > 1:
                one += allreduce((experts - sharded_experts) * train.grad_bytes, r, *tab.expert_ring)
            dp = one / 2 * m + one / 2 if base == 2 else one  # ZeRO-2 reduce-scatters every micro-batch
            exposed = max(0.0, dp - tau * 2 / 3)
    if zero == 3:
        touched = (local - experts) / d + experts / r
    else:
        rest_dense = local - experts - sharded_dense
        rest_experts = experts - sharded_experts
        touched = (rest_dense / (d if base >= 1 else 1) + rest_experts / (r if base >= 1 else 1)
                   + sharded_dense / d + sharded_experts / r)
    exposed += 2 * touched * train.state_bytes / tab.group.hbm_bandwidth
    return StageCost(tau, p2p, exposed, memory, flops, layers, sharded, p2p_latency=lat)


def widened_stage(tab: StageTables, wide: StageTables, lo: int, hi: int, rc: str, base: int,
                  in_flight: float, m: int, train: Training, dp_link: tuple,
                  wide_link: tuple) -> tuple[int, float, float, float]:
    """Per-layer tensor parallelism for blocks [lo, hi) (option ``TP_LAYERS + base``, a tabled ``rc``):
    (q, tau, memory, exposed) with the first q transformer layers at twice ``tab``'s TP degree and half
    its data-parallel degree (``wide``: those tables, each TP group taking twice the samples; its
    ring ``wide_link``), the rest, the embedding and the head as ``tab``; every layer under ZeRO-``base``.
    q is the fewest that fit, all of them where none do (the memory then says so).

    A widened layer costs at least its narrow time (the same FLOPs per GPU, larger TP all-reduces),
    holds half the parameters per GPU, and all-reduces them over half the ranks. Where the layout
    changes, one TP group's activations are exchanged with its partner's: into the widened layers
    in the forward pass and again when recomputing them, out of them in the backward pass."""
    t, d = tab.t, tab.d
    first, end = tab.layers(lo, hi)
    params = tab.params[hi] - tab.params[lo]
    if tab.tied and lo == 0 and hi == tab.n:
        params -= tab.head_params
    local, dense = params / t, (tab.dense[hi] - tab.dense[lo]) / t
    bytes_each = (train.weight_bytes, train.grad_bytes, train.optimizer_bytes)
    narrow_state = state_bytes_per_param(base, d, *bytes_each)
    wide_state = state_bytes_per_param(base, wide.d, *bytes_each)
    act, wide_act = tab.act[rc], wide.act[rc]
    time, wide_time = tab.time[rc], wide.time[rc]

    def moved(prefix: list, q: int) -> float:
        return prefix[first + q] - prefix[first]

    def memory(q: int) -> float:
        widened = moved(tab.params, q) / t  # those layers' parameters per GPU at the narrow degree
        out = (local - widened) * narrow_state + widened / 2 * wide_state
        out += (act[hi] - act[lo] - moved(act, q) + moved(wide_act, q)) * in_flight
        if rc == "full":
            out += max(tab.working_set, wide.working_set) if q else tab.working_set
        return out

    room = train.usable(tab.group)
    q = tab._fewest_layers(lo, hi, lambda r: memory(r) <= room)
    if q is None:
        q = end - first
    tau = time[hi] - time[lo] - moved(time, q) + moved(wide_time, q)
    if q:
        width = tab.boundaries[max(first - 1, 0)]
        exchange = train.weight_bytes * tab.b * train.seq * width / (t if train.sequence_parallel else 1)
        link = train.link_efficiency * tab.group.intra_bandwidth
        tau += (3 if rc == "full" else 2) * (tab.group.intra_latency + exchange / link)
    exposed = 0.0
    widened_dense = moved(tab.dense, q) / t
    if d > 1:
        rest = dense - widened_dense
        one = hierarchical_allreduce(rest * train.grad_bytes, *dp_link) if rest > 0 else 0.0
        if wide.d > 1:
            one += hierarchical_allreduce(widened_dense / 2 * train.grad_bytes, *wide_link)
        dp = one / 2 * m + one / 2 if base == 2 else one  # ZeRO-2 reduce-scatters every micro-batch
        exposed = max(0.0, dp - tau * 2 / 3)
    widened = moved(tab.params, q) / t
    touched = (local - widened) / (d if base >= 1 else 1) + widened / 2 / (wide.d if base >= 1 else 1)
    exposed += 2 * touched * train.state_bytes / tab.group.hbm_bandwidth
    return q, tau, memory(q), exposed
