"""A seeded fuzzer for every input reader and every search flag of the ``yewpy`` command.

Each case mutates a real instance from shared/instances (or draws flag values), runs the CLI in
this process and judges the outcome against an independent oracle in this file:

- exit 0: the oracle must accept the input too and agree with the answer (networkx for cliques
  and subgraph isomorphism, a Pareto-front DP for knapsack, brute force for small TSPs, known
  counts for flags);
- exit 2: one line ``yewpy: error: ...`` naming the file (``usage: ...`` from argparse for flags);
- anything else (another status, a traceback, an exception, a hang) is a defect.

DIMACS is judged both ways: yewpy refuses a file exactly when the oracle's reader does.  A hang
ends the process through ``faulthandler`` with the case on stderr.

    python tests/fuzz_inputs.py --seed 1 --cases 100 [--reader dimacs]   # prints a JSON summary
"""

from __future__ import annotations

import argparse
import contextlib
import faulthandler
import gzip
import hashlib
import io
import itertools
import json
import math
import os
import random
import re
import sys
import tempfile
import traceback
from pathlib import Path

from uts_oracle import uts_tree

ROOT = Path(__file__).resolve().parents[1]
INSTANCES = Path(os.environ.get("YEWPY_SHARED", ROOT.parent / "shared")) / "instances"
CASE_SECONDS = 20           # no case here needs more than a fraction of a second

WEIRD = ["0", "-1", "1", "2", "3", "10", "100000", str(2 ** 31), str(2 ** 53 + 1), str(2 ** 63),
         str(2 ** 64), "1e308", "1e-308", "nan", "inf", "-inf", "\u00b2", "\u0663", "1.5", "-0.5", "x", "+3",
         "1_000", "0x10", "9" * 40, "e", "p", "c", "EOF", ":"]


# -- mutations ------------------------------------------------------------------------------

def mutate(data: bytes, rng: random.Random, rounds: int | None = None) -> bytes:
    """One to three edits of a text file: lines dropped, doubled, swapped or added, a token
    replaced by an awkward one, a header count nudged, a stray byte, a cut."""
    for _ in range(rounds or rng.randint(1, 3)):
        lines = data.split(b"\n")
        k = rng.randrange(len(lines))
        op = rng.randrange(9)
        numbers = [(i, j) for i, line in enumerate(lines) for j, w in enumerate(line.split())
                   if re.fullmatch(rb"-?[0-9]+(\.[0-9]+)?", w)]
        if numbers and rng.random() < 0.5:      # another plausible number: mostly a valid input
            i, j = rng.choice(numbers)
            words = lines[i].split()
            if b"." in words[j]:
                words[j] = f"{float(words[j]) * rng.uniform(0.5, 2):.3f}".encode()
            else:
                words[j] = str(max(0, int(words[j]) + rng.choice([-2, -1, 1, 2, 5]))).encode()
            lines[i] = b" ".join(words)
            data = b"\n".join(lines)
            continue
        if op == 0 and len(lines) > 1:
            del lines[k]
        elif op == 1:
            lines.insert(k, lines[k])
        elif op == 2:
            j = rng.randrange(len(lines))
            lines[k], lines[j] = lines[j], lines[k]
        elif op in (3, 4):
            words = lines[k].split()
            if words:
                words[rng.randrange(len(words))] = rng.choice(WEIRD).encode()
                lines[k] = b" ".join(words)
        elif op == 5:
            numbered = [i for i, line in enumerate(lines[:8]) if re.search(rb"\d", line)]
            if numbered:
                i = rng.choice(numbered)
                found = re.search(rb"\d+", lines[i])
                nudged = str(int(found.group()) + rng.choice([-1, 1, 1000, 99999])).encode()
                lines[i] = lines[i][:found.start()] + nudged + lines[i][found.end():]
        elif op == 6:
            at = rng.randrange(len(lines[k]) + 1)
            lines[k] = lines[k][:at] + bytes([rng.choice([0, 9, 13, 0xE9, 0xFF, 0xC3, 32])]) + lines[k][at:]
        elif op == 7:
            lines.insert(k, rng.choice([b"c caf\xe9", b"", b"   ", b"e 1", b"1 2 3", b"EOF", b"0 0"]))
        data = b"\n".join(lines)
        if op == 8:
            data = data[:rng.randrange(len(data) + 1)]
    return data


