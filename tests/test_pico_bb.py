"""The Bigram-Backcopy trainer (datasets/pico_bb/build.py) and its committed pilot.

- the data generator follows the paper's ``bbm.gen_seq`` rules (BBM/data.py of
  GuoTianYu2000/Active-Dormant-Attention): ``<s_0>`` first, no trigger at position 1, after a
  trigger the token before it, triggers the 3 most frequent tokens;
- the Hugging Face model is the paper's ``Transformer`` (BBM/model.py): its logits equal a port of
  that forward pass (pre-norm, bias-free maps, ReLU MLP, learned positions) on the same weights,
  and its init has the paper's PyTorch-default scales;
- a run stopped by its CPU budget and rerun, or declared shorter and extended, gives the numbers of
  an uninterrupted run (2 layers x 2 heads, dim 32);
- the pre-registered go / no-go rule (benchmarks/emergence_bb.md) recomputed from the committed
  pilot curves gives the verdict written there.
"""

from __future__ import annotations

import importlib.util
import json
import math
import re
import sys
from pathlib import Path

import numpy as np
import pytest

ROOT = Path(__file__).resolve().parents[1]
PICO_BB = ROOT / "datasets" / "pico_bb"


def _load():
    name = "pico_bb_build"
    if name in sys.modules:
        return sys.modules[name]
    spec = importlib.util.spec_from_file_location(name, PICO_BB / "build.py")
    mod = importlib.util.module_from_spec(spec)
    sys.modules[name] = mod
    spec.loader.exec_module(mod)
    return mod


B = _load()


def test_the_generator_follows_the_papers_bbm_rules():
    bb = B.BB(3)
    assert bb.V == 67 and bb.bos == 65
    assert sorted(bb.itos[i] for i in bb.triggers) == [" ", "e", "t"]
    s = bb.batch(np.random.default_rng(0), 64, 256)
    assert s.shape == (64, 257)
    assert (s[:, 0] == bb.bos).all()
    assert not bb.is_trigger[s[:, 1]].any()
    assert not (s[:, 1:] == bb.bos).any() and not (s == 66).any()  # no <s> after 0, no delimiter (p = 0)
    trig = bb.is_trigger[s[:, 1:-1]]
    # after a trigger at t, the token at t + 1 is the one at t - 1
    assert (s[:, 2:][trig] == s[:, :-2][trig]).all()
    # elsewhere the bigram: every transition has positive probability, and some are not copies
    nt = ~trig
    assert (bb.cond[s[:, 1:-1][nt], s[:, 2:][nt]] > 0).all()
    assert (s[:, 2:][nt] != s[:, :-2][nt]).mean() > 0.5
    # a function of the generator's state: the same seed, the same batch
    assert (bb.batch(np.random.default_rng(0), 64, 256) == s).all()


def _paper_forward(model, tok, dim, n_heads):
    """BBM/model.py Transformer.forward (pre_norm=True), reading the GPT-2 weights."""
    import torch
    import torch.nn.functional as F

    tr = model.transformer
    n = tok.shape[1]
    hd = dim // n_heads
    h = tr.wte.weight[tok] + tr.wpe.weight[:n][None]
    mask = torch.triu(torch.full((n, n), float("-inf")), 1)
    for blk in tr.h:
        x = F.layer_norm(h, (dim,), blk.ln_1.weight, blk.ln_1.bias, 1e-5)
        w = blk.attn.c_attn.weight
        q, k, v = (x @ w[:, i * dim:(i + 1) * dim] for i in range(3))
        q, k, v = (z.view(z.shape[0], n, n_heads, hd).transpose(1, 2) for z in (q, k, v))
        a = F.softmax(q @ k.transpose(2, 3) / math.sqrt(hd) + mask, -1)
        h = h + (a @ v).transpose(1, 2).reshape(tok.shape[0], n, dim) @ blk.attn.c_proj.weight
        y = F.layer_norm(h, (dim,), blk.ln_2.weight, blk.ln_2.bias, 1e-5)
        h = h + F.relu(y @ blk.mlp.c_fc.weight) @ blk.mlp.c_proj.weight
    h = F.layer_norm(h, (dim,), tr.ln_f.weight, tr.ln_f.bias, 1e-5)
    return h @ model.lm_head.weight.T


