"""`ccopt-et`: show a Chakra execution trace set as readable JSON (like chakra_jsonizer).

    ccopt-et traces/allreduce              # every rank of traces/allreduce.<r>.et
    ccopt-et traces/allreduce.3.et         # one file
    ccopt-et - < traces/allreduce.3.et     # one file from standard input
    ccopt-et traces/allreduce --rank 0 -o rank0.json

Each rank is {"rank", "file", "metadata", "nodes"}; protobuf's JSON mapping is used (64-bit
integers as strings), and every node also gets "attributes": name -> value as ASTRA-sim reads it.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from ccopt.diagnostics import CcoptError
from ccopt.files import STDIO, input_name, is_stdin
from ccopt.tools import quiet_on_closed_pipe

if TYPE_CHECKING:
    from ccopt.sim.chakra import Trace


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="ccopt-et", description="Dump a Chakra execution trace set (PREFIX.<rank>.et) as JSON."
    )
    p.add_argument("trace", help="a trace prefix DIR/PREFIX, one .et file, or - (one on stdin)")
    p.add_argument("--rank", type=int, help="only this rank's file")
    p.add_argument("-o", "--output", help="write the JSON here instead of stdout")
    return p


def file_rank(path: str) -> int | None:
    """The rank a file's name gives it (PREFIX.<rank>.et), if any."""
    match = re.fullmatch(r".+\.(\d+)\.et", path)
    return int(match.group(1)) if match else None


def selected_files(trace: str, rank: int | None) -> list[tuple[int | None, Path]]:
    """(rank, path) of the files to show; --rank with one file must be that file's rank."""
    from ccopt.sim.chakra import TraceError, trace_paths

    if trace.endswith(".et"):
        if rank is not None and rank != file_rank(trace):
            raise CcoptError(f"--rank {rank}: '{trace}' is one file; give its prefix instead")
        return [(file_rank(trace), Path(trace))]
    if Path(trace).is_file():
        raise TraceError(
            f"{trace}: error: not a Chakra trace: give a .et file or the prefix DIR/PREFIX of "
            "a set PREFIX.<rank>.et"
        )
    if rank is not None:
        return [(rank, Path(f"{trace}.{rank}.et"))]
    paths = trace_paths(trace)
    if not paths:
        raise TraceError(f"{trace}.0.et: error: no trace files with prefix '{trace}'")
    return list(enumerate(paths))


def view(trace: Trace, rank: int | None, name: str) -> dict[str, object]:
    """One rank's JSON view, with every node's attributes as ASTRA-sim reads them."""
    from ccopt.sim.chakra import node_attributes, trace_to_dict

    shown = trace_to_dict(trace)
    for node_view, node in zip(shown["nodes"], trace.nodes, strict=True):
        node_view["attributes"] = node_attributes(node)
    return {"rank": rank, "file": name, **shown}


def dump(trace: str, rank: int | None) -> list[dict[str, object]]:
    from ccopt.sim.chakra import parse_trace, read_trace

    if is_stdin(trace):
        if rank is not None:
            raise CcoptError("--rank: standard input holds one file")
        return [view(parse_trace(sys.stdin.buffer.read(), input_name(trace)), None, STDIO)]
    return [view(read_trace(path), r, str(path)) for r, path in selected_files(trace, rank)]


@quiet_on_closed_pipe
def main(argv: Sequence[str] | None = None) -> int:
    args = parser().parse_args(argv)
    try:
        text = json.dumps(dump(args.trace, args.rank), indent=2, default=str) + "\n"
        if args.output:
            from ccopt.files import write_atomic

            write_atomic(args.output, text)
        else:
            sys.stdout.write(text)
    except CcoptError as e:
        print(f"ccopt-et: {e.render()}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
