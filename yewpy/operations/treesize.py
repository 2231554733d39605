"""Tree-size estimates: Knuth's path sampling (``yewpy._probe``) summed over probes and ranks,
and the recursive estimate of the open work from the part of the tree already searched.

A run's progress carries both, combined (``Sampler``: each rank probes a copy of its core and
estimates its stack and pool for a small share of the time); ``yewpy.estimate`` makes Knuth's
before a run. For an optimisation both prune against the incumbent of the moment, so the
estimate is of the tree under that incumbent; the probes start again when it improves.
"""

from __future__ import annotations

import dataclasses
import functools
import math
import os
import random
import time
from dataclasses import dataclass
from typing import Any

from yewpy._probe import Prober

#: the share of each rank's time that side probes may take during a run (YEWPY_PROBE_SHARE
#: overrides it: more probes, a tighter estimate, a slower search)
PROBE_SHARE = float(os.environ.get("YEWPY_PROBE_SHARE") or 0.02)
#: the half-width of the range, in standard errors of the mean
SPREAD = 2.0

#: (probes, sum of estimates, sum of their squares, the incumbent they pruned against or None)
Row = tuple[int, float, float, Any]
EMPTY: Row = (0, 0.0, 0.0, None)
#: (estimated nodes left, its variance, the incumbent the counts pruned against) of the open work
#: of one rank, or of many summed: the recursive estimator over the engine's stack plus the pool
Left = tuple[float, float, Any]
NOTHING_LEFT: Left = (0.0, 0.0, None)
#: Knuth probes for the tasks of a pool depth where no subtree has closed yet
POOL_PROBES = 16
#: seconds that ``Sampler.left``'s counts and probes may take beyond its share of the probes' time
LEFT_SECONDS = 0.05
#: Knuth probes needed before their estimate is combined with the recursive one
TRUSTED_PROBES = 30
#: the most nodes (as ``dump`` gives them) that the counts of unexplored children's tops hold at
#: once; a child whose next level alone is wider stops counting there
TOP_NODES = 1 << 16
#: the share of the probes' time that counting the tops of unexplored children may take
TOP_SHARE = 0.5
#: the estimator name of ``TreeSize.combined`` where Knuth's probes raised the recursive estimate
COMBINED = "kilby-2006-recursive+knuth-1975"
#: the coefficient of variation above which the subtrees closed at one depth count as heavy-tailed
#: (``heavy_tailed``): at 4, fewer than one in 17 of them, in effect, holds their nodes
HEAVY_CV = 4.0


