"""The host side of generated programs on the CPU harness: ordering with the caller's streams,
and NCCL failures that must become errors on every rank rather than hangs.

The harness runs each rank as a GPU caller would (backends/cuda/host/ccopt_host_driver.h): its
inputs are copied to device memory on the caller's own streams, and only the run's events order
the program after those copies and the copies back after the program. Device memory starts as
NaN bytes and the two harness schedules run ready streams in opposite orders, so a missing wait
reads garbage under one of them - the tests below remove each wait from the generated code and
watch the comparison with the interpreter fail."""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pytest
from xdsl.dialects import func

import ccopt
from ccopt.backends.cuda import emit
from ccopt.backends.cuda.cpu import HostRunError, run_on_host
from ccopt.backends.cuda.emit import emit_cuda
from ccopt.diagnostics import OpError
from ccopt.dialects import kernel as k
from ccopt.passes.pipeline import run_pipeline
from ccopt.program import bind_mesh, load_program
from ccopt.runner import RunResult

ROOT = Path(__file__).resolve().parents[2]

ENTRY_WAIT = "CCOPT_CHECK_CUDA(cudaStreamWaitEvent(h.streams[s], h.entry[c], 0));"
EXIT_WAIT = "CCOPT_CHECK_CUDA(cudaStreamWaitEvent(caller, h.exit[s], 0));"


@pytest.fixture(scope="module")
def overlapped():  # noqa: ANN201
    """Megatron's row-parallel layer overlapped on two streams (tp=3): collectives on both."""
    module = load_program(ROOT / "examples" / "megatron_row_parallel.mlir")
    bind_mesh(module, "tp=3")
    with pytest.warns(UserWarning, match="chunks"):
        run_pipeline(module, "overlap{chunks=3},convert-to-kernel,plan-memory")
    return module, ccopt.run(module, seed=11)


def agrees(host: dict[str, list[np.ndarray]], reference: RunResult) -> bool:
    """Every rank's block of every output equals the interpreter's (fp32 tolerance)."""
    for name, shards in host.items():
        for got, want in zip(shards, reference.shards[name], strict=True):
            if not np.allclose(got, want, rtol=1e-5, atol=1e-5, equal_nan=True):
                return False
    return True


@pytest.mark.parametrize("sync", [False, True], ids=["events", "sync"])
def test_runs_ordered_by_events_equal_the_interpreter(overlapped, sync: bool) -> None:  # noqa: ANN001
    module, reference = overlapped
    for order in ("low", "high"):
        assert agrees(run_on_host(module, reference.inputs, schedule=order, sync=sync), reference)


@pytest.mark.parametrize(
    ("wait", "why"),
    [
        (ENTRY_WAIT, "the program reads its inputs before the caller's copies wrote them"),
        (EXIT_WAIT, "the caller copies the results out before the program wrote them"),
    ],
    ids=["program-waits-for-caller", "caller-waits-for-program"],
)
def test_a_missing_wait_on_the_callers_stream_fails(
    overlapped, monkeypatch: pytest.MonkeyPatch, wait: str, why: str
) -> None:  # noqa: ANN001
    module, reference = overlapped
    assert wait in emit_cuda(module)
    original = emit.emit_cuda
    monkeypatch.setattr(
        emit, "emit_cuda", lambda m, e=None: original(m, e).replace(wait, "(void)0;")
    )
    results = [
        agrees(run_on_host(module, reference.inputs, schedule=order), reference)
        for order in ("low", "high")
    ]
    assert not all(results), why


def nccl_calls_before_run(module) -> int:  # noqa: ANN001
    """NCCL calls each rank makes in create: the world communicator, then one split per group."""
    source = emit_cuda(module)
    names = re.search(r"kCommNames\[(\d+)\]", source)
    assert names is not None
    return int(names.group(1))


