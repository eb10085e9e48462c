"""Every pass, and the verification that follows it, does work linear in the program's size.

The work is counted, not timed: the number of Python function calls (`sys.setprofile` call
events) while a pass runs on programs of N, 2N and 4N ops - the generated programs of
bench/passes.py, which repeat one block. With work a + bN + cN^2 the growth from 2N to 4N over
the growth from N to 2N is 2 when c = 0 and tends to 4 as the quadratic term takes over (a
pass that walks the module per op, a symbol lookup that scans the module per op); constant
set-up costs cancel out. The bound 2.5 leaves room for small caches filling up.
"""

from __future__ import annotations

import re
import sys
from collections.abc import Callable

import pytest
from bench_programs import bench_module
from xdsl.dialects.builtin import ModuleOp

from ccopt.ir import verify_module
from ccopt.program import load_program

megatron_blocks = bench_module("compile_speed").megatron_blocks
optimizer_copies = bench_module("compile_speed").optimizer_copies
bench_passes = bench_module("passes")  # the benchmark's programs and cases

N = 36
"""The smallest program's op count: a few blocks of every generated program."""

GROWTH_BOUND = 2.5


def calls_during(action: Callable[[], None]) -> int:
    """How many Python functions `action` calls (generators resumed count too)."""
    count = 0

    def profile(_frame: object, event: str, _arg: object) -> None:
        nonlocal count
        if event == "call":
            count += 1

    sys.setprofile(profile)
    try:
        action()
    finally:
        sys.setprofile(None)
    return count


def growth(work: Callable[[int], int], n: int = N) -> float:
    """(work(4n) - work(2n)) / (work(2n) - work(n)), after one warm-up run (imports, caches)."""
    work(n)
    small, middle, large = work(n), work(2 * n), work(4 * n)
    assert small < middle < large, (small, middle, large)
    return (large - middle) / (middle - small)


def prepared(program: str, n_ops: int, before: str) -> ModuleOp:
    module = load_program(bench_passes.PROGRAMS[program](n_ops))
    bench_passes.apply(module, before)
    return module


@pytest.mark.parametrize(
    ("program", "before", "timed"),
    bench_passes.CASES,
    ids=[f"{program}-{timed}" for program, _, timed in bench_passes.CASES],
)
def test_pass_work_is_linear(program: str, before: str, timed: str) -> None:
    def work(n_ops: int) -> int:
        module = prepared(program, n_ops, before)
        return calls_during(lambda: bench_passes.apply(module, timed))

    assert growth(work) <= GROWTH_BOUND


@pytest.mark.parametrize(
    ("name", "make", "pipeline"),
    [
        (
            "megatron",
            megatron_blocks,
            "split-all-reduce,reorder-elementwise,fuse-elementwise,overlap{chunks=3},inline,"
            "convert-to-kernel,plan-memory",
        ),
        (
            "adam",
            lambda n: optimizer_copies("adam", n),
            "split-all-reduce,reorder-elementwise,slice-state{args=m,v},fuse-elementwise,"
            "fuse-collective,convert-to-kernel",
        ),
    ],
)
def test_verification_after_each_pass_is_linear(
    name: str, make: Callable[[int], str], pipeline: str
) -> None:
    """Verifying after a pass costs what the module holds, once: no lookup per op scans the
    module (meshes, callees), and repeated blocks verify alike."""

    def work(n_ops: int) -> int:
        module = load_program(make(n_ops))
        bench_passes.apply(module, pipeline)
        return calls_during(lambda: verify_module(module.clone()))

    assert growth(work) <= GROWTH_BOUND


OPTIMIZER_PIPELINES = {
    "adam": "split-all-reduce,reorder-elementwise,slice-state{args=m,v},fuse-elementwise,"
    "fuse-collective,convert-to-kernel,plan-memory",
    "lamb": "split-all-reduce,reorder-elementwise,sliced-norm,slice-state{args=m,v},"
    "fuse-elementwise,fuse-collective,convert-to-kernel,plan-memory",
}
FUNCTIONS = 16
"""The smallest module's function count (one optimizer step per parameter group)."""

FUNCTION_GROWTH_BOUND = 2.03
"""The functions are copies of one, so a linear pass's work doubles exactly with them (2.0);
a scan of the module's top level per function or per op shows as 2.05 (a symbol index rebuilt
per outlined body) to 2.4 (the meshes found per function) at 16 functions."""


def pipeline_steps(pipeline: str) -> list[str]:
    """The passes of `pipeline`, each with its options (`slice-state{args=m,v}`)."""
    return re.findall(r"[\w-]+(?:\{[^}]*\})?", pipeline)


@pytest.mark.parametrize(
    ("name", "step"),
    [(name, i) for name, p in OPTIMIZER_PIPELINES.items() for i in range(len(pipeline_steps(p)))],
    ids=[f"{name}-{s}" for name, p in OPTIMIZER_PIPELINES.items() for s in pipeline_steps(p)],
)
def test_pass_work_is_linear_in_functions(name: str, step: int) -> None:
    """A module of many functions (a model's layers, an optimizer's parameter groups) costs each
    pass the same per function: no per-function or per-op scan of the module's top level (a
    symbol index rebuilt per outlined body, the meshes found per function)."""
    steps = pipeline_steps(OPTIMIZER_PIPELINES[name])

    def work(functions: int) -> int:
        module = load_program(optimizer_copies(name, functions))
        if step:
            bench_passes.apply(module, ",".join(steps[:step]))
        return calls_during(lambda: bench_passes.apply(module, steps[step]))

    assert growth(work, FUNCTIONS) <= FUNCTION_GROWTH_BOUND
