"""Matplotlib for the drawing commands, headless, or a clear error naming the extra to install."""

from __future__ import annotations

from typing import Any

from yewpy.errors import UsageError


def pyplot() -> Any:
    """``matplotlib.pyplot`` on the Agg backend (no display needed)."""
    try:
        import matplotlib
    except ImportError:
        raise UsageError("drawing needs matplotlib: pip install 'yewpy[plot]'") from None
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt
