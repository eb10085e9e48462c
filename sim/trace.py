"""Timelines of a simulation: Chrome/Perfetto trace-event JSON and a matplotlib plot.

The trace has a process per rank class (named by its representative's mesh coordinates and how
many ranks it stands for), a thread per stream, and one complete ("X") slice per op with its
FLOPs and bytes; Perfetto (ui.perfetto.dev) and chrome://tracing open it as it is.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ccopt.diagnostics import CcoptError
from ccopt.files import STDIO

if TYPE_CHECKING:
    from ccopt.sim.program import Report

COLORS = {"compute": "tab:blue", "copy": "tab:green", "comm": "tab:orange"}
PLOT_FORMATS = ("png", "svg", "pdf")


def trace_events(report: Report) -> dict[str, Any]:
    """The report's timeline as a trace-event document (times in µs, as the format wants)."""
    events: list[dict[str, Any]] = []
    for pid, (cls, slices) in enumerate(zip(report.classes, report.slices, strict=True)):
        label = f"ranks like {list(cls.coords)} (x{cls.ranks})"
        events.append({"ph": "M", "pid": pid, "name": "process_name", "args": {"name": label}})
        for stream in sorted({s.stream for s in slices}):
            name = "compute stream 0" if stream == 0 else f"stream {stream}"
            events.append(
                {
                    "ph": "M",
                    "pid": pid,
                    "tid": stream,
                    "name": "thread_name",
                    "args": {"name": name},
                }
            )
        for s in slices:
            events.append(
                {
                    "ph": "X",
                    "pid": pid,
                    "tid": s.stream,
                    "name": s.name,
                    "cat": s.kind,
                    "ts": s.start / 1000,
                    "dur": (s.end - s.start) / 1000,
                    "args": {"flops": s.flops, "bytes": s.bytes},
                }
            )
    return {
        "traceEvents": events,
        "displayTimeUnit": "ns",
        "otherData": {
            "machine": report.machine,
            "mesh": report.mesh,
            "step_time_ns": report.step_time_ns,
        },  # fmt: skip
    }


def trace_text(report: Report) -> str:
    """The trace file's text, one line ending in a newline (it may go to a terminal)."""
    return json.dumps(trace_events(report)) + "\n"


def plot_format(path: str | os.PathLike[str]) -> str:
    """The image format a --plot path asks for by its extension (PNG on standard output);
    matplotlib would otherwise be told one format and the file named another."""
    if os.fspath(path) == STDIO:
        return "png"
    suffix = Path(path).suffix.lower().lstrip(".")
    if suffix not in PLOT_FORMATS:
        expected = ", ".join(f".{f}" for f in PLOT_FORMATS)
        raise CcoptError(f"--plot '{path}': the file name must end in {expected}")
    return suffix


def plot_image(report: Report, image_format: str) -> bytes:
    """A timeline of the slowest rank class: a lane per stream, ops coloured by kind."""
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        raise CcoptError(
            "--plot needs matplotlib: pip install 'ccopt[plot]' (or write a --trace instead)"
        ) from None
    import io

    c = report.critical_class
    slices = report.slices[c]
    streams = sorted({s.stream for s in slices}) or [0]
    fig, ax = plt.subplots(figsize=(10, 1.2 + 0.6 * len(streams)))
    for lane, stream in enumerate(streams):
        for kind, color in COLORS.items():
            bars = [(s.start / 1000, (s.end - s.start) / 1000) for s in slices
                    if s.stream == stream and s.kind == kind]  # fmt: skip
            if bars:
                ax.broken_barh(bars, (lane - 0.4, 0.8), facecolors=color, label=kind)
    handles, labels = ax.get_legend_handles_labels()
    unique = dict(zip(labels, handles, strict=True))
    ax.legend(unique.values(), unique.keys(), loc="upper right", fontsize="small")
    ax.set_yticks(range(len(streams)), [f"stream {s}" for s in streams])
    ax.set_xlabel("time (µs)")
    ax.set_title(
        f"{report.machine}, {report.mesh}: step {report.step_time_ns / 1000:.1f} µs, "
        f"exposed communication {report.exposed_comm_ns / 1000:.1f} µs"
    )
    fig.tight_layout()
    buffer = io.BytesIO()
    fig.savefig(buffer, format=image_format, dpi=100)
    plt.close(fig)
    return buffer.getvalue()
