"""Binary strings without two adjacent ones (enumeration, plain Python): count those of length n.

A yewpy app from another package: ``configure`` adds its input to the subcommand's parser and
``solve`` runs the search with the coordination and operations flags yewpy parsed.
"""

from __future__ import annotations

import argparse
from typing import Any

import yewpy


class FibStrings(yewpy.Enumeration):
    """A node is (length, last bit); the strings of length ``n`` count 1 each: Fibonacci(n + 2)."""

    def __init__(self, n: int) -> None:
        self.n = n

    def root(self) -> tuple:
        return (0, 0)

    def children(self, node: tuple):
        length, last = node
        if length < self.n:
            yield (length + 1, 0)
            if not last:
                yield (length + 1, 1)

    def value(self, node: tuple) -> int:
        return 1 if node[0] == self.n else 0


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("n", type=int, help="string length (0..40)")


def solve(args: argparse.Namespace, **params: Any) -> tuple:
    if not 0 <= args.n <= 40:
        raise yewpy.UsageError(f"n must be between 0 and 40, got {args.n}")
    result = FibStrings(args.n).search(**params)
    return result, [f"Strings of length {args.n} without two adjacent ones: {result.value}"]
