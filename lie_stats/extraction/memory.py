"""In-memory sources: model objects (and state dicts) -> the same lazy tensors + provenance.

A folder source (:mod:`lie_stats.extraction.sources`) reads ``config.json`` and weight files; this
module gives objects already in memory the same interface, so that the extraction treats
them alike (:class:`MemoryCheckpoint` has the attributes and methods of
:class:`~lie_stats.extraction.checkpoint.Checkpoint` that the extraction uses):

* a ``transformers.PreTrainedModel``: its ``state_dict()`` (tensors shared with the model, not
  copied) and ``config.to_dict()``, read by the adapter its ``model_type`` names, exactly as
  the same weights saved with ``save_pretrained`` are read from a folder;
* a TransformerLens ``HookedTransformer`` (TransformerLens 3.x or earlier): its state dict and
  ``cfg``, read by :class:`~lie_stats.extraction.architectures.transformer_lens.TransformerLensAdapter`
  (the numbers the object holds: processed by ``from_pretrained`` unless it was loaded with
  ``from_pretrained_no_processing``; the provenance says which norm setting it has);
* a state dict with a config dict (:func:`from_state_dict`).

Nothing is written to disk. The provenance says ``"source": "in memory"``, the object's class
and the sha256 of its tensors (names, dtypes, shapes and bytes) and of its config; the same
hash identifies the checkpoint where a file's hash would (the shard key of an extraction that
writes a cube). A model is named by ``name=``, else by the last part of its config's
``_name_or_path`` that is not generic (:func:`lie_stats.extraction.sources.model_name_of`: ``model`` or a
step folder is skipped for the folder above it; a step folder gives the step), else by its
class name.
"""

from __future__ import annotations

import hashlib
import json
import os
import pathlib
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import asdict
from typing import Any

import torch

from .architectures import Adapter, LayerWeights, adapter_for
from ..errors import CheckpointError, did_you_mean
from .sources import model_name_of, open_source

__all__ = ["MemoryCheckpoint", "IN_MEMORY", "is_model_object", "open_objects", "open_any",
           "source_label", "activation_target", "from_state_dict", "tensors_sha256"]

#: The ``source`` of an in-memory checkpoint's provenance.
IN_MEMORY = "in memory"


def tensors_sha256(tensors: Mapping[str, torch.Tensor]) -> str:
    """sha256 of a state dict: every tensor's name, dtype, shape and bytes, in name order.

    Examples
    --------
    >>> a = {"w": torch.ones(2, 2), "b": torch.zeros(2)}
    >>> tensors_sha256(a) == tensors_sha256({"b": torch.zeros(2), "w": torch.ones(2, 2)})
    True
    >>> tensors_sha256(a) == tensors_sha256({"w": torch.ones(4), "b": torch.zeros(2)})
    False
    """
    h = hashlib.sha256()
    for name in sorted(tensors):
        t = tensors[name]
        if t.device.type == "meta":
            raise CheckpointError(f"{IN_MEMORY}: tensor {name!r} is on the 'meta' device (no data; "
                                  f"an offloaded or not yet loaded model); expected real weights.")
        h.update(json.dumps([name, str(t.dtype), list(t.shape)]).encode())
        data = t.detach().to("cpu").contiguous().reshape(-1)
        h.update(data.view(torch.uint8).numpy().tobytes() if data.numel() else b"")
    return h.hexdigest()


def _jsonable_config(config: Mapping[str, Any]) -> dict:
    return json.loads(json.dumps(dict(config), sort_keys=True, default=str))