#: the widest level of the tree's top that ``sample_subtrees`` counts before it samples below it
SAMPLE_WIDTH = 1 << 16
#: whole subtrees ``sample_subtrees`` must have searched before its estimate stands
TRUSTED_SAMPLES = 30
#: the share of its time that ``sample_subtrees`` may spend counting the top
SAMPLE_TOP_SHARE = 0.25


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
    """An estimate of a tree's node count, with a range of ``SPREAD`` standard errors: the mean of
    ``probes`` Knuth estimates, or the nodes searched plus the recursive estimate of the open work
    (``probes`` 0). ``under``: the incumbent the estimate pruned against (None: no pruning). On
    heavy-tailed trees (near-critical binomial ones) Knuth's standard error is itself
    underestimated; see docs/estimates.md."""

    probes: int
    nodes: float
    stderr: float
    under: Any = None
    estimator: str = "knuth-1975"

    @classmethod
    def recursive(cls, done: int, left: Left) -> TreeSize:
        """The ``done`` nodes searched plus the estimated open work (``Sampler.left``, summed)."""
        return cls(0, done + left[0], math.sqrt(left[1]), left[2], "kilby-2006-recursive")

    @classmethod
    def of(cls, row: Row) -> TreeSize | None:
        probes, total, total_sq, under = row
        if probes == 0:
            return None
        mean = total / probes
        var = max(total_sq / probes - mean * mean, 0.0)
        return cls(probes, mean, math.sqrt(var / probes), under)

    def combined(self, probed: TreeSize | None, done: int) -> TreeSize:
        """This recursive estimate and Knuth's ``probed`` one, weighted by the inverse of their
        variances; Knuth's only counts with ``TRUSTED_PROBES`` probes or more, only while the nodes
        searched lie inside its range (on heavy-tailed trees its variance is too small), and only
        to raise this estimate: a few probes of a heavy-tailed tree mostly miss its big subtrees,
        so a lower figure from them is likelier a miss than a correction."""
        if probed is None or probed.probes < TRUSTED_PROBES or not probed.consistent(done):
            return self
        if probed.nodes <= self.nodes:
            return self
        if not self.bounded:    # the probes' variance of a heavy-tailed tree is no tighter
            return TreeSize(probed.probes, probed.nodes, math.inf, self.under, COMBINED)
        tiny = (1e-9 * max(self.nodes, 1.0)) ** 2
        w_rec, w_probe = 1.0 / (self.stderr ** 2 + tiny), 1.0 / (probed.stderr ** 2 + tiny)
        nodes = (w_rec * self.nodes + w_probe * probed.nodes) / (w_rec + w_probe)
        return TreeSize(probed.probes, nodes, math.sqrt(1.0 / (w_rec + w_probe)), self.under, COMBINED)

    @property
    def bounded(self) -> bool:
        """False where the estimate leans on heavy-tailed subtrees (``heavy_tailed``): its range
        then has no upper end."""
        return math.isfinite(self.stderr)

    def at_least(self, done: int) -> float:
        """The estimate, never below the ``done`` nodes already searched."""
        return max(self.nodes, float(done))

    def consistent(self, done: int) -> bool:
        """False when the nodes already searched exceed the whole range: the probes have missed
        the heavy tail of the tree, and the estimate is only the lower bound ``done``."""
        return done <= self.nodes + SPREAD * self.stderr

    def range(self, done: int = 0) -> tuple[float, float]:
        """Low and high node counts; never below the ``done`` nodes already searched (high is
        infinite where the estimate is not ``bounded``)."""
        low = max(self.nodes - SPREAD * self.stderr, float(done), 1.0)
        return low, max(self.nodes + SPREAD * self.stderr, low)

    def left(self, done: int, rate: float) -> tuple[float, float, float] | None:
        """Seconds left at ``rate`` nodes per second: (estimate, low, high), or None."""
        if rate <= 0:
            return None
        low, high = self.range(done)
        return ((self.at_least(done) - done) / rate, (low - done) / rate, (high - done) / rate)

    def to_dict(self, done: int = 0) -> dict:
        """The estimate for JSON: ``high`` is null where the range has no upper end."""
        low, high = self.range(done)
        return {"nodes": self.at_least(done), "low": low, "high": finite_or_none(high),
                "heavy_tailed": not self.bounded, "probes": self.probes,
                "consistent": self.consistent(done), "estimator": self.estimator,
                "under_incumbent": self.under}


def finite_or_none(value: float) -> float | None:
    """``value``, or None where it is infinite (JSON has no infinity)."""
    return value if math.isfinite(value) else None


@dataclass
class Subtrees:
    """What ``sample_subtrees`` saw: the nodes of the tree's top (the root and every level down to
    the deepest counted), the number of that level's nodes the engine expands (``width``), the
    sizes of those nodes' subtrees searched whole (the node itself not counted), and ``cut``, the
    nodes counted in the one that time cut short (0 if none). ``complete``: the top is the tree."""

    top: int
    width: int
    sizes: list
    cut: int = 0
    complete: bool = False

    def merged(self, other: Subtrees) -> Subtrees:
        """Two ranks' samples of one top (each rank searched its own slice of one order)."""
        return Subtrees(self.top, self.width, self.sizes + other.sizes, max(self.cut, other.cut),
                        self.complete)

    def tree(self, under: Any = None) -> TreeSize | None:
        """The estimate: the top plus ``width`` times the mean subtree, with the standard error of a
        sample drawn without replacement, or none where the sample is heavy-tailed (``heavy_tailed``:
        the range has no upper end); None with fewer than two subtrees. The one cut short is left
        out of the mean; ``trusted`` asks whether it would have moved it."""
        size = self._with_sample_error(under)
        if size is None or not size.stderr or not heavy_tailed(len(self.sizes), sum(self.sizes),
                                                               sum(x * x for x in self.sizes)):
            return size
        return dataclasses.replace(size, stderr=math.inf)

    def _with_sample_error(self, under: Any = None) -> TreeSize | None:
        """``tree`` with the sample's standard error, heavy-tailed or not."""
        if self.complete:
            return TreeSize(0, float(self.top), 0.0, under, SAMPLED)
        n = len(self.sizes)
        if n < 2:
            return None
        mean = sum(self.sizes) / n
        var = sum((x - mean) ** 2 for x in self.sizes) / (n - 1)
        left = max(1.0 - n / self.width, 0.0)           # all searched: exact
        return TreeSize(n, self.top + self.width * mean, self.width * math.sqrt(var / n * left), under,
                        SAMPLED)

    def trusted(self, done: int) -> bool:
        """Whether the estimate stands: exact, or ``TRUSTED_SAMPLES`` subtrees or more, the nodes
        ``done`` inside its range, and the subtree cut short too small to move the mean out of it
        (where it would, the level's subtrees are heavy-tailed and the sample missed the tail)."""
        if self.complete:
            return True
        size = self._with_sample_error()
        if size is None or size.probes < TRUSTED_SAMPLES:
            return False
        n = len(self.sizes)
        with_cut = self.top + self.width * (sum(self.sizes) + self.cut) / (n + 1)
        return size.consistent(done) and with_cut <= size.nodes + SPREAD * size.stderr


