"""GPT-2: ``Conv1D`` ``c_attn`` holding Q | K | V side by side, and ``c_proj``.

Stored layout: ``attn.c_attn`` (``Conv1D``, weight ``[d_model, 3 d_model]``, already ``x W``;
the three blocks Q | K | V each laid out ``[n_heads, d_head]``) and ``attn.c_proj``. The
options ``scale_attn_weights=False`` and ``scale_attn_by_inverse_layer_idx`` change the logit
scale (:meth:`GPT2Adapter.attention_scale`). Proven by ``tests/architectures/test_gpt2.py``.
"""

from __future__ import annotations

from .base import LAYER_GROUP as _L, Adapter, Getter, LayerWeights, ModelShape
from .registry import register

__all__ = ["GPT2Adapter"]


@register
class GPT2Adapter(Adapter):
    """GPT-2: ``Conv1D`` ``c_attn`` (``[d_model, 3 d_model]``, blocks Q | K | V) and ``c_proj``."""

    architecture = "gpt2"
    model_types = ("gpt2",)
    class_names = ("GPT2LMHeadModel", "GPT2Model")
    probe = "h.{l}.attn.c_attn.weight"
    param_patterns = (
        (r"(^|\.)(wte|wpe)\.", "embedding"),
        (r"(^|\.)h" + _L + r"ln_1\.", "norm_attn"),
        (r"(^|\.)h" + _L + r"ln_2\.", "norm_mlp"),
        (r"(^|\.)h" + _L + r"mlp\.c_fc\.", "mlp_in"),
        (r"(^|\.)h" + _L + r"mlp\.c_proj\.", "mlp_out"),
        (r"(^|\.)ln_f\.", "norm_final"),
        (r"(^|\.)lm_head\.", "unembedding"),
    )

    def _read_shape(self) -> ModelShape:
        d = self._int("n_embd", "hidden_size")
        h = self._int("n_head", "num_attention_heads")
        extras = []
        if not self._cfg("scale_attn_weights", default=True):
            extras.append("unscaled")
        if self._cfg("scale_attn_by_inverse_layer_idx", default=False):
            extras.append("scaled_by_inverse_layer_idx")
        return ModelShape(self.architecture, self._int("n_layer", "num_hidden_layers"), h, h,
                          self._heads(d, h), d, 0.0, tuple(extras))

    def _roles(self, layer: int) -> dict[str, tuple[str, bool]]:
        p = f"h.{layer}.attn."
        return {"qkv_w": (p + "c_attn.weight", True), "qkv_b": (p + "c_attn.bias", False),
                "o_w": (p + "c_proj.weight", True), "o_b": (p + "c_proj.bias", False)}

    def _norm_names(self, layer: int) -> tuple[str, str | None]:
        return f"h.{layer}.ln_1.weight", f"h.{layer}.ln_1.bias"

    def _raw(self, layer: int, get: Getter, names: dict[str, str]) -> LayerWeights:
        s = self.shape
        h, dh, d = s.n_heads, s.d_head, s.d_model
        w = self._read(get, names["qkv_w"], (d, 3 * d))
        wq, wk, wv = (w[:, i * d:(i + 1) * d].reshape(d, h, dh).permute(1, 0, 2).contiguous()
                      for i in range(3))
        bq = bk = bv = bo = None
        if "qkv_b" in names:
            b = self._read(get, names["qkv_b"], (3 * d,))
            bq, bk, bv = (b[i * d:(i + 1) * d].reshape(h, dh).contiguous() for i in range(3))
        wo = self._read(get, names["o_w"], (d, d)).reshape(h, dh, d).contiguous()
        if "o_b" in names:
            bo = self._read(get, names["o_b"], (d,))
        return LayerWeights(layer, wq, wk, wv, wo, bq, bk, bv, bo)

    def attention_scale(self, layer: int) -> float:
        self._check_layer(layer)
        scale = 1.0 if "unscaled" in self.shape.attention_extras else self.shape.d_head ** -0.5
        if "scaled_by_inverse_layer_idx" in self.shape.attention_extras:
            scale /= float(layer + 1)
        return scale
