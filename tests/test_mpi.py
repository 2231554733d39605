"""Real MPI ranks from pytest: every rank count gives the sequential answer; failures end the job."""

import json
import sys
import textwrap
from pathlib import Path

import pytest

from support import run_ranks, yewpy_cmd

RANKS = [2, 3, 4]


def _json(out):
    assert out.returncode == 0, out.stderr
    lines = [line for line in out.stdout.splitlines() if line.startswith("{")]
    assert len(lines) == 1, out.stdout        # rank 0 alone prints
    return json.loads(lines[0])


@pytest.mark.parametrize("ranks", RANKS)
def test_nqueens_exact_on_ranks(ranks):
    data = _json(run_ranks(ranks, [*yewpy_cmd(), "nqueens", "10", "--json"]))
    assert (data["value"], data["nodes"], data["ranks"]) == (724, 35539, ranks)


@pytest.mark.parametrize("ranks", RANKS)
def test_maxclique_and_decision_on_ranks(ranks, instances):
    graph = str(instances / "clique" / "brock200_4.clq")
    data = _json(run_ranks(ranks, [*yewpy_cmd(), "maxclique", graph, "--json"]))
    assert data["objective"] == 17 and len(data["solution"]) == 17
    found = _json(run_ranks(ranks, [*yewpy_cmd(), "maxclique", graph, "--decision", "17", "--json"]))
    assert found["found"] is True and len(found["solution"]) >= 17
    missing = _json(run_ranks(ranks, [*yewpy_cmd(), "maxclique", graph, "--decision", "18", "--json"]))
    assert missing["found"] is False and missing["status"] == "exhausted"


@pytest.mark.parametrize("ranks", RANKS)
def test_python_knapsack_on_ranks(ranks, instances):
    path = str(instances / "knapsack" / "yewpar_kp" / "knapsackTest1.kp")
    data = _json(run_ranks(ranks, [*yewpy_cmd(), "knapsack", path, "--python", "--json",
                                   "--skeleton", "budget", "-b", "200"]))
    assert data["objective"] == 6925


SCRIPT = textwrap.dedent("""
    import os
    import sys
    import yewpy

    class Tree(yewpy.Enumeration):
        zero = ()
        def root(self):
            return (0, 0)
        def children(self, node):
            value, depth = node
            if depth == 4 and value % 7 == 3 and BOOM:
                raise RuntimeError(f"planted failure at {node}")
            if depth < 7:
                for k in range(3):
                    yield (value * 3 + k, depth + 1)
        def value(self, node):                # a histogram of depths, lambdas and all
            return ((node[1], 1),)
        def combine(self, a, b):
            merged = dict(a)
            for depth, count in b:
                merged[depth] = merged.get(depth, 0) + count
            return tuple(sorted(merged.items()))

    BOOM = len(sys.argv) > 1
    result = Tree().search("depthbounded", spawn_depth=2)
    rank = os.environ.get("PMI_RANK") or os.environ.get("OMPI_COMM_WORLD_RANK", "0")
    with open(f"result.{rank}", "w") as out:
        out.write(f"{dict(result.value)} {result.nodes}")
""")


@pytest.mark.parametrize("ranks", [1, 2, 3, 4])
def test_python_defined_monoid_on_ranks(ranks, tmp_path):
    script = tmp_path / "tree.py"
    script.write_text(SCRIPT)
    out = run_ranks(ranks, [sys.executable, str(script)], cwd=tmp_path)
    assert out.returncode == 0, out.stderr
    expected = f"{ {d: 3 ** d for d in range(8)} } {sum(3 ** d for d in range(8))}"
    for rank in range(ranks):                       # every rank returns the same merged result
        assert (tmp_path / f"result.{rank}").read_text() == expected


@pytest.mark.parametrize("ranks", [2, 3])
def test_an_exception_on_one_rank_ends_every_rank(ranks, tmp_path):
    script = tmp_path / "tree.py"
    script.write_text(SCRIPT)
    out = run_ranks(ranks, [sys.executable, str(script), "boom"], timeout=60)
    assert out.returncode != 0
    assert "planted failure" in out.stderr and "Traceback" in out.stderr


def _matrix(ranks, instances, tmp_path, seed=11):
    script = Path(__file__).with_name("mpi_matrix.py")
    out = run_ranks(ranks, [sys.executable, str(script), str(instances), str(seed)], timeout=600,
                    cwd=tmp_path)
    assert out.returncode == 0, out.stderr
    results = [json.loads((tmp_path / f"matrix.{r}.json").read_text()) for r in range(ranks)]
    assert all(r == results[0] for r in results)       # every rank returns the same answer
    return results[0]


