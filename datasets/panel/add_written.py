"""Add METRICS.md §9's variables to the committed panel cube from a re-extraction, keeping
every committed value.

    python datasets/panel/add_written.py OLD.nc NEW.nc -o OUT.nc

``NEW.nc`` is a re-extraction with the card's command (``dataset.toml``'s ``build``) by a
lie_stats that computes §9 (``written_norm``, ``head_label_written``). The script checks,
before writing anything, that NEW holds the same checkpoints, coordinates and variables as
OLD plus the §9 ones; that every weight variable (``kind`` weight or trajectory in
``lie_stats.schema``) and ``head_label`` is identical, value for value; and prints how far
NEW's other activation variables moved (float32 rounding of another transformers or thread
setting). It then writes OLD's variables unchanged, NEW's two §9 variables, and each
checkpoint's OLD provenance with NEW's record of the §9 computation under ``"written"``
(its ``activations`` attributes, threads, timing, ``metrics_version``); the cube's
``metrics_version`` becomes 2. Exit status 1, and nothing written, when a check fails.
"""

from __future__ import annotations

import argparse
import json
import pathlib
import sys

import numpy as np

from lie_stats import schema
from lie_stats._io import cf_global_attrs
from lie_stats.cube import open_cube, provenance_of, write_cube

ADDED = ("written_norm", "head_label_written")
EXACT_KINDS = ("weight", "trajectory")


def _differ(a: np.ndarray, b: np.ndarray) -> tuple[int, float, float]:
    x, y = a.astype(np.float64), b.astype(np.float64)
    both = ~np.isnan(x) & ~np.isnan(y)
    d = np.abs(x - y)[both]
    n = int((d > 0).sum() + (np.isnan(x) != np.isnan(y)).sum())
    rel = d / np.maximum(np.abs(x[both]), np.finfo(np.float64).tiny)
    return n, float(d.max()) if d.size else 0.0, float(rel.max()) if rel.size else 0.0


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("old", type=pathlib.Path)
    ap.add_argument("new", type=pathlib.Path)
    ap.add_argument("-o", "--out", type=pathlib.Path, required=True)
    args = ap.parse_args(argv)
    old, new = open_cube(args.old).load(), open_cube(args.new).load()
    problems = []
    if set(new.data_vars) != set(old.data_vars) | set(ADDED):
        problems.append(f"NEW's variables are not OLD's plus {ADDED}: "
                        f"{sorted(set(new.data_vars) ^ (set(old.data_vars) | set(ADDED)))}")
    for c in old.coords:
        if c not in new.coords or not np.array_equal(old[c].values, new[c].values):
            problems.append(f"coordinate {c} differs")
    for name in sorted(set(old.data_vars) & set(new.data_vars)):
        n, mabs, mrel = _differ(old[name].values, new[name].values)
        exact = schema.VARIABLES[name].kind in EXACT_KINDS or name == "head_label"
        if n:
            print(f"{name:22s} {n:7d} of {old[name].size:8d} differ, max abs {mabs:.3e}, max rel {mrel:.3e}"
                  + ("  MUST BE IDENTICAL" if exact else ""))
        if exact and n:
            problems.append(f"{name}: {n} values differ")
    prov_old, prov_new = provenance_of(old), provenance_of(new)
    key = [(p["model"], p["step"]) for p in prov_old]
    if key != [(p["model"], p["step"]) for p in prov_new]:
        problems.append("the checkpoints' provenance records are not in the same order")
    if problems:
        for p in problems:
            print(f"check failed: {p}")
        return 1
    out = old.copy()
    for name in ADDED:
        out[name] = new[name]
    prov = []
    for po, pn in zip(prov_old, prov_new):
        rec = dict(po)
        rec["written"] = {k: pn[k] for k in ("activations", "threads", "timing", "metrics_version", "torch_version")
                          if k in pn}
        rec["written"]["variables"] = list(ADDED)
        prov.append(rec)
    failed = json.loads(old.attrs.get(schema.ATTR_FAILED, "[]"))
    attrs = cf_global_attrs(prov, failed, metrics_version=schema.METRICS_VERSION)
    for k, v in old.attrs.items():
        if k not in attrs:
            attrs[k] = v  # store_dtype
    out.attrs = attrs
    write_cube(out, args.out)
    print(f"wrote {args.out}: OLD's {len(old.data_vars)} variables unchanged, plus {', '.join(ADDED)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
