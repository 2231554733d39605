"""Search time and nodes of the DNN planner (prints figures; see docs/benchmarks.md, "App: DNN planner").

python benchmarks/bench_dnn_plan.py gpt3          # GPT-3 175B on 1024 A100: BnB search
python benchmarks/bench_dnn_plan.py gpt3-count    # ... and the exact size of the --exhaustive tree (minutes)
python benchmarks/bench_dnn_plan.py gpt3-walk 30  # ... and --exhaustive itself, time-capped
python benchmarks/bench_dnn_plan.py mixed 4       # GPT 18.4B on 4+4 A100/V100 nodes, one search
mpiexec -n 2 python benchmarks/bench_dnn_plan.py mixed 8 stacksteal
python benchmarks/bench_dnn_plan.py cli 3         # the issue's end-to-end goals: `yewpy dnn-plan` processes
python benchmarks/bench_dnn_plan.py sweep 3       # planning time of every preset, Table 1 row and HF config
python benchmarks/bench_dnn_plan.py sweep 1 "" --recompute none,selective,full,block  # ... with more flags
python benchmarks/bench_dnn_plan.py sites 1000 120  # GPT-2 XL on three sites, left free (FusionLLM)
python benchmarks/bench_dnn_plan.py mixed-tp 3    # two-kind clusters with and without --mixed-tp (HAP)
python benchmarks/bench_dnn_plan.py two-kind 3    # two-kind clusters with and without the several-part floor
python benchmarks/bench_dnn_plan.py hap-floor 3   # the same with and without the hap shapes' floors
python benchmarks/bench_dnn_plan.py revisions /tmp/base/site 3  # two-kind clusters: this tree against another
python benchmarks/bench_dnn_plan.py revisions /tmp/base/site 3 mixed  # three kinds and held-out mixes
python benchmarks/bench_dnn_plan.py mixed-plans 3  # the same cases' whole planning time, as the CLI times it
python benchmarks/bench_dnn_plan.py plans-against /tmp/base/site 3  # ... against another tree, alternating
python benchmarks/bench_dnn_plan.py plans-against /tmp/base/site 3 --stage-replication
python benchmarks/bench_dnn_plan.py plans-against /tmp/base/site 3 --block  # every recompute mode
python benchmarks/bench_dnn_plan.py many-kinds /tmp/base/site 60  # four to six GPU kinds, time-capped
"""

from __future__ import annotations

import json
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from yewpy.apps.dnn.cluster import load_cluster
from yewpy.apps.dnn.cost import Training
from yewpy.apps.dnn.model_files import load_model
from yewpy.apps.dnn_plan import plan
from yewpy.runtime.ranks import world


def run(model: str, cluster: str, batch: int, coordination: str = "seq", **params) -> None:
    t0 = time.perf_counter()
    result = plan(
        load_model(model),
        load_cluster(cluster),
        Training(batch, 2048),
        top=1,
        coordination=coordination,
        **params,
    )
    seconds = time.perf_counter() - t0
    comm = world()
    if comm is None or comm.Get_rank() == 0:
        p = result.extras["plan"]
        print(
            f"{model} on {cluster} [{coordination}, ranks={result.metrics.get('ranks', 1)}]: "
            f"{seconds:.3f} s, {result.nodes} nodes, {result.objective:.4f} s/iter, "
            f"tp={p['tp']} pp={p['pp']} dp={p['dp']} mb={p['microbatch']} {p['schedule']} "
            f"stages={[(s['group'], s['blocks'][1] - s['blocks'][0]) for s in p['stages']]}",
            flush=True,
        )


# A Llama-3.1-405B-shaped model (126 layers, h 16384, 128 heads, 8 KV heads, SwiGLU 53248, s 8192)
LLAMA_405B = {"name": "llama3.1-405b", "transformer": {
    "layers": 126, "hidden": 16384, "heads": 128, "kv_heads": 8, "vocab": 128256, "seq": 8192, "ffn": 53248,
    "swiglu": True, "bias": False, "tied": False, "positions": False}}


