"""What the reports show (lie_stats.report.view, .render): the first screen's counts and
one row per claim, the gate's outcome worded apart from the verdict, the p column named for
what it is, estimates outside their interval flagged, the fields other parts add read when
present and '-' when absent, and strings from files escaped in HTML and Markdown."""

from __future__ import annotations

import re

from lie_stats import report
from lie_stats.report.render import render_html, render_markdown
from lie_stats.report.view import claim_views, gate_text, p_label, summary_counts
from tests.report._rows import ADDED, row


def _summary_row(md: str, claim: str) -> list[str]:
    line = next(x for x in md.splitlines() if x.startswith(f"| [{claim}](#claim-"))
    return [c.strip() for c in line.strip("|").split(" | ")]


def test_first_screen_counts_and_one_row_per_claim_in_natural_order():
    rows = [row("A10-x", verdict="refuted"), row("A2"), row("A10", verdict="skipped", outcome="skipped"),
            row("B1", verdict="inconclusive", outcome="failed"), row("B1", dataset="other", verdict="out_of_scope")]
    counts = summary_counts(rows)
    assert counts["verdicts"] == [("supported", 1), ("refuted", 1), ("inconclusive", 1), ("skipped", 1),
                                  ("out_of_scope", 1)]
    assert counts["gates"] == [("passed", 3), ("failed", 1), ("not run", 1), ("not checked", 0)]
    md = render_markdown(rows)
    assert "5 results of 3 claims. Verdicts: supported 1, refuted 1, inconclusive 1, skipped 1, out of scope 1." in md
    assert "Gates: passed 3, failed 1, not run 1, not checked 0." in md
    firsts = [line.split("]")[0][3:] for line in md.splitlines() if line.startswith("| [")]
    assert firsts[:3] == ["A2", "A10", "B1"]  # A2 before A10; one row per claim
    # A10's own id is skipped: its main result is the one that was run
    assert _summary_row(md, "A10")[2] == "**refuted** (on toy)" and _summary_row(md, "A10")[-1] == "+1: 1 skipped"
    html = render_html(rows)
    assert '<span class="badge v-out_of_scope">out of scope 1</span>' in html
    assert html.count('<tr>\n<td><a href="#claim-') == 3


def test_gate_outcome_is_worded_apart_from_the_verdict():
    assert gate_text(row("X", verdict="refuted")) == "pin held"
    assert gate_text(row("X", verdict="refuted", outcome="failed")) == "pin broken"
    assert gate_text(row("X", gate="replication", outcome="failed", verdict="inconclusive")) == "replication failed"
    assert gate_text(row("X", gate="replication")) == "replicated"
    assert gate_text(row("X", gate="report")) == "reported"
    rows = [row("A1", verdict="refuted"), row("A2", verdict="inconclusive", gate="replication", outcome="failed")]
    for text in (render_markdown(rows), render_html(rows)):
        assert "pin held" in text and "replication failed" in text
        assert "(passed)" not in text and "(failed)" not in text
    assert '<td class="gate-bad">replication failed</td>' in render_html(rows)
    # the first screen shows a failed gate beside the verdict, a passed one not at all
    md = render_markdown(rows)
    assert _summary_row(md, "A2")[2].startswith("**inconclusive** **replication failed**")
    assert "pin held" not in _summary_row(md, "A1")[2]
    # the console: codes, explained by the table's legend
    table = report.verdict_table(rows).splitlines()
    assert table[2].split()[:4] == ["A1", "toy", "refuted", "ok"] and table[3].split()[:4] == ["A2", "toy", "inconclusive", "FAIL"]
    assert "gate ok/FAIL/skip: passed, failed, not run" in " ".join(table)


