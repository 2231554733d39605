"""Slurm: the harness reads an allocation's variables, the sbatch scripts parse and compute their
rank counts, and with a stand-in ``srun`` (which hands over to mpiexec) they run real searches."""

import csv
import json
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from support import ROOT, mpiexec, yewpy_cmd
from yewpy.errors import UsageError
from yewpy.tools.launch import allocation, launch_command

SLURM = ROOT / "slurm"
SCRIPTS = sorted(SLURM.glob("*.sbatch"))
# every option the scripts use must be one that sbatch knows (a typo is silently a comment otherwise)
KNOWN = {"job-name", "nodes", "ntasks", "ntasks-per-node", "cpus-per-task", "time", "output", "error",
         "signal", "array", "exclusive", "partition", "account", "mem", "mem-per-cpu", "constraint"}
ALLOCATION = {"SLURM_JOB_ID": "4242", "SLURM_NTASKS": "64", "SLURM_NNODES": "2"}


def test_srun_inside_an_allocation_packs_ranks_onto_nodes():
    argv, nodes = launch_command(40, ["yewpy", "nqueens", "12"], env=ALLOCATION)
    assert (argv, nodes) == (["srun", "--ntasks=40", "--nodes=2", "--kill-on-bad-exit=1", "yewpy", "nqueens",
                              "12"], 2)
    argv, nodes = launch_command(32, ["yewpy"], extra=["--mpi=pmix"], env=ALLOCATION)
    assert argv[:5] == ["srun", "--ntasks=32", "--nodes=1", "--kill-on-bad-exit=1", "--mpi=pmix"]
    with pytest.raises(UsageError, match=r"65 ranks exceed Slurm job 4242's 64 tasks .*SLURM_NNODES=2"):
        launch_command(65, ["yewpy"], env=ALLOCATION)


def test_allocation_variables():
    assert allocation({}) is None
    alloc = allocation({"SLURM_JOB_ID": "7", "SLURM_TASKS_PER_NODE": "16(x2),8", "SLURM_NNODES": "3"})
    assert (alloc.job_id, alloc.tasks, alloc.nodes, alloc.tasks_per_node) == ("7", 40, 3, 14)
    assert allocation({"SLURM_JOB_ID": "8", "SLURM_NPROCS": "4"}).tasks == 4
    # outside an allocation: mpiexec (the venv's), one node, and srun is refused
    argv, nodes = launch_command(3, ["yewpy"], env={})
    assert (argv, nodes) == ([mpiexec(), "-n", "3", "yewpy"], 1)
    with pytest.raises(UsageError, match="needs a Slurm allocation"):
        launch_command(2, ["yewpy"], launcher="srun", env={})
    # mpiexec chosen inside an allocation still may not exceed it
    with pytest.raises(UsageError, match="exceed"):
        launch_command(128, ["yewpy"], launcher="mpiexec", env=ALLOCATION)


@pytest.fixture
def fake_bin(tmp_path):
    """A bin folder with a stand-in ``srun``: it logs its argv, drops the SLURM_ variables (so the
    mpich mpiexec does not look for a real Slurm) and runs the command on --ntasks ranks; and a
    stand-in ``scancel --signal=SIG`` that signals the tasks of that srun, as Slurm's does."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    scancel = bin_dir / "scancel"
    scancel.write_text('#!/bin/bash\necho "scancel $*" >> "$FAKE_LOG"\n'
                       'kill -"${1#--signal=}" "$(cat "$FAKE_LOG.srun")"\n')
    scancel.chmod(0o755)
    srun = bin_dir / "srun"
    srun.write_text(f"""#!/bin/bash
