"""`ccopt -t chakra -o DIR/PREFIX`, `ccopt -f chakra DIR/PREFIX` (or `PREFIX.0.et`) and
`ccopt-sim ALGORITHM --network --system --size`, as a user runs them."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from cli_support import ROOT, assert_user_error, ccopt, run_tool

RING8 = ROOT / "examples" / "algorithms" / "allreduce_ring_8.xml"
ASTRA = ROOT / "examples" / "astra"
MEGATRON = ROOT / "examples" / "megatron_mlp.mlir"


def ccopt_sim(*args: str | Path):
    return run_tool("ccopt.tools.ccopt_sim", *args)


def test_export_then_import_gives_the_same_xml(tmp_path) -> None:
    prefix = tmp_path / "out" / "ring"
    done = ccopt(RING8, "-t", "chakra{size=1048576 local_mem_bw=50}", "-o", prefix)
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == [f"{prefix}.{r}.et" for r in range(8)]
    for spelling in (["-f", "chakra", prefix], [f"{prefix}.3.et"]):
        back = ccopt(*spelling, "-t", "msccl-xml")
        assert back.returncode == 0, back.stderr
        assert back.stdout == RING8.read_text()


def exported_ring(tmp_path: Path) -> tuple[Path, Path]:
    """RING8's trace set (1 MiB) and a system file naming it as the custom all-reduce."""
    prefix = tmp_path / "ring"
    assert ccopt(RING8, "-t", "chakra", "-o", prefix).returncode == 0
    system = tmp_path / "custom.json"
    system.write_text(
        json.dumps({"local-mem-bw": 50, "all-reduce-implementation-custom": [str(prefix)]})
    )
    return prefix, system


def test_simulating_the_xml_equals_simulating_its_traces(tmp_path) -> None:
    prefix, system = exported_ring(tmp_path)
    net = ASTRA / "ring_8.yml"
    direct = ccopt_sim(RING8, "--network", net, "--system", system, "--size", "1048576", "--json")
    assert direct.returncode == 0, direct.stderr
    traced = ccopt_sim(
        "--network", net, "--system", system, "--collective", "all-reduce", "--size", "1048576",
        "--json",
    )  # fmt: skip
    assert traced.returncode == 0, traced.stderr
    assert json.loads(direct.stdout)["time_ns"] == json.loads(traced.stdout)["time_ns"] == 90174
    ir = tmp_path / "ring.mlir"
    assert ccopt(RING8, "-o", ir).returncode == 0
    from_ir = ccopt_sim(ir, "--network", net, "--system", system, "--size", "1048576", "--json")
    assert json.loads(from_ir.stdout)["time_ns"] == 90174, from_ir.stderr


def test_a_trace_set_holds_its_size(tmp_path) -> None:
    """Timed alone, a trace set needs no --size and reports the size it moves; another --size
    is refused (it was required, ignored, and echoed as the size of the 1 MiB time). Named as
    a system's custom collective, a --size it does not move is timed as ASTRA-sim times it,
    with a warning."""
    prefix, system = exported_ring(tmp_path)
    net = ASTRA / "ring_8.yml"
    alone = ccopt_sim(f"{prefix}.0.et", "--network", net, "--system", system, "--json")
    assert alone.returncode == 0, alone.stderr
    assert json.loads(alone.stdout)["size"] == 1048576
    assert json.loads(alone.stdout)["time_ns"] == 90174
    assert_user_error(
        ccopt_sim(f"{prefix}.0.et", "--network", net, "--system", system, "--size", "1073741824"),
        "the trace set moves 1048576 bytes per rank (its chunk_bytes times a rank's input "
        "chunks), not --size 1073741824",
    )
    other = ccopt_sim(
        "--network", net, "--system", system, "--collective", "all-reduce", "--size", "2097152",
    )  # fmt: skip
    assert other.returncode == 0, other.stderr
    assert "which move 1048576 bytes per rank: --size 2097152 does not change" in other.stderr


def test_a_program_exports_as_a_workload(tmp_path) -> None:
    prefix = tmp_path / "mlp"
    done = ccopt(
        ROOT / "examples" / "megatron_mlp.mlir", "-t", "chakra{machine=dgx-h100}", "-o", prefix
    )
    assert done.returncode == 0, done.stderr
    assert len(done.stdout.split()) == 8 and Path(f"{prefix}.7.et").exists()


def test_a_machine_file_is_named_unquoted_as_in_a_pipeline(tmp_path) -> None:
    """`-t 'chakra{machine=m8.yml}'` reads as `-p 'autotune{machine=m8.yml}'` does (it was
    xDSL's "Unknown token"); a path with '/' still needs quotes, and the error says so."""
    machine = tmp_path / "m8.yml"
    machine.write_text((ROOT / "sim" / "machines" / "dgx-h100.yml").read_text())
    done = run_tool(
        "ccopt.tools.ccopt_opt",
        ROOT / "examples" / "megatron_mlp.mlir",
        "-t",
        "chakra{machine=m8.yml}",
        "-o",
        tmp_path / "mlp",
        cwd=tmp_path,
    )
    assert done.returncode == 0, done.stderr
    assert (tmp_path / "mlp.7.et").exists()
    assert_user_error(
        ccopt(ROOT / "examples" / "megatron_mlp.mlir", "-t", "chakra{machine=a/m8.yml}", "-o", "x"),
        'quote an option value that is neither a number nor a plain name: machine="dir/',
    )


