"""Activation metrics of METRICS.md §7, the anchor / worker labels of §8 and their written-norm
variant of §9.

These need text: forward passes of a :class:`lie_stats.extraction.probe.ProbeSet` through the model's own
transformers implementation (``attn_implementation="eager"``, attention probabilities from
``output_attentions=True``), batched and streamed: each batch adds to running sums (float64)
and is dropped, so memory is one batch's attention maps, never the probe set's.

Per head, with ``a[t, s]`` the head's attention probabilities, ``x_t`` the attention block's
input at position ``t`` (the residual stream after the pre-attention norm, captured by a forward
pre-hook on the attention module) and the canonical weights of METRICS.md §1 read by the
architecture adapter from the live parameters:

=========================  ======================================================================
``sink_score``             mean of ``a[t, 0]`` over sequences and query positions ``t >= 1`` (§7.1)
``sink_argmax_fraction``   fraction of (sequence, ``t >= 1``) whose largest ``a[t, s]`` is at
                           ``s = 0`` (ties go to position 0, ``torch.argmax``'s first index) (§7.2)
``value_norm``             mean over sequences and all positions of ``||x_t W_V[h] W_O[h]||``
                           (§7.3; no bias: ``b_V`` and ``b_O`` are left out, as §1 says)
``sink_value_ratio``       ``mean_seq ||v_0|| / mean_{seq, t >= 1} ||v_t||`` with the value vector
                           ``v_t = x_t W_V[h]`` (``d_head``-dimensional, no bias) (§7.4): a ratio
                           of means; 0 when ``v_0 = 0``; NaN when every ``v_t``, ``t >= 1``, is 0;
                           under grouped-query attention, equal for heads sharing a K/V head
``written_norm``           mean over sequences and all query positions ``t`` of
                           ``||sum_s a[t, s] x_s W_V[h] W_O[h]||``: what the head writes after
                           attention (§9.1; no bias, as ``value_norm``)
``grad_alignment``         cosine between the gradient of the layer-summary objective and that of
                           the language-model loss, w.r.t. the head's slices of ``W_Q, W_K, W_V,
                           W_O`` (biases excluded) (§7.5); see :func:`activation_metrics`
``head_label``             §8 codes of :data:`lie_stats.schema.LABEL_CODES` (:func:`head_labels`)
``head_label_written``     §9.2: the same rule with ``written_norm`` in place of ``value_norm``
=========================  ======================================================================

Position 0 is the first token of every probe sequence (``[CLS]``, ``<bos>`` or the first word:
``ProbeSet.first_token``, recorded in :attr:`ActivationMetrics.attrs`).
"""

from __future__ import annotations

import os
import pathlib
from collections.abc import Callable
from typing import Any

import numpy as np
import torch

from .._io import read_json, resolve_device
from .._stop import raise_if_stopped
from .architectures import Adapter, LayerWeights, adapter_for
from ..errors import CheckpointError, MetricError, did_you_mean
from ..forms import functional_killing
from .operators import family_factors, killing_cv, killing_form, normalized_killing
from .probe import ProbeSet
from ..schema import FAMILIES, LABEL_CODES, variable_info

__all__ = [
    "OBJECTIVES",
    "ActivationMetrics",
    "activation_metrics",
    "killing_cv_torch",
    "layer_objective",
    "head_writes",
    "capture",
    "head_labels",
    "functional_killing",
    "load_eager_model",
    "sink_table",
    "sink_report",
]

V_SINK = variable_info("sink_score").name
V_ARGMAX = variable_info("sink_argmax_fraction").name
V_VNORM = variable_info("value_norm").name
V_RATIO = variable_info("sink_value_ratio").name
V_GRAD = variable_info("grad_alignment").name
V_LABEL = variable_info("head_label").name
V_WNORM = variable_info("written_norm").name
V_LABEL_W = variable_info("head_label_written").name
V_KFUNC = variable_info("killing_functional").name

#: Layer-summary objectives of METRICS.md §7.5 that have a differentiable implementation here.
OBJECTIVES = ("killing_cv",)

_MLM_SUFFIX = "ForMaskedLM"
_CAUSAL_SUFFIXES = ("ForCausalLM", "LMHeadModel")
_MASK_NAMES = ("[MASK]", "<mask>")


class ActivationMetrics(dict):
    """``{variable: numpy.ndarray [layer, head]}`` plus ``attrs``, what to record beside them.

    ``attrs`` (JSON-serializable): ``probe`` (the probe's metadata, sha256 included),
    ``first_token``, ``sink_threshold``, ``value_quantile``, ``objective``, ``family``,
    ``loss`` (``"causal_lm"``, ``"masked_lm"`` or None), ``mask_fraction``, ``mask_seed``,
    ``grad_alignment_note`` (why it is NaN, when it is), ``n_tokens``, ``definitions``.
    """

    def __init__(self, arrays: dict[str, np.ndarray], attrs: dict[str, Any]) -> None:
        super().__init__(arrays)
        self.attrs = attrs


