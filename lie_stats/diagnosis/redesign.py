"""Redesign: a result's power and false-positive rate at other sizes of its design.

The design diagnosis (:mod:`lie_stats.diagnosis`) tells how a spec's verdict rule behaves on
data simulated from its own cube at the cube's size. A redesign asks the next question: with
more (or fewer) runs, heads or checkpoints, or with another effect, how often would the rule
find the declared effect? Each simulation

1. resamples the spec's own selected data to the size asked (:func:`resample`, with
   replacement and within the structure: runs, the cube's ``model`` dimension, as whole runs
   with every layer, head and checkpoint of a run together; heads within each
   (model, layer), the same heads at every checkpoint; checkpoints of every run together,
   in time order), then
2. runs one simulation of :func:`lie_stats.diagnosis.diagnose_arrays` on that resample: the
   kind's own design breaks the tested effect (the null) and plants the spec's reference
   effect, and the kind's rule (and the declared magnitude) decides each, exactly as the
   diagnosis does.

``power`` is the share of planted simulations decided ``supported``, ``fpr`` that of null
simulations. Simulation ``k`` resamples with ``numpy.random.default_rng([seed, k])`` and runs
the diagnosis with seed ``seed + k``, the same at every size and every planted effect (common
random numbers: a power curve is smoother than its Monte Carlo error alone would make it).

A spec whose reference declares no figure to plant gets a minimum detectable effect
(:func:`minimum_detectable_effect`): the smallest planted effect on the kind's scale
(:func:`effect_knob`: a within-layer rho, a ratio, a rise over training) at which the power
reaches the target, found by bisection.

Resampling with replacement treats the observed runs, heads and checkpoints as the population
they are drawn from: beyond the observed count, a resample repeats units, so its power is
that of a study whose new units resemble the observed ones (optimistic when few were seen).
"""

from __future__ import annotations

import math
import os
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from ..errors import LieStatsError, SpecError
from . import Settings, design_for, diagnose_arrays
from ..spec.simulate import Arrays, NotPlantable

__all__ = ["AXES", "NotPlantable", "EffectKnob", "RedesignRow", "Redesign", "parse_redesign", "current_size",
           "resample", "effect_knob", "power_at", "minimum_detectable_effect", "redesign_arrays",
           "redesign_spec", "redesign_table", "plot_redesign", "TARGET_POWER"]

#: What a redesign can change: the runs (the cube's ``model``), the heads of each layer, the
#: checkpoints (``step``), or the planted effect (on the kind's scale).
AXES = ("runs", "heads", "steps", "effect")
_DIM = {"runs": "model", "heads": "head", "steps": "step"}
#: The power a design is asked to reach.
TARGET_POWER = 0.8
#: Bisection steps of the minimum detectable effect search (on a log scale from
#: ``MDE_FLOOR`` times the largest effect searched to it: a step of about 5 % after 7).
MDE_STEPS = 7
MDE_FLOOR = 1e-3


def parse_redesign(text: str) -> tuple[str, tuple[float, ...]]:
    """``"runs=2,4,8"`` -> ``("runs", (2, 4, 8))``: the axis and its sizes (counts as ints,
    effects as floats).

    >>> parse_redesign("runs=2, 4,8")
    ('runs', (2, 4, 8))
    >>> parse_redesign("effect=0.1,0.3")
    ('effect', (0.1, 0.3))
    """
    axis, sep, values = str(text).partition("=")
    axis = axis.strip()
    if not sep or axis not in AXES:
        raise LieStatsError(f"--redesign {text}: expected AXIS=V1,V2,... with AXIS one of "
                            f"{', '.join(AXES)} (e.g. runs=2,4,8,16).")
    out: list[float] = []
    for v in (t.strip() for t in values.split(",")):
        if not v:
            continue
        try:
            number = float(v)
        except ValueError:
            number = math.nan
        if axis != "effect" and not (math.isfinite(number) and number == int(number) and number >= 1):
            raise LieStatsError(f"--redesign {text}: {v!r} is not a positive whole number of {axis}.")
        if axis == "effect" and not math.isfinite(number):
            raise LieStatsError(f"--redesign {text}: {v!r} is not a number.")
        out.append(int(number) if axis != "effect" else number)
    if not out:
        raise LieStatsError(f"--redesign {text}: no sizes given (e.g. {axis}=2,4,8).")
    return axis, tuple(sorted(set(out)))


