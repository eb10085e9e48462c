"""MSCCL XML in and out: every library algorithm survives write -> read -> write unchanged,
IR text too; bad files are refused at the element and line at fault; `ccopt-run` proves files."""

from __future__ import annotations

import io
from pathlib import Path

import pytest
from cli_support import assert_user_error, ccopt, ccopt_run
from xdsl.printer import Printer

from ccopt.algorithms import LIBRARY, generate
from ccopt.backends.msccl_xml import write_xml
from ccopt.diagnostics import LocatedError, SourceText
from ccopt.dialects.algo import AlgorithmOp
from ccopt.frontend.msccl_xml import read_algorithm, read_module

RING = Path(__file__).resolve().parents[2] / "examples" / "algorithms" / "allreduce_ring_4.xml"


def ir_text(op: AlgorithmOp) -> str:
    out = io.StringIO()
    Printer(stream=out).print_op(op)
    return out.getvalue()


@pytest.mark.parametrize(("collective", "name"), [(c, n) for c, t in LIBRARY.items() for n in t])
@pytest.mark.parametrize("ranks", [1, 3, 4])
def test_round_trip_is_exact(collective: str, name: str, ranks: int) -> None:
    alg = generate(collective, name, ranks, chunk_factor=2)
    xml = write_xml(alg)
    again = read_algorithm(SourceText("a.xml", xml))
    assert write_xml(again) == xml
    assert ir_text(AlgorithmOp(again)) == ir_text(AlgorithmOp(alg))


def test_absent_attributes_read_as_the_writers_defaults() -> None:
    """A minimal file (what older MSCCLang versions wrote) reads as the full one would."""
    minimal = """<algo name="tiny" ngpus="1" coll="allreduce">
  <gpu id="0" i_chunks="1" o_chunks="1">
    <tb id="0" send="-1" recv="-1">
      <step s="0" type="nop" cnt="0"/>
    </tb>
  </gpu>
</algo>"""
    alg = read_algorithm(SourceText("tiny.xml", minimal))
    full = read_algorithm(SourceText("tiny.xml", write_xml(alg)))
    assert ir_text(AlgorithmOp(full)) == ir_text(AlgorithmOp(alg))
    assert (alg.proto, alg.nchannels, alg.inplace, alg.outofplace) == ("Simple", 1, False, True)


def test_every_step_type_scratch_channels_and_dependencies() -> None:
    src = Path(__file__).resolve().parents[1] / "filecheck" / "dialects" / "algo" / "ops.mlir"
    out = ccopt(src, "-t", "msccl-xml{algorithm=every_step}")
    assert out.returncode == 0, out.stderr
    assert 'type="re"' in out.stdout and 'srcbuf="s"' in out.stdout
    assert 'depid="0" deps="1" hasdep="0"' in out.stdout and 'hasdep="1"' in out.stdout
    assert 'proto="LL128"' in out.stdout and 'minBytes="1024" maxBytes="65536"' in out.stdout


def broken(tmp_path: Path, line: int, old: str, new: str) -> Path:
    lines = RING.read_text().split("\n")
    assert old in lines[line - 1]
    lines[line - 1] = lines[line - 1].replace(old, new)
    path = tmp_path / "broken.xml"
    path.write_text("\n".join(lines))
    return path


