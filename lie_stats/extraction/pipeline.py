"""Extraction: sources x architectures x metrics -> cube, through a resumable shard store.

Extraction is a map over (model, checkpoint) tasks (DESIGN.md, scale). Each finished
checkpoint is written atomically as its own shard (a one-checkpoint cube) in a shard store
folder beside the output (``OUT.nc.shards/``); the cube is the merge of the shards. A run
restarted with ``resume=True`` redoes no finished checkpoint; a shard is named by a hash of
its checkpoint's files (and its run's first checkpoint's), so a checkpoint whose files
changed is redone. A checkpoint that fails (corrupt file, unknown architecture, ...) is
recorded with its error in the cube's ``failed_checkpoints`` attribute and does not stop the
others; the store is then kept for ``resume``, and removed once a run without failures is
merged. Every option is checked before the first checkpoint is read.
"""

from __future__ import annotations

import json
import logging
import os
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import xarray as xr

from .. import schema
from .._io import inside, resolve_device, text_sha256
from .._stop import raise_if_stopped
from .._text import log_text, terminal_line
from ..cube import checkpoint_shard, merge_shards, open_cube, write_cube
from ..errors import CheckpointError, LieStatsError
from .executors import run_tasks
from .store import SHARD_KEY_SCHEME, check_output, check_replace, lock_store, notice, prepare_store, shard_problems

__all__ = [
    "ExtractOptions", "Task", "plan_tasks", "extract_checkpoint", "extract", "shard_dir",
    "lock_store", "SHARD_KEY_SCHEME", "DEFAULT_THREADS", "set_threads", "thread_settings",
]

log = logging.getLogger("lie_stats.extraction")

#: Intra-op threads of ``lie-stats extract`` when neither ``--threads`` nor
#: ``OMP_NUM_THREADS`` says otherwise. Measured on MiniLM-L6 on a 2-core machine
#: (benchmarks/threads_results.md): one thread is within a few percent of two when the
#: machine is idle and several times faster when other jobs share the cores; the two settings
#: also give cubes that differ in the last bits, so one fixed default makes a cube
#: reproducible bit for bit on the same machine.
DEFAULT_THREADS = 1


def set_threads(threads: int | None = None) -> int:
    """Set torch's intra-op thread count for an extraction; returns the count set.

    ``threads`` when given; else ``OMP_NUM_THREADS`` when that is set to a positive integer;
    else :data:`DEFAULT_THREADS`. What was used is recorded in each checkpoint's provenance
    (:func:`thread_settings`).

    Raises
    ------
    LieStatsError
        ``threads`` is below 1, or ``OMP_NUM_THREADS`` is set but not a positive integer.

    Examples
    --------
    >>> import torch
    >>> before = torch.get_num_threads()
    >>> set_threads(1), torch.get_num_threads()
    (1, 1)
    >>> _ = torch.set_num_threads(before)
    """
    import torch

    if threads is None:
        env = os.environ.get("OMP_NUM_THREADS", "").strip()
        if env:
            try:
                threads = int(env)
            except ValueError:
                threads = 0
            if threads < 1:
                raise LieStatsError(f"OMP_NUM_THREADS={env!r}: expected a positive integer (the "
                                    f"threads of one extraction), or unset for the default "
                                    f"{DEFAULT_THREADS}.")
        else:
            threads = DEFAULT_THREADS
    if threads < 1:
        raise LieStatsError(f"--threads {threads}: expected a positive integer.")
    torch.set_num_threads(int(threads))
    return int(threads)


def thread_settings() -> dict[str, Any]:
    """The thread settings an extraction ran with, as recorded in its provenance:
    ``torch_threads`` (intra-op), ``torch_interop_threads`` and ``OMP_NUM_THREADS`` (the
    environment's value, ``None`` when unset).

    >>> sorted(thread_settings())
    ['OMP_NUM_THREADS', 'torch_interop_threads', 'torch_threads']
    """
    import torch

    return {"torch_threads": int(torch.get_num_threads()),
            "torch_interop_threads": int(torch.get_num_interop_threads()),
            "OMP_NUM_THREADS": os.environ.get("OMP_NUM_THREADS")}


