"""The metric registry and the weight metrics of METRICS.md §3-§5, in torch, batched over heads.

:func:`compute_layer` turns one layer's canonical head weights (METRICS.md §1) into every
cube variable of kind ``"weight"`` in :data:`lie_stats.schema.VARIABLES`; arrays carry the
schema's dims without ``layer``. :func:`compute_checkpoint` stacks layers along ``layer``.
The operators are never formed: see :mod:`lie_stats.extraction.operators` for the factored algebra and
the random-orientation null.

This module knows nothing of files, checkpoints or xarray (DESIGN.md, module map).
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np
import torch

from .. import _io
from ..errors import MetricError, did_you_mean
from .operators import (
    CanonicalHeads,
    actual_omega,
    canonical_heads,
    compress,
    family_factors,
    haar_blocks,
    is_symmetric_family,
    killing_cv,
    killing_form,
    normalized_commutator,
    normalized_killing,
    null_block_size,
    null_commutators,
    null_seed_sequence,
    pair_terms,
    projection_matrix,
    projection_size,

)
from ..schema import FAMILIES, LAYER, MATRICES, VARIABLES, VariableInfo, variable_info

if TYPE_CHECKING:  # pragma: no cover
    from .architectures import LayerWeights

__all__ = [
    "MetricSpec",
    "MetricRegistry",
    "METRIC_REGISTRY",
    "MIN_NULL_DRAWS",
    "compute_layer",
    "compute_checkpoint",
    "change_from_init",
    "resolve_device",
    "null_quantile",
]

#: METRICS.md §3.3: at least 64 null draws per layer.
MIN_NULL_DRAWS = 64

#: Memory budget (bytes) of one chunk of null draws; draws are processed in chunks this size.
_NULL_CHUNK_BYTES = 256 * 2**20


def _name(name: str) -> str:
    """A variable name, checked against the schema at import (a typo fails loudly)."""
    return variable_info(name).name


V_C_RAW = _name("commutator_raw")
V_C = _name("commutator")
V_NULL_MEAN = _name("commutator_null_mean")
V_NULL_STD = _name("commutator_null_std")
V_Z = _name("commutator_z")
V_K = _name("killing")
V_KHAT = _name("killing_norm")
V_C_VAR = _name("commutator_var")
V_C_RAW_VAR = _name("commutator_raw_var")
V_AB = _name("abelian_fraction")
V_AB_TAU = _name("abelian_fraction_tau")
V_K_SPREAD = _name("killing_eig_spread")
V_K_CV = _name("killing_cv")
V_HET = _name("head_heterogeneity")
V_Z_MEAN = _name("commutator_z_mean")
V_C_MEAN = _name("commutator_mean")
V_Z_MEAN_HEAD = _name("commutator_z_mean_head")
V_K_SELF = _name("killing_self")
V_WNORM = _name("weight_norm")
V_OVNORM = _name("ov_norm")
V_CONTRIB = _name("head_contribution")

_PAIR_VARS = (V_C_RAW, V_C, V_NULL_MEAN, V_NULL_STD, V_Z, V_K, V_KHAT)
_LAYER_VARS = (V_C_VAR, V_C_RAW_VAR, V_AB, V_AB_TAU, V_K_SPREAD, V_K_CV, V_HET, V_Z_MEAN)
_FHEAD_VARS = (V_C_MEAN, V_Z_MEAN_HEAD, V_K_SELF)
_HEAD_VARS = (V_WNORM, V_OVNORM, V_CONTRIB)
_COMPUTED = _PAIR_VARS + _LAYER_VARS + _FHEAD_VARS + _HEAD_VARS


# ----------------------------------------------------------------------------- registry
@dataclass(frozen=True)
class MetricSpec:
    """A registered metric: the schema's :class:`VariableInfo` plus its per-layer dims."""

    info: VariableInfo

    @property
    def name(self) -> str:
        return self.info.name

    @property
    def dims(self) -> tuple[str, ...]:
        """Dims of one checkpoint (the schema's), ``layer`` included."""
        return self.info.dims

    @property
    def layer_dims(self) -> tuple[str, ...]:
        """Dims of :func:`compute_layer`'s array: the schema's without ``layer``."""
        return tuple(d for d in self.info.dims if d != LAYER)

    @property
    def units(self) -> str:
        return self.info.units

    @property
    def definition(self) -> str:
        return self.info.definition


