"""Build the pico_sudoku suite: encoders trained here to fill in sudoku puzzles.

The suite's runs are pre-LN encoders (``RobertaPreLayerNormForMaskedLM``); ``--variant post``
builds the post-LN variant (``BertForMaskedLM``, the first build, which stayed at chance).

Usage::

    python datasets/pico_sudoku/build.py --data                 # generate the puzzles (once)
    python datasets/pico_sudoku/build.py --models sudoku_s0,sudoku_s1,sudoku_s2      # train (resumable), in that order
    python datasets/pico_sudoku/build.py --variant post         # the post-LN variant's runs
    python datasets/pico_sudoku/build.py --smoke --out DIR      # tiny config, < 30 s
    python datasets/pico_sudoku/build.py --measure              # seconds per step, then exit
    python datasets/pico_sudoku/build.py --report               # curves PNG, summary.json, logs/, results table

Input: ``[BOS]`` + the 81 cells of a puzzle (digits 1-9, ``[BLANK]`` for a blank); loss:
cross-entropy of the solution's digit at the blanked cells only. Every run trains on the same
data order (a fixed data seed, independent of the model seed): the training puzzles shuffled
per epoch, each puzzle's digits relabelled by a random permutation drawn from
``(data seed, step)`` (a relabelled puzzle is a valid puzzle with a unique solution). The
training state (weights, AdamW state, step = data cursor, torch RNG, logs, timing) is written
atomically at every checkpoint; a rerun skips finished runs (``DONE.json``) and resumes an
unfinished one from its last state, bit-identically (``tests/test_pico_sudoku.py``).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import sys
import time
from dataclasses import asdict, dataclass, replace
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path[:0] = [str(HERE), str(HERE.parent)]

import sudoku  # noqa: E402
from _build_loader import load_pico_build  # noqa: E402  (pico_pythia's build, one module object for all)

pp = load_pico_build()
checkpoint_steps, lr_at = pp.checkpoint_steps, pp.lr_at
_atomic_write, _atomic_save_state, _save_checkpoint = pp._atomic_write, pp._atomic_save_state, pp._save_checkpoint

DEFAULT_OUT = HERE / "build"
PAD, BLANK, BOS = 0, 10, 11  # digits 1..9 are their own ids
VOCAB = 12
SEQ_LEN = 82  # [BOS] + 81 cells


@dataclass(frozen=True)
class ModelSpec:
    name: str
    n_layers: int = 12
    n_heads: int = 8
    d_head: int = 16
    seed: int = 0
    norm: str = "pre"  # "pre": RoBERTa-PreLayerNorm; "post": BERT
    init_std: float = 0.02  # initializer_range, also the grid position tables' std

    @property
    def d_model(self) -> int:
        return self.n_heads * self.d_head


@dataclass(frozen=True)
class RunConfig:
    steps: int = 3000
    batch_size: int = 32
    peak_lr: float = 1e-3
    warmup_frac: float = 0.05
    min_lr_frac: float = 0.1
    betas: tuple = (0.9, 0.98)
    weight_decay: float = 0.01
    grad_clip: float = 1.0
    n_between: int = 10
    log_every: int = 10
    data_seed: int = 1234
    grid_seed: int = 2026
    n_train: int = 24000
    n_val: int = 1200
    val_every: int = 20
    n_eval: int = 512
    probe_seqs: int = 48
    eval_batch: int = 128
    attn_implementation: str = "eager"


SPECS = [ModelSpec(f"sudoku_s{i}", seed=i) for i in range(3)]
#: The post-LN variant (the first build): BERT, init std 0.08, 1,500 steps, 7 checkpoints after 512.
POST_SPECS = [ModelSpec(f"sudoku_post_s{i}", seed=i, norm="post", init_std=0.08) for i in range(3)]
POST_RUN = RunConfig(steps=1500, n_between=7)
SMOKE_SPECS = [ModelSpec("s0", 2, 2, 8, seed=0), ModelSpec("s1", 2, 2, 8, seed=1),
               ModelSpec("s0_post", 2, 2, 8, seed=0, norm="post")]
SMOKE_RUN = RunConfig(steps=12, batch_size=4, n_between=3, log_every=2, n_train=40, n_val=20, val_every=3,
                      n_eval=8, probe_seqs=4, eval_batch=8)


class StopBuild(Exception):
    """Raised by ``--stop-after`` to simulate an interrupted build (tests)."""


# ---------------------------------------------------------------------------------------------- data
def data_path(out: Path, run: RunConfig) -> Path:
    return out / f"puzzles_g{run.grid_seed}_n{run.n_train}_{run.n_val}_e{run.val_every}.npz"


def prepare_data(out: Path, run: RunConfig, log) -> dict:
    """The puzzles (:func:`sudoku.make_split`), generated once and cached under ``out``."""
    path = data_path(out, run)
    if path.exists():
        with np.load(path) as z:
            return {k: z[k] for k in z.files}
    t0 = time.time()
    log(f"[data] generating {run.n_train} + {run.n_val} grids and puzzles (seed {run.grid_seed})")
    d = sudoku.make_split(run.grid_seed, run.n_train, run.n_val, every=run.val_every, log=log)
    tmp = out / f".{path.stem}.{os.getpid()}.npz"
    np.savez(tmp, **d)
    os.replace(tmp, path)
    log(f"[data] done in {time.time() - t0:.0f} s -> {path.name}")
    return d


def to_tokens(puzzles: np.ndarray) -> np.ndarray:
    """``[n, 81]`` cells (0 = blank) -> ``[n, 82]`` ids: ``[BOS]``, then digits / ``[BLANK]``."""
    p = puzzles.astype(np.int64)
    cells = np.where(p == 0, BLANK, p)
    return np.concatenate([np.full((len(p), 1), BOS, dtype=np.int64), cells], axis=1)


def labels_of(puzzles: np.ndarray, grids: np.ndarray) -> np.ndarray:
    """``[n, 82]``: the solution's digit at blanked cells, -100 (ignored) elsewhere and at ``[BOS]``."""
    lab = np.where(puzzles == 0, grids.astype(np.int64), np.int64(-100))
    return np.concatenate([np.full((len(lab), 1), -100, dtype=np.int64), lab], axis=1)


