"""How numbers in input files are read: plain ASCII decimal only, as C's readers and the file
formats' own tools read them.  Python's ``int``/``float`` also take ``1_000``, ``٣`` and
``0x10``-like spellings that would silently give a different problem than the file's author meant.
``check_range`` holds a command-line option's number to what it means, the same way."""

from __future__ import annotations

import math
import re

from yewpy.errors import UsageError

__all__ = ["ascii_digits", "check_range", "parse_float", "parse_int"]

_INT = re.compile(r"[-+]?[0-9]+\Z")
_FLOAT = re.compile(r"[-+]?([0-9]+\.?[0-9]*|\.[0-9]+)([eE][-+]?[0-9]+)?\Z")


def ascii_digits(word: str) -> bool:
    """True for a non-empty run of ASCII digits (``'²'.isdigit()`` is true, and ``int('²')`` fails)."""
    return word.isascii() and word.isdigit()


def parse_int(word: str) -> int:
    """A decimal integer such as ``42`` or ``-7``; ValueError for anything else."""
    if not _INT.match(word):
        raise ValueError(f"not an integer: {word!r}")
    return int(word)


def parse_float(word: str) -> float:
    """A finite decimal number such as ``3``, ``-0.5`` or ``1e6``; ValueError for anything else
    (``nan``, ``inf``, and values beyond a double's range included)."""
    if not _FLOAT.match(word):
        raise ValueError(f"not a number: {word!r}")
    value = float(word)
    if not math.isfinite(value):
        raise ValueError(f"not a finite number: {word!r}")
    return value


def check_range(flag: str, value: float | None, low: float, high: float, integer: bool = False,
                open_low: bool = False) -> None:
    """A ``UsageError`` naming ``flag`` unless ``value`` (None: not given) is in [low, high], or
    (low, high] with ``open_low``, and finite: an option out of range is an error, never silently
    another value."""
    if value is None:
        return
    if integer:
        if not low <= value <= high:
            raise UsageError(f"{flag} must be an integer in [{low}, {high:,}], got {value}")
    elif not (math.isfinite(value) and (value > low if open_low else value >= low) and value <= high):
        raise UsageError(f"{flag} must be in {'(' if open_low else '['}{low:g}, {high:g}], got {value}")
