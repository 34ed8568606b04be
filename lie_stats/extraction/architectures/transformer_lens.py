"""TransformerLens ``HookedTransformer`` objects: weights already per head, in memory only.

A ``HookedTransformer`` (TransformerLens 3.x and earlier; 4.0 removed the class) holds its
attention weights in the canonical layout of METRICS.md §1 already: ``blocks.{l}.attn.W_Q``,
``W_K``, ``W_V`` ``[n_heads, d_model, d_head]``, ``W_O`` ``[n_heads, d_head, d_model]``,
``b_Q/b_K/b_V`` ``[n_heads, d_head]``, ``b_O`` ``[d_model]``; under grouped-query attention
the state dict holds ``_W_K``, ``_W_V``, ``_b_K``, ``_b_V`` ``[n_key_value_heads, ...]``,
which TransformerLens repeats per query head with ``repeat_interleave`` (as
:func:`~lie_stats.extraction.architectures.base.expand_kv` does). The pre-attention norm is
``blocks.{l}.ln1`` (``w`` and, for LayerNorm, ``b``).

This adapter is not registered for any ``config.json`` model type: it is built by
:mod:`lie_stats.extraction.memory` from the object's ``cfg`` (``HookedTransformerConfig``), passed as a
dict with ``model_type`` set to ``"transformer_lens"``. Its weights are the numbers the object
holds. ``HookedTransformer.from_pretrained`` processes them by default (it folds the norm
gains into ``W_Q/W_K/W_V``, setting ``normalization_type`` to ``LNPre``/``RMSPre``; centres the
weights that write to the residual stream; folds ``b_V`` into ``b_O``), so they differ from the
Hugging Face checkpoint's; ``from_pretrained_no_processing`` keeps them. With a pre-folded
norm (``LNPre``/``RMSPre``) or none, ``fold_ln=True`` has no gain left to fold and returns the
weights as they are. Proven by ``tests/architectures/test_transformer_lens.py`` (attention
patterns recomputed from the canonical weights equal the model's ``hook_pattern``).
"""

from __future__ import annotations

from .base import LAYER_GROUP as _L, Adapter, Getter, LayerWeights, ModelShape, expand_kv
from ...errors import ArchitectureError

__all__ = ["TransformerLensAdapter", "MODEL_TYPE"]

#: The ``model_type`` the in-memory source gives a HookedTransformer's config.
MODEL_TYPE = "transformer_lens"

#: ``cfg`` fields whose non-default values change attention in ways the cube cannot record,
#: with what was expected.
_REFUSED = (
    ("positional_embedding_type", ("alibi", "shortformer", "relative_positional_bias"),
     "'standard' or 'rotary' (ALiBi, shortformer and relative-position biases are not "
     "among the attention extras a cube records)"),
    ("use_attention_sinks", (True,), "False (learned attention-sink logits are not recorded)"),
    ("use_qk_norm", (True,), "False (TransformerLens's q/k norms are not read)"),
    ("load_in_4bit", (True,), "False (quantized weights are not the matrices the metrics are defined on)"),
)