# ----------------------------------------------------------------------------- resampling


def current_size(arrays: Arrays, axis: str) -> int | None:
    """The count of ``axis`` (runs, heads per layer, checkpoints) in the selection: the
    largest size of its dimension over the roles (None when no role has it)."""
    dim = _DIM[axis]
    sizes = [da.sizes[dim] for da in arrays.values() if hasattr(da, "sizes") and dim in da.dims]
    return max(sizes) if sizes else None


def _role_arrays(arrays: Arrays) -> dict[str, Any]:
    return {r: da for r, da in arrays.items() if hasattr(da, "dims")}


def _resample_runs(arrays: Arrays, n: int, rng: np.random.Generator) -> Arrays:
    have = {r: da for r, da in _role_arrays(arrays).items() if "model" in da.dims}
    if not have:
        raise NotPlantable("no role of the selection has runs (a model dimension) to resample")
    first = next(iter(have.values()))
    models = [str(m) for m in first["model"].values]
    for role, da in have.items():
        if [str(m) for m in da["model"].values] != models:
            raise NotPlantable(f"the roles select different runs ({role!r}: "
                               f"{[str(m) for m in da['model'].values]}, not {models})")
    pick = rng.integers(0, len(models), size=n)
    names = [f"{models[i]}~{j}" for j, i in enumerate(pick)]
    out = dict(arrays)
    for role, da in have.items():
        out[role] = da.isel(model=pick).assign_coords(model=names)
    return out


def _resample_heads(arrays: Arrays, n: int, rng: np.random.Generator) -> Arrays:
    import xarray as xr

    have = {r: da for r, da in _role_arrays(arrays).items() if "head" in da.dims}
    if not have:
        raise NotPlantable("no role of the selection has heads to resample")
    if any("head_j" in da.dims for da in have.values()):
        raise NotPlantable("pairwise (head, head_j) selections have no head resampling here")
    picks: dict[tuple, np.ndarray] = {}
    out = dict(arrays)
    for role, da in have.items():
        lead = [d for d in ("model", "layer") if d in da.dims]
        rest = [d for d in da.dims if d not in (*lead, "head")]
        arranged = da.transpose(*lead, "head", *rest)
        values = np.asarray(arranged.values, dtype=float)
        new = np.full((*values.shape[: len(lead)], n, *values.shape[len(lead) + 1:]), np.nan)
        for ix in np.ndindex(*values.shape[: len(lead)]):
            key = tuple(str(arranged[d].values[i]) for d, i in zip(lead, ix))
            if key not in picks:
                block = values[ix].reshape(values.shape[len(lead)], -1)
                alive = np.flatnonzero(np.isfinite(block).any(axis=1))
                picks[key] = (rng.choice(alive, size=n, replace=True) if alive.size
                              else np.zeros(n, dtype=int))
            new[ix] = values[ix][picks[key]]
        coords = {c: arranged.coords[c] for c in arranged.coords if "head" not in arranged.coords[c].dims}
        coords["head"] = np.arange(n)
        out[role] = xr.DataArray(new, dims=arranged.dims, coords=coords, name=da.name,
                                 attrs=da.attrs).transpose(*da.dims)
    return out


def _unique_steps(steps: np.ndarray) -> np.ndarray:
    """Sorted steps with repeats moved apart by a fraction of the smallest gap, in order.

    >>> _unique_steps(np.array([0, 10, 10, 20])).tolist()
    [0.0, 10.0, 12.0, 20.0]
    """
    steps = np.asarray(steps, dtype=float)
    distinct = np.unique(steps)
    gap = float(np.min(np.diff(distinct))) if distinct.size > 1 else 1.0
    out = steps.copy()
    for value in distinct:
        where = np.flatnonzero(steps == value)
        out[where] = value + gap * np.arange(where.size) / (where.size + 3)
    return out


