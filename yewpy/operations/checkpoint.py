"""Checkpoint files: the answer so far and every rank's unexplored work, to resume a search.

A file is three parts: the line ``yewpy-checkpoint 1``, one line of JSON (the yewpy version,
the problem's fingerprint and description, the kind, nodes so far, and the length and SHA-256
of what follows), then a pickle of ``{"prior": part, "tasks": [(depth, node), ...]}``.
``prior`` has the shape of one worker's summary (``yewpy.search.summary``) and holds everything
already accounted: nodes, the enumeration value, the best witness.  Tasks were accounted when
their parent generated them, so resuming them adds only their descendants and the totals come
out as in an uninterrupted run.  Files are written to a temporary name, fsynced and renamed,
so a crash at any moment leaves the previous checkpoint whole.
"""

from __future__ import annotations

import hashlib
import json
import pickle
from pathlib import Path
from typing import Any

from yewpy.errors import InputError, UsageError
from yewpy.operations.atomic import write_atomic

MAGIC = b"yewpy-checkpoint 1\n"


def fingerprint(problem: Any, kind: str, max_depth: Any, target: Any) -> str:
    """What identifies a search space: the problem (``problem.fingerprint()`` if it defines one,
    else a hash of its pickle), its kind, and the options that change the tree."""
    import cloudpickle

    own = getattr(problem, "fingerprint", None)
    try:
        body = own() if callable(own) else cloudpickle.dumps(problem, protocol=4)
    except Exception as exc:
        raise UsageError(f"a checkpoint needs a picklable problem or a fingerprint() method: "
                         f"{type(problem).__name__} cannot be pickled ({exc})") from exc
    if isinstance(body, str):
        body = body.encode()
    digest = hashlib.sha256(body)
    digest.update(repr((type(problem).__qualname__, kind, max_depth, target)).encode())
    return digest.hexdigest()


def write(path: str | Path, header: dict, prior: dict, tasks: list) -> None:
    """Write one checkpoint atomically; ``header`` gets the payload's length and digest added."""
    import cloudpickle

    payload = cloudpickle.dumps({"prior": prior, "tasks": tasks}, protocol=4)
    header = {**header, "payload_bytes": len(payload), "payload_sha256": hashlib.sha256(payload).hexdigest()}
    write_atomic(path, MAGIC + json.dumps(header, default=str).encode() + b"\n" + payload)


def read(path: str | Path, fingerprint: str | None = None, version: str | None = None) -> tuple:
    """``(header, prior, tasks)`` from a checkpoint; InputError (with the line) for a file that is
    not one, is cut short, or was written by another problem or yewpy version."""
    try:
        data = Path(path).read_bytes()
    except OSError as exc:
        raise InputError(path, None, f"cannot read checkpoint: {exc.strerror or exc}") from None
    if not data.startswith(MAGIC):
        raise InputError(path, 1, "not a yewpy checkpoint (the first line must be 'yewpy-checkpoint 1')")
    end = data.find(b"\n", len(MAGIC))
    try:
        header = json.loads(data[len(MAGIC):end])
        size, digest = header["payload_bytes"], header["payload_sha256"]
    except (ValueError, KeyError, TypeError):
        raise InputError(path, 2, "checkpoint header is damaged or cut short") from None
    payload = data[end + 1:]
    if end < 0 or len(payload) != size or hashlib.sha256(payload).hexdigest() != digest:
        raise InputError(path, 3, f"checkpoint is truncated or damaged ({len(payload)} of {size} "
                                  "payload bytes, or a wrong checksum)")
    if version is not None and header.get("yewpy_version") != version:
        raise InputError(path, 2, f"checkpoint was written by yewpy {header.get('yewpy_version')}, "
                                  f"this is yewpy {version}")
    if fingerprint is not None and header.get("fingerprint") != fingerprint:
        raise InputError(path, 2, f"checkpoint belongs to another problem ({header.get('problem')!r}); "
                                  "it resumes only the search that wrote it")
    body = pickle.loads(payload)
    return header, body["prior"], body["tasks"]
