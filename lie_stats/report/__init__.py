"""Reports: results -> ``results.json``, ``report.md``, ``report.html`` and PNG figures.

The only module that formats or rounds numbers (STYLE.md, lesson 2): ``results.json`` keeps
full precision (NaN as ``null``); the Markdown, HTML and terminal tables round.

``results.json`` is a list with one object per hypothesis and dataset holding the fields of
:data:`lie_stats.schema.RESULT_FIELDS` (DESIGN.md, "Results") and also ``source``,
``reason``, ``build``, ``extra``, ``selection``, ``params``, ``prediction``,
``spec_curve`` (verdict and numbers per analysis choice), ``spec_curve_share`` (share of the
non-skipped choices whose verdict equals the main one), ``spec_curve_supported`` (share of
them that support the claim), ``pinned_verdict``, ``pinned_hash``,
``declaration_changed`` (the declaration's hash differs from the pinned one), ``outcome``
(pytest's, under the gate), ``p_holm`` and ``p_bh`` (adjusted across every result of the
run with :func:`lie_stats.stats.adjust_pvalues`; skipped results and results without a
p-value are excluded from the family and get ``null``) and ``figure`` (path relative to the
reports folder, or ``null``).
"""

from __future__ import annotations

import html
import json
import math
import os
import re
import tempfile
import warnings
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from . import schema

__all__ = [
    "results_records",
    "write_reports",
    "verdict_table",
    "result_row_text",
    "fmt",
    "figure_name",
    "dataset_records",
]

RESULTS_JSON = "results.json"
REPORT_MD = "report.md"
REPORT_HTML = "report.html"
FIGURES = "figures"


# ----------------------------------------------------------------------------- formatting


def fmt(value: Any, digits: int = 3) -> str:
    """A number rounded to ``digits`` significant digits for humans; ``-`` for missing.

    Examples
    --------
    >>> fmt(-0.27412), fmt(0.0000123), fmt(float("nan")), fmt(96.0)
    ('-0.274', '1.23e-05', '-', '96')
    """
    if value is None:
        return "-"
    if isinstance(value, (bool, np.bool_)):
        return str(bool(value)).lower()
    try:
        v = float(value)
    except (TypeError, ValueError):
        return str(value)
    if not math.isfinite(v):
        return "-"
    if v == int(v) and abs(v) < 1e6:
        return str(int(v))
    return f"{v:.{digits}g}"


def _interval(lo: Any, hi: Any) -> str:
    return "-" if fmt(lo) == "-" and fmt(hi) == "-" else f"[{fmt(lo)}, {fmt(hi)}]"


def _estimate(e: Any, lo: Any, hi: Any) -> str:
    ci = _interval(lo, hi)
    return fmt(e) if ci == "-" else f"{fmt(e)} {ci}"


def _reference_text(ref: Mapping[str, Any]) -> str:
    return ", ".join(f"{k} = {fmt(v) if isinstance(v, (int, float)) else v}" for k, v in ref.items()) or "-"


def figure_name(result_id: str, dataset: str) -> str:
    """Deterministic figure file name of one result.

    >>> figure_name("B5", "pico pythia")
    'B5__pico_pythia.png'
    """
    safe = lambda s: re.sub(r"[^A-Za-z0-9._-]+", "_", s).strip("_") or "x"  # noqa: E731
    return f"{safe(result_id)}__{safe(dataset)}.png"


def _get(result: Any, name: str, default: Any = None) -> Any:
    if isinstance(result, Mapping):
        return result.get(name, default)
    return getattr(result, name, default)