def cli(repeat: int) -> None:
    """The issue's goals as a user meets them: whole `yewpy dnn-plan` processes (default --top 3),
    process wall seconds and the planning seconds the command prints, medians of ``repeat``."""
    yewpy = str(Path(sys.executable).parent / "yewpy")
    with tempfile.TemporaryDirectory() as tmp:
        llama = Path(tmp) / "llama405b.json"
        llama.write_text(json.dumps(LLAMA_405B))
        cases = [
            ("GPT-3 175B on 1024 A100 (goal < 1 s)", ["gpt3-175b", "dgx-a100-80g:128x8", "1536"], repeat),
            ("405B Llama on 16,384 H100 (goal < 2 s)", [str(llama), "dgx-h100-80g:2048x8", "2048"], 1),
            ("175B on 32 A100, no plan fits (goal < 1 s)", ["gpt3-175b", "dgx-a100-80g:4x8", "1536"], repeat),
        ]
        for label, (model, cluster, batch), times in cases:
            walls, planning, codes = [], [], set()
            for _ in range(times):
                t0 = time.perf_counter()
                argv = ["dnn-plan", "--model", model, "--cluster", cluster, "--global-batch", batch]
                out = subprocess.run([yewpy, *argv, "--json", "--quiet"], capture_output=True, text=True)
                walls.append(time.perf_counter() - t0)
                codes.add(out.returncode)
                if out.returncode == 0:
                    planning.append(json.loads(out.stdout)["seconds"])
            shown = f", planning {statistics.median(planning):.3f} s" if planning else ""
            print(f"{label}: process {statistics.median(walls):.3f} s{shown} (median of {times}; exit "
                  f"{sorted(codes)})", flush=True)


HF_CONFIGS = Path(__file__).resolve().parent.parent / "tests" / "data" / "hf_configs"
A100, H100 = "dgx-a100-80g", "dgx-h100-80g"


def sweep_cases() -> list[tuple[str, list[str]]]:
    """Every case the planner's speed goal names, as `yewpy dnn-plan` arguments (default --top 3):
    issue 24's preset sweep, Megatron-LM's Table 1 rows, and public Hugging Face configs on 64 to
    16,384 GPUs (sequence 4096, batch 2048; the configs' own maximum positions are up to 131,072)."""
    cases = []
    for model in ("llama3-8b", "llama3-70b", "mixtral-8x7b", "gpt3-175b", "megatron-529.6b", "megatron-1t"):
        for cluster in (f"{A100}:8x8", f"{A100}:64x8", f"{A100}:256x8", f"{H100}:1024x8"):
            cases.append((f"sweep {model} {cluster}",
                          ["--model", model, "--cluster", cluster, "--global-batch", "2048"]))
    table1 = [("megatron-1.7b", 4, 512), ("megatron-3.6b", 8, 512), ("megatron-7.5b", 16, 512),
              ("megatron-18.4b", 32, 1024), ("megatron-39.1b", 64, 1536), ("megatron-76.1b", 128, 1792),
              ("megatron-145.6b", 192, 2304), ("megatron-310.1b", 240, 2160),
              ("megatron-529.6b", 315, 2520), ("megatron-1t", 384, 3072)]
    for model, nodes, batch in table1:
        cases.append((f"table1 {model}", ["--model", model, "--cluster", f"{A100}:{nodes}x8",
                                          "--global-batch", str(batch), "--seq", "2048"]))
    for config in sorted(HF_CONFIGS.glob("*.json")):
        for cluster in (f"{A100}:8x8", f"{A100}:64x8", f"{H100}:512x8", f"{H100}:2048x8"):
            cases.append((f"hf {config.stem} {cluster}", ["--model", str(config), "--cluster", cluster,
                                                          "--global-batch", "2048", "--seq", "4096"]))
    return cases


