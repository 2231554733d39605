"""The input of tensor fusion: per-tensor gradient bytes and backward times, and the all-reduce cost.

A profile lists the gradient tensors in backward order (the order their gradients appear) with
bytes and the backward compute that precedes each one, plus the all-reduce's alpha-beta
coefficients for the data-parallel group.  Sources: a JSON file (``read_profile``), the synthetic
ResNet-50 and BERT-large profiles (``resnet50``, ``bert_large``), or a zoo model on a cluster
(``yewpy.apps.dnn.fusion.model``).  Times are kept in integer nanoseconds and per-byte costs in
integer femtoseconds per byte, so that the search's arithmetic is exact.
"""

from __future__ import annotations

import json
import math
from collections.abc import Sequence
from dataclasses import dataclass

from yewpy.apps.dnn import jsonfile
from yewpy.errors import InputError, UsageError

NS = 1e9            # ns per second
FS = 1e15           # fs per second
_LIMIT = 1 << 62    # int64 headroom of the compiled cost arithmetic


@dataclass(frozen=True)
class Profile:
    """Gradients in backward order and the cost of all-reducing them.

    ``backward_ns[k]`` is the compute between gradient k-1 and gradient k (gradient k is ready at
    the prefix sum).  A bucket of bytes S costs ``alpha_ns + ceil((beta_fs + gamma_fs) * S / 1e6)``
    ns, ``gamma_fs`` (copying into and out of a fusion buffer) only when it holds several tensors.
    """

    name: str
    tensors: tuple[str, ...]
    nbytes: tuple[int, ...]
    backward_ns: tuple[int, ...]
    alpha_ns: int
    beta_fs: int
    gamma_fs: int = 0
    forward_ns: int = 0
    update_ns: int = 0

    def __post_init__(self) -> None:
        n = len(self.tensors)
        if n == 0:
            raise UsageError(f"profile {self.name!r} has no gradient tensors")
        if len(self.nbytes) != n or len(self.backward_ns) != n:
            raise UsageError("a profile needs bytes and a backward time for every tensor")
        if min(self.nbytes) < 0 or min(self.backward_ns) < 0:
            raise UsageError("tensor bytes and backward times must be >= 0")
        if min(self.alpha_ns, self.beta_fs, self.gamma_fs, self.forward_ns, self.update_ns) < 0:
            raise UsageError("alpha, beta, gamma, forward and update must be >= 0")
        # the costliest plan, one bucket per tensor, and the sums the compiled search makes
        whole = (n * self.alpha_ns + (self.beta_fs + self.gamma_fs) * sum(self.nbytes) // 10**6
                 + sum(self.backward_ns) + self.forward_ns + self.update_ns)
        if (self.beta_fs + self.gamma_fs) * sum(self.nbytes) >= _LIMIT or whole >= _LIMIT:
            raise UsageError(f"profile {self.name!r} is too large for 64-bit nanosecond arithmetic")

    @property
    def ready_ns(self) -> list[int]:
        """When each gradient exists, in ns from the start of the backward pass."""
        out, t = [], 0
        for b in self.backward_ns:
            t += b
            out.append(t)
        return out

    @property
    def total_bytes(self) -> int:
        return sum(self.nbytes)

    @classmethod
    def from_seconds(cls, name: str, tensors: Sequence[tuple[str, float, float]], alpha: float, beta: float,
                     gamma: float = 0.0, forward: float = 0.0, update: float = 0.0) -> Profile:
        """A profile from (name, bytes, backward seconds) rows and costs in seconds and seconds/byte."""
        for label, x in (("alpha", alpha), ("beta", beta), ("gamma", gamma), ("forward", forward),
                         ("update", update)):
            if not math.isfinite(x) or x < 0:
                raise UsageError(f"{label} must be a finite number >= 0, got {x}")
        for row in tensors:
            if not (math.isfinite(row[1]) and math.isfinite(row[2])):
                raise UsageError(f"tensor {row[0]!r}: bytes and backward seconds must be finite")
        return cls(name=name, tensors=tuple(t[0] for t in tensors), nbytes=tuple(int(t[1]) for t in tensors),
                   backward_ns=tuple(round(t[2] * NS) for t in tensors), alpha_ns=round(alpha * NS),
                   beta_fs=round(beta * FS), gamma_fs=round(gamma * FS), forward_ns=round(forward * NS),
                   update_ns=round(update * NS))

    def to_dict(self) -> dict:
        """The JSON summary (not the tensors)."""
        return {"name": self.name, "tensors": len(self.tensors), "bytes": self.total_bytes,
                "backward_seconds": sum(self.backward_ns) / NS, "forward_seconds": self.forward_ns / NS,
                "update_seconds": self.update_ns / NS, "alpha_seconds": self.alpha_ns / NS,
                "beta_seconds_per_byte": self.beta_fs / FS, "gamma_seconds_per_byte": self.gamma_fs / FS}


