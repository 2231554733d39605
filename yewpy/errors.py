"""The errors a user's input can raise: a bad file (named with its line), or bad arguments."""

from __future__ import annotations

import os


class InputError(ValueError):
    """A malformed or missing input file; ``str()`` is ``FILE:LINE: what is wrong``."""

    def __init__(self, path: str | os.PathLike, line: int | None, message: str) -> None:
        self.path, self.line, self.message = os.fspath(path), line, message
        where = self.path if line is None else f"{self.path}:{line}"
        super().__init__(f"{where}: {message}")


class UsageError(ValueError):
    """Arguments that do not fit together (the CLI prints it on one line and exits 2)."""
