"""Reading a JSON input file so that every object knows its line: errors then name FILE:LINE."""

from __future__ import annotations

import json
import json.decoder
import json.scanner
from typing import Any

from yewpy.errors import InputError


class Obj(dict):
    """A JSON object that remembers the line its ``{`` is on."""

    line: int = 1


class _LineDecoder(json.JSONDecoder):
    def __init__(self) -> None:
        super().__init__()

        def parse_object(s_and_end: tuple, strict: bool, scan_once: Any, object_hook: Any,
                         object_pairs_hook: Any, memo: Any = None) -> tuple:
            s, end = s_and_end
            pairs, new_end = json.decoder.JSONObject(s_and_end, strict, scan_once, None, None, memo)
            obj = Obj(pairs)
            obj.line = s.count("\n", 0, end) + 1
            return obj, new_end

        self.parse_object = parse_object
        self.scan_once = json.scanner.py_make_scanner(self)


def load(path: str) -> Any:
    """The parsed file; objects are :class:`Obj`. Syntax errors raise InputError with the line."""
    try:
        with open(path, encoding="utf-8") as fh:
            text = fh.read()
    except (OSError, UnicodeDecodeError) as exc:
        raise InputError(path, None, f"cannot read: {getattr(exc, 'strerror', None) or exc}") from None
    try:
        return _LineDecoder().decode(text)
    except json.JSONDecodeError as exc:
        raise InputError(path, exc.lineno, f"invalid JSON: {exc.msg}") from None


def field(path: str, obj: Obj, key: str, kind: type = float, default: Any = None, minimum: float | None = 0
          ) -> Any:
    """``obj[key]`` checked to be a number (or ``kind``) >= ``minimum``; missing -> default or error."""
    line = getattr(obj, "line", None)
    if key not in obj:
        if default is None:
            raise InputError(path, line, f"missing field {key!r}")
        return default
    value = obj[key]
    if kind is str:
        if not isinstance(value, str):
            raise InputError(path, line, f"field {key!r} must be a string, got {value!r}")
        return value
    if kind is bool:
        if not isinstance(value, bool):
            raise InputError(path, line, f"field {key!r} must be true or false, got {value!r}")
        return value
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise InputError(path, line, f"field {key!r} must be a number, got {value!r}")
    if kind is int and int(value) != value:
        raise InputError(path, line, f"field {key!r} must be an integer, got {value!r}")
    if minimum is not None and value < minimum:
        raise InputError(path, line, f"field {key!r} must be at least {minimum}, got {value!r}")
    return kind(value)
