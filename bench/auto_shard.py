"""Search speed of `auto-shard` on a stack of MLP layers with every weight and activation open,
against parsing and verifying the same program, measured in the same run.

Each layer is `h = x.W1; g = gelu(h); x' = g.W2` on a dp x tp mesh, the input and the output
replicated over tp and split by rows over dp, everything else `?`. Rows:

- parse+verify: `ccopt.program.load_program` of the text (the baseline, 1.00x);
- auto-shard dp: the exact forest DP (the stack is a chain with weight leaves);
- auto-shard cd: AutoDDL's coordinate descent, with its cost gap to dp's optimum;
- auto-shard ilp, memory-bound: HiGHS with a per-device limit of 120 KiB per layer on the peak of
  the bytes live at any program point, which the unlimited optimum breaks from 2 layers on (its
  peak: 80 KiB for 1 layer, 304 KiB for 2) (stacks up to 4 layers: the integer program grows
  with S^2 per edge).

Each search row includes parsing and verifying the program, as `ccopt -p auto-shard` does.

With `--gpt MODEL` the stack is instead the front end's GPT training step at the model table's
shapes (`python -m ccopt.frontend.gpt --model MODEL --open`: forward, backward and Adam layer
functions called once per layer, every placement `?`) on `--mesh`; each layer function's
transfer table is built once and every call chooses among its entries, so the search time grows
only with the step's own nodes (a chain over the calls). `--memory GIB` adds a row searched under
that per-device limit on the memory peak (`dp`, which hands the step to `ilp` when the unlimited
optimum breaks the limit), with the placements the weight matrices of the called layer entries
and of the step take, counted.

With `--overlap C` the GPT rows are searched with `objective=time` as well, without and with the
overlap credit (`overlap=C`: each distinct matmul-reduction pair simulated before and after
`overlap{chunks=C}`, from nothing remembered; an all-gather into a matmul likewise) and with the
fused pipeline's credit (`overlap-pipeline=fused`: a reduction's elementwise consumer fused into
it and pipelined too), `--time-strategies` naming which strategies
(default: cd); the credit row's note gives the pairs simulated and the credit the step takes.

Nothing here asserts on time.

    python bench/auto_shard.py [--layers 12 48 96] [--repeat K]
    python bench/auto_shard.py --gpt gpt3-175b --layers 96 --mesh dp=8,tp=8 --repeat 1
    python bench/auto_shard.py --gpt gpt3-175b --layers 2 --mesh dp=8,tp=8 --repeat 1 --memory 80
    python bench/auto_shard.py --gpt gpt3-175b --layers 96 --repeat 1 --overlap 4
    python bench/auto_shard.py --gpt gpt3-175b --layers 96 --repeat 1 --memory 80
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Callable

from bench_args import mesh, positive

HIDDEN, FFN, TOKENS = 64, 256, 128


def stack(layers: int) -> str:
    """The program text of `layers` MLP layers."""

    def t(shape: str, placements: str) -> str:
        return f"!dtensor.tensor<{shape}xf32, @m[{placements}]>"

    act_in, act = t(f"{TOKENS}x{HIDDEN}", "S(0), R"), t(f"{TOKENS}x{HIDDEN}", "S(0), ?")
    hid = t(f"{TOKENS}x{FFN}", "S(0), ?")
    w1, w2 = t(f"{HIDDEN}x{FFN}", "?, ?"), t(f"{FFN}x{HIDDEN}", "?, ?")
    args = ", ".join([f"%x: {act_in}"] + [f"%a{i}: {w1}, %b{i}: {w2}" for i in range(layers)])
    lines = ["dtensor.mesh @m [dp=2, tp=4]", f"func.func @stack({args}) -> {act_in} {{"]
    x, xt = "%x", act_in
    for i in range(layers):
        last = i == layers - 1
        out = act_in if last else act
        lines += [
            f"  %h{i} = dtensor.matmul {x}, %a{i} : ({xt}, {w1}) -> {hid}",
            f"  %g{i} = dtensor.gelu %h{i} : {hid}",
            f"  %y{i} = dtensor.matmul %g{i}, %b{i} : ({hid}, {w2}) -> {t(f'{TOKENS}x{HIDDEN}', 'S(0), ?')}",
        ]
        if last:
            lines.append(
                f"  %r = coll.all_reduce sum %y{i} over [tp] : {t(f'{TOKENS}x{HIDDEN}', 'S(0), ?')} -> {out}"
            )
            x = "%r"
        else:
            x = f"%y{i}"
        xt = out if last else t(f"{TOKENS}x{HIDDEN}", "S(0), ?")
    lines += [f"  func.return {x} : {act_in}", "}"]
    return "\n".join(lines)


def gpt_stack(model: str, layers: int, mesh: str) -> str:
    """The open GPT training step of `model` with `layers` layers on `mesh` (axis=size,...)."""
    from ccopt.frontend.gpt import Layout, gpt_step
    from ccopt.program import parse_mesh_spec

    axes = parse_mesh_spec(mesh)
    return str(gpt_step(model, axes, layers=layers, layout=Layout.open(list(axes))).module)


def best_of(repeat: int, work: Callable[[], object]) -> tuple[float, object]:
    times, result = [], None
    for _ in range(repeat):
        start = time.perf_counter()
        result = work()
        times.append(time.perf_counter() - start)
    return min(times), result


def cost_of(module) -> float:  # noqa: ANN001 - a ModuleOp
    from xdsl.dialects import func

    f = next(op for op in module.walk() if isinstance(op, func.FuncOp))
    return f.attributes["auto_shard"].data["cost"].value.data


def total_cost(module, key: str = "cost") -> float:  # noqa: ANN001 - a ModuleOp
    """Every function's cost (or its `bound`) once per run of it (a layer function once per
    call)."""
    from ccopt.passes.auto_shard import reported_total

    return reported_total(module, key)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--layers", type=positive, nargs="+", default=[12, 48, 96])
    p.add_argument("--repeat", type=positive, default=3)
    p.add_argument("--gpt", metavar="MODEL", help="search the open GPT step of MODEL instead")
    p.add_argument("--mesh", type=mesh, default="dp=8,tp=8", help="with --gpt: axis=size,...")
    p.add_argument(
        "--memory", type=float, default=0.0, help="with --gpt: a row under this GiB limit too"
    )
    p.add_argument(
        "--overlap",
        type=int,
        default=0,
        metavar="C",
        help="with --gpt: rows with objective=time, without and with the overlap credit",
    )
    p.add_argument(
        "--time-strategies", nargs="+", default=["cd"], help="with --overlap: strategies to time"
    )
    args = p.parse_args()
    if args.gpt:
        from ccopt.diagnostics import CcoptError
        from ccopt.frontend.gpt import MODELS

        try:
            if args.gpt not in MODELS:
                raise CcoptError(f"unknown model '{args.gpt}' (one of {', '.join(MODELS)})")
            gpt_rows(args.gpt, args.layers, args.mesh, args.repeat, args.memory)
            if args.overlap:
                overlap_rows(args.gpt, args.layers, args.mesh, args.overlap, args.time_strategies)
        except CcoptError as e:  # an unknown model or a bad mesh: said, not a traceback
            p.error(str(e))
        return

    from ccopt.passes.pipeline import apply_pipeline
    from ccopt.program import load_program

    print(f"{'layers':>6} {'row':<28} {'seconds':>9}  {'note':<26} {'vs parse':>9}")
    for layers in args.layers:
        text = stack(layers)
        load_program(text)  # warm-up: imports and first-use caches
        base, _ = best_of(args.repeat, lambda text=text: load_program(text))

        def search(options: str, text: str = text) -> object:
            return apply_pipeline(load_program(text), f"auto-shard{{{options}}}")

        rows = [("parse+verify", base, "")]
        dp_time, dp = best_of(args.repeat, lambda: search("strategy=dp"))
        optimum = cost_of(dp)
        rows.append(("auto-shard dp", dp_time, f"optimum {optimum:.4g} B"))
        cd_time, cd = best_of(args.repeat, lambda: search("strategy=cd"))
        rows.append(("auto-shard cd", cd_time, f"gap to dp {cost_of(cd) - optimum:.4g} B"))
        if layers <= 4:
            # 120 KiB per layer on the peak: the unlimited optimum's breaks it from 2 layers on
            limit = layers * 120 * 1024 / 1024**3
            bound = f"strategy=ilp memory={limit:.9f}"
            ilp_time, ilp = best_of(1, lambda bound=bound: search(bound))
            rows.append(("auto-shard ilp, memory-bound", ilp_time, f"cost {cost_of(ilp):.4g} B"))
        for name, seconds, note in rows:
            print(f"{layers:>6} {name:<28} {seconds:>9.3f}  {note:<26} {seconds / base:>8.2f}x")


def placements(module) -> str:  # noqa: ANN001 - a ModuleOp
    """How many weight matrices (arguments named wqkv, wo, w1, w2, with a layer or optimizer
    state prefix or none) of the module's functions take each placement: replicated,
    Megatron's column and row splits on one axis, split on both (FSDP-like)."""
    import re
    from collections import Counter

    from xdsl.dialects import func

    from ccopt.dialects.dtensor_type import DTensorType

    counted: Counter = Counter()
    for f in module.walk():
        if isinstance(f, func.FuncOp) and f.body.blocks:
            for a in f.body.block.args:
                if isinstance(a.type, DTensorType) and re.search(
                    r"(^|_)(wqkv|wo|w1|w2)$", a.name_hint or ""
                ):
                    counted["[" + ", ".join(p.short for p in a.type.placement_list) + "]"] += 1
    return " ".join(f"{k}x{n}" for k, n in counted.most_common())


