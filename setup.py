"""Build yewpy: the Python packages plus the Cython cores compiled from cext/.

`skeletons/` and `apps/` sit at the top of the repository and install as `yewpy.skeletons` and
`yewpy.apps`; every Cython source lives under `cext/yewpy/`, mirroring the module it becomes.
"""

import os
import shutil
from pathlib import Path

from Cython.Build import cythonize
from setuptools import Extension, setup
from setuptools.command.build_py import build_py

HERE = Path(__file__).parent
CEXT = HERE / "cext"


def extensions() -> list:
    """One private extension module per .pyx under cext/ (cext/yewpy/_engine.pyx -> yewpy._engine)."""
    flags = ["-O3"]
    if os.environ.get("YEWPY_NATIVE", "0") == "1":
        flags.append("-march=native")
    exts = []
    for pyx in sorted(CEXT.rglob("*.pyx")):
        rel = pyx.relative_to(CEXT).with_suffix("")
        exts.append(Extension(".".join(rel.parts), [str(pyx.relative_to(HERE))], extra_compile_args=flags))
    return cythonize(exts, include_path=[str(CEXT)], language_level=3,
                     compiler_directives={"embedsignature": True})


class BuildPyWithPxd(build_py):
    """Also install the .pxd headers, so users can `cimport yewpy._engine` in their own cores."""

    def run(self) -> None:
        super().run()
        for pxd in CEXT.rglob("*.pxd"):
            rel = pxd.relative_to(CEXT)
            dest = Path(self.build_lib) / rel
            dest.parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(pxd, dest)


setup(
    packages=["yewpy", "yewpy.runtime", "yewpy.operations", "yewpy.tools", "yewpy.compiler", "yewpy.skeletons", "yewpy.apps",
              "yewpy.apps.dnn", "yewpy.apps.dnn.planner", "yewpy.apps.dnn.fusion"],
    package_dir={"yewpy": "yewpy", "yewpy.skeletons": "skeletons", "yewpy.apps": "apps"},
    package_data={"yewpy": ["py.typed", "*.pyi"], "yewpy.apps": ["*.pyi"],
                  "yewpy.apps.dnn.fusion": ["*.pyi"]},
    ext_modules=extensions(),
    cmdclass={"build_py": BuildPyWithPxd},
)