def batch_at(data: dict, step: int, run: RunConfig, cache: dict):
    """Inputs and labels of the ``step``-th update (0-based): a pure function of (data seed, step).

    Puzzles in an order shuffled per epoch by ``default_rng([data_seed, epoch])``; each puzzle's
    digits relabelled by a permutation from ``default_rng([data_seed, 1_000_000 + step])``.
    """
    n = len(data["train_puzzle"])
    idx = []
    for g in range(step * run.batch_size, (step + 1) * run.batch_size):
        epoch, pos = divmod(g, n)
        if epoch not in cache:
            cache.clear()
            cache[epoch] = np.random.default_rng([run.data_seed, epoch]).permutation(n)
        idx.append(int(cache[epoch][pos]))
    rng = np.random.default_rng([run.data_seed, 1_000_000 + step])
    perms = np.stack([np.concatenate([[0], 1 + rng.permutation(9)]) for _ in idx])  # 0 stays 0
    puz = np.take_along_axis(perms, data["train_puzzle"][idx].astype(np.int64), axis=1)
    grd = np.take_along_axis(perms, data["train_grid"][idx].astype(np.int64), axis=1)
    return to_tokens(puz), labels_of(puz, grd)


# ---------------------------------------------------------------------------------------------- model
def make_config(spec: ModelSpec):
    """BERT (post-LN) or RoBERTa-PreLayerNorm (pre-LN) config of ``spec``.

    RoBERTa numbers positions from ``pad_token_id + 1`` (``[BOS]`` at table row 1, cell ``i`` at
    row ``2 + i``), hence one more position row than BERT.
    """
    from transformers import BertConfig, RobertaPreLayerNormConfig

    common = dict(
        vocab_size=VOCAB, hidden_size=spec.d_model, num_hidden_layers=spec.n_layers,
        num_attention_heads=spec.n_heads, intermediate_size=4 * spec.d_model, hidden_act="gelu",
        hidden_dropout_prob=0.0, attention_probs_dropout_prob=0.0, type_vocab_size=1,
        initializer_range=spec.init_std, layer_norm_eps=1e-12, pad_token_id=PAD, bos_token_id=BOS,
        mask_token_id=BLANK, position_embedding_type="absolute", tie_word_embeddings=True,
    )
    if spec.norm == "post":
        cfg = BertConfig(max_position_embeddings=SEQ_LEN, **common)
    elif spec.norm == "pre":
        cfg = RobertaPreLayerNormConfig(max_position_embeddings=SEQ_LEN + 1, **common)
    else:
        raise ValueError(f"{spec.name}: norm {spec.norm!r}; expected 'pre' or 'post'")
    cfg._attn_implementation = "eager"
    return cfg


