"""Run ccopt programs on N simulated ranks and check pass pipelines numerically.

`run` interprets a program's entry function with global input arrays (given, or random from a
seed) and returns global outputs: the function's results (`result0`, ...) and the final values of
in-place-updated arguments (by argument name). `check_pipeline` runs a program before and after a
pass pipeline on the same inputs and compares every output.

This is the façade of the Python API (`ccopt.run`, `ccopt.check_pipeline`): loading programs and
finding their entry lives in `ccopt.program`, applying pipelines in `ccopt.passes.pipeline` and
the semantics in `ccopt.interpreters`, all below it, so that nothing below imports the runner.
"""

from __future__ import annotations

import math
import numbers
import os
import re
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING

import numpy as np
from xdsl.dialects import func
from xdsl.dialects.builtin import ModuleOp

from ccopt.collection import batched_collection
from ccopt.diagnostics import CcoptError, OpError, SourceText
from ccopt.mesh import Mesh
from ccopt.program import (
    InputError,
    ProgramSource,
    argument_names,
    argument_tensor,
    bind_mesh,
    cast_input,
    check_pipeline_text,
    find_entry,
    input_arguments,
    is_number,
    load_program,
    module_meshes,
)

if TYPE_CHECKING:
    from ccopt.dialects.dtensor_type import DTensorType


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

    def __str__(self) -> str:
        """What ran and each output's element type and shape (the repr prints every array)."""
        meshes = ", ".join(str(m) for m in self.meshes.values())
        lines = [f"@{self.entry} on {meshes}"]
        lines += [f"  {n:<12} {str(v.dtype):<9} {list(v.shape)}" for n, v in self.outputs.items()]
        return "\n".join(lines)


@dataclass
class OutputComparison:
    name: str
    max_abs_error: float
    max_rel_error: float
    ok: bool
    note: str = ""
    rtol: float = 0.0
    """The relative tolerance the output was held to (given, or its element type's)."""


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

    def __str__(self) -> str:
        """The verdict and one line per output, as `ccopt-run --check-pipeline` prints them (the
        repr prints every input and output array of both runs)."""
        overall = "ok" if self.ok else "MISMATCH"
        what = f"pipeline '{self.pipeline}'" if self.pipeline else "the change"
        lines = [f"{what} on @{self.reference.entry}: {overall}"]
        for c in self.comparisons:
            errors = f"max abs error {c.max_abs_error:.3e}  max rel error {c.max_rel_error:.3e}"
            note = f"  ({c.note})" if c.note else ""
            verdict = "ok" if c.ok else "MISMATCH"
            lines.append(f"  {c.name:<12} {errors}  {verdict} (rtol {c.rtol:g}){note}")
        return "\n".join(lines)


def random_array(
    rng: np.random.Generator, shape: tuple[int, ...], dtype: np.dtype, positive: bool = False
) -> np.ndarray:
    """Random values of an argument: N(0, 1) floats, integers in [-8, 8); `positive` (an
    argument marked `ccopt.positive`) draws their magnitudes."""
    if dtype.kind == "b":
        return rng.random(shape) < 0.5
    if dtype.kind in "iu":
        drawn = rng.integers(-8, 8, size=shape)
        return (np.abs(drawn) if positive else drawn).astype(dtype)
    drawn = rng.standard_normal(shape)
    return (np.abs(drawn) if positive else drawn).astype(np.float32).astype(dtype)


def positive_arguments(f: func.FuncOp) -> set[int]:
    """The indices of `f`'s arguments marked `ccopt.positive`."""
    from ccopt.dialects.attrs import POSITIVE_ARGUMENT

    if f.arg_attrs is None:
        return set()
    return {i for i, d in enumerate(f.arg_attrs.data) if POSITIVE_ARGUMENT in d.data}


