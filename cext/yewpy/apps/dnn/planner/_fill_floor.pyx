# cython: language_level=3, boundscheck=False, wraparound=False, cdivision=True
"""Compiled core of the planner's fill floor (``bounds._fill_curve``, ``bounds._mixed_floors``).

Stages left on parts of different GPU kinds: the least summed time of the blocks left is a convex,
piecewise linear, non-increasing function of the largest stage time X (the fill curve). The floor
is the least over X of (that sum - total) / div + c1 X, the sum taken at least ``total``: what the
pipe bound's Jensen slot adds to the sum's own floor. A state whose largest stage already takes
x limits X from below, which raises the floor.
"""

from libc.stdlib cimport free, malloc


cdef class FillFloor:
    """One mixed state's fill curve with its floor's constants; ``least`` is the floor, ``at(x)``
    the floor for a state whose largest stage takes at least x (the stages' input sends, ``shift``
    of each largest stage, added by ``with_sends``)."""

    cdef double* xs            # breakpoints' X, falling
    cdef double* sums          # the curve's sum at each
    cdef int count
    cdef readonly double total, largest, c1, shift
    cdef readonly int div
    cdef readonly double least

    def __cinit__(self, points, double total, double largest, double c1, int div, double shift=0.0):
        self.count = len(points)
        self.xs = <double*>malloc(max(self.count, 1) * sizeof(double))
        self.sums = <double*>malloc(max(self.count, 1) * sizeof(double))
        if self.xs == NULL or self.sums == NULL:
            raise MemoryError()
        for i, (x, s) in enumerate(points):
            self.xs[i] = x
            self.sums[i] = s
        self.total, self.largest, self.c1, self.div, self.shift = total, largest, c1, div, shift
        self.least = self._from(largest) + c1 * shift

    def __dealloc__(self):
        free(self.xs)
        free(self.sums)

    def __reduce__(self):
        points = tuple((self.xs[i], self.sums[i]) for i in range(self.count))
        return FillFloor, (points, self.total, self.largest, self.c1, self.div, self.shift)

    cpdef double at(self, double x):
        """The floor where the largest stage takes at least ``x`` (sends included): ``least`` where
        x is within the stages' own largest time."""
        cdef double low = x - self.shift
        if low <= self.largest:
            return self.least
        return self._from(low) + self.c1 * self.shift

    def with_sends(self, double exposed):
        """The same floor with each remaining stage's steady term raised by ``exposed`` (its input
        sends): every X, and so the floor, by c1 of them."""
        points = tuple((self.xs[i], self.sums[i]) for i in range(self.count))
        return FillFloor(points, self.total, self.largest, self.c1, self.div, self.shift + exposed)

    cdef double _cost(self, double x) noexcept:
        cdef double spent
        cdef int k
        if x >= self.xs[0]:
            spent = self.sums[0]
        else:
            spent = self.sums[self.count - 1]
            for k in range(self.count - 1):
                if x >= self.xs[k + 1]:
                    spent = self.sums[k + 1] + (self.sums[k] - self.sums[k + 1]) * (x - self.xs[k + 1]) \
                        / (self.xs[k] - self.xs[k + 1])
                    break
        return ((spent if spent > self.total else self.total) - self.total) / self.div + self.c1 * x

    cdef double _from(self, double low) noexcept:
        """The least cost over X >= ``low``: convex and piecewise linear, so at ``low``, at a
        breakpoint above it, or where the curve's sum meets ``total``."""
        cdef double best, value, x
        cdef int k
        if self.count == 0:
            return float("-inf")
        best = self._cost(low)
        for k in range(self.count):
            if self.xs[k] > low:
                value = self._cost(self.xs[k])
                if value < best:
                    best = value
        for k in range(self.count - 1):
            if self.sums[k + 1] > self.total >= self.sums[k] and self.xs[k] > self.xs[k + 1]:
                x = self.xs[k + 1] + (self.xs[k] - self.xs[k + 1]) * (self.sums[k + 1] - self.total) \
                    / (self.sums[k + 1] - self.sums[k])
                if x >= low:
                    value = self._cost(x)
                    if value < best:
                        best = value
        return best
