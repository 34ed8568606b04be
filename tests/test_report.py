"""Reports: results.json fields and precision, adjusted p-values, figures, Markdown and HTML."""

from __future__ import annotations

import json
import math
import os
import random

import numpy as np
import pytest
from statsmodels.stats.multitest import multipletests

from lie_stats import report, schema
from lie_stats.spec import HypothesisSpec, Prediction, Select, evaluate
from tests._spec_cubes import make_datasets

FAST = {"n_perm": 999, "n_boot": 200}


@pytest.fixture(scope="module")
def results(tmp_path_factory):
    root = make_datasets(tmp_path_factory.mktemp("datasets"))
    specs = [
        HypothesisSpec(
            id="B5", claim="Initial contribution predicts change <b>", source="Anchors essay",
            datasets=("synth", "absent"), test="replication",
            selection={"x": Select("head_contribution", step="first"), "y": Select("change_from_init")},
            params=FAST, prediction=Prediction("negative"),
            reference={"rho": -0.274, "p": 0.007, "n": 96}, gate="replication"),
        HypothesisSpec(
            id="C1", claim="Q-family self-Killing tracks contribution", source="test",
            datasets=("synth",), test="correlation",
            selection={"x": Select("head_contribution", step="first"),
                       "y": Select("killing_self", family="Q", projection="none")},
            params=FAST, prediction=Prediction("positive"), gate="report",
            choices={"family": ["Q", "K"]}),
        HypothesisSpec(
            id="C2", claim="ov_norm unrelated", source="test", datasets=("synth",), test="correlation",
            selection={"x": Select("ov_norm"), "y": Select("change_from_init")},
            params=FAST, prediction=Prediction("negative"), gate="pinned"),
        HypothesisSpec(
            id="A4", claim="Abelian fraction rises", source="Geometry essay", datasets=("synth",),
            test="trend", selection={"values": Select("abelian_fraction", step="all", family="Q", projection="none")},
            params={"n_perm": 999}, prediction=Prediction("positive"), gate="report"),
    ]
    out = [r for s in specs for r in evaluate(s, root)]
    out[0].data_root = root  # for the Data section (an attribute for this test only)
    return out


@pytest.fixture(scope="module")
def written(results, tmp_path_factory):
    out = tmp_path_factory.mktemp("reports")
    stale = out / "figures" / "Z9__gone.png"
    stale.parent.mkdir()
    stale.write_bytes(b"old")
    return out, report.write_reports(results, out, datasets_dir=results[0].data_root)


def test_results_json_has_every_field_at_full_precision(results, written):
    out, files = written
    records = json.loads((out / "results.json").read_text())
    assert isinstance(records, list) and len(records) == len(results) == 5
    extra_fields = {"p_holm", "p_bh", "spec_curve", "spec_curve_share", "spec_curve_supported",
                    "declaration_changed",
                    "pinned_verdict", "pinned_hash", "source", "reason", "build", "figure", "extra"}
    for rec in records:
        assert set(schema.RESULT_FIELDS) | extra_fields <= set(rec), set(schema.RESULT_FIELDS) - set(rec)
        assert rec["verdict"] in schema.VERDICTS and rec["gate"] in schema.GATES
        assert len(rec["spec_hash"]) == 64
    by_key = {(r["id"], r["dataset"]): r for r in records}
    b5 = next(r for r in results if r.id == "B5" and r.dataset == "synth")
    rec = by_key[("B5", "synth")]
    assert rec["effect"] == b5.effect and rec["ci_low"] == b5.ci_low  # not rounded
    assert rec["reference"] == {"rho": -0.274, "p": 0.007, "n": 96}
    assert rec["extra"]["r33"] == b5.extra["r33"]
    skipped = by_key[("B5", "absent")]
    assert skipped["verdict"] == "skipped" and skipped["p_value"] is None and skipped["figure"] is None
    assert skipped["build"] == "python -m build_absent --out absent.nc"
    # sorted by (id, dataset), whatever the order given
    assert [(r["id"], r["dataset"]) for r in records] == sorted(by_key)
    c1 = by_key[("C1", "synth")]
    assert [c["choice"] for c in c1["spec_curve"]] == [{"family": "Q"}, {"family": "K"}]
    assert c1["spec_curve_share"] == 0.5 and c1["spec_curve_supported"] == 0.5
    # no absolute, machine-specific path: relative to the reports' parent, else the file name
    assert rec["module"] == "test_report.py"

def test_adjusted_pvalues_match_statsmodels_and_skip_skipped(written):
    out, _ = written
    records = json.loads((out / "results.json").read_text())
    tested = [r for r in records if r["verdict"] != "skipped" and r["p_value"] is not None]
    p = np.array([r["p_value"] for r in tested])
    # statsmodels: multipletests(p, method="holm") and method="fdr_bh", over the tested ones only
    holm = multipletests(p, method="holm")[1]
    bh = multipletests(p, method="fdr_bh")[1]
    np.testing.assert_allclose([r["p_holm"] for r in tested], holm, rtol=1e-12)
    np.testing.assert_allclose([r["p_bh"] for r in tested], bh, rtol=1e-12)
    assert all(r["p_holm"] is None and r["p_bh"] is None for r in records if r["verdict"] == "skipped")


