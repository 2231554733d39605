"""The yewpy command: YewPar-style output, --json, flags, and one-line errors with exit status 2."""

import json
import os
import signal
import subprocess
import sys
import time

import pytest

from support import yewpy_cmd


def run(*args, timeout=120):
    return subprocess.run([*yewpy_cmd(), *map(str, args)], capture_output=True, text=True, timeout=timeout)


def test_nqueens_summary():
    out = run("nqueens", 8)
    assert out.returncode == 0, out.stderr
    lines = out.stdout.splitlines()
    assert lines[0] == "Solution for n = 8: 92"
    assert "nodes = 2057" in lines and "status = exhausted" in lines


def test_maxclique_json(instances):
    out = run("maxclique", instances / "clique" / "brock200_2.clq", "--json")
    assert out.returncode == 0, out.stderr
    data = json.loads(out.stdout)
    assert set(data) >= {"app", "kind", "skeleton", "ranks", "objective", "solution", "nodes", "seconds",
                         "status", "metrics"}
    assert (data["app"], data["kind"], data["objective"], data["status"], data["ranks"]) == \
        ("maxclique", "optimisation", 12, "optimal", 1)
    assert data["metrics"]["expansions"] == 3826 and len(data["solution"]) == 12


@pytest.mark.parametrize("flags", [["--skeleton", "depthbounded", "-d", "2"],
                                   ["--skeleton", "budget", "-b", "100"],
                                   ["--skeleton", "budget", "-b", "10", "--spawn-all", "--pool", "deque"]])
def test_maxclique_decision_witness(instances, flags):
    out = run("maxclique", instances / "clique" / "brock200_4.clq", "--decision", 17, "--json", *flags)
    data = json.loads(out.stdout)
    assert data["found"] is True and data["status"] == "found" and len(data["solution"]) >= 17
    text = run("maxclique", instances / "clique" / "brock200_4.clq", "--decision", 17, *flags).stdout
    assert "Clique of size >= 17 found: true" in text and "Witness (checked)" in text


def test_knapsack_both_versions(instances):
    path = instances / "knapsack" / "yewpar_kp" / "knapsackTest1.kp"
    for extra in ([], ["--python"]):
        out = run("knapsack", path, *extra)
        assert out.returncode == 0, out.stderr
        assert "Final Profit: 6925" in out.stdout and "Expected Result: true" in out.stdout


def test_knapsack_csv_instance(instances):
    out = run("knapsack", instances / "knapsack" / "pisinger" / "knapPI_11_20_1000.csv", "--instance", 3)
    assert "Final Profit: 1800" in out.stdout


def test_python_dash_m_and_time_limit(instances, tmp_path):
    out = subprocess.run([sys.executable, "-m", "yewpy", "knapsack",
                          str(instances / "knapsack" / "large_scale" / "knapPI_3_2000_1000_1"),
                          "--time-limit", "0.5", "--json"], capture_output=True, text=True, timeout=60,
                         cwd=tmp_path)
    data = json.loads(out.stdout)
    assert data["status"] == "time_limit" and 0 < data["objective"] <= 28919


@pytest.mark.parametrize("app,name,text,where", [
    ("maxclique", "bad.clq", "p edge 3 1\ne 1 7\n", ":2: vertex out of range"),
    ("knapsack", "bad.kp", "100\n5\n1 2\n3\n", ":4: expected 'profit weight'"),
    ("maxclique", "missing.clq", None, ": cannot read"),
])
def test_bad_input_is_one_line_and_exit_2(tmp_path, app, name, text, where):
    path = tmp_path / name
    if text is not None:
        path.write_text(text)
    out = run(app, path)
    assert out.returncode == 2
    assert out.stderr.strip() == out.stderr.strip().splitlines()[0]          # exactly one line
    assert out.stderr.startswith(f"yewpy: error: {path}") and where in out.stderr
    assert "Traceback" not in out.stderr


@pytest.mark.parametrize("args", [
    ("maxclique", "{}"), ("knapsack", "{}"), ("sip", "{}", "{}"), ("tsp", "{}"),
    ("dnn-plan", "--model", "megatron-1.7b", "--cluster", "{}", "--global-batch", "64"),
    ("dnn-plan", "--model", "{}", "--cluster", "dgx-a100-80g:1x8", "--global-batch", "64"),
    ("fusion", "--profile-json", "{}"),
])
def test_a_device_is_refused_not_read_for_ever(args):
    """An input that is a device is one error line, at once: /dev/zero was read until memory ran out."""
    out = run(*(a.format("/dev/zero") for a in args), timeout=30)
    assert out.returncode == 2 and "Traceback" not in out.stderr
    assert out.stderr == "yewpy: error: /dev/zero: cannot read: not a file (a device or a socket)\n"


