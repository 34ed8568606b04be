"""Architecture adapters: stored tensors -> canonical per-head weights (METRICS.md §1).

This is the only module of lie_stats that knows checkpoint tensor names (STYLE.md, lesson 5).
An :class:`Adapter` reads a checkpoint's ``config.json`` (as a dict) and its list of tensor
names, and turns the stored attention tensors of one layer into a :class:`LayerWeights` in the
row-vector convention ``y = x W``:

==========  ==============================  ============================================
name        shape                           meaning
==========  ==============================  ============================================
``W_Q``     ``[n_heads, d_model, d_head]``  residual stream -> query of each head
``W_K``     ``[n_heads, d_model, d_head]``  residual stream -> key (GQA: repeated per query head)
``W_V``     ``[n_heads, d_model, d_head]``  residual stream -> value (GQA: repeated)
``W_O``     ``[n_heads, d_head, d_model]``  head -> residual stream
==========  ==============================  ============================================

Every adapter is proven by ``tests/test_architectures.py``: attention probabilities recomputed
from the canonical weights (plus the extras the architecture applies, recorded in
:attr:`ModelShape.attention_extras`) equal the model's own to 1e-5 in float32.

Supported families and their stored layouts:

* ``gpt_neox`` (Pythia): fused ``attention.query_key_value`` (``nn.Linear``, output dim laid out
  ``[n_heads, 3, d_head]``, i.e. interleaved per head), ``attention.dense``; partial rotary.
* ``gpt2``: ``attn.c_attn`` (``Conv1D``, weight ``[d_model, 3 d_model]``, already ``x W``; the
  three blocks Q | K | V each laid out ``[n_heads, d_head]``), ``attn.c_proj``.
* ``llama``, ``mistral``, ``qwen2``, ``qwen3``: ``self_attn.{q,k,v,o}_proj`` with grouped-query
  attention (K/V heads expanded with ``repeat_interleave``); Qwen2's q/k/v biases; Qwen3's
  per-head query/key RMS norms.
* ``bert``, ``roberta``, ``xlm-roberta``: ``attention.self.{query,key,value}``,
  ``attention.output.dense`` (post-LN encoders).
* ``mpnet``: ``attention.attn.{q,k,v,o}`` plus a bucketed relative position bias.
* ``gemma3_text``: Llama layout with per-head ``q_norm``/``k_norm`` (gain ``1 + w``) and the
  ``query_pre_attn_scalar`` scaling.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import ClassVar

import torch

from .errors import ArchitectureError, did_you_mean

__all__ = [
    "SUPPORTED_ARCHITECTURES",
    "ATTENTION_EXTRAS",
    "ModelShape",
    "LayerWeights",
    "Adapter",
    "adapter_for",
    "LAYER_CATEGORIES",
    "param_category",
    "parameter_parts",
]

#: What each entry of :attr:`ModelShape.attention_extras` means: an operation the architecture
#: applies to the attention logits beyond ``(x W_Q + b_Q)(x W_K + b_K)^T / sqrt(d_head)`` plus
#: the mask. The canonical weights are the linear maps only; these tell a reader what else acts.
ATTENTION_EXTRAS: dict[str, str] = {
    "rotary": "rotary position embedding on q and k (on the first rotary_fraction of each head)",
    "qk_norm": "per-head RMS normalization of q and k (with a learned gain) before rotary",
    "scaled_by_query_pre_attn_scalar": "logits scaled by query_pre_attn_scalar**-0.5, not d_head**-0.5",
    "unscaled": "logits not divided by sqrt(d_head) (GPT-2 scale_attn_weights=False)",
    "scaled_by_inverse_layer_idx": "logits further divided by layer index + 1 (GPT-2 option)",
    "relative_position_bias": "a learned, bucketed relative-position bias added to the logits",
    "sliding_window": "some or all layers attend only within a sliding window",
    "logit_softcapping": "logits soft-capped with tanh",
    "bidirectional": "no causal mask (encoder)",
}


# --------------------------------------------------------------------------- data classes
@dataclass(frozen=True)
class ModelShape:
    """Shape and attention mechanics of one model (cube coordinates along ``model``).

    Attributes
    ----------
    architecture : str
        One of :data:`SUPPORTED_ARCHITECTURES`.
    n_layers, n_heads, n_kv_heads, d_head, d_model : int
        As in METRICS.md §1; ``n_kv_heads < n_heads`` under grouped-query attention.
    rotary_fraction : float
        Fraction of each head's dimensions that rotary embeddings rotate (0.0 none,
        0.25 Pythia, 1.0 Llama). METRICS.md §2: ``W_Q W_K^T`` is exact for the rest.
    attention_extras : tuple of str
        Keys of :data:`ATTENTION_EXTRAS` the architecture applies, in that table's order.

    Examples
    --------
    >>> s = ModelShape("llama", 2, 4, 2, 8, 32, 1.0, ("rotary",))
    >>> s.n_heads // s.n_kv_heads
    2
    """

    architecture: str
    n_layers: int
    n_heads: int
    n_kv_heads: int
    d_head: int
    d_model: int
    rotary_fraction: float
    attention_extras: tuple[str, ...]


@dataclass
class LayerWeights:
    """Canonical attention weights of one layer (METRICS.md §1, row-vector ``y = x W``).

    Tensors keep the dtype they are stored in (float16/bfloat16 included); the metric
    engine upcasts. With ``fold_ln=True`` the folded ``W_Q/W_K/W_V`` and biases are computed
    in float32 (float64 if stored so) and returned in that dtype, since they are no longer
    the stored tensors.

    Attributes
    ----------
    layer : int
    W_Q, W_K, W_V : torch.Tensor
        ``[n_heads, d_model, d_head]``; K and V repeated per query head under GQA
        (``repeat_interleave``: query head ``h`` uses K/V head ``h // (n_heads // n_kv_heads)``).
    W_O : torch.Tensor
        ``[n_heads, d_head, d_model]``.
    b_Q, b_K, b_V : torch.Tensor or None
        ``[n_heads, d_head]``, None where the architecture has no such bias.
    b_O : torch.Tensor or None
        ``[d_model]``.
    extras : dict of str to torch.Tensor
        Further attention parameters that are not linear maps, e.g. ``q_norm`` and ``k_norm``
        gains ``[d_head]`` as stored (``qk_norm`` in the attention extras).

    Examples
    --------
    >>> w = LayerWeights(0, *(torch.zeros(2, 8, 4) for _ in range(3)), torch.zeros(2, 4, 8))
    >>> w.n_heads, w.d_model, w.d_head
    (2, 8, 4)
    """

    layer: int
    W_Q: torch.Tensor
    W_K: torch.Tensor
    W_V: torch.Tensor
    W_O: torch.Tensor
    b_Q: torch.Tensor | None = None
    b_K: torch.Tensor | None = None
    b_V: torch.Tensor | None = None
    b_O: torch.Tensor | None = None
    extras: dict[str, torch.Tensor] = field(default_factory=dict)

    @property
    def n_heads(self) -> int:
        """Number of (query) heads."""
        return int(self.W_Q.shape[0])

    @property
    def d_model(self) -> int:
        """Residual-stream width."""
        return int(self.W_Q.shape[1])

    @property
    def d_head(self) -> int:
        """Head width."""
        return int(self.W_Q.shape[2])


Getter = Callable[[str], torch.Tensor]


# --------------------------------------------------------------------------- helpers
def _heads_from_linear_in(w: torch.Tensor, n: int, d_head: int) -> torch.Tensor:
    """``nn.Linear`` weight ``[n*d_head, d_model]`` (y = x w^T) -> ``[n, d_model, d_head]``."""
    return w.reshape(n, d_head, w.shape[-1]).transpose(1, 2).contiguous()


def _heads_from_linear_out(w: torch.Tensor, n: int, d_head: int) -> torch.Tensor:
    """``nn.Linear`` weight ``[d_model, n*d_head]`` -> ``W_O`` ``[n, d_head, d_model]``."""
    return w.t().reshape(n, d_head, w.shape[0]).contiguous()


def _expand_kv(t: torch.Tensor | None, n_rep: int) -> torch.Tensor | None:
    """Repeat K/V heads for the query heads sharing them (transformers' ``repeat_kv``)."""
    if t is None or n_rep == 1:
        return t
    return t.repeat_interleave(n_rep, dim=0)


# --------------------------------------------------------------------------- base class
class Adapter:
    """Maps one architecture's stored attention tensors to canonical weights (METRICS.md §1).

    Parameters
    ----------
    config : dict
        The checkpoint's ``config.json``, parsed.
    tensor_names : sequence of str
        Every tensor name the checkpoint holds (any prefix such as ``gpt_neox.`` or
        ``model.`` is detected from them).
    source : str
        Where the config came from (a path or ``hf:ORG/NAME@rev``), named in every error.
    locate : callable, optional
        ``name -> file`` holding that tensor, so that shape errors name the weight file.

    Raises
    ------
    ArchitectureError
        A config field is missing or inconsistent, or an attention tensor is missing.

    Examples
    --------
    >>> cfg = {"model_type": "gpt2", "n_embd": 8, "n_head": 2, "n_layer": 1}
    >>> names = ["h.0.attn.c_attn.weight", "h.0.attn.c_attn.bias",
    ...          "h.0.attn.c_proj.weight", "h.0.attn.c_proj.bias"]
    >>> a = adapter_for(cfg, names, source="config.json")
    >>> a.shape.d_head, a.layer_tensor_names(0)[0]
    (4, 'h.0.attn.c_attn.weight')
    """

    #: canonical architecture name (a ``model_type``)
    architecture: ClassVar[str] = ""
    #: ``model_type`` values this adapter handles
    model_types: ClassVar[tuple[str, ...]] = ()
    #: class names in ``config["architectures"]`` this adapter handles when model_type is absent
    class_names: ClassVar[tuple[str, ...]] = ()
    #: layer-0 attention tensor whose name reveals the prefix (``{l}`` = layer)
    probe: ClassVar[str] = ""

    def __init__(self, config: dict, tensor_names: Sequence[str], *, source: str,
                 locate: Callable[[str], str] | None = None) -> None:
        self.config = dict(config)
        self.source = str(source)
        model_type = self.config.get("model_type")
        if model_type in type(self).model_types:
            self.architecture = model_type  # e.g. "xlm-roberta" read by the RoBERTa adapter
        self._locate = locate
        names = list(tensor_names)
        self._names = frozenset(names)
        self.shape: ModelShape = self._read_shape()
        self.prefix: str = self._find_prefix(names)
        self._check_present()

    # ---- config access
    def _cfg(self, *keys: str, default: object = ...) -> object:
        """First present key of ``keys`` in the config (else ``default`` or an error)."""
        for key in keys:
            if key in self.config and self.config[key] is not None:
                return self.config[key]
        if default is not ...:
            return default
        raise ArchitectureError(
            f"{self.source}: config has no {' or '.join(repr(k) for k in keys)}, "
            f"which a {self.architecture!r} checkpoint needs"
        )

    def _int(self, *keys: str, default: object = ...) -> int:
        value = self._cfg(*keys, default=default)
        if not isinstance(value, int) or isinstance(value, bool) or value <= 0:
            raise ArchitectureError(
                f"{self.source}: config field {keys[0]!r} must be a positive integer, got {value!r}"
            )
        return value

    def _read_shape(self) -> ModelShape:  # pragma: no cover - abstract
        raise NotImplementedError

    def _heads(self, d_model: int, n_heads: int) -> int:
        if d_model % n_heads:
            raise ArchitectureError(
                f"{self.source}: hidden size {d_model} is not divisible by {n_heads} heads"
            )
        return d_model // n_heads

    # ---- names
    def _find_prefix(self, names: Sequence[str]) -> str:
        suffix = self.probe.format(l=0)
        prefixes = sorted({n[: -len(suffix)] for n in names if n.endswith(suffix)
                           and (len(n) == len(suffix) or n[-len(suffix) - 1] == ".")})
        if len(prefixes) == 1:
            return prefixes[0]
        if not prefixes:
            hint = did_you_mean(suffix, names)
            some = ", ".join(list(names)[:5])
            raise ArchitectureError(
                f"{self.source}: no attention tensor named '*{suffix}' for architecture "
                f"{self.architecture!r}; the checkpoint holds {len(names)} tensors "
                f"(e.g. {some}).{hint}"
            )
        raise ArchitectureError(
            f"{self.source}: ambiguous tensor prefixes {prefixes} for '*{suffix}'"
        )

    def _roles(self, layer: int) -> dict[str, tuple[str, bool]]:  # pragma: no cover - abstract
        """role -> (unprefixed tensor name, required) for one layer's attention tensors."""
        raise NotImplementedError

    def _norm_names(self, layer: int) -> tuple[str, str | None]:  # pragma: no cover - abstract
        """(weight, bias or None) of the norm whose output enters this layer's attention."""
        raise NotImplementedError

    def _name(self, name: str) -> str:
        return self.prefix + name

    def _present(self, layer: int) -> dict[str, str]:
        out = {}
        for role, (name, required) in self._roles(layer).items():
            full = self._name(name)
            if full in self._names:
                out[role] = full
            elif required:
                raise ArchitectureError(
                    f"{self.source}: attention tensor {full!r} of layer {layer} is missing "
                    f"(architecture {self.architecture!r}, {self.shape.n_layers} layers)."
                    f"{did_you_mean(full, self._names)}"
                )
        return out

    def _check_present(self) -> None:
        for layer in range(self.shape.n_layers):
            self._present(layer)

    def _norm_present(self, layer: int) -> list[str]:
        weight, bias = self._norm_names(layer)
        out = []
        for name, required in ((weight, True), (bias, False)):
            if name is None:
                continue
            full = self._resolve_legacy(self._name(name))
            if full in self._names:
                out.append(full)
            elif required:
                raise ArchitectureError(
                    f"{self.source}: pre-attention norm tensor {full!r} of layer {layer} is "
                    f"missing; fold_ln=True needs it.{did_you_mean(full, self._names)}"
                )
        return out

    def _resolve_legacy(self, name: str) -> str:
        """LayerNorm ``weight``/``bias`` may be stored under the legacy ``gamma``/``beta``."""
        if name in self._names:
            return name
        for new, old in ((".weight", ".gamma"), (".bias", ".beta")):
            if name.endswith(new) and name[: -len(new)] + old in self._names:
                return name[: -len(new)] + old
        return name

    def layer_tensor_names(self, layer: int, *, fold_ln: bool = False) -> list[str]:
        """Every tensor :meth:`layer_weights` reads for ``layer`` (attention, plus the norm if folding).

        Examples
        --------
        >>> cfg = {"model_type": "gpt2", "n_embd": 8, "n_head": 2, "n_layer": 1}
        >>> names = ["h.0.attn.c_attn.weight", "h.0.attn.c_proj.weight", "h.0.ln_1.weight"]
        >>> adapter_for(cfg, names, source="c.json").layer_tensor_names(0, fold_ln=True)
        ['h.0.attn.c_attn.weight', 'h.0.attn.c_proj.weight', 'h.0.ln_1.weight']
        """
        self._check_layer(layer)
        names = list(self._present(layer).values())
        if fold_ln:
            names += [n for n in self._norm_present(layer) if n not in names]
        return names

    def attention_tensor_names(self) -> list[str]:
        """The attention tensors of every layer, in layer order (what a hub fetch needs).

        Examples
        --------
        >>> cfg = {"model_type": "gpt2", "n_embd": 8, "n_head": 2, "n_layer": 2}
        >>> names = [f"h.{l}.attn.{m}.weight" for l in (0, 1) for m in ("c_attn", "c_proj")]
        >>> len(adapter_for(cfg, names, source="c.json").attention_tensor_names())
        4
        """
        return [n for layer in range(self.shape.n_layers) for n in self.layer_tensor_names(layer)]

    def norm_tensor_names(self, layer: int) -> list[str]:
        """Weight (and bias) of the norm whose output is ``layer``'s attention input.

        Pre-LN decoders: the layer's own input norm; post-LN encoders (BERT, MPNet): the
        previous layer's output LayerNorm, or the embeddings' LayerNorm for layer 0.

        Examples
        --------
        >>> cfg = {"model_type": "bert", "hidden_size": 8, "num_attention_heads": 2,
        ...        "num_hidden_layers": 2}
        >>> names = [f"encoder.layer.{l}.attention.{m}.weight" for l in (0, 1) for m in
        ...          ("self.query", "self.key", "self.value", "output.dense")]
        >>> names += ["embeddings.LayerNorm.weight", "encoder.layer.0.output.LayerNorm.weight"]
        >>> adapter_for(cfg, names, source="c.json").norm_tensor_names(1)
        ['encoder.layer.0.output.LayerNorm.weight']
        """
        self._check_layer(layer)
        return self._norm_present(layer)

    def _check_layer(self, layer: int) -> None:
        if not isinstance(layer, int) or not 0 <= layer < self.shape.n_layers:
            raise ArchitectureError(
                f"{self.source}: layer {layer!r} out of range; the model has "
                f"{self.shape.n_layers} layers (0..{self.shape.n_layers - 1})"
            )

    # ---- reading
    def _where(self, name: str) -> str:
        if self._locate is not None:
            try:
                return str(self._locate(name))
            except Exception:  # noqa: BLE001 - locating is only for the message
                pass
        return self.source

    def _read(self, get: Getter, name: str, expected: tuple[int, ...]) -> torch.Tensor:
        t = get(name)
        if not isinstance(t, torch.Tensor):
            raise ArchitectureError(f"{self._where(name)}: tensor {name!r} is not a tensor ({type(t).__name__})")
        if tuple(t.shape) != tuple(expected):
            s = self.shape
            raise ArchitectureError(
                f"{self._where(name)}: tensor {name!r} has shape {tuple(t.shape)}, expected "
                f"{tuple(expected)} for {s.architecture} with d_model={s.d_model}, "
                f"n_heads={s.n_heads}, n_kv_heads={s.n_kv_heads}, d_head={s.d_head} "
                f"(config {self.source})"
            )
        return t

    def _raw(self, layer: int, get: Getter, names: dict[str, str]) -> LayerWeights:  # pragma: no cover
        raise NotImplementedError

    def layer_weights(self, layer: int, get: Getter, *, fold_ln: bool = False) -> LayerWeights:
        """Canonical weights of one layer (METRICS.md §1), reading only its tensors via ``get``.

        Parameters
        ----------
        layer : int
        get : callable
            ``name -> torch.Tensor`` (e.g. :meth:`lie_stats.sources.Checkpoint.get_tensor`).
        fold_ln : bool
            Fold the pre-attention norm's gain ``g`` (and bias ``beta``) into the read maps:
            ``W' = diag(g) W``, ``b' = b + beta W``, so that ``n W' + b'`` equals
            ``x W + b`` for ``x = n * g + beta`` and ``n`` the normalized residual.

        Returns
        -------
        LayerWeights

        Raises
        ------
        ArchitectureError
            A tensor has the wrong shape (names tensor, expected and actual shape, file).

        Examples
        --------
        >>> cfg = {"model_type": "gpt2", "n_embd": 4, "n_head": 2, "n_layer": 1}
        >>> t = {"h.0.attn.c_attn.weight": torch.arange(48.).reshape(4, 12),
        ...      "h.0.attn.c_proj.weight": torch.eye(4)}
        >>> w = adapter_for(cfg, list(t), source="c.json").layer_weights(0, t.__getitem__)
        >>> w.W_Q.shape, w.W_K[1, 0].tolist()   # K block of head 1: columns 6, 7
        (torch.Size([2, 4, 2]), [6.0, 7.0])
        """
        self._check_layer(layer)
        lw = self._raw(layer, get, self._present(layer))
        if fold_ln:
            lw = self._fold(layer, lw, get)
        return lw

    # ---- layer-norm folding
    def _norm_gain(self, weight: torch.Tensor) -> torch.Tensor:
        """The multiplier the norm applies, given its stored weight (``1 + w`` for Gemma)."""
        return weight

    def _fold(self, layer: int, lw: LayerWeights, get: Getter) -> LayerWeights:
        names = self._norm_present(layer)
        d = self.shape.d_model
        weight = self._read(get, names[0], (d,))
        bias = self._read(get, names[1], (d,)) if len(names) > 1 else None
        dt = torch.float64 if lw.W_Q.dtype == torch.float64 else torch.float32
        gain = self._norm_gain(weight.to(dt))
        out = {}
        for x in ("Q", "K", "V"):
            w = getattr(lw, "W_" + x).to(dt)
            b = getattr(lw, "b_" + x)
            b = None if b is None else b.to(dt)
            if bias is not None:
                shift = torch.einsum("d,hde->he", bias.to(dt), w)
                b = shift if b is None else b + shift
            out["W_" + x] = gain[None, :, None] * w
            out["b_" + x] = b
        return LayerWeights(layer, out["W_Q"], out["W_K"], out["W_V"], lw.W_O,
                            out["b_Q"], out["b_K"], out["b_V"], lw.b_O, dict(lw.extras))

    # ---- scaling
    def attention_scale(self, layer: int) -> float:
        """Factor the logits ``q . k`` are multiplied by before the softmax.

        Examples
        --------
        >>> cfg = {"model_type": "gpt2", "n_embd": 8, "n_head": 2, "n_layer": 1}
        >>> names = ["h.0.attn.c_attn.weight", "h.0.attn.c_proj.weight"]
        >>> adapter_for(cfg, names, source="c.json").attention_scale(0)
        0.5
        """
        self._check_layer(layer)
        return self.shape.d_head ** -0.5

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.shape}, prefix={self.prefix!r}, source={self.source!r})"


