"""A10's report section: the projection-artifact control's figure and table, read together
(METRICS.md §2, §4.2, §4.6; the specs are in ``A10_projection_artifact.py``).

Two views that the generic per-result figure of :mod:`lie_stats.report` cannot give,
because A10 is a set of results read together:

- :func:`a10_figure`: each per-layer metric the A10 specs compare (the calibrated
  ``abelian_fraction`` and ``commutator_z_mean``, the fixed-threshold
  ``abelian_fraction_tau``) under the three compressions, at random initialization and
  trained, one row per dataset and stage; the same layer is joined across compressions, so
  a metric that moves with the compression alone shows as slanted lines. Beside it, the
  verdict-agreement table: each A3-A9 conclusion's verdict under every compression, and
  A10's verdict on their agreement.
- :func:`agreement_rows` / :func:`agreement_markdown`: that table as data and as Markdown.

It declares :func:`write_a10` as a report section (``REPORT_SECTIONS``,
:class:`lie_stats.report.ReportSection`) for the results whose id starts with ``A10``:
after the per-result figures, it draws ``figures/A10.png`` and returns the Markdown
section. It declares no spec; the run that collects this folder (pytest, ``lie-stats run``,
``lie-stats export``) reads its sections and hands them to the report.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from lie_stats import schema
from lie_stats import columns as C
from lie_stats.report import ReportSection, fmt, md_text, result_field
from lie_stats.spec import compression_tag
from lie_stats.columns import AGREE_VERDICT

__all__ = ["A10_METRICS", "COMPRESSIONS", "agreement_rows", "agreement_markdown", "summary_markdown",
           "takeaway_markdown", "a10_figure", "write_a10", "REPORT_SECTIONS"]

#: Per-layer metrics of the A10 comparison (METRICS.md §4.2, §4.6).
A10_METRICS = ("abelian_fraction", "commutator_z_mean", "abelian_fraction_tau")
#: The compressions compared, in display order (METRICS.md §2).
COMPRESSIONS = ("none", "adaptive", "fixed:64")
#: Prefix of A10's verdict-agreement specs (hypotheses/A10_projection_artifact.py).
AGREEMENT_PREFIX = "A10-verdicts-"
#: Models of each dataset shown in the figure (the real pretrained panel; the 96-head runs).
FIGURE_MODELS = {"pico_pythia": ("p96_s0", "p96_s1"),
                 "panel": ("minilm_l6", "minilm_l3", "mpnet", "smollm2_135m", "gemma3_270m")}
_CODES = {1.0: "supported", 0.0: "inconclusive", -1.0: "refuted"}
_COLORS = {"supported": "#7fc97f", "inconclusive": "#dddddd", "refuted": "#f0027f", "skipped": "#ffffff"}


def agreement_rows(results: Sequence[Any]) -> list[dict[str, Any]]:
    """One row per A10 verdict-agreement result: the target, the dataset, each
    compression's verdict and effect, and A10's verdict.

    Parameters
    ----------
    results : sequence of Result or results.json records

    Returns
    -------
    list of dict
        Keys ``target``, ``dataset``, ``verdict`` (A10's), ``reason`` and, per compared
        compression ``c``, ``c`` (the target's verdict) and ``c effect`` (its effect).

    Examples
    --------
    >>> rec = {"id": "A10-verdicts-A3", "dataset": "toy", "verdict": "supported", "reason": "r",
    ...        "params": {"compressions": ["none", "fixed:64"], "target_id": "A3"},
    ...        "extra": {"verdict_none": 1.0, "effect_none": 5.0, "verdict_fixed_64": 1.0,
    ...                  "effect_fixed_64": 4.0}}
    >>> row = agreement_rows([rec])[0]
    >>> row["target"], row["fixed:64"], row["fixed:64 effect"]
    ('A3', 'supported', 4.0)
    """
    rows = []
    for r in results:
        ident = str(result_field(r, "id", ""))
        if not ident.startswith(AGREEMENT_PREFIX):
            continue
        params = result_field(r, "params") or {}
        extra = result_field(r, "extra") or {}
        row: dict[str, Any] = {"target": params.get("target_id", ident[len(AGREEMENT_PREFIX):]),
                               "dataset": result_field(r, "dataset"), "verdict": result_field(r, "verdict"),
                               "reason": result_field(r, "reason", "")}
        for comp in params.get("compressions") or ():
            code = extra.get(f"{AGREE_VERDICT}_{compression_tag(comp)}")
            row[comp] = _CODES.get(float(code), "-") if code is not None and math.isfinite(float(code)) else "-"
            row[f"{comp} effect"] = extra.get(f"effect_{compression_tag(comp)}")
        rows.append(row)
    return sorted(rows, key=lambda x: (str(x["target"]), str(x["dataset"])))


def agreement_markdown(results: Sequence[Any]) -> str:
    """The verdict-agreement table as Markdown (empty string when there is none).

    Examples
    --------
    >>> rec = {"id": "A10-verdicts-A3", "dataset": "toy", "verdict": "refuted", "reason": "r",
    ...        "params": {"compressions": ["none", "adaptive"], "target_id": "A3"},
    ...        "extra": {"verdict_none": 1.0, "effect_none": 5.0, "verdict_adaptive": 0.0,
    ...                  "effect_adaptive": 1.2}}
    >>> print(agreement_markdown([rec]).splitlines()[2])
    | A3 | toy | supported (5) | inconclusive (1.2) | - | refuted |
    """
    rows = agreement_rows(results)
    if not rows:
        return ""
    head = ["target", "dataset", *COMPRESSIONS, "A10 verdict"]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for row in rows:
        cells = [md_text(row["target"]), md_text(row["dataset"])]  # names read from results
        for comp in COMPRESSIONS:
            cells.append(f"{row[comp]} ({fmt(row.get(f'{comp} effect'))})" if comp in row else "-")
        cells.append(str(row["verdict"]))
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"


def _layer_values(cube: Any, metric: str, compression: str, stage: str, family: str,
                  models: Sequence[str]) -> dict[str, np.ndarray]:
    """Per-layer values of each model at its first or last checkpoint with data."""
    out = {}
    if metric not in cube.data_vars or compression not in cube[schema.PROJECTION].values.tolist():
        return out
    da = cube[metric].sel({schema.FAMILY: family, schema.PROJECTION: compression})
    for m in models:
        if m not in cube[schema.MODEL].values.tolist():
            continue
        x = da.sel({schema.MODEL: m}).transpose(schema.STEP, schema.LAYER).values
        steps = np.flatnonzero(np.isfinite(x).any(axis=1))
        if steps.size:
            out[m] = x[steps[0] if stage == "init" else steps[-1]]
    return out


def a10_figure(results: Sequence[Any], cubes: Mapping[str, Any], path: str | Path, *,
               family: str = "Q", compressions: Sequence[str] = COMPRESSIONS,
               models: Mapping[str, Sequence[str]] | None = None) -> Path:
    """Draw the A10 figure: metrics under the three compressions, and the agreement table.

    Parameters
    ----------
    results : sequence of Result or results.json records
        Any results; the A10 verdict-agreement ones fill the table.
    cubes : mapping of dataset name to xarray.Dataset
        The cubes to draw from (``pico_pythia``, ``panel``; others are ignored).
    path : path
        PNG to write (folders created).
    family : str, default "Q"
        Operator family shown (the essay's).
    compressions : sequence of str
        Compressions along each panel's x axis (default :data:`COMPRESSIONS`).
    models : mapping of dataset name to model names, optional
        Models drawn per dataset (default :data:`FIGURE_MODELS`).

    Returns
    -------
    pathlib.Path

    Examples
    --------
    >>> import tempfile, pathlib
    >>> p = a10_figure([], {}, pathlib.Path(tempfile.mkdtemp()) / "A10.png")
    >>> p.stat().st_size > 0
    True
    """
    import matplotlib

    matplotlib.use("Agg", force=False)
    from matplotlib.figure import Figure

    path = Path(path)
    models = dict(FIGURE_MODELS if models is None else models)
    compressions = tuple(compressions)
    panels = [(ds, stage) for ds in models if ds in cubes for stage in ("init", "trained")]
    rows = agreement_rows(results)
    n_rows = max(1, len(panels))
    fig = Figure(figsize=(15, 2.6 * n_rows + 0.5), dpi=90)
    grid = fig.add_gridspec(n_rows, len(A10_METRICS) + 2)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        for i, (ds, stage) in enumerate(panels):
            for j, metric in enumerate(A10_METRICS):
                ax = fig.add_subplot(grid[i, j])
                per_comp = [_layer_values(cubes[ds], metric, c, stage, family, models[ds])
                            for c in compressions]
                for k, m in enumerate(models[ds]):
                    series = [pc.get(m) for pc in per_comp]
                    if all(s is None for s in series):
                        continue
                    n = max(len(s) for s in series if s is not None)
                    ys = np.array([s if s is not None else np.full(n, np.nan) for s in series])
                    color = f"C{k}"
                    for layer in range(n):
                        ax.plot(range(len(compressions)), ys[:, layer], color=color, alpha=0.35, lw=0.8)
                    with warnings.catch_warnings():  # a compression without data: NaN mean
                        warnings.simplefilter("ignore", RuntimeWarning)
                        mean = np.nanmean(ys, axis=1)
                    ax.plot(range(len(compressions)), mean, "o-", color=color, lw=2, ms=4, label=m)
                ax.set_xticks(range(len(compressions)))
                ax.set_xticklabels(compressions, fontsize=7)
                ax.set_title(f"{ds}, {stage}: {metric}", fontsize=8)
                ax.tick_params(labelsize=7)
                if j == 0 and i % 2 == 0:
                    ax.legend(fontsize=6, loc="best")
        ax = fig.add_subplot(grid[:, len(A10_METRICS):])
        ax.set_axis_off()
        if rows:
            cells = [[r["target"], r["dataset"], *(r.get(c, "-") for c in compressions), r["verdict"]]
                     for r in rows]
            colors = [["white", "white", *(_COLORS.get(v, "white") for v in row[2:])] for row in cells]
            table = ax.table(cellText=cells, cellColours=colors, loc="upper center",
                             colLabels=["target", "dataset", *compressions, "A10"])
            table.auto_set_font_size(False)
            table.set_fontsize(7)
            table.scale(1.0, 1.3)
            ax.set_title("verdict of each conclusion under each compression", fontsize=9)
        else:
            ax.text(0.5, 0.5, "no A10 verdict-agreement result", ha="center", va="center")
        fig.suptitle(f"A10: metrics and verdicts under the compressions (family {family}; "
                     f"lines join a layer across compressions)", fontsize=10)
        fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, format="png", metadata={"Software": None})
    return path


def write_a10(results: Sequence[Any], reports_dir: str | Path, datasets_dir: str | Path) -> str | None:
    """Draw ``figures/A10.png`` under ``reports_dir`` and return the report's A10 section
    (Markdown), or ``None`` when no A10 result is present.

    Examples
    --------
    >>> import tempfile
    >>> write_a10([], tempfile.mkdtemp(), tempfile.mkdtemp()) is None
    True
    """
    from lie_stats.datasets import DatasetError, load_dataset

    if not any(str(result_field(r, "id", "")).startswith("A10") for r in results):
        return None
    cubes = {}
    for name in FIGURE_MODELS:
        try:
            cubes[name] = load_dataset(name, datasets_dir)
        except (DatasetError, OSError):
            continue
    rel = "figures/A10.png"
    a10_figure(results, cubes, Path(reports_dir) / rel)
    takeaway = takeaway_markdown(results, cubes.get("panel"))
    return ("## A10: the projection-artifact control, read together\n\n"
            + (takeaway + "\n" if takeaway else "") + summary_markdown(results)
            + "\n" + agreement_markdown(results) + f"\n![A10]({rel})\n")


#: The calibrated signal the take-away reads (METRICS.md §4.6): more negative is more commuting
#: than the random-orientation null, 0 is the null's level.
SIGNAL = "commutator_z_mean"


def takeaway_markdown(results: Sequence[Any], cube: Any, *, family: str = "Q",
                      models: Sequence[str] = FIGURE_MODELS["panel"]) -> str:
    """A10's take-away in words, computed from the panel's trained weights: the share of the
    exact operators' calibrated signal (layer mean of ``commutator_z_mean``) each compression
    keeps, how it depends on k (the models whose adaptive k, their d_head, is not 64), and
    the A8 verdicts under each compression; "" when the cube lacks the metric.

    Examples
    --------
    >>> takeaway_markdown([], None)
    ''
    """
    if cube is None or SIGNAL not in getattr(cube, "data_vars", {}):
        return ""
    z = {c: {m: float(np.nanmean(v)) for m, v in _layer_values(cube, SIGNAL, c, "trained", family, models).items()
             if np.isfinite(v).any()}  # models of fewer layers are NaN-padded
         for c in COMPRESSIONS}
    kept = [z[c][m] / z["none"][m] for c in COMPRESSIONS[1:] for m in z[c]
            if m in z["none"] and z["none"][m] < 0 and math.isfinite(z[c][m])]
    if not kept:
        return ""
    d_head = dict(zip(cube[schema.MODEL].values.tolist(), cube["d_head"].values.tolist())) \
        if "d_head" in cube.coords else {}
    contrasts = [f"{md_text(m)} (d_head {int(d_head[m])}) {fmt(z['adaptive'][m])} under adaptive vs "
                 f"{fmt(z['fixed:64'][m])} under fixed:64"
                 for m in models if m in d_head and int(d_head[m]) != 64
                 and m in z["adaptive"] and m in z["fixed:64"]]
    text = (f"**Take-away.** On the panel's trained weights (family {family}), the compressed operators "
            f"keep {min(kept):.0%} to {max(kept):.0%} of the exact operators' calibrated signal (layer "
            f"mean of {SIGNAL}, model by model), and how much depends on k")
    text += (": " + "; ".join(contrasts) + "." if contrasts else ".")
    a8 = [r for r in agreement_rows(results) if str(r["target"]).split("-")[0] == "A8"]
    flips = [r for r in a8 if len({r.get(c) for c in COMPRESSIONS if r.get(c) not in (None, "-")}) > 1]
    if flips:
        text += " That is why A8's verdict changes with the compression (" + "; ".join(
            f"{r['target']} on {r['dataset']}: " + ", ".join(f"{c} {r[c]}" for c in COMPRESSIONS if c in r)
            for r in flips) + ")."
    elif a8:
        text += (" A8's verdict is the same under every compression here, its estimate is not ("
                 + "; ".join(f"{r['target']} on {r['dataset']}, {r['verdict']}: " + ", ".join(
                     f"{c} {fmt(r.get(f'{c} effect'))}" for c in COMPRESSIONS if c in r) for r in a8) + ").")
    return text + "\n"


def summary_markdown(results: Sequence[Any]) -> str:
    """Count of A10 verdicts per group of specs (``A10-<group>-<metric>-...``), skipped left out.

    Examples
    --------
    >>> recs = [{"id": "A10-eq-af-none-fixed64", "dataset": "d", "verdict": "refuted"},
    ...         {"id": "A10-eq-af-none-adaptive", "dataset": "d", "verdict": "supported"},
    ...         {"id": "A10-verdicts-A3", "dataset": "d", "verdict": "skipped"}]
    >>> print(summary_markdown(recs))
    | A10 specs | supported | refuted | inconclusive |
    |---|---|---|---|
    | A10-eq-af | 1 | 1 | 0 |
    <BLANKLINE>
    """
    groups: dict[str, dict[str, int]] = {}
    for r in results:
        ident, verdict = str(result_field(r, "id", "")), str(result_field(r, "verdict", ""))
        if not ident.startswith("A10-") or verdict == "skipped":
            continue
        parts = ident.split("-")
        key = "-".join(parts[:2]) if parts[1] == "verdicts" else "-".join(parts[:3])
        counts = groups.setdefault(key, {v: 0 for v in C.VERDICTS[:3]})
        counts[verdict] = counts.get(verdict, 0) + 1
    if not groups:
        return ""
    lines = ["| A10 specs | " + " | ".join(C.VERDICTS[:3]) + " |", "|---|---|---|---|"]
    lines += [f"| {k} | " + " | ".join(str(c[v]) for v in C.VERDICTS[:3]) + " |"
              for k, c in sorted(groups.items())]
    return "\n".join(lines) + "\n"


REPORT_SECTIONS = (ReportSection("A10", write_a10),)