def synthetic_network(hw: dict | None = None) -> str:
    """The cluster the synthetic profiles assume, in words."""
    hw = {**SYNTHETIC, **(hw or {})}
    return (f"synthetic: {hw['nodes']} nodes x {hw['gpus_per_node']} GPUs, "
            f"{hw['intra_bandwidth'] / 1e9:g} GB/s per GPU in a node, "
            f"{hw['inter_bandwidth'] / 1e9:g} GB/s per GPU between nodes, "
            f"{hw['flops'] / 1e12:g} TFLOP/s achieved per GPU")


def allreduce_coefficients(gpus_per_node: int, nodes: int, intra_bandwidth: float, inter_bandwidth: float,
                           intra_latency: float, inter_latency: float) -> tuple[float, float]:
    """(A seconds, beta' seconds/byte) of a hierarchical ring all-reduce over nodes x gpus_per_node.

    Reduce-scatter inside the node, all-reduce of the 1/k1 shard between nodes (each GPU on its own
    share of the NIC, ``inter_bandwidth``), all-gather inside the node:
    2(k1-1)a_intra + 2(k2-1)a_inter + [2(k1-1)/k1 / B_intra + 2(k2-1)/k2 / (k1 B_inter)] S.
    """
    k1, k2 = gpus_per_node, nodes
    alpha = 2 * (k1 - 1) * intra_latency + 2 * (k2 - 1) * inter_latency
    beta = 2 * (k1 - 1) / k1 / intra_bandwidth
    if k2 > 1:
        beta += 2 * (k2 - 1) / k2 / (k1 * inter_bandwidth)
    return alpha, beta


# -- synthetic profiles (tests, benchmarks, docs) ------------------------------------------------

# An 8-node x 8-GPU V100 cluster with one 100 Gb/s NIC per node: fusion matters there.
SYNTHETIC = {"gpus_per_node": 8, "nodes": 8, "flops": 62.5e12, "hbm": 900e9, "intra_bandwidth": 150e9,
             "inter_bandwidth": 12.5e9 / 8, "intra_latency": 2e-6, "inter_latency": 5e-6, "grad_bytes": 4}


def _layers_to_profile(name: str, layers: list[tuple[float, list[tuple[str, int]]]], forward_flops: float,
                       hw: dict) -> Profile:
    """Layers in forward order, each (forward seconds, [(tensor, parameters)]) -> a backward-order profile.

    A layer's backward (2x its forward) is charged to its first gradient in backward order; its other
    gradients appear at the same moment.
    """
    rows = []
    for seconds, tensors in reversed(layers):
        for k, (tensor, params) in enumerate(reversed(tensors)):
            rows.append((tensor, params * hw["grad_bytes"], 2 * seconds if k == 0 else 0.0))
    alpha, beta = allreduce_coefficients(hw["gpus_per_node"], hw["nodes"], hw["intra_bandwidth"],
                                         hw["inter_bandwidth"], hw["intra_latency"], hw["inter_latency"])
    gamma = 2 / hw["hbm"]                           # read and write each byte once to pack the buffer
    return Profile.from_seconds(name, rows, alpha, beta, gamma, forward=forward_flops / hw["flops"])


