"""Benchmark: a full extraction against its physical limit on this machine (issue 7, item 5.2).

For each Pythia shape (random init, as in ``transformerlens.py``):

1. **Read**: time to read every layer's attention tensors (``Checkpoint.iter_layers``, what
   ``lie-stats extract`` reads) from a warm page cache, in this process; median of repeats.
2. **FLOPs**: one layer of ``lie_stats.extraction.metrics.compute_layer`` (default families
   Q,K,V,O,QK,OV, projection none, 64 null draws, float64; every layer of a checkpoint has
   the same shapes) runs under a ``TorchDispatchMode`` that records every ``mm``/``bmm``
   (einsum and matmul lower to them) with its shapes, and every LAPACK call (``geqrf``,
   ``householder_product``, ``svd``). Matmul FLOPs = sum of ``2 b m k n``, cross-checked
   against ``torch.utils.flop_counter.FlopCounterMode``; LAPACK FLOPs by the textbook counts
   (Golub & Van Loan), reported apart. Both times ``n_layers``.
3. **Rate**: the machine's float64 matmul rate on one thread: (a) a 2048^3 GEMM (the peak),
   (b) each recorded matmul shape replayed alone on random tensors (the rate the BLAS gets
   on exactly the shapes the engine uses).
4. **Limit** = read + matmul FLOPs / rate (a: "peak limit"; b: "shape limit").
5. **Extraction**: ``lie-stats extract CKPT -o OUT.nc --device cpu --quiet`` in a fresh
   child (wall, CPU time; read/compute split from the cube's provenance); median of repeats.

Ratios reported: extraction / limit, for the whole command (imports and cube writing
included) and for its read + compute part. Goal: within 2x. Everything on one thread
(OMP_NUM_THREADS=1; the machine has 2 cores shared with other jobs); times are CPU times
where they are measured in this process (``time.thread_time``, robust to time-sharing), and
both wall and CPU time for the child.

    OMP_NUM_THREADS=1 nice -n 5 .venv/bin/python benchmarks/limit.py --shapes 70m,160m,410m --repeats 3

Writes benchmarks/limit_results.md / .json and benchmarks/limit.png.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
import types
from collections import Counter
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import _bench as B  # noqa: E402

import torch  # noqa: E402
from torch.utils._python_dispatch import TorchDispatchMode  # noqa: E402

MATMUL_OPS = ("mm", "bmm")
LAPACK_OPS = ("geqrf", "linalg_householder_product", "_linalg_svd")


class OpRecorder(TorchDispatchMode):
    """Counts every matmul / LAPACK aten call by (op, operand shapes, dtype)."""

    def __init__(self) -> None:
        super().__init__()
        self.calls: Counter = Counter()
        self.other: Counter = Counter()

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):  # noqa: ANN001
        name = func.overloadpacket.__name__
        shapes = tuple(tuple(a.shape) for a in args if isinstance(a, torch.Tensor))
        if name in MATMUL_OPS or name in LAPACK_OPS:
            self.calls[(name, shapes, str(args[0].dtype))] += 1
        else:
            self.other[name] += 1
        return func(*args, **(kwargs or {}))


class OpTimer(TorchDispatchMode):
    """CPU time (``time.thread_time``) spent inside each aten op, by op name and by (op, shapes)."""

    def __init__(self) -> None:
        super().__init__()
        self.by_op: Counter = Counter()
        self.by_shape: Counter = Counter()
        self.n: Counter = Counter()

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):  # noqa: ANN001
        name = func.overloadpacket.__name__
        t0 = time.thread_time()
        out = func(*args, **(kwargs or {}))
        dt = time.thread_time() - t0
        self.by_op[name] += dt
        self.n[name] += 1
        self.by_shape[(name, tuple(tuple(a.shape) for a in args if isinstance(a, torch.Tensor)))] += dt
        return out


def time_layer_ops(size: str) -> dict:
    """Where one layer's ``compute_layer`` CPU time goes: matmul, LAPACK, other aten ops, the rest (Python, numpy)."""
    from lie_stats.extraction.metrics import compute_layer

    w = random_layer(size)
    compute_layer(w)
    c0 = time.thread_time()
    compute_layer(w)  # uninstrumented: the timer's own Python overhead is not the engine's
    total = time.thread_time() - c0
    tm = OpTimer()
    with tm:
        compute_layer(w)
    mm = sum(v for k, v in tm.by_op.items() if k in MATMUL_OPS)
    lap = sum(v for k, v in tm.by_op.items() if k in LAPACK_OPS)
    rest = sum(v for k, v in tm.by_op.items() if k not in MATMUL_OPS and k not in LAPACK_OPS)
    top = [dict(op=k[0], shapes=[list(x) for x in k[1]], s=v) for k, v in tm.by_shape.most_common(10)]
    others = [dict(op=k, s=v, calls=tm.n[k]) for k, v in tm.by_op.most_common() if k not in MATMUL_OPS][:8]
    return dict(total_s=total, matmul_s=mm, lapack_s=lap, other_aten_s=rest,
                python_s=max(0.0, total - mm - lap - rest), top=top, top_other=others)


