# cython: language_level=3, boundscheck=False, wraparound=False, cdivision=True
"""Knuth's path sampling (D. E. Knuth, "Estimating the efficiency of backtrack programs", Math.
Comp. 29, 1975) on any core: random root-to-leaf probes whose weighted child counts estimate the
number of nodes the engine would visit.

A probe walks one path, choosing each step uniformly among the children the engine would expand.
At a node whose path so far had e_0, e_1, ... expandable children, its g generated children stand
for e_0 e_1 ... g nodes; the sum over the path (plus the root) is an unbiased estimate of the
node count, because the engine's own rule says which children are generated (all of them, or up
to the first that fails its bound under ``prune_level``) and which are expanded (those that pass
their bound, above ``max_depth``). A core is probed on its own frames, so give a prober a core that
no engine is using.
"""

from libc.stdint cimport uint64_t
from posix.time cimport CLOCK_MONOTONIC, clock_gettime, timespec

from yewpy.core cimport KIND_DECISION, KIND_OPTIMISATION, Core

cdef enum Step:
    EXPAND = 0
    LEAF = 1
    STOP = 2            # a failed bound under prune_level: the generator ends here


cdef inline double _now() noexcept nogil:
    cdef timespec ts
    clock_gettime(CLOCK_MONOTONIC, &ts)
    return ts.tv_sec + ts.tv_nsec * 1e-9


