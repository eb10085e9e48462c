"""Kernel-level programs written or edited by hand, fed to the CUDA backend: unusual stream
numbers, updates in place through views, streams working on disjoint parts of one buffer,
and what the backend refuses - each as a located diagnostic, never a traceback or a
program that computes something else than the interpreter."""

from __future__ import annotations

import re
import sys
from pathlib import Path

import pytest
from xdsl.dialects import func

import ccopt
from ccopt.backends.cuda.cpu import run_on_host
from ccopt.backends.cuda.emit import emit_cuda
from ccopt.diagnostics import CcoptError, OpError
from ccopt.program import load_program
from ccopt.streams import check_stream_races

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "test" / "backends"))
from test_cuda import assert_same_shards  # noqa: E402

SIGNATURE = "attributes {kernel.results = 1 : i64, kernel.updated = array<i64>}"


def assert_runs_as_interpreted(module, seed: int) -> None:  # noqa: ANN001 - a ModuleOp
    """The generated code on the CPU harness, streams issued in either order, computes on every
    rank what the interpreter does."""
    reference = ccopt.run(module, seed=seed)
    for order in ("low", "high"):
        assert_same_shards(run_on_host(module, reference.inputs, schedule=order), reference.shards)


FAR_STREAM = f"""
!v = !kernel.buffer<64xf32, @t[R]>
dtensor.mesh @t [tp=2]
func.func @far(%x: !v, %result0: !v) {SIGNATURE} {{
  %a = kernel.alloc : !v
  kernel.fill 2.0 -> %a stream 9223372036854775807 : !v
  kernel.stream_wait for 9223372036854775807 stream 0
  kernel.elementwise ins(%x, %a) outs(%result0) stream 0 : !v, !v -> !v {{
  ^bb0(%i: i64, %p: f32, %q: f32):
    %r = arith.mulf %p, %q : f32
    dtensor.yield %r : f32
  }}
  func.return
}}
"""


def test_stream_numbers_are_names_not_counts() -> None:
    """A program on streams 0 and 2**63-1 makes two CUDA streams: the emitter used to size its
    stream array by the largest number (and hung on this one)."""
    module = load_program(FAR_STREAM)
    source = emit_cuda(module)
    assert "cudaStream_t streams[2]" in source
    assert "ctx->streams[9223372036854775807]" not in source
    assert_runs_as_interpreted(module, seed=2)


SAME_ELEMENTS = """
!v = !kernel.buffer<6x8xf32, @t[S(0)]>
!h = !kernel.buffer<6x4xf32, @t[S(0)]>
dtensor.mesh @t [tp=2]
func.func @halves(%x: !v, %result0: !v) attributes {kernel.results = 1 : i64, kernel.updated = array<i64: 0>} {
  %read = kernel.subview %x offsets [0, 4] : !v -> !h
  %write = kernel.subview %x offsets [0, 4] : !v -> !h
  kernel.elementwise ins(%read) outs(%write) stream 0 : !h -> !h {
  ^bb0(%i: i64, %p: f32):
    %r = arith.addf %p, %p : f32
    dtensor.yield %r : f32
  }
  kernel.stream_wait for 0 stream 1
  %left = kernel.subview %x offsets [0, 0] : !v -> !h
  kernel.elementwise ins(%left) outs(%left) stream 1 : !h -> !h {
  ^bb0(%i: i64, %p: f32):
    %r = arith.mulf %p, %p : f32
    dtensor.yield %r : f32
  }
  kernel.stream_wait for 1 stream 0
  kernel.copy %x -> %result0 stream 0 : !v
  func.return
}
"""


def test_updates_through_views_of_the_same_elements_run_as_interpreted() -> None:
    """Two subviews of the same box are the same elements (an update in place, allowed), and the
    other half is filled on stream 1 between two waits: neither is refused, and the harness
    computes what the interpreter does."""
    module = load_program(SAME_ELEMENTS)
    (f,) = [op for op in module.ops if isinstance(op, func.FuncOp)]
    check_stream_races(f)
    assert_runs_as_interpreted(module, seed=4)


