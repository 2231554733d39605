"""When the job running this search will be ended: a Slurm job's end time, or ``YEWPY_END_TIME``."""

from __future__ import annotations

import os
import shutil
import subprocess
import time
from collections.abc import Mapping


def job_end(env: Mapping[str, str] = os.environ) -> float | None:
    """The end of the job as seconds since the epoch, or None where no end is known.

    ``YEWPY_END_TIME`` (epoch seconds) comes first, for any launcher; then Slurm's
    ``SLURM_JOB_END_TIME`` (set since Slurm 23.02); then ``squeue``'s end time for
    ``SLURM_JOB_ID``. A job without a time limit has no end."""
    for key in ("YEWPY_END_TIME", "SLURM_JOB_END_TIME"):
        text = env.get(key)
        if text:
            try:
                return float(text)
            except ValueError:
                return None
    job = env.get("SLURM_JOB_ID")
    if not job or shutil.which("squeue") is None:
        return None
    try:
        out = subprocess.run(["squeue", "-h", "-j", job, "-o", "%e"], capture_output=True, text=True,
                             timeout=5).stdout.strip()
        return time.mktime(time.strptime(out, "%Y-%m-%dT%H:%M:%S"))
    except (OSError, subprocess.SubprocessError, ValueError):   # no end (UNLIMITED), or no squeue
        return None


def verdict(seconds_left: tuple[float, float, float] | None, wall_left: float) -> str:
    """Whether a search with ``seconds_left`` (estimate, low, high) ends within ``wall_left``."""
    if seconds_left is None:
        return "unknown"
    estimate, _, high = seconds_left
    if high <= wall_left:
        return "expected to finish"
    if estimate <= wall_left:
        return "may not finish"
    return "not expected to finish"


def readable(seconds: float) -> str:
    """Seconds as a person reads them: 4.2 s, 42 s, 3.5 min, 2.1 h, 3.0 d."""
    for unit, size in (("d", 86400.0), ("h", 3600.0), ("min", 60.0)):
        if seconds >= 2 * size:
            return f"{seconds / size:.1f} {unit}"
    return f"{seconds:.0f} s" if seconds >= 10 else f"{seconds:.2g} s"
