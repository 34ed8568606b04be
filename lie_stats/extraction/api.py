"""``ls.extract``: checkpoints or model objects -> a cube (an ``xarray.Dataset``), no file needed.

The public extraction call of the Python API. It takes what ``lie-stats extract`` takes (a
checkpoint folder, a run folder, ``hf:ORG/NAME``) and also model objects in memory (a
``transformers.PreTrainedModel``, a TransformerLens ``HookedTransformer``, or a list of them:
the checkpoints of one run; :mod:`lie_stats.extraction.memory`), and returns the cube. Without ``out``
nothing is written: the checkpoints are extracted (in-process, or on ``workers`` processes)
and merged in memory. With ``out`` it is :func:`lie_stats.extraction.pipeline.extract` (shard store,
``resume``, the cube written atomically), and the cube it wrote is returned. Either way a
checkpoint that failed is recorded in the cube's ``failed_checkpoints`` attribute (and
logged); when none succeeded, :class:`~lie_stats.errors.LieStatsError` is raised.
"""

from __future__ import annotations

import dataclasses
import logging
import os
from collections.abc import Sequence
from typing import Any

import numpy as np
import xarray as xr

from . import pipeline as _x
from .._io import resolve_device
from .._text import log_text
from ..errors import LieStatsError

__all__ = ["extract"]

log = logging.getLogger("lie_stats.extraction")


def _is_path(value: Any) -> bool:
    return isinstance(value, (str, os.PathLike))


def _source_items(sources: Any) -> list:
    """The sources as a list: each a path / ``hf:`` id, a model object, or a list of objects
    (one run). A list whose items are all model objects is one run."""
    from .memory import is_model_object

    if _is_path(sources) or is_model_object(sources):
        return [sources]
    if isinstance(sources, (list, tuple)):
        items = list(sources)
        if not items:
            raise LieStatsError("extract: no source given; expected a folder, an hf:ORG/NAME id or a model object.")
        if all(is_model_object(i) for i in items):
            return [items]
        return items
    from .memory import open_objects

    open_objects(sources)  # raises the error naming what was given and what is read
    raise AssertionError("unreachable")  # pragma: no cover


def extract(
    sources: Any,
    out: str | os.PathLike | None = None,
    *,
    name: str | None = None,
    names: Sequence[str] | None = None,
    steps: Sequence[int] | None = None,
    options: _x.ExtractOptions | None = None,
    probe: Any = None,
    revisions: str | Sequence[str] | None = None,
    progress: bool = True,
    store_dtype: str = "float64",
    workers: int = 1,
    scheduler: str | None = None,
    resume: bool = False,
    force: bool = False,
    keep_shards: bool = False,
    **option_fields: Any,
) -> xr.Dataset:
    """Extract the metric cube of checkpoints or model objects (DESIGN.md, METRICS.md).

    Parameters
    ----------
    sources
        A checkpoint folder, a run folder (``step_N`` subfolders), ``hf:ORG/NAME``, a
        ``transformers.PreTrainedModel``, a TransformerLens ``HookedTransformer``; or a list:
        of model objects (the checkpoints of one run), or of sources (each a folder, an id, an
        object, or a list of objects).
    out
        A NetCDF file to write (with a shard store beside it while running, as
        :func:`lie_stats.extraction.pipeline.extract`). Default: nothing is written.
    name, names
        The model's name in the cube (``name``, one source) or one name per source (``names``).
        Default: the folder's name (a generic one such as ``model`` skipped for the folder
        above it), the hub repository, or an object's config ``_name_or_path`` (last part),
        else its class name.
    steps
        One step per object of a list of model objects (default: the steps their
        ``_name_or_path`` names, e.g. ``run/step_1000``, else their positions 0, 1, ...).
        A single checkpoint of unknown step is stored at step 0 with ``change_from_init``
        NaN (there is no first checkpoint of its run to measure from; METRICS.md §5.5).
    options
        :class:`~lie_stats.extraction.pipeline.ExtractOptions`; its fields can also be given as keywords
        (``families=``, ``fold_ln=``, ``null_draws=``, ...), which override it.
    probe
        For the activation metrics (METRICS.md §7): a probe file, a
        :class:`~lie_stats.extraction.probe.ProbeSet`, or token ids (a 2-d integer numpy array or torch
        ``LongTensor`` of shape ``(n, seq)``); or ``{model: probe}``. Needs a folder, a hub id
        or a ``transformers`` model (the model's own forward pass runs).
    revisions, progress, store_dtype, workers, scheduler
        As :func:`lie_stats.extraction.pipeline.extract`.
    resume, force, keep_shards
        As :func:`lie_stats.extraction.pipeline.extract`; only with ``out``.

    Returns
    -------
    xarray.Dataset
        The cube (validated); failed checkpoints in ``attrs["failed_checkpoints"]``.

    Raises
    ------
    LieStatsError
        A source of another kind, bad options, or no checkpoint could be extracted.

    Examples
    --------
    >>> import torch, transformers, lie_stats as ls
    >>> cfg = transformers.GPT2Config(n_embd=16, n_head=2, n_layer=2, vocab_size=32, n_positions=16)
    >>> _ = torch.manual_seed(0)
    >>> cube = ls.extract(transformers.GPT2LMHeadModel(cfg), name="tiny", families=["Q"], progress=False)
    >>> cube.model.values.tolist(), dict(cube["ov_norm"].sizes)
    (['tiny'], {'model': 1, 'step': 1, 'layer': 2, 'head': 2})
    >>> import json; json.loads(cube.attrs["provenance"])[0]["source"]
    'in memory'
    """
    items = _source_items(sources)
    if name is not None:
        if names is not None or len(items) != 1:
            raise LieStatsError(f"name={name!r} names the model of one source; give names=[...] (one "
                                f"per source) for {len(items)} sources.")
        names = [name]
    if steps is not None:
        from .memory import open_objects

        if len(items) != 1 or _is_path(items[0]):
            raise LieStatsError("steps=[...] gives the steps of a list of model objects (one run); "
                                "folders and hub ids name their own steps.")
        items = [open_objects(items[0], steps=steps)]
    if options is None:
        options = _x.ExtractOptions(**({"probe": probe} if probe is not None else {}), **option_fields)
    elif probe is not None or option_fields:
        options = dataclasses.replace(options, **({"probe": probe} if probe is not None else {}),
                                      **option_fields)
    if out is not None:
        cube, _ = _x.extract(items, out, options=options, revisions=revisions, resume=resume,
                             progress=progress, store_dtype=store_dtype, workers=workers,
                             scheduler=scheduler, names=names, force=force, keep_shards=keep_shards)
        return cube
    if resume or keep_shards or force:
        raise LieStatsError("resume, keep_shards and force concern the file at out=; give out= or "
                            "leave them unset (without out= nothing is written).")
    return _extract_in_memory(items, options, revisions=revisions, names=names, progress=progress,
                              store_dtype=store_dtype, workers=workers, scheduler=scheduler)