def result_row_text(result: Any) -> str:
    """One result as a short aligned block (what a failing pytest item prints).

    Examples
    --------
    >>> print(result_row_text({"id": "B5", "dataset": "toy", "test": "correlation",
    ...     "gate": "pinned", "verdict": "refuted", "reason": "r", "n": 96, "statistic": 0.1,
    ...     "p_value": 0.01, "effect": 0.1, "ci_low": 0.02, "ci_high": 0.2}))
    id       B5 on toy (correlation, gate pinned)
    verdict  refuted: r
    numbers  n = 96, statistic = 0.1, p = 0.01, effect = 0.1 [0.02, 0.2]
    """
    lines = [
        f"id       {_get(result, 'id')} on {_get(result, 'dataset')} ({_get(result, 'test')}, "
        f"gate {_get(result, 'gate')})",
        f"verdict  {_get(result, 'verdict')}: {_get(result, 'reason')}",
        f"numbers  n = {fmt(_get(result, 'n'))}, statistic = {fmt(_get(result, 'statistic'))}, "
        f"p = {fmt(_get(result, 'p_value'))}, effect = "
        f"{_estimate(_get(result, 'effect'), _get(result, 'ci_low'), _get(result, 'ci_high'))}",
    ]
    extra = _get(result, "extra") or {}
    if extra:
        lines.append("extra    " + ", ".join(f"{k} = {fmt(v)}" for k, v in extra.items()))
    ref = _get(result, "reference") or {}
    if ref:
        lines.append(f"original {_reference_text(ref)}")
    if _get(result, "pinned_verdict"):
        lines.append(f"pinned   {_get(result, 'pinned_verdict')} (hash "
                     f"{str(_get(result, 'pinned_hash'))[:12]}; now {str(_get(result, 'spec_hash'))[:12]})")
    return "\n".join(lines)


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
            _estimate(r.get("effect"), r.get("ci_low"), r.get("ci_high")),
            fmt(r.get("p_value")), _reference_text(r.get("reference") or {}),
            "-" if share is None else f"{fmt(100 * share, 3)} % of {len(r.get('spec_curve') or [])}",
            flag,
        ])
    return rows


def verdict_table(results: Sequence[Any], *, outcomes: Mapping[str, str] | None = None) -> str:
    """A plain-text verdict table (the plugin's terminal summary).

    Examples
    --------
    >>> print(verdict_table([{"id": "B5", "dataset": "toy", "gate": "report",
    ...     "verdict": "supported", "effect": -0.3, "ci_low": -0.5, "ci_high": -0.1,
    ...     "p_value": 0.001, "reference": {"rho": -0.274}}]).splitlines()[2])
    B5  toy      report  supported  -0.3 [-0.5, -0.1]  0.001  rho = -0.274  -
    """
    records = [r if isinstance(r, Mapping) else r.row() for r in results]
    rows = _table_rows(records, outcomes)
    widths = [max(len(c), *(len(row[i]) for row in rows)) for i, c in enumerate(_TABLE_COLS)]

    def line(cells: Sequence[str]) -> str:
        return "  ".join(c.ljust(w) for c, w in zip(cells, widths)).rstrip()

    out = [line(_TABLE_COLS), line(["-" * w for w in widths])]
    out += [line(row) for row in rows]
    return "\n".join(out)


# ----------------------------------------------------------------------------- records


def results_records(results: Sequence[Any]) -> list[dict[str, Any]]:
    """JSON-ready records with Holm and BH p-values adjusted across all results.

    Skipped results and results without a finite p-value are left out of the family (their
    adjusted p is ``None``); the rule of :func:`lie_stats.stats.adjust_pvalues`, NaN = not
    in the family.

    Examples
    --------
    >>> recs = results_records([
    ...     {"id": "A", "dataset": "d", "verdict": "supported", "p_value": 0.01},
    ...     {"id": "B", "dataset": "d", "verdict": "refuted", "p_value": 0.04},
    ...     {"id": "C", "dataset": "d", "verdict": "skipped", "p_value": None}])
    >>> [(r["p_holm"], r["p_bh"]) for r in recs]
    [(0.02, 0.02), (0.04, 0.04), (None, None)]
    """
    records = [r.row() if hasattr(r, "row") else dict(r) for r in results]
    p = np.array([
        (float(r["p_value"]) if r.get("p_value") is not None and r.get("verdict") != "skipped" else np.nan)
        for r in records
    ], dtype=float)
    holm = bh = np.full(len(records), np.nan)
    if np.isfinite(p).any():
        from .spec import _stats

        adjust_pvalues = _stats().adjust_pvalues
        holm = np.asarray(adjust_pvalues(p, method="holm"), dtype=float)
        bh = np.asarray(adjust_pvalues(p, method="bh"), dtype=float)
    for r, h, b in zip(records, holm, bh):
        r["p_holm"] = float(h) if math.isfinite(h) else None
        r["p_bh"] = float(b) if math.isfinite(b) else None
    return records


# ----------------------------------------------------------------------------- figures


