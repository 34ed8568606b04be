"""Tiny Hugging Face checkpoints for tests: every architecture lie_stats supports.

Everything here is seeded and offline. Reuse it from any test (``from ._checkpoints import
make_checkpoint``); ``tests/conftest.py`` wraps the common cases in fixtures.

Main helpers
------------
``make_checkpoint(arch, path, *, seed=0, n_layers=2, ...)``
    Build a random-init model of ``arch`` (a ``model_type`` of
    ``lie_stats.extraction.architectures.SUPPORTED_ARCHITECTURES``), randomize *every* parameter (biases
    and norm gains too, so that a test that ignored them would fail; weights scaled so that
    attention is far from uniform), and ``save_pretrained`` it (safetensors) into ``path``.
``make_run(root, arch, steps, *, naming="step_{}")``
    A folder of checkpoint folders, one per step (``step_N``, ``stepN``, ``checkpoint-N``).
``to_pytorch_bin(folder)``
    Rewrite a safetensors checkpoint as ``pytorch_model.bin`` (optionally sharded, with
    ``pytorch_model.bin.index.json``).
``edit_checkpoint(src, dst, edit)``
    Copy a checkpoint folder with its tensors rewritten by ``edit(tensors)``.
``delta_run(base, root)``
    A three-checkpoint run of known parameter changes (embedding x1.1, then layer 1's Q x1.2).
``reshard(folder, assign)``
    Rewrite a safetensors checkpoint as shards chosen by ``assign(tensor name) -> file name``
    plus ``model.safetensors.index.json`` (e.g. all attention tensors in one shard).
``write_hub_cache(cache_dir, repo_id, {revision: folder})``
    Lay checkpoint folders out as the Hugging Face hub cache does
    (``models--ORG--NAME/{refs,snapshots,blobs}``) so that ``hf:ORG/NAME`` sources work
    with ``HF_HUB_OFFLINE=1`` and no network.
``load_model(folder)``
    Load a checkpoint with ``attn_implementation="eager"`` (needed for attention
    probabilities in transformers 5) with the class it was saved as, in eval mode.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import pathlib
import shutil
from collections.abc import Collection, Iterable, Mapping

import torch

__all__ = [
    "TINY_ARCHITECTURES", "tiny_config", "make_model", "make_checkpoint", "make_run",
    "to_pytorch_bin", "reshard", "write_hub_cache", "load_model", "commit_hash", "copy_checkpoint",
    "edit_checkpoint", "delta_run",
]

# arch -> (config class, model class saved by default, base-model class)
_CLASSES: dict[str, tuple[str, str, str]] = {
    "gpt_neox": ("GPTNeoXConfig", "GPTNeoXForCausalLM", "GPTNeoXModel"),
    "gpt2": ("GPT2Config", "GPT2LMHeadModel", "GPT2Model"),
    "llama": ("LlamaConfig", "LlamaForCausalLM", "LlamaModel"),
    "mistral": ("MistralConfig", "MistralForCausalLM", "MistralModel"),
    "qwen2": ("Qwen2Config", "Qwen2ForCausalLM", "Qwen2Model"),
    "qwen3": ("Qwen3Config", "Qwen3ForCausalLM", "Qwen3Model"),
    "gemma3_text": ("Gemma3TextConfig", "Gemma3ForCausalLM", "Gemma3TextModel"),
    "bert": ("BertConfig", "BertForMaskedLM", "BertModel"),
    "roberta": ("RobertaConfig", "RobertaForMaskedLM", "RobertaModel"),
    "xlm-roberta": ("XLMRobertaConfig", "XLMRobertaForMaskedLM", "XLMRobertaModel"),
    "roberta-prelayernorm": ("RobertaPreLayerNormConfig", "RobertaPreLayerNormForMaskedLM",
                             "RobertaPreLayerNormModel"),
    "mpnet": ("MPNetConfig", "MPNetForMaskedLM", "MPNetModel"),
}

#: Every architecture these helpers can build.
TINY_ARCHITECTURES: tuple[str, ...] = tuple(_CLASSES)

_DECODERS = {"gpt_neox", "gpt2", "llama", "mistral", "qwen2", "qwen3", "gemma3_text"}
_GQA = {"llama", "mistral", "qwen2", "qwen3", "gemma3_text"}


def tiny_config(arch: str, *, n_layers: int = 2, d_model: int = 32, n_heads: int = 4,
                n_kv_heads: int | None = None, d_head: int | None = None, vocab_size: int = 96,
                max_positions: int = 64, **overrides):
    """A transformers config of ``arch`` with small dimensions.

    GQA families default to ``n_kv_heads = n_heads // 2``. ``d_head`` is only honoured where
    the architecture allows ``d_head != d_model / n_heads`` (Llama family, Gemma3); Gemma3
    defaults to ``d_head = 16`` and ``query_pre_attn_scalar = 24`` (so its scaling matters).
    ``overrides`` are passed to the config class unchanged.
    """
    import transformers

    if arch not in _CLASSES:
        raise ValueError(f"unknown arch {arch!r}; choose from {TINY_ARCHITECTURES}")
    cfg_cls = getattr(transformers, _CLASSES[arch][0])
    kv = n_kv_heads if n_kv_heads is not None else (max(1, n_heads // 2) if arch in _GQA else n_heads)
    common = dict(vocab_size=vocab_size)
    if arch == "gpt2":
        kw = dict(n_embd=d_model, n_head=n_heads, n_layer=n_layers, n_positions=max_positions,
                  n_inner=2 * d_model, bos_token_id=0, eos_token_id=0)
    elif arch == "gpt_neox":
        kw = dict(hidden_size=d_model, num_attention_heads=n_heads, num_hidden_layers=n_layers,
                  intermediate_size=2 * d_model, max_position_embeddings=max_positions,
                  rotary_pct=0.25)
    elif arch in _GQA:
        kw = dict(hidden_size=d_model, num_attention_heads=n_heads, num_key_value_heads=kv,
                  num_hidden_layers=n_layers, intermediate_size=2 * d_model,
                  max_position_embeddings=max_positions)
        if arch == "gemma3_text":
            kw.update(head_dim=d_head or 16, query_pre_attn_scalar=24, sliding_window=512,
                      layer_types=["sliding_attention" if (i + 1) % 2 else "full_attention"
                                   for i in range(n_layers)])
        elif arch == "qwen3":
            kw.update(head_dim=d_head or 16)  # Qwen3Config's default is 128
        elif d_head is not None:
            kw.update(head_dim=d_head)
        if arch == "mistral":
            kw.update(sliding_window=None)
    else:  # encoders
        kw = dict(hidden_size=d_model, num_attention_heads=n_heads, num_hidden_layers=n_layers,
                  intermediate_size=2 * d_model, max_position_embeddings=max_positions + 2,
                  hidden_dropout_prob=0.0, attention_probs_dropout_prob=0.0)
        if arch in ("roberta", "xlm-roberta", "roberta-prelayernorm", "mpnet"):
            kw.update(pad_token_id=1, bos_token_id=0, eos_token_id=2)
    kw = {**common, **kw, **overrides}
    return cfg_cls(**kw)


def _randomize(model: torch.nn.Module, seed: int, gain: float) -> None:
    """Refill every parameter from a seeded generator (norm gains ``1 + 0.2 N``, biases
    ``0.2 N``, matrices ``N(0, gain^2 / fan)``, embeddings ``N(0, 1)``)."""
    gen = torch.Generator().manual_seed(seed)
    done: set[int] = set()
    with torch.no_grad():
        for mod_name, module in model.named_modules():
            is_norm = "norm" in type(module).__name__.lower()
            is_emb = isinstance(module, torch.nn.Embedding)
            for name, p in module.named_parameters(recurse=False):
                if id(p) in done:
                    continue
                done.add(id(p))
                noise = torch.randn(p.shape, generator=gen, dtype=torch.float64)
                if is_norm and name == "weight":
                    # Gemma-style norms store w and apply (1 + w); others apply w.
                    base = 0.0 if "gemma" in type(module).__name__.lower() else 1.0
                    value = base + 0.2 * noise
                elif p.ndim == 1:
                    value = 0.2 * noise
                elif is_emb:
                    value = noise
                else:
                    value = noise * gain / (min(p.shape) ** 0.5)
                p.copy_(value.to(p.dtype))


def make_model(arch: str, *, seed: int = 0, gain: float = 1.5, head: bool = True,
               randomize: bool = True, **config_kwargs) -> torch.nn.Module:
    """A random-init model of ``arch`` (see :func:`tiny_config` for ``config_kwargs``).

    ``head=True`` builds the class with the LM head (tensor names get the ``gpt_neox.``,
    ``model.``, ``transformer.``, ``bert.`` ... prefix); ``head=False`` the base model
    (no prefix). ``randomize=False`` keeps transformers' own initialization.
    """
    import transformers

    cfg = tiny_config(arch, **config_kwargs)
    cls = getattr(transformers, _CLASSES[arch][1 if head else 2])
    torch.manual_seed(seed)
    model = cls(cfg)
    if randomize:
        _randomize(model, seed, gain)
    return model.eval()


def make_checkpoint(arch: str, path: str | os.PathLike, *, seed: int = 0, n_layers: int = 2,
                    dtype: torch.dtype = torch.float32, head: bool = True,
                    max_shard_size: str | int | None = None, randomize: bool = True,
                    gain: float = 1.5, **config_kwargs) -> pathlib.Path:
    """Write a tiny seeded HF checkpoint (config.json + safetensors) of ``arch`` to ``path``.

    Parameters
    ----------
    arch : str
        A key of :data:`TINY_ARCHITECTURES` (the ``model_type``).
    path : path-like
        Folder to create (parents too); returned as a ``pathlib.Path``.
    seed : int
        Same seed, same bytes.
    n_layers : int
    dtype : torch.dtype
        Storage dtype (e.g. ``torch.bfloat16``).
    head : bool
        Save the model with its LM head (prefixed tensor names) or the base model.
    max_shard_size : str or int, optional
        E.g. ``"20KB"`` to get a sharded checkpoint with ``model.safetensors.index.json``.
    randomize, gain
        See :func:`make_model`.
    **config_kwargs
        ``d_model``, ``n_heads``, ``n_kv_heads``, ``d_head``, ``vocab_size`` or any config field.
    """
    from transformers.utils import logging as hf_logging

    path = pathlib.Path(path)
    path.mkdir(parents=True, exist_ok=True)
    model = make_model(arch, seed=seed, head=head, randomize=randomize, gain=gain,
                       n_layers=n_layers, **config_kwargs).to(dtype)
    kwargs = {} if max_shard_size is None else {"max_shard_size": max_shard_size}
    hf_logging.disable_progress_bar()
    try:
        model.save_pretrained(path, **kwargs)
    finally:
        hf_logging.enable_progress_bar()
    return path


def make_run(root: str | os.PathLike, arch: str, steps: Iterable[int], *,
             naming: str = "step_{}", seed: int = 0, **kwargs) -> list[pathlib.Path]:
    """A run folder: one checkpoint per step, folder names ``naming.format(step)``.

    Checkpoint ``i`` uses ``seed + i`` (distinct weights per step). Returns the folders in
    the order of ``steps``.
    """
    root = pathlib.Path(root)
    return [make_checkpoint(arch, root / naming.format(step), seed=seed + i, **kwargs)
            for i, step in enumerate(steps)]


def _take_safetensors(folder: pathlib.Path) -> dict[str, torch.Tensor]:
    """Every tensor of the folder's ``*.safetensors`` files, the files removed."""
    from safetensors.torch import load_file

    state: dict[str, torch.Tensor] = {}
    files = sorted(folder.glob("*.safetensors"))
    for f in files:
        state.update(load_file(f))
    for f in files:
        f.unlink()
    return state


