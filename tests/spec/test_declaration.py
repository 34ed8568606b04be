"""Declarations (lie_stats.spec.declaration): the pre-registration hash of a HypothesisSpec,
equality by declaration, and the OutOfScope record."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from lie_stats import spec as spec_mod
from lie_stats.errors import SpecError
from lie_stats.spec import Fidelity, HypothesisSpec, OutOfScope, Prediction, Select

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
        dict(PINNED_HASH_SPEC, fidelity=Fidelity("as_stated")),
        dict(PINNED_HASH_SPEC, fidelity=Fidelity("proxy", differs=("population: a smaller model",))),
        dict(PINNED_HASH_SPEC, fidelity={"synth": Fidelity("proxy", differs=("unit: layers, not heads",))}),
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
        dict(PINNED_HASH_SPEC, choices={"resample_by": ["layer", "none"]}),
    ]
    hashes = {HypothesisSpec(**kw).spec_hash() for kw in different}
    assert h not in hashes and len(hashes) == len(different)


def test_out_of_scope_record():
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


def test_fidelity_is_validated_at_declaration_naming_the_field():
    bad = [
        (Fidelity("proxied", differs=("population: x",)), r"field 'fidelity.status': unknown fidelity status "
                                                          r"'proxied'\. Did you mean 'proxy'\?"),
        (Fidelity("proxy"), r"field 'fidelity.differs': a proxy names at least one difference"),
        (Fidelity("proxy", differs=("populaton: tiny runs",)),
         r"field 'fidelity.differs\[0\]': expected \"<aspect>: <what differs>\".*Did you mean 'population'\?"),
        (Fidelity("proxy", differs=("sample size:  ",)), r"field 'fidelity.differs\[0\]': says nothing after"),
        (Fidelity("proxy", differs=("size: 2 runs",)), r"field 'fidelity.differs\[0\]'"),
        (Fidelity("proxy", differs=("unit: heads", 3)), r"field 'fidelity.differs\[1\]': expected a string"),
        (Fidelity("as_stated", differs=("unit: heads",)), r"field 'fidelity.status': 'as_stated' with differences"),
        ({"status": "proxy", "differs": []}, r"field 'fidelity': expected Fidelity\(status, differs=\(\.\.\.\)\), not a mapping of its fields"),
        ({"other": Fidelity()}, r"field 'fidelity': .*missing: 'synth'; not a dataset of the spec: 'other'"),
        ("proxy", r"field 'fidelity': expected a Fidelity"),
    ]
    for fidelity, message in bad:
        with pytest.raises(SpecError, match=message):
            HypothesisSpec(**PINNED_HASH_SPEC, fidelity=fidelity)


def test_results_carry_the_declared_fidelity_by_dataset():
    from lie_stats.spec.results import result_for

    undeclared = HypothesisSpec(**PINNED_HASH_SPEC)
    assert result_for(undeclared, "synth", "skipped", "r").row()["fidelity"] == {"status": "as_stated", "differs": []}
    proxy = Fidelity("proxy", differs=["population: tiny GPT-NeoX runs trained here", "sample size: 2 runs"])
    spec = HypothesisSpec(**dict(PINNED_HASH_SPEC, datasets=("synth", "pythia")),
                          fidelity={"synth": proxy, "pythia": Fidelity("as_stated")})
    assert result_for(spec, "synth", "skipped", "r").row()["fidelity"] == {
        "status": "proxy", "differs": ["population: tiny GPT-NeoX runs trained here", "sample size: 2 runs"]}
    assert result_for(spec, "pythia", "skipped", "r").row()["fidelity"]["status"] == "as_stated"
    # a cube in hand that the mapping does not name is not claimed to be as stated
    assert result_for(spec, "<cube>", "skipped", "r").fidelity["status"] == "proxy"
    # the spec curve's copies keep it
    curved = HypothesisSpec(**dict(PINNED_HASH_SPEC, choices={"resample_by": ["layer", "none"]}), fidelity=proxy)
    assert all(c.fidelity == proxy for c in map(curved.with_choice, curved.choice_grid()))
    oos = OutOfScope(id="G4", claim="c", source="s", reason="r").result().row()
    assert oos["fidelity"] == {"status": "as_stated", "differs": []}
