"""Executors of the extraction map: in-process, a local process pool, or a Dask cluster.

Extraction is a map of one task function over (model, checkpoint) tasks (DESIGN.md, scale).
This module runs such a map and yields each task's :class:`Outcome` as it completes. It knows
nothing of what a task computes: :func:`lie_stats.extraction.pipeline.extract` passes its task function
(:func:`lie_stats.extraction.pipeline.extract_checkpoint`) and writes the shards the outcomes carry.
The task function travels to Dask workers by reference (a module-level function, which each
worker imports), so it must be importable there under the same name.

Three executors, one code path for the two parallel ones:

``workers=1`` (default)
    In-process, in task order.
``workers=N`` (N > 1)
    A local ``dask.distributed.LocalCluster(n_workers=N, threads_per_worker=1,
    processes=True)``: N spawned worker processes on this machine, each with one
    OpenMP/BLAS thread (``OMP_NUM_THREADS=MKL_NUM_THREADS=OPENBLAS_NUM_THREADS=1`` set
    before the worker starts, so that results are deterministic and the N processes do
    not oversubscribe the cores). It is the same Dask code path as ``scheduler=``, so the
    multi-process test of the local pool also tests the cluster path.
``scheduler="tcp://HOST:PORT"``
    ``dask.distributed.Client(ADDRESS)`` on an existing cluster.

Where the work and the files are: each worker reads its checkpoint (the checkpoint paths,
or the hub cache of ``hf:`` sources, must be readable at the same paths on every worker)
and *returns the shard* (an in-memory ``xarray.Dataset`` of one checkpoint, a few hundred
kB) to the driver, which writes it into the shard store as the task completes. The shard
store therefore needs no shared filesystem, and a killed driver loses only the tasks in
flight. A task whose checkpoint fails with a :class:`~lie_stats.errors.LieStatsError`
returns the error as data (recorded exactly as in-process); a task whose worker dies
repeatedly (Dask's ``KilledWorker``, e.g. out of memory) is recorded as failed too; any
other exception is a bug and propagates, as it does in-process.

The client is never made Dask's default scheduler (``set_as_default=False``): the driver's
own reads and writes of NetCDF shards stay local. As the default, it made xarray take a
``distributed.Lock`` through the scheduler for every shard the driver wrote, and those locks
(each with a refresh timer) were never released: one more lock per checkpoint in the
driver (found by the load test, benchmarks/load.py).

Stopping (SIGINT, SIGTERM): under :func:`lie_stats._stop.stop_on_signals` (every
``lie-stats`` command) one signal stops the run and ends every process it started. The Dask
executor acts on it at safe points of its own (:func:`lie_stats._stop.deferred_stop`),
gives up the tasks in flight and ends its worker processes (:func:`lie_stats._stop.end_processes`).
The signal handling itself, and the fork pool of ``diagnose --jobs``, are in
:mod:`lie_stats._stop`, which every command shares. benchmarks/signal_repeat.md repeats
the stop at different moments of a ``--workers 2`` run.

Results are bitwise identical whichever executor ran them, for the same device, torch
build and number of BLAS threads (the metric engine is deterministic given its ``seed``;
tests/test_executors.py checks it against a real 2-process LocalCluster).
"""

from __future__ import annotations

import contextlib
import logging
import signal
import time
import uuid
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any

from .._stop import CLOSE_TIMEOUT_S, POLL_S, deferred_stop, end_processes, raise_if_stopped
from ..errors import LieStatsError

__all__ = ["Outcome", "TaskFunction", "run_task", "run_tasks", "local_cluster", "WORKER_ENV",
           "LOCAL_CLUSTER_CONFIG", "CONNECT_TIMEOUT_S"]

log = logging.getLogger("lie_stats.extraction.executors")

#: Seconds to wait for a ``--scheduler`` to answer before giving up with a clear error.
CONNECT_TIMEOUT_S: float = 30.0

#: Environment of local worker processes: one OpenMP/BLAS thread each (deterministic
#: results; N single-threaded processes instead of N x cores threads).
WORKER_ENV: dict[str, str] = {"OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1", "OPENBLAS_NUM_THREADS": "1"}