#: the estimator name of ``Subtrees.tree``
SAMPLED = "sampled-subtrees"


def merge_subtrees(parts: list) -> Subtrees | None:
    """The ranks' ``sample_subtrees`` as one: those of the level the first rank that has one
    reached (a rank whose time for the top ran out at another level is left out: its subtrees
    are of another level); None where no rank has one."""
    kept = [part for part in parts if part is not None]
    if not kept:
        return None
    same = [part for part in kept if (part.top, part.width) == (kept[0].top, kept[0].width)]
    return functools.reduce(Subtrees.merged, same)


def sample_subtrees(prober: Any, incumbent: Any, seconds: float, width: int = SAMPLE_WIDTH,
                    seed: int = 1, rank: int = 0, ranks: int = 1, most: int = -1) -> Subtrees | None:
    """The tree's top counted breadth first, level by level, down to the deepest level of at most
    ``width`` nodes the engine expands (for ``SAMPLE_TOP_SHARE`` of ``seconds`` at most), then the
    subtrees of that level's nodes searched whole (``Prober.size``, under ``incumbent`` held fixed)
    in one random order (``seed``, the same on every rank; rank r takes places r, r + ranks, ...)
    until ``seconds`` run out (or ``most`` are searched, -1: no limit). The sample is uniform over
    the level, wherever in the tree its nodes lie; the short search's own subtrees all lie at the
    tree's start, which, where subtree sizes follow the order of the children (maximum clique's
    colour order), sizes the rest wrongly. None where even the root's children are more than
    ``width``, or the time ran out before they were counted."""
    start = time.perf_counter()
    level, depth, top = [None], 0, 1
    end = start + SAMPLE_TOP_SHARE * seconds
    while (counted := _next_level(prober, level, depth, incumbent, width, end)) is not None:
        below, generated = counted
        top += generated
        if not below:
            return Subtrees(top, 0, [], complete=True)
        level, depth = below, depth + 1
    if depth == 0:
        return None
    order = list(range(len(level)))
    random.Random(seed).shuffle(order)
    sizes: list[int] = []
    end = start + seconds
    for place in order[rank::ranks][:most if most >= 0 else None]:
        size = prober.size(level[place], depth, incumbent, max(end - time.perf_counter(), 0.0))
        if size < 0:
            return Subtrees(top, len(level), sizes, -1 - size)
        sizes.append(size)
    return Subtrees(top, len(level), sizes)


def _next_level(prober: Any, level: list, depth: int, incumbent: Any, width: int, end: float) -> tuple | None:
    """The nodes the engine expands one level below ``level`` (at ``depth``; [None]: the root) and
    the count of all it generates there; None where they are more than ``width`` or the clock
    passes ``end`` first."""
    below: list = []
    generated = 0
    for node in level:
        children = prober.expand(node, depth, incumbent)
        generated += len(children)
        below.extend(child for child in children if child is not None)
        if len(below) > width or time.perf_counter() >= end:
            return None
    return below, generated


