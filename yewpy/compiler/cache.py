"""Compiled searches on disk: one folder per generated module, shared by processes and MPI ranks.

Where: ``$YEWPY_JIT_CACHE``, else ``$XDG_CACHE_HOME/yewpy/jit``, else ``~/.cache/yewpy/jit``.
Key: SHA-256 of the generated module's text (the class's rewritten methods, the node layout,
the attribute types) with the versions of yewpy, numba, Python and the machine, so an edited
class or another compiler never runs stale code.  The folder holds the module, numba's own
cache of its machine code (``__pycache__``), and ``ready`` once that is complete.  The first
process to need an entry compiles it under an exclusive ``flock``; the others wait on the lock
and then load numba's cache.  Every file is written under a temporary name and renamed.
"""

from __future__ import annotations

import fcntl
import hashlib
import importlib.util
import os
import platform
import re
import sys
import tempfile
import time
from pathlib import Path
from types import ModuleType

from yewpy.errors import UsageError

_loaded: dict = {}
_ANSI = re.compile(r"\x1b\[[0-9;]*m")


def root() -> Path:
    """The cache folder (created on first use)."""
    explicit = os.environ.get("YEWPY_JIT_CACHE")
    if explicit:
        return Path(explicit)
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "yewpy" / "jit"


def key_of(source: str) -> str:
    import numba

    from yewpy import __version__

    stamp = f"{__version__}|{numba.__version__}|{sys.version}|{platform.machine()}\n"
    return hashlib.sha256((stamp + source).encode()).hexdigest()[:32]


def _write_atomic(path: Path, text: str) -> None:
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=path.name + ".")
    with os.fdopen(fd, "w") as out:
        out.write(text)
    os.replace(tmp, path)


def load(source: str, explain) -> tuple:
    """The compiled module for ``source`` and the seconds this call spent compiling (0 when cached).

    ``explain(message, path)`` turns a compiler error into the user's ``UsageError``."""
    key = key_of(source)
    if key in _loaded:
        return _loaded[key], 0.0
    folder = root() / key
    try:
        folder.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise UsageError(f"the JIT cache folder {folder} cannot be created ({exc.strerror}); set "
                         "YEWPY_JIT_CACHE to a writable folder") from None
    path = folder / f"yewpy_jit_{key}.py"
    ready = folder / "ready"
    started = time.perf_counter()
    if ready.exists():
        module = _import(key, path, explain)
        _loaded[key] = module
        return module, 0.0
    with open(folder / "lock", "a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        try:
            fresh = not ready.exists()
            if fresh and (not path.exists() or path.read_text() != source):
                _write_atomic(path, source)
            module = _import(key, path, explain)
            if fresh:
                _write_atomic(ready, f"compiled in {time.perf_counter() - started:.3f} s\n")
        finally:
            fcntl.flock(lock, fcntl.LOCK_UN)
    _loaded[key] = module
    return module, (time.perf_counter() - started) if fresh else 0.0


def _import(key: str, path: Path, explain) -> ModuleType:
    from numba.core.errors import NumbaError

    name = f"yewpy_jit_{key}"
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec is not None and spec.loader is not None     # a .py file always has both
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    try:
        spec.loader.exec_module(module)
    except NumbaError as exc:
        del sys.modules[name]
        raise explain(_ANSI.sub("", str(exc)), str(path)) from None
    except BaseException:
        del sys.modules[name]
        raise
    return module
