"""The run as the unit of resampling: ``enrichment`` with ``resample_by='model'``,
``ratio_of_changes`` and ``tost_paired`` with ``resample_by='run'``, on synthetic cubes of a few runs
whose layers share a planted run effect. Each interval is checked against a direct
computation on the run means (the call is quoted beside the figure), and against the layer
unit, which leaves the between-run variance out and must be much narrower."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
import scipy.stats as sps

from lie_stats.cube import merge_shards
from lie_stats.errors import SpecError
from lie_stats.spec import HypothesisSpec, Prediction, Select, evaluate_cube
from tests._cubes import random_shard

L = 8  # layers per run


def _cube(values: dict[tuple[str, int], dict[str, np.ndarray]], projections=("none",)):
    """A cube of layer-level metrics: ``values[(model, step)][metric]`` is [projection, layer]."""
    shards = []
    for (model, step), arrays in values.items():
        ds = random_shard(model, step, L, 2, families=("Q",), projections=projections, kinds=("weight",))
        for metric, v in arrays.items():
            ds[metric].values[...] = np.asarray(v, float).reshape(ds[metric].shape)
        shards.append(ds)
    return merge_shards(shards)


def _spec(test: str, selection: dict, prediction: Prediction, **params) -> HypothesisSpec:
    return HypothesisSpec(id="T", claim="c", source="s", datasets=("toy",), selection=selection,
                          test=test, params=params, prediction=prediction, gate="report")


def _width(res) -> float:
    return res.ci_high - res.ci_low


# ------------------------------------------------------------------------------ enrichment

def _enrichment_cube(run_growth):
    rng = np.random.default_rng(1)
    vals = {}
    for r, g in enumerate(run_growth):
        first = rng.lognormal(0, 0.05, L)
        vals[(f"r{r}", 0)] = {"commutator_var": first}
        vals[(f"r{r}", 1)] = {"commutator_var": first * g * rng.lognormal(0, 0.05, L)}
    return _cube(vals)


def _enrichment_spec(strata: str) -> HypothesisSpec:
    sel = {"first": Select("commutator_var", step="first", family="Q", projection="none"),
           "last": Select("commutator_var", step="last", family="Q", projection="none")}
    return _spec("enrichment", sel, Prediction("above", value=1.0), resample_by=strata, n_boot=2000,
                 n_perm=9999)


def test_enrichment_strata_model_makes_runs_the_clusters_of_test_and_interval():
    growth = np.array([1.5, 3.0, 6.0, 12.0])  # between-run variance of the growth
    cube = _enrichment_cube(growth)
    by_run = evaluate_cube(_enrichment_spec("model"), cube)
    by_layer = evaluate_cube(_enrichment_spec("layer"), cube)
    assert by_run.effect == pytest.approx(by_layer.effect, rel=1e-12)
    # the swap test flips whole runs: 4 runs, 2^4 sign patterns, smallest p 1/16
    assert by_run.extra["n_strata"] == 4 and by_run.extra["p_min"] == pytest.approx(1 / 16)
    assert by_layer.extra["n_strata"] == 4 * L
    # direct enumeration of the swaps of whole runs: each run's sum of last - first flips sign
    first = cube["commutator_var"].sel(family="Q", projection="none").isel(step=0).values
    last = cube["commutator_var"].sel(family="Q", projection="none").isel(step=-1).values
    s = (last - first).sum(axis=1)
    flips = np.array(list(itertools.product((1, -1), repeat=4)))
    p_greater = float(np.mean(flips @ s >= s.sum() - 1e-12))
    assert by_run.extra["p_greater"] == pytest.approx(p_greater)  # 1/16 here
    assert p_greater == pytest.approx(1 / 16)
    # the bootstrap resamples runs (then layers within): its interval carries the spread of
    # the runs' growth (1.5x to 12x), which the layer bootstrap leaves out
    assert by_run.ci_low < 3.5 and by_run.ci_high > 9.0
    assert _width(by_run) > 2 * _width(by_layer)  # 7.5 vs 2.8 here


def test_enrichment_two_runs_cannot_reach_alpha():
    res = evaluate_cube(_enrichment_spec("model"), _enrichment_cube([3.0, 3.5]))
    assert res.extra["p_min"] == pytest.approx(0.25)  # 2 runs: 4 sign patterns
    assert res.verdict == "inconclusive"


# ------------------------------------------------------------------------------ ratio_of_changes

def _ratio_cube(run_effect):
    """Pre-training runs p<r> change killing_cv by a factor exp(run_effect[r]) (and a little
    noise by layer); their fine-tunes f<r> by exp(0.01)."""
    rng = np.random.default_rng(2)
    vals = {}
    for r, e in enumerate(run_effect):
        base = rng.lognormal(0, 0.2, L)
        vals[(f"p{r}", 0)] = {"killing_cv": base}
        vals[(f"p{r}", 1)] = {"killing_cv": base * np.exp(e * rng.lognormal(0, 0.05, L))}
        vals[(f"f{r}", 0)] = {"killing_cv": base}
        vals[(f"f{r}", 1)] = {"killing_cv": base * np.exp(0.01 * rng.lognormal(0, 0.05, L))}
    return _cube(vals), vals


def _ratio_spec(n_runs: int, **params) -> HypothesisSpec:
    pre, post = tuple(f"p{r}" for r in range(n_runs)), tuple(f"f{r}" for r in range(n_runs))

    def sel(step, models):
        return Select("killing_cv", step=step, family="Q", projection="none", models=models)

    return _spec("ratio_of_changes", {"pre_first": sel("first", pre), "pre_last": sel("last", pre),
                                      "post_first": sel("first", post), "post_last": sel("last", post)},
                 Prediction("equivalent", value=500.0, bound=1.0), ci=0.9, **params)


def test_ratio_of_changes_unit_run_tests_the_run_totals():
    run_effect = np.array([0.5, 2.0, 8.0])
    cube, vals = _ratio_cube(run_effect)
    by_run = evaluate_cube(_ratio_spec(3, resample_by="run"), cube)
    by_layer = evaluate_cube(_ratio_spec(3), cube)
    assert by_run.n == 3 and by_run.extra["df"] == 2 and by_run.extra["n_strata"] == 1
    assert by_layer.n == 3 * L and by_layer.extra["df"] == 3 * L - 3
    assert by_run.effect == pytest.approx(by_layer.effect, rel=1e-12)
    # each run's summed change is one cluster: the Fieller test at r0 is the one-sample t of
    # the run totals pre_r - r0 post_r on 2 df
    pre = np.array([np.abs(np.log(vals[(f"p{r}", 1)]["killing_cv"] / vals[(f"p{r}", 0)]["killing_cv"])).sum()
                    for r in range(3)])
    post = np.array([np.abs(np.log(vals[(f"f{r}", 1)]["killing_cv"] / vals[(f"f{r}", 0)]["killing_cv"])).sum()
                     for r in range(3)])
    # scipy.stats.ttest_1samp(pre - 50 * post, 0, alternative="greater").pvalue
    ref = sps.ttest_1samp(pre - 50.0 * post, 0.0, alternative="greater").pvalue
    assert by_run.extra["p_below"] == pytest.approx(ref, rel=1e-9)
    for limit, alt in ((by_run.ci_low, "greater"), (by_run.ci_high, "less")):
        # scipy.stats.ttest_1samp(pre - limit * post, 0, alternative=alt).pvalue == 0.05
        assert sps.ttest_1samp(pre - limit * post, 0.0, alternative=alt).pvalue == pytest.approx(0.05, rel=1e-7)
    assert _width(by_run) > 10 * _width(by_layer)
    # the layer unit puts the ratio in [50, 5000]; the runs disagree too much to say so
    assert by_layer.verdict == "supported" and by_run.verdict == "inconclusive"


def test_ratio_of_changes_unit_run_with_two_runs_has_one_df():
    cube, _ = _ratio_cube(np.array([2.0, 2.2]))
    res = evaluate_cube(_ratio_spec(2, resample_by="run"), cube)
    assert res.n == 2 and res.extra["df"] == 1


# ------------------------------------------------------------------------------ tost_paired

def _tost_cube(run_shift):
    """abelian_fraction under 'none' and 'adaptive'; adaptive is shifted by run_shift[r] in
    every layer of run r (plus a little layer noise)."""
    rng = np.random.default_rng(3)
    vals = {}
    for r, sh in enumerate(run_shift):
        a = rng.uniform(0.05, 0.3, L)
        vals[(f"r{r}", 0)] = {"abelian_fraction": np.stack([a, a + sh + 0.002 * rng.normal(size=L)])}
    return _cube(vals, projections=("none", "adaptive"))


def _tost_spec(**params) -> HypothesisSpec:
    return _spec("tost_paired", {"a": Select("abelian_fraction", step="last", family="Q", projection="none"),
                                 "b": Select("abelian_fraction", step="last", family="Q", projection="adaptive")},
                 Prediction("equivalent", bound=0.025), **params)


def test_tost_paired_unit_run_is_a_t_interval_over_run_means():
    shift = np.array([-0.024, 0.0, 0.01, 0.03])
    cube = _tost_cube(shift)
    by_run = evaluate_cube(_tost_spec(resample_by="run"), cube)
    by_layer = evaluate_cube(_tost_spec(), cube)
    assert by_run.n == 4 and by_run.extra["df"] == 3 and by_run.extra["n_clusters"] == 4
    assert by_layer.n == 4 * L and by_layer.extra["df"] == 4 * L - 1
    d = (cube["abelian_fraction"].sel(family="Q", projection="adaptive")
         - cube["abelian_fraction"].sel(family="Q", projection="none")).isel(step=0).values
    means = d.mean(axis=1)
    # scipy.stats.t.interval(0.90, df=3, loc=means.mean(), scale=scipy.stats.sem(means))
    lo, hi = sps.t.interval(0.90, df=3, loc=means.mean(), scale=sps.sem(means))
    assert (by_run.ci_low, by_run.ci_high) == (pytest.approx(lo, rel=1e-9), pytest.approx(hi, rel=1e-9))
    assert by_run.effect == pytest.approx(means.mean(), rel=1e-12)
    assert _width(by_run) > 4 * _width(by_layer)
    # layers pooled across runs call the compressions equivalent; the runs do not
    assert by_layer.verdict == "supported" and by_run.verdict == "inconclusive"


def test_unit_is_declared_and_hashed_only_when_declared():
    base = _tost_spec()
    assert "unit" not in base.declaration()["params"] and base.resolved_params()["unit"] == "layer"
    assert _tost_spec(resample_by="layer").spec_hash() != base.spec_hash()  # declared: hashed
    assert _tost_spec(resample_by="run").declaration()["params"]["unit"] == "run"
    with pytest.raises(SpecError, match="resample_by"):
        _tost_spec(resample_by="seed")
    with pytest.raises(SpecError, match="resample_by"):
        _ratio_spec(2, resample_by="head")
