"""Clustered kinds (lie_stats.spec.kinds.clustered): share_above and head_mean on attention
sinks: planted sinks supported, absent sinks refuted, a mask without a matching head
inconclusive, and the parameters checked."""

from __future__ import annotations

import pytest

from lie_stats.errors import SpecError
from lie_stats.spec import Prediction, Select, evaluate_cube
from tests._spec_cubes import COMPRESSION_HEADS as H, COMPRESSION_LAYERS as L, toy_spec


def _share(model, value=0.5):
    return toy_spec(id="B4", test="share_above", params={"threshold": 0.5, "n_boot": 999},
                    selection={"values": Select("sink_argmax_fraction", step="last", models=(model,))},
                    prediction=Prediction("above", value=value))


def test_share_above_planted_sinks_supported_and_absent_sinks_refuted(compressed):
    res = evaluate_cube(_share("m0"), compressed)
    assert res.verdict == "supported" and res.effect == 1.0 and res.n == L * H
    no = evaluate_cube(_share("m1"), compressed)
    assert no.verdict == "refuted" and no.effect == 0.0
    pooled = evaluate_cube(toy_spec(id="B4", test="share_above", params={"threshold": 0.5, "n_boot": 999},
                                    selection={"values": Select("sink_argmax_fraction", step="last")},
                                    prediction=Prediction("above", value=0.5)), compressed)
    # half the heads (m0's) are sinks: the pooled share is 0.5 and the interval contains it
    assert pooled.effect == 0.5 and pooled.verdict == "inconclusive" and pooled.extra["n_strata"] == 2


def _ratio(model, mask=True, **params):
    sel = {"values": Select("sink_value_ratio", step="last", models=(model,))}
    if mask:
        sel["mask"] = Select("sink_argmax_fraction", step="last", models=(model,))
    return toy_spec(id="B4-v", test="head_mean",
                    params={"transform": "log", "n_boot": 999, **({"mask_above": 0.5} if mask else {}), **params},
                    selection=sel, prediction=Prediction("below", value=1.0))


def test_head_mean_sink_values_small_supported_large_refuted(compressed):
    res = evaluate_cube(_ratio("m0"), compressed)
    assert res.verdict == "supported" and res.effect == pytest.approx(0.2, rel=0.15)
    big = evaluate_cube(_ratio("m1", mask=False), compressed)
    assert big.verdict == "refuted" and big.effect == pytest.approx(2.0, rel=0.15)
    # m1 has no sink head: the masked mean is undefined, hence inconclusive, with the reason
    none = evaluate_cube(_ratio("m1"), compressed)
    assert none.verdict == "inconclusive" and "mask" in none.reason


def test_head_mean_mask_needs_its_threshold(compressed):
    spec = toy_spec(id="B4-v", test="head_mean", params={"transform": "log"},
                    selection={"values": Select("sink_value_ratio", step="last"),
                               "mask": Select("sink_argmax_fraction", step="last")},
                    prediction=Prediction("below", value=1.0))
    with pytest.raises(SpecError, match="mask_above"):
        evaluate_cube(spec, compressed)
    with pytest.raises(SpecError, match="transform"):
        evaluate_cube(_ratio("m0", transform="logit"), compressed)


def test_transform_is_checked_at_declaration():
    with pytest.raises(SpecError, match=r"params\['transform'\]"):
        _ratio("m0", transform="logit")
