# The engine contract every compiled core derives from: `from yewpy.core cimport OptimisationCore`.

cdef enum Kind:
    KIND_ENUMERATION = 0
    KIND_DECISION = 1
    KIND_OPTIMISATION = 2


cdef class Core:
    """A search tree held as one frame per depth: a node plus its lazy child generator.

    Frame 0 is the root of the current task. The engine asks for frames by index only and
    never keeps pointers into them, so a core may move its storage in ``reserve``.
    """
    cdef public int kind
    cdef public bint has_bound
    cdef public double sign         # +1 maximise, -1 minimise
    cdef public double cut          # set by the engine: with prune_level, a child whose
                                    # sign * bound < cut ends its parent's generator (a break);
                                    # a core may stop generating there. -inf: no such cut yet

    cdef int reserve(self, int frames) except -1          # frames 0..frames-1 usable
    cdef int set_root(self) except -1                     # frame 0 := the root
    cdef int load(self, object node) except -1            # frame 0 := a dumped node
    cdef object dump(self, int frame)                     # frame's node, picklable
    cdef int open(self, int frame) except -1              # start frame's child generator
    cdef int next(self, int frame, int dest) except -1    # 1: next child of frame written to dest
    cdef double objective(self, int frame) except? -1
    cdef double bound(self, int frame) except? -1
    cdef int accumulate(self, int frame) except -1        # enumeration: add frame's node
    cdef object take_value(self)                          # enumeration: partial result, reset
    cdef object solution(self, int frame)                 # frame's node as the user sees it


cdef class EnumerationCore(Core):
    pass


cdef class DecisionCore(Core):
    pass


cdef class OptimisationCore(Core):
    pass
