"""Unbalanced Tree Search (enumeration, compiled): count the nodes of a UTS tree.

Trees are defined by UTS's parameters (tree type, root branching factor, seed, ...) and the
SHA-1 splittable generator, so the counts match the UTS benchmark's exactly; the search also
counts leaves and the maximum depth.

>>> r = UTS(tree_type="binomial", b0=20, q=0.2, m=4, seed=7).search()
>>> r.value, r.metrics["leaves"], r.metrics["depth"]
(109, 86, 8)
"""

from __future__ import annotations

import argparse
import shlex
from typing import Any

from yewpy.apps._uts import BALANCED, BIN, CYCLIC, EXPDEC, FIXED, GEO, HYBRID, LINEAR, UTSCore
from yewpy.apps.input_numbers import ascii_digits
from yewpy.errors import UsageError
from yewpy.result import Result

__all__ = ["NAMED_TREES", "UTS", "parse_uts_params"]

TREE_TYPES = {"binomial": BIN, "bin": BIN, "geometric": GEO, "geo": GEO, "hybrid": HYBRID,
              "balanced": BALANCED}
TREE_NAMES = {BIN: "binomial", GEO: "geometric", HYBRID: "hybrid", BALANCED: "balanced"}
SHAPES = {"linear": LINEAR, "expdec": EXPDEC, "cyclic": CYCLIC, "fixed": FIXED}
SHAPE_NAMES = {v: k for k, v in SHAPES.items()}

# The sample trees of UTS's sample_trees.sh, in UTS's own flags (shared/instances/uts/README.md).
NAMED_TREES = {
    "T1": "-t 1 -a 3 -d 10 -b 4 -r 19",
    "T5": "-t 1 -a 0 -d 20 -b 4 -r 34",
    "T2": "-t 1 -a 2 -d 16 -b 6 -r 502",
    "T3": "-t 0 -b 2000 -q 0.124875 -m 8 -r 42",
    "T4": "-t 2 -a 0 -d 16 -b 6 -r 1 -q 0.234375 -m 4",
    "T1L": "-t 1 -a 3 -d 13 -b 4 -r 29",
    "T2L": "-t 1 -a 2 -d 23 -b 7 -r 220",
    "T3L": "-t 0 -b 2000 -q 0.200014 -m 5 -r 7",
    "T1XL": "-t 1 -a 3 -d 15 -b 4 -r 29",
    "T1XXL": "-t 1 -a 3 -d 15 -b 4 -r 19",
    "T3XXL": "-t 0 -b 2000 -q 0.499995 -m 2 -r 316",
    "T2XXL": "-t 0 -b 2000 -q 0.499999995 -m 2 -r 0",
    "T1WL": "-t 1 -a 3 -d 18 -b 4 -r 19",
    "T2WL": "-t 0 -b 2000 -q 0.4999999995 -m 2 -r 559",
    "T3WL": "-t 0 -b 2000 -q 0.4999995 -m 2 -r 559",
}

# UTS flag -> (UTS keyword, parser)
_FLAGS = {"t": ("tree_type", int), "a": ("shape", int), "d": ("gen_mx", int), "b": ("b0", float),
          "r": ("seed", int), "q": ("q", float), "m": ("m", int), "f": ("shift", float)}


def parse_uts_params(text: str) -> dict:
    """UTS command-line parameters (``"-t 1 -a 3 -d 10 -b 4 -r 19"``) as ``UTS`` keywords."""
    words = shlex.split(text)
    if len(words) % 2:
        raise UsageError(f"UTS parameters come in '-X value' pairs: {text!r}")
    out: dict[str, Any] = {}
    for flag, value in zip(words[::2], words[1::2]):
        if len(flag) != 2 or flag[0] != "-" or flag[1] not in _FLAGS:
            raise UsageError(f"unknown UTS parameter {flag!r} (known: -t -a -d -b -r -q -m -f)")
        key, kind = _FLAGS[flag[1]]
        try:
            out[key] = kind(value)
        except ValueError:
            raise UsageError(f"UTS parameter {flag} needs a number, got {value!r}") from None
    return out


def _code(value: int | str, names: dict, what: str) -> int:
    if isinstance(value, str):
        key = value.strip().lower()
        if ascii_digits(key.lstrip("-")):
            value = int(key)
        elif key in names:
            return names[key]
        else:
            raise UsageError(f"unknown {what} {value!r} (0..3 or one of {', '.join(names)})")
    if value not in range(4):
        raise UsageError(f"{what} must be 0..3 (UTS numbering), got {value}")
    return int(value)


