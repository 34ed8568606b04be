"""Build the pico_pythia suite: small GPT-NeoX models trained from scratch on public-domain text.

Usage::

    python datasets/pico_pythia/build.py [--models a,b] [--smoke] [--out DIR] [--threads 1]

The build is resumable and deterministic. Every model trains on the same data order (a fixed
data seed, independent of the model seed), on the Pythia recipe scaled down (rotary 0.25,
parallel residual, untied embeddings, AdamW 0.9/0.95 with weight decay 0.01, linear warmup then
cosine to 10 %, "small init"), and saves checkpoints on a scaled-down Pythia schedule
(0, 1, 2, 4, ..., 512, then evenly spaced to the end) with ``save_pretrained`` to
``OUT/<model>/step_<N>/``. Training state (weights, optimizer, step, data cursor, RNG, loss
log) is saved atomically at every checkpoint; a rerun skips finished models (``DONE.json``)
and resumes an unfinished one from its last state, bit-identically. See README.md.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import platform
import shutil
import sys
import time
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path

# Deterministic tokenizer training and no thread pools beyond the ones asked for.
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
os.environ.setdefault("RAYON_NUM_THREADS", "1")

import numpy as np  # noqa: E402

HERE = Path(__file__).resolve().parent
REPO = HERE.parent.parent
sys.path.insert(0, str(HERE))

import corpus  # noqa: E402

DEFAULT_OUT = HERE / "build"
SAMPLE = REPO / "tests" / "data" / "pico_corpus_sample.txt"
EOT = "<|endoftext|>"
DATA_SEED = 1234


# ----------------------------------------------------------------------------------------------
# Specifications
# ----------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class ModelSpec:
    """One model of the suite."""

    name: str
    n_layers: int = 0
    n_heads: int = 0
    d_head: int = 0
    seed: int = 0
    parent: str | None = None  # fine-tunes: the model whose final checkpoint they start from
    alias_of: str | None = None  # same config as another model: not trained twice
    steps: int | None = None  # training steps (default: the run's pretrain_steps or finetune_steps)
    peak_lr: float | None = None  # peak learning rate (default: the run's peak_lr or finetune_lr)
    #: A run with a parent trains on the post-training text (""), or ("pretrain") continues its
    #: parent's pretraining: the same text, the data order resumed where the parent stopped.
    text: str = ""

    @property
    def d_model(self) -> int:
        return self.n_heads * self.d_head

    @property
    def is_finetune(self) -> bool:
        return self.parent is not None

    @property
    def continues_pretraining(self) -> bool:
        return self.parent is not None and self.text == "pretrain"


@dataclass(frozen=True)
class RunConfig:
    """Everything besides the architecture that fixes a training run."""

    vocab_size: int = 4096
    batch_size: int = 16
    seq_len: int = 128
    pretrain_steps: int = 512
    finetune_steps: int = 128
    peak_lr: float = 2e-3
    finetune_lr: float = 2e-4  # 1/10 of the pretraining peak
    warmup_frac: float = 0.05
    finetune_warmup_frac: float = 0.05
    min_lr_frac: float = 0.1
    betas: tuple = (0.9, 0.95)
    weight_decay: float = 0.01
    grad_clip: float = 1.0
    eval_windows: int = 64
    eval_batch: int = 16
    log_every: int = 10
    n_between: int = 7  # checkpoints evenly spaced after the last power of two
    max_pow2: int = 512  # the last power-of-two checkpoint (then ``n_between`` evenly spaced)
    ckpt_base: int = 2  # the log part of the grid: 0, 1, base, base^2, ... up to max_pow2
    data_seed: int = DATA_SEED
    chunk_chars: int = corpus.CHUNK_CHARS
    val_every: int = corpus.VAL_EVERY
    attn_implementation: str = "eager"


# Real build, in build order (priority: p96 pair, then the fine-tunes, then the sweeps).
SPECS: list[ModelSpec] = [
    ModelSpec("p96_s0", 12, 8, 16, seed=0),
    ModelSpec("p96_s1", 12, 8, 16, seed=1),
    ModelSpec("p96_s0_ft", 12, 8, 16, seed=0, parent="p96_s0"),
    ModelSpec("p96_s1_ft", 12, 8, 16, seed=1, parent="p96_s1"),
    ModelSpec("w16", 4, 4, 16, seed=0),
    ModelSpec("w32", 4, 4, 32, seed=0),
    ModelSpec("w64", 4, 4, 64, seed=0),
    ModelSpec("h2", 4, 2, 16, seed=0),
    ModelSpec("h4", 4, 4, 16, seed=0, alias_of="w16"),
    ModelSpec("h8", 4, 8, 16, seed=0),
    ModelSpec("h16", 4, 16, 16, seed=0),
]

#: The converged-base post-training pair (built only when named with --models; its card is
#: datasets/pico_converged): three 6 x 8 bases trained five times as long as p96 (2,560 steps,
#: about two epochs of the pretraining text, the cosine ending at 10 % of the peak, 2e-4), each
#: fine-tuned on the World English Bible for 256 steps at a peak of 1e-4, half the base's final
#: rate, and, as the pair's noise floor, continued on its own pretraining text for the same 256
#: steps at the same rates (late pretraining without the change of text).
CONVERGED_BASE_STEPS, CONVERGED_TUNE_STEPS, CONVERGED_TUNE_LR = 2560, 256, 1e-4
CONVERGED_SPECS: list[ModelSpec] = [
    ModelSpec(f"c48_s{seed}{kind}", 6, 8, 16, seed=seed, parent=f"c48_s{seed}" if kind else None,
              steps=CONVERGED_TUNE_STEPS if kind else CONVERGED_BASE_STEPS,
              peak_lr=CONVERGED_TUNE_LR if kind else None, text="pretrain" if kind == "_cont" else "")
    for kind in ("", "_ft", "_cont") for seed in (0, 1, 2)
]

# Smoke build: the same names and code paths, tiny shapes, a few steps, the committed sample.
SMOKE_SPECS: list[ModelSpec] = [
    ModelSpec("p96_s0", 2, 2, 8, seed=0),
    ModelSpec("p96_s1", 2, 2, 8, seed=1),
    ModelSpec("p96_s0_ft", 2, 2, 8, seed=0, parent="p96_s0"),
    ModelSpec("p96_s1_ft", 2, 2, 8, seed=1, parent="p96_s1"),
    ModelSpec("w16", 1, 2, 8, seed=0),
    ModelSpec("h4", 1, 2, 8, seed=0, alias_of="w16"),
]
SMOKE_CONVERGED_SPECS: list[ModelSpec] = [
    replace(s, n_layers=2, n_heads=2, d_head=8, steps=16 if s.parent is None else 6) for s in CONVERGED_SPECS
]
SMOKE_RUN = RunConfig(vocab_size=384, batch_size=4, seq_len=32, pretrain_steps=12, finetune_steps=6,
                      eval_windows=8, eval_batch=8, log_every=2, n_between=3, chunk_chars=600,
                      val_every=8)


class StopBuild(Exception):
    """Raised by ``--stop-after`` to simulate an interrupted build (tests)."""


# ----------------------------------------------------------------------------------------------
# Schedules
# ----------------------------------------------------------------------------------------------
def checkpoint_steps(n_steps: int, n_between: int = 7, max_pow2: int = 512, base: int = 2) -> list[int]:
    """Pythia's schedule scaled down: 0, 1, 2, 4, ..., then ``n_between`` evenly spaced to the end.

    ``base`` thins the log part (4: 0, 1, 4, 16, ...); it stops at ``max_pow2``.

    Examples
    --------
    >>> checkpoint_steps(12, n_between=3)
    [0, 1, 2, 4, 8, 9, 11, 12]
    >>> checkpoint_steps(512)[-8:]
    [256, 293, 329, 366, 402, 439, 475, 512]
    >>> checkpoint_steps(256, n_between=3, max_pow2=64, base=4)
    [0, 1, 4, 16, 64, 128, 192, 256]
    """
    steps = [0]
    p = 1
    while p < n_steps and p <= max_pow2:
        steps.append(p)
        p *= base
    last = steps[-1]
    for k in range(1, n_between + 1):
        steps.append(last + round(k * (n_steps - last) / n_between))
    return sorted(set(s for s in steps if s <= n_steps))


def lr_at(update: int, n_steps: int, peak: float, warmup: int, min_frac: float) -> float:
    """Learning rate of the ``update``-th optimizer step (1-based): linear warmup, cosine to ``min_frac``.

    Examples
    --------
    >>> lr_at(5, 100, 1.0, 10, 0.1)
    0.5
    >>> round(lr_at(100, 100, 1.0, 10, 0.1), 6)
    0.1
    """
    if update <= warmup:
        return peak * update / max(warmup, 1)
    t = (update - warmup) / max(n_steps - warmup, 1)
    return peak * (min_frac + (1 - min_frac) * 0.5 * (1 + math.cos(math.pi * min(t, 1.0))))


# ----------------------------------------------------------------------------------------------
# Data
# ----------------------------------------------------------------------------------------------
@dataclass
class Data:
    """Token streams (uint16) for the pretraining and post-training splits."""

    pre_train: np.ndarray
    pre_val: np.ndarray
    post_train: np.ndarray
    post_val: np.ndarray
    info: dict = field(default_factory=dict)


def train_tokenizer(texts: list[str], vocab_size: int):
    """Byte-level BPE (``tokenizers``), deterministic for the same text and vocabulary size."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers

    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(vocab_size=vocab_size, min_frequency=2, special_tokens=[EOT],
                                  initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
                                  show_progress=False)
    tok.train_from_iterator(texts, trainer=trainer)
    return tok


