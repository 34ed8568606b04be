"""The meta_replication kind (lie_stats.spec.kinds.meta) on cubes of several runs with a
planted per-run correlation."""

from __future__ import annotations

import numpy as np
import pytest

from lie_stats import cube
from lie_stats.errors import SpecError
from lie_stats.spec import HypothesisSpec, Prediction, Select, evaluate_cube
from lie_stats.stats import meta as M
from tests._cubes import model_shape

L, H = 4, 6


def runs_cube(rho: float, n_runs: int, seed: int = 0):
    """``n_runs`` runs of 4 x 6 heads: change at the last checkpoint = rho * (standardized
    contribution at the first) + noise, per run; weight norms at the first checkpoint."""
    rng = np.random.default_rng(seed)
    shards = []
    for i in range(n_runs):
        contrib = rng.dirichlet(np.ones(H), size=L)
        zc = (contrib - contrib.mean()) / contrib.std()
        change = 1.0 + 0.2 * (rho * zc + np.sqrt(1 - rho ** 2) * rng.normal(size=(L, H)))
        norms = np.abs(rng.normal(1.0, 0.1, size=(4, L, H)))
        for step in (0, 100):
            arrays = {"head_contribution": contrib, "change_from_init": change * (step / 100),
                      "weight_norm": norms}
            shards.append(cube.checkpoint_shard(arrays, model=f"run{i}", step=step, shape=model_shape(L, H),
                                                families=("Q",), projections=("none",),
                                                provenance={"model": f"run{i}", "step": step}))
    return cube.merge_shards(shards)


def spec(**changes) -> HypothesisSpec:
    fields = dict(id="T", claim="contribution predicts change", source="test", datasets=("runs",),
                  selection={"x": Select("head_contribution", step="first"),
                             "y": Select("change_from_init", step="last")},
                  test="meta_replication", prediction=Prediction("negative"),
                  reference={"rho": -0.274, "n": 96}, gate="report")
    fields.update(changes)
    return HypothesisSpec(**fields)


def test_a_planted_negative_correlation_in_every_run_is_supported():
    r = evaluate_cube(spec(), runs_cube(-0.6, 8), dataset="runs")
    assert r.verdict == "supported", r.reason
    assert r.extra[M.K_RUNS] == 8 and r.n == 8 * L * H
    assert r.ci_high < 0 and r.extra[M.PI_LOW] < r.ci_low


def test_no_correlation_over_many_runs_is_refuted_by_small_telescopes():
    r = evaluate_cube(spec(), runs_cube(0.0, 40, seed=1), dataset="runs")
    assert r.verdict == "refuted" and "small telescopes" in r.reason
    r = evaluate_cube(spec(), runs_cube(0.0, 2, seed=1), dataset="runs")  # two small runs: too few to tell
    assert r.verdict == "inconclusive"


def test_covariate_roles_make_it_a_pooled_partial_correlation():
    covars = {f"covar_{m}": Select("weight_norm", step="first", matrix=m) for m in "QKVO"}
    s = spec(selection={"x": Select("head_contribution", step="first"),
                        "y": Select("change_from_init", step="last"), **covars})
    r = evaluate_cube(s, runs_cube(-0.6, 8), dataset="runs")
    assert r.extra["n_covariates"] == 4 and r.verdict == "supported"
    plain = evaluate_cube(spec(), runs_cube(-0.6, 8), dataset="runs")
    assert r.effect != pytest.approx(plain.effect)


def test_declaration_errors():
    with pytest.raises(SpecError, match="estimator"):
        spec(params={"estimator": "PM"})
    with pytest.raises(SpecError, match="contradicts the sign"):
        spec(prediction=Prediction("positive"))
    one = spec(selection={"x": Select("head_contribution", step="first", models=("run0",)),
                          "y": Select("change_from_init", step="last", models=("run0",))})
    r = evaluate_cube(one, runs_cube(-0.6, 3), dataset="runs")
    assert r.verdict == "inconclusive" and "at least 2 runs" in r.reason
