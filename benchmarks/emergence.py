"""Do attention sinks and anchor heads emerge with a ``<bos>`` at position 0, and by which step?

Trains one GPT-NeoX from scratch on the pico_pythia pretraining text (Austen + Shakespeare,
``datasets/pico_pythia/corpus.py``), with the suite's tokenizer (``datasets/pico_pythia/
tokenizer.json``) plus a dedicated ``<bos>`` special token, and the suite's recipe and code
(``datasets/pico_pythia/build.py``: config, Pythia small init, AdamW, warmup + cosine to 10 %,
data order a pure function of (data seed, step)). Every training window and every probe
sequence is ``<bos>`` followed by ``seq_len - 1`` text tokens.

At a log-then-linear grid of steps (0, 1, 2, 4, ..., up to ``--log-until``, then every
``--every`` steps, and the last) it measures, per head, with
:func:`lie_stats.extraction.activations.activation_metrics` on a held-out probe (``<bos>`` + text):
``sink_score``, ``sink_argmax_fraction``, ``value_norm`` and the METRICS.md §8 label
(``head_label``, the library's default thresholds: sink_score >= 0.5, lowest third of the
layer's value_norm), plus the held-out loss.

Resumable: at every measurement step the whole state (weights, optimizer, RNG, step, loss
accumulator, curves so far) is written atomically to ``--state/<run>/state.pt`` (outside git);
rerunning the same command continues where it stopped (a hard kill loses only the steps since
the last measurement), and gives the same numbers as an uninterrupted run. After each
measurement the curves are rewritten from the state: ``--out/<run>.csv`` (one row per
measurement), ``--out/<run>.json`` (config plus every head's values at every measurement) and
``--out/<run>.png``. No weights leave the state folder.

    nice -n 19 python benchmarks/emergence.py --seed 0 --steps 5000 [--deadline 23:05]
    python benchmarks/emergence.py --table RUN      # the curves as a Markdown table
    python benchmarks/emergence.py --replot RUN     # csv, json and png again from the state
    python benchmarks/emergence.py --compare RUN RUN ...   # the runs side by side: <out>/seeds.png

``--deadline HH:MM`` (UTC): past it, the run measures at the step it reached, saves and exits
(exit code 0; rerun later to go on). SIGTERM does the same at the end of the current step.
"""

from __future__ import annotations

import argparse
import dataclasses
import datetime as dt
import hashlib
import json
import os
import platform
import signal
import sys
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
PICO = T.PICO
DEFAULT_OUT = HERE / "emergence"
DEFAULT_STATE = HERE / "_emergence_state"
SAMPLE = REPO / "tests" / "data" / "pico_corpus_sample.txt"
BOS = "<bos>"
FORMAT = "lie_stats.benchmarks.emergence/1"

#: Columns of ``<run>.csv``, one row per measurement.
CSV_COLUMNS = ("step", "tokens", "lr", "train_loss", "val_loss", "max_sink_score", "heads_sink_gt_half",
               "max_argmax_fraction", "heads_argmax_gt_half", "anchors", "workers", "mixed",
               "sink_head", "sink_head_value_norm_rank", "elapsed_s", "s_per_step")


@dataclasses.dataclass(frozen=True)
class Config:
    """What fixes a run; stored in the state, and a rerun must ask for the same."""

    seed: int = 0
    steps: int = 5000
    n_layers: int = 12
    n_heads: int = 8
    d_head: int = 16
    batch_size: int = 16
    seq_len: int = 128
    peak_lr: float = 2e-3
    warmup_frac: float = 0.05
    min_lr_frac: float = 0.1
    eval_windows: int = 64
    probe_seqs: int = 32
    probe_seed: int = 0
    log_until: int = 1000
    every: int = 250
    text: str = "full"  # "full": the three sources (fetched); "sample": tests/data/pico_corpus_sample.txt
    threads: int = 1
    attn_implementation: str = "eager"

    @property
    def d_model(self) -> int:
        return self.n_heads * self.d_head


