"""Benchmark: lie_stats' per-head metrics against TransformerLens' composition scores (issue 7, item 5.1).

Per-checkpoint cost of the two ways to get per-head weight geometry from a checkpoint, on the
same locally created random-init Pythia-shaped GPT-NeoX checkpoints (70m, 160m, 410m shapes;
safetensors, float32):

* ours: ``lie-stats extract CKPT -o OUT.nc --device cpu --quiet`` (default families
  Q,K,V,O,QK,OV, projection none, 64 null draws per layer, float64 engine): every
  within-layer metric of METRICS.md §3-§5 for every head pair, with the null;
* TransformerLens 4.3.0: load the checkpoint (``GPTNeoXForCausalLM.from_pretrained`` of the
  local folder, ``TransformerBridge.boot_transformers(path, hf_model=...)``, then
  ``enable_compatibility_mode()``, which is TL 4's stand-in for the removed
  ``HookedTransformer.from_pretrained``: LayerNorm folding, weight centring), then
  ``all_composition_scores(mode)`` for Q, K and V (every head pair across layers).

The two compute different quantities (within-layer Lie-algebraic metrics with a null vs
cross-layer composition scores); what is compared is the cost of the per-checkpoint
analysis. Each run is a fresh child process (``_bench.run_measured``): wall time, CPU time
(user + system; robust to other jobs sharing the cores), peak RSS of that child. Ours and
TL alternate within each repeat; medians over repeats; both with OMP_NUM_THREADS=1 (the
machine has 2 cores shared with other jobs).

Memory safety (24 GB machine shared with other jobs): TL runs only when its projected peak
fits (MemAvailable - margin), the 160m shape only with >= 20 GiB available, and an RSS
watchdog kills the TL child past MemAvailable - margin. A shape that does not fit is reported
as not run, with the projection from the measured shapes (peak and time linear in
``(n_layers n_heads)^2 d_model d_head``, the size of TL's broadcast composition products).

TransformerLens is not a project dependency; it lives in its own venv::

    python3 -m venv _scratch/tlvenv
    _scratch/tlvenv/bin/pip install torch==2.13.0            # the CPU wheel; never unpinned
    _scratch/tlvenv/bin/pip install transformer-lens==4.3.0 -e .

Run::

    OMP_NUM_THREADS=1 nice -n 5 .venv/bin/python benchmarks/transformerlens.py --shapes 70m,160m,410m --repeats 3

Writes benchmarks/transformerlens_results.md, benchmarks/transformerlens_results.json and
benchmarks/transformerlens.png.
"""

from __future__ import annotations

import argparse
import json
import math
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import _bench as B  # noqa: E402

TL_PYTHON = B.ROOT / "_scratch" / "tlvenv" / "bin" / "python"
MARGIN_GIB = 2.5
MIN_AVAILABLE_160M_GIB = 20.0

TL_CHILD = r"""
import json, sys, time
t0 = time.perf_counter()
import torch
from transformers import GPTNeoXForCausalLM
from transformer_lens.model_bridge import TransformerBridge
t_import = time.perf_counter() - t0
path = sys.argv[1]
t0 = time.perf_counter()
hf = GPTNeoXForCausalLM.from_pretrained(path, dtype=torch.float32)
bridge = TransformerBridge.boot_transformers(path, hf_model=hf, device="cpu")
bridge.enable_compatibility_mode()
t_load = time.perf_counter() - t0
out = {"import_s": t_import, "load_s": t_load}
for mode in "QKV":
    t0 = time.perf_counter()
    with torch.no_grad():
        sc = bridge.all_composition_scores(mode).scores
    out[f"scores_{mode}_s"] = time.perf_counter() - t0
    L, H = sc.shape[0], sc.shape[1]
    mask = (torch.arange(L)[:, None, None, None] < torch.arange(L)[None, None, :, None]).expand(L, H, L, H)
    upper = sc[mask]
    assert bool(torch.isfinite(sc).all()) and 0 < float(upper.mean()) < 1, mode
    out[f"mean_{mode}"] = float(upper.mean())
    out["shape"] = list(sc.shape)
    del sc
print(json.dumps(out))
"""


