"""Reading a JSON input file so that every object knows its line: errors then name FILE:LINE."""

from __future__ import annotations

import json
import json.decoder
import json.scanner
import math
from bisect import bisect_left
from typing import Any

from yewpy.apps.input_files import read_text
from yewpy.errors import InputError

MAX_DEPTH = 64              # objects and arrays nested deeper are refused (the pure-Python scanner recurses)
MAX_NUMBER_CHARS = 100      # a longer number literal is refused (int() of >4300 digits raises ValueError)
MAX_NUMBER = 2**53          # the largest value field() takes: beyond it counts are no longer exact


class Obj(dict):
    """A JSON object that knows the line its ``{`` is on, and the line of each member's value
    (``key_lines``: where a reader's error about that key points).

    ``load`` parses with the C scanner, which gives no offsets, so the lines are found when first
    asked for (almost always for an error message): the whole text is parsed once more by the
    line-aware :class:`_LineDecoder` and this object is found in it by its path from the root.
    So ask for lines of objects as ``load`` returned them: not of a copy, nor after moving or
    removing members on the way to it."""

    _lines: tuple[int, dict] | None = None     # (line, key_lines) once known
    _document: _Document | None = None
    _height: int = 1                            # its nesting: itself and its deepest member

    @property
    def line(self) -> int:
        return self._located()[0]

    @property
    def key_lines(self) -> dict:
        return self._located()[1]

    def _located(self) -> tuple[int, dict]:
        if self._lines is None:
            if self._document is None:
                return 1, {}
            self._lines = self._document.lines_of(self)
        return self._lines


class _Document:
    """The text an :class:`Obj` was read from, parsed again with lines when one is first asked for."""

    def __init__(self, text: str) -> None:
        self.text = text
        self.root: Any = None
        self._parsed: Any = None

    def lines_of(self, obj: Obj) -> tuple[int, dict]:
        """``obj``'s (line, key_lines), found by its path from the root (``root`` is set by
        ``load``) in the line-aware parse."""
        if self._parsed is None:
            self._parsed = _LineDecoder().decode(self.text)
        path = _path_to(self.root, obj)
        twin = self._parsed
        for step in path:
            twin = twin[step]
        return twin._lines


class _Refused(Exception):
    """Valid JSON that the readers refuse (NaN, duplicate keys, deep nesting), at an offset."""

    def __init__(self, pos: int, message: str) -> None:
        super().__init__(message)
        self.pos, self.message = pos, message


class _LineDecoder(json.JSONDecoder):
    """Strict JSON: objects become :class:`Obj` with their line; NaN/Infinity literals, duplicate keys,
    nesting deeper than MAX_DEPTH and number literals longer than MAX_NUMBER_CHARS are refused."""

    def __init__(self) -> None:
        super().__init__()
        depth = [0]
        members: list[list[int]] = []   # per object or array being parsed: where its values start

        def value(s: str, idx: int) -> tuple:
            """Every value goes through here (top level, object members, array items)."""
            if members:
                members[-1].append(idx)
            if s.startswith(("NaN", "Infinity", "-Infinity"), idx):
                raise _Refused(idx, "NaN and Infinity are not numbers a file may give")
            number = json.scanner.NUMBER_RE.match(s, idx)
            if number and number.end() - idx > MAX_NUMBER_CHARS:
                raise _Refused(idx, f"a number literal longer than {MAX_NUMBER_CHARS} characters")
            if number and not number.group().isascii():     # NUMBER_RE's \d takes any Unicode digit
                raise _Refused(idx, f"a number with non-ASCII digits: {number.group()!r}")
            return scanner(s, idx)

        def nested(end: int) -> None:
            depth[0] += 1
            if depth[0] > MAX_DEPTH:
                raise _Refused(end, f"objects and arrays nested more than {MAX_DEPTH} deep")

        def parse_object(s_and_end: tuple, strict: bool, scan_once: Any, object_hook: Any,
                         object_pairs_hook: Any, memo: Any = None) -> tuple:
            s, end = s_and_end
            nested(end)
            members.append([])
            try:
                pairs, new_end = json.decoder.JSONObject(s_and_end, strict, value, None, list, memo)
            finally:
                depth[0] -= 1
                starts = members.pop()
            obj = Obj(pairs)
            obj._lines = (self.line_of(end), {key: self.line_of(at) for (key, _), at in zip(pairs, starts)})
            if len(obj) < len(pairs):                       # json keeps the last silently
                keys = [key for key, _ in pairs]
                twice = next(key for i, key in enumerate(keys) if key in keys[:i])
                raise _Refused(end, f"duplicate key {twice!r} in one object")
            return obj, new_end

        def parse_array(s_and_end: tuple, scan_once: Any) -> tuple:
            nested(s_and_end[1])
            members.append([])
            try:
                return json.decoder.JSONArray(s_and_end, value)
            finally:
                depth[0] -= 1
                members.pop()

        self.parse_object = parse_object
        self.parse_array = parse_array
        scanner = json.scanner.py_make_scanner(self)
        self.scan_once = value
        self.newlines: list[int] = []

    def decode(self, s: str, *args: Any) -> Any:
        self.newlines = [i for i, c in enumerate(s) if c == "\n"]
        return super().decode(s, *args)

    def line_of(self, pos: int) -> int:
        """The 1-based line of offset ``pos`` of the text being decoded."""
        return bisect_left(self.newlines, pos) + 1


