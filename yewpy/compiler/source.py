"""Reading a search class's methods for compilation: what they use, what is refused, and the
text of each method with ``self`` taken out.

Every refusal is a :class:`yewpy.UsageError` that reads ``FILE:LINE: Class.method: what`` and
names the construct; it comes when the class is decorated, before anything runs.  Every line
of the rewritten text knows the user's line it came from, so a compiler message about a
generated line maps back to the user's line.
"""

from __future__ import annotations

import ast
import builtins
import inspect
import io
import textwrap
import tokenize
import types
from dataclasses import dataclass, field
from typing import Any

from yewpy.compiler import scratch
from yewpy.errors import UsageError

#: Modules compiled methods may use by name (numba compiles their functions).
MODULES = ("math", "cmath", "numpy")

#: Constructs refused before the compiler sees them, with what to say.
_REFUSED = {
    ast.Lambda: "a lambda",
    ast.FunctionDef: "a function defined inside a compiled method",
    ast.AsyncFunctionDef: "an async function",
    ast.ClassDef: "a class defined inside a compiled method",
    ast.Global: "a global statement",
    ast.Nonlocal: "a nonlocal statement",
    ast.YieldFrom: "yield from",
    ast.Await: "await",
    ast.With: "a with statement",
    ast.AsyncWith: "an async with statement",
    ast.AsyncFor: "an async for loop",
    ast.Try: "a try statement",
    ast.Dict: "a dict",
    ast.DictComp: "a dict comprehension",
    ast.Set: "a set",
    ast.SetComp: "a set comprehension",
    ast.JoinedStr: "an f-string",
}


@dataclass
class Method:
    """One compiled method: where it is, the names it reads, and its rewritten text."""

    name: str
    qualname: str
    path: str
    first_line: int
    text: str = ""
    lines: list = field(default_factory=list)       # the user's line of each line of ``text``
    attributes: set = field(default_factory=set)
    helpers: set = field(default_factory=set)
    globals: dict = field(default_factory=dict)     # name -> ("module", modname) or ("constant", value)

    def where(self, line: int | None = None) -> str:
        return f"{self.path}:{self.first_line if line is None else line}: {self.qualname}"


@dataclass
class Plan:
    """Everything compiled for one class: its methods (the kind's and the helpers they call)."""

    cls: type
    methods: dict                # name -> Method, kind methods first
    attributes: list             # the attribute names every compiled method receives, sorted


def refuse(method: Method, node: ast.AST | None, what: str) -> UsageError:
    line = method.first_line + node.lineno - 1 if node is not None and hasattr(node, "lineno") else None
    return UsageError(f"{method.where(line)}: {what}")


def plan(cls: type, entry: list, stoppable: bool = False) -> Plan:
    """Read ``entry`` (the kind's methods to compile) and every helper method they call.

    ``children`` becomes a plain function that hands each child to ``_emit`` (see
    :func:`_emitter`); ``stoppable``: it returns after a child once the sink's stop flag is set."""
    methods: dict = {}
    todo = list(entry)
    while todo:
        name = todo.pop(0)
        if name in methods:
            continue
        method = _read(cls, name, generator=(name == "children"))
        methods[name] = method
        todo.extend(sorted(method.helpers))
    attributes = sorted(set().union(*(m.attributes for m in methods.values())))
    if any(_allocations(m) for m in methods.values()):
        attributes.append(scratch.NAME)             # see yewpy.compiler.scratch
    for method in methods.values():
        method.lines = list(range(method.first_line, method.first_line + method.text.count("\n") + 1))
        if method.name == "children":
            _emitter(method, attributes, stoppable)
        method.text = _rewrite(method, attributes, ["_out"] if method.name == "children" else [])
    return Plan(cls, methods, attributes)


def _read(cls: type, name: str, generator: bool) -> Method:
    func = inspect.getattr_static(cls, name, None)
    owner = next((k for k in cls.__mro__ if name in vars(k)), cls)
    qualname = f"{owner.__name__}.{name}"
    if isinstance(func, (staticmethod, classmethod)) or not isinstance(func, types.FunctionType):
        raise UsageError(f"{qualname}: @yewpy.jit compiles plain methods (def {name}(self, ...)); "
                         f"{name} is {type(func).__name__}")
    code = func.__code__
    path = code.co_filename
    try:
        lines, first = inspect.getsourcelines(func)
    except (OSError, TypeError):
        raise UsageError(f"{path}:{code.co_firstlineno}: {qualname}: @yewpy.jit compiles a method from its "
                         "source, and the source of this one cannot be read") from None
    method = Method(name, qualname, path, first)
    source = textwrap.dedent("".join(lines))
    tree = ast.parse(source)
    fn = tree.body[0]
    if not isinstance(fn, ast.FunctionDef):
        raise refuse(method, fn, "is not a plain def")
    _check_signature(method, fn)
    _check_body(method, fn, generator, cls)
    method.text = source
    return method


