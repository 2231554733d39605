"""What compiled code sees: the node record (from the root) and the search object's attributes.

A node is a tuple whose elements are numbers or fixed-length 1-D numpy arrays; its record is
one 8-byte slot per number and per array element.  Integers are ``int64``, or ``uint64`` where a
value needs 64 unsigned bits; floats are ``float64``.  An attribute is a number, a tuple or list
of numbers (or of equal-length tuples: a 2-D array), or a numpy array; sequences become
read-only arrays.  The layout's ``describe()`` text is part of the compiled code's cache key.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass
from functools import cached_property
from typing import Any

import numpy as np

from yewpy.errors import UsageError

_DTYPES = {"i8": np.int64, "u8": np.uint64, "f8": np.float64, "b1": np.bool_}
NUMBA_NAMES = {"i8": "int64", "u8": "uint64", "f8": "float64", "b1": "boolean"}
_SLOT_VIEW = {"i8": "i8", "u8": "u8", "f8": "f8", "b1": "i8"}    # which view of a slot reads it
_SLOT_STRUCT = {code: struct.Struct("=" + c)                       # how decode reads a number
                for code, c in (("i8", "q"), ("u8", "Q"), ("f8", "d"), ("b1", "q"))}


def _code_of_number(value: Any) -> str | None:
    """The slot type of one number, or None when ``value`` is not a number."""
    if isinstance(value, (bool, np.bool_)):
        return "b1"
    if isinstance(value, (int, np.integer)):
        v = int(value)
        if -(1 << 63) <= v < (1 << 63):
            return "u8" if isinstance(value, np.unsignedinteger) and value.dtype.itemsize == 8 else "i8"
        if 0 <= v < (1 << 64):
            return "u8"
        raise UsageError(f"the integer {v} needs more than 64 bits: compiled searches use 64-bit words")
    if isinstance(value, (float, np.floating)):
        return "f8"
    return None


def _code_of_array(values: Any) -> str:
    """The element type of a flat sequence or array of numbers."""
    arr = np.asarray(values)
    if arr.dtype.kind == "f":
        return "f8"
    if arr.dtype.kind == "b":
        return "b1"
    if arr.dtype.kind in "iu":
        if arr.dtype == np.uint64 or (arr.size and int(arr.max()) >= (1 << 63)):
            return "u8"
        return "i8"
    if arr.dtype == object and all(_code_of_number(v) in ("i8", "u8", "b1") for v in arr.flat):
        big = any(int(v) >= (1 << 63) for v in arr.flat)
        return "u8" if big else "i8"
    raise ValueError("not numbers")


@dataclass(frozen=True)
class Field:
    """One element of a node: a number (``length`` 0) or an array of ``length`` numbers."""

    code: str
    length: int = 0

    @property
    def slots(self) -> int:
        return self.length or 1


@dataclass(frozen=True)
class NodeLayout:
    """The node record: its fields in order, each at a slot offset."""

    fields: tuple

    @property
    def width(self) -> int:
        return sum(f.slots for f in self.fields)

    def offsets(self) -> list:
        out, at = [], 0
        for f in self.fields:
            out.append(at)
            at += f.slots
        return out

    def describe(self) -> str:
        return "node(" + ", ".join(f"{f.code}[{f.length}]" if f.length else f.code for f in self.fields) + ")"

    @classmethod
    def of_root(cls, root: Any, where: str) -> NodeLayout:
        """The layout of ``root``: a tuple of numbers and 1-D numpy arrays."""
        if not isinstance(root, tuple) or not root:
            raise UsageError(f"{where}: root() returned {type(root).__name__} {_short(root)}; a compiled "
                             "search needs a node that is a non-empty tuple of numbers (or 1-D numpy arrays)")
        fields = []
        for k, element in enumerate(root):
            code = _code_of_number(element)
            if code is not None:
                fields.append(Field(code))
            elif isinstance(element, np.ndarray) and element.ndim == 1 and element.size:
                try:
                    fields.append(Field(_code_of_array(element), int(element.size)))
                except ValueError:
                    raise UsageError(f"{where}: root()[{k}] is an array of {element.dtype}; compiled "
                                     "nodes hold numbers") from None
            else:
                raise UsageError(f"{where}: root()[{k}] is {type(element).__name__} {_short(element)}; "
                                 "a compiled node's elements are numbers or non-empty 1-D numpy arrays")
        return cls(tuple(fields))

    def encode(self, node: Any) -> bytes:
        """The record of ``node`` (a tuple of this layout's shape)."""
        if not isinstance(node, tuple) or len(node) != len(self.fields):
            raise UsageError(f"a node must be a tuple of {len(self.fields)} elements like the root, "
                             f"got {_short(node)}")
        parts = []
        for f, element in zip(self.fields, node):
            if f.length:
                arr = np.asarray(element)
                if arr.shape != (f.length,):
                    raise UsageError(f"a node's array has shape {arr.shape}, the root's has ({f.length},)")
                parts.append(_words(arr, f.code))
            else:
                parts.append(_words(np.asarray([element]), f.code))
        return b"".join(parts)

    @cached_property
    def _reads(self) -> tuple:
        """Per field: its byte offset, its length (0: a number) and how to read it."""
        out, at = [], 0
        for f in self.fields:
            how = _DTYPES[_SLOT_VIEW[f.code]] if f.length else _SLOT_STRUCT[f.code]
            out.append((8 * at, f.length, how, f.code == "b1"))
            at += f.slots
        return tuple(out)

    def decode(self, record: bytes) -> tuple:
        """The node as plain Python values (numbers) and numpy arrays, as the user's code made it."""
        out = []
        for offset, length, how, flag in self._reads:
            if length:
                raw = np.frombuffer(record, dtype=how, count=length, offset=offset)
                out.append(raw != 0 if flag else raw.copy())
            else:
                value = how.unpack_from(record, offset)[0]
                out.append(value != 0 if flag else value)
        return tuple(out)


def _words(arr: np.ndarray, code: str) -> bytes:
    """Numbers as 8-byte slots of type ``code`` (integers keep their 64-bit pattern)."""
    if code == "f8":
        return np.asarray(arr, dtype=np.float64).tobytes()
    if code == "u8":
        return np.array([int(v) & 0xFFFFFFFFFFFFFFFF for v in arr.tolist()], dtype=np.uint64).tobytes()
    return np.array([int(v) for v in arr.tolist()], dtype=np.int64).tobytes()


@dataclass(frozen=True)
class Attribute:
    """One attribute the compiled methods read: a scalar (``ndim`` 0) or an array."""

    name: str
    code: str
    ndim: int

    def describe(self) -> str:
        return f"{self.name}:{self.code}" + (f"[{self.ndim}d]" if self.ndim else "")


def attribute(name: str, value: Any, where: str) -> tuple:
    """The spec of ``self.name`` and the value compiled code reads (a number or a C-contiguous array)."""
    scalar = _code_of_number(value)
    if scalar is not None:
        return Attribute(name, scalar, 0), value
    if isinstance(value, (tuple, list, np.ndarray)):
        try:
            arr = np.asarray(value) if isinstance(value, np.ndarray) else _sequence_array(value)
            code = _code_of_array(arr)
        except ValueError:
            arr = None
        if arr is not None and 1 <= arr.ndim <= 4:
            return Attribute(name, code, arr.ndim), np.ascontiguousarray(arr, dtype=_DTYPES[code])
    raise UsageError(f"{where}: self.{name} is {type(value).__name__} {_short(value)}; compiled methods read "
                     "numbers, tuples or lists of numbers, or numpy arrays")


def _sequence_array(value: Any) -> np.ndarray:
    """A tuple or list of numbers (or of equal-length sequences of numbers) as an array."""
    if len(value) == 0:
        return np.zeros(0, dtype=np.int64)
    if all(_code_of_number(v) is not None for v in value):
        if all(_code_of_number(v) in ("i8", "u8", "b1") for v in value):
            big = any(int(v) >= (1 << 63) for v in value)
            return np.array([int(v) & 0xFFFFFFFFFFFFFFFF if big else int(v) for v in value],
                            dtype=np.uint64 if big else np.int64)
        return np.array(value, dtype=np.float64)
    if not all(isinstance(v, (tuple, list)) for v in value):
        raise ValueError("ragged")
    rows = [_sequence_array(v) for v in value]
    if len({r.shape for r in rows}) != 1:
        raise ValueError("ragged")
    kinds = {r.dtype for r in rows}
    dtype = np.float64 if np.dtype(np.float64) in kinds else (np.uint64 if np.dtype(np.uint64) in kinds
                                                              else np.int64)
    return np.stack([r.astype(dtype) for r in rows])


def _short(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 40 else text[:37] + "..."
