"""Tests of the pico_pythia build (datasets/pico_pythia/build.py) in its smoke mode.

The smoke mode trains the same code paths as the real build (tokenizer, Pythia init, AdamW with
warmup and cosine, checkpoints, resumable state, the post-training pass, the alias h4 = w16)
on tiny shapes and the committed sample text, with no download.
"""

from __future__ import annotations

import json
import math
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from ._builds import load_build, safetensors_bytes

ROOT = Path(__file__).resolve().parents[1]
DS = ROOT / "datasets" / "pico_pythia"
SAMPLE = ROOT / "tests" / "data" / "pico_corpus_sample.txt"


build = load_build("pico_pythia_build", DS / "build.py")
corpus = sys.modules["corpus"]


@pytest.fixture(scope="module")
def smoke_a(tmp_path_factory) -> Path:
    """One uninterrupted smoke build, through the CLI, in a fresh process."""
    out = tmp_path_factory.mktemp("pico") / "a"
    res = subprocess.run([sys.executable, str(DS / "build.py"), "--smoke", "--out", str(out), "--threads", "1"],
                         capture_output=True, text=True, timeout=900)
    assert res.returncode == 0, res.stdout[-2000:] + res.stderr[-2000:]
    return out


def safetensors_bytes(root: Path) -> dict[str, bytes]:
    return {str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*.safetensors"))
            if not p.relative_to(root).parts[0] == "h4"}


# ---------------------------------------------------------------------------------------------
# pure pieces
# ---------------------------------------------------------------------------------------------
def test_checkpoint_schedule_is_pythia_like():
    steps = build.checkpoint_steps(512, n_between=7)
    assert steps[:11] == [0, 1, 2, 4, 8, 16, 32, 64, 128, 256, 293]
    assert steps[-1] == 512 and len(steps) == 17
    gaps = np.diff(steps[9:])
    assert gaps.max() - gaps.min() <= 1  # evenly spaced after the last power of two
    long = build.checkpoint_steps(3000, n_between=7)
    assert 512 in long and 1024 not in long and long[-1] == 3000


def test_lr_schedule_warmup_then_cosine_to_ten_percent():
    n, peak, w = 100, 2e-3, 10
    lrs = [build.lr_at(u, n, peak, w, 0.1) for u in range(1, n + 1)]
    assert lrs[:w] == pytest.approx([peak * (u / w) for u in range(1, w + 1)])
    assert max(lrs) == pytest.approx(peak)
    assert lrs[-1] == pytest.approx(0.1 * peak)
    assert all(a >= b for a, b in zip(lrs[w - 1:], lrs[w:]))


def test_unigram_cross_entropy_by_hand():
    train = np.array([0, 0, 1], dtype=np.uint16)
    arr = np.array([[2, 0, 1]])  # targets are the tokens after the first: 0, 1
    # add-one counts [3, 2, 1] / 6: -(log(1/2) + log(1/3)) / 2
    assert build.unigram_ce(train, arr, 3) == pytest.approx(-(math.log(0.5) + math.log(1 / 3)) / 2)


