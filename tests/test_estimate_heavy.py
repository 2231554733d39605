"""Heavy-tailed trees (``heavy_tailed``): where a few subtrees hold most of the nodes closed at a
depth, or most of a sample's, the estimate's range has no upper end, in progress lines, their
JSON and ``--estimate``. On near-critical binomial trees that makes the range hold the truth far
more often; regular trees keep their finite range."""

from __future__ import annotations

import json
import math

import pytest
from test_estimate import Complete
from test_estimate_recursive import walk

import yewpy
from support import run_ranks, yewpy_cmd
from yewpy.apps.nqueens import NQueens
from yewpy.apps.uts import UTS
from yewpy.operations import treesize
from yewpy.operations.treesize import Subtrees, TreeSize, heavy_tailed


def _sums(sizes: list) -> tuple[int, int, int]:
    return len(sizes), sum(sizes), sum(x * x for x in sizes)


def test_a_few_big_subtrees_are_heavy_an_even_spread_is_not():
    assert not heavy_tailed(*_sums([5] * 100))
    assert not heavy_tailed(*_sums([2 ** (k % 8) for k in range(200)]))       # sizes 1 to 128
    assert heavy_tailed(*_sums([1] * 99 + [10_000]))
    assert not heavy_tailed(*_sums([1, 10_000]))          # two sizes vary by one mean at most
    # the boundary: one of n holding every node has a coefficient of variation of sqrt(n - 1),
    # exactly 4 at n = 17 (not heavy) and above it from n = 18
    assert not heavy_tailed(*_sums([1] + [0] * 16)) and heavy_tailed(*_sums([1] + [0] * 17))


def _walk(problem, truth: int, fractions: tuple) -> list[tuple[int, TreeSize]]:
    """The nodes searched and the recursive estimate once each fraction of the tree is searched,
    after four reports there (``test_estimate_recursive.walk``; tops at most 256 nodes)."""
    return [(done, TreeSize.recursive(done, left)) for done, left in walk(problem, truth, fractions, 4, 256)]


def _covered(trees: list, fractions: tuple) -> list[int]:
    """Per fraction: on how many of ``trees`` ((problem, truth)) the range holds the truth."""
    hits = [0] * len(fractions)
    for problem, truth in trees:
        for i, (done, size) in enumerate(_walk(problem, truth, fractions)):
            low, high = size.range(done)
            hits[i] += low <= truth <= high
    return hits


def test_ranges_hold_the_truth_of_near_critical_binomial_trees_far_more_often(monkeypatch):
    """UTS binomial trees (qm = 0.995) of 2,000 to 3,000,000 nodes, seeds 0-39 (30 of them): with
    finite ranges from the closed subtrees' variance the truth lay in the range at 10%, 25% and
    50% of the search on 8, 16 and 28 of 30 trees; with no upper end where the closed subtrees
    are heavy-tailed, on 15, 27 and 28 (measured)."""
    trees = []
    for seed in range(40):
        tree = UTS("binomial", b0=100, q=0.199, m=5, seed=seed).core()
        truth = yewpy.search(tree).nodes
        if 2_000 <= truth <= 3_000_000:
            trees.append((tree, truth))
    assert len(trees) == 30
    fractions = (0.1, 0.25, 0.5)
    heavy = _covered(trees, fractions)
    monkeypatch.setattr(treesize, "HEAVY_CV", math.inf)
    finite = _covered(trees, fractions)
    assert heavy[1] >= 25 and heavy[2] >= 25, heavy
    assert sum(heavy) >= sum(finite) + 15, (heavy, finite)


@pytest.mark.parametrize("problem", [Complete(3, 8), NQueens(10), NQueens(11),
                                     UTS("geometric", b0=4, gen_mx=7, shape="fixed", seed=3).core()],
                         ids=["complete", "queens10", "queens11", "geometric"])
def test_regular_trees_keep_a_finite_range(problem):
    truth = yewpy.search(problem).nodes
    for done, size in _walk(problem, truth, (0.05, 0.1, 0.25, 0.5, 0.75)):
        assert size.bounded and math.isfinite(size.range(done)[1])


def test_knuth_may_raise_an_unbounded_estimate_but_not_bound_it():
    recursive = TreeSize.recursive(1_000, (9_000.0, math.inf, None))
    assert not recursive.bounded and recursive.range(1_000) == (1_000.0, math.inf)
    raised = recursive.combined(TreeSize(treesize.TRUSTED_PROBES, 12_000.0, 1_000.0), 1_000)
    assert raised.nodes == 12_000.0 and not raised.bounded
    assert recursive.combined(TreeSize(treesize.TRUSTED_PROBES, 8_000.0, 1_000.0), 1_000) is recursive
    assert recursive.to_dict(1_000)["high"] is None and recursive.to_dict(1_000)["heavy_tailed"]
    assert recursive.left(1_000, 100.0) == (90.0, 0.0, math.inf)


