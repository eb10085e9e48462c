"""Programs for the simulator's tests: CoCoNeT's row-parallel layer at any size."""

from __future__ import annotations


def row_parallel(tokens: int, hidden: int, ffn: int, tp: int = 16, element: str = "f16") -> str:
    """Megatron's row-parallel layer (matmul, all-reduce, bias, dropout, residual) on a tp mesh:
    X is [tokens, ffn] split along ffn, W [ffn, hidden] split along ffn."""
    x = f"!dtensor.tensor<{tokens}x{ffn}x{element}, @tp[S(1)]>"
    w = f"!dtensor.tensor<{ffn}x{hidden}x{element}, @tp[S(0)]>"
    partial = f"!dtensor.tensor<{tokens}x{hidden}x{element}, @tp[P(sum)]>"
    act = f"!dtensor.tensor<{tokens}x{hidden}x{element}, @tp[R]>"
    bias = f"!dtensor.tensor<{hidden}x{element}, @tp[R]>"
    return f"""dtensor.mesh @tp [tp={tp}]
func.func @row_parallel(%x: {x}, %w: {w}, %b: {bias}, %r: {act}) -> {act} {{
  %y = dtensor.matmul %x, %w : ({x}, {w}) -> {partial}
  %y_sum = coll.all_reduce sum %y over [tp] : {partial} -> {act}
  %biased = dtensor.add %y_sum, %b : ({act}, {bias}) -> {act}
  %dropped = dtensor.dropout %biased seed 1 prob 0.1 : {act}
  %out = dtensor.add %dropped, %r : ({act}, {act}) -> {act}
  func.return %out : {act}
}}
"""
