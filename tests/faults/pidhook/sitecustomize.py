"""Test hooks. Recording each process (below) and holding a run still at a checkpoint (at the
end of this file, with ``LIE_STATS_HOLD``).

Recording is active only where a fault test or benchmarks/signal_repeat.py puts this folder on
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
    _write_whole(_DIR, f"{pid}.json", json.dumps(record))


def _write_whole(folder: str, name: str, text: str) -> None:
    """Write ``folder/name`` so that a reader sees it whole or not at all."""
    tmp = os.path.join(folder, f".{os.getpid()}.tmp")
    with open(tmp, "w") as fh:
        fh.write(text)
    os.replace(tmp, os.path.join(folder, name))


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


# --- holding a run still at a chosen checkpoint ---------------------------------------------
#
# With ``LIE_STATS_HOLD`` set (JSON: {"where": "task" or "read", "folder": NAME, "markers": DIR}),
# the process that extracts the checkpoint folder NAME holds still there until a signal comes
# (or its parent process is gone), after writing ``DIR/<pid>.held``: a test sends its signal on
# that event, never after a delay, so the run cannot have finished or not yet started.
# ``task``: before the checkpoint's work starts (an interrupt is raised in Python there).
# ``read``: inside the checkpoint's first weight-file read of its extraction, whose library
# turns the interrupt into its own error (as a safetensors read can).
_HOLD = os.environ.get("LIE_STATS_HOLD")


def _hold(markers: str) -> None:
    import time

    pid, parent = os.getpid(), os.getppid()
    _write_whole(markers, f"{pid}.held", str(pid))  # the event the test signals on
    deadline = time.monotonic() + 300  # guards a lost signal only
    while time.monotonic() < deadline and os.getppid() == parent:
        time.sleep(0.01)
    raise RuntimeError("held checkpoint released without a stop signal")


def _install_hold(how: dict) -> None:
    import functools
    import importlib.abc
    import importlib.util
    import pathlib
    import sys
    import threading

    state = threading.local()

    def patch_extraction(module) -> None:
        real = module.extract_checkpoint

        @functools.wraps(real)  # pickled by reference, as the original (Dask workers)
        def extract_checkpoint(task, options):
            mine = task.checkpoint.path.name == how["folder"]
            if mine and how["where"] == "task":
                _hold(how["markers"])
            state.reading = mine
            try:
                return real(task, options)
            finally:
                state.reading = False

        module.extract_checkpoint = extract_checkpoint

    def patch_safetensors(module) -> None:
        real = module.safe_open

        def safe_open(path, *args, **kwargs):
            if getattr(state, "reading", False) and pathlib.Path(path).parent.name == how["folder"]:
                state.reading = False
                try:
                    _hold(how["markers"])
                except KeyboardInterrupt:
                    raise RuntimeError("Error while deserializing header: interrupted") from None
            return real(path, *args, **kwargs)

        module.safe_open = safe_open

    patches = {"lie_stats.extraction.pipeline": patch_extraction, "safetensors": patch_safetensors}

    class PatchOnImport(importlib.abc.MetaPathFinder):
        def find_spec(self, fullname, path, target=None):
            patch = patches.pop(fullname, None)
            if patch is None:
                return None
            spec = importlib.util.find_spec(fullname)  # this finder no longer answers for it
            run_module = spec.loader.exec_module

            def exec_module(module):
                run_module(module)
                patch(module)

            spec.loader.exec_module = exec_module
            return spec

    sys.meta_path.insert(0, PatchOnImport())


if _HOLD:
    import json as _json

    _install_hold(_json.loads(_HOLD))
