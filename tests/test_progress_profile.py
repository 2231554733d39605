"""Progress lines on stderr (rank 0 only, off with --quiet) and search profiles with their report."""

from __future__ import annotations

import json
import re
import subprocess
import time

import pytest

from support import run_ranks, yewpy_cmd

LINE = re.compile(r"^yewpy: +\d+\.\d s  nodes ([\d,]+)  \([\d,]+/s\)(  incumbent (\d+))?  steals \d+  "
                  r"idle ranks (\d+)/(\d+)(  est\. tree( under \S+)? ([\d.e+]+) nodes \[[\d.e+]+, [\d.e+]+\]"
                  r"( \(a lower bound[^)]*\))?(, ~.* left \[.*\])?)?$")


def _run(*args):
    return subprocess.run([*yewpy_cmd(), *map(str, args)], capture_output=True, text=True, timeout=120)


@pytest.mark.parametrize("ranks", [1, 2])
def test_progress_lines_come_from_rank_0_and_count_up(ranks):
    # n-queens 14 takes 0.43 s on a fast 2-core machine: lines every 0.1 s leave room for faster ones
    out = run_ranks(ranks, [*yewpy_cmd(), "nqueens", "14", "--skeleton", "stacksteal",
                            "--progress-every", "0.1"])
    assert out.returncode == 0, out.stderr
    total = int(re.search(r"nodes = (\d+)", out.stdout).group(1))
    lines = out.stderr.splitlines()
    matches = [LINE.match(line) for line in lines]
    assert lines and all(matches), out.stderr
    counts = [int(m.group(1).replace(",", "")) for m in matches]
    assert counts == sorted(counts) and counts[-1] <= total
    assert {int(m.group(5)) for m in matches} == {ranks}
    estimates = [float(m.group(8)) for m in matches]    # every line carries the estimate
    assert all(0.5 * total < e < 2 * total for e in estimates), (estimates, total)


@pytest.mark.parametrize("ranks", [1, 2])
def test_json_progress_carries_the_estimate_and_the_time_left(ranks):
    out = run_ranks(ranks, [*yewpy_cmd(), "nqueens", "14", "--skeleton", "stacksteal", "--json",
                            "--progress-every", "0.1"], env={"YEWPY_END_TIME": str(time.time() + 3600)})
    assert out.returncode == 0, out.stderr
    data = json.loads(out.stdout)                       # stdout stays one JSON object
    records = [json.loads(line)["progress"] for line in out.stderr.splitlines()]
    assert records and len(records) <= data["seconds"] / 0.1 + 2      # one printer, not one per rank
    assert {r["ranks"] for r in records} == {ranks}
    for r in records:
        # the recursive estimate needs every rank's open work: until all have reported, Knuth's alone
        est, knuth = r["estimate"], r["estimate_knuth"]
        recursive = r.get("estimate_recursive", knuth)
        assert ranks == 2 or "estimate_recursive" in r
        assert recursive["estimator"] in ("kilby-2006-recursive", "knuth-1975")
        assert knuth["estimator"] == "knuth-1975" and knuth["probes"] > 0 and est["consistent"]
        assert est["estimator"] in ("kilby-2006-recursive", "kilby-2006-recursive+knuth-1975", "knuth-1975")
        for e in (est, recursive, knuth):
            assert e["low"] <= e["nodes"] <= e["high"] and r["nodes"] <= e["low"]
            assert 0.5 * data["nodes"] < e["nodes"] < 2 * data["nodes"], (e, data["nodes"])
        left, low, high = est["seconds_left"]
        assert 0 <= low <= left <= high
        wall = r["walltime"]
        assert wall["verdict"] == "expected to finish" and 3500 < wall["seconds_left"] <= 3600


def test_progress_shows_the_incumbent_and_quiet_silences_it(instances):
    graph = instances / "clique" / "san200_0.9_3.clq"
    out = _run("maxclique", graph, "--progress-every", "0.3", "--time-limit", "1.5")
    incumbents = [int(m.group(3)) for m in map(LINE.match, out.stderr.splitlines()) if m and m.group(3)]
    assert out.returncode == 0 and incumbents and incumbents == sorted(incumbents) and incumbents[-1] <= 44
    quiet = _run("maxclique", graph, "--progress-every", "0.3", "--time-limit", "1", "--quiet")
    assert quiet.returncode == 0 and quiet.stderr == ""


@pytest.mark.parametrize("ranks, skeleton", [(1, ["--skeleton", "depthbounded", "-d", "2"]),
                                             (2, ["--skeleton", "depthbounded", "-d", "1"]),
                                             (3, ["--skeleton", "stacksteal"])])
