"""Termination: rank 0 sends waves down the tree (WAVE); idle ranks echo their subtree's count of
work messages sent and received (ECHO). Two waves with the same totals, sent = received, end the
search (Mattern's four-counter method)."""

from __future__ import annotations

from typing import Any

from yewpy._engine import Engine
from yewpy.runtime.interfaces import Pool
from yewpy.runtime.mpi.link import Link
from yewpy.runtime.mpi.tags import ECHO, WAVE


class Termination(Link):
    """The wave this rank holds, its children's echoes, and rank 0's judgement."""

    work_sent: int
    work_received: int

    def init_termination(self) -> None:
        self.wave: int | None = None
        self.echoes: dict[int, tuple[int, int]] = {}
        self.last_totals: tuple[int, int] | None = None

    def on_wave(self, engine: Engine, pool: Pool, busy: bool, source: int, payload: int) -> None:
        self.wave, self.echoes = payload, {}
        self.down(WAVE, payload)

    def on_echo(self, engine: Engine, pool: Pool, busy: bool, source: int, payload: tuple) -> None:
        wave, sent, received = payload
        if wave == self.wave:
            self.echoes[source] = (sent, received)

    def terminate_step(self) -> None:
        """While idle: answer the wave held once every child has; rank 0 also judges and starts waves."""
        tree = self.tree
        if self.rank != 0 and self.wave is None:
            return
        if self.wave is not None and len(self.echoes) < len(tree.children):
            return
        sent = self.work_sent + sum(s for s, _ in self.echoes.values())
        received = self.work_received + sum(r for _, r in self.echoes.values())
        if self.rank != 0:
            self.send_up(ECHO, (self.wave, sent, received))
            self.wave, self.echoes = None, {}
            return
        if self.wave is not None:
            totals = (sent, received)
            if sent == received and totals == self.last_totals:
                self.stop_everyone("done")
                return
            self.last_totals = totals
        self.stats["waves"] += 1            # rank 0 numbers its waves
        self.wave, self.echoes = self.stats["waves"], {}
        self.down(WAVE, self.wave)

    TAGS: dict[int, Any] = {WAVE: on_wave, ECHO: on_echo}
