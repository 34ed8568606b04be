"""One checkpoint folder read lazily: :class:`Checkpoint` (its ``config.json``, its weights
one tensor at a time, the architecture's adapter, and the provenance of what was read).

:func:`lie_stats.extraction.sources.open_source` finds the checkpoints a source names (a folder, a run
folder, ``hf:ORG/NAME`` with revisions) and gives them as :class:`Checkpoint` objects.
Tensors are read lazily and one by one: safetensors through ``safe_open`` (only the header
is parsed until a tensor is asked for), ``pytorch_model.bin`` through
``torch.load(weights_only=True, mmap=True)`` (checkpoints are untrusted: never plain
unpickling). From the hub only ``config.json``, the index json and the files that hold the
tensors actually read are fetched, so memory and download stay near the attention weights.
"""

from __future__ import annotations

import json
import os
import pathlib
import pickle
import re
from collections.abc import Iterator
from dataclasses import asdict, dataclass, field

import torch

from .._io import file_sha256, path_problem, read_json
from .._stop import raise_if_stopped
from .architectures import Adapter, LayerWeights, adapter_for
from .checkpoint_files import bad_link, check_st_header, disagreement, layout_kind
from ..errors import CheckpointError, did_you_mean
from .hub import CONFIG_FILE, _Hub

__all__ = ["Checkpoint"]

_ST_INDEX = "model.safetensors.index.json"
_ST_SINGLE = "model.safetensors"
_BIN_INDEX = "pytorch_model.bin.index.json"
_BIN_SINGLE = "pytorch_model.bin"
#: Weight layouts, in the order they are looked for.
_LAYOUTS = (_ST_INDEX, _ST_SINGLE, _BIN_INDEX, _BIN_SINGLE)
_ST_DTYPES = {
    "F64": "float64", "F32": "float32", "F16": "float16", "BF16": "bfloat16",
    "F8_E4M3": "float8_e4m3fn", "F8_E5M2": "float8_e5m2", "I64": "int64", "I32": "int32",
    "I16": "int16", "I8": "int8", "U8": "uint8", "BOOL": "bool",
}