class MemoryCheckpoint:
    """One checkpoint held in memory: a state dict and a config, read through an adapter.

    Parameters
    ----------
    model : str
        The model's name in the cube.
    step : int or None
        Training step (None: a single checkpoint of unknown step).
    tensors : mapping of str to torch.Tensor
        The state dict (not copied).
    config : mapping
        The config (as ``config.json`` would hold it; for a HookedTransformer its ``cfg``).
    class_name : str
        The class of the object the tensors came from (recorded in the provenance).
    module : torch.nn.Module, optional
        The live ``transformers`` model, for the activation metrics (METRICS.md §7).
    adapter_class : type, optional
        The adapter to build instead of the one the config's ``model_type`` names.
    notes : dict, optional
        Recorded in the provenance (e.g. a HookedTransformer's weight processing).

    Examples
    --------
    >>> cfg = {"model_type": "gpt2", "n_embd": 4, "n_head": 2, "n_layer": 1}
    >>> ck = from_state_dict({"h.0.attn.c_attn.weight": torch.ones(4, 12),
    ...                       "h.0.attn.c_proj.weight": torch.eye(4)}, cfg, name="toy")
    >>> ck.model, [w.W_O.shape for w in ck.iter_layers()], ck.provenance()["source"]
    ('toy', [torch.Size([2, 2, 4])], 'in memory')
    """

    def __init__(self, model: str, step: int | None, tensors: Mapping[str, torch.Tensor],
                 config: Mapping[str, Any], *, class_name: str, module: torch.nn.Module | None = None,
                 adapter_class: type[Adapter] | None = None, notes: Mapping[str, Any] | None = None,
                 name_or_path: str | None = None) -> None:
        bad = [k for k, v in tensors.items() if not isinstance(k, str) or not isinstance(v, torch.Tensor)]
        if bad:
            raise CheckpointError(f"{IN_MEMORY} ({class_name}): expected a state dict {{name: tensor}}; "
                                  f"entry {bad[0]!r} is not a named tensor.")
        self.model = model
        self.step = step
        self.revision: str | None = None
        self.source = IN_MEMORY
        self.class_name = class_name
        self.module = module
        self._tensors = dict(tensors)
        self._config = _jsonable_config(config)
        self._adapter_class = adapter_class
        self._notes = dict(notes or {})
        self._name_or_path = name_or_path
        self._adapter: Adapter | None = None
        self._hashes: dict[str, str] = {}

    def __repr__(self) -> str:
        return f"MemoryCheckpoint({self.model!r}, step={self.step!r}, {self.class_name})"

    # ------------------------------------------------------------------ what Checkpoint has
    @property
    def path(self) -> pathlib.PurePosixPath:
        """Not a folder: ``<in memory: CLASS 'model'>``, where messages and failure records
        name a checkpoint's path."""
        return pathlib.PurePosixPath(f"<{IN_MEMORY}: {self.class_name} {self.model!r}>")

    @property
    def config(self) -> dict:
        """The config (JSON-ready: values JSON cannot hold are their ``str``)."""
        return self._config

    @property
    def where(self) -> str:
        """How messages name this checkpoint."""
        return str(self.path)

    def tensor_names(self) -> list[str]:
        """Every tensor name of the state dict, sorted."""
        return sorted(self._tensors)

    def get_tensor(self, name: str) -> torch.Tensor:
        """One tensor of the state dict (detached; on its device, in its dtype)."""
        if name not in self._tensors:
            raise CheckpointError(f"{self.where}: no tensor named {name!r} ({len(self._tensors)} "
                                  f"tensors).{did_you_mean(name, self._tensors)}")
        t = self._tensors[name].detach()
        if t.device.type == "meta":
            raise CheckpointError(f"{self.where}: tensor {name!r} is on the 'meta' device (no data); "
                                  f"expected a model whose weights are loaded.")
        return t

    def stored_dtype(self, name: str) -> str:
        """The dtype of a tensor (``float32``, ``bfloat16``, ...)."""
        return str(self.get_tensor(name).dtype).removeprefix("torch.")

    def adapter(self) -> Adapter:
        """The architecture adapter (METRICS.md §1), built once; float weights only."""
        if self._adapter is None:
            source = f"{self.where} config"
            if self._adapter_class is not None:
                adapter = self._adapter_class(self._config, self.tensor_names(), source=source)
            else:
                adapter = adapter_for(self._config, self.tensor_names(), source=source)
            for name in adapter.attention_tensor_names():
                dtype = self.stored_dtype(name)
                if not dtype.startswith(("float", "bfloat")):
                    raise CheckpointError(
                        f"{self.where}: attention tensor {name!r} is {dtype}: quantized weights are "
                        f"not the matrices the metrics are defined on. Expected float weights."
                    )
            self._adapter = adapter
        return self._adapter

    def content_id(self) -> str:
        """sha256 of the tensors and of the config (what the numbers depend on)."""
        from .._io import text_sha256

        return text_sha256(json.dumps([self._hash("tensors"), self._hash("config")]))

    def _hash(self, what: str) -> str:
        if what not in self._hashes:
            self._hashes[what] = (tensors_sha256(self._tensors) if what == "tensors"
                                  else hashlib.sha256(json.dumps(self._config, sort_keys=True).encode()).hexdigest())
        return self._hashes[what]

    def iter_layers(self, *, fold_ln: bool = False) -> Iterator[LayerWeights]:
        """Canonical weights layer by layer (METRICS.md §1), as :meth:`Checkpoint.iter_layers`."""
        adapter = self.adapter()
        for layer in range(adapter.shape.n_layers):
            yield adapter.layer_weights(layer, self.get_tensor, fold_ln=fold_ln)

    def provenance(self) -> dict:
        """JSON-ready record: the keys of :meth:`Checkpoint.provenance`, with ``source`` "in
        memory", ``path``/``repo_id``/``layout`` None and no files, plus ``class``,
        ``tensors_sha256``, ``config_sha256``, ``name_or_path`` and any notes."""
        adapter = self.adapter()
        dtypes = sorted({self.stored_dtype(n) for n in adapter.attention_tensor_names()})
        shape = asdict(adapter.shape)
        shape["attention_extras"] = list(shape["attention_extras"])
        prov = {
            "source": IN_MEMORY, "model": self.model, "revision": None, "step": self.step,
            "path": None, "repo_id": None, "layout": None, "files": {},
            "dtype": ",".join(dtypes), "architecture": adapter.shape.architecture, "shape": shape,
            "class": self.class_name, "tensors_sha256": self._hash("tensors"),
            "config_sha256": self._hash("config"), "name_or_path": self._name_or_path,
        }
        prov.update(self._notes)
        return prov

    def close(self) -> None:
        """Nothing to release (the tensors belong to the caller's object)."""