#: Dask configuration of the local cluster: no history that nothing here reads (there is no
#: dashboard). Each of these grew memory for hundreds of checkpoints until its bound filled,
#: which a long run cannot tell from a leak (benchmarks/README.md, load_history.md):
#:
#: - the statistical profiler (off): samples each worker's stack every 10 ms and keeps
#:   ~1000 s of call trees, ~0.4 MB per checkpoint per worker (at ~1 s a checkpoint);
#: - the developers' logs (``low-level-log-length``, 1000 entries by default, 100 here): each
#:   worker's transition and stimulus logs (a stimulus holds the pickled task, ~1 KB), its
#:   transfer logs, the scheduler's transition log. At ~10 entries a task they filled only
#:   after ~100-200 checkpoints per worker; 100 keeps the story of the last ~10 tasks
#:   (``Client.story``) for debugging;
#: - the system monitor's samples (``log-length``, 7200 = one hour at 500 ms, 120 = one
#:   minute here), in the scheduler and every worker; the heartbeats read only the latest.
#:
#: Measured with tracemalloc (2 workers, 250 checkpoints, snapshots at 30/90/150/240):
#: with Dask's defaults these were the growing Python allocations, 8-11 KB per checkpoint in
#: the driver and 35-60 KB in each worker in the first two windows.
#:
#: The nanny's environment before a worker starts is :data:`WORKER_ENV` alone, without Dask's
#: default ``MALLOC_TRIM_THRESHOLD_=65536``: setting that variable freezes glibc's dynamic mmap
#: threshold, so every multi-megabyte temporary of the null is mmap'd and unmapped afresh, with
#: its page faults: +45 % CPU per checkpoint in a worker against the same extraction in-process
#: (benchmarks/scaling_results.md), sys time 111 s against 12.7 s in the 400-checkpoint load
#: test. Workers now allocate as the in-process path does (and as any Python process does:
#: the heap keeps what it freed for reuse, ~25-35 MB more RSS a worker after it settles).
#: A ``MALLOC_TRIM_THRESHOLD_`` in the environment of ``lie-stats`` itself is inherited.
LOCAL_CLUSTER_CONFIG: dict[str, object] = {
    "distributed.worker.profile.enabled": False,
    "distributed.admin.low-level-log-length": 100,
    "distributed.admin.system-monitor.log-length": 120,
    "distributed.nanny.pre-spawn-environ": dict(WORKER_ENV),
}


@dataclass(frozen=True)
class Outcome:
    """What one task produced: its shard, or the error that stopped it.

    Attributes
    ----------
    task
        The task that ran (a :class:`lie_stats.extraction.pipeline.Task` in an extraction).
    shard
        What the task function returned: in an extraction, the one-checkpoint cube
        (``None`` when the task failed).
    error
        ``"ErrorClass: message"`` of the failure (``None`` on success).
    """

    task: Any
    shard: Any = None
    error: str | None = None


#: The function a map runs on each task: ``compute(task, options)`` -> the task's result.
TaskFunction = Callable[[Any, Any], Any]


def run_task(compute: TaskFunction, task: Any, options: Any) -> Outcome:
    """Run ``compute(task, options)``; a :class:`LieStatsError` becomes a failed :class:`Outcome`.

    This is the function each executor runs (in-process or on a worker), so a failure is
    recorded the same way whichever executor ran it.

    Parameters
    ----------
    compute
        The task function (in an extraction, :func:`lie_stats.extraction.pipeline.extract_checkpoint`).
    task
        The task (in an extraction, a :class:`lie_stats.extraction.pipeline.Task`).
    options
        The options of the run, passed to ``compute`` unchanged.

    Examples
    --------
    >>> from lie_stats.errors import CheckpointError
    >>> def read(task, options):  # a checkpoint whose files are gone
    ...     raise CheckpointError(f"{task}: no config.json")
    >>> run_task(read, "/nowhere", None).error
    'CheckpointError: /nowhere: no config.json'
    >>> run_task(lambda task, options: task * options, 3, 2).shard
    6
    """
    try:
        return Outcome(task=task, shard=compute(task, options))
    except LieStatsError as e:
        # A stop signal that lands inside a library call (a safetensors read, say) can come
        # back wrapped in that library's own error, which the reader reports as a bad file:
        # once a stop was requested, the error is the interruption, not a failed task.
        raise_if_stopped()
        return Outcome(task=task, error=f"{type(e).__name__}: {e}")


