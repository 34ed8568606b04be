"""The pytest plugin, tested with pytester: gates, pinning, flags, skips, broken modules,
reports, inertness and the ``run`` entry point."""

from __future__ import annotations

import json
import sys
import textwrap

import pytest

from lie_stats import report, schema, spec  # noqa: F401 - imported once, reused by in-process runs
from lie_stats import columns as C
from tests._spec_cubes import ABSENT_BUILD, make_datasets

pytest_plugins = ["pytester"]

HEADER = """\
from lie_stats.spec import HypothesisSpec, Prediction, Select
FAST = {"n_perm": 499, "n_boot": 100}
CONTRIB = Select("head_contribution", step="first")
CHANGE = Select("change_from_init")
"""

REP_OK = """
REP_OK = HypothesisSpec(
    id="B5", claim="contribution predicts change", source="essay", datasets=("synth", "absent"),
    test="replication", selection={"x": CONTRIB, "y": CHANGE}, params=FAST,
    prediction=Prediction("negative"), reference={"rho": -0.274, "p": 0.007, "n": 96},
    gate="replication")
"""
REP_BAD = """
REP_BAD = HypothesisSpec(
    id="B5-null", claim="ov_norm predicts change", source="essay", datasets=("synth",),
    test="replication", selection={"x": Select("ov_norm"), "y": CHANGE}, params=FAST,
    prediction=Prediction("negative"), reference={"rho": -0.274, "n": 96}, gate="replication")
"""
REPORT_REFUTED = """
REPORT_REFUTED = HypothesisSpec(
    id="B6", claim="value norm anti-correlates with change", source="essay", datasets=("synth",),
    test="correlation", selection={"x": Select("value_norm"), "y": CHANGE}, params=FAST,
    prediction=Prediction("negative"), gate="report")
"""


def pinned(claim="value norm anti-correlates with change", gate="pinned", name="PIN", ident="P1"):
    return f"""
{name} = HypothesisSpec(
    id="{ident}", claim="{claim}", source="essay", datasets=("synth",),
    test="correlation", selection={{"x": Select("value_norm"), "y": CHANGE}}, params=FAST,
    prediction=Prediction("negative"), gate="{gate}")
"""


@pytest.fixture(scope="module")
def datasets(tmp_path_factory):
    return make_datasets(tmp_path_factory.mktemp("datasets"))


def write_module(pytester, name, *bodies, header=True):
    folder = pytester.path / "hypotheses"
    folder.mkdir(exist_ok=True)
    text = (HEADER if header else "") + "".join(textwrap.dedent(b) for b in bodies)
    (folder / f"{name}.py").write_text(text, encoding="utf-8")
    return folder


def run(pytester, datasets, *args, figures=False):
    more = () if figures else ("--lie-no-figures",)
    # the reports into the test's folder (without --lie-reports they go to the temp folder)
    return pytester.runpytest("hypotheses", "--lie-datasets", str(datasets), "--lie-reports", "reports",
                              "-rs", *more, *args)


def results_json(pytester):
    return {(r["id"], r["dataset"]): r for r in json.loads((pytester.path / "reports" / "results.json").read_text())}


def test_items_pass_fail_and_skip_as_their_gates_say(pytester, datasets):
    write_module(pytester, "claims", REP_OK, REP_BAD, REPORT_REFUTED, pinned())
    res = run(pytester, datasets, figures=True)
    # REP_OK: synth passes, absent skips; REP_BAD fails (refuted); REPORT_REFUTED passes;
    # the pinned one fails (nothing pinned yet)
    res.assert_outcomes(passed=2, failed=2, skipped=1)
    assert res.ret == 1
    out = res.stdout.str()
    # the skip says why and how to build the data
    assert f"Build it with: {ABSENT_BUILD}" in out and "absent.nc" in out
    res.stdout.fnmatch_lines(["SKIPPED [[]1[]] hypotheses/claims.py:*B5::absent*Build it with*"])
    # failures print the result row, not a traceback
    assert "replication gate: verdict 'refuted', needs 'supported'" in out
    assert "verdict  refuted: small telescopes" in out
    assert "pinned gate: no verdict pinned for P1::synth" in out
    assert "Traceback" not in out and "def runtest" not in out
    # the verdict table in the terminal summary
    assert "lie_stats verdicts" in out
    # (the gate's outcome in words of its own, beside the verdict: never "refuted (passed)")
    res.stdout.fnmatch_lines(["B5 *synth *supported *ok *",
                              "B5 *absent *skipped *skip *",
                              "B5-null *synth *refuted *FAIL *",
                              "B6 *synth *refuted *ok *",
                              "legend: gate ok/FAIL/skip: passed, failed, not run*"])
    assert "(passed)" not in out and "(failed)" not in out
    # reports were written, with every result and its outcome
    recs = results_json(pytester)
    assert set(recs) == {("B5", "synth"), ("B5", "absent"), ("B5-null", "synth"), ("B6", "synth"), ("P1", "synth")}
    assert recs[("B5", "synth")]["outcome"] == "passed" and recs[("B5-null", "synth")]["outcome"] == "failed"
    assert recs[("B5", "absent")]["verdict"] == "skipped" and recs[("B5", "absent")]["build"] == ABSENT_BUILD
    for r in recs.values():
        assert set(C.RESULT_FIELDS) <= set(r)
    md = (pytester.path / "reports" / "report.md").read_text()
    assert "## Data" in md and "| synth | synthetic synth | present |" in md
    assert (pytester.path / "reports" / "figures" / "B5__synth.png").is_file()


