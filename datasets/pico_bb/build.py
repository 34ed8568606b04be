"""Bigram-Backcopy (BB) transformers trained from scratch on the CPU: do attention-sink anchor heads emerge?

The task, model and optimizer follow Guo et al., "Active-Dormant Attention Heads" (arXiv 2410.13835),
code GuoTianYu2000/Active-Dormant-Attention at commit 16b3593c, folder ``BBM/`` (read, not imported):

- **data** (``BBM/data.py``, class ``bbm``; ``BBM/train_main.py``): the char-level bigram of
  tiny-shakespeare with ``<s_0>`` (id 65) and ``<d>`` (id 66) added, as stored in
  ``BBM/data/bos1_d0/config.yaml`` (copied to ``bb_meta.json`` with its sha256). Every sequence is
  ``<s_0>``, then one token from the unigram marginal with the triggers removed, then 255 tokens:
  after a trigger the token before it is copied (backcopy), after any other token the next is drawn
  from the bigram. Triggers: the ``k = 3`` most frequent tokens (``t``, ``e``, space). The generator
  draws ``seq_length + 1 = 257`` tokens; the model reads the first 256 and predicts the next at each
  of them (cross-entropy over all 256 positions, mean).
- **model** (``BBM/model.py``, ``Transformer`` with ``ModelArgs``): pre-norm blocks, ``nn.LayerNorm``
  (eps 1e-5, with bias) before attention and before the MLP and a final one, learned absolute
  position embeddings (``max_length`` 256), attention and MLP linear maps without bias, ReLU MLP of
  width ``4 dim``, untied output layer without bias, softmax attention scaled by ``1/sqrt(d_head)``,
  PyTorch's default init (embeddings N(0, 1); linear maps U(+-1/sqrt(fan_in)); LayerNorm 1 and 0).
  Built here as a Hugging Face ``GPT2LMHeadModel`` (so ``lie-stats extract`` reads it) with ReLU,
  no dropout, untied output, the same init, and every ``Conv1D`` bias set to 0 and frozen: the same
  function as the paper's bias-free maps.
- **optimizer** (``BBM/train_main.py``, the command of ``BBM/scripts/dynamics.sh``): AdamW on every
  trainable parameter, lr 3e-4 constant, weight decay 1e-4, betas (0.9, 0.99), eps 1e-8, no
  schedule, no clipping; ``dim`` 256.

Departures (forced or asked for; recorded in every run's JSON): 6 layers x 8 heads (the paper's
scripts train 1 or 3 layers with 1 head; lie_stats issue 29 asks for >= 6 x 8) and batch 16 (the
paper's 512 costs ~60 CPU-seconds a step here). Data order is a function of (seed, step): batch
``s`` is drawn from ``numpy.random.default_rng([seed, s])`` (vectorized over the batch; the same
distribution as the paper's per-sequence loop, not its random stream).

Measured at a grid of steps on a probe of held-out BB sequences (256 tokens, ``<s_0>`` at position
0, drawn from ``default_rng([PROBE_SEED])``): every head's METRICS.md §7-§9 activation metrics
(:func:`lie_stats.extraction.activations.activation_metrics`: sink_score, value_norm, written_norm, both anchor
labels), the predictors of emergence (90th percentile of sink_score, share of heads above 0.3, the
``<s_0>`` residual norm over the median position's, per layer, the spread of written_norm within
layers) and the held-out loss split as the paper splits it (trigger positions: the copy; the others:
the bigram), beside the Bayes floor of each.

Resumable: at every measurement the whole state is written atomically (``state.pt`` in the run's
state folder, outside git); rerunning the same command continues. ``--checkpoints DIR`` also saves
the model at every measured step as ``DIR/<run>/step_<N>/`` (safetensors) and the probe as
``DIR/probe.npz`` for ``lie-stats extract``.

    nice -n 10 python datasets/pico_bb/build.py --seed 100 --steps 500 --cpu-budget 1200      # the pilot
    nice -n 10 python datasets/pico_bb/build.py --seed 1 --steps 500 --checkpoints datasets/pico_bb/build
"""

from __future__ import annotations

