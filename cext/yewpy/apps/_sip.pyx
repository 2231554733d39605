# cython: language_level=3, boundscheck=False, wraparound=False, cdivision=True
"""Compiled subgraph-isomorphism core (non-induced, decision), after McCreesh and Prosser (CP 2015).

Variables are the pattern vertices of non-zero degree (the caller sets isolated ones aside),
numbered 0..P-1; values are the target vertices, numbered 0..T-1 in the value order (the caller
renumbers them by non-increasing degree).  Each variable has a domain: a bitset of T bits.

Preprocessing, once per core:
- supplemental graphs from path counts, built alike for pattern and target: graph 0 is the
  input graph; graphs 1..3 join u and v (u = v allowed: a loop) when at least 1, 2, 3 paths of
  length two link them; graphs 4..6 when at least 1, 2, 3 simple paths of length three do.
  Any embedding of the inputs is also one of each pair of supplemental graphs, loops included.
  Graphs whose pattern side has no edge constrain nothing and are dropped.
- filtering: target t stays in the domain of p only if, in every kept graph, p's loop implies
  t's, and t's neighbourhood degree sequence dominates p's (so t's degree is at least p's);
  target degrees count only still-possible target vertices, and this repeats until the union of
  the domains stops shrinking.  A pattern self-loop (from the input) needs a target self-loop.
- cheap all-different at the root.

Search: a node is the domains of the unassigned variables plus the assignment so far.  A node
branches on the unassigned variable with the smallest domain (ties: larger pattern degree, then
lower index), trying its values in increasing order.  Assigning p := t removes t from every
other domain and intersects the domain of each q adjacent to p in kept graph g with t's
neighbourhood in target graph g; then the cheap all-different check (domains sorted by size;
any k of them must cover k values, and a Hall set's values leave the later domains) runs.  A
child whose propagation empties a domain is never yielded (``failures`` counts them), so the
node count is that of the CP2015 sequential solver without backjumping, less its root.
"""

from libc.stdint cimport uint64_t, int32_t
from libc.stdlib cimport free, malloc, calloc, realloc, qsort
from libc.string cimport memcpy, memset
from cpython.bytes cimport PyBytes_AS_STRING, PyBytes_FromStringAndSize, PyBytes_GET_SIZE

from yewpy.core cimport DecisionCore


cdef extern from *:
    int __builtin_popcountll(unsigned long long) nogil
    int __builtin_ctzll(unsigned long long) nogil


cdef enum:
    MAX_GRAPHS = 7
    BRANCH_DEAD = -2        # the root was refuted by preprocessing: no children
    BRANCH_DONE = -1        # nothing left to assign: one child, the complete mapping
    KEY_BITS = 21           # all-different sort keys: popcount | inverted degree | variable
    KEY_MASK = (1 << KEY_BITS) - 1


cdef inline int _popcount(uint64_t x) noexcept nogil:
    return __builtin_popcountll(x)


cdef int _cmp_u64(const void* a, const void* b) noexcept nogil:
    cdef uint64_t x = (<const uint64_t*>a)[0]
    cdef uint64_t y = (<const uint64_t*>b)[0]
    return (x > y) - (x < y)


cdef int _cmp_desc_i32(const void* a, const void* b) noexcept nogil:
    cdef int32_t x = (<const int32_t*>a)[0]
    cdef int32_t y = (<const int32_t*>b)[0]
    return (x < y) - (x > y)


