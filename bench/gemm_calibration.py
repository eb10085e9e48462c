"""Matmul efficiency on this machine's GPU, for a machine file's `matmul-efficiency` tables.

Times square and Megatron-shaped matmuls through PyTorch (cuBLAS, as the generated code calls
it) for each element type - bf16, f32, and f32 with TF32 tensor cores allowed (`tf32`) - and
prints the TFLOP/s each reached and the table `ccopt.sim.machine.calibrate_matmul` makes of
them against a machine preset's peaks (the H200 has the H100 SXM's compute peaks):

    python bench/gemm_calibration.py --machine dgx-h100 [--json out.json]

Matmuls below about 2048^3 finish faster than PyTorch issues them (microseconds of host work
each), so their figures are the host's rate, not the GPU's: use the table's large rows.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

SIZES = [(s, s, s) for s in (256, 512, 1024, 2048, 4096, 8192)] + [
    (4096, 4096, 4096),
    (4096, 1024, 4096),  # Megatron 8x1024x4096 on tp=4: FC2's chunks (overlap{chunks=3} ~ 1365)
    (4096, 1365, 4096),
    (8192, 4096, 16384),
]
ELEMENTS = {"bf16": ("bfloat16", False), "f32": ("float32", False), "tf32": ("float32", True)}


def measure(m: int, n: int, k: int, element: str, iterations: int = 10) -> float:
    """Mean seconds of one (m x k) @ (k x n) matmul after warm-up."""
    import torch

    dtype, tf32 = ELEMENTS[element]
    torch.backends.cuda.matmul.allow_tf32 = tf32
    a = torch.randn(m, k, device="cuda", dtype=getattr(torch, dtype))
    b = torch.randn(k, n, device="cuda", dtype=getattr(torch, dtype))
    for _ in range(3):
        a @ b
    start, stop = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    start.record()
    for _ in range(iterations):
        a @ b
    stop.record()
    stop.synchronize()
    return start.elapsed_time(stop) * 1e-3 / iterations


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--machine", default="dgx-h100", help="the preset whose peaks apply")
    parser.add_argument("--json", type=Path, default=None, help="also write the figures here")
    args = parser.parse_args()
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    from gpu_check import use_checkout

    use_checkout()
    try:
        import torch
    except ImportError:
        sys.exit("gemm_calibration: needs PyTorch with CUDA (the GPU machine's python3 has it)")
    if not torch.cuda.is_available():
        sys.exit("gemm_calibration: PyTorch sees no CUDA device")

    from ccopt.diagnostics import CcoptError
    from ccopt.sim.machine import calibrate_matmul, load_machine

    try:
        gpu = load_machine(args.machine).gpu
    except CcoptError as e:
        sys.exit(f"gemm_calibration: {e}")
    out: dict[str, object] = {"device": torch.cuda.get_device_name(), "machine": args.machine}
    for element in ELEMENTS:
        runs = [(m, n, k, measure(m, n, k, element)) for m, n, k in SIZES]
        for m, n, k, seconds in runs:
            print(
                f"{element:5s} {m:6d} x {n:6d} x {k:6d}  {2 * m * n * k / seconds / 1e12:7.1f} TFLOP/s"
            )
        out[element] = {
            "runs": runs,
            "peak_tflops": gpu.peak(element) / 1e12,
            "matmul-efficiency": calibrate_matmul(runs, gpu.peak(element)),
        }
        print(f"{element}: matmul-efficiency {out[element]['matmul-efficiency']}")  # type: ignore[index]
    if args.json:
        args.json.write_text(json.dumps(out, indent=1))


if __name__ == "__main__":
    main()