@dataclass(frozen=True)
class ExtractOptions:
    """Analysis options of an extraction; all of them are recorded in each shard's provenance.

    Parameters
    ----------
    families
        Operator families of METRICS.md §2.
    projections
        Compressions of METRICS.md §2: ``"none"``, ``"adaptive"``, ``"fixed:K"``.
    null_draws
        Draws of the random-orientation null per layer (METRICS.md §3.3; at least 64).
    seed
        Seed of the null draws and of the projection matrices (one ``P`` per model).
    alpha, tau
        Thresholds of the two Abelian fractions (METRICS.md §4.2).
    fold_ln
        Fold the pre-attention norm gain into ``W_Q/W_K/W_V`` (METRICS.md §1).
    device
        ``"auto"``, ``"cpu"`` or ``"cuda"``.
    probe
        A probe file (:func:`lie_stats.extraction.probe.save_probe`) for every source, or one probe per
        model: a mapping (or pairs) ``{model: file}``, ``model`` being the name a source gets
        in the cube (models with different tokenizers need their own token ids). In place of
        a file: a :class:`~lie_stats.extraction.probe.ProbeSet`, or token ids, a 2-d integer numpy array
        or torch tensor ``(n_seq, seq_len)`` (recorded with tokenizer and first token
        ``"unknown"``; build a ``ProbeSet`` to record them). When given,
        the activation metrics of METRICS.md §7-§8 are computed for every checkpoint too
        (forward and backward passes through the model's own implementation; needs the full
        checkpoint). A mapping must name every model of the run and no other
        (:meth:`check_probe_models`); it is stored as sorted ``(model, file)`` pairs.

    Examples
    --------
    >>> o = ExtractOptions(probe={"b": "pb.npz", "a": "pa.npz"})
    >>> o.probe, o.probe_for("a")
    ((('a', 'pa.npz'), ('b', 'pb.npz')), 'pa.npz')
    >>> ExtractOptions(probe="p.npz").probe_for("any model")
    'p.npz'
    """

    families: tuple[str, ...] = schema.FAMILIES
    projections: tuple[str, ...] = (schema.PROJECTION_NONE,)
    null_draws: int = 64
    seed: int = 0
    alpha: float = 0.01
    tau: float = 0.5
    fold_ln: bool = False
    device: str = "auto"
    probe: Any = None  # str | ProbeSet | tuple[tuple[str, str | ProbeSet], ...] | None

    def __post_init__(self) -> None:
        from .probe import probe_option

        object.__setattr__(self, "probe", probe_option(self.probe))
        for fam in self.families:
            if fam not in schema.FAMILIES:
                from ..errors import did_you_mean

                hint = (f" Did you mean {fam.upper()!r}? (family names are upper case)"
                        if fam.upper() in schema.FAMILIES else did_you_mean(fam, schema.FAMILIES))
                raise ValueError(
                    f"Unknown operator family {fam!r}.{hint} "
                    f"Families are {', '.join(schema.FAMILIES)} (METRICS.md §2)."
                )
        for proj in self.projections:
            schema.parse_projection(proj)
        if self.null_draws < 64:
            raise ValueError(f"null_draws={self.null_draws}: METRICS.md §3.3 asks for at least 64 draws.")
        if self.device not in ("auto", "cpu", "cuda"):
            raise ValueError(f"device={self.device!r}: expected 'auto', 'cpu' or 'cuda'.")

    def result_key(self) -> dict[str, Any]:
        """The options that change the numbers (the device does not, beyond rounding)."""
        d = asdict(self)
        d.pop("device")
        d["families"] = list(self.families)
        d["projections"] = list(self.projections)
        if self.probe is None:
            d.pop("probe")
        else:  # a probe's identity is its hash, not its path
            from .probe import load_probe

            def sha(p: Any) -> str:
                return load_probe(p).sha256 if isinstance(p, str) else p.sha256

            if isinstance(self.probe, tuple):  # one probe per model: {model: sha256}
                d["probe"] = {m: sha(f) for m, f in self.probe}
            else:
                d["probe"] = sha(self.probe)
        return d

    def probe_for(self, model: str) -> Any:
        """The probe file of ``model``: the single probe, its entry in the mapping, or None.

        Raises
        ------
        LieStatsError
            A per-model mapping is given and does not name ``model``.

        Examples
        --------
        >>> ExtractOptions(probe={"minilm_l6": "l6.npz"}).probe_for("minilm_l3")
        Traceback (most recent call last):
        ...
        lie_stats.errors.LieStatsError: No probe for model 'minilm_l3': the per-model probes name minilm_l6. Did you mean 'minilm_l6'? Give --probe minilm_l3=FILE (each model needs token ids of its own tokenizer).
        """
        if not isinstance(self.probe, tuple):
            return self.probe
        mapping = dict(self.probe)
        if model not in mapping:
            from ..errors import did_you_mean

            raise LieStatsError(
                f"No probe for model {model!r}: the per-model probes name "
                f"{', '.join(sorted(mapping))}.{did_you_mean(model, list(mapping))} Give "
                f"--probe {model}=FILE (each model needs token ids of its own tokenizer)."
            )
        return mapping[model]

    def check_probe_models(self, models: Sequence[str]) -> None:
        """Check a per-model probe mapping against the models of a run (before any work).

        Raises
        ------
        LieStatsError
            The mapping names a model that no source has (with a did-you-mean suggestion), or
            a model of the run has no probe. Nothing to check for a single probe or none.

        Examples
        --------
        >>> ExtractOptions(probe={"minilm_l6": "p.npz"}).check_probe_models(["minilm_l6", "mpnet"])
        Traceback (most recent call last):
        ...
        lie_stats.errors.LieStatsError: --probe: model 'mpnet' has no probe; the per-model probes name minilm_l6. Give --probe mpnet=FILE (each model needs token ids of its own tokenizer), or one --probe FILE for all.
        """
        if not isinstance(self.probe, tuple):
            return
        from ..errors import did_you_mean

        have = list(dict.fromkeys(models))
        mapped = [m for m, _ in self.probe]
        for m in mapped:
            if m not in have:
                raise LieStatsError(
                    f"--probe {m}=...: no source gives a model named {m!r}.{did_you_mean(m, have)} "
                    f"The models of this run are {', '.join(have)} (a model's name is its run "
                    f"folder's or checkpoint folder's name)."
                )
        missing = [m for m in have if m not in mapped]
        if missing:
            raise LieStatsError(
                f"--probe: model{'s' if len(missing) > 1 else ''} {', '.join(repr(m) for m in missing)} "
                f"{'have' if len(missing) > 1 else 'has'} no probe; the per-model probes name "
                f"{', '.join(sorted(mapped))}. Give --probe {missing[0]}=FILE (each model needs token "
                f"ids of its own tokenizer), or one --probe FILE for all."
            )


