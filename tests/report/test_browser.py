"""The HTML report in a real browser (headless Chromium, scripts/render_report.py): the
first 1400x900 screen shows the counts and the start of the summary table, whose long
statements wrap (no cell cuts its text) within the screen's width, with 22 claims and a
96-choice specification curve; the check fails when the summary is pushed below the first
screen or a cell cuts its text. Skipped where no Chromium is installed (the Debian package
``chromium``)."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

from lie_stats import report
from tests.report._rows import ADDED, row

SCRIPT = Path(__file__).resolve().parents[2] / "scripts" / "render_report.py"


def _script():
    spec = importlib.util.spec_from_file_location("render_report", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


render_report = _script()
pytestmark = pytest.mark.skipif(render_report.find_chromium() is None, reason="no Chromium installed")


def _rows() -> list[dict]:
    """Results of 22 claims (A1..A10, B1..B11, one more), several results per claim, long
    claim texts, the added fields on some, and a 96-choice curve on one."""
    curve = [{"choice": {"layer_summary": s, "model": m}, "verdict": "inconclusive", "effect": 0.6 + 0.01 * i,
              "ci_low": 0.4, "ci_high": 1.4, "p_value": 0.5}
             for i, (s, m) in enumerate((s, m) for s in range(8) for m in range(12))]
    out = []
    for claim in [f"A{i}" for i in range(1, 11)] + [f"B{i}" for i in range(1, 12)] + ["gating"]:
        text = f"{claim}: a claim of the essay stated at the length essays state them, " * 3
        out.append(row(claim, claim=text, **(ADDED if claim.startswith("A") else {})))
        out.append(row(f"{claim}-panel", dataset="panel", claim=text, verdict="refuted"))
    out.append(row("B3", dataset="pico", spec_curve=curve, effect=0.65, ci_low=0.44, ci_high=1.4))
    return out


def test_the_first_screen_shows_the_summary_in_chromium(tmp_path):
    out = tmp_path / "reports"
    report.write_reports(_rows(), out)
    png = tmp_path / "first.png"
    assert render_report.check(out / "report.html", png) == []
    boxes = render_report.first_screen(out / "report.html")
    assert boxes["summary"][1] - boxes["summary"][0] > 22 * 12  # 22 claim rows really laid out
    assert boxes["summary"][3] <= 1400 and boxes["clipped"] == (0,)  # fits the width, nothing cut
    # each ~200-character statement is written out whole in the summary (wrapped, not cut)
    html = (out / "report.html").read_text()
    summary = html[html.index('<table id="summary">'):html.index("</table>", html.index('<table id="summary">'))]
    for claim in [f"A{i}" for i in range(1, 11)] + ["B1", "B2", "gating"]:  # B3 leads with its pico row
        assert (f"{claim}: a claim of the essay stated at the length essays state them, " * 3).strip() in summary
    assert render_report.colours(png) > 10
    from PIL import Image

    with Image.open(png) as im:
        assert im.size == (1400, 900)
    # the B3 forest plot: 96 choices summarised to 2 x 12 legible rows and one summary row
    from PIL import Image as I

    with I.open(out / "figures" / "B3__pico.png") as im:
        assert im.size[1] < 900  # not one 16-inch column of 96 overlapping labels


def test_the_check_fails_when_the_summary_is_below_the_first_screen(tmp_path):
    out = tmp_path / "reports"
    report.write_reports(_rows(), out, figures=False)
    page = out / "report.html"
    text = page.read_text()
    page.write_text(text.replace('<table id="summary">', '<div style="height:900px"></div><table id="summary">', 1))
    problems = render_report.check(page, tmp_path / "first.png")
    assert len(problems) == 1 and problems[0].startswith("#summary spans")


def test_the_check_fails_when_a_statement_is_cut(tmp_path):
    out = tmp_path / "reports"
    report.write_reports(_rows(), out, figures=False)
    page = out / "report.html"
    cut = "#summary td.claim{white-space:nowrap;overflow:hidden;text-overflow:ellipsis}\n</style>"
    page.write_text(page.read_text().replace("</style>", cut, 1))
    problems = render_report.check(page, tmp_path / "first.png")
    assert len(problems) == 1 and "cut their text" in problems[0], problems