import argparse
import dataclasses
import datetime as dt
import hashlib
import json
import math
import os
import platform
import signal
import sys
import time
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[1]
sys.path.insert(0, str(HERE.parent))
from _build_loader import load_pico_build  # noqa: E402  (pico_pythia's build, one module object for all)
META = HERE / "bb_meta.json"
CURVES = HERE / "curves"
STATE = HERE / "build" / "_state"
FORMAT = "lie_stats.datasets.pico_bb/1"
PROBE_SEED = 987654321
EVAL_SEED = 123456789

CSV_COLUMNS = ("step", "sequences", "train_loss", "val_loss", "val_loss_copy", "val_loss_bigram",
               "max_sink", "p90_sink", "heads_sink_ge_half", "share_sink_gt_0p3", "anchors", "anchors_written",
               "bos_resid_ratio_max", "bos_resid_ratio_last", "written_cv_mean", "sink_head",
               "sink_head_value_rank", "sink_head_written_rank", "cpu_s", "s_per_step")


@dataclasses.dataclass(frozen=True)
class Config:
    """What fixes a run; stored in the state, and a rerun must ask for the same."""

    seed: int = 1
    steps: int = 500
    n_layers: int = 6
    n_heads: int = 8
    dim: int = 256
    seq_length: int = 256
    k: int = 3
    batch_size: int = 16
    lr: float = 3e-4
    weight_decay: float = 1e-4
    beta1: float = 0.9
    beta2: float = 0.99
    eps: float = 1e-8
    probe_seqs: int = 16
    eval_seqs: int = 64
    threads: int = 1


def measure_steps(n: int) -> list[int]:
    """0, 1, 2, 4, ..., 64, then 100, 150, ... every 50 steps, and ``n``."""
    grid = [0] + [2 ** i for i in range(7) if 2 ** i < min(n, 100)]
    grid += list(range(100, n, 50)) + [n]
    return sorted(set(g for g in grid if g <= n))


def run_name(cfg: Config) -> str:
    return f"bb_l{cfg.n_layers}h{cfg.n_heads}d{cfg.dim}_s{cfg.seed}"


# ------------------------------------------------------------------------------------------ data
class BB:
    """The paper's ``bbm`` generator over ``bb_meta.json`` (vectorized over a batch)."""

    def __init__(self, k: int = 3, path: Path = META):
        m = json.loads(path.read_text())
        self.meta_sha256 = hashlib.sha256(path.read_bytes()).hexdigest()
        self.source = m["source"]
        self.V = int(m["vocab_size"])
        self.bos = int(m["bos"][0])
        self.itos = m["itos"]
        marginal = np.asarray(m["marginal"], float)
        cond = np.asarray(m["cond"], float)
        # BBM/data.py Dataset.__init__ (fixed_special_toks, offset 0): the k most frequent tokens
        self.triggers = [int(i) for i in marginal.argsort()[self.V - k:self.V]]
        self.is_trigger = np.zeros(self.V, bool)
        self.is_trigger[self.triggers] = True
        # bbm.marginal2 = no_trigger_init: the marginal with the triggers removed, renormalized
        m2 = marginal.copy()
        m2[self.triggers] = 0
        self.marginal2_cdf = np.cumsum(m2 / m2.sum())
        self.cond = cond
        self.cond_cdf = np.cumsum(cond, axis=1)
        self.cond_cdf /= self.cond_cdf[:, -1:]

    def batch(self, rng: np.random.Generator, n: int, seq_length: int = 256) -> np.ndarray:
        """``[n, seq_length + 1]`` sequences, as ``bbm.gen_seq`` makes them."""
        seq = np.empty((n, seq_length + 1), np.int64)
        seq[:, 0] = self.bos
        seq[:, 1] = np.minimum(np.searchsorted(self.marginal2_cdf, rng.random(n), side="right"), self.V - 1)
        for t in range(2, seq_length + 1):
            x, xp = seq[:, t - 1], seq[:, t - 2]
            u = rng.random(n)
            nxt = np.minimum((u[:, None] >= self.cond_cdf[x]).sum(1), self.V - 1)
            seq[:, t] = np.where(self.is_trigger[x], xp, nxt)
        return seq

    def bigram_entropy(self, seqs: np.ndarray) -> float:
        """Mean Bayes cross-entropy of the non-trigger predictions of ``seqs`` (the copies cost 0)."""
        x = seqs[:, :-1]
        mask = ~self.is_trigger[x]
        c = self.cond[x[mask]]
        return float(np.mean(-(c * np.log(np.where(c > 0, c, 1))).sum(1)))


