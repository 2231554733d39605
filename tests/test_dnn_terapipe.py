"""TeraPipe's token-level pipelining as a planner schedule: its paper's GPT3-175B finding, GPipe
as its one-slice case, the search exact with it, and the command line's handling of it."""

from __future__ import annotations

import json
import math
import subprocess

import pytest

from support import yewpy_cmd
from yewpy.apps.dnn.cluster import load_cluster
from yewpy.apps.dnn.cost import Training
from yewpy.apps.dnn.models import transformer
from yewpy.apps.dnn.planner import ExhaustivePlanSearch, PlanSearch
from yewpy.apps.dnn_plan import plan


def _gpt3(layers: int, hidden: int, heads: int):
    return transformer(f"gpt3-{layers}x{hidden}", layers, hidden, heads, 50257, 2048)


def _seconds(model, cluster: str, batch: int, layout: dict, schedule: str, **train) -> tuple[float, dict]:
    fix = {**layout, "mb": 1, "schedule": schedule}
    result = plan(model, load_cluster(cluster), Training(batch, 2048, fix=fix, schedules=(schedule,),
                                                          precision="fp16", **train), top=1)
    return result.objective, result.extras["plan"]


@pytest.mark.parametrize("setting, layers, hidden, heads, pp, tp, published, low, high", [
    # Li et al., ICML 2021, Table 1 and Fig. 5: GPT3-175B, batch 2, 48 p3.16xlarge (384 V100)
    ("(10), fitted", 96, 12288, 96, 48, 8, 5.822 / 1.160, 4.5, 5.6),
    ("(9), held out", 96, 12288, 96, 96, 4, 9.990 / 1.481, 5.4, 8.1),
])
def test_terapipe_speeds_up_gpt3_175b_over_gpipe_as_its_paper_found(setting, layers, hidden, heads, pp, tp,
                                                                     published, low, high):
    """The 5.0x of TeraPipe's abstract is setting (10), on which the slice overhead was fitted (5.13x
    here); setting (9), not used in the fit, published 6.75x (6.53x here). Within 20% of each."""
    model = _gpt3(layers, hidden, heads)
    layout = {"tp": tp, "pp": pp, "dp": 1}
    gpipe, _ = _seconds(model, "p3.16xlarge:48x8", 2, layout, "gpipe")
    terapipe, best = _seconds(model, "p3.16xlarge:48x8", 2, layout, "terapipe")
    assert low < gpipe / terapipe < high and abs(math.log(gpipe / terapipe / published)) < math.log(1.2)
    assert best["schedule"] == "terapipe" and best["token_slices"] > 1
    if pp == 48:                                 # the paper's slices for (10): 32 over 2 sequences
        assert best["token_slices"] == 16 and gpipe == pytest.approx(5.822, rel=0.1)


def test_one_token_slice_is_gpipe_and_slices_cost_their_overhead():
    model = _gpt3(24, 2048, 16)
    layout = {"tp": 8, "pp": 12, "dp": 2}
    gpipe, _ = _seconds(model, "p3.16xlarge:24x8", 72, layout, "gpipe")
    one, _ = _seconds(model, "p3.16xlarge:24x8", 72, layout, "terapipe", token_slices=(1,))
    assert one == gpipe
    free, _ = _seconds(model, "p3.16xlarge:24x8", 72, layout, "terapipe", slice_overhead=0.0)
    costly, best = _seconds(model, "p3.16xlarge:24x8", 72, layout, "terapipe", slice_overhead=0.01)
    assert free < gpipe and best["token_slices"] == 2 and costly > free


