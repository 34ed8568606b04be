"""Gates and the registry of pinned verdicts (lie_stats.gates): each gate's pass, failure and
skip, the declaration flag, re-pinning, and the registry's reading, validation and atomic
writes."""

from __future__ import annotations

import json
import os
import pathlib

import pytest

from lie_stats import gates
from lie_stats import columns as C
from lie_stats.errors import SpecError
from lie_stats.spec import Result

REPO = pathlib.Path(__file__).resolve().parents[1]
HASH = "ab" * 32
OTHER = "cd" * 32


def result(verdict="refuted", gate="pinned", spec_hash=HASH, **kw):
    return Result(id=kw.pop("id", "P1"), claim="c", source="s", dataset=kw.pop("dataset", "toy"),
                  verdict=verdict, reason=kw.pop("reason", "the reason"), gate=gate, test="correlation",
                  spec_hash=spec_hash, reference={}, **kw)


def pin(verdict="refuted", spec_hash=HASH, gate="pinned"):
    return {"verdict": verdict, "spec_hash": spec_hash, "gate": gate}


# ----------------------------------------------------------------------------- gate outcomes


@pytest.mark.parametrize("verdict, outcome", [("supported", "passed"), ("refuted", "failed"),
                                              ("inconclusive", "failed")])
def test_replication_fails_unless_supported(verdict, outcome):
    out = gates.check(result(verdict, gate="replication"), None)
    assert out.outcome == outcome and out.failed == (outcome == "failed")
    if out.failed:
        assert out.message == f"replication gate: verdict {verdict!r}, needs 'supported' (the reason)"
    else:
        assert out.message == ""


@pytest.mark.parametrize("verdict", ["supported", "refuted", "inconclusive"])
def test_report_never_fails_even_with_a_changed_declaration(verdict):
    for pinned in (None, pin("supported"), pin(verdict, spec_hash=OTHER)):
        out = gates.check(result(verdict, gate="report"), pinned)
        assert out.outcome == "passed", pinned
    out = gates.check(result(verdict, gate="report"), pin(verdict, spec_hash=OTHER))
    assert out.declaration_changed and out.changed == (OTHER, HASH)  # flagged, not failed


def test_pinned_fails_without_a_pin_and_names_the_registry(tmp_path):
    out = gates.check(result(), None, registry=tmp_path / "verdicts.json")
    assert out.failed
    assert out.message == (f"pinned gate: no verdict pinned for P1::toy in {tmp_path / 'verdicts.json'}; "
                           f"run with --update-verdicts to pin 'refuted'")
    assert out.pinned_verdict is None and out.pinned_hash is None and not out.declaration_changed


def test_pinned_passes_on_the_pinned_verdict_and_fails_on_another():
    assert gates.check(result(), pin()).outcome == "passed"
    out = gates.check(result("inconclusive"), pin("refuted"))
    assert out.failed and out.message == "pinned gate: verdict changed: pinned 'refuted' -> now 'inconclusive'"
    assert out.pinned_verdict == "refuted" and out.pinned_hash == HASH


def test_pinned_fails_when_the_declaration_changed_after_pinning():
    out = gates.check(result(spec_hash=OTHER), pin())
    assert out.failed and out.declaration_changed and out.changed == (HASH, OTHER)
    assert out.message == (f"pinned gate: the declaration changed after pinning (hash {HASH[:12]} -> "
                           f"{OTHER[:12]}); review and re-pin with --update-verdicts")
    # the verdict check comes first: both changed, the verdict's message
    assert "verdict changed" in gates.check(result("supported", spec_hash=OTHER), pin()).message


def test_update_pins_every_gate_passes_pinned_and_still_fails_replication():
    out = gates.check(result(spec_hash=OTHER), pin("supported"), update=True)
    assert out.outcome == "passed" and out.pin == {"verdict": "refuted", "spec_hash": OTHER, "gate": "pinned"}
    assert out.declaration_changed and out.changed is None  # re-pinned: not flagged
    rep = gates.check(result("refuted", gate="replication"), None, update=True)
    assert rep.failed and rep.pin["verdict"] == "refuted" and rep.pin["gate"] == "replication"
    assert gates.check(result(gate="report"), None, update=True).pin["gate"] == "report"
    assert gates.check(result(), pin()).pin is None  # no pin without update


