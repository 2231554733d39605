"""jsonfile.load reads with the C scanner and finds lines later: it must accept, refuse and place
every object exactly as the line-aware pure-Python decoder (its oracle here) does."""

from __future__ import annotations

import json
import random

import pytest

from yewpy.apps.dnn import jsonfile
from yewpy.apps.dnn.fusion.profile import read_profile
from yewpy.errors import InputError

# Valid JSON the readers refuse (NaN and Infinity, a number literal over 100 characters, nesting
# over 64, a duplicate key), values that pass (1e999 reads as inf; a field check refuses it later)
# and broken JSON, each put in place of a value as a marker string that is replaced after dumping.
_PIECES = ["NaN", "-Infinity", "1" * 100, "-" + "1" * 100, "1" * 101, "[" * 60 + "]" * 60,
           "[" * 64 + "]" * 64, "[" * 70 + "]" * 70, "1e999", "{", "\u0661", '{"x": 1, "x": 2}',
           '{"x": {"y": 1,\n "y": 2}}', '{"a":' * 61 + "1" + "}" * 61, '{"a":' * 66 + "1" + "}" * 66,
           "-0", "1E5", "-1.5e-3", "1.0e+", '"\\ud800"', '"tab\there"', "\r\n\t 7 \r\n"]


def _random_value(rng: random.Random, depth: int) -> object:
    roll = rng.random()
    if roll < 0.02:
        return f"@@{rng.randrange(len(_PIECES))}@@"
    if depth > 0 and roll < 0.3:
        return {f"k{rng.randrange(6)}_{i}": _random_value(rng, depth - 1) for i in range(rng.randrange(4))}
    if depth > 0 and roll < 0.5:
        return [_random_value(rng, depth - 1) for _ in range(rng.randrange(4))]
    return rng.choice([rng.randrange(-10**6, 10**6), rng.uniform(-1e9, 1e9), "s{}", "a\nb", True, None,
                       rng.randrange(10**20)])


def _text(rng: random.Random) -> str:
    doc = {"top": _random_value(rng, 5), "list": [_random_value(rng, 3) for _ in range(3)]}
    if rng.random() < 0.2:                  # a document that is a list, or a single value
        doc = rng.choice([[doc, [_random_value(rng, 2)]], _random_value(rng, 0)])
    text = json.dumps(doc, indent=rng.choice([None, 0, 1, 2]))
    for i, piece in enumerate(_PIECES):
        text = text.replace(f'"@@{i}@@"', piece)
    return text


def _outcome(read, path: str) -> tuple:  # noqa: ANN001 (a reader)
    try:
        doc = read(path)
    except InputError as exc:
        return ("error", exc.line, exc.message)
    lines = []
    todo = [doc]
    while todo:                  # every object's line and key lines, in a fixed order
        value = todo.pop()
        if isinstance(value, jsonfile.Obj):
            lines.append((value.line, sorted(value.key_lines.items())))
            todo.extend(value.values())
        elif isinstance(value, list):
            todo.extend(value)
    return ("ok", json.dumps(doc, sort_keys=True), lines)


def _oracle(path: str) -> object:
    text = open(path, encoding="utf-8").read()
    try:
        return jsonfile._LineDecoder().decode(text)
    except json.JSONDecodeError as exc:
        raise InputError(path, exc.lineno, f"invalid JSON: {exc.msg}") from None
    except jsonfile._Refused as exc:
        raise InputError(path, text.count("\n", 0, exc.pos) + 1, exc.message) from None


@pytest.mark.parametrize("seed", range(4))
def test_load_accepts_refuses_and_places_objects_as_the_line_aware_decoder(tmp_path, seed):
    rng = random.Random(seed)
    kinds = set()
    for i in range(300):
        path = tmp_path / f"doc{i}.json"
        path.write_text(_text(rng), encoding="utf-8")
        got, want = _outcome(jsonfile.load, str(path)), _outcome(_oracle, str(path))
        assert got == want, path.read_text()
        kinds.add(want[0] if want[0] == "ok" else want[2].split(":")[0])
    assert {"ok", "invalid JSON", "NaN and Infinity are not numbers a file may give",
            "duplicate key 'x' in one object", "objects and arrays nested more than 64 deep",
            "a number literal longer than 100 characters"} <= kinds


def test_an_error_names_the_line_of_an_object_deep_in_a_big_file(tmp_path):
    rows = [{"name": f"t{k}", "bytes": 4096, "backward": 1e-6} for k in range(5000)]
    rows[4321]["bytes"] = -1
    path = tmp_path / "profile.json"
    body = ",\n".join(map(json.dumps, rows))
    path.write_text('{"alpha": 1e-5, "beta": 1e-10, "tensors": [\n' + body + "\n]}\n")
    with pytest.raises(InputError) as caught:
        read_profile(str(path))
    assert caught.value.line == 4323 and "bytes" in caught.value.message
