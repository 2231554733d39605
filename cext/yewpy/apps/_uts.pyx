# cython: language_level=3, boundscheck=False, wraparound=False, cdivision=True
"""Compiled Unbalanced Tree Search (UTS) core: the SHA-1 splittable generator and its trees.

A node is a 20-byte SHA-1 digest and a height. Child i of a node is SHA1(digest || BE32(i));
the node's own digest decides how many children it has (binomial, geometric with four
shapes, hybrid, balanced), exactly as in UTS 2.x (shared/instances/uts/README.md).

SHA-1 is our own: a portable C version, and one using the x86 SHA extensions (SHA-NI) that
is picked at import time when the CPU has them. Every UTS message fits one 64-byte block,
so a node costs one compression from the SHA-1 initial value.
"""

cimport cython
from libc.math cimport floor, log, pow, sin
from libc.stdint cimport int32_t, uint32_t
from libc.stdlib cimport free, realloc
from cpython.bytes cimport PyBytes_AS_STRING, PyBytes_FromStringAndSize, PyBytes_GET_SIZE

from yewpy.core cimport EnumerationCore


cdef extern from *:
    """
    #include <stdint.h>
    #include <string.h>
    #if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
    #include <immintrin.h>
    #include <cpuid.h>
    #define UTS_SHANI 1
    #endif

    #define UTS_IV0 0x67452301u
    #define UTS_IV1 0xEFCDAB89u
    #define UTS_IV2 0x98BADCFEu
    #define UTS_IV3 0x10325476u
    #define UTS_IV4 0xC3D2E1F0u
    #define UTS_ROL(x, n) (((x) << (n)) | ((x) >> (32 - (n))))

    /* One SHA-1 compression of the 16-word (big-endian-read) block from the initial value,
       fully unrolled, the message schedule kept in a 16-word ring. */
    #define UTS_F1(b, c, d) (((c ^ d) & b) ^ d)
    #define UTS_F2(b, c, d) (b ^ c ^ d)
    #define UTS_F3(b, c, d) ((b & c) | ((b | c) & d))
    #define UTS_W(t) (w[(t) & 15] = UTS_ROL(w[((t) + 13) & 15] ^ w[((t) + 8) & 15] ^ w[((t) + 2) & 15] ^ w[(t) & 15], 1))
    #define UTS_R0(a,b,c,d,e,t) e += UTS_ROL(a,5) + UTS_F1(b,c,d) + 0x5A827999u + w[t]; b = UTS_ROL(b,30);
    #define UTS_R1(a,b,c,d,e,t) e += UTS_ROL(a,5) + UTS_F1(b,c,d) + 0x5A827999u + UTS_W(t); b = UTS_ROL(b,30);
    #define UTS_R2(a,b,c,d,e,t) e += UTS_ROL(a,5) + UTS_F2(b,c,d) + 0x6ED9EBA1u + UTS_W(t); b = UTS_ROL(b,30);
    #define UTS_R3(a,b,c,d,e,t) e += UTS_ROL(a,5) + UTS_F3(b,c,d) + 0x8F1BBCDCu + UTS_W(t); b = UTS_ROL(b,30);
    #define UTS_R4(a,b,c,d,e,t) e += UTS_ROL(a,5) + UTS_F2(b,c,d) + 0xCA62C1D6u + UTS_W(t); b = UTS_ROL(b,30);
    static void uts_sha1_portable(const uint32_t *block, uint32_t *out) {
        uint32_t w[16]; memcpy(w, block, 64);
        uint32_t a = UTS_IV0, b = UTS_IV1, c = UTS_IV2, d = UTS_IV3, e = UTS_IV4;
        UTS_R0(a,b,c,d,e,0) UTS_R0(e,a,b,c,d,1) UTS_R0(d,e,a,b,c,2) UTS_R0(c,d,e,a,b,3) UTS_R0(b,c,d,e,a,4)
        UTS_R0(a,b,c,d,e,5) UTS_R0(e,a,b,c,d,6) UTS_R0(d,e,a,b,c,7) UTS_R0(c,d,e,a,b,8) UTS_R0(b,c,d,e,a,9)
        UTS_R0(a,b,c,d,e,10) UTS_R0(e,a,b,c,d,11) UTS_R0(d,e,a,b,c,12) UTS_R0(c,d,e,a,b,13) UTS_R0(b,c,d,e,a,14)
        UTS_R0(a,b,c,d,e,15) UTS_R1(e,a,b,c,d,16) UTS_R1(d,e,a,b,c,17) UTS_R1(c,d,e,a,b,18) UTS_R1(b,c,d,e,a,19)
        UTS_R2(a,b,c,d,e,20) UTS_R2(e,a,b,c,d,21) UTS_R2(d,e,a,b,c,22) UTS_R2(c,d,e,a,b,23) UTS_R2(b,c,d,e,a,24)
        UTS_R2(a,b,c,d,e,25) UTS_R2(e,a,b,c,d,26) UTS_R2(d,e,a,b,c,27) UTS_R2(c,d,e,a,b,28) UTS_R2(b,c,d,e,a,29)
        UTS_R2(a,b,c,d,e,30) UTS_R2(e,a,b,c,d,31) UTS_R2(d,e,a,b,c,32) UTS_R2(c,d,e,a,b,33) UTS_R2(b,c,d,e,a,34)
        UTS_R2(a,b,c,d,e,35) UTS_R2(e,a,b,c,d,36) UTS_R2(d,e,a,b,c,37) UTS_R2(c,d,e,a,b,38) UTS_R2(b,c,d,e,a,39)
        UTS_R3(a,b,c,d,e,40) UTS_R3(e,a,b,c,d,41) UTS_R3(d,e,a,b,c,42) UTS_R3(c,d,e,a,b,43) UTS_R3(b,c,d,e,a,44)
        UTS_R3(a,b,c,d,e,45) UTS_R3(e,a,b,c,d,46) UTS_R3(d,e,a,b,c,47) UTS_R3(c,d,e,a,b,48) UTS_R3(b,c,d,e,a,49)
        UTS_R3(a,b,c,d,e,50) UTS_R3(e,a,b,c,d,51) UTS_R3(d,e,a,b,c,52) UTS_R3(c,d,e,a,b,53) UTS_R3(b,c,d,e,a,54)
        UTS_R3(a,b,c,d,e,55) UTS_R3(e,a,b,c,d,56) UTS_R3(d,e,a,b,c,57) UTS_R3(c,d,e,a,b,58) UTS_R3(b,c,d,e,a,59)
        UTS_R4(a,b,c,d,e,60) UTS_R4(e,a,b,c,d,61) UTS_R4(d,e,a,b,c,62) UTS_R4(c,d,e,a,b,63) UTS_R4(b,c,d,e,a,64)
        UTS_R4(a,b,c,d,e,65) UTS_R4(e,a,b,c,d,66) UTS_R4(d,e,a,b,c,67) UTS_R4(c,d,e,a,b,68) UTS_R4(b,c,d,e,a,69)
        UTS_R4(a,b,c,d,e,70) UTS_R4(e,a,b,c,d,71) UTS_R4(d,e,a,b,c,72) UTS_R4(c,d,e,a,b,73) UTS_R4(b,c,d,e,a,74)
        UTS_R4(a,b,c,d,e,75) UTS_R4(e,a,b,c,d,76) UTS_R4(d,e,a,b,c,77) UTS_R4(c,d,e,a,b,78) UTS_R4(b,c,d,e,a,79)
        out[0] = UTS_IV0 + a; out[1] = UTS_IV1 + b; out[2] = UTS_IV2 + c;
        out[3] = UTS_IV3 + d; out[4] = UTS_IV4 + e;
    }

    #ifdef UTS_SHANI
    /* The same compression with the SHA extensions: 20 groups of 4 rounds on the block's four
       message vectors m0..m3 (first word in the highest lane, as the instructions expect);
       leaves the digest in abcd (A highest) and e0 (E highest). */
    #define UTS_G(X, Y, M, F) X = _mm_sha1nexte_epu32(X, M); Y = abcd; abcd = _mm_sha1rnds4_epu32(abcd, X, F);
    #define UTS_S(A, B, C, D) A = _mm_sha1msg2_epu32(_mm_xor_si128(_mm_sha1msg1_epu32(A, B), C), D);
    #define UTS_SHANI_ROUNDS \
        const __m128i abcd0 = _mm_set_epi32((int)UTS_IV0, (int)UTS_IV1, (int)UTS_IV2, (int)UTS_IV3); \
        const __m128i e00 = _mm_set_epi32((int)UTS_IV4, 0, 0, 0); \
        __m128i abcd = abcd0, e0, e1; \
        e0 = _mm_add_epi32(e00, m0); e1 = abcd; abcd = _mm_sha1rnds4_epu32(abcd, e0, 0); \
        UTS_G(e1, e0, m1, 0) \
        UTS_G(e0, e1, m2, 0) \
        UTS_G(e1, e0, m3, 0) \
        UTS_S(m0, m1, m2, m3) UTS_G(e0, e1, m0, 0) \
        UTS_S(m1, m2, m3, m0) UTS_G(e1, e0, m1, 1) \
        UTS_S(m2, m3, m0, m1) UTS_G(e0, e1, m2, 1) \
        UTS_S(m3, m0, m1, m2) UTS_G(e1, e0, m3, 1) \
        UTS_S(m0, m1, m2, m3) UTS_G(e0, e1, m0, 1) \
        UTS_S(m1, m2, m3, m0) UTS_G(e1, e0, m1, 1) \
        UTS_S(m2, m3, m0, m1) UTS_G(e0, e1, m2, 2) \
        UTS_S(m3, m0, m1, m2) UTS_G(e1, e0, m3, 2) \
        UTS_S(m0, m1, m2, m3) UTS_G(e0, e1, m0, 2) \
        UTS_S(m1, m2, m3, m0) UTS_G(e1, e0, m1, 2) \
        UTS_S(m2, m3, m0, m1) UTS_G(e0, e1, m2, 2) \
        UTS_S(m3, m0, m1, m2) UTS_G(e1, e0, m3, 3) \
        UTS_S(m0, m1, m2, m3) UTS_G(e0, e1, m0, 3) \
        UTS_S(m1, m2, m3, m0) UTS_G(e1, e0, m1, 3) \
        UTS_S(m2, m3, m0, m1) UTS_G(e0, e1, m2, 3) \
        UTS_S(m3, m0, m1, m2) UTS_G(e1, e0, m3, 3) \
        e0 = _mm_sha1nexte_epu32(e0, e00);          /* E = rol30(A four rounds back) + IV4 */ \
        abcd = _mm_add_epi32(abcd, abcd0);

    /* The digest goes out with one 16-byte store, so the next spawn's 16-byte load of it
       is forwarded from the store buffer. */
    #define UTS_SHANI_STORE(out) \
        _mm_storeu_si128((__m128i *)(out), _mm_shuffle_epi32(abcd, 0x1B)); \
        (out)[4] = (uint32_t)_mm_extract_epi32(e0, 3);

    __attribute__((target("sha,sse4.1,ssse3")))
    static void uts_sha1_shani(const uint32_t *w, uint32_t *out) {
        __m128i m0 = _mm_set_epi32((int)w[0], (int)w[1], (int)w[2], (int)w[3]);
        __m128i m1 = _mm_set_epi32((int)w[4], (int)w[5], (int)w[6], (int)w[7]);
        __m128i m2 = _mm_set_epi32((int)w[8], (int)w[9], (int)w[10], (int)w[11]);
        __m128i m3 = _mm_set_epi32((int)w[12], (int)w[13], (int)w[14], (int)w[15]);
        UTS_SHANI_ROUNDS
        UTS_SHANI_STORE(out)
    }

    /* child i of digest s: the block is s, BE32(i), the 0x80 pad byte and the bit length 192 */
    __attribute__((target("sha,sse4.1,ssse3")))
    static void uts_spawn_shani(const uint32_t *s, uint32_t i, uint32_t *out) {
        __m128i m0 = _mm_shuffle_epi32(_mm_loadu_si128((const __m128i *)s), 0x1B);
        __m128i m1 = _mm_set_epi32((int)s[4], (int)i, (int)0x80000000u, 0);
        __m128i m2 = _mm_setzero_si128();
        __m128i m3 = _mm_set_epi32(0, 0, 0, 24 * 8);
        UTS_SHANI_ROUNDS
        UTS_SHANI_STORE(out)
    }

    static int uts_cpu_has_shani(void) {
        unsigned a, b, c, d;
        if (!__get_cpuid(1, &a, &b, &c, &d)) return 0;
        if (!(c & (1u << 19)) || !(c & (1u << 9))) return 0;      /* SSE4.1, SSSE3 */
        if (__get_cpuid_max(0, 0) < 7) return 0;
        __cpuid_count(7, 0, a, b, c, d);
        return (b >> 29) & 1;                                      /* SHA */
    }
    #else
    static void uts_sha1_shani(const uint32_t *w, uint32_t *out) { uts_sha1_portable(w, out); }
    static void uts_spawn_shani(const uint32_t *s, uint32_t i, uint32_t *out) {
        uint32_t w[16] = {s[0], s[1], s[2], s[3], s[4], i, 0x80000000u, 0, 0, 0, 0, 0, 0, 0, 0, 24 * 8};
        uts_sha1_portable(w, out);
    }
    static int uts_cpu_has_shani(void) { return 0; }
    #endif

    static int uts_use_shani = 0;

    /* child i of the node with digest s (5 words): SHA1(s || BE32(i)), one padded block */
    static inline void uts_spawn(const uint32_t *s, uint32_t i, uint32_t *out) {
        if (uts_use_shani) { uts_spawn_shani(s, i, out); return; }
        uint32_t w[16] = {s[0], s[1], s[2], s[3], s[4], i, 0x80000000u, 0, 0, 0, 0, 0, 0, 0, 0, 24 * 8};
        uts_sha1_portable(w, out);
    }
    """
    void uts_sha1_portable(const uint32_t* block, uint32_t* out) noexcept nogil
    void uts_sha1_shani(const uint32_t* block, uint32_t* out) noexcept nogil
    void uts_spawn(const uint32_t* s, uint32_t i, uint32_t* out) noexcept nogil
    int uts_cpu_has_shani() noexcept nogil
    int uts_use_shani


