"""From a search object of a jitted class to the engine's :class:`JitCore`: the kind's methods,
the layout of its nodes and attributes, the compiled module, and the core over its entry points.
"""

from __future__ import annotations

import os
import re
from typing import Any

import numpy as np

from yewpy._jitcore import COUNT, SUM_FLOAT, SUM_INT, JitCore
from yewpy.compiler import cache, codegen, scratch, source
from yewpy.compiler.intrinsics import OWN
from yewpy.compiler.layout import Attribute, NodeLayout, attribute
from yewpy.core import DECISION, ENUMERATION, OPTIMISATION
from yewpy.errors import UsageError
from yewpy.kinds import Decision, Enumeration, Optimisation
from yewpy.runtime.parts import KIND_NAMES

_plans: dict = {}
_addresses: dict = {}       # (class, layout, attribute types, entries, sign) -> the entry points
#: Seconds the last core of each class spent compiling (0 when it came from the cache).
compile_seconds: dict = {}


def kind_of(cls: type) -> int:
    for base, kind in ((Enumeration, ENUMERATION), (Decision, DECISION), (Optimisation, OPTIMISATION)):
        if issubclass(cls, base):
            return kind
    raise UsageError(f"@yewpy.jit applies to subclasses of yewpy.Enumeration, yewpy.Decision or "
                     f"yewpy.Optimisation; {cls.__qualname__} is none of them")


def _overrides(cls: type, name: str, base: type) -> bool:
    return getattr(cls, name, None) is not getattr(base, name, None)


def entry_methods(cls: type) -> list:
    """The kind's methods this class compiles, ``children`` first; refuses what cannot compile."""
    kind = kind_of(cls)
    where = f"{cls.__module__}.{cls.__qualname__}"
    if not _overrides(cls, "children", Enumeration):
        raise UsageError(f"{where}: a compiled search needs children(node)")
    if kind == ENUMERATION:
        for name in ("combine",):
            if _overrides(cls, name, Enumeration):
                raise UsageError(f"{where}: an enumeration with its own {name}() is not compiled; "
                                 "@yewpy.jit sums value() over the nodes (drop @yewpy.jit for a custom "
                                 "monoid)")
        return ["children"] + (["value"] if _overrides(cls, "value", Enumeration) else [])
    base = Decision if kind == DECISION else Optimisation
    if not _overrides(cls, "objective", base):
        raise UsageError(f"{where}: a {'decision' if kind == DECISION else 'optimisation'} search needs "
                         "objective(node)")
    return ["children", "objective"] + (["bound"] if _overrides(cls, "bound", base) else [])


def plan_of(cls: type) -> source.Plan:
    """The class's compilation plan, read once per class."""
    found = _plans.get(cls)
    if found is None:
        entries = entry_methods(cls)
        found = _plans[cls] = source.plan(cls, entries, stoppable="bound" in entries)
    return found