# --------------------------------------------------------------------------- GPT-NeoX
class GPTNeoXAdapter(Adapter):
    """GPT-NeoX / Pythia: fused ``query_key_value`` with output dim ``[n_heads, 3, d_head]``."""

    architecture = "gpt_neox"
    model_types = ("gpt_neox",)
    class_names = ("GPTNeoXForCausalLM", "GPTNeoXModel")
    probe = "layers.{l}.attention.query_key_value.weight"

    def _read_shape(self) -> ModelShape:
        d = self._int("hidden_size")
        h = self._int("num_attention_heads")
        dh = self._heads(d, h)
        rope = self._cfg("rope_parameters", "rope_scaling", default={}) or {}
        frac = self._cfg("rotary_pct", default=None)
        if frac is None:
            frac = rope.get("partial_rotary_factor", 0.25) if isinstance(rope, dict) else 0.25
        rotary_ndims = int(dh * float(frac))
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
        wo = _heads_from_linear_out(self._read(get, names["o_w"], (d, d)), h, dh)
        if "o_b" in names:
            bo = self._read(get, names["o_b"], (d,))
        return LayerWeights(layer, wq, wk, wv, wo, bq, bk, bv, bo)


# --------------------------------------------------------------------------- GPT-2
class GPT2Adapter(Adapter):
    """GPT-2: ``Conv1D`` ``c_attn`` (``[d_model, 3 d_model]``, blocks Q | K | V) and ``c_proj``."""

    architecture = "gpt2"
    model_types = ("gpt2",)
    class_names = ("GPT2LMHeadModel", "GPT2Model")
    probe = "h.{l}.attn.c_attn.weight"

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