def test_a_heavy_tailed_sample_has_no_upper_end_but_is_judged_on_its_own_error():
    light = Subtrees(top=10, width=1_000, sizes=[40 + k % 20 for k in range(100)])
    assert light.tree().bounded and light.trusted(10)
    heavy = Subtrees(top=10, width=1_000, sizes=[1] * 99 + [100_000])
    assert not heavy.tree().bounded and heavy.tree().nodes == pytest.approx(10 + 1_000 * 1_000.99)
    # the trust rule reads the sample's own standard error: a subtree cut short after 10^7 nodes
    # moves the mean far out of it, so the sample does not stand
    cut = Subtrees(top=10, width=1_000, sizes=[1] * 99 + [100_000], cut=10_000_000)
    assert heavy.trusted(10) and not cut.trusted(10)
    whole = Subtrees(top=10, width=100, sizes=[1] * 99 + [100_000])     # every subtree: exact
    assert whole.tree().bounded and whole.tree().stderr == 0


# T3's law (binomial, qm = 0.999) with ten times its 2,000 root children: 18,758,377 nodes. T3 itself
# ends in 0.13 s on a fast machine, within two or three progress lines.
BIG_T3 = ["--uts-t", "0", "--uts-b", "20000", "--uts-q", "0.124875", "--uts-m", "8", "--uts-r", "42"]


def test_progress_says_there_is_no_upper_end_on_a_binomial_tree():
    """A near-critical binomial tree: every estimate in its progress lines has no upper end, in the
    JSON (``high`` and the time left's high null) and in the text, until every node is counted."""
    import subprocess

    out = subprocess.run([*yewpy_cmd(), "uts", *BIG_T3, "--json", "--progress-every", "0.02"],
                         capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    total = json.loads(out.stdout)["nodes"]
    assert total == 18_758_377
    records = [json.loads(line)["progress"] for line in out.stderr.splitlines()]
    estimates = [r["estimate"] for r in records if "estimate" in r and r["nodes"] < total]
    assert len(estimates) >= 3
    for e in estimates:
        assert e["heavy_tailed"] and e["high"] is None and e["seconds_left"][2] is None
        assert e["low"] <= e["nodes"]
    for r in records:       # every node counted: exact, or the last frames not yet closed
        if "estimate" in r and r["nodes"] == total:
            assert r["estimate"]["low"] == total and r["estimate"]["high"] in (total, None)
    text = subprocess.run([*yewpy_cmd(), "uts", *BIG_T3, "--progress-every", "0.01"],
                          capture_output=True, text=True, timeout=120)
    searched = f"nodes {total:,} "                  # a line printed once the whole tree is searched
    lines = [line for line in text.stderr.splitlines() if "est. tree" in line and searched not in line]
    assert lines and all("no upper end] (heavy-tailed" in line and "left [0 s, no upper end]" in line
                         for line in lines), text.stderr


def test_the_estimate_before_a_run_says_there_is_no_upper_end():
    from yewpy.tools.cli import estimate_lines

    report = {"under_incumbent": None, "exact": False, "estimator": "sampled-subtrees", "probes": 1_450,
              "nodes": 1.6e7, "low": 1.5e7, "high": None, "heavy_tailed": True, "consistent": True,
              "seconds_one_rank": 1.0, "seconds_one_rank_range": [0.9, None], "rate_per_rank": 1.6e7,
              "walltime": 30.0, "ranks_for_walltime": 1, "ranks_for_walltime_range": [1, None],
              "efficiency_assumed": 0.9}
    lines = estimate_lines(report)
    assert lines[0].startswith("estimated nodes = 1.6e+07 [1.5e+07, no upper end] (")
    assert lines[0].endswith("searched whole; heavy-tailed: no upper end)")
    assert lines[1].startswith("warning: a few subtrees hold most of the nodes counted")
    assert "[0.9 s, no upper end]" in lines[2] and "= 1 [1, no upper end]" in lines[3]
    # the real thing on T3L, in JSON: nothing infinite reaches it
    import subprocess

    out = subprocess.run([*yewpy_cmd(), "uts", "--tree", "T3L", "--estimate", "1", "--walltime", "0:30",
                          "--json"], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    estimate = json.loads(out.stdout)["metrics"]["estimate"]
    assert estimate["heavy_tailed"] and estimate["high"] is None
    assert estimate["seconds_one_rank_range"][1] is None and estimate["ranks_for_walltime_range"][1] is None


def test_two_ranks_sum_their_open_work_into_a_range_with_no_upper_end():
    """On two ranks (stack stealing) each rank's open work on T3L travels up the control tree; once
    both have reported, the headline is the recursive estimate, and it has no upper end."""
    out = run_ranks(2, [*yewpy_cmd(), "uts", "--tree", "T3L", "--skeleton", "stacksteal", "--json",
                        "--progress-every", "0.4"])
    assert out.returncode == 0, out.stderr
    total = json.loads(out.stdout)["nodes"]
    records = [json.loads(line)["progress"] for line in out.stderr.splitlines() if line.startswith("{")]
    summed = [r["estimate"] for r in records if "estimate_recursive" in r and r["nodes"] < total]
    assert summed and all(r["ranks"] == 2 for r in records)
    for e in summed:
        assert e["heavy_tailed"] and e["high"] is None and e["seconds_left"][2] is None