@dataclass(frozen=True)
class Task:
    """One (model, checkpoint) unit of work, with the run's first checkpoint (METRICS.md §5.5)."""

    checkpoint: Any  # lie_stats.extraction.checkpoint.Checkpoint or lie_stats.extraction.memory.MemoryCheckpoint
    init: Any  # the first checkpoint of the same run
    key: str = field(default="")
    #: The only checkpoint of its run, at a step other than 0 (or unknown): no first
    #: checkpoint to measure ``change_from_init`` from, which is then NaN (METRICS.md §5.5).
    no_init: bool = field(default=False)

    @property
    def label(self) -> str:
        """``model@step``, ``model@revision``, or ``model (single checkpoint)``."""
        c = self.checkpoint
        if c.step is not None:
            return f"{c.model}@{c.step}"
        if c.revision is not None:
            return f"{c.model}@{c.revision}"
        return f"{c.model} (single checkpoint)"


#: The note a checkpoint without a first checkpoint of its run records (provenance ``init``).
NO_INIT_NOTE = ("single checkpoint: its run's first checkpoint is not extracted, so "
                "change_from_init is NaN (METRICS.md §5.5); extract the run's checkpoints "
                "together, the first included, to measure it")


def _task_key(checkpoint: Any, init: Any, no_init: bool = False) -> str:
    """A shard's name: the checkpoint's identity and the hashes of its files and of its init's
    (``change_from_init`` depends on both), so that a changed file never reuses a shard."""
    ident = [checkpoint.model, checkpoint.step, checkpoint.revision, str(checkpoint.path),
             checkpoint.content_id(), init.content_id()]
    if no_init:  # change_from_init NaN: never the shard of an earlier lie_stats (0.0 there)
        ident.append("no_init")
    return text_sha256(json.dumps(ident))[:16]