# --------------------------------------------------------------------------- Llama family
class LlamaAdapter(Adapter):
    """Llama (SmolLM2), Mistral, Qwen2: ``self_attn.{q,k,v,o}_proj`` with grouped-query attention."""

    architecture = "llama"
    model_types = ("llama",)
    class_names = ("LlamaForCausalLM", "LlamaModel")
    probe = "layers.{l}.self_attn.q_proj.weight"
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
        wq = _heads_from_linear_in(self._read(get, names["q_w"], (h * dh, d)), h, dh)
        wk = _heads_from_linear_in(self._read(get, names["k_w"], (kv * dh, d)), kv, dh)
        wv = _heads_from_linear_in(self._read(get, names["v_w"], (kv * dh, d)), kv, dh)
        wo = _heads_from_linear_out(self._read(get, names["o_w"], (d, h * dh)), h, dh)

        def bias(role: str, n: int) -> torch.Tensor | None:
            if role not in names:
                return None
            return self._read(get, names[role], (n * dh,)).reshape(n, dh)

        bq, bk, bv = bias("q_b", h), bias("k_b", kv), bias("v_b", kv)
        bo = self._read(get, names["o_b"], (d,)) if "o_b" in names else None
        extras = {}
        if self.qk_norm:
            extras = {r: self._read(get, names[r], (dh,)) for r in ("q_norm", "k_norm")}
        return LayerWeights(layer, wq, _expand_kv(wk, rep), _expand_kv(wv, rep), wo,
                            bq, _expand_kv(bk, rep), _expand_kv(bv, rep), bo, extras)