@pytest.mark.parametrize("layers, hidden, batch", [(4, 1024, 8), (6, 4096, 4), (5, 2048, 16)])
def test_the_search_with_token_slices_equals_the_exhaustive_tree(layers, hidden, batch):
    model = transformer("small", layers=layers, hidden=hidden, heads=16, vocab=32000, seq=1024)
    cluster = load_cluster("dgx-v100-16g:1x8")
    train = Training(batch, 1024, microbatches=(1, 2), schedules=("1f1b", "gpipe", "terapipe"),
                     token_slices=(2, 8, 32), precision="fp16")
    bnb = PlanSearch(model, cluster, train).search(prune_level=False)
    exhaustive = ExhaustivePlanSearch(model, cluster, train).search(prune_level=False)
    assert bnb.objective == pytest.approx(exhaustive.objective, rel=1e-12)
    assert bnb.nodes <= exhaustive.nodes


def _cli(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([*yewpy_cmd(), "dnn-plan", *args], capture_output=True, text=True, timeout=300)


def test_the_command_line_plans_token_slices_when_asked_and_no_launcher_runs_them():
    base = ["--model", "gpt3-175b", "--cluster", "p3.16xlarge:48x8", "--global-batch", "2"]
    out = _cli(*base, "--fix", "tp=8,pp=48,slices=16")
    assert out.returncode == 0, out.stderr
    assert "schedule=terapipe n=16 token slices" in out.stdout
    assert "Megatron-LM: cannot run this plan: Megatron-LM has no token-level pipelining" in out.stdout
    default = json.loads(_cli(*base, "--fix", "tp=8,pp=48", "--json").stdout)
    assert default["plan"]["schedule"] != "terapipe"          # searched only when named
    asked = json.loads(_cli(*base, "--fix", "tp=8,pp=48,mb=1", "--schedules", "gpipe,terapipe",
                            "--json").stdout)
    assert asked["plan"]["schedule"] == "terapipe" and asked["plan"]["token_slices"] == 16


@pytest.mark.parametrize("args, message", [
    (["--fix", "slices=4,schedule=1f1b"], "token slices go with schedule=terapipe, not 1f1b"),
    (["--fix", "slices=4096"], "more slices than the sequence's 2048 tokens"),
    (["--fix", "slices=0"], "slices takes a positive integer"),
    (["--slice-overhead", "-5"], "--slice-overhead must be in [0, 1e+06], got -5.0"),
    (["--model", "mixtral-8x7b", "--fix", "schedule=terapipe"], "planned for dense models"),
])
def test_token_slice_options_are_checked(args, message):
    base = {"--model": "gpt3-175b", "--cluster": "p3.16xlarge:48x8", "--global-batch": "2"}
    for flag, value in zip(args[::2], args[1::2]):
        base[flag] = value
    out = _cli(*[x for pair in base.items() for x in pair])
    assert out.returncode == 2 and message in out.stderr and "Traceback" not in out.stderr, out.stderr


@pytest.mark.parametrize("flag, value", [
    (flag, value) for flag in ("--tp-overlap", "--slice-overhead")
    for value in ("nan", "inf", "-inf", "1e309", "-0", "0x10", "", "1,5", "\u0661", "0.5", "1")
] + [("--fix", f"tp=8,pp=48,slices={value}") for value in ("nan", "-1", "\u0661", "1e3", "16", "2048")])
def test_new_planner_options_answer_or_refuse_in_one_line(flag, value):
    """Any value of the options this stop added: a plan, or exit status 2 with one ``yewpy: error:``
    line (argparse's usage and its error line where the flag's value is not a number, as for every
    flag); never a traceback."""
    out = _cli("--model", "gpt3-175b", "--cluster", "p3.16xlarge:48x8", "--global-batch", "2", "--top", "1",
               f"{flag}={value}")
    assert "Traceback" not in out.stderr
    if out.returncode == 0:
        assert out.stdout.startswith("Model gpt3-175b")
    else:
        lines = out.stderr.strip().splitlines()
        one = len(lines) == 1 and lines[0].startswith("yewpy: error: ")
        usage = (lines[0].startswith("usage:")
                 and lines[-1].startswith(f"yewpy dnn-plan: error: argument {flag}"))
        assert out.returncode == 2 and (one or usage), out.stderr
