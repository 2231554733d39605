"""The ``yewpy`` command: ``yewpy APP [INPUT] [--skeleton S] [-d D] [-b B] ... [--json]``."""

from __future__ import annotations

import argparse
import importlib
import json
import math
import os
import signal
import sys
import warnings
from typing import Any

from yewpy import __version__
from yewpy.errors import InputError, UsageError
from yewpy.operations.session import PENDING, remember_signals
from yewpy.operations.treesize import COMBINED, SAMPLED, TRUSTED_PROBES, TRUSTED_SAMPLES
from yewpy.operations.walltime import readable
from yewpy.result import BOUNDED, STOPPED, Result
from yewpy.runtime.metrics import table
from yewpy.tools.coordination_flags import add_flags, coordination_params
from yewpy.tools.subcommands import TOOLS, app_names, load_app, plain


def _common(parser: argparse.ArgumentParser, better_than: bool = False) -> None:
    """The flags every app takes; ``better_than``: and ``--better-than`` (apps that set
    ``BETTER_THAN``: optimisations that report a result with no solution)."""
    g = parser.add_argument_group("search")
    add_flags(g)
    if better_than:
        g.add_argument("--better-than", type=_objective_value, metavar="V",
                       help="look only for solutions better than V (the value of one you have): prune "
                            "every subtree that cannot beat it. The run proves V optimal or finds better; "
                            "with --estimate, the estimate is of that tree")
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
    o.add_argument("--estimate", type=float, metavar="S", help="do not search the whole tree: sample it "
                   "for about S seconds and print its estimated size, the time on one rank and, with "
                   "--walltime, the ranks that finish within it")
    o.add_argument("--walltime", type=_duration, metavar="T", help="with --estimate: the wall time a "
                   "run may take, in seconds or [[D-]HH:]MM:SS as Slurm's --time")


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="yewpy", description="Parallel exact combinatorial search.")
    parser.add_argument("--version", action="version", version=f"yewpy {__version__}")
    sub = parser.add_subparsers(dest="app", required=True, metavar="APP")
    for name in app_names():
        module = load_app(name)
        app_parser = sub.add_parser(name, help=plain(module.__doc__).splitlines()[0])
        module.configure(app_parser)
        _common(app_parser, better_than=bool(getattr(module, "BETTER_THAN", False)))
    for name, module_name in TOOLS.items():
        module = importlib.import_module(module_name)
        module.configure(sub.add_parser(name, help=plain(module.__doc__).splitlines()[0]))
    return parser


INT64 = 2 ** 63 - 1       # what the engine's node counter holds


def _check_numbers(args: argparse.Namespace) -> None:
    """The node limit in the range the engine can hold, and every duration finite and positive:
    out of range is an error, never silently another value (coordination flags: their own ranges)."""
    if args.node_limit is not None and not 1 <= args.node_limit <= INT64:
        raise UsageError(f"--node-limit must be between 1 and {INT64}, got {args.node_limit}")
    for flag, seconds in (("--time-limit", args.time_limit), ("--checkpoint-every", args.checkpoint_every),
                          ("--progress-every", args.progress_every), ("--estimate", args.estimate),
                          ("--walltime", args.walltime)):
        if seconds is not None and not (math.isfinite(seconds) and seconds > 0):
            raise UsageError(f"{flag} must be a positive number of seconds, got {seconds}")
    if args.walltime is not None and args.walltime < 1:    # 1e-300 asked for a 300-digit rank count
        raise UsageError(f"--walltime must be at least 1 second, got {args.walltime}")


