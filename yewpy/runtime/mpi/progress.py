"""Progress: every ``progress_every`` seconds each rank sends its subtree's totals and tree-size
estimates up the tree (PROGRESS); rank 0 prints them."""

from __future__ import annotations

import time
from typing import Any

from yewpy._engine import Engine
from yewpy.operations.treesize import merge_left, merge_rows
from yewpy.runtime.interfaces import Pool
from yewpy.runtime.mpi.link import Link
from yewpy.runtime.mpi.tags import PROGRESS


class Progress(Link):
    """Each child's latest subtree report and when this rank reports next."""

    def init_progress(self) -> None:
        self.reports: dict[int, tuple] = {}
        self.next_report = float("inf")     # set by ``load`` once every rank has joined

    def on_progress(self, engine: Engine, pool: Pool, busy: bool, source: int, payload: tuple) -> None:
        self.reports[source] = payload

    def report(self, engine: Engine, pool: Pool, now: float, busy: bool) -> None:
        """Send this subtree's totals (nodes, steals, idle ranks, ranks) and probes up; rank 0
        prints them."""
        session = self.session
        assert session.progress_every is not None     # else next_report stays inf
        row, left = session.sample(engine, pool, now)
        self.next_report = time.perf_counter() + session.progress_every   # after the probes
        totals = [engine.nodes, self.stats["steals_won"], 0 if busy else 1, 1]
        for child, child_row, child_left in self.reports.values():
            totals = [a + b for a, b in zip(totals, child)]
            row = merge_rows(row, child_row, session.core.sign)
            left = merge_left(left, child_left, session.core.sign)
        if self.rank == 0:            # open work is only known once every rank has reported
            session.print_progress(now, totals[0], engine.incumbent, totals[1], totals[2], row,
                                   left if totals[3] == session.size else None)
        else:
            self.send_up(PROGRESS, (tuple(totals), row, left))

    TAGS: dict[int, Any] = {PROGRESS: on_progress}
