"""Magnitude beside direction (lie_stats.spec.magnitude), the finding sentence, multiplicity
families, control models and the specification curve's estimands and dropped choices, on
synthetic cubes with a planted last/first ratio."""

from __future__ import annotations

import math

import numpy as np
import pytest
from statsmodels.stats.multitest import multipletests

from lie_stats import cube
from lie_stats.errors import SpecError
from lie_stats.spec import HypothesisSpec, Prediction, Result, Select, evaluate_cube
from lie_stats.spec.evaluation import degenerate
from lie_stats.spec.magnitude import assess_magnitude, band_text, combine, figure
from lie_stats.spec.parts import Magnitude
from lie_stats.spec.results import assign_multiplicity
from tests._cubes import model_shape

FAMILIES = ("Q",)
PROJECTIONS = ("none", "adaptive")
RATIO = 20.0  # planted last / first of commutator_raw_var in every layer
MODELS = ("m0", "m1", "m2", "m3")


def ratio_cube(seed: int = 0, ratio: float = RATIO, control_ratio: float = 1.0):
    """Models m0-m3 (6 layers x 4 heads) whose commutator_raw_var grows ``ratio`` times from
    step 0 to step 100 (log-normal noise sd 0.1 per layer and step), and a control model
    ``q`` that grows ``control_ratio`` times."""
    rng = np.random.default_rng(seed)
    shards = []
    for name in (*MODELS, "q"):
        shape = model_shape(6, 4)
        base = np.exp(rng.normal(0.0, 0.3, size=(len(FAMILIES), len(PROJECTIONS), 6)))
        r = control_ratio if name == "q" else ratio
        for step, factor in ((0, 1.0), (100, r)):
            values = base * factor * np.exp(rng.normal(0.0, 0.1, size=base.shape))
            shards.append(cube.checkpoint_shard(
                {"commutator_raw_var": values}, model=name, step=step, shape=shape, families=FAMILIES,
                projections=PROJECTIONS, provenance={"model": name, "step": step}))
    return cube.merge_shards(shards)


@pytest.fixture(scope="module")
def planted():
    return ratio_cube()


def spec(magnitude: Magnitude | None = None, **changes) -> HypothesisSpec:
    fields = dict(
        id="M1-main", claim="the variance grows", source="s", datasets=("toy", "twin"), test="enrichment",
        selection={"first": Select("commutator_raw_var", step="first", family="Q", projection="none"),
                   "last": Select("commutator_raw_var", step="last", family="Q", projection="none")},
        params={"n_perm": 199, "n_boot": 400}, gate="report",
        prediction=Prediction("above", value=1.0, magnitude=magnitude))
    fields.update(changes)
    return HypothesisSpec(**fields)


def band(low: float, high: float, reference: float, **kw) -> Magnitude:
    return Magnitude(reference, low, high, justification="a stated band", **kw)


# ------------------------------------------------------------------------ rule and verdict


def test_a_supported_direction_with_magnitude_outside_is_refuted(planted):
    r = evaluate_cube(spec(band(500 / 3, 1500.0, 500.0)), planted, dataset="toy")
    assert r.ci_low > 1.0 and r.ci_high < 500 / 3  # the planted 20x: direction holds, far below 500x
    assert r.magnitude["status"] == "outside"
    assert r.verdict == "refuted" and r.reason.startswith("direction replicated; magnitude outside")
    assert r.magnitude["estimate"] == pytest.approx(r.effect) and r.magnitude["band"] == [500 / 3, 1500.0]
    assert r.finding.startswith("direction replicated (above 1.00: ")
    assert f"magnitude {figure(r.effect)}x [{figure(r.ci_low)}, {figure(r.ci_high)}] vs 500x: outside the band " \
           "x/÷3 [167, 1,500]; verdict refuted" in r.finding
    assert r.multiplicity["decided_by"] == "none"  # the magnitude's interval decided


