"""The model zoo and the JSON model description: a model is a list of blocks with symbolic costs.

Stable API (the fusion app builds on it; :mod:`model_files` reads a model from a user's spec):

- ``model_files.load_model(spec) -> Model``: ``spec`` is a preset name (``PRESETS``), a JSON file
  path, or ``FILE.py:NAME``: the function NAME of a Python file, called with no arguments, returns a
  Model or a ``(torch_module, example_inputs)`` pair for :func:`python_model.from_torch`.
- ``Model.blocks``: list of :class:`Block` in forward order; ``Model.seq`` the default sequence
  length; ``Model.params`` the parameter count (tied copies counted once);
  ``Model.forward_flops(b, s)`` the forward FLOPs of one micro-batch of ``b`` sequences.
- ``Block.params`` (parameters, a count), ``Block.forward_flops(b, s)``, ``Block.activation_bytes(b,
  s, t, sp, recompute, context)``, ``Block.boundary`` (elements per token passed to the next block),
  ``Block.kv`` (K and V elements per token, what context parallelism passes round its ring; a block
  file without it is costed as if its attention needed no exchange).

All activation coefficients are bytes for 16-bit training (Korthikanti et al. 2022, §4):
a block keeps ``b*s*(act_replicated + act_sharded/t + act_attention*s/t)`` bytes per micro-batch
without sequence parallelism; with it the replicated part is also divided by ``t``.

JSON form (``repeat`` copies a block; unknown keys are errors)::

    {"name": "tiny", "seq": 1024,
     "blocks": [{"name": "layer", "repeat": 4, "params": 12607488, "flops_per_token": 25165824,
                 "flops_per_token_sq": 4096, "act_replicated": 10240, "act_sharded": 24576,
                 "act_attention": 80, "boundary": 1024, "tp_allreduces": 2}]}

or ``{"transformer": {"layers": 4, "hidden": 1024, "heads": 16, "vocab": 32000, "seq": 1024}}``
using the same builder as the presets (keys of :func:`transformer`). A Hugging Face ``config.json``
(it has "model_type" or "architectures") is read by :mod:`hf_config` onto the same builder.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Any

__all__ = ["Block", "Model", "PRESETS", "size_problem", "transformer"]


@dataclass(frozen=True)
class Block:
    """One pipeline-indivisible piece of the model (a transformer layer, the embedding, the head)."""

    name: str
    params: float                   # parameter count
    flops_per_token: float          # forward FLOPs per token that are linear in s (the GEMMs)
    flops_per_token_sq: float = 0.0  # forward FLOPs per token per token of context (attention core)
    act_replicated: float = 0.0     # activation bytes per token every TP rank keeps (unless SP)
    act_sharded: float = 0.0        # activation bytes per token divided by t
    act_attention: float = 0.0      # bytes per token per context token (softmax, dropout), divided by t
    boundary: float = 0.0           # elements per token of the output tensor (h)
    tp_allreduces: int = 0          # forward all-reduces of b*s*boundary elements under TP
    tied: bool = False              # shares its weights with an earlier block (not in Model.params)
    expert_params: float = 0.0      # the part of params held by experts (sharded over expert parallel)
    experts: int = 0                # number of experts (0: dense)
    a2a: float = 0.0                # elements per token of each MoE all-to-all (4 per micro-batch)
    kv: float = 0.0                 # K and V elements per token (what context parallelism passes round)

    def forward_flops(self, b: float, s: float) -> float:
        """Forward FLOPs of a micro-batch of ``b`` sequences of length ``s``."""
        return b * s * (self.flops_per_token + self.flops_per_token_sq * s)

    def attention_flops(self, b: float, s: float) -> float:
        """Forward FLOPs of the attention core alone (what selective recomputation repeats)."""
        return b * s * s * self.flops_per_token_sq

    def activation_bytes(self, b: float, s: float, t: int = 1, sp: bool = False,
                         recompute: str = "none", context: float | None = None) -> float:
        """Bytes this block stores per in-flight micro-batch of ``s`` tokens per sequence (Korthikanti
        Table 2), attending to ``context`` tokens (default ``s``; more under context parallelism)."""
        if recompute == "full":
            return 2.0 * b * s * self.boundary / (t if sp else 1)
        rep = self.act_replicated / (t if sp else 1)
        keys = s if context is None else context
        attn = 0.0 if recompute == "selective" else self.act_attention * keys / t
        return b * s * (rep + self.act_sharded / t + attn)


@dataclass
class Model:
    """A model as an ordered list of blocks; ``meta`` keeps the hyperparameters when known."""

    name: str
    blocks: list[Block]
    seq: int
    meta: dict = field(default_factory=dict)

    @property
    def params(self) -> float:
        return sum(b.params for b in self.blocks if not b.tied)

    def forward_flops(self, b: float, s: float | None = None) -> float:
        s = self.seq if s is None else s
        return sum(blk.forward_flops(b, s) for blk in self.blocks)

    @property
    def layers(self) -> int:
        """Number of blocks (the pipeline partitions these)."""
        return len(self.blocks)

    @property
    def moe(self) -> bool:
        """Whether some block has experts (a mixture-of-experts model)."""
        return any(b.experts for b in self.blocks)

    @property
    def kinds(self) -> list[int]:
        """For each block, the index of the first block that equals it in all but its name: the
        cost tables compute each kind once (a model repeats its layers). Cached until the block
        list is replaced (blocks are frozen)."""
        cached = self.__dict__.get("_kinds")
        if cached is None or cached[0] is not self.blocks or len(cached[1]) != len(self.blocks):
            first: dict = {}
            kinds = [first.setdefault(replace(blk, name=""), i) for i, blk in enumerate(self.blocks)]
            cached = self.__dict__["_kinds"] = (self.blocks, kinds)
        return cached[1]


def transformer(name: str, layers: int, hidden: int, heads: int, vocab: int, seq: int, ffn: int | None = None,
                kv_heads: int | None = None, swiglu: bool = False, bias: bool = True, tied: bool = True,
                positions: bool = True, head_dim: int | None = None, experts: int = 0, top_k: int = 2,
                decoder_layers: int = 0, classes: int = 0, patch_params: int = 0) -> Model:
    """A decoder (or encoder) transformer as embedding + ``layers`` layers + head.

    Parameters per layer: 12h^2 + 13h for the GPT shape (Megatron Eq. 2); forward FLOPs
    per token 2x the weights plus 4*s*A for the attention core (A = heads*head_dim).
    ``decoder_layers`` adds T5-style decoder layers with cross-attention; ``classes`` replaces the
    vocabulary head by a classifier (ViT); ``experts`` makes every FFN a top-``top_k`` MoE.
    """
    h = hidden
    f = 4 * h if ffn is None else ffn
    k = heads if kv_heads is None else kv_heads
    a_dim = h if head_dim is None else heads * head_dim
    kv_dim = a_dim * k / heads
    attn_w = h * (a_dim + 2 * kv_dim) + a_dim * h
    attn_b = (a_dim + 2 * kv_dim + h) if bias else 0
    ffn_w = (3 if swiglu else 2) * h * f
    ffn_b = (f + h) if bias else 0
    norms = 4 * h if bias else 2 * h
    act_rep = 10 * h
    act_sh = 2 * a_dim + 4 * kv_dim + 2 * a_dim + (6 if swiglu else 4) * f

    def layer(label: str, cross: bool) -> Block:
        moe = experts > 0
        expert_w = ffn_w + ffn_b
        params = attn_w + attn_b + norms + (expert_w * experts + h * experts if moe else expert_w)
        flops = 2 * attn_w + 2 * ffn_w * (top_k if moe else 1)
        sh = act_sh + ((6 if swiglu else 4) * f * (top_k - 1) if moe else 0)
        rep = act_rep
        if cross:
            params += attn_w + attn_b + 2 * h
            flops += 2 * attn_w
            sh += 2 * a_dim + 4 * kv_dim + 2 * a_dim
            rep += 5 * h
        return Block(label, params, flops, (8 if cross else 4) * a_dim, rep, sh,
                     5 * heads * (2 if cross else 1), h, 3 if cross else 2,
                     expert_params=expert_w * experts if moe else 0, experts=experts,
                     a2a=h * top_k if moe else 0, kv=2 * kv_dim)

    embed_params = vocab * h + (seq * h if positions else 0) + patch_params
    blocks = [Block("embedding", embed_params, 2 * patch_params / max(seq, 1), 0, h + 8, 0, 0, h, 1)]
    blocks += [layer(f"layer{i}", False) for i in range(layers)]
    blocks += [layer(f"decoder{i}", True) for i in range(decoder_layers)]
    if classes:
        blocks.append(Block("head", h * classes + 2 * h, 2 * h * classes / seq, 0, 0, 2 * h, 0, h, 0))
    else:
        blocks.append(Block("head", vocab * h, 2 * h * vocab, 0, 0, 4 * h + 4 * vocab, 0, h, 0, tied=tied))
    meta = dict(layers=layers + decoder_layers, hidden=h, heads=heads, vocab=vocab, ffn=f, kv_heads=k,
                swiglu=swiglu, bias=bias, tied=tied, positions=positions, experts=experts, top_k=top_k,
                decoder_layers=decoder_layers, classes=classes)
    return Model(name, blocks, seq, meta)


# name -> (heads, hidden, layers): Megatron-LM SC'21 Table 1 (s = 2048, V = 51200)
MEGATRON_TABLE1 = {
    "megatron-1.7b": (24, 2304, 24), "megatron-3.6b": (32, 3072, 30), "megatron-7.5b": (32, 4096, 36),
    "megatron-18.4b": (48, 6144, 40), "megatron-39.1b": (64, 8192, 48), "megatron-76.1b": (80, 10240, 60),
    "megatron-145.6b": (96, 12288, 80), "megatron-310.1b": (128, 16384, 96),
    "megatron-529.6b": (128, 20480, 105), "megatron-1t": (160, 25600, 128),
}


def _presets() -> dict[str, dict[str, Any]]:
    out: dict[str, dict[str, Any]] = {
        name: dict(layers=L, hidden=h, heads=a, vocab=51200, seq=2048)
        for name, (a, h, L) in MEGATRON_TABLE1.items()}
    llama = dict(swiglu=True, bias=False, tied=False, positions=False)
    out.update({
        "gpt3-175b": dict(layers=96, hidden=12288, heads=96, vocab=51200, seq=2048),
        "llama2-7b": dict(layers=32, hidden=4096, heads=32, vocab=32000, seq=4096, ffn=11008, **llama),
        "llama2-13b": dict(layers=40, hidden=5120, heads=40, vocab=32000, seq=4096, ffn=13824, **llama),
        "llama2-70b": dict(layers=80, hidden=8192, heads=64, kv_heads=8, vocab=32000, seq=4096, ffn=28672,
                           **llama),
        "llama3-8b": dict(layers=32, hidden=4096, heads=32, kv_heads=8, vocab=128256, seq=8192, ffn=14336,
                          **llama),
        "llama3-70b": dict(layers=80, hidden=8192, heads=64, kv_heads=8, vocab=128256, seq=8192, ffn=28672,
                           **llama),
        "bert-large": dict(layers=24, hidden=1024, heads=16, vocab=30522, seq=512),
        "t5-11b": dict(layers=24, decoder_layers=24, hidden=1024, heads=128, head_dim=128, ffn=65536,
                       vocab=32128, seq=512, bias=False, positions=False),
        "vit-h14": dict(layers=32, hidden=1280, heads=16, vocab=0, seq=257, ffn=5120, classes=1000,
                        patch_params=14 * 14 * 3 * 1280),
        "mixtral-8x7b": dict(layers=32, hidden=4096, heads=32, kv_heads=8, vocab=32000, seq=4096, ffn=14336,
                             experts=8, top_k=2, **llama),
    })
    return out


PRESETS = _presets()
MAX_BLOCKS = 10_000         # blocks a model file may make (Megatron's 1T model has 130): more is a typo
MAX_PARAMS = float(2**53)   # parameters a model file may describe (the largest trained models: ~2e12)
def size_problem(model: Model) -> str | None:
    """What makes ``model`` too big to be an input a user meant (at most MAX_BLOCKS blocks and
    MAX_PARAMS parameters: a typo such as 1e308 or 2**63 must not become a plan, an inf or a hang),
    or None."""
    if len(model.blocks) > MAX_BLOCKS:
        return f"{len(model.blocks)} blocks, more than the {MAX_BLOCKS} allowed"
    if not model.params <= MAX_PARAMS:
        return f"{model.params:.4g} parameters: a model may have at most 2**53 = {MAX_PARAMS:.4g}"
    return None