def sweep(repeat: int, only: str = "", extra: list[str] | None = None) -> None:
    """Planning seconds (what `yewpy dnn-plan` prints as wall seconds) of every sweep case, the
    median of ``repeat`` runs in this process, then the distribution: median, 90th percentile, worst,
    and how many cases exceed 1 s and 2 s. ``extra``: flags added to every case."""
    import argparse

    from yewpy.apps.dnn_plan import configure, solve
    from yewpy.errors import UsageError

    parser = argparse.ArgumentParser()
    configure(parser)
    times = []
    for label, argv in sweep_cases():
        if only not in label:
            continue
        runs, outcome = [], ""
        for _ in range(repeat):
            t0 = time.perf_counter()
            try:
                result, _ = solve(parser.parse_args(argv + (extra or [])))
                outcome = f"{result.objective:.4f} s/iter, {result.nodes} nodes"
            except UsageError as exc:
                outcome = f"refused: {str(exc)[:60]}"
            runs.append(time.perf_counter() - t0)
        times.append((statistics.median(runs), label))
        print(f"{statistics.median(runs):7.3f} s  {label}: {outcome}", flush=True)
    values = sorted(t for t, _ in times)
    worst = max(times)
    print(f"{len(values)} cases: median {statistics.median(values):.3f} s, 90th percentile "
          f"{values[int(0.9 * (len(values) - 1))]:.3f} s, worst {worst[0]:.3f} s ({worst[1]}); "
          f"{sum(t > 1 for t in values)} over 1 s, {sum(t > 2 for t in values)} over 2 s")


def mixed_tp(repeat: int) -> None:
    """Planning seconds on clusters of two GPU kinds without and with ``--mixed-tp`` (HAP's uneven TP
    shares), alternating in this process, medians of ``repeat``; the plan found and whether it pairs
    the kinds. The fifth and last cases have links of 150 GB/s per GPU between nodes, where pairing
    wins; the last three have unequal node counts."""
    import argparse

    from yewpy.apps.dnn_plan import configure, solve

    parser = argparse.ArgumentParser()
    configure(parser)
    with tempfile.TemporaryDirectory() as tmp:
        wide, fast = Path(tmp) / "wide.json", Path(tmp) / "fast.json"
        wide.write_text(json.dumps({"transformer": {"layers": 4, "hidden": 12288, "heads": 96, "vocab": 51200,
                                                    "seq": 2048}}))
        fast.write_text(json.dumps({"groups": [{"preset": A100, "nodes": 2, "inter_gbps": 150},
                                               {"preset": "dgx-v100-32g", "nodes": 2, "inter_gbps": 150}]}))
        # unequal node counts (stop 46): a pair and the larger group's other nodes
        deeper, uneven = Path(tmp) / "deeper.json", Path(tmp) / "uneven.json"
        deeper.write_text(json.dumps({"transformer": {"layers": 8, "hidden": 12288, "heads": 96,
                                                      "vocab": 51200, "seq": 2048}}))
        uneven.write_text(json.dumps({"groups": [{"preset": A100, "nodes": 3, "inter_gbps": 150},
                                                 {"preset": "dgx-v100-32g", "nodes": 1, "inter_gbps": 150}]}))
        cases = [("megatron-18.4b", f"{A100}:4x8+dgx-v100-32g:4x8", "512"),
                 ("gpt3-175b", f"{A100}:16x8+dgx-v100-32g:16x8", "1536"),
                 ("llama3-8b", f"{H100}:8x8+{A100}:8x8", "1024"),
                 ("llama3-70b", f"{A100}:32x8+dgx-a100-40g:32x8", "1024"),
                 (str(wide), str(fast), "256"),
                 ("megatron-39.1b", f"{A100}:8x8+dgx-v100-32g:16x8", "1024"),
                 ("llama2-13b", f"{H100}:4x8+dgx-v100-32g:8x8", "512"),
                 (str(deeper), str(uneven), "256")]
        for model, cluster, batch in cases:
            argv = ["--model", model, "--cluster", cluster, "--global-batch", batch]
            times: dict = {False: [], True: []}
            found = {}
            for _ in range(repeat):
                for paired in (False, True):
                    t0 = time.perf_counter()
                    result, _ = solve(parser.parse_args(argv + (["--mixed-tp"] if paired else [])))
                    times[paired].append(time.perf_counter() - t0)
                    stages = result.extras["plan"]["stages"]
                    found[paired] = (result.objective, result.nodes, any("tp_shares" in st for st in stages))
            off, on = (statistics.median(times[k]) for k in (False, True))
            label = f"{Path(model).stem if model.endswith('.json') else model} on " \
                    f"{Path(cluster).stem if cluster.endswith('.json') else cluster}"
            print(f"{label}: {off:.2f} s without, {on:.2f} s with "
                  f"(x{on / off:.2f}); plans {found[False][0]:.4f} / {found[True][0]:.4f} s/iter, nodes "
                  f"{found[False][1]} / {found[True][1]}, paired {found[True][2]}", flush=True)


