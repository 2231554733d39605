"""Subgraph isomorphism (non-induced, decision): does the pattern graph embed in the target?

An embedding is an injective map from pattern vertices to target vertices that sends every
pattern edge (and self-loop) onto a target edge (self-loop).  The search is compiled
(``_sip.pyx``): bitset domains, supplemental graphs, degree filtering and all-different.

>>> triangle = (3, [(0, 1), (1, 2), (2, 0)])
>>> square_with_diagonal = (4, [(0, 1), (1, 2), (2, 3), (3, 0), (0, 2)])
>>> r = SubgraphIsomorphism(*triangle, *square_with_diagonal).search()
>>> r.found, r.solution
(True, {0: 0, 1: 2, 2: 1})
>>> SubgraphIsomorphism(*square_with_diagonal, *triangle).search().found
False
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from yewpy.apps._sip import SIPCore
from yewpy.apps.input_files import read_text
from yewpy.apps.input_numbers import ascii_digits
from yewpy.errors import InputError, UsageError
from yewpy.result import Result

__all__ = ["SubgraphIsomorphism", "read_lad"]


def _tokens(path: str) -> list[tuple[str, int]]:
    text = read_text(path)
    return [(word, lineno) for lineno, line in enumerate(text.split("\n"), 1) for word in line.split()]


def read_lad(path: str) -> tuple[int, list[tuple[int, int]]]:
    """A LAD graph: vertex count n, then per vertex ``degree neighbour...``; 0-based edges.

    Whitespace-insensitive, like the LAD and YewPar readers (a vertex's list may wrap lines).
    An edge may be listed from one end or both; ``(v, v)`` is a self-loop.
    """
    tokens = _tokens(path)
    position = 0

    def integer(what: str, low: int, high: int | None) -> int:
        nonlocal position
        if position == len(tokens):
            raise InputError(path, tokens[-1][1] if tokens else 1, f"file ends where {what} was expected")
        word, lineno = tokens[position]
        position += 1
        if not ascii_digits(word):
            raise InputError(path, lineno, f"expected {what}, got {word!r}")
        value = int(word)
        if value < low or (high is not None and value > high):
            raise InputError(path, lineno, f"{what} {value} outside {low}..{high}")
        return value

    n = integer("the vertex count", 0, None)
    edges = []
    for v in range(n):
        degree = integer(f"the degree of vertex {v}", 0, n)
        for _ in range(degree):
            edges.append((v, integer(f"a neighbour of vertex {v}", 0, n - 1)))
    if position < len(tokens):
        word, lineno = tokens[position]
        raise InputError(path, lineno, f"unexpected {word!r} after the last vertex's list")
    return n, edges


class SubgraphIsomorphism:
    """A pattern and a target graph, searched for a (non-induced) embedding of the pattern.

    Pattern vertices without edges or loops are set aside and placed on unused target vertices
    at the end; target vertices are tried in order of non-increasing degree (ties: lower index).
    ``supplementals=False`` searches with the input graphs only (for comparison).
    """

    def __init__(self, pattern_n: int, pattern_edges: Iterable[tuple[int, int]], target_n: int,
                 target_edges: Iterable[tuple[int, int]], *, pattern_labels: Sequence[Any] | None = None,
                 target_labels: Sequence[Any] | None = None, supplementals: bool = True) -> None:
        self.pattern_n, self.target_n = pattern_n, target_n
        self.pattern_labels = list(range(pattern_n)) if pattern_labels is None else list(pattern_labels)
        self.target_labels = list(range(target_n)) if target_labels is None else list(target_labels)
        self.pattern_adj = self._adjacency(pattern_n, pattern_edges)
        self.target_adj = self._adjacency(target_n, target_edges)
        # search variable i -> pattern vertex; isolated pattern vertices are placed at the end
        self.pattern_order = [v for v in range(pattern_n) if self.pattern_adj[v]]
        self.isolated = [v for v in range(pattern_n) if not self.pattern_adj[v]]
        # core value t -> target vertex
        degree = [len(self.target_adj[v] - {v}) for v in range(target_n)]
        self.target_order = sorted(range(target_n), key=lambda v: (-degree[v], v))
        self.supplementals = supplementals
        self.preprocess_seconds = 0.0
        self._core: SIPCore | None = None

    @staticmethod
    def _adjacency(n: int, edges: Iterable[tuple[int, int]]) -> list[set[int]]:
        adj: list[set[int]] = [set() for _ in range(n)]
        for u, v in edges:
            if not (0 <= u < n and 0 <= v < n):
                raise ValueError(f"edge ({u}, {v}) outside 0..{n - 1}")
            adj[u].add(v)
            adj[v].add(u)
        return adj

    @classmethod
    def from_files(cls, pattern_path: str, target_path: str, **kwargs: Any) -> SubgraphIsomorphism:
        """Two LAD files; the mapping uses their 0-based vertex numbers."""
        return cls(*read_lad(pattern_path), *read_lad(target_path), **kwargs)

    @classmethod
    def from_networkx(cls, pattern: Any, target: Any, **kwargs: Any) -> SubgraphIsomorphism:
        """Two networkx graphs; the mapping is between their nodes."""
        pn, tn = list(pattern.nodes), list(target.nodes)
        pi, ti = {v: i for i, v in enumerate(pn)}, {v: i for i, v in enumerate(tn)}
        return cls(len(pn), [(pi[u], pi[v]) for u, v in pattern.edges],
                   len(tn), [(ti[u], ti[v]) for u, v in target.edges],
                   pattern_labels=pn, target_labels=tn, **kwargs)

    def core(self) -> SIPCore:
        """The compiled core, built once: supplemental graphs and filtering happen here, and
        ``preprocess_seconds`` says how long that took (search timings leave it out)."""
        if self._core is None:
            start = time.perf_counter()
            var = {v: i for i, v in enumerate(self.pattern_order)}
            value = {v: t for t, v in enumerate(self.target_order)}
            pattern_edges, pattern_loops = [], []
            for v in self.pattern_order:
                for w in self.pattern_adj[v]:
                    if w == v:
                        pattern_loops.append(var[v])
                    elif v < w:
                        pattern_edges += (var[v], var[w])
            target_edges, target_loops = [], []
            for v in range(self.target_n):
                for w in self.target_adj[v]:
                    if w == v:
                        target_loops.append(value[v])
                    elif v < w:
                        target_edges += (value[v], value[w])
            self._core = SIPCore(len(self.pattern_order), pattern_edges, pattern_loops, self.target_n,
                                 target_edges, target_loops, len(self.isolated), self.supplementals)
            self.preprocess_seconds = time.perf_counter() - start
        return self._core

    @property
    def refuted(self) -> bool:
        """True when preprocessing alone proves there is no embedding (no search needed)."""
        return bool(self.core().refuted)

    def search(self, coordination: Any = "seq", **params: Any) -> Result:
        """Whether an embedding exists; ``solution`` maps each pattern vertex to a target vertex."""
        core = self.core()
        core.reset_counters()
        result = core.search(coordination, target=1, **params)
        result.metrics["failures"] = result.metrics["counters"].get("failures", 0)
        result.metrics["preprocess_seconds"] = self.preprocess_seconds
        if result.solution is not None:
            result.solution = self._mapping(result.solution)
        return result

    def _mapping(self, values: Sequence[int]) -> dict:
        pairs = {self.pattern_order[i]: self.target_order[t] for i, t in enumerate(values)}
        used = set(pairs.values())
        free = (t for t in range(self.target_n) if t not in used)
        for v in self.isolated:
            pairs[v] = next(free)
        return {self.pattern_labels[v]: self.target_labels[pairs[v]] for v in sorted(pairs)}

    def is_embedding(self, mapping: Mapping[Any, Any]) -> bool:
        """True when ``mapping`` (labels to labels) is total, injective and keeps every edge."""
        pi = {label: i for i, label in enumerate(self.pattern_labels)}
        ti = {label: i for i, label in enumerate(self.target_labels)}
        if set(mapping) != set(pi) or not all(t in ti for t in mapping.values()):
            return False
        image = {pi[p]: ti[t] for p, t in mapping.items()}
        if len(set(image.values())) != len(image):
            return False
        return all(image[w] in self.target_adj[image[v]]
                   for v in range(self.pattern_n) for w in self.pattern_adj[v])


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("pattern", nargs="?", metavar="PATTERN", help="pattern graph (LAD format)")
    parser.add_argument("target", nargs="?", metavar="TARGET", help="target graph (LAD format)")
    parser.add_argument("--pattern", dest="pattern_file", metavar="FILE", help="YewPar spelling of PATTERN")
    parser.add_argument("--target", dest="target_file", metavar="FILE", help="YewPar spelling of TARGET")
    parser.add_argument("--no-supplementals", action="store_true",
                        help="search with the input graphs only (no path-count graphs)")


def _files(args: argparse.Namespace) -> tuple[str, str]:
    positional = [f for f in (args.pattern, args.target) if f is not None]
    named = [args.pattern_file, args.target_file]
    if any(f is not None for f in named):
        if positional or None in named:
            raise UsageError("give PATTERN TARGET, or both --pattern FILE and --target FILE")
        return named[0], named[1]
    if len(positional) != 2:
        raise UsageError("give PATTERN TARGET, or both --pattern FILE and --target FILE")
    return positional[0], positional[1]


def solve(args: argparse.Namespace, **params: Any) -> tuple[Result, list[str]]:
    pattern, target = _files(args)
    problem = SubgraphIsomorphism.from_files(pattern, target, supplementals=not args.no_supplementals)
    result = problem.search(**params)
    if result.found:
        if not problem.is_embedding(result.solution):
            raise RuntimeError("internal error: the witness is not an embedding")
        lines = ["Solution found: true",
                 "mapping = " + " ".join(f"({p} -> {t})" for p, t in result.solution.items()),
                 "Witness checked: total, injective, every pattern edge kept"]
    elif result.status == "exhausted":
        lines = ["Solution found: false"]
    else:
        lines = [f"Solution found: unknown (stopped: {result.status})"]
    lines.append(f"Refuted by filtering before search: {str(problem.refuted).lower()}")
    lines.append(f"Propagation failures = {result.metrics['failures']}")
    lines.append(f"Preprocessing seconds = {problem.preprocess_seconds:.3f} (supplemental graphs, filtering)")
    return result, lines