def _check_signature(method: Method, fn: ast.FunctionDef) -> None:
    args = fn.args
    if args.vararg or args.kwarg or args.kwonlyargs or args.posonlyargs:
        raise refuse(method, fn, "takes *args, **kwargs or keyword-only arguments; compiled methods take "
                                 "plain positional arguments")
    if not args.args or args.args[0].arg != "self":
        raise refuse(method, fn, "must take self as its first argument")
    if fn.decorator_list:
        raise refuse(method, fn.decorator_list[0], "is decorated; compiled methods are plain defs")


def _local_names(fn: ast.FunctionDef) -> set:
    names = {a.arg for a in fn.args.args}
    for node in ast.walk(fn):
        if isinstance(node, ast.Name) and isinstance(node.ctx, (ast.Store, ast.Del)):
            names.add(node.id)
    return names


def _check_body(method: Method, fn: ast.FunctionDef, generator: bool, cls: type) -> None:
    local = _local_names(fn)
    parents = {child: parent for parent in ast.walk(fn) for child in ast.iter_child_nodes(parent)}
    yields, returns = [], []
    for node in ast.walk(fn):
        if node is fn:
            continue
        for kind, what in _REFUSED.items():
            if isinstance(node, kind):
                raise refuse(method, node, f"uses {what}, which @yewpy.jit does not compile")
        if isinstance(node, ast.Constant) and isinstance(node.value, (str, bytes)):
            if not (isinstance(parents.get(node), ast.Expr)):          # a docstring is fine
                raise refuse(method, node, "uses a string; compiled methods work on numbers")
        if isinstance(node, ast.Yield):
            yields.append(node)
        if isinstance(node, ast.Return) and node.value is not None:
            returns.append(node)
        if isinstance(node, ast.Name):
            _check_name(method, node, parents, local, cls)
    if generator and not yields:
        raise refuse(method, fn, "is not a generator; write children() with yield")
    if generator and returns:
        raise refuse(method, returns[0], "returns a value; children() is a generator: yield each child "
                                         "and end with a bare return")
    if not generator and yields:
        raise refuse(method, yields[0], "yields; only children() is a generator")


def _check_name(method: Method, node: ast.Name, parents: dict, local: set, cls: type) -> None:
    parent = parents.get(node)
    if node.id == "self":
        if not (isinstance(parent, ast.Attribute) and parent.value is node):
            raise refuse(method, node, "uses self itself; compiled methods read self.attribute and call "
                                       "self.method(...) only")
        if not isinstance(parent.ctx, ast.Load):
            raise refuse(method, node, f"assigns to self.{parent.attr}; compiled methods may not change the "
                                       "search object")
        if parent.attr == scratch.NAME:
            raise refuse(method, node, f"reads self.{scratch.NAME}, a name @yewpy.jit keeps for itself")
        member = inspect.getattr_static(cls, parent.attr, None)
        if isinstance(member, types.FunctionType):
            call = parents.get(parent)
            if not (isinstance(call, ast.Call) and call.func is parent):
                raise refuse(method, node, f"uses the method self.{parent.attr} without calling it")
            if parent.attr == "children":
                raise refuse(method, node, "calls self.children(); compiled methods may call the class's "
                                           "other methods, not the generator")
            if call.keywords:
                raise refuse(method, call, f"calls self.{parent.attr} with keyword arguments")
            method.helpers.add(parent.attr)
        elif member is not None and not isinstance(member, (int, float, bool, tuple)):
            raise refuse(method, node, f"reads self.{parent.attr}, a {type(member).__name__} of the class; "
                                       "compiled methods read numbers, tuples, lists and arrays")
        else:
            method.attributes.add(parent.attr)
        return
    if not isinstance(node.ctx, ast.Load) or node.id in local or node.id in method.globals:
        return
    scope = _globals_of(method, cls)
    if node.id in scope:
        value = scope[node.id]
        if isinstance(value, types.ModuleType):
            if value.__name__ not in MODULES:
                raise refuse(method, node, f"uses the module {value.__name__}; compiled methods may use "
                                           "math, cmath and numpy")
            method.globals[node.id] = ("module", value.__name__)
        elif isinstance(value, (bool, int, float)) and not isinstance(value, type):
            method.globals[node.id] = ("constant", value)
        else:
            raise refuse(method, node, f"uses {node.id}, a {type(value).__name__} from its module; compiled "
                                       "methods may use numbers, math, cmath, numpy and the class's own "
                                       "methods")
    elif not hasattr(builtins, node.id):
        raise refuse(method, node, f"uses the name {node.id}, which is not defined")