def _encode(tok, chunks: list[str]) -> np.ndarray:
    eot = tok.token_to_id(EOT)
    ids: list[int] = []
    for enc in tok.encode_batch(chunks):
        ids.extend(enc.ids)
        ids.append(eot)
    return np.asarray(ids, dtype=np.uint16)


def prepare_data(out: Path, run: RunConfig, *, smoke: bool, log) -> tuple[Data, object]:
    """Fetch (or read the sample), split, train the tokenizer, tokenize; cached under ``out``."""
    if smoke:
        by_source = corpus.read_sample(SAMPLE)
        manifest = {"sample": {"file": str(SAMPLE.relative_to(REPO)), "sha256": corpus.sha256_file(SAMPLE)}}
    else:
        cdir = out / "corpus"
        manifest = corpus.fetch_sources(cdir, log=log)
        by_source = corpus.load_all(cdir, manifest, log=log)
    pre_docs, post_docs = corpus.pretrain_and_post_docs(by_source)
    if not pre_docs:
        raise RuntimeError("no pretraining text: Austen and Shakespeare both failed (see manifest)")
    pre_tr, pre_va = corpus.build_splits(pre_docs, chunk_chars=run.chunk_chars, val_every=run.val_every)
    post_tr, post_va = corpus.build_splits(post_docs, chunk_chars=run.chunk_chars, val_every=run.val_every)
    t0 = time.time()
    import hashlib

    import tokenizers

    key_src = json.dumps([{k: v.get("sha256") for k, v in sorted(manifest.items())}, run.vocab_size,
                          run.chunk_chars, run.val_every, tokenizers.__version__], sort_keys=True)
    key = hashlib.sha256(key_src.encode()).hexdigest()[:16]
    tok_path, cache = out / "tokenizer.json", out / f"tokens_{key}.npz"
    if tok_path.exists() and cache.exists():
        # a rerun in the same folder: the tokenizer and the token streams of the first run
        tok = tokenizers.Tokenizer.from_file(str(tok_path))
        with np.load(cache) as z:
            data = Data(z["pre_train"], z["pre_val"], z["post_train"], z["post_val"])
        log(f"[data] token streams from {cache.name}")
    else:
        tok = train_tokenizer(pre_tr, run.vocab_size)
        tok_text = tok.to_str(pretty=True)
        if tok_path.exists():
            if tok_path.read_text() != tok_text:
                raise RuntimeError(f"{tok_path} differs from the tokenizer trained now: the corpus or the "
                                   "tokenizers version changed; delete the build folder to rebuild from scratch")
        else:
            _atomic_write(tok_path, tok_text)
        data = Data(_encode(tok, pre_tr), _encode(tok, pre_va),
                    _encode(tok, post_tr) if post_tr else np.zeros(0, np.uint16),
                    _encode(tok, post_va) if post_va else np.zeros(0, np.uint16))
        tmp = out / f".tokens_{key}.{os.getpid()}.npz"
        np.savez(tmp, pre_train=data.pre_train, pre_val=data.pre_val, post_train=data.post_train,
                 post_val=data.post_val)
        os.replace(tmp, cache)
    data.info = {
        "sources": manifest,
        "tokenizer_sha256": corpus.sha256_file(out / "tokenizer.json"),
        "tokenizer_vocab": tok.get_vocab_size(),
        "chunks": {"pre_train": len(pre_tr), "pre_val": len(pre_va),
                   "post_train": len(post_tr), "post_val": len(post_va)},
        "tokens": {k: int(len(getattr(data, k))) for k in ("pre_train", "pre_val", "post_train", "post_val")},
        "tokenize_s": round(time.time() - t0, 2),
    }
    log(f"[data] tokens {data.info['tokens']} vocab {data.info['tokenizer_vocab']}")
    return data, tok


