"""A GPT layer stack in the front end: one function per layer for the forward pass, the backward
pass and the optimizer step, and a training step that calls them once per layer.

A model is mostly the same layer many times, so the layer stays a function and every pass,
the memory plan and the generated code work on it once (`inline{max-ops=...}` inlines only
what is small). `gpt_step` builds the training step of a decoder-only transformer:

    x -> [layernorm -> attention (causal, dropout) -> + residual
          -> layernorm -> MLP (gelu, dropout) -> + residual] x layers -> loss

with the backward pass of each layer recomputing its forward pass from the layer's input
(activation recomputation, so only layer inputs live across the step), and Adam on every
parameter. Shapes come from `MODELS` (the GPT table of `../shared/reference/autoparallel.md`
and GPT-3 175B) or a `GPTShape`; the mesh may have any data- and tensor-parallel axes.

Placements are given per tensor class (`Layout`): Megatron-LM's tensor parallelism (column-
parallel QKV and FC1, row-parallel attention output and FC2, heads split across the tensor
axes) with data parallelism by default. Wherever a value must be in its class's layout (a
layer's output, a gradient reaching the optimizer), `redistribute` inserts the collectives
that convert it, so a different layout (e.g. all replicated, the reference the tests compare
against) yields a different, equivalent program. A layout with `?` placements (`Layout.open`,
`--open`) leaves them open: the step is built replicated and then opened (every op result `?`,
each argument its class's placements), for `auto-shard` to choose.

Dropout uses the same seeds in every layer (a seed is a property of the op and the layer is
one function).
"""

from __future__ import annotations

import math
import numbers
import re
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace

from xdsl.dialects.builtin import ModuleOp

from ccopt.diagnostics import CcoptError
from ccopt.dialects.dtensor_type import OPEN, DTensorType, OpenAttr, PartialAttr, Placement, R, S
from ccopt.frontend.program import Program, Tensor
from ccopt.frontend.workloads import adam_moments


@dataclass(frozen=True)
class GPTShape:
    """A decoder-only transformer's shape; `batch` is the global batch of one step."""

    layers: int
    hidden: int
    heads: int
    seq: int = 2048
    batch: int = 8
    ffn: int = 0  # 0: 4 * hidden

    def __post_init__(self) -> None:
        for name in ("layers", "hidden", "heads", "seq", "batch", "ffn"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, numbers.Integral):
                raise CcoptError(f"a GPT's {name} is a whole number, got {value!r}")
        for name in ("layers", "hidden", "heads", "seq", "batch"):
            if getattr(self, name) < 1:
                raise CcoptError(f"a GPT needs {name} >= 1, got {getattr(self, name)}")
        if self.ffn < 0:
            raise CcoptError(f"a GPT needs ffn >= 1 (or 0: 4 x hidden), got {self.ffn}")
        if self.layers > MAX_LAYERS:
            # the step is a call per layer: a mistyped count would build for hours
            raise CcoptError(f"a GPT of {self.layers} layers: at most {MAX_LAYERS} are built")
        if self.batch * self.seq >= 2**63:
            # the weight gradients contract over batch x seq tokens, one dimension
            raise CcoptError(
                f"batch x seq = {self.batch * self.seq} tokens do not fit in a 64-bit dimension"
            )

    @property
    def ffn_size(self) -> int:
        return self.ffn or 4 * self.hidden

    @property
    def head_size(self) -> int:
        return self.hidden // self.heads


MAX_LAYERS = 1_000
"""The deepest stack `GPTShape` accepts: GPT-640B has 192 layers. The step's function takes 36
arguments per layer, and xDSL 0.74 adds or clones block arguments one tuple copy each (quadratic):
1,000 layers build in tens of seconds, 10,000 would take hours."""

FLOAT_DTYPES = ("f16", "bf16", "f32", "f64")
"""What a GPT may compute in: layernorm, softmax and GELU need a float type."""

MODELS: dict[str, GPTShape] = {
    # AxoNN's GPT shapes (layers / hidden / heads), autoparallel.md
    "gpt-5b": GPTShape(24, 4096, 32),
    "gpt-10b": GPTShape(32, 5120, 40),
    "gpt-20b": GPTShape(32, 7168, 56),
    "gpt-40b": GPTShape(38, 9216, 72),
    "gpt-60b": GPTShape(56, 9216, 72),
    "gpt-80b": GPTShape(42, 12288, 96),
    "gpt-160b": GPTShape(84, 12288, 96),
    "gpt-320b": GPTShape(96, 16384, 128),
    "gpt-640b": GPTShape(192, 16384, 128),
    # GPT-3 (Brown et al. 2020)
    "gpt3-175b": GPTShape(96, 12288, 96),
    # small enough for the interpreter
    "tiny": GPTShape(2, 16, 4, seq=8, batch=4),
}