def _position_table(model):
    """The position-embedding table and the row of position 0 (``[BOS]``)."""
    if hasattr(model, "bert"):
        return model.bert.embeddings.position_embeddings.weight, 0
    return model.roberta_prelayernorm.embeddings.position_embeddings.weight, PAD + 1


def grid_position_init(model, seed: int, std: float = 0.02) -> None:
    """Position embeddings that share a row, a column and a box vector with their peers.

    ``pos[1 + i] = row[r(i)] + col[c(i)] + box[b(i)]`` for cell ``i``, ``pos[0]`` (``[BOS]``) its own
    vector; these 28 vectors, N(0, std), drawn from ``torch.Generator().manual_seed(10_000 + seed)``.
    Only the initial values: the embeddings are trained as usual. It makes a cell's peers
    (same row, column, box) similar at init. In 12-layer pilots (README, Sizing) the pre-LN
    model with it left the uniform-over-digits plateau (ln 9) after ~250 steps; the post-LN
    BERT with it did not within 1,500.
    """
    import torch

    g = torch.Generator().manual_seed(10_000 + seed)
    d = model.config.hidden_size
    tables = torch.randn(3, 9, d, generator=g) * std
    bos = torch.randn(d, generator=g) * std
    r, c, b = (torch.tensor(x) for x in (sudoku.ROW, sudoku.COL, sudoku.BOX))
    pos = torch.cat([bos[None], tables[0][r] + tables[1][c] + tables[2][b]])
    table, first = _position_table(model)
    with torch.no_grad():
        table[first:first + SEQ_LEN].copy_(pos)


def new_model(spec: ModelSpec):
    import torch
    from transformers import BertForMaskedLM, RobertaPreLayerNormForMaskedLM

    torch.manual_seed(spec.seed)
    cls = BertForMaskedLM if spec.norm == "post" else RobertaPreLayerNormForMaskedLM
    model = cls(make_config(spec))
    model.set_attn_implementation("eager")
    grid_position_init(model, spec.seed, spec.init_std)
    return model


def build_optimizer(model, run: RunConfig):
    import torch

    decay = [p for n, p in model.named_parameters() if p.dim() >= 2]
    no_decay = [p for n, p in model.named_parameters() if p.dim() < 2]
    return torch.optim.AdamW([{"params": decay, "weight_decay": run.weight_decay},
                              {"params": no_decay, "weight_decay": 0.0}],
                             lr=run.peak_lr, betas=run.betas, eps=1e-8)


def loss_of(model, x, y):
    import torch

    logits = model(input_ids=torch.from_numpy(x)).logits
    yt = torch.from_numpy(y)
    return torch.nn.functional.cross_entropy(logits.reshape(-1, logits.shape[-1]), yt.reshape(-1),
                                             ignore_index=-100)