# -- oracles: independent readers and solvers -------------------------------------------------

class Invalid(Exception):
    """The oracle's reader refuses the input."""


ASCII_INT = re.compile(r"[0-9]+\Z")
DECIMAL = re.compile(r"[-+]?([0-9]+\.?[0-9]*|\.[0-9]+)([eE][-+]?[0-9]+)?\Z")


def _decimal(word: str) -> float:
    if not DECIMAL.match(word) or not math.isfinite(float(word)):
        raise Invalid(word)
    return int(word) if re.fullmatch(r"[-+]?[0-9]+", word) else float(word)


def oracle_dimacs(data: bytes) -> int:
    """The DIMACS clique format by its spec: the maximum clique size of the graph the file holds.
    Lines end at LF, CRLF or a lone CR (old Mac files), as yewpy's readers take them."""
    import networkx as nx

    n = m = None
    edges, lines = set(), 0
    for raw in data.replace(b"\r\n", b"\n").replace(b"\r", b"\n").split(b"\n"):
        words = raw.split()
        if not words or words[0] == b"c":
            continue
        try:
            words = [w.decode("ascii") for w in words]
        except UnicodeDecodeError:
            raise Invalid("non-ASCII outside a comment") from None
        if words[0] == "p":
            if n is not None or len(words) != 4 or not all(ASCII_INT.match(w) for w in words[2:]):
                raise Invalid("p line")
            n, m = int(words[2]), int(words[3])
        elif words[0] == "e":
            if n is None or len(words) != 3 or not (ASCII_INT.match(words[1]) and ASCII_INT.match(words[2])):
                raise Invalid("e line")
            u, v = int(words[1]), int(words[2])
            if not (1 <= u <= n and 1 <= v <= n):
                raise Invalid("vertex range")
            lines += 1
            if u != v:
                edges.add((min(u, v), max(u, v)))
        else:
            raise Invalid("line type")
    if n is None or (m != lines and m != len(edges)):
        raise Invalid("p line count")
    if not edges:
        return min(n, 1)
    return nx.max_weight_clique(nx.Graph(list(edges)), weight=None)[1]


def oracle_knapsack(data: bytes, opt: bytes | None) -> tuple[float, list, list, float]:
    """The counted format: 'n capacity', n 'profit weight' lines, maybe a 0/1 line: the optimum,
    profits, weights and capacity (the optimum by a Pareto-front DP over the items)."""
    try:
        rows = [line.split() for line in data.decode("utf-8").splitlines() if line.strip()]
    except UnicodeDecodeError:
        raise Invalid("utf-8") from None
    head = [w for row in rows[:2] for w in row][:2]
    if len(head) < 2 or not ASCII_INT.match(head[0]):
        raise Invalid("head")
    n, capacity = int(head[0]), _decimal(head[1])
    rest = rows[1:] if len(rows[0]) >= 2 else rows[2:]
    if len(rows[0]) > 2 or (len(rows[0]) == 1 and len(rows[1]) != 1) or len(rest) < n:
        raise Invalid("shape")
    items = []
    for row in rest[:n]:
        if len(row) != 2:
            raise Invalid("item")
        items.append((_decimal(row[0]), _decimal(row[1])))
    for row in rest[n:]:
        if len(row) != n or any(w not in ("0", "1") for w in row):
            raise Invalid("trailer")
    if any(w <= 0 or p < 0 for p, w in items) or capacity < 0:
        raise Invalid("signs")
    if max(sum(p for p, _ in items), sum(w for _, w in items), capacity) > 2 ** 53:
        raise Invalid("2^53")
    if opt is not None:
        try:
            words = opt.decode("utf-8").split()
        except UnicodeDecodeError:
            raise Invalid(".opt utf-8") from None
        if len(words) != 1:
            raise Invalid(".opt")
        _decimal(words[0])
    front = {0: 0}                               # weight -> best profit, Pareto-optimal only
    for p, w in items:
        merged = dict(front)
        for fw, fp in front.items():
            if fw + w <= capacity and merged.get(fw + w, -1) < fp + p:
                merged[fw + w] = fp + p
        front, best = {}, -1
        for fw in sorted(merged):
            if merged[fw] > best:
                front[fw], best = merged[fw], merged[fw]
    return max(front.values()), [p for p, _ in items], [w for _, w in items], capacity