PARAMETERS = (
    "ln1_g",
    "ln1_b",
    "wqkv",
    "bqkv",
    "wo",
    "bo",
    "ln2_g",
    "ln2_b",
    "w1",
    "b1",
    "w2",
    "b2",
)
"""A layer's parameters, in the order every layer function takes them."""

ATTENTION_DROPOUT, HIDDEN_DROPOUT = 0.1, 0.1
SEEDS = {"attention": 11, "attention_out": 12, "mlp_out": 13}
EPS = 1e-5


@dataclass(frozen=True)
class Layout:
    """One placement per mesh axis for each class of tensor of the layer stack.

    activation: [batch, seq, hidden]; column_weight: [hidden, k*hidden] (QKV, FC1) and
    column_bias: [k*hidden]; row_weight: [k*hidden, hidden] (attention out, FC2);
    replicated: layernorm parameters and the row-parallel biases [hidden]; mask: [seq, seq].
    """

    activation: tuple[Placement, ...]
    column_weight: tuple[Placement, ...]
    column_bias: tuple[Placement, ...]
    row_weight: tuple[Placement, ...]
    replicated: tuple[Placement, ...]
    mask: tuple[Placement, ...]

    @staticmethod
    def megatron(
        axes: Sequence[str], data: Sequence[str] = ("dp",), tensor: Sequence[str] = ("tp",)
    ) -> Layout:
        """Megatron-LM: the batch split over the data axes, weights split over the tensor axes
        (columns of QKV/FC1, rows of attention-out/FC2), everything else replicated."""
        unknown = [a for a in (*data, *tensor) if a not in axes]
        if unknown:
            raise CcoptError(f"no mesh axis {', '.join(unknown)} (axes: {', '.join(axes)})")
        both = [a for a in axes if a in data and a in tensor]
        if both:
            raise CcoptError(
                f"mesh axes {', '.join(both)} named both data- and tensor-parallel: "
                "an axis splits either the batch or the weights"
            )

        def per_axis(on_data: Placement, on_tensor: Placement) -> tuple[Placement, ...]:
            return tuple(on_data if a in data else on_tensor if a in tensor else R for a in axes)

        return Layout(
            activation=per_axis(S(0), R),
            column_weight=per_axis(R, S(1)),
            column_bias=per_axis(R, S(0)),
            row_weight=per_axis(R, S(0)),
            replicated=per_axis(R, R),
            mask=per_axis(R, R),
        )

    @staticmethod
    def replicated_everywhere(axes: Sequence[str]) -> Layout:
        """Every tensor whole on every rank: the unsharded reference."""
        rep = tuple(R for _ in axes)
        return Layout(rep, rep, rep, rep, rep, rep)

    @staticmethod
    def open(axes: Sequence[str]) -> Layout:
        """Every placement `?`: `auto-shard` (or `propagate-placements`) chooses them all."""
        unknown = tuple(OPEN for _ in axes)
        return Layout(unknown, unknown, unknown, unknown, unknown, unknown)

    @property
    def classes(self) -> tuple[tuple[Placement, ...], ...]:
        return (
            self.activation,
            self.column_weight,
            self.column_bias,
            self.row_weight,
            self.replicated,
            self.mask,
        )

    @property
    def is_open(self) -> bool:
        return any(isinstance(p, OpenAttr) for placements in self.classes for p in placements)

    def argument(self, name: str) -> tuple[Placement, ...]:
        """The placements of a layer-stack argument by its name: activations (`x`, `dy`,
        `target`), the mask, a parameter with its layer prefix (`l3_`), optimizer state
        (`m_`, `v_`) or gradient (`d`) prefixes, and the scalars `lr` and `t`."""
        if name in ("x", "dy", "target"):
            return self.activation
        if name == "mask":
            return self.mask
        base = re.sub(r"^(l\d+_)?([mv]_)?", "", name)
        if base not in PARAMETERS and base.startswith("d") and base[1:] in PARAMETERS:
            # a gradient: the backward pass's result, placed wherever that chose
            return tuple(OPEN for _ in self.activation)
        return self.parameter(base)

    def parameter(self, name: str) -> tuple[Placement, ...]:
        return {
            "wqkv": self.column_weight,
            "w1": self.column_weight,
            "bqkv": self.column_bias,
            "b1": self.column_bias,
            "wo": self.row_weight,
            "w2": self.row_weight,
        }.get(name, self.replicated)


