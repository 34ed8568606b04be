"""The Llama family: Llama (SmolLM2), Mistral, Qwen2, Qwen3.

Stored layout: ``self_attn.{q,k,v,o}_proj`` (``nn.Linear``) with grouped-query attention (K/V
heads expanded with ``repeat_interleave``, :func:`~lie_stats.extraction.architectures.base.expand_kv`),
full rotary; Qwen2's q/k/v biases; Qwen3's per-head query/key RMS norms (gain ``w``);
Mistral's and Qwen2's optional sliding window. Gemma3, which shares the layout, lives in
:mod:`lie_stats.extraction.architectures.gemma3`. Proven by ``tests/architectures/test_llama.py``.
"""

from __future__ import annotations

from typing import ClassVar

import torch

from ...errors import ArchitectureError
from .base import (
    LAYER_GROUP as _L, Adapter, Getter, LayerWeights, ModelShape, expand_kv, heads_from_linear_in,
    heads_from_linear_out,
)
from .registry import register

__all__ = ["LlamaAdapter", "MistralAdapter", "Qwen2Adapter", "Qwen3Adapter"]


@register
class LlamaAdapter(Adapter):
    """Llama (SmolLM2), Mistral, Qwen2: ``self_attn.{q,k,v,o}_proj`` with grouped-query attention."""

    architecture = "llama"
    model_types = ("llama",)
    class_names = ("LlamaForCausalLM", "LlamaModel")
    probe = "layers.{l}.self_attn.q_proj.weight"
    param_patterns = (  # inherited by Mistral, Qwen2, Qwen3
        (r"(^|\.)embed_tokens\.", "embedding"),
        (r"layers" + _L + r"input_layernorm\.", "norm_attn"),
        (r"layers" + _L + r"post_attention_layernorm\.", "norm_mlp"),  # the MLP's input norm
        (r"layers" + _L + r"mlp\.(gate_proj|up_proj)\.", "mlp_in"),
        (r"layers" + _L + r"mlp\.down_proj\.", "mlp_out"),
        (r"(^|\.)norm\.", "norm_final"),
        (r"(^|\.)lm_head\.", "unembedding"),
    )
    #: per-head query/key norms (``q_norm``/``k_norm``) before rotary
    qk_norm: ClassVar[bool] = False

    def _read_shape(self) -> ModelShape:
        d = self._int("hidden_size")
        h = self._int("num_attention_heads")
        kv = self._int("num_key_value_heads", default=h)
        if h % kv:
            raise ArchitectureError(
                f"{self.source}: num_attention_heads={h} is not a multiple of "
                f"num_key_value_heads={kv}"
            )
        dh = self._cfg("head_dim", default=None)
        dh = self._heads(d, h) if dh is None else self._int("head_dim")
        return ModelShape(self.architecture, self._int("num_hidden_layers"), h, kv, dh, d,
                          1.0, self._extras())

    def _sliding(self) -> bool:
        return self._cfg("sliding_window", default=None) is not None

    def _extras(self) -> tuple[str, ...]:
        extras = ["rotary"]
        if self.qk_norm:
            extras.append("qk_norm")
        if self._sliding():
            extras.append("sliding_window")
        return tuple(extras)

    def _roles(self, layer: int) -> dict[str, tuple[str, bool]]:
        p = f"layers.{layer}.self_attn."
        roles = {}
        for x in "qkvo":
            roles[x + "_w"] = (p + f"{x}_proj.weight", True)
            roles[x + "_b"] = (p + f"{x}_proj.bias", False)
        if self.qk_norm:
            roles["q_norm"] = (p + "q_norm.weight", True)
            roles["k_norm"] = (p + "k_norm.weight", True)
        return roles

    def _norm_names(self, layer: int) -> tuple[str, str | None]:
        return f"layers.{layer}.input_layernorm.weight", None

    def _raw(self, layer: int, get: Getter, names: dict[str, str]) -> LayerWeights:
        s = self.shape
        h, kv, dh, d = s.n_heads, s.n_kv_heads, s.d_head, s.d_model
        rep = h // kv
        wq = heads_from_linear_in(self._read(get, names["q_w"], (h * dh, d)), h, dh)
        wk = heads_from_linear_in(self._read(get, names["k_w"], (kv * dh, d)), kv, dh)
        wv = heads_from_linear_in(self._read(get, names["v_w"], (kv * dh, d)), kv, dh)
        wo = heads_from_linear_out(self._read(get, names["o_w"], (d, h * dh)), h, dh)

        def bias(role: str, n: int) -> torch.Tensor | None:
            if role not in names:
                return None
            return self._read(get, names[role], (n * dh,)).reshape(n, dh)

        bq, bk, bv = bias("q_b", h), bias("k_b", kv), bias("v_b", kv)
        bo = self._read(get, names["o_b"], (d,)) if "o_b" in names else None
        extras = {}
        if self.qk_norm:
            extras = {r: self._read(get, names[r], (dh,)) for r in ("q_norm", "k_norm")}
        return LayerWeights(layer, wq, expand_kv(wk, rep), expand_kv(wv, rep), wo,
                            bq, expand_kv(bk, rep), expand_kv(bv, rep), bo, extras)


@register
class MistralAdapter(LlamaAdapter):
    """Mistral: the Llama layout (no biases), optional sliding window."""

    architecture = "mistral"
    model_types = ("mistral",)
    class_names = ("MistralForCausalLM", "MistralModel")


@register
class Qwen2Adapter(LlamaAdapter):
    """Qwen2: the Llama layout with q/k/v biases; sliding window only with ``use_sliding_window``."""

    architecture = "qwen2"
    model_types = ("qwen2",)
    class_names = ("Qwen2ForCausalLM", "Qwen2Model")

    def _sliding(self) -> bool:
        return bool(self._cfg("use_sliding_window", default=False)) and super()._sliding()


@register
class Qwen3Adapter(Qwen2Adapter):
    """Qwen3: the Llama layout with per-head query/key RMS norms (gain ``w``)."""

    architecture = "qwen3"
    model_types = ("qwen3",)
    class_names = ("Qwen3ForCausalLM", "Qwen3Model")
    qk_norm = True