def test_skipped_results_skip_under_every_gate_and_are_never_pinned():
    for gate in C.GATES:
        res = result("skipped", gate=gate, reason="dataset 'toy' is needs data", build="make toy")
        out = gates.check(res, None, update=True)
        assert out.outcome == "skipped" and not out.failed and out.pin is None
        assert out.message == "P1::toy: dataset 'toy' is needs data. Build it with: make toy"
    out = gates.check(result("skipped", reason="r"), pin(spec_hash=OTHER))
    assert out.message == "P1::toy: r." and out.declaration_changed  # the flag all the same


def test_annotate_returns_a_new_result_with_the_pin_and_leaves_the_old_one():
    res = result(spec_hash=OTHER)
    got = gates.check(res, pin("supported")).annotate(res)
    assert (got.pinned_verdict, got.pinned_hash, got.declaration_changed) == ("supported", HASH, True)
    assert got.outcome == "failed"  # pinned 'supported' and a changed declaration
    assert (res.pinned_verdict, res.pinned_hash, res.declaration_changed, res.outcome) == (None, None, False, "")
    assert got.row()["declaration_changed"] is True


def test_re_pinning_records_the_pin_it_replaces_until_the_next_change(tmp_path):
    path = tmp_path / "verdicts.json"
    key = "P1::toy"
    gates.update_registry(path, {key: gates.pin_entry(result("supported"))})
    assert "previous" not in gates.read_registry(path)[key]  # a first pin replaces nothing
    # a new verdict under the same declaration (a rule changed): the old pin is kept as previous
    res = result("refuted")
    out = gates.check(res, gates.read_registry(path)[key], update=True)
    assert out.previous_pin == {"verdict": "supported", "spec_hash": HASH}
    gates.update_registry(path, {key: out.pin})
    assert gates.read_registry(path)[key]["previous"] == {"verdict": "supported", "spec_hash": HASH}
    # an unchanged re-pin keeps it; a check (no update) reports it on the result
    gates.update_registry(path, {key: gates.pin_entry(res)})
    got = gates.check(res, gates.read_registry(path)[key])
    assert got.outcome == "passed" and got.annotate(res).row()["previous_pin"]["verdict"] == "supported"
    # a changed declaration with the same verdict replaces it
    new = result("refuted", spec_hash=OTHER)
    gates.update_registry(path, {key: gates.pin_entry(new)})
    assert gates.read_registry(path)[key]["previous"] == {"verdict": "refuted", "spec_hash": HASH}


def test_a_pins_history_is_kept_across_re_pins_and_grows_by_each_change_made_with_a_reason(tmp_path):
    path = tmp_path / "verdicts.json"
    key = "P1::toy"
    first = {"on": "2026-12-02", "change": "the band is declared, after the verdict 'supported' was seen"}
    gates.write_registry(path, {key: {**gates.pin_entry(result("supported")), "history": [first]}})
    res = result("supported")
    got = gates.check(res, gates.read_registry(path)[key]).annotate(res)
    assert got.row()["pin_history"] == [first]  # what results.json and the report show
    # an unchanged re-pin, and a changed one without a reason, keep the record as it is
    gates.update_registry(path, {key: gates.pin_entry(res)})
    gates.update_registry(path, {key: gates.pin_entry(result("refuted"))})
    assert gates.read_registry(path)[key]["history"] == [first]
    # a change made with a reason (--pin-reason) is appended, dated
    new = result("refuted", spec_hash=OTHER)
    out = gates.check(new, gates.read_registry(path)[key], update=True, reason="n_boot 30")
    assert [h["change"] for h in out.history] == [first["change"], "n_boot 30"]
    gates.update_registry(path, {key: out.pin})
    written = gates.read_registry(path)[key]["history"]
    assert written == out.history and len(written[-1]["on"]) == 10
    # retiring keeps it, and re-pinning brings it back
    gates.update_registry(path, {}, retire={key: "out of scope: r"})
    assert gates.read_retired(path)[key]["history"] == written
    gates.update_registry(path, {key: gates.pin_entry(new)})
    assert gates.read_registry(path)[key]["history"] == written


