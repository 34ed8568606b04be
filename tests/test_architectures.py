"""Adapters to the canonical head weights of METRICS.md §1.

The core test: for every supported architecture, attention probabilities recomputed from the
canonical weights on real input equal the model's own (``attn_implementation="eager"``,
``output_attentions=True``) to 1e-5 in float32. The recomputation uses only

* the attention block's input ``x`` (captured by a forward pre-hook on the attention module,
  i.e. after the pre-attention norm), or with ``fold_ln=True`` the *normalized* residual
  (the norm's input, normalized without its affine part);
* ``q = x W_Q + b_Q``, ``k = x W_K + b_K`` from :class:`LayerWeights` (K already expanded for GQA);
* what ``ModelShape.attention_extras`` declares, applied with transformers' own functions:
  the per-head q/k norm modules (fed the gains the adapter read), ``apply_rotary_pos_emb`` of
  the architecture's modeling module with the model's own cos/sin, MPNet's relative bias;
* ``Adapter.attention_scale`` and a causal (decoders) and padding mask built here.

Every checkpoint is randomized in all its parameters (biases and norm gains included), with
weights large enough that attention is far from uniform, and each test also shows that a wrong
head split (or a wrong GQA expansion) misses by orders of magnitude more than the tolerance.
"""

from __future__ import annotations

import copy
import json
import os
import sys

import pytest
import torch
from hypothesis import given, settings, strategies as st

from lie_stats.architectures import (
    ATTENTION_EXTRAS, SUPPORTED_ARCHITECTURES, Adapter, LayerWeights, ModelShape, adapter_for,
)
from lie_stats.errors import ArchitectureError, CheckpointError
from lie_stats.sources import open_source

from ._checkpoints import TINY_ARCHITECTURES, load_model

TOL = 1e-5

# Variants beyond one tiny checkpoint per architecture: (arch, make_checkpoint kwargs).
CASES = [(arch, {}) for arch in SUPPORTED_ARCHITECTURES] + [
    ("gpt2", {"scale_attn_by_inverse_layer_idx": True, "head": False}),
    ("gpt_neox", {"rotary_pct": 0.5, "head": False, "n_heads": 2}),
    ("llama", {"d_model": 24, "n_heads": 6, "n_kv_heads": 2, "d_head": 6, "attention_bias": True}),
    ("llama", {"n_kv_heads": 1}),
    ("bert", {"head": False}),
]


def _ids(case):
    arch, kw = case
    return arch + ("" if not kw else "-" + "-".join(f"{k}={v}" for k, v in sorted(kw.items())))


def _attention_module(model: torch.nn.Module, adapter: Adapter, layer: int) -> torch.nn.Module:
    # ``<prefix>...<attention module>.<projection>.weight``: the module owning the projections.
    first = adapter.layer_tensor_names(layer)[0]
    return model.get_submodule(first.rsplit(".", 2)[0])


def _normalize(norm: torch.nn.Module, x: torch.Tensor) -> torch.Tensor:
    """The norm's input normalized without its affine part (LayerNorm or RMSNorm)."""
    eps = getattr(norm, "eps", None)
    eps = getattr(norm, "variance_epsilon", eps)
    x = x.float()
    if isinstance(norm, torch.nn.LayerNorm):
        return (x - x.mean(-1, keepdim=True)) * torch.rsqrt(x.var(-1, unbiased=False, keepdim=True) + eps)
    return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + eps)


def _inputs(config: dict, *, seed: int = 0, length: int = 11, pad: int = 4):
    gen = torch.Generator().manual_seed(seed)
    vocab = config.get("vocab_size", 96)
    ids = torch.randint(3, vocab, (2, length), generator=gen)
    mask = torch.ones(2, length, dtype=torch.long)
    mask[1, length - pad:] = 0  # right padding: no query row is fully masked
    ids[1, length - pad:] = config.get("pad_token_id") or 0
    return ids, mask