TWO_KIND = [("megatron-18.4b", f"{A100}:4x8+dgx-v100-32g:4x8", 512),
            ("gpt3-175b", f"{A100}:16x8+dgx-v100-32g:16x8", 1536),
            ("llama3-8b", f"{H100}:8x8+{A100}:8x8", 1024),
            ("llama3-70b", f"{A100}:32x8+dgx-a100-40g:32x8", 1024),
            ("mixtral-8x7b", f"{H100}:4x8+{A100}:8x8", 512),
            ("megatron-39.1b", f"{A100}:8x8+dgx-v100-32g:16x8", 1024)]


def two_kind(repeat: int, floor: str = "pair") -> None:
    """Seconds to build and search a PlanSearch (--top 3) on two-kind clusters with a floor and
    without it, alternating in this process, medians of ``repeat``; plans and nodes of each.
    ``floor``: "pair", the several-part stage floor (``bounds._parts_floor`` replaced by a method
    returning -inf, as before it existed); "hap", the hap shapes' memory-aware floor and slot
    bound (``bounds._hap_suffix`` returning its given low, ``search._hap_slot_bound`` -inf)."""
    import math

    from yewpy.apps.dnn.planner import PlanSearch

    names = {"pair": {"_parts_floor": lambda self, sid: -math.inf},
             "hap": {"_hap_suffix": lambda self, sid, i, lo, q, low: low,
                     "_hap_slot_bound": lambda self, *args: -math.inf}}[floor]
    kept = {name: getattr(PlanSearch, name) for name in names}
    for model, cluster, batch in TWO_KIND:
        times: dict = {True: [], False: []}
        found = {}
        for _ in range(repeat):
            for on in (False, True):
                for name, off in names.items():
                    setattr(PlanSearch, name, kept[name] if on else off)
                t0 = time.perf_counter()
                search = PlanSearch(load_model(model), load_cluster(cluster), Training(batch, 2048), top=3)
                result = search.search()
                times[on].append(time.perf_counter() - t0)
                found[on] = (result.objective, result.nodes)
        for name, method in kept.items():
            setattr(PlanSearch, name, method)
        off, on = (statistics.median(times[k]) for k in (False, True))
        print(f"{model} on {cluster}: {off:.2f} s without the floor, {on:.2f} s with (x{on / off:.2f}); "
              f"plans {found[False][0]:.4f} / {found[True][0]:.4f} s/iter, nodes {found[False][1]} / "
              f"{found[True][1]}", flush=True)


# two-kind clusters not looked at while the two-kind floors were built (``revisions``)
TWO_KIND_UNSEEN = [("llama2-13b", f"{H100}:4x8+dgx-v100-32g:8x8", 512),
                   ("megatron-76.1b", f"dgx-a100-40g:8x8+{H100}:8x8", 1024),
                   ("llama2-70b", f"{H100}:16x8+{A100}:16x8", 1024),
                   ("gpt3-175b", f"{H100}:32x8+dgx-a100-40g:32x8", 1536),
                   ("megatron-145.6b", f"{A100}:24x8+dgx-v100-32g:8x8", 1024),
                   ("mixtral-8x7b", "dgx-a100-40g:8x8+dgx-v100-32g:8x8", 256)]

