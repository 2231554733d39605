"""Search profiles (``--profile FILE``): how long each task ran, where the tree was cut, who idled.

Each rank keeps a :class:`Profile`: every task's run time and nodes, and its idle spells.  At the
end rank 0 writes them with the per-depth and per-rank metrics as one JSON file, which
``yewpy report`` draws.  Recording costs two clock reads per task and per idle spell.
"""

from __future__ import annotations

import json
import time
from array import array
from pathlib import Path
from typing import Any

from yewpy.errors import InputError
from yewpy.operations.atomic import write_atomic

MAX_TASKS = 1_000_000       # per rank; later tasks are only counted, to bound memory
FORMAT = "yewpy-profile 1"


class Profile:
    """One rank's record; the drive loop calls ``begin``/``end`` around tasks, the runtime
    ``idle_begin``/``idle_end`` around idle spells."""

    def __init__(self, start: float) -> None:
        self.start = start
        self.task_seconds = array("d")
        self.task_nodes = array("q")
        self.unrecorded = 0
        self.idle: list[list[float]] = []
        self._began = 0.0
        self._nodes = 0

    def begin(self, engine: Any) -> None:
        self._began, self._nodes = time.perf_counter(), engine.nodes

    def end(self, engine: Any) -> None:
        if len(self.task_seconds) < MAX_TASKS:
            self.task_seconds.append(time.perf_counter() - self._began)
            self.task_nodes.append(engine.nodes - self._nodes)
        else:
            self.unrecorded += 1

    def idle_begin(self) -> None:
        self.idle.append([time.perf_counter() - self.start, -1.0])

    def idle_end(self) -> None:
        self.idle[-1][1] = time.perf_counter() - self.start

    def record(self) -> dict:
        """This rank's part, picklable and JSON-ready."""
        return {"task_seconds": list(self.task_seconds), "task_nodes": list(self.task_nodes),
                "tasks_unrecorded": self.unrecorded, "idle": self.idle,
                "seconds": time.perf_counter() - self.start}


def write(path: str | Path, records: list[dict], per_rank: list[dict], depth: dict, about: dict) -> None:
    """The whole job's profile as one JSON file (atomically)."""
    rows = [{**row, **record} for record, row in zip(records, per_rank)]
    doc = {"format": FORMAT, **about, "depth": depth, "per_rank": rows}
    write_atomic(path, json.dumps(doc, default=str).encode())


def read(path: str | Path) -> dict:
    """A profile written by ``write``; InputError if it is not one."""
    try:
        text = Path(path).read_text()
    except OSError as exc:
        raise InputError(path, None, f"cannot read profile: {exc.strerror or exc}") from None
    try:
        doc = json.loads(text)
    except ValueError as exc:
        raise InputError(path, getattr(exc, "lineno", 1), f"not a yewpy profile: {exc}") from None
    if not isinstance(doc, dict) or doc.get("format") != FORMAT:
        raise InputError(path, 1, f"not a yewpy profile (no \"format\": \"{FORMAT}\")")
    return doc