# ----------------------------------------------------------------------------- objective
def killing_cv_torch(F: torch.Tensor, G: torch.Tensor) -> torch.Tensor:
    """``killing_cv`` (METRICS.md §4.4) of one layer, differentiable, from factors ``A = F G^T``.

    ``K[i,j] = 2k tr(A_i A_j) - 2 tr(A_i) tr(A_j)`` (§3.4, ``k = d_model``, no compression),
    ``Khat = K / sqrt(|K_ii K_jj|)``, and ``std / mean |.|`` (population std) of ``Khat`` over
    pairs ``i < j``: the traces come from ``d_head x d_head`` products only, and the rest is
    the one implementation, :func:`lie_stats.extraction.operators.killing_form`,
    :func:`~lie_stats.extraction.operators.normalized_killing` and :func:`~lie_stats.extraction.operators.killing_cv`,
    that the weight metrics use too.

    Parameters
    ----------
    F, G : torch.Tensor
        ``[n_heads, d_model, d_head]`` (:func:`lie_stats.extraction.operators.family_factors`).

    Returns
    -------
    torch.Tensor
        A scalar, with the graph to ``F`` and ``G``.

    Examples
    --------
    >>> g = torch.Generator().manual_seed(0)
    >>> W = torch.randn(4, 16, 3, generator=g, dtype=torch.float64, requires_grad=True)
    >>> cv = killing_cv_torch(W, W)
    >>> cv.backward(); tuple(W.grad.shape), bool(cv > 0)
    ((4, 16, 3), True)
    """
    H, k, _ = F.shape
    if H < 2:
        raise MetricError(f"killing_cv needs at least 2 heads per layer, got {H} (METRICS.md §4.4).")
    M = torch.einsum("idr,jds->ijrs", G, F)  # G_i^T F_j
    trAA = torch.einsum("ijrs,jisr->ij", M, M)  # tr(F_i G_i^T F_j G_j^T)
    trA = torch.diagonal(torch.diagonal(M, dim1=0, dim2=1), dim1=0, dim2=1).sum(-1)
    return killing_cv(normalized_killing(killing_form(trAA, trA, k)))


def layer_objective(w: Any, *, objective: str = "killing_cv", family: str = "Q") -> torch.Tensor:
    """The layer-summary objective of METRICS.md §7.5 as a differentiable function of ``w``.

    ``w`` has ``W_Q, W_K, W_V`` ``[H, d_model, d_head]`` and ``W_O`` ``[H, d_head, d_model]``
    (e.g. :class:`lie_stats.extraction.architectures.LayerWeights` with tensors that require grad).

    Examples
    --------
    >>> import types
    >>> g = torch.Generator().manual_seed(1)
    >>> w = types.SimpleNamespace(**{f"W_{m}": torch.randn(3, 8, 2, generator=g, dtype=torch.float64)
    ...                              for m in "QKV"}, W_O=torch.randn(3, 2, 8, generator=g, dtype=torch.float64))
    >>> round(float(layer_objective(w, family="Q")), 6) == round(float(killing_cv_torch(w.W_Q, w.W_Q)), 6)
    True
    """
    if objective not in OBJECTIVES:
        raise MetricError(
            f"Unknown objective {objective!r}.{did_you_mean(objective, OBJECTIVES)} "
            f"Differentiable objectives: {', '.join(OBJECTIVES)} (METRICS.md §7.5)."
        )
    if family not in FAMILIES:
        raise MetricError(f"Unknown operator family {family!r}.{did_you_mean(family, FAMILIES)} Known: {', '.join(FAMILIES)}.")
    F, G = family_factors(w, family)
    return killing_cv_torch(F, G)


# ----------------------------------------------------------------------------- models
def load_eager_model(folder: str | os.PathLike) -> torch.nn.Module:
    """Load a checkpoint folder with the class its config names, eager attention, eval mode.

    Falls back to ``AutoModel`` when ``config.json`` names no ``architectures``.

    Raises
    ------
    CheckpointError
        No ``config.json``, an unknown class, or a load failure.
    """
    import transformers
    from transformers.utils import logging as hf_logging

    folder = pathlib.Path(folder)
    cfg_path = folder / "config.json"
    if not cfg_path.is_file() and not cfg_path.exists():
        raise CheckpointError(f"{cfg_path}: missing; a checkpoint folder needs config.json.")
    cfg = read_json(cfg_path, error=CheckpointError, what="a JSON object (the model's configuration)")
    if not isinstance(cfg, dict):
        raise CheckpointError(f"{cfg_path}: expected a JSON object, got {type(cfg).__name__}.")
    names = cfg.get("architectures") or []
    if not (isinstance(names, list) and all(isinstance(n, str) for n in names)):
        raise CheckpointError(f"{cfg_path}: field 'architectures' is {str(names)[:40]!r}; expected a "
                              f"list of transformers class names.")
    cls = getattr(transformers, names[0], None) if names else transformers.AutoModel
    if cls is None:
        raise CheckpointError(f"{cfg_path}: architectures[0] = {names[0]!r} is not a transformers class.")
    hf_logging.disable_progress_bar()
    try:
        model = cls.from_pretrained(folder, attn_implementation="eager")
    except Exception as e:  # noqa: BLE001 - re-raised with the folder named
        raise_if_stopped()  # an interrupt wrapped in the library's own error is an interrupt
        raise CheckpointError(f"{folder}: cannot load {cls.__name__} ({type(e).__name__}: {e}).") from e
    finally:
        hf_logging.enable_progress_bar()
    return model.eval()