def measure_steps(n_steps: int, log_until: int = 1000, every: int = 250) -> list[int]:
    """Log-then-linear grid: 0 and the powers of two below ``log_until``, then multiples of ``every``.

    Examples
    --------
    >>> measure_steps(2000)
    [0, 1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 750, 1000, 1250, 1500, 1750, 2000]
    >>> measure_steps(7, log_until=4, every=3)
    [0, 1, 2, 3, 6, 7]
    """
    return T.log_linear_grid(n_steps, log_until - 1, every)


def run_name(cfg: Config, device: str = "cpu") -> str:
    """``bos_l{layers}h{heads}d{d_head}_s{seed}``, with ``_sample`` for the committed sample text
    and ``_cuda`` for a run trained on a GPU (its numbers differ from the CPU's in the last bits).

    >>> run_name(Config(seed=3)), run_name(Config(text="sample"), "cuda")
    ('bos_l12h8d16_s3', 'bos_l12h8d16_s0_sample_cuda')
    """
    return (f"bos_l{cfg.n_layers}h{cfg.n_heads}d{cfg.d_head}_s{cfg.seed}" + ("_sample" if cfg.text == "sample" else "")
            + ("" if device == "cpu" else f"_{device.split(':')[0]}"))


# ---------------------------------------------------------------------------------------- data
def tokenizer_with_bos():
    """The suite's byte-level BPE with ``<bos>`` added as a special token (id = its vocab size)."""
    from tokenizers import AddedToken, Tokenizer

    path = PICO / "tokenizer.json"
    tok = Tokenizer.from_file(str(path))
    n = tok.get_vocab_size()
    tok.add_special_tokens([AddedToken(BOS, special=True)])
    bos = tok.token_to_id(BOS)
    if bos != n:
        raise RuntimeError(f"{path}: <bos> got id {bos}, expected {n} (the tokenizer already has it?)")
    sha = hashlib.sha256(path.read_bytes()).hexdigest()
    return tok, bos, sha


def prepare_text(cfg: Config, state_dir: Path, log) -> tuple[list[str], list[str], dict]:
    """(train chunks, held-out chunks, info) of the pretraining text, split as the suite splits it."""
    build = T.load_pico_build()
    corpus = build.corpus
    if cfg.text == "sample":
        by_source = corpus.read_sample(SAMPLE)
        info = {"text": str(SAMPLE.relative_to(REPO)), "sha256": corpus.sha256_file(SAMPLE)}
        chunk_chars, val_every = build.SMOKE_RUN.chunk_chars, build.SMOKE_RUN.val_every
    elif cfg.text == "full":
        cdir = state_dir / "corpus"
        manifest = corpus.fetch_sources(cdir, log=log)
        by_source = corpus.load_all(cdir, manifest, log=log)
        info = {"text": "Austen + Shakespeare (datasets/pico_pythia/corpus.py)",
                "sources": {k: v.get("sha256") for k, v in sorted(manifest.items())}}
        chunk_chars, val_every = corpus.CHUNK_CHARS, corpus.VAL_EVERY
    else:
        raise SystemExit(f"--text must be 'full' or 'sample', got {cfg.text!r}")
    pre_docs, _ = corpus.pretrain_and_post_docs(by_source)
    if not pre_docs:
        raise SystemExit("no pretraining text: Austen and Shakespeare both failed (see the corpus manifest)")
    train, val = corpus.build_splits(pre_docs, chunk_chars=chunk_chars, val_every=val_every)
    return train, val, info


def token_streams(cfg: Config, state_dir: Path, tok, log) -> tuple[np.ndarray, np.ndarray, dict]:
    """Train / held-out token streams (uint16, ``<|endoftext|>`` between chunks), cached in ``state_dir``."""
    build = T.load_pico_build()
    train, val, info = prepare_text(cfg, state_dir, log)
    key = hashlib.sha256(json.dumps([info, tok.to_str()], sort_keys=True).encode()).hexdigest()[:16]
    cache = state_dir / f"tokens_{cfg.text}_{key}.npz"
    if cache.exists():
        with np.load(cache) as z:
            tr, va = z["train"], z["val"]
    else:
        tr, va = build._encode(tok, train), build._encode(tok, val)
        tmp = cache.with_name(f".{cache.stem}.{os.getpid()}.npz")
        np.savez(tmp, train=tr, val=va)
        os.replace(tmp, cache)
    info = {**info, "train_tokens": int(len(tr)), "val_tokens": int(len(va)), "val_text": "\n\n".join(val)}
    return tr, va, info


