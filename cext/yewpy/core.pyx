# cython: language_level=3
"""The engine contract's base classes: what a compiled search core derives from.

``cimport`` the types from here (``from yewpy.core cimport OptimisationCore``) to write a core;
``core.pxd`` documents every method the engine calls.  This module knows nothing of the Python
API above it: ``yewpy`` registers its ``search`` function here, so ``core.search()`` works
without the compiled layer importing the layer that drives it.
"""

from libc.math cimport INFINITY

ENUMERATION = KIND_ENUMERATION
DECISION = KIND_DECISION
OPTIMISATION = KIND_OPTIMISATION

_searcher = None


def register_search(function):
    """Called once by ``yewpy``: the function behind ``Core.search``."""
    global _searcher
    _searcher = function


cdef class Core:
    def __cinit__(self, *args, **kwargs):
        self.kind = KIND_ENUMERATION
        self.has_bound = False
        self.sign = 1.0
        self.cut = -INFINITY

    cdef int reserve(self, int frames) except -1:
        raise NotImplementedError("Core.reserve")

    cdef int set_root(self) except -1:
        raise NotImplementedError("Core.set_root")

    cdef int load(self, object node) except -1:
        raise NotImplementedError("Core.load")

    cdef object dump(self, int frame):
        raise NotImplementedError("Core.dump")

    cdef int open(self, int frame) except -1:
        raise NotImplementedError("Core.open")

    cdef int next(self, int frame, int dest) except -1:
        raise NotImplementedError("Core.next")

    cdef double objective(self, int frame) except? -1:
        raise NotImplementedError("Core.objective")

    cdef double bound(self, int frame) except? -1:
        raise NotImplementedError("Core.bound")

    cdef int accumulate(self, int frame) except -1:
        return 0

    cdef object take_value(self):
        return None

    cdef object solution(self, int frame):
        return self.dump(frame)

    cdef int descend(self, Descent* d) except -1:
        raise NotImplementedError("Core.descend")

    cdef int forget(self) except -1:
        return 0

    cdef int leaf(self, int frame) except -1:
        return 0

    def search(self, coordination="seq", **params):
        """Run this search; see :func:`yewpy.search`."""
        if _searcher is None:
            raise RuntimeError("import yewpy before searching a compiled core")
        return _searcher(self, coordination, **params)


cdef class EnumerationCore(Core):
    """Compiled enumeration: override the frame methods, ``accumulate`` and ``take_value``."""
    zero = 0

    def __cinit__(self, *args, **kwargs):
        self.kind = KIND_ENUMERATION

    def combine(self, a, b):
        return a + b


cdef class DecisionCore(Core):
    """Compiled decision search: override the frame methods, ``objective`` and maybe ``bound``."""

    def __cinit__(self, *args, **kwargs):
        self.kind = KIND_DECISION


cdef class OptimisationCore(Core):
    """Compiled branch and bound: set ``sign = -1`` in ``__init__`` to minimise."""

    def __cinit__(self, *args, **kwargs):
        self.kind = KIND_OPTIMISATION
