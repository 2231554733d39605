"""The ``yewpy`` command's coordination flags, built from the registered coordinations.

Each coordination declares its parameters with ``skeletons.coordination.option`` (flags, help,
range, choices); ``--skeleton`` offers every registered name, each parameter becomes one flag
whose help names the coordinations that take it, and a flag given to a coordination without
that parameter is an error that says which ones take it.  A plugin's coordination gets its
flags the same way.
"""

from __future__ import annotations

import argparse
import dataclasses
import warnings
from typing import Any

from yewpy.errors import UsageError
from yewpy.skeletons import registry


@dataclasses.dataclass
class Flag:
    """One coordination parameter as a flag: its strings, help, type and the coordinations that take it."""

    dest: str
    strings: tuple
    help: str
    default: Any
    choices: tuple | None
    metavar: str | None
    owners: list = dataclasses.field(default_factory=list)

    @property
    def shown(self) -> str:
        """``-d/--spawn-depth``: the short string, if any, and the first long one."""
        short = [s for s in self.strings if not s.startswith("--")]
        return "/".join(short[:1] + [next(s for s in self.strings if s.startswith("--"))])


def _fields(cls: Any) -> tuple[dataclasses.Field, ...]:
    """A coordination class's parameters (every bundled one is a dataclass; a plugin's may not be)."""
    return dataclasses.fields(cls) if dataclasses.is_dataclass(cls) else ()


def _flags() -> dict[str, Flag]:
    out: dict[str, Flag] = {}
    for name, cls in registry.classes().items():
        for f in _fields(cls):
            meta = f.metadata
            if "flags" not in meta:
                continue
            flag = out.get(f.name)
            if flag is None:
                strings = meta["flags"] or ("--" + f.name.replace("_", "-"),)
                flag = out[f.name] = Flag(f.name, strings, meta["help"], f.default, meta["choices"],
                                          meta["metavar"])
            flag.owners.append(name)
    return out


def _names(owners: list) -> str:
    return owners[0] if len(owners) == 1 else ", ".join(owners[:-1]) + " and " + owners[-1]


def flag_strings() -> set[str]:
    """Every string of every coordination flag (``-d``, ``--spawn-depth``, ``--poolType``, ...)."""
    return {string for flag in _flags().values() for string in flag.strings}


def add_flags(group: Any) -> None:
    """``--skeleton`` and every coordination parameter's flag, on an argparse group."""
    group.add_argument("--skeleton", default="seq", choices=list(registry.classes()),
                       help="coordination (default: seq)")
    for flag in _flags().values():
        kwargs: dict[str, Any] = {"dest": flag.dest, "help": f"{', '.join(flag.owners)}: {flag.help}"}
        if isinstance(flag.default, bool):
            kwargs["action"] = "store_true"
        else:
            kwargs["default"] = None
            if flag.choices is not None:
                kwargs["choices"] = list(flag.choices)
            else:
                kwargs["type"] = type(flag.default)
                kwargs["metavar"] = flag.metavar or flag.dest.split("_")[-1][0].upper()
        try:
            group.add_argument(*flag.strings, **kwargs)
        except argparse.ArgumentError as exc:
            raise UsageError(f"the coordination {flag.owners[-1]!r} declares a flag the command already "
                             f"has: {exc}") from None


def coordination_params(args: argparse.Namespace) -> dict:
    """``coordination`` and the parameters the flags give, checked against the chosen coordination."""
    cls = registry.lookup(args.skeleton)
    assert cls is not None                      # argparse keeps --skeleton to the registered names
    fields = {f.name: f for f in _fields(cls)}
    params: dict[str, Any] = {}
    for flag in _flags().values():
        value = getattr(args, flag.dest, None)
        if value is None or value is False:
            continue
        if flag.dest not in fields:
            why = getattr(cls, "why_not", {}).get(flag.dest)
            raise UsageError(f"{flag.shown} does not apply to {cls.name}: {why}" if why else
                             f"{flag.shown} applies to {_names(flag.owners)}, not {cls.name}")
        meta = fields[flag.dest].metadata
        low, high = meta.get("low"), meta.get("high")
        if (low is not None and value < low) or (high is not None and value > high):
            raise UsageError(f"{flag.shown} must be between {low} and {high}, got {value}")
        params[flag.dest] = value
    with warnings.catch_warnings():             # the search warns once, when it runs
        warnings.simplefilter("ignore")
        try:
            cls(**params)
        except (TypeError, ValueError) as exc:
            raise UsageError(str(exc)) from None
    return {"coordination": cls.name, **params}
