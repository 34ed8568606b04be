"""Rank kinds (lie_stats.spec.kinds.ranks): delta_rank and delta_order on the delta cube of
a run with known parameter changes, and ratio_of_changes pairing two models by position."""

from __future__ import annotations

import math

import pytest

from lie_stats.cube import merge_shards
from lie_stats.extraction.delta import delta_cube
from lie_stats.spec import HypothesisSpec, Prediction, Select, evaluate_cube
from tests._checkpoints import delta_run
from tests._cubes import random_shard


@pytest.fixture(scope="module")
def run_cube(tiny_checkpoint, tmp_path_factory):
    """:func:`tests._checkpoints.delta_run` of a 2-layer gpt_neox checkpoint, as a delta cube."""
    return delta_cube(delta_run(tiny_checkpoint("gpt_neox", seed=3, n_layers=2),
                                tmp_path_factory.mktemp("run") / "r"))


def _rank_spec(target: str, direction: str, value: float, test: str = "delta_rank", **params):
    sel = {"totals": Select("param_delta", step="last"),
           "layers": Select("param_delta_layer", step="last"),
           "norms": Select("param_base_norm_layer", step="last")}
    return HypothesisSpec(id="T", claim="c", source="s", datasets=("toy",), selection=sel, test=test,
                          params={"n_boot": 200, **({"target": target} if test == "delta_rank" else params)},
                          prediction=Prediction(direction, value=value), gate="report")


def test_category_rank_and_order_on_a_delta_cube(run_cube):
    # step 20: embedding 0.1 (per model), attn_q > 0 in layer 1 only, everything else 0. A
    # resample of layers {0, 0} leaves Q unchanged (rank 2 behind the embedding), {1, 1}
    # gives it its layer-1 change (rank 1): the interval is [1, 2].
    q = run_cube["param_delta"].sel(model="r", step=20, category="attn_q").item()
    q1 = run_cube["param_delta_layer"].sel(model="r", step=20, category="attn_q", layer=1).item()
    # the pooled Q change (layer 1's x1.2 over both layers) exceeds the embedding's 0.1
    assert q1 > 0.1 and q == pytest.approx(0.145, abs=5e-4)
    res = evaluate_cube(_rank_spec("attn_q", "below", 2.5), run_cube)
    assert res.effect == 1  # Q ranks first, ahead of the embedding
    assert (res.ci_low, res.ci_high) == (1.0, 2.0)
    assert res.extra["n_categories"] == 11
    # Q changed in one of the two layers only: over two layers no comparison of Q with
    # another category can be shown (each t test has 1 df and t = 1), so the rank is not
    # shown on either side of any value. The bootstrap of two layers, which has four
    # resamples, used to call "below 2.5" supported and "above 2.5" refuted.
    assert res.extra["n_shown_larger"] == 0 and res.extra["n_shown_smaller"] == 0
    for direction, value in (("below", 2.5), ("above", 1.5), ("above", 2.5)):
        r = evaluate_cube(_rank_spec("attn_q", direction, value), run_cube)
        assert r.verdict == "inconclusive" and "not shown" in r.reason, (direction, value, r.reason)
    order = _rank_spec("", "above", 0.95, test="delta_order", order=[["embedding"], ["attn_q"]])
    res = evaluate_cube(order, run_cube)
    # the declared order (embedding before attn_q) does not hold on the point values (Q moved
    # more: 0.145 > 0.1), but over two layers the reversal is not shown either
    assert res.statistic == 0 and res.extra["p_reversed"] > 0.05
    assert res.verdict == "inconclusive", res.reason


def test_change_ratio_spec_pairs_models_by_position():
    """pre = model a (values x10 over training), post = model b (x1.01): ratio of log changes."""
    import xarray as xr

    shards = []
    for model, factor in (("a", 10.0), ("b", 1.01)):
        for step, f in ((0, 1.0), (1, factor)):
            ds = random_shard(model, step, 3, 4, kinds=("weight",))
            ds["killing_cv"] = xr.full_like(ds["killing_cv"], f) * (1 + ds["layer"])
            shards.append(ds)
    cube = merge_shards(shards)
    sel = {"pre_first": Select("killing_cv", step="first", family="Q", projection="none", models=("a",)),
           "pre_last": Select("killing_cv", step="last", family="Q", projection="none", models=("a",)),
           "post_first": Select("killing_cv", step="first", family="Q", projection="none", models=("b",)),
           "post_last": Select("killing_cv", step="last", family="Q", projection="none", models=("b",))}
    spec = HypothesisSpec(id="T", claim="c", source="s", datasets=("toy",), selection=sel,
                          test="ratio_of_changes", params={"ci": 0.9},
                          prediction=Prediction("equivalent", value=500.0, bound=1.0), gate="report")
    res = evaluate_cube(spec, cube)
    assert res.effect == pytest.approx(math.log(10.0) / math.log(1.01), rel=1e-9)  # 231.4
    assert res.verdict == "supported" and res.ci_low == pytest.approx(res.effect, rel=1e-9)
    assert res.n == 3 and res.extra["n_units"] == 3
