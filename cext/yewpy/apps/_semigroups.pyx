# cython: language_level=3, boundscheck=False, wraparound=False, cdivision=True
"""Compiled numerical-semigroup core: the Fromentin-Hivert tree, counted per genus.

A semigroup S is held as its decomposition numbers dec[x] = #{(a, b) in S^2 : a + b = x, a <= b}
for x < size (a gap has dec 0; x > 0 is a minimal generator exactly when dec[x] == 1), plus its
conductor, multiplicity and genus.  The children of S are S \\ {x} for the minimal generators x
in [conductor, conductor + multiplicity): removing x makes dec[y] drop by one wherever y - x is
in S, one branch-free pass the C compiler vectorises.
"""

from libc.stdint cimport uint8_t, uint16_t
from libc.stdlib cimport calloc, free, realloc
from libc.string cimport memcpy, memset
from cpython.bytes cimport PyBytes_AS_STRING, PyBytes_FromStringAndSize, PyBytes_GET_SIZE

from yewpy.core cimport EnumerationCore

# dec[x] <= x // 2 + 1 must fit a byte for every x < size = 3 * genus + 3.
MAX_GENUS = 160

cdef int HEADER = 6            # a dumped node: conductor, multiplicity, genus as uint16, then dec


cdef extern from *:
    """
    /* dst := dec of S minus {x}, from src = dec of S (x a minimal generator of S): dec[y] drops
       by one wherever y - x is in S.  Plain C with `restrict` and a size_t index so that the
       compiler vectorises the pass even under Python's -fwrapv (an int index defeats it). */
    static inline void yewpy_sg_remove_generator(const unsigned char *restrict src,
                                                 unsigned char *restrict dst, int x, int size) {
        const unsigned char *restrict tail = src + x;
        unsigned char *restrict out = dst + x;
        size_t n = (size_t)(size - x);
        memcpy(dst, src, (size_t)x);
        for (size_t i = 0; i < n; i++)
            out[i] = (unsigned char)(tail[i] - (src[i] != 0));
    }
    """
    void remove_generator "yewpy_sg_remove_generator" (const uint8_t* src, uint8_t* dst, int x,
                                                       int size) noexcept nogil


