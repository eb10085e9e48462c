"""What each CoCoNeT schedule buys, measured on the generated kernel-level program.

For every bundled workload and schedule this lowers the program to the kernel level (L3) on its
mesh and counts, for rank 0: kernels launched, NCCL calls, bytes every NCCL call moves through
its buffers, bytes of buffers the program allocates, and the workspace it needs once
`plan-memory` lets dead buffers share bytes; then it times the reference interpreter. Each
number is printed as a ratio to the unoptimized program measured in the same run (lower is
better); the last column, "plan", is the planned workspace over the unplanned one (every
buffer its own bytes) of the same schedule. This is a static model of the generated code, not a
GPU measurement.

    python bench/schedules.py [--repeat K]
"""

from __future__ import annotations

import argparse
import time
from dataclasses import dataclass
from math import prod
from pathlib import Path

from xdsl.dialects import func
from xdsl.dialects.builtin import ModuleOp

import ccopt
from ccopt.dialects import kernel as k
from ccopt.frontend.workloads import PIPELINES
from ccopt.interpreters.distributed import numpy_dtype
from ccopt.passes.pipeline import run_pipeline
from ccopt.program import load_program, module_meshes

EXAMPLES = Path(__file__).resolve().parent.parent / "examples"


@dataclass
class Cost:
    kernels: int
    nccl_calls: int
    nccl_bytes: int
    buffer_bytes: int
    workspace: int  # planned
    unplanned: int
    seconds: float


def nbytes(value, mesh) -> int:  # noqa: ANN001
    t = k.tensor_of(value)
    return prod(t.local_shape(mesh, mesh.coords(0))) * numpy_dtype(t.element_type).itemsize


def planned_workspace(module: ModuleOp, pipeline: str) -> int:
    """The workspace bytes of the (one) kernel-level function once `pipeline` plans it."""
    planned = module.clone()
    run_pipeline(planned, pipeline)
    (f,) = [op for op in planned.ops if isinstance(op, func.FuncOp)]
    return f.attributes["kernel.workspace"].value.data  # type: ignore[union-attr]


def measure(name: str, pipeline: str, repeat: int) -> Cost:
    module = load_program(EXAMPLES / f"{name}.mlir")
    if pipeline:
        run_pipeline(module, pipeline)
    inputs = ccopt.run(module, seed=0).inputs
    start = time.perf_counter()
    for _ in range(repeat):
        ccopt.run(module, inputs)
    seconds = (time.perf_counter() - start) / repeat
    run_pipeline(module, "convert-to-kernel")
    workspace, unplanned = (
        planned_workspace(module, "plan-memory"),
        planned_workspace(module, "plan-memory{reuse=false}"),
    )
    (mesh,) = module_meshes(module).values()
    ops = list(module.walk())
    nccl = [op for op in ops if isinstance(op, k.NcclOp) and not isinstance(op, k.LocalBlockOp)]
    return Cost(
        kernels=sum(
            isinstance(op, k.DeviceOp)
            and not isinstance(op, k.NcclOp | k.EventRecordOp | k.EventWaitOp | k.StreamWaitOp)
            for op in ops
        ),
        nccl_calls=len(nccl),
        nccl_bytes=sum(nbytes(op.input, mesh) + nbytes(op.out, mesh) for op in nccl),
        buffer_bytes=sum(nbytes(op.result, mesh) for op in ops if isinstance(op, k.AllocOp)),
        workspace=workspace,
        unplanned=unplanned,
        seconds=seconds,
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=3, help="interpreter runs per measurement")
    args = parser.parse_args()
    header = (
        f"{'workload':24} {'schedule':26} {'kernels':>8} {'nccl':>6} {'nccl bytes':>11} "
        f"{'buffers':>8} {'workspace':>10} {'interp':>7} {'plan':>6}"
    )
    print("ratios against the unoptimized program of the same workload, this run (lower is better)")
    print(header)
    print("-" * len(header))
    for name, schedules in PIPELINES.items():
        base = measure(name, "", args.repeat)
        print(
            f"{name:24} {'unoptimized':26} {base.kernels:>8} {base.nccl_calls:>6} "
            f"{base.nccl_bytes:>11} {base.buffer_bytes:>8} {base.workspace:>10} "
            f"{base.seconds * 1e3:>5.1f}ms {ratio(base.workspace, base.unplanned):>6}"
        )
        for schedule, pipeline in schedules.items():
            cost = measure(name, pipeline, args.repeat)
            print(
                f"{'':24} {schedule:26} {ratio(cost.kernels, base.kernels):>8} "
                f"{ratio(cost.nccl_calls, base.nccl_calls):>6} "
                f"{ratio(cost.nccl_bytes, base.nccl_bytes):>11} "
                f"{ratio(cost.buffer_bytes, base.buffer_bytes):>8} "
                f"{ratio(cost.workspace, base.workspace):>10} {ratio(cost.seconds, base.seconds):>7} "
                f"{ratio(cost.workspace, cost.unplanned):>6}"
            )


def ratio(a: float, b: float) -> str:
    return f"{a / b:.2f}x" if b else "-"


if __name__ == "__main__":
    main()
