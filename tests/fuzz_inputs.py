"""A seeded fuzzer for every input reader and every search flag of the ``yewpy`` command.

Each case mutates a real instance from shared/instances (or draws flag values), runs the CLI in
this process and judges the outcome against an independent oracle in this file:

- exit 0: the oracle must accept the input too and agree with the answer (networkx for cliques
  and subgraph isomorphism, a Pareto-front DP for knapsack, brute force for small TSPs, known
  counts for flags);
- exit 2: one line ``yewpy: error: ...`` naming the file (``usage: ...`` from argparse for flags);
- anything else (another status, a traceback, an exception, a hang) is a defect.

DIMACS is judged both ways: yewpy refuses a file exactly when the oracle's reader does, and so are
the DNN planner's model and cluster readers (``dnn-model``, ``dnn-cluster``: called in this process;
``dnn-cli``: whole ``yewpy dnn-plan`` runs as subprocesses).  A hang ends the process through
``faulthandler`` with the case on stderr.

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
import subprocess
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


# -- the DNN planner's model and cluster readers (apps/dnn) -------------------------------------
#
# load_model / load_cluster are called in this process: each case must give a Model or Cluster, or
# refuse with InputError (naming the file and a line inside it) or UsageError, on one line.  The
# oracle reads the same bytes with Python's json module under the documented rules (docs/dnn.md):
# no NaN/Infinity, no repeated key, at most 64 levels of nesting, numbers at most 2**53, at most
# 10,000 blocks, 8 cluster groups and 2**20 GPUs.  It counts parameters from the architecture,
# module by module as Hugging Face's modelling code builds them, less what the docs say is left
# out.  Judged both ways: a refused valid file is a defect too.  A few cases run the whole
# ``yewpy dnn-plan`` command as a subprocess.

DNN_MAX_NUMBER = 2 ** 53
DNN_MAX_BLOCKS = 10_000
DNN_MAX_GROUPS = 8
DNN_MAX_GPUS = 2 ** 20
DNN_MAX_DEPTH = 64
DNN_LAYER_KEYS = ("num_hidden_layers", "n_layer", "num_layers", "num_decoder_layers")
# preset -> (GPUs per node, GiB per GPU), the datasheet numbers of docs/dnn.md
DNN_PRESETS = {"dgx-a100-80g": (8, 80), "dgx-a100-40g": (8, 40), "dgx-h100-80g": (8, 80),
               "dgx-v100-32g": (8, 32), "dgx-v100-16g": (8, 16), "p3.16xlarge": (8, 16),
               "rtx-titan-24g": (8, 24)}
DNN_FAMILIES = ("llama", "mistral", "mixtral", "qwen2", "gpt2", "gpt_neox", "falcon", "t5")
ARCHITECTURES = {"llama": "LlamaForCausalLM", "mistral": "MistralForCausalLM",
                 "mixtral": "MixtralForCausalLM", "qwen2": "Qwen2ForCausalLM", "gpt2": "GPT2LMHeadModel",
                 "gpt_neox": "GPTNeoXForCausalLM", "falcon": "FalconForCausalLM",
                 "t5": "T5ForConditionalGeneration"}


class Raw(str):
    """Text written into a JSON file as it is: NaN, Infinity, 1e999, a 120-digit number."""


def dump(value, indent: int = 0) -> str:
    """JSON text with one object member per line (so that errors have lines to name); Raw as is."""
    if isinstance(value, Raw):
        return str(value)
    if isinstance(value, dict):
        if not value:
            return "{}"
        pad = "  " * (indent + 1)
        body = ",\n".join(f"{pad}{json.dumps(k)}: {dump(v, indent + 1)}" for k, v in value.items())
        return "{\n" + body + "\n" + "  " * indent + "}"
    if isinstance(value, list):
        return "[" + ", ".join(dump(v, indent + 1) for v in value) + "]"
    return json.dumps(value)


WEIRD_JSON = [Raw("NaN"), Raw("Infinity"), Raw("-Infinity"), Raw("1e999"), Raw("1" * 120), Raw("1\u0663"),
              1e308, 2 ** 63, 2 ** 53 + 1, 2 ** 31, 10 ** 5, -1, 0, -0.0, 1.5, 1e-300, "8", "", True, False,
              None, [], {}, [8]]
UNKNOWN_KEYS = ["colour", "hidden", "layers", "preset", "nodes", "seq", "model_type", "transformer", "blocks",
                "groups", "bf16", "num_key_value_heads", "head_dim", "repeat", "tied", "params"]


def _slots(value, out: list) -> list:
    """Every (container, key or index) pair in a parsed document, depth first."""
    items = value.items() if isinstance(value, dict) else enumerate(value) if isinstance(value, list) else ()
    for key, item in list(items):
        out.append((value, key))
        _slots(item, out)
    return out


def _nest(value, depth: int, as_list: bool) -> Raw:
    """``value`` inside ``depth`` arrays or objects, as text (deep documents would recurse here)."""
    inner = dump(value).replace("\n", " ")
    opening, closing = ("[", "]") if as_list else ('{"a": ', "}")
    return Raw(opening * depth + inner + closing * depth)


def mutate_doc(doc, rng: random.Random):
    """One to three edits of a parsed JSON document: an awkward value, a plausible other number,
    a key dropped or added, a container turned into the other kind, deep nesting, another top."""
    for _ in range(rng.randint(1, 3)):
        slots = _slots(doc, [])
        op = rng.randrange(10)
        if op == 9 or not slots:
            doc = rng.choice([[], "model", 5, None, [doc], {}, {"groups": []}])
            continue
        box, key = rng.choice(slots)
        value = box[key]
        numbers = [(b, k) for b, k in slots if isinstance(b[k], (int, float)) and not isinstance(b[k], bool)]
        if op in (0, 1, 2):
            box[key] = rng.choice(WEIRD_JSON)
        elif op in (3, 4) and numbers:                  # another plausible number: often still valid
            b, k = rng.choice(numbers)
            x = b[k]
            x = x * rng.choice([0.5, 2, 3, 1000]) if rng.random() < 0.5 else x + rng.choice([-2, -1, 1, 7])
            if math.isfinite(x):                        # (1e308 * 1000 is not a number a file can hold)
                b[k] = int(x) if isinstance(b[k], int) or rng.random() < 0.5 else x
        elif op == 5:
            del box[key]
        elif op == 6:
            target = rng.choice([b for b, _ in slots if isinstance(b, dict)] or [doc])
            if isinstance(target, dict):
                target[rng.choice(UNKNOWN_KEYS)] = rng.choice([1, 8, "x", None, True, 2 ** 63])
        elif op == 7 and isinstance(value, (dict, list)):
            box[key] = (list(value.values()) if isinstance(value, dict)
                        else {str(i): v for i, v in enumerate(value)})
        elif op == 8:
            box[key] = _nest(value, rng.choice([70, 200, 3000]), rng.random() < 0.5)
    return doc


def mutate_json_text(text: str, rng: random.Random) -> bytes:
    """Byte-level damage to a dumped document: a repeated member, a cut, a stray byte, a BOM,
    an empty file, trailing garbage."""
    lines = text.split("\n")
    op = rng.randrange(6)
    if op == 0:                                         # a member line repeated, maybe with another value
        members = [i for i, line in enumerate(lines) if re.match(r'\s*"[^"]*": [^{\[]*$', line)]
        if members:
            i = rng.choice(members)
            copy = lines[i].rstrip(",")
            if rng.random() < 0.5:
                copy = copy.split(": ")[0] + ": " + rng.choice(["1", "true", '"x"', "4096"])
            lines.insert(i, copy + ",")
        return "\n".join(lines).encode()
    data = text.encode()
    if op == 1:
        return data[:rng.randrange(len(data) + 1)]
    if op == 2:
        at = rng.randrange(len(data) + 1)
        return data[:at] + bytes([rng.choice([0xFF, 0xC3, 0xE9, 0x00, 0x0D, 0x09, 0x80])]) + data[at:]
    if op == 3:
        return b"\xef\xbb\xbf" + data
    if op == 4:
        return rng.choice([b"", b"   \n", b"\n\n"])
    return data + rng.choice([b"}", b"x", b"\n,", b" null"])


def strict_json(data: bytes):
    """The document, or Invalid: UTF-8 JSON (RFC 8259: no NaN or Infinity) with no repeated key,
    no number literal longer than 100 characters and at most DNN_MAX_DEPTH levels of nesting."""
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        raise Invalid("not UTF-8") from None

    def pairs(items):
        if len({k for k, _ in items}) < len(items):
            raise Invalid("a repeated key")
        return dict(items)

    def number(kind):
        def parse(literal: str):
            if len(literal) > 100:
                raise Invalid("a number literal over 100 characters")
            return kind(literal)
        return parse

    def constant(name: str):
        raise Invalid(name)

    def depth(value) -> int:
        inner = value.values() if isinstance(value, dict) else value if isinstance(value, list) else None
        return 0 if inner is None else 1 + max(map(depth, inner), default=0)

    try:
        doc = json.loads(text, object_pairs_hook=pairs, parse_constant=constant, parse_int=number(int),
                         parse_float=number(float))
        if depth(doc) > DNN_MAX_DEPTH:
            raise Invalid("nested too deep")
    except (ValueError, RecursionError) as exc:         # json.JSONDecodeError is a ValueError
        raise Invalid(f"JSON: {exc}") from None
    return doc


def _number(value, low: float = 0, high: float = DNN_MAX_NUMBER, integer: bool = False):
    """A JSON number in [low, high] (integral if ``integer``; 4.0 counts), or Invalid."""
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        raise Invalid(f"not a finite number: {value!r}")
    if not low <= value <= high or (integer and value != int(value)):
        raise Invalid(f"out of range: {value!r}")
    return int(value) if integer else value


def _only(obj, allowed, what: str) -> dict:
    if not isinstance(obj, dict) or set(obj) - set(allowed):
        raise Invalid(f"{what}: not an object of {sorted(allowed)}")
    return obj


BLOCK_NUMBERS = ("params", "flops_per_token", "flops_per_token_sq", "act_replicated", "act_sharded",
                 "act_attention", "boundary", "expert_params", "a2a")


def oracle_blocks(doc: dict) -> tuple[float, int, int]:
    """yewpy's block list: (parameters, sequence length, blocks), the parameters being each
    untied block's params times its repeat."""
    _only(doc, ("name", "seq", "blocks"), "model")
    seq = _number(doc.get("seq"), 1, integer=True)
    blocks = doc.get("blocks")
    if not isinstance(blocks, list) or not blocks:
        raise Invalid("blocks")
    params, count, computes = 0.0, 0, False
    for block in blocks:
        _only(block, (*BLOCK_NUMBERS, "tp_allreduces", "experts", "name", "tied", "repeat"), "block")
        if any(key not in block for key in ("params", "flops_per_token", "boundary")):
            raise Invalid("a required block field is missing")
        values = {key: _number(block[key]) for key in BLOCK_NUMBERS if key in block}
        for key in ("tp_allreduces", "experts"):
            if key in block:
                _number(block[key], integer=True)
        if not isinstance(block.get("name", ""), str) or not isinstance(block.get("tied", False), bool):
            raise Invalid("name or tied")
        experts_hold = values.get("expert_params", 0)   # a part of params, shared by the experts
        if experts_hold > values["params"] or (experts_hold and not block.get("experts", 0)):
            raise Invalid("expert_params above params, or without experts")
        repeat = _number(block.get("repeat", 1), 1, DNN_MAX_BLOCKS, integer=True)
        count += repeat
        if count > DNN_MAX_BLOCKS:
            raise Invalid("too many blocks")
        params += 0 if block.get("tied", False) else repeat * values["params"]
        computes |= values["flops_per_token"] > 0 or values.get("flops_per_token_sq", 0) > 0
    if not computes:
        raise Invalid("no block has FLOPs")
    return params, seq, count


