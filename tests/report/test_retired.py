"""The report's section of retired pins (lie_stats.report.retired): one row per pin, after the
findings, every string from the registry escaped for its medium."""

from __future__ import annotations

from lie_stats.report.retired import retired_rows, retired_section

HOSTILE = {"key": "X<script>|1::d|", "verdict": "refuted", "gate": "pinned", "retired_on": "2026-12-05",
           "retired_reason": "out of scope: <img src=x onerror=alert(1)> [a](javascript:alert(1)) a|b\n# h",
           "registry": "/srv/p/hypotheses/verdicts.json"}


def test_no_retired_pins_no_section():
    assert retired_section([]) == ("", "")


def test_rows_are_sorted_by_key_and_name_result_and_dataset():
    rows = retired_rows([{**HOSTILE, "key": "B::d2"}, {**HOSTILE, "key": "A::d1", "gate": None}])
    assert [r[:3] for r in rows] == [("A on d1", "refuted", "-"), ("B on d2", "refuted", "pinned")]


def test_strings_from_the_registry_add_no_markup():
    md, html = retired_section([HOSTILE], "/srv/p")
    assert "1 pin of hypotheses/verdicts.json is retired: their results are no longer evaluated" in md
    table = [line for line in md.splitlines() if line.startswith("| X")]
    assert len(table) == 1 and table[0].count(" | ") == 4  # the pipes in the key and reason are escaped
    assert "<script>" not in md and "<img" not in md and "[a](javascript:" not in md and "\n# h" not in md
    assert "\\[a\\](javascript:alert(1))" in md  # a link's brackets escaped: text, not a link
    assert "<script>" not in html and "<img" not in html and "&lt;img src=x onerror=alert(1)&gt;" in html
    assert html.count("<tr>") == 2 and "<h2>Retired pins</h2>" in html