def _adapter(model: torch.nn.Module, source: str) -> tuple[Adapter, dict[str, torch.Tensor]]:
    params = dict(model.named_parameters(remove_duplicate=False))
    config = model.config.to_dict()
    return adapter_for(config, list(params), source=source), params


def _attention_module(model: torch.nn.Module, adapter: Adapter, layer: int) -> torch.nn.Module:
    # ``<attention module>.<projection>.weight``: the module owning the projections.
    first = adapter.layer_tensor_names(layer)[0]
    return model.get_submodule(first.rsplit(".", 2)[0])


def _ensure_eager(model: torch.nn.Module) -> None:
    impl = getattr(model.config, "_attn_implementation", None)
    if impl != "eager":
        setter = getattr(model, "set_attn_implementation", None)
        if setter is None:
            raise MetricError(
                f"The model uses attn_implementation={impl!r}, which returns no attention "
                f"probabilities; load it with attn_implementation='eager'."
            )
        setter("eager")


def _layer_weights(adapter: Adapter, layer: int, get: Callable[[str], torch.Tensor],
                   dtype: torch.dtype) -> LayerWeights:
    lw = adapter.layer_weights(layer, get)
    conv = {}
    for name in ("W_Q", "W_K", "W_V", "W_O", "b_Q", "b_K", "b_V", "b_O"):
        t = getattr(lw, name)
        conv[name] = None if t is None else t.to(dtype)
    return LayerWeights(layer, **conv, extras=lw.extras)


def capture(model: torch.nn.Module, input_ids: torch.Tensor, *, adapter: Adapter | None = None,
            ) -> tuple[list[torch.Tensor], list[torch.Tensor]]:
    """One forward pass: each layer's attention input ``x`` and attention probabilities.

    ``x[l]`` is ``[batch, seq, d_model]`` as the attention module receives it (after the
    pre-attention norm; the previous layer's output for post-LN encoders); ``attn[l]`` is
    ``[batch, n_heads, seq, seq]`` from ``output_attentions=True`` (eager attention). The model
    runs without its LM head (``model.base_model``) under ``torch.no_grad``. No padding: every
    position is a real token.

    Examples
    --------
    >>> import transformers
    >>> cfg = transformers.GPT2Config(n_embd=8, n_head=2, n_layer=1, vocab_size=11, n_positions=8,
    ...                              bos_token_id=0, eos_token_id=0)
    >>> m = transformers.GPT2LMHeadModel(cfg).eval(); m.set_attn_implementation("eager")
    >>> xs, attn = capture(m, torch.tensor([[1, 2, 3]]))
    >>> tuple(xs[0].shape), tuple(attn[0].shape)
    ((1, 3, 8), (1, 2, 3, 3))
    """
    if adapter is None:
        adapter, _ = _adapter(model, type(model).__name__)
    _ensure_eager(model)
    L = adapter.shape.n_layers
    xs: dict[int, torch.Tensor] = {}
    hooks = []
    for layer in range(L):
        def pre(module, args, kwargs, layer=layer):
            hidden = args[0] if args else kwargs["hidden_states"]
            xs[layer] = hidden.detach()

        hooks.append(_attention_module(model, adapter, layer).register_forward_pre_hook(pre, with_kwargs=True))
    try:
        base = model.base_model
        with torch.no_grad():
            out = base(input_ids=input_ids, attention_mask=torch.ones_like(input_ids),
                       output_attentions=True)
    finally:
        for h in hooks:
            h.remove()
    attn = getattr(out, "attentions", None)
    if attn is None or len(attn) != L or any(a is None for a in attn):
        raise MetricError(
            f"{type(model).__name__} returned no attention probabilities for all {L} layers; "
            f"load it with attn_implementation='eager'."
        )
    if sorted(xs) != list(range(L)):
        raise MetricError(f"Attention inputs captured for layers {sorted(xs)}, expected 0..{L - 1}.")
    return [xs[layer] for layer in range(L)], [a.detach() for a in attn]


