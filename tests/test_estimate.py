"""Tree-size estimates: Knuth's path sampling is exact on complete trees, unbiased on random ones,
follows the engine's own pruning rules, and reaches users through ``yewpy.estimate`` and
``--estimate``."""

from __future__ import annotations

import json
import math
import random
import statistics
import subprocess

import pytest

import yewpy
from support import random_tree, run_ranks, yewpy_cmd
from yewpy._probe import Prober
from yewpy.operations.treesize import TreeSize, merge_rows
from yewpy.search import core_of


class Complete(yewpy.Enumeration):
    """A complete tree: every node above ``depth`` has ``branching`` children."""

    def __init__(self, branching: int, depth: int) -> None:
        self.branching, self.depth = branching, depth

    def root(self):
        return 0

    def children(self, level):
        return iter([level + 1] * self.branching if level < self.depth else [])


def _mean(problem, probes, seed=1, **options):
    prober = Prober(core_of(problem), seed=seed, **options)
    prober.run(3600, most=probes)
    return prober.total / prober.probes, prober


@pytest.mark.parametrize("branching, depth", [(1, 5), (2, 10), (3, 6), (7, 3)])
def test_every_probe_of_a_complete_tree_is_exact(branching, depth):
    tree = Complete(branching, depth)
    nodes = yewpy.search(tree).nodes
    assert nodes == sum(branching ** d for d in range(depth + 1))
    mean, prober = _mean(tree, 20)
    assert mean == nodes and prober.total_sq == 20 * nodes ** 2      # no variance at all
    assert TreeSize.of((20, prober.total, prober.total_sq, None)).range() == (nodes, nodes)


def test_max_depth_cuts_the_probes_where_it_cuts_the_search():
    tree = Complete(3, 8)
    nodes = yewpy.search(tree, max_depth=4).nodes
    assert _mean(tree, 5, max_depth=4)[0] == nodes == 1 + 3 + 9 + 27


def test_probes_of_random_trees_are_unbiased():
    """Over 40 random trees the mean relative error of 4,000 probes each stays near zero (a biased
    choice of child, such as always the first, is off by far more than 3%: checked by mutation)."""
    rng = random.Random(7)
    errors = []
    for _ in range(40):
        tree = random_tree(rng, 50, 400)
        nodes = yewpy.search(tree).nodes
        errors.append(_mean(tree, 4000, seed=rng.randrange(1, 1 << 30))[0] / nodes - 1)
    assert abs(statistics.mean(errors)) < 0.03, errors
    assert statistics.median(abs(e) for e in errors) < 0.15


class Knap(yewpy.Optimisation):
    """A small 0/1 knapsack, to probe with a bound."""

    def __init__(self, profits, weights, capacity, prune_level=False):
        self.p, self.w, self.c, self.prune_level = profits, weights, capacity, prune_level

    def root(self):
        return (0, 0, 0)

    def children(self, node):
        i, profit, weight = node
        if i == len(self.p):
            return
        if weight + self.w[i] <= self.c:
            yield (i + 1, profit + self.p[i], weight + self.w[i])
        yield (i + 1, profit, weight)

    def objective(self, node):
        return node[1]

    def bound(self, node):
        return node[1] + sum(self.p[node[0]:])


@pytest.mark.parametrize("prune_level", [False, True])
def test_probes_follow_the_engines_pruning_under_a_fixed_incumbent(prune_level):
    """With the incumbent fixed at the optimum (``initial_bound``), the search's node count is the
    tree the probes sample: their mean converges to it."""
    rng = random.Random(3)
    profits = [rng.randrange(1, 30) for _ in range(14)]
    weights = [rng.randrange(1, 30) for _ in range(14)]
    problem = Knap(profits, weights, 80, prune_level)
    best = yewpy.search(problem).objective
    nodes = yewpy.search(problem, initial_bound=best).nodes
    prober = Prober(core_of(problem), prune_level=prune_level, seed=5)
    prober.run(3600, best, most=40000)
    mean = prober.total / prober.probes
    se = math.sqrt(prober.total_sq / prober.probes - mean ** 2) / math.sqrt(prober.probes)
    assert abs(mean - nodes) < max(4 * se, 0.02 * nodes), (mean, nodes, se)


