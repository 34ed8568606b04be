"""One signal to `lie-stats extract --workers 2`, repeated at different moments of the run.

What it does
------------
1. Builds a run folder of ``--checkpoints`` tiny GPT-NeoX checkpoints (6 layers, d_model 64,
   4 heads; ``tests/_checkpoints.make_run``) and extracts it once in-process, uninterrupted:
   the reference cube.
2. Repeats ``--reps`` times (moments in turn, SIGTERM and SIGINT alternating)::

       lie-stats extract RUN -o OUT.nc --families Q --null-draws 64 --quiet --workers 2

   as a real subprocess (a real Dask ``LocalCluster`` of two spawned worker processes) in a
   process group of its own, and sends ONE signal at a moment: SIGTERM to the driver (as
   ``kill PID``), or SIGINT to the whole group (as a terminal's Ctrl-C: the workers get it
   too). The moments:

   ``cluster-start``
       as soon as the first worker process has started (the cluster is starting);
   ``first-shard``
       once the first shard is in ``OUT.nc.shards/``;
   ``last-shard``
       once every shard is there (the cluster is closing, or the shards are being merged);
   ``random``
       after a uniformly random delay between 0 and the wall time of an uninterrupted run.

   Every Python process of the run records its own pid and start time as it starts
   (``tests/faults/pidhook``), so that which of them still run is read from ``/proc``
   afterwards, not sampled.
3. Records per repetition: the moment, the signal, the exit status, the seconds from the
   signal to the driver's exit, the processes of the run still alive 30 s after the driver
   exited (and the seconds until the last was gone), and whether ``--resume --workers 2``
   completed a cube identical to the reference (``xarray.testing.assert_identical``, all but
   the creation time and the wall times of the provenance). A run that finished before the
   signal (exit 0) must have written that identical cube itself.
4. A repetition passes when the driver exited 130 (or 0 having finished first) within
   ``EXIT_BOUND_S``, no process of it was alive 30 s later, and the cube is identical.
   A driver still alive after ``EXIT_BOUND_S`` has every thread's stack dumped
   (faulthandler, SIGUSR1) into the results, then is killed.

    python benchmarks/signal_repeat.py [--reps 24] [--checkpoints 8] [--work DIR] [--seed 0]

Writes ``benchmarks/signal_repeat.md``.
"""

from __future__ import annotations

import argparse
import os
import random
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(ROOT))

from benchmarks._bench import load_averages, machine  # noqa: E402
from tests.faults import _proc  # noqa: E402

ARGS = ["--families", "Q", "--null-draws", "64", "--quiet"]
MOMENTS = ("cluster-start", "first-shard", "last-shard", "random")
#: Seconds from the signal to the driver's exit beyond which a repetition fails (and its stacks
#: are dumped): the guarantee is "within seconds"; this bound only stops a hang.
EXIT_BOUND_S = 60.0
#: Seconds after the driver's exit by which every process of the run must be gone.
ORPHAN_BOUND_S = 30.0


def _cmd(run: Path, out: Path, *extra: str) -> list[str]:
    return [sys.executable, "-m", "lie_stats", "extract", str(run), "-o", str(out), *ARGS, *extra]


def _comparable(path: Path):
    import xarray as xr  # noqa: F401

    from lie_stats import schema
    from lie_stats.cube import open_cube, provenance_of

    ds = open_cube(path)
    prov = [{k: v for k, v in p.items() if k != "timing"} for p in provenance_of(ds)]
    ds = ds.copy()
    for key in (schema.ATTR_CREATED, schema.ATTR_PROVENANCE):
        ds.attrs.pop(key, None)
    return ds, prov


def _same_cube(path: Path, reference: Path) -> str:
    """'' when ``path`` is identical to ``reference``, else what differs."""
    import xarray as xr

    try:
        a, pa = _comparable(path)
        b, pb = _comparable(reference)
        xr.testing.assert_identical(a, b)
    except Exception as e:  # noqa: BLE001 - reported, not raised
        return f"{type(e).__name__}: {str(e)[:300]}"
    return "" if pa == pb else "provenance differs"


def _preexec() -> None:
    signal.signal(signal.SIGINT, signal.SIG_DFL)  # a background job starts with SIGINT ignored


