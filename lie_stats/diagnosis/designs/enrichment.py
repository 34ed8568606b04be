"""Enrichment (last / first): whole layers swapped between the two checkpoints; the
reference ratio planted by scaling the last checkpoint."""

from __future__ import annotations

from typing import Any

import numpy as np

from ..simulate import Arrays, Design, NotPlantable, one, reference_number, swap_layers


def _null_swap(arrays: Arrays, spec: Any, rng: np.random.Generator) -> Arrays:
    first, last = swap_layers(arrays["first"], arrays["last"], rng)
    return {**arrays, "first": first, "last": last}


def _plant_ratio(arrays: Arrays, spec: Any, rng: np.random.Generator) -> tuple[Arrays, float]:
    ratio = reference_number(spec, ("ratio",), "ratio last / first")
    if ratio <= 0:
        raise NotPlantable(f"the reference ratio {ratio} is not positive")
    return {**arrays, "last": arrays["last"] * ratio}, ratio


DESIGNS = {
    "enrichment": Design(
        null=_null_swap, plant=_plant_ratio, null_value=one,
        what="null: first and last swapped by whole layers; planted: last x the reference ratio"),
}
