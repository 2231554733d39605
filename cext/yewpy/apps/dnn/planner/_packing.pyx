# cython: language_level=3, boundscheck=False, wraparound=False, cdivision=True
"""Compiled core of the planner's packing floor (``bounds._packing_floor``).

Stages on several parts of different GPU kinds hold whole blocks: within a largest stage time T, a
stage of part i holds at most k_i(T) blocks, the count of its cheapest blocks whose running sum is
within T. The blocks fit only if the parts' stages together hold them all, sum c_i k_i(T) >= blocks.
"""

from libc.stdlib cimport free, malloc


def least_packing(list prefixes, list counts, Py_ssize_t blocks, double start) -> float:
    """The least T >= ``start`` at which sum over parts of counts[i] x (entries of prefixes[i] at most
    T) reaches ``blocks``: ``start`` where it already does, else the entry at which the running
    total, walked in increasing order over every part's entries, first reaches it (inf if never).
    Each prefix is non-decreasing (running sums of one part's block times, cheapest first)."""
    cdef Py_ssize_t parts = len(prefixes), i, best
    cdef double[::1] view
    cdef double value, low
    cdef Py_ssize_t held = 0
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
    finally:
        free(data); free(length); free(at); free(weight)
