"""The Slurm scripts under a real Slurm: Debian's slurmctld, slurmd and munge on this machine,
started by ``slurm/local-cluster.sh`` for this module and stopped after it.

Marked ``cluster`` (run with ``pytest -m cluster``; README): they need root or the packages
already installed.  Where the packages cannot be had, they fail with the script's message saying
what is missing; they are never skipped.  The one node has 8 CPUs configured, more than this
machine has, so jobs oversubscribe it as the MPI tests do."""

from __future__ import annotations

import csv
import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from support import INSTANCES, ROOT

pytestmark = pytest.mark.cluster
SLURM = ROOT / "slurm"
VENV = str(Path(sys.executable).parent.parent)       # the jobs activate this test run's venv


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    """A running one-node Slurm; its environment (SLURM_CONF) for the commands."""
    folder = tmp_path_factory.mktemp("slurm")
    start = subprocess.run([str(SLURM / "local-cluster.sh"), "start", str(folder)], capture_output=True,
                           text=True, timeout=600)
    assert start.returncode == 0, f"no local Slurm: {start.stderr}"
    env = dict(os.environ, SLURM_CONF=str(folder / "slurm.conf"), YEWPY_VENV=VENV)
    yield env
    subprocess.run([str(SLURM / "local-cluster.sh"), "stop", str(folder)], timeout=120, check=True)


def sbatch(env: dict, cwd: Path, *args: str, timeout: float = 300) -> tuple[str, int]:
    """Submit and wait for the job to end: its id and exit status (sbatch --wait returns the job's)."""
    out = subprocess.run(["sbatch", "--parsable", "--wait", *args], capture_output=True, text=True, env=env,
                         cwd=cwd, timeout=timeout)
    return out.stdout.strip().split(";")[0], out.returncode


def result(path: Path) -> dict:
    return json.loads(next(line for line in path.read_text().splitlines() if line.startswith("{")))


def test_one_node_script_runs_one_search_on_n_ranks(cluster, tmp_path):
    job, status = sbatch(cluster, tmp_path, "--ntasks=3", str(SLURM / "one-node.sbatch"), "nqueens", "11",
                         "--skeleton", "stacksteal", "--json")
    answer = result(tmp_path / f"yewpy-{job}.out")
    assert status == 0 and (answer["ranks"], answer["value"], answer["nodes"]) == (3, 2680, 166926)


def test_multi_node_script_runs_one_search(cluster, tmp_path):
    """The multi-node script on the one node there is (its srun line is the same for N nodes)."""
    graph = str(INSTANCES / "clique" / "brock200_1.clq")
    job, status = sbatch(cluster, tmp_path, "--nodes=1", "--ntasks-per-node=2",
                         str(SLURM / "multi-node.sbatch"), "maxclique", graph, "--skeleton", "budget",
                         "--json")
    answer = result(tmp_path / f"yewpy-{job}.out")
    assert status == 0 and (answer["ranks"], answer["objective"]) == (2, 21)


def test_srun_without_a_pmi_plugin_is_refused_once(cluster, tmp_path):
    """Debian's Slurm defaults to MpiDefault=none: srun starts N one-rank worlds, which yewpy refuses."""
    out = subprocess.run(["srun", "--mpi=none", "-n", "2", f"{VENV}/bin/yewpy", "nqueens", "9"],
                         capture_output=True, text=True, env=cluster, cwd=tmp_path, timeout=120)
    assert out.returncode != 0 and out.stdout == ""
    assert out.stderr.count("yewpy: error: started as one of 2 tasks") == 1, out.stderr
    assert "srun --mpi=pmi2" in out.stderr
    good = subprocess.run(["srun", "--mpi=pmi2", "-n", "2", f"{VENV}/bin/yewpy", "nqueens", "9", "--json"],
                          capture_output=True, text=True, env=cluster, cwd=tmp_path, timeout=120)
    assert good.returncode == 0 and json.loads(good.stdout)["ranks"] == 2


