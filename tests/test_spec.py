"""HypothesisSpec: validation (SpecError with suggestions), pre-registration hash, selection
on cubes, the test registry, and the verdict of every test kind on planted effects."""

from __future__ import annotations

import math
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import xarray as xr

from lie_stats import schema, spec as spec_mod
from lie_stats.errors import SpecError
from lie_stats.spec import (
    HypothesisSpec,
    Prediction,
    Select,
    evaluate,
    evaluate_cube,
    register_test,
    select,
    test_kinds,
)
from tests._spec_cubes import ABSENT_BUILD, make_datasets, synth_cube

FAST = {"n_perm": 999, "n_boot": 200}
B5_REFERENCE = {"rho": -0.274, "p": 0.007, "n": 96}


@pytest.fixture(scope="module")
def root(tmp_path_factory):
    return make_datasets(tmp_path_factory.mktemp("datasets"))


def make(**kw):
    base = dict(
        id="B5", claim="Initial head contribution predicts change", source="Anchors essay",
        datasets=("synth",), test="correlation",
        selection={"x": Select("head_contribution", step="first"), "y": Select("change_from_init")},
        params=dict(FAST), prediction=Prediction("negative"), gate="report",
    )
    base.update(kw)
    return HypothesisSpec(**base)


def one(spec, root, dataset=None):
    results = evaluate(spec, root, datasets=[dataset] if dataset else None)
    assert len(results) == 1
    return results[0]


# ------------------------------------------------------------------------ pre-registration hash

#: A declaration whose hash must not change between runs, machines or Python versions; if the
#: canonical form is changed on purpose, every pinned verdict must be re-pinned, so the
#: literal in test_spec_hash_is_pinned is a tripwire.
PINNED_HASH_SPEC = dict(
    id="B5", claim="c", source="s", datasets=("synth",), test="correlation",
    selection={"x": Select("head_contribution", step="first"), "y": Select("change_from_init")},
    params={"n_perm": 999, "n_boot": 200, "seed": 7}, prediction=Prediction("negative"),
    reference={"rho": -0.274, "n": 96}, gate="pinned",
)


def test_spec_hash_is_pinned():
    # computed once (lie_stats 0.1.0); a different value means every pinned verdict's hash
    # changes: the canonical form, a test's default parameters, or a field's meaning moved
    assert HypothesisSpec(**PINNED_HASH_SPEC).spec_hash() == (
        "ebc8ddf2b9e8773c38083f91323d11a9c7d24ccb5b9dcaac4ef1e498453c6fb7")


def test_specs_are_hashable_and_compare_by_declaration():
    a, b = HypothesisSpec(**PINNED_HASH_SPEC), HypothesisSpec(**PINNED_HASH_SPEC)
    assert a == b and hash(a) == hash(b) and len({a, b}) == 1
    assert a != HypothesisSpec(**dict(PINNED_HASH_SPEC, claim="other"))


def test_spec_hash_is_sha256_of_canonical_declaration():
    import hashlib
    import json

    s = HypothesisSpec(**PINNED_HASH_SPEC)
    text = json.dumps(s.declaration(), sort_keys=True, separators=(",", ":"), ensure_ascii=True)
    assert s.spec_hash() == hashlib.sha256(text.encode()).hexdigest()
    # the declaration holds the resolved parameters (defaults included), so a changed default
    # is a changed declaration
    assert s.declaration()["params"]["alpha"] == 0.05
    assert s.declaration()["params"]["strata"] == "layer"


def test_spec_hash_is_stable_across_processes_and_hash_seeds():
    code = (
        "from lie_stats.spec import *\n"
        "s = HypothesisSpec(id='B5', claim='c', source='s', datasets=('synth',), test='correlation',"
        " selection={'y': Select('change_from_init'), 'x': Select('head_contribution', step='first')},"
        " params={'seed': 7, 'n_boot': 200, 'n_perm': 999}, prediction=Prediction('negative'),"
        " reference={'n': 96, 'rho': -0.274}, gate='pinned')\n"
        "print(s.spec_hash())\n"
    )
    hashes = set()
    for seed in ("0", "12345"):
        env = {**os.environ, "PYTHONHASHSEED": seed}
        out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env,
                             check=True)
        hashes.add(out.stdout.strip())
    assert hashes == {HypothesisSpec(**PINNED_HASH_SPEC).spec_hash()}


