"""Faults on real MPI ranks, each timed from the fault to the end of the job: used by
``test_faults.py`` (does it end, with one message and a resumable checkpoint?) and by
``benchmarks/bench_faults.py`` (how long does it take, over many runs?)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

from support import INSTANCES, mpiexec, yewpy_cmd

QUEENS = ["nqueens", "15", "--quiet", "--json"]
QUEENS_15 = (2279184, 171129072)            # solutions, nodes
LATE_RANK = textwrap.dedent("""
    import signal, sys, time
    if sys.argv[1] == "joined":
        from mpi4py import MPI          # MPI started: rank 0 waits in the polled agreement
    from yewpy.tools.cli import main
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(130))   # a rank busy with its own input
    time.sleep(60)
    sys.exit(main(sys.argv[2:]))
""")
PLANTED = textwrap.dedent("""
    import os
    import yewpy

    class Wide(yewpy.Enumeration):
        def root(self):
            return 0
        def children(self, node):
            rank = os.environ.get("PMI_RANK", os.environ.get("OMPI_COMM_WORLD_RANK"))
            if node >= 2 and rank == os.environ["FAILING"]:
                raise ValueError("planted on the last rank")
            if node < 7:
                for _ in range(7):
                    yield node + 1

    Wide().search("stacksteal")
""")


def _start(command: list[str], **env: str) -> subprocess.Popen:
    return subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            start_new_session=True, env=dict(os.environ, PYTHONUNBUFFERED="1", **env))


def _finish(proc: subprocess.Popen, since: float, timeout: float = 60) -> dict:
    try:
        out, err = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        out, err = proc.communicate()
        return {"seconds": None, "returncode": None, "stdout": out, "stderr": err}
    return {"seconds": time.monotonic() - since, "returncode": proc.returncode, "stdout": out, "stderr": err}


def header(path: Path) -> dict:
    return json.loads(path.read_bytes().split(b"\n")[1])


def wait_for_checkpoint(path: Path, status: str, deadline: float = 30.0) -> None:
    end = time.monotonic() + deadline
    while time.monotonic() < end:
        if path.exists() and header(path)["status"] == status:
            return
        time.sleep(0.02)
    raise AssertionError(f"no {status} checkpoint at {path}")


def resumes_exactly(path: Path, ranks: int = 2) -> bool:
    out = subprocess.run([mpiexec(), "-n", str(ranks), *yewpy_cmd(), *QUEENS, "--resume", str(path)],
                         capture_output=True, text=True, timeout=120)
    if out.returncode != 0:
        return False
    result = json.loads(out.stdout.strip().splitlines()[-1])
    return (result["value"], result["nodes"]) == QUEENS_15


def rank_pids(launcher: int, rank: int) -> list[int]:
    """The processes of one MPI rank (by Hydra's or Open MPI's rank variable) among the
    launcher's descendants."""
    children: dict[int, list[int]] = {}
    for entry in filter(str.isdigit, os.listdir("/proc")):
        try:
            stat = Path(f"/proc/{entry}/stat").read_text()
        except OSError:
            continue
        parent = int(stat.rsplit(")", 1)[1].split()[1])
        children.setdefault(parent, []).append(int(entry))
    found, todo = [], list(children.get(launcher, []))
    while todo:
        pid = todo.pop()
        todo += children.get(pid, [])
        try:
            env = Path(f"/proc/{pid}/environ").read_bytes().split(b"\0")
        except OSError:
            continue
        if f"PMI_RANK={rank}".encode() in env or f"OMPI_COMM_WORLD_RANK={rank}".encode() in env:
            found.append(pid)
    return found


def partial_input(good: int, bad: int) -> dict:
    """``good`` ranks read a real graph, ``bad`` ranks a missing one."""
    graph = str(INSTANCES / "clique" / "brock200_4.clq")
    command = [mpiexec(), "-n", str(good), *yewpy_cmd(), "maxclique", graph,
               ":", "-n", str(bad), *yewpy_cmd(), "maxclique", "/nonexistent/g.clq"]
    return _finish(_start(command), time.monotonic())


def kill_9_one_rank(folder: Path, ranks: int = 3) -> dict:
    """SIGKILL of rank ``ranks - 1`` after a periodic checkpoint; the checkpoint must resume."""
    path = folder / "killed.ckpt"
    proc = _start([mpiexec(), "-n", str(ranks), *yewpy_cmd(), *QUEENS, "--skeleton", "stacksteal",
                   "--checkpoint", str(path), "--checkpoint-every", "0.2"])
    wait_for_checkpoint(path, "running")
    time.sleep(0.3)
    victims = rank_pids(proc.pid, ranks - 1)
    since = time.monotonic()
    for pid in victims:
        os.kill(pid, signal.SIGKILL)
    report = _finish(proc, since)
    report.update(killed=len(victims), checkpoint=header(path)["status"], resumed=resumes_exactly(path))
    return report


def sigterm_in_a_collective(folder: Path, late_rank: str) -> dict:
    """Rank 0 waits for a late rank 1, in MPI_Init (``late_rank`` "unstarted") or in the start-up
    agreement ("joined"); SIGTERM to mpiexec must end both."""
    late = folder / "late.py"
    late.write_text(LATE_RANK)
    proc = _start([mpiexec(), "-n", "1", *yewpy_cmd(), *QUEENS, ":", "-n", "1", sys.executable, str(late),
                   late_rank, *QUEENS])
    time.sleep(2.0)                          # rank 0 is in the polled agreement by now
    since = time.monotonic()
    proc.send_signal(signal.SIGTERM)
    return _finish(proc, since)


def double_signal(folder: Path, ranks: int = 2, sig: int = signal.SIGINT) -> dict:
    """Ctrl-C twice, 20 ms apart, during a search with a checkpoint."""
    path = folder / "twice.ckpt"
    proc = _start([mpiexec(), "-n", str(ranks), *yewpy_cmd(), *QUEENS, "--skeleton", "budget", "-b", "500",
                   "--checkpoint", str(path), "--checkpoint-every", "0.2"])
    wait_for_checkpoint(path, "running")
    since = time.monotonic()
    proc.send_signal(sig)
    time.sleep(0.02)
    proc.send_signal(sig)
    report = _finish(proc, since)
    deadline = time.monotonic() + 10                # Hydra may exit before the ranks have written
    while header(path)["status"] == "running" and time.monotonic() < deadline:
        time.sleep(0.05)
    report.update(checkpoint=header(path)["status"], resumed=resumes_exactly(path))
    return report


def planted_exception(folder: Path, ranks: int) -> dict:
    """An exception inside a generator on the last rank of a stacksteal search."""
    script = folder / "planted.py"
    script.write_text(PLANTED)
    proc = _start([mpiexec(), "-n", str(ranks), sys.executable, str(script)], FAILING=str(ranks - 1))
    report = _finish(proc, time.monotonic())
    report["shown"] = report["stderr"].count("planted on the last rank") >= 1
    return report
