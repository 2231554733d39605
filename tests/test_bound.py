"""The proven bound of a stopped optimisation (``Result.bound``, ``Result.gap``): exact where the
search's bound is exact, never tighter than the optimum, on every coordination and rank count,
for Python searches, compiled cores, the CLI and the DNN planner."""

import json
import math
import subprocess
import sys
from pathlib import Path

import pytest
from bound_trees import Paths

import yewpy
from support import run_ranks, yewpy_cmd
from yewpy.result import STOPPED, Result


def _check(results: dict) -> int:
    """Each [status, objective, bound] against brute force; the number of stopped searches."""
    stopped = 0
    for key, (status, objective, bound) in results.items():
        seed, sense, slack = key.split("/")[:3]
        tree = Paths(int(seed), sense, int(slack))
        optimum, sign = tree.optimum(), tree.sign
        if status in STOPPED:
            stopped += 1
            if int(slack) == 0:     # the optimum was found, or lies in the open work, bounded exactly
                assert bound == optimum, key
            else:                   # a loose bound is looser, never tighter
                assert sign * (bound - optimum) >= 0, key
            assert sign * (bound - objective) >= 0, key
        else:
            assert status == "optimal" and objective == bound == optimum, key
    return stopped


def test_a_stopped_search_bounds_what_it_left_open_on_every_coordination():
    from bound_trees import run_all

    results = run_all()
    stopped = _check(results)
    assert stopped > len(results) // 2         # most limits stop the search: the test has teeth


@pytest.mark.parametrize("ranks", [2, 4, 16])
def test_the_bound_covers_every_ranks_open_work(ranks, tmp_path):
    """Stolen tasks, pools and messages in flight: a rank's open work missing from the bound
    would show as a bound below the optimum of an exact-bound tree."""
    script = Path(__file__).with_name("bound_trees.py")
    out = run_ranks(ranks, [sys.executable, str(script), str(tmp_path)], cwd=tmp_path, timeout=600)
    assert out.returncode == 0, out.stderr
    got = [json.loads((tmp_path / f"bounds.{rank}.json").read_text()) for rank in range(ranks)]
    assert all(g == got[0] for g in got)      # every rank returns the same merged Result
    assert _check(got[0]) > 0


def test_a_search_without_a_bound_reports_none():

    class NoBound(yewpy.Optimisation):
        def root(self):
            return ()

        def children(self, path):
            if len(path) < 6:
                yield path + (0,)
                yield path + (1,)

        def objective(self, path):
            return sum(path)

    stopped = NoBound().search(node_limit=5)
    assert stopped.status == "node_limit" and stopped.bound is None and stopped.gap is None
    done = NoBound().search()
    assert done.status == "optimal" and done.bound == done.objective == 6 and done.gap == 0


def test_bounded_children_are_not_bounded_again_but_bound_the_open_work():
    """``bounded_children``: the engine never calls ``bound`` while searching, only on what a
    stopped search leaves open."""

    class Counted(Paths):
        bounded_children = True
        calls = 0

        def bound(self, path):
            Counted.calls += 1
            return super().bound(path)

    full = Counted(2).search()
    assert full.status == "optimal" and Counted.calls == 0 and full.bound == full.objective
    stopped = Counted(2).search(node_limit=4)
    assert stopped.status == "node_limit" and Counted.calls > 0 and stopped.bound == Paths(2).optimum()


def test_the_gap_is_relative_to_the_answer():
    def gap(objective, bound):
        return Result("optimisation", "time_limit", 1, 0.0, objective=objective, stopped_bound=bound).gap

    assert gap(80, 100) == 0.25 and gap(-4, -2) == 0.5 and gap(3, 3) == 0.0
    assert gap(0, 1) == math.inf and gap(None, 5) is None and gap(5, None) is None


def _json(args: list[str]) -> dict:
    out = subprocess.run([*yewpy_cmd(), *args, "--json"], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout)


def _bounded(data: dict, optimum: float, sign: int) -> None:
    """A stopped search's answer is no better than the optimum and its bound no worse; a finished
    one's are both the optimum."""
    if data["status"] == "node_limit":
        assert sign * data["objective"] <= sign * optimum <= sign * data["bound"]
        assert data["gap"] == pytest.approx(abs(data["objective"] - data["bound"]) / abs(data["objective"]))
    else:
        assert data["objective"] == data["bound"] == optimum and data["gap"] == 0


@pytest.mark.parametrize("limit", [50, 2000, 20000])
def test_compiled_cores_bound_their_open_work(limit, instances):
    """Maxclique (brock200_1: 21), knapsack (its .opt file) and TSP (att48: 10628) stopped early:
    the proven bound is at least as good as the known optimum, and the answer no better."""
    clique = _json(["maxclique", str(instances / "clique" / "brock200_1.clq"), "--node-limit", str(limit)])
    assert clique["status"] == "node_limit"
    _bounded(clique, 21, 1)
    folder = instances / "knapsack" / "large_scale"
    path = sorted(p for p in folder.iterdir() if not p.name.endswith(".opt"))[0]
    _bounded(_json(["knapsack", str(path), "--node-limit", str(limit)]),
             int(Path(str(path) + ".opt").read_text().split()[0]), 1)
    _bounded(_json(["tsp", str(instances / "tsp" / "att48.tsp"), "--node-limit", str(limit)]), 10628, -1)


