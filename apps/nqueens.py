"""N-queens (enumeration, compiled): count the ways to place n non-attacking queens.

>>> NQueens(8).search().value
92
"""

from __future__ import annotations

import argparse
from typing import Any

from yewpy.apps._nqueens import NQueensCore as NQueens
from yewpy.errors import UsageError
from yewpy.result import Result

__all__ = ["NQueens"]


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("n", type=int, help="board size (1..64)")


def solve(args: argparse.Namespace, **params: Any) -> tuple[Result, list[str]]:
    if not 1 <= args.n <= 64:
        raise UsageError(f"n-queens needs 1 <= n <= 64, got {args.n}")
    result = NQueens(args.n).search(**params)
    return result, [f"Solution for n = {args.n}: {result.value}"]
