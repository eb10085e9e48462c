"""User-facing errors: a location, a message, the source line - never a traceback.

Every ccopt tool turns a bad input (malformed IR, a placement the verifier rejects, a pass asked to
do something illegal, a missing file, a wrong input array) into one of these and exits 1. The
format is MLIR's: `file:line:col: error: message`, then the source line and a caret.
"""

from __future__ import annotations

import sys
import warnings
from bisect import bisect_right
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from xdsl.utils.exceptions import DiagnosticException

if TYPE_CHECKING:  # xdsl.ir and the builtin dialect take ~0.3 s to import: tools that only
    from xdsl.ir import Operation  # report file errors (ccopt-sim, ccopt-et) do without them


@dataclass
class SourceText:
    """A source file (or one `// -----` chunk of it) and where its lines start (found on first
    use: a 250 MB input that reads without error never needs them)."""

    name: str
    text: str
    line_offset: int = 0
    _line_starts: list[int] | None = field(default=None, repr=False)

    @property
    def _starts(self) -> list[int]:
        if self._line_starts is None:
            self._line_starts = line_starts(self.text)
        return self._line_starts

    def line_col(self, offset: int) -> tuple[int, int]:
        """1-based line (including the chunk's offset) and column of a character offset."""
        index = bisect_right(self._starts, offset) - 1
        return index + 1 + self.line_offset, offset - self._starts[index] + 1

    def line_text(self, line: int) -> str | None:
        index = line - 1 - self.line_offset
        if not 0 <= index < len(self._starts):
            return None
        end = self.text.find("\n", self._starts[index])
        return self.text[self._starts[index] : end if end != -1 else len(self.text)]


def line_starts(text: str) -> list[int]:
    """Offsets where the lines of `text` start (one numpy scan for ASCII text, whose character
    offsets are its byte offsets)."""
    if text.isascii() and len(text) > 1 << 16:
        import numpy as np

        newlines = np.flatnonzero(np.frombuffer(text.encode("ascii"), np.uint8) == 10)
        return [0, *(newlines + 1).tolist()]
    starts = [0]
    find = text.find
    pos = find("\n")
    while pos != -1:
        starts.append(pos + 1)
        pos = find("\n", pos + 1)
    return starts


class CcoptError(Exception):
    """An error in the user's input, reported without a traceback; about the input as a whole
    (`file: error: message`) when no op or position is to blame."""

    def render(self, source: SourceText | None = None) -> str:
        return f"{source.name}: error: {self}" if source is not None else f"error: {self}"


class LocatedError(CcoptError):
    """An error (or, with `severity`, a warning) at a known file position."""

    def __init__(self, message: str, file: str, line: int, col: int, severity: str = "error"):
        super().__init__(message)
        self.message, self.file, self.line, self.col = message, file, line, col
        self.severity = severity

    def render(self, source: SourceText | None = None) -> str:
        out = f"{self.file}:{self.line}:{self.col}: {self.severity}: {self.message}"
        text = source.line_text(self.line) if source is not None else None
        if text is not None:
            out += f"\n{text}\n{' ' * (self.col - 1)}^"
        return out


class OpError(CcoptError, DiagnosticException):
    """An error about an operation (verifier or pass); located by the op's source location."""

    def __init__(self, op: Operation, message: str):
        super().__init__(message)
        self.op, self.message = op, message
        # Python's display of the exception (a `ccopt.run` caller's traceback) says which op
        # and where, below the message; str() stays the message that tools render and wrap
        self.add_note(render_at_op(op, message, None, "error").split("\n")[0])

    context: str | None = None
    """A note rendered below the error (the pass after which the IR stopped verifying)."""

    def render(self, source: SourceText | None = None) -> str:
        out = render_at_op(self.op, self.message, source, "error")
        return out if self.context is None else f"{out}\nnote: {self.context}"


class OpWarning(UserWarning):
    """A pass did something other than what was asked (e.g. fewer chunks than requested) and
    says so at the op, as MLIR's emitWarning does; `ccopt` prints it located and goes on."""

    def __init__(self, op: Operation, message: str):
        super().__init__(render_at_op(op, message, None, "warning"))  # located for Python's display
        self.op, self.message = op, message

    def render(self, source: SourceText | None = None) -> str:
        return render_at_op(self.op, self.message, source, "warning")


def op_name(op: Operation) -> str:
    """The op's name as written: an unregistered op (`--allow-unregistered-dialect`) is one
    class, `builtin.unregistered`, that keeps the name it was written with."""
    written = getattr(op, "op_name", None)
    return written.data if op.name == "builtin.unregistered" and written is not None else op.name


def render_at_op(op: Operation, message: str, source: SourceText | None, severity: str) -> str:
    from xdsl.dialects.builtin import FileLineColLoc

    text = f"'{op_name(op)}' op {message}"
    loc = op.location
    if isinstance(loc, FileLineColLoc):
        located = LocatedError(text, loc.filename.data, loc.line.data, loc.column.data, severity)
        return located.render(source)
    return f"{source.name}: {severity}: {text}" if source is not None else f"{severity}: {text}"


@contextmanager
def printing_op_warnings(source: SourceText | None = None) -> Iterator[None]:
    """Print each OpWarning raised inside on stderr, located in `source` (or by the op's own
    file location), when it is raised (every one, not once per place as Python's default filter
    would); other warnings go on as usual."""
    show = warnings.showwarning

    def located(message: Warning | str, *args: Any, **kwargs: Any) -> None:
        if isinstance(message, OpWarning):
            print(message.render(source), file=sys.stderr)
        else:
            show(message, *args, **kwargs)

    with warnings.catch_warnings():
        warnings.simplefilter("always", OpWarning)
        warnings.showwarning = located
        yield


def first_line(exc: BaseException) -> str:
    """The message of an xDSL exception without the IR dump xDSL attaches as notes."""
    return str(exc).strip()
