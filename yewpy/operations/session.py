"""One rank's operational side of a search: progress lines, checkpoints, resume, the profile.

``search()`` makes one :class:`Session` per rank.  On one rank, ``poll`` runs between the
engine's slices; over MPI the runtime (``yewpy.runtime.mpi``) calls the same methods and carries
their messages.  A session never changes what is searched, only what is reported and saved.
"""

from __future__ import annotations

import json
import signal
import sys
import threading
import time
import warnings
from collections.abc import Callable
from contextlib import contextmanager
from typing import Any

from yewpy._engine import Engine, monotonic
from yewpy.core import ENUMERATION, OPTIMISATION, Core
from yewpy.errors import UsageError
from yewpy.operations import checkpoint as ckpt
from yewpy.operations.atomic import check_writable
from yewpy.operations.profile import Profile
from yewpy.operations.treesize import (
    EMPTY,
    NOTHING_LEFT,
    Left,
    Row,
    Sampler,
    TreeSize,
    finite_or_none,
    merge_left,
)
from yewpy.operations.walltime import job_end, readable, verdict
from yewpy.result import FINISHED
from yewpy.runtime.parts import KIND_NAMES, counters_of, merge_parts, summary

WATCH_SLICE = 0.05          # seconds of search between two looks when progress or checkpoints are on
PENDING: list[int] = []     # SIGINT/SIGTERM that arrived before a search could take them


def remember_signals() -> None:
    """From now until a search with a checkpoint starts, SIGINT and SIGTERM are remembered rather
    than raised; that search then stops at once with a final checkpoint (``yewpy --checkpoint``:
    a signal while the input is read still leaves a file to ``--resume``)."""
    def remember(signum: int, frame: Any) -> None:
        PENDING.append(signum)

    for sig in (signal.SIGINT, signal.SIGTERM):
        signal.signal(sig, remember)


#: a stopped optimisation bounds its open frames' children one by one for this share of the run's
#: seconds, at least BOUND_LEAST and at most BOUND_SECONDS; the frames left use their own bounds
BOUND_SHARE, BOUND_LEAST, BOUND_SECONDS = 0.05, 0.01, 1.0


