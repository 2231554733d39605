# cython: language_level=3, boundscheck=False, wraparound=False, cdivision=True
"""Compiled tensor fusion: the schedule of a bucketing, the exact DP and the branch-and-bound core.

Times are integer nanoseconds and per-byte costs integer femtoseconds per byte, so every cost is
exact and every optimum is comparable with ``==`` across the DP, the search and brute force.
Tensors are 0-based in backward order; a bucketing is the list of its buckets' end indices
(exclusive), e.g. ``[2, 5]`` = buckets ``[0, 1]`` and ``[2, 3, 4]``.

Bucket ``[i, j)`` is ready at ``ready[j-1]`` (its last gradient) and takes
``alpha + ceil((beta + gamma * [j - i > 1]) * bytes / 1e6)`` ns; a stream starts it at
``max(ready, the stream's previous end)``.  The objective is the last end.
"""

from array import array

from libc.stdint cimport int32_t, int64_t, uint8_t
from libc.stdlib cimport free, malloc, realloc
from libc.string cimport memcpy, memset
from cpython.bytes cimport PyBytes_AS_STRING, PyBytes_FromStringAndSize, PyBytes_GET_SIZE

from yewpy.core cimport OptimisationCore

FS_PER_NS = 1_000_000
MAX_STREAMS = 16
cdef enum:
    SLOTS = 16           # dominance memo entries kept per prefix length
MEMO_SLOTS = SLOTS

cdef int64_t FS = 1_000_000
cdef int64_t WALK_LIMIT = 1 << 27    # steps _tight_lists (about 0.2 s) or a counted optimum (1.6 s) may take
cdef int64_t LIST_LIMIT = 1 << 24    # and entries it may keep (64 MiB)
cdef int64_t TABLE_LIMIT = 1 << 24   # entries a counted table may hold (128 MiB), here and in dp()'s callers
TABLE_ENTRIES = TABLE_LIMIT
cdef int64_t BIG = 1 << 62       # no bucketing yet
cdef double INF = float("inf")


cdef inline int64_t _cdiv(int64_t x, int64_t d) noexcept nogil:
    return (x + d - 1) // d if x > 0 else 0


cdef inline int64_t _max(int64_t a, int64_t b) noexcept nogil:
    return a if a > b else b


cdef class Instance:
    """The arrays every routine shares (prefix sums make a bucket's bytes O(1))."""
    cdef int n
    cdef int64_t* nbytes        # n
    cdef int64_t* ready         # n: ready[k] = when gradient k exists (ns from backward start)
    cdef int64_t* prefix        # n + 1: bytes of tensors [0, k)
    cdef int64_t alpha, beta, gamma, cap
    cdef object args

    def __init__(self, nbytes, ready, int64_t alpha, int64_t beta, int64_t gamma, int64_t cap=0):
        self.n = len(nbytes)
        if len(ready) != self.n:
            raise ValueError("nbytes and ready must have one entry per tensor")
        self.nbytes = <int64_t*>malloc(max(self.n, 1) * sizeof(int64_t))
        self.ready = <int64_t*>malloc(max(self.n, 1) * sizeof(int64_t))
        self.prefix = <int64_t*>malloc((self.n + 1) * sizeof(int64_t))
        if not (self.nbytes and self.ready and self.prefix):
            raise MemoryError()
        self.prefix[0] = 0
        for k in range(self.n):
            self.nbytes[k] = nbytes[k]
            self.ready[k] = ready[k]
            self.prefix[k + 1] = self.prefix[k] + nbytes[k]
            if nbytes[k] < 0 or (k and ready[k] < ready[k - 1]) or ready[k] < 0:
                raise ValueError("bytes must be >= 0 and ready times non-decreasing from >= 0")
        self.alpha, self.beta, self.gamma, self.cap = alpha, beta, gamma, cap
        self.args = (list(nbytes), list(ready), alpha, beta, gamma, cap)

    def __dealloc__(self):
        free(self.nbytes)
        free(self.ready)
        free(self.prefix)

    cdef inline int64_t cost(self, int i, int j) noexcept nogil:
        """Duration of the all-reduce of bucket [i, j)."""
        cdef int64_t per = self.beta + (self.gamma if j - i > 1 else 0)
        return self.alpha + _cdiv(per * (self.prefix[j] - self.prefix[i]), FS)

    cdef inline bint fits(self, int i, int j) noexcept nogil:
        """Bucket [i, j) respects the memory cap (a single tensor always does)."""
        return self.cap <= 0 or j - i == 1 or self.prefix[j] - self.prefix[i] <= self.cap

    def bucket_cost(self, int i, int j):
        """``cost`` for Python: ns of bucket [i, j)'s all-reduce."""
        self._check(i, j)
        return self.cost(i, j)

    def bucket_fits(self, int i, int j):
        """``fits`` for Python: whether bucket [i, j) respects the bytes cap."""
        self._check(i, j)
        return self.fits(i, j)

    def __reduce__(self):
        return (Instance, self.args)

    def fewest_buckets(self):
        """The fewest buckets the bytes cap allows for all the tensors (``_fewest_buckets``)."""
        cdef int64_t* minb = <int64_t*>malloc((self.n + 1) * sizeof(int64_t))
        if not minb:
            raise MemoryError()
        _fewest_buckets(self, minb)
        out = minb[0]
        free(minb)
        return out

    cdef _check(self, int i, int j):
        if not 0 <= i < j <= self.n:
            raise IndexError(f"bucket [{i}, {j}) of {self.n} tensors")