# ---------------------------------------------------------------------------------------- state
class StopRun(Exception):
    """Raised by ``--stop-after`` to simulate a hard kill (no state written; tests)."""


# ---------------------------------------------------------------------------------------- metrics
def summarize(act: dict, step: int) -> dict:
    """One CSV row's per-step numbers from :func:`activation_metrics`' per-head arrays."""
    from lie_stats.schema import LABEL_CODES

    s, a, v, lab = (np.asarray(act[k]) for k in ("sink_score", "sink_argmax_fraction", "value_norm", "head_label"))
    layer, head = np.unravel_index(int(np.nanargmax(s)), s.shape)
    # 1 = the highest value_norm of its layer
    rank = int((v[layer] > v[layer, head]).sum()) + 1
    return {
        "step": step, "max_sink_score": float(np.nanmax(s)), "heads_sink_gt_half": int((s > 0.5).sum()),
        "max_argmax_fraction": float(np.nanmax(a)), "heads_argmax_gt_half": int((a > 0.5).sum()),
        "anchors": int((lab == LABEL_CODES["anchor"]).sum()), "workers": int((lab == LABEL_CODES["worker"]).sum()),
        "mixed": int((lab == LABEL_CODES["mixed"]).sum()),
        "sink_head": f"L{layer}H{head}", "sink_head_value_norm_rank": rank,
    }


def write_curves(st: dict, out: Path, name: str) -> None:
    """``<name>.csv``, ``<name>.json`` and ``<name>.png`` from the state's curves (atomically)."""
    record = {"format": FORMAT, "run": name, "config": st["config"], "meta": st["meta"],
              "variables": ["sink_score", "sink_argmax_fraction", "value_norm", "head_label"],
              "label_codes": st["meta"]["label_codes"], "measurements": st["heads"]}
    T.write_curves(out, name, st["rows"], CSV_COLUMNS, record, lambda path: plot(st, path, name))


def plot(st: dict, path: Path, name: str) -> None:
    plt = T.pyplot()

    rows = st["rows"]
    x = np.array([r["step"] for r in rows], dtype=float)
    fig, ax = plt.subplots(2, 2, figsize=(11, 7.5))
    a = ax[0, 0]
    sinks = np.array([np.asarray(h["sink_score"], float).ravel() for h in st["heads"]])
    a.plot(x, sinks, color="0.8", lw=0.5)
    a.plot(x, [r["max_sink_score"] for r in rows], "o-", ms=3, color="C3", label="max over heads")
    a.axhline(0.5, color="k", ls=":", lw=0.8, label="anchor threshold 0.5 (METRICS §8)")
    a.set_ylabel("sink_score (grey: every head)")
    a.legend(fontsize=7)
    a = ax[0, 1]
    a.plot(x, [r["heads_sink_gt_half"] for r in rows], "o-", ms=3, label="heads with sink_score > 0.5")
    a.plot(x, [r["heads_argmax_gt_half"] for r in rows], "s-", ms=3, label="heads with argmax on <bos> > 0.5")
    a.plot(x, [r["anchors"] for r in rows], "^-", ms=3, color="C3", label="anchors (METRICS §8)")
    a.axhline(8, color="C3", ls=":", lw=0.8, label="suite target: 8 anchors")
    a.set_ylabel("heads")
    a.legend(fontsize=7)
    a = ax[1, 0]
    a.plot(x, [r["val_loss"] for r in rows], "o-", ms=3, label="held-out")
    tr = [(xx, r["train_loss"]) for xx, r in zip(x, rows) if r.get("train_loss") is not None]
    if tr:
        a.plot(*zip(*tr), ".-", ms=3, alpha=0.7, label="train (mean since the previous point)")
    a.set_ylabel("cross-entropy (nats/token)")
    a.legend(fontsize=7)
    for a in (ax[0, 0], ax[0, 1], ax[1, 0]):
        T.step_axis(a)
    a = ax[1, 1]
    last = st["heads"][-1]
    im = a.imshow(np.asarray(last["sink_score"], float), aspect="auto", vmin=0, vmax=1, cmap="viridis")
    lab = np.asarray(last["head_label"], float)
    code = st["meta"]["label_codes"]["anchor"]
    for (li, hi) in zip(*np.nonzero(lab == code)):
        a.text(hi, li, "A", ha="center", va="center", color="red", fontsize=8, weight="bold")
    a.set_xlabel("head")
    a.set_ylabel("layer")
    a.set_title(f"sink_score at step {last['step']} (A: anchor)", fontsize=9)
    fig.colorbar(im, ax=a)
    c = st["config"]
    fig.suptitle(f"{name}: GPT-NeoX {c['n_layers']} x {c['n_heads']} heads, d_head {c['d_head']}, "
                 f"<bos> at position 0, batch {c['batch_size']} x {c['seq_len']}, lr {c['peak_lr']}", fontsize=10)
    T.save_figure(fig, path)