cdef class Prober:
    """Probes of one core's tree; ``probes``, ``total`` and ``total_sq`` accumulate the estimates."""

    cdef Core core
    cdef int kind
    cdef long long max_depth
    cdef bint prune_level
    cdef double target
    cdef int frames
    cdef uint64_t state
    cdef readonly long long probes
    cdef readonly double total, total_sq
    cdef readonly long long deepest

    def __init__(self, Core core, max_depth=None, bint prune_level=False, target=None,
                 seed=1):
        self.core = core
        self.kind = core.kind
        self.max_depth = (1 << 62) if max_depth is None else max_depth
        self.prune_level = prune_level
        self.target = core.sign * target if target is not None else 0.0
        self.frames = 0
        self.state = <uint64_t>((seed * 0x9E3779B97F4A7C15 + 0x632BE59BD9B4E019) & 0xFFFFFFFFFFFFFFFF)
        if self.state == 0:
            self.state = 1
        self.reset()

    def reset(self):
        """Forget the probes so far (the bound they pruned against has changed)."""
        self.probes = 0
        self.total = self.total_sq = 0.0
        self.deepest = 0

    cdef inline uint64_t _random(self) noexcept nogil:
        # xorshift64*: fast, and a probe needs only a uniform choice among a few children
        self.state ^= self.state >> 12
        self.state ^= self.state << 25
        self.state ^= self.state >> 27
        return self.state * 0x2545F4914F6CDD1DULL

    cdef int _frames(self, int frames) except -1:
        if frames > self.frames:
            self.frames = max(frames, 2 * self.frames)
            self.core.reserve(self.frames)
        return 0

    cdef int _step(self, int c, double inc, bint has_inc) except -1:
        """What the engine does with the node just generated at frame c (its ``_visit``)."""
        cdef Core core = self.core
        if not core.has_bound:
            return EXPAND
        if self.kind == KIND_DECISION:
            if core.sign * core.bound(c) < self.target:
                return STOP if self.prune_level else LEAF
        elif self.kind == KIND_OPTIMISATION and has_inc:
            if core.sign * core.bound(c) <= inc:
                return STOP if self.prune_level else LEAF
        return EXPAND

    cdef int _begin(self, object node) except -1:
        """Frame 0 := ``node`` (None: the root), with what the core learnt from other nodes
        forgotten (``Core.forget``): the prober visits nodes from all over the tree."""
        if node is None:
            self.core.set_root()
        else:
            self.core.load(node)
        return self.core.forget()

    cdef double _probe(self, double inc, bint has_inc, object start=None,
                       long long start_depth=0, double end=-1.0) except -1:
        """One probe from the root, or from ``start``, a node at ``start_depth``; with ``end``
        (> 0, a ``_now()`` time) the path stops there, its estimate so far (a path a hundred
        thousand nodes deep, each with thousands of children, takes minutes)."""
        cdef Core core = self.core
        cdef int f = 0, step
        cdef long long depth = start_depth, generated, expandable, chosen, seen
        cdef double estimate = 1.0, weight = 1.0
        self._frames(2)
        self._begin(start)
        while depth + 1 < self.max_depth:
            if end > 0 and _now() >= end:
                break
            self._frames(f + 2)
            core.open(f)
            generated = expandable = 0
            while core.next(f, f + 1):
                generated += 1
                step = self._step(f + 1, inc, has_inc)
                if step == EXPAND:
                    expandable += 1
                elif step == STOP:
                    break
            estimate += weight * generated
            if expandable == 0:
                break
            chosen = <long long>(self._random() % <uint64_t>expandable)
            core.open(f)                # again, to stop at the chosen child
            seen = -1
            while core.next(f, f + 1):
                if self._step(f + 1, inc, has_inc) == EXPAND:
                    seen += 1
                    if seen == chosen:
                        break
            weight *= expandable
            f += 1
            depth += 1
        if depth > self.deepest:
            self.deepest = depth
        return estimate

    cdef long long _scan(self, object node, long long depth, object incumbent, bint root,
                         list out) except -1:
        """How many children the engine generates at ``node`` (at ``depth``; ``root``: the root
        instead) under ``incumbent``; with ``out``, each is appended to it as a node (``dump``)
        where the engine would expand it, None where its bound cuts it off."""
        cdef Core core = self.core
        cdef double inc = core.sign * incumbent if incumbent is not None else 0.0
        cdef bint has_inc = incumbent is not None
        cdef long long generated = 0
        cdef int step
        if depth + 1 >= self.max_depth:
            return 0
        self._frames(2)
        self._begin(None if root else node)
        core.open(0)
        while core.next(0, 1):
            generated += 1
            step = self._step(1, inc, has_inc)
            if out is not None:
                out.append(core.dump(1) if step == EXPAND else None)
            if step == STOP:
                break
        return generated

    def count(self, node, long long depth, incumbent=None):
        """The children the engine generates at ``node`` (at ``depth``) under ``incumbent``: all of
        them, or under ``prune_level`` those up to the first that fails its bound."""
        return self._scan(node, depth, incumbent, False, None)

    def expand(self, node, long long depth, incumbent=None):
        """The children the engine generates at ``node`` (at ``depth``; None: the root) under
        ``incumbent``, in order, as ``count`` counts them: each as a node (``dump``) where the
        engine would expand it, None where its bound cuts it off."""
        cdef list children = []
        self._scan(node, depth, incumbent, node is None, children)
        return children

    def size(self, node, long long depth, incumbent=None, double seconds=-1.0):
        """The nodes the engine generates below ``node`` (at ``depth``; the node itself not counted)
        under ``incumbent`` held fixed, depth first; where ``seconds`` (>= 0) run out first, minus
        one less the nodes counted by then."""
        cdef Core core = self.core
        cdef double inc = core.sign * incumbent if incumbent is not None else 0.0
        cdef bint has_inc = incumbent is not None
        cdef double end = _now() + seconds
        cdef long long generated = 0
        cdef int f = 0, step
        if depth + 1 >= self.max_depth:
            return 0
        self._frames(2)
        self._begin(node)
        core.open(0)
        while f >= 0:
            if not core.next(f, f + 1):
                f -= 1
                continue
            generated += 1
            if seconds >= 0 and (generated & 1023) == 0 and _now() >= end:
                return -1 - generated
            step = self._step(f + 1, inc, has_inc)
            if step == STOP:
                f -= 1                  # under prune_level the generator ends at a failed bound
            elif step == EXPAND and depth + f + 2 < self.max_depth:
                f += 1
                self._frames(f + 2)
                core.open(f)
        return generated

    def mean_from(self, node, long long depth, long long probes, incumbent=None, double seconds=-1.0):
        """The mean of ``probes`` probes of the subtree under ``node`` (at ``depth``), node included;
        these do not count among the probes of the whole tree. With ``seconds`` >= 0, the probes
        made or cut short by then (at least one: with no time left, the node alone, 1.0)."""
        cdef double inc = self.core.sign * incumbent if incumbent is not None else 0.0
        cdef bint has_inc = incumbent is not None
        cdef double total = 0.0, end = _now() + seconds if seconds >= 0 else -1.0
        cdef long long k, made = 0
        for k in range(probes):
            total += self._probe(inc, has_inc, node, depth, end)
            made += 1
            if end > 0 and _now() >= end:
                break
        return total / made if made > 0 else 0.0

    def run(self, double seconds, incumbent=None, long long most=-1):
        """Probe for about ``seconds`` (at least one probe; at most ``most``, -1: no limit), pruning
        against ``incumbent`` (an objective) as the engine would. Returns the probes made."""
        cdef double inc = self.core.sign * incumbent if incumbent is not None else 0.0
        cdef bint has_inc = incumbent is not None
        cdef double x, end = _now() + seconds
        cdef long long made = 0
        while True:
            x = self._probe(inc, has_inc)
            self.probes += 1
            self.total += x
            self.total_sq += x * x
            made += 1
            if made == most or _now() >= end:
                return made
