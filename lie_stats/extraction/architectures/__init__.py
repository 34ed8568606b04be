"""Architecture adapters: stored tensors -> canonical per-head weights (METRICS.md §1).

This package is the only part of lie_stats that knows checkpoint tensor names. An :class:`Adapter` reads a checkpoint's ``config.json`` (as a dict) and its list
of tensor names, and turns the stored attention tensors of one layer into a
:class:`LayerWeights` in the row-vector convention ``y = x W``: ``W_Q``, ``W_K``, ``W_V``
``[n_heads, d_model, d_head]`` (K/V repeated per query head under grouped-query attention)
and ``W_O`` ``[n_heads, d_head, d_model]``.

Every adapter is proven by its test in ``tests/architectures/``: attention probabilities
recomputed from the canonical weights (plus the extras the architecture applies, recorded in
:attr:`ModelShape.attention_extras`) equal the model's own to 1e-5 in float32.

Modules
-------
``base``
    :class:`Adapter`, :class:`ModelShape`, :class:`LayerWeights`, :data:`ATTENTION_EXTRAS` and
    the shared reshapes (``nn.Linear`` weights into heads, the grouped-query expansion).
``registry``
    :func:`register`, :func:`adapter_for` and the model-type table built from the classes.
``parts``
    :func:`parameter_parts` and :func:`param_category` (every parameter by category,
    METRICS.md §6.4), read from each adapter class's ``param_patterns``.
``gpt_neox``, ``gpt2``, ``llama``, ``bert``, ``gemma3``
    One module per family: Pythia; GPT-2; Llama, Mistral, Qwen2, Qwen3; BERT, RoBERTa, XLM-R,
    RoBERTa-PreLayerNorm, MPNet; Gemma3 (text). Each module's docstring describes its stored layout.
``transformer_lens``
    :class:`TransformerLensAdapter`, for TransformerLens ``HookedTransformer`` objects held in
    memory (not registered: no ``config.json`` names it; :mod:`lie_stats.extraction.memory` builds it).

Adding an architecture
----------------------
Write one module, ``lie_stats/extraction/architectures/<family>.py``, holding a subclass of
:class:`Adapter` decorated with :func:`register`. The class declares, as class attributes,
``architecture`` and ``model_types`` (the ``config.json`` model types it reads),
``class_names`` (``config["architectures"]`` entries, for configs without a model type),
``probe`` (a layer-0 attention tensor name with ``{l}``, from which the prefix is detected)
and ``param_patterns`` (``(regex, category)`` for every non-attention tensor, categories of
``lie_stats.schema.PARAM_CATEGORIES``); and it implements ``_read_shape``, ``_roles``,
``_norm_names`` and ``_raw`` (see the :class:`Adapter` notes). Nothing else in the package
changes: this ``__init__`` imports every module of the package (:data:`FAMILIES`), which
registers the class. Then add ``tests/architectures/test_<family>.py``, whose ``CASES`` the
attention-reproduction test runs over, and a tiny builder in ``tests/_checkpoints.py``; a
test fails while a registered ``model_type`` has no reproduction case. Registering a model
type (or class name) that another adapter already holds raises
:class:`~lie_stats.errors.ArchitectureError`, and so does a pattern naming an unknown category.

Examples
--------
>>> cfg = {"model_type": "gpt2", "n_embd": 8, "n_head": 2, "n_layer": 1}
>>> a = adapter_for(cfg, ["h.0.attn.c_attn.weight", "h.0.attn.c_proj.weight"], source="c.json")
>>> type(a).__name__, a.shape.d_head
('GPT2Adapter', 4)
"""

from __future__ import annotations

import importlib
import pkgutil

from .base import ATTENTION_EXTRAS, Adapter, LayerWeights, ModelShape
from .parts import LAYER_CATEGORIES, param_category, parameter_parts
from .registry import adapter_for, config_shape, register, registered, supported_architectures, unregister

#: Modules of this package that are not architecture families registered for ``config.json``
#: model types: the shared machinery, and ``transformer_lens`` (the adapter of in-memory
#: TransformerLens objects, built by :mod:`lie_stats.extraction.memory` and never chosen by a config).
_INFRASTRUCTURE = ("base", "registry", "parts", "transformer_lens")
#: The built-in families, in the order they register: the order in which
#: :data:`SUPPORTED_ARCHITECTURES` and the unknown-architecture error list the model types.
_BUILT_IN = ("gpt_neox", "gpt2", "llama", "bert", "gemma3")
#: Every family module, imported (so registered) in this order: the built-in ones, then any
#: other module of the package in name order. Whichever module a caller imports first, Python
#: runs this ``__init__`` before it, so the order never depends on the caller.
FAMILIES: tuple[str, ...] = _BUILT_IN + tuple(sorted(
    m.name for m in pkgutil.iter_modules(__path__)
    if m.name not in _BUILT_IN + _INFRASTRUCTURE and not m.name.startswith("_")
))
for _family in FAMILIES:
    importlib.import_module(f"{__name__}.{_family}")
del _family

from .bert import BertAdapter, MPNetAdapter, RobertaAdapter, RobertaPreLayerNormAdapter  # noqa: E402
from .gemma3 import Gemma3TextAdapter  # noqa: E402
from .gpt2 import GPT2Adapter  # noqa: E402
from .gpt_neox import GPTNeoXAdapter  # noqa: E402
from .llama import LlamaAdapter, MistralAdapter, Qwen2Adapter, Qwen3Adapter  # noqa: E402

#: Every ``model_type`` an adapter of the family modules exists for, as registered on import
#: (:func:`supported_architectures` also lists adapters registered later, e.g. by a test).
SUPPORTED_ARCHITECTURES: tuple[str, ...] = supported_architectures()

__all__ = [
    "SUPPORTED_ARCHITECTURES",
    "ATTENTION_EXTRAS",
    "FAMILIES",
    "ModelShape",
    "LayerWeights",
    "Adapter",
    "adapter_for",
    "config_shape",
    "register",
    "unregister",
    "registered",
    "supported_architectures",
    "LAYER_CATEGORIES",
    "param_category",
    "parameter_parts",
    "GPTNeoXAdapter",
    "GPT2Adapter",
    "LlamaAdapter",
    "MistralAdapter",
    "Qwen2Adapter",
    "Qwen3Adapter",
    "BertAdapter",
    "RobertaAdapter",
    "RobertaPreLayerNormAdapter",
    "MPNetAdapter",
    "Gemma3TextAdapter",
]