def _globals_of(method: Method, cls: type) -> dict:
    func = inspect.getattr_static(cls, method.name)
    return func.__globals__


def _rewrite(method: Method, attributes: list, leading: list) -> str:
    """The method as a plain function ``m_NAME(*leading, self_a, ..., args)``, line for line."""
    params = ", ".join(f"self_{a}" for a in attributes)
    first = ", ".join(leading + [f"self_{a}" for a in attributes])
    tokens = list(tokenize.generate_tokens(io.StringIO(method.text).readline))
    edits: list = []                    # (first token, last token, replacement)
    arena = f"self_{scratch.NAME}" if scratch.NAME in attributes else None
    aliases = _numpy_aliases(method)
    i = 0
    seen_def = False
    while i < len(tokens):
        tok = tokens[i]
        site = _allocation(tokens, i, aliases) if arena else None
        if site is not None:
            last, call = site
            edits.append((tok, tokens[last], call.format(arena=arena)))
            i = last + 1
            continue
        if not seen_def and tok.type == tokenize.NAME and tok.string == "def":
            seen_def = True
            name, self_tok, after = tokens[i + 1], tokens[i + 3], tokens[i + 4]
            edits.append((name, name, f"m_{name.string}"))
            if after.string == "," and not first:
                edits.append((self_tok, after, ""))
            else:
                edits.append((self_tok, self_tok, first))
            i += 5
            continue
        if (tok.type == tokenize.NAME and tok.string == "self" and i + 2 < len(tokens)
                and tokens[i + 1].string == "." and tokens[i + 2].type == tokenize.NAME):
            attr = tokens[i + 2].string
            if attr in method.helpers and i + 3 < len(tokens) and tokens[i + 3].string == "(":
                closing = tokens[i + 4].string == ")"
                tail = "" if closing or not params else ", "
                edits.append((tok, tokens[i + 3], f"m_{attr}({params}{tail}"))
                i += 4
                continue
            edits.append((tok, tokens[i + 2], f"self_{attr}"))
            i += 3
            continue
        i += 1
    return _apply(method.text, edits)


def _numpy_aliases(method: Method) -> set:
    return {name for name, (what, value) in method.globals.items() if (what, value) == ("module", "numpy")}


def _allocation(tokens: list, i: int, aliases: set) -> tuple | None:
    """An array allocation starting at token ``i`` that the scratch arena serves: ``np.empty(``
    (and the other :data:`scratch.CONSTRUCTORS`), ``name.copy()`` or ``self.name.copy()``.
    Returns the last token's index and the replacement, with ``{arena}`` to fill in."""
    def text(k: int) -> str:
        return tokens[k].string if k < len(tokens) else ""

    if tokens[i].type != tokenize.NAME or (i > 0 and text(i - 1) == "."):
        return None
    name = tokens[i].string
    if name in aliases and text(i + 1) == "." and text(i + 2) in scratch.CONSTRUCTORS and text(i + 3) == "(":
        return i + 3, f"_scratch_.{text(i + 2)}({{arena}}, "
    if name == "self" and text(i + 1) == "." and tokens[i + 2].type == tokenize.NAME:
        subject, at = f"self_{text(i + 2)}", i + 3
    else:
        subject, at = name, i + 1
    if [text(at), text(at + 1), text(at + 2), text(at + 3)] == [".", "copy", "(", ")"]:
        return at + 3, f"_scratch_.copy({{arena}}, {subject})"
    return None


def _allocations(method: Method) -> bool:
    """Whether the method makes an array the scratch arena can serve."""
    tokens = list(tokenize.generate_tokens(io.StringIO(method.text).readline))
    aliases = _numpy_aliases(method)
    return any(_allocation(tokens, i, aliases) for i in range(len(tokens)))