DISJOINT_CHUNKS = f"""
!v = !kernel.buffer<8x6xf32, @t[R]>
!c = !kernel.buffer<8x3xf32, @t[R]>
dtensor.mesh @t [tp=2]
func.func @chunks(%x: !c, %result0: !v) {SIGNATURE} {{
  %a = kernel.alloc : !v
  %left = kernel.subview %a offsets [0, 0] : !v -> !c
  %right = kernel.subview %a offsets [0, 3] : !v -> !c
  kernel.elementwise ins(%x) outs(%left) stream 0 : !c -> !c {{
  ^bb0(%i: i64, %p: f32):
    dtensor.yield %p : f32
  }}
  kernel.elementwise ins(%x) outs(%right) stream 1 : !c -> !c {{
  ^bb0(%i: i64, %p: f32):
    %r = arith.negf %p : f32
    dtensor.yield %r : f32
  }}
  kernel.stream_wait for 1 stream 0
  kernel.copy %a -> %result0 stream 0 : !v
  func.return
}}
"""


def test_streams_writing_disjoint_column_chunks_do_not_race() -> None:
    """Column chunks of a row-major buffer interleave in memory but share no element: the race
    check compares boxes, not byte ranges, on one buffer."""
    module = load_program(DISJOINT_CHUNKS)
    source = emit_cuda(module)
    assert "cudaStream_t streams[2]" in source
    assert_runs_as_interpreted(module, seed=6)


def test_a_race_through_a_subview_is_found() -> None:
    """The same chunks, but stream 0 reads the whole buffer before waiting for stream 1: the
    race checker skipped subviews (their accesses were not looked at)."""
    text = DISJOINT_CHUNKS.replace(
        "  kernel.stream_wait for 1 stream 0\n  kernel.copy %a -> %result0 stream 0 : !v\n",
        "  kernel.copy %a -> %result0 stream 0 : !v\n  kernel.stream_wait for 1 stream 0\n",
    )
    module = load_program(text)
    (f,) = [op for op in module.ops if isinstance(op, func.FuncOp)]
    with pytest.raises(
        OpError, match="reads %a on stream 0, which 'kernel.elementwise' writes on stream 1"
    ):
        check_stream_races(f)
    with pytest.raises(OpError, match="with no event ordering the two"):
        emit_cuda(module)


STRIDED_SOFTMAX = f"""
dtensor.mesh @t [tp=2]
func.func @strided(%x: !kernel.buffer<8x8xf32, @t[R]>, %result0: !kernel.buffer<8x4xf32, @t[R]>) {SIGNATURE} {{
  %v = kernel.subview %x offsets [0, 0] : !kernel.buffer<8x8xf32, @t[R]> -> !kernel.buffer<8x4xf32, @t[R]>
  kernel.softmax %v -> %result0 dim 1 stream 0 : !kernel.buffer<8x4xf32, @t[R]> -> !kernel.buffer<8x4xf32, @t[R]>
  func.return
}}
"""


def test_what_the_backend_cannot_emit_is_a_located_ccopt_error() -> None:
    """`ccopt.build` and the CPU harness raised a bare EmitError (not a CcoptError) without the
    op's place; it is now an OpError at the op."""
    module = load_program(STRIDED_SOFTMAX)
    with pytest.raises(CcoptError, match="cannot index the strided view %v") as raised:
        emit_cuda(module)
    assert isinstance(raised.value, OpError)
    assert raised.value.op.name == "kernel.softmax"
    assert re.search(r":5:3: error: 'kernel.softmax' op", raised.value.render())


MISSING_WAIT = f"""
!v = !kernel.buffer<64xf32, @t[R]>
dtensor.mesh @t [tp=2]
func.func @layer(%x: !v, %result0: !v) {SIGNATURE} {{
  %a = kernel.alloc : !v
  kernel.copy %x -> %a stream 0 : !v
  kernel.copy %a -> %result0 stream 1 : !v
  func.return
}}
func.func @step(%x: !v, %result0: !v) {SIGNATURE} {{
  func.call @layer(%x, %result0) : (!v, !v) -> ()
  func.return
}}
"""


