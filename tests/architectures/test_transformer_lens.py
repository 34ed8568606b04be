"""TransformerLens ``HookedTransformer`` adapter: attention reproduced from the canonical weights.

The adapter is not registered for a ``config.json`` model type; :mod:`lie_stats.extraction.memory` builds it
from a live ``HookedTransformer`` (TransformerLens 3.x; 4.0 removed the class). The test builds
models from a ``HookedTransformerConfig`` (no ``from_pretrained``, so no weight processing),
randomizes every parameter (biases and norm gains too), and recomputes each layer's attention
pattern from the canonical weights: ``q = x W_Q + b_Q``, ``k = x W_K + b_K`` on the block's
input (the norm's output; or, with ``fold_ln=True``, the residual normalized without the norm's
affine part), TransformerLens's own rotary, ``Adapter.attention_scale`` and the causal mask; it must
equal the model's ``hook_pattern`` to 1e-5. Skipped without ``transformer-lens``
(``pip install 'lie_stats[transformerlens]'``).
"""

from __future__ import annotations

import pytest
import torch

from lie_stats.extraction.memory import open_objects

from ._reproduce import TOL

tl = pytest.importorskip("transformer_lens", reason="the transformerlens extra is not installed")
if "HookedTransformer" not in dir(tl):  # not hasattr: TransformerLens 4 raises ImportError for it
    pytest.skip("TransformerLens 4 removed HookedTransformer (the extra pins 3.9.0)", allow_module_level=True)

pytestmark = pytest.mark.filterwarnings("ignore:HookedTransformer is deprecated:DeprecationWarning")

#: (architecture, HookedTransformerConfig fields): what test_registry counts as covered.
CASES = [
    ("transformer_lens", {"normalization_type": "LN", "positional_embedding_type": "rotary", "rotary_dim": 4}),
    ("transformer_lens", {"normalization_type": "RMS", "positional_embedding_type": "rotary", "rotary_dim": 8,
                          "n_key_value_heads": 2}),
    ("transformer_lens", {"normalization_type": "LN", "positional_embedding_type": "standard"}),
]


def hooked(seed: int = 0, **fields):
    """A random HookedTransformer, every parameter randomized (LN gains near 1, weights large
    enough for far-from-uniform attention)."""
    cfg = tl.HookedTransformerConfig(n_layers=2, d_model=32, n_ctx=32, d_head=8, n_heads=4,
                                     d_vocab=50, act_fn="gelu", seed=seed, **fields)
    model = tl.HookedTransformer(cfg).eval()
    gen = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for name, p in model.named_parameters():
            noise = torch.randn(p.shape, generator=gen)
            if name.endswith(("ln1.w", "ln2.w", "ln_final.w")):
                p.copy_(1.0 + 0.3 * noise)
            elif name.split(".")[-1].startswith("b") or name.split(".")[-1].startswith("_b"):
                p.copy_(0.3 * noise)
            else:
                p.copy_(0.4 * noise)
    return model


def _normalize(x: torch.Tensor, norm: str, eps: float) -> torch.Tensor:
    if norm.startswith("LN"):
        x = x - x.mean(-1, keepdim=True)
    return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + eps)


@torch.no_grad()
def recompute(model, *, fold_ln: bool = False, mutate=None) -> float:
    """Max |recomputed - hook_pattern| over layers."""
    ckpt, = open_objects(model, name="tl")
    adapter = ckpt.adapter()
    ids = torch.randint(0, model.cfg.d_vocab, (2, 11), generator=torch.Generator().manual_seed(1))
    names = [f"blocks.{l}.{h}" for l in range(model.cfg.n_layers)
             for h in ("ln1.hook_normalized", "hook_resid_pre", "attn.hook_pattern")]
    with torch.no_grad():
        _, cache = model.run_with_cache(ids, names_filter=lambda n: n in names)
    S = ids.shape[1]
    causal = torch.ones(S, S, dtype=torch.bool).tril()
    worst = 0.0
    for lw in ckpt.iter_layers(fold_ln=fold_ln):
        layer = lw.layer
        if mutate is not None:
            lw = mutate(lw)
        # the residual normalized without the norm's affine part (checked against the model's)
        n = _normalize(cache[f"blocks.{layer}.hook_resid_pre"], model.cfg.normalization_type, model.cfg.eps)
        assert torch.allclose(n, cache[f"blocks.{layer}.ln1.hook_normalized"], atol=1e-5)
        if fold_ln:
            x = n
        else:  # the attention block's input: the norm's output
            ln1 = model.blocks[layer].ln1  # LNPre/RMSPre: no affine part (folded into W_Q/W_K/W_V)
            x = n * ln1.w + (ln1.b if hasattr(ln1, "b") else 0.0) if hasattr(ln1, "w") else n
        q = torch.einsum("bsd,hde->bshe", x, lw.W_Q.float())
        k = torch.einsum("bsd,hde->bshe", x, lw.W_K.float())
        if lw.b_Q is not None:
            q, k = q + lw.b_Q.float(), k + lw.b_K.float()
        if "rotary" in adapter.shape.attention_extras:
            attn = model.blocks[layer].attn
            assert attn.cfg.rotary_dim == round(adapter.shape.rotary_fraction * adapter.shape.d_head)
            q, k = attn.apply_rotary(q), attn.apply_rotary(k)
        scores = torch.einsum("bqhe,bkhe->bhqk", q, k) * adapter.attention_scale(layer)
        scores = scores.masked_fill(~causal, float("-inf"))
        probs = scores.softmax(-1)
        worst = max(worst, float((probs - cache[f"blocks.{layer}.attn.hook_pattern"]).abs().max()))
    return worst


