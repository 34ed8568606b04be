"""Parameter-delta map of a matched pair and its trajectory over a run (METRICS.md §6.4).

For a base and a tuned checkpoint of one architecture, the relative Frobenius change

    ``delta[c] = ||W_tuned[c] - W_base[c]||_F / ||W_base[c]||_F``

of every parameter category ``c`` (:data:`lie_stats.schema.PARAM_CATEGORIES`: embeddings,
attention Q, K, V, O, MLP in and out, the norms, the unembedding, ...), where ``W[c]`` stacks
every tensor of the category (weights and biases alike) and the norm is that of the stack.
Per-layer categories are also reported layer by layer, with the base norm of each layer, so
that a bootstrap over layers can recompute the pooled value (``lie_stats.stats.ranks``).

Tensors are read through :mod:`lie_stats.extraction.checkpoint` (safetensors, or ``weights_only`` pickles);
which tensor is which category is :func:`lie_stats.extraction.architectures.parameter_parts` (the only
place that knows tensor names; fused QKV tensors are split by the adapter's own layout).

:func:`delta_cube` builds the trajectory of a run: every checkpoint against the run's first,
as a cube with a ``category`` dimension (variables ``param_delta``, ``param_delta_layer``,
``param_base_norm_layer``) that validates and merges with the metric cubes. Its shards are
assembled by the function that assembles extraction's (:func:`lie_stats.cube.assemble_shard`,
then :func:`~lie_stats.cube.merge_shards`). ``lie-stats extract --delta BASE TUNED... -o
OUT.nc`` (or ``RUN_DIR``) calls it and writes what it returns.
"""

from __future__ import annotations

import math
import os
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from .. import schema
from .architectures import parameter_parts
from ..errors import CheckpointError, did_you_mean
from .checkpoint import Checkpoint
from .sources import open_source

if TYPE_CHECKING:  # pragma: no cover
    import pandas as pd
    import xarray as xr

__all__ = ["DeltaMap", "delta_map", "delta_cube"]

#: Variable names of the delta cube (lie_stats.schema.VARIABLES, METRICS.md §6.4).
PARAM_DELTA, PARAM_DELTA_LAYER, PARAM_BASE_NORM_LAYER = (
    "param_delta", "param_delta_layer", "param_base_norm_layer")
for _name in (PARAM_DELTA, PARAM_DELTA_LAYER, PARAM_BASE_NORM_LAYER):
    schema.variable_info(_name)  # a renamed schema entry fails at import, not in a cube
del _name


@dataclass(frozen=True)
class DeltaMap:
    """The parameter-delta map of one (base, tuned) pair (METRICS.md §6.4).

    Attributes
    ----------
    categories : tuple of str
        The categories the model has, in :data:`lie_stats.schema.PARAM_CATEGORIES` order.
    relative : numpy.ndarray
        ``[n_categories]``: relative Frobenius change of each category, all its tensors pooled.
    base_norm : numpy.ndarray
        ``[n_categories]``: ``||W_base||_F`` of each category, all its tensors stacked.
    relative_layer : numpy.ndarray
        ``[n_categories, n_layers]``: the same per layer; NaN for per-model categories.
    base_norm_layer : numpy.ndarray
        ``[n_categories, n_layers]``: ``||W_base||_F`` of the category in the layer (NaN for
        per-model categories).
    base, tuned : str
        The two checkpoint folders.
    n_tensors : int
        Stored tensors compared (buffers excluded).
    """

    categories: tuple[str, ...]
    relative: np.ndarray
    base_norm: np.ndarray
    relative_layer: np.ndarray
    base_norm_layer: np.ndarray
    base: str
    tuned: str
    n_tensors: int

    def rank_order(self) -> list[str]:
        """Categories from the most changed to the least (ties keep the canonical order)."""
        order = np.argsort(-np.nan_to_num(self.relative, nan=-np.inf), kind="stable")
        return [self.categories[i] for i in order]

    def rank(self, category: str) -> int:
        """1-based rank of ``category`` (1 = changed most).

        Raises
        ------
        CheckpointError
            The model has no such category (with a suggestion).
        """
        order = self.rank_order()
        if category not in order:
            raise CheckpointError(
                f"{self.tuned}: no parameter category {category!r} in this model."
                f"{did_you_mean(category, order)} Categories: {', '.join(order)}.")
        return order.index(category) + 1

    def to_frame(self) -> "pd.DataFrame":
        """One row per category: ``category``, ``relative``, ``rank``, sorted by rank."""
        import pandas as pd

        order = self.rank_order()
        frame = pd.DataFrame({schema.CATEGORY: list(self.categories), "relative": self.relative})
        frame["rank"] = [order.index(c) + 1 for c in self.categories]
        return frame.sort_values("rank").reset_index(drop=True)


