"""The report flags what the diagnosis says against a result's design (lie_stats.report.view.
design_flags): power under 0.5 worded for the verdict it qualifies, no power figure, coverage
under 0.9, and a false-positive rate under the alternative nulls (``fpr_robust``) above twice
alpha; rows without ``fpr_robust`` (not yet diagnosed under alternative nulls) say so and never
fail. One synthetic row per flag, through the view, both documents and the console table."""

from __future__ import annotations

from lie_stats import report
from lie_stats._text import html_text
from lie_stats.report.render import render_html, render_markdown
from lie_stats.report.view import design_flags, result_view
from tests.report._rows import row

GOOD = {"fpr": 0.03, "power": 0.85, "coverage": 0.95, "type_s": 0.0, "n_sims": 200, "seed": 0, "reason": ""}


def diag(**over):
    return {"diagnosis": {**GOOD, **over}}


def flags(r):
    return dict(design_flags(r))


def test_a_sound_design_is_not_flagged():
    assert design_flags(row("A1", **diag(fpr_robust=0.06, robust={}))) == []
    assert design_flags(row("A1", verdict="skipped")) == []  # nothing decided, nothing to flag
    assert design_flags(row("A1", verdict="skipped", diagnosis={"power": None})) == []


def test_low_power_under_supported_warns_of_an_exaggerated_estimate():
    got = flags(row("A1", verdict="supported", **diag(power=0.3)))
    assert list(got) == ["P"]
    assert "decides supported in 30 % of 200 simulations" in got["P"]
    assert "likely exaggerates the effect (a type M error)" in got["P"]
    assert "says little" not in got["P"]


def test_low_power_under_another_verdict_says_the_design_could_miss_the_effect():
    for verdict in ("inconclusive", "refuted"):
        got = flags(row("A1", verdict=verdict, **diag(power=0.2)))
        assert list(got) == ["P"]
        assert "could easily miss the effect" in got["P"] and f"this {verdict} verdict says little" in got["P"]
        assert "type M" not in got["P"]


def test_no_power_figure_is_flagged_with_its_reason():
    got = flags(row("A1", verdict="inconclusive", **diag(power=None, reason="the reference {} gives no ratio to plant")))
    assert list(got) == ["P"] and got["P"].startswith("No power figure (the reference {} gives no ratio to plant)")
    assert list(flags(row("A1", verdict="refuted"))) == ["P"]  # no diagnosis at all


def test_low_coverage_is_flagged():
    got = flags(row("A6", verdict="inconclusive", **diag(coverage=0.51)))
    assert list(got) == ["C"] and "held the true value in 51 % of 200 simulations" in got["C"]
    assert flags(row("A6", **diag(coverage=0.9))) == {}  # at 0.9: not under it


def test_robust_fpr_above_twice_alpha_is_flagged_with_the_worst_null():
    robust = {"heavy_tails": {"fpr": 0.12, "n_sims": 200, "reason": ""},
              "stronger_dependence": {"fpr": 0.07, "n_sims": 200, "reason": ""},
              "shared_effect": {"fpr": None, "n_sims": 0, "reason": "the kind has no layers"}}
    got = flags(row("B5", **diag(fpr_robust=0.12, robust=robust)))
    assert list(got) == ["R"]
    assert "decides supported in 12 % of simulations (under heavy tails), above twice alpha (0.1)" in got["R"]
    # at twice alpha, not above: no flag; a smaller alpha flags a smaller rate
    assert flags(row("B5", **diag(fpr_robust=0.1, robust=robust))) == {}
    assert list(flags(row("B5", params={"alpha": 0.01}, **diag(fpr_robust=0.03, robust=robust)))) == ["R"]
    text = dict(result_view(row("B5", **diag(fpr_robust=0.12, robust=robust)))["facts"])["diagnosis"]
    assert ("FPR under other plausible nulls: 12 % (the largest of 3 alternative nulls: heavy tails, 200 "
            "simulations; shared effect: not simulated, the kind has no layers)") in text


def test_rows_without_the_alternative_nulls_say_so_and_render():
    rows = [row("B5", **diag()), row("B6", **diag(fpr_robust=None, robust={"heavy_tails": {
        "fpr": None, "n_sims": 0, "reason": "no residuals to resample"}}))]
    assert design_flags(rows[0]) == [] and design_flags(rows[1]) == []
    md, html = render_markdown(rows), render_html(rows)
    for text in (md, html):
        assert "FPR under other plausible nulls: not diagnosed under alternative nulls" in text
        assert "FPR under other plausible nulls: not computed (heavy tails: not simulated, no residuals to resample)" in text


def test_each_flag_reaches_the_documents_and_the_console():
    rows = [row("A1", verdict="supported", **diag(power=0.3)),
            row("A2", verdict="inconclusive", **diag(coverage=0.5)),
            row("A3", **diag(fpr_robust=0.2, robust={"heavy_tails": {"fpr": 0.2, "n_sims": 200, "reason": ""}})),
            row("A4", **diag())]
    md, html = render_markdown(rows), render_html(rows)
    for r in rows[:3]:
        (sentence,) = [t for _, t in design_flags(r)]
        assert md.count(sentence) == 1  # in the result's details
        assert html.count(html_text(sentence)) == 3  # the details (its list and its heading's mark), the summary's mark
    summary = html[html.index('<table id="summary">'):html.index("</table>")]
    assert summary.count('class="flag" href="#r-') == 3  # A1, A2, A3 marked; A4 not
    table = report.verdict_table(rows).splitlines()
    assert [line.split()[-1] for line in table[2:6]] == ["P", "C", "R", "-"]
    legend = " ".join(table[6:])
    assert "P power < 0.5 or unknown" in legend and "C coverage < 0.9" in legend
    assert "R false positives under other nulls > 2 alpha" in legend
