"""Checkpoint and resume: a search cut anywhere and resumed (with any rank count) ends exactly as
an uninterrupted one; damaged or foreign checkpoints are refused with the file and line."""

from __future__ import annotations

import hashlib
import hmac
import json
import pickle
import random
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from fault_scenarios import header, wait_for_checkpoint

import yewpy
from support import DepthHistogram, launcher_is_open_mpi, mpiexec, run_ranks, yewpy_cmd
from yewpy.apps.knapsack_python import KnapsackPy
from yewpy.apps.maxclique import MaxClique
from yewpy.apps.nqueens import NQueens
from yewpy.errors import InputError
from yewpy.operations import checkpoint

SKELETONS = [("seq", {}), ("stacksteal", {}), ("stacksteal", {"chunked": True}),
             ("depthbounded", {"spawn_depth": 2}), ("budget", {"backtracks": 50}),
             ("budget", {"backtracks": 20, "spawn_all": True, "pool": "deque"})]


def _resume_in_steps(make, path, skeleton, params, step, **search):
    """Run ``step`` nodes at a time (the node limit counts this run's nodes), resuming each time from
    the checkpoint the last run left, until the search completes."""
    result = make().search(skeleton, checkpoint=str(path), node_limit=step, **params, **search)
    rounds = 1
    while result.status == "node_limit":
        result = make().search(skeleton, checkpoint=str(path), resume=str(path),
                               node_limit=step, **params, **search)
        rounds += 1
    return result, rounds


@pytest.mark.parametrize("skeleton, params", SKELETONS)
def test_enumeration_resumed_many_times_counts_exactly(tmp_path, skeleton, params):
    whole = NQueens(10).search()
    result, rounds = _resume_in_steps(lambda: NQueens(10), tmp_path / "q.ckpt", skeleton, params, 4000)
    assert rounds >= 5
    assert (result.value, result.nodes, result.status) == (whole.value, whole.nodes, "exhausted")


def test_a_python_monoid_resumes_exactly(tmp_path):
    rng = random.Random(7)
    shape, fresh = {}, 1
    for node in range(400):
        if node < fresh < 400:
            shape[node] = list(range(fresh, fresh + rng.randrange(1, 4)))
            fresh += len(shape[node])
    whole = DepthHistogram(shape).search()
    result, rounds = _resume_in_steps(lambda: DepthHistogram(shape), tmp_path / "h.ckpt", "stacksteal", {},
                                      40)
    assert rounds >= 3 and result.value == whole.value and result.nodes == whole.nodes


@pytest.mark.parametrize("skeleton, params", SKELETONS)
def test_optimisation_resumes_to_the_optimum(tmp_path, skeleton, params, instances):
    graph = MaxClique.from_file(str(instances / "clique" / "brock200_4.clq"))
    result, rounds = _resume_in_steps(lambda: graph, tmp_path / "c.ckpt", skeleton, params, 20000)
    assert rounds >= 3 and result.objective == 17 and result.status == "optimal"
    assert len(result.solution) == 17 and graph.is_clique(result.solution)


def test_python_optimisation_keeps_the_witness_across_resumes(tmp_path):
    rng = random.Random(3)                 # strongly correlated: a few hundred nodes
    weights = [rng.randrange(20, 60) for _ in range(30)]
    profits = [w + 10 + rng.randrange(3) for w in weights]
    capacity = sum(weights) // 2
    whole = KnapsackPy(profits, weights, capacity).search()
    result, rounds = _resume_in_steps(lambda: KnapsackPy(profits, weights, capacity), tmp_path / "k.ckpt",
                                      "depthbounded", {"spawn_depth": 2}, 60)
    assert rounds >= 3 and result.objective == whole.objective
    chosen = result.solution
    assert sum(profits[i] for i in chosen) == whole.objective and sum(weights[i] for i in chosen) <= capacity


def test_a_complete_checkpoint_resumes_to_the_same_answer_at_once(tmp_path):
    path = tmp_path / "done.ckpt"
    first = NQueens(8).search(checkpoint=str(path))
    header, prior, tasks = checkpoint.read(path)
    assert header["status"] == "exhausted" and tasks == [] and prior["nodes"] == first.nodes
    again = NQueens(8).search(resume=str(path))
    assert (again.value, again.nodes) == (92, first.nodes)


