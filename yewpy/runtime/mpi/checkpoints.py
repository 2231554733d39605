"""Checkpoints: rank 0 opens an epoch down the tree (CHECKPOINT); each rank snapshots once no steal
of its own is unanswered and passes its subtree's parts up (PARTS); rank 0 writes the file and
ends the epoch (RESUME). No work moves during an epoch, so the parts form a consistent cut."""

from __future__ import annotations

from typing import Any

from yewpy._engine import Engine
from yewpy.runtime.interfaces import Pool
from yewpy.runtime.mpi.link import Link
from yewpy.runtime.mpi.tags import CHECKPOINT, PARTS, RESUME


class Checkpoints(Link):
    """The epoch under way, this rank's snapshot and the parts gathered from below."""

    waiting: bool

    def init_checkpoints(self) -> None:
        self.epochs = 0
        self.open_epoch(None)

    def begin_checkpoint(self) -> None:
        """Rank 0: open the next epoch everywhere."""
        self.epochs += 1
        self.open_epoch(self.epochs)
        self.down(CHECKPOINT, self.epoch)

    def open_epoch(self, epoch: int | None) -> None:
        """A checkpoint begins (or, with None, has ended): no work moves until it ends here."""
        self.epoch, self.snapped, self.passed_up = epoch, False, False
        self.parts: list = []
        self.parts_from: set[int] = set()

    def on_checkpoint(self, engine: Engine, pool: Pool, busy: bool, source: int, payload: int) -> None:
        self.open_epoch(payload)
        self.down(CHECKPOINT, payload)

    def on_parts(self, engine: Engine, pool: Pool, busy: bool, source: int, payload: tuple) -> None:
        epoch, parts = payload
        if epoch == self.epoch:
            self.parts.extend(parts)
            self.parts_from.add(source)

    def on_resume(self, engine: Engine, pool: Pool, busy: bool, source: int, payload: int) -> None:
        self.open_epoch(None)
        self.down(RESUME, payload)

    def checkpoint_step(self, engine: Engine, pool: Pool) -> None:
        """A consistent cut: snapshot once no steal of ours is unanswered (no work in flight to
        or from here), pass the subtree's parts up; rank 0 writes the file and sends RESUME."""
        if not self.snapped and not self.waiting:
            self.parts.append((self.rank, self.session.snapshot(engine, pool)))
            self.snapped = True
        if not self.snapped or self.passed_up or len(self.parts_from) < len(self.tree.children):
            return
        if self.rank != 0:
            self.send_up(PARTS, (self.epoch, self.parts))
            self.parts, self.passed_up = [], True
            return
        parts = [part for _, part in sorted(self.parts, key=lambda entry: entry[0])]
        self.session.write_checkpoint(parts, "running")
        self.down(RESUME, self.epoch)
        self.open_epoch(None)

    TAGS: dict[int, Any] = {CHECKPOINT: on_checkpoint, PARTS: on_parts, RESUME: on_resume}
