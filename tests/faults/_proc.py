"""The processes a CLI run started, as they reported themselves (``pidhook/sitecustomize.py``).

A run started with :func:`tracked_env` has every Python process of its tree write
``<pid>.json`` (pid, parent, start time, command line) into a folder as it starts. After the
driver has exited, :func:`still_alive` asks ``/proc`` which of them still run (same pid *and*
start time, not a zombie), and :func:`wait_gone` waits, up to a stated bound, until none does.
No count of processes sampled at a moment is involved: each process recorded its own start,
and whether it still runs is read afterwards.

Shared by the signal fault tests and ``benchmarks/signal_repeat.py``.
"""

from __future__ import annotations

import json
import os
import pathlib
import signal
import time

REPO = pathlib.Path(__file__).resolve().parents[2]
HOOK = pathlib.Path(__file__).resolve().parent / "pidhook"


def _with_hook(env: dict[str, str]) -> dict[str, str]:
    """A copy of ``env`` with the hook's folder first on ``PYTHONPATH`` (once)."""
    env = dict(env)
    if str(HOOK) not in env.get("PYTHONPATH", "").split(os.pathsep):
        env["PYTHONPATH"] = os.pathsep.join([str(HOOK), env.get("PYTHONPATH", "")])
    return env


def tracked_env(pid_dir: pathlib.Path, base: dict[str, str] | None = None) -> dict[str, str]:
    """The environment of a run whose processes record themselves in ``pid_dir``."""
    env = dict(os.environ if base is None else base)
    env["PYTHONPATH"] = os.pathsep.join([str(REPO), env.get("PYTHONPATH", "")])
    env = _with_hook(env)
    env.setdefault("OMP_NUM_THREADS", "1")
    env["LIE_STATS_PID_DIR"] = str(pid_dir)
    pathlib.Path(pid_dir).mkdir(parents=True, exist_ok=True)
    return env


def holding_env(env: dict[str, str], *, where: str, folder: str, markers: pathlib.Path) -> dict[str, str]:
    """``env`` with the hook that holds a run still in checkpoint folder ``folder`` (``where``:
    ``task`` or ``read``, ``pidhook/sitecustomize.py``) until a signal; the holding process
    writes ``markers/<pid>.held``."""
    assert where in ("task", "read"), where
    env = _with_hook(env)
    pathlib.Path(markers).mkdir(parents=True, exist_ok=True)
    env["LIE_STATS_HOLD"] = json.dumps({"where": where, "folder": folder, "markers": str(markers)})
    return env


def holding(markers: pathlib.Path) -> list[int]:
    """The pids of the processes that hold still, as each wrote itself (``holding_env``)."""
    return sorted(int(p.read_text()) for p in pathlib.Path(markers).glob("*.held"))


def recorded(pid_dir: pathlib.Path) -> list[dict]:
    """Every process that recorded its start in ``pid_dir``."""
    out = []
    for path in sorted(pathlib.Path(pid_dir).glob("*.json")):
        out.append(json.loads(path.read_text()))
    return out


def is_worker(record: dict) -> bool:
    """A Dask worker process (spawned by a nanny through multiprocessing's spawn)."""
    return any("spawn_main" in a for a in record["cmdline"])


def role(record: dict) -> str:
    cmd = " ".join(record["cmdline"])
    if record.get("forked"):
        return "forked"
    if is_worker(record):
        return "worker"
    if "resource_tracker" in cmd:
        return "resource tracker"
    if "lie_stats" in cmd:
        return "driver"
    return "other"


def alive(record: dict) -> bool:
    """Whether the recorded process still runs: same pid and start time, not a zombie."""
    try:
        with open(f"/proc/{record['pid']}/stat") as fh:
            fields = fh.read().rsplit(")", 1)[1].split()
    except (FileNotFoundError, ProcessLookupError):
        return False
    return int(fields[19]) == record["start"] and fields[0] != "Z"


def still_alive(records: list[dict]) -> list[dict]:
    return [r for r in records if alive(r)]


def wait_gone(records: list[dict], bound_s: float) -> tuple[list[dict], float]:
    """Wait until no recorded process runs, at most ``bound_s`` seconds; return those still
    running then (``[]`` when all are gone) and the seconds waited."""
    t0 = time.monotonic()
    left = still_alive(records)
    while left and time.monotonic() - t0 < bound_s:
        time.sleep(0.05)
        left = still_alive(left)
    return left, time.monotonic() - t0


def dump_stacks(records: list[dict], pid_dir: pathlib.Path, wait_s: float = 1.0) -> dict[int, str]:
    """Ask each running recorded process for its threads' stacks (SIGUSR1, faulthandler)."""
    for r in still_alive(records):
        try:
            os.kill(r["pid"], signal.SIGUSR1)
        except ProcessLookupError:
            pass
    time.sleep(wait_s)
    stacks = {}
    for r in records:
        path = pathlib.Path(pid_dir) / f"{r['pid']}.stack"
        if path.exists() and path.stat().st_size:
            stacks[r["pid"]] = path.read_text()
    return stacks


def kill_all(records: list[dict]) -> None:
    """SIGKILL every recorded process still running (a test never leaves one behind)."""
    for r in still_alive(records):
        try:
            os.kill(r["pid"], signal.SIGKILL)
        except ProcessLookupError:
            pass


def tree_gone(pid_dir: pathlib.Path, bound_s: float) -> tuple[list[dict], list[dict]]:
    """After the driver has exited: wait up to ``bound_s`` seconds until no process of its
    tree runs, reading the records again until no new one appears (a process forked or spawned
    just before the driver died records itself a moment later). Returns (every record, those
    still running at the bound)."""
    t0 = time.monotonic()
    seen: dict[int, dict] = {}
    while True:
        fresh = [r for r in recorded(pid_dir) if r["pid"] not in seen]
        if not fresh and not still_alive(list(seen.values())):
            return list(seen.values()), []
        seen.update((r["pid"], r) for r in fresh)
        left, _ = wait_gone(list(seen.values()), max(0.0, bound_s - (time.monotonic() - t0)))
        if left:
            return list(seen.values()), left
