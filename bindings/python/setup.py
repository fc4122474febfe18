"""Build hook: compile the Rust library with setuptools-rust and bundle it.

Metadata lives in pyproject.toml. The crate is the repository root, two
directories up. ``pip install bindings/python`` builds it there (so cargo's
target directory, ``target/``, is the checkout's). An sdist carries the
crate's own files (the list ``cargo package --list`` gives, restricted by
``include`` in Cargo.toml) under ``rust/``, and a build from the sdist
compiles that copy: the sdist needs nothing outside itself but a Rust
toolchain.

The library lands in the package as ``sicore/libsicore.so`` (the name
``sicore.find_library`` looks for), and the wheel is tagged
``py3-none-<platform>``: the library is loaded with ctypes, so any Python 3
within ``requires-python`` can use it, but only on this platform.
"""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
from pathlib import Path

from setuptools import setup
from setuptools.command.sdist import sdist
from setuptools_rust import Binding, RustExtension, Strip
from setuptools_rust.build import build_rust

try:
    from setuptools.command.bdist_wheel import bdist_wheel
except ImportError:  # setuptools < 70.1
    from wheel.bdist_wheel import bdist_wheel  # type: ignore[no-redef]

HERE = Path(__file__).resolve().parent
SDIST_CRATE = "rust"  # where an sdist carries the crate


def _file_name() -> str:
    if sys.platform == "darwin":
        return "libsicore.dylib"
    if sys.platform == "win32":
        return "sicore.dll"
    return "libsicore.so"


def _crate_manifest() -> Path:
    """The crate to build: the sdist's copy, else the checkout's root."""
    for manifest in (HERE / SDIST_CRATE / "Cargo.toml", HERE.parent.parent / "Cargo.toml"):
        if manifest.is_file():
            return manifest
    raise SystemExit(
        "sicore: the Rust crate was not found: build from a checkout of the repository "
        "(bindings/python) or from an sdist made with `python -m build --sdist`"
    )


def _crate_version(manifest: Path) -> str:
    """The package version is the crate's, so it matches ``sicore_version()``."""
    found = re.search(r'^version\s*=\s*"([^"]+)"', manifest.read_text(), re.MULTILINE)
    if found is None:
        raise SystemExit(f"sicore: no version in {manifest}")
    return found.group(1)


class BuildRustAsLibrary(build_rust):
    """Install the cdylib as ``sicore/libsicore.so``, the file the package loads.

    setuptools-rust names a library built with ``Binding.NoBinding`` like a
    CPython extension module (``libsicore.cpython-311-...so``); the package
    loads it with ctypes, under its plain name, from any Python version.
    """

    def get_dylib_ext_path(self, ext: RustExtension, target_fname: str) -> str:
        """Return the plain library file name inside the package."""
        path = Path(super().get_dylib_ext_path(ext, target_fname))
        return str(path.parent / _file_name())


def _standalone_manifest(text: str) -> str:
    """Return the crate's manifest without what points outside its files.

    That is the ``[workspace]`` table (its members, the simulator and the
    test RM, are not in the sdist) and the path dependencies of its tests
    and bench, as ``cargo package`` drops them from a published crate.
    """
    kept: list[str] = []
    section = ""
    for line in text.splitlines(keepends=True):
        header = re.match(r"\s*\[([^\]]+)\]\s*$", line)
        if header:
            section = header.group(1).strip()
        if section == "workspace":
            continue
        if section == "dev-dependencies" and re.search(r"\bpath\s*=", line):
            continue
        kept.append(line)
    return "".join(kept)


class SdistWithCrate(sdist):
    """Put the crate's sources into the sdist, so that it builds on its own."""

    def make_release_tree(self, base_dir: str, files: list[str]) -> None:
        """Copy the files ``cargo package`` would publish to ``<sdist>/rust/``."""
        super().make_release_tree(base_dir, files)
        manifest = HERE.parent.parent / "Cargo.toml"
        if not manifest.is_file():  # an sdist of an sdist: the crate is already in rust/
            crate = HERE / SDIST_CRATE
            shutil.copytree(crate, Path(base_dir) / SDIST_CRATE,
                            ignore=shutil.ignore_patterns("target"))
            return
        listed = subprocess.run(
            ["cargo", "package", "--list", "--allow-dirty", "-p", "sicore", "--manifest-path", str(manifest)],
            check=True, capture_output=True, text=True,
        ).stdout.split()
        root = manifest.parent
        for name in listed:
            # Written by `cargo package` itself; the copy keeps the original manifest.
            if name in ("Cargo.toml.orig", ".cargo_vcs_info.json"):
                continue
            destination = Path(base_dir) / SDIST_CRATE / name
            destination.parent.mkdir(parents=True, exist_ok=True)
            if name == "Cargo.toml":
                destination.write_text(_standalone_manifest((root / name).read_text()))
                continue
            shutil.copy2(root / name, destination)
        # The workspace's lock also pins the other members' dependencies;
        # resolving the standalone manifest once drops those entries (and
        # keeps every version), so that `--locked` builds of the sdist agree.
        subprocess.run(
            ["cargo", "metadata", "--format-version", "1", "--offline",
             "--manifest-path", str(Path(base_dir) / SDIST_CRATE / "Cargo.toml")],
            check=True, capture_output=True,
        )


class PlatformWheel(bdist_wheel):
    """Tag the wheel ``py3-none-<platform>``: any Python 3, this platform."""

    def get_tag(self) -> tuple[str, str, str]:
        """Return ``py3-none-<platform>``."""
        _, _, plat = super().get_tag()
        return "py3", "none", plat


setup(
    version=_crate_version(_crate_manifest()),
    rust_extensions=[
        RustExtension(
            "sicore.libsicore",
            path=str(_crate_manifest()),
            binding=Binding.NoBinding,
            strip=Strip.Debug,  # the wheel needs no debug info (26 MB of the 27)
            # Built exactly from Cargo.lock.
            cargo_manifest_args=["--locked"],
            py_limited_api=False,
        )
    ],
    cmdclass={"build_rust": BuildRustAsLibrary, "sdist": SdistWithCrate, "bdist_wheel": PlatformWheel},
)