def op_flops(name: str, shapes: tuple) -> float:
    """FLOPs of one call (matmul exact; LAPACK textbook leading terms, Golub & Van Loan)."""
    if name == "mm":
        (m, k), (_, n) = shapes[0], shapes[1]
        return 2.0 * m * k * n
    if name == "bmm":
        (b, m, k), (_, _, n) = shapes[0], shapes[1]
        return 2.0 * b * m * k * n
    a = shapes[0]
    batch = 1
    for x in a[:-2]:
        batch *= x
    m, n = a[-2], a[-1]
    if name == "geqrf":  # Householder QR, m >= n: 2 m n^2 - 2 n^3 / 3
        k = min(m, n)
        return batch * (2.0 * m * n * k - 2.0 * k ** 3 / 3)
    if name == "linalg_householder_product":  # form Q (m x n) from n reflectors: 4 m n^2 - 2 (m + n) n^2 + 4 n^3 / 3
        return batch * (4.0 * m * n * n - 2.0 * (m + n) * n * n + 4.0 * n ** 3 / 3)
    if name == "_linalg_svd":  # Golub-Kahan-Reinsch with U, V of a square-ish matrix: ~ 4 m^2 n + 22 n^3
        return batch * (4.0 * m * m * n + 22.0 * n ** 3) if m >= n else batch * (4.0 * n * n * m + 22.0 * m ** 3)
    raise ValueError(name)


def random_layer(size: str, seed: int = 0) -> types.SimpleNamespace:
    c = B.PYTHIA[size]
    H, d = c["num_attention_heads"], c["hidden_size"]
    r = d // H
    g = torch.Generator().manual_seed(seed)
    mk = lambda *s: torch.randn(*s, generator=g) * 0.02  # noqa: E731
    return types.SimpleNamespace(layer=0, W_Q=mk(H, d, r), W_K=mk(H, d, r), W_V=mk(H, d, r), W_O=mk(H, r, d))


def count_layer(size: str) -> dict:
    """Record the ops of one layer's ``compute_layer`` (default options); FLOPs and a cross-check."""
    from torch.utils.flop_counter import FlopCounterMode

    from lie_stats.extraction.metrics import compute_layer

    w = random_layer(size)
    rec = OpRecorder()
    with rec:
        compute_layer(w)
    fc = FlopCounterMode(display=False)
    with fc:
        compute_layer(w)
    mm = sum(op_flops(n, s) * c for (n, s, _), c in rec.calls.items() if n in MATMUL_OPS)
    lap = sum(op_flops(n, s) * c for (n, s, _), c in rec.calls.items() if n in LAPACK_OPS)
    return dict(calls=rec.calls, other_ops=sum(rec.other.values()), matmul_flops=mm, lapack_flops=lap,
                flopcounter=float(fc.get_total_flops()))


def _time(f, reps: int) -> float:
    """Median CPU time of this thread per call (robust to other processes sharing the core)."""
    f()
    ts = []
    for _ in range(reps):
        t0 = time.thread_time()
        f()
        ts.append(time.thread_time() - t0)
    return statistics.median(ts)


def peak_rate(reps: int = 5) -> float:
    """float64 GFLOP/s of a 2048^3 GEMM, one thread."""
    a = torch.randn(2048, 2048, dtype=torch.float64)
    b = torch.randn(2048, 2048, dtype=torch.float64)
    return 2 * 2048 ** 3 / _time(lambda: a @ b, reps) / 1e9


