"""Timelines of a simulation: Chrome/Perfetto trace-event JSON and a matplotlib PNG.

The trace has a process per rank class (named by its representative's mesh coordinates and how
many ranks it stands for), a thread per stream, and one complete ("X") slice per op with its
FLOPs and bytes; Perfetto (ui.perfetto.dev) and chrome://tracing open it as it is.
"""

from __future__ import annotations

import json
import os
from typing import TYPE_CHECKING, Any

from ccopt.files import write_atomic

if TYPE_CHECKING:
    from ccopt.sim.program import Report

COLORS = {"compute": "tab:blue", "copy": "tab:green", "comm": "tab:orange"}


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


def write_trace(report: Report, path: str | os.PathLike[str]) -> None:
    write_atomic(path, json.dumps(trace_events(report)))


def write_plot(report: Report, path: str | os.PathLike[str]) -> None:
    """A PNG timeline of the slowest rank class: a lane per stream, ops coloured by kind."""
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        from ccopt.diagnostics import CcoptError

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
    fig.savefig(buffer, format="png", dpi=100)
    plt.close(fig)
    write_atomic(path, buffer.getvalue())
