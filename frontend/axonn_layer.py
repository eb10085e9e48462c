"""A transformer layer in AxoNN's 4D layout, written as a ccopt program at L2.

`ccopt-plan axonn --emit layer.mlir` writes the chosen grid as this program, so the rest of
ccopt (the interpreter's proof, the simulator, code generation) applies to AxoNN's layout. The
mesh is `[data, row, col, depth]` (`AXES`: depth innermost, where AxoNN numbers ranks column
innermost; ccopt composes splits of one dimension in mesh order and gathers over the innermost
splitter, which depth's ZeRO split of the weights must be). The layer is AxoNN's
four linear layers - the attention projections (Q, K and V as three H x H layers: the K = 3 QKV
layer's traffic split in three), the transposed attention output, FC1 and the transposed FC2 -
with a residual after each half; the layer computes its forward pass and its backward pass from
the output gradient `dy`, returning `y`, `dx` and every weight's gradient shard.

Placements (one per mesh axis; `Y = X.W`, W stored `[in, out]`):

* activations `[B*S, H]`: rows split over data and depth, features over column (`S(1)`) into a
  plain layer and over row after a plain layer;
* a plain layer's weight: in-features over column, out-features over row, and its block split
  again over depth (ZeRO-3): `[R, S(0), S(1), S(0)]`; a transposed layer swaps row and column;
* forward: all-gather the weight over depth, matmul (partial over column, or row when transposed),
  all-reduce over column (row); backward: dX all-reduce over row (column), dW reduce-scatter over
  depth, then all-reduce of the dW shard over data.

Schedules at L2 (`sched`): OAG - each weight's all-gather is issued on stream 1 one layer ahead
and awaited just before its matmul; OAR - each dX all-reduce runs on stream 2 while the same
layer's dW matmul runs; ORS - each dW reduce-scatter and data all-reduce runs on stream 3 and is
awaited only at the end of the backward pass. Gathered weights are kept from the forward pass to
the backward pass (no second all-gather, no recomputation).

The attention core (softmax(QK^T)V per head) has no op in ccopt yet; the layer joins the heads
with the elementwise stand-in `q * k + v`, whose backward is exact, and FC1's activation is `tanh`
(its derivative needs no constant: `dt - dt*t*t`).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from ccopt.sim.axonn import Grid

AXES = ("data", "row", "col", "depth")

R, S0, S1 = "R", "S(0)", "S(1)"
P = "P(sum)"

ACT_IN = (S0, R, S1, S0)
"""Activations entering a plain layer (and leaving a transposed one)."""
ACT_MID = (S0, S1, R, S0)
"""Activations leaving a plain layer (and entering a transposed one)."""
PLAIN_W = (R, S1, S0, S0)
TRANSPOSED_W = (R, S0, S1, S0)


def gathered(w: tuple[str, ...]) -> tuple[str, ...]:
    """The weight after its all-gather over depth."""
    return (*w[:3], R)


@dataclass
class _Writer:
    """Emits SSA text, remembering each value's type."""

    element: str
    lines: list[str] = field(default_factory=list)
    types: dict[str, str] = field(default_factory=dict)
    counter: int = 0

    def ty(self, shape: tuple[int, ...], placements: tuple[str, ...]) -> str:
        dims = "x".join(str(d) for d in shape)
        return f"!dtensor.tensor<{dims}x{self.element}, @grid[{', '.join(placements)}]>"

    def fresh(self, hint: str) -> str:
        self.counter += 1
        return f"%{hint}{self.counter}"

    def op(self, hint: str, text: str, result_type: str, indent: str = "    ") -> str:
        name = self.fresh(hint)
        self.lines.append(f"{indent}{name} = {text}")
        self.types[name] = result_type
        return name

    def binary(self, kind: str, a: str, b: str, hint: str) -> str:
        t = self.types[a]
        return self.op(hint, f"dtensor.{kind} {a}, {b} : ({t}, {self.types[b]}) -> {t}", t)

    def matmul(self, a: str, b: str, out: str, hint: str, flags: str = "") -> str:
        text = f"dtensor.matmul {a}, {b}{flags} : ({self.types[a]}, {self.types[b]}) -> {out}"
        return self.op(hint, text, out)

    def all_reduce(self, value: str, axis: str, out: str, hint: str, indent: str = "    ") -> str:
        text = f"coll.all_reduce sum {value} over [{axis}] : {self.types[value]} -> {out}"
        return self.op(hint, text, out, indent)

    def execute(self, stream: int, inputs: list[str], body: list[str], result: str) -> str:
        """`sched.execute` of a region whose `body` lines use %a0.. for `inputs` and yield
        `result`'s type from its last value; returns the future's name."""
        token, future = self.fresh("t"), self.fresh("f")
        in_types = [self.types[v] for v in inputs]
        sig = f"({', '.join(in_types)}) -> !sched.future<{result}>"
        self.lines.append(
            f"    {token}, {future} = sched.execute stream {stream} ins({', '.join(inputs)}) : {sig} {{"
        )
        args = ", ".join(f"%a{i}: {t}" for i, t in enumerate(in_types))
        self.lines.append(f"    ^bb0({args}):")
        self.lines.extend(f"      {line}" for line in body)
        self.lines.append("    }")
        self.types[future] = result
        return future

    def await_(self, future: str, hint: str) -> str:
        t = self.types[future]
        return self.op(hint, f"sched.await {future} : !sched.future<{t}> -> {t}", t)


