"""Tensor fusion (OF-WFBP): bucket gradients for overlapped all-reduce, vs fixed buckets and no fusion.

``yewpy fusion --model M --cluster C --method dp|bnb|fixed [--bucket-mb 25] [--json]``; or a
per-tensor profile with ``--profile-json FILE`` or ``--synthetic resnet50|bert-large|gpt3``.
Variants: ``--streams S``, ``--max-buckets K``, ``--cap-mb M`` (bytes per fused bucket).
"""

from __future__ import annotations

import argparse
import time
from typing import Any

from yewpy.apps.dnn.fusion.profile import Profile, bert_large, gpt3, read_profile, resnet50, synthetic_network
from yewpy.apps.dnn.fusion.search import DP_TABLE_ENTRIES, MIB, Fusion, Plan
from yewpy.apps.input_numbers import check_range
from yewpy.errors import UsageError
from yewpy.result import Result

SYNTHETIC = {"resnet50": resnet50, "bert-large": bert_large, "gpt3": gpt3}


def configure(parser: argparse.ArgumentParser) -> None:
    src = parser.add_argument_group("input (one of)")
    src.add_argument("--model", help="zoo preset or model JSON (with --cluster)")
    src.add_argument("--cluster", help="cluster spec PRESET:NODESxGPUS[+...] or JSON (with --model)")
    src.add_argument("--profile-json", metavar="FILE", help="per-tensor profile (see docs/fusion.md)")
    src.add_argument("--synthetic", choices=sorted(SYNTHETIC), help="built-in synthetic profile")
    g = parser.add_argument_group("fusion")
    g.add_argument("--method", choices=["bnb", "dp", "fixed"], default="bnb",
                   help="bnb: branch and bound (default, any variant); dp: exact DP (one stream); "
                        "fixed: size-capped buckets of --bucket-mb")
    g.add_argument("--bucket-mb", type=float, default=25.0, help="fixed bucket size in MiB (default 25)")
    g.add_argument("--streams", type=int, default=1, help="concurrent all-reduce streams (default 1)")
    g.add_argument("--max-buckets", type=int, default=0, help="at most K buckets (default 0: no cap)")
    g.add_argument("--cap-mb", type=float, default=0.0, help="at most M MiB per fused bucket (0: no cap)")
    g.add_argument("--batch", type=int, default=None, help="per-GPU batch (model: 8, resnet50: 64, bert: 8)")
    g.add_argument("--seq", type=int, default=None, help="sequence length (default: the model's)")
    g.add_argument("--grad-bytes", type=int, default=None,
                   help="bytes per gradient element (--model only; default 4)")
    g.add_argument("--efficiency", type=float, default=None,
                   help="achievable fraction of peak (--model only; default 0.5)")


MAX_MB = 1e6  # --bucket-mb, --cap-mb: a bucket of a terabyte is a typo
MAX_BUCKETS = 10**6
MAX_BATCH = 2**24  # --batch and --seq, as dnn-plan's --global-batch and --seq


def check_options(args: argparse.Namespace) -> None:
    """Every option within what it means, and only with the input it applies to: an error, never a
    silent other value (``--cap-mb 1e-300`` rounded to no cap, ``--efficiency nan`` was ignored)."""
    for flag, value, low, high in (("--bucket-mb", args.bucket_mb, 1 / MIB, MAX_MB),
                                   ("--cap-mb", args.cap_mb, 0.0, MAX_MB),
                                   ("--efficiency", args.efficiency, 1e-3, 1.0)):
        check_range(flag, value, low, high)
    if 0 < args.cap_mb < 1 / MIB:
        raise UsageError(f"--cap-mb must be 0 (no cap) or at least one byte ({1 / MIB:g}), got {args.cap_mb}")
    for flag, value, low, high in (("--max-buckets", args.max_buckets, 0, MAX_BUCKETS),
                                   ("--batch", args.batch, 1, MAX_BATCH), ("--seq", args.seq, 1, MAX_BATCH),
                                   ("--grad-bytes", args.grad_bytes, 1, 64)):
        check_range(flag, value, low, high, integer=True)
    unused = [flag for flag, value, applies in (
        ("--grad-bytes", args.grad_bytes, args.model), ("--efficiency", args.efficiency, args.model),
        ("--batch", args.batch, not args.profile_json),
        ("--seq", args.seq, args.model or args.synthetic in ("bert-large", "gpt3"))) if value is not None
        and not applies]
    if unused:
        raise UsageError(f"{unused[0]} does not apply to this input (the profile fixes it)")


