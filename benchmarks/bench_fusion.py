"""Tensor fusion: the DP against the branch and bound, time and nodes, on realistic tensor counts.

ResNet-50 (161 tensors), BERT-large (391) and a GPT-3 175B layout (1,156 tensors: Megatron's 12 per
layer + embeddings + final norm, one 8x8 V100 data-parallel group as in the synthetic profiles).
Medians of ``--repeat`` interleaved runs, one core.  Usage: ``python benchmarks/bench_fusion.py``.

``--large``: profiles of 20,000 and 100,000 tensors (JSON files, shapes in ``LARGE``), each planned
end to end by ``yewpy fusion --profile-json`` processes, bnb and dp, with every variant: wall
seconds, nodes and whether bnb equals the DP.
"""

from __future__ import annotations

import argparse
import json
import random
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from yewpy.apps.dnn.fusion.profile import Profile, bert_large, gpt3, resnet50, write_profile
from yewpy.apps.dnn.fusion.search import MIB, Fusion


def timed(fn, **kwargs):
    start = time.perf_counter()
    out = fn(**kwargs)
    return time.perf_counter() - start, out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--time-limit", type=float, default=20.0, help="per branch-and-bound run")
    parser.add_argument("--large", action="store_true", help="20,000 and 100,000 tensors, end to end")
    parser.add_argument("--variants", nargs="+", choices=list(VARIANTS), default=list(VARIANTS),
                        help="with --large: which of its variants to run (default: all)")
    args = parser.parse_args()
    if args.large:
        large(args.repeat, args.time_limit, [VARIANTS[v] for v in args.variants])
        return
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


def _sizes(rng: random.Random, n: int, shape: str) -> list[tuple[int, float]]:
    """(bytes, backward seconds) of n tensors: ``same`` 4 KiB and 100 ns each; ``mixed`` 4-28 KiB and
    0-4 us (the all-reduces back up); ``lognormal`` 1 KiB-64 MiB, backward in proportion to bytes at
    2 GB/s (compute keeps up)."""
    if shape == "same":
        return [(4096, 1e-7)] * n
    if shape == "mixed":
        return [(4096 * (1 + k % 7), 1e-6 * (k % 5)) for k in range(n)]
    rows = []
    for _ in range(n):
        b = int(min(64 * MIB, max(1024, rng.lognormvariate(11, 2.5))))
        rows.append((b, b / 2e9))
    return rows


# shape, alpha s, beta s/B, gamma s/B (the synthetic profiles' gamma: read and write at 900 GB/s)
LARGE = [("same", 50e-6, 1e-11, 0.0), ("mixed", 50e-6, 1e-10, 1e-12), ("lognormal", 20e-6, 1e-10, 2 / 900e9)]
VARIANTS = {"base": [], "cap": ["--cap-mb", "25"], "count": ["--max-buckets", "64"],
            "streams": ["--streams", "2"]}


def large(repeat: int, limit: float, variants: list[list[str]]) -> None:
    """Whole ``yewpy fusion`` processes on big profiles (see the module docstring)."""
    yewpy = str(Path(sys.executable).parent / "yewpy")
    print("| N | shape | variant | bnb s | bnb nodes | status | dp s | bnb = dp |")
    print("|---|---|---|---|---|---|---|---|")
    with tempfile.TemporaryDirectory() as tmp:
        for n in (20_000, 100_000):
            for shape, alpha, beta, gamma in LARGE:
                rows = _sizes(random.Random(n), n, shape)
                path = Path(tmp) / f"{shape}-{n}.json"
                path.write_text(write_profile(Profile.from_seconds(
                    f"{shape}-{n}", [(f"t{k}", b, s) for k, (b, s) in enumerate(rows)], alpha, beta, gamma)))
                for variant in variants:
                    out = {}
                    for method in ("bnb", "dp"):
                        if method == "dp" and "--streams" in variant:
                            continue
                        times, doc = [], None
                        for _ in range(repeat):
                            cmd = [yewpy, "fusion", "--profile-json", str(path), "--method", method, "--json",
                                   *(["--time-limit", str(limit)] if method == "bnb" else []), *variant]
                            t0 = time.perf_counter()
                            try:        # --time-limit bounds the search only, not the DP
                                done = subprocess.run(cmd, capture_output=True, text=True, timeout=limit + 60)
                            except subprocess.TimeoutExpired:
                                break
                            times.append(time.perf_counter() - t0)
                            if done.returncode:
                                raise SystemExit(f"{' '.join(cmd)}: {done.stderr.strip()[-300:]}")
                            doc = json.loads(done.stdout)
                        out[method] = (statistics.median(times) if doc else None, doc)
                    bnb_s, bnb = out["bnb"]
                    dp_s, dp = out.get("dp", (None, None))
                    same = "n/a" if not (dp and bnb) else "yes" if dp["objective"] == bnb["objective"] \
                        else "no"
                    over = f"over {limit + 60:g} s"
                    label = " ".join(variant) or "base"
                    dp_text = "n/a" if "dp" not in out else over if dp is None else f"{dp_s:.2f}"
                    bnb_text = (f"{over} | | " if bnb is None
                                else f"{bnb_s:.2f} | {bnb['nodes']:,} | {bnb['status']}")
                    print(f"| {n:,} | {shape} | {label} | {bnb_text} | {dp_text} | {same} |", flush=True)


if __name__ == "__main__":
    main()
