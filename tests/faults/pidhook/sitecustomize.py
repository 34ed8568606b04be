"""Test hook, active only where a fault test or benchmarks/signal_repeat.py puts this folder on
``PYTHONPATH`` and sets ``LIE_STATS_PID_DIR``: every Python process that starts (the driver, the
Dask worker processes a nanny spawns, multiprocessing's resource tracker) and every process
such a process forks (a ``ProcessPoolExecutor``'s workers; ``"forked": true``) writes
``<pid>.json`` there as it starts: its pid, parent pid, start time (field 22 of
``/proc/self/stat``, to tell a reused pid apart) and command line. A test reads these files
after the driver has exited and asks ``/proc`` whether each process is still alive: an event
each process reported itself, not a count sampled at one moment.

``SIGUSR1`` makes a recorded process dump every thread's stack to ``<pid>.stack`` (faulthandler),
to see where a process that should have exited waits.
"""

import os

_DIR = os.environ.get("LIE_STATS_PID_DIR")


def _record(forked: bool) -> None:
    import json

    pid = os.getpid()
    with open("/proc/self/cmdline", "rb") as fh:
        cmdline = [a.decode("utf-8", "replace") for a in fh.read().split(b"\0") if a]
    with open("/proc/self/stat") as fh:
        start = int(fh.read().rsplit(")", 1)[1].split()[19])
    record = {"pid": pid, "ppid": os.getppid(), "start": start, "cmdline": cmdline, "forked": forked}
    tmp = os.path.join(_DIR, f".{pid}.tmp")
    with open(tmp, "w") as fh:
        json.dump(record, fh)
    os.replace(tmp, os.path.join(_DIR, f"{pid}.json"))  # whole or absent


def _record_fork() -> None:
    try:
        _record(True)
    except OSError:
        pass


if _DIR:
    try:
        import faulthandler
        import signal

        _record(False)
        os.register_at_fork(after_in_child=_record_fork)
        _stack = open(os.path.join(_DIR, f"{os.getpid()}.stack"), "w")
        faulthandler.register(signal.SIGUSR1, file=_stack, all_threads=True)
    except OSError:
        pass
