"""The fuzz suite: 1,415 mutated inputs and flag sets (``fuzz_inputs.py``), each answered right
by an independent oracle's measure or refused with one ``yewpy: error:`` line; never a hang,
a traceback or a silent wrong answer.  The DNN planner's model and cluster readers (``dnn-*``) are
called in the fuzzer's process, and 15 whole ``yewpy dnn-plan`` runs go through a subprocess.
``YEWPY_FUZZ_SEED`` draws other cases (default 1). The counts were cut from 1,965 to keep the whole
suite under 15 minutes on 2 cores; another seed draws fresh cases of every kind."""

from __future__ import annotations

import json
import os
import re
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
    oracle_cluster_spec,
    oracle_dimacs,
    oracle_knapsack,
    oracle_lad,
    oracle_model,
    oracle_tsp,
    tsp_bases,
)

from support import readme_table

FUZZ = Path(__file__).with_name("fuzz_inputs.py")
CASES = {"dimacs": 250, "knapsack": 200, "tsp": 200, "lad": 200, "checkpoint": 100, "flags": 200,
         "dnn-model": 150, "dnn-cluster": 100, "dnn-cli": 15}
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


def test_the_dnn_oracles_agree_with_published_parameter_counts():
    """The model oracle counts the published models within 0.07% (docs/dnn.md leaves out final norms
    and T5's position tables), GPT-3 as 175B; the cluster oracle refuses what the docs refuse."""
    from test_dnn_hf_config import PUBLISHED

    for name, config, published in PUBLISHED:
        params, _, blocks = oracle_model(json.dumps(config).encode())
        assert params == pytest.approx(published, rel=7e-4) and blocks > 2, name
    gpt3 = {"transformer": {"layers": 96, "hidden": 12288, "heads": 96, "vocab": 50257, "seq": 2048}}
    assert oracle_model(json.dumps(gpt3).encode())[0] == pytest.approx(175e9, rel=3e-3)
    for bad in (b'{"seq": 8, "blocks": [{"params": NaN, "flops_per_token": 1, "boundary": 1}]}',
                b'{"seq": 8, "seq": 8, "blocks": [{"params": 1, "flops_per_token": 1, "boundary": 1}]}',
                b'{"transformer": {"layers": 10001, "hidden": 8, "heads": 2, "vocab": 8, "seq": 8}}'):
        with pytest.raises(Invalid):
            oracle_model(bad)
    assert oracle_cluster_spec("dgx-a100-80g:4x8+dgx-v100-32g:2x8") == [(4, 8, 80), (2, 8, 32)]
    for bad in ("dgx-a100-80g:0x8", "dgx-a100-80g:1x16", "dgx-a100-80g:\u0663x8", "dgx-a100-80g:131073x8",
                "+".join(["dgx-a100-80g"] * 9)):
        with pytest.raises(Invalid):
            oracle_cluster_spec(bad)


BLOCK = '{"seq": 8, "blocks": [{"params": %s, "flops_per_token": 1, "boundary": 4, "repeat": %s}]}'
LAYERS = '{"transformer": {"layers": %s, "hidden": %s, "heads": 2, "vocab": 8, "seq": 8%s}}'