TRANSFORMER_INTS = ("layers", "hidden", "heads", "vocab", "seq", "ffn", "kv_heads", "head_dim", "experts",
                    "top_k", "decoder_layers", "classes", "patch_params")
TRANSFORMER_FLAGS = {"swiglu": False, "bias": True, "tied": True, "positions": True}


def oracle_transformer(spec) -> tuple[float, int, int]:
    """The ``{"transformer": {...}}`` form, counted as the architecture it names: per layer the
    q, k, v, o projections (k and v of kv_heads groups), the MLP (a gate matrix with SwiGLU;
    ``experts`` copies and an h x E router for MoE), two norms (LayerNorm weight and bias, or
    RMSNorm weight without biases); decoder layers add cross-attention and its norm (2h, as the docs
    count T5's); token and position embeddings, patch_params, and an untied head or a classifier."""
    _only(spec, (*TRANSFORMER_INTS, *TRANSFORMER_FLAGS), "transformer")
    if any(key not in spec for key in ("layers", "hidden", "heads", "vocab", "seq")):
        raise Invalid("a required transformer key is missing")
    v = {key: _number(spec[key], 0, DNN_MAX_BLOCKS if key in ("layers", "decoder_layers") else DNN_MAX_NUMBER,
                      integer=True) for key in TRANSFORMER_INTS if key in spec}
    if any(not isinstance(spec[key], bool) for key in TRANSFORMER_FLAGS if key in spec):
        raise Invalid("a flag is not true or false")
    flag = {key: spec.get(key, default) for key, default in TRANSFORMER_FLAGS.items()}
    L, h, heads, V, s = (v[key] for key in ("layers", "hidden", "heads", "vocab", "seq"))
    if min(L, h, heads, s) < 1 or v.get("head_dim", 1) < 1 or ("head_dim" not in v and h % heads):
        raise Invalid("shape")
    kv, experts, top_k = v.get("kv_heads", heads), v.get("experts", 0), v.get("top_k", 2)
    if kv < 1 or heads % kv or top_k < 1 or (experts and top_k > experts):
        raise Invalid("heads or experts")
    D = v.get("decoder_layers", 0)
    if L + D + 2 > DNN_MAX_BLOCKS:
        raise Invalid("too many blocks")
    f, bias = v.get("ffn", 4 * h), flag["bias"]
    q = heads * v["head_dim"] if "head_dim" in v else h
    kvd = q * kv // heads
    attention = h * q + 2 * h * kvd + q * h + (q + 2 * kvd + h if bias else 0)
    mlp = (3 if flag["swiglu"] else 2) * h * f + (f + h if bias else 0)
    if experts:
        mlp = experts * mlp + h * experts
    norm = 2 * h if bias else h
    layer = attention + mlp + 2 * norm
    embedding = V * h + (s * h if flag["positions"] else 0) + v.get("patch_params", 0)
    classes = v.get("classes", 0)
    head = h * classes + 2 * h if classes else 0 if flag["tied"] else V * h
    return L * layer + D * (layer + attention + 2 * h) + embedding + head, s, L + D + 2


