"""The registry of test kinds: what a spec's ``test=`` names.

A :class:`TestKind` holds everything about one kind of test: the function that computes it
on the selected data (its *binding* to :mod:`lie_stats.stats`), the decision rule that turns
the result row into a verdict, the selection roles it needs and accepts, its parameters with
their defaults and allowed words, the prediction directions its rule understands, the
reference figures it needs, a hook for the checks only it knows, and the rule in one
sentence (what ``lie-stats kinds`` prints).

Kinds register with :func:`register_test`; the kinds of lie_stats live one family a folder
in :mod:`lie_stats.spec.kinds`, which registers them all when :mod:`lie_stats.spec` is
imported. Nothing is computed from the registry at registration time: roles, names and
descriptions are read when they are needed, so the order in which kinds register never
matters.

Adding a kind
-------------
One folder (a new family of :mod:`lie_stats.spec.kinds`, or a user's own package imported
before the hypotheses): its ``__init__.py`` holds the binding, the rule and one
:func:`register_test` call, its ``design.py`` the ``DESIGNS`` that simulate it (a user's own
kind passes its design as ``register_test(design=...)``); its statistic goes into the
:mod:`lie_stats.stats` family it belongs to.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from .. import columns as C
from ..errors import LieStatsError, SpecError, did_you_mean
from .parts import ALTERNATIVES, DIRECTIONS, METHODS, STRATA

if TYPE_CHECKING:  # pragma: no cover - annotations only
    from .rules import Decision
    from .tables import TestInput

__all__ = [
    "TestKind",
    "register_test",
    "unregister_test",
    "test_kinds",
    "get_kind",
    "kind_names",
    "all_roles",
    "SHARED_ENUMS",
    "RESAMPLING",
    "UNITS",
    "RESAMPLE_BY",
    "RESAMPLE_ALIASES",
    "resample_param",
    "as_kind_reads",
    "frame_row",
    "describe_kind",
]

TestFn = Callable[["TestInput"], Any]
DecideFn = Callable[[Mapping[str, float], "Decision"], "tuple[str, str]"]
ValidateFn = Callable[[Any, Mapping[str, Any]], None]

#: Words the parameters every kind may take accept, checked at declaration.
SHARED_ENUMS: Mapping[str, tuple[str, ...]] = {
    "strata": STRATA, "method": METHODS, "alternative": ALTERNATIVES,
}
#: What a kind with a ``unit`` parameter treats as its independent unit: the layer (layers
#: as clusters within runs: the variance within runs) or the run (the cube's model: the
#: variance between runs, df = runs - 1).
UNITS: tuple[str, ...] = ("layer", "run")
#: Resampling parameters and defaults of the permutation / bootstrap kinds.
RESAMPLING: Mapping[str, Any] = {"n_perm": 9999, "n_boot": 2000, "ci": 0.95, "strata": "layer"}

#: The one public spelling of the resampling unit in a declaration's ``params`` and
#: ``choices``: the layer, the model (run) or none for the permutation kinds (``strata``),
#: the layer or the run for the paired-change kinds (``unit``).
RESAMPLE_BY = "resample_by"
#: The names a kind stores the resampling unit under, one per kind (a kind takes at most one
#: of them). They are the canonical form: what the kind reads, what the pre-registration
#: hash covers and what a result's ``params`` records, so declarations written before
#: ``resample_by`` keep their hashes. Written in a declaration they are deprecated
#: aliases of ``resample_by``.
RESAMPLE_ALIASES: tuple[str, ...] = ("strata", "unit")


def resample_param(kind: "TestKind") -> str | None:
    """The name ``kind`` stores the resampling unit under (one of :data:`RESAMPLE_ALIASES`),
    or ``None`` for a kind without a resampling unit.

    >>> import lie_stats.spec
    >>> resample_param(get_kind("correlation")), resample_param(get_kind("tost_paired"))
    ('strata', 'unit')
    """
    return next((name for name in RESAMPLE_ALIASES if name in kind.params), None)


def as_kind_reads(params: Mapping[str, Any], kind: "TestKind") -> dict[str, Any]:
    """``params`` with :data:`RESAMPLE_BY` under the name ``kind`` stores it
    (:func:`resample_param`); the other keys as they are.

    >>> import lie_stats.spec
    >>> as_kind_reads({"resample_by": "model", "n_perm": 99}, get_kind("enrichment"))
    {'strata': 'model', 'n_perm': 99}
    """
    name = resample_param(kind)
    if name is None or RESAMPLE_BY not in params:
        return dict(params)
    return {name if k == RESAMPLE_BY else k: v for k, v in params.items()}


def _first_paragraph(text: str | None) -> str:
    if not text:
        return ""
    para = text.strip().split("\n\n", 1)[0]
    return " ".join(line.strip() for line in para.splitlines())


@dataclass(frozen=True)
class TestKind:
    """A registered test kind: how to compute it on a selection and how to decide a verdict.

    Attributes
    ----------
    name : str
        What specs write in ``test=``.
    fn : callable
        The binding: ``fn(TestInput) -> pandas.DataFrame``, one row starting with
        :data:`lie_stats.C.STAT_COLUMNS`.
    decide : callable
        The decision rule: ``decide(row, Decision) -> (verdict, reason)``.
    roles, optional_roles : tuple of str
        Selection roles required / accepted.
    role_pattern : callable, optional
        For kinds whose roles are derived from other kinds' (``role -> bool``); read at
        validation time, so it sees every registered kind.
    params : mapping
        Parameters and their defaults (``alpha`` and ``seed`` always).
    enums : mapping
        Words an enum parameter accepts, besides :data:`SHARED_ENUMS`.
    directions : tuple of str
        Prediction directions the rule understands.
    reference : tuple of str
        Reference figures required (``"r|rho"``: either key).
    required_params : tuple of str
        Parameters without a usable default.
    validate : callable, optional
        ``validate(spec, resolved_params)``: the checks only this kind knows; raises
        :class:`~lie_stats.errors.SpecError` through :func:`~lie_stats.spec.parts.spec_error`.
    description : str
        What the kind computes (data, statistic, resampling).
    rule : str
        The decision rule in one sentence (default: the first paragraph of ``decide``'s
        docstring).
    hashed_when_declared : tuple of str
        Parameters added to the kind after declarations of it were pinned: their default is
        left out of the pre-registration hash of a spec that does not declare them, so those
        declarations keep their hashes (a spec that declares one, even at its default, hashes
        it).
    design : object, optional
        How ``lie-stats diagnose`` simulates this kind's data under the null and with the
        reference effect planted (a :class:`lie_stats.spec.simulate.Design`); without one, the
        diagnosis uses the design of the kind's family folder, if it has one.
    """

    __test__ = False  # not a pytest class

    name: str
    fn: TestFn
    decide: DecideFn
    roles: tuple[str, ...]
    params: Mapping[str, Any]
    directions: tuple[str, ...]
    optional_roles: tuple[str, ...] = ()
    role_pattern: Callable[[str], bool] | None = None
    enums: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
    reference: tuple[str, ...] = ()
    required_params: tuple[str, ...] = ()
    validate: ValidateFn | None = None
    description: str = ""
    rule: str = ""
    design: Any = None
    hashed_when_declared: tuple[str, ...] = ()

    def accepts_role(self, role: str) -> bool:
        """Whether a selection may use ``role``."""
        if role in self.roles or role in self.optional_roles:
            return True
        return self.role_pattern is not None and self.role_pattern(role)

    def known_roles(self) -> list[str]:
        """The roles named explicitly (for suggestions)."""
        return [*self.roles, *self.optional_roles]

    def roles_text(self) -> str:
        """The roles as a reader sees them: required, then ``[optional]``."""
        parts = [*self.roles, *(f"[{r}]" for r in self.optional_roles)]
        if self.role_pattern is not None:
            parts.append(getattr(self.role_pattern, "__doc__", None) or "derived roles")
        return ", ".join(parts) or "none"

    def all_enums(self) -> dict[str, tuple[str, ...]]:
        """Every enum parameter of this kind and its words."""
        return {k: v for k, v in {**SHARED_ENUMS, **self.enums}.items() if k in self.params}

    def run(self, data: "TestInput") -> dict[str, float]:
        """Compute the test on ``data`` and return its result row (numeric columns)."""
        return frame_row(self.fn(data), self.name)


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
    role_pattern: Callable[[str], bool] | None = None,
    enums: Mapping[str, Sequence[str]] | None = None,
    reference: Sequence[str] = (),
    required_params: Sequence[str] = (),
    validate: ValidateFn | None = None,
    description: str = "",
    rule: str = "",
    design: Any = None,
    hashed_when_declared: Sequence[str] = (),
) -> TestKind:
    """Add a test kind to the registry (see :class:`TestKind` for the fields).

    Raises
    ------
    SpecError
        A kind of that name is already registered, a direction is unknown, or an enum
        names a parameter the kind does not take.

    Examples
    --------
    >>> import lie_stats.spec
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
    enums = {k: tuple(v) for k, v in dict(enums or {}).items()}
    for key in enums:
        if key not in params:
            raise SpecError(f"register_test({name!r}): enum {key!r} is not one of its parameters "
                            f"({', '.join(params)}).")
    for key in hashed_when_declared:
        if key not in params:
            raise SpecError(f"register_test({name!r}): hashed_when_declared {key!r} is not one of its "
                            f"parameters ({', '.join(params)}).")
    kind = TestKind(name=name, fn=fn, decide=decide, roles=tuple(roles), params=params,
                    directions=tuple(directions), optional_roles=tuple(optional_roles),
                    role_pattern=role_pattern, enums=enums, reference=tuple(reference),
                    required_params=tuple(required_params), validate=validate,
                    description=description, rule=rule or _first_paragraph(decide.__doc__),
                    design=design, hashed_when_declared=tuple(hashed_when_declared))
    _REGISTRY[name] = kind
    return kind