def parameter_shapes(shape: GPTShape) -> dict[str, list[int]]:
    h, f = shape.hidden, shape.ffn_size
    return {
        "ln1_g": [h],
        "ln1_b": [h],
        "wqkv": [h, 3 * h],
        "bqkv": [3 * h],
        "wo": [h, h],
        "bo": [h],
        "ln2_g": [h],
        "ln2_b": [h],
        "w1": [h, f],
        "b1": [f],
        "w2": [f, h],
        "b2": [h],
    }


# --- placement conversions ---------------------------------------------------------------------


def redistribute(p: Program, t: Tensor, target: Sequence[Placement]) -> Tensor:
    """Convert `t` to `target` placements with collectives, one per kind of conversion (axes
    converting the same way share one collective): P->R all_reduce, P->S reduce_scatter, S->R
    all_gather, R->S slice, S(i)->S(j) all_to_all."""
    groups: dict[tuple[str, int | None], list[str]] = {}
    for axis, have, want in zip(p.mesh.axis_names, t.placements, target, strict=True):
        if have == want:
            continue
        if isinstance(have, PartialAttr) and want == R:
            key = ("all_reduce", None)
        elif isinstance(have, PartialAttr) and want.split_dim is not None:
            key = ("reduce_scatter", want.split_dim)
        elif have.split_dim is not None and want == R:
            key = ("all_gather", None)
        elif have == R and want.split_dim is not None:
            key = ("slice", want.split_dim)
        elif have.split_dim is not None and want.split_dim is not None:
            key = ("all_to_all", want.split_dim)
        else:
            raise CcoptError(f"no collective converts {have.short} to {want.short} on '{axis}'")
        groups.setdefault(key, []).append(axis)
    for (kind, dim), axes in groups.items():
        if kind == "all_reduce":
            t = p.all_reduce(t, axes)
        elif kind == "reduce_scatter":
            assert dim is not None
            t = p.reduce_scatter(t, axes, dim)
        elif kind == "all_gather":
            t = p.all_gather(t, axes)
        elif kind == "slice":
            assert dim is not None
            t = p.scatter(t, axes, dim)
        else:
            assert dim is not None
            t = p.all_to_all(t, axes, dim)
    return t


# --- the layer's math ----------------------------------------------------------------------------


@dataclass
class Forward:
    """The forward pass of one layer, with the intermediates its backward pass reads."""

    x: Tensor
    h1: Tensor  # layernorm 1
    q: Tensor  # [b, heads, seq, head]
    k: Tensor
    v: Tensor
    probs: Tensor  # softmax
    probs_dropped: Tensor
    context: Tensor  # [b, seq, hidden], heads merged
    x1: Tensor  # after the attention residual
    h2: Tensor  # layernorm 2
    f: Tensor  # FC1 + bias, before gelu
    g: Tensor  # gelu
    y: Tensor