def _hf_int(doc: dict, *names: str, default: int | None = None) -> int:
    """The first of ``names`` that is not null: a positive integer (layer counts at most 10,000)."""
    for name in names:
        if doc.get(name) is not None:
            value = doc[name]
            high = DNN_MAX_BLOCKS if name in DNN_LAYER_KEYS else DNN_MAX_NUMBER
            if type(value) is not int or not 1 <= value <= high:
                raise Invalid(f"{name}: {value!r}")
            return value
    if default is None:
        raise Invalid(f"no {names[0]}")
    return default


def _hf_flag(doc: dict, name: str, default):
    value = doc.get(name)
    if value is None:
        return default
    if type(value) is not type(default):
        raise Invalid(f"{name}: {value!r}")
    return value


def _hf_llama(doc: dict, family: str) -> tuple[int, int, int]:
    """LlamaForCausalLM and its kin: q/k/v/o projections (biases: llama's attention_bias, qwen2's
    q/k/v), gate/up/down (mixtral: E experts and a router), two RMSNorms; embeddings and lm_head."""
    h, heads = _hf_int(doc, "hidden_size"), _hf_int(doc, "num_attention_heads")
    head_dim = _hf_int(doc, "head_dim", default=0)
    if not head_dim and h % heads:
        raise Invalid("heads do not divide hidden")
    L, f, V = _hf_int(doc, "num_hidden_layers"), _hf_int(doc, "intermediate_size"), _hf_int(doc, "vocab_size")
    kv = _hf_int(doc, "num_key_value_heads", default=heads)
    if heads % kv:
        raise Invalid("kv heads")
    seq = _hf_int(doc, "max_position_embeddings",
                  default={"llama": 2048, "mistral": 131072, "mixtral": 131072, "qwen2": 32768}[family])
    tied = _hf_flag(doc, "tie_word_embeddings", False)
    d = head_dim or h // heads
    q, kvd = heads * d, kv * d
    attention = h * q + 2 * h * kvd + q * h
    mlp = 3 * h * f
    if family == "llama":
        attention += q + 2 * kvd + h if _hf_flag(doc, "attention_bias", False) else 0
        mlp += 2 * f + h if _hf_flag(doc, "mlp_bias", False) else 0
    if family == "qwen2":
        attention += q + 2 * kvd
    if family == "mixtral":
        experts = _hf_int(doc, "num_local_experts", default=8)
        top_k = _hf_int(doc, "num_experts_per_tok", default=2)
        if top_k > experts:
            raise Invalid("top-k")
        mlp = experts * mlp + h * experts
    final_norm = h
    exact = L * (attention + mlp + 2 * h) + final_norm + V * h * (1 if tied else 2)
    return exact - final_norm, seq, L + 2          # the final norm is left out (docs)


def _hf_gpt2(doc: dict) -> tuple[int, int, int]:
    """GPT2LMHeadModel: wte, wpe; per layer ln_1, c_attn (3h), c_proj, ln_2, c_fc, c_proj; ln_f."""
    h = _hf_int(doc, "n_embd", "hidden_size")
    heads = _hf_int(doc, "n_head", "num_attention_heads")
    if h % heads:
        raise Invalid("heads do not divide hidden")
    L, V = _hf_int(doc, "n_layer", "num_hidden_layers"), _hf_int(doc, "vocab_size")
    f = _hf_int(doc, "n_inner", default=4 * h)
    seq = _hf_int(doc, "n_positions", "n_ctx", "max_position_embeddings", default=1024)
    tied = _hf_flag(doc, "tie_word_embeddings", True)
    layer = 2 * h + (3 * h * h + 3 * h) + (h * h + h) + 2 * h + (h * f + f) + (f * h + h)
    exact = V * h + seq * h + L * layer + 2 * h + (0 if tied else V * h)
    return exact - 2 * h, seq, L + 2


