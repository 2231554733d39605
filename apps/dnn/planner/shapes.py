"""The planner's levels 1-3: which pipeline shapes a plan may take (formation, data, tensor, context
and expert degrees, micro-batch, schedule), before any stage is placed.

A mixin of :class:`~yewpy.apps.dnn.planner.search.PlanSearch` (it reads the search's model, cluster
and training settings); :class:`Shape` is what the stage tree below it refers to by index.
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from dataclasses import dataclass, replace
from functools import cached_property

from yewpy.apps.dnn.cluster import Cluster, DeviceGroup
from yewpy.apps.dnn.cost import RECOMPUTE, Training, tp_share_choices, uneven_tp_group
from yewpy.apps.dnn.models import Model
from yewpy.errors import UsageError


@dataclass(frozen=True)
class Shape:
    """The global decisions of a plan (levels 1-3)."""

    mode: str  # "pipe": per-stage device groups; "hap": replicas of different groups
    parts: tuple  # pipe: ((group, stages, t, d), ...), a group in 1 or 2 parts; hap: ((group, replicas), ...)
    p: int
    d: int  # pipe: the largest part's data-parallel degree (every part's but under DAPPLE's replication)
    t: int  # hap: the common TP degree; pipe: 0 (per part in parts)
    b: int  # samples per replica and micro-batch in the parts of degree d (part_b: the others)
    m: int  # pipe: micro-batches per replica; hap: micro-batches in all (B / b)
    schedule: str
    v: int = 1
    k: int = 1
    rc: str = ""  # the one recomputation mode of every stage, when the launcher needs one (else "")
    ep: int = 1  # expert-parallel degree (MoE models): a divisor of gcd(d, experts)
    c: int = 1  # context-parallel degree: each sequence split over c ranks (pipe mode, dense models)
    n: int = 1  # TeraPipe: token slices per sequence, of equal cost (pipe mode, dense models, c = 1)

    @property
    def replicas(self) -> int:
        """Ranks that hold the same parameters, all-reduce their gradients and share ZeRO state: the
        data-parallel ranks times the context-parallel ones (Megatron-LM's data-context group)."""
        return self.d * self.c

    def part_d(self, i: int) -> int:
        """Part ``i``'s data-parallel degree (hap: the replicas in all, as its tables count them)."""
        return self.parts[i][3] if self.mode == "pipe" else self.d

    def part_b(self, i: int) -> int:
        """Samples per replica of part ``i`` in one micro-batch: a stage's replicas split the
        pipeline's micro-batch of d x b samples between them (DAPPLE), b where every d is equal."""
        return self.b * self.d // self.part_d(i)

    @property
    def uneven(self) -> bool:
        """Whether the stages differ in data-parallel degree (DAPPLE's per-stage replication)."""
        return self.mode == "pipe" and any(part[3] != self.d for part in self.parts)

    @cached_property  # read on every bound; a frozen dataclass keeps it in __dict__, out of eq and hash
    def div(self) -> int:
        """What Eq. 1 divides the stages' summed time by: v for the interleaved schedule, n for
        TeraPipe (the pipeline fills and drains one slice deep), else 1."""
        if self.schedule == "interleaved":
            return self.v
        return self.n if self.schedule == "terapipe" else 1

    @cached_property
    def c1(self) -> float:
        """Eq. 1's factor on the largest stage's time: m - 1/v (interleaved), m - 1/n (TeraPipe:
        m n slices of 1/n of a micro-batch each), or m - 1."""
        return self.m - 1 / self.div

    def form(self) -> tuple:
        if self.mode == "pipe":
            return ("pipe", tuple((g, s, t * d * self.c) for g, s, t, d in self.parts))
        return ("hap", self.p, self.t, tuple(g for g, _ in self.parts))


#: the most stages of each width in a group split between two widths (``Shapes._splits``)
SPLIT_STAGES = 3


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


def mixed_tp_cluster(cluster: Cluster, train: Training) -> tuple[Cluster, dict, dict]:
    """``cluster`` with, for every two groups of different GPUs at one site with as many GPUs per
    node, one paired group per share choice (HAP's uneven TP shares: ``cost.uneven_tp_group``) over
    as many nodes of each kind as the smaller group has; where the other has more, the rest of its
    nodes as a group of their own. Returns it, which two real groups each paired group uses (index
    -> (i, j)), and the group of the nodes that each paired group leaves over (index -> index)."""
    groups, covers, rests = list(cluster.groups), {}, {}
    for i, a in enumerate(cluster.groups):
        for j in range(i + 1, len(cluster.groups)):
            b = cluster.groups[j]
            if (a.site, a.gpus_per_node) != (b.site, b.gpus_per_node) or \
                    (a.peak_flops, a.memory) == (b.peak_flops, b.memory) or a.name == b.name:
                continue                # the plan names each kind's share by its group's name
            nodes = min(a.nodes, b.nodes)
            paired = []
            for x in tp_share_choices(a, b, train):
                covers[len(groups)] = (i, j)
                paired.append(len(groups))
                groups.append(uneven_tp_group(replace(a, nodes=nodes), replace(b, nodes=nodes), x, train))
            if a.nodes != b.nodes:      # the larger group's other nodes, usable beside the pair
                more = a if a.nodes > b.nodes else b
                rests.update((k, len(groups)) for k in paired)
                groups.append(replace(more, nodes=more.nodes - nodes))
    return Cluster(groups, cluster.links), covers, rests


#: the most formations with paired groups ``--mixed-tp`` may add (each multiplies the shapes)
MAX_PAIRED_FORMATIONS = 256
#: the most choices of pairs ``paired_subsets`` looks through for them (most are alike where
#: identical groups are listed one by one, and are dropped)
MAX_PAIRED_CHOICES = 200_000


def paired_formations(cluster: Cluster, train: Training) -> int:
    """How many formations with paired groups ``--mixed-tp`` adds on ``cluster`` (0: nothing to
    pair), counted with every share candidate and with or without each pair's left-over nodes
    (:func:`mixed_tp_cluster`), formations alike but for identical groups once
    (:func:`paired_subsets`), up to one past ``MAX_PAIRED_FORMATIONS`` (eight kinds would pair
    into millions). Raises ``UsageError`` where the choices to look through pass
    ``MAX_PAIRED_CHOICES``, as a search on the cluster would."""
    with_pairs, covers, rests = mixed_tp_cluster(cluster, train)
    total = 0
    for _ in paired_subsets(with_pairs, covers, rests, len(cluster.groups)):
        total += 1
        if total > MAX_PAIRED_FORMATIONS:
            break
    return total


def interchangeable(groups: list[DeviceGroup], real: int) -> list[list[int]]:
    """The first ``real`` groups in classes of groups that differ only in name: the same nodes, GPUs
    and site, so the same links (classes of one left out). Any plan on some of a class's groups
    has an equal plan on as many of its first ones (``_prefix_of``)."""
    classes: dict = {}
    for g in range(real):
        classes.setdefault(replace(groups[g], name=""), []).append(g)
    return [members for members in classes.values() if len(members) > 1]


def paired_subsets(cluster: Cluster, covers: dict, rests: dict, real: int) -> Iterator[list[int]]:
    """The formations with paired groups (``--mixed-tp``) on ``cluster`` (``mixed_tp_cluster``'s):
    each subset of the ``real`` groups with one or more disjoint pairs of it replaced by a paired
    group, at one share each, and with or without the nodes each pair leaves over. Of formations
    that differ only in which of some interchangeable groups they use (three A100 nodes and three
    V100 nodes listed one by one pair in 351 ways on all six, 19 of them different), the first is
    kept, on the first groups of each class. Raises ``UsageError`` past ``MAX_PAIRED_CHOICES``."""
    groups = cluster.groups
    kind = {g: replace(groups[g], name="") for g in range(real)}
    kinds_named: dict = {}
    for g in range(real):
        kinds_named.setdefault(groups[g].name, set()).add(kind[g])
    # groups of one name never pair (mixed_tp_cluster), so where a name spans two kinds which
    # pairs exist depends on names, and groups alike but for their names are not interchangeable
    clash = any(len(kinds) > 1 for kinds in kinds_named.values())
    classes = [] if clash else interchangeable(groups, real)
    seen: set = set()
    looked = 0
    for mask in range(1, 1 << real):
        if not all(_prefix_of(mask, members) for members in classes):
            continue
        members = {g for g in range(real) if mask >> g & 1}
        for chosen in _disjoint_pairs(sorted(covers), covers, members):
            used = {g for c in chosen for g in covers[c]}
            base = [g for g in members if g not in used] + list(chosen)
            for rest in _product([[(), (rests[c],)] if c in rests else [()] for c in chosen]):
                looked += 1
                if looked > MAX_PAIRED_CHOICES:
                    raise UsageError(f"--mixed-tp: the cluster's groups pair in more than "
                                     f"{MAX_PAIRED_CHOICES:,} ways; describe fewer pairable groups")
                if classes:
                    taken = {c for c, r in zip(chosen, rest) if r}
                    alike = (tuple(sorted((kind[g] for g in members if g not in used), key=repr)),
                             tuple(sorted((_pair_kind(groups, covers, kind, c), c in taken) for c in chosen)))
                    if alike in seen:
                        continue
                    seen.add(alike)
                yield sorted(base + [g for r in rest for g in r])


def _pair_kind(groups: list, covers: dict, kind: dict, c: int) -> tuple:
    """Paired group ``c`` as its two groups' kinds with their shares, names left out."""
    share = dict(groups[c].tp_shares)
    return tuple(sorted((repr(kind[g]), share[groups[g].name]) for g in covers[c]))


def _disjoint_pairs(paired: list[int], covers: dict, members: set) -> Iterator[tuple]:
    """Every non-empty choice of paired groups among ``paired`` whose real groups are all in
    ``members`` and no two of which share a real group, lazily, in one fixed order."""

    def pick(k: int, used: frozenset, chosen: tuple) -> Iterator[tuple]:
        if k == len(paired):
            if chosen:
                yield chosen
            return
        yield from pick(k + 1, used, chosen)
        a, b = covers[paired[k]]
        if a in members and b in members and a not in used and b not in used:
            yield from pick(k + 1, used | {a, b}, chosen + (paired[k],))

    yield from pick(0, frozenset(), ())


def divisors(n: int) -> list[int]:
    return [x for x in range(1, n + 1) if n % x == 0]


def aligned(width: int, g: int) -> bool:
    """A group of ``width`` GPUs on nodes of ``g``: inside one node or whole nodes. For a
    tensor-parallel group the latter is TP across nodes, its all-reduces costed on the network."""
    return width % g == 0 or g % width == 0


def _prefix_of(mask: int, members: list[int]) -> bool:
    """Whether the groups of ``mask`` among ``members`` (a class of interchangeable groups, in
    order) are its first ones."""
    taken = [mask >> g & 1 for g in members]
    return taken == sorted(taken, reverse=True)


def _ordered_product(options: list[list[tuple]], twins: list[tuple[int, int]], most: int) -> Iterator[tuple]:
    """``itertools.product(*options)`` in its order, but only the choices whose first fields (stage
    counts) sum to at most ``most`` and that take, for each (i, j) in ``twins``, an option at position
    i at least as late in its list as the option at position j. Walked depth first with both tests
    made as it goes: eight interchangeable groups with 20 patterns each are 20^8 products to filter,
    of which some thousands pass."""
    least = [0] * (len(options) + 1)  # the fewest stages positions k.. can take
    for k in range(len(options) - 1, -1, -1):
        least[k] = least[k + 1] + min((option[0] for option in options[k]), default=0)
    before = {j: i for i, j in twins}
    picked: list[int] = []  # the option taken at each position so far
    used = 0
    at = 0  # the next option to try at position len(picked)
    while True:
        k = len(picked)
        if k == len(options):
            yield tuple(options[i][a] for i, a in enumerate(picked))
        else:
            last = picked[before[k]] if k in before else len(options[k]) - 1
            while at <= last and used + options[k][at][0] + least[k + 1] > most:
                at += 1
            if at <= last:
                picked.append(at)
                used += options[k][at][0]
                at = 0
                continue
        if not picked:
            return
        at = picked.pop()  # back up: the next option at the position left
        used -= options[len(picked)][at][0]
        at += 1


def _product(lists: list) -> list:
    out: list = [()]
    for options in lists:
        out = [o + (x,) for o in out for x in options]
    return out


class Shapes:
    """Every shape the settings allow (``_shapes``), and the rules each degree must obey."""

    model: Model
    cluster: Cluster
    train: Training
    n: int
    covers: dict  # a paired group's index -> the two real groups it uses (mixed_tp_cluster)
    rests: dict  # a paired group's index -> the group of the nodes it leaves over, where some are
    _experts_gcd: int  # the gcd of every block's expert count (0: a dense model), set by ``_shapes``

    def tp_fits(self, t: int) -> bool:
        """A tensor-parallel degree Megatron-LM can build: at most ``--max-tp``, and dividing the
        model's heads (:func:`heads_not_divided`)."""
        return t <= self.train.max_tp and heads_not_divided(self.model, t) is None

    def _shapes(self) -> list[Shape]:
        tr, fix, groups = self.train, self.train.fix, self.cluster.groups
        self._experts_gcd = math.gcd(*(blk.experts for blk in self.model.blocks))
        out = []
        real = len(groups) - len(self.covers) - len(set(self.rests.values()))
        interchangeable = self._interchangeable(real)
        subsets = [[g for g in range(real) if mask >> g & 1] for mask in range(1, 1 << real)
                   if all(_prefix_of(mask, members) for members in interchangeable)]
        subsets += list(paired_subsets(self.cluster, self.covers, self.rests, real))
        for subset in subsets:
            paired = any(groups[g].tp_shares for g in subset)
            # pipe mode
            choices = [
                [
                    (p, groups[g].gpus // p)
                    for p in divisors(groups[g].gpus)
                    if aligned(groups[g].gpus // p, groups[g].gpus_per_node)
                ]
                for g in subset
            ]
            # interchangeable groups in the subset: a plan whose stages sit 1 + 2 on two of them has
            # an equal one at 2 + 1 (the search orders stages across parts freely), so their stage
            # counts are taken non-increasing (their choices are alike, by stage count ascending)
            at = [[subset.index(g) for g in members if g in subset] for members in interchangeable]
            twins = [(i, j) for places in at for i, j in zip(places, places[1:])]
            for combo in _ordered_product(choices, twins, self.n):
                p = sum(c[0] for c in combo)
                if fix.get("pp", p) != p:
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
                    if paired and (cp > 1 or any(t % 2 for g, t in zip(subset, ts) if groups[g].tp_shares)):
                        continue            # a paired group's TP groups take t/2 GPUs of each kind
                    if fix.get("dp", d) != d or any(fix.get("tp", t) != t for t in ts):
                        continue
                    parts = tuple((g, c[0], t, d) for g, c, t in zip(subset, combo, ts))
                    shapes = self._schedules("pipe", parts, p, d, 0, tr.global_batch)
                    if cp > 1:                  # token slices and context parallelism: not both
                        shapes = [replace(sh, c=cp) for sh in shapes if sh.schedule != "terapipe"]
                    out += shapes
            if paired:                      # uneven TP shares: pipe shapes of one d, no DAPPLE or hap
                continue
            if tr.stage_replication:
                out += self._replicated(subset, twins)
            # hap mode: replicas of whole pipelines on different groups, within one site (its
            # data-parallel all-reduce would cross a wide-area link every step)
            if len(subset) < 2 or not tr.hap or len({groups[g].site for g in subset}) > 1:
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

    def _interchangeable(self, real: int) -> list[list[int]]:
        """``interchangeable`` on this cluster: six identical single-node groups made 353,005
        shapes over 63 subsets, of which 6 are distinct."""
        return interchangeable(self.cluster.groups, real)

    def _replicated(self, subset: list[int], twins: list[tuple[int, int]] = ()) -> list[Shape]:
        """DAPPLE's pipe shapes on the groups ``subset``: stages of different widths, so of different
        data-parallel degrees, at one t for all (``--stage-replication``). Each group holds stages of
        one width or of two (``_splits``); shapes whose stages all have one width are the ordinary
        ones. Dense models only, without context parallelism, and not with ``--fix dp``, which pins
        one degree for every stage. ``twins``: positions in ``subset`` of interchangeable groups
        (``_interchangeable``), whose patterns are taken in one order (each pair's first takes a
        pattern at least as late in ``_splits``' list as its second)."""
        tr, fix, groups = self.train, self.train.fix, self.cluster.groups
        if self.model.moe or fix.get("cp", 1) != 1 or "dp" in fix:
            return []
        out = []
        tp_ok: dict[int, bool] = {}  # t -> whether every group of the subset may take it
        evens: dict[frozenset, list[int]] = {}  # widths -> their micro-batch sizes (most combos repeat them)
        # each group's patterns as (its stages, its widths, its slices), read once, not per combo
        patterns = [[(sum(s for s, _ in pattern), frozenset(w for _, w in pattern),
                      tuple((g, s, w) for s, w in pattern))
                     for pattern in self._splits(groups[g].gpus, groups[g].gpus_per_node)]
                    for g in subset]
        for combo in _ordered_product(patterns, twins, self.n):
            p = sum(stages for stages, _, _ in combo)
            if fix.get("pp", p) != p:
                continue
            widths = frozenset().union(*(w for _, w, _ in combo))
            if len(widths) < 2:
                continue
            slices = [piece for _, _, pieces in combo for piece in pieces]
            # a part of width w splits each micro-batch of d x b samples evenly over its w / t replicas
            # (``Shape.part_b``), d = max(widths) / t: w divides b x max(widths), whatever t
            wide = max(widths)
            even = evens.get(widths)
            if even is None:
                even = evens[widths] = [b for b in tr.microbatches if all(b * wide % w == 0 for w in widths)]
            if not even:
                continue
            for t in divisors(math.gcd(*widths)):
                if t not in tp_ok:
                    tp_ok[t] = (self.tp_fits(t) and fix.get("tp", t) == t
                                and all(aligned(t, groups[g].gpus_per_node) for g in subset))
                if tp_ok[t]:
                    parts = tuple((g, stages, t, width // t) for g, stages, width in slices)
                    out += self._schedules("pipe", parts, p, wide // t, 0, tr.global_batch, even)
        return out

    def _splits(self, gpus: int, per_node: int) -> list[tuple]:
        """The ways a group of ``gpus`` GPUs on nodes of ``per_node`` may hold pipeline stages under
        ``--stage-replication``: ((stages, width),) of one node-aligned width, as without it, or
        ((s1, w1), (s2, w2)): s2 narrow stages of a node-aligned width w2 and s1 wide ones sharing
        the rest, w1 > w2, each count at most ``SPLIT_STAGES`` (DAPPLE's 15:1 on two 8-GPU nodes is
        s1 = s2 = 1, w2 = 1). A wide stage may span nodes in part: its ranks are data-parallel, and
        its TP groups, t | w1 with t dividing the node, stay in one node."""
        widths = [w for w in divisors(gpus) if aligned(w, per_node)]
        out: list[tuple] = [((gpus // w, w),) for w in widths]
        for w2 in widths:
            for s2 in range(1, SPLIT_STAGES + 1):
                for s1 in range(1, SPLIT_STAGES + 1):
                    rest = gpus - s2 * w2
                    if rest > 0 and rest % s1 == 0 and rest // s1 > w2 and s1 + s2 <= self.n:
                        out.append(((s1, rest // s1), (s2, w2)))
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

    def _schedules(self, mode: str, parts: tuple, p: int, d: int, t: int, B: int,
                   microbatches: list[int] | None = None) -> list[Shape]:
        """The shapes of one layout: each micro-batch size (of ``microbatches``, default all), schedule
        and its parameter, recompute mode (where the launcher needs one) and expert-parallel degree."""
        tr, fix = self.train, self.train.fix
        # every recompute mode (when the launcher needs one) and expert-parallel degree (MoE: every
        # one that divides d and every MoE block's experts) of each schedule; built directly, as
        # dataclasses.replace took 0.1 s per search on three-kind Mixtral's 20,637 shapes
        rcs = self._recompute_modes() if tr.uniform_recompute else [""]
        experts = self._experts_gcd
        eps = [e for e in divisors(math.gcd(d, experts)) if fix.get("ep", e) == e] if experts else [1]
        out: list[Shape] = []

        def add(sched: str, **kw: int) -> None:
            out.extend(Shape(mode, parts, p, d, t, b, m, sched, rc=rc, ep=e, **kw) for rc in rcs for e in eps)

        for b in tr.microbatches if microbatches is None else microbatches:
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
                            add(sched, v=v)
                elif sched == "kfkb":
                    for k in tr.group_sizes:
                        if k < (m if mode == "pipe" else m // d):
                            add(sched, k=k)
                elif sched == "terapipe":
                    if mode == "hap" or self.model.moe:
                        continue
                    for n in tr.token_slices:
                        if n <= tr.seq and fix.get("slices", n) == n:
                            add(sched, n=n)
                elif sched == "gpipe" and mode == "hap":
                    continue
                else:
                    add(sched)
        return out

    def _recompute_modes(self) -> list[str]:
        tr = self.train
        return [rc for rc in RECOMPUTE if rc in tr.recompute and tr.fix.get("recompute", rc) == rc]
