"""A model from the user's own Python file: ``--model FILE.py:NAME`` runs the file and calls NAME(),
which returns a :class:`~yewpy.apps.dnn.models.Model` or a ``(torch_module, example_inputs)`` pair
that :func:`from_torch` traces (torch is imported only then, never required)."""

from __future__ import annotations

import importlib.util
import math
import numbers
import os
import runpy
import sys
from dataclasses import fields
from typing import Any

from yewpy.apps.dnn.models import Block, Model, size_problem
from yewpy.errors import UsageError


def _one_line(exc: BaseException) -> str:
    """``Type: message`` of an exception on one line (the user's own error, without a traceback)."""
    text = " ".join(str(exc).split())
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__


def _where(path: str, exc: BaseException) -> str:
    """``path:LINE`` at the innermost line of ``path`` that the exception passed through, else ``path``."""
    line = exc.lineno if isinstance(exc, SyntaxError) and exc.filename == path else None
    tb = exc.__traceback__
    while tb is not None:
        if os.path.abspath(tb.tb_frame.f_code.co_filename) == os.path.abspath(path):
            line = tb.tb_lineno
        tb = tb.tb_next
    return path if line is None else f"{path}:{line}"


def python_model(path: str, name: str) -> Model:
    """Run the Python file ``path`` (its folder importable meanwhile) and call its ``name()``: a
    :class:`Model` is planned as it is, a ``(torch_module, example_inputs)`` pair goes through
    :func:`from_torch`. Every failure, the user's own exceptions included, is one UsageError line
    naming the file (and the line of the file the exception came from)."""
    if not name.isidentifier():
        raise UsageError(f"--model {path}:{name}: NAME must be the name of a function in {path}")
    if not os.path.isfile(path):
        raise UsageError(f"{path}: no such file (--model {path}:{name})")
    folder = os.path.dirname(os.path.abspath(path))
    sys.path.insert(0, folder)
    try:
        try:
            namespace = runpy.run_path(path, run_name="__yewpy_model__")
        except (Exception, SystemExit) as exc:  # noqa: BLE001 - the user's file: any error is theirs
            raise UsageError(f"{_where(path, exc)}: running the file raised {_one_line(exc)}") from None
        build = namespace.get(name)
        if not callable(build):
            found = sorted(k for k, v in namespace.items() if callable(v) and not k.startswith("_")
                           and getattr(v, "__module__", None) == "__yewpy_model__")
            what = "no" if build is None else "a non-callable"
            raise UsageError(f"{path}: {what} {name!r} in the file (its functions: "
                             f"{', '.join(found) or 'none'})")
        try:
            made = build()
        except (Exception, SystemExit) as exc:  # noqa: BLE001
            raise UsageError(f"{_where(path, exc)}: {name}() raised {_one_line(exc)}") from None
    finally:
        if folder in sys.path:
            sys.path.remove(folder)
    if isinstance(made, (tuple, list)) and len(made) == 2 and not isinstance(made, Model):
        if importlib.util.find_spec("torch") is None:
            raise UsageError(f"{path}: {name}() returned a (module, example_inputs) pair: from_torch needs "
                             "PyTorch (pip install torch)")
        module, inputs = made
        try:
            made = from_torch(module, tuple(inputs) if isinstance(inputs, (tuple, list)) else (inputs,))
        except Exception as exc:  # noqa: BLE001 - tracing the user's module
            raise UsageError(f"{path}: from_torch could not trace what {name}() returned: "
                             f"{_one_line(exc)}") from None
    return _built(f"{path}: {name}()", made)


def _built(where: str, model: Any) -> Model:
    """``model`` if the planner can take it: a Model of Blocks with finite, non-negative numbers, some
    FLOPs, a positive integer seq, at most MAX_BLOCKS blocks and MAX_PARAMS parameters."""
    if not isinstance(model, Model):
        raise UsageError(f"{where} returned {type(model).__name__}, not a Model or a "
                         "(torch_module, example_inputs) pair")
    seq = model.seq
    if not isinstance(seq, numbers.Integral) or isinstance(seq, bool) or seq < 1:
        raise UsageError(f"{where} returned a model whose seq is {seq!r}, not a positive integer")
    blocks = model.blocks
    if not isinstance(blocks, list) or not blocks or not all(isinstance(b, Block) for b in blocks):
        raise UsageError(f"{where} returned a model whose blocks are not a non-empty list of Block")
    for block in blocks:
        for item in fields(Block):
            value = getattr(block, item.name)
            if item.name in ("name", "tied"):
                continue
            if not isinstance(value, numbers.Real) or isinstance(value, bool) or not math.isfinite(value) \
                    or value < 0:
                raise UsageError(f"{where} returned block {block.name!r} with {item.name} = {value!r}: "
                                 "a finite number at least 0 is needed")
    if not any(b.flops_per_token > 0 or b.flops_per_token_sq > 0 for b in blocks):
        raise UsageError(f"{where} returned a model whose blocks all have zero FLOPs: nothing to plan")
    problem = size_problem(model)
    if problem:
        raise UsageError(f"{where} returned a model of {problem}")
    return model


def from_torch(module: Any, example_inputs: tuple) -> Model:  # pragma: no cover - torch is optional
    """Trace ``module`` with torch.fx into one block per top-level child module (in call order),
    and one per element of a top-level ``ModuleList``/``Sequential`` (``blocks.0``, ``blocks.1``, ...),
    so the layers of a transformer become the pipeline's blocks.

    torch is imported here only and is never required. Steps: ``symbolic_trace`` + ``ShapeProp``
    give each node's output size; ``FlopCounterMode`` run on the module gives FLOPs per child
    module; parameters come from ``named_parameters``. Activation bytes per token are the summed
    outputs of the block's nodes (an over-estimate: views share storage), all kept un-sharded
    (``act_replicated``). Use the meta device for big models (no memory is allocated).
    """
    import torch
    from torch.fx import symbolic_trace
    from torch.fx.passes.shape_prop import ShapeProp
    from torch.utils.flop_counter import FlopCounterMode

    traced = symbolic_trace(module)
    ShapeProp(traced).propagate(*example_inputs)
    with FlopCounterMode(display=False) as counter:
        module(*example_inputs)
    per_module = counter.get_flop_counts()
    first = example_inputs[0]
    seq = int(first.shape[1]) if first.dim() > 1 else 1
    tokens = int(first.shape[0]) * seq
    containers = {name for name, child in module.named_children()
                  if isinstance(child, (torch.nn.ModuleList, torch.nn.Sequential))}
    order: list[str] = []
    outputs: dict[str, list] = {}
    for node in traced.graph.nodes:
        if node.op != "call_module":
            continue
        path = str(node.target).split(".")
        top = ".".join(path[:2]) if path[0] in containers and len(path) > 1 else path[0]
        if top not in outputs:
            order.append(top)
            outputs[top] = []
        meta = node.meta.get("tensor_meta")
        if meta is not None and hasattr(meta, "shape"):
            outputs[top].append(int(torch.Size(meta.shape).numel()) * meta.dtype.itemsize)
    root = type(module).__name__
    blocks = []
    for top in order:
        params = sum(p.numel() for p in module.get_submodule(top).parameters())
        flops = sum(per_module.get(f"{root}.{top}", {}).values())
        last = outputs[top][-1] if outputs[top] else 0
        blocks.append(Block(top, params, flops / tokens, 0.0, sum(outputs[top]) / tokens, 0.0, 0.0,
                            last / tokens / 2))
    return Model(root, blocks, seq)