def _tsplib_distance(kind: str, a: tuple, b: tuple) -> int:
    dx, dy = a[0] - b[0], a[1] - b[1]
    if kind == "EUC_2D":
        return int(math.sqrt(dx * dx + dy * dy) + 0.5)
    if kind == "CEIL_2D":
        return math.ceil(math.sqrt(dx * dx + dy * dy))
    if kind == "ATT":
        r = math.sqrt((dx * dx + dy * dy) / 10.0)
        return int(r + 0.5) + (int(r + 0.5) < r)

    def rad(x: float) -> float:
        deg = int(x)
        return 3.141592 * (deg + 5.0 * (x - deg) / 3.0) / 180.0

    q1 = math.cos(rad(a[1]) - rad(b[1]))
    q2, q3 = math.cos(rad(a[0]) - rad(b[0])), math.cos(rad(a[0]) + rad(b[0]))
    return int(6378.388 * math.acos(0.5 * ((1.0 + q1) * q2 - (1.0 - q1) * q3)) + 1.0)


def oracle_tsp(data: bytes) -> int:
    """A TSPLIB file with NODE_COORD_SECTION or FULL_MATRIX / LOWER_DIAG_ROW weights: the length of
    the shortest tour, by trying every tour (the fuzzed files have at most 8 cities)."""
    try:
        lines = [line.strip() for line in data.decode("utf-8").splitlines()]
    except UnicodeDecodeError:
        raise Invalid("utf-8") from None
    keys, k, numbers, coords = {}, 0, [], {}
    section = None
    for line in lines:
        if not line:
            continue
        if line == "EOF":
            break
        if line in ("NODE_COORD_SECTION", "EDGE_WEIGHT_SECTION"):
            if section is not None:
                raise Invalid("two sections")
            section = line
            continue
        if section is None:
            key, sep, value = line.partition(":")
            if not sep or key.strip() not in ("NAME", "TYPE", "COMMENT", "DIMENSION", "EDGE_WEIGHT_TYPE",
                                              "EDGE_WEIGHT_FORMAT") or key.strip() in keys:
                raise Invalid("header")
            keys[key.strip()] = value.strip()
        elif section == "NODE_COORD_SECTION":
            words = line.split()
            if len(words) != 3 or not re.fullmatch(r"[-+]?[0-9]+", words[0]):      # fscanf's %d
                raise Invalid("coord line")
            coords.setdefault(int(words[0]), (_decimal(words[1]), _decimal(words[2])))
            k += 1
        else:
            numbers += [_decimal(w) for w in line.split()]
    if keys.get("TYPE", "TSP") != "TSP" or not ASCII_INT.match(keys.get("DIMENSION", "x")):
        raise Invalid("type or dimension")
    n = int(keys["DIMENSION"])
    if not 1 <= n <= 8:
        raise Invalid("size")
    kind = keys.get("EDGE_WEIGHT_TYPE")
    d = [[0] * n for _ in range(n)]
    if kind == "EXPLICIT":
        fmt = keys.get("EDGE_WEIGHT_FORMAT")
        cells = ([(i, j) for i in range(n) for j in range(n)] if fmt == "FULL_MATRIX" else
                 [(i, j) for i in range(n) for j in range(i + 1)] if fmt == "LOWER_DIAG_ROW" else None)
        if cells is None or len(numbers) != len(cells) or any(isinstance(x, float) for x in numbers):
            raise Invalid("weights")
        seen = {}
        for (i, j), x in zip(cells, numbers):
            if i != j and seen.get((j, i), x) != x:
                raise Invalid("asymmetric")
            seen[(i, j)] = x
            if i != j:
                d[i][j] = d[j][i] = x
    elif kind in ("EUC_2D", "CEIL_2D", "ATT", "GEO"):
        if k != n or sorted(coords) != list(range(1, n + 1)) or numbers:
            raise Invalid("coords")
        try:
            for i, j in itertools.combinations(range(n), 2):
                d[i][j] = d[j][i] = _tsplib_distance(kind, coords[i + 1], coords[j + 1])
        except (OverflowError, ValueError):
            raise Invalid("distance") from None
    else:
        raise Invalid("type")
    if max(abs(x) for row in d for x in row) * n >= 2 ** 62:
        raise Invalid("2^62")
    if n <= 2:
        return sum(d[0][1:2]) * 2 if n == 2 else 0
    return min(d[0][p[0]] + sum(d[p[t]][p[t + 1]] for t in range(n - 2)) + d[p[-1]][0]
               for p in itertools.permutations(range(1, n)))