def test_magnitude_within_keeps_supported_and_no_band_reports_not_tested(planted):
    within = evaluate_cube(spec(band(10.0, 40.0, 20.0)), planted, dataset="toy")
    assert within.verdict == "supported" and within.magnitude["status"] == "within"
    assert "lies inside the band" in within.magnitude["reason"] and within.qualifier == ""
    lo, hi = within.magnitude["interval"]
    # a band the interval overlaps without lying inside it: the size is undetermined
    partly = evaluate_cube(spec(band((lo + hi) / 2, (lo + hi) / 2 * 1.01, (lo + hi) / 2 * 1.005)), planted,
                           dataset="toy")
    assert partly.magnitude["status"] == "compatible" and partly.verdict == "supported"
    assert partly.qualifier == "magnitude undetermined" and partly.row()["qualifier"] == "magnitude undetermined"
    assert partly.finding.endswith("verdict supported (magnitude undetermined)")
    plain = evaluate_cube(spec(), planted, dataset="toy")
    assert plain.verdict == "supported" and plain.magnitude["status"] == "not_tested"
    assert "no magnitude" in plain.magnitude["reason"] and "magnitude not tested" in plain.finding
    # the same numbers, the magnitude aside
    assert (within.effect, within.ci_low, within.p_value) == (plain.effect, plain.ci_low, plain.p_value)


def test_a_dataset_the_band_excludes_is_not_tested_with_its_reason(planted):
    s = spec(band(500 / 3, 1500.0, 500.0, not_on={"twin": "the first checkpoint is a random twin"}))
    r = evaluate_cube(s, planted, dataset="twin")
    assert r.magnitude["status"] == "not_tested" and "random twin" in r.magnitude["reason"]
    assert r.verdict == "supported"  # the direction alone: the magnitude is not tested here
    assert "magnitude not tested: the declaration excludes twin: the first checkpoint is a random twin" in r.finding


def test_outside_refutes_whatever_the_direction_and_the_rest_keep_the_direction():
    assert combine("refuted", "r", {"status": "within", "reason": "w"})[0] == "refuted"
    assert combine("inconclusive", "r", {"status": "compatible", "reason": "w"})[0] == "inconclusive"
    verdict, reason = combine("inconclusive", "p 0.3", {"status": "outside", "reason": "o"})
    assert verdict == "refuted" and reason.startswith("the claim as stated is refuted") and "p 0.3" in reason
    assert combine("refuted", "r", {"status": "outside", "reason": "o"})[0] == "refuted"
    assert combine("supported", "r", {"status": "outside", "reason": "o"})[0] == "refuted"
    assert combine("supported", "r", {"status": "not_tested", "reason": "n"}) == ("supported", "r")


@pytest.mark.parametrize("lo, hi, status", [
    (1.0, 1.9, "outside"), (2.0, 2.5, "within"), (1.5, 2.0, "compatible"),  # touching the edge overlaps
    (4.5, 6.0, "compatible"), (4.6, 6.0, "outside"), (1.0, 9.0, "compatible"), (2.0, 4.5, "within"),
])
def test_the_interval_rule_at_the_band_edges(lo, hi, status):
    m = band(2.0, 4.5, 3.0)
    out = assess_magnitude(m, {"effect": (lo + hi) / 2, "ci_low": lo, "ci_high": hi}, "d")
    assert out["status"] == status
    # "within" exactly when the interval lies inside the band
    assert (out["status"] == "within") == (2.0 <= lo and hi <= 4.5)