class MistralAdapter(LlamaAdapter):
    """Mistral: the Llama layout (no biases), optional sliding window."""

    architecture = "mistral"
    model_types = ("mistral",)
    class_names = ("MistralForCausalLM", "MistralModel")


class Qwen2Adapter(LlamaAdapter):
    """Qwen2: the Llama layout with q/k/v biases; sliding window only with ``use_sliding_window``."""

    architecture = "qwen2"
    model_types = ("qwen2",)
    class_names = ("Qwen2ForCausalLM", "Qwen2Model")

    def _sliding(self) -> bool:
        return bool(self._cfg("use_sliding_window", default=False)) and super()._sliding()


class Qwen3Adapter(Qwen2Adapter):
    """Qwen3: the Llama layout with per-head query/key RMS norms (gain ``w``)."""

    architecture = "qwen3"
    model_types = ("qwen3",)
    class_names = ("Qwen3ForCausalLM", "Qwen3Model")
    qk_norm = True


class Gemma3TextAdapter(LlamaAdapter):
    """Gemma3 (text): Llama layout, per-head q/k norms with gain ``1 + w``, query_pre_attn_scalar."""

    architecture = "gemma3_text"
    model_types = ("gemma3_text",)
    class_names = ("Gemma3ForCausalLM", "Gemma3TextModel")
    qk_norm = True

    def _read_shape(self) -> ModelShape:
        if "head_dim" not in self.config:
            self.config["head_dim"] = 256  # transformers' Gemma3TextConfig default
        return super()._read_shape()

    def _extras(self) -> tuple[str, ...]:
        extras = ["rotary", "qk_norm", "scaled_by_query_pre_attn_scalar"]
        types = self._cfg("layer_types", default=None)
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
        scalar = self._cfg("query_pre_attn_scalar", default=256)
        return float(scalar) ** -0.5