@pytest.fixture(scope="module")
def sequential_matrix(instances, tmp_path_factory):
    """The same matrix on one process without MPI: the reference answers."""
    import mpi_matrix

    folder = tmp_path_factory.mktemp("seq")
    cwd = Path.cwd()
    try:
        import os

        os.chdir(folder)
        mpi_matrix.main(str(instances), 11)
    finally:
        os.chdir(cwd)
    return json.loads((folder / "matrix.0.json").read_text())


@pytest.mark.parametrize("ranks", RANKS)
def test_every_kind_and_coordination_on_ranks(ranks, instances, tmp_path, sequential_matrix):
    matrix = _matrix(ranks, instances, tmp_path)
    assert matrix.keys() == sequential_matrix.keys()
    for key, expected in sequential_matrix.items():     # enumeration node counts included
        assert matrix[key] == expected, key
    replicable = [key for key in matrix if key.endswith("replicable")]
    assert len(replicable) == 2 and all(matrix[key] is True for key in replicable)
    assert sequential_matrix['seq{} nqueens'] == [724, 35539]
    assert sequential_matrix['seq{} clique'] == 17 and sequential_matrix['seq{} knapsack'] == 6925
    assert sequential_matrix['seq{} clique17'] == [True, True]
    assert sequential_matrix['seq{} clique18'] is False


RANK_FAILS = textwrap.dedent("""
    import os
    import yewpy

    class Wide(yewpy.Enumeration):
        def root(self):
            return 0
        def children(self, node):
            rank = os.environ.get("PMI_RANK") or os.environ.get("OMPI_COMM_WORLD_RANK")
            if node >= 1 and rank == "1":
                raise ValueError("planted on rank 1")
            if node < 6:
                for _ in range(6):
                    yield node + 1

    Wide().search("stacksteal")
""")


def test_an_exception_on_a_thief_rank_ends_rank_0(tmp_path):
    script = tmp_path / "wide.py"
    script.write_text(RANK_FAILS)
    out = run_ranks(2, [sys.executable, str(script)], timeout=60)
    assert out.returncode != 0
    assert "rank 1 of 2 failed" in out.stderr and "planted on rank 1" in out.stderr


@pytest.mark.parametrize("ranks", [2, 4])
def test_per_rank_metrics_add_up(ranks):
    data = _json(run_ranks(ranks, [*yewpy_cmd(), "nqueens", "11", "--json", "--skeleton", "stacksteal"]))
    rows = data["metrics"]["per_rank"]
    assert [row["rank"] for row in rows] == list(range(ranks))
    assert sum(row["nodes"] for row in rows) == data["nodes"] == 166926
    assert sum(row["steals_succeeded"] for row in rows) <= sum(row["steals_attempted"] for row in rows)
    assert sum(row["tasks_given"] for row in rows) >= sum(row["steals_succeeded"] for row in rows)
    # the per-depth counts arrive summed over the ranks (one allreduce): against an independent count
    assert data["metrics"]["nodes"] == data["metrics"]["backtracks"] == _queens_by_depth(11)
    assert sum(data["metrics"]["spawns"]) == sum(row["tasks"] for row in rows) > 0


def _queens_by_depth(n):
    """Boards with the first d rows placed and no two queens attacking, for d = 0..n."""
    counts = [0] * (n + 1)

    def place(row, cols, up, down):
        counts[row] += 1
        free = ~(cols | up | down) & ((1 << n) - 1) if row < n else 0
        while free:
            bit = free & -free
            free ^= bit
            place(row + 1, cols | bit, (up | bit) << 1, (down | bit) >> 1)

    place(0, 0, 0, 0)
    return counts


