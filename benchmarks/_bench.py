"""Shared helpers of the benchmark scripts (not a benchmark itself).

* :func:`make_neox_checkpoint`: a random-init GPT-NeoX checkpoint of any shape (safetensors
  shards + index, a tiny word-level tokenizer so that loaders that insist on one, such as
  TransformerLens, work offline);
* :func:`run_measured`: run a command in a fresh child and return its wall time, CPU time
  (user + system, from ``wait4``: robust to other jobs time-sharing the cores), peak RSS
  (``ru_maxrss`` of that child alone), with an optional RSS watchdog that kills the child
  before it can exhaust a shared machine's memory;
* :func:`machine`, :func:`load_averages`, :func:`mem_available_gib`: what to record with
  every measurement.
"""

from __future__ import annotations

import json
import os
import platform
import subprocess
import threading
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
WORK = ROOT / "_scratch" / "h7bench"

#: Real Pythia configurations (EleutherAI/pythia-* config.json): layers, d_model, heads.
PYTHIA = {
    "70m": dict(num_hidden_layers=6, hidden_size=512, num_attention_heads=8),
    "160m": dict(num_hidden_layers=12, hidden_size=768, num_attention_heads=12),
    "410m": dict(num_hidden_layers=24, hidden_size=1024, num_attention_heads=16),
    "1b": dict(num_hidden_layers=16, hidden_size=2048, num_attention_heads=8),
    "1.4b": dict(num_hidden_layers=24, hidden_size=2048, num_attention_heads=16),
    "2.8b": dict(num_hidden_layers=32, hidden_size=2560, num_attention_heads=32),
    "6.9b": dict(num_hidden_layers=32, hidden_size=4096, num_attention_heads=32),
    "12b": dict(num_hidden_layers=36, hidden_size=5120, num_attention_heads=40),
}
PYTHIA_SIZES = tuple(PYTHIA)
#: Shapes for developing the scripts (not Pythia).
DEV_SHAPES = {"tiny": dict(num_hidden_layers=2, hidden_size=128, num_attention_heads=4)}
#: Checkpoints per Pythia model (step0, 1, 2, 4, ..., 512, then every 1000 to 143000).
PYTHIA_CHECKPOINTS = 154


def machine() -> str:
    cpu = "?"
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    mem = mem_total_gib()
    return (f"{platform.machine()}, {os.cpu_count()} cores ({cpu}), {mem:.0f} GiB RAM, "
            f"{platform.platform()}, python {platform.python_version()}")


def load_averages() -> str:
    a, b, c = os.getloadavg()
    return f"{a:.1f}/{b:.1f}/{c:.1f}"


def _meminfo(key: str) -> float:
    for line in Path("/proc/meminfo").read_text().splitlines():
        if line.startswith(key + ":"):
            return int(line.split()[1]) / 2**20
    raise KeyError(key)


def mem_available_gib() -> float:
    return _meminfo("MemAvailable")


def mem_total_gib() -> float:
    return _meminfo("MemTotal")


def _rss_bytes(pid: int) -> int:
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) * 1024
    except (OSError, ValueError):
        pass
    return 0


class MemoryGuardKilled(RuntimeError):
    """The child passed the RSS limit and was killed."""


def run_measured(cmd: list[str], *, env: dict[str, str] | None = None, rss_limit_gib: float | None = None,
                 timeout_s: float | None = None) -> dict:
    """Run ``cmd`` in a fresh child; wall/CPU time and peak RSS of that child alone (``os.wait4``).

    With ``rss_limit_gib`` a watchdog polls the child's RSS every 50 ms and kills it (SIGKILL)
    past the limit, raising :class:`MemoryGuardKilled`.
    """
    full_env = dict(os.environ)
    full_env.update(env or {})
    load = load_averages()
    t0 = time.perf_counter()
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=full_env)
    killed = {"rss": 0}
    stop = threading.Event()

    def watch() -> None:
        lim = rss_limit_gib * 2**30 if rss_limit_gib else None
        while not stop.is_set():
            rss = _rss_bytes(proc.pid)
            if lim is not None and rss > lim:
                killed["rss"] = rss
                proc.kill()
                return
            if timeout_s is not None and time.perf_counter() - t0 > timeout_s:
                killed["rss"] = -1
                proc.kill()
                return
            stop.wait(0.05)

    out_chunks: list[str] = []
    err_chunks: list[str] = []
    readers = [threading.Thread(target=lambda: out_chunks.append(proc.stdout.read()), daemon=True),
               threading.Thread(target=lambda: err_chunks.append(proc.stderr.read()), daemon=True)]
    for r in readers:
        r.start()
    w = threading.Thread(target=watch, daemon=True)
    w.start()
    _, status, usage = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - t0
    stop.set()
    for r in readers:
        r.join()
    proc.returncode = os.waitstatus_to_exitcode(status)
    out, err = "".join(out_chunks), "".join(err_chunks)
    if killed["rss"] > 0:
        raise MemoryGuardKilled(f"{cmd[:3]}... killed at RSS {killed['rss'] / 2**30:.1f} GiB "
                                f"(limit {rss_limit_gib:.1f} GiB) after {wall:.0f} s")
    if killed["rss"] < 0:
        raise MemoryGuardKilled(f"{cmd[:3]}... killed after the {timeout_s:.0f} s time limit")
    if proc.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd)} failed ({proc.returncode}):\n{err[-3000:]}")
    return dict(wall_s=wall, cpu_s=usage.ru_utime + usage.ru_stime, peak_mib=usage.ru_maxrss / 1024.0,
                stdout=out, load_before=load, load_after=load_averages())


