"""The fuzz suite: 1,700 mutated inputs and flag sets (``fuzz_inputs.py``), each answered right
by an independent oracle's measure or refused with one ``yewpy: error:`` line; never a hang,
a traceback or a silent wrong answer.  ``YEWPY_FUZZ_SEED`` draws other cases (default 1)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from fuzz_inputs import (
    DIMACS,
    INSTANCES,
    KNAPSACK,
    LAD,
    Invalid,
    embeds,
    judge,
    oracle_dimacs,
    oracle_knapsack,
    oracle_lad,
    oracle_tsp,
    tsp_bases,
)

from support import readme_table

FUZZ = Path(__file__).with_name("fuzz_inputs.py")
CASES = {"dimacs": 400, "knapsack": 300, "tsp": 300, "lad": 300, "checkpoint": 100, "flags": 300}
SEED = os.environ.get("YEWPY_FUZZ_SEED", "1")


@pytest.mark.parametrize("reader", sorted(CASES))
def test_fuzzed_inputs_are_answered_right_or_refused_in_one_line(reader):
    out = subprocess.run([sys.executable, str(FUZZ), "--reader", reader, "--cases", str(CASES[reader]),
                          "--seed", SEED], capture_output=True, text=True, timeout=600)
    assert out.stdout, f"the fuzzer died (a hang ends it through faulthandler): {out.stderr[-3000:]}"
    tally = json.loads(out.stdout)[reader]
    assert not tally["defects"], json.dumps(tally["defects"][:5], indent=1)
    assert out.returncode == 0 and tally["cases"] == CASES[reader]
    assert tally["refused"] >= CASES[reader] // 10                 # both outcomes are exercised
    if reader != "checkpoint":                                     # (any changed checkpoint is refused)
        assert tally["answered"] >= CASES[reader] // 10


def test_the_oracles_agree_with_the_reference_answers():
    """The oracles are right where the answers are known, so their verdicts mean something."""
    cliques = {row["file"]: int(row["omega"]) for row in readme_table(INSTANCES / "clique" / "README.md")
               if "omega" in row}
    for name in DIMACS:
        assert oracle_dimacs((INSTANCES / "clique" / name).read_bytes()) == cliques[name], name
    for name in KNAPSACK:
        base = INSTANCES / "knapsack" / "low-dimensional" / name
        best = oracle_knapsack(base.read_bytes(), (base.parent / f"{name}.opt").read_bytes())[0]
        assert best == int((base.parent / f"{name}.opt").read_text()), name
    answers = {tuple(line.split("\t")[1:3]): line.split("\t")[3] == "true"
               for line in (INSTANCES / "sip" / "LV_all_answers.tsv").read_text().splitlines()[1:]}
    for pattern, target in LAD:
        graphs = [oracle_lad((INSTANCES / "sip" / "LV" / g).read_bytes()) for g in (pattern, target)]
        assert embeds(*graphs) == answers[(f"LV/{pattern}", f"LV/{target}")], (pattern, target)
    burma8 = tsp_bases()[0]
    assert oracle_tsp(burma8) > 0
    with pytest.raises(Invalid):
        oracle_dimacs(b"p edge 3 2\ne 1 2\n")                       # the count is checked


def test_the_judge_calls_a_wrong_answer_a_defect(tmp_path):
    graph = tmp_path / "g.clq"
    graph.write_text("p edge 3 3\ne 1 2\ne 2 3\ne 1 3\n")
    argv = ["maxclique", str(graph), "--json", "--quiet"]
    assert judge(argv, [str(graph)], lambda r: None if r["objective"] == 3 else "wrong") == ("answered", "")
    assert judge(argv, [str(graph)], lambda r: None if r["objective"] == 2 else "wrong")[0] == "defect"
    graph.write_text("p edge 3 4\ne 1 2\n")
    assert judge(argv, [str(graph)], lambda r: "accepted") == ("refused", "")