def _hf_gpt_neox(doc: dict) -> tuple[int, int, int]:
    """GPTNeoXForCausalLM: embed_in; per layer two LayerNorms, query_key_value and dense (biases
    unless attention_bias is false), dense_h_to_4h and dense_4h_to_h; final_layer_norm; embed_out."""
    h, heads = _hf_int(doc, "hidden_size"), _hf_int(doc, "num_attention_heads")
    if h % heads:
        raise Invalid("heads do not divide hidden")
    L, f, V = _hf_int(doc, "num_hidden_layers"), _hf_int(doc, "intermediate_size"), _hf_int(doc, "vocab_size")
    seq = _hf_int(doc, "max_position_embeddings", default=2048)
    tied = _hf_flag(doc, "tie_word_embeddings", False)
    biased = _hf_flag(doc, "attention_bias", True)
    layer = 4 * h + 3 * h * h + h * h + (4 * h if biased else 0) + (h * f + f) + (f * h + h)
    exact = V * h + L * layer + 2 * h + (0 if tied else V * h)
    return exact - 2 * h, seq, L + 2


def _hf_falcon(doc: dict) -> tuple[int, int, int]:
    """FalconForCausalLM as transformers builds it: query_key_value of (heads + 2 kv) head widths
    (new architecture: num_kv_heads; old: 1 with multi_query, else all heads), dense, the MLP;
    LayerNorms: two without parallel_attn or with num_ln_in_parallel_attn = 2, else one; ln_f."""
    h = _hf_int(doc, "hidden_size", "n_embed")
    heads = _hf_int(doc, "num_attention_heads", "n_head")
    if h % heads:
        raise Invalid("heads do not divide hidden")
    new = _hf_flag(doc, "new_decoder_architecture", False)
    multi_query = _hf_flag(doc, "multi_query", True)
    if new:
        kv = _hf_int(doc, "num_kv_heads", "n_head_kv", default=heads)
        if heads % kv:
            raise Invalid("kv heads")
    else:
        kv = 1 if multi_query else heads
    bias = _hf_flag(doc, "bias", False)
    _hf_flag(doc, "alibi", False)
    lns = _hf_int(doc, "num_ln_in_parallel_attn", default=2 if new else 1)
    if lns > 2:
        raise Invalid("num_ln_in_parallel_attn")
    norms = 2 if lns == 2 or not _hf_flag(doc, "parallel_attn", True) else 1
    L, V = _hf_int(doc, "num_hidden_layers", "n_layer"), _hf_int(doc, "vocab_size")
    f = _hf_int(doc, "ffn_hidden_size", default=4 * h)
    seq = _hf_int(doc, "max_position_embeddings", default=2048)
    tied = _hf_flag(doc, "tie_word_embeddings", True)
    d = h // heads
    qkv = h * (heads + 2 * kv) * d + ((heads + 2 * kv) * d if bias else 0)
    layer = qkv + h * h + (h if bias else 0) + 2 * h * f + (f + h if bias else 0) + norms * 2 * h
    exact = V * h + L * layer + 2 * h + (0 if tied else V * h)
    return exact - 2 * h, seq, L + 2


def _hf_t5(doc: dict) -> tuple[int, int, int]:
    """T5ForConditionalGeneration: shared embedding; encoder layers of self-attention (q, k, v, o of
    heads x d_kv), the FFN (wi_0 and wi_1 when gated) and two RMSNorms; decoder layers add
    cross-attention and a third norm; relative-position tables in the first layer of each stack;
    two final norms.  The docs leave out the tables and the final norms, and count the cross-attention
    norm as 2h."""
    L = _hf_int(doc, "num_layers", "num_hidden_layers")
    proj = _hf_flag(doc, "feed_forward_proj", "relu")
    D = _hf_int(doc, "num_decoder_layers", default=L)
    d, heads = _hf_int(doc, "d_model", "hidden_size"), _hf_int(doc, "num_heads", "num_attention_heads")
    d_kv, f = _hf_int(doc, "d_kv", "head_dim", default=64), _hf_int(doc, "d_ff")
    V = _hf_int(doc, "vocab_size")
    seq = _hf_int(doc, "n_positions", "max_position_embeddings", default=512)
    tied = _hf_flag(doc, "tie_word_embeddings", True)
    attention = 4 * d * heads * d_kv
    ffn = (3 if proj.startswith("gated-") else 2) * d * f
    tables = 2 * 32 * heads                            # relative_attention_num_buckets (32) x heads, twice
    exact = V * d + L * (attention + d + ffn + d) + D * (2 * (attention + d) + ffn + d) + tables + 2 * d
    exact += 0 if tied else V * d
    return exact - tables - 2 * d + D * d, seq, L + D + 2


def oracle_hf(doc: dict) -> tuple[int, int, int]:
    """A Hugging Face config.json: the family from "model_type" (or the first of "architectures"),
    then its count."""
    if "model_type" in doc:
        family = doc["model_type"]
        if family not in DNN_FAMILIES:
            raise Invalid(f"model_type {family!r}")
    else:
        archs = doc.get("architectures")
        first = archs[0] if isinstance(archs, list) and archs and isinstance(archs[0], str) else ""
        prefixes = {"LlamaFor": "llama", "MistralFor": "mistral", "MixtralFor": "mixtral",
                    "Qwen2For": "qwen2", "GPT2": "gpt2", "GPTNeoXFor": "gpt_neox", "FalconFor": "falcon",
                    "T5": "t5"}
        family = next((f for prefix, f in prefixes.items() if first.startswith(prefix)), None)
        if family is None:
            raise Invalid(f"architectures {archs!r}")
    if family in ("llama", "mistral", "mixtral", "qwen2"):
        return _hf_llama(doc, family)
    return {"gpt2": _hf_gpt2, "gpt_neox": _hf_gpt_neox, "falcon": _hf_falcon, "t5": _hf_t5}[family](doc)


def oracle_model(data: bytes) -> tuple[float, int, int]:
    """(parameters, sequence length, blocks) of a model file, or Invalid."""
    doc = strict_json(data)
    if isinstance(doc, dict) and ("model_type" in doc or "architectures" in doc):
        counted = oracle_hf(doc)
    else:
        _only(doc, ("name", "seq", "blocks", "transformer"), "model")
        if not isinstance(doc.get("name", ""), str):
            raise Invalid("name")
        if "transformer" in doc:
            _only(doc, ("name", "transformer"), "model")
            counted = oracle_transformer(doc["transformer"])
        else:
            counted = oracle_blocks(doc)
    if counted[0] > DNN_MAX_NUMBER:
        raise Invalid("more than 2**53 parameters")
    return counted


