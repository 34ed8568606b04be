"""Evaluation: a spec on a cube (:func:`evaluate_cube`) or on its datasets (:func:`evaluate`).

One evaluation selects each role's data (:func:`~lie_stats.spec.selection.select`), runs the
spec's test kind on them and applies the kind's decision rule; then it does the same for
every analysis choice of the spec's specification curve (each choice with its estimand,
and dropped with the reason when it is inconclusive by construction: :func:`degenerate`).
Two outcomes are
kept apart: a dataset whose cube is absent gives ``skipped`` (with the reason, and the card's
build command); a cube that is present but holds nothing the main selection asks for is an
error (:class:`~lie_stats.spec.selection.SelectionError`: the declaration must change, not
the data); an analysis choice the cube holds nothing for is skipped in the specification
curve. Input on which the test is undefined (constant vectors, too few heads) gives
``inconclusive`` with the statistics' message as the reason.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from .. import columns as C
from ..errors import SpecError
from .declaration import HypothesisSpec
from .magnitude import decide, finding
from .parts import jsonable, spec_error
from .results import Result, is_p_column, json_number, result_for
from .rules import Decision
from .selection import CONTROLS_ATTR, SelectionError, Skip, check_cube, select
from .verdict import decide_arrays
from .validation import check_datasets

__all__ = ["run_once", "evaluate_cube", "evaluate", "degenerate", "decide_in_family"]


def run_once(spec: HypothesisSpec, cube: Any, dataset: str, *, main: bool = True, cube_name: str = "") -> Result:
    """Evaluate a spec's main analysis (no specification curve) on one cube, or with
    ``main=False`` one analysis choice of its curve.

    Data the cube does not hold: the main analysis raises :class:`SelectionError` naming the
    spec, the dataset and what the selection lacks; a choice is ``skipped`` with the reason.

    The kind decides the direction; :mod:`lie_stats.spec.magnitude` then compares the
    estimate with the declared magnitude and combines the two into the verdict; the result
    gets its ``magnitude``, ``finding`` and ``multiplicity`` fields (the family's adjusted p
    is filled in across the run by :func:`lie_stats.spec.results.assign_multiplicity`).
    """
    where = f"{spec.module}: HypothesisSpec {spec.id!r} on dataset {dataset!r}"
    try:
        arrays = {role: select(sel, cube, where=f"{where}, selection[{role!r}]")
                  for role, sel in spec.selection.items()}
    except Skip as e:
        if main:
            raise SelectionError(
                f"{where}: the selection matches nothing in the cube{' ' + cube_name if cube_name else ''}, "
                f"which is present: {e}. Fix "
                f"the declaration's selection (lie-stats info CUBE lists what the cube holds); "
                f"rebuilding the data cannot help.") from None
        return _finished(result_for(spec, dataset, C.SKIPPED, str(e)), C.SKIPPED)
    try:
        d = decide_arrays(spec, arrays, spec.resolved_params(), dataset=dataset)
    except SpecError as e:
        raise SpecError(f"{where}: {e}") from e
    if d.undefined:
        res = result_for(spec, dataset, C.INCONCLUSIVE, f"the test is undefined on these data: {d.reason}")
        return _finished(res.evolve(data=d.data, undefined=True), C.INCONCLUSIVE)
    row = d.row
    res = result_for(spec, dataset, d.verdict, d.reason)
    decided_by = _decided_by(spec.kind, row, d.ctx, d.verdict, d.direction, "raw")
    res = res.evolve(**{col: row[col] for col in C.STAT_COLUMNS},
                     extra={k: v for k, v in row.items() if k not in C.STAT_COLUMNS},
                     data=d.data, magnitude=d.magnitude,
                     multiplicity={**res.multiplicity, "decided_by": decided_by})
    return _finished(res, d.direction)


def decide_in_family(spec: HypothesisSpec, result: Result, p_holm: float | None,
                     family_size: int) -> Result:
    """``result`` decided as a member of its multiplicity family (rule in
    :mod:`lie_stats.spec.results`). A family's primary, or a family of one test, keeps its
    decision at alpha. Any other member is decided again by its kind's rule and the
    magnitude (:func:`lie_stats.spec.magnitude.decide`) at the level Holm's procedure gives
    it: ``alpha * p / p_holm`` (``alpha / family_size`` when the result has no p), so that its
    ``p_value`` passes exactly when ``p_holm`` is below alpha and every other p the rule reads
    (the refuting tail) is held to the same level; a verdict still ``supported`` with
    ``p_holm`` at or above alpha becomes ``inconclusive``. The numbers the result reports stay
    the raw ones; ``multiplicity`` gains ``decided_by``, ``family_size``, ``primary`` and the
    ``level`` used. A skipped result, or one on whose data the test is undefined, is
    returned with the family noted.

    Examples
    --------
    >>> import numpy as np, xarray as xr
    >>> from lie_stats.spec import HypothesisSpec, Prediction, Select
    >>> rng = np.random.default_rng(0)
    >>> dims = ("model", "step", "layer", "head")
    >>> x = rng.normal(size=(1, 2, 4, 6))
    >>> cube = xr.Dataset({"head_contribution": (dims, x), "change_from_init": (dims, -x + rng.normal(size=x.shape))},
    ...                   {"model": ["m"], "step": [0, 1], "layer": np.arange(4), "head": np.arange(6)})
    >>> s = HypothesisSpec(id="X1-b", claim="c", source="s", datasets=("toy",),
    ...     selection={"x": Select("head_contribution", step="first"), "y": Select("change_from_init")},
    ...     test="correlation", params={"n_perm": 999, "n_boot": 200}, prediction=Prediction("positive"),
    ...     gate="report")
    >>> r = evaluate_cube(s, cube)
    >>> r.verdict, r.p_value
    ('supported', 0.006)
    >>> held = decide_in_family(s, r, 10 * r.p_value, 10)  # Holm's factor for the smallest of 10
    >>> held.verdict, held.multiplicity["decided_by"], held.p_value == r.p_value
    ('inconclusive', 'none', True)
    >>> decide_in_family(s, r, 4 * r.p_value, 4).multiplicity["decided_by"]
    'holm'
    >>> decide_in_family(s, r, r.p_value, 1).multiplicity["decided_by"]
    'raw'
    """
    primary = bool(getattr(spec, "primary", False))
    base = {**result.multiplicity, "family_size": int(family_size), "primary": primary}
    if result.verdict in (C.SKIPPED, "out_of_scope") or result.undefined:
        return result.evolve(multiplicity=base)
    ctx = _decision(spec)
    alpha = ctx.alpha
    if not (family_size > 1 and not primary):
        # decided at alpha, as run_once decided it: the verdict stands, only the label is the family's
        decided_by = result.multiplicity.get("decided_by", "none")
        if decided_by == "raw" and primary and family_size > 1:
            decided_by = "primary"
        return result.evolve(multiplicity={**base, "decided_by": decided_by, "level": float(alpha)})
    # any other member: decided again at Holm's level
    row = {**{c: getattr(result, c) for c in C.STAT_COLUMNS}, **result.extra}
    adjusted = p_holm is not None and math.isfinite(float(p_holm))
    p = float(result.p_value)
    level = (alpha * p / float(p_holm) if adjusted and p > 0 and float(p_holm) > 0
             else alpha / family_size)
    ctx = Decision(ctx.prediction, level, ctx.reference, {**ctx.params, "alpha": level})
    kind = spec.kind
    verdict, reason, direction, magnitude = decide(kind, row, ctx, result.dataset)
    decided_by = _decided_by(kind, row, ctx, verdict, direction, "holm")
    if verdict == C.SUPPORTED and adjusted and float(p_holm) >= alpha:
        verdict, direction, decided_by = C.INCONCLUSIVE, C.INCONCLUSIVE, "holm"
        reason = (f"the family's Holm-adjusted p {float(p_holm):.3g} is not below alpha "
                  f"{alpha:g} (before the family: {reason})")
    reason += (f" (decided at the family's Holm level {ctx.alpha:.3g}: family "
               f"{base.get('family')!r} of {family_size} tests)")
    res = result.evolve(verdict=verdict, reason=reason, magnitude=magnitude,
                        multiplicity={**base, "decided_by": decided_by, "level": float(ctx.alpha)})
    return _finished(res, direction)


def _decision(spec: HypothesisSpec, params: Mapping[str, Any] | None = None) -> Decision:
    """The decision context of ``spec`` at its declared alpha (``params``: its resolved
    parameters, when the caller has them already)."""
    params = spec.resolved_params() if params is None else params
    return Decision(spec.prediction, float(params["alpha"]), dict(spec.reference), params)


def _decided_by(kind: Any, row: dict[str, Any], ctx: Decision, verdict: str, direction: str,
                how: str) -> str:
    """``how`` (``"raw"``, ``"holm"``, ``"primary"``) when a p-value decided the verdict at
    ``ctx``; ``"none"`` when the magnitude's interval overrode the direction (``verdict`` is
    not ``direction``) or the rule reads no p (:func:`_p_decides`)."""
    if verdict != direction or not _p_decides(kind, row, ctx, direction):
        return "none"
    return how


def _p_decides(kind: Any, row: dict[str, Any], ctx: Decision, verdict: str) -> bool:
    """Whether a p-value decided the verdict: the rule gives another verdict when every
    p-value column of the row is removed (a rule that reads only intervals gives the same)."""
    if verdict == C.INCONCLUSIVE:
        return False
    blind = {k: (math.nan if is_p_column(k) else v) for k, v in row.items()}
    try:
        return kind.decide(blind, ctx)[0] != verdict
    except (TypeError, ValueError, KeyError):  # a rule that needs its p to run at all
        return True


def _finished(res: Result, direction: str) -> Result:
    """Fill in the sentence of a result from its numbers (after its verdict is final)."""
    return res.evolve(finding=finding(direction, res.verdict, res.reason,
                                      {c: getattr(res, c) for c in C.STAT_COLUMNS},
                                      res.prediction, res.magnitude))


def evaluate_cube(spec: HypothesisSpec, cube: Any, *, dataset: str = "<cube>",
                  controls: Sequence[str] = (), cube_name: str = "") -> Result:
    """Evaluate a spec on one cube (its main analysis and its specification curve).

    Parameters
    ----------
    spec : HypothesisSpec
    cube : xarray.Dataset
        A cube following DESIGN.md's contract.
    dataset : str
        The dataset's name, recorded in the result.
    controls : sequence of str
        Models of the cube that are controls, not further samples (e.g. quantized copies of
        another model, kept for a noise floor): a selection that names no models leaves
        them out; one that names them gets them (the dataset card's ``controls``).
    cube_name : str
        The cube's files, named in a :class:`SelectionError`.

    Returns
    -------
    Result

    Raises
    ------
    SelectionError
        The main selection matches nothing in the cube (a variable, layer, family or
        projection it lacks, or no finite value).
    SpecError
        The selection names a model or step the cube lacks.

    Examples
    --------
    >>> import numpy as np, xarray as xr
    >>> rng = np.random.default_rng(0)
    >>> x = rng.normal(size=(1, 2, 4, 6))
    >>> dims = ("model", "step", "layer", "head")
    >>> coords = {"model": ["m"], "step": [0, 100], "layer": np.arange(4), "head": np.arange(6)}
    >>> y = -x[:, :1] + 0.1 * rng.normal(size=x.shape)
    >>> cube = xr.Dataset({"head_contribution": (dims, x), "change_from_init": (dims, y)}, coords)
    >>> from lie_stats.spec import HypothesisSpec, Prediction, Select
    >>> s = HypothesisSpec(id="X1", claim="c", source="s", datasets=("toy",),
    ...     selection={"x": Select("head_contribution", step="first"),
    ...                "y": Select("change_from_init")}, test="correlation",
    ...     params={"n_perm": 999, "n_boot": 200}, prediction=Prediction("negative"), gate="report")
    >>> evaluate_cube(s, cube).verdict
    'supported'
    """
    check_cube(cube, dataset)
    cube = _without_controls(cube, controls)
    main = run_once(spec, cube, dataset, cube_name=cube_name)
    alpha = float(spec.resolved_params()["alpha"])
    curve: list[dict[str, Any]] = []
    for choice in spec.choice_grid():
        sub_spec = spec.with_choice(choice)
        sub = run_once(sub_spec, cube, dataset, main=False)
        entry = {
            "choice": jsonable(choice), "verdict": sub.verdict, "reason": sub.reason,
            "estimand": sub.estimand,
            **{c: json_number(getattr(sub, c)) for c in C.STAT_COLUMNS},
            "magnitude": sub.magnitude.get("status"),
        }
        why = degenerate(sub, alpha)
        if why:
            entry["dropped"] = why
        curve.append(entry)
    return main.evolve(spec_curve=curve)


def degenerate(res: Result, alpha: float) -> str:
    """Why an analysis choice cannot decide, whatever its data show ("" when it can).

    Two cases, both read from the result: the test is undefined on the choice's data (too
    few heads or pairs, constant input), or its permutation null is enumerated exactly with
    so few arrangements that even the smallest attainable p, ``1 / (n_perm + 1)``, is not
    below alpha (e.g. a boundary pair among the 6 pairs of 4 layers: 1/6). Such a choice
    cannot decide, so a share over choices would be padded with it.

    >>> r = Result(id="X", claim="c", source="s", dataset="d", verdict="inconclusive", reason="r",
    ...            gate="report", test="t", spec_hash="h", reference={}, extra={"n_perm": 5.0, "exact": 1.0})
    >>> degenerate(r, 0.05)
    'inconclusive by construction: the exact null has 6 arrangements, so p >= 1/6 = 0.167 >= alpha 0.05'
    """
    if res.verdict != C.INCONCLUSIVE:
        return ""
    if res.undefined:
        return f"cannot decide on this choice's data: {res.reason}"
    n_perm, exact = res.extra.get("n_perm"), res.extra.get("exact")
    if n_perm is not None and exact is not None and math.isfinite(float(n_perm)) and float(exact) == 1.0:
        arrangements = int(n_perm) + 1
        if 1.0 / arrangements >= alpha:
            return (f"inconclusive by construction: the exact null has {arrangements} arrangements, "
                    f"so p >= 1/{arrangements} = {1.0 / arrangements:.3g} >= alpha {alpha:g}")
    return ""


def _without_controls(cube: Any, controls: Sequence[str]) -> Any:
    """The cube without its control models (kept for selections that name them)."""
    if not controls:
        return cube
    return cube.assign_attrs({CONTROLS_ATTR: tuple(str(m) for m in controls)})


def evaluate(spec: HypothesisSpec, datasets_dir: str | Path | None = None, *,
             datasets: Sequence[str] | None = None, cube: Any = None,
             cubes: Any = None) -> list[Result]:
    """Evaluate a spec on each of its datasets (one :class:`Result` per dataset).

    A dataset whose cubes are absent gives a ``skipped`` result whose ``reason`` says what
    is missing and whose ``build`` is the card's build command. A dataset may be a card's
    name or a cube file (``"runs/my_sweep.nc"``, :func:`lie_stats.datasets.cube_card`).

    Parameters
    ----------
    spec : HypothesisSpec
    datasets_dir : str or Path, optional
        The folder of dataset cards; by default ``./datasets`` when the current folder has
        one, else the bundled one (:func:`lie_stats.datasets.default_datasets_dir`).
    datasets : sequence of str, optional
        A subset of the spec's datasets (the plugin evaluates one per item).
    cube : xarray.Dataset, optional
        Evaluate on this cube in hand instead of the spec's datasets (one result, dataset
        ``"<cube>"``; :func:`evaluate_cube`).
    cubes : lie_stats.datasets.CubeCache, optional
        Where the datasets' cubes are opened and kept for the caller's next evaluations
        (the engine passes its own); by default each is opened for this call.

    Raises
    ------
    SpecError
        The spec names a dataset without a card (with a suggestion).
    SelectionError
        A dataset's cube is present and the selection matches nothing in it.

    Examples
    --------
    >>> import tempfile, pathlib
    >>> root = pathlib.Path(tempfile.mkdtemp()); (root / "toy").mkdir()
    >>> _ = (root / "toy" / "dataset.toml").write_text(
    ...     'name = "toy"\\ntitle = "t"\\ncubes = ["toy.nc"]\\nbuild = "make toy"\\n')
    >>> from lie_stats.spec import HypothesisSpec, Prediction, Select
    >>> s = HypothesisSpec(id="X1", claim="c", source="s", datasets=("toy",),
    ...     selection={"x": Select("head_contribution", step="first"),
    ...                "y": Select("change_from_init")}, test="correlation",
    ...     prediction=Prediction("negative"), gate="report")
    >>> r = evaluate(s, root)[0]
    >>> r.verdict, r.build
    ('skipped', 'make toy')
    """
    from ..datasets import card_cubes, default_datasets_dir, find_dataset

    if cube is not None:
        return [evaluate_cube(spec, cube)]
    datasets_dir = default_datasets_dir() if datasets_dir is None else datasets_dir
    check_datasets(spec, datasets_dir)
    names = list(spec.datasets if datasets is None else datasets)
    out = []
    for name in names:
        if name not in spec.datasets:
            raise spec_error(spec, "datasets", f"{name!r} is not one of this spec's datasets {spec.datasets!r}.")
        card = find_dataset(name, datasets_dir)
        if card.missing:
            need = f"; needs {card.needs}" if card.needs else ""
            res = result_for(spec, name, C.SKIPPED,
                               f"dataset {name!r} is {card.state}: missing "
                               f"{', '.join(p.name for p in card.missing)}{need}")
            out.append(res.evolve(build=card.build))
            continue
        out.append(evaluate_cube(spec, card_cubes(card, cubes), dataset=name, controls=card.controls,
                                 cube_name=", ".join(map(str, card.cubes))))
    return out
