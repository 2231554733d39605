"""Scaling runs: time an app at several rank counts and skeletons, write scaling.csv and plots.

``yewpy scaling --ranks 1,2,4 --repeat 3 --skeletons depthbounded,stacksteal --out DIR -- APP ARGS...``
runs every (repeat, ranks, skeleton) with mpiexec, or srun inside a Slurm allocation, checks that
every run found the same answer, and writes DIR/scaling.csv, DIR/speedup.png, DIR/efficiency.png.
``yewpy scaling --merge DIR1 DIR2 ... --out DIR`` combines the CSVs of several sweeps (a job array).
"""

from __future__ import annotations

import argparse
import json
import os
import shlex
import signal
import subprocess
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from yewpy.errors import UsageError
from yewpy.operations.atomic import write_atomic
from yewpy.result import ANSWER_KEY, FINISHED
from yewpy.skeletons import registry
from yewpy.tools import coordination_flags
from yewpy.tools.launch import LAUNCHERS, allocation, launch_command
from yewpy.tools.speedup import BASELINES, Run, check_answers, medians, read_runs, text_table, to_csv
from yewpy.tools.subcommands import app_names, plain

# depthbounded's CLI default (-d 0) spawns nothing, so a scaling run would measure one busy rank
DEFAULT_PARAMETERS = {"depthbounded": "-d 2"}


def timed_skeletons() -> list[str]:
    """The coordinations a sweep can time: every registered one but seq (the baseline)."""
    return [name for name in registry.classes() if name != "seq"]


def own_flags() -> set[str]:
    """Flags the harness sets itself (--skeleton, --json and every coordination's), so APP ARGS must not."""
    return {"--skeleton", "--json", *coordination_flags.flag_strings()}

EXIT_FAILED, EXIT_MISMATCH = 1, 3


class RunFailed(Exception):
    """A run exited nonzero, timed out, printed no JSON or stopped before finishing its search."""


@dataclass(frozen=True)
class Config:
    """One skeleton with its flags, e.g. ``depthbounded`` with ``-d 2``."""

    skeleton: str
    parameters: str = ""

    def flags(self) -> list[str]:
        return ["--skeleton", self.skeleton, *shlex.split(self.parameters)]

    def __str__(self) -> str:
        return f"{self.skeleton} {self.parameters}".strip()


def configure(parser: argparse.ArgumentParser) -> None:
    parser.description = plain(__doc__)
    parser.formatter_class = argparse.RawDescriptionHelpFormatter
    parser.add_argument("--ranks", default="1,2", help="comma-separated rank counts (default: 1,2)")
    parser.add_argument("--repeat", type=int, default=3, help="runs per configuration (default: 3)")
    parser.add_argument("--skeletons", default="depthbounded,stacksteal,budget",
                        help=f"comma-separated, from {', '.join(timed_skeletons())} "
                             "(default: depthbounded,stacksteal,budget)")
    parser.add_argument("--skeleton-args", action="append", default=[], metavar="SKELETON:FLAGS",
                        help="flags for one skeleton, e.g. 'depthbounded:-d 3'; repeat it to compare "
                             "several settings of the same skeleton (default: depthbounded:-d 2)")
    parser.add_argument("--baseline", choices=BASELINES, default="smallest",
                        help="speedup over the same skeleton at the smallest rank count (default), "
                             "or over plain sequential runs (seq, also timed --repeat times)")
    parser.add_argument("--timeout", type=float, default=1800.0, metavar="S",
                        help="seconds one run may take before it is killed and reported (default: 1800)")
    parser.add_argument("--launcher", choices=LAUNCHERS, default="auto",
                        help="auto: srun inside a Slurm allocation, else mpiexec")
    parser.add_argument("--launcher-args", default="", metavar="ARGS",
                        help="extra launcher flags, e.g. --launcher-args='--mpi=pmix'")
    parser.add_argument("--out", required=True, type=Path, help="folder for scaling.csv and the plots")
    parser.add_argument("--merge", nargs="+", type=Path, metavar="DIR",
                        help="instead of running: combine the scaling.csv files of these folders")
    parser.add_argument("command", nargs="*", metavar="APP ARGS",
                        help="after --: the yewpy app and its arguments, e.g. -- nqueens 12")


