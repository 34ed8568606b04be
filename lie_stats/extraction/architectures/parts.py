"""Every parameter of a checkpoint by category, for the parameter-delta map (METRICS.md §6.4).

The map needs every tensor's category, not only the attention tensors'. Attention tensors are
split by the adapters' own :meth:`~lie_stats.extraction.architectures.base.Adapter.layer_weights` (so a
fused QKV tensor is cut into Q, K and V exactly as the proven adapters cut it); every other
tensor is named by the adapter class's ``param_patterns`` (regular expressions over the full
stored name; the group ``l`` is the layer) and its ``buffer_patterns`` are skipped. The
categories are ``lie_stats.schema.PARAM_CATEGORIES``; the registry checks each adapter's
patterns against them when the adapter is registered.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

import torch

from .base import Adapter, Getter

__all__ = ["LAYER_CATEGORIES", "param_category", "parameter_parts"]

#: Categories that exist once per layer (the others exist once per model).
LAYER_CATEGORIES = ("attn_q", "attn_k", "attn_v", "attn_o", "mlp_in", "mlp_out",
                    "norm_attn", "norm_mlp")


def param_category(adapter: Adapter, name: str) -> tuple[str, int | None] | None:
    """Category and layer of one stored tensor that is not an attention tensor (METRICS.md §6.4).

    Attention tensors (:meth:`Adapter.layer_tensor_names`) are categorized by
    :func:`parameter_parts`, which splits fused ones; this maps the rest by the adapter
    class's ``param_patterns`` (first match wins). A tensor no pattern claims is
    ``("other", None)``.

    Parameters
    ----------
    adapter : Adapter
        The checkpoint's adapter (its class declares the patterns).
    name : str
        The full stored tensor name.

    Returns
    -------
    (category, layer) or None
        ``layer`` is None for per-model categories; None for non-parameter buffers
        (causal masks, rotary frequencies), which the map skips.

    Examples
    --------
    >>> from lie_stats.extraction.architectures import adapter_for
    >>> cfg = {"model_type": "gpt_neox", "hidden_size": 8, "num_attention_heads": 2,
    ...        "num_hidden_layers": 1}
    >>> a = adapter_for(cfg, ["gpt_neox.layers.0.attention.query_key_value.weight",
    ...                       "gpt_neox.layers.0.attention.dense.weight"], source="c.json")
    >>> param_category(a, "gpt_neox.layers.0.mlp.dense_4h_to_h.weight")
    ('mlp_out', 0)
    >>> param_category(a, "embed_out.weight")
    ('unembedding', None)
    """
    for pattern in type(adapter).buffer_patterns:
        if re.search(pattern, name):
            return None
    for pattern, category in type(adapter).param_patterns:
        m = re.search(pattern, name)
        if m:
            layer = m.groupdict().get("l")
            return category, (int(layer) if layer is not None else None)
    return "other", None


def parameter_parts(adapter: Adapter, names: Sequence[str], get: Getter
                    ) -> list[tuple[str, int | None, str, torch.Tensor]]:
    """Every parameter of a checkpoint as ``(category, layer, tensor name, values)`` (METRICS.md §6.4).

    Attention tensors come from :meth:`Adapter.layer_weights`: ``attn_q`` is ``W_Q`` with
    ``b_Q`` (likewise K, V, O), so fused tensors (GPT-NeoX ``query_key_value``, GPT-2
    ``c_attn``) are split by the adapter's own, tested layout; under grouped-query attention
    the K/V heads are taken once (not repeated per query head); per-head q/k norm gains are
    ``norm_attn``. The name of a split part is the stored tensor's with ``[q]``/``[k]``/``[v]``.
    Every other tensor goes through :func:`param_category`; buffers are skipped.

    Parameters
    ----------
    adapter : Adapter
    names : sequence of str
        Every tensor name of the checkpoint.
    get : callable
        ``name -> torch.Tensor``.

    Returns
    -------
    list of (category, layer, name, tensor)

    Examples
    --------
    >>> from lie_stats.extraction.architectures import adapter_for
    >>> cfg = {"model_type": "gpt2", "n_embd": 4, "n_head": 2, "n_layer": 1}
    >>> t = {"h.0.attn.c_attn.weight": torch.arange(48.).reshape(4, 12),
    ...      "h.0.attn.c_proj.weight": torch.eye(4), "wte.weight": torch.ones(10, 4)}
    >>> parts = parameter_parts(adapter_for(cfg, list(t), source="c.json"), list(t), t.__getitem__)
    >>> [(c, l, n) for c, l, n, _ in parts][:2]
    [('attn_q', 0, 'h.0.attn.c_attn.weight[q]'), ('attn_k', 0, 'h.0.attn.c_attn.weight[k]')]
    >>> parts[-1][:3]
    ('embedding', None, 'wte.weight')
    """
    out: list[tuple[str, int | None, str, torch.Tensor]] = []
    attention: set[str] = set()
    s = adapter.shape
    rep = s.n_heads // s.n_kv_heads
    for layer in range(s.n_layers):
        present = adapter._present(layer)
        attention.update(present.values())
        lw = adapter.layer_weights(layer, get)
        for x, cat in zip("QKVO", ("attn_q", "attn_k", "attn_v", "attn_o")):
            w, b = getattr(lw, "W_" + x), getattr(lw, "b_" + x)
            if x in "KV" and rep > 1:  # one copy of each shared K/V head
                w = w[::rep]
                b = None if b is None else b[::rep]
            for kind, tensor in (("w", w), ("b", b)):
                if tensor is None:
                    continue
                own = present.get(f"{x.lower()}_{kind}")  # a tensor of its own (q_proj, dense)
                fused = present.get(f"qkv_{kind}") if x != "O" else None
                label = own if own is not None else f"{fused}[{x.lower()}]"
                out.append((cat, layer, label, tensor))
        for role, t in lw.extras.items():
            out.append(("norm_attn", layer, present.get(role, role), t))
    for name in names:
        if name in attention:
            continue
        found = param_category(adapter, name)
        if found is None:
            continue
        category, layer = found
        out.append((category, layer, name, get(name)))
    return out
