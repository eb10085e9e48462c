"""Machine files: presets, ASTRA-sim's network section, errors that name the file and the key."""

from __future__ import annotations

from pathlib import Path

import pytest

from ccopt.diagnostics import CcoptError
from ccopt.mesh import Mesh
from ccopt.sim import cost
from ccopt.sim.machine import PRESETS, calibrate_matmul, load_machine

GOOD = """\
network: {topology: [Switch, Switch], npus_count: [8, 2], bandwidth: [100, 10], latency: [500, 2000]}
gpu:
  peak-tflops: {f16: 100, f32: 10}
  hbm-tbps: 1.0
  launch-overhead-ns: 2000
  collective-sm-share: 0.1
  matmul-efficiency: [[64, 0.1], [4096, 0.8]]
"""


@pytest.mark.parametrize("preset", PRESETS)
def test_presets_load(preset: str) -> None:
    m = load_machine(preset)
    assert m.name == preset
    assert m.gpu.peak("f16") > m.gpu.peak("f32") > 0
    assert len(m.nic_sharing) == len(m.network.dims) == len(m.algorithms)


def test_figures_follow_the_datasheets() -> None:
    v100, h100 = load_machine("dgx2-v100"), load_machine("dgx-h100")
    assert v100.gpu.peak("f16") == 125e12 and v100.gpu.hbm_bytes_per_ns == pytest.approx(900)
    assert v100.network.npus == 16
    assert h100.gpu.peak("bf16") == 989e12
    assert h100.gpu.efficiency(8192, 8192, 8192) * 989 == pytest.approx(790, rel=0.01)


def write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "m.yml"
    path.write_text(text)
    return path


def test_a_machine_file(tmp_path: Path) -> None:
    m = load_machine(write(tmp_path, GOOD))
    assert m.network.npus == 16 and m.gpu.launch_ns == 2000
    assert m.gpu.efficiency(64, 64, 64) == 0.1 and m.gpu.efficiency(10**5, 10**5, 10**5) == 0.8
    assert 0.1 < m.gpu.efficiency(512, 512, 512) < 0.8
    assert m.gpu.misaligned("f16") == 1.0  # no figure: rows off 16 bytes cost nothing extra


def test_misaligned_matmul_shares(tmp_path: Path) -> None:
    m = load_machine(write(tmp_path, GOOD + "  misaligned-matmul: {f16: 0.2}\n"))
    assert m.gpu.misaligned("f16") == 0.2 and m.gpu.misaligned("f32") == 1.0
    h100 = load_machine("dgx-h100")
    assert h100.gpu.misaligned("bf16") == pytest.approx(115 / 764, rel=0.01)
    assert h100.gpu.misaligned("tf32") == pytest.approx(95 / 286, rel=0.01)


@pytest.mark.parametrize(
    ("change", "fragments"),
    [
        (("hbm-tbps: 1.0", "hbm-tbps: fast"), ["key 'gpu.hbm-tbps'", "fast"]),
        (("hbm-tbps: 1.0", "hbm-tbps: 0"), ["key 'gpu.hbm-tbps'"]),
        (("  launch-overhead-ns: 2000\n", ""), ["missing key 'gpu.launch-overhead-ns'"]),
        (("f16: 100", "f7: 100"), ["gpu.peak-tflops.f7"]),
        (("[[64, 0.1], [4096, 0.8]]", "[[4096, 0.1], [64, 0.8]]"), ["matmul-efficiency"]),
        (("collective-sm-share: 0.1", "collective-sm-share: 2"), ["collective-sm-share"]),
        (
            ("hbm-tbps: 1.0", "hbm-tbps: 1.0\n  misaligned-matmul: {f16: 0}"),
            ["misaligned-matmul", "f16"],
        ),
        (
            ("hbm-tbps: 1.0", "hbm-tbps: 1.0\n  misaligned-matmul: {f9: 1}"),
            ["misaligned-matmul", "f9"],
        ),
        (("hbm-tbps: 1.0", "hbm-tbps: 1.0\n  misaligned-matmul: 0.5"), ["misaligned-matmul"]),
        (("topology: [Switch, Switch]", "topology: [Switch, Torus]"), ["'topology'", "Torus"]),
        (("npus_count: [8, 2]", "npus_count: [8]"), ["'npus_count'"]),
    ],
)
def test_errors_name_the_file_and_the_key(
    tmp_path: Path, change: tuple[str, str], fragments: list[str]
) -> None:
    path = write(tmp_path, GOOD.replace(*change))
    with pytest.raises(CcoptError) as e:
        load_machine(path)
    message = e.value.render()
    assert str(path) in message
    for f in fragments:
        assert f in message


