"""Encoders: post-LN BERT (MiniLM), RoBERTa, XLM-R, MPNet, and pre-LN RoBERTa-PreLayerNorm.

Stored layout: ``attention.self.{query,key,value}`` and ``attention.output.dense`` (BERT,
RoBERTa, XLM-R; prefix ``bert.``/``roberta.`` when saved with a head), or
``attention.attn.{q,k,v,o}`` plus a bucketed relative position bias (MPNet). The norm whose
output enters layer ``l``'s attention is the previous layer's output LayerNorm (the
embeddings' LayerNorm for layer 0); in RoBERTa-PreLayerNorm it is the layer's own
``attention.LayerNorm``. Proven by ``tests/architectures/test_bert.py``.
"""

from __future__ import annotations

from ...errors import ArchitectureError
from .base import (
    LAYER_GROUP as _L, Adapter, Getter, LayerWeights, ModelShape, heads_from_linear_in,
    heads_from_linear_out,
)
from .registry import register

__all__ = ["BertAdapter", "RobertaAdapter", "RobertaPreLayerNormAdapter", "MPNetAdapter"]


@register
class BertAdapter(Adapter):
    """BERT (MiniLM): ``attention.self.{query,key,value}``, ``attention.output.dense``; post-LN."""

    architecture = "bert"
    model_types = ("bert",)
    class_names = ("BertModel", "BertForMaskedLM", "BertForPreTraining")
    probe = "encoder.layer.{l}.attention.self.query.weight"
    param_patterns = (  # inherited by RoBERTa, XLM-R, MPNet (MLM heads included)
        (r"(^|\.)embeddings\.(word|position|token_type)_embeddings\.", "embedding"),
        (r"(^|\.)embeddings\.LayerNorm\.", "norm_embedding"),
        (r"layer" + _L + r"attention\.(output\.)?LayerNorm\.", "norm_attn"),
        (r"layer" + _L + r"output\.LayerNorm\.", "norm_mlp"),
        (r"layer" + _L + r"intermediate\.dense\.", "mlp_in"),
        (r"layer" + _L + r"output\.dense\.", "mlp_out"),
        (r"(^|\.)(cls\.predictions\.(decoder\.|bias$)|lm_head\.(decoder\.|bias$))", "unembedding"),
    )
    _in = ("self.query", "self.key", "self.value")
    _out = "output.dense"
    _ln_after = "output.LayerNorm"

    def _read_shape(self) -> ModelShape:
        pos = self._cfg("position_embedding_type", default="absolute")
        if pos != "absolute":
            raise ArchitectureError(
                f"{self.source}: position_embedding_type {pos!r} adds relative-position terms to "
                f"the attention logits that {self.architecture!r} adapters do not reproduce; "
                f"only 'absolute' is supported"
            )
        d = self._int("hidden_size")
        h = self._int("num_attention_heads")
        return ModelShape(self.architecture, self._int("num_hidden_layers"), h, h,
                          self._heads(d, h), d, 0.0, self._extras())

    def _extras(self) -> tuple[str, ...]:
        return ("bidirectional",)

    def _roles(self, layer: int) -> dict[str, tuple[str, bool]]:
        p = f"encoder.layer.{layer}.attention."
        roles = {}
        for x, mod in zip("qkvo", (*self._in, self._out)):
            roles[x + "_w"] = (p + mod + ".weight", True)
            roles[x + "_b"] = (p + mod + ".bias", False)
        return roles

    def _norm_names(self, layer: int) -> tuple[str, str | None]:
        p = "embeddings.LayerNorm." if layer == 0 else f"encoder.layer.{layer - 1}.{self._ln_after}."
        return p + "weight", p + "bias"

    def _raw(self, layer: int, get: Getter, names: dict[str, str]) -> LayerWeights:
        s = self.shape
        h, dh, d = s.n_heads, s.d_head, s.d_model
        ws = [heads_from_linear_in(self._read(get, names[x + "_w"], (d, d)), h, dh) for x in "qkv"]
        wo = heads_from_linear_out(self._read(get, names["o_w"], (d, d)), h, dh)
        bs = [self._read(get, names[x + "_b"], (d,)).reshape(h, dh) if x + "_b" in names else None
              for x in "qkv"]
        bo = self._read(get, names["o_b"], (d,)) if "o_b" in names else None
        return LayerWeights(layer, *ws, wo, *bs, bo)


@register
class RobertaAdapter(BertAdapter):
    """RoBERTa / XLM-R: the BERT layout (prefix ``roberta.`` when saved with a head)."""

    architecture = "roberta"
    model_types = ("roberta", "xlm-roberta")
    class_names = ("RobertaModel", "RobertaForMaskedLM", "XLMRobertaModel", "XLMRobertaForMaskedLM")


@register
class RobertaPreLayerNormAdapter(BertAdapter):
    """RoBERTa-PreLayerNorm: the BERT layout, but pre-LN.

    Each layer normalizes its attention input with ``attention.LayerNorm`` and its MLP input
    with ``intermediate.LayerNorm``; a final ``LayerNorm`` follows the last layer (prefix
    ``roberta_prelayernorm.`` when saved with a head).
    """

    architecture = "roberta-prelayernorm"
    model_types = ("roberta-prelayernorm",)
    class_names = ("RobertaPreLayerNormModel", "RobertaPreLayerNormForMaskedLM")
    param_patterns = (
        (r"(^|\.)embeddings\.(word|position|token_type)_embeddings\.", "embedding"),
        (r"(^|\.)embeddings\.LayerNorm\.", "norm_embedding"),
        (r"layer" + _L + r"attention\.LayerNorm\.", "norm_attn"),
        (r"layer" + _L + r"intermediate\.LayerNorm\.", "norm_mlp"),
        (r"layer" + _L + r"intermediate\.dense\.", "mlp_in"),
        (r"layer" + _L + r"output\.dense\.", "mlp_out"),
        (r"^(roberta_prelayernorm\.)?LayerNorm\.", "norm_final"),
        (r"(^|\.)lm_head\.(decoder\.|bias$)", "unembedding"),
    )

    def _norm_names(self, layer: int) -> tuple[str, str | None]:
        p = f"encoder.layer.{layer}.attention.LayerNorm."
        return p + "weight", p + "bias"


@register
class MPNetAdapter(BertAdapter):
    """MPNet (all-mpnet-base-v2): ``attention.attn.{q,k,v,o}`` plus relative position bias."""

    architecture = "mpnet"
    model_types = ("mpnet",)
    class_names = ("MPNetModel", "MPNetForMaskedLM")
    probe = "encoder.layer.{l}.attention.attn.q.weight"
    _in = ("attn.q", "attn.k", "attn.v")
    _out = "attn.o"

    def _read_shape(self) -> ModelShape:
        self.config.setdefault("position_embedding_type", "absolute")
        return super()._read_shape()

    def _extras(self) -> tuple[str, ...]:
        return ("relative_position_bias", "bidirectional")
