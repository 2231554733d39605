"""TSPLIB95 symmetric TSP files (``.tsp``) and tours (``.tour``), with the TSPLIB distance rules.

Edge weight types: EUC_2D, CEIL_2D, ATT, GEO and EXPLICIT (FULL_MATRIX, UPPER_ROW, LOWER_ROW,
UPPER_DIAG_ROW, LOWER_DIAG_ROW and their column-wise twins, the same numbers for a symmetric
matrix).  All distances are integers, as TSPLIB defines them.  A malformed file raises
:class:`~yewpy.errors.InputError` naming the line.

>>> geo_distance((16.47, 96.10), (16.47, 94.44))      # burma14, cities 1 and 2
153
"""

from __future__ import annotations

import math
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from yewpy.apps.input_files import read_text
from yewpy.apps.input_numbers import ascii_digits, parse_float, parse_int
from yewpy.errors import InputError

__all__ = ["TsplibInstance", "att_distance", "ceil_distance", "distance_matrix", "euclidean_distance",
           "geo_distance", "read_tour", "read_tsplib", "tour_length"]

COORD_TYPES = ("EUC_2D", "CEIL_2D", "ATT", "GEO")
# format -> which (row, column) pairs the numbers fill, in order (row-major over the stored half)
FORMATS = {
    "FULL_MATRIX": "full",
    "UPPER_ROW": "upper", "LOWER_COL": "upper",
    "LOWER_ROW": "lower", "UPPER_COL": "lower",
    "UPPER_DIAG_ROW": "upper_diag", "LOWER_DIAG_COL": "upper_diag",
    "LOWER_DIAG_ROW": "lower_diag", "UPPER_DIAG_COL": "lower_diag",
}
HEADER_KEYS = ("NAME", "TYPE", "COMMENT", "DIMENSION", "EDGE_WEIGHT_TYPE", "EDGE_WEIGHT_FORMAT",
               "DISPLAY_DATA_TYPE", "NODE_COORD_TYPE")
SECTIONS = ("NODE_COORD_SECTION", "EDGE_WEIGHT_SECTION", "DISPLAY_DATA_SECTION", "TOUR_SECTION")


@dataclass
class TsplibInstance:
    """A symmetric TSP: its name, the edge weight type and the full n x n integer distance matrix."""

    name: str
    dimension: int
    edge_weight_type: str
    matrix: list[list[int]]
    comment: str = ""
    coords: list[tuple[float, float]] = field(default_factory=list)


LENGTH_LIMIT = 2 ** 62      # a tour's length, and sums of two of them, stay within int64


def _nint(x: float) -> int:
    return int(x + 0.5)


def euclidean_distance(a: Sequence[float], b: Sequence[float]) -> int:
    """EUC_2D: the Euclidean distance rounded to the nearest integer."""
    return _nint(math.sqrt((a[0] - b[0]) ** 2 + (a[1] - b[1]) ** 2))


def ceil_distance(a: Sequence[float], b: Sequence[float]) -> int:
    """CEIL_2D: the Euclidean distance rounded up."""
    return math.ceil(math.sqrt((a[0] - b[0]) ** 2 + (a[1] - b[1]) ** 2))


def att_distance(a: Sequence[float], b: Sequence[float]) -> int:
    """ATT: pseudo-Euclidean distance, sqrt((dx^2 + dy^2) / 10) rounded, plus 1 if rounded down."""
    r = math.sqrt(((a[0] - b[0]) ** 2 + (a[1] - b[1]) ** 2) / 10.0)
    t = _nint(r)
    return t + 1 if t < r else t


def _radians(x: float) -> float:
    degrees = int(x)
    return 3.141592 * (degrees + 5.0 * (x - degrees) / 3.0) / 180.0


