"""Evaluation: a spec on a cube (:func:`evaluate_cube`) or on its datasets (:func:`evaluate`).

One evaluation selects each role's data (:func:`~lie_stats.spec.selection.select`), runs the
spec's test kind on them and applies the kind's decision rule; then it does the same for
every analysis choice of the spec's specification curve. Data the cube lacks give
``skipped`` (with the reason, and the dataset card's build command); input on which the
test is undefined (constant vectors, too few heads) gives ``inconclusive`` with the
statistics' message as the reason.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from .. import schema
from ..errors import LieStatsError, SpecError, StatsInputError
from .declaration import HypothesisSpec
from .parts import jsonable, spec_error
from .results import Result, json_number, result_for
from .rules import Decision
from .selection import Skip, check_cube, select
from .tables import TestInput
from .validation import check_datasets

__all__ = ["run_once", "evaluate_cube", "evaluate"]


def run_once(spec: HypothesisSpec, cube: Any, dataset: str) -> Result:
    """Evaluate a spec's main analysis (no specification curve) on one cube."""
    where = f"{spec.module}: HypothesisSpec {spec.id!r} on dataset {dataset!r}"
    try:
        arrays = {role: select(sel, cube, where=f"{where}, selection[{role!r}]")
                  for role, sel in spec.selection.items()}
    except Skip as e:
        return result_for(spec, dataset, "skipped", str(e))
    params = spec.resolved_params()
    data = TestInput(arrays=arrays, params=params, prediction=spec.prediction,
                     reference=dict(spec.reference))
    kind = spec.kind
    try:
        row = kind.run(data)
    except StatsInputError as e:
        res = result_for(spec, dataset, "inconclusive", f"the test is undefined on these data: {e}")
        res.data = data
        return res
    except SpecError as e:
        raise SpecError(f"{where}: {e}") from e
    verdict, reason = kind.decide(row, Decision(spec.prediction, float(params["alpha"]),
                                                     dict(spec.reference), params))
    if verdict not in schema.VERDICTS[:3]:
        raise LieStatsError(f"Test {spec.test!r}: decision rule returned {verdict!r}; expected one of "
                            f"{schema.VERDICTS[:3]}.")
    res = result_for(spec, dataset, verdict, reason)
    for col in schema.STAT_COLUMNS:
        setattr(res, col, row[col])
    res.extra = {k: v for k, v in row.items() if k not in schema.STAT_COLUMNS}
    res.data = data
    return res


def evaluate_cube(spec: HypothesisSpec, cube: Any, *, dataset: str = "<cube>") -> Result:
    """Evaluate a spec on one cube (its main analysis and its specification curve).

    Parameters
    ----------
    spec : HypothesisSpec
    cube : xarray.Dataset
        A cube following DESIGN.md's contract.
    dataset : str
        The dataset's name, recorded in the result.

    Returns
    -------
    Result

    Raises
    ------
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
    main = run_once(spec, cube, dataset)
    for choice in spec.choice_grid():
        sub = run_once(spec.with_choice(choice), cube, dataset)
        main.spec_curve.append({
            "choice": jsonable(choice), "verdict": sub.verdict, "reason": sub.reason,
            **{c: json_number(getattr(sub, c)) for c in schema.STAT_COLUMNS},
        })
    return main


def evaluate(spec: HypothesisSpec, datasets_dir: str | Path = "datasets", *,
             datasets: Sequence[str] | None = None) -> list[Result]:
    """Evaluate a spec on each of its datasets (one :class:`Result` per dataset).

    A dataset whose cubes are absent gives a ``skipped`` result whose ``reason`` says what
    is missing and whose ``build`` is the card's build command.

    Parameters
    ----------
    spec : HypothesisSpec
    datasets_dir : str or Path
        The folder of dataset cards.
    datasets : sequence of str, optional
        A subset of the spec's datasets (the plugin evaluates one per item).

    Raises
    ------
    SpecError
        The spec names a dataset without a card (with a suggestion).

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
    from ..datasets import card_cubes, find_dataset

    check_datasets(spec, datasets_dir)
    names = list(spec.datasets if datasets is None else datasets)
    out = []
    for name in names:
        if name not in spec.datasets:
            raise spec_error(spec, "datasets", f"{name!r} is not one of this spec's datasets {spec.datasets!r}.")
        card = find_dataset(name, datasets_dir)
        if card.missing:
            need = f"; needs {card.needs}" if card.needs else ""
            res = result_for(spec, name, "skipped",
                               f"dataset {name!r} is {card.state}: missing "
                               f"{', '.join(p.name for p in card.missing)}{need}")
            res.build = card.build
            out.append(res)
            continue
        res = evaluate_cube(spec, card_cubes(card), dataset=name)
        if res.verdict == "skipped":
            res.build = card.build
        out.append(res)
    return out