FAULTS = {
    # (rank, call counted from create's first NCCL call, or from the run's first with +, kind)
    "init-errors": (1, "0", "error"),
    "dies-in-init": (1, "0", "die"),
    "dies-in-split": (0, "1", "die"),
    "collective-errors": (1, "+0", "error"),
    "collective-fails-asynchronously": (2, "+1", "async"),
    "dies-mid-run": (1, "+1", "die"),
}


@pytest.mark.parametrize("sync", [False, True], ids=["events", "sync"])
@pytest.mark.parametrize("fault", FAULTS)
def test_an_nccl_failure_raises_on_every_rank(overlapped, fault: str, sync: bool) -> None:  # noqa: ANN001
    """No rank hangs: the failing rank names its call, the others the call they were waiting
    in (an error a peer reports, or the timeout), and every rank's communicators are aborted
    with nothing leaked (streams, events, memory, communicators)."""
    module, reference = overlapped
    rank, call, kind = FAULTS[fault]
    at = int(call) + (nccl_calls_before_run(module) if call.startswith("+") else 0)
    with pytest.raises(HostRunError) as failure:
        run_on_host(module, reference.inputs, sync=sync, timeout_s=1.0, fault=f"{rank}:{at}:{kind}")
    messages = failure.value.ranks
    assert sorted(messages) == [0, 1, 2], messages
    for r, message in messages.items():
        assert message.startswith(f"rank {r}: "), message
        assert "leaked" not in message, message
        if r == rank and kind == "die":
            assert message == f"rank {r}: died"
        else:
            assert re.search(r"\bnccl[A-Z]\w+", message), message
    if kind != "die":
        assert "unhandled system error" in messages[rank], messages[rank]


def test_a_failed_create_names_the_rank_and_the_call(overlapped) -> None:  # noqa: ANN001
    module, reference = overlapped
    with pytest.raises(HostRunError) as failure:
        run_on_host(module, reference.inputs, timeout_s=1.0, fault="2:0:error")
    assert failure.value.ranks[2].startswith("rank 2: ncclCommInitRankConfig failed")
    assert "did not complete within 1 s" in failure.value.ranks[0]


# --- what the generated code promises the compiler and the libraries ------------------------------


def kernel_signatures(source: str) -> list[str]:
    return re.findall(r"__global__ void (ccopt_elementwise_\d+\(.*?\)) \{", source, re.S)


def test_restrict_only_on_pointers_that_share_no_storage() -> None:
    """SGD's unoptimized step writes w - lr * g into w's own buffer: w's input pointer and the
    output lose __restrict__ (the kernel reads and writes the same bytes); lr and g keep it."""
    module = load_program(ROOT / "examples" / "sgd.mlir")
    bind_mesh(module, "dp=2")
    run_pipeline(module, "fuse-elementwise,convert-to-kernel")
    (f,) = [op for op in module.ops if isinstance(op, func.FuncOp)]
    (step,) = [op for op in f.walk() if isinstance(op, k.ElementwiseOp)]
    (kernel,) = kernel_signatures(emit_cuda(module))
    pointers = {
        name: decl for decl, name in re.findall(r"(\w+\*(?: __restrict__)?) (\w+\d+)", kernel)
    }
    w = [i for i, v in enumerate(step.inputs) if v is step.outputs[0]]
    assert len(w) == 1, kernel
    for name, decl in pointers.items():
        aliased = name in (f"in{w[0]}", "out0")
        assert ("__restrict__" in decl) != aliased, kernel


def test_a_gemm_beyond_cublas_int_sizes_is_refused_at_its_op() -> None:
    module = load_program(
        """
dtensor.mesh @m [d=1]
func.func @tall(%a: !dtensor.tensor<3000000000x2xf32, @m[R]>,
                %b: !dtensor.tensor<2x2xf32, @m[R]>) -> !dtensor.tensor<3000000000x2xf32, @m[R]> {
  %c = dtensor.matmul %a, %b : (!dtensor.tensor<3000000000x2xf32, @m[R]>,
                               !dtensor.tensor<2x2xf32, @m[R]>) -> !dtensor.tensor<3000000000x2xf32, @m[R]>
  func.return %c : !dtensor.tensor<3000000000x2xf32, @m[R]>
}
"""
    )
    run_pipeline(module, "convert-to-kernel")
    with pytest.raises(OpError, match=r"m 3000000000.*exceed cuBLAS's int range \(2147483647\)"):
        emit_cuda(module)