def oracle_lad(data: bytes) -> tuple[int, list]:
    """A LAD graph: n, then per vertex its degree and neighbours (0-based)."""
    try:
        words = data.decode("utf-8").split()
    except UnicodeDecodeError:
        raise Invalid("utf-8") from None
    if not words or not all(ASCII_INT.match(w) for w in words):
        raise Invalid("tokens")
    numbers = [int(w) for w in words]
    n, at, edges = numbers[0], 1, []
    for v in range(n):
        if at >= len(numbers) or numbers[at] > n:
            raise Invalid("degree")
        degree = numbers[at]
        neighbours = numbers[at + 1:at + 1 + degree]
        if len(neighbours) != degree or any(u >= n for u in neighbours):
            raise Invalid("neighbours")
        edges += [(v, u) for u in neighbours]
        at += 1 + degree
    if at != len(numbers):
        raise Invalid("trailing")
    return n, edges


def embeds(pattern: tuple[int, list], target: tuple[int, list]) -> bool:
    """Whether the pattern is a (non-induced) subgraph of the target, self-loops onto self-loops:
    plain backtracking over pattern vertices, most constrained first, with forward checking."""
    def adjacency(n: int, edges: list) -> list[set]:
        adj = [set() for _ in range(n)]
        for u, v in edges:
            adj[u].add(v)
            adj[v].add(u)
        return adj

    p_adj, t_adj = adjacency(*pattern), adjacency(*target)
    degree = [len(a - {v}) for v, a in enumerate(p_adj)]
    domains = {v: {t for t in range(target[0]) if len(t_adj[t] - {t}) >= degree[v]
                   and (v not in p_adj[v] or t in t_adj[t])} for v in range(pattern[0])}
    order, placed = [], set()
    while len(order) < pattern[0]:          # next: most neighbours placed, then highest degree
        v = max((v for v in range(pattern[0]) if v not in placed),
                key=lambda v: (len(p_adj[v] & placed), degree[v]))
        order.append(v)
        placed.add(v)
    image: dict[int, int] = {}

    def extend(k: int) -> bool:
        if k == len(order):
            return True
        v = order[k]
        used = set(image.values())
        for t in domains[v] - used:
            if all(image[u] in t_adj[t] for u in p_adj[v] if u in image and u != v):
                image[v] = t
                if extend(k + 1):
                    return True
                del image[v]
        return False

    return extend(0)


# -- running the command in this process -----------------------------------------------------

def run_cli(argv: list[str]) -> tuple[int | None, str, str, str | None]:
    """(exit status, stdout, stderr, traceback of an exception that escaped main)."""
    from yewpy.tools.cli import main

    out, err = io.StringIO(), io.StringIO()
    crash = None
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            code = main(argv)
        except SystemExit as exc:
            code = exc.code if isinstance(exc.code, int) else 2
        except BaseException:       # noqa: BLE001 - anything else is the defect being looked for
            code, crash = None, traceback.format_exc()
    return code, out.getvalue(), err.getvalue(), crash


