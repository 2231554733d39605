"""The ``shallow`` coordination: every node shallower than ``levels`` spawns its children as tasks.

A coordination from another package: a frozen dataclass subclass of ``yewpy.Coordination`` with
a ``name`` of its own registers itself, and each parameter declared with ``option`` is a flag of
the ``yewpy`` command.
"""

from __future__ import annotations

from dataclasses import dataclass

from yewpy import Coordination, option


@dataclass(frozen=True)
class Shallow(Coordination):
    """Spawn the children of every node above depth ``levels``; search the rest depth-first."""

    levels: int = option(2, "--levels", low=1, high=64, help="spawn the nodes above this depth")
    name = "shallow"

    def engine_options(self) -> dict:
        return {"spawn_depth": self.levels}
