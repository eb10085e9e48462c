"""ccopt's command-line tools: thin drivers over the library (`ccopt`, `ccopt-run`)."""

from __future__ import annotations

import functools
import os
import sys
from collections.abc import Callable, Sequence

Main = Callable[[Sequence[str] | None], int]


def quiet_on_closed_pipe(main: Main) -> Main:
    """`ccopt --help | head -1`: a reader that stops early closes the pipe. Like a Unix tool,
    exit quietly (status 141, as SIGPIPE would give) instead of a BrokenPipeError traceback."""

    @functools.wraps(main)
    def wrapped(argv: Sequence[str] | None = None) -> int:
        try:
            return main(argv)
        except BrokenPipeError:
            devnull = os.open(os.devnull, os.O_WRONLY)
            os.dup2(devnull, sys.stdout.fileno())  # Python flushes stdout again at exit
            return 141

    return wrapped