def head_writes(x: torch.Tensor, attn: torch.Tensor, w: LayerWeights) -> torch.Tensor:
    """Per-head writes to the residual stream: ``sum_s a[h,t,s] (x_s W_V[h] + b_V[h]) W_O[h]``.

    ``[batch, n_heads, seq, d_model]``; their sum over heads plus ``b_O`` is the attention
    block's output (the output projection's), which ``tests/test_activations.py`` checks for
    every architecture. The value bias is included here (it is part of what the block writes);
    the §7 metrics leave it out.

    Examples
    --------
    >>> w = LayerWeights(0, *(torch.ones(2, 4, 3) for _ in range(3)), torch.ones(2, 3, 4))
    >>> a = torch.full((1, 2, 5, 5), 0.2)
    >>> tuple(head_writes(torch.ones(1, 5, 4), a, w).shape)
    (1, 2, 5, 4)
    """
    v = torch.einsum("btd,hdr->bhtr", x.to(w.W_V.dtype), w.W_V)
    if w.b_V is not None:
        v = v + w.b_V[None, :, None, :]
    z = torch.einsum("bhts,bhsr->bhtr", attn.to(v.dtype), v)
    return torch.einsum("bhtr,hrd->bhtd", z, w.W_O)


# ----------------------------------------------------------------------------- labels
def head_labels(sink_score: np.ndarray, value_norm: np.ndarray, *, sink_threshold: float = 0.5,
                value_quantile: float = 1 / 3) -> np.ndarray:
    """Anchor / worker / mixed codes of METRICS.md §8, per head (float, NaN where undefined).

    A head is in the *lowest third* of its layer when ``value_norm <= numpy.quantile(layer's
    value_norm, value_quantile)`` (linear interpolation; 4 of 12 heads, 1 of 3, 2 of 4). An
    **anchor** has ``sink_score >= sink_threshold`` and is in the lowest third; a **worker**
    has ``sink_score < sink_threshold`` and is not (its ``value_norm`` is in the top two
    thirds); every other head is **mixed**. Codes are :data:`lie_stats.schema.LABEL_CODES`;
    NaN where ``sink_score`` or ``value_norm`` is NaN (a layer with a NaN ``value_norm`` has
    no thirds). The last axis is ``head``; leading axes (``layer``) are kept.

    The written-norm label of §9.2 (``head_label_written``) is this function with
    ``written_norm`` passed as ``value_norm``: the same thresholds, ties and categories.

    Examples
    --------
    >>> head_labels(np.array([[0.9, 0.9, 0.1, 0.1, 0.9, 0.1]]), np.array([[1., 9, 2, 8, 7, 3]]))
    array([[1., 0., 0., 2., 0., 2.]])
    """
    s = np.asarray(sink_score, dtype=np.float64)
    v = np.asarray(value_norm, dtype=np.float64)
    if s.shape != v.shape or s.ndim < 1:
        raise MetricError(f"head_labels: sink_score {s.shape} and value_norm {v.shape} must have one shape (..., head).")
    if not (0.0 < value_quantile < 1.0):
        raise MetricError(f"value_quantile={value_quantile!r} must lie in (0, 1) (METRICS.md §8).")
    with np.errstate(invalid="ignore"):
        cut = np.quantile(v, value_quantile, axis=-1, keepdims=True)
        low = v <= cut
        sink = s >= sink_threshold
    out = np.full(s.shape, float(LABEL_CODES["mixed"]))
    out[sink & low] = LABEL_CODES["anchor"]
    out[~sink & ~low] = LABEL_CODES["worker"]
    out[np.isnan(s) | np.isnan(v) | np.isnan(cut)] = np.nan
    return out


# ----------------------------------------------------------------------------- main
def _loss_kind(model: torch.nn.Module) -> tuple[str | None, str]:
    name = type(model).__name__
    has_head = getattr(model, "get_output_embeddings", lambda: None)() is not None
    if name.endswith(_MLM_SUFFIX) and has_head:
        return "masked_lm", ""
    if name.endswith(_CAUSAL_SUFFIXES) and has_head:
        return "causal_lm", ""
    return None, (f"{name} has no language-model head (a masked-LM head for encoders, a causal "
                  f"LM head for decoders): the LM loss of METRICS.md §7.5 is undefined")


def _find_mask_id(model: torch.nn.Module, folder: pathlib.Path | None) -> int | None:
    mid = getattr(model.config, "mask_token_id", None)
    if isinstance(mid, int):
        return mid
    if folder is not None and (folder / "tokenizer.json").is_file():
        import tokenizers

        tok = tokenizers.Tokenizer.from_file(str(folder / "tokenizer.json"))
        for name in _MASK_NAMES:
            tid = tok.token_to_id(name)
            if tid is not None:
                return int(tid)
    return None


