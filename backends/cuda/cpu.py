"""Run generated CUDA on the CPU: the test harness of the backend.

The `.cu` that nvcc compiles for GPUs is compiled by g++ against `host/ccopt_host.h` (CUDA
runtime, kernels, cuBLAS and NCCL mapped onto the host; ranks are threads) and executed with
the same per-rank inputs as the reference interpreter, so the two can be compared shard by shard.
"""

from __future__ import annotations

import ctypes
import subprocess
from collections.abc import Mapping
from importlib import resources
from pathlib import Path
from types import ModuleType

import numpy as np
from xdsl.dialects import func
from xdsl.dialects.builtin import ModuleOp

from ccopt.backends.cuda.blocks import block_table, environment, failed_ranks
from ccopt.backends.cuda.build import (
    build_once,
    cache_root,
    header_text,
    import_module,
    write_harness,
)
from ccopt.diagnostics import CcoptError
from ccopt.files import write_atomic

HOST_FLAGS = ["-std=c++20", "-O1", "-shared", "-fPIC", "-DCCOPT_HOST", "-w"]


def include_dirs() -> list[str]:
    return [
        str(resources.files("ccopt.backends.cuda") / "host"),
        str(resources.files("ccopt.backends.nccl") / "host"),
    ]


def compile_host(
    source: str, prefix: str, binding: str | None = None, module_name: str | None = None
) -> Path:
    """The shared library of `source` for the CPU harness (cached by content); with `binding`,
    the Python extension `module_name` of the program on the harness instead."""
    import sysconfig

    from ccopt.backends.cuda.emit import content_hash

    key = content_hash(
        source, prefix, " ".join(HOST_FLAGS), header_text(include_dirs()), binding or ""
    )
    directory = cache_root() / f"host-{key}"
    library = directory / (
        f"{module_name}{sysconfig.get_config_var('EXT_SUFFIX')}"
        if binding is not None
        else f"lib{prefix}_host.so"
    )
    if library.exists():
        return library
    return build_once(
        directory, library, lambda work: _compile_host(work, source, prefix, binding, library.name)
    )


def _compile_host(work: Path, source: str, prefix: str, binding: str | None, name: str) -> Path:
    """g++ of the program with the host driver (and the binding) in `work`; the library."""
    import sysconfig

    driver = write_harness(
        work, source, "driver.cpp", "ccopt_host_driver.h", f"CCOPT_HOST_DRIVER({prefix})"
    )
    sources = [str(driver)]
    python: list[str] = []
    if binding is not None:
        import pybind11

        write_atomic(work / "binding.cpp", binding)
        sources.append(str(work / "binding.cpp"))
        python = [f"-I{pybind11.get_include()}", f"-I{sysconfig.get_paths()['include']}"]
    partial = work / name
    command = [
        "g++",
        *HOST_FLAGS,
        *(f"-I{d}" for d in include_dirs()),
        *python,
        *sources,
        "-o",
        str(partial),
        "-lpthread",
    ]
    result = subprocess.run(command, capture_output=True, text=True)
    if result.returncode != 0:
        raise CcoptError(
            f"the CPU harness build failed:\n{' '.join(command)}\n{result.stderr[-4000:]}"
        )
    return partial


def build_on_host(module: ModuleOp, entry: str | None = None) -> ModuleType:
    """The program's Python module (the same binding `ccopt.build` makes) running on the CPU
    harness: tests drive `Program` as PyTorch code drives the GPU build. A rank's create, runs
    and close must come from one thread (the harness's device of a rank is per thread); the
    library also exports `ccopt_host_malloc/stream/copy_async/synchronize` for the caller."""
    from ccopt.backends.cuda.emit import content_hash, emit_binding, emit_cuda

    module, f = lowered(module, entry)
    source = emit_cuda(module, f.sym_name.data)
    module_name = f"ccopt_host_{f.sym_name.data}_{content_hash(source)}"
    binding = emit_binding(module, f.sym_name.data, module_name)
    path = compile_host(source, f"ccopt_{f.sym_name.data}", binding, module_name)
    return import_module(path, module_name)


def lowered(module: ModuleOp, entry: str | None) -> tuple[ModuleOp, func.FuncOp]:
    """The module as `ccopt.build` emits it, and its entry: itself where the entry is at the
    kernel level with a planned workspace, else a copy lowered as `ccopt.build` lowers one (the
    caller's module is left as it is)."""
    from ccopt.backends.cuda.build import lower
    from ccopt.ir import clone
    from ccopt.program import find_entry

    if not isinstance(module, ModuleOp):  # (a path, IR text or a front-end Program)
        from ccopt.program import load_program

        module = load_program(module)
    f = find_entry(module, entry)
    if "kernel.results" in f.attributes and "kernel.workspace" in f.attributes:
        return module, f
    copy = clone(module)
    return copy, find_entry(copy, lower(copy, entry))


def kernel_function(module: ModuleOp, entry: str | None) -> func.FuncOp:
    from ccopt.program import find_entry

    f = find_entry(module, entry)
    if "kernel.results" not in f.attributes:
        raise CcoptError(
            f"@{f.sym_name.data} is not at the kernel level: run convert-to-kernel first"
        )
    return f


class HostRunError(CcoptError):
    """Ranks of a program failed on the CPU harness: `ranks` maps each to its message."""

    def __init__(self, name: str, ranks: dict[int, str]):
        self.ranks = ranks
        lines = "\n".join(ranks[r] for r in sorted(ranks))
        super().__init__(f"@{name} failed on the CPU harness:\n{lines}")


