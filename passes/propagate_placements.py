"""`propagate-placements`: choose every open placement (`?`) and insert the conversions.

A program may leave placements open (`!dtensor.tensor<8x16xf32, @m[S(0), ?]>`). This pass
completes it from the annotated values through every op's placement signatures:

* backward, it reads what each collective and each `func.return` needs of its operand (an
  all-reduce over `tp` needs `P(sum)` there; a return needs the function's result placement)
  and keeps that as the target of the value's producer;
* forward, at each op it picks per mesh axis the operand placements of a legal signature that
  cost the fewest bytes to reach - conversions of the operands from their placements, plus the
  conversion of the result to its annotated (or required) placement - by the byte model of
  `autoparallel.md` (all-gather and reduce-scatter (p-1)/p of the per-group bytes, all-reduce
  twice that, all-to-all (p-1)/p^2, a local slice nothing); an open argument takes what its
  first user prefers, free;
* it inserts those conversions (on several axes: gathers and reductions innermost axis first,
  then slices outermost first) and gives every result its inferred type.

There is no search beyond the op at hand (that is `auto-shard`'s job). No `?` is left behind; a
placement no collective can reach (R or S to P(sum), anything to V) is a located error naming the
value's placement and the annotation that asks for it:

```mlir
%y = dtensor.matmul %x, %w : (!dtensor.tensor<8x16xf32, @m[S(0), ?]>, !dtensor.tensor<16x4xf32, @m[?, ?]>) -> !dtensor.tensor<8x4xf32, @m[S(0), ?]>
%r = coll.all_reduce sum %y over [tp] : ... @m[S(0), ?]> -> ... @m[S(0), R]>
// becomes x: [S(0), S(1)], w: [R, S(0)], y: [S(0), P(sum)] (the all-reduce needs a partial)
```
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from itertools import product

from xdsl.context import Context
from xdsl.dialects import func
from xdsl.dialects.builtin import FunctionType, ModuleOp
from xdsl.ir import Attribute, Operation, SSAValue
from xdsl.passes import ModulePass
from xdsl.rewriter import InsertPoint, Rewriter
from xdsl.utils.exceptions import VerifyException

from ccopt.diagnostics import OpError
from ccopt.dialects import coll
from ccopt.dialects.dtensor import DTensorOp, lookup_mesh, mesh_of
from ccopt.dialects.dtensor_type import (
    DTensorType,
    OpenAttr,
    PartialAttr,
    Placement,
    R,
    ReplicatedAttr,
    SplitAttr,
    VaryingAttr,
)
from ccopt.dialects.inference import InferenceError
from ccopt.dialects.open_placements import candidates
from ccopt.mesh import Mesh
from ccopt.passes.common import derive

Placements = tuple[Placement, ...]


# --- the byte model -------------------------------------------------------------------------


def element_bytes(t: DTensorType) -> int:
    width = getattr(t.element_type, "bitwidth", 32)
    return max(1, width // 8)


def generates(op: Operation) -> bool:
    """An op that reads no distributed value (`dtensor.fill`): each rank can make its block of
    the result in any layout but a partial sum, so an open result takes its first user's."""
    return isinstance(op, DTensorOp) and not any(
        isinstance(v.type, DTensorType) for v in op.operands
    )


def axis_bytes(
    t: DTensorType, placements: Placements, axis: int, target: Placement, mesh: Mesh
) -> float:
    """Per-device bytes of converting axis `axis` of `t` (placed `placements`) to `target`; inf
    when no collective does it. Groups along other split axes move 1/n of the tensor each."""
    current = placements[axis]
    if current == target or isinstance(current, OpenAttr):
        return 0.0
    p = mesh.axis_sizes[axis]
    shards = math.prod(
        mesh.axis_sizes[a]
        for a, q in enumerate(placements)
        if a != axis and isinstance(q, SplitAttr)
    )
    total = math.prod(t.get_shape()) * element_bytes(t) / shards
    ring = (p - 1) / p * total
    if isinstance(target, PartialAttr | VaryingAttr | OpenAttr) or isinstance(current, VaryingAttr):
        return math.inf
    if isinstance(current, ReplicatedAttr):
        return 0.0  # a local slice
    if isinstance(current, PartialAttr):
        return 2 * ring if isinstance(target, ReplicatedAttr) else ring
    if isinstance(target, ReplicatedAttr):
        return ring  # all-gather
    return ring / p  # all-to-all