def merge_left(a: Left, b: Left, sign: float) -> Left:
    """Two ranks' open work as one; labelled with the better incumbent of the two."""
    under = a[2] if b[2] is None or (a[2] is not None and sign * a[2] >= sign * b[2]) else b[2]
    return (a[0] + b[0], a[1] + b[1], under)


def _closed_at(closed: list, depth: int) -> tuple[float, float, float]:
    """(count, mean, variance) of the subtrees closed at ``depth`` (zeros where none has); the
    variance is infinite where they are heavy-tailed (``heavy_tailed``)."""
    if depth >= len(closed) or closed[depth][0] == 0:
        return 0.0, 0.0, 0.0
    n, total, total_sq = closed[depth]
    mean = total / n
    if heavy_tailed(n, total, total_sq):
        return n, mean, math.inf
    return n, mean, max(total_sq / n - mean * mean, 0.0)


def heavy_tailed(n: float, total: float, total_sq: float) -> bool:
    """Whether ``n`` subtree sizes (their sum and sum of squares) vary by more than ``HEAVY_CV``
    times their mean: then a few of them hold most of their nodes, as on near-critical binomial
    trees, and an unexplored sibling may be far bigger than any of them. Their variance says
    nothing about how much bigger, so an estimate that counts on their mean has no upper end."""
    return n > 1 and n * total_sq > (1.0 + HEAVY_CV * HEAVY_CV) * total * total


def closed_enough(closed: list, depth: int) -> bool:
    """True when enough subtrees have closed at ``depth`` for their variance to mean something."""
    return depth < len(closed) and closed[depth][0] >= 2


class TopLevels:
    """The top of an unexplored subtree counted exactly, breadth first, a level at a time: per
    level, the nodes the engine generates and those it expands. Near the root few subtrees have
    closed and their mean size is mostly luck (a geometric tree's is dominated by rare big ones);
    counting a child's top levels and sizing only its deepest counted level by the closed strata
    there, which are well sampled, pins the estimate down (``stack_left``)."""

    def __init__(self, prober: Any, node: Any, depth: int, width: int = TOP_NODES) -> None:
        self.prober = prober
        self.depth = depth                          # of ``node``, the subtree's root
        self.width = width
        expanded = node is not None
        self.generated = [1]                        # per level counted: nodes generated
        self.expanded = [int(expanded)]             # and those the engine expands
        self.level: list = [node] if expanded else []   # the deepest counted level's expanded nodes
        self.cursor = 0                             # how many of them are expanded so far
        self.below: list = []                       # their expanded children so far
        self.below_generated = 0                    # and all their children so far
        self.complete = not expanded                # the whole subtree is counted
        self.stopped = False                        # the next level is wider than ``width``

    @property
    def growing(self) -> bool:
        return not (self.complete or self.stopped)

    @property
    def held(self) -> int:
        """The nodes this count keeps for its next level."""
        return len(self.level) + len(self.below)

    def release(self) -> None:
        """Stop counting and drop the nodes kept for it."""
        self.stopped = self.stopped or not self.complete
        self.level = self.below = []

    def grow(self, end: float, incumbent: Any, room: float = math.inf) -> None:
        """Count the next level under ``incumbent``, or as much of it as time allows before
        ``end`` (``time.perf_counter``) while this count holds at most about ``room`` nodes; the
        next call goes on from there."""
        depth = self.depth + len(self.generated) - 1
        expand = self.prober.expand
        level = self.level
        limit = self.held + room
        for i in range(self.cursor, len(level)):
            if self.held > limit:
                return                      # no more room until counts elsewhere end
            children = expand(level[i], depth, incumbent)
            self.below_generated += len(children)
            self.below.extend(child for child in children if child is not None)
            self.cursor = i + 1
            if len(self.below) > self.width:
                self.stopped = True
                self.level = self.below = []
                return
            if i % 64 == 63 and time.perf_counter() >= end:
                return
        self.generated.append(self.below_generated)
        self.expanded.append(len(self.below))
        self.level, self.below, self.cursor, self.below_generated = self.below, [], 0, 0
        self.complete = not self.level

    def size(self, closed: list) -> tuple[float, float] | None:
        """(nodes, variance) of the subtree: its counted levels down to the deepest one where
        subtrees have closed (``closed_enough``), and below that level's expanded nodes each as
        big as the mean subtree closed there; exact once it is all counted. None where no counted
        level has closed subtrees."""
        if self.complete:
            return float(sum(self.generated)), 0.0
        # the subtrees closed at a deep level lie in the few closed at this child's depth, and
        # their mean is only as sure as that many independent samples make it
        clusters = max(_closed_at(closed, self.depth)[0], 1.0)
        for j in range(len(self.generated) - 1, -1, -1):
            if closed_enough(closed, self.depth + j):
                n, mean, v = _closed_at(closed, self.depth + j)
                wide = self.expanded[j]
                return (sum(self.generated[:j + 1]) + wide * (mean - 1.0),
                        wide * v + wide * wide * v / min(n, clusters))
        return None