def _mlm_mask(n_seq: int, seq_len: int, fraction: float, seed: int) -> np.ndarray:
    """Boolean ``[n_seq, seq_len]``: ``round(fraction * (seq_len - 1))`` (at least 1) positions
    ``t >= 1`` per sequence, drawn without replacement by ``numpy.random.default_rng(seed)``."""
    rng = np.random.default_rng(seed)
    m = max(1, int(round(fraction * (seq_len - 1))))
    mask = np.zeros((n_seq, seq_len), dtype=bool)
    for i in range(n_seq):
        mask[i, 1 + rng.choice(seq_len - 1, size=m, replace=False)] = True
    return mask


def activation_metrics(
    checkpoint_folder_or_model: str | os.PathLike | torch.nn.Module,
    probe: ProbeSet,
    *,
    batch_size: int = 8,
    device: str | torch.device = "cpu",
    objective: str = "killing_cv",
    family: str = "Q",
    sink_threshold: float = 0.5,
    value_quantile: float = 1 / 3,
    grad: bool = True,
    mask_fraction: float = 0.15,
    mask_seed: int = 0,
    mask_token_id: int | None = None,
) -> ActivationMetrics:
    """The activation metrics of METRICS.md §7, the labels of §8 and §9's for one checkpoint.

    Parameters
    ----------
    checkpoint_folder_or_model
        A Hugging Face checkpoint folder (loaded with the class its ``config.json`` names,
        eager attention) or a loaded ``transformers`` model (switched to eager attention and
        moved to ``device``; its parameters' ``requires_grad`` is restored afterwards).
    probe
        The token sequences (:mod:`lie_stats.extraction.probe`); ids must be below the vocabulary size.
    batch_size
        Sequences per forward pass. Results do not depend on it beyond float rounding.
    device
        ``"cpu"``, ``"cuda"`` or ``"auto"``.
    objective, family
        Layer summary whose gradient ``grad_alignment`` compares with the LM loss's
        (METRICS.md §7.5 default: ``killing_cv`` of family ``Q``; :data:`OBJECTIVES`).
    sink_threshold, value_quantile
        §8 thresholds (:func:`head_labels`), used by §9.2's label too; recorded in ``attrs``.
    grad
        Compute ``grad_alignment`` (a backward pass over the probe); NaN when False.
    mask_fraction, mask_seed, mask_token_id
        Masked-LM loss of encoders: ``round(mask_fraction * (seq_len - 1))`` positions
        ``t >= 1`` of each sequence (drawn once for the whole probe from ``mask_seed``, so
        the batches do not change them) are replaced by ``mask_token_id`` (default: the
        config's ``mask_token_id`` or ``[MASK]``/``<mask>`` in the folder's tokenizer.json)
        and predicted; no 80/10/10 replacement.

    Returns
    -------
    ActivationMetrics
        ``{name: float64 array [layer, head]}`` for ``sink_score``, ``sink_argmax_fraction``,
        ``value_norm``, ``sink_value_ratio``, ``grad_alignment``, ``head_label`` (codes as
        floats, NaN where undefined), ``written_norm`` and ``head_label_written`` (§9), plus
        ``.attrs`` (see :class:`ActivationMetrics`).
        ``killing_functional`` needs the weight metrics' ``killing``: :func:`functional_killing`.

    Notes
    -----
    ``grad_alignment`` (§7.5), per head ``h`` of layer ``l``: ``g_obj`` is the gradient of
    ``objective`` of layer ``l`` (computed in float64 by :func:`layer_objective` from the
    canonical weights read off the live parameters), ``g_lm`` the gradient of the LM loss,
    both w.r.t. the head's slices ``W_Q[h], W_K[h], W_V[h], W_O[h]`` (concatenated; biases
    excluded); the result is ``<g_obj, g_lm> / (|g_obj| |g_lm|)``. The family-``Q`` objective
    depends on ``W_Q`` only, so its ``K, V, O`` components are zero and only ``g_lm``'s norm
    sees them. The LM loss is the mean token cross-entropy over the whole probe (decoders:
    next-token prediction at every position; encoders: the masked positions), accumulated over
    batches with each batch's sum divided by the probe's total token count. Canonical
    gradients are the parameter gradients mapped by the adapter (a reshape / transpose / slice,
    exact); under grouped-query attention a K/V head's gradient is shared by the query heads
    that use it. NaN, with the reason in ``attrs["grad_alignment_note"]``, when the model has
    no LM head (e.g. a sentence-embedding ``BertModel``), when an encoder has no mask token,
    or when a gradient is zero.

    Examples
    --------
    >>> import transformers
    >>> cfg = transformers.GPT2Config(n_embd=8, n_head=4, n_layer=1, vocab_size=11, n_positions=8,
    ...                              bos_token_id=0, eos_token_id=0)
    >>> _ = torch.manual_seed(0); m = transformers.GPT2LMHeadModel(cfg).eval()
    >>> p = ProbeSet.from_tokens(np.array([[0, 3, 5, 7], [0, 2, 4, 6]]), tokenizer="toy",
    ...                          text_source="toy", first_token="bos")
    >>> out = activation_metrics(m, p, batch_size=1)
    >>> out["sink_score"].shape, out.attrs["loss"], bool(np.isfinite(out["grad_alignment"]).all())
    ((1, 4), 'causal_lm', True)
    """
    if not isinstance(probe, ProbeSet):
        raise MetricError(f"activation_metrics needs a ProbeSet (lie_stats.extraction.probe), got {type(probe).__name__}.")
    if not isinstance(batch_size, int) or isinstance(batch_size, bool) or batch_size < 1:
        raise MetricError(f"batch_size must be a positive integer, got {batch_size!r}.")
    if not (0.0 < mask_fraction < 1.0):
        raise MetricError(f"mask_fraction={mask_fraction!r} must lie in (0, 1).")
    if objective not in OBJECTIVES:
        raise MetricError(f"Unknown objective {objective!r}.{did_you_mean(objective, OBJECTIVES)} Known: {', '.join(OBJECTIVES)}.")
    if family not in FAMILIES:
        raise MetricError(f"Unknown operator family {family!r}.{did_you_mean(family, FAMILIES)} Known: {', '.join(FAMILIES)}.")
    dev = resolve_device(device, error=MetricError)
    folder: pathlib.Path | None = None
    if isinstance(checkpoint_folder_or_model, torch.nn.Module):
        model = checkpoint_folder_or_model
        source = type(model).__name__
    else:
        folder = pathlib.Path(checkpoint_folder_or_model)
        model = load_eager_model(folder)
        source = str(folder / "config.json")
    _ensure_eager(model)
    model.to(dev)
    was_training = model.training
    model.eval()
    adapter, params = _adapter(model, source)
    shape = adapter.shape
    L, H = shape.n_layers, shape.n_heads
    tokens = torch.from_numpy(np.array(probe.tokens))
    vocab = getattr(model.config, "vocab_size", None)
    if isinstance(vocab, int) and int(tokens.max()) >= vocab:
        raise MetricError(
            f"Probe {probe.sha256[:12]} holds token id {int(tokens.max())}, but the model's vocabulary "
            f"has {vocab} entries: the probe was built with another tokenizer ({probe.tokenizer})."
        )
    n_seq, T = probe.n_seq, probe.seq_len
    f64 = torch.float64
    weights = [_layer_weights(adapter, layer, lambda n: params[n].detach(), f64) for layer in range(L)]
    gram_o = [w.W_O @ w.W_O.transpose(-1, -2) for w in weights]  # [H, r, r]: ||v W_O||^2 = v G v^T

    sink = torch.zeros(L, H, dtype=f64, device=dev)
    argmax = torch.zeros(L, H, dtype=f64, device=dev)
    vnorm = torch.zeros(L, H, dtype=f64, device=dev)
    wnorm = torch.zeros(L, H, dtype=f64, device=dev)
    v0 = torch.zeros(L, H, dtype=f64, device=dev)
    vrest = torch.zeros(L, H, dtype=f64, device=dev)
    for start in range(0, n_seq, batch_size):
        ids = tokens[start:start + batch_size].to(dev)
        xs, attn = capture(model, ids, adapter=adapter)
        for layer in range(L):
            a = attn[layer][:, :, 1:, :].to(f64)  # queries t >= 1
            sink[layer] += a[..., 0].sum((0, 2))
            argmax[layer] += (a.argmax(-1) == 0).to(f64).sum((0, 2))
            w = weights[layer]
            v = torch.einsum("btd,hdr->bhtr", xs[layer].to(f64), w.W_V)  # value vectors, no bias
            write_sq = torch.einsum("bhtr,hrs,bhts->bht", v, gram_o[layer], v)
            vnorm[layer] += torch.sqrt(torch.clamp(write_sq, min=0.0)).sum((0, 2))
            # §9.1: what the head writes after attention, sum_s a[t, s] v_s W_O, every query t
            z = torch.einsum("bhts,bhsr->bhtr", attn[layer].to(f64), v)
            written_sq = torch.einsum("bhtr,hrs,bhts->bht", z, gram_o[layer], z)
            wnorm[layer] += torch.sqrt(torch.clamp(written_sq, min=0.0)).sum((0, 2))
            vn = torch.linalg.vector_norm(v, dim=-1)  # [b, H, T]
            v0[layer] += vn[:, :, 0].sum(0)
            vrest[layer] += vn[:, :, 1:].sum((0, 2))
        del xs, attn
    n_query = n_seq * (T - 1)
    sink_np = (sink / n_query).cpu().numpy()
    argmax_np = (argmax / n_query).cpu().numpy()
    vnorm_np = (vnorm / (n_seq * T)).cpu().numpy()
    wnorm_np = (wnorm / (n_seq * T)).cpu().numpy()
    v0m = (v0 / n_seq).cpu().numpy()
    vrm = (vrest / n_query).cpu().numpy()
    with np.errstate(invalid="ignore", divide="ignore"):
        ratio = np.where(vrm > 0, v0m / np.where(vrm > 0, vrm, 1.0), np.nan)

    loss_kind, note = _loss_kind(model)
    mask_id = None
    if loss_kind == "masked_lm":
        mask_id = mask_token_id if mask_token_id is not None else _find_mask_id(model, folder)
        if mask_id is None:
            loss_kind, note = None, ("no mask token id (config mask_token_id, [MASK] or <mask> in "
                                     "tokenizer.json, or mask_token_id=): the masked-LM loss is undefined")
    if not grad:
        note = "not computed (grad=False)"
    galign = np.full((L, H), np.nan)
    if grad and loss_kind is not None:
        galign, zero_note = _grad_alignment(model, adapter, params, weights, tokens, loss_kind, mask_id,
                                            batch_size=batch_size, dev=dev, objective=objective,
                                            family=family, mask_fraction=mask_fraction, mask_seed=mask_seed)
        note = zero_note
    model.train(was_training)

    arrays = {
        V_SINK: sink_np, V_ARGMAX: argmax_np, V_VNORM: vnorm_np, V_RATIO: ratio, V_GRAD: galign,
        V_LABEL: head_labels(sink_np, vnorm_np, sink_threshold=sink_threshold, value_quantile=value_quantile),
        V_WNORM: wnorm_np,
        V_LABEL_W: head_labels(sink_np, wnorm_np, sink_threshold=sink_threshold, value_quantile=value_quantile),
    }
    attrs = {
        "probe": probe.metadata(), "first_token": probe.first_token,
        "sink_threshold": float(sink_threshold), "value_quantile": float(value_quantile),
        "objective": objective, "family": family,
        "loss": loss_kind if grad else None,
        "mask_fraction": float(mask_fraction) if loss_kind == "masked_lm" else None,
        "mask_seed": int(mask_seed) if loss_kind == "masked_lm" else None,
        "mask_token_id": None if mask_id is None else int(mask_id),
        "grad_alignment_note": note,
        "n_tokens": int(n_seq * T),
        "definitions": "value_norm: ||x W_V W_O|| (no b_V); sink_value_ratio: v = x W_V (no b_V), "
                       "ratio of means; t >= 1 for sink_score and sink_argmax_fraction (METRICS.md §7); "
                       "written_norm: ||sum_s a[t, s] x_s W_V W_O|| over every query t (no b_V), "
                       "head_label_written: §8's rule on written_norm (METRICS.md §9)",
    }
    return ActivationMetrics(arrays, attrs)


