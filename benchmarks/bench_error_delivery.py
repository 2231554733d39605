"""How often a failing rank's message reaches the user: a planted exception, many runs.

Runs a small script under ``mpiexec -n RANKS`` whose rank ``RANKS - 1`` raises inside a child
generator during a stacksteal search, and counts the runs whose stderr holds the planted message
(and that exit nonzero, within the timeout).  Issue 11 measured 16 lost of 830 before the
failing rank waited ``ABORT_GRACE`` before MPI_Abort.

    python benchmarks/bench_error_delivery.py --runs 200 --ranks 2
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
import textwrap
import time
from pathlib import Path

from bench_mpi_speedup import tool

SCRIPT = textwrap.dedent("""
    import os
    import yewpy

    class Wide(yewpy.Enumeration):
        def root(self):
            return 0
        def children(self, node):
            if node >= 2 and os.environ.get("PMI_RANK") == os.environ.get("FAILING"):
                raise ValueError("planted on the last rank")
            if node < 7:
                for _ in range(7):
                    yield node + 1

    Wide().search("stacksteal")
""")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=200)
    parser.add_argument("--ranks", type=int, default=2)
    opts = parser.parse_args(argv)
    folder = Path(tempfile.mkdtemp())
    (folder / "wide.py").write_text(SCRIPT)
    shown = slow = 0
    longest = 0.0
    env = {"FAILING": str(opts.ranks - 1), "PATH": "/usr/bin:/bin"}
    for _ in range(opts.runs):
        start = time.perf_counter()
        command = [tool("mpiexec"), "-n", str(opts.ranks), sys.executable, str(folder / "wide.py")]
        out = subprocess.run(command, capture_output=True, text=True, timeout=60, env=env)
        took = time.perf_counter() - start
        longest = max(longest, took)
        shown += out.returncode != 0 and "planted on the last rank" in out.stderr
        slow += took > 10
    print(f"{opts.ranks} ranks: message shown in {shown} of {opts.runs} runs; {slow} took over 10 s; "
          f"longest {longest:.2f} s")
    return 0 if shown == opts.runs else 1


if __name__ == "__main__":
    raise SystemExit(main())