def stack_left(frames: list, closed: list, count: Any, probe: Any, tops: Any = None) -> tuple[float, float]:
    """The open work on an engine's stack, estimated from what it has searched: the recursive
    estimator of Kilby, Slaney, Thiebaux and Walsh ("Estimating search tree size", AAAI 2006),
    with Chen's strata ("Heuristic sampling", SIAM J. Comput. 21, 1992) by depth. Each frame's
    children not yet generated are as big as the mean subtree closed at their depth; where none
    has closed, as the mean of the frame's own children searched so far; where there are none, as
    Knuth probes from the frame say. Where a child's top levels are counted (``TopLevels``), its
    size is its own. The open child is its own frame, so the estimate is a sum over the frames and
    stays finite on stacks thousands of frames deep, where products of branching factors overflow.

    ``frames`` and ``closed`` are ``Engine.frontier()``; ``count(f)`` is the number of children
    the engine generates at frame f, ``probe(f)`` the mean of Knuth probes of its subtree, and
    ``tops(f)`` the ``TopLevels`` of each of frame f's children in order, or None.
    Returns (nodes left, variance)."""
    left = var = 0.0
    for f, (depth, _, explored, generated, away, exhausted) in enumerate(frames):
        if exhausted:
            continue
        children_count = count(f)       # once: a core with a dominance memo may count less again
        unexplored = children_count - generated
        if unexplored <= 0:
            continue
        children = tops(f) if tops is not None else None
        if children is not None:
            rest = 0
            for top in children[generated:]:
                sized = top.size(closed)
                if sized is None:
                    rest += 1
                else:
                    left += sized[0]
                    var += sized[1]
            unexplored = rest
            if rest == 0:
                continue
        n, mean, v = _closed_at(closed, depth + 1)
        if n == 0:
            open_child = frames[f + 1][2] if f + 1 < len(frames) else 0
            searched = generated - away - (1 if open_child else 0)
            if searched > 0:
                n, mean = searched, (explored - 1 - away - open_child) / searched
            else:
                n, mean = POOL_PROBES, (probe(f) - 1.0) / children_count
        if not closed_enough(closed, depth + 1):
            v = mean * mean                 # a geometric guess until subtrees have closed there
        left += unexplored * mean
        var += unexplored * v + unexplored * unexplored * v / n
    return left, var