class Session:
    """Progress, checkpoint and profile settings of one search, and this rank's state for them."""

    def __init__(self, problem: Any, core: Core, options: dict, start: float, *, rank: int = 0,
                 size: int = 1, checkpoint: str | None = None, checkpoint_every: float | None = None,
                 resume: str | None = None, progress: float | None = None,
                 profile: str | None = None, progress_json: bool = False,
                 sampler: Callable[[], Sampler | None] | None = None, open_work_at_end: bool = False) -> None:
        if checkpoint_every is not None and checkpoint is None:
            raise UsageError("checkpoint_every (--checkpoint-every) needs a checkpoint file (--checkpoint)")
        if checkpoint_every is not None and checkpoint_every <= 0:
            raise UsageError("checkpoint_every must be positive")
        if progress is not None and progress <= 0:
            raise UsageError("progress must be a positive number of seconds")
        self.problem, self.core, self.start = problem, core, start
        self.rank, self.size = rank, size
        self.checkpoint_path, self.every, self.resume_path = checkpoint, checkpoint_every, resume
        self.progress_every, self.profile_path = progress, profile
        self.progress_json = progress_json
        # side probes for the tree-size estimate: made at the first report, so a search that ends
        # before it never pays for the copy of its core (a PlanSearch's takes a third of a second)
        self.make_sampler = sampler
        self.sampler: Sampler | None = None
        # a stopped search reports its open work as estimated from what it searched (--estimate)
        self.open_work_at_end = open_work_at_end
        self.job_end = job_end() if progress and rank == 0 else None
        self.profile = Profile(start) if profile else None
        self.kind = core.kind
        # what progress calls the engine's bound: a top-K search prunes against its K-th best
        ranked = options.get("ranking") is not None
        self.bound_name, self.bound_key = ("top-K bar", "top_k_bar") if ranked else ("incumbent", "incumbent")
        self.taken = problem.zero if core.kind == ENUMERATION else None
        self.prior: dict | None = None          # what the resumed checkpoint had already accounted
        self.tasks: list | None = None          # this rank's share of the resumed work
        self.interrupted: int | None = None     # the signal that asked for a final checkpoint
        self.next_checkpoint = start + checkpoint_every if checkpoint_every else float("inf")
        self.next_progress = start + progress if progress else float("inf")
        self.last_progress = (start, 0)
        self.fingerprint = None                 # needed to check a resume, and by rank 0 to write
        self.write_error: str | None = None     # why the last checkpoint write failed, if it did
        for path, what in ((checkpoint, "checkpoint"), (profile, "profile")):
            problem_with = path is not None and rank == 0 and check_writable(path, what)
            if problem_with:
                raise UsageError(problem_with)
        # rank 0 signs every checkpoint it writes; a key that cannot be had fails now, not at the end
        self.key = ckpt.signing_key(create=True) if checkpoint is not None and rank == 0 else None
        if resume or (checkpoint and rank == 0):
            self.fingerprint = ckpt.fingerprint(problem, KIND_NAMES[core.kind], options.get("max_depth"),
                                                options.get("target"))

    @property
    def tracking(self) -> bool:
        """True when the engine must keep the bookkeeping that the recursive estimate reads."""
        return self.progress_every is not None or self.open_work_at_end

    @property
    def watching(self) -> bool:
        """True when the search must pause now and then for this session (bounded slices)."""
        return self.progress_every is not None or self.checkpoint_path is not None

    # -- resume --------------------------------------------------------------------------

    def load(self) -> None:
        """Read the checkpoint to resume (every rank reads it and takes every size-th task)."""
        from yewpy import __version__

        if self.resume_path is None:
            return
        header, prior, tasks = ckpt.read(self.resume_path, self.fingerprint, __version__)
        self.prior = prior
        self.tasks = tasks[self.rank::self.size]

    def begin(self, now: float) -> None:
        """The search begins (every rank has joined): progress is timed from here, so start-up
        (imports, MPI's set-up, waiting for the last rank) does not dilute the first line's rate
        nor bring that line forward."""
        if self.progress_every:
            self.next_progress = now + self.progress_every
        self.last_progress = (now, self.prior["nodes"] if self.prior is not None else 0)

    def adopt(self, engine: Engine) -> None:
        """Seed the engine with the resumed incumbent, so only better solutions are searched for."""
        if self.prior is None:
            return
        if engine.ranking is not None:          # the bar the resumed solutions prove
            ranking = self.problem.ranking()
            ranking.merge([self.prior.get("ranked", [])])
            if ranking.threshold is not None:
                engine.offer(ranking.threshold)
        elif self.prior["witness_objective"] is not None:
            engine.offer(self.prior["witness_objective"])

    def first_tasks(self) -> list | None:
        """None: start at the root (rank 0 of a fresh search); else the tasks to start from."""
        if self.tasks is not None:
            return self.tasks
        return None if self.rank == 0 else []

    def prior_parts(self) -> list:
        """The resumed part, counted once (by rank 0's merge)."""
        return [self.prior] if self.prior is not None else []

    # -- this rank's contribution ----------------------------------------------------------

    def summary(self, engine: Engine, status: str) -> dict:
        """``yewpy.runtime.parts.summary``, with the enumeration value accumulated across snapshots."""
        part = summary(engine, status)
        if self.kind == ENUMERATION:
            self.taken = self.problem.combine(self.taken, part["value"])
            part["value"] = self.taken
        part["counters"] = counters_of(self.core)
        return part

    def snapshot(self, engine: Engine, pool: Any) -> dict:
        """This rank's part with all its unexplored work as tasks (moved from the engine to the pool)."""
        pool.extend(engine.split(True, True))
        part = self.summary(engine, "running")
        part["tasks"] = pool.tasks()
        return part

    def final_part(self, engine: Engine, pool: Any, status: str, holds_all: bool = True) -> dict:
        """The part this rank ends with; it carries the unexplored work when a checkpoint wants it,
        and a stopped optimisation's ``open_bound`` where the engine and pool hold all of this
        rank's open work (``holds_all``: the coordination's ``holds_open_work``)."""
        stopped = status not in ("done", "found")
        leftover = self.checkpoint_path is not None and stopped
        if leftover and engine.active:
            pool.extend(engine.split(True, True))
        part = self.summary(engine, status)
        part["tasks"] = pool.tasks() if leftover else []
        if self.profile is not None:
            part["profile"] = self.profile.record()
        if self.open_work_at_end and status not in ("done", "found"):
            # ``--estimate``: counting the tops of what is left may take half as long again
            started = time.perf_counter()
            part["open_work"] = self.open_work(engine, pool, counting=(started - self.start) / 2)
            part["open_work_seconds"] = time.perf_counter() - started
        if self.kind == OPTIMISATION and holds_all and stopped and not self.open_work_at_end:
            # last: it uses up the engine's frames (``Result.bound``)
            spend = min(BOUND_SECONDS, BOUND_SHARE * (time.perf_counter() - self.start))
            try:
                part["open_bound"] = engine.open_bound(pool.tasks(), monotonic() + max(spend, BOUND_LEAST))
            except KeyboardInterrupt:           # Ctrl-C while bounding: the answer stands, unbounded
                part["open_bound"] = None
            except Exception as exc:            # a bound only a stop calls (bounded_children) failed:
                part["open_bound"] = None       # the answer stands, and the user hears why
                warnings.warn(f"the work left open was not bounded: {type(exc).__name__}: {exc}",
                              RuntimeWarning, stacklevel=2)
        return part

    def open_work(self, engine: Engine, pool: Any, counting: float | None = None) -> Left:
        """This rank's open work (stack and pool), estimated from the part it has searched;
        ``counting``: the seconds its tops may be counted for (None: the probes' share)."""
        if self.make_sampler is not None:
            self.sampler, self.make_sampler = self.make_sampler(), None
        if self.sampler is None:
            return NOTHING_LEFT
        return self.sampler.left(engine, pool, time.perf_counter() - self.start, counting)

    # -- checkpoints -----------------------------------------------------------------------

    def checkpoint_due(self, now: float) -> bool:
        return now >= self.next_checkpoint

    def write_checkpoint(self, parts: list, status: str) -> None:
        """Rank 0: merge every rank's part (and the resumed one) into one checkpoint file."""
        from yewpy import __version__

        tasks = [] if status in FINISHED else [task for part in parts for task in part.get("tasks", ())]
        prior = merge_parts(self.problem, self.core, [*parts, *self.prior_parts()])
        header = {"yewpy_version": __version__, "fingerprint": self.fingerprint,
                  "problem": type(self.problem).__qualname__, "kind": KIND_NAMES[self.kind],
                  "status": status, "ranks": self.size, "nodes": prior["nodes"], "tasks": len(tasks),
                  "incumbent": prior["witness_objective"], "seconds": time.perf_counter() - self.start,
                  "written": time.strftime("%Y-%m-%dT%H:%M:%S%z")}
        self.next_checkpoint = (time.perf_counter() + self.every) if self.every else float("inf")
        assert self.checkpoint_path is not None         # only a session with a checkpoint writes one
        try:
            ckpt.write(self.checkpoint_path, header, prior, tasks, self.key)
        except OSError as exc:                  # disk full, folder gone: search on, keep the last one
            self.write_error = f"checkpoint {self.checkpoint_path} not written: {exc.strerror or exc}"
            sys.stderr.write(f"yewpy: warning: {self.write_error}; the last one written is kept\n")
            sys.stderr.flush()
        else:
            self.write_error = None

    def finish(self, parts: list, result: Any, coord: Any) -> None:
        """At the end: every rank's open work summed into ``metrics["open_work"]`` where it was
        asked for; on rank 0, the final checkpoint (complete, or with the work left) and the profile."""
        if any("open_work" in part for part in parts):
            left = NOTHING_LEFT
            for part in parts:
                left = merge_left(left, part.get("open_work", NOTHING_LEFT), self.core.sign)
            result.metrics["open_work"] = left
            result.metrics["open_work_seconds"] = max(part.get("open_work_seconds", 0.0) for part in parts)
        if self.rank != 0:
            return
        if self.checkpoint_path is not None:
            self.write_checkpoint(parts, result.status)
            if self.write_error is not None:
                result.metrics["checkpoint_error"] = self.write_error
        if self.profile_path is not None:
            from yewpy.operations import profile

            depth = {key: result.metrics[key] for key in ("nodes", "backtracks", "prunes", "spawns")}
            about = {"problem": type(self.problem).__qualname__, "kind": result.kind,
                     "coordination": repr(coord), "ranks": self.size, "status": result.status,
                     "nodes": result.nodes, "seconds": result.seconds}
            try:
                profile.write(self.profile_path, [p["profile"] for p in parts], result.metrics["per_rank"],
                              depth, about)
            except OSError as exc:              # the answer matters more than its profile
                sys.stderr.write(f"yewpy: warning: profile {self.profile_path} not written: "
                                 f"{exc.strerror or exc}\n")

    # -- progress ------------------------------------------------------------------------

    def progress_due(self, now: float) -> bool:
        return now >= self.next_progress

    def sample(self, engine: Engine, pool: Any, now: float) -> tuple[Row, Left]:
        """This rank's two estimates: the recursive one of its open work (from what it has
        searched), and its side probes, topped up to their share of the time so far."""
        left = self.open_work(engine, pool)
        if self.sampler is None:
            return EMPTY, NOTHING_LEFT
        self.sampler.sample(engine.incumbent, now - self.start)
        return self.sampler.row(), left

    def print_progress(self, now: float, nodes: int, incumbent: Any, steals: int, idle: int,
                       row: Row = EMPTY, open_work: Left | None = NOTHING_LEFT) -> None:
        """One line on stderr: elapsed, nodes, rate since the last line, incumbent, steals, idle
        ranks, and the estimate of the tree and of the time left (a JSON object with --json).
        ``open_work``: every rank's, summed; None while some rank has not reported yet (the
        estimate is then Knuth's alone)."""
        nodes += self.prior["nodes"] if self.prior is not None else 0
        then, before = self.last_progress
        rate = (nodes - before) / max(now - then, 1e-9)
        self.last_progress = (now, nodes)
        self.next_progress = now + (self.progress_every or float("inf"))
        probed = TreeSize.of(row)
        recursive = None if probed is None or open_work is None else TreeSize.recursive(nodes, open_work)
        size = recursive.combined(probed, nodes) if recursive is not None else probed
        left = size.left(nodes, rate) if size is not None else None
        wall = self.job_end - time.time() if self.job_end is not None else None
        if self.progress_json:
            record: dict[str, Any] = {
                "seconds": now - self.start, "nodes": nodes, "rate": rate, self.bound_key: incumbent,
                "steals": steals, "idle_ranks": idle, "ranks": self.size}
            if size is not None and probed is not None:
                record["estimate"] = {**size.to_dict(nodes), "seconds_left":
                                      None if left is None else [finite_or_none(t) for t in left]}
                record["estimate_knuth"] = probed.to_dict(nodes)
            if recursive is not None:
                record["estimate_recursive"] = recursive.to_dict(nodes)
            if wall is not None:
                record["walltime"] = {"seconds_left": wall, "verdict": verdict(left, wall)}
            text = json.dumps({"progress": record})
        else:
            best = "" if incumbent is None else f"  {self.bound_name} {incumbent:g}"
            text = (f"yewpy: {now - self.start:7.1f} s  nodes {nodes:,}  ({rate:,.0f}/s){best}  "
                    f"steals {steals}  idle ranks {idle}/{self.size}")
            if size is not None:
                low, high = size.range(nodes)
                what = "tree" if size.under is None else f"tree under {size.under:g}"
                upper = f"{high:.3g}" if size.bounded else "no upper end"
                text += f"  est. {what} {size.at_least(nodes):.3g} nodes [{low:.3g}, {upper}]"
                if not size.consistent(nodes):
                    text += " (a lower bound: the probes missed the tree's heavy tail)"
                elif not size.bounded:
                    text += " (heavy-tailed: a few subtrees hold most of what has closed)"
                if left is not None:
                    upper = readable(left[2]) if size.bounded else "no upper end"
                    text += f", ~{readable(left[0])} left [{readable(left[1])}, {upper}]"
            if wall is not None:
                text += f"  wall time {readable(wall)} left: {verdict(left, wall)}"
        sys.stderr.write(text + "\n")
        sys.stderr.flush()

    # -- one rank: the drive loop's poll ---------------------------------------------------

    def poll(self, engine: Engine, pool: Any) -> bool:
        """Between slices on a single rank: progress, periodic checkpoints; False after a signal."""
        if self.interrupted is not None:
            return False
        now = time.perf_counter()
        if self.progress_due(now):
            self.print_progress(now, engine.nodes, engine.incumbent, 0, 0, *self.sample(engine, pool, now))
        if self.checkpoint_due(now):
            self.write_checkpoint([self.snapshot(engine, pool)], "running")
        return True

    # -- signals -------------------------------------------------------------------------

    @contextmanager
    def signals(self):
        """With a checkpoint file, SIGINT and SIGTERM end the search with a final checkpoint
        instead of at once (Slurm sends SIGTERM before the wall-time kill)."""
        if self.checkpoint_path is None or threading.current_thread() is not threading.main_thread():
            yield
            return

        def note(signum: int, frame: Any) -> None:
            self.interrupted = signum

        if PENDING:
            self.interrupted = PENDING.pop()
            PENDING.clear()

        old = {sig: signal.signal(sig, note) for sig in (signal.SIGINT, signal.SIGTERM)}
        try:
            yield
        finally:
            for sig, handler in old.items():
                signal.signal(sig, handler)