@pytest.mark.parametrize("reader, text, message", [
    ("model", BLOCK % ("NaN", 1), "NaN and Infinity are not numbers"),              # was planned: nan
    ("model", BLOCK % (1, "NaN"), "NaN and Infinity are not numbers"),              # was a ValueError
    ("model", BLOCK % ("1e308", 1), "field 'params' must be at most 9007199254740992"),
    ("model", BLOCK % (1, "1e30"), "field 'repeat' must be at most 10000"),         # was a hang
    ("model", BLOCK % (1, "9" * 5000), "a number literal longer than 100"),          # was a ValueError
    ("model", BLOCK % ("1\u0663", 1), "a number with non-ASCII digits"),            # was read as 13
    ("model", "[" * 5000 + "]" * 5000, "nested more than 64 deep"),                  # was a RecursionError
    ("model", '{"seq": 8,\n "seq": 9, "blocks": []}', "duplicate key 'seq'"),
    ("model", '{"name": 5, "seq": 8, "blocks": [{"params": 1, "flops_per_token": 1, "boundary": 1}]}',
     "field 'name' must be a string"),
    ("model", LAYERS % (10 ** 7, 8, ""), "field 'layers' must be at most 10000"),   # was a hang
    ("model", LAYERS % (2, 2 ** 62, ""), "field 'hidden' must be at most"),          # was 5e38 parameters
    ("model", LAYERS % (2, 8, ', "kv_heads": 0'), "kv_heads = 0 must be positive and divide heads = 2"),
    ("model", LAYERS % (2, 8, ', "kv_heads": 3'), "kv_heads = 3 must be positive and divide heads = 2"),
    ("model", LAYERS % (2, 9, ""), "heads = 2 does not divide hidden = 9"),
    ("model", LAYERS % (2, 8, ', "experts": 2, "top_k": 3'), "top_k = 3 must be positive and at most"),
    ("model", '{"model_type": "gpt2", "n_embd": 8, "n_head": 2, "n_layer": ' + str(2 ** 40) + "}",
     "'n_layer' must be at most 10000"),                                             # was a hang
    ("cluster", '{"groups": [{"preset": "dgx-a100-80g", "nodes": NaN}]}', "NaN and Infinity"),  # ValueError
    ("cluster", '{"groups": [{"preset": "dgx-a100-80g", "nodes": ' + str(2 ** 63) + "}]}", "at most 1048576"),
    ("cluster", '{"groups": [{"preset": "dgx-a100-80g", "memory_gib": 1e308}]}', "must be at most"),
    # an adversarial pass, stop 55: numpy warnings and a false "does not fit"
    ("cluster", '{"groups": [{"preset": "dgx-a100-80g", "peak_tflops": 5e-324}]}',
     "field 'peak_tflops' must be at least 0.001, got 5e-324"),
    ("cluster", '{"groups": [{"preset": "dgx-a100-80g", "inter_latency_us": 9007199254740992}]}',
     "field 'inter_latency_us' must be at most 10000000.0"),            # a C long overflow in fusion
    ("cluster", '{"groups": [{"preset": "dgx-a100-80g", "site": "a"},'
     ' {"preset": "dgx-a100-80g", "site": "b"}], "links": [{"sites": ["a", "b"], "mbps": 5e-324}]}',
     "field 'mbps' must be at least 0.001"),
    ("model", '{"seq": 8, "blocks": [{"params": 10, "flops_per_token": 1, "boundary": 1, "experts": 2,'
     ' "expert_params": 1e13}]}', "expert_params = 1e+13 is more than the block's params = 10"),  # -27,939 GB
    ("cluster", '{"groups": [' + ", ".join(['{"preset": "dgx-a100-80g"}'] * 9) + "]}", "more than 8 groups"),
    ("spec", "+".join(["dgx-a100-80g:1x8"] * 9), "more than 8 groups"),          # was a hang (2^groups)
    ("spec", "dgx-a100-80g:\u0663x8", "expected PRESET:NODESxGPUS"),               # was 1 node
    ("spec", "dgx-a100-80g:%sx8" % ("9" * 5000), "more than 1048576 GPUs"),       # was a ValueError
    ("spec", "dgx-a100-80g:99999999999999999999x8", "more than 1048576 GPUs"),    # was 8e20 GPUs
    ("spec", "dgx-a100-80g:131073x8", "1048584 GPUs, more than 1048576"),
])
def test_the_dnn_reader_defects_the_fuzzer_found_stay_fixed(tmp_path, reader, text, message):
    """Each was a traceback, a hang, or nonsense accepted; now one error line (files: FILE:LINE)."""
    from yewpy.apps.dnn.cluster import load_cluster
    from yewpy.apps.dnn.model_files import load_model
    from yewpy.errors import InputError, UsageError

    path = tmp_path / "input.json"
    path.write_text(text)
    read = load_model if reader == "model" else load_cluster
    with pytest.raises(UsageError if reader == "spec" else InputError, match=re.escape(message)) as error:
        read(text if reader == "spec" else str(path))
    if reader != "spec":
        assert error.value.path == str(path) and 1 <= error.value.line <= text.count("\n") + 1
