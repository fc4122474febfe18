"""Finding and loading ``libsicore`` and declaring its C ABI with ctypes.

Nothing here is specific to one scheduler: this module owns the loaded
library objects (one per distinct path), the ``sicore_buffer`` helpers and
the process-wide forwarding of the library's log records to :mod:`logging`.
"""

from __future__ import annotations

import atexit
import contextlib
import ctypes
import logging
import os
import sys
import threading
from pathlib import Path
from typing import Callable

from ._errors import SicoreError, Status, error_for_status

__all__ = [
    "ENV_VAR",
    "TRACE",
    "Library",
    "find_library",
    "library_file_name",
    "load_library",
]

ENV_VAR = "SICORE_LIBRARY"
"""Environment variable naming the shared library to load."""

TRACE = 5
"""The :mod:`logging` level used for the library's trace records (below DEBUG)."""
logging.addLevelName(TRACE, "TRACE")

_log = logging.getLogger("sicore")


def library_file_name() -> str:
    """The platform's file name of the shared library (``libsicore.so`` on Linux)."""
    if sys.platform == "darwin":
        return "libsicore.dylib"
    if sys.platform == "win32":
        return "sicore.dll"
    return "libsicore.so"


def _bundled_path() -> Path:
    return Path(__file__).resolve().parent / library_file_name()


def _search_upward(start: Path, name: str) -> Path | None:
    for directory in (start, *start.parents):
        for profile in ("release", "debug"):
            candidate = directory / "target" / profile / name
            if candidate.is_file():
                return candidate
    return None


def find_library(path: str | os.PathLike[str] | None = None) -> Path:
    """Locate the shared library without loading it.

    The order is:

    1. ``path``, when given (it must exist);
    2. the ``SICORE_LIBRARY`` environment variable, when set and non-empty
       (it must exist);
    3. the copy bundled into the package at build time
       (``sicore/libsicore.so`` next to this module);
    4. the cargo target directory of a checkout: from the package's directory,
       then from the current directory, each directory upward is tried for
       ``target/release/libsicore.so`` and then ``target/debug/libsicore.so``.

    Raises :class:`SicoreError` (status ``INVALID_ARGUMENT``) when nothing is
    found or an explicit path does not exist.
    """
    name = library_file_name()
    if path is not None:
        explicit = Path(path)
        if not explicit.is_file():
            raise SicoreError(f"sicore library not found at the given path {explicit}",
                              Status.INVALID_ARGUMENT)
        return explicit.resolve()
    env = os.environ.get(ENV_VAR)
    if env:
        from_env = Path(env)
        if not from_env.is_file():
            raise SicoreError(f"{ENV_VAR}={env} does not name an existing file",
                              Status.INVALID_ARGUMENT)
        return from_env.resolve()
    bundled = _bundled_path()
    if bundled.is_file():
        return bundled
    tried = [str(bundled)]
    for start in (Path(__file__).resolve().parent, Path.cwd().resolve()):
        found = _search_upward(start, name)
        if found is not None:
            return found.resolve()
        tried.append(f"{start}/**/target/{{release,debug}}/{name} (upward)")
    raise SicoreError(
        "cannot find the sicore library; build it with `cargo build --release`, "
        f"set {ENV_VAR}, or pass its path. Tried: " + "; ".join(tried),
        Status.INVALID_ARGUMENT,
    )


class sicore_buffer(ctypes.Structure):  # noqa: N801 - the C name
    """``struct sicore_buffer``: bytes owned by the library."""

    _fields_ = [("data", ctypes.c_void_p), ("len", ctypes.c_size_t)]


# Callback signatures of include/sicore.h. Pointers to messages and replies are
# declared as c_void_p so that ctypes hands us plain integers.
STATUS_CALLBACK = ctypes.CFUNCTYPE(
    ctypes.c_int32, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_size_t, ctypes.c_void_p)
NOTIFY_CALLBACK = ctypes.CFUNCTYPE(None, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_size_t)
ANSWER_CALLBACK = ctypes.CFUNCTYPE(
    None, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_size_t, ctypes.c_void_p)
RELEASE_CALLBACK = ctypes.CFUNCTYPE(None, ctypes.c_void_p)
DUMP_CALLBACK = ctypes.CFUNCTYPE(None, ctypes.c_void_p, ctypes.c_void_p)
LOG_CALLBACK = ctypes.CFUNCTYPE(
    None, ctypes.c_void_p, ctypes.c_int32,
    ctypes.c_void_p, ctypes.c_size_t, ctypes.c_void_p, ctypes.c_size_t)


class sicore_callbacks(ctypes.Structure):  # noqa: N801 - the C name
    """``struct sicore_callbacks``: the RM's callback table (NULL = not implemented).

    ``struct_size`` is ``ctypes.sizeof(sicore_callbacks)``: the library reads
    only the fields it covers.
    """

    _fields_ = [
        ("struct_size", ctypes.c_size_t),
        ("user_data", ctypes.c_void_p),
        ("update_allocation", STATUS_CALLBACK),
        ("update_application", STATUS_CALLBACK),
        ("update_node", STATUS_CALLBACK),
        ("predicates", STATUS_CALLBACK),
        ("resync_scheduler_cache", STATUS_CALLBACK),
        ("send_event", NOTIFY_CALLBACK),
        ("update_container_scheduling_state", NOTIFY_CALLBACK),
        ("update_configuration", ANSWER_CALLBACK),
        ("release", RELEASE_CALLBACK),
    ]