def geo_distance(a: Sequence[float], b: Sequence[float]) -> int:
    """GEO: great-circle distance in km on TSPLIB's idealised sphere; coordinates are DDD.MM
    (degrees.minutes) latitude, longitude; PI = 3.141592 as TSPLIB's own code has it."""
    lat1, lon1, lat2, lon2 = _radians(a[0]), _radians(a[1]), _radians(b[0]), _radians(b[1])
    q1, q2, q3 = math.cos(lon1 - lon2), math.cos(lat1 - lat2), math.cos(lat1 + lat2)
    return int(6378.388 * math.acos(0.5 * ((1.0 + q1) * q2 - (1.0 - q1) * q3)) + 1.0)


DISTANCES = {"EUC_2D": euclidean_distance, "CEIL_2D": ceil_distance, "ATT": att_distance,
             "GEO": geo_distance}


def distance_matrix(coords: Sequence[Sequence[float]], edge_weight_type: str) -> list[list[int]]:
    """The full matrix of one coordinate-based edge weight type (zero diagonal)."""
    dist = DISTANCES[edge_weight_type]
    n = len(coords)
    matrix = [[0] * n for _ in range(n)]
    for i in range(n):
        for j in range(i + 1, n):
            matrix[i][j] = matrix[j][i] = dist(coords[i], coords[j])
    return matrix


def tour_length(matrix: Sequence[Sequence[int]], tour: Sequence[int]) -> int:
    """The length of the closed tour visiting ``tour`` (0-based cities) in order."""
    return sum(matrix[tour[k]][tour[(k + 1) % len(tour)]] for k in range(len(tour)))