def replay_matmuls(calls: Counter, reps: int = 3) -> dict:
    """Each recorded matmul shape alone on random tensors: CPU seconds for all its calls."""
    total = 0.0
    flops = 0.0
    per = []
    for (name, shapes, dtype), count in calls.items():
        if name not in MATMUL_OPS:
            continue
        dt = getattr(torch, dtype.replace("torch.", ""))
        x, y = (torch.randn(*s, dtype=dt) for s in shapes[:2])
        op = torch.mm if name == "mm" else torch.bmm
        t = _time(lambda: op(x, y), reps)
        f = op_flops(name, shapes)
        total += t * count
        flops += f * count
        per.append((f * count, t * count, name, shapes))
    per.sort(reverse=True)
    return dict(seconds=total, flops=flops, rate_gflops=flops / total / 1e9,
                top=[dict(op=n, shapes=[list(s) for s in sh], gflop=f / 1e9, s=t, gflops=f / t / 1e9)
                     for f, t, n, sh in per[:8]])


def read_time(ckpt: Path, reps: int) -> float:
    """Seconds to read every layer's attention tensors (warm page cache), median of reps."""
    from lie_stats.extraction.sources import open_source

    (c,) = open_source(str(ckpt))
    ts = []
    for _ in range(reps + 1):
        t0 = time.perf_counter()
        for _w in c.iter_layers():
            pass
        ts.append(time.perf_counter() - t0)
    return statistics.median(ts[1:])


def api_extract(ckpt: Path) -> dict:
    """``lie_stats.extraction.pipeline.extract_checkpoint`` in this process: CPU and wall seconds of read + compute."""
    from lie_stats.extraction.pipeline import ExtractOptions, extract_checkpoint, plan_tasks

    (task,) = plan_tasks([str(ckpt)])
    opts = ExtractOptions(device="cpu")
    c0, t0 = time.process_time(), time.perf_counter()
    shard = extract_checkpoint(task, opts)
    cpu, wall = time.process_time() - c0, time.perf_counter() - t0
    assert shard.sizes["family"] == 6, shard.sizes
    return dict(api_cpu_s=cpu, api_wall_s=wall)


def import_overhead() -> dict:
    """CPU/wall seconds of a child that only imports what ``lie-stats extract`` imports."""
    r = B.run_measured([sys.executable, "-c", "import lie_stats.cli, lie_stats.extraction.pipeline, lie_stats.cube, "
                        "lie_stats.extraction.metrics, lie_stats.extraction.sources, transformers"], env={"OMP_NUM_THREADS": "1"})
    return dict(imp_cpu_s=r["cpu_s"], imp_wall_s=r["wall_s"])