def edit_checkpoint(src: str | os.PathLike, dst: str | os.PathLike, edit) -> dict[str, torch.Tensor]:
    """Copy a one-file checkpoint folder, rewriting its ``model.safetensors`` through
    ``edit(tensors)`` (in place). Returns the edited tensors."""
    from safetensors.torch import load_file, save_file

    shutil.copytree(src, dst)
    path = pathlib.Path(dst) / "model.safetensors"
    tensors = load_file(path)
    edit(tensors)
    save_file(tensors, path, metadata={"format": "pt"})
    return tensors


def delta_run(base: str | os.PathLike, root: str | os.PathLike) -> pathlib.Path:
    """A three-checkpoint run under ``root`` from a 2-layer ``gpt_neox`` checkpoint ``base``
    (d_model 32, 4 heads): ``step_0`` is ``base``, ``step_10`` scales ``embed_in`` by 1.1,
    ``step_20`` also the Q rows of layer 1 by 1.2. Returns ``root``."""
    root = pathlib.Path(root)
    shutil.copytree(base, root / "step_0")
    qkv = "gpt_neox.layers.1.attention.query_key_value.weight"

    def e10(t):
        t["gpt_neox.embed_in.weight"] = 1.1 * t["gpt_neox.embed_in.weight"]

    def e20(t):
        e10(t)
        w = t[qkv].reshape(4, 3, 8, 32).clone()
        w[:, 0] *= 1.2
        t[qkv] = w.reshape(96, 32)

    edit_checkpoint(base, root / "step_10", e10)
    edit_checkpoint(base, root / "step_20", e20)
    return root