cdef class _Graphs:
    """The input graph (no loops) and its six supplemental graphs, as bitset rows.

    ``rows[(v * G + g) * W ...]`` is v's neighbourhood in graph g; only the graphs listed in
    ``keep`` are stored, renumbered 0..G-1 in that order.
    """
    cdef int n, W, G
    cdef uint64_t* rows
    cdef int keep[MAX_GRAPHS]

    def __dealloc__(self):
        free(self.rows)

    cdef int build(self, int n, list edges, list keep) except -1:
        """Path counts from adjacency lists: rows of graph 0, then counts per source vertex."""
        cdef int W = max(1, (n + 63) // 64)
        cdef int G = len(keep)
        cdef int g, k, v, c, w, d, i, m, u
        self.n, self.W, self.G = n, W, G
        for g in range(G):
            self.keep[g] = keep[g]
        cdef int want2 = 0, want3 = 0
        for g in range(G):
            if 1 <= self.keep[g] <= 3:
                want2 = 1
            if self.keep[g] >= 4:
                want3 = 1
        self.rows = <uint64_t*>calloc(<size_t>max(1, n) * G * W, sizeof(uint64_t))
        cdef uint64_t* adj = <uint64_t*>calloc(<size_t>max(1, n) * W, sizeof(uint64_t))
        cdef int32_t* deg = <int32_t*>calloc(max(1, n), sizeof(int32_t))
        cdef int32_t* start = <int32_t*>calloc(n + 1, sizeof(int32_t))
        cdef int32_t* nbr = NULL
        cdef int32_t* cnt2 = <int32_t*>calloc(max(1, n), sizeof(int32_t))
        cdef int32_t* cnt3 = <int32_t*>calloc(max(1, n), sizeof(int32_t))
        cdef int32_t* seen2 = <int32_t*>malloc(max(1, n) * sizeof(int32_t))
        cdef int32_t* seen3 = <int32_t*>malloc(max(1, n) * sizeof(int32_t))
        cdef int n2, n3, level
        cdef uint64_t bits
        try:
            if not (self.rows and adj and deg and start and cnt2 and cnt3 and seen2 and seen3):
                raise MemoryError()
            m = len(edges) // 2
            for i in range(m):
                u = edges[2 * i]
                v = edges[2 * i + 1]
                if not (0 <= u < n and 0 <= v < n):
                    raise ValueError(f"edge ({u}, {v}) outside 0..{n - 1}")
                if u == v or (adj[<size_t>u * W + (v >> 6)] >> (v & 63)) & 1:
                    continue
                adj[<size_t>u * W + (v >> 6)] |= (<uint64_t>1) << (v & 63)
                adj[<size_t>v * W + (u >> 6)] |= (<uint64_t>1) << (u & 63)
                deg[u] += 1
                deg[v] += 1
            for v in range(n):
                start[v + 1] = start[v] + deg[v]
            nbr = <int32_t*>malloc(max(1, start[n]) * sizeof(int32_t))
            if nbr is NULL:
                raise MemoryError()
            for v in range(n):
                k = start[v]
                for i in range(W):
                    bits = adj[<size_t>v * W + i]
                    while bits:
                        nbr[k] = i * 64 + __builtin_ctzll(bits)
                        k += 1
                        bits &= bits - 1
            for v in range(n):
                for g in range(G):
                    if self.keep[g] == 0:
                        memcpy(self.rows + (<size_t>v * G + g) * W, adj + <size_t>v * W, W * sizeof(uint64_t))
                if not (want2 or want3):
                    continue
                # cnt2[w]: walks v-c-w (w = v allowed: the loop counts deg(v))
                n2 = 0
                for i in range(start[v], start[v + 1]):
                    c = nbr[i]
                    for k in range(start[c], start[c + 1]):
                        w = nbr[k]
                        if cnt2[w] == 0:
                            seen2[n2] = w
                            n2 += 1
                        cnt2[w] += 1
                # cnt3[w]: simple paths v-c-d-w, i.e. walks with d != v and c != w
                n3 = 0
                if want3:
                    for i in range(n2):
                        d = seen2[i]
                        if d == v:
                            continue
                        for k in range(start[d], start[d + 1]):
                            w = nbr[k]
                            if cnt3[w] == 0:
                                seen3[n3] = w
                                n3 += 1
                            cnt3[w] += cnt2[d]
                    for i in range(start[v], start[v + 1]):
                        w = nbr[i]                   # c == w: walks v-w-d-w with d != v
                        cnt3[w] -= deg[w] - 1
                for g in range(G):
                    level = self.keep[g]
                    if 1 <= level <= 3:
                        for i in range(n2):
                            w = seen2[i]
                            if cnt2[w] >= level:
                                self.rows[(<size_t>v * G + g) * W + (w >> 6)] |= (<uint64_t>1) << (w & 63)
                    elif level >= 4:
                        for i in range(n3):
                            w = seen3[i]
                            if cnt3[w] >= level - 3:
                                self.rows[(<size_t>v * G + g) * W + (w >> 6)] |= (<uint64_t>1) << (w & 63)
                for i in range(n2):
                    cnt2[seen2[i]] = 0
                for i in range(n3):
                    cnt3[seen3[i]] = 0
        finally:
            free(adj)
            free(deg)
            free(start)
            free(nbr)
            free(cnt2)
            free(cnt3)
            free(seen2)
            free(seen3)
        return 0

    cdef inline bint has(self, int g, int v, int w) noexcept nogil:
        return (self.rows[(<size_t>v * self.G + g) * self.W + (w >> 6)] >> (w & 63)) & 1

    cdef bint empty(self, int g):
        cdef size_t i
        cdef int v
        for v in range(self.n):
            for i in range(self.W):
                if self.rows[(<size_t>v * self.G + g) * self.W + i]:
                    return False
        return True


cdef class SIPCore(DecisionCore):
    """Node: per variable its value (-1: unassigned) and its domain; objective 1 when complete."""
    cdef readonly int P, T, W, G
    cdef readonly bint refuted
    cdef readonly long long failures
    cdef readonly list graphs               # the supplemental graphs kept (0 = the input graph)
    cdef uint64_t* trows                    # target rows: (t * G + g) * W
    cdef unsigned char* padj                  # pattern adjacency: graph bitmask for each (p, q)
    cdef int32_t* pdeg                      # pattern degree in the input graph (tie-break)
    cdef int32_t maxdeg
    cdef uint64_t* root_dom                 # the filtered root domains, P * W
    # per frame
    cdef uint64_t* dom                      # P * W words
    cdef int32_t* pc                        # P popcounts
    cdef int32_t* val                       # P values, -1 when unassigned
    cdef int32_t* nfree
    cdef int32_t* branch
    cdef int32_t* cursor
    cdef int frames
    # scratch
    cdef uint64_t* keys
    cdef uint64_t* hall
    cdef uint64_t* sofar
    cdef object _args

    def __init__(self, int P, pattern_edges, pattern_loops, int T, target_edges, target_loops,
                 int isolated=0, bint supplementals=True):
        """``pattern_edges``/``target_edges``: flat [u0, v0, u1, v1, ...] over 0..P-1 / 0..T-1
        (each edge once or twice; loops go in the ``*_loops`` lists).  ``isolated``: pattern
        vertices set aside, which still need unused target vertices."""
        self._args = (P, list(pattern_edges), list(pattern_loops), T, list(target_edges),
                      list(target_loops), isolated, supplementals)
        if P >= (1 << KEY_BITS) or T >= (1 << KEY_BITS):
            raise ValueError(f"graphs up to {(1 << KEY_BITS) - 1} vertices")
        self.P, self.T = P, T
        self.W = max(1, (T + 63) // 64)
        self.keys = <uint64_t*>malloc(max(1, P) * sizeof(uint64_t))
        self.hall = <uint64_t*>malloc(self.W * sizeof(uint64_t))
        self.sofar = <uint64_t*>malloc(self.W * sizeof(uint64_t))
        self.root_dom = <uint64_t*>calloc(<size_t>max(1, P) * self.W, sizeof(uint64_t))
        self.pdeg = <int32_t*>calloc(max(1, P), sizeof(int32_t))
        self.padj = <unsigned char*>calloc(max(1, <size_t>P * P), 1)
        if not (self.keys and self.hall and self.sofar and self.root_dom and self.pdeg and self.padj):
            raise MemoryError()
        cdef list candidates = list(range(MAX_GRAPHS)) if supplementals else [0]
        cdef _Graphs pat = _Graphs()
        pat.build(P, self._args[1], candidates)
        cdef list keep = [candidates[g] for g in range(len(candidates))
                          if candidates[g] == 0 or not pat.empty(g)]
        if keep != candidates:
            pat = _Graphs()
            pat.build(P, self._args[1], keep)
        cdef _Graphs tgt = _Graphs()
        tgt.build(T, self._args[4], keep)
        self.graphs = keep
        self.G = len(keep)
        self.trows, tgt.rows = tgt.rows, NULL            # the core owns the target rows now
        cdef int p, q, g
        for p in range(P):
            for q in range(P):
                if p != q:
                    for g in range(self.G):
                        if pat.has(g, p, q):
                            self.padj[<size_t>p * P + q] |= 1 << g
        for p in range(P):
            self.pdeg[p] = 0
            for q in range(P):
                if q != p and pat.has(0, p, q):
                    self.pdeg[p] += 1
            self.maxdeg = max(self.maxdeg, self.pdeg[p])
        self.refuted = P + isolated > T or not self._filter(pat, set(pattern_loops), set(target_loops))
        if not self.refuted:
            memcpy(self.scratch_frame(), self.root_dom, <size_t>P * self.W * sizeof(uint64_t))
            self.refuted = not self._root_alldiff()

    cdef uint64_t* scratch_frame(self) except NULL:
        """Frame 0 as scratch during construction."""
        self.reserve(1)
        return self.dom

    cdef bint _root_alldiff(self) except -1:
        cdef int p
        for p in range(self.P):
            self.val[p] = -1
        if not self._alldiff(0):
            return False
        memcpy(self.root_dom, self.dom, <size_t>self.P * self.W * sizeof(uint64_t))
        return True

    def __reduce__(self):
        return (SIPCore, self._args)

    def __dealloc__(self):
        free(self.trows)
        free(self.padj)
        free(self.pdeg)
        free(self.root_dom)
        free(self.dom)
        free(self.pc)
        free(self.val)
        free(self.nfree)
        free(self.branch)
        free(self.cursor)
        free(self.keys)
        free(self.hall)
        free(self.sofar)

    def counters(self):
        """Children tried and discarded because propagation emptied a domain."""
        return {"failures": self.failures}

    def reset_counters(self):
        """Zero ``failures`` (a core may serve several searches)."""
        self.failures = 0

    def root_domain_sizes(self):
        """The root domain sizes after filtering (empty when refuted before search)."""
        cdef list sizes = []
        cdef int p, i, k
        if self.refuted:
            return sizes
        for p in range(self.P):
            k = 0
            for i in range(self.W):
                k += _popcount(self.root_dom[<size_t>p * self.W + i])
            sizes.append(k)
        return sizes

    # -- preprocessing ------------------------------------------------------------------------

    cdef bint _filter(self, _Graphs pat, set ploops, set tloops) except -1:
        """Loop, degree and neighbourhood-degree-sequence filtering, to a fixed point."""
        cdef int P = self.P, T = self.T, W = self.W, G = self.G
        cdef int g, p, t, u, i, x, k
        cdef size_t total
        cdef uint64_t* allowed = <uint64_t*>calloc(W, sizeof(uint64_t))
        cdef uint64_t* union_ = <uint64_t*>calloc(W, sizeof(uint64_t))
        cdef int32_t* pds = NULL           # pattern: per graph, per vertex, sorted degrees
        cdef int32_t* poff = <int32_t*>calloc(<size_t>G * P + 1, sizeof(int32_t))
        cdef int32_t* tds = NULL
        cdef size_t* toff = <size_t*>calloc(<size_t>G * T + 1, sizeof(size_t))
        cdef int32_t* pd = <int32_t*>calloc(<size_t>G * max(1, P), sizeof(int32_t))
        cdef int32_t* td = <int32_t*>calloc(<size_t>G * max(1, T), sizeof(int32_t))
        cdef char* ploop = <char*>calloc(max(1, P), 1)
        cdef char* tloop = <char*>calloc(max(1, T), 1)
        cdef uint64_t* row
        cdef uint64_t bits
        cdef int remaining, union_count, plen, tlen
        cdef bint ok
        try:
            if not (allowed and union_ and poff and toff and pd and td and ploop and tloop):
                raise MemoryError()
            for p in ploops:
                ploop[p] = 1
            for t in tloops:
                tloop[t] = 1
            for t in range(T):
                allowed[t >> 6] |= (<uint64_t>1) << (t & 63)
            remaining = T
            # pattern sequences never change
            for g in range(G):
                for p in range(P):
                    for u in range(P):
                        if pat.has(g, p, u):
                            pd[g * P + p] += 1
            for g in range(G):
                for p in range(P):
                    poff[g * P + p + 1] = poff[g * P + p] + pd[g * P + p]
            pds = <int32_t*>malloc(max(1, poff[G * P]) * sizeof(int32_t))
            if pds is NULL:
                raise MemoryError()
            for g in range(G):
                for p in range(P):
                    k = poff[g * P + p]
                    for u in range(P):
                        if pat.has(g, p, u):
                            pds[k] = pd[g * P + u]
                            k += 1
                    qsort(pds + poff[g * P + p], pd[g * P + p], sizeof(int32_t), _cmp_desc_i32)
            while True:
                # target degrees and sequences, counting only allowed vertices
                for g in range(G):
                    for t in range(T):
                        row = self.trows + (<size_t>t * G + g) * W
                        k = 0
                        for i in range(W):
                            k += _popcount(row[i] & allowed[i])
                        td[g * T + t] = k
                for g in range(G):
                    for t in range(T):
                        toff[g * T + t + 1] = toff[g * T + t] + td[g * T + t]
                free(tds)
                tds = <int32_t*>malloc(max(1, toff[G * T]) * sizeof(int32_t))
                if tds is NULL:
                    raise MemoryError()
                for g in range(G):
                    for t in range(T):
                        row = self.trows + (<size_t>t * G + g) * W
                        total = toff[g * T + t]
                        for i in range(W):
                            bits = row[i] & allowed[i]
                            while bits:
                                tds[total] = td[g * T + i * 64 + __builtin_ctzll(bits)]
                                total += 1
                                bits &= bits - 1
                        qsort(tds + toff[g * T + t], td[g * T + t], sizeof(int32_t), _cmp_desc_i32)
                memset(union_, 0, W * sizeof(uint64_t))
                for p in range(P):
                    row = self.root_dom + <size_t>p * W
                    memset(row, 0, W * sizeof(uint64_t))
                    for t in range(T):
                        if not (allowed[t >> 6] >> (t & 63)) & 1:
                            continue
                        if ploop[p] and not tloop[t]:
                            continue
                        ok = True
                        for g in range(G):
                            if pat.has(g, p, p) and not (self.trows[(<size_t>t * G + g) * W + (t >> 6)] >> (t & 63)) & 1:
                                ok = False
                                break
                            plen = pd[g * P + p]
                            tlen = td[g * T + t]
                            if tlen < plen:
                                ok = False
                                break
                            for x in range(plen):
                                if tds[toff[g * T + t] + x] < pds[poff[g * P + p] + x]:
                                    ok = False
                                    break
                            if not ok:
                                break
                        if ok:
                            row[t >> 6] |= (<uint64_t>1) << (t & 63)
                    for i in range(W):
                        union_[i] |= row[i]
                union_count = 0
                for i in range(W):
                    union_count += _popcount(union_[i])
                if union_count < P:
                    return False
                if union_count == remaining:
                    return True
                memcpy(allowed, union_, W * sizeof(uint64_t))
                remaining = union_count
        finally:
            free(allowed)
            free(union_)
            free(pds)
            free(poff)
            free(tds)
            free(toff)
            free(pd)
            free(td)
            free(ploop)
            free(tloop)

    # -- frames -------------------------------------------------------------------------------

    cdef int reserve(self, int frames) except -1:
        if frames <= self.frames:
            return 0
        cdef size_t P = max(1, self.P)
        self.dom = <uint64_t*>realloc(self.dom, frames * P * self.W * sizeof(uint64_t))
        self.pc = <int32_t*>realloc(self.pc, frames * P * sizeof(int32_t))
        self.val = <int32_t*>realloc(self.val, frames * P * sizeof(int32_t))
        self.nfree = <int32_t*>realloc(self.nfree, frames * sizeof(int32_t))
        self.branch = <int32_t*>realloc(self.branch, frames * sizeof(int32_t))
        self.cursor = <int32_t*>realloc(self.cursor, frames * sizeof(int32_t))
        if not (self.dom and self.pc and self.val and self.nfree and self.branch and self.cursor):
            raise MemoryError()
        self.frames = frames
        return 0

    cdef int _popcounts(self, int frame) except -1:
        cdef int P = self.P, W = self.W, p, i, k
        cdef uint64_t* d
        for p in range(P):
            if self.val[frame * P + p] < 0:
                d = self.dom + (<size_t>frame * P + p) * W
                k = 0
                for i in range(W):
                    k += _popcount(d[i])
                self.pc[frame * P + p] = k
        return 0

    cdef int set_root(self) except -1:
        cdef int P = self.P, p
        memcpy(self.dom, self.root_dom, <size_t>P * self.W * sizeof(uint64_t))
        for p in range(P):
            self.val[p] = -1
        self.nfree[0] = P
        self._popcounts(0)
        self.branch[0] = BRANCH_DEAD if self.refuted else BRANCH_DONE
        return 0

    cdef int load(self, object node) except -1:
        """Bytes: nfree, then P values, then the domains of the unassigned variables in order."""
        cdef int P = self.P, W = self.W, p, k = 0
        cdef char* raw = PyBytes_AS_STRING(node)
        cdef int32_t head
        memcpy(&head, raw, sizeof(int32_t))
        if <size_t>PyBytes_GET_SIZE(node) != sizeof(int32_t) * (1 + P) + <size_t>head * W * sizeof(uint64_t):
            raise ValueError("not a node of this instance")
        memcpy(self.val, raw + sizeof(int32_t), P * sizeof(int32_t))
        cdef uint64_t* doms = <uint64_t*>(raw + sizeof(int32_t) * (1 + P))
        for p in range(P):
            if self.val[p] < 0:
                memcpy(self.dom + <size_t>p * W, doms + <size_t>k * W, W * sizeof(uint64_t))
                k += 1
        self.nfree[0] = head
        self._popcounts(0)
        self.branch[0] = BRANCH_DONE
        return 0

    cdef object dump(self, int frame):
        cdef int P = self.P, W = self.W, p, k = 0
        cdef int32_t head = self.nfree[frame]
        out = PyBytes_FromStringAndSize(NULL, sizeof(int32_t) * (1 + P) + <size_t>head * W * sizeof(uint64_t))
        cdef char* raw = PyBytes_AS_STRING(out)
        memcpy(raw, &head, sizeof(int32_t))
        memcpy(raw + sizeof(int32_t), self.val + <size_t>frame * P, P * sizeof(int32_t))
        cdef uint64_t* doms = <uint64_t*>(raw + sizeof(int32_t) * (1 + P))
        for p in range(P):
            if self.val[frame * P + p] < 0:
                memcpy(doms + <size_t>k * W, self.dom + (<size_t>frame * P + p) * W, W * sizeof(uint64_t))
                k += 1
        return out

    cdef object solution(self, int frame):
        """The value of each variable (a target vertex, in the core's numbering)."""
        return [self.val[frame * self.P + p] for p in range(self.P)]

    # -- search -------------------------------------------------------------------------------

    cdef int open(self, int frame) except -1:
        """Pick the branch variable: smallest domain, then larger degree, then lower index."""
        cdef int P = self.P, p, best = -1
        cdef int32_t* pc = self.pc + frame * P
        cdef int32_t* val = self.val + frame * P
        self.cursor[frame] = 0
        if self.branch[frame] == BRANCH_DEAD:
            return 0
        for p in range(P):
            if val[p] < 0 and (best < 0 or pc[p] < pc[best] or
                               (pc[p] == pc[best] and self.pdeg[p] > self.pdeg[best])):
                best = p
        self.branch[frame] = best if best >= 0 else BRANCH_DONE
        return 0

    cdef int next(self, int frame, int dest) except -1:
        cdef int P = self.P, W = self.W, G = self.G
        cdef int bv = self.branch[frame], f, i, q, g, k
        cdef unsigned char mask
        cdef uint64_t* src
        cdef uint64_t* dst
        cdef uint64_t* row
        cdef uint64_t* bvdom
        cdef uint64_t bits
        cdef int32_t* val = self.val + <size_t>frame * P
        cdef int32_t* nval = self.val + <size_t>dest * P
        cdef bint ok
        if bv == BRANCH_DEAD:
            return 0
        if bv == BRANCH_DONE:                  # only a root with nothing to assign gets here
            if self.cursor[frame]:
                return 0
            self.cursor[frame] = 1
            memcpy(nval, val, P * sizeof(int32_t))
            self.nfree[dest] = 0
            self.branch[dest] = BRANCH_DONE
            return 1
        bvdom = self.dom + (<size_t>frame * P + bv) * W
        while True:
            # the next value of the branch variable at or after the cursor
            f = self.cursor[frame]
            i = f >> 6
            if i >= W:
                return 0
            bits = bvdom[i] & (~(<uint64_t>0) << (f & 63))
            while bits == 0:
                i += 1
                if i >= W:
                    self.cursor[frame] = W * 64
                    return 0
                bits = bvdom[i]
            f = i * 64 + __builtin_ctzll(bits)
            self.cursor[frame] = f + 1
            # assign and propagate into dest
            memcpy(nval, val, P * sizeof(int32_t))
            nval[bv] = f
            ok = True
            for q in range(P):
                if nval[q] >= 0:
                    continue
                src = self.dom + (<size_t>frame * P + q) * W
                dst = self.dom + (<size_t>dest * P + q) * W
                memcpy(dst, src, W * sizeof(uint64_t))
                dst[f >> 6] &= ~((<uint64_t>1) << (f & 63))
                mask = self.padj[<size_t>bv * P + q]
                g = 0
                while mask:
                    if mask & 1:
                        row = self.trows + (<size_t>f * G + g) * W
                        for i in range(W):
                            dst[i] &= row[i]
                    mask >>= 1
                    g += 1
                k = 0
                for i in range(W):
                    k += _popcount(dst[i])
                if k == 0:
                    ok = False
                    break
                self.pc[<size_t>dest * P + q] = k
            if ok:
                self.nfree[dest] = self.nfree[frame] - 1
                ok = self._alldiff(dest)
            if ok:
                self.branch[dest] = BRANCH_DONE
                return 1
            self.failures += 1

    cdef bint _alldiff(self, int frame) except -1:
        """Cheap all-different on the unassigned domains of ``frame`` (popcounts must be set).

        Domains in order of size (ties: larger degree, then lower index); the union of the
        first k must hold k values; when it holds exactly k they form a Hall set, whose values
        leave every later domain, and counting starts again.
        """
        cdef int P = self.P, W = self.W, p, i, n = 0, w, k, count = 0, union_count
        cdef int32_t* val = self.val + <size_t>frame * P
        cdef int32_t* pc = self.pc + <size_t>frame * P
        cdef uint64_t* d
        cdef bint any_hall = False
        for p in range(P):
            if val[p] < 0:
                self.keys[n] = ((<uint64_t>pc[p]) << (2 * KEY_BITS)) | \
                               ((<uint64_t>(self.maxdeg - self.pdeg[p])) << KEY_BITS) | <uint64_t>p
                n += 1
        qsort(self.keys, n, sizeof(uint64_t), _cmp_u64)
        memset(self.hall, 0, W * sizeof(uint64_t))
        memset(self.sofar, 0, W * sizeof(uint64_t))
        for i in range(n):
            p = <int>(self.keys[i] & KEY_MASK)
            d = self.dom + (<size_t>frame * P + p) * W
            if any_hall:
                k = 0
                for w in range(W):
                    d[w] &= ~self.hall[w]
                    k += _popcount(d[w])
                pc[p] = k
                if k == 0:
                    return False
            union_count = 0
            for w in range(W):
                self.sofar[w] |= d[w]
                union_count += _popcount(self.sofar[w])
            count += 1
            if union_count < count:
                return False
            if union_count == count:
                for w in range(W):
                    self.hall[w] |= self.sofar[w]
                    self.sofar[w] = 0
                count = 0
                any_hall = True
        return True

    cdef double objective(self, int frame) except? -1:
        return 1.0 if self.nfree[frame] == 0 else 0.0

    cdef double bound(self, int frame) except? -1:
        return 1.0
