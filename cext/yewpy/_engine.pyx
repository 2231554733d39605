# cython: language_level=3, boundscheck=False, wraparound=False, cdivision=True
"""The depth-first search engine: bounded slices, splitting, and restarting from a task.

The engine walks an explicit stack of frames held by a :class:`Core`.  It can stop after a
slice of nodes or at a deadline and resume later, hand out unexplored children from its
shallowest open frames as serialisable tasks (``split``), and start from such a task
(``start``).  Coordinations (sequential, depth-bounded, budget, and the MPI runtime) are
written in Python around these three operations; the per-node loop stays here, in C.
"""

from cpython.exc cimport PyErr_CheckSignals, PyErr_Occurred
from cpython.ref cimport PyObject, Py_XDECREF
from libc.math cimport INFINITY, nextafter
from libc.stdlib cimport free, realloc
from libc.string cimport memset
from posix.time cimport CLOCK_MONOTONIC, clock_gettime, timespec

from yewpy.core cimport (DESCENT_BUDGET, DESCENT_FOUND, DESCENT_FRAMES, DESCENT_INCUMBENT,
                         DESCENT_METRICS, DESCENT_OPEN, KIND_DECISION, KIND_ENUMERATION, KIND_OPTIMISATION,
                         Core, DecisionCore, Descent,
                         EnumerationCore, OptimisationCore)
from yewpy.core import DECISION, ENUMERATION, OPTIMISATION  # re-exported for the Python layers

# What Engine.run returns.
DONE = 0          # the current task (and everything it did not spawn) is explored
PAUSED = 1        # the slice of nodes is used up; call run again to continue
BUDGET = 2        # the backtrack budget is used up; split off work, then run again
FOUND = 3         # decision: a witness was found; the search is over
NODE_LIMIT = 4    # the node limit is reached; the search is over
TIME_LIMIT = 5    # the deadline has passed; the search is over

cdef enum Outcome:
    CONTINUE = 0
    PRUNE = 1
    BREAK = 2
    EXIT = 3

cdef extern from "Python.h":
    PyObject* PyIter_Next(object)  # a new reference, or NULL when exhausted or on error


cdef inline double _now() noexcept nogil:
    cdef timespec ts
    clock_gettime(CLOCK_MONOTONIC, &ts)
    return ts.tv_sec + 1e-9 * ts.tv_nsec


def monotonic() -> float:
    """The engine's clock (seconds, CLOCK_MONOTONIC): deadlines are given on it."""
    return _now()


cdef inline double _signed_bound(Core core, int frame) except? -1:
    """``sign * bound`` of a frame, NaN read as +inf (no promise about the subtree)."""
    cdef double b = core.sign * core.bound(frame)
    return INFINITY if b != b else b


cdef class PyCore(Core):
    """Adapter that runs a plain-Python search (``root``/``children``/...) on the engine.

    Frames are a list of nodes and a list of the iterators over their children.
    """
    cdef object problem
    cdef list nodes
    cdef list gens
    cdef object children_fn, objective_fn, bound_fn, value_fn, combine_fn, leaf_fn
    cdef object acc
    cdef long long count
    cdef bint counting

    def __init__(self, problem, int kind, bint has_bound, double sign, bint counting, leaf=None, bound=None):
        self.problem = problem
        self.leaf_fn = leaf
        self.kind = kind
        self.has_bound = has_bound
        self.sign = sign
        self.counting = counting
        self.nodes = []
        self.gens = []
        self.children_fn = problem.children
        if kind == KIND_ENUMERATION:
            self.value_fn = problem.value
            self.combine_fn = problem.combine
            self.acc = problem.zero
        else:
            self.objective_fn = problem.objective
            # ``bound``: the problem's bound where the engine does not prune with it (its children
            # are bounded as they are made): only a stopped search's open work is bounded with it
            self.bound_fn = problem.bound if has_bound else bound

    cdef int reserve(self, int frames) except -1:
        while len(self.nodes) < frames:
            self.nodes.append(None)
            self.gens.append(None)
        return 0

    cdef int set_root(self) except -1:
        self.nodes[0] = self.problem.root()
        return 0

    cdef int load(self, object node) except -1:
        self.nodes[0] = node
        return 0

    cdef object dump(self, int frame):
        return self.nodes[frame]

    cdef int open(self, int frame) except -1:
        self.gens[frame] = iter(self.children_fn(self.nodes[frame]))
        return 0

    cdef int next(self, int frame, int dest) except -1:
        gen = self.gens[frame]
        if gen is None:
            return 0
        cdef PyObject* child = PyIter_Next(gen)
        if child is NULL:
            if PyErr_Occurred() is not NULL:
                return -1
            self.gens[frame] = None
            return 0
        self.nodes[dest] = <object>child
        Py_XDECREF(child)
        return 1

    cdef double objective(self, int frame) except? -1:
        return self.objective_fn(self.nodes[frame])

    cdef int leaf(self, int frame) except -1:
        return self.leaf_fn is not None and bool(self.leaf_fn(self.nodes[frame]))

    cdef double bound(self, int frame) except? -1:
        return self.bound_fn(self.nodes[frame])

    cdef int accumulate(self, int frame) except -1:
        if self.counting:
            self.count += 1
        else:
            self.acc = self.combine_fn(self.acc, self.value_fn(self.nodes[frame]))
        return 0

    cdef object take_value(self):
        if self.kind != KIND_ENUMERATION:
            return None
        if self.counting:
            value = self.count
            self.count = 0
            return value
        value = self.acc
        self.acc = self.problem.zero
        return value


