"""Which MPI job this process belongs to, without starting MPI in a plain single process."""

from __future__ import annotations

import os
from typing import Any

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
