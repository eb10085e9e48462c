"""The mutation fuzzer in CI: a few hundred mutants of the examples and lit inputs through
`ccopt`, `ccopt -p` and `ccopt-run --check-pipeline`, with no crash and no hang. Longer runs
(10,000 mutants and more) are `python test/fuzz/fuzz_tools.py --mutants N --seed S`."""

from __future__ import annotations

import random

from fuzz.fuzz_tools import MUTATORS, SEMANTIC, crash_signature, fuzz, seeds, unrunnable


def test_mutants_never_crash_or_hang_the_tools() -> None:
    report = fuzz(mutants=400, seed=20261124, seconds=60.0, run_share=0.25)
    assert not report.failures, "\n".join(
        f"{crash_signature(f)} (seed {f.seed}: {' '.join(f.command)})" for f in report.failures
    )
    accepted = sum(n for (_, outcome), n in report.outcomes.items() if outcome == "accepted")
    assert accepted > 100, f"too few mutants got past the verifier: {report.outcomes}"


def test_mutants_of_algorithm_network_system_and_machine_files_never_crash_the_tools() -> None:
    """MSCCL XML, ASTRA-sim YAML/JSON and machine files: a stranger's sweep found tracebacks in
    each reader (numbers past 64 bits, NaN in integer keys, a peer outside the network)."""
    report = fuzz(mutants=300, seed=20261128, seconds=60.0, format_share=1.0)
    assert not report.failures, "\n".join(
        f"{crash_signature(f)} (seed {f.seed}: {' '.join(f.command)})" for f in report.failures
    )
    tools = {command.split()[0] for (command, outcome) in report.outcomes if outcome == "accepted"}
    assert tools == {"ccopt", "ccopt-run", "ccopt-sim"}, report.outcomes


def test_every_mutator_changes_some_seed() -> None:
    rng = random.Random(0)
    pool = seeds()
    for mutator in {*MUTATORS, *SEMANTIC}:
        assert any(mutator(text, rng) != text for _, text in pool[:40]), mutator.__name__


def test_seeds_too_large_to_interpret_are_known_seeds() -> None:
    names = {name for name, _ in seeds()}
    too_large = unrunnable()
    assert too_large and too_large <= names
