"""What one call of each generated CUDA program issues on a GPU, per example and schedule.

Every bundled example is lowered under each schedule of `ccopt.frontend.workloads.PIPELINES`
(plus the unoptimized program) to the kernel level, memory planned as `ccopt --build` does, and
emitted; the emitter's log of GPU operations (rank 0) gives, per call:

- ops: every GPU operation (kernel launches, copies, cuBLAS gemms, NCCL calls or groups);
- calls: the NCCL calls inside them (an uneven reduce-scatter is a group of rooted calls);
- copies: launches that only move data (copy kernels, device/host memcpys), and their share;
- copied: bytes those copies read; "copy/gemm-in": copied bytes over the bytes the gemms read;
- moved/useful: bytes every op reads and writes over those of the ops that are not copies;
- predicted: the step time the simulator (`ccopt.sim.program.predicted_step_time_ns`) predicts
  for the schedule on `dgx-h100` (n/a where it cannot time the schedule).

This is a static count of the generated code, not a GPU measurement; the last column,
"ops/unopt", is the schedule's ops over the unoptimized program's ops (not a time ratio).

    python bench/gpu_ops.py [--example NAME]
"""

from __future__ import annotations

import argparse
from dataclasses import dataclass
from pathlib import Path

from ccopt.backends.cuda.emit import GpuOp, gpu_ops
from ccopt.frontend.workloads import PIPELINES
from ccopt.passes.pipeline import run_pipeline
from ccopt.program import load_program

EXAMPLES = Path(__file__).resolve().parent.parent / "examples"
MACHINE = "dgx-h100"


@dataclass
class Count:
    ops: int
    kernels: int
    copies: int
    gemms: int
    nccl: int
    nccl_calls: int
    copied: int
    gemm_in: int
    moved: int
    useful: int
    predicted: str

    @property
    def copy_share(self) -> float:
        return self.copies / self.ops if self.ops else 0.0


def count(log: list[GpuOp], predicted: str) -> Count:
    copies = [o for o in log if o.kind == "copy"]
    return Count(
        ops=len(log),
        kernels=sum(o.kind in ("kernel", "memset") for o in log),
        copies=len(copies),
        gemms=sum(o.what == "gemm" for o in log),
        nccl=sum(o.kind == "nccl" for o in log),
        nccl_calls=sum(o.calls for o in log if o.kind == "nccl"),
        copied=sum(o.read or o.written for o in copies),
        gemm_in=sum(o.read for o in log if o.what == "gemm"),
        moved=sum(o.read + o.written for o in log),
        useful=sum(o.read + o.written for o in log if o.kind != "copy"),
        predicted=predicted,
    )


def predict(module) -> str:  # noqa: ANN001 - an L1/L2 module
    """The simulator's step time on MACHINE (ccopt mode), or why it cannot time the schedule."""
    from ccopt.diagnostics import CcoptError
    from ccopt.sim.program import predicted_step_time_ns

    try:
        return f"{predicted_step_time_ns(module, MACHINE) / 1e3:.1f}us"
    except CcoptError as e:  # a bench row must not stop the table
        return f"n/a ({type(e).__name__})"


def measure(name: str, pipeline: str) -> Count:
    module = load_program(EXAMPLES / f"{name}.mlir")
    if pipeline:
        run_pipeline(module, pipeline)
    predicted = predict(module.clone())
    run_pipeline(module, "convert-to-kernel,plan-memory")
    return count(gpu_ops(module), predicted)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--example", action="append", help="only these examples (repeatable)")
    args = parser.parse_args()
    header = (
        f"{'workload':22} {'schedule':25} {'ops':>4} {'kern':>4} {'gemm':>4} {'nccl':>4} {'calls':>5} "
        f"{'copies':>6} {'copy%':>6} {'copied':>8} {'copy/gemm-in':>12} {'moved/useful':>12} "
        f"{'predicted':>10} {'ops/unopt':>9}"
    )
    print("GPU operations per call on rank 0 (static count of the generated .cu)")
    print(header)
    print("-" * len(header))
    for name, schedules in PIPELINES.items():
        if args.example and name not in args.example:
            continue
        base = measure(name, "")
        for schedule, pipeline in {"unoptimized": "", **schedules}.items():
            c = base if not pipeline else measure(name, pipeline)
            print(
                f"{name:22} {schedule:25} {c.ops:>4} {c.kernels:>4} {c.gemms:>4} {c.nccl:>4} "
                f"{c.nccl_calls:>5} "
                f"{c.copies:>6} {c.copy_share:>6.0%} {c.copied:>8} "
                f"{share(c.copied, c.gemm_in):>12} {share(c.moved, c.useful):>12} "
                f"{c.predicted:>10} {ratio(c.ops, base.ops):>9}"
            )


def share(a: int, b: int) -> str:
    return f"{a / b:.2f}" if b else "-"


def ratio(a: float, b: float) -> str:
    return f"{a / b:.2f}x" if b else "-"


if __name__ == "__main__":
    main()