def test_p_is_named_for_what_it_is_with_a_legend():
    assert p_label(row("X", test="tost_paired", extra={"t_lower": 1.0, "t_upper": 2.0}, params={})) == "TOST p"
    assert p_label(row("X")) == "permutation p"
    assert p_label(row("X", test="share_above", extra={"n_boot": 2000}, params={"n_boot": 2000})) == "bootstrap p"
    assert p_label(row("X", test="mixed_model", extra={}, params={})) == "Wald p"
    rows = [row("A1"), row("A2", test="tost_paired", extra={"t_lower": 1.0, "t_upper": 2.0}, p_value=0.72)]
    md = render_markdown(rows)
    assert _summary_row(md, "A1")[7] == "permutation p 0.001" and _summary_row(md, "A2")[7] == "TOST p 0.72"
    assert "- *TOST p*: the larger of the two one-sided p-values" in md
    assert "<dt>permutation p</dt>" in render_html(rows)


def test_estimates_outside_their_interval_are_flagged():
    # as the B8-panel gemma rows: 0.851 [1.09, 1.30]
    curve = [{"choice": {"model": "gemma"}, "verdict": "inconclusive", "effect": 0.851, "ci_low": 1.09,
              "ci_high": 1.30, "p_value": 0.2},
             {"choice": {"model": "mini"}, "verdict": "supported", "effect": 1.2, "ci_low": 1.09,
              "ci_high": 1.30, "p_value": 0.01}]
    rows = [row("B8", effect=0.851, ci_low=1.09, ci_high=1.30, spec_curve=curve), row("B9")]
    md = render_markdown(rows)
    assert _summary_row(md, "B8")[3] == "0.851 [1.09, 1.3] ⚠ outside"
    assert _summary_row(md, "B9")[3] == "1400 [770, 2400]"
    assert "| model=gemma | inconclusive | 0.851 [1.09, 1.3] ⚠ outside | 0.2 |" in md
    assert "| model=mini | supported | 1.2 [1.09, 1.3] | 0.01 |" in md
    assert "1 estimate(s) outside their interval" in md
    table = report.verdict_table(rows).splitlines()
    assert "X" in table[2].split()[-1] and "X" not in table[3].split()[-1]  # B8 flagged, B9 not
    assert "X estimate outside its interval" in " ".join(table)
    assert render_html(rows).count("&#9888; outside") >= 3  # summary, claim table, curve


def test_added_fields_are_shown_when_present_and_dash_when_absent():
    rows = [row("A3", **ADDED), row("A5")]
    md = render_markdown(rows)
    with_fields, without = _summary_row(md, "A3"), _summary_row(md, "A5")
    assert with_fields[5:7] == ["outside", "0.81"] and without[5:7] == ["-", "- ⚠"]  # A5: no power figure
    assert f"**Finding:** {ADDED['finding']}" in md  # in the result's details
    assert "- **magnitude**: outside; 1400 vs 500; band [167, 1500]; x/÷3 band" in md
    assert ("- **diagnosis**: fpr 0.049, power 0.81, coverage 0.95, type_s 0, n_sims 1000, seed 1; FPR under "
            "other plausible nulls: not diagnosed under alternative nulls") in md
    assert "- **multiplicity**: family A, holm: adjusted p 0.004, decided by adjusted" in md
    assert md.count("- **magnitude**: -") == 1 and md.count("- **diagnosis**: -") == 1
    html = render_html(rows)
    assert f'<p class="finding"><b>Finding:</b> {ADDED["finding"]}</p>' in html
    assert html.count('<p class="finding">') == 1
    groups = claim_views(rows)
    assert groups[0]["main"]["power"] == "0.81" and groups[1]["main"]["power"] == "-"