def judge(argv: list[str], paths: list[str], answer, *, flags: bool = False) -> tuple[str, str]:
    """('answered'|'refused', '') or ('defect', why) for one run against ``answer(json) -> why``."""
    code, out, err, crash = run_cli(argv)
    if crash or "Traceback" in err:
        return "defect", f"traceback: {(crash or err)[-600:]}"
    if code == 2:
        lines = err.strip().splitlines()
        if flags and lines and lines[0].startswith("usage:") and "error:" in lines[-1]:
            return "refused", ""
        if len(lines) != 1 or not lines[0].startswith("yewpy: error: "):
            return "defect", f"exit 2 without one 'yewpy: error:' line: {err[-400:]!r}"
        if paths and not any(lines[0].startswith(f"yewpy: error: {p}") for p in paths) and not flags:
            return "defect", f"the error does not name the file: {lines[0]!r}"
        return "refused", ""
    if code != 0:
        return "defect", f"exit status {code}: {err[-400:]!r}"
    try:
        result = json.loads(out.strip().splitlines()[-1])
    except (ValueError, IndexError):
        return "defect", f"exit 0 without a JSON result: {out[-300:]!r}"
    why = answer(result)
    return ("defect", why) if why else ("answered", "")


# -- the readers' cases ----------------------------------------------------------------------

DIMACS = ["johnson8-2-4.clq", "hamming6-2.clq", "MANN_a9.clq", "johnson8-4-4.clq", "hamming6-4.clq",
          "c-fat200-1.clq"]
KNAPSACK = ["f1_l-d_kp_10_269", "f3_l-d_kp_4_20", "f6_l-d_kp_10_60", "f7_l-d_kp_7_50", "f9_l-d_kp_5_80"]
LAD = [("g2", "g10"), ("g3", "g11"), ("g4", "g12"), ("g5", "g13"), ("g2", "g3")]


