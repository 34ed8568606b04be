"""``verdict_agreement``: the target hypothesis's verdict under each compression, compared.

Both simulations are built from the target kind's own design (looked up when a simulation
runs, so a design added later for the target's kind is used): each compression's data (on
the units every compression has, as the kind keeps them) get the target design's null, then
its planted effect, all compressions with the same random draws, so that the simulated
compressions stay paired unit by unit as the real ones are and differ only as their real
data differ.

- null (the compressions disagree): one compression, drawn at random, keeps the target's
  null (its effect removed) while the others carry the planted effect. "Supported"
  (identical decisive verdicts) then needs the target to be supported on its null data: at
  most the target's own false-positive rate.
- planted (the compressions agree): every compression carries the planted effect; the
  effect (the range of the verdict codes) is then 0.

Where the target's kind has no design, or its design plants no effect for the target's
reference, there is nothing faithful to simulate and the figures are null with that reason.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ...simulate import Arrays, Design, NotPlantable, zero_or_null_center

__all__ = ["TargetSpec", "target_of", "compression_arrays", "DESIGNS"]


@dataclass(frozen=True)
class TargetSpec:
    """The target hypothesis as a ``verdict_agreement`` spec records it (its test,
    resolved parameters, prediction and reference; its selection as compression 0's), with
    the attributes the designs read from a spec."""

    id: str
    test: str
    params: Mapping[str, Any]
    prediction: Any
    reference: Mapping[str, Any]
    selection: Mapping[str, Any] = field(default_factory=dict)
    datasets: tuple[str, ...] = ()

    @property
    def kind(self) -> Any:
        from ...registry import get_kind

        return get_kind(self.test)

    def resolved_params(self) -> dict[str, Any]:
        return {**self.kind.params, **self.params}


def _split(role: str) -> tuple[str, int]:
    from . import AGREE_SEP

    base, _, index = role.rpartition(AGREE_SEP)
    return base, int(index)


def target_of(spec: Any) -> TargetSpec:
    """The target of a ``verdict_agreement`` spec (its ``target_*`` parameters)."""
    from ...parts import Prediction

    p = spec.resolved_params()
    selection = {}
    for role, sel in spec.selection.items():
        base, i = _split(role)
        if i == 0:
            selection[base] = sel
    return TargetSpec(id=str(p["target_id"]), test=str(p["target_test"]),
                      params=dict(p["target_params"]), prediction=Prediction.from_declaration(p["target_prediction"]),
                      reference=dict(p["target_reference"] or {}), selection=selection,
                      datasets=tuple(getattr(spec, "datasets", ())))


def compression_arrays(arrays: Arrays) -> list[Arrays]:
    """Each compression's arrays by the target's roles, on the units every compression has
    data for (aligned, the others NaN), as ``verdict_agreement`` evaluates them."""
    import xarray as xr

    by_role: dict[str, dict[int, Any]] = {}
    for role, da in arrays.items():
        base, i = _split(role)
        by_role.setdefault(base, {})[i] = da
    n = 1 + max(i for per in by_role.values() for i in per)
    out: list[Arrays] = [{} for _ in range(n)]
    for base, per in by_role.items():
        if sorted(per) != list(range(n)):
            raise NotPlantable(f"selection {base!r} is not given under every compression")
        same = xr.align(*(per[i] for i in range(n)), join="inner")
        ok = np.logical_and.reduce([np.isfinite(a.values) for a in same])
        keep = xr.DataArray(ok, dims=same[0].dims,
                            coords={d: same[0][d] for d in same[0].dims if d in same[0].indexes})
        for i, a in enumerate(same):
            out[i][base] = a.where(keep)
    return out


def _target_design(spec: Any) -> tuple[TargetSpec, Design]:
    from .. import design_for

    target = target_of(spec)
    design = design_for(target.kind)
    if design is None:
        raise NotPlantable(f"the target {target.id}'s kind {target.test} has no design to simulate "
                           f"its effect and its absence")
    if design.plant is None:
        raise NotPlantable(f"the target {target.id}'s design ({target.test}) plants no effect, so "
                           f"compressions that agree on an effect cannot be simulated")
    return target, design


class _Simulated(dict):
    """Simulated arrays (a plain dict to the kind) that remember the real arrays and the
    draws they were simulated from, so that the planted simulation that follows a null one
    starts from the real data (the target's null and plant applied once, never on top of an
    earlier simulation) with the same draws: the two simulations then differ only in the
    compression whose effect the null removed."""

    real: Arrays
    seed: int


def _simulate(real: Arrays, spec: Any, seed: int, removed: int | None) -> _Simulated:
    """Every compression's data with the target's planted effect, except compression
    ``removed``, which keeps the target's null; the same draws for every compression."""
    from . import agreement_role

    target, design = _target_design(spec)
    out = _Simulated(real)
    out.real, out.seed = real, seed
    for i, sub in enumerate(compression_arrays(real)):
        draws = np.random.default_rng(seed)
        try:
            data = design.null(sub, target, draws)
            if i != removed:
                data, _ = design.plant(data, target, draws)
        except NotPlantable as e:
            raise NotPlantable(f"the target {target.id}'s design: {e}") from None
        for role in sub:
            out[agreement_role(role, i)] = data[role]
    return out


def _null_disagree(arrays: Arrays, spec: Any, rng: np.random.Generator) -> Arrays:
    removed = int(rng.integers(1 + max(_split(role)[1] for role in arrays)))
    return _simulate(arrays, spec, int(rng.integers(2 ** 63)), removed=removed)


def _plant_agree(arrays: Arrays, spec: Any, rng: np.random.Generator) -> tuple[Arrays, float]:
    if isinstance(arrays, _Simulated):  # after the null: the same real data and draws
        return _simulate(arrays.real, spec, arrays.seed, removed=None), 0.0
    return _simulate(arrays, spec, int(rng.integers(2 ** 63)), removed=None), 0.0


DESIGNS = {
    "verdict_agreement": Design(
        null=_null_disagree, plant=_plant_agree, null_value=zero_or_null_center, sign=False,
        runs_other_kinds=True,
        what="null: the target's own design plants its reference effect under every compression "
             "but one, drawn at random, which keeps the target's null (the compressions "
             "disagree); planted: the effect under every compression (they agree); paired draws "
             "across compressions"),
}