def gpt_rows(
    model: str, layer_counts: list[int], mesh: str, repeat: int, memory: float = 0.0
) -> None:
    """parse+verify, auto-shard dp and cd on the open GPT step; cd's gap to dp's total, and
    each one's certified gap to its bound over every boundary of the calls; with
    `memory`, dp under that limit and the weights' placements it chose."""
    from ccopt.passes.pipeline import apply_pipeline
    from ccopt.program import load_program

    print(f"{model} on {mesh}, every placement open")
    print(f"{'layers':>6} {'row':<16} {'seconds':>9}  {'note':<34} {'vs parse':>9}")
    for layers in layer_counts:
        text = gpt_stack(model, layers, mesh)
        load_program(text)
        base, _ = best_of(repeat, lambda text=text: load_program(text))

        def search(options: str, text: str = text) -> object:
            return apply_pipeline(load_program(text), f"auto-shard{{{options}}}")

        dp_time, dp = best_of(repeat, lambda: search("strategy=dp"))
        cd_time, cd = best_of(repeat, lambda: search("strategy=cd"))
        optimum, found = total_cost(dp), total_cost(cd)
        cd_gap = found - total_cost(cd, "bound")
        gap = found - optimum if abs(found - optimum) > 1e-9 * max(1.0, optimum) else 0.0
        rows = [
            ("parse+verify", base, ""),
            ("auto-shard dp", dp_time, f"total {optimum:.4g} B"),
            ("auto-shard cd", cd_time, f"total {found:.4g} B, gap {gap:.4g} B"),
            ("", 0.0, f"cd's bound {total_cost(cd, 'bound'):.4g} B: certified gap {cd_gap:.4g} B"),
            (
                "",
                0.0,
                f"dp's bound {total_cost(dp, 'bound'):.4g} B (over every boundary of the calls): "
                f"certified gap {optimum - total_cost(dp, 'bound'):.4g} B",
            ),
        ]
        if memory > 0:
            limited = f"strategy=dp memory={memory:g}"
            bound_time, bound = best_of(1, lambda limited=limited: search(limited))
            rows.append((f"dp memory={memory:g}", bound_time, f"total {total_cost(bound):.4g} B"))
        for name, seconds, note in rows:
            if not name:
                print(f"{'':>6} {note}")
                continue
            print(f"{layers:>6} {name:<16} {seconds:>9.3f}  {note:<34} {seconds / base:>8.2f}x")
        print(f"{'':>6} weights, unlimited: {placements(dp)}")
        if memory > 0:
            print(f"{'':>6} weights, memory={memory:g}: {placements(bound)}")


