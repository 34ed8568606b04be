"""Reports: results -> ``results.json``, ``report.md``, ``report.html`` and PNG figures.

The only package that formats or rounds numbers: ``results.json`` keeps
12 significant digits (:data:`lie_stats.report.writing.RESULT_DIGITS`: stable across CPUs
and BLAS kernels; NaN as ``null``); the Markdown, HTML and terminal tables round
(:mod:`lie_stats.report.text`). Each result's figure is drawn by
:mod:`lie_stats.report.figures`; sections that read several results together are
declared by the claims' own modules (:class:`ReportSection` in ``REPORT_SECTIONS``,
:mod:`lie_stats.report.sections`) and passed in by the run's engine.

``results.json`` is a list with one object per hypothesis and dataset holding the fields of
:data:`lie_stats.C.RESULT_FIELDS` (DESIGN.md, "Results") and also ``source``,
``reason``, ``build``, ``extra``, ``selection``, ``params``, ``prediction``,
``spec_curve`` (verdict and numbers per analysis choice), ``spec_curve_share`` (share of the
counted choices whose verdict equals the main one: not skipped, not dropped as inconclusive
by construction, of the main analysis's compression), ``spec_curve_supported`` (share of
them that support the claim), ``spec_curve_n`` (their number, the shares' denominator),
``spec_curve_by_estimand`` (one curve per compression), ``pinned_verdict``, ``pinned_hash``,
``declaration_changed`` (the declaration's hash differs from the pinned one), ``outcome``
(pytest's, under the gate), ``magnitude``, ``finding``, ``multiplicity`` and ``fidelity``
(:mod:`lie_stats.spec.results`), ``p_holm`` and ``p_bh`` (adjusted within the result's
claim family with :func:`lie_stats.stats.adjust_pvalues`; skipped results and results
without a p-value are excluded from the family and get ``null``) and ``figure`` (path
relative to the reports folder, or ``null``).
"""

from __future__ import annotations

import json
import math
import os
import re
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from .. import columns as C
from .._io import file_sha256, inside, write_text_atomic
from .._text import html_link_target, html_text, md_link_target, terminal_cell, terminal_line
from .figures import draw_figure
from .sections import SECTIONS_ATTR, ReportSection, linked_images, sections_of, write_sections
from .figures import draw_magnitude_figure
from .render import render_html, render_markdown
from .retired import retired_section
from .text import estimate_text, figure_name, fmt, md_text, reference_text, relative_path, result_field
from .view import DESIGN_FLAG_CODES, design_flags, gate_text, limiting_unit, outside_interval, p_label
from .writing import check_reports_dir, keep_identical_figures, stable_numbers, staged_reports

__all__ = [
    "results_records",
    "write_reports",
    "verdict_table",
    "result_row_text",
    "fmt",
    "md_text",
    "figure_name",
    "dataset_records",
    "result_field",
    "relative_path",
    "check_reports_dir",
    "stable_numbers",
    "ReportSection",
    "SECTIONS_ATTR",
    "sections_of",
    "RESULTS_JSON",
    "REPORT_MD",
    "REPORT_HTML",
    "FIGURES",
]

RESULTS_JSON = "results.json"
REPORT_MD = "report.md"
REPORT_HTML = "report.html"
FIGURES = "figures"
#: The figure across claims: the essay's figure against our estimate (figures/).
MAGNITUDE_FIGURE = "claims__magnitudes.png"


def result_row_text(result: Any) -> str:
    """One result as a short aligned block (what a failing pytest item prints).

    Examples
    --------
    >>> print(result_row_text({"id": "X1", "dataset": "toy", "test": "correlation",
    ...     "gate": "pinned", "verdict": "refuted", "reason": "r", "n": 96, "statistic": 0.1,
    ...     "p_value": 0.01, "effect": 0.1, "ci_low": 0.02, "ci_high": 0.2}))
    id       X1 on toy (correlation, gate pinned)
    verdict  refuted: r
    numbers  n = 96, statistic = 0.1, p = 0.01, effect = 0.1 [0.02, 0.2]
    """
    limit = limiting_unit({k: result_field(result, k) for k in ("test", "n", "extra")})
    lines = [
        f"id       {result_field(result, 'id')} on {result_field(result, 'dataset')} ({result_field(result, 'test')}, "
        f"gate {result_field(result, 'gate')})",
        f"verdict  {result_field(result, 'verdict')}: {result_field(result, 'reason')}",
        f"numbers  n = {fmt(result_field(result, 'n'))}{f' (limited by: {limit})' if limit else ''}, statistic = {fmt(result_field(result, 'statistic'))}, "
        f"p = {fmt(result_field(result, 'p_value'))}, effect = "
        f"{estimate_text(result_field(result, 'effect'), result_field(result, 'ci_low'), result_field(result, 'ci_high'))}",
    ]
    extra = result_field(result, "extra") or {}
    if extra:
        lines.append("extra    " + ", ".join(f"{k} = {fmt(v)}" for k, v in extra.items()))
    ref = result_field(result, "reference") or {}
    if ref:
        lines.append(f"original {reference_text(ref)}")
    if result_field(result, "pinned_verdict"):
        lines.append(f"pinned   {result_field(result, 'pinned_verdict')} (hash "
                     f"{str(result_field(result, 'pinned_hash'))[:12]}; now {str(result_field(result, 'spec_hash'))[:12]})")
    return "\n".join(terminal_line(line) for line in lines)