# --------------------------------------------------------------------------- encoders
class BertAdapter(Adapter):
    """BERT (MiniLM): ``attention.self.{query,key,value}``, ``attention.output.dense``; post-LN."""

    architecture = "bert"
    model_types = ("bert",)
    class_names = ("BertModel", "BertForMaskedLM", "BertForPreTraining")
    probe = "encoder.layer.{l}.attention.self.query.weight"
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
        ws = [_heads_from_linear_in(self._read(get, names[x + "_w"], (d, d)), h, dh) for x in "qkv"]
        wo = _heads_from_linear_out(self._read(get, names["o_w"], (d, d)), h, dh)
        bs = [self._read(get, names[x + "_b"], (d,)).reshape(h, dh) if x + "_b" in names else None
              for x in "qkv"]
        bo = self._read(get, names["o_b"], (d,)) if "o_b" in names else None
        return LayerWeights(layer, *ws, wo, *bs, bo)


class RobertaAdapter(BertAdapter):
    """RoBERTa / XLM-R: the BERT layout (prefix ``roberta.`` when saved with a head)."""

    architecture = "roberta"
    model_types = ("roberta", "xlm-roberta")
    class_names = ("RobertaModel", "RobertaForMaskedLM", "XLMRobertaModel", "XLMRobertaForMaskedLM")


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