def test_spec_hash_ignores_documentation_and_order_but_not_the_analysis():
    s = HypothesisSpec(**PINNED_HASH_SPEC)
    h = s.spec_hash()
    same = [
        dict(PINNED_HASH_SPEC, source="another essay"),
        dict(PINNED_HASH_SPEC, notes="changed notes"),
        dict(PINNED_HASH_SPEC, selection=dict(reversed(list(PINNED_HASH_SPEC["selection"].items())))),
        dict(PINNED_HASH_SPEC, datasets=["synth"]),
        dict(PINNED_HASH_SPEC, params={"seed": 7, "n_boot": 200, "n_perm": 999, "alpha": 0.05}),
        dict(PINNED_HASH_SPEC, module="/elsewhere/B5.py"),
    ]
    for kw in same:
        assert HypothesisSpec(**kw).spec_hash() == h, kw
    different = [
        dict(PINNED_HASH_SPEC, claim="c2"),
        dict(PINNED_HASH_SPEC, params={"n_perm": 999, "n_boot": 200, "seed": 8}),
        dict(PINNED_HASH_SPEC, params={"n_perm": 999, "n_boot": 200, "seed": 7, "alpha": 0.01}),
        dict(PINNED_HASH_SPEC, selection={"x": Select("head_contribution", step="first"),
                                          "y": Select("change_from_init", step=1000)}),
        dict(PINNED_HASH_SPEC, datasets=("synth", "pair")),
        dict(PINNED_HASH_SPEC, gate="report"),
        dict(PINNED_HASH_SPEC, reference={"rho": -0.3, "n": 96}),
        dict(PINNED_HASH_SPEC, prediction=Prediction("positive")),
        dict(PINNED_HASH_SPEC, test="replication"),
        dict(PINNED_HASH_SPEC, choices={"strata": ["layer", "none"]}),
    ]
    hashes = {HypothesisSpec(**kw).spec_hash() for kw in different}
    assert h not in hashes and len(hashes) == len(different)


# ------------------------------------------------------------------------ validation

HERE = Path(__file__).name

