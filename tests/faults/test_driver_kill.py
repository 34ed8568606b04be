"""SIGKILL of the driver of ``lie-stats extract --workers 2`` mid-run.

A real subprocess (``python -m lie_stats extract RUN -o OUT --workers 2``: a real Dask
LocalCluster of two spawned worker processes) is killed with SIGKILL, the signal no code
can catch, once a shard exists and a worker holds still at the fourth checkpoint (a test hook,
``tests/faults/pidhook``: the run cannot have finished, an event and not a delay). Expected:

* the finished shards are kept, each a complete one-checkpoint cube, and no cube is written;
* no orphan: the worker processes exit by themselves within a bounded time (Dask's
  ``AsyncProcess`` child exits as soon as the pipe its parent holds open is closed, which
  the kernel does when the parent dies). Each process of the run records its own pid and
  start time as it starts (``tests/faults/pidhook``); which of them still run is read from
  ``/proc`` after the driver is dead, never counted at a moment;
* the shard store's lock is released the moment the driver is gone (``flock`` on a
  close-on-exec descriptor: the kernel drops it with the driver even while the workers
  are still alive), so nothing has to be cleaned by hand;
* a temporary file of a shard being written when the driver died is removed by the resumed
  run (it holds the lock, so no other writer can own it);
* ``--resume --workers 2`` redoes no finished shard and writes a cube identical
  (``xarray.testing.assert_identical``, all but the creation time and the wall-time field
  of provenance) to an uninterrupted run.
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
from lie_stats.extraction.pipeline import lock_store, shard_dir

from .._checkpoints import make_run
from . import _proc
from ._run_helpers import wait_for

STEPS = list(range(0, 80, 10))  # 8 checkpoints
HOLD = "step_30"  # where a worker holds still until the driver is gone
ARGS = ["--families", "Q", "--null-draws", "64", "--quiet"]
REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
# ~45 s on 2 busy cores: two runs with a local cluster each, and the reference run
pytestmark = pytest.mark.slow

#: Seconds the worker processes may take to exit after their driver is killed.
ORPHAN_BOUND_S = 20.0


@pytest.fixture(scope="module")
def run_folder(tmp_path_factory):
    root = tmp_path_factory.mktemp("driver_kill") / "run"
    # 6 layers, d_model 64: a checkpoint takes about half a second on a worker, so the
    # kill lands with work still to do.
    make_run(root, "gpt_neox", STEPS, n_layers=6, d_model=64, n_heads=4)
    return root


def _env() -> dict[str, str]:
    env = dict(os.environ)
    env["PYTHONPATH"] = REPO + os.pathsep + env.get("PYTHONPATH", "")
    env.setdefault("OMP_NUM_THREADS", "1")
    return env


def _cmd(run, out, *extra) -> list[str]:
    return [sys.executable, "-m", "lie_stats", "extract", str(run), "-o", str(out), *ARGS, *extra]


def _comparable(ds: xr.Dataset) -> xr.Dataset:
    """The cube without what legitimately differs between runs: creation time, wall times."""
    ds = ds.copy()
    ds.attrs.pop(schema.ATTR_CREATED, None)
    ds.attrs.pop(schema.ATTR_PROVENANCE, None)
    return ds


def test_sigkill_of_the_driver_keeps_shards_leaves_no_orphan_or_lock_and_resume_completes(
        run_folder, tmp_path, monkeypatch):
    out = tmp_path / "out.nc"
    store = shard_dir(out)
    pids = tmp_path / "pids"
    proc = subprocess.Popen(_cmd(run_folder, out, "--workers", "2"), cwd=tmp_path, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, env=_proc.holding_env(
                                _proc.tracked_env(pids), where="task", folder=HOLD, markers=tmp_path / "held"))
    try:
        # two events: a worker holds still at HOLD (so the run cannot finish) and a shard exists
        wait_for(lambda: _proc.holding(tmp_path / "held") and any(store.glob("*.nc")), proc,
                 "a hold and a shard", limit=240)
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait(timeout=60)

        # the lock went with the driver, at once, even if its workers are still exiting
        with lock_store(store):
            assert (store / "LOCK").read_text().startswith(f"{os.getpid()}@")

        # no orphan: every process of the driver's tree, as each recorded itself when it
        # started (a worker its nanny replaced included), exits on its own within the bound
        records, orphans = _proc.tree_gone(pids, ORPHAN_BOUND_S)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        _proc.kill_all(_proc.recorded(pids))  # never leave a process behind, even when failing
    assert proc.returncode == -signal.SIGKILL
    # --workers 2: two worker processes started (each wrote its own record; a nanny may
    # replace a worker on a loaded machine, a third record but never fewer than two)
    workers = [r for r in records if _proc.is_worker(r)]
    assert len(workers) >= 2, f"expected the 2 worker processes of --workers 2 to start: {records}"
    assert orphans == [], (f"processes of the killed driver still alive {ORPHAN_BOUND_S} s after it: "
                           f"{[(r['pid'], _proc.role(r)) for r in orphans]}")

    # the finished shards are kept, each complete; no cube
    assert not out.exists(), "a killed run wrote a cube"
    kept = sorted(store.glob("*.nc"))
    assert 1 <= len(kept) < len(STEPS), f"the kill did not land mid-run ({len(kept)} shards)"
    for shard in kept:
        assert len(provenance_of(open_cube(shard))) == 1
    mtimes = {p: p.stat().st_mtime_ns for p in kept}
    # a kill during a shard's write leaves write_cube's temporary (".NAME.nc.XXXX.tmp"); the
    # kill above lands there only by chance, so one is planted too: resume must remove it
    planted = store / ".0123456789abcdef.nc.k1ll3d.tmp"
    planted.write_bytes(b"half a shard")

    done = subprocess.run(_cmd(run_folder, out, "--resume", "--workers", "2", "--keep-shards"), cwd=tmp_path,
                          env=_env(), capture_output=True, text=True, timeout=300)
    assert done.returncode == cli.EXIT_OK, done.stderr
    assert {p: p.stat().st_mtime_ns for p in kept} == mtimes, "resume redid finished shards"
    assert not [p.name for p in store.iterdir() if p.name.endswith(".tmp")], \
        "a half-written shard of the killed driver was left in the store"
    resumed = open_cube(out)
    assert resumed[schema.STEP].values.tolist() == STEPS

    (tmp_path / "ref").mkdir()  # extract creates no folder
    ref_out = tmp_path / "ref" / "ref.nc"  # uninterrupted, in-process
    # the provenance records OMP_NUM_THREADS: the reference sees what the subprocesses saw
    monkeypatch.setenv("OMP_NUM_THREADS", _env()["OMP_NUM_THREADS"])
    assert cli.main(["extract", str(run_folder), "-o", str(ref_out), *ARGS]) == cli.EXIT_OK
    reference = open_cube(ref_out)
    xr.testing.assert_identical(_comparable(resumed), _comparable(reference))
    strip = lambda p: {k: v for k, v in p.items() if k != "timing"}  # noqa: E731
    assert [strip(p) for p in provenance_of(resumed)] == [strip(p) for p in provenance_of(reference)]

