"""The numbers the docs quote about the code are the code's own (where reading them is cheap)."""

from __future__ import annotations

import re
from pathlib import Path

from yewpy.compiler import scratch

ROOT = Path(__file__).resolve().parents[1]


def test_the_engines_clock_and_signal_intervals():
    engine = (ROOT / "cext" / "yewpy" / "_engine.pyx").read_text()
    masks = {int(m) + 1 for m in re.findall(r"\(self\.tick & (\d+)\) == 0", engine)}
    assert masks == {256, 4096}                     # the clock, and signals
    architecture = (ROOT / "docs" / "architecture.md").read_text()
    assert "The clock is read every 256" in architecture
    assert "checks for signals every 4096 nodes" in architecture
    descend = engine[engine.index("cdef int _descend("):]
    assert "256 - (self.tick & 255)" in descend and "4096 - (self.tick & 4095)" in descend


def test_the_scratch_arena_size():
    jit = (ROOT / "docs" / "jit.md").read_text()
    assert f"bump-allocate from a {scratch.WORDS * 8 // 1024} KiB arena" in jit


PATH = r"`((?:yewpy|skeletons|apps|cext|tests|benchmarks)/[\w/.-]+\.(?:py|pyx|pxd))`"


def test_the_docs_name_modules_that_exist():
    """Every ``yewpy/...py`` or ``cext/...`` path the docs name is in the tree (``yewpy/X.pxd``:
    the installed header, from ``cext/yewpy/X.pxd``; ``NAME``: a placeholder)."""
    missing = []
    for doc in [*(ROOT / "docs").glob("*.md"), ROOT / "README.md", ROOT / "CONTRIBUTING.md"]:
        for path in set(re.findall(PATH, doc.read_text())):
            if not ("NAME" in path or (ROOT / path).exists() or (ROOT / "cext" / path).exists()):
                missing.append(f"{doc.name}: {path}")
    assert not missing, missing
