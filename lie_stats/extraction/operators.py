"""Operator families in factored form, compressions, and the random-orientation null.

Everything here implements METRICS.md §2 (operators, compression) and the sampling side of
§3.3 (random-orientation null). The residual-stream operator of a head is never formed: a
family returns two factors ``F, G`` (``A = F G^T``, each ``[n_heads, k, d_head]``) and every
quantity is a trace of ``d_head x d_head`` products of them (cf. TransformerLens'
``FactoredMatrix``).

Canonical coordinates
---------------------
:func:`canonical_heads` rewrites each head's factors as ``A = Fh Gh^T`` with ``Fh = U diag(s)``
and ``Gh = V`` (a thin SVD obtained from two QRs and one ``d_head x d_head`` SVD), so that
``Fh^T Fh = diag(s^2)`` and ``Gh^T Gh = I``. All pairwise quantities then come from one
``2m x 2m`` matrix per pair,

    ``Omega[i, j] = [Fh_i Gh_i]^T O [Fh_j Gh_j]``

with ``O = I`` for the weights themselves and ``O`` Haar-random for the null (see
:func:`pair_terms`).

Random-orientation null (METRICS.md §3.3)
-----------------------------------------
Under the null each head is conjugated by its own Haar-random ``U_h``; a pair ``(i, j)`` only
sees ``O = U_i^T U_j``, itself Haar, and only through ``Q_i^T O Q_j`` where ``Q_h``
(``k x s``) is an orthonormal basis of the span of head ``h``'s factors. For any fixed
orthonormal ``Q_i, Q_j`` that block has the law of the top-left ``s x s`` block of a Haar
orthogonal ``k x k`` matrix (bi-invariance of Haar measure). So one draw is one such block
``B`` (:func:`haar_blocks`, sampled in ``O(s^3)`` through the Bartlett decomposition, i.e.
without ever touching a ``k``-dimensional vector), shared by all pairs of the layer, and
``Omega_null[i, j] = Chat_i^T B Chat_j`` with ``Chat_h`` the coordinates of head ``h``'s
factors in ``Q_h`` (:func:`null_coordinates`). Each pair's null distribution is exactly the
law of METRICS.md §3.3; the dependence between pairs within a draw differs from that of
"one ``U_h`` per head", which no metric uses (every metric reads one pair's null at a time).
The draws are taken on the CPU in float64 from a :class:`numpy.random.SeedSequence`, so the
same seed gives the same null on every machine and device.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np
import torch

from ..errors import MetricError, did_you_mean
from ..schema import FAMILIES, GRAM_FAMILIES, PROJECTION_ADAPTIVE, PROJECTION_NONE, parse_projection

if TYPE_CHECKING:  # pragma: no cover
    from .architectures import LayerWeights

__all__ = [
    "family_factors",
    "is_symmetric_family",
    "projection_matrix",
    "projection_size",
    "compress",
    "CanonicalHeads",
    "canonical_heads",
    "null_coordinates",
    "null_seed_sequence",
    "null_block_size",
    "haar_blocks",
    "actual_omega",
    "symmetric_omega",
    "pair_terms",
    "pair_terms_blocks",
    "null_commutators",
    "normalized_commutator",
    "killing_form",
    "normalized_killing",
    "killing_cv",
]

#: Relative floor of METRICS.md §3.2: ``c = 0`` when ``||A_i A_j|| + ||A_j A_i||`` is below
#: this times ``||A_i|| ||A_j||``.
DENOMINATOR_FLOOR = 1e-12


def _check_family(family: str) -> None:
    if family not in FAMILIES:
        raise MetricError(
            f"Unknown operator family {family!r}.{did_you_mean(family, FAMILIES)} "
            f"Known families (METRICS.md §2): {', '.join(FAMILIES)}."
        )


def is_symmetric_family(family: str) -> bool:
    """True for the read/write Gram families ``Q, K, V, O`` (``A = F F^T``), METRICS.md §2.

    Examples
    --------
    >>> is_symmetric_family("O"), is_symmetric_family("OV")
    (True, False)
    """
    _check_family(family)
    return family in GRAM_FAMILIES


def _weight(w: Any, name: str) -> torch.Tensor:
    try:
        t = getattr(w, name)
    except AttributeError:
        raise MetricError(
            f"Layer weights {type(w).__name__} have no attribute {name!r}: expected the canonical "
            f"head weights of METRICS.md §1 (W_Q, W_K, W_V, W_O)."
        ) from None
    if not isinstance(t, torch.Tensor):
        raise MetricError(f"{name} of layer {getattr(w, 'layer', '?')} is a {type(t).__name__}, expected a torch.Tensor.")
    return t


def family_factors(w: "LayerWeights", family: str) -> tuple[torch.Tensor, torch.Tensor]:
    """Factors ``F, G`` of a family's operators, ``A[h] = F[h] G[h]^T`` (METRICS.md §2).

    Parameters
    ----------
    w
        Canonical head weights of one layer (any object with ``W_Q, W_K, W_V``
        ``[n_heads, d_model, d_head]`` and ``W_O`` ``[n_heads, d_head, d_model]``).
    family
        One of ``Q, K, V`` (read Grams ``W_X W_X^T``), ``O`` (write Gram ``W_O^T W_O``),
        ``QK`` (``W_Q W_K^T``), ``OV`` (``W_V W_O``).

    Returns
    -------
    F, G : torch.Tensor
        Each ``[n_heads, d_model, d_head]``, views of the input (no copy, same dtype).

    Raises
    ------
    MetricError
        On an unknown family (with a suggestion) or a missing weight.

    Examples
    --------
    >>> import types
    >>> w = types.SimpleNamespace(W_Q=torch.ones(2, 5, 3), W_K=torch.zeros(2, 5, 3),
    ...                           W_V=torch.ones(2, 5, 3), W_O=torch.ones(2, 3, 5))
    >>> F, G = family_factors(w, "OV")
    >>> tuple(F.shape), tuple(G.shape)
    ((2, 5, 3), (2, 5, 3))
    """
    _check_family(family)
    if family in ("Q", "K", "V"):
        x = _weight(w, f"W_{family}")
        return x, x
    if family == "O":
        x = _weight(w, "W_O").transpose(-1, -2)
        return x, x
    if family == "QK":
        return _weight(w, "W_Q"), _weight(w, "W_K")
    # OV: W_V W_O = W_V (W_O^T)^T
    return _weight(w, "W_V"), _weight(w, "W_O").transpose(-1, -2)


def _qr(x: torch.Tensor, *, want_q: bool = True) -> tuple[torch.Tensor | None, torch.Tensor]:
    """Reduced QR through ``geqrf`` + ``householder_product``.

    Same factors as ``torch.linalg.qr(x)`` (LAPACK Householder QR). ``torch.linalg.qr`` and
    ``torch.triu`` were measured 1000x slower than this on small batched inputs on a loaded
    2-core CPU (10-20 ms vs 10-20 us per call: OpenMP wake-ups).
    """
    n = min(x.shape[-2], x.shape[-1])
    a, tau = torch.geqrf(x)
    rows = torch.arange(n, device=x.device)[:, None]
    cols = torch.arange(x.shape[-1], device=x.device)[None, :]
    R = torch.where(rows <= cols, a[..., :n, :], torch.zeros((), dtype=a.dtype, device=a.device))
    if not want_q:
        return None, R
    return torch.linalg.householder_product(a[..., :, :n], tau), R


# ----------------------------------------------------------------------------- compression
def projection_matrix(d_model: int, k: int, seed: int) -> torch.Tensor:
    """Haar-random ``P`` (``d_model x k``, orthonormal columns) of METRICS.md §2 (compression).

    Drawn on the CPU in float64 from ``numpy.random.SeedSequence([seed, d_model, k])``
    (a Gaussian matrix, QR, signs fixed so that ``R`` has a positive diagonal, which makes
    the columns Haar-distributed), so the same seed gives the same ``P`` on every machine;
    cast it to the compute dtype/device afterwards.

    Examples
    --------
    >>> P = projection_matrix(6, 3, seed=1)
    >>> P.dtype, tuple(P.shape), bool(torch.allclose(P.T @ P, torch.eye(3, dtype=P.dtype)))
    (torch.float64, (6, 3), True)
    >>> bool(torch.equal(P, projection_matrix(6, 3, seed=1)))
    True
    """
    if not (isinstance(d_model, int) and isinstance(k, int)) or k < 1 or k > d_model:
        raise MetricError(
            f"projection_matrix: need integers 1 <= k <= d_model, got k={k!r}, d_model={d_model!r} "
            f"(METRICS.md §2: P is d_model x K with orthonormal columns)."
        )
    _check_seed(seed)
    rng = np.random.default_rng(np.random.SeedSequence([seed, d_model, k]))
    z = rng.standard_normal((d_model, k))
    q, r = np.linalg.qr(z)
    q = q * np.sign(np.diag(r))[None, :]
    return torch.from_numpy(np.ascontiguousarray(q))


def projection_size(label: str, d_model: int, d_head: int) -> int | None:
    """Size ``K`` of a compression label (None for ``"none"``), METRICS.md §2.

    Examples
    --------
    >>> projection_size("adaptive", 384, 32), projection_size("fixed:64", 384, 32), projection_size("none", 384, 32)
    (32, 64, None)
    """
    try:
        kind, k = parse_projection(label)
    except ValueError as e:
        raise MetricError(str(e)) from e
    if kind == PROJECTION_NONE:
        return None
    if kind == PROJECTION_ADAPTIVE:
        k = d_head
    assert k is not None
    if k > d_model:
        raise MetricError(
            f"Projection {label!r} asks for K={k} > d_model={d_model}: a compression must map the "
            f"residual stream to at most its own dimension (METRICS.md §2)."
        )
    return k


def compress(F: torch.Tensor, G: torch.Tensor, P: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """Compressed factors ``P^T F, P^T G``: ``P^T A P = (P^T F)(P^T G)^T`` (METRICS.md §2).

    Examples
    --------
    >>> F = torch.randn(2, 6, 3, dtype=torch.float64); P = projection_matrix(6, 4, seed=0)
    >>> Fc, Gc = compress(F, F, P)
    >>> tuple(Fc.shape)
    (2, 4, 3)
    >>> bool(torch.allclose(Fc[0] @ Gc[0].T, P.T @ (F[0] @ F[0].T) @ P))
    True
    """
    if P.ndim != 2 or P.shape[0] != F.shape[-2]:
        raise MetricError(
            f"Projection matrix of shape {tuple(P.shape)} does not fit factors of shape "
            f"{tuple(F.shape)}: expected [d_model={F.shape[-2]}, K]."
        )
    P = P.to(dtype=F.dtype, device=F.device)
    return torch.einsum("dk,hdr->hkr", P, F), torch.einsum("dk,hdr->hkr", P, G)


# ----------------------------------------------------------------------------- canonical form
@dataclass(frozen=True)
class CanonicalHeads:
    """One family's heads in canonical coordinates: ``A[h] = Fh[h] Gh[h]^T``.

    ``Fh = U diag(s)``, ``Gh = V`` (properties) with ``U, V`` orthonormal (``[n_heads, k, m]``,
    ``m = min(k, d_head)``); ``s2 = s**2`` (``[n_heads, m]``); ``k`` the operator size;
    ``symmetric`` for Gram families, where ``V = U`` and ``s`` are the eigenvalues.
    """

    U: torch.Tensor
    V: torch.Tensor
    s: torch.Tensor
    k: int
    symmetric: bool

    @property
    def Fh(self) -> torch.Tensor:
        return self.U * self.s[:, None, :]

    @property
    def Gh(self) -> torch.Tensor:
        return self.V

    @property
    def s2(self) -> torch.Tensor:
        return self.s * self.s

    @property
    def n_heads(self) -> int:
        return int(self.Fh.shape[0])

    @property
    def rank(self) -> int:
        return int(self.Fh.shape[-1])


def canonical_heads(F: torch.Tensor, G: torch.Tensor, *, symmetric: bool) -> CanonicalHeads:
    """Thin SVD of every head's ``A = F G^T`` from its factors (METRICS.md §2, factored form).

    Two batched QRs (``F = Q_F R_F``, ``G = Q_G R_G``) and one SVD of the
    ``d_head x d_head`` core ``R_F R_G^T``; the ``k x k`` operator is never formed. For a
    symmetric family (``F is G``, ``A = F F^T``) the eigen-decomposition comes from the SVD of
    ``R_F`` (``A = Q_F R_F R_F^T Q_F^T``) and is exactly positive semi-definite.

    Examples
    --------
    >>> F = torch.randn(3, 7, 2, dtype=torch.float64); G = torch.randn(3, 7, 2, dtype=torch.float64)
    >>> ch = canonical_heads(F, G, symmetric=False)
    >>> bool(torch.allclose(ch.Fh @ ch.Gh.transpose(-1, -2), F @ G.transpose(-1, -2)))
    True
    """
    if F.shape != G.shape or F.ndim != 3:
        raise MetricError(f"Factors must both be [n_heads, k, d_head]; got {tuple(F.shape)} and {tuple(G.shape)}.")
    k = int(F.shape[-2])
    if symmetric:
        q, r = _qr(F)
        u, s, _ = torch.linalg.svd(r, full_matrices=False)
        U = q @ u
        lam = s * s
        return CanonicalHeads(U, U, lam, k, True)
    qf, rf = _qr(F)
    qg, rg = _qr(G)
    u, s, vh = torch.linalg.svd(rf @ rg.transpose(-1, -2))
    U = qf @ u
    V = qg @ vh.transpose(-1, -2)
    return CanonicalHeads(U, V, s, k, False)


def actual_omega(ch: CanonicalHeads) -> torch.Tensor:
    """``Omega[i, j] = [Fh_i Gh_i]^T [Fh_j Gh_j]`` for all head pairs, ``[H, H, 2m, 2m]``.

    The weights' own pairwise Gram blocks (``O = I`` in :func:`pair_terms`); one batched
    product of the stacked factors, ``O(H^2 m^2 k)``.

    Examples
    --------
    >>> ch = canonical_heads(*(torch.randn(2, 2, 5, 2, dtype=torch.float64)), symmetric=False)
    >>> tuple(actual_omega(ch).shape)
    (2, 2, 4, 4)
    """
    H, k, m = ch.U.shape
    if ch.symmetric:
        Uf = ch.U.permute(1, 0, 2).reshape(k, H * m)
        B = (Uf.T @ Uf).reshape(H, m, H, m).permute(0, 2, 1, 3)
        return symmetric_omega(B, ch.s[:, None, :], ch.s[None, :, :])
    S = torch.cat([ch.Fh, ch.Gh], dim=-1)  # [H, k, 2m]
    S2 = S.permute(1, 0, 2).reshape(k, H * 2 * m)
    w = 2 * m
    om = S.new_empty((H, H, w, w))
    for i in range(H):  # block row i, j >= i; Omega[j, i] = Omega[i, j]^T
        row = (S[i].T @ S2[:, i * w:]).reshape(w, H - i, w).permute(1, 0, 2)
        om[i, i:] = row
        om[i + 1:, i] = row[1:].transpose(-1, -2)
    return om


def symmetric_omega(B: torch.Tensor, lam_i: torch.Tensor, lam_j: torch.Tensor) -> torch.Tensor:
    """``Omega`` of Gram-family pairs from ``B = U_i^T O U_j`` and the eigenvalues.

    With ``Fh = U diag(lam)``, ``Gh = U``: ``X = lam_i B lam_j``, ``F_i^T O G_j = lam_i B``,
    ``G_i^T O F_j = B lam_j``, ``Y = B`` (broadcast over leading dimensions).

    Examples
    --------
    >>> B = torch.eye(2, dtype=torch.float64); lam = torch.tensor([2.0, 1.0], dtype=torch.float64)
    >>> symmetric_omega(B, lam, lam)[0]
    tensor([4., 0., 2., 0.], dtype=torch.float64)
    """
    li = lam_i[..., :, None]
    lj = lam_j[..., None, :]
    B = B.expand(torch.broadcast_shapes(B.shape, li.shape, lj.shape))
    top = torch.cat([li * B * lj, li * B], dim=-1)
    bottom = torch.cat([B * lj, B], dim=-1)
    return torch.cat([top, bottom], dim=-2)


def pair_terms(omega: torch.Tensor, s2_i: torch.Tensor, s2_j: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor]:
    """The four traces every pairwise metric needs, from ``Omega`` (METRICS.md §3).

    With ``M_ij = Gh_i^T O Fh_j``, ``M_ji = Gh_j^T O^T Fh_i``, ``X = Fh_i^T O Fh_j``,
    ``Y = Gh_i^T O Gh_j`` (blocks of ``Omega``), ``Fh^T Fh = diag(s2)`` and ``Gh^T Gh = I``:

    - ``a = ||A_i A_j||_F^2 = sum_ab s2_i[a] M_ij[a,b]^2``
    - ``b = ||A_j A_i||_F^2 = sum_ab s2_j[a] M_ji[a,b]^2``
    - ``t = <A_i A_j, A_j A_i>_F = tr(M_ij^T X M_ji Y)``
    - ``tr(A_i A_j) = tr(M_ji M_ij)``

    so ``||[A_i, A_j]||_F^2 = a + b - 2 t``. Here ``A_j`` stands for ``O A_j O^T``.

    Examples
    --------
    >>> F = torch.randn(2, 6, 3, dtype=torch.float64); G = torch.randn(2, 6, 3, dtype=torch.float64)
    >>> ch = canonical_heads(F, G, symmetric=False); om = actual_omega(ch)
    >>> a, b, t, tr = pair_terms(om[0, 1], ch.s2[0], ch.s2[1])
    >>> A0, A1 = F[0] @ G[0].T, F[1] @ G[1].T
    >>> bool(torch.isclose(a + b - 2 * t, torch.linalg.norm(A0 @ A1 - A1 @ A0) ** 2))
    True
    """
    m_i = s2_i.shape[-1]
    return pair_terms_blocks(
        omega[..., :m_i, :m_i], omega[..., :m_i, m_i:], omega[..., m_i:, :m_i], omega[..., m_i:, m_i:], s2_i, s2_j
    )


def pair_terms_blocks(
    X: torch.Tensor, FG: torch.Tensor, M: torch.Tensor, Y: torch.Tensor, s2_i: torch.Tensor, s2_j: torch.Tensor
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor]:
    """:func:`pair_terms` from the four blocks ``X = Fh_i^T O Fh_j``, ``FG = Fh_i^T O Gh_j``,
    ``M = Gh_i^T O Fh_j``, ``Y = Gh_i^T O Gh_j`` (METRICS.md §3).

    Examples
    --------
    >>> e = torch.eye(2, dtype=torch.float64); s2 = torch.ones(2, dtype=torch.float64)
    >>> [float(v) for v in pair_terms_blocks(e, e, e, e, s2, s2)]   # A_i = A_j = I_2
    [2.0, 2.0, 2.0, 2.0]
    """
    Mji = FG.transpose(-1, -2)
    a = (s2_i[..., :, None] * M * M).sum((-1, -2))
    b = (s2_j[..., :, None] * Mji * Mji).sum((-1, -2))
    t = (M * (X @ Mji @ Y)).sum((-1, -2))
    tr = (M * FG).sum((-1, -2))
    return a, b, t, tr


def normalized_commutator(
    a: torch.Tensor, b: torch.Tensor, t: torch.Tensor, norm_i: torch.Tensor, norm_j: torch.Tensor
) -> tuple[torch.Tensor, torch.Tensor]:
    """``C = ||[A_i, A_j]||_F`` (§3.1) and ``c = C / (||A_i A_j|| + ||A_j A_i||)`` (§3.2).

    ``c = 0`` where the denominator is below ``1e-12 ||A_i|| ||A_j||``. ``C^2 = a + b - 2t``
    is clipped at 0; in float64 this leaves an absolute error of about ``1e-8`` on ``c``
    for commuting pairs (cancellation, ``sqrt`` of machine epsilon), ``3e-4`` in float32.

    Examples
    --------
    >>> one = torch.tensor(1.0, dtype=torch.float64)
    >>> normalized_commutator(one, one, -one, one, one)   # A_i A_j = -A_j A_i
    (tensor(2., dtype=torch.float64), tensor(1., dtype=torch.float64))
    """
    C = torch.sqrt(torch.clamp(a + b - 2.0 * t, min=0.0))
    den = torch.sqrt(torch.clamp(a, min=0.0)) + torch.sqrt(torch.clamp(b, min=0.0))
    ok = den > DENOMINATOR_FLOOR * norm_i * norm_j
    c = torch.where(ok, C / torch.where(ok, den, torch.ones_like(den)), torch.zeros_like(C))
    return C, torch.clamp(c, max=1.0)


# ----------------------------------------------------------------------------- Killing form
def killing_form(trAA: torch.Tensor, trA: torch.Tensor, k: int) -> torch.Tensor:
    """The Killing form of METRICS.md §3.4, ``K[i, j] = 2k tr(A_i A_j) - 2 tr(A_i) tr(A_j)``.

    ``trAA`` is ``[H, H]`` (``tr(A_i A_j)``), ``trA`` is ``[H]`` and ``k`` the operator size
    (``d_model``, or the compression's ``K``). The result is symmetrised exactly
    (``tr(A_i A_j) = tr(A_j A_i)``; this removes rounding asymmetry).

    Examples
    --------
    >>> trAA = torch.tensor([[2.0, 1.0], [1.0, 3.0]], dtype=torch.float64)
    >>> killing_form(trAA, torch.tensor([1.0, 0.0], dtype=torch.float64), 2)
    tensor([[ 6.,  4.],
            [ 4., 12.]], dtype=torch.float64)
    """
    K = 2.0 * k * trAA - 2.0 * trA[:, None] * trA[None, :]
    return 0.5 * (K + K.T)


def normalized_killing(K: torch.Tensor) -> torch.Tensor:
    """``Khat[i, j] = K[i, j] / sqrt(|K[i, i] K[j, j]|)`` (METRICS.md §3.4); NaN where that is 0.

    Differentiable where the denominator is positive (the NaN branch carries no gradient).

    Examples
    --------
    >>> normalized_killing(torch.tensor([[4.0, 2.0], [2.0, 0.0]], dtype=torch.float64))
    tensor([[1., nan],
            [nan, nan]], dtype=torch.float64)
    """
    d = torch.diagonal(K)
    den = torch.sqrt(torch.abs(d[:, None] * d[None, :]))
    ok = den > 0
    return torch.where(ok, K / torch.where(ok, den, torch.ones_like(den)), torch.full_like(K, float("nan")))


def killing_cv(Khat: torch.Tensor) -> torch.Tensor:
    """``killing_cv`` (METRICS.md §4.4): population std over mean ``|.|`` of ``Khat`` over pairs ``i < j``.

    The one implementation, differentiable: the weight metrics (:mod:`lie_stats.extraction.metrics`, on
    the float64 ``Khat`` of the CPU) and the activation objective
    (:func:`lie_stats.extraction.activations.killing_cv_torch`, on factors that require grad) both call
    it. NaN with fewer than two heads, where mean ``|.|`` is 0, or where ``Khat`` has a NaN.

    Examples
    --------
    >>> killing_cv(torch.tensor([[1.0, 0.5, 1.0], [0.5, 1.0, 1.5], [1.0, 1.5, 1.0]], dtype=torch.float64))
    tensor(0.4082, dtype=torch.float64)
    """
    H = Khat.shape[0]
    iu = torch.triu_indices(H, H, 1, device=Khat.device)
    p = Khat[iu[0], iu[1]]
    if p.numel() == 0:
        return torch.full((), float("nan"), dtype=Khat.dtype, device=Khat.device)
    return torch.sqrt(torch.mean((p - p.mean()) ** 2)) / torch.mean(torch.abs(p))


# ----------------------------------------------------------------------------- null sampling
def _check_seed(seed: int) -> None:
    if not isinstance(seed, (int, np.integer)) or isinstance(seed, bool) or seed < 0:
        raise MetricError(f"seed must be a non-negative integer, got {seed!r}.")


def null_seed_sequence(seed: int, layer: int, k: int) -> np.random.SeedSequence:
    """Seed of the null draws of one layer for operators of size ``k`` (METRICS.md §3.3).

    ``numpy.random.SeedSequence([seed, layer], spawn_key=(k,))``: the layer's sequence
    ``SeedSequence([seed, layer])``, child ``k`` (``k = d_model`` uncompressed, ``K``
    compressed), so the draws of one layer do not depend on which families or other
    compressions were asked for.

    Examples
    --------
    >>> a = null_seed_sequence(0, 3, 64).generate_state(2)
    >>> bool((a == null_seed_sequence(0, 3, 64).generate_state(2)).all())
    True
    >>> bool((a == null_seed_sequence(0, 4, 64).generate_state(2)).all())
    False
    """
    _check_seed(seed)
    _check_seed(layer)
    return np.random.SeedSequence([int(seed), int(layer)], spawn_key=(int(k),))


def null_block_size(k: int, d_head: int) -> int:
    """Size ``s`` of the Haar blocks drawn for operators of size ``k``: ``min(k, 2 min(k, d_head))``.

    The span of a circuit head's two factors has dimension ``<= 2 d_head``; Gram families use
    the top-left ``min(k, d_head)`` sub-block of the same draws.

    >>> null_block_size(1024, 64), null_block_size(32, 64)
    (128, 32)
    """
    m = min(k, d_head)
    return min(k, 2 * m)


def haar_blocks(n_draws: int, k: int, s: int, rng: np.random.Generator) -> np.ndarray:
    """Top-left ``s x s`` blocks of ``n_draws`` Haar-random orthogonal ``k x k`` matrices.

    Float64 on the CPU. The first ``s`` columns of a Haar matrix are ``Z R^{-1}`` with ``Z``
    (``k x s``) standard Gaussian and ``Z = QR`` (positive diagonal); their top block is
    ``Z_top R^{-1}``. ``R`` depends on ``Z`` only through ``Z_top^T Z_top + Z_bot^T Z_bot``,
    and ``Z_bot^T Z_bot`` (Wishart, ``k - s`` degrees of freedom) is drawn through its
    Bartlett factor ``T`` (upper triangular, ``T_ii^2 ~ chi2(k - s - i)``, ``T_ij ~ N(0, 1)``
    above the diagonal; Bartlett 1933), so a draw costs ``O(s^3)`` whatever ``k``
    (METRICS.md §3.3).

    Examples
    --------
    >>> B = haar_blocks(2, 5, 5, np.random.default_rng(0))
    >>> np.allclose(B[0].T @ B[0], np.eye(5))   # s == k: the whole orthogonal matrix
    True
    """
    if not (1 <= s <= k):
        raise MetricError(f"haar_blocks: need 1 <= s <= k, got s={s}, k={k}.")
    z_top = rng.standard_normal((n_draws, s, s))
    n_bot = k - s
    if n_bot >= s:
        T = np.triu(rng.standard_normal((n_draws, s, s)), 1)
        df = n_bot - np.arange(s)
        diag = np.sqrt(rng.chisquare(df[None, :].repeat(n_draws, 0)))
        idx = np.arange(s)
        T[:, idx, idx] = diag
    else:
        T = rng.standard_normal((n_draws, n_bot, s))
    stacked = torch.from_numpy(np.concatenate([z_top, T], axis=1))
    q, r = _qr(stacked)  # CPU float64 LAPACK
    signs = torch.sign(torch.diagonal(r, dim1=-2, dim2=-1))
    signs = torch.where(signs == 0, torch.ones_like(signs), signs)
    q = q * signs[:, None, :]
    return np.ascontiguousarray(q[:, :s, :].numpy())


def null_coordinates(ch: CanonicalHeads) -> torch.Tensor:
    """``Chat[h]`` (``[H, s, 2m]``): head ``h``'s ``[Fh Gh]`` in an orthonormal basis of their span.

    ``[Fh_h Gh_h] = Q_h Chat_h`` (QR of ``[U_h V_h]``, then ``U`` scaled by ``s``), so that
    under the null ``Omega[i, j] = Chat_i^T B Chat_j`` with ``B`` a Haar block
    (METRICS.md §3.3). Only for non-symmetric families; Gram families use ``B`` directly
    (:func:`symmetric_omega`).

    Examples
    --------
    >>> F, G = torch.randn(2, 3, 8, 2, dtype=torch.float64)
    >>> ch = canonical_heads(F, G, symmetric=False); C = null_coordinates(ch)
    >>> tuple(C.shape)
    (3, 4, 4)
    >>> bool(torch.allclose(C[0].T @ C[0], actual_omega(ch)[0, 0]))
    True
    """
    if ch.symmetric:
        raise MetricError("null_coordinates is for non-symmetric (circuit) families; Gram families use symmetric_omega.")
    m = ch.rank
    _, R = _qr(torch.cat([ch.U, ch.V], dim=-1), want_q=False)
    # Positive diagonal: R is then the Cholesky factor of the Gram matrix of [U V], a
    # basis-free function of the head (so the null is invariant under a change of basis),
    # and, U being orthonormal, R[:m, :m] = I up to rounding.
    sign = torch.sign(torch.diagonal(R, dim1=-2, dim2=-1))
    sign = torch.where(sign == 0, torch.ones_like(sign), sign)
    R = R * sign[..., :, None]
    return torch.cat([R[..., :m] * ch.s[:, None, :], R[..., m:]], dim=-1)


def null_commutators(ch: CanonicalHeads, B: torch.Tensor, I: torch.Tensor, J: torch.Tensor, *, chunk_bytes: int = 256 * 2**20) -> torch.Tensor:
    """Normalized commutators ``c`` of pairs ``(I[p], J[p])`` under null draws ``B``: ``[n_draws, P]``.

    ``B`` (``[n_draws, s, s]``, ``s >=`` the span size of the family) are Haar blocks from
    :func:`haar_blocks`; draw ``n`` conjugates head ``J[p]`` relative to head ``I[p]``
    by an orthogonal ``O`` with ``Q_i^T O Q_j = B[n]`` (METRICS.md §3.3; see the module
    notes for why this is each pair's exact null).

    Gram families (``A = U diag(lam) U^T``): ``||A_i A_j||^2 = sum lam_i^2 (B o B) lam_j^2``
    and ``<A_i A_j, A_j A_i> = lam_i^T (S_j o S_j) lam_i`` with ``S_j = B lam_j B^T``, so a
    pair costs ``O(m^2)`` after an ``O(m^3)`` product per head and draw. Circuits use the
    basis of :func:`null_coordinates`, whose first ``m`` vectors are ``U``: three of the four
    blocks of ``Omega`` are per-head products, ``a`` and ``b`` contractions of them, and a
    pair costs ``3 m^3`` (``Y`` and one product for ``t``), done as one GEMM per block row.

    Examples
    --------
    >>> F, G = torch.randn(2, 3, 10, 2, dtype=torch.float64)
    >>> ch = canonical_heads(F, G, symmetric=False)
    >>> B = torch.from_numpy(haar_blocks(64, 10, 4, np.random.default_rng(0)))
    >>> I, J = torch.triu_indices(3, 3, 1)
    >>> c = null_commutators(ch, B, I, J)
    >>> tuple(c.shape), bool(((c >= 0) & (c <= 1)).all())
    ((64, 3), True)
    """
    n_draws = B.shape[0]
    P = int(I.numel())
    m = ch.rank
    s2 = ch.s2
    norm = torch.sqrt(s2.sum(-1))
    norm_i, norm_j = norm[I][None], norm[J][None]
    if P == 0:
        return B.new_zeros((n_draws, 0))
    H = ch.n_heads
    if not ch.symmetric and not torch.equal(torch.stack([I, J]).cpu(), torch.triu_indices(H, H, 1)):
        raise MetricError("null_commutators: circuit families take the pairs i < j in torch.triu_indices order.")
    out = []
    if ch.symmetric:
        per_draw = (ch.n_heads * m * m * 3 + ch.n_heads ** 2 * m) * B.element_size()
        chunk = max(1, min(n_draws, chunk_bytes // max(per_draw, 1)))
        lam = ch.s
        for lo in range(0, n_draws, chunk):
            Bm = B[lo:lo + chunk, :m, :m]
            a = torch.einsum("ia,nab,jb->nij", s2, Bm * Bm, s2)[:, I, J]
            S = (Bm[:, None] * lam[None, :, None, :]) @ Bm.transpose(-1, -2)[:, None]  # [n, H, m, m]
            T = (S * S) @ lam.T  # [n, H_j, m, H_i]: sum_c S_j[a, c]^2 lam_i[c]
            t = (T * lam.T[None, None]).sum(-2).transpose(-1, -2)[:, I, J]  # lam_i^T (S_j o S_j) lam_i
            out.append(normalized_commutator(a, a, t, norm_i, norm_j)[1])
        return torch.cat(out, dim=0)
    Ch = null_coordinates(ch)  # [H, s, 2m] = [[diag(sig), cU], [0, cL]]
    H = ch.n_heads
    s = Ch.shape[-2]
    cGf = Ch[..., m:].permute(1, 0, 2).reshape(s, H * m)  # [s, H m]: the Gh coordinates, stacked
    sig = ch.s
    per_draw = (H * m * m * 8 + H * s * m * 2 + H * H * 3) * B.element_size()
    chunk = max(1, min(n_draws, chunk_bytes // max(per_draw, 1)))
    for lo in range(0, n_draws, chunk):
        Bs = B[lo:lo + chunk, :s, :s]  # [c, s, s]
        c = Bs.shape[0]
        BcGf = Bs @ cGf  # [c, s, H m]: B cG_j for every head j
        BG = BcGf[:, :m].reshape(c, m, H, m).permute(0, 2, 1, 3)  # [c, H, m, m]: B[:m, :] cG_j
        GB = (cGf.T @ Bs[:, :, :m]).reshape(c, H, m, m)  # cG_i^T B[:, :m]
        # M_ij = GB_i diag(sig_j), M_ji = (diag(sig_i) BG_j)^T: a and b need no pair tensor
        a = torch.einsum("ia,ciab,jb->cij", s2, GB * GB, s2)[:, I, J]
        b = torch.einsum("ja,cjba,ib->cij", s2, BG * BG, s2)[:, I, J]
        # t = tr(M^T X M_ji Y) = tr(Z1 Z2), Z1 = GB_i^T diag(sig_i) W_j with
        # W_j = B_uu diag(sig_j) BG_j^T, Z2 = diag(sig_i) Y_ij diag(sig_j), Y_ij = cG_i^T B cG_j;
        # one GEMM per block row i against all j > i (pairs are ordered row by row)
        W = (Bs[:, None, :m, :m] * sig[None, :, None, :]) @ BG.transpose(-1, -2)  # [c, H, m, m]
        Wcat = W.permute(0, 2, 1, 3).reshape(c, m, H * m)  # [W_1 ... W_H]
        Pm = GB.transpose(-1, -2) * sig[None, :, None, :]  # GB_i^T diag(sig_i)
        rows = []
        for i in range(H - 1):
            nj = H - 1 - i
            Z1 = (Pm[:, i] @ Wcat[:, :, (i + 1) * m:]).reshape(c, m, nj, m)  # [c, a, j, b]
            Y = (cGf[:, i * m:(i + 1) * m].T @ BcGf[:, :, (i + 1) * m:]).reshape(c, m, nj, m)
            Z2 = sig[i][None, :, None, None] * Y * sig[i + 1:][None, None, :, :]  # [c, b, j, a]
            rows.append((Z1 * Z2.permute(0, 3, 2, 1)).sum((1, 3)))
        t = torch.cat(rows, dim=1)
        out.append(normalized_commutator(a, b, t, norm_i, norm_j)[1])
    return torch.cat(out, dim=0)