@dataclass(frozen=True)
class LayerShape:
    """Global sizes of the emitted layer: `tokens` = batch * sequence rows, `hidden` = H."""

    tokens: int
    hidden: int
    element: str = "bf16"


LINEARS = (
    ("q", 1, False),
    ("k", 1, False),
    ("v", 1, False),
    ("o", 1, True),
    ("fc1", 4, False),
    ("fc2", 4, True),
)
"""Name, width factor K and orientation of the layer's linear layers, in forward order."""


def weight_shape(hidden: int, k: int, transposed: bool) -> tuple[int, int]:
    return (k * hidden, hidden) if transposed else (hidden, k * hidden)


def emit_layer(grid: Grid, shape: LayerShape) -> str:
    """The layer's program text on a `[data, row, col, depth]` mesh of `grid`'s sizes."""
    w = _Writer(shape.element)
    h, m = shape.hidden, shape.tokens
    act_in = w.ty((m, h), ACT_IN)
    weights = {
        name: w.ty(weight_shape(h, k, t), TRANSPOSED_W if t else PLAIN_W) for name, k, t in LINEARS
    }
    for name in weights:
        w.types[f"%w_{name}"] = weights[name]
    w.types["%x"], w.types["%dy"] = act_in, act_in
    gathered_w = _Gathers(w)
    gathered_w.issue(LINEARS[0][0])
    fwd = _forward(w, shape, gathered_w)
    dx, grads = _backward(w, shape, gathered_w, fwd)
    results = [fwd["y"], dx, *(grads[name] for name, _, _ in LINEARS)]
    params = ", ".join(
        ["%x: " + act_in, "%dy: " + act_in] + [f"%w_{n}: {t}" for n, t in weights.items()]
    )
    result_types = ", ".join(w.types[r] for r in results)
    returned = ", ".join(results)
    sizes = {"data": grid.gdata, "row": grid.gr, "col": grid.gc, "depth": grid.gd}
    mesh = ", ".join(f"{a}={sizes[a]}" for a in AXES)
    header = [
        f"// AxoNN 4D layout Gr={grid.gr} Gc={grid.gc} Gd={grid.gd} Gdata={grid.gdata}: one",
        "// transformer layer, forward and backward, with OAG/OAR/ORS schedules (ccopt-plan)",
        f"dtensor.mesh @grid [{mesh}]",
        "",
        f"func.func @axonn_layer({params}) -> ({result_types}) {{",
    ]
    footer = [f"    func.return {returned} : {result_types}", "}", ""]
    return "\n".join(header + w.lines + footer)


class _Gathers:
    """OAG: weight all-gathers issued one linear layer ahead on stream 1."""

    def __init__(self, w: _Writer):
        self.w = w
        self.futures: dict[str, str] = {}
        self.values: dict[str, str] = {}
        self.order = [name for name, _, _ in LINEARS]

    def issue(self, name: str) -> None:
        w = self.w
        t = w.types[f"%w_{name}"]
        placements = _placements(t)
        out = t.replace(_mesh_text(placements), _mesh_text(gathered(placements)))
        body = [f"%g = coll.all_gather %a0 over [depth] : {t} -> {out}", f"sched.yield %g : {out}"]
        self.futures[name] = w.execute(1, [f"%w_{name}"], body, out)

    def take(self, name: str) -> str:
        """Await `name`'s gathered weight and prefetch the next layer's."""
        value = self.w.await_(self.futures[name], f"w{name}_")
        self.values[name] = value
        i = self.order.index(name)
        if i + 1 < len(self.order):
            self.issue(self.order[i + 1])
        return value


def _placements(t: str) -> tuple[str, ...]:
    inside = t[t.index("@grid[") + len("@grid[") : t.rindex("]")]
    return tuple(p.strip() for p in inside.split(","))


def _mesh_text(placements: tuple[str, ...]) -> str:
    return f"@grid[{', '.join(placements)}]"


