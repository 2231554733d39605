"""How to start a command on N MPI ranks: mpiexec on a workstation, srun inside a Slurm allocation."""

from __future__ import annotations

import math
import os
import re
import shutil
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from yewpy.errors import UsageError

LAUNCHERS = ("auto", "mpiexec", "srun")


@dataclass(frozen=True)
class Allocation:
    """The Slurm job this process runs in: its id, how many tasks (ranks) and nodes it holds."""

    job_id: str
    tasks: int | None
    nodes: int

    @property
    def tasks_per_node(self) -> int | None:
        return None if self.tasks is None else math.ceil(self.tasks / self.nodes)


def _tasks_per_node_total(text: str) -> int:
    """Total tasks of Slurm's compressed per-node list, e.g. ``'16(x2),8'`` -> 40."""
    total = 0
    for item in text.split(","):
        match = re.fullmatch(r"\s*(\d+)(?:\(x(\d+)\))?\s*", item)
        if match is None:
            raise UsageError(f"cannot read SLURM_TASKS_PER_NODE={text!r}")
        total += int(match.group(1)) * int(match.group(2) or 1)
    return total


def allocation(env: Mapping[str, str] | None = None) -> Allocation | None:
    """The Slurm allocation described by ``env`` (default: this process's environment), or None."""
    env = os.environ if env is None else env
    job = env.get("SLURM_JOB_ID") or env.get("SLURM_JOBID")
    if not job:
        return None
    nodes = int(env.get("SLURM_NNODES") or env.get("SLURM_JOB_NUM_NODES") or 1)
    if env.get("SLURM_NTASKS") or env.get("SLURM_NPROCS"):
        tasks: int | None = int(env.get("SLURM_NTASKS") or env["SLURM_NPROCS"])
    elif env.get("SLURM_TASKS_PER_NODE"):
        tasks = _tasks_per_node_total(env["SLURM_TASKS_PER_NODE"])
    else:
        tasks = None
    return Allocation(job, tasks, nodes)


def find_mpiexec() -> str:
    """The mpiexec beside this Python (the ``mpich`` wheel's), else the one on PATH."""
    here = Path(sys.executable).parent / "mpiexec"
    found = str(here) if here.exists() else shutil.which("mpiexec")
    if not found:
        raise UsageError("no mpiexec found: `pip install yewpy[mpich]` or load your cluster's MPI module")
    return found


def launch_command(ranks: int, command: Sequence[str], launcher: str = "auto",
                   extra: Sequence[str] = (), env: Mapping[str, str] | None = None
                   ) -> tuple[list[str], int]:
    """The argv that runs ``command`` on ``ranks`` MPI ranks, and how many nodes it spans.

    ``auto`` is srun inside a Slurm allocation (SLURM_JOB_ID set), else mpiexec. Inside an
    allocation a rank count beyond its tasks is refused, and srun packs ranks onto as few nodes
    as the allocation's tasks per node allow, so a scaling series adds nodes only when it must.
    """
    if launcher not in LAUNCHERS:
        raise UsageError(f"unknown launcher {launcher!r}: choose one of {', '.join(LAUNCHERS)}")
    if ranks < 1:
        raise UsageError(f"rank counts must be at least 1, not {ranks}")
    alloc = allocation(env)
    if launcher == "auto":
        launcher = "srun" if alloc is not None else "mpiexec"
    nodes = 1
    if alloc is not None and alloc.tasks is not None:
        if ranks > alloc.tasks:
            raise UsageError(f"{ranks} ranks exceed Slurm job {alloc.job_id}'s {alloc.tasks} tasks "
                             f"(SLURM_NTASKS={alloc.tasks}, SLURM_NNODES={alloc.nodes}): drop that rank "
                             f"count or submit with more --ntasks / --nodes")
        nodes = math.ceil(ranks / (alloc.tasks_per_node or 1))
    if launcher == "srun":
        if alloc is None:
            raise UsageError("--launcher srun needs a Slurm allocation (SLURM_JOB_ID is not set)")
        return ["srun", f"--ntasks={ranks}", f"--nodes={nodes}", "--kill-on-bad-exit=1", *extra,
                *command], nodes
    return [find_mpiexec(), "-n", str(ranks), *extra, *command], nodes
