"""Validation of a declaration: the checks every test kind shares.

:func:`validate` runs when a :class:`~lie_stats.spec.HypothesisSpec` is built (so a
malformed hypothesis module fails at collection, naming its field). The checks here are
generic: texts, datasets, gate, roles against the kind's, each :class:`Select` against the
variable table, parameters against the kind's names, enums and ranges, the prediction's
direction, the reference figures the kind needs, the swept choices. What only one kind
knows (a formula's names, the model predictors, a replication's original figures) is that
kind's ``validate`` hook (:class:`~lie_stats.spec.registry.TestKind`), called here.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from .. import schema
from .. import columns as C
from ..errors import SpecError, did_you_mean
from .parts import (
    FIDELITY_ASPECTS,
    FIDELITY_STATUSES,
    MAGNITUDE_SCALES,
    REDUCTIONS,
    Fidelity,
    SELECT_DIMS,
    STEP_WORDS,
    SWEEP_SELECT,
    Magnitude,
    Prediction,
    Select,
    check_choice,
    check_projection,
    spec_error,
)
from .registry import RESAMPLE_BY, get_kind, kind_names, resample_param

__all__ = ["validate", "validate_magnitude", "validate_fidelity", "validate_select", "validate_params", "check_datasets"]


def validate(spec: Any) -> None:
    """Check a spec's every field (see the module docstring); raise the first error.

    Raises
    ------
    SpecError
        Naming the declaring module, the spec, the field and what was expected.
    """
    for name in ("id", "claim", "source"):
        value = getattr(spec, name)
        if not isinstance(value, str) or not value.strip():
            raise spec_error(spec, name, f"expected a non-empty string, got {value!r}.")
    family = getattr(spec, "multiplicity_family", "")
    if not isinstance(family, str) or (family and not family.strip()):
        raise spec_error(spec, "multiplicity_family", f"expected a family name (or \"\" for the claim id), got {family!r}.")
    if not isinstance(getattr(spec, "primary", False), bool):
        raise spec_error(spec, "primary", f"expected True or False, got {spec.primary!r}.")
    if spec.fidelity is not None:
        validate_fidelity(spec.fidelity, spec)
    if not spec.datasets or not all(isinstance(d, str) and d for d in spec.datasets):
        raise spec_error(spec, "datasets", f"expected a non-empty tuple of dataset names, got {spec.datasets!r}.")
    if len(set(spec.datasets)) != len(spec.datasets):
        raise spec_error(spec, "datasets", f"names a dataset twice: {spec.datasets!r}.")
    check_choice(spec.gate, C.GATES, spec, "gate", "gate")
    check_choice(spec.test, kind_names(), spec, "test", "test")
    kind = get_kind(spec.test)
    roles = set(spec.selection)
    for role in kind.roles:
        if role not in roles:
            raise spec_error(spec, "selection",
                       f"test {spec.test!r} needs the roles {', '.join(kind.roles)}; {role!r} is "
                       f"missing.{did_you_mean(role, [r for r in roles if r not in kind.roles])}")
    for role in roles:
        if not kind.accepts_role(role):
            known = kind.known_roles()
            raise spec_error(spec, f"selection[{role!r}]",
                             f"test {spec.test!r} takes no role {role!r}.{did_you_mean(role, known)} "
                             f"Its roles: {kind.roles_text()}.")
    for role, sel in spec.selection.items():
        validate_select(sel, spec, f"selection[{role!r}]")
    names = _param_names(kind)
    for key in spec.params:
        if key not in names:
            raise spec_error(spec, f"params[{key!r}]",
                       f"test {spec.test!r} takes no parameter {key!r}.{did_you_mean(key, names)} "
                       f"Its parameters: {', '.join(names)}.")
    params = spec.resolved_params()
    for key in kind.required_params:
        if params.get(key) is None:
            raise spec_error(spec, f"params[{key!r}]", f"test {spec.test!r} requires the parameter {key!r}.")
    validate_params(spec, params, kind)
    pred = spec.prediction
    if not isinstance(pred, Prediction):
        raise spec_error(spec, "prediction", f"expected a Prediction(...), got {type(pred).__name__}.")
    check_choice(pred.direction, kind.directions, spec, "prediction.direction", "direction",
                  f" for test {spec.test!r}")
    if pred.direction == "equivalent" and pred.bound is None and params.get("bound") is None:
        raise spec_error(spec, "prediction.bound", "an equivalence claim needs a bound (TOST).")
    if pred.bound is not None and not (isinstance(pred.bound, (int, float)) and pred.bound > 0):
        raise spec_error(spec, "prediction.bound", f"expected a positive number, got {pred.bound!r}.")
    if pred.magnitude is not None:
        validate_magnitude(pred.magnitude, spec)
    if not isinstance(spec.reference, Mapping):
        raise spec_error(spec, "reference", "expected a mapping of the original figures.")
    for keys in kind.reference:
        alternatives = keys.split("|")
        if not any(k in spec.reference for k in alternatives):
            raise spec_error(spec, "reference",
                       f"test {spec.test!r} needs the original figure {' or '.join(map(repr, alternatives))} "
                       f"in reference (has: {', '.join(spec.reference) or 'nothing'}).")
    if kind.validate is not None:
        kind.validate(spec, params)
    if spec.gate == "replication" and not spec.reference:
        raise spec_error(spec, "reference",
                   "a 'replication' gate needs the original figures to replicate (reference={...}).")
    allowed = set(SWEEP_SELECT) | set(_param_names(kind))
    for key, values in spec.choices.items():
        if key not in allowed:
            raise spec_error(spec, f"choices[{key!r}]",
                       f"cannot sweep {key!r}.{did_you_mean(key, sorted(allowed))} Sweepable: "
                       f"{', '.join(sorted(allowed))}.")
        if not values:
            raise spec_error(spec, f"choices[{key!r}]", "expected a non-empty list of alternatives.")
        for v in values:
            if key == schema.FAMILY:
                check_choice(v, schema.FAMILIES, spec, f"choices[{key!r}]", "family")
            elif key == schema.MATRIX:
                check_choice(v, schema.MATRICES, spec, f"choices[{key!r}]", "matrix")
            elif key == schema.PROJECTION:
                check_projection(v, spec, f"choices[{key!r}]")
    if spec.choices and not any(
        k not in SELECT_DIMS or any(k in schema.VARIABLES[s.metric].dims for s in spec.selection.values())
        for k in spec.choices
    ):
        raise spec_error(spec, "choices", "no selected variable has the swept dimension(s).")
    try:
        spec.spec_hash()
    except (TypeError, ValueError) as e:
        raise spec_error(spec, "params", f"not JSON-serializable for the pre-registration hash: {e}") from e
    for choice in spec.choice_grid():  # every analysis choice must be a valid spec too
        try:
            spec.with_choice(choice)
        except SpecError as e:
            raise spec_error(spec, "choices", f"the choice {choice!r} gives an invalid spec: "
                       f"{str(e).split(': ', 1)[-1]}") from None



def validate_fidelity(fid: Any, spec: Any) -> None:
    """Check a declared fidelity: a :class:`Fidelity`, or a mapping of each of the spec's
    datasets to one (when its datasets differ in it). In each, the status is one of
    :data:`FIDELITY_STATUSES`; each ``differs`` entry is a string ``"<aspect>: <what>"``
    with an aspect of :data:`FIDELITY_ASPECTS` and a non-empty ``<what>``; a proxy names at
    least one difference and a test as stated none."""
    if isinstance(fid, Mapping):
        names = set(spec.datasets)
        if {"status", "differs"} & set(fid) and not {"status", "differs"} & names:
            raise spec_error(spec, "fidelity", f"expected Fidelity(status, differs=(...)), not a mapping of its "
                             f"fields ({dict(fid)!r}); a mapping names datasets: {{dataset: Fidelity(...)}}.")
        missing = [d for d in spec.datasets if d not in fid]
        extra = sorted(str(k) for k in fid if k not in names)
        if missing or extra:
            raise spec_error(spec, "fidelity",
                             "a mapping of fidelity by dataset names each of the spec's datasets once"
                             + (f"; missing: {', '.join(map(repr, missing))}" if missing else "")
                             + (f"; not a dataset of the spec: {', '.join(map(repr, extra))}" if extra else "")
                             + f" (datasets: {', '.join(spec.datasets)}).")
        for ds, one in fid.items():
            _validate_one_fidelity(one, spec, f"fidelity[{ds!r}]")
        return
    _validate_one_fidelity(fid, spec, "fidelity")


def _validate_one_fidelity(fid: Any, spec: Any, where: str) -> None:
    if not isinstance(fid, Fidelity):
        raise spec_error(spec, where, "expected a Fidelity(status, differs=(...)) or a mapping of each "
                         f"dataset to one, got {type(fid).__name__}.")
    check_choice(fid.status, FIDELITY_STATUSES, spec, f"{where}.status", "fidelity status")
    if not isinstance(fid.differs, tuple):
        raise spec_error(spec, f"{where}.differs", f"expected a tuple of strings, got {fid.differs!r}.")
    aspects = " or ".join(f"{a!r}" for a in FIDELITY_ASPECTS)
    for i, entry in enumerate(fid.differs):
        field_ = f"{where}.differs[{i}]"
        if not isinstance(entry, str):
            raise spec_error(spec, field_, f"expected a string \"<aspect>: <what differs>\", got {entry!r}.")
        aspect = next((a for a in FIDELITY_ASPECTS if entry.startswith(a + ": ")), None)
        if aspect is None:
            head = entry.split(":", 1)[0].strip()
            raise spec_error(spec, field_, f"expected \"<aspect>: <what differs>\" with the aspect one of "
                             f"{aspects}, got {entry!r}.{did_you_mean(head, FIDELITY_ASPECTS)}")
        if not entry[len(aspect) + 2:].strip():
            raise spec_error(spec, field_, f"says nothing after {aspect + ':'!r}: name what differs.")
    if fid.status == "proxy" and not fid.differs:
        raise spec_error(spec, f"{where}.differs", "a proxy names at least one difference from the source's design.")
    if fid.status == "as_stated" and fid.differs:
        raise spec_error(spec, f"{where}.status",
                         f"'as_stated' with differences {list(fid.differs)!r}: declare 'proxy' (or drop them).")


def validate_magnitude(mag: Any, spec: Any) -> None:
    """Check a :class:`~lie_stats.spec.parts.Magnitude`: numbers, band order, scale,
    justification, the columns it reads, and that ``not_on`` names datasets of the spec."""
    where = "prediction.magnitude"
    if not isinstance(mag, Magnitude):
        raise spec_error(spec, where, f"expected a Magnitude(...), got {type(mag).__name__}.")
    check_choice(mag.scale, MAGNITUDE_SCALES, spec, f"{where}.scale", "scale")
    numbers = {}
    for name in ("reference", "low", "high"):
        value = getattr(mag, name)
        if isinstance(value, bool) or not isinstance(value, (int, float, np.integer, np.floating)) \
                or np.isnan(value):
            raise spec_error(spec, f"{where}.{name}", f"expected a number, got {value!r}.")
        numbers[name] = float(value)
    if not numbers["low"] <= numbers["reference"] <= numbers["high"] or numbers["low"] == numbers["high"]:
        raise spec_error(spec, where, f"expected low <= reference <= high with low < high; got low "
                                      f"{numbers['low']}, reference {numbers['reference']}, high {numbers['high']}.")
    if not np.isfinite(numbers["reference"]):
        raise spec_error(spec, f"{where}.reference", "expected a finite figure.")
    if mag.scale in ("ratio", "log") and numbers["low"] <= 0:
        raise spec_error(spec, f"{where}.low", f"a {mag.scale} band is a band of ratios: low must be "
                                               f"> 0, got {numbers['low']}.")
    if not isinstance(mag.justification, str) or not mag.justification.strip():
        raise spec_error(spec, f"{where}.justification",
                         "say why the band reads the claim's figure (a band without a reason is a tuning knob).")
    if not isinstance(mag.estimate, str) or not mag.estimate:
        raise spec_error(spec, f"{where}.estimate", f"expected a result column name, got {mag.estimate!r}.")
    if mag.interval is not None and (len(mag.interval) != 2 or not all(isinstance(c, str) for c in mag.interval)):
        raise spec_error(spec, f"{where}.interval", f"expected two column names, got {mag.interval!r}.")
    for name, reason in mag.not_on.items():
        if name not in spec.datasets:
            raise spec_error(spec, f"{where}.not_on", f"{name!r} is not one of this spec's datasets "
                                                      f"{spec.datasets!r}.{did_you_mean(str(name), spec.datasets)}")
        if not isinstance(reason, str) or not reason.strip():
            raise spec_error(spec, f"{where}.not_on[{name!r}]", "give the reason the magnitude is not tested there.")


def validate_select(sel: Any, spec: Any, fieldname: str) -> None:
    """Check one :class:`Select` of ``spec`` against the variable table of
    :mod:`lie_stats.schema`: the metric exists, its step word, and the dimensions it names
    are exactly those its variable has."""
    if not isinstance(sel, Select):
        raise spec_error(spec, fieldname, f"expected a Select(...), got {type(sel).__name__}.")
    check_choice(sel.metric, tuple(schema.VARIABLES), spec, f"{fieldname}.metric", "metric")
    dims = schema.VARIABLES[sel.metric].dims
    step = sel.step
    if isinstance(step, bool) or not (
        (isinstance(step, (int, np.integer)) and step >= 0) or step in STEP_WORDS
    ):
        raise spec_error(spec, f"{fieldname}.step",
                   f"unknown step {step!r}.{did_you_mean(str(step), STEP_WORDS)} Expected "
                   f"'first', 'last', 'all' or a non-negative integer step.")
    for dim, allowed in ((schema.FAMILY, schema.FAMILIES), (schema.MATRIX, schema.MATRICES)):
        value = getattr(sel, dim)
        if dim in dims:
            if value is None:
                raise spec_error(spec, f"{fieldname}.{dim}",
                           f"{sel.metric!r} has a {dim!r} dimension: name one of "
                           f"{', '.join(allowed)} (sweep others with choices).")
            check_choice(value, allowed, spec, f"{fieldname}.{dim}", dim)
        elif value is not None:
            raise spec_error(spec, f"{fieldname}.{dim}",
                       f"{sel.metric!r} has no {dim!r} dimension (its dims: {', '.join(dims)}).")
    if schema.PROJECTION in dims:
        if sel.projection is None:
            raise spec_error(spec, f"{fieldname}.projection",
                       f"{sel.metric!r} has a 'projection' dimension: name 'none', 'adaptive' "
                       f"or 'fixed:K'.")
        check_projection(sel.projection, spec, f"{fieldname}.projection")
    elif sel.projection is not None:
        raise spec_error(spec, f"{fieldname}.projection",
                   f"{sel.metric!r} has no 'projection' dimension (its dims: {', '.join(dims)}).")
    if sel.layers is not None and (
        not isinstance(sel.layers, tuple) or not sel.layers or not all(isinstance(x, (int, np.integer)) and not isinstance(x, bool)
                                  for x in sel.layers)
    ):
        raise spec_error(spec, f"{fieldname}.layers", f"expected a non-empty tuple of integers, got {sel.layers!r}.")
    if sel.models is not None and (not isinstance(sel.models, tuple) or not sel.models
                                   or not all(isinstance(m, str) for m in sel.models)):
        raise spec_error(spec, f"{fieldname}.models", f"expected a non-empty tuple of model names, got {sel.models!r}.")
    if sel.reduce is not None:
        check_choice(sel.reduce, REDUCTIONS, spec, f"{fieldname}.reduce", "reduction")


def _param_names(kind: Any) -> list[str]:
    """The parameter names a declaration may write for ``kind``: the kind's own, with
    ``resample_by`` in place of the name it stores the resampling unit under."""
    stored = resample_param(kind)
    return [RESAMPLE_BY if k == stored else k for k in kind.params]


def validate_params(spec: Any, params: Mapping[str, Any], kind: Any) -> None:
    """Check resolved parameters: each enum parameter of the kind (its own and the shared
    resampling unit, ``method``, ``alternative``) takes one of its words; counts, levels, the
    bound and the two group codes are in range."""
    stored = resample_param(kind)
    for key, allowed in kind.all_enums().items():
        if key in params:
            shown = RESAMPLE_BY if key == stored else key
            check_choice(params[key], allowed, spec, f"params[{shown!r}]", shown)
    for key, minimum in (("n_perm", 1), ("n_boot", 0), ("seed", 0)):
        v = params.get(key)
        if key in params and (isinstance(v, bool) or not isinstance(v, (int, np.integer)) or v < minimum):
            raise spec_error(spec, f"params[{key!r}]", f"expected an integer >= {minimum}, got {v!r}.")
    for key in ("ci", "alpha"):
        v = params.get(key)
        if key in params and (isinstance(v, bool) or not isinstance(v, (int, float)) or not 0 < v < 1):
            raise spec_error(spec, f"params[{key!r}]", f"expected a level in (0, 1), got {v!r}.")
    if params.get("bound") is not None and not (isinstance(params["bound"], (int, float)) and params["bound"] > 0):
        raise spec_error(spec, "params['bound']", f"expected a positive number, got {params['bound']!r}.")
    groups = params.get("groups")
    if groups is not None and (isinstance(groups, str) or not isinstance(groups, Sequence) or len(groups) != 2):
        raise spec_error(spec, "params['groups']", f"expected the two group codes (a, b), got {groups!r}.")



def check_datasets(spec: Any, root: str | Path | None) -> None:
    """Check that every dataset a spec names has a card under ``root`` (None: the default
    datasets folder), or is a cube file that exists (a name ending in ``.nc``).

    Raises
    ------
    SpecError
        Naming the module, the spec, the field ``datasets`` and the closest known name.

    Examples
    --------
    >>> import tempfile
    >>> from lie_stats.spec import HypothesisSpec, Prediction, Select
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
    from ..datasets import DatasetError, cube_card, default_datasets_dir, is_cube_path, list_datasets

    root = default_datasets_dir() if root is None else root
    known = [c.name for c in list_datasets(root)]
    for name in spec.datasets:
        if is_cube_path(name):  # a cube file named directly: it must exist
            try:
                cube_card(name)
            except DatasetError as e:
                raise spec_error(spec, "datasets", str(e)) from e
            continue
        if name not in known:
            raise spec_error(spec, "datasets",
                       f"unknown dataset {name!r}.{did_you_mean(name, known)} Datasets with a card "
                       f"in {str(root)!r}: {', '.join(known) or 'none'}.")