@pytest.mark.parametrize(
    ("line", "old", "new", "message"),
    [
        (5, 'type="rrs"', 'type="rx"', ':5:7: error: <step> has unknown type "rx"'),
        (5, ' cnt="1"', "", ":5:7: error: <step> needs attribute 'cnt'"),
        (
            5,
            'srcoff="2"',
            'srcoff="two"',
            ':5:7: error: <step> attribute srcoff="two" is not an integer',
        ),
        (13, 'id="1"', 'id="2"', ':13:3: error: <gpu id="2"> is gpu #1'),
        (
            14,
            'chan="0"',
            'chan="5"',
            ":14:5: error: rank 1 tb 0: channel 5 is not below nchannels 1",
        ),
        (
            15,
            'cnt="1"',
            'cnt="2"',
            ":27:7: error: rank 2 tb 0 step 1 (rrs): receives 1 chunks but its send, rank 1 tb 0 step 0 (s), sends 2",
        ),
        (5, "/>", ">", ":11:7: error: malformed XML: mismatched tag"),
        (1, 'coll="allreduce"', 'coll="gather"', ":1:1: error: unknown collective 'gather'"),
        # numbers past what the fields hold: located errors, not OverflowError tracebacks
        (
            1,
            'maxBytes="9223372036854775807"',
            'maxBytes="99999999999999999999"',
            ":1:1: error: bytes range [0, 99999999999999999999] is not within [0, 9223372036854775807]",
        ),
        (  # (it wrapped to a negative maxBytes, which ccopt then refused to read back)
            1,
            'maxBytes="9223372036854775807"',
            'maxBytes="9223372036854775808"',
            ":1:1: error: bytes range [0, 9223372036854775808] is not within",
        ),
        (1, 'minBytes="0"', 'minBytes="-5"', ":1:1: error: bytes range [-5, "),
        (
            1,
            'nchannels="1"',
            'nchannels="99999999999999999999"',
            ":1:1: error: nchannels 99999999999999999999 is not between 1 and 65536",
        ),
        (
            2,
            'i_chunks="4"',
            'i_chunks="99999999999999999999"',
            ":2:3: error: rank 0: i_chunks 99999999999999999999 is not between 0 and 2147483647",
        ),
        (
            3,
            'send="1"',
            'send="99999999999999999999"',
            ":3:5: error: rank 0 tb 0: send 99999999999999999999 is out of range",
        ),
        (  # (past int64: numpy's OverflowError, then a StopIteration traceback)
            5,
            ' cnt="1"',
            ' cnt="99999999999999999999"',
            ':5:7: error: <step> attribute cnt="99999999999999999999" is out of range',
        ),
        # what the runtime reads differently from what the file seems to say
        (
            1,
            'nchunksperloop="4"',
            'nchunksperloop="3"',
            ":1:1: error: nchunksperloop is 3 but the largest buffer holds 4 chunks",
        ),
        (
            1,
            'nchunksperloop="4"',
            'nchunksperloop="8"',
            ":1:1: error: nchunksperloop is 8 but the largest buffer holds 4 chunks",
        ),
        (1, 'coll="allreduce"', 'coll="allreduce" root="2"', ":1:1: error: allreduce has no root"),
        (
            1,
            'coll="allreduce"',
            'coll="allreduce" redop="max"',
            ':1:1: error: <algo> has redop="max": ccopt reads algorithms that sum',
        ),
        # typos and malformed values: not read as the defaults
        (
            1,
            "nchunksperloop=",
            "nchunksperlop=",
            ":1:1: error: <algo> has unknown attribute 'nchunksperlop'",
        ),
        (
            3,
            'chan="0"',
            'chan="0" channel="1"',
            ":3:5: error: <tb> has unknown attribute 'channel'",
        ),
        (
            4,
            'hasdep="0"',
            'hasdep="banana"',
            ':4:7: error: <step> attribute hasdep="banana" must be 0 or 1',
        ),
    ],
)
def test_errors_name_the_element_and_line(
    tmp_path: Path, line: int, old: str, new: str, message: str
) -> None:
    assert_user_error(ccopt(broken(tmp_path, line, old, new)), "broken.xml" + message)


def test_redop_nop_reads_as_the_callers_operator(tmp_path: Path) -> None:
    """TACCL writes redop="nop" (the runtime takes the caller's operator): read, as sum."""
    out = ccopt(broken(tmp_path, 1, 'coll="allreduce"', 'coll="allreduce" redop="nop"'))
    assert out.returncode == 0, out.stderr
    assert "algo.algorithm @allreduce_ring allreduce ranks 4" in out.stdout