def _grad_alignment(model, adapter, params, weights, tokens, loss_kind, mask_id, *, batch_size, dev,
                    objective, family, mask_fraction, mask_seed) -> tuple[np.ndarray, str]:
    """Cosines of METRICS.md §7.5 (see :func:`activation_metrics`, Notes)."""
    L = adapter.shape.n_layers
    n_seq, T = tokens.shape
    attn_names = set(adapter.attention_tensor_names())
    saved = {n: p.requires_grad for n, p in params.items()}
    for n, p in params.items():
        p.requires_grad_(n in attn_names)
        p.grad = None
    try:
        if loss_kind == "masked_lm":
            mask = torch.from_numpy(_mlm_mask(n_seq, T, mask_fraction, mask_seed))
            inputs = torch.where(mask, torch.full_like(tokens, mask_id), tokens)
            n_total = int(mask.sum())
        else:
            mask, inputs, n_total = None, tokens, n_seq * (T - 1)
        for start in range(0, n_seq, batch_size):
            ids = inputs[start:start + batch_size].to(dev)
            target = tokens[start:start + batch_size].to(dev)
            logits = model(input_ids=ids, attention_mask=torch.ones_like(ids)).logits
            if loss_kind == "causal_lm":
                lg, tg = logits[:, :-1], target[:, 1:]
            else:
                m = mask[start:start + batch_size].to(dev)
                lg, tg = logits[m], target[m]
            lg = lg.reshape(-1, lg.shape[-1])
            if lg.dtype not in (torch.float32, torch.float64):
                lg = lg.float()  # half precision: the loss in float32
            loss = torch.nn.functional.cross_entropy(lg, tg.reshape(-1), reduction="sum") / n_total
            loss.backward()
            del logits, loss
        out = np.full((L, adapter.shape.n_heads), np.nan)
        zero = False
        for layer in range(L):
            def grad_of(name: str) -> torch.Tensor:
                g = params[name].grad
                return torch.zeros_like(params[name]) if g is None else g

            g_lm = _layer_weights(adapter, layer, grad_of, torch.float64)
            w = weights[layer]
            leaves = {m: getattr(w, f"W_{m}").detach().clone().requires_grad_(True) for m in "QKVO"}
            lw = LayerWeights(layer, leaves["Q"], leaves["K"], leaves["V"], leaves["O"])
            obj = layer_objective(lw, objective=objective, family=family)
            g_obj = torch.autograd.grad(obj, [leaves[m] for m in "QKVO"], allow_unused=True)
            dot = torch.zeros(w.n_heads, dtype=torch.float64, device=dev)
            n_obj = torch.zeros_like(dot)
            n_lm = torch.zeros_like(dot)
            for m, go in zip("QKVO", g_obj):
                gl = getattr(g_lm, f"W_{m}")
                n_lm += gl.pow(2).sum((1, 2))
                if go is not None:
                    dot += (go * gl).sum((1, 2))
                    n_obj += go.pow(2).sum((1, 2))
            den = torch.sqrt(n_obj * n_lm)
            ok = den > 0
            zero = zero or not bool(ok.all())
            cos = torch.where(ok, dot / torch.where(ok, den, torch.ones_like(den)), torch.full_like(den, float("nan")))
            out[layer] = cos.cpu().numpy()
        note = "NaN where a gradient is exactly zero" if zero else ""
        return out, note
    finally:
        for n, p in params.items():
            p.grad = None
            p.requires_grad_(saved[n])


