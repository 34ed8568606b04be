"""Kinds over labelled heads: ``class_interaction``, ``threshold_agreement``,
``stabilization_time``, ``class_auc`` (:mod:`lie_stats.stats.classification`).

Heads carry label codes (METRICS.md §8: anchor / mixed / worker, :data:`lie_stats.schema.LABEL_CODES`).
``class_interaction`` compares the slope of one metric on another between two classes;
``threshold_agreement`` is a bidirectional threshold classifier's agreement with the labels;
``stabilization_time`` compares between classes the time each head's trajectory takes to
reach a fraction of its final value; ``class_auc`` is the AUC of a metric for one class
against others. Every p permutes within layers. A class with too few heads makes the test
undefined (the reason names the label counts), hence the verdict inconclusive.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from .... import schema
from ....errors import SpecError, StatsInputError
from ....stats.classification import threshold_agreement, class_auc, class_interaction, threshold_zones, time_to_fraction
from ....columns import (MEDIAN_TIME_GROUP0, MEDIAN_TIME_GROUP1, N_UNDEFINED_TIME, N_ZONE_ABOVE,
                              N_ZONE_BELOW, N_ZONE_BETWEEN, THRESHOLD_COSINE)
from ....stats.groups import group_difference
from ...parts import spec_error
from ...registry import RESAMPLING, register_test
from ...rules import decide_directional
from ...tables import D_HEAD, D_MODEL, TestInput, need_classes, two_groups

__all__ = ["THRESHOLD_UNITS"]

#: Units of ``threshold_agreement``'s ``threshold``: a cosine, or multiples of 1/sqrt(D),
#: the standard deviation of the cosine of two independent random directions in the
#: D = 4 d_model d_head dimensions of a head's weights (METRICS.md §7.5).
THRESHOLD_UNITS = ("random_sd", "cosine")
def _run_class_interaction(data: TestInput) -> Any:
    p = data.params
    table = data.table("y", "x", "group")
    sub, g, strata = two_groups(data, table, "group")
    return class_interaction(
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
    units, classes = p["threshold_units"], tuple(p["classes"])
    t = float(p["threshold"])
    if units == "random_sd":
        da = data.arrays["score"]
        t = t / math.sqrt(4.0 * _model_scalar(da, D_MODEL) * _model_scalar(da, D_HEAD))
    table = data.table("score", "label")
    labels = table["label"].to_numpy(float)
    need_classes(labels, (classes[0], classes[2]), int(p["min_class"]),
                  "the threshold classifier's agreement")
    zone_of = {float(c): float(z) for z, c in enumerate(classes)}
    observed = np.array([zone_of.get(float(c), np.nan) for c in labels])
    zones = threshold_zones(table["score"].to_numpy(float), t)
    row = threshold_agreement(zones, observed, strata=data.strata(table),
                                        alternative=p["alternative"], n_perm=p["n_perm"],
                                        n_boot=p["n_boot"], ci=p["ci"], seed=p["seed"])
    return row.assign(**{THRESHOLD_COSINE: t, N_ZONE_BELOW: int(np.sum(zones == 0)),
                         N_ZONE_BETWEEN: int(np.sum(zones == 1)), N_ZONE_ABOVE: int(np.sum(zones == 2))})


def _run_stabilization_time(data: TestInput) -> Any:
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
    times = time_to_fraction(vals[steps_keep], flat[schema.STEP].values[steps_keep],
                                            fraction=p["fraction"], scale=p["scale"])
    index = flat.indexes["unit"].to_frame(index=False)
    table = index.assign(time=times, group=labf.values)
    table = table[np.isfinite(table["group"].to_numpy(float))].reset_index(drop=True)
    n_undefined = int(np.count_nonzero(~np.isfinite(table["time"].to_numpy(float))
                                       & np.isin(table["group"], np.asarray(p["groups"], float))))
    table = table[np.isfinite(table["time"].to_numpy(float))].reset_index(drop=True)
    sub, g, strata = two_groups(data, table, "group")
    t = sub["time"].to_numpy(float)
    row = group_difference(t, g, strata=strata, alternative=p["alternative"],
                                    n_perm=p["n_perm"], n_boot=p["n_boot"], ci=p["ci"], seed=p["seed"])
    return row.assign(**{MEDIAN_TIME_GROUP0: float(np.median(t[~g])),
                         MEDIAN_TIME_GROUP1: float(np.median(t[g])), N_UNDEFINED_TIME: n_undefined})


def _run_class_auc(data: TestInput) -> Any:
    p = data.params
    table = data.table("x", "label")
    labels = table["label"].to_numpy(float)
    pos = float(p["positive"])
    neg = p["negative"]
    need_classes(labels, (pos,), 2, f"the AUC of class {int(pos)}")
    if neg is None:
        keep = np.isfinite(labels)
    else:
        neg_codes = np.asarray(tuple(neg) if not isinstance(neg, (int, float)) else (neg,), float)
        need_classes(labels, tuple(neg_codes), 1, f"the AUC of class {int(pos)} against {tuple(neg)}")
        keep = np.isin(labels, np.concatenate([[pos], neg_codes]))
    sub = table.loc[keep].reset_index(drop=True)
    return class_auc(sub["x"].to_numpy(float), labels[keep] == pos,
                                   strata=data.strata(sub), alternative=p["alternative"],
                                   n_perm=p["n_perm"], n_boot=p["n_boot"], ci=p["ci"], seed=p["seed"])


def _validate_auc(spec: Any, params: Mapping[str, Any]) -> None:
    """The prediction's null value is 0.5, an AUC's."""
    if float(spec.prediction.value) != 0.5:
        raise spec_error(spec, "prediction.value", f"the null value of an AUC is 0.5, got "
                                                   f"{spec.prediction.value}; declare "
                                                   f"Prediction(..., value=0.5).")


def _validate_threshold(spec: Any, params: Mapping[str, Any]) -> None:
    """``threshold`` is a number >= 0 and ``classes`` three distinct label codes."""
    thr = params.get("threshold")
    if isinstance(thr, bool) or not isinstance(thr, (int, float)) or not thr >= 0:
        raise spec_error(spec, "params['threshold']", f"expected a number >= 0, got {thr!r}.")
    classes = params.get("classes")
    if isinstance(classes, str) or not isinstance(classes, Sequence) or len(classes) != 3 \
            or len(set(classes)) != 3:
        raise spec_error(spec, "params['classes']", f"expected three distinct label codes (below -t, "
                                                    f"between, above +t), got {classes!r}.")


_ANCHOR_WORKER = (schema.LABEL_CODES["anchor"], schema.LABEL_CODES["worker"])

register_test("class_interaction", _run_class_interaction, decide_directional,
              roles=("y", "x", "group"),
              params={"groups": _ANCHOR_WORKER, "ranks": True, "min_group": 3,
                      "alternative": "two-sided", **RESAMPLING},
              description="difference between two label classes (params groups=(a, b); effect: "
                          "b's slope minus a's) in the slope of y on x, on standardized ranks, "
                          "OLS with layer fixed effects, Freedman-Lane permutation within layers "
                          "(lie_stats.stats.classification.class_interaction)")
register_test("threshold_agreement", _run_threshold_agreement, decide_directional,
              roles=("score", "label"),
              params={"threshold": 3.0, "threshold_units": "random_sd",
                      "classes": (schema.LABEL_CODES["anchor"], schema.LABEL_CODES["mixed"],
                                  schema.LABEL_CODES["worker"]),
                      "min_class": 3, "alternative": "two-sided", **RESAMPLING},
              enums={"threshold_units": THRESHOLD_UNITS}, validate=_validate_threshold,
              description="bidirectional threshold classifier (score below -t, between, above +t; "
                          "t in cosine or random-direction SD units) against the label codes "
                          "params classes=(below, between, above): kappa with within-layer "
                          "chance agreement, permutation within layers "
                          "(lie_stats.stats.classification.threshold_agreement)")
register_test("stabilization_time", _run_stabilization_time, decide_directional,
              roles=("values", "group"),
              params={"groups": _ANCHOR_WORKER, "fraction": 0.9, "scale": "log", "min_group": 2,
                      "alternative": "two-sided", **RESAMPLING},
              description="per head, the time its trajectory (step='all') first reaches a fraction "
                          "of its final value (interpolated in log10 step or step), compared "
                          "between two label classes by group_difference, permuting within layers "
                          "(lie_stats.stats.classification.time_to_fraction)")
register_test("class_auc", _run_class_auc, decide_directional, roles=("x", "label"),
              validate=_validate_auc,
              params={"positive": schema.LABEL_CODES["anchor"], "negative": None,
                      "alternative": "two-sided", **RESAMPLING},
              description="AUC of x for the label code params positive against params negative "
                          "(codes; None: every other head), pairs within layers, labels permuted "
                          "within layers; declare Prediction(..., value=0.5) "
                          "(lie_stats.stats.classification.class_auc)")