class TransformerLensAdapter(Adapter):
    """A ``HookedTransformer``'s state dict: ``blocks.{l}.attn.W_Q`` etc., already per head."""

    architecture = MODEL_TYPE
    model_types = (MODEL_TYPE,)
    probe = "blocks.{l}.attn.W_Q"
    param_patterns = (
        (r"(^|\.)embed\.W_E$", "embedding"),
        (r"(^|\.)pos_embed\.W_pos$", "embedding"),
        (r"blocks" + _L + r"ln1\.", "norm_attn"),
        (r"blocks" + _L + r"ln2\.", "norm_mlp"),
        (r"blocks" + _L + r"mlp\.(W_in|b_in|W_gate|b_gate)$", "mlp_in"),
        (r"blocks" + _L + r"mlp\.(W_out|b_out)$", "mlp_out"),
        (r"(^|\.)ln_final\.", "norm_final"),
        (r"(^|\.)unembed\.", "unembedding"),
    )
    buffer_patterns = (r"\.attn\.(mask|IGNORE|rotary_sin|rotary_cos)$",)

    def _read_shape(self) -> ModelShape:
        for key, bad, expected in _REFUSED:
            if self.config.get(key) in bad:
                raise ArchitectureError(
                    f"{self.source}: cfg.{key} is {self.config.get(key)!r}; expected {expected}."
                )
        d = self._int("d_model")
        h = self._int("n_heads")
        dh = self._int("d_head")
        kv = self._int("n_key_value_heads", default=h)
        if h % kv:
            raise ArchitectureError(
                f"{self.source}: cfg.n_heads={h} is not a multiple of cfg.n_key_value_heads={kv}"
            )
        extras = []
        frac = 0.0
        if self.config.get("positional_embedding_type") == "rotary":
            rot = self._int("rotary_dim")
            if rot > dh:
                raise ArchitectureError(f"{self.source}: cfg.rotary_dim={rot} exceeds d_head={dh}")
            frac = rot / dh
            extras.append("rotary")
        if self.config.get("use_attn_scale") is False:
            extras.append("unscaled")
        elif abs(self._positive_number("attn_scale", default=dh ** 0.5) - dh ** 0.5) > 1e-9 * dh:
            extras.append("scaled_by_query_pre_attn_scalar")
        if self.config.get("scale_attn_by_inverse_layer_idx"):
            extras.append("scaled_by_inverse_layer_idx")
        if self.config.get("use_local_attn"):
            extras.append("sliding_window")
        if self.config.get("attn_scores_soft_cap") not in (None, -1, -1.0, 0, 0.0):
            extras.append("logit_softcapping")
        if self.config.get("attention_dir") == "bidirectional":
            extras.append("bidirectional")
        from .base import ATTENTION_EXTRAS

        extras = tuple(e for e in ATTENTION_EXTRAS if e in extras)
        return ModelShape(self.architecture, self._int("n_layers"), h, kv, dh, d, frac, extras)

    def _grouped(self) -> bool:
        return self.shape.n_kv_heads != self.shape.n_heads

    def _roles(self, layer: int) -> dict[str, tuple[str, bool]]:
        p = f"blocks.{layer}.attn."
        kv = "_" if self._grouped() else ""
        return {"q_w": (p + "W_Q", True), "k_w": (p + kv + "W_K", True), "v_w": (p + kv + "W_V", True),
                "o_w": (p + "W_O", True), "q_b": (p + "b_Q", False), "k_b": (p + kv + "b_K", False),
                "v_b": (p + kv + "b_V", False), "o_b": (p + "b_O", False)}

    def _norm_names(self, layer: int) -> tuple[str, str | None]:
        p = f"blocks.{layer}.ln1."
        return p + "w", p + "b"

    def _norm_folded(self) -> bool:
        """True when the block has no norm gain to fold (``LNPre``/``RMSPre``: folded by
        TransformerLens already; ``None``: no norm)."""
        return self.config.get("normalization_type") in ("LNPre", "RMSPre", None)

    def _fold(self, layer: int, lw: LayerWeights, get: Getter) -> LayerWeights:
        if self._norm_folded():
            return lw
        return super()._fold(layer, lw, get)

    def layer_tensor_names(self, layer: int, *, fold_ln: bool = False) -> list[str]:
        return super().layer_tensor_names(layer, fold_ln=fold_ln and not self._norm_folded())

    def attention_scale(self, layer: int) -> float:
        self._check_layer(layer)
        scale = 1.0 if self.config.get("use_attn_scale") is False else float(
            self._positive_number("attn_scale", default=self.shape.d_head ** 0.5))
        if self.config.get("scale_attn_by_inverse_layer_idx"):
            scale *= layer + 1
        return 1.0 / scale

    def _raw(self, layer: int, get: Getter, names: dict[str, str]) -> LayerWeights:
        s = self.shape
        h, kv, dh, d = s.n_heads, s.n_kv_heads, s.d_head, s.d_model
        n_rep = h // kv
        wq = self._read(get, names["q_w"], (h, d, dh))
        wk = expand_kv(self._read(get, names["k_w"], (kv, d, dh)), n_rep)
        wv = expand_kv(self._read(get, names["v_w"], (kv, d, dh)), n_rep)
        wo = self._read(get, names["o_w"], (h, dh, d))
        bq = self._read(get, names["q_b"], (h, dh)) if "q_b" in names else None
        bk = expand_kv(self._read(get, names["k_b"], (kv, dh)), n_rep) if "k_b" in names else None
        bv = expand_kv(self._read(get, names["v_b"], (kv, dh)), n_rep) if "v_b" in names else None
        bo = self._read(get, names["o_b"], (d,)) if "o_b" in names else None
        return LayerWeights(layer, wq, wk, wv, wo, bq, bk, bv, bo)