# docs/dnn.md, "Inputs": sizes from 1e-3 (GiB, TFLOP/s, GB/s) to 1e6 GiB and 1e7 TFLOP/s or GB/s;
# latencies from 0 to 1e7 us
DNN_GROUP_RANGES = {"memory_gib": (1e-3, 1e6), "peak_tflops": (1e-3, 1e7), "hbm_gbps": (1e-3, 1e7),
                    "intra_gbps": (1e-3, 1e7), "inter_gbps": (1e-3, 1e7), "intra_latency_us": (0, 1e7),
                    "inter_latency_us": (0, 1e7)}
CLUSTER_NUMBERS = ("nodes", "gpus_per_node", "memory_gib", "peak_tflops", "hbm_gbps", "intra_gbps",
                   "inter_gbps", "intra_latency_us", "inter_latency_us")


def _cluster_size(groups: list) -> list:
    if len(groups) > DNN_MAX_GROUPS or sum(n * g for n, g, _ in groups) > DNN_MAX_GPUS:
        raise Invalid("too many groups or GPUs")
    return groups


def oracle_cluster_file(data: bytes) -> list[tuple[int, int, float]]:
    """A cluster JSON file: (nodes, GPUs per node, GiB per GPU) of each group, or Invalid."""
    doc = strict_json(data)
    _only(doc, ("groups", "links"), "cluster")
    if not isinstance(doc.get("groups"), list) or not doc["groups"]:
        raise Invalid("groups")
    groups = []
    for group in doc["groups"]:
        _only(group, (*CLUSTER_NUMBERS, "name", "preset", "bf16", "site"), "group")
        if not isinstance(group.get("site", ""), str):
            raise Invalid("site")
        if "preset" in group and not (isinstance(group["preset"], str) and group["preset"] in DNN_PRESETS):
            raise Invalid("preset")
        if not isinstance(group.get("name", ""), str) or not isinstance(group.get("bf16", True), bool):
            raise Invalid("name or bf16")
        for key in CLUSTER_NUMBERS:
            if key not in group:
                if "preset" not in group:
                    raise Invalid(f"no {key}")
                continue
            counts = key in ("nodes", "gpus_per_node")
            low, high = (0, DNN_MAX_GPUS) if counts else DNN_GROUP_RANGES[key]
            value = _number(group[key], low, high, integer=counts)
            if value <= 0 and not key.endswith("latency_us"):
                raise Invalid(f"{key} is not positive")
        gpus, memory = DNN_PRESETS.get(group.get("preset"), (None, None))
        if gpus is not None and group.get("gpus_per_node", gpus) > gpus:
            raise Invalid("more GPUs per node than the preset's node")
        groups.append((int(group.get("nodes", 1)), int(group.get("gpus_per_node", gpus)),
                       group.get("memory_gib", memory)))
        _cluster_size(groups)
    _oracle_links(doc.get("links", []), {group.get("site", "") for group in doc["groups"]})
    return groups


def _oracle_links(links: object, sites: set) -> None:
    """Wide-area links: one object per pair of sites the groups name, each with two different known
    sites, a positive ``mbps`` up to 1e9 and a ``latency_ms`` of at least 0; every pair covered."""
    if not isinstance(links, list):
        raise Invalid("links")
    seen = set()
    for link in links:
        _only(link, ("sites", "mbps", "latency_ms"), "link")
        pair = link.get("sites")
        known = isinstance(pair, list) and all(isinstance(x, str) and x in sites for x in pair)
        if not (known and len(pair) == 2 and pair[0] != pair[1]) or frozenset(pair) in seen:
            raise Invalid("link sites")
        seen.add(frozenset(pair))
        if "mbps" not in link:
            raise Invalid("mbps")
        _number(link["mbps"], 1e-3, 1e9)
        if "latency_ms" in link:
            _number(link["latency_ms"], 0, 1e5)
    if any(frozenset((a, b)) not in seen for a in sites for b in sites if a < b):
        raise Invalid("a pair of sites without a link")


def oracle_cluster_spec(spec: str) -> list[tuple[int, int, float]]:
    """``PRESET[:NODESxGPUS]`` groups joined by '+' (ASCII digits, GPUs at most the preset node's)."""
    groups = []
    for part in spec.split("+"):
        m = re.fullmatch(r"([A-Za-z0-9_.\-]+?)(?::([0-9]+)x([0-9]+))?", part.strip())
        if not m or m.group(1) not in DNN_PRESETS:
            raise Invalid(f"group {part!r}")
        per_node, memory = DNN_PRESETS[m.group(1)]
        if len(m.group(2) or "") > 9 or len(m.group(3) or "") > 9:
            raise Invalid("too many GPUs")
        nodes, gpus = int(m.group(2) or 1), int(m.group(3) or per_node)
        if nodes < 1 or not 1 <= gpus <= per_node:
            raise Invalid(f"group {part!r}")
        groups.append((nodes, gpus, memory))
        _cluster_size(groups)
    return groups


# -- valid documents to start from

def model_block_doc(rng: random.Random) -> dict:
    blocks = []
    for i in range(rng.randint(1, 4)):
        block = {"name": rng.choice(["embedding", "layer", "head", f"b{i}"]),
                 "params": rng.choice([rng.randint(0, 10 ** 7), round(rng.uniform(0, 1e6), 3)]),
                 "flops_per_token": rng.choice([0, rng.randint(1, 10 ** 8), round(rng.uniform(1, 1e6), 2)]),
                 "boundary": rng.randint(1, 8192)}
        for key in rng.sample(["flops_per_token_sq", "act_replicated", "act_sharded", "act_attention",
                               "expert_params", "a2a"], rng.randint(0, 3)):
            block[key] = rng.choice([0, rng.randint(1, 10 ** 5), round(rng.uniform(0, 100), 2)])
        for key in rng.sample(["tp_allreduces", "experts", "repeat", "tied"], rng.randint(0, 2)):
            block[key] = rng.random() < 0.3 if key == "tied" else rng.randint(1, 4)
        blocks.append(block)
    blocks[0]["flops_per_token"] = rng.randint(1, 10 ** 6)     # something to plan
    blocks[0].pop("tied", None)
    doc = {"name": "fuzzed", "seq": rng.choice([1, 16, 512, 2048]), "blocks": blocks}
    if rng.random() < 0.3:
        del doc["name"]
    return doc


