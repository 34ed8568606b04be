"""GPT-NeoX (Pythia) adapter: attention reproduced, the fused QKV layout, rotary configs."""

from __future__ import annotations

import json

import torch
from hypothesis import given, settings, strategies as st

from lie_stats.extraction.architectures import adapter_for
from lie_stats.extraction.sources import open_source

from ._reproduce import TOL, recompute, reproduction_tests

CASES = [("gpt_neox", {}), ("gpt_neox", {"rotary_pct": 0.5, "head": False, "n_heads": 2})]


test_attention_reproduced_from_canonical_weights, test_fold_ln_reproduces_attention_from_normalized_residual = (
    reproduction_tests(CASES))


# ------------------------------------------------------------------ layout, by hand
def test_gpt_neox_fused_qkv_is_interleaved_per_head():
    """query_key_value's output dim is [n_heads, 3, d_head]: row block (h, i) is Q/K/V of head h."""
    h, dh, d = 2, 3, 6
    cfg = {"model_type": "gpt_neox", "hidden_size": d, "num_attention_heads": h,
           "num_hidden_layers": 1, "rotary_pct": 1.0}
    w = torch.zeros(3 * d, d)
    for head in range(h):
        for i in range(3):  # Q, K, V
            rows = slice((head * 3 + i) * dh, (head * 3 + i + 1) * dh)
            w[rows] = 10 * head + i + 1
    t = {"layers.0.attention.query_key_value.weight": w,
         "layers.0.attention.dense.weight": torch.arange(d * d, dtype=torch.float).reshape(d, d)}
    a = adapter_for(cfg, list(t), source="cfg.json")
    lw = a.layer_weights(0, t.__getitem__)
    for head in range(h):
        assert torch.all(lw.W_Q[head] == 10 * head + 1)
        assert torch.all(lw.W_K[head] == 10 * head + 2)
        assert torch.all(lw.W_V[head] == 10 * head + 3)
    # dense (nn.Linear, y = z dense^T): W_O[h] = dense^T rows of head h's slice
    assert torch.equal(lw.W_O.reshape(d, d), t["layers.0.attention.dense.weight"].t())
    assert a.shape.rotary_fraction == 1.0 and lw.b_Q is None


def test_attention_tensor_names_cover_layers_only_attention(tiny_checkpoint):
    ckpt, = open_source(str(tiny_checkpoint("gpt_neox")))
    a = ckpt.adapter()
    names = a.attention_tensor_names()
    assert names == [n for layer in range(2) for n in a.layer_tensor_names(layer)]
    assert all(".attention." in n for n in names) and len(names) == 2 * 4
    assert set(a.layer_tensor_names(0, fold_ln=True)) - set(a.layer_tensor_names(0)) == {
        "gpt_neox.layers.0.input_layernorm.weight", "gpt_neox.layers.0.input_layernorm.bias"}


# ------------------------------------------------------------------ configs
def test_pythia_style_config_rotary_pct():
    """Pythia's hub configs say ``rotary_pct``; transformers 5 writes ``rope_parameters``."""
    base = {"model_type": "gpt_neox", "hidden_size": 64, "num_attention_heads": 4,
            "num_hidden_layers": 1}
    names = ["gpt_neox.layers.0.attention.query_key_value.weight",
             "gpt_neox.layers.0.attention.dense.weight"]
    assert adapter_for({**base, "rotary_pct": 0.5}, names, source="c").shape.rotary_fraction == 0.5
    rp = {"rope_parameters": {"partial_rotary_factor": 0.25, "rope_theta": 1e4}}
    assert adapter_for({**base, **rp}, names, source="c").shape.rotary_fraction == 0.25
    assert adapter_for(base, names, source="c").prefix == "gpt_neox."


def test_pythia_style_config_json_reproduces(tmp_path):
    """A config.json as Pythia's hub checkpoints ship it (``rotary_pct``, ``rotary_emb_base``,
    no ``rope_parameters``): transformers 5 converts it on load, the adapter reads it directly;
    both must agree on the rotary fraction (checked against cos.shape in ``recompute``)."""
    from .._checkpoints import make_checkpoint

    folder = make_checkpoint("gpt_neox", tmp_path / "pythia-like", rotary_pct=0.5, n_heads=2)
    cfg = json.loads((folder / "config.json").read_text())
    rope = cfg.pop("rope_parameters")
    assert rope["partial_rotary_factor"] == 0.5
    cfg.update(rotary_pct=0.5, rotary_emb_base=int(rope["rope_theta"]))
    (folder / "config.json").write_text(json.dumps(cfg))
    ckpt, = open_source(str(folder))
    assert ckpt.adapter().shape.rotary_fraction == 0.5
    err, _ = recompute(folder)
    assert err < TOL


# ------------------------------------------------------------------ layout, as a property
@settings(max_examples=25, deadline=None)
@given(h=st.integers(1, 4), dh=st.integers(1, 5), seed=st.integers(0, 2**16))
def test_layout_matches_the_modeling_code_reshape(h, dh, seed):
    """For any head count and width, x W_X[h] equals the slice the modeling code takes.

    The reference reshape is transformers' own (quoted): GPT-NeoX
    ``qkv.view(*input_shape, -1, 3 * head_size)`` then ``chunk(3, dim=-1)``.
    """
    gen = torch.Generator().manual_seed(seed)
    d = h * dh
    x = torch.randn(3, d, generator=gen, dtype=torch.float64)
    w = torch.randn(3 * d, d, generator=gen, dtype=torch.float64)
    b = torch.randn(3 * d, generator=gen, dtype=torch.float64)
    cfg = {"model_type": "gpt_neox", "hidden_size": d, "num_attention_heads": h, "num_hidden_layers": 1}
    t = {"layers.0.attention.query_key_value.weight": w, "layers.0.attention.query_key_value.bias": b,
         "layers.0.attention.dense.weight": torch.eye(d, dtype=torch.float64)}
    lw = adapter_for(cfg, list(t), source="c").layer_weights(0, t.__getitem__)
    ref = (x @ w.t() + b).view(3, h, 3 * dh).chunk(3, dim=-1)
    for i, (W, B) in enumerate(((lw.W_Q, lw.b_Q), (lw.W_K, lw.b_K), (lw.W_V, lw.b_V))):
        got = torch.einsum("sd,hde->she", x, W) + B
        assert torch.allclose(got, ref[i], atol=1e-12)
