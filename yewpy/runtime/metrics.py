"""Per-rank search metrics: what each rank did, and a readable table of them."""

from __future__ import annotations

from typing import Any

COLUMNS = [("rank", "rank"), ("nodes", "nodes"), ("backtracks", "backtracks"), ("prunes", "prunes"),
           ("tasks", "tasks"), ("steals_succeeded", "steals ok"), ("steals_attempted", "steals tried"),
           ("tasks_given", "given"), ("busy_seconds", "busy s"), ("idle_seconds", "idle s"),
           ("messages_sent", "messages")]
# What the MPI transport also counts: messages sent by kind, termination waves, slices, and the
# wall-clock times (time.time()) of the rank's last idle start and of its return, and the time its
# steal requests waited for their answers (total and longest), and the reads of its messages that
# a thief's doorbell asked for, and the seconds of search its slices aimed at.
PROTOCOL = ("sent_steal", "sent_work", "sent_control", "waves", "polls", "slice_nodes_mean", "last_node",
            "returned", "steal_wait_seconds", "steal_wait_max", "doorbells_rung", "slice_target")


def rank_metrics(rank: int, part: dict, seconds: float, runtime: dict | None = None) -> dict:
    """One rank's row: its engine's totals plus what the MPI runtime counted."""
    runtime = runtime or {}
    idle = runtime.get("idle_seconds", 0.0)
    return {"rank": rank, "nodes": part["nodes"], "backtracks": sum(part["metrics"]["backtracks"]),
            "prunes": sum(part["metrics"]["prunes"]), "tasks": sum(part["metrics"]["spawns"]),
            "steals_attempted": runtime.get("steals_sent", 0),
            "steals_succeeded": runtime.get("steals_won", 0),
            "tasks_given": runtime.get("tasks_given", 0), "busy_seconds": max(0.0, seconds - idle),
            "idle_seconds": idle, "messages_sent": runtime.get("messages_sent", 0),
            **{key: runtime[key] for key in PROTOCOL if key in runtime}}


def table(per_rank: list[dict]) -> str:
    """The rows as an aligned text table with a total row."""
    total: dict[str, Any] = {key: sum(row[key] for row in per_rank) for key, _ in COLUMNS[1:]}
    total["rank"] = "all"
    rows = [*per_rank, total]

    def cell(key: str, value: Any) -> str:
        return f"{value:.3f}" if key.endswith("seconds") else str(value)

    widths = [max(len(title), *(len(cell(key, row[key])) for row in rows)) for key, title in COLUMNS]
    lines = ["  ".join(title.rjust(w) for (_, title), w in zip(COLUMNS, widths))]
    lines += ["  ".join(cell(key, row[key]).rjust(w) for (key, _), w in zip(COLUMNS, widths)) for row in rows]
    return "\n".join(lines)