def model_transformer_doc(rng: random.Random) -> dict:
    heads = rng.choice([1, 2, 4, 8])
    spec = {"layers": rng.randint(1, 4), "hidden": heads * rng.choice([4, 8, 16]), "heads": heads,
            "vocab": rng.choice([0, 16, 1000, 32000]), "seq": rng.choice([8, 64, 1024])}
    for key in rng.sample(["ffn", "kv_heads", "head_dim", "swiglu", "bias", "tied", "positions", "experts",
                           "decoder_layers", "classes", "patch_params"], rng.randint(0, 4)):
        spec[key] = {"ffn": rng.randint(0, 256),
                     "kv_heads": rng.choice([d for d in (1, 2, 4, 8) if heads % d == 0]),
                     "head_dim": rng.choice([4, 8, 12]), "experts": rng.randint(2, 4),
                     "decoder_layers": rng.randint(0, 2), "classes": rng.randint(0, 10),
                     "patch_params": rng.randint(0, 1000)}.get(key, rng.random() < 0.5)
    if "experts" in spec and rng.random() < 0.5:
        spec["top_k"] = rng.randint(1, spec["experts"])
    doc = {"transformer": spec}
    if rng.random() < 0.5:
        doc = {"name": "t", **doc}
    return doc


def model_hf_doc(rng: random.Random, family: str) -> dict:
    """A small config.json of ``family``, with the optional keys the reader knows, sometimes null."""
    heads = rng.choice([1, 2, 4, 8])
    h, L, V = heads * rng.choice([4, 8, 16]), rng.randint(1, 4), rng.choice([16, 100, 1000])
    f = rng.choice([4 * h, 3 * h + 8, 40])
    kv = rng.choice([d for d in (1, 2, 4, 8) if heads % d == 0])
    if family in ("llama", "mistral", "mixtral", "qwen2"):
        doc = {"hidden_size": h, "num_hidden_layers": L, "num_attention_heads": heads, "intermediate_size": f,
               "vocab_size": V}
        optional = {"num_key_value_heads": kv, "head_dim": rng.choice([4, 8, 12, None]),
                    "max_position_embeddings": rng.choice([512, 4096]),
                    "tie_word_embeddings": rng.random() < 0.5}
        if family == "llama":
            optional.update(attention_bias=rng.random() < 0.5, mlp_bias=rng.random() < 0.5)
        if family == "mixtral":
            experts = rng.randint(2, 8)
            optional.update(num_local_experts=experts, num_experts_per_tok=rng.randint(1, experts))
    elif family == "gpt2":
        doc = {"n_embd": h, "n_layer": L, "n_head": heads, "vocab_size": V}
        optional = {"n_inner": rng.choice([f, None]), "n_positions": rng.choice([128, 1024]), "n_ctx": 256,
                    "tie_word_embeddings": rng.random() < 0.5}
    elif family == "gpt_neox":
        doc = {"hidden_size": h, "num_hidden_layers": L, "num_attention_heads": heads, "intermediate_size": f,
               "vocab_size": V}
        optional = {"max_position_embeddings": 2048, "attention_bias": rng.random() < 0.5,
                    "tie_word_embeddings": rng.random() < 0.5, "rotary_pct": 0.25,
                    "use_parallel_residual": True}
    elif family == "falcon":
        doc = {"hidden_size": h, "num_hidden_layers": L, "num_attention_heads": heads, "vocab_size": V}
        new = rng.random() < 0.5
        optional = {"new_decoder_architecture": new, "multi_query": rng.random() < 0.7,
                    "ffn_hidden_size": f, "bias": rng.random() < 0.5, "parallel_attn": rng.random() < 0.7,
                    "alibi": False, "num_ln_in_parallel_attn": rng.choice([1, 2, None]),
                    "tie_word_embeddings": rng.random() < 0.5, "max_position_embeddings": 2048}
        if new or rng.random() < 0.3:
            optional["num_kv_heads"] = kv
    else:
        doc = {"d_model": h, "num_layers": L, "num_heads": heads, "d_ff": f, "vocab_size": V}
        optional = {"num_decoder_layers": rng.randint(1, 4), "d_kv": rng.choice([4, 8, 64]),
                    "feed_forward_proj": rng.choice(["relu", "gated-gelu", "gelu"]), "n_positions": 512,
                    "tie_word_embeddings": rng.random() < 0.5, "relative_attention_num_buckets": 32}
    for key in rng.sample(sorted(optional), rng.randint(0, len(optional))):
        doc[key] = optional[key] if rng.random() < 0.85 else None
    head = {"model_type": family, "architectures": [ARCHITECTURES[family]]}
    if rng.random() < 0.15:
        del head["model_type"]
    elif rng.random() < 0.3:
        del head["architectures"]
    noise = {"torch_dtype": "bfloat16", "rms_norm_eps": 1e-05, "rope_scaling": None,
             "transformers_version": "4.40"}
    extra = dict(rng.sample(sorted(noise.items()), rng.randint(0, 3)))
    return {"_name_or_path": f"fuzz/{family}", **head, **doc, **extra}


def model_doc(rng: random.Random, form: str):
    if form == "blocks":
        return model_block_doc(rng)
    if form == "transformer":
        return model_transformer_doc(rng)
    return model_hf_doc(rng, form)


def cluster_doc(rng: random.Random) -> dict:
    groups = []
    for _ in range(rng.randint(1, 3)):
        if rng.random() < 0.7:
            group = {"preset": rng.choice(sorted(DNN_PRESETS)), "nodes": rng.randint(1, 4)}
            extras = ["gpus_per_node", "memory_gib", "inter_gbps", "name", "bf16"]
            for key in rng.sample(extras, rng.randint(0, 2)):
                group[key] = {"gpus_per_node": rng.choice([1, 2, 4, 8, 16]),
                              "memory_gib": rng.choice([16, 40, 80.5]),
                              "inter_gbps": 12.5, "name": "g"}.get(key, rng.random() < 0.5)
        else:
            group = {"name": "custom", "nodes": rng.randint(1, 4), "gpus_per_node": rng.choice([1, 4, 8, 16]),
                     "memory_gib": rng.choice([24, 32, 80]), "peak_tflops": rng.choice([125, 312.5]),
                     "hbm_gbps": 900, "intra_gbps": 150, "inter_gbps": 12.5,
                     "intra_latency_us": rng.choice([0, 5]), "inter_latency_us": 15}
        groups.append(group)
    if rng.random() < 0.4:  # sites joined by wide-area links
        names = ["hk", "sz", "gz"][:len(groups)]
        for group in groups:
            group["site"] = rng.choice(names)
        used = sorted({group["site"] for group in groups})
        links = [{"sites": [a, b], "mbps": rng.choice([8, 100, 1e4]), "latency_ms": rng.choice([0, 20])}
                 for i, a in enumerate(used) for b in used[i + 1:]]
        return {"groups": groups, "links": links}
    return {"groups": groups}