def resnet50(batch: int = 64, **hardware: float) -> Profile:
    """ResNet-50 (torchvision v1.5 shapes, 161 tensors, 25,557,032 parameters) at ``batch`` images per GPU."""
    hw = {**SYNTHETIC, **hardware}
    layers: list[tuple[float, list[tuple[str, int]]]] = []
    total = 0.0

    def conv(tag: str, cin: int, cout: int, k: int, out_hw: int) -> None:
        nonlocal total
        flops = 2.0 * k * k * cin * cout * out_hw * out_hw * batch
        total += flops
        layers.append((flops / hw["flops"], [(f"{tag}.weight", k * k * cin * cout)]))

    def bn(tag: str, c: int, out_hw: int) -> None:
        seconds = 4 * c * out_hw * out_hw * batch * 2 / hw["hbm"]      # memory-bound: 4 passes, fp16
        layers.append((seconds, [(f"{tag}.weight", c), (f"{tag}.bias", c)]))

    conv("conv1", 3, 64, 7, 112)
    bn("bn1", 64, 112)
    cin, res = 64, 56
    for stage, (width, blocks) in enumerate(zip((64, 128, 256, 512), (3, 4, 6, 3))):
        for b in range(blocks):
            stride = 2 if b == 0 and stage > 0 else 1
            out = res // stride
            tag = f"layer{stage + 1}.{b}"
            conv(f"{tag}.conv1", cin, width, 1, res)
            bn(f"{tag}.bn1", width, res)
            conv(f"{tag}.conv2", width, width, 3, out)
            bn(f"{tag}.bn2", width, out)
            conv(f"{tag}.conv3", width, 4 * width, 1, out)
            bn(f"{tag}.bn3", 4 * width, out)
            if b == 0:
                conv(f"{tag}.downsample.0", cin, 4 * width, 1, out)
                bn(f"{tag}.downsample.1", 4 * width, out)
            cin, res = 4 * width, out
    fc = 2.0 * 2048 * 1000 * batch
    total += fc
    layers.append((fc / hw["flops"], [("fc.weight", 2048 * 1000), ("fc.bias", 1000)]))
    return _layers_to_profile(f"resnet50-b{batch}", layers, total, hw)


class _Transformer:
    """The layers of a synthetic transformer profile, in forward order: each a backward time and
    its (tensor, elements) gradients; GEMMs are compute-bound, norms and embeddings memory-bound."""

    def __init__(self, tokens: int, h: int, hw: dict) -> None:
        self.tokens, self.h, self.hw = tokens, h, hw
        self.layers: list[tuple[float, list[tuple[str, int]]]] = []
        self.flops = 0.0

    def linear(self, tag: str, din: int, dout: int, extra: float = 0.0) -> None:
        flops = 2.0 * self.tokens * din * dout + extra
        self.flops += flops
        self.layers.append((flops / self.hw["flops"], [(f"{tag}.weight", din * dout), (f"{tag}.bias", dout)]))

    def norm(self, tag: str) -> None:
        h = self.h
        seconds = 4 * self.tokens * h * 2 / self.hw["hbm"]             # memory-bound: 4 passes, fp16
        self.layers.append((seconds, [(f"{tag}.weight", h), (f"{tag}.bias", h)]))

    def embedding(self, passes: int, tensors: list[tuple[str, int]]) -> None:
        self.layers.append((self.tokens * self.h * 2 * passes / self.hw["hbm"], tensors))

    def profile(self, name: str) -> Profile:
        return _layers_to_profile(name, self.layers, self.flops, self.hw)


def bert_large(batch: int = 8, seq: int = 512, **hardware: float) -> Profile:
    """BERT-large encoder (24 layers, h = 1024, 391 tensors: embeddings, 16 per layer, pooler) at
    ``batch`` sequences of ``seq`` tokens per GPU."""
    h, f, vocab = 1024, 4096, 30522
    net = _Transformer(batch * seq, h, {**SYNTHETIC, **hardware})
    net.embedding(3, [("embeddings.word", vocab * h), ("embeddings.position", seq * h),
                      ("embeddings.token_type", 2 * h)])
    net.norm("embeddings.LayerNorm")
    for i in range(24):
        tag = f"encoder.{i}"
        net.linear(f"{tag}.query", h, h)
        net.linear(f"{tag}.key", h, h)
        net.linear(f"{tag}.value", h, h, extra=4.0 * batch * seq * seq * h)   # attention core, backward first
        net.linear(f"{tag}.attention.output", h, h)
        net.norm(f"{tag}.attention.LayerNorm")
        net.linear(f"{tag}.intermediate", h, f)
        net.linear(f"{tag}.output", f, h)
        net.norm(f"{tag}.output.LayerNorm")
    net.linear("pooler", h, h)
    return net.profile(f"bert-large-b{batch}-s{seq}")