def one(rep: int, moment: str, sig: signal.Signals, run: Path, n: int, reference: Path, work: Path,
        wall: float, rng: random.Random) -> dict:
    folder = work / f"rep{rep:02d}"
    shutil.rmtree(folder, ignore_errors=True)
    pids = folder / "pids"
    env = _proc.tracked_env(pids)
    out = folder / "out.nc"
    store = Path(str(out) + ".shards")
    row = {"rep": rep, "moment": moment, "signal": sig.name + (" (group)" if sig == signal.SIGINT else "")}
    # SIGINT goes to the whole process group, as a terminal's Ctrl-C does (the workers get it
    # too); SIGTERM to the driver alone, as `kill PID` does
    proc = subprocess.Popen(_cmd(run, out, "--workers", "2"), cwd=folder, env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, preexec_fn=_preexec, start_new_session=True)
    t_start = time.monotonic()

    def ready() -> bool:
        if moment == "cluster-start":
            return any(_proc.is_worker(r) for r in _proc.recorded(pids))
        if moment == "first-shard":
            return store.is_dir() and any(store.glob("*.nc"))
        if moment == "last-shard":
            return (store.is_dir() and len(list(store.glob("*.nc"))) >= n) or out.exists()
        return time.monotonic() - t_start >= row["delay_s"]

    if moment == "random":
        row["delay_s"] = round(rng.uniform(0.0, wall), 2)
    while not ready() and proc.poll() is None and time.monotonic() - t_start < 600:
        time.sleep(0.01)
    row["signal_at_s"] = round(time.monotonic() - t_start, 2)
    row["shards_at_signal"] = len(list(store.glob("*.nc"))) if store.is_dir() else 0
    t_sig = time.monotonic()
    if proc.poll() is None:
        if sig == signal.SIGINT:
            os.killpg(proc.pid, sig)
        else:
            proc.send_signal(sig)
    try:
        _, stderr = proc.communicate(timeout=EXIT_BOUND_S)
        row["exit"] = proc.returncode
    except subprocess.TimeoutExpired:
        row["exit"] = "hung"
        row["stacks"] = _proc.dump_stacks(_proc.recorded(pids), pids)
        proc.kill()
        _, stderr = proc.communicate()
    row["exit_s"] = round(time.monotonic() - t_sig, 2)
    row["stderr"] = stderr.strip().splitlines()[-1:] if stderr.strip() else []
    records = _proc.recorded(pids)
    row["processes"] = len(records)
    row["workers"] = sum(_proc.is_worker(r) for r in records)
    left, waited = _proc.wait_gone(records, ORPHAN_BOUND_S)
    row["leftover"] = [(r["pid"], _proc.role(r)) for r in left]
    row["gone_s"] = round(waited, 2)
    _proc.kill_all(records)
    row["tmp_left"] = sorted(p.name for p in store.glob("*.tmp")) if store.is_dir() else []
    if row["exit"] == 130:
        done = subprocess.run(_cmd(run, out, "--resume", "--workers", "2"), cwd=folder, env=env,
                              capture_output=True, text=True, timeout=600)
        _proc.kill_all(_proc.recorded(pids))
        row["resume_exit"] = done.returncode
        row["cube"] = _same_cube(out, reference) if done.returncode == 0 else done.stderr[-300:]
    elif row["exit"] == 0:
        row["resume_exit"] = "-"
        row["cube"] = _same_cube(out, reference)
    else:
        row["resume_exit"] = "-"
        row["cube"] = "no cube"
    row["ok"] = (row["exit"] in (0, 130) and row["exit_s"] < EXIT_BOUND_S and not row["leftover"]
                 and row["cube"] == "" and not row["tmp_left"])
    return row


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--reps", type=int, default=24)
    ap.add_argument("--checkpoints", type=int, default=8)
    ap.add_argument("--work", type=Path, default=ROOT / "_scratch" / "signal_repeat")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--out", type=Path, default=HERE / "signal_repeat.md")
    ap.add_argument("--commit", default=None, help="the commit of the code measured (default: git rev-parse HEAD)")
    a = ap.parse_args(argv)
    from tests._checkpoints import make_run

    commit = a.commit or subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True,
                                        text=True).stdout.strip() or "?"
    rng = random.Random(a.seed)
    a.work.mkdir(parents=True, exist_ok=True)
    run = a.work / "run"
    if not run.is_dir():
        make_run(run, "gpt_neox", [10 * i for i in range(a.checkpoints)], n_layers=6, d_model=64, n_heads=4)
    reference = a.work / "reference.nc"
    env = _proc.tracked_env(a.work / "ref_pids")
    reference.unlink(missing_ok=True)
    subprocess.run(_cmd(run, reference), cwd=a.work, env=env, check=True, timeout=600)
    timed = a.work / "timed.nc"
    timed.unlink(missing_ok=True)
    t0 = time.monotonic()  # the wall time of an uninterrupted --workers 2 run: the random range
    subprocess.run(_cmd(run, timed, "--workers", "2"), cwd=a.work, env=env, check=True, timeout=600)
    wall = time.monotonic() - t0
    assert _same_cube(timed, reference) == "", "an uninterrupted --workers 2 run differs from in-process"
    load_before = load_averages()

    rows = []
    for rep in range(a.reps):
        moment = MOMENTS[rep % len(MOMENTS)]
        sig = (signal.SIGTERM, signal.SIGINT)[(rep // len(MOMENTS)) % 2]
        row = one(rep, moment, sig, run, a.checkpoints, reference, a.work, wall, rng)
        rows.append(row)
        print({k: v for k, v in row.items() if k != "stacks"}, flush=True)

    passed = sum(r["ok"] for r in rows)
    reached = sum(r["exit"] == 130 for r in rows)
    lines = [
        "# One signal to `lie-stats extract --workers 2`, repeated",
        "",
        f"Written by `python benchmarks/signal_repeat.py --reps {a.reps} --checkpoints {a.checkpoints} "
        f"--seed {a.seed}` ({time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}), lie_stats at commit {commit}.",
        "",
        f"Machine: {machine()}. Load averages before the repetitions: {load_before}; after: {load_averages()}.",
        f"Run: {a.checkpoints} checkpoints (GPT-NeoX, 6 layers, d_model 64, 4 heads), "
        f"`{' '.join(ARGS)} --workers 2`; an uninterrupted run took {wall:.1f} s.",
        "",
        "Columns: the moment the one signal was sent (seconds after start, shards then in the store),",
        "the driver's exit status and seconds from the signal to its exit, the processes the run",
        "started (each recorded its own pid; workers among them), those still alive "
        f"{ORPHAN_BOUND_S:.0f} s after the driver exited",
        "(and the seconds until the last was gone), and the `--resume --workers 2` that followed: its",
        "exit status and whether its cube is identical to the uninterrupted in-process one",
        "(`identical`; for a run that finished before the signal, its own cube).",
        "",
        f"**{passed} of {len(rows)} repetitions passed.** In {reached} the signal reached a running driver "
        f"(exit 130); in the {sum(r['exit'] == 0 for r in rows)} others with exit 0 the run had finished "
        f"before the signal (its cube is checked instead).",
        "",
        "| rep | moment | signal | sent at (s) | shards then | exit | exit after (s) | processes (workers) "
        "| alive after 30 s | all gone after (s) | resume exit | cube | ok |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        moment = r["moment"] + (f" ({r['delay_s']} s)" if "delay_s" in r else "")
        lines.append(
            f"| {r['rep']} | {moment} | {r['signal']} | {r['signal_at_s']} | {r['shards_at_signal']} | {r['exit']} "
            f"| {r['exit_s']} | {r['processes']} ({r['workers']}) | {len(r['leftover'])} | {r['gone_s']} "
            f"| {r['resume_exit']} | {'identical' if r['cube'] == '' else r['cube']} | {'yes' if r['ok'] else 'NO'} |")
    for r in rows:
        if r.get("stacks") or r["leftover"]:
            lines += ["", f"## rep {r['rep']}: leftover {r['leftover']}", ""]
            for pid, text in (r.get("stacks") or {}).items():
                lines += [f"pid {pid}:", "", "```", text.strip()[-6000:], "```", ""]
    a.out.write_text("\n".join(lines) + "\n")
    print(f"{passed}/{len(rows)} passed; wrote {a.out}")
    return 0 if passed == len(rows) else 1


if __name__ == "__main__":
    sys.exit(main())