def recompute(folder, *, fold_ln: bool = False, ids=None, mask=None, mutate=None, model=None):
    """Max |recomputed - model| over layers of the attention probabilities, and the probabilities.

    ``mutate(lw) -> lw`` alters the canonical weights first (to show the test discriminates).
    ``model`` is the loaded model (default: :func:`load_model` of ``folder``); its module
    names must equal the checkpoint's tensor names minus the parameter name.
    """
    ckpt, = open_source(str(folder))
    adapter = ckpt.adapter()
    shape = adapter.shape
    if model is None:
        model = load_model(folder)
        try:
            _attention_module(model, adapter, 0)
        except AttributeError:  # saved without the head its config names (sentence-transformers)
            import transformers

            model = transformers.AutoModel.from_pretrained(folder, attn_implementation="eager").eval()
    if ids is None:
        ids, mask = _inputs(ckpt.config)
    captured: dict[int, tuple] = {}
    norm_in: dict[int, torch.Tensor] = {}
    hooks = []
    for layer in range(shape.n_layers):
        attn = _attention_module(model, adapter, layer)

        def pre(module, args, kwargs, layer=layer):
            hidden = args[0] if args else kwargs["hidden_states"]
            captured[layer] = (hidden.detach(), args, kwargs)

        hooks.append(attn.register_forward_pre_hook(pre, with_kwargs=True))
        if fold_ln:
            norm = model.get_submodule(adapter.norm_tensor_names(layer)[0].rsplit(".", 1)[0])

            def pre_norm(module, args, layer=layer):
                norm_in[layer] = _normalize(module, args[0].detach())

            hooks.append(norm.register_forward_pre_hook(pre_norm))
    with torch.no_grad():
        out = model(input_ids=ids, attention_mask=mask, output_attentions=True)
    for h in hooks:
        h.remove()
    probs_model = out.attentions
    assert len(probs_model) == shape.n_layers

    S = ids.shape[1]
    allowed = mask[:, None, None, :].bool().expand(-1, 1, S, S)
    if "bidirectional" not in shape.attention_extras:
        allowed = allowed & torch.ones(S, S, dtype=torch.bool).tril()[None, None]
    worst = 0.0
    for lw in ckpt.iter_layers(fold_ln=fold_ln):
        layer = lw.layer
        attn = _attention_module(model, adapter, layer)
        modeling = sys.modules[type(attn).__module__]
        if mutate is not None:
            lw = mutate(lw)
        hidden, args, kwargs = captured[layer]
        x = norm_in[layer] if fold_ln else hidden.float()
        q = torch.einsum("bsd,hde->bhse", x, lw.W_Q.float())
        k = torch.einsum("bsd,hde->bhse", x, lw.W_K.float())
        if lw.b_Q is not None:
            q = q + lw.b_Q.float()[None, :, None, :]
        if lw.b_K is not None:
            k = k + lw.b_K.float()[None, :, None, :]
        if "qk_norm" in shape.attention_extras:
            for role, name in (("q_norm", "q"), ("k_norm", "k")):
                norm = copy.deepcopy(getattr(attn, role))  # the architecture's own norm class
                with torch.no_grad():
                    norm.weight.copy_(lw.extras[role])
                if name == "q":
                    q = norm(q)
                else:
                    k = norm(k)
        if "rotary" in shape.attention_extras:
            cos, sin = kwargs["position_embeddings"]
            assert cos.shape[-1] == round(shape.rotary_fraction * shape.d_head)
            q, k = modeling.apply_rotary_pos_emb(q, k, cos, sin)
        logits = (q @ k.transpose(-1, -2)) * adapter.attention_scale(layer)
        if "relative_position_bias" in shape.attention_extras:
            bias = args[2] if len(args) > 2 else kwargs["position_bias"]
            logits = logits + bias
        logits = logits.masked_fill(~allowed, float("-inf"))
        probs = torch.softmax(logits, dim=-1)
        assert probs.shape == probs_model[layer].shape
        worst = max(worst, (probs - probs_model[layer].float()).abs().max().item())
    return worst, probs_model


