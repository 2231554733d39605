"""What the generated code needs beyond numba itself: ``int.bit_count()``, ``int.bit_length()``
as the machine's popcount and count-leading-zeros, and an address turned into a pointer.

Integers in compiled code are 64-bit words: ``bit_count()`` and ``bit_length()`` read the word's
bit pattern, which is Python's answer for every value from 0 to 2**64 - 1.
"""

from __future__ import annotations

import llvmlite.ir as ir
from numba import types
from numba.core.errors import TypingError
from numba.extending import intrinsic, overload, overload_method

#: Marks the compiler messages that yewpy writes itself, so they reach the user whole.
OWN = "[yewpy] "


@intrinsic
def popcount(typingctx, x):
    """The number of one bits in the 64-bit word ``x`` (llvm.ctpop)."""
    if not isinstance(x, types.Integer):
        return None
    sig = types.int64(x)

    def codegen(context, builder, signature, args):
        word = context.cast(builder, args[0], signature.args[0], types.uint64)
        fn = builder.module.declare_intrinsic("llvm.ctpop", [word.type])
        return builder.call(fn, [word])

    return sig, codegen


@intrinsic
def bit_length(typingctx, x):
    """64 minus the leading zeros of the 64-bit word ``x`` (llvm.ctlz): 0 for 0."""
    if not isinstance(x, types.Integer):
        return None
    sig = types.int64(x)

    def codegen(context, builder, signature, args):
        word = context.cast(builder, args[0], signature.args[0], types.uint64)
        fn = builder.module.declare_intrinsic("llvm.ctlz", [word.type, ir.IntType(1)])
        zeros = builder.call(fn, [word, ir.Constant(ir.IntType(1), 0)])
        return builder.sub(ir.Constant(ir.IntType(64), 64), zeros)

    return sig, codegen


@intrinsic
def as_pointer(typingctx, address):
    """The integer ``address`` as a ``void*`` (for ``numba.carray`` over an attribute's data)."""
    if not isinstance(address, types.Integer):
        return None
    sig = types.voidptr(address)

    def codegen(context, builder, signature, args):
        return builder.inttoptr(args[0], ir.IntType(8).as_pointer())

    return sig, codegen


@overload_method(types.Integer, "bit_count")
def _int_bit_count(x):
    def impl(x):
        return popcount(x)
    return impl


@overload_method(types.Integer, "bit_length")
def _int_bit_length(x):
    def impl(x):
        return bit_length(x)
    return impl


@overload_method(types.Boolean, "bit_count")
def _bool_bit_count(x):
    def impl(x):
        return 1 if x else 0
    return impl


def integer_slot(value):
    """A yielded element bound for an integer slot of the node record (compiled code only)."""
    raise NotImplementedError("compiled code only")


@overload(integer_slot)
def _integer_slot(value):
    if isinstance(value, (types.Integer, types.Boolean)):
        return lambda value: value
    raise TypingError(f"{OWN}children() yields a {value} where the root has an integer; a compiled node "
                      "keeps the types of the root's elements (write 0.0 in root() for a float)")



def node_arity(child, fields):
    """Checks at compile time that a yielded child has the root's number of elements."""
    raise NotImplementedError("compiled code only")


@overload(node_arity, prefer_literal=True)
def _node_arity(child, fields):
    want = getattr(fields, "literal_value", None)
    have = len(child) if isinstance(child, types.BaseTuple) else None
    if have != want:
        what = f"a tuple of {have} elements" if have is not None else f"a {child}"
        raise TypingError(f"{OWN}children() yields {what}; the root is a tuple of {want} elements, and a "
                          "compiled node keeps the root's shape")
    return lambda child, fields: None
