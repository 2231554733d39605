"""Hugging Face ``config.json`` files as models: each family's keys mapped onto :func:`transformer`.

The supported families are llama, mistral, mixtral, qwen2, gpt2, gpt_neox, falcon and t5. The mapping
is a small table of our own, not ``transformers``: a config is read offline, and the planner does not
pull in a heavy dependency for a few integers. Where the config is silent the family's
``transformers`` default is used (``tie_word_embeddings``, ``max_position_embeddings``, ...). Errors
name the line of the offending key (``jsonfile`` keeps the line of each member's value).

Where transformer() cannot say it directly, the exact per-layer parameter difference is added to each
``layer`` block afterwards (:func:`_add_layer_params`): its ``bias`` flag is all-or-nothing and also
stands for LayerNorm (weight + bias) against RMSNorm (weight only). So Qwen2 is built with
``bias=False`` (RMSNorm, no o_proj/MLP bias) plus its q/k/v biases (A + 2*kv_dim per layer); Llama's
``attention_bias``/``mlp_bias``, GPT-NeoX's ``attention_bias: false`` and Falcon's LayerNorm count are
handled the same way. Bias FLOPs are ignored, as transformer() ignores them everywhere. Left out or
approximate (each under 0.001% of the parameters): the final norm; T5's relative-position bias tables
(32 buckets x heads in the first encoder and decoder layers); a T5 decoder layer's cross-attention
norm, counted as 2h by transformer() where T5's RMSNorm has h.
"""

from __future__ import annotations

import json
from dataclasses import replace
from typing import Any, Callable

from yewpy.apps.dnn import jsonfile
from yewpy.apps.dnn.models import MAX_BLOCKS, Model, transformer
from yewpy.errors import InputError

__all__ = ["FAMILIES", "is_hf_config", "from_hf_config"]

# architectures[0] prefix -> model_type, used only when a config has no "model_type" (old files)
_ARCHITECTURES = {"LlamaFor": "llama", "MistralFor": "mistral", "MixtralFor": "mixtral", "Qwen2For": "qwen2",
                  "GPT2": "gpt2", "GPTNeoXFor": "gpt_neox", "FalconFor": "falcon", "T5": "t5"}
# the keys that count layers (a block each: at most MAX_BLOCKS); any other integer is at most 2**53
_LAYER_KEYS = {"num_hidden_layers", "n_layer", "num_layers", "num_decoder_layers"}


def is_hf_config(doc: Any) -> bool:
    """Whether a parsed JSON document is a Hugging Face config (it has "model_type" or "architectures")."""
    return isinstance(doc, dict) and ("model_type" in doc or "architectures" in doc)


class _Keys:
    """Typed reads of a config's top-level keys; errors name the key's line (the object's if missing)."""

    def __init__(self, path: str, doc: jsonfile.Obj, family: str) -> None:
        self.path, self.doc, self.family = path, doc, family
        self.lines = getattr(doc, "key_lines", {})

    def line(self, key: str) -> int:
        return self.lines.get(key, getattr(self.doc, "line", 1))

    def error(self, key: str | None, message: str) -> InputError:
        return InputError(self.path, self.line(key) if key else getattr(self.doc, "line", 1), message)

    def key(self, names: tuple[str, ...], required: bool) -> str | None:
        """The first of ``names`` with a non-null value; a required key that is null is an error."""
        for name in names:
            if self.doc.get(name) is not None:
                return name
        if required:
            null = next((name for name in names if name in self.doc), None)
            if null is not None:
                raise self.error(null, f"{null!r} must be a positive integer, got null")
            also = f" (or {', '.join(repr(n) for n in names[1:])})" if len(names) > 1 else ""
            raise self.error(None, f"missing {names[0]!r}{also} in a {self.family} config")
        return None

    def integer(self, *names: str, default: int | None = None) -> int:
        """A positive integer (a bool, float or string is refused); ``default`` None means required."""
        key = self.key(names, default is None)
        if key is None:
            return int(default)  # type: ignore[arg-type]
        value = self.doc[key]
        if isinstance(value, bool) or not isinstance(value, int):
            raise self.error(key, f"{key!r} must be a positive integer, got {json.dumps(value)}")
        if value < 1:
            raise self.error(key, f"{key!r} must be a positive integer, got {value}")
        limit = MAX_BLOCKS if key in _LAYER_KEYS else jsonfile.MAX_NUMBER
        if value > limit:
            raise self.error(key, f"{key!r} must be at most {limit}, got {value}")
        return value

    def flag(self, name: str, default: bool) -> bool:
        return self._typed(name, default, bool, "true or false")

    def text(self, name: str, default: str) -> str:
        return self._typed(name, default, str, "a string")

    def _typed(self, name: str, default: Any, kind: type, what: str) -> Any:
        """``name``'s value of type ``kind`` (null or missing: ``default``)."""
        if self.doc.get(name) is None:
            return default
        value = self.doc[name]
        if not isinstance(value, kind):
            raise self.error(name, f"{name!r} must be {what}, got {json.dumps(value)}")
        return value

    def heads(self, hidden: int, *names: str, head_dim: bool = False) -> tuple[int, int | None]:
        """(heads, the "head_dim" key or None); without a head_dim the heads must divide the hidden size."""
        heads = self.integer(*names)
        dim = (self.integer("head_dim", default=0) or None) if head_dim else None
        if dim is None and hidden % heads:
            key = self.key(names, True)
            given = " (and no 'head_dim' is given)" if head_dim else ""
            raise self.error(key, f"{key!r} = {heads} does not divide the hidden size {hidden}{given}")
        return heads, dim

    def kv_heads(self, heads: int, names: tuple[str, ...]) -> int:
        kv = self.integer(*names, default=heads)
        if heads % kv:
            key = self.key(names, True)
            raise self.error(key, f"{key!r} = {kv} does not divide the {heads} attention heads")
        return kv


