# cython: language_level=3, boundscheck=False, wraparound=False
"""Compiled n-queens core: rows filled in order, Richards' bit-pattern formulation."""

from libc.stdint cimport uint64_t
from libc.stdlib cimport free, realloc
from libc.string cimport memcpy
from cpython.bytes cimport PyBytes_AS_STRING, PyBytes_FromStringAndSize

from yewpy.core cimport EnumerationCore


cdef class NQueensCore(EnumerationCore):
    """Node: the columns and both diagonals attacked by the queens of the first rows.

    Children are the safe columns of the next row, lowest first; a node with all n columns
    used is a complete board, and the value counts those.
    """
    cdef readonly int n
    cdef uint64_t full
    cdef uint64_t* cols
    cdef uint64_t* left
    cdef uint64_t* right
    cdef uint64_t* avail
    cdef long long boards

    def __init__(self, int n):
        if not 1 <= n <= 64:
            raise ValueError(f"n-queens needs 1 <= n <= 64, got {n}")
        self.n = n
        self.full = (<uint64_t>1 << n) - 1 if n < 64 else <uint64_t>0xFFFFFFFFFFFFFFFF

    def __dealloc__(self):
        free(self.cols)
        free(self.left)
        free(self.right)
        free(self.avail)

    cdef int reserve(self, int frames) except -1:
        cdef size_t size = frames * sizeof(uint64_t)
        self.cols = <uint64_t*>realloc(self.cols, size)
        self.left = <uint64_t*>realloc(self.left, size)
        self.right = <uint64_t*>realloc(self.right, size)
        self.avail = <uint64_t*>realloc(self.avail, size)
        if not (self.cols and self.left and self.right and self.avail):
            raise MemoryError()
        return 0

    cdef int set_root(self) except -1:
        self.cols[0] = self.left[0] = self.right[0] = 0
        return 0

    cdef int load(self, object node) except -1:
        cdef uint64_t buf[3]
        memcpy(buf, PyBytes_AS_STRING(node), sizeof(buf))
        self.cols[0], self.left[0], self.right[0] = buf[0], buf[1], buf[2]
        return 0

    cdef object dump(self, int frame):
        cdef uint64_t buf[3]
        buf[0], buf[1], buf[2] = self.cols[frame], self.left[frame], self.right[frame]
        return PyBytes_FromStringAndSize(<char*>buf, sizeof(buf))

    cdef int open(self, int frame) except -1:
        self.avail[frame] = ~(self.cols[frame] | self.left[frame] | self.right[frame]) & self.full
        return 0

    cdef int next(self, int frame, int dest) except -1:
        cdef uint64_t avail = self.avail[frame]
        if avail == 0:
            return 0
        cdef uint64_t bit = avail & (~avail + 1)
        self.avail[frame] = avail ^ bit
        self.cols[dest] = self.cols[frame] | bit
        self.left[dest] = ((self.left[frame] | bit) << 1) & self.full
        self.right[dest] = (self.right[frame] | bit) >> 1
        return 1

    cdef int leaf(self, int frame) except -1:
        return (~(self.cols[frame] | self.left[frame] | self.right[frame]) & self.full) == 0

    cdef int accumulate(self, int frame) except -1:
        if self.cols[frame] == self.full:
            self.boards += 1
        return 0

    cdef object take_value(self):
        value = self.boards
        self.boards = 0
        return value

    def __reduce__(self):
        return (NQueensCore, (self.n,))
