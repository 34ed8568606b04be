"""Planted data and spec builders shared by the spec, plugin, export and report tests.

Datasets on disk: ``make_datasets(root)`` writes five dataset cards under ``root``:

``synth``  one run ``m0`` (8 layers x 12 heads = 96 heads, 6 checkpoints), with
    - ``change_from_init`` (last) = 1.5 + layer level - 3 * ``head_contribution`` (first) +
      noise: a strong negative correlation (rho about -0.6), so a replication of
      rho = -0.274 (n = 96) holds;
    - ``value_norm`` (last) rising with the change: a positive correlation;
    - ``ov_norm`` (last) independent of everything: a null;
    - ``killing_self`` family Q tracking the contribution, family K noise (spec curve);
    - ``abelian_fraction`` rising over steps (trend), ``commutator_var`` growing about 5x
      (enrichment), ``head_heterogeneity`` 3x larger in the boundary layers;
    - ``commutator_mean`` whose depth gradient changes sign at 40 % of training;
    - ``head_label``: anchors (code 1) are the heads of high initial contribution.
``pair``   models ``base`` and ``tuned`` (one checkpoint each): ``killing_self`` equal within
    1e-5 (equivalent at a 0.1 % bound), ``commutator_var`` 5 % larger (not equivalent).
``panel``  12 models (d_head 16-128 x n_heads 2-8, 4 layers): ``abelian_fraction`` falls
    with log2(d_head) and does not depend on the head count.
``absent`` a card whose cube is not on disk (state "buildable"); ``pythia`` likewise, with
    ``needs = "hub access"`` (state "needs data").

The same cubes in memory: :func:`synth_cube`, :func:`pair_cube`, :func:`panel_cube`; and
:func:`compression_cube`, two runs under three compressions (``none``, ``adaptive``,
``fixed:8``) for the equivalence, agreement, sink and compression-report tests.

Specs: :data:`FAST` and :data:`FAST_MORE_BOOT` (resample counts that keep a test quick and
still decide the planted effects), :func:`planted_fields` / :func:`planted_spec` (the
correlation spec on ``synth`` that most spec tests vary), :func:`evaluate_one`,
:func:`toy_spec`, :func:`tost_spec` and :func:`enrichment_target` (specs on
:func:`compression_cube`).

Where the other test helpers live: ``tests/_cubes.py`` (model shapes, random shards),
``tests/_checkpoints.py`` (tiny checkpoints), ``tests/stats/_sim.py`` (simulated rejection
rates), ``tests/architectures/_reproduce.py`` (attention reproduction); the fixtures are in
the ``conftest.py`` files.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from lie_stats import cube
from lie_stats.spec import HypothesisSpec, Prediction, Select, evaluate

from ._cubes import model_shape

#: Fewer permutations and bootstrap draws than the defaults: enough for the planted effects.
FAST = {"n_perm": 999, "n_boot": 200}
#: Half the permutations of :data:`FAST`, twice its bootstrap draws (interval-decided kinds).
FAST_MORE_BOOT = {"n_perm": 499, "n_boot": 400}
#: The original figures of the correlation that ``synth`` replicates.
B5_REFERENCE = {"rho": -0.274, "p": 0.007, "n": 96}

N_LAYERS, N_HEADS = 8, 12
STEPS = (0, 10, 100, 300, 1000, 3000)
FAMILIES = ("Q", "K")
PROJECTIONS = ("none", "fixed:2")
ABSENT_BUILD = "python -m build_absent --out absent.nc"


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
            arrays, model="m0", step=step, shape=model_shape(N_LAYERS, N_HEADS), families=FAMILIES,
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
            {"killing_self": k, "commutator_var": c}, model=model, step=1000, shape=model_shape(N_LAYERS, N_HEADS),
            families=FAMILIES, projections=PROJECTIONS, provenance={"model": model, "step": 1000}))
    return cube.merge_shards(shards)


def panel_cube(seed: int = 2):
    """Models of different head width and count; abelian_fraction falls with log2(d_head)."""
    rng = np.random.default_rng(seed)
    shards = []
    for d_head in (16, 32, 64, 128):
        for n_heads in (2, 4, 8):
            shape = model_shape(4, n_heads, d_head)
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


# ------------------------------------------------------------------------ specs on ``synth``


def planted_fields(**changes) -> dict:
    """The fields of the planted correlation spec on ``synth`` (initial contribution vs
    change, predicted negative), with ``changes`` applied. ``HypothesisSpec(**fields)`` in
    the test itself makes the test's file the declaring module."""
    base = dict(
        id="B5", claim="Initial head contribution predicts change", source="Anchors essay",
        datasets=("synth",), test="correlation",
        selection={"x": Select("head_contribution", step="first"), "y": Select("change_from_init")},
        params=dict(FAST), prediction=Prediction("negative"), gate="report",
    )
    base.update(changes)
    return base


def planted_spec(**changes) -> HypothesisSpec:
    """:func:`planted_fields` declared."""
    return HypothesisSpec(**planted_fields(**changes))


