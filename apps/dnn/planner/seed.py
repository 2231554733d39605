"""The planner's seed: real plans met before the search, whose times bound what it must beat.

A mixin of :class:`~yewpy.apps.dnn.planner.search.PlanSearch` (it reads the search's shapes,
tables and bounds): the K-th best seeded time is the bar the search starts from, and each seeded
shape's own time limits that shape.
"""

from __future__ import annotations

import heapq
import itertools
import math
from collections.abc import Iterator, Sequence
from typing import Any

#: the most sets of device groups the seed's subset round visits (``Seeding._seed_subsets``), those
#: of fewest groups first: all 63 of six kinds
SUBSETS = 64
#: the shapes the subset round seeds on each set it visits before it widens on the best sets: one cut
#: can miss a set's plans by far (an interleaved shape's, 22.7 s where the set's best is 8.72 s)
PROBES = 2
#: the shapes of least root bound of each pipeline layout (d, p) whose start bounds the seed's layout
#: round compares (``Seeding._seed_layouts``)
PER_LAYOUT = 2


class Seeding:
    """``_seed`` and the dives it makes."""

    def _seed(self, tries: int = 8, budget: int = 150) -> float:
        """An upper bound on the top-th best shape's time before the search. In each of at most
        ``many = tries * max(top, 3)`` shapes (twice that with --stage-replication), taken by least
        start-node bound (``_seed_shapes``): the min-max cut's leaf (``_cut_plan``), or where the
        cut finds none, the first leaf of a depth-first walk that may backtrack (``budget`` nodes
        at most: a greedy dive mostly dies where memory runs out), pruned against what is known so
        far. It becomes that shape's own limit (``seeded``), the top-th best over the shapes the
        threshold. With --stage-replication, ``many`` shapes of one width per stage come first, the shapes the
        seed takes without the flag, then ``many`` more of any: DAPPLE's two widths multiply the
        shapes, and their low root bounds crowded the plain shapes out of the seed's window
        (Falcon-180B on 32 H100 + 16 A100 nodes: a bar of 30.8 s with the flag, 24.1 s
        without). Then the sets of device groups those shapes leave out (``_seed_subsets``), then
        the layouts (d, p) no seeded shape has (``_seed_layouts``). Every worker computes the
        same, so a thief prunes at once."""
        saved, self.memo_on = self.memo_on, False  # a dive must not fill the dominance memo
        times: list[float] = []
        many = tries * max(self.top, 3)
        tried: set[int] = set()
        try:
            if self.train.stage_replication:  # first the shapes it would take without the flag
                even = [i for i, sh in enumerate(self.shapes) if not sh.uneven]
                for sid in self._seed_shapes(many, even, tried):
                    self._seed_one(sid, budget, times)
            for sid in self._seed_shapes(many, range(len(self.shapes)), tried):
                self._seed_one(sid, budget, times)
            self._seed_subsets(many, budget, times, tried)
            self._seed_layouts(many, budget, times, tried)
        finally:
            self.memo_on = saved
        return times[self.top - 1] if len(times) >= self.top else math.inf

    def _seed_layouts(self, many: int, budget: int, times: list[float], tried: set[int]) -> None:
        """Seed one shape of each of up to ``many`` layouts (d, p; pipe or hap) that no seeded shape
        has: of each layout under the bar, the better start bound of its ``PER_LAYOUT`` shapes of
        least root bound, the layouts by that bound, each only where it is below every start bound
        of the shapes seeded so far (what the rounds above, which rank only their window, missed).
        The root bounds leave memory out, so the least of them can all be of layouts that memory
        makes slow: on GPT-3 over four kinds of four nodes, the rounds above seed only d = 4 and
        d = 8 shapes (a bar of 45.1 s) and the best plan's shape, d = 2 and p = 10, ranks 2,366th by
        root bound. Run without that condition, the round cost 0.3 s of Llama-2-70B's 0.6 s plan on
        H100 + A100 and lowered no bar there."""
        seeded = {(self.shapes[sid].d, self.shapes[sid].p) for sid in self.seeded}
        firsts: dict[tuple, list[int]] = {}
        for sid in sorted(range(len(self.shapes)), key=lambda i: (self.root_lb[i], i)):
            if self.root_lb[sid] >= self.seed_bar:
                break
            sh = self.shapes[sid]
            if sid not in tried and (sh.d, sh.p) not in seeded:
                layout = firsts.setdefault((sh.d, sh.p), [])
                if len(layout) < PER_LAYOUT:
                    layout.append(sid)
        best = sorted(min((self._start_bound(sid), sid) for sid in layout) for layout in firsts.values())
        beaten = min((self._start_bound(sid) for sid in self.seeded), default=self.seed_bar)
        for bound, sid in best[:many]:
            if bound >= min(beaten, self.seed_bar):
                return
            tried.add(sid)
            self._seed_one(sid, budget, times)

    def _seed_subsets(self, many: int, budget: int, times: list[float], tried: set[int]) -> None:
        """Seed each set of device groups that no shape seeded so far uses, and widen on the best of
        them. The least root bounds belong to the shapes on the most GPUs, whose bounds are
        loosest: on one node each of six kinds, every shape the rounds above seed spans five or six
        of them, their bar is 1.22 s against an optimum of 0.30 s, and the search did not end in
        60 s. First ``PROBES`` shapes per left-out set (``SUBSETS`` sets at most, fewest groups
        first), by least start bound; then, where some beat the bar the rounds above left, ``many``
        more on each of the two best such sets (there: a bar of 0.313 s, and the search ends in
        14 s)."""
        if len(self.cluster.groups) < 2:
            return
        by_set: dict[tuple, list[int]] = {}
        of_parts: dict[tuple, tuple] = {}  # many shapes share their parts: 3,064 of 58,622 with DAPPLE
        for sid, sh in enumerate(self.shapes):
            key = of_parts.get(sh.parts)
            if key is None:
                key = of_parts[sh.parts] = tuple(sorted({part[0] for part in sh.parts}))
            by_set.setdefault(key, []).append(sid)
        if len(by_set) < 2:
            return
        seeded = {of_parts[self.shapes[sid].parts] for sid in self.seeded}
        left = sorted((key for key in by_set if key not in seeded), key=lambda key: (len(key), key))
        before = self.seed_bar
        better: dict[tuple, float] = {}
        for key in left[:SUBSETS]:
            for sid in self._seed_shapes(PROBES, by_set[key], tried):
                self._seed_one(sid, budget, times)
                if self.seeded.get(sid, math.inf) < min(before, better.get(key, math.inf)):
                    better[key] = self.seeded[sid]
        for key in sorted(better, key=lambda key: (better[key], key))[:2]:
            for sid in self._seed_shapes(many, by_set[key], tried):
                self._seed_one(sid, budget, times)

    def _seed_one(self, sid: int, budget: int, times: list[float]) -> None:
        """Seed shape ``sid`` with its cut's leaf, or the walk's where the cut finds none (the walk
        seldom beats the cut, and costs more); ``times``, kept sorted, gains its time."""
        seconds, leaf = self._cut_plan(sid)
        if leaf is None:
            seconds, leaf = self._first_plan(sid, budget)
        if leaf is not None:
            self.seeded[sid] = seconds
            self.seed_plans[sid] = leaf
            times.append(seconds)
            times.sort()
            if len(times) >= self.top:  # later dives, and the shapes still to choose, read it
                self.seed_bar = times[self.top - 1]

    def _seed_shapes(self, many: int, among: Sequence[int], tried: set[int]) -> Iterator[int]:
        """Up to ``many`` of the ``16 * many`` shapes of ``among`` not yet ``tried`` with the least
        root bounds, by least start bound (``_start_bound``, which counts the memory that the root
        bounds leave out; GPT-3 on 32+32 mixed nodes: the best plan's shape ranks 117th by root
        bound and 9th by start bound), each while the seed's bar (``seed_bar``, which the seeds
        lower as they are taken) is above it; each is added to ``tried``. A start bound is never
        below its root bound, so a shape is taken once its start bound is at most the next root
        bound: start bounds are computed only as far as the root bounds reach the many-th least of
        them, or the bar."""
        order = sorted((i for i in among if i not in tried), key=lambda i: (self.root_lb[i], i))
        waiting: list[tuple[float, int]] = []
        taken = 0
        for sid in order[: 16 * many]:
            while waiting and waiting[0][0] <= self.root_lb[sid]:
                bound, chosen = heapq.heappop(waiting)
                if bound < self.seed_bar:
                    tried.add(chosen)
                    yield chosen
                    taken += 1
                    if taken == many:
                        return
            if self.root_lb[sid] >= self.seed_bar:  # read after the seeds above lowered it
                break
            heapq.heappush(waiting, (self._start_bound(sid), sid))
        while waiting and taken < many:
            bound, chosen = heapq.heappop(waiting)
            if bound >= self.seed_bar:
                return
            tried.add(chosen)
            yield chosen
            taken += 1

    def _start_bound(self, sid: int) -> float:
        """Shape ``sid``'s start-node bound: its root bound with the floor the constructor left out
        of it: a several-part or hap shape's is bounded again with it; a one-part shape's stage floor
        is added to its root bound (``_stage_floored``)."""
        sh = self.shapes[sid]
        if sh.mode == "hap" or len(sh.parts) > 1:
            if sh.mode == "pipe":
                self._bisect_parts_floor(sid)
            return self._bound_state(sid, 0, self.start_counts(sid), *self.zero_state(sid))
        self._stage_floored(sid)
        return self.root_lb[sid]

    def best_known(self, solutions: list, bound: float | None = None) -> list:
        """The ``top`` best of ``solutions`` (a stopped search's (seconds, leaf) pairs) and the seed's
        plans no slower than ``bound`` (the search's ``initial_bound``, if any), one per shape, in
        the engine's order: a search stopped before it met the seed's plans (six GPU kinds, 60 s)
        still reports them."""
        best: dict = {}
        seeds = [(self.seeded[sid], leaf) for sid, leaf in self.seed_plans.items()
                 if bound is None or self.seeded[sid] <= bound]
        for seconds, leaf in [*solutions, *seeds]:
            if leaf[1] not in best or seconds < best[leaf[1]][0]:
                best[leaf[1]] = (seconds, leaf)
        return sorted(best.values(), key=lambda pair: (pair[0], *self.tiebreak(pair[1])))[: self.top]

    def _cut_plan(self, sid: int, rounds: int = 6) -> tuple[float, tuple | None]:
        """The time and leaf of a pipe shape whose stages are cut as long as a cap on each stage's
        steady term plus exposed time, c1 x steady + exposed, allows (each stage taking its
        memory-feasible option of least fill time under the cap), the cap bisected ``rounds``
        times: Eq. 1 is dominated by its largest stage, and memory makes the early stages (more
        micro-batches in flight) shorter, which the tree's balanced first child is not. Several
        parts (mixed GPU kinds, sites, DAPPLE's two widths) take their stages one part after
        another, in each order of ``_part_sequences``, the best kept. (inf, None) where not a pipe
        shape, under Megatron-LM's or Galvatron's stage rule (the cut knows neither), or if no cut
        fits."""
        sh = self.shapes[sid]
        pipe = sh.mode == "pipe" and not (self.train.megatron_stages or self.train.galvatron_stages)
        if not pipe or self.root_lb[sid] == math.inf:
            return math.inf, None
        return min((self._cut_in_order(sid, sequence, rounds) for sequence in self._part_sequences(sid)),
                   key=lambda plan: plan[0])

    def _cut_in_order(self, sid: int, sequence: list[int], rounds: int) -> tuple[float, tuple | None]:
        """``_cut_plan`` with stage j on part ``sequence[j]``."""
        sh = self.shapes[sid]
        n, v, c1 = self.n, sh.v, sh.c1

        def fitting(part: int, lo: int, hi: int, j: int, prev: int | None, cap: float) -> list:
            return [o for o in self._stage_options(sid, part, lo, hi, j, prev) if c1 * o[1] + o[2] <= cap]

        def cut(cap: float) -> tuple | None:
            lo, prev, stages = 0, None, []
            for j, part in enumerate(sequence):
                left = sh.p - j - 1
                # the longest stage with an option under the cap, by bisection: a longer stage
                # takes more time and memory, so where no option fits, none fits a longer one
                short, long = (n, n) if not left else (lo + v, n - left * v)
                fit = fitting(part, lo, short, j, prev, cap)
                if not fit:
                    return None
                while short < long:
                    mid = (short + long + 1) // 2
                    more = fitting(part, lo, mid, j, prev, cap)
                    if more:
                        short, fit = mid, more
                    else:
                        long = mid - 1
                _, _, _, rc, z = min(fit, key=lambda o: o[0])
                stages.append((part, short - lo, rc, z))
                lo, prev = short, part
            return tuple(stages)

        low = max(c1 * self._floors(sid, 0, self.start_counts(sid))[1], self.stage_floors[sid])
        high = max(1.05 * low, 1e-9)
        for _ in range(64):  # a cap that fits: grow from the stage floor
            stages = cut(high)
            if stages is not None:
                break
            low, high = high, high * 1.5
        else:
            return math.inf, None
        for _ in range(rounds):
            mid = (low + high) / 2
            tighter = cut(mid)
            if tighter is None:
                low = mid
            else:
                high, stages = mid, tighter
        leaf = self.rebuild(("s", sid, n, (), (), (), 0.0, stages, ()))
        return (math.inf, None) if leaf is None else (self.leaf_time(leaf)[0], leaf)

    def _part_sequences(self, sid: int) -> list[list[int]]:
        """The part of each stage of pipe shape ``sid`` in the cut: first the order of a cut that its
        several-part floor (``PartsFloor.order``) finds just above that floor, where it has one (the
        order in which memory lets the stages fit: GPT-3 on four kinds' best plan interleaves them);
        then every stage of the fastest part (``_part_rates``, as ``_slots`` orders them), then of
        the next; and the same slowest part first. Parts of one speed keep their order (a part
        starts after its twins)."""
        sh = self.shapes[sid]
        rates = self._part_rates(sid)
        out = []
        floor = self._bisect_parts_floor(sid) if len(sh.parts) > 1 else -math.inf
        core = self._parts_cores.get(sid)
        if core is not None and 0 < floor < math.inf:
            for margin in (1e-3, 1e-2, 1e-1):
                witness = core.order(floor * (1 + margin))
                if witness is not None:
                    out.append(witness)
                    break
        for sign in (-1, 1) if len(set(rates)) > 1 else (-1,):
            order = sorted(range(len(sh.parts)), key=lambda i: (sign * rates[i], i))
            sequence = [i for i in order for _ in range(sh.parts[i][1])]
            if sequence not in out:  # the floor's order may be one of these: cut it once
                out.append(sequence)
        return out

    def _first_plan(self, sid: int, budget: int) -> tuple[float, tuple | None]:
        """The time and the first leaf a depth-first walk of shape ``sid`` meets within ``budget``
        nodes ((inf, None) if none). Slots keep the tree's order (balanced stages first); a slot's
        (recompute, ZeRO) options are tried by least bound, so one costly option (ZeRO-2's exposed
        reduce-scatters) is not taken because it comes first."""
        stack = [self._dive_children(sid, self.start_node(sid))]
        while stack and budget > 0:
            child = next(stack[-1], None)
            if child is None:
                stack.pop()
                continue
            budget -= 1
            if not any(child[3]):
                seconds = self.objective(child)
                if seconds < math.inf:
                    return seconds, child
                continue
            stack.append(self._dive_children(sid, child))
        return math.inf, None

    def _dive_children(self, sid: int, node: tuple) -> Any:
        """``node``'s children in tree order of their slots, each slot's options by least bound."""
        stride = len(self._allowed(sid))
        for _, options in itertools.groupby(self._stage_children(node), key=lambda c: c[8][-1] // stride):
            yield from sorted(options, key=self.time_bound)