class LayerBuilder:
    """Writes a layer's forward, backward and optimizer functions for one shape and layout."""

    def __init__(self, program: Program, shape: GPTShape, layout: Layout, dtype: str):
        self.p, self.shape, self.layout, self.dtype = program, shape, layout, dtype
        heads_split = [
            a
            for a, pl in zip(program.mesh.axis_names, layout.column_weight, strict=True)
            if pl.split_dim is not None
        ]
        mesh = program.mesh
        ranks = math.prod(mesh.axis_sizes[mesh.axis_index(a)] for a in heads_split)
        if shape.hidden % shape.heads or shape.heads % ranks:
            raise CcoptError(
                f"{shape.heads} heads of hidden size {shape.hidden}: the heads must divide the "
                f"hidden size and split evenly over the {ranks} ranks of axes {heads_split}"
            )
        self.check_even_splits()

    def check_even_splits(self) -> None:
        """Every input splits into equal blocks on its mesh axes: the layer's reshapes (heads
        out of the hidden size, tokens out of batch x seq) need whole blocks, and would
        otherwise fail far inside the step, on an op the user never wrote."""
        s, mesh = self.shape, self.p.mesh
        inputs = {"activation": ([s.batch, s.seq, s.hidden], self.layout.activation)}
        for name, shape in parameter_shapes(s).items():
            inputs[name] = (shape, self.layout.parameter(name))
        dims = ("batch", "seq", "hidden")
        for what, (shape, placements) in inputs.items():
            for dim, size in enumerate(shape):
                axes = [
                    a
                    for a, pl in zip(mesh.axis_names, placements, strict=True)
                    if pl.split_dim == dim
                ]
                ranks = math.prod(mesh.axis_sizes[mesh.axis_index(a)] for a in axes)
                if size % ranks:
                    label = (
                        f"{dims[dim]} {size}"
                        if what == "activation"
                        else f"{what}'s dimension {dim} ({size})"
                    )
                    raise CcoptError(
                        f"{label} does not split evenly over the {ranks} ranks of axes {axes}"
                    )

    # --- inputs ------------------------------------------------------------------------------
    def activation(self, p: Program, name: str) -> Tensor:
        s = self.shape
        return p.input(name, [s.batch, s.seq, s.hidden], self.dtype, *self.layout.activation)

    def parameters(self, p: Program, prefix: str = "", positive: bool = False) -> dict[str, Tensor]:
        return {
            n: p.input(prefix + n, shape, self.dtype, *self.layout.parameter(n), positive=positive)
            for n, shape in parameter_shapes(self.shape).items()
        }

    def mask(self, p: Program) -> Tensor:
        s = self.shape
        return p.input("mask", [s.seq, s.seq], self.dtype, *self.layout.mask)

    # --- forward -----------------------------------------------------------------------------
    def heads(self, t: Tensor, index: int) -> Tensor:
        """q, k or v ([b, heads, seq, head]) out of QKV laid out per head: [b, seq, heads, 3, head]
        (Megatron's layout: each rank's columns hold whole heads)."""
        s = self.shape
        b, n, hd = s.batch, s.heads, s.head_size
        one = t.slice([0, 0, 0, index, 0], [b, s.seq, n, 1, hd])
        return one.reshape([b, s.seq, n, hd]).transpose([0, 2, 1, 3])

    def forward(self, p: Program, x: Tensor, w: Mapping[str, Tensor], mask: Tensor) -> Forward:
        s = self.shape
        b, n, hd = s.batch, s.heads, s.head_size
        h1 = x.layernorm(w["ln1_g"], w["ln1_b"], EPS)
        qkv = ((h1 @ w["wqkv"]) + w["bqkv"]).reshape([b, s.seq, n, 3, hd])
        q, k, v = (self.heads(qkv, i) for i in range(3))
        scores = p.matmul(q, k, transpose_b=True) * (1.0 / math.sqrt(hd)) + mask
        probs = scores.softmax(3)
        dropped = probs.dropout(ATTENTION_DROPOUT, SEEDS["attention"])
        context = (dropped @ v).transpose([0, 2, 1, 3]).reshape([b, s.seq, s.hidden])
        attn = redistribute(p, context @ w["wo"], self.layout.activation)
        x1 = x + (attn + w["bo"]).dropout(HIDDEN_DROPOUT, SEEDS["attention_out"])
        h2 = x1.layernorm(w["ln2_g"], w["ln2_b"], EPS)
        f = (h2 @ w["w1"]) + w["b1"]
        g = f.gelu()
        mlp = redistribute(p, g @ w["w2"], self.layout.activation)
        y = x1 + (mlp + w["b2"]).dropout(HIDDEN_DROPOUT, SEEDS["mlp_out"])
        return Forward(x, h1, q, k, v, probs, dropped, context, x1, h2, f, g, y)

    # --- backward ----------------------------------------------------------------------------
    def tokens(self, t: Tensor) -> Tensor:
        """[b, seq, d] -> [b * seq, d]: weight gradients contract over every token."""
        s = self.shape
        return t.reshape([s.batch * s.seq, t.shape[-1]])

    def linear_grads(
        self, p: Program, x: Tensor, w: Tensor, dy: Tensor
    ) -> tuple[Tensor, Tensor, Tensor]:
        """y = x @ w + b: (dx before any reduction, dw, db); dw and db are partial over the
        data axes (each rank's tokens)."""
        dx = p.matmul(dy, w, transpose_b=True)
        dw = p.matmul(self.tokens(x), self.tokens(dy), transpose_a=True)
        return dx, dw, dy.sum([0, 1])

    def layernorm_grads(
        self, x: Tensor, gamma: Tensor, dy: Tensor
    ) -> tuple[Tensor, Tensor, Tensor]:
        """(dx, dgamma, dbeta) of layernorm(x) * gamma + beta over the last dimension."""
        centered = x - x.mean([-1], keepdim=True)
        rstd = ((centered * centered).mean([-1], keepdim=True) + EPS).rsqrt()
        xhat = centered * rstd
        dxhat = dy * gamma
        dx = rstd * (
            dxhat - dxhat.mean([-1], keepdim=True) - xhat * (dxhat * xhat).mean([-1], keepdim=True)
        )
        return dx, (dy * xhat).sum([0, 1]), dy.sum([0, 1])

    @staticmethod
    def gelu_grad(x: Tensor) -> Tensor:
        """d/dx of the tanh approximation of gelu (dtensor.gelu's)."""
        c = math.sqrt(2.0 / math.pi)
        x2 = x * x
        t = ((x + x2 * x * 0.044715) * c).tanh()
        inner = (x2 * (3 * 0.044715) + 1.0) * c  # d/dx of c * (x + 0.044715 x^3)
        return (t + 1.0) * 0.5 + x * ((t * t) * -1.0 + 1.0) * inner * 0.5

    def backward(
        self, p: Program, fw: Forward, w: Mapping[str, Tensor], dy: Tensor
    ) -> tuple[Tensor, dict[str, Tensor]]:
        """dx and the parameter gradients (partial over the data axes) of one layer."""
        s = self.shape
        b, n, hd = s.batch, s.heads, s.head_size
        grads: dict[str, Tensor] = {}
        # MLP: y = x1 + dropout(all_reduce(gelu(h2 @ w1 + b1) @ w2) + b2)
        dz = dy.dropout(HIDDEN_DROPOUT, SEEDS["mlp_out"])
        dg, grads["w2"], grads["b2"] = self.linear_grads(p, fw.g, w["w2"], dz)
        df = dg * self.gelu_grad(fw.f)
        dh2, grads["w1"], grads["b1"] = self.linear_grads(p, fw.h2, w["w1"], df)
        dh2 = redistribute(p, dh2, self.layout.activation)
        dx1_ln, grads["ln2_g"], grads["ln2_b"] = self.layernorm_grads(fw.x1, w["ln2_g"], dh2)
        dx1 = dy + dx1_ln
        # attention: x1 = x + dropout(all_reduce(context @ wo) + bo)
        do = dx1.dropout(HIDDEN_DROPOUT, SEEDS["attention_out"])
        dcontext, grads["wo"], grads["bo"] = self.linear_grads(p, fw.context, w["wo"], do)
        dctx = dcontext.reshape([b, s.seq, n, hd]).transpose([0, 2, 1, 3])
        ddropped = p.matmul(dctx, fw.v, transpose_b=True)
        dv = p.matmul(fw.probs_dropped, dctx, transpose_a=True)
        dprobs = ddropped.dropout(ATTENTION_DROPOUT, SEEDS["attention"])
        dscores = fw.probs * (dprobs - (dprobs * fw.probs).sum([3], keepdim=True))
        dscores = dscores * (1.0 / math.sqrt(hd))
        dq = dscores @ fw.k
        dk = p.matmul(dscores, fw.q, transpose_a=True)
        per_head = [t.transpose([0, 2, 1, 3]).reshape([b, s.seq, n, 1, hd]) for t in (dq, dk, dv)]
        dqkv = p.concat(per_head, 3).reshape([b, s.seq, 3 * s.hidden])
        dh1, grads["wqkv"], grads["bqkv"] = self.linear_grads(p, fw.h1, w["wqkv"], dqkv)
        dh1 = redistribute(p, dh1, self.layout.activation)
        dx_ln, grads["ln1_g"], grads["ln1_b"] = self.layernorm_grads(fw.x, w["ln1_g"], dh1)
        return dx1 + dx_ln, grads

    # --- the three layer functions -----------------------------------------------------------
    def forward_function(self) -> Program:
        f = self.p.subprogram("layer_forward")
        x = self.activation(f, "x")
        w = self.parameters(f)
        y = self.forward(f, x, w, self.mask(f)).y
        f.returns(y.named("y"))
        return f

    def backward_function(self) -> Program:
        """dx and the gradients of one layer from its input and dy (the forward pass is
        recomputed: only the layer inputs are kept across the step)."""
        f = self.p.subprogram("layer_backward")
        x = self.activation(f, "x")
        w = self.parameters(f)
        mask = self.mask(f)
        dy = self.activation(f, "dy")
        dx, grads = self.backward(f, self.forward(f, x, w, mask), w, dy)
        f.returns(dx.named("dx"), *(grads[n].named("d" + n) for n in PARAMETERS))
        return f

    def optimizer_function(self, grad_types: Sequence[Tensor]) -> Program:
        """Adam on every parameter of a layer; gradients arrive partial over the data axes."""
        f = self.p.subprogram("layer_adam")
        w = self.parameters(f)
        grads = {
            n: f.input("d" + n, g.shape, self.dtype, *g.placements)
            for n, g in zip(PARAMETERS, grad_types, strict=True)
        }
        m = self.parameters(f, "m_")
        v = self.parameters(f, "v_", positive=True)
        lr = f.input("lr", [], self.dtype, *self.layout.replicated)
        t = f.input("t", [], self.dtype, *self.layout.replicated, positive=True)
        for n in PARAMETERS:
            g = redistribute(f, grads[n], self.layout.parameter(n))
            m_new, v_new, direction = adam_moments(f, g, m[n], v[n], t, 1e-8)
            f.update(m[n], m_new)
            f.update(v[n], v_new)
            f.update(w[n], w[n] - lr * direction)
        return f


