"""0/1 knapsack (optimisation, compiled): profit-density order and the Dantzig bound.

>>> r = Knapsack([60, 100, 120], [10, 20, 30], 50).search()
>>> r.objective, r.solution
(220, [1, 2])
"""

from __future__ import annotations

import argparse
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from yewpy.apps._knapsack import KnapsackCore
from yewpy.apps.input_files import read_text
from yewpy.apps.input_numbers import parse_float, parse_int
from yewpy.errors import InputError
from yewpy.result import Result

__all__ = ["Knapsack", "KnapsackInstance", "density_order", "read_knapsack"]


@dataclass
class KnapsackInstance:
    """Items (profits, weights), the capacity and, when the file gives it, the optimum."""

    profits: list
    weights: list
    capacity: float
    optimum: float | None = None
    name: str = ""


#: the app takes ``--better-than V``: the search then proves no packing's profit exceeds V, or finds one
BETTER_THAN = True

EXACT = 2 ** 53     # the engine compares objectives (and the compiled core adds weights) as doubles


def _number(path: str, lineno: int, word: str) -> Any:
    """An integer when the word is one (exact), else a finite decimal number."""
    try:
        return parse_int(word)
    except ValueError:
        try:
            return parse_float(word)
        except ValueError:
            raise InputError(path, lineno, f"expected a finite decimal number, got {word!r}") from None


def _numbered_lines(path: str) -> list[tuple[int, list[str]]]:
    text = read_text(path)
    return [(k, line.split()) for k, line in enumerate(text.splitlines(), 1) if line.strip()]


def _pairs(path: str, lines: list, count: int | None) -> tuple[list, list]:
    profits, weights = [], []
    for lineno, words in lines if count is None else lines[:count]:
        if len(words) != 2:
            raise InputError(path, lineno, "expected 'profit weight'")
        profits.append(_number(path, lineno, words[0]))
        weights.append(_number(path, lineno, words[1]))
    if count is not None and len(profits) < count:
        last = lines[-1][0] if lines else 1
        raise InputError(path, last, f"expected {count} items, found {len(profits)}")
    return profits, weights


def _read_yewpar(path: str) -> KnapsackInstance:
    """YewPar's .kp: capacity, expected optimum, then one 'profit weight' per line."""
    lines = _numbered_lines(path)
    if len(lines) < 2:
        raise InputError(path, len(lines) + 1, "expected the capacity and the optimum lines")
    for lineno, words in lines[:2]:
        if len(words) != 1:
            raise InputError(path, lineno, "expected one number")
    capacity = _number(path, lines[0][0], lines[0][1][0])
    optimum = _number(path, lines[1][0], lines[1][1][0])
    profits, weights = _pairs(path, lines[2:], None)
    return KnapsackInstance(profits, weights, capacity, optimum, Path(path).stem)


def _read_counted(path: str) -> KnapsackInstance:
    """instances_01_KP: 'n capacity' (one or two lines), n 'profit weight' lines, maybe a 0/1 vector."""
    lines = _numbered_lines(path)
    head = [w for _, words in lines[:2] for w in words][:2]
    if len(head) < 2 or len(lines[0][1]) > 2 or (len(lines[0][1]) == 1 and len(lines[1][1]) != 1):
        raise InputError(path, lines[0][0] if lines else 1, "expected 'n capacity' (on one line, or n and "
                                                            "then the capacity alone on the next)")
    n = _number(path, lines[0][0], head[0])
    if not isinstance(n, int) or n < 0:
        raise InputError(path, lines[0][0], f"item count must be a non-negative integer, got {head[0]}")
    rest = lines[1:] if len(lines[0][1]) >= 2 else lines[2:]
    capacity = _number(path, lines[0][0] if len(lines[0][1]) >= 2 else lines[1][0], head[1])
    profits, weights = _pairs(path, rest, n)
    for lineno, words in rest[n:]:
        if len(words) != n or any(w not in ("0", "1") for w in words):
            raise InputError(path, lineno, "unexpected line after the items")
    return KnapsackInstance(profits, weights, capacity, _optimum_beside(path), Path(path).name)


def _optimum_beside(path: str) -> Any:
    """The optimum from ``FILE.opt`` when there is one (instances_01_KP ships them): one number."""
    opt_file = str(path) + ".opt"
    if not Path(opt_file).exists():
        return None
    lines = _numbered_lines(opt_file)
    if len(lines) != 1 or len(lines[0][1]) != 1:
        raise InputError(opt_file, lines[1][0] if len(lines) > 1 else 1, "expected one number, the optimum")
    return _number(opt_file, lines[0][0], lines[0][1][0])


