"""ccopt's passes and the xDSL passes it offers, by name, each imported on first use.

A pass's options are its dataclass fields, declared with `option` so that each carries its
meaning; `ccopt --help` lists them from `ccopt.passes.catalog` (generated from the classes by
`python -m ccopt.passes.make_catalog`) so that asking for help imports no pass module.
"""

import os
from collections.abc import Callable
from typing import Any

from xdsl.passes import ModulePass, PassPipeline

from ccopt.passes.options import OptionInfo, PassInfo, check_options
from ccopt.passes.options import option as option  # re-exported: passes and plugins use it

XDSL_PASSES = {
    "canonicalize": "Apply every op's canonicalization patterns (xDSL).",
    "cse": "Common subexpression elimination of pure ops (xDSL).",
    "dce": "Remove ops whose results are unused and that have no side effects (xDSL).",
    "licm": "Hoist loop-invariant pure ops out of loops (xDSL).",
}


def _xdsl(name: str) -> Callable[[], type[ModulePass]]:
    """xDSL's own pass `name`, from xDSL's table of its passes (xDSL's `Universe` would scan
    every installed distribution's entry points first: 2-9 ms per pipeline)."""

    def load() -> type[ModulePass]:
        from xdsl.transforms import get_all_passes

        return get_all_passes()[name]()

    return load


def _cse() -> type[ModulePass]:
    from ccopt.passes.cse import CommonSubexpressionElimination

    return CommonSubexpressionElimination


def _dce() -> type[ModulePass]:
    from ccopt.passes.dce import DeadCodeElimination

    return DeadCodeElimination


def _auto_shard() -> type[ModulePass]:
    from ccopt.passes.auto_shard import AutoShard

    return AutoShard


def _propagate_placements() -> type[ModulePass]:
    from ccopt.passes.propagate_placements import PropagatePlacements

    return PropagatePlacements


def _split_all_reduce() -> type[ModulePass]:
    from ccopt.passes.split_all_reduce import SplitAllReduce

    return SplitAllReduce


def _reorder_elementwise() -> type[ModulePass]:
    from ccopt.passes.reorder_elementwise import ReorderElementwise

    return ReorderElementwise


def _slice_state() -> type[ModulePass]:
    from ccopt.passes.slice_state import SliceState

    return SliceState


def _sliced_norm() -> type[ModulePass]:
    from ccopt.passes.sliced_norm import SlicedNorm

    return SlicedNorm


def _pipeline_p2p() -> type[ModulePass]:
    from ccopt.passes.pipeline_p2p import PipelineP2P

    return PipelineP2P


def _fuse_elementwise() -> type[ModulePass]:
    from ccopt.passes.fuse_elementwise import FuseElementwise

    return FuseElementwise


def _fuse_collective() -> type[ModulePass]:
    from ccopt.passes.fuse_collective import FuseCollective

    return FuseCollective


def _overlap() -> type[ModulePass]:
    from ccopt.passes.overlap import Overlap

    return Overlap


def _autotune() -> type[ModulePass]:
    from ccopt.passes.autotune import Autotune

    return Autotune


def _inline() -> type[ModulePass]:
    from ccopt.passes.inline import Inline

    return Inline


def _convert_to_kernel() -> type[ModulePass]:
    from ccopt.passes.convert_to_kernel import ConvertToKernel

    return ConvertToKernel


def _lower_collectives() -> type[ModulePass]:
    from ccopt.passes.lower_collectives import LowerCollectives

    return LowerCollectives


def _plan_memory() -> type[ModulePass]:
    from ccopt.passes.plan_memory import PlanMemory

    return PlanMemory


