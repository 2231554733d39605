"""``yewpy scaling``: real MPI runs at 1 and 2 ranks, the CSV's rows and medians, the plots, the
answers-agree check, failed and timed-out runs, and merging the tables of several sweeps."""

import csv
import os
import signal
import statistics
import subprocess
import time
import uuid
from pathlib import Path

import pytest

from support import yewpy_cmd
from yewpy.tools.speedup import Run, check_answers, medians, read_runs, to_csv

PNG = b"\x89PNG\r\n\x1a\n"


def scaling(*args, env=None, timeout=120):
    return subprocess.run([*yewpy_cmd(), "scaling", *map(str, args)], capture_output=True, text=True,
                          timeout=timeout, env=env)


def rows(path: Path) -> list[dict]:
    with open(path / "scaling.csv", newline="") as handle:
        return list(csv.DictReader(handle))


def test_nqueens_sweep_writes_rows_medians_and_plots(tmp_path):
    out = scaling("--ranks", "2,1", "--repeat", 2, "--skeletons", "depthbounded,stacksteal",
                  "--skeleton-args", "depthbounded:-d 1", "--out", tmp_path, "--", "nqueens", 8)
    assert out.returncode == 0, out.stderr
    table = rows(tmp_path)
    runs = [r for r in table if r["row"] == "run"]
    # interleaved: every configuration and rank count of repeat 1 before any of repeat 2
    assert [(r["repeat"], r["ranks"], r["skeleton"], r["parameters"]) for r in runs] == [
        (rep, n, s, p) for rep in "12" for n in "12"
        for s, p in (("depthbounded", "-d 1"), ("stacksteal", ""))]
    assert {(r["answer"], r["nodes"], r["status"], r["hosts"]) for r in runs} == \
        {("92", "2057", "exhausted", "1")}
    assert all(0 < float(r["seconds"]) <= float(r["wall_seconds"]) for r in runs)
    assert all(int(r["steals"]) == 0 and float(r["idle_seconds"]) == 0 for r in runs if r["ranks"] == "1")
    med = [r for r in table if r["row"] == "median"]
    assert [(r["skeleton"], r["ranks"], r["repeat"]) for r in med] == [
        ("depthbounded", "1", "median"), ("depthbounded", "2", "median"),
        ("stacksteal", "1", "median"), ("stacksteal", "2", "median")]
    for m in med:
        same = [r for r in runs if r["skeleton"] == m["skeleton"]]
        mine = [float(r["seconds"]) for r in same if r["ranks"] == m["ranks"]]
        base = [float(r["seconds"]) for r in same if r["ranks"] == "1"]
        assert float(m["seconds"]) == pytest.approx(statistics.median(mine), rel=1e-5)
        speedup = statistics.median(base) / statistics.median(mine)
        assert float(m["speedup"]) == pytest.approx(speedup, rel=1e-4)
        assert float(m["efficiency"]) == pytest.approx(speedup / int(m["ranks"]), rel=1e-4)
    for name in ("speedup.png", "efficiency.png"):
        data = (tmp_path / name).read_bytes()
        assert data.startswith(PNG) and len(data) > 10_000
    assert "answers agree: 92 in all 8 runs" in out.stdout
    assert "depthbounded  -d 1" in out.stdout and "efficiency" in out.stdout.splitlines()[0]
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".")]   # no temp files left


