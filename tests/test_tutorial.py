"""The tutorial's code runs as written and says what is true.

Every ```python block of docs/tutorial.md, in order, runs in one namespace; the ```cython block
is compiled first (Cython + a C compiler are test requirements), because the last Python block
imports it.  The compiled core and its Python twin must agree on values and node counts.
"""

from __future__ import annotations

import importlib
import linecache
import re
import subprocess
import sys
from pathlib import Path

import pytest

TUTORIAL = Path(__file__).resolve().parents[1] / "docs" / "tutorial.md"
FENCE = re.compile(r"^```(\w+)[^\n]*\n(.*?)^```[ \t]*$", re.MULTILINE | re.DOTALL)
BUILD = ("import yewpy; from setuptools import setup; from Cython.Build import cythonize; "
         "setup(ext_modules=cythonize('tut_core.pyx', include_path=[yewpy.get_include()]), "
         "script_args=['build_ext', '--inplace'])")


def blocks(language: str) -> list[str]:
    return [body for lang, body in FENCE.findall(TUTORIAL.read_text()) if lang == language]


@pytest.fixture(scope="module")
def tut_core(tmp_path_factory):
    """The tutorial's Cython block, compiled in a temporary folder and imported."""
    cython = blocks("cython")
    assert cython, "the tutorial has no ```cython block"
    where = tmp_path_factory.mktemp("tut_core")
    (where / "tut_core.pyx").write_text("\n".join(cython))
    done = subprocess.run([sys.executable, "-c", BUILD], cwd=where, capture_output=True, text=True)
    assert done.returncode == 0, f"building the tutorial's Cython block failed:\n{done.stdout}\n{done.stderr}"
    sys.path.insert(0, str(where))
    sys.modules.pop("tut_core", None)
    try:
        yield importlib.import_module("tut_core")
    finally:
        sys.path.remove(str(where))
        sys.modules.pop("tut_core", None)


@pytest.fixture(scope="module")
def namespace(tut_core):
    """The namespace left by running every Python block of the tutorial, in order."""
    code = blocks("python")
    assert len(code) >= 5, "the tutorial lost its Python blocks"
    ns: dict = {"__name__": "tutorial"}
    for k, body in enumerate(code, 1):
        name = f"{TUTORIAL.name}, python block {k}"
        # as a notebook or an editor does: the block's source is readable (``@yewpy.jit`` reads it)
        linecache.cache[name] = (len(body), None, body.splitlines(keepends=True), name)
        exec(compile(body, name, "exec"), ns)
    return ns


def test_python_blocks_run_and_give_the_stated_answers(namespace):
    ns = namespace
    # The asserts inside the blocks have run; check the headline numbers once more here.
    assert ns["best_by_dp"](ns["profits"], ns["weights"], ns["capacity"]) == 12423
    assert {name: r.objective for name, r in ns["runs"].items()} == dict.fromkeys(ns["runs"], 12423)
    assert ns["runs"]["seq"].nodes == 22247
    assert ns["strings"].search().value[-1] == 17711
    assert ns["three"].found is True and ns["four"].found is False
    assert (ns["fast"].objective, ns["fast"].nodes) == (12423, 22247)              # Part 3
    assert ns["ours"].nodes == ns["app"].nodes and ns["ours"].objective == 3


def test_compiled_core_matches_python_twin(tut_core, namespace):
    twin = namespace["CompleteStrings"]
    runs = [("seq", {}), ("depthbounded", {"spawn_depth": 3}), ("budget", {"backtracks": 50}),
            ("budget", {"backtracks": 7, "spawn_all": True})]
    for n in (0, 1, 2, 7, 20):
        for coordination, params in runs:
            compiled = tut_core.NoAdjacentOnesCore(n).search(coordination, **params)
            python = twin(n).search(coordination, **params)
            assert compiled.value == python.value, (n, coordination, params)
            assert compiled.nodes == python.nodes, (n, coordination, params)
            assert compiled.metrics["nodes"] == python.metrics["nodes"], (n, coordination, params)
    assert tut_core.NoAdjacentOnesCore(20).search().value == 17711


def test_get_include_names_the_folder_of_the_contracts_headers():
    """What the tutorial's build passes to Cython, installed or editable."""
    import yewpy
    headers = Path(yewpy.get_include()) / "yewpy"
    assert (headers / "core.pxd").read_text().count("cdef class") >= 4
    assert (headers / "_engine.pxd").is_file()


def test_a_core_written_against_the_old_cimport_still_builds(tmp_path):
    """``from yewpy._engine cimport ...`` (before yewpy.core was the public contract) still works."""
    cython = "\n".join(blocks("cython"))
    assert "from yewpy.core cimport" in cython
    old = cython.replace("from yewpy.core cimport", "from yewpy._engine cimport")
    (tmp_path / "tut_core.pyx").write_text(old)
    done = subprocess.run([sys.executable, "-c", BUILD], cwd=tmp_path, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    check = "import tut_core; print(tut_core.NoAdjacentOnesCore(20).search().value)"
    out = subprocess.run([sys.executable, "-c", check], cwd=tmp_path, capture_output=True, text=True)
    assert out.stdout.strip() == "17711", out.stderr