def conversion_bytes(t: DTensorType, start: Placements, goal: Placements, mesh: Mesh) -> float:
    return sum(nbytes for _, nbytes in conversion_collectives(t, start, goal, mesh))


def conversion_collectives(
    t: DTensorType, start: Placements, goal: Placements, mesh: Mesh
) -> list[tuple[int, float]]:
    """The collectives `convert` writes for `start` -> `goal`, in its order: (mesh axis,
    per-device bytes). Each moves the tensor as the steps before it left it: gathering `tp`
    first and then `dp` moves the dp groups' whole blocks, not the blocks still split over `tp`
    (pricing each axis from `start` made a two-axis gather look 1/tp of its cost)."""
    current, out = list(start), []
    for axis in conversion_order(start, goal):
        out.append((axis, axis_bytes(t, tuple(current), axis, goal[axis], mesh)))
        current[axis] = goal[axis]
    return out


def conversion_steps(start: Placements, goal: Placements) -> list[Placements]:
    """The placements `convert` passes through from `start` to `goal`, one per collective
    (innermost axis widened first, then slices outermost first), `goal` last."""
    current, out = list(start), []
    for axis in conversion_order(start, goal):
        current[axis] = goal[axis]
        out.append(tuple(current))
    return out


# --- conversions ----------------------------------------------------------------------------


class PlacementConflict(Exception):
    """A conversion no collective performs."""


def conversion_order(start: Placements, goal: Placements) -> list[int]:
    """The mesh axes `convert` changes, in its order: gathers, reductions and re-splits from
    the innermost axis out, then local slices from the outermost axis in."""
    changed = [a for a in range(len(goal)) if start[a] != goal[a]]
    widen = [a for a in reversed(changed) if not isinstance(start[a], ReplicatedAttr)]
    narrow = [a for a in changed if isinstance(start[a], ReplicatedAttr)]
    return widen + narrow


def convert(
    value: SSAValue,
    goal: Placements,
    mesh: Mesh,
    rewriter: Rewriter,
    where: InsertPoint,
    origin: Operation,
) -> SSAValue:
    """`value` converted to `goal` by one collective per changed axis: gathers, reductions and
    re-splits from the innermost axis out, then local slices from the outermost axis in (so
    nested splits of one dimension stay in mesh order)."""
    t = value.type
    assert isinstance(t, DTensorType)
    for axis in conversion_order(t.placement_list, goal):
        op = _collective(value, axis, goal[axis], mesh)
        derive(op, origin, "conv")
        rewriter.insert_op(op, where)
        where = InsertPoint.after(op)
        value = op.results[0]
    return value


def _collective(value: SSAValue, axis: int, target: Placement, mesh: Mesh) -> Operation:
    t = value.type
    assert isinstance(t, DTensorType)
    current = t.placement_list[axis]
    names = [mesh.axis_names[axis]]
    try:
        if isinstance(current, PartialAttr) and isinstance(target, ReplicatedAttr):
            return coll.AllReduceOp(value, mesh, names, current.partial_kind)
        if isinstance(current, PartialAttr) and isinstance(target, SplitAttr):
            return coll.ReduceScatterOp(value, mesh, names, target.split_dim, current.partial_kind)
        if isinstance(current, SplitAttr) and isinstance(target, ReplicatedAttr):
            return coll.AllGatherOp(value, mesh, names)
        if isinstance(current, SplitAttr) and isinstance(target, SplitAttr):
            return coll.AllToAllOp(value, mesh, names, target.split_dim)
        if isinstance(current, ReplicatedAttr) and isinstance(target, SplitAttr):
            return coll.SliceOp(value, mesh, names, target.split_dim)
    except VerifyException as e:
        raise PlacementConflict(
            f"converting {current.short} to {target.short} on mesh axis '{names[0]}': {e}"
        ) from None
    raise PlacementConflict(
        f"no collective converts {current.short} to {target.short} on mesh axis '{names[0]}'"
    )


