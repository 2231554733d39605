"""Where the Cython headers of the engine contract are, for a user's own compiled core."""

from __future__ import annotations

from pathlib import Path


def get_include() -> str:
    """The folder to give Cython as an include path so that ``from yewpy.core cimport ...`` works.

    An installed yewpy carries ``yewpy/core.pxd`` beside its modules; an editable install keeps it
    in the checkout's ``cext/``, which Cython cannot find through the import system by itself."""
    package = Path(__file__).resolve().parent
    if (package / "core.pxd").is_file():
        return str(package.parent)
    source = package.parent / "cext"
    if (source / "yewpy" / "core.pxd").is_file():
        return str(source)
    raise FileNotFoundError(f"yewpy's core.pxd is neither in {package} nor in {source / 'yewpy'}")