def test_pinning_round_trip_and_changed_declaration(pytester, datasets):
    folder = write_module(pytester, "pins", pinned(), pinned(gate="report", name="REP", ident="R1"))
    registry = folder / "verdicts.json"
    run(pytester, datasets).assert_outcomes(passed=1, failed=1)  # P1 not pinned yet
    assert not registry.exists()

    res = run(pytester, datasets, "--update-verdicts")
    res.assert_outcomes(passed=2)
    pins = json.loads(registry.read_text())
    assert set(pins) == {"P1::synth", "R1::synth"}
    assert pins["P1::synth"]["verdict"] == "refuted" and len(pins["P1::synth"]["spec_hash"]) == 64
    assert "re-pinned 2 verdict(s)" in res.stdout.str()

    run(pytester, datasets).assert_outcomes(passed=2)  # pinned verdicts reproduced

    # a pinned verdict that differs fails, with the diff
    changed = dict(pins, **{"P1::synth": dict(pins["P1::synth"], verdict="supported")})
    registry.write_text(json.dumps(changed))
    res = run(pytester, datasets)
    res.assert_outcomes(passed=1, failed=1)
    assert "verdict changed: pinned 'supported' -> now 'refuted'" in res.stdout.str()
    registry.write_text(json.dumps(pins))

    # a changed declaration: the pinned item fails, the report item passes; both are flagged
    write_module(pytester, "pins", pinned(claim="edited claim"),
                 pinned(claim="edited claim", gate="report", name="REP", ident="R1"))
    res = run(pytester, datasets)
    res.assert_outcomes(passed=1, failed=1)
    out = res.stdout.str()
    assert "the declaration changed after pinning" in out
    assert "DECLARATION CHANGED after pinning: P1::synth" in out
    assert "DECLARATION CHANGED after pinning: R1::synth" in out
    recs = results_json(pytester)
    assert recs[("P1", "synth")]["declaration_changed"] is True
    assert recs[("R1", "synth")]["declaration_changed"] is True
    assert recs[("R1", "synth")]["pinned_hash"] == pins["R1::synth"]["spec_hash"]
    assert recs[("R1", "synth")]["spec_hash"] != pins["R1::synth"]["spec_hash"]

    # re-pinning records the new declaration: the gate passes and the terminal flag goes,
    # while the record keeps saying that this declaration differs from the pin it replaced
    run(pytester, datasets, "--update-verdicts").assert_outcomes(passed=2)
    res = run(pytester, datasets)
    res.assert_outcomes(passed=2)
    assert "DECLARATION CHANGED" not in res.stdout.str()
    row = results_json(pytester)[("P1", "synth")]
    assert row["declaration_changed"] is True
    assert row["previous_pin"]["spec_hash"] != row["spec_hash"] == row["pinned_hash"]


def test_update_verdicts_does_not_pass_a_failed_replication(pytester, datasets):
    folder = write_module(pytester, "claims", REP_BAD, pinned())
    res = run(pytester, datasets, "--update-verdicts")
    res.assert_outcomes(passed=1, failed=1)
    assert "replication gate: verdict 'refuted'" in res.stdout.str()
    pins = json.loads((folder / "verdicts.json").read_text())
    assert pins["B5-null::synth"]["verdict"] == "refuted"  # recorded all the same
    assert pins["P1::synth"]["gate"] == "pinned"


