"""write_reports (lie_stats.report): results.json fields and precision, adjusted p-values,
Markdown and HTML sections, independence of the input order, file modes, and the
declaration flag."""

from __future__ import annotations

import json
import os
import random

import numpy as np
from statsmodels.stats.multitest import multipletests

from lie_stats import report
from lie_stats import columns as C

#: The verdict each result of the ``results`` fixture is expected to give, and why: B5's
#: planted correlation (rho about -0.6) replicates -0.274; its absent dataset has no cube;
#: C1's family Q tracks the contribution; C2's ov_norm is independent of the change (not
#: significant, and no bound to refute with); A4's abelian fraction rises over the steps of
#: synth's one run, but a trend is tested over runs (one run's checkpoints are
#: autocorrelated), so one run is inconclusive.
EXPECTED_VERDICTS = {("B5", "synth"): "supported", ("B5", "absent"): "skipped",
                     ("C1", "synth"): "supported", ("C2", "synth"): "inconclusive",
                     ("A4", "synth"): "inconclusive"}


def test_results_json_has_every_field_at_full_precision(results, written):
    out, files = written
    records = json.loads((out / "results.json").read_text())
    assert isinstance(records, list) and len(records) == len(results) == 5
    extra_fields = {"p_holm", "p_bh", "spec_curve", "spec_curve_share", "spec_curve_supported",
                    "declaration_changed",
                    "pinned_verdict", "pinned_hash", "source", "reason", "build", "figure", "extra"}
    for rec in records:
        assert set(C.RESULT_FIELDS) | extra_fields <= set(rec), set(C.RESULT_FIELDS) - set(rec)
        assert rec["verdict"] == EXPECTED_VERDICTS[(rec["id"], rec["dataset"])], rec["reason"]
        assert rec["gate"] in C.GATES
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
    assert rec["module"] == "conftest.py"  # the specs are declared in tests/report/conftest.py


def test_adjusted_pvalues_match_statsmodels_and_skip_skipped(written):
    out, _ = written
    records = json.loads((out / "results.json").read_text())
    tested = [r for r in records if r["verdict"] != "skipped" and r["p_value"] is not None]
    p = np.array([r["p_value"] for r in tested])
    # statsmodels: multipletests(p, method="holm") and method="fdr_bh", over the tested ones
    # of each claim family only (multiplicity["family"], the claim id by default)
    families: dict[str, list[int]] = {}
    for i, r in enumerate(tested):
        families.setdefault(r["multiplicity"]["family"], []).append(i)
    assert set(families) == {r["id"].split("-")[0] for r in tested}
    holm, bh = np.empty(len(p)), np.empty(len(p))
    for members in families.values():
        holm[members] = multipletests(p[members], method="holm")[1]
        bh[members] = multipletests(p[members], method="fdr_bh")[1]
    # results.json keeps 12 significant digits: at most 5e-12 relative from the exact value
    np.testing.assert_allclose([r["p_holm"] for r in tested], holm, rtol=1e-11)
    np.testing.assert_allclose([r["p_bh"] for r in tested], bh, rtol=1e-11)
    assert all(r["p_holm"] is None and r["p_bh"] is None for r in records if r["verdict"] == "skipped")


def test_markdown_and_html_have_one_section_per_result(results, planted_root, written):
    out, _ = written
    md = (out / "report.md").read_text()
    html = (out / "report.html").read_text()
    for r in results:
        assert f"### {r.id} on {r.dataset}" in md
        anchor = f"r-{r.id.lower()}-{r.dataset.lower()}"
        # collapsed details, linked from the claim's table
        assert f'<details id="{anchor}"><summary><h3>{r.id} on {r.dataset}</h3>' in html
        assert f'<a href="#{anchor}">{r.id} on {r.dataset}</a>' in html
    for claim in ("A4", "B5", "C1", "C2"):  # one section per claim, in the table of contents
        assert f'<section id="claim-{claim.lower()}">' in html and f'<a href="#claim-{claim.lower()}">{claim}</a>' in html
        # Markdown: the heading's own anchor (GitHub's and MkDocs' slug of "Claim A4")
        assert f"[{claim}](#claim-{claim.lower()})" in md and f"\n## Claim {claim}\n" in md
    b5 = next(r for r in results if r.id == "B5" and r.dataset == "synth")
    rounded = f"{report.fmt(b5.effect)} [{report.fmt(b5.ci_low)}, {report.fmt(b5.ci_high)}]"
    assert rounded in md and rounded in html  # numbers with intervals, rounded here only
    assert repr(b5.effect) not in md
    assert "rho = -0.274, p = 0.007, n = 96" in md  # the original figures
    assert "![B5 on synth](figures/B5__synth.png)" in md
    assert '<img src="figures/B5__synth.png"' in html
    assert "Initial contribution predicts change &lt;b&gt;" in html  # escaped
    assert "<b>" not in md.replace("**", "")  # escaped in Markdown too
    assert "**source**: Anchors essay" in md and "**test**: replication (" in md
    assert "Specification curve: 50 % of 2 analysis choices agree with the verdict; 50 % support" in md
    assert "python -m build_absent --out absent.nc" in md
    # the first screen: counts of every verdict, and one row per claim with its main result
    assert "5 results of 4 claims. Verdicts: supported 2, refuted 0, inconclusive 2, skipped 1, out of scope 0." in md
    assert '<span class="badge v-supported">supported 2</span>' in html
    assert ("| [B5](#claim-b5) | Initial contribution predicts change &lt;b&gt; | **supported** (on synth; as stated) | "
            f"{rounded} | rho = -0.274, p = 0.007, n = 96 | not tested | - ⚠ | permutation p "
            f"{report.fmt(b5.p_value)} | +1: 1 skipped |") in md
    assert html.index('id="summary"') < html.index('id="legend"') < html.index('<section id="claim-a4">')
    # the Data section lists the cubes used, with their sha256
    import hashlib

    root = planted_root
    digest = hashlib.sha256((root / "synth" / "synth.nc").read_bytes()).hexdigest()
    assert "| synth | synthetic synth | present | " in md and digest[:16] in md and digest[:16] in html
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
    r = next(x for x in results if x.id == "C2").evolve(
        declaration_changed=True, pinned_verdict="refuted", pinned_hash="ab" * 32, outcome="failed")
    report.write_reports([r], tmp_path, figures=False)
    rec = json.loads((tmp_path / "results.json").read_text())[0]
    assert rec["declaration_changed"] is True and rec["pinned_verdict"] == "refuted"
    md = (tmp_path / "report.md").read_text()
    # the gate's outcome in its own words, never glued to the verdict ("inconclusive (failed)")
    assert "declaration changed after its verdict was pinned" in md and "**Changed:**" in md
    assert "pin broken" in md and "(failed)" not in md


