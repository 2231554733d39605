# cython: language_level=3, boundscheck=False, wraparound=False, cdivision=True
"""The core behind ``@yewpy.jit``: the engine contract over compiled functions, no Python per node.

A node is a record of ``width`` 8-byte slots (the layout ``yewpy.compiler.layout`` derives from
the root).  ``open`` calls the compiled ``expand``, which runs the user's ``children`` (compiled
as a loop) to the end and writes every child into that frame's buffer, in order; ``next`` hands
them out one at a time by pointing the next frame at that child's record (the buffer stays put
while the child's subtree is searched: a frame's buffer is rewritten only when a new node is
expanded there, and the deeper frames are rewritten before they are read again).  ``descend``
runs the engine's per-node loop over these frames in compiled code (``Core.descend``).  An enumeration's ``value``, or a
decision's or optimisation's ``objective`` and ``bound``, are computed by ``expand`` too, into
the slots after the node (a record is ``width`` slots plus one per such number), so accounting a
node calls nothing; the cfuncs compute them only for a task's root (``set_root``, ``load``).
With ``prune_level``, ``expand`` stops after the first child whose bound is below the engine's
``cut``: the engine breaks there, so the later siblings would never be pulled.
All of them are C function pointers (numba ``cfunc`` addresses) taking the attribute record
``env`` first, so the engine's per-node loop never enters Python.
"""

from libc.stdint cimport int64_t, uint64_t, uintptr_t
from libc.stdlib cimport free, malloc, realloc
from libc.string cimport memcpy, memset
from cpython.bytes cimport PyBytes_AS_STRING, PyBytes_FromStringAndSize, PyBytes_GET_SIZE

from yewpy.core cimport KIND_ENUMERATION, Core, Descent

ctypedef int64_t (*expand_fn)(void* env, void* node, void* out, int64_t capacity,
                              double cut, int64_t* stop) noexcept nogil
ctypedef int64_t (*int_fn)(void* env, void* node) noexcept nogil
ctypedef double (*float_fn)(void* env, void* node) noexcept nogil
ctypedef int64_t (*descend_fn)(void* env, void* frames, Descent* d, int64_t* acc, double cut) noexcept nogil

cdef enum Fold:                 # how an enumeration folds its nodes
    FOLD_COUNT = 0              # count them (value() not overridden)
    FOLD_INT = 1                # sum an integer value()
    FOLD_FLOAT = 2              # sum a float value()

COUNT = FOLD_COUNT
SUM_INT = FOLD_INT
SUM_FLOAT = FOLD_FLOAT


cdef struct Frame:             # one frame, kept together (one cache line)
    uint64_t* node             # its node's record: the root's, or one in its parent's buffer
    uint64_t* kids             # its children's records, count x stride
    int64_t capacity           # records kids has room for
    int64_t count              # children generated
    int64_t pos                # the next child to hand out


