"""Executors of the extraction map and the shard-store lock.

The parallel executor is a real multi-process Dask LocalCluster (spawned worker
processes); the lock is contended by a real second Python process.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest

from lie_stats import cli, schema
from lie_stats.cube import open_cube, provenance_of
from lie_stats.errors import LieStatsError
from lie_stats.extraction.pipeline import ExtractOptions, extract, lock_store, shard_dir

from ._checkpoints import make_run

OPTIONS = ExtractOptions(families=("Q",), projections=("none", "fixed:16"), null_draws=64)
TIMING = "timing"  # provenance field that legitimately differs between runs (wall times)
CREATED = "created"  # the cube's write time, a global attribute


@pytest.fixture(scope="module")
def neox_run(tmp_path_factory):
    root = tmp_path_factory.mktemp("neox_exec") / "run"
    make_run(root, "gpt_neox", [0, 4, 32], n_layers=2)
    return root


@pytest.fixture(scope="module")
def in_process(neox_run, tmp_path_factory):
    out = tmp_path_factory.mktemp("inproc") / "a.nc"
    cube, failed = extract([str(neox_run)], out, options=OPTIONS, progress=False)
    assert failed == []
    return out, cube


def _without_timing(records: list[dict]) -> list[dict]:
    return [{k: v for k, v in r.items() if k != TIMING} for r in records]


def _assert_identical(a, b) -> None:
    """Every variable and coordinate bitwise equal, provenance equal but for wall times."""
    assert sorted(a.data_vars) == sorted(b.data_vars)
    assert sorted(a.coords) == sorted(b.coords)
    for name in a.coords:
        np.testing.assert_array_equal(a[name].values, b[name].values, err_msg=name)
    for name in a.data_vars:
        assert a[name].dims == b[name].dims, name
        np.testing.assert_array_equal(a[name].values, b[name].values, err_msg=name)
    pa, pb = provenance_of(a), provenance_of(b)
    assert len(pa) == 3 and all(TIMING in r for r in pa)
    assert _without_timing(pa) == _without_timing(pb)
    assert set(a.attrs) == set(b.attrs)
    for key in set(a.attrs) - {schema.ATTR_PROVENANCE, CREATED}:
        assert a.attrs[key] == b.attrs[key], key


def test_two_process_local_cluster_is_bitwise_the_in_process_cube(neox_run, in_process, tmp_path):
    out_a, cube_a = in_process
    out_b = tmp_path / "b.nc"
    cube_b, failed = extract([str(neox_run)], out_b, options=OPTIONS, progress=False, workers=2,
                             keep_shards=True)
    assert failed == []
    _assert_identical(cube_a, cube_b)
    _assert_identical(open_cube(out_a), open_cube(out_b))  # and as written to disk
    # the work really ran in other processes: shards were computed off the driver
    assert len(list(shard_dir(out_b).glob("*.nc"))) == 3


def test_cli_workers_2_matches_in_process_and_records_failures(neox_run, in_process, tmp_path, capsys):
    """`--workers 2` through the CLI: same cube; a corrupt checkpoint is recorded, not fatal."""
    import shutil

    out = tmp_path / "w.nc"
    args = ["extract", str(neox_run), "-o", str(out), "--families", "Q", "--projection", "none",
            "--projection", "fixed:16", "--null-draws", "64", "--quiet"]
    assert cli.main([*args, "--workers", "2"]) == 0
    _assert_identical(in_process[1], open_cube(out))

    # a corrupt checkpoint in a worker is a recorded failure, exactly as in-process
    bad = tmp_path / "bad"
    shutil.copytree(neox_run, bad)
    (bad / "step_4" / "model.safetensors").write_bytes(b"not a safetensors file")
    capsys.readouterr()
    assert cli.main(["extract", str(bad), "-o", str(tmp_path / "p.nc"), "--families", "Q",
                     "--null-draws", "64", "--quiet", "--workers", "2"]) == 3
    assert "FAILED" in capsys.readouterr().err
    assert cli.main(["extract", str(bad), "-o", str(tmp_path / "s.nc"), "--families", "Q",
                     "--null-draws", "64", "--quiet"]) == 3
    par = json.loads(open_cube(tmp_path / "p.nc").attrs[schema.ATTR_FAILED])
    seq = json.loads(open_cube(tmp_path / "s.nc").attrs[schema.ATTR_FAILED])
    assert [f["step"] for f in par] == [4]
    assert par == seq


def test_workers_and_scheduler_exclude_each_other(neox_run, tmp_path, capsys):
    with pytest.raises(SystemExit):
        cli.main(["extract", str(neox_run), "-o", str(tmp_path / "x.nc"),
                  "--workers", "2", "--scheduler", "tcp://127.0.0.1:1"])
    assert "not allowed with argument" in capsys.readouterr().err
    with pytest.raises(LieStatsError, match="not both"):
        extract([str(neox_run)], tmp_path / "x.nc", options=OPTIONS, workers=2,
                scheduler="tcp://127.0.0.1:1")
    with pytest.raises(LieStatsError, match="workers=0"):
        extract([str(neox_run)], tmp_path / "x.nc", options=OPTIONS, workers=0)
    assert not (tmp_path / "x.nc").exists()


def test_an_unreachable_scheduler_is_a_clear_error(neox_run, tmp_path, monkeypatch, capsys):
    from lie_stats.extraction import executors

    monkeypatch.setattr(executors, "CONNECT_TIMEOUT_S", 1.0)
    assert cli.main(["extract", str(neox_run), "-o", str(tmp_path / "u.nc"), "--families", "Q",
                     "--quiet", "--scheduler", "tcp://127.0.0.1:1"]) == 2
    err = capsys.readouterr().err
    assert "--scheduler tcp://127.0.0.1:1: cannot connect to a Dask scheduler" in err
    assert not (tmp_path / "u.nc").exists()


HOLDER = textwrap.dedent(
    """
    import sys
    from pathlib import Path
    from lie_stats.extraction.pipeline import lock_store
    with lock_store(Path(sys.argv[1])):
        print("locked", flush=True)
        sys.stdin.read()  # hold until the test closes our stdin
    """
)


def test_a_second_run_on_a_locked_store_is_a_clear_error(neox_run, tmp_path):
    out = tmp_path / "l.nc"
    store = shard_dir(out)
    holder = subprocess.Popen([sys.executable, "-c", HOLDER, str(store)], stdin=subprocess.PIPE,
                              stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout.readline().strip() == "locked"
        with pytest.raises(LieStatsError) as err:
            extract([str(neox_run)], out, options=OPTIONS, progress=False)
        msg = str(err.value)
        assert str(store) in msg and f"pid {holder.pid}@" in msg
        assert not list(store.glob("*.nc")) and not out.exists()  # nothing was written
    finally:
        holder.stdin.close()
        holder.wait(timeout=30)
    assert holder.returncode == 0
    # released: the same run now goes through, and its own lock is released at the end
    cube, failed = extract([str(neox_run)], out, options=OPTIONS, progress=False)
    assert failed == [] and cube.sizes[schema.STEP] == 3
    with lock_store(store):
        pass


def test_a_killed_holder_leaves_no_stale_lock(tmp_path):
    store = tmp_path / "k.nc.shards"
    holder = subprocess.Popen([sys.executable, "-c", HOLDER, str(store)], stdin=subprocess.PIPE,
                              stdout=subprocess.PIPE, text=True)
    assert holder.stdout.readline().strip() == "locked"
    with pytest.raises(LieStatsError, match=f"pid {holder.pid}@"):
        with lock_store(store):
            pass
    holder.kill()  # SIGKILL: no cleanup code runs in the holder
    holder.wait(timeout=30)
    holder.stdin.close()
    with lock_store(store):
        assert (store / "LOCK").read_text().startswith(f"{os.getpid()}@")


def test_a_worker_killed_mid_task_loses_nothing_on_a_scheduler(neox_run, in_process, tmp_path):
    """`scheduler=ADDRESS` on a running cluster; SIGKILL a worker while it runs a checkpoint.

    Dask's nanny restarts the worker and the scheduler reruns its task; the cube is still
    bitwise the in-process cube and nothing is recorded as failed.
    """
    import logging
    import signal
    import threading
    import time

    from distributed import Client, LocalCluster

    from lie_stats.extraction.executors import WORKER_ENV

    killed: dict[str, object] = {}
    with LocalCluster(n_workers=2, threads_per_worker=1, processes=True, env=dict(WORKER_ENV),
                      dashboard_address=None, silence_logs=logging.ERROR) as cluster, \
            Client(cluster) as client:
        pids = client.run(os.getpid)

        def killer() -> None:
            deadline = time.monotonic() + 120
            while time.monotonic() < deadline and not killed:
                for addr, keys in client.processing().items():
                    running = [k for k in keys if str(k).startswith("lie-stats-")]
                    if running:
                        os.kill(pids[addr], signal.SIGKILL)
                        killed.update(addr=addr, key=running[0], pid=pids[addr])
                        return
                time.sleep(0.02)

        thread = threading.Thread(target=killer, daemon=True)
        thread.start()
        cube, failed = extract([str(neox_run)], tmp_path / "k.nc", options=OPTIONS, progress=False,
                               scheduler=cluster.scheduler_address)
        thread.join(timeout=5)
        new_pids = set(client.run(os.getpid).values())
    assert killed, "no task was seen running on a worker"
    assert killed["pid"] not in new_pids  # that worker process really died (and was replaced)
    assert failed == []
    _assert_identical(in_process[1], cube)


@pytest.mark.slow
def test_the_local_pool_keeps_no_long_diagnostic_history(monkeypatch):
    """``--workers N``'s cluster (``executors.local_cluster``): the config that bounds Dask's
    diagnostic histories (LOCAL_CLUSTER_CONFIG) reaches the scheduler in this process and the
    spawned worker processes, where the deques it sizes are built (their defaults, 1000
    transitions and 7200 monitor samples, grew memory for hundreds of checkpoints)."""
    from distributed import Client

    from lie_stats.extraction.executors import LOCAL_CLUSTER_CONFIG, WORKER_ENV, local_cluster

    low = LOCAL_CLUSTER_CONFIG["distributed.admin.low-level-log-length"]
    samples = LOCAL_CLUSTER_CONFIG["distributed.admin.system-monitor.log-length"]
    assert low < 1000 and samples < 7200  # smaller than Dask's defaults

    def on_worker(dask_worker):
        return (dask_worker.state.log.maxlen, dask_worker.state.stimulus_log.maxlen,
                dask_worker.transfer_outgoing_log.maxlen, dask_worker.monitor.maxlen,
                dask_worker.profile_history.maxlen, len(dask_worker.profile_recent["children"]))

    def on_scheduler(dask_scheduler):
        return dask_scheduler.transition_log.maxlen, dask_scheduler.monitor.maxlen

    # A Dask cluster made with its defaults earlier in this process (other tests) leaves
    # MALLOC_TRIM_THRESHOLD_ in os.environ (the nanny sets it there before spawning).
    monkeypatch.delenv("MALLOC_TRIM_THRESHOLD_", raising=False)
    with local_cluster(2) as cluster, Client(cluster, set_as_default=False) as client:
        per_worker = client.run(on_worker)
        scheduler = client.run_on_scheduler(on_scheduler)
        environ = client.run(lambda: {k: os.environ.get(k) for k in ("MALLOC_TRIM_THRESHOLD_", *WORKER_ENV)})
    assert len(per_worker) == 2
    for values in per_worker.values():
        assert values == (low, low, low, samples, low, 0), values
    assert scheduler == (low, samples)
    # glibc's dynamic mmap threshold stays on in the workers (Dask's trim setting froze it:
    # +45 % CPU a checkpoint); one BLAS/OpenMP thread each
    for env in environ.values():
        assert env == {"MALLOC_TRIM_THRESHOLD_": None, **WORKER_ENV}, env


@pytest.mark.slow
def test_the_local_pool_inherits_a_malloc_setting_of_the_caller(monkeypatch):
    """Who sets MALLOC_TRIM_THRESHOLD_ for ``lie-stats`` gets it in the workers too (the
    CI-sized load test relies on this to make RSS track live memory)."""
    from distributed import Client

    from lie_stats.extraction.executors import local_cluster

    monkeypatch.setenv("MALLOC_TRIM_THRESHOLD_", "131072")
    with local_cluster(1) as cluster, Client(cluster, set_as_default=False) as client:
        environ = client.run(lambda: os.environ.get("MALLOC_TRIM_THRESHOLD_"))
    assert list(environ.values()) == ["131072"]


@pytest.mark.gpu
def test_cuda_cube_agrees_with_the_cpu_cube_and_cuda_workers_are_bitwise_in_process(neox_run, in_process, tmp_path):
    """The whole extraction with ``device="cuda"``: every variable within the ``gpu``
    tolerances of the CPU cube (tests/test_metrics.py::test_cuda_equals_cpu), the device is
    recorded in provenance, and a 2-worker Dask run on CUDA is bitwise the in-process CUDA
    run (same device, same kernels)."""
    import dataclasses
    import json

    import torch

    from lie_stats import schema

    if not torch.cuda.is_available():
        pytest.skip("no CUDA device")
    options = dataclasses.replace(OPTIONS, device="cuda")
    gpu, failed = extract([str(neox_run)], tmp_path / "g.nc", options=options, progress=False)
    assert failed == []
    cpu = in_process[1]
    for name in cpu.data_vars:
        np.testing.assert_allclose(gpu[name].values, cpu[name].values, rtol=1e-7, atol=1e-9,
                                   equal_nan=True, err_msg=name)
    devices = {p["device"] for p in json.loads(gpu.attrs[schema.ATTR_PROVENANCE])}
    assert devices == {"cuda"} or all(d.startswith("cuda") for d in devices), devices
    dask_gpu, failed = extract([str(neox_run)], tmp_path / "gd.nc", options=options, progress=False, workers=2)
    assert failed == []
    _assert_identical(gpu, dask_gpu)