def windows(stream: np.ndarray, seq_len: int) -> int:
    return len(stream) // seq_len


def batch_at(stream: np.ndarray, step: int, run: RunConfig, cache: dict):
    """Batch of the ``step``-th update (0-based): a pure function of (data seed, step).

    Non-overlapping windows of ``seq_len`` tokens, shuffled per epoch by
    ``numpy.random.default_rng([data_seed, epoch])``; the same for every model.
    """
    import torch

    n = windows(stream, run.seq_len)
    idx = []
    for g in range(step * run.batch_size, (step + 1) * run.batch_size):
        epoch, pos = divmod(g, n)
        if epoch not in cache:
            cache.clear()
            cache[epoch] = np.random.default_rng([run.data_seed, epoch]).permutation(n)
        idx.append(int(cache[epoch][pos]))
    arr = np.stack([stream[i * run.seq_len:(i + 1) * run.seq_len] for i in idx]).astype(np.int64)
    return torch.from_numpy(arr)


def eval_windows(stream: np.ndarray, run: RunConfig) -> np.ndarray:
    """Fixed held-out windows, evenly spaced through the validation stream."""
    n = windows(stream, run.seq_len)
    k = min(run.eval_windows, n)
    idx = np.unique(np.linspace(0, n - 1, k).round().astype(int))
    return np.stack([stream[i * run.seq_len:(i + 1) * run.seq_len] for i in idx]).astype(np.int64)