def _cell_count(n: int, kind: str) -> int:
    """How many numbers a format stores for n cities."""
    return {"full": n * n, "upper": n * (n - 1) // 2, "lower": n * (n - 1) // 2,
            "upper_diag": n * (n + 1) // 2, "lower_diag": n * (n + 1) // 2}[kind]


def _half_cells(n: int, kind: str) -> Iterator[tuple[int, int]]:
    """The (row, column) cells a format's numbers fill, in reading order (lazily: n comes from the
    header, and the file's numbers are counted before any cell is made)."""
    for i in range(n):
        if kind == "full":
            yield from ((i, j) for j in range(n))
        elif kind == "upper":
            yield from ((i, j) for j in range(i + 1, n))
        elif kind == "lower":
            yield from ((i, j) for j in range(i))
        elif kind == "upper_diag":
            yield from ((i, j) for j in range(i, n))
        else:
            yield from ((i, j) for j in range(i + 1))


class _Reader:
    """One pass over the lines of a TSPLIB file: header keys, then data sections."""

    def __init__(self, path: str, max_dimension: int | None = None) -> None:
        self.path, self.max_dimension = str(path), max_dimension
        text = read_text(self.path, encoding=None)
        self.raw = text.splitlines()           # LF, CRLF and old-Mac CR alike
        self.lines = [(k, line.split()) for k, line in enumerate(self.raw, 1) if line.strip()]
        self.at = 0
        self.keys: dict[str, tuple[str, int]] = {}

    def error(self, line: int | None, message: str) -> InputError:
        return InputError(self.path, line, message)

    def dimension(self, line: int) -> int:
        if "DIMENSION" not in self.keys:
            raise self.error(line, "data section before the DIMENSION line")
        return int(self.keys["DIMENSION"][0])

    def header(self, lineno: int) -> str | None:
        """Record a ``KEY : value`` line; return the section name when the line opens one."""
        key, sep, value = self.raw[lineno - 1].partition(":")
        key, value = key.strip().upper(), value.strip()
        if key in SECTIONS or key in ("FIXED_EDGES_SECTION", "DEPOT_SECTION", "DEMAND_SECTION"):
            if value:
                raise self.error(lineno, f"unexpected text after {key}")
            return key
        if key == "EOF":
            return "EOF"
        if key not in HEADER_KEYS:
            raise self.error(lineno, f"unknown keyword {key!r}")
        if not sep:
            raise self.error(lineno, f"expected '{key} : value'")
        if key in self.keys:
            raise self.error(lineno, f"second {key} line")
        if key == "DIMENSION" and not (ascii_digits(value) and int(value) > 0):
            raise self.error(lineno, f"DIMENSION must be a positive integer, got {value!r}")
        if key == "DIMENSION" and self.max_dimension is not None and int(value) > self.max_dimension:
            raise self.error(lineno, f"DIMENSION {value}: this search supports at most "
                                     f"{self.max_dimension} cities")
        self.keys[key] = (value.upper() if key not in ("NAME", "COMMENT") else value, lineno)
        return None

    def numbers(self, count: int, start: int, what: str, integral: bool) -> list[tuple[int, float]]:
        """The next ``count`` numbers, across lines: (line, value) pairs."""
        out: list[tuple[int, float]] = []
        while len(out) < count:
            if self.at >= len(self.lines):
                last = self.lines[-1][0] if self.lines else start
                raise self.error(last, f"expected {count} {what}, found {len(out)}")
            lineno, words = self.lines[self.at]
            if words[0].upper() == "EOF" or words[0].upper().rstrip(":") in SECTIONS:
                raise self.error(lineno, f"expected {count} {what}, found {len(out)}")
            if len(out) + len(words) > count:
                raise self.error(lineno, f"more numbers than the {count} {what} expected")
            for w in words:
                out.append((lineno, _parse_number(self, lineno, w, integral, what)))
            self.at += 1
        return out

    def coordinates(self, n: int, lineno: int) -> list[tuple[float, float]]:
        """n lines 'index x y', indices 1..n each once, any order."""
        if len(self.lines) - self.at < n:
            raise self.error(self.lines[-1][0], f"expected {n} coordinate lines, found fewer")
        coords: list = [None] * n
        for _ in range(n):
            if self.at >= len(self.lines):
                raise self.error(self.lines[-1][0], f"expected {n} coordinate lines, found fewer")
            at, words = self.lines[self.at]
            if len(words) != 3:
                raise self.error(at, "expected 'index x y'")
            index = _parse_number(self, at, words[0], True, "city index")
            if not 1 <= index <= n or coords[index - 1] is not None:
                raise self.error(at, f"city index {index} out of range 1..{n} or repeated")
            coords[index - 1] = (_parse_number(self, at, words[1], False, "coordinate"),
                                 _parse_number(self, at, words[2], False, "coordinate"))
            self.at += 1
        return coords


def _parse_number(reader: _Reader, lineno: int, word: str, integral: bool, what: str) -> float:
    try:
        return parse_int(word) if integral else parse_float(word)
    except ValueError:
        kind = "an integer" if integral else "a finite decimal number"
        raise reader.error(lineno, f"expected {kind} ({what}), got {word!r}") from None


def _parse(path: str, want_tour: bool, max_dimension: int | None = None) -> tuple[_Reader, dict]:
    """Header keys and the sections' contents of one file."""
    r = _Reader(path, max_dimension)
    sections: dict = {}
    while r.at < len(r.lines):
        lineno = r.lines[r.at][0]
        r.at += 1
        section = r.header(lineno)
        if section is None:
            continue
        if section == "EOF":
            break
        if section in sections:
            raise r.error(lineno, f"second {section}")
        n = r.dimension(lineno)
        if section in ("NODE_COORD_SECTION", "DISPLAY_DATA_SECTION"):
            sections[section] = (r.coordinates(n, lineno), lineno)
        elif section == "EDGE_WEIGHT_SECTION":
            fmt, fmt_line = r.keys.get("EDGE_WEIGHT_FORMAT", (None, lineno))
            if fmt not in FORMATS:
                raise r.error(fmt_line, f"unsupported or missing EDGE_WEIGHT_FORMAT {fmt!r}; "
                                        f"supported: {', '.join(FORMATS)}")
            count = _cell_count(n, FORMATS[fmt])
            sections[section] = (_half_cells(n, FORMATS[fmt]), r.numbers(count, lineno, "edge weights", True),
                                 lineno)
        elif section == "TOUR_SECTION":
            if not want_tour:
                raise r.error(lineno, "TOUR_SECTION in a problem file")
            sections[section] = (_tour_section(r, n, lineno), lineno)
        else:
            raise r.error(lineno, f"{section} is not supported (symmetric TSP only)")
    return r, sections


def _tour_section(r: _Reader, n: int, lineno: int) -> list[int]:
    tour: list[int] = []
    while True:
        if r.at >= len(r.lines):
            raise r.error(r.lines[-1][0], "TOUR_SECTION does not end with -1")
        at, words = r.lines[r.at]
        r.at += 1
        for w in words:
            city = int(_parse_number(r, at, w, True, "city"))
            if city == -1:
                if len(tour) != n:
                    raise r.error(at, f"the tour has {len(tour)} cities, DIMENSION is {n}")
                return tour
            if not 1 <= city <= n or city in tour:
                raise r.error(at, f"city {city} out of range 1..{n} or repeated")
            tour.append(city)


def read_tsplib(path: str, max_dimension: int | None = None) -> TsplibInstance:
    """A symmetric TSP file: the full distance matrix by the file's TSPLIB rule.  A DIMENSION above
    ``max_dimension`` is refused at its line, before anything of that size is made."""
    r, sections = _parse(path, want_tour=False, max_dimension=max_dimension)
    kind, kind_line = r.keys.get("TYPE", ("TSP", None))
    if kind != "TSP":
        raise r.error(kind_line, f"TYPE {kind} is not supported (symmetric TSP only)")
    if "DIMENSION" not in r.keys:
        raise r.error(None, "no DIMENSION line")
    n = int(r.keys["DIMENSION"][0])
    if "EDGE_WEIGHT_TYPE" not in r.keys:
        raise r.error(None, "no EDGE_WEIGHT_TYPE line")
    weight_type, type_line = r.keys["EDGE_WEIGHT_TYPE"]
    coords: list = []
    if weight_type == "EXPLICIT":
        if "EDGE_WEIGHT_SECTION" not in sections:
            raise r.error(type_line, "EDGE_WEIGHT_TYPE EXPLICIT but no EDGE_WEIGHT_SECTION")
        cells, values, _ = sections["EDGE_WEIGHT_SECTION"]
        matrix = [[0] * n for _ in range(n)]
        where = {}
        for (i, j), (lineno, value) in zip(cells, values):
            if i != j and (j, i) in where and matrix[j][i] != value:
                raise r.error(lineno, f"asymmetric weights: d({i + 1},{j + 1}) = {value} but "
                                      f"d({j + 1},{i + 1}) = {matrix[j][i]} (line {where[(j, i)]})")
            if i != j:
                matrix[i][j] = matrix[j][i] = int(value)
                where[(i, j)] = lineno
    elif weight_type in COORD_TYPES:
        if "NODE_COORD_SECTION" not in sections:
            raise r.error(type_line, f"EDGE_WEIGHT_TYPE {weight_type} but no NODE_COORD_SECTION")
        coords = sections["NODE_COORD_SECTION"][0]
        try:
            matrix = distance_matrix(coords, weight_type)
        except (OverflowError, ValueError):         # coordinates like 1e308: no integer distance
            raise r.error(type_line, f"coordinates too large for {weight_type} distances") from None
    else:
        raise r.error(type_line, f"EDGE_WEIGHT_TYPE {weight_type} is not supported; "
                                 f"supported: EXPLICIT, {', '.join(COORD_TYPES)}")
    longest = max((max(map(abs, row)) for row in matrix), default=0)
    if longest * max(n, 1) >= LENGTH_LIMIT:
        raise r.error(type_line, f"n x the largest edge weight ({n} x {longest}) must stay below "
                                 "2^62, so that every tour's length fits the search's integers")
    name = r.keys.get("NAME", (Path(path).stem, None))[0]
    return TsplibInstance(name, n, weight_type, matrix, r.keys.get("COMMENT", ("", None))[0], coords)


def read_tour(path: str) -> list[int]:
    """A TSPLIB tour file: the cities of its TOUR_SECTION, 1-based, in tour order."""
    r, sections = _parse(path, want_tour=True)
    if "TOUR_SECTION" not in sections:
        raise r.error(None, "no TOUR_SECTION")
    return sections["TOUR_SECTION"][0]