def entry_function(module: ModuleOp, entry: str | None, meshes: Mapping[str, Mesh]) -> func.FuncOp:
    """The function to run (see `find_entry`), refused at its location unless it takes and
    returns distributed tensors on meshes the program declares: the values the interpreter can
    make from global arrays and give back as global arrays (a future or a token cannot)."""
    from ccopt.dialects.dtensor_type import DTensorType

    f = find_entry(module, entry)
    values = [
        (f"argument '{name}'", arg.type, argument_tensor(arg))
        for name, arg in zip(argument_names(f), input_arguments(f), strict=True)
    ]
    values += [
        (f"result #{i}", t, t if isinstance(t, DTensorType) else None)
        for i, t in enumerate(f.function_type.outputs)
    ]
    for what, type_, tensor in values:
        if tensor is None:
            raise OpError(
                f,
                f"{what} of @{f.sym_name.data} has type {type_}; ccopt-run runs functions "
                "that take and return !dtensor.tensor values",
            )
        if tensor.mesh_name not in meshes:
            raise OpError(
                f,
                f"{what} of @{f.sym_name.data} is on mesh @{tensor.mesh_name}, which the "
                "program does not declare",
            )
        check_interpretable(f, what, tensor, meshes[tensor.mesh_name])
    return f


MAX_INTERPRETED_RANKS = 4096
"""The interpreter runs every rank in this process, one numpy array per rank and value."""


def interpreted_bytes(t: DTensorType, mesh: Mesh) -> int:
    """The interpreter's bytes for one value of type `t`: a numpy array per rank, each counted
    at the largest block's size (ceil-div blocks are largest at the mesh origin)."""
    from ccopt.interpreters.distributed import numpy_dtype

    block = math.prod(t.local_shape(mesh, (0,) * mesh.ndim))
    return block * mesh.rank_count * numpy_dtype(t.element_type).itemsize


def check_interpretable(f: func.FuncOp, what: str, t: DTensorType, mesh: Mesh) -> None:
    """Refuse, before allocating anything, a mesh with more ranks than the interpreter runs or
    a value whose blocks on all ranks do not fit in half of this machine's memory."""
    advice = "run it on a smaller mesh with --mesh (global shapes stay the same)"
    if mesh.rank_count > MAX_INTERPRETED_RANKS:
        raise OpError(
            f,
            f"mesh {mesh} has {mesh.rank_count} ranks; the interpreter runs at most "
            f"{MAX_INTERPRETED_RANKS} in one process: {advice}",
        )
    needed = interpreted_bytes(t, mesh)
    budget = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") // 2
    if needed > budget:
        raise OpError(
            f,
            f"{what} of @{f.sym_name.data} ({t}) needs {needed / 2**30:.4g} GiB on "
            f"{mesh.rank_count} ranks, more than half of this machine's memory (the interpreter "
            "holds every rank's block in this process)",
        )


def prepare_inputs(
    f: func.FuncOp, meshes: Mapping[str, Mesh], inputs: Mapping[str, np.ndarray] | None, seed: int
) -> dict[str, np.ndarray]:
    """Global input arrays by argument name (of an `entry_function`): checked against the
    signature, or random."""
    from ccopt.interpreters.distributed import global_shape, numpy_dtype, same_kind

    names = argument_names(f)
    if inputs is not None:
        if not isinstance(inputs, Mapping):
            raise InputError(
                f"inputs must map argument names to arrays (a dict), got {type(inputs).__name__}"
            )
        unknown = sorted(set(inputs) - set(names), key=str)
        if unknown:
            raise InputError(
                f"input '{unknown[0]}' is not an argument of @{f.sym_name.data} "
                f"(arguments: {', '.join(names)})"
            )
    rng = np.random.default_rng(seed)
    out: dict[str, np.ndarray] = {}
    positive = positive_arguments(f)
    for index, (name, arg) in enumerate(zip(names, input_arguments(f), strict=True)):
        t = argument_tensor(arg)
        assert t is not None, "checked by entry_function"
        mesh = meshes[t.mesh_name]
        dtype = numpy_dtype(t.element_type)
        if inputs is None:
            out[name] = random_array(rng, global_shape(t, mesh), dtype, index in positive)
            continue
        if name not in inputs:
            raise InputError(f"missing input for argument '{name}' of type {t}")
        value = input_array(name, inputs[name], t)
        allowed = [global_shape(t, mesh), tuple(t.get_shape())]
        if value.shape not in allowed:
            shapes = " or ".join(str(list(s)) for s in dict.fromkeys(allowed))
            raise InputError(
                f"input '{name}' has shape {list(value.shape)}, argument needs {shapes} ({t})"
            )
        if not same_kind(value.dtype, dtype):
            raise InputError(
                f"input '{name}' has dtype {value.dtype}, argument needs {dtype} ({t}; an "
                "input of the same kind and another width is converted, as float64 to "
                "float32, another kind is not)"
            )
        out[name] = cast_input(name, value, dtype, t)
    return out