@pytest.mark.parametrize("fields", [kw for _, kw in CASES], ids=lambda kw: "-".join(f"{k}={v}" for k, v in kw.items()))
def test_attention_reproduced_from_canonical_weights(fields):
    model = hooked(**fields)
    assert recompute(model) < TOL
    # a wrong head split misses by far more than the tolerance
    assert recompute(model, mutate=lambda lw: type(lw)(lw.layer, lw.W_Q.roll(1, 0), lw.W_K, lw.W_V, lw.W_O,
                                                      lw.b_Q.roll(1, 0), lw.b_K, lw.b_V, lw.b_O)) > 100 * TOL


@pytest.mark.parametrize("fields", [kw for _, kw in CASES], ids=lambda kw: "-".join(f"{k}={v}" for k, v in kw.items()))
def test_fold_ln_reproduces_attention_from_normalized_residual(fields):
    model = hooked(**fields)
    assert recompute(model, fold_ln=True) < TOL
    assert recompute(model, fold_ln=False) < TOL


def test_grouped_query_heads_are_repeated_per_query_head():
    model = hooked(normalization_type="RMS", positional_embedding_type="rotary", rotary_dim=8, n_key_value_heads=2)
    ckpt, = open_objects(model)
    shape = ckpt.adapter().shape
    assert (shape.n_heads, shape.n_kv_heads, shape.architecture) == (4, 2, "transformer_lens")
    w = next(ckpt.iter_layers())
    attn = model.blocks[0].attn
    assert torch.equal(w.W_K, attn.W_K) and torch.equal(w.W_V, attn.W_V)  # TransformerLens's own expansion
    assert torch.equal(w.W_K[0], w.W_K[1]) and not torch.equal(w.W_K[1], w.W_K[2])


def test_a_processed_model_is_read_as_it_is_and_its_provenance_says_so():
    """from_pretrained's processing (fold_ln, centred writing weights) changes the numbers; the
    cube reads what the object holds and records the norm setting."""
    model = hooked(normalization_type="LN", positional_embedding_type="rotary", rotary_dim=4)
    raw, = open_objects(model)
    raw_w = next(raw.iter_layers()).W_Q.clone()
    assert "no norm folded" in raw.provenance()["transformer_lens"]["weights"]
    model.process_weights_(fold_ln=True, center_writing_weights=True)
    done, = open_objects(model)
    prov = done.provenance()["transformer_lens"]
    assert prov["normalization_type"] == "LNPre" and "from_pretrained_no_processing" in prov["weights"]
    folded_w = next(done.iter_layers(fold_ln=True)).W_Q  # nothing left to fold: as held
    assert torch.equal(folded_w, next(done.iter_layers()).W_Q)
    assert not torch.allclose(folded_w, raw_w)
    assert recompute(model) < TOL  # still the model's own attention


def test_unsupported_attention_is_refused_with_the_field_named():
    from lie_stats.errors import ArchitectureError

    model = hooked(normalization_type="LN", positional_embedding_type="standard")
    model.cfg.positional_embedding_type = "alibi"
    ckpt, = open_objects(model)
    with pytest.raises(ArchitectureError, match="cfg.positional_embedding_type is 'alibi'"):
        ckpt.adapter()