def core_of(problem: Any) -> JitCore:
    """The compiled core of ``problem``, an instance of a jitted class (compiled or cached)."""
    cls = type(problem)
    plan = plan_of(cls)
    kind = kind_of(cls)
    children = plan.methods["children"]
    root = problem.root()
    layout = NodeLayout.of_root(root, f"{children.path}: {cls.__qualname__}")
    attributes, env, keep = _environment(problem, plan)
    fold = COUNT
    entries: dict = {"expand": ("children", None)}
    if kind == ENUMERATION:
        if problem.zero != 0:
            raise UsageError(f"{cls.__qualname__}: an enumeration with zero = {problem.zero!r} is not "
                             "compiled; @yewpy.jit sums value() from 0")
        if "value" in plan.methods:
            sample = problem.value(root)
            if isinstance(sample, (bool, int, np.integer)):
                fold, ctype = SUM_INT, "int64"
            elif isinstance(sample, (float, np.floating)):
                fold, ctype = SUM_FLOAT, "float64"
            else:
                raise UsageError(f"{plan.methods['value'].where()}: value() returned "
                                 f"{type(sample).__name__}; a compiled enumeration sums numbers")
            entries["value"] = ("value", ctype)
    else:
        entries["objective"] = ("objective", "float64")
        if "bound" in plan.methods:
            entries["bound"] = ("bound", "float64")
    sign = 1.0
    if kind == OPTIMISATION:
        if problem.sense not in ("max", "min"):
            raise ValueError(f"sense must be 'max' or 'min', got {problem.sense!r}")
        sign = 1.0 if problem.sense == "max" else -1.0
    # Generation may stop at a break whenever the search could run with prune_level (search()
    # can turn it on for one run); the cut stays -inf, and nothing stops, while it is off.
    break_sign = sign if "bound" in entries else None
    shape = (cls, layout, tuple(attributes), tuple(entries.items()), break_sign)
    address = _addresses.get(shape)
    if address is None:                 # a new class or new types: generate, then compile or load
        text, origins = codegen.module_source(plan, layout, attributes, entries, break_sign,
                                              KIND_NAMES[kind], sign)
        module, seconds = cache.load(text, lambda message, path: _explain(message, path, origins, plan))
        compile_seconds[cls] = seconds
        address = _addresses[shape] = {name: getattr(module, name).address for name in (*entries, "descend")}
    return JitCore(problem, layout, layout.encode(root), keep, env.ctypes.data, layout.width, kind,
                   "bound" in entries, sign, fold, address["expand"], address.get("value", 0),
                   address.get("objective", 0), address.get("bound", 0), address["descend"],
                   problem._leaf_test())


def _environment(problem: Any, plan: source.Plan) -> tuple:
    """The attribute specs, the ``env`` record, and everything it points into (kept alive)."""
    specs, values = [], []
    for name in plan.attributes:
        if name == scratch.NAME:
            specs.append(Attribute(name, "i8", 1))
            values.append(scratch.arena())
            continue
        reader = next(m for m in plan.methods.values() if name in m.attributes)
        try:
            value = getattr(problem, name)
        except AttributeError:
            raise UsageError(f"{reader.where()}: reads self.{name}, which this object does not have"
                             ) from None
        spec, data = attribute(name, value, reader.where())
        specs.append(spec)
        values.append(data)
    slots = codegen.env_slots(specs)
    env = np.zeros(max(1, sum(1 + s.ndim if s.ndim else 1 for s in specs)), dtype=np.int64)
    for spec, data, at in zip(specs, values, slots):
        if spec.ndim:
            env[at] = data.ctypes.data
            env[at + 1:at + 1 + spec.ndim] = data.shape
        elif spec.code == "f8":
            env.view(np.float64)[at] = float(data)
        elif spec.code == "u8":
            env.view(np.uint64)[at] = int(data) & 0xFFFFFFFFFFFFFFFF
        else:
            env[at] = int(data)
    return specs, env, (env, values)


_LOCATION = re.compile(r'File "([^"]+)", line (\d+)')


def _explain(message: str, path: str, origins: dict, plan: source.Plan) -> UsageError:
    """The compiler's message as ``FILE:LINE: Class.method: what``, at the user's line."""
    where = None
    for gen_path, line in _LOCATION.findall(message):
        if os.path.basename(gen_path) != os.path.basename(path):
            continue
        origin = origins.get(int(line))
        if origin is not None:
            where = f"{origin.path}:{origin.line}: {origin.qualname}"
            break
    own = re.search(re.escape(OWN) + r"(.*)", message)
    if own:
        return UsageError(f"{plan.methods['children'].where()}: {own.group(1).strip()}")
    if where is None:          # the generated glue: the nodes children() yields do not fit the root
        children = plan.methods["children"]
        where = (f"{children.where()}: the children it yields do not match the root's layout "
                 "(the same number of elements, numbers and arrays in the same places)")
    return UsageError(f"{where}: cannot be compiled: {_first_lines(message)}")


def _first_lines(message: str) -> str:
    """The compiler's own words (its first statement, and what it names after a colon), without
    its trace of internal frames."""
    words = [line.strip() for line in message.splitlines()]
    words = [w for w in words if w and not w.startswith("Failed in ")]
    keep = words[:1]
    if keep and keep[0].endswith(":") and len(words) > 1:
        keep.append(words[1].lstrip("> ").strip())
    return " ".join(keep)[:400]