def run_tasks(
    compute: TaskFunction,
    tasks: Sequence[Any],
    options: Any,
    *,
    workers: int = 1,
    scheduler: str | None = None,
) -> Iterator[Outcome]:
    """Run ``compute`` on every task on the chosen executor and yield each :class:`Outcome`
    as it completes.

    Parameters
    ----------
    compute
        The task function, ``compute(task, options)`` (in an extraction,
        :func:`lie_stats.extraction.pipeline.extract_checkpoint`). The parallel executors send it to
        the workers by reference: it must be a module-level function that the workers can
        import.
    tasks
        The tasks (in an extraction, :class:`lie_stats.extraction.pipeline.Task` objects). For the
        parallel executors they must be picklable and carry a ``key`` (a string unique
        within the run).
    options
        The options of the run (in an extraction, its
        :class:`lie_stats.extraction.pipeline.ExtractOptions`), picklable for the parallel executors.
    workers
        1: in-process, in task order. N > 1: a local Dask ``LocalCluster`` of N
        single-threaded worker processes, outcomes in completion order.
    scheduler
        Address of a running Dask scheduler (``tcp://host:8786``); excludes ``workers``.

    Raises
    ------
    LieStatsError
        Both ``workers > 1`` and ``scheduler`` given, ``workers < 1``, or the scheduler
        cannot be reached.

    Examples
    --------
    >>> [o.shard for o in run_tasks(pow, [1, 2, 3], 2)]
    [1, 4, 9]
    >>> list(run_tasks(pow, [], 2))
    []
    """
    if workers < 1:
        raise LieStatsError(f"workers={workers}: expected 1 (in-process) or more (a local process pool).")
    if scheduler is not None and workers != 1:
        raise LieStatsError(
            f"workers={workers} and scheduler={scheduler!r} exclude each other: --workers starts a "
            f"local cluster, --scheduler uses an existing one; give one of them."
        )
    if not tasks:
        return
    if scheduler is None and workers == 1:
        for task in tasks:
            yield run_task(compute, task, options)
        return
    yield from _run_dask(compute, tasks, options, workers=workers, scheduler=scheduler)


def local_cluster(workers: int) -> Any:
    """The ``--workers N`` pool: a Dask ``LocalCluster`` of ``workers`` single-threaded worker
    processes with :data:`WORKER_ENV` and :data:`LOCAL_CLUSTER_CONFIG`, no dashboard."""
    import dask
    from distributed import LocalCluster

    # SIGINT blocked while the cluster starts: the threads it starts inherit the mask, and the
    # worker processes they spawn keep it across exec, so that a terminal's Ctrl-C (sent to
    # the whole process group) reaches this process alone, which then ends the workers
    # (SIGTERM); a worker interrupted while it starts failed the whole cluster ("Nanny failed
    # to start"). This thread's mask is restored after, and a SIGINT that came meanwhile is
    # delivered then (or at once to another thread of this process that does not block it).
    # multiprocessing's resource tracker is started first: starting it unblocks SIGINT in
    # the thread that starts it.
    from multiprocessing import resource_tracker

    resource_tracker.ensure_running()
    mask = getattr(signal, "pthread_sigmask", None)
    before = mask(signal.SIG_BLOCK, {signal.SIGINT}) if mask is not None else None
    try:
        # The scheduler (in this process) reads the config when it starts; the nannies pass
        # it on to the worker processes they spawn.
        with dask.config.set(LOCAL_CLUSTER_CONFIG):
            return LocalCluster(
                n_workers=workers, threads_per_worker=1, processes=True, env=dict(WORKER_ENV),
                dashboard_address=None, silence_logs=logging.WARNING,
            )
    finally:
        if before is not None:
            mask(signal.SIG_SETMASK, before)


