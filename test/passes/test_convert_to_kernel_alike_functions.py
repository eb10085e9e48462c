"""convert-to-kernel lowers functions alike once (`AlikeFunctions`): a function whose L1 form is an
earlier one's under another name (`structure_key`) gets a copy of that one's kernel-level form
(`FunctionCopier`), the same as lowering it would make - ops, names, bodies named, and each
value's uses in the same order."""

from __future__ import annotations

import pytest
from bench_programs import bench_module
from xdsl.dialects import func

import ccopt.passes.alike_functions as alike_functions
import ccopt.passes.convert_to_kernel as c2k
from ccopt.passes.alike_functions import FunctionCopier, structure_key
from ccopt.passes.pipeline import run_pipeline
from ccopt.program import load_program

PIPELINE = (
    "split-all-reduce,reorder-elementwise,slice-state{args=m,v},fuse-elementwise,fuse-collective,"
    "convert-to-kernel,plan-memory"
)
T = "!dtensor.tensor<8x6xf32, @t[R]>"


def steps(kind: str, count: int) -> str:
    """`count` copies of an optimizer step, as the compile-speed benchmark makes them."""
    return bench_module("compile_speed").optimizer_copies(kind, count)


def use_orders(module) -> list:  # noqa: ANN001
    """Per function, per value (arguments, then results in order), its uses as (reader's
    position, operand index) in list order."""
    out = []
    for f in module.ops:
        if not isinstance(f, func.FuncOp):
            continue
        ops = list(f.body.blocks[0].ops)
        at = {id(o): i for i, o in enumerate(ops)}
        values = [*f.body.blocks[0].args, *(r for o in ops for r in o.results)]
        out.append([[(at[id(u.operation)], u.index) for u in v.uses] for v in values])
    return out


def places(module) -> list[str]:  # noqa: ANN001
    """Every op's location, in walk order: diagnostics point at them."""
    return [str(op.location) for op in module.walk()]


def lowered(text: str, pipeline: str, monkeypatch: pytest.MonkeyPatch, copies: bool):  # noqa: ANN201
    """The module after `pipeline`, and how many functions were lowered (not copied)."""
    count = [0]
    lower = c2k.lower_function

    def counting(*args, **kwargs):  # noqa: ANN002, ANN003, ANN202
        count[0] += 1
        return lower(*args, **kwargs)

    with monkeypatch.context() as m:
        m.setattr(c2k, "lower_function", counting)
        if not copies:
            m.setattr(alike_functions, "structure_key", lambda *args: None)
        module = load_program(text)
        run_pipeline(module, pipeline)
    return module, count[0]