def test_log_and_absolute_scales_and_missing_intervals():
    log = band(10.0, 40.0, 20.0, scale="log")
    out = assess_magnitude(log, {"effect": math.log(20.0), "ci_low": math.log(15.0), "ci_high": math.log(45.0)}, "d")
    assert out["status"] == "compatible" and out["estimate"] == pytest.approx(20.0)
    assert out["interval"] == pytest.approx([15.0, 45.0])
    far = assess_magnitude(log, {"effect": 0.0, "ci_low": -0.1, "ci_high": 0.1}, "d")  # a ratio of about 1
    assert far["status"] == "outside" and "below" in far["reason"]
    final = Magnitude(0.20, 0.15, 0.25, scale="absolute", justification="one significant figure")
    assert assess_magnitude(final, {"effect": 0.72, "ci_low": 0.6, "ci_high": 0.8}, "d")["status"] == "outside"
    assert band_text(final) == "±0.0500 [0.150, 0.250]"
    no_ci = assess_magnitude(band(2.0, 4.5, 3.0), {"effect": 3.0, "ci_low": None, "ci_high": 4.0}, "d")
    assert no_ci["status"] == "not_tested" and "no finite interval" in no_ci["reason"]
    extra = band(2.0, 4.5, 3.0, estimate="enrichment_first_layer")
    assert assess_magnitude(extra, {"enrichment_first_layer": 3.0}, "d")["status"] == "not_tested"
    named = band(2.0, 4.5, 3.0, estimate="e0", interval=("e0_low", "e0_high"))
    assert assess_magnitude(named, {"e0": 9.0, "e0_low": 8.0, "e0_high": 10.0}, "d")["status"] == "outside"
    at_least = Magnitude(5.0, 3.0, math.inf, justification="'5-7x' read as at least 3")
    assert assess_magnitude(at_least, {"effect": 0.85, "ci_low": 0.56, "ci_high": 1.18}, "d")["status"] == "outside"
    assert band_text(at_least) == "at least 3.00"


def test_figures_for_sentences():
    assert [figure(v) for v in (1418.8, 999.7, 0.0504, 12.0, -3.25e-5, math.inf)] == \
        ["1,420", "1,000", "0.0504", "12.0", "-3.25e-05", "inf"]


# ------------------------------------------------------------------------ declaration


def test_the_hash_covers_the_band_and_is_unchanged_without_one():
    plain, banded = spec(), spec(band(10.0, 40.0, 20.0))
    assert "magnitude" not in plain.declaration()["prediction"]
    assert plain.spec_hash() != banded.spec_hash() != spec(band(10.0, 41.0, 20.0)).spec_hash()
    # the family and primary decide verdicts: hashed when declared, absent (old hashes) when not
    assert spec(multiplicity_family="").spec_hash() == spec(primary=False).spec_hash() == plain.spec_hash()
    assert len({plain.spec_hash(), spec(multiplicity_family="M").spec_hash(), spec(primary=True).spec_hash()}) == 3


@pytest.mark.parametrize("mag, message", [
    (Magnitude(5.0, 6.0, 7.0, justification="j"), "low <= reference <= high"),
    (Magnitude(5.0, 0.0, 7.0, justification="j"), "must be > 0"),
    (Magnitude(5.0, 3.0, 7.0), "justification"),
    (Magnitude(5.0, 3.0, 7.0, scale="linear", justification="j"), "unknown scale"),
    (Magnitude(5.0, 3.0, 7.0, justification="j", not_on={"panel": "twin"}), "'panel' is not one of"),
    (Magnitude(5.0, 3.0, 7.0, justification="j", not_on={"twin": " "}), "give the reason"),
])
def test_a_malformed_band_is_refused_at_declaration(mag, message):
    with pytest.raises(SpecError, match="prediction.magnitude") as e:
        spec(mag)
    assert message in str(e.value)


# ------------------------------------------------------------------------ controls


def test_control_models_are_left_out_unless_named():
    c = ratio_cube(control_ratio=1e4)  # a control far from the samples, so that its presence shows
    everyone = evaluate_cube(spec(), c, dataset="toy")
    without = evaluate_cube(spec(), c, dataset="toy", controls=("q",))
    assert everyone.extra["n_strata"] == 30 and without.extra["n_strata"] == 24  # (model, layer) pairs
    assert without.effect < everyone.effect
    named = spec(selection={"first": Select("commutator_raw_var", step="first", family="Q", projection="none",
                                            models=("q",)),
                            "last": Select("commutator_raw_var", step="last", family="Q", projection="none",
                                           models=("q",))})
    only = evaluate_cube(named, c, dataset="toy", controls=("q",))
    assert only.verdict != "skipped" and only.effect > 1000


# ------------------------------------------------------------------------ specification curve


def test_curves_per_compression_and_the_denominator_used(planted):
    s = spec(choices={"projection": PROJECTIONS, "models": [(m,) for m in MODELS]})
    r = evaluate_cube(s, planted, dataset="toy")
    assert len(r.spec_curve) == 8 and {c["estimand"] for c in r.spec_curve} == {"none", "adaptive"}
    assert r.estimand == "none" and r.spec_curve_n == 4  # the adaptive choices are another estimand
    curves = r.row()["spec_curve_by_estimand"]
    assert curves["none"]["n"] == curves["adaptive"]["n"] == 4 and r.row()["spec_curve_n"] == 4


