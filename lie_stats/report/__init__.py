"""Reports: results -> ``results.json``, ``report.md``, ``report.html`` and PNG figures.

The only package that formats or rounds numbers: ``results.json`` keeps
12 significant digits (:data:`lie_stats.report.writing.RESULT_DIGITS`: stable across CPUs
and BLAS kernels; NaN as ``null``); the Markdown, HTML and terminal tables round
(:mod:`lie_stats.report.text`). Each result's figure is drawn by
:mod:`lie_stats.report.figures`; sections that read several results together are added by
hook (:func:`register_section`, :mod:`lie_stats.report.sections`) from the claims' own
modules.

``results.json`` is a list with one object per hypothesis and dataset holding the fields of
:data:`lie_stats.schema.RESULT_FIELDS` (DESIGN.md, "Results") and also ``source``,
``reason``, ``build``, ``extra``, ``selection``, ``params``, ``prediction``,
``spec_curve`` (verdict and numbers per analysis choice), ``spec_curve_share`` (share of the
counted choices whose verdict equals the main one: not skipped, not dropped as inconclusive
by construction, of the main analysis's compression), ``spec_curve_supported`` (share of
them that support the claim), ``spec_curve_n`` (their number, the shares' denominator),
``spec_curve_by_estimand`` (one curve per compression), ``pinned_verdict``, ``pinned_hash``,
``declaration_changed`` (the declaration's hash differs from the pinned one), ``outcome``
(pytest's, under the gate), ``magnitude``, ``finding`` and ``multiplicity``
(:mod:`lie_stats.spec.results`), ``p_holm`` and ``p_bh`` (adjusted within the result's
claim family with :func:`lie_stats.stats.adjust_pvalues`; skipped results and results
without a p-value are excluded from the family and get ``null``) and ``figure`` (path
relative to the reports folder, or ``null``).
"""

from __future__ import annotations

import html
import json
import math
import os
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from .. import schema
from .._io import file_sha256, terminal_safe, write_text_atomic
from .figures import draw_figure
from .sections import linked_images, register_section, report_sections, unregister_section, write_sections
from .text import estimate_text, figure_name, fmt, md_text, reference_text, relative_path, result_field
from .writing import check_reports_dir, keep_identical_figures, stable_numbers, staged_reports

__all__ = [
    "results_records",
    "write_reports",
    "verdict_table",
    "result_row_text",
    "fmt",
    "figure_name",
    "dataset_records",
    "result_field",
    "relative_path",
    "check_reports_dir",
    "stable_numbers",
    "register_section",
    "unregister_section",
    "report_sections",
    "RESULTS_JSON",
    "REPORT_MD",
    "REPORT_HTML",
    "FIGURES",
]