def tl_size(size: str) -> float:
    """``(L H)^2 d_model d_head``: elements of one broadcast operand of TL's composition product."""
    c = B.PYTHIA[size]
    L, d, H = c["num_hidden_layers"], c["hidden_size"], c["num_attention_heads"]
    return float((L * H) ** 2 * d * (d // H))


def fit_linear(xs: list[float], ys: list[float]) -> tuple[float, float]:
    """y = a + b x through the points (least squares; exact for two)."""
    n = len(xs)
    mx, my = sum(xs) / n, sum(ys) / n
    sxx = sum((x - mx) ** 2 for x in xs)
    b = sum((x - mx) * (y - my) for x, y in zip(xs, ys)) / sxx
    return my - b * mx, b


def run_ours(ckpt: Path, out: Path) -> dict:
    lie = str(Path(sys.executable).with_name("lie-stats"))
    B.rm(out, out.with_name(out.name + ".shards"))
    r = B.run_measured([lie, "extract", str(ckpt), "-o", str(out), "--device", "cpu", "--quiet"],
                       env={"OMP_NUM_THREADS": "1"})
    r.update(B.cube_timing(out)[0])
    B.rm(out, out.with_name(out.name + ".shards"))
    return r


def run_tl(ckpt: Path, rss_limit_gib: float) -> dict:
    r = B.run_measured([str(TL_PYTHON), "-c", TL_CHILD, str(ckpt)],
                       env={"OMP_NUM_THREADS": "1", "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1"},
                       rss_limit_gib=rss_limit_gib)
    r.update(B.last_json(r.pop("stdout")))
    return r


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--shapes", default="70m,160m,410m")
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--tl-repeats", type=int, default=None, help="TL repeats for shapes >= 160m (default: --repeats)")
    ap.add_argument("--large-repeats", type=int, default=1,
                    help="repeats of ours for shapes above 160m (TL does not fit in memory there)")
    ap.add_argument("--merge", action="store_true",
                    help="keep the other shapes' rows of the existing results (this run's shapes are redone)")
    ap.add_argument("--work", default=str(B.WORK))
    ap.add_argument("--out", default=str(B.HERE / "transformerlens_results.md"))
    args = ap.parse_args(argv)
    if not TL_PYTHON.exists():
        raise SystemExit(f"{TL_PYTHON} missing: create the TransformerLens venv (see the docstring).")
    work = Path(args.work)
    shapes = args.shapes.split(",")
    B.PYTHIA.update(B.DEV_SHAPES)  # "tiny" for developing the script
    rows: dict[str, dict] = {}
    log: list[str] = []
    out_json = Path(args.out).with_suffix(".json")
    prev = json.loads(out_json.read_text()) if (args.merge and out_json.exists()) else None
    if prev:  # earlier shapes first (their TL peaks inform the memory gate), this run's replace them
        rows.update({k: v for k, v in prev["rows"].items() if k not in shapes})
    for size in shapes:
        ckpt = B.pythia_checkpoint(size, work)
        subprocess_warm(ckpt)
        ours, tl, notes = [], [], []
        reps_tl = args.repeats if (args.tl_repeats is None or size == "70m") else args.tl_repeats
        n_rep = args.repeats if size in ("tiny", "70m", "160m") else args.large_repeats
        for rep in range(n_rep):
            o = run_ours(ckpt, work / f"tl-ours-{size}.nc")
            ours.append(o)
            msg = (f"{time.strftime('%H:%M:%S')} {size} rep {rep}: ours {o['wall_s']:.1f} s wall, {o['cpu_s']:.1f} s CPU, "
                   f"{o['peak_mib']:.0f} MiB (read {o['read_s']:.2f} s, compute {o['compute_s']:.1f} s); "
                   f"load {o['load_before']}")
            if rep < reps_tl:
                avail = B.mem_available_gib()
                measured = [s for s in rows if rows[s]["tl"]]
                projected = None
                if len(measured) >= 2:
                    a, b = fit_linear([tl_size(s) for s in measured],
                                      [rows[s]["tl_peak_mib"] / 1024 for s in measured])
                    projected = a + b * tl_size(size)
                elif len(measured) == 1:  # one shape's peak + two more float32 broadcast operands
                    s0 = measured[0]
                    projected = rows[s0]["tl_peak_mib"] / 1024 + 8 * (tl_size(size) - tl_size(s0)) / 2**30
                elif tl_size(size) * 4 * 2 / 2**30 > avail - MARGIN_GIB:  # two float32 operands
                    projected = tl_size(size) * 4 * 2 / 2**30
                if size not in ("70m", "tiny") and avail < MIN_AVAILABLE_160M_GIB:
                    notes.append(f"rep {rep}: TL not run, MemAvailable {avail:.1f} GiB < {MIN_AVAILABLE_160M_GIB} GiB")
                elif projected is not None and projected > avail - MARGIN_GIB:
                    notes.append(f"rep {rep}: TL not run, projected peak {projected:.1f} GiB > MemAvailable "
                                 f"{avail:.1f} GiB - {MARGIN_GIB} GiB")
                else:
                    try:
                        t = run_tl(ckpt, rss_limit_gib=avail - MARGIN_GIB)
                        tl.append(t)
                        msg += (f"; TL {t['wall_s']:.1f} s wall, {t['cpu_s']:.1f} s CPU, {t['peak_mib']:.0f} MiB "
                                f"(load {t['load_s']:.1f} s, Q/K/V {t['scores_Q_s']:.1f}/{t['scores_K_s']:.1f}/"
                                f"{t['scores_V_s']:.1f} s); MemAvailable {avail:.1f} GiB; load {t['load_before']}")
                    except B.MemoryGuardKilled as e:
                        notes.append(f"rep {rep}: TL killed by the memory guard: {e}")
                if notes and notes[-1].startswith(f"rep {rep}"):
                    msg += "; " + notes[-1]
            print(msg, flush=True)
            log.append(msg)
        med = statistics.median
        row = dict(
            size=size, layers=B.PYTHIA[size]["num_hidden_layers"], d_model=B.PYTHIA[size]["hidden_size"],
            heads=B.PYTHIA[size]["num_attention_heads"], ckpt_gib=sum(f.stat().st_size for f in ckpt.glob("*.safetensors")) / 2**30,
            n_ours=len(ours), ours_wall=med(o["wall_s"] for o in ours), ours_cpu=med(o["cpu_s"] for o in ours),
            ours_peak_mib=med(o["peak_mib"] for o in ours), ours_read=med(o["read_s"] for o in ours),
            ours_compute=med(o["compute_s"] for o in ours), tl=bool(tl), n_tl=len(tl), notes=notes,
            loads=[o["load_before"] for o in ours] + [t["load_before"] for t in tl],
        )
        if tl:
            row.update(
                tl_wall=med(t["wall_s"] for t in tl), tl_cpu=med(t["cpu_s"] for t in tl),
                tl_peak_mib=med(t["peak_mib"] for t in tl), tl_load=med(t["load_s"] for t in tl),
                tl_import=med(t["import_s"] for t in tl),
                tl_scores=med(t["scores_Q_s"] + t["scores_K_s"] + t["scores_V_s"] for t in tl),
            )
        rows[size] = row
    if prev:
        order = [s for s in B.PYTHIA if s in rows]
        rows = {s: rows[s] for s in order}
        log = prev["log"] + log
    for r in rows.values():
        r.pop("tl_projected", None)
    # projections for shapes TL could not run
    measured = [s for s in rows if rows[s]["tl"]]
    proj_note = ""
    if len(measured) >= 2:
        xs = [tl_size(s) for s in measured]
        fits = {k: fit_linear(xs, [rows[s][k] for s in measured]) for k in ("tl_peak_mib", "tl_wall", "tl_cpu")}
        exps = {k: math.log(rows[measured[-1]][k] / rows[measured[0]][k]) / math.log(xs[-1] / xs[0])
                for k in ("tl_peak_mib", "tl_cpu")}
        for s in rows:
            if not rows[s]["tl"]:
                x = tl_size(s)
                rows[s]["tl_projected"] = {k: a + b * x for k, (a, b) in fits.items()}
        proj_note = (f"projection: y = a + b (L H)^2 d_model d_head fitted through {', '.join(measured)}; "
                     f"log-log slopes between them: peak {exps['tl_peak_mib']:.2f}, CPU time {exps['tl_cpu']:.2f}")
    data = dict(machine=B.machine(), date=time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
                command=((prev["command"] + "` then `") if prev else "")
                + "OMP_NUM_THREADS=1 nice -n 5 .venv/bin/python benchmarks/transformerlens.py "
                + " ".join(argv if argv is not None else sys.argv[1:]),
                rows=rows, log=log, projection=proj_note)
    Path(args.out).with_suffix(".json").write_text(json.dumps(data, indent=1))
    write_report(data, Path(args.out))
    plot(data, Path(args.out).with_name("transformerlens.png"))
    return 0


def subprocess_warm(ckpt: Path) -> None:
    """Read the checkpoint once so that every run sees a warm page cache."""
    for f in sorted(ckpt.iterdir()):
        with open(f, "rb") as fh:
            while fh.read(1 << 24):
                pass


def write_report(data: dict, out: Path) -> None:
    rows = data["rows"]
    L = [
        "# lie_stats vs TransformerLens composition scores (issue 7, item 5.1)",
        "",
        f"- machine: {data['machine']}; shared with other jobs (load averages per run below: the machine was loaded)",
        f"- command: `{data['command']}`",
        f"- date: {data['date']}",
        "- ours: `lie-stats extract CKPT -o OUT.nc --device cpu --quiet` (families Q,K,V,O,QK,OV, projection none, "
        "64 null draws, float64); TransformerLens 4.3.0: `GPTNeoXForCausalLM.from_pretrained` + "
        "`TransformerBridge.boot_transformers(path, hf_model=...)` + `enable_compatibility_mode()` + "
        "`all_composition_scores(m)` for m in Q, K, V (float32). Fresh child per run, OMP_NUM_THREADS=1, "
        "ours and TL alternating; medians; peak = ru_maxrss of the child; CPU = user + system time.",
        "",
        "| shape | L x H, d | ckpt GiB | ours wall s | ours CPU s | ours peak MiB | ours read s | TL wall s | TL CPU s | TL peak MiB | TL load s | TL scores s | wall ratio TL/ours | CPU ratio TL/ours | memory ratio TL/ours | n (ours, TL) |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for r in rows.values():
        base = (f"| {r['size']} | {r['layers']} x {r['heads']}, {r['d_model']} | {r['ckpt_gib']:.2f} | {r['ours_wall']:.1f} | "
                f"{r['ours_cpu']:.1f} | {r['ours_peak_mib']:.0f} | {r['ours_read']:.2f} | ")
        if r["tl"]:
            base += (f"{r['tl_wall']:.1f} | {r['tl_cpu']:.1f} | {r['tl_peak_mib']:.0f} | {r['tl_load']:.1f} | "
                     f"{r['tl_scores']:.1f} | {r['tl_wall'] / r['ours_wall']:.2f}x | {r['tl_cpu'] / r['ours_cpu']:.2f}x | "
                     f"{r['tl_peak_mib'] / r['ours_peak_mib']:.1f}x | {r['n_ours']}, {r['n_tl']} |")
        elif "tl_projected" in r:
            p = r["tl_projected"]
            base += (f"not run (projected {p['tl_wall']:.0f}) | not run (projected {p['tl_cpu']:.0f}) | "
                     f"not run (projected {p['tl_peak_mib'] / 1024:.0f} GiB) | - | - | "
                     f"projected {p['tl_wall'] / r['ours_wall']:.1f}x | projected {p['tl_cpu'] / r['ours_cpu']:.1f}x | "
                     f"projected {p['tl_peak_mib'] / r['ours_peak_mib']:.0f}x | {r['n_ours']}, 0 |")
        else:
            base += f"not run | | | | | | | | {r['n_ours']}, 0 |"
        L.append(base)
    L += ["", f"TL not-run shapes: {data['projection'] or 'no projection (fewer than two measured TL shapes)'}.", ""]
    for r in rows.values():
        for n in r["notes"]:
            L.append(f"- {r['size']}: {n}")
    L += ["", "Per-run log (time, wall, CPU, peak, load averages 1/5/15 min before each run):", ""]
    L += [f"    {line}" for line in data["log"]]
    out.write_text("\n".join(L) + "\n")
    print("\n".join(L))


def plot(data: dict, path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    rows = list(data["rows"].values())
    fig, axes = plt.subplots(1, 2, figsize=(10, 4))
    x = [tl_size(r["size"]) for r in rows]
    for ax, (k_o, k_t, lab) in zip(axes, [("ours_cpu", "tl_cpu", "CPU time per checkpoint (s)"),
                                          ("ours_peak_mib", "tl_peak_mib", "peak RSS (MiB)")]):
        ax.loglog(x, [r[k_o] for r in rows], "o-", label="lie_stats extract (6 families, null)")
        xt = [tl_size(r["size"]) for r in rows if r["tl"]]
        ax.loglog(xt, [r[k_t] for r in rows if r["tl"]], "s-", label="TransformerLens load + composition Q,K,V")
        xp = [tl_size(r["size"]) for r in rows if "tl_projected" in r]
        if xp:
            ax.loglog(xp, [r["tl_projected"][k_t] for r in rows if "tl_projected" in r], "x", ms=10,
                      label="TransformerLens, projected (not run)")
        for r in rows:
            ax.annotate(r["size"], (tl_size(r["size"]), r[k_o]), fontsize=8)
        ax.set_xlabel("(layers x heads)^2 x d_model x d_head")
        ax.set_ylabel(lab)
        ax.grid(True, which="both", alpha=0.3)
    axes[0].legend(fontsize=7)
    fig.suptitle("Pythia-shaped random checkpoints, CPU, OMP_NUM_THREADS=1 (shared, loaded machine)")
    fig.tight_layout()
    fig.savefig(path, dpi=110)


if __name__ == "__main__":
    raise SystemExit(main())