def overlap_rows(
    model: str, layer_counts: list[int], mesh: str, chunks: int, strategies: list[str]
) -> None:
    """objective=time searches without and with the simulated overlap credit (`overlap=C`, and
    `overlap-pipeline=fused`), the credit's memory of simulated pairs cleared before each."""
    from ccopt.diagnostics import CcoptError
    from ccopt.passes import overlap_credit
    from ccopt.passes.pipeline import apply_pipeline
    from ccopt.program import load_program

    print(f"{model} on {mesh}, objective=time, overlap credit with {chunks} chunks")
    print(f"{'layers':>6} {'row':<24} {'seconds':>9}  {'note':<44}")
    for layers in layer_counts:
        text = gpt_stack(model, layers, mesh)
        for strategy in strategies:
            base = f"strategy={strategy} objective=time"
            for options in (
                base,
                f"{base} overlap={chunks}",
                f"{base} overlap={chunks} overlap-pipeline=fused",
            ):
                overlap_credit.forget()
                kind = "fused" if "fused" in options else "overlap" if "overlap=" in options else ""
                row = f"{strategy} {kind or 'time'}"
                try:
                    seconds, found = best_of(
                        1,
                        lambda o=options, t=text: apply_pipeline(
                            load_program(t), f"auto-shard{{{o}}}"
                        ),
                    )
                except CcoptError as e:  # e.g. cd stuck where every start meets a forbidden pair
                    print(f"{layers:>6} {row:<24} {'-':>9}  {str(e).splitlines()[0][:80]}")
                    continue
                note = f"total {total_cost(found):.6g} s"
                if "overlap=" in options:
                    note += f", {overlap_credit.remembered()} pairs simulated"
                    note += f", credit {total_credit(found) * 1e6:.1f} us"
                print(f"{layers:>6} {row:<24} {seconds:>9.3f}  {note:<44}")


def total_credit(module) -> float:  # noqa: ANN001 - a ModuleOp
    """The overlap credit every function takes, once per run of it (seconds)."""
    from xdsl.dialects import func

    from ccopt.passes.auto_shard import call_counts, callees_first, functions_of

    counts = call_counts(callees_first(functions_of(module)))
    return sum(
        counts[f.sym_name.data] * f.attributes["auto_shard"].data["overlap_credit"].value.data
        for f in module.walk()
        if isinstance(f, func.FuncOp)
        and "auto_shard" in f.attributes
        and "overlap_credit" in f.attributes["auto_shard"].data
    )


if __name__ == "__main__":
    main()