def test_a_pipeline_shift_sends_its_block_and_receives_its_senders() -> None:
    """Separate send and receive counts (each rank's own block, the sender's block), so stages
    whose blocks differ in size would still exchange exactly what they hold."""
    module = load_program(ROOT / "examples" / "pipeline_boundary.mlir")
    bind_mesh(module, "pp=3,tp=2")
    run_pipeline(module, "convert-to-kernel")
    source = emit_cuda(module)
    assert "ncclSend(" in source and "(size_t)peers[2]" in source and "(size_t)peers[3]" in source
    (table,) = re.findall(r"kShift\d+\[6\]\[5\] = \{(.*?)\};", source, re.S)
    rows = [
        [int(v) for v in re.findall(r"-?\d+", row)] for row in re.findall(r"\{([^{}]*)\}", table)
    ]
    for to, source_rank, sent, received, capacity in rows:
        assert sent == capacity
        assert received == (capacity if source_rank >= 0 else 0)
        assert to == -1 or to >= 0


def test_a_program_above_the_kernel_level_is_lowered_as_the_build_lowers_it() -> None:
    """`run_on_host` on an L1 program (it said "run convert-to-kernel first", where `-t cuda`,
    `-t pybind11`, `--build` and `ccopt.build` lower it themselves); the caller's module stays
    as it was."""
    module = load_program(ROOT / "examples" / "sgd.mlir")
    before = str(module)
    reference = ccopt.run(module, seed=4)
    assert agrees(run_on_host(module, reference.inputs), reference)
    assert str(module) == before


@pytest.mark.parametrize(
    ("options", "message"),
    [
        (
            {"fault": "x:y:z"},
            "fault is 'RANK:CALL:KIND' \\(KIND: error, async, die\\), got 'x:y:z'",
        ),
        ({"fault": "1:2"}, "fault is 'RANK:CALL:KIND'"),
        ({"fault": "9:2:error"}, "fault names rank 9, but the run has 3 ranks"),
        ({"schedule": "HIGH"}, "schedule is 'low' or 'high' \\(stream order\\), got 'HIGH'"),
        ({"extra": True}, "input 'zz' is not an argument of @"),
    ],
)
def test_options_the_harness_would_ignore_are_refused(overlapped, options, message) -> None:  # noqa: ANN001
    """A fault plan the harness cannot read ran without a fault (a fault test passed without
    one), any schedule ran as 'low', and an input no argument takes was dropped."""
    from ccopt.diagnostics import CcoptError

    module, reference = overlapped
    inputs = dict(reference.inputs)
    if options.pop("extra", False):
        inputs["zz"] = next(iter(inputs.values()))
    with pytest.raises(CcoptError, match=message):
        run_on_host(module, inputs, timeout_s=1.0, **options)


def test_an_integer_input_that_would_wrap_is_refused() -> None:
    """2**40 as i32 wrapped to 1 on the harness, where ccopt.run refuses it."""
    from ccopt.program import InputError, load_program

    program = load_program(
        "dtensor.mesh @m [tp=2]\n"
        "func.func @f(%a: !dtensor.tensor<4xi32, @m[R]>) -> !dtensor.tensor<4xi32, @m[R]> {\n"
        "  func.return %a : !dtensor.tensor<4xi32, @m[R]>\n}\n"
    )
    with pytest.raises(InputError, match="holds 1099511627777, outside the range of int32"):
        run_on_host(program, {"a": np.array([2**40 + 1, 2, 3, 4], dtype=np.int64)})
