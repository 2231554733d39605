"""A fusion profile from a zoo model on a cluster: one gradient per block, symbolic backward times.

Pure data parallelism over every GPU of the cluster: each block's parameters form one gradient
tensor (``grad_bytes`` per parameter), ready when the block's backward (2x its forward FLOPs at
``efficiency`` x the slowest group's peak) is done, in reverse block order.  A tied block (a head
sharing the embedding's weights) adds compute but no tensor: its gradient lands in the embedding's.
The all-reduce is the hierarchical ring over the cluster's nodes (``allreduce_coefficients``) with
its slowest bandwidths and largest latencies; the optimizer step reads and writes 16 bytes of model
state per parameter at the slowest HBM bandwidth.
"""

from __future__ import annotations

from yewpy.apps.dnn.cluster import Cluster
from yewpy.apps.dnn.fusion.profile import Profile, allreduce_coefficients
from yewpy.apps.dnn.models import Model
from yewpy.errors import UsageError

OPTIMIZER_BYTES = 16        # mixed-precision Adam: weights, gradients, fp32 master, momentum, variance


def profile_from_model(model: Model, cluster: Cluster, batch: int = 8, seq: int | None = None,
                       grad_bytes: int = 4, efficiency: float = 0.5) -> Profile:
    """The profile of ``model`` trained data-parallel on ``cluster`` with ``batch`` sequences per GPU."""
    if batch < 1 or grad_bytes < 1 or not 0 < efficiency <= 1:
        raise UsageError("batch and grad bytes must be >= 1 and the efficiency in (0, 1]")
    s = model.seq if seq is None else seq
    if s < 1:
        raise UsageError(f"the sequence length must be >= 1, got {s}")
    groups = cluster.groups
    rate = min(g.peak_flops for g in groups) * efficiency
    hbm = min(g.hbm_bandwidth for g in groups)
    gpus_per_node = min(g.gpus_per_node for g in groups)
    nodes = sum(g.nodes for g in groups)
    alpha, beta = allreduce_coefficients(gpus_per_node, nodes, cluster.intra_bandwidth,
                                         cluster.inter_bandwidth,
                                         cluster.intra_latency, cluster.inter_latency)
    rows, carry = [], 0.0
    for block in reversed(model.blocks):
        carry += 2 * block.forward_flops(batch, s) / rate
        if block.tied or block.params <= 0:
            continue
        rows.append((block.name, round(block.params) * grad_bytes, carry))
        carry = 0.0
    if not rows:
        raise UsageError(f"model {model.name!r} has no parameters to all-reduce")
    forward = model.forward_flops(batch, s) / rate
    update = 2 * OPTIMIZER_BYTES * model.params / hbm
    label = f"{model.name}-b{batch}-s{s}@{cluster.describe()}"
    return Profile.from_seconds(label, rows, alpha, beta, 2 / hbm, forward=forward, update=update)