def plan_tasks(sources: Sequence[str], *, revisions: str | Sequence[str] | None = None,
               names: Sequence[str] | None = None) -> list[Task]:
    """Resolve sources into tasks, each with the first checkpoint of its model as init.

    Checkpoints without a step (a single folder) get step 0 and are their own init. The only
    checkpoint of its run, unless at step 0, has no init to compare with: its task is marked
    ``no_init`` and its ``change_from_init`` is NaN (METRICS.md §5.5).
    ``names`` (one per source) names each source's model instead of its folder (or hub
    repository). Each task's key hashes the checkpoint's files (:meth:`Checkpoint.content_id`,
    computed once and reused by the provenance).

    Raises
    ------
    LieStatsError
        ``names`` not one per source, or an empty or non-printable name; two sources giving
        models of the same name (before any checkpoint is read).
    """
    return _tasks_of(_open_sources(sources, revisions=revisions, names=names))


def _open_sources(sources: Sequence[str], *, revisions: str | Sequence[str] | None,
                  names: Sequence[str] | None) -> list[tuple[str, list]]:
    """``(source, checkpoints)`` of every source, named, with model names checked unique."""
    if names is not None:
        names = list(names)
        if len(names) != len(sources):
            raise LieStatsError(
                f"--name given {len(names)} time(s) for {len(sources)} source(s): give one --name "
                f"per source, in the order of the sources, or none."
            )
        for name in names:
            if not isinstance(name, str) or not name.strip() or name != name.strip() or not name.isprintable():
                raise LieStatsError(
                    f"--name {name!r}: expected a non-empty name of printable characters without "
                    f"leading or trailing spaces."
                )
    opened: list[tuple[str, list]] = []
    origin: dict[str, str] = {}
    from .memory import open_any, source_label

    for i, src in enumerate(sources):
        checkpoints = open_any(src, revisions=revisions)
        src = source_label(src, checkpoints)
        if not checkpoints:
            raise CheckpointError(f"{src}: no checkpoint found (expected config.json, or step_N folders).")
        if names is not None:
            for c in checkpoints:
                c.model = names[i]
        for model in dict.fromkeys(c.model for c in checkpoints):
            if model in origin:
                raise LieStatsError(
                    f"sources {origin[model]} and {src} both give a model named {model!r} (a "
                    f"model is named after its run or checkpoint folder, or hub repository); "
                    f"one cube cannot hold both. Name them apart with --name, one per source "
                    f"(e.g. --name {model}_a --name {model}_b)."
                )
            origin[model] = src
        opened.append((src, checkpoints))
    return opened


def _tasks_of(opened: list[tuple[str, list]]) -> list[Task]:
    tasks: list[Task] = []
    for src, checkpoints in opened:
        by_model: dict[str, list] = {}
        for c in checkpoints:
            by_model.setdefault(c.model, []).append(c)
        for model, cks in by_model.items():
            cks = sorted(cks, key=lambda c: (c.step is None, c.step or 0))
            init = cks[0]
            no_init = len(cks) == 1 and cks[0].step != 0
            for c in cks:
                tasks.append(Task(checkpoint=c, init=init, key=_task_key(c, init, no_init), no_init=no_init))
    return tasks