BAD = [
    # (changes, field named in the message, text in the message)
    (dict(selection={"x": Select("head_contributon", step="first"), "y": Select("change_from_init")}),
     "selection['x'].metric", "Did you mean 'head_contribution'?"),
    (dict(test="corelation"), "test", "Did you mean 'correlation'?"),
    (dict(selection={"x": Select("head_contribution", step="frist"), "y": Select("change_from_init")}),
     "selection['x'].step", "Did you mean 'first'?"),
    (dict(selection={"x": Select("head_contribution", step=-3), "y": Select("change_from_init")}),
     "selection['x'].step", "non-negative integer"),
    (dict(selection={"x": Select("killing_self", projection="none"), "y": Select("change_from_init")}),
     "selection['x'].family", "has a 'family' dimension"),
    (dict(selection={"x": Select("killing_self", family="QQ", projection="none"), "y": Select("change_from_init")}),
     "selection['x'].family", "Did you mean 'Q'?"),
    (dict(selection={"x": Select("head_contribution", family="Q"), "y": Select("change_from_init")}),
     "selection['x'].family", "has no 'family' dimension"),
    (dict(selection={"x": Select("killing_self", family="Q", projection="adaptiv"), "y": Select("change_from_init")}),
     "selection['x'].projection", "Did you mean 'adaptive'?"),
    (dict(selection={"x": Select("head_contribution"), "z": Select("change_from_init")}),
     "selection", "'y' is missing"),
    (dict(selection={"x": Select("head_contribution"), "y": Select("ov_norm"), "covar": Select("ov_norm")}),
     "selection['covar']", "takes no role 'covar'"),
    (dict(gate="replicaton"), "gate", "Did you mean 'replication'?"),
    (dict(params={"n_prem": 10}), "params['n_prem']", "Did you mean 'n_perm'?"),
    (dict(params={"alpha": 1.5}), "params['alpha']", "(0, 1)"),
    (dict(params={"strata": "layers"}), "params['strata']", "Did you mean 'layer'?"),
    (dict(prediction=Prediction("negatve")), "prediction.direction", "Did you mean 'negative'?"),
    (dict(prediction=Prediction("above", value=1.0)), "prediction.direction", "'above' for test 'correlation'"),
    (dict(test="replication", gate="replication"), "reference", "needs the original figure 'r' or 'rho'"),
    (dict(test="correlation", gate="replication"), "reference", "needs the original figures"),
    (dict(test="correlation_equivalence", prediction=Prediction("equivalent")), "prediction.bound", "bound"),
    (dict(choices={"familly": ["Q", "K"]}), "choices['familly']", "Did you mean 'family'?"),
    (dict(choices={"family": ["Q", "K"]}), "choices", "no selected variable has the swept"),
    (dict(params={"method": "pearsn"}), "params['method']", "Did you mean 'pearson'?"),
    (dict(params={"alternative": "less-than"}), "params['alternative']", "Did you mean 'less'?"),
    (dict(params={"n_perm": 0}), "params['n_perm']", "integer >= 1"),
    (dict(params={"seed": 1.5}), "params['seed']", "integer >= 0"),
    (dict(choices={"method": ["spearman", "kendal"]}), "choices", "Did you mean 'kendall'?"),
    (dict(choices={"models": [("m0",), 3]}), "choices", "selection['x'].models"),
    (dict(choices={"layers": [0, "last"]}), "choices", "selection['x'].layers"),
    (dict(test="replication", reference={"rho": 0.274, "n": 96}), "prediction.direction",
     "contradicts the sign of the original correlation 0.274"),
    (dict(test="replication", reference={"rho": -0.274, "n": 3}), "reference", "integer >= 5"),
    (dict(test="group_difference", selection={"x": Select("change_from_init"), "group": Select("head_label")},
          params={"groups": (1, 2, 3)}), "params['groups']", "the two group codes"),
    (dict(test="mixed_model", selection={"y": Select("change_from_init"), "x": Select("head_contribution")},
          params={"formula": "y ~ x * klass", "term": "x"}), "params['formula']", "unknown name 'klass'"),
    (dict(test="mixed_model", selection={"y": Select("change_from_init"), "x": Select("head_contribution")},
          params={"formula": "y ~ x"}), "params['term']", "requires the parameter 'term'"),
    (dict(datasets=()), "datasets", "non-empty"),
    (dict(datasets=("synth", "synth")), "datasets", "twice"),
    (dict(claim=""), "claim", "non-empty string"),
    (dict(test="model_comparison", selection={"response": Select("abelian_fraction", family="Q", projection="none")},
          prediction=Prediction("preferred"), params={"models": {"w": ["log2_dhead"]}, "predicted": "w"}),
     "params['models']['w']", "Did you mean 'log2_d_head'?"),
    (dict(test="model_comparison", selection={"response": Select("abelian_fraction", family="Q", projection="none")},
          prediction=Prediction("preferred"), params={"models": {"width": ["log2_d_head"]}, "predicted": "widht"}),
     "params['predicted']", "Did you mean 'width'?"),
]


@pytest.mark.parametrize("changes, fieldname, text", BAD, ids=[b[1] + "-" + b[2][:20] for b in BAD])
def test_bad_specs_raise_specerror_naming_module_spec_field(changes, fieldname, text):
    with pytest.raises(SpecError) as info:
        make(**changes)
    msg = str(info.value)
    assert msg.startswith(str(Path(__file__))), msg  # the declaring module, found from the frame
    assert "HypothesisSpec 'B5'" in msg
    assert f"field {fieldname!r}" in msg, msg
    assert text in msg, msg


def test_unknown_dataset_is_reported_with_suggestion(root):
    s = make(datasets=("sytnh",))
    with pytest.raises(SpecError, match=r"field 'datasets': unknown dataset 'sytnh'\. Did you mean 'synth'\?"):
        evaluate(s, root)
    with pytest.raises(SpecError, match="Did you mean 'synth'"):
        spec_mod.check_datasets(s, root)


# ------------------------------------------------------------------------ registry