def input_array(name: str, value: object, t: DTensorType) -> np.ndarray:
    """An input as a numpy array (a list or a scalar too); what numpy cannot make one array of
    (a ragged list), and a masked array with masked elements (its mask would be dropped and the
    hidden values computed with), are refused by name."""
    if isinstance(value, np.ma.MaskedArray) and np.ma.is_masked(value):
        raise InputError(
            f"input '{name}' is a masked array with {int(np.ma.count_masked(value))} masked "
            f"elements: ccopt runs on every element (fill them, e.g. with .filled(0)) ({t})"
        )
    try:
        return np.asarray(value)
    except (ValueError, TypeError) as e:
        raise InputError(f"input '{name}' is not an array for {t}: {e}") from None


def check_options(
    seed: int,
    steps: int,
    rtol: float | None = None,
    atol: float | None = None,
    memory_limit: float | None = None,
) -> None:
    """Random inputs need a seed numpy takes, a run at least one step (both whole numbers); a
    negative, NaN or infinite tolerance would pass or fail every comparison; a memory limit is
    a number of bytes (0: none)."""
    _check_integer("seed", seed, 0)
    _check_integer("steps", steps, 1)
    for name, value in (("rtol", rtol), ("atol", atol), ("memory_limit", memory_limit)):
        if value is None:
            continue
        if not is_number(value, numbers.Real) or not 0 <= value < math.inf:
            raise InputError(f"{name} must be a finite number >= 0, got {value!r}")


def _check_integer(name: str, value: object, least: int) -> None:
    if not is_number(value, numbers.Integral):
        raise InputError(f"{name} must be an integer >= {least}, got {value!r}")
    if value < least:  # type: ignore[operator]
        raise InputError(f"{name} must be >= {least}, got {value}")


