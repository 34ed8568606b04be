"""Gemma3 (text): the Llama layout with Gemma's norms and logit scale.

Per-head ``q_norm``/``k_norm`` and every RMS norm apply the gain ``1 + w`` (so does
layer-norm folding, :meth:`Gemma3TextAdapter._norm_gain`); logits are scaled by
``query_pre_attn_scalar ** -0.5``; ``post_attention_layernorm`` normalizes the attention
*output* (a ``norm_attn`` parameter, not the MLP's input norm as in Llama). Proven by
``tests/architectures/test_gemma3.py``.
"""

from __future__ import annotations

import torch

from ...errors import ArchitectureError
from .base import LAYER_GROUP as _L, ModelShape
from .llama import LlamaAdapter
from .registry import register

__all__ = ["Gemma3TextAdapter"]


@register
class Gemma3TextAdapter(LlamaAdapter):
    """Gemma3 (text): Llama layout, per-head q/k norms with gain ``1 + w``, query_pre_attn_scalar."""

    architecture = "gemma3_text"
    model_types = ("gemma3_text",)
    class_names = ("Gemma3ForCausalLM", "Gemma3TextModel")
    param_patterns = (  # post_attention_layernorm normalizes the attention output
        (r"(^|\.)embed_tokens\.", "embedding"),
        (r"layers" + _L + r"(input_layernorm|post_attention_layernorm)\.", "norm_attn"),
        (r"layers" + _L + r"(pre|post)_feedforward_layernorm\.", "norm_mlp"),
        (r"layers" + _L + r"mlp\.(gate_proj|up_proj)\.", "mlp_in"),
        (r"layers" + _L + r"mlp\.down_proj\.", "mlp_out"),
        (r"(^|\.)norm\.", "norm_final"),
        (r"(^|\.)lm_head\.", "unembedding"),
    )
    qk_norm = True

    def _read_shape(self) -> ModelShape:
        if "head_dim" not in self.config:
            self.config["head_dim"] = 256  # transformers' Gemma3TextConfig default
        return super()._read_shape()

    def _extras(self) -> tuple[str, ...]:
        extras = ["rotary", "qk_norm", "scaled_by_query_pre_attn_scalar"]
        types = self._cfg("layer_types", default=None)
        if types is not None and not (isinstance(types, list) and all(isinstance(t, str) for t in types)):
            raise ArchitectureError(
                f"{self.source}: config field 'layer_types' must be a list of strings (each "
                f"layer's attention, e.g. 'sliding_attention'), got {str(types)[:40]!r} "
                f"({type(types).__name__})"
            )
        sliding = ("sliding_attention" in types) if types is not None else True
        if sliding and self._cfg("sliding_window", default=None) is not None:
            extras.append("sliding_window")
        if self._cfg("attn_logit_softcapping", default=None) is not None:
            extras.append("logit_softcapping")
        if self._cfg("use_bidirectional_attention", default=False):
            extras.append("bidirectional")
        return tuple(extras)

    def _norm_gain(self, weight: torch.Tensor) -> torch.Tensor:
        return 1.0 + weight

    def attention_scale(self, layer: int) -> float:
        self._check_layer(layer)
        return self._positive_number("query_pre_attn_scalar", default=256) ** -0.5