def to_pytorch_bin(folder: str | os.PathLike, *, shards: int = 1) -> pathlib.Path:
    """Replace a folder's safetensors by ``pytorch_model.bin`` (``torch.save`` of the state dict).

    With ``shards > 1`` writes ``pytorch_model-0000i-of-0000n.bin`` files and
    ``pytorch_model.bin.index.json``. Returns the folder.
    """
    folder = pathlib.Path(folder)
    state = _take_safetensors(folder)
    index = folder / "model.safetensors.index.json"
    if index.exists():
        index.unlink()
    names = sorted(state)
    if shards == 1:
        torch.save(state, folder / "pytorch_model.bin")
        return folder
    weight_map = {}
    for i in range(shards):
        part = names[i::shards]
        fname = f"pytorch_model-{i + 1:05d}-of-{shards:05d}.bin"
        torch.save({n: state[n] for n in part}, folder / fname)
        weight_map.update({n: fname for n in part})
    (folder / "pytorch_model.bin.index.json").write_text(
        json.dumps({"metadata": {}, "weight_map": weight_map}, indent=1))
    return folder


def reshard(folder: str | os.PathLike, assign) -> dict[str, str]:
    """Re-split a folder's safetensors into shards named by ``assign(name)``, with an index.

    Returns the new weight map ``{tensor name: file name}``.
    """
    from safetensors.torch import save_file

    folder = pathlib.Path(folder)
    state = _take_safetensors(folder)
    weight_map = {name: assign(name) for name in sorted(state)}
    for fname in sorted(set(weight_map.values())):
        save_file({n: state[n].contiguous() for n, f in weight_map.items() if f == fname},
                  folder / fname, metadata={"format": "pt"})
    (folder / "model.safetensors.index.json").write_text(
        json.dumps({"metadata": {"total_size": 0}, "weight_map": weight_map}, indent=1))
    return weight_map