# ---------------------------------------------------------------------------- objects
def _is_transformers_model(obj: Any) -> bool:
    try:
        from transformers import PreTrainedModel
    except ImportError:  # pragma: no cover - transformers is a dependency
        return False
    return isinstance(obj, PreTrainedModel)


def _class_names(obj: Any) -> list[tuple[str, str]]:
    return [(c.__module__ or "", c.__name__) for c in type(obj).__mro__]


def _is_hooked_transformer(obj: Any) -> bool:
    return isinstance(obj, torch.nn.Module) and any(
        mod.startswith("transformer_lens") and name == "HookedTransformer" for mod, name in _class_names(obj))


def _is_transformer_bridge(obj: Any) -> bool:
    return any(mod.startswith("transformer_lens") and name == "TransformerBridge"
               for mod, name in _class_names(obj))


def is_model_object(obj: Any) -> bool:
    """True for what :func:`open_objects` reads: a ``transformers`` model, a TransformerLens
    ``HookedTransformer``, or a :class:`MemoryCheckpoint`.

    >>> is_model_object("runs/x"), is_model_object(torch.nn.Linear(2, 2))
    (False, False)
    """
    return (isinstance(obj, MemoryCheckpoint) or _is_transformers_model(obj)
            or _is_hooked_transformer(obj))