@pytest.mark.parametrize("case", CASES, ids=[_ids(c) for c in CASES])
def test_attention_reproduced_from_canonical_weights(case, tiny_checkpoint):
    """METRICS.md §1: canonical weights reproduce the model's attention to 1e-5 (float32)."""
    arch, kw = case
    folder = tiny_checkpoint(arch, **kw)
    err, probs = recompute(folder)
    assert err < TOL, f"{arch}: max |dp| = {err:.3g}"
    # The comparison must discriminate: attention is far from uniform ...
    top = torch.stack([p[..., 3:, :].amax(-1).mean() for p in probs]).min()
    assert top > 0.3, f"attention too flat to test anything (mean row max {top:.3f})"
    # ... and a wrong head split (heads of W_Q rolled by one) misses by far more than TOL.
    def roll(lw: LayerWeights) -> LayerWeights:
        return LayerWeights(lw.layer, lw.W_Q.roll(1, 0), lw.W_K, lw.W_V, lw.W_O,
                            None if lw.b_Q is None else lw.b_Q.roll(1, 0), lw.b_K, lw.b_V, lw.b_O,
                            lw.extras)

    bad, _ = recompute(folder, mutate=roll)
    assert bad > 1e-2, f"rolled heads still match ({bad:.3g}): the test cannot fail"


@pytest.mark.parametrize("case", CASES, ids=[_ids(c) for c in CASES])
def test_fold_ln_reproduces_attention_from_normalized_residual(case, tiny_checkpoint):
    """fold_ln=True (METRICS.md §1): n W' + b' with n the normalized residual gives the same attention."""
    arch, kw = case
    err, _ = recompute(tiny_checkpoint(arch, **kw), fold_ln=True)
    assert err < TOL, f"{arch} fold_ln: max |dp| = {err:.3g}"