def search_params(args: argparse.Namespace) -> dict:
    """The ``search()`` keyword arguments the flags ask for."""
    _check_numbers(args)
    params: dict[str, Any] = coordination_params(args)
    if args.time_limit is not None:
        params["time_limit"] = args.time_limit
    if args.node_limit is not None:
        params["node_limit"] = args.node_limit
    if args.no_prune_level:
        params["prune_level"] = False
    if getattr(args, "better_than", None) is not None:
        params["initial_bound"] = args.better_than
    for key in ("checkpoint", "checkpoint_every", "resume", "profile"):
        if getattr(args, key) is not None:
            params[key] = getattr(args, key)
    if args.walltime is not None and args.estimate is None:
        raise UsageError("--walltime goes with --estimate (a run's progress reads the job's own end)")
    if args.estimate is not None:
        if args.checkpoint or args.resume:
            raise UsageError("--estimate samples the tree; it does not take --checkpoint or --resume")
        params["estimate"] = args.estimate
        if args.walltime is not None:
            params["walltime"] = args.walltime
        return params
    if not args.quiet:
        params["progress"] = args.progress_every
        params["progress_json"] = args.json
    return params


def _duration(text: str) -> float:
    """Seconds, or Slurm's [[D-]HH:]MM:SS."""
    try:
        if ":" not in text:
            return float(text)
        days, _, clock = text.rpartition("-")
        parts = [float(p) for p in clock.split(":")]
        if len(parts) > 3:                      # HH:MM:SS at most; 1:2:3:4 was taken as 2.6 days
            raise ValueError(text)
        seconds = sum(p * 60 ** i for i, p in enumerate(reversed(parts)))
        return seconds + 86400 * float(days or 0)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a duration: {text!r} (seconds or [[D-]HH:]MM:SS)") from None


