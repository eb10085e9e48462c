"""Build a program into an importable pybind11 module: nvcc for the kernels, NCCL and cuBLAS from
their PyPI wheels, cached by content hash.

    mod = ccopt.build("examples/megatron_mlp.mlir", "split-all-reduce,reorder-elementwise,fuse-elementwise")
    prog = mod.Program(rank, world, uid)     # uid = mod.unique_id() on rank 0, shared
    prog.run(*local_blocks_of_arguments, *local_blocks_of_results)  # on the caller's stream
                                                                     # (stream=, sync=: README)
"""

from __future__ import annotations

import functools
import importlib.util
import os
import shutil
import subprocess
import sys
import sysconfig
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from types import ModuleType
from typing import TYPE_CHECKING

from ccopt.diagnostics import CcoptError
from ccopt.files import write_atomic

if TYPE_CHECKING:
    from xdsl.dialects.builtin import ModuleOp

DEFAULT_ARCHS = ("sm_80", "sm_90")


def nvidia_dirs(package: str) -> tuple[Path, Path]:
    """include/ and lib/ of an NVIDIA wheel (`nccl` or `cu13` for cuBLAS)."""
    spec = importlib.util.find_spec("nvidia")
    roots = (
        list(spec.submodule_search_locations) if spec and spec.submodule_search_locations else []
    )
    for root in roots:
        base = Path(root) / package
        if (base / "include").is_dir():
            return base / "include", base / "lib"
    wheel = {"nccl": "nvidia-nccl-cu13", "cu13": "nvidia-cublas"}[package]
    raise CcoptError(f"the {wheel} wheel is not installed (pip install '{wheel}')")


def cuda_home() -> Path:
    """The CUDA toolkit: $CUDA_HOME, else the one nvcc belongs to (nvcc may be a wrapper)."""
    nvcc = shutil.which("nvcc")
    if nvcc is None:
        raise CcoptError("nvcc is not on PATH: the CUDA toolkit is needed to build GPU modules")
    candidates = [
        os.environ.get("CUDA_HOME"),
        os.environ.get("CUDA_PATH"),
        Path(nvcc).resolve().parent.parent,
        "/usr/local/cuda",
    ]
    for candidate in candidates:
        if candidate and (Path(candidate) / "include" / "cuda_runtime.h").exists():
            return Path(candidate)
    raise CcoptError("cannot find the CUDA toolkit's headers: set CUDA_HOME")


def header_text(dirs: Sequence[str]) -> str:
    """Every header in `dirs`, for a build's cache key: what was built against other headers is
    built again."""
    return "".join(Path(d, name).read_text() for d in dirs for name in sorted(os.listdir(d)))


def cache_root() -> Path:
    """Where built modules and CPU-harness libraries are cached: $CCOPT_CACHE, else
    ~/.cache/ccopt."""
    given = os.environ.get("CCOPT_CACHE", "")  # (empty: unset, as a shell's `VAR=` means)
    root = Path(given).expanduser() if given else Path.home() / ".cache" / "ccopt"
    try:
        if root.exists() and not root.is_dir():
            raise NotADirectoryError(20, "it is not a folder")
        root.mkdir(parents=True, exist_ok=True)
        if not os.access(root, os.W_OK):
            raise PermissionError(13, "permission denied")
    except OSError as e:
        raise CcoptError(
            f"cannot use the build cache '{root}' ($CCOPT_CACHE): {e.strerror or e}"
        ) from None
    return root


def build_once(directory: Path, target: Path, make: Callable[[Path], Path]) -> Path:
    """`target` (in `directory`), built by `make` unless it exists: `make(work)` builds in a
    private work folder and returns the file it built, which replaces `target` at once. The
    folder's lock makes concurrent builds of one key (every rank of a job importing the same
    module) wait for the first instead of writing the same intermediate files; the work folder
    keeps builds of other keys apart (a shared `cache_dir` mixed their objects)."""
    import fcntl
    import tempfile

    try:
        directory.mkdir(parents=True, exist_ok=True)
        lock = open(directory / ".lock", "a")  # noqa: SIM115  (held until the build ends)
    except OSError as e:
        raise CcoptError(f"cannot build in '{directory}': {e.strerror or e}") from None
    with lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if target.exists():
            return target
        work = Path(tempfile.mkdtemp(prefix=".build-", dir=directory))
        try:
            os.replace(make(work), target)
        finally:
            shutil.rmtree(work, ignore_errors=True)
    return target


def write_harness(directory: Path, source: str, driver: str, header: str, macro: str) -> Path:
    """`directory` made, holding the program (`program.cu`) and a harness's driver file `driver`
    that includes it and the harness `header` and instantiates the header's `macro` call (the
    CPU and the shared-GPU harnesses build alike); returns the driver's path."""
    directory.mkdir(parents=True, exist_ok=True)
    write_atomic(directory / "program.cu", source)
    path = directory / driver
    write_atomic(path, f'#include "program.cu"\n#include "{header}"\n{macro}\n')
    return path


