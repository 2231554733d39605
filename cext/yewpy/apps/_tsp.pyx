# cython: language_level=3, boundscheck=False, wraparound=False, cdivision=True
"""Compiled symmetric TSP: partial tours from city 0, nearest-first children, Lagrangian 1-tree bound.

Three compiled pieces: ``held_karp`` (subgradient ascent on the Held-Karp 1-tree bound, once at
the root), ``local_search_tour`` (multi-start nearest neighbour + 2-opt + Or-opt, the first
incumbent) and ``TspCore`` (the search tree).  Distances are integers (int64, row-major n x n).
"""

from libc.math cimport INFINITY, ceil
from libc.stdint cimport int32_t, int64_t, uint8_t, uint64_t
from libc.stdlib cimport free, malloc, realloc
from libc.string cimport memcpy
from cpython.bytes cimport PyBytes_AS_STRING, PyBytes_FromStringAndSize, PyBytes_GET_SIZE

from yewpy.core cimport OptimisationCore

MAX_CITIES = 64          # nodes keep the visited set in one 64-bit word

cdef double EPS = 1e-6   # slack before rounding a floating bound up to the next integer


cdef extern from *:
    int __builtin_ctzll(unsigned long long) nogil


cdef inline uint64_t _bit(int c) noexcept nogil:
    return (<uint64_t>1) << c


cdef int64_t* _matrix(object dist, int n) except NULL:
    """A malloc'ed copy of a flat n*n integer sequence."""
    cdef int64_t* d = <int64_t*>malloc(max(n * n, 1) * sizeof(int64_t))
    if d is NULL:
        raise MemoryError()
    for k in range(n * n):
        d[k] = dist[k]
    return d


# -- Held-Karp: subgradient ascent on the Lagrangian 1-tree bound ------------------------------

cdef inline int _argmin(const double* key, int m) noexcept nogil:
    """The first index of the least of key[0..m) (Prim's next vertex)."""
    cdef int j, best = 0
    for j in range(1, m):
        if key[j] < key[best]:
            best = j
    return best


cdef double _one_tree(const int64_t* d, const double* pi, int n, int32_t* deg, double* key,
                      int32_t* near, int32_t* rest) noexcept nogil:
    """Weight of the minimum 1-tree (special city 0) under costs d_ij + pi_i + pi_j, minus
    2 * sum(pi); ``deg`` gets each city's degree in that 1-tree."""
    cdef int i, j, m, v, best
    cdef double w = 0, c, k1 = INFINITY, k2 = INFINITY
    cdef int a1 = -1, a2 = -1
    for i in range(n):
        deg[i] = 0
    m = 0
    for i in range(2, n):                          # Prim over cities 1..n-1, from city 1
        rest[m] = i
        key[m] = d[n + i] + pi[1] + pi[i]
        near[m] = 1
        m += 1
    while m > 0:
        best = _argmin(key, m)
        v = rest[best]
        w += key[best]
        deg[v] += 1
        deg[near[best]] += 1
        m -= 1
        rest[best] = rest[m]
        key[best] = key[m]
        near[best] = near[m]
        for j in range(m):
            c = d[v * n + rest[j]] + pi[v] + pi[rest[j]]
            if c < key[j]:
                key[j] = c
                near[j] = v
    for i in range(1, n):                          # the two cheapest edges at city 0
        c = d[i] + pi[0] + pi[i]
        if c < k1:
            k2, a2 = k1, a1
            k1, a1 = c, i
        elif c < k2:
            k2, a2 = c, i
    w += k1 + k2
    deg[0] = 2
    deg[a1] += 1
    deg[a2] += 1
    for i in range(n):
        w -= 2 * pi[i]
    return w