def gpt_step(
    model: str | GPTShape = "tiny",
    mesh: Mapping[str, int] | str | None = None,
    *,
    layers: int | None = None,
    batch: int | None = None,
    seq: int | None = None,
    layout: Layout | None = None,
    dtype: str = "f32",
    data_axes: str | Sequence[str] | None = None,
    tensor_axes: str | Sequence[str] | None = None,
    with_optimizer: bool = True,
) -> Program:
    """One training step of a GPT stack: forward through every layer, a mean-squared-error
    loss against `target` (returned), backward through every layer, each followed by Adam on
    that layer's parameters (updated in place; its gradients die at once). Layer i's
    parameters are the arguments `l{i}_<name>` (with `m_`/`v_` optimizer state). The module
    holds @layer_forward, @layer_backward and @layer_adam once, called once per layer from
    @gpt_step. The data axes default to 'dp' and the tensor axes to 'tp' where the mesh has
    them. Without the optimizer the step returns the loss, the gradient of the input `dx` and
    every layer's parameter gradients `l{i}_d<name>` (reduced over the data axes), for
    checking gradients."""
    if layout is not None:
        check_layout_fits(layout, list(mesh) if mesh is not None else ["dp", "tp"])
        if data_axes is not None or tensor_axes is not None:
            raise CcoptError(
                "a layout places every tensor: data_axes and tensor_axes apply only without one"
            )
    if isinstance(mesh, str):  # `"dp=2,tp=2"`, as every other API and --mesh take it
        from ccopt.program import parse_mesh_spec

        mesh = parse_mesh_spec(mesh)
    if layout is not None and layout.is_open:
        # ops are built on concrete types: build the replicated step, then open it
        axes = list(mesh) if mesh is not None else ["dp", "tp"]
        step = gpt_step(
            model,
            mesh,
            layers=layers,
            batch=batch,
            seq=seq,
            layout=Layout.replicated_everywhere(axes),
            dtype=dtype,
            with_optimizer=with_optimizer,
        )
        open_placements(step.module, layout)
        return step
    if isinstance(model, str) and model not in MODELS:
        raise CcoptError(f"unknown model '{model}' (one of {', '.join(MODELS)})")
    if dtype not in FLOAT_DTYPES:
        raise CcoptError(f"a GPT computes in a float type ({', '.join(FLOAT_DTYPES)}), not {dtype}")
    shape = MODELS[model] if isinstance(model, str) else model
    shape = replace(
        shape,
        layers=layers if layers is not None else shape.layers,
        batch=batch if batch is not None else shape.batch,
        seq=seq if seq is not None else shape.seq,
    )
    axes = dict(mesh) if mesh is not None else {"dp": 2, "tp": 2}
    p = Program("gpt_step", "m", **axes)
    if layout is None:  # by default 'dp' and 'tp', where the mesh has them
        data = axis_list(data_axes) if data_axes is not None else [a for a in ("dp",) if a in axes]
        tensor = (
            axis_list(tensor_axes) if tensor_axes is not None else [a for a in ("tp",) if a in axes]
        )
        layout = Layout.megatron(list(axes), data, tensor)
    builder = LayerBuilder(p, shape, layout, dtype)
    forward, backward = builder.forward_function(), builder.backward_function()

    x = builder.activation(p, "x")
    target = builder.activation(p, "target")
    mask = builder.mask(p)
    params = [builder.parameters(p, f"l{i}_") for i in range(shape.layers)]
    if with_optimizer:
        optimizer = builder.optimizer_function(backward.results[1:])
        state = [
            (builder.parameters(p, f"l{i}_m_"), builder.parameters(p, f"l{i}_v_", positive=True))
            for i in range(shape.layers)
        ]
        lr = p.input("lr", [], dtype, *layout.replicated)
        t = p.input("t", [], dtype, *layout.replicated, positive=True)

    inputs = [x]
    for w in params:
        (y,) = p.call(forward, inputs[-1], *w.values(), mask)
        inputs.append(y)
    y = inputs.pop()
    count = shape.batch * shape.seq * shape.hidden
    diff = y - target
    loss = redistribute(p, (diff * diff).sum([0, 1, 2]) * (0.5 / count), layout.replicated)
    dy = diff * (1.0 / count)
    grads: list[list[Tensor]] = [[] for _ in params]
    for i in reversed(range(shape.layers)):
        dy, *grads[i] = p.call(backward, inputs[i], *params[i].values(), mask, dy)
        if with_optimizer:  # right away: the layer's parameters are not read again
            m, v = state[i]
            p.call(optimizer, *params[i].values(), *grads[i], *m.values(), *v.values(), lr, t)
    if not with_optimizer:
        reduced = [
            redistribute(p, g, layout.parameter(n)).named(f"l{i}_d{n}")
            for i, layer in enumerate(grads)
            for n, g in zip(PARAMETERS, layer, strict=True)
        ]
        p.returns(loss.named("loss"), dy.named("dx"), *reduced)
        return p
    p.returns(loss.named("loss"))
    return p