def run_extract(ckpt: Path, out: Path) -> dict:
    lie = str(Path(sys.executable).with_name("lie-stats"))
    B.rm(out, out.with_name(out.name + ".shards"))
    r = B.run_measured([lie, "extract", str(ckpt), "-o", str(out), "--device", "cpu", "--quiet"],
                       env={"OMP_NUM_THREADS": "1"})
    r.update(B.cube_timing(out)[0])
    B.rm(out, out.with_name(out.name + ".shards"))
    r.pop("stdout")
    return r


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--shapes", default="70m,160m,410m")
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--large-repeats", type=int, default=1, help="repeats for shapes above 160m")
    ap.add_argument("--cli-shapes", default="tiny,70m,160m",
                    help="shapes whose whole `lie-stats extract` command is also timed (transformerlens.py times it for all)")
    ap.add_argument("--work", default=str(B.WORK))
    ap.add_argument("--out", default=str(B.HERE / "limit_results.md"))
    args = ap.parse_args(argv)
    torch.set_num_threads(1)
    B.PYTHIA.update(B.DEV_SHAPES)
    import lie_stats.extraction.pipeline  # noqa: F401  (imports outside the timed regions)
    work = Path(args.work)
    rows = []
    log = []
    for size in args.shapes.split(","):
        L = B.PYTHIA[size]["num_hidden_layers"]
        ckpt = B.pythia_checkpoint(size, work)
        load0 = B.load_averages()
        cnt = count_layer(size)
        peak = peak_rate()
        rep = replay_matmuls(cnt["calls"])
        rd = read_time(ckpt, args.repeats)
        brk = time_layer_ops(size)
        ex = []
        n_rep = args.repeats if size in ("tiny", "70m", "160m") else args.large_repeats
        cli = size in args.cli_shapes.split(",")
        for i in range(n_rep):
            e = api_extract(ckpt)
            if i == 0 and cli:  # the whole command once (its read + compute part is what api_extract times)
                e.update(run_extract(ckpt, work / f"limit-{size}.nc"))
                e.update(import_overhead())
            ex.append(e)
            msg = (f"{time.strftime('%H:%M:%S')} {size} rep {i}: API extract_checkpoint {e['api_cpu_s']:.1f} s CPU, "
                   f"{e['api_wall_s']:.1f} s wall; load {B.load_averages()}")
            if i == 0 and cli:
                msg += (f"; lie-stats extract {e['wall_s']:.1f} s wall, {e['cpu_s']:.1f} s CPU (read {e['read_s']:.2f} s, "
                        f"compute {e['compute_s']:.1f} s wall), imports alone {e['imp_cpu_s']:.1f} s CPU; "
                        f"load before it {e['load_before']}")
            print(msg, flush=True)
            log.append(msg)
        med = statistics.median
        mmf = cnt["matmul_flops"] * L
        row = dict(
            size=size, layers=L, d_model=B.PYTHIA[size]["hidden_size"], heads=B.PYTHIA[size]["num_attention_heads"],
            matmul_gflop=mmf / 1e9, lapack_gflop=cnt["lapack_flops"] * L / 1e9,
            flopcounter_gflop=cnt["flopcounter"] * L / 1e9, other_ops_per_layer=cnt["other_ops"],
            matmul_calls_per_layer=sum(c for (n, _, _), c in cnt["calls"].items() if n in MATMUL_OPS),
            peak_gflops=peak, shape_gflops=rep["rate_gflops"], shape_s=rep["seconds"] * L, top_shapes=rep["top"],
            read_s=rd, limit_peak_s=rd + (mmf + cnt["lapack_flops"] * L) / peak / 1e9,
            limit_shape_s=rd + rep["seconds"] * L + cnt["lapack_flops"] * L / peak / 1e9,
            ex_wall=ex[0].get("wall_s"), ex_cpu=ex[0].get("cpu_s"),
            ex_core=med(e["api_cpu_s"] for e in ex), ex_core_wall=med(e["api_wall_s"] for e in ex),
            ex_imports=ex[0].get("imp_cpu_s"), ex_read=ex[0].get("read_s"), ex_compute=ex[0].get("compute_s"),
            loads=[load0, ex[0].get("load_before", B.load_averages())],
            n=len(ex), breakdown=brk,
        )
        row["achieved_gflops"] = mmf / 1e9 / row["ex_core"]
        msg = (f"{size}: matmul {row['matmul_gflop']:.1f} GFLOP (FlopCounterMode {row['flopcounter_gflop']:.1f}), "
               f"LAPACK {row['lapack_gflop']:.2f} GFLOP; peak {peak:.1f} GFLOP/s, shapes {rep['rate_gflops']:.1f} GFLOP/s; "
               f"read {rd:.3f} s; limit {row['limit_peak_s']:.2f} s (peak) / {row['limit_shape_s']:.2f} s (shapes); "
               f"extraction core {row['ex_core']:.1f} s CPU")
        print(msg, flush=True)
        log.append(msg)
        rows.append(row)
    data = dict(machine=B.machine(), date=time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
                command="OMP_NUM_THREADS=1 nice -n 5 .venv/bin/python benchmarks/limit.py "
                        + " ".join(argv if argv is not None else sys.argv[1:]), rows=rows, log=log)
    Path(args.out).with_suffix(".json").write_text(json.dumps(data, indent=1))
    write_report(data, Path(args.out))
    plot(data, Path(args.out).with_name("limit.png"))
    return 0