def parse_ranks(text: str) -> list[int]:
    try:
        ranks = sorted({int(part) for part in text.split(",") if part.strip()})
    except ValueError:
        raise UsageError(f"--ranks takes comma-separated whole numbers, not {text!r}") from None
    if not ranks or ranks[0] < 1:
        raise UsageError(f"--ranks needs rank counts of at least 1, not {text!r}")
    return ranks


def parse_configs(skeletons: str, skeleton_args: Sequence[str]) -> list[Config]:
    """The configurations to time: each skeleton with each of its ``--skeleton-args`` (or its default)."""
    names = [s.strip() for s in skeletons.split(",") if s.strip()]
    known = timed_skeletons()
    for name in names:
        if name not in known:
            raise UsageError(f"--skeletons: unknown skeleton {name!r} (choose from {', '.join(known)}; "
                             "seq is the baseline: --baseline seq)")
    variants: dict[str, list[str]] = {}
    for item in skeleton_args:
        name, sep, flags = item.partition(":")
        if not sep or name.strip() not in names:
            raise UsageError(f"--skeleton-args {item!r}: write SKELETON:FLAGS for a skeleton that "
                             f"--skeletons lists ({', '.join(names)})")
        variants.setdefault(name.strip(), []).append(" ".join(shlex.split(flags)))
    return [Config(name, flags) for name in dict.fromkeys(names)
            for flags in variants.get(name, [DEFAULT_PARAMETERS.get(name, "")])]


def yewpy_command() -> list[str]:
    """The installed ``yewpy`` script beside this Python, else ``python -m yewpy``."""
    script = Path(sys.executable).parent / "yewpy"
    return [str(script)] if script.exists() else [sys.executable, "-m", "yewpy"]


def _answer(data: dict) -> str:
    return json.dumps(data[ANSWER_KEY[data["kind"]]], sort_keys=True)


def _kill(process: subprocess.Popen) -> None:
    """End a run's whole process group (the launcher and its ranks): TERM, then KILL after 5 s."""
    for sig, wait in ((signal.SIGTERM, 5.0), (signal.SIGKILL, None)):
        try:
            os.killpg(process.pid, sig)
        except ProcessLookupError:
            return
        try:
            process.wait(timeout=wait)
            return
        except subprocess.TimeoutExpired:
            continue


def run_once(argv: list[str], timeout: float) -> tuple[dict, float]:
    """Run one search command; return its JSON object and the wall seconds it took."""
    env = dict(os.environ, PYTHONUNBUFFERED="1")
    start = time.perf_counter()
    process = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env,
                               start_new_session=True)
    try:
        stdout, stderr = process.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        _kill(process)
        process.communicate()
        raise RunFailed(f"timed out after {timeout:g} s (--timeout)") from None
    except BaseException:
        _kill(process)
        raise
    wall = time.perf_counter() - start
    last = next((line for line in reversed(stderr.splitlines()) if line.strip()), "(no stderr)")
    if process.returncode != 0:
        raise RunFailed(f"exit status {process.returncode}: {last}")
    for line in reversed(stdout.splitlines()):
        if line.startswith("{"):
            try:
                data = json.loads(line)
            except json.JSONDecodeError:
                continue
            if data.get("status") not in FINISHED:
                raise RunFailed(f"the search stopped early (status {data.get('status')}): scaling runs "
                                "must finish, drop --time-limit / --node-limit")
            return data, wall
    raise RunFailed(f"printed no JSON result; last stderr line: {last}")


def measure(config: Config, ranks: int, repeat: int, command: Sequence[str], args: argparse.Namespace
            ) -> Run:
    """Time ``config`` on ``ranks`` ranks once (seq runs as one plain process, without a launcher)."""
    search = [*yewpy_command(), *command, *config.flags(), "--json", "--quiet"]
    if config.skeleton == "seq":
        argv, hosts = search, 1
    else:
        argv, hosts = launch_command(ranks, search, args.launcher, shlex.split(args.launcher_args))
    data, wall = run_once(argv, args.timeout)
    per_rank = data.get("metrics", {}).get("per_rank", [])
    return Run(config.skeleton, config.parameters, ranks, hosts, repeat, float(data["seconds"]), wall,
               int(data["nodes"]), sum(r.get("steals_succeeded", 0) for r in per_rank),
               sum(r.get("idle_seconds", 0.0) for r in per_rank), data["status"], _answer(data))


