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
from lie_stats.report.figures import original_interval
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
    # 12 significant digits (report.writing.RESULT_DIGITS), not the 3 of the tables
    assert rec["effect"] == float(f"{b5.effect:.12g}") and rec["ci_low"] == float(f"{b5.ci_low:.12g}")
    assert rec["effect"] != float(f"{b5.effect:.6g}")
    assert rec["reference"] == {"rho": -0.274, "p": 0.007, "n": 96}
    assert rec["extra"]["r33"] == float(f"{b5.extra['r33']:.12g}")
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
    # results.json keeps 12 significant digits: at most 5e-12 relative from the exact value
    np.testing.assert_allclose([r["p_holm"] for r in tested], holm, rtol=1e-11)
    np.testing.assert_allclose([r["p_bh"] for r in tested], bh, rtol=1e-11)
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
    assert "| B5 | Initial contribution predicts change &lt;b&gt; | synth | replication |" in md  # escaped
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
    got = original_interval(rec, ("rho", -0.274))
    # Fisher z with the Spearman standard error sqrt(1.06 / (n - 3)) (Fieller et al. 1957)
    half = norm.ppf(0.975) * math.sqrt(1.06 / 93)
    assert got["ci_low"] == pytest.approx(math.tanh(math.atanh(-0.274) - half), abs=1e-12)
    assert got["ci_high"] == pytest.approx(math.tanh(math.atanh(-0.274) + half), abs=1e-12)
    assert original_interval({"reference": {"ratio": 5.0}}, ("ratio", 5.0)) == {}


# ----------------------------------------------------------------------------- sections by hook


@pytest.fixture
def section():
    """Register a section writer for the test; it records its calls and draws one figure."""
    calls = []

    def writer(results, reports_dir, datasets_dir):
        calls.append(([(r.id, r.dataset) for r in results], reports_dir, datasets_dir))
        (reports_dir / "figures").mkdir(parents=True, exist_ok=True)
        (reports_dir / "figures" / "C__together.png").write_bytes(b"\x89PNG drawn by the section")
        return "## C, read together\n\n| claim | n |\n|---|---|\n| C | 2 |\n\n![C](figures/C__together.png)\n"

    name = report.register_section("C", writer)
    yield calls
    report.unregister_section(name)


def test_a_registered_section_follows_the_results_in_md_and_html(results, section, tmp_path):
    root = results[0].data_root
    out = report.write_reports(results, tmp_path, datasets_dir=root)
    assert len(section) == 1
    ids, reports_dir, datasets_dir = section[0]
    assert ids == sorted(ids) and ("C1", "synth") in ids and ("B5", "absent") in ids  # every result
    # the writer draws into the staging folder that becomes tmp_path (report.writing)
    assert reports_dir.parent == tmp_path.parent and reports_dir.name.startswith(f".{tmp_path.name}.new-")
    assert datasets_dir == root and not reports_dir.exists()
    md, page = out["markdown"].read_text(), out["html"].read_text()
    assert md.endswith("| C | 2 |\n\n![C](figures/C__together.png)\n")
    assert md.index("## C2 on synth") < md.index("## C, read together")
    assert "<h2>C, read together</h2>" in page and "<td>C</td><td>2</td>" in page
    assert '<img src="figures/C__together.png" alt="C">' in page
    # its figure is this run's: listed, and not removed as a stale per-result figure
    assert out["C"] == tmp_path / "figures" / "C__together.png" and out["C"].is_file()


def test_sections_need_a_matching_result_figures_and_datasets(results, section, tmp_path):
    root = results[0].data_root
    others = [r for r in results if not r.id.startswith("C")]
    md = report.write_reports(others, tmp_path / "a", datasets_dir=root)["markdown"].read_text()
    assert "read together" not in md and section == []  # no result matches: not called
    report.write_reports(results, tmp_path / "b", figures=False, datasets_dir=root)
    report.write_reports(results, tmp_path / "c")
    assert section == []


def test_sections_by_predicate_replace_by_name_and_may_decline(results, tmp_path):
    seen = []
    name = report.register_section(lambda r: r.verdict == "skipped",
                                   lambda rs, d, ds: seen.append("first") or "## First\n", name="skips")
    try:
        assert name == "skips" and "skips" in report.report_sections()
        report.register_section(lambda r: r.verdict == "skipped",
                                lambda rs, d, ds: seen.append("second"), name="skips")  # returns None
        assert report.report_sections().count("skips") == 1
        md = report.write_reports(results, tmp_path, datasets_dir=results[0].data_root)["markdown"].read_text()
        assert seen == ["second"] and "## First" not in md
    finally:
        report.unregister_section("skips")
    assert "skips" not in report.report_sections()
    with pytest.raises(TypeError, match="expected an id prefix"):
        report.register_section(3, lambda *a: None)
    with pytest.raises(TypeError, match="is not callable"):
        report.register_section("X", "not a writer")


A10_AGREEMENT = {
    "id": "A10-verdicts-A3", "claim": "same verdicts under every compression", "source": "s",
    "dataset": "toy", "verdict": "refuted", "reason": "fixed:64 changes the conclusion", "gate": "report",
    "test": "verdict_agreement", "spec_hash": "0" * 64, "reference": {},
    "params": {"compressions": ["none", "adaptive", "fixed:64"], "target_id": "A3"},
    "extra": {"verdict_none": 1.0, "effect_none": 5.0, "verdict_adaptive": 1.0, "effect_adaptive": 4.5,
              "verdict_fixed_64": -1.0, "effect_fixed_64": 0.2},
}


def test_the_a10_module_registers_its_section_when_imported(tmp_path):
    import doctest

    from hypotheses import A10_report

    assert "A10" in report.report_sections()
    got = doctest.testmod(A10_report, optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE)
    assert got.attempted > 0 and got.failed == 0
    empty = tmp_path / "datasets"
    empty.mkdir()
    out = report.write_reports([A10_AGREEMENT], tmp_path / "r", datasets_dir=empty)
    md, page = out["markdown"].read_text(), out["html"].read_text()
    assert "## A10: the projection-artifact control, read together" in md
    assert "| A3 | toy | supported (5) | supported (4.5) | refuted (0.2) | refuted |" in md
    assert md.rstrip().endswith("![A10](figures/A10.png)")
    assert "<h2>A10: the projection-artifact control, read together</h2>" in page
    assert out["A10"] == tmp_path / "r" / "figures" / "A10.png"
    assert out["A10"].read_bytes()[:4] == b"\x89PNG"
    other = dict(A10_AGREEMENT, id="B1")
    assert "A10" not in report.write_reports([other], tmp_path / "r2", datasets_dir=empty)["markdown"].read_text()