# Tree types and geometric shapes, in UTS's numbering (-t and -a); C constants for the per-node
# code, Python names for everyone else.
cdef enum:
    T_BIN = 0
    T_GEO = 1
    T_HYBRID = 2
    T_BALANCED = 3
    S_LINEAR = 0
    S_EXPDEC = 1
    S_CYCLIC = 2
    S_FIXED = 3
    CAP = 100           # UTS's MAXNUMCHILDREN: every node but a binomial root, balanced aside

BIN, GEO, HYBRID, BALANCED = T_BIN, T_GEO, T_HYBRID, T_BALANCED
LINEAR, EXPDEC, CYCLIC, FIXED = S_LINEAR, S_EXPDEC, S_CYCLIC, S_FIXED
MAX_CHILDREN = CAP

uts_use_shani = uts_cpu_has_shani()


def sha1_implementations() -> list:
    """The SHA-1 compressions this machine can run: 'portable', and 'sha-ni' where the CPU has it."""
    return ["portable", "sha-ni"] if uts_cpu_has_shani() else ["portable"]


def sha1_implementation() -> str:
    """The SHA-1 compression the cores use now."""
    return "sha-ni" if uts_use_shani else "portable"


def set_sha1_implementation(name: str) -> None:
    """Choose the compression ('portable' or 'sha-ni'); both give the same digests."""
    global uts_use_shani
    if name not in sha1_implementations():
        raise ValueError(f"SHA-1 implementation {name!r} not available here: {sha1_implementations()}")
    uts_use_shani = name == "sha-ni"