def probe_tokens(bb: BB, cfg: Config) -> np.ndarray:
    return bb.batch(np.random.default_rng([PROBE_SEED]), cfg.probe_seqs, cfg.seq_length)[:, :-1]


# ----------------------------------------------------------------------------------------- model
def make_model(cfg: Config, bb: BB):
    import torch
    from transformers import GPT2Config, GPT2LMHeadModel

    mc = GPT2Config(vocab_size=bb.V, n_positions=cfg.seq_length, n_embd=cfg.dim, n_layer=cfg.n_layers,
                    n_head=cfg.n_heads, n_inner=4 * cfg.dim, activation_function="relu", resid_pdrop=0.0,
                    embd_pdrop=0.0, attn_pdrop=0.0, layer_norm_epsilon=1e-5, tie_word_embeddings=False,
                    bos_token_id=bb.bos, eos_token_id=None, pad_token_id=None, scale_attn_weights=True,
                    scale_attn_by_inverse_layer_idx=False, reorder_and_upcast_attn=False)
    torch.manual_seed(cfg.seed)
    model = GPT2LMHeadModel(mc)
    g = torch.Generator().manual_seed(cfg.seed)

    def unif(w, fan_in):
        b = 1.0 / math.sqrt(fan_in)
        w.uniform_(-b, b, generator=g)

    with torch.no_grad():
        tr = model.transformer
        tr.wte.weight.normal_(0.0, 1.0, generator=g)  # nn.Embedding default
        tr.wpe.weight.normal_(0.0, 1.0, generator=g)
        for blk in tr.h:
            for ln in (blk.ln_1, blk.ln_2):
                ln.weight.fill_(1.0)
                ln.bias.zero_()
            # Conv1D weights are [in, out]; nn.Linear(in, out) default: U(+-1/sqrt(in))
            unif(blk.attn.c_attn.weight, cfg.dim)
            unif(blk.attn.c_proj.weight, cfg.dim)
            unif(blk.mlp.c_fc.weight, cfg.dim)
            unif(blk.mlp.c_proj.weight, 4 * cfg.dim)
            for lin in (blk.attn.c_attn, blk.attn.c_proj, blk.mlp.c_fc, blk.mlp.c_proj):
                lin.bias.zero_()
                lin.bias.requires_grad_(False)
        tr.ln_f.weight.fill_(1.0)
        tr.ln_f.bias.zero_()
        unif(model.lm_head.weight, cfg.dim)
    return model


def freeze_biases(model) -> None:
    for blk in model.transformer.h:
        for lin in (blk.attn.c_attn, blk.attn.c_proj, blk.mlp.c_fc, blk.mlp.c_proj):
            lin.bias.requires_grad_(False)


def losses(model, seqs, bb: BB, batch: int = 16):
    """Mean cross-entropy over all predictions, over the copies (trigger inputs) and over the rest."""
    import torch
    import torch.nn.functional as F

    tot = [0.0, 0.0, 0.0]
    cnt = [0, 0, 0]
    model.eval()
    with torch.no_grad():
        for i in range(0, len(seqs), batch):
            s = torch.from_numpy(seqs[i:i + batch])
            x, y = s[:, :-1], s[:, 1:]
            ce = F.cross_entropy(model(input_ids=x).logits.flatten(0, 1).float(), y.flatten(), reduction="none")
            trig = torch.from_numpy(bb.is_trigger[x.numpy()].ravel())
            for j, m in enumerate((torch.ones_like(trig), trig, ~trig)):
                tot[j] += float(ce[m].sum())
                cnt[j] += int(m.sum())
    model.train()
    return [t / max(c, 1) for t, c in zip(tot, cnt)]


def bos_residual_ratio(model, tokens) -> list[float]:
    """Per block: mean over sequences of ||h_0|| / median over t >= 1 of ||h_t||, ``h`` the block's output."""
    import torch

    outs: dict[int, list] = {}
    hooks = []
    for i, blk in enumerate(model.transformer.h):
        hooks.append(blk.register_forward_hook(
            lambda mod, args, out, i=i: outs.setdefault(i, []).append((out[0] if isinstance(out, tuple) else out).detach())))
    try:
        model.eval()
        with torch.no_grad():
            model(input_ids=torch.tensor(np.array(tokens)))
    finally:
        for h in hooks:
            h.remove()
        model.train()
    res = []
    for i in range(len(model.transformer.h)):
        h = torch.cat(outs[i]).norm(dim=-1)  # [n, T]
        res.append(float((h[:, 0] / h[:, 1:].median(dim=1).values).mean()))
    return res