cdef void _fewest_buckets(Instance inst, int64_t* minb) noexcept nogil:
    """minb[k] = the fewest buckets the bytes cap allows for tensors k.. (n + 1 entries): each bucket
    as long as it fits, since the longest first bucket is never worse."""
    cdef int n = inst.n, i = n, k
    minb[n] = 0
    for k in range(n - 1, -1, -1):
        while i > k + 1 and not inst.fits(k, i):
            i -= 1                                  # its end never moves out as k falls
        minb[k] = 1 + minb[i]


cdef void _apply(int64_t* vec, int streams, int rank, int64_t ready, int64_t duration) noexcept nogil:
    """Run a bucket ready at ``ready`` on the stream of sorted rank ``rank`` of ``vec`` (stream free
    times, ascending, clamped at the last ready time); keep ``vec`` sorted and clamped at ``ready``."""
    cdef int l
    cdef int64_t end = _max(vec[rank], ready) + duration
    for l in range(rank, streams - 1):
        vec[l] = vec[l + 1]
    l = streams - 1
    while l > 0 and vec[l - 1] > end:
        vec[l] = vec[l - 1]
        l -= 1
    vec[l] = end
    for l in range(streams):
        if vec[l] < ready:
            vec[l] = ready
        else:
            break


def replay(nbytes, ready, int64_t alpha, int64_t beta, int64_t gamma, int streams, ends, ranks=None):
    """The schedule of a bucketing: ``(makespan, [(start, end, stream), ...])`` in ns.

    ``ranks[k]`` picks bucket k's stream by the rank of its free time (ties: lower stream id);
    default 0 (the stream free first, a greedy list schedule).
    """
    cdef Instance inst = Instance(nbytes, ready, alpha, beta, gamma)
    if streams < 1:
        raise ValueError("streams must be >= 1")
    free_at = [0] * streams
    out = []
    cdef int i = 0, j, k
    for k, j in enumerate(ends):
        if not (i < j <= inst.n):
            raise ValueError(f"bucket ends must increase from 1 to {inst.n}: {list(ends)}")
        r = inst.ready[j - 1]
        order = sorted(range(streams), key=lambda s: (max(free_at[s], r), s))
        s = order[0 if ranks is None else ranks[k]]
        start = max(free_at[s], r)
        free_at[s] = start + inst.cost(i, j)
        out.append((start, free_at[s], s))
        i = j
    if i != inst.n:
        raise ValueError(f"the buckets cover {i} of {inst.n} tensors")
    return max(free_at), out