@pytest.mark.parametrize("arch", ["llama", "mistral", "qwen2", "qwen3", "gemma3_text"])
def test_gqa_expansion_is_repeat_interleave(arch, tiny_checkpoint):
    """K/V head j serves query heads j*rep..(j+1)*rep-1; tiling instead of interleaving fails."""
    folder = tiny_checkpoint(arch)
    ckpt, = open_source(str(folder))
    shape = ckpt.adapter().shape
    assert shape.n_kv_heads == shape.n_heads // 2 and shape.n_kv_heads > 1
    rep = shape.n_heads // shape.n_kv_heads
    lw = next(ckpt.iter_layers())
    for h in range(shape.n_heads):
        assert torch.equal(lw.W_K[h], lw.W_K[(h // rep) * rep])

    def tile(lw: LayerWeights) -> LayerWeights:
        order = [(h % shape.n_kv_heads) * rep for h in range(shape.n_heads)]
        pick = (lambda t: None if t is None else t[order])
        return LayerWeights(lw.layer, lw.W_Q, pick(lw.W_K), pick(lw.W_V), lw.W_O, lw.b_Q,
                            pick(lw.b_K), pick(lw.b_V), lw.b_O, lw.extras)

    bad, _ = recompute(folder, mutate=tile)
    assert bad > 1e-2


def test_real_minilm_attention_reproduced(minilm_path):
    """The trained all-MiniLM-L6-v2 (DATA.md): real text, raw and folded weights, to 1e-5."""
    from tokenizers import Tokenizer

    tok = Tokenizer.from_file(str(minilm_path / "tokenizer.json"))
    tok.no_padding()
    tok.no_truncation()
    texts = ["The quick brown fox jumps over the lazy dog near the river bank.",
             "Attention heads share structure."]
    enc = [tok.encode(t).ids for t in texts]
    length = max(map(len, enc))
    ids = torch.zeros(len(enc), length, dtype=torch.long)
    mask = torch.zeros_like(ids)
    for i, e in enumerate(enc):
        ids[i, :len(e)] = torch.tensor(e)
        mask[i, :len(e)] = 1
    assert mask[1].sum() < length  # the batch exercises padding
    err, probs = recompute(minilm_path, ids=ids, mask=mask)
    assert err < TOL, f"MiniLM: max |dp| = {err:.3g}"
    assert len(probs) == 6 and probs[0].shape[1] == 12
    err_fold, _ = recompute(minilm_path, ids=ids, mask=mask, fold_ln=True)
    assert err_fold < TOL, f"MiniLM fold_ln: max |dp| = {err_fold:.3g}"
    ckpt, = open_source(str(minilm_path))
    s = ckpt.adapter().shape
    assert (s.architecture, s.n_layers, s.n_heads, s.d_head, s.d_model) == ("bert", 6, 12, 32, 384)


_REAL = [p for p in os.environ.get("LIE_STATS_REAL_CHECKPOINTS", "").split(os.pathsep) if p]


@pytest.mark.slow
@pytest.mark.skipif(not _REAL, reason="set LIE_STATS_REAL_CHECKPOINTS=folder[:folder...] to check real checkpoints")
@pytest.mark.parametrize("folder", _REAL)
def test_real_checkpoint_attention_reproduced(folder):
    """Opt-in: any local float checkpoint (e.g. SmolLM2, Gemma-3-270m dequantized from GGUF,
    all-mpnet-base-v2; DATA.md), random token ids, raw and folded, to 1e-5."""
    ckpt, = open_source(folder)
    vocab = ckpt.config.get("vocab_size") or ckpt.config.get("text_config", {}).get("vocab_size")
    gen = torch.Generator().manual_seed(0)
    ids = torch.randint(5, min(vocab, 30000), (2, 16), generator=gen)
    mask = torch.ones_like(ids)
    mask[1, 12:] = 0
    for fold_ln in (False, True):
        err, _ = recompute(folder, ids=ids, mask=mask, fold_ln=fold_ln)
        assert err < TOL, f"{folder} fold_ln={fold_ln}: max |dp| = {err:.3g}"


# ------------------------------------------------------------------ layouts, by hand
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


@pytest.mark.parametrize("arch", TINY_ARCHITECTURES)
def test_shapes_and_extras_declared(arch, tiny_checkpoint):
    ckpt, = open_source(str(tiny_checkpoint(arch)))
    s = ckpt.adapter().shape
    assert isinstance(s, ModelShape) and s.architecture == arch
    assert s.n_layers == 2 and set(s.attention_extras) <= set(ATTENTION_EXTRAS)
    assert list(s.attention_extras) == [e for e in ATTENTION_EXTRAS if e in s.attention_extras]
    for lw in ckpt.iter_layers():
        assert lw.W_Q.shape == lw.W_K.shape == lw.W_V.shape == (s.n_heads, s.d_model, s.d_head)
        assert lw.W_O.shape == (s.n_heads, s.d_head, s.d_model)
        for b in (lw.b_Q, lw.b_K, lw.b_V):
            assert b is None or b.shape == (s.n_heads, s.d_head)
        assert lw.b_O is None or lw.b_O.shape == (s.d_model,)
    expected_rotary = {"gpt_neox": 0.25, "gpt2": 0.0, "bert": 0.0, "roberta": 0.0,
                       "xlm-roberta": 0.0, "mpnet": 0.0}.get(arch, 1.0)
    assert s.rotary_fraction == expected_rotary
    assert ("qk_norm" in s.attention_extras) == (arch in ("qwen3", "gemma3_text"))


def test_qwen2_has_qkv_biases_and_no_o_bias(tiny_checkpoint):
    lw = next(open_source(str(tiny_checkpoint("qwen2")))[0].iter_layers())
    assert lw.b_Q is not None and lw.b_K is not None and lw.b_V is not None and lw.b_O is None


def test_stored_dtype_is_kept_and_fold_upcasts(tiny_checkpoint):
    ckpt, = open_source(str(tiny_checkpoint("llama", dtype=torch.bfloat16)))
    lw = next(ckpt.iter_layers())
    assert lw.W_Q.dtype == lw.W_K.dtype == lw.W_O.dtype == torch.bfloat16
    assert next(ckpt.iter_layers(fold_ln=True)).W_Q.dtype == torch.float32


# ------------------------------------------------------------------ configs and errors
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


def test_dispatch_by_architectures_when_model_type_missing():
    cfg = {"architectures": ["GPT2LMHeadModel"], "n_embd": 8, "n_head": 2, "n_layer": 1}
    a = adapter_for(cfg, ["transformer.h.0.attn.c_attn.weight", "transformer.h.0.attn.c_proj.weight"],
                    source="c")
    assert a.shape.architecture == "gpt2" and a.prefix == "transformer."


def test_unknown_architecture_lists_supported_and_suggests():
    with pytest.raises(ArchitectureError) as e:
        adapter_for({"model_type": "gpt_neo"}, [], source="/ckpt/config.json")
    msg = str(e.value)
    assert "/ckpt/config.json" in msg and "'gpt_neo'" in msg
    for arch in SUPPORTED_ARCHITECTURES:
        assert arch in msg
    assert "Did you mean 'gpt_neox'?" in msg
    with pytest.raises(ArchitectureError, match="architectures"):
        adapter_for({"architectures": ["T5Model"]}, [], source="c.json")
    assert issubclass(ArchitectureError, CheckpointError)


def test_missing_attention_tensor_is_named():
    cfg = {"model_type": "gpt2", "n_embd": 8, "n_head": 2, "n_layer": 2}
    names = ["h.0.attn.c_attn.weight", "h.0.attn.c_proj.weight", "h.1.attn.c_attn.weight"]
    with pytest.raises(ArchitectureError, match=r"'h\.1\.attn\.c_proj\.weight' of layer 1 is missing"):
        adapter_for(cfg, names, source="c.json")
    with pytest.raises(ArchitectureError, match=r"no attention tensor named '\*h\.0\.attn\.c_attn\.weight'"):
        adapter_for(cfg, ["wte.weight"], source="c.json")


def test_wrong_shape_names_tensor_expected_got_and_file():
    cfg = {"model_type": "bert", "hidden_size": 8, "num_attention_heads": 2, "num_hidden_layers": 1}
    p = "encoder.layer.0.attention."
    t = {p + "self.query.weight": torch.zeros(8, 8), p + "self.key.weight": torch.zeros(8, 7),
         p + "self.value.weight": torch.zeros(8, 8), p + "output.dense.weight": torch.zeros(8, 8)}
    a = adapter_for(cfg, list(t), source="c.json", locate=lambda n: "/w/model.safetensors")
    with pytest.raises(ArchitectureError) as e:
        a.layer_weights(0, t.__getitem__)
    msg = str(e.value)
    assert "'encoder.layer.0.attention.self.key.weight'" in msg
    assert "(8, 7)" in msg and "expected (8, 8)" in msg and "/w/model.safetensors" in msg


def test_config_errors():
    with pytest.raises(ArchitectureError, match="not divisible"):
        adapter_for({"model_type": "bert", "hidden_size": 10, "num_attention_heads": 4,
                     "num_hidden_layers": 1}, [], source="c")
    with pytest.raises(ArchitectureError, match="num_key_value_heads=3"):
        adapter_for({"model_type": "llama", "hidden_size": 8, "num_attention_heads": 4,
                     "num_key_value_heads": 3, "num_hidden_layers": 1}, [], source="c")
    with pytest.raises(ArchitectureError, match="'num_hidden_layers'"):
        adapter_for({"model_type": "llama", "hidden_size": 8, "num_attention_heads": 4}, [],
                    source="c")
    with pytest.raises(ArchitectureError, match="relative_key"):
        adapter_for({"model_type": "bert", "hidden_size": 8, "num_attention_heads": 2,
                     "num_hidden_layers": 1, "position_embedding_type": "relative_key"}, [],
                    source="c")


def test_layer_out_of_range(tiny_checkpoint):
    a = open_source(str(tiny_checkpoint("gpt2")))[0].adapter()
    with pytest.raises(ArchitectureError, match="out of range"):
        a.layer_tensor_names(2)


def test_attention_tensor_names_cover_layers_only_attention(tiny_checkpoint):
    ckpt, = open_source(str(tiny_checkpoint("gpt_neox")))
    a = ckpt.adapter()
    names = a.attention_tensor_names()
    assert names == [n for layer in range(2) for n in a.layer_tensor_names(layer)]
    assert all(".attention." in n for n in names) and len(names) == 2 * 4
    assert set(a.layer_tensor_names(0, fold_ln=True)) - set(a.layer_tensor_names(0)) == {
        "gpt_neox.layers.0.input_layernorm.weight", "gpt_neox.layers.0.input_layernorm.bias"}


def test_legacy_layernorm_gamma_beta_names():
    cfg = {"model_type": "bert", "hidden_size": 4, "num_attention_heads": 2, "num_hidden_layers": 1}
    p = "bert.encoder.layer.0.attention."
    t = {p + m + ".weight": torch.eye(4) for m in ("self.query", "self.key", "self.value", "output.dense")}
    t["bert.embeddings.LayerNorm.gamma"] = torch.tensor([1.0, 2.0, 3.0, 4.0])
    t["bert.embeddings.LayerNorm.beta"] = torch.tensor([1.0, 0.0, 0.0, 0.0])
    lw = adapter_for(cfg, list(t), source="c").layer_weights(0, t.__getitem__, fold_ln=True)
    assert torch.equal(lw.W_Q.permute(1, 0, 2).reshape(4, 4), torch.diag(torch.tensor([1.0, 2, 3, 4])))
    assert torch.equal(lw.b_Q.reshape(-1), torch.tensor([1.0, 0, 0, 0]))


def test_supported_architectures_all_have_tiny_builders():
    assert set(SUPPORTED_ARCHITECTURES) == set(TINY_ARCHITECTURES)


# ------------------------------------------------------------------ layouts, as properties
@settings(max_examples=25, deadline=None)
@given(h=st.integers(1, 4), dh=st.integers(1, 5), rep=st.integers(1, 3), seed=st.integers(0, 2**16))
def test_layouts_match_the_modeling_code_reshapes(h, dh, rep, seed):
    """For any head count and width, x W_X[h] equals the slice the modeling code takes.

    The reference reshapes are transformers' own (quoted): GPT-NeoX
    ``qkv.view(*input_shape, -1, 3 * head_size)`` then ``chunk(3, dim=-1)``; GPT-2
    ``c_attn(x).split(split_size, dim=2)`` then ``view(..., -1, head_dim)``; Llama
    ``k_proj(x).view(..., -1, head_dim)`` then ``repeat_kv`` (``expand`` + ``reshape``).
    """
    gen = torch.Generator().manual_seed(seed)
    d = h * dh
    x = torch.randn(3, d, generator=gen, dtype=torch.float64)

    # GPT-NeoX
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

    # GPT-2
    w = torch.randn(d, 3 * d, generator=gen, dtype=torch.float64)
    cfg = {"model_type": "gpt2", "n_embd": d, "n_head": h, "n_layer": 1}
    t = {"h.0.attn.c_attn.weight": w, "h.0.attn.c_proj.weight": torch.eye(d, dtype=torch.float64)}
    lw = adapter_for(cfg, list(t), source="c").layer_weights(0, t.__getitem__)
    ref = [r.view(3, h, dh) for r in (x @ w).split(d, dim=1)]
    for W, r in zip((lw.W_Q, lw.W_K, lw.W_V), ref):
        assert torch.allclose(torch.einsum("sd,hde->she", x, W), r, atol=1e-12)

    # Llama with GQA: n_heads = h * rep query heads over h K/V heads
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


def test_pythia_style_config_json_reproduces(tmp_path):
    """A config.json as Pythia's hub checkpoints ship it (``rotary_pct``, ``rotary_emb_base``,
    no ``rope_parameters``): transformers 5 converts it on load, the adapter reads it directly;
    both must agree on the rotary fraction (checked against cos.shape in ``recompute``)."""
    from ._checkpoints import make_checkpoint

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