def rank_in_layer(v: np.ndarray, layer: int, head: int) -> int:
    """1 = the lowest value of its layer."""
    return int((v[layer] < v[layer, head]).sum()) + 1


def summarize(act, step: int, resid: list[float]) -> dict:
    from lie_stats.schema import LABEL_CODES

    s = np.asarray(act["sink_score"], float)
    v = np.asarray(act["value_norm"], float)
    w = np.asarray(act["written_norm"], float)
    lab, labw = np.asarray(act["head_label"]), np.asarray(act["head_label_written"])
    layer, head = np.unravel_index(int(np.nanargmax(s)), s.shape)
    cv = np.nanstd(w, axis=1) / np.nanmean(w, axis=1)
    return {"step": step, "max_sink": float(np.nanmax(s)), "p90_sink": float(np.nanpercentile(s, 90)),
            "heads_sink_ge_half": int((s >= 0.5).sum()), "share_sink_gt_0p3": float((s > 0.3).mean()),
            "anchors": int((lab == LABEL_CODES["anchor"]).sum()),
            "anchors_written": int((labw == LABEL_CODES["anchor"]).sum()),
            "bos_resid_ratio_max": float(max(resid)), "bos_resid_ratio_last": float(resid[-1]),
            "written_cv_mean": float(np.mean(cv)), "sink_head": f"L{layer}H{head}",
            "sink_head_value_rank": rank_in_layer(v, layer, head), "sink_head_written_rank": rank_in_layer(w, layer, head)}


# ----------------------------------------------------------------------------------------- state
def write_curves(st: dict, out: Path, name: str) -> None:
    pico = load_pico_build()
    out.mkdir(parents=True, exist_ok=True)
    pico._write_csv(st["rows"], out / f"{name}.csv", CSV_COLUMNS)
    record = {"format": FORMAT, "run": name, "config": st["config"], "meta": st["meta"], "rows": st["rows"],
              "measurements": st["heads"]}
    pico._atomic_write(out / f"{name}.json", json.dumps(record, indent=1) + "\n")
    if st["rows"]:
        plot(st, out / f"{name}.png", name)


