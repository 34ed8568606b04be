"""Every bundled hypothesis states its fidelity to its essay's design (HypothesisSpec.fidelity):
none is silently taken as tested as stated, every proxy names what differs, and stating it
changed no pre-registration (fidelity is not hashed)."""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path

import pytest

from lie_stats.collect import collect
from lie_stats.spec import Fidelity, HypothesisSpec
from lie_stats.spec.parts import FIDELITY_ASPECTS, replace

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def specs() -> list[HypothesisSpec]:
    found = collect([ROOT / "hypotheses"], base=ROOT)
    assert not found.errors, found.errors
    out = [d.obj for d in found.declarations if isinstance(d.obj, HypothesisSpec)]
    assert len(out) > 100  # the registry, not an empty folder
    return out


def test_every_bundled_spec_declares_its_fidelity(specs):
    undeclared = [s.id for s in specs if s.fidelity is None]
    assert not undeclared, f"no fidelity declared (would read as_stated by default): {undeclared}"
    for s in specs:
        for ds in s.datasets:
            record = s.fidelity_record(ds)
            if record["status"] == "proxy":
                assert record["differs"] and all(d.split(": ", 1)[0] in FIDELITY_ASPECTS for d in record["differs"])


def test_declaring_fidelity_changed_no_pre_registration(specs):
    pins = json.loads((ROOT / "hypotheses" / "verdicts.json").read_text())
    checked = 0
    for s in specs:
        assert replace(s, fidelity=None).spec_hash() == s.spec_hash(), s.id
        for ds in s.datasets:
            pin = pins.get(f"{s.id}::{ds}")
            if pin and isinstance(pin, Mapping) and pin.get("spec_hash"):
                assert pin["spec_hash"] == s.spec_hash(), f"{s.id}::{ds}"
                checked += 1
    assert checked > 100


def test_the_essays_own_data_are_the_tests_as_stated(specs):
    # the Pythia declarations that read the essay's model, measure and compression
    stated = sorted(f"{s.id}::{ds}" for s in specs for ds in s.datasets
                    if s.fidelity_record(ds)["status"] == "as_stated")
    assert stated == ["A3-pythia::pythia", "A6-pythia::pythia_410m_all", "A8-pythia::pythia"]
    by_id = {s.id: s for s in specs}
    assert isinstance(by_id["A4"].fidelity, Mapping) and all(
        isinstance(f, Fidelity) for f in by_id["A4"].fidelity.values())
    assert by_id["A1"].fidelity_record("pico_pythia_pair")["differs"][0].startswith("intervention: ")
