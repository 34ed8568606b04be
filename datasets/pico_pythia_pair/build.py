"""Build ``pair.nc``: the post-training pair with its pretraining parents, in one cube.

The cube holds, for the two 96-head runs of ``pico_pythia`` (``p96_s0``, ``p96_s1``, steps
0 .. 512) and their fine-tunes (``p96_s0_ft``, ``p96_s1_ft``, steps 0 .. 128, step 0 = the
parent's step 512):

* the parameter-delta trajectory (METRICS.md §6.4; ``lie_stats.extraction.delta.delta_cube``): every
  checkpoint against the run's first (variables ``param_delta``, ``param_delta_layer``,
  ``param_base_norm_layer``; dimension ``category``), computed from the checkpoints in
  ``datasets/pico_pythia/build/`` (local, not in git);
* the layer summaries of METRICS.md §4 of the same runs, copied unchanged from the committed
  cubes ``datasets/pico_pythia/pico_pythia.nc`` and ``datasets/pico_pythia_ft/pico_pythia_ft.nc``
  so that one cube holds pretraining and post-training (CLAIMS.md A7).

Why a dataset of its own: a dataset's cubes are merged checkpoint by checkpoint
(``lie_stats.cube.merge_shards``) and the same (model, step) may not come from two files, so
the ft runs' deltas cannot sit in a second file of ``pico_pythia_ft``; and A7 needs the
parents and the fine-tunes in one cube.

Usage: ``python datasets/pico_pythia_pair/build.py`` (about 2-4 minutes on one core). Another
suite's pair (``datasets/pico_converged``) is built with the same code from its own checkpoints
and its own metrics cube: ``--build DIR --metrics CUBE --runs a,b,... -o OUT``.
"""

from __future__ import annotations

import argparse
import json
import pathlib
import sys

import numpy as np
import xarray as xr

ROOT = pathlib.Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from lie_stats import schema  # noqa: E402
from lie_stats.cube import merge_shards, open_cube, provenance_of, write_cube  # noqa: E402
from lie_stats.extraction.delta import delta_cube  # noqa: E402

BUILD = ROOT / "datasets" / "pico_pythia" / "build"
RUNS = ("p96_s0", "p96_s1", "p96_s0_ft", "p96_s1_ft")
SOURCES = {"p96_s0": ROOT / "datasets/pico_pythia/pico_pythia.nc",
           "p96_s1": ROOT / "datasets/pico_pythia/pico_pythia.nc",
           "p96_s0_ft": ROOT / "datasets/pico_pythia_ft/pico_pythia_ft.nc",
           "p96_s1_ft": ROOT / "datasets/pico_pythia_ft/pico_pythia_ft.nc"}
#: The layer summaries copied (METRICS.md §4).
SUMMARIES = ("commutator_var", "commutator_raw_var", "abelian_fraction", "abelian_fraction_tau",
             "killing_eig_spread", "killing_cv", "head_heterogeneity", "commutator_z_mean")
OUT = pathlib.Path(__file__).resolve().parent / "pair.nc"


def summaries(model: str, source: pathlib.Path) -> xr.Dataset:
    """The model's layer summaries from the cube ``source``, as a cube of its own."""
    src = open_cube(source)
    if model not in src[schema.MODEL].values.tolist():
        raise SystemExit(f"{source}: no model {model!r} (it holds {src[schema.MODEL].values.tolist()})")
    ds = src[list(SUMMARIES)].sel({schema.MODEL: [model]})
    keep = np.isfinite(ds["killing_cv"].values).reshape(1, ds.sizes[schema.STEP], -1).any(axis=-1)[0]
    ds = ds.isel({schema.STEP: np.flatnonzero(keep)})
    prov = [dict(p, copied_from=_shown(source))
            for p in provenance_of(src) if p.get("model") == model]
    ds.attrs = dict(src.attrs, **{schema.ATTR_PROVENANCE: json.dumps(prov, sort_keys=True)})
    return ds


def _shown(path: pathlib.Path) -> str:
    """``path`` relative to the repository when it lies inside it (provenance records)."""
    path = pathlib.Path(path).resolve()
    return str(path.relative_to(ROOT)) if path.is_relative_to(ROOT) else str(path)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("-o", "--out", default=str(OUT))
    ap.add_argument("--build", default=str(BUILD), help="folder of the runs' checkpoints (default: %(default)s)")
    ap.add_argument("--metrics", default=None,
                    help="one cube holding every run's layer summaries (default: the pico_pythia cubes)")
    ap.add_argument("--runs", default=",".join(RUNS), help="comma-separated runs (default: %(default)s)")
    args = ap.parse_args(argv)
    build = pathlib.Path(args.build)
    runs = [r.strip() for r in args.runs.split(",") if r.strip()]
    sources = ({r: pathlib.Path(args.metrics) for r in runs} if args.metrics else SOURCES)
    unknown = [r for r in runs if r not in sources]
    if unknown:
        raise SystemExit(f"--runs: no metrics cube known for {unknown[0]!r}; give --metrics CUBE")
    parts = []
    for model in runs:
        print(f"{model}: parameter deltas from {build / model}", flush=True)
        deltas = delta_cube(build / model, model=model)
        summ = summaries(model, sources[model])
        if deltas[schema.STEP].values.tolist() != summ[schema.STEP].values.tolist():
            raise SystemExit(f"{model}: the checkpoints in {build / model} "
                             f"({deltas[schema.STEP].values.tolist()}) are not the steps of "
                             f"{sources[model]} ({summ[schema.STEP].values.tolist()}).")
        both = xr.merge([summ.drop_attrs(), deltas.drop_attrs()], join="outer", compat="no_conflicts",
                        combine_attrs="drop")
        for c in schema.MODEL_COORDS:  # the shape coordinates agree; keep the metric cube's
            both = both.assign_coords({c: summ[c]})
        prov = {(p["model"], p["step"]): p for p in provenance_of(summ)}
        for p in provenance_of(deltas):
            prov[(p["model"], p["step"])] = {"metrics": prov.get((p["model"], p["step"])), "param_delta": p,
                                             "model": p["model"], "step": p["step"]}
        both.attrs = dict(deltas.attrs, **{schema.ATTR_PROVENANCE: json.dumps(
            [prov[k] for k in sorted(prov, key=lambda k: k[1])], sort_keys=True)})
        parts.append(both)
    cube = merge_shards(parts)
    write_cube(cube, args.out)
    print(f"wrote {args.out}: models {cube[schema.MODEL].values.tolist()}, "
          f"{cube.sizes[schema.STEP]} steps", flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
