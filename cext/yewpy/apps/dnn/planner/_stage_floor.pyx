# cython: language_level=3, boundscheck=False, wraparound=False, cdivision=True
"""Compiled core of the planner's memory-aware stage floor (``yewpy.apps.dnn.planner.stage_floor``).

Cuts of blocks [0, n) into p pipeline stages (empty ones allowed): stage j may take blocks [lo, hi)
under a mode when they fit in memory at its in-flight count and the mode's cost, the largest of
prefix[hi] - prefix[lo] + offset over its terms, is at most a cap.
"""

import numpy

cimport cython
from libc.stdlib cimport calloc, free, malloc

cdef double INF = float("inf")
cdef enum:
    MAX_TERMS = 6  # a mode's cost is the largest of at most this many prefix-sum differences


cdef inline int _reach(const double* prefix, double limit, int lo, int n) noexcept nogil:
    """The largest hi in [lo, n] with prefix[hi] <= limit (prefix non-decreasing; lo - 1 if even
    prefix[lo] exceeds it): Python's bisect_right(prefix, limit, lo, n + 1) - 1."""
    cdef int low = lo, high = n + 1, mid
    while low < high:
        mid = (low + high) >> 1
        if limit < prefix[mid]:
            high = mid
        else:
            low = mid + 1
    return low - 1


cdef const double[::1] _doubles(values, int width):
    """``values`` (a prefix array) as contiguous doubles, ``width`` of them, copied only if need be
    (a float64 array, as the planner's are, is read in place: a modes' set has thousands)."""
    cdef const double[::1] out
    try:
        out = values
    except (TypeError, ValueError, BufferError):
        out = numpy.ascontiguousarray(values, dtype=numpy.float64)
    if out.shape[0] != width:
        raise ValueError("a stage-floor prefix array has n + 1 entries")
    return out


cdef class _Bisected:
    """The least cap at which a cut exists, by bisection: ``_least`` over ``_cut_at``, which a
    subclass answers for the start its public ``least`` set."""

    cdef bint _cut_at(self, double cap) noexcept:
        return False

    cdef double _least(self, double low, double high, int steps) noexcept:
        """A lower bound on the least cap that cuts, given that ``low`` does not and ``high`` does (or
        is inf): ``steps`` bisections, after doubling ``high`` until it cuts; inf if none does."""
        cdef double mid
        if high == INF:
            high = 1.5 * low if low > 0 else 1e-9
            if not self._cut_at(high):
                if not self._cut_at(INF):  # asked once: no cap below inf can cut
                    return INF
                low, high = high, 2 * high
                while not self._cut_at(high):
                    low, high = high, 2 * high
        for _ in range(steps):
            mid = (low + high) / 2
            if self._cut_at(mid):
                high = mid
            else:
                low = mid
        return low


cdef class ModeSet:
    """Floor modes (``stage_floor.Mode``) over prefix arrays of ``width`` entries, packed once: the
    floors of shapes whose modes are the same read one copy."""

    cdef int modes, width
    cdef double* terms      # per mode: up to MAX_TERMS prefix arrays of width
    cdef double* offsets    # per mode: MAX_TERMS offsets
    cdef int* nterms        # per mode: 1 to MAX_TERMS
    cdef double* act        # per mode: activation prefix of width
    cdef double* scalars    # per mode: working set, state, expert state, gather

    def __cinit__(self, list modes, int width):
        cdef int i, m, k, w = width
        cdef const double[::1] prefix, act
        self.modes, self.width = len(modes), width
        self.terms = <double*> malloc(max(1, self.modes) * MAX_TERMS * w * sizeof(double))
        self.offsets = <double*> malloc(max(1, self.modes) * MAX_TERMS * sizeof(double))
        self.nterms = <int*> malloc(max(1, self.modes) * sizeof(int))
        self.act = <double*> malloc(max(1, self.modes) * w * sizeof(double))
        self.scalars = <double*> malloc(max(1, self.modes) * 4 * sizeof(double))
        if not self.terms or not self.offsets or not self.nterms or not self.act or not self.scalars:
            raise MemoryError()
        for m, mode in enumerate(modes):
            terms = mode.terms
            if not 1 <= len(terms) <= MAX_TERMS:
                raise ValueError(f"a stage-floor mode has 1 to {MAX_TERMS} terms")
            self.nterms[m] = len(terms)
            for k, (values, offset) in enumerate(terms):
                self.offsets[MAX_TERMS * m + k] = offset
                prefix = _doubles(values, w)
                for i in range(w):
                    self.terms[(MAX_TERMS * m + k) * w + i] = prefix[i]
            act = _doubles(mode.act, w)
            for i in range(w):
                self.act[m * w + i] = act[i]
            self.scalars[4 * m] = mode.working_set
            self.scalars[4 * m + 1] = mode.state
            self.scalars[4 * m + 2] = mode.state_e
            self.scalars[4 * m + 3] = mode.gather

    def __dealloc__(self):
        free(self.terms)
        free(self.offsets)
        free(self.nterms)
        free(self.act)
        free(self.scalars)

    def __len__(self) -> int:
        return self.modes


