"""The pass catalog that `ccopt --help` reads: in sync with the pass classes, and every pass and
option documented."""

from __future__ import annotations

import pytest

from ccopt.passes import BUILTIN_PASSES, describe, pass_help
from ccopt.passes.catalog import CATALOG
from ccopt.passes.make_catalog import CATALOG_FILE, render


def test_catalog_is_generated_from_the_current_pass_classes() -> None:
    assert CATALOG_FILE.read_text() == render(), (
        "passes/catalog.py is out of date: run python -m ccopt.passes.make_catalog"
    )
    assert CATALOG == {name: describe(load()) for name, load in BUILTIN_PASSES.items()}


@pytest.mark.parametrize("name", BUILTIN_PASSES)
def test_every_pass_has_a_one_sentence_summary_and_every_option_a_meaning(name: str) -> None:
    info = CATALOG[name]
    assert info.summary.endswith("."), f"{name}: summary is not a sentence: {info.summary!r}"
    for option in info.options:
        assert option.meaning.endswith("."), f"{name}{{{option.name}}} has no meaning"


def test_options_show_their_kind_and_default() -> None:
    options = {o.name: o for o in CATALOG["overlap"].options}
    assert options["chunks"][:3] == ("chunks", "int", "4")
    assert options["tags"][:3] == ("tags", "str,...", "")
    assert CATALOG["plan-memory"].options[0][:3] == ("reuse", "bool", "true")
    assert CATALOG["split-all-reduce"].options[0][:3] == ("dim", "int", "")


def test_pass_help_wraps_summaries_under_their_pass() -> None:
    lines = pass_help(60).splitlines()
    assert all(len(line) <= 60 for line in lines), lines
    start = next(i for i, line in enumerate(lines) if line.startswith("  plan-memory "))
    end = next(i for i, line in enumerate(lines) if line.startswith("    reuse=<bool> "))
    summary = " ".join(" ".join(line.split()) for line in lines[start:end])
    assert summary == "plan-memory " + CATALOG["plan-memory"].summary


def test_help_spells_options_as_mlir_does() -> None:
    """Options show in kebab-case (`inline{max-ops=...}`, `overlap{per-rank=...}`), as
    mlir-opt spells them and README writes them; the pipeline parser takes either spelling."""
    text = pass_help(100)
    assert "max-ops=<int>" in text and "per-rank=<bool>" in text
    assert "max_ops" not in text and "per_rank" not in text
