"""Designs of the change kinds: ``ratio_of_changes`` (pretraining over post-training change)
and the parameter-delta ranks ``delta_rank`` and ``delta_order``.

- ``ratio_of_changes``: the post-training changes scaled so that the ratio is exactly the edge
  of what the prediction must exclude (the band's lower or upper edge, each with probability
  1/2, for "equivalent"; the value for "above" / "below"), then the pretraining and the
  edge-times scaled post-training changes of whole (run, layer) clusters swapped with
  probability 1/2 (exchangeable at that ratio: Fieller's total ``sum(pre - r0 post)``
  sign-flipped by cluster, the real per-layer spread kept); planted: the same at the
  reference ratio.
- ``delta_rank``: the target category made exchangeable, layer by layer, with the category
  at the threshold rank (its total scaled to that category's, then the two swapped per layer
  with probability 1/2, or its per-layer shares reflected about a per-model category's),
  the others as they are: the target's true rank exactly at the boundary of the rule's
  null; planted: the target scaled between the categories that give it the reference rank.
- ``delta_order``: the declared order realised over the real range of changes (totals at
  log-even levels from the largest to the smallest, the named groups on top in order, each
  category keeping its own per-layer spread), then one adjacent link of the order, drawn at
  random, tied as in ``delta_rank``: the boundary of the intersection-union null with every
  other pair in order; planted: the order realised.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from ...simulate import (Arrays, Design, NotPlantable, lead_first, one, prediction_value,
                         put_values, reference_number)

# ----------------------------------------------------------------------------- ratio_of_changes


class _Side:
    """One side (pre or post) of a ``ratio_of_changes`` selection: its per-unit changes as a
    [model, unit] matrix (``|log(last / first)|`` when the first is selected, else the last
    itself) and the way back to its arrays."""

    def __init__(self, arrays: Arrays, side: str) -> None:
        self.roles = {when: f"{side}_{when}" for when in ("first", "last") if f"{side}_{when}" in arrays}
        if "last" not in self.roles:
            raise NotPlantable(f"the selection has no {side}_last")
        self.arrays = {w: arrays[r] for w, r in self.roles.items()}
        self.last, values = lead_first(self.arrays["last"], ("model",))
        if "layer" not in self.last.dims:
            raise NotPlantable(f"selection[{side}_last] has no layer dimension (the clusters)")
        n_models = self.last.sizes["model"] if "model" in self.last.dims else 1
        self.shape = (n_models, values.size // n_models)
        self.last_values = values.reshape(self.shape)
        units = self.last.isel(model=0, drop=True) if "model" in self.last.dims else self.last
        self.layer = units["layer"].broadcast_like(units).values.reshape(-1)
        self.first_values = None
        if "first" in self.arrays:
            first, fv = lead_first(self.arrays["first"], ("model",))
            if first.shape != self.last.shape:
                raise NotPlantable(f"{side}_first and {side}_last have different shapes")
            self.first_values = fv.reshape(self.shape)

    def change(self) -> np.ndarray:
        if self.first_values is None:
            return self.last_values.copy()
        with np.errstate(divide="ignore", invalid="ignore"):
            return np.abs(np.log(self.last_values / self.first_values))

    def with_change(self, change: np.ndarray) -> Arrays:
        """The side's roles with these changes (the first kept; the last moved from it in the
        direction it moved in the data)."""
        if self.first_values is None:
            new = change
        else:
            with np.errstate(divide="ignore", invalid="ignore"):
                sign = np.where(self.last_values < self.first_values, -1.0, 1.0)
            new = self.first_values * np.exp(sign * change)
        return {self.roles["last"]: put_values(self.arrays["last"], self.last, new)}


def exchange_at_ratio(arrays: Arrays, ratio: float, rng: np.random.Generator) -> Arrays:
    """The changes of ``arrays`` with a ratio of mean changes at ``ratio`` and the real spread.

    The post-training changes are scaled so that the pretraining total is ``ratio`` times
    theirs (the pretraining changes keep their real size); then in each (run, layer) cluster,
    with probability 1/2, the pretraining changes and ``ratio`` times the scaled
    post-training changes of its units trade places (unit by unit). Fieller's total
    ``sum(pre - ratio * post)`` is then a sum of cluster terms whose signs are flipped at
    random: symmetric about 0, the ratio at ``ratio``. Each side keeps the real per-layer
    pattern of one of the two changes, and every change stays non-negative.

    >>> import xarray as xr
    >>> pre = xr.DataArray([[4.0, 8.0]], dims=("model", "layer"), coords={"layer": [0, 1]})
    >>> post = xr.DataArray([[1.0, 3.0]], dims=("model", "layer"), coords={"layer": [0, 1]})
    >>> out = exchange_at_ratio({"pre_last": pre, "post_last": post}, 2.0, np.random.default_rng(0))
    >>> sorted([*out["pre_last"].values.ravel().tolist(), *(2 * out["post_last"]).values.ravel().tolist()])
    [3.0, 4.0, 8.0, 9.0]
    """
    if not (math.isfinite(ratio) and ratio > 0):
        raise NotPlantable(f"a ratio of changes of {ratio} cannot be simulated (needs a positive, "
                           f"finite ratio)")
    pre, post = _Side(arrays, "pre"), _Side(arrays, "post")
    a, b = pre.change(), post.change()
    if a.shape != b.shape:
        raise NotPlantable(f"pre and post selections differ in shape ({a.shape} vs {b.shape})")
    ok = np.isfinite(a) & np.isfinite(b)
    sa, sb = float(a[ok].sum()), float(b[ok].sum())
    if not (sa > 0 and sb > 0):
        raise NotPlantable("every pretraining or every post-training change is 0: no ratio to move")
    b = b * (sa / sb)  # ratio x the post-training changes rescaled to 1 / ratio of the pretraining total
    layers, index = np.unique(pre.layer, return_inverse=True)
    swap = (rng.random((a.shape[0], layers.size)) < 0.5)[:, index.reshape(-1)]
    return {**arrays, **pre.with_change(np.where(swap, b, a)),
            **post.with_change(np.where(swap, a, b) / ratio)}


def _ratio_edge(spec: Any, rng: np.random.Generator) -> float:
    """The edge of the prediction's band the null sits at (one of two at random)."""
    from . import ratio_band

    edges = [e for e in ratio_band(spec.prediction) if math.isfinite(e)]
    return float(edges[0] if len(edges) == 1 else edges[int(rng.integers(len(edges)))])


