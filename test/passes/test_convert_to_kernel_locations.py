"""convert-to-kernel locates each kernel-level op where the L1 op it lowers was, and each lowered
function where its source function was, so diagnostics after lowering point at the program's
own lines; a function copied from an alike one (`AlikeFunctions`) at its own lines."""

from __future__ import annotations

import re
from pathlib import Path

from test_erased_ir_freed import _ADAM_PIPELINE, optimizer_copies
from xdsl.dialects import func
from xdsl.dialects.builtin import FileLineColLoc

from ccopt.diagnostics import SourceText
from ccopt.ir import make_context, parse_module, verify_module
from ccopt.passes.pipeline import checked_pipeline


def source_ranges(text: str) -> dict[str, range]:
    """Each function's lines (1-based), from its `func.func` line to the next one's."""
    starts = [
        (m.group(1), text.count("\n", 0, m.start()) + 1)
        for m in re.finditer(r"^func\.func @(\w+)\(", text, re.M)
    ]
    ends = [line for _, line in starts[1:]] + [text.count("\n") + 2]
    return {name: range(line, end) for (name, line), end in zip(starts, ends, strict=True)}


def test_lowered_ops_are_located_at_their_functions_own_source_lines() -> None:
    text = optimizer_copies("adam", 4)
    ranges = source_ranges(text)
    ctx = make_context()
    module = parse_module(ctx, SourceText("adam4.mlir", text))
    verify_module(module)
    checked_pipeline(_ADAM_PIPELINE).apply(ctx, module)
    functions = [op for op in module.ops if isinstance(op, func.FuncOp)]
    assert [f.sym_name.data for f in functions] == list(ranges)
    for f in functions:
        lines = ranges[f.sym_name.data]
        assert isinstance(f.location, FileLineColLoc)
        assert f.location.line.data == lines.start
        located = [o.location for o in f.walk() if o is not f]
        assert located and all(isinstance(loc, FileLineColLoc) for loc in located)
        assert {loc.line.data for loc in located} <= set(lines), f.sym_name.data  # type: ignore[attr-defined]
        assert len({loc.line.data for loc in located}) > 1  # type: ignore[attr-defined]


def test_an_error_found_after_lowering_names_the_op_it_lowered() -> None:
    """The gemm lowered from examples/megatron_mlp.mlir's first matmul is located at the
    matmul's line (not the mesh declaration's): a kernel-level diagnostic points there. (An
    open placement, which the kernel ops refused after lowering, is now refused before.)"""
    from ccopt.diagnostics import OpError
    from ccopt.dialects import kernel

    example = Path(__file__).resolve().parents[2] / "examples" / "megatron_mlp.mlir"
    text = example.read_text()
    line = 1 + text.splitlines().index("  %h0 = dtensor.matmul %x, %w1 : (!x, !w1) -> !h")
    ctx = make_context()
    module = parse_module(ctx, SourceText(str(example), text))
    checked_pipeline("inline,convert-to-kernel,plan-memory").apply(ctx, module)
    gemm = next(op for op in module.walk() if isinstance(op, kernel.GemmOp))
    assert f"megatron_mlp.mlir:{line}:3: error: 'kernel.gemm' op" in OpError(gemm, "x").render()


def test_argument_attributes_survive_lowering() -> None:
    """Adam's `v` and `t` are `{ccopt.positive}`: convert-to-kernel dropped the attribute, and a
    kernel-level Adam then ran on negative second moments (1765 of w's elements NaN)."""
    import numpy as np

    import ccopt
    from ccopt.passes.pipeline import apply_pipeline
    from ccopt.program import load_program

    adam = Path(__file__).resolve().parents[2] / "examples" / "adam.mlir"
    lowered = apply_pipeline(load_program(adam), "convert-to-kernel,plan-memory")
    assert str(lowered).count("ccopt.positive") == str(load_program(adam)).count("ccopt.positive")
    outputs = ccopt.run(lowered).outputs
    assert not any(np.isnan(v).any() for v in outputs.values())