def test_a_profile_accounts_for_every_node(tmp_path, instances, ranks, skeleton):
    path = tmp_path / "p.json"
    out = run_ranks(ranks, [*yewpy_cmd(), "maxclique", str(instances / "clique" / "brock200_1.clq"),
                            *skeleton, "--json", "--quiet", "--profile", str(path)])
    assert out.returncode == 0, out.stderr
    result = json.loads(out.stdout)
    doc = json.loads(path.read_text())
    assert doc["format"] == "yewpy-profile 1" and doc["ranks"] == ranks and doc["status"] == "optimal"
    assert len(doc["per_rank"]) == ranks and doc["nodes"] == result["nodes"]
    assert sum(doc["depth"]["nodes"]) == result["nodes"]
    # every node but the root is accounted inside exactly one task on exactly one rank
    assert sum(n for row in doc["per_rank"] for n in row["task_nodes"]) + 1 == result["nodes"]
    for row in doc["per_rank"]:
        assert len(row["task_seconds"]) == len(row["task_nodes"]) and row["tasks_unrecorded"] == 0
        assert all(0 <= a <= b <= row["seconds"] + 1e-6 for a, b in row["idle"])
    if ranks > 1:
        assert sum(len(row["task_seconds"]) for row in doc["per_rank"]) > ranks


def test_report_draws_four_pngs_and_a_summary(tmp_path, instances):
    path = tmp_path / "p.json"
    out = run_ranks(2, [*yewpy_cmd(), "maxclique", str(instances / "clique" / "brock200_4.clq"),
                        "--skeleton", "budget", "-b", "200", "--quiet", "--profile", str(path)])
    assert out.returncode == 0, out.stderr
    report = _run("report", path, "--out", tmp_path / "figs")
    assert report.returncode == 0, report.stderr
    assert "coefficient of variation" in report.stdout and report.stdout.count("% of nodes") == 2
    for name in ("task_times.png", "load.png", "timeline.png", "depth.png"):
        data = (tmp_path / "figs" / name).read_bytes()
        assert data[:8] == b"\x89PNG\r\n\x1a\n" and len(data) > 5000


def test_report_refuses_what_is_not_a_profile(tmp_path):
    bad = tmp_path / "bad.json"
    bad.write_text('{"format": "something else"}')
    out = _run("report", bad)
    assert out.returncode == 2 and out.stderr.startswith(f"yewpy: error: {bad}:1: not a yewpy profile")
    bad.write_text("{\n  oops")
    out = _run("report", bad)
    assert out.returncode == 2 and f"{bad}:2: not a yewpy profile" in out.stderr


def test_a_top_k_search_calls_its_bound_the_top_k_bar():
    # the 1T model on 512 A100 searches for about 0.3 s on a 2-core machine (5,729 nodes); the planner
    # plans most cases in less, so the lines come every 0.02 s
    out = _run("dnn-plan", "--model", "megatron-1t", "--cluster", "dgx-a100-80g:64x8",
               "--global-batch", "2048", "--progress-every", "0.02")
    bars = [float(m.group(1)) for m in re.finditer(r"  top-K bar ([\d.]+)  ", out.stderr)]
    assert out.returncode == 0 and bars and "incumbent" not in out.stderr, out.stderr
    assert bars == sorted(bars, reverse=True)           # a minimisation's bar only falls


@pytest.mark.parametrize("skeleton", [["--skeleton", "stacksteal"],
                                      ["--skeleton", "depthbounded", "-d", "2"]])
def test_the_recursive_estimate_sums_every_ranks_open_work(skeleton):
    """Two ranks: once both have reported, lines carry the estimate from the searched part, with
    each rank's stack and pool counted (a rank left out would halve it)."""
    # 1.4 s on two ranks of a fast machine: a line every 0.2 s gives several once both have reported
    out = run_ranks(2, [*yewpy_cmd(), "nqueens", "15", *skeleton, "--json", "--progress-every", "0.2"])
    assert out.returncode == 0, out.stderr
    total = json.loads(out.stdout)["nodes"]
    records = [json.loads(line)["progress"] for line in out.stderr.splitlines()]
    recursive = [r["estimate_recursive"] for r in records if "estimate_recursive" in r]
    assert len(recursive) >= 2, records
    for e in recursive:
        assert e["estimator"] == "kilby-2006-recursive" and 0.6 * total < e["nodes"] < 1.6 * total, (e, total)