def test_figures_are_pngs_with_deterministic_names(written):
    out, files = written
    assert files["B5::synth"] == out / "figures" / "B5__synth.png"
    for key in ("B5::synth", "C1::synth", "C2::synth", "A4::synth"):
        assert files[key].read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert "B5::absent" not in files
    # exactly this run's figures: a stale one from an earlier run is gone
    assert sorted(p.name for p in (out / "figures").iterdir()) == [
        "A4__synth.png", "B5__synth.png", "C1__synth.png", "C2__synth.png"]


def test_markdown_and_html_have_one_section_per_result(results, written):
    out, _ = written
    md = (out / "report.md").read_text()
    html = (out / "report.html").read_text()
    for r in results:
        assert f"## {r.id} on {r.dataset}" in md
        assert f"<h2>{r.id} on {r.dataset}</h2>" in html
    b5 = next(r for r in results if r.id == "B5" and r.dataset == "synth")
    rounded = f"{report.fmt(b5.effect)} [{report.fmt(b5.ci_low)}, {report.fmt(b5.ci_high)}]"
    assert rounded in md and rounded in html  # numbers with intervals, rounded here only
    assert repr(b5.effect) not in md
    assert "rho = -0.274, p = 0.007, n = 96" in md  # the original figures
    assert "![B5 on synth](figures/B5__synth.png)" in md
    assert '<img src="figures/B5__synth.png"' in html
    assert "Initial contribution predicts change &lt;b&gt;" in html  # escaped
    assert "**source**: Anchors essay" in md and "**test**: replication (" in md
    assert "Specification curve: 50 % of 2 analysis choices agree with the verdict; 50 % support" in md
    assert "python -m build_absent --out absent.nc" in md
    # the summary names the claim; the Data section lists the cubes used, with their sha256
    assert "| B5 | Initial contribution predicts change <b> | synth | replication |" in md
    import hashlib

    root = results[0].data_root
    digest = hashlib.sha256((root / "synth" / "synth.nc").read_bytes()).hexdigest()
    assert f"| synth | synthetic synth | present | " in md and digest[:16] in md and digest[:16] in html
    assert "| absent | synthetic absent | buildable | " in md


def test_reports_do_not_depend_on_input_order(results, tmp_path):
    a, b = tmp_path / "a", tmp_path / "b"
    shuffled = list(results)
    random.Random(3).shuffle(shuffled)
    report.write_reports(results, a, figures=False)
    report.write_reports(shuffled, b, figures=False)
    for name in ("results.json", "report.md", "report.html"):
        assert (a / name).read_text() == (b / name).read_text()


def test_reports_are_readable_by_all_whatever_the_umask(results, tmp_path):
    """The reports are written atomically through a private temp file; the files themselves
    are meant to be shared (served, mailed), so they end 0644 even under a private umask."""
    umask = os.umask(0o077)
    try:
        report.write_reports(results, tmp_path, figures=False)
    finally:
        os.umask(umask)
    for name in ("results.json", "report.md", "report.html"):
        assert oct((tmp_path / name).stat().st_mode & 0o777) == "0o644", name
    assert not list(tmp_path.glob(".*.tmp"))


def test_declaration_flag_and_outcome_reach_the_report(results, tmp_path):
    r = next(x for x in results if x.id == "C2")
    r.declaration_changed, r.pinned_verdict, r.pinned_hash, r.outcome = True, "refuted", "ab" * 32, "failed"
    try:
        report.write_reports([r], tmp_path, figures=False)
    finally:
        r.declaration_changed, r.pinned_verdict, r.pinned_hash, r.outcome = False, None, None, ""
    rec = json.loads((tmp_path / "results.json").read_text())[0]
    assert rec["declaration_changed"] is True and rec["pinned_verdict"] == "refuted"
    md = (tmp_path / "report.md").read_text()
    assert "declaration changed" in md and "**FLAG**" in md and "(failed)" in md


def test_text_helpers_round_and_show_the_row(results):
    b5 = next(r for r in results if r.id == "B5" and r.dataset == "synth")
    text = report.result_row_text(b5)
    assert "B5 on synth (replication, gate replication)" in text
    assert f"p = {report.fmt(b5.p_value)}" in text and "original rho = -0.274" in text
    table = report.verdict_table(results)
    lines = table.splitlines()
    assert lines[0].split()[:4] == ["id", "dataset", "gate", "verdict"] and len(lines) == 2 + len(results)
    assert report.fmt(math.nan) == "-" and report.fmt(0.000123456) == "0.000123"


def test_original_interval_of_the_replication_plot():
    from scipy.stats import norm

    rec = {"reference": {"rho": -0.274, "n": 96}, "params": {"method": "spearman", "ci": 0.95}}
    got = report._original_interval(rec, ("rho", -0.274))
    # Fisher z with the Spearman standard error sqrt(1.06 / (n - 3)) (Fieller et al. 1957)
    half = norm.ppf(0.975) * math.sqrt(1.06 / 93)
    assert got["ci_low"] == pytest.approx(math.tanh(math.atanh(-0.274) - half), abs=1e-12)
    assert got["ci_high"] == pytest.approx(math.tanh(math.atanh(-0.274) + half), abs=1e-12)
    assert report._original_interval({"reference": {"ratio": 5.0}}, ("ratio", 5.0)) == {}
