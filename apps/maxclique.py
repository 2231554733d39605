"""Maximum clique (optimisation) and k-clique (decision), compiled bitset MCSa1 + BBMC.

>>> g = MaxClique(4, [(0, 1), (1, 2), (0, 2), (2, 3)])
>>> r = g.search()
>>> r.objective, r.solution
(3, [0, 1, 2])
>>> g.search(decision=4).found
False
"""

from __future__ import annotations

import argparse
import zlib
from collections.abc import Iterable, Sequence
from typing import Any

from yewpy.apps._maxclique import MaxCliqueCore
from yewpy.apps.input_files import open_text
from yewpy.apps.input_numbers import ascii_digits
from yewpy.errors import InputError, UsageError
from yewpy.result import Result

__all__ = ["MaxClique", "read_dimacs"]

#: the app takes ``--better-than V``: the search then proves there is no clique larger than V, or finds one
BETTER_THAN = True


def read_dimacs(path: str) -> tuple[int, list[tuple[int, int]]]:
    """A DIMACS ``.clq`` (or ``.clq.gz``) graph: vertex count and 0-based edges.  The 'p' line's
    edge count must match the file (its 'e' lines, or its distinct edges), so a file cut short is
    refused rather than solved as another graph."""
    n = None
    edges = []
    lines = 0                                   # 'e' lines, self-loops and repeats included
    try:
        with open_text(path) as f:
            for lineno, line in enumerate(f, 1):
                words = line.split()
                if not words or words[0] == "c":
                    continue
                if words[0] == "p":
                    if n is not None:
                        raise InputError(path, lineno, "second 'p' line")
                    if len(words) != 4 or not ascii_digits(words[2]) or not ascii_digits(words[3]):
                        raise InputError(path, lineno, "expected 'p edge N M'")
                    n, m, p_line = int(words[2]), int(words[3]), lineno
                    if n >= 2 ** 62:
                        raise InputError(path, lineno, f"vertex count {n} is too large")
                elif words[0] == "e":
                    if n is None:
                        raise InputError(path, lineno, "edge before the 'p edge N M' line")
                    if len(words) != 3 or not ascii_digits(words[1]) or not ascii_digits(words[2]):
                        raise InputError(path, lineno, "expected 'e U V' with vertex numbers")
                    u, v = int(words[1]), int(words[2])
                    if not (1 <= u <= n and 1 <= v <= n):
                        raise InputError(path, lineno, f"vertex out of range 1..{n}")
                    lines += 1
                    if u != v:
                        edges.append((u - 1, v - 1))
                else:
                    raise InputError(path, lineno, f"unknown line type {words[0]!r}")
    except (OSError, EOFError, UnicodeDecodeError, zlib.error) as exc:
        raise InputError(path, None, f"cannot read: {getattr(exc, 'strerror', None) or exc}") from None
    if n is None:
        raise InputError(path, None, "no 'p edge N M' line")
    if m != lines and m != len({(min(u, v), max(u, v)) for u, v in edges}):
        raise InputError(path, p_line, f"the 'p' line says {m} edges but the file has {lines} "
                                       "(cut short, or not the graph it claims)")
    return n, edges


def _check_memory(needed: int) -> None:
    """Refuse a graph whose bitsets cannot fit in this machine's memory, before allocating them."""
    import os

    try:
        total = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (ValueError, OSError, AttributeError):
        return
    if needed > total:
        raise UsageError(f"the graph needs {needed / 2**30:.1f} GiB of adjacency bitsets; "
                         f"this machine has {total / 2**30:.1f} GiB")