@pytest.mark.parametrize("entry", ["layer", "step"])
def test_the_interpreter_refuses_a_race_the_gpu_would_run(entry: str) -> None:
    """A stream race (no wait between a write on one stream and a read on another), in the entry
    or in a function it calls: the interpreter ran it in issue order and reported the in-order
    answer, which the GPU may not compute; `run` and `check_pipeline` now refuse it at the
    later access, as the CUDA backend does."""
    module = load_program(MISSING_WAIT)
    message = "reads %a on stream 1, which 'kernel.copy' writes on stream 0 with no event"
    with pytest.raises(OpError, match=message) as raised:
        ccopt.run(module, entry=entry)
    assert re.search(r":7:3: error: 'kernel.copy' op", raised.value.render())
    with pytest.raises(OpError, match=message):
        ccopt.check_pipeline(MISSING_WAIT, "dce", entry=entry)


def test_ccopt_run_reports_a_race_at_the_op(tmp_path: Path) -> None:
    import subprocess

    path = tmp_path / "race.mlir"
    path.write_text(MISSING_WAIT)
    result = subprocess.run(
        [sys.executable, "-m", "ccopt.tools.ccopt_run", str(path), "--entry", "step"],
        capture_output=True,
        text=True,
    )
    assert result.returncode == 1
    assert "Traceback" not in result.stderr
    assert f"{path}:7:3: error: 'kernel.copy' op reads %a on stream 1" in result.stderr


GATHER_IN_PLACE = f"""
!w = !kernel.buffer<8x4xf32, @t[R]>
!p = !kernel.buffer<8x4xf32, @t[S(0)]>
dtensor.mesh @t [tp=2]
func.func @gather(%x: !p, %result0: !w) {SIGNATURE} {{
  %a = kernel.alloc : !w
  %own = kernel.block_view %a over [tp] : !w -> !p
  kernel.copy %x -> %own stream 0 : !p
  kernel.nccl_all_gather %own -> %a over [tp] stream 0 : !p -> !w
  kernel.copy %a -> %result0 stream 0 : !w
  func.return
}}
"""


def test_an_all_gather_from_the_ranks_own_block_runs_as_interpreted() -> None:
    """NCCL's in-place all-gather: the input is each rank's own block of the output."""
    module = load_program(GATHER_IN_PLACE)
    assert_runs_as_interpreted(module, seed=8)


WRONG_BLOCK = f"""
!b = !kernel.buffer<16x4xf32, @t[R]>
!w = !kernel.buffer<8x4xf32, @t[R]>
!p = !kernel.buffer<8x4xf32, @t[S(0)]>
dtensor.mesh @t [tp=2]
func.func @gather(%x: !p, %result0: !w) {SIGNATURE} {{
  %a = kernel.alloc : !b
  %win = kernel.subview %a offsets [4, 0] : !b -> !w
  %piece = kernel.subview %a offsets [0, 0] : !b -> !p
  kernel.copy %x -> %piece stream 0 : !p
  kernel.nccl_all_gather %piece -> %win over [tp] stream 0 : !p -> !w
  kernel.copy %win -> %result0 stream 0 : !w
  func.return
}}
"""

PARTIAL_BROADCAST = f"""
!b = !kernel.buffer<12xf32, @t[R]>
!w = !kernel.buffer<8xf32, @t[R]>
dtensor.mesh @t [tp=2]
func.func @root(%x: !w, %result0: !w) {SIGNATURE} {{
  %a = kernel.alloc : !b
  %in = kernel.subview %a offsets [0] : !b -> !w
  %out = kernel.subview %a offsets [4] : !b -> !w
  kernel.copy %x -> %in stream 0 : !w
  kernel.nccl_broadcast %in -> %out over [tp] root 1 stream 0 : !w -> !w
  kernel.copy %out -> %result0 stream 0 : !w
  func.return
}}
"""

