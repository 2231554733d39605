"""Search time and nodes of the DNN planner (prints figures; see docs/benchmarks.md, "App: DNN planner").

python benchmarks/bench_dnn_plan.py gpt3          # GPT-3 175B on 1024 A100: BnB search
python benchmarks/bench_dnn_plan.py gpt3-count    # ... and the exact size of the --exhaustive tree (minutes)
python benchmarks/bench_dnn_plan.py gpt3-walk 30  # ... and --exhaustive itself, time-capped
python benchmarks/bench_dnn_plan.py mixed 4       # GPT 18.4B on 4+4 A100/V100 nodes, one search
mpiexec -n 2 python benchmarks/bench_dnn_plan.py mixed 8 stacksteal
python benchmarks/bench_dnn_plan.py cli 3         # the issue's end-to-end goals: `yewpy dnn-plan` processes
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


def main() -> None:
    what = sys.argv[1]
    if what == "cli":
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