def test_a_dependency_on_an_unmarked_step_is_refused(tmp_path: Path) -> None:
    path = broken(tmp_path, 4, 'depid="-1" deps="-1"', 'depid="0" deps="5"')
    assert_user_error(
        ccopt(path), ':9:7: error: <step s="5"> has hasdep="0" but another step depends on it'
    )


def test_located_error_from_python() -> None:
    with pytest.raises(LocatedError, match="needs attribute 'coll'"):
        read_module(SourceText("x.xml", '<algo ngpus="0"></algo>'))


def test_ccopt_run_proves_an_algorithm_file(tmp_path: Path) -> None:
    ok = ccopt_run(RING)
    assert ok.returncode == 0 and "ok (in place; random data and exact chunk tracking" in ok.stdout
    wrong = broken(tmp_path, 9, 'dstoff="2"', 'dstoff="1"')
    assert_user_error(
        ccopt_run(wrong),
        "does not compute allreduce: in place: rank 0 output chunk 2 misses input chunk 2 of rank 1",
    )


def test_ccopt_run_proves_algorithms_in_ir(tmp_path: Path) -> None:
    ir = tmp_path / "ring.mlir"
    ir.write_text(ccopt(RING).stdout)
    done = ccopt_run(ir)
    assert (
        done.returncode == 0
        and "@allreduce_ring: allreduce on 4 ranks, 28 steps: ok" in done.stdout
    )


def test_msccl_xml_target_needs_one_algorithm() -> None:
    src = Path(__file__).resolve().parents[1] / "filecheck" / "dialects" / "algo" / "ops.mlir"
    assert_user_error(
        ccopt(src, "-t", "msccl-xml"),
        "choose one with -t 'msccl-xml{algorithm=NAME}' (ring2, every_step)",
    )
    # a name the module lacks says so (it said only "choose one"); the names are spelled as
    # the option takes them, without the @ that the option's syntax does not accept
    assert_user_error(
        ccopt(src, "-t", "msccl-xml{algorithm=nope}"),
        "-t msccl-xml: the module has no algo.algorithm @nope (it has ring2, every_step)",
    )
    done = ccopt(src, "-t", "msccl-xml{algorithm=ring2}")
    assert done.returncode == 0 and '<algo name="ring2"' in done.stdout


def test_other_layouts_read_the_same() -> None:
    """A file laid out differently (one line, attributes in another order, an XML declaration,
    comments) takes the general reader and gives the same algorithm as the fast path."""
    import xml.etree.ElementTree as ET

    alg = generate("allreduce", "halving_doubling", 5)
    canonical = write_xml(alg)
    root = ET.fromstring(canonical)
    for step in root.iter("step"):
        step.attrib = dict(reversed(list(step.attrib.items())))
    other = '<?xml version="1.0"?>\n<!-- rewritten -->\n' + ET.tostring(root, encoding="unicode")
    again = read_algorithm(SourceText("other.xml", other))
    assert ir_text(AlgorithmOp(again)) == ir_text(AlgorithmOp(alg))


def test_writer_warns_beyond_the_runtimes_limits(tmp_path: Path) -> None:
    """Valid MSCCL XML that microsoft/msccl's build limits (32 thread blocks per channel, 256
    steps per thread block) would refuse: written, with a warning that says why."""
    ir = tmp_path / "a2a.mlir"
    ir.write_text(ir_text(AlgorithmOp(generate("alltoall", "direct", 34))))
    done = ccopt(ir, "-t", "msccl-xml")
    assert done.returncode == 0 and done.stdout.startswith("<algo ")
    assert "warning: @alltoall_direct: rank 0 has 34 thread blocks on channel 0" in done.stderr


