"""Atomic file replacement: a reader (or a crash) sees the old file or the new one, never half."""

from __future__ import annotations

import os
import tempfile
from pathlib import Path


def write_atomic(path: str | Path, data: str | bytes) -> None:
    """Write ``data`` to a temporary file beside ``path``, fsync it, rename it over ``path``, and
    fsync the folder, so the rename itself survives a crash.  Permissions follow the umask."""
    path = Path(path)
    folder = path.parent if str(path.parent) else Path(".")
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=folder)
    umask = os.umask(0)
    os.umask(umask)
    try:
        os.fchmod(fd, 0o666 & ~umask)           # mkstemp's 0600 would hide results from a shared group
        with os.fdopen(fd, "wb") as out:
            out.write(data.encode() if isinstance(data, str) else data)
            out.flush()
            os.fsync(out.fileno())
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    try:
        dir_fd = os.open(folder, os.O_RDONLY)
        try:
            os.fsync(dir_fd)
        finally:
            os.close(dir_fd)
    except OSError:                              # some file systems cannot fsync a folder
        pass


def check_writable(path: str | Path, what: str) -> str | None:
    """Why ``write_atomic(path, ...)`` would fail now (no folder, no permission, a folder in the
    way), or None: checked before a long search, not after it."""
    path = Path(path)
    folder = path.parent if str(path.parent) else Path(".")
    if path.is_dir():
        return f"cannot write the {what} {path}: it is a folder"
    try:
        fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".check", dir=folder)
    except OSError as exc:
        return f"cannot write the {what} {path}: {exc.strerror or exc}"
    os.close(fd)
    os.unlink(tmp)
    return None