def test_results_changed_at_the_last_re_pinning_are_listed_after_the_findings_collapsed():
    rows = [row("A3", previous_pin={"verdict": "refuted", "spec_hash": "old"}, spec_hash="new",
                pin_history=[{"on": "2026-11-30", "change": "the first change"},
                             {"on": "2026-12-02", "change": "the band is declared."}]),
            row("A5", previous_pin={"verdict": "supported", "spec_hash": "same"}, spec_hash="same",
                declaration_changed=True),
            row("B1")]
    md, html = render_markdown(rows), render_html(rows)
    assert "## Changed in this version" in md and '<details id="changes"><summary><h2' in html
    assert "2 results re-pinned at the last re-pinning; 1 of them with a new verdict" in md
    assert "declaration changed: 2026-12-02: the band is declared." in md  # the latest change
    assert "- **changed 2026-11-30**: the first change" in md  # the whole record, in the result's facts
    assert "same declaration: the test's rule, its statistic or the data changed" in md
    # after the findings: the changelog follows every claim's section, and is collapsed
    assert md.index("## Changed in this version") > md.index("## Claim B1")
    assert html.index('<details id="changes">') > html.index('<section id="claim-b1">')
    assert "<details><summary>2 results re-pinned" in md
    # flags only where something changed: A3's verdict changed (refuted -> supported); A5
    # was re-pinned with its verdict unchanged, so it is not flagged
    assert _summary_row(md, "A3")[2].startswith("**supported** **verdict changed at the last re-pinning: was refuted**")
    assert "changed" not in _summary_row(md, "A5")[2] and "changed" not in _summary_row(md, "B1")[2]
    assert md.count("verdict changed at the last re-pinning") == 2  # A3's summary row and details
    assert "## Changed in this version" not in render_markdown([row("B1")])
    assert "<details id=\"changes\">" not in render_html([row("B1")])


def test_strings_from_files_are_escaped():
    evil = '<script>alert(1)</script> <img src=x onerror="alert(2)"> [x](javascript:alert(3))'
    rows = [row("A1", claim=evil, finding=evil, notes=evil, reason=evil, reference={"note": evil}, dataset="d<i>")]
    html = render_html(rows)
    assert "<script>alert" not in html and "<img src=x" not in html and "<i>" not in html
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in html
    md = render_markdown(rows)
    assert "<script>" not in md and "<img" not in md
    assert not re.search(r"(?<!\\)\]\(javascript:", md) and "[x\\](javascript:" in md  # no link
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in md
    # the anchors are letters, digits and dashes whatever the dataset's name
    assert re.search(r'id="r-a1-d-i"', html)


def test_a_claim_without_its_own_result_leads_with_one_that_tests_its_figure():
    figure = {"status": "within", "reference": 500.0, "band": [50.0, 5000.0]}
    check = {"status": "not_tested", "reference": None, "band": None,
             "reason": "the declaration states no magnitude"}
    rows = [row("A7-above-floor", magnitude=check, verdict="inconclusive"),
            row("A7-killing_cv", magnitude=figure, verdict="refuted"),
            row("A7-params", magnitude=figure, verdict="skipped"),
            row("B4", magnitude=check, verdict="refuted"), row("B4-share", magnitude=figure)]
    mains = {g["key"]: g["main"]["id"] for g in claim_views(rows)}
    # A7: the direction-only check sorts first, the first run result with a figure leads;
    # B4: the claim's own result leads even without a figure
    assert mains == {"A7": "A7-killing_cv", "B4": "B4"}
    # with no run result that tests a figure, the first run result leads
    rows = [row("A7-above-floor", magnitude=check), row("A7-params", magnitude=figure, verdict="skipped")]
    assert claim_views(rows)[0]["main"]["id"] == "A7-above-floor"


def test_the_unit_that_limits_a_test_is_named_beside_n():
    # a trend over 17 checkpoints of 2 runs: the sign-flip test has 2 runs, not 17 units
    trend = row("T1", test="trend", n=17, verdict="inconclusive",
                extra={"n_perm": 3, "n_runs": 2, "p_min": 0.25})
    table = report.verdict_table([trend])
    assert "17 (2 runs)" in table.splitlines()[2]
    assert "n = 17 (limited by: 2 runs)" in report.result_row_text(trend)
    md, html = render_markdown([trend]), render_html([trend])
    assert "17 (limited by: 2 runs)" in md and "17 (limited by: 2 runs)" in html
    # a kind whose unit is what n counts, and a row without the count, say nothing more
    for plain in (row("C1", test="correlation", n=96, extra={"n_perm": 999, "n_strata": 8}),
                  row("T2", test="trend", n=17, extra={"n_perm": 3})):
        assert "(" not in report.verdict_table([plain]).splitlines()[2]
        assert "limited by" not in render_markdown([plain])


