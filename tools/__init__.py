"""ccopt's command-line tools: thin drivers over the library (`ccopt`, `ccopt-run`)."""

from __future__ import annotations

import functools
import inspect
import os
import sys
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import Any

Main = Callable[[Sequence[str] | None], int]


def quiet_on_closed_pipe(main: Main) -> Main:
    """`ccopt --help | head -1`: a reader that stops early closes the pipe. Like a Unix tool,
    exit quietly (status 141, as SIGPIPE would give) instead of a BrokenPipeError traceback.
    Standard output that cannot be written (`> /dev/full`, a full disk) is an error line and
    status 1, as an unwritable `-o` is."""

    @functools.wraps(main)
    def wrapped(argv: Sequence[str] | None = None) -> int:
        stdout = sys.stdout
        watched = sys.stdout = _WatchedStream(stdout)
        try:
            try:
                status = main(argv)
            except SystemExit:  # (argparse's --help and usage errors)
                watched.flush()
                if watched.error is None:
                    raise
                status = 1
            watched.flush()  # (what is still buffered fails here, not at exit)
        except BrokenPipeError:
            _silence_stdout()
            return 141
        except OSError:
            if watched.error is None:
                raise
        finally:
            sys.stdout = stdout
        if watched.error is None:
            return status
        _silence_stdout()  # (argparse swallows a failed write; the error is still noted)
        name = Path(inspect.unwrap(main).__code__.co_filename).stem.replace("_", "-")
        tool = "ccopt" if name == "ccopt-opt" else name
        reason = watched.error.strerror or watched.error
        print(f"{tool}: error: cannot write standard output: {reason}", file=sys.stderr)
        return 1

    return wrapped


class _WatchedStream:
    """Standard output, noting the error where writing it failed (an OSError from elsewhere is
    not an output error)."""

    def __init__(self, stream: Any):
        self.stream = stream
        self.error: OSError | None = None

    def write(self, text: str) -> int:
        try:
            return self.stream.write(text)
        except BrokenPipeError:
            raise
        except OSError as e:
            self.error = e
            raise

    def flush(self) -> None:
        try:
            self.stream.flush()
        except BrokenPipeError:
            raise
        except OSError as e:
            self.error = e
            raise

    def __getattr__(self, name: str) -> Any:
        return getattr(self.stream, name)


def _silence_stdout() -> None:
    """Point standard output at /dev/null: Python flushes it again at exit."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.__stdout__.fileno())  # type: ignore[union-attr]
    except (OSError, AttributeError, ValueError):
        pass  # (no file descriptor: a test's captured stream)


def batch_gc(main: Main) -> Main:
    """Run a tool's `main` with the collector batched (`ccopt.collection`), restored after it:
    tests call `main` in process."""

    @functools.wraps(main)
    def wrapped(argv: Sequence[str] | None = None) -> int:
        from ccopt.collection import batched_collection

        with batched_collection():
            return main(argv)

    return wrapped


def pause_collection(passes: Iterable[object]) -> bool:
    """Inside `batch_gc`, when every pass of a run frees the IR it erases by reference counting
    (its class says `releases_erased_ir`; `test/passes/test_erased_ir_freed.py` checks that
    such pipelines leave no cyclic garbage that grows with the program), the collector has
    nothing to find: at 10,000 Megatron blocks its collections took 5.4 s of a 44 s run (one
    middle-generation collection scanning 5 million live IR objects for 2.2 s, and 59 young
    ones) and freed 141 objects. It is switched off for the rest of the run (`batch_gc` switches
    it back on). Returns whether it was."""
    import gc

    if not all(getattr(p, "releases_erased_ir", False) for p in passes):
        return False
    gc.disable()
    return True
