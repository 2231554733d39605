"""The MPI protocol at growing rank counts, oversubscribed on this machine, on one small tree.

For P = 2, 4, ..., 64 ranks (all on this machine's cores) the script runs ``yewpy nqueens 12``
(856,189 nodes, about 0.1 s on one rank) and reports the medians over the repeats of: messages
sent per rank by kind (steal: STEAL and NOWORK; work: WORK; control: everything else, i.e.
incumbents, STOP, termination waves, checkpoints, progress), termination waves, termination
latency (the last rank's last node to the last rank's return), steal latency (mean, a request to
its answer, seen by the thief) and search seconds (from the moment every rank has joined).
Control messages per rank should grow no faster than log P.

    python benchmarks/bench_protocol.py --repeat 3
    python benchmarks/bench_protocol.py --ranks 2 4 8 --args nqueens 11 --steal one
"""

from __future__ import annotations

import argparse
import json
import math
import statistics
import subprocess

from bench_mpi_speedup import tool


def run(ranks: int, args: list[str]) -> dict:
    out = subprocess.run([tool("mpiexec"), "-n", str(ranks), tool("yewpy"), *args, "--json", "--quiet"],
                         capture_output=True, text=True, check=True)
    return json.loads(out.stdout)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--ranks", type=int, nargs="*", default=[1, 2, 4, 8, 16, 32, 64])
    parser.add_argument("--args", nargs="*", default=["nqueens", "12", "--skeleton", "stacksteal"])
    parser.add_argument("--steal", default=None, help="half, level or one (default: the CLI's)")
    opts = parser.parse_args(argv)
    args = opts.args + (["--steal", opts.steal] if opts.steal else [])
    print(f"# yewpy {' '.join(args)}; medians of {opts.repeat}")
    print(f"{'P':>3} {'log2 P':>6} {'steal/rank':>10} {'work/rank':>9} {'control/rank':>12} "
          f"{'ctl/log2P':>9} {'waves':>5} {'term ms':>8} {'steal us':>8} {'search s':>8}  answer")
    for ranks in opts.ranks:
        rows = [run(ranks, args) for _ in range(opts.repeat)]
        answer = {str(r.get("value", r.get("objective"))) for r in rows}
        seconds = statistics.median(r["seconds"] for r in rows)
        if ranks == 1:
            print(f"{1:>3} {0:>6} {'':>10} {'':>9} {'':>12} {'':>9} {'':>5} {'':>8} {'':>8} {seconds:8.3f}  "
                  f"{','.join(answer)}", flush=True)
            continue
        protocol = [r["metrics"]["protocol"] for r in rows]
        median = {key: statistics.median(p[key] for p in protocol) for key in protocol[0]}
        log = math.log2(ranks)
        print(f"{ranks:>3} {log:6.1f} {median['steal_per_rank']:10.1f} {median['work_per_rank']:9.2f} "
              f"{median['control_per_rank']:12.1f} {median['control_per_rank'] / log:9.2f} "
              f"{median['waves']:5.0f} {1000 * median['termination_seconds']:8.1f} "
              f"{1e6 * median['steal_latency_mean']:8.0f} {seconds:8.3f}  "
              f"{','.join(answer)}", flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