def _null_ratio(arrays: Arrays, spec: Any, rng: np.random.Generator) -> Arrays:
    return exchange_at_ratio(arrays, _ratio_edge(spec, rng), rng)


def _plant_ratio(arrays: Arrays, spec: Any, rng: np.random.Generator) -> tuple[Arrays, float]:
    ratio = reference_number(spec, ("ratio",), "ratio of changes")
    return exchange_at_ratio(arrays, ratio, rng), ratio


# ----------------------------------------------------------------------------- delta maps


class DeltaMap:
    """One model's parameter-delta map as the rank kinds read it (``totals``, ``layers``,
    ``norms``): the categories with a finite total, each per-layer category's shares
    ``s_l = L (r_l w_l)^2 / sum_l w_l^2`` (whose layer mean is its squared total, the
    quantity the kinds' pairwise tests compare over layers), and the way back to arrays that
    pool exactly to their totals.
    """

    def __init__(self, arrays: Arrays) -> None:
        self.arrays = arrays
        got = {}
        for role in ("totals", "layers", "norms"):
            if role not in arrays:
                raise NotPlantable(f"the selection has no {role!r}")
            da = arrays[role]
            if da.sizes.get("model", 1) != 1 or "category" not in da.dims:
                raise NotPlantable(f"selection[{role!r}] is not one model's delta map by category")
            arranged, values = lead_first(da, ("model", "category", "layer"))
            got[role] = (arranged, values.reshape(arranged.sizes["category"], -1))
        self._got = got
        tot = got["totals"][1][:, 0]
        self.keep = np.flatnonzero(np.isfinite(tot))
        self.categories = [str(c) for c in got["totals"][0]["category"].values[self.keep]]
        self.tot = tot[self.keep].copy()
        r, w = got["layers"][1][self.keep], got["norms"][1][self.keep]
        self.present = np.isfinite(r).any(axis=0)
        self.r, self.w = r[:, self.present].copy(), w[:, self.present].copy()
        self.layered = np.isfinite(self.r).all(axis=1) & np.isfinite(self.w).all(axis=1)
        if self.present.sum() < 2 or not self.layered.any():
            raise NotPlantable("the delta map has fewer than 2 layers or no per-layer category")

    def index(self, category: str) -> int:
        if category not in self.categories:
            raise NotPlantable(f"category {category!r} is not in the delta map "
                               f"({', '.join(self.categories)})")
        return self.categories.index(category)

    def shares(self, k: int) -> np.ndarray:
        w2 = self.w[k] ** 2
        return self.w.shape[1] * (self.r[k] * self.w[k]) ** 2 / w2.sum()

    def set_shares(self, k: int, s: np.ndarray) -> None:
        """Category ``k``'s per-layer relative changes from its shares (its norms kept)."""
        w2 = self.w[k] ** 2
        self.r[k] = np.sqrt(np.maximum(s, 0.0) * w2.sum() / self.w.shape[1]) / self.w[k]
        self.tot[k] = math.sqrt(float(np.mean(np.maximum(s, 0.0))))

    def set_total(self, k: int, total: float) -> None:
        """Category ``k`` scaled to ``total`` (its per-layer pattern kept)."""
        if self.layered[k]:
            if not self.tot[k] > 0:
                raise NotPlantable(f"category {self.categories[k]!r} has no change to scale")
            self.r[k] *= total / self.tot[k]
        self.tot[k] = total

    def tie(self, fixed: int, moved: int, rng: np.random.Generator) -> None:
        """Category ``moved`` scaled to ``fixed``'s total, then the two exchangeable layer by
        layer: their shares swapped per layer with probability 1/2 (both per-layer), or the
        per-layer one's shares reflected about the per-model one's constant share per layer
        with probability 1/2. The pairwise difference over layers is then symmetric about 0:
        the two categories are tied."""
        self.set_total(moved, float(self.tot[fixed]))
        if self.layered[fixed] and self.layered[moved]:
            si, sj = self.shares(fixed), self.shares(moved)
            flip = rng.random(si.size) < 0.5
            self.set_shares(fixed, np.where(flip, sj, si))
            self.set_shares(moved, np.where(flip, si, sj))
        elif self.layered[fixed] or self.layered[moved]:
            k, c = (fixed, moved) if self.layered[fixed] else (moved, fixed)
            level = float(self.tot[c]) ** 2
            s = self.shares(k)
            new = level + rng.choice((-1.0, 1.0), size=s.size) * (s - level)
            if (new < 0).any():
                raise NotPlantable(f"the per-layer changes of {self.categories[k]!r} spread too widely "
                                   f"to be reflected about {self.categories[c]!r}'s")
            self.set_shares(k, new)

    def ordered(self, but: int | None = None) -> list[int]:
        """The categories (but ``but``), largest total first."""
        return sorted((k for k in range(len(self.categories)) if k != but), key=lambda k: -self.tot[k])

    def to_arrays(self) -> Arrays:
        out = dict(self.arrays)
        for role, values in (("totals", self.tot[:, None]), ("layers", self.r), ("norms", self.w)):
            arranged, full = self._got[role]
            full = full.copy()
            if role == "totals":
                full[self.keep] = values
            else:
                block = full[self.keep]
                block[:, self.present] = values
                full[self.keep] = block
            out[role] = put_values(self.arrays[role], arranged, full)
        return out