@pytest.mark.parametrize("kind", ["adam", "lamb"])
def test_optimizer_steps_are_lowered_once_and_copied(
    kind: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    pipeline = PIPELINE.replace("reorder-elementwise,", "reorder-elementwise,sliced-norm,")
    if kind == "adam":
        pipeline = PIPELINE
    copied, lowered_count = lowered(steps(kind, 4), pipeline, monkeypatch, copies=True)
    each, each_count = lowered(steps(kind, 4), pipeline, monkeypatch, copies=False)
    assert (lowered_count, each_count) == (1, 4)
    assert str(copied) == str(each)
    assert use_orders(copied) == use_orders(each)
    assert places(copied) == places(each)


def module_of(*bodies: str, calls: str = "") -> str:
    functions = "".join(
        f"func.func @f{i}(%x: {T}, %y: {T}) -> {T} {{\n{body}}}\n" for i, body in enumerate(bodies)
    )
    return f"dtensor.mesh @t [tp=2]\n{functions}{calls}"


ADD = (
    f"  %s = dtensor.add %x, %y : ({T}, {T}) -> {T}\n"
    f"  %n = dtensor.scale %s by 2.0 : {T}\n"
    f"  func.return %n : {T}\n"
)


@pytest.mark.parametrize(
    ("other", "calls"),
    [
        (ADD.replace("2.0", "3.0"), ""),  # another constant
        (ADD.replace("%n", "%m"), ""),  # another name
        (ADD.replace("%x, %y", "%y, %x"), ""),  # other operands
        (
            ADD,
            f"func.func @g(%a: {T}) -> {T} {{\n"  # called: it joins its streams
            f"  %r = func.call @f1(%a, %a) : ({T}, {T}) -> {T}\n  func.return %r : {T}\n}}\n",
        ),
    ],
)
def test_functions_that_differ_are_lowered_each(
    other: str, calls: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    text = module_of(ADD, other, ADD, calls=calls)
    copied, count = lowered(text, "convert-to-kernel,plan-memory", monkeypatch, copies=True)
    each, _ = lowered(text, "convert-to-kernel,plan-memory", monkeypatch, copies=False)
    assert count == 2 + bool(calls)  # f2 is f0's copy
    assert str(copied) == str(each)
    assert places(copied) == places(each)


def test_structure_key_ignores_only_the_name() -> None:
    module = load_program(module_of(ADD, ADD, ADD.replace("2.0", "3.0")))
    f0, f1, f2 = [o for o in module.ops if isinstance(o, func.FuncOp)]
    assert structure_key(f0) == structure_key(f1) != structure_key(f2)
    assert structure_key(f0, "called") != structure_key(f1)
    f1.sym_visibility = "private"  # type: ignore[assignment]
    assert structure_key(f0) != structure_key(f1)


def test_a_copy_keeps_each_values_use_order() -> None:
    module = load_program(
        module_of(
            f"  %s = dtensor.add %x, %y : ({T}, {T}) -> {T}\n"
            f"  %n = dtensor.mul %s, %x : ({T}, {T}) -> {T}\n"
            f"  %m = dtensor.sub %x, %s : ({T}, {T}) -> {T}\n"
            f"  func.return %m : {T}\n"
        )
    )
    f = next(o for o in module.ops if isinstance(o, func.FuncOp))
    x = f.body.blocks[0].args[0]
    uses = list(x.uses)
    for use in uses:  # the reverse of the order building gives
        x.remove_use(use)
    for use in uses:
        x.add_use(use)
    locations: list = []
    structure_key(f, None, locations)
    copier = FunctionCopier(f, locations)
    assert [at for at, _ in copier.orders] == [0]  # (x: the others' uses are as built)
    copy = copier.copy("g", locations)
    module.body.block.add_op(copy)
    first, second = use_orders(module)
    assert first == second
    assert str(copy) == str(f).replace("@f0", "@g")


def test_alike_functions_refused_are_refused_at_the_first(monkeypatch: pytest.MonkeyPatch) -> None:
    """Only the first of alike functions is checked: the refusal names the one it named."""
    from ccopt.diagnostics import OpError, SourceText

    refused = ADD.replace("  func.return", "  %k = arith.constant 1 : i64\n  func.return")
    text = module_of(ADD, refused, refused)
    errors = []
    for copies in (True, False):
        with pytest.raises(OpError) as caught:
            lowered(text, "convert-to-kernel", monkeypatch, copies=copies)
        errors.append(caught.value.render(SourceText("f.mlir", text)))
    assert errors[0] == errors[1]
    assert ":10:3:" in errors[0]  # (f1's constant, not f2's)


def test_plan_memory_sizes_each_buffer_type_once(monkeypatch: pytest.MonkeyPatch) -> None:
    """Functions of one module share their buffer types' sizes (optimizer steps: all alike)."""
    from ccopt.dialects import kernel as k

    module, _ = lowered(steps("adam", 4), PIPELINE.removesuffix(",plan-memory"), monkeypatch, True)
    sized = []
    buffer_bytes = k.buffer_bytes

    def counting(t, mesh):  # noqa: ANN001, ANN202
        sized.append(t)
        return buffer_bytes(t, mesh)

    monkeypatch.setattr(k, "buffer_bytes", counting)
    run_pipeline(module, "plan-memory")
    types = {op.results[0].type for op in module.walk() if isinstance(op, k.AllocOp)}
    assert len(sized) == len(types)


@pytest.mark.parametrize("kind", ["adam", "lamb"])
def test_fuse_elementwise_copies_steps_once_they_name_only_shared_bodies(
    kind: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The first step's bodies are inline until the second computes alike (then both name
    them): from the third on, a step fuses as the one before without changing what is shared,
    and the steps after it are its copies."""
    import ccopt.passes.fuse_elementwise as fe

    pipeline = "split-all-reduce,reorder-elementwise,slice-state{args=m,v},fuse-elementwise"
    results = []
    for copies in (True, False):
        fused = [0]
        find_groups = fe.find_groups

        def counting(block, _find=find_groups, _fused=fused):  # noqa: ANN001, ANN202
            _fused[0] += 1
            return _find(block)

        with monkeypatch.context() as m:
            m.setattr(fe, "find_groups", counting)
            if not copies:
                m.setattr(alike_functions, "structure_key", lambda *args: None)
            module = load_program(steps(kind, 6))
            run_pipeline(module, pipeline.removesuffix(",fuse-elementwise"))
            functions = [o for o in module.ops if isinstance(o, func.FuncOp)]
            run_pipeline(module, "fuse-elementwise")
        # (copies in place: the functions, their blocks and arguments stay, as fusing leaves them)
        assert functions == [o for o in module.ops if isinstance(o, func.FuncOp)]
        results.append((str(module), places(module), use_orders(module), fused[0]))
    (text, where, uses, fused_copying), (text_each, where_each, uses_each, fused_each) = results
    assert (fused_copying, fused_each) == (3, 6)
    assert text == text_each
    assert where == where_each
    assert uses == uses_each
