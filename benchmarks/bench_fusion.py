"""Tensor fusion: the O(N^2) DP against the branch and bound, time and nodes, on realistic tensor counts.

ResNet-50 (161 tensors), BERT-large (391) and a GPT-3 175B layout (1,156 tensors: Megatron's 12 per
layer + embeddings + final norm, one 8x8 V100 data-parallel group as in the synthetic profiles).
Medians of ``--repeat`` interleaved runs, one core.  Usage: ``python benchmarks/bench_fusion.py``.
"""

from __future__ import annotations

import argparse
import statistics
import time

from yewpy.apps.dnn.fusion.profile import bert_large, gpt3, resnet50
from yewpy.apps.dnn.fusion.search import MIB, Fusion


def timed(fn, **kwargs):
    start = time.perf_counter()
    out = fn(**kwargs)
    return time.perf_counter() - start, out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--time-limit", type=float, default=20.0, help="per branch-and-bound run")
    args = parser.parse_args()
    cases = []
    for profile in (resnet50(), bert_large(), gpt3()):
        cases += [(profile, {}), (profile, {"max_buckets": 8}), (profile, {"cap_bytes": 64 * MIB}),
                  (profile, {"streams": 2})]
    print("| profile | N | variant | DP s | BnB s | BnB nodes | status | dominated | BnB = DP | vs 25 MB "
          "| vs none | gap to root bound |")
    print("|---|---|---|---|---|---|---|---|---|---|---|---|")
    for profile, variant in cases:
        f = Fusion(profile, **variant)
        dp_times, bnb_times, nodes, dominated, dp_value, bnb_value = [], [], 0, 0, None, None
        for _ in range(args.repeat):
            if variant.get("streams", 1) == 1:
                t, plan = timed(f.dp)
                dp_times.append(t)
                dp_value = plan.comm_ns
            t, result = timed(f.search, time_limit=args.time_limit)
            bnb_times.append(t)
            nodes, bnb_value, status = result.nodes, result.objective, result.status
            dominated = result.metrics["counters"]["dominated"]
        base = f.baselines()
        label = ", ".join(f"{k}={v}" for k, v in variant.items()) or "base"
        dp_s = f"{statistics.median(dp_times):.4f}" if dp_times else "n/a"
        same = "n/a" if dp_value is None else ("yes" if dp_value == bnb_value else "no")
        fixed = base["fixed_25mb"].comm_ns / bnb_value
        none = base["no_fusion"].comm_ns / bnb_value
        bnb_s = statistics.median(bnb_times)
        gap = bnb_value / f.core().node_bound([]) - 1      # certified: the root bound is global
        print(f"| {profile.name} | {len(profile.tensors)} | {label} | {dp_s} | {bnb_s:.4f} "
              f"| {nodes} | {status} | {dominated} | {same} | {fixed:.3f}x | {none:.3f}x | {gap:.2e} |")


if __name__ == "__main__":
    main()
