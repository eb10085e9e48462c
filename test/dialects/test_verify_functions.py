"""Alike functions verify once (ccopt.verifier.function_structure): every function has its own
name, and a model (an optimizer step per parameter) has hundreds of functions alike but for it,
so `func.func` and `func.return` verify once per structure up to the name. These check that the
memo is as strict as verifying every function: a function or return that differs from verified
ones in what its verifier reads is verified again and rejected with the verifier's message."""

from __future__ import annotations

import pytest
from verify_support import expect_error
from xdsl.dialects import func
from xdsl.dialects.builtin import FunctionType, StringAttr
from xdsl.ir import Operation

from ccopt.diagnostics import OpError, SourceText
from ccopt.dialects.dtensor_type import DTensorType, R
from ccopt.ir import make_context, parse_module, verify_module
from ccopt.program import load_program

T = "!dtensor.tensor<8x4xf32, @m[S(0)]>"


def alike_functions(count: int = 3) -> Operation:
    """`count` functions alike but for their names, verified."""
    functions = "\n".join(
        f"""func.func @f{n}(%x: {T}, %y: {T}) -> {T} {{
  %a = dtensor.add %x, %y : ({T}, {T}) -> {T}
  func.return %a : {T}
}}"""
        for n in range(count)
    )
    module = load_program(f"dtensor.mesh @m [tp=4]\n{functions}\n")
    verify_module(module)
    return module


def functions_of(module: Operation) -> list[func.FuncOp]:
    return [op for op in module.walk() if isinstance(op, func.FuncOp)]


def replicate_first_input(f: func.FuncOp) -> list:
    """Give `f`'s signature a replicated first argument (its block argument keeps its type);
    the inputs as they were."""
    inputs = list(f.function_type.inputs.data)
    f.properties["function_type"] = FunctionType.from_lists(
        [replicated(inputs[0]), *inputs[1:]], list(f.function_type.outputs.data)
    )
    return inputs


def replicated(t: DTensorType) -> DTensorType:
    return DTensorType(t.get_shape(), t.element_type, "m", [R])


def test_alike_functions_run_their_verifiers_once(monkeypatch: pytest.MonkeyPatch) -> None:
    """Four functions alike but for their names: the return verifier runs for the first only,
    the function verifier for the first and the last (which ends the module's block, as its
    verifier reads), so the memo is in use and the tests below test it."""
    runs: list[Operation] = []
    for op_class in (func.FuncOp, func.ReturnOp):
        check = op_class.verify_

        def counted(op: Operation, check=check) -> None:  # noqa: ANN001
            runs.append(op)
            check(op)

        monkeypatch.setattr(op_class, "verify_", counted)
    module = alike_functions(4)
    f = functions_of(module)
    assert [op.name for op in runs] == ["func.func", "func.return", "func.func"]
    assert runs[0] is f[0] and runs[2] is f[3]


def test_a_signature_changed_in_an_alike_function_is_rejected() -> None:
    """The third function's signature takes a replicated first argument while its block's
    argument stays split: it differs from the verified ones only in its `function_type`."""
    module = alike_functions()
    f = functions_of(module)[2]
    replicate_first_input(f)
    with pytest.raises(OpError, match="entry block arguments to have the same types") as error:
        verify_module(module)
    assert error.value.op is f


def test_a_block_argument_retyped_in_an_alike_function_is_rejected() -> None:
    """The second function's entry block argument changes type under an unchanged signature
    (its uses are gone, so only the function can object)."""
    module = alike_functions()
    f = functions_of(module)[1]
    add = f.body.blocks.first.first_op
    ret = f.body.blocks.first.last_op
    ret.operands = [f.body.blocks.first.args[1]]
    add.detach()
    add.erase()
    arg = f.body.blocks.first.args[0]
    arg._type = replicated(arg.type)  # type: ignore[attr-defined]
    expect_error(module, "entry block arguments to have the same types")


def test_a_return_of_another_type_in_an_alike_function_is_rejected() -> None:
    """The second function's add result becomes replicated: its return no longer returns the
    function's result type, the one detail in which it differs from verified returns."""
    module = alike_functions()
    f = functions_of(module)[1]
    ret = f.body.blocks.first.last_op
    g = functions_of(module)[0]
    ret.operands = [g.body.blocks.first.args[0]]  # (another function's value, of the same type)
    f.properties["function_type"] = FunctionType.from_lists(
        list(f.function_type.inputs.data), [replicated(f.function_type.outputs.data[0])]
    )
    with pytest.raises(OpError, match="same types as the function output types") as error:
        verify_module(module)
    assert error.value.op is ret


def test_a_renamed_function_verifies_as_alike() -> None:
    """A name is not part of the memo: renaming a verified function keeps it verified (and a
    name of another kind still reaches the verifier)."""
    module = alike_functions()
    f = functions_of(module)[1]
    f.properties["sym_name"] = StringAttr("renamed")
    verify_module(module)
    f.properties["sym_name"] = FunctionType.from_lists([], [])
    with pytest.raises(OpError, match="should be a string"):
        verify_module(module)