cdef inline void _to_words(const unsigned char* raw, uint32_t* s) noexcept nogil:
    cdef int k
    for k in range(5):
        s[k] = (<uint32_t>raw[4 * k] << 24) | (<uint32_t>raw[4 * k + 1] << 16) \
            | (<uint32_t>raw[4 * k + 2] << 8) | raw[4 * k + 3]


cdef inline void _to_bytes(const uint32_t* s, unsigned char* raw) noexcept nogil:
    cdef int k
    for k in range(5):
        raw[4 * k] = s[k] >> 24
        raw[4 * k + 1] = (s[k] >> 16) & 0xFF
        raw[4 * k + 2] = (s[k] >> 8) & 0xFF
        raw[4 * k + 3] = s[k] & 0xFF


def sha1(bytes data, str implementation="auto") -> bytes:
    """SHA-1 of a message of at most 55 bytes (one block), with the chosen compression."""
    cdef Py_ssize_t n = PyBytes_GET_SIZE(data)
    if n > 55:
        raise ValueError("only one-block messages (at most 55 bytes)")
    cdef unsigned char block[64]
    cdef uint32_t w[16]
    cdef uint32_t out[5]
    cdef unsigned char digest[20]
    cdef const unsigned char* raw = <const unsigned char*>PyBytes_AS_STRING(data)
    cdef int k
    for k in range(64):
        block[k] = raw[k] if k < n else 0
    block[n] = 0x80
    block[62] = (n * 8) >> 8
    block[63] = (n * 8) & 0xFF
    for k in range(16):
        w[k] = (<uint32_t>block[4 * k] << 24) | (<uint32_t>block[4 * k + 1] << 16) \
            | (<uint32_t>block[4 * k + 2] << 8) | block[4 * k + 3]
    if implementation == "auto":
        implementation = sha1_implementation()
    if implementation not in sha1_implementations():
        raise ValueError(f"SHA-1 implementation {implementation!r} not available here")
    if implementation == "sha-ni":
        uts_sha1_shani(w, out)
    else:
        uts_sha1_portable(w, out)
    _to_bytes(out, digest)
    return PyBytes_FromStringAndSize(<char*>digest, 20)