# three GPU kinds (stop 44's tables), then mixes of Hugging Face configs and nodes chosen after
# stop 44's changes were made (its held-out table; ``revisions BASE REPEAT mixed``)
MIXED_KINDS = [("megatron-1.7b", f"{A100}:2x8+dgx-v100-32g:2x8+{H100}:2x8", 512),
               ("llama3-8b", f"{A100}:4x8+dgx-v100-32g:4x8+{H100}:2x8", 512),
               ("mixtral-8x7b", f"{A100}:4x8+dgx-v100-32g:4x8+{H100}:2x8", 512),
               (str(HF_CONFIGS / "qwen2-72b.json"), f"{H100}:8x8+{A100}:8x8", 1024),
               (str(HF_CONFIGS / "falcon-180b.json"), f"{H100}:32x8+{A100}:16x8", 1536),
               (str(HF_CONFIGS / "mixtral-8x22b.json"), f"{A100}:16x8+dgx-v100-32g:16x8", 512),
               (str(HF_CONFIGS / "mistral-7b.json"), f"{H100}:2x8+dgx-a100-40g:6x8", 512),
               (str(HF_CONFIGS / "gpt-neox-20b.json"), f"{A100}:4x8+dgx-a100-40g:4x8+dgx-v100-32g:4x8", 512),
               (str(HF_CONFIGS / "llama-3.1-70b.json"),
                f"dgx-a100-40g:16x8+{H100}:8x8+dgx-v100-32g:8x8", 1024)]

ONE_PLAN = """
import json, sys, time
from yewpy.apps.dnn.cluster import load_cluster
from yewpy.apps.dnn.cost import Training
from yewpy.apps.dnn.model_files import load_model
from yewpy.apps.dnn.planner import PlanSearch
model, cluster, batch = sys.argv[1], sys.argv[2], int(sys.argv[3])
t0 = time.perf_counter()
search = PlanSearch(load_model(model), load_cluster(cluster), Training(batch, 2048), top=3)
built = time.perf_counter() - t0
result = search.search()
print(json.dumps([time.perf_counter() - t0, result.nodes, result.objective, built]))
"""


def _alternating(base: str, repeat: int, script: str, args: list[str]) -> dict:
    """``script``'s JSON output with ``args``, ``repeat`` times under the yewpy at ``base`` and under
    this tree, one process per run, alternating: {"base": [...], "this": [...]}."""
    import os

    runs: dict = {"base": [], "this": []}
    for _ in range(repeat):
        for which in runs:
            env = dict(os.environ)
            if which == "base":
                env["PYTHONPATH"] = base
            out = subprocess.run([sys.executable, "-c", script, *args], env=env, cwd=tempfile.gettempdir(),
                                 capture_output=True, text=True, check=True)
            runs[which].append(json.loads(out.stdout))
    return runs


def revisions(base: str, repeat: int, which: str = "two-kind") -> None:
    """Seconds to build and search a PlanSearch (--top 3) on the two-kind clusters (``which``
    "mixed": on ``MIXED_KINDS``), this tree against the yewpy at ``base`` (a folder holding a
    ``yewpy`` package with its apps and compiled modules, e.g. ``git archive`` of an older commit
    with ``apps`` and ``skeletons`` copied in as ``yewpy/apps`` and ``yewpy/skeletons`` and this
    tree's ``.so`` files beside them), one process per run, alternating, medians of ``repeat``
    (the build's in brackets); the plans must be the same."""
    for model, cluster, batch in MIXED_KINDS if which == "mixed" else TWO_KIND + TWO_KIND_UNSEEN:
        runs = _alternating(base, repeat, ONE_PLAN, [model, cluster, str(batch)])
        old, new = (statistics.median(r[0] for r in runs[k]) for k in ("base", "this"))
        built = [statistics.median(r[3] for r in runs[k]) for k in ("base", "this")]
        same = runs["base"][0][2] == runs["this"][0][2]
        name = Path(model).stem if model.endswith(".json") else model
        print(f"{name} on {cluster}, B {batch}: {old:.2f} s -> {new:.2f} s (x{new / old:.2f}; "
              f"build {built[0]:.2f} -> {built[1]:.2f} s); nodes "
              f"{runs['base'][0][1]} -> {runs['this'][0][1]}; plan {runs['this'][0][2]:.4f} s/iter"
              f"{'' if same else ' DIFFERENT from base ' + str(runs['base'][0][2])}", flush=True)


