"""The sched dialect (L2): streams, asynchronous regions with tokens, futures and waits.

L1 says *what* is computed; L2 also says *what runs concurrently*. A function body runs on the
compute stream 0. `sched.execute` runs its region asynchronously on another stream, after the
tokens it depends on and after its inputs are ready; it returns a token and one future per
result. `sched.await` makes the enclosing stream wait for a future and gives its value;
`sched.wait` waits for tokens. Ops on one stream run in program order.

The overlap pass produces this level; the CUDA backend maps streams to cudaStreams and tokens and
futures to events (no spin-waiting kernels), and the simulator reads it to predict time:

```mlir
%y0 = dtensor.matmul %x0, %w : ...
%t0, %f0 = sched.execute stream 1 ins(%y0) : (!partial) -> !sched.future<!rep> {
^bb0(%a: !partial):
  %r = coll.all_reduce sum %a over [tp] : !partial -> !rep
  sched.yield %r : !rep
}
%y1 = dtensor.matmul %x1, %w : ...     // runs on stream 0 while chunk 0 is reduced on stream 1
...
%r0 = sched.await %f0 : !sched.future<!rep> -> !rep
```
"""

from __future__ import annotations

from collections.abc import Sequence

from xdsl.dialects.builtin import I64, IntegerAttr
from xdsl.ir import (
    Attribute,
    Dialect,
    ParametrizedAttribute,
    Region,
    SSAValue,
    TypeAttribute,
)
from xdsl.irdl import (
    AttrSizedOperandSegments,
    IRDLOperation,
    irdl_attr_definition,
    irdl_op_definition,
    lazy_traits_def,
    operand_def,
    prop_def,
    region_def,
    result_def,
    var_operand_def,
    var_result_def,
)
from xdsl.traits import HasParent, IsTerminator
from xdsl.utils.exceptions import VerifyException

from ccopt.dialects.attrs import i64_attr, uniqued
from ccopt.dialects.construct import init_op
from ccopt.dialects.syntax import fast_syntax

COMPUTE_STREAM = 0
"""The stream a function body runs on."""


@uniqued
@irdl_attr_definition
class TokenType(ParametrizedAttribute, TypeAttribute):
    """Completion of an asynchronous region (an event, on the GPU)."""

    name = "sched.token"


@uniqued
@irdl_attr_definition
class FutureType(ParametrizedAttribute, TypeAttribute):
    """A value an asynchronous region will produce; read it with sched.await."""

    name = "sched.future"
    value_type: Attribute

    def __init__(self, value_type: Attribute):
        super().__init__(value_type)


@irdl_op_definition
class ExecuteOp(IRDLOperation):
    """Run the region asynchronously on `stream` once `deps` and `inputs` are ready."""

    name = "sched.execute"
    stream = prop_def(IntegerAttr[I64])
    deps = var_operand_def(TokenType)
    inputs = var_operand_def()
    token = result_def(TokenType)
    futures = var_result_def(FutureType)
    body = region_def("single_block")
    irdl_options = (AttrSizedOperandSegments(as_property=True),)
    assembly_format = (
        "`stream` $stream (`deps` `(` $deps^ `)`)? `ins` `(` $inputs `)` attr-dict `:` "
        "functional-type($inputs, $futures) $body"
    )

    def __init__(
        self,
        stream: int,
        inputs: Sequence[SSAValue],
        result_types: Sequence[Attribute],
        body: Region,
        deps: Sequence[SSAValue] = (),
    ):
        init_op(
            self,
            operands=[list(deps), list(inputs)],
            result_types=[TokenType(), [FutureType(t) for t in result_types]],
            properties={"stream": i64_attr(stream)},
            regions=[body],
        )

    def verify_(self) -> None:
        if self.stream.value.data < 0:
            raise VerifyException(f"stream must be >= 0, got {self.stream.value.data}")
        block = self.body.blocks.first
        assert block is not None
        arg_types = [a.type for a in block.args]
        input_types = [v.type for v in self.inputs]
        if arg_types != input_types:
            raise VerifyException(
                f"the region takes {_types(arg_types)} but the inputs are {_types(input_types)}"
            )
        terminator = block.last_op
        if not isinstance(terminator, YieldOp):
            raise VerifyException("the region must end with sched.yield")
        yielded = [v.type for v in terminator.values]
        promised = [f.type.value_type for f in self.futures]  # type: ignore[union-attr]
        if yielded != promised:
            raise VerifyException(
                f"the region yields {_types(yielded)} but the futures hold {_types(promised)}"
            )


def _types(types: Sequence[Attribute]) -> str:
    return "[" + ", ".join(str(t) for t in types) + "]"


@irdl_op_definition
class YieldOp(IRDLOperation):
    """The values an asynchronous region produces."""

    name = "sched.yield"
    values = var_operand_def()
    traits = lazy_traits_def(lambda: (IsTerminator(), HasParent(ExecuteOp)))
    assembly_format = "($values^ `:` type($values))? attr-dict"

    def __init__(self, *values: SSAValue):
        init_op(self, operands=[list(values)])


@irdl_op_definition
class AwaitOp(IRDLOperation):
    """Wait (on the enclosing stream) until a future is ready, and take its value."""

    name = "sched.await"
    future = operand_def(FutureType)
    result = result_def()
    assembly_format = "$future attr-dict `:` type($future) `->` type($result)"

    def __init__(self, future: SSAValue):
        assert isinstance(future.type, FutureType)
        init_op(self, operands=[future], result_types=[future.type.value_type])

    def verify_(self) -> None:
        t = self.future.type
        assert isinstance(t, FutureType)
        if self.result.type != t.value_type:
            raise VerifyException(f"awaiting {t} gives {t.value_type}, not {self.result.type}")


@irdl_op_definition
class WaitOp(IRDLOperation):
    """Wait (on the enclosing stream) until the tokens' regions have completed."""

    name = "sched.wait"
    tokens = var_operand_def(TokenType)
    assembly_format = "$tokens attr-dict"

    def __init__(self, tokens: Sequence[SSAValue]):
        init_op(self, operands=[list(tokens)])


Sched = Dialect("sched", [ExecuteOp, YieldOp, AwaitOp, WaitOp], [TokenType, FutureType])
fast_syntax(Sched)  # (cheaper parsing of its ops: ccopt.dialects.syntax)
