# The engine contract every compiled core derives from: `from yewpy.core cimport OptimisationCore`.

from libc.stdint cimport int64_t

cdef enum Kind:
    KIND_ENUMERATION = 0
    KIND_DECISION = 1
    KIND_OPTIMISATION = 2


cdef struct Descent:
    # The engine's state, lent to a core that walks a task's frames itself (``Core.descend``).
    # Every field is 8 bytes, so compiled code can read it as an array (``descend`` cfuncs do).
    int64_t top                 # in/out: the deepest open frame (-1: the task is explored)
    int64_t base_depth          # the depth of frame 0
    int64_t max_depth           # nodes at depth >= max_depth are never generated
    int64_t frames              # frames reserved: a child needs frame top + 1 < frames
    int64_t metric_depths       # the metric arrays' length: a child at depth a needs a < this
    int64_t nodes               # in/out: the engine's node count
    int64_t budget              # account at most this many nodes in this call
    int64_t accounted           # out: nodes accounted in this call
    int64_t prune_level
    int64_t has_incumbent       # in/out (optimisation)
    int64_t backtrack_budget    # 0: none
    int64_t since_budget        # in/out: backtracks since the budget was last reached
    int64_t event               # out: the frame of a FOUND / INCUMBENT / OPEN event
    double inc                  # in/out: sign * incumbent
    double target               # sign * target (decision)
    char* closed                # per frame: its generator is exhausted or broken
    long long* m_nodes          # per depth: nodes, backtracks, prunes (the engine's metrics)
    long long* m_backtracks
    long long* m_prunes
    long long* f_at             # per frame: the node count just after its node was accounted
    long long* f_gen            # per frame: its children generated so far
    long long* f_away           # per frame: its children that left as tasks (split off)
    double* m_closed            # per depth: count, sum, sum of squares of closed subtrees' sizes
    int64_t tracking            # keep f_at, f_gen, f_away and m_closed (progress estimates are on)


# What Core.descend returns; the engine finishes what each asks and calls it again.
cdef enum DescentStatus:
    DESCENT_DONE = 0            # top < 0: the task is explored
    DESCENT_LIMIT = 1           # budget nodes accounted
    DESCENT_BUDGET = 2          # the backtrack budget was reached
    DESCENT_FOUND = 3           # decision: frame event is a witness (accounted)
    DESCENT_INCUMBENT = 4       # frame event is a new incumbent (accounted, not yet expanded)
    DESCENT_OPEN = 5            # frame event was accounted and survives: expand it with open()
    DESCENT_FRAMES = 6          # reserve more frames (top + 2), then call again
    DESCENT_METRICS = 7         # grow the metrics to depth base_depth + top + 1, then call again


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
    cdef public bint can_descend    # the core implements descend()

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
    cdef int descend(self, Descent* d) except -1          # optional: the per-node loop, in the core
    cdef int forget(self) except -1                       # optional: drop what earlier nodes taught
                                                          # the core (a dominance memo): a probe
                                                          # (``_probe.Prober``) counts afresh
    cdef int leaf(self, int frame) except -1              # optional: 1 when frame's node surely has
                                                          # no children (splits and spawns keep it,
                                                          # no task); 0: maybe


cdef class EnumerationCore(Core):
    pass


cdef class DecisionCore(Core):
    pass


cdef class OptimisationCore(Core):
    pass