SHIFT_IN_PLACE = f"""
!w = !kernel.buffer<8xf32, @t[V]>
dtensor.mesh @t [tp=2]
func.func @shift(%x: !w, %result0: !w) {SIGNATURE} {{
  %a = kernel.alloc : !w
  kernel.copy %x -> %a stream 0 : !w
  kernel.nccl_shift %a -> %a over [tp] by 1 cyclic stream 0 : !w -> !w
  kernel.copy %a -> %result0 stream 0 : !w
  func.return
}}
"""


@pytest.mark.parametrize(
    ("text", "message"),
    [
        (
            WRONG_BLOCK,
            r"writes %win over its input %piece, which it reads: 'kernel.nccl_all_gather' works "
            r"in place only where its input is each rank's own block of its output",
        ),
        (
            PARTIAL_BROADCAST,
            r"writes %out over its input %in, which it reads: 'kernel.nccl_broadcast' works in "
            r"place only on the same elements",
        ),
        (
            SHIFT_IN_PLACE,
            r"writes %a over its input %a, which it reads: 'kernel.nccl_shift' cannot write "
            r"where it reads",
        ),
    ],
    ids=["gather-into-another-ranks-block", "broadcast-half-over", "shift-onto-itself"],
)
def test_collectives_written_over_their_input_outside_nccls_in_place_forms(
    text: str, message: str
) -> None:
    """NCCL defines a collective whose buffers overlap only in its in-place forms (the same
    buffer, or the rank's own block of an all-gather's output); any other overlap is undefined
    on the GPU while the interpreter, reading inputs whole first, computes an answer. The
    verifier refuses them at the op."""
    with pytest.raises(CcoptError, match=message) as raised:
        load_program(text)
    assert "kernel.nccl_" in raised.value.render()


def sgd_in_algorithm(input_offset: int) -> str:
    """examples/sgd.mlir with its update run inside the all-reduce algorithm, at the kernel
    level, its weight moved into a buffer twice as long: the result is written at 515, the body
    reads each rank's block of the weight from `input_offset` on."""
    from ccopt.passes.pipeline import apply_pipeline

    lowered = str(
        apply_pipeline(
            load_program(ROOT / "examples" / "sgd.mlir"),
            "split-all-reduce,reorder-elementwise,fuse-elementwise,fuse-collective,"
            "lower-collectives{fused_body=in-algorithm},convert-to-kernel,plan-memory",
        )
    )
    whole, longer = "!kernel.buffer<1030xf32, @dp[R]>", "!kernel.buffer<2060xf32, @dp[R]>"
    view = f"%w_s = kernel.subview %w offsets [0] : {whole} -> !kernel.buffer<1030xf32, @dp[S(0)]>"
    assert view in lowered and "outs(%w)" in lowered
    return (
        lowered.replace(f"%w: {whole}", f"%w: {longer}", 1)
        .replace(
            view,
            view.replace("[0]", f"[{input_offset}]").replace(whole, longer)
            + f"\n    %w_o = kernel.subview %w offsets [515] : {longer} -> {whole}",
        )
        .replace("outs(%w)", "outs(%w_o)")
    )


def test_a_fused_all_reduce_reads_each_ranks_block_of_the_result_it_gathers() -> None:
    """The body reads the rank's own block of the weight it writes whole (the algorithm's later
    steps bring the other ranks' blocks): allowed, and run as interpreted."""
    assert_runs_as_interpreted(load_program(sgd_in_algorithm(515)), seed=9)


def test_a_fused_all_reduce_reading_another_ranks_block_of_its_result_is_refused() -> None:
    """Shifted by half the weight, rank 2 would read the elements that rank 0's result is
    written to: the GPU computes something else than the interpreter."""
    with pytest.raises(CcoptError, match=r"writes %w_o over input #1 %w_s, which it reads: "):
        load_program(sgd_in_algorithm(0))