def axis_list(axes: str | Sequence[str]) -> list[str]:
    """A role's axes; one name alone (`data_axes="dp"`) is that axis, not its letters."""
    return [axes] if isinstance(axes, str) else list(axes)


def check_layout_fits(layout: Layout, axes: Sequence[str]) -> None:
    """A layout has one placement per mesh axis in every class: one written for another mesh
    would fail on the first op, or (opened) in the verifier, far from the cause."""
    counts = {len(placements) for placements in layout.classes}
    if counts != {len(axes)}:
        given = " or ".join(str(n) for n in sorted(counts))
        raise CcoptError(
            f"the layout gives {given} placements per tensor, the mesh has {len(axes)} axes "
            f"({', '.join(axes)})"
        )


def open_placements(module: ModuleOp, layout: Layout) -> None:
    """Open a fully replicated GPT step (no collectives: every op's meaning is placement-free):
    each function argument takes its class's placements from `layout` (`?` where open, given
    otherwise), every op result and function result becomes `?` on every axis, so `auto-shard`
    chooses the whole layout and inserts the conversions it needs."""
    from xdsl.dialects import func
    from xdsl.dialects.builtin import FunctionType
    from xdsl.rewriter import Rewriter

    from ccopt.verifier import verify_module

    def opened(t: object) -> object:
        if isinstance(t, DTensorType):
            return t.with_placements(OPEN for _ in t.placement_list)
        return t

    rewriter = Rewriter()
    functions = [op for op in module.ops if isinstance(op, func.FuncOp)]
    for f in functions:
        block = f.body.block
        for arg in list(block.args):
            if isinstance(arg.type, DTensorType):
                new = arg.type.with_placements(layout.argument(arg.name_hint or ""))
                rewriter.replace_value_with_new_type(arg, new)
        for op in block.ops:
            for r in list(op.results):
                if isinstance(r.type, DTensorType):
                    rewriter.replace_value_with_new_type(r, opened(r.type))
        ret = block.last_op
        assert isinstance(ret, func.ReturnOp)
        f.function_type = FunctionType.from_lists(
            [a.type for a in block.args], [v.type for v in ret.operands]
        )
    verify_module(module)