def test_declaration_changed_compares_the_pinned_hash():
    assert gates.declaration_changed(pin(), OTHER) and not gates.declaration_changed(pin(), HASH)
    assert not gates.declaration_changed(None, HASH) and not gates.declaration_changed({}, HASH)


# ----------------------------------------------------------------------------- the registry


def test_read_missing_registry_is_empty(tmp_path):
    assert gates.read_registry(tmp_path / "verdicts.json") == {}


@pytest.mark.parametrize("text, message", [
    ("{not json", "the registry of pinned verdicts is not JSON"),
    ("[1, 2]", "the registry must be a JSON object"),
    ('{"P1::toy": "refuted"}', "entry 'P1::toy': expected an object"),
    ('{"P1::toy": {"spec_hash": "ab"}}', "entry 'P1::toy', field 'verdict': None is not a verdict"),
    ('{"P1::toy": {"verdict": "refute", "spec_hash": "ab"}}', "'refute' is not a verdict; expected one of"),
    ('{"P1::toy": {"verdict": "refuted", "spec_hash": 12}}', "field 'spec_hash': expected the declaration's hash"),
    ('{"P1::toy": {"verdict": "refuted", "spec_hash": "ab", "previous": "supported"}}',
     "field 'previous': expected the replaced pin"),
    ('{"P1::toy": {"verdict": "refuted", "spec_hash": "ab", "history": "changed"}}',
     "field 'history': expected a list of changes"),
    ('{"P1::toy": {"verdict": "refuted", "spec_hash": "ab", "history": [{"on": "Dec 2", "change": "x"}]}}',
     "field 'history': expected a list of changes"),
    ('{"P1::toy": {"verdict": "refuted", "spec_hash": "ab", "history": [{"on": "2026-12-02", "change": " "}]}}',
     "field 'history': expected a list of changes"),
    ('{"P1::toy": {"verdict": "refuted", "spec_hash": "ab", "history": [{"on": "2026-12-02", "why": "x"}]}}',
     "field 'history': expected a list of changes"),
])
def test_malformed_registries_are_errors_naming_the_file_and_entry(tmp_path, text, message):
    path = tmp_path / "verdicts.json"
    path.write_text(text)
    with pytest.raises(SpecError, match=message) as err:
        gates.read_registry(path)
    assert str(err.value).startswith(f"{path}: ")


def test_write_and_update_keep_other_pins_in_a_stable_layout(tmp_path):
    path = tmp_path / "sub" / "verdicts.json"
    gates.write_registry(path, {"B::d": pin("supported"), "A::d": pin()})
    text = path.read_text()
    assert text.endswith("}\n") and text.index('"A::d"') < text.index('"B::d"')
    assert text == json.dumps({"A::d": pin(), "B::d": pin("supported")}, indent=2, sort_keys=True) + "\n"
    data = gates.update_registry(path, {"B::d": pin("refuted", OTHER), "C::d": pin("inconclusive")})
    assert gates.read_registry(path) == data
    replaced = {"previous": {"verdict": "supported", "spec_hash": HASH}}  # B's old pin
    assert data == {"A::d": pin(), "B::d": pin("refuted", OTHER) | replaced, "C::d": pin("inconclusive")}


