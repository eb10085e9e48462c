"""A seeded mutation fuzzer for ccopt's tools: no input may crash them or make them hang.

Seeds are every `.mlir` under examples/ and test/ (each `// -----` chunk on its own). A mutant is a
seed with a few small edits (a token replaced by another of the file or by a nasty value, a span or
line deleted, duplicated or swapped, a sigil inserted, the text truncated, a byte made non-UTF-8).
Each mutant goes through `ccopt FILE` (parse, verify, print), `ccopt FILE -p PIPELINE` with a
random pipeline, and sometimes `ccopt-run FILE --check-pipeline PIPELINE`, all in-process; with
`--emit-share`, some are also lowered and emitted as CUDA and simulated (`ccopt-sim`). With
`--format-share`, that share of mutants are of the other files users give the tools instead:
MSCCL XML algorithms (read, proven by `ccopt-run`, exported as XML and as Chakra traces that are
read back, timed by `ccopt-sim`), ASTRA-sim network YAML and system JSON (`ccopt-sim
--collective`) and machine files (`ccopt-sim PROGRAM --machine`). Exit status 0 or 1 is an
answer; a Python exception escaping a tool's `main` is a crash, and a run
longer than the time limit is a hang. The test suite runs a few hundred mutants; longer runs:

    python test/fuzz/fuzz_tools.py --mutants 10000 --seed 1 --save /tmp/crashes
"""

from __future__ import annotations

import argparse
import contextlib
import io
import random
import re
import signal
import sys
import tempfile
import time
import traceback
from collections import Counter
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
SPLIT_MARKER = "// -----"

PIPELINES = (
    "cse,dce",
    "canonicalize",
    "split-all-reduce",
    "split-all-reduce,reorder-elementwise",
    "split-all-reduce,reorder-elementwise,slice-state",
    "split-all-reduce,reorder-elementwise,sliced-norm",
    "split-all-reduce,reorder-elementwise,fuse-elementwise",
    "fuse-elementwise",
    "fuse-collective",
    "split-all-reduce,reorder-elementwise,fuse-elementwise,overlap{chunks=3}",
    "overlap{chunks=2}",
    "split-all-reduce,reorder-elementwise,fuse-collective,overlap{chunks=2 per-rank=true}",
    "pipeline-p2p",
    "autotune{chunks=1,2 window=2}",
    "auto-shard{strategy=dp}",
    "auto-shard{strategy=ilp objective=time overlap=2}",
    "auto-shard{strategy=cd objective=time}",
    "inline",
    "inline,convert-to-kernel",
    "inline,convert-to-kernel,plan-memory",
    "split-all-reduce,reorder-elementwise,fuse-elementwise,overlap{chunks=2},inline,convert-to-kernel,plan-memory",
)

NASTY = (
    "0",
    "1",
    "-1",
    "3",
    "99999999",
    "9223372036854775808",
    "99999999999999999999",
    "?",
    "",
    "!",
    "#",
    "^",
    "%",
    "@",
    "f16",
    "i1",
    "i64",
    "R",
    "V",
    "S(0)",
    "S(9)",
    "P(sum)",
    "P(max)",
    "tp",
    "dp",
    "@m",
    "@nowhere",
    "%undefined",
    "^bb1",
    "!sched.future",
    "!kernel.event",
    "1e309",
    "nan",
    "NaN",
    "Infinity",
    "0x7f",
    '"str"',
    "{}",
    "<>",
    "()",
    "[]",
)

TOKEN = re.compile(
    r'"(?:[^"\\\n]|\\.)*"|[%@^!#]?[A-Za-z_$.][\w$.-]*|-?\d+(?:\.\d+)?(?:[eE][-+]?\d+)?|->|\S'
)


