"""Input files read as text with clear errors; output files either fully written or not written
at all."""

from __future__ import annotations

import os
import sys
import tempfile
from pathlib import Path

from ccopt.diagnostics import CcoptError


def write_atomic(path: str | os.PathLike[str], data: str | bytes) -> None:
    """Write to a temporary file beside `path` and rename it into place, so a reader (or an
    interrupted run) never sees half a file."""
    target = Path(path)
    directory = target.parent if str(target.parent) else Path(".")
    fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.", dir=directory)
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data.encode() if isinstance(data, str) else data)
        os.replace(tmp, target)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def read_text(path: str | os.PathLike[str] | None) -> str:
    """The UTF-8 text of an input file (standard input for None); a file that cannot be read
    (missing, a directory, no permission) or that is not text is a CcoptError naming it, as
    every ccopt tool reports it."""
    name = "<stdin>" if path is None else os.fspath(path)
    try:
        if path is None:  # decoded here: the locale's decoder may let bad bytes through
            return sys.stdin.buffer.read().decode("utf-8")
        with open(path, encoding="utf-8") as f:
            return f.read()
    except OSError as e:
        raise CcoptError(f"cannot read input file '{name}': {e.strerror}") from None
    except UnicodeDecodeError:
        raise CcoptError(f"input file '{name}' is not UTF-8 text") from None
