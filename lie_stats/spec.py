"""Declarative hypotheses: :class:`HypothesisSpec`, selection on cubes, tests and verdicts.

A hypothesis module (``hypotheses/B5_contribution_predicts_change.py``) holds one or more
module-level :class:`HypothesisSpec` objects; it is a declaration, not a script (DESIGN.md,
"Hypothesis module")::

    from lie_stats.spec import HypothesisSpec, Prediction, Select

    B5 = HypothesisSpec(
        id="B5",
        claim="Initial head contribution predicts how much a head changes during training",
        source="On the Geometry of Anchors (001_b7585e9b85234042.txt)",
        datasets=("pico_pythia",),
        selection={"x": Select("head_contribution", step="first"),
                   "y": Select("change_from_init", step="last")},
        test="replication",
        params={"method": "spearman", "n_perm": 9999, "seed": 0},
        prediction=Prediction("negative"),
        reference={"rho": -0.274, "p": 0.007, "n": 96},
        gate="pinned",
    )

Evaluating a spec on a dataset (:func:`evaluate`) selects the variables from the dataset's
cube (:class:`Select`), runs the named test of the registry (:func:`register_test`; the
tests bind selections to :mod:`lie_stats.stats`) and decides a verdict.

Verdict rules
-------------
Each test kind has a decision rule; ``alpha`` is the spec's ``params["alpha"]`` (0.05 by
default), ``value`` the prediction's null value (0 unless given).

``correlation``, ``partial_correlation``, ``group_difference``, ``trend`` (p-value rules)
    *supported* when ``p_value < alpha`` and ``effect - value`` has the predicted sign
    (``"positive"`` / ``"negative"``; ``"nonzero"`` accepts either);
    *refuted* when ``p_value < alpha`` with the opposite sign, or when the prediction
    declares an equivalence ``bound`` and the effect is shown to lie within it (TOST on the
    correlation, :func:`lie_stats.stats.tost_correlation`; correlations only);
    *inconclusive* otherwise. A non-significant result alone never refutes.
``correlation_equivalence``, ``tost_relative`` (equivalence rules, prediction ``"equivalent"``)
    *supported* when the TOST p-value (the larger of the two one-sided p) is below ``alpha``;
    *refuted* when the interval lies entirely outside ``[-bound, bound]``;
    *inconclusive* otherwise.
``enrichment``, ``boundary_ratio`` (interval rules, prediction ``"above"`` / ``"below"`` a value)
    *supported* when the interval lies entirely on the predicted side of ``value``;
    *refuted* when it lies entirely on the other side; *inconclusive* otherwise.
``depth_crossover`` (prediction ``"crossing"``)
    *supported* when the depth-gradient slope changes sign once (``n_crossings == 1``) and
    the crossover's interval is finite; *refuted* when it never changes sign
    (``n_crossings == 0``); *inconclusive* otherwise (several crossings, or an interval
    without a crossing in every resample). The reference fraction is reported beside it.
``mixed_model`` (params ``formula`` over the roles ``y``, ``x``, ``z``, ``w``, and ``term``)
    the p-value rule on the Wald test of ``term`` (random intercept per layer); reported as
    descriptive, as DESIGN.md asks of mixed models.
``model_comparison`` (prediction ``"preferred"``; params ``models``, ``predicted``)
    *supported* when the predicted model's AIC is lower than every other model's by at
    least ``min_delta_aic`` (2); *refuted* when another model's is lower by that much;
    *inconclusive* otherwise.
``replication`` (DESIGN.md, "Replication, done as the field does it"; reference ``r``/``rho``
and ``n`` required)
    *supported* when the one-sided test in the original direction has ``p < alpha`` and the
    small-telescopes test does not find the effect smaller than ``r33`` (the effect the
    original had 33 % power to detect); *refuted* when the small-telescopes test finds it
    smaller (``p_small_telescopes < alpha``; this includes effects of the opposite sign);
    *inconclusive* otherwise. The Fisher z test of difference from the original and the
    replication Bayes factor are reported beside the verdict (columns of ``extra``).

Data that cannot be tested (a dataset whose cubes are absent, a cube without the selected
variable, family or projection) give the verdict ``skipped`` with the reason and the command
that builds the data; input on which a test is undefined (constant vectors, too few heads)
gives ``inconclusive`` with the statistics module's message as the reason.
"""

from __future__ import annotations

import hashlib
import itertools
import json
import math
import sys
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Any

import numpy as np

from . import schema
from .errors import LieStatsError, SpecError, StatsInputError, did_you_mean
from .stats import columns as C

__all__ = [
    "Select",
    "Prediction",
    "HypothesisSpec",
    "OutOfScope",
    "NO_DATASET",
    "Result",
    "TestKind",
    "TestInput",
    "Decision",
    "register_test",
    "test_kinds",
    "select",
    "evaluate",
    "evaluate_cube",
    "check_datasets",
    "STEP_WORDS",
    "DIRECTIONS",
]

#: Words a :class:`Select` accepts as ``step`` besides an integer step.
STEP_WORDS = ("first", "last", "all")
#: Prediction directions (which test kinds accept which is declared in the registry).
DIRECTIONS = ("positive", "negative", "nonzero", "equivalent", "above", "below", "crossing",
              "preferred")
#: Reductions a :class:`Select` may apply over layers and heads.
REDUCTIONS = ("mean", "median")
#: Strata for permutation tests and cluster bootstraps on head data.
STRATA = ("layer", "model", "none")
_SELECT_DIMS = (schema.FAMILY, schema.PROJECTION, schema.MATRIX)
#: Selection fields a spec's ``choices`` may sweep (applied to every selection that can
#: take them): the dimensions above, plus the layers and the models (one run at a time).
_SWEEP_SELECT = (*_SELECT_DIMS, "layers", "models")
#: Option values the statistics accept (checked at declaration, not at evaluation).
METHODS = ("spearman", "pearson", "kendall")
ALTERNATIVES = ("two-sided", "greater", "less")
SUMMARIES = ("mean", "cv")
#: Extra result column of a directional correlation with a declared bound: the TOST p.
P_EQUIVALENCE = "p_equivalence"

# ----------------------------------------------------------------------------- declarations


def _tuple(value: Any) -> Any:
    if value is None or isinstance(value, (str, bytes)):
        return value
    if isinstance(value, Iterable):
        return tuple(value)
    return value


@dataclass(frozen=True)
class Select:
    """One variable selected from a cube (DESIGN.md, "Hypothesis module": selection).

    Parameters
    ----------
    metric : str
        A cube variable of :data:`lie_stats.schema.VARIABLES` (METRICS.md names).
    step : {"first", "last", "all"} or int
        The checkpoint: the model's first or last checkpoint with data, every checkpoint
        (keeps the ``step`` dimension, for trends and crossovers), or an exact step.
    family, projection, matrix : str, optional
        Required when the variable has that dimension (``family`` of
        :data:`~lie_stats.schema.FAMILIES`, projection ``"none"``, ``"adaptive"`` or
        ``"fixed:K"``, ``matrix`` of :data:`~lie_stats.schema.MATRICES`); refused otherwise.
    layers : tuple of int, optional
        Layers to keep (negative counts from each model's last layer: ``(0, -1)`` are the
        boundary layers). All layers by default.
    models : tuple of str, optional
        Models of the cube to keep; all by default.
    reduce : {"mean", "median"}, optional
        Summarize over layers and heads (one value per model and step).

    Examples
    --------
    >>> Select("change_from_init", step="last")
    Select(metric='change_from_init', step='last', family=None, projection=None, matrix=None, layers=None, models=None, reduce=None)
    """

    metric: str
    step: str | int = "last"
    family: str | None = None
    projection: str | None = None
    matrix: str | None = None
    layers: tuple[int, ...] | None = None
    models: tuple[str, ...] | None = None
    reduce: str | None = None

    def __post_init__(self) -> None:
        object.__setattr__(self, "layers", _tuple(self.layers))
        object.__setattr__(self, "models", _tuple(self.models))

    def declaration(self) -> dict[str, Any]:
        """The fields that are set, as JSON-ready values (for hashing and reports)."""
        return {f.name: _jsonable(getattr(self, f.name)) for f in fields(self)
                if getattr(self, f.name) is not None}


@dataclass(frozen=True)
class Prediction:
    """What would support the claim.

    Parameters
    ----------
    direction : str
        One of :data:`DIRECTIONS`: the sign of an effect (``"positive"``, ``"negative"``,
        ``"nonzero"``), equivalence within ``bound`` (``"equivalent"``), an estimate above
        or below ``value`` (``"above"``, ``"below"``: a ratio > 1 is ``above`` 1), or a
        sign change over training (``"crossing"``).
    value : float
        The null value the effect is compared with (0 for correlations, 1 for ratios).
    bound : float, optional
        Equivalence bound. Required for ``"equivalent"``; for a directional correlation
        claim it declares the smallest effect of interest, so that a TOST can refute it.

    Examples
    --------
    >>> Prediction("above", value=1.0)
    Prediction(direction='above', value=1.0, bound=None)
    """

    direction: str
    value: float = 0.0
    bound: float | None = None

    def declaration(self) -> dict[str, Any]:
        out = {"direction": self.direction, "value": float(self.value)}
        if self.bound is not None:
            out["bound"] = float(self.bound)
        return out


def _jsonable(value: Any) -> Any:
    if isinstance(value, (Select, Prediction)):
        return value.declaration()
    if isinstance(value, Mapping):
        return {str(k): _jsonable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_jsonable(v) for v in value]
    if isinstance(value, np.generic):
        return value.item()
    if isinstance(value, float) and not math.isfinite(value):
        return str(value)
    return value


def _caller_module() -> str:
    """File (or module name) of the code that declared a spec: the first frame outside here."""
    frame = sys._getframe(1)
    while frame is not None and frame.f_globals.get("__name__") == __name__:
        frame = frame.f_back
    if frame is None:  # pragma: no cover
        return "<unknown>"
    g = frame.f_globals
    return str(g.get("__file__") or g.get("__name__") or "<unknown>")


@dataclass(frozen=True)
class HypothesisSpec:
    """A pre-registered hypothesis: claim, data, selection, test, prediction, gate.

    Parameters
    ----------
    id : str
        The claim's id in CLAIMS.md (``"B5"``); with a suffix for variants (``"B5-pythia"``).
    claim : str
        The claim's text.
    source : str
        Where the claim comes from (the essay, its file, the section).
    datasets : tuple of str
        Names of dataset cards (``datasets/<name>/dataset.toml``) to evaluate on; one result
        per dataset.
    selection : mapping of str to Select
        The variables, by the roles the test expects (``x``/``y`` for correlations, ...).
    test : str
        A test kind of the registry (:func:`test_kinds`).
    params : mapping
        The test's parameters (alpha, seed, n_perm, n_boot, strata, method, alternative,
        bound, ...). Unset ones take the test's defaults; the resolved set is hashed.
    prediction : Prediction
        What would support the claim.
    reference : mapping
        The original figures (``{"rho": -0.274, "p": 0.007, "n": 96}``); required keys
        depend on the test (a replication needs ``r`` or ``rho`` and ``n``).
    gate : {"replication", "pinned", "report"}
        What CI does with the verdict (DESIGN.md, "Gates").
    choices : mapping of str to sequence
        Analysis choices to sweep for the specification curve: keys ``family``,
        ``projection``, ``matrix`` (applied to every selection whose variable has that
        dimension), ``layers`` and ``models`` (applied to every selection; ``models`` gives
        the verdict run by run) or a test parameter (``method``, ``strata``, ...); the
        curve is their Cartesian product, each combination validated at declaration.
    notes : str
        Free text for the report (why this design, what was changed from CLAIMS.md).

    Raises
    ------
    SpecError
        At declaration (so, at collection): a field is malformed. The message names the
        declaring module, the spec and the field, with a suggestion on a typo.

    Examples
    --------
    >>> spec = HypothesisSpec(
    ...     id="X1", claim="contribution and change are related", source="doc",
    ...     datasets=("toy",), test="correlation",
    ...     selection={"x": Select("head_contribution", step="first"),
    ...                "y": Select("change_from_init")},
    ...     prediction=Prediction("negative"), gate="report")
    >>> len(spec.spec_hash())
    64
    """

    id: str
    claim: str
    source: str
    datasets: tuple[str, ...]
    selection: Mapping[str, Select]
    test: str
    prediction: Prediction
    gate: str
    params: Mapping[str, Any] = field(default_factory=dict)
    reference: Mapping[str, Any] = field(default_factory=dict)
    choices: Mapping[str, Sequence[Any]] = field(default_factory=dict)
    notes: str = ""
    module: str = field(default="", compare=False, repr=False)

    def __post_init__(self) -> None:
        if not self.module:
            object.__setattr__(self, "module", _caller_module())
        if isinstance(self.datasets, str):
            object.__setattr__(self, "datasets", (self.datasets,))
        object.__setattr__(self, "datasets", _tuple(self.datasets))
        object.__setattr__(self, "selection", dict(self.selection or {}))
        object.__setattr__(self, "params", dict(self.params or {}))
        object.__setattr__(self, "reference", dict(self.reference or {}))
        object.__setattr__(self, "choices", {k: tuple(v) if not isinstance(v, str) else (v,)
                                             for k, v in dict(self.choices or {}).items()})
        _validate(self)

    def __hash__(self) -> int:  # mappings inside: hash the canonical declaration instead
        return hash(self.spec_hash())

    # -- derived ------------------------------------------------------------------------
    @property
    def kind(self) -> "TestKind":
        """The test kind of the registry this spec names."""
        return _REGISTRY[self.test]

    def resolved_params(self) -> dict[str, Any]:
        """The test's default parameters overridden by the declared ones."""
        return {**self.kind.params, **self.params}

    def declaration(self) -> dict[str, Any]:
        """What the pre-registration hash covers, as JSON-ready values.

        Claim, data, selection, test, resolved parameters, prediction, reference, gate and
        analysis choices. Not hashed: ``source`` and ``notes`` (documentation) and the
        declaring module's path (it differs between machines).
        """
        return {
            "id": self.id,
            "claim": self.claim,
            "datasets": list(self.datasets),
            "selection": {k: v.declaration() for k, v in sorted(self.selection.items())},
            "test": self.test,
            "params": _jsonable(self.resolved_params()),
            "prediction": self.prediction.declaration(),
            "reference": _jsonable(self.reference),
            "gate": self.gate,
            "choices": _jsonable(self.choices),
        }

    def spec_hash(self) -> str:
        """Pre-registration hash of the declaration: sha256 of its canonical JSON.

        Canonical JSON: sorted keys, no whitespace, ASCII, floats as Python's shortest
        round-trip repr, so the hash is the same across runs, machines and platforms.

        Examples
        --------
        >>> s = HypothesisSpec(id="X1", claim="c", source="s", datasets=("toy",),
        ...     selection={"x": Select("head_contribution", step="first"),
        ...                "y": Select("change_from_init")}, test="correlation",
        ...     prediction=Prediction("negative"), gate="report", notes="a")
        >>> s.spec_hash() == HypothesisSpec(**{**s.__dict__, "notes": "b"}).spec_hash()
        True
        """
        text = json.dumps(self.declaration(), sort_keys=True, separators=(",", ":"),
                          ensure_ascii=True, allow_nan=False)
        return hashlib.sha256(text.encode("ascii")).hexdigest()

    def choice_grid(self) -> list[dict[str, Any]]:
        """The specification curve's analysis choices: the Cartesian product of ``choices``."""
        if not self.choices:
            return []
        keys = sorted(self.choices)
        return [dict(zip(keys, combo)) for combo in itertools.product(*(self.choices[k] for k in keys))]

    def with_choice(self, choice: Mapping[str, Any]) -> "HypothesisSpec":
        """A copy of this spec with one analysis choice applied (no choices of its own)."""
        selection = {}
        for role, sel in self.selection.items():
            dims = schema.VARIABLES[sel.metric].dims
            changes = {k: v for k, v in choice.items() if k in _SELECT_DIMS and k in dims}
            if "layers" in choice:
                v = choice["layers"]
                changes["layers"] = (v,) if isinstance(v, (int, np.integer)) else v
            if "models" in choice:
                v = choice["models"]
                changes["models"] = (v,) if isinstance(v, str) else v
            selection[role] = _replace(sel, **changes)
        params = {**self.params, **{k: v for k, v in choice.items() if k not in _SWEEP_SELECT}}
        return _replace(self, selection=selection, params=params, choices={}, module=self.module)


