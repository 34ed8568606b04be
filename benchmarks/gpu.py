"""GPU path (issue 7, item 4): `--device cuda` against `--device cpu` on Pythia-shaped checkpoints.

For each shape (random-init GPT-NeoX, safetensors; ``_bench.pythia_checkpoint``), extracts
the whole cube (all six families, exact and both compressions, 64 null draws: the defaults)
with ``lie_stats.extraction.pipeline.extract`` on the CPU (all cores of the machine) and on CUDA (twice:
the first call pays CUDA's start-up), in this process, and records

* wall time of each extraction and the read / compute split from the cube's provenance;
* peak GPU memory (``torch.cuda.max_memory_allocated``);
* agreement: for every variable of the cube, the largest absolute and relative difference
  between the CUDA and the CPU values, and whether they agree within the tolerances of the
  ``gpu`` tests (``rtol=1e-7, atol=1e-9``, tests/test_metrics.py::test_cuda_equals_cpu).

Shapes in ``--cuda-only`` are extracted on CUDA alone (their CPU time is ``scaling.py``'s).
This is the device check of a session lent a GPU, run by ``benchmarks/device_run.sh``;
``--rehearse`` runs the "cuda" side on the CPU, to check the script on a machine without one.

    python benchmarks/gpu.py [--shapes 160m,410m] [--cuda-only 1.4b] [--out DIR] [--rehearse]

Writes ``OUT/gpu_results.json`` and ``OUT/gpu_results.md``.
"""

from __future__ import annotations

import argparse
import json
import platform
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
import _bench as B  # noqa: E402

RTOL, ATOL = 1e-7, 1e-9


def _extract(ckpt: Path, out: Path, device: str):
    import torch

    from lie_stats import schema
    from lie_stats.extraction.pipeline import ExtractOptions, extract

    if out.exists():
        out.unlink()
    if device == "cuda":
        torch.cuda.synchronize()
        torch.cuda.reset_peak_memory_stats()
    t = time.perf_counter()
    cube, failed = extract([str(ckpt)], out, options=ExtractOptions(device=device), progress=False)
    if device == "cuda":
        torch.cuda.synchronize()
    wall = time.perf_counter() - t
    if failed:
        raise SystemExit(f"{ckpt}: extraction failed on {device}: {failed}")
    peak = torch.cuda.max_memory_allocated() / 2**30 if device == "cuda" else None
    timing = json.loads(cube.attrs[schema.ATTR_PROVENANCE])[0]["timing"]
    return cube, dict(wall_s=wall, peak_gpu_gib=peak, **timing)


