"""The README's example runs and prints what its comments say."""

import contextlib
import io
import re
from pathlib import Path

README = Path(__file__).resolve().parents[1] / "README.md"


def test_readme_python_example_prints_what_it_claims():
    block = re.search(r"```python\n(.*?)```", README.read_text(), re.S).group(1)
    claimed = [line.split("#")[1].split(",")[0].strip() for line in block.splitlines()
               if line.strip().startswith("print(")]
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        exec(compile(block, "README.md", "exec"), {"__name__": "readme"})
    assert out.getvalue().split() == claimed == ["4", "4"]


def test_readme_python_example_prints_once_on_mpi_ranks(tmp_path):
    """Under mpiexec every rank runs the script; ``yewpy.rank()`` has rank 0 print."""
    import sys

    from support import run_ranks

    block = re.search(r"```python\n(.*?)```", README.read_text(), re.S).group(1)
    script = tmp_path / "queens.py"
    script.write_text(block)
    out = run_ranks(2, [sys.executable, str(script)])
    assert out.returncode == 0, out.stderr[-2000:]
    assert out.stdout.split() == ["4", "4"]


def test_readme_starts_with_the_two_commands():
    blocks = re.findall(r"```bash\n(.*?)```", README.read_text(), re.S)
    assert "mpiexec -n 2" in blocks[0] and "yewpy" in blocks[0]
    assert blocks[1].strip().endswith("pytest")


def test_the_first_command_installs_what_draws_the_plots():
    """`yewpy scaling` and `yewpy report` draw PNGs after the README's first command."""
    import tomllib

    first = re.findall(r"```bash\n(.*?)```", README.read_text(), re.S)[0]
    extras = re.search(r'\.\[([\w,-]+)\]', first).group(1).split(",")
    project = tomllib.loads((README.parent / "pyproject.toml").read_text())["project"]
    optional = project["optional-dependencies"]
    assert any(dep.startswith("matplotlib") for extra in extras for dep in optional[extra])



def test_readme_jit_example_prints_what_it_claims(tmp_path):
    """The README's @yewpy.jit block, run from a file (the decorator reads the source)."""
    import subprocess
    import sys

    block = re.findall(r"```python\n(.*?)```", README.read_text(), re.S)[1]
    assert "@yewpy.jit" in block
    script = tmp_path / "bitqueens.py"
    script.write_text("import yewpy\n" + block)
    out = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr[-2000:]
    assert out.stdout.split() == ["14200"]


def test_the_first_command_installs_the_jit_compiler():
    import tomllib

    project = tomllib.loads((README.parent / "pyproject.toml").read_text())["project"]
    assert any(dep.startswith("numba") for dep in project["dependencies"])
