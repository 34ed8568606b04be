"""Evaluation (lie_stats.spec.evaluation): skipped and undefined data, the specification
curve over analysis choices, determinism under a seed, and a decision rule's contract."""

from __future__ import annotations

import copy
import math

import numpy as np
import pandas as pd
import pytest

from lie_stats import cube as cube_mod, spec as spec_mod
from lie_stats import columns as C
from lie_stats.errors import LieStatsError
from lie_stats.spec import Prediction, Select, evaluate_cube, register_test, test_kinds
from tests._spec_cubes import ABSENT_BUILD, FAST, evaluate_one, planted_spec, synth_cube


def test_absent_data_skip_a_selection_matching_nothing_is_an_error_and_undefined_data(planted_root):
    # the two outcomes kept apart: an absent cube is a skip with its build command ...
    absent = evaluate_one(planted_spec(datasets=("absent",)), planted_root)
    assert absent.verdict == "skipped" and absent.build == ABSENT_BUILD and "absent.nc" in absent.reason
    needs = evaluate_one(planted_spec(datasets=("pythia",)), planted_root)
    assert needs.verdict == "skipped" and "needs hub access" in needs.reason
    # ... a cube that is present but lacks what the selection asks for is the declaration's error
    with pytest.raises(spec_mod.SelectionError, match="no variable 'sink_score'") as err:
        evaluate_one(planted_spec(selection={"x": Select("sink_score"), "y": Select("change_from_init")}),
                     planted_root)
    assert "synth.nc, which is present" in str(err.value) and "rebuilding the data cannot help" in str(err.value)
    with pytest.raises(spec_mod.SelectionError, match="no projection 'adaptive'"):
        evaluate_one(planted_spec(selection={"x": Select("killing_self", family="Q", projection="adaptive"),
                                             "y": Select("change_from_init")}), planted_root)
    with pytest.raises(spec_mod.SelectionError, match="in the cube, which is present"):  # a cube in hand
        evaluate_cube(planted_spec(selection={"x": Select("sink_score"), "y": Select("change_from_init")}),
                      synth_cube())
    const = evaluate_one(planted_spec(selection={"x": Select("head_contribution", step="first"),
                                                 "y": Select("change_from_init", step="first")}), planted_root)
    assert const.verdict == "inconclusive" and "constant" in const.reason and math.isnan(const.p_value)


def test_spec_curve_verdict_per_choice_and_share(planted_root):
    s = planted_spec(selection={"x": Select("head_contribution", step="first"),
                                "y": Select("killing_self", family="Q", projection="none")},
                     prediction=Prediction("positive"),
                     choices={"family": ["Q", "K"], "projection": ["none", "fixed:2", "adaptive"]})
    r = evaluate_one(s, planted_root)
    assert r.verdict == "supported"
    by = {(c["choice"]["family"], c["choice"]["projection"]): c["verdict"] for c in r.spec_curve}
    assert len(by) == 6
    assert by[("Q", "none")] == by[("Q", "fixed:2")] == "supported"
    # family K is noise, unrelated to the contribution: not significant, and with no
    # equivalence bound a non-significant correlation never refutes
    assert by[("K", "none")] == by[("K", "fixed:2")] == "inconclusive"
    assert by[("Q", "adaptive")] == by[("K", "adaptive")] == "skipped"
    assert r.spec_curve_share == 0.5  # skipped choices leave the denominator


def test_evaluation_is_deterministic(planted_root):
    a, b = evaluate_one(planted_spec(), planted_root), evaluate_one(planted_spec(), planted_root)
    assert (a.p_value, a.effect, a.ci_low, a.ci_high) == (b.p_value, b.effect, b.ci_low, b.ci_high)
    c = evaluate_one(planted_spec(params={**FAST, "seed": 1}), planted_root)
    assert (c.ci_low, c.ci_high) != (a.ci_low, a.ci_high)  # the seed is used


def test_choices_sweep_models_and_layers():
    # two runs: m0 planted, m1 the same cube with the change shuffled (no relation)
    c0 = synth_cube()
    c1 = copy.deepcopy(c0).assign_coords(model=["m1"])
    rng = np.random.default_rng(5)
    v = c1["change_from_init"].values
    c1["change_from_init"].values = v[..., rng.permutation(v.shape[-1])][..., ::-1, :]
    both = cube_mod.merge_shards([c0, c1])
    s = planted_spec(choices={"models": ["m0", "m1"], "layers": [(0, -1), (1, 2, 3, 4, 5, 6)]})
    r = evaluate_cube(s, both)
    assert r.verdict == "supported"  # pooled over both runs (stratified by model x layer)
    by = {(c["choice"]["models"], tuple(c["choice"]["layers"])): c for c in r.spec_curve}
    assert set(by) == {("m0", (0, -1)), ("m0", (1, 2, 3, 4, 5, 6)), ("m1", (0, -1)), ("m1", (1, 2, 3, 4, 5, 6))}
    assert by[("m0", (0, -1))]["n"] == 24 and by[("m0", (1, 2, 3, 4, 5, 6))]["n"] == 72
    assert by[("m0", (1, 2, 3, 4, 5, 6))]["verdict"] == "supported"
    # m1's change is shuffled across heads: no relation, not significant, no bound: inconclusive
    assert by[("m1", (1, 2, 3, 4, 5, 6))]["verdict"] == "inconclusive"


def test_decision_rule_returning_a_bad_verdict_is_an_error():
    name = "tmp_bad_verdict"
    try:
        register_test(name, lambda d: pd.DataFrame([dict.fromkeys(C.STAT_COLUMNS, 0.0)]),
                      lambda r, c: ("maybe", ""), roles=("values",))
        s = planted_spec(test=name, selection={"values": Select("change_from_init")}, params={})
        # raised by the evaluation itself (not a subclass): the rule, not the spec, is at fault
        with pytest.raises(LieStatsError, match="returned 'maybe'") as info:
            evaluate_cube(s, synth_cube())
        assert type(info.value) is LieStatsError
    finally:
        if name in test_kinds():
            spec_mod.unregister_test(name)