def _figure(result: Any, record: Mapping[str, Any], path: Path) -> bool:
    import matplotlib

    matplotlib.use("Agg", force=False)
    from matplotlib.figure import Figure

    data = getattr(result, "data", None)
    with warnings.catch_warnings():
        # layout and legend placement notices are cosmetic; they must not fail a report
        # (the project turns lie_stats-attributed warnings into errors)
        warnings.simplefilter("ignore", UserWarning)
        return _draw(result, record, path, data, Figure)


def _draw(result: Any, record: Mapping[str, Any], path: Path, data: Any, Figure: Any) -> bool:
    fig = Figure(figsize=(9, 3.6), dpi=100)
    ax_data, ax_est = fig.subplots(1, 2, gridspec_kw={"width_ratios": [1.2, 1]})
    labels = {role: f"{role}: {sel.get('metric')} ({sel.get('step', 'last')})"
              for role, sel in (record.get("selection") or {}).items()}
    if not (_plot_layer_profile(ax_data, data, record) or _plot_trajectory_by_group(ax_data, data, labels)):
        _plot_data(ax_data, data, labels)
    _plot_estimates(ax_est, record)
    fig.suptitle(f"{record['id']} on {record['dataset']}: {record['verdict']}", fontsize=10)
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, format="png", metadata={"Software": None})
    return True


def _layer_values(da: Any, summary: str, weights: Any = None) -> Any:
    """One value per (model, layer) of a selection: pair matrices summarized over ``i < j``
    (``summary``, as the test's ``layer_summary``; weighted by ``w_i w_j``, ``w`` over its
    layer mean, for the functional Killing form of METRICS.md §8), per-head values averaged,
    layer values as they are."""
    import xarray as xr

    from .stats.killing_profiles import pair_summary

    if schema.HEAD_J in da.dims:
        da = da.transpose(..., schema.HEAD, schema.HEAD_J)
        m = da.values
        if weights is not None:
            w = weights.transpose(..., schema.HEAD).values
            w = w / np.nanmean(w, axis=-1, keepdims=True)
            m = m * w[..., :, None] * w[..., None, :]
        return xr.DataArray(pair_summary(m, summary=summary), dims=da.dims[:-2],
                            coords={d: da[d] for d in da.dims[:-2] if d in da.coords})
    if schema.HEAD in da.dims:
        return da.mean(dim=schema.HEAD, skipna=True)
    return da


def _plot_layer_profile(ax: Any, data: Any, record: Mapping[str, Any]) -> bool:
    """Layer enrichment profile last / first (METRICS.md §6.1) of ``first``/``last`` selections,
    one line per model, boundary layers marked; with ``w_first``/``w_last`` (B8) the
    functional Killing form's profile beside the total's. False when the roles do not fit."""
    arrays = getattr(data, "arrays", None) or {}
    if "first" not in arrays or "last" not in arrays or schema.LAYER not in arrays["first"].dims:
        return False
    summary = (record.get("params") or {}).get("layer_summary", "cv")
    curves = {"total" if "w_first" in arrays else "": (None, None)}
    if "w_first" in arrays and "w_last" in arrays:
        curves["functional"] = (arrays["w_first"], arrays["w_last"])
    drawn = False
    for kind, (w0, w1) in curves.items():
        try:
            ratio = _layer_values(arrays["last"], summary, w1) / _layer_values(arrays["first"], summary, w0)
        except Exception:  # noqa: BLE001 - a figure must not fail a report
            return False
        extra = [d for d in ratio.dims if d not in (schema.MODEL, schema.LAYER)]
        if extra:
            ratio = ratio.mean(dim=extra, skipna=True)
        if schema.MODEL not in ratio.dims:
            ratio = ratio.expand_dims({schema.MODEL: ["model"]})
        for m in ratio[schema.MODEL].values.tolist():
            r = ratio.sel({schema.MODEL: m})
            ok = np.isfinite(r.values) & (r.values > 0)
            if not ok.any():
                continue
            layers = r[schema.LAYER].values[ok]
            ax.plot(layers, r.values[ok], marker="o", ms=3, ls="-" if kind != "functional" else "--",
                    label=" ".join(x for x in (str(m), kind) if x))
            ax.plot(layers[[0, -1]], r.values[ok][[0, -1]], "s", ms=7, mfc="none", color="k")
            drawn = True
    if not drawn:
        return False
    ax.axhline(1.0, color="0.6", ls=":", lw=1)
    ax.set_yscale("log")
    ax.set_xlabel("layer (boundary layers boxed)")
    metric = (record.get("selection") or {}).get("last", {}).get("metric", "")
    ax.set_ylabel(f"layer enrichment last / first\n{metric}" + (f" ({summary})" if schema.HEAD_J in
                  arrays["last"].dims else ""), fontsize=8)
    ax.legend(fontsize=7)
    return True