@pytest.mark.parametrize("reader", ["maxclique", "knapsack"])
def test_a_pipe_is_read_like_a_file(tmp_path, reader):
    """A pipe (``<(zcat graph.clq.gz)``, a FIFO) is read like the file it carries, up to the size cap."""
    fifo = tmp_path / "in.fifo"
    os.mkfifo(fifo)
    text = "p edge 3 3\ne 1 2\ne 2 3\ne 1 3\n" if reader == "maxclique" else "3 4\n1 1\n2 2\n3 3\n"
    proc = subprocess.Popen([*yewpy_cmd(), reader, str(fifo), "--json"], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    fifo.write_text(text)
    out, err = proc.communicate(timeout=60)
    assert proc.returncode == 0, err
    assert json.loads(out)["objective"] == (3 if reader == "maxclique" else 4)


def test_a_python_warning_is_one_yewpy_line():
    out = run("nqueens", 6, "--skeleton", "depthbounded")
    assert out.returncode == 0
    assert out.stderr == "yewpy: warning: DepthBounded(spawn_depth=0) makes one task: no parallelism\n"


def test_usage_errors_exit_2():
    assert run("nqueens").returncode == 2
    assert run("nqueens", 8, "-b", 5).returncode != 0          # -b belongs to budget
    out = run("nqueens", 8, "--skeleton", "ordered")
    assert out.returncode == 2 and "ordered is for decision and optimisation" in out.stderr
    out = run("nqueens", 8, "--pool", "deque")
    assert out.returncode == 2 and "--pool applies to depthbounded and budget" in out.stderr


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM])
def test_a_signal_ends_a_long_compiled_run_cleanly(sig):
    proc = subprocess.Popen([*yewpy_cmd(), "nqueens", "20"], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True)
    time.sleep(1.0)
    proc.send_signal(sig)
    _, err = proc.communicate(timeout=30)
    assert proc.returncode == 130 and err.strip() == "yewpy: interrupted"


def test_metrics_table_has_a_row_per_rank_and_a_total():
    out = run("nqueens", 9, "--metrics")
    lines = out.stdout.splitlines()
    header = next(i for i, line in enumerate(lines) if line.split()[:2] == ["rank", "nodes"])
    assert lines[header + 1].split()[:2] == ["0", "8394"] and lines[header + 2].split()[:2] == ["all", "8394"]


@pytest.mark.parametrize("flags, message", [
    (["--skeleton", "ordered", "--window", "0"], "--window must be between 1 and"),
    (["--skeleton", "stacksteal", "--window", "2"], "--window applies to ordered"),
    (["--skeleton", "ordered", "--steal", "one"], "--steal does not apply to ordered"),
    (["--skeleton", "stacksteal", "--chunked", "--steal", "one"], "contradicts steal='one'"),
])
def test_steal_and_window_flags_are_checked(instances, flags, message):
    out = run("maxclique", instances / "clique" / "brock200_2.clq", *flags)
    assert out.returncode == 2 and message in out.stderr and "Traceback" not in out.stderr, out.stderr


@pytest.mark.parametrize("flags", [["--steal", "one"], ["--steal", "level"], ["--skeleton", "ordered",
                                                                                 "--window", "3"]])
def test_steal_and_window_flags_search_exactly(instances, flags):
    out = run("maxclique", instances / "clique" / "brock200_2.clq", "--json", *flags)
    assert out.returncode == 0 and json.loads(out.stdout)["objective"] == 12, out.stderr


@pytest.mark.parametrize("flags, message", [
    (["--skeleton", "depthbounded", "-d", "-1"], "-d/--spawn-depth must be between 0 and"),
    (["--skeleton", "ordered", "-d", "0"], "-d/--spawn-depth must be between 1 and"),
    (["--skeleton", "depthbounded", "-d", str(2 ** 31)], "-d/--spawn-depth must be between 0 and 2147483647"),
    (["--skeleton", "budget", "-b", "0"], "-b/--backtrack-budget must be between 1 and"),
    (["--skeleton", "budget", "-b", "-1"], "-b/--backtrack-budget must be between 1 and"),
    (["--node-limit", "-1"], "--node-limit must be between 1 and"),
    (["--node-limit", str(2 ** 63)], "--node-limit must be between 1 and"),
    (["--time-limit", "nan"], "--time-limit must be a positive number of seconds, got nan"),
    (["--time-limit", "0"], "--time-limit must be a positive number"),
    (["--progress-every", "nan"], "--progress-every must be a positive number"),
    (["--checkpoint", "x.ckpt", "--checkpoint-every", "inf"], "--checkpoint-every must be a positive number"),
])
def test_numeric_flags_out_of_range_are_one_line_errors(tmp_path, instances, flags, message):
    out = subprocess.run([*yewpy_cmd(), "maxclique", str(instances / "clique" / "brock200_2.clq"), *flags],
                         capture_output=True, text=True, timeout=60, cwd=tmp_path)
    assert out.returncode == 2 and f"yewpy: error: {message}" in out.stderr, out.stderr
    assert "Traceback" not in out.stderr and not (tmp_path / "x.ckpt").exists()