_TABLE_COLS = ("id", "dataset", "verdict", "gate", "estimate [interval]", "p", "n (limit)", "flags")
#: Widest the console's verdict table may be (columns wrap their cells to fit).
TABLE_WIDTH = 100
#: The narrowest each column of the table wraps to.
_MIN_WIDTHS = (22, 12, 12, 4, 16, 6, 8, 5)
#: The gate outcome in the table (a word of :data:`~lie_stats.report.view.GATE_LEGEND` -> code).
_GATE_CODES = {"pin held": "ok", "replicated": "ok", "reported": "ok", "not run": "skip",
               "not checked": "-"}
#: The table's change and estimate flags (the diagnosis's are
#: :data:`~lie_stats.report.view.DESIGN_FLAG_CODES`, shortened in the legend).
TABLE_FLAG_CODES = {
    "V": "verdict changed at the last re-pinning",
    "D": "declaration changed since pinned",
    "X": "estimate outside its interval",
    "M": "magnitude undetermined",
}
_DESIGN_SHORT = {"P": "power < 0.5 or unknown", "C": "coverage < 0.9",
                 "R": "false positives under other nulls > 2 alpha"}
TABLE_LEGEND = (
    "gate ok/FAIL/skip: passed, failed, not run (data absent); p: the test's p-value; n (limit): "
    "units the estimate averages (the unit that limits the test); flags: "
    + ", ".join(f"{k} {v}" for k, v in {**TABLE_FLAG_CODES, **_DESIGN_SHORT}.items())
)
assert set(_DESIGN_SHORT) == set(DESIGN_FLAG_CODES)


def _table_flags(r: Mapping[str, Any]) -> str:
    prev = r.get("previous_pin")
    flags = ""
    if prev and prev.get("verdict") != r.get("verdict"):
        flags += "V"
    if r.get("declaration_changed") and not prev:
        flags += "D"
    if outside_interval(r.get(C.EFFECT), r.get(C.CI_LOW), r.get(C.CI_HIGH)):
        flags += "X"
    if r.get("qualifier"):
        flags += "M"
    return flags + "".join(code for code, _ in design_flags(r))


def _table_rows(records: Sequence[Mapping[str, Any]], outcomes: Mapping[str, str] | None = None) -> list[list[str]]:
    rows = []
    for r in records:
        limit = limiting_unit(r)
        outcome = (outcomes or {}).get(f"{r['id']}::{r['dataset']}", r.get("outcome") or "")
        gate = gate_text({**r, "outcome": outcome})
        n = fmt(r.get(C.N))
        rows.append([
            str(r["id"]), str(r["dataset"]), str(r["verdict"]).replace("_", " "), _GATE_CODES.get(gate, "FAIL"),
            estimate_text(r.get(C.EFFECT), r.get(C.CI_LOW), r.get(C.CI_HIGH)),
            fmt(r.get(C.P_VALUE)), f"{n} ({limit})" if limit else n, _table_flags(r) or "-",
        ])
    return rows


def _fit_widths(natural: list[int], limit: int) -> list[int]:
    """Column widths summing to at most ``limit``: the widest column narrowed first, none
    below its :data:`_MIN_WIDTHS`."""
    widths = [max(w, 1) for w in natural]
    while sum(widths) > limit:
        i = max(range(len(widths)), key=lambda k: widths[k] - _MIN_WIDTHS[k])
        if widths[i] <= _MIN_WIDTHS[i]:
            break
        widths[i] -= 1
    return widths


