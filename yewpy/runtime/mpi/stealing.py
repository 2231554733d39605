"""Stealing: an idle rank asks a victim (STEAL), which answers with tasks (WORK) or none (NOWORK)."""

from __future__ import annotations

import os
import random
import time
from typing import Any

from yewpy._engine import Engine
from yewpy.runtime import taskpack
from yewpy.runtime.interfaces import Pool
from yewpy.runtime.mpi.doorbells import Doorbells
from yewpy.runtime.mpi.link import Link
from yewpy.runtime.mpi.tags import NOWORK, STEAL, WORK
from yewpy.runtime.share import give

# after log2 P + 1 failed steals, wait, doubling (YEWPY_BACKOFF_CAP overrides the cap, for experiments)
BACKOFF_START, BACKOFF_CAP = 100e-6, float(os.environ.get("YEWPY_BACKOFF_CAP") or 0.02)


class Victims:
    """Whom an idle rank asks for work: the last rank that gave some, else a random rank on its
    own node, and after a sweep of its node without success, a random remote rank."""

    def __init__(self, rank: int, size: int, local: list[int]) -> None:
        self.rng = random.Random(rank * 7919 + 1)
        self.local = [r for r in local if r != rank]
        local_set = set(local)
        self.remote = [r for r in range(size) if r not in local_set]
        self.last: int | None = None
        self.failures = 0               # consecutive failed steals

    def choose(self) -> int:
        if self.last is not None:
            return self.last
        if self.local and (not self.remote or self.failures < len(self.local)):
            return self.rng.choice(self.local)
        return self.rng.choice(self.remote or self.local)

    def won(self, victim: int) -> None:
        self.last, self.failures = victim, 0

    def lost(self) -> None:
        self.last = None
        self.failures += 1


class Stealing(Link):
    """The thief's and the victim's sides; work moves only outside a checkpoint epoch. With a
    low-water mark, a busy rank asks too, once its pool holds fewer tasks (steal ahead)."""

    victims: Victims
    steal_mode: str
    epoch: int | None
    bells: Doorbells | None

    def init_stealing(self, local: list[int], steal: str, low_water: int = 0) -> None:
        self.victims = Victims(self.rank, self.size, local)
        self.steal_mode = steal
        self.low_water = low_water          # steal ahead: a busy rank asks below this many tasks
        self.free_tries = self.size.bit_length()     # failed steals before backing off: log2 P + 1
        self.waiting = False                # a steal request of ours is unanswered
        self.asked = 0.0                    # when it was sent
        self.next_try = 0.0                 # no request before this (the back-off)
        self.work_sent = self.work_received = 0     # counted by the termination waves

    def ask(self, now: float) -> bool:
        """Send a steal request if none is unanswered, no checkpoint is under way and the back-off
        allows; true if one went out."""
        if self.waiting or self.epoch is not None or now < self.next_try:
            return False
        self.waiting, self.asked = True, now
        self.stats["steals_sent"] += 1
        victim = self.victims.choose()
        self.send(victim, STEAL)
        if self.bells is not None:
            self.bells.ring(victim)         # after the send: the victim's next read finds it
        return True

    def on_steal(self, engine: Engine, pool: Pool, busy: bool, source: int, payload: None) -> None:
        """Only a busy rank gives work: an idle one would hand straight back a task it has just
        stolen, and two idle ranks could pass it to and fro forever."""
        if self.stop_reason is not None:
            return                          # the thief hears STOP too; a reply could outlive us
        tasks = give(engine, pool, self.steal_mode) if busy and self.epoch is None else []
        if tasks:
            self.work_sent += 1
            self.stats["tasks_given"] += len(tasks)
            self.stats["steals_served"] += 1
            self.send(source, WORK, taskpack.pack(tasks))
        else:
            self.send(source, NOWORK)

    def on_work(self, engine: Engine, pool: Pool, busy: bool, source: int, payload: bytes) -> None:
        self.work_received += 1
        self.answered()
        tasks = taskpack.unpack(payload)
        pool.extend(tasks)                  # kept after a stop too: a final checkpoint saves it
        if self.stop_reason is None:
            self.stats["tasks_received"] += len(tasks)
            self.stats["steals_won"] += 1
            self.victims.won(source)

    def on_nowork(self, engine: Engine, pool: Pool, busy: bool, source: int, payload: None) -> None:
        self.answered()
        self.victims.lost()
        over = self.victims.failures - self.free_tries
        if over >= 0:
            self.next_try = time.perf_counter() + min(BACKOFF_START * 2 ** min(over, 30), BACKOFF_CAP)

    def answered(self) -> None:
        """Our steal request is answered: note how long the answer took (the steal latency)."""
        self.waiting = False
        wait = time.perf_counter() - self.asked
        self.stats["steal_wait_seconds"] += wait
        self.stats["steal_wait_max"] = max(self.stats["steal_wait_max"], wait)

    TAGS: dict[int, Any] = {STEAL: on_steal, WORK: on_work, NOWORK: on_nowork}
