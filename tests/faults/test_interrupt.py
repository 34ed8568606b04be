"""Ctrl-C during ``lie-stats extract``, as a real process and a real SIGINT.

The run is a real subprocess (``python -m lie_stats extract``) on a run folder of tiny
checkpoints; SIGINT is sent once the first shard exists in ``OUT.nc.shards/``. Expected:
exit status 130, a one-line message and no traceback, the finished shards kept (no
temporary file left), no cube written, and ``--resume`` completes a cube equal to the one
an uninterrupted run writes.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys

import pytest
import xarray as xr

from lie_stats import cli, schema
from lie_stats.cube import open_cube, provenance_of
from lie_stats.extraction import shard_dir

from .._checkpoints import make_run
from ._run_helpers import signal_after_first_shard

#: 12 checkpoints, so that the run cannot finish between its first shard and the signal on
#: a fast, idle machine (with 5, a CI run once exited 0 before the SIGINT arrived).
STEPS = list(range(0, 120, 10))
ARGS = ["--families", "Q", "--null-draws", "64", "--quiet"]
REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


@pytest.fixture(scope="module")
def run_folder(tmp_path_factory):
    root = tmp_path_factory.mktemp("sigint") / "run"
    # 6 layers each: a checkpoint takes about a second, so the signal lands mid-run.
    make_run(root, "gpt2", STEPS, n_layers=6, head=False)
    return root


def _extract_cmd(run, out, *extra):
    return [sys.executable, "-m", "lie_stats", "extract", str(run), "-o", str(out), *ARGS, *extra]


def _sigint_default() -> None:
    """In the child, before exec: SIGINT back to its default disposition.

    A shell starts background jobs with SIGINT ignored, and an ignored SIGINT is inherited
    across exec, in which case Python installs no KeyboardInterrupt handler: the test would
    send a signal the child cannot see (as when CI itself runs in the background).
    """
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def _env():
    env = dict(os.environ)
    env["PYTHONPATH"] = REPO + os.pathsep + env.get("PYTHONPATH", "")
    env.setdefault("OMP_NUM_THREADS", "1")
    return env


def _comparable(ds: xr.Dataset) -> xr.Dataset:
    """The cube without what legitimately differs between runs (creation time, timings)."""
    ds = ds.copy()
    for key in (schema.ATTR_CREATED, schema.ATTR_PROVENANCE):
        ds.attrs.pop(key, None)
    return ds


def test_sigint_keeps_shards_exits_130_and_resume_completes(run_folder, tmp_path):
    out = tmp_path / "out.nc"
    store = shard_dir(out)
    proc = subprocess.Popen(_extract_cmd(run_folder, out), cwd=tmp_path, env=_env(),
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            preexec_fn=_sigint_default)
    stdout, stderr = signal_after_first_shard(proc, store, signal.SIGINT)
    assert proc.returncode == cli.EXIT_INTERRUPTED, (proc.returncode, stderr)
    assert "Traceback" not in stderr and "KeyboardInterrupt" not in stderr, stderr
    assert "interrupted" in stderr and "--resume" in stderr, stderr
    assert len(stderr.strip().splitlines()) == 1, stderr
    assert not out.exists(), "an interrupted run wrote a cube"
    kept = sorted(store.glob("*.nc"))
    assert 1 <= len(kept) < len(STEPS), f"the signal did not land mid-run ({len(kept)} shards)"
    assert not [p for p in store.iterdir() if p.name.endswith(".tmp")], list(store.iterdir())
    for shard in kept:  # every kept shard is a complete, valid one-checkpoint cube
        assert len(provenance_of(open_cube(shard))) == 1
    mtimes = {p: p.stat().st_mtime_ns for p in kept}

    done = subprocess.run(_extract_cmd(run_folder, out, "--resume", "--keep-shards"), cwd=tmp_path, env=_env(),
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == cli.EXIT_OK, done.stderr
    assert {p: p.stat().st_mtime_ns for p in kept} == mtimes, "resume redid finished shards"
    resumed = open_cube(out)
    assert resumed[schema.STEP].values.tolist() == STEPS

    (tmp_path / "ref").mkdir()  # extract creates no folder
    ref_out = tmp_path / "ref" / "ref.nc"
    assert cli.main(["extract", str(run_folder), "-o", str(ref_out), *ARGS]) == cli.EXIT_OK
    reference = open_cube(ref_out)
    xr.testing.assert_identical(_comparable(resumed), _comparable(reference))
    strip = lambda p: {k: v for k, v in p.items() if k != "timing"}  # noqa: E731
    assert [strip(p) for p in provenance_of(resumed)] == [strip(p) for p in provenance_of(reference)]