def evaluate(model, x: np.ndarray, y: np.ndarray, run: RunConfig) -> dict:
    """Held-out loss, cell accuracy (blanked cells, argmax over digits 1-9) and puzzle accuracy
    (every blanked cell right, one forward pass, no iterative filling)."""
    import torch

    model.eval()
    tot, n_cells, right, solved = 0.0, 0, 0, 0
    with torch.no_grad():
        for i in range(0, len(x), run.eval_batch):
            xb, yb = torch.from_numpy(x[i:i + run.eval_batch]), torch.from_numpy(y[i:i + run.eval_batch])
            logits = model(input_ids=xb).logits
            m = yb >= 0
            tot += float(torch.nn.functional.cross_entropy(logits[m], yb[m], reduction="sum"))
            pred = logits[..., 1:10].argmax(-1) + 1
            ok = (pred == yb) | ~m
            right += int(((pred == yb) & m).sum())
            n_cells += int(m.sum())
            solved += int(ok.all(-1).sum())
    model.train()
    return {"val_loss": tot / n_cells, "val_cell_acc": right / n_cells, "val_puzzle_acc": solved / len(x)}


# ---------------------------------------------------------------------------------------------- training
CSV_COLS = ("step", "lr", "train_loss", "val_loss", "val_cell_acc", "val_puzzle_acc", "elapsed_s")


def _write_csv(rows: list[dict], path: Path) -> None:
    pp._write_csv(rows, path, CSV_COLS)


@dataclass
class Ctx:
    out: Path
    curves: Path
    run: RunConfig
    data: dict
    threads: int
    log: object
    stop_after: int | None = None
    steps_done_this_run: int = 0


def _train_one(spec: ModelSpec, ctx: Ctx) -> dict:
    import torch

    run, log, data = ctx.run, ctx.log, ctx.data
    mdir = ctx.out / spec.name
    n_steps, warmup = run.steps, max(1, round(run.warmup_frac * run.steps))
    ckpts = checkpoint_steps(n_steps, run.n_between)
    vx = to_tokens(data["val_puzzle"][:run.n_eval])
    vy = labels_of(data["val_puzzle"][:run.n_eval], data["val_grid"][:run.n_eval])
    model = new_model(spec)
    model.train()
    opt = build_optimizer(model, run)
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

    def checkpoint(step: int) -> None:
        ev = evaluate(model, vx, vy, run)
        rows.append({"step": step, "lr": lr_at(step, n_steps, run.peak_lr, warmup, run.min_lr_frac) if step else 0.0,
                     **ev, "elapsed_s": round(elapsed, 2)})
        _save_checkpoint(model, mdir, step)
        _atomic_save_state({"model": model.state_dict(), "optimizer": opt.state_dict(),
                            "rng": torch.get_rng_state(), "step": step, "data_cursor": step,
                            "rows": rows, "acc": acc, "elapsed_s": elapsed}, state_path)
        _write_csv(rows, ctx.curves / f"{spec.name}.csv")
        log(f"[{spec.name}] checkpoint step {step}: held-out loss {ev['val_loss']:.4f} cell acc "
            f"{ev['val_cell_acc']:.4f} puzzle acc {ev['val_puzzle_acc']:.4f}")

    if step == 0 and not state_path.exists():
        checkpoint(0)
    t_last = time.time()
    while step < n_steps:
        t0 = time.time()
        lr = lr_at(step + 1, n_steps, run.peak_lr, warmup, run.min_lr_frac)
        for grp in opt.param_groups:
            grp["lr"] = lr
        x, y = batch_at(data, step, run, cache)
        loss = loss_of(model, x, y)
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
            t_last, acc = now, [0.0, 0]
        if step in ckpts:
            checkpoint(step)
        ctx.steps_done_this_run += 1
        if ctx.stop_after is not None and ctx.steps_done_this_run >= ctx.stop_after:
            raise StopBuild(f"stopped after {ctx.steps_done_this_run} steps (--stop-after)")

    evs = [r for r in rows if r.get("val_loss") is not None]
    summary = {
        "model": spec.name, "n_layers": spec.n_layers, "n_heads": spec.n_heads, "d_head": spec.d_head,
        "d_model": spec.d_model, "seed": spec.seed, "params": n_params, "steps": n_steps,
        "checkpoints": ckpts, "peak_lr": run.peak_lr, "warmup_steps": warmup,
        "s_per_step": round(elapsed / max(n_steps, 1), 4), "train_seconds": round(elapsed, 1),
        **{f"init_{k}": evs[0][k] for k in ("val_loss", "val_cell_acc", "val_puzzle_acc")},
        **{f"final_{k}": evs[-1][k] for k in ("val_loss", "val_cell_acc", "val_puzzle_acc")},
        "threads": ctx.threads, "attn_implementation": run.attn_implementation, "norm": spec.norm,
        "init": (f"{'BERT' if spec.norm == 'post' else 'RoBERTa-PreLayerNorm'} N(0, {spec.init_std}) after "
                 f"torch.manual_seed(seed); grid_position_init(seed, {spec.init_std})"),
    }
    _atomic_write(mdir / "DONE.json", json.dumps(summary, indent=2) + "\n")
    log(f"[{spec.name}] done: cell acc {summary['init_val_cell_acc']:.4f} -> {summary['final_val_cell_acc']:.4f}, "
        f"{summary['s_per_step']} s/step")
    return summary