def _plot_trajectory_by_group(ax: Any, data: Any, labels: Mapping[str, str]) -> bool:
    """Mean trajectory over steps of a per-head ``values`` selection for each label of the
    ``group`` role (METRICS.md §8 codes), one line per (model, label)."""
    arrays = getattr(data, "arrays", None) or {}
    values, group = arrays.get("values"), arrays.get("group")
    if values is None or group is None or schema.STEP not in values.dims or schema.HEAD not in values.dims:
        return False
    names = {code: name for name, code in schema.LABEL_CODES.items()}
    g = group.reset_coords(drop=True)
    if schema.STEP in g.dims:
        g = g.isel({schema.STEP: -1})
    drawn = False
    for code in sorted({float(c) for c in np.unique(g.values) if np.isfinite(c)}):
        mean = values.where(g == code).mean(dim=[d for d in values.dims if d not in (schema.MODEL, schema.STEP)],
                                           skipna=True)
        if schema.MODEL not in mean.dims:
            mean = mean.expand_dims({schema.MODEL: ["model"]})
        n = int((g == code).sum())
        for m in mean[schema.MODEL].values.tolist():
            s = mean.sel({schema.MODEL: m})
            ok = np.isfinite(s.values)
            ax.plot(s[schema.STEP].values[ok], s.values[ok], marker="o", ms=3,
                    label=f"{m} {names.get(int(code), code)} (n={n})")
            drawn = True
    if not drawn:
        return False
    ax.set_xscale("symlog", linthresh=1)
    ax.set_xlabel("step")
    ax.set_ylabel(f"{labels.get('values', 'values')}, mean by label", fontsize=8)
    ax.legend(fontsize=7)
    return True


def _plot_data(ax: Any, data: Any, labels: Mapping[str, str]) -> None:
    if data is None or not getattr(data, "arrays", None):
        ax.text(0.5, 0.5, "no data selected", ha="center", va="center", transform=ax.transAxes)
        ax.set_axis_off()
        return
    roles = list(data.arrays)
    stepped = [r for r in roles if schema.STEP in data.arrays[r].dims]
    if stepped:
        role = stepped[0]
        da = data.arrays[role]
        over = [d for d in da.dims if d not in (schema.MODEL, schema.STEP)]
        mean = da.mean(dim=over, skipna=True) if over else da
        if schema.MODEL not in mean.dims:
            mean = mean.expand_dims({schema.MODEL: ["model"]})
        for m in mean[schema.MODEL].values.tolist():
            s = mean.sel({schema.MODEL: m})
            ok = np.isfinite(s.values)
            ax.plot(s[schema.STEP].values[ok], s.values[ok], marker="o", ms=3, label=str(m))
        ax.set_xlabel("step")
        ax.set_ylabel(f"{labels.get(role, role)}, mean", fontsize=8)
        if mean.sizes[schema.MODEL] <= 8:
            ax.legend(fontsize=7)
        return
    try:
        if len(roles) >= 2:
            table = data.table(roles[0], roles[1], drop_model=roles[:2] == ["base", "tuned"])
        else:
            table = data.table(roles[0])
    except Exception:  # noqa: BLE001 - a figure must not fail a report
        ax.text(0.5, 0.5, "data not plottable", ha="center", va="center", transform=ax.transAxes)
        ax.set_axis_off()
        return
    color = table[schema.LAYER].to_numpy() if schema.LAYER in table.columns else None
    if len(roles) >= 2:
        sc = ax.scatter(table[roles[0]], table[roles[1]], c=color, s=12, cmap="viridis")
        ax.set_xlabel(labels.get(roles[0], roles[0]), fontsize=8)
        ax.set_ylabel(labels.get(roles[1], roles[1]), fontsize=8)
    else:
        x = color if color is not None else np.arange(len(table))
        sc = ax.scatter(x, table[roles[0]], c=color, s=12, cmap="viridis")
        ax.set_xlabel(schema.LAYER if color is not None else "unit")
        ax.set_ylabel(labels.get(roles[0], roles[0]), fontsize=8)
    if color is not None:
        ax.figure.colorbar(sc, ax=ax, label=schema.LAYER)