RESULTS_JSON = "results.json"
REPORT_MD = "report.md"
REPORT_HTML = "report.html"
FIGURES = "figures"


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
    lines = [
        f"id       {result_field(result, 'id')} on {result_field(result, 'dataset')} ({result_field(result, 'test')}, "
        f"gate {result_field(result, 'gate')})",
        f"verdict  {result_field(result, 'verdict')}: {result_field(result, 'reason')}",
        f"numbers  n = {fmt(result_field(result, 'n'))}, statistic = {fmt(result_field(result, 'statistic'))}, "
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
    return "\n".join(terminal_safe(line, one_line=True) for line in lines)


_TABLE_COLS = ("id", "dataset", "gate", "verdict", "effect [CI]", "p", "reference", "agree", "flag")


def _table_rows(records: Sequence[Mapping[str, Any]], outcomes: Mapping[str, str] | None = None) -> list[list[str]]:
    rows = []
    for r in records:
        share = r.get("spec_curve_share")
        flag = "declaration changed" if r.get("declaration_changed") else ""
        outcome = (outcomes or {}).get(f"{r['id']}::{r['dataset']}", r.get("outcome") or "")
        rows.append([
            str(r["id"]), str(r["dataset"]), str(r["gate"]),
            str(r["verdict"]) + (f" ({outcome})" if outcome in ("passed", "failed") else ""),
            estimate_text(r.get("effect"), r.get("ci_low"), r.get("ci_high")),
            fmt(r.get("p_value")), reference_text(r.get("reference") or {}),
            "-" if share is None else f"{fmt(100 * share, 3)} % of {r.get('spec_curve_n', len(r.get('spec_curve') or []))}",
            flag,
        ])
    return rows


def verdict_table(results: Sequence[Any], *, outcomes: Mapping[str, str] | None = None) -> str:
    """A plain-text verdict table (the plugin's terminal summary).

    Examples
    --------
    >>> print(verdict_table([{"id": "X1", "dataset": "toy", "gate": "report",
    ...     "verdict": "supported", "effect": -0.3, "ci_low": -0.5, "ci_high": -0.1,
    ...     "p_value": 0.001, "reference": {"rho": -0.274}}]).splitlines()[2])
    X1  toy      report  supported  -0.3 [-0.5, -0.1]  0.001  rho = -0.274  -
    """
    records = [r if isinstance(r, Mapping) else r.row() for r in results]
    rows = [[terminal_safe(c, one_line=True) for c in row] for row in _table_rows(records, outcomes)]
    widths = [max(len(c), *(len(row[i]) for row in rows)) for i, c in enumerate(_TABLE_COLS)]

    def line(cells: Sequence[str]) -> str:
        return "  ".join(c.ljust(w) for c, w in zip(cells, widths)).rstrip()

    out = [line(_TABLE_COLS), line(["-" * w for w in widths])]
    out += [line(row) for row in rows]
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
        r["p_holm"] = r["multiplicity"]["p_adjusted"]
        r["p_bh"] = b
    return records


# ----------------------------------------------------------------------------- documents


def _selection_text(selection: Mapping[str, Any]) -> str:
    parts = []
    for role, sel in selection.items():
        extras = ", ".join(f"{k}={v}" for k, v in sel.items() if k != "metric")
        parts.append(f"{role} = {sel['metric']}" + (f" ({extras})" if extras else ""))
    return "; ".join(parts)


def _sections(records: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    out = []
    for r in records:
        params = ", ".join(f"{k}={v}" for k, v in (r.get("params") or {}).items())
        pred = r.get("prediction") or {}
        numbers = [
            ("n", fmt(r.get("n"))), ("statistic", fmt(r.get("statistic"))),
            ("p", fmt(r.get("p_value"))), ("p (Holm)", fmt(r.get("p_holm"))),
            ("p (BH)", fmt(r.get("p_bh"))),
            ("effect", estimate_text(r.get("effect"), r.get("ci_low"), r.get("ci_high"))),
        ] + [(k, fmt(v)) for k, v in (r.get("extra") or {}).items()]
        facts = [
            ("claim", r["claim"]), ("source", r.get("source") or "-"),
            ("data", f"dataset {r['dataset']}; {_selection_text(r.get('selection') or {})}"),
            ("test", f"{r['test']} ({params})"),
            ("prediction", ", ".join(f"{k} {v}" for k, v in pred.items())),
            ("reference", reference_text(r.get("reference") or {})),
            ("verdict", f"{r['verdict']}: {r.get('reason', '')}"),
            ("gate", f"{r['gate']}" + (f" ({r['outcome']})" if r.get("outcome") else "")),
            ("pre-registration hash", str(r["spec_hash"])),
        ]
        if r.get("build"):
            facts.append(("build the data", r["build"]))
        if r.get("pinned_verdict"):
            facts.append(("pinned", f"{r['pinned_verdict']} (hash {str(r.get('pinned_hash'))[:12]})"))
        if r.get("declaration_changed"):
            facts.append(("FLAG", "the declaration changed after its verdict was pinned"))
        if r.get("notes"):
            facts.append(("notes", r["notes"]))
        curve = [
            [", ".join(f"{k}={v}" for k, v in c["choice"].items()), c["verdict"],
             estimate_text(c.get("effect"), c.get("ci_low"), c.get("ci_high")), fmt(c.get("p_value"))]
            for c in r.get("spec_curve") or []
        ]
        out.append({"title": f"{r['id']} on {r['dataset']}", "facts": facts, "numbers": numbers,
                    "curve": curve, "share": r.get("spec_curve_share"),
                    "supported": r.get("spec_curve_supported"), "figure": r.get("figure")})
    return out


_SUMMARY_HEAD = ["id", "claim", "dataset", "gate", "verdict", "effect [CI]", "p", "p (Holm)", "p (BH)",
                 "reference", "choices agreeing", "flag"]


def _summary_rows(records: Sequence[Mapping[str, Any]]) -> list[list[str]]:
    rows = []
    for r, t in zip(records, _table_rows(records)):
        rows.append(t[:1] + [str(r.get("claim", ""))] + t[1:6] + [fmt(r.get("p_holm")), fmt(r.get("p_bh"))]
                    + t[6:])
    return rows


def _md_cell(text: str) -> str:
    return md_text(text)


def _markdown(records: Sequence[Mapping[str, Any]], data: Sequence[Mapping[str, Any]] = (),
              extra: Sequence[str] = ()) -> str:
    lines = ["# lie_stats report", "",
             f"{len(records)} result(s); verdicts: " + ", ".join(
                 f"{v} {sum(r['verdict'] == v for r in records)}" for v in schema.VERDICTS), "",
             "| " + " | ".join(_SUMMARY_HEAD) + " |", "|" + "---|" * len(_SUMMARY_HEAD)]
    lines += ["| " + " | ".join(_md_cell(c) for c in row) + " |" for row in _summary_rows(records)]
    if data:
        lines += ["", "## Data", "", "| dataset | title | state | cube | sha256 | bytes |", "|---|---|---|---|---|---|"]
        lines += ["| " + " | ".join(_md_cell(c) for c in row) + " |" for row in _data_rows(data)]
    for s in _sections(records):
        lines += ["", f"## {md_text(s['title'])}", ""]
        lines += [f"- **{k}**: {_md_cell(v)}" for k, v in s["facts"]]
        lines += ["", "| quantity | value |", "|---|---|"]
        lines += [f"| {_md_cell(k)} | {_md_cell(v)} |" for k, v in s["numbers"]]
        if s["curve"]:
            share = s["share"]
            sup = s["supported"]
            lines += ["", f"Specification curve: {fmt(100 * share) if share is not None else '-'} % of "
                          f"{len(s['curve'])} analysis choices agree with the verdict; "
                          f"{fmt(100 * sup) if sup is not None else '-'} % support the claim.", "",
                      "| choice | verdict | effect [CI] | p |", "|---|---|---|---|"]
            lines += ["| " + " | ".join(_md_cell(c) for c in row) + " |" for row in s["curve"]]
        if s["figure"]:
            lines += ["", f"![{md_text(s['title'])}]({s['figure']})"]
    for section in extra:
        lines += ["", section.rstrip("\n")]
    return "\n".join(lines) + "\n"


def _html_table(head: Sequence[str], rows: Sequence[Sequence[str]]) -> str:
    e = html.escape
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
    """
    e = html.escape
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
            out.append(f'<p><img src="{e(src)}" alt="{e(alt)}"></p>')
        else:
            out.append(f"<p>{e(line)}</p>")
    flush()
    return "\n".join(out)


def _html(records: Sequence[Mapping[str, Any]], data: Sequence[Mapping[str, Any]] = (),
          extra: Sequence[str] = ()) -> str:
    e = html.escape
    parts = [
        "<!DOCTYPE html>", '<html lang="en"><head><meta charset="utf-8"><title>lie_stats report</title>',
        "<style>body{font-family:sans-serif;max-width:70em;margin:auto}table{border-collapse:collapse}"
        "td,th{border:1px solid #ccc;padding:2px 6px;font-size:90%}img{max-width:100%}</style>",
        "</head><body>", "<h1>lie_stats report</h1>",
        _html_table(_SUMMARY_HEAD, _summary_rows(records)),
    ]
    if data:
        parts += ["<h2>Data</h2>", _html_table(["dataset", "title", "state", "cube", "sha256", "bytes"],
                                               _data_rows(data))]
    for s in _sections(records):
        parts.append(f"<h2>{e(s['title'])}</h2>")
        parts.append("<ul>" + "".join(f"<li><b>{e(k)}</b>: {e(str(v))}</li>" for k, v in s["facts"]) + "</ul>")
        parts.append(_html_table(["quantity", "value"], s["numbers"]))
        if s["curve"]:
            share = s["share"]
            sup = s["supported"]
            parts.append(f"<p>Specification curve: {fmt(100 * share) if share is not None else '-'} % of "
                         f"{len(s['curve'])} analysis choices agree with the verdict; "
                         f"{fmt(100 * sup) if sup is not None else '-'} % support the claim.</p>")
            parts.append(_html_table(["choice", "verdict", "effect [CI]", "p"], s["curve"]))
        if s["figure"]:
            parts.append(f'<p><img src="{e(s["figure"])}" alt="{e(s["title"])}"></p>')
    parts += [_markdown_to_html(section) for section in extra]
    parts.append("</body></html>")
    return "\n".join(parts) + "\n"


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
                  figures: bool = True, datasets_dir: str | os.PathLike | None = None) -> dict[str, Path]:
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
        and (with ``figures``) add the sections of :func:`register_section`.

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
            if figures and rec["verdict"] != "skipped":
                rel = f"{FIGURES}/{figure_name(rec['id'], rec['dataset'])}"
                if draw_figure(res, rec, stage / rel):
                    rec["figure"] = rel
                    drawn[f"{rec['id']}::{rec['dataset']}"] = rel
        extra = []
        if figures and datasets_dir is not None:
            for name, section in write_sections(results, stage, datasets_dir):
                extra.append(section)
                images = linked_images(section)
                drawn.update({name if len(images) == 1 else f"{name}:{k}": rel
                              for k, rel in enumerate(images, start=1)})
        keep_identical_figures(stage, reports_dir, drawn.values())
        data = []
        if datasets_dir is not None:
            names = [r["dataset"] for r in records if r["dataset"] != "-"]
            data = dataset_records(names, datasets_dir, base=reports_dir.resolve().parent)
        write_text_atomic(stage / RESULTS_JSON, json.dumps(records, indent=2, sort_keys=True, allow_nan=False) + "\n")
        write_text_atomic(stage / REPORT_MD, _markdown(records, data, extra))
        write_text_atomic(stage / REPORT_HTML, _html(records, data, extra))
    written = {key: reports_dir / rel for key, rel in drawn.items()}
    written.update(json=reports_dir / RESULTS_JSON, markdown=reports_dir / REPORT_MD,
                   html=reports_dir / REPORT_HTML)
    return written