def _unsupported(obj: Any) -> CheckpointError:
    what = f"{type(obj).__module__}.{type(obj).__qualname__}"
    if _is_transformer_bridge(obj):
        return CheckpointError(
            f"{IN_MEMORY}: a TransformerLens TransformerBridge ({what}) is not read: extract the "
            f"transformers model it wraps, or its folder or hub id (TransformerLens 4 removed "
            f"HookedTransformer; TransformerLens 3.x's HookedTransformer is read)."
        )
    return CheckpointError(
        f"{IN_MEMORY}: cannot extract a {what}; expected a checkpoint folder, an hf:ORG/NAME id, a "
        f"transformers PreTrainedModel, a TransformerLens HookedTransformer, or a list of those "
        f"objects (checkpoints of one run)."
    )


def _hooked_config(obj: Any) -> tuple[dict, dict]:
    from .architectures.transformer_lens import MODEL_TYPE

    cfg = obj.cfg
    raw = cfg.to_dict() if hasattr(cfg, "to_dict") else dict(vars(cfg))
    config = _jsonable_config(raw)
    config["model_type"] = MODEL_TYPE
    norm = config.get("normalization_type")
    folded = norm in ("LNPre", "RMSPre")
    notes = {"transformer_lens": {
        "normalization_type": norm,
        "original_architecture": config.get("original_architecture"),
        "weights": ("as the HookedTransformer holds them: "
                    + ("its norm gains are folded into W_Q/W_K/W_V (normalization_type "
                       f"{norm}, as from_pretrained leaves them; writing weights may be centred "
                       "and b_V folded into b_O), so they differ from the Hugging Face "
                       "checkpoint's; load with from_pretrained_no_processing for those"
                       if folded else
                       f"normalization_type {norm!r}, no norm folded by TransformerLens")),
    }}
    return config, notes


def _hooked_checkpoint(obj: Any, name: str | None, step: int | None) -> MemoryCheckpoint:
    from .architectures.transformer_lens import TransformerLensAdapter

    config, notes = _hooked_config(obj)
    name_or_path = config.get("model_name") or None
    derived, derived_step = model_name_of(name_or_path) if name_or_path else (None, None)
    model = name or derived or type(obj).__name__
    return MemoryCheckpoint(model, step if step is not None else derived_step, obj.state_dict(), config,
                            class_name=type(obj).__name__, adapter_class=TransformerLensAdapter,
                            notes=notes, name_or_path=name_or_path)


def _transformers_checkpoint(obj: Any, name: str | None, step: int | None) -> MemoryCheckpoint:
    config = obj.config.to_dict()
    name_or_path = str(getattr(obj.config, "_name_or_path", "") or "") or None
    derived, derived_step = model_name_of(name_or_path) if name_or_path else (None, None)
    model = name or derived or type(obj).__name__
    notes = {}
    commit = getattr(obj.config, "_commit_hash", None)
    if commit:
        notes["commit"] = str(commit)
    return MemoryCheckpoint(model, step if step is not None else derived_step, obj.state_dict(), config,
                            class_name=type(obj).__name__, module=obj, notes=notes,
                            name_or_path=name_or_path)


def _one(obj: Any, name: str | None, step: int | None) -> MemoryCheckpoint:
    if isinstance(obj, MemoryCheckpoint):
        if name is not None:
            obj.model = name
        if step is not None:
            obj.step = step
        return obj
    if _is_transformers_model(obj):
        return _transformers_checkpoint(obj, name, step)
    if _is_hooked_transformer(obj):
        return _hooked_checkpoint(obj, name, step)
    raise _unsupported(obj)


def from_state_dict(tensors: Mapping[str, torch.Tensor], config: Mapping[str, Any], *, name: str,
                    step: int | None = None, class_name: str = "state_dict") -> MemoryCheckpoint:
    """A checkpoint from a state dict and the config dict its ``config.json`` would hold
    (the tensor names as the model's ``state_dict()`` or ``save_pretrained`` has them)."""
    if not isinstance(config, Mapping):
        raise CheckpointError(f"{IN_MEMORY}: config must be a dict (as config.json holds it), "
                              f"got {type(config).__name__}.")
    return MemoryCheckpoint(name, step, tensors, config, class_name=class_name)


