"""Build hook: bundle the native library into the package when one is found.

Metadata lives in pyproject.toml. At build time the library is looked for in
this order: the ``SICORE_LIBRARY`` environment variable, then
``target/release`` and ``target/debug`` of every directory upward from this
file (the checkout root, after ``cargo build --release``). When found, it is
copied to ``sicore/libsicore.so`` inside the built package and the wheel is
tagged as platform-specific. When not found the package still builds and
looks for the library at run time (see ``sicore.find_library``).
"""

from __future__ import annotations

import os
import shutil
import sys
from pathlib import Path

from setuptools import setup
from setuptools.command.build_py import build_py

try:
    from setuptools.command.bdist_wheel import bdist_wheel
except ImportError:  # setuptools < 70.1
    from wheel.bdist_wheel import bdist_wheel  # type: ignore[no-redef]

HERE = Path(__file__).resolve().parent


def _file_name() -> str:
    if sys.platform == "darwin":
        return "libsicore.dylib"
    if sys.platform == "win32":
        return "sicore.dll"
    return "libsicore.so"


def _find_built_library() -> Path | None:
    env = os.environ.get("SICORE_LIBRARY")
    if env:
        path = Path(env)
        if not path.is_file():
            raise SystemExit(f"SICORE_LIBRARY={env} does not name an existing file")
        return path
    for directory in (HERE, *HERE.parents):
        for profile in ("release", "debug"):
            candidate = directory / "target" / profile / _file_name()
            if candidate.is_file():
                return candidate
    return None


class BuildPyWithLibrary(build_py):
    """``build_py`` that also copies the native library into the package."""

    def run(self) -> None:
        """Build the pure-Python part, then copy the library next to it."""
        super().run()
        library = _find_built_library()
        if library is None:
            print("sicore: no built libsicore found (run `cargo build --release` first); "
                  "the package will search for it at run time", file=sys.stderr)
            return
        target = Path(self.build_lib) / "sicore" / _file_name()
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(library, target)
        print(f"sicore: bundled {library} as {target}", file=sys.stderr)


class PlatformWheel(bdist_wheel):
    """Tag the wheel for this platform when it carries the native library."""

    def finalize_options(self) -> None:
        """Mark the wheel impure when it will carry the library."""
        super().finalize_options()
        if _find_built_library() is not None:
            self.root_is_pure = False

    def get_tag(self) -> tuple[str, str, str]:
        """Return ``py3-none-<platform>`` for a wheel that carries the library."""
        python, abi, plat = super().get_tag()
        if not self.root_is_pure:
            # The library is loaded with ctypes: any Python 3 works.
            python, abi = "py3", "none"
        return python, abi, plat


setup(cmdclass={"build_py": BuildPyWithLibrary, "bdist_wheel": PlatformWheel})
