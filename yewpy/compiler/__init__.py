"""The compiler behind ``@yewpy.jit``: a plain-Python search class to machine code (numba).

``decorator`` (the public ``jit``), ``source`` (reading and refusing the methods), ``layout``
(nodes and attributes as 8-byte slots), ``codegen`` (the generated module), ``cache`` (compiled
modules on disk), ``intrinsics`` (popcount, bit length), ``build`` (a search object's JitCore).
"""

from yewpy.compiler.decorator import jit

__all__ = ["jit"]