def pool_left(tasks: list, closed: list, probe: Any) -> tuple[float, float]:
    """The tasks waiting in a pool: each as big as the mean subtree closed at its depth, or, at a
    depth where none has closed, the mean of Knuth probes from one of them (``probe(node,
    depth)``). A task's own node is already counted. Returns (nodes left, variance)."""
    by_depth: dict[int, list] = {}
    for depth, node in tasks:
        by_depth.setdefault(depth, []).append(node)
    left = var = 0.0
    for depth, nodes in by_depth.items():
        k = len(nodes)
        n, mean, v = _closed_at(closed, depth)
        if n == 0:
            n, mean = POOL_PROBES, probe(nodes[k // 2], depth)
        if not closed_enough(closed, depth):
            v = mean * mean
        left += k * (mean - 1.0)
        var += k * v + k * k * v / n
    return left, var


class Sampler:
    """One rank's side probes during a run, on a core that no engine uses."""

    def __init__(self, core: Any, options: dict, seed: int, top_width: int = TOP_NODES) -> None:
        self.prober = Prober(core, max_depth=options.get("max_depth"),
                             prune_level=bool(options.get("prune_level")), target=options.get("target"),
                             seed=seed)
        self.top_width = top_width          # the nodes the counts may hold; 0: none is counted
        self.under: Any = None
        self.spent = 0.0
        self.counts: dict = {}              # an open frame's child count, while it stays open
        self.tops: dict = {}                # an open frame's children's ``TopLevels``, likewise
        self.last: tuple | None = None      # (nodes searched, left, variance, incumbent) last time

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

    def left(self, engine: Any, pool: Any, elapsed: float, counting: float | None = None) -> Left:
        """The estimated nodes left in this rank's open work (stack and pool), from the part of the
        tree it has searched. It shares the probes' time: once that is spent, the last estimate
        less the nodes searched since stands in. ``counting``: the seconds that counting the tops
        of unexplored children may take (None: ``TOP_SHARE`` of what is left of the share)."""
        if counting is None and self.spent > PROBE_SHARE * elapsed and self.last is not None:
            nodes, left, var, under = self.last
            return (max(left - (engine.nodes - nodes), 0.0), var, under)
        started = time.perf_counter()
        incumbent = engine.incumbent
        prober = self.prober
        frames, closed = engine.frontier()
        known, self.counts = self.counts, {}
        known_tops, self.tops = self.tops, {}

        def key(f: int) -> tuple:
            depth, opened = frames[f][:2]
            return (depth, opened, incumbent)           # names the frame while it stays open

        # the counts and probes below stop at ``deadline``: a stack a hundred thousand frames deep,
        # each frame with thousands of children, would hold the search far past --time-limit
        deadline = started + max(PROBE_SHARE * elapsed - self.spent, 0.0) + LEFT_SECONDS
        if counting is not None:                    # the counts get their share after the tops'
            deadline += counting

        def count(f: int) -> int:
            found = self.counts.get(key(f), known.get(key(f)))
            if found is None:
                if time.perf_counter() >= deadline:
                    return frames[f][3]             # no time: its unexplored children count as none
                found = prober.count(engine.frame_node(f), frames[f][0], incumbent)
            self.counts[key(f)] = found
            return found

        def probe(node: Any, depth: int) -> float:
            seconds = max(deadline - time.perf_counter(), 0.0)
            return prober.mean_from(node, depth, POOL_PROBES, incumbent, seconds)

        def probe_frame(f: int) -> float:
            return probe(engine.frame_node(f), frames[f][0])

        # count the tops of unexplored children: passes over the frames, shallowest first, each
        # a level deeper, while time is left and they hold fewer than ``top_width`` nodes in all
        for f, frame in enumerate(frames):
            children = known_tops.get(key(f))
            if children is not None:
                self.tops[key(f)] = children
                for top in children[:frame[3]]:             # searched or open: not needed now
                    top.release()
        held = sum(top.held for children in self.tops.values() for top in children)
        if counting is None:
            counting = TOP_SHARE * max(PROBE_SHARE * elapsed - self.spent, 0.0)
        end = started + counting
        grew = self.top_width > 0
        while grew and held < self.top_width and time.perf_counter() < end:
            grew = False
            for f, (depth, _, _, generated, _, exhausted) in enumerate(frames):
                if held >= self.top_width or time.perf_counter() >= end:
                    break
                if exhausted:
                    continue
                children = self.tops.get(key(f))
                if children is None:
                    children = [TopLevels(prober, node, depth + 1, self.top_width)
                                for node in prober.expand(engine.frame_node(f), depth, incumbent)]
                    self.counts[key(f)] = len(children)
                    self.tops[key(f)] = children
                    for top in children[:generated]:
                        top.release()
                    held += sum(top.held for top in children[generated:])
                    grew = True
                for top in children[generated:]:
                    if top.growing and held < self.top_width:
                        before, levels = top.held, len(top.generated)
                        top.grow(end, incumbent, self.top_width - held)
                        held += top.held - before
                        grew = grew or len(top.generated) > levels
                    if time.perf_counter() >= end:
                        break

        stack, stack_var = stack_left(frames, closed, count, probe_frame,
                                      lambda f: self.tops.get(key(f)))
        tasks, tasks_var = pool_left(pool.tasks() if pool is not None else [], closed, probe)
        self.spent += time.perf_counter() - started
        self.last = (engine.nodes, stack + tasks, stack_var + tasks_var, incumbent)
        return self.last[1:]

    def row(self) -> Row:
        p = self.prober
        return (p.probes, p.total, p.total_sq, self.under)