def test_batches_are_a_pure_function_of_step_and_cover_each_window_once_per_epoch():
    run = build.SMOKE_RUN
    stream = np.arange(run.seq_len * 10, dtype=np.uint16)
    seen = [build.batch_at(stream, s, run, {})[:, 0].tolist() for s in range(5)]  # 20 windows = 2 epochs
    firsts = [x // run.seq_len for b in seen for x in b]
    assert sorted(firsts[:10]) == list(range(10)) and sorted(firsts[10:]) == list(range(10))
    assert firsts[:10] != firsts[10:]  # reshuffled per epoch
    again = build.batch_at(stream, 3, run, {"junk": None})
    assert again[:, 0].tolist() == seen[3]


def test_validation_chunks_are_interleaved_not_the_tail():
    doc = "\n\n".join(f"para {i}" for i in range(200))
    train, val = corpus.build_splits([("d", doc)], chunk_chars=1, val_every=20)
    idx = [int(v.split()[1]) for v in val]
    assert idx == list(range(10, 200, 20))
    assert len(train) == 190 and not set(train) & set(val)


def test_strip_gutenberg_and_sample_sections():
    text = "Title\n*** START OF THIS PROJECT GUTENBERG EBOOK HAMLET ***\nTo be.\n*** END OF THIS PROJECT GUTENBERG EBOOK HAMLET ***\nLicence"
    assert corpus.strip_gutenberg(text) == "To be."
    by = corpus.read_sample(SAMPLE)
    assert {k: len(v) for k, v in by.items()} == {"austen": 2, "shakespeare": 2, "web": 2}
    assert SAMPLE.stat().st_size < 60_000


def test_pythia_small_init_standard_deviations():
    import torch
    from transformers import GPTNeoXForCausalLM

    spec = build.ModelSpec("t", n_layers=4, n_heads=4, d_head=32, seed=3)
    run = build.RunConfig(vocab_size=2048, seq_len=32)
    model = GPTNeoXForCausalLM(build.make_config(spec, run, 2048))
    info = build.pythia_small_init(model, spec, spec.seed)
    d = 128
    assert info["std_small"] == pytest.approx(math.sqrt(2 / (5 * d)))
    assert info["std_out"] == pytest.approx(2 / (4 * math.sqrt(d)))
    p = dict(model.named_parameters())
    for name in ("gpt_neox.layers.1.attention.query_key_value.weight", "gpt_neox.embed_in.weight", "embed_out.weight",
                 "gpt_neox.layers.2.mlp.dense_h_to_4h.weight"):
        if name in p:
            assert float(p[name].detach().std()) == pytest.approx(info["std_small"], rel=0.05), name
    for name in ("gpt_neox.layers.0.attention.dense.weight", "gpt_neox.layers.3.mlp.dense_4h_to_h.weight"):
        assert float(p[name].detach().std()) == pytest.approx(info["std_out"], rel=0.05), name
    assert torch.all(p["gpt_neox.layers.0.attention.query_key_value.bias"] == 0)
    assert torch.all(p["gpt_neox.layers.0.input_layernorm.weight"] == 1)
    cfg = model.config
    assert cfg.use_parallel_residual and not cfg.tie_word_embeddings
    assert cfg.rope_parameters["partial_rotary_factor"] == 0.25
    # same seed, same weights; another seed, other weights
    m2 = GPTNeoXForCausalLM(build.make_config(spec, run, 2048))
    build.pythia_small_init(m2, spec, 3)
    assert torch.equal(m2.gpt_neox.embed_in.weight, model.gpt_neox.embed_in.weight)
    build.pythia_small_init(m2, spec, 4)
    assert not torch.equal(m2.gpt_neox.embed_in.weight, model.gpt_neox.embed_in.weight)


# ---------------------------------------------------------------------------------------------
# smoke build end to end
# ---------------------------------------------------------------------------------------------
def test_smoke_build_layout_and_learning(smoke_a):
    import torch
    from safetensors.torch import load_file

    run = build.SMOKE_RUN
    for spec in build.SMOKE_SPECS:
        mdir = smoke_a / spec.name
        if spec.alias_of:
            assert mdir.is_symlink() and mdir.resolve() == (smoke_a / spec.alias_of).resolve()
            continue
        n = run.finetune_steps if spec.is_finetune else run.pretrain_steps
        steps = sorted(int(p.name.split("_")[1]) for p in mdir.glob("step_*"))
        assert steps == build.checkpoint_steps(n, run.n_between)
        cfg = json.loads((mdir / f"step_{n}" / "config.json").read_text())
        assert (cfg["num_hidden_layers"], cfg["num_attention_heads"], cfg["hidden_size"]) == (
            spec.n_layers, spec.n_heads, spec.d_model)
        done = json.loads((mdir / "DONE.json").read_text())
        assert done["steps"] == n and done["threads"] == 1 and done["attn_implementation"] == "eager"
        assert done["final_val_loss"] < done["init_val_loss"]  # it learned something, even in 12 steps
        curve = (smoke_a / "curves" / f"{spec.name}.csv").read_text().splitlines()
        assert curve[0] == "step,lr,train_loss,val_loss,val_loss_pretrain,elapsed_s"
        assert len(curve) > len(steps)
    # the post-training run starts from its parent's final weights exactly
    a = load_file(smoke_a / "p96_s0" / f"step_{run.pretrain_steps}" / "model.safetensors")
    b = load_file(smoke_a / "p96_s0_ft" / "step_0" / "model.safetensors")
    assert a.keys() == b.keys() and all(torch.equal(a[k], b[k]) for k in a)
    c = load_file(smoke_a / "p96_s0_ft" / f"step_{run.finetune_steps}" / "model.safetensors")
    assert not all(torch.equal(a[k], c[k]) for k in a)
    # the two seeds differ
    d = load_file(smoke_a / "p96_s1" / "step_0" / "model.safetensors")
    e = load_file(smoke_a / "p96_s0" / "step_0" / "model.safetensors")
    assert not torch.equal(d["gpt_neox.embed_in.weight"], e["gpt_neox.embed_in.weight"])
    assert (smoke_a / "curves" / "loss_curves.png").stat().st_size > 1000
    # --report rebuilds the summary from the finished models (alias included) without training
    assert build.main(["--smoke", "--out", str(smoke_a), "--report"]) == 0
    summary = json.loads((smoke_a / "curves" / "summary.json").read_text())
    assert [s["model"] for s in summary] == [s.name for s in build.SMOKE_SPECS]
    table = build.models_table(summary)
    assert all(f"| {s.name} |" in table for s in build.SMOKE_SPECS) and "= w16" in table


def test_interrupted_then_resumed_build_is_bit_identical(smoke_a, tmp_path):
    out = tmp_path / "b"
    models = "p96_s0,p96_s1,p96_s0_ft"
    # stop in the middle of the second model (12 steps per pretraining model in smoke mode)
    assert build.main(["--smoke", "--out", str(out), "--models", models, "--stop-after", "17"]) == 3
    assert (out / "p96_s0" / "DONE.json").exists()
    assert (out / "p96_s1" / "state.pt").exists() and not (out / "p96_s1" / "DONE.json").exists()
    assert len(list(out.glob("tokens_*.npz"))) == 1  # the rerun reads the cached token streams
    assert build.main(["--smoke", "--out", str(out), "--models", models]) == 0
    ref = {k: v for k, v in safetensors_bytes(smoke_a).items() if k.split("/")[0] in models.split(",")}
    got = safetensors_bytes(out)
    run = build.SMOKE_RUN
    assert len(got) == 2 * len(build.checkpoint_steps(run.pretrain_steps, run.n_between)) + len(
        build.checkpoint_steps(run.finetune_steps, run.n_between))
    assert ref.keys() == got.keys()
    assert [k for k in ref if ref[k] != got[k]] == []
    # a rerun of a finished model trains nothing and changes nothing
    assert build.main(["--smoke", "--out", str(out), "--models", "p96_s0"]) == 0
    assert safetensors_bytes(out) == got


def test_unknown_model_name_suggests():
    with pytest.raises(SystemExit, match="Did you mean 'p96_s0_ft'"):
        build.main(["--smoke", "--models", "p96_s0_fx", "--out", "/nonexistent-not-used"])


def test_committed_tokenizer_matches_build_record():
    from tokenizers import Tokenizer

    tok_path, meta_path = DS / "tokenizer.json", DS / "curves" / "build_meta.json"
    if not tok_path.exists():
        pytest.skip("the real build has not produced tokenizer.json yet: python datasets/pico_pythia/build.py")
    tok = Tokenizer.from_file(str(tok_path))
    assert tok.get_vocab_size() == 4096
    text = "It is a truth universally acknowledged, that a single man"
    ids = tok.encode(text).ids
    assert tok.decode(ids) == text and len(ids) < len(text.split()) * 3
    meta = json.loads(meta_path.read_text())
    assert meta["data"]["tokenizer_sha256"] == corpus.sha256_file(tok_path)
    assert meta["threads"] == 1 and meta["run"]["attn_implementation"] == "eager"


# ---------------------------------------------------------------------------------------------
# the converged-base pair: a fine-tune and its continuation twin
# ---------------------------------------------------------------------------------------------
def _replay(base_dir: Path, stream, first_batch: int, steps: int, peak: float, run):
    """A second phase trained by hand: the base's last weights, a fresh AdamW, the build's
    schedule, the data order's batches ``first_batch``, ``first_batch + 1``, ..."""
    import torch
    from transformers import GPTNeoXForCausalLM

    model = GPTNeoXForCausalLM.from_pretrained(base_dir, attn_implementation="eager")
    model.train()
    opt = build.build_optimizer(model, run, peak)
    warmup = max(1, round(run.finetune_warmup_frac * steps))
    cache: dict = {}
    for k in range(steps):
        for grp in opt.param_groups:
            grp["lr"] = build.lr_at(k + 1, steps, peak, warmup, run.min_lr_frac)
        x = build.batch_at(stream, first_batch + k, run, cache)
        loss = model(input_ids=x, labels=x).loss
        opt.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), run.grad_clip)
        opt.step()
    return model


