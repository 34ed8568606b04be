"""Disk full while writing a cube: nothing half-written replaces a good cube.

Two real ways to run out of room, no mocks: a small ``tmpfs`` mounted for the test (needs
root and a sandbox that allows ``mount``; skipped with the reason otherwise), and a file size
limit (``RLIMIT_FSIZE``, with ``SIGXFSZ`` ignored so that writes fail with ``EFBIG``) set in
a child process, which needs no privilege.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap

import pytest

from lie_stats import cli
from lie_stats.cube import open_cube, write_cube
from lie_stats.errors import CubeError

from .._checkpoints import make_run
from .._cubes import random_shard

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


@pytest.fixture
def small_fs(tmp_path):
    """A 4 MiB tmpfs at ``tmp_path / 'fs'``, unmounted afterwards."""
    mnt = tmp_path / "fs"
    mnt.mkdir()
    if not hasattr(os, "geteuid") or os.geteuid() != 0:
        pytest.skip("mounting a tmpfs needs root; the RLIMIT_FSIZE test covers disk-full without it")
    r = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=4m", "tmpfs", str(mnt)],
                       capture_output=True, text=True)
    if r.returncode != 0:
        pytest.skip(f"this sandbox forbids mount -t tmpfs ({r.stderr.strip()}); "
                    f"the RLIMIT_FSIZE test covers disk-full without it")
    try:
        yield mnt
    finally:
        # lazy: a file descriptor the code under test leaked must not fail the teardown
        subprocess.run(["umount", "-l", str(mnt)], check=True)


def _fill(folder, *, leave: int = 0) -> None:
    """Write a filler file until the file system is full, then free ``leave`` bytes."""
    block = b"\0" * 4096
    with open(folder / "filler", "wb", buffering=0) as fh:
        try:
            while fh.write(block) == len(block):
                pass
        except OSError:  # ENOSPC: full
            pass
    assert os.statvfs(folder).f_bavail == 0
    if leave:
        size = (folder / "filler").stat().st_size
        os.truncate(folder / "filler", max(0, size - leave))


def _leftovers(folder, name: str) -> list[str]:
    return sorted(p.name for p in folder.iterdir() if p.name.startswith(f".{name}.") or p.name.endswith(".tmp"))


def test_write_cube_on_a_full_tmpfs_keeps_the_good_cube(small_fs):
    out = small_fs / "cube.nc"
    write_cube(random_shard("m", 0, 2, 2), out)
    before = out.read_bytes()
    _fill(small_fs)
    with pytest.raises(CubeError) as e:
        write_cube(random_shard("m", 0, 40, 8, seed=1), out)
    msg = str(e.value)
    assert str(out) in msg and "could not write the cube" in msg and "bytes free" in msg
    assert out.read_bytes() == before
    assert _leftovers(small_fs, out.name) == []
    assert open_cube(out).sizes["layer"] == 2


@pytest.mark.parametrize("leave", [
    32 * 1024,  # nearly full: the lock and options.json fit, the cube does not
    0,  # completely full: the lock file and options.json cannot be written either
])
def test_cli_extract_on_a_full_tmpfs_exits_2_and_keeps_the_good_cube(small_fs, tmp_path, capsys, leave):
    run = tmp_path / "run"
    make_run(run, "gpt2", [0, 5], n_layers=2, head=False)
    out = small_fs / "out.nc"
    args = ["extract", str(run), "-o", str(out), "--families", "Q", "--null-draws", "64", "--quiet"]
    assert cli.main(args) == cli.EXIT_OK
    before = out.read_bytes()
    _fill(small_fs, leave=leave)
    capsys.readouterr()
    # The shards are all there, so this rerun only merges them and rewrites out.nc: the write
    # of the new cube (another creation time, so other bytes) is what hits the full disk.
    code = cli.main([*args, "--resume"])
    err = capsys.readouterr().err
    assert code == cli.EXIT_USAGE, err
    assert "Traceback" not in err and str(out) in err and "could not write the cube" in err
    assert out.read_bytes() == before
    assert _leftovers(small_fs, out.name) == []


CHILD = textwrap.dedent("""
    import json, resource, signal, sys
    sys.path.insert(0, {repo!r})
    from tests._cubes import random_shard
    from lie_stats.cube import write_cube
    from lie_stats.errors import CubeError
    big = random_shard("m", 0, 40, 8, seed=1)
    signal.signal(signal.SIGXFSZ, signal.SIG_IGN)   # a write past the limit fails with EFBIG
    resource.setrlimit(resource.RLIMIT_FSIZE, ({limit}, {limit}))
    try:
        write_cube(big, {out!r})
    except CubeError as e:
        print(json.dumps({{"error": type(e).__name__, "message": str(e)}}))
    else:
        print(json.dumps({{"error": None}}))
""")


def test_write_cube_past_a_file_size_limit_keeps_the_good_cube(tmp_path):
    out = tmp_path / "cube.nc"
    write_cube(random_shard("m", 0, 2, 2), out)
    before = out.read_bytes()
    limit = len(before) + 4096  # the good cube fits, the 20x larger one does not
    code = CHILD.format(repo=REPO, limit=limit, out=str(out))
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300,
                       env={**os.environ, "OMP_NUM_THREADS": "1"})
    assert r.returncode == 0, r.stderr
    result = json.loads(r.stdout.strip().splitlines()[-1])
    assert result["error"] == "CubeError", result
    assert str(out) in result["message"] and "could not write the cube" in result["message"]
    assert out.read_bytes() == before
    assert _leftovers(tmp_path, out.name) == []