def causal_mask(seq: int, dtype: str = "float32") -> object:
    """The additive causal mask: 0 on and below the diagonal, -1e9 above (a large negative
    number rather than -inf keeps fully masked rows finite; f16, whose largest number is 65504,
    gets half its most negative one, so that adding a score stays finite). `dtype` is a GPT's
    (`f16`, `bf16`, `f32`, `f64`: numpy reads `f16` as a 16-byte float) or a numpy dtype."""
    import ml_dtypes
    import numpy as np

    from ccopt.frontend.program import dtype_of
    from ccopt.interpreters.distributed import numpy_dtype

    np_dtype = numpy_dtype(dtype_of(dtype)) if dtype in FLOAT_DTYPES else np.dtype(dtype)
    fill = max(-1e9, float(ml_dtypes.finfo(np_dtype).min) / 2)
    return np.triu(np.full((seq, seq), fill, dtype=np_dtype), 1)


def _axes_option(given: str | None, default: str, mesh: Mapping[str, int]) -> list[str]:
    """The axes of --data or --tensor: as given ('' for none; ValueError for an empty name
    between commas), else the default axis where the mesh has it."""
    if given is None:
        return [default] if default in mesh else []
    axes = [a.strip() for a in given.split(",")]
    if given.strip() and not all(axes):
        raise ValueError(f"--data/--tensor: an empty axis in '{given}'")
    return [a for a in axes if a]