GPT2_XL = {"name": "gpt2-xl", "transformer": {"layers": 48, "hidden": 1600, "heads": 25, "vocab": 50257,
                                              "seq": 1024}}


def sites(mbps: float = 1000.0, limit: float = 120.0) -> None:
    """GPT-2 XL on three sites of 16 GPUs joined pairwise by ``mbps`` links of 10 ms, left free (no
    --fix), without compression and with top-k 1:10 or 1:100 allowed: search seconds, nodes and
    time per iteration, on three identical A100 sites and on three mixed ones (A100 80GB, A100
    40GB, V100 32GB); ``limit`` caps each search."""
    from yewpy.apps.dnn.planner import PlanSearch

    with tempfile.TemporaryDirectory() as tmp:
        model_path = Path(tmp) / "gpt2-xl.json"
        model_path.write_text(json.dumps(GPT2_XL))
        model = load_model(str(model_path))
        for label, presets in (("identical", ("dgx-a100-80g",) * 3),
                               ("mixed", ("dgx-a100-80g", "dgx-a100-40g", "dgx-v100-32g"))):
            names = ["hk", "sz", "gz"]
            doc = {"groups": [{"preset": p, "name": f"{x}-{p}", "nodes": 2, "site": x}
                              for p, x in zip(presets, names)],
                   "links": [{"sites": [a, b], "mbps": mbps, "latency_ms": 10}
                             for i, a in enumerate(names) for b in names[i + 1:]]}
            cluster_path = Path(tmp) / f"{label}.json"
            cluster_path.write_text(json.dumps(doc))
            for ratios in ((1.0,), (1.0, 10.0, 100.0)):
                t0 = time.perf_counter()
                train = Training(512, 1024, wan_compression=ratios)
                search = PlanSearch(model, load_cluster(str(cluster_path)), train, top=3)
                result = search.search(time_limit=limit)
                seconds = time.perf_counter() - t0
                print(f"{label} sites, {mbps:g} Mbps, compression {ratios}: {seconds:.2f} s, {result.nodes} "
                      f"nodes, {result.status}, best {result.objective:.4f} s/iter", flush=True)


def mixed_plans(repeat: int) -> None:
    """Whole planning seconds (``plan``, what `yewpy dnn-plan` times: search, tie-break, sensitivity
    sweep, launch arguments; ``--top 3``) on every mixed-kind case (``MIXED_KINDS``, ``TWO_KIND``,
    ``TWO_KIND_UNSEEN``), the median of ``repeat`` runs in this process. Run it once per tree
    (``PYTHONPATH`` set for another) and compare."""
    for model, cluster, batch in MIXED_KINDS + TWO_KIND + TWO_KIND_UNSEEN:
        runs = []
        for _ in range(repeat):
            t0 = time.perf_counter()
            result = plan(load_model(model), load_cluster(cluster), Training(batch, 2048), top=3)
            runs.append(time.perf_counter() - t0)
        name = Path(model).stem if model.endswith(".json") else model
        print(f"{statistics.median(runs):6.2f} s  {name} on {cluster}, B {batch}: "
              f"{result.objective:.4f} s/iter", flush=True)


