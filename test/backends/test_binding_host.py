"""The Python binding of a generated program, built against the CPU harness (`build_on_host`) and
driven the way PyTorch code drives the GPU build: tensors in device memory handed over through
`__cuda_array_interface__` (v3) or DLPack, work queued on the caller's streams, one thread per
rank. The harness runs queued work only when a stream is synchronized, in the order of
CCOPT_HOST_SCHEDULE, so a run that does not wait for the caller's stream reads unwritten (NaN)
device memory."""

from __future__ import annotations

import ctypes
import threading
from collections.abc import Callable
from pathlib import Path
from types import ModuleType

import numpy as np
import pytest

import ccopt
from ccopt.backends.cuda.cpu import build_on_host, kernel_function
from ccopt.interpreters.distributed import distribute
from ccopt.passes.pipeline import run_pipeline
from ccopt.program import (
    argument_names,
    argument_tensor,
    bind_mesh,
    input_arguments,
    load_program,
    module_meshes,
)
from ccopt.runner import RunResult

ROOT = Path(__file__).resolve().parents[2]
WORLD = 2


@pytest.fixture(scope="module")
def sgd() -> tuple[ModuleType, ctypes.CDLL, RunResult, dict[str, list[np.ndarray]]]:
    """SGD on dp=2: an all-reduce of g, then w updated in place (w is written); the module on
    the harness, its library, the interpreter's run and every rank's input blocks."""
    module = load_program(ROOT / "examples" / "sgd.mlir")
    bind_mesh(module, f"dp={WORLD}")
    run_pipeline(module, "convert-to-kernel,plan-memory")
    built = build_on_host(module)
    lib = ctypes.CDLL(built.__file__)
    lib.ccopt_host_malloc.restype = ctypes.c_void_p
    lib.ccopt_host_malloc.argtypes = [ctypes.c_size_t, ctypes.c_int]
    lib.ccopt_host_stream.restype = ctypes.c_void_p
    lib.ccopt_host_copy_async.argtypes = [ctypes.c_void_p] * 2 + [ctypes.c_size_t, ctypes.c_void_p]
    lib.ccopt_host_synchronize.argtypes = [ctypes.c_void_p]
    lib.ccopt_host_free.argtypes = [ctypes.c_void_p]
    reference = ccopt.run(module, seed=4)
    f = kernel_function(module, None)
    (mesh,) = module_meshes(module).values()
    inputs = {
        name: distribute(reference.inputs[name], argument_tensor(a), mesh).shards
        for name, a in zip(argument_names(f), input_arguments(f), strict=True)
    }
    return built, lib, reference, inputs


class DeviceArray:
    """A float32 block in (harness) device memory, filled by a copy queued on `fill_stream`;
    `stream` is what its __cuda_array_interface__ reports (None: no synchronization needed)."""

    def __init__(
        self,
        lib: ctypes.CDLL,
        value: np.ndarray,
        device: int,
        fill_stream: int,
        stream: int | None = None,
    ):
        self.lib, self.value = lib, np.array(value, dtype=np.float32, order="C")
        self.pointer = lib.ccopt_host_malloc(max(self.value.nbytes, 1), device)
        self.stream = stream
        lib.ccopt_host_copy_async(
            self.pointer, self.value.ctypes.data, self.value.nbytes, fill_stream
        )

    @property
    def __cuda_array_interface__(self) -> dict[str, object]:
        return {
            "shape": self.value.shape,
            "typestr": "<f4",
            "data": (self.pointer, False),
            "version": 3,
            "strides": None,
            "stream": self.stream,
        }

    def read(self, stream: int) -> np.ndarray:
        """The block, copied back on `stream` after what is queued there."""
        out = np.empty_like(self.value)
        self.lib.ccopt_host_copy_async(out.ctypes.data, self.pointer, out.nbytes, stream)
        self.lib.ccopt_host_synchronize(stream)
        return out

    def free(self) -> None:
        self.lib.ccopt_host_free(self.pointer)


