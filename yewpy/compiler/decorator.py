"""``@yewpy.jit``: a search written as a plain-Python class, compiled to machine code.

The decorated class is a subclass of yours with the same name; its ``search()`` runs on the
same engine, coordinations and MPI runtime, with ``children``, ``value``, ``objective`` and
``bound`` compiled by numba and called from the engine through C function pointers.  What
cannot be compiled is refused with a :class:`yewpy.UsageError` naming the method, its line and
the construct.  ``docs/tutorial.md`` Part 3 says what compiles.
"""

from __future__ import annotations

from typing import Any, TypeVar

from yewpy.errors import UsageError

T = TypeVar("T", bound=type)


def jit(cls: T | None = None) -> Any:
    """Compile the search class ``cls`` (as ``@yewpy.jit``, ``@yewpy.jit()`` or ``yewpy.jit(cls)``)."""
    if cls is None:
        return jit
    if not isinstance(cls, type):
        raise UsageError(f"yewpy.jit takes a search class, got {type(cls).__name__}")
    try:
        from yewpy.compiler import build
    except ImportError as exc:          # numba missing or broken: say so, not where
        raise UsageError(f"@yewpy.jit needs numba ({exc}); pip install numba") from None
    build.plan_of(cls)                # refuse what cannot compile now, at the decoration

    def _core(self: Any) -> Any:
        return build.core_of(self)

    namespace = {"__module__": cls.__module__, "__qualname__": cls.__qualname__, "__doc__": cls.__doc__,
                 "_core": _core, "__yewpy_jit__": True}
    if not hasattr(cls, "fingerprint"):
        namespace["fingerprint"] = _fingerprint
    jitted = type(cls.__name__, (cls,), namespace)
    build._plans[jitted] = build._plans[cls]
    return jitted


def _fingerprint(self: Any) -> bytes:
    """What a checkpoint of a jitted search is tied to: the compiled methods' text and the
    object's attributes (the class itself pickles differently in every process)."""
    import cloudpickle

    from yewpy.compiler import build, source

    plan = build.plan_of(type(self))
    state = sorted(vars(self).items())
    return source.describe(plan).encode() + cloudpickle.dumps(state, protocol=4)