def test_damaged_foreign_and_missing_checkpoints_are_refused(tmp_path):
    path = tmp_path / "q.ckpt"
    NQueens(9).search(checkpoint=str(path), node_limit=2000)
    data = path.read_bytes()
    (tmp_path / "cut.ckpt").write_bytes(data[:-10])
    (tmp_path / "text.ckpt").write_text("hello\n")
    (tmp_path / "head.ckpt").write_bytes(data[:30])
    cases = [("cut.ckpt", NQueens(9), 4, "truncated"), ("text.ckpt", NQueens(9), 1, "not a yewpy checkpoint"),
             ("head.ckpt", NQueens(9), 2, "damaged or cut short"),
             ("q.ckpt", NQueens(10), 2, "another problem")]
    for name, problem, line, words in cases:
        with pytest.raises(InputError) as err:
            problem.search(resume=str(tmp_path / name))
        assert err.value.line == line and words in str(err.value)
        assert str(err.value).startswith(f"{tmp_path / name}:{line}: ")
    with pytest.raises(InputError, match="cannot read checkpoint"):
        NQueens(9).search(resume=str(tmp_path / "absent.ckpt"))


def test_a_checkpoint_of_another_yewpy_version_is_refused(tmp_path):
    path = tmp_path / "q.ckpt"
    NQueens(8).search(checkpoint=str(path), node_limit=100)
    header, prior, tasks = checkpoint.read(path)
    checkpoint.write(path, {**header, "yewpy_version": "0.0.1"}, prior, tasks)
    with pytest.raises(InputError, match="written by yewpy 0.0.1"):
        NQueens(8).search(resume=str(path))


class _Planted:
    """Unpickling this runs code: it writes a file."""

    def __init__(self, path):
        self.path = path

    def __reduce__(self):
        return (Path(self.path).write_text, ("ran",))


def test_a_checkpoint_not_signed_with_the_users_key_is_refused_unread(tmp_path, monkeypatch):
    path, planted = tmp_path / "q.ckpt", tmp_path / "planted"
    NQueens(8).search(checkpoint=str(path), node_limit=100)
    magic, header, signature, payload = path.read_bytes().split(b"\n", 3)
    evil = pickle.dumps({"prior": _Planted(str(planted)), "tasks": []})
    digest = hashlib.sha256(evil).hexdigest()     # a consistent checksum: anyone can compute one
    forged = json.dumps({**json.loads(header), "payload_bytes": len(evil), "payload_sha256": digest}).encode()
    other = hmac.new(b"another user's key", forged, "sha256").hexdigest().encode()
    for sig in (signature, b"hmac-sha256 " + other):
        (tmp_path / "forged.ckpt").write_bytes(b"\n".join([magic, forged, sig, evil]))
        with pytest.raises(InputError, match="not signed with this user's key") as err:
            NQueens(8).search(resume=str(tmp_path / "forged.ckpt"))
        assert err.value.line == 3 and not planted.exists()
    monkeypatch.setenv(checkpoint.KEY_ENV, str(tmp_path / "other-key"))   # another user, same file
    with pytest.raises(InputError, match="no checkpoint key at"):
        NQueens(8).search(resume=str(path))
    NQueens(8).search(checkpoint=str(tmp_path / "mine.ckpt"), node_limit=100)   # makes this key
    with pytest.raises(InputError, match="not signed with this user's key"):
        NQueens(8).search(resume=str(path))
    assert not planted.exists()
    pickle.loads(evil)                          # what loading it unchecked would have done
    assert planted.read_text() == "ran"


def test_the_key_is_made_private_under_the_config_folder_and_must_be_had(tmp_path, monkeypatch):
    monkeypatch.delenv(checkpoint.KEY_ENV)
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "config"))
    NQueens(6).search(checkpoint=str(tmp_path / "q.ckpt"))
    key = tmp_path / "config" / "yewpy" / "checkpoint-key"
    assert key.stat().st_mode & 0o777 == 0o600 and len(bytes.fromhex(key.read_text())) == 32
    assert NQueens(6).search(resume=str(tmp_path / "q.ckpt")).value == 4
    monkeypatch.setenv(checkpoint.KEY_ENV, str(tmp_path / "absent-folder" / "file" / "key"))
    (tmp_path / "absent-folder").write_text("a file where a folder should be")
    with pytest.raises(yewpy.UsageError, match="cannot create the checkpoint key"):
        NQueens(6).search(checkpoint=str(tmp_path / "r.ckpt"))
    assert not (tmp_path / "r.ckpt").exists()


def test_ordered_refuses_checkpoints(tmp_path):
    with pytest.raises(yewpy.UsageError, match="ordered"):
        KnapsackPy([1, 2], [1, 2], 2).search("ordered", checkpoint=str(tmp_path / "x"))


# -- real ranks, the CLI, signals --------------------------------------------------------------

