"""PNG plots of speedup and efficiency against ranks, with the ideal line (needs the ``plot`` extra)."""

from __future__ import annotations

import io
from collections.abc import Sequence
from pathlib import Path

from yewpy.operations.atomic import write_atomic
from yewpy.tools.speedup import Median

PLOTS = ("speedup.png", "efficiency.png")


def available() -> bool:
    """True when matplotlib can be imported."""
    try:
        import matplotlib  # noqa: F401
    except ImportError:
        return False
    return True


def write_plots(rows: Sequence[Median], out: Path, baseline: str, title: str = "") -> list[Path]:
    """Write ``speedup.png`` and ``efficiency.png`` into ``out``; return their paths."""
    import matplotlib

    matplotlib.use("Agg")
    from matplotlib.figure import Figure

    configs = list(dict.fromkeys(m.config for m in rows if m.skeleton != "seq"))
    ranks = sorted({m.ranks for m in rows if m.skeleton != "seq"})
    base = 1 if baseline == "seq" else min(ranks, default=1)
    written = []
    for name, key, ideal in (("speedup", "speedup", [r / base for r in ranks]),
                             ("efficiency", "efficiency", [1.0 for _ in ranks])):
        figure = Figure(figsize=(6, 4.2), layout="constrained")
        axes = figure.subplots()
        axes.plot(ranks, ideal, "k--", linewidth=1, label="ideal")
        for config in configs:
            points = [(m.ranks, getattr(m, key)) for m in rows if m.config == config
                      and getattr(m, key) is not None]
            axes.plot([p[0] for p in points], [p[1] for p in points], "o-", label=" ".join(config).strip())
        axes.set_xlabel("MPI ranks")
        axes.set_xticks(ranks)
        versus = "seq" if baseline == "seq" else f"{base} rank" + ("s" if base > 1 else "")
        axes.set_ylabel(f"{name} (vs {versus})")
        if key == "efficiency":
            axes.set_ylim(bottom=0)
        axes.set_title(title or name, fontsize=9)
        axes.grid(True, alpha=0.3)
        axes.legend(fontsize=8)
        buffer = io.BytesIO()
        figure.savefig(buffer, format="png", dpi=120)
        path = out / f"{name}.png"
        write_atomic(path, buffer.getvalue())
        written.append(path)
    return written