cdef class JitCore(Core):
    """Frames as flat records; children generated in full into a per-frame buffer at ``open``."""
    cdef object problem
    cdef object codec              # encode(tuple) -> bytes, decode(bytes) -> tuple
    cdef bytes root_record         # the root's record: root() ran once, to find the layout
    cdef object keep               # the arrays the env record points into
    cdef void* env
    cdef readonly int width        # slots per node
    cdef int stride                # slots per record: the node, then value(), or objective() and bound()
    cdef size_t node_bytes
    cdef size_t record_bytes
    cdef uint64_t* root            # the record of frame 0's node (set_root, load)
    cdef Frame* fr
    cdef int frames
    cdef expand_fn expand
    cdef int_fn value_int
    cdef float_fn value_float, objective_fn, bound_fn
    cdef int fold
    cdef int64_t acc[3]            # expand's stop flag (ends children() at a break), the integer
                                   # sum or count, the float sum (its bits): shared with descend
    cdef descend_fn walk
    cdef object leaf_fn            # the class's Python leaf(node), asked by splits and spawns; or None

    def __init__(self, problem, codec, bytes root_record, keep, uintptr_t env, int width, int kind,
                 bint has_bound, double sign, int fold, uintptr_t expand, uintptr_t value=0,
                 uintptr_t objective=0, uintptr_t bound=0, uintptr_t descend=0, leaf=None):
        self.problem = problem
        self.leaf_fn = leaf
        self.codec = codec
        self.root_record = root_record
        self.keep = keep
        self.env = <void*>env
        self.width = width
        self.node_bytes = width * sizeof(uint64_t)
        if kind == KIND_ENUMERATION:
            self.stride = width + (0 if fold == FOLD_COUNT else 1)
        else:
            self.stride = width + 1 + has_bound         # objective at width, bound after it
        self.record_bytes = self.stride * sizeof(uint64_t)
        self.kind = kind
        self.has_bound = has_bound
        self.sign = sign
        self.fold = fold
        self.expand = <expand_fn>expand
        if fold == FOLD_INT:
            self.value_int = <int_fn>value
        elif fold == FOLD_FLOAT:
            self.value_float = <float_fn>value
        self.objective_fn = <float_fn>objective
        self.walk = <descend_fn>descend
        self.can_descend = descend != 0
        self.acc[0] = self.acc[1] = self.acc[2] = 0
        self.bound_fn = <float_fn>bound

    def __dealloc__(self):
        cdef int f
        if self.fr is not NULL:
            for f in range(self.frames):
                free(self.fr[f].kids)
        free(self.fr)
        free(self.root)

    def __reduce__(self):
        return (_rebuild, (self.problem,))

    cdef inline uint64_t* _node(self, int frame) noexcept:
        return self.fr[frame].node

    cdef int reserve(self, int frames) except -1:
        cdef int f
        if frames <= self.frames:
            return 0
        if self.root is NULL:
            self.root = <uint64_t*>malloc(self.record_bytes + 8)
        cdef Frame* grown = <Frame*>realloc(self.fr, frames * sizeof(Frame))
        if not (self.root and grown):
            raise MemoryError()
        self.fr = grown
        memset(self.fr + self.frames, 0, (frames - self.frames) * sizeof(Frame))
        self.fr[0].node = self.root
        self.frames = frames
        return 0

    cdef int _put(self, object record) except -1:
        """Frame 0 := the node ``record``, with the value, or objective and bound, that expand
        would have stored after it."""
        if PyBytes_GET_SIZE(record) != <Py_ssize_t>self.node_bytes:
            raise ValueError(f"a node record has {PyBytes_GET_SIZE(record)} bytes, expected {self.node_bytes}")
        cdef uint64_t* node = self.root
        memcpy(node, PyBytes_AS_STRING(record), self.node_bytes)
        if self.fold == FOLD_INT:                   # the value expand() would have written
            (<int64_t*>node)[self.width] = self.value_int(self.env, node)
        elif self.fold == FOLD_FLOAT:
            (<double*>node)[self.width] = self.value_float(self.env, node)
        elif self.kind != KIND_ENUMERATION:
            (<double*>node)[self.width] = self.objective_fn(self.env, node)
            if self.has_bound:
                (<double*>node)[self.width + 1] = self.bound_fn(self.env, node)
        return 0

    cdef int set_root(self) except -1:
        return self._put(self.root_record)

    cdef int load(self, object node) except -1:
        return self._put(node)

    cdef object dump(self, int frame):
        return PyBytes_FromStringAndSize(<char*>self._node(frame), self.node_bytes)

    cdef object solution(self, int frame):
        return self.codec.decode(self.dump(frame))

    cdef int leaf(self, int frame) except -1:
        return self.leaf_fn is not None and bool(self.leaf_fn(self.solution(frame)))

    cdef int open(self, int frame) except -1:
        cdef Frame* f = self.fr + frame
        cdef int64_t n = self.expand(self.env, f.node, f.kids, f.capacity, self.cut, &self.acc[0])
        cdef int64_t cap
        cdef uint64_t* grown
        if n > f.capacity:                  # the buffer was too small: grow it and generate again
            cap = max(n, 2 * f.capacity, 8)
            grown = <uint64_t*>realloc(f.kids, cap * self.record_bytes + 8)
            if grown is NULL:
                raise MemoryError()
            f.kids = grown
            f.capacity = cap
            n = self.expand(self.env, f.node, grown, cap, self.cut, &self.acc[0])
        f.count = n
        f.pos = 0
        return 0

    cdef int next(self, int frame, int dest) except -1:
        cdef Frame* f = self.fr + frame
        if f.pos >= f.count:
            return 0
        self.fr[dest].node = f.kids + <size_t>f.pos * self.stride
        f.pos += 1
        return 1

    cdef double objective(self, int frame) except? -1:
        return (<double*>self._node(frame))[self.width]

    cdef double bound(self, int frame) except? -1:
        return (<double*>self._node(frame))[self.width + 1]

    cdef int descend(self, Descent* d) except -1:
        """The engine's per-node loop over these frames, compiled with the search (codegen's
        ``descend``): it pulls, accounts and expands children until the engine must act."""
        return <int>self.walk(self.env, self.fr, d, self.acc, self.cut)

    cdef int accumulate(self, int frame) except -1:
        if self.fold == FOLD_COUNT:
            self.acc[1] += 1
        elif self.fold == FOLD_INT:
            self.acc[1] += (<int64_t*>self._node(frame))[self.width]
        else:
            (<double*>&self.acc[2])[0] += (<double*>self._node(frame))[self.width]
        return 0

    cdef object take_value(self):
        if self.kind != KIND_ENUMERATION:
            return None
        cdef double total = (<double*>&self.acc[2])[0]
        cdef int64_t count = self.acc[1]
        (<double*>&self.acc[2])[0] = 0.0
        self.acc[1] = 0
        return total if self.fold == FOLD_FLOAT else count


def _rebuild(problem):
    """Unpickling a core builds it again from its search object (the compiled code is cached)."""
    return problem._core()