def gpt3(batch: int = 1, seq: int = 2048, **hardware: float) -> Profile:
    """GPT-3 175B (h = 12288, 96 layers, V = 51200) as 1,156 per-tensor gradients."""
    h, vocab = 12288, 51200
    net = _Transformer(batch * seq, h, {**SYNTHETIC, **hardware})
    net.embedding(2, [("wte", vocab * h), ("wpe", seq * h)])
    for i in range(96):
        net.norm(f"h{i}.ln_1")
        net.linear(f"h{i}.qkv", h, 3 * h, extra=4.0 * batch * seq * seq * h)
        net.linear(f"h{i}.proj", h, h)
        net.norm(f"h{i}.ln_2")
        net.linear(f"h{i}.fc", h, 4 * h)
        net.linear(f"h{i}.fc_proj", 4 * h, h)
    net.norm("ln_f")
    return net.profile(f"gpt3-175b-b{batch}-s{seq}")


# -- JSON profiles (errors name the line of the offending object) ------------------------------

_TOP = {"name", "alpha", "beta", "gamma", "forward", "update", "tensors"}


def read_profile(path: str) -> Profile:
    """A profile from JSON: ``{"name", "alpha", "beta", "gamma", "forward", "update", "tensors":
    [{"name", "bytes", "backward"}, ...]}`` (seconds, bytes, seconds per byte; tensors in backward
    order; alpha and beta are the whole all-reduce's latency and per-byte cost)."""
    doc = jsonfile.load(path)
    if not isinstance(doc, jsonfile.Obj):
        raise InputError(path, 1, "a fusion profile is a JSON object")
    for key in doc:
        if key not in _TOP:
            raise InputError(path, doc.line, f"unknown field {key!r} (expected {', '.join(sorted(_TOP))})")
    costs = {key: jsonfile.field(path, doc, key, float, None if key in ("alpha", "beta") else 0.0)
             for key in ("alpha", "beta", "gamma", "forward", "update")}
    raw = doc.get("tensors")
    if not isinstance(raw, list) or not raw:
        raise InputError(path, doc.line, "'tensors' must be a non-empty list of objects")
    rows = []
    for k, obj in enumerate(raw):
        if not isinstance(obj, jsonfile.Obj):
            raise InputError(path, doc.line, f"tensor {k} must be an object, got {obj!r}")
        for key in obj:
            if key not in ("name", "bytes", "backward"):
                raise InputError(path, obj.line, f"tensor {k}: unknown field {key!r}")
        rows.append((jsonfile.field(path, obj, "name", str, f"t{k}", None),
                     jsonfile.field(path, obj, "bytes", int), jsonfile.field(path, obj, "backward", float)))
    for key, value in costs.items():
        if not math.isfinite(value):
            raise InputError(path, doc.line, f"field {key!r} must be finite")
    try:
        return Profile.from_seconds(jsonfile.field(path, doc, "name", str, str(path), None), rows, **costs)
    except UsageError as exc:
        raise InputError(path, doc.line, str(exc)) from None


def write_profile(profile: Profile) -> str:
    """The JSON text of a profile (``read_profile`` reads it back exactly)."""
    tensors = [{"name": t, "bytes": b, "backward": s / NS}
               for t, b, s in zip(profile.tensors, profile.nbytes, profile.backward_ns)]
    head = {"name": profile.name, "alpha": profile.alpha_ns / NS, "beta": profile.beta_fs / FS,
            "gamma": profile.gamma_fs / FS, "forward": profile.forward_ns / NS,
            "update": profile.update_ns / NS}
    lines = json.dumps(head)[:-1] + ', "tensors": [\n'
    return lines + ",\n".join(json.dumps(t) for t in tensors) + "\n]}\n"