def open_objects(objects: Any, *, name: str | None = None,
                 steps: Sequence[int] | None = None) -> list[MemoryCheckpoint]:
    """Model objects as checkpoints, sorted by step: one object, or a list of the checkpoints
    of one run.

    Parameters
    ----------
    objects
        A ``transformers`` model, a TransformerLens ``HookedTransformer``, a
        :class:`MemoryCheckpoint`, or a list (tuple) of them: the checkpoints of one run.
    name
        The model's name (default: from the first object's config, see the module notes).
    steps
        One step per object. Default: the step each object's ``_name_or_path`` gives (a step
        folder such as ``run/step_1000``) when every object has one and they differ; else,
        for a list, the positions ``0, 1, ...``; for one object, none (a single checkpoint).

    Raises
    ------
    CheckpointError
        An object of another kind; ``steps`` not one per object or not distinct integers.
    """
    many = isinstance(objects, (list, tuple))
    items = list(objects) if many else [objects]
    if not items:
        raise CheckpointError(f"{IN_MEMORY}: an empty list of model objects; expected at least one.")
    if steps is not None:
        steps = list(steps)
        if len(steps) != len(items) or not all(isinstance(s, int) and not isinstance(s, bool) and s >= 0
                                               for s in steps) or len(set(steps)) != len(steps):
            raise CheckpointError(
                f"steps={steps!r}: expected {len(items)} distinct non-negative integers, one per "
                f"model object, in the order of the objects."
            )
    ckpts = [_one(obj, name, None if steps is None else steps[i]) for i, obj in enumerate(items)]
    if steps is None and many:
        found = [c.step for c in ckpts]
        if None in found or len(set(found)) != len(found):
            for i, c in enumerate(ckpts):
                c.step = i
    if many:
        for c in ckpts[1:]:
            c.model = ckpts[0].model
    return sorted(ckpts, key=lambda c: (c.step is None, c.step or 0))


def open_any(source: Any, *, revisions: str | Sequence[str] | None = None) -> list:
    """The checkpoints of one source: a folder or ``hf:`` id (a string or path,
    :func:`lie_stats.extraction.sources.open_source`), or model objects (:func:`open_objects`)."""
    if isinstance(source, (str, os.PathLike)):
        return open_source(os.fspath(source), revisions=revisions)
    if revisions is not None:
        raise CheckpointError(f"revisions={revisions!r}: revisions choose among a run folder's or a "
                              f"hub repository's checkpoints, not among model objects in memory.")
    return open_objects(source)


def source_label(source: Any, checkpoints: Sequence[Any]) -> str:
    """How messages name a source: what the user typed, or an in-memory object's class."""
    if isinstance(source, (str, os.PathLike)):
        return os.fspath(source)
    if checkpoints:
        c = checkpoints[0]
        return f"{IN_MEMORY} ({c.class_name} {c.model!r})"
    return f"{IN_MEMORY} ({type(source).__name__})"


def activation_target(checkpoint: Any) -> Any:
    """What :func:`lie_stats.extraction.activations.activation_metrics` runs for a checkpoint: its folder,
    or the live ``transformers`` model of an in-memory checkpoint.

    Raises
    ------
    CheckpointError
        An in-memory checkpoint without a ``transformers`` model (a HookedTransformer, a state
        dict): the activation metrics run the model's own forward pass.
    """
    if not isinstance(checkpoint, MemoryCheckpoint):
        return checkpoint.path
    if checkpoint.module is None:
        raise CheckpointError(
            f"{checkpoint.where}: the activation metrics (a probe) run the model's own forward "
            f"pass, which lie_stats does for transformers models only; extract this "
            f"{checkpoint.class_name} without a probe, or extract the transformers model."
        )
    return checkpoint.module
