"""Scaling measurements: one row per run, median rows with speedup and efficiency, the CSV that
holds both, the check that every run found the same answer, and a readable table."""

from __future__ import annotations

import csv
import io
import statistics
from collections.abc import Iterable, Sequence
from dataclasses import asdict, dataclass, fields
from pathlib import Path

from yewpy.errors import InputError

BASELINES = ("smallest", "seq")
COLUMNS = ["row", "skeleton", "parameters", "ranks", "hosts", "repeat", "seconds", "wall_seconds", "nodes",
           "steals", "idle_seconds", "status", "answer", "speedup", "efficiency"]


@dataclass
class Run:
    """One timed search: its configuration, its cost and its answer (JSON text, compared exactly)."""

    skeleton: str
    parameters: str
    ranks: int
    hosts: int
    repeat: int
    seconds: float
    wall_seconds: float
    nodes: int
    steals: int
    idle_seconds: float
    status: str
    answer: str

    @property
    def config(self) -> tuple[str, str]:
        return (self.skeleton, self.parameters)


@dataclass
class Median:
    """The median of one configuration's repeats at one rank count, and its speedup over the baseline."""

    skeleton: str
    parameters: str
    ranks: int
    hosts: int
    runs: int
    seconds: float
    wall_seconds: float
    nodes: float
    steals: float
    idle_seconds: float
    status: str
    answer: str
    speedup: float | None = None
    efficiency: float | None = None

    @property
    def config(self) -> tuple[str, str]:
        return (self.skeleton, self.parameters)


def medians(runs: Sequence[Run], baseline: str = "smallest") -> list[Median]:
    """Median rows per (skeleton, parameters, ranks), in first-seen order, with speedup and efficiency.

    ``smallest``: speedup over the same configuration at its smallest rank count r0, efficiency =
    speedup * r0 / ranks. ``seq``: speedup over the median ``seq`` run, efficiency = speedup / ranks
    (none without seq runs).
    """
    if baseline not in BASELINES:
        raise ValueError(f"baseline must be one of {BASELINES}, not {baseline!r}")
    groups: dict[tuple[str, str, int], list[Run]] = {}
    for run in runs:
        groups.setdefault((run.skeleton, run.parameters, run.ranks), []).append(run)
    rows = []
    for (skeleton, parameters, ranks), group in groups.items():
        medians = {key: statistics.median(getattr(r, key) for r in group)
                   for key in ("seconds", "wall_seconds", "nodes", "steals", "idle_seconds")}
        rows.append(Median(skeleton, parameters, ranks, max(r.hosts for r in group), len(group), **medians,
                           status="/".join(sorted({r.status for r in group})),
                           answer="/".join(sorted({r.answer for r in group}))))
    rows.sort(key=lambda m: (list(dict.fromkeys(r.config for r in runs)).index(m.config), m.ranks))
    seq = [m for m in rows if m.skeleton == "seq"]
    for row in rows:
        if baseline == "seq":
            if not seq:                  # a sweep cut short before its first seq run: no speedups
                continue
            base, scale = seq[0].seconds, float(row.ranks)
        else:
            first = min((m for m in rows if m.config == row.config), key=lambda m: m.ranks)
            base, scale = first.seconds, row.ranks / first.ranks
        row.speedup = base / row.seconds if row.seconds > 0 else None
        row.efficiency = None if row.speedup is None else row.speedup / scale
    return rows


def check_answers(runs: Iterable[Run]) -> str | None:
    """None when every run gave the same answer, else a message naming each answer and who gave it."""
    by_answer: dict[str, list[str]] = {}
    for run in runs:
        who = f"{run.skeleton} {run.parameters}".strip() + f" ranks={run.ranks} repeat={run.repeat}"
        by_answer.setdefault(run.answer, []).append(who)
    if len(by_answer) <= 1:
        return None
    lines = ["ANSWER MISMATCH: the runs disagree, so at least one configuration is wrong:"]
    for answer, givers in sorted(by_answer.items(), key=lambda item: -len(item[1])):
        lines.append(f"  answer {answer} from {len(givers)} run(s): {', '.join(givers[:6])}"
                     + (" ..." if len(givers) > 6 else ""))
    return "\n".join(lines)


def _cell(value: object) -> str:
    if value is None:
        return ""
    if isinstance(value, float):
        return str(int(value)) if value.is_integer() and abs(value) < 1e15 else f"{value:.6g}"
    return str(value)


def to_csv(runs: Sequence[Run], rows: Sequence[Median]) -> str:
    """The CSV text: every run (``row=run``), then the median rows (``row=median``, ``repeat=median``)."""
    out = io.StringIO()
    writer = csv.DictWriter(out, COLUMNS, lineterminator="\n")
    writer.writeheader()
    for run in runs:
        writer.writerow({"row": "run", **{k: _cell(v) for k, v in asdict(run).items()}})
    for m in rows:
        values = {k: _cell(v) for k, v in asdict(m).items() if k != "runs"}
        writer.writerow({"row": "median", **values, "repeat": "median"})
    return out.getvalue()


def read_runs(path: Path) -> list[Run]:
    """The ``row=run`` rows of a scaling.csv (medians are recomputed, never trusted)."""
    try:
        text = path.read_text()
    except OSError as error:
        raise InputError(str(path), None, f"cannot read: {error.strerror}") from None
    reader = csv.DictReader(io.StringIO(text))
    if reader.fieldnames is None or not set(COLUMNS) <= set(reader.fieldnames):
        raise InputError(str(path), 1, f"not a scaling.csv: the header must be {','.join(COLUMNS)}")
    types = {f.name: str(f.type) for f in fields(Run)}
    runs = []
    for line, record in enumerate(reader, start=2):
        if record["row"] != "run":
            continue
        try:
            runs.append(Run(**{name: {"int": int, "float": float}.get(kind, str)(record[name])
                               for name, kind in types.items()}))
        except (TypeError, ValueError) as error:
            raise InputError(str(path), line, f"bad run row: {error}") from None
    return runs


def text_table(rows: Sequence[Median]) -> str:
    """The median rows as an aligned table."""
    head = ["skeleton", "parameters", "ranks", "hosts", "runs", "median s", "speedup", "efficiency",
            "nodes", "steals", "idle s"]
    body = [[m.skeleton, m.parameters or "-", str(m.ranks), str(m.hosts), str(m.runs), f"{m.seconds:.3f}",
             "-" if m.speedup is None else f"{m.speedup:.2f}",
             "-" if m.efficiency is None else f"{m.efficiency:.2f}",
             _cell(float(m.nodes)), _cell(float(m.steals)), f"{m.idle_seconds:.3f}"] for m in rows]
    widths = [max(len(h), *(len(r[i]) for r in body)) if body else len(h) for i, h in enumerate(head)]
    left = {0, 1}
    return "\n".join("  ".join(c.ljust(w) if i in left else c.rjust(w) for i, (c, w) in
                               enumerate(zip(line, widths))) for line in [head, *body])
