"""lie_stats.stats.models: nested OLS comparison and descriptive mixed models."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
import statsmodels.formula.api as smf
from statsmodels.stats.anova import anova_lm

from lie_stats.errors import StatsInputError
from lie_stats.stats import columns as C
from lie_stats.stats import compare_models, mixed_model


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


def test_mixed_model_matches_statsmodels():
    rng = np.random.default_rng(1)
    d = pd.DataFrame({"layer": np.repeat(np.arange(8), 12), "x": rng.normal(size=96)})
    d["y"] = 0.4 * d["x"] + np.repeat(rng.normal(size=8), 12) + rng.normal(size=96)
    res = mixed_model(d, "y ~ x", groups="layer")
    assert list(res.columns) == list(C.MIXED_MODEL_COLUMNS)
    # statsmodels.formula.api.mixedlm("y ~ x", d, groups=d["layer"]).fit(reml=True)
    ref = smf.mixedlm("y ~ x", d, groups=d["layer"]).fit(reml=True)
    assert res.loc["x", "effect"] == pytest.approx(ref.fe_params["x"])
    assert res.loc["x", "std_err"] == pytest.approx(ref.bse["x"])
    assert res.loc["x", "p_value"] == pytest.approx(ref.pvalues["x"])
    assert res.loc["x", "ci_low"] == pytest.approx(ref.conf_int().loc["x", 0])
    assert res.loc["x", "n_groups"] == 8 and res.loc["x", "converged"] == 1


def test_mixed_model_errors():
    d = pd.DataFrame({"layer": [0] * 5, "x": np.arange(5.0), "y": np.arange(5.0)})
    with pytest.raises(StatsInputError, match="at least 2 groups"):
        mixed_model(d, "y ~ x", groups="layer")
    with pytest.raises(StatsInputError, match="Did you mean 'layer'"):
        mixed_model(d, "y ~ x", groups="layr")
    d2 = pd.DataFrame({"layer": [0, 0, 1, 1, 2, 2], "x": np.arange(6.0), "y": np.arange(6.0) ** 2})
    with pytest.raises(StatsInputError, match="cannot fit"):
        mixed_model(d2, "y ~ nope", groups="layer")