def last_json(text: str) -> dict:
    return json.loads(text.strip().splitlines()[-1])


def write_tokenizer(path: Path) -> None:
    """A three-token word-level tokenizer (offline loaders want one; nothing here tokenizes text)."""
    from tokenizers import Tokenizer, models, pre_tokenizers
    from transformers import PreTrainedTokenizerFast

    tk = Tokenizer(models.WordLevel({"<unk>": 0, "<|endoftext|>": 1, "a": 2}, unk_token="<unk>"))
    tk.pre_tokenizer = pre_tokenizers.Whitespace()
    tok = PreTrainedTokenizerFast(tokenizer_object=tk, unk_token="<unk>", bos_token="<|endoftext|>",
                                  eos_token="<|endoftext|>", pad_token="<|endoftext|>")
    tok.save_pretrained(str(path))


def make_neox_checkpoint(path: Path, *, num_hidden_layers: int, hidden_size: int, num_attention_heads: int,
                         intermediate_size: int | None = None, vocab_size: int = 50304, seed: int = 0,
                         shard_bytes: int = 2 << 30) -> Path:
    """Write a random-init GPT-NeoX checkpoint (Pythia conventions) once; return its folder.

    N(0, 0.02) matrices, zero biases, unit norm gains, float32 safetensors in shards of
    ``shard_bytes`` with an index, the config, and a tiny tokenizer. Written to a temporary
    sibling and renamed, so a folder with a config.json is complete.
    """
    import torch
    from safetensors.torch import save_file
    from transformers import GPTNeoXConfig, GPTNeoXForCausalLM

    path = Path(path)
    if (path / "config.json").exists():
        return path
    tmp = path.with_name(path.name + ".tmp")
    tmp.mkdir(parents=True, exist_ok=True)
    cfg = GPTNeoXConfig(vocab_size=vocab_size, max_position_embeddings=2048, rotary_pct=0.25,
                        use_parallel_residual=True, tie_word_embeddings=False,
                        num_hidden_layers=num_hidden_layers, hidden_size=hidden_size,
                        num_attention_heads=num_attention_heads,
                        intermediate_size=intermediate_size or 4 * hidden_size)
    cfg.architectures = ["GPTNeoXForCausalLM"]
    with torch.device("meta"):
        meta = GPTNeoXForCausalLM(cfg)
    gen = torch.Generator().manual_seed(seed)
    shard: dict[str, torch.Tensor] = {}
    weight_map: dict[str, str] = {}
    state = {"size": 0, "n": 0}

    def flush() -> None:
        if not shard:
            return
        state["n"] += 1
        name = f"model-{state['n']:05d}.safetensors"
        save_file(shard, str(tmp / name), metadata={"format": "pt"})
        for k in shard:
            weight_map[k] = name
        shard.clear()
        state["size"] = 0

    for name, p in meta.state_dict().items():
        if not p.dtype.is_floating_point:
            continue
        if name.endswith("layernorm.weight") or name.endswith("final_layer_norm.weight"):
            t = torch.ones(p.shape)
        elif p.ndim > 1:
            t = torch.randn(p.shape, generator=gen) * 0.02
        else:
            t = torch.zeros(p.shape)
        shard[name] = t.contiguous()
        state["size"] += t.numel() * 4
        if state["size"] >= shard_bytes:
            flush()
    flush()
    total = sum((tmp / f).stat().st_size for f in set(weight_map.values()))
    (tmp / "model.safetensors.index.json").write_text(
        json.dumps({"metadata": {"total_size": total}, "weight_map": weight_map}, indent=1))
    cfg.save_pretrained(tmp)
    write_tokenizer(tmp)
    os.replace(tmp, path)
    return path


def pythia_checkpoint(size: str, work: Path = WORK, seed: int = 0) -> Path:
    """The random-init ``size``-shaped Pythia checkpoint under ``work`` (made once)."""
    return make_neox_checkpoint(work / f"pythia-{size}-shaped", seed=seed, **PYTHIA[size])


def cube_timing(out: Path) -> list[dict]:
    """Per-checkpoint ``timing`` (read_s, compute_s) from a cube's provenance."""
    from lie_stats.cube import open_cube, provenance_of

    return [p["timing"] for p in provenance_of(open_cube(out))]


def rm(*paths: Path) -> None:
    for p in paths:
        subprocess.run(["rm", "-rf", str(p)], check=True)