class MetricRegistry(Mapping[str, MetricSpec]):
    """Name -> :class:`MetricSpec`; raises :class:`MetricError` on duplicates and unknown names.

    A duplicate registration raises, a typo gets a suggestion, and the
    metadata becomes the cube variable's attributes.

    Examples
    --------
    >>> reg = MetricRegistry()
    >>> reg.register(variable_info("commutator")).definition
    'METRICS.md §3.2'
    >>> reg["comutator"]
    Traceback (most recent call last):
    ...
    lie_stats.errors.MetricError: No metric named 'comutator'. Did you mean 'commutator'? Registered: commutator.
    """

    def __init__(self) -> None:
        self._specs: dict[str, MetricSpec] = {}

    def register(self, info: VariableInfo) -> MetricSpec:
        if info.name in self._specs:
            raise MetricError(f"Metric {info.name!r} is already registered ({self._specs[info.name].definition}).")
        spec = MetricSpec(info)
        self._specs[info.name] = spec
        return spec

    def __getitem__(self, name: str) -> MetricSpec:
        try:
            return self._specs[name]
        except KeyError:
            raise MetricError(
                f"No metric named {name!r}.{did_you_mean(name, self._specs)} "
                f"Registered: {', '.join(sorted(self._specs))}."
            ) from None

    def __iter__(self) -> Iterator[str]:
        return iter(self._specs)

    def __len__(self) -> int:
        return len(self._specs)


#: Every schema variable of kind "weight" that :func:`compute_layer` computes.
METRIC_REGISTRY = MetricRegistry()
for _info in VARIABLES.values():
    if _info.kind == "weight" and _info.name in _COMPUTED:
        METRIC_REGISTRY.register(_info)
del _info


# ----------------------------------------------------------------------------- devices and inputs
def resolve_device(device: str | torch.device) -> torch.device:
    """:func:`lie_stats._io.resolve_device` raising :class:`~lie_stats.errors.MetricError`:
    ``"auto"`` -> CUDA when available, else CPU; ``"cpu"``, ``"cuda"``, ``"cuda:N"`` checked.

    Examples
    --------
    >>> resolve_device("cpu")
    device(type='cpu')
    >>> resolve_device("tpu")
    Traceback (most recent call last):
    ...
    lie_stats.errors.MetricError: Unsupported device 'tpu': expected 'auto', 'cpu' or 'cuda'.
    """
    return _io.resolve_device(device, error=MetricError)


def _layer_tensors(w: Any, dev: torch.device, dtype: torch.dtype) -> dict[str, torch.Tensor]:
    layer = getattr(w, "layer", "?")
    out: dict[str, torch.Tensor] = {}
    for m in MATRICES:
        attr = f"W_{m}"
        try:
            t = getattr(w, attr)
        except AttributeError:
            raise MetricError(
                f"Layer {layer}: weights object {type(w).__name__} has no {attr} (METRICS.md §1)."
            ) from None
        if not isinstance(t, torch.Tensor) or t.ndim != 3:
            raise MetricError(
                f"Layer {layer}: {attr} must be a 3-d torch.Tensor, got "
                f"{type(t).__name__}{'' if not isinstance(t, torch.Tensor) else ' of shape ' + str(tuple(t.shape))}."
            )
        out[m] = t.to(device=dev, dtype=dtype)
    H, d, r = out["Q"].shape
    for m in ("K", "V"):
        if tuple(out[m].shape) != (H, d, r):
            raise MetricError(f"Layer {layer}: W_{m} has shape {tuple(out[m].shape)}, expected {(H, d, r)} like W_Q.")
    if tuple(out["O"].shape) != (H, r, d):
        raise MetricError(f"Layer {layer}: W_O has shape {tuple(out['O'].shape)}, expected [n_heads, d_head, d_model] = {(H, r, d)}.")
    for m, t in out.items():
        if not bool(torch.isfinite(t).all()):
            raise MetricError(f"Layer {layer}: W_{m} holds non-finite values (NaN or inf).")
    return out