def evaluate_one(spec: HypothesisSpec, root: Path, dataset: str | None = None):
    """The one result of ``spec`` on its dataset (or on ``dataset``) under ``root``."""
    results = evaluate(spec, root, datasets=[dataset] if dataset else None)
    assert len(results) == 1
    return results[0]


# ------------------------------------------------------------------------ compressions

COMPRESSIONS = ("none", "adaptive", "fixed:8")
COMPRESSION_STEPS = (0, 10, 100, 1000)
COMPRESSION_LAYERS = COMPRESSION_HEADS = 6


def compression_cube(seed: int = 0):
    """Models m0, m1 (6 layers x 6 heads, 4 checkpoints), family Q, projections
    none / adaptive / fixed:8.

    - ``abelian_fraction``: equal under none and adaptive up to 0.003 noise; 0.3 higher under
      fixed:8 (a compression artifact);
    - ``abelian_fraction_tau``: 0 exact, 1 under fixed:8 at every step (METRICS §4.2's pattern);
    - ``commutator_var``: grows 5x over training under none and adaptive, flat under fixed:8;
    - ``killing_cv``: noise, no growth anywhere (every compression inconclusive);
    - ``commutator_z_mean``: m1 has no value under fixed:8 (units missing from one compression);
    - m0 heads are sinks (sink_argmax_fraction ~ 0.9, sink_value_ratio ~ 0.2); m1 heads are
      not (0.1, ratio ~ 2).
    """
    rng = np.random.default_rng(seed)
    L, H = COMPRESSION_LAYERS, COMPRESSION_HEADS
    families = ("Q",)
    shards = []
    base_af = rng.uniform(0.05, 0.3, size=(2, L))
    for mi, model in enumerate(("m0", "m1")):
        for step in COMPRESSION_STEPS:
            t = step / COMPRESSION_STEPS[-1]
            layer = (len(families), len(COMPRESSIONS), L)
            af = np.empty(layer)
            af[0, 0] = base_af[mi] + 0.1 * t
            af[0, 1] = af[0, 0] + 0.003 * rng.normal(size=L)
            af[0, 2] = af[0, 0] + 0.3 + 0.003 * rng.normal(size=L)
            tau = np.zeros(layer)
            tau[0, 2] = 1.0
            cv = np.empty(layer)
            growth = 1.0 + 4.0 * t
            cv[0, 0] = growth * np.exp(0.05 * rng.normal(size=L))
            cv[0, 1] = growth * np.exp(0.05 * rng.normal(size=L))
            cv[0, 2] = np.exp(0.05 * rng.normal(size=L))
            kcv = np.exp(0.3 * rng.normal(size=layer))
            zm = -1.0 - 2.0 * t + 0.05 * rng.normal(size=layer)
            if model == "m1":
                zm[0, 2] = np.nan
            sink = np.clip((0.9 if model == "m0" else 0.1) + 0.05 * rng.normal(size=(L, H)), 0, 1)
            ratio = (0.2 if model == "m0" else 2.0) * np.exp(0.2 * rng.normal(size=(L, H)))
            arrays = {"abelian_fraction": af, "abelian_fraction_tau": tau, "commutator_var": cv,
                      "killing_cv": kcv, "commutator_z_mean": zm, "sink_argmax_fraction": sink,
                      "sink_value_ratio": ratio}
            shards.append(cube.checkpoint_shard(arrays, model=model, step=step, shape=model_shape(L, H),
                                                families=families, projections=COMPRESSIONS,
                                                provenance={"model": model, "step": step}))
    return cube.merge_shards(shards)


def toy_spec(**fields) -> HypothesisSpec:
    """A report-gated spec on dataset ``synth`` with id "X", claim "c", source "s" and no
    parameters unless ``fields`` say otherwise."""
    base = dict(id="X", claim="c", source="s", datasets=("synth",), gate="report", params={})
    base.update(fields)
    return HypothesisSpec(**base)


def tost_spec(metric: str, a: str, b: str, step="last", bound: float = 0.025) -> HypothesisSpec:
    """``tost_paired`` of ``metric`` (family Q) under compression ``a`` vs ``b``."""
    return toy_spec(id=f"eq-{metric}", test="tost_paired",
                    selection={"a": Select(metric, step=step, family="Q", projection=a),
                               "b": Select(metric, step=step, family="Q", projection=b)},
                    prediction=Prediction("equivalent", bound=bound))


def enrichment_target(metric: str = "commutator_var") -> HypothesisSpec:
    """``enrichment`` of ``metric`` from the first to the last checkpoint (family Q, no
    compression), predicted above 1, with the compressions as a swept choice."""
    return toy_spec(id=f"T-{metric}", test="enrichment", params=dict(FAST_MORE_BOOT),
                    selection={"first": Select(metric, step="first", family="Q", projection="none"),
                               "last": Select(metric, step="last", family="Q", projection="none")},
                    prediction=Prediction("above", value=1.0), choices={"projection": COMPRESSIONS})
