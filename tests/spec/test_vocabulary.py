"""One name per concept in a declaration: ``resample_by`` is the public spelling of the
resampling unit; the names the kinds stored it under before (``strata``, ``unit``) are
deprecated aliases that give the same spec and the same pre-registration hash."""

from __future__ import annotations

import warnings
from dataclasses import fields
from pathlib import Path

import pytest

from lie_stats.collect import collect
from lie_stats.errors import SpecError
from lie_stats.spec import HypothesisSpec, Prediction, Select
from lie_stats.spec.registry import RESAMPLE_ALIASES, RESAMPLE_BY, resample_param

ROOT = Path(__file__).resolve().parents[2]

CORRELATION = dict(
    id="B5", claim="c", source="s", datasets=("synth",), test="correlation",
    selection={"x": Select("head_contribution", step="first"), "y": Select("change_from_init")},
    prediction=Prediction("negative"), gate="report",
)
TOST_PAIRED = dict(
    id="T", claim="c", source="s", datasets=("toy",), test="tost_paired",
    selection={"a": Select("abelian_fraction", step="last", family="Q", projection="none"),
               "b": Select("abelian_fraction", step="last", family="Q", projection="adaptive")},
    prediction=Prediction("equivalent", bound=0.025), gate="report",
)


def _old_spelling(**kw) -> tuple[HypothesisSpec, list[warnings.WarningMessage]]:
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        spec = HypothesisSpec(**kw)
    return spec, [w for w in caught if issubclass(w.category, DeprecationWarning)]


@pytest.mark.parametrize("base, old, value", [
    (CORRELATION, "strata", "model"), (CORRELATION, "strata", "none"), (CORRELATION, "strata", "layer"),
    (TOST_PAIRED, "unit", "run"), (TOST_PAIRED, "unit", "layer"),
])
def test_old_spelling_of_the_resampling_unit_is_the_same_spec_with_a_warning(base, old, value):
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # the new spelling warns of nothing
        new = HypothesisSpec(**base, params={RESAMPLE_BY: value, "seed": 3})
    spec, caught = _old_spelling(**base, params={old: value, "seed": 3})
    assert spec == new and spec.spec_hash() == new.spec_hash()
    assert spec.params == {RESAMPLE_BY: value, "seed": 3}
    assert spec.resolved_params()[old] == value and RESAMPLE_BY not in spec.resolved_params()
    assert len(caught) == 1
    message = str(caught[0].message)
    assert f"params[{old!r}] is deprecated" in message and f"params[{RESAMPLE_BY!r}]" in message
    assert caught[0].filename == __file__  # points at the declaration, not into lie_stats


def test_old_spelling_in_choices_is_the_same_curve():
    new = HypothesisSpec(**CORRELATION, choices={RESAMPLE_BY: ["layer", "none"]})
    spec, caught = _old_spelling(**CORRELATION, choices={"strata": ["layer", "none"]})
    assert spec == new and spec.spec_hash() == new.spec_hash() and len(caught) == 1
    assert "choices['strata'] is deprecated" in str(caught[0].message)
    assert [s.spec_hash() for s in map(spec.with_choice, spec.choice_grid())] == \
        [s.spec_hash() for s in map(new.with_choice, new.choice_grid())]
    # the hash covers the canonical form: the kind's own name for the unit
    assert new.declaration()["choices"] == {"strata": ["layer", "none"]}


def test_both_spellings_at_once_is_an_error_naming_the_field():
    with pytest.raises(SpecError, match=r"params\['strata'\].*deprecated name of 'resample_by'"):
        HypothesisSpec(**CORRELATION, params={"strata": "model", RESAMPLE_BY: "model"})


def test_an_alias_of_another_kind_is_not_accepted():
    # ``unit`` is tost_paired's old name, not correlation's: still an unknown parameter
    with pytest.raises(SpecError, match=r"takes no parameter 'unit'.*resample_by"):
        HypothesisSpec(**CORRELATION, params={"unit": "run"})


def test_every_committed_spec_hashes_the_same_under_either_spelling():
    found = collect([ROOT / "hypotheses"], datasets_dir=ROOT / "datasets")
    assert not found.errors
    checked = set()
    for d in found.declarations:
        spec = d.obj
        if not isinstance(spec, HypothesisSpec) or resample_param(spec.kind) is None:
            continue
        old = resample_param(spec.kind)
        value = spec.resolved_params()[old]
        kw = {f.name: getattr(spec, f.name) for f in fields(spec)}
        rest = {k: v for k, v in spec.params.items() if k != RESAMPLE_BY}
        declared = RESAMPLE_BY in spec.params
        with_new = HypothesisSpec(**{**kw, "params": {**rest, RESAMPLE_BY: value}})
        with_old, caught = _old_spelling(**{**kw, "params": {**rest, old: value}})
        assert with_old == with_new and with_old.spec_hash() == with_new.spec_hash() and caught, spec.id
        if declared:  # the committed declaration itself, written either way
            assert with_new.spec_hash() == spec.spec_hash(), spec.id
        checked.add(old)
    assert checked == set(RESAMPLE_ALIASES)  # both aliases occur in the committed specs
