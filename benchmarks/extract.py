"""Benchmark: `lie-stats extract` against the obvious baseline (issue 2, item 7).

For each Pythia shape (random init, GPT-NeoX, safetensors in ~2 GB shards with an index):
  * ours     : `lie-stats extract CKPT -o out.nc --families Q,O,QK,OV` (reads attention
               tensors lazily, one layer at a time);
  * baseline : `GPTNeoXForCausalLM.from_pretrained(CKPT)` (the whole model in memory), then
               the same metric code (`lie_stats.extraction.metrics.compute_layer`) on its attention weights.
Each runs in its own fresh subprocess, `repeats` times; we report the medians of wall time
and of peak resident memory (ru_maxrss of the child), and their ratios measured in the same
run, plus our read-vs-compute breakdown from the cube's provenance.

    python benchmarks/extract.py [--shapes 410m,1.4b] [--repeats 3] [--work DIR]

Writes benchmarks/extract_results.md (machine, command, medians, ratios).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import subprocess
import sys
import time
from pathlib import Path

SHAPES = {
    "70m": dict(num_hidden_layers=6, hidden_size=512, num_attention_heads=8, intermediate_size=2048),
    "160m": dict(num_hidden_layers=12, hidden_size=768, num_attention_heads=12, intermediate_size=3072),
    "410m": dict(num_hidden_layers=24, hidden_size=1024, num_attention_heads=16, intermediate_size=4096),
    "1.4b": dict(num_hidden_layers=24, hidden_size=2048, num_attention_heads=16, intermediate_size=8192),
}
FAMILIES = "Q,O,QK,OV"
HERE = Path(__file__).resolve().parent


def make_checkpoint(shape: str, path: Path, *, seed: int = 0, shard_bytes: int = 2 << 30) -> Path:
    """Write a random-init Pythia-shaped GPT-NeoX checkpoint (safetensors shards + index)."""
    import torch
    from safetensors.torch import save_file
    from transformers import GPTNeoXConfig, GPTNeoXForCausalLM

    if (path / "config.json").exists():
        return path
    tmp = path.with_name(path.name + ".tmp")
    tmp.mkdir(parents=True, exist_ok=True)
    cfg = GPTNeoXConfig(vocab_size=50304, max_position_embeddings=2048, rotary_pct=0.25,
                        use_parallel_residual=True, tie_word_embeddings=False, **SHAPES[shape])
    cfg.architectures = ["GPTNeoXForCausalLM"]
    with torch.device("meta"):
        meta = GPTNeoXForCausalLM(cfg)
    gen = torch.Generator().manual_seed(seed)
    shard: dict[str, torch.Tensor] = {}
    size = 0
    weight_map: dict[str, str] = {}
    n_shard = 0

    def flush() -> None:
        nonlocal shard, size, n_shard
        if not shard:
            return
        n_shard += 1
        name = f"model-{n_shard:05d}.safetensors"
        save_file(shard, str(tmp / name), metadata={"format": "pt"})
        for k in shard:
            weight_map[k] = name
        shard, size = {}, 0

    for name, p in meta.state_dict().items():
        if p.dtype.is_floating_point:
            t = torch.randn(p.shape, generator=gen) * 0.02 if p.ndim > 1 else torch.zeros(p.shape)
            if name.endswith("layernorm.weight") or name.endswith("final_layer_norm.weight"):
                t = torch.ones(p.shape)
        else:
            continue
        shard[name] = t.contiguous()
        size += t.numel() * 4
        if size >= shard_bytes:
            flush()
    flush()
    total = sum((tmp / f).stat().st_size for f in set(weight_map.values()))
    (tmp / "model.safetensors.index.json").write_text(
        json.dumps({"metadata": {"total_size": total}, "weight_map": weight_map}, indent=1))
    cfg.save_pretrained(tmp)
    os.replace(tmp, path)
    return path


BASELINE = r"""
import sys, time, json, torch
t0 = time.perf_counter()
from transformers import GPTNeoXForCausalLM
from lie_stats.extraction.metrics import compute_layer
from lie_stats.extraction.architectures import adapter_for
path = sys.argv[1]
model = GPTNeoXForCausalLM.from_pretrained(path, torch_dtype=torch.float32)
sd = model.state_dict()
t1 = time.perf_counter()
ad = adapter_for(model.config.to_dict(), list(sd), source=path)
for layer in range(ad.shape.n_layers):
    w = ad.layer_weights(layer, lambda n: sd[n])
    compute_layer(w, families=tuple(sys.argv[2].split(",")), projections=("none",), null_draws=64, seed=0, device="cpu")