def test_register_test_refuses_duplicates_and_accepts_new_kinds():
    with pytest.raises(SpecError, match="already registered"):
        register_test("correlation", lambda d: None, lambda r, c: ("supported", ""), roles=("x",))
    with pytest.raises(SpecError, match="unknown direction 'upward'"):
        register_test("tmp_bad_direction", lambda d: None, lambda r, c: ("supported", ""),
                      roles=("x",), directions=("upward",))
    import pandas as pd

    def mean_above(data):
        t = data.table("values")
        m = float(t["values"].mean())
        return pd.DataFrame([{**dict.fromkeys(schema.STAT_COLUMNS, math.nan), "n": len(t), "effect": m,
                              "ci_low": m - 0.01, "ci_high": m + 0.01}])

    name = "tmp_mean_above"
    try:
        register_test(name, mean_above, spec_mod.decide_interval, roles=("values",),
                      directions=("above", "below"))
        assert name in test_kinds()
        s = make(test=name, selection={"values": Select("change_from_init")},
                 prediction=Prediction("above", value=0.5), params={})
        res = evaluate_cube(s, synth_cube())
        assert res.verdict == "supported" and res.n == 96 and res.effect > 0.5
        s2 = make(test=name, selection={"values": Select("change_from_init")},
                  prediction=Prediction("below", value=0.5), params={})
        assert evaluate_cube(s2, synth_cube()).verdict == "refuted"
    finally:
        if name in test_kinds():
            spec_mod.unregister_test(name)


def test_decision_rule_returning_a_bad_verdict_is_an_error():
    import pandas as pd

    from lie_stats.errors import LieStatsError

    name = "tmp_bad_verdict"
    try:
        register_test(name, lambda d: pd.DataFrame([dict.fromkeys(schema.STAT_COLUMNS, 0.0)]),
                      lambda r, c: ("maybe", ""), roles=("values",))
        s = make(test=name, selection={"values": Select("change_from_init")}, params={})
        with pytest.raises(LieStatsError, match="returned 'maybe'"):
            evaluate_cube(s, synth_cube())
    finally:
        if name in test_kinds():
            spec_mod.unregister_test(name)


# ------------------------------------------------------------------------ selection


def _cube_with_padding():
    # model "a": steps 0, 10, 20 with data; model "b": data at 10 and 20 only, 2 of 3 layers
    dims = (schema.MODEL, schema.STEP, schema.LAYER, schema.HEAD)
    v = np.arange(2 * 3 * 3 * 2, dtype=float).reshape(2, 3, 3, 2)
    v[1, 0] = np.nan
    v[1, :, 2] = np.nan
    coords = {schema.MODEL: ["a", "b"], schema.STEP: [0, 10, 20], schema.LAYER: [0, 1, 2],
              schema.HEAD: [0, 1], "n_layers": (schema.MODEL, [3, 2])}
    return xr.Dataset({"ov_norm": (dims, v)}, coords=coords)


def test_select_first_last_per_model_respects_padding():
    cube = _cube_with_padding()
    first = select(Select("ov_norm", step="first"), cube)
    assert first.sel(model="a").values.tolist()[0] == [0.0, 1.0]  # a at step 0
    assert first.sel(model="b").values.tolist()[0] == [24.0, 25.0]  # b's first data: step 10
    assert first["step"].values.tolist() == [0, 10]
    last = select(Select("ov_norm", step="last"), cube)
    assert np.atleast_1d(last["step"].values).tolist() in ([20], [20, 20])
    assert np.isfinite(last.values).sum() == 6 + 4
    assert select(Select("ov_norm", step="all"), cube).dims == (schema.MODEL, schema.STEP, schema.LAYER, schema.HEAD)
    at = select(Select("ov_norm", step=10), cube)
    assert at.sel(model="a", layer=0).values.tolist() == [6.0, 7.0]


def test_select_negative_layers_count_from_each_models_last_layer():
    cube = _cube_with_padding()
    last_layer = select(Select("ov_norm", step="last", layers=(-1,)), cube)
    ok = np.isfinite(last_layer.values)
    # model a (3 layers): layer 2; model b (2 layers): layer 1
    assert ok[0].any(axis=1).tolist() == [False, False, True]
    assert ok[1].any(axis=1).tolist() == [False, True, False]


def test_select_reduce_models_and_errors():
    cube = _cube_with_padding()
    red = select(Select("ov_norm", step="last", reduce="mean", models=("a",)), cube)
    assert red.dims == (schema.MODEL,) and red.values.tolist() == [np.mean(np.arange(12, 18))]
    with pytest.raises(SpecError, match=r"no model 'c'\. Did you mean 'a'|no model 'c'"):
        select(Select("ov_norm", models=("c",)), cube)
    with pytest.raises(SpecError, match=r"no step 15; nearest steps: \[10, 20, 0\]"):
        select(Select("ov_norm", step=15), cube)
    with pytest.raises(spec_mod.Skip, match="no variable 'value_norm'"):
        select(Select("value_norm"), cube)