#: Columns holding strings read from files (ids, dataset names): their continuation lines
#: start with this mark, so a wrapped string cannot look like a line of its own.
_CONTINUED = ".."


def _wrap(text: str, width: int, mark: str = "") -> list[str]:
    import textwrap

    return textwrap.wrap(text, width, break_on_hyphens=True, subsequent_indent=mark) or [""]


def verdict_table(results: Sequence[Any], *, outcomes: Mapping[str, str] | None = None,
                  width: int = TABLE_WIDTH) -> str:
    """A plain-text verdict table (the plugin's terminal summary), at most ``width``
    columns wide: a cell longer than its column wraps onto the next lines (an id's or a
    dataset's continuation lines start with ``..``); only a string from a file longer than
    :data:`lie_stats._text.MAX_CELL` is cut. The last lines are the legend of its
    abbreviations (:data:`TABLE_LEGEND`).

    Examples
    --------
    >>> print(verdict_table([{"id": "X1", "dataset": "toy", "gate": "pinned", "outcome": "passed",
    ...     "verdict": "refuted", "effect": -0.3, "ci_low": -0.5, "ci_high": -0.1, "p_value": 0.001,
    ...     "n": 96, "extra": {"n_perm": 999}, "reference": {"rho": -0.274}}]).splitlines()[2])
    X1  toy      refuted  ok    -0.3 [-0.5, -0.1]    0.001  96         P
    """
    records = [r if isinstance(r, Mapping) else r.row() for r in results]
    rows = [[terminal_cell(c) for c in row] for row in _table_rows(records, outcomes)]
    natural = [max(len(c), *(len(row[i]) for row in rows)) for i, c in enumerate(_TABLE_COLS)]
    widths = _fit_widths(natural, width - 2 * (len(_TABLE_COLS) - 1))

    def lines(cells: Sequence[str]) -> list[str]:
        wrapped = [_wrap(c, w, _CONTINUED if k < 2 else "") for k, (c, w) in enumerate(zip(cells, widths))]
        return ["  ".join((part[k] if k < len(part) else "").ljust(w) for part, w in zip(wrapped, widths)).rstrip()
                for k in range(max(len(p) for p in wrapped))]

    out = lines(_TABLE_COLS) + ["  ".join("-" * w for w in widths)]
    for row in rows:
        out += lines(row)
    out += _wrap("legend: " + TABLE_LEGEND, width)
    return "\n".join(out)


# ----------------------------------------------------------------------------- records


def results_records(results: Sequence[Any]) -> list[dict[str, Any]]:
    """JSON-ready records with Holm and BH p-values adjusted within each claim's family.

    The family is the result's ``multiplicity["family"]`` (by default its claim id before
    the first "-", :func:`lie_stats.spec.results.assign_multiplicity`), not every p of the
    run. Skipped results and results without a finite p-value are left out of the family
    (their adjusted p is ``None``); the rule of :func:`lie_stats.stats.adjust_pvalues`, NaN
    = not in the family.

    Examples
    --------
    >>> recs = results_records([
    ...     {"id": "A", "dataset": "d", "verdict": "supported", "p_value": 0.01},
    ...     {"id": "A-runs", "dataset": "d", "verdict": "refuted", "p_value": 0.04},
    ...     {"id": "B", "dataset": "d", "verdict": "inconclusive", "p_value": 0.04},
    ...     {"id": "C", "dataset": "d", "verdict": "skipped", "p_value": None}])
    >>> [(r["p_holm"], r["p_bh"]) for r in recs]
    [(0.02, 0.02), (0.04, 0.04), (0.04, 0.04), (None, None)]
    """
    from ..spec.results import assign_multiplicity, family_adjusted

    records = [{**r.row(), **({"diagnosis": r.diagnosis} if getattr(r, "diagnosis", None) else {})}
               if hasattr(r, "row") else dict(r) for r in results]
    assign_multiplicity(records)
    for r, b in zip(records, family_adjusted(records, "bh")):
        r[C.P_HOLM] = r["multiplicity"]["p_adjusted"]
        r[C.P_BH] = b
    return records


# ----------------------------------------------------------------------------- documents


def _html_table(head: Sequence[str], rows: Sequence[Sequence[str]]) -> str:
    e = html_text
    out = ["<table>", "<tr>" + "".join(f"<th>{e(h)}</th>" for h in head) + "</tr>"]
    out += ["<tr>" + "".join(f"<td>{e(str(c))}</td>" for c in row) + "</tr>" for row in rows]
    return "\n".join(out + ["</table>"])