def available_memory() -> int | None:
    """Bytes this machine can give a new allocation without paging (Linux's MemAvailable),
    else its physical memory; None where neither is known."""
    try:
        with open("/proc/meminfo") as meminfo:
            for line in meminfo:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    try:
        return os.sysconf("SC_PHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
    except (AttributeError, OSError, ValueError):
        return None


def called_functions(f: func.FuncOp) -> list[func.FuncOp]:
    """`f` and every function it calls, transitively, each once."""
    from xdsl.traits import SymbolTable

    found, todo = {f.sym_name.data: f}, [f]
    while todo:
        for op in todo.pop().walk():
            if isinstance(op, func.CallOp):
                callee = SymbolTable.lookup_symbol(op, op.callee)
                if isinstance(callee, func.FuncOp) and callee.sym_name.data not in found:
                    found[callee.sym_name.data] = callee
                    todo.append(callee)
    return list(found.values())


def check_stream_order(f: func.FuncOp) -> None:
    """Refuse a kernel-level program in which two streams race (`ccopt.streams`), at the later
    access: the interpreter runs ops in issue order and would compute an answer that the GPU
    may not (the CUDA backend refuses the same programs)."""
    from ccopt.kernel_function import RESULTS
    from ccopt.streams import check_stream_races

    for g in called_functions(f):
        if RESULTS in g.attributes:
            check_stream_races(g)


def held_bytes(f: func.FuncOp, meshes: Mapping[str, Mesh]) -> int:
    """What the interpreter holds running `f`: every tensor value of `f` and of the functions it
    calls, on every rank (it keeps a function's values until it returns): `interpreted_bytes`
    each."""
    from ccopt.dialects import kernel as k
    from ccopt.dialects.dtensor_type import DTensorType

    total = 0
    sizes: dict[object, int] = {}  # type -> bytes on all ranks (a program repeats few types)
    for g in called_functions(f):
        for op in g.walk():
            values = [*op.results, *(a for r in op.regions for b in r.blocks for a in b.args)]
            for v in values:
                size = sizes.get(v.type)
                if size is None:
                    t = v.type.tensor if isinstance(v.type, k.BufferType) else v.type
                    mesh = meshes.get(t.mesh_name) if isinstance(t, DTensorType) else None
                    size = sizes[v.type] = 0 if mesh is None else interpreted_bytes(t, mesh)  # type: ignore[arg-type]
                total += size
    return total


def check_memory(f: func.FuncOp, meshes: Mapping[str, Mesh], limit: int | None) -> None:
    """Refuse, before any input is drawn, a run whose values together would not fit in `limit`
    bytes (None: the memory available now; 0: no limit): the interpreter would page for minutes
    (`check_interpretable` refuses a single argument or result too large)."""
    given = limit is not None
    if limit is None:
        limit = available_memory() or 0
    if limit <= 0:
        return
    needed = held_bytes(f, meshes)
    if needed > limit:
        ranks = max(m.rank_count for m in meshes.values())
        room = f"the limit of {_size(limit)}" if given else f"the {_size(limit)} available now"
        raise OpError(
            f,
            f"@{f.sym_name.data} holds about {_size(needed)} of tensors on {ranks} ranks (its "
            "values and those of the functions it calls, all kept until it returns), more than "
            f"{room}: run it on a smaller mesh or with smaller shapes, or raise the limit "
            "(--max-memory; memory_limit= in Python)",
        )


def _size(n: int) -> str:
    """Bytes in the largest binary unit that keeps a whole number in front."""
    for unit, scale in (("GiB", 2**30), ("MiB", 2**20), ("KiB", 2**10)):
        if n >= scale:
            return f"{n / scale:.1f} {unit}"
    return f"{n} bytes"


def closed_for_interpreter(module: ModuleOp, f: func.FuncOp) -> tuple[ModuleOp, func.FuncOp]:
    """A program with open placements (`?`) runs as its all-`R` twin, which has the same global
    meaning (`ccopt.dialects.open_placements`); others run as they are."""
    from ccopt.dialects.open_as_replicated import close_open_placements, module_has_open
    from ccopt.ir import clone

    if not module_has_open(module):
        return module, f
    closed = clone(module)
    close_open_placements(closed)
    twin = next(
        op for op in closed.walk() if isinstance(op, func.FuncOp) and op.sym_name == f.sym_name
    )
    return closed, twin


def _execute(
    module: ModuleOp,
    meshes: dict[str, Mesh],
    f: func.FuncOp,
    inputs: dict[str, np.ndarray],
    steps: int,
) -> RunResult:
    """Run an `entry_function` on its inputs; an error at an op is located there (an OpError
    from the interpreter), one outside any op (distributing inputs, gathering outputs) names
    the function."""
    from ccopt.interpreters import ReferenceInterpreter
    from ccopt.interpreters.distributed import DistTensor, InterpreterError, distribute, gather

    check_stream_order(f)
    module, f = closed_for_interpreter(module, f)

    names = argument_names(f)
    args: list[DistTensor] = []
    for n, a in zip(names, input_arguments(f), strict=True):
        t = argument_tensor(a)
        assert t is not None, "checked by entry_function"
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


@batched_collection()
def run(
    program: ProgramSource,
    inputs: Mapping[str, np.ndarray] | None = None,
    *,
    entry: str | None = None,
    mesh: Mapping[str, int] | str | None = None,
    seed: int = 0,
    steps: int = 1,
    memory_limit: int | None = None,
) -> RunResult:
    """Interpret `entry` of `program` (a path, IR text, a module, a front-end program: see
    `ccopt.program.load_program`) on its mesh (resized by `mesh`) with `inputs` (global arrays
    by argument name) or random inputs drawn from `seed`; `steps` > 1 runs it repeatedly,
    feeding in-place updates (optimizer state) into the next step. A program whose values
    would not fit in `memory_limit` bytes (default: the memory available; 0: no limit) is
    refused (`check_memory`)."""
    check_options(seed, steps, memory_limit=memory_limit)
    module = load_program(program)
    meshes = bind_mesh(module, mesh)
    f = entry_function(module, entry, meshes)
    check_memory(f, meshes, memory_limit)
    return _execute(module, meshes, f, prepare_inputs(f, meshes, inputs, seed), steps)


DEFAULT_RTOL = 1e-5
"""Relative tolerance of a comparison where none is given, for f32, f64 and integers."""
LOW_PRECISION_RTOL = {"float16": 1e-2, "bfloat16": 5e-2}
"""The same for the 16-bit floats, whose unit roundoff (2^-11, 2^-8) is above 1e-5: a pipeline
that only sums in another order moves their results by an ulp or more (the property tests'
tolerances, test/passes/test_random_programs.py)."""


def default_rtol(dtype: np.dtype) -> float:
    return LOW_PRECISION_RTOL.get(np.dtype(dtype).name, DEFAULT_RTOL)


def unit_roundoff(dtype: np.dtype) -> float:
    """Half the distance from 1 to the next value of a floating type (0 for integers)."""
    name = np.dtype(dtype).name
    if name == "bfloat16":
        return 2.0**-8
    return float(np.finfo(dtype).eps) / 2 if np.issubdtype(dtype, np.floating) else 0.0


def compare(
    name: str, got: np.ndarray, want: np.ndarray, rtol: float | None, atol: float | None
) -> OutputComparison:
    """`|got - want| <= atol + rtol * |want|` elementwise; NaN matches NaN, inf matches the same
    inf. `rtol=None` takes the output's element type's (`default_rtol`). `atol=None` scales it to
    the output: rtol times its largest finite magnitude, because an element near zero from
    cancellation carries the rounding of the large terms it came from. The relative error
    reported divides by an element's magnitude, but not by less than the rounding error of the
    output's largest (a 0 that came out as one ulp of 151 is not an error of 1e305)."""
    if rtol is None:
        rtol = default_rtol(want.dtype)
    if got.shape != want.shape:
        return OutputComparison(
            name, np.inf, np.inf, False, f"shape {list(got.shape)} != {list(want.shape)}", rtol
        )
    g, w = got.astype(np.float64), want.astype(np.float64)
    same = (g == w) | (np.isnan(g) & np.isnan(w))
    with np.errstate(invalid="ignore"):
        diff = np.where(same, 0.0, np.abs(g - w))
    diff = np.where(np.isnan(diff), np.inf, diff)
    if diff.size == 0:
        return OutputComparison(name, 0.0, 0.0, True, rtol=rtol)
    scale = np.where(np.isfinite(w), np.abs(w), 0.0)
    abs_err = float(diff.max())
    floor = max(unit_roundoff(want.dtype) * float(scale.max()), np.finfo(np.float64).tiny)
    rel_err = float(np.max(diff / np.maximum(scale, floor)))
    with np.errstate(over="ignore"):  # (a huge rtol overflows to inf: everything passes)
        if atol is None:
            atol = rtol * float(scale.max())
        ok = bool(np.all(diff <= atol + rtol * scale))
    return OutputComparison(name, abs_err, rel_err, ok, nan_note(g, w), rtol)


def nan_note(got: np.ndarray, want: np.ndarray) -> str:
    """What NaN in both outputs leaves uncompared: NaN matches NaN, so an output that is all
    NaN before and after compares as error 0 (a NaN input gave it)."""
    both = int(np.count_nonzero(np.isnan(got) & np.isnan(want)))
    if not both:
        return ""
    if both == want.size:
        return "all NaN in both: nothing compared"
    return f"{both} of {want.size} elements NaN in both, not compared"


@batched_collection()
def check_pipeline(
    program: ProgramSource,
    pipeline: str,
    inputs: Mapping[str, np.ndarray] | None = None,
    *,
    entry: str | None = None,
    mesh: Mapping[str, int] | str | None = None,
    seed: int = 0,
    steps: int = 1,
    rtol: float | None = None,
    atol: float | None = None,
    memory_limit: int | None = None,
) -> CheckReport:
    """Run `program` before and after `pipeline` on the same inputs; compare every output
    (`|after - before| <= atol + rtol * |before|`, rtol by default the output's element
    type's, see `compare`; `memory_limit` as `run`'s)."""
    from ccopt.passes.pipeline import apply_pipeline

    check_options(seed, steps, rtol, atol, memory_limit)
    check_pipeline_text(pipeline)
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
        memory_limit=memory_limit,
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
    rtol: float | None = None,
    atol: float | None = None,
    description: str = "",
    memory_limit: int | None = None,
) -> CheckReport:
    """Run two versions of a program on the same inputs and compare every output
    (`memory_limit` as `run`'s, for each version)."""
    from ccopt.ir import clone

    check_options(seed, steps, rtol, atol, memory_limit)
    module, optimized = clone(module), clone(optimized)
    meshes = bind_mesh(module, mesh)
    bind_mesh(optimized, mesh)
    f = entry_function(module, entry, meshes)
    optimized_meshes = module_meshes(optimized)
    changed = f"after pipeline '{description}'" if description else "after the change"
    try:
        g = entry_function(optimized, f.sym_name.data, optimized_meshes)
    except InputError as e:
        raise InputError(f"{changed}: {e}") from None
    check_same_arguments(f, g, changed)
    check_memory(f, meshes, memory_limit)
    check_memory(g, optimized_meshes, memory_limit)
    values = prepare_inputs(f, meshes, inputs, seed)
    try:  # the same arrays, in the element types the second version takes
        optimized_values = prepare_inputs(g, optimized_meshes, values, seed)
    except InputError as e:
        raise InputError(f"{changed}, @{g.sym_name.data} takes other inputs: {e}") from None
    reference = _execute(module, meshes, f, values, steps)
    after = _execute(optimized, optimized_meshes, g, optimized_values, steps)
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
    if rtol is None and atol is None and any(c.rtol and not c.ok for c in comparisons):
        exact = _wide_reference(module, f, values, steps)
        if exact is not None:
            comparisons = [judge_rounding(c, after, reference, exact) for c in comparisons]
    return CheckReport(description, comparisons, reference, after)