# ------------------------------------------------------------------------ verdicts on planted data


def test_replication_supported_on_planted_effect(root):
    s = make(test="replication", reference=B5_REFERENCE, gate="replication")
    r = one(s, root)
    assert r.verdict == "supported", r.reason
    assert r.effect < -0.4 and r.ci_high < 0 and r.n == 96
    assert r.extra["p_original_direction"] < 0.05 and r.extra["p_small_telescopes"] > 0.05
    assert {"z_difference", "p_difference", "r33", "bf_replication"} <= set(r.extra)
    assert r.reference == B5_REFERENCE


def test_replication_refuted_when_effect_smaller_than_r33(root):
    s = make(test="replication", reference=B5_REFERENCE,
             selection={"x": Select("ov_norm"), "y": Select("change_from_init")})
    r = one(s, root)
    assert r.verdict == "refuted" and "small telescopes" in r.reason
    assert r.extra["p_small_telescopes"] < 0.05


def test_correlation_supported_refuted_and_equivalence_refutation(root):
    assert one(make(), root).verdict == "supported"
    opposite = one(make(selection={"x": Select("value_norm"), "y": Select("change_from_init")}), root)
    assert opposite.verdict == "refuted" and "opposite" in opposite.reason
    null = make(selection={"x": Select("ov_norm"), "y": Select("change_from_init")})
    r = one(null, root)
    assert r.verdict == "inconclusive" and r.p_value > 0.05  # non-significant alone never refutes
    with_bound = make(selection={"x": Select("ov_norm"), "y": Select("change_from_init")},
                      prediction=Prediction("negative", bound=0.3))
    r = one(with_bound, root)
    assert r.verdict == "refuted" and "TOST" in r.reason and r.extra["p_equivalence"] < 0.05


def test_partial_correlation_and_group_difference(root):
    r = one(make(test="partial_correlation",
                 selection={"x": Select("head_contribution", step="first"),
                            "y": Select("change_from_init"), "covar": Select("ov_norm")}), root)
    assert r.verdict == "supported" and r.effect < -0.4
    g = make(test="group_difference", selection={"x": Select("change_from_init"), "group": Select("head_label")},
             params={**FAST, "groups": (schema.LABEL_CODES["anchor"], schema.LABEL_CODES["worker"])},
             prediction=Prediction("positive"))
    r = one(g, root)
    assert r.verdict == "supported" and r.effect > 0 and r.extra["n_group0"] == 48
    flipped = make(test="group_difference", selection={"x": Select("change_from_init"), "group": Select("head_label")},
                   params={**FAST, "groups": (2, 1)}, prediction=Prediction("positive"))
    r2 = one(flipped, root)
    assert r2.verdict == "refuted" and r2.effect == pytest.approx(-r.effect)


def test_equivalence_supported_and_refuted(root):
    def pair(metric, dims):
        kw = dict(family="Q", projection="none") if dims else {}
        return {"base": Select(metric, models=("base",), **kw), "tuned": Select(metric, models=("tuned",), **kw)}

    ok = make(test="tost_relative", datasets=("pair",), selection=pair("killing_self", True),
              prediction=Prediction("equivalent", bound=1e-3), params={})
    r = one(ok, root)
    assert r.verdict == "supported" and r.p_value < 0.05 and abs(r.effect) < 1e-3
    moved = make(test="tost_relative", datasets=("pair",), selection=pair("commutator_var", True),
                 prediction=Prediction("equivalent", bound=1e-3), params={})
    r = one(moved, root)
    assert r.verdict == "refuted" and r.ci_low > 1e-3
    eq = make(test="correlation_equivalence", selection={"x": Select("ov_norm"), "y": Select("change_from_init")},
              prediction=Prediction("equivalent", bound=0.3))
    assert one(eq, root).verdict == "supported"