ONE_WHOLE_PLAN = """
import json, sys, time
from yewpy.apps.dnn.cluster import load_cluster
from yewpy.apps.dnn.cost import Training
from yewpy.apps.dnn.model_files import load_model
from yewpy.apps.dnn_plan import plan
model, cluster, batch, replication = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4] == "1"
block = ("none", "selective", "full", "block") if sys.argv[5:] == ["block"] else None
t0 = time.perf_counter()
train = Training(batch, 2048, stage_replication=replication, **({"recompute": block} if block else {}))
result = plan(load_model(model), load_cluster(cluster), train, top=3)
top = [p["iteration_seconds"] for p in result.extras["top"]]
print(json.dumps([time.perf_counter() - t0, result.extras["nodes"], top]))
"""


def plans_against(base: str, repeat: int, replication: bool, block: bool = False) -> None:
    """Whole planning seconds (``plan``, as ``mixed-plans``) on every mixed-kind case, this tree
    against the yewpy at ``base`` (laid out as ``revisions`` says), one process per run,
    alternating, medians of ``repeat``; with ``--stage-replication`` where ``replication``, and every
    recomputation mode, ``block`` among them, where ``block``. The top-3 times must be the same."""
    ratios = []
    for model, cluster, batch in MIXED_KINDS + TWO_KIND + TWO_KIND_UNSEEN:
        args = [model, cluster, str(batch), "1" if replication else "0", *(["block"] if block else [])]
        runs = _alternating(base, repeat, ONE_WHOLE_PLAN, args)
        old, new = (statistics.median(r[0] for r in runs[k]) for k in ("base", "this"))
        ratios.append(new / old)
        same = runs["base"][0][2] == runs["this"][0][2]
        name = Path(model).stem if model.endswith(".json") else model
        nodes = f"{runs['base'][0][1]} -> {runs['this'][0][1]}"
        print(f"{old:6.2f} -> {new:6.2f} s (x{new / old:.2f}); nodes {nodes}  {name} on {cluster}, B {batch}"
              f"{'' if same else '  DIFFERENT top 3'}", flush=True)
    spread = f"x{min(ratios):.2f}-{max(ratios):.2f}, median x{statistics.median(ratios):.2f}"
    print(f"{len(ratios)} cases: {spread}")


#: four to six GPU kinds: the first case is the one the seed's subset round was built on, the
#: others were not looked at while building it
KINDS = ["dgx-a100-80g", "dgx-a100-40g", "dgx-h100-80g", "dgx-v100-32g", "dgx-v100-16g", "p3.16xlarge"]
MANY_KINDS = [("megatron-1.7b", "+".join(f"{k}:1x8" for k in KINDS), 64),
              ("megatron-1.7b", "+".join(f"{k}:1x8" for k in KINDS[:5]), 64),
              ("llama3-8b", "+".join(f"{k}:2x8" for k in KINDS[:5]), 256),
              ("llama3-8b", "+".join(f"{k}:1x8" for k in KINDS), 128),
              ("gpt3-175b", "+".join(f"{k}:4x8" for k in KINDS[:4]), 512),
              ("mixtral-8x7b", "+".join(f"{k}:2x8" for k in KINDS[:4]), 256),
              ("megatron-18.4b", "+".join(f"{k}:2x8" for k in KINDS), 512),
              ("llama3-70b", "+".join(f"{k}:4x8" for k in KINDS[:5]), 512)]

ONE_LIMITED_PLAN = """
import json, sys, time
from yewpy.apps.dnn.cluster import load_cluster
from yewpy.apps.dnn.cost import Training
from yewpy.apps.dnn.model_files import load_model
from yewpy.apps.dnn_plan import plan
model, cluster, batch, limit = sys.argv[1], sys.argv[2], int(sys.argv[3]), float(sys.argv[4])
t0 = time.perf_counter()
result = plan(load_model(model), load_cluster(cluster), Training(batch, 2048), top=3, time_limit=limit)
top = [p["iteration_seconds"] for p in result.extras.get("top", [])] or [float("inf")]
print(json.dumps([time.perf_counter() - t0, result.extras["nodes"], top, str(result.status)]))
"""