WIDE_FLOAT = re.compile(r"(?<=[x<\s(,:])(?:bf16|f16|f32)\b")
"""A float element type of narrower than 64 bits in printed IR (`8x4xf32`, `: f32`,
`tensor<f32, ...>`; not `tf32` or a name like `@w_f32`)."""


def _wide_reference(
    module: ModuleOp, f: func.FuncOp, values: dict[str, np.ndarray], steps: int
) -> RunResult | None:
    """The reference program run in f64 on the same inputs: what its narrow results round,
    to tell the rounding of reordered sums from a wrong rewrite. None where the program does
    not read in f64 (an op that takes only its own float type)."""
    from ccopt.ir import make_context, parse_module, verify_module

    try:
        text = WIDE_FLOAT.sub("f64", str(module))
        wide = parse_module(make_context(), SourceText("<f64 reference>", text))
        verify_module(wide)
        wide_meshes = module_meshes(wide)
        g = entry_function(wide, f.sym_name.data, wide_meshes)
        inputs = {n: v.astype(np.float64) if v.dtype.kind in "fV" else v for n, v in values.items()}
        return _execute(wide, wide_meshes, g, prepare_inputs(g, wide_meshes, inputs, 0), steps)
    except CcoptError:
        return None


def judge_rounding(
    c: OutputComparison, after: RunResult, reference: RunResult, exact: RunResult
) -> OutputComparison:
    """A mismatch of a narrow float output is the narrow type's rounding, not a wrong rewrite,
    where the result after the pipeline is about as close to the f64 reference as the
    reference itself (at most twice as far): a deep stack's reordered sums drift by a few
    units of rounding per layer, past the element type's tolerance. Else it stays a
    mismatch, and says how far each is."""
    if c.ok or c.name not in exact.outputs or c.name not in after.outputs:
        return c
    want = exact.outputs[c.name].astype(np.float64)
    before = reference.outputs[c.name].astype(np.float64)
    got = after.outputs[c.name].astype(np.float64)
    if want.shape != got.shape or want.shape != before.shape:
        return c
    with np.errstate(invalid="ignore"):
        drift = float(np.nanmax(np.abs(before - want), initial=0.0))
        error = float(np.nanmax(np.abs(got - want), initial=0.0))
    if not np.isfinite(error) or error > 2 * drift:
        note = f"f64 reference: {error:.3e} from this result, {drift:.3e} from the reference"
        return replace(c, note=f"{c.note}; {note}" if c.note else note)
    note = (
        f"rounding: {error:.3e} from the f64 reference, where the reference itself is "
        f"{drift:.3e} from it"
    )
    return replace(c, ok=True, note=f"{c.note}; {note}" if c.note else note)


def check_same_arguments(f: func.FuncOp, g: func.FuncOp, changed: str) -> None:
    """Both versions of a function must take the same named arguments (in any order: inputs go
    by name) for one set of inputs to run both; a pass that adds, drops or renames one has
    changed what callers pass."""
    before, now = argument_names(f), argument_names(g)
    if sorted(before) != sorted(now):
        raise InputError(
            f"{changed}, @{g.sym_name.data} takes the arguments ({', '.join(now)}) instead of "
            f"({', '.join(before)}): one set of inputs cannot run both versions"
        )