def run(command: Sequence[str], what: str) -> None:
    result = subprocess.run(list(command), capture_output=True, text=True)
    if result.returncode != 0:
        raise CcoptError(f"{what} failed:\n{' '.join(command)}\n{result.stderr[-6000:]}")


def compile_module(
    source: str, binding: str, module_name: str, archs: Sequence[str], directory: Path
) -> Path:
    """nvcc -c the program, compile the binding, link both with NCCL, cuBLAS and the CUDA
    runtime, all in `directory` (a work folder of `build_once`); returns the linked module."""
    import pybind11

    nccl_include, nccl_lib = nvidia_dirs("nccl")
    blas_include, blas_lib = nvidia_dirs("cu13")
    cuda = cuda_home()
    cuda_lib = next(
        (
            p
            for p in (cuda / "lib64", cuda / "lib", cuda / "targets" / "x86_64-linux" / "lib")
            if (p / "libcudart.so").exists()
        ),
        cuda / "lib64",
    )
    write_atomic(directory / "program.cu", source)
    write_atomic(directory / "binding.cpp", binding)
    gencode = [f"-gencode=arch=compute_{a.removeprefix('sm_')},code={a}" for a in archs]
    run(
        [
            "nvcc",
            "-c",
            "-O2",
            "-std=c++17",
            "-Xcompiler",
            "-fPIC",
            *gencode,
            f"-I{nccl_include}",
            f"-I{blas_include}",
            str(directory / "program.cu"),
            "-o",
            str(directory / "program.o"),
        ],
        "nvcc (kernels)",
    )
    run(
        [
            os.environ.get("CXX", "g++"),
            "-c",
            "-O2",
            "-std=c++17",
            "-fPIC",
            "-fvisibility=hidden",
            f"-I{pybind11.get_include()}",
            f"-I{sysconfig.get_paths()['include']}",
            f"-I{cuda / 'include'}",
            f"-I{nccl_include}",
            str(directory / "binding.cpp"),
            "-o",
            str(directory / "binding.o"),
        ],
        "the binding's compiler",
    )
    partial = directory / f"{module_name}{sysconfig.get_config_var('EXT_SUFFIX')}"
    rpath = ":".join(str(p) for p in (nccl_lib, blas_lib, cuda_lib))
    run(
        [
            "nvcc",
            "-shared",
            str(directory / "program.o"),
            str(directory / "binding.o"),
            "-o",
            str(partial),
            f"-L{nccl_lib}",
            f"-L{blas_lib}",
            f"-L{cuda_lib}",
            "-l:libnccl.so.2",
            "-l:libcublas.so.13",
            "-lcudart",
            f"-Xlinker=-rpath={rpath}",
        ],
        "the link",
    )
    return partial


def import_module(path: Path, module_name: str) -> ModuleType:
    if module_name in sys.modules:
        return sys.modules[module_name]
    spec = importlib.util.spec_from_file_location(module_name, path)
    assert spec is not None and spec.loader is not None
    try:
        module = importlib.util.module_from_spec(spec)  # (an extension loads here)
        spec.loader.exec_module(module)
    except ImportError as e:
        raise CcoptError(f"the built module {path} does not import: {e}") from None
    sys.modules[module_name] = module
    return module


def build(
    program: object,
    pipeline: str = "",
    *,
    mesh: object = None,
    entry: str | None = None,
    archs: Sequence[str] = DEFAULT_ARCHS,
    cache_dir: str | os.PathLike[str] | None = None,
    nccl_max_ctas: int = 16,
    inline: bool = True,
) -> ModuleType:
    """Run `pipeline` on `program` (path, text or module), lower it (`lower`, `inline` as
    there), emit CUDA and the binding, build them (cached by content hash) and import the
    module. `nccl_max_ctas` caps the CTAs each NCCL collective may occupy (0: NCCL's default)."""
    from ccopt.backends.cuda.emit import content_hash, emit_binding, emit_cuda
    from ccopt.passes.pipeline import run_pipeline
    from ccopt.program import bind_mesh, load_program

    archs = check_archs(archs)
    check_supported_archs(archs)
    check_build_options(cache_dir, nccl_max_ctas)
    if not isinstance(inline, bool):
        raise CcoptError(f"inline is True or False, got {inline!r}")
    module = load_program(program)  # type: ignore[arg-type]
    bind_mesh(module, mesh)  # type: ignore[arg-type]
    if pipeline:
        run_pipeline(module, pipeline)
    name = lower(module, entry, inline)
    source = emit_cuda(module, name, nccl_max_ctas)
    # (the binding too: a module built from an older binding was found by the same key)
    key = content_hash(source, emit_binding(module, name, "_"), " ".join(archs), _toolchain())
    module_name = f"ccopt_{name}_{key}"
    binding = emit_binding(module, name, module_name)
    directory = Path(cache_dir) if cache_dir is not None else cache_root() / f"module-{key}"
    target = directory / f"{module_name}{sysconfig.get_config_var('EXT_SUFFIX')}"
    if not target.exists():
        build_once(
            directory,
            target,
            lambda work: compile_module(source, binding, module_name, archs, work),
        )
    return import_module(target, module_name)


