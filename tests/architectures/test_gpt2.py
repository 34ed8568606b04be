"""GPT-2 adapter: attention reproduced (with the inverse-layer-index scale), the Conv1D layout."""

from __future__ import annotations

import torch
from hypothesis import given, settings, strategies as st

from lie_stats.extraction.architectures import adapter_for

from ._reproduce import reproduction_tests

CASES = [("gpt2", {}), ("gpt2", {"scale_attn_by_inverse_layer_idx": True, "head": False})]


test_attention_reproduced_from_canonical_weights, test_fold_ln_reproduces_attention_from_normalized_residual = (
    reproduction_tests(CASES))


# ------------------------------------------------------------------ layout, as a property
@settings(max_examples=25, deadline=None)
@given(h=st.integers(1, 4), dh=st.integers(1, 5), seed=st.integers(0, 2**16))
def test_layout_matches_the_modeling_code_reshape(h, dh, seed):
    """For any head count and width, x W_X[h] equals the slice the modeling code takes.

    The reference reshape is transformers' own (quoted): GPT-2
    ``c_attn(x).split(split_size, dim=2)`` then ``view(..., -1, head_dim)``.
    """
    gen = torch.Generator().manual_seed(seed)
    d = h * dh
    x = torch.randn(3, d, generator=gen, dtype=torch.float64)
    w = torch.randn(d, 3 * d, generator=gen, dtype=torch.float64)
    cfg = {"model_type": "gpt2", "n_embd": d, "n_head": h, "n_layer": 1}
    t = {"h.0.attn.c_attn.weight": w, "h.0.attn.c_proj.weight": torch.eye(d, dtype=torch.float64)}
    lw = adapter_for(cfg, list(t), source="c").layer_weights(0, t.__getitem__)
    ref = [r.view(3, h, dh) for r in (x @ w).split(d, dim=1)]
    for W, r in zip((lw.W_Q, lw.W_K, lw.W_V), ref):
        assert torch.allclose(torch.einsum("sd,hde->she", x, W), r, atol=1e-12)
