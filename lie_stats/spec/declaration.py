"""Declarations: :class:`HypothesisSpec` (a pre-registered hypothesis) and
:class:`OutOfScope` (a claim recorded as not testable here).

A hypothesis module (``hypotheses/<id>_<short_name>.py``) holds one or more module-level
:class:`HypothesisSpec` objects; it is a declaration, not a script::

    from lie_stats.spec import HypothesisSpec, Prediction, Select

    CONTRIBUTION = HypothesisSpec(
        id="X5",
        claim="Initial head contribution predicts how much a head changes during training",
        source="On the Geometry of Anchors",
        datasets=("pico_pythia",),
        selection={"x": Select("head_contribution", step="first"),
                   "y": Select("change_from_init", step="last")},
        test="replication",
        params={"method": "spearman", "n_perm": 9999, "seed": 0},
        prediction=Prediction("negative"),
        reference={"rho": -0.274, "p": 0.007, "n": 96},
        gate="pinned",
    )

A spec is validated when it is built (:mod:`lie_stats.spec.validation`). Its
pre-registration hash (:meth:`HypothesisSpec.spec_hash`) covers everything that decides a
verdict; its analysis choices (:meth:`HypothesisSpec.choice_grid`) are the specification
curve.
"""

from __future__ import annotations

import contextlib
import contextvars
import itertools
import os
import sys
import warnings
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from .. import schema
from .._io import canonical_hash
from .. import columns as C
from .parts import (
    AS_STATED,
    SELECT_DIMS,
    Fidelity,
    SWEEP_SELECT,
    Prediction,
    Select,
    as_tuple,
    caller_module,
    jsonable,
    replace,
    spec_error,
)
from .registry import RESAMPLE_BY, TestKind, as_kind_reads, get_kind, kind_names, resample_param
from .results import NO_DATASET, Result
from .validation import validate

__all__ = ["HypothesisSpec", "OutOfScope", "Select", "Prediction", "Fidelity",
           "deferred_declaration_errors", "declaration_error"]

#: Whether a declaration that fails its checks records the error instead of raising
#: (:func:`deferred_declaration_errors`).
_DEFERRING: contextvars.ContextVar[bool] = contextvars.ContextVar("lie_stats_deferring", default=False)


@contextlib.contextmanager
def deferred_declaration_errors() -> Iterator[None]:
    """While active, a :class:`HypothesisSpec` or :class:`OutOfScope` whose fields fail their
    checks is still built: it carries the error (:func:`declaration_error`) instead of
    raising it. Collection imports hypothesis modules under it, so one bad declaration
    becomes one failing item and the declarations beside it are still collected; outside
    it (a notebook, a script) a bad declaration raises as it is built.

    Examples
    --------
    >>> with deferred_declaration_errors():
    ...     bad = OutOfScope(id="G1", claim="", source="s", reason="r", module="m.py")
    >>> print(declaration_error(bad))
    m.py: HypothesisSpec 'G1', field 'claim': expected a non-empty string, got ''.
    >>> OutOfScope(id="G1", claim="", source="s", reason="r", module="m.py")
    Traceback (most recent call last):
    ...
    lie_stats.errors.SpecError: m.py: HypothesisSpec 'G1', field 'claim': expected a non-empty string, got ''.
    """
    token = _DEFERRING.set(True)
    try:
        yield
    finally:
        _DEFERRING.reset(token)


def declaration_error(obj: Any) -> Exception | None:
    """The error a declaration built under :func:`deferred_declaration_errors` failed its
    checks with, or ``None`` (a valid declaration, or not a declaration)."""
    return vars(obj).get("_declaration_error") if hasattr(obj, "__dict__") else None


def _checked(obj: Any, check: Any) -> None:
    """Run ``check()`` (the normalization and validation of a declaration); under
    :func:`deferred_declaration_errors` an error is recorded on ``obj`` instead of raised."""
    try:
        check()
    except Exception as e:  # noqa: BLE001 - any malformed field; re-raised unless deferring
        if not _DEFERRING.get():
            raise
        object.__setattr__(obj, "_declaration_error", e)


def _outside_stacklevel() -> int:
    """The ``stacklevel`` of :func:`warnings.warn` (called by the caller of this function)
    that names the first frame outside lie_stats: the declaration that wrote the spec."""
    package = os.path.dirname(os.path.dirname(os.path.abspath(__file__))) + os.sep
    frame, level = sys._getframe(1), 1
    while frame is not None and (frame.f_code.co_filename.startswith(package)
                                 or frame.f_code.co_filename == "<string>"):  # dataclass __init__
        frame, level = frame.f_back, level + 1
    return level


