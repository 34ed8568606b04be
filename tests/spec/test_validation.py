"""Validation (lie_stats.spec.validation): a bad declaration raises SpecError naming the
declaring module, the spec and the field, with a suggestion on a typo; datasets are checked
against the cards."""

from __future__ import annotations

from pathlib import Path

import pytest

from lie_stats import spec as spec_mod
from lie_stats.errors import SpecError
from lie_stats.spec import HypothesisSpec, Prediction, Select, evaluate
from tests._spec_cubes import planted_fields, planted_spec

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
    (dict(params={"resample_by": "layers"}), "params['resample_by']", "Did you mean 'layer'?"),
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
        HypothesisSpec(**planted_fields(**changes))  # declared here: this file is the module
    msg = str(info.value)
    assert msg.startswith(str(Path(__file__))), msg  # the declaring module, found from the frame
    assert "HypothesisSpec 'B5'" in msg
    assert f"field {fieldname!r}" in msg, msg
    assert text in msg, msg


def test_unknown_dataset_is_reported_with_suggestion(planted_root):
    s = planted_spec(datasets=("sytnh",))
    with pytest.raises(SpecError, match=r"field 'datasets': unknown dataset 'sytnh'\. Did you mean 'synth'\?"):
        evaluate(s, planted_root)
    with pytest.raises(SpecError, match="Did you mean 'synth'"):
        spec_mod.check_datasets(s, planted_root)