def extract_checkpoint(task: Task, options: ExtractOptions) -> xr.Dataset:
    """Compute every weight metric of one checkpoint and return its shard.

    Reads the checkpoint one layer at a time (and the same layer of the run's first
    checkpoint, for ``change_from_init``), so memory stays near one layer's attention
    weights.
    """
    import torch

    from .metrics import change_from_init, compute_layer
    from .operators import projection_matrix

    device = resolve_device(options.device)  # a torch.device; provenance records str(device)
    ckpt, init = task.checkpoint, task.init
    adapter = ckpt.adapter()
    shape = adapter.shape
    init_error = None
    if init is not ckpt:
        try:
            init_shape = init.adapter().shape
        except LieStatsError as e:  # reported as that checkpoint's own failure
            init_error = f"{type(e).__name__}: {e}"
        else:
            _check_same_shape(ckpt, shape, init, init_shape)
    p_mats: dict[str, torch.Tensor] = {}
    for proj in options.projections:
        kind, k = schema.parse_projection(proj)
        if kind == "fixed":
            p_mats[proj] = projection_matrix(shape.d_model, k, options.seed)
        elif kind == "adaptive":
            p_mats[proj] = projection_matrix(shape.d_model, shape.d_head, options.seed)
    t_read = t_compute = 0.0
    per_layer: list[dict[str, np.ndarray]] = []
    layers = ckpt.iter_layers(fold_ln=options.fold_ln)
    init_layers = init.iter_layers(fold_ln=options.fold_ln) if init is not ckpt and init_error is None else None
    for _ in range(shape.n_layers):
        t0 = time.perf_counter()
        w = next(layers)
        w0 = w
        if init_layers is not None:
            try:
                w0 = next(init_layers)
            except LieStatsError as e:
                init_error, init_layers = f"{type(e).__name__}: {e}", None
        t1 = time.perf_counter()
        _check_finite(w, ckpt)
        arrays = compute_layer(
            w, families=options.families, projections=options.projections,
            null_draws=options.null_draws, seed=options.seed, alpha=options.alpha,
            tau=options.tau, device=device, projection_matrices=p_mats,
        )
        arrays["change_from_init"] = change_from_init(w, w0)
        per_layer.append(arrays)
        t_read += t1 - t0
        t_compute += time.perf_counter() - t1
    stacked = {}
    for name in per_layer[0]:
        axis = schema.VARIABLES[name].dims.index(schema.LAYER)
        stacked[name] = np.stack([a[name] for a in per_layer], axis=axis)
    if init_error is not None or task.no_init:  # METRICS.md §5.5 needs the run's first checkpoint
        stacked["change_from_init"] = np.full_like(stacked["change_from_init"], np.nan)
    act_attrs = None
    if options.probe is not None:
        from .activations import activation_metrics
        from ..forms import functional_killing
        from .memory import activation_target
        from .probe import load_probe

        t0 = time.perf_counter()
        probe = options.probe_for(ckpt.model)
        probe = load_probe(probe) if isinstance(probe, str) else probe
        act = activation_metrics(activation_target(ckpt), probe, device=device)
        for name in act:
            stacked[name] = np.asarray(act[name], dtype=np.float64)
        stacked["killing_functional"] = functional_killing(stacked["killing"], stacked["value_norm"])
        act_attrs = _jsonable(dict(act.attrs))
        t_compute += time.perf_counter() - t0
    step = ckpt.step if ckpt.step is not None else 0
    shape_coords = dict(
        n_layers=shape.n_layers, n_heads=shape.n_heads, n_kv_heads=shape.n_kv_heads,
        d_head=shape.d_head, d_model=shape.d_model, architecture=shape.architecture,
        rotary_fraction=shape.rotary_fraction, attention_extras=",".join(shape.attention_extras),
        init_step=init.step if init.step is not None else 0,
    )
    prov = dict(ckpt.provenance())
    prov.update(
        model=ckpt.model, step=step, device=str(device), options=options.result_key(),
        init={"step": init.step, "revision": init.revision, "path": str(init.path),
              **({"error": init_error} if init_error is not None else {}),
              **({"note": NO_INIT_NOTE} if task.no_init else {})},
        timing={"read_s": round(t_read, 4), "compute_s": round(t_compute, 4)},
        torch_version=torch.__version__, metrics_version=schema.METRICS_VERSION,
        threads=thread_settings(), variables=sorted(stacked),
    )
    if act_attrs is not None:
        prov["activations"] = act_attrs
    return checkpoint_shard(
        stacked, model=ckpt.model, step=step, shape=shape_coords,
        families=list(options.families), projections=list(options.projections), provenance=prov,
    )


def _check_same_shape(ckpt: Any, shape: Any, init: Any, init_shape: Any) -> None:
    """A checkpoint and its run's first checkpoint have the same shape (``change_from_init``
    compares them layer by layer, METRICS.md §5.5)."""
    for field_name in ("n_layers", "n_heads", "n_kv_heads", "d_head", "d_model"):
        a, b = getattr(shape, field_name), getattr(init_shape, field_name)
        if a != b:
            raise CheckpointError(
                f"{ckpt.path}: {field_name}={a}, but the run's first checkpoint {init.path} has "
                f"{field_name}={b}; expected every checkpoint of a run to have one shape "
                f"(change_from_init compares them layer by layer). Is {ckpt.path.name} from "
                f"another model? Extract it as a source of its own."
            )