def unigram_ce(train_stream: np.ndarray, eval_arr: np.ndarray, vocab: int) -> float:
    """Cross-entropy (nats) of the add-one unigram distribution of training tokens on eval targets."""
    counts = np.bincount(train_stream.astype(np.int64), minlength=vocab).astype(np.float64) + 1.0
    logp = np.log(counts / counts.sum())
    targets = eval_arr[:, 1:].reshape(-1)
    return float(-logp[targets].mean())


# ----------------------------------------------------------------------------------------------
# Model
# ----------------------------------------------------------------------------------------------
def make_config(spec: ModelSpec, run: RunConfig, vocab: int):
    from transformers import GPTNeoXConfig

    cfg = GPTNeoXConfig(
        vocab_size=vocab, hidden_size=spec.d_model, num_hidden_layers=spec.n_layers,
        num_attention_heads=spec.n_heads, intermediate_size=4 * spec.d_model, hidden_act="gelu",
        rotary_pct=0.25, rotary_emb_base=10000, max_position_embeddings=run.seq_len,
        use_parallel_residual=True, tie_word_embeddings=False, attention_dropout=0.0,
        hidden_dropout=0.0, layer_norm_eps=1e-5, bos_token_id=0, eos_token_id=0,
    )
    cfg._attn_implementation = run.attn_implementation
    return cfg


#: The block-output matrices of GPT-NeoX (gpt-neox ``wang_init``).
NEOX_OUTPUTS = ("attention.dense.weight", "mlp.dense_4h_to_h.weight")


def pythia_small_init(model, spec: ModelSpec, seed: int, outputs: tuple = NEOX_OUTPUTS) -> dict:
    """Pythia "small init": N(0, sqrt(2/(5d))) everywhere, N(0, 2/(L sqrt(d))) on the block outputs.

    Block outputs are the parameters whose names end in ``outputs`` (GPT-NeoX:
    ``attention.dense`` and ``mlp.dense_4h_to_h``, gpt-neox ``wang_init``); biases 0, norm
    weights 1. Drawn from ``torch.Generator().manual_seed(seed)`` in parameter order, after
    construction (HF's own initializer is N(0, 0.02)).
    """
    import torch

    d, L = spec.d_model, spec.n_layers
    small, wang = math.sqrt(2.0 / (5.0 * d)), 2.0 / (L * math.sqrt(d))
    g = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for name, p in model.named_parameters():
            if p.dim() >= 2:
                std = wang if name.endswith(tuple(outputs)) else small
                p.copy_(torch.randn(p.shape, generator=g) * std)
            elif "norm" in name and name.endswith("weight"):
                p.fill_(1.0)
            else:
                p.zero_()
    return {"init": "pythia_small_init", "std_small": small, "std_out": wang, "init_seed": seed}


def new_gptneox(spec: ModelSpec, run: RunConfig, vocab: int):
    """A fresh GPT-NeoX of ``spec`` with the small init: ``(model, init_info)``."""
    from transformers import GPTNeoXForCausalLM

    model = GPTNeoXForCausalLM(make_config(spec, run, vocab))
    return model, pythia_small_init(model, spec, spec.seed)


def build_optimizer(model, run: RunConfig, lr: float):
    import torch

    decay, no_decay = [], []
    for name, p in model.named_parameters():
        (decay if p.dim() >= 2 else no_decay).append(p)
    return torch.optim.AdamW([{"params": decay, "weight_decay": run.weight_decay},
                              {"params": no_decay, "weight_decay": 0.0}],
                             lr=lr, betas=run.betas, eps=1e-8)


@dataclass
class Ctx:
    out: Path
    curves: Path
    run: RunConfig
    data: Data
    vocab: int
    threads: int
    log: object
    stop_after: int | None = None
    steps_done_this_run: int = 0
    #: ``(spec, run, vocab) -> (model, init_info)`` for a model trained from scratch
    new_model: object = new_gptneox


def _atomic_save_state(state: dict, path: Path) -> None:
    """``torch.save`` to a temporary file beside ``path``, flushed to disk, then renamed over it:
    an interruption at any moment leaves the previous state or the new one, whole."""
    import torch

    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    torch.save(state, tmp)
    with open(tmp, "rb") as f:
        os.fsync(f.fileno())
    os.replace(tmp, path)


def _save_checkpoint(model, mdir: Path, step: int) -> None:
    final = mdir / f"step_{step}"
    tmp = mdir / f".step_{step}.tmp"
    if tmp.exists():
        shutil.rmtree(tmp)
    model.save_pretrained(tmp, safe_serialization=True)
    if final.exists():
        shutil.rmtree(final)
    os.replace(tmp, final)


#: The columns of a model's loss curve (curves/<model>.csv).
CSV_COLS = ("step", "lr", "train_loss", "val_loss", "val_loss_pretrain", "elapsed_s")


