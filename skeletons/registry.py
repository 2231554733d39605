"""Coordinations by name: a bundled one registers when its class is defined, another package's
through the ``yewpy.coordinations`` entry-point group (loaded the first time a name is looked up).

Nothing else keeps a list: ``search(coordination="NAME")``, the ``--skeleton`` choices and the
per-coordination flags of the ``yewpy`` command all come from here.
"""

from __future__ import annotations

from importlib.metadata import entry_points

from yewpy.errors import UsageError
from yewpy.runtime.interfaces import Coordination

CoordinationClass = type[Coordination]

#: The entry-point group another package names its coordinations in (``name = "module:Class"``).
GROUP = "yewpy.coordinations"

_classes: dict[str, CoordinationClass] = {}        # name -> class, in registration order
_aliases: dict[str, str] = {}
_plugins_loaded = False


def register(cls: CoordinationClass) -> CoordinationClass:
    """Make ``cls`` (a Coordination subclass with its own ``name``) known by that name."""
    for key in (cls.name, *getattr(cls, "aliases", ())):
        owner = _classes.get(_aliases.get(key, key))
        if owner is not None and owner.__qualname__ != cls.__qualname__:
            raise UsageError(f"two coordinations are named {key!r}: {owner.__module__}.{owner.__qualname__} "
                             f"and {cls.__module__}.{cls.__qualname__}")
    _classes[cls.name] = cls
    for alias in getattr(cls, "aliases", ()):
        _aliases[alias] = cls.name
    return cls


def _load_plugins() -> None:
    global _plugins_loaded
    if _plugins_loaded:
        return
    _plugins_loaded = True
    for point in entry_points(group=GROUP):
        try:
            cls = point.load()          # importing the module registers the class
        except Exception as exc:
            raise UsageError(f"the coordination plugin {point.name!r} ({point.value}) does not load: "
                             f"{type(exc).__name__}: {exc}") from exc
        if getattr(cls, "name", None) not in _classes:
            raise UsageError(f"the coordination plugin {point.name!r} ({point.value}) is not a "
                             "yewpy Coordination subclass with a name of its own")


def classes() -> dict[str, CoordinationClass]:
    """Every coordination, by name (aliases left out), bundled ones first."""
    _load_plugins()
    return dict(_classes)


def lookup(name: str) -> CoordinationClass | None:
    """The coordination called ``name`` (or one of its aliases), or None."""
    _load_plugins()
    return _classes.get(_aliases.get(name, name))