def _reference_value(ref: Mapping[str, Any]) -> tuple[str, float] | None:
    for key in ("r", "rho", "effect", "ratio", "value", "fraction"):
        v = ref.get(key)
        if isinstance(v, (int, float)) and math.isfinite(v):
            return key, float(v)
    return None


def _original_interval(record: Mapping[str, Any], ref: tuple[str, float]) -> dict[str, float]:
    """Fisher-z interval of an original correlation from its n (for the replication plot)."""
    n = (record.get("reference") or {}).get("n")
    params = record.get("params") or {}
    if ref[0] not in ("r", "rho") or not isinstance(n, int) or not -1 < ref[1] < 1:
        return {}
    from scipy.stats import norm

    from .spec import _stats

    try:
        se = _stats().fisher_z_se(n, params.get("method", "pearson"))
    except Exception:  # noqa: BLE001 - an interval we cannot draw is left out
        return {}
    z = float(norm.ppf(0.5 + float(params.get("ci", 0.95)) / 2))
    centre = math.atanh(ref[1])
    return {"ci_low": math.tanh(centre - z * se), "ci_high": math.tanh(centre + z * se)}


def _plot_estimates(ax: Any, record: Mapping[str, Any]) -> None:
    ref = _reference_value(record.get("reference") or {})
    original = [] if ref is None else [(f"original {ref[0]}", {"effect": ref[1], "verdict": "original",
                                                               **_original_interval(record, ref)})]
    rows = [("main", record)] + original + [
        (", ".join(f"{k}={v}" for k, v in c["choice"].items()), c) for c in record.get("spec_curve") or []
    ]
    for i, (label, r) in enumerate(rows):
        e = r.get("effect")
        lo, hi = r.get("ci_low"), r.get("ci_high")
        if e is None:
            continue
        color = {"supported": "tab:green", "refuted": "tab:red", "original": "k"}.get(r.get("verdict"), "tab:gray")
        if lo is not None and hi is not None:
            ax.plot([lo, hi], [i, i], color=color, lw=2)
        ax.plot([e], [i], "o", color=color)
    shown = [float(v) for _, r in rows for v in (r.get("effect"), r.get("ci_low"), r.get("ci_high"))
             if isinstance(v, (int, float)) and math.isfinite(v)]
    if shown and min(shown) > 0 and max(shown) / min(shown) > 100:
        ax.set_xscale("log")  # ratios over orders of magnitude (enrichment)
    ax.set_yticks(range(len(rows)))
    ax.set_yticklabels([label for label, _ in rows], fontsize=7)
    ax.set_ylim(len(rows) - 0.5, -0.5)  # first row on top
    if ref is not None:
        ax.axvline(ref[1], color="k", ls="--", lw=1, label=f"original {ref[0]} = {fmt(ref[1])}")
        ax.legend(fontsize=7, loc="best")
    value = (record.get("prediction") or {}).get("value")
    if value is not None:
        ax.axvline(value, color="0.6", ls=":", lw=1)
    ax.set_xlabel("effect [interval]; green supported, red refuted", fontsize=8)


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
            ("effect", _estimate(r.get("effect"), r.get("ci_low"), r.get("ci_high"))),
        ] + [(k, fmt(v)) for k, v in (r.get("extra") or {}).items()]
        facts = [
            ("claim", r["claim"]), ("source", r.get("source") or "-"),
            ("data", f"dataset {r['dataset']}; {_selection_text(r.get('selection') or {})}"),
            ("test", f"{r['test']} ({params})"),
            ("prediction", ", ".join(f"{k} {v}" for k, v in pred.items())),
            ("reference", _reference_text(r.get("reference") or {})),
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
             _estimate(c.get("effect"), c.get("ci_low"), c.get("ci_high")), fmt(c.get("p_value"))]
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
    return str(text).replace("|", "\\|").replace("\n", " ")


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
        lines += ["", f"## {s['title']}", ""]
        lines += [f"- **{k}**: {_md_cell(v)}" for k, v in s["facts"]]
        lines += ["", "| quantity | value |", "|---|---|"]
        lines += [f"| {k} | {_md_cell(v)} |" for k, v in s["numbers"]]
        if s["curve"]:
            share = s["share"]
            sup = s["supported"]
            lines += ["", f"Specification curve: {fmt(100 * share) if share is not None else '-'} % of "
                          f"{len(s['curve'])} analysis choices agree with the verdict; "
                          f"{fmt(100 * sup) if sup is not None else '-'} % support the claim.", "",
                      "| choice | verdict | effect [CI] | p |", "|---|---|---|---|"]
            lines += ["| " + " | ".join(_md_cell(c) for c in row) + " |" for row in s["curve"]]
        if s["figure"]:
            lines += ["", f"![{s['title']}]({s['figure']})"]
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