def plan(configs: Sequence[Config], ranks: Sequence[int], repeat: int, baseline: str
         ) -> list[tuple[int, Config, int]]:
    """(repeat, config, ranks) in run order: all of repeat 1, then all of repeat 2, ... so that slow
    phases of a shared machine spread over every configuration instead of hitting one."""
    order = []
    for r in range(1, repeat + 1):
        if baseline == "seq":
            order.append((r, Config("seq"), 1))
        order += [(r, config, n) for n in ranks for config in configs]
    return order


def write_results(out: Path, runs: list[Run], baseline: str, title: str) -> int:
    """Write scaling.csv (and the plots when matplotlib is there), print the table; return exit status."""
    from yewpy.tools import speedup_plot

    out.mkdir(parents=True, exist_ok=True)
    rows = medians(runs, baseline)
    if runs and baseline == "seq" and not any(run.skeleton == "seq" for run in runs):
        print("yewpy scaling: --baseline seq, but no seq runs: no speedups", file=sys.stderr)
    write_atomic(out / "scaling.csv", to_csv(runs, rows))
    print(text_table(rows))
    print(f"wrote {out / 'scaling.csv'}")
    if not runs:
        return 0
    if speedup_plot.available():
        for path in speedup_plot.write_plots(rows, out, baseline, title):
            print(f"wrote {path}")
    else:
        print("plots need matplotlib: pip install yewpy[plot]", file=sys.stderr)
    mismatch = check_answers(runs)
    if mismatch:
        print(mismatch, file=sys.stderr)
        return EXIT_MISMATCH
    print(f"answers agree: {runs[0].answer} in all {len(runs)} runs")
    return 0


def _merge(args: argparse.Namespace) -> int:
    if args.command:
        raise UsageError("--merge combines finished sweeps: give no APP ARGS")
    runs = [run for folder in args.merge for run in read_runs(folder / "scaling.csv")]
    return write_results(args.out, runs, args.baseline, f"merged from {len(args.merge)} folder(s)")


def run(args: argparse.Namespace) -> int:
    if args.merge:
        return _merge(args)
    command = list(args.command)
    if not command:
        raise UsageError("give the search after --, e.g. yewpy scaling --ranks 1,2 --out DIR -- nqueens 12")
    if command[0] not in app_names():
        raise UsageError(f"unknown app {command[0]!r} after --: choose one of {', '.join(app_names())}")
    own = own_flags()
    taken = [a for a in command if a.split("=")[0] in own]
    if taken:
        raise UsageError(f"{' '.join(taken)}: the harness sets skeleton flags and --json itself; "
                         "give skeleton flags with --skeleton-args SKELETON:FLAGS")
    if args.repeat < 1:
        raise UsageError("--repeat must be at least 1")
    ranks = parse_ranks(args.ranks)
    configs = parse_configs(args.skeletons, args.skeleton_args)
    for n in ranks:                          # refuse rank counts beyond a Slurm allocation up front
        launch_command(n, ["true"], args.launcher, shlex.split(args.launcher_args))
    alloc = allocation()
    where = f"Slurm job {alloc.job_id} ({alloc.nodes} node(s))" if alloc else "this machine"
    title = " ".join(command)
    order = plan(configs, ranks, args.repeat, args.baseline)
    print(f"yewpy scaling: {len(order)} runs of `{title}` on {where}", file=sys.stderr, flush=True)
    runs: list[Run] = []
    status = 0
    try:
        for i, (repeat, config, n) in enumerate(order, start=1):
            label = f"[{i}/{len(order)}] {config} ranks={n} repeat={repeat}"
            try:
                result = measure(config, n, repeat, command, args)
            except RunFailed as error:
                print(f"yewpy scaling: {label} failed: {error}", file=sys.stderr, flush=True)
                status = EXIT_FAILED
                break
            runs.append(result)
            print(f"{label}: {result.seconds:.3f} s, answer {result.answer}", file=sys.stderr, flush=True)
    except KeyboardInterrupt:                # Ctrl-C, or Slurm's SIGTERM before the wall time
        print("yewpy scaling: interrupted; writing the runs finished so far", file=sys.stderr)
        status = 130
    written = write_results(args.out, runs, args.baseline, title)
    return status or written