def _extract_in_memory(items: list, options: _x.ExtractOptions, *, revisions: Any, names: Any,
                       progress: bool, store_dtype: str, workers: int,
                       scheduler: str | None) -> xr.Dataset:
    """Every checkpoint's shard computed and merged in memory; no file written."""
    from ..cube import merge_shards, validate_cube
    from .executors import run_tasks
    from .memory import activation_target

    if store_dtype not in ("float64", "float32"):
        raise ValueError(f"store_dtype={store_dtype!r}: expected 'float64' or 'float32'.")
    if workers < 1 or (scheduler is not None and workers != 1):
        raise LieStatsError(f"workers={workers}, scheduler={scheduler!r}: give workers >= 1 (a "
                            f"local pool) or a scheduler address, not both.")
    resolve_device(options.device)
    options.result_key()  # the probe files: present and readable
    opened = _x._open_sources(items, revisions=revisions, names=names)
    options.check_probe_models([c.model for _, cks in opened for c in cks])
    _x._check_configs(opened, options)
    if options.probe is not None:  # before any work: the forward pass needs a model to run
        for _, cks in opened:
            for c in cks:
                activation_target(c)
    tasks = _x._tasks_of(opened)
    tick = _x._progress(len(tasks), enabled=progress)
    shards: dict[str, xr.Dataset] = {}
    failures: dict[str, dict] = {}
    for outcome in run_tasks(_x.extract_checkpoint, tasks, options, workers=workers, scheduler=scheduler):
        task = outcome.task
        if outcome.error is not None:
            failures[task.key] = _x.failure_record(task, tasks, outcome.error)
            log.error("checkpoint %s failed: %s", log_text(task.label), log_text(outcome.error))
            tick(f"{task.label} FAILED")
            continue
        shards[task.key] = outcome.shard
        tick(task.label)
    failed = [failures[t.key] for t in tasks if t.key in failures]
    if not shards:
        raise LieStatsError("No checkpoint could be extracted: "
                            + "; ".join(f"{f['source']}: {f['error']}" for f in failed))
    merged = merge_shards([shards[t.key] for t in tasks if t.key in shards], failed=failed)
    if store_dtype == "float32":
        merged = merged.map(lambda v: v.astype(np.float32), keep_attrs=True)
    merged.attrs["store_dtype"] = store_dtype
    return validate_cube(merged, where="extract(...)")
