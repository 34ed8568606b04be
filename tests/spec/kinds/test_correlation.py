"""Correlation kinds (lie_stats.spec.kinds.correlation): correlation, partial_correlation and
replication on the planted ``synth`` data: supported, refuted, and inconclusive nulls."""

from __future__ import annotations

from lie_stats.spec import Prediction, Select
from tests._spec_cubes import B5_REFERENCE, evaluate_one, planted_spec


def test_replication_supported_on_planted_effect(planted_root):
    s = planted_spec(test="replication", reference=B5_REFERENCE, gate="replication")
    r = evaluate_one(s, planted_root)
    assert r.verdict == "supported", r.reason
    assert r.effect < -0.4 and r.ci_high < 0 and r.n == 96
    assert r.extra["p_original_direction"] < 0.05 and r.extra["p_small_telescopes"] > 0.05
    assert {"z_difference", "p_difference", "r33", "bf_replication"} <= set(r.extra)
    assert r.reference == B5_REFERENCE


def test_replication_refuted_when_effect_smaller_than_r33(planted_root):
    s = planted_spec(test="replication", reference=B5_REFERENCE,
                     selection={"x": Select("ov_norm"), "y": Select("change_from_init")})
    r = evaluate_one(s, planted_root)
    assert r.verdict == "refuted" and "small telescopes" in r.reason
    assert r.extra["p_small_telescopes"] < 0.05


def test_correlation_supported_refuted_and_equivalence_refutation(planted_root):
    assert evaluate_one(planted_spec(), planted_root).verdict == "supported"
    opposite = evaluate_one(planted_spec(selection={"x": Select("value_norm"), "y": Select("change_from_init")}),
                            planted_root)
    assert opposite.verdict == "refuted" and "opposite" in opposite.reason
    null = planted_spec(selection={"x": Select("ov_norm"), "y": Select("change_from_init")})
    r = evaluate_one(null, planted_root)
    assert r.verdict == "inconclusive" and r.p_value > 0.05  # non-significant alone never refutes
    with_bound = planted_spec(selection={"x": Select("ov_norm"), "y": Select("change_from_init")},
                              prediction=Prediction("negative", bound=0.3))
    r = evaluate_one(with_bound, planted_root)
    assert r.verdict == "refuted" and "TOST" in r.reason and r.extra["p_equivalence"] < 0.05


def test_partial_correlation_supported(planted_root):
    r = evaluate_one(planted_spec(test="partial_correlation",
                                  selection={"x": Select("head_contribution", step="first"),
                                             "y": Select("change_from_init"), "covar": Select("ov_norm")}),
                     planted_root)
    assert r.verdict == "supported" and r.effect < -0.4


def test_per_head_units_without_layer_strata_are_undecided(planted_root):
    # strata "none" / "model" on per-head data: no calibrated test (heads share their layer)
    for kind, extra in (("correlation", {}), ("replication", {"reference": B5_REFERENCE}),
                        ("correlation_equivalence", {"prediction": Prediction("equivalent", bound=0.3)})):
        for strata in ("none", "model"):
            s = planted_spec(test=kind, params={"n_perm": 199, "n_boot": 0, "resample_by": strata}, **extra)
            r = evaluate_one(s, planted_root)
            assert r.verdict == "inconclusive" and "without layer strata" in r.reason, (kind, r.reason)
    s = planted_spec(test="partial_correlation", params={"n_perm": 199, "n_boot": 0, "resample_by": "none"},
                     selection={"x": Select("head_contribution", step="first"),
                                "y": Select("change_from_init"), "covar": Select("value_norm")})
    assert "without layer strata" in evaluate_one(s, planted_root).reason


def test_replication_with_too_few_permutations_for_a_standard_error(planted_root):
    s = planted_spec(test="replication", reference=B5_REFERENCE, params={"n_perm": 50, "n_boot": 0})
    r = evaluate_one(s, planted_root)
    assert r.verdict == "inconclusive" and "50 permutations, under the 99" in r.reason, r.reason