def _open_one(where: str | os.PathLike | Checkpoint, role: str) -> Checkpoint:
    if isinstance(where, Checkpoint):
        return where
    found = open_source(str(where))
    if len(found) != 1:
        raise CheckpointError(
            f"{where}: the {role} checkpoint must be one checkpoint folder (config.json and "
            f"weights); it is a run folder of {len(found)} checkpoints. Name one of them.")
    return found[0]


def _where(ck: Checkpoint, name: str) -> str:
    try:
        return str(ck.path / ck.file_of(name))
    except CheckpointError:
        return str(ck.path)


def _check_same_tensors(base: Checkpoint, tuned: Checkpoint) -> list[str]:
    nb, nt = base.tensor_names(), tuned.tensor_names()
    only_b = sorted(set(nb) - set(nt))
    only_t = sorted(set(nt) - set(nb))
    if only_b or only_t:
        if only_b:
            name, has, lacks = only_b[0], base, tuned
        else:
            name, has, lacks = only_t[0], tuned, base
        hint = did_you_mean(name, lacks.tensor_names())
        raise CheckpointError(
            f"Mismatched tensor sets: tensor {name!r} is in {_where(has, name)} but not in "
            f"{lacks.path} ({len(only_b)} tensor(s) only in the base {base.path}, {len(only_t)} "
            f"only in the tuned {tuned.path}). Expected the same architecture on both sides.{hint}")
    for name in nb:
        sb, st = tuple(base.get_tensor(name).shape), tuple(tuned.get_tensor(name).shape)
        if sb != st:
            raise CheckpointError(
                f"Mismatched shapes for tensor {name!r}: {sb} in {_where(base, name)}, {st} in "
                f"{_where(tuned, name)}. Expected the same shape on both sides of the pair.")
        base.close()
        tuned.close()
    return nb


def delta_map(base: str | os.PathLike | Checkpoint, tuned: str | os.PathLike | Checkpoint) -> DeltaMap:
    """Relative Frobenius change per parameter category from ``base`` to ``tuned`` (METRICS.md §6.4).

    Parameters
    ----------
    base, tuned : path-like or Checkpoint
        Two checkpoint folders (``config.json`` + safetensors or ``pytorch_model.bin``) of the
        same architecture and shapes.

    Returns
    -------
    DeltaMap
        Computed in float64 whatever the stored dtype.

    Raises
    ------
    CheckpointError
        A tensor is in one checkpoint and not the other, or has different shapes (the message
        names the tensor and both files), or a folder is not one checkpoint.
    ArchitectureError
        An unsupported architecture.

    Examples
    --------
    >>> import tempfile, pathlib, json, torch
    >>> from safetensors.torch import save_file
    >>> root = pathlib.Path(tempfile.mkdtemp())
    >>> cfg = {"model_type": "gpt2", "n_embd": 4, "n_head": 2, "n_layer": 1}
    >>> t = {"h.0.attn.c_attn.weight": torch.ones(4, 12), "h.0.attn.c_proj.weight": torch.eye(4),
    ...      "wte.weight": torch.ones(10, 4)}
    >>> for name, scale in (("a", 1.0), ("b", 1.5)):
    ...     (root / name).mkdir(); _ = (root / name / "config.json").write_text(json.dumps(cfg))
    ...     save_file({**t, "wte.weight": scale * t["wte.weight"]}, root / name / "model.safetensors")
    >>> m = delta_map(root / "a", root / "b")
    >>> m.rank_order()[0], float(m.relative[m.categories.index("embedding")])
    ('embedding', 0.5)
    """
    b, t = _open_one(base, "base"), _open_one(tuned, "tuned")
    names = _check_same_tensors(b, t)
    ab, at = b.adapter(), t.adapter()
    if ab.shape != at.shape:
        raise CheckpointError(
            f"Mismatched architectures: {b.path} is {ab.shape} but {t.path} is {at.shape}; "
            f"expected the same model on both sides of the pair.")
    n_layers = ab.shape.n_layers
    diff: dict[tuple[str, int | None], float] = {}
    norm: dict[tuple[str, int | None], float] = {}
    parts_b = parameter_parts(ab, names, b.get_tensor)
    parts_t = parameter_parts(at, names, t.get_tensor)
    for (cat, layer, name, xb), (_, _, _, xt) in zip(parts_b, parts_t, strict=True):
        xb64, xt64 = xb.double(), xt.double()
        key = (cat, layer)
        diff[key] = diff.get(key, 0.0) + float(((xt64 - xb64) ** 2).sum())
        norm[key] = norm.get(key, 0.0) + float((xb64 ** 2).sum())
    cats = tuple(c for c in schema.PARAM_CATEGORIES if any(k[0] == c for k in diff))
    rel = np.full(len(cats), np.nan)
    base_norm = np.full(len(cats), np.nan)
    rel_l = np.full((len(cats), n_layers), np.nan)
    norm_l = np.full((len(cats), n_layers), np.nan)
    for i, c in enumerate(cats):
        keys = [k for k in diff if k[0] == c]
        d, n = sum(diff[k] for k in keys), sum(norm[k] for k in keys)
        rel[i], base_norm[i] = _ratio(d, n), math.sqrt(n)
        for k in keys:
            if k[1] is not None:
                rel_l[i, k[1]] = _ratio(diff[k], norm[k])
                norm_l[i, k[1]] = math.sqrt(norm[k])
    b.close()
    t.close()
    return DeltaMap(cats, rel, base_norm, rel_l, norm_l, str(b.path), str(t.path), len(names))