def _markdown_to_html(text: str) -> str:
    """The small Markdown subset of the report's extra sections: headings, pipe tables,
    images and paragraphs.

    >>> print(_markdown_to_html("## T\\n\\n| a | b |\\n|---|---|\\n| 1 | 2 |\\n![x](f.png)"))
    <h2>T</h2>
    <table>
    <tr><th>a</th><th>b</th></tr>
    <tr><td>1</td><td>2</td></tr>
    </table>
    <p><img src="f.png" alt="x"></p>

    Text is escaped (:func:`lie_stats._text.html_text`), so a section's string from a file
    adds no markup; an image's source is a relative path or an http(s) address, else ``#``.
    """
    e = html_text
    out: list[str] = []
    table: list[list[str]] = []

    def flush() -> None:
        if table:
            out.append(_html_table(table[0], table[1:]))
            table.clear()

    for line in text.splitlines():
        line = line.strip()
        if line.startswith("|"):
            cells = [c.strip() for c in line.strip("|").split("|")]
            if not all(set(c) <= set("-: ") for c in cells):
                table.append(cells)
            continue
        flush()
        if not line:
            continue
        if line.startswith("#"):
            level = min(len(line) - len(line.lstrip("#")), 6)
            out.append(f"<h{level}>{e(line.lstrip('#').strip())}</h{level}>")
        elif line.startswith("![") and "](" in line and line.endswith(")"):
            alt, src = line[2:-1].split("](", 1)
            out.append(f'<p><img src="{html_link_target(src)}" alt="{e(alt)}"></p>')
        else:
            out.append(f"<p>{e(line)}</p>")
    flush()
    return "\n".join(out)


_MD_TARGET = re.compile(r"(\]\()((?:[^()\s]|\([^()\s]*\))*)(\))")


def _inert_link_targets(markdown: str) -> str:
    """A section's Markdown with the target of each link and image a relative path or an
    http(s) address (:func:`lie_stats._text.md_link_target`), any other target ``#``.

    >>> _inert_link_targets("![A](figures/a.png) [x](javascript:alert(1)) [y](https://a.org)")
    '![A](figures/a.png) [x](#) [y](https://a.org)'
    """
    return _MD_TARGET.sub(lambda m: m.group(1) + md_link_target(m.group(2)) + m.group(3), markdown)


def _data_rows(data: Sequence[Mapping[str, Any]]) -> list[list[str]]:
    return [[d["dataset"], d["title"], d["state"], d["cube"], d["sha256"][:16] if d["sha256"] else "-",
             fmt(d["bytes"])] for d in data]


def dataset_records(names: Sequence[str], datasets_dir: str | os.PathLike, *, base: Path | None = None
                    ) -> list[dict[str, Any]]:
    """The cubes behind the results: one record per cube file of each named dataset.

    Each record: ``dataset``, ``title``, ``state``, ``cube`` (path relative to ``base`` when
    inside it), ``sha256`` and ``bytes`` (``None`` when the file is absent). Unknown names
    are left out (their results are errors, reported as such).

    Examples
    --------
    >>> import tempfile
    >>> dataset_records(["toy"], tempfile.mkdtemp())
    []
    """
    from ..datasets import DatasetError, find_dataset

    out = []
    for name in sorted(set(names)):
        try:
            card = find_dataset(name, datasets_dir)
        except DatasetError:
            continue
        for path in card.cubes:
            digest, size = None, None
            if path.is_file():
                digest, size = file_sha256(path), path.stat().st_size
            out.append({"dataset": name, "title": card.title, "state": card.state,
                        "cube": relative_path(path, base) if base else str(path),
                        "sha256": digest, "bytes": size})
    return out


