# cython: language_level=3, boundscheck=False, wraparound=False, cdivision=True
"""Compiled core of the planner's packing floor (``bounds._packing_floor``).

Stages on several parts of different GPU kinds hold whole blocks: within a largest stage time T, a
stage of part i holds at most k_i(T) blocks, the count of its cheapest blocks whose running sum is
within T. The blocks fit only if the parts' stages together hold them all, sum c_i k_i(T) >= blocks.
"""

from libc.stdlib cimport free, malloc, qsort


cdef int _ascending(const void* a, const void* b) noexcept nogil:
    cdef double x = (<const double*> a)[0], y = (<const double*> b)[0]
    return (x > y) - (x < y)


cdef double _least(const double** data, const Py_ssize_t* length, const long* weight, Py_ssize_t* at,
                   Py_ssize_t parts, Py_ssize_t blocks, double start) noexcept:
    """``least_packing`` on C arrays (``at``: scratch, one entry per part)."""
    cdef Py_ssize_t i, best
    cdef Py_ssize_t held = 0
    cdef double value, low
    for i in range(parts):
        at[i] = 0
        while at[i] < length[i] and data[i][at[i]] <= start:  # entries within start
            at[i] += 1
        held += weight[i] * at[i]
    if held >= blocks:
        return start
    while True:
        best = -1
        low = 0.0
        for i in range(parts):
            if at[i] < length[i]:
                value = data[i][at[i]]
                if best < 0 or value < low:
                    best, low = i, value
        if best < 0:
            return float("inf")
        held += weight[best]
        at[best] += 1
        if held >= blocks:
            return low


def least_packing(list prefixes, list counts, Py_ssize_t blocks, double start) -> float:
    """The least T >= ``start`` at which sum over parts of counts[i] x (entries of prefixes[i] at most
    T) reaches ``blocks``: ``start`` where it already does, else the entry at which the running
    total, walked in increasing order over every part's entries, first reaches it (inf if never).
    Each prefix is non-decreasing (running sums of one part's block times, cheapest first)."""
    cdef Py_ssize_t parts = len(prefixes), i
    cdef double[::1] view
    cdef const double** data = <const double**> malloc(parts * sizeof(double*))
    cdef Py_ssize_t* length = <Py_ssize_t*> malloc(parts * sizeof(Py_ssize_t))
    cdef Py_ssize_t* at = <Py_ssize_t*> malloc(parts * sizeof(Py_ssize_t))
    cdef long* weight = <long*> malloc(parts * sizeof(long))
    if data == NULL or length == NULL or at == NULL or weight == NULL:
        free(data); free(length); free(at); free(weight)
        raise MemoryError()
    try:
        for i in range(parts):
            view = prefixes[i]
            data[i] = &view[0] if view.shape[0] else NULL
            length[i] = view.shape[0]
            weight[i] = counts[i]
        return _least(data, length, weight, at, parts, blocks, start)
    finally:
        free(data); free(length); free(at); free(weight)


cdef void _prefix(double* values, Py_ssize_t count) noexcept:
    """Sorts ``values`` and replaces them by their running sums (cheapest first)."""
    cdef Py_ssize_t b
    qsort(values, count, sizeof(double), _ascending)
    for b in range(1, count):
        values[b] += values[b - 1]


cdef class PackedPart:
    """One part's cheapest-first running sums of blocks [lo, n) for the packing floor: over every
    block, and over those at least half the median of ``ref`` (part 0's times) from lo on. They
    depend only on the part's and part 0's tables and lo, so the planner keeps one per those and
    shares it across the shapes and stage counts that ``packed_floor`` is asked about."""

    cdef double* sums  # ``every`` running sums over every block, then ``kept`` over the kept ones
    cdef readonly Py_ssize_t every, kept

    def __cinit__(self, const double[::1] times, const double[::1] ref, Py_ssize_t lo):
        cdef Py_ssize_t n = ref.shape[0], b
        cdef Py_ssize_t m = n - lo if n > lo else 0
        cdef double half
        cdef double* scratch
        if times.shape[0] != n:
            raise ValueError("every part's block times must be as long as ref")
        if lo < 0:
            raise ValueError("lo must be >= 0")
        self.every = m
        self.kept = 0
        self.sums = <double*> malloc((2 * m + 1) * sizeof(double))
        if self.sums == NULL:
            raise MemoryError()
        if m == 0:
            return
        for b in range(m):
            self.sums[b] = times[lo + b]
        _prefix(self.sums, m)
        scratch = self.sums + m  # ref's times from lo on, sorted for the median, then overwritten
        for b in range(m):
            scratch[b] = ref[lo + b]
        qsort(scratch, m, sizeof(double), _ascending)
        half = (scratch[m // 2] if m % 2 else (scratch[m // 2 - 1] + scratch[m // 2]) / 2.0) / 2.0
        for b in range(m):
            if ref[lo + b] >= half:
                scratch[self.kept] = times[lo + b]
                self.kept += 1
        _prefix(scratch, self.kept)

    def __dealloc__(self):
        free(self.sums)


def packed_floor(list parts, list counts, double start) -> float:
    """``start`` raised to ``least_packing`` of the ``parts`` (``PackedPart``s of one lo and one part 0,
    ``counts[i]`` stages on each), once over every block and once over the kept ones. Fewer blocks
    never need a larger T, so both passes are floors (``bounds._packing_floor``)."""
    cdef Py_ssize_t n_parts = len(parts), i
    cdef PackedPart part
    cdef double best = start, found
    cdef const double** data
    cdef Py_ssize_t* length
    cdef Py_ssize_t* at
    cdef long* weight
    if n_parts == 0:
        raise ValueError("the packing floor needs a part")
    part = <PackedPart?> parts[0]  # anything else, None included, is a TypeError
    if part.every == 0:
        return start
    data = <const double**> malloc(n_parts * sizeof(double*))
    length = <Py_ssize_t*> malloc(n_parts * sizeof(Py_ssize_t))
    at = <Py_ssize_t*> malloc(n_parts * sizeof(Py_ssize_t))
    weight = <long*> malloc(n_parts * sizeof(long))
    if data == NULL or length == NULL or at == NULL or weight == NULL:
        free(data); free(length); free(at); free(weight)
        raise MemoryError()
    try:
        for i in range(n_parts):
            part = <PackedPart?> parts[i]
            if part.every != (<PackedPart> parts[0]).every or part.kept != (<PackedPart> parts[0]).kept:
                raise ValueError("every part must be packed from one lo and one part 0")
            data[i] = part.sums
            length[i] = part.every
            weight[i] = counts[i]
        found = _least(data, length, weight, at, n_parts, length[0], start)
        best = found if found > best else best
        for i in range(n_parts):
            part = parts[i]
            data[i] = part.sums + part.every
            length[i] = part.kept
        found = _least(data, length, weight, at, n_parts, length[0], start)
        return found if found > best else best
    finally:
        free(data); free(length); free(at); free(weight)


def packing_floor(list times, const double[::1] ref, list counts, Py_ssize_t lo, double start) -> float:
    """``packed_floor`` of each part's ``times[i]`` (its time of each block) packed from ``lo`` against
    ``ref`` (part 0's times): the packing floor of blocks [lo, n) in one call."""
    if not times:
        return start if lo >= ref.shape[0] else float("inf")
    return packed_floor([PackedPart(t, ref, lo) for t in times], counts, start)