def test_choices_inconclusive_by_construction_are_dropped_with_the_reason():
    base = dict(id="X", claim="c", source="s", dataset="d", gate="report", test="t", spec_hash="h", reference={})
    exact6 = Result(verdict="inconclusive", reason="r", extra={"n_perm": 5.0, "exact": 1.0}, **base)
    exact66 = Result(verdict="inconclusive", reason="r", extra={"n_perm": 65.0, "exact": 1.0}, **base)
    monte = Result(verdict="inconclusive", reason="r", extra={"n_perm": 9.0, "exact": 0.0}, **base)
    undefined = Result(verdict="inconclusive", reason="the test is undefined on these data: one pair",
                       undefined=True, **base)
    decided = Result(verdict="refuted", reason="r", extra={"n_perm": 5.0, "exact": 1.0}, **base)
    assert "1/6 = 0.167" in degenerate(exact6, 0.05)
    assert degenerate(exact66, 0.05) == degenerate(monte, 0.05) == degenerate(decided, 0.05) == ""
    assert degenerate(undefined, 0.05).endswith("one pair")
    r = Result(verdict="supported", reason="r", estimand="none", **base,
               spec_curve=[{"verdict": "supported", "estimand": "none"},
                           {"verdict": "inconclusive", "estimand": "none", "dropped": "by construction"},
                           {"verdict": "skipped", "estimand": "none"},
                           {"verdict": "inconclusive", "estimand": "fixed:64"}])
    assert r.spec_curve_n == 1 and r.spec_curve_share == 1.0
    assert r.spec_curve_by_estimand["none"]["dropped"] == 1


# ------------------------------------------------------------------------ multiplicity


def test_holm_within_claim_families_matches_statsmodels():
    p = {"A3": 0.01, "A3-runs": 0.03, "A3-pythia": None, "A5": 0.02, "B1": 0.2, "B1-ft": 0.04, "B9": 0.5}
    recs = [{"id": k, "verdict": "skipped" if v is None else "supported", "p_value": v} for k, v in p.items()]
    recs.append({"id": "C1", "verdict": "supported", "p_value": 0.01,
                 "multiplicity": {"family": "B1", "decided_by": "raw"}})  # a declared family
    assign_multiplicity(recs)
    got = {r["id"]: r["multiplicity"]["p_adjusted"] for r in recs}
    # statsmodels.stats.multitest.multipletests([0.01, 0.03], method="holm")[1] -> [0.02, 0.03]
    np.testing.assert_allclose([got["A3"], got["A3-runs"]], multipletests([0.01, 0.03], method="holm")[1])
    # multipletests([0.2, 0.04, 0.01], method="holm")[1] -> [0.2, 0.08, 0.03]
    np.testing.assert_allclose([got["B1"], got["B1-ft"], got["C1"]],
                               multipletests([0.2, 0.04, 0.01], method="holm")[1])
    assert got["A3-pythia"] is None and got["A5"] == 0.02 and got["B9"] == 0.5
    assert recs[-1]["multiplicity"]["decided_by"] == "raw" and recs[0]["multiplicity"]["decided_by"] == "none"
    assert {r["multiplicity"]["method"] for r in recs} == {"holm"}


def test_decided_by_says_whether_a_p_decided(planted):
    # the enrichment rule decides on its one-sided sign-flip p over clusters
    enrich = evaluate_cube(spec(), planted, dataset="toy")
    assert enrich.verdict == "supported" and enrich.multiplicity["decided_by"] == "raw"
    assert enrich.multiplicity["family"] == "M1"
    from tests._spec_cubes import planted_spec, synth_cube

    corr = evaluate_cube(planted_spec(), synth_cube(), dataset="synth")  # p < alpha decides
    assert corr.verdict == "supported" and corr.multiplicity["decided_by"] == "raw"
    assert corr.finding.startswith(f"direction replicated (negative: {figure(corr.effect)} [")