# A family: config -> (transformer() keyword arguments, parameters added to every layer block)
Family = Callable[[_Keys], tuple[dict[str, Any], int]]


def _attention_dims(hidden: int, heads: int, kv: int, head_dim: int | None) -> tuple[int, int]:
    a_dim = hidden if head_dim is None else heads * head_dim
    return a_dim, a_dim * kv // heads


def _llama_like(k: _Keys, seq_default: int, moe: bool = False) -> dict[str, Any]:
    hidden = k.integer("hidden_size")
    heads, head_dim = k.heads(hidden, "num_attention_heads", head_dim=True)
    out = dict(layers=k.integer("num_hidden_layers"), hidden=hidden, heads=heads, head_dim=head_dim,
               kv_heads=k.kv_heads(heads, ("num_key_value_heads",)), ffn=k.integer("intermediate_size"),
               vocab=k.integer("vocab_size"), seq=k.integer("max_position_embeddings", default=seq_default),
               tied=k.flag("tie_word_embeddings", False), swiglu=True, bias=False, positions=False)
    if moe:
        out["experts"] = k.integer("num_local_experts", default=8)
        out["top_k"] = k.integer("num_experts_per_tok", default=2)
        if out["top_k"] > out["experts"]:
            raise k.error("num_experts_per_tok", f"'num_experts_per_tok' = {out['top_k']} is more than the "
                                                 f"{out['experts']} experts")
    return out


def _llama(k: _Keys) -> tuple[dict[str, Any], int]:
    out = _llama_like(k, 2048)
    a_dim, kv_dim = _attention_dims(out["hidden"], out["heads"], out["kv_heads"], out["head_dim"])
    extra = a_dim + 2 * kv_dim + out["hidden"] if k.flag("attention_bias", False) else 0
    return out, extra + (2 * out["ffn"] + out["hidden"] if k.flag("mlp_bias", False) else 0)


def _mistral(k: _Keys) -> tuple[dict[str, Any], int]:
    return _llama_like(k, 4096 * 32), 0


def _mixtral(k: _Keys) -> tuple[dict[str, Any], int]:
    return _llama_like(k, 4096 * 32, moe=True), 0


def _qwen2(k: _Keys) -> tuple[dict[str, Any], int]:
    out = _llama_like(k, 32768)
    a_dim, kv_dim = _attention_dims(out["hidden"], out["heads"], out["kv_heads"], out["head_dim"])
    return out, a_dim + 2 * kv_dim  # q/k/v biases only: no o_proj or MLP bias, RMSNorm


def _gpt2(k: _Keys) -> tuple[dict[str, Any], int]:
    hidden = k.integer("n_embd", "hidden_size")
    heads, _ = k.heads(hidden, "n_head", "num_attention_heads")
    return dict(layers=k.integer("n_layer", "num_hidden_layers"), hidden=hidden, heads=heads,
                ffn=k.integer("n_inner", default=4 * hidden), vocab=k.integer("vocab_size"),
                seq=k.integer("n_positions", "n_ctx", "max_position_embeddings", default=1024),
                tied=k.flag("tie_word_embeddings", True)), 0


def _gpt_neox(k: _Keys) -> tuple[dict[str, Any], int]:
    hidden = k.integer("hidden_size")
    heads, _ = k.heads(hidden, "num_attention_heads")
    out = dict(layers=k.integer("num_hidden_layers"), hidden=hidden, heads=heads,
               ffn=k.integer("intermediate_size"), vocab=k.integer("vocab_size"),
               seq=k.integer("max_position_embeddings", default=2048),
               tied=k.flag("tie_word_embeddings", False), positions=False)  # rotary: no position table
    return out, 0 if k.flag("attention_bias", True) else -4 * hidden  # q, k, v and dense biases


