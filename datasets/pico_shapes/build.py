"""Build the pico_shapes suite: Llama-style models whose d_head, n_heads and d_model vary independently.

Usage::

    python datasets/pico_shapes/build.py [--models a,b] [--smoke] [--out DIR] [--threads 1] [--measure]

The corpus, tokenizer, data order, held-out evaluation, optimizer, learning-rate schedule,
checkpointing, resumable state and reports are pico_pythia's (``datasets/pico_pythia/build.py``,
imported, not copied); only the architecture differs: ``LlamaForCausalLM`` with an explicit
``head_dim``, so that d_model is not n_heads x d_head. See README.md.
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
from dataclasses import asdict, dataclass, replace
from pathlib import Path

HERE = Path(__file__).resolve().parent
PICO = HERE.parent / "pico_pythia"


sys.path.insert(0, str(HERE.parent))
from _build_loader import load_pico_build  # noqa: E402

pp = load_pico_build()

DEFAULT_OUT = HERE / "build"
#: The corpus downloads of pico_pythia's build, reused when present (same sources, same hashes).
PICO_CORPUS = PICO / "build" / "corpus"


@dataclass(frozen=True)
class ShapeSpec:
    """One model: d_model is set on its own, not n_heads x d_head."""

    name: str
    n_layers: int = 4
    n_heads: int = 4
    d_head: int = 16
    d_model: int = 64
    seed: int = 0
    parent: str | None = None  # never set here (no fine-tunes); read by pico_pythia's trainer
    alias_of: str | None = None
    steps: int | None = None  # pico_pythia's trainer: None takes the run's pretrain_steps
    peak_lr: float | None = None  # and None the run's peak_lr

    @property
    def is_finetune(self) -> bool:
        return False

    @property
    def continues_pretraining(self) -> bool:
        return False

    @property
    def d_ff(self) -> int:
        return 3 * self.d_model


#: The design: (d_head, n_heads, d_model) cells, a fraction of {16,32,64,128} x {4,8} x {64,128,256}
#: chosen so that log2 d_head, log2 n_heads, log2 d_model and log2(d_head/d_model) are far from
#: collinear (README.md, "Design").
CELLS: list[tuple[int, int, int]] = [
    (16, 4, 64), (32, 4, 64), (32, 4, 128), (32, 8, 64), (32, 8, 256), (64, 8, 64), (128, 4, 256),
]
SEEDS = (0, 1)


def cell_name(d_head: int, n_heads: int, d_model: int, seed: int) -> str:
    return f"dh{d_head}_h{n_heads}_d{d_model}_s{seed}"


# Build order: seed 0 of every cell, then seed 1 (a stopped build has every cell once first).
SPECS: list[ShapeSpec] = [ShapeSpec(cell_name(dh, h, d, s), 4, h, dh, d, seed=s)
                          for s in SEEDS for (dh, h, d) in CELLS]
RUN = pp.RunConfig(pretrain_steps=256, n_between=3, max_pow2=64, ckpt_base=4)

SMOKE_SPECS: list[ShapeSpec] = [ShapeSpec("dh16_h2_d16_s0", 1, 2, 16, 16, seed=0),
                                ShapeSpec("dh8_h4_d16_s1", 2, 4, 8, 16, seed=1)]
SMOKE_RUN = replace(pp.SMOKE_RUN, max_pow2=4, n_between=2, ckpt_base=4)

#: Llama's block outputs, given the small init's output std (as GPT-NeoX's attention.dense, mlp.dense_4h_to_h).
LLAMA_OUTPUTS = ("self_attn.o_proj.weight", "mlp.down_proj.weight")


def make_config(spec: ShapeSpec, run, vocab: int):
    from transformers import LlamaConfig

    cfg = LlamaConfig(
        vocab_size=vocab, hidden_size=spec.d_model, num_hidden_layers=spec.n_layers,
        num_attention_heads=spec.n_heads, num_key_value_heads=spec.n_heads, head_dim=spec.d_head,
        intermediate_size=spec.d_ff, hidden_act="silu", max_position_embeddings=run.seq_len,
        rope_theta=10000.0, rms_norm_eps=1e-5, tie_word_embeddings=False, attention_bias=False,
        mlp_bias=False, attention_dropout=0.0, bos_token_id=0, eos_token_id=0, pad_token_id=None,
    )
    cfg._attn_implementation = run.attn_implementation
    return cfg


def new_llama(spec: ShapeSpec, run, vocab: int):
    """A fresh Llama of ``spec`` with pico_pythia's small init (o_proj, down_proj as block outputs)."""
    from transformers import LlamaForCausalLM

    model = LlamaForCausalLM(make_config(spec, run, vocab))
    return model, pp.pythia_small_init(model, spec, spec.seed, outputs=LLAMA_OUTPUTS)


def design_matrix(specs=None) -> dict:
    """log2 d_head, log2 n_heads, log2 d_model, log2(d_head/d_model) of the cells: correlations, condition."""
    import numpy as np

    cells = sorted({(s.d_head, s.n_heads, s.d_model) for s in (specs or SPECS)})
    if len(cells) < 4:  # too few cells for correlations (the smoke build)
        return {"cells": cells}
    X = np.log2(np.array(cells, dtype=float))
    M = np.column_stack([X, X[:, 0] - X[:, 2]])
    Z = (X - X.mean(0)) / X.std(0)
    names = ["log2_d_head", "log2_n_heads", "log2_d_model", "log2_d_head_over_d_model"]
    return {"cells": cells, "predictors": names,
            "correlation": np.corrcoef(M.T).round(3).tolist(),
            "condition_number_standardized": round(float(np.linalg.cond(Z)), 3),
            "condition_number_with_intercept": round(float(np.linalg.cond(np.column_stack([np.ones(len(X)), X]))), 3)}


