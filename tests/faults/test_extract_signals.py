"""SIGTERM during `lie-stats extract`, a read-only file system, and an output name too long.

SIGTERM (``kill``, a batch scheduler's time limit) is handled as Ctrl-C: a real subprocess
gets the signal while it holds still at its third checkpoint (an event, not a delay) and must exit 130 with the one-line message to
``--resume``, keep its shards and write no cube. A read-only file system (a real ``tmpfs``
mounted read-only; skipped where mounting is not allowed) and a file name longer than the
file system allows must each say what happened, not "free space".
"""

from __future__ import annotations

import os
import signal
import subprocess

import pytest

from lie_stats import cli
from lie_stats.cube import write_failure_advice
from lie_stats.extraction.pipeline import shard_dir

from .._checkpoints import make_checkpoint, make_run
from ._run_helpers import signal_when_held, start_held

FAST = ["--families", "Q", "--null-draws", "64", "--quiet"]


def test_sigterm_is_handled_as_an_interrupt(tmp_path):
    run = tmp_path / "run"
    make_run(run, "gpt2", [0, 10, 20, 30], n_layers=2, head=False)
    out = tmp_path / "t.nc"
    store = shard_dir(out)
    proc = start_held(["extract", run, "-o", out, *FAST], where="task", folder="step_20", cwd=tmp_path)
    _, stderr = signal_when_held(proc, signal.SIGTERM)
    assert proc.returncode == cli.EXIT_INTERRUPTED, (proc.returncode, stderr)
    assert "Traceback" not in stderr and "interrupted" in stderr and "--resume" in stderr, stderr
    assert not out.exists()
    assert len(list(store.glob("*.nc"))) == 2  # step_0 and step_10, done before the hold


@pytest.fixture
def read_only_fs(tmp_path):
    mnt = tmp_path / "ro"
    mnt.mkdir()
    if not hasattr(os, "geteuid") or os.geteuid() != 0:
        pytest.skip("mounting a read-only tmpfs needs root")
    r = subprocess.run(["mount", "-t", "tmpfs", "-o", "ro,size=1m", "tmpfs", str(mnt)],
                       capture_output=True, text=True)
    if r.returncode != 0:
        pytest.skip(f"this sandbox forbids mount -t tmpfs ({r.stderr.strip()})")
    try:
        yield mnt
    finally:
        subprocess.run(["umount", "-l", str(mnt)], check=True)


def test_a_read_only_file_system_is_named_as_such(read_only_fs, tmp_path, capsys):
    ckpt = make_checkpoint("gpt2", tmp_path / "m", head=False, n_layers=1)
    out = read_only_fs / "c.nc"
    code = cli.main(["extract", str(ckpt), "-o", str(out), *FAST])
    err = capsys.readouterr().err
    assert code == cli.EXIT_USAGE, err
    assert f"the file system holding {read_only_fs} is read-only" in err and "elsewhere (-o)" in err, err
    assert "free space" not in err


def test_an_output_name_too_long_is_named_as_such(tmp_path, capsys):
    ckpt = make_checkpoint("gpt2", tmp_path / "m", head=False, n_layers=1)
    out = tmp_path / ("c" * 245 + ".nc")  # fits the file system, not with ".shards" or ".tmp" added
    code = cli.main(["extract", str(ckpt), "-o", str(out), *FAST])
    err = capsys.readouterr().err
    assert code == cli.EXIT_USAGE, err
    assert "the file name is 248 bytes" in err and "exceeds the 255 bytes" in err and "shorter -o" in err, err
    assert "free space" not in err and not out.exists()


def test_write_failure_advice_tells_the_causes_apart(tmp_path):
    import errno

    assert "read-only" in write_failure_advice(tmp_path / "c.nc", OSError(errno.EROFS, "x"))
    # netCDF4 reports a full disk as EACCES at times: in a writable folder it is not a permission problem
    assert "bytes free" in write_failure_advice(tmp_path / "c.nc", OSError(errno.EACCES, "x"))
    assert "too long" in write_failure_advice(tmp_path / "c.nc", OSError(errno.ENAMETOOLONG, "x"))
    assert "free space" in write_failure_advice(tmp_path / "c.nc", OSError(errno.ENOSPC, "x"))