def plot(st: dict, path: Path, name: str) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    rows = st["rows"]
    x = np.array([r["step"] for r in rows], float)
    fig, ax = plt.subplots(2, 3, figsize=(15, 7.5))
    a = ax[0, 0]
    sinks = np.array([np.asarray(h["sink_score"], float).ravel() for h in st["heads"]])
    a.plot(x, sinks, color="0.8", lw=0.5)
    a.plot(x, [r["max_sink"] for r in rows], "o-", ms=3, color="C3", label="max")
    a.plot(x, [r["p90_sink"] for r in rows], "s-", ms=3, color="C1", label="90th percentile")
    a.axhline(0.5, color="k", ls=":", lw=0.8)
    a.set_ylabel("sink_score (grey: every head)")
    a.legend(fontsize=7)
    a = ax[0, 1]
    a.plot(x, [r["heads_sink_ge_half"] for r in rows], "o-", ms=3, label="heads sink >= 0.5")
    a.plot(x, [r["anchors"] for r in rows], "^-", ms=3, color="C3", label="anchors (§8, value_norm)")
    a.plot(x, [r["anchors_written"] for r in rows], "v-", ms=3, color="C2", label="anchors (§9, written_norm)")
    a.axhline(8, color="C3", ls=":", lw=0.8, label="target 8")
    a.set_ylabel("heads")
    a.legend(fontsize=7)
    a = ax[0, 2]
    a.plot(x, [r["share_sink_gt_0p3"] for r in rows], "o-", ms=3, label="share of heads sink > 0.3")
    a.plot(x, [r["written_cv_mean"] for r in rows], "s-", ms=3, label="written_norm CV within layer (mean)")
    a.legend(fontsize=7)
    a = ax[1, 0]
    for key, lab in (("val_loss", "held-out, all"), ("val_loss_copy", "held-out, copies"),
                     ("val_loss_bigram", "held-out, bigram")):
        a.plot(x, [r[key] for r in rows], "o-", ms=3, label=lab)
    fl = st["meta"].get("bigram_floor")
    if fl is not None:
        a.axhline(fl, color="k", ls=":", lw=0.8, label=f"bigram Bayes floor {fl:.3f}")
    a.set_ylabel("cross-entropy (nats)")
    a.legend(fontsize=7)
    a = ax[1, 1]
    res = np.array([h["bos_resid_ratio"] for h in st["heads"]])
    for i in range(res.shape[1]):
        a.plot(x, res[:, i], lw=1, label=f"block {i}")
    a.set_ylabel("||h_0|| / median_t ||h_t||")
    a.set_yscale("log")
    a.legend(fontsize=6)
    for a in list(ax[0]) + [ax[1, 0], ax[1, 1]]:
        a.set_xscale("symlog", linthresh=1, linscale=0.3)
        a.set_xlim(left=0)
        a.set_xlabel("step (symlog)")
    a = ax[1, 2]
    last = st["heads"][-1]
    im = a.imshow(np.asarray(last["sink_score"], float), aspect="auto", vmin=0, vmax=1, cmap="viridis")
    from lie_stats.schema import LABEL_CODES
    lab = np.asarray(last["head_label"], float)
    labw = np.asarray(last["head_label_written"], float)
    for li, hi in zip(*np.nonzero((lab == LABEL_CODES["anchor"]) | (labw == LABEL_CODES["anchor"]))):
        t = ("A" if lab[li, hi] == LABEL_CODES["anchor"] else "") + ("w" if labw[li, hi] == LABEL_CODES["anchor"] else "")
        a.text(hi, li, t, ha="center", va="center", color="red", fontsize=8, weight="bold")
    a.set_xlabel("head")
    a.set_ylabel("layer")
    a.set_title(f"sink_score at step {last['step']} (A: §8 anchor, w: §9 anchor)", fontsize=9)
    fig.colorbar(im, ax=a)
    c = st["config"]
    fig.suptitle(f"{name}: Bigram-Backcopy, {c['n_layers']} x {c['n_heads']} heads, dim {c['dim']}, batch "
                 f"{c['batch_size']} x {c['seq_length']}, AdamW lr {c['lr']} wd {c['weight_decay']}", fontsize=10)
    fig.tight_layout()
    tmp = path.with_name(f".{path.stem}.{os.getpid()}.png")
    fig.savefig(tmp, dpi=90)
    plt.close(fig)
    os.replace(tmp, path)


# ----------------------------------------------------------------------------------------- train
def train(cfg: Config, *, out: Path = CURVES, state_root: Path = STATE, checkpoints: Path | None = None,
          cpu_budget: float | None = None, deadline: float | None = None, extend: bool = False, log=print) -> dict:
    """Train (or resume) one run to ``cfg.steps``, or until ``cpu_budget`` CPU-seconds, ``deadline``
    (epoch seconds) or SIGTERM; returns the state (curves, without weights)."""
    import torch
    import transformers

    transformers.utils.logging.disable_progress_bar()
    prev_threads = torch.get_num_threads()
    torch.set_num_threads(cfg.threads)
    try:
        return _train(cfg, out, state_root, checkpoints, cpu_budget, deadline, extend, log)
    finally:
        torch.set_num_threads(prev_threads)