def _check_options(families: tuple[str, ...], projections: tuple[str, ...], null_draws: int, alpha: float, tau: float) -> None:
    for f in families:
        if f not in FAMILIES:
            raise MetricError(f"Unknown operator family {f!r}.{did_you_mean(f, FAMILIES)} Known: {', '.join(FAMILIES)}.")
    for name, seq in (("families", families), ("projections", projections)):
        if len(seq) == 0:
            raise MetricError(f"compute_layer: {name} is empty.")
        if len(set(seq)) != len(seq):
            raise MetricError(f"compute_layer: {name} has duplicates: {list(seq)}.")
    if not isinstance(null_draws, (int, np.integer)) or null_draws < MIN_NULL_DRAWS:
        raise MetricError(f"null_draws={null_draws!r}: METRICS.md §3.3 asks for at least {MIN_NULL_DRAWS} draws per layer.")
    if not (0.0 < alpha < 1.0):
        raise MetricError(f"alpha={alpha!r} must lie in (0, 1) (METRICS.md §4.2).")
    if not np.isfinite(tau):
        raise MetricError(f"tau={tau!r} must be finite (METRICS.md §4.2).")


def _np(t: torch.Tensor) -> np.ndarray:
    return t.detach().to(device="cpu", dtype=torch.float64).numpy()


# ----------------------------------------------------------------------------- one family
def _family_metrics(ch: CanonicalHeads, B: torch.Tensor, *, alpha: float, tau: float) -> dict[str, np.ndarray]:
    """All §3, §4, §5.1 quantities of one family under one compression."""
    H = ch.n_heads
    k = ch.k
    s2 = ch.s2
    norm = torch.sqrt(s2.sum(-1))
    om = actual_omega(ch)
    a, b, t, trAA = pair_terms(om, s2[:, None, :].expand(H, H, -1), s2[None, :, :].expand(H, H, -1))
    C, c = normalized_commutator(a, b, t, norm[:, None], norm[None, :])
    m = ch.rank
    trA = torch.diagonal(om[torch.arange(H), torch.arange(H)][:, m:, :m], dim1=-2, dim2=-1).sum(-1)  # tr(Gh^T Fh)
    K = killing_form(trAA, trA, k)
    Khat = normalized_killing(K)

    iu = torch.triu_indices(H, H, 1, device=om.device)
    I, J = iu[0], iu[1]
    c_np, C_np, Khat_np = _np(c), _np(C), _np(Khat)
    iu_np = (I.cpu().numpy(), J.cpu().numpy())
    c_pairs = c_np[iu_np]
    C_pairs = C_np[iu_np]

    nan_hh = np.full((H, H), np.nan)
    null_mean, null_std, z = nan_hh.copy(), nan_hh.copy(), nan_hh.copy()
    if I.numel() > 0:
        # The null is drawn with the heads sorted by ||A||_F (a basis-free order, stable for
        # ties), pair (a, b), a < b in that order: the realization each pair sees then does not
        # depend on how the heads are numbered (permuting heads permutes every result).
        order = torch.sort(norm.cpu(), stable=True).indices.to(norm.device)
        ch_sorted = CanonicalHeads(ch.U[order], ch.V[order], ch.s[order], ch.k, ch.symmetric)
        cn = _np(null_commutators(ch_sorted, B, I, J, chunk_bytes=_NULL_CHUNK_BYTES))  # [n_draws, P]
        order_np = order.cpu().numpy()
        oi, oj = order_np[iu_np[0]], order_np[iu_np[1]]
        stats = {
            "mean": cn.mean(axis=0),
            "std": cn.std(axis=0, ddof=1),
            "q": null_quantile(cn, alpha),
        }
        full = {}
        for key, vals in stats.items():
            arr = nan_hh.copy()
            arr[oi, oj] = vals
            arr[oj, oi] = vals
            full[key] = arr
        null_mean, null_std = full["mean"], full["std"]
        mu, sd, q = (full[key][iu_np] for key in ("mean", "std", "q"))
        with np.errstate(divide="ignore", invalid="ignore"):
            zp = np.where(sd > 0, (c_pairs - mu) / np.where(sd > 0, sd, 1.0), np.nan)
        z[iu_np] = zp
        z[iu_np[1], iu_np[0]] = zp
        abelian = float(np.mean(c_pairs < q))
        abelian_tau = float(np.mean(c_pairs < tau))
        c_var = float(np.var(c_pairs))
        C_var = float(np.var(C_pairs))
        k_cv = float(killing_cv(torch.from_numpy(Khat_np)))  # float64 on the CPU, whatever the device
        z_mean = float(np.mean(zp))
    else:
        abelian = abelian_tau = c_var = C_var = k_cv = z_mean = np.nan

    c_full, C_full = c_np.copy(), C_np.copy()
    np.fill_diagonal(c_full, np.nan)
    np.fill_diagonal(C_full, np.nan)
    if H > 1:
        c_mean = _row_mean_off_diag(c_full)
        z_mean_head = _row_mean_off_diag(z)
        het_mean = np.mean(c_mean)
        het = float(np.std(c_mean) / het_mean) if het_mean > 0 else np.nan
    else:
        c_mean = z_mean_head = np.full(H, np.nan)
        het = np.nan
    if np.isfinite(Khat_np).all():
        ev = np.linalg.eigvalsh(Khat_np)
        ev_abs = np.mean(np.abs(ev))
        spread = float((ev[-1] - ev[0]) / ev_abs) if ev_abs > 0 else np.nan
    else:
        spread = np.nan
    return {
        V_C_RAW: C_full,
        V_C: c_full,
        V_NULL_MEAN: null_mean,
        V_NULL_STD: null_std,
        V_Z: z,
        V_K: _np(K),
        V_KHAT: Khat_np,
        V_C_VAR: np.float64(c_var),
        V_C_RAW_VAR: np.float64(C_var),
        V_AB: np.float64(abelian),
        V_AB_TAU: np.float64(abelian_tau),
        V_K_SPREAD: np.float64(spread),
        V_K_CV: np.float64(k_cv),
        V_HET: np.float64(het),
        V_Z_MEAN: np.float64(z_mean),
        V_C_MEAN: c_mean,
        V_Z_MEAN_HEAD: z_mean_head,
        V_K_SELF: np.diagonal(_np(K)).copy(),
    }


