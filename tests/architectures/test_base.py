"""The Adapter base class: declared shapes and extras, dtypes, errors that name what is wrong."""

from __future__ import annotations

import os

import pytest
import torch

from lie_stats.extraction.architectures import ATTENTION_EXTRAS, ModelShape, adapter_for
from lie_stats.errors import ArchitectureError
from lie_stats.extraction.sources import open_source

from .._checkpoints import TINY_ARCHITECTURES
from ._reproduce import TOL, recompute


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
                       "xlm-roberta": 0.0, "roberta-prelayernorm": 0.0, "mpnet": 0.0}.get(arch, 1.0)
    assert s.rotary_fraction == expected_rotary
    assert ("qk_norm" in s.attention_extras) == (arch in ("qwen3", "gemma3_text"))


def test_stored_dtype_is_kept_and_fold_upcasts(tiny_checkpoint):
    ckpt, = open_source(str(tiny_checkpoint("llama", dtype=torch.bfloat16)))
    lw = next(ckpt.iter_layers())
    assert lw.W_Q.dtype == lw.W_K.dtype == lw.W_O.dtype == torch.bfloat16
    assert next(ckpt.iter_layers(fold_ln=True)).W_Q.dtype == torch.float32


# ------------------------------------------------------------------ errors
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


# ------------------------------------------------------------------ real checkpoints (opt-in)
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