def seeds(root: Path = ROOT) -> list[tuple[str, str]]:
    """(name, text) of every `.mlir` chunk under examples/ and test/, without comment lines
    (edits there would test nothing). Chunks of `*_invalid` files hold errors by design: the
    valid chunks are repeated so that three mutants in four start from a valid program."""
    valid: list[tuple[str, str]] = []
    invalid: list[tuple[str, str]] = []
    for path in sorted([*root.glob("examples/**/*.mlir"), *root.glob("test/**/*.mlir")]):
        if "Output" in path.parts:
            continue
        for i, chunk in enumerate(path.read_text().split(SPLIT_MARKER)):
            code = "\n".join(
                line for line in chunk.splitlines() if not line.lstrip().startswith("//")
            )
            if code.strip():
                kind = invalid if "invalid" in path.name else valid
                kind.append((f"{path.relative_to(root)}#{i}", code))
    return invalid + valid * max(1, -(-3 * len(invalid) // max(len(valid), 1)))


def _tokens(text: str) -> list[re.Match[str]]:
    return list(TOKEN.finditer(text))


def replace_token(text: str, rng: random.Random) -> str:
    tokens = _tokens(text)
    if not tokens:
        return text
    victim = rng.choice(tokens)
    pool = NASTY if rng.random() < 0.5 else [t.group() for t in tokens]
    return text[: victim.start()] + rng.choice(pool) + text[victim.end() :]


def replace_everywhere(text: str, rng: random.Random) -> str:
    """Every occurrence of one token at once (a mesh size, an element type, a placement in a
    type alias): mutants that still type-check reach the passes and the interpreter."""
    tokens = _tokens(text)
    if not tokens:
        return text
    old = rng.choice(tokens).group()
    pool = NASTY if rng.random() < 0.5 else [t.group() for t in tokens]
    new = rng.choice(pool)
    return TOKEN.sub(lambda m: new if m.group() == old else m.group(), text)


def resize_numbers(text: str, rng: random.Random) -> str:
    """One number, everywhere it occurs, becomes a small neighbour or a power of two: shapes
    and mesh sizes change consistently (uneven splits, empty blocks, single ranks)."""
    numbers = sorted({m.group() for m in re.finditer(r"(?<![\w.])\d+(?![\w.])", text)})
    if not numbers:
        return text
    old = rng.choice(numbers)
    new = str(
        max(0, int(old) + rng.choice((-1, 1, 2)))
        if rng.random() < 0.6
        else rng.choice((1, 2, 3, 8, 64))
    )
    return re.sub(rf"(?<![\w.]){old}(?![\w.])", new, text)


PLACEMENTS = ("R", "V", "S(0)", "S(1)", "S(2)", "P(sum)", "P(max)")
ELEMENT_TYPES = ("f16", "bf16", "f32", "f64", "i1", "i32", "i64")
PLACEMENT = re.compile(r"(?<=[\[ ,])(?:R|V|S\(\d+\)|P\(\w+\))(?=[\],])")


def repartition(text: str, rng: random.Random) -> str:
    """One placement or element type becomes another wherever it occurs: the programs stay
    well-formed and often well-typed, and reach the passes' preconditions."""
    if rng.random() < 0.7:
        found = sorted(set(PLACEMENT.findall(text)))
        if found:
            old, new = rng.choice(found), rng.choice(PLACEMENTS)
            return PLACEMENT.sub(lambda m: new if m.group() == old else m.group(), text)
    old, new = rng.choice(ELEMENT_TYPES), rng.choice(ELEMENT_TYPES)
    return re.sub(rf"\b{old}\b", new, text)


def swap_tokens(text: str, rng: random.Random) -> str:
    tokens = _tokens(text)
    if len(tokens) < 2:
        return text
    a, b = sorted(rng.sample(tokens, 2), key=lambda m: m.start())
    return text[: a.start()] + b.group() + text[a.end() : b.start()] + a.group() + text[b.end() :]


def delete_span(text: str, rng: random.Random) -> str:
    if not text:
        return text
    start = rng.randrange(len(text))
    return text[:start] + text[start + rng.randint(1, 24) :]


def _lines(text: str) -> list[str]:
    return text.split("\n")


def delete_line(text: str, rng: random.Random) -> str:
    lines = _lines(text)
    del lines[rng.randrange(len(lines))]
    return "\n".join(lines)


def duplicate_line(text: str, rng: random.Random) -> str:
    lines = _lines(text)
    i = rng.randrange(len(lines))
    lines.insert(rng.randrange(len(lines) + 1), lines[i])
    return "\n".join(lines)


def swap_lines(text: str, rng: random.Random) -> str:
    lines = _lines(text)
    i, j = rng.randrange(len(lines)), rng.randrange(len(lines))
    lines[i], lines[j] = lines[j], lines[i]
    return "\n".join(lines)


def insert_sigil(text: str, rng: random.Random) -> str:
    at = rng.randrange(len(text) + 1)
    return text[:at] + rng.choice("!#^%@<>(){}[],:=\"'\\\x00") + text[at:]


def truncate(text: str, rng: random.Random) -> str:
    return text[: rng.randrange(len(text) + 1)]


MUTATORS: tuple[Callable[[str, random.Random], str], ...] = (
    replace_token,
    replace_token,
    replace_everywhere,
    resize_numbers,
    repartition,
    swap_tokens,
    delete_span,
    delete_line,
    duplicate_line,
    swap_lines,
    insert_sigil,
    truncate,
)


SEMANTIC: tuple[Callable[[str, random.Random], str], ...] = (resize_numbers, repartition)


def mutate(text: str, rng: random.Random) -> bytes:
    """Half the time one edit that keeps the syntax (sizes, placements, element types), else one
    to three edits of any kind; now and then a byte that is not UTF-8."""
    if rng.random() < 0.5:
        text = rng.choice(SEMANTIC)(text, rng)
    else:
        for _ in range(rng.choice((1, 1, 2, 3))):
            text = rng.choice(MUTATORS)(text, rng)
    data = text.encode()
    if rng.random() < 0.01:
        at = rng.randrange(len(data) + 1)
        data = data[:at] + b"\xff\xfe" + data[at:]
    return data


class Hang(Exception):
    """A tool ran longer than the fuzzer's time limit."""


@contextlib.contextmanager
def time_limit(seconds: float) -> Iterator[None]:
    def expire(signum: int, frame: object) -> None:
        raise Hang(f"no answer after {seconds:g} s")

    previous = signal.signal(signal.SIGALRM, expire)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


@dataclass
class Failure:
    seed: str
    command: list[str]
    kind: str  # "crash" or "hang"
    detail: str
    mutant: bytes = field(repr=False)


def call_tool(
    main: Callable[[Sequence[str]], int], argv: list[str], seconds: float
) -> tuple[str, str]:
    """Run a tool's `main` in-process: ("accepted" | "rejected", "") for an answer (exit status
    0 or not), ("crash", traceback) for an exception escaping it; Hang when it takes too long."""
    out, err = io.StringIO(), io.StringIO()
    try:
        with time_limit(seconds), contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            status = main(argv)
    except SystemExit as e:
        status = e.code
    except Hang:
        raise
    except BaseException:  # noqa: BLE001 - a crash is exactly what the fuzzer looks for
        return "crash", traceback.format_exc()
    if "Traceback (most recent call last)" in err.getvalue():
        return "crash", err.getvalue()
    return ("accepted" if status in (0, None) else "rejected"), ""


LOWERINGS = (
    "inline,convert-to-kernel,plan-memory",
    "split-all-reduce,reorder-elementwise,fuse-elementwise,overlap{chunks=2},inline,"
    "convert-to-kernel,plan-memory",
    "split-all-reduce,reorder-elementwise,fuse-elementwise,fuse-collective,inline,"
    "convert-to-kernel,plan-memory",
)
"""Pipelines to the kernel level, for the emitting and simulating commands (`emit_share`)."""

MACHINES = ("dgx-a100", "dgx-h100", "dgx2-v100")


def commands(
    path: str, rng: random.Random, run_share: float, runnable: bool = True, emit_share: float = 0.0
) -> list[list[str]]:
    """The tool invocations for one mutant: ccopt, ccopt -p, sometimes ccopt-run - never for a
    mutant of a seed too large to interpret (`runnable` False: the draws are made all the same,
    so the other mutants stay what they were). With `emit_share`, that share of mutants is also
    lowered and emitted as CUDA (`ccopt -p LOWERING -t cuda`) and simulated as given and
    lowered (`ccopt-sim`; not the seeds too large to interpret either)."""
    out = [["ccopt", path], ["ccopt", path, "-p", rng.choice(PIPELINES)]]
    if rng.random() < run_share:
        run = ["ccopt-run", path, "--check-pipeline", rng.choice(PIPELINES)]
        if runnable:
            out.append(run)
    if emit_share and rng.random() < emit_share:
        lowering, machine = rng.choice(LOWERINGS), rng.choice(MACHINES)
        out.append(["ccopt", path, "-p", lowering, "-t", "cuda"])
        if runnable:
            out.append(["ccopt-sim", path, "--machine", machine])
            out.append(["ccopt-sim", path, "--machine", machine, "-p", lowering])
    return out


def label_of(command: Sequence[str]) -> str:
    """How the report counts a command: its tool, with `-p` and the target where given."""
    label = command[0] + (" -p" if "-p" in command else "")
    if "-t" in command:
        label += " -t " + command[command.index("-t") + 1]
    return label


NO_NUMERICS = re.compile(r"^// NO-NUMERICS: \S", re.MULTILINE)
"""The lit inputs' opt-out of the interpreter (test/passes/test_filecheck_numerics.py): GiBs per
simulated rank, a run takes minutes - slow, not hung."""


def unrunnable(root: Path = ROOT) -> set[str]:
    """The seeds (`seeds`' names) of files that opt out of the interpreter."""
    names = set()
    for path in sorted(root.glob("test/**/*.mlir")):
        text = path.read_text()
        if "Output" not in path.parts and NO_NUMERICS.search(text):
            chunks = len(text.split(SPLIT_MARKER))
            names.update(f"{path.relative_to(root)}#{i}" for i in range(chunks))
    return names


ASTRA = ROOT / "examples" / "astra"
FORMAT_FILES = {
    ".xml": "examples/algorithms/*.xml",
    ".yml": "examples/astra/*.yml",
    ".json": "examples/astra/*.json",
    ".machine.yml": "sim/machines/*.yml",
}
"""The non-IR inputs, by the suffix their mutants are written with."""


def format_seeds(root: Path = ROOT) -> list[tuple[str, str, str]]:
    """(name, text, suffix) of every algorithm, network, system and machine file bundled."""
    return [
        (str(path.relative_to(root)), path.read_text(), suffix)
        for suffix, pattern in FORMAT_FILES.items()
        for path in sorted(root.glob(pattern))
    ]


def format_commands(path: str, suffix: str, rng: random.Random, tmp: str) -> list[list[str]]:
    """The tool invocations that read a mutant of a non-IR file."""
    size = rng.choice(("1", "1024", "1048576", "3000000"))
    if suffix == ".xml":
        traces = f"{tmp}/traces/t"
        network = ASTRA / rng.choice(("ring_8.yml", "ring_16.yml"))
        return [
            ["ccopt", path],
            ["ccopt", path, "-t", "msccl-xml"],
            ["ccopt-run", path],
            ["ccopt", path, "-t", f"chakra{{size={size}}}", "-o", traces],
            ["ccopt", f"{traces}.0.et", "-t", "msccl-xml"],
            ["ccopt-sim", path, "--network", str(network), "--system",
             str(ASTRA / "custom_ring.json"), "--size", size],
        ]  # fmt: skip
    collective = rng.choice(("all-reduce", "reduce-scatter", "all-gather", "all-to-all"))
    if suffix == ".yml":
        return [["ccopt-sim", "--network", path, "--system", str(ASTRA / "ring.json"),
                 "--collective", collective, "--size", size]]  # fmt: skip
    if suffix == ".json":
        return [["ccopt-sim", "--network", str(ASTRA / "ring_8.yml"), "--system", path,
                 "--collective", collective, "--size", size]]  # fmt: skip
    program = ROOT / "examples" / rng.choice(("megatron_mlp.mlir", "adam.mlir"))
    return [["ccopt-sim", str(program), "--machine", path]]


@dataclass
class Report:
    failures: list[Failure] = field(default_factory=list)
    outcomes: Counter[tuple[str, str]] = field(default_factory=Counter)
    """(command, outcome) -> count: how many mutants got past parsing and verification."""


def fuzz(
    mutants: int,
    seed: int,
    seconds: float = 20.0,
    run_share: float = 0.25,
    progress: Callable[[int, int], None] | None = None,
    emit_share: float = 0.0,
    format_share: float = 0.0,
) -> Report:
    """Run `mutants` mutants of seeds drawn at random; report every crash and hang."""
    from ccopt.tools.ccopt_opt import main as ccopt_main
    from ccopt.tools.ccopt_run import main as run_main
    from ccopt.tools.ccopt_sim import main as sim_main

    tools = {"ccopt": ccopt_main, "ccopt-run": run_main, "ccopt-sim": sim_main}
    rng = random.Random(seed)
    pool = seeds()
    formats = format_seeds() if format_share else []
    too_large = unrunnable()
    report = Report()
    with tempfile.TemporaryDirectory() as tmp:
        for n in range(mutants):
            if formats and rng.random() < format_share:
                name, text, suffix = formats[rng.randrange(len(formats))]
                mutant = mutate(text, rng)
                path = Path(tmp) / f"mutant{suffix}"
                path.write_bytes(mutant)
                todo = format_commands(str(path), suffix, rng, tmp)
            else:
                name, text = pool[rng.randrange(len(pool))]
                mutant = mutate(text, rng)
                path = Path(tmp) / "mutant.mlir"
                path.write_bytes(mutant)
                runnable = name not in too_large
                todo = commands(str(path), rng, run_share, runnable, emit_share)
            for command in todo:
                try:
                    outcome, detail = call_tool(tools[command[0]], command[1:], seconds)
                except Hang as e:
                    outcome, detail = "hang", str(e)
                report.outcomes[(label_of(command), outcome)] += 1
                if outcome in ("crash", "hang"):
                    report.failures.append(Failure(name, command, outcome, detail, mutant))
            if progress is not None:
                progress(n + 1, len(report.failures))
    return report


def crash_signature(failure: Failure) -> str:
    """The exception type and the innermost frame in ccopt (else the innermost at all): one
    signature per bug, not per mutant."""
    lines = [line for line in failure.detail.strip().splitlines() if line.strip()]
    frames = [line.strip() for line in lines if line.strip().startswith("File ")]
    ours = [f for f in frames if "site-packages" not in f] or frames
    exception = lines[-1].split(":", 1)[0] if lines else ""
    return f"{failure.kind}: {exception} at {ours[-1] if ours else '?'}"


def main(argv: Sequence[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--mutants", type=int, default=1000)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--timeout", type=float, default=20.0, help="seconds per tool call")
    p.add_argument(
        "--run-share", type=float, default=0.25, help="share of mutants run by ccopt-run"
    )
    p.add_argument(
        "--emit-share",
        type=float,
        default=0.0,
        help="share of mutants also lowered to CUDA and simulated (ccopt -t cuda, ccopt-sim)",
    )
    p.add_argument(
        "--format-share",
        type=float,
        default=0.0,
        help="share of mutants of MSCCL XML, network YAML, system JSON and machine files",
    )
    p.add_argument("--save", type=Path, help="folder for failing mutants and their tracebacks")
    args = p.parse_args(argv)
    started = time.monotonic()

    def progress(done: int, failed: int) -> None:
        if done % 250 == 0 or done == args.mutants:
            rate = done / (time.monotonic() - started)
            print(f"{done}/{args.mutants} mutants, {failed} failures ({rate:.1f}/s)", flush=True)

    report = fuzz(
        args.mutants,
        args.seed,
        args.timeout,
        args.run_share,
        progress,
        args.emit_share,
        args.format_share,
    )
    failures = report.failures
    signatures: dict[str, Failure] = {}
    for f in failures:
        signatures.setdefault(crash_signature(f), f)
    for i, (signature, f) in enumerate(signatures.items()):
        print(f"\n[{i}] {signature}\n    seed {f.seed}: {' '.join(f.command[:1] + f.command[2:])}")
        if args.save:
            args.save.mkdir(parents=True, exist_ok=True)
            (args.save / f"{i}{Path(f.command[1]).suffix or '.txt'}").write_bytes(f.mutant)
            (args.save / f"{i}.txt").write_text(f"{' '.join(f.command)}\n\n{f.detail}")
    elapsed = time.monotonic() - started
    print()
    for (command, outcome), count in sorted(report.outcomes.items()):
        print(f"  {command:<18} {outcome:<9} {count}")
    print(
        f"\n{args.mutants} mutants in {elapsed:.0f} s: {len(failures)} failures "
        f"({sum(f.kind == 'crash' for f in failures)} crashes, "
        f"{sum(f.kind == 'hang' for f in failures)} hangs), {len(signatures)} distinct"
    )
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