def test_rows_merge_across_ranks_and_stale_incumbents_drop_out():
    a, b = (10, 100.0, 1100.0, None), (30, 330.0, 3700.0, None)
    assert merge_rows(a, b, 1.0) == (40, 430.0, 4800.0, None)
    old, new = (10, 500.0, 30000.0, 40), (5, 100.0, 2100.0, 44)
    assert merge_rows(old, new, 1.0) == new == merge_rows(new, old, 1.0)      # maximise: 44 is newer
    assert merge_rows(old, new, -1.0) == old                                   # minimise: 40 is
    size = TreeSize.of(merge_rows(a, b, 1.0))
    assert size.nodes == 430 / 40 and size.range(done=1000) == (1000.0, 1000.0)
    assert not size.consistent(1000) and size.at_least(1000) == 1000


def test_estimate_before_a_run_counts_time_and_ranks():
    from yewpy.apps.nqueens import NQueens

    report = yewpy.estimate(NQueens(15), seconds=1.0, walltime=0.5)
    truth = 171_000_000                      # NQueens(15)'s tree: 1.71e8 nodes (yewpy nqueens 15)
    assert not report["exact"] and report["consistent"]
    assert 0.8 * truth < report["nodes"] < 1.25 * truth
    assert report["low"] <= report["nodes"] <= report["high"]
    one = report["seconds_one_rank"]
    assert one == pytest.approx(report["nodes"] / report["rate_per_rank"])
    assert report["ranks_for_walltime"] == max(1, math.ceil(one / (0.5 * report["efficiency_assumed"])))
    recursive, knuth, sampled = (report[f"estimate_{k}"] for k in ("recursive", "knuth", "sampled"))
    # the sampled subtrees where trusted; else the recursive estimate, which Knuth's probes (trusted
    # here) may raise but not lower
    assert report["estimator"] in ("sampled-subtrees", "kilby-2006-recursive",
                                   "kilby-2006-recursive+knuth-1975")
    assert knuth["probes"] > 1000 and 0.8 * truth < sampled["nodes"] < 1.25 * truth
    if report["estimator"] == "sampled-subtrees":
        assert report["nodes"] == sampled["nodes"] and report["probes"] == sampled["probes"] >= 30
    elif report["estimator"] == "kilby-2006-recursive":
        assert knuth["nodes"] <= recursive["nodes"] == report["nodes"]
    else:
        assert recursive["nodes"] < report["nodes"] < knuth["nodes"] and knuth["probes"] == report["probes"]
    assert 0.5 * truth < recursive["nodes"] < 2 * truth and recursive["probes"] == 0
    small = yewpy.estimate(NQueens(8), seconds=1.0)
    assert small["exact"] and small["nodes"] == yewpy.search(NQueens(8)).nodes


def _cli(*args):
    return subprocess.run([*yewpy_cmd(), *map(str, args)], capture_output=True, text=True, timeout=120)


def test_the_estimate_flag_prints_the_estimate_and_its_json():
    out = _cli("uts", "--tree", "T1L", "--estimate", "1", "--walltime", "0:02")
    assert out.returncode == 0, out.stderr
    assert out.stdout.startswith("estimated nodes = ") and "ranks for a wall time of 2 s = " in out.stdout
    data = json.loads(_cli("uts", "--tree", "T1L", "--estimate", "1", "--json").stdout)
    assert 0.5 * 102_181_082 < data["metrics"]["estimate"]["nodes"] < 2 * 102_181_082


