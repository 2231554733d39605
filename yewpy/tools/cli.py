"""The ``yewpy`` command: ``yewpy APP [INPUT] [--skeleton S] [-d D] [-b B] ... [--json]``."""

from __future__ import annotations

import argparse
import importlib
import json
import math
import os
import signal
import sys
from typing import Any

from yewpy.apps import APPS
from yewpy.errors import InputError, UsageError
from yewpy.operations.session import PENDING, remember_signals
from yewpy.result import STOPPED, Result
from yewpy.runtime.metrics import table

# subcommands that are not searches: name -> module with configure(parser) and run(args) -> exit status
TOOLS: dict[str, str] = {"report": "yewpy.tools.report", "scaling": "yewpy.tools.scaling"}


def _common(parser: argparse.ArgumentParser) -> None:
    g = parser.add_argument_group("search")
    g.add_argument("--skeleton", default="seq",
                   choices=["seq", "depthbounded", "budget", "stacksteal", "ordered"],
                   help="coordination (default: seq)")
    g.add_argument("-d", "--spawn-depth", type=int, default=None, help="depthbounded, ordered: spawn depth")
    g.add_argument("-b", "--backtrack-budget", type=int, default=None, help="budget: backtracks per task")
    g.add_argument("--spawn-all", action="store_true", help="budget: offload every open level")
    g.add_argument("--pool", "--poolType", dest="pool", choices=["depthpool", "deque"], default=None)
    g.add_argument("--chunked", action="store_true", help="stacksteal: steal a whole level (= --steal level)")
    g.add_argument("--steal", choices=["half", "level", "one"], default=None,
                   help="over MPI, what a victim gives a thief: half its open work (default), its "
                   "shallowest level, or one task")
    g.add_argument("--window", type=int, default=None, metavar="W",
                   help="ordered: rounds a rank may run ahead of the slowest (default 4)")
    g.add_argument("--discrepancy", "--discrepancyOrder", dest="discrepancy", action="store_true",
                   help="ordered: priority by discrepancy count instead of left-to-right index")
    g.add_argument("--decision", type=int, default=None, metavar="K", help="decision search for target K")
    g.add_argument("--time-limit", type=float, default=None, metavar="S", help="stop after S seconds")
    g.add_argument("--node-limit", type=int, default=None, metavar="N", help="stop after N nodes")
    g.add_argument("--no-prune-level", action="store_true", help="do not skip siblings after a failed bound")
    g.add_argument("--json", action="store_true", help="print one JSON object")
    g.add_argument("--metrics", action="store_true", help="also print a table of per-rank metrics")
    o = parser.add_argument_group("operations")
    o.add_argument("--checkpoint", metavar="FILE", help="write the search state here: at the end, "
                   "every --checkpoint-every seconds, and on SIGTERM/SIGINT/--time-limit")
    o.add_argument("--checkpoint-every", type=float, metavar="S", help="seconds between checkpoints")
    o.add_argument("--resume", metavar="FILE", help="continue the search saved in this checkpoint")
    o.add_argument("--profile", metavar="FILE", help="record task times, per-depth counts and each "
                   "rank's timeline as JSON (draw it with `yewpy report FILE`)")
    o.add_argument("--progress-every", type=float, default=5.0, metavar="S",
                   help="seconds between progress lines on stderr (default 5)")
    o.add_argument("--quiet", action="store_true", help="no progress lines")


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="yewpy", description="Parallel exact combinatorial search.")
    sub = parser.add_subparsers(dest="app", required=True, metavar="APP")
    for name, module_name in APPS.items():
        module = importlib.import_module(f"yewpy.apps.{module_name}")
        app_parser = sub.add_parser(name, help=(module.__doc__ or "").splitlines()[0])
        module.configure(app_parser)
        _common(app_parser)
    for name, module_name in TOOLS.items():
        module = importlib.import_module(module_name)
        module.configure(sub.add_parser(name, help=(module.__doc__ or "").splitlines()[0]))
    return parser


INT32, INT64 = 2 ** 31 - 1, 2 ** 63 - 1       # what the engine's C counters hold


def _check_numbers(args: argparse.Namespace) -> None:
    """Every numeric search flag in the range the engine can hold, and every duration finite and
    positive: out of range is an error, never silently another value."""
    ordered = args.skeleton == "ordered"
    for flag, value, low, high in (("-d/--spawn-depth", args.spawn_depth, 1 if ordered else 0, INT32),
                                   ("-b/--backtrack-budget", args.backtrack_budget, 1, INT64),
                                   ("--node-limit", args.node_limit, 1, INT64),
                                   ("--window", args.window, 1, INT32)):
        if value is not None and not low <= value <= high:
            raise UsageError(f"{flag} must be between {low} and {high}, got {value}")
    for flag, seconds in (("--time-limit", args.time_limit), ("--checkpoint-every", args.checkpoint_every),
                          ("--progress-every", args.progress_every)):
        if seconds is not None and not (math.isfinite(seconds) and seconds > 0):
            raise UsageError(f"{flag} must be a positive number of seconds, got {seconds}")


