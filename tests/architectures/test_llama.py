"""Llama-family adapters (Llama, Mistral, Qwen2, Qwen3): attention reproduced, GQA, biases."""

from __future__ import annotations

import pytest
import torch
from hypothesis import given, settings, strategies as st

from lie_stats.extraction.architectures import adapter_for
from lie_stats.extraction.sources import open_source

from ._reproduce import assert_gqa_repeat_interleave, reproduction_tests

CASES = [(arch, {}) for arch in ("llama", "mistral", "qwen2", "qwen3")] + [
    ("llama", {"d_model": 24, "n_heads": 6, "n_kv_heads": 2, "d_head": 6, "attention_bias": True}),
    ("llama", {"n_kv_heads": 1}),
]


test_attention_reproduced_from_canonical_weights, test_fold_ln_reproduces_attention_from_normalized_residual = (
    reproduction_tests(CASES))


@pytest.mark.parametrize("arch", ["llama", "mistral", "qwen2", "qwen3"])
def test_gqa_expansion_is_repeat_interleave(arch, tiny_checkpoint):
    """K/V head j serves query heads j*rep..(j+1)*rep-1; tiling instead of interleaving fails."""
    assert_gqa_repeat_interleave(tiny_checkpoint(arch))


# ------------------------------------------------------------------ layout, by hand
def test_llama_linear_layout_and_gqa_by_hand():
    d, h, kv, dh = 4, 4, 2, 2
    cfg = {"model_type": "llama", "hidden_size": d, "num_attention_heads": h,
           "num_key_value_heads": kv, "num_hidden_layers": 1, "head_dim": dh}
    q = torch.arange(h * dh * d, dtype=torch.float).reshape(h * dh, d)
    k = torch.arange(kv * dh * d, dtype=torch.float).reshape(kv * dh, d) + 1000
    t = {"model.layers.0.self_attn.q_proj.weight": q,
         "model.layers.0.self_attn.k_proj.weight": k,
         "model.layers.0.self_attn.v_proj.weight": -k,
         "model.layers.0.self_attn.o_proj.weight": q.t().contiguous()}
    lw = adapter_for(cfg, list(t), source="c").layer_weights(0, t.__getitem__)
    # q_proj rows h*dh..(h+1)*dh are head h; W_Q[h] = those rows transposed
    assert torch.equal(lw.W_Q[1], q[2:4].t())
    assert torch.equal(lw.W_K[0], k[0:2].t()) and torch.equal(lw.W_K[1], k[0:2].t())
    assert torch.equal(lw.W_K[2], k[2:4].t()) and torch.equal(lw.W_K[3], k[2:4].t())
    assert torch.equal(lw.W_O[3], q[6:8])  # o_proj^T rows of head 3


def test_qwen2_has_qkv_biases_and_no_o_bias(tiny_checkpoint):
    lw = next(open_source(str(tiny_checkpoint("qwen2")))[0].iter_layers())
    assert lw.b_Q is not None and lw.b_K is not None and lw.b_V is not None and lw.b_O is None


# ------------------------------------------------------------------ layout, as a property
@settings(max_examples=25, deadline=None)
@given(h=st.integers(1, 4), dh=st.integers(1, 5), rep=st.integers(1, 3), seed=st.integers(0, 2**16))
def test_layout_matches_the_modeling_code_reshape(h, dh, rep, seed):
    """For any head count and width, x W_X[h] equals the slice the modeling code takes.

    The reference reshape is transformers' own (quoted): Llama
    ``k_proj(x).view(..., -1, head_dim)`` then ``repeat_kv`` (``expand`` + ``reshape``).
    """
    gen = torch.Generator().manual_seed(seed)
    d = h * dh
    x = torch.randn(3, d, generator=gen, dtype=torch.float64)
    nq = h * rep
    wq = torch.randn(nq * dh, d, generator=gen, dtype=torch.float64)
    wk = torch.randn(h * dh, d, generator=gen, dtype=torch.float64)
    wo = torch.randn(d, nq * dh, generator=gen, dtype=torch.float64)
    cfg = {"model_type": "llama", "hidden_size": d, "num_attention_heads": nq,
           "num_key_value_heads": h, "head_dim": dh, "num_hidden_layers": 1}
    p = "layers.0.self_attn."
    t = {p + "q_proj.weight": wq, p + "k_proj.weight": wk, p + "v_proj.weight": wk,
         p + "o_proj.weight": wo}
    lw = adapter_for(cfg, list(t), source="c").layer_weights(0, t.__getitem__)
    k = (x @ wk.t()).view(3, h, dh).transpose(0, 1)                      # [kv, s, dh]
    k = k[:, None].expand(h, rep, 3, dh).reshape(nq, 3, dh)               # repeat_kv
    assert torch.allclose(torch.einsum("sd,hde->hse", x, lw.W_K), k, atol=1e-12)
    q = (x @ wq.t()).view(3, nq, dh).transpose(0, 1)
    assert torch.allclose(torch.einsum("sd,hde->hse", x, lw.W_Q), q, atol=1e-12)
    z = torch.randn(3, nq, dh, generator=gen, dtype=torch.float64)       # per-head outputs
    assert torch.allclose(torch.einsum("she,hed->sd", z, lw.W_O), z.reshape(3, -1) @ wo.t(), atol=1e-12)