# --- the pass -------------------------------------------------------------------------------


def _open(t: Attribute) -> bool:
    return isinstance(t, DTensorType) and t.is_open


def _closed(t: DTensorType) -> DTensorType:
    return t.with_placements(R if isinstance(p, OpenAttr) else p for p in t.placement_list)


@dataclass
class FunctionPlacer:
    """One function's placements being completed (auto-shard reuses its conversions)."""

    f: func.FuncOp
    rewriter: Rewriter
    targets: dict[SSAValue, Placements]
    wanted_by: dict[SSAValue, str]
    """Who needs a value's target placement (for errors): an op name or the function result."""
    callees: Mapping[str, func.FuncOp] = field(default_factory=dict)
    """Functions by name, placed before their callers: a call reads and gives what its callee's
    signature says."""

    def run(self) -> None:
        self.collect_targets()
        for op in list(self.f.body.walk()):
            if isinstance(op, func.CallOp):
                self.place_call(op)
                continue
            if not self.touched(op):
                continue
            if isinstance(op, DTensorOp):
                self.place_op(op)
            elif isinstance(op, coll.CollectiveOp):
                self.place_collective(op)
            elif isinstance(op, func.ReturnOp):
                self.place_return(op)
            elif any(_open(v.type) for v in (*op.operands, *op.results)):
                raise OpError(
                    op,
                    "has open placements (?), which propagate-placements does not choose here: "
                    "it places dtensor ops, collectives, calls and returns (give this op's "
                    "values their placements)",
                )
        self.close_unused_arguments()

    def touched(self, op: Operation) -> bool:
        """Whether propagation has anything to do at `op`: an open type, or an operand whose
        placement an earlier choice fixed differently from what this op can read (an open
        argument takes the layout its first user prefers). Other ops stay as written."""
        if isinstance(op, func.ReturnOp):
            return any(_open(t) for t in self.f.function_type.outputs.data) or any(
                v.type != t
                for v, t in zip(op.operands, self.f.function_type.outputs.data, strict=True)
            )
        if any(_open(v.type) for v in (*op.operands, *op.results)):
            return True
        try:
            op.verify_()
        except VerifyException:
            return True
        return False

    # backward: what users need
    def collect_targets(self) -> None:
        outputs = self.f.function_type.outputs.data
        for op in reversed(list(self.f.body.walk())):
            if isinstance(op, func.ReturnOp):
                for v, t in zip(op.operands, outputs, strict=True):
                    if isinstance(t, DTensorType) and not t.is_open and v not in self.targets:
                        self.targets[v] = t.placement_list
                        self.wanted_by[v] = "the function's result type"
            elif isinstance(op, coll.CollectiveOp) and len(op.operands) == 1:
                need = self.collective_input(op)
                if need is not None and op.operands[0] not in self.targets:
                    self.targets[op.operands[0]] = need
                    self.wanted_by[op.operands[0]] = f"'{op.name}'"
            elif isinstance(op, func.CallOp) and (callee := self.callee(op)) is not None:
                for v, t in zip(op.operands, callee.function_type.inputs.data, strict=True):
                    if isinstance(t, DTensorType) and not t.is_open and v not in self.targets:
                        self.targets[v] = t.placement_list
                        self.wanted_by[v] = f"@{callee.sym_name.data}'s argument"

    def collective_input(self, op: coll.CollectiveOp) -> Placements | None:
        """The input placement a user's collective needs, where its result says it."""
        src, res = op.operands[0].type, op.results[0].type
        assert isinstance(src, DTensorType) and isinstance(res, DTensorType)
        mesh = mesh_of(op)
        group = set(op.group(mesh))
        need: list[Placement] = []
        for a, (s, r) in enumerate(zip(src.placement_list, res.placement_list, strict=True)):
            if not isinstance(s, OpenAttr):
                need.append(s)
            elif a in group:
                options = [c for c in candidates(src) if _converts(op, c, r)]
                if not options:
                    return None
                need.append(options[0])
            elif isinstance(r, OpenAttr):
                need.append(R)  # (open on both sides of an axis it leaves alone: as closed)
            else:
                need.append(r)
        return tuple(need)

    # forward: choose and convert
    def place_op(self, op: DTensorOp) -> None:
        mesh = mesh_of(op)
        operand_types = [v.type for v in op.operands]
        declared = op.results[0].type
        assert isinstance(declared, DTensorType)
        target = self.target_of(op.results[0], declared)
        chosen = [
            list(t.placement_list) if isinstance(t, DTensorType) else None for t in operand_types
        ]
        for axis in range(mesh.ndim):
            best = self.best_signature(op, mesh, axis, target)
            for i, p in best.items():
                chosen[i][axis] = p  # type: ignore[index]
        for i, placements in enumerate(chosen):
            if placements is not None:  # operands are read afresh: retyping an argument
                op.operands[i] = self.reach(op.operands[i], tuple(placements), mesh, op)
        result = self.rewriter.replace_value_with_new_type(op.results[0], op.inferred_type())
        self.finish_result(op, result, target, mesh)

    def best_signature(
        self, op: DTensorOp, mesh: Mesh, axis: int, target: Placements | None
    ) -> dict[int, Placement]:
        """Operand placements on `axis` of the cheapest legal signature."""
        types = [t for t in (v.type for v in op.operands)]
        dist = [i for i, t in enumerate(types) if isinstance(t, DTensorType)]
        options = [self.options(types[i], axis) for i in dist]  # type: ignore[arg-type]
        best: tuple[float, dict[int, Placement]] | None = None
        for combo in product(*options):
            trial = [
                _closed(t).with_placements(
                    combo[dist.index(i)] if a == axis else R for a in range(mesh.ndim)
                )
                if i in dist
                else t
                for i, t in enumerate(types)
            ]
            try:
                got = op.inferred_type_for(trial)
            except (InferenceError, VerifyException):
                continue
            cost = sum(
                axis_bytes(types[i], types[i].placement_list, axis, combo[k], mesh)  # type: ignore[union-attr]
                for k, i in enumerate(dist)
            )
            if target is not None:
                cost += axis_bytes(got, got.placement_list, axis, target[axis], mesh)
            if math.isinf(cost):
                continue  # some operand or the result cannot be converted
            if best is None or cost < best[0]:
                best = (cost, dict(zip(dist, combo, strict=True)))
        if best is None:
            raise OpError(op, self.unreachable(op, mesh, axis, target))
        return best[1]

    def options(self, t: DTensorType, axis: int) -> list[Placement]:
        """Candidates for an operand on `axis`: its own placement first (ties keep it); an open
        argument is an input layout, replicated or split, never a partial sum."""
        own = t.placement_list[axis]
        if isinstance(own, OpenAttr):
            return [c for c in candidates(t) if not isinstance(c, PartialAttr)]
        return [own, *(c for c in candidates(t) if c != own)]

    def unreachable(self, op: DTensorOp, mesh: Mesh, axis: int, target: Placements | None) -> str:
        """Both sides of a contradiction: the operands' placements and who wants what."""
        have = ", ".join(
            t.placement_list[axis].short
            for t in (v.type for v in op.operands)
            if isinstance(t, DTensorType)
        )
        want = "any placement" if target is None else target[axis].short
        who = self.wanted_by.get(op.results[0], "the result's annotation")
        return (
            f"on mesh axis '{mesh.axis_names[axis]}': operands placed {have} cannot give "
            f"{want}, which {who} needs, through any placement signature and conversion"
        )

    def target_of(self, value: SSAValue, declared: DTensorType) -> Placements | None:
        """The placement the value must end with: its annotation where given (open axes taken
        from what its users need, else free: None)."""
        hint = self.targets.get(value)
        if not declared.is_open:
            return declared.placement_list
        if hint is None:
            return None
        merged = tuple(
            h if isinstance(d, OpenAttr) else d
            for d, h in zip(declared.placement_list, hint, strict=True)
        )
        return None if any(isinstance(p, OpenAttr) for p in merged) else merged

    def finish_result(
        self, op: Operation, result: SSAValue, target: Placements | None, mesh: Mesh
    ) -> None:
        """Convert the op's result to its annotated placement where they differ; later users
        see the annotated value."""
        t = result.type
        assert isinstance(t, DTensorType)
        if target is None or t.placement_list == target:
            return
        users = [u for u in result.uses]
        converted = self.reach_after(result, target, mesh, op)
        for use in users:
            use.operation.operands[use.index] = converted

    def reach(self, value: SSAValue, goal: Placements, mesh: Mesh, op: Operation) -> SSAValue:
        """`value` at `goal`, converted just before `op` (an open argument is given `goal`)."""
        t = value.type
        assert isinstance(t, DTensorType)
        if t.is_open:
            owner = value.owner
            filled = t.with_placements(
                g if isinstance(p, OpenAttr) else p
                for p, g in zip(t.placement_list, goal, strict=True)
            )
            if not isinstance(owner, Operation):
                value = self.retype_argument(value, filled)
            elif generates(owner):  # (a fill makes any layout in place: as an open argument)
                value = self.rewriter.replace_value_with_new_type(value, filled)
            else:
                raise OpError(op, f"operand {t.summary()} is still open")
        if value.type.placement_list == goal:  # type: ignore[union-attr]
            return value
        try:
            return convert(value, goal, mesh, self.rewriter, InsertPoint.before(op), op)
        except PlacementConflict as e:
            raise OpError(
                op, f"operand is {value.type.summary()} but the op needs {format_list(goal)}: {e}"
            ) from None  # type: ignore[union-attr]

    def reach_after(self, value: SSAValue, goal: Placements, mesh: Mesh, op: Operation) -> SSAValue:
        try:
            return convert(value, goal, mesh, self.rewriter, InsertPoint.after(op), op)
        except PlacementConflict as e:
            t = value.type
            raise OpError(
                op,
                f"the op gives {t.summary()} but its result is annotated {format_list(goal)}: {e}",
            ) from None  # type: ignore[union-attr]

    def place_collective(self, op: coll.CollectiveOp) -> None:
        mesh = mesh_of(op)
        if len(op.operands) != 1:
            return
        need = self.collective_input(op)
        src = op.operands[0]
        if need is None:
            need = _closed(src.type).placement_list  # type: ignore[union-attr]
        op.operands[0] = self.reach(src, need, mesh, op)
        try:
            inferred = op.infer(op.operands[0].type, op.properties, mesh)  # type: ignore[arg-type]
        except InferenceError as e:
            raise OpError(op, e.located(mesh.axis_names)) from None
        declared = op.results[0].type
        assert isinstance(declared, DTensorType)
        result = self.rewriter.replace_value_with_new_type(op.results[0], inferred)
        self.finish_result(op, result, self.target_of(result, declared), mesh)

    def callee(self, op: func.CallOp) -> func.FuncOp | None:
        """The called function, where it has a body (placed before this one)."""
        callee = self.callees.get(op.callee.root_reference.data)
        if callee is None or not callee.body.blocks:
            return None
        if len(callee.function_type.inputs) != len(op.operands) or len(
            callee.function_type.outputs
        ) != len(op.results):
            return None  # (the verifier says what is wrong with this call)
        return callee

    def place_call(self, op: func.CallOp) -> None:
        """The operands converted to the callee's argument placements (an open argument of this
        function takes them), the results typed as the callee returns them and converted where
        their annotation differs."""
        callee = self.callee(op)
        if callee is None:
            return
        ftype = callee.function_type
        for i, (v, t) in enumerate(zip(op.operands, ftype.inputs.data, strict=True)):
            if isinstance(t, DTensorType) and not t.is_open and v.type != t:
                op.operands[i] = self.reach(v, t.placement_list, self.mesh(op, t), op)
        for r, t in zip(list(op.results), ftype.outputs.data, strict=True):
            declared = r.type
            if not isinstance(t, DTensorType) or t.is_open or declared == t:
                continue
            assert isinstance(declared, DTensorType)
            target = self.target_of(r, declared)
            result = self.rewriter.replace_value_with_new_type(r, t)
            self.finish_result(op, result, target, self.mesh(op, t))

    @staticmethod
    def mesh(op: Operation, t: DTensorType) -> Mesh:
        mesh = lookup_mesh(op, t.mesh_name)
        if mesh is None:
            raise OpError(op, f"is not inside a module that declares @{t.mesh_name}")
        return mesh

    def place_return(self, op: func.ReturnOp) -> None:
        outputs = list(self.f.function_type.outputs.data)
        for i, (v, t) in enumerate(zip(op.operands, outputs, strict=True)):
            if not isinstance(t, DTensorType):
                continue
            if t.is_open:
                outputs[i] = v.type
            elif v.type != t:
                op.operands[i] = self.reach(v, t.placement_list, mesh_of(op), op)
        self.f.function_type = FunctionType.from_lists(
            list(self.f.function_type.inputs.data), outputs
        )

    def retype_argument(self, arg: SSAValue, new: DTensorType) -> SSAValue:
        value = self.rewriter.replace_value_with_new_type(arg, new)
        inputs = [a.type for a in self.f.body.block.args]
        self.f.function_type = FunctionType.from_lists(
            inputs, list(self.f.function_type.outputs.data)
        )
        return value

    def close_unused_arguments(self) -> None:
        """Arguments nothing placed take the closed default; a result that returns one as it
        is (still open when the return was placed) takes its type too."""
        for arg in list(self.f.body.block.args):
            if _open(arg.type):
                self.retype_argument(arg, _closed(arg.type))  # type: ignore[arg-type]
        outputs = list(self.f.function_type.outputs.data)
        for op in self.f.body.walk():
            if isinstance(op, func.ReturnOp) and op.parent_op() is self.f:
                for i, v in enumerate(op.operands):
                    if _open(outputs[i]) and not _open(v.type):
                        outputs[i] = v.type
        self.f.function_type = FunctionType.from_lists(
            list(self.f.function_type.inputs.data), outputs
        )