def test_the_model_is_the_papers_transformer_with_its_init():
    import torch

    cfg = B.Config(seed=3, n_layers=2, n_heads=4, dim=64)
    bb = B.BB(3)
    m = B.make_model(cfg, bb).eval()
    tok = torch.from_numpy(bb.batch(np.random.default_rng(1), 3, 256)[:, :-1])
    with torch.no_grad():
        ours = m(input_ids=tok).logits
        paper = _paper_forward(m, tok, 64, 4)
    assert float((ours - paper).abs().max()) < 1e-4
    frozen = sorted(n for n, p in m.named_parameters() if not p.requires_grad)
    assert frozen and all(n.endswith(".bias") and (".attn.c_" in n or ".mlp.c_" in n) for n in frozen)
    assert all(float(m.get_parameter(n).abs().max()) == 0.0 for n in frozen)
    with torch.no_grad():
        assert abs(float(m.transformer.wte.weight.std()) - 1.0) < 0.05  # nn.Embedding: N(0, 1)
        assert float(m.transformer.h[0].mlp.c_proj.weight.abs().max()) <= 1 / math.sqrt(256)  # U(+-1/sqrt(4 dim))
        assert float(m.transformer.h[0].attn.c_attn.weight.abs().max()) > 0.9 / math.sqrt(64)
    # a bias-free model cannot be changed by a step on a frozen bias: AdamW never sees them
    params = [p for p in m.parameters() if p.requires_grad]
    assert len(params) == len(list(m.parameters())) - len(frozen)


TINY = dict(n_layers=2, n_heads=2, dim=32, probe_seqs=4, eval_seqs=4, batch_size=4)


def _rows(st):
    return {r["step"]: {k: v for k, v in r.items() if k not in ("cpu_s", "s_per_step", "train_loss")}
            for r in st["rows"]}


def test_a_stopped_or_extended_run_equals_an_uninterrupted_one(tmp_path):
    full = B.train(B.Config(seed=5, steps=8, **TINY), out=tmp_path / "a", state_root=tmp_path / "sa", log=lambda m: None)
    # stopped by its CPU budget after the first step, then rerun without one
    stopped = B.train(B.Config(seed=5, steps=8, **TINY), out=tmp_path / "b", state_root=tmp_path / "sb",
                      cpu_budget=1e-9, log=lambda m: None)
    assert stopped.get("stopped") == "CPU budget" and stopped["step"] < 8
    resumed = B.train(B.Config(seed=5, steps=8, **TINY), out=tmp_path / "b", state_root=tmp_path / "sb", log=lambda m: None)
    # declared 4 steps, then extended to 8
    B.train(B.Config(seed=5, steps=4, **TINY), out=tmp_path / "c", state_root=tmp_path / "sc", log=lambda m: None)
    with pytest.raises(SystemExit, match="--extend"):
        B.train(B.Config(seed=5, steps=8, **TINY), out=tmp_path / "c", state_root=tmp_path / "sc", log=lambda m: None)
    extended = B.train(B.Config(seed=5, steps=8, **TINY), out=tmp_path / "c", state_root=tmp_path / "sc",
                       extend=True, log=lambda m: None)
    want = _rows(full)
    assert sorted(want) == B.measure_steps(8) == [0, 1, 2, 4, 8]
    for got in (_rows(resumed), _rows(extended)):
        assert {s: got[s] for s in want} == want
    for got in (resumed, extended):
        heads = {h["step"]: h for h in got["heads"]}
        assert all(heads[h["step"]] == h for h in full["heads"])
    assert extended["meta"]["extended_from"] == [4]
    # the curves on disk are the state's
    rec = json.loads((tmp_path / "c" / "bb_l2h2d32_s5.json").read_text())
    assert [r["step"] for r in rec["rows"]] == [0, 1, 2, 4, 8] and rec["config"]["steps"] == 8
    # another config in the same state folder is refused, not overwritten
    with pytest.raises(SystemExit, match="another config"):
        B.train(B.Config(seed=5, steps=8, **{**TINY, "batch_size": 2}), out=tmp_path / "c", state_root=tmp_path / "sc",
                log=lambda m: None)


def _go(rows_by_step: dict, last: int) -> bool:
    """The pre-registered rule: >= 8 heads with sink_score >= 0.5 and the max 0.2 above step 0's."""
    r0, rl = rows_by_step[0], rows_by_step[last]
    return rl["heads_sink_ge_half"] >= 8 and rl["max_sink"] >= r0["max_sink"] + 0.2


def test_the_pilot_verdict_is_the_rule_applied_to_its_committed_curves():
    rec = json.loads((PICO_BB / "curves" / "bb_l6h8d256_s100.json").read_text())
    assert rec["config"]["seed"] == 100 and (rec["config"]["n_layers"], rec["config"]["n_heads"]) == (6, 8)
    rows = {r["step"]: r for r in rec["rows"]}
    heads = {h["step"]: h for h in rec["measurements"]}
    # the rows' summaries are the per-head values they summarize
    for step, r in rows.items():
        s = np.asarray(heads[step]["sink_score"])
        assert s.shape == (6, 8)
        assert r["max_sink"] == pytest.approx(s.max(), abs=2e-6)
        assert r["heads_sink_ge_half"] == int((s >= 0.5).sum())
    text = (ROOT / "benchmarks" / "emergence_bb.md").read_text()
    m = re.search(r"\*\*Pilot verdict \(step (\d+)\): (GO|NO-GO)\*\*", text)
    assert m, "benchmarks/emergence_bb.md states the pilot's verdict"
    last = int(m.group(1))
    assert last in rows and last == 500  # the pilot's declared step budget
    assert _go(rows, last) == (m.group(2) == "GO")