# ---------------------------------------------------------------------------------------------- probe, reports
def write_probe(data: dict, run: RunConfig, path: Path):
    """The probe (METRICS.md §7): the last ``probe_seqs`` held-out puzzles, ``[BOS]`` at position 0.

    Disjoint from the ``n_eval`` held-out puzzles of the accuracy curves when ``n_val`` allows.
    """
    from lie_stats.extraction.probe import ProbeSet, save_probe

    puz = data["val_puzzle"][-run.probe_seqs:]
    probe = ProbeSet.from_tokens(
        to_tokens(puz), first_token="bos",
        tokenizer=f"pico_sudoku cells: [PAD]={PAD}, digits 1-9 = 1-9, [BLANK]={BLANK}, [BOS]={BOS} (vocab {VOCAB})",
        text_source=(f"pico_sudoku held-out puzzles (grid seed {run.grid_seed}, the last {run.probe_seqs} of "
                     f"{len(data['val_puzzle'])} held-out grids), generated by datasets/pico_sudoku/sudoku.py"))
    return save_probe(probe, path), probe


def collect_summaries(out: Path, specs) -> list[dict]:
    return [json.loads((out / s.name / "DONE.json").read_text()) for s in specs if (out / s.name / "DONE.json").exists()]


def write_reports(out: Path, curves: Path, specs, log) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import pandas as pd

    fig, axes = plt.subplots(1, 2, figsize=(12, 4.5))
    any_ = False
    for s in specs:
        f = curves / f"{s.name}.csv"
        if not f.exists():
            continue
        any_ = True
        df = pd.read_csv(f)
        tr, va = df.dropna(subset=["train_loss"]), df.dropna(subset=["val_loss"])
        (line,) = axes[0].plot(tr["step"], tr["train_loss"], lw=0.8, alpha=0.6)
        axes[0].plot(va["step"], va["val_loss"], "o-", ms=3, color=line.get_color(), label=s.name)
        axes[1].plot(va["step"], va["val_cell_acc"], "o-", ms=3, color=line.get_color(), label=f"{s.name} cell")
        axes[1].plot(va["step"], va["val_puzzle_acc"], "s--", ms=3, color=line.get_color(), label=f"{s.name} puzzle")
    if not any_:
        return
    axes[0].set_title("loss on blanked cells: train (line), held-out (dots)", fontsize=9)
    axes[1].set_title("held-out accuracy: cells (o), whole puzzles (s)", fontsize=9)
    axes[1].axhline(1 / 9, color="grey", ls=":", lw=0.8)
    for ax in axes:
        ax.set_xlabel("step")
        ax.legend(fontsize=7)
    fig.tight_layout()
    tmp = curves / f".curves.{os.getpid()}.png"
    fig.savefig(tmp, dpi=110)
    plt.close(fig)
    os.replace(tmp, curves / "curves.png")
    _atomic_write(curves / "summary.json", json.dumps(collect_summaries(out, specs), indent=2) + "\n")
    log("[report] curves and summary updated")


