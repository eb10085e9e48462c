"""Reference semantics of the sched dialect: asynchronous regions run at once, in program order.

Concurrency never changes a result in ccopt's IR (every region's inputs are explicit), so the
reference interpreter runs each `sched.execute` when it is reached; futures and tokens only
check that values are awaited before they are used.
"""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.interpreter import (
    Interpreter,
    InterpreterFunctions,
    PythonValues,
    ReturnedValues,
    TerminatorValue,
    impl,
    impl_terminator,
    register_impls,
)

from ccopt.dialects import sched


@dataclass(frozen=True)
class Token:
    """A completed asynchronous region."""


@dataclass(frozen=True)
class Future:
    """The value of an asynchronous region, readable through sched.await."""

    value: object


@register_impls
class SchedFunctions(InterpreterFunctions):
    @impl(sched.ExecuteOp)
    def run_execute(
        self, interpreter: Interpreter, op: sched.ExecuteOp, args: PythonValues
    ) -> PythonValues:
        inputs = args[len(op.deps) :]
        values = interpreter.run_ssacfg_region(op.body, tuple(inputs), "sched.execute")
        return (Token(), *(Future(v) for v in values))

    @impl_terminator(sched.YieldOp)
    def run_yield(
        self, interpreter: Interpreter, op: sched.YieldOp, args: PythonValues
    ) -> tuple[TerminatorValue, PythonValues]:
        return ReturnedValues(args), ()

    @impl(sched.AwaitOp)
    def run_await(
        self, interpreter: Interpreter, op: sched.AwaitOp, args: PythonValues
    ) -> PythonValues:
        (future,) = args
        assert isinstance(future, Future)
        return (future.value,)

    @impl(sched.WaitOp)
    def run_wait(
        self, interpreter: Interpreter, op: sched.WaitOp, args: PythonValues
    ) -> PythonValues:
        return ()