def _resample_steps(arrays: Arrays, n: int, rng: np.random.Generator) -> Arrays:
    have = {r: da for r, da in _role_arrays(arrays).items() if "step" in da.dims}
    if not have:
        raise NotPlantable("no role of the selection keeps checkpoints (step='all') to resample")
    first = next(iter(have.values()))
    steps = np.asarray(first["step"].values)
    pick = np.sort(rng.integers(0, steps.size, size=n))
    chosen = steps[pick]
    new_steps = chosen if np.unique(chosen).size == chosen.size else _unique_steps(chosen)
    out = dict(arrays)
    for role, da in have.items():
        if not np.array_equal(np.asarray(da["step"].values), steps):
            raise NotPlantable(f"the roles select different checkpoints ({role!r})")
        out[role] = da.isel(step=pick).assign_coords(step=new_steps)
    return out


def resample(arrays: Arrays, size: Mapping[str, int], rng: np.random.Generator) -> Arrays:
    """``arrays`` (one selection per role) resampled with replacement to ``size`` (``runs``,
    ``heads``, ``steps``; each optional), within the structure: whole runs (renamed
    ``<run>~<j>`` so that the kinds see distinct runs), heads within each (model, layer) (the
    same heads in every role and at every checkpoint), sorted checkpoints of every run and
    layer together (a repeated checkpoint is moved a fraction of the smallest gap later,
    so that steps stay distinct and in order).

    Raises NotPlantable when the selection has no such structure (the reason says which).

    >>> import xarray as xr
    >>> da = xr.DataArray(np.arange(12.0).reshape(2, 2, 3), dims=("model", "layer", "head"),
    ...                   coords={"model": ["a", "b"]})
    >>> out = resample({"x": da}, {"runs": 3, "heads": 5}, np.random.default_rng(0))
    >>> out["x"].sizes["model"], out["x"].sizes["head"], len(set(out["x"]["model"].values.tolist()))
    (3, 5, 3)
    """
    out = dict(arrays)
    for axis, fn in (("runs", _resample_runs), ("heads", _resample_heads), ("steps", _resample_steps)):
        if size.get(axis) is not None:
            out = fn(out, int(size[axis]), rng)
    return out


# ----------------------------------------------------------------------------- planted effect


@dataclass(frozen=True)
class EffectKnob:
    """How a kind's planted effect is set: ``spec_for(spec, t)`` is the spec whose reference
    plants magnitude ``t`` (``t >= 0``, away from no effect in the predicted direction),
    ``value(t)`` that effect on the kind's scale, ``t_of(value)`` the inverse, ``hi`` the
    largest ``t`` searched, ``what`` the scale in words."""

    spec_for: Callable[[Any, float], Any]
    value: Callable[[float], float]
    t_of: Callable[[float], float]
    hi: float
    what: str


def _sign(spec: Any) -> float:
    return -1.0 if spec.prediction.direction in ("negative", "below") else 1.0


def _with_reference(spec: Any, drop: Sequence[str], **figures: float) -> Any:
    from ..spec.parts import replace

    reference = {k: v for k, v in spec.reference.items() if k not in drop}
    reference.update(figures)
    return replace(spec, reference=reference)


