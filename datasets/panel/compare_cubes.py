"""Does a rebuilt cube reproduce a committed one? Every common variable, value by value.

    python datasets/panel/compare_cubes.py OLD.nc NEW.nc [--model NAME]
    python datasets/panel/compare_cubes.py OLD.nc.shards NEW.nc.shards      # float64 shard stores

For each variable both cubes hold (the weight metrics, when NEW adds the activation metrics):
the number of values compared, how many differ (a NaN on one side only counts as a difference),
the largest absolute and relative difference. Shard stores are matched checkpoint by checkpoint
on (model, step), so two stores written from different paths compare. ``--model`` restricts a
cube comparison to one model and its own layers and heads (e.g. one model of a multi-model
cube against a cube of that model alone). A variable of OLD that NEW lacks counts as a
difference (a rebuild that adds variables, as METRICS.md §9's, must keep every old one).
Exit status 0 when nothing differs, 1 otherwise.
The numbers in the panel, pico_pythia and pico_pythia_ft cards' reproduction notes come from
this script.
"""

from __future__ import annotations

import argparse
import pathlib
import sys

import numpy as np
import xarray as xr

from lie_stats.cube import open_cube


def _one_model(ds: xr.Dataset, model: str) -> xr.Dataset:
    ds = ds.sel(model=[model])
    L, H = int(ds["n_layers"].values[0]), int(ds["n_heads"].values[0])
    cut = {"layer": slice(0, L), "head": slice(0, H)}
    if "head_j" in ds.dims:
        cut["head_j"] = slice(0, H)
    return ds.isel(cut)


def compare_datasets(old: xr.Dataset, new: xr.Dataset) -> dict[str, dict[str, float]]:
    """Per common variable: ``n``, ``differing``, ``max_abs``, ``max_rel`` (as float64).

    Examples
    --------
    >>> a = xr.Dataset({"x": ("i", np.array([1.0, 2.0, np.nan]))})
    >>> b = xr.Dataset({"x": ("i", np.array([1.0, 2.5, np.nan])), "y": ("i", np.zeros(3))})
    >>> compare_datasets(a, b)["x"]
    {'n': 3, 'differing': 1, 'max_abs': 0.5, 'max_rel': 0.25}
    """
    out: dict[str, dict[str, float]] = {}
    for name in sorted(set(old.data_vars) & set(new.data_vars)):
        x = old[name].values.astype(np.float64)
        y = new[name].values.astype(np.float64)
        if x.shape != y.shape:
            raise SystemExit(f"{name}: shape {x.shape} in the old cube, {y.shape} in the new one")
        both = ~np.isnan(x) & ~np.isnan(y)
        d = np.abs(x - y)[both]
        rel = d / np.maximum(np.abs(x[both]), np.finfo(np.float64).tiny)
        differing = int((d > 0).sum() + (np.isnan(x) != np.isnan(y)).sum())
        out[name] = {"n": int(x.size), "differing": differing,
                     "max_abs": float(d.max()) if d.size else 0.0,
                     "max_rel": float(rel.max()) if rel.size else 0.0}
    return out


def _merge(total: dict, part: dict) -> None:
    for name, r in part.items():
        t = total.setdefault(name, {"n": 0, "differing": 0, "max_abs": 0.0, "max_rel": 0.0})
        t["n"] += r["n"]
        t["differing"] += r["differing"]
        t["max_abs"] = max(t["max_abs"], r["max_abs"])
        t["max_rel"] = max(t["max_rel"], r["max_rel"])


def compare_stores(old: pathlib.Path, new: pathlib.Path) -> tuple[dict, list]:
    """Shard stores, matched on (model, step); returns the totals and the unmatched checkpoints."""
    def index(store: pathlib.Path) -> dict:
        out = {}
        for p in sorted(store.glob("*.nc")):
            d = open_cube(p)
            out[(str(d["model"].values[0]), int(d["step"].values[0]))] = p
        return out

    a, b = index(old), index(new)
    total: dict = {}
    for key in sorted(set(a) & set(b)):
        _merge(total, compare_datasets(open_cube(a[key]), open_cube(b[key])))
    return total, sorted(set(a) ^ set(b))


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("old", type=pathlib.Path)
    ap.add_argument("new", type=pathlib.Path)
    ap.add_argument("--model", default=None, help="compare this model only (cubes, not stores)")
    args = ap.parse_args(argv)
    lost: list[str] = []
    if args.old.is_dir():
        result, unmatched = compare_stores(args.old, args.new)
        if unmatched:
            print(f"{len(unmatched)} checkpoints in one store only, e.g. {unmatched[:3]}")
    else:
        old, new = open_cube(args.old), open_cube(args.new)
        print(f"variables only in the new cube: {sorted(set(new.data_vars) - set(old.data_vars))}")
        lost = sorted(set(old.data_vars) - set(new.data_vars))
        print(f"variables only in the old cube: {lost}")
        if args.model:
            old, new = _one_model(old, args.model), _one_model(new, args.model)
        for c in ("model", "step", "layer", "head", "family", "projection"):
            if c in old.coords and not np.array_equal(old[c].values, new[c].values):
                raise SystemExit(f"coordinate {c} differs: {old[c].values} vs {new[c].values}")
        result = compare_datasets(old, new)
    n = sum(r["n"] for r in result.values())
    bad = sum(r["differing"] for r in result.values())
    for name, r in result.items():
        if r["differing"]:
            print(f"{name:26s} {r['differing']:8d} of {r['n']:8d} differ, max abs {r['max_abs']:.3e}, "
                  f"max rel {r['max_rel']:.3e}")
    worst = max((r["max_rel"] for r in result.values()), default=0.0)
    print(f"{len(result)} variables, {n} values compared, {bad} differ (max rel {worst:.3e})")
    return 1 if bad or lost else 0


if __name__ == "__main__":
    sys.exit(main())