# --------------------------------------------------------------------------- registry
_ADAPTERS: tuple[type[Adapter], ...] = (
    GPTNeoXAdapter, GPT2Adapter, LlamaAdapter, MistralAdapter, Qwen2Adapter, Qwen3Adapter,
    BertAdapter, RobertaAdapter, MPNetAdapter, Gemma3TextAdapter,
)
_BY_MODEL_TYPE: dict[str, type[Adapter]] = {t: a for a in _ADAPTERS for t in a.model_types}
_BY_CLASS: dict[str, type[Adapter]] = {c: a for a in _ADAPTERS for c in a.class_names}

#: Every ``model_type`` an adapter exists for.
SUPPORTED_ARCHITECTURES: tuple[str, ...] = tuple(_BY_MODEL_TYPE)


def adapter_for(config: dict, tensor_names: Sequence[str], *, source: str,
                locate: Callable[[str], str] | None = None) -> Adapter:
    """The adapter for a checkpoint, chosen by ``config["model_type"]`` (METRICS.md §1).

    Parameters
    ----------
    config : dict
        Parsed ``config.json``.
    tensor_names : sequence of str
        Names of every tensor in the checkpoint (prefixes are detected).
    source : str
        The config file (or hub location), named in errors.
    locate : callable, optional
        ``name -> weight file``, for error messages.

    Raises
    ------
    ArchitectureError
        Unknown architecture (the message lists :data:`SUPPORTED_ARCHITECTURES`), or missing
        attention tensors.

    Examples
    --------
    >>> adapter_for({"model_type": "t5"}, [], source="t5/config.json")
    Traceback (most recent call last):
    ...
    lie_stats.errors.ArchitectureError: t5/config.json: architecture 'model_type': 't5' is not supported; supported: gpt_neox, gpt2, llama, mistral, qwen2, qwen3, bert, roberta, xlm-roberta, mpnet, gemma3_text.
    """
    if not isinstance(config, dict):
        raise ArchitectureError(f"{source}: config must be a JSON object, got {type(config).__name__}")
    model_type = config.get("model_type")
    cls = _BY_MODEL_TYPE.get(model_type) if isinstance(model_type, str) else None
    if cls is None and model_type is None:
        for name in config.get("architectures") or ():
            cls = _BY_CLASS.get(name)
            if cls is not None:
                break
    if cls is None:
        what = (f"'model_type': {model_type!r}" if model_type is not None
                else f"'architectures': {config.get('architectures')!r} (no model_type)")
        hint = did_you_mean(model_type, SUPPORTED_ARCHITECTURES) if isinstance(model_type, str) else ""
        raise ArchitectureError(
            f"{source}: architecture {what} is not supported; supported: "
            f"{', '.join(SUPPORTED_ARCHITECTURES)}.{hint}"
        )
    return cls(config, tensor_names, source=source, locate=locate)


