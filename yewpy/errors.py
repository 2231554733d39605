"""The one error a user's input can raise: it names the file and the line."""

from __future__ import annotations


class InputError(ValueError):
    """A malformed or missing input file; ``str()`` is ``FILE:LINE: what is wrong``."""

    def __init__(self, path: str, line: int | None, message: str) -> None:
        self.path, self.line, self.message = str(path), line, message
        where = self.path if line is None else f"{self.path}:{line}"
        super().__init__(f"{where}: {message}")
