"""Stop signals and process pools that every command shares, readable from any layer.

Stopping (SIGINT, SIGTERM; the section "Signals" below): under :func:`stop_on_signals` (every
``lie-stats`` command) one signal stops the run and ends every process it started. The
executors of an extraction (:mod:`lie_stats.extraction.executors`, the Dask cluster) and
:func:`fork_pool_map` (``diagnose --jobs``) act on it at safe points of their own
(:func:`deferred_stop`), give up the tasks in flight and end their worker processes
(:func:`end_processes`); a watchdog ends the process :data:`STOP_BOUND_S` seconds after the
signal whatever it is doing, and a second signal ends it at once.
benchmarks/signal_repeat.md repeats the stop at different moments of a ``--workers 2`` run.

The record of the signals received (:func:`record_signal`, :func:`stop_requested`,
:func:`raise_if_stopped`) is read by code that a stop must reach however deep it is: where a
library may hand back an interrupt wrapped in its own error (a safetensors read interrupted
by Ctrl-C can surface as a ``SafetensorError``), once a stop was requested that error is the
interruption, not a bad file. This module imports nothing of lie_stats, so every layer may
import it.
"""

from __future__ import annotations

import contextlib
import os
import signal
import threading
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from typing import Any

__all__ = ["CLOSE_TIMEOUT_S", "STOP_BOUND_S", "POLL_S", "Terminated", "stop_on_signals", "deferred_stop",
           "record_signal", "signals_received", "stop_requested", "raise_if_stopped", "end_processes",
           "fork_pool_map"]

_signalled: list[int] = []  # the stop signals received, in order


class Terminated(KeyboardInterrupt):
    """SIGTERM (``kill``, a batch scheduler's time limit), handled as Ctrl-C."""


def record_signal(signum: int) -> int:
    """Record a stop signal; how many have been received so far."""
    _signalled.append(signum)
    return len(_signalled)


def signals_received() -> tuple[int, ...]:
    """The stop signals received, in order."""
    return tuple(_signalled)


def stop_requested() -> bool:
    """Whether this process received SIGINT or SIGTERM under ``stop_on_signals``."""
    return bool(_signalled)


def raise_if_stopped() -> None:
    """Raise :class:`KeyboardInterrupt` (:class:`Terminated` for SIGTERM) if a stop signal came."""
    if _signalled:
        raise Terminated() if _signalled[0] == signal.SIGTERM else KeyboardInterrupt()


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
                done, pending = wait(pending, timeout=POLL_S * 4, return_when=FIRST_COMPLETED)
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

#: Seconds between two looks of a wait that a stop signal must be able to interrupt.
POLL_S = 0.05
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
            time.sleep(POLL_S)

    for p in procs:
        with contextlib.suppress(psutil.Error):
            p.terminate()
    alive = running(procs, grace_s)
    for p in alive:
        with contextlib.suppress(psutil.Error):
            p.kill()
    return {p.pid for p in running(alive, grace_s)}