def _falcon(k: _Keys) -> tuple[dict[str, Any], int]:
    hidden = k.integer("hidden_size", "n_embed")
    heads, _ = k.heads(hidden, "num_attention_heads", "n_head")
    new_arch = k.flag("new_decoder_architecture", False)
    multi_query = k.flag("multi_query", True)
    # as transformers' FalconAttention: the new architecture has num_kv_heads key/value groups; the old
    # one fuses q, k, v of every head (3h) unless multi_query (one k/v head), and ignores num_kv_heads
    kv = k.kv_heads(heads, ("num_kv_heads", "n_head_kv")) if new_arch else 1 if multi_query else heads
    bias = k.flag("bias", False)
    k.flag("alibi", False)  # checked only: ALiBi and rotary both have no position table
    # as FalconDecoderLayer: two LayerNorms without parallel_attn or with num_ln_in_parallel_attn = 2
    # (the new architecture's default), else one
    lns = k.integer("num_ln_in_parallel_attn", default=2 if new_arch else 1)
    if lns > 2:
        raise k.error("num_ln_in_parallel_attn", f"'num_ln_in_parallel_attn' must be 1 or 2, got {lns}")
    norms = 2 if lns == 2 or not k.flag("parallel_attn", True) else 1
    out = dict(layers=k.integer("num_hidden_layers", "n_layer"), hidden=hidden, heads=heads, kv_heads=kv,
               ffn=k.integer("ffn_hidden_size", default=4 * hidden), vocab=k.integer("vocab_size"),
               seq=k.integer("max_position_embeddings", default=2048),
               tied=k.flag("tie_word_embeddings", True), bias=bias, positions=False)
    # Falcon's norms are LayerNorms (weight + bias) whatever "bias" says; transformer() gives 4h or 2h
    return out, norms * 2 * hidden - (4 if bias else 2) * hidden


def _t5(k: _Keys) -> tuple[dict[str, Any], int]:
    layers = k.integer("num_layers", "num_hidden_layers")
    proj = k.text("feed_forward_proj", "relu")
    return dict(layers=layers, decoder_layers=k.integer("num_decoder_layers", default=layers),
                hidden=k.integer("d_model", "hidden_size"),
                heads=k.integer("num_heads", "num_attention_heads"),
                head_dim=k.integer("d_kv", "head_dim", default=64), ffn=k.integer("d_ff"),
                vocab=k.integer("vocab_size"),
                seq=k.integer("n_positions", "max_position_embeddings", default=512),
                swiglu=proj.startswith("gated-"), bias=False, positions=False,
                tied=k.flag("tie_word_embeddings", True)), 0


FAMILIES: dict[str, Family] = {"llama": _llama, "mistral": _mistral, "mixtral": _mixtral, "qwen2": _qwen2,
                               "gpt2": _gpt2, "gpt_neox": _gpt_neox, "falcon": _falcon, "t5": _t5}


def _add_layer_params(model: Model, extra: int) -> Model:
    """Add ``extra`` parameters to every encoder/decoder-only ``layer`` block (what transformer() misses)."""
    if extra:
        model.blocks = [replace(b, params=b.params + extra) if b.name.startswith("layer") else b
                        for b in model.blocks]
    return model


def _family(k: _Keys) -> str:
    """The config's family: "model_type", or failing that the first of "architectures" (old files)."""
    supported = ", ".join(FAMILIES)
    if "model_type" not in k.doc:
        archs = k.doc.get("architectures")
        first = archs[0] if isinstance(archs, list) and archs and isinstance(archs[0], str) else ""
        for prefix, family in _ARCHITECTURES.items():
            if first.startswith(prefix):
                return family
        raise k.error("architectures", f"no 'model_type', and architectures {json.dumps(archs)} is not one "
                                       f"of the supported families: {supported}")
    family = k.doc["model_type"]
    if not isinstance(family, str) or family not in FAMILIES:
        raise k.error("model_type", f"unsupported model_type {json.dumps(family)}: supported are {supported}")
    return family


def from_hf_config(path: str, doc: jsonfile.Obj) -> Model:
    """The model a Hugging Face config describes; ``doc`` is ``path`` as ``jsonfile.load`` read it."""
    keys = _Keys(path, doc, "")
    keys.family = _family(keys)
    kwargs, extra = FAMILIES[keys.family](keys)
    named = doc.get("_name_or_path")
    name = named if isinstance(named, str) and named else str(path)
    model = _add_layer_params(transformer(name, **kwargs), extra)
    model.meta.update({key: value for key, value in kwargs.items() if key not in model.meta})
    model.meta.update(model_type=keys.family,
                      head_dim=kwargs.get("head_dim") or kwargs["hidden"] // kwargs["heads"])
    return model
