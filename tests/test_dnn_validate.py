"""The cost model against published training runs (``yewpy dnn-plan --validate``): the table's
size and hold-out rule, the one fitted value, and the tensor-parallel overlap it fits."""

from __future__ import annotations

import json
import statistics
import subprocess

import pytest

from support import yewpy_cmd
from yewpy.apps.dnn import published
from yewpy.apps.dnn.cluster import load_cluster
from yewpy.apps.dnn.cost import Training
from yewpy.apps.dnn.models import transformer
from yewpy.apps.dnn_plan import plan


def _cli(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([*yewpy_cmd(), "dnn-plan", *args], capture_output=True, text=True, timeout=300)


def test_validate_prints_every_published_run_against_its_prediction():
    out = _cli("--validate", "--json")
    assert out.returncode == 0, out.stderr
    data = json.loads(out.stdout)
    rows = data["validation"]
    sources = {row["source"] for row in rows}
    assert len(rows) >= 15 and len(sources) >= 5 and data["value"] == len(rows)
    for source in sources:                   # every source has runs on both sides of the split
        assert {row["held_out"] for row in rows if row["source"] == source} == {False, True}
    assert sum(row["held_out"] for row in rows) == len(rows) // 2
    for row in rows:
        assert row["error"] == pytest.approx(row["predicted_seconds"] / row["published_seconds"] - 1)
    errors = [abs(row["error"]) for row in rows]
    assert data["summary"]["all"]["median_abs_error"] == pytest.approx(statistics.median(errors))
    assert data["summary"]["all"]["max_abs_error"] == pytest.approx(max(errors))
    # The goal: a median of 5% at most, met (4.1%; 4.2% over the held-out runs alone); and
    # no run over 15%, not met (18.6%: MT-NLG's three runs, docs/dnn.md), guarded at 20%.
    held_out = [abs(row["error"]) for row in rows if row["held_out"]]
    assert statistics.median(errors) <= 0.05 and statistics.median(held_out) <= 0.05 and max(errors) < 0.20
    text = _cli("--validate").stdout
    assert "held out: " in text and "korthikanti-2022: Korthikanti et al." in text


def test_the_fitted_overlap_is_chosen_without_the_held_out_runs():
    def predict(run):
        return plan(run.model, run.cluster, run.training(), top=1).objective

    best, sums = published.fit_tp_overlap(predict)
    assert best == published.TP_COMM_OVERLAP
    assert best == min(sums, key=lambda o: sums[o][0])      # the calibration half alone decides


def test_bloom_at_tp_8_is_slower_than_at_tp_4_by_about_the_published_margin():
    # BLOOM's topology benchmarks: tp 8 ran 121.63 s, tp 4 102.03 s (same 64 heads), 19% slower. With
    # Jean Zay's four NVLink links per GPU the model predicts 12%; with a DGX A100's twelve, 2%.
    runs = {run.id: run for run in published.runs()}
    tp8, tp4 = runs["176B tp 8"], runs["176B 64 heads"]

    def predict(run):
        return plan(run.model, run.cluster, run.training(), top=1).objective

    published_ratio = tp8.seconds / tp4.seconds
    assert published_ratio == pytest.approx(1.192, abs=1e-3)
    assert abs(predict(tp8) / predict(tp4) - published_ratio) < 0.08


def test_tp_overlap_hides_tensor_parallel_communication_only():
    model = transformer("gpt-24x2048", 24, 2048, 16, 51200, 2048)
    cluster = load_cluster("dgx-a100-80g:1x8")

    def seconds(tp: int, overlap: float) -> float:
        train = Training(64, 2048, fix={"tp": tp, "pp": 1, "mb": 1, "recompute": "none"},
                         tp_overlap=overlap)
        return plan(model, cluster, train, top=1).objective

    assert seconds(8, 0.5) < seconds(8, 0.0) and seconds(8, 1.0) < seconds(8, 0.5)
    assert seconds(1, 1.0) == seconds(1, 0.0)               # no tensor parallelism, nothing to hide


@pytest.mark.parametrize("args, message", [
    (["--tp-overlap", "1.5"], "--tp-overlap must be in [0, 1], got 1.5"),
    (["--tp-overlap", "-0.1"], "--tp-overlap must be in [0, 1], got -0.1"),
    (["--tp-overlap", "nan"], "--tp-overlap must be in [0, 1], got nan"),
])
def test_tp_overlap_is_range_checked(args, message):
    out = _cli("--model", "gpt3-175b", "--cluster", "dgx-a100-80g:8x8", "--global-batch", "64", *args)
    assert out.returncode == 2 and f"yewpy: error: {message}" in out.stderr and "Traceback" not in out.stderr


def test_planning_needs_a_model_a_cluster_and_a_batch_unless_validating():
    out = _cli("--model", "gpt3-175b")
    assert out.returncode == 2 and "Traceback" not in out.stderr
    assert "required: --cluster, --global-batch (or --validate)" in out.stderr