def search_params(args: argparse.Namespace) -> dict:
    """The ``search()`` keyword arguments the flags ask for."""
    _check_numbers(args)
    params: dict[str, Any] = {"coordination": args.skeleton}
    if args.skeleton == "depthbounded":
        params["spawn_depth"] = args.spawn_depth or 0
    elif args.skeleton == "ordered":
        params["spawn_depth"] = 1 if args.spawn_depth is None else args.spawn_depth
        params["discrepancy"] = args.discrepancy
        if args.window is not None:
            params["window"] = args.window
    elif args.spawn_depth is not None:
        raise UsageError(f"-d/--spawn-depth applies to depthbounded and ordered, not {args.skeleton}")
    if args.discrepancy and args.skeleton != "ordered":
        raise UsageError(f"--discrepancy applies to ordered, not {args.skeleton}")
    if args.window is not None and args.skeleton != "ordered":
        raise UsageError(f"--window applies to ordered, not {args.skeleton}")
    if args.steal is not None:
        if args.skeleton == "ordered":
            raise UsageError("--steal does not apply to ordered: it does not steal")
        if args.chunked and args.steal != "level":
            raise UsageError(f"--chunked is --steal level; it contradicts steal={args.steal!r}")
        params["steal"] = args.steal
    if args.skeleton == "budget":
        params["backtracks"] = 100_000 if args.backtrack_budget is None else args.backtrack_budget
        params["spawn_all"] = args.spawn_all
    elif args.backtrack_budget is not None or args.spawn_all:
        raise UsageError(f"-b/--spawn-all apply to budget, not {args.skeleton}")
    if args.skeleton == "stacksteal":
        params["chunked"] = args.chunked
    elif args.chunked:
        raise UsageError(f"--chunked applies to stacksteal, not {args.skeleton}")
    if args.pool is not None:
        if args.skeleton not in ("depthbounded", "budget"):
            raise UsageError(f"--pool applies to depthbounded and budget, not {args.skeleton}")
        params["pool"] = args.pool
    if args.time_limit is not None:
        params["time_limit"] = args.time_limit
    if args.node_limit is not None:
        params["node_limit"] = args.node_limit
    if args.no_prune_level:
        params["prune_level"] = False
    for key in ("checkpoint", "checkpoint_every", "resume", "profile"):
        if getattr(args, key) is not None:
            params[key] = getattr(args, key)
    if not args.quiet:
        params["progress"] = args.progress_every
    return params


def report(app: str, args: argparse.Namespace, result: Result, lines: list[str]) -> str:
    if args.json:
        return json.dumps({"app": app, "skeleton": args.skeleton, "ranks": result.metrics.get("ranks", 1),
                           **result.to_dict()}, default=str)
    text = [*lines, f"nodes = {result.nodes}", f"status = {result.status}",
            f"wall seconds = {result.seconds:.3f} ({result.timed})",
            f"ranks = {result.metrics.get('ranks', 1)}"]
    if args.metrics:
        text.append(table(result.metrics["per_rank"]))
    return "\n".join(text)


def _agree_failure(exc: BaseException) -> None:
    """A rank that fails before its search started tells the others, which wait for it in
    ``search()``; they all raise the first failing rank's error (``ranks.agree``)."""
    from yewpy.runtime.ranks import agree, joined, world

    if getattr(exc, "agreed", False) or hasattr(exc, "speaker"):
        return
    comm = world()
    if comm is not None and comm.Get_size() > 1 and not joined(comm):
        agree(comm, exc)


def _reports(exc: BaseException) -> bool:
    """An error the ranks agreed on is printed by rank 0 alone (a split launch by task 0 alone);
    any other by the rank that hit it."""
    if hasattr(exc, "speaker"):
        return exc.speaker
    if not getattr(exc, "agreed", False):
        return True
    from yewpy.runtime.ranks import world

    comm = world()
    return comm is None or comm.Get_rank() == 0


def _terminate(signum: int, frame: Any) -> None:
    raise KeyboardInterrupt


def _end_on_signals() -> None:
    """SIGTERM ends a run like Ctrl-C does, even when started with SIGINT ignored (`cmd &`); one
    that came while the arguments were read ends it now."""
    signal.signal(signal.SIGTERM, _terminate)
    signal.signal(signal.SIGINT, _terminate)
    if PENDING:
        PENDING.clear()
        raise KeyboardInterrupt


def main(argv: list[str] | None = None) -> int:
    remember_signals()          # until the flags say whether a signal is owed a checkpoint
    try:
        return _run(argv)
    except KeyboardInterrupt:
        print("yewpy: interrupted", file=sys.stderr)
        return 130


def _run(argv: list[str] | None) -> int:
    args = build_parser().parse_args(argv)
    if args.app in TOOLS or args.checkpoint is None:
        _end_on_signals()
    if args.app in TOOLS:
        try:
            return importlib.import_module(TOOLS[args.app]).run(args)
        except (InputError, UsageError) as exc:
            print(f"yewpy: error: {exc}", file=sys.stderr)
            return 2
    module = importlib.import_module(f"yewpy.apps.{APPS[args.app]}")
    try:
        try:
            if args.decision is not None and args.app != "maxclique":
                raise UsageError(f"--decision applies to maxclique, not {args.app}")
            result, lines = module.solve(args, **search_params(args))
        except (InputError, UsageError, NotImplementedError) as exc:
            _agree_failure(exc)                 # the other ranks hear of it, then it is raised again
            raise
    except (InputError, UsageError, NotImplementedError) as exc:
        if _reports(exc):
            print(f"yewpy: error: {exc}", file=sys.stderr)
        return 2
    from yewpy.runtime.ranks import world

    comm = world()
    if comm is None or comm.Get_rank() == 0:
        try:
            print(report(args.app, args, result, lines), flush=True)
        except BrokenPipeError:                 # `yewpy ... | head`: the reader left early
            os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        if args.checkpoint is not None and result.status in STOPPED:
            print(f"yewpy: {result.status.replace('_', ' ')}; checkpoint written to {args.checkpoint}; "
                  f"continue with --resume {args.checkpoint}", file=sys.stderr, flush=True)
    return 130 if result.status == "interrupted" else 0