def _train(cfg, out, state_root, checkpoints, cpu_budget, deadline, extend, log) -> dict:
    import threading

    import torch
    import torch.nn.functional as F
    import transformers

    from lie_stats.extraction.activations import activation_metrics
    from lie_stats.extraction.probe import ProbeSet, save_probe
    from lie_stats.schema import LABEL_CODES

    pico = load_pico_build()
    name = run_name(cfg)
    sdir = state_root / name
    sdir.mkdir(parents=True, exist_ok=True)
    state_path = sdir / "state.pt"
    stop = {"signal": None}
    if threading.current_thread() is threading.main_thread():
        signal.signal(signal.SIGTERM, lambda s, f: stop.update(signal=s))

    bb = BB(cfg.k)
    probe = ProbeSet.from_tokens(probe_tokens(bb, cfg), first_token="bos",
                                 tokenizer=f"Bigram-Backcopy vocabulary {bb.V} (bb_meta.json sha256 {bb.meta_sha256[:16]}), <s_0> = {bb.bos}",
                                 text_source=f"BB sequences from numpy default_rng([{PROBE_SEED}]), {cfg.probe_seqs} x {cfg.seq_length}")
    if checkpoints is not None:
        checkpoints.mkdir(parents=True, exist_ok=True)
        save_probe(probe, checkpoints / "probe.npz")
    val = bb.batch(np.random.default_rng([EVAL_SEED]), cfg.eval_seqs, cfg.seq_length)
    model = make_model(cfg, bb)
    params = [p for p in model.parameters() if p.requires_grad]
    opt = torch.optim.AdamW(params, lr=cfg.lr, weight_decay=cfg.weight_decay, betas=(cfg.beta1, cfg.beta2), eps=cfg.eps)
    grid = measure_steps(cfg.steps)
    meta = {"machine": platform.machine(), "python": platform.python_version(), "torch": str(torch.__version__),
            "transformers": transformers.__version__, "threads": cfg.threads, "bb_meta_sha256": bb.meta_sha256,
            "bb_source": bb.source, "vocab": bb.V, "bos_id": bb.bos, "triggers": bb.triggers,
            "trigger_chars": [bb.itos[i] for i in bb.triggers], "probe": probe.metadata(), "grid": grid,
            "params": sum(p.numel() for p in model.parameters()), "trainable": sum(p.numel() for p in params),
            "bigram_floor": bb.bigram_entropy(val), "label_codes": dict(LABEL_CODES),
            "labels": "head_label: METRICS §8 (sink_score >= 0.5, value_norm in the layer's lowest third); "
                      "head_label_written: §9.2 (written_norm in place of value_norm)"}
    if state_path.exists():
        st = torch.load(state_path, weights_only=True, map_location="cpu")
        diff = {k: (st["config"].get(k), v) for k, v in dataclasses.asdict(cfg).items() if st["config"].get(k) != v}
        if extend and set(diff) == {"steps"} and st["step"] == st["config"]["steps"] < cfg.steps:
            # no schedule and data order a function of (seed, step): a longer run is the same run continued
            log(f"[{name}] extended from its {st['config']['steps']} declared steps to {cfg.steps}")
            st["meta"]["extended_from"] = st["meta"].get("extended_from", []) + [st["config"]["steps"]]
            st["config"] = dataclasses.asdict(cfg)
        elif diff:
            raise SystemExit(f"{state_path}: holds a run with another config (field: (stored, asked)) {diff}"
                             + ("; --extend continues a finished run to more steps" if set(diff) == {"steps"} else ""))
        model.load_state_dict(st["model"])
        freeze_biases(model)
        opt.load_state_dict(st["optimizer"])
        log(f"[{name}] resumed at step {st['step']} ({len(st['rows'])} measurements)")
    else:
        st = {"config": dataclasses.asdict(cfg), "meta": meta, "step": 0, "rows": [], "heads": [],
              "acc": [0.0, 0], "cpu_s": 0.0, "steps_since": 0, "t_since": 0.0}
    st["meta"] = {**meta, **{k: v for k, v in st["meta"].items() if k == "extended_from"},
                  "sessions": st["meta"].get("sessions", 0) + 1}

    def measure_and_save(step: int) -> None:
        c0 = time.process_time()
        act = activation_metrics(model, probe, batch_size=8, grad=False)
        model.set_attn_implementation("eager")
        model.train()
        resid = bos_residual_ratio(model, probe.tokens)
        vl = losses(model, val, bb)
        acc = st["acc"]
        row = {**summarize(act, step, resid), "sequences": step * cfg.batch_size,
               "train_loss": acc[0] / acc[1] if acc[1] else None, "val_loss": vl[0], "val_loss_copy": vl[1],
               "val_loss_bigram": vl[2],
               "s_per_step": round(st["t_since"] / st["steps_since"], 3) if st["steps_since"] else None}
        st["rows"] = [r for r in st["rows"] if r["step"] != step] + [row]
        st["heads"] = [h for h in st["heads"] if h["step"] != step] + [
            {"step": step, "bos_resid_ratio": [round(r, 6) for r in resid],
             **{k: np.round(np.asarray(act[k], float), 6).tolist()
                for k in ("sink_score", "sink_argmax_fraction", "value_norm", "written_norm", "sink_value_ratio",
                          "head_label", "head_label_written")}}]
        if checkpoints is not None:
            pico._save_checkpoint(model, checkpoints / name, step)
        st["cpu_s"] += time.process_time() - c0
        row["cpu_s"] = round(st["cpu_s"], 1)
        st.update(step=step, acc=[0.0, 0], steps_since=0, t_since=0.0, model=model.state_dict(),
                  optimizer=opt.state_dict())
        pico._atomic_save_state(st, state_path)
        write_curves({k: v for k, v in st.items() if k not in ("model", "optimizer")}, out, name)
        log(f"[{name}] step {step}: loss {vl[0]:.3f} (copy {vl[1]:.3f}, bigram {vl[2]:.3f}), max sink "
            f"{row['max_sink']:.3f} ({row['sink_head']}), p90 {row['p90_sink']:.3f}, sink>=0.5 {row['heads_sink_ge_half']}, "
            f"anchors {row['anchors']}/{row['anchors_written']}, bos resid {row['bos_resid_ratio_max']:.2f}, "
            f"cpu {st['cpu_s']:.0f} s, {row['s_per_step']} s/step")

    if not st["rows"]:
        measure_and_save(0)
    step = st["step"]
    model.set_attn_implementation("sdpa")
    while step < cfg.steps:
        over = cpu_budget is not None and st["cpu_s"] >= cpu_budget
        late = deadline is not None and time.time() >= deadline
        if over or late or stop["signal"] is not None:
            if st["rows"][-1]["step"] != step:
                model.set_attn_implementation("eager")
                measure_and_save(step)
            why = "CPU budget" if over else ("deadline" if late else "SIGTERM")
            log(f"[{name}] stopped at step {step} ({why}, cpu {st['cpu_s']:.0f} s)")
            st["stopped"] = why
            break
        c0, t0 = time.process_time(), time.time()
        s = torch.from_numpy(bb.batch(np.random.default_rng([cfg.seed, step]), cfg.batch_size, cfg.seq_length))
        x, y = s[:, :-1], s[:, 1:]
        logits = model(input_ids=x).logits
        loss = F.cross_entropy(logits.flatten(0, 1).float(), y.flatten())
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        step += 1
        st["cpu_s"] += time.process_time() - c0
        st["t_since"] += time.time() - t0
        st["steps_since"] += 1
        st["acc"][0] += loss.item()
        st["acc"][1] += 1
        if step in grid:
            model.set_attn_implementation("eager")
            measure_and_save(step)
            model.set_attn_implementation("sdpa")
    return {k: v for k, v in st.items() if k not in ("model", "optimizer")}


