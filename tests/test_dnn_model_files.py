"""DNN planner: ``--model FILE.py:NAME``, a Python function that builds the model (a Model, or a torch
module and its example inputs for ``from_torch``); every failure of the user's file is one error line."""

from __future__ import annotations

import importlib.util
import re
import subprocess
import textwrap

import pytest

from support import yewpy_cmd
from yewpy.apps.dnn.model_files import load_model
from yewpy.apps.dnn.models import transformer
from yewpy.errors import UsageError

BUILDERS = '''
from yewpy.apps.dnn.models import Block, Model, transformer
import helper                       # a module beside this file: the file's folder is importable


def small():
    return transformer("small", layers=4, hidden=256, heads=8, vocab=1000, seq=128)


def broken():
    return helper.fail()


def needs_an_argument(size):
    return size


def no_flops():
    return Model("idle", [Block("b", params=10, flops_per_token=0)], 128)


def nan_params():
    return Model("nan", [Block("b", params=float("nan"), flops_per_token=1)], 128)


def not_a_model():
    return 42


def too_big():
    return Model("huge", [Block("b", params=1e17, flops_per_token=1)], 128)


LIMIT = 3
'''


def plan(spec: str, *extra: str) -> subprocess.CompletedProcess:
    args = [*yewpy_cmd(), "dnn-plan", "--model", spec, "--cluster", "dgx-a100-80g:1x8", "--global-batch", "8",
            "--top", "1", *extra]
    return subprocess.run(args, capture_output=True, text=True, timeout=120)


@pytest.fixture
def builders(tmp_path):
    (tmp_path / "helper.py").write_text('def fail():\n    raise ValueError("no such size:\\n  256")\n')
    path = tmp_path / "builders.py"
    path.write_text(BUILDERS)
    return path


def test_a_function_returning_a_model_plans_via_the_cli(builders):
    out = plan(f"{builders}:small")
    assert out.returncode == 0, out.stderr
    expected = transformer("small", layers=4, hidden=256, heads=8, vocab=1000, seq=128)
    assert out.stdout.startswith(f"Model small ({expected.params / 1e9:.2f}B parameters)"), out.stdout
    assert load_model(f"{builders}:small").params == expected.params


def test_a_function_that_raises_is_one_error_line(builders):
    out = plan(f"{builders}:broken")
    assert out.returncode == 2 and "Traceback" not in out.stderr, out.stderr
    line = BUILDERS.splitlines().index("    return helper.fail()") + 1      # the file's line it came through
    assert out.stderr == f"yewpy: error: {builders}:{line}: broken() raised ValueError: no such size: 256\n"


def test_a_pair_needs_torch_or_goes_through_from_torch(tmp_path):
    path = tmp_path / "pair.py"
    if importlib.util.find_spec("torch") is None:       # this venv: torch is not installed
        path.write_text("def pair():\n    return object(), ()\n")
        out = plan(f"{path}:pair")
        assert out.returncode == 2, out.stderr
        assert out.stderr == (f"yewpy: error: {path}: pair() returned a (module, example_inputs) pair: "
                              "from_torch needs PyTorch (pip install torch)\n")
        return
    path.write_text(textwrap.dedent("""
        import torch

        class Tiny(torch.nn.Module):
            def __init__(self):
                super().__init__()
                self.embed = torch.nn.Embedding(100, 32)
                self.blocks = torch.nn.ModuleList(torch.nn.Linear(32, 32) for _ in range(3))
                self.head = torch.nn.Linear(32, 100)

            def forward(self, x):
                x = self.embed(x)
                for block in self.blocks:
                    x = torch.relu(block(x))
                return self.head(x)

        def pair():
            return Tiny(), (torch.zeros(2, 16, dtype=torch.long),)
    """))
    out = plan(f"{path}:pair")
    assert out.returncode == 0, out.stderr
    model = load_model(f"{path}:pair")
    assert [b.name for b in model.blocks] == ["embed", "blocks.0", "blocks.1", "blocks.2", "head"]
    assert model.params == 100 * 32 + 3 * (32 * 32 + 32) + 32 * 100 + 100


@pytest.mark.parametrize("name, message", [
    ("missing", "no 'missing' in the file (its functions: broken, nan_params, needs_an_argument, no_flops, "
                "not_a_model, small, too_big)"),
    ("LIMIT", "a non-callable 'LIMIT' in the file"),
    ("needs_an_argument", "needs_an_argument() raised TypeError: needs_an_argument() missing 1 required"),
    ("not_a_model", "not_a_model() returned int, not a Model or a (torch_module, example_inputs) pair"),
    ("no_flops", "no_flops() returned a model whose blocks all have zero FLOPs"),
    ("nan_params", "nan_params() returned block 'b' with params = nan"),
    ("too_big", "too_big() returned a model of 1e+17 parameters: a model may have at most 2**53"),
], ids=["missing", "not-callable", "arguments", "not-a-model", "no-flops", "nan", "too-big"])
def test_what_the_function_gets_wrong_is_a_usage_error_naming_the_file(builders, name, message):
    with pytest.raises(UsageError) as error:
        load_model(f"{builders}:{name}")
    assert str(error.value).startswith(f"{builders}") and message in str(error.value), str(error.value)
    assert "\n" not in str(error.value)


@pytest.mark.parametrize("text, message", [
    ("def f(:\n    pass\n", ":1: running the file raised SyntaxError: "),
    ("import not_a_module_anywhere\n", ":1: running the file raised ModuleNotFoundError: "),
    ("import sys\nsys.exit(3)\n", ":2: running the file raised SystemExit: 3"),
], ids=["syntax", "import", "exit"])
def test_a_file_that_fails_to_run_is_a_usage_error_at_its_line(tmp_path, text, message):
    path = tmp_path / "bad.py"
    path.write_text(text)
    with pytest.raises(UsageError, match=f"^{re.escape(str(path) + message)}"):
        load_model(f"{path}:f")


def test_a_missing_file_or_name_is_a_usage_error(tmp_path):
    for spec, message in [(f"{tmp_path}/none.py:f", re.escape(f"{tmp_path}/none.py: no such file")),
                          (f"{tmp_path}/none.py", "name the function that builds the model"),
                          (f"{tmp_path}/none.py:", "NAME must be the name of a function")]:
        with pytest.raises(UsageError, match=message):
            load_model(spec)