@pytest.mark.parametrize(
    ("extra", "key"),
    [
        ("nic-sharing: [1]\n", "nic-sharing"),
        ("collective-algorithm: [ring, bogus]\n", "collective-algorithm"),
        ("mesh-axes: 3\n", "mesh-axes"),
        ("colour: blue\n", "colour"),
    ],
)
def test_errors_in_ccopt_keys(tmp_path: Path, extra: str, key: str) -> None:
    with pytest.raises(CcoptError, match=key):
        load_machine(write(tmp_path, GOOD + extra))


def test_missing_and_malformed_files(tmp_path: Path) -> None:
    with pytest.raises(CcoptError, match="no such machine file or preset"):
        load_machine(tmp_path / "absent.yml")
    with pytest.raises(CcoptError, match="not valid YAML"):
        load_machine(write(tmp_path, "network: [unclosed"))


def test_mesh_axes_map_innermost_first_onto_network_dimensions(tmp_path: Path) -> None:
    m = load_machine(write(tmp_path, GOOD))
    mesh = Mesh("m", ("dp", "tp"), (2, 8))
    assert m.span(mesh, (1,)) == (8, 1)  # tp inside a node
    assert m.span(mesh, (0,)) == (1, 2)  # dp across nodes
    assert m.span(mesh, (0, 1)) == (8, 2)
    swapped = load_machine(write(tmp_path, GOOD + "mesh-axes: [dp, tp]\n"))
    assert swapped.span(mesh, (1,)) == (4, 2)  # tp strided across both dimensions
    with pytest.raises(CcoptError, match="mesh-axes"):
        load_machine(write(tmp_path, GOOD + "mesh-axes: [dp, pp]\n")).span(mesh, (0,))


def test_groups_that_do_not_fill_the_network_are_not_grids(tmp_path: Path) -> None:
    """9 ranks on nodes of 8 are 8 + 1 (span 8 x 2, not 16 ranks); 6-rank groups of 12 ranks:
    the second takes 2 GPUs of one node and 4 of the next. Such groups run flat at the
    outermost dimension's link; full grids keep their hierarchy."""
    m = load_machine(write(tmp_path, GOOD))
    nine, twelve = Mesh("m", ("tp",), (9,)), Mesh("m", ("dp", "tp"), (2, 6))
    assert m.span(nine, (0,)) == (8, 2) and not m.is_grid(nine, (0,))
    assert m.span(twelve, (1,)) == (6, 2) and not m.is_grid(twelve, (1,))
    sixteen = Mesh("m", ("dp", "tp"), (2, 8))
    assert m.is_grid(sixteen, (1,)) and m.is_grid(sixteen, (0,)) and m.is_grid(sixteen, (0, 1))
    flat = cost.group_links(m, nine, (0,))
    assert [(d.p, d.beta) for d in flat] == [(9, cost.links(m, (8, 2))[-1].beta)]
    assert cost.group_links(m, sixteen, (1,)) == cost.links(m, (8, 1))


def test_the_outermost_dimension_grows_with_the_job(tmp_path: Path) -> None:
    m = load_machine(write(tmp_path, GOOD))
    assert m.fit(64).network.dims[-1].npus == 8
    with pytest.raises(CcoptError, match="not a multiple of 8"):
        m.fit(36)
    with pytest.raises(CcoptError, match="32 ranks but the network has 16"):
        load_machine("dgx2-v100").fit(32)


def test_calibration_from_measured_matmuls() -> None:
    table = calibrate_matmul(
        [(8192, 8192, 8192, 2 * 8192**3 / 790e12), (1024, 1024, 1024, 1e-5)], 989e12
    )
    assert table[-1] == [8192.0, pytest.approx(0.7988, abs=1e-4)]
    assert table[0][0] == pytest.approx(1024.0)


@pytest.mark.parametrize("value", ["-1", "0", "true", "big", ".inf"])
def test_a_bad_memory_size_is_named(tmp_path: Path, value: str) -> None:
    text = GOOD.replace("  hbm-tbps: 1.0\n", f"  hbm-tbps: 1.0\n  memory-gb: {value}\n")
    with pytest.raises(CcoptError, match="key 'gpu.memory-gb': a positive number"):
        load_machine(write(tmp_path, text))


def test_presets_give_their_memory(tmp_path: Path) -> None:
    assert load_machine("dgx2-v100").gpu.memory_bytes == 32e9
    assert load_machine(write(tmp_path, GOOD)).gpu.memory_bytes == 0.0  # (optional)
