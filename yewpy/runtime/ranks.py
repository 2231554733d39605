"""Which MPI job this process belongs to, without starting MPI in a plain single process, and
the ranks' agreement that every one of them could start."""

from __future__ import annotations

import os
import signal
import sys
import threading
import time
import warnings
from typing import Any

from yewpy.errors import InputError, UsageError

_joined: set[int] = set()                # communicators (by handle) this process has agreed on

# Variables that MPI launchers (MPICH/Hydra, Open MPI, PMIx, Slurm) set in every rank.
_LAUNCHER_VARS = ("PMI_SIZE", "PMI_RANK", "OMPI_COMM_WORLD_SIZE", "PMIX_RANK", "MPI_LOCALNRANKS")


def launched_by_mpi() -> bool:
    """True when a launcher (mpiexec, mpirun, srun) started this process."""
    if any(v in os.environ for v in _LAUNCHER_VARS):
        return True
    return int(os.environ.get("SLURM_NTASKS", "1")) > 1 and "SLURM_PROCID" in os.environ


# (variable announcing the task count, variable holding this task's number): srun, Open MPI, Hydra
_ANNOUNCERS = (("SLURM_STEP_NUM_TASKS", "SLURM_PROCID"), ("OMPI_COMM_WORLD_SIZE", "OMPI_COMM_WORLD_RANK"),
               ("PMI_SIZE", "PMI_RANK"))


class SplitLaunch(UsageError):
    """A launcher started N tasks but MPI sees a world of one: N copies of one search would run."""

    def __init__(self, message: str, speaker: bool) -> None:
        super().__init__(message)
        self.speaker = speaker          # the copy numbered 0 says it; the others exit quietly


def world() -> Any:
    """``MPI.COMM_WORLD`` when launched by MPI, else None (one rank, no MPI needed).

    Raises ``SplitLaunch`` when the launcher announced several tasks but MPI made each a world of
    its own (``srun`` without ``--mpi``, or one MPI's launcher with another MPI's mpi4py)."""
    if not launched_by_mpi():
        return None
    MPI = _start_mpi()

    comm = MPI.COMM_WORLD
    if comm.Get_size() == 1:
        for count, number in _ANNOUNCERS:
            tasks = os.environ.get(count, "1")
            if tasks.isascii() and tasks.isdigit() and int(tasks) > 1:
                raise SplitLaunch(
                    f"started as one of {tasks} tasks ({count}), but MPI sees a world of 1: every task "
                    f"would run the whole search alone. Under Slurm use `srun --mpi=pmi2` (or the site's "
                    f"PMIx: `srun --mpi=list`); otherwise launch with the mpiexec of the MPI that mpi4py "
                    f"was built against ({MPI.Get_library_version().splitlines()[0].strip()})",
                    speaker=os.environ.get(number, "0") == "0")
    return comm


def rank() -> int:
    """This process's rank: 0 outside MPI.  Every rank runs the user's script and gets the same
    result, so ``if yewpy.rank() == 0:`` prints it once."""
    comm = world()
    return 0 if comm is None else comm.Get_rank()


def _start_mpi() -> Any:
    """Import mpi4py's MPI, which runs MPI_Init.  That call waits in C for every rank to start it
    and no Python signal handler runs meanwhile, so SIGTERM and SIGINT keep their default action
    (end the process) until it returns: a job with a rank that never started MPI still ends on
    them (``scancel``, Ctrl-C), instead of waiting forever."""
    held = {}
    if "mpi4py.MPI" not in sys.modules and threading.current_thread() is threading.main_thread():
        held = {sig: signal.signal(sig, signal.SIG_DFL) for sig in (signal.SIGINT, signal.SIGTERM)}
    try:
        with warnings.catch_warnings():         # mpi4py's own warning about another MPI's launcher
            warnings.simplefilter("ignore", RuntimeWarning)     # on every task: ours in world(), once
            from mpi4py import MPI
    finally:
        for sig, handler in held.items():
            signal.signal(sig, handler)
    return MPI


def joined(comm: Any) -> bool:
    """True once this rank has taken part in ``agree`` on ``comm``."""
    return comm.py2f() in _joined


def agree(comm: Any, failure: BaseException | None) -> None:
    """Every rank says whether it could start (read its input, check its options); if any could
    not, every rank raises the first failing rank's error, marked ``agreed`` so that only rank 0
    reports it.  A rank that fails early must call this too, or the others would wait for it
    forever.  The wait polls a non-blocking allgather, so SIGTERM and Ctrl-C still reach Python."""
    import numpy as np

    _joined.add(comm.py2f())
    mine = np.array([failure is not None], dtype=np.int8)
    every = np.zeros(comm.Get_size(), dtype=np.int8)
    request = comm.Iallgather(mine, every)
    while not request.Test():
        time.sleep(1e-3)
    failed = np.flatnonzero(every)
    if not len(failed):
        return
    first = int(failed[0])
    described = comm.bcast(_describe(failure) if comm.Get_rank() == first else None, root=first)
    error: ValueError = InputError(*described[1:]) if described[0] == "input" else UsageError(described[1])
    error.agreed = True                 # type: ignore[attr-defined]
    raise error


def _describe(failure: BaseException | None) -> tuple:
    if isinstance(failure, InputError):
        return ("input", failure.path, failure.line, failure.message)
    if isinstance(failure, UsageError):
        return ("usage", str(failure))
    return ("usage", f"{type(failure).__name__}: {failure}")