TABLE_START, TABLE_END = "<!-- results-table:start -->", "<!-- results-table:end -->"


def results_table(summaries: list[dict], cube_path: Path | None) -> str:
    """The card's results table: training figures from ``DONE.json``, sinks and labels from the cube."""
    from lie_stats.schema import LABEL_CODES

    cube = None
    if cube_path is not None and cube_path.exists():
        import xarray as xr

        cube = xr.open_dataset(cube_path)
    head = ("| run | seed | steps | s/step | train time | held-out cell acc (init -> final) | held-out puzzle acc "
            "(init -> final) | max sink_score (last) | heads with sink_argmax_fraction > 0.5 (last) | anchors / "
            "workers / mixed (last) |\n|---|---|---|---|---|---|---|---|---|---|\n")
    lines = []
    for s in summaries:
        sink = argmax = labels = "-"
        if cube is not None and s["model"] in cube["model"].values:
            last = cube.sel(model=s["model"]).dropna("step", how="all", subset=["sink_score"]).isel(step=-1)
            sink = f"{float(last['sink_score'].max()):.3f}"
            argmax = str(int((last["sink_argmax_fraction"] > 0.5).sum()))
            lab = last["head_label"].values
            labels = " / ".join(str(int((lab == LABEL_CODES[k]).sum())) for k in ("anchor", "worker", "mixed"))
        lines.append(
            f"| {s['model']} | {s['seed']} | {s['steps']} | {s['s_per_step']:.2f} | {s['train_seconds'] / 60:.0f} min | "
            f"{s['init_val_cell_acc']:.3f} -> {s['final_val_cell_acc']:.3f} | "
            f"{s['init_val_puzzle_acc']:.3f} -> {s['final_val_puzzle_acc']:.3f} | {sink} | {argmax} | {labels} |\n")
    return head + "".join(lines)


def write_results_table(out: Path, specs, cube_path: Path, card: Path, log) -> None:
    text = card.read_text()
    pre, rest = text.split(TABLE_START, 1)
    _, post = rest.split(TABLE_END, 1)
    table = results_table(collect_summaries(out, specs), cube_path)
    _atomic_write(card, pre + TABLE_START + "\n" + table + TABLE_END + post)
    log(f"[report] results table written to {card}")


def measure(spec: ModelSpec, run: RunConfig, n: int, log) -> float:
    import torch

    rng = np.random.default_rng(0)
    data = {"train_puzzle": rng.integers(0, 10, (256, 81)).astype(np.uint8),
            "train_grid": rng.integers(1, 10, (256, 81)).astype(np.uint8)}
    model = new_model(spec)
    opt = build_optimizer(model, run)
    times = []
    for i in range(n + 1):
        t0 = time.time()
        x, y = batch_at(data, i, run, {})
        loss = loss_of(model, x, y)
        opt.zero_grad()
        loss.backward()
        opt.step()
        if i:
            times.append(time.time() - t0)
    log(f"[measure] {spec.name}: median {np.median(times):.3f} s/step over {n} steps {[round(t, 3) for t in times]}")
    return float(np.median(times))


