"""The adapter base class and the canonical weights it produces (METRICS.md §1).

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

This module holds what every architecture shares: the data classes (:class:`ModelShape`,
:class:`LayerWeights`), the meaning of each attention extra (:data:`ATTENTION_EXTRAS`), the
reshapes of ``nn.Linear`` weights into heads and the grouped-query expansion, and the
:class:`Adapter` base class (config access, prefix detection, presence and shape checks,
layer-norm folding, the logit scale). A family module subclasses :class:`Adapter` and declares
its model types, tensor names, layout and parameter patterns (see :mod:`lie_stats.extraction.architectures`).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import ClassVar

import torch

from ...errors import ArchitectureError, did_you_mean

__all__ = [
    "ATTENTION_EXTRAS",
    "ModelShape",
    "LayerWeights",
    "Getter",
    "Adapter",
    "LAYER_GROUP",
    "BUFFER_PATTERNS",
    "heads_from_linear_in",
    "heads_from_linear_out",
    "expand_kv",
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
def heads_from_linear_in(w: torch.Tensor, n: int, d_head: int) -> torch.Tensor:
    """``nn.Linear`` weight ``[n*d_head, d_model]`` (y = x w^T) -> ``[n, d_model, d_head]``.

    Examples
    --------
    >>> w = torch.arange(12.).reshape(4, 3)        # 2 heads of width 2 over d_model = 3
    >>> heads_from_linear_in(w, 2, 2)[1].tolist()  # head 1 = rows 2, 3, transposed
    [[6.0, 9.0], [7.0, 10.0], [8.0, 11.0]]
    """
    return w.reshape(n, d_head, w.shape[-1]).transpose(1, 2).contiguous()


def heads_from_linear_out(w: torch.Tensor, n: int, d_head: int) -> torch.Tensor:
    """``nn.Linear`` weight ``[d_model, n*d_head]`` -> ``W_O`` ``[n, d_head, d_model]``.

    Examples
    --------
    >>> w = torch.arange(12.).reshape(3, 4)        # d_model = 3 from 2 heads of width 2
    >>> heads_from_linear_out(w, 2, 2)[1].tolist()  # head 1 = columns 2, 3, transposed
    [[2.0, 6.0, 10.0], [3.0, 7.0, 11.0]]
    """
    return w.t().reshape(n, d_head, w.shape[0]).contiguous()


def expand_kv(t: torch.Tensor | None, n_rep: int) -> torch.Tensor | None:
    """Repeat K/V heads for the query heads sharing them (transformers' ``repeat_kv``).

    Query head ``h`` uses K/V head ``h // n_rep`` (``repeat_interleave``, not tiling).

    Examples
    --------
    >>> expand_kv(torch.tensor([[0.], [1.]]), 2).flatten().tolist()
    [0.0, 0.0, 1.0, 1.0]
    >>> expand_kv(None, 2) is None
    True
    """
    if t is None or n_rep == 1:
        return t
    return t.repeat_interleave(n_rep, dim=0)


#: The group in a parameter pattern that captures the layer index: ``".<l>."``.
LAYER_GROUP = r"\.(?P<l>\d+)\."

#: Non-parameter buffers some checkpoints store (causal masks, rotary frequencies); the
#: parameter-delta map skips them. The default of :attr:`Adapter.buffer_patterns`.
BUFFER_PATTERNS: tuple[str, ...] = (
    r"(^|\.)attention\.(bias|masked_bias)$", r"(^|\.)attn\.(bias|masked_bias)$",
    r"rotary_emb\.inv_freq$", r"(^|\.)position_ids$",
)


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

    Notes
    -----
    A family module subclasses this class, sets the class attributes below (``architecture``,
    ``model_types``, ``class_names``, ``probe``, ``param_patterns``), implements
    ``_read_shape`` (config -> :class:`ModelShape`), ``_roles`` (role -> tensor name of one
    layer), ``_norm_names`` (the pre-attention norm) and ``_raw`` (stored tensors ->
    :class:`LayerWeights`), overrides ``attention_scale`` or ``_norm_gain`` where the
    architecture differs, and registers the class with
    :func:`lie_stats.extraction.architectures.register`.

    Examples
    --------
    >>> from lie_stats.extraction.architectures import adapter_for
    >>> cfg = {"model_type": "gpt2", "n_embd": 8, "n_head": 2, "n_layer": 1}
    >>> names = ["h.0.attn.c_attn.weight", "h.0.attn.c_attn.bias",
    ...          "h.0.attn.c_proj.weight", "h.0.attn.c_proj.bias"]
    >>> a = adapter_for(cfg, names, source="config.json")
    >>> a.shape.d_head, a.layer_tensor_names(0)[0]
    (4, 'h.0.attn.c_attn.weight')
    """

    #: canonical architecture name (a ``model_type``)
    architecture: ClassVar[str] = ""
    #: ``model_type`` values this adapter handles (each registered to this class only)
    model_types: ClassVar[tuple[str, ...]] = ()
    #: class names in ``config["architectures"]`` this adapter handles when model_type is absent
    class_names: ClassVar[tuple[str, ...]] = ()
    #: layer-0 attention tensor whose name reveals the prefix (``{l}`` = layer)
    probe: ClassVar[str] = ""
    #: ``(regular expression, category)`` for every non-attention tensor (METRICS.md §6.4):
    #: searched over the full stored name in order, first match wins; the group ``l``
    #: (:data:`LAYER_GROUP`) is the layer; categories are ``lie_stats.schema.PARAM_CATEGORIES``
    param_patterns: ClassVar[tuple[tuple[str, str], ...]] = ()
    #: names of stored buffers that are not parameters (skipped by the parameter-delta map)
    buffer_patterns: ClassVar[tuple[str, ...]] = BUFFER_PATTERNS

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
        self._check_not_quantized()
        self.shape: ModelShape = self._read_shape()
        self.prefix: str = self._find_prefix(names)
        self._check_depth(names)
        self._check_present()

    @classmethod
    def config_shape(cls, config: dict, *, source: str) -> ModelShape:
        """The :class:`ModelShape` that ``config`` declares, read from the config alone (no
        tensor names, no weights): what options can be checked against before a run reads
        any weight.

        Examples
        --------
        >>> from lie_stats.extraction.architectures import GPT2Adapter
        >>> GPT2Adapter.config_shape({"n_embd": 8, "n_head": 2, "n_layer": 3}, source="c.json").n_layers
        3
        """
        self = cls.__new__(cls)
        self.config = dict(config)
        self.source = str(source)
        if self.config.get("model_type") in cls.model_types:
            self.architecture = self.config["model_type"]
        self._check_not_quantized()
        return self._read_shape()

    # ---- config against weights
    def _check_not_quantized(self) -> None:
        quant = self.config.get("quantization_config")
        if quant:
            method = quant.get("quant_method", "unnamed") if isinstance(quant, dict) else quant
            bits = ""
            if isinstance(quant, dict):
                bits = ", ".join(k for k in ("load_in_8bit", "load_in_4bit") if quant.get(k))
            raise ArchitectureError(
                f"{self.source}: the checkpoint is quantized (quantization_config: quant_method "
                f"{method!r}{', ' + bits if bits else ''}); its weights are integer codes and "
                f"scales, not the matrices the metrics are defined on. Expected a float "
                f"checkpoint (float32, float16 or bfloat16): extract the unquantized model."
            )

    def _layer_field(self) -> str:
        """The config field the depth was read from (for messages)."""
        for key in ("num_hidden_layers", "n_layer", "num_layers", "n_layers"):
            if self.config.get(key) == self.shape.n_layers:
                return key
        return "num_hidden_layers"

    def _check_depth(self, names: Sequence[str]) -> None:
        """The config's depth against the layers whose attention tensors the weights hold."""
        import re

        pattern = re.compile(re.escape(self.prefix) + re.escape(self.probe).replace(r"\{l\}", r"(\d+)") + "$")
        present = sorted({int(m.group(1)) for n in names if (m := pattern.match(n))})
        n = self.shape.n_layers
        if present and present != list(range(n)):
            example = self.prefix + self.probe.format(l=present[-1] if present[-1] >= n else n - 1)
            where = self._where(self.prefix + self.probe.format(l=present[0]))
            held = (f"layers 0..{present[-1]} ({len(present)})" if present == list(range(len(present)))
                    else f"layers {present}")
            raise ArchitectureError(
                f"{self.source}: config field {self._layer_field()!r} is {n}, but the weights "
                f"({where}) hold attention tensors of {held}; expected them to agree (e.g. "
                f"{example!r} {'is there' if present[-1] >= n else 'is missing'}). A config of "
                f"another model, or incomplete weights?"
            )

    def _fraction(self, key: str, value: object) -> float:
        """A config field that is a fraction in [0, 1] (``rotary_pct``, ``partial_rotary_factor``)."""
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0.0 <= value <= 1.0:
            raise ArchitectureError(
                f"{self.source}: config field {key!r} must be a number from 0 to 1 (the fraction "
                f"of each head's dimensions that rotary embeddings rotate), got {value!r} "
                f"({type(value).__name__})"
            )
        return float(value)

    def _positive_number(self, *keys: str, default: object = ...) -> float:
        value = self._cfg(*keys, default=default)
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not value > 0:
            raise ArchitectureError(
                f"{self.source}: config field {keys[0]!r} must be a positive number, got {value!r} "
                f"({type(value).__name__})"
            )
        return float(value)

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
        if not isinstance(value, int) or isinstance(value, bool) or not 0 < value < 2**31:
            shown = repr(value) if len(repr(value)) <= 40 else repr(value)[:37] + "..."
            raise ArchitectureError(
                f"{self.source}: config field {keys[0]!r} must be a positive integer (below 2**31: "
                f"a count or a width of the model), got {shown} ({type(value).__name__})"
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
        >>> from lie_stats.extraction.architectures import adapter_for
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
        >>> from lie_stats.extraction.architectures import adapter_for
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
        >>> from lie_stats.extraction.architectures import adapter_for
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
            ``name -> torch.Tensor`` (e.g. :meth:`lie_stats.extraction.checkpoint.Checkpoint.get_tensor`).
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
        >>> from lie_stats.extraction.architectures import adapter_for
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
        >>> from lie_stats.extraction.architectures import adapter_for
        >>> cfg = {"model_type": "gpt2", "n_embd": 8, "n_head": 2, "n_layer": 1}
        >>> names = ["h.0.attn.c_attn.weight", "h.0.attn.c_proj.weight"]
        >>> adapter_for(cfg, names, source="c.json").attention_scale(0)
        0.5
        """
        self._check_layer(layer)
        return self.shape.d_head ** -0.5

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.shape}, prefix={self.prefix!r}, source={self.source!r})"

