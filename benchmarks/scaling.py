"""Benchmark: how extraction scales (issue 7, items 5.3 and 5.4).

Parts (``--parts workers,grid,suite``):

``workers``
    Wall time of ``lie-stats extract RUN -o OUT.nc --workers W --device cpu --quiet`` on a
    run folder of N random-init checkpoints (``step_0 ... step_{N-1}``, 70m-shaped attention,
    vocabulary 1024: only attention tensors are read) for W in 1, 2, 4 (W = 1 is in-process;
    W > 1 a Dask LocalCluster of W one-thread processes, its start-up included). Repeats
    interleave the W values; medians; speed-up = wall(1) / wall(W). All with
    OMP_NUM_THREADS=1, so W = 1 uses one core; the machine has 2 (shared with other jobs).
``grid``
    CPU time of ``lie_stats.extraction.pipeline.extract_checkpoint`` (the python API, in this process,
    ``time.process_time``; default options: families Q,K,V,O,QK,OV, 64 null draws, float64)
    on random-init GPT-NeoX checkpoints of one layer over d_model x n_heads in
    {256, 512, 1024} x {4, 8, 16}; medians of repeats. Fitted: log t = a + b log d_model +
    c log n_heads (OLS, statsmodels, 95 % CI), beside the same fit of the exact matmul FLOP
    count (:func:`flops_per_layer`, checked here against the recorded aten calls of every grid
    point).
``suite``
    On paper: the whole Pythia suite (8 sizes x 154 checkpoints, real configs) from the FLOP
    model and the measured rates, on CPU and on N GPU workers under stated assumptions
    (written to scaling_results.md; README.md quotes it).

    OMP_NUM_THREADS=1 nice -n 5 .venv/bin/python benchmarks/scaling.py --parts workers,grid,suite

Writes benchmarks/scaling_results.md / .json, benchmarks/scaling_workers.png,
benchmarks/scaling_grid.png.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import _bench as B  # noqa: E402

NULL_DRAWS = 64
GRID_D = (256, 512, 1024)
GRID_H = (4, 8, 16)

# ---- assumptions of the on-paper projection (part "suite"); every one is stated in the report
H100_FP64_TC_TFLOPS = 67.0  # NVIDIA H100 SXM datasheet: FP64 Tensor Core 67 TFLOP/s (FP64 34, FP32 67)
GPU_EFFICIENCY = (0.1, 0.3)  # fraction of that rate the engine's many small batched GEMMs reach (assumed band)
READ_GBPS = 1.0  # GB/s per worker from cluster storage (assumed), attention tensors only, float16 on disk
GPU_HOUR_USD = 3.0  # assumed price of one H100-hour
CLUSTER_N = (1, 8, 64)
HOST_CORES_PER_GPU = 8  # host cores per GPU worker that draw the null (haar_blocks runs on the CPU by design), assumed


def flops_per_layer(H: int, d: int, r: int, n: int = NULL_DRAWS) -> float:
    """Matmul FLOPs of ``compute_layer`` for one layer, default families Q,K,V,O,QK,OV, projection none.

    Counted from ``lie_stats/extraction/operators.py`` and ``metrics.py`` (valid for d_model >= 2 d_head;
    equal to the recorded ``mm``/``bmm`` FLOPs of every grid point, checked in part ``grid``):
    per Gram family (Q, K, V, O) the canonical form ``2 H d r^2``, the pairwise blocks
    ``2 (H r)^2 d``, the pair traces ``4 H^2 r^3``, the null ``2 n H r^3 + 2 n H^2 r^2 + 2 n H r^2
    + 2 n H^2 r``; per circuit family (QK, OV) the canonical form ``2 H r^3 + 4 H d r^2``, the
    pairwise blocks ``4 r^2 d H (H + 1)``, the pair traces ``4 H^2 r^3``, the null
    ``n r^3 (14 H + 3 H (H - 1)) + 4 n H r^2 + 4 n H^2 r``; per layer the head norms ``4 H r^2 d``.
    """
    sym = (2 * H * d * r * r + 2 * (H * r) ** 2 * d + 4 * H * H * r ** 3
           + 2 * n * H * r ** 3 + 2 * n * H * H * r * r + 2 * n * H * r * r + 2 * n * H * H * r)
    circ = (2 * H * r ** 3 + 4 * H * d * r * r + 4 * r * r * d * H * (H + 1) + 4 * H * H * r ** 3
            + n * r ** 3 * (14 * H + 3 * H * (H - 1)) + 4 * n * H * r * r + 4 * n * H * H * r)
    return float(4 * sym + 2 * circ + 4 * H * r * r * d)


def flops_per_checkpoint(size: str) -> float:
    c = B.PYTHIA[size]
    H, d = c["num_attention_heads"], c["hidden_size"]
    return c["num_hidden_layers"] * flops_per_layer(H, d, d // H)


# ----------------------------------------------------------------------------- workers
def make_run(work: Path, n: int, shape: str = "70m") -> Path:
    run = work / f"run-{shape}-shaped-{n}"
    c = dict(B.PYTHIA[shape])
    for i in range(n):
        B.make_neox_checkpoint(run / f"step_{i * 1000}", vocab_size=1024, seed=100 + i, **c)
    return run


def part_workers(work: Path, n: int, workers: list[int], repeats: int, log: list[str], shape: str = "70m") -> dict:
    run = make_run(work, n, shape)
    lie = str(Path(sys.executable).with_name("lie-stats"))
    times: dict[int, list[float]] = {w: [] for w in workers}
    cpus: dict[int, list[float]] = {w: [] for w in workers}
    loads: dict[int, list[str]] = {w: [] for w in workers}
    for rep in range(repeats):
        for w in workers:
            out = work / f"workers-{w}.nc"
            B.rm(out, out.with_name(out.name + ".shards"))
            r = B.run_measured([lie, "extract", str(run), "-o", str(out), "--workers", str(w), "--device", "cpu",
                                "--quiet"], env={"OMP_NUM_THREADS": "1"})
            n_done = len(B.cube_timing(out))
            if n_done != n:
                raise RuntimeError(f"--workers {w}: {n_done} checkpoints in the cube, expected {n}")
            B.rm(out, out.with_name(out.name + ".shards"))
            times[w].append(r["wall_s"])
            cpus[w].append(r["cpu_s"])
            loads[w].append(r["load_before"])
            msg = (f"{time.strftime('%H:%M:%S')} workers ({shape}) rep {rep}: --workers {w}: {r['wall_s']:.1f} s wall, "
                   f"{r['cpu_s']:.1f} s CPU (all processes) "
                   f"({n} checkpoints); load {r['load_before']}")
            print(msg, flush=True)
            log.append(msg)
    med = {w: statistics.median(t) for w, t in times.items()}
    c = B.PYTHIA[shape]
    return dict(n_checkpoints=n, shape=f"{shape} ({c['num_hidden_layers']} layers, d_model {c['hidden_size']}, "
                f"{c['num_attention_heads']} heads), vocab 1024", times=times,
                cpu=cpus, median_cpu={w: statistics.median(t) for w, t in cpus.items()},
                median=med, speedup={w: med[workers[0]] / med[w] for w in workers}, loads=loads)


# ----------------------------------------------------------------------------- grid
def _api_cpu(ckpt: Path) -> float:
    from lie_stats.extraction.pipeline import ExtractOptions, extract_checkpoint, plan_tasks

    (task,) = plan_tasks([str(ckpt)])
    c0 = time.process_time()
    extract_checkpoint(task, ExtractOptions(device="cpu"))
    return time.process_time() - c0


def part_grid(work: Path, repeats: int, log: list[str], grid_d=GRID_D, grid_h=GRID_H) -> dict:
    import numpy as np
    import statsmodels.api as sm
    import torch

    import limit as LM

    torch.set_num_threads(1)
    import lie_stats.extraction.pipeline  # noqa: F401  (imports outside the timed region)

    _api_cpu(B.make_neox_checkpoint(work / "grid-warm", num_hidden_layers=1, hidden_size=64,
                                    num_attention_heads=2, vocab_size=256))
    points = []
    for d in grid_d:
        for H in grid_h:
            ckpt = B.make_neox_checkpoint(work / f"grid-d{d}-h{H}", num_hidden_layers=1, hidden_size=d,
                                          num_attention_heads=H, vocab_size=1024)
            B.PYTHIA["_grid"] = dict(num_hidden_layers=1, hidden_size=d, num_attention_heads=H)
            counted = LM.count_layer("_grid")["matmul_flops"]
            model = flops_per_layer(H, d, d // H)
            if abs(counted - model) > 1e-9 * counted:
                raise RuntimeError(f"FLOP model {model} != recorded {counted} at d={d}, H={H}")
            ts = []
            load = B.load_averages()
            for _ in range(repeats):
                ts.append(_api_cpu(ckpt))
            t = statistics.median(ts)
            points.append(dict(d_model=d, n_heads=H, d_head=d // H, cpu_s=t, runs=ts, flops=counted,
                               gflops_rate=counted / t / 1e9, load=load))
            msg = (f"{time.strftime('%H:%M:%S')} grid d_model {d} heads {H}: {t:.2f} s CPU (runs "
                   f"{', '.join(f'{x:.2f}' for x in ts)}), {counted / 1e9:.2f} GFLOP, {counted / t / 1e9:.1f} GFLOP/s; load {load}")
            print(msg, flush=True)
            log.append(msg)
    X = sm.add_constant(np.column_stack([np.log([p["d_model"] for p in points]), np.log([p["n_heads"] for p in points])]))
    fits = {}
    for key in ("cpu_s", "flops"):
        y = np.log([p[key] for p in points])
        res = sm.OLS(y, X).fit()
        ci = res.conf_int(0.05)
        fits[key] = dict(b_d=float(res.params[1]), ci_d=[float(ci[1][0]), float(ci[1][1])],
                         c_h=float(res.params[2]), ci_h=[float(ci[2][0]), float(ci[2][1])],
                         r2=float(res.rsquared), n=int(res.nobs))
    # the Pythia-like line d_head = 64 (n_heads = d_model / 64) is a sub-case: t ~ d^(b + c) there
    return dict(points=points, fits=fits)


# ----------------------------------------------------------------------------- suite
def haar_cpu_seconds(k: int, s: int, reps: int = 2) -> float:
    """One-thread CPU seconds of one layer's null draws (``haar_blocks(64, k, s)``): always on the CPU."""
    import numpy as np
    import torch

    from lie_stats.extraction.operators import haar_blocks

    torch.set_num_threads(1)
    ts = []
    for i in range(reps):
        rng = np.random.default_rng(i)
        c0 = time.thread_time()
        haar_blocks(NULL_DRAWS, k, s, rng)
        ts.append(time.thread_time() - c0)
    return min(ts)