def _converts(op: coll.CollectiveOp, c: Placement, result: Placement) -> bool:
    """Whether the collective turns `c` into `result` on one of its axes."""
    try:
        got = op.convert(op.properties, c)
    except InferenceError:
        return False
    return isinstance(result, OpenAttr) or got == result


def format_list(placements: Sequence[Placement]) -> str:
    return "[" + ", ".join(p.short for p in placements) + "]"


@dataclass(frozen=True)
class PropagatePlacements(ModulePass):
    """Choose every open placement (`?`) from the annotated ones through the ops' placement
    signatures, the cheapest by the byte model at each op, and insert the conversions."""

    name = "propagate-placements"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        functions = {f.sym_name.data: f for f in op.walk() if isinstance(f, func.FuncOp)}
        for f in callees_first(functions):
            if f.body.blocks:
                FunctionPlacer(f, Rewriter(), {}, {}, functions).run()


def callees_first(
    functions: Mapping[str, func.FuncOp],
    cycles: list[tuple[func.CallOp, tuple[str, ...]]] | None = None,
) -> list[func.FuncOp]:
    """The functions with every callee before its callers (module order otherwise; a cycle,
    which the verifier allows, is broken where it is met and, with `cycles`, noted there: the
    call that closes it and the names around it)."""
    calls = {
        name: [
            o
            for o in f.walk()
            if isinstance(o, func.CallOp) and o.callee.root_reference.data in functions
        ]
        for name, f in functions.items()
    }
    order: list[func.FuncOp] = []
    state: dict[str, int] = {}  # 1: being visited, 2: done
    for root in functions:
        if state.get(root) == 2:
            continue
        state[root] = 1
        stack = [(root, iter(calls[root]))]
        while stack:
            name, pending = stack[-1]
            call = next(pending, None)
            if call is None:
                stack.pop()
                state[name] = 2
                order.append(functions[name])
                continue
            callee = call.callee.root_reference.data
            if callee not in state:
                state[callee] = 1
                stack.append((callee, iter(calls[callee])))
            elif state[callee] == 1 and cycles is not None:
                path = [n for n, _ in stack]
                cycles.append((call, tuple(path[path.index(callee) :])))
    return order
