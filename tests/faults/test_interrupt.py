"""Ctrl-C during ``lie-stats extract``, as a real process and a real SIGINT.

The run is a real subprocess (``python -m lie_stats extract``) on a run folder of tiny
checkpoints. The signal is sent on an event, never after a delay: a test hook
(``tests/faults/pidhook``) holds the run still at a chosen point of the third checkpoint and
writes a marker file; the test sends SIGINT once the marker exists.
Two points are tested: before the checkpoint's work starts (the interrupt is raised in
Python), and inside a weight-file read whose library turns the interrupt into its own error
(as a safetensors read can: a fresh clone once exited 3, "checkpoint failed", instead of
130). Expected either way: exit status 130, a one-line message and no traceback, the two
finished shards kept (no temporary file left), no cube written, and ``--resume`` completes a
cube equal to the one an uninterrupted run writes.
"""

from __future__ import annotations

import signal
import subprocess
import sys

import pytest
import xarray as xr

from lie_stats import cli, schema
from lie_stats.cube import open_cube, provenance_of
from lie_stats.extraction.pipeline import shard_dir

from .._checkpoints import make_run
from ._run_helpers import env, signal_when_held, start_held

STEPS = [0, 10, 20, 30]
#: The checkpoint at which the run holds still until the signal: two shards precede it.
HOLD = "step_20"
ARGS = ["--families", "Q", "--null-draws", "64", "--quiet"]


@pytest.fixture(scope="module")
def run_folder(tmp_path_factory):
    root = tmp_path_factory.mktemp("sigint") / "run"
    make_run(root, "gpt2", STEPS, n_layers=2, head=False)
    return root


def _extract_cmd(run, out, *extra):
    return [sys.executable, "-m", "lie_stats", "extract", str(run), "-o", str(out), *ARGS, *extra]


def _comparable(ds: xr.Dataset) -> xr.Dataset:
    """The cube without what legitimately differs between runs (creation time, timings)."""
    ds = ds.copy()
    for key in (schema.ATTR_CREATED, schema.ATTR_PROVENANCE):
        ds.attrs.pop(key, None)
    return ds


@pytest.mark.parametrize("where", ["task", "read"])
def test_sigint_keeps_shards_exits_130_and_resume_completes(run_folder, tmp_path, where):
    out = tmp_path / "out.nc"
    store = shard_dir(out)
    proc = start_held(["extract", run_folder, "-o", out, *ARGS], where=where, folder=HOLD, cwd=tmp_path)
    _, stderr = signal_when_held(proc, signal.SIGINT)
    assert proc.returncode == cli.EXIT_INTERRUPTED, (proc.returncode, stderr)
    assert "Traceback" not in stderr and "KeyboardInterrupt" not in stderr, stderr
    assert "interrupted" in stderr and "--resume" in stderr, stderr
    assert len(stderr.strip().splitlines()) == 1, stderr
    assert not out.exists(), "an interrupted run wrote a cube"
    kept = sorted(store.glob("*.nc"))
    assert len(kept) == 2, kept  # those before the stall
    assert not [p for p in store.iterdir() if p.name.endswith(".tmp")], list(store.iterdir())
    for shard in kept:  # every kept shard is a complete, valid one-checkpoint cube
        assert len(provenance_of(open_cube(shard))) == 1
    mtimes = {p: p.stat().st_mtime_ns for p in kept}

    done = subprocess.run(_extract_cmd(run_folder, out, "--resume", "--keep-shards"), cwd=tmp_path, env=env(),
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
