"""Text (lie_stats.report.text and the terminal tables of lie_stats.report): rounding and
the one-line view of a result."""

from __future__ import annotations

import math

from lie_stats import report


def test_text_helpers_round_and_show_the_row(results):
    b5 = next(r for r in results if r.id == "B5" and r.dataset == "synth")
    text = report.result_row_text(b5)
    assert "B5 on synth (replication, gate replication)" in text
    assert f"p = {report.fmt(b5.p_value)}" in text and "original rho = -0.274" in text
    table = report.verdict_table(results)
    lines = table.splitlines()
    assert lines[0].split()[:4] == ["id", "dataset", "verdict", "gate"]
    assert max(len(line) for line in lines) <= 100  # the console's width
    body = lines[lines.index(next(x for x in lines if x.startswith("--"))) + 1:]
    ids = [line.split()[0] for line in body if line and not line.startswith((" ", "legend:"))]
    assert ids[:len(results)] == [str(r.id) for r in results]  # one row per result, in order
    assert any(line.startswith("legend: gate ok/FAIL/skip") for line in lines)
    assert report.fmt(math.nan) == "-" and report.fmt(0.000123456) == "0.000123"