def tsp_bases() -> list[bytes]:
    """Small TSPLIB files cut from the real ones: burma14's first 8 cities (GEO), gr17's first 7
    (EXPLICIT LOWER_DIAG_ROW) and att48's first 6 (ATT)."""
    bases = []
    for name, n in (("burma14.tsp", 8), ("att48.tsp", 6)):
        text = (INSTANCES / "tsp" / name).read_text().splitlines()
        head, at = [], 0
        while text[at].strip() != "NODE_COORD_SECTION":
            line = text[at]
            head.append(f"DIMENSION: {n}" if line.split(":")[0].strip() == "DIMENSION" else line)
            at += 1
        keep = [line for line in head if line.split(":")[0].strip() != "DISPLAY_DATA_TYPE"]
        bases.append("\n".join([*keep, "NODE_COORD_SECTION", *text[at + 1:at + 1 + n], "EOF", ""]).encode())
    words = (INSTANCES / "tsp" / "gr17.tsp").read_text().split("EDGE_WEIGHT_SECTION")[1].split()
    numbers, rows = [w for w in words if w != "EOF"], []
    for i in range(7):
        rows.append(" ".join(numbers[i * (i + 1) // 2:(i + 1) * (i + 2) // 2]))
    head = ["NAME: gr17-7", "TYPE: TSP", "DIMENSION: 7", "EDGE_WEIGHT_TYPE: EXPLICIT",
            "EDGE_WEIGHT_FORMAT: LOWER_DIAG_ROW", "EDGE_WEIGHT_SECTION"]
    bases.append("\n".join([*head, *rows, "EOF", ""]).encode())
    return bases


def _verdict(oracle, *inputs):
    """The oracle's answer, or its refusal."""
    try:
        return oracle(*inputs)
    except Invalid as exc:
        return exc


def _same(key: str, expect):
    """A judge of the JSON result: yewpy's ``key`` must be the oracle's answer."""
    def answer(result: dict) -> str | None:
        if isinstance(expect, Invalid):
            return f"accepted; the oracle refuses it: {expect}"
        return None if result[key] == expect else f"{key} {result[key]}, oracle {expect}"
    return answer


def cases_dimacs(rng: random.Random, folder: Path, count: int):
    for k in range(count):
        name = rng.choice(DIMACS)
        data = mutate((INSTANCES / "clique" / name).read_bytes(), rng)
        zipped = k % 10 == 0
        path = folder / f"d{k}.clq{'.gz' if zipped else ''}"
        raw = gzip.compress(data) if zipped else data
        if zipped and k % 20 == 0:
            cut = rng.randrange(10, len(raw))
            raw = raw[:cut] + bytes([raw[cut] ^ 0x55]) + raw[cut + 1:]
        path.write_bytes(raw)
        try:
            expect = oracle_dimacs(gzip.decompress(raw) if zipped else data)
        except (Invalid, OSError, EOFError, gzip.BadGzipFile, ValueError) as exc:
            expect = exc if isinstance(exc, Invalid) else Invalid("gzip")
        except Exception as exc:     # zlib.error
            expect = Invalid(str(exc))
        argv = ["maxclique", str(path), "--json", "--quiet"]
        yield argv, [str(path)], expect, lambda r, e=expect: (
            None if r["objective"] == e else f"objective {r['objective']}, oracle {e}")


def cases_knapsack(rng: random.Random, folder: Path, count: int):
    for k in range(count):
        name = rng.choice(KNAPSACK)
        base = INSTANCES / "knapsack" / "low-dimensional" / name
        data = mutate(base.read_bytes(), rng) if k % 5 else base.read_bytes()
        opt = (base.parent / f"{name}.opt").read_bytes()
        path = folder / f"k{k}"
        path.write_bytes(data)
        if k % 5 == 0:                                  # the .opt file beside it goes wrong instead
            choice = rng.randrange(4)
            if choice == 0:
                (folder / f"k{k}.opt").mkdir()
                opt = None
            else:
                opt = [b"", b"\xff\xfe", b"12 13", mutate(opt, rng)][choice]
            if opt is not None:
                (folder / f"k{k}.opt").write_bytes(opt)
        else:
            (folder / f"k{k}.opt").write_bytes(opt)
        try:
            if opt is None:
                raise Invalid("a folder for .opt")
            expect = oracle_knapsack(data, opt)
        except Invalid as exc:
            expect = exc

        def answer(r, e=expect):
            if isinstance(e, Invalid):
                return f"accepted; oracle: {e}"
            best, profits, weights, capacity = e
            taken = r["solution"]
            if sum(weights[i] for i in taken) > capacity * (1 + 1e-12):
                return f"infeasible packing {taken}"
            if not math.isclose(sum(profits[i] for i in taken), r["objective"], rel_tol=1e-9, abs_tol=1e-9):
                return "objective is not the packing's profit"
            if not math.isclose(r["objective"], best, rel_tol=1e-9, abs_tol=1e-9):
                return f"objective {r['objective']}, oracle {best}"
            return None
        python = ["--python"] if k % 7 == 3 else []
        argv = ["knapsack", str(path), "--json", "--quiet", *python]
        yield argv, [str(path), f"{path}.opt"], expect, answer


def cases_tsp(rng: random.Random, folder: Path, count: int):
    bases = tsp_bases()
    for k in range(count):
        data = mutate(rng.choice(bases), rng)
        path = folder / f"t{k}.tsp"
        path.write_bytes(data)
        expect = _verdict(oracle_tsp, data)
        yield ["tsp", str(path), "--json", "--quiet"], [str(path)], expect, _same("objective", expect)


def cases_lad(rng: random.Random, folder: Path, count: int):
    for k in range(count):
        pattern_name, target_name = rng.choice(LAD)
        files = {}
        for role, name in (("p", pattern_name), ("t", target_name)):
            data = (INSTANCES / "sip" / "LV" / name).read_bytes()
            if (role == "p") == (k % 3 != 0):
                data = mutate(data, rng)
            files[role] = (folder / f"{role}{k}", data)
            files[role][0].write_bytes(data)
        expect = _verdict(lambda p, t: embeds(oracle_lad(p), oracle_lad(t)), files["p"][1], files["t"][1])
        yield (["sip", str(files["p"][0]), str(files["t"][0]), "--json", "--quiet"],
               [str(files["p"][0]), str(files["t"][0])], expect, _same("found", expect))


def cases_checkpoint(rng: random.Random, folder: Path, count: int):
    from yewpy.apps.nqueens import NQueens

    good = folder / "good.ckpt"
    NQueens(8).search(checkpoint=str(good), node_limit=300)
    data = good.read_bytes()
    for k in range(count):
        raw = bytearray(data)
        for _ in range(rng.randint(1, 3)):
            op, at = rng.randrange(3), rng.randrange(len(raw))
            if op == 0:
                raw[at] ^= 1 << rng.randrange(8)
            elif op == 1:
                del raw[at:]
            else:
                raw[at:at] = bytes([rng.randrange(256)])
        path = folder / f"c{k}.ckpt"
        path.write_bytes(bytes(raw))
        same = bytes(raw) == data
        yield (["nqueens", "8", "--json", "--quiet", "--resume", str(path)], [str(path)],
               None if same else Invalid("changed"),
               lambda r, same=same: None if same and (r["value"], r["status"]) == (92, "exhausted")
               else f"a changed checkpoint was resumed: {r['value']} {r['status']}")


# flags: the app, its exact answer key and value, and the arguments
FLAG_APPS = [(["nqueens", "7"], "value", 40, "max"),
             (["maxclique", str(INSTANCES / "clique" / "hamming6-4.clq")], "objective", 4, "max"),
             (["knapsack", str(INSTANCES / "knapsack" / "low-dimensional" / "f7_l-d_kp_7_50")], "objective",
              107, "max"),
             (["uts", "--uts-t", "1", "--uts-d", "5", "--uts-b", "3", "--uts-r", "19"], "value", None, "max")]
INT_FLAGS = ["-d", "-b", "--node-limit", "--window", "--decision", "--uts-d", "--uts-m", "--uts-r"]
FLOAT_FLAGS = ["--time-limit", "--checkpoint-every", "--progress-every", "--uts-b", "--uts-q", "--uts-f"]
CHOICES = [["--skeleton", "seq"], ["--skeleton", "depthbounded"], ["--skeleton", "budget"],
           ["--skeleton", "stacksteal"], ["--skeleton", "ordered"], ["--steal", "half"], ["--steal", "one"],
           ["--chunked"], ["--spawn-all"], ["--pool", "deque"], ["--discrepancy"], ["--no-prune-level"]]


VALID = {"seq": lambda rng: [],
         "depthbounded": lambda rng: ["-d", str(rng.randint(0, 4))],
         "budget": lambda rng: ["-b", str(rng.randint(1, 500)), *rng.choice([[], ["--spawn-all"]])],
         "stacksteal": lambda rng: rng.choice([[], ["--chunked"], ["--steal", "one"]]),
         "ordered": lambda rng: ["-d", str(rng.randint(1, 3)), *rng.choice([[], ["--discrepancy"]])]}


def cases_flags(rng: random.Random, folder: Path, count: int):
    for k in range(count):
        app, key, exact, _ = rng.choice(FLAG_APPS)
        argv = [*app, "--json", "--quiet"]
        skeleton = rng.choice(["seq", "depthbounded", "budget", "stacksteal", "ordered"])
        if k % 2:                                   # a valid setting first: answers get checked
            argv += ["--skeleton", skeleton, *VALID[skeleton](rng)]
            if rng.random() < 0.3:
                argv += rng.choice([["--node-limit", str(rng.randint(1, 3000))], ["--time-limit", "0.05"]])
        for _ in range(rng.randint(0 if k % 2 else 1, 2 if k % 2 else 4)):
            pick = rng.randrange(3)
            if pick == 0:
                argv += [rng.choice(INT_FLAGS), rng.choice(WEIRD[:14] + ["5", "64", "-5"])]
            elif pick == 1:
                seconds = rng.choice(["0", "-1", "nan", "inf", "1e-9", "0.5", "2", "1e9"])
                argv += [rng.choice(FLOAT_FLAGS), seconds]
            else:
                argv += rng.choice(CHOICES)
        if "--checkpoint-every" in argv and rng.random() < 0.5:
            argv += ["--checkpoint", str(folder / f"f{k}.ckpt")]

        if app[0] == "uts" and "--node-limit" not in argv:
            argv += ["--node-limit", "20000"]       # a weird -d or -b can make a tree of any size
        if app[0] == "uts":
            exact = _uts_exact(argv)

        def answer(r, key=key, exact=exact, argv=argv):
            if r["status"] in ("time_limit", "node_limit"):
                return None if exact is None or r[key] <= exact else f"stopped with {r[key]} > {exact}"
            if "--decision" in argv:
                return None if r["status"] in ("found", "exhausted") else f"status {r['status']}"
            if exact is None:
                return f"answered {r[key]} where the oracle knows no answer"
            return None if r[key] == exact else f"{key} {r[key]}, exact {exact}"
        yield argv, [], None, answer


def _uts_exact(argv: list[str]) -> int | None:
    """The node count of the UTS tree the flags name (the last of a repeated flag wins), by the
    Python oracle; None when it is not a plain number or the tree is large."""
    params = {"t": 1, "b": 4.0, "d": 6, "a": 0, "q": 15 / 64, "m": 4, "r": 0, "f": 0.5}
    for flag, value in zip(argv, argv[1:]):
        if flag.startswith("--uts-"):
            letter = flag[-1]
            try:
                params[letter] = float(value) if letter in "bqf" else int(value)
            except ValueError:
                return None                 # a name such as 'geometric', or a refused value
    p = params
    try:
        counted = uts_tree(p["t"], p["b"], p["d"], p["a"], p["q"], p["m"], p["r"], p["f"], limit=20000)
    except (ValueError, OverflowError, ZeroDivisionError):     # parameters yewpy refuses (nan, ...)
        return None
    return None if counted is None else counted[0]


READERS = {"dimacs": cases_dimacs, "knapsack": cases_knapsack, "tsp": cases_tsp, "lad": cases_lad,
           "checkpoint": cases_checkpoint, "flags": cases_flags}


def fuzz(reader: str, seed: int, count: int) -> dict:
    """Run ``count`` cases of one reader; the tally and every defect with its command line."""
    rng = random.Random(f"{reader}-{seed}")
    tally = {"cases": 0, "answered": 0, "refused": 0, "refused_valid": 0, "defects": []}
    with tempfile.TemporaryDirectory() as tmp:
        cases = READERS[reader](rng, Path(tmp), count)
        while True:                     # the watchdog covers making the case (the oracle) and running it
            faulthandler.dump_traceback_later(CASE_SECONDS, exit=True, file=sys.__stderr__)
            try:
                argv, paths, expect, answer = next(cases)
            except StopIteration:
                break
            verdict, why = judge(argv, paths, answer, flags=reader == "flags")
            faulthandler.cancel_dump_traceback_later()
            tally["cases"] += 1
            if verdict == "defect":
                tally["defects"].append({"argv": argv, "why": why,
                                         "input_sha1": hashlib.sha1(Path(paths[0]).read_bytes()).hexdigest()
                                         if paths and Path(paths[0]).is_file() else None})
                continue
            tally[verdict] += 1
            if verdict == "refused" and expect is not None and not isinstance(expect, Invalid):
                tally["refused_valid"] += 1      # yewpy stricter than the oracle's reader
                if reader == "dimacs":          # judged both ways: the same file, the same verdict
                    tally["defects"].append({"argv": argv, "why": "refused; the oracle accepts it"})
    return tally


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--cases", type=int, default=100, help="per reader")
    parser.add_argument("--reader", choices=sorted(READERS), action="append")
    opts = parser.parse_args()
    summary = {name: fuzz(name, opts.seed, opts.cases) for name in opts.reader or READERS}
    print(json.dumps(summary, indent=1))
    return 1 if any(t["defects"] for t in summary.values()) else 0


if __name__ == "__main__":
    raise SystemExit(main())