def _json(out):
    assert out.returncode in (0, 130), out.stderr
    return json.loads(next(line for line in out.stdout.splitlines() if line.startswith("{")))


@pytest.mark.parametrize("first, then", [(3, 1), (1, 3)])
def test_enumeration_cut_by_time_limit_resumes_on_other_rank_counts(tmp_path, first, then):
    ckpt = str(tmp_path / "q.ckpt")
    cut = _json(run_ranks(first, [*yewpy_cmd(), "nqueens", "15", "--skeleton", "stacksteal", "--json",
                                  "--checkpoint", ckpt, "--time-limit", "0.6"]))
    assert cut["status"] == "time_limit" and header(tmp_path / "q.ckpt")["tasks"] > 0
    done = _json(run_ranks(then, [*yewpy_cmd(), "nqueens", "15", "--skeleton", "depthbounded", "-d", "3",
                                  "--json", "--resume", ckpt]))
    assert (done["value"], done["nodes"], done["status"]) == (2279184, 171129072, "exhausted")


@pytest.mark.parametrize("first, then", [(3, 1), (1, 3)])
def test_optimisation_cut_by_time_limit_resumes_on_other_rank_counts(tmp_path, instances, first, then):
    graph = str(instances / "clique" / "san200_0.9_3.clq")
    ckpt = str(tmp_path / "c.ckpt")
    cut = _json(run_ranks(first, [*yewpy_cmd(), "maxclique", graph, "--skeleton", "stacksteal", "--json",
                                  "--checkpoint", ckpt, "--time-limit", "0.5"]))
    assert cut["status"] == "time_limit"
    done = _json(run_ranks(then, [*yewpy_cmd(), "maxclique", graph, "--skeleton", "stacksteal", "--json",
                                  "--resume", ckpt]))
    assert done["objective"] == 44 and len(done["solution"]) == 44 and done["status"] == "optimal"


def _start(ranks, args):
    return subprocess.Popen([mpiexec(), "-n", str(ranks), *yewpy_cmd(), *args], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, start_new_session=True)


def test_kill_9_loses_only_the_work_since_the_last_checkpoint(tmp_path):
    path = tmp_path / "q.ckpt"
    proc = _start(3, ["nqueens", "15", "--skeleton", "stacksteal", "--chunked", "--quiet",
                      "--checkpoint", str(path), "--checkpoint-every", "0.2"])
    wait_for_checkpoint(path, "running")
    time.sleep(0.3)
    import os

    os.killpg(proc.pid, signal.SIGKILL)
    proc.communicate(timeout=30)
    assert header(path)["status"] == "running"          # a whole periodic checkpoint survived
    done = _json(run_ranks(2, [*yewpy_cmd(), "nqueens", "15", "--json", "--resume", str(path)]))
    assert (done["value"], done["nodes"]) == (2279184, 171129072)


@pytest.mark.parametrize("sig, ranks, twice", [(signal.SIGTERM, 1, False), (signal.SIGTERM, 3, False),
                                               (signal.SIGINT, 2, False), (signal.SIGINT, 1, True),
                                               (signal.SIGTERM, 2, True)])
def test_a_signal_writes_a_final_checkpoint_and_exits_130(tmp_path, sig, ranks, twice):
    path = tmp_path / "q.ckpt"
    proc = _start(ranks, ["nqueens", "15", "--skeleton", "budget", "-b", "500", "--json", "--quiet",
                          "--checkpoint", str(path), "--checkpoint-every", "0.2"])
    wait_for_checkpoint(path, "running")
    proc.send_signal(sig)                                  # mpiexec forwards it to every rank
    if twice:                                              # Ctrl-C twice: the second must not cut
        time.sleep(0.02)                                   # the final checkpoint short
        proc.send_signal(sig)
    out, err = proc.communicate(timeout=60)
    assert "Traceback" not in err
    if twice and launcher_is_open_mpi():    # Open MPI's mpirun kills the ranks at a second signal:
        assert header(path)["status"] in ("running", "interrupted")     # the last good one stays
    else:
        assert "interrupted; checkpoint written to" in err
        assert header(path)["status"] == "interrupted"
    # On a second signal Hydra's mpiexec exits on its own terms (255 or the signal), after yewpy
    # wrote its file; Open MPI's mpirun exits 1 whenever it was signalled.
    if not twice:
        assert proc.returncode == (1 if launcher_is_open_mpi() else 130), err
        assert json.loads(out.strip().splitlines()[-1])["status"] == "interrupted"
    done = _json(run_ranks(2, [*yewpy_cmd(), "nqueens", "15", "--json", "--resume", str(path)]))
    assert (done["value"], done["nodes"]) == (2279184, 171129072)