BUILTIN_PASSES: dict[str, Callable[[], type[ModulePass]]] = {
    **{name: _xdsl(name) for name in XDSL_PASSES},
    "cse": _cse,  # xDSL's driver with cheaper keys (ccopt.passes.cse)
    "dce": _dce,  # xDSL's, saying when it removed nothing (ccopt.passes.dce)
    "split-all-reduce": _split_all_reduce,
    "propagate-placements": _propagate_placements,
    "auto-shard": _auto_shard,
    "reorder-elementwise": _reorder_elementwise,
    "slice-state": _slice_state,
    "sliced-norm": _sliced_norm,
    "pipeline-p2p": _pipeline_p2p,
    "fuse-elementwise": _fuse_elementwise,
    "fuse-collective": _fuse_collective,
    "overlap": _overlap,
    "autotune": _autotune,
    "inline": _inline,
    "convert-to-kernel": _convert_to_kernel,
    "plan-memory": _plan_memory,
    "lower-collectives": _lower_collectives,
}

PASSES: dict[str, Callable[[], type[ModulePass]]] = dict(BUILTIN_PASSES)
"""Every pass `ccopt -p` knows: the built-in ones and those plugins registered."""


def describe(pass_class: type[ModulePass]) -> PassInfo:
    """A pass's summary (its docstring's first paragraph, or ours for xDSL's passes) and
    options (its dataclass fields; the meaning from `option`)."""
    import dataclasses
    import typing

    doc = (pass_class.__doc__ or "").strip().split("\n\n")[0]
    summary = XDSL_PASSES.get(pass_class.name) or " ".join(doc.split())
    hints = typing.get_type_hints(pass_class)
    return PassInfo(
        summary,
        tuple(
            OptionInfo(
                f.name, _kind(hints[f.name]), _default(f.default), f.metadata.get("meaning", "")
            )
            for f in dataclasses.fields(pass_class)
        ),
    )


def _kind(hint: Any) -> str:
    """How an option's value is written in a pipeline: `int`, `bool`, `str,...` for a list."""
    import typing

    args = [a for a in typing.get_args(hint) if a is not type(None)]
    if typing.get_origin(hint) is tuple:
        return f"{_kind(args[0])},..."
    if args:  # `T | None`: an optional T
        return _kind(args[0])
    return hint.__name__


def _default(value: object) -> str:
    if value is None or value == ():
        return ""
    return str(value).lower() if isinstance(value, bool) else str(value)


def pass_info(name: str) -> PassInfo:
    """What `--help` says about a pass: from the generated catalog for a built-in pass (no pass
    module is imported), from the class for a plugin's."""
    from ccopt.passes.catalog import CATALOG

    if name in CATALOG and PASSES[name] is BUILTIN_PASSES.get(name):
        return CATALOG[name]
    return describe(PASSES[name]())


def pass_help(width: int) -> str:
    """Every pass with its summary and options, wrapped to `width` columns, as `mlir-opt --help`
    lists them."""
    import textwrap

    entries: list[tuple[str, str]] = []
    for name in sorted(PASSES):
        info = pass_info(name)
        entries.append((f"  {name}", info.summary))
        for o in info.options:
            default = f" Default: {o.default}." if o.default else ""
            spelled = o.name.replace("_", "-")  # (MLIR's spelling; xDSL takes either)
            entries.append((f"    {spelled}=<{o.kind}>", _sentence(o.meaning) + default))
    column = max(len(left) for left, _ in entries) + 2
    lines = []
    for left, text in entries:
        wrapped = textwrap.wrap(text, max(width - column, 30)) or [""]
        lines.append(f"{left:<{column}}{wrapped[0]}".rstrip())
        lines.extend(" " * column + more for more in wrapped[1:])
    return "\n".join(lines)


def _sentence(text: str) -> str:
    """An option's meaning as a sentence, so that its default reads apart from it (a plugin's
    `option(False, "flag")` read "flag Default: false.")."""
    text = text.rstrip()
    return text + "." if text and text[-1] not in ".!?:" else text