def commit_hash(text: str) -> str:
    """A deterministic 40-hex 'commit' for a revision name (hub cache snapshots)."""
    return hashlib.sha1(text.encode()).hexdigest()


def write_hub_cache(cache_dir: str | os.PathLike, repo_id: str,
                    revisions: Mapping[str, str | os.PathLike], *,
                    omit: Collection[str] = ()) -> pathlib.Path:
    """Lay out checkpoint folders as the HF hub cache (``huggingface_hub`` file layout).

    ``cache_dir/models--ORG--NAME/refs/<rev>`` holds a commit hash,
    ``snapshots/<commit>/<file>`` is a relative symlink to ``blobs/<sha256>``. Files named in
    ``omit`` are left out of every snapshot (so that any attempt to fetch them offline fails).
    Returns the repo folder (``cache_dir/models--ORG--NAME``).
    """
    cache_dir = pathlib.Path(cache_dir)
    repo = cache_dir / ("models--" + repo_id.replace("/", "--"))
    (repo / "blobs").mkdir(parents=True, exist_ok=True)
    (repo / "refs").mkdir(exist_ok=True)
    for rev, folder in revisions.items():
        commit = commit_hash(f"{repo_id}@{rev}")
        snap = repo / "snapshots" / commit
        snap.mkdir(parents=True, exist_ok=True)
        for f in sorted(pathlib.Path(folder).iterdir()):
            if not f.is_file() or f.name in omit:
                continue
            data = f.read_bytes()
            blob = repo / "blobs" / hashlib.sha256(data).hexdigest()
            if not blob.exists():
                blob.write_bytes(data)
            link = snap / f.name
            with contextlib.suppress(FileNotFoundError):
                link.unlink()
            link.symlink_to(os.path.relpath(blob, snap))
        ref = repo / "refs" / rev
        ref.parent.mkdir(parents=True, exist_ok=True)
        ref.write_text(commit)
    return repo


def load_model(folder: str | os.PathLike, *, attn_implementation: str = "eager") -> torch.nn.Module:
    """Load a checkpoint with the class named in its config (eager attention, eval mode)."""
    import transformers
    from transformers.utils import logging as hf_logging

    folder = pathlib.Path(folder)
    cfg = json.loads((folder / "config.json").read_text())
    cls = getattr(transformers, cfg["architectures"][0])
    hf_logging.disable_progress_bar()
    try:
        model = cls.from_pretrained(folder, attn_implementation=attn_implementation)
    finally:
        hf_logging.enable_progress_bar()
    return model.eval()


def copy_checkpoint(src: str | os.PathLike, dst: str | os.PathLike) -> pathlib.Path:
    """Copy a checkpoint folder (files only)."""
    dst = pathlib.Path(dst)
    shutil.copytree(src, dst)
    return dst