def unregister_test(name: str) -> TestKind:
    """Remove a kind from the registry and return it (for a user's own temporary kinds).

    Raises
    ------
    SpecError
        No kind of that name is registered.
    """
    if name not in _REGISTRY:
        raise SpecError(f"No test named {name!r} is registered.{did_you_mean(name, _REGISTRY)}")
    return _REGISTRY.pop(name)


def test_kinds() -> dict[str, TestKind]:
    """The registered test kinds by name (a copy), sorted by name.

    >>> import lie_stats.spec
    >>> {"boundary_ratio", "correlation", "correlation_equivalence"} <= set(test_kinds())
    True
    """
    return dict(sorted(_REGISTRY.items()))


test_kinds.__test__ = False  # type: ignore[attr-defined]


def kind_names() -> tuple[str, ...]:
    """The registered kinds' names, sorted."""
    return tuple(sorted(_REGISTRY))


def get_kind(name: str) -> TestKind:
    """The kind registered as ``name``.

    Raises
    ------
    SpecError
        No such kind (with a suggestion and the known names).
    """
    try:
        return _REGISTRY[name]
    except (KeyError, TypeError):
        raise SpecError(f"unknown test {name!r}.{did_you_mean(str(name), _REGISTRY)} "
                        f"Expected one of: {', '.join(kind_names())}.") from None


