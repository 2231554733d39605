"""A model from what a user names: a preset, a JSON model file, a Hugging Face ``config.json``,
or ``FILE.py:NAME`` (the forms are described in :mod:`models`).

Apart from :mod:`models` because it reads every form, and two of them (:mod:`hf_config`,
:mod:`python_model`) build on :mod:`models` themselves.
"""

from __future__ import annotations

from typing import Any

from yewpy.apps.dnn import hf_config, jsonfile
from yewpy.apps.dnn.models import MAX_BLOCKS, PRESETS, Block, Model, size_problem, transformer
from yewpy.apps.dnn.python_model import python_model
from yewpy.errors import InputError, UsageError

BLOCK_KEYS = {"name": str, "params": float, "flops_per_token": float, "flops_per_token_sq": float,
              "act_replicated": float, "act_sharded": float, "act_attention": float, "boundary": float,
              "tp_allreduces": int, "tied": bool, "expert_params": float, "experts": int, "a2a": float,
              "kv": float, "repeat": int}
TRANSFORMER_KEYS = {"layers": int, "hidden": int, "heads": int, "vocab": int, "seq": int, "ffn": int,
                    "kv_heads": int, "swiglu": bool, "bias": bool, "tied": bool, "positions": bool,
                    "head_dim": int, "experts": int, "top_k": int, "decoder_layers": int, "classes": int,
                    "patch_params": int}



def _unknown(path: str, obj: jsonfile.Obj, allowed: Any) -> None:
    for key in obj:
        if key not in allowed:
            raise InputError(path, obj.line, f"unknown field {key!r}")


def _sized(path: str, line: int, model: Model) -> Model:
    """``model`` if :func:`size_problem` finds nothing, else the problem at ``path:line``."""
    problem = size_problem(model)
    if problem:
        raise InputError(path, line, problem)
    return model


def _transformer_file(path: str, name: str, spec: jsonfile.Obj) -> Model:
    """The ``{"transformer": {...}}`` form: :func:`transformer`'s keys, checked to describe a real shape."""
    _unknown(path, spec, TRANSFORMER_KEYS)
    required = ("layers", "hidden", "heads", "vocab", "seq")
    kwargs = {key: jsonfile.field(path, spec, key, kind, None if key in required else (
              False if kind is bool else 0), minimum=0 if kind is not bool else None,
              maximum=MAX_BLOCKS if key in ("layers", "decoder_layers") else jsonfile.MAX_NUMBER)
              for key, kind in TRANSFORMER_KEYS.items() if key in spec or key in required}
    if kwargs["layers"] < 1 or kwargs["hidden"] < 1 or kwargs["heads"] < 1 or kwargs["seq"] < 1:
        raise InputError(path, spec.line, "layers, hidden, heads and seq must be positive")
    heads, hidden = kwargs["heads"], kwargs["hidden"]
    if "head_dim" in kwargs and kwargs["head_dim"] < 1:
        raise InputError(path, spec.line, "head_dim must be positive")
    if "head_dim" not in kwargs and hidden % heads:
        raise InputError(path, spec.line, f"heads = {heads} does not divide hidden = {hidden} "
                                          "(give head_dim for such a shape)")
    kv = kwargs.get("kv_heads", heads)
    if kv < 1 or heads % kv:
        raise InputError(path, spec.line, f"kv_heads = {kv} must be positive and divide heads = {heads}")
    top_k = kwargs.get("top_k", 2)
    if top_k < 1 or (kwargs.get("experts", 0) and top_k > kwargs["experts"]):
        raise InputError(path, spec.line, f"top_k = {top_k} must be positive and at most experts = "
                                          f"{kwargs.get('experts', 0)}")
    return transformer(name, **kwargs)


def read_model(path: str) -> Model:
    """A model from a JSON file (see the module docstring); errors name the offending line."""
    doc = jsonfile.load(path)
    if hf_config.is_hf_config(doc):
        return _sized(path, doc.line, hf_config.from_hf_config(path, doc))
    if not isinstance(doc, jsonfile.Obj):
        raise InputError(path, 1, "a model file is a JSON object")
    name = jsonfile.field(path, doc, "name", str, str(path), None)
    if "transformer" in doc:
        _unknown(path, doc, {"name", "transformer"})
        spec = doc["transformer"]
        if not isinstance(spec, jsonfile.Obj):
            raise InputError(path, doc.line, "'transformer' must be an object")
        return _sized(path, spec.line, _transformer_file(path, name, spec))
    _unknown(path, doc, {"name", "seq", "blocks"})
    seq = jsonfile.field(path, doc, "seq", int, minimum=1)
    raw = doc.get("blocks")
    if not isinstance(raw, list) or not raw:
        raise InputError(path, doc.line, "'blocks' must be a non-empty list of objects")
    blocks = []
    for obj in raw:
        if not isinstance(obj, jsonfile.Obj):
            raise InputError(path, doc.line, f"each block must be an object, got {obj!r}")
        _unknown(path, obj, BLOCK_KEYS)
        values = {}
        for key, kind in BLOCK_KEYS.items():
            if key in ("name", "repeat"):
                continue
            required = key in ("params", "flops_per_token", "boundary")
            default = None if required else (False if kind is bool else 0)
            values[key] = jsonfile.field(path, obj, key, kind, default, None if kind is bool else 0)
        if values["expert_params"] > values["params"]:
            raise InputError(path, obj.line, f"expert_params = {values['expert_params']:g} is more than the "
                                             f"block's params = {values['params']:g} (experts hold a part)")
        if values["expert_params"] and not values["experts"]:
            raise InputError(path, obj.line, "expert_params needs experts (how many experts share them)")
        label = jsonfile.field(path, obj, "name", str, f"block{len(blocks)}", None)
        repeat = jsonfile.field(path, obj, "repeat", int, 1, 1, MAX_BLOCKS)
        if len(blocks) + repeat > MAX_BLOCKS:
            raise InputError(path, obj.line, f"more than the {MAX_BLOCKS} blocks a model file may make")
        blocks += [Block(label if repeat == 1 else f"{label}{i}", **values) for i in range(repeat)]
    if not any(b.flops_per_token > 0 or b.flops_per_token_sq > 0 for b in blocks):
        raise InputError(path, doc.line, "every block has zero FLOPs: there is nothing to plan "
                                         "(give flops_per_token)")
    return _sized(path, doc.line, Model(name, blocks, seq))


def load_model(spec: str) -> Model:
    """A preset name, a JSON file path, or ``FILE.py:NAME`` (see :func:`python_model`)."""
    if spec in PRESETS:
        return transformer(spec, **PRESETS[spec])
    path, colon, name = spec.rpartition(":")
    if colon and path.endswith(".py"):
        return python_model(path, name)
    if spec.endswith(".py"):
        raise UsageError(f"--model {spec}: name the function that builds the model, as {spec}:NAME")
    if spec.endswith(".json") or "/" in spec:
        return read_model(spec)
    raise UsageError(f"unknown model {spec!r}: give a JSON file, FILE.py:NAME or one of {', '.join(PRESETS)}")