def run_on_host(
    module: ModuleOp,
    inputs: Mapping[str, np.ndarray],
    entry: str | None = None,
    schedule: str = "low",
    *,
    sync: bool = False,
    timeout_s: float = 60.0,
    fault: str | None = None,
) -> dict[str, list[np.ndarray]]:
    """Per-rank shards of every output (`result<i>` and updated arguments) after running the
    program's generated CUDA on the CPU harness with the given global inputs (a program above
    the kernel level is lowered first, as `ccopt.build` lowers it).

    Each rank runs as a caller would on a GPU (`host/ccopt_host_driver.h`): inputs copied to
    device memory on the caller's streams, the run ordered after them and the copies back after
    it by events only - `sync` makes the run block instead. `fault` ("RANK:CALL:KIND", see
    `host/nccl_host.h`) injects an NCCL failure; a failed rank raises HostRunError."""
    from ccopt.backends.cuda.emit import emit_cuda

    module, f = lowered(module, entry)
    per_arg = caller_blocks(module, f, inputs)  # (bad inputs refused before a compile)
    source = emit_cuda(module, f.sym_name.data)
    library = ctypes.CDLL(str(compile_host(source, f"ccopt_{f.sym_name.data}")))
    pointers, sizes = block_table(per_arg)
    report = ctypes.create_string_buffer(1 << 16)
    library.ccopt_host_run.argtypes = [
        ctypes.c_void_p,
        ctypes.c_void_p,
        ctypes.c_int,
        ctypes.c_double,
        ctypes.c_char_p,
        ctypes.c_long,
    ]
    check_host_options(schedule, fault, len(per_arg[0]) if per_arg else 1)
    with environment(CCOPT_HOST_SCHEDULE=schedule, CCOPT_HOST_FAULT=fault):
        failed = library.ccopt_host_run(pointers, sizes, int(sync), timeout_s, report, len(report))
    if failed:
        raise HostRunError(f.sym_name.data, failed_ranks(report.value))
    return written_blocks(f, per_arg)


FAULT_KINDS = ("error", "async", "die")


def check_host_options(schedule: object, fault: object, ranks: int) -> None:
    """`schedule` is low or high; `fault` is RANK:CALL:KIND with a rank of the run (the harness
    ignores a plan it cannot read, so a fault test with a typo passed without a fault)."""
    if schedule not in ("low", "high"):
        raise CcoptError(f"schedule is 'low' or 'high' (stream order), got {schedule!r}")
    if fault is None:
        return
    parts = fault.split(":") if isinstance(fault, str) else []
    if (
        len(parts) != 3
        or not parts[0].isdecimal()
        or not parts[1].isdecimal()
        or parts[2] not in FAULT_KINDS
    ):
        raise CcoptError(
            f"fault is 'RANK:CALL:KIND' (KIND: {', '.join(FAULT_KINDS)}), got {fault!r}"
        )
    if int(parts[0]) >= ranks:
        raise CcoptError(f"fault names rank {parts[0]}, but the run has {ranks} ranks")


def caller_blocks(
    module: ModuleOp, f: func.FuncOp, inputs: Mapping[str, np.ndarray]
) -> list[list[np.ndarray]]:
    """Per argument of the kernel-level function `f`, every rank's block as a caller passes it:
    the inputs' shards, then garbage (as cudaMalloc hands it out) for each result."""
    from ccopt.interpreters.distributed import (
        InterpreterError,
        distribute,
        garbage,
        numpy_dtype,
        same_kind,
    )
    from ccopt.program import (
        argument_names,
        argument_tensor,
        cast_input,
        input_arguments,
        module_meshes,
    )

    (mesh,) = module_meshes(module).values()
    args = input_arguments(f)
    names = argument_names(f)
    if not isinstance(inputs, Mapping):
        raise CcoptError(f"inputs map argument names to arrays, got {type(inputs).__name__}")
    missing = [n for n in names if n not in inputs]
    if missing:
        raise CcoptError(
            f"missing input for argument '{missing[0]}' of @{f.sym_name.data} "
            f"(arguments: {', '.join(names)})"
        )
    extra = [n for n in inputs if n not in names]
    if extra:  # (as ccopt.run refuses one: a misspelled name would run on nothing of it)
        raise CcoptError(
            f"input '{extra[0]}' is not an argument of @{f.sym_name.data} "
            f"(arguments: {', '.join(names)})"
        )
    per_arg: list[list[np.ndarray]] = []
    for n, a in zip(names, args, strict=True):
        t = argument_tensor(a)
        value, want = np.asarray(inputs[n]), numpy_dtype(t.element_type)
        if not same_kind(value.dtype, want):  # (converted within a kind, as ccopt.run does)
            raise CcoptError(f"input '{n}' has dtype {value.dtype}, argument needs {want} ({t})")
        value = cast_input(n, value, want, t)  # (refused where it would wrap, as ccopt.run does)
        try:
            per_arg.append(distribute(value, t, mesh).shards)
        except InterpreterError as e:
            raise CcoptError(f"input '{n}': {e}") from None
    for r in f.body.blocks[0].args[len(args) :]:
        t = argument_tensor(r)
        dtype = numpy_dtype(t.element_type)
        per_arg.append([garbage(t.local_shape(mesh, c), dtype) for c in mesh.all_coords()])
    return [[np.array(s, order="C") for s in shards] for shards in per_arg]


def written_blocks(f: func.FuncOp, per_arg: list[list[np.ndarray]]) -> dict[str, list[np.ndarray]]:
    """The blocks a run wrote, by output name: `result<i>` and the arguments updated in place."""
    from ccopt.program import argument_names, input_arguments

    inputs = len(input_arguments(f))
    outputs = {f"result{i}": per_arg[inputs + i] for i in range(len(per_arg) - inputs)}
    names = argument_names(f)
    for index in f.attributes["kernel.updated"].get_values():  # type: ignore[union-attr]
        outputs[names[index]] = per_arg[index]
    return outputs