def parse_args(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--models", default=None, help="comma-separated run names (default: all)")
    ap.add_argument("--smoke", action="store_true", help="tiny config, a few steps")
    ap.add_argument("--variant", choices=("pre", "post"), default="pre",
                    help="the suite's pre-LN runs (default) or the post-LN variant's")
    ap.add_argument("--out", default=None, help="output directory (default: datasets/pico_sudoku/build)")
    ap.add_argument("--threads", type=int, default=1, help="torch intra-op threads (default: %(default)r)")
    ap.add_argument("--data", action="store_true", help="only generate the puzzles and the probe, then exit")
    ap.add_argument("--measure", type=int, default=0, metavar="N", help="only time N training steps, then exit")
    ap.add_argument("--report", action="store_true",
                    help="only rewrite curves.png, summary.json, logs/ and the card's results table (from the cube)")
    ap.add_argument("--stop-after", type=int, default=None, help="(tests) stop after this many steps")
    return ap.parse_args(argv)


def main(argv=None) -> int:
    import torch

    args = parse_args(argv)
    specs_all = SMOKE_SPECS if args.smoke else (POST_SPECS if args.variant == "post" else SPECS)
    run = SMOKE_RUN if args.smoke else (POST_RUN if args.variant == "post" else RunConfig())
    by_name = {s.name: s for s in specs_all}
    names = [n.strip() for n in args.models.split(",")] if args.models else list(by_name)
    bad = [n for n in names if n not in by_name]
    if bad:
        raise SystemExit(f"unknown run {bad[0]!r}; choose from {list(by_name)}")
    specs = [by_name[n] for n in dict.fromkeys(names)]
    default_out = args.out is None and not args.smoke
    out = Path(args.out).resolve() if args.out else (DEFAULT_OUT if not args.smoke else DEFAULT_OUT / "smoke")
    out.mkdir(parents=True, exist_ok=True)
    curves = (HERE / "curves" / ("post_ln" if args.variant == "post" else "")) if default_out else out / "curves"
    curves.mkdir(parents=True, exist_ok=True)
    import transformers

    transformers.utils.logging.disable_progress_bar()
    transformers.utils.logging.set_verbosity_error()
    torch.set_num_threads(args.threads)

    def log(msg: str) -> None:
        print(f"{time.strftime('%H:%M:%S')} {msg}", flush=True)

    try:
        if args.measure:
            measure(specs[0], run, args.measure, log)
            return 0
        if args.report:
            write_reports(out, curves, specs_all, log)
            if default_out and args.variant == "pre":
                write_results_table(out, specs_all, HERE / "pico_sudoku.nc", HERE / "README.md", log)
                (HERE / "logs").mkdir(exist_ok=True)
                for f in sorted(out.glob("*.log")):
                    shutil.copyfile(f, HERE / "logs" / f.name)
            return 0
        log(f"[build] out={out} threads={args.threads} runs={[s.name for s in specs]} torch {torch.__version__} "
            f"transformers {transformers.__version__} python {platform.python_version()}")
        data = prepare_data(out, run, log)
        probe_path, probe = write_probe(data, run, (HERE if default_out else out) / "probe.npz")
        meta = {"run": asdict(run), "threads": args.threads, "torch": torch.__version__,
                "transformers": transformers.__version__, "smoke": args.smoke,
                "data_file": data_path(out, run).name,
                "n_train": int(len(data["train_puzzle"])), "n_val": int(len(data["val_puzzle"])),
                "probe_sha256": probe.sha256, "specs": [asdict(s) for s in specs_all]}
        meta_name = "build_meta_post.json" if args.variant == "post" else "build_meta.json"
        _atomic_write(out / meta_name, json.dumps(meta, indent=2, default=str) + "\n")
        if default_out:
            shutil.copyfile(out / meta_name, curves / "build_meta.json")
        if args.data:
            log(f"[data] probe {probe_path} sha256 {probe.sha256}")
            return 0
        ctx = Ctx(out=out, curves=curves, run=run, data=data, threads=args.threads, log=log,
                  stop_after=args.stop_after)
        for spec in specs:
            pp.train_one(spec, ctx, _train_one)  # skipped when done, locked while training
        write_reports(out, curves, specs_all, log)
        log("[build] all requested runs finished")
        return 0
    except StopBuild as exc:
        log(f"[build] {exc}")
        return 3


if __name__ == "__main__":
    sys.exit(main())
