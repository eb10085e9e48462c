"""`check_options`: a pass's or target's options checked in the command line's words before xDSL
builds it (xDSL's messages named the Python field and type: `per_rank`, `<class 'int'>`)."""

from __future__ import annotations

from dataclasses import dataclass

import pytest
from xdsl.passes import ModulePass

from ccopt.passes.options import check_options


@dataclass(frozen=True)
class Example(ModulePass):
    name = "example"
    chunks: int = 2
    tags: tuple[str, ...] = ()
    per_rank: bool = False
    scale: float | int = 1.0
    limit: int | None = None
    factor: float = 1.0


@pytest.mark.parametrize(
    "given, message",
    [
        ({"chunk": (3,)}, "example: unknown option 'chunk' (options: chunks, tags, per-rank, "),
        ({"chunk": (3,)}, "did you mean 'chunks'?"),
        ({"chunks": ("x",)}, "example: option 'chunks' takes an integer, got x"),
        ({"chunks": (2, 3)}, "takes an integer, got 2,3"),
        ({"chunks": (True,)}, "takes an integer, got true"),
        ({"per_rank": ("maybe",)}, "option 'per-rank' takes true or false, got maybe"),
        (
            {"tags": (7,)},
            "takes a list of names (a,b), got 7 (quote a name that reads as a number)",
        ),
        ({"scale": ("big",)}, "option 'scale' takes a number, got big"),
        ({"limit": ()}, "option 'limit' takes an integer, got nothing"),
        # `factor="2"`: "takes a number, got 2" read as a contradiction
        ({"factor": ("2",)}, 'takes a number, got "2" (a quoted string: write the number'),
        ({"chunks": ("3",)}, 'takes an integer, got "3" (a quoted string'),
        # `factor=1e400` is inf, which printed IR that does not parse again
        ({"factor": (float("inf"),)}, "option 'factor' takes finite numbers"),
        ({"scale": (float("-inf"),)}, "option 'scale' takes finite numbers"),
        ({"factor": ("nan",)}, "option 'factor' takes a number, got nan"),
    ],
)
def test_refusals_say_what_the_option_takes(given: dict, message: str) -> None:
    with pytest.raises(ValueError) as raised:
        check_options("example", Example, given)
    assert message in str(raised.value)


def test_values_of_the_right_kind_pass_unchanged() -> None:
    given = {"chunks": (4,), "tags": ("a", "b"), "per-rank": (False,), "scale": (2,), "limit": (3,)}
    assert check_options("example", Example, given) == given


def test_a_whole_number_is_a_float_only_where_the_option_is_typed_float() -> None:
    """xDSL refused `factor=2` for a `float` option; a `float | int` option keeps its int."""
    checked = check_options("example", Example, {"factor": (2,), "scale": (2,)})
    assert checked == {"factor": (2.0,), "scale": (2,)}
    assert isinstance(checked["factor"][0], float) and isinstance(checked["scale"][0], int)


def test_a_bare_boolean_is_true_for_passes_only() -> None:
    assert check_options("example", Example, {"per-rank": ()}) == {"per-rank": (True,)}
    with pytest.raises(ValueError, match="takes true or false, got nothing"):
        check_options("example", Example, {"per-rank": ()}, bare_true=False)


def test_annotations_that_do_not_resolve_are_left_to_xdsl() -> None:
    """A plugin's pass annotated with a name its module does not define: nothing is checked
    here (xDSL reports what it can), rather than a NameError traceback."""

    @dataclass(frozen=True)
    class Unresolved(ModulePass):
        name = "unresolved"
        knob: NoSuchType = None  # type: ignore[name-defined]  # noqa: F821

    assert check_options("unresolved", Unresolved, {"knob": (1,)}) == {"knob": (1,)}