def _write_csv(rows: list[dict], path: Path, cols: tuple[str, ...] = CSV_COLS) -> None:
    """``rows`` as CSV (``cols``; a missing value empty, floats to 6 significant digits), atomically."""
    tmp = path.with_suffix(".csv.tmp")
    with open(tmp, "w") as f:
        f.write(",".join(cols) + "\n")
        for r in rows:
            f.write(",".join("" if r.get(c) is None else (f"{r[c]:.6g}" if isinstance(r[c], float) else str(r[c]))
                             for c in cols) + "\n")
    os.replace(tmp, path)


def evaluate(model, arr: np.ndarray, run: RunConfig) -> float:
    import torch

    model.eval()
    tot, n = 0.0, 0
    with torch.no_grad():
        for i in range(0, len(arr), run.eval_batch):
            x = torch.from_numpy(arr[i:i + run.eval_batch])
            loss = model(input_ids=x, labels=x).loss
            tot += float(loss) * len(x)
            n += len(x)
    model.train()
    return tot / n


def _pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def claim(mdir: Path) -> int | None:
    """Take ``mdir/LOCK`` for this process; returns the pid of a live owner instead, if any.

    Lets several build processes (``--models`` subsets) share one output folder: a model being
    trained by one is skipped by the others. A lock left by a dead process is taken over.
    """
    lock = mdir / "LOCK"
    for _ in range(3):
        try:
            fd = os.open(lock, os.O_CREAT | os.O_EXCL | os.O_WRONLY)
        except FileExistsError:
            try:
                pid = int(lock.read_text().strip() or 0)
            except (OSError, ValueError):
                pid = 0
            if pid and pid != os.getpid() and _pid_alive(pid):
                return pid
            lock.unlink(missing_ok=True)
            continue
        os.write(fd, str(os.getpid()).encode())
        os.close(fd)
        return None
    raise RuntimeError(f"could not take {lock}")


def train_one(spec: ModelSpec, ctx: Ctx, train=None) -> dict | None:
    """Train (or resume, or skip) one model; returns its summary (None: another process has it).

    ``train(spec, ctx)`` does the training (default: this suite's); the other suites' builds
    (pico_shapes, pico_sudoku) share the skip-if-done and per-run lock around their own.
    """
    mdir = ctx.out / spec.name
    if (mdir / "DONE.json").exists():
        ctx.log(f"[{spec.name}] finished already, skipped")
        return json.loads((mdir / "DONE.json").read_text())
    mdir.mkdir(parents=True, exist_ok=True)
    owner = claim(mdir)
    if owner is not None:
        ctx.log(f"[{spec.name}] being trained by process {owner}: skipped here")
        return None
    try:
        return (train or _train_one)(spec, ctx)
    finally:
        (mdir / "LOCK").unlink(missing_ok=True)