class MaxClique:
    """A graph, searched for its largest clique (or a clique of size at least k).

    Vertices are renumbered by non-increasing degree (ties: lower index first) before the
    search, which fixes the colourings and so the node counts; solutions use your labels.
    Vertices without an edge are left out of the search (``size`` is how many are searched).
    """

    prune_level = True

    def __init__(self, n: int, edges: Iterable[tuple[int, int]], labels: Sequence[Any] | None = None) -> None:
        import numpy as np  # here, not at import: `yewpy APP` loads every app module

        self.n = n
        self.labels = range(n) if labels is None else labels if isinstance(labels, range) else list(labels)
        edge_arr = np.array([e for e in edges if e[0] != e[1]], dtype=np.int64).reshape(-1, 2)
        if edge_arr.size and (edge_arr.min() < 0 or edge_arr.max() >= n):
            raise ValueError(f"edge endpoints must be vertex numbers 0..{n - 1}")
        edge_arr = np.unique(np.sort(edge_arr, axis=1), axis=0)
        # Vertices without an edge are in no clique of two, so only the others are searched (one
        # stands in for all when there is no edge): memory follows the edges, not the 'p' line.
        touched, degree = np.unique(edge_arr.reshape(-1), return_counts=True)
        if not edge_arr.size:
            touched, degree = np.arange(min(n, 1)), np.zeros(min(n, 1), dtype=np.int64)
        by_degree = sorted(range(len(touched)), key=lambda k: (-int(degree[k]), int(touched[k])))
        self.order = [int(touched[k]) for k in by_degree]          # search index -> input index
        self.size = size = len(self.order)
        words = max(1, (size + 63) // 64)
        _check_memory(size * words * 8 * 6)     # the bitsets, their Python list and the core's copy
        position = np.empty(size, dtype=np.int64)                 # index in touched -> search index
        position[by_degree] = np.arange(size)
        ends = position[np.searchsorted(touched, edge_arr)] if edge_arr.size else edge_arr
        ii = np.concatenate([ends[:, 0], ends[:, 1]])
        jj = np.concatenate([ends[:, 1], ends[:, 0]])
        rows = np.zeros((size, words), dtype=np.uint64)
        np.bitwise_or.at(rows, (ii, jj >> 6), np.left_shift(np.uint64(1), (jj & 63).astype(np.uint64)))
        self.rows = rows.reshape(-1)      # row v: the neighbours of search vertex v, 64 per word

    @classmethod
    def from_file(cls, path: str) -> MaxClique:
        """Read a DIMACS graph; solutions use its 1-based vertex numbers."""
        n, edges = read_dimacs(path)
        try:
            return cls(n, edges, labels=range(1, n + 1))
        except UsageError as exc:
            raise InputError(path, None, str(exc)) from None

    @classmethod
    def from_networkx(cls, graph: Any) -> MaxClique:
        """A networkx graph; solutions are lists of its nodes."""
        nodes = list(graph.nodes)
        index = {v: i for i, v in enumerate(nodes)}
        return cls(len(nodes), [(index[u], index[v]) for u, v in graph.edges], labels=nodes)

    def core(self, decision: int | None = None) -> MaxCliqueCore:
        return MaxCliqueCore(self.rows.tolist(), self.size, decision)

    def search(self, coordination: Any = "seq", decision: int | None = None, **params: Any) -> Result:
        """The maximum clique, or with ``decision=k`` whether a clique of size >= k exists."""
        core = self.core(decision)
        params.setdefault("prune_level", self.prune_level)
        if decision is not None:
            params["target"] = decision
        result = core.search(coordination, **params)
        result.metrics["expansions"] = result.metrics["counters"]["expansions"]
        if result.solution is not None:
            result.solution = sorted((self.labels[self.order[v]] for v in result.solution),
                                     key=lambda x: (str(type(x)), x))
        if result.kind == "optimisation" and result.objective is None:
            result.objective, result.solution = 0, []   # only an empty graph gets here
        return result

    def is_clique(self, members: Iterable[Any]) -> bool:
        """True when the given labelled vertices are pairwise adjacent."""
        position = {self.labels[self.order[i]]: i for i in range(self.size)}
        members = list(members)
        if len(members) <= 1:
            return all(m in self.labels for m in members)
        idx = [position.get(m) for m in members]
        if None in idx:
            return False                        # a vertex without edges is in no clique of two
        rows = self.rows.reshape(self.size, -1)
        return all(int(rows[a][b >> 6]) >> (b & 63) & 1 for a in idx for b in idx if a != b)


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("input", metavar="FILE", help="DIMACS graph (.clq or .clq.gz)")
    parser.add_argument("--decision", type=int, default=None, metavar="K",
                        help="decision search: is there a clique of size K?")


def solve(args: argparse.Namespace, **params: Any) -> tuple[Result, list[str]]:
    graph = MaxClique.from_file(args.input)
    result = graph.search(decision=args.decision, **params)
    lines = []
    if args.decision is not None:
        lines.append(f"Clique of size >= {args.decision} found: {str(result.found).lower()}")
        if result.found:
            ok = graph.is_clique(result.solution)
            members = " ".join(map(str, result.solution))
            lines.append(f"Witness ({'checked' if ok else 'NOT A CLIQUE'}): {members}")
            if not ok:
                raise RuntimeError("internal error: the decision witness is not a clique")
    elif result.solution is None:
        lines.append(f"No clique larger than {args.better_than} (--better-than): the maximum clique size "
                     f"is at most {args.better_than}")
    else:
        lines.append(f"MaxClique Size = {result.objective}")
        lines.append(f"Clique: {' '.join(map(str, result.solution))}")
    lines.append(f"Expansions (nodes with candidates) = {result.metrics['expansions']}")
    return result, lines
