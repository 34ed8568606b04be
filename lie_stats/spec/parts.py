"""The parts of a declaration: :class:`Select`, :class:`Prediction`, and the words they use.

A :class:`~lie_stats.spec.HypothesisSpec` is built from these parts; they live apart from it
so that validation, selection and the test kinds can check and read them without importing
the spec class. :func:`spec_error` formats every declaration error the same way: the
declaring module, the spec's id, the field, the message.
"""

from __future__ import annotations

import math
import sys
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field, fields
from typing import Any

import numpy as np

from .. import schema
from ..errors import SpecError, did_you_mean

__all__ = [
    "Select",
    "Prediction",
    "Magnitude",
    "Fidelity",
    "FIDELITY_STATUSES",
    "FIDELITY_ASPECTS",
    "MAGNITUDE_SCALES",
    "STEP_WORDS",
    "DIRECTIONS",
    "REDUCTIONS",
    "STRATA",
    "METHODS",
    "ALTERNATIVES",
    "SUMMARIES",
    "SELECT_DIMS",
    "SWEEP_SELECT",
    "as_tuple",
    "jsonable",
    "replace",
    "caller_module",
    "spec_error",
    "check_choice",
    "check_projection",
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
#: Option values the statistics accept (checked at declaration, not at evaluation).
METHODS = ("spearman", "pearson", "kendall")
ALTERNATIVES = ("two-sided", "greater", "less")
#: Layer summaries of ``boundary_ratio`` (mean, or coefficient of variation over heads).
SUMMARIES = ("mean", "cv")
#: How a :class:`Magnitude`'s band reads the estimate: a ratio (compared as it is, shown
#: with "x"), a natural-log difference (exponentiated to a ratio first), or an absolute value.
MAGNITUDE_SCALES = ("ratio", "log", "absolute")
#: Dimensions a :class:`Select` names a value of (when its variable has them).
SELECT_DIMS = (schema.FAMILY, schema.PROJECTION, schema.MATRIX)
#: Selection fields a spec's ``choices`` may sweep (applied to every selection that can
#: take them): the dimensions above, plus the layers and the models (one run at a time).
SWEEP_SELECT = (*SELECT_DIMS, "layers", "models")


def as_tuple(value: Any) -> Any:
    """A list or other iterable as a tuple; strings, bytes, None and scalars as they are."""
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
        object.__setattr__(self, "layers", as_tuple(self.layers))
        object.__setattr__(self, "models", as_tuple(self.models))

    def declaration(self) -> dict[str, Any]:
        """The fields that are set, as JSON-ready values (for hashing and reports)."""
        return {f.name: jsonable(getattr(self, f.name)) for f in fields(self)
                if getattr(self, f.name) is not None}


@dataclass(frozen=True)
class Magnitude:
    """The size the claim states, as a band with its justification (tested beside the direction).

    Parameters
    ----------
    reference : float
        The essay's figure (500 for "about 500x", 0.20 for "about 20 %").
    low, high : float
        The band of values that count as the claimed size (``low <= reference <= high``);
        ``high`` may be ``math.inf`` for "at least low".
    scale : {"ratio", "log", "absolute"}
        ``"ratio"``: the estimate is a ratio, compared with the band as it is (all positive);
        ``"log"``: the estimate and its interval are natural-log differences, exponentiated
        to ratios before the comparison (reference and band are ratios); ``"absolute"``: an
        absolute level with an additive tolerance.
    justification : str
        Why this band reads the essay's words (required: a band without a reason is a
        tuning knob).
    estimate : str
        The result column compared with the band: ``"effect"`` (default, interval
        ``ci_low``/``ci_high``) or an extra column of the kind.
    interval : tuple of two str, optional
        The result columns of the estimate's interval (``("ci_low", "ci_high")`` for
        ``"effect"``; none for another column unless named).
    not_on : mapping of str to str
        Datasets on which the magnitude is not tested, each with the reason (e.g. the first
        checkpoint is a random twin, not the model's initialization).

    Notes
    -----
    The rule (:func:`lie_stats.spec.magnitude.assess_magnitude`): ``"outside"`` when the
    interval lies entirely outside the band, ``"within"`` when it lies inside the band,
    ``"compatible"`` when it overlaps the band without lying inside it, ``"not_tested"``
    (with the reason) when no interval exists or the dataset is in ``not_on``.

    Examples
    --------
    >>> Magnitude(500.0, 500.0 / 3, 1500.0, justification="about 500x: within a factor 3")
    Magnitude(reference=500.0, low=166.66666666666666, high=1500.0, scale='ratio', justification='about 500x: within a factor 3', estimate='effect', interval=None, not_on={})
    """

    reference: float
    low: float
    high: float
    scale: str = "ratio"
    justification: str = ""
    estimate: str = "effect"
    interval: tuple[str, str] | None = None
    not_on: Mapping[str, str] = field(default_factory=dict)

    def __post_init__(self) -> None:
        object.__setattr__(self, "interval", as_tuple(self.interval))
        object.__setattr__(self, "not_on", dict(self.not_on or {}))

    @property
    def interval_columns(self) -> tuple[str, str] | None:
        """The result columns of the estimate's interval (None: the estimate has none)."""
        if self.interval is not None:
            return self.interval
        return ("ci_low", "ci_high") if self.estimate == "effect" else None

    def declaration(self) -> dict[str, Any]:
        out = {"reference": jsonable(float(self.reference)), "low": jsonable(float(self.low)),
               "high": jsonable(float(self.high)), "scale": self.scale,
               "justification": self.justification, "estimate": self.estimate}
        if self.interval is not None:
            out["interval"] = list(self.interval)
        if self.not_on:
            out["not_on"] = {str(k): str(v) for k, v in sorted(self.not_on.items())}
        return out


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
    magnitude : Magnitude, optional
        The size the claim states (a band with its justification). With it, a magnitude
        ``"outside"`` the band refutes the claim as stated whatever the direction gives; a
        supported direction is qualified "magnitude undetermined" unless the interval lies
        ``"within"`` the band (:mod:`lie_stats.spec.magnitude`).

    Examples
    --------
    >>> Prediction("above", value=1.0)
    Prediction(direction='above', value=1.0, bound=None, magnitude=None)
    """

    direction: str
    value: float = 0.0
    bound: float | None = None
    magnitude: Magnitude | None = None

    def declaration(self) -> dict[str, Any]:
        out = {"direction": self.direction, "value": float(self.value)}
        if self.bound is not None:
            out["bound"] = float(self.bound)
        if self.magnitude is not None:  # absent when unset: older declarations keep their hash
            out["magnitude"] = self.magnitude.declaration()
        return out

    @classmethod
    def from_declaration(cls, declared: Mapping[str, Any]) -> "Prediction":
        """The prediction whose :meth:`declaration` is ``declared`` (its magnitude a
        :class:`Magnitude` again, an infinite band edge a float again).

        >>> m = Magnitude(3.0, 2.0, math.inf, justification="at least 2x")
        >>> p = Prediction("above", value=1.0, magnitude=m)
        >>> Prediction.from_declaration(p.declaration()) == p
        True
        """
        fields_ = dict(declared)
        mag = fields_.pop("magnitude", None)
        if isinstance(mag, Mapping):
            mag = Magnitude(**{**mag, **{k: float(mag[k]) for k in ("reference", "low", "high")}})
        return cls(**fields_, magnitude=mag)


#: What a declaration's :class:`Fidelity` says of its test: the claim as the source states it,
#: or a proxy of it.
FIDELITY_STATUSES = ("as_stated", "proxy")

#: The aspects of the source's design a test can differ in; each entry of
#: :attr:`Fidelity.differs` starts with one of them and ``": "``.
FIDELITY_ASPECTS = ("population", "intervention", "measure", "unit", "sample size")


@dataclass(frozen=True)
class Fidelity:
    """How a test relates to the design of the claim's source: ``"as_stated"`` (the source's
    population, intervention, measure, unit and sample size) or a ``"proxy"`` of it, with
    each difference named.

    Documentation of the test's relation to its source, not a part of its decision: it is
    not hashed (:meth:`HypothesisSpec.declaration`), so declaring or correcting it never
    changes a pre-registration. A spec that declares none is tested as its author states
    the claim (:data:`AS_STATED`). Checked when the spec is built
    (:func:`lie_stats.spec.validation.validate_fidelity`).

    Parameters
    ----------
    status : {"as_stated", "proxy"}
    differs : tuple of str
        One entry per difference from the source's design, each ``"<aspect>: <what>"`` with
        an aspect of :data:`FIDELITY_ASPECTS`; empty for ``"as_stated"``, at least one for
        ``"proxy"``.

    Examples
    --------
    >>> f = Fidelity("proxy", differs=["population: 3M-parameter runs trained here, not Pythia"])
    >>> f.record()
    {'status': 'proxy', 'differs': ['population: 3M-parameter runs trained here, not Pythia']}
    >>> f.aspects()
    ('population',)
    """

    status: str = "as_stated"
    differs: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        if isinstance(self.differs, str):
            object.__setattr__(self, "differs", (self.differs,))
        elif isinstance(self.differs, Iterable):
            object.__setattr__(self, "differs", tuple(self.differs))

    def aspects(self) -> tuple[str, ...]:
        """The aspects that differ, each once, in the order declared."""
        found = (next((a for a in FIDELITY_ASPECTS if str(d).startswith(a + ": ")), "") for d in self.differs)
        return tuple(dict.fromkeys(a for a in found if a))

    def record(self) -> dict[str, Any]:
        """The JSON-ready record a result carries: ``{"status", "differs"}``."""
        return {"status": self.status, "differs": [str(d) for d in self.differs]}


#: The fidelity of a spec that declares none: its claim tested as stated.
AS_STATED = Fidelity("as_stated")


def jsonable(value: Any) -> Any:
    """``value`` as JSON-ready data: parts as their declarations, tuples as lists, numpy
    scalars as Python numbers, non-finite floats as strings (hashable canonically).

    >>> jsonable({"a": (1, np.float64(2.5)), "b": float("inf")})
    {'a': [1, 2.5], 'b': 'inf'}
    """
    if isinstance(value, (Select, Prediction, Magnitude)):
        return value.declaration()
    if isinstance(value, Mapping):
        return {str(k): jsonable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [jsonable(v) for v in value]
    if isinstance(value, np.generic):
        return value.item()
    if isinstance(value, float) and not math.isfinite(value):
        return str(value)
    return value


_SPEC_PACKAGE = "lie_stats.spec"


def caller_module() -> str:
    """File (or module name) of the code that declared a spec: the first frame outside
    lie_stats.spec (a spec built by a function of this package is its caller's).

    This is how :func:`collections.namedtuple` and :class:`enum.Enum`'s functional API find
    the module that defines them, and for the same reason: the declaring file is where a
    reader goes to fix a declaration, and it is known only to the code that builds it. It
    reads the stack once, at construction, and nothing else depends on it: a spec's
    ``module`` is an ordinary field (``module=`` sets it; it is not hashed and not compared).
    Collection cannot supply it instead, since a module imported by another module builds
    its specs during the importer's collection."""
    frame = sys._getframe(1)
    while frame is not None and frame.f_globals.get("__name__", "").startswith(_SPEC_PACKAGE):
        frame = frame.f_back
    if frame is None:  # pragma: no cover
        return "<unknown>"
    g = frame.f_globals
    return str(g.get("__file__") or g.get("__name__") or "<unknown>")


def replace(obj: Any, **changes: Any) -> Any:
    """A copy of a frozen dataclass with ``changes`` applied, validated again by its
    ``__post_init__`` (unlike :func:`dataclasses.replace`, ``module`` is carried over).

    >>> replace(Prediction("above", value=1.0), value=2.0)
    Prediction(direction='above', value=2.0, bound=None, magnitude=None)
    """
    kwargs = {f.name: getattr(obj, f.name) for f in fields(obj)}
    kwargs.update(changes)
    return type(obj)(**kwargs)



def spec_error(spec: Any, fieldname: str, message: str) -> SpecError:
    """The error of one field of a declaration: ``<module>: HypothesisSpec '<id>', field
    '<field>': <message>``.

    >>> print(spec_error(None, "gate", "unknown gate 'pin'."))
    <unknown module>: HypothesisSpec '?', field 'gate': unknown gate 'pin'.
    """
    module = getattr(spec, "module", "") or "<unknown module>"
    ident = getattr(spec, "id", "?")
    return SpecError(f"{module}: HypothesisSpec {ident!r}, field {fieldname!r}: {message}")


def check_choice(value: Any, choices: Sequence[str], spec: Any, fieldname: str, what: str,
                  context: str = "") -> None:
    """Raise :func:`spec_error` unless ``value`` is one of ``choices`` (with a suggestion)."""
    if not isinstance(value, str) or value not in choices:
        raise spec_error(spec, fieldname, f"unknown {what} {value!r}{context}.{did_you_mean(str(value), choices)} "
                   f"Expected one of: {', '.join(choices)}.")



def check_projection(value: Any, spec: Any, fieldname: str) -> None:
    """Raise :func:`spec_error` unless ``value`` is a compression: ``none``, ``adaptive``
    or ``fixed:K``."""
    try:
        schema.parse_projection(value)
    except (ValueError, AttributeError, TypeError) as e:
        raise spec_error(spec, fieldname, f"{e}{did_you_mean(str(value), ('none', 'adaptive'))}") from None