def _train_one(spec: ModelSpec, ctx: Ctx) -> dict:
    import torch
    from transformers import GPTNeoXForCausalLM

    run, log = ctx.run, ctx.log
    mdir = ctx.out / spec.name
    done = mdir / "DONE.json"
    if done.exists():
        log(f"[{spec.name}] finished already, skipped")
        return json.loads(done.read_text())
    mdir.mkdir(parents=True, exist_ok=True)
    ft = spec.is_finetune
    cont = spec.continues_pretraining  # a second phase on the pretraining text
    post_text = ft and not cont  # trains and is evaluated on the post-training text
    n_steps = spec.steps or (run.finetune_steps if ft else run.pretrain_steps)
    peak = spec.peak_lr or (run.finetune_lr if ft else run.peak_lr)
    warmup = max(1, round((run.finetune_warmup_frac if ft else run.warmup_frac) * n_steps))
    stream = ctx.data.post_train if post_text else ctx.data.pre_train
    if post_text and windows(stream, run.seq_len) == 0:
        raise RuntimeError(f"[{spec.name}] no post-training text (World English Bible failed?)")
    val_arr = eval_windows(ctx.data.post_val if post_text else ctx.data.pre_val, run)
    pre_val_arr = eval_windows(ctx.data.pre_val, run) if ft else None
    ckpts = checkpoint_steps(n_steps, run.n_between, run.max_pow2, run.ckpt_base)

    torch.manual_seed(spec.seed)
    data_offset = 0  # batches of this run are the data order's batches data_offset + step
    if ft:
        parent_done = json.loads((ctx.out / spec.parent / "DONE.json").read_text())
        src = ctx.out / spec.parent / f"step_{parent_done['steps']}"
        model = GPTNeoXForCausalLM.from_pretrained(src, attn_implementation=run.attn_implementation)
        init_info = {"init": f"from {spec.parent}/step_{parent_done['steps']}"}
        if cont:
            data_offset = parent_done["steps"]
            init_info["data_order_from_batch"] = data_offset
    else:
        model, init_info = ctx.new_model(spec, run, ctx.vocab)
    model.train()
    opt = build_optimizer(model, run, peak)
    state_path = mdir / "state.pt"
    step, rows, acc, elapsed = 0, [], [0.0, 0], 0.0
    if state_path.exists():
        st = torch.load(state_path, weights_only=True)
        model.load_state_dict(st["model"])
        opt.load_state_dict(st["optimizer"])
        torch.set_rng_state(st["rng"])
        step, rows, acc, elapsed = st["step"], st["rows"], st["acc"], st["elapsed_s"]
        log(f"[{spec.name}] resumed at step {step}")
    n_params = sum(p.numel() for p in model.parameters())
    cache: dict = {}

    def checkpoint(step: int):
        nonlocal elapsed
        row = {"step": step, "lr": lr_at(max(step, 1), n_steps, peak, warmup, run.min_lr_frac) if step else 0.0,
               "val_loss": evaluate(model, val_arr, run), "elapsed_s": round(elapsed, 2)}
        if ft:
            row["val_loss_pretrain"] = evaluate(model, pre_val_arr, run)
        rows.append(row)
        _save_checkpoint(model, mdir, step)
        _atomic_save_state({"model": model.state_dict(), "optimizer": opt.state_dict(),
                            "rng": torch.get_rng_state(), "step": step, "data_cursor": step,
                            "rows": rows, "acc": acc, "elapsed_s": elapsed}, state_path)
        _write_csv(rows, ctx.curves / f"{spec.name}.csv")
        log(f"[{spec.name}] checkpoint step {step}: held-out loss {row['val_loss']:.4f}"
            + (f" (pretraining text {row['val_loss_pretrain']:.4f})" if ft else ""))

    if step == 0 and not state_path.exists():
        checkpoint(0)
    t_last = time.time()
    while step < n_steps:
        t0 = time.time()
        lr = lr_at(step + 1, n_steps, peak, warmup, run.min_lr_frac)
        for grp in opt.param_groups:
            grp["lr"] = lr
        x = batch_at(stream, data_offset + step, run, cache)
        loss = model(input_ids=x, labels=x).loss
        opt.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), run.grad_clip)
        opt.step()
        step += 1
        elapsed += time.time() - t0
        acc[0] += loss.item()
        acc[1] += 1
        if step % run.log_every == 0:
            rows.append({"step": step, "lr": lr, "train_loss": acc[0] / acc[1], "elapsed_s": round(elapsed, 2)})
            now = time.time()
            log(f"[{spec.name}] step {step}/{n_steps} train loss {acc[0] / acc[1]:.4f} lr {lr:.2e} "
                f"{(now - t_last) / run.log_every:.3f} s/step")
            t_last = now
            acc = [0.0, 0]
        if step in ckpts:
            checkpoint(step)
        ctx.steps_done_this_run += 1
        if ctx.stop_after is not None and ctx.steps_done_this_run >= ctx.stop_after:
            raise StopBuild(f"stopped after {ctx.steps_done_this_run} steps (--stop-after)")

    vals = [r for r in rows if r.get("val_loss") is not None]
    final_val = vals[-1]["val_loss"]
    uni = unigram_ce(stream, val_arr, ctx.vocab)
    summary = {
        "model": spec.name, "n_layers": spec.n_layers, "n_heads": spec.n_heads, "d_head": spec.d_head,
        "d_model": spec.d_model, "seed": spec.seed, "parent": spec.parent, "params": n_params,
        "steps": n_steps, "checkpoints": ckpts, "peak_lr": peak, "warmup_steps": warmup,
        "s_per_step": round(elapsed / max(n_steps, 1), 4), "train_seconds": round(elapsed, 1),
        "final_val_loss": final_val, "init_val_loss": vals[0]["val_loss"], "unigram_val_loss": uni,
        "eval_text": "World English Bible (held-out)" if post_text else "Austen + Shakespeare (held-out)",
        "threads": ctx.threads, "attn_implementation": run.attn_implementation, **init_info,
    }
    if ft:
        summary["final_val_loss_pretrain_text"] = vals[-1]["val_loss_pretrain"]
        summary["init_val_loss_pretrain_text"] = vals[0]["val_loss_pretrain"]
    tmp = done.with_suffix(".tmp")
    tmp.write_text(json.dumps(summary, indent=2) + "\n")
    os.replace(tmp, done)
    log(f"[{spec.name}] done: held-out {final_val:.4f} vs unigram {uni:.4f}, {summary['s_per_step']} s/step")
    return summary


# ----------------------------------------------------------------------------------------------
# Reports (curves PNG, models table in the card)
# ----------------------------------------------------------------------------------------------
TABLE_START, TABLE_END = "<!-- models-table:start -->", "<!-- models-table:end -->"


