"""GPT-NeoX (Pythia): fused ``query_key_value`` interleaved per head, partial rotary.

Stored layout: ``attention.query_key_value`` (``nn.Linear``, output dim laid out
``[n_heads, 3, d_head]``, i.e. Q, K, V interleaved per head) and ``attention.dense``; rotary
embeddings on the first ``rotary_pct`` of each head (Pythia's hub configs say ``rotary_pct``,
transformers 5 writes ``rope_parameters.partial_rotary_factor``). Proven by
``tests/architectures/test_gpt_neox.py``.
"""

from __future__ import annotations

from .base import LAYER_GROUP as _L, Adapter, Getter, LayerWeights, ModelShape, heads_from_linear_out
from .registry import register

__all__ = ["GPTNeoXAdapter"]


@register
class GPTNeoXAdapter(Adapter):
    """GPT-NeoX / Pythia: fused ``query_key_value`` with output dim ``[n_heads, 3, d_head]``."""

    architecture = "gpt_neox"
    model_types = ("gpt_neox",)
    class_names = ("GPTNeoXForCausalLM", "GPTNeoXModel")
    probe = "layers.{l}.attention.query_key_value.weight"
    param_patterns = (
        (r"(^|\.)embed_in\.", "embedding"),
        (r"layers" + _L + r"input_layernorm\.", "norm_attn"),
        (r"layers" + _L + r"post_attention_layernorm\.", "norm_mlp"),
        (r"layers" + _L + r"mlp\.dense_h_to_4h\.", "mlp_in"),
        (r"layers" + _L + r"mlp\.dense_4h_to_h\.", "mlp_out"),
        (r"(^|\.)final_layer_norm\.", "norm_final"),
        (r"(^|\.)embed_out\.", "unembedding"),
    )

    def _read_shape(self) -> ModelShape:
        d = self._int("hidden_size")
        h = self._int("num_attention_heads")
        dh = self._heads(d, h)
        rope = self._cfg("rope_parameters", "rope_scaling", default={}) or {}
        frac = self._cfg("rotary_pct", default=None)
        if frac is not None:
            frac = self._fraction("rotary_pct", frac)
        elif isinstance(rope, dict) and rope.get("partial_rotary_factor") is not None:
            frac = self._fraction("partial_rotary_factor", rope["partial_rotary_factor"])
        else:
            frac = 0.25
        rotary_ndims = int(dh * frac)
        return ModelShape(self.architecture, self._int("num_hidden_layers"), h, h, dh, d,
                          rotary_ndims / dh, ("rotary",) if rotary_ndims else ())

    def _roles(self, layer: int) -> dict[str, tuple[str, bool]]:
        p = f"layers.{layer}.attention."
        return {"qkv_w": (p + "query_key_value.weight", True), "qkv_b": (p + "query_key_value.bias", False),
                "o_w": (p + "dense.weight", True), "o_b": (p + "dense.bias", False)}

    def _norm_names(self, layer: int) -> tuple[str, str | None]:
        p = f"layers.{layer}.input_layernorm."
        return p + "weight", p + "bias"

    def _raw(self, layer: int, get: Getter, names: dict[str, str]) -> LayerWeights:
        s = self.shape
        h, dh, d = s.n_heads, s.d_head, s.d_model
        w = self._read(get, names["qkv_w"], (3 * d, d)).reshape(h, 3, dh, d)
        wq, wk, wv = (w[:, i].transpose(1, 2).contiguous() for i in range(3))
        bq = bk = bv = bo = None
        if "qkv_b" in names:
            b = self._read(get, names["qkv_b"], (3 * d,)).reshape(h, 3, dh)
            bq, bk, bv = (b[:, i].contiguous() for i in range(3))
        wo = heads_from_linear_out(self._read(get, names["o_w"], (d, d)), h, dh)
        if "o_b" in names:
            bo = self._read(get, names["o_b"], (d,))
        return LayerWeights(layer, wq, wk, wv, wo, bq, bk, bv, bo)