def test_user_errors() -> None:
    assert_user_error(ccopt(RING8, "-t", "chakra"), "give -o DIR/PREFIX")
    assert_user_error(ccopt(RING8, "-t", "chakra{sise=1}", "-o", "x/y"), "sise")
    assert_user_error(ccopt("-f", "chakra", "no/such"), "no trace files with prefix 'no/such'")
    assert_user_error(
        ccopt(ASTRA / "custom_ring_allreduce.0.et"), "not an algorithm trace written by ccopt"
    )
    assert_user_error(
        ccopt_sim(RING8, "--network", ASTRA / "ring_16.yml", "--system", ASTRA / "ring.json",
                  "--size", "1024"),
        "16 NPUs, the algorithm 8 ranks",
    )  # fmt: skip
    assert_user_error(
        ccopt_sim(ROOT / "examples" / "sgd.mlir", "--network", ASTRA / "ring_8.yml", "--system",
                  ASTRA / "ring.json", "--size", "1024"),
        "expected one algo.algorithm, found 0",
    )  # fmt: skip
    missing = ccopt_sim(RING8, "--network", ASTRA / "ring_8.yml", "--system", ASTRA / "ring.json")
    assert missing.returncode == 2 and "--size" in missing.stderr


def test_a_file_where_the_folder_must_be_is_named(tmp_path) -> None:
    (tmp_path / "afile").write_text("")
    program = ROOT / "examples" / "pipeline_boundary.mlir"
    done = ccopt(program, "-t", "chakra", "-o", tmp_path / "afile" / "x")
    assert_user_error(done, "afile' is not a folder")


def test_a_failed_export_leaves_no_partial_set(tmp_path) -> None:
    (tmp_path / "ring.3.et").mkdir()
    done = ccopt(RING8, "-t", "chakra", "-o", tmp_path / "ring")
    assert_user_error(done, "ring.3.et': it is a directory")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["ring.3.et"]


def test_a_failed_export_leaves_no_folder_it_created(tmp_path) -> None:
    """The folders of DIR/PREFIX are created for the set (a trace set is a folder's worth),
    and removed again when the export fails."""
    deep = tmp_path / "a" / "b"
    done = ccopt(RING8, "-t", "chakra{size=1}", "-o", deep / "ring")
    assert done.returncode != 0
    assert list(tmp_path.iterdir()) == []
    assert ccopt(RING8, "-t", "chakra", "-o", deep / "ring").returncode == 0
    assert len(list(deep.iterdir())) == 8


def test_a_smaller_set_replaces_a_larger_one(tmp_path) -> None:
    """Ranks 4-7 of the old set would be read as part of the new 4-rank set."""
    prefix = tmp_path / "ring"
    assert ccopt(RING8, "-t", "chakra", "-o", prefix).returncode == 0
    ring4 = ROOT / "examples" / "algorithms" / "allreduce_ring_4.xml"
    assert ccopt(ring4, "-t", "chakra", "-o", prefix).returncode == 0
    assert sorted(p.name for p in tmp_path.iterdir()) == [f"ring.{r}.et" for r in range(4)]


def test_a_prefix_without_a_name_is_refused(tmp_path) -> None:
    done = ccopt(RING8, "-t", "chakra", "-o", f"{tmp_path}/out/")
    assert_user_error(done, "give DIR/PREFIX")
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize(
    ("program", "target", "message"),
    [
        (RING8, "chakra{size=1000000000000000000000}", "size must be 1 to 2^64-1 bytes"),
        (RING8, "chakra{size=0}", "size must be 1 to 2^64-1 bytes"),
        (RING8, "chakra{machine=dgx-a100}", "machine: not used when exporting an algorithm"),
        (RING8, "chakra{entry=f}", "entry: not used when exporting an algorithm"),
        (RING8, "chakra{algorithm=x}", "the module has no algorithm @x (it has allreduce_ring"),
        (
            MEGATRON,
            "chakra{size=5 local_mem_bw=1}",
            "size, local_mem_bw: not used when exporting a program",
        ),
    ],
)
def test_options_the_form_does_not_read_or_cannot_hold_are_refused(
    tmp_path: Path, program: Path, target: str, message: str
) -> None:
    """A size past ASTRA-sim's uint64 raised OverflowError; options of the other form were
    accepted and wrote the same bytes as without them."""
    assert_user_error(ccopt(program, "-t", target, "-o", tmp_path / "t"), message)
    assert not list(tmp_path.iterdir())