def plot_seeds(csv_paths: list[Path], path: Path) -> dict[str, list[float]]:
    """The runs' curves side by side (``--compare``): max sink_score, heads with argmax on
    ``<bos>`` above 0.5, anchors and held-out loss against the step, one line per run; written
    atomically to ``path``. Returns each run's max sink_score series (by run name), as plotted."""
    import csv

    plt = T.pyplot()

    runs = {}
    for p in csv_paths:
        if not Path(p).is_file():
            raise SystemExit(f"{p}: no such curves file (expected <out>/<run>.csv of a run of this study)")
        with open(p, newline="") as f:
            runs[Path(p).stem] = list(csv.DictReader(f))
    fig, ax = plt.subplots(2, 2, figsize=(11, 7.5))
    panels = ((ax[0, 0], "max_sink_score", "max sink_score over heads"),
              (ax[0, 1], "heads_argmax_gt_half", "heads with argmax on <bos> > 0.5"),
              (ax[1, 0], "anchors", "anchors (METRICS §8)"),
              (ax[1, 1], "val_loss", "held-out cross-entropy (nats/token)"))
    plotted = {}
    for i, (name, rows) in enumerate(runs.items()):
        x = [int(r["step"]) for r in rows]
        for a, col, label in panels:
            y = [float(r[col]) for r in rows]
            a.plot(x, y, "o-", ms=2.5, lw=1, color=f"C{i}", label=name)
            a.set_ylabel(label)
            if col == "max_sink_score":
                plotted[name] = y
    ax[0, 0].axhline(0.5, color="k", ls=":", lw=0.8, label="anchor threshold 0.5")
    ax[1, 0].axhline(8, color="k", ls=":", lw=0.8, label="suite target: 8 anchors")
    for a, _, _ in panels:
        a.set_xlabel("step")
        a.legend(fontsize=7)
    fig.suptitle("Emergence of sinks and anchors with <bos> at position 0: every run of the study", fontsize=10)
    T.save_figure(fig, path)
    return plotted


def markdown_table(csv_path: Path) -> str:
    """The curves of a ``<run>.csv`` as a Markdown table."""
    import csv

    with open(csv_path, newline="") as f:
        rows = list(csv.DictReader(f))
    out = ["| step | tokens | held-out loss | max sink_score | heads sink > 0.5 | max argmax share | "
           "heads argmax > 0.5 | anchors | workers | mixed | top sink head (value-norm rank in layer) |",
           "|---|---|---|---|---|---|---|---|---|---|---|"]
    for r in rows:
        out.append(f"| {r['step']} | {int(r['tokens']):,} | {float(r['val_loss']):.3f} | {float(r['max_sink_score']):.3f} | "
                   f"{r['heads_sink_gt_half']} | {float(r['max_argmax_fraction']):.3f} | {r['heads_argmax_gt_half']} | "
                   f"{r['anchors']} | {r['workers']} | {r['mixed']} | {r['sink_head']} ({r['sink_head_value_norm_rank']}) |")
    return "\n".join(out)