def _emitter(method: Method, attributes: list, stoppable: bool) -> None:
    """``children`` as a function that writes its children instead of yielding them.

    ``yield CHILD`` becomes ``_k = _emit(_out, _k, (CHILD), self_a, ...)`` (the generated
    ``_emit`` stores the child in the frame's buffer and returns the count), a bare ``return``
    becomes ``return _k``, ``_k = 0`` opens the body and ``return _k`` closes it; with
    ``stoppable``, a line ``if _out[5][0]: return _k`` follows each ``yield`` on a line of its own
    (the sink's stop flag: the engine breaks at that child).  numba's generators cost about 15
    times a plain loop per child, and leak when abandoned.  Lines are mapped to the user's."""
    tree = ast.parse(method.text)
    fn = tree.body[0]
    assert isinstance(fn, ast.FunctionDef)
    rows = method.text.split("\n")
    parents = {child: parent for parent in ast.walk(fn) for child in ast.iter_child_nodes(parent)}
    if fn.body[0].lineno == fn.lineno:
        raise refuse(method, fn, "has its body on the def line; @yewpy.jit needs it on lines of its own")
    edits: dict = {}
    stops: dict = {}
    tail = "".join(f", self_{a}" for a in attributes)

    def column(line: int, offset: int) -> int:            # ast counts UTF-8 bytes
        return len(rows[line - 1].encode()[:offset].decode(errors="ignore"))

    for node in ast.walk(fn):
        if isinstance(node, ast.Yield):
            if not isinstance(parents.get(node), ast.Expr):
                raise refuse(method, node, "uses yield as an expression; yield each child as a statement")
            if node.value is None:
                raise refuse(method, node, "yields nothing; yield each child, a tuple like the root")
            assert node.end_lineno is not None and node.end_col_offset is not None     # Python >= 3.8
            start, end = column(node.lineno, node.col_offset), column(node.end_lineno, node.end_col_offset)
            edits.setdefault(node.lineno, []).append((start, start + 5, "_k = _emit(_out, _k, ("))
            edits.setdefault(node.end_lineno, []).append((end, end, f"){tail})"))
            first, last = rows[node.lineno - 1], rows[node.end_lineno - 1]
            if first[:start].strip() == "" and last[end:].split("#")[0].strip() == "":
                stops[node.end_lineno] = first[:start]
        elif isinstance(node, ast.Return):          # a bare return (a valued one is refused)
            start = column(node.lineno, node.col_offset)
            edits.setdefault(node.lineno, []).append((start, start + 6, "return _k"))
    for line, changes in edits.items():
        row = rows[line - 1]
        for start, end, text in sorted(changes, reverse=True):
            row = row[:start] + text + row[end:]
        rows[line - 1] = row
    body_line = fn.body[0].lineno
    indent = rows[body_line - 1][:column(body_line, fn.body[0].col_offset)]
    out, lines = [], []
    for k, (row, user) in enumerate(zip(rows, method.lines), 1):
        if k == body_line:
            out.append(indent + "_k = 0")
            lines.append(user)
        out.append(row)
        lines.append(user)
        if stoppable and k in stops:
            out.append(stops[k] + "if _out[5][0]: return _k")
            lines.append(user)
    while out and not out[-1].strip():
        out.pop()
        lines.pop()
    out.append(indent + "return _k")
    lines.append(lines[-1])
    method.text, method.lines = "\n".join(out) + "\n", lines + [lines[-1]]


def _apply(text: str, edits: list) -> str:
    """``text`` with each edit's token span (first token's start to last token's end) replaced."""
    starts = [0]
    for line in text.splitlines(keepends=True):
        starts.append(starts[-1] + len(line))
    out, cursor = [], 0
    for first, last, new in edits:
        begin = starts[first.start[0] - 1] + first.start[1]
        end = starts[last.end[0] - 1] + last.end[1]
        out.append(text[cursor:begin])
        out.append(new)
        cursor = end
    out.append(text[cursor:])
    return "".join(out)


def describe(plan: Plan) -> str:
    """The rewritten methods, for the cache key."""
    return "\n".join(m.text for m in plan.methods.values())


def globals_of(plan: Plan) -> dict:
    merged: dict[str, Any] = {}
    for m in plan.methods.values():
        merged.update(m.globals)
    return merged
