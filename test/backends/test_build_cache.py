"""The build cache under concurrent builds and odd settings: every rank of a job builds the
same module at once (the README's torchrun pattern), `$CCOPT_CACHE` empty or with `~`, a
`cache_dir` that cannot be one."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

import ccopt
from ccopt.diagnostics import CcoptError

ROOT = Path(__file__).resolve().parents[2]
SGD = ROOT / "examples" / "sgd.mlir"

BUILD_HOST = """
import sys
from ccopt.backends.cuda.build import lower
from ccopt.backends.cuda.cpu import compile_host
from ccopt.backends.cuda.emit import emit_cuda
from ccopt.program import load_program

m = load_program(sys.argv[1])
print(compile_host(emit_cuda(m, lower(m, None, True)), "ccopt_sgd"))
"""


def test_concurrent_builds_of_one_key_build_it_once(tmp_path: Path) -> None:
    """Six processes build the same library into an empty cache at once: they shared one
    `.partial` name and one folder of objects, and five of six failed (FileNotFoundError,
    "file too short"); now one builds under the folder's lock and the others take its result."""
    env = {**os.environ, "CCOPT_CACHE": str(tmp_path / "cache")}
    runs = [
        subprocess.Popen(
            [sys.executable, "-c", BUILD_HOST, str(SGD)],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env=env,
        )
        for _ in range(6)
    ]
    results = [(r.communicate(timeout=300), r.returncode) for r in runs]
    assert all(code == 0 for _, code in results), [err for (_, err), _ in results]
    paths = {out.strip() for (out, _), _ in results}
    assert len(paths) == 1
    folder = Path(paths.pop()).parent
    assert sorted(p.name for p in folder.iterdir()) == [".lock", "libccopt_sgd_host.so"]


def test_an_empty_cache_variable_is_the_default_and_a_tilde_is_home(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from ccopt.backends.cuda.build import cache_root

    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.setenv("CCOPT_CACHE", "")
    assert cache_root() == tmp_path / ".cache" / "ccopt"
    monkeypatch.setenv("CCOPT_CACHE", "~/cc")
    assert cache_root() == tmp_path / "cc"


@pytest.mark.parametrize(
    ("cache_dir", "message"),
    [
        (5, "cache_dir is a folder's path, got int"),
        ("/proc/ccopt", "cannot build in '/proc/ccopt'"),
    ],
)
def test_a_cache_dir_that_cannot_be_one_is_an_error(cache_dir: object, message: str) -> None:
    with pytest.raises(CcoptError, match=message):
        ccopt.build(SGD, cache_dir=cache_dir, archs=["sm_80"])  # type: ignore[arg-type]