def _linear_forward(
    w: _Writer, x: str, name: str, k: int, transposed: bool, gathers: _Gathers, shape: LayerShape
) -> str:
    weight = gathers.take(name)
    m, h = shape.tokens, shape.hidden
    width = h if transposed else k * h
    partial = (S0, P, S1, S0) if transposed else (S0, S1, P, S0)
    done = ACT_IN if transposed else ACT_MID
    y = w.matmul(x, weight, w.ty((m, width), partial), f"{name}_p")
    return w.all_reduce(y, "row" if transposed else "col", w.ty((m, width), done), f"{name}_")


def _forward(w: _Writer, shape: LayerShape, gathers: _Gathers) -> dict[str, str]:
    lin = {name: (k, t) for name, k, t in LINEARS}
    out: dict[str, str] = {}
    for name in ("q", "k", "v"):
        out[name] = _linear_forward(w, "%x", name, *lin[name], gathers, shape)
    qk = w.binary("mul", out["q"], out["k"], "qk")
    out["a"] = w.binary("add", qk, out["v"], "att")
    o = _linear_forward(w, out["a"], "o", *lin["o"], gathers, shape)
    out["h"] = w.binary("add", "%x", o, "h")
    f = _linear_forward(w, out["h"], "fc1", *lin["fc1"], gathers, shape)
    out["t"] = w.op("t", f"dtensor.tanh {f} : {w.types[f]}", w.types[f])
    z = _linear_forward(w, out["t"], "fc2", *lin["fc2"], gathers, shape)
    out["y"] = w.binary("add", out["h"], z, "y")
    return out


def _linear_backward(
    w: _Writer,
    x: str,
    dy: str,
    name: str,
    k: int,
    transposed: bool,
    gathers: _Gathers,
    shape: LayerShape,
    pending: list[tuple[str, str]],
) -> str:
    """dX with OAR (its all-reduce behind the dW matmul) and dW with ORS (reduce-scatter and
    data all-reduce left running until the end); returns dX."""
    m, h = shape.tokens, shape.hidden
    in_width = k * h if transposed else h
    dx_partial = (S0, S1, P, S0) if transposed else (S0, P, S1, S0)
    dx_done = ACT_MID if transposed else ACT_IN
    dxp = w.matmul(
        dy, gathers.values[name], w.ty((m, in_width), dx_partial), f"d{name}x_p", " transpose_rhs"
    )
    dx_t = w.ty((m, in_width), dx_done)
    axis = "col" if transposed else "row"
    reduce = [
        f"%r = coll.all_reduce sum %a0 over [{axis}] : {w.types[dxp]} -> {dx_t}",
        f"sched.yield %r : {dx_t}",
    ]
    dx_future = w.execute(2, [dxp], reduce, dx_t)
    wshape = weight_shape(h, k, transposed)
    wt = TRANSPOSED_W if transposed else PLAIN_W
    dw_p = w.matmul(x, dy, w.ty(wshape, (P, wt[1], wt[2], P)), f"d{name}w_p", " transpose_lhs")
    scattered = w.ty(wshape, (P, wt[1], wt[2], S0))
    final = w.ty(wshape, wt)
    body = [
        f"%s = coll.reduce_scatter sum %a0 over [depth] dim 0 : {w.types[dw_p]} -> {scattered}",
        f"%d = coll.all_reduce sum %s over [data] : {scattered} -> {final}",
        f"sched.yield %d : {final}",
    ]
    pending.append((name, w.execute(3, [dw_p], body, final)))
    return w.await_(dx_future, f"d{name}x")


def _backward(
    w: _Writer, shape: LayerShape, gathers: _Gathers, fwd: dict[str, str]
) -> tuple[str, dict[str, str]]:
    lin = {name: (k, t) for name, k, t in LINEARS}
    pending: list[tuple[str, str]] = []

    def back(x: str, dy: str, name: str) -> str:
        return _linear_backward(w, x, dy, name, *lin[name], gathers, shape, pending)

    dt = back(fwd["t"], "%dy", "fc2")
    dtt = w.binary("mul", w.binary("mul", dt, fwd["t"], "dtt"), fwd["t"], "dttt")
    df = w.binary("sub", dt, dtt, "df")
    dh = w.binary("add", "%dy", back(fwd["h"], df, "fc1"), "dh")
    da = back(fwd["a"], dh, "o")
    dq = w.binary("mul", da, fwd["k"], "dq")
    dk = w.binary("mul", da, fwd["q"], "dk")
    dx = dh
    for name, grad in (("q", dq), ("k", dk), ("v", da)):
        dx = w.binary("add", dx, back("%x", grad, name), "dx")
    grads = {name: w.await_(future, f"dw_{name}") for name, future in pending}
    return dx, grads