class sicore_v1_callbacks(ctypes.Structure):  # noqa: N801 - the C name
    """``struct sicore_v1_callbacks``: an SI v1.x RM's callback table (NULL = not implemented)."""

    _fields_ = [
        ("struct_size", ctypes.c_size_t),
        ("user_data", ctypes.c_void_p),
        ("update_allocation", STATUS_CALLBACK),
        ("update_application", STATUS_CALLBACK),
        ("update_node", STATUS_CALLBACK),
        ("predicates", STATUS_CALLBACK),
        ("preemption_predicates", ANSWER_CALLBACK),
        ("send_event", NOTIFY_CALLBACK),
        ("update_container_scheduling_state", NOTIFY_CALLBACK),
        ("get_state_dump", DUMP_CALLBACK),
        ("release", RELEASE_CALLBACK),
    ]


_P = ctypes.c_void_p
_BUF_P = ctypes.POINTER(sicore_buffer)
_BYTES = ctypes.c_char_p  # const uint8_t *: Python bytes are passed without a copy

# name -> (restype, argtypes); every exported symbol of include/sicore.h.
_SIGNATURES: dict[str, tuple[object, list[object]]] = {
    "sicore_buffer_free": (None, [sicore_buffer]),
    "sicore_reply_set": (None, [_P, _BYTES, ctypes.c_size_t]),
    "sicore_set_logger": (None, [LOG_CALLBACK, _P, ctypes.c_int32]),
    "sicore_version": (ctypes.c_char_p, []),
    "sicore_status_str": (ctypes.c_char_p, [ctypes.c_int]),
    "sicore_new": (ctypes.c_int, [_BYTES, ctypes.c_size_t, ctypes.POINTER(_P), _BUF_P]),
    "sicore_free": (None, [_P]),
    "sicore_shutdown": (ctypes.c_int, [_P, _BUF_P]),
    "sicore_register_resource_manager": (
        ctypes.c_int, [_P, _BYTES, ctypes.c_size_t, ctypes.POINTER(sicore_callbacks), _BUF_P, _BUF_P]),
    "sicore_update_allocation": (ctypes.c_int, [_P, _BYTES, ctypes.c_size_t, _BUF_P]),
    "sicore_update_application": (ctypes.c_int, [_P, _BYTES, ctypes.c_size_t, _BUF_P]),
    "sicore_update_node": (ctypes.c_int, [_P, _BYTES, ctypes.c_size_t, _BUF_P]),
    "sicore_update_configuration": (ctypes.c_int, [_P, _BYTES, ctypes.c_size_t, _BUF_P]),
    "sicore_set_policy_config": (
        ctypes.c_int, [_P, _BYTES, ctypes.c_size_t, _BYTES, ctypes.c_size_t, _BUF_P]),
    "sicore_state_dump": (ctypes.c_int, [_P, _BUF_P, _BUF_P]),
    "sicore_metrics": (ctypes.c_int, [_P, _BUF_P, _BUF_P]),
    "sicore_rest_address": (ctypes.c_int, [_P, _BUF_P, _BUF_P]),
    "sicore_v1_register_resource_manager": (
        ctypes.c_int, [_P, _BYTES, ctypes.c_size_t, ctypes.POINTER(sicore_v1_callbacks), _BUF_P, _BUF_P]),
    "sicore_v1_update_allocation": (ctypes.c_int, [_P, _BYTES, ctypes.c_size_t, _BUF_P]),
    "sicore_v1_update_application": (ctypes.c_int, [_P, _BYTES, ctypes.c_size_t, _BUF_P]),
    "sicore_v1_update_node": (ctypes.c_int, [_P, _BYTES, ctypes.c_size_t, _BUF_P]),
    "sicore_v1_update_configuration": (ctypes.c_int, [_P, _BYTES, ctypes.c_size_t, _BUF_P]),
}

def borrowed_bytes(ptr: int | None, length: int) -> bytes:
    """Copy ``length`` bytes the library lent us at ``ptr`` (``b""`` when empty)."""
    if not ptr or not length:
        return b""
    return ctypes.string_at(ptr, length)


_PY_LEVELS = {1: logging.ERROR, 2: logging.WARNING, 3: logging.INFO, 4: logging.DEBUG, 5: TRACE}


# Per thread: how deep it is inside _forward_log's handlers, so that
# Scheduler.close() refuses from there (the record may come from a library
# thread, or from inside a call that keeps the scheduler busy).
_log_tls = threading.local()


def in_log_handler() -> bool:
    """Whether this thread is running a handler of a library log record."""
    return getattr(_log_tls, "depth", 0) > 0