def held_karp(dist, int n, double upper, int max_iterations=0):
    """Penalties ``pi`` maximising the Held-Karp 1-tree bound (subgradient ascent, Polyak steps
    towards ``upper``, the length of a known tour; the step factor halves after n/2 iterations
    without a better bound).

    Returns ``(pi, bound, iterations)``: the best penalties found and their bound (a float, a
    valid lower bound on every tour for *any* pi).  Stops early once the bound proves ``upper``
    optimal or the 1-tree is a tour.
    """
    if n < 3:
        return [0.0] * n, upper, 0
    if max_iterations <= 0:
        max_iterations = 50 * n + 1000
    cdef int64_t* d = _matrix(dist, n)
    cdef double* pi = <double*>malloc(n * sizeof(double))
    cdef double* best_pi = <double*>malloc(n * sizeof(double))
    cdef double* key = <double*>malloc(n * sizeof(double))
    cdef double* g = <double*>malloc(n * sizeof(double))
    cdef int32_t* deg = <int32_t*>malloc(n * sizeof(int32_t))
    cdef int32_t* near = <int32_t*>malloc(n * sizeof(int32_t))
    cdef int32_t* rest = <int32_t*>malloc(n * sizeof(int32_t))
    cdef double lam = 2.0, w, best = -INFINITY, norm, t
    cdef int it = 0, i, stall = 0, period = max(n // 2, 10)
    if not (pi and best_pi and key and g and deg and near and rest):
        raise MemoryError()
    try:
        for i in range(n):
            pi[i] = best_pi[i] = g[i] = 0
        while it < max_iterations and lam > 1e-5:
            it += 1
            w = _one_tree(d, pi, n, deg, key, near, rest)
            if w > best + 1e-9:
                best = w
                memcpy(best_pi, pi, n * sizeof(double))
                stall = 0
            else:
                stall += 1
                if stall >= period:
                    lam /= 2
                    stall = 0
            if ceil(best - EPS) >= upper:
                break
            norm = 0
            for i in range(n):                     # subgradient: degree excess
                g[i] = deg[i] - 2
                norm += g[i] * g[i]
            if norm == 0:                          # the 1-tree is a tour: optimal
                break
            t = lam * (upper - w) / norm
            if t <= 0:
                t = lam / norm
            for i in range(n):
                pi[i] += t * g[i]
        return [best_pi[i] for i in range(n)], best, it
    finally:
        free(d)
        free(pi)
        free(best_pi)
        free(key)
        free(g)
        free(deg)
        free(near)
        free(rest)


# -- the first incumbent: nearest neighbour, 2-opt and Or-opt ----------------------------------

cdef int64_t _tour_length(const int64_t* d, const int32_t* t, int n) noexcept nogil:
    cdef int64_t s = 0
    cdef int i
    for i in range(n):
        s += d[t[i] * n + t[(i + 1) % n]]
    return s


cdef void _nearest_neighbour(const int64_t* d, int n, int start, int32_t* t, uint8_t* used) noexcept nogil:
    cdef int i, j, cur = start, nxt
    for i in range(n):
        used[i] = 0
    used[start] = 1
    t[0] = start
    for i in range(1, n):
        nxt = -1
        for j in range(n):
            if not used[j] and (nxt < 0 or d[cur * n + j] < d[cur * n + nxt]):
                nxt = j
        t[i] = nxt
        used[nxt] = 1
        cur = nxt


cdef bint _two_opt_pass(const int64_t* d, int n, int32_t* t) noexcept nogil:
    """One first-improvement sweep of 2-opt moves; true when the tour changed."""
    cdef int i, j, a, b, c, e, lo, hi, tmp
    cdef bint changed = False
    for i in range(n - 2):
        for j in range(i + 2, n):
            if i == 0 and j == n - 1:
                continue
            a, b, c, e = t[i], t[i + 1], t[j], t[(j + 1) % n]
            if d[a * n + c] + d[b * n + e] < d[a * n + b] + d[c * n + e]:
                lo, hi = i + 1, j
                while lo < hi:
                    tmp = t[lo]
                    t[lo] = t[hi]
                    t[hi] = tmp
                    lo += 1
                    hi -= 1
                changed = True
    return changed


cdef bint _or_opt_pass(const int64_t* d, int n, int32_t* t, int32_t* buf) noexcept nogil:
    """One sweep moving a segment of 1-3 cities into another gap, either way round (the segment
    is saved in ``buf[n:]``); true when the tour changed."""
    cdef int length, i, k, p, q, m, prev, nxt, u, v, pos
    cdef int64_t gain, cost, cost_rev
    cdef int32_t* seg = buf + n
    for length in range(1, 4):
        if length > n - 3:
            break
        for i in range(n):
            for k in range(length):
                seg[k] = t[(i + k) % n]
            prev = t[(i - 1 + n) % n]
            nxt = t[(i + length) % n]
            gain = d[prev * n + seg[0]] + d[seg[length - 1] * n + nxt] - d[prev * n + nxt]
            m = n - length
            for k in range(m):                     # the other cities in tour order, from nxt
                buf[k] = t[(i + length + k) % n]
            for p in range(m - 1):                 # gap (buf[p], buf[p+1]); (prev, nxt) excluded
                u, v = buf[p], buf[p + 1]
                cost = d[u * n + seg[0]] + d[seg[length - 1] * n + v] - d[u * n + v]
                cost_rev = d[u * n + seg[length - 1]] + d[seg[0] * n + v] - d[u * n + v]
                if cost < gain or cost_rev < gain:
                    pos = 0
                    for q in range(p + 1):
                        t[pos] = buf[q]
                        pos += 1
                    for q in range(length):
                        t[pos] = seg[length - 1 - q] if cost_rev < cost else seg[q]
                        pos += 1
                    for q in range(p + 1, m):
                        t[pos] = buf[q]
                        pos += 1
                    return True
    return False


def local_search_tour(dist, int n, starts=None, bint improve=True):
    """The best tour over nearest-neighbour starts (default: every city), each improved by 2-opt
    and Or-opt to a local optimum (unless ``improve`` is false).  Returns ``(tour, length)``, the
    tour from city 0 in the direction the search uses (second city below the last)."""
    if n <= 0:
        raise ValueError("no cities")
    if n <= 3:
        tour = list(range(n))
        return tour, sum(dist[tour[i] * n + tour[(i + 1) % n]] for i in range(n))
    cdef int64_t* d = _matrix(dist, n)
    cdef int32_t* t = <int32_t*>malloc(n * sizeof(int32_t))
    cdef int32_t* best_t = <int32_t*>malloc(n * sizeof(int32_t))
    cdef int32_t* buf = <int32_t*>malloc(2 * n * sizeof(int32_t))
    cdef uint8_t* used = <uint8_t*>malloc(n)
    cdef int64_t length, best = 0
    cdef bint have = False
    cdef int i, start
    if not (t and best_t and buf and used):
        raise MemoryError()
    try:
        for start in (range(n) if starts is None else starts):
            _nearest_neighbour(d, n, start, t, used)
            while improve:
                while _two_opt_pass(d, n, t):
                    pass
                if not _or_opt_pass(d, n, t, buf):
                    break
            length = _tour_length(d, t, n)
            if not have or length < best:
                best = length
                have = True
                memcpy(best_t, t, n * sizeof(int32_t))
        tour = [best_t[i] for i in range(n)]
        k = tour.index(0)
        tour = tour[k:] + tour[:k]
        if tour[1] > tour[n - 1]:                   # the orientation the search uses
            tour = [0] + tour[1:][::-1]
        return tour, best
    finally:
        free(d)
        free(t)
        free(best_t)
        free(buf)
        free(used)


# -- the search tree ---------------------------------------------------------------------------

cdef class TspCore(OptimisationCore):
    """Node: a path from city 0 (its cities, visited set and length).

    Children append one unvisited city, nearest to the path's end first (ties: lower index).
    Each tour is searched in one direction only: the last city must not be below the second
    (``path[1] <= path[-1]``), which children that could not end that way never violate.
    Bound (minimise): length + a Lagrangian 1-tree bound on the rest, with the root's penalties
    pi: MST over the unvisited cities R under c_ij + pi_i + pi_j, plus the cheapest such edges
    from the path's end to R and from R (cities >= path[1]) to city 0, on distinct cities when
    |R| > 1, minus pi_end + pi_0 + 2 sum_R pi; rounded up (tour lengths are integers).
    """
    cdef readonly int n
    cdef int64_t* d             # n x n distances
    cdef double* rc             # n x n reduced costs d_ij + pi_i + pi_j
    cdef double* pi
    cdef int32_t* near          # row c: the other cities, nearest to c first
    cdef uint64_t full          # all cities
    cdef uint64_t* above        # above[a]: cities >= a
    cdef uint8_t* path          # per frame: n cities (the first depth+1 used)
    cdef int32_t* depth         # per frame: edges on the path
    cdef uint64_t* seen         # per frame: visited set
    cdef int64_t* length        # per frame: path length
    cdef int32_t* pos           # per frame: generator position in near[end]
    cdef double* key            # Prim scratch
    cdef int32_t* rest
    cdef int frames
    cdef readonly long long bounds
    cdef object _args

    def __init__(self, dist, int n, pi=None):
        """``dist``: n*n integer distances (row-major, symmetric); ``pi``: root penalties (zeros:
        the plain MST bound)."""
        if n < 1 or n > MAX_CITIES:
            raise ValueError(f"TspCore supports 1..{MAX_CITIES} cities, got {n}")
        self.n = n
        dist = list(dist)
        pi = [0.0] * n if pi is None else list(pi)
        if len(pi) != n or len(dist) != n * n:
            raise ValueError("dist must have n*n entries and pi n entries")
        self.d = _matrix(dist, n)
        self.rc = <double*>malloc(n * n * sizeof(double))
        self.pi = <double*>malloc(n * sizeof(double))
        self.near = <int32_t*>malloc(n * n * sizeof(int32_t))
        self.above = <uint64_t*>malloc((n + 1) * sizeof(uint64_t))
        self.key = <double*>malloc(n * sizeof(double))
        self.rest = <int32_t*>malloc(n * sizeof(int32_t))
        if not (self.rc and self.pi and self.near and self.above and self.key and self.rest):
            raise MemoryError()
        cdef int i, j
        for i in range(n):
            self.pi[i] = pi[i]
        for i in range(n):
            for j in range(n):
                self.rc[i * n + j] = self.d[i * n + j] + self.pi[i] + self.pi[j]
            row = dist[i * n:(i + 1) * n]
            order = sorted((j for j in range(n) if j != i), key=lambda j: (row[j], j))
            for j in range(n - 1):
                self.near[i * n + j] = order[j]
        self.full = 0
        for i in range(n):
            self.full |= _bit(i)
        self.above[n] = 0
        for i in range(n - 1, -1, -1):
            self.above[i] = self.above[i + 1] | _bit(i)
        self.has_bound = True
        self.sign = -1.0
        self._args = (dist, n, pi)

    def __reduce__(self):
        return (TspCore, self._args)

    def __dealloc__(self):
        free(self.d)
        free(self.rc)
        free(self.pi)
        free(self.near)
        free(self.above)
        free(self.key)
        free(self.rest)
        free(self.path)
        free(self.depth)
        free(self.seen)
        free(self.length)
        free(self.pos)

    def counters(self):
        """Bound evaluations so far."""
        return {"bounds": self.bounds}

    cdef int reserve(self, int frames) except -1:
        self.path = <uint8_t*>realloc(self.path, frames * self.n)
        self.depth = <int32_t*>realloc(self.depth, frames * sizeof(int32_t))
        self.seen = <uint64_t*>realloc(self.seen, frames * sizeof(uint64_t))
        self.length = <int64_t*>realloc(self.length, frames * sizeof(int64_t))
        self.pos = <int32_t*>realloc(self.pos, frames * sizeof(int32_t))
        if not (self.path and self.depth and self.seen and self.length and self.pos):
            raise MemoryError()
        self.frames = frames
        return 0

    cdef int set_root(self) except -1:
        self.path[0] = 0
        self.depth[0] = 0
        self.seen[0] = _bit(0)
        self.length[0] = 0
        return 0

    cdef int load(self, object node) except -1:
        cities, length = node
        cdef const uint8_t* raw = <const uint8_t*>PyBytes_AS_STRING(cities)
        cdef int k = PyBytes_GET_SIZE(cities)
        if k < 1 or k > self.n or raw[0] != 0:
            raise ValueError("not a path of this instance")
        memcpy(self.path, raw, k)
        self.depth[0] = k - 1
        self.seen[0] = 0
        for i in range(k):
            self.seen[0] |= _bit(raw[i])
        self.length[0] = length
        return 0

    cdef object dump(self, int frame):
        return (PyBytes_FromStringAndSize(<char*>(self.path + frame * self.n), self.depth[frame] + 1),
                self.length[frame])

    cdef object solution(self, int frame):
        cdef uint8_t* p = self.path + frame * self.n
        return [p[i] for i in range(self.depth[frame] + 1)]

    cdef int open(self, int frame) except -1:
        self.pos[frame] = 0
        return 0

    cdef int next(self, int frame, int dest) except -1:
        cdef int n = self.n
        cdef int k = self.depth[frame]
        if k >= n - 1:
            return 0
        cdef uint8_t* p = self.path + frame * n
        cdef int e = p[k], c, a, i = self.pos[frame]
        cdef uint64_t seen = self.seen[frame], rest
        cdef bint ok
        while i < n - 1:
            c = self.near[e * n + i]
            i += 1
            if seen & _bit(c):
                continue
            a = c if k == 0 else p[1]
            rest = self.full & ~seen & ~_bit(c)
            ok = c >= a if rest == 0 else (rest & self.above[a]) != 0
            if not ok:                             # no way left to end at a city >= path[1]
                continue
            self.pos[frame] = i
            memcpy(self.path + dest * n, p, k + 1)
            self.path[dest * n + k + 1] = c
            self.depth[dest] = k + 1
            self.seen[dest] = seen | _bit(c)
            self.length[dest] = self.length[frame] + self.d[e * n + c]
            return 1
        self.pos[frame] = i
        return 0

    cdef double objective(self, int frame) except? -1:
        cdef int k = self.depth[frame]
        if k < self.n - 1:
            return INFINITY
        return self.length[frame] + self.d[self.path[frame * self.n + k] * self.n]

    cdef double bound(self, int frame) except? -1:
        self.bounds += 1
        return _bound(self, frame)

    def node_bound(self, path):
        """The bound of the path ``path`` (a list of cities from 0), for tests."""
        if self.frames < 1:
            self.reserve(1)
        length = sum(self.d[path[i] * self.n + path[i + 1]] for i in range(len(path) - 1))
        self.load((bytes(path), length))
        return _bound(self, 0)


cdef double _bound(TspCore self, int frame) except? -1:
    cdef int n = self.n
    cdef int k = self.depth[frame]
    cdef uint8_t* p = self.path + frame * n
    cdef int e = p[k]
    cdef uint64_t todo = self.full & ~self.seen[frame], bits
    if todo == 0:
        return self.length[frame] + self.d[e * n]
    cdef const double* rc = self.rc
    cdef double* key = self.key
    cdef int32_t* rest = self.rest
    cdef double total = 0, c, e1 = INFINITY, e2 = INFINITY, z1 = INFINITY, z2 = INFINITY
    cdef int m = 0, j, best, v, r, ie1 = -1, iz1 = -1
    cdef int a = p[1] if k > 0 else 0
    bits = todo
    while bits:
        r = __builtin_ctzll(bits)
        bits &= bits - 1
        total -= 2 * self.pi[r]
        c = rc[e * n + r]                          # the path's end (city 0 at the root) to r
        if c < e1:
            e2 = e1
            e1, ie1 = c, r
        elif c < e2:
            e2 = c
        if r >= a:                                 # r may be the last city (0 at the root: any)
            c = rc[r]
            if c < z1:
                z2 = z1
                z1, iz1 = c, r
            elif c < z2:
                z2 = c
        rest[m] = r
        m += 1
    if iz1 < 0:
        return INFINITY
    # Prim over R (rest[0] starts the tree)
    v = rest[0]
    m -= 1
    for j in range(m):
        rest[j] = rest[j + 1]
        key[j] = rc[v * n + rest[j]]
    while m > 0:
        best = _argmin(key, m)
        v = rest[best]
        total += key[best]
        m -= 1
        rest[best] = rest[m]
        key[best] = key[m]
        for j in range(m):
            c = rc[v * n + rest[j]]
            if c < key[j]:
                key[j] = c
    if k == 0:                                     # the root: a full 1-tree at city 0
        total += e1 + (e2 if e2 < INFINITY else e1) - 2 * self.pi[0]
    else:
        if ie1 != iz1 or e2 == INFINITY:           # e2 = inf: a single city left, e -> r -> 0
            total += e1 + z1
        else:
            total += min(e1 + z2, e2 + z1)
        total += self.length[frame] - self.pi[e] - self.pi[0]
    return ceil(total - EPS)