def spawn(bytes parent, unsigned int i, str implementation="auto") -> bytes:
    """Child i of a 20-byte state, SHA1(parent || BE32(i)), computed as the cores compute it."""
    global uts_use_shani
    if PyBytes_GET_SIZE(parent) != 20:
        raise ValueError("a UTS state has 20 bytes")
    if implementation == "auto":
        implementation = sha1_implementation()
    if implementation not in sha1_implementations():
        raise ValueError(f"SHA-1 implementation {implementation!r} not available here")
    cdef uint32_t s[5]
    cdef uint32_t out[5]
    cdef unsigned char digest[20]
    cdef int before = uts_use_shani
    _to_words(<const unsigned char*>PyBytes_AS_STRING(parent), s)
    uts_use_shani = implementation == "sha-ni"
    uts_spawn(s, i, out)
    uts_use_shani = before
    _to_bytes(out, digest)
    return PyBytes_FromStringAndSize(<char*>digest, 20)


def root_digest(int seed) -> bytes:
    """The UTS root state: SHA1(16 zero bytes || BE32(seed))."""
    cdef uint32_t s = <uint32_t>seed
    return sha1(bytes(16) + bytes([s >> 24, (s >> 16) & 0xFF, (s >> 8) & 0xFF, s & 0xFF]))