def _jsonable(value: Any) -> Any:
    """Attributes as JSON-ready values (numpy scalars and arrays to Python)."""
    return json.loads(json.dumps(value, default=lambda v: v.tolist() if hasattr(v, "tolist") else str(v)))


def _check_finite(w: Any, ckpt: Any) -> None:
    import torch

    bad = []
    for name in ("W_Q", "W_K", "W_V", "W_O"):
        t = getattr(w, name)
        finite = torch.isfinite(t.reshape(t.shape[0], -1)).all(dim=1)
        for h in torch.nonzero(~finite).flatten().tolist():
            bad.append(f"{name}[head {h}]")
    if bad:
        raise CheckpointError(
            f"{ckpt.path}: non-finite (NaN or Inf) weights in layer {w.layer}: {', '.join(bad)}; "
            f"metrics of this checkpoint are not computed (expected finite weights)."
        )


# ---------------------------------------------------------------------------- shard store
def shard_dir(out: Path) -> Path:
    """The shard store of an output cube: ``OUT.nc.shards/``."""
    return out.with_name(out.name + ".shards")


def _shard_path(store: Path, task: Task) -> Path:
    return inside(store, f"{task.key}.nc", what="shard")


def _progress(total: int, *, enabled: bool) -> Callable[[str], None]:
    if enabled and sys.stderr.isatty():
        from tqdm import tqdm

        bar = tqdm(total=total, unit="ckpt", desc="extract", file=sys.stderr)

        def update(label: str) -> None:
            bar.set_postfix_str(terminal_line(label), refresh=False)
            bar.update(1)
            if bar.n >= total:
                bar.close()

        return update
    state = {"n": 0, "t0": time.perf_counter()}

    def log_line(label: str) -> None:
        state["n"] += 1
        if not enabled:
            return
        el = time.perf_counter() - state["t0"]
        rate = state["n"] / el if el > 0 else float("nan")
        eta = (total - state["n"]) / rate if rate > 0 else float("nan")
        print(f"[lie-stats extract] {state['n']}/{total} {terminal_line(label)} ({rate:.2f} ckpt/s, eta {eta:.0f} s)",
              file=sys.stderr, flush=True)

    return log_line