def parse_deadline(text: str | None) -> float | None:
    if not text:
        return None
    now = dt.datetime.now(dt.timezone.utc)
    h, m = (int(p) for p in text.split(":"))
    t = now.replace(hour=h, minute=m, second=0, microsecond=0)
    return t.timestamp()


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--seed", type=int, required=True)
    p.add_argument("--steps", type=int, default=500)
    p.add_argument("--layers", type=int, default=6)
    p.add_argument("--heads", type=int, default=8)
    p.add_argument("--dim", type=int, default=256)
    p.add_argument("--batch", type=int, default=16)
    p.add_argument("--cpu-budget", type=float, default=None, help="CPU seconds (training + measurements) after which the run stops")
    p.add_argument("--deadline", default=None, help="HH:MM UTC: stop (measured, saved) past it")
    p.add_argument("--checkpoints", type=Path, default=None)
    p.add_argument("--extend", action="store_true", help="continue a finished run of the same config to more --steps")
    p.add_argument("--out", type=Path, default=CURVES)
    p.add_argument("--state", type=Path, default=STATE)
    a = p.parse_args(argv)
    cfg = Config(seed=a.seed, steps=a.steps, n_layers=a.layers, n_heads=a.heads, dim=a.dim, batch_size=a.batch)
    train(cfg, out=a.out, state_root=a.state, checkpoints=a.checkpoints, cpu_budget=a.cpu_budget,
          deadline=parse_deadline(a.deadline), extend=a.extend, log=lambda m: print(time.strftime("%H:%M:%S"), m, flush=True))
    return 0


if __name__ == "__main__":
    sys.exit(main())
