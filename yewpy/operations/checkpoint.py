"""Checkpoint files: the answer so far and every rank's unexplored work, to resume a search.

A file is four parts: the line ``yewpy-checkpoint 2``, one line of JSON (the yewpy version,
the problem's fingerprint and description, the kind, nodes so far, and the length and SHA-256
of the payload), the line ``hmac-sha256 HEX`` signing those two lines and the payload with the
user's checkpoint key, then the payload: a pickle of ``{"prior": part, "tasks": [(depth, node),
...]}``.  A pickle can run code, so it is loaded only once the signature verifies: a file that
this user's key did not sign is refused, never executed (the trust model: docs/operations.md).
``prior`` has the shape of one worker's summary (``yewpy.runtime.parts.summary``) and holds everything
already accounted: nodes, the enumeration value, the best witness.  Tasks were accounted when
their parent generated them, so resuming them adds only their descendants and the totals come
out as in an uninterrupted run.  Files are written to a temporary name, fsynced and renamed,
so a crash at any moment leaves the previous checkpoint whole.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import os
import pickle
import secrets
from pathlib import Path
from typing import Any

from yewpy.errors import InputError, UsageError
from yewpy.operations.atomic import write_atomic

MAGIC = b"yewpy-checkpoint 2\n"
KEY_ENV = "YEWPY_CHECKPOINT_KEY"        # a key file other than ~/.config/yewpy/checkpoint-key


def key_path() -> Path:
    """Where this user's checkpoint key lives: $YEWPY_CHECKPOINT_KEY, else under $XDG_CONFIG_HOME
    (default ~/.config) as yewpy/checkpoint-key."""
    if os.environ.get(KEY_ENV):
        return Path(os.environ[KEY_ENV])
    config = os.environ.get("XDG_CONFIG_HOME") or Path.home() / ".config"
    return Path(config) / "yewpy" / "checkpoint-key"


def signing_key(create: bool = False) -> bytes:
    """This user's 32-byte checkpoint key; with ``create`` it is made (mode 0600) when missing.
    UsageError when it cannot be had: a checkpoint is never written or read unsigned."""
    path = key_path()
    if create and not path.exists():
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            spare = path.with_name(f".{path.name}.{os.getpid()}")
            fd = os.open(spare, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
            with os.fdopen(fd, "wb") as f:
                f.write(secrets.token_hex(32).encode() + b"\n")
            try:
                os.link(spare, path)            # atomic: of two processes making it, one key wins
            except FileExistsError:
                pass
            finally:
                spare.unlink()
        except OSError as exc:
            raise UsageError(f"cannot create the checkpoint key {path}: {exc.strerror or exc} "
                             f"(set {KEY_ENV} to a file you can write)") from None
    try:
        key = bytes.fromhex(path.read_text().strip())
    except FileNotFoundError:
        raise UsageError(f"no checkpoint key at {path}: checkpoints are signed with the key of the "
                         f"user who wrote them (set {KEY_ENV} to that key file)") from None
    except (OSError, ValueError) as exc:
        raise UsageError(f"checkpoint key {path} is unreadable or damaged: {exc}") from None
    if len(key) < 16:
        raise UsageError(f"checkpoint key {path} is too short (at least 16 bytes, as hex)")
    return key


def _signature(key: bytes, header_line: bytes, payload: bytes) -> str:
    return hmac.new(key, MAGIC + header_line + b"\n" + payload, hashlib.sha256).hexdigest()


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


def write(path: str | Path, header: dict, prior: dict, tasks: list, key: bytes | None = None) -> None:
    """Write one checkpoint atomically, signed with ``key`` (default: this user's, made if
    missing); ``header`` gets the payload's length and digest added."""
    import cloudpickle

    payload = cloudpickle.dumps({"prior": prior, "tasks": tasks}, protocol=4)
    header = {**header, "payload_bytes": len(payload), "payload_sha256": hashlib.sha256(payload).hexdigest()}
    line = json.dumps(header, default=str).encode()
    mac = _signature(signing_key(create=True) if key is None else key, line, payload)
    write_atomic(path, MAGIC + line + b"\n" + f"hmac-sha256 {mac}\n".encode() + payload)


def read(path: str | Path, fingerprint: str | None = None, version: str | None = None) -> tuple:
    """``(header, prior, tasks)`` from a checkpoint; InputError (with the line) for a file that is
    not one, is cut short, or was written by another problem or yewpy version."""
    try:
        data = Path(path).read_bytes()
    except OSError as exc:
        raise InputError(path, None, f"cannot read checkpoint: {exc.strerror or exc}") from None
    if not data.startswith(MAGIC):
        if data.startswith(b"yewpy-checkpoint "):
            first = data.split(b"\n", 1)[0].decode(errors="replace")[:40]
            raise InputError(path, 1, f"checkpoint of another format ({first!r}; this yewpy writes "
                                      f"{MAGIC.decode().strip()!r})")
        raise InputError(path, 1, "not a yewpy checkpoint (the first line must be 'yewpy-checkpoint 2')")
    end = data.find(b"\n", len(MAGIC))
    try:
        line = data[len(MAGIC):end]
        header = json.loads(line)
        size, digest = header["payload_bytes"], header["payload_sha256"]
    except (ValueError, KeyError, TypeError):
        raise InputError(path, 2, "checkpoint header is damaged or cut short") from None
    sig_end = data.find(b"\n", end + 1)
    words = data[end + 1:sig_end].split() if end >= 0 and sig_end >= 0 else []
    if len(words) != 2 or words[0] != b"hmac-sha256":
        raise InputError(path, 3, "checkpoint signature line is missing or damaged")
    payload = data[sig_end + 1:]
    if len(payload) != size or hashlib.sha256(payload).hexdigest() != digest:
        raise InputError(path, 4, f"checkpoint is truncated or damaged ({len(payload)} of {size} "
                                  "payload bytes, or a wrong checksum)")
    try:
        key = signing_key()
    except UsageError as exc:
        raise InputError(path, 3, f"cannot check the signature: {exc}") from None
    if not hmac.compare_digest(words[1], _signature(key, line, payload).encode()):
        raise InputError(path, 3, f"checkpoint was not signed with this user's key ({key_path()}); "
                                  "it is refused unread (a checkpoint's pickle could run code)")
    if version is not None and header.get("yewpy_version") != version:
        raise InputError(path, 2, f"checkpoint was written by yewpy {header.get('yewpy_version')}, "
                                  f"this is yewpy {version}")
    if fingerprint is not None and header.get("fingerprint") != fingerprint:
        raise InputError(path, 2, f"checkpoint belongs to another problem ({header.get('problem')!r}); "
                                  "it resumes only the search that wrote it")
    body = pickle.loads(payload)
    return header, body["prior"], body["tasks"]