def extract(
    sources: Sequence[str],
    out: str | os.PathLike,
    *,
    options: ExtractOptions = ExtractOptions(),
    revisions: str | Sequence[str] | None = None,
    resume: bool = False,
    progress: bool = True,
    store_dtype: str = "float64",
    workers: int = 1,
    scheduler: str | None = None,
    names: Sequence[str] | None = None,
    force: bool = False,
    keep_shards: bool = False,
) -> tuple[xr.Dataset, list[dict]]:
    """Extract the cube of every checkpoint of ``sources`` into ``out`` (NetCDF).

    Returns the merged cube and the list of failed checkpoints (also recorded in the cube).
    Finished checkpoints are stored as shards as they complete; an interruption loses at
    most the checkpoints in flight, and ``resume=True`` continues where it stopped.
    ``store_dtype="float32"`` stores the merged cube's variables in single precision (half
    the size, 7 significant digits; the shards keep float64), recorded in the global
    attribute ``store_dtype``.

    The map over checkpoints runs in-process (``workers=1``), on a local Dask cluster of
    ``workers`` single-threaded processes, or on the Dask cluster at ``scheduler``
    (:mod:`lie_stats.extraction.executors`); workers return shards and this process writes them, so
    the store needs no shared filesystem. The cube is bitwise the same whichever executor
    ran it. The run holds an exclusive lock on the shard store (:func:`lie_stats.extraction.pipeline.lock_store`).

    Every option is checked before any checkpoint is read (the output path by
    :func:`lie_stats.extraction.store.check_output`, the device, the probe files, model names, projection sizes against
    each ``config.json``). ``names`` names each source's model (one per source; default: the
    folder's or repository's name). An existing ``out`` is never replaced unless ``force``
    is given, or ``resume`` continues the run that wrote it (this run extracts every checkpoint
    it holds: :func:`lie_stats.extraction.store.check_replace`). With ``resume``, a shard that cannot be
    kept (unreadable, lacking a variable it recorded, made with other options) is redone and a
    notice on stderr says which and why; a step-like folder that is not a step (``step_-1``)
    is listed in a notice and in the provenance. A run that fails (no checkpoint extracted, an
    interruption before the first shard) removes the shard store it created, unless
    ``keep_shards``. Shards are named by a hash of the checkpoint's files and its init's
    (:data:`SHARD_KEY_SCHEME`), so ``resume`` never reuses a shard of files that have changed
    since. After a run in which every checkpoint succeeded the shard store is removed
    (``keep_shards=True`` keeps it, e.g. to add checkpoints later with ``resume``); after a
    failure or an interruption it is kept for ``resume``. A failed first checkpoint of a run
    does not fail the others: they are extracted with ``change_from_init`` NaN (METRICS.md
    §5.5 measures change from that checkpoint), and its failure record says so
    (``"first_of_run": true``).

    Raises
    ------
    LieStatsError
        When no checkpoint at all could be extracted, the shard store conflicts or is in
        use by another run, or ``workers``/``scheduler`` are both given.

    Examples
    --------
    A run folder of two tiny random GPT-NeoX checkpoints:

    >>> import pathlib, tempfile, torch, transformers
    >>> root = pathlib.Path(tempfile.mkdtemp())
    >>> cfg = transformers.GPTNeoXConfig(hidden_size=16, num_attention_heads=2, num_hidden_layers=2,
    ...                                  intermediate_size=32, vocab_size=64, max_position_embeddings=32)
    >>> for step in (0, 10):
    ...     _ = torch.manual_seed(step)
    ...     transformers.GPTNeoXForCausalLM(cfg).save_pretrained(root / "run" / f"step_{step}")
    >>> cube, failed = extract([str(root / "run")], root / "run.nc", progress=False)
    >>> cube.sizes["step"], cube.sizes["layer"], cube.sizes["head"], failed
    (2, 2, 2, [])
    """
    if store_dtype not in ("float64", "float32"):
        raise ValueError(f"store_dtype={store_dtype!r}: expected 'float64' or 'float32'.")
    if workers < 1 or (scheduler is not None and workers != 1):
        raise LieStatsError(
            f"workers={workers}, scheduler={scheduler!r}: give workers >= 1 (a local pool) or a "
            f"scheduler address (an existing Dask cluster), not both."
        )
    out = Path(out)
    store = shard_dir(out)
    # Everything that can be checked without reading a checkpoint, before any is read.
    check_output(out, force=force, store_suffix=".shards")
    resolve_device(options.device)
    options.result_key()  # the probe files: present and readable
    opened = _open_sources(sources, revisions=revisions, names=names)
    options.check_probe_models([c.model for _, cks in opened for c in cks])
    _check_configs(opened, options)  # config.json only: projection sizes against d_model
    for src, checkpoints in opened:  # step-like folders that are not steps: said, not dropped
        ignored = getattr(checkpoints[0], "ignored", ()) if checkpoints else ()  # run folders only
        if ignored:
            notice(f"{src}: left out of the run (also listed in each of its checkpoints' "
                   f"provenance, 'ignored_in_run_folder'): {'; '.join(ignored)}")
    tasks = _tasks_of(opened)  # hashes the checkpoints' files (the shard keys)
    check_replace(out, [(t.checkpoint.model, t.checkpoint.step if t.checkpoint.step is not None else 0)
                        for t in tasks], options.result_key(), resume=resume, force=force)
    created = not store.exists()
    try:
        with lock_store(store):
            try:
                return _extract_locked(tasks, store, out, options=options, resume=resume,
                                       progress=progress, store_dtype=store_dtype, workers=workers,
                                       scheduler=scheduler, keep_shards=keep_shards)
            except BaseException:
                # a failed run leaves no store it created and put no shard in (--keep-shards keeps it)
                if created and not keep_shards and not any(store.glob("*.nc")):
                    import shutil

                    shutil.rmtree(store, ignore_errors=True)
                raise
    except OSError as e:  # disk full, read-only or vanished folder: say where, lose nothing
        from ..cube import write_failure_advice

        raise LieStatsError(
            f"{out}: could not write the cube or its shard store {store} ({e}); the finished "
            f"shards and any earlier cube are kept; {write_failure_advice(out, e)}"
        ) from e


