"""Where the native library is looked for, in the documented order."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

import sicore
from sicore import _native


def test_explicit_path_wins(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    real = sicore.find_library()
    copy = tmp_path / "copy" / _native.library_file_name()
    copy.parent.mkdir()
    shutil.copy2(real, copy)
    monkeypatch.setenv(sicore.ENV_VAR, str(real))
    assert sicore.find_library(copy) == copy.resolve()


def test_environment_variable_comes_next(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    real = sicore.find_library()
    copy = tmp_path / _native.library_file_name()
    shutil.copy2(real, copy)
    monkeypatch.setenv(sicore.ENV_VAR, str(copy))
    assert sicore.find_library() == copy.resolve()
    # A scheduler can run from that copy.
    with sicore.Scheduler(library=copy) as sched:
        assert sched.library.path == copy.resolve()
        assert isinstance(sched.state_dump(), dict)


def test_missing_explicit_path_or_env_is_an_error(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    with pytest.raises(sicore.SicoreError, match="not found"):
        sicore.find_library(tmp_path / "nope.so")
    monkeypatch.setenv(sicore.ENV_VAR, str(tmp_path / "nope.so"))
    with pytest.raises(sicore.SicoreError, match=sicore.ENV_VAR):
        sicore.find_library()


def test_not_a_sicore_library_is_refused(tmp_path: Path) -> None:
    fake = tmp_path / "libfake.so"
    fake.write_bytes(b"not an ELF file")
    with pytest.raises(sicore.SicoreError, match="cannot load"):
        sicore.load_library(fake)


def test_cargo_target_dir_is_searched_upward(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    real = sicore.find_library()
    checkout = tmp_path / "checkout"
    target = checkout / "target" / "debug" / _native.library_file_name()
    target.parent.mkdir(parents=True)
    shutil.copy2(real, target)
    nested = checkout / "a" / "b"
    nested.mkdir(parents=True)
    monkeypatch.delenv(sicore.ENV_VAR, raising=False)
    monkeypatch.setattr(_native, "_bundled_path", lambda: tmp_path / "no-bundle.so")
    monkeypatch.setattr(_native, "__file__", str(tmp_path / "elsewhere" / "_native.py"))
    monkeypatch.chdir(nested)
    assert sicore.find_library() == target.resolve()
    # release is preferred over debug in the same directory.
    release = checkout / "target" / "release" / _native.library_file_name()
    release.parent.mkdir(parents=True)
    shutil.copy2(real, release)
    assert sicore.find_library() == release.resolve()


def test_nothing_found_explains_how_to_fix(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.delenv(sicore.ENV_VAR, raising=False)
    monkeypatch.setattr(_native, "_bundled_path", lambda: tmp_path / "no-bundle.so")
    monkeypatch.setattr(_native, "__file__", str(tmp_path / "pkg" / "_native.py"))
    monkeypatch.chdir(tmp_path)
    with pytest.raises(sicore.SicoreError, match="cargo build --release"):
        sicore.find_library()
