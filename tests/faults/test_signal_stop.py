"""One SIGINT or SIGTERM ends a ``lie-stats`` command and every process it started.

Real processes throughout. Every Python process of a run records its own pid and start
time as it starts, and every process one of them forks records itself too
(``tests/faults/pidhook``); after the driver has exited, ``/proc`` says which still run. No
count of processes is sampled at a moment.

The bounds: the driver exits within ``EXIT_BOUND_S`` of the signal (a guard against a hang:
it takes a few seconds, benchmarks/signal_repeat.md) by the orderly path, i.e. with its
one-line message and not the watchdog's (which would end it ``_stop.STOP_BOUND_S`` after
the signal); every process of its tree is gone ``ORPHAN_BOUND_S`` after the driver exited.

* ``extract --workers 2`` (a real Dask ``LocalCluster``): SIGTERM to the driver once a shard
  exists and a worker holds still at the fourth checkpoint (a test hook, so that the run
  cannot have finished: an event, not a delay); ``--resume --workers 2`` then writes a cube
  identical to an uninterrupted one.
* ``extract --scheduler ADDRESS`` (a cluster of its own): SIGTERM on the same two events.
* ``extract --workers 2``: SIGINT to the whole process group (a terminal's Ctrl-C: the
  workers get it too) while the cluster starts. A worker interrupted while it started used
  to fail the cluster ("Nanny failed to start", exit 1 and a traceback).
* ``diagnose --jobs 2`` (a forked process pool): SIGTERM while both pool processes work. It
  used to kill the driver alone (exit -15), the pool processes left running.
* ``run`` and ``export``: SIGTERM while they import a module; exit 130 and one line.
* The stop machinery itself (:func:`lie_stats._stop.stop_on_signals`): inside a
  ``deferred_stop`` section the signal raises only at the check; a stop that hangs is ended
  by the watchdog, its child processes killed; a second signal ends the process at once.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
from types import SimpleNamespace

import pytest
import xarray as xr

from lie_stats import cli, schema
from lie_stats.cube import open_cube, provenance_of
from lie_stats.extraction import pipeline as extraction
from lie_stats.extraction.pipeline import shard_dir
from tests._spec_cubes import make_datasets

from .._checkpoints import make_run
from . import _proc
from ._run_helpers import spec_text, start_held, wait_for, write_module

pytestmark = pytest.mark.slow

#: Seconds from the signal to the driver's exit beyond which the test fails (a hang guard).
EXIT_BOUND_S = 60.0
#: Seconds after the driver's exit by which every process of its tree must be gone.
ORPHAN_BOUND_S = 10.0
STEPS = list(range(0, 80, 10))  # 8 checkpoints
#: The checkpoint at which a run holds still until its signal (tests/faults/pidhook).
HOLD = "step_30"
ARGS = ["--families", "Q", "--null-draws", "64", "--quiet"]


def _start(args, cwd, pids):
    # a process group of its own: SIGINT can go to the whole group, as a terminal sends it
    return subprocess.Popen([sys.executable, "-m", "lie_stats", *map(str, args)], cwd=cwd,
                            env=_proc.tracked_env(pids), stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True, start_new_session=True,
                            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))


def _stop(proc, pids, sig, *, group=False):
    """Send ``sig`` once: the driver's stdout, stderr, exit status, every record of its tree
    and those still running ``ORPHAN_BOUND_S`` after it exited."""
    try:
        if group:
            os.killpg(proc.pid, sig)
        else:
            proc.send_signal(sig)
        out, err = proc.communicate(timeout=EXIT_BOUND_S)
        records, left = _proc.tree_gone(pids, ORPHAN_BOUND_S)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()
        _proc.kill_all(_proc.recorded(pids))  # never leave a process behind, even when failing
    return SimpleNamespace(out=out, err=err, code=proc.returncode, records=records, left=left)


def _left(r):
    return f"alive {ORPHAN_BOUND_S} s after the driver: {[(x['pid'], _proc.role(x)) for x in r.left]}"


def _orderly(err, line):
    """The driver stopped by the orderly path: its line last (Dask may warn of a busy port
    before), no traceback, not the watchdog."""
    assert err.strip().splitlines()[-1].startswith(line), err
    assert "Traceback" not in err and "killing its child processes" not in err, err


def _comparable(ds):
    ds = ds.copy()
    for key in (schema.ATTR_CREATED, schema.ATTR_PROVENANCE):
        ds.attrs.pop(key, None)
    return ds


@pytest.fixture(scope="module")
def run_folder(tmp_path_factory):
    root = tmp_path_factory.mktemp("signal_stop") / "run"
    make_run(root, "gpt_neox", STEPS, n_layers=6, d_model=64, n_heads=4)
    return root


def test_sigterm_after_the_first_shard_ends_extract_workers_2_and_resume_completes(
        run_folder, tmp_path, monkeypatch):
    out, pids = tmp_path / "out.nc", tmp_path / "pids"
    store = shard_dir(out)
    proc = start_held(["extract", run_folder, "-o", out, *ARGS, "--workers", "2"], where="task", folder=HOLD,
                      cwd=tmp_path, base_env=_proc.tracked_env(pids), start_new_session=True)
    # two events: a worker holds still at HOLD (so the run cannot finish) and a shard exists
    wait_for(lambda: _proc.holding(proc.markers) and any(store.glob("*.nc")), proc, "a hold and a shard", limit=240)
    r = _stop(proc, pids, signal.SIGTERM)
    assert r.code == cli.EXIT_INTERRUPTED, r.err
    _orderly(r.err, "lie-stats: interrupted (SIGTERM); finished checkpoints are kept in the shard store")
    assert sum(_proc.is_worker(x) for x in r.records) >= 2, r.records
    assert set(_proc.holding(proc.markers)) <= {x["pid"] for x in r.records if _proc.is_worker(x)}  # held in a worker
    assert r.left == [], _left(r)
    kept = sorted(store.glob("*.nc"))
    assert 1 <= len(kept) < len(STEPS) and not out.exists(), kept
    assert not [p.name for p in store.iterdir() if p.name.endswith(".tmp")]

    done = subprocess.run([sys.executable, "-m", "lie_stats", "extract", str(run_folder), "-o", str(out), *ARGS,
                           "--resume", "--workers", "2"], cwd=tmp_path, env=_proc.tracked_env(tmp_path / "pids2"),
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == cli.EXIT_OK, done.stderr
    (tmp_path / "ref").mkdir()
    monkeypatch.setenv("OMP_NUM_THREADS", _proc.tracked_env(pids)["OMP_NUM_THREADS"])  # as the provenance records
    assert cli.main(["extract", str(run_folder), "-o", str(tmp_path / "ref" / "ref.nc"), *ARGS]) == cli.EXIT_OK
    resumed, reference = open_cube(out), open_cube(tmp_path / "ref" / "ref.nc")
    xr.testing.assert_identical(_comparable(resumed), _comparable(reference))
    strip = lambda p: {k: v for k, v in p.items() if k != "timing"}  # noqa: E731
    assert [strip(p) for p in provenance_of(resumed)] == [strip(p) for p in provenance_of(reference)]


def test_sigint_to_the_process_group_while_the_cluster_starts(run_folder, tmp_path):
    out, pids = tmp_path / "out.nc", tmp_path / "pids"
    proc = _start(["extract", run_folder, "-o", out, *ARGS, "--workers", "2"], tmp_path, pids)
    wait_for(lambda: any(_proc.is_worker(r) for r in _proc.recorded(pids)), proc, "a worker process")
    r = _stop(proc, pids, signal.SIGINT, group=True)
    assert r.code == cli.EXIT_INTERRUPTED, r.err
    _orderly(r.err, "lie-stats: interrupted; finished checkpoints are kept in the shard store")
    assert r.left == [], _left(r)
    assert not out.exists()


#: The worker of the --scheduler test is a thread of this process: it holds still at HOLD
#: until the test lets it go (module level, so that the scheduler pickles it by name).
_HELD, _RELEASE = threading.Event(), threading.Event()
_REAL_EXTRACT = extraction.extract_checkpoint


def _holding_extract(task, options):
    if task.checkpoint.path.name == HOLD:
        _HELD.set()
        _RELEASE.wait(300)  # set once the driver has stopped
    return _REAL_EXTRACT(task, options)


def test_sigterm_ends_extract_on_a_scheduler(run_folder, tmp_path, monkeypatch):
    from distributed import LocalCluster

    _HELD.clear()
    _RELEASE.clear()
    monkeypatch.setattr(extraction, "extract_checkpoint", _holding_extract)
    out, pids = tmp_path / "out.nc", tmp_path / "pids"
    store = shard_dir(out)
    # the cluster of --scheduler: a scheduler and one worker thread in this process, over TCP
    with LocalCluster(n_workers=1, threads_per_worker=1, processes=False, protocol="tcp",
                      dashboard_address=None) as cluster:
        proc = _start(["extract", run_folder, "-o", out, *ARGS, "--scheduler", cluster.scheduler_address],
                      tmp_path, pids)
        # two events: the worker (a thread of this process) holds still at HOLD, so the run
        # cannot finish, and a shard exists
        wait_for(lambda: _HELD.is_set() and any(store.glob("*.nc")), proc, "a hold and a shard", limit=240)
        try:
            r = _stop(proc, pids, signal.SIGTERM)
        finally:
            _RELEASE.set()
    assert r.code == cli.EXIT_INTERRUPTED, r.err
    _orderly(r.err, "lie-stats: interrupted (SIGTERM); finished checkpoints are kept in the shard store")
    assert r.left == [], _left(r)
    assert 1 <= len(list(store.glob("*.nc"))) < len(STEPS) and not out.exists()


@pytest.fixture(scope="module")
def datasets(tmp_path_factory):
    return make_datasets(tmp_path_factory.mktemp("datasets"))


def test_sigterm_ends_diagnose_jobs_2_and_its_pool(datasets, tmp_path):
    write_module(tmp_path / "claims", "S_claims", spec_text("S1", "S1"), spec_text("S2", "S2"))
    pids = tmp_path / "pids"
    # far more simulations than can finish: the pool is at work when the signal comes
    proc = _start(["diagnose", "claims", "--datasets", datasets, "--jobs", "2", "--n-sims", "1000000"],
                  tmp_path, pids)
    wait_for(lambda: sum(bool(r.get("forked")) for r in _proc.recorded(pids)) >= 2, proc, "the 2 pool processes")
    r = _stop(proc, pids, signal.SIGTERM)
    assert r.code == cli.EXIT_INTERRUPTED, r.err
    _orderly(r.err, "lie-stats diagnose: interrupted (SIGTERM); the results diagnosed so far are cached")
    assert sum(bool(x.get("forked")) for x in r.records) >= 2, r.records
    assert r.left == [], _left(r)


BLOCKING_MODULE = """
import pathlib, time
pathlib.Path({marker!r}).write_text("importing")
time.sleep(600)
"""


@pytest.mark.parametrize("verb, line", [
    ("run", "lie-stats run: terminated (SIGTERM); no report was written"),
    ("export", "lie-stats export: interrupted (SIGTERM); rerun to export every result to"),
])
def test_sigterm_ends_run_and_export(datasets, tmp_path, verb, line):
    marker = tmp_path / "marker"
    write_module(tmp_path / "claims", "S1_claim", spec_text(), BLOCKING_MODULE.format(marker=str(marker)))
    pids = tmp_path / "pids"
    extra = ["--reports", tmp_path / "reports"] if verb == "run" else ["-o", tmp_path / "exported"]
    proc = _start([verb, "claims", "--datasets", datasets, *extra], tmp_path, pids)
    wait_for(marker.exists, proc, "the module's import")
    r = _stop(proc, pids, signal.SIGTERM)
    assert r.code == cli.EXIT_INTERRUPTED, r.err
    _orderly(r.err, line)
    assert r.left == [], _left(r)


STOPPER = r"""
import subprocess, sys, time
from lie_stats._stop import deferred_stop, raise_if_stopped, stop_on_signals, stop_requested