def _agreement(a, b) -> dict:
    rows = {}
    for name in a.data_vars:
        x, y = np.asarray(a[name].values, dtype=float), np.asarray(b[name].values, dtype=float)
        both = np.isfinite(x) & np.isfinite(y)
        same_nan = bool((np.isnan(x) == np.isnan(y)).all())
        diff = np.abs(x[both] - y[both])
        rel = diff / np.maximum(np.abs(y[both]), 1e-300)
        ok = same_nan and bool(np.allclose(x[both], y[both], rtol=RTOL, atol=ATOL))
        rows[name] = dict(max_abs=float(diff.max(initial=0.0)), max_rel=float(rel.max(initial=0.0)),
                          same_nan=same_nan, within_tolerance=ok)
    return rows


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--shapes", default="160m,410m")
    ap.add_argument("--cuda-only", default="1.4b")
    ap.add_argument("--work", type=Path, default=Path("/tmp/lie_stats_gpu"))
    ap.add_argument("--out", type=Path, default=Path("gpu_out"))
    ap.add_argument("--rehearse", action="store_true", help="run the 'cuda' side on the CPU (no GPU here)")
    args = ap.parse_args(argv)
    import torch

    cuda = "cpu" if args.rehearse else "cuda"
    if cuda == "cuda" and not torch.cuda.is_available():
        raise SystemExit("no CUDA device (use --rehearse to check the script on a CPU)")
    args.out.mkdir(parents=True, exist_ok=True)
    shapes = [s for s in args.shapes.split(",") if s]
    only = [s for s in args.cuda_only.split(",") if s]
    record = dict(
        command=" ".join(["python", "benchmarks/gpu.py", *(argv if argv is not None else sys.argv[1:])]),
        machine=B.machine(), python=platform.python_version(), torch=torch.__version__,
        device=torch.cuda.get_device_name(0) if cuda == "cuda" else "cpu (rehearsal)",
        cpu_threads=torch.get_num_threads(), tolerance=dict(rtol=RTOL, atol=ATOL), shapes={},
    )
    for shape in shapes + only:
        t = time.perf_counter()
        ckpt = B.pythia_checkpoint(shape, args.work) if shape in B.PYTHIA else B.make_neox_checkpoint(
            args.work / f"{shape}-shaped", **B.DEV_SHAPES[shape])
        row: dict = dict(build_s=time.perf_counter() - t)
        first, row["cuda_first"] = _extract(ckpt, args.work / f"{shape}.cuda1.nc", cuda)
        gpu, row["cuda"] = _extract(ckpt, args.work / f"{shape}.cuda2.nc", cuda)
        row["cuda_repeat_bitwise"] = all(np.array_equal(first[n].values, gpu[n].values, equal_nan=True)
                                         for n in gpu.data_vars)
        if shape in shapes:
            cpu, row["cpu"] = _extract(ckpt, args.work / f"{shape}.cpu.nc", "cpu")
            row["agreement"] = _agreement(gpu, cpu)
            row["all_within_tolerance"] = all(v["within_tolerance"] for v in row["agreement"].values())
            row["speedup"] = row["cpu"]["wall_s"] / row["cuda"]["wall_s"]
        record["shapes"][shape] = row
        print(json.dumps({shape: {k: v for k, v in row.items() if k != "agreement"}}, default=str), flush=True)
        (args.out / "gpu_results.json").write_text(json.dumps(record, indent=1, default=str))
    write_md(record, args.out / "gpu_results.md")
    ok = all(r.get("all_within_tolerance", True) and r["cuda_repeat_bitwise"] for r in record["shapes"].values())
    return 0 if ok else 1


def write_md(r: dict, path: Path) -> None:
    lines = [
        "# GPU path: `--device cuda` against `--device cpu` (issue 7, item 4)", "",
        f"- command: `{r['command']}`",
        f"- machine: {r['machine']}; device: {r['device']}; torch {r['torch']}; Python {r['python']}; "
        f"CPU threads {r['cpu_threads']}",
        f"- tolerance of the agreement: rtol {r['tolerance']['rtol']}, atol {r['tolerance']['atol']}", "",
        "| shape | CPU wall s | CUDA wall s (first call) | speed-up | CUDA read / compute s | peak GPU GiB "
        "| CUDA repeat bitwise | variables within tolerance | worst relative difference |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for shape, row in r["shapes"].items():
        c, g, g1 = row.get("cpu"), row["cuda"], row["cuda_first"]
        agree = row.get("agreement", {})
        worst = max(agree.items(), key=lambda kv: kv[1]["max_rel"], default=None)
        cells = [
            shape,
            f"{c['wall_s']:.1f}" if c else "-",
            f"{g['wall_s']:.2f} ({g1['wall_s']:.2f})",
            f"{row['speedup']:.1f}x" if c else "-",
            f"{g['read_s']:.2f} / {g['compute_s']:.2f}",
            f"{g['peak_gpu_gib']:.2f}" if g["peak_gpu_gib"] is not None else "-",
            str(row["cuda_repeat_bitwise"]),
            f"{sum(v['within_tolerance'] for v in agree.values())} of {len(agree)}" if agree else "-",
            f"{worst[0]}: {worst[1]['max_rel']:.1e}" if worst else "-",
        ]
        lines.append("| " + " | ".join(cells) + " |")
    path.write_text("\n".join(lines) + "\n")


if __name__ == "__main__":
    raise SystemExit(main())
