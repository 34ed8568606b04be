"""Synthetic cubes for tests: every weight variable filled with seeded noise."""

from __future__ import annotations

import numpy as np

from lie_stats import cube, schema


def model_shape(n_layers: int, n_heads: int, d_head: int = 4) -> dict:
    return dict(
        n_layers=n_layers, n_heads=n_heads, n_kv_heads=n_heads, d_head=d_head,
        d_model=d_head * n_heads, architecture="gpt_neox", rotary_fraction=0.25,
        attention_extras="rotary", init_step=0,
    )


def random_shard(model: str, step: int, n_layers: int, n_heads: int, *,
                 families=("Q", "OV"), projections=("none",), seed: int = 0,
                 kinds=("weight", "trajectory")):
    rng = np.random.default_rng([seed, step, n_layers, n_heads])
    sizes = {schema.FAMILY: len(families), schema.PROJECTION: len(projections),
             schema.MATRIX: len(schema.MATRICES), schema.LAYER: n_layers,
             schema.HEAD: n_heads, schema.HEAD_J: n_heads}
    arrays = {name: rng.normal(size=tuple(sizes[d] for d in info.dims))
              for name, info in schema.VARIABLES.items() if info.kind in kinds}
    return cube.checkpoint_shard(
        arrays, model=model, step=step, shape=model_shape(n_layers, n_heads),
        families=families, projections=projections,
        provenance={"model": model, "step": step, "seed": seed},
    )
