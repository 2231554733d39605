"""Arrays a compiled method makes for itself, taken from a per-search scratch arena.

``children`` (and the methods it calls) typically make a few small arrays per node: copies of a
bitset, a colouring order.  Through numba's allocator each is a ``malloc`` and a ``free`` with
reference counting, about a third of a bitset clique's time.  None of them can outlive the call
that expands a node: a compiled method cannot store an array anywhere, and a yielded child is
copied into the frame's buffer.  So the generated code resets a bump arena before each call
of ``children`` (and at each entry point), and the calls below, which :mod:`yewpy.compiler.source`
writes for the user's ``np.empty``, ``np.zeros``, ``np.ones``, ``np.empty_like``,
``np.zeros_like`` and ``x.copy()``, take their memory from it.  An array that does not fit, or a
form these do not cover, comes from numba's allocator as before; results are identical.

The arena is an int64 array: word 0 holds the next free byte offset, the data start at byte
:data:`START`, and every array is aligned to 32 bytes.
"""

from __future__ import annotations

import numpy as np
from numba import carray, njit, types
from numba.core.typing.npydecl import parse_dtype, parse_shape
from numba.extending import overload
from numba.np.numpy_support import as_dtype

from yewpy.compiler.intrinsics import as_pointer

#: The arena's pseudo-attribute: compiled methods receive it as ``self__yewpy_scratch``.
NAME = "_yewpy_scratch"
#: Its size in 8-byte words (256 KiB), and the first byte handed out.
WORDS = 1 << 15
START = 64
#: ``np.NAME(...)`` calls taken from the arena (``x.copy()`` is the other form).
CONSTRUCTORS = ("empty", "zeros", "ones", "empty_like", "zeros_like")


def arena() -> np.ndarray:
    """A fresh arena for one search object (only word 0 needs a value)."""
    out = np.empty(WORDS, dtype=np.int64)
    out[0] = START
    return out


@njit(inline="always")
def _take(arena, nbytes):
    """The address of ``nbytes`` from the arena, or 0 when they do not fit."""
    at = arena[0]
    end = at + ((nbytes + 31) & ~31)
    if nbytes < 0 or end > arena.size * 8:
        return 0
    arena[0] = end
    return arena.ctypes.data + at


def _scalar(dtype):
    """The element type an array constructor's ``dtype`` argument names (None: float64)."""
    if dtype is None or isinstance(dtype, (types.NoneType, types.Omitted)):
        return types.float64
    if isinstance(dtype, types.Function) and dtype.typing_key is float:
        return types.float64
    return parse_dtype(dtype)


def _fits(scalar, shape) -> bool:
    return isinstance(scalar, (types.Integer, types.Float, types.Boolean)) and parse_shape(shape) is not None


def _size(shape):
    raise NotImplementedError("compiled code only")


@overload(_size)
def _size_of(shape):
    if isinstance(shape, types.Integer):
        return lambda shape: shape

    def impl(shape):
        n = 1
        for s in shape:
            n *= s
        return n
    return impl


def _allocator(constructor, fill):
    """The overload body of numpy's ``constructor``, which fills with ``fill`` (None: leaves the
    memory as it is)."""

    def make(arena, shape, dtype=None):
        scalar = _scalar(dtype)
        if scalar is None or not _fits(scalar, shape):     # numba's own constructor, and its message
            return lambda arena, shape, dtype=None: constructor(shape, dtype)
        element = as_dtype(scalar).type
        itemsize = as_dtype(scalar).itemsize

        def impl(arena, shape, dtype=None):
            address = _take(arena, _size(shape) * itemsize)
            if address == 0:
                out = np.empty(shape, element)
            else:
                out = carray(as_pointer(address), shape, element)
            if fill is not None:
                out.fill(fill)
            return out
        return impl
    return make


def empty(arena, shape, dtype=None):
    """``np.empty(shape, dtype)`` from the arena (compiled code only)."""
    raise NotImplementedError("compiled code only")


def zeros(arena, shape, dtype=None):
    """``np.zeros(shape, dtype)`` from the arena (compiled code only)."""
    raise NotImplementedError("compiled code only")


def ones(arena, shape, dtype=None):
    """``np.ones(shape, dtype)`` from the arena (compiled code only)."""
    raise NotImplementedError("compiled code only")


overload(empty)(_allocator(np.empty, None))
overload(zeros)(_allocator(np.zeros, 0))
overload(ones)(_allocator(np.ones, 1))


def empty_like(arena, x):
    """``np.empty_like(x)`` from the arena (compiled code only)."""
    raise NotImplementedError("compiled code only")


def zeros_like(arena, x):
    """``np.zeros_like(x)`` from the arena (compiled code only)."""
    raise NotImplementedError("compiled code only")


def copy(arena, x):
    """``x.copy()`` from the arena when ``x`` is an array of numbers (compiled code only)."""
    raise NotImplementedError("compiled code only")


def _plain(x) -> bool:
    return isinstance(x, types.Array) and isinstance(x.dtype, (types.Integer, types.Float, types.Boolean))


@overload(empty_like)
def _empty_like(arena, x):
    if not _plain(x):
        return lambda arena, x: np.empty_like(x)
    return lambda arena, x: empty(arena, x.shape, x.dtype)


@overload(zeros_like)
def _zeros_like(arena, x):
    if not _plain(x):
        return lambda arena, x: np.zeros_like(x)
    return lambda arena, x: zeros(arena, x.shape, x.dtype)


@overload(copy)
def _copy(arena, x):
    if not _plain(x):
        return lambda arena, x: x.copy()
    if x.ndim == 1:
        def impl(arena, x):
            out = empty(arena, x.size, x.dtype)
            for i in range(x.size):
                out[i] = x[i]
            return out
        return impl

    def impl_nd(arena, x):
        out = empty(arena, x.shape, x.dtype)
        out[...] = x
        return out
    return impl_nd
