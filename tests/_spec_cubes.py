"""Synthetic datasets with planted effects, for the spec / plugin / report tests.

``make_datasets(root)`` writes three dataset cards under ``root``:

``synth``  one run ``m0`` (8 layers x 12 heads = 96 heads, 6 checkpoints), with
    - ``change_from_init`` (last) = 1.5 + layer level - 3 * ``head_contribution`` (first) +
      noise: a strong negative correlation (rho about -0.6), so a replication of
      rho = -0.274 (n = 96) holds;
    - ``value_norm`` (last) rising with the change: a positive correlation;
    - ``ov_norm`` (last) independent of everything: a null;
    - ``killing_self`` family Q tracking the contribution, family K noise (spec curve);
    - ``abelian_fraction`` rising over steps (trend), ``commutator_var`` growing about 5x
      (enrichment), ``head_heterogeneity`` 3x larger in the boundary layers;
    - ``commutator_mean`` whose depth gradient changes sign at 40 % of training.
``pair``   models ``base`` and ``tuned`` (one checkpoint each): ``killing_self`` equal within
    1e-5 (equivalent at a 0.1 % bound), ``commutator_var`` 5 % larger (not equivalent).
``panel``  12 models (d_head 16-128 x n_heads 2-8, 4 layers): ``abelian_fraction`` falls
    with log2(d_head) and does not depend on the head count.
``absent`` a card whose cube is not on disk (state "buildable"); ``pythia`` likewise, with
    ``needs = "hub access"`` (state "needs data").
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from lie_stats import cube

N_LAYERS, N_HEADS = 8, 12
STEPS = (0, 10, 100, 300, 1000, 3000)
FAMILIES = ("Q", "K")
PROJECTIONS = ("none", "fixed:2")
ABSENT_BUILD = "python -m build_absent --out absent.nc"


def _shape() -> dict:
    return dict(n_layers=N_LAYERS, n_heads=N_HEADS, n_kv_heads=N_HEADS, d_head=4,
                d_model=4 * N_HEADS, architecture="gpt_neox", rotary_fraction=0.25,
                attention_extras="rotary", init_step=0)


def synth_cube(seed: int = 0):
    rng = np.random.default_rng(seed)
    L, H = N_LAYERS, N_HEADS
    contrib0 = rng.dirichlet(np.ones(H), size=L)  # [L, H], rows sum to 1
    layer_offset = np.linspace(-0.3, 0.3, L)[:, None]  # layers differ in level (nesting)
    change_last = np.abs(1.5 + layer_offset - 3.0 * contrib0 + 0.25 * rng.normal(size=(L, H))) + 0.05
    value_norm = 1.0 + 2.0 * change_last + 0.05 * rng.normal(size=(L, H))
    depth = np.arange(L) / (L - 1)
    shards = []
    last = STEPS[-1]
    for step in STEPS:
        t = step / last
        frac = np.sqrt(t)
        arrays = {}
        contrib = contrib0 + 0.002 * t * rng.normal(size=(L, H))
        arrays["head_contribution"] = contrib
        arrays["change_from_init"] = change_last * frac
        arrays["ov_norm"] = np.abs(rng.normal(1.0, 0.3, size=(L, H)))
        arrays["value_norm"] = value_norm if step == last else value_norm * (0.5 + 0.5 * t)
        ks = np.empty((len(FAMILIES), len(PROJECTIONS), L, H))
        ks[0] = 10.0 * contrib + 0.02 * rng.normal(size=(len(PROJECTIONS), L, H))
        ks[1] = rng.normal(size=(len(PROJECTIONS), L, H))
        arrays["killing_self"] = ks
        layer_shape = (len(FAMILIES), len(PROJECTIONS), L)
        arrays["abelian_fraction"] = 0.2 * frac + 0.01 * rng.normal(size=layer_shape)
        arrays["commutator_var"] = (1.0 + 4.0 * t) * np.exp(0.05 * rng.normal(size=layer_shape))
        het = np.where((np.arange(L) == 0) | (np.arange(L) == L - 1), 3.0, 1.0)
        arrays["head_heterogeneity"] = het * np.exp(0.1 * rng.normal(size=layer_shape))
        # depth gradient of commutator_mean: slope (t - 0.4) per unit depth, sign change at 0.4
        slope = t - 0.4
        cm = 1.0 + slope * depth[:, None] + 0.01 * rng.normal(size=(L, H))
        arrays["commutator_mean"] = np.broadcast_to(cm, (len(FAMILIES), len(PROJECTIONS), L, H)).copy()
        if step == last:  # anchors (code 1): high initial contribution; workers (2): the rest
            arrays["head_label"] = np.where(contrib0 > np.median(contrib0, axis=1, keepdims=True), 1.0, 2.0)
        shards.append(cube.checkpoint_shard(
            arrays, model="m0", step=step, shape=_shape(), families=FAMILIES,
            projections=PROJECTIONS, provenance={"model": "m0", "step": step, "seed": seed}))
    return cube.merge_shards(shards)


def pair_cube(seed: int = 1):
    rng = np.random.default_rng(seed)
    L, H = N_LAYERS, N_HEADS
    ks = np.abs(rng.normal(1.0, 0.3, size=(len(FAMILIES), len(PROJECTIONS), L, H))) + 0.1
    cv = np.abs(rng.normal(1.0, 0.3, size=(len(FAMILIES), len(PROJECTIONS), L))) + 0.1
    shards = []
    for model, k, c in (
        ("base", ks, cv),
        ("tuned", ks * np.exp(1e-5 * rng.normal(size=ks.shape)), cv * 1.05 * np.exp(1e-3 * rng.normal(size=cv.shape))),
    ):
        shards.append(cube.checkpoint_shard(
            {"killing_self": k, "commutator_var": c}, model=model, step=1000, shape=_shape(),
            families=FAMILIES, projections=PROJECTIONS, provenance={"model": model, "step": 1000}))
    return cube.merge_shards(shards)


def panel_cube(seed: int = 2):
    """Models of different head width and count; abelian_fraction falls with log2(d_head)."""
    rng = np.random.default_rng(seed)
    shards = []
    for d_head in (16, 32, 64, 128):
        for n_heads in (2, 4, 8):
            shape = dict(_shape(), n_heads=n_heads, n_kv_heads=n_heads, d_head=d_head,
                         d_model=d_head * n_heads, n_layers=4)
            af = 0.5 - 0.08 * np.log2(d_head) + 0.005 * rng.normal(size=(len(FAMILIES), len(PROJECTIONS), 4))
            name = f"w{d_head}h{n_heads}"
            shards.append(cube.checkpoint_shard(
                {"abelian_fraction": af}, model=name, step=1000, shape=shape, families=FAMILIES,
                projections=PROJECTIONS, provenance={"model": name, "step": 1000}))
    return cube.merge_shards(shards)


def _card(root: Path, name: str, cubes: list[str], build: str, needs: str = "") -> Path:
    folder = root / name
    folder.mkdir(parents=True, exist_ok=True)
    cubes_toml = ", ".join(f'"{c}"' for c in cubes)
    (folder / "dataset.toml").write_text(
        f'name = "{name}"\ntitle = "synthetic {name}"\ncubes = [{cubes_toml}]\n'
        f'build = "{build}"\nneeds = "{needs}"\n', encoding="utf-8")
    (folder / "README.md").write_text(f"# {name}\n\nSynthetic test data.\n", encoding="utf-8")
    return folder


def make_datasets(root: Path) -> Path:
    """Write the cards and cubes of ``synth``, ``pair`` and ``absent`` under ``root``."""
    root = Path(root)
    cube.write_cube(synth_cube(), _card(root, "synth", ["synth.nc"], "python -m build_synth") / "synth.nc")
    cube.write_cube(pair_cube(), _card(root, "pair", ["pair.nc"], "python -m build_pair") / "pair.nc")
    cube.write_cube(panel_cube(), _card(root, "panel", ["panel.nc"], "python -m build_panel") / "panel.nc")
    _card(root, "absent", ["absent.nc"], ABSENT_BUILD)
    _card(root, "pythia", ["pythia.nc"], "lie-stats extract hf:EleutherAI/pythia-410m -o pythia.nc",
          needs="hub access")
    return root