def parse_args(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--models", default=None, help="comma-separated model names, in the order given (default: all)")
    ap.add_argument("--smoke", action="store_true", help="tiny configs, a few steps, the committed sample text")
    ap.add_argument("--out", default=None, help="output directory (default: datasets/pico_shapes/build)")
    ap.add_argument("--threads", type=int, default=1, help="torch intra-op threads (default: %(default)r)")
    ap.add_argument("--measure", action="store_true", help="only measure seconds per step and exit")
    ap.add_argument("--design", action="store_true", help="only print the design's correlations and exit")
    ap.add_argument("--report", action="store_true",
                    help="only rewrite the curves PNG, summary.json and the card's table from finished models")
    ap.add_argument("--stop-after", type=int, default=None,
                    help="(tests) stop after this many optimizer steps, as if interrupted")
    return ap.parse_args(argv)


def main(argv=None) -> int:
    import torch

    args = parse_args(argv)
    specs_all = SMOKE_SPECS if args.smoke else SPECS
    run = SMOKE_RUN if args.smoke else RUN
    if args.design:
        print(json.dumps(design_matrix(specs_all)))
        return 0
    by_name = {s.name: s for s in specs_all}
    if args.models:
        names = [n.strip() for n in args.models.split(",") if n.strip()]
        bad = [n for n in names if n not in by_name]
        if bad:
            raise SystemExit(f"unknown model {bad[0]!r}; choose from {list(by_name)}")
        specs = [by_name[n] for n in dict.fromkeys(names)]
    else:
        specs = list(specs_all)
    default_out = args.out is None and not args.smoke
    out = Path(args.out).resolve() if args.out else (DEFAULT_OUT if not args.smoke else DEFAULT_OUT / "smoke")
    out.mkdir(parents=True, exist_ok=True)
    curves = HERE / "curves" if default_out else out / "curves"
    curves.mkdir(parents=True, exist_ok=True)
    card = HERE / "README.md" if default_out else None

    import transformers

    transformers.utils.logging.disable_progress_bar()
    prev_threads = torch.get_num_threads()
    torch.set_num_threads(args.threads)

    def log(msg: str) -> None:
        print(f"{time.strftime('%H:%M:%S')} {msg}", flush=True)

    try:
        if args.measure:
            log(json.dumps(pp.measure(specs, run, run.vocab_size, 3, log, new_model=new_llama)))
            return 0
        if args.report:
            pp.write_reports(pp.collect_summaries(out, specs_all), curves, card, log)
            if default_out:
                (HERE / "logs").mkdir(exist_ok=True)
                for f in sorted(out.glob("*.log")):
                    shutil.copyfile(f, HERE / "logs" / f.name)
            return 0
        log(f"[build] out={out} threads={args.threads} models={[s.name for s in specs]} "
            f"torch {torch.__version__} python {platform.python_version()}")
        if not args.smoke and PICO_CORPUS.is_dir() and not (out / "corpus").exists():
            shutil.copytree(PICO_CORPUS, out / "corpus")  # the same downloads (their sha256 are checked)
            log(f"[data] corpus downloads copied from {PICO_CORPUS}")
        if not args.smoke and not (out / "tokenizer.json").exists():
            # pico_pythia's tokenizer: prepare_data retrains it and stops if the two differ
            shutil.copyfile(PICO / "tokenizer.json", out / "tokenizer.json")
        data, _ = pp.prepare_data(out, run, smoke=args.smoke, log=log)
        vocab = data.info["tokenizer_vocab"]
        if default_out:
            shutil.copyfile(out / "tokenizer.json", HERE / "tokenizer.json")
        meta = {"run": asdict(run), "data": data.info, "threads": args.threads, "torch": torch.__version__,
                "transformers": transformers.__version__, "smoke": args.smoke, "architecture": "llama",
                "specs": [{**asdict(s), "d_ff": s.d_ff} for s in specs_all], "design": design_matrix(specs_all)}
        (out / "build_meta.json").write_text(json.dumps(meta, indent=2, default=str) + "\n")
        if default_out:
            shutil.copyfile(out / "build_meta.json", curves / "build_meta.json")
        ctx = pp.Ctx(out=out, curves=curves, run=run, data=data, vocab=vocab, threads=args.threads, log=log,
                     stop_after=args.stop_after, new_model=new_llama)
        for spec in specs:
            if pp.train_one(spec, ctx) is not None:
                pp.write_reports(pp.collect_summaries(out, specs_all), curves, card, log)
        pp.write_reports(pp.collect_summaries(out, specs_all), curves, card, log)
        log("[build] all requested models finished")
        return 0
    except pp.StopBuild as exc:
        log(f"[build] {exc}")
        return 3
    finally:
        torch.set_num_threads(prev_threads)


if __name__ == "__main__":
    sys.exit(main())