def main(argv: Sequence[str] | None = None) -> int:
    """`python -m ccopt.frontend.gpt`: print (or write) a GPT training step's IR."""
    import argparse

    from ccopt.files import write_atomic
    from ccopt.program import parse_mesh_spec

    parser = argparse.ArgumentParser(prog="python -m ccopt.frontend.gpt", description=main.__doc__)
    parser.add_argument("--model", default="tiny", choices=list(MODELS))
    parser.add_argument("--mesh", default="dp=2,tp=2", help="axes, e.g. dp=8,tp=8")
    parser.add_argument("--layers", type=int, help="override the model's layer count")
    parser.add_argument("--batch", type=int, help="global batch (samples per step)")
    parser.add_argument("--seq", type=int, help="sequence length")
    parser.add_argument("--dtype", default="f32", choices=FLOAT_DTYPES)
    parser.add_argument(
        "--open",
        action="store_true",
        help="leave every placement open (`?`) for auto-shard to choose",
    )
    parser.add_argument(
        "--data", metavar="AXES", help="data-parallel mesh axes, comma-separated (default: dp)"
    )
    parser.add_argument(
        "--tensor", metavar="AXES", help="tensor-parallel mesh axes, comma-separated (default: tp)"
    )
    parser.add_argument("-o", "--output", help="write here instead of stdout")
    args = parser.parse_args(argv)
    try:
        mesh = parse_mesh_spec(args.mesh)
    except CcoptError as e:
        parser.error(f"--mesh: {e}")
    try:
        data = _axes_option(args.data, "dp", mesh)
        tensor = _axes_option(args.tensor, "tp", mesh)
    except ValueError as e:
        parser.error(str(e))
    if args.open and (args.data or args.tensor):
        parser.error(
            "--open leaves every placement to auto-shard: --data and --tensor do not apply"
        )
    unknown = [a for a in (*data, *tensor) if a not in mesh]
    if unknown:
        parser.error(
            f"--data/--tensor: no mesh axis {', '.join(unknown)} (axes: {', '.join(mesh)})"
        )
    both = ", ".join(sorted(set(data) & set(tensor)))
    if both and (args.data is None or args.tensor is None):
        given, default = ("--data", "--tensor") if args.tensor is None else ("--tensor", "--data")
        parser.error(
            f"{given} names {both}, which {default} takes by default: give {default} too "
            f"({default} '' for none)"
        )
    if both:
        parser.error(f"--data/--tensor: {both} named in both")
    unused = [a for a in mesh if a not in (*data, *tensor)]
    if unused and not args.open:
        print(
            f"warning: mesh axes {', '.join(unused)} are neither data- nor tensor-parallel: "
            "every tensor is replicated over them (name them with --data/--tensor, or --open "
            "leaves the placements to auto-shard)",
            file=sys.stderr,
        )
    try:
        step = gpt_step(
            args.model,
            mesh,
            layers=args.layers,
            batch=args.batch,
            seq=args.seq,
            dtype=args.dtype,
            layout=Layout.open(list(mesh)) if args.open else None,
            data_axes=None if args.open else data,  # (open: auto-shard gives the roles)
            tensor_axes=None if args.open else tensor,
        )
        text = str(step.module) + "\n"
        if args.output:
            write_atomic(args.output, text)
        else:
            print(text, end="")
    except CcoptError as e:  # also an output that cannot be written (OutputError)
        parser.exit(1, f"error: {e}\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