cdef class SemigroupsCore(EnumerationCore):
    """Every numerical semigroup of genus 0..genus, one node each; the value is the per-genus count.

    ``take_value`` gives a tuple ``(n(0), ..., n(genus))`` and ``combine`` adds such tuples
    element-wise, so the partial counts of every worker and rank merge exactly.  The tree is cut
    at ``genus`` by the core itself (nodes of that genus get no children), whatever the engine's
    depth limit.
    """
    cdef readonly int genus
    cdef readonly int size          # entries of dec per node: enough for every generator checked
    cdef uint8_t* dec               # frame f's node: dec[f * size : (f + 1) * size]
    cdef int* cond
    cdef int* mult
    cdef int* gen
    cdef int* pos                   # frame f's child generator: next candidate x
    cdef int* stop                  #   ... and one past the last (conductor + multiplicity)
    cdef long long* counts

    zero = ()

    def __init__(self, int genus):
        if not 0 <= genus <= MAX_GENUS:
            raise ValueError(f"semigroups needs 0 <= genus <= {MAX_GENUS}, got {genus}")
        self.genus = genus
        # A node of genus 0 < g < genus has conductor <= 2g and multiplicity <= g + 1, so its
        # candidates lie below 3g + 1 <= 3 * genus - 2 (the root's window is [1, 2)); a node's
        # dec[y] depends only on its parent's dec up to y, so cutting the array loses nothing.
        # The margin of 5 is cheap (a trial with 3 * genus - 3 entries gave wrong counts).
        self.size = 3 * genus + 3
        self.counts = <long long*>calloc(genus + 1, sizeof(long long))
        if self.counts is NULL:
            raise MemoryError()

    def __dealloc__(self):
        free(self.dec)
        free(self.cond)
        free(self.mult)
        free(self.gen)
        free(self.pos)
        free(self.stop)
        free(self.counts)

    cdef int reserve(self, int frames) except -1:
        cdef size_t ints = frames * sizeof(int)
        self.dec = <uint8_t*>realloc(self.dec, <size_t>frames * self.size)
        self.cond = <int*>realloc(self.cond, ints)
        self.mult = <int*>realloc(self.mult, ints)
        self.gen = <int*>realloc(self.gen, ints)
        self.pos = <int*>realloc(self.pos, ints)
        self.stop = <int*>realloc(self.stop, ints)
        if not (self.dec and self.cond and self.mult and self.gen and self.pos and self.stop):
            raise MemoryError()
        return 0

    cdef int set_root(self) except -1:
        # N: every x is in, dec[x] = x // 2 + 1.  Its conductor is 0, but generators are
        # positive, so the candidate window starts at 1 (giving the single child N \ {1}).
        cdef int x
        for x in range(self.size):
            self.dec[x] = x // 2 + 1
        self.cond[0] = 1
        self.mult[0] = 1
        self.gen[0] = 0
        return 0

    cdef int load(self, object node) except -1:
        if PyBytes_GET_SIZE(node) != HEADER + self.size:
            raise ValueError("a semigroups task of the wrong size (from a core of another genus?)")
        cdef const char* buf = PyBytes_AS_STRING(node)
        cdef uint16_t head[3]
        memcpy(head, buf, HEADER)
        self.cond[0], self.mult[0], self.gen[0] = head[0], head[1], head[2]
        memcpy(self.dec, buf + HEADER, self.size)
        return 0

    cdef object dump(self, int frame):
        out = PyBytes_FromStringAndSize(NULL, HEADER + self.size)
        cdef char* buf = PyBytes_AS_STRING(out)
        cdef uint16_t head[3]
        head[0], head[1], head[2] = self.cond[frame], self.mult[frame], self.gen[frame]
        memcpy(buf, head, HEADER)
        memcpy(buf + HEADER, self.dec + <size_t>frame * self.size, self.size)
        return out

    cdef int open(self, int frame) except -1:
        self.pos[frame] = self.cond[frame]
        self.stop[frame] = self.cond[frame] + self.mult[frame] if self.gen[frame] < self.genus else 0
        return 0

    cdef int next(self, int frame, int dest) except -1:
        cdef const uint8_t* src = self.dec + <size_t>frame * self.size
        cdef int x = self.pos[frame]
        cdef int stop = self.stop[frame]
        while x < stop and src[x] != 1:
            x += 1
        if x >= stop:
            self.pos[frame] = stop
            return 0
        self.pos[frame] = x + 1
        remove_generator(src, self.dec + <size_t>dest * self.size, x, self.size)
        self.cond[dest] = x + 1
        self.mult[dest] = x + 1 if x == self.mult[frame] else self.mult[frame]
        self.gen[dest] = self.gen[frame] + 1
        return 1

    cdef int accumulate(self, int frame) except -1:
        self.counts[self.gen[frame]] += 1
        return 0

    cdef object take_value(self):
        value = tuple([self.counts[g] for g in range(self.genus + 1)])
        memset(self.counts, 0, (self.genus + 1) * sizeof(long long))
        return value

    def combine(self, a, b):
        """Element-wise sum of two per-genus count tuples (``()`` is the zero)."""
        if len(a) < len(b):
            a, b = b, a
        return tuple([x + (b[i] if i < len(b) else 0) for i, x in enumerate(a)])

    def semigroup(self, object node):
        """A dumped node as (gaps, conductor, multiplicity, genus), for checks and display."""
        if len(node) != HEADER + self.size:
            raise ValueError("a semigroups node of the wrong size")
        cdef const uint8_t* d = <const uint8_t*>PyBytes_AS_STRING(node) + HEADER
        cdef const uint16_t* head = <const uint16_t*>PyBytes_AS_STRING(node)
        gaps = tuple([x for x in range(1, min(self.size, 2 * head[2] + 1)) if d[x] == 0])
        return gaps, head[0] if head[2] else 0, head[1], head[2]

    def __reduce__(self):
        return (SemigroupsCore, (self.genus,))
