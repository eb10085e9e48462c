"""The shared-GPU harness (`ccopt.backends.cuda.shared_gpu`): every rank of a program as a
thread on one GPU, NCCL replaced by `nccl/shared_gpu/nccl.h`. Here (no GPU) nvcc must build it
for programs that use every kind of NCCL call, and a run must fail rank by rank with the CUDA
call that failed, never hang or crash; `bench/gpu_check.py` runs it on a GPU against the
interpreter."""

from __future__ import annotations

import ctypes
import shutil
import subprocess

import pytest
from test_cuda import lowered, nvcc_available

import ccopt
from ccopt.backends.cuda.cpu import kernel_function
from ccopt.backends.cuda.emit import emit_cuda
from ccopt.backends.cuda.shared_gpu import (
    SharedGpuRunError,
    compile_shared_gpu,
    run_on_shared_gpu,
)
from ccopt.program import module_meshes


def has_gpu() -> bool:
    smi = shutil.which("nvidia-smi")
    return bool(smi) and subprocess.run([smi, "-L"], capture_output=True).returncode == 0


# all-reduce, reduce-scatter + all-gather with chunked overlap; grouped send/recv; rooted calls
@pytest.mark.parametrize(
    ("name", "schedule"),
    [
        ("megatron_mlp", "fused-collective-overlap"),
        ("megatron_mlp", "unoptimized"),
        ("pipeline_boundary", "sliced-transfer"),
        ("fusion_legality", "fuse-o1-w1-g1"),
    ],
)
def test_nvcc_builds_the_shared_gpu_library(name: str, schedule: str) -> None:
    nvcc_available()
    module = lowered(name, schedule)
    f = kernel_function(module, None)
    library = compile_shared_gpu(emit_cuda(module, f.sym_name.data), f"ccopt_{f.sym_name.data}")
    assert hasattr(ctypes.CDLL(str(library)), "ccopt_shared_gpu_run")


@pytest.mark.skipif(has_gpu(), reason="this machine has a GPU: bench/gpu_check.py runs there")
def test_without_a_gpu_every_rank_fails_naming_the_cuda_call() -> None:
    nvcc_available()
    module = lowered("megatron_mlp", "overlap")
    reference = ccopt.run(module, seed=1)
    with pytest.raises(SharedGpuRunError) as failure:
        run_on_shared_gpu(module, reference.inputs, timeout_s=10)
    (mesh,) = module_meshes(module).values()
    assert sorted(failure.value.ranks) == list(range(mesh.rank_count)) == list(range(6))
    for rank, line in failure.value.ranks.items():
        assert line.startswith(f"rank {rank}: cuda"), line
