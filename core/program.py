"""Programs as ccopt's runner and backends take them: loaded from a path, IR text, a source, a
module or a front-end program; their meshes (resized on request), entry function and arguments.

Both the interpreter's runner and the CUDA backend start from here. It sits at the level of the
dialects, below both, so that neither has to import the other.
"""

from __future__ import annotations

import numbers
import os
from collections.abc import Mapping
from typing import TYPE_CHECKING, Protocol, runtime_checkable

from xdsl.dialects import func
from xdsl.dialects.builtin import DenseArrayBase, ModuleOp, i64

from ccopt.collection import batched_collection
from ccopt.diagnostics import CcoptError, OpError, SourceText
from ccopt.files import is_stdin, read_text
from ccopt.mesh import MAX_RANKS, Mesh

if TYPE_CHECKING:
    import numpy as np
    from xdsl.context import Context
    from xdsl.ir import BlockArgument

    from ccopt.dialects.dtensor_type import DTensorType


class InputError(CcoptError):
    """An input that does not fit the program (missing, misnamed, wrong shape or dtype, a mesh
    or an entry function the program does not have)."""


@runtime_checkable
class HasModule(Protocol):
    """A program built elsewhere, such as the front end's `ccopt.frontend.Program`: it shows its
    IR as a module (matched by shape, so that this level never imports the front end)."""

    @property
    def module(self) -> ModuleOp: ...


ProgramSource = str | os.PathLike[str] | SourceText | ModuleOp | HasModule


def is_ir_text(program: str) -> bool:
    """Whether a string is IR rather than a path. No path holds a newline; a one-line string is a
    path when it names an existing file (or directory), ends in `.mlir`, or cannot be IR: a
    single word without the spaces, braces, sigils and punctuation of any op (`exmples/sgd.ir`).
    A file that is missing is reported as missing, not parsed as IR."""
    if "\n" in program:
        return True
    if program.endswith(".mlir") or os.path.lexists(program):
        return False
    return not program or any(c.isspace() or c in IR_PUNCTUATION for c in program)


IR_PUNCTUATION = frozenset('{}()[]<>%@!^#"=:,')
"""Characters that every one-line program has (an op's operands, attributes or regions) and
that paths rarely do."""


def program_source(program: str | os.PathLike[str] | SourceText) -> SourceText:
    """The text of a program given as a path (a path object always is one), as IR text (see
    `is_ir_text`), as `-` for standard input, or as a source already read."""
    if isinstance(program, SourceText):
        return program
    if is_stdin(program):
        return SourceText("<stdin>", read_text(None))
    if isinstance(program, str) and is_ir_text(program):
        return SourceText("<string>", program)
    return SourceText(os.fspath(program), read_text(program))


@batched_collection()
def load_program(program: ProgramSource, ctx: Context | None = None) -> ModuleOp:
    """A verified module from a path, IR text, a source, a module or a front-end program (a
    module is cloned, never changed)."""
    from ccopt.ir import clone, make_context, parse_module, verify_module

    if isinstance(program, ModuleOp):
        module = clone(program)
    elif isinstance(program, str | os.PathLike | SourceText):
        module = parse_module(ctx or make_context(), program_source(program))
    elif hasattr(type(program), "module"):  # (`isinstance(HasModule)` reads the property,
        module = clone(program.module)  # and turned an error building it into "no module")
    else:
        raise TypeError(
            f"cannot load a program from a {type(program).__name__}: give a path, IR text, "
            "a SourceText, a ModuleOp or an object with a `module`"
        )
    verify_module(module)
    return module


def module_meshes(module: ModuleOp) -> dict[str, Mesh]:
    from ccopt.dialects.dtensor import MeshOp

    return {op.sym_name.data: op.mesh for op in module.walk() if isinstance(op, MeshOp)}


def parse_mesh_spec(spec: str) -> dict[str, int]:
    """`dp=2,tp=4` -> {"dp": 2, "tp": 4}."""
    sizes: dict[str, int] = {}
    if not spec.strip():
        raise InputError(f"bad mesh '{spec}': expected axis=size pairs like dp=2,tp=4, got none")
    for part in (p.strip() for p in spec.split(",")):
        if not part:
            raise InputError(f"bad mesh '{spec}': an empty axis between commas")
        name, eq, value = part.partition("=")
        if not eq or not name.strip() or not value.strip().isdecimal():
            raise InputError(f"bad mesh '{spec}': expected axis=size pairs like dp=2,tp=4")
        if name.strip() in sizes:
            raise InputError(f"bad mesh '{spec}': axis '{name.strip()}' is named twice")
        sizes[name.strip()] = int(value)
    return sizes


def bind_mesh(module: ModuleOp, sizes: Mapping[str, int] | str | None) -> dict[str, Mesh]:
    """Resize the program's mesh axes (the program's shapes are global, so it runs on any mesh
    its verifier accepts); returns the meshes by name."""
    from ccopt.dialects.dtensor import MeshOp
    from ccopt.ir import verify_module

    if isinstance(sizes, str):
        sizes = parse_mesh_spec(sizes)
    elif sizes is not None and not isinstance(sizes, Mapping):
        raise InputError(
            f"mesh must be 'dp=2,tp=4' or a dict of axis sizes, got {type(sizes).__name__}"
        )
    if sizes:
        meshes = [op for op in module.walk() if isinstance(op, MeshOp)]
        known = {a.data for m in meshes for a in m.axis_names.data}
        for axis, size in sizes.items():
            if axis not in known:
                described = "; ".join(str(m.mesh) for m in meshes) or "no mesh"
                raise InputError(
                    f"mesh axis '{axis}' is not in the program (it declares {described})"
                )
            check_axis_size(axis, size)
        for m in meshes:
            names = [a.data for a in m.axis_names.data]
            new = [sizes.get(n, s) for n, s in zip(names, m.axis_sizes.get_values(), strict=True)]
            m.axis_sizes = DenseArrayBase.from_list(i64, [int(n) for n in new])
        try:
            verify_module(module)
        except OpError as e:
            raise InputError(f"the program does not fit mesh {dict(sizes)}: {e.render()}") from None
    return module_meshes(module)