def _rank_threshold(delta: DeltaMap, target: int, spec: Any) -> int:
    """The category the target ties with at the boundary of the rule's null: the ``n``-th
    largest other for "above v" (n = floor(v - 1) + 1 shown larger needed), the ``n``-th
    smallest for "below v" (n = K - ceil(v - 1))."""
    v, d = float(spec.prediction.value), spec.prediction.direction
    k = len(delta.categories)
    others = delta.ordered(target)
    n = math.floor(v - 1) + 1 if d == "above" else k - math.ceil(v - 1)
    if not 1 <= n <= k - 1:
        raise NotPlantable(f"a rank {d} {v:g} of {k} categories has no boundary to simulate "
                           f"(it needs {n} of the {k - 1} other categories)")
    return others[n - 1] if d == "above" else others[::-1][n - 1]


def _null_rank(arrays: Arrays, spec: Any, rng: np.random.Generator) -> Arrays:
    delta = DeltaMap(arrays)
    target = delta.index(str(spec.resolved_params()["target"]))
    delta.tie(_rank_threshold(delta, target, spec), target, rng)
    return delta.to_arrays()


def _plant_rank(arrays: Arrays, spec: Any, rng: np.random.Generator) -> tuple[Arrays, float]:
    rank = reference_number(spec, ("rank",), "rank")
    delta = DeltaMap(arrays)
    k = len(delta.categories)
    of = spec.reference.get("of")
    if of is not None and of != k:
        raise NotPlantable(f"the reference rank is {rank:g} of {of} categories; these data rank {k}")
    if rank != int(rank) or not 1 <= rank <= k:
        raise NotPlantable(f"the reference rank {rank:g} is not a rank among {k} categories")
    target = delta.index(str(spec.resolved_params()["target"]))
    levels = np.log(delta.tot[delta.ordered(target)])
    if not np.isfinite(levels).all() or levels.size < 2:
        raise NotPlantable("the other categories' changes are not all positive")
    padded = np.concatenate([[2 * levels[0] - levels[1]], levels, [2 * levels[-1] - levels[-2]]])
    r = int(rank)
    delta.set_total(target, float(np.exp((padded[r - 1] + padded[r]) / 2)))
    return delta.to_arrays(), float(r)