def _run_dask(compute: TaskFunction, tasks: Sequence[Any], options: Any, *, workers: int,
              scheduler: str | None) -> Iterator[Outcome]:
    """The Dask executor. It runs under :func:`deferred_stop`: a SIGINT/SIGTERM never raises
    inside Dask's code (which holds locks the event-loop thread needs), it is acted on at the
    safe points of this function; the cluster is then closed with a bound
    (:data:`CLOSE_TIMEOUT_S`) and any local worker process left is ended (:func:`end_processes`)."""
    from distributed import Client, KilledWorker, as_completed

    cluster = None
    client = None
    abandon = True
    pids: set[int] = set()  # the local cluster's worker processes, as seen at each look
    with deferred_stop():
        try:
            if scheduler is None:
                try:
                    cluster = local_cluster(workers)
                except Exception:  # a cluster that failed to start because of the signal
                    raise_if_stopped()
                    raise
                pids |= _worker_pids(cluster)
                raise_if_stopped()
                client = Client(cluster, set_as_default=False)
            else:
                try:
                    client = Client(scheduler, timeout=f"{CONNECT_TIMEOUT_S}s", set_as_default=False)
                except (OSError, TimeoutError) as e:
                    raise LieStatsError(
                        f"--scheduler {scheduler}: cannot connect to a Dask scheduler there ({e}). "
                        f"Start one (`dask scheduler`) and its workers, or use --workers N for a local pool."
                    ) from e
            raise_if_stopped()
            run_id = uuid.uuid4().hex[:8]
            futures = {
                client.submit(run_task, compute, task, options, key=f"lie-stats-{run_id}-{task.key}",
                              pure=False): task
                for task in tasks
            }
            pending = as_completed(futures, loop=client.loop)
            while True:
                raise_if_stopped()
                batch = pending.next_batch(block=False)
                if not batch:
                    if pending.is_empty():
                        break
                    time.sleep(POLL_S)  # a signal is seen within this
                    continue
                for future in batch:
                    task = futures.pop(future)
                    try:
                        outcome = future.result()
                    except KilledWorker as e:
                        outcome = Outcome(task=task, error=f"KilledWorker: the worker running this checkpoint "
                                          f"died repeatedly (out of memory?): {e}")
                    finally:
                        future.release()
                    yield outcome
                    raise_if_stopped()
        except BaseException:  # interrupted, or the caller stopped (GeneratorExit) or failed
            abandon = True
            raise
        else:
            abandon = False
        finally:
            if cluster is not None:
                pids |= _worker_pids(cluster)
            _close_dask(client, cluster, pids, abandon=abandon)


def _worker_pids(cluster: Any) -> set[int]:
    """Pids of the local cluster's worker processes (each nanny's child), as its nannies know them."""
    pids = set()
    with contextlib.suppress(Exception):  # a nanny starting or gone has no process: skipped
        for nanny in list(cluster.workers.values()):
            pid = getattr(getattr(getattr(nanny, "process", None), "process", None), "pid", None)
            if pid:
                pids.add(int(pid))
    return pids


async def _no_restarts(nannies: list[Any]) -> None:
    for nanny in nannies:  # Nanny.close_gracefully: a worker that exits now is not restarted
        nanny.close_gracefully(reason="lie-stats interrupted")


def _close_dask(client: Any, cluster: Any, pids: set[int], *, abandon: bool) -> None:
    """Close the client and the local cluster, each within :data:`CLOSE_TIMEOUT_S`; then end
    any of the cluster's worker processes still running (a close that timed out, a worker
    its nanny restarted while the cluster closed).

    ``abandon`` (an interrupt or an error: the tasks in flight are given up): the local
    workers are ended first, the nannies told not to restart them, instead of asking each
    worker to finish its task and waiting for it (Dask waits 4 s, then kills it)."""
    if abandon and cluster is not None and pids:
        try:
            cluster.sync(_no_restarts, list(cluster.workers.values()), callback_timeout=CLOSE_TIMEOUT_S)
            end_processes(pids, grace_s=CLOSE_TIMEOUT_S / 2)
        except Exception as e:  # noqa: BLE001 - the orderly close below still runs
            log.warning("ending the local workers failed (%s: %s)", type(e).__name__, e)
    for what, obj in (("client", client), ("local cluster", cluster)):
        if obj is None:
            continue
        try:
            obj.close(timeout=CLOSE_TIMEOUT_S)
        except Exception as e:  # noqa: BLE001 - a close that fails must not hide why we stopped
            log.warning("closing the Dask %s failed (%s: %s); its worker processes are ended",
                        what, type(e).__name__, e)
    if pids:
        left = end_processes(pids, grace_s=CLOSE_TIMEOUT_S / 2)
        if left:
            log.warning("worker process(es) %s did not exit after SIGKILL", sorted(left))