def effect_knob(spec: Any, arrays: Arrays | None = None) -> EffectKnob | None:
    """The planted-effect scale of the spec's kind, or None when none is defined here:
    the within-layer rho (correlation, partial_correlation, replication, mixed_model); the
    ratio away from the prediction's value (or 1) (enrichment, boundary_ratio,
    head_enrichment_excess, ratio_of_changes); the rise ``last - first`` over training
    (trend, searched up to twice the range of the selected values)."""
    kind, sign = spec.test, _sign(spec)
    if kind in ("correlation", "partial_correlation", "replication", "mixed_model"):
        return EffectKnob(lambda s, t: _with_reference(s, ("r", "rho", "slope"), rho=sign * t),
                          lambda t: sign * t, lambda v: abs(v), 0.95, "within-layer rho")
    if kind in ("enrichment", "boundary_ratio", "head_enrichment_excess", "ratio_of_changes"):
        value = spec.prediction.value
        base = float(value) if isinstance(value, (int, float)) and value and value > 0 else 1.0
        keys = ("ratio", "ratio_low", "head_enrichment", "layer_enrichment")
        return EffectKnob(lambda s, t: _with_reference(s, keys, ratio=base * math.exp(sign * t)),
                          lambda t: base * math.exp(sign * t),
                          lambda v: abs(math.log(v / base)), math.log(20.0), "ratio")
    if kind == "trend":
        span = 1.0
        if arrays is not None and "values" in arrays:
            v = np.asarray(arrays["values"].values, dtype=float)
            v = v[np.isfinite(v)]
            if v.size and np.ptp(v) > 0:
                span = float(np.ptp(v))
        return EffectKnob(lambda s, t: _with_reference(s, ("first", "last"), first=0.0, last=sign * t),
                          lambda t: sign * t, lambda v: abs(v), 2.0 * span,
                          "rise over training (last - first)")
    return None


def _declares_effect(spec: Any, arrays: Arrays) -> tuple[bool, str]:
    """Whether the kind's design plants an effect from this spec's declaration (and why not)."""
    design = design_for(spec.kind)
    if design is None:
        return False, f"no simulator for kind {spec.test}"
    if design.plant is None:
        return False, f"no way to plant an effect is defined for kind {spec.test}"
    try:
        design.plant(design.null(arrays, spec, np.random.default_rng(0)), spec, np.random.default_rng(0))
    except NotPlantable as e:
        return False, str(e)
    return True, ""


# ----------------------------------------------------------------------------- power


def power_at(spec: Any, arrays: Arrays, settings: Settings, size: Mapping[str, int] | None = None,
             *, dataset: str = "", progress: Callable[[int], None] | None = None) -> dict[str, Any]:
    """Power and FPR of ``spec`` at ``size`` (``runs``/``heads``/``steps``; none: as it is):
    ``settings.n_sims`` resamples, each diagnosed once (:func:`diagnose_arrays`).

    Returns ``power``, ``fpr``, ``refuted_planted``, ``refuted_null`` (None where no
    simulation gave the figure), ``n_sims``, ``n_planted`` and ``reason`` (``""``, or why a
    figure is None).
    """
    power, fpr, ref_p, ref_n, reasons = [], [], [], [], []
    one = dict(n_sims=1, n_perm=settings.n_perm, n_boot=settings.n_boot)
    for k in range(settings.n_sims):
        rng = np.random.default_rng([settings.seed, k])
        try:
            sample = resample(arrays, size or {}, rng)
        except NotPlantable as e:
            return _figures([], [], [], [], settings, f"cannot resample: {e}")
        try:
            d = diagnose_arrays(spec, sample, Settings(seed=settings.seed + k, **one), dataset=dataset)
        except SpecError as e:
            reasons.append(f"the kind rejects a resample: {e}")
            d = {"fpr": None, "power": None}
        for flags, key in ((fpr, "fpr"), (power, "power"), (ref_n, "refuted_null"),
                           (ref_p, "refuted_planted")):
            if d.get(key) is not None:
                flags.append(float(d[key]))
        if d.get("power") is None and d.get("reason"):
            reasons.append(str(d["reason"]))
        if progress is not None:
            progress(1)
    reason = max(set(reasons), key=reasons.count) if reasons and not power else ""
    return _figures(power, fpr, ref_p, ref_n, settings, reason)


def _figures(power: list[float], fpr: list[float], ref_p: list[float], ref_n: list[float],
             settings: Settings, reason: str) -> dict[str, Any]:
    def share(v: list[float]) -> float | None:
        return float(np.mean(v)) if v else None

    return {"power": share(power), "fpr": share(fpr), "refuted_planted": share(ref_p),
            "refuted_null": share(ref_n), "n_sims": settings.n_sims, "n_planted": len(power),
            "reason": reason}


