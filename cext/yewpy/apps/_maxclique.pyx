# cython: language_level=3, boundscheck=False, wraparound=False, cdivision=True
"""Compiled maximum-clique core: bitset MCSa1 with San Segundo's BBMC colour-class bound.

Vertices are numbered 0..n-1 in the search order (the caller renumbers them by degree).
The tree is that of shared/bench/mcs_ref.c: colour P greedily, branch on the last coloured
vertex first, child bound = |C| + colour.
"""

from libc.stdint cimport uint64_t, int32_t
from libc.stdlib cimport free, malloc, realloc
from libc.string cimport memcpy, memset
from cpython.bytes cimport PyBytes_AS_STRING, PyBytes_FromStringAndSize, PyBytes_GET_SIZE

from yewpy.core cimport KIND_DECISION, OptimisationCore


cdef extern from *:
    int __builtin_popcountll(unsigned long long) nogil
    int __builtin_ctzll(unsigned long long) nogil


cdef inline int _popcount(uint64_t x) noexcept nogil:
    return __builtin_popcountll(x)



cdef class MaxCliqueCore(OptimisationCore):
    """Node: clique C (its size and members) and candidate set P (common neighbours of C).

    ``expansions`` counts nodes whose candidate set is non-empty when their generator opens,
    which is what mcs_ref counts as nodes.
    """
    cdef readonly int n
    cdef readonly int words
    cdef uint64_t* adj          # n rows of `words` words
    cdef uint64_t* cand         # per frame: P
    cdef int32_t* order         # per frame: coloured vertices, n each
    cdef int32_t* colour        # per frame: their colours, n each
    cdef int32_t* left          # per frame: uncoloured-yet children remaining
    cdef int32_t* size          # per frame: |C|
    cdef int32_t* chosen        # per frame: the vertex added to reach it
    cdef int32_t* cbound        # per frame: its bound, set by the parent
    cdef int32_t* parent        # per frame: the frame it was generated from (-1: task root)
    cdef uint64_t* scratch      # 2 * words
    cdef list base              # clique members above the task root
    cdef readonly long long expansions
    cdef object _rows

    def __init__(self, rows, int n, target=None):
        """``rows``: n adjacency bitsets as a flat sequence of n * ceil(n/64) uint64 words."""
        self.n = n
        self.words = max(1, (n + 63) // 64)
        self.adj = <uint64_t*>malloc(n * self.words * sizeof(uint64_t) + 8)
        self.scratch = <uint64_t*>malloc(2 * self.words * sizeof(uint64_t))
        if not (self.adj and self.scratch):
            raise MemoryError()
        for k in range(n * self.words):
            self.adj[k] = rows[k]
        self._rows = (rows, n, target)
        self.has_bound = True
        self.base = []
        if target is not None:
            self.kind = KIND_DECISION

    def __reduce__(self):
        return (MaxCliqueCore, self._rows)

    def counters(self):
        """Expansions so far: nodes opened with a non-empty candidate set (mcs_ref's nodes)."""
        return {"expansions": self.expansions}

    def __dealloc__(self):
        free(self.adj)
        free(self.cand)
        free(self.order)
        free(self.colour)
        free(self.left)
        free(self.size)
        free(self.chosen)
        free(self.cbound)
        free(self.parent)
        free(self.scratch)

    cdef int reserve(self, int frames) except -1:
        self.cand = <uint64_t*>realloc(self.cand, frames * self.words * sizeof(uint64_t))
        self.order = <int32_t*>realloc(self.order, frames * max(self.n, 1) * sizeof(int32_t))
        self.colour = <int32_t*>realloc(self.colour, frames * max(self.n, 1) * sizeof(int32_t))
        self.left = <int32_t*>realloc(self.left, frames * sizeof(int32_t))
        self.size = <int32_t*>realloc(self.size, frames * sizeof(int32_t))
        self.chosen = <int32_t*>realloc(self.chosen, frames * sizeof(int32_t))
        self.cbound = <int32_t*>realloc(self.cbound, frames * sizeof(int32_t))
        self.parent = <int32_t*>realloc(self.parent, frames * sizeof(int32_t))
        if not (self.cand and self.order and self.colour and self.left and self.size
                and self.chosen and self.cbound and self.parent):
            raise MemoryError()
        return 0

    cdef int set_root(self) except -1:
        memset(self.cand, 0, self.words * sizeof(uint64_t))
        for v in range(self.n):
            self.cand[v >> 6] |= (<uint64_t>1) << (v & 63)
        self.size[0] = 0
        self.cbound[0] = self.n
        self.parent[0] = -1
        self.base = []
        return 0

    cdef int load(self, object node) except -1:
        cdef char* raw = PyBytes_AS_STRING(node)
        cdef int32_t head[2]
        memcpy(head, raw, sizeof(head))
        cdef int32_t* members = <int32_t*>(raw + sizeof(head))
        self.size[0] = head[0]
        self.cbound[0] = head[1]
        self.parent[0] = -1
        self.base = [members[k] for k in range(head[0])]
        memcpy(self.cand, raw + sizeof(head) + head[0] * sizeof(int32_t),
               self.words * sizeof(uint64_t))
        return 0

    cdef list _members(self, int frame):
        cdef list added = []
        while frame > 0:
            added.append(self.chosen[frame])
            frame = self.parent[frame]
        return self.base + added[::-1]

    cdef object dump(self, int frame):
        cdef list members = self._members(frame)
        cdef int k = len(members)
        cdef Py_ssize_t nbytes = 2 * sizeof(int32_t) + k * sizeof(int32_t) + self.words * sizeof(uint64_t)
        out = PyBytes_FromStringAndSize(NULL, nbytes)
        cdef char* raw = PyBytes_AS_STRING(out)
        cdef int32_t head[2]
        head[0] = self.size[frame]
        head[1] = self.cbound[frame]
        memcpy(raw, head, sizeof(head))
        cdef int32_t* dst = <int32_t*>(raw + sizeof(head))
        for i in range(k):
            dst[i] = members[i]
        memcpy(raw + sizeof(head) + k * sizeof(int32_t), self.cand + frame * self.words,
               self.words * sizeof(uint64_t))
        return out

    cdef object solution(self, int frame):
        return self._members(frame)

    cdef int open(self, int frame) except -1:
        """Colour P greedily, one colour class at a time, scanning vertices in index order."""
        cdef int W = self.words
        cdef uint64_t* p = self.cand + frame * W
        cdef uint64_t* rest = self.scratch
        cdef uint64_t* q = self.scratch + W
        cdef int32_t* order = self.order + frame * self.n
        cdef int32_t* colour = self.colour + frame * self.n
        cdef int i, k = 0, c = 0, v, start, remaining = 0
        cdef uint64_t* row
        for i in range(W):
            rest[i] = p[i]
            remaining += _popcount(p[i])
        if remaining:
            self.expansions += 1
        while remaining:
            c += 1
            memcpy(q, rest, W * sizeof(uint64_t))
            start = 0
            while True:
                while start < W and q[start] == 0:
                    start += 1
                if start == W:
                    break
                v = start * 64 + __builtin_ctzll(q[start])
                rest[start] &= ~((<uint64_t>1) << (v & 63))
                q[start] &= ~((<uint64_t>1) << (v & 63))
                row = self.adj + v * W
                for i in range(start, W):
                    q[i] &= ~row[i]
                order[k] = v
                colour[k] = c
                k += 1
                remaining -= 1
        self.left[frame] = k
        return 0

    cdef int next(self, int frame, int dest) except -1:
        cdef int k = self.left[frame]
        if k == 0:
            return 0
        k -= 1
        self.left[frame] = k
        cdef int W = self.words
        cdef int v = self.order[frame * self.n + k]
        cdef uint64_t* p = self.cand + frame * W
        cdef uint64_t* np = self.cand + dest * W
        cdef uint64_t* row = self.adj + v * W
        for i in range(W):
            np[i] = p[i] & row[i]
        p[v >> 6] &= ~((<uint64_t>1) << (v & 63))
        self.size[dest] = self.size[frame] + 1
        self.chosen[dest] = v
        self.parent[dest] = frame
        self.cbound[dest] = self.size[frame] + self.colour[frame * self.n + k]
        return 1

    cdef double objective(self, int frame) except? -1:
        return self.size[frame]

    cdef double bound(self, int frame) except? -1:
        return self.cbound[frame]
