"""Reading a user's input file as text, or one ``InputError`` line that says why not.

Every app's reader goes through :func:`read_text` (maxclique's, which streams, through
:func:`open_text`), so a device such as ``/dev/zero`` is refused rather than read until memory runs
out, and a pipe or a compressed file is read up to a bound.
"""

from __future__ import annotations

import gzip
import io
import os
import stat
from typing import TextIO

from yewpy.errors import InputError

MAX_INPUT_BYTES = 1 << 30  # characters read whole, bytes streamed: far above any input the apps read


def check_regular(path: str) -> None:
    """An ``InputError`` if ``path`` is a device or a socket, refused before it is opened (``/dev/zero``
    was read until memory ran out). A pipe is read (``<(zcat graph.clq.gz)``, ``/dev/stdin``), up to
    ``MAX_INPUT_BYTES``; a missing file or a directory fails when it is opened, with the system's
    own reason."""
    try:
        mode = os.stat(path).st_mode
    except OSError:
        return
    if not (stat.S_ISREG(mode) or stat.S_ISDIR(mode) or stat.S_ISFIFO(mode)):
        raise InputError(path, None, "cannot read: not a file (a device or a socket)")


def read_text(path: str, encoding: str | None = "utf-8") -> str:
    """The text of ``path``: a regular file (``check_regular``) of at most ``MAX_INPUT_BYTES``;
    anything else, or a file that cannot be read or decoded, is an ``InputError`` naming it."""
    check_regular(path)
    try:
        with open(path, encoding=encoding) as fh:
            text = fh.read(MAX_INPUT_BYTES + 1)
    except (OSError, UnicodeDecodeError) as exc:
        raise InputError(path, None, f"cannot read: {getattr(exc, 'strerror', None) or exc}") from None
    if len(text) > MAX_INPUT_BYTES:
        raise InputError(path, None, f"cannot read: more than {MAX_INPUT_BYTES:,} characters")
    return text


class _Capped(io.RawIOBase):
    """A binary stream that refuses to give more than ``MAX_INPUT_BYTES`` bytes."""

    def __init__(self, stream: io.RawIOBase | gzip.GzipFile, path: str) -> None:
        super().__init__()
        self.stream, self.path, self.given = stream, path, 0

    def readable(self) -> bool:
        return True

    def readinto(self, buffer) -> int:  # noqa: ANN001 (a writable buffer)
        count = self.stream.readinto(buffer)
        self.given += count
        if self.given > MAX_INPUT_BYTES:
            how = " once decompressed" if isinstance(self.stream, gzip.GzipFile) else ""
            raise InputError(self.path, None, f"cannot read: more than {MAX_INPUT_BYTES:,} bytes{how}")
        return count

    def close(self) -> None:
        self.stream.close()
        super().close()


def open_text(path: str) -> TextIO:
    """``path`` (``check_regular``) opened to stream its text, decompressed when it ends in ``.gz``,
    and refused with an ``InputError`` past ``MAX_INPUT_BYTES`` bytes: a few kilobytes of ``.gz`` can
    decompress to terabytes. Undecodable bytes are kept as surrogates for the reader to name."""
    check_regular(path)
    raw = gzip.open(path, "rb") if str(path).endswith(".gz") else open(path, "rb", buffering=0)
    return io.TextIOWrapper(io.BufferedReader(_Capped(raw, path)), encoding="utf-8", errors="surrogateescape")