def parse_pipeline(spec: str, callback: Callable[..., None] | None = None) -> PassPipeline:
    """The passes of a pipeline (`name{option=value},other`), as `ccopt -p` and the runner read
    it; a malformed pipeline, an unknown pass or option, or a bad option value is a CcoptError
    that says why. xDSL's parser ignores a trailing comma: here it is an error."""
    from xdsl.utils.exceptions import ArgSpecParseError

    from ccopt.diagnostics import CcoptError, first_line

    if not isinstance(spec, str):
        raise CcoptError(
            "a pass pipeline is a string like 'split-all-reduce,overlap{chunks=2}', got "
            f"{type(spec).__name__}"
        )
    if spec.rstrip().endswith(","):
        raise CcoptError(f"invalid pass pipeline '{spec}': a pass name must follow the last ','")
    try:
        readable = readable_spec(spec)
        _refuse_repeated_options(readable)
        return _pipeline(readable, callback)
    except ArgSpecParseError as e:
        raise CcoptError(
            f"invalid pass pipeline '{spec}': {first_line(e)}{_spec_hint(spec, str(e))}"
        ) from None
    except ValueError as e:
        raise CcoptError(f"invalid pass pipeline '{spec}': {first_line(e)}") from None
    except Exception as e:  # a plugin pass's constructor (`__post_init__`) raising: its error
        from_plugin = plugin_error(e)
        if from_plugin is None:
            raise
        raise from_plugin from None


def readable_spec(spec: str) -> str:
    """A pass's or target's `name{options}` as xDSL's option lexer reads it: names with dots
    (tags, `machine=m8.yml`) quoted, numbers with exponents written out."""
    return _quoted_dotted_names(_decimal_exponents(spec))


def spec_hint(spec: str, message: str) -> str:
    """What xDSL's option parser means where its words do not say (`_spec_hint`)."""
    return _spec_hint(spec, message)


def _spec_hint(spec: str, message: str) -> str:
    """What xDSL's pipeline parser means where its words do not say: an option with nothing
    after `=` (`chunks=`), a value its tokens cannot read (a path, a dashed word)."""
    import re

    empty = re.search(r"([\w-]+)=\s*(?=[\s},])", spec)
    if empty is not None and "Unknown argument value" in message:
        return (
            f"\n(option '{empty.group(1)}' has no value: give one, or leave the option out for "
            "its default)"
        )
    if "Unknown token" in message:
        return (
            '\n(quote an option value that is neither a number nor a plain name: machine="dir/'
            'my-machine.yml")'
        )
    return ""


def _pipeline(spec: str, callback: Callable[..., None] | None) -> PassPipeline:
    """`PassPipeline.parse_spec`, with each pass's options checked first (`check_options`)."""
    from xdsl.utils.arg_spec import ArgSpec
    from xdsl.utils.arg_spec import parse_pipeline as parse_specs

    specs = tuple(parse_specs(spec))
    unknown = [p.name for p in specs if p.name not in PASSES]
    if unknown:
        import difflib

        close = difflib.get_close_matches(unknown[0], PASSES, n=1)
        hint = f"; did you mean '{close[0]}'?" if close else ""
        raise ValueError(
            f"Unrecognized passes: {unknown}{hint} (ccopt --help lists them; a plugin's passes "
            "need --load-plugin)"
        )
    passes = []
    for p in specs:
        cls = PASSES[p.name]()
        parameters = check_options(p.name, cls, p.parameters)
        passes.append(cls.from_pass_spec(ArgSpec(p.name, parameters)))
    return PassPipeline(tuple(passes), callback)


def _refuse_repeated_options(spec: str) -> None:
    """`overlap{chunks=2 chunks=3}`: xDSL's parser keeps the last value of an option given twice
    (`max-ops` and `max_ops` are one option), so the first was dropped without a word; MLIR's
    parser refuses it, and so does this one (ValueError)."""
    if "{" not in spec:
        return
    from xdsl.utils.arg_spec import PipelineLexer, SpecTokenKind

    lexer = PipelineLexer(spec)
    pass_name, seen, expect_name, depth = "", set(), False, 0
    while (token := lexer.lex()).kind is not SpecTokenKind.EOF:
        kind, text = token.kind, token.span.text
        if kind is SpecTokenKind.L_BRACE:
            depth, seen, expect_name = depth + 1, set(), True
        elif kind is SpecTokenKind.R_BRACE:
            depth, expect_name = depth - 1, False
        elif depth == 0 and kind is SpecTokenKind.IDENT:
            pass_name = text
        elif kind is SpecTokenKind.SPACE:
            expect_name = depth > 0
        elif kind is SpecTokenKind.IDENT and expect_name:
            option = text.replace("-", "_")
            if option in seen:
                raise ValueError(f"{pass_name} is given its option '{text}' twice")
            seen.add(option)
            expect_name = False
        else:
            expect_name = False