def _replace(obj: Any, **changes: Any) -> Any:
    kwargs = {f.name: getattr(obj, f.name) for f in fields(obj)}
    kwargs.update(changes)
    return type(obj)(**kwargs)


# ----------------------------------------------------------------------------- validation


def _err(spec: Any, fieldname: str, message: str) -> SpecError:
    module = getattr(spec, "module", "") or "<unknown module>"
    ident = getattr(spec, "id", "?")
    return SpecError(f"{module}: HypothesisSpec {ident!r}, field {fieldname!r}: {message}")


def _check_choice(value: Any, choices: Sequence[str], spec: Any, fieldname: str, what: str,
                  context: str = "") -> None:
    if not isinstance(value, str) or value not in choices:
        raise _err(spec, fieldname, f"unknown {what} {value!r}{context}.{did_you_mean(str(value), choices)} "
                   f"Expected one of: {', '.join(choices)}.")


def _validate_select(sel: Any, spec: Any, fieldname: str) -> None:
    if not isinstance(sel, Select):
        raise _err(spec, fieldname, f"expected a Select(...), got {type(sel).__name__}.")
    _check_choice(sel.metric, tuple(schema.VARIABLES), spec, f"{fieldname}.metric", "metric")
    dims = schema.VARIABLES[sel.metric].dims
    step = sel.step
    if isinstance(step, bool) or not (
        (isinstance(step, (int, np.integer)) and step >= 0) or step in STEP_WORDS
    ):
        raise _err(spec, f"{fieldname}.step",
                   f"unknown step {step!r}.{did_you_mean(str(step), STEP_WORDS)} Expected "
                   f"'first', 'last', 'all' or a non-negative integer step.")
    for dim, allowed in ((schema.FAMILY, schema.FAMILIES), (schema.MATRIX, schema.MATRICES)):
        value = getattr(sel, dim)
        if dim in dims:
            if value is None:
                raise _err(spec, f"{fieldname}.{dim}",
                           f"{sel.metric!r} has a {dim!r} dimension: name one of "
                           f"{', '.join(allowed)} (sweep others with choices).")
            _check_choice(value, allowed, spec, f"{fieldname}.{dim}", dim)
        elif value is not None:
            raise _err(spec, f"{fieldname}.{dim}",
                       f"{sel.metric!r} has no {dim!r} dimension (its dims: {', '.join(dims)}).")
    if schema.PROJECTION in dims:
        if sel.projection is None:
            raise _err(spec, f"{fieldname}.projection",
                       f"{sel.metric!r} has a 'projection' dimension: name 'none', 'adaptive' "
                       f"or 'fixed:K'.")
        _check_projection(sel.projection, spec, f"{fieldname}.projection")
    elif sel.projection is not None:
        raise _err(spec, f"{fieldname}.projection",
                   f"{sel.metric!r} has no 'projection' dimension (its dims: {', '.join(dims)}).")
    if sel.layers is not None and (
        not isinstance(sel.layers, tuple) or not sel.layers or not all(isinstance(x, (int, np.integer)) and not isinstance(x, bool)
                                  for x in sel.layers)
    ):
        raise _err(spec, f"{fieldname}.layers", f"expected a non-empty tuple of integers, got {sel.layers!r}.")
    if sel.models is not None and (not isinstance(sel.models, tuple) or not sel.models
                                   or not all(isinstance(m, str) for m in sel.models)):
        raise _err(spec, f"{fieldname}.models", f"expected a non-empty tuple of model names, got {sel.models!r}.")
    if sel.reduce is not None:
        _check_choice(sel.reduce, REDUCTIONS, spec, f"{fieldname}.reduce", "reduction")


def _check_projection(value: Any, spec: Any, fieldname: str) -> None:
    try:
        schema.parse_projection(value)
    except (ValueError, AttributeError, TypeError) as e:
        raise _err(spec, fieldname, f"{e}{did_you_mean(str(value), ('none', 'adaptive'))}") from None


def _validate(spec: HypothesisSpec) -> None:
    for name in ("id", "claim", "source"):
        value = getattr(spec, name)
        if not isinstance(value, str) or not value.strip():
            raise _err(spec, name, f"expected a non-empty string, got {value!r}.")
    if not spec.datasets or not all(isinstance(d, str) and d for d in spec.datasets):
        raise _err(spec, "datasets", f"expected a non-empty tuple of dataset names, got {spec.datasets!r}.")
    if len(set(spec.datasets)) != len(spec.datasets):
        raise _err(spec, "datasets", f"names a dataset twice: {spec.datasets!r}.")
    _check_choice(spec.gate, schema.GATES, spec, "gate", "gate")
    _check_choice(spec.test, tuple(_REGISTRY), spec, "test", "test")
    kind = _REGISTRY[spec.test]
    roles = set(spec.selection)
    for role in kind.roles:
        if role not in roles:
            raise _err(spec, "selection",
                       f"test {spec.test!r} needs the roles {', '.join(kind.roles)}; {role!r} is "
                       f"missing.{did_you_mean(role, [r for r in roles if r not in kind.roles])}")
    for role in roles:
        if role not in kind.roles + kind.optional_roles:
            raise _err(spec, f"selection[{role!r}]",
                       f"test {spec.test!r} takes no role {role!r}."
                       f"{did_you_mean(role, kind.roles + kind.optional_roles)} Its roles: "
                       f"{', '.join(kind.roles + kind.optional_roles)}.")
    for role, sel in spec.selection.items():
        _validate_select(sel, spec, f"selection[{role!r}]")
    for key in spec.params:
        if key not in kind.params:
            raise _err(spec, f"params[{key!r}]",
                       f"test {spec.test!r} takes no parameter {key!r}.{did_you_mean(key, kind.params)} "
                       f"Its parameters: {', '.join(kind.params)}.")
    params = spec.resolved_params()
    for key in kind.required_params:
        if params.get(key) is None:
            raise _err(spec, f"params[{key!r}]", f"test {spec.test!r} requires the parameter {key!r}.")
    if spec.test == "model_comparison":
        _validate_models(spec, params)
    if spec.test == "mixed_model":
        _validate_formula(spec, params)
    _validate_param_values(spec, params)
    pred = spec.prediction
    if not isinstance(pred, Prediction):
        raise _err(spec, "prediction", f"expected a Prediction(...), got {type(pred).__name__}.")
    _check_choice(pred.direction, kind.directions, spec, "prediction.direction", "direction",
                  f" for test {spec.test!r}")
    if pred.direction == "equivalent" and pred.bound is None and params.get("bound") is None:
        raise _err(spec, "prediction.bound", "an equivalence claim needs a bound (TOST).")
    if pred.bound is not None and not (isinstance(pred.bound, (int, float)) and pred.bound > 0):
        raise _err(spec, "prediction.bound", f"expected a positive number, got {pred.bound!r}.")
    if not isinstance(spec.reference, Mapping):
        raise _err(spec, "reference", "expected a mapping of the original figures.")
    for keys in kind.reference:
        alternatives = keys.split("|")
        if not any(k in spec.reference for k in alternatives):
            raise _err(spec, "reference",
                       f"test {spec.test!r} needs the original figure {' or '.join(map(repr, alternatives))} "
                       f"in reference (has: {', '.join(spec.reference) or 'nothing'}).")
    if spec.test == "replication":
        r0 = spec.reference.get("r", spec.reference.get("rho"))
        if not isinstance(r0, (int, float)) or not -1 < r0 < 1 or r0 == 0:
            raise _err(spec, "reference", f"the original correlation must be a number in (-1, 1), "
                                          f"not 0; got {r0!r}.")
        n0 = spec.reference.get("n")
        if isinstance(n0, bool) or not isinstance(n0, (int, np.integer)) or n0 < 5:
            raise _err(spec, "reference", f"the original n must be an integer >= 5, got {n0!r}.")
        if (r0 < 0) != (pred.direction == "negative"):
            raise _err(spec, "prediction.direction",
                       f"{pred.direction!r} contradicts the sign of the original correlation {r0}.")
    if spec.gate == "replication" and not spec.reference:
        raise _err(spec, "reference",
                   "a 'replication' gate needs the original figures to replicate (reference={...}).")
    allowed = set(_SWEEP_SELECT) | set(kind.params)
    for key, values in spec.choices.items():
        if key not in allowed:
            raise _err(spec, f"choices[{key!r}]",
                       f"cannot sweep {key!r}.{did_you_mean(key, sorted(allowed))} Sweepable: "
                       f"{', '.join(sorted(allowed))}.")
        if not values:
            raise _err(spec, f"choices[{key!r}]", "expected a non-empty list of alternatives.")
        for v in values:
            if key == schema.FAMILY:
                _check_choice(v, schema.FAMILIES, spec, f"choices[{key!r}]", "family")
            elif key == schema.MATRIX:
                _check_choice(v, schema.MATRICES, spec, f"choices[{key!r}]", "matrix")
            elif key == schema.PROJECTION:
                _check_projection(v, spec, f"choices[{key!r}]")
    if spec.choices and not any(
        k not in _SELECT_DIMS or any(k in schema.VARIABLES[s.metric].dims for s in spec.selection.values())
        for k in spec.choices
    ):
        raise _err(spec, "choices", "no selected variable has the swept dimension(s).")
    try:
        spec.spec_hash()
    except (TypeError, ValueError) as e:
        raise _err(spec, "params", f"not JSON-serializable for the pre-registration hash: {e}") from e
    for choice in spec.choice_grid():  # every analysis choice must be a valid spec too
        try:
            spec.with_choice(choice)
        except SpecError as e:
            raise _err(spec, "choices", f"the choice {choice!r} gives an invalid spec: "
                       f"{str(e).split(': ', 1)[-1]}") from None


def _validate_param_values(spec: Any, params: Mapping[str, Any]) -> None:
    from .stats.summaries import TRANSFORMS

    enums = {"strata": STRATA, "method": METHODS, "alternative": ALTERNATIVES, "summary": SUMMARIES,
             "layer_summary": _H3A_SUMMARIES, "transform": TRANSFORMS}
    for key, allowed in enums.items():
        if key in params:
            _check_choice(params[key], allowed, spec, f"params[{key!r}]", key)
    for key, minimum in (("n_perm", 1), ("n_boot", 0), ("seed", 0)):
        v = params.get(key)
        if key in params and (isinstance(v, bool) or not isinstance(v, (int, np.integer)) or v < minimum):
            raise _err(spec, f"params[{key!r}]", f"expected an integer >= {minimum}, got {v!r}.")
    for key in ("ci", "alpha"):
        v = params.get(key)
        if key in params and (isinstance(v, bool) or not isinstance(v, (int, float)) or not 0 < v < 1):
            raise _err(spec, f"params[{key!r}]", f"expected a level in (0, 1), got {v!r}.")
    if params.get("bound") is not None and not (isinstance(params["bound"], (int, float)) and params["bound"] > 0):
        raise _err(spec, "params['bound']", f"expected a positive number, got {params['bound']!r}.")
    groups = params.get("groups")
    if groups is not None and (isinstance(groups, str) or not isinstance(groups, Sequence) or len(groups) != 2):
        raise _err(spec, "params['groups']", f"expected the two group codes (a, b), got {groups!r}.")


def _validate_models(spec: Any, params: Mapping[str, Any]) -> None:
    models = params.get("models")
    if not isinstance(models, Mapping) or not models:
        raise _err(spec, "params['models']", "expected a mapping of model name -> list of predictors.")
    for name, terms in models.items():
        if isinstance(terms, str) or not isinstance(terms, Sequence):
            raise _err(spec, f"params['models'][{name!r}]", f"expected a list of predictors, got {terms!r}.")
        for t in terms:
            _check_choice(t, MODEL_PREDICTORS, spec, f"params['models'][{name!r}]", "predictor")
    if params.get("predicted") not in models:
        raise _err(spec, "params['predicted']",
                   f"must name one of the models {', '.join(map(repr, models))}, got "
                   f"{params.get('predicted')!r}.{did_you_mean(str(params.get('predicted')), models)}")


def check_datasets(spec: HypothesisSpec, root: str | Path) -> None:
    """Check that every dataset a spec names has a card under ``root``.

    Raises
    ------
    SpecError
        Naming the module, the spec, the field ``datasets`` and the closest known name.

    Examples
    --------
    >>> import tempfile
    >>> s = HypothesisSpec(id="X1", claim="c", source="s", datasets=("toy",),
    ...     selection={"x": Select("head_contribution", step="first"),
    ...                "y": Select("change_from_init")}, test="correlation",
    ...     prediction=Prediction("negative"), gate="report", module="demo.py")
    >>> try:
    ...     check_datasets(s, tempfile.mkdtemp())
    ... except SpecError as e:
    ...     print(str(e).split(":")[0])
    demo.py
    """
    from .datasets import list_datasets

    known = [c.name for c in list_datasets(root)]
    for name in spec.datasets:
        if name not in known:
            raise _err(spec, "datasets",
                       f"unknown dataset {name!r}.{did_you_mean(name, known)} Datasets with a card "
                       f"in {str(root)!r}: {', '.join(known) or 'none'}.")


# ----------------------------------------------------------------------------- selection


class _Skip(Exception):
    """The data needed are not in this cube: the result is skipped, with this reason."""


def _check_cube(cube: Any, where: str) -> None:
    """The part of the cube contract a selection relies on: a Dataset with model and step."""
    import xarray as xr

    from .errors import CubeError

    if not isinstance(cube, xr.Dataset):
        raise CubeError(f"{where}: expected an xarray.Dataset cube, got {type(cube).__name__}.")
    for dim in (schema.MODEL, schema.STEP):
        if dim not in cube.dims:
            raise CubeError(f"{where}: the cube has no {dim!r} dimension; a cube has dims "
                            f"{schema.CUBE_DIMS} (DESIGN.md, cube).")