echo "srun $*" >> "$FAKE_LOG"
echo $$ > "$FAKE_LOG.srun"
n=1
while [[ $# -gt 0 && $1 == -* ]]; do
  case $1 in --ntasks=*) n=${{1#--ntasks=}};; esac
  shift
done
for v in $(compgen -e | grep ^SLURM_); do unset "$v"; done
exec {mpiexec()} -n "$n" "$@"
""")
    srun.chmod(0o755)
    return bin_dir


def slurm_env(tmp_path, fake_bin, **variables):
    path = os.pathsep.join([str(fake_bin), str(Path(yewpy_cmd()[0]).parent), os.environ["PATH"]])
    return {**{k: v for k, v in os.environ.items() if not k.startswith("SLURM_")}, "PATH": path,
            "FAKE_LOG": str(tmp_path / "launches.log"), **variables}


def test_harness_uses_srun_and_refuses_more_ranks_than_allocated(tmp_path, fake_bin):
    env = slurm_env(tmp_path, fake_bin, SLURM_JOB_ID="99", SLURM_NTASKS="2", SLURM_NNODES="2")
    command = [*yewpy_cmd(), "scaling", "--repeat", "1", "--skeletons", "stacksteal", "--out", str(tmp_path)]
    out = subprocess.run([*command, "--ranks", "1,4", "--", "nqueens", "8"], capture_output=True, text=True,
                         env=env, timeout=60)
    assert out.returncode == 2 and "4 ranks exceed Slurm job 99's 2 tasks" in out.stderr, out.stderr
    assert not (tmp_path / "launches.log").exists()             # refused before any run
    out = subprocess.run([*command, "--ranks", "1,2", "--", "nqueens", "8"], capture_output=True, text=True,
                         env=env, timeout=120)
    assert out.returncode == 0, out.stderr
    assert "on Slurm job 99 (2 node(s))" in out.stderr and "answers agree: 92 in all 2 runs" in out.stdout
    launches = (tmp_path / "launches.log").read_text().splitlines()
    assert [line.split(" /")[0] for line in launches] == [       # one task per node: 2 ranks, 2 nodes
        "srun --ntasks=1 --nodes=1 --kill-on-bad-exit=1", "srun --ntasks=2 --nodes=2 --kill-on-bad-exit=1"]
    with open(tmp_path / "scaling.csv", newline="") as handle:
        assert {(r["ranks"], r["hosts"]) for r in csv.DictReader(handle)} == {("1", "1"), ("2", "2")}


@pytest.mark.parametrize("script", [*SCRIPTS, SLURM / "submit-sweep.sh"], ids=lambda p: p.name)
def test_scripts_parse_and_sbatch_options_are_known(script):
    subprocess.run(["bash", "-n", str(script)], check=True, timeout=30)
    lines = script.read_text().splitlines()
    assert lines[0] == "#!/bin/bash" and os.access(script, os.X_OK)
    options = [line for line in lines if line.startswith("#SBATCH")]
    assert bool(options) == (script.suffix == ".sbatch")
    for line in options:
        match = re.fullmatch(r"#SBATCH --([a-z-]+)(=\S+)?", line)
        assert match and match.group(1) in KNOWN, line
    # sbatch stops reading #SBATCH at the first command: every option must come before it
    first_command = next(i for i, line in enumerate(lines) if line.strip() and not line.startswith("#"))
    assert all(lines.index(line) < first_command for line in options)
    if script.suffix == ".sbatch":
        assert "#SBATCH --signal=B:TERM@120" in options and "forward_term" in script.read_text()


@pytest.fixture
def echo_yewpy(tmp_path):
    """A stand-in ``yewpy`` that prints its arguments one per line."""
    bin_dir = tmp_path / "echo-bin"
    bin_dir.mkdir()
    (bin_dir / "yewpy").write_text('#!/bin/bash\nprintf "%s\\n" "$@"\n')
    (bin_dir / "yewpy").chmod(0o755)
    return bin_dir


@pytest.mark.parametrize("task,nodes", [(0, 1), (1, 2), (2, 4), (3, 8)])
def test_array_task_computes_its_node_count(tmp_path, echo_yewpy, task, nodes):
    env = {**os.environ, "PATH": f"{echo_yewpy}{os.pathsep}{os.environ['PATH']}",
           "SLURM_JOB_ID": "501", "SLURM_ARRAY_JOB_ID": "500", "SLURM_ARRAY_TASK_ID": str(task),
           "SLURM_NNODES": "8", "SLURM_NTASKS": "256", "SLURM_NTASKS_PER_NODE": "32",
           "SCALING_ARGS": "--baseline seq --skeleton-args 'budget:-b 10000'"}
    out = subprocess.run(["bash", str(SLURM / "scaling-sweep.sbatch"), "nqueens", "17"], capture_output=True,
                         text=True, env=env, cwd=tmp_path, timeout=30)
    assert out.returncode == 0, out.stderr
    args = out.stdout.splitlines()
    assert args[:3] == ["scaling", "--ranks", str(32 * nodes)]
    assert args[args.index("--out") + 1] == f"scaling-500/nodes-{nodes}"
    assert args[args.index("--skeleton-args") + 1] == "budget:-b 10000" and "--baseline" in args
    assert args[-3:] == ["--", "nqueens", "17"] and "--launcher-args=--mpi=pmi2" in args


@pytest.mark.parametrize("variables,message", [
    ({"SLURM_ARRAY_TASK_ID": "4"}, "array task 4 has no entry in NODE_COUNTS=(1 2 4 8)"),
    ({"SLURM_ARRAY_TASK_ID": "3", "SLURM_NNODES": "4"}, "wants 8 nodes but holds 4"),
    ({}, "submit as a job array"),
])
def test_array_task_errors(tmp_path, echo_yewpy, variables, message):
    env = {**{k: v for k, v in os.environ.items() if not k.startswith("SLURM_")},
           "PATH": f"{echo_yewpy}{os.pathsep}{os.environ['PATH']}", "SLURM_JOB_ID": "1", "SLURM_NNODES": "8",
           "SLURM_NTASKS": "8", **variables}
    out = subprocess.run(["bash", str(SLURM / "scaling-sweep.sbatch"), "nqueens", "8"], capture_output=True,
                         text=True, env=env, cwd=tmp_path, timeout=30)
    assert out.returncode != 0 and message in out.stderr, out.stderr


def test_sweep_tasks_then_merge_on_real_ranks(tmp_path, fake_bin):
    """Two array tasks (1 and 2 one-rank nodes) through the real harness, then the merge step."""
    for task in (0, 1):
        env = slurm_env(tmp_path, fake_bin, SLURM_JOB_ID=str(10 + task), SLURM_ARRAY_JOB_ID="10",
                        SLURM_ARRAY_TASK_ID=str(task), SLURM_NNODES="2", SLURM_NTASKS="2",
                        SLURM_NTASKS_PER_NODE="1", NODE_COUNTS="1 2", REPEAT="1", SKELETONS="stacksteal")
        out = subprocess.run(["bash", str(SLURM / "scaling-sweep.sbatch"), "nqueens", "9"],
                             capture_output=True, text=True, env=env, cwd=tmp_path, timeout=120)
        assert out.returncode == 0, out.stderr
    assert "--mpi=pmi2" in (tmp_path / "launches.log").read_text()
    folders = sorted(map(str, tmp_path.glob("scaling-10/nodes-*")))
    out = subprocess.run([*yewpy_cmd(), "scaling", "--merge", *folders, "--out", str(tmp_path / "merged")],
                         capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    with open(tmp_path / "merged" / "scaling.csv", newline="") as handle:
        table = list(csv.DictReader(handle))
    assert sorted((r["row"], r["ranks"], r["hosts"], r["answer"]) for r in table) == [
        ("median", "1", "1", "352"), ("median", "2", "2", "352"),
        ("run", "1", "1", "352"), ("run", "2", "2", "352")]


def test_submit_sweep_right_sizes_tasks_and_chains_the_merge(tmp_path):
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "sbatch").write_text('#!/bin/bash\necho "$*" >> "$FAKE_LOG"\n'
                                    '[[ "$*" != *--dependency* ]] || cat > "$FAKE_LOG.merge"\n'
                                    'echo $(( 700 + $(wc -l < "$FAKE_LOG") ))";cluster"\n')
    (bin_dir / "sbatch").chmod(0o755)
    env = {**os.environ, "PATH": f"{bin_dir}{os.pathsep}{os.environ['PATH']}",
           "FAKE_LOG": str(tmp_path / "log"), "NODE_COUNTS": "1 4 16",
           "SCALING_OUT": str(tmp_path / "out dir")}
    out = subprocess.run(["bash", str(SLURM / "submit-sweep.sh"), "tsp", "gr17.tsp"], capture_output=True,
                         text=True, env=env, timeout=30)
    assert out.returncode == 0, out.stderr
    calls = (tmp_path / "log").read_text().splitlines()
    assert [c.split(" /")[0] for c in calls[:3]] == [
        "--parsable --array=0 --nodes=1", "--parsable --array=1 --nodes=4", "--parsable --array=2 --nodes=16"]
    assert all(c.endswith("scaling-sweep.sbatch tsp gr17.tsp") for c in calls[:3])
    assert "--dependency=afterok:701:702:703" in calls[3]
    merge = (tmp_path / "log.merge").read_text()        # the merge job's script, on sbatch's stdin
    assert merge.startswith("#!/bin/bash\n")            # not --wrap: /bin/sh has no `source`
    assert "yewpy scaling --merge" in merge and "out\\ dir/nodes-*" in merge
    assert out.stdout.strip() == "704;cluster" and (tmp_path / "out dir").is_dir()


def test_scripts_run_a_search_and_pass_sigterm_on(tmp_path, fake_bin):
    env = slurm_env(tmp_path, fake_bin, SLURM_JOB_ID="3", SLURM_NTASKS="2", SLURM_NNODES="1")
    out = subprocess.run(["bash", str(SLURM / "one-node.sbatch"), "nqueens", "8", "--skeleton", "stacksteal",
                          "--json"], capture_output=True, text=True, env=env, timeout=120)
    assert out.returncode == 0, out.stderr
    data = json.loads(out.stdout)
    assert (data["value"], data["ranks"], data["nodes"]) == (92, 2, 2057)
    assert "--mpi=pmi2" in (tmp_path / "launches.log").read_text()     # srun without it: N copies
    # Slurm's wall-time warning goes to the batch shell (B:); the script must hand it to the search
    # through Slurm (srun itself would kill its tasks on a SIGTERM of its own)
    waiter = tmp_path / "waiter.py"
    waiter.write_text("import signal, sys, time\n"
                      "signal.signal(signal.SIGTERM, lambda *a: (print('search got SIGTERM'), sys.exit(7)))\n"
                      "print('ready', flush=True)\ntime.sleep(60)\n")
    (fake_bin / "srun").write_text(f'#!/bin/bash\necho $$ > "$FAKE_LOG.srun"\n'
                                   f'exec {sys.executable} {waiter}\n')
    # a SIGTERM in the job's first YEWPY_TERM_AFTER seconds is held until then (Slurm may send it
    # up to a minute early, before the ranks could handle it)
    script = subprocess.Popen(["bash", str(SLURM / "multi-node.sbatch")], stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, text=True, env={**env, "YEWPY_TERM_AFTER": "2"})
    assert script.stdout.readline() == "ready\n"
    sent = time.monotonic()
    script.send_signal(signal.SIGTERM)                  # the waiter sleeps 60 s: only the passed-on
    stdout, stderr = script.communicate(timeout=30)     # SIGTERM ends it within the timeout
    assert script.returncode == 7 and "search got SIGTERM" in stdout and "passing it on" in stderr
    assert time.monotonic() - sent >= 0.9               # held: SECONDS counts whole seconds
    assert "scancel --signal=TERM" in (tmp_path / "launches.log").read_text()


def test_a_job_resubmitted_with_yewpy_checkpoint_continues_the_search(tmp_path, fake_bin):
    ckpt = tmp_path / "q.ckpt"
    env = slurm_env(tmp_path, fake_bin, SLURM_JOB_ID="4", SLURM_NTASKS="2", SLURM_NNODES="1",
                    YEWPY_CHECKPOINT=str(ckpt), YEWPY_CHECKPOINT_EVERY="0.2",
                    YEWPY_TERM_AFTER="0")      # a checkpoint exists: the ranks are up, pass it at once
    leg = ["bash", str(SLURM / "one-node.sbatch"), "nqueens", "15", "--skeleton", "stacksteal", "--json",
           "--quiet"]
    first = subprocess.Popen(leg, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
    end = time.monotonic() + 30
    while not ckpt.exists() and time.monotonic() < end:
        time.sleep(0.05)
    first.send_signal(signal.SIGTERM)                  # the wall-time warning, to the batch shell
    _, stderr = first.communicate(timeout=60)
    assert first.returncode == 130 and "checkpoint written to" in stderr, stderr
    second = subprocess.run(leg, capture_output=True, text=True, env=env, timeout=120)
    assert second.returncode == 0, second.stderr
    data = json.loads(second.stdout)
    assert (data["value"], data["nodes"]) == (2279184, 171129072)
    assert "--resume" in (tmp_path / "launches.log").read_text().splitlines()[-1]