def _quoted_dotted_names(spec: str) -> str:
    """`tags=g.ag` as `tags="g.ag"`: the tags passes derive (`g.rs`, `g.ag.ag`) are not one of
    xDSL's option tokens, so naming them needed quotes. Only a whole unquoted option value (or
    an item of a list) that is a name with dots is quoted."""
    if "." not in spec:
        return spec
    import re

    return re.sub(r"(?<=[=,])([A-Za-z_]\w*(?:\.\w+)+)(?=[\s,}])", r'"\1"', spec)


def _decimal_exponents(spec: str) -> str:
    """`memory=1e-4` as `memory=0.0001`: xDSL's option lexer reads a number with an exponent as
    a word, which no float option takes, where mlir-opt reads it as the number. Only a whole
    unquoted option value is rewritten (`name=1e-4`, or an item of a list `name=1e3,2e3`)."""
    if "e" not in spec and "E" not in spec:
        return spec
    import re
    from decimal import Decimal

    def decimal(m: re.Match[str]) -> str:
        text = format(Decimal(m.group(1)), "f")
        return text if "." in text else text + ".0"

    return re.sub(r"(?<=[=,])([-+]?\d+(?:\.\d*)?[eE][-+]?\d+)(?=[\s,}])", decimal, spec)


def register_pass(pass_class: type[ModulePass]) -> type[ModulePass]:
    """Make a researcher's own pass available to `ccopt -p` and `check_pipeline` under its
    `name`; usable as a class decorator in a plugin (see `load_plugin`). A class without a
    name, a built-in pass's name and a name another class has are refused (the last
    registration had silently won, `cse` included); the same class again (a plugin loaded
    twice) is fine."""
    from ccopt.diagnostics import CcoptError

    if not isinstance(pass_class, type):
        raise CcoptError(
            f"register_pass takes the pass class (register_pass(MyPass), or @register_pass on "
            f"it), not {type(pass_class).__name__!r} object"
        )
    _refuse_unwritable_options(pass_class)
    name = getattr(pass_class, "name", None)
    if not isinstance(name, str) or not name:
        raise CcoptError(
            f"register_pass: {getattr(pass_class, '__qualname__', pass_class)!r} has no `name` "
            "(a class attribute: the kebab-case name `ccopt -p` calls it by)"
        )
    if name in BUILTIN_PASSES:
        raise CcoptError(f"register_pass: '{name}' is a built-in pass; choose another name")
    known = PASSES.get(name)
    if known is not None and _identity(known()) != _identity(pass_class):
        raise CcoptError(
            f"register_pass: '{name}' is already {_identity(known())[1]} "
            f"(from {_identity(known())[0]}); choose another name"
        )
    PASSES[name] = lambda: pass_class
    return pass_class


def _refuse_unwritable_options(pass_class: type) -> None:
    """An option a pipeline cannot write (a list, a dict, a set: `ccopt -p` writes numbers,
    booleans, names and tuples of them) is refused when the pass is registered, not when a
    user first gives it a value."""
    import dataclasses
    import typing

    from ccopt.diagnostics import CcoptError

    if not dataclasses.is_dataclass(pass_class):
        return
    try:
        hints = typing.get_type_hints(pass_class)
    except Exception:  # (a hint that does not resolve here: the pipeline's check names it)
        return
    for field in dataclasses.fields(pass_class):
        hint = hints.get(field.name)
        kinds = {hint, typing.get_origin(hint), *map(typing.get_origin, typing.get_args(hint))}
        if kinds & {list, dict, set, frozenset}:
            kind = typing.get_origin(hint) or hint
            raise CcoptError(
                f"register_pass: {pass_class.__qualname__}.{field.name} is a "
                f"{getattr(kind, '__name__', kind)}: an option is an int, a float, a bool, a str "
                "or a tuple of them (tuple[int, ...]), which `ccopt -p` can write"
            )