def _relative(path: str, base: Path) -> str:
    try:
        return Path(path).resolve().relative_to(base).as_posix()
    except (ValueError, OSError):
        return Path(path).name


def _write_text(path: Path, text: str) -> None:
    """Write ``text`` to ``path`` atomically (temp file, rename), readable by all (0644): a
    report, an export index and the pinned verdicts are meant to be shared, and mkstemp
    makes its file private."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            fh.write(text)
        os.chmod(tmp, 0o644)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


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
    import hashlib

    from .datasets import DatasetError, find_dataset

    out = []
    for name in sorted(set(names)):
        try:
            card = find_dataset(name, datasets_dir)
        except DatasetError:
            continue
        for path in card.cubes:
            digest, size = None, None
            if path.is_file():
                h = hashlib.sha256()
                with open(path, "rb") as fh:
                    for block in iter(lambda: fh.read(1 << 20), b""):
                        h.update(block)
                digest, size = h.hexdigest(), path.stat().st_size
            out.append({"dataset": name, "title": card.title, "state": card.state,
                        "cube": _relative(str(path), base) if base else str(path),
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
        Created if needed; each file is replaced atomically.
    figures : bool
        Draw one PNG per non-skipped result (``figures/<id>__<dataset>.png``); figures of
        earlier runs that this run did not draw are removed, so the folder matches the report.
    datasets_dir : path, optional
        The dataset cards' folder: the reports then list the cube files used, with sha256.

    Returns
    -------
    dict of str to Path
        ``{"json", "markdown", "html"}`` and each figure by ``"<id>::<dataset>"``.

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
    reports_dir = Path(reports_dir)
    results = sorted(results, key=lambda r: (str(_get(r, "id")), str(_get(r, "dataset"))))
    records = results_records(results)
    for rec in records:  # machine-independent: the module relative to the reports' parent
        rec["module"] = _relative(rec.get("module") or "", reports_dir.resolve().parent)
    written: dict[str, Path] = {}
    for res, rec in zip(results, records):
        rec["figure"] = None
        if figures and rec["verdict"] != "skipped":
            rel = f"{FIGURES}/{figure_name(rec['id'], rec['dataset'])}"
            if _figure(res, rec, reports_dir / rel):
                rec["figure"] = rel
                written[f"{rec['id']}::{rec['dataset']}"] = reports_dir / rel
    extra = []
    if figures and datasets_dir is not None:
        # sections that read several results together (A10: lie_stats.report_a10)
        from . import report_a10

        section = report_a10.write_a10(results, reports_dir, datasets_dir)
        if section is not None:
            extra.append(section)
            written["A10"] = reports_dir / FIGURES / "A10.png"
    if figures and (reports_dir / FIGURES).is_dir():
        keep = {p.name for p in written.values()}
        for old in (reports_dir / FIGURES).glob("*__*.png"):
            if old.name not in keep:
                old.unlink()
    data = []
    if datasets_dir is not None:
        names = [r["dataset"] for r in records if r["dataset"] != "-"]
        data = dataset_records(names, datasets_dir, base=reports_dir.resolve().parent)
    _write_text(reports_dir / RESULTS_JSON, json.dumps(records, indent=2, sort_keys=True, allow_nan=False) + "\n")
    _write_text(reports_dir / REPORT_MD, _markdown(records, data, extra))
    _write_text(reports_dir / REPORT_HTML, _html(records, data, extra))
    written.update(json=reports_dir / RESULTS_JSON, markdown=reports_dir / REPORT_MD,
                   html=reports_dir / REPORT_HTML)
    return written