def select(sel: Select, cube: Any, *, where: str = "selection") -> Any:
    """Apply one :class:`Select` to a cube.

    Returns
    -------
    xarray.DataArray
        Dimensions ``model`` plus the variable's remaining ones (``layer``, ``head``, ...);
        ``step`` is kept for ``step="all"``; the chosen step of each model is a coordinate.
        Layers not selected and padding are NaN; a pairwise variable (``head_j``) keeps each
        pair once (``head < head_j``), the rest NaN.

    Raises
    ------
    SpecError
        The selection names a model or step the cube does not have.

    Examples
    --------
    >>> import numpy as np, xarray as xr
    >>> da = xr.DataArray(np.arange(8.).reshape(1, 2, 2, 2), dims=("model", "step", "layer", "head"),
    ...                   coords={"model": ["m"], "step": [0, 10], "layer": [0, 1], "head": [0, 1]})
    >>> cube = xr.Dataset({"ov_norm": da}).assign_coords(n_layers=("model", [2]))
    >>> select(Select("ov_norm", step="first", layers=(-1,)), cube).values.tolist()
    [[[nan, nan], [2.0, 3.0]]]
    """
    import xarray as xr

    _check_cube(cube, where)
    if sel.metric not in cube.data_vars:
        raise _Skip(f"the cube has no variable {sel.metric!r} (has: {', '.join(map(str, cube.data_vars))})")
    da = cube[sel.metric]
    for dim in (*_SELECT_DIMS,):
        value = getattr(sel, dim)
        if value is None or dim not in da.dims:
            continue
        have = [str(v) for v in da[dim].values.tolist()]
        if value not in have:
            raise _Skip(f"the cube has no {dim} {value!r} for {sel.metric!r} (has: {', '.join(have)})")
        da = da.sel({dim: value}, drop=True)
    if sel.models is not None:
        have = [str(m) for m in da[schema.MODEL].values.tolist()]
        for m in sel.models:
            if m not in have:
                raise SpecError(f"{where}.models: the cube has no model {m!r}.{did_you_mean(m, have)} "
                                f"Models: {', '.join(have)}.")
        da = da.sel({schema.MODEL: list(sel.models)})
    other = [d for d in da.dims if d not in (schema.MODEL, schema.STEP)]
    has_data = np.isfinite(da.values).any(axis=tuple(da.get_axis_num(d) for d in other)) if other \
        else np.isfinite(da.values)  # [model, step]
    steps = da[schema.STEP].values
    if isinstance(sel.step, str) and sel.step in ("first", "last"):
        parts = []
        for i in range(da.sizes[schema.MODEL]):
            idx = np.flatnonzero(has_data[i])
            if idx.size == 0:
                continue
            j = idx[0] if sel.step == "first" else idx[-1]
            parts.append(da.isel({schema.MODEL: [i], schema.STEP: j}))
        if not parts:
            raise _Skip(f"no checkpoint of the cube has data for {sel.metric!r}")
        da = (xr.concat(parts, dim=schema.MODEL, coords="different", compat="equals", join="outer")
              if len(parts) > 1 else parts[0])
    elif sel.step != "all":
        if int(sel.step) not in steps.tolist():
            near = steps[np.argsort(np.abs(steps - int(sel.step)))[:3]].tolist()
            raise SpecError(f"{where}.step: the cube has no step {sel.step}; nearest steps: {near}.")
        da = da.sel({schema.STEP: int(sel.step)})
    if sel.layers is not None and schema.LAYER in da.dims:
        layer_values = da[schema.LAYER].values
        if "n_layers" in da.coords:
            n_layers = np.asarray(da["n_layers"].values).reshape(-1)
        else:
            n_layers = np.full(da.sizes[schema.MODEL], len(layer_values))
        keep = np.zeros((da.sizes[schema.MODEL], len(layer_values)), dtype=bool)
        for i, n in enumerate(n_layers):
            wanted = {int(x) if x >= 0 else int(n) + int(x) for x in sel.layers}
            keep[i] = np.isin(layer_values, list(wanted))
        mask = xr.DataArray(keep, dims=(schema.MODEL, schema.LAYER),
                            coords={schema.MODEL: da[schema.MODEL].values, schema.LAYER: layer_values})
        da = da.where(mask)
    if schema.HEAD_J in da.dims and schema.HEAD in da.dims:
        # a pairwise variable is symmetric with a trivial diagonal: keep each pair once (i < j)
        da = da.where(da[schema.HEAD] < da[schema.HEAD_J])
    if sel.reduce is not None:
        over = [d for d in da.dims if d not in (schema.MODEL, schema.STEP)]
        da = getattr(da, sel.reduce)(dim=over, skipna=True)
    if not np.isfinite(da.values).any():
        raise _Skip(f"the selection of {sel.metric!r} holds no finite value")
    return da


# ----------------------------------------------------------------------------- test registry


@dataclass(frozen=True)
class Decision:
    """What a decision rule sees besides the result row."""

    prediction: Prediction
    alpha: float
    reference: Mapping[str, Any]
    params: Mapping[str, Any]


@dataclass
class TestInput:
    """The selected data of one evaluation, handed to a test function.

    Attributes
    ----------
    arrays : dict of str to xarray.DataArray
        One selected array per role (see :func:`select`).
    params : dict
        The resolved parameters.
    prediction : Prediction
    reference : dict
    """

    __test__ = False  # not a pytest class

    arrays: dict[str, Any]
    params: dict[str, Any]
    prediction: Prediction
    reference: dict[str, Any]
    _tables: dict[tuple[str, ...], Any] = field(default_factory=dict, repr=False)

    def table(self, *roles: str, drop_model: bool = False) -> Any:
        """The roles' arrays aligned unit by unit as a tidy table (NaN rows dropped).

        Columns: one per role, then the remaining dimensions (``model``, ``layer``,
        ``head``, ...). ``drop_model`` aligns selections of different models unit by unit
        (base vs tuned): each role must then hold exactly one model.
        """
        import xarray as xr

        key = (*roles, "<drop_model>") if drop_model else roles
        if key in self._tables:
            return self._tables[key]
        arrays = []
        for role in roles:
            da = self.arrays[role].reset_coords(drop=True)
            if drop_model:
                if da.sizes.get(schema.MODEL, 1) != 1:
                    raise SpecError(f"selection[{role!r}] must select exactly one model for this "
                                    f"test; it selects {da.sizes[schema.MODEL]} (set models=(...)).")
                if schema.MODEL in da.dims:
                    da = da.isel({schema.MODEL: 0}, drop=True)
            arrays.append(da.rename(role))
        aligned = xr.align(*arrays, join="inner")
        frame = xr.merge(aligned, compat="override", join="inner").to_dataframe()
        frame = frame[list(roles)].dropna().reset_index()
        self._tables[key] = frame
        return frame

    def strata(self, table: Any) -> Any:
        """Stratum codes of a table's rows per ``params['strata']`` (None for free)."""
        import pandas as pd

        how = self.params.get("strata", "layer")
        if how == "none":
            return None
        cols = [c for c in (schema.MODEL, schema.LAYER) if c in table.columns]
        if how == "model":
            cols = [c for c in cols if c == schema.MODEL]
        if not cols:
            return None
        return pd.factorize(pd.MultiIndex.from_frame(table[cols]))[0]


TestFn = Callable[[TestInput], Any]
DecideFn = Callable[[Mapping[str, float], Decision], "tuple[str, str]"]


@dataclass(frozen=True)
class TestKind:
    """A registered test: how to compute it on a selection and how to decide a verdict."""

    __test__ = False  # not a pytest class

    name: str
    fn: TestFn
    decide: DecideFn
    roles: tuple[str, ...]
    params: Mapping[str, Any]
    directions: tuple[str, ...]
    optional_roles: tuple[str, ...] = ()
    reference: tuple[str, ...] = ()
    required_params: tuple[str, ...] = ()
    description: str = ""


_REGISTRY: dict[str, TestKind] = {}


def register_test(
    name: str,
    fn: TestFn,
    decide: DecideFn,
    *,
    roles: Sequence[str],
    params: Mapping[str, Any] | None = None,
    directions: Sequence[str] = ("positive", "negative", "nonzero"),
    optional_roles: Sequence[str] = (),
    reference: Sequence[str] = (),
    required_params: Sequence[str] = (),
    description: str = "",
) -> TestKind:
    """Add a test kind to the registry.

    Parameters
    ----------
    name : str
        The name specs use in ``test=``.
    fn : callable
        ``fn(TestInput) -> pandas.DataFrame`` with one row whose first columns are
        :data:`lie_stats.schema.STAT_COLUMNS` (extra numeric columns allowed).
    decide : callable
        ``decide(row, Decision) -> (verdict, reason)``, verdict one of
        ``supported``/``refuted``/``inconclusive``.
    roles, optional_roles : sequence of str
        Selection roles the test requires / accepts.
    params : mapping
        Accepted parameters and their defaults (``None``: no default).
    directions : sequence of str
        Prediction directions the decision rule understands.
    reference : sequence of str
        Reference figures required; ``"r|rho"`` accepts either key.
    required_params : sequence of str
        Parameters that must be given (no usable default).

    Raises
    ------
    SpecError
        A test of that name is already registered, or a direction is unknown.

    Examples
    --------
    >>> try:
    ...     register_test("correlation", lambda d: None, lambda r, c: ("inconclusive", ""), roles=("x",))
    ... except SpecError as e:
    ...     print(str(e)[:44])
    A test named 'correlation' is already regist
    """
    if name in _REGISTRY:
        raise SpecError(f"A test named {name!r} is already registered; pick another name.")
    for d in directions:
        if d not in DIRECTIONS:
            raise SpecError(f"register_test({name!r}): unknown direction {d!r}.{did_you_mean(d, DIRECTIONS)}")
    params = {"alpha": 0.05, "seed": 0, **dict(params or {})}
    kind = TestKind(name=name, fn=fn, decide=decide, roles=tuple(roles), params=params,
                    directions=tuple(directions), optional_roles=tuple(optional_roles),
                    reference=tuple(reference), required_params=tuple(required_params),
                    description=description)
    _REGISTRY[name] = kind
    return kind


def test_kinds() -> dict[str, TestKind]:
    """The registered test kinds by name (a copy).

    >>> {"boundary_ratio", "correlation", "correlation_equivalence"} <= set(test_kinds())
    True
    """
    return dict(_REGISTRY)


test_kinds.__test__ = False  # type: ignore[attr-defined]


# -- decision rules ----------------------------------------------------------------------


def _finite(*values: float) -> bool:
    return all(v is not None and math.isfinite(float(v)) for v in values)


def decide_directional(row: Mapping[str, float], ctx: Decision) -> tuple[str, str]:
    """p-value rule (see the module docstring).

    >>> ctx = Decision(Prediction("negative"), 0.05, {}, {})
    >>> decide_directional({"p_value": 0.01, "effect": -0.3}, ctx)[0]
    'supported'
    >>> decide_directional({"p_value": 0.01, "effect": 0.3}, ctx)[0]
    'refuted'
    >>> decide_directional({"p_value": 0.2, "effect": -0.3}, ctx)[0]
    'inconclusive'
    """
    p, effect = row.get(C.P_VALUE), row.get(C.EFFECT)
    if not _finite(p, effect):
        return "inconclusive", "the test gave no p-value or effect on these data"
    d, a = ctx.prediction.direction, ctx.alpha
    delta = float(effect) - float(ctx.prediction.value)
    if p < a:
        if d == "nonzero" or (d == "positive" and delta > 0) or (d == "negative" and delta < 0):
            return "supported", f"p < alpha ({a}) with the predicted sign ({d})"
        return "refuted", f"p < alpha ({a}) with the sign opposite to the prediction ({d})"
    p_eq = row.get(P_EQUIVALENCE)
    if ctx.prediction.bound is not None and _finite(p_eq) and p_eq < a:
        return "refuted", (f"not significant, and the TOST shows the effect within the declared "
                           f"bound of ±{ctx.prediction.bound} (p_equivalence < alpha {a})")
    return "inconclusive", f"p >= alpha ({a}): no evidence either way"


def decide_equivalence(row: Mapping[str, float], ctx: Decision) -> tuple[str, str]:
    """Equivalence (TOST) rule (see the module docstring).

    >>> ctx = Decision(Prediction("equivalent", bound=0.1), 0.05, {}, {})
    >>> decide_equivalence({"p_value": 0.01, "ci_low": -0.05, "ci_high": 0.05}, ctx)[0]
    'supported'
    >>> decide_equivalence({"p_value": 0.9, "ci_low": 0.2, "ci_high": 0.4}, ctx)[0]
    'refuted'
    """
    bound = ctx.prediction.bound if ctx.prediction.bound is not None else ctx.params.get("bound")
    p = row.get(C.P_VALUE)
    if not _finite(p):
        return "inconclusive", "the TOST gave no p-value on these data"
    if p < ctx.alpha:
        return "supported", f"TOST p < alpha ({ctx.alpha}): equivalent within ±{bound}"
    lo, hi = row.get(C.CI_LOW), row.get(C.CI_HIGH)
    if _finite(lo, hi) and (lo > bound or hi < -bound):
        return "refuted", f"the interval lies entirely outside ±{bound}"
    return "inconclusive", f"TOST p >= alpha ({ctx.alpha}) and the interval overlaps ±{bound}"


def decide_interval(row: Mapping[str, float], ctx: Decision) -> tuple[str, str]:
    """Interval rule for estimates compared with a value (see the module docstring).

    >>> ctx = Decision(Prediction("above", value=1.0), 0.05, {}, {})
    >>> decide_interval({"ci_low": 1.5, "ci_high": 3.0}, ctx)[0]
    'supported'
    >>> decide_interval({"ci_low": 0.5, "ci_high": 3.0}, ctx)[0]
    'inconclusive'
    """
    lo, hi = row.get(C.CI_LOW), row.get(C.CI_HIGH)
    v, d = float(ctx.prediction.value), ctx.prediction.direction
    if not _finite(lo, hi):
        return "inconclusive", "the estimate has no finite interval on these data"
    above, below = lo > v, hi < v
    if (d == "above" and above) or (d == "below" and below):
        return "supported", f"the interval lies entirely {d} {v}"
    if (d == "above" and below) or (d == "below" and above):
        return "refuted", f"the interval lies entirely on the other side of {v}"
    return "inconclusive", f"the interval contains {v}"


def decide_crossing(row: Mapping[str, float], ctx: Decision) -> tuple[str, str]:
    """Crossover rule (see the module docstring).

    >>> ctx = Decision(Prediction("crossing"), 0.05, {}, {})
    >>> decide_crossing({"n_crossings": 0, "effect": float("nan")}, ctx)[0]
    'refuted'
    """
    n_cross = row.get(C.N_CROSSINGS)
    if not _finite(n_cross):
        return "inconclusive", "the crossover estimator gave no count of sign changes"
    if n_cross == 0:
        return "refuted", "the depth-gradient slope never changes sign"
    if n_cross == 1 and _finite(row.get(C.EFFECT), row.get(C.CI_LOW), row.get(C.CI_HIGH)):
        return "supported", "the depth-gradient slope changes sign once, with a finite interval"
    if n_cross > 1:
        return "inconclusive", "the slope changes sign several times"
    return "inconclusive", "a crossing, but not in every bootstrap resample (interval not finite)"


def decide_replication(row: Mapping[str, float], ctx: Decision) -> tuple[str, str]:
    """Replication rule (DESIGN.md, "Replication, done as the field does it").

    >>> ctx = Decision(Prediction("negative"), 0.05, {"rho": -0.274, "n": 96}, {})
    >>> decide_replication({"p_original_direction": 0.001, "p_small_telescopes": 0.6}, ctx)[0]
    'supported'
    >>> decide_replication({"p_original_direction": 0.4, "p_small_telescopes": 0.01}, ctx)[0]
    'refuted'
    """
    p1, pst = row.get(C.P_ORIGINAL_DIRECTION), row.get(C.P_SMALL_TELESCOPES)
    if not _finite(p1, pst):
        return "inconclusive", "the replication tests gave no p-values on these data"
    a = ctx.alpha
    if pst < a:
        return "refuted", (f"small telescopes: the effect is smaller than r33, the one the original "
                           f"had 33 % power to detect (p < alpha {a})")
    if p1 < a:
        return "supported", (f"one-sided test in the original direction p < alpha ({a}) and not "
                             f"smaller than r33")
    return "inconclusive", (f"one-sided test in the original direction p >= alpha ({a}), but the "
                            f"effect is not shown smaller than r33")


