"""overlap's chunk ranges: ceil-div blocks, rounded up to an alignment where that keeps the count
(`ccopt.passes.overlap.chunk_ranges`; the IR in test/filecheck/passes/overlap-aligned-chunks.mlir)."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from ccopt.mesh import block_range
from ccopt.passes.overlap import chunk_ranges


@given(size=st.integers(1, 20_000), chunks=st.integers(1, 16), align=st.sampled_from([1, 2, 4, 8]))
def test_chunks_cover_the_dimension_in_as_many_chunks_as_ceil_div_blocks(
    size: int, chunks: int, align: int
) -> None:
    chunks = min(chunks, size)
    plain = [r for r in (block_range(size, chunks, c) for c in range(chunks)) if r[1] > r[0]]
    got = chunk_ranges(size, chunks, align)
    assert len(got) == len(plain)
    assert got[0][0] == 0 and got[-1][1] == size
    assert all(a < b for a, b in got)
    assert all(b == c for (_, b), (c, _) in zip(got, got[1:], strict=False))
    if got != plain:  # aligned: every chunk starts on a multiple of the alignment
        assert all(a % align == 0 for a, _ in got)
    assert chunk_ranges(size, chunks) == plain


def test_blocks_are_rounded_up_only_where_the_count_stays() -> None:
    assert chunk_ranges(4096, 3, 8) == [(0, 1368), (1368, 2736), (2736, 4096)]
    assert chunk_ranges(12, 4, 4) == [(0, 3), (3, 6), (6, 9), (9, 12)]  # 4s would make 3
    assert chunk_ranges(24, 3, 4) == [(0, 8), (8, 16), (16, 24)]  # already aligned


def test_the_fewer_chunks_warning_says_why_the_blocks_are_as_long() -> None:
    """9 columns in 4 chunks: ceil-div blocks of 3 make 3, rounded up to 4 (16-byte starts of
    f32); the warning said only "cut into blocks of 4"."""
    import warnings

    from ccopt.diagnostics import OpWarning
    from ccopt.passes.pipeline import apply_pipeline
    from ccopt.program import load_program

    text = """
dtensor.mesh @tp [tp=2]
func.func @f(%x: !dtensor.tensor<7x40xf32, @tp[S(1)]>, %w: !dtensor.tensor<40x9xf32, @tp[S(0)]>) -> !dtensor.tensor<7x9xf32, @tp[S(0)]> {
  %y = dtensor.matmul %x, %w : (!dtensor.tensor<7x40xf32, @tp[S(1)]>, !dtensor.tensor<40x9xf32, @tp[S(0)]>) -> !dtensor.tensor<7x9xf32, @tp[P(sum)]>
  %s = coll.reduce_scatter sum %y over [tp] dim 0 : !dtensor.tensor<7x9xf32, @tp[P(sum)]> -> !dtensor.tensor<7x9xf32, @tp[S(0)]>
  func.return %s : !dtensor.tensor<7x9xf32, @tp[S(0)]>
}
"""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        apply_pipeline(load_program(text), "overlap{chunks=4}")
    (message,) = [str(w.message.message) for w in caught if isinstance(w.message, OpWarning)]
    assert message.startswith(
        "overlap made 3 chunks, not the 4 requested: the chunked dimension 1 of the matmul "
        "output has 9 elements, cut into blocks of 4 (ceil(9/4) = 3 elements a block, rounded "
        "up to 4 so that chunks start 16-byte aligned)"
    )