def null_quantile(draws: np.ndarray, alpha: float) -> np.ndarray:
    """The ``alpha`` quantile of null draws along axis 0, as :func:`compute_layer` uses it (METRICS.md §4.2).

    numpy's ``method="weibull"``: position ``alpha (n + 1)`` (1-based) among the ``n`` sorted
    draws, interpolated linearly, clipped to the smallest and largest draw. For a value
    exchangeable with the draws, ``P(value < quantile) = alpha`` when ``alpha (n + 1)`` is an
    integer (Weibull plotting positions; Hyndman & Fan 1996, definition 6).

    Examples
    --------
    >>> null_quantile(np.arange(1.0, 100.0)[:, None], 0.05)   # 99 draws: the 5th smallest
    array([5.])
    >>> null_quantile(np.arange(1.0, 65.0)[:, None], 0.01)    # below 1/(n+1): the smallest
    array([1.])
    """
    return np.quantile(draws, alpha, axis=0, method="weibull")


def _row_mean_off_diag(x: np.ndarray) -> np.ndarray:
    """Mean over ``j != h`` of ``x[h, j]`` (NaN propagates from off-diagonal entries)."""
    H = x.shape[0]
    mask = ~np.eye(H, dtype=bool)
    return np.array([np.mean(x[h][mask[h]]) for h in range(H)])