# -- bindings to lie_stats.stats -----------------------------------------------------------

_RESAMPLING = {"n_perm": 9999, "n_boot": 2000, "ci": 0.95, "strata": "layer"}


_STAT_MODULES = {
    "correlation": "correlation", "partial_correlation": "correlation",
    "group_difference": "groups", "tost_relative": "equivalence",
    "tost_correlation": "equivalence", "replicate_correlation": "replication",
    "trend": "trend", "enrichment": "trend", "depth_crossover": "trend", "fisher_z_se": "equivalence",
    "mixed_model": "models", "compare_models": "models",
    "boundary_ratio": "trend", "adjust_pvalues": "multiplicity",
    "tost_paired": "summaries", "share_above": "summaries", "cluster_mean": "summaries",
    "category_rank": "ranks", "category_order": "ranks", "change_ratio": "ranks",
    "ORDER_HOLDS": "ranks", "BOOT_SHARE": "ranks",
    "row_summary": "killing_profiles", "pair_summary": "killing_profiles",
    "symmetric_pairs": "killing_profiles",
    "head_enrichment_excess": "killing_profiles", "boundary_enrichment": "killing_profiles",
    "functional_boundary_shift": "killing_profiles",
    "interaction_test": "classes", "threshold_zones": "classes", "agreement_test": "classes",
    "time_to_fraction": "classes", "auc_test": "classes",
}


class _StatsFunctions:
    """``lie_stats.stats.<name>``, falling back to its family module while the package's
    ``__init__`` does not re-export it."""

    def __getattr__(self, name: str) -> Any:
        import importlib

        package = importlib.import_module("lie_stats.stats")
        if hasattr(package, name):
            return getattr(package, name)
        module = importlib.import_module(f"lie_stats.stats.{_STAT_MODULES[name]}")
        return getattr(module, name)


def _stats() -> Any:
    return _StatsFunctions()


def _xy(data: TestInput, *roles: str) -> tuple[Any, list[np.ndarray], Any]:
    table = data.table(*roles)
    return table, [table[r].to_numpy(dtype=float) for r in roles], data.strata(table)


def _run_correlation(data: TestInput) -> Any:
    p = data.params
    table, (x, y), strata = _xy(data, "x", "y")
    row = _stats().correlation(x, y, strata=strata, method=p["method"], alternative=p["alternative"],
                               n_perm=p["n_perm"], n_boot=p["n_boot"], ci=p["ci"], seed=p["seed"])
    bound = data.prediction.bound
    if bound is not None:
        eq = _stats().tost_correlation(float(row[C.EFFECT].iloc[0]), int(row[C.N].iloc[0]),
                                       bound=bound, alpha=p["alpha"], method=p["method"])
        row = row.assign(**{P_EQUIVALENCE: float(eq[C.P_VALUE].iloc[0])})
    return row


def _run_partial(data: TestInput) -> Any:
    p = data.params
    table, (x, y, c), strata = _xy(data, "x", "y", "covar")
    return _stats().partial_correlation(x, y, c, strata=strata, method=p["method"],
                                        alternative=p["alternative"], n_perm=p["n_perm"],
                                        n_boot=p["n_boot"], ci=p["ci"], seed=p["seed"])


def _run_group_difference(data: TestInput) -> Any:
    p = data.params
    if p.get("groups") is None:
        table, (x, g), strata = _xy(data, "x", "group")
    else:  # the declared groups only, the second as group 1; too few heads in one: label counts
        sub, g, strata = _two_groups(data, data.table("x", "group"), "group")
        x = sub["x"].to_numpy(dtype=float)
    return _stats().group_difference(x, g, strata=strata, alternative=p["alternative"],
                                     n_perm=p["n_perm"], n_boot=p["n_boot"], ci=p["ci"], seed=p["seed"])


def _run_replication(data: TestInput) -> Any:
    p, ref = data.params, data.reference
    table, (x, y), strata = _xy(data, "x", "y")
    r0 = ref["r"] if "r" in ref else ref["rho"]
    return _stats().replicate_correlation(x, y, original_r=float(r0), original_n=int(ref["n"]),
                                          strata=strata, method=p["method"], n_perm=p["n_perm"],
                                          n_boot=p["n_boot"], ci=p["ci"], seed=p["seed"],
                                          alpha=p["alpha"])


def _run_correlation_equivalence(data: TestInput) -> Any:
    p = data.params
    table, (x, y), strata = _xy(data, "x", "y")
    est = _stats().correlation(x, y, strata=strata, method=p["method"], n_perm=p["n_perm"],
                               n_boot=p["n_boot"], ci=p["ci"], seed=p["seed"])
    bound = data.prediction.bound if data.prediction.bound is not None else p["bound"]
    return _stats().tost_correlation(float(est[C.EFFECT].iloc[0]), int(est[C.N].iloc[0]),
                                     bound=bound, alpha=p["alpha"], method=p["method"])


def _run_tost_relative(data: TestInput) -> Any:
    p = data.params
    table = data.table("base", "tuned", drop_model=True)
    bound = data.prediction.bound if data.prediction.bound is not None else p["bound"]
    return _stats().tost_relative(table["base"].to_numpy(float), table["tuned"].to_numpy(float),
                                  bound=bound, alpha=p["alpha"])


def _series(data: TestInput, role: str) -> tuple[np.ndarray, np.ndarray, Any]:
    """[n_steps, n_units] matrix of a step="all" selection (units: model x layer x head...)."""
    da = data.arrays[role].reset_coords(drop=True)
    if schema.STEP not in da.dims:
        raise SpecError(f"selection[{role!r}] must keep the step dimension (step='all') for this test.")
    units = [d for d in da.dims if d != schema.STEP]
    flat = da.stack(unit=units).transpose(schema.STEP, "unit") if units else da.expand_dims(unit=[0]).transpose(schema.STEP, "unit")
    values = flat.values
    keep_units = np.isfinite(values).any(axis=0)
    keep_steps = np.isfinite(values[:, keep_units]).all(axis=1)
    values = values[np.ix_(keep_steps, keep_units)]
    return values, da[schema.STEP].values[keep_steps], flat.isel(unit=np.flatnonzero(keep_units))


def _run_trend(data: TestInput) -> Any:
    p = data.params
    values, steps, _ = _series(data, "values")
    series = np.nanmean(values, axis=1)
    return _stats().trend(series, steps, method=p["method"], n_perm=p["n_perm"], seed=p["seed"],
                          alternative=p["alternative"])


def _run_enrichment(data: TestInput) -> Any:
    p = data.params
    table, (first, last), strata = _xy(data, "first", "last")
    return _stats().enrichment(first, last, clusters=strata, paired=True, n_boot=p["n_boot"],
                               ci=p["ci"], seed=p["seed"], n_perm=p["n_perm"],
                               alternative=p["alternative"])


def _one_model(data: TestInput, role: str, test: str) -> None:
    da = data.arrays[role]
    if da.sizes.get(schema.MODEL, 1) != 1:
        raise SpecError(f"selection[{role!r}] must select one model for {test} (set models=(...)); "
                        f"it selects {da.sizes[schema.MODEL]}.")


def _run_boundary_ratio(data: TestInput) -> Any:
    p = data.params
    _one_model(data, "values", "boundary_ratio")
    table = data.table("values")
    return _stats().boundary_ratio(table["values"].to_numpy(float),
                                   clusters=table[schema.LAYER].to_numpy(), summary=p["summary"],
                                   n_boot=p["n_boot"], ci=p["ci"], seed=p["seed"],
                                   alternative=p["alternative"])


def _run_depth_crossover(data: TestInput) -> Any:
    p = data.params
    _one_model(data, "values", "depth_crossover")
    values, steps, flat = _series(data, "values")
    row = _stats().depth_crossover(values, steps, layer_of_head=flat[schema.LAYER].values,
                                   n_boot=p["n_boot"], seed=p["seed"], ci=p["ci"])
    # stats reports the interval in steps and the effect as a fraction of training; put the
    # interval on the effect's scale (fraction of the last step) so the two compare
    last = float(np.max(steps))
    return row.assign(**{C.CI_LOW: row[C.CI_LOW] / last, C.CI_HIGH: row[C.CI_HIGH] / last})


#: Predictors a ``model_comparison`` may name: numeric model coordinates, their log2, and
#: the bottleneck ratio d_head / d_model (CLAIMS.md A8, A9).
_D_HEAD, _D_MODEL = "d_head", "d_model"
if not {_D_HEAD, _D_MODEL} <= set(schema.MODEL_COORDS):  # pragma: no cover - schema guard
    raise LieStatsError("lie_stats.schema.MODEL_COORDS lacks d_head / d_model.")
_RATIO = f"{_D_HEAD}_over_{_D_MODEL}"
MODEL_PREDICTORS = (*schema.MODEL_COORDS, *(f"log2_{c}" for c in schema.MODEL_COORDS), _RATIO)
#: Extra result column of ``model_comparison``: AIC of the best other model minus the
#: predicted model's (positive when the predicted model is better).
AIC_MARGIN = "aic_margin"


def _model_table(data: TestInput) -> Any:
    import pandas as pd

    da = data.arrays["response"]
    if schema.STEP in da.dims:
        raise SpecError("selection['response'] must pick one step per model (not step='all').")
    over = [d for d in da.dims if d != schema.MODEL]
    resp = da.mean(dim=over, skipna=True) if over else da
    table = pd.DataFrame({"response": np.asarray(resp.values, dtype=float).reshape(-1)})
    for c in schema.MODEL_COORDS:
        if c in da.coords and np.asarray(da[c].values).dtype.kind in "iuf":
            col = np.asarray(da[c].values, dtype=float).reshape(-1)
            table[c] = col
            with np.errstate(divide="ignore", invalid="ignore"):
                table[f"log2_{c}"] = np.log2(col)
    if _D_HEAD in table and _D_MODEL in table:
        table[_RATIO] = table[_D_HEAD] / table[_D_MODEL]
    table.index = [str(m) for m in np.asarray(da[schema.MODEL].values).reshape(-1)]
    return table


def _run_model_comparison(data: TestInput) -> Any:
    p = data.params
    table = _model_table(data)
    models = {str(k): list(v) for k, v in p["models"].items()}
    res = _stats().compare_models(table, "response", models)
    pred = p["predicted"]
    others = res.drop(index=pred)
    margin = float(others[C.AIC].min() - res.loc[pred, C.AIC]) if len(others) else float("nan")
    return res.loc[[pred]].reset_index(drop=True).assign(**{AIC_MARGIN: margin})


def decide_model_comparison(row: Mapping[str, float], ctx: Decision) -> tuple[str, str]:
    """Model-comparison rule: the predicted model against the best other one, by AIC.

    *supported* when its AIC is lower than every other model's by at least
    ``params['min_delta_aic']`` (2 by default); *refuted* when another model's is lower by
    at least that much; *inconclusive* otherwise (Burnham & Anderson 2002, §2.6).

    >>> ctx = Decision(Prediction("preferred"), 0.05, {}, {"min_delta_aic": 2.0})
    >>> decide_model_comparison({AIC_MARGIN: 5.0}, ctx)[0], decide_model_comparison({AIC_MARGIN: -3.0}, ctx)[0]
    ('supported', 'refuted')
    """
    margin, delta = row.get(AIC_MARGIN), float(ctx.params.get("min_delta_aic", 2.0))
    if not _finite(margin):
        return "inconclusive", "no AIC margin (a single model, or fits failed)"
    if margin >= delta:
        return "supported", f"the predicted model's AIC is lower than every other's by >= {delta}"
    if margin <= -delta:
        return "refuted", f"another model's AIC is lower than the predicted one's by >= {delta}"
    return "inconclusive", f"AIC differences below {delta}: the models are not distinguished"


_FORMULA_WORDS = ("I", "np", "log", "log2", "log10", "exp", "sqrt", "center", "standardize", "scale")
_GROUP_COLUMN = "stratum"


def _validate_formula(spec: Any, params: Mapping[str, Any]) -> None:
    import re

    formula, term = params.get("formula"), params.get("term")
    roles = list(spec.selection)
    if not isinstance(formula, str) or "~" not in formula:
        raise _err(spec, "params['formula']", f"expected a formula 'y ~ x + ...', got {formula!r}.")
    for word in re.findall(r"[A-Za-z_][A-Za-z0-9_]*", formula):
        if word not in roles and word not in _FORMULA_WORDS:
            raise _err(spec, "params['formula']",
                       f"unknown name {word!r}: the formula's variables are the selection's roles "
                       f"({', '.join(roles)}).{did_you_mean(word, roles)}")
    if not isinstance(term, str) or not term:
        raise _err(spec, "params['term']", "name the coefficient the prediction is about (e.g. 'x:z').")
    categorical = params.get("categorical") or ()
    if isinstance(categorical, str) or not all(c in roles for c in categorical):
        raise _err(spec, "params['categorical']",
                   f"expected a tuple of roles among {', '.join(roles)}, got {categorical!r}.")
    if params.get("strata") == "none":
        raise _err(spec, "params['strata']", "a mixed model needs groups: strata 'layer' or 'model'.")


def _run_mixed_model(data: TestInput) -> Any:
    p = data.params
    roles = list(data.arrays)
    table = data.table(*roles)
    frame = table[roles].copy()
    for role in p.get("categorical") or ():  # labels as categories (coefficients per level)
        frame[role] = frame[role].map(lambda v: f"{v:g}").astype("category")
    frame[_GROUP_COLUMN] = data.strata(table)
    res = _stats().mixed_model(frame, p["formula"], groups=_GROUP_COLUMN)
    if p["term"] not in res.index:
        terms = [str(t) for t in res.index]
        raise SpecError(f"params['term']: the model has no coefficient {p['term']!r}."
                        f"{did_you_mean(p['term'], terms)} Coefficients: {', '.join(terms)}.")
    return res.loc[[p["term"]]].reset_index(drop=True)


_CORR = {"method": "spearman", "alternative": "two-sided", **_RESAMPLING}

register_test("model_comparison", _run_model_comparison, decide_model_comparison,
              roles=("response",), params={"models": None, "predicted": None, "min_delta_aic": 2.0},
              required_params=("models", "predicted"), directions=("preferred",),
              description="OLS models of a per-model response (the selection averaged over "
                          "layers and heads) on model-shape predictors (MODEL_PREDICTORS), "
                          "compared by AIC (lie_stats.stats.compare_models)")
def decide_mixed_model(row: Mapping[str, float], ctx: Decision) -> tuple[str, str]:
    """The p-value rule, but a fit that did not converge decides nothing.

    >>> ctx = Decision(Prediction("negative"), 0.05, {}, {})
    >>> decide_mixed_model({"p_value": 0.001, "effect": -1.0, C.CONVERGED: 0.0}, ctx)[0]
    'inconclusive'
    """
    if row.get(C.CONVERGED) == 0:
        return "inconclusive", "the mixed model did not converge (statsmodels MixedLM)"
    return decide_directional(row, ctx)


register_test("mixed_model", _run_mixed_model, decide_mixed_model, roles=("y", "x"),
              optional_roles=("z", "w"),
              params={"formula": None, "term": None, "categorical": (), "strata": "layer"},
              required_params=("formula", "term"),
              description="linear mixed model with a random intercept per stratum (layer), "
                          "Wald test of one coefficient (params formula over the roles, term; "
                          "roles listed in categorical enter as factors, e.g. term 'z[T.2]'); "
                          "descriptive (lie_stats.stats.mixed_model)")
