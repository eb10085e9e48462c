"""`ccopt-et`: show a Chakra execution trace set as readable JSON (like chakra_jsonizer).

    ccopt-et traces/allreduce              # every rank of traces/allreduce.<r>.et
    ccopt-et traces/allreduce.3.et         # one file
    ccopt-et traces/allreduce --rank 0 -o rank0.json

Each rank is {"rank", "file", "metadata", "nodes"}; protobuf's JSON mapping is used (64-bit
integers as strings), and every node also gets "attributes": name -> value as ASTRA-sim reads it.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from pathlib import Path

from ccopt.diagnostics import CcoptError
from ccopt.tools import quiet_on_closed_pipe


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="ccopt-et", description="Dump a Chakra execution trace set (PREFIX.<rank>.et) as JSON."
    )
    p.add_argument("trace", help="a trace prefix DIR/PREFIX or one .et file")
    p.add_argument("--rank", type=int, help="only this rank's file")
    p.add_argument("-o", "--output", help="write the JSON here instead of stdout")
    return p


def selected_files(trace: str, rank: int | None) -> list[tuple[int | None, Path]]:
    """(rank, path) of the files to show."""
    from ccopt.sim.chakra import TraceError, trace_paths

    if trace.endswith(".et"):
        return [(None, Path(trace))]
    if rank is not None:
        return [(rank, Path(f"{trace}.{rank}.et"))]
    paths = trace_paths(trace)
    if not paths:
        raise TraceError(f"{trace}.0.et: error: no trace files with prefix '{trace}'")
    return list(enumerate(paths))


def dump(trace: str, rank: int | None) -> list[dict[str, object]]:
    from ccopt.sim.chakra import node_attributes, read_trace, trace_to_dict

    out = []
    for r, path in selected_files(trace, rank):
        loaded = read_trace(path)
        view = trace_to_dict(loaded)
        for node_view, node in zip(view["nodes"], loaded.nodes, strict=True):
            node_view["attributes"] = node_attributes(node)
        out.append({"rank": r, "file": str(path), **view})
    return out


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
