"""`ccopt.build`'s own arguments are checked before anything is lowered or compiled: one
architecture given as a string is one architecture (it was iterated letter by letter into
nvcc's -gencode flags), no architecture at all (nvcc built for its own default) and a
negative CTA cap and a cache directory that is a file are errors."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

import ccopt
from ccopt.backends.cuda.build import check_archs, check_supported_archs
from ccopt.diagnostics import CcoptError

SGD = Path(__file__).resolve().parents[2] / "examples" / "sgd.mlir"


def test_one_architecture_as_a_string() -> None:
    assert check_archs("sm_90") == ("sm_90",)
    assert check_archs(["sm_80", "sm_90a"]) == ("sm_80", "sm_90a")


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"archs": "90"}, "arch 90: expected a GPU architecture like sm_80"),
        ({"archs": ["sm_80", 90]}, "arch 90: expected"),
        ({"archs": []}, "archs is empty: give at least one GPU architecture"),
        ({"archs": None}, "archs must be GPU architectures like"),
        ({"archs": 90}, "archs must be GPU architectures like"),
        ({"nccl_max_ctas": -3}, "nccl_max_ctas must be an integer >= 0, got -3"),
        ({"nccl_max_ctas": 2.5}, "nccl_max_ctas must be an integer >= 0, got 2.5"),
    ],
)
def test_bad_build_arguments(kwargs: dict, message: str) -> None:
    with pytest.raises(CcoptError, match=message):
        ccopt.build(SGD, **kwargs)


def test_a_cache_dir_that_is_a_file(tmp_path: Path) -> None:
    file = tmp_path / "cache"
    file.write_text("")
    with pytest.raises(CcoptError, match="is a file, not a directory"):
        ccopt.build(SGD, cache_dir=file)


@pytest.mark.skipif(shutil.which("nvcc") is None, reason="needs nvcc")
def test_an_architecture_nvcc_does_not_build_for_is_said_before_anything_is_lowered() -> None:
    """`sm_99` has the form of an architecture: nvcc refused it only after the program was
    lowered and emitted, in its own words. The architectures this nvcc lists are named."""
    with pytest.raises(
        CcoptError, match=r"arch sm_99: this nvcc does not build for it; it builds for sm_\d+"
    ) as raised:
        ccopt.build(SGD, archs=["sm_80", "sm_99"])
    assert "sm_80" in str(raised.value) and "nvcc --list-gpu-code" in str(raised.value)
    check_supported_archs(["sm_80", "sm_90a"])  # (a suffixed architecture by its base)