def test_registry_location_option_and_malformed_registry(pytester, datasets):
    write_module(pytester, "pins", pinned())
    registry = pytester.path / "elsewhere" / "pins.json"
    run(pytester, datasets, "--lie-verdicts", "elsewhere/pins.json", "--update-verdicts").assert_outcomes(passed=1)
    assert "P1::synth" in json.loads(registry.read_text())
    assert not (pytester.path / "hypotheses" / "verdicts.json").exists()
    run(pytester, datasets, "--lie-verdicts", "elsewhere/pins.json").assert_outcomes(passed=1)
    registry.write_text("{not json")
    res = run(pytester, datasets, "--lie-verdicts", "elsewhere/pins.json")
    res.assert_outcomes(failed=1)
    assert "the registry of pinned verdicts is not JSON" in res.stdout.str()
    assert "Traceback" not in res.stdout.str()


BROKEN = {
    "syntax": ("def broken(:\n", "SyntaxError: invalid syntax ("),
    "metric": (pinned().replace('Select("value_norm")', 'Select("comutator_mean")'),
               "Did you mean 'commutator_mean'?"),
    "testname": (pinned().replace('test="correlation"', 'test="corelation"'), "Did you mean 'correlation'?"),
    "noreference": (pinned(gate="replication"), "a 'replication' gate needs the original figures"),
    "dataset": (pinned().replace('datasets=("synth",)', 'datasets=("sytnh",)'), "Did you mean 'synth'?"),
    "step": (pinned().replace('Select("value_norm")', 'Select("value_norm", step="lst")'),
             "Did you mean 'last'?"),
}


def test_broken_modules_fail_alone_and_the_others_still_run(pytester, datasets):
    write_module(pytester, "good", REPORT_REFUTED)
    for name, (body, _) in BROKEN.items():
        write_module(pytester, f"bad_{name}", body, header=name != "syntax")
    res = run(pytester, datasets)
    res.assert_outcomes(passed=1, failed=len(BROKEN))
    assert res.ret == 1  # failures, not an interrupted session
    out = res.stdout.str()
    assert "Interrupted" not in out
    for name, (_, text) in BROKEN.items():
        assert text in out, name
        assert f"bad_{name}.py" in out
    # each SpecError names the module and the field
    assert "bad_metric.py: HypothesisSpec 'P1', field \"selection['x'].metric\"" in out
    assert "bad_dataset.py: HypothesisSpec 'P1', field 'datasets'" in out
    assert "bad_syntax.py, line 1)\n    def broken(:" in out
    assert "SpecError: " in out and "Traceback" not in out
    assert set(results_json(pytester)) == {("B6", "synth")}


def test_out_of_scope_claims_are_recorded_and_skipped(pytester, datasets):
    write_module(pytester, "gating", """
        from lie_stats.spec import OutOfScope
        V04 = OutOfScope(id="G1", claim="gating preserves 38.9 % vs 47 % unprotected", source="essay",
                         reason="a training intervention on other models, not weight geometry",
                         reference={"preserved": 0.389, "unprotected": 0.47})
    """, header=False)
    res = run(pytester, datasets)
    res.assert_outcomes(skipped=1)
    assert res.ret == 0
    assert "G1: out of scope: a training intervention" in res.stdout.str()
    rec = results_json(pytester)[("G1", "-")]
    assert rec["verdict"] == "skipped" and rec["reason"].startswith("out of scope")
    assert rec["reference"] == {"preserved": 0.389, "unprotected": 0.47} and rec["outcome"] == "skipped"


def test_duplicate_ids_are_reported_and_imports_not_collected_twice(pytester, datasets):
    write_module(pytester, "a_first", pinned(gate="report"))
    write_module(pytester, "b_again", pinned(gate="report", claim="another claim"))
    (pytester.path / "hypotheses" / "c_import.py").write_text("from a_first import PIN\n")
    res = run(pytester, datasets)
    res.assert_outcomes(passed=1, failed=1)
    out = res.stdout.str()
    assert "b_again.py: HypothesisSpec 'P1', field 'id': the id is already declared by" in out
    assert "a_first.py::PIN" in out


def test_items_are_named_by_spec_id_and_selectable(pytester, datasets):
    write_module(pytester, "claims", REP_OK, REPORT_REFUTED)
    res = run(pytester, datasets, "--collect-only", "-q")
    res.stdout.fnmatch_lines(["*hypotheses/claims.py::B5[[]synth[]]", "*hypotheses/claims.py::B5[[]absent[]]",
                              "*hypotheses/claims.py::B6[[]synth[]]"])
    run(pytester, datasets, "-k", "B6").assert_outcomes(passed=1)
    run(pytester, datasets, "-k", "REP_OK and synth").assert_outcomes(passed=1)  # attribute, dataset


