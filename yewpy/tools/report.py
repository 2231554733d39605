"""``yewpy report FILE --out DIR``: draw a search profile (task run times, per-rank load, timeline).

The task run-time histogram shows how regular the search is (a few huge tasks starve the
ranks); the load chart shows how evenly nodes and busy time were spread; the timeline shows
when each rank was busy or idle; the depth chart shows where nodes, backtracks and prunes are.
"""

from __future__ import annotations

import argparse
import statistics
from pathlib import Path

from yewpy.operations import profile
from yewpy.tools.plotting import pyplot

FIGURES = ("task_times.png", "load.png", "timeline.png", "depth.png")


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("file", help="a profile written with --profile FILE")
    parser.add_argument("--out", default=".", help="folder for the PNG files (default: here)")


def run(args: argparse.Namespace) -> int:
    doc = profile.read(args.file)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    for line in summary(doc):
        print(line)
    for name in draw(doc, out):
        print(f"wrote {name}")
    return 0


def summary(doc: dict) -> list[str]:
    """Plain-text figures: task time spread, each rank's share of nodes and its idle fraction."""
    times = [t for row in doc["per_rank"] for t in row["task_seconds"]]
    lines = [f"{doc['problem']} ({doc['kind']}), {doc['coordination']}, {doc['ranks']} rank(s): "
             f"{doc['nodes']:,} nodes in {doc['seconds']:.3f} s, {doc['status']}"]
    if times:
        mean = statistics.mean(times)
        cv = statistics.pstdev(times) / mean if mean > 0 else 0.0
        lines.append(f"tasks {len(times):,}: median {statistics.median(times) * 1e3:.3f} ms, "
                     f"max {max(times) * 1e3:.3f} ms, coefficient of variation {cv:.2f}")
    total = max(1, sum(row["nodes"] for row in doc["per_rank"]))
    for row in doc["per_rank"]:
        idle = row["idle_seconds"] / max(row["seconds"], 1e-9)
        lines.append(f"rank {row['rank']}: {row['nodes'] / total:6.1%} of nodes, {idle:6.1%} idle, "
                     f"{row['steals_succeeded']} steals won of {row['steals_attempted']}")
    return lines


def draw(doc: dict, out: Path) -> list[Path]:
    """Write the four PNG figures; returns their paths."""
    plt = pyplot()
    rows = doc["per_rank"]
    ranks = [row["rank"] for row in rows]
    paths = [out / name for name in FIGURES]

    fig, ax = plt.subplots(figsize=(7, 4))
    times = [t for row in rows for t in row["task_seconds"] if t > 0]
    if times:
        low, high = min(times), max(times)
        bins = [low * (high / low) ** (i / 40) for i in range(41)] if high > low else 20
        ax.hist(times, bins=bins)
        if high > low:
            ax.set_xscale("log")
    ax.set(xlabel="task run time (s)", ylabel="tasks", title=f"Task run times ({len(times):,} tasks)")
    fig.tight_layout()
    fig.savefig(paths[0], dpi=100)
    plt.close(fig)

    fig, (left, right) = plt.subplots(1, 2, figsize=(9, 4))
    left.bar(ranks, [row["nodes"] for row in rows])
    left.set(xlabel="rank", ylabel="nodes", title="Nodes per rank")
    busy = [row["busy_seconds"] for row in rows]
    right.bar(ranks, busy, label="busy")
    right.bar(ranks, [row["idle_seconds"] for row in rows], bottom=busy, label="idle")
    right.set(xlabel="rank", ylabel="seconds", title="Busy and idle time")
    right.legend()
    fig.tight_layout()
    fig.savefig(paths[1], dpi=100)
    plt.close(fig)

    fig, ax = plt.subplots(figsize=(9, 1 + 0.5 * len(rows)))
    for row in rows:
        end = row["seconds"]
        ax.broken_barh([(0, end)], (row["rank"] - 0.4, 0.8), color="tab:green")
        spells = [(a, (b if b >= 0 else end) - a) for a, b in row["idle"]]
        ax.broken_barh(spells, (row["rank"] - 0.4, 0.8), color="tab:red")
    ax.set(xlabel="seconds since start (green busy, red idle)", ylabel="rank", yticks=ranks,
           title="Rank timeline")
    fig.tight_layout()
    fig.savefig(paths[2], dpi=100)
    plt.close(fig)

    fig, ax = plt.subplots(figsize=(7, 4))
    for key in ("nodes", "backtracks", "prunes"):
        values = doc["depth"][key]
        if any(values):
            ax.plot(range(len(values)), values, marker=".", label=key)
    ax.set_yscale("symlog")
    ax.set(xlabel="depth", ylabel="count", title="Per-depth counts")
    ax.legend()
    fig.tight_layout()
    fig.savefig(paths[3], dpi=100)
    plt.close(fig)
    return paths
