"""Which MPI job this process belongs to, without starting MPI in a plain single process, and
the ranks' agreement that every one of them could start."""

from __future__ import annotations

import os
import time
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


def world() -> Any:
    """``MPI.COMM_WORLD`` when launched by MPI, else None (one rank, no MPI needed)."""
    if not launched_by_mpi():
        return None
    from mpi4py import MPI

    return MPI.COMM_WORLD


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