cdef class Engine:
    """Depth-first search over a Core, in resumable slices; one per worker, reused across tasks.

    The incumbent, the witness and the metrics live here and persist from task to task.
    """
    cdef readonly Core core
    cdef int kind
    cdef int top
    cdef readonly int base_depth
    cdef int capacity
    cdef char* closed
    cdef readonly int max_depth
    cdef public int spawn_depth
    cdef readonly bint prune_level
    cdef readonly long long backtrack_budget
    cdef long long since_budget
    cdef double inc
    cdef readonly bint has_incumbent
    cdef double witness_score
    cdef readonly bint has_witness
    cdef double target
    cdef readonly object witness
    cdef readonly bint found
    cdef public list spawned
    cdef readonly long long nodes
    cdef long long node_limit
    cdef public double deadline
    cdef readonly long long incumbent_version
    cdef readonly object ranking            # a top-K search's Ranking (yewpy.ranking), else None
    cdef unsigned int tick                  # nodes since the clock was last read, across runs
    cdef long long* m_nodes
    cdef long long* m_backtracks
    cdef long long* m_prunes
    cdef long long* m_spawns
    cdef int m_cap
    # what the recursive tree-size estimate reads (``frontier``): per frame, the node count just
    # after its node was accounted, its children generated so far, and those that left it (spawned
    # or split off); per depth, the count, sum and sum of squares of the sizes of closed subtrees
    cdef long long* f_at
    cdef long long* f_gen
    cdef long long* f_away
    cdef double* m_closed
    cdef readonly bint tracking             # keep that bookkeeping (progress estimates are on)
    cdef public bint keep_leaves            # split, spawn: a child the core knows to be a leaf
                                            # is searched here, not made a task (Core.leaf)
    cdef volatile unsigned char* flag       # pause_on: a slice ends early once flag[0] != 0
    cdef object flag_owner                  # the buffer that flag points into, kept alive

    def __init__(self, Core core, max_depth=None, int spawn_depth=-1, bint prune_level=False,
                 long long backtrack_budget=0, target=None, initial_bound=None,
                 node_limit=None, deadline=None, ranking=None, bint tracking=False):
        self.core = core
        self.tracking = tracking
        self.keep_leaves = True
        self.kind = core.kind
        self.top = -1
        self.max_depth = 2147483647 if max_depth is None else max_depth
        if self.max_depth < 1:
            raise ValueError("max_depth must be at least 1 (the root has depth 0)")
        self.spawn_depth = spawn_depth
        self.prune_level = prune_level
        self.backtrack_budget = backtrack_budget
        self.spawned = []
        self.node_limit = -1 if node_limit is None else node_limit
        self.deadline = 0.0 if deadline is None else deadline
        if self.kind == KIND_DECISION:
            if target is None:
                raise ValueError("a decision search needs a target")
            self.target = core.sign * float(target)
        if initial_bound is not None:
            self.inc = core.sign * float(initial_bound)
            self.has_incumbent = True
        if ranking is not None:
            if self.kind != KIND_OPTIMISATION:
                raise ValueError("a ranking (top-K) needs an optimisation core")
            self.ranking = ranking
            if ranking.bar > -INFINITY:
                self.inc = ranking.bar
                self.has_incumbent = True
        core.cut = -INFINITY
        self._set_cut()
        self._reserve(2)
        self._grow_metrics(8)

    def __dealloc__(self):
        free(self.closed)
        free(self.m_nodes)
        free(self.m_backtracks)
        free(self.m_prunes)
        free(self.m_spawns)
        free(self.f_at)
        free(self.f_gen)
        free(self.f_away)
        free(self.m_closed)

    cdef inline void _set_cut(self) noexcept:
        """Tell the core which children break their level (prune_level with a bound): a decision's
        bound below the target, an optimisation's not above the incumbent."""
        if not (self.prune_level and self.core.has_bound):
            return
        if self.kind == KIND_DECISION:
            self.core.cut = self.target
        elif self.kind == KIND_OPTIMISATION and self.has_incumbent:
            self.core.cut = nextafter(self.inc, INFINITY)

    cdef int _reserve(self, int frames) except -1:
        if frames <= self.capacity:
            return 0
        cdef int cap = max(frames, 2 * self.capacity, 16)
        self.core.reserve(cap)
        cdef char* closed = <char*>realloc(self.closed, cap)
        if closed is NULL:
            raise MemoryError()
        memset(closed + self.capacity, 1, cap - self.capacity)
        self.closed = closed
        self.f_at = self._grow(self.f_at, self.capacity, cap)
        self.f_gen = self._grow(self.f_gen, self.capacity, cap)
        self.f_away = self._grow(self.f_away, self.capacity, cap)
        self.capacity = cap
        return 0

    cdef long long* _grow(self, long long* arr, int old, int cap) except NULL:
        """``arr`` (``old`` counts) grown to ``cap`` counts, the new ones zero."""
        cdef long long* out = <long long*>realloc(arr, cap * sizeof(long long))
        if out is NULL:
            raise MemoryError()
        memset(out + old, 0, (cap - old) * sizeof(long long))
        return out

    cdef int _grow_metrics(self, int depth) except -1:
        if depth < self.m_cap:
            return 0
        cdef int cap = max(depth + 1, 2 * self.m_cap)
        self.m_nodes = self._grow(self.m_nodes, self.m_cap, cap)
        self.m_backtracks = self._grow(self.m_backtracks, self.m_cap, cap)
        self.m_prunes = self._grow(self.m_prunes, self.m_cap, cap)
        self.m_spawns = self._grow(self.m_spawns, self.m_cap, cap)
        cdef double* closed = <double*>realloc(self.m_closed, 3 * cap * sizeof(double))
        if closed is NULL:
            raise MemoryError()
        memset(closed + 3 * self.m_cap, 0, 3 * (cap - self.m_cap) * sizeof(double))
        self.m_closed = closed
        self.m_cap = cap
        return 0

    # -- starting work ---------------------------------------------------------------------

    def start_root(self):
        """Make the root the current task; the root is accounted here (enumeration only)."""
        self.core.set_root()
        self.nodes += 1
        self.m_nodes[0] += 1
        if self.kind == KIND_ENUMERATION:
            self.core.accumulate(0)
        self._begin(0)

    def start(self, task):
        """Make ``task`` = ``(depth, node)`` (from ``split`` or ``spawned``) the current task.

        Its node was accounted where it was generated; here it is only bounded again, since the
        incumbent may have improved while it waited, and skipped (a prune) if it cannot win.
        """
        depth, node = task
        self.core.load(node)
        cdef Core core = self.core
        cdef double b
        if self.kind != KIND_ENUMERATION and core.has_bound and (self.has_incumbent or
                                                                 self.kind == KIND_DECISION):
            b = core.sign * core.bound(0)
            if b < self.target if self.kind == KIND_DECISION else b <= self.inc:
                self._grow_metrics(depth)
                self.m_prunes[depth] += 1
                self.top = -1
                return
        self._begin(depth)

    cdef int _begin(self, int depth) except -1:
        self.base_depth = depth
        self._grow_metrics(depth + 1)
        if depth + 1 < self.max_depth and not self.found:
            self.core.open(0)
            self._opened(0)
            self.top = 0
        else:
            self.top = -1
        return 0

    # -- the per-node loop -----------------------------------------------------------------

    cdef inline void _opened(self, int c) noexcept:
        """Frame c's generator was just opened; its node is the last one accounted."""
        self.closed[c] = 0
        if not self.tracking:
            return
        self.f_at[c] = self.nodes
        self.f_gen[c] = 0
        self.f_away[c] = 0

    cdef inline void _close(self, int top) noexcept:
        """Frame top's subtree is explored: record its size at its depth, unless some of it left
        as tasks (then this is not the subtree's size)."""
        if not self.tracking or self.f_away[top]:
            return
        cdef double size = self.nodes - self.f_at[top] + 1
        cdef double* at = self.m_closed + 3 * (self.base_depth + top)
        at[0] += 1
        at[1] += size
        at[2] += size * size

    cdef inline void _closed_leaf(self, int a) noexcept:
        """A split kept a leaf at depth a (searched without a frame): a closed subtree of 1 node."""
        if not self.tracking:
            return
        cdef double* at = self.m_closed + 3 * a
        at[0] += 1
        at[1] += 1
        at[2] += 1

    cdef int _visit(self, int c, int a) except -1:
        """Account one newly generated node at frame c, depth a (the single accounting rule)."""
        cdef Core core = self.core
        cdef double obj, b
        self.nodes += 1
        if a >= self.m_cap:
            self._grow_metrics(a)
        self.m_nodes[a] += 1
        if self.kind == KIND_ENUMERATION:
            core.accumulate(c)
            return CONTINUE
        if self.kind == KIND_DECISION:
            obj = core.sign * core.objective(c)
            if obj >= self.target:
                self.found = True
                self.witness = core.solution(c)
                self.witness_score = obj
                self.has_witness = True
                return EXIT
            if core.has_bound:
                b = core.sign * core.bound(c)
                if b < self.target:
                    self.m_prunes[a] += 1
                    return BREAK if self.prune_level else PRUNE
            return CONTINUE
        if core.has_bound and self.has_incumbent:
            b = core.sign * core.bound(c)
            if b <= self.inc:
                self.m_prunes[a] += 1
                return BREAK if self.prune_level else PRUNE
        obj = core.sign * core.objective(c)
        if obj > -INFINITY and (not self.has_incumbent or obj > self.inc):   # -inf: not a solution
            self._improve(c, obj)
        return CONTINUE

    cdef int _improve(self, int c, double score) except -1:
        """Frame c holds a solution that beats the incumbent (the bar of a top-K ranking)."""
        cdef Core core = self.core
        solution = core.solution(c)
        if not self.has_witness or score > self.witness_score:
            self.witness = solution
            self.witness_score = score
            self.has_witness = True
        if self.ranking is None:
            self.inc = score
        elif self.ranking.add(score * core.sign, solution):
            self.inc = self.ranking.bar
        else:
            return 0
        self.has_incumbent = True
        self._set_cut()
        self.incumbent_version += 1
        return 0

    cdef inline bint _backtrack(self, int depth):
        """Count a backtrack; true when the backtrack budget is used up."""
        self.m_backtracks[depth] += 1
        if self.backtrack_budget > 0:
            self.since_budget += 1
            if self.since_budget >= self.backtrack_budget:
                self.since_budget = 0
                return True
        return False

    def run(self, long long slice_nodes=-1, double slice_seconds=0):
        """Search the current task for at most ``slice_nodes`` nodes (-1: no limit) and about
        ``slice_seconds`` (0: no limit; the clock is read every 256 nodes).

        Returns DONE, PAUSED, BUDGET, FOUND, NODE_LIMIT or TIME_LIMIT.
        """
        cdef Core core = self.core
        cdef int top, c, a, r, outcome, mark
        cdef long long left = slice_nodes
        cdef bint budget_hit
        cdef double slice_end = _now() + slice_seconds if slice_seconds > 0 else 0
        if core.can_descend and self.spawn_depth <= self.base_depth:
            return self._descend(left, slice_end)      # no child of this task is spawned
        while self.top >= 0:
            top = self.top
            if self.closed[top]:
                r = 0
            else:
                if top + 2 > self.capacity:
                    self._reserve(top + 2)
                r = core.next(top, top + 1)
            if r == 0:
                self.closed[top] = 1
                self.top = top - 1
                self._close(top)
                if self._backtrack(self.base_depth + top):
                    return BUDGET
                continue
            if self.tracking:
                self.f_gen[top] += 1
            c = top + 1
            a = self.base_depth + c
            outcome = self._visit(c, a)
            budget_hit = False
            if outcome == CONTINUE:
                if a + 1 < self.max_depth:
                    if a <= self.spawn_depth and not (self.keep_leaves and core.leaf(c)):
                        self.spawned.append((a, core.dump(c)))
                        self.m_spawns[a] += 1
                        if self.tracking:
                            self.f_away[top] += 1
                    else:
                        core.open(c)
                        self._opened(c)
                        self.top = c
                else:
                    budget_hit = self._backtrack(a)
            elif outcome == BREAK:
                self.closed[top] = 1
            elif outcome == EXIT:
                self.top = -1
                return FOUND
            # _after_nodes(1, ...), written out: this is the per-node path of every other core
            if self.node_limit >= 0 and self.nodes >= self.node_limit:
                return NODE_LIMIT
            self.tick += 1
            if (self.tick & 4095) == 0:
                PyErr_CheckSignals()
            if (self.tick & 255) == 0:
                mark = self._at_mark(slice_end, budget_hit)
                if mark >= 0:
                    return mark
            if budget_hit:
                return BUDGET
            if left > 0:
                left -= 1
                if left == 0:
                    return PAUSED
        return DONE

    cdef int _descend(self, long long left, double slice_end) except? -2:
        """``run`` for a core that walks its own frames (``Core.descend``): lend it this engine's
        state in chunks that end where ``run`` reads the clock, and act on what it hands back."""
        cdef Core core = self.core
        cdef Descent d
        cdef int status, c, a
        cdef long long budget
        cdef bint budget_hit
        cdef bint timed = self.deadline > 0 or slice_end > 0 or self.flag != NULL
        while self.top >= 0:
            if timed:                       # the clock (and the flag) is read every 256 nodes
                budget = 256 - (self.tick & 255)
            else:                           # only signals are checked, every 4096
                budget = 4096 - (self.tick & 4095)
            if 0 < left < budget:
                budget = left
            if self.node_limit >= 0 and self.node_limit - self.nodes < budget:
                budget = max(1, self.node_limit - self.nodes)
            self._lend(&d, budget)
            status = core.descend(&d)
            self.top = d.top
            self.nodes = d.nodes
            self.since_budget = d.since_budget
            budget_hit = status == DESCENT_BUDGET
            if status == DESCENT_FOUND:
                c = d.event
                self.found = True
                self.witness = core.solution(c)
                self.witness_score = core.sign * core.objective(c)
                self.has_witness = True
                self.top = -1
                return FOUND
            if status == DESCENT_INCUMBENT:
                c = d.event
                self._improve(c, d.inc)
                a = self.base_depth + c
                if a + 1 < self.max_depth:
                    core.open(c)
                    self._opened(c)
                    self.top = c
                else:
                    budget_hit = self._backtrack(a)
            elif status == DESCENT_OPEN:
                core.open(d.event)
                self._opened(d.event)
                self.top = d.event
            elif status == DESCENT_FRAMES:
                self._reserve(self.top + 2)
            elif status == DESCENT_METRICS:
                self._grow_metrics(self.base_depth + self.top + 1)
            if d.accounted == 0:
                if budget_hit:
                    return BUDGET
                continue
            status = self._after_nodes(d.accounted, budget_hit, &left, slice_end)
            if status >= 0:
                return status
        return DONE

    cdef inline int _at_mark(self, double slice_end, bint budget_hit) noexcept:
        """Every 256 nodes: the deadline, the slice's end and the pause flag (``pause_on``). A status
        for ``run`` to return, or -1 to go on."""
        cdef double now
        if self.deadline > 0 or slice_end > 0:
            now = _now()
            if self.deadline > 0 and now >= self.deadline:
                return TIME_LIMIT
            if slice_end > 0 and now >= slice_end and not budget_hit:
                return PAUSED
        if self.flag != NULL and self.flag[0] != 0 and not budget_hit:
            return PAUSED
        return -1

    cdef inline int _after_nodes(self, long long accounted, bint budget_hit, long long* left,
                                 double slice_end) except? -2:
        """What follows ``accounted`` nodes: the node limit, signals every 4096 nodes (Ctrl-C and
        SIGTERM reach a long compiled run), the clock every 256, the backtrack budget, the
        slice. A status for ``run`` to return, or -1 to go on."""
        cdef unsigned int before = self.tick
        cdef int mark
        if self.node_limit >= 0 and self.nodes >= self.node_limit:
            return NODE_LIMIT
        self.tick += <unsigned int>accounted
        if (before >> 12) != (self.tick >> 12):
            PyErr_CheckSignals()
        if (before >> 8) != (self.tick >> 8):
            mark = self._at_mark(slice_end, budget_hit)
            if mark >= 0:
                return mark
        if budget_hit:
            return BUDGET
        if left[0] > 0:
            left[0] -= accounted
            if left[0] <= 0:
                return PAUSED
        return -1

    cdef void _lend(self, Descent* d, long long budget) noexcept:
        """Fill ``d`` with this engine's state for ``Core.descend``."""
        d.top = self.top
        d.base_depth = self.base_depth
        d.max_depth = self.max_depth
        d.frames = self.capacity
        d.metric_depths = self.m_cap
        d.nodes = self.nodes
        d.budget = budget
        d.accounted = 0
        d.prune_level = self.prune_level
        d.has_incumbent = self.has_incumbent
        d.backtrack_budget = self.backtrack_budget
        d.since_budget = self.since_budget
        d.event = -1
        d.inc = self.inc
        d.target = self.target
        d.closed = self.closed
        d.m_nodes = self.m_nodes
        d.m_backtracks = self.m_backtracks
        d.m_prunes = self.m_prunes
        d.f_at = self.f_at
        d.f_gen = self.f_gen
        d.f_away = self.f_away
        d.m_closed = self.m_closed
        d.tracking = self.tracking

    def pause_on(self, flag):
        """End every slice early, within 256 nodes, once byte 0 of the writable buffer ``flag``
        is nonzero (another process may set it: the MPI runtime's doorbell); None: never."""
        cdef unsigned char[::1] view
        if flag is None:
            self.flag, self.flag_owner = NULL, None
            return
        view = flag
        self.flag_owner = view
        self.flag = &view[0]

    # -- giving work away ------------------------------------------------------------------

    def split(self, bint whole_level=True, bint all_levels=False, Py_ssize_t limit=0):
        """Take unexplored children off the shallowest open frame(s) as tasks.

        One child (``whole_level=False``), every remaining child of the shallowest open frame
        (``whole_level=True``), or of every open frame (``all_levels=True``), shallowest first;
        with ``limit > 0``, no deeper frame once ``limit`` tasks are taken (a stack thousands of
        frames deep is not emptied for one thief; frames are always taken whole).  The children are
        accounted here, as the victim's generator yields them; the thief accounts only their
        descendants.  A child the core knows to be a leaf (``Core.leaf``) stays and is searched
        here unless ``keep_leaves`` is off: on a binomial tree most children are leaves, and
        each would otherwise cost a thief a round trip for one node.  Returns a list of
        ``(depth, node)`` tasks, shallowest first.
        """
        cdef list tasks = []
        cdef int f, scratch, a, r, outcome
        if self.top < 0:
            return tasks
        scratch = self.top + 1
        self._reserve(scratch + 1)
        for f in range(self.top + 1):
            if self.closed[f]:
                continue
            a = self.base_depth + f + 1
            while True:
                r = self.core.next(f, scratch)
                if r == 0:
                    self.closed[f] = 1
                    break
                self.f_gen[f] += 1
                outcome = self._visit(scratch, a)
                if outcome == EXIT:
                    self.top = -1
                    return tasks
                if outcome == BREAK:
                    self.closed[f] = 1
                    break
                if outcome == PRUNE:
                    continue
                if a + 1 >= self.max_depth:
                    self._backtrack(a)
                elif self.keep_leaves and self.core.leaf(scratch):
                    self._backtrack(a)          # searched here: a round trip for one node costs more
                    self._closed_leaf(a)
                else:
                    tasks.append((a, self.core.dump(scratch)))
                    self.m_spawns[a] += 1
                    self.f_away[f] += 1
                    if not whole_level:
                        return tasks
            if tasks and (not all_levels or 0 < limit <= len(tasks)):
                return tasks
        return tasks

    # -- knowledge and results -------------------------------------------------------------

    @property
    def active(self):
        """True while the current task still has unexplored nodes."""
        return self.top >= 0

    @property
    def incumbent(self):
        """The best objective known here (own or offered), or None."""
        return self.inc * self.core.sign if self.has_incumbent else None

    @property
    def witness_objective(self):
        """The objective of ``witness`` (the best node this engine found itself), or None."""
        return self.witness_score * self.core.sign if self.has_witness else None

    def offer(self, double value):
        """Adopt an objective found elsewhere if it is better; true when adopted."""
        cdef double s = value * self.core.sign
        if not self.has_incumbent or s > self.inc:
            if self.ranking is not None:
                self.ranking.adopt(s)
            self.inc = s
            self.has_incumbent = True
            self._set_cut()
            return True
        return False

    def take_value(self):
        """Enumeration: the value accumulated since the last call."""
        return self.core.take_value()

    def frontier(self):
        """What the recursive tree-size estimate needs (``yewpy.operations.treesize``): the open
        frames, shallowest first, as ``(depth, opened, explored, generated, away, exhausted)`` (the
        node count when it opened, which names it while it stays open; the nodes of its subtree
        searched here so far, itself included; its children generated, those of them that left as
        tasks, and whether its generator is done), and per depth the ``(count, sum, sum of squares)`` of the sizes of the
        subtrees closed here."""
        cdef int f, d
        frames = [(self.base_depth + f, self.f_at[f], self.nodes - self.f_at[f] + 1, self.f_gen[f],
                   self.f_away[f], self.closed[f] != 0) for f in range(self.top + 1)]
        closed = [(self.m_closed[3 * d], self.m_closed[3 * d + 1], self.m_closed[3 * d + 2])
                  for d in range(self.m_cap)]
        return frames, closed

    def open_bound(self, tasks=(), double deadline=0):
        """The best bound, signed (``sign * bound``, largest), of what is left open here: each open
        frame's remaining children, made and bounded one by one until ``deadline`` (the engine's
        clock; 0: none), then the frame's own bound, which covers them; and ``tasks`` (a pool's
        ``(depth, node)``), each by its bound until the deadline, then all by the root's. -inf
        where nothing is open; None where the core cannot bound (a Python search without
        ``bound``); a NaN bound counts as +inf. It uses up the frames' generators and loads nodes
        into frame 0: call it only once the search has stopped, and it ends the current task."""
        cdef Core core = self.core
        cdef double best = -INFINITY, b, here
        cdef int f, scratch
        if not core.has_bound and not (isinstance(core, PyCore) and (<PyCore>core).bound_fn is not None):
            return None
        scratch = self.top + 1
        self._reserve(scratch + 1)
        for f in range(self.top + 1):        # shallowest first: their own bounds are the loosest
            if self.closed[f]:
                continue
            here = -INFINITY
            while True:
                if deadline > 0 and _now() > deadline:
                    here = max(here, _signed_bound(core, f))
                    break
                if core.next(f, scratch) == 0:
                    break
                here = max(here, _signed_bound(core, scratch))
                if self.prune_level:            # the siblings' bounds do not increase: this is theirs
                    break
            self.closed[f] = 1
            best = max(best, here)
        self.top = -1
        for _, node in tasks:
            if deadline > 0 and _now() > deadline:
                core.set_root()                 # the root's bound covers every task left
                return max(best, _signed_bound(core, 0))
            core.load(node)
            best = max(best, _signed_bound(core, 0))
        return best

    def frame_node(self, int frame):
        """The node of open frame ``frame`` (0: the current task's root), as ``split`` hands it out."""
        if not 0 <= frame <= self.top:
            raise IndexError(f"frame {frame} is not open")
        return self.core.dump(frame)

    def metrics(self):
        """Per-depth counts: nodes, backtracks, prunes (breaks included) and spawned tasks."""
        cdef int deepest = 0
        cdef int d
        for d in range(self.m_cap):
            if self.m_nodes[d] or self.m_backtracks[d] or self.m_prunes[d] or self.m_spawns[d]:
                deepest = d + 1
        return {
            "nodes": [self.m_nodes[d] for d in range(deepest)],
            "backtracks": [self.m_backtracks[d] for d in range(deepest)],
            "prunes": [self.m_prunes[d] for d in range(deepest)],
            "spawns": [self.m_spawns[d] for d in range(deepest)],
        }