def test_a_return_moved_before_the_end_of_an_alike_function_is_rejected() -> None:
    """The third function's return moves before its add: it no longer ends its block."""
    module = alike_functions()
    f = functions_of(module)[2]
    block = f.body.blocks.first
    ret = block.last_op
    ret.detach()
    block.insert_op_before(ret, block.first_op)
    with pytest.raises(OpError) as error:
        verify_module(module)
    assert error.value.op in (ret, block.last_op)


def test_ops_of_a_function_given_another_signature_are_not_verified_again(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A function's properties change (here its visibility; a pass slicing optimizer state
    changes its signature): every op in it has a new place, and those whose structure verified
    before are recognised in the walk (`VerificationWalk.verified_leaf`), without a verifier."""
    from ccopt import verifier

    module = alike_functions()
    f = functions_of(module)[1]
    add = f.body.blocks.first.first_op
    f.properties["sym_visibility"] = StringAttr("private")
    runs: list[str] = []
    check = verifier.run_verifier

    def counted(op: Operation, context_only: bool = False) -> None:
        runs.append(op.name)
        check(op, context_only)

    monkeypatch.setattr(verifier, "run_verifier", counted)
    verify_module(module)
    assert "dtensor.add" not in runs
    place = getattr(add, verifier._VERIFIED)[1]  # pyright: ignore[reportPrivateUsage]
    assert place[0] is f.body.blocks.first and ("sym_visibility", StringAttr("private")) in place[1]


def test_an_op_retyped_in_a_function_given_another_signature_is_rejected() -> None:
    """As above, and the add's result also changes type: the walk's memo does not know its
    structure, and its verifier rejects it."""
    module = alike_functions()
    f = functions_of(module)[1]
    add = f.body.blocks.first.first_op
    f.properties["sym_visibility"] = StringAttr("private")
    add.results[0]._type = replicated(add.results[0].type)  # type: ignore[attr-defined]
    with pytest.raises(OpError, match="does not match the inferred type") as error:
        verify_module(module)
    assert error.value.op is add


def test_a_walk_verified_failure_is_reported_after_the_function_before_it() -> None:
    """On a first verification the walk verifies alike ops itself; an op that fails there is
    left to the op verifiers, which report failures in walk order: the function (which holds
    the op, before it) is reported first, as a full verification does."""
    module = parse_module(
        make_context(),
        SourceText(
            "<test>",
            f"""dtensor.mesh @m [tp=4]
func.func @f(%x: {T}, %y: {T}) -> {T} {{
  %a = dtensor.add %x, %y : ({T}, {T}) -> {T}
  func.return %a : {T}
}}
""",
        ),
    )
    f = functions_of(module)[0]
    add = f.body.blocks.first.first_op
    add.results[0]._type = replicated(add.results[0].type)  # type: ignore[attr-defined]
    inputs = replicate_first_input(f)
    with pytest.raises(OpError, match="entry block arguments") as error:
        verify_module(module)
    assert error.value.op is f
    f.properties["function_type"] = FunctionType.from_lists(
        inputs, list(f.function_type.outputs.data)
    )
    with pytest.raises(OpError, match="does not match the inferred type") as error:
        verify_module(module)
    assert error.value.op is add


def test_a_result_type_naming_no_mesh_in_an_alike_function_is_rejected() -> None:
    """An op whose structure verified but whose result type names a mesh nobody declares (the
    walk's type verdict) is left to the tensor type check, which rejects it."""
    module = alike_functions()
    f = functions_of(module)[2]
    add = f.body.blocks.first.first_op
    t = add.results[0].type
    add.results[0]._type = DTensorType(t.get_shape(), t.element_type, "nowhere", [R])  # type: ignore[attr-defined]
    with pytest.raises(OpError) as error:
        verify_module(module)
    assert error.value.op is add


def test_alike_functions_verify_again_when_a_mesh_changes() -> None:
    """The memo the walk reads is the module's for its meshes: a mesh resized is seen (every op
    is verified again: a tensor placed over one axis of a mesh that now has two is rejected)."""
    from xdsl.dialects.builtin import ArrayAttr, DenseArrayBase, i64

    module = alike_functions()
    mesh = next(op for op in module.walk() if op.name == "dtensor.mesh")
    mesh.properties["axis_sizes"] = DenseArrayBase.from_list(i64, [2, 2])
    mesh.properties["axis_names"] = ArrayAttr([StringAttr("tp"), StringAttr("dp")])
    with pytest.raises(OpError, match="placements but mesh"):
        verify_module(module)


def test_the_walk_verifies_alike_ops_of_functions_itself(monkeypatch: pytest.MonkeyPatch) -> None:
    """On a first verification, the adds of four alike functions are verified in the walk (the
    first by its verifier, the rest by its structure) and never reach `verify_ops`."""
    from ccopt import verifier

    handed: list[str] = []
    verify_ops = verifier.verify_ops

    def recorded(changed: list[Operation], *args: object) -> None:
        handed.extend(op.name for op in changed)
        verify_ops(changed, *args)  # type: ignore[arg-type]

    monkeypatch.setattr(verifier, "verify_ops", recorded)
    alike_functions(4)
    assert "dtensor.add" not in handed and "func.func" in handed