def test_a_job_array_sweep_with_srun_merges_into_a_table_and_plots(cluster, tmp_path):
    out_dir = tmp_path / "sweep"
    env = dict(cluster, NODE_COUNTS="1", REPEAT="1", SKELETONS="depthbounded,stacksteal",
               SCALING_OUT=str(out_dir), SWEEP_SBATCH_ARGS="--ntasks-per-node=2 --time=00:10:00")
    submit = subprocess.run([str(SLURM / "submit-sweep.sh"), "nqueens", "10"], capture_output=True, text=True,
                            env=env, cwd=tmp_path, timeout=120)
    assert submit.returncode == 0, submit.stderr
    merge = submit.stdout.strip().split(";")[0]
    deadline = time.monotonic() + 300
    while subprocess.run(["squeue", "-h", "-j", merge], capture_output=True, text=True,
                         env=env).stdout.strip() and time.monotonic() < deadline:
        time.sleep(1)
    rows = list(csv.DictReader((out_dir / "scaling.csv").open()))
    assert {"speedup.png", "efficiency.png"} <= {p.name for p in out_dir.iterdir()}
    assert {row["skeleton"] for row in rows} == {"depthbounded", "stacksteal"}
    assert {row["answer"] for row in rows} == {"724"} and {row["ranks"] for row in rows} == {"2"}
    assert {row["hosts"] for row in rows} == {"1"}      # srun placed both ranks on the one node


def test_the_wall_time_sigterm_writes_a_checkpoint_that_the_resubmitted_job_finishes(cluster, tmp_path):
    """--time=2 --signal=B:TERM@100: Slurm signals the script when 100 s or less are left, or up to
    a minute earlier (once 79 ms after the start, before the ranks had set their handlers; the
    script now holds a SIGTERM until they have had 15 s to start); the search outlasts that,
    writes its checkpoint, and the same command submitted again resumes it to the exact count."""
    env = dict(cluster, YEWPY_CHECKPOINT=str(tmp_path / "q.ckpt"), YEWPY_CHECKPOINT_EVERY="5")
    args = [str(SLURM / "one-node.sbatch"), "nqueens", "17", "--skeleton", "stacksteal", "--json", "--quiet"]
    first, status = sbatch(env, tmp_path, "--ntasks=2", "--time=2", "--signal=B:TERM@100", *args)
    log = (tmp_path / f"yewpy-{first}.out").read_text()
    assert status == 130 and "SIGTERM before the wall time" in log, log[-2000:]
    assert result(tmp_path / f"yewpy-{first}.out")["status"] == "interrupted"
    second, status = sbatch(env, tmp_path, "--ntasks=2", *args, timeout=600)
    answer = result(tmp_path / f"yewpy-{second}.out")
    assert status == 0 and (answer["value"], answer["status"]) == (95815104, "exhausted")


def test_progress_under_a_job_time_limit_says_whether_the_search_will_finish(cluster, tmp_path):
    """The job's end comes from Slurm itself (SLURM_JOB_END_TIME or squeue): a one-minute job says
    a three-second search will finish and an hour-long one, cut at four seconds, will not."""
    # the script asks for SIGTERM 120 s before the end: due at once in a one-minute job, and sent at
    # Slurm's next check, a race with these seconds-long searches; 10 s before the end here
    early = "--signal=B:TERM@10"
    short, status = sbatch(cluster, tmp_path, "--ntasks=2", "--time=1", early, str(SLURM / "one-node.sbatch"),
                           "nqueens", "15", "--skeleton", "stacksteal", "--progress-every", "0.5")
    log = (tmp_path / f"yewpy-{short}.out").read_text()
    verdicts = [line.rpartition(": ")[2] for line in log.splitlines() if "wall time" in line]
    assert status == 0 and verdicts and verdicts[-1] == "expected to finish", log[-2000:]
    long, status = sbatch(cluster, tmp_path, "--ntasks=2", "--time=1", early, str(SLURM / "one-node.sbatch"),
                          "nqueens", "18", "--skeleton", "stacksteal", "--progress-every", "1",
                          "--time-limit", "4")
    log = (tmp_path / f"yewpy-{long}.out").read_text()
    verdicts = [line.rpartition(": ")[2] for line in log.splitlines() if "wall time" in line]
    assert status == 0 and verdicts and verdicts[-1] == "not expected to finish", log[-2000:]