def models_table(summaries: list[dict]) -> str:
    head = ("| model | layers | heads | d_head | d_model | params | steps | s/step | held-out loss (init -> final) "
            "| unigram | eval text |\n|---|---|---|---|---|---|---|---|---|---|---|\n")
    lines = []
    for s in summaries:
        if s.get("alias_of"):
            lines.append(f"| {s['model']} | = {s['alias_of']} (same config, not trained twice) |||||||||\n")
            continue
        lines.append(
            f"| {s['model']} | {s['n_layers']} | {s['n_heads']} | {s['d_head']} | {s['d_model']} | "
            f"{s['params']:,} | {s['steps']} | {s['s_per_step']:.3f} | {s['init_val_loss']:.3f} -> "
            f"{s['final_val_loss']:.3f} | {s['unigram_val_loss']:.3f} | {s['eval_text']} |\n")
    return head + "".join(lines)


def collect_summaries(out: Path, specs: list[ModelSpec]) -> list[dict]:
    """Summaries of every finished model under ``out`` (any process), in build order."""
    rows = []
    for spec in specs:
        mdir = out / spec.name
        if spec.alias_of:
            if mdir.is_symlink() and (mdir / "DONE.json").exists():
                rows.append({"model": spec.name, "alias_of": spec.alias_of})
        elif (mdir / "DONE.json").exists():
            rows.append(json.loads((mdir / "DONE.json").read_text()))
    return rows


def _atomic_write(path: Path, text: str) -> None:
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    tmp.write_text(text)
    os.replace(tmp, path)


def write_reports(summaries: list[dict], curves: Path, card: Path | None, log) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import pandas as pd

    trained = [s for s in summaries if not s.get("alias_of")]
    if not trained:
        return
    has_ft = any(s.get("parent") for s in trained)  # a suite without fine-tunes gets one panel
    fig, axes = plt.subplots(1, 2 if has_ft else 1, figsize=(12 if has_ft else 7, 4.5), squeeze=False)
    axes = list(axes[0])
    for s in trained:
        df = pd.read_csv(curves / f"{s['model']}.csv")
        ax = axes[1] if s.get("parent") else axes[0]
        tr = df.dropna(subset=["train_loss"])
        va = df.dropna(subset=["val_loss"])
        (line,) = ax.plot(tr["step"], tr["train_loss"], lw=0.8, alpha=0.6)
        ax.plot(va["step"], va["val_loss"], "o-", ms=3, color=line.get_color(), label=s["model"])
        ax.axhline(s["unigram_val_loss"], color=line.get_color(), ls=":", lw=0.8)
    axes[0].set_title("pretraining (Austen + Shakespeare): train (line), held-out (dots), unigram (dotted)",
                      fontsize=8)
    if has_ft:
        axes[1].set_title("second phase: held-out loss on its own text\n(a fine-tune: the World English "
                          "Bible; a continuation: the pretraining text)", fontsize=8)
    for ax in axes:
        ax.set_xlabel("step")
        ax.set_ylabel("cross-entropy (nats/token)")
        if ax.get_legend_handles_labels()[0]:
            ax.legend(fontsize=7)
    fig.tight_layout()
    tmp_png = curves / f".loss_curves.{os.getpid()}.png"
    fig.savefig(tmp_png, dpi=110)
    plt.close(fig)
    os.replace(tmp_png, curves / "loss_curves.png")
    _atomic_write(curves / "summary.json", json.dumps(summaries, indent=2) + "\n")
    if card is not None and card.exists():
        text = card.read_text()
        if TABLE_START in text and TABLE_END in text:
            pre, rest = text.split(TABLE_START, 1)
            _, post = rest.split(TABLE_END, 1)
            _atomic_write(card, pre + TABLE_START + "\n" + models_table(summaries) + TABLE_END + post)
    log(f"[report] curves and table updated ({len(trained)} models)")


# ----------------------------------------------------------------------------------------------
# Measurement and CLI
# ----------------------------------------------------------------------------------------------
def measure(specs: list[ModelSpec], run: RunConfig, vocab: int, n: int, log, new_model=new_gptneox) -> dict:
    """Seconds per training step of each architecture on random tokens (after one warm-up step)."""
    import torch

    out = {}
    for spec in specs:
        if spec.alias_of or spec.is_finetune:
            continue
        torch.manual_seed(0)
        model, _ = new_model(spec, run, vocab)
        opt = build_optimizer(model, run, 1e-3)
        x = torch.randint(0, vocab, (run.batch_size, run.seq_len))
        times = []
        for i in range(n + 1):
            t0 = time.time()
            loss = model(input_ids=x, labels=x).loss
            opt.zero_grad()
            loss.backward()
            opt.step()
            if i:
                times.append(time.time() - t0)
        out[spec.name] = float(np.median(times))
        log(f"[measure] {spec.name}: {out[spec.name]:.3f} s/step")
    return out