@pytest.mark.parametrize("ranks", [1, 2])
def test_the_cli_refuses_a_damaged_checkpoint_on_every_rank(tmp_path, ranks):
    path = tmp_path / "q.ckpt"
    NQueens(9).search(checkpoint=str(path), node_limit=2000)
    path.write_bytes(path.read_bytes()[:-1])
    out = run_ranks(ranks, [*yewpy_cmd(), "nqueens", "9", "--resume", str(path)], timeout=60)
    assert out.returncode == 2 and f"yewpy: error: {path}:4: checkpoint is truncated" in out.stderr
    assert "Traceback" not in out.stderr


@pytest.mark.parametrize("ranks", [1, 2])
@pytest.mark.parametrize("where", ["missing/q.ckpt", "afile/q.ckpt", "."])
def test_an_unwritable_checkpoint_path_is_refused_before_the_search(tmp_path, ranks, where):
    (tmp_path / "afile").write_text("a file, not a folder")
    target = tmp_path / where
    out = run_ranks(ranks, [*yewpy_cmd(), "nqueens", "9", "--checkpoint", str(target)], timeout=60)
    assert out.returncode == 2, out.stderr
    assert out.stderr.count("yewpy: error: cannot write the checkpoint") == 1, out.stderr
    assert "Traceback" not in out.stderr and out.stdout == ""


def _failing_writes(monkeypatch, fail):
    """checkpoint.write raises ENOSPC on the calls whose numbers (from 1) are in ``fail``."""
    import errno

    real, calls = checkpoint.write, []

    def write(*args, **kwargs):
        calls.append(1)
        if len(calls) in fail:
            raise OSError(errno.ENOSPC, "No space left on device")
        return real(*args, **kwargs)

    monkeypatch.setattr(checkpoint, "write", write)
    return calls


def test_a_failed_periodic_write_keeps_searching_and_the_last_checkpoint(tmp_path, monkeypatch, capsys):
    path = tmp_path / "q.ckpt"
    calls = _failing_writes(monkeypatch, fail={2, 3})
    result = NQueens(14).search(checkpoint=str(path), checkpoint_every=0.001)
    assert result.value == 365596 and result.nodes == 27358553 and len(calls) >= 4
    assert "checkpoint_error" not in result.metrics             # the final write succeeded
    assert "No space left on device; the last one written is kept" in capsys.readouterr().err
    assert header(path)["status"] == "exhausted"


def test_a_failed_final_write_still_gives_the_answer(tmp_path, monkeypatch, capsys):
    path = tmp_path / "q.ckpt"
    _failing_writes(monkeypatch, fail=set(range(1, 100)))
    result = NQueens(10).search(checkpoint=str(path))
    assert result.value == 724 and "No space left" in result.metrics["checkpoint_error"]
    assert not path.exists() and "yewpy: warning: checkpoint" in capsys.readouterr().err


FULL_DISK = """
import errno, os, sys
from yewpy.operations import checkpoint
from yewpy.apps.nqueens import NQueens
real, calls = checkpoint.write, []
def write(*args, **kwargs):
    calls.append(1)
    if len(calls) % 2 == 0:
        raise OSError(errno.ENOSPC, "No space left on device")
    return real(*args, **kwargs)
checkpoint.write = write
result = NQueens(13).search("stacksteal", checkpoint=sys.argv[1], checkpoint_every=0.002)
if os.environ.get("PMI_RANK", os.environ.get("OMPI_COMM_WORLD_RANK")) == "0":   # one rank prints it
    print(result.value, result.nodes, result.metrics.get("checkpoint_error"))
"""


def test_a_full_disk_on_rank_0_does_not_end_a_run_on_ranks(tmp_path):
    script = tmp_path / "full.py"
    script.write_text(FULL_DISK)
    out = run_ranks(2, [sys.executable, str(script), str(tmp_path / "q.ckpt")], timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout.split("\n")[0].split()[:2] == ["73712", "4674890"]


@pytest.mark.parametrize("skeleton, params", SKELETONS[:4])
def test_a_top_k_search_resumes_to_the_same_ranking(tmp_path, skeleton, params):
    """The ranked solutions travel in the checkpoint, and the resumed run starts at their bar."""
    from topk_trees import Walks, brute_force

    case = dict(seed=5, k=7, ties=True)
    result, rounds = _resume_in_steps(lambda: Walks(**case), tmp_path / "t.ckpt", skeleton, params, 60)
    assert rounds >= 3 and result.status == "optimal" and result.solutions == brute_force(case)