def load(args: argparse.Namespace) -> Profile:
    """The profile the arguments name."""
    given = [k for k in ("model", "profile_json", "synthetic") if getattr(args, k)]
    if len(given) != 1 or bool(args.model) != bool(args.cluster):
        raise UsageError("give exactly one of --model with --cluster, --profile-json FILE, --synthetic NAME")
    check_options(args)
    if args.profile_json:
        return read_profile(args.profile_json)
    batch = {} if args.batch is None else {"batch": args.batch}
    if args.synthetic:
        if args.seq is not None and args.synthetic != "resnet50":
            batch["seq"] = args.seq
        return SYNTHETIC[args.synthetic](**batch)
    from yewpy.apps.dnn.cluster import load_cluster
    from yewpy.apps.dnn.fusion.model import profile_from_model
    from yewpy.apps.dnn.model_files import load_model

    return profile_from_model(load_model(args.model), load_cluster(args.cluster), seq=args.seq,
                              grad_bytes=4 if args.grad_bytes is None else args.grad_bytes,
                              efficiency=0.5 if args.efficiency is None else args.efficiency, **batch)


def network(args: argparse.Namespace) -> str:
    """Where the profile's all-reduce costs come from, in words."""
    if args.profile_json:
        return f"as the profile {args.profile_json} gives them"
    if args.synthetic:
        return synthetic_network()
    return f"--cluster {args.cluster}, ring all-reduce in each node and between nodes"


def _sizes(sizes: list[int], shown: int = 24) -> str:
    """Bucket sizes in MB, in backward order; past ``shown`` buckets the first and last few."""
    text = [f"{b / 1e6:.3g}" for b in sizes]
    if len(text) <= shown:
        return " ".join(text)
    return (" ".join(text[: shown // 2]) + f" ... ({len(text) - shown} more) ... "
            + " ".join(text[-shown // 2:]))


def _ms(ns: float) -> str:
    return f"{ns / 1e6:.3f} ms"


def solve(args: argparse.Namespace, coordination: Any = "seq", **params: Any) -> tuple[Result, list[str]]:
    profile = load(args)
    problem = Fusion(profile, streams=args.streams, max_buckets=args.max_buckets,
                     cap_bytes=round(args.cap_mb * MIB))
    searching = params.keys() - {"progress", "progress_json"}   # progress lines are on by default
    if args.method != "bnb" and (coordination != "seq" or searching):
        raise UsageError(f"the search flags apply to --method bnb, not {args.method}")
    start = time.perf_counter()
    if args.method == "bnb":
        result = problem.search(coordination, **params)
        plan: Plan = problem.merged(result.solution)
    else:
        if args.method == "dp":
            plan = problem.merged(problem.dp())
        else:
            plan = problem.fixed(round(args.bucket_mb * MIB))
        status = "optimal" if args.method == "dp" else "evaluated"
        result = Result(kind="optimisation", status=status, nodes=0, seconds=time.perf_counter() - start,
                        objective=plan.comm_ns)
    baselines = problem.baselines(args.bucket_mb)
    n, left_out = len(profile.tensors), None
    if args.streams == 1 and args.method != "dp":
        if not problem.dp_fits():
            left_out = (f"dp row left out: its table for N = {n} tensors and K = {problem.max_buckets} "
                        f"buckets would need (K + 1)(N + 1) = {(problem.max_buckets + 1) * (n + 1):.1e} "
                        f"entries, past {DP_TABLE_ENTRIES:.1e}")
        else:
            baselines["dp"] = problem.merged(problem.dp())
    result.solution = [list(b) for b in plan.buckets()]
    assumed = network(args)
    result.extras = {"method": args.method, "profile": profile.to_dict(), "network": assumed,
                     "variant": {"streams": args.streams, "max_buckets": args.max_buckets,
                                 "cap_bytes": problem.cap_bytes},
                     "plan": problem.describe(plan), "left_out": left_out,
                     "baselines": {k: problem.describe(p) for k, p in baselines.items()}}
    iteration = problem.iteration_seconds(plan)
    sizes = result.extras["plan"]["bucket_bytes"]
    lines = [f"Profile: {profile.name}: {len(profile.tensors)} tensors, "
             f"{profile.total_bytes / 1e6:.1f} MB of gradients, forward {_ms(profile.forward_ns)}, "
             f"backward {_ms(profile.ready_ns[-1])}",
             f"Network: {assumed}; an all-reduce costs {profile.alpha_ns / 1e3:.1f} us + "
             f"{profile.beta_fs / 1e3:.1f} ms per GB",
             f"Variant: {args.streams} stream(s), bucket cap {args.max_buckets or 'none'}, "
             f"bytes cap {f'{args.cap_mb:g} MiB' if args.cap_mb else 'none'}",
             f"Method {args.method}: {len(plan.ends)} buckets, iteration {iteration * 1e3:.3f} ms, "
             f"all-reduce exposed {_ms(plan.comm_ns - profile.ready_ns[-1])}"
             + ("" if plan.feasible else " (violates a cap)"),
             "Bucket sizes (MB): " + _sizes(sizes)]
    for name, other in {f"{args.method} (this plan)": plan, **baselines}.items():
        ratio = problem.iteration_seconds(other) / iteration if iteration else 1.0  # all free
        lines.append(f"  {name:<16} {len(other.ends):4d} buckets  iteration "
                     f"{problem.iteration_seconds(other) * 1e3:10.3f} ms  = {ratio:.3f}x"
                     + ("" if other.feasible else "  (violates a cap)"))
    if left_out:
        lines.append(f"  ({left_out})")
    return result, lines