def on_every_rank(work: Callable[[int], object]) -> list[object]:
    """`work(rank)` on one thread per rank (a rank's calls must share its thread); whatever a
    rank raises is its result."""
    results: list[object] = [None] * WORLD

    def main(rank: int) -> None:
        try:
            results[rank] = work(rank)
        except Exception as e:  # noqa: BLE001 - the test inspects each rank's exception
            results[rank] = e

    threads = [threading.Thread(target=main, args=(r,)) for r in range(WORLD)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return results


def blocks(inputs: dict[str, list[np.ndarray]], rank: int) -> list[np.ndarray]:
    return [inputs[name][rank] for name in ("g", "w", "lr")]


@pytest.fixture
def uid(sgd) -> bytes:  # noqa: ANN001
    return sgd[0].unique_id()


@pytest.mark.parametrize("order", ["low", "high"])
@pytest.mark.parametrize("via", ["stream", "array-interface"])
def test_a_run_waits_for_the_callers_stream_and_the_caller_for_the_run(
    sgd, uid: bytes, order: str, via: str, monkeypatch: pytest.MonkeyPatch
) -> None:  # noqa: ANN001
    """Inputs are written by copies still queued on the caller's stream (passed as `stream=`) or
    on a producer's stream (named only by each tensor's `__cuda_array_interface__`); the
    results are read back by a copy queued on the caller's stream after the run."""
    built, lib, reference, inputs = sgd
    monkeypatch.setenv("CCOPT_HOST_SCHEDULE", order)

    def rank_main(rank: int) -> np.ndarray:
        program = built.Program(rank, WORLD, uid, device=rank, timeout_s=10.0)
        caller, producer = lib.ccopt_host_stream(), lib.ccopt_host_stream()
        fill, reported = (caller, None) if via == "stream" else (producer, producer)
        arrays = [DeviceArray(lib, b, rank, fill, reported) for b in blocks(inputs, rank)]
        program.run(*arrays, stream=caller)
        w = arrays[1].read(caller)
        program.close()
        for a in arrays:
            a.free()
        return w

    for rank, w in enumerate(on_every_rank(rank_main)):
        assert isinstance(w, np.ndarray), w
        np.testing.assert_allclose(w, reference.shards["w"][rank], rtol=1e-6)


def test_without_the_producers_stream_the_run_reads_unwritten_memory(
    sgd, uid: bytes, monkeypatch: pytest.MonkeyPatch
) -> None:  # noqa: ANN001
    """The control for the test above: the same producer copies, but no tensor names the
    producer's stream - nothing orders the run after them, and the harness shows it."""
    built, lib, reference, inputs = sgd
    monkeypatch.setenv("CCOPT_HOST_SCHEDULE", "low")

    def rank_main(rank: int) -> np.ndarray:
        program = built.Program(rank, WORLD, uid, device=rank, timeout_s=10.0)
        caller, producer = lib.ccopt_host_stream(), lib.ccopt_host_stream()
        arrays = [DeviceArray(lib, b, rank, producer) for b in blocks(inputs, rank)]
        program.run(*arrays, stream=caller, sync=True)
        w = arrays[1].read(caller)
        lib.ccopt_host_synchronize(producer)
        program.close()
        return w

    results = on_every_rank(rank_main)
    assert any(np.isnan(w).any() for w in results if isinstance(w, np.ndarray)), results


def test_tensors_on_another_device_or_sharing_written_memory_are_refused(sgd, uid: bytes) -> None:  # noqa: ANN001
    built, lib, reference, inputs = sgd

    class DLPackOnly:
        def __init__(self, device_type: int, device_id: int):
            self.where = (device_type, device_id)

        def __dlpack_device__(self) -> tuple[int, int]:
            return self.where

        def __dlpack__(self, stream: int | None = None) -> object:
            raise AssertionError("the device is checked before the tensor is exported")

    def rank_main(rank: int) -> list[str]:
        program = built.Program(rank, WORLD, uid, device=rank, timeout_s=10.0)
        assert program.device == rank
        caller = lib.ccopt_host_stream()
        g, w, lr = (DeviceArray(lib, b, rank, caller) for b in blocks(inputs, rank))
        elsewhere = DeviceArray(lib, blocks(inputs, rank)[1], rank + 2, caller)
        host = np.zeros_like(blocks(inputs, rank)[1])
        in_host_memory = type(
            "HostArray",
            (),
            {
                "__cuda_array_interface__": {
                    **w.__cuda_array_interface__,
                    "data": (host.ctypes.data, False),
                }
            },
        )()
        errors = []
        for args, error in [
            ((g, elsewhere, lr), ValueError),
            ((g, in_host_memory, lr), ValueError),
            ((g, DLPackOnly(2, rank + 1), lr), ValueError),
            ((g, DLPackOnly(1, 0), lr), ValueError),
            ((g, g, lr), ValueError),
            ((g, w), ValueError),
        ]:
            with pytest.raises(error) as e:
                program.run(*args, stream=caller)
            errors.append(str(e.value))
        with pytest.raises(TypeError, match="unexpected keyword argument 'stram'"):
            program.run(g, w, lr, stram=caller)
        program.run(g, w, lr, stream=caller, sync=True)  # the context still works
        program.close()
        return errors

    for rank, errors in enumerate(on_every_rank(rank_main)):
        assert isinstance(errors, list), errors
        assert errors[0] == (
            f"rank {rank}: argument 1 (w) is on cuda:{rank + 2}, but this program runs on "
            f"cuda:{rank}"
        )
        assert errors[1] == f"rank {rank}: argument 1 (w) is not CUDA device memory"
        assert errors[2] == (
            f"argument 1 (w) is on cuda:{rank + 1}, but this program runs on cuda:{rank}"
        )
        assert errors[3] == "argument 1 (w) is not on a CUDA device"
        assert errors[4].startswith("argument 1 (w) shares memory with argument 0 (g)")
        assert errors[5] == "@sgd takes 3 tensors (arguments, then results)"


def test_an_nccl_failure_raises_on_every_rank_and_later_runs_refuse(
    sgd, uid: bytes, monkeypatch: pytest.MonkeyPatch
) -> None:  # noqa: ANN001
    """Rank 1's all-reduce fails at once; rank 0 learns it from the aborted communicator (or
    its timeout); both raise, name the call, and refuse to run again; close() still works."""
    built, lib, reference, inputs = sgd
    monkeypatch.setenv("CCOPT_HOST_FAULT", "1:2:error")  # init, split, then the all-reduce

    def rank_main(rank: int) -> list[str]:
        program = built.Program(rank, WORLD, uid, device=rank, timeout_s=2.0)
        caller = lib.ccopt_host_stream()
        arrays = [DeviceArray(lib, b, rank, caller) for b in blocks(inputs, rank)]
        messages = []
        for _ in range(2):
            with pytest.raises(RuntimeError) as e:
                program.run(*arrays, stream=caller, sync=True)
            messages.append(str(e.value))
        program.close()
        return messages

    results = on_every_rank(rank_main)
    for rank, messages in enumerate(results):
        assert isinstance(messages, list), messages
        first, again = messages
        assert first.startswith(f"rank {rank}: ncclAllReduce on communicator dp"), first
        assert again.startswith(f"rank {rank}: the communicators were aborted"), again
    assert "unhandled system error" in results[1][0]


def test_arguments_of_the_wrong_kind_are_named(sgd, uid: bytes) -> None:  # noqa: ANN001
    """A list, a string for sync=, a device name, a wrong shape: each was pybind11's
    "Unable to cast" or an AttributeError, or named no shapes. Explicit C-contiguous strides
    (the interface allows them) are taken."""
    built, lib, reference, inputs = sgd
    with pytest.raises(
        TypeError, match="device is a CUDA device index \\(int\\) or None, got 'cuda:0'"
    ):
        built.Program(0, WORLD, uid, device="cuda:0", timeout_s=10.0)

    def rank_main(rank: int) -> list[str]:
        program = built.Program(rank, WORLD, uid, device=rank, timeout_s=10.0)
        caller = lib.ccopt_host_stream()
        g, w, lr = (DeviceArray(lib, b, rank, caller) for b in blocks(inputs, rank))
        strided = type(
            "Strided",
            (),
            {
                "__cuda_array_interface__": {
                    **w.__cuda_array_interface__,
                    "strides": tuple(w.value.strides),
                }
            },
        )()
        shapes = w.value.shape
        short = type(
            "Short",
            (),
            {"__cuda_array_interface__": {**w.__cuda_array_interface__, "shape": (1,)}},
        )()
        read_only = type(
            "ReadOnly",
            (),
            {
                "__cuda_array_interface__": {
                    **w.__cuda_array_interface__,
                    "data": (w.pointer, True),
                }
            },
        )()
        errors = []
        for args, options, error in [
            ((g, [1.0, 2.0], lr), {}, TypeError),
            ((g, w, lr), {"sync": "no"}, TypeError),
            ((g, w, lr), {"stream": "abc"}, TypeError),
            ((g, short, lr), {}, ValueError),
            ((g, read_only, lr), {}, ValueError),
        ]:
            with pytest.raises(error) as e:
                program.run(*args, **{"stream": caller, **options})
            errors.append(str(e.value))
        program.run(g, strided, lr, stream=caller, sync=True)
        program.close()
        return [*errors, str(shapes)]

    for rank, errors in enumerate(on_every_rank(rank_main)):
        assert isinstance(errors, list), errors
        assert errors[0] == (
            "argument 1 (w) is not a CUDA tensor (DLPack: PyTorch, CuPy, JAX; or "
            "__cuda_array_interface__), got list"
        )
        assert errors[1] == "sync is True or False, got 'no'"
        assert errors[2].startswith("stream is None, a stream handle (int) or a stream object")
        assert (
            errors[3] == f"argument 1 (w) has the local shape (1,), rank {rank} holds {errors[5]}"
        )
        assert errors[4] == (
            "argument 1 (w) is read-only (its __cuda_array_interface__ says so), but the "
            "program writes it"
        )


def test_a_rank_or_world_the_program_was_not_built_for_is_named(sgd, uid: bytes) -> None:  # noqa: ANN001
    """Both read "got rank 5 of 4" before."""
    built = sgd[0]
    with pytest.raises(Exception, match=f"rank {WORLD} is not one of the {WORLD} ranks"):
        built.Program(WORLD, WORLD, uid, device=0, timeout_s=1.0)
    with pytest.raises(Exception, match=f"compiled for {WORLD} ranks, got a world of {WORLD + 1}"):
        built.Program(0, WORLD + 1, uid, device=0, timeout_s=1.0)