t2 = time.perf_counter()
print(json.dumps({"load_s": t1 - t0, "compute_s": t2 - t1}))
"""


def run_measured(cmd: list[str]) -> tuple[float, float, str]:
    """Fork/exec with os.wait4 so that the peak RSS is this child's alone."""
    t0 = time.perf_counter()
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    _, status, usage = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - t0
    out, err = proc.stdout.read(), proc.stderr.read()
    proc.returncode = os.waitstatus_to_exitcode(status)
    if proc.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd)} failed ({proc.returncode}):\n{err[-3000:]}")
    return wall, usage.ru_maxrss / 1024.0, out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--shapes", default="410m,1.4b")
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--work", default=str(HERE.parent / "_scratch" / "bench"))
    ap.add_argument("--out", default=str(HERE / "extract_results.md"))
    args = ap.parse_args(argv)
    work = Path(args.work)
    exe = sys.executable
    lie = str(Path(exe).with_name("lie-stats"))
    rows = []
    for shape in args.shapes.split(","):
        ckpt = make_checkpoint(shape, work / f"pythia-{shape}-shaped")
        ours_t, ours_m, base_t, base_m, breakdown, base_parts = [], [], [], [], [], []
        for r in range(args.repeats):
            out = work / f"out-{shape}-{r}.nc"
            for p in (out, out.with_name(out.name + ".shards")):
                subprocess.run(["rm", "-rf", str(p)], check=True)
            t, m, _ = run_measured([lie, "extract", str(ckpt), "-o", str(out), "--families", FAMILIES,
                                    "--device", "cpu", "--quiet"])
            ours_t.append(t)
            ours_m.append(m)
            from lie_stats.cube import open_cube, provenance_of

            prov = provenance_of(open_cube(out))[0]
            breakdown.append(prov["timing"])
            t, m, text = run_measured([exe, "-c", BASELINE, str(ckpt), FAMILIES])
            base_t.append(t)
            base_m.append(m)
            base_parts.append(json.loads(text.strip().splitlines()[-1]))
            print(f"{shape} repeat {r}: ours {ours_t[-1]:.1f} s {ours_m[-1]:.0f} MiB; "
                  f"baseline {base_t[-1]:.1f} s {base_m[-1]:.0f} MiB", flush=True)
        med = statistics.median
        rows.append(dict(
            shape=shape, ours_s=med(ours_t), ours_mib=med(ours_m), base_s=med(base_t), base_mib=med(base_m),
            read_s=med(b["read_s"] for b in breakdown), compute_s=med(b["compute_s"] for b in breakdown),
            base_load_s=med(b["load_s"] for b in base_parts), base_compute_s=med(b["compute_s"] for b in base_parts),
            ckpt_gib=sum(f.stat().st_size for f in ckpt.glob("*.safetensors")) / 2**30,
        ))
    lines = [
        "# Extraction benchmark (issue 2, item 7)",
        "",
        f"- machine: {platform.machine()}, {os.cpu_count()} cores, {platform.platform()}, "
        f"python {platform.python_version()}",
        f"- command: `python benchmarks/extract.py --shapes {args.shapes} --repeats {args.repeats}`",
        f"- date: {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}",
        f"- families {FAMILIES}, projection none, 64 null draws per layer, float64 metric engine, CPU",
        "- ours: `lie-stats extract` in a fresh process; baseline: `from_pretrained` of the whole model, "
        "then the same metric code, in a fresh process; medians of the repeats; peak RSS from wait4",
        "",
        "| shape | checkpoint GiB | ours s | baseline s | speed-up | ours peak MiB | baseline peak MiB | memory ratio | ours read s | ours compute s | baseline load s | baseline compute s |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        lines.append(
            f"| {r['shape']} | {r['ckpt_gib']:.2f} | {r['ours_s']:.1f} | {r['base_s']:.1f} | "
            f"{r['base_s'] / r['ours_s']:.2f}x | {r['ours_mib']:.0f} | {r['base_mib']:.0f} | "
            f"{r['ours_mib'] / r['base_mib']:.2f} | {r['read_s']:.2f} | {r['compute_s']:.1f} | "
            f"{r['base_load_s']:.1f} | {r['base_compute_s']:.1f} |"
        )
    lines += ["", "Targets: speed-up >= 3x, memory ratio <= 0.33."]
    Path(args.out).write_text("\n".join(lines) + "\n")
    print("\n".join(lines))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
