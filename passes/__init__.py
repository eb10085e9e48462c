"""ccopt's passes and the xDSL passes it offers, by name, each imported on first use."""

from collections.abc import Callable

from xdsl.passes import ModulePass

XDSL_PASSES = {
    "canonicalize": "Apply every op's canonicalization patterns (xDSL).",
    "cse": "Common subexpression elimination of pure ops (xDSL).",
    "dce": "Remove ops whose results are unused and that have no side effects (xDSL).",
    "licm": "Hoist loop-invariant pure ops out of loops (xDSL).",
}


def _xdsl(name: str) -> Callable[[], type[ModulePass]]:
    def load() -> type[ModulePass]:
        from xdsl.universe import Universe

        return Universe.get_multiverse().all_passes[name]()

    return load


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


def _inline() -> type[ModulePass]:
    from ccopt.passes.inline import Inline

    return Inline


def _convert_to_kernel() -> type[ModulePass]:
    from ccopt.passes.convert_to_kernel import ConvertToKernel

    return ConvertToKernel


def _plan_memory() -> type[ModulePass]:
    from ccopt.passes.plan_memory import PlanMemory

    return PlanMemory


PASSES: dict[str, Callable[[], type[ModulePass]]] = {
    **{name: _xdsl(name) for name in XDSL_PASSES},
    "split-all-reduce": _split_all_reduce,
    "reorder-elementwise": _reorder_elementwise,
    "slice-state": _slice_state,
    "sliced-norm": _sliced_norm,
    "pipeline-p2p": _pipeline_p2p,
    "fuse-elementwise": _fuse_elementwise,
    "fuse-collective": _fuse_collective,
    "overlap": _overlap,
    "inline": _inline,
    "convert-to-kernel": _convert_to_kernel,
    "plan-memory": _plan_memory,
}


def summary(name: str) -> str:
    """One line on what a pass does: its docstring's first line (xDSL's own: ours)."""
    if name in XDSL_PASSES:
        return XDSL_PASSES[name]
    doc = (PASSES[name]().__doc__ or "").strip()
    return doc.splitlines()[0].strip() if doc else ""


def register_pass(pass_class: type[ModulePass]) -> type[ModulePass]:
    """Make a researcher's own pass available to `ccopt -p` and `check_pipeline` under its
    `name`; usable as a class decorator in a plugin (see `load_plugin`)."""
    PASSES[pass_class.name] = lambda: pass_class
    return pass_class


def load_plugin(spec: str) -> None:
    """Import a plugin - a `.py` file or a module name - whose import registers passes (and
    dialects, with `ccopt.dialects.register_dialect`)."""
    import importlib
    import importlib.util
    from pathlib import Path

    from ccopt.diagnostics import CcoptError

    try:
        if spec.endswith(".py"):
            path = Path(spec)
            module_spec = importlib.util.spec_from_file_location(f"ccopt_plugin_{path.stem}", path)
            if module_spec is None or module_spec.loader is None or not path.is_file():
                raise CcoptError(f"cannot load plugin '{spec}': no such file")
            module = importlib.util.module_from_spec(module_spec)
            module_spec.loader.exec_module(module)
        else:
            importlib.import_module(spec)
    except ImportError as e:
        raise CcoptError(f"cannot load plugin '{spec}': {e}") from None
