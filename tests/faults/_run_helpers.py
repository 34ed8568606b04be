"""Shared by the fault tests that drive the CLI as a real process: a hypothesis folder on the
synthetic datasets, starting the CLI, waiting for a condition or on ``/proc/locks``, and
holding an extraction still at a chosen checkpoint until a signal is sent."""

from __future__ import annotations

import os
import pathlib
import signal
import subprocess
import sys
import textwrap
import time

from . import _proc

REPO = pathlib.Path(__file__).resolve().parents[2]

HEADER = """\
from lie_stats.spec import HypothesisSpec, Prediction, Select
FAST = {"n_perm": 99, "n_boot": 20}
"""


def spec_text(name: str = "S1", ident: str = "S1", *, gate: str = "report", claim: str = "value norm tracks change",
              select_x: str = 'Select("value_norm")', datasets: str = '("synth",)') -> str:
    return textwrap.dedent(f"""
    {name} = HypothesisSpec(
        id={ident!r}, claim={claim!r}, source="essay", datasets={datasets},
        test="correlation", selection={{"x": {select_x}, "y": Select("change_from_init")}},
        params=FAST, prediction=Prediction("negative"), gate={gate!r})
    """)


def write_module(folder: pathlib.Path, name: str, *bodies: str) -> pathlib.Path:
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"{name}.py"
    path.write_text(HEADER + "".join(bodies), encoding="utf-8")
    return path


def env() -> dict[str, str]:
    out = dict(os.environ)
    out["PYTHONPATH"] = str(REPO) + os.pathsep + out.get("PYTHONPATH", "")
    out.setdefault("OMP_NUM_THREADS", "1")
    return out


def _default_signals() -> None:
    # a background CI job may start with SIGINT ignored, which exec inherits
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def lie(*args: str, cwd: pathlib.Path, timeout: float = 600) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "lie_stats", *map(str, args)], cwd=cwd, env=env(),
                          capture_output=True, text=True, timeout=timeout)


def start(*args: str, cwd: pathlib.Path, run_env: dict[str, str] | None = None, **kwargs) -> subprocess.Popen:
    """``lie-stats ARGS`` as a background process (``run_env``: its environment, default :func:`env`)."""
    return subprocess.Popen([sys.executable, "-m", "lie_stats", *map(str, args)], cwd=cwd,
                            env=env() if run_env is None else run_env, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, preexec_fn=_default_signals, **kwargs)


def wait_for(predicate, proc: subprocess.Popen, what: str, limit: float = 600.0) -> None:
    """Poll until ``predicate()``; fail if ``proc`` exits first (the limit only guards a hang)."""
    t0 = time.monotonic()
    while not predicate():
        if proc.poll() is not None:
            out, err = proc.communicate()
            raise AssertionError(f"the run exited ({proc.returncode}) before {what}:\n{out[-2000:]}\n{err[-2000:]}")
        if time.monotonic() - t0 > limit:
            proc.kill()
            raise AssertionError(f"gave up waiting for {what}")
        time.sleep(0.05)


def start_held(args: list[str], *, where: str, folder: str, cwd: pathlib.Path,
               base_env: dict[str, str] | None = None, **popen) -> subprocess.Popen:
    """Start ``lie-stats ARGS`` (an extraction) whose process extracting checkpoint folder
    ``folder`` holds still at ``where`` (``task``, ``read``: :func:`_proc.holding_env`) until a
    signal comes; :func:`signal_when_held` sends it. ``base_env`` (default :func:`env`) may
    record the run's processes (:func:`_proc.tracked_env`); ``popen`` goes to ``Popen``.
    ``proc.markers`` is the markers' folder."""
    markers = cwd / f"held-{os.urandom(4).hex()}"
    held_env = _proc.holding_env(env() if base_env is None else base_env, where=where, folder=folder,
                                 markers=markers)
    proc = start(*args, cwd=cwd, run_env=held_env, **popen)
    proc.markers = markers
    return proc


def wait_until_held(proc: subprocess.Popen, limit: float = 240.0) -> list[int]:
    """Wait for a :func:`start_held` run to hold still; the pids holding still."""
    wait_for(lambda: _proc.holding(proc.markers), proc, "the run to hold still at its checkpoint", limit=limit)
    return _proc.holding(proc.markers)


def signal_when_held(proc: subprocess.Popen, sig: int, limit: float = 240.0) -> tuple[str, str]:
    """Send ``sig`` to a :func:`start_held` run once it holds still; its (stdout, stderr). The
    process is killed if it is still alive when this returns."""
    try:
        assert wait_until_held(proc, limit) == [proc.pid]  # held in the driver itself
        proc.send_signal(sig)
        return proc.communicate(timeout=120)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()


def waits_on_lock(pid: int, lock: pathlib.Path) -> bool:
    """Whether process ``pid`` is blocked waiting for an flock on ``lock`` (``/proc/locks``)."""
    try:
        st = os.stat(lock)
    except FileNotFoundError:
        return False
    inode = f":{st.st_ino} "
    with open("/proc/locks") as fh:
        for line in fh:
            if "->" in line and f" {pid} " in line and inode in line:
                return True
    return False


HOLDER = """
import os, sys, fcntl
sys.path.insert(0, sys.argv[1])
from lie_stats._io import lock_path
fd = os.open(lock_path(sys.argv[2]), os.O_RDWR | os.O_CREAT, 0o644)
fcntl.flock(fd, fcntl.LOCK_EX)
print("locked", flush=True)
sys.stdin.readline()  # the test lets go once the run waits on the lock
exec(sys.argv[3])  # what a concurrent writer does while it holds the lock
os.close(fd)
print("released", flush=True)
"""


def hold_lock(target: pathlib.Path, action: str) -> subprocess.Popen:
    """A real process that holds the lock of ``target``, then runs ``action`` and lets go."""
    holder = subprocess.Popen([sys.executable, "-c", HOLDER, str(REPO), str(target), action], env=env(),
                              stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    assert holder.stdout.readline().strip() == "locked"
    return holder