mode = sys.argv[1]
with stop_on_signals(bound_s=float(sys.argv[2])):
    with deferred_stop():
        if mode == "watchdog":  # a child that ignores SIGTERM: only SIGKILL ends it
            child = subprocess.Popen([sys.executable, "-c", "import signal, time; "
                                      "signal.signal(signal.SIGTERM, signal.SIG_IGN); print('up', flush=True); "
                                      "time.sleep(600)"], stdout=subprocess.PIPE, text=True)
            assert child.stdout.readline() == "up\n"  # it has recorded itself
        print("ready", flush=True)
        while not stop_requested():
            time.sleep(0.01)
        print("stop requested, nothing raised", flush=True)
        if mode == "deferred":
            try:
                raise_if_stopped()
            except KeyboardInterrupt as e:
                print(f"raised at the check: {type(e).__name__}", flush=True)
                sys.exit(130)
        while True:  # a stop that hangs
            time.sleep(0.01)
"""


def _stopper(tmp_path, mode, bound_s):
    pids = tmp_path / "pids"
    # SIGINT at its default in the child: a test run started in the background (``make test &``)
    # inherits SIGINT ignored, which stop_on_signals rightly leaves ignored (as nohup would)
    proc = subprocess.Popen([sys.executable, "-c", STOPPER, mode, str(bound_s)], env=_proc.tracked_env(pids),
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    assert proc.stdout.readline() == "ready\n"
    return proc, pids


def test_a_signal_in_a_deferred_section_raises_only_at_the_check(tmp_path):
    proc, pids = _stopper(tmp_path, "deferred", 600)
    r = _stop(proc, pids, signal.SIGTERM)
    assert r.code == 130, r.err
    assert r.out == "stop requested, nothing raised\nraised at the check: Terminated\n", r.err
    assert r.left == [], _left(r)


def test_a_stop_that_hangs_is_ended_by_the_watchdog_with_its_children(tmp_path):
    proc, pids = _stopper(tmp_path, "watchdog", 1)
    r = _stop(proc, pids, signal.SIGTERM)
    assert r.code == 130, r.err
    assert "still running 1 s after SIGTERM: killing its child processes and exiting (130)" in r.err, r.err
    assert len(r.records) == 2 and r.left == [], _left(r)  # the child ignored SIGTERM: SIGKILLed


def test_a_second_signal_ends_the_process_at_once(tmp_path):
    proc, pids = _stopper(tmp_path, "hang", 600)
    proc.send_signal(signal.SIGTERM)
    assert proc.stdout.readline() == "stop requested, nothing raised\n"  # the first signal was seen
    r = _stop(proc, pids, signal.SIGINT)
    assert r.code == 130, r.err
    assert "a second signal (SIGINT): killing its child processes and exiting (130)" in r.err, r.err
    assert r.left == [], _left(r)