def _fid(status: str, *differs: str) -> dict:
    return {"status": status, "differs": list(differs)}


def test_a_claim_with_only_proxies_says_no_test_as_stated_and_names_what_differs():
    bible = _fid("proxy", "intervention: fine-tune on the World English Bible, not RLHF",
                 "population: tiny GPT-NeoX runs trained here, not Pythia")
    rows = [row("A1", verdict="refuted", fidelity=bible), row("A1-converged", fidelity=bible)]
    md, html = render_markdown(rows), render_html(rows)
    assert ("- **fidelity to the source's design**: proxy; intervention: fine-tune on the World English "
            "Bible, not RLHF; population: tiny GPT-NeoX runs trained here, not Pythia") in md
    assert '<span class="proxy">no test as stated; proxy: intervention, population</span>' in html
    assert "| A1-converged on toy | **supported** | proxy: intervention, population |" in md
    assert _summary_row(md, "A1")[2] == "**refuted** (on toy; no test as stated; proxy: intervention, population)"


def test_a_claim_row_leads_with_its_result_as_stated():
    proxy = _fid("proxy", "population: tiny GPT-NeoX runs trained here, not Pythia")
    rows = [row("A4", verdict="refuted", fidelity=proxy),  # the claim's own id, but a proxy
            row("A4", dataset="pythia", verdict="inconclusive", fidelity=_fid("as_stated")),
            row("A4-tau", dataset="pythia", fidelity=_fid("as_stated"))]
    group = claim_views(rows)[0]
    assert (group["main"]["id"], group["main"]["dataset"]) == ("A4", "pythia")
    assert _summary_row(render_markdown(rows), "A4")[2] == "**inconclusive** (on pythia; as stated)"
    # the as-stated result skipped (its data absent): the proxy leads, and says the test as stated did not run
    rows[1]["verdict"], rows[2]["verdict"] = "skipped", "skipped"
    group = claim_views(rows)[0]
    assert (group["main"]["id"], group["main"]["dataset"]) == ("A4", "toy")
    assert group["fidelity_note"] == "test as stated not run; proxy: population"
    # an out-of-scope record is no test as stated, and a claim of only such records says nothing
    oos = row("A4-other", dataset="-", verdict="skipped", test="none", reason="out of scope: other models",
              fidelity=_fid("as_stated"))
    assert claim_views([rows[0], oos])[0]["fidelity_note"] == "no test as stated; proxy: population"
    assert claim_views([oos])[0]["fidelity_note"] == ""


def test_fidelity_text_is_escaped():
    evil = _fid("proxy", "population: <script>alert(1)</script> [x](javascript:alert(2))")
    rows = [row("A1", fidelity=evil)]
    html, md = render_html(rows), render_markdown(rows)
    assert "<script>alert" not in html and "&lt;script&gt;alert(1)&lt;/script&gt;" in html
    assert "<script>" not in md and not re.search(r"(?<!\\)\]\(javascript:", md)


def test_the_counts_of_the_first_screen_equal_the_rows_of_the_committed_report():
    import json
    from pathlib import Path

    rows = json.loads((Path(__file__).resolve().parents[2] / "reports" / "results.json").read_text())
    counts = summary_counts(rows)
    assert counts["n"] == len(rows)
    assert sum(n for _, n in counts["verdicts"]) == len(rows)  # out of scope counted as such
    assert sum(n for _, n in counts["gates"]) == len(rows)
    out_of_scope = sum(1 for r in rows if str(r.get("reason") or "").startswith("out of scope"))
    assert dict(counts["verdicts"])["out_of_scope"] == out_of_scope > 0