def _identity(cls: type) -> tuple[str, str]:
    return cls.__module__, cls.__qualname__


def load_plugin(spec: str | os.PathLike[str]) -> None:
    """Import a plugin - a `.py` file or a module name - whose import registers passes (and
    dialects, with `ccopt.dialects.register_dialect`). A file is imported as the module
    `ccopt_plugin_<stem>`, in `sys.modules` while it runs (dataclasses, pickling and
    `from __future__ import annotations` look it up there)."""
    import importlib
    import importlib.util
    import sys
    from pathlib import Path

    from ccopt.diagnostics import CcoptError, LocatedError

    spec = os.fspath(spec)
    path = Path(spec)
    try:
        if spec.endswith(".py"):
            name = f"ccopt_plugin_{path.stem}"
            module_spec = importlib.util.spec_from_file_location(name, path)
            if module_spec is None or module_spec.loader is None or not path.is_file():
                raise CcoptError(f"cannot load plugin '{spec}': no such file")
            module = importlib.util.module_from_spec(module_spec)
            sys.modules[name] = module
            PLUGIN_FILES.add(os.path.abspath(path))
            try:
                module_spec.loader.exec_module(module)
            except BaseException:
                sys.modules.pop(name, None)
                raise
        else:
            imported = importlib.import_module(spec)
            if getattr(imported, "__file__", None):
                PLUGIN_FILES.add(os.path.abspath(imported.__file__))  # type: ignore[arg-type]
    except CcoptError:
        raise
    except ImportError as e:
        raise CcoptError(f"cannot load plugin '{spec}': {e}") from None
    except SyntaxError as e:
        raise LocatedError(
            f"cannot load plugin '{spec}': {e.msg}",
            e.filename or spec,
            e.lineno or 1,
            e.offset or 1,
        ) from None
    except Exception as e:  # noqa: BLE001 - the plugin is the user's code: whatever its import
        # raises is their error to read, as a message that says where, not ccopt's traceback
        raise CcoptError(f"cannot load plugin '{spec}': {where(e, path)}") from None


PLUGIN_FILES: set[str] = set()
"""The files of the plugins loaded: an exception raised in one is the plugin's error."""


def plugin_error(error: BaseException) -> Exception | None:
    """A CcoptError for an exception a plugin's code raised while a pipeline ran (its pass, or
    its interpreter functions): the plugin's line and message, as `load_plugin` reports what
    its import raises, where Python's traceback through ccopt would hide it; None for an
    exception of ccopt's own (a defect to see whole)."""
    import traceback

    from ccopt.diagnostics import CcoptError

    if not PLUGIN_FILES or isinstance(error, CcoptError):
        return None
    frames = traceback.extract_tb(error.__traceback__)
    mine = [f for f in frames if os.path.abspath(f.filename) in PLUGIN_FILES]
    if not mine:
        return None
    return CcoptError(f"plugin code failed: {where(error, mine[-1].filename)}")


def where(error: BaseException, path: os.PathLike[str] | str | None = None) -> str:
    """`RuntimeError: boom (plugin.py:3)`: the exception and the line that raised it - the
    last one in `path` (the plugin) where it has one, not a library's below it."""
    import traceback

    frames = traceback.extract_tb(error.__traceback__)
    if path is not None:
        mine = [f for f in frames if os.path.abspath(f.filename) == os.path.abspath(path)]
        frames = mine or frames
    place = f" ({frames[-1].filename}:{frames[-1].lineno})" if frames else ""
    return f"{type(error).__name__}: {error}{place}"