def minimum_detectable_effect(spec: Any, arrays: Arrays, settings: Settings,
                              size: Mapping[str, int] | None = None, *, target: float = TARGET_POWER,
                              steps: int = MDE_STEPS, dataset: str = "",
                              progress: Callable[[int], None] | None = None) -> dict[str, Any]:
    """The smallest planted effect (:func:`effect_knob`) whose power at ``size`` reaches
    ``target``: the power at the knob's largest effect ``hi`` first (not reached there:
    ``mde`` None and the reason), then ``steps`` geometric bisections of
    ``[MDE_FLOOR * hi, hi]``, each keeping the half whose upper end has power >= target.
    Returns ``mde`` (on the kind's scale: the smallest effect tried that reached the target,
    so an upper bound within a factor ``(1 / MDE_FLOOR) ** (2 ** -steps)``),
    ``power`` there, ``fpr`` (under the null, from the largest effect's run), ``scale`` and
    ``reason``."""
    knob = effect_knob(spec, arrays)
    if knob is None:
        return {"mde": None, "power": None, "fpr": None, "scale": "",
                "reason": f"no planted-effect scale is defined for kind {spec.test}"}
    top = power_at(knob.spec_for(spec, knob.hi), arrays, settings, size, dataset=dataset,
                   progress=progress)
    out = {"mde": None, "power": top["power"], "fpr": top["fpr"], "scale": knob.what,
           "reason": top["reason"]}
    if top["power"] is None:
        return out
    if top["power"] < target:
        out["reason"] = (f"power {top['power']:.2f} < {target} even at {knob.what} "
                         f"{knob.value(knob.hi):.3g}")
        return out
    lo, hi, at_hi = knob.hi * MDE_FLOOR, knob.hi, top["power"]
    for _ in range(steps):
        mid = math.sqrt(lo * hi)
        p = power_at(knob.spec_for(spec, mid), arrays, settings, size, dataset=dataset,
                     progress=progress)["power"]
        if p is not None and p >= target:
            hi, at_hi = mid, p
        else:
            lo = mid
    out.update(mde=knob.value(hi), power=at_hi)
    return out


# ----------------------------------------------------------------------------- one result


@dataclass
class RedesignRow:
    """One size of one result: the size, power and FPR (declared effect, or ``effect=``),
    or the minimum detectable effect (undeclared), and the reason for a missing figure."""

    size: float
    power: float | None = None
    fpr: float | None = None
    mde: float | None = None
    reason: str = ""


@dataclass
class Redesign:
    """A result's redesign over one axis: key, kind, the axis, its current size, the rows,
    what is reported (``"power"`` at the declared effect, or ``"mde"``), the effect scale."""

    key: str
    test: str
    axis: str
    current: float | None
    rows: list[RedesignRow] = field(default_factory=list)
    mode: str = "power"
    scale: str = ""
    reason: str = ""
    n_sims: int = 0

    def smallest(self, target: float = TARGET_POWER) -> str:
        """The smallest size whose power reaches ``target``, in words."""
        if self.mode != "power" or not self.rows:
            return ""
        for r in self.rows:
            if r.power is not None and r.power >= target:
                return f"smallest {self.axis} with power >= {target}: {_num(r.size)}"
        return f"power >= {target} not reached up to {self.axis} {_num(self.rows[-1].size)}"


def _num(v: float | None) -> str:
    if v is None:
        return "-"
    return f"{int(v)}" if float(v) == int(v) and abs(v) >= 1 else f"{v:.3g}"


