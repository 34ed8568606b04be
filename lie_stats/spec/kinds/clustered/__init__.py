"""Clustered summaries of head data: ``share_above`` and ``head_mean``
(:mod:`lie_stats.stats.clustered`).

The share of heads above a threshold, and the mean (or geometric mean) of head values,
optionally over the heads whose mask is above a level; clusters are the (model, layer)
pairs, resampled within models for a percentile interval that describes the estimate; the
verdict comes from the cluster sign-flip test against the prediction's value (exact, and
calibrated with few clusters: :mod:`lie_stats.stats.signflip`), each side at alpha / 2.
"""

from __future__ import annotations

from typing import Any

from ....errors import SpecError, StatsInputError
from ....stats.clustered import TRANSFORMS, head_mean, share_above
from ...registry import register_test
from ...rules import decide_one_sided
from ...tables import TestInput, layer_clusters

__all__: list[str] = []


def _run_share_above(data: TestInput) -> Any:
    p = data.params
    table = data.table("values")
    clusters, strata = layer_clusters(table, "share_above")
    return share_above(table["values"].to_numpy(float), p["threshold"], clusters,
                       strata=strata, null_value=float(data.prediction.value),
                       n_boot=p["n_boot"], ci=p["ci"], seed=p["seed"])


def _run_head_mean(data: TestInput) -> Any:
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
    clusters, strata = layer_clusters(table, "head_mean")
    return head_mean(table["values"].to_numpy(float), clusters, strata=strata,
                        transform=p["transform"], null_value=float(data.prediction.value),
                        n_boot=p["n_boot"], ci=p["ci"], seed=p["seed"])


register_test("share_above", _run_share_above, decide_one_sided, roles=("values",),
              params={"threshold": None, "n_boot": 2000, "ci": 0.95},
              required_params=("threshold",), directions=("above", "below"),
              description="share of heads whose value exceeds params threshold against the "
                          "prediction's value: cluster sign-flip test over layers, percentile "
                          "interval resampling layers within models (lie_stats.stats.share_above)")
register_test("head_mean", _run_head_mean, decide_one_sided, roles=("values",),
              optional_roles=("mask",),
              params={"transform": "identity", "mask_above": None, "n_boot": 2000, "ci": 0.95},
              enums={"transform": TRANSFORMS}, directions=("above", "below"),
              description="mean (transform 'log': geometric mean) of head values, optionally "
                          "over the heads whose mask exceeds mask_above, against the prediction's "
                          "value: cluster sign-flip test over layers, percentile interval "
                          "resampling layers within models (lie_stats.stats.head_mean)")