def test_seq_baseline_and_merge(tmp_path, instances):
    graph = instances / "clique" / "brock200_2.clq"
    for ranks in (1, 2):
        out = scaling("--ranks", ranks, "--repeat", 1, "--skeletons", "budget", "--skeleton-args",
                      "budget:-b 50", "--baseline", "seq", "--out", tmp_path / f"nodes-{ranks}",
                      "--", "maxclique", graph)
        assert out.returncode == 0, out.stderr
    merged = tmp_path / "all"
    out = scaling("--merge", tmp_path / "nodes-1", tmp_path / "nodes-2", "--baseline", "seq", "--out", merged)
    assert out.returncode == 0, out.stderr
    table = rows(merged)
    runs = [r for r in table if r["row"] == "run"]
    assert sorted((r["skeleton"], r["ranks"]) for r in runs) == [
        ("budget", "1"), ("budget", "2"), ("seq", "1"), ("seq", "1")]
    assert {r["answer"] for r in runs} == {"12"} and {r["status"] for r in runs} == {"optimal"}
    med = {(r["skeleton"], r["ranks"]): r for r in table if r["row"] == "median"}
    seq = statistics.median(float(r["seconds"]) for r in runs if r["skeleton"] == "seq")
    assert med[("seq", "1")]["repeat"] == "median" and float(med[("seq", "1")]["speedup"]) == 1
    for n in (1, 2):
        row = med[("budget", str(n))]
        assert float(row["speedup"]) == pytest.approx(seq / float(row["seconds"]), rel=1e-4)
        assert float(row["efficiency"]) == pytest.approx(float(row["speedup"]) / n, rel=1e-4)
    assert (merged / "speedup.png").read_bytes().startswith(PNG)


def run_row(answer: str, skeleton: str = "stacksteal", ranks: int = 2, repeat: int = 1,
            seconds: float = 1.0) -> Run:
    return Run(skeleton, "", ranks, 1, repeat, seconds, seconds + 0.5, 10, 0, 0.0, "exhausted", answer)


def test_answers_must_agree(tmp_path):
    good = [run_row("92", ranks=n, repeat=r) for n in (1, 2) for r in (1, 2)]
    assert check_answers(good) is None
    bad = [*good, run_row("91", skeleton="budget", ranks=2, repeat=2)]
    message = check_answers(bad)
    assert message.startswith("ANSWER MISMATCH")
    assert "answer 92 from 4 run(s)" in message
    assert "answer 91 from 1 run(s): budget ranks=2 repeat=2" in message
    # a sweep folder whose table disagrees fails the merge loudly, with exit status 3
    for name, runs in (("a", good), ("b", bad[-1:])):
        (tmp_path / name).mkdir()
        (tmp_path / name / "scaling.csv").write_text(to_csv(runs, medians(runs)))
    out = scaling("--merge", tmp_path / "a", tmp_path / "b", "--out", tmp_path / "all")
    assert out.returncode == 3 and "ANSWER MISMATCH" in out.stderr, out.stderr
    assert len(read_runs(tmp_path / "all" / "scaling.csv")) == 5       # still written, for the post-mortem


def test_medians_speedup_and_efficiency():
    runs = [run_row("1", ranks=n, repeat=r, seconds=s) for n, times in ((2, (8, 6, 7)), (4, (2, 9, 4)))
            for r, s in enumerate(times, start=1)]
    first, second = medians(runs)
    assert (first.ranks, first.seconds, first.speedup, first.efficiency, first.runs) == (2, 7, 1, 1, 3)
    assert (second.ranks, second.seconds, second.speedup, second.efficiency) == (4, 4, 7 / 4, 7 / 8)
    assert to_csv(runs, [first, second]).count("\nmedian,") == 2


def test_failed_run_reports_its_last_stderr_line(tmp_path):
    out = scaling("--ranks", 2, "--repeat", 1, "--skeletons", "stacksteal", "--out", tmp_path,
                  "--", "maxclique", tmp_path / "missing.clq")
    assert out.returncode == 1
    assert "stacksteal ranks=2 repeat=1 failed: exit status 2: yewpy: error:" in out.stderr
    assert "missing.clq" in out.stderr and "cannot read" in out.stderr


def test_time_limited_run_is_refused(tmp_path):
    out = scaling("--ranks", 1, "--repeat", 1, "--skeletons", "stacksteal", "--out", tmp_path,
                  "--", "nqueens", 12, "--node-limit", 100)
    assert out.returncode == 1 and "stopped early (status node_limit)" in out.stderr