@dataclass
class Checkpoint:
    """One checkpoint: a folder holding ``config.json`` and weights, read lazily.

    Attributes
    ----------
    model : str
        Model name: the folder's name (the run folder's for a checkpoint inside a run; a
        generic folder name such as ``model`` is skipped for the folder above it,
        :func:`lie_stats.extraction.sources.model_name_of`), or ``ORG/NAME`` for the hub.
    step : int or None
        Training step parsed from ``step_N`` / ``stepN`` / ``checkpoint-N`` / revision ``stepN``.
    revision : str or None
        Hub revision (or the checkpoint's folder name inside a run folder).
    path : pathlib.Path
        The folder holding ``config.json`` (a snapshot folder of the HF cache for the hub).
    source : str
        What the user typed.

    Examples
    --------
    >>> import tempfile, pathlib, json
    >>> from safetensors.torch import save_file
    >>> d = pathlib.Path(tempfile.mkdtemp()) / "tiny"; d.mkdir()
    >>> _ = (d / "config.json").write_text(json.dumps(
    ...     {"model_type": "gpt2", "n_embd": 4, "n_head": 2, "n_layer": 1}))
    >>> save_file({"h.0.attn.c_attn.weight": torch.ones(4, 12),
    ...            "h.0.attn.c_proj.weight": torch.eye(4)}, d / "model.safetensors")
    >>> from lie_stats.extraction.sources import open_source
    >>> ckpt, = open_source(str(d))
    >>> ckpt.model, ckpt.step, [w.W_O.shape for w in ckpt.iter_layers()]
    ('tiny', None, [torch.Size([2, 2, 4])])
    """

    model: str
    step: int | None
    revision: str | None
    path: pathlib.Path
    source: str
    _hub: _Hub | None = field(default=None, repr=False, compare=False, kw_only=True)
    #: Entries of the run folder that look like checkpoint folders but were left out (a step
    #: that is not a non-negative integer, a file of a step's name), with why; recorded in
    #: the provenance and shown as a notice by ``lie-stats extract``.
    ignored: tuple[str, ...] = field(default=(), compare=False, kw_only=True)

    def __post_init__(self) -> None:
        self.path = pathlib.Path(self.path)
        self._config: dict | None = None
        self._index: dict[str, str] | None = None   # tensor name -> file (relative)
        self._layout: str | None = None
        self._st_headers: dict[str, dict[str, str]] = {}  # safetensors file -> {name: dtype code}
        self._bins: dict[str, dict] = {}             # .bin file -> mmap'd state dict
        self._read: list[str] = []                   # files read, in order (relative names)
        self._hashes: dict[str, str] = {}
        self._adapter: Adapter | None = None
        self._dtypes: dict[str, str] = {}            # tensor name -> stored dtype (tensors read)
        self._others: list[str] = []                 # other weight layouts present (local)
        self._alt: Checkpoint | None = None          # the same folder read through another layout
        self._prefer: str | None = None              # the layout to read (the alternative's)

    # ------------------------------------------------------------------ pickling (workers)
    def __getstate__(self) -> dict:
        state = dict(self.__dict__)
        state["_bins"] = {}
        return state

    # ------------------------------------------------------------------ files
    def _where(self, filename: str) -> str:
        if self._hub is not None:
            return self._hub.where(filename)
        return str(self.path / filename)

    def _local(self, filename: str, *, missing_ok: bool = False) -> pathlib.Path | None:
        """Local path of one of the checkpoint's files, fetching it from the hub if needed."""
        p = self.path / filename
        if self._hub is not None and filename not in self._hub.fetched:
            return self._hub.fetch(filename, missing_ok=missing_ok)
        if p.is_symlink() and not p.exists():  # present but unusable: say so rather than "not found"
            raise CheckpointError(f"{self._where(filename)}: {bad_link(p)}")
        problem = path_problem(p)  # a folder, a FIFO, a path too long: not "not found"
        if problem is not None:
            raise CheckpointError(f"{self._where(filename)}: {problem}")
        if p.is_file():
            return p
        if missing_ok:
            return None
        raise CheckpointError(f"{self._where(filename)}: file not found")

    def _note_read(self, filename: str) -> None:
        if filename not in self._read:
            self._read.append(filename)

    @property
    def config(self) -> dict:
        """The parsed ``config.json`` (loaded on first use).

        Raises
        ------
        CheckpointError
            The file is missing, is not JSON, or is not a JSON object.
        """
        if self._config is None:
            path = self._local(CONFIG_FILE, missing_ok=True)
            if path is None:
                raise CheckpointError(
                    f"{self._where(CONFIG_FILE)}: missing; a checkpoint folder needs config.json "
                    f"next to its weights ({', '.join(_LAYOUTS)})"
                )
            cfg = read_json(path, where=self._where(CONFIG_FILE), error=CheckpointError,
                            what="a JSON object (the model's configuration)")
            if not isinstance(cfg, dict):
                raise CheckpointError(
                    f"{self._where(CONFIG_FILE)}: expected a JSON object, got {type(cfg).__name__}"
                )
            self._note_read(CONFIG_FILE)
            self._config = cfg
        return self._config

    def _load_index_json(self, filename: str) -> dict[str, str]:
        path = self._local(filename)
        data = read_json(path, where=self._where(filename), error=CheckpointError,
                         what="a JSON object with a 'weight_map' {tensor name: file}")
        try:
            weight_map = data["weight_map"]
        except (TypeError, KeyError) as e:
            raise CheckpointError(
                f"{self._where(filename)}: expected a JSON object with a 'weight_map' "
                f"{{tensor name: file}} ({type(e).__name__}: {e})"
            ) from e
        if not isinstance(weight_map, dict) or not all(
                isinstance(k, str) and isinstance(v, str) for k, v in weight_map.items()):
            raise CheckpointError(f"{self._where(filename)}: 'weight_map' must map tensor names to file names")
        for f in set(weight_map.values()):
            if "/" in f or "\\" in f or f.startswith(".."):
                raise CheckpointError(f"{self._where(filename)}: weight file {f!r} must be a plain file name")
        self._note_read(filename)
        return dict(weight_map)

    def _weight_index(self) -> dict[str, str]:
        if self._index is not None:
            return self._index
        found = None
        present = []
        for layout in (_LAYOUTS if self._prefer is None else (self._prefer,)):
            if self._local(layout, missing_ok=True) is not None:
                present.append(layout)
                if self._hub is not None:  # a hub revision: the first layout, nothing more fetched
                    break
        found = present[0] if present else None
        if self._prefer is None and self._hub is None:
            # model.safetensors beside pytorch_model.bin: read both, and refuse if they disagree
            self._others = [lay for lay in present[1:] if layout_kind(lay) != layout_kind(found)]
        others = []
        if found is None and self._hub is None:
            others = sorted(p.name for p in self.path.glob("*.safetensors"))
            if others:
                found = _ST_SINGLE
        if found is None:
            raise CheckpointError(
                f"{self._where('')}: no weights; expected one of {', '.join(_LAYOUTS)} "
                f"next to config.json"
            )
        if found in (_ST_INDEX, _BIN_INDEX):
            index = self._load_index_json(found)
        elif found == _ST_SINGLE:
            index = {}
            for fname in others or [_ST_SINGLE]:
                for name in self._st_header(fname):
                    index[name] = fname
        else:
            index = {name: _BIN_SINGLE for name in self._bin(_BIN_SINGLE)}
        self._layout = found
        self._index = index
        return index

    def _st_open(self, filename: str):
        """A fresh ``safe_open`` handle. Handles are not kept: closing one unmaps the file, so
        resident memory holds the tensors in use, not every page read so far."""
        from safetensors import safe_open

        path = self._local(filename)
        if filename not in self._st_headers:
            check_st_header(path, self._where(filename))
        try:
            return safe_open(str(path), framework="pt", device="cpu")
        except Exception as e:  # safetensors raises SafetensorError / OSError
            raise_if_stopped()  # an interrupt the library wrapped in its own error
            raise CheckpointError(
                f"{self._where(filename)}: not a readable safetensors file ({type(e).__name__}: {e})"
            ) from e

    def _st_header(self, filename: str) -> dict[str, str]:
        """``{tensor name: stored dtype code}`` of a safetensors file (header only)."""
        header = self._st_headers.get(filename)
        if header is None:
            with self._st_open(filename) as f:
                header = {name: f.get_slice(name).get_dtype() for name in f.keys()}
            self._st_headers[filename] = header
            self._note_read(filename)
        return header

    def _bin(self, filename: str) -> dict:
        state = self._bins.get(filename)
        if state is None:
            path = self._local(filename)
            try:
                try:
                    state = torch.load(path, map_location="cpu", weights_only=True, mmap=True)
                except RuntimeError as e:
                    if "mmap" not in str(e):  # legacy (non-zip) format cannot be memory-mapped
                        raise
                    state = torch.load(path, map_location="cpu", weights_only=True)
            except pickle.UnpicklingError as e:
                raise CheckpointError(
                    f"{self._where(filename)}: refused to load: the pickle holds objects other "
                    f"than tensors and plain containers, and checkpoints are only read with "
                    f"torch.load(weights_only=True) ({str(e).splitlines()[0]})"
                ) from e
            except Exception as e:  # corrupt zip, truncated file, ...
                raise_if_stopped()
                raise CheckpointError(
                    f"{self._where(filename)}: not a readable PyTorch checkpoint ({type(e).__name__}: {e})"
                ) from e
            if not isinstance(state, dict) or not all(
                    isinstance(k, str) and isinstance(v, torch.Tensor) for k, v in state.items()):
                raise CheckpointError(
                    f"{self._where(filename)}: expected a state dict {{name: tensor}}, got "
                    f"{type(state).__name__}"
                )
            self._bins[filename] = state
            self._note_read(filename)
        return state

    # ------------------------------------------------------------------ tensors
    def tensor_names(self) -> list[str]:
        """Every tensor name the checkpoint holds (from the index or the file headers).

        Examples
        --------
        >>> import tempfile, pathlib, json
        >>> from safetensors.torch import save_file
        >>> d = pathlib.Path(tempfile.mkdtemp())
        >>> _ = (d / "config.json").write_text("{}")
        >>> save_file({"b": torch.ones(1), "a": torch.ones(1)}, d / "model.safetensors")
        >>> Checkpoint("m", None, None, d, str(d)).tensor_names()
        ['a', 'b']
        """
        return sorted(self._weight_index())

    def file_of(self, name: str) -> str:
        """The weight file (relative name) that holds tensor ``name``."""
        index = self._weight_index()
        if name not in index:
            raise CheckpointError(
                f"{self._where('')}: no tensor named {name!r} ({len(index)} tensors in "
                f"{self._layout}).{did_you_mean(name, index)}"
            )
        return index[name]

    def get_tensor(self, name: str) -> torch.Tensor:
        """Read one tensor, in its stored dtype, opening (or fetching) only the file holding it.

        Raises
        ------
        CheckpointError
            Unknown name (with a suggestion), or an unreadable / refused file.

        Examples
        --------
        >>> import tempfile, pathlib
        >>> from safetensors.torch import save_file
        >>> d = pathlib.Path(tempfile.mkdtemp())
        >>> _ = (d / "config.json").write_text("{}")
        >>> save_file({"w": torch.ones(2, dtype=torch.bfloat16)}, d / "model.safetensors")
        >>> Checkpoint("m", None, None, d, str(d)).get_tensor("w").dtype
        torch.bfloat16
        """
        filename = self.file_of(name)
        if filename.endswith(".safetensors"):
            if name not in self._st_header(filename):
                raise CheckpointError(
                    f"{self._where(filename)}: tensor {name!r} is not in the file (the index says it is)"
                )
            try:
                with self._st_open(filename) as f:
                    t = f.get_tensor(name)
            except Exception as e:
                raise_if_stopped()
                raise CheckpointError(
                    f"{self._where(filename)}: cannot read tensor {name!r} "
                    f"(the index says it is there; {type(e).__name__}: {e})"
                ) from e
        else:
            state = self._bin(filename)
            if name not in state:
                raise CheckpointError(
                    f"{self._where(filename)}: tensor {name!r} is not in the file (the index says it is)"
                )
            t = state[name]
        self._dtypes[name] = str(t.dtype).removeprefix("torch.")
        if self._others:
            self._check_agrees(name, t)
        return t

    def _check_agrees(self, name: str, t: torch.Tensor) -> None:
        """The same tensor read through the other weight layout of the folder
        (``pytorch_model.bin`` beside ``model.safetensors``) must hold the same values; the
        folder is ambiguous otherwise, and which file the metrics came from would be a guess."""
        if self._alt is None:
            self._alt = Checkpoint(self.model, self.step, self.revision, self.path, self.source)
            self._alt._prefer = self._others[0]
        ours, theirs = self._layout, self._others[0]
        try:
            why = disagreement(t, self._alt.get_tensor(name), ours, theirs)
        except CheckpointError as e:
            why = str(e)
        for f in self._alt.files_read:
            self._note_read(f)
        self._alt.close()
        if why is not None:
            raise CheckpointError(
                f"{self._where('')}: holds both {ours} and {theirs}, and they disagree on tensor "
                f"{name!r} ({why}); expected one set of weights. Remove the file that is not "
                f"the checkpoint (or move it away) and extract again."
            )

    def stored_dtype(self, name: str) -> str:
        """Stored dtype of a tensor, from the file header where possible (no data read)."""
        if name in self._dtypes:
            return self._dtypes[name]
        filename = self.file_of(name)
        if filename.endswith(".safetensors"):
            code = self._st_header(filename)[name]
            return _ST_DTYPES.get(code, code.lower())
        return str(self._bin(filename)[name].dtype).removeprefix("torch.")

    # ------------------------------------------------------------------ adapter and layers
    def adapter(self) -> Adapter:
        """The architecture adapter for this checkpoint (METRICS.md §1), built once.

        Raises
        ------
        ArchitectureError
            Unknown architecture, or attention tensors missing.
        """
        if self._adapter is None:
            adapter = adapter_for(self.config, self.tensor_names(), source=self._where(CONFIG_FILE),
                                  locate=self._tensor_where)
            self._check_float(adapter)
            self._adapter = adapter
        return self._adapter

    def _check_float(self, adapter: Adapter) -> None:
        """Refuse integer-coded (quantized) attention weights, from the file headers: their
        codes are not the matrices the metrics are defined on."""
        names = adapter.attention_tensor_names()
        scales = sorted(n for n in self._weight_index()
                        if n.endswith((".SCB", ".weight_format", ".absmax", ".quant_map", ".qweight", ".scales")))
        for name in names:
            dtype = self.stored_dtype(name)
            if not dtype.startswith(("float", "bfloat")):
                raise CheckpointError(
                    f"{self._tensor_where(name)}: attention tensor {name!r} is stored as {dtype}"
                    f"{f' with quantization scales ({scales[0]}, ...)' if scales else ''}: a "
                    f"quantized checkpoint, whose integer codes are not the weight matrices the "
                    f"metrics are defined on. Expected float weights: extract the unquantized model."
                )

    def content_id(self) -> str:
        """A hash of what this checkpoint's numbers depend on: the sha256 of ``config.json`` and
        of every weight file (index included), or, for the hub, the snapshot's commit.

        The hashes are computed once and kept: :meth:`file_hashes` (the provenance) reuses
        them. A checkpoint whose files cannot be indexed (a corrupt header, no weights) is
        identified by the names, sizes and modification times of its files instead: it fails
        when extracted, and any repair changes its identity.

        Examples
        --------
        >>> import tempfile, pathlib
        >>> from safetensors.torch import save_file
        >>> d = pathlib.Path(tempfile.mkdtemp())
        >>> _ = (d / "config.json").write_text("{}")
        >>> save_file({"w": torch.ones(2)}, d / "model.safetensors")
        >>> ck = Checkpoint("m", None, None, d, str(d))
        >>> before = ck.content_id()
        >>> save_file({"w": torch.zeros(2)}, d / "model.safetensors")
        >>> Checkpoint("m", None, None, d, str(d)).content_id() == before
        False
        """
        from .._io import text_sha256

        if self._hub is not None:
            return f"commit:{self.path.name}"  # the snapshot folder is named by its commit
        try:
            _ = self.config
            index = self._weight_index()
            files = [CONFIG_FILE] + ([self._layout] if self._layout in (_ST_INDEX, _BIN_INDEX) else [])
            files += sorted(set(index.values()) - set(files))
            files += [f for f in self._others if f not in files]  # compared with: part of the result
            ident = {f: self._hash(f) for f in files}
        except (CheckpointError, OSError):
            ident = {}
            for p in sorted(self.path.iterdir()) if self.path.is_dir() else []:
                try:
                    st = p.stat()
                except OSError:
                    continue
                ident[p.name] = f"{st.st_size}:{st.st_mtime_ns}"
        finally:
            self.close()
        return text_sha256(json.dumps(ident, sort_keys=True))

    def _hash(self, filename: str) -> str:
        """sha256 of one of the checkpoint's files, computed once (blobs of the hub cache are
        named by their sha256 and not re-hashed)."""
        if filename not in self._hashes:
            real = (self.path / filename).resolve()
            if self._hub is not None and re.fullmatch(r"[0-9a-f]{64}", real.name):
                self._hashes[filename] = real.name
            else:
                self._hashes[filename] = file_sha256(real)
        return self._hashes[filename]

    def _tensor_where(self, name: str) -> str:
        return self._where(self.file_of(name))

    def iter_layers(self, *, fold_ln: bool = False) -> Iterator[LayerWeights]:
        """Canonical weights layer by layer (METRICS.md §1), reading only each layer's tensors.

        Parameters
        ----------
        fold_ln : bool
            Fold the pre-attention norm into ``W_Q/W_K/W_V`` (recorded by the caller in
            provenance; METRICS.md §1).

        Yields
        ------
        LayerWeights
            In stored dtype (float32 when folded).
        """
        adapter = self.adapter()
        for layer in range(adapter.shape.n_layers):
            lw = adapter.layer_weights(layer, self.get_tensor, fold_ln=fold_ln)
            # Unmap pytorch_model.bin files between layers (reloading one is cheap with mmap),
            # so that resident memory holds one layer, not every page read so far.
            self._bins.clear()
            yield lw

    # ------------------------------------------------------------------ provenance
    @property
    def files_read(self) -> list[str]:
        """Files opened so far (relative names, in order), config.json and index included."""
        return list(self._read)

    @property
    def fetched(self) -> list[str]:
        """Files requested from the hub (empty for local checkpoints)."""
        return [] if self._hub is None else list(self._hub.fetched)

    def file_hashes(self) -> dict[str, str]:
        """sha256 of config.json and of every weight or index file read so far.

        Files in the hub cache that are blobs named by their sha256 (LFS files) are not
        re-hashed.

        Examples
        --------
        >>> import tempfile, pathlib
        >>> d = pathlib.Path(tempfile.mkdtemp())
        >>> _ = (d / "config.json").write_text("{}")
        >>> ck = Checkpoint("m", None, None, d, str(d))
        >>> ck.file_hashes()["config.json"][:12]
        '44136fa355b3'
        """
        _ = self.config
        return {f: self._hash(f) for f in self._read}

    def provenance(self) -> dict:
        """JSON-serializable record of where the weights came from (DESIGN.md, cube).

        Keys: ``source``, ``model``, ``revision``, ``step``, ``path``, ``repo_id``, ``layout``,
        ``files`` (``{file: sha256}``), ``dtype`` (the stored dtype of the attention tensors,
        comma-joined if mixed), ``architecture``, ``shape`` (the :class:`ModelShape` fields).
        """
        adapter = self.adapter()
        dtypes = sorted({self.stored_dtype(n) for n in adapter.attention_tensor_names()})
        shape = asdict(adapter.shape)
        shape["attention_extras"] = list(shape["attention_extras"])
        return {
            "source": self.source,
            "model": self.model,
            "revision": self.revision,
            "step": self.step,
            "path": os.path.abspath(self.path),
            "repo_id": None if self._hub is None else self._hub.repo_id,
            "layout": self._layout,
            "files": self.file_hashes(),
            "dtype": ",".join(dtypes),
            "architecture": adapter.shape.architecture,
            "shape": shape,
            **({"ignored_in_run_folder": list(self.ignored)} if self.ignored else {}),
        }

    def close(self) -> None:
        """Drop memory-mapped ``pytorch_model.bin`` state dicts (they reload on the next read)."""
        self._bins.clear()