register_test("correlation", _run_correlation, decide_directional, roles=("x", "y"), params=_CORR,
              description="rank/linear correlation across heads, permutation p within strata, "
                          "cluster-bootstrap interval (lie_stats.stats.correlation)")
register_test("partial_correlation", _run_partial, decide_directional, roles=("x", "y", "covar"),
              params=_CORR, description="partial correlation of x and y given covar "
                                        "(lie_stats.stats.partial_correlation)")
register_test("group_difference", _run_group_difference, decide_directional, roles=("x", "group"),
              params={"alternative": "two-sided", "groups": None, **_RESAMPLING},
              description="difference of x between two groups (params groups=(a, b): codes of "
                          "the group variable; the effect, the difference in means centred "
                          "within strata, is positive when b is larger; rank-biserial beside "
                          "it), within-strata permutation (lie_stats.stats.group_difference)")
register_test("replication", _run_replication, decide_replication, roles=("x", "y"),
              params={"method": "spearman", **_RESAMPLING}, directions=("positive", "negative"),
              reference=("r|rho", "n"),
              description="replication of a correlation against the original's r and n "
                          "(lie_stats.stats.replicate_correlation)")
register_test("correlation_equivalence", _run_correlation_equivalence, decide_equivalence,
              roles=("x", "y"), params={"method": "spearman", "bound": None, **_RESAMPLING},
              directions=("equivalent",),
              description="TOST that a correlation lies within ±bound (lie_stats.stats.tost_correlation)")
register_test("tost_relative", _run_tost_relative, decide_equivalence, roles=("base", "tuned"),
              params={"bound": 1e-3}, directions=("equivalent",),
              description="paired TOST on log values, relative bound (lie_stats.stats.tost_relative)")
register_test("trend", _run_trend, decide_directional, roles=("values",),
              params={"method": "spearman", "alternative": "two-sided", "n_perm": 9999},
              description="monotone trend over checkpoints of the mean selected value "
                          "(lie_stats.stats.trend)")
register_test("enrichment", _run_enrichment, decide_interval, roles=("first", "last"),
              params={"alternative": "two-sided", **_RESAMPLING}, directions=("above", "below"),
              description="enrichment last/first with a cluster-bootstrap interval "
                          "(METRICS §6.1, lie_stats.stats.enrichment)")
register_test("boundary_ratio", _run_boundary_ratio, decide_interval, roles=("values",),
              params={"summary": "mean", "alternative": "two-sided", "n_boot": 2000, "ci": 0.95},
              directions=("above", "below"),
              description="boundary layers over interior layers of one model (METRICS §6.3, "
                          "lie_stats.stats.boundary_ratio); select per-head values (summary "
                          "'cv' of commutator_mean is head_heterogeneity) so the interval "
                          "resamples heads within layers")
register_test("depth_crossover", _run_depth_crossover, decide_crossing, roles=("values",),
              params={"n_boot": 2000, "ci": 0.95}, directions=("crossing",),
              description="step where the depth-gradient slope changes sign, as a fraction of "
                          "training (METRICS §6.2, lie_stats.stats.depth_crossover)")


# ----------------------------------------------------------------------------- evaluation


@dataclass
class Result:
    """The outcome of one hypothesis on one dataset (one row of reports/results.json).

    The fields of :data:`lie_stats.schema.RESULT_FIELDS` plus ``source``, ``reason``,
    ``build`` (the command that builds missing data), ``extra`` (the test's other numeric
    columns), the declared ``selection``, ``params`` and ``prediction``, the specification
    curve (one entry per analysis choice), the pinned verdict and hash with the flag
    ``declaration_changed`` and the pytest ``outcome`` (filled in by the plugin), and
    ``data`` (the selected values, for figures; not serialized).
    """

    id: str
    claim: str
    source: str
    dataset: str
    verdict: str
    reason: str
    gate: str
    test: str
    spec_hash: str
    reference: dict[str, Any]
    statistic: float = math.nan
    p_value: float = math.nan
    effect: float = math.nan
    ci_low: float = math.nan
    ci_high: float = math.nan
    n: float = math.nan
    build: str = ""
    extra: dict[str, float] = field(default_factory=dict)
    selection: dict[str, Any] = field(default_factory=dict)
    params: dict[str, Any] = field(default_factory=dict)
    prediction: dict[str, Any] = field(default_factory=dict)
    spec_curve: list[dict[str, Any]] = field(default_factory=list)
    module: str = ""
    notes: str = ""
    pinned_verdict: str | None = None
    pinned_hash: str | None = None
    declaration_changed: bool = False
    outcome: str = ""
    data: Any = field(default=None, repr=False)

    @property
    def key(self) -> str:
        """Registry key: ``<id>::<dataset>``."""
        return f"{self.id}::{self.dataset}"

    @property
    def spec_curve_share(self) -> float:
        """Share of the non-skipped analysis choices whose verdict equals this one (NaN if none)."""
        done = [c for c in self.spec_curve if c["verdict"] != "skipped"]
        if not done:
            return math.nan
        return sum(c["verdict"] == self.verdict for c in done) / len(done)

    @property
    def spec_curve_supported(self) -> float:
        """Share of the non-skipped analysis choices whose verdict is ``supported`` (NaN if none)."""
        done = [c for c in self.spec_curve if c["verdict"] != "skipped"]
        if not done:
            return math.nan
        return sum(c["verdict"] == "supported" for c in done) / len(done)

    def row(self) -> dict[str, Any]:
        """The JSON-ready record (full precision; NaN as None)."""
        out: dict[str, Any] = {}
        for f in fields(self):
            if f.name == "data":
                continue
            out[f.name] = _json_number(getattr(self, f.name))
        out["spec_curve_share"] = _json_number(self.spec_curve_share)
        out["spec_curve_supported"] = _json_number(self.spec_curve_supported)
        if out["n"] is not None and float(out["n"]).is_integer():
            out["n"] = int(out["n"])  # a count
        return out