def _objective_value(text: str) -> int | float:
    """An objective value: an integer, or a finite decimal number."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number: {text!r}") from None
    if not math.isfinite(value):
        raise argparse.ArgumentTypeError(f"not a finite number: {text!r}")
    try:
        return int(text)
    except ValueError:
        return value


def estimate_lines(report: dict) -> list[str]:
    """What ``--estimate`` prints."""
    under = report["under_incumbent"]
    what = "nodes" if under is None else f"nodes under incumbent {under:g}"
    spread = "range of two standard errors" if report["high"] is not None else "heavy-tailed: no upper end"
    if report["exact"]:
        how = "exact: the whole tree was searched"
    elif report["estimator"] == "knuth-1975":
        how = f"Knuth's path sampling, {report['probes']:,} probes; {spread}"
    elif report["estimator"] == SAMPLED:
        how = (f"the tree's top counted, then {report['probes']:,} of its subtrees, chosen at random, "
               f"searched whole; {spread}")
    elif report["estimator"] == COMBINED:
        how = ("the short search's open work, estimated from what it searched, raised by Knuth's path "
               f"sampling ({report['probes']:,} probes){_untrusted_sample(report)}; {spread}")
    else:
        knuth = report.get("estimate_knuth") or {"probes": 0, "consistent": True}
        why = ("missed the tree's heavy tail" if not knuth["consistent"] else
               "were too few" if knuth["probes"] < TRUSTED_PROBES else "read lower (they may only raise it)")
        how = (f"the short search's open work, estimated from what it searched: Knuth's {knuth['probes']:,} "
               f"probes {why}{_untrusted_sample(report)}; {spread}")
    upper = "no upper end" if report["high"] is None else f"{report['high']:.4g}"
    lines = [f"estimated {what} = {report['nodes']:.4g} [{report['low']:.4g}, {upper}] ({how})"]
    if not report["consistent"]:
        lines.append("warning: the short search alone visited more nodes than the probes estimate: the tree "
                     "is heavy-tailed (a near-critical binomial tree, say), and the figures are lower bounds")
    elif report["high"] is None:
        lines.append("warning: a few subtrees hold most of the nodes counted: the tree is heavy-tailed, "
                     "what is not searched yet may be far bigger than the estimate, and the range has no "
                     "upper end")
    if under is not None and not report["exact"]:
        if under == report.get("initial_bound"):
            lines.append(f"note: counted under the {under:g} you gave (--better-than): if nothing is better, "
                         "this is the whole tree the run searches")
        else:
            lines.append(f"note: counted as if no solution better than {under:g} turns up; each better one "
                         "prunes more, so the search itself may visit far fewer nodes")
    one = report["seconds_one_rank"]
    if one is not None:
        low, high = report["seconds_one_rank_range"]
        upper = "no upper end" if high is None else readable(high)
        lines.append(f"time on 1 rank = {readable(one)} [{readable(low)}, {upper}] at "
                     f"{report['rate_per_rank']:,.0f} nodes/s")
    if "ranks_for_walltime" in report:
        low, high = report["ranks_for_walltime_range"]
        high = "no upper end" if high is None else high
        lines.append(f"ranks for a wall time of {readable(report['walltime'])} = "
                     f"{report['ranks_for_walltime']} [{low}, {high}] (at {report['efficiency_assumed']:.0%} "
                     "efficiency)")
    return lines


def _untrusted_sample(report: dict) -> str:
    """Why the sampled subtrees do not stand, for ``estimate_lines``."""
    sampled = report.get("estimate_sampled")
    if not sampled:
        return ", and fewer than two subtrees below the tree's top could be searched whole"
    if sampled["probes"] < TRUSTED_SAMPLES:
        return f", and {sampled['probes']:,} sampled subtrees were too few"
    return f", and {sampled['probes']:,} sampled subtrees missed a heavy tail"


def report(app: str, args: argparse.Namespace, result: Result, lines: list[str]) -> str:
    if args.estimate is not None and not args.json:
        return "\n".join(estimate_lines(result.metrics["estimate"]))
    if args.json:
        return json.dumps({"app": app, "skeleton": args.skeleton, "ranks": result.metrics.get("ranks", 1),
                           **result.to_dict()}, default=str)
    text = [*lines, f"nodes = {result.nodes}", f"status = {result.status}", *bound_lines(result),
            f"wall seconds = {result.seconds:.3f} ({result.timed})",
            f"ranks = {result.metrics.get('ranks', 1)}"]
    if args.metrics:
        text.append(table(result.metrics["per_rank"]))
    return "\n".join(text)


def bound_lines(result: Result) -> list[str]:
    """A stopped optimisation's proven bound and gap (``Result.bound``), or why it has none."""
    if result.status not in STOPPED or result.kind not in BOUNDED:
        return []
    if result.bound is None:
        return ["bound = unknown (this search or coordination cannot bound the work left open)"]
    gap = result.gap
    gap_text = "" if gap is None else f"; gap {gap:.2%}" if math.isfinite(gap) else "; gap unbounded"
    return [f"bound = {result.bound:g} (proven: no solution is better{gap_text})"]


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


def _warning_line(message: Warning | str, category: type, filename: str, lineno: int,
                  line: str | None = None) -> str:
    """A Python warning as the CLI prints it: one line, without the source file and line."""
    return f"yewpy: warning: {message}\n"


def main(argv: list[str] | None = None) -> int:
    remember_signals()          # until the flags say whether a signal is owed a checkpoint
    warnings.formatwarning = _warning_line
    try:
        return _run(argv)
    except KeyboardInterrupt:
        print("yewpy: interrupted", file=sys.stderr)
        return 130


def _run(argv: list[str] | None) -> int:
    try:
        parser = build_parser()
    except UsageError as exc:                   # a plugin that does not load, or clashes
        print(f"yewpy: error: {exc}", file=sys.stderr)
        return 2
    args = parser.parse_args(argv)
    if args.app in TOOLS or args.checkpoint is None:
        _end_on_signals()
    if args.app in TOOLS:
        try:
            return importlib.import_module(TOOLS[args.app]).run(args)
        except (InputError, UsageError) as exc:
            print(f"yewpy: error: {exc}", file=sys.stderr)
            return 2
    module = load_app(args.app)
    try:
        try:
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