def test_trend_enrichment_crossover_and_model_comparison(root):
    fam = dict(family="Q", projection="none")
    r = one(make(test="trend", selection={"values": Select("abelian_fraction", step="all", **fam)},
                 params={"n_perm": 999}, prediction=Prediction("positive")), root)
    assert r.verdict == "supported" and r.n == 6
    r = one(make(test="enrichment", selection={"first": Select("commutator_var", step="first", **fam),
                                               "last": Select("commutator_var", **fam)},
                 prediction=Prediction("above", value=1.0)), root)
    assert r.verdict == "supported" and 4.5 < r.effect < 5.5 and r.ci_low > 1
    r = one(make(test="depth_crossover", selection={"values": Select("commutator_mean", step="all", **fam)},
                 params={"n_boot": 200}, prediction=Prediction("crossing"), reference={"fraction": 0.315}), root)
    assert r.verdict == "supported" and r.extra["n_crossings"] == 1
    assert 1000 / 3000 < r.effect < 1 and r.ci_low <= r.effect <= r.ci_high <= 1  # one scale
    r = one(make(test="boundary_ratio", selection={"values": Select("head_heterogeneity", **fam)},
                 params={"n_boot": 200}, prediction=Prediction("above", value=1.0)), root)
    assert r.verdict == "supported" and r.effect > 2
    mc = dict(test="model_comparison", datasets=("panel",), prediction=Prediction("preferred"),
              selection={"response": Select("abelian_fraction", **fam)})
    models = {"width": ["log2_d_head"], "count": ["log2_n_heads"]}
    r = one(make(**mc, params={"models": models, "predicted": "width"}), root)
    assert r.verdict == "supported" and r.n == 12 and r.extra["aic_margin"] > 2
    r = one(make(**mc, params={"models": models, "predicted": "count"}), root)
    assert r.verdict == "refuted"


def test_skipped_and_undefined_data(root):
    absent = one(make(datasets=("absent",)), root)
    assert absent.verdict == "skipped" and absent.build == ABSENT_BUILD and "absent.nc" in absent.reason
    needs = one(make(datasets=("pythia",)), root)
    assert needs.verdict == "skipped" and "needs hub access" in needs.reason
    novar = one(make(selection={"x": Select("sink_score"), "y": Select("change_from_init")}), root)
    assert novar.verdict == "skipped" and "no variable 'sink_score'" in novar.reason
    assert novar.build == "python -m build_synth"
    noproj = one(make(selection={"x": Select("killing_self", family="Q", projection="adaptive"),
                                 "y": Select("change_from_init")}), root)
    assert noproj.verdict == "skipped" and "no projection 'adaptive'" in noproj.reason
    const = one(make(selection={"x": Select("head_contribution", step="first"),
                                "y": Select("change_from_init", step="first")}), root)
    assert const.verdict == "inconclusive" and "constant" in const.reason and math.isnan(const.p_value)


def test_spec_curve_verdict_per_choice_and_share(root):
    s = make(selection={"x": Select("head_contribution", step="first"),
                        "y": Select("killing_self", family="Q", projection="none")},
             prediction=Prediction("positive"),
             choices={"family": ["Q", "K"], "projection": ["none", "fixed:2", "adaptive"]})
    r = one(s, root)
    assert r.verdict == "supported"
    by = {(c["choice"]["family"], c["choice"]["projection"]): c["verdict"] for c in r.spec_curve}
    assert len(by) == 6
    assert by[("Q", "none")] == by[("Q", "fixed:2")] == "supported"
    assert by[("K", "none")] != "supported" and by[("K", "fixed:2")] != "supported"
    assert by[("Q", "adaptive")] == by[("K", "adaptive")] == "skipped"
    assert r.spec_curve_share == 0.5  # skipped choices leave the denominator


def test_evaluation_is_deterministic(root):
    a, b = one(make(), root), one(make(), root)
    assert (a.p_value, a.effect, a.ci_low, a.ci_high) == (b.p_value, b.effect, b.ci_low, b.ci_high)
    c = one(make(params={**FAST, "seed": 1}), root)
    assert (c.ci_low, c.ci_high) != (a.ci_low, a.ci_high)  # the seed is used