def _json_number(value: Any) -> Any:
    if isinstance(value, (float, np.floating)):
        v = float(value)
        return v if math.isfinite(v) else None
    if isinstance(value, np.integer):
        return int(value)
    if isinstance(value, Mapping):
        return {k: _json_number(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_json_number(v) for v in value]
    return value


#: The ``dataset`` of an out-of-scope claim's result.
NO_DATASET = "-"


@dataclass(frozen=True)
class OutOfScope:
    """A claim recorded in the registry as not testable with weight-geometry data.

    It is collected like a spec, always reported as ``skipped`` with its reason (CLAIMS.md:
    "recorded in the registry as not testable"), and never fails.

    Parameters
    ----------
    id, claim, source : str
        As :class:`HypothesisSpec`.
    reason : str
        Why it cannot be tested here (what data or intervention it would need).
    reference : mapping
        The original figures, for the record.
    notes : str

    Examples
    --------
    >>> o = OutOfScope(id="G1", claim="gating preserves 38.9 %", source="essay",
    ...                reason="a training intervention on other models", reference={"preserved": 0.389})
    >>> r = o.result()
    >>> r.verdict, r.dataset, r.gate
    ('skipped', '-', 'report')
    """

    id: str
    claim: str
    source: str
    reason: str
    reference: Mapping[str, Any] = field(default_factory=dict)
    notes: str = ""
    module: str = field(default="", compare=False, repr=False)

    def __post_init__(self) -> None:
        if not self.module:
            object.__setattr__(self, "module", _caller_module())
        object.__setattr__(self, "reference", dict(self.reference or {}))
        for name in ("id", "claim", "source", "reason"):
            value = getattr(self, name)
            if not isinstance(value, str) or not value.strip():
                raise _err(self, name, f"expected a non-empty string, got {value!r}.")

    def __hash__(self) -> int:
        return hash(self.spec_hash())

    def declaration(self) -> dict[str, Any]:
        return {"id": self.id, "claim": self.claim, "reason": self.reason,
                "reference": _jsonable(self.reference), "out_of_scope": True}

    def spec_hash(self) -> str:
        """Hash of the declaration, as :meth:`HypothesisSpec.spec_hash`."""
        text = json.dumps(self.declaration(), sort_keys=True, separators=(",", ":"), ensure_ascii=True)
        return hashlib.sha256(text.encode("ascii")).hexdigest()

    def result(self) -> "Result":
        """The registry's record of this claim: verdict ``skipped`` with the reason."""
        return Result(id=self.id, claim=self.claim, source=self.source, dataset=NO_DATASET,
                      verdict="skipped", reason=f"out of scope: {self.reason}", gate="report",
                      test="none", spec_hash=self.spec_hash(), reference=_jsonable(self.reference),
                      module=self.module, notes=self.notes)


def _base_result(spec: HypothesisSpec, dataset: str, verdict: str, reason: str) -> Result:
    return Result(
        id=spec.id, claim=spec.claim, source=spec.source, dataset=dataset, verdict=verdict,
        reason=reason, gate=spec.gate, test=spec.test, spec_hash=spec.spec_hash(),
        reference=_jsonable(spec.reference),
        selection={k: v.declaration() for k, v in spec.selection.items()},
        params=_jsonable(spec.resolved_params()), prediction=spec.prediction.declaration(),
        module=spec.module, notes=spec.notes,
    )


def _run_once(spec: HypothesisSpec, cube: Any, dataset: str) -> Result:
    where = f"{spec.module}: HypothesisSpec {spec.id!r} on dataset {dataset!r}"
    try:
        arrays = {role: select(sel, cube, where=f"{where}, selection[{role!r}]")
                  for role, sel in spec.selection.items()}
    except _Skip as e:
        return _base_result(spec, dataset, "skipped", str(e))
    params = spec.resolved_params()
    data = TestInput(arrays=arrays, params=params, prediction=spec.prediction,
                     reference=dict(spec.reference))
    try:
        frame = spec.kind.fn(data)
    except StatsInputError as e:
        res = _base_result(spec, dataset, "inconclusive", f"the test is undefined on these data: {e}")
        res.data = data
        return res
    except SpecError as e:
        raise SpecError(f"{where}: {e}") from e
    row = _frame_row(frame, spec.test)
    verdict, reason = spec.kind.decide(row, Decision(spec.prediction, float(params["alpha"]),
                                                     dict(spec.reference), params))
    if verdict not in schema.VERDICTS[:3]:
        raise LieStatsError(f"Test {spec.test!r}: decision rule returned {verdict!r}; expected one of "
                            f"{schema.VERDICTS[:3]}.")
    res = _base_result(spec, dataset, verdict, reason)
    for col in schema.STAT_COLUMNS:
        setattr(res, col, row[col])
    res.extra = {k: v for k, v in row.items() if k not in schema.STAT_COLUMNS}
    res.data = data
    return res


def _frame_row(frame: Any, test: str) -> dict[str, float]:
    import pandas as pd

    if not isinstance(frame, pd.DataFrame) or len(frame) != 1:
        raise LieStatsError(f"Test {test!r} must return a one-row DataFrame, got {type(frame).__name__}"
                            f" of length {getattr(frame, '__len__', lambda: '?')()}.")
    if tuple(frame.columns[: len(schema.STAT_COLUMNS)]) != schema.STAT_COLUMNS:
        raise LieStatsError(f"Test {test!r}: the first columns must be {schema.STAT_COLUMNS}, got "
                            f"{tuple(frame.columns)}.")
    out = {}
    for k, v in frame.iloc[0].items():
        try:
            out[str(k)] = float(v)
        except (TypeError, ValueError):
            continue
    return out


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
    >>> s = HypothesisSpec(id="X1", claim="c", source="s", datasets=("toy",),
    ...     selection={"x": Select("head_contribution", step="first"),
    ...                "y": Select("change_from_init")}, test="correlation",
    ...     params={"n_perm": 999, "n_boot": 200}, prediction=Prediction("negative"), gate="report")
    >>> evaluate_cube(s, cube).verdict
    'supported'
    """
    _check_cube(cube, dataset)
    main = _run_once(spec, cube, dataset)
    for choice in spec.choice_grid():
        sub = _run_once(spec.with_choice(choice), cube, dataset)
        main.spec_curve.append({
            "choice": _jsonable(choice), "verdict": sub.verdict, "reason": sub.reason,
            **{c: _json_number(getattr(sub, c)) for c in schema.STAT_COLUMNS},
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
    >>> s = HypothesisSpec(id="X1", claim="c", source="s", datasets=("toy",),
    ...     selection={"x": Select("head_contribution", step="first"),
    ...                "y": Select("change_from_init")}, test="correlation",
    ...     prediction=Prediction("negative"), gate="report")
    >>> r = evaluate(s, root)[0]
    >>> r.verdict, r.build
    ('skipped', 'make toy')
    """
    from .datasets import card_cubes, find_dataset

    check_datasets(spec, datasets_dir)
    names = list(spec.datasets if datasets is None else datasets)
    out = []
    for name in names:
        if name not in spec.datasets:
            raise _err(spec, "datasets", f"{name!r} is not one of this spec's datasets {spec.datasets!r}.")
        card = find_dataset(name, datasets_dir)
        if card.missing:
            need = f"; needs {card.needs}" if card.needs else ""
            res = _base_result(spec, name, "skipped",
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


# ---- test kinds for A10 / B4 (helper H4) ----
# Paired equivalence of a metric between two compressions (tost_paired), clustered shares
# and means of head data with a stratified cluster-bootstrap interval (share_above,
# head_mean), and the agreement of another hypothesis's verdict across compressions
# (verdict_agreement, built with compression_agreement). Numerics in
# lie_stats.stats.summaries; claims A10 and B4 of CLAIMS.md.

#: Verdict codes of ``verdict_agreement`` (its effect is the range of these codes).
VERDICT_CODES = {"supported": 1.0, "inconclusive": 0.0, "refuted": -1.0}
#: Prefix of ``verdict_agreement``'s extra columns holding each compression's verdict code;
#: the target's effect, interval and p follow as ``effect_<tag>``, ``ci_low_<tag>``, ...
#: (``<tag>``: the compression with ':' as '_', e.g. ``fixed_64``).
AGREE_VERDICT = "verdict"
#: Extra column: pairs of compressions whose verdicts are opposite decisions.
N_OPPOSITE = "n_opposite"
_AGREE_SEP = "__c"
_AGREE_MAX = 4
_AGREE_ROLES = tuple(sorted({r for k in _REGISTRY.values() for r in (*k.roles, *k.optional_roles)}))


def _run_tost_paired(data: TestInput) -> Any:
    p = data.params
    table = data.table("a", "b")
    bound = data.prediction.bound if data.prediction.bound is not None else p["bound"]
    return _stats().tost_paired(table["a"].to_numpy(float), table["b"].to_numpy(float),
                                       bound=bound, alpha=p["alpha"])


def _h4_clusters(table: Any, test: str) -> tuple[np.ndarray, np.ndarray | None]:
    """Clusters (model, layer) and strata (model) of a tidy table of head or layer data."""
    import pandas as pd

    if schema.LAYER not in table.columns:
        raise SpecError(f"{test}: the selection has no {schema.LAYER!r} dimension; clusters are "
                        f"layers (select a per-head or per-layer variable).")
    cols = [c for c in (schema.MODEL, schema.LAYER) if c in table.columns]
    clusters = pd.factorize(pd.MultiIndex.from_frame(table[cols]))[0]
    strata = pd.factorize(table[schema.MODEL])[0] if schema.MODEL in table.columns else None
    return clusters, strata


def _run_share_above(data: TestInput) -> Any:
    p = data.params
    table = data.table("values")
    clusters, strata = _h4_clusters(table, "share_above")
    return _stats().share_above(table["values"].to_numpy(float), p["threshold"], clusters,
                                       strata=strata, null_value=float(data.prediction.value),
                                       n_boot=p["n_boot"], ci=p["ci"], seed=p["seed"])


def _run_cluster_mean(data: TestInput) -> Any:
    p = data.params
    masked = "mask" in data.arrays
    if masked != (p.get("mask_above") is not None):
        raise SpecError("selection['mask'] and params['mask_above'] go together: the mask keeps "
                        "the heads whose mask value is above mask_above.")
    table = data.table("values", "mask") if masked else data.table("values")
    if masked:
        table = table[table["mask"].to_numpy(float) > float(p["mask_above"])]
        if table.empty:
            raise StatsInputError(f"head_mean: no head has a mask value above {p['mask_above']}.")
    clusters, strata = _h4_clusters(table, "head_mean")
    return _stats().cluster_mean(table["values"].to_numpy(float), clusters, strata=strata,
                                  transform=p["transform"], null_value=float(data.prediction.value),
                                  n_boot=p["n_boot"], ci=p["ci"], seed=p["seed"])


def _agreement_role(role: str, i: int) -> str:
    return f"{role}{_AGREE_SEP}{i}"


def _compression_tag(compression: str) -> str:
    import re

    return re.sub(r"[^A-Za-z0-9]+", "_", str(compression)).strip("_")


def _run_verdict_agreement(data: TestInput) -> Any:
    """Evaluate the target's test under each compression on the units every compression
    has (same models, layers, heads and steps), and compare the verdicts."""
    import pandas as pd
    import xarray as xr

    p = data.params
    comps = [str(c) for c in p["compressions"]]
    if p["target_test"] not in _REGISTRY:
        raise SpecError(f"params['target_test']: unknown test {p['target_test']!r}."
                        f"{did_you_mean(str(p['target_test']), _REGISTRY)}")
    kind = _REGISTRY[p["target_test"]]
    roles = sorted({r.rsplit(_AGREE_SEP, 1)[0] for r in data.arrays})
    per_comp: list[dict[str, Any]] = [{} for _ in comps]
    for role in roles:
        arrays = xr.align(*(data.arrays[_agreement_role(role, i)] for i in range(len(comps))),
                          join="inner")
        ok = np.logical_and.reduce([np.isfinite(a.values) for a in arrays])
        if not ok.any():
            raise StatsInputError(f"verdict_agreement: no unit of selection {role!r} has data under "
                                  f"every compression ({', '.join(comps)}).")
        first = arrays[0]
        mask = xr.DataArray(ok, dims=first.dims,
                            coords={d: first[d] for d in first.dims if d in first.indexes})
        for i, a in enumerate(arrays):
            per_comp[i][role] = a.where(mask)
    prediction = Prediction(**p["target_prediction"])
    tparams = dict(p["target_params"])
    reference = dict(p["target_reference"] or {})
    alpha = float(tparams.get("alpha", 0.05))
    out: dict[str, float] = {}
    codes = []
    for i, comp in enumerate(comps):
        sub = TestInput(arrays=per_comp[i], params=tparams, prediction=prediction, reference=reference)
        try:
            row = _frame_row(kind.fn(sub), kind.name)
            verdict, _ = kind.decide(row, Decision(prediction, alpha, reference, tparams))
        except StatsInputError:
            row, verdict = {}, "inconclusive"
        tag = _compression_tag(comp)
        codes.append(VERDICT_CODES[verdict])
        out[f"{AGREE_VERDICT}_{tag}"] = VERDICT_CODES[verdict]
        for col in (C.EFFECT, C.CI_LOW, C.CI_HIGH, C.P_VALUE):
            out[f"{col}_{tag}"] = float(row.get(col, math.nan))
    opposite = sum(1 for a, b in itertools.combinations(codes, 2) if a * b < 0)
    head = {C.N: len(comps), C.STATISTIC: float(len(set(codes))), C.P_VALUE: math.nan,
            C.EFFECT: float(max(codes) - min(codes)), C.CI_LOW: math.nan, C.CI_HIGH: math.nan}
    return pd.DataFrame([{**head, **out, N_OPPOSITE: float(opposite)}])


def decide_agreement(row: Mapping[str, float], ctx: Decision) -> tuple[str, str]:
    """Verdict-agreement rule: the target's verdict codes (supported +1, inconclusive 0,
    refuted -1) under the compressions may differ by at most the prediction's bound.

    *supported* when the range of the codes is within the bound and some verdict is
    decisive; *refuted* when the range exceeds the bound (the conclusion depends on the
    compression); *inconclusive* when every compression is inconclusive (no conclusion to
    compare) or a code is missing.

    >>> ctx = Decision(Prediction("equivalent", bound=0.5), 0.05, {}, {"compressions": ["none", "fixed:64"]})
    >>> decide_agreement({"effect": 0.0, "verdict_none": 1.0, "verdict_fixed_64": 1.0}, ctx)[0]
    'supported'
    >>> decide_agreement({"effect": 1.0, "verdict_none": 1.0, "verdict_fixed_64": 0.0}, ctx)[0]
    'refuted'
    """
    comps = [str(c) for c in ctx.params.get("compressions") or ()]
    codes = [row.get(f"{AGREE_VERDICT}_{_compression_tag(c)}") for c in comps]
    if not codes or not _finite(row.get(C.EFFECT), *codes):
        return "inconclusive", "the target's verdict is missing under some compression"
    names = {code: name for name, code in VERDICT_CODES.items()}
    text = "; ".join(f"{c}: {names.get(float(code), code)}" for c, code in zip(comps, codes))
    bound = float(ctx.prediction.bound if ctx.prediction.bound is not None else 0.5)
    if float(row[C.EFFECT]) > bound:
        return "refuted", f"the verdict depends on the compression ({text})"
    if all(float(code) == 0.0 for code in codes):
        return "inconclusive", f"every compression is inconclusive ({text}): no conclusion to compare"
    return "supported", f"the same conclusion under every compression ({text})"


def compression_agreement(
    target: HypothesisSpec,
    *,
    id: str,
    claim: str,
    source: str,
    compressions: Sequence[str] = ("none", "adaptive", "fixed:64"),
    tolerance: float = 0.5,
    gate: str = "pinned",
    datasets: Sequence[str] | None = None,
    notes: str = "",
) -> HypothesisSpec:
    """A spec testing that ``target``'s verdict is the same under every compression (claim A10).

    The target's selection is repeated once per compression (roles ``<role>__c<i>``, the
    variable's projection set to the compression); evaluation keeps the units every
    compression has data for, runs the target's test and decision rule on each, and
    compares the verdicts (:func:`decide_agreement`). The target's whole declaration (test,
    resolved parameters, prediction, reference) is part of this spec's parameters, so its
    pre-registration hash changes when the target's does.

    Parameters
    ----------
    target : HypothesisSpec
        The hypothesis whose conclusion must not depend on the compression.
    id, claim, source, gate, notes
        As :class:`HypothesisSpec`.
    compressions : sequence of str
        Two to four compressions (METRICS.md §2); the first is listed first in reports.
    tolerance : float, default 0.5
        Largest allowed range of the verdict codes (supported +1, inconclusive 0, refuted
        -1): 0.5 demands identical verdicts; 1.5 only forbids opposite decisions.
    datasets : sequence of str, optional
        Default: the target's.

    Returns
    -------
    HypothesisSpec
        Test ``verdict_agreement``, prediction ``equivalent`` within ``tolerance``; the
        target's choices other than ``projection`` become its specification curve.

    Raises
    ------
    SpecError
        The target selects no variable with a projection dimension, too few or too many
        compressions, an unknown compression.

    Examples
    --------
    >>> t = HypothesisSpec(id="T1", claim="c", source="s", datasets=("toy",), test="trend",
    ...     selection={"values": Select("abelian_fraction", step="all", family="Q", projection="none")},
    ...     prediction=Prediction("positive"), gate="report")
    >>> a = compression_agreement(t, id="T1-agree", claim="same verdict", source="s")
    >>> sorted(a.selection), a.test
    (['values__c0', 'values__c1', 'values__c2'], 'verdict_agreement')
    """
    if not isinstance(target, HypothesisSpec):
        raise SpecError(f"compression_agreement({id!r}): target must be a HypothesisSpec, got "
                        f"{type(target).__name__}.")
    comps = tuple(str(c) for c in compressions)
    if not 2 <= len(comps) <= _AGREE_MAX or len(set(comps)) != len(comps):
        raise SpecError(f"compression_agreement({id!r}): expected 2 to {_AGREE_MAX} distinct "
                        f"compressions, got {comps!r}.")
    for c in comps:
        _check_projection(c, target, "compressions")
    if not any(schema.PROJECTION in schema.VARIABLES[s.metric].dims for s in target.selection.values()):
        raise SpecError(f"compression_agreement({id!r}): target {target.id!r} selects no variable "
                        f"with a projection dimension; its verdict cannot depend on the compression.")
    selection = {}
    for role, sel in target.selection.items():
        if role not in _AGREE_ROLES:
            raise SpecError(f"compression_agreement({id!r}): role {role!r} of target {target.id!r} "
                            f"is not one verdict_agreement knows ({', '.join(_AGREE_ROLES)}).")
        has = schema.PROJECTION in schema.VARIABLES[sel.metric].dims
        for i, comp in enumerate(comps):
            selection[_agreement_role(role, i)] = _replace(sel, projection=comp) if has else sel
    params = {
        "target_id": target.id, "target_test": target.test,
        "target_params": _jsonable(target.resolved_params()),
        "target_prediction": target.prediction.declaration(),
        "target_reference": _jsonable(target.reference), "compressions": list(comps),
    }
    choices = {k: v for k, v in target.choices.items()
               if k in _SWEEP_SELECT and k != schema.PROJECTION}
    return HypothesisSpec(
        id=id, claim=claim, source=source,
        datasets=tuple(datasets) if datasets is not None else target.datasets,
        selection=selection, test="verdict_agreement", params=params,
        prediction=Prediction("equivalent", bound=float(tolerance)),
        reference={"claim": "identical", "target": target.id}, gate=gate, choices=choices,
        notes=notes,
    )


register_test("tost_paired", _run_tost_paired, decide_equivalence, roles=("a", "b"),
              params={"bound": None}, directions=("equivalent",),
              description="paired TOST that mean(b - a) lies within ±bound (absolute; units "
                          "aligned by model and layer, e.g. one metric under two compressions; "
                          "lie_stats.stats.summaries.tost_paired)")
register_test("share_above", _run_share_above, decide_interval, roles=("values",),
              params={"threshold": None, "n_boot": 2000, "ci": 0.95},
              required_params=("threshold",), directions=("above", "below"),
              description="share of heads whose value exceeds params threshold, percentile "
                          "interval resampling layers within models, bootstrap p against the "
                          "prediction's value (lie_stats.stats.summaries.share_above)")
register_test("head_mean", _run_cluster_mean, decide_interval, roles=("values",),
              optional_roles=("mask",),
              params={"transform": "identity", "mask_above": None, "n_boot": 2000, "ci": 0.95},
              directions=("above", "below"),
              description="mean (transform 'log': geometric mean) of head values, optionally "
                          "over the heads whose mask exceeds mask_above, percentile interval "
                          "resampling layers within models (lie_stats.stats.summaries.cluster_mean)")
register_test("verdict_agreement", _run_verdict_agreement, decide_agreement, roles=(),
              optional_roles=tuple(_agreement_role(r, i) for r in _AGREE_ROLES for i in range(_AGREE_MAX)),
              params={"target_id": None, "target_test": None, "target_params": None,
                      "target_prediction": None, "target_reference": None, "compressions": None},
              required_params=("target_id", "target_test", "target_params", "target_prediction",
                               "target_reference", "compressions"),
              directions=("equivalent",),
              description="the target hypothesis's verdict under each compression, on the units "
                          "every compression has; supported when the verdict codes agree within "
                          "the bound (build with compression_agreement; claim A10)")


# ---- test kinds for A2 / A7 (helper H2) ----
# delta_rank, delta_order: where a parameter category ranks in the parameter-delta
# map (METRICS.md §6.4; lie_stats.delta), bootstrap over layers (lie_stats.stats.ranks).
# ratio_of_changes: mean change of one selection over the mean change of another over the same
# units (pretraining vs post-training), stratified cluster bootstrap over layers.
# Verdict rules:
#   delta_rank (directions above / below: the rank number, 1 = changed most): the interval
#     rule (decide_interval) on the bootstrap interval of the rank.
#   delta_order (direction above, value v): supported when the declared order holds on the
#     full data and in at least a share v of the bootstrap resamples; refuted when it fails
#     on the full data and holds in at most 1 - v; inconclusive otherwise.
#   ratio_of_changes: above / below: the interval rule on the ratio; equivalent (value v, bound
#     b in decades): supported when the interval lies inside [v / 10**b, v * 10**b], refuted
#     when it lies entirely outside it, inconclusive otherwise (declare ci = 1 - 2 alpha for
#     the TOST reading).

_DELTA_ROLES = ("totals", "layers", "norms")


def _delta_inputs(data: TestInput, test: str) -> tuple[np.ndarray, np.ndarray, np.ndarray, list[str]]:
    """totals [K], per-layer values and norms [K, L] of one model, categories without data dropped."""
    for role in _DELTA_ROLES:
        _one_model(data, role, test)
    arrays = {}
    for role in _DELTA_ROLES:
        da = data.arrays[role].reset_coords(drop=True)
        if schema.MODEL in da.dims:
            da = da.isel({schema.MODEL: 0}, drop=True)
        if schema.CATEGORY not in da.dims or (role != "totals" and schema.LAYER not in da.dims):
            raise SpecError(f"selection[{role!r}] must keep the {schema.CATEGORY!r} dimension"
                            f"{'' if role == 'totals' else ' and the layer dimension'} (select "
                            f"param_delta for totals, param_delta_layer / param_base_norm_layer "
                            f"for layers / norms, at one step).")
        if schema.STEP in da.dims:
            raise SpecError(f"selection[{role!r}] must pick one step (not step='all').")
        arrays[role] = da
    tot = arrays["totals"]
    cats = [str(c) for c in tot[schema.CATEGORY].values.tolist()]
    keep = [c for c, v in zip(cats, tot.values.tolist()) if np.isfinite(v)]
    layers = arrays["layers"].sel({schema.CATEGORY: keep}).transpose(schema.CATEGORY, schema.LAYER)
    norms = arrays["norms"].sel({schema.CATEGORY: keep}).transpose(schema.CATEGORY, schema.LAYER)
    lv, nv = layers.values.astype(float), norms.values.astype(float)
    present = np.isfinite(lv).any(axis=0)  # layers the model has (padding dropped)
    return (tot.sel({schema.CATEGORY: keep}).values.astype(float), lv[:, present], nv[:, present], keep)


def _run_category_rank(data: TestInput) -> Any:

    p = data.params
    tot, lv, nv, cats = _delta_inputs(data, "delta_rank")
    return _stats().category_rank(tot, lv, nv, categories=cats, target=p["target"], n_boot=p["n_boot"],
                               ci=p["ci"], seed=p["seed"])


def _run_category_order(data: TestInput) -> Any:

    p = data.params
    tot, lv, nv, cats = _delta_inputs(data, "delta_order")
    return _stats().category_order(tot, lv, nv, categories=cats, groups=[list(g) for g in p["order"]],
                                n_boot=p["n_boot"], seed=p["seed"])


def decide_category_order(row: Mapping[str, float], ctx: Decision) -> tuple[str, str]:
    """Order rule: the declared order on the full data and its bootstrap share (block comment above).

    >>> ctx = Decision(Prediction("above", value=0.95), 0.05, {}, {})
    >>> decide_category_order({"order_holds": 1.0, "boot_share": 0.99}, ctx)[0]
    'supported'
    >>> decide_category_order({"order_holds": 0.0, "boot_share": 0.0}, ctx)[0]
    'refuted'
    """

    holds, share = row.get(_stats().ORDER_HOLDS), row.get(_stats().BOOT_SHARE)
    if not _finite(holds, share):
        return "inconclusive", "no order statistic on these data"
    v = float(ctx.prediction.value)
    if holds == 1 and share >= v:
        return "supported", f"the declared order holds, and in {share:.1%} of bootstrap resamples (>= {v:.0%})"
    if holds == 0 and share <= 1 - v:
        return "refuted", (f"the declared order fails, and holds in only {share:.1%} of bootstrap "
                           f"resamples (<= {1 - v:.0%})")
    return "inconclusive", f"the order {'holds' if holds == 1 else 'fails'} but its bootstrap share is {share:.1%}"


def _change_band(prediction: Prediction) -> tuple[float, float]:
    v = float(prediction.value)
    if prediction.direction == "equivalent":
        b = float(prediction.bound)
        return v / 10.0 ** b, v * 10.0 ** b
    if prediction.direction == "below":
        return -np.inf, v
    return v, np.inf


def _role_matrix(data: TestInput, role: str) -> tuple[np.ndarray, list[str], Any]:
    """[n_models, n_units] values of a one-step selection, its models, and the unit coordinates."""
    da = data.arrays[role].reset_coords(drop=True)
    if schema.STEP in da.dims:
        raise SpecError(f"selection[{role!r}] must pick one step (not step='all').")
    rest = [d for d in da.dims if d != schema.MODEL]
    da = da.transpose(schema.MODEL, *rest)
    units = da.isel({schema.MODEL: 0}, drop=True)
    layer = (units[schema.LAYER].broadcast_like(units).values.reshape(-1) if schema.LAYER in rest
             else np.zeros(int(np.prod(units.shape)), dtype=int))
    coords = [(d, [str(v) for v in da[d].values.tolist()]) for d in rest]
    return (da.values.reshape(da.sizes[schema.MODEL], -1).astype(float),
            [str(m) for m in da[schema.MODEL].values.tolist()], (coords, layer))


def _run_change_ratio(data: TestInput) -> Any:

    p = data.params
    mats = {}
    for role in ("pre_first", "pre_last", "post_first", "post_last"):
        if role in data.arrays:
            mats[role] = _role_matrix(data, role)
    if ("pre_first" in mats) != ("post_first" in mats):
        raise SpecError("ratio_of_changes: give both pre_first and post_first (changes |log(last / first)|) "
                        "or neither (the last selections are changes already).")
    shapes = {r: m[0].shape for r, m in mats.items()}
    if len(set(shapes.values())) != 1:
        raise SpecError(f"ratio_of_changes: the selections must have the same number of models and units; "
                        f"got {shapes}. Pair pretraining runs with their post-training runs in order.")
    if len({str(m[2][0]) for m in mats.values()}) != 1:
        raise SpecError("ratio_of_changes: the selections cover different units (layers, categories).")
    # models pair by position: pre model i with post model i (a first may be another model, e.g.
    # the base a tuned model started from)

    def change(side: str) -> np.ndarray:
        last = mats[f"{side}_last"][0]
        if f"{side}_first" not in mats:
            return last
        first = mats[f"{side}_first"][0]
        with np.errstate(divide="ignore", invalid="ignore"):
            bad = np.isfinite(first) & np.isfinite(last) & ((first <= 0) | (last <= 0))
            if bad.any():
                raise StatsInputError(f"ratio_of_changes: {int(bad.sum())} {side}-training value(s) are not "
                                      f"positive; |log(last / first)| needs positive values.")
            return np.abs(np.log(last / first))

    pre, post = change("pre"), change("post")
    layer = mats["pre_last"][2][1]
    n_models, n_units = pre.shape
    strata = np.repeat(np.arange(n_models), n_units)
    clusters = np.tile(layer, n_models)
    pre, post = pre.reshape(-1), post.reshape(-1)
    ok = np.isfinite(pre) & np.isfinite(post)
    return _stats().change_ratio(pre[ok], post[ok], strata=strata[ok], clusters=clusters[ok],
                              n_boot=p["n_boot"], ci=p["ci"], seed=p["seed"],
                              reference=_change_band(data.prediction))


def decide_change_ratio(row: Mapping[str, float], ctx: Decision) -> tuple[str, str]:
    """Interval rule for above / below; band rule for equivalent (block comment above).

    >>> ctx = Decision(Prediction("equivalent", value=500.0, bound=1.0), 0.05, {}, {})
    >>> decide_change_ratio({"ci_low": 80.0, "ci_high": 900.0}, ctx)[0]
    'supported'
    >>> decide_change_ratio({"ci_low": 6.0, "ci_high": 20.0}, ctx)[0]
    'refuted'
    >>> decide_change_ratio({"ci_low": 6.0, "ci_high": 90.0}, ctx)[0]
    'inconclusive'
    """
    if ctx.prediction.direction != "equivalent":
        return decide_interval(row, ctx)
    lo, hi = row.get(C.CI_LOW), row.get(C.CI_HIGH)
    if lo is None or hi is None or math.isnan(float(lo)) or math.isnan(float(hi)):
        return "inconclusive", "the ratio has no interval on these data"
    a, b = _change_band(ctx.prediction)
    band = f"[{a:g}, {b:g}] ({ctx.prediction.value:g} within {ctx.prediction.bound:g} decade(s))"
    if lo > a and hi < b:
        return "supported", f"the interval lies inside {band}"
    if hi < a or lo > b:
        return "refuted", f"the interval lies entirely outside {band}"
    return "inconclusive", f"the interval overlaps the edge of {band}"


register_test("delta_rank", _run_category_rank, decide_interval, roles=_DELTA_ROLES,
              params={"target": None, "n_boot": 2000, "ci": 0.95}, required_params=("target",),
              directions=("above", "below"),
              description="rank (1 = changed most) of one parameter category in the parameter-delta "
                          "map of one model, bootstrap over layers (METRICS §6.4, "
                          "lie_stats.stats.ranks.category_rank); roles: param_delta, "
                          "param_delta_layer, param_base_norm_layer at one step")
register_test("delta_order", _run_category_order, decide_category_order, roles=_DELTA_ROLES,
              params={"order": None, "n_boot": 2000}, required_params=("order",),
              directions=("above",),
              description="whether declared groups of parameter categories (params order: a list "
                          "of lists of categories) hold the top ranks in order, with its bootstrap share over layers (METRICS §6.4, "
                          "lie_stats.stats.ranks.category_order)")
register_test("ratio_of_changes", _run_change_ratio, decide_change_ratio, roles=("pre_last", "post_last"),
              optional_roles=("pre_first", "post_first"),
              params={"n_boot": 2000, "ci": 0.95}, directions=("above", "below", "equivalent"),
              description="mean change of pre over mean change of post, paired by unit (|log(last / "
                          "first)| when the firsts are selected), bootstrap of layers within runs "
                          "(lie_stats.stats.ranks.change_ratio)")


# ---- test kinds for B2 / B3 / B8 (helper H3a) ----
# Enrichment of pairwise Killing-form quantities, head level vs layer level and over depth
# (CLAIMS.md B2, B3, B8); the numbers come from lie_stats.stats.killing_profiles. The
# parameter ``layer_summary`` ("cv": std / mean |.| over a layer's pairs i < j, which on
# killing_norm is killing_cv, METRICS.md §4.4; "mean_abs": mean |.|) is checked when the spec
# is evaluated. The one-sided direction of each p-value follows the prediction.

_H3A_SUMMARIES = ("cv", "mean_abs")
#: Result column of the one-sided p opposite to the prediction (killing_profiles.P_OPPOSITE).
_H3A_P_OPPOSITE = "p_opposite"


def _h3a_pairs(data: TestInput, role: str) -> tuple[np.ndarray, Any]:
    """[layer, head, head_j] of a one-model, one-checkpoint pairwise selection, and its step."""
    da = data.arrays[role]
    _one_model(data, role, "this test")
    if schema.STEP in da.dims or schema.HEAD_J not in da.dims:
        raise SpecError(f"selection[{role!r}] must be a pairwise variable (head, head_j) at one "
                        f"checkpoint ('first', 'last' or a step), not step='all'.")
    sub = da.isel({schema.MODEL: 0}) if schema.MODEL in da.dims else da
    step = sub[schema.STEP].values.item() if schema.STEP in sub.coords else None
    x = sub.transpose(schema.LAYER, schema.HEAD, schema.HEAD_J).values.astype(np.float64)
    return _stats().symmetric_pairs(x), step


def _h3a_heads(data: TestInput, role: str) -> tuple[np.ndarray, Any]:
    da = data.arrays[role]
    _one_model(data, role, "this test")
    if schema.STEP in da.dims or schema.HEAD not in da.dims or schema.HEAD_J in da.dims:
        raise SpecError(f"selection[{role!r}] must be a per-head variable (layer, head) at one "
                        f"checkpoint.")
    sub = da.isel({schema.MODEL: 0}) if schema.MODEL in da.dims else da
    step = sub[schema.STEP].values.item() if schema.STEP in sub.coords else None
    return sub.transpose(schema.LAYER, schema.HEAD).values.astype(np.float64), step


def _h3a_present(*pairs: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Layers and heads with data in every given [layer, head, head_j] array (drops padding)."""
    fin = np.ones(pairs[0].shape, dtype=bool)
    for p in pairs:
        fin &= np.isfinite(p)
    layers = fin.any(axis=(1, 2))
    heads = fin[layers].any(axis=(0, 2)) if layers.any() else np.zeros(pairs[0].shape[1], bool)
    return layers, heads


def _h3a_steps_differ(first_step: Any, last_step: Any) -> None:
    if first_step is not None and first_step == last_step:
        raise StatsInputError(f"the first and last checkpoint are the same (step {first_step}): "
                              f"no enrichment to measure.")


def _run_head_excess(data: TestInput) -> Any:
    p = data.params
    summary = p["layer_summary"]
    kp = _stats()
    da = data.arrays["values"].reset_coords(drop=True)
    if schema.STEP not in da.dims or schema.HEAD_J not in da.dims:
        raise SpecError("selection['values'] must be a pairwise variable (head, head_j) with "
                        "step='all' (the heads' trajectories over every checkpoint).")
    da = da.transpose(schema.MODEL, schema.STEP, schema.LAYER, schema.HEAD, schema.HEAD_J)
    heads, layers = [], []
    for m in range(da.sizes[schema.MODEL]):
        x = _stats().symmetric_pairs(da.isel({schema.MODEL: m}).values.astype(np.float64))  # [S, L, H, H]
        for layer in range(x.shape[1]):
            xl = x[:, layer]
            fin = np.isfinite(xl)
            hk = fin.any(axis=(0, 2))
            if not hk.any():
                continue  # padding or a layer not selected
            xl = xl[:, hk][:, :, hk]
            off = ~np.eye(xl.shape[-1], dtype=bool)
            sk = np.isfinite(xl[:, off]).all(axis=1)  # checkpoints this model has
            xl = xl[sk]
            if xl.shape[-1] < 3:
                raise StatsInputError(f"model {m}, layer {layer}: {xl.shape[-1]} heads; a head's own "
                                      f"pair summary needs at least 2 partners (3 heads).")
            heads.append(kp.row_summary(xl, summary=summary))
            layers.append(kp.pair_summary(xl, summary=summary))
    if not layers:
        raise StatsInputError("no layer of the selection has pair data.")
    alternative = "greater" if data.prediction.direction == "above" else "less"
    return kp.head_enrichment_excess(heads, layers, n_perm=p["n_perm"], seed=p["seed"],
                                     n_boot=p["n_boot"], ci=p["ci"], alternative=alternative)


def decide_head_excess(row: Mapping[str, float], ctx: Decision) -> tuple[str, str]:
    """Rule of ``head_enrichment_excess`` (prediction ``"above"`` a ratio, normally 1).

    *supported* when the permutation p (the most enriched heads exceed what exchangeable
    per-checkpoint changes give) is below alpha and the interval of the ratio max head /
    layer enrichment lies above ``value``; *refuted* when ``p_opposite < alpha`` (the heads end
    more alike than exchangeable changes would leave them: their differences are
    transient); *inconclusive* otherwise.

    >>> ctx = Decision(Prediction("above", value=1.0), 0.05, {}, {})
    >>> decide_head_excess({"p_value": 0.001, "p_opposite": 0.99, "ci_low": 3.0, "ci_high": 9.0}, ctx)[0]
    'supported'
    >>> decide_head_excess({"p_value": 0.99, "p_opposite": 0.001, "ci_low": 1.5, "ci_high": 2.0}, ctx)[0]
    'refuted'
    """
    p, p_less = row.get(C.P_VALUE), row.get(_H3A_P_OPPOSITE)
    lo = row.get(C.CI_LOW)
    a, value = ctx.alpha, float(ctx.prediction.value)
    if not _finite(p, p_less):
        return "inconclusive", "the permutation test gave no p-value on these data"
    if p < a and _finite(lo) and lo > value:
        return "supported", (f"the most enriched heads exceed the exchangeable-heads null (p < "
                             f"alpha {a}) and the ratio's interval lies above {value}")
    if p_less < a:
        return "refuted", (f"the most enriched heads fall short of the exchangeable-heads null "
                           f"(p_opposite < alpha {a}): head differences do not persist")
    if p < a:
        return "inconclusive", f"p < alpha ({a}) but the ratio's interval reaches {value}"
    return "inconclusive", f"p >= alpha ({a}): no evidence either way"


def decide_interval_and_p(row: Mapping[str, float], ctx: Decision) -> tuple[str, str]:
    """Interval and p rule of ``enrichment_profile`` and ``functional_boundary_shift``.

    *supported* when the interval lies entirely on the predicted side of ``value`` **and**
    the (one-sided, predicted direction) p is below alpha; *refuted* when the interval lies
    entirely on the other side **and** the one-sided p in that direction (``p_opposite``)
    is below alpha; *inconclusive* otherwise.

    >>> ctx = Decision(Prediction("below", value=1.0), 0.05, {}, {})
    >>> decide_interval_and_p({"p_value": 0.01, "ci_low": 0.5, "ci_high": 0.9}, ctx)[0]
    'supported'
    >>> decide_interval_and_p({"p_value": 0.30, "ci_low": 0.5, "ci_high": 0.9}, ctx)[0]
    'inconclusive'
    >>> decide_interval_and_p({"p_value": 0.99, "p_opposite": 0.01, "ci_low": 1.1, "ci_high": 1.9}, ctx)[0]
    'refuted'
    >>> decide_interval_and_p({"p_value": 0.60, "p_opposite": 0.40, "ci_low": 1.1, "ci_high": 1.9}, ctx)[0]
    'inconclusive'
    """
    verdict, reason = decide_interval(row, ctx)
    p, a = row.get(C.P_VALUE), ctx.alpha
    if verdict == "refuted":
        p_opp = row.get(_H3A_P_OPPOSITE)
        if _finite(p_opp) and p_opp < a:
            return "refuted", f"{reason}, and the permutation p in that direction < alpha ({a})"
        return "inconclusive", f"{reason}, but the permutation p in that direction >= alpha ({a})"
    if verdict != "supported":
        return verdict, reason
    if _finite(p) and p < a:
        return "supported", f"{reason}, and the permutation p < alpha ({a})"
    return "inconclusive", f"{reason}, but the permutation p >= alpha ({a})"


def _run_enrichment_profile(data: TestInput) -> Any:
    p = data.params
    summary = p["layer_summary"]
    first, s0 = _h3a_pairs(data, "first")
    last, s1 = _h3a_pairs(data, "last")
    _h3a_steps_differ(s0, s1)
    lk, hk = _h3a_present(first, last)
    first, last = first[lk][:, hk][:, :, hk], last[lk][:, hk][:, :, hk]
    alternative = "greater" if data.prediction.direction == "above" else "less"
    return _stats().boundary_enrichment(first, last, summary=summary, n_boot=p["n_boot"],
                                         ci=p["ci"], seed=p["seed"], alternative=alternative)


def _run_functional_shift(data: TestInput) -> Any:
    p = data.params
    summary = p["layer_summary"]
    k0, s0 = _h3a_pairs(data, "first")
    k1, s1 = _h3a_pairs(data, "last")
    w0, t0 = _h3a_heads(data, "w_first")
    w1, t1 = _h3a_heads(data, "w_last")
    _h3a_steps_differ(s0, s1)
    if (s0, s1) != (t0, t1):
        raise StatsInputError(f"the Killing form is selected at steps ({s0}, {s1}) but value_norm "
                              f"at ({t0}, {t1}); the functional form needs both at the same "
                              f"checkpoints.")
    lk, hk = _h3a_present(k0, k1)
    k0, k1 = k0[lk][:, hk][:, :, hk], k1[lk][:, hk][:, :, hk]
    w0, w1 = w0[lk][:, hk], w1[lk][:, hk]
    alternative = "less" if data.prediction.direction == "below" else "greater"
    return _stats().functional_boundary_shift(k0, k1, w0, w1, summary=summary, n_perm=p["n_perm"],
                                               n_boot=p["n_boot"], ci=p["ci"], seed=p["seed"],
                                               alternative=alternative)


register_test("head_enrichment_excess", _run_head_excess, decide_head_excess, roles=("values",),
              params={"layer_summary": "cv", "n_perm": 9999, "n_boot": 2000, "ci": 0.95},
              directions=("above",),
              description="per layer, the most enriched head's enrichment over the layer's "
                          "(METRICS §6.1) of a pair form's summary (values: a pairwise variable, "
                          "step='all'; head value = the summary over the head's own pairs), "
                          "against a null permuting each checkpoint's per-head changes among the "
                          "layer's heads (lie_stats.stats.killing_profiles.head_enrichment_excess)")
register_test("enrichment_profile", _run_enrichment_profile, decide_interval_and_p,
              roles=("first", "last"),
              params={"layer_summary": "cv", "n_boot": 2000, "ci": 0.95},
              directions=("above", "below"),
              description="boundary layers' enrichment of a pair form's summary over the "
                          "interior's (METRICS §6.1, §6.3; first/last: a pairwise variable of one "
                          "model), exact layer-permutation p, heads bootstrapped within layers "
                          "(lie_stats.stats.killing_profiles.boundary_enrichment)")
register_test("functional_boundary_shift", _run_functional_shift, decide_interval_and_p,
              roles=("first", "last", "w_first", "w_last"),
              params={"layer_summary": "cv", "n_perm": 9999, "n_boot": 2000, "ci": 0.95},
              directions=("below", "above"),
              description="boundary enrichment of the functional Killing form (METRICS §8: "
                          "K[i,j] w_i w_j, w = value_norm / layer mean) over the total form's; "
                          "p permutes the value norms among a layer's heads "
                          "(lie_stats.stats.killing_profiles.functional_boundary_shift)")


# ---- test kinds for B7 / B9 / B10 / B11 (helper H3b) ----
# Labelled heads (METRICS.md §8 anchor / worker codes, schema.LABEL_CODES) against head
# metrics: the slope of one metric on another compared between two classes (class_interaction,
# B7), a bidirectional threshold classifier's agreement with the labels (threshold_agreement,
# B9), the time each head's trajectory takes to reach a fraction of its final value compared
# between classes (stabilization_time, B10), and the AUC of a metric for one class against
# others (class_auc, B11). Numerics in lie_stats.stats.classes; every p permutes within
# layers. A class with too few heads (e.g. no anchors at the last checkpoint) makes the test
# undefined: StatsInputError naming the label counts, hence the verdict inconclusive.

#: Extra result columns of this block's test kinds.
THRESHOLD_COSINE = "threshold_cosine"  # the classifier's t as a cosine
N_ZONE_BELOW, N_ZONE_BETWEEN, N_ZONE_ABOVE = "n_zone_below", "n_zone_between", "n_zone_above"
MEDIAN_TIME_GROUP0, MEDIAN_TIME_GROUP1 = "median_time_group0", "median_time_group1"
N_UNDEFINED_TIME = "n_undefined_time"  # heads without a time (final change <= 0, NaN)
#: Units of ``threshold_agreement``'s ``threshold``: a cosine, or multiples of 1/sqrt(D),
#: the standard deviation of the cosine of two independent random directions in the
#: D = 4 d_model d_head dimensions of a head's weights (METRICS.md §7.5).
THRESHOLD_UNITS = ("random_sd", "cosine")
_LABEL_NAMES = {code: name for name, code in schema.LABEL_CODES.items()}


def _label_counts(codes: np.ndarray) -> str:
    vals, counts = np.unique(codes[np.isfinite(codes)], return_counts=True)
    return ", ".join(f"{_LABEL_NAMES.get(int(v), int(v))} (code {int(v)}): {c}"
                     for v, c in zip(vals, counts)) or "none"


def _need_classes(codes: np.ndarray, wanted: Sequence[Any], minimum: int, what: str) -> None:
    """StatsInputError (-> inconclusive) when a declared class has too few heads."""
    for code in wanted:
        k = int(np.count_nonzero(codes == float(code)))
        if k < minimum:
            c = int(code) if float(code).is_integer() else code
            raise StatsInputError(
                f"{what} needs at least {minimum} heads labelled "
                f"{_LABEL_NAMES.get(c, c)!r} (code {c}); the selection has {k}. "
                f"Label counts: {_label_counts(codes)}.")


def _two_groups(data: TestInput, table: Any, role: str) -> tuple[Any, np.ndarray, Any]:
    """Rows of the two declared groups, group-1 indicator (the second code), strata."""
    a, b = (float(c) for c in data.params["groups"])
    codes = table[role].to_numpy(dtype=float)
    _need_classes(codes, (a, b), int(data.params.get("min_group", 2)),
                  f"the comparison of groups {data.params['groups']!r}")
    keep = np.isin(codes, (a, b))
    sub = table.loc[keep].reset_index(drop=True)
    strata = data.strata(sub)
    return sub, codes[keep] == b, strata


def _run_class_interaction(data: TestInput) -> Any:
    p = data.params
    table = data.table("y", "x", "group")
    sub, g, strata = _two_groups(data, table, "group")
    return _stats().interaction_test(
        sub["y"].to_numpy(float), sub["x"].to_numpy(float), g, strata=strata, ranks=p["ranks"],
        alternative=p["alternative"], n_perm=p["n_perm"], n_boot=p["n_boot"], ci=p["ci"],
        seed=p["seed"], min_group=p["min_group"])


def _model_scalar(da: Any, name: str) -> float:
    if name not in da.coords:
        raise StatsInputError(f"the selection has no {name!r} coordinate (a model coordinate of the "
                              f"cube); needed for threshold_units='random_sd'.")
    vals = np.unique(np.asarray(da[name].values, dtype=float).reshape(-1))
    if vals.size != 1 or not np.isfinite(vals[0]):
        raise StatsInputError(f"the selected models differ in {name!r} ({vals.tolist()}); select one "
                              f"model for threshold_units='random_sd'.")
    return float(vals[0])


def _run_threshold_agreement(data: TestInput) -> Any:
    p = data.params
    units, thr = p["threshold_units"], p["threshold"]
    if units not in THRESHOLD_UNITS:
        raise SpecError(f"params['threshold_units']: {units!r} is not one of {THRESHOLD_UNITS}."
                        f"{did_you_mean(str(units), THRESHOLD_UNITS)}")
    if isinstance(thr, bool) or not isinstance(thr, (int, float)) or not thr >= 0:
        raise SpecError(f"params['threshold']: expected a number >= 0, got {thr!r}.")
    classes = tuple(p["classes"])
    if len(classes) != 3 or len(set(classes)) != 3:
        raise SpecError(f"params['classes']: expected three distinct label codes (below -t, between, "
                        f"above +t), got {classes!r}.")
    t = float(thr)
    if units == "random_sd":
        da = data.arrays["score"]
        t = t / math.sqrt(4.0 * _model_scalar(da, _D_MODEL) * _model_scalar(da, _D_HEAD))
    table = data.table("score", "label")
    labels = table["label"].to_numpy(float)
    _need_classes(labels, (classes[0], classes[2]), int(p["min_class"]),
                  "the threshold classifier's agreement")
    zone_of = {float(c): float(z) for z, c in enumerate(classes)}
    observed = np.array([zone_of.get(float(c), np.nan) for c in labels])
    zones = _stats().threshold_zones(table["score"].to_numpy(float), t)
    row = _stats().agreement_test(zones, observed, strata=data.strata(table),
                                        alternative=p["alternative"], n_perm=p["n_perm"],
                                        n_boot=p["n_boot"], ci=p["ci"], seed=p["seed"])
    return row.assign(**{THRESHOLD_COSINE: t, N_ZONE_BELOW: int(np.sum(zones == 0)),
                         N_ZONE_BETWEEN: int(np.sum(zones == 1)), N_ZONE_ABOVE: int(np.sum(zones == 2))})


def _run_stabilization_time(data: TestInput) -> Any:
    import pandas as pd
    import xarray as xr

    p = data.params
    da = data.arrays["values"].reset_coords(drop=True)
    if schema.STEP not in da.dims:
        raise SpecError("selection['values'] must keep the step dimension (step='all') for "
                        "stabilization_time.")
    lab = data.arrays["group"].reset_coords(drop=True)
    if schema.STEP in lab.dims:
        raise SpecError("selection['group'] must pick one step (e.g. step='last'), not step='all'.")
    units = [d for d in da.dims if d != schema.STEP]
    if sorted(lab.dims) != sorted(units):
        raise SpecError(f"selection['group'] has dims {lab.dims}; expected the per-head dims "
                        f"{tuple(units)} of selection['values'].")
    da, lab = xr.align(da, lab, join="inner", exclude=[schema.STEP])
    flat = da.transpose(schema.STEP, *units).stack(unit=units)
    labf = lab.transpose(*units).stack(unit=units)
    vals = flat.values
    steps_keep = np.isfinite(vals).any(axis=1)
    times = _stats().time_to_fraction(vals[steps_keep], flat[schema.STEP].values[steps_keep],
                                            fraction=p["fraction"], scale=p["scale"])
    index = flat.indexes["unit"].to_frame(index=False)
    table = index.assign(time=times, group=labf.values)
    table = table[np.isfinite(table["group"].to_numpy(float))].reset_index(drop=True)
    n_undefined = int(np.count_nonzero(~np.isfinite(table["time"].to_numpy(float))
                                       & np.isin(table["group"], np.asarray(p["groups"], float))))
    table = table[np.isfinite(table["time"].to_numpy(float))].reset_index(drop=True)
    sub, g, strata = _two_groups(data, table, "group")
    t = sub["time"].to_numpy(float)
    row = _stats().group_difference(t, g, strata=strata, alternative=p["alternative"],
                                    n_perm=p["n_perm"], n_boot=p["n_boot"], ci=p["ci"], seed=p["seed"])
    return row.assign(**{MEDIAN_TIME_GROUP0: float(np.median(t[~g])),
                         MEDIAN_TIME_GROUP1: float(np.median(t[g])), N_UNDEFINED_TIME: n_undefined})


def _run_class_auc(data: TestInput) -> Any:
    p = data.params
    if float(data.prediction.value) != 0.5:
        raise SpecError(f"class_auc: the prediction's null value must be 0.5 (an AUC's), got "
                        f"{data.prediction.value}; declare Prediction(..., value=0.5).")
    table = data.table("x", "label")
    labels = table["label"].to_numpy(float)
    pos = float(p["positive"])
    neg = p["negative"]
    _need_classes(labels, (pos,), 2, f"the AUC of class {int(pos)}")
    if neg is None:
        keep = np.isfinite(labels)
    else:
        neg_codes = np.asarray(tuple(neg) if not isinstance(neg, (int, float)) else (neg,), float)
        _need_classes(labels, tuple(neg_codes), 1, f"the AUC of class {int(pos)} against {tuple(neg)}")
        keep = np.isin(labels, np.concatenate([[pos], neg_codes]))
    sub = table.loc[keep].reset_index(drop=True)
    return _stats().auc_test(sub["x"].to_numpy(float), labels[keep] == pos,
                                   strata=data.strata(sub), alternative=p["alternative"],
                                   n_perm=p["n_perm"], n_boot=p["n_boot"], ci=p["ci"], seed=p["seed"])


_ANCHOR_WORKER = (schema.LABEL_CODES["anchor"], schema.LABEL_CODES["worker"])

register_test("class_interaction", _run_class_interaction, decide_directional,
              roles=("y", "x", "group"),
              params={"groups": _ANCHOR_WORKER, "ranks": True, "min_group": 3,
                      "alternative": "two-sided", **_RESAMPLING},
              description="difference between two label classes (params groups=(a, b); effect: "
                          "b's slope minus a's) in the slope of y on x, on standardized ranks, "
                          "OLS with layer fixed effects, Freedman-Lane permutation within layers "
                          "(lie_stats.stats.classes.interaction_test)")
register_test("threshold_agreement", _run_threshold_agreement, decide_directional,
              roles=("score", "label"),
              params={"threshold": 3.0, "threshold_units": "random_sd",
                      "classes": (schema.LABEL_CODES["anchor"], schema.LABEL_CODES["mixed"],
                                  schema.LABEL_CODES["worker"]),
                      "min_class": 3, "alternative": "two-sided", **_RESAMPLING},
              description="bidirectional threshold classifier (score below -t, between, above +t; "
                          "t in cosine or random-direction SD units) against the label codes "
                          "params classes=(below, between, above): kappa with within-layer "
                          "chance agreement, permutation within layers "
                          "(lie_stats.stats.classes.agreement_test)")
register_test("stabilization_time", _run_stabilization_time, decide_directional,
              roles=("values", "group"),
              params={"groups": _ANCHOR_WORKER, "fraction": 0.9, "scale": "log", "min_group": 2,
                      "alternative": "two-sided", **_RESAMPLING},
              description="per head, the time its trajectory (step='all') first reaches a fraction "
                          "of its final value (interpolated in log10 step or step), compared "
                          "between two label classes by group_difference, permuting within layers "
                          "(lie_stats.stats.classes.time_to_fraction)")
register_test("class_auc", _run_class_auc, decide_directional, roles=("x", "label"),
              params={"positive": schema.LABEL_CODES["anchor"], "negative": None,
                      "alternative": "two-sided", **_RESAMPLING},
              description="AUC of x for the label code params positive against params negative "
                          "(codes; None: every other head), pairs within layers, labels permuted "
                          "within layers; declare Prediction(..., value=0.5) "
                          "(lie_stats.stats.classes.auc_test)")