def load(path: str) -> Any:
    """The parsed file; objects are :class:`Obj`. Syntax errors, and the valid JSON that
    :class:`_LineDecoder` refuses, raise InputError with the line.

    The C scanner reads first (a 100,000-tensor fusion profile: 0.2 s with the hooks, where the
    line-aware pure-Python scanner takes 1 s). Anything it fails on or the readers refuse goes to
    :class:`_LineDecoder`, so what is accepted and every message are the same either way."""
    text = read_text(path)
    fast = _fast_parse(text)
    if fast is not _REFUSED:
        return fast
    try:
        return _LineDecoder().decode(text)
    except json.JSONDecodeError as exc:
        raise InputError(path, exc.lineno, f"invalid JSON: {exc.msg}") from None
    except _Refused as exc:
        raise InputError(path, text.count("\n", 0, exc.pos) + 1, exc.message) from None
    except RecursionError:          # only if called with little stack left: MAX_DEPTH keeps it shallow
        raise InputError(path, None, "nested too deeply to read") from None


_REFUSED = object()


def _fast_parse(text: str) -> Any:
    """``text`` parsed by the C scanner with :class:`Obj` objects whose lines are found later,
    or ``_REFUSED`` where it is not JSON or :class:`_LineDecoder` would refuse it."""
    document = _Document(text)

    def height(values: Any) -> int:
        """The nesting of a container with these values: itself and the deepest one in it."""
        most = 0
        for value in values:
            kind = type(value)
            if kind is Obj:
                if value._height > most:
                    most = value._height
            elif kind is list:
                below = height(value)
                if below > most:
                    most = below
        if most >= MAX_DEPTH:
            raise _Refused(0, "nested too deeply")
        return most + 1

    def pairs(items: list) -> Obj:
        obj = Obj(items)
        if len(obj) < len(items):
            raise _Refused(0, "duplicate key")
        obj._document, obj._height = document, height(obj.values())
        return obj

    def number(literal: str, kind: type) -> Any:
        if len(literal) > MAX_NUMBER_CHARS:
            raise _Refused(0, "long number")
        return kind(literal)

    def constant(literal: str) -> Any:
        raise _Refused(0, "NaN or Infinity")

    decoder = json.JSONDecoder(object_pairs_hook=pairs, parse_constant=constant,
                               parse_int=lambda s: number(s, int), parse_float=lambda s: number(s, float))
    try:
        doc = decoder.decode(text)
        if type(doc) is list:
            height(doc)
    except (ValueError, _Refused, RecursionError):      # JSONDecodeError is a ValueError
        return _REFUSED
    document.root = doc
    return doc


def _path_to(root: Any, target: Obj) -> tuple:
    """The keys and indices that lead from ``root`` to the object ``target`` (by identity)."""
    todo: list[tuple[Any, tuple]] = [(root, ())]
    while todo:
        value, where = todo.pop()
        if value is target:
            return where
        items = value.items() if type(value) is Obj else enumerate(value)
        todo.extend((item, (*where, key)) for key, item in items if type(item) in (Obj, list))
    raise LookupError("the object is not in its document")


def field(path: str, obj: Obj, key: str, kind: type = float, default: Any = None, minimum: float | None = 0,
          maximum: float = MAX_NUMBER) -> Any:
    """``obj[key]`` checked to be a finite number (or ``kind``) in [``minimum``, ``maximum``];
    missing -> default or error."""
    if key not in obj:
        if default is None:
            raise _error(path, obj, f"missing field {key!r}")
        return default
    value = obj[key]
    if kind is str:
        if not isinstance(value, str):
            raise _error(path, obj, f"field {key!r} must be a string, got {value!r}")
        return value
    if kind is bool:
        if not isinstance(value, bool):
            raise _error(path, obj, f"field {key!r} must be true or false, got {value!r}")
        return value
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise _error(path, obj, f"field {key!r} must be a number, got {value!r}")
    if not math.isfinite(value):            # 1e999 parses as inf
        raise _error(path, obj, f"field {key!r} must be a finite number, got {value!r}")
    if kind is int and int(value) != value:
        raise _error(path, obj, f"field {key!r} must be an integer, got {value!r}")
    if minimum is not None and value < minimum:
        raise _error(path, obj, f"field {key!r} must be at least {minimum}, got {value!r}")
    if value > maximum:
        raise _error(path, obj, f"field {key!r} must be at most {maximum}, got {value!r}")
    return kind(value)


def _error(path: str, obj: Any, message: str) -> InputError:
    """An error at ``obj``'s line (its lines are found only now: see :class:`Obj`)."""
    return InputError(path, getattr(obj, "line", None), message)