@dataclass(frozen=True)
class HypothesisSpec:
    """A pre-registered hypothesis: claim, data, selection, test, prediction, gate.

    Parameters
    ----------
    id : str
        The claim's id (``"X5"``); with a suffix for variants (``"X5-pythia"``).
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
        The test's parameters (alpha, seed, n_perm, n_boot, resample_by, method,
        alternative, bound, ...). Unset ones take the test's defaults; the resolved set is
        hashed. ``resample_by`` names the resampling unit (``"layer"``, ``"model"`` or
        ``"none"`` for the permutation kinds, ``"layer"`` or ``"run"`` for the paired-change
        kinds); the kind's older name for it (``strata`` or ``unit``) is a deprecated alias
        that gives the same spec and the same hash.
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
        the verdict run by run) or a test parameter (``method``, ``resample_by``, ...); the
        curve is their Cartesian product, each combination validated at declaration.
    notes : str
        Free text for the report (why this design, what was changed from the claim as first stated).
    multiplicity_family : str
        The family whose tests are decided together; by default the claim id before the
        first "-" (``"A3"`` for ``"A3-runs"``). In a family of more than one test, each
        result that is not the family's primary is decided on its p-values Holm-adjusted
        within the family (:func:`lie_stats.spec.results.family_adjusted_p`), the refuting
        tail's p included. Hashed when declared (it decides verdicts).
    primary : bool
        This spec is its family's primary (confirmatory) test, decided at alpha on its raw
        p; at most one per family and dataset (checked when a run collects the family).
        Hashed when True.
    fidelity : Fidelity or mapping of str to Fidelity, optional
        How the test relates to the design of the claim's source: ``Fidelity("as_stated")``,
        or ``Fidelity("proxy", differs=("population: ...", "intervention: ..."))`` naming
        each difference in population, intervention, measure, unit or sample size; a
        mapping of each dataset to its Fidelity when the datasets differ in it. It
        describes the test, it does not decide its verdict, so it is not hashed (correcting
        it changes no pre-registration). Undeclared (None), the claim is taken as tested as
        its author states it (:meth:`fidelity_record` gives ``as_stated``). Every result of
        the spec carries it; the report leads each claim with a result as stated.

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
    multiplicity_family: str = ""
    primary: bool = False
    fidelity: Fidelity | Mapping[str, Fidelity] | None = None
    module: str = field(default="", compare=False, repr=False)

    def __post_init__(self) -> None:
        if not self.module:
            object.__setattr__(self, "module", caller_module())
        _checked(self, self._normalize)

    def _normalize(self) -> None:
        if isinstance(self.datasets, str):
            object.__setattr__(self, "datasets", (self.datasets,))
        object.__setattr__(self, "datasets", as_tuple(self.datasets))
        object.__setattr__(self, "selection", dict(self.selection or {}))
        object.__setattr__(self, "params", dict(self.params or {}))
        object.__setattr__(self, "reference", dict(self.reference or {}))
        if isinstance(self.fidelity, Mapping):
            object.__setattr__(self, "fidelity", dict(self.fidelity))
        object.__setattr__(self, "choices", {k: tuple(v) if not isinstance(v, str) else (v,)
                                             for k, v in dict(self.choices or {}).items()})
        if isinstance(self.test, str) and self.test in kind_names():
            for name in ("params", "choices"):
                object.__setattr__(self, name, self._resample_by(name, getattr(self, name)))
        validate(self)

    def _resample_by(self, fieldname: str, declared: dict[str, Any]) -> dict[str, Any]:
        """``declared`` (params or choices) with the kind's old name for the resampling
        unit (``strata``, ``unit``) written as ``resample_by``, with a DeprecationWarning."""
        old = resample_param(self.kind)
        if old is None or old not in declared:
            return declared
        if RESAMPLE_BY in declared:
            raise spec_error(self, f"{fieldname}[{old!r}]",
                             f"{old!r} is the deprecated name of {RESAMPLE_BY!r}, and both are "
                             f"declared: keep {RESAMPLE_BY!r} only.")
        warnings.warn(f"{self.module or 'HypothesisSpec'}: HypothesisSpec {self.id!r}: "
                      f"{fieldname}[{old!r}] is deprecated, write {fieldname}[{RESAMPLE_BY!r}] "
                      f"(same spec, same hash).", DeprecationWarning, stacklevel=_outside_stacklevel())
        return {RESAMPLE_BY if k == old else k: v for k, v in declared.items()}

    def __hash__(self) -> int:  # mappings inside: hash the canonical declaration instead
        return hash(self.spec_hash())

    # -- derived ------------------------------------------------------------------------
    @property
    def kind(self) -> TestKind:
        """The test kind of the registry this spec names."""
        return get_kind(self.test)

    def fidelity_record(self, dataset: str | None = None) -> dict[str, Any]:
        """The fidelity its result on ``dataset`` carries: the declared one (the dataset's,
        for a mapping by dataset), else ``as_stated`` with no differences. A dataset a
        mapping does not name (a cube in hand) is a proxy: the declaration says nothing of it.

        >>> HypothesisSpec(id="X1", claim="c", source="s", datasets=("toy",), test="correlation",
        ...     selection={"x": Select("head_contribution", step="first"),
        ...                "y": Select("change_from_init")},
        ...     prediction=Prediction("negative"), gate="report").fidelity_record()
        {'status': 'as_stated', 'differs': []}
        """
        if isinstance(self.fidelity, Mapping):
            if dataset in self.fidelity:
                return self.fidelity[dataset].record()
            return Fidelity("proxy", differs=(f"population: data {dataset!r}, not a dataset the "
                                              f"declaration's fidelity names",)).record()
        return (self.fidelity or AS_STATED).record()

    def resolved_params(self) -> dict[str, Any]:
        """The test's default parameters overridden by the declared ones, as the kind reads
        them: ``resample_by`` under the name the kind stores it (``strata`` or ``unit``,
        :func:`~lie_stats.spec.registry.resample_param`), the canonical form that results
        record and the hash covers."""
        return {**self.kind.params, **as_kind_reads(self.params, self.kind)}

    def hashed_params(self) -> dict[str, Any]:
        """The resolved parameters the hash covers: all of them, except the defaults of
        parameters the kind added after declarations of it were pinned
        (``TestKind.hashed_when_declared``) when this spec does not declare them."""
        late = self.kind.hashed_when_declared
        declared = as_kind_reads(self.params, self.kind)
        return {k: v for k, v in self.resolved_params().items() if k not in late or k in declared}

    def declaration(self) -> dict[str, Any]:
        """What the pre-registration hash covers, as JSON-ready values.

        Claim, data, selection, test, resolved parameters, prediction (its magnitude band
        included, when declared), reference, gate and analysis choices; the multiplicity
        family and ``primary`` when declared (they decide verdicts; left out when not
        declared, so declarations made before they decided keep their hashes). Parameters
        and choices are in their canonical form (``resample_by`` under the kind's name for
        it, :meth:`resolved_params`), so either spelling hashes the same. Not hashed:
        ``source`` and ``notes`` (documentation) and the declaring module's path (it
        differs between machines).
        """
        out = {
            "id": self.id,
            "claim": self.claim,
            "datasets": list(self.datasets),
            "selection": {k: v.declaration() for k, v in sorted(self.selection.items())},
            "test": self.test,
            "params": jsonable(self.hashed_params()),
            "prediction": self.prediction.declaration(),
            "reference": jsonable(self.reference),
            "gate": self.gate,
            "choices": jsonable(as_kind_reads(self.choices, self.kind)),
        }
        if self.multiplicity_family:
            out["multiplicity_family"] = self.multiplicity_family
        if self.primary:
            out["primary"] = True
        return out

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
        >>> proxy = Fidelity("proxy", differs=("population: a smaller model",))
        >>> s.spec_hash() == HypothesisSpec(**{**s.__dict__, "fidelity": proxy}).spec_hash()
        True
        """
        return canonical_hash(self.declaration())

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
            changes = {k: v for k, v in choice.items() if k in SELECT_DIMS and k in dims}
            if "layers" in choice:
                v = choice["layers"]
                changes["layers"] = (v,) if isinstance(v, (int, np.integer)) else v
            if "models" in choice:
                v = choice["models"]
                changes["models"] = (v,) if isinstance(v, str) else v
            selection[role] = replace(sel, **changes)
        params = {**self.params, **{k: v for k, v in choice.items() if k not in SWEEP_SELECT}}
        return replace(self, selection=selection, params=params, choices={}, module=self.module)