@cython.no_gc_clear  # ``packed`` stays set until it is freed: the cut loops read it without checks
cdef class StageFloor(_Bisected):
    """Cuts of blocks [0, n) into ``len(inflight)`` stages under ``modes`` (``stage_floor.Mode``s, or
    a ``ModeSet`` of them): ``cuts(cap)`` and ``least(low, high, steps)``."""

    cdef int n, p, modes, width
    cdef int at_lo, at_first  # where ``least`` cuts from
    cdef double t, usable
    cdef double* params
    cdef double* expert
    cdef double* inflight
    cdef ModeSet packed     # the modes
    cdef int* last          # per stage: the mode that reached furthest the last time it was cut

    def __cinit__(self, modes, const double[::1] params, const double[::1] expert, double t, double usable,
                  inflight):
        cdef int i
        self.n = params.shape[0] - 1
        self.p = len(inflight)
        self.width = self.n + 1
        self.t, self.usable = t, usable
        self.packed = modes if isinstance(modes, ModeSet) else ModeSet(list(modes), self.width)
        if self.packed.width != self.width:
            raise ValueError("a stage floor's modes have n + 1 prefix entries")
        self.modes = self.packed.modes
        self.params = <double*> malloc(self.width * sizeof(double))
        self.expert = <double*> malloc(self.width * sizeof(double))
        self.inflight = <double*> malloc(max(1, self.p) * sizeof(double))
        self.last = <int*> calloc(max(1, self.p), sizeof(int))
        if not self.params or not self.expert or not self.inflight or not self.last:
            raise MemoryError()
        for i in range(self.width):
            self.params[i] = params[i]
            self.expert[i] = expert[i]
        for i in range(self.p):
            self.inflight[i] = inflight[i]

    def __dealloc__(self):
        free(self.params)
        free(self.expert)
        free(self.inflight)
        free(self.last)

    cdef inline bint _fits(self, int m, int j, int lo, int hi) noexcept nogil:
        """Whether blocks [lo, hi) fit in memory as stage j under mode m."""
        cdef double experts = (self.expert[hi] - self.expert[lo]) / self.t
        cdef double dense = (self.params[hi] - self.params[lo]) / self.t - experts
        cdef const double* s = self.packed.scalars + 4 * m
        cdef const double* a = self.packed.act + m * self.width
        return (dense * s[1] + experts * s[2] + s[3] + (a[hi] - a[lo]) * self.inflight[j] + s[0]
                <= self.usable)

    cdef int _mode_reach(self, int m, double cap, int pos, int j, int best) noexcept nogil:
        """How far stage j starting at block ``pos`` may reach under mode m at cost <= cap within its
        memory, if past ``best``; else ``best``."""
        cdef int n = self.n, w = self.width, k, hi = n, low, high, mid
        cdef const double* prefix
        for k in range(self.packed.nterms[m]):  # only a reach past ``best`` matters: search from there
            prefix = self.packed.terms + (MAX_TERMS * m + k) * w
            hi = min(hi, _reach(prefix, prefix[pos] + cap - self.packed.offsets[MAX_TERMS * m + k], best, n))
            if hi <= best:
                return best
        if not self._fits(m, j, pos, hi):
            if not self._fits(m, j, pos, best + 1):
                return best
            low, high = best + 1, hi  # fits(low), not fits(high): memory grows with hi
            while high - low > 1:
                mid = (low + high) >> 1
                if self._fits(m, j, pos, mid):
                    low = mid
                else:
                    high = mid
            hi = low
        return hi

    cdef int _reach_stage(self, double cap, int pos, int j) noexcept nogil:
        """How far stage j starting at block ``pos`` may reach under some mode of cost <= cap that
        fits its memory (``pos`` itself: the stage left empty). The mode that reached furthest for
        this stage last time goes first: the others then mostly stop at their first term."""
        cdef int m, reach, first = self.last[j], best
        if self.modes == 0:
            return pos
        best = self._mode_reach(first, cap, pos, j, pos)
        for m in range(self.modes):
            if m != first:
                reach = self._mode_reach(m, cap, pos, j, best)
                if reach > best:
                    best, self.last[j] = reach, m
        return best

    cdef bint _cuts(self, double cap, int pos, int first) noexcept nogil:
        cdef int n = self.n, j
        if pos >= n:
            return True
        for j in range(first, self.p):
            pos = self._reach_stage(cap, pos, j)  # an empty stage where nothing fits: see ``cuts``
            if pos >= n:
                return True
        return False

    def cuts(self, double cap, int lo=0, int first=0) -> bool:
        """Whether some cut of blocks [lo, n) into stages ``first`` .. p - 1, empty ones allowed, has
        every stage fitting under a mode of cost <= cap. Greedy: each stage as far as any mode takes
        it. A stage's least cost never falls as it gains blocks (nor as it loses its first ones), so
        after each stage the greedy reaches at least as far as any such cut; where it is already
        further, it may leave the stage empty. Plans have no empty stages, so allowing them only
        lowers the floor; without them the greedy could run ahead onto a stage whose in-flight
        micro-batches leave no room for the next block, and wrongly say no."""
        if not (0 <= lo <= self.n and 0 <= first <= self.p):
            raise ValueError("lo or first out of range")
        return self._cuts(cap, lo, first)

    cdef bint _cut_at(self, double cap) noexcept:
        return self._cuts(cap, self.at_lo, self.at_first)

    def least(self, double low, double high, int steps, int lo=0, int first=0) -> float:
        """A lower bound on the least cap that cuts (``cuts(cap, lo, first)``), given that ``low``
        does not and ``high`` does (or is inf): ``steps`` bisections, after doubling ``high`` until
        it cuts; inf if none does."""
        if not (0 <= lo <= self.n and 0 <= first <= self.p):
            raise ValueError("lo or first out of range")
        self.at_lo, self.at_first = lo, first
        return self._least(low, high, steps)


