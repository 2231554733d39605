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


def packing_floor(list times, const double[::1] ref, list counts, Py_ssize_t lo, double start) -> float:
    """``start`` raised to ``least_packing`` of blocks [lo, n) on the live parts (``times[i]``: part
    i's time of each block, ``counts[i]`` its stages), each part's running sums of its cheapest
    blocks first: once over every block, and once without the blocks under half the median of
    ``ref`` (part 0's times) from lo on, which every part leaves out alike. Fewer blocks never
    need a larger T, so both passes are floors (``bounds._packing_floor``)."""
    cdef Py_ssize_t parts = len(times), n = ref.shape[0], i, b, kept
    cdef Py_ssize_t m = n - lo if n > lo else 0
    cdef double best = start, found, half
    cdef const double[::1] view
    cdef double* scratch
    cdef double* pool
    cdef const double** data
    cdef const double** source
    cdef Py_ssize_t* length
    cdef Py_ssize_t* at
    cdef long* weight
    if m == 0:
        return start
    pool = <double*> malloc((parts + 1) * m * sizeof(double))
    data = <const double**> malloc(parts * sizeof(double*))
    length = <Py_ssize_t*> malloc(parts * sizeof(Py_ssize_t))
    at = <Py_ssize_t*> malloc(parts * sizeof(Py_ssize_t))
    weight = <long*> malloc(parts * sizeof(long))
    source = <const double**> malloc(parts * sizeof(double*))
    if pool == NULL or data == NULL or length == NULL or at == NULL or weight == NULL or source == NULL:
        free(pool); free(data); free(length); free(at); free(weight); free(source)
        raise MemoryError()
    try:
        for i in range(parts):
            view = times[i]
            if view.shape[0] != n:
                raise ValueError("every part's block times must be as long as ref")
            source[i] = &view[0]
            weight[i] = counts[i]
            data[i] = pool + i * m
            length[i] = m
        # every block: each part's times from lo on, sorted, as running sums
        for i in range(parts):
            for b in range(m):
                (<double*> data[i])[b] = source[i][lo + b]
            _prefix(<double*> data[i], m)
        found = _least(data, length, weight, at, parts, m, start)
        best = found if found > best else best
        # without the blocks under half the median of ref from lo on
        scratch = pool + parts * m
        for b in range(m):
            scratch[b] = ref[lo + b]
        qsort(scratch, m, sizeof(double), _ascending)
        half = (scratch[m // 2] if m % 2 else (scratch[m // 2 - 1] + scratch[m // 2]) / 2.0) / 2.0
        kept = 0
        for b in range(m):
            if ref[lo + b] >= half:
                for i in range(parts):
                    (<double*> data[i])[kept] = source[i][lo + b]
                kept += 1
        for i in range(parts):
            length[i] = kept
            _prefix(<double*> data[i], kept)
        found = _least(data, length, weight, at, parts, kept, start)
        return found if found > best else best
    finally:
        free(pool); free(data); free(length); free(at); free(weight); free(source)