class UTS:
    """One UTS tree. ``tree_type`` and ``shape`` take UTS's numbers (``-t``, ``-a``) or names.

    Defaults are UTS's: geometric, linear shape, b0 = 4, gen_mx = 6, q = 15/64, m = 4,
    seed 0, hybrid shift fraction 0.5.
    """

    def __init__(self, tree_type: int | str = GEO, b0: float = 4.0, gen_mx: int = 6,
                 shape: int | str = LINEAR, q: float = 15.0 / 64.0, m: int = 4, seed: int = 0,
                 shift: float = 0.5, name: str | None = None) -> None:
        self.tree_type = _code(tree_type, TREE_TYPES, "tree type")
        self.shape = _code(shape, SHAPES, "geometric shape")
        self.b0, self.gen_mx, self.q, self.m, self.seed, self.shift = b0, gen_mx, q, m, seed, shift
        self.name = name
        if not -2**31 <= seed < 2**31:
            raise UsageError(f"the root seed must fit in 32 bits, got {seed}")
        for flag, value in (("-d (gen_mx)", gen_mx), ("-m", m)):
            if not -2**31 <= value < 2**31:
                raise UsageError(f"UTS parameter {flag} must fit in 32 bits, got {value}")
        try:
            self.core()
        except (ValueError, TypeError) as exc:
            raise UsageError(str(exc)) from None

    @classmethod
    def named(cls, name: str) -> UTS:
        """One of UTS's sample trees (T1 ... T3WL, see ``NAMED_TREES``)."""
        key = next((k for k in NAMED_TREES if k.lower() == name.lower()), None)
        if key is None:
            raise UsageError(f"unknown tree {name!r} (known: {', '.join(NAMED_TREES)})")
        return cls(**parse_uts_params(NAMED_TREES[key]), name=key)

    def params(self) -> str:
        """The tree in UTS's flags."""
        text = f"-t {self.tree_type} -b {self.b0:g} -r {self.seed}"
        if self.tree_type != BIN:
            text += f" -d {self.gen_mx}"
        if self.tree_type in (GEO, HYBRID):
            text += f" -a {self.shape}"
        if self.tree_type in (BIN, HYBRID):
            text += f" -q {self.q:g} -m {self.m}"
        if self.tree_type == HYBRID:
            text += f" -f {self.shift:g}"
        return text

    def describe(self) -> str:
        kind = TREE_NAMES[self.tree_type]
        if self.tree_type in (GEO, HYBRID):
            kind += f" ({SHAPE_NAMES[self.shape]})"
        return f"{self.name + ' ' if self.name else ''}{kind}: {self.params()}"

    def core(self) -> UTSCore:
        return UTSCore(self.tree_type, self.b0, self.gen_mx, self.shape, self.q, self.m, self.seed,
                       self.shift)

    def search(self, coordination: Any = "seq", **params: Any) -> Result:
        """Count the nodes (``value``); ``metrics`` also gets ``leaves`` and ``depth`` (max height)."""
        result = self.core().search(coordination, **params)
        result.metrics["leaves"] = result.metrics["counters"]["leaves"]
        result.metrics["depth"] = len(result.metrics["nodes"]) - 1
        return result


def configure(parser: argparse.ArgumentParser) -> None:
    g = parser.add_argument_group("tree (UTS numbering; UTS defaults)")
    g.add_argument("--tree", metavar="NAME", help=f"a UTS sample tree: {', '.join(NAMED_TREES)}")
    g.add_argument("--uts-t", metavar="T",
                   help="tree type: 0 binomial, 1 geometric (default), 2 hybrid, 3 balanced (or a name)")
    g.add_argument("--uts-a", metavar="A",
                   help="geometric shape: 0 linear (default), 1 expdec, 2 cyclic, 3 fixed (or a name)")
    g.add_argument("--uts-d", type=int, metavar="D", help="gen_mx: geometric / balanced depth (default 6)")
    g.add_argument("--uts-b", type=float, metavar="B", help="root branching factor (default 4)")
    g.add_argument("--uts-r", type=int, metavar="R", help="root seed (default 0)")
    g.add_argument("--uts-q", type=float, metavar="Q", help="binomial: P(children) (default 15/64)")
    g.add_argument("--uts-m", type=int, metavar="M", help="binomial: number of children (default 4)")
    g.add_argument("--uts-f", type=float, metavar="F", help="hybrid: geometric above F*gen_mx (default 0.5)")


_CLI = {"uts_t": "tree_type", "uts_a": "shape", "uts_d": "gen_mx", "uts_b": "b0", "uts_r": "seed",
        "uts_q": "q", "uts_m": "m", "uts_f": "shift"}


def from_args(args: argparse.Namespace) -> UTS:
    """The tree the command-line flags ask for."""
    given = {key: getattr(args, flag) for flag, key in _CLI.items() if getattr(args, flag) is not None}
    if args.tree is not None:
        if given:
            raise UsageError("--tree names a whole tree; give either --tree or --uts-* flags")
        return UTS.named(args.tree)
    return UTS(**given)


def solve(args: argparse.Namespace, **params: Any) -> tuple[Result, list[str]]:
    tree = from_args(args)
    result = tree.search(**params)
    return result, [f"Tree: {tree.describe()}", f"Total Nodes: {result.value}",
                    f"Leaves: {result.metrics['leaves']}", f"Max depth: {result.metrics['depth']}"]