def cluster_spec(rng: random.Random) -> str:
    parts = []
    for _ in range(rng.randint(1, 3)):
        preset = rng.choice(sorted(DNN_PRESETS))
        shape = f":{rng.randint(1, 16)}x{rng.choice([1, 2, 4, 8])}" if rng.random() < 0.8 else ""
        parts.append(preset + shape)
    return "+".join(parts)


SPEC_WEIRD = ["0", "-1", "00", "99999999999999999999", "9" * 5000, "\u0663", "1.5", "", "1_000", "0x10", "+3",
              " 2", "16", "9", "1048577", "131072"]


def mutate_spec(spec: str, rng: random.Random) -> str:
    """One or two edits of a cluster spec: an awkward count, a bad or mangled preset name, empty
    groups, too many groups, another separator, stray whitespace."""
    for _ in range(rng.randint(1, 2)):
        op = rng.randrange(7)
        if op in (0, 1) and ":" in spec:
            at = spec.index(":")
            tail = spec[at:]
            found = list(re.finditer(r"(?<=[:x])[0-9]+", tail))
            if found:
                m = rng.choice(found)
                tail = tail[:m.start()] + rng.choice(SPEC_WEIRD) + tail[m.end():]
            spec = spec[:at] + tail
        elif op == 2:
            wrong = rng.choice(["dgx-a100", "DGX-A100-80G", "nope", "dgx-a100-80g ", ""])
            spec = spec.replace(rng.choice(sorted(DNN_PRESETS)), wrong)
        elif op == 3:
            spec = rng.choice([spec + "+", "+" + spec, spec.replace("+", "++"), spec + "+" + spec])
        elif op == 4:
            spec = "+".join([spec] * rng.choice([3, 9, 40]))
        elif op == 5:
            spec = spec.replace("x", rng.choice(["X", "*", "", "xx"]), 1)
        else:
            spec = rng.choice([f" {spec} ", f"{spec}\n", spec.replace(":", ": "), "", spec.upper()])
    return spec


# -- judging one reader call

def judge_reader(read, arg: str, text: bytes | None, expect) -> tuple[str, str]:
    """('answered'|'refused', '') or ('defect', why) for ``read(arg)`` against the oracle's verdict.

    ``expect`` is Invalid or a check(result) -> why.  A refusal must be InputError naming ``arg`` and a
    line in it (or no line), or UsageError, on one line; anything else escaping is a defect."""
    from yewpy.errors import InputError, UsageError

    try:
        result = read(arg)
    except (InputError, UsageError) as exc:
        message = str(exc)
        if "\n" in message or not message:
            return "defect", f"the error is not one line: {message!r}"
        if isinstance(exc, InputError):
            lines = text.count(b"\n") + 1 if text is not None else 1
            if exc.path != arg or (exc.line is not None and not 1 <= exc.line <= lines):
                return "defect", f"the error names {exc.path}:{exc.line}, not a line of {arg}: {message}"
        if not isinstance(expect, Invalid):
            return "defect", f"refused; the oracle accepts it: {message}"
        return "refused", ""
    except BaseException:       # noqa: BLE001 - anything else is the defect being looked for
        return "defect", f"traceback: {traceback.format_exc()[-800:]}"
    if isinstance(expect, Invalid):
        return "defect", f"accepted; the oracle refuses it: {expect}"
    why = expect(result)
    return ("defect", why) if why else ("answered", "")


def _model_check(counted):
    params, seq, blocks = counted

    def check(model) -> str | None:
        if not math.isclose(model.params, params, rel_tol=1e-9, abs_tol=1e-6):
            return f"{model.params} parameters, oracle {params}"
        if model.seq != seq or len(model.blocks) != blocks:
            return f"seq {model.seq}, {len(model.blocks)} blocks; oracle seq {seq}, {blocks} blocks"
        return None
    return check


def _cluster_check(groups):
    def check(cluster) -> str | None:
        got = [(g.nodes, g.gpus_per_node, g.memory / 2 ** 30) for g in cluster.groups]
        if len(got) != len(groups) or any((n, g) != (on, og) or not math.isclose(m, om, rel_tol=1e-12)
                                          for (n, g, m), (on, og, om) in zip(got, groups)):
            return f"groups {got}, oracle {groups}"
        return None
    return check


MODEL_FORMS = ["blocks", "transformer", *DNN_FAMILIES]


def _model_case(rng: random.Random, path: Path, mutated: bool) -> tuple[bytes, object]:
    """Write a model file (maybe mutated) to ``path``: its bytes and the oracle's verdict."""
    doc = model_doc(rng, rng.choice(MODEL_FORMS))
    if mutated and rng.random() < 0.8:
        doc = mutate_doc(doc, rng)
    text = dump(doc) + "\n"
    data = mutate_json_text(text, rng) if mutated and rng.random() < 0.3 else text.encode()
    path.write_bytes(data)
    return data, _verdict(oracle_model, data)


def cases_dnn_model(rng: random.Random, folder: Path, count: int):
    from yewpy.apps.dnn.model_files import load_model

    for k in range(count):
        path = folder / f"m{k}.json"
        data, expect = _model_case(rng, path, mutated=k % 5 != 0)
        check = expect if isinstance(expect, Invalid) else _model_check(expect)
        yield (["load_model", str(path)], [str(path)], expect,
               lambda p=str(path), d=data, c=check: judge_reader(load_model, p, d, c))