def _same_weights(model, saved: Path) -> bool:
    """``model`` saved as the build saves a checkpoint gives the bytes of ``saved``."""
    import tempfile

    with tempfile.TemporaryDirectory() as tmp:
        model.save_pretrained(tmp)
        return (Path(tmp) / "model.safetensors").read_bytes() == saved.read_bytes()


def test_converged_pair_fine_tune_below_the_final_rate_and_continuation_resumes_the_data_order(tmp_path):
    import torch
    from safetensors.torch import load_file

    out, run = tmp_path / "conv", build.SMOKE_RUN
    names = ["c48_s0", "c48_s0_ft", "c48_s0_cont"]
    # not in the default build: only when named
    assert not {s.name for s in build.SPECS} & {s.name for s in build.CONVERGED_SPECS}
    assert build.main(["--smoke", "--out", str(out), "--models", ",".join(names)]) == 0
    spec = {s.name: s for s in build.SMOKE_CONVERGED_SPECS}
    done = {n: json.loads((out / n / "DONE.json").read_text()) for n in names}
    base_steps, tune_steps = spec["c48_s0"].steps, spec["c48_s0_ft"].steps
    assert done["c48_s0"]["steps"] == base_steps != run.pretrain_steps
    assert done["c48_s0_cont"]["data_order_from_batch"] == base_steps
    assert "data_order_from_batch" not in done["c48_s0_ft"]
    assert done["c48_s0_ft"]["eval_text"].startswith("World English Bible")
    assert done["c48_s0_cont"]["eval_text"].startswith("Austen")
    # every learning rate of the second phases lies below the base's last one
    import csv

    def lrs(name):
        with open(out / "curves" / f"{name}.csv") as f:
            return [float(r["lr"]) for r in csv.DictReader(f) if float(r["step"]) > 0]
    base_final = lrs("c48_s0")[-1]
    assert base_final == pytest.approx(build.SMOKE_RUN.peak_lr * run.min_lr_frac)
    for name in ("c48_s0_ft", "c48_s0_cont"):
        assert done[name]["peak_lr"] == build.CONVERGED_TUNE_LR
        assert 0 < max(lrs(name)) < base_final
    # both twins start bit-identical to the base's last checkpoint
    last = load_file(out / "c48_s0" / f"step_{base_steps}" / "model.safetensors")
    for name in ("c48_s0_ft", "c48_s0_cont"):
        first = load_file(out / name / "step_0" / "model.safetensors")
        assert all(torch.equal(last[k], first[k]) for k in last)
    # the continuation is the base's pretraining resumed: replayed by hand from the data order's
    # batch base_steps on, it gives its last weights exactly (from batch 0 it does not)
    data, _ = build.prepare_data(out, run, smoke=True, log=lambda m: None)
    got = out / "c48_s0_cont" / f"step_{tune_steps}" / "model.safetensors"
    threads = torch.get_num_threads()
    torch.set_num_threads(1)  # the build's thread count: the same bits
    try:
        base_dir = out / "c48_s0" / f"step_{base_steps}"
        resumed = _replay(base_dir, data.pre_train, base_steps, tune_steps, build.CONVERGED_TUNE_LR, run)
        restarted = _replay(base_dir, data.pre_train, 0, tune_steps, build.CONVERGED_TUNE_LR, run)
    finally:
        torch.set_num_threads(threads)
    assert _same_weights(resumed, got)
    assert not _same_weights(restarted, got)