def marked_processes(mark: str) -> list[int]:
    found = []
    for entry in Path("/proc").iterdir():
        try:
            if entry.name.isdigit() and mark.encode() in (entry / "environ").read_bytes():
                found.append(int(entry.name))
        except OSError:
            continue
    return found


def test_timeout_kills_every_rank(tmp_path):
    mark = f"YEWPY_TEST_MARK_{uuid.uuid4().hex}"
    start = time.monotonic()
    out = scaling("--ranks", 2, "--repeat", 1, "--skeletons", "stacksteal", "--timeout", 1.5, "--out",
                  tmp_path, "--", "nqueens", 22, env=dict(os.environ, YEWPY_TEST_MARK=mark), timeout=60)
    assert out.returncode == 1 and "timed out after 1.5 s" in out.stderr, out.stderr
    assert time.monotonic() - start < 30
    time.sleep(0.5)
    assert marked_processes(mark) == []


@pytest.mark.parametrize("args,message", [
    (["--skeletons", "stacksteal,seq"], "unknown skeleton 'seq'"),
    (["--skeleton-args", "budget:-b 5"], "for a skeleton that --skeletons lists"),
    (["--ranks", "0,2"], "at least 1"),
    (["--ranks", "two"], "comma-separated whole numbers"),
    (["--", "nqueens", "8", "--skeleton", "budget"], "the harness sets skeleton flags"),
    (["--", "sudoku", "8"], "unknown app 'sudoku'"),
    ([], "give the search after --"),
])
def test_usage_errors(tmp_path, args, message):
    if args and args[0] != "--":
        args = [*args, "--", "nqueens", "8"]
    out = scaling("--skeletons", "stacksteal", "--out", tmp_path, *args)
    assert out.returncode == 2 and out.stderr.startswith("yewpy: error: "), out.stderr
    assert message in out.stderr
    assert not (tmp_path / "scaling.csv").exists()


def test_without_matplotlib_the_csv_is_written_and_the_extra_named(tmp_path, monkeypatch, capsys):
    from yewpy.tools import scaling, speedup_plot

    monkeypatch.setattr(speedup_plot, "available", lambda: False)
    runs = [run_row("7", ranks=n) for n in (1, 2)]
    assert scaling.write_results(tmp_path, runs, "smallest", "test") == 0
    assert "pip install yewpy[plot]" in capsys.readouterr().err
    assert len(read_runs(tmp_path / "scaling.csv")) == 2 and not (tmp_path / "speedup.png").exists()


def test_merge_of_a_missing_folder_names_the_file(tmp_path):
    out = scaling("--merge", tmp_path / "nowhere", "--out", tmp_path / "all")
    assert out.returncode == 2
    assert out.stderr == f"yewpy: error: {tmp_path / 'nowhere' / 'scaling.csv'}: cannot read: " \
                         "No such file or directory\n"


def test_sigterm_stops_the_run_in_flight_and_writes_the_table(tmp_path):
    mark = f"YEWPY_TEST_MARK_{uuid.uuid4().hex}"
    harness = subprocess.Popen([*yewpy_cmd(), "scaling", "--ranks", "2", "--repeat", "1", "--skeletons",
                                "stacksteal", "--out", str(tmp_path), "--", "nqueens", "22"],
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                               env=dict(os.environ, YEWPY_TEST_MARK=mark))
    assert "1 runs of `nqueens 22`" in harness.stderr.readline()
    deadline = time.monotonic() + 30
    while len(marked_processes(mark)) < 3 and time.monotonic() < deadline:   # harness, mpiexec, ranks
        time.sleep(0.2)
    harness.send_signal(signal.SIGTERM)
    stdout, stderr = harness.communicate(timeout=30)
    assert harness.returncode == 130 and "interrupted; writing the runs finished so far" in stderr, stderr
    assert read_runs(tmp_path / "scaling.csv") == []
    time.sleep(0.5)
    assert marked_processes(mark) == []