def write_reports(results: Sequence[Any], reports_dir: str | os.PathLike = "reports", *,
                  figures: bool = True, datasets_dir: str | os.PathLike | None = None,
                  retired: Sequence[Mapping[str, Any]] = (),
                  sections: Sequence[ReportSection] = ()) -> dict[str, Path]:
    """Write ``results.json``, ``report.md``, ``report.html`` and the figures.

    Parameters
    ----------
    results : sequence of lie_stats.spec.Result
        One per hypothesis and dataset, in the order to report them (sorted by id and
        dataset here, so the files do not depend on the run's order).
    reports_dir : path
        Created if needed. The whole report is written into a staging folder beside it and
        swapped in at once, under a lock (:mod:`lie_stats.report.writing`): an interrupted
        or failed write leaves the earlier report as it was, and two concurrent writers
        each leave a complete report. Entries lie_stats does not write are kept.
    figures : bool
        Draw one PNG per non-skipped result (``figures/<id>__<dataset>.png``); figures of
        earlier runs that this run did not draw are removed, so the folder matches the report.
        Without figures the earlier ``figures/`` is kept as it was.
    datasets_dir : path, optional
        The dataset cards' folder: the reports then list the cube files used, with sha256,
        and (with ``figures``) add the ``sections``.
    retired : sequence of mapping
        The run's retired pins (:attr:`lie_stats.engine.ResultsTable.retired`): listed in
        the section "Retired pins" after the findings (:mod:`lie_stats.report.retired`);
        they are not rows.
    sections : sequence of ReportSection
        The sections that read several results together, in order
        (:attr:`lie_stats.engine.ResultsTable.sections`: those the run's modules declare).

    Returns
    -------
    dict of str to Path
        ``{"json", "markdown", "html"}``, each figure by ``"<id>::<dataset>"`` and each
        section's figure by the section's name (``"<name>:<k>"`` when it links several).

    Examples
    --------
    >>> import tempfile, json, pathlib
    >>> from lie_stats.spec import Result
    >>> r = Result(id="X1", claim="c", source="s", dataset="toy", verdict="skipped", reason="no cube",
    ...            gate="report", test="correlation", spec_hash="0" * 64, reference={})
    >>> out = write_reports([r], tempfile.mkdtemp())
    >>> json.loads(out["json"].read_text())[0]["verdict"]
    'skipped'
    """
    reports_dir = Path(os.path.abspath(reports_dir))
    results = sorted(results, key=lambda r: (str(result_field(r, "id")), str(result_field(r, "dataset"))))
    records = stable_numbers(results_records(results))
    for rec in records:  # machine-independent: the module relative to the reports' parent
        rec["module"] = relative_path(rec.get("module") or "", reports_dir.resolve().parent)
    drawn: dict[str, str] = {}  # key -> path relative to the folder
    with staged_reports(reports_dir, figures=figures) as stage:
        for res, rec in zip(results, records):
            rec["figure"] = None
            if figures and rec["verdict"] != C.SKIPPED:
                rel = f"{FIGURES}/{figure_name(rec['id'], rec['dataset'])}"
                if draw_figure(res, rec, inside(stage, rel, what="figure")):
                    rec["figure"] = rel
                    drawn[f"{rec['id']}::{rec['dataset']}"] = rel
        extra = []
        if figures and datasets_dir is not None:
            for name, section in write_sections(results, stage, datasets_dir, sections):
                section = _inert_link_targets(section)
                extra.append(section)
                images = [rel for rel in linked_images(section) if not rel.startswith(("#", "http:", "https:"))]
                for rel in images:  # a figure the section drew: inside the reports folder
                    inside(reports_dir, rel, what=f"figure of the report section {name!r}")
                drawn.update({name if len(images) == 1 else f"{name}:{k}": rel
                              for k, rel in enumerate(images, start=1)})
        data = []
        if datasets_dir is not None:
            names = [r["dataset"] for r in records if r["dataset"] != "-"]
            data = dataset_records(names, datasets_dir, base=reports_dir.resolve().parent)
        write_text_atomic(stage / RESULTS_JSON, json.dumps(records, indent=2, sort_keys=True, allow_nan=False) + "\n")
        magnitude_figure = None
        if figures:
            rel = f"{FIGURES}/{MAGNITUDE_FIGURE}"
            if draw_magnitude_figure(records, inside(stage, rel, what="figure")):
                magnitude_figure = rel
                drawn["magnitudes"] = rel
        keep_identical_figures(stage, reports_dir, drawn.values())
        rows = _data_rows(data)
        extra_html = [_markdown_to_html(x) for x in extra]
        if retired:  # escaped by its own writer, for each medium
            md, html = retired_section(retired, reports_dir.resolve().parent)
            extra, extra_html = [*extra, md], [*extra_html, html]
        write_text_atomic(stage / REPORT_MD, render_markdown(records, rows, extra,
                                                             magnitude_figure=magnitude_figure))
        write_text_atomic(stage / REPORT_HTML, render_html(records, rows, extra_html,
                                                           magnitude_figure=magnitude_figure))
    written = {key: inside(reports_dir, rel, what="figure") for key, rel in drawn.items()}
    written.update(json=reports_dir / RESULTS_JSON, markdown=reports_dir / REPORT_MD,
                   html=reports_dir / REPORT_HTML)
    return written
