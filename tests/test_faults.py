"""Faults on real ranks (``fault_scenarios.py``): each ends the job, says why once, and leaves the
last good checkpoint resumable to the exact answer.  How fast, over many runs, is
``benchmarks/bench_faults.py``'s to measure; here a timeout only guards against a hang."""

from __future__ import annotations

import fault_scenarios as faults
import pytest

from support import launcher_is_open_mpi


def test_kill_9_of_one_rank_ends_the_job_and_its_checkpoint_resumes(tmp_path):
    report = faults.kill_9_one_rank(tmp_path, ranks=3)
    assert report["killed"] == 1 and report["returncode"] not in (0, None), report
    assert report["checkpoint"] == "running" and report["resumed"]


@pytest.mark.parametrize("late_rank", ["unstarted", "joined"])
def test_sigterm_while_rank_0_waits_for_a_late_rank_ends_the_job(tmp_path, late_rank):
    """In MPI_Init (no Python handler runs there) or in the polled start-up agreement."""
    report = faults.sigterm_in_a_collective(tmp_path, late_rank)
    assert report["returncode"] is not None, "still running a minute after SIGTERM"
    assert "Traceback" not in report["stderr"]
    if late_rank == "joined":                   # Open MPI's mpirun exits 1 when it was signalled
        assert report["returncode"] == (1 if launcher_is_open_mpi() else 130)
        assert "yewpy: interrupted" in report["stderr"]


@pytest.mark.parametrize("ranks, runs", [(2, 8), (4, 4)])
def test_a_planted_exception_is_shown_every_time(tmp_path, ranks, runs):
    for _ in range(runs):
        report = faults.planted_exception(tmp_path, ranks)
        assert report["returncode"] not in (0, None) and report["shown"], report["stderr"][-2000:]
        assert report["stderr"].count("Traceback (most recent call last)") == 1


def test_ctrl_c_twice_keeps_the_last_good_checkpoint(tmp_path):
    """yewpy's handler outlives a second signal, so with Hydra the final checkpoint is written;
    Open MPI's mpirun kills the ranks at a second Ctrl-C, which leaves the last periodic one."""
    report = faults.double_signal(tmp_path, ranks=2)
    assert report["returncode"] is not None and "Traceback" not in report["stderr"]
    assert report["checkpoint"] == ("running" if launcher_is_open_mpi() else "interrupted")
    assert report["resumed"]