cdef enum:
    MAX_PARTS = 8  # a pipeline's stages lie on at most this many parts

PARTS_LIMIT = MAX_PARTS  # the most parts a PartsFloor takes


cdef class PartsFloor(_Bisected):
    """The same cuts for a pipeline whose stages lie on several parts (GPU kinds, or widths),
    ``counts[i]`` stages on part i in any order: ``floors[i]`` (a StageFloor of the shape's p stages
    on part i) says how far a stage of part i reaches. After j stages, the farthest block reached
    is kept for each split of them over the parts (a vector of counts): reaching further never hurts
    (a stage's least cost never falls as it gains blocks), so the greedy per split is exact with
    empty stages allowed."""

    cdef tuple floors
    cdef int k, p, n
    cdef int at_lo, at_first  # where ``least`` cuts from, with ``at_left`` stages per part
    cdef int at_left[MAX_PARTS]
    cdef int counts[MAX_PARTS]
    cdef int* cur            # per split (mixed radix over counts + 1): the farthest block, -1 if none
    cdef int* nxt
    cdef int* reach          # per part and start block: the reach asked at this stage ...
    cdef int* asked          # ... and the stage it was asked at (+1), so nothing is reset per stage

    def __cinit__(self, floors, counts):
        cdef int i, stages = 0, splits = 1
        cdef StageFloor floor
        self.floors = tuple(floors)
        self.k = len(self.floors)
        if not 1 <= self.k <= MAX_PARTS or len(counts) != self.k:
            raise ValueError(f"a parts floor takes 1 to {MAX_PARTS} floors and a stage count for each")
        floor = self.floors[0]
        self.p, self.n = floor.p, floor.n
        for i in range(self.k):
            floor = self.floors[i]
            if counts[i] < 0 or floor.p != self.p or floor.n != self.n:
                raise ValueError("a parts floor needs floors of one shape and its stage counts")
            self.counts[i] = counts[i]
            splits *= counts[i] + 1
            stages += counts[i]
        if stages != self.p:
            raise ValueError("a parts floor's stage counts add up to its shape's stages")
        self.cur = <int*> malloc(splits * sizeof(int))
        self.nxt = <int*> malloc(splits * sizeof(int))
        self.reach = <int*> malloc(self.k * (self.n + 1) * sizeof(int))
        self.asked = <int*> malloc(self.k * (self.n + 1) * sizeof(int))
        if not self.cur or not self.nxt or not self.reach or not self.asked:
            raise MemoryError()

    def __dealloc__(self):
        free(self.cur)
        free(self.nxt)
        free(self.reach)
        free(self.asked)

    cdef bint _cuts(self, double cap, int lo, int first, const int* left, int* via=NULL, int* end=NULL) noexcept:
        """Whether a cut exists. With ``via`` (stages x splits entries), each split's best way in at
        each stage is kept, part * splits + the split it came from, and ``end`` gets the stage, split
        and part of the stage that reached n (``order`` walks them back)."""
        cdef int j, s, i, a, at, pos, got, rest, n = self.n, w = self.n + 1, stages = 0, size = 1
        cdef int strides[MAX_PARTS]
        cdef int* swap
        cdef StageFloor floor
        if lo >= n:
            if end:
                end[0] = -1
            return True
        for i in range(self.k):  # the splits of the stages left, in a radix of their own
            strides[i] = size
            size *= left[i] + 1
            stages += left[i]
        for s in range(size):
            self.cur[s] = -1
        for s in range(self.k * w):
            self.asked[s] = 0
        self.cur[0] = lo
        for j in range(stages):
            for s in range(size):
                self.nxt[s] = -1
            for s in range(size):
                pos = self.cur[s]
                if pos < 0:
                    continue
                rest = s
                for i in range(self.k - 1, -1, -1):
                    a = rest // strides[i]
                    rest -= a * strides[i]
                    if a >= left[i]:
                        continue
                    at = i * w + pos
                    if self.asked[at] != j + 1:  # splits that reached the same block ask the same
                        floor = <StageFloor> self.floors[i]
                        self.reach[at] = floor._reach_stage(cap, pos, first + j)
                        self.asked[at] = j + 1
                    got = self.reach[at]
                    if got >= n:
                        if end:
                            end[0], end[1], end[2] = j, s, i
                        return True
                    if got > self.nxt[s + strides[i]]:
                        self.nxt[s + strides[i]] = got
                        if via:
                            via[j * size + s + strides[i]] = i * size + s
            swap = self.cur
            self.cur = self.nxt
            self.nxt = swap
        return False

    cdef int _left(self, int lo, int first, counts, int* left) except -1:
        cdef int i, stages = 0
        if counts is None:
            counts = [self.counts[i] for i in range(self.k)]
        if len(counts) != self.k:
            raise ValueError("one stage count per part")
        for i in range(self.k):
            left[i] = counts[i]
            stages += left[i]
            if not 0 <= left[i] <= self.counts[i]:
                raise ValueError("a part's stage count is out of range")
        if first + stages != self.p or not 0 <= lo <= self.n:
            raise ValueError("lo, first or the counts do not fit the shape")
        return 0

    def cuts(self, double cap, int lo=0, int first=0, counts=None) -> bool:
        """Whether some cut of blocks [lo, n) into stages ``first`` .. p - 1, ``counts[i]`` of them
        on part i in some order (default: all of the shape's), empty ones allowed, has every stage
        fitting under a mode of cost <= cap."""
        cdef int left[MAX_PARTS]
        self._left(lo, first, counts, left)
        return self._cuts(cap, lo, first, left)

    def order(self, double cap, int lo=0, int first=0, counts=None) -> list | None:
        """The part of each stage of a cut that ``cuts`` finds at ``cap`` (the stages it leaves empty
        last, fewest-numbered part first), or None if none: an order of the parts in which the
        stages fit, for a heuristic cut to follow."""
        cdef int left[MAX_PARTS]
        cdef int end[3]
        cdef int i, j, s, size = 1, stages = 0
        cdef int* via
        self._left(lo, first, counts, left)
        for i in range(self.k):
            size *= left[i] + 1
            stages += left[i]
        via = <int*> malloc(max(stages * size, 1) * sizeof(int))
        if not via:
            raise MemoryError()
        try:
            if not self._cuts(cap, lo, first, left, via, end):
                return None
            path = []
            if end[0] >= 0:
                path.append(end[2])
                s = end[1]
                for j in range(end[0] - 1, -1, -1):
                    path.append(via[j * size + s] // size)
                    s = via[j * size + s] % size
                path.reverse()
        finally:
            free(via)
        for i in range(self.k):
            path.extend([i] * (left[i] - path.count(i)))
        return path

    cdef bint _cut_at(self, double cap) noexcept:
        return self._cuts(cap, self.at_lo, self.at_first, self.at_left)

    def least(self, double low, double high, int steps, int lo=0, int first=0, counts=None) -> float:
        """As ``StageFloor.least``: a lower bound on the least cap that cuts (``cuts`` with the same
        start and counts), given that ``low`` does not and ``high`` does (or is inf); inf if none does."""
        self._left(lo, first, counts, self.at_left)
        self.at_lo, self.at_first = lo, first
        return self._least(low, high, steps)