# --------------------------------------------------------------------------- parameter categories
# The parameter-delta map (METRICS.md §6.4) needs every tensor's category, not only the
# attention tensors'. Attention tensors are split by the adapters' own layer_weights (so a
# fused QKV tensor is cut into Q, K and V exactly as the proven adapters cut it); every other
# tensor is named by the patterns below (regular expressions over the full stored name; the
# group ``l`` is the layer). Categories are lie_stats.schema.PARAM_CATEGORIES.

_L = r"\.(?P<l>\d+)\."
#: Non-parameter buffers some checkpoints store (causal masks, rotary frequencies): skipped.
_BUFFERS = (r"(^|\.)attention\.(bias|masked_bias)$", r"(^|\.)attn\.(bias|masked_bias)$",
            r"rotary_emb\.inv_freq$", r"(^|\.)position_ids$")
_PARAM_PATTERNS: dict[str, tuple[tuple[str, str], ...]] = {
    "gpt_neox": (
        (r"(^|\.)embed_in\.", "embedding"),
        (r"layers" + _L + r"input_layernorm\.", "norm_attn"),
        (r"layers" + _L + r"post_attention_layernorm\.", "norm_mlp"),
        (r"layers" + _L + r"mlp\.dense_h_to_4h\.", "mlp_in"),
        (r"layers" + _L + r"mlp\.dense_4h_to_h\.", "mlp_out"),
        (r"(^|\.)final_layer_norm\.", "norm_final"),
        (r"(^|\.)embed_out\.", "unembedding"),
    ),
    "gpt2": (
        (r"(^|\.)(wte|wpe)\.", "embedding"),
        (r"(^|\.)h" + _L + r"ln_1\.", "norm_attn"),
        (r"(^|\.)h" + _L + r"ln_2\.", "norm_mlp"),
        (r"(^|\.)h" + _L + r"mlp\.c_fc\.", "mlp_in"),
        (r"(^|\.)h" + _L + r"mlp\.c_proj\.", "mlp_out"),
        (r"(^|\.)ln_f\.", "norm_final"),
        (r"(^|\.)lm_head\.", "unembedding"),
    ),
    "llama": (  # also mistral, qwen2, qwen3
        (r"(^|\.)embed_tokens\.", "embedding"),
        (r"layers" + _L + r"input_layernorm\.", "norm_attn"),
        (r"layers" + _L + r"post_attention_layernorm\.", "norm_mlp"),  # the MLP's input norm
        (r"layers" + _L + r"mlp\.(gate_proj|up_proj)\.", "mlp_in"),
        (r"layers" + _L + r"mlp\.down_proj\.", "mlp_out"),
        (r"(^|\.)norm\.", "norm_final"),
        (r"(^|\.)lm_head\.", "unembedding"),
    ),
    "gemma3_text": (  # Gemma3's post_attention_layernorm normalizes the attention output
        (r"(^|\.)embed_tokens\.", "embedding"),
        (r"layers" + _L + r"(input_layernorm|post_attention_layernorm)\.", "norm_attn"),
        (r"layers" + _L + r"(pre|post)_feedforward_layernorm\.", "norm_mlp"),
        (r"layers" + _L + r"mlp\.(gate_proj|up_proj)\.", "mlp_in"),
        (r"layers" + _L + r"mlp\.down_proj\.", "mlp_out"),
        (r"(^|\.)norm\.", "norm_final"),
        (r"(^|\.)lm_head\.", "unembedding"),
    ),
    "bert": (  # also roberta, xlm-roberta, mpnet (post-LN encoders, MLM heads)
        (r"(^|\.)embeddings\.(word|position|token_type)_embeddings\.", "embedding"),
        (r"(^|\.)embeddings\.LayerNorm\.", "norm_embedding"),
        (r"layer" + _L + r"attention\.(output\.)?LayerNorm\.", "norm_attn"),
        (r"layer" + _L + r"output\.LayerNorm\.", "norm_mlp"),
        (r"layer" + _L + r"intermediate\.dense\.", "mlp_in"),
        (r"layer" + _L + r"output\.dense\.", "mlp_out"),
        (r"(^|\.)(cls\.predictions\.(decoder\.|bias$)|lm_head\.(decoder\.|bias$))", "unembedding"),
    ),
}
def _check_categories() -> None:
    from .schema import PARAM_CATEGORIES

    for family, patterns in _PARAM_PATTERNS.items():
        for _, category in patterns:
            if category not in PARAM_CATEGORIES:  # pragma: no cover - a typo fails at import
                raise ArchitectureError(f"parameter pattern of {family!r} names unknown category "
                                        f"{category!r}.{did_you_mean(category, PARAM_CATEGORIES)}")