def part_suite(rates: dict, log: list[str]) -> dict:
    """Per-checkpoint FLOPs of each Pythia size and the projected wall time / cost."""
    sizes = list(B.PYTHIA_SIZES)
    rows = []
    haar: dict[tuple[int, int], float] = {}
    for s in sizes:
        c = B.PYTHIA[s]
        L, d, H = c["num_hidden_layers"], c["hidden_size"], c["num_attention_heads"]
        f = flops_per_checkpoint(s)
        attn_bytes_fp16 = L * (4 * d * d) * 2  # query_key_value (3 d^2) + dense (d^2), float16 on the hub
        cpu_s = f / (rates["cpu_gflops"] * 1e9)
        key = (d, 2 * (d // H))
        if key not in haar:
            haar[key] = haar_cpu_seconds(*key)
            msg = f"{time.strftime('%H:%M:%S')} haar_blocks(64, {key[0]}, {key[1]}): {haar[key]:.2f} s CPU, one thread; load {B.load_averages()}"
            print(msg, flush=True)
            log.append(msg)
        host_s = L * haar[key] / HOST_CORES_PER_GPU
        read_s = attn_bytes_fp16 / (READ_GBPS * 1e9)
        gpu_s = {str(e): f / (H100_FP64_TC_TFLOPS * 1e12 * e) + host_s + read_s for e in GPU_EFFICIENCY}
        rows.append(dict(size=s, layers=L, d_model=d, heads=H, d_head=d // H, tflop=f / 1e12,
                         attn_gb=attn_bytes_fp16 / 1e9, cpu_core_h=cpu_s / 3600, haar_layer_s=haar[key],
                         host_s=host_s, read_s=read_s, gpu_s=gpu_s))
    n_ck = B.PYTHIA_CHECKPOINTS
    total = dict(
        tflop=sum(r["tflop"] for r in rows) * n_ck,
        cpu_core_h=sum(r["cpu_core_h"] for r in rows) * n_ck,
        gpu_h={str(e): sum(r["gpu_s"][str(e)] for r in rows) * n_ck / 3600 for e in GPU_EFFICIENCY},
    )
    return dict(rows=rows, total=total, checkpoints=n_ck, rates=rates)


# ----------------------------------------------------------------------------- report
def write_report(data: dict, out: Path) -> None:
    L = [
        "# Extraction scaling (issue 7, items 5.3 and 5.4)",
        "",
        f"- machine: {data['machine']}; shared with other jobs (load averages 1/5/15 min with each measurement: the machine was loaded)",
        f"- command: `{data['command']}`",
        f"- date: {data['date']}",
        "",
    ]
    for wkey in [k for k in data if k.startswith("workers")]:
        w = data[wkey]
        L += [
            "## Workers (Dask LocalCluster, `--workers W`)",
            "",
            f"{w['n_checkpoints']} checkpoints of a {w['shape']}; `lie-stats extract RUN -o OUT.nc --workers W --device cpu --quiet`, "
            "OMP_NUM_THREADS=1, repeats interleaved over W, medians. Cluster start-up included. 2 cores: at most 2x is possible.",
            "",
            "| W | median wall s | runs (s) | speed-up vs W=1 | median CPU s, all processes | load averages |",
            "|---|---|---|---|---|---|",
        ]
        for k in w["median"]:
            L.append(f"| {k} | {w['median'][k]:.1f} | {', '.join(f'{x:.1f}' for x in w['times'][k])} | "
                     f"{w['speedup'][k]:.2f}x | {w.get('median_cpu', {}).get(k, float('nan')):.1f} | {'; '.join(w['loads'][k])} |")
        L.append("")
    if "grid" in data:
        g = data["grid"]
        f, fl = g["fits"]["cpu_s"], g["fits"]["flops"]
        L += [
            "## Cost growth with d_model and n_heads",
            "",
            "One-layer random-init GPT-NeoX checkpoints; CPU time of `extract_checkpoint` (python API, default options), "
            "median of repeats; FLOPs = recorded `mm`/`bmm` FLOPs (equal to `flops_per_layer`).",
            "",
            "| d_model | n_heads | d_head | CPU s | GFLOP | GFLOP/s | load |",
            "|---|---|---|---|---|---|---|",
        ]
        for p in g["points"]:
            L.append(f"| {p['d_model']} | {p['n_heads']} | {p['d_head']} | {p['cpu_s']:.2f} | {p['flops'] / 1e9:.2f} | "
                     f"{p['gflops_rate']:.1f} | {p['load']} |")
        L += [
            "",
            "Log-log OLS, `log y = a + b log d_model + c log n_heads` (statsmodels OLS, 95 % CI):",
            "",
            "| y | b (d_model) | 95 % CI | c (n_heads) | 95 % CI | R^2 | n |",
            "|---|---|---|---|---|---|---|",
            f"| CPU time | {f['b_d']:.2f} | [{f['ci_d'][0]:.2f}, {f['ci_d'][1]:.2f}] | {f['c_h']:.2f} | "
            f"[{f['ci_h'][0]:.2f}, {f['ci_h'][1]:.2f}] | {f['r2']:.3f} | {f['n']} |",
            f"| matmul FLOPs | {fl['b_d']:.2f} | [{fl['ci_d'][0]:.2f}, {fl['ci_d'][1]:.2f}] | {fl['c_h']:.2f} | "
            f"[{fl['ci_h'][0]:.2f}, {fl['ci_h'][1]:.2f}] | {fl['r2']:.3f} | {fl['n']} |",
            "",
            "At a fixed head width (d_head = d_model / n_heads, as in Pythia) the exponent in d_model is b + c.",
            "",
        ]
    if "suite" in data:
        s = data["suite"]
        rt = s["rates"]
        L += [
            "## The Pythia suite on paper",
            "",
            f"{len(s['rows'])} sizes x {s['checkpoints']} checkpoints, real configs; per checkpoint: matmul FLOPs from "
            "`flops_per_layer` x layers (default families, 64 null draws, float64, weights only).",
            "",
            "Assumptions (none of them measured here; no GPU was lent to this task):",
            f"- CPU: the achieved float64 rate of the engine on this machine, {rt['cpu_gflops']:.1f} GFLOP/s per core "
            f"({rt['cpu_source']}); CPU time = FLOPs / that rate (per-shape rates vary, see the grid).",
            f"- GPU: H100 SXM float64 tensor-core rate {H100_FP64_TC_TFLOPS:.0f} TFLOP/s (NVIDIA datasheet) x an efficiency "
            f"e in {{{', '.join(str(e) for e in GPU_EFFICIENCY)}}} (the engine is many small batched GEMMs of d_head-sized "
            f"blocks; its measured CPU efficiency is {rt['cpu_efficiency']:.2f} of the CPU GEMM peak), plus reading the "
            f"attention tensors (float16 on the hub) at {READ_GBPS:g} GB/s per worker, checkpoints already on cluster "
            "storage as safetensors; plus the null draws, which `compute_layer` takes on the CPU in float64 by design "
            f"(`operators.haar_blocks`, measured here per layer on one thread, divided by {HOST_CORES_PER_GPU} host cores "
            "per GPU, assumed); compute, null draws and read not overlapped.",
            f"- Cost: ${GPU_HOUR_USD:.2f} per H100-hour; checkpoints are independent, so N workers divide the wall time by N "
            "(no straggler or scheduling overhead counted).",
            "",
            "| size | L | d_model | H | d_head | TFLOP / ckpt | attn GB / ckpt | CPU core-h / ckpt | null draws CPU s / layer (1 thread) | "
            "GPU worker: host null s / ckpt | read s / ckpt | "
            + " | ".join(f"GPU worker s / ckpt (e={e})" for e in GPU_EFFICIENCY) + " |",
            "|---|---|---|---|---|---|---|---|---|---|---|" + "---|" * len(GPU_EFFICIENCY),
        ]
        for r in s["rows"]:
            L.append(f"| {r['size']} | {r['layers']} | {r['d_model']} | {r['heads']} | {r['d_head']} | {r['tflop']:.2f} | "
                     f"{r['attn_gb']:.2f} | {r['cpu_core_h']:.2f} | {r['haar_layer_s']:.2f} | {r['host_s']:.1f} | "
                     f"{r['read_s']:.1f} | "
                     + " | ".join(f"{r['gpu_s'][str(e)]:.1f}" for e in GPU_EFFICIENCY) + " |")
        t = s["total"]
        L += [
            "",
            f"Whole suite ({len(s['rows'])} x {s['checkpoints']} = {len(s['rows']) * s['checkpoints']} checkpoints): "
            f"{t['tflop'] / 1e3:.0f} PFLOP; on this CPU {t['cpu_core_h']:.0f} core-hours "
            f"({t['cpu_core_h'] / 24 / 365:.1f} core-years).",
            "",
            "| GPU workers N | " + " | ".join(f"wall (e={e})" for e in GPU_EFFICIENCY) + " | "
            + " | ".join(f"cost (e={e})" for e in GPU_EFFICIENCY) + " |",
            "|---|" + "---|" * (2 * len(GPU_EFFICIENCY)),
        ]
        for n in CLUSTER_N:
            L.append(f"| {n} | " + " | ".join(_hours(t['gpu_h'][str(e)] / n) for e in GPU_EFFICIENCY) + " | "
                     + " | ".join(f"${t['gpu_h'][str(e)] * GPU_HOUR_USD:,.0f}" for e in GPU_EFFICIENCY) + " |")
        L.append("")
    L += ["## Log", ""] + [f"    {x}" for x in data["log"]]
    out.write_text("\n".join(L) + "\n")
    print("\n".join(L))


def _hours(h: float) -> str:
    return f"{h:.1f} h" if h >= 1 else f"{h * 60:.0f} min"


def plot(data: dict, out_dir: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    for wkey in [k for k in data if k.startswith("workers")]:
        w = data[wkey]
        ks = [int(k) for k in w["median"]]
        fig, ax = plt.subplots(figsize=(5, 3.5))
        ax.plot(ks, [w["speedup"][k] for k in w["median"]], "o-", label="measured speed-up")
        ax.plot(ks, [min(k, 2) for k in ks], "--", color="grey", label="ideal on 2 cores")
        ax.set_xlabel("--workers")
        ax.set_ylabel("speed-up vs 1 worker")
        ax.set_xticks(ks)
        ax.legend(fontsize=8)
        ax.set_title(f"{w['n_checkpoints']} checkpoints, shared 2-core machine", fontsize=9)
        fig.tight_layout()
        fig.savefig(out_dir / f"scaling_{wkey}.png", dpi=110)
    if "grid" in data:
        g = data["grid"]
        fig, axes = plt.subplots(1, 2, figsize=(10, 3.8))
        for H in sorted({p["n_heads"] for p in g["points"]}):
            pts = [p for p in g["points"] if p["n_heads"] == H]
            axes[0].loglog([p["d_model"] for p in pts], [p["cpu_s"] for p in pts], "o-", label=f"{H} heads")
            axes[1].loglog([p["flops"] for p in pts], [p["cpu_s"] for p in pts], "o", label=f"{H} heads")
        axes[0].set_xlabel("d_model")
        axes[0].set_ylabel("CPU s per layer")
        axes[1].set_xlabel("matmul FLOPs per layer")
        axes[1].set_ylabel("CPU s per layer")
        f = g["fits"]["cpu_s"]
        axes[0].set_title(f"t ~ d^{f['b_d']:.2f} H^{f['c_h']:.2f}", fontsize=9)
        for ax in axes:
            ax.grid(True, which="both", alpha=0.3)
            ax.legend(fontsize=8)
        fig.tight_layout()
        fig.savefig(out_dir / "scaling_grid.png", dpi=110)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--parts", default="workers,grid,suite")
    ap.add_argument("--checkpoints", type=int, default=4)
    ap.add_argument("--run-shape", default="70m", help="Pythia shape of the run's checkpoints (part workers)")
    ap.add_argument("--workers", default="1,2,4")
    ap.add_argument("--repeats", type=int, default=2)
    ap.add_argument("--grid-d", default=",".join(map(str, GRID_D)))
    ap.add_argument("--grid-h", default=",".join(map(str, GRID_H)))
    ap.add_argument("--work", default=str(B.WORK))
    ap.add_argument("--out", default=str(B.HERE / "scaling_results.md"))
    ap.add_argument("--limit-json", default=str(B.HERE / "limit_results.json"),
                    help="limit.py's results: the achieved CPU rate used by part suite")
    args = ap.parse_args(argv)
    parts = args.parts.split(",")
    work = Path(args.work)
    out = Path(args.out)
    data = dict(machine=B.machine(), date=time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
                command="OMP_NUM_THREADS=1 nice -n 5 .venv/bin/python benchmarks/scaling.py "
                        + " ".join(argv if argv is not None else sys.argv[1:]), log=[])
    wkey = "workers" if args.run_shape == "70m" else f"workers_{args.run_shape}"
    if "workers" in parts:
        data[wkey] = part_workers(work, args.checkpoints, [int(x) for x in args.workers.split(",")],
                                  args.repeats, data["log"], args.run_shape)
    if "grid" in parts:
        data["grid"] = part_grid(work, args.repeats, data["log"], [int(x) for x in args.grid_d.split(",")],
                                 [int(x) for x in args.grid_h.split(",")])
    if "suite" in parts:
        lim = json.loads(Path(args.limit_json).read_text())
        big = max(lim["rows"], key=lambda r: r["matmul_gflop"])
        rates = dict(cpu_gflops=big["achieved_gflops"], cpu_efficiency=big["achieved_gflops"] / big["peak_gflops"],
                     cpu_source=f"the {big['size']} shape in limit_results.md: matmul FLOPs / CPU time of "
                                f"extract_checkpoint, one thread; GEMM peak {big['peak_gflops']:.1f} GFLOP/s")
        data["suite"] = part_suite(rates, data["log"])
    # parts not run now keep their earlier results (read at the end: parts may run in parallel commands)
    prev = json.loads(out.with_suffix(".json").read_text()) if out.with_suffix(".json").exists() else {}
    for part in [k for k in prev if k.startswith("workers")] + ["grid", "suite"]:
        if part not in data and part in prev:
            data[part] = prev[part]
    if prev and set(parts) != {"workers", "grid", "suite"}:
        data["log"] = prev.get("log", []) + data["log"]
        data["command"] = prev.get("command", "") + "` and `" + data["command"]
    out.with_suffix(".json").write_text(json.dumps(data, indent=1, default=str))
    write_report(data, out)
    plot(data, out.parent)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
