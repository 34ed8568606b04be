"""The ``mixed_model`` and ``model_comparison`` kinds' VERDICTS on nulls with real data's structure.

``mixed_model``: heads nested in layers whose means co-vary in ``x`` and ``y`` (layer SD
1, ICC 0.5, layer effects correlated 0.9), no head-level association. A random-intercept
slope mixes the between-layer slope in and was "significant" in 11-18 % of such nulls; the
within-layer slope (layer means added) holds alpha with 12 equal layers and with 5 unequal
ones. ``model_comparison``: 5-6 runs (the bundled head-width x head-count sweep of A8, the
panel of A9, whose predictors are correlated); an AIC margin of 2 decided in 41 % of nulls,
the encompassing F tests hold alpha, also when the rival model is the true one.

Verdicts are computed as the kinds compute them (the statistic, then the kind's decision
rule); :func:`test_the_direct_path_is_evaluate_cube` checks that this is what
``evaluate_cube`` returns on a few cubes. Seeds fixed; counts in binomial 99 % bands.
Full-size figures: benchmarks/calibration_models.md.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from lie_stats.spec import HypothesisSpec, Prediction, Select, evaluate_cube
from lie_stats.spec.kinds.models import decide_mixed_model, decide_model_comparison, encompassing_tests
from lie_stats.columns import P_PREDICTED_ADDS
from lie_stats.spec.rules import Decision
from lie_stats.stats.models import mixed_model

from ._design import binomial_band, head_cube, layered_pair
from ._design_cal_models import panel_template, ragged, with_response

ALPHA = 0.05
#: The bundled sweep of A8: (log2 d_head, log2 n_heads, d_head / d_model) per run.
SWEEP = pd.DataFrame({"log2_d_head": [4, 5, 6, 4, 4, 4], "log2_n_heads": [2, 2, 2, 1, 3, 4]}, dtype=float)
#: The panel of A9 (MiniLM L6 and L3, MPNet, SmolLM2-135M, Gemma3-270M).
PANEL = pd.DataFrame({"log2_d_head": np.log2([32, 32, 64, 64, 256]),
                      "d_head_over_d_model": [32 / 384, 32 / 384, 64 / 768, 64 / 576, 256 / 640]})
WIDTH_COUNT = {"width": ["log2_d_head"], "count": ["log2_n_heads"]}
WIDTH_RATIO = {"width": ["log2_d_head"], "ratio": ["d_head_over_d_model"]}


def _mixed_verdict(x: np.ndarray, y: np.ndarray, direction: str = "positive") -> tuple[str, float]:
    n_layers, n_heads = x.shape
    d = pd.DataFrame({"x": x.ravel(), "y": y.ravel(),
                      "stratum": np.repeat(np.arange(n_layers), n_heads)}).dropna()
    row = mixed_model(d, "y ~ x", groups="stratum").loc["x"].to_dict()
    ctx = Decision(Prediction(direction), ALPHA, {}, {})
    return decide_mixed_model(row, ctx)[0], row["p_value"]


def _mixed_null(seed: int, n_sims: int, n_layers: int, sizes: list[int] | None = None,
                within_rho: float = 0.0, rescaled: int = 0) -> dict[str, int]:
    rng = np.random.default_rng(seed)
    counts = {"supported": 0, "refuted": 0, "inconclusive": 0, "p<alpha": 0, "same_in_units_x20": 0}
    for i in range(n_sims):
        x, y = layered_pair(rng, n_layers=n_layers, layer_sd=1.0, layer_rho=0.9, within_rho=within_rho)
        if sizes is not None:
            x, y = ragged(x, sizes), ragged(y, sizes)
        verdict, p = _mixed_verdict(x, y)
        counts[verdict] += 1
        counts["p<alpha"] += int(p < ALPHA)
        if i < rescaled:
            v20, p20 = _mixed_verdict(x, 20.0 * y)
            counts["same_in_units_x20"] += int(v20 == verdict and np.isclose(p20, p, rtol=1e-8))
    return counts


def _f_power(design: pd.DataFrame, column: str, others: list[str], beta: float) -> float:
    """Power at ALPHA of the partial F test of ``column`` (slope ``beta``, unit noise) added to
    ``others``: ``scipy.stats.ncf.sf(F_crit, 1, n - p, beta**2 * residual SS of column)``."""
    from scipy import stats as sps

    A = np.column_stack([np.ones(len(design)), design[others].to_numpy()])
    v = design[column].to_numpy()
    resid = v - A @ np.linalg.lstsq(A, v, rcond=None)[0]
    df = len(design) - A.shape[1] - 1
    return float(sps.ncf.sf(sps.f.ppf(1 - ALPHA, 1, df), 1, df, beta ** 2 * float(resid @ resid)))


def _comparison(design: pd.DataFrame, models: dict, signal: dict[str, float], seed: int,
                n_sims: int) -> dict[str, int]:
    rng = np.random.default_rng(seed)
    ctx = Decision(Prediction("preferred"), ALPHA, {}, {})
    mean = sum(b * design[c].to_numpy() for c, b in signal.items()) if signal else 0.0
    counts = {"supported": 0, "refuted": 0, "inconclusive": 0, "p<alpha": 0}
    for _ in range(n_sims):
        table = design.assign(response=mean + rng.normal(size=len(design)))
        row = encompassing_tests(table, models, "width")
        counts[decide_model_comparison(row, ctx)[0]] += 1
        counts["p<alpha"] += int(row[P_PREDICTED_ADDS] < ALPHA)
    return counts


@pytest.mark.slow
def test_mixed_model_null_with_co_varying_layer_means():
    n = 200
    counts = _mixed_null(seed=11, n_sims=n, n_layers=12)
    lo, hi = binomial_band(n, ALPHA / 2)  # a two-sided t test, one direction each
    assert lo <= counts["supported"] <= hi and lo <= counts["refuted"] <= hi, counts
    lo, hi = binomial_band(n, ALPHA)
    assert lo <= counts["p<alpha"] <= hi, counts


@pytest.mark.slow
def test_mixed_model_null_with_five_unequal_layers_in_any_units():
    n = 200
    counts = _mixed_null(seed=12, n_sims=n, n_layers=5, sizes=[8, 6, 4, 8, 3], rescaled=30)
    lo, hi = binomial_band(n, ALPHA / 2)
    assert lo <= counts["supported"] <= hi and lo <= counts["refuted"] <= hi, counts
    lo, hi = binomial_band(n, ALPHA)
    assert lo <= counts["p<alpha"] <= hi, counts
    assert counts["same_in_units_x20"] == 30, counts  # y * 20: the same verdict and p


@pytest.mark.slow
def test_mixed_model_power_for_a_within_layer_slope():
    # a within-layer correlation of 0.3 among 96 heads, layer means co-varying as above
    counts = _mixed_null(seed=13, n_sims=60, n_layers=12, within_rho=0.3)
    assert counts["supported"] >= 36 and counts["refuted"] == 0, counts


@pytest.mark.slow
def test_model_comparison_nulls_on_the_sweep():
    n = 300
    lo, hi = binomial_band(n, ALPHA)
    # neither predictor matters: the width model's F test holds alpha, no verdict exceeds it
    null = _comparison(SWEEP, WIDTH_COUNT, {}, seed=21, n_sims=n)
    assert lo <= null["p<alpha"] <= hi, null
    assert null["supported"] <= hi and null["refuted"] <= hi, null
    hi200 = binomial_band(200, ALPHA)[1]
    # the rival (head count) is the truth: "width preferred" must stay under alpha
    rival = _comparison(SWEEP, WIDTH_COUNT, {"log2_n_heads": 1.5}, seed=22, n_sims=200)
    assert rival["supported"] <= hi200, rival
    # and the rival is found about as often as its F test has power (0.62 here), less the
    # cases where width's own F test is also significant (inconclusive: both matter)
    power = _f_power(SWEEP, "log2_n_heads", ["log2_d_head"], 1.5)
    assert rival["refuted"] >= binomial_band(200, 0.9 * power)[0], (rival, power)
    # width is the truth: "refuted" stays under alpha, and it is found
    width = _comparison(SWEEP, WIDTH_COUNT, {"log2_d_head": 2.0}, seed=23, n_sims=200)
    assert width["refuted"] <= hi200, width
    power = _f_power(SWEEP, "log2_d_head", ["log2_n_heads"], 2.0)  # 0.68
    assert width["supported"] >= binomial_band(200, 0.9 * power)[0], (width, power)


@pytest.mark.slow
def test_model_comparison_nulls_on_the_panel_with_correlated_predictors():
    n = 200
    lo, hi = binomial_band(n, ALPHA)
    null = _comparison(PANEL, WIDTH_RATIO, {}, seed=31, n_sims=n)
    assert lo <= null["p<alpha"] <= hi, null
    assert null["supported"] <= hi and null["refuted"] <= hi, null
    rival = _comparison(PANEL, WIDTH_RATIO, {"d_head_over_d_model": 10.0}, seed=32, n_sims=n)
    assert rival["supported"] <= hi, rival


def test_the_direct_path_is_evaluate_cube():
    rng = np.random.default_rng(41)
    mm = HypothesisSpec(
        id="X-mm", claim="c", source="s", datasets=("sim",), test="mixed_model",
        selection={"x": Select("head_contribution", step="first"),
                   "y": Select("change_from_init", step="last")},
        params={"formula": "y ~ x", "term": "x", "alpha": ALPHA}, prediction=Prediction("positive"),
        gate="report")
    for _ in range(3):
        x, y = layered_pair(rng, n_layers=5, within_rho=0.4)
        x, y = ragged(x, [8, 6, 4, 8, 3]), ragged(y, [8, 6, 4, 8, 3])
        res = evaluate_cube(mm, head_cube(x, y), dataset="sim")
        verdict, p = _mixed_verdict(x, y)
        assert res.verdict == verdict and res.p_value == pytest.approx(p, rel=1e-12)
    runs = {"w16": (16, 4, 64), "w32": (32, 4, 128), "w64": (64, 4, 256), "h2": (16, 2, 32),
            "h8": (16, 8, 128), "h16": (16, 16, 256)}
    template = panel_template(runs)
    mc = HypothesisSpec(
        id="X-mc", claim="c", source="s", datasets=("sim",), test="model_comparison",
        selection={"response": Select("abelian_fraction", step="last", family="Q", projection="none")},
        params={"models": WIDTH_COUNT, "predicted": "width", "alpha": ALPHA},
        prediction=Prediction("preferred"), gate="report")
    ctx = Decision(Prediction("preferred"), ALPHA, {}, {})
    for response in (rng.normal(size=6), 2.0 * SWEEP["log2_d_head"].to_numpy() + rng.normal(size=6)):
        res = evaluate_cube(mc, with_response(template, response), dataset="sim")
        row = encompassing_tests(SWEEP.assign(response=response), WIDTH_COUNT, "width")
        assert res.verdict == decide_model_comparison(row, ctx)[0]
        assert res.p_value == pytest.approx(row[P_PREDICTED_ADDS], rel=1e-10)