def _forward_log(user_data: int | None, level: int, target: int | None, target_len: int,
                 message: int | None, message_len: int) -> None:
    """The ``sicore_log_fn`` installed process-wide: re-emits on the ``sicore`` logger."""
    try:
        py_level = _PY_LEVELS.get(level, logging.INFO)
        if not _log.isEnabledFor(py_level):
            return
        tgt = borrowed_bytes(target, target_len).decode("utf-8", "replace")
        msg = borrowed_bytes(message, message_len).decode("utf-8", "replace")
        _log_tls.depth = getattr(_log_tls, "depth", 0) + 1
        try:
            _log.log(py_level, "%s", msg, extra={"sicore_target": tgt})
        finally:
            _log_tls.depth -= 1
    except BaseException:  # noqa: BLE001 - never unwind into the library
        pass


# Module-level, so the function pointer outlives every library that holds it.
_LOG_TRAMPOLINE = LOG_CALLBACK(_forward_log)


class Library:
    """One loaded copy of ``libsicore`` with every symbol declared.

    Obtain it with :func:`load_library`; the attributes named like the C
    functions (``sicore_new``, ...) are the ctypes functions.
    """

    def __init__(self, path: Path) -> None:
        """Load the library at ``path`` and declare its symbols."""
        self.path: Path = path
        """The file the library was loaded from."""
        try:
            self._dll = ctypes.CDLL(str(path))
        except OSError as e:
            raise SicoreError(f"cannot load the sicore library {path}: {e}",
                              Status.INVALID_ARGUMENT) from e
        for name, (restype, argtypes) in _SIGNATURES.items():
            try:
                fn = getattr(self._dll, name)
            except AttributeError as e:
                raise SicoreError(f"{path} does not export {name}; is it libsicore?",
                                  Status.INVALID_ARGUMENT) from e
            fn.restype = restype
            fn.argtypes = argtypes
            setattr(self, name, fn)
        self.version: str = self.sicore_version().decode("utf-8", "replace")
        """The library's version string."""
        # Process-wide: every record the library logs reaches the `sicore` logger.
        self.sicore_set_logger(_LOG_TRAMPOLINE, None, TRACE)

    # Declared dynamically above; listed here for type checkers.
    sicore_buffer_free: Callable[..., None]
    sicore_reply_set: Callable[..., None]
    sicore_set_logger: Callable[..., None]
    sicore_version: Callable[..., bytes]
    sicore_status_str: Callable[..., bytes]
    sicore_new: Callable[..., int]
    sicore_free: Callable[..., None]
    sicore_shutdown: Callable[..., int]
    sicore_register_resource_manager: Callable[..., int]
    sicore_update_allocation: Callable[..., int]
    sicore_update_application: Callable[..., int]
    sicore_update_node: Callable[..., int]
    sicore_update_configuration: Callable[..., int]
    sicore_set_policy_config: Callable[..., int]
    sicore_state_dump: Callable[..., int]
    sicore_metrics: Callable[..., int]
    sicore_rest_address: Callable[..., int]
    sicore_v1_register_resource_manager: Callable[..., int]
    sicore_v1_update_allocation: Callable[..., int]
    sicore_v1_update_application: Callable[..., int]
    sicore_v1_update_node: Callable[..., int]
    sicore_v1_update_configuration: Callable[..., int]

    def status_str(self, status: int) -> str:
        """The library's name of a ``sicore_status`` value (``"unknown sicore_status"`` for others)."""
        return self.sicore_status_str(int(status)).decode("utf-8", "replace")

    def take_buffer(self, buf: sicore_buffer) -> bytes:
        """Copy the bytes out of a library-owned buffer and free it."""
        if not buf.data:
            return b""
        try:
            return ctypes.string_at(buf.data, buf.len)
        finally:
            self.sicore_buffer_free(buf)
            buf.data = None
            buf.len = 0

    def check(self, status: int, error: sicore_buffer, what: str) -> None:
        """Raise the matching :class:`SicoreError` when ``status`` is not OK."""
        message = self.take_buffer(error).decode("utf-8", "replace")
        if status != Status.OK:
            raise error_for_status(status, message or f"{what} failed")

    def reply(self, reply: int | None, data: bytes) -> None:
        """Store ``data`` as a callback's answer (``sicore_reply_set``)."""
        self.sicore_reply_set(reply, data, len(data))

    def stop_logging(self) -> None:
        """Switch the forwarding of log records off."""
        self.sicore_set_logger(LOG_CALLBACK(), None, 0)


_libraries: dict[Path, Library] = {}
_libraries_lock = threading.Lock()


def load_library(path: str | os.PathLike[str] | None = None) -> Library:
    """Load (once per file) and return the library found by :func:`find_library`."""
    resolved = find_library(path)
    with _libraries_lock:
        lib = _libraries.get(resolved)
        if lib is None:
            lib = Library(resolved)
            _libraries[resolved] = lib
        return lib


def _stop_all_logging() -> None:
    # Registered before any scheduler's atexit hook, so it runs after them.
    for lib in list(_libraries.values()):
        with contextlib.suppress(Exception):
            lib.stop_logging()


atexit.register(_stop_all_logging)