def _ratio(diff_sq: float, norm_sq: float) -> float:
    if norm_sq == 0.0:
        return 0.0 if diff_sq == 0.0 else math.inf
    return math.sqrt(diff_sq) / math.sqrt(norm_sq)


def delta_cube(run: str | os.PathLike | Sequence[Checkpoint], *, model: str | None = None,
               categories: Sequence[str] = schema.PARAM_CATEGORIES) -> "xr.Dataset":
    """The parameter-delta trajectory of a run: every checkpoint against the first (METRICS.md §6.4).

    Parameters
    ----------
    run : path-like or sequence of Checkpoint or path-like
        A run folder of checkpoint folders (``step_N``), or its checkpoints (or their
        folders) in step order.
    model : str, optional
        The model's name in the cube (default: the run folder's name).
    categories : sequence of str
        The ``category`` coordinate (default every category of the schema; a model's
        missing categories are NaN).

    Returns
    -------
    xarray.Dataset
        A valid cube with dims ``model``, ``step``, ``category``, ``layer`` and the variables
        ``param_delta``, ``param_delta_layer``, ``param_base_norm_layer``; the first step is
        the base (its deltas are 0) and is recorded as the model's ``init_step``.

    Raises
    ------
    CheckpointError
        Fewer than two checkpoints, or checkpoints that do not match (see :func:`delta_map`).

    Examples
    --------
    >>> import tempfile, pathlib, json, torch
    >>> from safetensors.torch import save_file
    >>> run = pathlib.Path(tempfile.mkdtemp()) / "run"
    >>> cfg = {"model_type": "gpt2", "n_embd": 4, "n_head": 2, "n_layer": 1}
    >>> for step, s in ((0, 1.0), (10, 2.0)):
    ...     d = run / f"step_{step}"; d.mkdir(parents=True)
    ...     _ = (d / "config.json").write_text(json.dumps(cfg))
    ...     save_file({"h.0.attn.c_attn.weight": s * torch.ones(4, 12),
    ...                "h.0.attn.c_proj.weight": torch.eye(4)}, d / "model.safetensors")
    >>> ds = delta_cube(run)
    >>> ds["param_delta"].sel(model="run", step=10, category="attn_q").item()
    1.0
    """
    from ..cube import assemble_shard, merge_shards

    if isinstance(run, (str, os.PathLike)):
        ckpts = open_source(str(run))
    else:  # checkpoints, or checkpoint folders, in step order
        ckpts = [_open_one(c, "run") for c in run]
    if len(ckpts) < 2:
        raise CheckpointError(f"{run}: a delta trajectory needs at least two checkpoints, got {len(ckpts)}.")
    cats = list(categories)
    for c in cats:
        if c not in schema.PARAM_CATEGORIES:
            raise CheckpointError(f"Unknown parameter category {c!r}.{did_you_mean(c, schema.PARAM_CATEGORIES)}")
    base = ckpts[0]
    name = model or (Path(str(run)).name if isinstance(run, (str, os.PathLike)) else base.model)
    shape = base.adapter().shape
    init_step = int(base.step) if base.step is not None else 0
    coords_model = {k: v for k, v in asdict(shape).items() if k in schema.MODEL_COORDS}
    coords_model["attention_extras"] = ",".join(shape.attention_extras)
    coords_model["init_step"] = init_step
    shards = []
    for ck in ckpts:
        m = delta_map(base, ck)
        rel = np.full((len(cats),), np.nan)
        rel_l = np.full((len(cats), shape.n_layers), np.nan)
        norm_l = np.full((len(cats), shape.n_layers), np.nan)
        for i, c in enumerate(m.categories):
            if c not in cats:
                continue
            j = cats.index(c)
            rel[j], rel_l[j], norm_l[j] = m.relative[i], m.relative_layer[i], m.base_norm_layer[i]
        step = int(ck.step) if ck.step is not None else 0
        prov = {"model": name, "step": step, "kind": "param_delta", "source": ck.source,
                "path": os.path.abspath(ck.path), "files": ck.file_hashes(),
                "base": {"path": os.path.abspath(base.path), "step": init_step,
                         "files": base.file_hashes()},
                "architecture": shape.architecture, "n_tensors": m.n_tensors}
        shards.append(assemble_shard(
            {PARAM_DELTA: rel, PARAM_DELTA_LAYER: rel_l, PARAM_BASE_NORM_LAYER: norm_l},
            model=name, step=step, shape=coords_model,
            axes={schema.CATEGORY: cats, schema.LAYER: range(shape.n_layers)}, provenance=prov))
    return merge_shards(shards)