def test_specs_in_regular_test_modules_are_collected_too(pytester, datasets):
    pytester.makepyfile(test_mixed=HEADER + REPORT_REFUTED + "\n\ndef test_plain():\n    assert True\n")
    res = pytester.runpytest("--lie-datasets", str(datasets))
    res.assert_outcomes(passed=2)
    assert "lie_stats verdicts" in res.stdout.str()


def test_plugin_is_inert_without_specs(pytester):
    pytester.makepyfile(test_plain="""
        import sys

        def test_nothing_heavy_imported():
            assert "lie_stats.pytest_plugin" in sys.modules  # the entry point is loaded
            for heavy in ("lie_stats.spec", "lie_stats.report", "xarray", "matplotlib", "pandas"):
                assert heavy not in sys.modules, heavy
    """)
    res = pytester.runpytest_subprocess()
    res.assert_outcomes(passed=1)
    assert "lie_stats verdicts" not in res.stdout.str()
    assert not (pytester.path / "reports").exists()


def test_options_are_documented_in_their_group(pytester):
    res = pytester.runpytest("--help")
    out = res.stdout.str()
    assert "lie_stats hypotheses (science tests)" in out
    res.stdout.fnmatch_lines(["*--lie-datasets=DIR*Default: ./datasets", "*when the folder pytest runs from has one*"])
    for opt in ("--lie-reports=DIR", "--lie-verdicts=FILE", "--lie-no-figures", "--update-verdicts"):
        assert opt in out
    assert "lie_hypothesis_dirs" in out


def test_run_passes_the_plugin_options_to_pytest(monkeypatch):
    from lie_stats import pytest_plugin

    seen = []
    monkeypatch.setattr(pytest_plugin.pytest, "main", lambda args, plugins=(): seen.append(args) or 3)
    assert pytest_plugin.run() == 3
    assert pytest_plugin.run(["h/B5.py", "h/B6.py"], datasets_dir="d", reports_dir="r",
                             update_verdicts=True, pytest_args=["-q", "-k", "B5"]) == 3
    assert seen == [
        ["hypotheses", "--lie-datasets=datasets", "--lie-reports=reports", "--lie-paths-are-hypotheses"],
        ["h/B5.py", "h/B6.py", "--lie-datasets=d", "--lie-reports=r", "--lie-paths-are-hypotheses",
         "--update-verdicts", "-q", "-k", "B5"],
    ]


def test_run_entry_point_returns_pytest_status_and_writes_reports(pytester, datasets):
    write_module(pytester, "claims", REP_OK, REP_BAD)
    code = ("import sys; from lie_stats.pytest_plugin import run; "
            f"sys.exit(run(['hypotheses'], datasets_dir={str(datasets)!r}, reports_dir='out', "
            "pytest_args=['-q', '-p', 'no:cacheprovider', '--lie-no-figures']))")
    res = pytester.run(sys.executable, "-c", code)
    assert res.ret == 1, res.stdout.str()  # REP_BAD fails its replication gate
    recs = json.loads((pytester.path / "out" / "results.json").read_text())
    assert {(r["id"], r["dataset"], r["outcome"]) for r in recs} == {
        ("B5", "synth", "passed"), ("B5", "absent", "skipped"), ("B5-null", "synth", "failed")}


SECTION = '''
from lie_stats.report import ReportSection


def write_s9(results, reports_dir, datasets_dir):
    ids = ", ".join(r.id for r in results if r.id.startswith("S9"))
    return f"## S9, read together\\n\\n{ids}\\n"


REPORT_SECTIONS = (ReportSection("S9", write_s9),)
'''


def test_a_section_module_without_specs_is_collected_and_adds_its_section(pytester, datasets):
    write_module(pytester, "claims", pinned(gate="report", ident="S9-a"), pinned(gate="report", name="B",
                                                                              ident="S9-b"))
    write_module(pytester, "S9_report", SECTION, header=False)
    res = run(pytester, datasets, figures=True)
    res.assert_outcomes(passed=2)
    md = (pytester.path / "reports" / "report.md").read_text()
    assert "## S9, read together\n\nS9-a, S9-b\n" in md and md.index("## S9, read together") > md.index("## Claim S9")


def test_a_malformed_report_sections_is_its_modules_error_and_the_rest_runs(pytester, datasets):
    write_module(pytester, "claims", pinned(gate="report", ident="S9-a"))
    write_module(pytester, "S8_report", 'REPORT_SECTIONS = "S8"\n', header=False)
    res = run(pytester, datasets, figures=True)
    res.assert_outcomes(passed=1, failed=1)
    out = res.stdout.str()
    assert "S8_report.py: REPORT_SECTIONS: expected a list or tuple of lie_stats.report.ReportSection, got str" in out