def check_archs(archs: Sequence[str] | str) -> tuple[str, ...]:
    """GPU architectures as nvcc's `sm_XY` names (one name alone is one architecture: iterated
    as a sequence, "sm_90" was four letters, each passed to nvcc); at least one, or nvcc
    silently builds for its default."""
    import re

    from ccopt.diagnostics import CcoptError

    if isinstance(archs, str):
        listed: tuple[object, ...] = (archs,)
    elif isinstance(archs, Iterable):
        listed = tuple(archs)
    else:
        raise CcoptError(f"archs must be GPU architectures like ['sm_80', 'sm_90'], got {archs!r}")
    if not listed:  # (nvcc would build for its own default architecture)
        raise CcoptError("archs is empty: give at least one GPU architecture, like sm_90")
    for arch in listed:
        if not isinstance(arch, str) or not re.fullmatch(r"sm_\d{2,3}[af]?", arch):
            raise CcoptError(f"arch {arch}: expected a GPU architecture like sm_80 or sm_90a")
    return listed  # type: ignore[return-value]


def check_supported_archs(archs: Sequence[str]) -> None:
    """Each architecture is one this nvcc builds for (`nvcc --list-gpu-code`; `sm_90a` and
    `sm_100f` by their base), said before the compile rather than in nvcc's own error; nothing
    is checked where nvcc cannot list them (the compile then reports)."""
    from ccopt.diagnostics import CcoptError

    known = _nvcc_codes()
    if not known:
        return
    for arch in archs:
        if arch.rstrip("af") not in known:
            raise CcoptError(
                f"arch {arch}: this nvcc does not build for it; it builds for "
                f"{', '.join(sorted(known, key=lambda a: int(a[3:])))} (nvcc --list-gpu-code)"
            )


@functools.cache
def _nvcc_codes() -> frozenset[str]:
    try:
        result = subprocess.run(
            ["nvcc", "--list-gpu-code"], capture_output=True, text=True, timeout=60
        )
    except (OSError, subprocess.SubprocessError):
        return frozenset()
    if result.returncode != 0:
        return frozenset()
    return frozenset(c for c in result.stdout.split() if c.startswith("sm_") and c[3:].isdigit())


def check_build_options(cache_dir: str | os.PathLike[str] | None, nccl_max_ctas: object) -> None:
    """What `build` is given beside the program, checked before anything is lowered."""
    from ccopt.diagnostics import CcoptError
    from ccopt.program import is_number

    if not is_number(nccl_max_ctas) or nccl_max_ctas < 0:  # type: ignore[operator]
        raise CcoptError(f"nccl_max_ctas must be an integer >= 0, got {nccl_max_ctas!r}")
    if cache_dir is not None and not isinstance(cache_dir, str | os.PathLike):
        raise CcoptError(f"cache_dir is a folder's path, got {type(cache_dir).__name__}")
    if cache_dir is not None and Path(cache_dir).exists() and not Path(cache_dir).is_dir():
        raise CcoptError(f"cache_dir '{os.fspath(cache_dir)}' is a file, not a directory")


INLINE_MAX_OPS = 32
"""Callees of at most this many ops are inlined before lowering; larger ones - a model's
repeated layers - stay functions, lowered, planned and emitted once (one host function per
callee) instead of once per call."""


def lower(module: ModuleOp, entry: str | None = None, inline: bool = True) -> str:
    """Bring `entry` to what the CUDA backend emits - the kernel level (`inline{max-ops=32}`,
    convert-to-kernel) with a planned workspace (plan-memory) - running only the steps it still
    needs, and return its name. `ccopt.build`, `ccopt --build`, `-t cuda` and `-t pybind11` all
    lower so; a program lowered by hand (e.g. with a plain `inline`) is emitted as it is.
    `inline=False` leaves the calls as they are: a pipeline that ran `inline` itself (say
    `inline{max-ops=0}`) has chosen which calls stay."""
    from ccopt.passes.pipeline import run_pipeline
    from ccopt.program import find_entry

    if "kernel.results" not in find_entry(module, entry).attributes:
        steps = "convert-to-kernel"
        if inline:
            steps = f"inline{{max-ops={INLINE_MAX_OPS}}},{steps}"
        run_pipeline(module, steps)
    f = find_entry(module, entry)
    if "kernel.workspace" not in f.attributes:
        run_pipeline(module, "plan-memory")
    return f.sym_name.data


def _toolchain() -> str:
    """What the cache key must change with: nvcc's version and the Python ABI."""
    nvcc = shutil.which("nvcc")
    version = (
        subprocess.run([nvcc, "--version"], capture_output=True, text=True).stdout if nvcc else ""
    )
    return version + str(sysconfig.get_config_var("EXT_SUFFIX"))