@pytest.mark.parametrize("estimator, knuth, says", [
    ("kilby-2006-recursive+knuth-1975", (5_000, True), "raised by Knuth's path sampling (5,000 probes)"),
    ("kilby-2006-recursive", (5_000, True), "Knuth's 5,000 probes read lower (they may only raise it)"),
    ("kilby-2006-recursive", (5_000, False), "Knuth's 5,000 probes missed the tree's heavy tail"),
    ("kilby-2006-recursive", (12, True), "Knuth's 12 probes were too few"),
    ("sampled-subtrees", (5_000, True), "the tree's top counted, then 5,000 of its subtrees, chosen at"),
])
def test_the_estimate_says_which_estimator_stands_and_why(estimator, knuth, says):
    from yewpy.tools.cli import estimate_lines

    report = {"under_incumbent": None, "exact": False, "estimator": estimator, "probes": 5_000,
              "nodes": 1e6, "low": 5e5, "high": 2e6, "consistent": True, "seconds_one_rank": None,
              "estimate_knuth": {"probes": knuth[0], "consistent": knuth[1]}}
    assert says in estimate_lines(report)[0]
    assert not any(line.startswith("note: ") for line in estimate_lines(report))
    under = estimate_lines({**report, "under_incumbent": 23.0})
    assert under[0].startswith("estimated nodes under incumbent 23 = ")
    assert "note: counted as if no solution better than 23 turns up" in under[1]
    if estimator != "sampled-subtrees":         # and why the sampled subtrees do not stand
        for sampled, why in ((None, "fewer than two subtrees below the tree's top could be searched whole"),
                             ({"probes": 12}, "12 sampled subtrees were too few"),
                             ({"probes": 400}, "400 sampled subtrees missed a heavy tail")):
            assert why in estimate_lines({**report, "estimate_sampled": sampled})[0]


@pytest.mark.parametrize("skeleton", ["stacksteal", "depthbounded"])
def test_the_estimate_before_a_run_sums_every_ranks_open_work(skeleton):
    """On two ranks each rank estimates what its short search left open; the sum, plus the nodes
    searched, is the recursive estimate (n-queens 15: 171,000,000 nodes)."""
    out = run_ranks(2, [*yewpy_cmd(), "nqueens", "15", "--skeleton", skeleton, "--estimate", "1", "--json"])
    assert out.returncode == 0, out.stderr
    data = json.loads(out.stdout)
    report = data["metrics"]["estimate"]
    assert data["ranks"] == 2 and "open_work" not in data["metrics"] and not report["exact"]
    assert data["nodes"] < report["estimate_recursive"]["nodes"]
    assert 0.5 * 171_000_000 < report["estimate_recursive"]["nodes"] < 2 * 171_000_000


@pytest.mark.parametrize("args, message", [
    (["--walltime", "60"], "--walltime goes with --estimate"),
    (["--estimate", "0"], "--estimate must be a positive number of seconds"),
    (["--estimate", "nan"], "--estimate must be a positive number of seconds"),
    (["--estimate", "1", "--walltime", "1:xx"], "not a duration"),
    (["--estimate", "1", "--checkpoint", "c.ckpt"], "does not take --checkpoint"),
])
def test_estimate_flags_are_checked(args, message, tmp_path):
    out = subprocess.run([*yewpy_cmd(), "nqueens", "8", *args], capture_output=True, text=True, timeout=60,
                         cwd=tmp_path)
    assert out.returncode == 2 and message in out.stderr and "Traceback" not in out.stderr, out.stderr


def test_progress_says_when_the_job_ends_too_soon():
    """A job that ends in one second, a search that needs about three: progress says so."""
    import os
    import time

    env = dict(os.environ, YEWPY_END_TIME=str(time.time() + 1.0))
    out = subprocess.run([*yewpy_cmd(), "nqueens", "15", "--progress-every", "0.5", "--time-limit", "1.6"],
                         capture_output=True, text=True, timeout=60, env=env)
    assert out.returncode == 0 and "wall time" in out.stderr, out.stderr
    assert "not expected to finish" in out.stderr.splitlines()[-1]


def test_the_job_end_comes_from_yewpy_or_slurm():
    from yewpy.operations.walltime import job_end, verdict

    assert job_end({}) is None and job_end({"YEWPY_END_TIME": "12.5"}) == 12.5
    assert job_end({"SLURM_JOB_END_TIME": "1700000000"}) == 1.7e9
    assert verdict((10, 8, 12), 20) == "expected to finish"
    assert verdict((10, 8, 12), 11) == "may not finish"
    assert verdict((10, 8, 12), 9) == "not expected to finish" and verdict(None, 9) == "unknown"
