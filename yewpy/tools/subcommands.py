"""The ``yewpy`` command's subcommands: the search apps of the ``yewpy.apps`` entry-point group
(the bundled apps register there too, in yewpy's own package metadata) and the tools.

An app is a module with ``configure(parser)`` (its input and its own flags),
``solve(args, **search_params) -> (Result, lines)`` and a docstring whose first line is its
help; another package adds one with ``[project.entry-points."yewpy.apps"] NAME = "module"``.
An optimisation app that sets ``BETTER_THAN = True`` also takes ``--better-than V`` (the search's
``initial_bound``); its ``solve`` then meets results with no solution: none is better than V.
"""

from __future__ import annotations

import importlib
from importlib.metadata import entry_points
from types import ModuleType

from yewpy.errors import UsageError

#: The entry-point group of search apps.
GROUP = "yewpy.apps"

#: Subcommands that are not searches: name -> module with configure(parser) and run(args) -> exit status.
TOOLS: dict[str, str] = {"report": "yewpy.tools.report", "scaling": "yewpy.tools.scaling"}


def app_names() -> list[str]:
    """Every installed app's subcommand name, bundled and plugged in, sorted."""
    return sorted({point.name for point in entry_points(group=GROUP)} - set(TOOLS))


def load_app(name: str) -> ModuleType:
    """The module of app ``name``; a plugin that does not import is a usage error naming it."""
    points = [p for p in entry_points(group=GROUP) if p.name == name]
    if not points:
        raise UsageError(f"unknown app {name!r}: choose one of {', '.join(app_names())}")
    point = points[0]
    try:
        module = importlib.import_module(point.value)
    except Exception as exc:
        raise UsageError(f"the app {name!r} ({point.value}) does not load: {type(exc).__name__}: {exc}"
                         ) from exc
    for need in ("configure", "solve"):
        if not callable(getattr(module, need, None)):
            raise UsageError(f"the app {name!r} ({point.value}) has no {need}() function")
    return module


def plain(text: str | None) -> str:
    """A docstring as help text: without the reStructuredText ``literal`` markup."""
    return (text or "").replace("``", "")
