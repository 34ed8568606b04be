"""The figure of one result: its selected data beside its estimates (``figures/<id>__<dataset>.png``)."""

from __future__ import annotations

import math
import warnings
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from .. import schema
from .text import fmt

__all__ = ["draw_figure", "original_interval", "forest_rows", "draw_magnitude_figure", "FOREST_ROWS",
           "magnitude_panels", "spans_decades", "plain_log_ticks", "LOG_SPAN"]

#: Most analysis choices a result's forest plot draws one by one; beyond, it draws the
#: choices sorted by effect, the :data:`FOREST_TAIL` lowest and highest, and one summary row.
FOREST_ROWS = 30
FOREST_TAIL = 12
#: Height of one forest row in inches: labels of 7 points (0.1 in) do not overlap.
ROW_INCHES = 0.16
#: Matplotlib settings while a figure is drawn: every text (an id, a model name, a claim's
#: label) is plain text, never mathtext, so a "$" in a string from a file cannot fail the
#: report (the figure medium of :mod:`lie_stats._text`).
PLAIN_TEXT = {"text.parse_math": False}


#: Values spanning more than this ratio (two decades) are drawn on a log axis.
LOG_SPAN = 100.0


def plain_log_ticks(ax: Any, axis: str = "x") -> None:
    """Tick labels of a log (or symlog) axis as plain numbers (``1000``, ``0.01``): with
    mathtext off (:data:`PLAIN_TEXT`), matplotlib's default labels would show their
    ``$\\mathdefault{10^{3}}$`` source."""
    from matplotlib.ticker import FuncFormatter, NullFormatter

    target = ax.xaxis if axis == "x" else ax.yaxis
    target.set_major_formatter(FuncFormatter(lambda v, _pos: fmt(v)))
    target.set_minor_formatter(NullFormatter())


def spans_decades(values: Any, span: float = LOG_SPAN) -> bool:
    """Whether the finite values are all positive and span more than ``span`` (two decades).

    >>> spans_decades([0.5, 20.0, 40.0]), spans_decades([0.5, 200.0]), spans_decades([-1.0, 500.0])
    (False, True, False)
    """
    v = np.asarray([x for x in np.ravel(np.asarray(values, dtype=float)) if np.isfinite(x)])
    return bool(v.size) and float(v.min()) > 0 and float(v.max()) / float(v.min()) > span


def _scale_axes(ax: Any, xs: Any, ys: Any) -> None:
    """A log axis for values spanning more than two decades (symlog for steps from 0)."""
    xs = np.asarray(xs, dtype=float)
    pos = xs[np.isfinite(xs) & (xs > 0)]
    if spans_decades(xs):
        ax.set_xscale("log")
        plain_log_ticks(ax, "x")
    elif pos.size and np.nanmin(xs) >= 0 and float(pos.max()) / float(pos.min()) > LOG_SPAN:
        ax.set_xscale("symlog", linthresh=float(pos.min()))
        plain_log_ticks(ax, "x")
    if spans_decades(ys):
        ax.set_yscale("log")
        plain_log_ticks(ax, "y")


def draw_figure(result: Any, record: Mapping[str, Any], path: Path) -> bool:
    """Draw one result's figure to ``path`` (PNG): its selected data (a layer profile, a
    trajectory by label, or the roles' values) and its estimates beside the original and
    the specification curve. Returns whether a figure was written."""
    import matplotlib

    matplotlib.use("Agg", force=False)
    from matplotlib.figure import Figure

    data = getattr(result, "data", None)
    with warnings.catch_warnings(), matplotlib.rc_context(PLAIN_TEXT):
        # layout and legend placement notices are cosmetic; they must not fail a report
        # (the project turns lie_stats-attributed warnings into errors)
        warnings.simplefilter("ignore", UserWarning)
        return _draw(result, record, path, data, Figure)