@cython.final
cdef class UTSCore(EnumerationCore):
    """Node: digest (5 words), height, its number of children, and the next child to spawn.

    The value counts nodes; ``counters()`` gives the leaves (nodes with no children).
    """
    cdef readonly int tree_type
    cdef readonly double b0
    cdef readonly int gen_mx
    cdef readonly int shape
    cdef readonly double q
    cdef readonly int m
    cdef readonly int seed
    cdef readonly double shift
    cdef double shift_height         # HYBRID: geometric while height < shift * gen_mx
    cdef double* den                 # per height: log(1 - p) of the geometric rule
    cdef int hcap
    cdef uint32_t* state             # per frame: 5 words
    cdef int32_t* height
    cdef int32_t* nchild
    cdef int32_t* nextc
    cdef long long count
    cdef readonly long long leaves

    def __init__(self, int tree_type=T_GEO, double b0=4.0, int gen_mx=6, int shape=S_LINEAR,
                 double q=15.0 / 64.0, int m=4, int seed=0, double shift=0.5):
        if tree_type not in (T_BIN, T_GEO, T_HYBRID, T_BALANCED):
            raise ValueError(f"tree type must be 0..3, got {tree_type}")
        if shape not in (S_LINEAR, S_EXPDEC, S_CYCLIC, S_FIXED):
            raise ValueError(f"geometric shape must be 0..3, got {shape}")
        if not 0.0 <= b0 < 2147483648.0:
            raise ValueError(f"root branching factor must be in [0, 2^31), got {b0}")
        if gen_mx < 1 and tree_type != T_BIN:
            raise ValueError(f"gen_mx (-d) must be at least 1, got {gen_mx}")
        if not 0.0 <= q <= 1.0:
            raise ValueError(f"q must be a probability, got {q}")
        if m < 0:
            raise ValueError(f"m must be non-negative, got {m}")
        if not shift >= 0.0:
            raise ValueError(f"shift depth fraction must be non-negative, got {shift}")
        self.tree_type, self.b0, self.gen_mx, self.shape = tree_type, b0, gen_mx, shape
        self.q, self.m, self.seed, self.shift = q, m, seed, shift
        self.shift_height = shift * gen_mx
        self._grow_heights(64)

    def __reduce__(self):
        return (UTSCore, (self.tree_type, self.b0, self.gen_mx, self.shape, self.q, self.m,
                          self.seed, self.shift))

    def __dealloc__(self):
        free(self.den)
        free(self.state)
        free(self.height)
        free(self.nchild)
        free(self.nextc)

    def counters(self):
        """Leaves (nodes with no children) accounted by this core so far."""
        return {"leaves": self.leaves}

    cdef double _target(self, int h):
        """The geometric rule's expected branching factor b_i at height h (UTS's shape functions)."""
        cdef double b0 = self.b0, d = self.gen_mx
        if h == 0:
            return b0
        if self.shape == S_EXPDEC:
            return b0 * pow(<double>h, -log(b0) / log(d))
        if self.shape == S_CYCLIC:
            if h > 5 * self.gen_mx:
                return 0.0
            return pow(b0, sin(2.0 * 3.141592653589793 * <double>h / d))
        if self.shape == S_FIXED:
            return b0 if h < self.gen_mx else 0.0
        return b0 * (1.0 - <double>h / d)

    cdef int _grow_heights(self, int h) except -1:
        cdef int cap = max(h + 1, 2 * self.hcap)
        cdef int k
        cdef double* den = <double*>realloc(self.den, cap * sizeof(double))
        if den is NULL:
            raise MemoryError()
        for k in range(self.hcap, cap):
            den[k] = log(1.0 - 1.0 / (1.0 + self._target(k)))
        self.den = den
        self.hcap = cap
        return 0

    cdef int _children(self, const uint32_t* s, int h) except -1:
        """How many children the node with digest s at height h has."""
        cdef double u = (s[4] & 0x7FFFFFFF) / 2147483648.0
        cdef double x
        cdef int t = self.tree_type
        if t == T_GEO or (t == T_HYBRID and h < self.shift_height):
            if h >= self.hcap:
                self._grow_heights(h)
            x = floor(log(1.0 - u) / self.den[h])
            if not x > 0.0:                 # also NaN, where b_i < 0 (UTS would go negative)
                return 0
            return CAP if x >= CAP else <int>x
        if t == T_BALANCED:
            return <int>self.b0 if h < self.gen_mx else 0
        if h == 0 and t == T_BIN:
            return <int>floor(self.b0)
        if u < self.q:
            return CAP if self.m > CAP else self.m
        return 0

    cdef int reserve(self, int frames) except -1:
        cdef uint32_t* state = <uint32_t*>realloc(self.state, 5 * frames * sizeof(uint32_t))
        if state is NULL:
            raise MemoryError()
        self.state = state
        self.height = <int32_t*>realloc(self.height, frames * sizeof(int32_t))
        self.nchild = <int32_t*>realloc(self.nchild, frames * sizeof(int32_t))
        self.nextc = <int32_t*>realloc(self.nextc, frames * sizeof(int32_t))
        if not (self.height and self.nchild and self.nextc):
            raise MemoryError()
        return 0

    cdef int set_root(self) except -1:
        _to_words(<const unsigned char*>PyBytes_AS_STRING(root_digest(self.seed)), self.state)
        self.height[0] = 0
        self.nchild[0] = self._children(self.state, 0)
        return 0

    cdef int load(self, object node) except -1:
        cdef const unsigned char* raw = <const unsigned char*>PyBytes_AS_STRING(node)
        _to_words(raw, self.state)
        self.height[0] = (raw[20] << 24) | (raw[21] << 16) | (raw[22] << 8) | raw[23]
        self.nchild[0] = self._children(self.state, self.height[0])
        return 0

    cdef object dump(self, int frame):
        """24 bytes: the digest, then BE32(height)."""
        cdef unsigned char raw[24]
        cdef uint32_t h = self.height[frame]
        _to_bytes(self.state + 5 * frame, raw)
        raw[20], raw[21], raw[22], raw[23] = h >> 24, (h >> 16) & 0xFF, (h >> 8) & 0xFF, h & 0xFF
        return PyBytes_FromStringAndSize(<char*>raw, 24)

    cdef int open(self, int frame) except -1:
        self.nextc[frame] = 0
        return 0

    cdef int next(self, int frame, int dest) except -1:
        cdef int i = self.nextc[frame]
        if i >= self.nchild[frame]:
            return 0
        self.nextc[frame] = i + 1
        cdef uint32_t* out = self.state + 5 * dest
        uts_spawn(self.state + 5 * frame, <uint32_t>i, out)
        cdef int h = self.height[frame] + 1
        self.height[dest] = h
        self.nchild[dest] = self._children(out, h)
        return 1

    cdef int leaf(self, int frame) except -1:
        return self.nchild[frame] == 0

    cdef int accumulate(self, int frame) except -1:
        self.count += 1
        if self.nchild[frame] == 0:
            self.leaves += 1
        return 0

    cdef object take_value(self):
        value = self.count
        self.count = 0
        return value

    def children_of(self, bytes digest, int height) -> int:
        """The number of children of the node with this digest at this height."""
        cdef uint32_t s[5]
        if PyBytes_GET_SIZE(digest) != 20:
            raise ValueError("a digest has 20 bytes")
        _to_words(<const unsigned char*>PyBytes_AS_STRING(digest), s)
        return self._children(s, height)