def _order_groups(delta: DeltaMap, spec: Any) -> list[list[int]]:
    groups = spec.resolved_params()["order"]
    return [[delta.index(str(c)) for c in g] for g in groups]


def realise_order(delta: DeltaMap, groups: Sequence[Sequence[int]]) -> list[list[int]]:
    """Put the declared groups on top in order: the K totals set at log-even levels from the
    largest to the smallest total of the map, the named categories first (a group's members
    in their current order), the rest after them in theirs; each category scaled, so its own
    per-layer pattern is kept. Returns the groups in order, then the rest, by position."""
    named = [k for g in groups for k in g]
    rest = [k for k in delta.ordered() if k not in named]
    chain = [sorted(g, key=lambda k: -delta.tot[k]) for g in groups] + ([rest] if rest else [])
    if not (delta.tot > 0).all():
        raise NotPlantable("some category's change is 0: no level to order")
    levels = np.exp(np.linspace(np.log(delta.tot.max()), np.log(delta.tot.min()), len(delta.tot)))
    for position, k in enumerate(k for g in chain for k in g):
        delta.set_total(k, float(levels[position]))
    return chain


def _null_order(arrays: Arrays, spec: Any, rng: np.random.Generator) -> Arrays:
    delta = DeltaMap(arrays)
    chain = realise_order(delta, _order_groups(delta, spec))
    links = [(upper[-1], lower[0]) for upper, lower in zip(chain, chain[1:])]
    if not links:
        raise NotPlantable("the declared order has no pair to tie")
    fixed, moved = links[int(rng.integers(len(links)))]
    delta.tie(fixed, moved, rng)
    return delta.to_arrays()


def _plant_order(arrays: Arrays, spec: Any, rng: np.random.Generator) -> tuple[Arrays, float]:
    delta = DeltaMap(arrays)
    realise_order(delta, _order_groups(delta, spec))
    return delta.to_arrays(), 1.0


def _half(row: Mapping[str, float], spec: Any) -> float:
    """0.5: the bootstrap share of an order with one tied pair (and every other pair sure)."""
    return 0.5


DESIGNS = {
    "ratio_of_changes": Design(
        null=_null_ratio, plant=_plant_ratio, null_value=one,
        what="null: post-training changes scaled to put the ratio at the edge the prediction "
             "excludes (for a band, its lower or upper edge at random), then pretraining and "
             "edge x post-training changes traded by whole (run, layer) with probability 1/2; "
             "planted: the same at the reference ratio"),
    "delta_rank": Design(
        null=_null_rank, plant=_plant_rank, null_value=prediction_value,
        what="null: the target category scaled to the category at the threshold rank and the two "
             "swapped layer by layer with probability 1/2 (tied: the rank at the boundary), the "
             "others as they are; planted: the target scaled between the categories that give it "
             "the reference rank"),
    "delta_order": Design(
        null=_null_order, plant=_plant_order, null_value=_half,
        what="the declared order realised over the real range of changes (log-even levels, each "
             "category's per-layer pattern kept); null: one adjacent pair of the order, drawn at "
             "random, tied (swapped layer by layer with probability 1/2); planted: the order"),
}