@pytest.mark.parametrize("sense", ["max", "min"])
def test_frames_left_unexpanded_at_the_deadline_use_their_own_bound(monkeypatch, sense):
    """A root whose own bound is 5 looser than its children's: with time to make the open frames'
    children, the bound is the optimum; with none, each frame's own bound stands in (the root's,
    sound and 5 looser) and the tasks are bounded by the root's; the answer is the same."""
    from yewpy.operations import session

    stopped = 0
    for seed, limit in [(0, 2), (0, 5), (1, 3), (2, 8)]:
        for name, params in [("seq", {}), ("budget", {"backtracks": 2})]:
            timely = Paths(seed, sense, root_slack=5).search(name, node_limit=limit, **params)
            monkeypatch.setattr(session, "BOUND_LEAST", -1.0)
            monkeypatch.setattr(session, "BOUND_SHARE", 0.0)
            late = Paths(seed, sense, root_slack=5).search(name, node_limit=limit, **params)
            monkeypatch.undo()
            optimum, sign = Paths(seed, sense).optimum(), Paths(seed, sense).sign
            assert timely.status == late.status and timely.objective == late.objective
            if timely.status == "node_limit":
                stopped += 1
                assert timely.bound == optimum and late.bound == optimum + 5 * sign, (seed, limit, name)
    assert stopped >= 6


def test_a_checkpointed_stop_and_its_resume_bound_the_same_open_work(tmp_path):
    """A stop that writes a checkpoint splits every open frame into tasks first; those tasks are
    bounded, and a resumed run that stops again bounds what it left: exact bounds give the optimum."""
    for seed, sense in [(0, "max"), (1, "min"), (3, "max")]:
        tree, path = Paths(seed, sense), str(tmp_path / f"{seed}.ckpt")
        first = tree.search("budget", backtracks=3, node_limit=6, checkpoint=path)
        assert first.status == "node_limit" and first.bound == tree.optimum()
        again = Paths(seed, sense).search("budget", backtracks=3, node_limit=6, resume=path)
        assert again.bound == tree.optimum() and again.status in ("node_limit", "optimal")


def test_top_k_and_an_initial_bound_bound_the_best_solution():
    """A top-K search prunes against its k-th best, an initial bound prunes what is worse: the
    proven bound is still the optimum's on exact-bound trees."""

    class Best(yewpy.TopK, Paths):
        pass

    for seed in range(3):
        optimum = Paths(seed).optimum()
        for params in [{"k": 3}, {"k": 2, "gap": 1}]:
            best = Best(seed)
            best.k, best.gap = params["k"], params.get("gap")
            result = best.search("stacksteal", node_limit=5)
            assert result.status == "node_limit" and result.bound == optimum
        seeded = Paths(seed).search(node_limit=3, initial_bound=optimum - 2)
        assert seeded.status == "node_limit" and seeded.bound == optimum


def test_the_command_line_prints_the_bound_or_why_there_is_none(instances):
    graph = str(instances / "clique" / "brock200_1.clq")
    out = subprocess.run([*yewpy_cmd(), "maxclique", graph, "--node-limit", "1000"], capture_output=True,
                         text=True, timeout=120)
    line = next(x for x in out.stdout.splitlines() if x.startswith("bound = "))
    assert out.returncode == 0 and line.startswith("bound = 55 (proven: no solution is better; gap ")
    out = subprocess.run([*yewpy_cmd(), "maxclique", graph, "--node-limit", "1000", "--skeleton", "ordered",
                          "-d", "1"], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0 and "bound = 55 (proven" in out.stdout        # its queue is bounded too
    from yewpy.tools.cli import bound_lines

    unknown = Result("optimisation", "time_limit", 5, 0.1, objective=3)       # a search without bound
    assert bound_lines(unknown) == ["bound = unknown (this search or coordination cannot bound the work "
                                    "left open)"]
    assert bound_lines(Result("topk", "node_limit", 5, 0.1, objective=2.0, stopped_bound=1.5)) == [
        "bound = 1.5 (proven: no solution is better; gap 25.00%)"]
    done = subprocess.run([*yewpy_cmd(), "maxclique", str(instances / "clique" / "brock200_4.clq")],
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0 and "bound = " not in done.stdout       # proved: nothing to add


def test_a_bound_that_fails_at_the_stop_costs_no_answer():
    """With ``bounded_children`` the engine first calls ``bound`` when the search stops; if it
    raises there, the answer still comes back, unbounded, with a warning saying why."""

    class Broken(Paths):
        bounded_children = True

        def bound(self, path):
            raise ValueError("no bound here")

    with pytest.warns(RuntimeWarning, match="not bounded: ValueError: no bound here"):
        stopped = Broken(2).search(node_limit=4)
    assert stopped.status == "node_limit" and stopped.objective is not None and stopped.bound is None


def test_a_finished_answer_is_its_own_bound_as_the_app_reports_it(tmp_path):
    """A finished search's bound is its objective as the app reports it: the empty packing or clique
    an app makes 0 after the search, and fusion's DP, which no engine searched; an answer that is
    only evaluated (fixed buckets) proves nothing."""
    from yewpy.apps.knapsack import Knapsack
    from yewpy.apps.knapsack_python import KnapsackPy
    from yewpy.apps.maxclique import MaxClique

    for search in (Knapsack([5, 7], [10, 12], 3), KnapsackPy([5, 7], [10, 12], 3), MaxClique(0, [])):
        result = search.search()
        assert (result.status, result.objective, result.bound, result.gap) == ("optimal", 0, 0, 0.0)
    for method, bound in (("dp", True), ("fixed", False)):
        command = [*yewpy_cmd(), "fusion", "--synthetic", "resnet50", "--method", method, "--json"]
        done = subprocess.run(command, capture_output=True, text=True)
        doc = json.loads(done.stdout)
        assert doc["bound"] == (doc["objective"] if bound else None)
        assert doc["gap"] == (0.0 if bound else None)
