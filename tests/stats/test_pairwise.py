"""lie_stats.stats.pairwise: pair summaries, head vs layer enrichment (B2), boundary
enrichment profile (B3), functional vs total Killing form (B8)."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest
import scipy.stats as sps
import torch

from lie_stats.extraction.activations import killing_cv_torch
from lie_stats.errors import StatsInputError
from lie_stats.forms import functional_killing
from lie_stats.stats import pairwise as kp

from ._sim import BAND, N_DATASETS, rejections


def sym(rng, shape, loc=1.0, scale=0.2):
    x = loc + scale * rng.normal(size=shape)
    return (x + np.swapaxes(x, -1, -2)) / 2


# ------------------------------------------------------------------ summaries
def test_pair_and_row_summary_match_scipy():
    rng = np.random.default_rng(0)
    m = sym(rng, (3, 6, 6), loc=2.0, scale=0.3)  # positive entries: mean |x| = mean x
    iu = np.triu_indices(6, 1)
    for layer in range(3):
        pairs = m[layer][iu]
        # scipy.stats.variation(pairs) = std(ddof=0) / mean
        assert kp.pair_summary(m[layer]) == pytest.approx(sps.variation(pairs))
        assert kp.pair_summary(m[layer], summary="mean_abs") == pytest.approx(np.abs(pairs).mean())
        for h in range(6):
            row = np.delete(m[layer][h], h)
            assert kp.row_summary(m)[layer, h] == pytest.approx(sps.variation(row))
    # NaN pairs are left out, negative entries enter |.| in the denominator
    x = np.array([[0.0, -1.0, 2.0], [-1.0, 0.0, np.nan], [2.0, np.nan, 0.0]])
    assert kp.pair_summary(x) == pytest.approx(np.std([-1.0, 2.0]) / 1.5)
    with pytest.raises(StatsInputError, match="not one of 'cv'"):
        kp.pair_summary(x, summary="vc")
    with pytest.raises(StatsInputError, match="square"):
        kp.row_summary(np.ones((3, 4)))


def test_pair_summary_of_khat_is_killing_cv():
    # the project's own killing_cv (METRICS.md §4.4), computed from factors with torch
    g = torch.Generator().manual_seed(3)
    W = torch.randn(5, 12, 3, generator=g, dtype=torch.float64)
    cv = float(killing_cv_torch(W, W))
    A = torch.einsum("hdr,her->hde", W, W).numpy()  # read Grams W W^T
    k = A.shape[-1]
    K = 2 * k * np.einsum("ide,jed->ij", A, A) - 2 * np.outer(np.trace(A, axis1=1, axis2=2),
                                                               np.trace(A, axis1=1, axis2=2))
    khat = K / np.sqrt(np.abs(np.outer(np.diag(K), np.diag(K))))
    assert kp.pair_summary(khat) == pytest.approx(cv, rel=1e-10)


# ------------------------------------------------------------------ B2: head vs layer
def _walk(rng, layers=4, steps=6, heads=5, drift=None):
    out = []
    for _ in range(layers):
        d = 0.3 * rng.normal(size=(steps - 1, heads)) + 0.2  # common growth, exchangeable heads
        if drift is not None:
            d[:, 0] += drift
        v = np.exp(np.vstack([np.zeros((1, heads)), np.cumsum(d, axis=0)]))
        out.append(v)
    return out


def test_head_excess_point_estimates():
    rng = np.random.default_rng(1)
    V = _walk(rng)
    W = [v.mean(axis=1) * 1.3 for v in V]
    res = kp.head_enrichment_excess(V, W, n_perm=99, n_boot=200)
    assert list(res.columns) == list(kp.HEAD_EXCESS_COLUMNS)
    ratios = np.array([(v[-1] / v[0]).max() / (w[-1] / w[0]) for v, w in zip(V, W)])
    assert res["effect"].iloc[0] == pytest.approx(sps.gmean(ratios))  # scipy.stats.gmean
    assert res["max_ratio"].iloc[0] == pytest.approx(ratios.max())
    k = int(res["max_ratio_unit"].iloc[0])
    assert k == int(np.argmax(ratios))
    assert res["max_head_enrichment"].iloc[0] == pytest.approx((V[k][-1] / V[k][0]).max())
    assert res["ci_low"].iloc[0] <= res["effect"].iloc[0] <= res["ci_high"].iloc[0]
    # 4 layers: all 2**4 sign vectors enumerated (15 besides the identity)
    assert res["n"].iloc[0] == 4 and res["n_heads"].iloc[0] == 20 and res["exact"].iloc[0] == 1
    assert res["n_perm"].iloc[0] == 15


def _centred_max(V: np.ndarray, W: np.ndarray) -> float:
    d = np.log(V[-1] / V[0]) - np.log(W[-1] / W[0])
    return float((d - d.mean()).max())


def test_head_excess_p_matches_time_reversal_enumeration():
    # brute force: every choice of layers whose trajectories are run backwards in time
    # (V[::-1], W[::-1]), the statistic recomputed from the reversed data
    rng = np.random.default_rng(3)
    V = [np.exp(rng.normal(size=(5, 4)).cumsum(axis=0)) for _ in range(5)]
    W = [v.mean(axis=1) for v in V]
    t_obs = np.mean([_centred_max(v, w) for v, w in zip(V, W)])
    null = [np.mean([_centred_max(v[::f], w[::f]) for v, w, f in zip(V, W, flips)])
            for flips in itertools.product((1, -1), repeat=5)]
    exact = np.mean(np.array(null) >= t_obs - 1e-12)  # the identity is among the 32
    res = kp.head_enrichment_excess(V, W, n_boot=0, alternative="greater")
    assert res["exact"].iloc[0] == 1 and res["n_perm"].iloc[0] == 31
    assert res["statistic"].iloc[0] == pytest.approx(t_obs)
    assert res["p_value"].iloc[0] == pytest.approx(exact)
    opposite = np.mean(np.array(null) <= t_obs + 1e-12)
    assert res["p_opposite"].iloc[0] == pytest.approx(opposite)
    # more layers: Monte Carlo sign vectors, p = (1 + count) / (1 + B)
    res = kp.head_enrichment_excess(V * 3, W * 3, n_perm=499, n_boot=0)
    assert res["exact"].iloc[0] == 0 and res["n_perm"].iloc[0] == 499
    assert np.isnan(kp.head_enrichment_excess(V[:1], W[:1], n_boot=100)["ci_low"].iloc[0])  # one layer


def _reverting(rng, layers=13, steps=10, heads=6, phi=0.3, drift=0.0):
    """Heads whose log departures from a common growing path are a stationary AR(1)
    (mean-reverting: the total change's variance is far below the sum of the increments')."""
    out = []
    for _ in range(layers):
        u = np.empty((steps, heads))
        u[0] = rng.normal(size=heads)
        for t in range(1, steps):
            u[t] = phi * u[t - 1] + math.sqrt(1 - phi ** 2) * rng.normal(size=heads)
        u[:, 0] += drift * np.arange(steps) / (steps - 1)
        out.append(np.exp(0.2 * np.arange(steps)[:, None] + 0.3 * u))
    return out


def test_head_excess_calibrated_and_powerful(record_property):
    # 13 layers: Monte Carlo with 199 sign vectors, P(p <= 0.05) = 10/200 exactly (module _sim)
    counts = {}
    for name, sim in (("walk", lambda r: _walk(r, layers=13, steps=5, heads=4)),
                      ("reverting", lambda r: _reverting(r))):
        ps = []
        for i in range(N_DATASETS):
            rng = np.random.default_rng(i)
            V = sim(rng)
            ps.append(kp.head_enrichment_excess(V, [v.mean(axis=1) for v in V], n_perm=199,
                                                n_boot=0, seed=i)["p_value"].iloc[0])
        counts[name] = rejections(ps)
    record_property("rejections", counts)
    assert all(BAND[0] <= c <= BAND[1] for c in counts.values()), counts
    # a head that keeps growing faster than its layer (persistent drift) is found
    rng = np.random.default_rng(7)
    V = _walk(rng, layers=6, steps=10, heads=6, drift=0.4)
    res = kp.head_enrichment_excess(V, [v.mean(axis=1) for v in V], n_perm=999, n_boot=0)
    assert res["p_value"].iloc[0] < 0.05 and res["effect"].iloc[0] > res["null_ratio"].iloc[0]
    # transient differences (independent noise around a common path): the per-transition
    # shuffle this test replaced read them as "heads more alike than the null" (p_opposite
    # < 0.01 here); time reversal does not
    steps = np.arange(10)[:, None]
    V = [np.exp(0.3 * steps + 0.5 * np.random.default_rng(s).normal(size=(10, 6))) for s in range(6)]
    res = kp.head_enrichment_excess(V, [v.mean(axis=1) for v in V], n_perm=999, n_boot=0)
    assert res["p_opposite"].iloc[0] > 0.05 and res["p_value"].iloc[0] > 0.05


def test_head_excess_errors():
    V = np.ones((4, 3)) + np.arange(4)[:, None]
    with pytest.raises(StatsInputError, match="positive"):
        kp.head_enrichment_excess([V - 2.0], [V.mean(axis=1)])
    with pytest.raises(StatsInputError, match="n_steps >= 3"):
        kp.head_enrichment_excess([V[:2]], [V[:2].mean(axis=1)])
    with pytest.raises(StatsInputError, match="checkpoints"):
        kp.head_enrichment_excess([V], [V.mean(axis=1)[:3]])
    with pytest.raises(StatsInputError, match="one head_values"):
        kp.head_enrichment_excess([], [])


# ------------------------------------------------------------------ B3: boundary profile
def test_boundary_enrichment_matches_brute_force():
    rng = np.random.default_rng(2)
    L, H = 8, 6
    first = sym(rng, (L, H, H), loc=4.0, scale=0.2)  # positive entries: CV = scipy's variation
    scale = np.array([0.8, 0.2, 0.25, 0.2, 0.22, 0.2, 0.2, 0.6])[:, None, None]
    last = 4.0 + scale * sym(rng, (L, H, H), loc=0.0, scale=1.0)
    res = kp.boundary_enrichment(first, last, n_boot=1000)
    assert list(res.columns) == list(kp.BOUNDARY_ENRICHMENT_COLUMNS)
    iu = np.triu_indices(H, 1)
    e = np.array([sps.variation(last[k][iu]) / sps.variation(first[k][iu]) for k in range(L)])
    ratio = (e[0] + e[-1]) / 2 / e[1:-1].mean()
    assert res["effect"].iloc[0] == pytest.approx(ratio)
    assert res["enrichment_first_layer"].iloc[0] == pytest.approx(e[0])
    assert res["enrichment_last_layer"].iloc[0] == pytest.approx(e[-1])
    # every pair of layers as "boundary" (itertools.combinations): p = share >= observed
    t = np.array([np.log((e[a] + e[b]) / 2 / np.delete(e, [a, b]).mean())
                  for a, b in itertools.combinations(range(L), 2)])
    assert res["null_center"].iloc[0] == pytest.approx(t.mean())
    assert res["p_value"].iloc[0] == pytest.approx(np.mean(t >= np.log(ratio) - 1e-12))
    assert res["p_value"].iloc[0] == pytest.approx(1 / 28)
    assert res["boundary_top2"].iloc[0] == 1
    assert 1.0 < res["ci_low"].iloc[0] < ratio < res["ci_high"].iloc[0]
    # an upper-triangular input (what a cube selection holds) gives the same numbers
    up = np.where(np.triu(np.ones((H, H), bool), 1), 1.0, np.nan)
    res_up = kp.boundary_enrichment(first * up, last * up, n_boot=1000)
    assert res_up["effect"].iloc[0] == pytest.approx(ratio)
    assert res_up["ci_low"].iloc[0] == pytest.approx(res["ci_low"].iloc[0])


def test_boundary_enrichment_calibrated(record_property):
    # C(16, 2) = 120 choices: P(p <= 0.05) = 6 / 120 = 0.05 exactly under exchangeable layers
    ps = []
    for i in range(N_DATASETS):
        rng = np.random.default_rng(i)
        ps.append(kp.boundary_enrichment(sym(rng, (16, 4, 4), 2.0, 0.3), sym(rng, (16, 4, 4), 2.0, 0.3),
                                         n_boot=0)["p_value"].iloc[0])
    count = rejections(ps)
    record_property("rejections", count)
    assert BAND[0] <= count <= BAND[1], count


def test_boundary_enrichment_errors():
    rng = np.random.default_rng(0)
    with pytest.raises(StatsInputError, match="3 layers"):
        kp.boundary_enrichment(sym(rng, (2, 4, 4)), sym(rng, (2, 4, 4)))
    with pytest.raises(StatsInputError, match="3 finite pairs"):
        kp.boundary_enrichment(sym(rng, (4, 2, 2)), sym(rng, (4, 2, 2)))
    with pytest.raises(StatsInputError, match="both be"):
        kp.boundary_enrichment(sym(rng, (4, 4, 4)), sym(rng, (5, 4, 4)))
    const = np.ones((4, 4, 4))
    with pytest.raises(StatsInputError, match="positive"):
        kp.boundary_enrichment(const, sym(rng, (4, 4, 4)))


# ------------------------------------------------------------------ B8: functional form
def _anchor_data(rng, L=6, H=8, w_anchor=0.05, n_anchors=3):
    k0 = sym(rng, (L, H, H), 1.0, 0.2)
    k1 = sym(rng, (L, H, H), 1.0, 0.2)
    for layer in (0, L - 1):  # anchor heads with large, varied Killing rows at the boundary
        for a in range(n_anchors):
            row = 1.0 + 3.0 * rng.normal(size=H)
            k1[layer, a, :] = row
            k1[layer, :, a] = row
    w0 = rng.uniform(0.8, 1.2, size=(L, H))
    w1 = rng.uniform(0.8, 1.2, size=(L, H))
    w1[[0, L - 1], :n_anchors] = w_anchor
    return k0, k1, w0, w1


def test_functional_shift_matches_definitions():
    rng = np.random.default_rng(4)
    k0, k1, w0, w1 = _anchor_data(rng)
    res = kp.functional_boundary_shift(k0, k1, w0, w1, summary="mean_abs", n_perm=999, n_boot=500)
    assert list(res.columns) == list(kp.FUNCTIONAL_SHIFT_COLUMNS)
    # the functional form is the metric's, lie_stats.forms.functional_killing (METRICS.md §8)
    f0, f1 = functional_killing(k0, w0), functional_killing(k1, w1)
    iu = np.triu_indices(8, 1)

    def br(a, b):
        e = np.array([np.abs(b[k][iu]).mean() / np.abs(a[k][iu]).mean() for k in range(6)])
        return (e[0] + e[-1]) / 2 / e[1:-1].mean()

    assert res["ratio_total"].iloc[0] == pytest.approx(br(k0, k1))
    assert res["ratio_functional"].iloc[0] == pytest.approx(br(f0, f1))
    assert res["effect"].iloc[0] == pytest.approx(br(f0, f1) / br(k0, k1))
    assert res["effect"].iloc[0] < 1 and res["ci_high"].iloc[0] < 1
    assert res["p_value"].iloc[0] < 0.01 and res["p_opposite"].iloc[0] > 0.99
    # the CV of the functional form also rises with the weights' own dispersion: the same
    # anchors, but the permutation null (weights of the same spread, at random) calibrates it
    cv = kp.functional_boundary_shift(k0, k1, w0, w1, summary="cv", n_perm=999, n_boot=0)
    cv_def = (np.std(f1[0][iu]) / np.abs(f1[0][iu]).mean()) / (np.std(f0[0][iu]) / np.abs(f0[0][iu]).mean())
    assert cv["ratio_functional"].iloc[0] / (cv_def + 0.0) > 0  # finite and positive
    assert cv["p_value"].iloc[0] < 0.05
    # uniform weights leave the form unchanged: effect exactly 1, every permutation too
    ones = np.ones_like(w0)
    same = kp.functional_boundary_shift(k0, k1, ones, ones, n_perm=50, n_boot=0)
    assert same["effect"].iloc[0] == pytest.approx(1.0) and same["p_value"].iloc[0] == 1.0


def test_functional_shift_calibrated(record_property):
    ps = []
    for i in range(N_DATASETS):
        rng = np.random.default_rng(i)
        k0, k1, w0, w1 = _anchor_data(rng, L=4, H=5, w_anchor=1.0)  # weights unrelated to the form
        ps.append(kp.functional_boundary_shift(k0, k1, w0, w1, n_perm=199, n_boot=0,
                                               seed=i)["p_value"].iloc[0])
    count = rejections(ps)
    record_property("rejections", count)
    assert BAND[0] <= count <= BAND[1], count


def test_functional_shift_errors():
    rng = np.random.default_rng(0)
    k0, k1, w0, w1 = _anchor_data(rng)
    with pytest.raises(StatsInputError, match="positive"):
        kp.functional_boundary_shift(k0, k1, -w0, w1)
    with pytest.raises(StatsInputError, match=r"\[n_layers, H\]"):
        kp.functional_boundary_shift(k0, k1, w0[:3], w1)
    assert math.isfinite(kp.functional_boundary_shift(k0, k1, w0, w1, n_perm=10, n_boot=0,
                                                      alternative="two-sided")["p_value"].iloc[0])


def test_the_stats_layer_and_the_functional_form_import_no_torch():
    """lie_stats.stats is the pure numeric layer: importing it (and the functional form it
    shares with the extraction, lie_stats.forms) loads neither torch nor a module that does."""
    import subprocess
    import sys

    code = ("import sys, lie_stats.stats, lie_stats.stats.pairwise, lie_stats.forms; "
            "print(sorted(m for m in sys.modules if m == 'torch' or m.startswith('torch.')))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]", out.stdout