def cases_dnn_cluster(rng: random.Random, folder: Path, count: int):
    from yewpy.apps.dnn.cluster import load_cluster

    for k in range(count):
        if k % 2:                                       # a spec string
            spec = cluster_spec(rng)
            spec = mutate_spec(spec, rng) if k % 6 != 1 else spec
            expect = _verdict(oracle_cluster_spec, spec)
            check = expect if isinstance(expect, Invalid) else _cluster_check(expect)
            yield (["load_cluster", spec[:200]], [], expect,
                   lambda s=spec, c=check: judge_reader(load_cluster, s, None, c))
            continue
        path = folder / f"c{k}.json"
        doc = cluster_doc(rng)
        mutated = k % 6 != 0
        if mutated and rng.random() < 0.8:
            doc = mutate_doc(doc, rng)
        text = dump(doc) + "\n"
        data = mutate_json_text(text, rng) if mutated and rng.random() < 0.3 else text.encode()
        path.write_bytes(data)
        expect = _verdict(oracle_cluster_file, data)
        check = expect if isinstance(expect, Invalid) else _cluster_check(expect)
        yield (["load_cluster", str(path)], [str(path)], expect,
               lambda p=str(path), d=data, c=check: judge_reader(load_cluster, p, d, c))


SMALL_SPECS = ["dgx-a100-80g:1x8", "dgx-v100-32g:1x4", "rtx-titan-24g:2x8",
               "dgx-a100-80g:1x8+dgx-v100-32g:1x8"]


def _small(expect, size) -> bool:
    """A case the CLI can plan in well under a second: refused, or at most ``size``."""
    return isinstance(expect, Invalid) or size(expect)


def cases_dnn_cli(rng: random.Random, folder: Path, count: int):
    """Whole ``yewpy dnn-plan`` runs as subprocesses: small models (at most 8 blocks) on small
    clusters (at most 2 groups and 16 GPUs), either of them mutated now and then."""
    script = Path(sys.executable).parent / "yewpy"
    for k in range(count):
        model = folder / f"cli{k}.json"
        while True:
            _, m_expect = _model_case(rng, model, mutated=k % 3 == 1)
            if _small(m_expect, lambda e: e[2] <= 8):
                break
        while True:
            if k % 2:
                cluster = folder / f"cli{k}-cluster.json"
                doc = cluster_doc(rng)
                if k % 4 == 3:
                    doc = mutate_doc(doc, rng)
                cluster.write_text(dump(doc))
                c_expect, c_arg = _verdict(oracle_cluster_file, cluster.read_bytes()), str(cluster)
            else:
                c_arg = rng.choice(SMALL_SPECS)
                c_arg = mutate_spec(c_arg, rng) if k % 4 == 2 else c_arg
                if k % 6 == 2:      # two GPU kinds to pair, for --mixed-tp below
                    c_arg = SMALL_SPECS[-1]
                c_expect = _verdict(oracle_cluster_spec, c_arg)
            if _small(c_expect, lambda e: len(e) <= 2 and sum(n * g for n, g, _ in e) <= 16):
                break
        argv = [str(script), "dnn-plan", "--model", str(model), f"--cluster={c_arg}", "--global-batch", "8",
                "--top", "1", "--json"]
        if k % 3 == 0:  # the per-layer options: ZeRO-3 by layer (Galvatron-BMW) and recomputation by layer
            argv += ["--zero", "0,1,2,3,layers", "--recompute", "none,selective,full,block"]
        if k % 3 == 1:  # and TP degree by layer (Galvatron)
            argv.append("--tp-layers")
        if k % 6 == 2 and _pairable(c_expect):  # uneven TP shares on two GPU kinds (HAP)
            argv.append("--mixed-tp")
        both = next((e for e in (m_expect, c_expect) if isinstance(e, Invalid)), m_expect)
        yield (argv, [str(model)], both,
               lambda a=argv, m=m_expect, c=c_expect, p=str(model), cp=c_arg: judge_dnn_cli(a, m, c, p, cp))


def _pairable(expect) -> bool:
    """Whether a valid preset spec's groups include two of different GPUs (memory) with as many GPUs
    per node: the pairs ``--mixed-tp`` needs (of unequal node counts, the rest join as a group)."""
    if isinstance(expect, Invalid):
        return False
    return any(a[1] == b[1] and a[2] != b[2] for i, a in enumerate(expect) for b in expect[i + 1:])


def judge_dnn_cli(argv: list[str], m_expect, c_expect, model: str, cluster: str) -> tuple[str, str]:
    """Exit 0 with a plan on at most the cluster's GPUs when both inputs are valid; exit 2 with one
    ``yewpy: error:`` line naming the refused input (or 'no plan fits'); no traceback, no hang."""
    try:
        out = subprocess.run(argv, capture_output=True, text=True, timeout=60, cwd=Path(model).parent)
    except subprocess.TimeoutExpired:
        return "defect", "no answer in 60 s"
    if "Traceback" in out.stderr:
        return "defect", f"traceback: {out.stderr[-800:]}"
    lines = out.stderr.strip().splitlines()
    if out.returncode == 2:
        if len(lines) != 1 or not lines[0].startswith("yewpy: error: "):
            return "defect", f"exit 2 without one 'yewpy: error:' line: {out.stderr[-400:]!r}"
        if isinstance(m_expect, Invalid):
            named = lines[0].startswith(f"yewpy: error: {model}")
        elif isinstance(c_expect, Invalid):
            named = lines[0].startswith(f"yewpy: error: {cluster}" if cluster.endswith(".json")
                                        else "yewpy: error: bad cluster group")
        else:
            named = lines[0].startswith("yewpy: error: no plan fits")
        return ("refused", "") if named else ("defect", f"the wrong error: {lines[0]!r}")
    if out.returncode != 0:
        return "defect", f"exit status {out.returncode}: {out.stderr[-400:]!r}"
    if isinstance(m_expect, Invalid) or isinstance(c_expect, Invalid):
        refused = m_expect if isinstance(m_expect, Invalid) else c_expect
        return "defect", f"planned; the oracle refuses it: {refused}"
    predicted = json.loads(out.stdout.strip().splitlines()[-1])["predicted"]
    gpus = sum(n * g for n, g, _ in c_expect)
    if not (1 <= predicted["gpus"] <= gpus and 0 < predicted["iteration_seconds"] < math.inf):
        return "defect", f"plan {predicted} on a cluster of {gpus} GPUs"
    return "answered", ""


DNN_READERS = {"dnn-model": cases_dnn_model, "dnn-cluster": cases_dnn_cluster, "dnn-cli": cases_dnn_cli}


READERS = {"dimacs": cases_dimacs, "knapsack": cases_knapsack, "tsp": cases_tsp, "lad": cases_lad,
           "checkpoint": cases_checkpoint, "flags": cases_flags, **DNN_READERS}


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
            if reader in DNN_READERS:           # the case judges itself (a reader call, or a subprocess)
                verdict, why = answer()
            else:
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