def _draw(result: Any, record: Mapping[str, Any], path: Path, data: Any, Figure: Any) -> bool:
    rows = forest_rows(record)
    fig = Figure(figsize=(9, max(3.6, ROW_INCHES * len(rows) + 1.2)), dpi=100)
    ax_data, ax_est = fig.subplots(1, 2, gridspec_kw={"width_ratios": [1.2, 1]})
    labels = {role: f"{role}: {sel.get('metric')} ({sel.get('step', 'last')})"
              for role, sel in (record.get("selection") or {}).items()}
    if not (_plot_layer_profile(ax_data, data, record) or _plot_trajectory_by_group(ax_data, data, labels)):
        _plot_data(ax_data, data, labels)
    _plot_estimates(ax_est, record, rows)
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

    from ..forms import functional_killing
    from ..stats.pairwise import pair_summary

    if schema.HEAD_J in da.dims:
        da = da.transpose(..., schema.HEAD, schema.HEAD_J)
        m = da.values
        if weights is not None:
            m = functional_killing(m, weights.transpose(..., schema.HEAD).values, skipna=True)
        return xr.DataArray(pair_summary(m, summary=summary), dims=da.dims[:-2],
                            coords={d: da[d] for d in da.dims[:-2] if d in da.coords})
    if schema.HEAD in da.dims:
        return da.mean(dim=schema.HEAD, skipna=True)
    return da


