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

Stopping (SIGINT, SIGTERM; the section "Signals" below): under :func:`stop_on_signals` (every
``lie-stats`` command) one signal stops the run and ends every process it started. The Dask
executor and :func:`fork_pool_map` (``diagnose --jobs``) act on it at safe points of their own
(:func:`deferred_stop`), give up the tasks in flight and end their worker processes; a
watchdog ends the process :data:`STOP_BOUND_S` seconds after the signal whatever it is doing,
and a second signal ends it at once. benchmarks/signal_repeat.md repeats the stop at
different moments of a ``--workers 2`` run.

Results are bitwise identical whichever executor ran them, for the same device, torch
build and number of BLAS threads (the metric engine is deterministic given its ``seed``;
tests/test_executors.py checks it against a real 2-process LocalCluster).
"""

from __future__ import annotations

import contextlib
import logging
import os
import signal
import threading
import time
import uuid
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any

from ._stop import Terminated, raise_if_stopped, record_signal, signals_received, stop_requested
from .errors import LieStatsError

__all__ = ["Outcome", "TaskFunction", "run_task", "run_tasks", "local_cluster", "WORKER_ENV",
           "LOCAL_CLUSTER_CONFIG", "CONNECT_TIMEOUT_S", "CLOSE_TIMEOUT_S", "STOP_BOUND_S", "Terminated",
           "stop_on_signals", "deferred_stop", "stop_requested", "raise_if_stopped", "end_processes",
           "fork_pool_map"]

log = logging.getLogger("lie_stats.executors")

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
                    time.sleep(_POLL_S)  # a signal is seen within this
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


def fork_pool_map(fn: Callable[..., Any], calls: Sequence[tuple], *, jobs: int) -> Iterator[tuple[int, Any]]:
    """``fn(*call)`` for each of ``calls`` in ``jobs`` forked processes (a
    ``concurrent.futures.ProcessPoolExecutor``); yields ``(index, result)`` as each completes.

    The pool's processes ignore SIGINT (a terminal's Ctrl-C reaches the whole process group:
    this process alone acts on it) and die on SIGTERM. The wait runs under
    :func:`deferred_stop`; on a stop signal, an exception of ``fn`` or the caller stopping,
    the calls not started are cancelled and the processes ended (:func:`end_processes`)
    instead of waiting for the calls in flight, so nothing is left running.

    >>> sorted(fork_pool_map(pow, [(2, 3), (3, 2)], jobs=2))
    [(0, 8), (1, 9)]
    """
    import multiprocessing
    from concurrent.futures import FIRST_COMPLETED, ProcessPoolExecutor, wait

    pool = ProcessPoolExecutor(max_workers=jobs, mp_context=multiprocessing.get_context("fork"),
                               initializer=_pool_worker_signals)
    with deferred_stop():
        try:
            mask = getattr(signal, "pthread_sigmask", None)  # forked children keep the mask
            before = mask(signal.SIG_BLOCK, {signal.SIGINT}) if mask is not None else None
            try:  # Python 3.11 forks every process at the first submit
                futures = {pool.submit(fn, *call): k for k, call in enumerate(calls)}
            finally:
                if before is not None:
                    mask(signal.SIG_SETMASK, before)
            pending = set(futures)
            while pending:
                raise_if_stopped()
                done, pending = wait(pending, timeout=_POLL_S * 4, return_when=FIRST_COMPLETED)
                for future in done:
                    yield futures[future], future.result()
        except BaseException:
            pids = list(getattr(pool, "_processes", None) or ())  # before shutdown forgets them
            pool.shutdown(wait=False, cancel_futures=True)
            end_processes(pids, grace_s=CLOSE_TIMEOUT_S / 2)
            raise
        else:
            pool.shutdown()


def _pool_worker_signals() -> None:
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, signal.SIG_DFL)  # not the parent's handler, inherited by fork


# --- Signals --------------------------------------------------------------------------------
#
# A signal handler runs in the main thread between two bytecodes of whatever it was running.
# An exception raised there can land between a lock's acquisition and the ``try`` that would
# release it: in Dask's ``as_completed`` (a ``threading.Condition`` the event-loop thread also
# takes to deliver results), that left the lock held by the main thread, the event loop blocked
# on it for good, and the driver waiting forever for its cluster to close (a futex wait, its two
# workers alive; benchmarks/signal_repeat.md). So the handler raises only outside
# :func:`deferred_stop` sections; inside them it records the signal, and the code acts on it at
# points where it holds nothing (:func:`raise_if_stopped`). Whatever happens then, a watchdog
# thread ends the process :data:`STOP_BOUND_S` seconds after the first signal, and a second
# signal ends it at once (both kill the process's children first).

#: Seconds each of the Dask client and the local cluster get to close (then the cluster's
#: worker processes are ended).
CLOSE_TIMEOUT_S: float = 10.0

#: Seconds after the first SIGINT/SIGTERM by which a process under :func:`stop_on_signals`
#: has ended whatever it was doing (exit status 130, its child processes killed). The orderly
#: stop takes a few seconds (the cluster closes; benchmarks/signal_repeat.md); this bounds a
#: stop that hangs.
STOP_BOUND_S: float = 30.0

_POLL_S = 0.05
_deferred = 0  # depth of deferred_stop sections of the main thread
_armed = threading.Event()  # set on the first signal: starts the watchdog's countdown
_watchdog: threading.Thread | None = None


@contextlib.contextmanager
def deferred_stop() -> Iterator[None]:
    """A section in which a stop signal does not raise where it lands: the section calls
    :func:`raise_if_stopped` at safe points (and a stop still pending is raised on leaving).
    In a thread other than the main one (where signals are never handled) it changes nothing."""
    global _deferred
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    _deferred += 1  # from here on the handler no longer raises: nothing can interrupt the try
    try:
        yield
    finally:
        _deferred -= 1
    if _deferred == 0:
        raise_if_stopped()


@contextlib.contextmanager
def stop_on_signals(bound_s: float | None = None) -> Iterator[None]:
    """SIGINT and SIGTERM stop the process as Ctrl-C does: :class:`KeyboardInterrupt` (or
    :class:`Terminated`) where the main thread is, or at the next safe point of a
    :func:`deferred_stop` section. After the first signal the process ends within ``bound_s``
    (default :data:`STOP_BOUND_S`) whatever it is doing; a second signal ends it at once. An
    ignored SIGINT (a shell's background job) stays ignored. Outside the main thread it
    changes nothing (Python handles signals in the main thread only)."""
    global _watchdog
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    bound = STOP_BOUND_S if bound_s is None else bound_s
    if _watchdog is None:  # started before any signal: a handler must not start a thread
        _watchdog = threading.Thread(target=_watch, args=(bound,), name="lie-stats-stop-watchdog", daemon=True)
        _watchdog.start()
    previous = {}
    for signum in (signal.SIGINT, signal.SIGTERM):
        if signum == signal.SIGINT and signal.getsignal(signum) == signal.SIG_IGN:
            continue
        previous[signum] = signal.signal(signum, _on_signal)
    try:
        yield
    finally:
        for signum, handler in previous.items():
            signal.signal(signum, handler)


def _on_signal(signum: int, frame: object) -> None:
    if record_signal(signum) > 1:
        _hard_exit(f"a second signal ({signal.Signals(signum).name})")
    _armed.set()
    if _deferred == 0:
        raise_if_stopped()


def _watch(bound_s: float) -> None:
    _armed.wait()
    time.sleep(bound_s)
    _hard_exit(f"still running {bound_s:.0f} s after {signal.Signals(signals_received()[0]).name}")


def _hard_exit(why: str) -> None:
    """Kill this process's child processes and exit 130 now (no cleanup: the shard store's
    lock goes with the process, finished shards are complete files)."""
    with contextlib.suppress(Exception):
        os.write(2, f"lie-stats: {why}: killing its child processes and exiting (130).\n".encode())
    with contextlib.suppress(Exception):
        import psutil

        for child in psutil.Process().children(recursive=True):
            with contextlib.suppress(Exception):
                child.kill()
    os._exit(130)


def end_processes(pids: Iterable[int], grace_s: float = 5.0) -> set[int]:
    """End this process's child processes ``pids``: SIGTERM, then SIGKILL to those still
    running after ``grace_s`` seconds. A pid that is no longer a child of this process (it
    exited, and may have been reused) is left alone. Returns the pids still running after
    SIGKILL (normally none)."""
    import psutil

    me = os.getpid()
    procs = []
    for pid in set(pids):
        with contextlib.suppress(psutil.Error):
            p = psutil.Process(pid)
            if p.ppid() == me and p.status() != psutil.STATUS_ZOMBIE:
                procs.append(p)
    def running(procs: list[Any], within: float) -> list[Any]:
        # polled, not waited for: the child's exit status is left for its owner (Dask's
        # process watcher, the pool) to read; a zombie has exited
        deadline = time.monotonic() + within
        while True:
            alive = []
            for p in procs:
                with contextlib.suppress(psutil.Error):
                    if p.is_running() and p.status() != psutil.STATUS_ZOMBIE:
                        alive.append(p)
            if not alive or time.monotonic() >= deadline:
                return alive
            time.sleep(_POLL_S)

    for p in procs:
        with contextlib.suppress(psutil.Error):
            p.terminate()
    alive = running(procs, grace_s)
    for p in alive:
        with contextlib.suppress(psutil.Error):
            p.kill()
    return {p.pid for p in running(alive, grace_s)}