# ---------------------------------------------------------------------------------------- training
def train(cfg: Config, *, out: Path = DEFAULT_OUT, state_root: Path = DEFAULT_STATE, deadline: float | None = None,
          stop_after: int | None = None, device: str = "cpu", checkpoints: Path | None = None, log=print) -> dict:
    """Train (or resume) one run to ``cfg.steps``, or until ``deadline`` (epoch seconds); returns the state.

    ``device`` (``"cpu"``, ``"cuda"``): where the model trains and is measured; a GPU run is
    another run (``run_name``'s ``_cuda``), since its numbers differ from the CPU's.
    ``checkpoints``: also save the model at every measured step as
    ``<checkpoints>/<run>/step_<N>/`` (``save_pretrained``, safetensors, written atomically before
    the state) and the probe as ``<checkpoints>/probe.npz``: a suite ``lie-stats extract`` reads.
    """
    import torch
    import transformers
    from transformers import GPTNeoXForCausalLM

    from lie_stats.extraction.activations import activation_metrics
    from lie_stats.extraction.probe import build_probe, save_probe
    from lie_stats.schema import LABEL_CODES

    build = T.load_pico_build()
    transformers.utils.logging.disable_progress_bar()
    name = run_name(cfg, device)
    sdir = state_root / name
    sdir.mkdir(parents=True, exist_ok=True)
    state_path = sdir / "state.pt"
    prev_threads = torch.get_num_threads()
    torch.set_num_threads(cfg.threads)
    stop = {"signal": None}

    def on_term(signum, frame):
        stop["signal"] = signum

    old_handler = signal.signal(signal.SIGTERM, on_term) if threading_main() else None
    try:
        tok, bos, tok_sha = tokenizer_with_bos()
        vocab = tok.get_vocab_size()
        tr, va, info = token_streams(cfg, state_root, tok, log)
        val_text = info.pop("val_text")
        run = T.bos_windows(dataclasses.replace(build.RunConfig(), vocab_size=vocab, batch_size=cfg.batch_size,
                                                seq_len=cfg.seq_len, eval_windows=cfg.eval_windows,
                                                attn_implementation=cfg.attn_implementation))
        val_arr = T.held_out_with_bos(va, run, bos)
        probe = build_probe(val_text, tok, n_seq=cfg.probe_seqs, seq_len=cfg.seq_len, seed=cfg.probe_seed,
                            first_token="bos", first_token_id=bos,
                            tokenizer_name=f"pico_pythia byte-level BPE 4096 + <bos> = {bos} (tokenizer.json sha256 {tok_sha[:16]})",
                            text_source=f"held-out split of the pretraining text ({cfg.text})")
        if checkpoints is not None:
            checkpoints.mkdir(parents=True, exist_ok=True)
            save_probe(probe, checkpoints / "probe.npz")
        spec = build.ModelSpec(name, cfg.n_layers, cfg.n_heads, cfg.d_head, seed=cfg.seed)
        mcfg = build.make_config(spec, dataclasses.replace(run, seq_len=cfg.seq_len), vocab)
        mcfg.bos_token_id = bos
        torch.manual_seed(cfg.seed)
        model = GPTNeoXForCausalLM(mcfg)
        init_info = build.pythia_small_init(model, spec, cfg.seed)
        model.to(device).train()
        opt = build.build_optimizer(model, run, cfg.peak_lr)
        warmup = max(1, round(cfg.warmup_frac * cfg.steps))
        grid = measure_steps(cfg.steps, cfg.log_until, cfg.every)
        meta = {"machine": platform.machine(), "processor": _cpu_name(), "python": platform.python_version(),
                "torch": str(torch.__version__), "transformers": transformers.__version__, "threads": cfg.threads,
                "attn_implementation": cfg.attn_implementation, "device": _device_name(device), "vocab": vocab, "bos_id": bos,
                "tokenizer_sha256": tok_sha, "data": info, "probe": probe.metadata(), "grid": grid,
                "warmup_steps": warmup, "params": sum(p.numel() for p in model.parameters()), **init_info,
                "label_codes": dict(LABEL_CODES),
                "labels": "METRICS.md §8 with lie_stats.extraction.activations defaults: anchor = sink_score >= 0.5 and "
                          "value_norm in the lowest third of its layer"}
        st = T.resume(state_path, dataclasses.asdict(cfg), model, opt, name, log)
        if st is None:
            st = {"config": dataclasses.asdict(cfg), "meta": meta, "step": 0, "rows": [], "heads": [],
                  "acc": [0.0, 0], "elapsed_s": 0.0, "steps_since": 0, "t_since": 0.0}
        st["meta"] = {**meta, "sessions": st["meta"].get("sessions", 0) + 1}

        def measure_and_save(step: int) -> None:
            t0 = time.time()
            act = activation_metrics(model, probe, batch_size=8, grad=False, device=device)
            model.set_attn_implementation(cfg.attn_implementation)
            model.train()
            val = T.evaluate(model, val_arr, run.eval_batch, device)
            acc = st["acc"]
            row = {**summarize(act, step), "tokens": step * cfg.batch_size * cfg.seq_len,
                   "lr": build.lr_at(step, cfg.steps, cfg.peak_lr, warmup, cfg.min_lr_frac) if step else 0.0,
                   "train_loss": acc[0] / acc[1] if acc[1] else None, "val_loss": val,
                   "elapsed_s": round(st["elapsed_s"], 1),
                   "s_per_step": round(st["t_since"] / st["steps_since"], 3) if st["steps_since"] else None}
            st["rows"] = [r for r in st["rows"] if r["step"] != step] + [row]
            st["heads"] = [h for h in st["heads"] if h["step"] != step] + [
                {"step": step, **{k: np.round(np.asarray(act[k], float), 6).tolist()
                                  for k in ("sink_score", "sink_argmax_fraction", "value_norm", "head_label")}}]
            if checkpoints is not None:
                build._save_checkpoint(model, checkpoints / name, step)
            st.update(step=step, acc=[0.0, 0], steps_since=0, t_since=0.0, model=model.state_dict(),
                      optimizer=opt.state_dict(), rng=torch.get_rng_state())
            build._atomic_save_state(st, state_path)
            write_curves({k: v for k, v in st.items() if k not in ("model", "optimizer")}, out, name)
            log(f"[{name}] step {step}: held-out {val:.4f}, max sink {row['max_sink_score']:.3f} ({row['sink_head']}), "
                f"sink>0.5 {row['heads_sink_gt_half']}, anchors {row['anchors']}, "
                f"{row['s_per_step']} s/step, measured in {time.time() - t0:.1f} s")

        if not st["rows"]:
            measure_and_save(0)
        step, done_here = st["step"], 0
        cache: dict = {}
        while step < cfg.steps:
            if (deadline is not None and time.time() >= deadline) or stop["signal"] is not None:
                if st["rows"][-1]["step"] != step:
                    measure_and_save(step)
                log(f"[{name}] stopped at step {step} ({'deadline' if stop['signal'] is None else 'SIGTERM'}); "
                    f"rerun the same command to continue")
                break
            t0 = time.time()
            lr = build.lr_at(step + 1, cfg.steps, cfg.peak_lr, warmup, cfg.min_lr_frac)
            for g in opt.param_groups:
                g["lr"] = lr
            x = T.batch_with_bos(tr, step, run, bos, cache).to(device)
            loss = T.train_step(model, opt, x, run.grad_clip)
            step += 1
            dt_ = time.time() - t0
            st["elapsed_s"] += dt_
            st["t_since"] += dt_
            st["steps_since"] += 1
            st["acc"][0] += loss.item()
            st["acc"][1] += 1
            done_here += 1
            if step in grid:
                measure_and_save(step)
            if stop_after is not None and done_here >= stop_after:
                raise StopRun(f"stopped after {done_here} steps (--stop-after), at step {step}")
        for k in ("model", "optimizer", "rng"):
            st.pop(k, None)
        return st
    finally:
        torch.set_num_threads(prev_threads)
        if old_handler is not None:
            signal.signal(signal.SIGTERM, old_handler)