def many_kinds(base: str, limit: float, only: str = "") -> None:
    """Whole planning on four to six GPU kinds (``MANY_KINDS``; those whose model and cluster
    contain ``only``), this tree against the yewpy at ``base`` (laid out as ``revisions`` says),
    one run each, ``--time-limit`` ``limit``: seconds, nodes, status and the best plan's time (inf:
    none)."""
    for model, cluster, batch in MANY_KINDS:
        if only not in f"{model} {cluster}":
            continue
        runs = _alternating(base, 1, ONE_LIMITED_PLAN, [model, cluster, str(batch), str(limit)])
        line = "  ".join(f"{which}: {r[0]:6.2f} s, {r[1]:>9,} nodes, {r[3]}, best {r[2][0]:.4f} s"
                         for which, (r,) in runs.items())
        print(f"{line}  {model} on {cluster}, B {batch}", flush=True)


def main() -> None:
    what = sys.argv[1]
    if what == "sites":
        sites(*(float(x) for x in sys.argv[2:4]))
    elif what == "sweep":
        sweep(int(sys.argv[2]) if len(sys.argv) > 2 else 3, sys.argv[3] if len(sys.argv) > 3 else "",
              sys.argv[4:])
    elif what == "revisions":
        revisions(sys.argv[2], int(sys.argv[3]) if len(sys.argv) > 3 else 3, *sys.argv[4:5])
    elif what in ("two-kind", "hap-floor"):
        two_kind(int(sys.argv[2]) if len(sys.argv) > 2 else 3, "pair" if what == "two-kind" else "hap")
    elif what == "mixed-tp":
        mixed_tp(int(sys.argv[2]) if len(sys.argv) > 2 else 3)
    elif what == "plans-against":
        flags = sys.argv[4:]
        plans_against(sys.argv[2], int(sys.argv[3]), "--stage-replication" in flags, "--block" in flags)
    elif what == "many-kinds":
        many_kinds(sys.argv[2], float(sys.argv[3]) if len(sys.argv) > 3 else 60.0, *sys.argv[4:5])
    elif what == "mixed-plans":
        mixed_plans(int(sys.argv[2]) if len(sys.argv) > 2 else 3)
    elif what == "cli":
        cli(int(sys.argv[2]) if len(sys.argv) > 2 else 3)
    elif what == "gpt3":
        run("gpt3-175b", "dgx-a100-80g:128x8", 1536)
    elif what == "gpt3-count":
        from yewpy.apps.dnn.planner import PlanSearch
        from yewpy.apps.dnn.planner.treecount import exhaustive_nodes

        bnb = plan(load_model("gpt3-175b"), load_cluster("dgx-a100-80g:128x8"), Training(1536, 2048), top=1)
        search = PlanSearch(load_model("gpt3-175b"), load_cluster("dgx-a100-80g:128x8"), Training(1536, 2048))
        for filtered in (True, False):
            t0 = time.perf_counter()
            total = exhaustive_nodes(search, filtered)
            label = "exhaustive tree (--exhaustive)" if filtered else "every feasible option (no filter)"
            print(
                f"{label}: {total:.4e} nodes (exact: {total}), counted in {time.perf_counter() - t0:.0f} s; "
                f"BnB {bnb.nodes} nodes, ratio {total / bnb.nodes:.3e}",
                flush=True,
            )
    elif what == "gpt3-walk":
        limit = float(sys.argv[2]) if len(sys.argv) > 2 else 60.0
        t0 = time.perf_counter()
        from yewpy.apps.dnn.planner import ExhaustivePlanSearch

        ex = ExhaustivePlanSearch(
            load_model("gpt3-175b"), load_cluster("dgx-a100-80g:128x8"), Training(1536, 2048)
        )
        r = ex.search(time_limit=limit)
        print(f"exhaustive: {r.nodes} nodes in {time.perf_counter() - t0:.1f} s, status {r.status}")
    else:
        nodes = int(sys.argv[2])
        coordination = sys.argv[3] if len(sys.argv) > 3 else "seq"
        run("megatron-18.4b", f"dgx-a100-80g:{nodes}x8+dgx-v100-32g:{nodes}x8", 512, coordination)


if __name__ == "__main__":
    main()
