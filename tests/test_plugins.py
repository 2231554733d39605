"""A package that extends yewpy without editing it (tests/plugin_example, installed by the
README's test command): its app is a ``yewpy`` subcommand and its coordination a ``--skeleton``
choice with its own flag, on one rank and on MPI ranks, checked against independent counts."""

from __future__ import annotations

import json
import subprocess
from itertools import product

import pytest

import yewpy
from support import run_ranks, yewpy_cmd
from yewpy.apps.nqueens import NQueens


def run(*args, timeout=120):
    return subprocess.run([*yewpy_cmd(), *map(str, args)], capture_output=True, text=True, timeout=timeout)


def brute(n: int) -> tuple[int, int]:
    """Strings of length n without "11", and the tree's node count (every valid prefix)."""
    def ok(bits):
        return all(not (a and b) for a, b in zip(bits, bits[1:]))
    prefixes = sum(ok(bits) for k in range(n + 1) for bits in product((0, 1), repeat=k))
    return sum(ok(bits) for bits in product((0, 1), repeat=n)), prefixes


def test_the_plugin_app_is_a_subcommand():
    assert "fibstrings" in run("--help").stdout
    out = run("fibstrings", 12, "--json")
    assert out.returncode == 0, out.stderr
    got = json.loads(out.stdout)
    assert (got["value"], got["nodes"]) == brute(12)


@pytest.mark.parametrize("ranks,flags", [(1, ["--skeleton", "shallow", "--levels", "3"]),
                                         (2, ["--skeleton", "shallow", "--levels", "4"]),
                                         (3, ["--skeleton", "stacksteal"]),
                                         (4, ["--skeleton", "shallow"])])
def test_the_plugin_app_and_coordination_on_mpi_ranks(ranks, flags):
    out = run_ranks(ranks, [*yewpy_cmd(), "fibstrings", "14", "--json", "--quiet", *flags])
    assert out.returncode == 0, out.stderr
    lines = [line for line in out.stdout.splitlines() if line.startswith("{")]
    assert len(lines) == 1                                      # rank 0 prints, once
    got = json.loads(lines[0])
    assert (got["value"], got["nodes"], got["ranks"]) == (*brute(14), ranks)


def test_the_plugin_coordination_runs_a_bundled_app_and_the_api():
    out = run("nqueens", 8, "--skeleton", "shallow", "--levels", "2", "--json")
    assert out.returncode == 0, out.stderr
    assert json.loads(out.stdout)["value"] == 92
    assert NQueens(9).search("shallow", levels=3).value == NQueens(9).search().value == 352
    from yewpy_plugin_example.shallow import Shallow

    assert yewpy.search(NQueens(7), Shallow(levels=1)).value == 40


@pytest.mark.parametrize("flags,message", [
    (["--levels", "3"], "--levels applies to shallow, not seq"),
    (["--skeleton", "shallow", "--levels", "0"], "--levels must be between 1 and 64, got 0"),
    (["--skeleton", "shallow", "-d", "2"],
     "-d/--spawn-depth applies to depthbounded and ordered, not shallow"),
])
def test_the_plugin_coordinations_flags_are_checked(flags, message):
    out = run("fibstrings", 10, *flags)
    assert out.returncode == 2 and message in out.stderr and "Traceback" not in out.stderr, out.stderr


def test_plugin_apps_validate_their_input():
    out = run("fibstrings", 99)
    assert out.returncode == 2 and out.stderr.strip() == "yewpy: error: n must be between 0 and 40, got 99"