@pytest.mark.parametrize(
    ("old", "new"),
    [
        ('hasdep="0"', 'hasdep="1"'),  # a mark no dependency asks for
        ('cnt="1"', 'cnt="01"'),  # a number spelled otherwise
        ('cnt="1"', 'cnt = "1"'),  # space where the writer writes none
        ('srcoff="-1"', 'srcoff="-1" '),
        ('<step s="1"', '<step  s="1"'),
        ('type="rrs"', 'type="rrsx"'),
        ('dstbuf="o" dstoff="-1"', 'dstbuf="s" dstoff="-1"'),  # no buffer, another letter
        ("    </tb>", "    </tb><!-- c -->"),
    ],
)
def test_fast_path_takes_only_what_the_writer_writes(old: str, new: str) -> None:
    """The fast reader's parse is proven by rewriting: the canonical file reads through it, and
    any other spelling (here: one change somewhere) is left to the general reader."""
    from ccopt.frontend.msccl_xml import fast_algorithm

    alg = generate("allreduce", "ring", 4)
    text = write_xml(alg)
    fast = fast_algorithm(text, "allreduce_ring")
    assert fast is not None and ir_text(AlgorithmOp(fast)) == ir_text(AlgorithmOp(alg))
    assert old in text, old
    assert fast_algorithm(text.replace(old, new, 1), "allreduce_ring") is None


PROGRAM = """  dtensor.mesh @dp [dp=4]
  func.func @f(%a: !dtensor.tensor<64xf32, @dp[P(sum)]>) -> !dtensor.tensor<64xf32, @dp[R]> {
    %x = coll.all_reduce sum %a over [dp] {algo.algorithm = @allreduce_ring} : !dtensor.tensor<64xf32, @dp[P(sum)]> -> !dtensor.tensor<64xf32, @dp[R]>
    func.return %x : !dtensor.tensor<64xf32, @dp[R]>
  }
"""
"""A program whose all-reduce runs the ring file's algorithm (put in its module)."""


def program_running(xml: Path, tmp_path: Path) -> Path:
    imported = ccopt(xml)
    assert imported.returncode == 0, imported.stderr
    head, rest = imported.stdout.split("\n", 1)
    path = tmp_path / "program.mlir"
    path.write_text(f"{head}\n{PROGRAM}{rest}")
    return path


def test_a_program_runs_and_compiles_only_an_algorithm_proven_to_compute_its_collective(
    tmp_path: Path,
) -> None:
    """A wrong algorithm a collective named ran in the interpreter and compiled to CUDA that
    computes a wrong all-reduce; the kernel-level interpreter ran NCCL's all-reduce instead, so
    `--check-pipeline convert-to-kernel` blamed the pipeline."""
    right = program_running(RING, tmp_path)
    checked = ccopt_run(right, "--check-pipeline", "convert-to-kernel,plan-memory")
    assert checked.returncode == 0, checked.stderr
    assert "max abs error 0.000e+00" in checked.stdout  # the algorithm at both levels
    wrong = program_running(broken(tmp_path, 9, 'dstoff="2"', 'dstoff="1"'), tmp_path)
    message = "error: 'algo.algorithm' op @allreduce_ring does not compute allreduce: in place:"
    for result in (
        ccopt_run(wrong),
        ccopt_run(wrong, "--check-pipeline", "convert-to-kernel,plan-memory"),
        ccopt(wrong, "-t", "cuda"),
    ):
        assert_user_error(result, message)


def test_an_algorithm_too_large_to_prove_is_refused_before_its_buffers_are_made(
    tmp_path: Path,
) -> None:
    """2e9 chunks per buffer: numpy's MemoryError (29.8 GiB) was a traceback."""
    path = tmp_path / "large.xml"
    text = RING.read_text().replace('nchunksperloop="4"', 'nchunksperloop="20000000"')
    path.write_text(text.replace('_chunks="4"', '_chunks="20000000"'))
    assert_user_error(
        ccopt_run(path),
        "large.xml:1:1: error: 'algo.algorithm' op cannot be proven: @allreduce_ring's buffers "
        "hold 160000000 chunks on its 4 ranks",
    )