# ----------------------------------------------------------------------------- public API
def compute_layer(
    w: "LayerWeights",
    *,
    families: Iterable[str] = FAMILIES,
    projections: Iterable[str] = ("none",),
    null_draws: int = 64,
    seed: int = 0,
    alpha: float = 0.01,
    tau: float = 0.5,
    device: str | torch.device = "cpu",
    dtype: torch.dtype = torch.float64,
    projection_matrices: Mapping[str, torch.Tensor] | None = None,
) -> dict[str, np.ndarray]:
    """Every weight metric of METRICS.md §3-§5 for one layer.

    Parameters
    ----------
    w
        Canonical head weights of one layer (METRICS.md §1): ``layer`` (int), ``W_Q``,
        ``W_K``, ``W_V`` ``[n_heads, d_model, d_head]`` (grouped-query K/V already expanded),
        ``W_O`` ``[n_heads, d_head, d_model]``. Biases are not used (§1).
    families
        Operator families of §2, in the order of the output's ``family`` axis.
    projections
        Compressions of §2 (``"none"``, ``"adaptive"``, ``"fixed:K"``), in the order of the
        ``projection`` axis.
    null_draws
        Draws of the random-orientation null (§3.3), at least 64.
    seed
        Seeds the null and, where ``projection_matrices`` lacks one, the projections. The null
        of this layer for operators of size ``k`` is drawn from
        ``numpy.random.SeedSequence([seed, layer], spawn_key=(k,))``
        (:func:`lie_stats.extraction.operators.null_seed_sequence`) on the CPU in float64, shared by all
        pairs and families of the layer; ``P`` of ``fixed:K`` from
        :func:`lie_stats.extraction.operators.projection_matrix` ``(d_model, K, seed)``.
    alpha
        Quantile of each pair's null below which the pair counts as Abelian (§4.2). The
        empirical quantile is numpy's ``method="weibull"`` (position ``alpha (n + 1)`` among
        ``n`` sorted draws), for which an exchangeable pair falls below it with probability
        ``alpha`` when ``alpha (n + 1)`` is an integer; it cannot go below the smallest draw,
        so the level of the test is ``max(alpha, 1 / (n + 1))`` (use ``n >= 1/alpha - 1``,
        e.g. 99 draws for ``alpha = 0.01``).
    tau
        Threshold of ``abelian_fraction_tau`` (§4.2).
    device
        ``"cpu"``, ``"cuda"`` or ``"auto"``.
    dtype
        Compute dtype (float64 by default: ``c`` of commuting pairs is accurate to about
        ``1e-8`` in float64, ``3e-4`` in float32).
    projection_matrices
        ``{projection label: P}`` (``d_model x K``), one ``P`` per model, supplied by the
        caller so all layers share it; missing labels are drawn from ``seed``.

    Returns
    -------
    dict
        ``{variable: numpy.ndarray}`` for every name of :data:`METRIC_REGISTRY`, float64,
        dims as the schema's without ``layer``: pairwise ``(family, projection, head,
        head_j)`` (diagonal NaN, except ``killing`` and ``killing_norm``: ``K[h, h]`` is
        defined), layer summaries ``(family, projection)``, per head ``(family, projection,
        head)``, ``weight_norm`` ``(matrix, head)``, ``ov_norm`` and ``head_contribution``
        ``(head,)``. ``commutator_null_std`` uses ``ddof=1``; ``commutator_z`` is NaN where
        that is 0; ``commutator_var`` (§4.1) and the standard deviations of ``killing_cv``
        (§4.4) and ``head_heterogeneity`` (§4.5) are population ones (``ddof=0``).

    Raises
    ------
    MetricError
        Unknown family or projection (with a suggestion), wrong shapes, non-finite weights,
        fewer than 64 null draws, a CUDA device that is not there.

    Notes
    -----
    Random-orientation null (§3.3): each draw is a Haar block ``B`` shared by all pairs and
    families of the layer (see :mod:`lie_stats.extraction.operators`); heads are taken in the order of
    ``||A||_F`` (stable), a basis-free order, so permuting heads permutes every result. A
    change of residual basis leaves the null of Gram families unchanged; for circuits it
    gives another realization of the same null (the sign gauge of singular pairs), so
    ``commutator_z`` and ``abelian_fraction`` are basis-free in distribution, ``c`` and
    ``Khat`` exactly.

    Cost for ``H`` heads of width ``r``, operator size ``k`` and ``n`` draws: the weights'
    pairwise blocks are one ``O(H^2 r^2 k)`` product per family; the null costs
    ``O(n H^2 r^3)`` per family (``3 r^3`` per pair and draw for circuits, ``O(r^2)`` for
    Gram families) and never touches ``k``-dimensional vectors. Measured for a
    Pythia-410m-shaped layer (``d_model`` 1024, 16 heads of 64, families Q, O, QK, OV, 64
    draws) on one core of a loaded 2-core CPU: 5.2 s in float64, 2.5 s in float32.

    Examples
    --------
    >>> import types
    >>> g = torch.Generator().manual_seed(0)
    >>> w = types.SimpleNamespace(layer=0, W_Q=torch.randn(3, 8, 2, generator=g), W_K=torch.randn(3, 8, 2, generator=g),
    ...                           W_V=torch.randn(3, 8, 2, generator=g), W_O=torch.randn(3, 2, 8, generator=g))
    >>> out = compute_layer(w, families=("QK",), projections=("none", "fixed:4"))
    >>> out["commutator"].shape, out["abelian_fraction"].shape, out["weight_norm"].shape
    ((1, 2, 3, 3), (1, 2), (4, 3))
    """
    families = tuple(families)
    projections = tuple(projections)
    _check_options(families, projections, null_draws, alpha, tau)
    dev = resolve_device(device)
    if not (isinstance(dtype, torch.dtype) and dtype.is_floating_point):
        raise MetricError(f"dtype={dtype!r} must be a torch floating dtype (float64 recommended).")
    layer = getattr(w, "layer", None)
    if not isinstance(layer, (int, np.integer)) or isinstance(layer, bool) or layer < 0:
        raise MetricError(f"Layer weights must carry a non-negative integer `layer`, got {layer!r}.")
    Wt = _layer_tensors(w, dev, dtype)
    H, d_model, d_head = Wt["Q"].shape
    nF, nP = len(families), len(projections)

    out: dict[str, np.ndarray] = {}
    for name in _PAIR_VARS:
        out[name] = np.full((nF, nP, H, H), np.nan)
    for name in _LAYER_VARS:
        out[name] = np.full((nF, nP), np.nan)
    for name in _FHEAD_VARS:
        out[name] = np.full((nF, nP, H), np.nan)

    sizes = [projection_size(p, d_model, d_head) for p in projections]
    provided = dict(projection_matrices or {})
    for label in provided:
        if label not in projections:
            raise MetricError(
                f"projection_matrices has a matrix for {label!r}, which is not among the projections "
                f"{list(projections)}.{did_you_mean(label, projections)}"
            )
    nulls: dict[int, torch.Tensor] = {}
    for pi, (label, K) in enumerate(zip(projections, sizes)):
        k = d_model if K is None else K
        P = None
        if K is not None:
            if label in provided:
                P = provided[label]
                if tuple(P.shape) != (d_model, K):
                    raise MetricError(
                        f"projection_matrices[{label!r}] has shape {tuple(P.shape)}, expected ({d_model}, {K})."
                    )
            else:
                P = projection_matrix(d_model, K, seed)
            P = P.to(device=dev, dtype=dtype)
        if k not in nulls:
            rng = np.random.default_rng(null_seed_sequence(seed, int(layer), k))
            nulls[k] = torch.from_numpy(haar_blocks(null_draws, k, null_block_size(k, d_head), rng)).to(device=dev, dtype=dtype)
        for fi, fam in enumerate(families):
            F, G = family_factors(_Weights(Wt), fam)
            if P is not None:
                F, G = compress(F, G, P)
            ch = canonical_heads(F, G, symmetric=is_symmetric_family(fam))
            res = _family_metrics(ch, nulls[k], alpha=alpha, tau=tau)
            for name, val in res.items():
                out[name][fi, pi] = val

    out.update(_head_metrics(Wt))
    return {name: out[name] for name in METRIC_REGISTRY}