def test_choices_sweep_models_and_layers(tmp_path):
    import copy

    from lie_stats import cube as cube_mod

    # two runs: m0 planted, m1 the same cube with the change shuffled (no relation)
    c0 = synth_cube()
    c1 = copy.deepcopy(c0).assign_coords(model=["m1"])
    rng = np.random.default_rng(5)
    v = c1["change_from_init"].values
    c1["change_from_init"].values = v[..., rng.permutation(v.shape[-1])][..., ::-1, :]
    both = cube_mod.merge_shards([c0, c1])
    s = make(choices={"models": ["m0", "m1"], "layers": [(0, -1), (1, 2, 3, 4, 5, 6)]})
    r = evaluate_cube(s, both)
    assert r.verdict == "supported"  # pooled over both runs (stratified by model x layer)
    by = {(c["choice"]["models"], tuple(c["choice"]["layers"])): c for c in r.spec_curve}
    assert set(by) == {("m0", (0, -1)), ("m0", (1, 2, 3, 4, 5, 6)), ("m1", (0, -1)), ("m1", (1, 2, 3, 4, 5, 6))}
    assert by[("m0", (0, -1))]["n"] == 24 and by[("m0", (1, 2, 3, 4, 5, 6))]["n"] == 72
    assert by[("m0", (1, 2, 3, 4, 5, 6))]["verdict"] == "supported"
    assert by[("m1", (1, 2, 3, 4, 5, 6))]["verdict"] != "supported"


def test_out_of_scope_record():
    from lie_stats.spec import OutOfScope

    o = OutOfScope(id="G2", claim="38,963x amplification", source="essay", reason="training intervention",
                   reference={"amplification": 38963})
    r = o.result()
    assert (r.verdict, r.gate, r.dataset) == ("skipped", "report", spec_mod.NO_DATASET)
    assert r.reason == "out of scope: training intervention" and r.reference == {"amplification": 38963}
    assert r.row()["n"] is None and len(r.spec_hash) == 64
    assert OutOfScope(id="G2", claim="38,963x amplification", source="other", reason="training intervention",
                      reference={"amplification": 38963}).spec_hash() == o.spec_hash()
    with pytest.raises(SpecError, match="field 'reason': expected a non-empty string"):
        OutOfScope(id="G3", claim="c", source="s", reason="")


def test_pairwise_variables_keep_each_pair_once():
    v = np.arange(1 * 1 * 2 * 3 * 3, dtype=float).reshape(1, 1, 2, 3, 3)
    full = (schema.MODEL, schema.STEP, schema.FAMILY, schema.PROJECTION, schema.LAYER, schema.HEAD, schema.HEAD_J)
    cube = xr.Dataset({"commutator_raw": (full, v[:, :, None, None])},
                      coords={schema.MODEL: ["m"], schema.STEP: [0], schema.FAMILY: ["Q"],
                              schema.PROJECTION: ["none"], schema.LAYER: [0, 1], schema.HEAD: [0, 1, 2],
                              schema.HEAD_J: [0, 1, 2]})
    da = select(Select("commutator_raw", family="Q", projection="none"), cube)
    kept = np.argwhere(np.isfinite(da.values[0, 0]))
    assert kept.tolist() == [[0, 1], [0, 2], [1, 2]]  # layer 0: pairs (0,1), (0,2), (1,2) only
    assert int(np.isfinite(da.values).sum()) == 2 * 3


def test_mixed_model_interaction(root):
    # change ~ contribution x label: the contribution slope is negative overall (planted)
    s = make(test="mixed_model", selection={"y": Select("change_from_init"),
                                            "x": Select("head_contribution", step="first"),
                                            "z": Select("head_label")},
             params={"formula": "y ~ x * z", "term": "x", "categorical": ("z",)},
             prediction=Prediction("negative"))
    r = one(s, root)
    assert r.verdict == "supported" and r.effect < 0 and r.n == 96 and r.extra["n_groups"] == 8
    # the label enters as a factor: its interaction coefficient is named by level
    s2 = make(test="mixed_model", selection=s.selection,
              params={"formula": "y ~ x * z", "term": "x:z[T.2]", "categorical": ("z",)},
              prediction=Prediction("nonzero"))
    assert one(s2, root).verdict in ("supported", "inconclusive")
    bad = make(test="mixed_model", selection={"y": Select("change_from_init"), "x": Select("head_contribution")},
               params={"formula": "y ~ x", "term": "xx"})
    with pytest.raises(SpecError, match=r"no coefficient 'xx'\. Did you mean 'x'\?"):
        one(bad, root)