def _check_configs(opened: list[tuple[str, list]], options: ExtractOptions) -> None:
    """Options against each model's config.json (no weights): a ``fixed:K`` projection needs
    ``K <= d_model``. A config that cannot be read is left to fail as its checkpoint's error."""
    from .architectures import config_shape

    seen: set[str] = set()
    for _, checkpoints in opened:
        for c in checkpoints:
            if c.model in seen:
                continue
            where = c.where if hasattr(c, "where") else str(c.path / "config.json")
            try:
                shape = (c.adapter().shape if getattr(c, "source", None) == "in memory"
                         else config_shape(c.config, source=where))
            except LieStatsError:
                continue
            seen.add(c.model)
            for proj in options.projections:
                kind, k = schema.parse_projection(proj)
                if kind == "fixed" and k > shape.d_model:
                    raise LieStatsError(
                        f"--projection {proj}: K={k} exceeds d_model={shape.d_model} of model "
                        f"{c.model!r} ({where}); a compression maps the residual "
                        f"stream to at most its own dimension (METRICS.md §2). Expected "
                        f"fixed:K with K <= {shape.d_model}."
                    )


def failure_record(task: Task, tasks: Sequence[Task], error: str) -> dict:
    """The record of a failed checkpoint in a cube's ``failed_checkpoints`` (``first_of_run``
    when the others of its run lost their init)."""
    c = task.checkpoint
    record = {"source": str(c.path), "model": c.model, "step": c.step, "revision": c.revision,
              "error": error}
    if task.init is c and any(t.init is c and t is not task for t in tasks):
        record["first_of_run"] = True
    return record


def _extract_locked(tasks: list[Task], store: Path, out: Path, *, options: ExtractOptions,
                    resume: bool, progress: bool, store_dtype: str, workers: int,
                    scheduler: str | None, keep_shards: bool) -> tuple[xr.Dataset, list[dict]]:
    """The body of :func:`extract`, run while the store's lock is held."""
    wanted = options.result_key()
    prepare_store(store, wanted, resume=resume)
    tick = _progress(len(tasks), enabled=progress)
    found = [t for t in tasks if _shard_path(store, t).exists()]
    problems = dict(zip((t.key for t in found), shard_problems(
        [(_shard_path(store, t), t.checkpoint.model,
          t.checkpoint.step if t.checkpoint.step is not None else 0) for t in found], wanted)))
    todo, redo = [], []
    for task in tasks:
        if task.key in problems and problems[task.key] is None:
            tick(f"{task.label} (done)")
            continue
        if task.key in problems:
            redo.append(f"{task.label}: {problems[task.key]}")
        todo.append(task)
    if redo:  # kept shards are kept; these are extracted again, and the user is told which
        notice(f"{len(redo)} shard(s) of {store} cannot be kept and are extracted again "
               f"({len(tasks) - len(todo)} kept): " + " | ".join(redo))
    failures: dict[str, dict] = {}
    for outcome in run_tasks(extract_checkpoint, todo, options, workers=workers, scheduler=scheduler):
        task = outcome.task
        if outcome.error is not None:
            failures[task.key] = failure_record(task, tasks, outcome.error)
            log.error("checkpoint %s failed: %s", log_text(task.label), log_text(outcome.error))
            tick(f"{task.label} FAILED")
            continue
        write_cube(outcome.shard, _shard_path(store, task))  # replaces a shard that could not be kept
        tick(task.label)
    raise_if_stopped()  # a stop that a library swallowed still writes no cube
    failed = [failures[t.key] for t in tasks if t.key in failures]  # task order, any executor
    shards = [open_cube(_shard_path(store, t)) for t in tasks if _shard_path(store, t).exists()]
    if not shards:
        raise LieStatsError(
            "No checkpoint could be extracted: "
            + "; ".join(f"{f['source']}: {f['error']}" for f in failed)
        )
    merged = merge_shards(shards, failed=failed)
    if store_dtype == "float32":
        merged = merged.map(lambda v: v.astype(np.float32), keep_attrs=True)
    merged.attrs["store_dtype"] = store_dtype
    write_cube(merged, out)
    if not failed and not keep_shards:  # merged and written: the shards are in the cube
        import shutil

        shutil.rmtree(store, ignore_errors=True)
    return merged, failed