@dataclass(frozen=True)
class _Weights:
    """Canonical weights after dtype/device conversion (what :func:`family_factors` reads)."""

    t: dict[str, torch.Tensor]

    @property
    def W_Q(self) -> torch.Tensor:
        return self.t["Q"]

    @property
    def W_K(self) -> torch.Tensor:
        return self.t["K"]

    @property
    def W_V(self) -> torch.Tensor:
        return self.t["V"]

    @property
    def W_O(self) -> torch.Tensor:
        return self.t["O"]


def _head_metrics(Wt: dict[str, torch.Tensor]) -> dict[str, np.ndarray]:
    """METRICS.md §5.2-§5.4 (weight norms, OV norm, head contribution), factored."""
    wn = torch.stack([torch.linalg.vector_norm(Wt[m], dim=(-2, -1)) for m in MATRICES])
    gv = Wt["V"].transpose(-1, -2) @ Wt["V"]  # [H, r, r]
    go = Wt["O"] @ Wt["O"].transpose(-1, -2)  # [H, r, r]
    ov = torch.sqrt(torch.clamp((gv * go).sum((-1, -2)), min=0.0))  # ||W_V W_O||_F = sqrt(tr(gv go))
    ov_np = _np(ov)
    total = ov_np.sum()
    contrib = ov_np / total if total > 0 else np.full_like(ov_np, np.nan)
    return {V_WNORM: _np(wn), V_OVNORM: ov_np, V_CONTRIB: contrib}


