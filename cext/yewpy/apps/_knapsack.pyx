# cython: language_level=3, boundscheck=False, wraparound=False, cdivision=True
"""Compiled 0/1 knapsack core: items in profit-density order, Dantzig bound."""

from libc.math cimport floor
from libc.stdlib cimport free, malloc, realloc
from libc.string cimport memcpy
from cpython.bytes cimport PyBytes_AS_STRING, PyBytes_FromStringAndSize, PyBytes_GET_SIZE

from yewpy.core cimport OptimisationCore


cdef class KnapsackCore(OptimisationCore):
    """Node: next item index, profit, weight and the items taken (in density order).

    Children add each later item that still fits, in density order; sibling bounds are
    non-increasing, so the prune level is valid.
    """
    cdef readonly int n
    cdef readonly double capacity
    cdef bint integral
    cdef double* p
    cdef double* w
    cdef double* cum_p      # cum_p[k] = profit of items 0..k-1
    cdef double* cum_w
    cdef int* nxt           # per frame: first item a child may add
    cdef int* pos           # per frame: generator position
    cdef int* item          # per frame: the item this node added (-1 at the task root)
    cdef int* parent        # per frame: the frame it was generated from (-1: task root)
    cdef double* prof
    cdef double* wt
    cdef list base_items    # items taken above the task root
    cdef object _args       # constructor arguments, for pickling

    def __init__(self, profits, weights, double capacity):
        self.n = len(profits)
        self.capacity = capacity
        self.p = <double*>malloc(max(self.n, 1) * sizeof(double))
        self.w = <double*>malloc(max(self.n, 1) * sizeof(double))
        self.cum_p = <double*>malloc((self.n + 1) * sizeof(double))
        self.cum_w = <double*>malloc((self.n + 1) * sizeof(double))
        if not (self.p and self.w and self.cum_p and self.cum_w):
            raise MemoryError()
        self.integral = True
        self.cum_p[0] = self.cum_w[0] = 0
        for k in range(self.n):
            self.p[k] = profits[k]
            self.w[k] = weights[k]
            self.integral = self.integral and self.p[k] == floor(self.p[k])
            self.cum_p[k + 1] = self.cum_p[k] + self.p[k]
            self.cum_w[k + 1] = self.cum_w[k] + self.w[k]
        self.has_bound = True
        self.base_items = []
        self._args = (list(profits), list(weights), capacity)

    def __reduce__(self):
        return (KnapsackCore, self._args)

    def __dealloc__(self):
        free(self.p)
        free(self.w)
        free(self.cum_p)
        free(self.cum_w)
        free(self.nxt)
        free(self.pos)
        free(self.item)
        free(self.parent)
        free(self.prof)
        free(self.wt)

    cdef int reserve(self, int frames) except -1:
        self.nxt = <int*>realloc(self.nxt, frames * sizeof(int))
        self.pos = <int*>realloc(self.pos, frames * sizeof(int))
        self.item = <int*>realloc(self.item, frames * sizeof(int))
        self.parent = <int*>realloc(self.parent, frames * sizeof(int))
        self.prof = <double*>realloc(self.prof, frames * sizeof(double))
        self.wt = <double*>realloc(self.wt, frames * sizeof(double))
        if not (self.nxt and self.pos and self.item and self.parent and self.prof and self.wt):
            raise MemoryError()
        return 0

    cdef int set_root(self) except -1:
        self.nxt[0] = 0
        self.prof[0] = self.wt[0] = 0
        self.item[0] = -1
        self.parent[0] = -1
        self.base_items = []
        return 0

    cdef int load(self, object node) except -1:
        nxt, profit, weight, items = node
        self.nxt[0] = nxt
        self.prof[0] = profit
        self.wt[0] = weight
        self.item[0] = -1
        self.parent[0] = -1
        self.base_items = list(items)
        return 0

    cdef list _items(self, int frame):
        cdef list added = []
        while frame > 0:
            added.append(self.item[frame])
            frame = self.parent[frame]
        return self.base_items + added[::-1]

    cdef object dump(self, int frame):
        return (self.nxt[frame], self.prof[frame], self.wt[frame], tuple(self._items(frame)))

    cdef object solution(self, int frame):
        return self._items(frame)

    cdef int open(self, int frame) except -1:
        self.pos[frame] = self.nxt[frame]
        return 0

    cdef int next(self, int frame, int dest) except -1:
        cdef int j = self.pos[frame]
        cdef double room = self.capacity - self.wt[frame]
        while j < self.n and self.w[j] > room:
            j += 1
        if j >= self.n:
            self.pos[frame] = j
            return 0
        self.pos[frame] = j + 1
        self.nxt[dest] = j + 1
        self.prof[dest] = self.prof[frame] + self.p[j]
        self.wt[dest] = self.wt[frame] + self.w[j]
        self.item[dest] = j
        self.parent[dest] = frame
        return 1

    cdef double objective(self, int frame) except? -1:
        return self.prof[frame]

    cdef double bound(self, int frame) except? -1:
        cdef int i = self.nxt[frame]
        cdef double room = self.capacity - self.wt[frame]
        cdef double limit = self.cum_w[i] + room
        cdef int lo = i, hi = self.n, mid
        while lo < hi:                      # largest k with cum_w[k] <= limit
            mid = (lo + hi + 1) >> 1
            if self.cum_w[mid] <= limit:
                lo = mid
            else:
                hi = mid - 1
        cdef double b = self.prof[frame] + self.cum_p[lo] - self.cum_p[i]
        if lo < self.n:
            b += (limit - self.cum_w[lo]) * self.p[lo] / self.w[lo]
        return floor(b) if self.integral else b
