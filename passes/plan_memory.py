"""`plan-memory`: place every workspace buffer of a kernel-level function at a byte offset,
reusing the bytes of buffers that are dead - on every stream that touched them.

Without a plan each `kernel.alloc` has bytes of its own, so a program needs the sum of all its
intermediates. With one, a buffer takes the lowest bytes (first fit) not held by a buffer that
may still be in use when it is first written: one whose ops are not all ordered before that
writer by stream order and event waits (`ccopt.streams`). Overlapped chunks on two streams keep
their buffers apart until an event orders them; a chain of kernels ping-pongs between two.
The function records the workspace it needs (`kernel.workspace`, bytes); the verifier checks
every plan it reads, so a hand-written one that overlaps live buffers is rejected.

```mlir
%a = kernel.alloc offset 0 : !kernel.buffer<1024xf32, @dp[R]>
kernel.elementwise ins(%x) outs(%a) stream 0 : ... // a = f(x)
%b = kernel.alloc offset 4096 : !kernel.buffer<1024xf32, @dp[R]>
kernel.elementwise ins(%a) outs(%b) stream 0 : ... // b = g(a): a is read, so b takes new bytes
%c = kernel.alloc offset 0 : !kernel.buffer<1024xf32, @dp[R]>
kernel.elementwise ins(%b) outs(%c) stream 0 : ... // c = h(b): a is dead, c reuses its bytes
```
Options: `reuse=false` gives every buffer its own bytes (the unplanned footprint, planned).
"""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects import func
from xdsl.dialects.builtin import ModuleOp
from xdsl.ir import Attribute
from xdsl.passes import ModulePass

from ccopt.diagnostics import CcoptError
from ccopt.dialects.attrs import i64_attr
from ccopt.passes.options import option
from ccopt.streams import lives_in_order
from ccopt.verifier import Key, module_meshes, remember_memory_plan

WORKSPACE = "kernel.workspace"


def first_fit(busy: list[tuple[int, int]], size: int) -> int:
    """The lowest offset where `size` bytes avoid every busy [start, stop)."""
    offset = 0
    for start, stop in sorted(busy):
        if offset + size <= start:
            break
        offset = max(offset, stop)
    return offset


def plan_function(
    f: func.FuncOp,
    reuse: bool,
    meshes: Key | None = None,
    sizes: dict[Attribute, int] | None = None,
    offsets: dict[int, Attribute] | None = None,
) -> int:
    """Set every alloc's offset; returns the workspace bytes the function needs. `sizes`: the
    bytes of buffer types already sized in functions of the same module (its meshes);
    `offsets`: offset attributes already made."""
    found = lives_in_order(f)
    if found is None:
        return 0
    lives, live = found
    top = 0
    if sizes is None:
        sizes = {}
    if offsets is None:
        offsets = {}  # (`i64_attr` keys its cache by the value and its type)
    for life in lives:
        size = life.bytes(sizes)
        if life.first is None:
            offset = 0  # never touched: any bytes will do
        elif reuse:
            offset = first_fit([(a, b) for _, a, b in live.in_use_at(life)], size)
            live.add(life, offset, offset + size)
        else:
            offset = top
        attr = offsets.get(offset)
        if attr is None:
            attr = offsets[offset] = i64_attr(offset)
        life.alloc.properties["offset"] = attr
        top = max(top, offset + size)
    f.attributes[WORKSPACE] = i64_attr(top)
    del found, lives, live  # (clocks and lives of every op: freed before the plan's record)
    remember_memory_plan(f, f.attributes[WORKSPACE], meshes)
    return top


@dataclass(frozen=True)
class PlanMemory(ModulePass):
    """Place workspace buffers at byte offsets, sharing bytes between buffers whose lives do not
    overlap on any stream."""

    name = "plan-memory"
    releases_erased_ir = True  # frees what it erases (common.release): no old cyclic garbage

    reuse: bool = option(True, "Share the bytes of dead buffers; false gives each buffer its own.")

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        kernels = [
            f for f in op.ops if isinstance(f, func.FuncOp) and "kernel.results" in f.attributes
        ]
        if not kernels:
            raise CcoptError("plan-memory: no kernel-level function; run convert-to-kernel first")
        meshes = tuple(module_meshes(op))  # (what every function's plan record reads)
        sizes: dict[Attribute, int] = {}  # (functions alike size the same types: once)
        offsets: dict[int, Attribute] = {}
        for f in kernels:
            plan_function(f, self.reuse, meshes, sizes, offsets)