def write_report(data: dict, out: Path) -> None:
    L = [
        "# Extraction against its physical limit (issue 7, item 5.2)",
        "",
        f"- machine: {data['machine']}; shared with other jobs (load averages 1/5/15 min in the log: the machine was loaded)",
        f"- command: `{data['command']}`",
        f"- date: {data['date']}",
        "- extraction: `lie-stats extract CKPT -o OUT.nc --device cpu --quiet` (families Q,K,V,O,QK,OV, projection none, "
        "64 null draws, float64), fresh child, OMP_NUM_THREADS=1, once per shape (command CPU s, wall s); core = "
        "`lie_stats.extraction.pipeline.extract_checkpoint` (read + compute, the python API) in the benchmark process, CPU time "
        "(`time.process_time`; no imports, no cube writing), median of the repeats; imports = CPU time of a child "
        "that only imports",
        "- limit = read (attention tensors, warm page cache) + FLOPs of the extraction / float64 one-thread "
        "matmul rate: peak = matmul + LAPACK FLOPs at the 2048^3 GEMM rate; shapes = every matmul shape the engine "
        "calls, replayed alone, + LAPACK FLOPs at the GEMM rate. CPU times (`time.thread_time`), medians",
        "",
        "| shape | matmul GFLOP | LAPACK GFLOP | peak GFLOP/s | shape-replay GFLOP/s | achieved GFLOP/s | read s | limit (peak) s | limit (shapes) s | core CPU s | imports CPU s | command CPU s | command wall s | core / limit(peak) | command CPU / limit(peak) | core / limit(shapes) |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for r in data["rows"]:
        f1 = lambda v: "-" if v is None else f"{v:.1f}"  # noqa: E731
        cmd_ratio = "-" if r["ex_cpu"] is None else f"{r['ex_cpu'] / r['limit_peak_s']:.1f}x"
        L.append(
            f"| {r['size']} | {r['matmul_gflop']:.1f} | {r['lapack_gflop']:.2f} | {r['peak_gflops']:.1f} | "
            f"{r['shape_gflops']:.1f} | {r['achieved_gflops']:.1f} | {r['read_s']:.3f} | {r['limit_peak_s']:.2f} | "
            f"{r['limit_shape_s']:.2f} | {r['ex_core']:.1f} | {f1(r['ex_imports'])} | {f1(r['ex_cpu'])} | {f1(r['ex_wall'])} | "
            f"{r['ex_core'] / r['limit_peak_s']:.1f}x | {cmd_ratio} | "
            f"{r['ex_core'] / r['limit_shape_s']:.1f}x |"
        )
    L += ["", "FLOP cross-check (FlopCounterMode total, GFLOP): "
          + ", ".join(f"{r['size']} {r['flopcounter_gflop']:.1f}" for r in data["rows"]), ""]
    for r in data["rows"]:
        L.append(f"Largest matmul shapes of one {r['size']} layer (GFLOP, replayed CPU s, GFLOP/s):")
        for t in r["top_shapes"]:
            L.append(f"    {t['op']} {t['shapes']}: {t['gflop']:.2f} GFLOP, {t['s']:.3f} s, {t['gflops']:.1f} GFLOP/s")
        L.append(f"    ({r['matmul_calls_per_layer']} matmul calls and {r['other_ops_per_layer']} other aten calls per layer)")
        L.append("")
    L += ["Where one layer's `compute_layer` CPU time goes: layer CPU s = one uninstrumented call; the parts = every "
          "aten op timed with `time.thread_time` under a TorchDispatchMode in a second call; Python / numpy / dispatch = "
          "the difference (clipped at 0):", "",
          "| shape | layer CPU s | matmul s | LAPACK s | other aten ops s | Python / dispatch s | largest other ops |",
          "|---|---|---|---|---|---|---|"]
    for r in data["rows"]:
        b = r["breakdown"]
        oth = ", ".join(f"{o['op']} {o['s']:.2f} s ({o['calls']})" for o in b["top_other"][:5])
        L.append(f"| {r['size']} | {b['total_s']:.2f} | {b['matmul_s']:.2f} | {b['lapack_s']:.2f} | "
                 f"{b['other_aten_s']:.2f} | {b['python_s']:.2f} | {oth} |")
    L.append("")
    L += ["Per-run log:", ""] + [f"    {x}" for x in data["log"]]
    out.write_text("\n".join(L) + "\n")
    print("\n".join(L))


def plot(data: dict, path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    rows = data["rows"]
    fig, ax = plt.subplots(figsize=(7, 4))
    x = range(len(rows))
    w = 0.2
    ax.bar([i - 1.5 * w for i in x], [r["limit_peak_s"] for r in rows], w, label="limit: read + FLOPs / peak GEMM rate")
    ax.bar([i - 0.5 * w for i in x], [r["limit_shape_s"] for r in rows], w, label="limit: read + replayed matmul shapes")
    ax.bar([i + 0.5 * w for i in x], [r["ex_core"] for r in rows], w, label="extraction: read + compute (API, CPU time)")
    ax.bar([i + 1.5 * w for i in x], [r["ex_cpu"] or 0 for r in rows], w, label="extraction: whole command, CPU time")
    ax.set_xticks(list(x), [r["size"] for r in rows])
    ax.set_yscale("log")
    ax.set_ylabel("seconds per checkpoint (one thread)")
    ax.legend(fontsize=7)
    ax.set_title("Extraction vs physical limit (float64, CPU; shared loaded machine)", fontsize=9)
    fig.tight_layout()
    fig.savefig(path, dpi=110)


if __name__ == "__main__":
    raise SystemExit(main())