@dataclass(frozen=True)
class OutOfScope:
    """A claim recorded in the registry as not testable with weight-geometry data.

    It is collected like a spec, always reported as ``skipped`` with its reason (recorded in
    the registry as not testable), and never fails.

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
            object.__setattr__(self, "module", caller_module())
        _checked(self, self._normalize)

    def _normalize(self) -> None:
        object.__setattr__(self, "reference", dict(self.reference or {}))
        for name in ("id", "claim", "source", "reason"):
            value = getattr(self, name)
            if not isinstance(value, str) or not value.strip():
                raise spec_error(self, name, f"expected a non-empty string, got {value!r}.")

    def __hash__(self) -> int:
        return hash(self.spec_hash())

    def declaration(self) -> dict[str, Any]:
        return {"id": self.id, "claim": self.claim, "reason": self.reason,
                "reference": jsonable(self.reference), "out_of_scope": True}

    def spec_hash(self) -> str:
        """Hash of the declaration, as :meth:`HypothesisSpec.spec_hash`."""
        return canonical_hash(self.declaration())

    def result(self) -> "Result":
        """The registry's record of this claim: verdict ``skipped`` with the reason."""
        return Result(id=self.id, claim=self.claim, source=self.source, dataset=NO_DATASET,
                      verdict=C.SKIPPED, reason=f"out of scope: {self.reason}", gate="report",
                      test="none", spec_hash=self.spec_hash(), reference=jsonable(self.reference),
                      module=self.module, notes=self.notes, fidelity=AS_STATED.record())
