"""Shared machinery of the attention-reproduction tests of every adapter (METRICS.md §1).

Each ``tests/architectures/test_<family>.py`` lists its ``CASES`` (architecture, tiny-builder
keywords) and takes the two tests over them from :func:`reproduction_tests` (which runs
:func:`assert_attention_reproduced` and :func:`assert_fold_reproduced`);
``test_registry.py`` fails while a registered ``model_type`` has no case.

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
import sys

import pytest
import torch

from lie_stats.extraction.architectures import Adapter, LayerWeights
from lie_stats.extraction.sources import open_source

from .._checkpoints import load_model

TOL = 1e-5


def case_id(case: tuple[str, dict]) -> str:
    """Test id of a case: ``arch`` or ``arch-key=value-...``."""
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


def assert_attention_reproduced(folder, arch: str) -> None:
    """Canonical weights reproduce the model's attention to :data:`TOL`, and the check discriminates."""
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


def assert_fold_reproduced(folder, arch: str) -> None:
    """fold_ln=True: n W' + b' with n the normalized residual gives the same attention."""
    err, _ = recompute(folder, fold_ln=True)
    assert err < TOL, f"{arch} fold_ln: max |dp| = {err:.3g}"


def assert_gqa_repeat_interleave(folder) -> None:
    """K/V head j serves query heads j*rep..(j+1)*rep-1; tiling instead of interleaving fails."""
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


def reproduction_tests(cases: list[tuple[str, dict]]):
    """The two attention-reproduction tests of a family's ``cases``, parametrized by case.

    A family's test module binds them to module-level names, where pytest collects them::

        test_attention_reproduced_from_canonical_weights, test_fold_ln_reproduces_attention_from_normalized_residual = (
            reproduction_tests(CASES))
    """

    @pytest.mark.parametrize("case", cases, ids=case_id)
    def test_attention_reproduced_from_canonical_weights(case, tiny_checkpoint):
        """METRICS.md §1: canonical weights reproduce the model's attention to 1e-5 (float32)."""
        arch, kw = case
        assert_attention_reproduced(tiny_checkpoint(arch, **kw), arch)

    @pytest.mark.parametrize("case", cases, ids=case_id)
    def test_fold_ln_reproduces_attention_from_normalized_residual(case, tiny_checkpoint):
        """fold_ln=True (METRICS.md §1): n W' + b' with n the normalized residual gives the same attention."""
        arch, kw = case
        assert_fold_reproduced(tiny_checkpoint(arch, **kw), arch)

    return test_attention_reproduced_from_canonical_weights, test_fold_ln_reproduces_attention_from_normalized_residual
