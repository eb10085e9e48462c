"""Input files read as text with clear errors; output files fully written or not at all.

Output is like an editor's "save": a regular file is written to a temporary file beside it and
renamed into place, so a reader (or an interrupted run) never sees half of it; the file keeps the
mode it had, or gets the mode `open()` would give it (0666 less the umask); a symlink is written
through (its target is replaced, the link stays). Files that are not regular (`/dev/stdout`, a FIFO, a
terminal) cannot be renamed over: they are written directly. A target that cannot be written is a
one-line `OutputError`. The path `-` is standard output (and, read, standard input), as it is for
mlir-opt and the LLVM tools: never a file named `-`.
"""

from __future__ import annotations

import os
import stat
import sys
from pathlib import Path
from typing import TextIO

from ccopt.diagnostics import CcoptError


class OutputError(CcoptError):
    """An output file that cannot be written (missing folder, a directory, no permission)."""


STDIO = "-"
"""The path that names standard input or output rather than a file."""

SPECIAL_FOLDERS = ("/dev/", "/proc/")
"""Paths there are devices or the kernel's magic links (`/dev/stdout` resolves to whatever fd 1
is, possibly the regular file a shell redirected it to): written directly, never renamed over."""


def write_atomic(path: str | os.PathLike[str], data: str | bytes) -> None:
    payload = data.encode() if isinstance(data, str) else data
    descriptor = _own_descriptor(path)
    if descriptor is not None:
        _write_descriptor(descriptor, payload)
        return
    if str(Path(path).absolute()).startswith(SPECIAL_FOLDERS):
        _write_directly(path, payload)
        return
    target = Path(os.path.realpath(path))  # write through symlinks
    try:
        existing = target.stat()
    except FileNotFoundError:
        existing = None
    except OSError as e:
        raise _error(path, e) from None
    if existing is not None and stat.S_ISDIR(existing.st_mode):
        raise OutputError(f"cannot write '{path}': it is a directory")
    if existing is not None and not os.access(target, os.W_OK):
        raise OutputError(f"cannot write '{path}': permission denied")
    try:
        if existing is not None and not stat.S_ISREG(existing.st_mode):
            _write_directly(target, payload)  # a device or FIFO: nothing to rename over
            return
        mode = stat.S_IMODE(existing.st_mode) if existing is not None else _default_mode()
        _replace(target, payload, mode)
    except OSError as e:
        raise _error(path, e) from None


def check_writable(path: str | os.PathLike[str]) -> None:
    """Refuse, before any work, an output that `write_atomic` would refuse after it: a missing
    folder, a directory, a file or folder without write permission (a 20 s search ended in
    "folder does not exist"). Descriptors and devices are left to the write."""
    if _own_descriptor(path) is not None or str(Path(path).absolute()).startswith(SPECIAL_FOLDERS):
        return
    target = Path(os.path.realpath(path))
    folder = target.parent
    if not folder.is_dir():
        raise OutputError(f"cannot write '{path}': folder '{Path(path).parent}' does not exist")
    if target.is_dir():
        raise OutputError(f"cannot write '{path}': it is a directory")
    writable = os.access(target, os.W_OK) if target.exists() else os.access(folder, os.W_OK)
    if not writable:
        raise OutputError(f"cannot write '{path}': permission denied")


def _own_descriptor(path: str | os.PathLike[str]) -> int | None:
    """`/dev/stdout`, `/dev/fd/N`, `/proc/self/fd/N`: one of this process's own descriptors.
    Opening them anew would start a second file offset on a redirected stdout (and truncate it);
    writing to the descriptor itself appends where the shell's output stands."""
    text = os.fspath(path)
    named = {STDIO: 1, "/dev/stdin": 0, "/dev/stdout": 1, "/dev/stderr": 2}
    if text in named:
        return named[text]
    for prefix in ("/dev/fd/", "/proc/self/fd/"):
        if text.startswith(prefix) and text[len(prefix) :].isdigit():
            return int(text[len(prefix) :])
    return None


def _write_descriptor(descriptor: int, payload: bytes) -> None:
    for stream in (sys.stdout, sys.stderr):
        stream.flush()
    view = memoryview(payload)
    try:
        while view:
            view = view[os.write(descriptor, view) :]
    except OSError as e:
        raise OutputError(f"cannot write to file descriptor {descriptor}: {e.strerror}") from None


def _write_directly(path: str | os.PathLike[str], payload: bytes) -> None:
    try:
        with open(path, "wb") as f:
            f.write(payload)
    except OSError as e:
        raise _error(path, e) from None


def _replace(target: Path, payload: bytes, mode: int) -> None:
    import tempfile  # (here: every tool imports this module, few write files)

    fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.", dir=target.parent)
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(payload)
            os.fchmod(f.fileno(), mode)
        os.replace(tmp, target)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def _default_mode() -> int:
    """0666 less the process umask, as `open(path, "w")` would create the file."""
    umask = os.umask(0)
    os.umask(umask)
    return 0o666 & ~umask


def _error(path: str | os.PathLike[str], e: OSError) -> OutputError:
    folder = Path(path).parent
    if isinstance(e, FileNotFoundError) and not folder.is_dir():
        return OutputError(f"cannot write '{path}': folder '{folder}' does not exist")
    return OutputError(f"cannot write '{path}': {e.strerror or e}")


def is_stdin(path: str | os.PathLike[str] | None) -> bool:
    return path is None or os.fspath(path) == STDIO


def input_name(path: str | os.PathLike[str] | None) -> str:
    """How diagnostics name an input: `<stdin>` for standard input."""
    return "<stdin>" if is_stdin(path) else os.fspath(path)  # type: ignore[arg-type]


def report_stream(*outputs: str | None) -> TextIO:
    """Where a tool prints its report: stderr when one of its output files is standard output
    (the report would end up inside that file), else stdout."""
    return sys.stderr if STDIO in outputs else sys.stdout


def read_text(path: str | os.PathLike[str] | None) -> str:
    """The UTF-8 text of an input file (standard input for None or `-`); a file that cannot be
    read (missing, a directory, no permission) or that is not text is a CcoptError naming it, as
    every ccopt tool reports it."""
    name = input_name(path)
    try:
        if is_stdin(path):  # decoded here: the locale's decoder may let bad bytes through
            return sys.stdin.buffer.read().decode("utf-8-sig")
        with open(path, encoding="utf-8-sig") as f:  # (-sig: a byte order mark is dropped)
            return f.read()
    except OSError as e:
        raise CcoptError(f"cannot read input file '{name}': {e.strerror}") from None
    except UnicodeDecodeError:
        raise CcoptError(f"input file '{name}' is not UTF-8 text") from None
