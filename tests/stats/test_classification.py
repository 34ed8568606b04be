"""lie_stats.stats.classification: AUC, kappa agreement, slope interaction, time to a fraction.

Cross-checks against scikit-learn, scipy and statsmodels (calls quoted beside the numbers),
hand computations, and calibration of every new p-value on simulated layer-confounded nulls
(2,000 datasets, 199 permutations each: the Binomial(2000, 0.05) 99 % band [76, 126], see
tests/stats/_sim.py).
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from scipy import stats as sps

from lie_stats.errors import StatsInputError
from lie_stats import columns as SC
from lie_stats.stats.classification import (threshold_agreement, class_auc, cohen_kappa,
                                            class_interaction, threshold_zones, time_to_fraction)
from lie_stats.columns import (AGREEMENT_COLUMNS, AUC_COLUMNS, AUC_POOLED, BALANCED_ACCURACY,
                                     CHANCE_AGREEMENT, INTERACTION_COLUMNS, KAPPA_POOLED, P_PARAMETRIC,
                                     SLOPE_GROUP0, SLOPE_GROUP1)
from lie_stats.stats.groups import group_difference

from ._sim import BAND, N_DATASETS, rejections

LAYER = np.repeat(np.arange(12), 8)


def val(res, col):
    return float(res[col].iloc[0])


# ------------------------------------------------------------------ AUC
def test_auc_columns_and_pooled_equals_sklearn():
    from sklearn.metrics import roc_auc_score

    rng = np.random.default_rng(0)
    x = np.round(rng.normal(size=96), 1)  # ties
    g = rng.random(96) < 0.3
    res = class_auc(x, g, strata=None, n_perm=999, n_boot=0)
    assert tuple(res.columns) == AUC_COLUMNS
    # sklearn: roc_auc_score(g, x)
    assert val(res, SC.EFFECT) == pytest.approx(roc_auc_score(g, x), abs=1e-12)
    # scipy: mannwhitneyu(x[g], x[~g]).statistic / (n1 * n0)
    u = sps.mannwhitneyu(x[g], x[~g]).statistic
    assert val(res, AUC_POOLED) == pytest.approx(u / (g.sum() * (~g).sum()), abs=1e-12)


def test_auc_within_strata_is_pair_weighted_mean_of_layer_aucs():
    from sklearn.metrics import roc_auc_score

    rng = np.random.default_rng(1)
    x = rng.normal(size=96) + 2.0 * LAYER
    g = rng.random(96) < 0.4
    res = class_auc(x, g, strata=LAYER, n_perm=999, n_boot=0)
    num = den = 0.0
    for layer in range(12):
        m = LAYER == layer
        n1, n0 = g[m].sum(), (~g[m]).sum()
        if n1 and n0:
            num += roc_auc_score(g[m], x[m]) * n1 * n0
            den += n1 * n0
    assert val(res, SC.EFFECT) == pytest.approx(num / den, abs=1e-12)
    assert val(res, SC.NULL_CENTER) == 0.5


def test_auc_exact_p_equals_exact_mannwhitney():
    x = np.array([0.3, 1.2, 2.5, 0.1, 3.3, 2.2, 1.9, 4.0])
    g = np.array([False, True, True, False, True, False, False, True])
    res = class_auc(x, g, strata=None, n_perm=50_000, n_boot=0)
    assert val(res, SC.EXACT) == 1
    # scipy: mannwhitneyu(x[g], x[~g], method="exact").pvalue
    assert val(res, SC.P_VALUE) == pytest.approx(sps.mannwhitneyu(x[g], x[~g], method="exact").pvalue, rel=1e-9)


def test_auc_interval_and_errors():
    rng = np.random.default_rng(2)
    g = rng.random(96) < 0.3
    x = rng.normal(size=96) + 1.5 * g + rng.normal(size=12)[LAYER]
    res = class_auc(x, g, strata=LAYER, n_perm=999, n_boot=500, seed=3)
    assert 0.5 < val(res, SC.CI_LOW) < val(res, SC.EFFECT) < val(res, SC.CI_HIGH) <= 1.0
    assert val(res, SC.P_VALUE) < 0.01
    with pytest.raises(StatsInputError, match="at least 2"):
        class_auc(x, np.zeros(96, bool), strata=LAYER)
    with pytest.raises(StatsInputError, match="no stratum holds both"):
        class_auc(x, LAYER < 6, strata=LAYER)
    with pytest.raises(StatsInputError, match="boolean"):
        class_auc(x, LAYER, strata=LAYER)


# ------------------------------------------------------------------ agreement
def test_kappa_against_sklearn_and_statsmodels():
    from sklearn.metrics import cohen_kappa_score
    from statsmodels.stats.inter_rater import cohens_kappa

    rng = np.random.default_rng(4)
    a = rng.integers(0, 3, size=96)
    b = np.where(rng.random(96) < 0.5, a, rng.integers(0, 3, size=96))
    # sklearn: cohen_kappa_score(a, b)
    assert cohen_kappa(a, b) == pytest.approx(cohen_kappa_score(a, b), abs=1e-12)
    table = pd.crosstab(a, b).to_numpy()
    # statsmodels: cohens_kappa(crosstab(a, b)).kappa
    assert cohen_kappa(a, b) == pytest.approx(cohens_kappa(table).kappa, abs=1e-12)
    res = threshold_agreement(a, b, strata=None, n_perm=999, n_boot=0)
    assert tuple(res.columns) == AGREEMENT_COLUMNS
    assert val(res, SC.EFFECT) == pytest.approx(cohen_kappa_score(a, b), abs=1e-12)
    assert val(res, KAPPA_POOLED) == pytest.approx(cohen_kappa_score(a, b), abs=1e-12)
    from sklearn.metrics import balanced_accuracy_score
    # sklearn: balanced_accuracy_score(y_true=b, y_pred=a)
    assert val(res, BALANCED_ACCURACY) == pytest.approx(balanced_accuracy_score(b, a), abs=1e-12)
    assert val(res, SC.P_VALUE) < 0.01


def test_stratified_chance_agreement_by_hand():
    a = np.array([0, 0, 1, 1, 2, 2, 2, 2])
    b = np.array([0, 1, 1, 1, 2, 2, 0, 2])
    s = np.array([0, 0, 0, 0, 1, 1, 1, 1])
    res = threshold_agreement(a, b, strata=s, n_perm=99_999, n_boot=0)
    # stratum 0: a counts (2, 2, 0), b counts (1, 3, 0) -> (2*1 + 2*3) / 4 = 2
    # stratum 1: a counts (0, 0, 4), b counts (1, 0, 3) -> 4*3 / 4 = 3; p_e = (2 + 3) / 8
    assert val(res, CHANCE_AGREEMENT) == pytest.approx(5 / 8)
    po = 6 / 8
    assert val(res, SC.EFFECT) == pytest.approx((po - 5 / 8) / (1 - 5 / 8))
    # exact null: stratum 0 (4! perms of b), stratum 1 (4!): p_o >= 6/8 by enumeration
    import itertools
    count = total = 0
    for p0 in itertools.permutations(b[:4]):
        for p1 in itertools.permutations(b[4:]):
            total += 1
            count += np.mean(a == np.array(p0 + p1)) >= po - 1e-12
    assert val(res, SC.EXACT) == 1
    res_g = threshold_agreement(a, b, strata=s, n_perm=99_999, n_boot=0, alternative="greater")
    # (1 + count of non-identity perms) / (1 + B) = count / total, identity included in both
    assert val(res_g, SC.P_VALUE) == pytest.approx(count / total)


def test_threshold_zones_and_errors():
    z = threshold_zones([-0.3, -0.05, 0.05, 0.3], 0.1)
    assert z.tolist() == [0.0, 1.0, 1.0, 2.0]
    with pytest.raises(StatsInputError, match="threshold"):
        threshold_zones([0.1], -1.0)
    with pytest.raises(StatsInputError, match="integer class codes"):
        threshold_agreement([0.5, 1.0], [0, 1], strata=None)
    with pytest.raises(StatsInputError, match="chance agreement is 1"):
        threshold_agreement([1, 1, 1], [1, 1, 1], strata=None)


# ------------------------------------------------------------------ interaction
def _interaction_data(rng, delta=0.0):
    g = rng.random(96) < np.linspace(0.2, 0.8, 12)[LAYER]  # groups unbalanced over layers
    x = 1.5 * rng.normal(size=12)[LAYER] + rng.normal(size=96)
    y = 1.5 * rng.normal(size=12)[LAYER] - 0.5 * x + 0.7 * g + delta * x * g + rng.normal(size=96)
    return y, x, g


def test_interaction_matches_statsmodels_ols():
    import statsmodels.formula.api as smf

    rng = np.random.default_rng(5)
    y, x, g = _interaction_data(rng, delta=0.4)
    res = class_interaction(y, x, g, strata=LAYER, ranks=False, n_perm=999, n_boot=0)
    assert tuple(res.columns) == INTERACTION_COLUMNS
    d = pd.DataFrame({"y": (y - y.mean()) / y.std(), "x": (x - x.mean()) / x.std(),
                      "g": g.astype(float), "layer": LAYER})
    # statsmodels: ols("y ~ x * g + C(layer)", d).fit()
    fit = smf.ols("y ~ x * g + C(layer)", d).fit()
    assert val(res, SC.EFFECT) == pytest.approx(fit.params["x:g"], rel=1e-9)
    assert val(res, SC.STATISTIC) == pytest.approx(fit.tvalues["x:g"], rel=1e-9)
    assert val(res, P_PARAMETRIC) == pytest.approx(fit.pvalues["x:g"], rel=1e-6)
    assert val(res, SLOPE_GROUP0) == pytest.approx(fit.params["x"], rel=1e-9)
    assert val(res, SLOPE_GROUP1) == pytest.approx(fit.params["x"] + fit.params["x:g"], rel=1e-9)


def test_interaction_ranks_and_interval():
    rng = np.random.default_rng(6)
    y, x, g = _interaction_data(rng, delta=1.5)
    res = class_interaction(y, x, g, strata=LAYER, n_perm=999, n_boot=300, seed=1)
    assert val(res, SC.P_VALUE) < 0.01 and val(res, SC.EFFECT) > 0
    assert val(res, SC.CI_LOW) < val(res, SC.EFFECT) < val(res, SC.CI_HIGH)
    assert val(res, SC.CI_LOW) > 0


def test_interaction_interval_reranks_each_resample():
    # reference: each resample of the same two-stage plan (lie_stats.stats.permutation.
    # BootstrapPlan, seed + 1) re-ranked with scipy.stats.rankdata, standardized, and fitted by
    # statsmodels OLS "y ~ x * g + C(slot)" (a resampled layer's dummy follows its slot)
    import statsmodels.api as sm

    from lie_stats.stats.permutation import BootstrapPlan

    rng = np.random.default_rng(8)
    y, x, g = _interaction_data(rng, delta=1.0)
    y = np.round(y, 1)  # ties
    res = class_interaction(y, x, g, strata=LAYER, n_perm=99, n_boot=200, seed=3)
    idx = np.concatenate(list(BootstrapPlan(LAYER, LAYER.size, 200, 4, True).chunks()))
    z = lambda a: (a - a.mean()) / a.std()  # noqa: E731
    coef = []
    for row in idx:
        xb, yb, gb = z(sps.rankdata(x[row])), z(sps.rankdata(y[row])), g[row].astype(float)
        dummies = np.eye(12)[LAYER]
        X = np.column_stack([xb, gb, xb * gb, dummies])
        coef.append(sm.OLS(yb, X).fit().params[2])
    lo, hi = np.percentile(coef, [2.5, 97.5])
    assert val(res, SC.CI_LOW) == pytest.approx(lo, rel=1e-6)
    assert val(res, SC.CI_HIGH) == pytest.approx(hi, rel=1e-6)


def test_interaction_errors():
    y, x, g = _interaction_data(np.random.default_rng(7))
    few = np.zeros(96, bool)
    few[:2] = True
    with pytest.raises(StatsInputError, match="at least 3"):
        class_interaction(y, x, few, strata=LAYER)
    with pytest.raises(StatsInputError, match="rank-deficient"):
        class_interaction(y, np.where(g, 1.0, x), g, strata=LAYER, ranks=False)


# ------------------------------------------------------------------ time to fraction
def test_time_to_fraction_by_hand():
    steps = [0, 1, 10, 100, 1000]
    vals = np.array([
        [0.0, 0.0, 0.0, 0.0],
        [0.1, 0.95, 0.5, 0.0],
        [0.2, 1.2, 0.5, 0.0],  # unit 1 overshoots, then settles at 1.0
        [0.6, 1.1, np.nan, 0.0],
        [1.0, 1.0, 1.0, 0.0],  # unit 3 never changes: undefined
    ])
    t = time_to_fraction(vals, steps, fraction=0.9, scale="log")
    # unit 0: 0.9 between 0.6 (log 2) and 1.0 (log 3): 2 + 0.3 / 0.4
    assert t[0] == pytest.approx(2.75)
    assert t[1] == pytest.approx(0.0)  # first passage at step 1, log10(1)
    assert np.isnan(t[2]) and np.isnan(t[3])
    tl = time_to_fraction(vals, steps, fraction=0.9, scale="linear")
    assert tl[0] == pytest.approx(100 + 0.75 * 900)
    assert tl[1] == pytest.approx(0.9 / 0.95)  # between step 0 (0) and step 1 (0.95)
    with pytest.raises(StatsInputError, match="increasing"):
        time_to_fraction(vals, [0, 2, 1, 3, 4])
    with pytest.raises(StatsInputError, match="fraction"):
        time_to_fraction(vals, steps, fraction=1.5)


# ------------------------------------------------------------------ calibration
def _confounded_labels(rng):
    """Layer effects in the score and a class share rising with depth, no head-level link."""
    g = rng.random(96) < np.linspace(0.15, 0.85, 12)[LAYER]
    if g.sum() < 3 or (~g).sum() < 3:
        g[:3], g[-3:] = True, False
    x = 1.5 * rng.normal(size=12)[LAYER] + 0.2 * LAYER + rng.normal(size=96)
    return x, g


def test_auc_calibrated_on_confounded_null(record_property):
    ps = []
    for i in range(N_DATASETS):
        x, g = _confounded_labels(np.random.default_rng(i))
        ps.append(val(class_auc(x, g, strata=LAYER, n_perm=199, n_boot=0, seed=i), SC.P_VALUE))
    count = rejections(ps)
    record_property("rejections", count)
    assert BAND[0] <= count <= BAND[1], count


def test_pooled_auc_is_confounded_where_within_layer_auc_is_not():
    """The reason for the within-layer AUC: the pooled one drifts from 0.5 under the null."""
    pooled, within = [], []
    for i in range(300):
        x, g = _confounded_labels(np.random.default_rng(i))
        res = class_auc(x, g, strata=LAYER, n_perm=1, n_boot=0)
        pooled.append(val(res, AUC_POOLED))
        within.append(val(res, SC.EFFECT))
    assert abs(np.mean(within) - 0.5) < 0.01
    assert np.mean(pooled) > 0.55


def test_agreement_calibrated_on_confounded_null(record_property):
    ps = []
    for i in range(N_DATASETS):
        rng = np.random.default_rng(i)
        x, g = _confounded_labels(rng)
        zones = threshold_zones(x - np.median(x), 0.5)  # 3 zones, layer-confounded
        labels = np.where(g, 2, np.where(rng.random(96) < 0.3, 0, 1))
        ps.append(val(threshold_agreement(zones, labels, strata=LAYER, n_perm=199, n_boot=0, seed=i),
                      SC.P_VALUE))
    count = rejections(ps)
    record_property("rejections", count)
    # p_o takes few values (ties in the permutation null), so the test is conservative: the
    # rate must not exceed the band; it must not be far below alpha either
    assert 50 <= count <= BAND[1], count


def test_interaction_calibrated_on_confounded_null(record_property):
    ps = []
    for i in range(N_DATASETS):
        y, x, g = _interaction_data(np.random.default_rng(i))
        ps.append(val(class_interaction(y, x, g, strata=LAYER, n_perm=199, n_boot=0, seed=i),
                      SC.P_VALUE))
    count = rejections(ps)
    record_property("rejections", count)
    assert BAND[0] <= count <= BAND[1], count


def test_stabilization_difference_calibrated_on_null(record_property):
    """B10's p: time to 90 % (log10 step) per head, then group_difference within layers;
    trajectories whose speed depends on the layer only, class share rising with depth."""
    steps = np.array([0, 1, 2, 4, 8, 16, 32, 64, 128, 256, 512])
    ls = np.log10(np.maximum(steps, 1))[:, None]
    ps = []
    for i in range(N_DATASETS):
        rng = np.random.default_rng(i)
        _, g = _confounded_labels(rng)
        mid = 1.2 + 0.05 * LAYER + 0.3 * rng.normal(size=12)[LAYER] + 0.3 * rng.normal(size=96)
        traj = 1.0 / (1.0 + np.exp(-3.0 * (ls - mid[None, :])))
        traj = np.where(steps[:, None] == 0, 0.0, traj) * np.exp(0.2 * rng.normal(size=96))
        t90 = time_to_fraction(traj, steps, fraction=0.9, scale="log")
        ps.append(val(group_difference(t90, g, strata=LAYER, n_perm=199, n_boot=0, seed=i), SC.P_VALUE))
    count = rejections(ps)
    record_property("rejections", count)
    assert BAND[0] <= count <= BAND[1], count


# ------------------------------------------------------------------ power
def test_power_on_planted_effects():
    hits = {"auc": 0, "agree": 0, "inter": 0}
    for i in range(100):
        rng = np.random.default_rng(50_000 + i)
        x, g = _confounded_labels(rng)
        xs = x + 0.8 * g
        hits["auc"] += val(class_auc(xs, g, strata=LAYER, n_perm=199, n_boot=0), SC.P_VALUE) <= 0.05
        labels = np.where(g, 2, 1)
        zones = np.where(rng.random(96) < 0.6, labels, rng.integers(0, 3, size=96))
        hits["agree"] += val(threshold_agreement(zones, labels, strata=LAYER, n_perm=199, n_boot=0),
                             SC.P_VALUE) <= 0.05
        y, xx, gg = _interaction_data(rng, delta=0.8)
        hits["inter"] += val(class_interaction(y, xx, gg, strata=LAYER, n_perm=199, n_boot=0),
                             SC.P_VALUE) <= 0.05
    assert all(h >= 80 for h in hits.values()), hits