def all_roles() -> tuple[str, ...]:
    """Every role some registered kind names (required or optional), sorted."""
    return tuple(sorted({r for k in _REGISTRY.values() for r in (*k.roles, *k.optional_roles)}))


def frame_row(frame: Any, test: str) -> dict[str, float]:
    """The one row of a kind's result frame as ``{column: float}`` (non-numeric cells dropped).

    Raises
    ------
    LieStatsError
        The binding did not return a one-row frame starting with the
        :data:`~lie_stats.C.STAT_COLUMNS`.
    """
    import pandas as pd

    if not isinstance(frame, pd.DataFrame) or len(frame) != 1:
        raise LieStatsError(f"Test {test!r} must return a one-row DataFrame, got {type(frame).__name__}"
                            f" of length {getattr(frame, '__len__', lambda: '?')()}.")
    if tuple(frame.columns[: len(C.STAT_COLUMNS)]) != C.STAT_COLUMNS:
        raise LieStatsError(f"Test {test!r}: the first columns must be {C.STAT_COLUMNS}, got "
                            f"{tuple(frame.columns)}.")
    out = {}
    for k, v in frame.iloc[0].items():
        try:
            out[str(k)] = float(v)
        except (TypeError, ValueError):
            continue
    return out



def describe_kind(kind: TestKind, *, width: int = 96) -> str:
    """A kind as ``lie-stats kinds`` prints it: name, roles, parameters with their defaults
    (and words, for enums), directions, reference figures, what it computes, and its rule.

    >>> import lie_stats.spec
    >>> print(describe_kind(get_kind("trend")).splitlines()[0])
    trend
    >>> "resample_by='layer' (layer|model|none)" in describe_kind(get_kind("correlation"))
    True
    """
    import textwrap

    enums = kind.all_enums()

    stored = resample_param(kind)

    def param(key: str, default: Any) -> str:
        text = f"{RESAMPLE_BY if key == stored else key}={default!r}"
        if key in enums:
            text += f" ({'|'.join(enums[key])})"
        if key in kind.required_params:
            text += " (required)"
        return text

    fields_ = [
        ("roles", kind.roles_text()),
        ("params", ", ".join(param(k, v) for k, v in kind.params.items())),
        ("directions", ", ".join(kind.directions)),
    ]
    if kind.reference:
        fields_.append(("reference", ", ".join(r.replace("|", " or ") for r in kind.reference)))
    fields_ += [("computes", kind.description), ("rule", kind.rule)]
    lines = [kind.name]
    for label, text in fields_:
        lines += textwrap.wrap(text or "-", width=width, initial_indent=f"  {label + ':':12s}",
                               subsequent_indent=" " * 14, break_on_hyphens=False)
    return "\n".join(lines)