def compute_checkpoint(layers: Iterable["LayerWeights"], **kwargs: Any) -> dict[str, np.ndarray]:
    """:func:`compute_layer` on every layer, stacked along ``layer`` where the schema puts it.

    Layers are stacked in the order given; keyword arguments are those of
    :func:`compute_layer`. Raises :class:`MetricError` when a layer index repeats or no layer
    is given.

    Examples
    --------
    >>> import types
    >>> mk = lambda l: types.SimpleNamespace(layer=l, W_Q=torch.ones(2, 4, 2), W_K=torch.ones(2, 4, 2),
    ...                                      W_V=torch.ones(2, 4, 2), W_O=torch.ones(2, 2, 4))
    >>> out = compute_checkpoint([mk(0), mk(1)], families=("Q",))
    >>> out["commutator"].shape, out["ov_norm"].shape
    ((1, 1, 2, 2, 2), (2, 2))
    """
    per_layer: list[dict[str, np.ndarray]] = []
    seen: set[int] = set()
    for w in layers:
        lay = getattr(w, "layer", None)
        if lay in seen:
            raise MetricError(f"compute_checkpoint: layer {lay} given twice.")
        seen.add(lay)
        per_layer.append(compute_layer(w, **kwargs))
    if not per_layer:
        raise MetricError("compute_checkpoint: no layers given.")
    out = {}
    for name in per_layer[0]:
        axis = METRIC_REGISTRY[name].dims.index(LAYER)
        out[name] = np.stack([r[name] for r in per_layer], axis=axis)
    return out


def change_from_init(w: "LayerWeights", w0: "LayerWeights") -> np.ndarray:
    """``||W(s) - W(s0)||_F / ||W(s0)||_F`` per head, ``W`` stacking ``W_Q, W_K, W_V, W_O`` (METRICS.md §5.5).

    Computed in float64 on the CPU. NaN for a head whose initial weights are all zero.

    Examples
    --------
    >>> import types
    >>> mk = lambda x: types.SimpleNamespace(layer=0, W_Q=x * torch.ones(2, 4, 2), W_K=x * torch.ones(2, 4, 2),
    ...                                      W_V=x * torch.ones(2, 4, 2), W_O=x * torch.ones(2, 2, 4))
    >>> change_from_init(mk(3.0), mk(2.0))
    array([0.5, 0.5])
    """
    cur = _layer_tensors(w, torch.device("cpu"), torch.float64)
    ini = _layer_tensors(w0, torch.device("cpu"), torch.float64)
    for m in MATRICES:
        if cur[m].shape != ini[m].shape:
            raise MetricError(
                f"change_from_init: W_{m} of layer {getattr(w, 'layer', '?')} has shape {tuple(cur[m].shape)}, "
                f"but the initial checkpoint's has {tuple(ini[m].shape)}."
            )
    num = sum((cur[m] - ini[m]).pow(2).sum((-2, -1)) for m in MATRICES)
    den = sum(ini[m].pow(2).sum((-2, -1)) for m in MATRICES)
    num_np, den_np = _np(num), _np(den)
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(den_np > 0, np.sqrt(num_np) / np.sqrt(np.where(den_np > 0, den_np, 1.0)), np.nan)
