"""Run ccopt programs on N simulated ranks and check pass pipelines numerically.

`run` interprets a program's entry function with global input arrays (given, or random from a
seed) and returns global outputs: the function's results (`result0`, ...) and the final values of
in-place-updated arguments (by argument name). `check_pipeline` runs a program before and after a
pass pipeline on the same inputs and compares every output.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
from xdsl.context import Context
from xdsl.dialects import func
from xdsl.dialects.builtin import DenseArrayBase, ModuleOp, i64
from xdsl.ir import BlockArgument
from xdsl.utils.exceptions import DiagnosticException

from ccopt.diagnostics import CcoptError, OpError, SourceText, first_line
from ccopt.mesh import Mesh

Program = str | os.PathLike[str] | ModuleOp


class InputError(CcoptError):
    """An input that does not fit the program (missing, misnamed, wrong shape or dtype)."""


@dataclass
class RunResult:
    """Global values of one run. Inputs of values that are P or V on some mesh axis carry one
    leading dimension per such axis (each coordinate's own value); outputs are logical values:
    P axes reduced in rank order, V axes still stacked in front (see
    `ccopt.interpreters.distributed`)."""

    entry: str
    meshes: dict[str, Mesh]
    inputs: dict[str, np.ndarray]
    outputs: dict[str, np.ndarray]
    shards: dict[str, list[np.ndarray]] = field(repr=False)


@dataclass
class OutputComparison:
    name: str
    max_abs_error: float
    max_rel_error: float
    ok: bool
    note: str = ""


@dataclass
class CheckReport:
    """The outcome of `check_pipeline`: one comparison per output."""

    pipeline: str
    comparisons: list[OutputComparison]
    reference: RunResult
    optimized: RunResult

    @property
    def ok(self) -> bool:
        return all(c.ok for c in self.comparisons)


def load_program(program: Program, ctx: Context | None = None) -> ModuleOp:
    """A verified module from a path, IR text or a module (which is cloned, never changed)."""
    from ccopt.ir import make_context, parse_module, verify_module

    if isinstance(program, ModuleOp):
        module = program.clone()
    else:
        ctx = ctx or make_context()
        if isinstance(program, os.PathLike) or (
            "\n" not in program and Path(program).suffix == ".mlir"
        ):
            path = Path(program)
            try:
                text = path.read_text(encoding="utf-8")
            except OSError as e:
                raise CcoptError(f"cannot read program '{path}': {e.strerror}") from None
            source = SourceText(str(path), text)
        else:
            source = SourceText("<string>", str(program))
        module = parse_module(ctx, source)
    verify_module(module)
    return module


def module_meshes(module: ModuleOp) -> dict[str, Mesh]:
    from ccopt.dialects.dtensor import MeshOp

    return {op.sym_name.data: op.mesh for op in module.walk() if isinstance(op, MeshOp)}


def parse_mesh_spec(spec: str) -> dict[str, int]:
    """`dp=2,tp=4` -> {"dp": 2, "tp": 4}."""
    sizes: dict[str, int] = {}
    for part in filter(None, (p.strip() for p in spec.split(","))):
        name, eq, value = part.partition("=")
        if not eq or not name.strip() or not value.strip().isdigit():
            raise InputError(f"bad mesh '{spec}': expected axis=size pairs like dp=2,tp=4")
        sizes[name.strip()] = int(value)
    return sizes


def bind_mesh(module: ModuleOp, sizes: Mapping[str, int] | str | None) -> dict[str, Mesh]:
    """Resize the program's mesh axes (the program's shapes are global, so it runs on any mesh
    its verifier accepts); returns the meshes by name."""
    from ccopt.dialects.dtensor import MeshOp
    from ccopt.ir import verify_module

    if isinstance(sizes, str):
        sizes = parse_mesh_spec(sizes)
    if sizes:
        meshes = [op for op in module.walk() if isinstance(op, MeshOp)]
        known = {a.data for m in meshes for a in m.axis_names.data}
        for axis, size in sizes.items():
            if axis not in known:
                described = "; ".join(str(m.mesh) for m in meshes) or "no mesh"
                raise InputError(
                    f"mesh axis '{axis}' is not in the program (it declares {described})"
                )
            if size < 1:
                raise InputError(f"mesh axis '{axis}' needs a size >= 1, got {size}")
        for m in meshes:
            names = [a.data for a in m.axis_names.data]
            new = [sizes.get(n, s) for n, s in zip(names, m.axis_sizes.get_values(), strict=True)]
            m.axis_sizes = DenseArrayBase.from_list(i64, new)
        try:
            verify_module(module)
        except OpError as e:
            raise InputError(f"the program does not fit mesh {dict(sizes)}: {e.render()}") from None
    return module_meshes(module)


def find_entry(module: ModuleOp, entry: str | None) -> func.FuncOp:
    funcs = [op for op in module.ops if isinstance(op, func.FuncOp) and op.body.blocks]
    if entry is not None:
        for f in funcs:
            if f.sym_name.data == entry:
                return f
        raise InputError(
            f"no function @{entry} (functions: {', '.join('@' + f.sym_name.data for f in funcs)})"
        )
    public = [f for f in funcs if f.sym_visibility is None or f.sym_visibility.data != "private"]
    if len(public) == 1:
        return public[0]  # private functions are helpers, not entry points
    if len(funcs) != 1:
        names = ", ".join("@" + f.sym_name.data for f in funcs) or "none"
        raise InputError(f"choose the entry function with --entry (functions: {names})")
    return funcs[0]


def input_arguments(f: func.FuncOp) -> list[BlockArgument]:
    """The arguments a caller provides: all of them, except the output buffers that a
    kernel-level function takes last (`kernel.results`)."""
    args = list(f.body.blocks[0].args)
    results = f.attributes.get("kernel.results")
    return args[: len(args) - results.value.data] if results is not None else args  # type: ignore[union-attr]


def argument_names(f: func.FuncOp) -> list[str]:
    return [a.name_hint or f"arg{a.index}" for a in input_arguments(f)]


def argument_tensor(arg: BlockArgument):  # noqa: ANN201 - DTensorType | None
    """The distributed tensor type of an L1 argument or of an L3 buffer argument."""
    from ccopt.dialects.dtensor_type import DTensorType
    from ccopt.dialects.kernel import BufferType

    t = arg.type
    if isinstance(t, BufferType):
        return t.tensor
    return t if isinstance(t, DTensorType) else None


_KIND_GROUPS = ({"f", "V"}, {"i", "u"}, {"b"})


def _same_kind(have: np.dtype, want: np.dtype) -> bool:
    return any(have.kind in g and want.kind in g for g in _KIND_GROUPS)


def random_array(rng: np.random.Generator, shape: tuple[int, ...], dtype: np.dtype) -> np.ndarray:
    if dtype.kind == "b":
        return rng.random(shape) < 0.5
    if dtype.kind in "iu":
        return rng.integers(-8, 8, size=shape).astype(dtype)
    return rng.standard_normal(shape).astype(np.float32).astype(dtype)


def prepare_inputs(
    f: func.FuncOp, meshes: Mapping[str, Mesh], inputs: Mapping[str, np.ndarray] | None, seed: int
) -> dict[str, np.ndarray]:
    """Global input arrays by argument name: checked against the signature, or random."""
    from ccopt.interpreters.distributed import global_shape, numpy_dtype

    names = argument_names(f)
    if inputs is not None:
        unknown = sorted(set(inputs) - set(names))
        if unknown:
            raise InputError(
                f"input '{unknown[0]}' is not an argument of @{f.sym_name.data} "
                f"(arguments: {', '.join(names)})"
            )
    rng = np.random.default_rng(seed)
    out: dict[str, np.ndarray] = {}
    for name, arg in zip(names, input_arguments(f), strict=True):
        t = argument_tensor(arg)
        if t is None:
            raise InputError(
                f"argument '{name}' has type {arg.type}; ccopt-run takes !dtensor.tensor arguments"
            )
        mesh = meshes[t.mesh_name]
        dtype = numpy_dtype(t.element_type)
        if inputs is None:
            out[name] = random_array(rng, global_shape(t, mesh), dtype)
            continue
        if name not in inputs:
            raise InputError(f"missing input for argument '{name}' of type {t}")
        value = np.asarray(inputs[name])
        allowed = [global_shape(t, mesh), tuple(t.get_shape())]
        if value.shape not in allowed:
            shapes = " or ".join(str(list(s)) for s in dict.fromkeys(allowed))
            raise InputError(
                f"input '{name}' has shape {list(value.shape)}, argument needs {shapes} ({t})"
            )
        if not _same_kind(value.dtype, dtype):
            raise InputError(
                f"input '{name}' has dtype {value.dtype}, argument needs {dtype} ({t})"
            )
        out[name] = value.astype(dtype)
    return out


def apply_pipeline(module: ModuleOp, pipeline: str) -> ModuleOp:
    """A verified copy of `module` after the pass pipeline (the module itself is untouched)."""
    optimized = module.clone()
    run_pipeline(optimized, pipeline)
    return optimized


def run_pipeline(module: ModuleOp, pipeline: str) -> None:
    """Apply a pass pipeline to `module` in place and verify the result; bad pipelines and
    refused rewrites are CcoptErrors."""
    from ccopt.ir import make_context, verify_module
    from ccopt.passes import parse_pipeline

    passes = parse_pipeline(pipeline)
    try:
        passes.apply(make_context(), module)
    except CcoptError:
        raise
    except DiagnosticException as e:
        raise CcoptError(f"pipeline '{pipeline}' failed: {first_line(e)}") from None
    verify_module(module)


def _execute(
    module: ModuleOp,
    meshes: dict[str, Mesh],
    f: func.FuncOp,
    inputs: dict[str, np.ndarray],
    steps: int,
) -> RunResult:
    from ccopt.interpreters import ReferenceInterpreter
    from ccopt.interpreters.distributed import DistTensor, InterpreterError, distribute, gather

    names = argument_names(f)
    args: list[DistTensor] = []
    for n, a in zip(names, input_arguments(f), strict=True):
        t = argument_tensor(a)
        args.append(distribute(inputs[n], t, meshes[t.mesh_name]))
    interpreter = ReferenceInterpreter(module, meshes)
    results: tuple[DistTensor, ...] = ()
    updates: dict[int, DistTensor] = {}
    try:
        for _ in range(steps):
            results, updates = interpreter.call(f, args)
            for index, value in updates.items():
                args[index] = value
        named = {f"result{i}": r for i, r in enumerate(results)}
        named.update({names[i]: d for i, d in sorted(updates.items())})
        outputs = {n: gather(d) for n, d in named.items()}
    except InterpreterError as e:
        raise CcoptError(f"@{f.sym_name.data}: {e}") from None
    return RunResult(
        f.sym_name.data, meshes, inputs, outputs, {n: list(d.shards) for n, d in named.items()}
    )


def run(
    program: Program,
    inputs: Mapping[str, np.ndarray] | None = None,
    *,
    entry: str | None = None,
    mesh: Mapping[str, int] | str | None = None,
    seed: int = 0,
    steps: int = 1,
) -> RunResult:
    """Interpret `entry` of `program` on its mesh (resized by `mesh`) with `inputs` (global
    arrays by argument name) or random inputs drawn from `seed`; `steps` > 1 runs it repeatedly,
    feeding in-place updates (optimizer state) into the next step."""
    module = load_program(program)
    meshes = bind_mesh(module, mesh)
    f = find_entry(module, entry)
    return _execute(module, meshes, f, prepare_inputs(f, meshes, inputs, seed), steps)


def compare(
    name: str, got: np.ndarray, want: np.ndarray, rtol: float, atol: float | None
) -> OutputComparison:
    """`|got - want| <= atol + rtol * |want|` elementwise; NaN matches NaN, inf matches the same
    inf. `atol=None` scales it to the output: rtol times its largest finite magnitude, because an
    element near zero from cancellation carries the rounding of the large terms it came from."""
    if got.shape != want.shape:
        return OutputComparison(
            name, np.inf, np.inf, False, f"shape {list(got.shape)} != {list(want.shape)}"
        )
    g, w = got.astype(np.float64), want.astype(np.float64)
    same = (g == w) | (np.isnan(g) & np.isnan(w))
    with np.errstate(invalid="ignore"):
        diff = np.where(same, 0.0, np.abs(g - w))
    diff = np.where(np.isnan(diff), np.inf, diff)
    if diff.size == 0:
        return OutputComparison(name, 0.0, 0.0, True)
    scale = np.where(np.isfinite(w), np.abs(w), 0.0)
    abs_err = float(diff.max())
    rel_err = float(np.max(diff / np.maximum(scale, np.finfo(np.float64).tiny)))
    if atol is None:
        atol = rtol * float(scale.max())
    ok = bool(np.all(diff <= atol + rtol * scale))
    return OutputComparison(name, abs_err, rel_err, ok)


def check_pipeline(
    program: Program,
    pipeline: str,
    inputs: Mapping[str, np.ndarray] | None = None,
    *,
    entry: str | None = None,
    mesh: Mapping[str, int] | str | None = None,
    seed: int = 0,
    steps: int = 1,
    rtol: float = 1e-5,
    atol: float | None = None,
) -> CheckReport:
    """Run `program` before and after `pipeline` on the same inputs; compare every output
    (`|after - before| <= atol + rtol * |before|`, see `compare`)."""
    module = load_program(program)
    bind_mesh(module, mesh)
    optimized = apply_pipeline(module, pipeline)
    return compare_modules(
        module,
        optimized,
        inputs,
        entry=entry,
        seed=seed,
        steps=steps,
        rtol=rtol,
        atol=atol,
        description=pipeline,
    )


def compare_modules(
    module: ModuleOp,
    optimized: ModuleOp,
    inputs: Mapping[str, np.ndarray] | None = None,
    *,
    entry: str | None = None,
    mesh: Mapping[str, int] | str | None = None,
    seed: int = 0,
    steps: int = 1,
    rtol: float = 1e-5,
    atol: float | None = None,
    description: str = "",
) -> CheckReport:
    """Run two versions of a program on the same inputs and compare every output."""
    module, optimized = module.clone(), optimized.clone()
    meshes = bind_mesh(module, mesh)
    bind_mesh(optimized, mesh)
    f = find_entry(module, entry)
    values = prepare_inputs(f, meshes, inputs, seed)
    reference = _execute(module, meshes, f, values, steps)
    g = find_entry(optimized, f.sym_name.data)
    after = _execute(optimized, module_meshes(optimized), g, values, steps)
    comparisons = []
    for name, want in reference.outputs.items():
        got = after.outputs.get(name)
        if got is None:
            comparisons.append(
                OutputComparison(name, np.inf, np.inf, False, "missing after the pipeline")
            )
        else:
            comparisons.append(compare(name, got, want, rtol, atol))
    for name in after.outputs.keys() - reference.outputs.keys():
        comparisons.append(
            OutputComparison(name, np.inf, np.inf, False, "not produced before the pipeline")
        )
    return CheckReport(description, comparisons, reference, after)