def parse_args(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--models", default=None,
                    help="comma-separated model names, trained in the order given (default: all, in build order)")
    ap.add_argument("--smoke", action="store_true", help="tiny config, a few steps, the committed sample text")
    ap.add_argument("--out", default=None, help="output directory (default: datasets/pico_pythia/build)")
    ap.add_argument("--threads", type=int, default=1, help="torch intra-op threads (default: %(default)r)")
    ap.add_argument("--curves", default=None,
                    help="folder of the loss curves and summary (default: the suite's curves/ for the "
                         "default output, else OUT/curves)")
    ap.add_argument("--card", default=None,
                    help="card whose models table is rewritten (default: the suite's README.md for the "
                         "default output, else none)")
    ap.add_argument("--measure", action="store_true", help="only measure seconds per step and exit")
    ap.add_argument("--report", action="store_true",
                    help="only rewrite the curves PNG, summary.json and the card's table from finished models")
    ap.add_argument("--stop-after", type=int, default=None,
                    help="(tests) stop after this many optimizer steps, as if interrupted")
    return ap.parse_args(argv)


def main(argv=None) -> int:
    import torch

    args = parse_args(argv)
    specs_all = SMOKE_SPECS if args.smoke else SPECS
    run = SMOKE_RUN if args.smoke else RunConfig()
    # the converged-base pair is built only when named
    specs_named = specs_all + (SMOKE_CONVERGED_SPECS if args.smoke else CONVERGED_SPECS)
    by_name = {s.name: s for s in specs_named}
    if args.models:
        names = [n.strip() for n in args.models.split(",") if n.strip()]
        bad = [n for n in names if n not in by_name]
        if bad:
            import difflib

            hint = difflib.get_close_matches(bad[0], list(by_name), n=1)
            raise SystemExit(f"unknown model {bad[0]!r}; choose from {list(by_name)}"
                             + (f". Did you mean {hint[0]!r}?" if hint else ""))
        specs = [by_name[n] for n in dict.fromkeys(names)]  # in the order given
    else:
        specs = list(specs_all)
    default_out = args.out is None and not args.smoke
    out = Path(args.out).resolve() if args.out else (DEFAULT_OUT if not args.smoke else DEFAULT_OUT / "smoke")
    out.mkdir(parents=True, exist_ok=True)
    curves = Path(args.curves).resolve() if args.curves else HERE / "curves" if default_out else out / "curves"
    curves.mkdir(parents=True, exist_ok=True)
    card = Path(args.card).resolve() if args.card else HERE / "README.md" if default_out else None

    import transformers

    transformers.utils.logging.disable_progress_bar()
    prev_threads = torch.get_num_threads()
    torch.set_num_threads(args.threads)

    def log(msg: str) -> None:
        print(f"{time.strftime('%H:%M:%S')} {msg}", flush=True)

    try:
        if args.measure:
            log(json.dumps(measure(specs, run, run.vocab_size, 3, log)))
            return 0
        if args.report:
            write_reports(collect_summaries(out, specs_named), curves, card, log)
            if default_out:  # snapshot the build logs for the commit
                (HERE / "logs").mkdir(exist_ok=True)
                for f in sorted(out.glob("*.log")):
                    shutil.copyfile(f, HERE / "logs" / f.name)
            return 0
        log(f"[build] out={out} threads={args.threads} models={[s.name for s in specs]} "
            f"torch {torch.__version__} python {platform.python_version()}")
        data, _ = prepare_data(out, run, smoke=args.smoke, log=log)
        vocab = data.info["tokenizer_vocab"]
        if default_out:
            shutil.copyfile(out / "tokenizer.json", HERE / "tokenizer.json")
        meta = {"run": asdict(run), "data": data.info, "threads": args.threads,
                "torch": torch.__version__, "smoke": args.smoke,
                "specs": [asdict(s) for s in specs_named]}
        (out / "build_meta.json").write_text(json.dumps(meta, indent=2, default=str) + "\n")
        if default_out:
            shutil.copyfile(out / "build_meta.json", curves / "build_meta.json")
        ctx = Ctx(out=out, curves=curves, run=run, data=data, vocab=vocab, threads=args.threads, log=log,
                  stop_after=args.stop_after)
        for spec in specs:
            if spec.alias_of:
                target = out / spec.alias_of
                if not (target / "DONE.json").exists():
                    if spec.alias_of not in [s.name for s in specs]:
                        log(f"[{spec.name}] = {spec.alias_of}, which is not built yet: skipped")
                    continue
                link = out / spec.name
                if not link.exists():
                    link.symlink_to(spec.alias_of, target_is_directory=True)
                log(f"[{spec.name}] same config as {spec.alias_of}: linked, not trained twice")
                continue
            if spec.is_finetune and not (out / spec.parent / "DONE.json").exists():
                log(f"[{spec.name}] parent {spec.parent} not finished: skipped")
                continue
            if train_one(spec, ctx) is not None:
                write_reports(collect_summaries(out, specs_named), curves, card, log)
        write_reports(collect_summaries(out, specs_named), curves, card, log)
        log("[build] all requested models finished")
        return 0
    except StopBuild as exc:
        log(f"[build] {exc}")
        return 3
    finally:
        torch.set_num_threads(prev_threads)


if __name__ == "__main__":
    sys.exit(main())
