"""Strings from files in report.md and on the terminal: a claim, a note, a dataset card's
title, a cube file name and a skip reason carrying raw HTML, JavaScript links and terminal
escapes, written to a real report folder and read back."""

from __future__ import annotations

import json
import re

from lie_stats import report
from lie_stats.spec import Result

CLAIM = 'heads <script>alert("claim")</script> agree'
NOTES = "see [the data](javascript:alert('notes')) and ![x](javascript:alert(2))"
TITLE = 'toy <img src=x onerror="alert(\'title\')">'
CUBE = "<img src=x onerror=alert(1)>.nc"
REASON = "family <b onmouseover=alert(3)>Q</b> is absent"


def hostile_datasets(root):
    folder = root / "toy"
    folder.mkdir(parents=True)
    # JSON strings are TOML basic strings
    (folder / "dataset.toml").write_text(f'name = "toy"\ntitle = {json.dumps(TITLE)}\n'
                                         f'cubes = [{json.dumps(CUBE)}]\nbuild = "make toy"\n', encoding="utf-8")
    return root


def results():
    done = Result(id="X1", claim=CLAIM, source="essay", dataset="toy", verdict="inconclusive", reason="r",
                  gate="report", test="correlation", spec_hash="0" * 64, reference={}, notes=NOTES)
    skipped = Result(id="X2", claim="c", source="s", dataset="toy", verdict="skipped", reason=REASON,
                     gate="report", test="correlation", spec_hash="1" * 64, reference={})
    return [done, skipped]


def test_report_md_shows_strings_from_files_as_text(tmp_path):
    datasets = hostile_datasets(tmp_path / "datasets")
    out = report.write_reports(results(), tmp_path / "rep", figures=False, datasets_dir=datasets)
    md = out["markdown"].read_text()
    for raw in ("<script", "<img", "<b "):
        assert raw not in md, raw
    assert not re.search(r"(?<!\\)\]\(javascript:", md)  # no link: every "](" is escaped
    assert not re.search(r"<[a-zA-Z!/]", md)  # no tag of any kind passes through
    assert "heads &lt;script&gt;alert(\"claim\")&lt;/script&gt; agree" in md
    assert "\\[the data\\](javascript:alert('notes'))" in md
    assert "toy &lt;img src=x onerror=" in md and "&lt;img src=x onerror=alert(1)&gt;.nc" in md
    assert "family &lt;b onmouseover=alert(3)&gt;Q&lt;/b&gt; is absent" in md
    html = out["html"].read_text()
    assert "<script>alert" not in html and "onerror=\"alert" not in html


def test_the_terminal_table_carries_no_control_characters():
    hostile = Result(id="X1\x1b]0;owned\x07", claim="c", source="s", dataset="toy\x1b[31m", verdict="refuted",
                     reason="r\nvalid: yes", gate="report", test="correlation", spec_hash="0" * 64, reference={})
    for text in (report.verdict_table([hostile]), report.result_row_text(hostile)):
        assert "\x1b" not in text and "\x07" not in text
        assert "\\x1b" in text
    assert "\nvalid: yes" not in report.result_row_text(hostile)
