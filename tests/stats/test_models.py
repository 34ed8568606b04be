"""lie_stats.stats.models: OLS model comparison, encompassing F tests, mixed models."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
import statsmodels.formula.api as smf
from scipy import stats as sps
from statsmodels.stats.anova import anova_lm

from lie_stats.errors import StatsInputError
from lie_stats import columns as C
from lie_stats.stats import compare_models, mixed_model
from lie_stats.stats.models import added_terms_test


@pytest.fixture(scope="module")
def scaling():
    rng = np.random.default_rng(0)
    n = 40
    d = pd.DataFrame({"log_params": rng.uniform(6, 10, n), "depth": rng.integers(4, 40, n).astype(float),
                      "noise": rng.normal(size=n)})
    d["metric"] = 0.5 * d["log_params"] + 0.02 * d["depth"] + rng.normal(0, 0.3, n)
    d.loc[3, "noise"] = np.nan  # one incomplete row: dropped from every model
    return d


def test_compare_models_matches_statsmodels(scaling):
    models = {"null": [], "size": ["log_params"], "size_depth": ["log_params", "depth"],
              "noise": ["noise"]}
    res = compare_models(scaling, "metric", models)
    assert list(res.columns) == list(C.COMPARE_MODELS_COLUMNS)
    assert res.index.tolist() == list(models)
    sub = scaling.dropna()
    assert (res["n"] == len(sub)).all()
    small = smf.ols("metric ~ 1", sub).fit()
    big = smf.ols("metric ~ log_params + depth", sub).fit()
    # statsmodels.stats.anova.anova_lm(smf.ols("metric ~ 1"), smf.ols("metric ~ log_params + depth"))
    table = anova_lm(small, big)
    assert res.loc["size_depth", "statistic"] == pytest.approx(table["F"].iloc[1])
    assert res.loc["size_depth", "p_value"] == pytest.approx(table["Pr(>F)"].iloc[1])
    assert res.loc["size_depth", "aic"] == pytest.approx(big.aic)
    assert res.loc["size_depth", "bic"] == pytest.approx(big.bic)
    assert res.loc["size_depth", "effect"] == pytest.approx(big.rsquared)
    assert res.loc["size_depth", "n_params"] == 3
    assert res["delta_aic"].min() == 0.0
    assert res["delta_aic"].idxmin() in ("size", "size_depth")
    assert np.isnan(res.loc["null", "statistic"]) and res.loc["null", "nested_in"] == 0
    assert res.loc["noise", "nested_in"] == 1  # the intercept-only model nests in every model
    assert res[["ci_low", "ci_high"]].isna().all().all()


def test_non_nested_models_have_no_f():
    d = pd.DataFrame({"y": np.arange(10.0) + np.sin(np.arange(10)), "a": np.arange(10.0),
                      "b": np.cos(np.arange(10.0))})
    res = compare_models(d, "y", {"a": ["a"], "b": ["b"]})
    assert np.isnan(res["statistic"]).all() and (res["nested_in"] == 0).all()


def test_compare_models_errors(scaling):
    with pytest.raises(StatsInputError, match="Did you mean 'depth'"):
        compare_models(scaling, "metric", {"m": ["detph"]})
    with pytest.raises(StatsInputError, match="non-empty dict"):
        compare_models(scaling, "metric", {})
    with pytest.raises(StatsInputError, match="complete rows"):
        compare_models(scaling.iloc[:2], "metric", {"m": ["depth"]})


def _unbalanced() -> pd.DataFrame:
    rng = np.random.default_rng(1)
    d = pd.DataFrame({"layer": np.repeat(np.arange(8), 12), "x": rng.normal(size=96)})
    d["y"] = 0.4 * d["x"] + np.repeat(rng.normal(size=8), 12) + rng.normal(size=96)
    d = d.iloc[5:].reset_index(drop=True)  # layer 0 keeps 7 heads: unbalanced
    return d.assign(xm=d.groupby("layer")["x"].transform("mean"))


def test_mixed_model_matches_statsmodels_and_r():
    d = _unbalanced()
    res = mixed_model(d[["layer", "x", "y"]], "y ~ x", groups="layer")
    assert list(res.columns) == list(C.MIXED_MODEL_COLUMNS)
    assert res.index.tolist() == ["Intercept", "x", "mean[x]"]
    # statsmodels.formula.api.mixedlm("y ~ x + xm", d, groups=d["layer"]).fit(reml=True),
    # xm the layer mean of x: the same REML fit with the group mean spelled out
    ref = smf.mixedlm("y ~ x + xm", d, groups=d["layer"]).fit(reml=True)
    assert res["effect"].to_numpy() == pytest.approx(ref.fe_params.to_numpy(), rel=1e-5)
    assert res.loc["x", "group_variance"] == pytest.approx(float(ref.cov_re.iloc[0, 0]), rel=1e-4)
    assert res.loc["x", "residual_variance"] == pytest.approx(ref.scale, rel=1e-5)
    # R 4.x, the same d written to csv:
    #   nlme::lme(y ~ x + xm, random = ~ 1 | layer, data = d, method = "REML")
    #   -> x: 0.3420857385, SE 0.1275363947, DF 82, p 0.008841333749; xm: SE 1.6565631858, DF 6,
    #      p 0.677528615865; (Intercept) DF 82, p 0.566382505511
    #   lmerTest::lmer(y ~ x + xm + (1 | layer), data = d, REML = TRUE): the same estimates and
    #   SEs; Satterthwaite df 82.07 for x; VarCorr 0.7884844558 (layer), 1.0324403662 (residual)
    assert res.loc["x", "effect"] == pytest.approx(0.3420857385, rel=1e-7)
    assert res.loc["x", "std_err"] == pytest.approx(0.1275363947, rel=1e-6)
    assert res.loc["x", "p_value"] == pytest.approx(0.008841333749, rel=1e-5)
    assert res.loc["mean[x]", "std_err"] == pytest.approx(1.6565631858, rel=1e-6)
    assert res.loc["mean[x]", "p_value"] == pytest.approx(0.677528615865, rel=1e-5)
    assert res.loc["Intercept", "p_value"] == pytest.approx(0.566382505511, rel=1e-5)
    assert (res["df"].to_numpy() == [82, 82, 6]).all()
    assert res.loc["x", "group_variance"] == pytest.approx(0.7884844558, rel=1e-5)
    assert res.loc["x", "residual_variance"] == pytest.approx(1.0324403662, rel=1e-6)
    assert res.loc["x", "n_groups"] == 8 and res.loc["x", "converged"] == 1 and res.loc["x", "boundary"] == 0
    q = sps.t.ppf(0.975, 82)
    assert res.loc["x", "ci_low"] == pytest.approx(0.3420857385 - q * 0.1275363947, rel=1e-6)


def test_the_slope_is_the_within_layer_slope():
    # layer means of y and x co-vary (between slope 3) while the heads' slope is 0.4: the
    # coefficient of x is the fixed-effects (within) estimate, exactly, balanced or not
    d = _unbalanced()
    d["y"] = d["y"] + 3.0 * 5 * d["xm"]
    d["x"] = d["x"] + 5 * d["xm"]
    res = mixed_model(d[["layer", "x", "y"]], "y ~ x", groups="layer")
    within = smf.ols("y ~ x + g", d.assign(g=d["layer"].astype(str))).fit().params["x"]  # layer fixed effects
    assert res.loc["x", "effect"] == pytest.approx(within, rel=1e-8)


def test_a_layer_variance_at_zero_is_a_converged_fit_in_any_units():
    rng = np.random.default_rng(2)
    d = pd.DataFrame({"layer": np.repeat(np.arange(6), 5), "x": rng.normal(size=30)})
    d["y"] = rng.normal(size=30)
    d = d.assign(xm=d.groupby("layer")["x"].transform("mean"))
    res = mixed_model(d[["layer", "x", "y"]], "y ~ x", groups="layer")
    assert res.loc["x", "boundary"] == 1 and res.loc["x", "converged"] == 1
    assert res.loc["x", "group_variance"] == 0.0
    # at the boundary V = sigma2 I, so the GLS SE is the OLS one (REML sigma2 = RSS / (N - p)):
    # statsmodels.formula.api.ols("y ~ x + xm", d).fit().bse
    ols = smf.ols("y ~ x + xm", d).fit()
    assert res["std_err"].to_numpy() == pytest.approx(ols.bse.to_numpy(), rel=1e-9)
    # R: lme4::lmer(y ~ x + xm + (1 | layer), d) -> "boundary (singular) fit", layer variance 0,
    #   x 0.2637742101 SE 0.1783841047; nlme::lme(..., method = "REML"): x DF 23, p 0.1527899603
    assert res.loc["x", "std_err"] == pytest.approx(0.1783841047, rel=1e-7)
    assert res.loc["x", "p_value"] == pytest.approx(0.1527899603, rel=1e-6)
    # statsmodels' MixedLM warns on these data ("failed to converge", "MLE may be on the
    # boundary"), which used to mark the fit unconverged in some units of y and not others
    for scale in (20.0, 1e-3, 1e4):
        scaled = mixed_model(d[["layer", "x", "y"]].assign(y=d["y"] * scale), "y ~ x", groups="layer")
        assert scaled.loc["x", "p_value"] == pytest.approx(res.loc["x", "p_value"], rel=1e-8)
        assert scaled.loc["x", "effect"] == pytest.approx(scale * res.loc["x", "effect"], rel=1e-8)
        assert (scaled["converged"] == 1).all() and (scaled["boundary"] == 1).all()


def test_mixed_model_errors():
    d = pd.DataFrame({"layer": [0] * 5, "x": np.arange(5.0), "y": np.arange(5.0)})
    with pytest.raises(StatsInputError, match="at least 2 groups"):
        mixed_model(d, "y ~ x", groups="layer")
    with pytest.raises(StatsInputError, match="Did you mean 'layer'"):
        mixed_model(d, "y ~ x", groups="layr")
    d2 = pd.DataFrame({"layer": [0, 0, 1, 1, 2, 2], "x": np.arange(6.0), "y": np.arange(6.0) ** 2})
    with pytest.raises(StatsInputError, match="cannot fit"):
        mixed_model(d2, "y ~ nope", groups="layer")


def test_added_terms_test_is_the_partial_f_test():
    rng = np.random.default_rng(3)
    d = pd.DataFrame({"a": rng.normal(size=6), "b": rng.normal(size=6)})
    d["y"] = d["a"] + rng.normal(0, 0.5, 6)
    f, p, k, df = added_terms_test(d, "y", ["b"], ["a"])
    # statsmodels.stats.anova.anova_lm(ols("y ~ b"), ols("y ~ b + a"))
    table = anova_lm(smf.ols("y ~ b", d).fit(), smf.ols("y ~ b + a", d).fit())
    assert (f, p) == pytest.approx((table["F"].iloc[1], table["Pr(>F)"].iloc[1]))
    assert (k, df) == (1, 3)
    # nothing added, or no residual degrees of freedom left: undefined
    assert np.isnan(added_terms_test(d, "y", ["a", "b"], ["a"])[1])
    assert np.isnan(added_terms_test(d.iloc[:3], "y", ["b"], ["a"])[1])


def test_simple_slope_is_the_ols_slope_with_its_t_interval():
    from lie_stats.stats.models import simple_slope

    rng = np.random.default_rng(4)
    d = pd.DataFrame({"x": np.arange(7.0), "y": 0.3 - 0.05 * np.arange(7.0) + 0.01 * rng.normal(size=7)})
    d.loc[2, "y"] = np.nan  # dropped
    fit = smf.ols("y ~ x", data=d.dropna()).fit()
    b, lo, hi = simple_slope(d, "y", "x", ci=0.9)
    assert b == pytest.approx(fit.params["x"])
    np.testing.assert_allclose([lo, hi], fit.conf_int(alpha=0.1).loc["x"].to_numpy())
    assert all(np.isnan(simple_slope(d.assign(x=1.0), "y", "x")))  # a constant predictor: no slope
    assert all(np.isnan(simple_slope(d.iloc[:2], "y", "x")))  # two rows: no residual df


def _share_design() -> pd.DataFrame:
    """48 heads in 6 layers; ``x`` a within-layer share (its layer mean 1/8 in every layer up
    to 1e-9, as a share stored in float32 and summed in float64 is), ``z`` a 0/1 class."""
    rng = np.random.default_rng(7)
    g = np.repeat(np.arange(6), 8)
    raw = rng.gamma(2.0, size=48)
    share = raw / np.bincount(g, weights=raw)[g] + 1e-9 * np.sin(np.arange(48))
    z = np.tile([0.0, 1.0], 24)
    y = (2.0 - 3.0 * share + 0.4 * z + 1.5 * share * z + np.repeat(rng.normal(0, 0.3, 6), 8)
         + rng.normal(0, 0.2, 48))
    return pd.DataFrame({"layer": g, "x": share, "z": z, "y": y})


def test_independent_columns_ranks_as_r_qr():
    from lie_stats.stats.models import independent_columns

    d = _share_design()
    d["xm"] = d.groupby("layer")["x"].transform("mean")
    X = np.column_stack([np.ones(48), d["x"], d["z"], d["xm"], d["x"] * d["z"]])
    # R: qr(model.matrix(~ x + z + xm + x:z, d))$rank -> 4, pivot 1 2 3 5 4 (xm moved last)
    keep, residual = independent_columns(X)
    assert keep.tolist() == [True, True, True, False, True]
    assert residual[3] < 1e-8
    assert np.linalg.matrix_rank(X) == 5  # numpy's default keeps it: what went wrong before
    # a zero column and an exact copy are dropped; the first of two equal columns is kept
    keep = independent_columns(np.column_stack([np.zeros(48), d["x"], d["x"]]))[0]
    assert keep.tolist() == [False, True, False]


def test_mixed_model_drops_a_near_constant_group_mean_as_r_does():
    d = _share_design()
    res = mixed_model(d, "y ~ x * z", groups="layer")
    # mean[x] is 1/8 + O(1e-9) in every layer and mean[z] exactly 1/2: both are the intercept
    assert res.index.tolist() == ["Intercept", "x", "z", "x:z", "mean[x:z]"]
    assert res.attrs["dropped"] == ["mean[x]", "mean[z]"]
    assert any("mean[x]" in note and "1e-07" in note for note in res.attrs["notes"])
    # R 4.2.2, d written to csv with 17 digits, xm/zm/xzm the layer means (ave):
    #   qr(model.matrix(~ x * z + xm + zm + xzm, d)) -> rank 5, xm and zm dropped;
    #   nlme::lme(y ~ x * z + xm + zm + xzm, ...) -> "Singularity in backsolve"; on R's rank:
    #   m <- nlme::lme(y ~ x * z + xzm, random = ~ 1 | layer, data = d, method = "REML")
    #   summary(m)$tTable: (Intercept) 3.042083571915 SE 0.656476261247 DF 39;
    #     x -2.923404070187 SE 0.519853449035 DF 39; z 0.510892520305 SE 0.104672930378;
    #     x:z 0.861129125081 SE 0.740141530488; xzm -18.404239586280 SE 9.851478302547 DF 4
    #   getVarCov(m)[1, 1] 0.119023059222; m$sigma^2 0.0290868001089
    r_effect = [3.042083571915, -2.923404070187, 0.510892520305, 0.861129125081, -18.404239586280]
    r_se = [0.656476261247, 0.519853449035, 0.104672930378, 0.740141530488, 9.851478302547]
    assert res["effect"].to_numpy() == pytest.approx(r_effect, rel=1e-7)
    assert res["std_err"].to_numpy() == pytest.approx(r_se, rel=1e-5)
    assert res["df"].tolist() == [39, 39, 39, 39, 4]
    assert res.loc["x", "group_variance"] == pytest.approx(0.119023059222, rel=1e-5)
    assert res.loc["x", "residual_variance"] == pytest.approx(0.0290868001089, rel=1e-6)


def test_ols_fits_drop_a_near_constant_column_as_r_lm_does():
    from lie_stats.stats.models import simple_slope

    d = _share_design()
    d["xm"] = d.groupby("layer")["x"].transform("mean")
    # R: anova(lm(y ~ z, d), lm(y ~ z + x + xm, d)) -> Df 1, Res.Df 45, F 8.4409896329,
    #    Pr(>F) 0.005671080857 (xm NA in the bigger model)
    f, p, k, df = added_terms_test(d, "y", ["z"], ["x", "xm"])
    assert (k, df) == (1, 45)
    assert (f, p) == pytest.approx((8.4409896329, 0.005671080857), rel=1e-8)
    # R: f2 <- lm(y ~ z + x + xm, d); f2$rank 3, summary(f2)$r.squared 0.416389186304,
    #    AIC(f2) 59.563797115 (R counts sigma; statsmodels' AIC is 2 less)
    res = compare_models(d, "y", {"z": ["z"], "zx": ["z", "x", "xm"]})
    assert res.loc["zx", "n_params"] == 3
    assert res.loc["zx", "effect"] == pytest.approx(0.416389186304, rel=1e-9)
    assert res.loc["zx", "aic"] + 2 == pytest.approx(59.563797115, rel=1e-9)
    assert res.loc["zx", "p_value"] == pytest.approx(0.005671080857, rel=1e-8)
    assert "xm" in res.attrs["notes"][0]
    # R: coef(lm(y ~ xm, d)) -> xm NA: no slope on a constant predictor
    assert np.isnan(simple_slope(d, "y", "xm")[0])