cdef void _free_times(Instance inst, const int64_t* before, int64_t* row, int32_t* window) noexcept nogil:
    """One stream: row[j] = min(row[j], min over a last bucket [i, j) of max(r_{j-1}, before[i]) +
    cost(i, j)), in O(n); ``before`` may be ``row`` itself (filled in order of j). ``window``:
    scratch for n entries.

    Needs ``before`` non-decreasing with before[0] = 0 (BIG where no bucketing reaches: a
    suffix), which holds for the earliest free time of a prefix in at most u buckets, or in any
    number: drop the prefix's last tensor from its last bucket and that bucket ends no later.
    Then for each j the last buckets split at p, the last i <= j - 2 with before[i] <= r_{j-1}:
    - i = j - 1, one tensor (no gamma), is tried alone;
    - i <= p start at r_{j-1}, so the largest such i that fits is the best of them;
    - p < i <= j - 2 end at before[i] + alpha + ceil(x_j - x_i) with x_i = (beta + gamma)
      prefix_i / FS. Write x_i = q_i + s_i / FS (whole and remainder): the ceil is
      q_j - q_i + [s_j > s_i], so the best is the least before[i] - q_i, and among those the
      largest s_i, over a window whose two ends only move right: a sliding-window minimum.
    Exact in integers, so the DP, the search and brute force still agree to the nanosecond."""
    cdef int n = inst.n, j, i, p = 0, lo = 0, pushed = 0, head = 0, tail = 0, left
    cdef int64_t r, v, b, per = inst.beta + inst.gamma, x, key, qi
    cdef int64_t* prefix = inst.prefix
    for j in range(1, n + 1):
        r = inst.ready[j - 1]
        b = before[j - 1]
        if b < BIG:
            v = _max(r, b) + inst.cost(j - 1, j)
            if v < row[j]:
                row[j] = v
        if j < 2:
            continue
        if inst.cap > 0:
            while prefix[j] - prefix[lo] > inst.cap:
                lo += 1
        while p + 1 <= j - 2 and before[p + 1] <= r:
            p += 1
        if lo <= p and before[p] <= r:
            v = r + inst.cost(p, j)
            if v < row[j]:
                row[j] = v
        while pushed <= j - 2:                      # the window's right end: i = j - 2
            if before[pushed] < BIG:
                x = per * prefix[pushed]
                key = before[pushed] - x // FS
                while tail > head:
                    i = window[tail - 1]
                    qi = per * prefix[i]
                    if (before[i] - qi // FS < key
                            or (before[i] - qi // FS == key and qi % FS > x % FS)):
                        break
                    tail -= 1
                window[tail] = pushed
                tail += 1
            pushed += 1
        left = p + 1 if p + 1 > lo else lo
        while head < tail and window[head] < left:
            head += 1
        if head < tail:
            i = window[head]
            qi = per * prefix[i]
            x = per * prefix[j]
            v = before[i] - qi // FS + x // FS + inst.alpha + (1 if x % FS > qi % FS else 0)
            if v < row[j]:
                row[j] = v


cdef int _last_start(Instance inst, const int64_t* before, int j, int64_t end) noexcept nogil:
    """The largest i whose bucket [i, j) after ``before[i]`` ends at ``end`` (-1 if none): how
    dp() reads its bucketing back from the table, as the old scan's argmin did."""
    cdef int i
    cdef int64_t c
    for i in range(j - 1, -1, -1):
        if not inst.fits(i, j):
            break
        c = inst.cost(i, j)
        if inst.ready[j - 1] + c > end:
            break
        if before[i] < BIG and _max(inst.ready[j - 1], before[i]) + c == end:
            return i
    return -1


cdef void _first_bucket(Instance inst, int64_t* row) noexcept nogil:
    """The counted tables' first layer: row[j] = the end of one bucket [0, j) where it fits."""
    cdef int j
    for j in range(1, inst.n + 1):
        if not inst.fits(0, j):
            break
        row[j] = inst.ready[j - 1] + inst.cost(0, j)


cdef void _counted_table(Instance inst, int layers, int64_t* e, int32_t* window) noexcept nogil:
    """e[k (n + 1) + j] = the earliest the one stream is free after some bucketing of tensors ..j
    into at most k buckets, k = 0..layers (BIG: none fits); ``window``: scratch for n entries."""
    cdef size_t w = inst.n + 1, at
    cdef int k
    for at in range((layers + 1) * w):
        e[at] = BIG
    e[0] = 0
    for k in range(1, layers + 1):
        memcpy(e + k * w, e + (k - 1) * w, w * sizeof(int64_t))   # at most k - 1 is at most k
        if k == 1:
            _first_bucket(inst, e + w)
        else:
            _free_times(inst, e + (k - 1) * w, e + k * w, window)


cdef int64_t _counted_optimum(Instance inst, int layers, int64_t* rows, int32_t* window) noexcept nogil:
    """The last entry of ``_counted_table`` (the optimum in at most ``layers`` buckets) with two
    rows of n + 1 entries (``rows``) in place of the whole table."""
    cdef size_t w = inst.n + 1, at
    cdef int k
    cdef int64_t* before = rows
    cdef int64_t* row = rows + w
    cdef int64_t* swap
    for at in range(2 * w):
        rows[at] = BIG
    rows[0] = rows[w] = 0
    _first_bucket(inst, row)
    for k in range(2, layers + 1):
        swap = before
        before = row
        row = swap
        memcpy(row, before, w * sizeof(int64_t))
        _free_times(inst, before, row, window)
    return row[inst.n]


def dp(nbytes, ready, int64_t alpha, int64_t beta, int64_t gamma, int max_buckets=0, int64_t cap=0):
    """The optimal single-stream bucketing: ``(makespan_ns, ends)``; ``max_buckets`` and ``cap``
    (bytes per fused bucket) are optional constraints (0: none).

    E(j) = min_i max(ready[j-1], E(i)) + cost(i, j) is exact because a bucket's end is monotone in
    the previous end; with a bucket cap K the table gains a bucket-count axis (layer k: at most k
    buckets). Each layer takes O(n) (``_free_times``), so O(N K) in all. The ends are read back
    from the last: each bucket starts as late as it can, and under a count cap the plan has the
    fewest buckets that reach the optimum (without one, the ends are the old quadratic scan's,
    which need not be the fewest).
    """
    cdef Instance inst = Instance(nbytes, ready, alpha, beta, gamma, cap)
    cdef int n = inst.n, layers = max_buckets if 0 < max_buckets < n else 1
    cdef bint counted = 0 < max_buckets < n
    if n == 0:
        return 0, []
    cdef size_t w = n + 1, at
    cdef int64_t* e = <int64_t*>malloc((layers + 1) * w * sizeof(int64_t))
    cdef int32_t* window = <int32_t*>malloc(w * sizeof(int32_t))
    cdef int k, j, i
    cdef int64_t best, end
    if not (e and window):
        free(e)
        free(window)
        raise MemoryError()
    try:
        with nogil:
            if counted:
                _counted_table(inst, layers, e, window)
            else:
                for at in range(2 * w):
                    e[at] = BIG
                e[0] = e[w] = 0                     # the one layer reads its own row
                _free_times(inst, e + w, e + w, window)
        best = e[layers * w + n]
        if best >= BIG:
            raise ValueError(f"no bucketing of {n} tensors into at most {max_buckets} buckets fits")
        ends = []
        j, k, end = n, layers, best
        while j > 0:
            ends.append(j)
            if counted:
                while k > 1 and e[(k - 1) * w + j] == end:
                    k -= 1
                i = _last_start(inst, e + (k - 1) * w, j, end)
                k -= 1
            else:
                i = _last_start(inst, e + w, j, end)
            if i < 0:
                raise RuntimeError(f"dp: no last bucket ends prefix {j} at {end} ns")
            j = i
            end = e[k * w + j] if counted else e[w + j]
        return best, ends[::-1]
    finally:
        free(e)
        free(window)


cdef class FusionCore(OptimisationCore):
    """Branch and bound over bucketings with S streams, an optional bucket-count cap K and memory cap.

    Node: the buckets decided so far (a prefix of the tensors), with the sorted stream free times.
    Children: the next bucket's end j' (from j*, the end that takes every gradient ready when a
    stream frees up, outwards: j*, j*+1, j*-1, ...), then its stream (distinct free times, earliest
    first).  Bound (minimise), for prefix j and free times e_l (docs/fusion.md argues each term):
      max(max e_l, max(r_last, e_0) + cost(last), ceil(F / S)),
      F = max over k in {j, the first k with r_k > e_l for each l} of sum_l max(e_l, r_k) + P_k,
          and max_{k >= j} S * r_k + P_k (precomputed),
    with P_k the least total cost of buckets covering tensors k.. (bytes cap kept, count cap relaxed),
    since the buckets holding tensors k.. start after r_k, on streams free at e_l, and cost >= P_k.
    A per-worker memo skips a child whose state (prefix, buckets used, free times) is dominated by one
    generated before; that is sound because the dominating node is searched or bounded out.
    A child whose last stream frees later than the earliest any bucketing of its prefix frees one
    stream (``first_free``, the one-stream DP's table) is skipped too: that bucketing, on one stream
    with the others idle, is a state no later in any stream, and every completion of the child
    completes it no sooner. On one stream the tree then keeps about one node per prefix. With a
    count cap the same holds per bucket count (``capped_free``: the counted DP's table).
    """
    cdef Instance inst
    cdef readonly int n, streams, max_buckets
    cdef int64_t* minb          # n + 1
    cdef int64_t* pmin          # n + 1: P_k, the least total cost of buckets covering tensors k..
    cdef int32_t* cheap         # n: the end of the first bucket of a least-cost bucketing of k..
    cdef int64_t* tail          # n + 2: max_{k' >= k} S * r_k' + P_k'
    cdef int64_t* first_free    # n + 1 (no count cap; else NULL): E(j) of dp(), on one stream
    cdef int64_t* capped_free   # (K + 1) (n + 1) (count cap K, unless too costly):
                                # [u (n + 1) + j] the earliest free time of j tensors in <= u buckets
    cdef int32_t* tight_at      # n + 2, with first_free unless too many: tight_to[tight_at[j]:
    cdef int32_t* tight_to      # tight_at[j + 1]] are the ends c that can follow prefix j (ascending)
    cdef int64_t last_end, last_cost
    cdef int64_t optimum        # one stream: the DP's optimum (E(n) or F_K(n)), a floor under every node; else 0
    cdef int32_t* root_ends     # n: frame 0's bucket ends (a task's node, from load)
    cdef uint8_t* root_ranks    # n: and their stream ranks
    cdef int32_t* path_ends     # n: scratch for dump and solution
    cdef uint8_t* path_ranks    # n
    cdef int32_t* last          # per frame: its last bucket end (frame 0: 0 or the root's last)
    cdef uint8_t* last_rank     # per frame: that bucket's stream rank
    cdef int32_t* parent        # per frame >= 1: the frame whose child it is (its other ends)
    cdef int32_t* depth         # per frame: buckets
    cdef int64_t* vec           # per frame: streams free times (sorted, clamped)
    cdef int32_t* gen           # per frame: next candidate index g
    cdef int32_t* opt           # per frame: next stream option of the current candidate
    cdef int32_t* lo
    cdef int32_t* hi
    cdef int32_t* star
    cdef int32_t* memo_u        # (n + 1) * SLOTS
    cdef int64_t* memo_v        # (n + 1) * SLOTS * streams
    cdef int32_t* memo_fill     # n + 1
    cdef int frames
    cdef readonly long long bounds, dominated
    cdef object _args

    def __init__(self, nbytes, ready, int64_t alpha, int64_t beta, int64_t gamma, int streams=1,
                 int max_buckets=0, int64_t cap=0):
        if not 1 <= streams <= MAX_STREAMS:
            raise ValueError(f"streams must be 1..{MAX_STREAMS}")
        self.inst = Instance(nbytes, ready, alpha, beta, gamma, cap)
        self.n = self.inst.n
        self.streams = streams
        self.max_buckets = max_buckets if 0 < max_buckets < self.n else 0
        self._args = (list(nbytes), list(ready), alpha, beta, gamma, streams, max_buckets, cap)
        cdef int n = self.n, k, i
        self.minb = <int64_t*>malloc((n + 1) * sizeof(int64_t))
        self.pmin = <int64_t*>malloc((n + 1) * sizeof(int64_t))
        self.cheap = <int32_t*>malloc((n + 1) * sizeof(int32_t))
        self.tail = <int64_t*>malloc((n + 2) * sizeof(int64_t))
        self.memo_u = <int32_t*>malloc((n + 1) * SLOTS * sizeof(int32_t))
        self.memo_v = <int64_t*>malloc((n + 1) * SLOTS * streams * sizeof(int64_t))
        self.memo_fill = <int32_t*>malloc((n + 1) * sizeof(int32_t))
        self.root_ends = <int32_t*>malloc(max(n, 1) * sizeof(int32_t))
        self.root_ranks = <uint8_t*>malloc(max(n, 1))
        self.path_ends = <int32_t*>malloc(max(n, 1) * sizeof(int32_t))
        self.path_ranks = <uint8_t*>malloc(max(n, 1))
        if not (self.root_ends and self.root_ranks and self.path_ends and self.path_ranks):
            raise MemoryError()
        if not (self.minb and self.pmin and self.cheap and self.tail and self.memo_u and self.memo_v and self.memo_fill):
            raise MemoryError()
        _fewest_buckets(self.inst, self.minb)
        cdef int32_t* window = <int32_t*>malloc((n + 2) * sizeof(int32_t))
        if not window:
            raise MemoryError()
        self._least_costs(window)
        free(window)
        self.tail[n] = self.tail[n + 1] = -(1 << 62)
        for k in range(n - 1, -1, -1):
            self.tail[k] = _max(self.tail[k + 1], streams * self.inst.ready[k] + self.pmin[k])
        self.last_cost = self.inst.cost(n - 1, n) if n else 0
        self.last_end = self.inst.ready[n - 1] + self.last_cost if n else 0
        for k in range(n + 1):
            self.memo_fill[k] = 0
        if not self.max_buckets:
            self.first_free = <int64_t*>malloc((n + 1) * sizeof(int64_t))
            if not self.first_free:
                raise MemoryError()
            if self._first_free() < 0:
                raise MemoryError()
            if streams == 1:
                self._tight_lists()
                self.optimum = self.first_free[n]
        else:
            self._capped_free()
        self.has_bound = True
        self.sign = -1.0

    def __reduce__(self):
        return (FusionCore, self._args)

    cdef void _least_costs(self, int32_t* window) noexcept nogil:
        """P_k = min over bucketings of tensors k.. (bytes cap respected, count cap relaxed) of the
        summed bucket costs, in O(n) with ``window`` (n + 2 entries) as scratch. A first bucket
        [k, i) of several tensors and the rest cost alpha + P_i + ceil(c (B_i - B_k) / FS) =
        alpha + ceil((FS P_i + c B_i - c B_k) / FS), c = beta + gamma, B the bytes before a tensor:
        the best such i minimises FS P_i + c B_i over k + 2 <= i <= the last end that fits, a
        window that only slides down as k falls, so a deque keeps its minimum. Without gamma or a
        cap the least is one bucket (a split adds alpha, ceil is subadditive)."""
        cdef int n = self.n, k, i, hi = n, left = n + 1, right = n
        cdef int64_t best, c = self.inst.beta + self.inst.gamma, cb, m
        self.pmin[n] = 0
        if self.inst.gamma == 0 and self.inst.cap <= 0:
            for k in range(n - 1, -1, -1):
                self.pmin[k] = self.inst.cost(k, n)
                self.cheap[k] = n
            return
        for k in range(n - 1, -1, -1):
            if k + 2 <= n:                          # i = k + 2 joins; worse or equal later ends leave
                i = k + 2
                while left <= right and not self._fused_before(window[left], i, c):
                    left += 1
                left -= 1
                window[left] = i
            while hi > k + 1 and not self.inst.fits(k, hi):
                hi -= 1
            while left <= right and window[right] > hi:
                right -= 1
            best = self.inst.cost(k, k + 1) + self.pmin[k + 1]
            self.cheap[k] = k + 1
            if left <= right:
                i = window[right]
                cb = c * self.inst.prefix[k]
                m = (self.inst.alpha + self.pmin[i] + c * self.inst.prefix[i] // FS - cb // FS
                     + (1 if c * self.inst.prefix[i] % FS > cb % FS else 0))
                if m < best:
                    best = m
                    self.cheap[k] = i
            self.pmin[k] = best

    cdef inline bint _fused_before(self, int i, int other, int64_t c) noexcept nogil:
        """FS P_i + c B_i < FS P_other + c B_other, compared as (P + c B // FS, c B % FS) so that
        nothing overflows."""
        cdef int64_t x = c * self.inst.prefix[i], y = c * self.inst.prefix[other]
        cdef int64_t hx = self.pmin[i] + x // FS, hy = self.pmin[other] + y // FS
        return hx < hy or (hx == hy and x % FS < y % FS)

    cdef int _first_free(self) noexcept nogil:
        """E(j): the earliest the one stream is free after some bucketing of tensors ..j (dp()'s
        table without the count axis)."""
        cdef int j
        cdef int32_t* window = <int32_t*>malloc((self.n + 1) * sizeof(int32_t))
        if not window:
            return -1
        self.first_free[0] = 0
        for j in range(1, self.n + 1):
            self.first_free[j] = BIG
        _free_times(self.inst, self.first_free, self.first_free, window)
        free(window)
        return 0

    cdef int _capped_free(self) except -1:
        """F_u(j), the earliest the one stream is free after some bucketing of tensors ..j into at
        most u buckets (dp()'s counted table), for u <= K. Like E(j) without a cap, a child (c, u
        buckets, free at w) with w > F_u(c) is skipped: that bucketing takes every completion of
        the child too, within K buckets, no later. The table takes O(n K) time; where its
        (K + 1)(n + 1) entries would pass ``TABLE_LIMIT`` it is not kept, and the search goes
        without the rule. Its last entry, the optimum, becomes ``optimum``, computed on two rows
        where the table is not kept, unless that too would pass ``WALK_LIMIT`` steps."""
        cdef int n = self.n, K = self.max_buckets
        cdef bint whole = <int64_t>(K + 1) * (n + 1) <= TABLE_LIMIT
        if not whole and (self.streams > 1 or <int64_t>K * n > WALK_LIMIT):   # about 12 ns a step
            return 0
        cdef int64_t* e = <int64_t*>malloc((<size_t>(K + 1) if whole else 2) * <size_t>(n + 1) * sizeof(int64_t))
        cdef int32_t* window = <int32_t*>malloc((n + 1) * sizeof(int32_t))
        if not (e and window):
            free(e)
            free(window)
            raise MemoryError()
        with nogil:
            if whole:
                _counted_table(self.inst, K, e, window)
                if self.streams == 1:
                    self.optimum = e[<int64_t>K * (n + 1) + n]
            else:
                self.optimum = _counted_optimum(self.inst, K, e, window)
        free(window)
        if whole:
            self.capped_free = e
        else:
            free(e)
        return 0

    def capped_free_time(self, int u, int j):
        """F_u(j) with a bucket-count cap on one stream, or None without the table (for tests)."""
        if self.capped_free == NULL:
            return None
        if not (0 <= u <= self.max_buckets and 0 <= j <= self.n):
            raise IndexError(f"{u} buckets, prefix {j}")
        return self.capped_free[u * (self.n + 1) + j]

    cdef int _tight_lists(self) except -1:
        """With ``first_free``: for each prefix j, the ends c whose bucket [j, c) can keep a child
        (max(E(j), r_{c-1}) + cost(j, c) <= E(c): a child's stream frees no sooner than E(j), and
        later than E(c) it is skipped). For each c those j form a range ending at c - 1 (the test
        without E(j) only gets easier as j grows, as does the bytes cap), found by bisection and
        then walked (a few ns a step). Walks over ``WALK_LIMIT`` steps, or
        lists over ``LIST_LIMIT`` entries, in all leave the lists unset: the search then tries
        every end, as with several streams."""
        cdef int n = self.n, c, j, lo, hi, mid
        cdef int64_t e, r, walked = 0
        cdef int32_t* low = <int32_t*>malloc((n + 1) * sizeof(int32_t))
        cdef int32_t* at = <int32_t*>malloc((n + 2) * sizeof(int32_t))
        cdef int32_t* to = NULL
        if not (low and at):
            free(low)
            free(at)
            raise MemoryError()
        try:
            for j in range(n + 2):
                at[j] = 0
            for c in range(1, n + 1):
                e, r = self.first_free[c], self.inst.ready[c - 1]
                lo, hi = 0, c - 1                   # the least j that passes; c - 1 always does
                while lo < hi:
                    mid = (lo + hi) >> 1
                    if self.inst.fits(mid, c) and r + self.inst.cost(mid, c) <= e:
                        hi = mid
                    else:
                        lo = mid + 1
                low[c] = lo
                walked += c - lo
                if walked > WALK_LIMIT:
                    return 0
                for j in range(lo, c):
                    if _max(self.first_free[j], r) + self.inst.cost(j, c) <= e:
                        at[j + 2] += 1
            for j in range(2, n + 2):
                at[j] += at[j - 1]
            if at[n + 1] > LIST_LIMIT:
                return 0
            to = <int32_t*>malloc(max(at[n + 1], 1) * sizeof(int32_t))
            if not to:
                raise MemoryError()
            for c in range(1, n + 1):               # ascending c within each j's list
                e, r = self.first_free[c], self.inst.ready[c - 1]
                for j in range(low[c], c):
                    if _max(self.first_free[j], r) + self.inst.cost(j, c) <= e:
                        to[at[j + 1]] = c
                        at[j + 1] += 1
            self.tight_at, self.tight_to, at, to = at, to, NULL, NULL
        finally:
            free(low)
            free(at)
            free(to)
        return 0

    def tight_ends(self, int j):
        """The ends the search tries after prefix j on one stream without a count cap, or None when
        it tries every end (for tests)."""
        if not 0 <= j <= self.n:
            raise IndexError(f"prefix {j} of {self.n} tensors")
        if self.tight_at == NULL:
            return None
        if j == self.n:
            return []
        return [self.tight_to[k] for k in range(self.tight_at[j], self.tight_at[j + 1])]

    def __dealloc__(self):
        free(self.capped_free)
        free(self.tight_at)
        free(self.tight_to)
        free(self.first_free)
        free(self.minb)
        free(self.pmin)
        free(self.cheap)
        free(self.tail)
        free(self.memo_u)
        free(self.memo_v)
        free(self.memo_fill)
        free(self.root_ends)
        free(self.root_ranks)
        free(self.path_ends)
        free(self.path_ranks)
        free(self.last)
        free(self.last_rank)
        free(self.parent)
        free(self.depth)
        free(self.vec)
        free(self.gen)
        free(self.opt)
        free(self.lo)
        free(self.hi)
        free(self.star)

    cdef int forget(self) except -1:
        """Empty the dominance memo: a probe counts a node's children as if first met."""
        memset(self.memo_fill, 0, (self.n + 1) * sizeof(int32_t))
        return 0

    def counters(self):
        """Bound evaluations and children skipped as dominated."""
        return {"bounds": self.bounds, "dominated": self.dominated}

    def min_buckets(self, int k=0):
        """The fewest buckets the memory cap allows for tensors k.. (for tests)."""
        return self.minb[k]

    def least_cost(self, int k=0):
        """P_k, the least summed cost of buckets covering tensors k.. (for tests)."""
        return self.pmin[k]

    cdef int reserve(self, int frames) except -1:
        cdef int n = max(self.n, 1), s = self.streams
        self.last = <int32_t*>realloc(self.last, frames * sizeof(int32_t))
        self.last_rank = <uint8_t*>realloc(self.last_rank, frames)
        self.parent = <int32_t*>realloc(self.parent, frames * sizeof(int32_t))
        self.depth = <int32_t*>realloc(self.depth, frames * sizeof(int32_t))
        self.vec = <int64_t*>realloc(self.vec, frames * s * sizeof(int64_t))
        self.gen = <int32_t*>realloc(self.gen, frames * sizeof(int32_t))
        self.opt = <int32_t*>realloc(self.opt, frames * sizeof(int32_t))
        self.lo = <int32_t*>realloc(self.lo, frames * sizeof(int32_t))
        self.hi = <int32_t*>realloc(self.hi, frames * sizeof(int32_t))
        self.star = <int32_t*>realloc(self.star, frames * sizeof(int32_t))
        if not (self.last and self.last_rank and self.parent and self.depth and self.vec and self.gen and self.opt
                and self.lo and self.hi and self.star):
            raise MemoryError()
        self.frames = frames
        return 0

    cdef inline int covered(self, int frame) noexcept nogil:
        return self.last[frame]

    cdef int _path(self, int frame) noexcept nogil:
        """Frame's bucket ends and ranks into ``path_ends`` and ``path_ranks``; returns how many.
        A frame holds only its last bucket and the frame it came from: the engine makes a child
        from a frame whose own chain is still in place (the frames above it, or a split's scratch
        frame made from one of them), so following ``parent`` down to frame 0 gives the rest."""
        cdef int d = self.depth[frame], f = frame
        while f != 0:
            self.path_ends[self.depth[f] - 1] = self.last[f]
            self.path_ranks[self.depth[f] - 1] = self.last_rank[f]
            f = self.parent[f]
        memcpy(self.path_ends, self.root_ends, self.depth[0] * sizeof(int32_t))
        memcpy(self.path_ranks, self.root_ranks, self.depth[0])
        return d

    cdef int set_root(self) except -1:
        self.depth[0] = 0
        self.last[0] = 0
        for l in range(self.streams):
            self.vec[l] = 0
        return 0

    cdef int load(self, object node) except -1:
        ends, ranks = node
        cdef const int32_t* e = <const int32_t*>PyBytes_AS_STRING(ends)
        cdef const uint8_t* r = <const uint8_t*>PyBytes_AS_STRING(ranks)
        cdef int d = PyBytes_GET_SIZE(ranks), k, i = 0
        if PyBytes_GET_SIZE(ends) != d * 4 or d > self.n:
            raise ValueError("not a node of this instance")
        self.set_root()
        for k in range(d):
            if not (i < e[k] <= self.n) or r[k] >= self.streams:
                raise ValueError("not a node of this instance")
            _apply(self.vec, self.streams, r[k], self.inst.ready[e[k] - 1], self.inst.cost(i, e[k]))
            i = e[k]
        memcpy(self.root_ends, e, d * sizeof(int32_t))
        memcpy(self.root_ranks, r, d)
        self.depth[0] = d
        self.last[0] = i
        return 0

    cdef object dump(self, int frame):
        cdef int d = self._path(frame)
        return (PyBytes_FromStringAndSize(<char*>self.path_ends, d * sizeof(int32_t)),
                PyBytes_FromStringAndSize(<char*>self.path_ranks, d))

    cdef object solution(self, int frame):
        cdef int d = self._path(frame), k
        return [(self.path_ends[k], self.path_ranks[k]) for k in range(d)]

    cdef int open(self, int frame) except -1:
        cdef int j = self.covered(frame), n = self.n, hi = j + 1, lo = j + 1, star
        cdef int64_t when
        self.gen[frame] = 0
        self.opt[frame] = 0
        if j >= n:
            self.lo[frame], self.hi[frame], self.star[frame] = 1, 0, 0
            return 0
        if self.tight_at != NULL:
            return self._open_tight(frame, j)
        hi = self._last_fit(j)
        if self.max_buckets:                        # the rest must still fit in the bucket cap
            while lo <= hi and self.depth[frame] + 1 + self.minb[lo] > self.max_buckets:
                lo += 1
        star = self._first_try(frame, j, hi)
        self.lo[frame], self.hi[frame] = lo, hi
        self.star[frame] = star if star > lo else lo
        return 0

    cdef int next(self, int frame, int dest) except -1:
        cdef int s = self.streams, g, c, o, l, d = self.depth[frame], j = self.covered(frame)
        cdef int lo = self.lo[frame], hi = self.hi[frame], star = self.star[frame]
        cdef int64_t r
        cdef int64_t* v = self.vec + frame * s
        cdef int64_t* w = self.vec + dest * s
        if self.tight_at != NULL:
            return self._next_tight(frame, dest, j)
        while True:
            g = self.gen[frame]
            if lo > hi or g > 2 * (hi - lo) + 1:
                return 0
            c = star + (g + 1) // 2 if g % 2 else star - g // 2
            if c < lo or c > hi:
                self.gen[frame] = g + 1
                continue
            r = self.inst.ready[c - 1]
            o = self.opt[frame]                     # the o-th distinct clamped free time
            l = 0
            while l < s and o > 0:
                l += 1
                if l < s and _max(v[l], r) != _max(v[l - 1], r):
                    o -= 1
            if l >= s:
                self.gen[frame] = g + 1
                self.opt[frame] = 0
                continue
            self.opt[frame] += 1
            memcpy(w, v, s * sizeof(int64_t))
            _apply(w, s, l, r, self.inst.cost(j, c))
            if not self._skipped(c, d + 1, w):
                return self._child(frame, dest, c, l)

    cdef inline int _last_fit(self, int j) noexcept nogil:
        """The last end c of a bucket [j, c) that the bytes cap allows (bytes grow with c)."""
        cdef int lo = j + 1, hi = self.n, mid
        if self.inst.cap <= 0:
            return hi
        while lo < hi:
            mid = (lo + hi + 1) >> 1
            if self.inst.fits(j, mid):
                lo = mid
            else:
                hi = mid - 1
        return lo

    cdef inline int _first_try(self, int frame, int j, int hi) noexcept nogil:
        """j*, the end tried first after prefix j (ends up to ``hi`` fit): the one that takes every
        gradient ready when a stream frees up, or without a count cap the end of a least-cost
        first bucket when that one is smaller."""
        cdef int64_t when = _max(self.vec[frame * self.streams], self.inst.ready[j])
        cdef int star = self._after(j + 1, when)
        if star > hi:
            star = hi
        if self.cheap[j] < star and not self.max_buckets:
            star = self.cheap[j]
        return star

    cdef inline bint _skipped(self, int c, int used, const int64_t* w) noexcept nogil:
        """Whether a child at prefix c with ``used`` buckets and free times ``w`` is skipped (and
        counted as dominated): its last stream frees later than the earliest any bucketing of its
        prefix frees one stream (``first_free``, or ``capped_free`` at its count), or dominated in
        the memo. With several streams, that bucketing on one stream leaves the others free at
        r_{c-1}: a state no later in any stream, whose completions end no later."""
        cdef int64_t last = w[self.streams - 1]
        if ((self.first_free != NULL and last > self.first_free[c])
                or (self.capped_free != NULL and last > self.capped_free[used * (self.n + 1) + c])
                or self._dominated(c, used, w)):
            self.dominated += 1
            return True
        return False

    cdef inline int _child(self, int frame, int dest, int c, int rank) noexcept nogil:
        """Frame ``dest`` := frame's node with one bucket more, ending at c on stream ``rank``."""
        self.last[dest], self.last_rank[dest], self.parent[dest] = c, rank, frame
        self.depth[dest] = self.depth[frame] + 1
        return 1

    cdef int _open_tight(self, int frame, int j) noexcept nogil:
        """``open`` with the tight lists: the same j* as ``open`` finds (by bisection, not a scan
        of every end), and the list's entries either side of it (``lo``: the next below, ``hi``: the
        next at or above), so that ``_next_tight`` gives the children in ``next``'s order."""
        cdef int mid, star = self._first_try(frame, j, self._last_fit(j))
        cdef int first = self.tight_at[j], last = self.tight_at[j + 1]
        while first < last:                         # the first entry >= star
            mid = (first + last) >> 1
            if self.tight_to[mid] < star:
                first = mid + 1
            else:
                last = mid
        self.star[frame], self.lo[frame], self.hi[frame] = star, first - 1, first
        return 0

    cdef int _next_tight(self, int frame, int dest, int j) noexcept nogil:
        """``next`` from prefix j's tight list, in ``next``'s order: j*, j* + 1, j* - 1, j* + 2, ..."""
        cdef int n = self.n, d = self.depth[frame], c, star = self.star[frame]
        cdef int down, up
        cdef int64_t* w = self.vec + dest
        if j >= n:                                  # a complete bucketing has no children
            return 0
        while True:
            down, up = self.lo[frame], self.hi[frame]
            if up < self.tight_at[j + 1] and (down < self.tight_at[j]
                                               or 2 * (self.tight_to[up] - star) - 1 < 2 * (star - self.tight_to[down])):
                c = self.tight_to[up]
                self.hi[frame] = up + 1
            elif down >= self.tight_at[j]:
                c = self.tight_to[down]
                self.lo[frame] = down - 1
            else:
                return 0
            w[0] = self.vec[frame]
            _apply(w, 1, 0, self.inst.ready[c - 1], self.inst.cost(j, c))
            if not self._skipped(c, d + 1, w):
                return self._child(frame, dest, c, 0)

    cdef bint _dominated(self, int j, int used, const int64_t* w) noexcept nogil:
        """True when a state at prefix j no worse than (used, w) was generated before; else remember it."""
        cdef int s = self.streams, slot, l, fill = self.memo_fill[j], target = -1
        cdef int u = used if self.max_buckets else 0
        cdef int32_t* mu = self.memo_u + j * SLOTS
        cdef int64_t* mv = self.memo_v + j * SLOTS * s
        cdef bint le, ge
        for slot in range(fill if fill < SLOTS else SLOTS):
            le = mu[slot] <= u
            ge = mu[slot] >= u
            for l in range(s):
                if mv[slot * s + l] > w[l]:
                    le = False
                elif mv[slot * s + l] < w[l]:
                    ge = False
            if le:
                return True
            if ge and target < 0:
                target = slot                       # the new state dominates this entry
        if target < 0:
            target = fill % SLOTS
            self.memo_fill[j] = fill + 1
        mu[target] = u
        memcpy(mv + target * s, w, s * sizeof(int64_t))
        return False

    cdef double objective(self, int frame) except? -1:
        if self.covered(frame) < self.n:
            return INF
        return self.vec[frame * self.streams + self.streams - 1]

    cdef double bound(self, int frame) except? -1:
        self.bounds += 1
        return self._bound(frame)

    cdef inline int64_t _fill(self, const int64_t* v, int k) noexcept nogil:
        """S * T >= sum_l max(e_l, r_k) + P_k: the buckets holding tensors k.. start after r_k, on
        streams free at e_l, and cost at least P_k."""
        cdef int64_t total = self.pmin[k], r = self.inst.ready[k]
        cdef int l
        for l in range(self.streams):
            total += _max(v[l], r)
        return total

    cdef inline int _after(self, int k, int64_t t) noexcept nogil:
        """The first tensor index >= k whose ready time exceeds t (n if none)."""
        cdef int lo = k, hi = self.n, mid
        while lo < hi:
            mid = (lo + hi) >> 1
            if self.inst.ready[mid] > t:
                hi = mid
            else:
                lo = mid + 1
        return lo

    cdef double _bound(self, int frame) noexcept nogil:
        cdef int s = self.streams, j = self.covered(frame), l, k
        cdef int64_t* v = self.vec + frame * s
        cdef int64_t b = v[s - 1], fill
        if j >= self.n:
            return b
        fill = _max(self._fill(v, j), self.tail[j])
        for l in range(s - 1):                      # where r_k passes each free time
            k = self._after(j, v[l])
            if k >= self.n:
                break
            fill = _max(fill, self._fill(v, k))
        b = _max(b, _cdiv(fill, s))
        b = _max(b, self.last_end)
        b = _max(b, v[0] + self.last_cost)          # the last bucket waits for a stream
        return _max(b, self.optimum)                # no bucketing beats the one-stream DP

    def node_bound(self, ends, ranks=None):
        """The bound of the node with these bucket ends (and stream ranks, default 0), for tests."""
        if self.frames < 1:
            self.reserve(1)
        ranks = [0] * len(ends) if ranks is None else ranks
        self.load((array("i", ends).tobytes(), bytes(ranks)))
        return self._bound(0)