# ----------------------------------------------------------------------------- reporting
def sink_table(metrics: dict[str, np.ndarray]):
    """Per-layer table of attention sinks: mean ``sink_score`` and the fraction of heads whose
    largest attention falls on position 0 (``sink_argmax_fraction > 0.5``: for most query
    positions), plus the mean ``sink_argmax_fraction``, as a pandas DataFrame indexed by layer.

    Examples
    --------
    >>> t = sink_table({"sink_score": np.array([[0.9, 0.1]]), "sink_argmax_fraction": np.array([[1.0, 0.2]])})
    >>> t.round(2).to_dict("records")
    [{'mean_sink_score': 0.5, 'heads_argmax_pos0': 0.5, 'mean_sink_argmax_fraction': 0.6}]
    """
    import pandas as pd

    s = np.asarray(metrics[V_SINK], dtype=np.float64)
    a = np.asarray(metrics[V_ARGMAX], dtype=np.float64)
    df = pd.DataFrame({
        "mean_sink_score": s.mean(-1),
        "heads_argmax_pos0": (a > 0.5).mean(-1),
        "mean_sink_argmax_fraction": a.mean(-1),
    })
    df.index.name = "layer"
    return df


def sink_report(folder: str | os.PathLike, probe: ProbeSet, metrics: dict[str, np.ndarray], *,
                loaded: tuple[dict, Any] | None = None) -> list[str]:
    """The lines ``lie-stats sinks`` prints: a header naming the model (``config.json``'s
    ``model_type``), the probe's sha256 and size and the token at position 0 (the folder's
    ``tokenizer.json``), the Markdown table of :func:`sink_table` with an ``all`` row, and the
    counts of the §8 and §9.2 labels. The model type and the token are text read from files
    (a newline or an escape sequence among them): show each line through
    :func:`lie_stats._text.terminal_line`. ``loaded``: the folder's
    :func:`lie_stats.extraction.probe.folder_tokenizer`, when the caller has read it already.
    """
    from .probe import folder_tokenizer

    cfg, tok = loaded if loaded is not None else folder_tokenizer(folder)
    first = tok.id_to_token(int(probe.tokens[0, 0]))
    lines = [f"model: {folder} ({cfg.get('model_type')}), probe sha256 {probe.sha256}, "
             f"{probe.n_seq} x {probe.seq_len} tokens, position 0 = {probe.first_token} ({first!r})", "",
             "| layer | mean sink_score | heads with argmax on position 0 | mean sink_argmax_fraction |",
             "|---|---|---|---|"]
    for layer, row in sink_table(metrics).iterrows():
        lines.append(f"| {layer} | {row['mean_sink_score']:.3f} | {row['heads_argmax_pos0']:.0%} | "
                     f"{row['mean_sink_argmax_fraction']:.3f} |")
    s, a = metrics[V_SINK], metrics[V_ARGMAX]
    lines += [f"| all | {s.mean():.3f} | {(a > 0.5).mean():.0%} | {a.mean():.3f} |", ""]
    for section, name, norm in (("§8", V_LABEL, "value_norm"), ("§9.2", V_LABEL_W, "written_norm")):
        counts = {k: int((metrics[name] == v).sum()) for k, v in LABEL_CODES.items()}
        lines.append(f"{section} labels (sink >= 0.5, lowest third of {norm}): {counts}")
    return lines