def test_sigterm_to_mpiexec_ends_every_rank():
    import signal
    import subprocess
    import time

    from support import mpiexec

    proc = subprocess.Popen([mpiexec(), "-n", "2", *yewpy_cmd(), "nqueens", "20"], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    time.sleep(1.5)
    proc.send_signal(signal.SIGTERM)
    proc.communicate(timeout=30)
    assert proc.returncode != 0


def _mpmd(parts: list[tuple[int, list[str]]], timeout: float = 60):
    import subprocess

    from support import mpiexec

    command = [mpiexec()]
    for k, (count, args) in enumerate(parts):
        command += ([":"] if k else []) + ["-n", str(count), *args]
    return subprocess.run(command, capture_output=True, text=True, timeout=timeout)


@pytest.mark.parametrize("layout", [(1, 1), (2, 1), (1, 3), (3, 1)])
def test_input_failing_on_some_ranks_ends_every_rank_with_one_message(layout, instances):
    good = [*yewpy_cmd(), "maxclique", str(instances / "clique" / "brock200_4.clq")]
    bad = [*yewpy_cmd(), "maxclique", "/nonexistent/g.clq"]
    before, failing = layout                        # ranks with the file, then ranks without it
    out = _mpmd([(before, good), (failing, bad)])
    assert out.returncode == 2, out.stderr
    assert out.stderr.count("yewpy: error:") == 1, out.stderr
    assert "yewpy: error: /nonexistent/g.clq: cannot read" in out.stderr and "Traceback" not in out.stderr
    assert out.stdout == ""


@pytest.mark.parametrize("ranks", [2, 4])
def test_an_input_error_on_every_rank_is_printed_once(ranks):
    out = run_ranks(ranks, [*yewpy_cmd(), "maxclique", "/nonexistent/g.clq"], timeout=60)
    assert out.returncode == 2 and out.stderr.count("yewpy: error:") == 1, out.stderr


UNPICKLABLE = textwrap.dedent("""
    import os
    import threading
    import yewpy

    class Locked(yewpy.Enumeration):
        def __init__(self):
            self.lock = threading.Lock()      # no pickle: no checkpoint fingerprint
        def root(self):
            return 0
        def children(self, node):
            return iter(range(node + 1, 4))

    try:
        Locked().search(checkpoint="x.ckpt")
    except yewpy.UsageError as error:
        rank = os.environ.get("PMI_RANK") or os.environ.get("OMPI_COMM_WORLD_RANK")
        with open(f"said.{rank}", "w") as out:
            out.write(str(error))
""")


def test_a_problem_that_cannot_be_fingerprinted_fails_on_every_rank(tmp_path):
    script = tmp_path / "locked.py"
    script.write_text(UNPICKLABLE)
    out = run_ranks(2, [sys.executable, str(script)], timeout=60, cwd=tmp_path)
    assert out.returncode == 0, out.stderr
    for rank in (0, 1):                                 # both ranks raise it, neither waits
        assert "needs a picklable problem" in (tmp_path / f"said.{rank}").read_text()


@pytest.mark.parametrize("count, number", [("SLURM_STEP_NUM_TASKS", "SLURM_PROCID"),
                                           ("OMPI_COMM_WORLD_SIZE", "OMPI_COMM_WORLD_RANK")])
def test_n_tasks_that_mpi_sees_as_n_worlds_of_one_are_refused(count, number):
    """srun without --mpi (or another MPI's launcher) starts N copies, each an MPI world of 1: each
    exits 2 instead of running the whole search, and only task 0 says why."""
    import os
    import subprocess

    copies = []
    for task in range(3):
        env = {k: v for k, v in os.environ.items() if not k.startswith(("PMI", "OMPI", "SLURM", "HYDRA"))}
        env.update({count: "3", number: str(task), "SLURM_NTASKS": "3", "SLURM_PROCID": str(task)})
        copies.append(subprocess.Popen([*yewpy_cmd(), "nqueens", "9"], env=env, stdout=subprocess.PIPE,
                                       stderr=subprocess.PIPE, text=True))
    outs = [(p.communicate(timeout=60), p.returncode) for p in copies]
    assert [code for _, code in outs] == [2, 2, 2]
    assert all(out == "" for (out, _), _ in outs)
    said = [err for (_, err), _ in outs]
    assert "one of 3 tasks" in said[0] and "srun --mpi=pmi2" in said[0] and said[1] == said[2] == ""


TOP_K_BAR = textwrap.dedent("""
    import json
    import os
    import sys

    sys.path.insert(0, TESTS)
    from topk_trees import RANK, Walks

    walks = Walks(seed=5, k=6, ties=True)
    result = walks.search("stacksteal")
    with open(f"result.{RANK}", "w") as out:
        json.dump([[[o, list(p)] for o, p in result.solutions], walks.threshold], out)
""")


@pytest.mark.parametrize("ranks", [2, 4, 16])
def test_a_top_k_bar_reaches_every_rank(ranks, tmp_path):
    """A top-K search's bar (its k-th best, what it prunes against) is flooded to every rank as an
    incumbent is: every rank ends with the same bar, and the answer is brute force's."""
    from topk_trees import brute_force

    script = tmp_path / "tree.py"
    script.write_text(f"TESTS = {str(Path(__file__).parent)!r}\n" + TOP_K_BAR)
    out = run_ranks(ranks, [sys.executable, str(script)], cwd=tmp_path, timeout=300)
    assert out.returncode == 0, out.stderr
    expected = [[o, list(p)] for o, p in brute_force(dict(seed=5, k=6, ties=True))]
    got = [json.loads((tmp_path / f"result.{rank}").read_text()) for rank in range(ranks)]
    assert all(solutions == expected for solutions, _ in got)
    assert len({bar for _, bar in got}) == 1 and got[0][1] is not None
