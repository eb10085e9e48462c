"""ccopt's passes and the xDSL passes it offers, by name, each imported on first use."""

from collections.abc import Callable

from xdsl.passes import ModulePass


def _xdsl(name: str) -> Callable[[], type[ModulePass]]:
    def load() -> type[ModulePass]:
        from xdsl.universe import Universe

        return Universe.get_multiverse().all_passes[name]()

    return load


XDSL_PASSES = ("canonicalize", "cse", "dce", "licm")

PASSES: dict[str, Callable[[], type[ModulePass]]] = {name: _xdsl(name) for name in XDSL_PASSES}