def _read_pisinger(path: str, instance: str | None) -> KnapsackInstance:
    """Pisinger CSV: blocks of name, 'n N', 'c C', 'z Z', 'time T', 'i,p,w,x' lines, '-----'."""
    lines = _numbered_lines(path)
    blocks, current = [], []
    for lineno, words in lines:
        if words[0].startswith("-----"):
            if current:
                blocks.append(current)
            current = []
        else:
            current.append((lineno, words))
    if current:
        blocks.append(current)
    if not blocks:
        raise InputError(path, 1, "no instance in the file")
    chosen = blocks[0]
    if instance is not None:
        matches = [b for k, b in enumerate(blocks, 1) if b[0][1][0] == instance or str(k) == instance]
        if not matches:
            raise InputError(path, None, f"no instance named or numbered {instance!r}")
        chosen = matches[0]
    name = chosen[0][1][0]
    fields: dict = {}
    profits, weights = [], []
    for lineno, words in chosen[1:]:
        if len(words) == 2 and words[0] in ("n", "c", "z", "time"):
            fields[words[0]] = _number(path, lineno, words[1])
            continue
        parts = words[0].split(",")
        if len(words) != 1 or len(parts) != 4:
            raise InputError(path, lineno, "expected 'index,profit,weight,x'")
        profits.append(_number(path, lineno, parts[1]))
        weights.append(_number(path, lineno, parts[2]))
    if "c" not in fields:
        raise InputError(path, chosen[0][0], f"instance {name} has no 'c' line")
    if "n" in fields and fields["n"] != len(profits):
        raise InputError(path, chosen[0][0], f"instance {name} says n {fields['n']} but lists {len(profits)}")
    return KnapsackInstance(profits, weights, fields["c"], fields.get("z"), name)


def read_knapsack(path: str, instance: str | None = None) -> KnapsackInstance:
    """Any knapsack format in shared/instances/knapsack: by suffix .kp (YewPar), .csv (Pisinger,
    ``instance`` = name or 1-based number, default the first), otherwise 'n capacity' + items."""
    suffix = Path(path).suffix
    if suffix == ".kp":
        inst = _read_yewpar(path)
    elif suffix == ".csv":
        inst = _read_pisinger(path, instance)
    else:
        inst = _read_counted(path)
    for k, (p, w) in enumerate(zip(inst.profits, inst.weights)):
        if w <= 0 or p < 0:
            raise InputError(path, None, f"item {k + 1}: need weight > 0 and profit >= 0")
    if inst.capacity < 0:
        raise InputError(path, None, "negative capacity")
    for what, total in (("the profits add up to", sum(inst.profits)),
                        ("the weights add up to", sum(inst.weights)), ("the capacity is", inst.capacity)):
        if total > EXACT:
            raise InputError(path, None, f"{what} {total}, above 2^53: the search's doubles cannot "
                                         "hold it exactly")
    return inst


def density_order(profits: Sequence[float], weights: Sequence[float]) -> list[int]:
    """Item indices by non-increasing profit/weight, ties by lower index."""
    return sorted(range(len(profits)), key=lambda i: -profits[i] / weights[i])


class Knapsack:
    """A 0/1 knapsack; ``search()`` gives the best profit and the chosen item indices."""

    prune_level = True

    def __init__(self, profits: Sequence[float], weights: Sequence[float], capacity: float) -> None:
        self.order = density_order(profits, weights)
        self.profits = [profits[i] for i in self.order]
        self.weights = [weights[i] for i in self.order]
        self.capacity = capacity

    @classmethod
    def from_instance(cls, inst: KnapsackInstance) -> Knapsack:
        return cls(inst.profits, inst.weights, inst.capacity)

    def core(self) -> KnapsackCore:
        return KnapsackCore(self.profits, self.weights, self.capacity)

    def search(self, coordination: Any = "seq", **params: Any) -> Result:
        params.setdefault("prune_level", self.prune_level)
        result = self.core().search(coordination, **params)
        return finish(result, self.order)


def finish(result: Result, order: Sequence[int]) -> Result:
    """Map density positions back to input item indices; an empty packing when nothing fits (the
    core records no solution without an item), unless an initial bound of 0 or more stood: then no
    solution says none beats it."""
    if result.solution is None:
        if result.objective is None or result.objective < 0:
            result.objective, result.solution = 0, []
    else:
        result.solution = sorted(order[j] for j in result.solution)
    return result


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("input", metavar="FILE", help="knapsack instance (.kp, .csv or 'n capacity' format)")
    parser.add_argument("--instance", help="Pisinger .csv: instance name or 1-based number (default: first)")
    parser.add_argument("--python", action="store_true", help="use the pure-Python subclass (the tutorial's)")


def solve(args: argparse.Namespace, **params: Any) -> tuple[Result, list[str]]:
    inst = read_knapsack(args.input, args.instance)
    if args.python:
        from yewpy.apps.knapsack_python import KnapsackPy

        result = KnapsackPy(inst.profits, inst.weights, inst.capacity).search(**params)
    else:
        result = Knapsack.from_instance(inst).search(**params)
    if result.solution is None:
        return result, [f"No packing with profit above {args.better_than} (--better-than): the best profit "
                        f"is at most {args.better_than}"]
    weight = sum(inst.weights[i] for i in result.solution)
    lines = [f"Final Profit: {result.objective}", f"Final Weight: {weight}"]
    if inst.optimum is not None:
        lines.append(f"Expected Result: {str(result.objective == inst.optimum).lower()}")
    lines.append(f"Items: {' '.join(str(i + 1) for i in result.solution)}")
    return result, lines