def test_registry_writes_are_atomic_and_shared(tmp_path, monkeypatch):
    path = tmp_path / "verdicts.json"
    gates.write_registry(path, {"A::d": pin()})
    before = path.read_bytes()
    real = pathlib.Path.write_text

    def half_then_fail(self, text, *a, **k):
        real(self, text[: len(text) // 2], *a, **k)
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(pathlib.Path, "write_text", half_then_fail)
    with pytest.raises(OSError, match="No space left"):
        gates.update_registry(path, {"B::d": pin()})
    monkeypatch.undo()
    # only the registry and its (empty, hidden) lock file: no temporary file left
    assert path.read_bytes() == before
    assert sorted(p.name for p in tmp_path.iterdir()) == [".verdicts.json.lock", "verdicts.json"]
    umask = os.umask(0o077)
    try:
        gates.update_registry(path, {"B::d": pin()})
    finally:
        os.umask(umask)
    assert oct(path.stat().st_mode & 0o777) == "0o644"


def test_a_pin_written_by_update_reproduces_on_the_next_check(tmp_path):
    path = tmp_path / "verdicts.json"
    res = result("inconclusive")
    out = gates.check(res, gates.read_registry(path).get(gates.result_key(res)), update=True)
    gates.update_registry(path, {gates.result_key(res): out.pin})
    again = gates.check(res, gates.read_registry(path)[gates.result_key(res)], registry=path)
    assert again.outcome == "passed" and not again.declaration_changed


def test_the_committed_registry_is_valid():
    data = gates.read_registry(REPO / "hypotheses" / gates.REGISTRY_FILE)
    assert data and all("::" in key for key in data)
    assert {e["gate"] for e in data.values()} <= set(C.GATES)
    retired = gates.read_retired(REPO / "hypotheses" / gates.REGISTRY_FILE)
    assert not set(retired) & set(data) and all("::" in key for key in retired)


# ----------------------------------------------------------------------------- retired pins


@pytest.mark.parametrize("text, message", [
    ('{"retired": []}', "section 'retired': expected an object"),
    ('{"retired": {"P1::toy": {"verdict": "refuted", "spec_hash": "ab"}}}',
     "retired entry 'P1::toy', field 'retired_on': expected a string"),
    ('{"retired": {"P1::toy": {"verdict": "refuted", "spec_hash": "ab", "retired_on": "2026-12-05"}}}',
     "retired entry 'P1::toy', field 'retired_reason': expected a string"),
    ('{"retired": {"P1::toy": {"verdict": "maybe", "spec_hash": "ab"}}}',
     "retired entry 'P1::toy', field 'verdict': 'maybe' is not a verdict"),
])
def test_a_malformed_retired_section_is_an_error_naming_the_file_and_entry(tmp_path, text, message):
    path = tmp_path / "verdicts.json"
    path.write_text(text)
    for read in (gates.read_registry, gates.read_retired):
        with pytest.raises(SpecError, match=message) as err:
            read(path)
        assert str(err.value).startswith(f"{path}: ")


def test_retiring_moves_a_live_pin_and_re_pinning_brings_it_back(tmp_path):
    path = tmp_path / "verdicts.json"
    gates.write_registry(path, {"A::d": pin("supported"), "B::d": pin()})
    with pytest.raises(SpecError, match="'retired' is the registry's section"):
        gates.write_registry(path, {"retired": pin()})
    # a key re-pinned in the same write is not retired; an unknown key is ignored
    live = gates.update_registry(path, {"B::d": pin()}, retire={"A::d": "declaration removed", "B::d": "x",
                                                                "Z::d": "y"})
    assert live == {"B::d": pin()}
    retired = gates.read_retired(path)
    assert list(retired) == ["A::d"] and retired["A::d"]["retired_reason"] == "declaration removed"
    assert {k: retired["A::d"][k] for k in ("verdict", "spec_hash", "gate")} == pin("supported")
    assert len(retired["A::d"]["retired_on"]) == 10  # YYYY-MM-DD
    text = json.loads(path.read_text())
    assert sorted(text) == ["B::d", gates.RETIRED]
    # no gate compares with it: the pinned gate names the retirement
    out = gates.check(result("refuted", id="A", dataset="d"), None, registry=path, retired=retired["A::d"])
    assert out.failed and out.message.startswith(f"pinned gate: the pin of A::d in {path} was retired on ")
    assert "(declaration removed; its last verdict 'supported')" in out.message
    assert gates.check(result("refuted", gate="report"), None, retired=retired["A::d"]).outcome == "passed"
    # re-pinned: live again, the retired pin is the one it replaced
    live = gates.update_registry(path, {"A::d": pin("refuted")})
    assert live["A::d"]["previous"] == {"verdict": "supported", "spec_hash": HASH}
    assert gates.read_retired(path) == {} and gates.RETIRED not in json.loads(path.read_text())
