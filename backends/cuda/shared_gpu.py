"""Run every rank of a generated program on one GPU: the shared-GPU harness.

Real NCCL refuses two ranks on one GPU, so a machine with a single GPU cannot run a program of
8 ranks with `ccopt.build`. Here the program's `.cu` - the same source `ccopt.build` compiles -
is compiled by nvcc against `nccl/shared_gpu/nccl.h`, which does the communication of ranks
that are threads of one process on one device, and driven by `cuda/shared_gpu/
shared_gpu_driver.h` as a caller on a GPU would (inputs copied in on two streams, the run
ordered after them and the copies back after it by events alone). Kernels, cuBLAS, streams,
events and the memory plan then run on the GPU exactly as in a real job, and every rank's
results can be compared with the reference interpreter's:

    library = compile_shared_gpu(emit_cuda(module, "mlp"), "ccopt_mlp")   # any machine with nvcc
    outputs, seconds = run_on_shared_gpu(module, reference.inputs)         # a machine with a GPU

Only numpy and ctypes are imported at the top: `run_library` runs a library built elsewhere on
a GPU machine that has no compiler stack installed (`bench/gpu_check.py` does).
"""

from __future__ import annotations

import ctypes
import os
from collections.abc import Mapping, Sequence
from importlib import resources
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from ccopt.backends.cuda.blocks import block_table, environment, failed_ranks

if TYPE_CHECKING:
    from xdsl.dialects.builtin import ModuleOp

ARCHS = ("sm_90",)
"""Hopper by default: the GPU machines this project is lent (`ccopt.build` targets sm_80 too)."""


class SharedGpuRunError(RuntimeError):
    """Ranks of a program failed on the shared GPU: `ranks` maps each to its message."""

    def __init__(self, name: str, ranks: dict[int, str]):
        self.ranks = ranks
        lines = "\n".join(ranks[r] for r in sorted(ranks))
        super().__init__(f"{name} failed on the shared GPU:\n{lines}")


def include_dirs() -> list[str]:
    """Before NCCL's own include folder: `#include <nccl.h>` finds the shared-GPU one; then the
    CPU harness's, for what both harnesses share (NCCL's API types, the drivers' report)."""
    return [
        str(resources.files("ccopt.backends.nccl") / "shared_gpu"),
        str(resources.files("ccopt.backends.cuda") / "shared_gpu"),
        str(resources.files("ccopt.backends.nccl") / "host"),
        str(resources.files("ccopt.backends.cuda") / "host"),
    ]


def compile_shared_gpu(source: str, prefix: str, archs: Sequence[str] = ARCHS) -> Path:
    """The shared library of the program `source` (emitted with `prefix`) with the shared-GPU
    driver, built by nvcc (cached by content hash like `ccopt.build`'s modules)."""
    from ccopt.backends.cuda.build import build_once, cache_root, header_text
    from ccopt.backends.cuda.emit import content_hash

    key = content_hash(source, prefix, " ".join(archs), header_text(include_dirs()))
    directory = cache_root() / f"shared-gpu-{key}"
    library = directory / f"lib{prefix}_shared_gpu.so"
    if library.exists():
        return library

    def make(work: Path) -> Path:
        return _compile(work, source, prefix, archs, library.name)

    return build_once(directory, library, make)


def _compile(work: Path, source: str, prefix: str, archs: Sequence[str], name: str) -> Path:
    """nvcc of the program with the shared-GPU driver in `work`; the library."""
    from ccopt.backends.cuda.build import cuda_home, nvidia_dirs, run, write_harness

    driver = write_harness(
        work, source, "driver.cu", "shared_gpu_driver.h", f"CCOPT_SHARED_GPU_DRIVER({prefix})"
    )
    blas_include, blas_lib = nvidia_dirs("cu13")
    partial = work / name
    run(
        [
            "nvcc",
            "-shared",
            "-O2",
            "-std=c++17",
            "-Xcompiler",
            "-fPIC",
            *(f"-gencode=arch=compute_{a.removeprefix('sm_')},code={a}" for a in archs),
            *(f"-I{d}" for d in include_dirs()),
            f"-I{blas_include}",
            f"-I{cuda_home() / 'include'}",
            str(driver),
            "-o",
            str(partial),
            f"-L{blas_lib}",
            "-l:libcublas.so.13",
            f"-Xlinker=-rpath={blas_lib}",
        ],
        "nvcc (shared-GPU harness)",
    )
    return partial


def run_library(
    library: str | os.PathLike[str],
    per_arg: list[list[np.ndarray]],
    *,
    iterations: int = 0,
    timeout_s: float = 120.0,
    name: str = "the program",
) -> list[float]:
    """Run a shared-GPU library once on `per_arg` (per argument, every rank's C-contiguous
    block, written in place with the results); with `iterations`, time that many more runs and
    return each rank's mean seconds per run. Raises SharedGpuRunError naming failed ranks."""
    lib = ctypes.CDLL(str(library))
    lib.ccopt_shared_gpu_run.argtypes = [
        ctypes.c_void_p,
        ctypes.c_void_p,
        ctypes.c_int,
        ctypes.c_double,
        ctypes.c_void_p,
        ctypes.c_char_p,
        ctypes.c_long,
    ]
    pointers, sizes = block_table(per_arg)
    ranks = len(per_arg[0]) if per_arg else 0
    seconds = (ctypes.c_double * max(ranks, 1))()
    report = ctypes.create_string_buffer(1 << 16)
    wait_s = os.environ.get("CCOPT_SHARED_GPU_WAIT_S") or str(timeout_s)  # (rendezvous)
    with environment(CCOPT_SHARED_GPU_WAIT_S=wait_s):
        failed = lib.ccopt_shared_gpu_run(
            pointers, sizes, iterations, timeout_s, seconds, report, len(report)
        )
    if failed:
        raise SharedGpuRunError(name, failed_ranks(report.value))
    return list(seconds)[:ranks] if iterations else []


def run_on_shared_gpu(
    module: ModuleOp,
    inputs: Mapping[str, np.ndarray],
    entry: str | None = None,
    *,
    iterations: int = 0,
    timeout_s: float = 120.0,
) -> tuple[dict[str, list[np.ndarray]], list[float]]:
    """Per-rank shards of every output (`result<i>` and updated arguments) of a kernel-level
    program run on this machine's current GPU, all ranks sharing it, with the given global
    inputs (as `run_on_host` takes them); with `iterations`, also each rank's mean seconds per
    run over that many timed runs."""
    from ccopt.backends.cuda.cpu import caller_blocks, kernel_function, written_blocks
    from ccopt.backends.cuda.emit import emit_cuda

    f = kernel_function(module, entry)
    name = f.sym_name.data
    library = compile_shared_gpu(emit_cuda(module, name), f"ccopt_{name}")
    per_arg = caller_blocks(module, f, inputs)
    seconds = run_library(
        library, per_arg, iterations=iterations, timeout_s=timeout_s, name=f"@{name}"
    )
    return written_blocks(f, per_arg), seconds
