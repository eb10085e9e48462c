"""bench/gpu_check.py's helpers that need no GPU: the timed inputs drawn from one pool (a
model-sized step has billions of elements) and the profile tables, which leave out the harness's
own host copies before and after the step; the report written whole."""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "bench"))
import gpu_check  # noqa: E402


def test_timed_inputs_take_every_rank_block_shape_and_dtype() -> None:
    blocks = [[([2, 3], "float32"), ([4, 1], "float32")], [([5], "bfloat16"), ([0], "bfloat16")]]
    import ml_dtypes  # noqa: F401 - numpy knows "bfloat16" once it is imported

    arrays = gpu_check.timed_inputs(blocks)
    assert [[(list(a.shape), str(a.dtype)) for a in bs] for bs in arrays] == blocks
    assert all(a.flags.c_contiguous and a.flags.writeable for bs in arrays for a in bs)
    assert 0 < float(np.abs(arrays[0][0]).max()) < 1


def test_profile_tables_rank_kernels_and_leave_out_host_copies() -> None:
    profiles = {
        "p/s": [
            ["Memcpy HtoD (Pageable -> Device)", 4, 9000.0],
            ["void ccopt_rt::reduce<float, float>(long)", 2, 3000.0],
            ["gemm", 1, 1000.0],
        ]
    }
    lines = gpu_check.profile_tables(profiles, top=1)
    assert lines[1].startswith("| p/s: kernel or copy")
    assert lines[3] == "| `void ccopt_rt::reduce<float, float>(long)` | 2 | 3.00 | 75.0% |"
    assert lines[4] == "| all 2 kinds | 3 | 4.00 | |"


def test_the_report_replaces_the_old_one_whole(tmp_path: Path, capsys) -> None:
    report = tmp_path / "report.md"
    report.write_text("an older run\n")
    assert gpu_check.finish(["| a | b |"], report, failures=1) == 1
    assert report.read_text() == "| a | b |\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["report.md"]  # no part left behind
    assert "| a | b |" in capsys.readouterr().out