def redesign_arrays(spec: Any, arrays: Arrays, axis: str, sizes: Sequence[float],
                    settings: Settings = Settings(n_sims=100), *, dataset: str = "", key: str = "",
                    progress: Callable[[int], None] | None = None,
                    mde_steps: int = MDE_STEPS) -> Redesign:
    """The redesign of ``spec`` on its selected ``arrays`` over ``axis`` (:data:`AXES`):
    for a count axis, the power and FPR at each size when the spec's reference gives an
    effect to plant, else the minimum detectable effect at each size; for ``effect``, the
    power and FPR with each effect planted at the current size. ``mde_steps``: the
    bisections of :func:`minimum_detectable_effect`."""
    if axis not in AXES:
        raise LieStatsError(f"redesign: axis {axis!r} is not one of {', '.join(AXES)}.")
    key = key or f"{spec.id}::{dataset}"
    out = Redesign(key, spec.test, axis, None if axis == "effect" else current_size(arrays, axis),
                   n_sims=settings.n_sims)
    declared, why = _declares_effect(spec, arrays)
    if axis != "effect" and out.current is None:
        out.reason = f"the selection has no {_DIM[axis]} dimension: its {axis} cannot be resampled"
        return out
    knob = effect_knob(spec, arrays)
    if axis == "effect":
        if knob is None:
            out.reason = f"no planted-effect scale is defined for kind {spec.test}"
            return out
        out.scale = knob.what
        for value in sizes:
            f = power_at(knob.spec_for(spec, knob.t_of(value)), arrays, settings, None,
                         dataset=dataset, progress=progress)
            out.rows.append(RedesignRow(value, f["power"], f["fpr"], reason=f["reason"]))
        return out
    if declared:
        for n in sizes:
            f = power_at(spec, arrays, settings, {axis: int(n)}, dataset=dataset, progress=progress)
            out.rows.append(RedesignRow(n, f["power"], f["fpr"], reason=f["reason"]))
        return out
    if knob is None:
        out.reason = f"{why}; no planted-effect scale for a minimum detectable effect"
        return out
    out.mode, out.scale = "mde", knob.what
    for n in sizes:
        m = minimum_detectable_effect(spec, arrays, settings, {axis: int(n)}, dataset=dataset,
                                      progress=progress, steps=mde_steps)
        out.rows.append(RedesignRow(n, m["power"], m["fpr"], m["mde"], m["reason"]))
    return out


def redesign_spec(spec: Any, dataset: str, axis: str, sizes: Sequence[float],
                  datasets_dir: str | os.PathLike = "datasets",
                  settings: Settings = Settings(n_sims=100), *,
                  progress: Callable[[int], None] | None = None, cubes: Any = None) -> Redesign:
    """:func:`redesign_arrays` on the spec's selection from ``dataset``'s cube (a reason
    instead of rows when the data are absent or the selection skips); the cube is read
    from ``cubes`` (a :class:`lie_stats.datasets.CubeCache`) when given."""
    from ..datasets import card_cubes, find_dataset
    from ..spec import Skip, select

    key = f"{spec.id}::{dataset}"
    card = find_dataset(dataset, datasets_dir)
    if card.missing:
        return Redesign(key, spec.test, axis, None,
                        reason=f"dataset {dataset!r}: {card.state}, nothing to resample")
    cube = card_cubes(card, cubes)
    try:
        arrays = {role: select(sel, cube, where=f"{spec.id} selection[{role!r}]")
                  for role, sel in spec.selection.items()}
    except Skip as e:
        return Redesign(key, spec.test, axis, None, reason=f"skipped: {e}")
    try:
        return redesign_arrays(spec, arrays, axis, sizes, settings, dataset=dataset, key=key,
                               progress=progress)
    except (SpecError, NotPlantable) as e:
        return Redesign(key, spec.test, axis, None, reason=f"the kind rejects its selection: {e}")


# ----------------------------------------------------------------------------- output