def _plot_layer_profile(ax: Any, data: Any, record: Mapping[str, Any]) -> bool:
    """Layer enrichment profile last / first (METRICS.md §6.1) of ``first``/``last`` selections,
    one line per model, boundary layers marked; with ``w_first``/``w_last`` (weights) the
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
    plain_log_ticks(ax, "y")
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
    plain_log_ticks(ax, "x")
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
        _scale_axes(ax, mean[schema.STEP].values, mean.values)
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
        _scale_axes(ax, table[roles[0]].to_numpy(dtype=float), table[roles[1]].to_numpy(dtype=float))
        ax.set_xlabel(labels.get(roles[0], roles[0]), fontsize=8)
        ax.set_ylabel(labels.get(roles[1], roles[1]), fontsize=8)
    else:
        x = color if color is not None else np.arange(len(table))
        sc = ax.scatter(x, table[roles[0]], c=color, s=12, cmap="viridis")
        _scale_axes(ax, [], table[roles[0]].to_numpy(dtype=float))
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


def original_interval(record: Mapping[str, Any], ref: tuple[str, float]) -> dict[str, float]:
    """Fisher-z interval of an original correlation from its n (for the replication plot);
    ``{}`` when the reference is not a correlation with an integer n."""
    n = (record.get("reference") or {}).get("n")
    params = record.get("params") or {}
    if ref[0] not in ("r", "rho") or not isinstance(n, int) or not -1 < ref[1] < 1:
        return {}
    from scipy.stats import norm

    from ..stats import fisher_z_se

    try:
        se = fisher_z_se(n, params.get("method", "pearson"))
    except Exception:  # noqa: BLE001 - an interval we cannot draw is left out
        return {}
    z = float(norm.ppf(0.5 + float(params.get("ci", 0.95)) / 2))
    centre = math.atanh(ref[1])
    return {"ci_low": math.tanh(centre - z * se), "ci_high": math.tanh(centre + z * se)}


def forest_rows(record: Mapping[str, Any]) -> list[tuple[str, Mapping[str, Any] | None]]:
    """The rows of a result's forest plot, top to bottom: ``(label, row)``; ``row`` is
    ``None`` for a summary line.

    The main estimate, the original figure (when a number), then the specification curve:
    every choice when there are at most :data:`FOREST_ROWS`, else the choices sorted by
    effect, the :data:`FOREST_TAIL` lowest and highest with a summary row between them
    (how many, and their range), so that 96 choices stay legible. A row whose estimate
    lies outside its own interval is labelled ``(!)``.

    >>> curve = [{"choice": {"k": i}, "effect": float(i), "verdict": "supported"} for i in range(40)]
    >>> curve += [{"choice": {"k": "x"}, "effect": None, "verdict": "inconclusive"}]
    >>> rows = forest_rows({"effect": 1.0, "ci_low": 2.0, "ci_high": 3.0, "spec_curve": curve[::-1]})
    >>> len(rows), rows[0][0], rows[1][0], rows[13][0], rows[14][0], rows[-1][0]
    (26, 'main (!)', 'k=0', '... 16 more choices, effects 12 to 27; 1 without an estimate', 'k=28', 'k=39')
    """
    from .view import outside_interval

    def label(text: str, r: Mapping[str, Any]) -> str:
        return text + (" (!)" if outside_interval(r.get("effect"), r.get("ci_low"), r.get("ci_high")) else "")

    ref = _reference_value(record.get("reference") or {})
    rows: list[tuple[str, Mapping[str, Any] | None]] = [(label("main", record), record)]
    if ref is not None:
        rows.append((f"original {ref[0]}", {"effect": ref[1], "verdict": "original",
                                            **original_interval(record, ref)}))
    curve = [(", ".join(f"{k}={v}" for k, v in (c.get("choice") or {}).items()), c)
             for c in record.get("spec_curve") or []]
    if len(curve) > FOREST_ROWS:
        def effect(item: tuple[str, Mapping[str, Any]]) -> float:
            v = item[1].get("effect")
            return float(v) if isinstance(v, (int, float)) and math.isfinite(v) else math.nan

        finite = sorted((c for c in curve if math.isfinite(effect(c))), key=effect)
        missing = len(curve) - len(finite)
        tail = min(FOREST_TAIL, len(finite) // 2)
        middle = finite[tail:len(finite) - tail]
        span = f", effects {fmt(effect(middle[0]))} to {fmt(effect(middle[-1]))}" if middle else ""
        none = f"; {missing} without an estimate" if missing else ""
        curve = (finite[:tail] + [(f"... {len(middle)} more choices{span}{none}", None)]
                 + finite[len(finite) - tail:])
    rows += [(label(text, c), c) if c is not None else (text, None) for text, c in curve]
    return rows


def _plot_estimates(ax: Any, record: Mapping[str, Any],
                    rows: list[tuple[str, Mapping[str, Any] | None]] | None = None) -> None:
    ref = _reference_value(record.get("reference") or {})
    rows = forest_rows(record) if rows is None else rows
    for i, (label, r) in enumerate(rows):
        if r is None:
            continue
        e = r.get("effect")
        lo, hi = r.get("ci_low"), r.get("ci_high")
        if e is None:
            continue
        color = {"supported": "tab:green", "refuted": "tab:red", "original": "k"}.get(r.get("verdict"), "tab:gray")
        if lo is not None and hi is not None:
            ax.plot([lo, hi], [i, i], color=color, lw=2)
        hollow = label.endswith("(!)")
        ax.plot([e], [i], "o", color=color, mfc="white" if hollow else color)
    shown = [float(v) for _, r in rows if r is not None for v in (r.get("effect"), r.get("ci_low"), r.get("ci_high"))
             if isinstance(v, (int, float)) and math.isfinite(v)]
    if spans_decades(shown):
        ax.set_xscale("log")  # ratios over orders of magnitude (enrichment)
        plain_log_ticks(ax, "x")
    ax.set_yticks(range(len(rows)))
    ax.set_yticklabels([label for label, _ in rows], fontsize=7)
    ax.set_ylim(len(rows) - 0.5, -0.5)  # first row on top
    if ref is not None:
        ax.axvline(ref[1], color="k", ls="--", lw=1, label=f"original {ref[0]} = {fmt(ref[1])}")
        ax.legend(fontsize=7, loc="best")
    value = (record.get("prediction") or {}).get("value")
    if value is not None:
        ax.axvline(value, color="0.6", ls=":", lw=1)
    ax.set_xlabel("effect [interval]\ngreen supported, red refuted;\n(!) outside its interval", fontsize=8)


def _magnitude_rows(records: Any) -> list[dict[str, Any]]:
    """Rows of the cross-claim figure: results whose ``magnitude`` has a finite estimate
    and reference; the interval is the result's when its effect is the magnitude's estimate."""
    out = []
    for r in records:
        mag = r.get("magnitude") or {}
        est, ref = mag.get("estimate"), mag.get("reference")
        if not all(isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v) for v in (est, ref)):
            continue
        band = mag.get("band")
        band = ([float(band[0]), float(band[1])] if isinstance(band, (list, tuple)) and len(band) == 2
                and all(isinstance(b, (int, float)) and math.isfinite(b) for b in band) else None)
        lo, hi, eff = r.get("ci_low"), r.get("ci_high"), r.get("effect")
        ci = None
        if (all(isinstance(v, (int, float)) and math.isfinite(v) for v in (lo, hi, eff))
                and math.isclose(float(eff), float(est), rel_tol=1e-6, abs_tol=1e-12)):
            ci = [float(lo), float(hi)]
        values = [float(est), float(ref)] + (band or []) + (ci or [])
        positive = min(values) > 0
        out.append({"label": f"{r.get('id')} on {r.get('dataset')}", "estimate": float(est),
                    "reference": float(ref), "band": band, "ci": ci, "status": str(mag.get("status") or "-"),
                    "log": positive and max(values) / min(values) > 3})
    return out


def _scale_of(row: Mapping[str, Any]) -> float:
    values = [row["estimate"], row["reference"], *(row["band"] or []), *(row["ci"] or [])]
    return max((abs(v) for v in values if math.isfinite(v)), default=0.0)


def magnitude_panels(rows: Sequence[Mapping[str, Any]]) -> list[tuple[str, list[Mapping[str, Any]]]]:
    """The panels of the cross-claim figure: positive ratios spanning more than 3x on a log
    axis; the other figures on linear axes, in panels whose rows' sizes (largest absolute
    value of each row) lie within two decades of each other, so that no row is squashed to a
    point by a row a thousand times larger.

    >>> rows = [{"estimate": e, "reference": r, "band": None, "ci": None, "log": False}
    ...         for e, r in ((0.1, 0.2), (0.5, 0.98), (14.0, 500.0))]
    >>> [(t, len(rs)) for t, rs in magnitude_panels(rows)]
    [('other figures (linear scale)', 2), ('other figures, larger (linear scale)', 1)]
    """
    panels: list[tuple[str, list[Mapping[str, Any]]]] = []
    ratios = [r for r in rows if r["log"]]
    if ratios:
        panels.append(("ratios (log scale)", ratios))
    linear = sorted((r for r in rows if not r["log"]), key=_scale_of)
    groups: list[list[Mapping[str, Any]]] = []
    for r in linear:
        if groups and _scale_of(r) <= LOG_SPAN * max(_scale_of(groups[-1][0]), 1e-300):
            groups[-1].append(r)
        else:
            groups.append([r])
    order = {id(r): k for k, r in enumerate(rows)}
    for k, group in enumerate(groups):
        title = "other figures" + (", larger" if k else "") + (f" ({k + 1})" if k > 1 else "") + " (linear scale)"
        panels.append((title, sorted(group, key=lambda r: order[id(r)])))
    return panels


def draw_magnitude_figure(records: Any, path: Path) -> bool:
    """The essay's figure against our estimate, across claims (as replication projects draw
    original against replication effects): one row per result with a magnitude reference,
    the essay's figure (black diamond), its band (grey), our estimate with its interval
    (green within the band, red outside, grey not tested). Ratios spanning more than 3x
    are drawn on a log axis of their own, other figures on linear ones, grouped so that each
    panel's rows lie within two decades (:func:`magnitude_panels`). False (nothing written)
    when no result has a magnitude reference."""
    rows = _magnitude_rows(records)
    if not rows:
        return False
    import matplotlib

    matplotlib.use("Agg", force=False)
    from matplotlib.figure import Figure

    panels = magnitude_panels(rows)
    heights = [max(1.0, ROW_INCHES * 1.6 * len(rs)) for _, rs in panels]
    with warnings.catch_warnings(), matplotlib.rc_context(PLAIN_TEXT):
        warnings.simplefilter("ignore", UserWarning)
        fig = Figure(figsize=(10, sum(heights) + 1.0 * len(panels)), dpi=100)
        axes = fig.subplots(len(panels), 1, squeeze=False, gridspec_kw={"height_ratios": heights})[:, 0]
        colors = {"within": "tab:green", "compatible": "tab:olive", "outside": "tab:red"}
        for ax, (title, rs) in zip(axes, panels):
            for i, r in enumerate(rs):
                if r["band"] is not None:
                    ax.plot(r["band"], [i, i], color="0.8", lw=7, solid_capstyle="butt")
                color = colors.get(r["status"], "tab:gray")
                if r["ci"] is not None:
                    ax.plot(r["ci"], [i, i], color=color, lw=2)
                ax.plot([r["estimate"]], [i], "o", color=color)
                ax.plot([r["reference"]], [i], "D", color="k", ms=5)
            if title.startswith("ratios"):
                ax.set_xscale("log")
                plain_log_ticks(ax, "x")
            ax.set_yticks(range(len(rs)))
            ax.set_yticklabels([r["label"] for r in rs], fontsize=7)
            ax.set_ylim(len(rs) - 0.5, -0.5)
            ax.set_title(title, fontsize=9, loc="left")
            ax.grid(axis="x", color="0.9")
        axes[-1].set_xlabel("black diamond: essay's figure; grey: its band; dot [interval]: our estimate\n"
                            "(green within, olive compatible, red outside, grey not tested)", fontsize=8)
        fig.tight_layout()
        path.parent.mkdir(parents=True, exist_ok=True)
        fig.savefig(path, format="png", metadata={"Software": None})
    return True