_check_categories()
_PARAM_FAMILY = {"gpt_neox": "gpt_neox", "gpt2": "gpt2", "llama": "llama", "mistral": "llama",
                 "qwen2": "llama", "qwen3": "llama", "gemma3_text": "gemma3_text",
                 "bert": "bert", "roberta": "bert", "xlm-roberta": "bert", "mpnet": "bert"}
#: Categories that exist once per layer (the others exist once per model).
LAYER_CATEGORIES = ("attn_q", "attn_k", "attn_v", "attn_o", "mlp_in", "mlp_out",
                    "norm_attn", "norm_mlp")


def param_category(adapter: Adapter, name: str) -> tuple[str, int | None] | None:
    """Category and layer of one stored tensor that is not an attention tensor (METRICS.md §6.4).

    Attention tensors (:meth:`Adapter.layer_tensor_names`) are categorized by
    :func:`parameter_parts`, which splits fused ones; this maps the rest by the adapter
    family's name patterns. A tensor no pattern claims is ``("other", None)``.

    Parameters
    ----------
    adapter : Adapter
        The checkpoint's adapter (its architecture picks the patterns).
    name : str
        The full stored tensor name.

    Returns
    -------
    (category, layer) or None
        ``layer`` is None for per-model categories; None for non-parameter buffers
        (causal masks, rotary frequencies), which the map skips.

    Examples
    --------
    >>> cfg = {"model_type": "gpt_neox", "hidden_size": 8, "num_attention_heads": 2,
    ...        "num_hidden_layers": 1}
    >>> a = adapter_for(cfg, ["gpt_neox.layers.0.attention.query_key_value.weight",
    ...                       "gpt_neox.layers.0.attention.dense.weight"], source="c.json")
    >>> param_category(a, "gpt_neox.layers.0.mlp.dense_4h_to_h.weight")
    ('mlp_out', 0)
    >>> param_category(a, "embed_out.weight")
    ('unembedding', None)
    """
    import re

    for pattern in _BUFFERS:
        if re.search(pattern, name):
            return None
    family = _PARAM_FAMILY.get(adapter.architecture, "")
    for pattern, category in _PARAM_PATTERNS.get(family, ()):
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