def redesign_table(done: Sequence[Redesign], target: float = TARGET_POWER) -> str:
    """The redesigns as plain text: per result, a line per size (power and FPR, or the
    minimum detectable effect), then the smallest size reaching ``target``."""
    from .._io import terminal_safe

    def fmt(v: Any) -> str:
        return "-" if v is None else f"{v:.2f}"

    lines = []
    for r in done:
        now = "" if r.current is None else f" (now {_num(r.current)} {r.axis})"
        lines.append(f"{terminal_safe(r.key, one_line=True)}  [{r.test}]{now}")
        if not r.rows:
            lines.append(f"  no redesign: {terminal_safe(r.reason, one_line=True)}")
            continue
        if r.mode == "mde":
            lines.append(f"  no declared effect to plant: minimum detectable {r.scale} at power {target}")
            lines.append(f"  {r.axis:>8s} {'mde':>8s} {'power':>6s} {'fpr':>6s}  note")
            for row in r.rows:
                lines.append(f"  {_num(row.size):>8s} {_num(row.mde) if row.mde is not None else '-':>8s} "
                             f"{fmt(row.power):>6s} {fmt(row.fpr):>6s}  "
                             f"{terminal_safe(row.reason, one_line=True)}")
            continue
        label = r.axis if r.axis != "effect" else (r.scale or "effect")[:8]
        lines.append(f"  {label:>8s} {'power':>6s} {'fpr':>6s}  note")
        for row in r.rows:
            lines.append(f"  {_num(row.size):>8s} {fmt(row.power):>6s} {fmt(row.fpr):>6s}  "
                         f"{terminal_safe(row.reason, one_line=True)}")
        if r.axis != "effect":
            lines.append(f"  {r.smallest(target)}")
    return "\n".join(lines)


def plot_redesign(done: Sequence[Redesign], path: str | os.PathLike,
                  target: float = TARGET_POWER) -> Path | None:
    """The power curves (power against size, with the binomial Monte Carlo error as bars,
    the FPR dashed, the target dotted) as a PNG at ``path``; the minimum detectable effect
    against size for results without a declared effect (second panel). None when no result
    has a figure to plot."""
    import warnings

    import matplotlib

    matplotlib.use("Agg", force=False)
    from matplotlib.figure import Figure

    power = [r for r in done if r.mode == "power" and any(x.power is not None for x in r.rows)]
    mde = [r for r in done if r.mode == "mde" and any(x.mde is not None for x in r.rows)]
    if not power and not mde:
        return None
    panels = [p for p in (power, mde) if p]
    fig = Figure(figsize=(6.4 * len(panels), 4.2))
    axes = fig.subplots(1, len(panels), squeeze=False)[0]
    for ax, group in zip(axes, panels):
        for r in group:
            xs = [x.size for x in r.rows]
            if group is power:
                ps = np.array([np.nan if x.power is None else x.power for x in r.rows])
                err = np.sqrt(np.clip(ps * (1 - ps), 0, None) / max(1, r.n_sims))
                line = ax.errorbar(xs, ps, yerr=err, marker="o", capsize=3, label=r.key)
                fs = [np.nan if x.fpr is None else x.fpr for x in r.rows]
                ax.plot(xs, fs, linestyle="--", color=line[0].get_color(), alpha=0.6)
            else:
                ms = [np.nan if x.mde is None else abs(x.mde) for x in r.rows]
                ax.plot(xs, ms, marker="o", label=f"{r.key} ({r.scale})")
        if group is power:
            ax.axhline(target, color="grey", linestyle=":", label=f"power {target}")
            ax.set_ylim(-0.03, 1.03)
            ax.set_ylabel("share supported (solid: effect planted; dashed: null)")
            ax.set_title("power by design size")
        else:
            ax.set_ylabel(f"minimum detectable effect at power {target} (|effect|)")
            ax.set_title("minimum detectable effect by design size")
        axis = group[0].axis
        ax.set_xlabel(axis if axis != "effect" else (group[0].scale or "planted effect"))
        if axis != "effect":
            ax.set_xscale("log", base=2)
            ticks = sorted({x.size for r in group for x in r.rows})
            ax.set_xticks(ticks, [_num(t) for t in ticks])
            ax.minorticks_off()
        ax.legend(fontsize=7)
    fig.tight_layout()
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.tmp")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        fig.savefig(tmp, format="png", dpi=110)
    os.replace(tmp, path)
    return path