def threading_main() -> bool:
    import threading

    return threading.current_thread() is threading.main_thread()


def _device_name(device: str) -> str:
    if device.startswith("cuda"):
        import torch

        return f"{device}: {torch.cuda.get_device_name(torch.device(device))}"
    return f"cpu: {_cpu_name()}"


def _cpu_name() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor()


def parse_deadline(text: str | None, now: dt.datetime | None = None) -> float | None:
    """``HH:MM`` (UTC, the next such time) as epoch seconds.

    >>> now = dt.datetime(2026, 1, 1, 22, 0, tzinfo=dt.timezone.utc)
    >>> parse_deadline("23:05", now) - now.timestamp()
    3900.0
    """
    if not text:
        return None
    now = now or dt.datetime.now(dt.timezone.utc)
    try:
        hh, mm = (int(p) for p in text.split(":"))
        t = now.replace(hour=hh, minute=mm, second=0, microsecond=0)
    except ValueError as e:
        raise SystemExit(f"--deadline {text!r}: expected HH:MM (UTC), {e}") from e
    if t <= now - dt.timedelta(hours=12):
        t += dt.timedelta(days=1)
    return t.timestamp()


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    d = Config()
    for f in dataclasses.fields(Config):
        ap.add_argument("--" + f.name.replace("_", "-"), type=type(getattr(d, f.name)), default=getattr(d, f.name))
    ap.add_argument("--out", default=str(DEFAULT_OUT), help="curves folder (committed)")
    ap.add_argument("--state", default=str(DEFAULT_STATE), help="state folder (outside git)")
    ap.add_argument("--device", default="cpu", help="cpu or cuda (a GPU run is named <run>_cuda)")
    ap.add_argument("--checkpoints", default=None, metavar="DIR",
                    help="also save the model at every measured step (DIR/<run>/step_<N>/) and the probe "
                         "(DIR/probe.npz), for lie-stats extract")
    ap.add_argument("--deadline", default=None, help="HH:MM UTC: measure, save and stop when reached")
    ap.add_argument("--stop-after", type=int, default=None, help="(tests) exit after N steps without saving")
    ap.add_argument("--prepare-text", action="store_true",
                    help="only fetch and tokenize the text into the state folder, then exit (a GPU machine cannot fetch)")
    ap.add_argument("--table", default=None, metavar="RUN", help="print RUN's curves as a Markdown table and exit")
    ap.add_argument("--replot", default=None, metavar="RUN", help="rewrite RUN's csv, json and png from its state and exit")
    ap.add_argument("--compare", nargs="+", default=None, metavar="RUN",
                    help="plot the RUNs' curves side by side into <out>/seeds.png and exit")
    args = ap.parse_args(argv)
    if args.compare:
        plot_seeds([Path(args.out) / f"{r}.csv" for r in args.compare], Path(args.out) / "seeds.png")
        return 0
    if args.table:
        print(markdown_table(Path(args.out) / f"{args.table}.csv"))
        return 0
    if args.replot:
        import torch

        st = torch.load(Path(args.state) / args.replot / "state.pt", weights_only=True)
        write_curves({k: v for k, v in st.items() if k not in ("model", "optimizer", "rng")}, Path(args.out), args.replot)
        return 0
    cfg = Config(**{f.name: getattr(args, f.name) for f in dataclasses.fields(Config)})

    def log(msg: str) -> None:
        print(f"{time.strftime('%H:%M:%S')} {msg}", flush=True)

    if args.prepare_text:
        tr, va, _ = token_streams(cfg, Path(args.state), tokenizer_with_bos()[0], log)
        log(f"[text] {len(tr)} train and {len(va)} held-out tokens cached in {args.state}")
        return 0

    try:
        train(cfg, out=Path(args.out), state_root=Path(args.state), deadline=parse_deadline(args.deadline),
              stop_after=args.stop_after, device=args.device,
              checkpoints=Path(args.checkpoints) if args.checkpoints else None, log=log)
    except StopRun as e:
        log(str(e))
        return 3
    return 0


if __name__ == "__main__":
    sys.exit(main())