def is_number(value: object, kind: type = numbers.Integral) -> bool:
    """A Python or numpy number of `kind` (`numbers.Integral`, `numbers.Real`), not a bool:
    `True` is no step count, rank count or CTA cap."""
    import numpy as np

    return isinstance(value, kind) and not isinstance(value, bool | np.bool_)


def check_axis_size(axis: str, size: object) -> None:
    """A mesh axis is a whole number of ranks (not a bool, a float or a string), at least 1 and
    at most what a mesh may hold in all (`ccopt.mesh.MAX_RANKS`; the IR stores sizes as i64)."""
    if not is_number(size):
        raise InputError(f"mesh axis '{axis}' needs an integer size, got {size!r}")
    if size < 1:
        raise InputError(f"mesh axis '{axis}' needs a size >= 1, got {size}")
    if size > MAX_RANKS:
        raise InputError(
            f"mesh axis '{axis}' has size {size}; ccopt handles at most {MAX_RANKS} (2^20) ranks"
        )


def check_pipeline_text(pipeline: object) -> None:
    """A pass pipeline is given as `ccopt -p` text; anything else is named here, before a pass
    runs, rather than failing inside the pipeline parser."""
    if not isinstance(pipeline, str):
        raise InputError(
            f"pipeline must be a string like 'split-all-reduce,overlap{{chunks=2}}', "
            f"got {type(pipeline).__name__}"
        )


def find_entry(module: ModuleOp, entry: str | None) -> func.FuncOp:
    """The function to run: `entry` (with or without the `@` of its symbol), else the only
    public function with a body, else the only function with a body."""
    if isinstance(entry, str):
        entry = entry.removeprefix("@")
    funcs = [op for op in module.ops if isinstance(op, func.FuncOp) and op.body.blocks]
    if not funcs:
        raise InputError("the program defines no function to run")
    if entry is not None:
        for f in funcs:
            if f.sym_name.data == entry:
                return f
        listed = ", ".join("@" + f.sym_name.data for f in funcs)
        declared = any(
            isinstance(op, func.FuncOp) and op.sym_name.data == entry for op in module.ops
        )
        if declared:
            raise InputError(f"@{entry} is a declaration without a body (functions: {listed})")
        raise InputError(f"no function @{entry} (functions: {listed})")
    public = [f for f in funcs if f.sym_visibility is None or f.sym_visibility.data != "private"]
    if len(public) == 1:
        return public[0]  # private functions are helpers, not entry points
    if len(funcs) != 1:
        names = ", ".join("@" + f.sym_name.data for f in funcs)
        raise InputError(
            f"choose the entry function with --entry (entry= in Python) (functions: {names})"
        )
    return funcs[0]


def input_arguments(f: func.FuncOp) -> list[BlockArgument]:
    """The arguments a caller provides: all of them, except the output buffers that a
    kernel-level function takes last (`kernel.results`)."""
    args = list(f.body.blocks[0].args)
    results = f.attributes.get("kernel.results")
    return args[: len(args) - results.value.data] if results is not None else args  # type: ignore[union-attr]


def argument_names(f: func.FuncOp) -> list[str]:
    return [a.name_hint or f"arg{a.index}" for a in input_arguments(f)]


def argument_tensor(arg: BlockArgument) -> DTensorType | None:
    """The distributed tensor type of an L1 argument or of an L3 buffer argument."""
    from ccopt.dialects.dtensor_type import DTensorType
    from ccopt.dialects.kernel import BufferType

    t = arg.type
    if isinstance(t, BufferType):
        return t.tensor
    return t if isinstance(t, DTensorType) else None


def cast_input(name: str, value: np.ndarray, dtype: np.dtype, t: DTensorType) -> np.ndarray:
    """`value` in the argument's element type. A value the type cannot hold is refused: numpy
    would wrap an integer around (2**40 as i32 is 0) and turn a finite float into inf (1e300 as
    f32), and the run would go on with numbers nobody gave it."""
    import numpy as np

    if value.dtype.kind in "iu" and dtype.kind in "iu" and value.size:
        info = np.iinfo(dtype)
        for extreme in (int(value.min()), int(value.max())):
            if not info.min <= extreme <= info.max:
                raise InputError(
                    f"input '{name}' holds {extreme}, outside the range of {dtype} "
                    f"[{info.min}, {info.max}] ({t})"
                )
    with np.errstate(over="ignore", invalid="ignore"):
        cast = value.astype(dtype)
    if value.dtype.kind == "f" and value.size:
        overflowed = np.isfinite(value) & ~np.isfinite(cast)
        if overflowed.any():
            index = tuple(int(i) for i in np.argwhere(overflowed)[0])
            raise InputError(
                f"input '{name}' holds {value[index].item()!r} at {list(index)}, beyond the largest "
                f"finite {dtype} ({t})"
            )
    return cast
