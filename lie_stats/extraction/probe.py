"""Probe sets: fixed token sequences from a real corpus, identified by a hash (METRICS.md §7).

The activation metrics of METRICS.md §7 need text. A :class:`ProbeSet` is ``n_seq`` token
sequences of one length ``seq_len`` (no padding, so every position of every sequence is a real
token), cut from a corpus with one tokenizer, plus what is needed to say where they came from:
the tokenizer, the text source, what sits at position 0 (``first_token``: ``"cls"``, ``"bos"``
or ``"first_word"``), and ``sha256``, the hash of the tokens that a cube records.

Probe files are ``.npz`` archives holding two arrays, ``tokens`` (int64) and ``meta`` (a JSON
string): they are read with ``numpy.load(allow_pickle=False)`` and their hash is checked on
load, so that a file altered after it was written is refused.
"""

from __future__ import annotations

import hashlib
import json
import os
import pathlib
from dataclasses import dataclass
from typing import Any

import numpy as np

from .._io import atomic_write, text_sha256
from ..errors import CheckpointError, LieStatsError, did_you_mean

__all__ = [
    "FIRST_TOKEN_KINDS",
    "UNKNOWN_FIRST_TOKEN",
    "probe_option",
    "ProbeError",
    "ProbeSet",
    "probe_hash",
    "build_probe",
    "folder_tokenizer",
    "text_probe",
    "save_probe",
    "load_probe",
]

#: What a probe set may hold at position 0 of each sequence (METRICS.md §7: position 0 is the
#: first token, ``[CLS]`` for encoders, ``<bos>`` for decoders, the first word when there is none).
FIRST_TOKEN_KINDS = ("cls", "bos", "first_word")
#: ``first_token`` of a probe made from bare token ids (:meth:`ProbeSet.from_tokens` called by
#: an extraction given a token array): what position 0 holds was not said. Not for
#: :func:`build_probe`, which knows it.
UNKNOWN_FIRST_TOKEN = "unknown"

#: Special-token spellings looked up when ``first_token_id`` / ``end_token_id`` are not given.
_FIRST_TOKEN_NAMES = {
    "cls": ("[CLS]", "<s>", "<cls>"),
    "bos": ("<bos>", "<s>", "<|begin_of_text|>", "<|endoftext|>", "<|im_start|>"),
}
_END_TOKEN_NAMES = ("[SEP]", "</s>", "<sep>")

_FORMAT = "lie_stats.probe/1"
_META_FIELDS = ("format", "tokenizer", "text_source", "sha256", "first_token", "shape")


class ProbeError(LieStatsError, ValueError):
    """A probe set (in memory or a ``.npz`` file) is malformed, tampered with, or cannot be built."""


def probe_hash(tokens: np.ndarray) -> str:
    """sha256 of a probe's tokens: their shape, then their bytes as little-endian int64.

    Examples
    --------
    >>> h = probe_hash(np.array([[1, 2, 3]]))
    >>> h == probe_hash(np.array([[1, 2, 3]], dtype=np.int32)), h == probe_hash(np.array([[1, 2, 4]]))
    (True, False)
    >>> probe_hash(np.array([[1, 2], [3, 4]])) == probe_hash(np.array([[1, 2, 3, 4]]))
    False
    """
    arr = np.ascontiguousarray(np.asarray(tokens), dtype="<i8")
    h = hashlib.sha256()
    h.update(("x".join(str(n) for n in arr.shape) + ":<i8:").encode())
    h.update(arr.tobytes())
    return h.hexdigest()


@dataclass(frozen=True, eq=False)
class ProbeSet:
    """Token sequences for the activation metrics of METRICS.md §7, identified by ``sha256``.

    Attributes
    ----------
    tokens : numpy.ndarray
        ``[n_seq, seq_len]`` int64 token ids; position 0 of each row is the first token.
    tokenizer : str
        Description of the tokenizer (name, vocabulary size, hash of its definition).
    text_source : str
        Where the text came from (file name, sha256 of the text, licence).
    sha256 : str
        :func:`probe_hash` of ``tokens``; checked on construction.
    first_token : str
        What position 0 holds: ``"cls"``, ``"bos"`` or ``"first_word"`` (recorded in the cube),
        or ``"unknown"`` (:data:`UNKNOWN_FIRST_TOKEN`) for bare token ids.

    Raises
    ------
    ProbeError
        ``tokens`` is not a 2-d integer array with at least 2 columns, holds negative ids,
        ``first_token`` is unknown, or ``sha256`` does not match the tokens.

    Examples
    --------
    >>> t = np.array([[101, 7, 8, 9], [101, 5, 6, 7]])
    >>> p = ProbeSet.from_tokens(t, tokenizer="toy", text_source="inline", first_token="cls")
    >>> p.n_seq, p.seq_len, p.sha256[:12]
    (2, 4, '7a9d0062ca0c')
    """

    tokens: np.ndarray
    tokenizer: str
    text_source: str
    sha256: str
    first_token: str

    def __post_init__(self) -> None:
        tokens = np.asarray(self.tokens)
        if tokens.ndim != 2 or not np.issubdtype(tokens.dtype, np.integer):
            raise ProbeError(
                f"Probe tokens must be a 2-d integer array [n_seq, seq_len], got "
                f"{tokens.dtype} of shape {tokens.shape}."
            )
        if tokens.shape[0] < 1 or tokens.shape[1] < 2:
            raise ProbeError(
                f"Probe tokens of shape {tokens.shape}: need at least 1 sequence of at least 2 "
                f"tokens (METRICS.md §7 averages over query positions t >= 1)."
            )
        if tokens.size and int(tokens.min()) < 0:
            raise ProbeError(f"Probe tokens hold a negative id ({int(tokens.min())}).")
        if self.first_token not in FIRST_TOKEN_KINDS + (UNKNOWN_FIRST_TOKEN,):
            raise ProbeError(
                f"first_token={self.first_token!r} is not one of {FIRST_TOKEN_KINDS}."
                f"{did_you_mean(str(self.first_token), FIRST_TOKEN_KINDS)}"
            )
        tokens = np.ascontiguousarray(tokens, dtype=np.int64)
        tokens.setflags(write=False)
        object.__setattr__(self, "tokens", tokens)
        expected = probe_hash(tokens)
        if self.sha256 != expected:
            raise ProbeError(
                f"Probe sha256 {self.sha256!r} does not match its tokens (sha256 {expected!r}): "
                f"the tokens were changed after the hash was taken."
            )

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, ProbeSet):
            return NotImplemented
        return (self.sha256, self.tokenizer, self.text_source, self.first_token) == (
            other.sha256, other.tokenizer, other.text_source, other.first_token)

    def __hash__(self) -> int:
        return hash((self.sha256, self.tokenizer, self.text_source, self.first_token))

    @classmethod
    def from_tokens(cls, tokens: np.ndarray, *, tokenizer: str, text_source: str,
                    first_token: str) -> "ProbeSet":
        """A probe set from a token array, hashing it (:func:`probe_hash`).

        >>> ProbeSet.from_tokens(np.ones((1, 3), int), tokenizer="t", text_source="s",
        ...                      first_token="bos").tokens.dtype
        dtype('int64')
        """
        arr = np.asarray(tokens)
        if arr.ndim != 2 or not np.issubdtype(arr.dtype, np.integer):
            raise ProbeError(
                f"Probe tokens must be a 2-d integer array [n_seq, seq_len], got {arr.dtype} "
                f"of shape {arr.shape}."
            )
        return cls(arr.astype(np.int64), str(tokenizer), str(text_source), probe_hash(arr),
                   first_token)

    @property
    def n_seq(self) -> int:
        """Number of sequences."""
        return int(self.tokens.shape[0])

    @property
    def seq_len(self) -> int:
        """Tokens per sequence."""
        return int(self.tokens.shape[1])

    def metadata(self) -> dict[str, Any]:
        """JSON-serializable record of the probe (what a cube's provenance stores).

        >>> p = ProbeSet.from_tokens(np.ones((2, 3), int), tokenizer="t", text_source="s",
        ...                          first_token="bos")
        >>> sorted(p.metadata())
        ['first_token', 'format', 'sha256', 'shape', 'text_source', 'tokenizer']
        """
        return {"format": _FORMAT, "tokenizer": self.tokenizer, "text_source": self.text_source,
                "sha256": self.sha256, "first_token": self.first_token,
                "shape": [self.n_seq, self.seq_len]}


# ----------------------------------------------------------------------------- building
def _raw_tokenizer(tokenizer: Any):
    """A private copy of the ``tokenizers.Tokenizer`` behind ``tokenizer``, padding and truncation off."""
    try:
        import tokenizers
    except ImportError as e:  # pragma: no cover - a dev dependency
        raise ProbeError("build_probe needs the `tokenizers` package (pip install tokenizers).") from e
    raw = getattr(tokenizer, "backend_tokenizer", tokenizer)  # transformers' fast tokenizers
    if not isinstance(raw, tokenizers.Tokenizer):
        raise ProbeError(
            f"build_probe needs a `tokenizers.Tokenizer` (or a transformers fast tokenizer), got "
            f"{type(tokenizer).__name__}; load one with tokenizers.Tokenizer.from_file('tokenizer.json')."
        )
    raw = tokenizers.Tokenizer.from_str(raw.to_str())
    raw.no_truncation()  # e.g. MiniLM's tokenizer.json truncates to 128 and pads to 128
    raw.no_padding()
    return raw


def _special_id(raw, kind: str, names: tuple[str, ...], given: int | None) -> int:
    if given is not None:
        if not isinstance(given, (int, np.integer)) or given < 0:
            raise ProbeError(f"{kind} token id must be a non-negative integer, got {given!r}.")
        return int(given)
    for name in names:
        tid = raw.token_to_id(name)
        if tid is not None:
            return int(tid)
    raise ProbeError(
        f"The tokenizer has none of the {kind} tokens {list(names)}; pass its id explicitly "
        f"(or use first_token='first_word')."
    )


def build_probe(text: str, tokenizer: Any, *, n_seq: int, seq_len: int, seed: int,
                first_token: str = "bos", first_token_id: int | None = None,
                end_token_id: int | None = None, tokenizer_name: str | None = None,
                text_source: str = "<text>") -> ProbeSet:
    """Cut a probe set of ``n_seq`` sequences of ``seq_len`` tokens from a text (METRICS.md §7).

    The text is tokenized once without special tokens (padding and truncation switched off on
    a copy of the tokenizer). It is cut into consecutive, non-overlapping windows, each starting
    at the first token of a word (a token whose text is preceded by whitespace or starts the
    text); ``n_seq`` windows are drawn without replacement by
    ``numpy.random.default_rng(seed)`` and kept in text order.

    Parameters
    ----------
    text : str
        The corpus.
    tokenizer : tokenizers.Tokenizer or a transformers fast tokenizer
        The model's tokenizer.
    n_seq, seq_len : int
        Number of sequences and tokens per sequence (special tokens included).
    seed : int
        Chooses the windows.
    first_token : {"cls", "bos", "first_word"}
        ``"cls"``: ``[CLS] words... [SEP]`` (encoders); ``"bos"``: ``<bos> words...``
        (decoders); ``"first_word"``: words only, position 0 is the first word's first token.
    first_token_id, end_token_id : int, optional
        Ids of the special tokens. When omitted: a transformers tokenizer's own
        ``cls_token_id`` / ``bos_token_id`` / ``sep_token_id``; else looked up by name in the
        vocabulary (``[CLS]``/``<s>`` and ``[SEP]``/``</s>`` for ``"cls"``; ``<bos>``, ``<s>``,
        ``<|endoftext|>`` ... for ``"bos"``). ``end_token_id`` is used with ``"cls"`` only.
    tokenizer_name : str, optional
        Recorded description of the tokenizer; default: vocabulary size and the sha256 of its
        JSON definition.
    text_source : str
        Recorded description of the text (file, licence, sha256).

    Returns
    -------
    ProbeSet

    Raises
    ------
    ProbeError
        Unknown ``first_token``, a special token not found, or too little text for
        ``n_seq`` windows.

    Examples
    --------
    >>> from tokenizers import Tokenizer, models, pre_tokenizers
    >>> words = "the cat sat on a mat and then the dog ran off".split()
    >>> tok = Tokenizer(models.WordLevel({w: i + 1 for i, w in enumerate(dict.fromkeys(words))} | {"<s>": 0},
    ...                                  unk_token="<s>"))
    >>> tok.pre_tokenizer = pre_tokenizers.Whitespace()
    >>> p = build_probe(" ".join(words * 4), tok, n_seq=3, seq_len=5, seed=0)
    >>> p.tokens.shape, p.first_token, bool((p.tokens[:, 0] == 0).all())
    ((3, 5), 'bos', True)
    """
    if first_token not in FIRST_TOKEN_KINDS:
        raise ProbeError(
            f"first_token={first_token!r} is not one of {FIRST_TOKEN_KINDS}."
            f"{did_you_mean(str(first_token), FIRST_TOKEN_KINDS)}"
        )
    for name, value in (("n_seq", n_seq), ("seq_len", seq_len)):
        if not isinstance(value, (int, np.integer)) or isinstance(value, bool) or value < 1:
            raise ProbeError(f"{name} must be a positive integer, got {value!r}.")
    if seq_len < 2:
        raise ProbeError(f"seq_len={seq_len}: METRICS.md §7 needs query positions t >= 1.")
    raw = _raw_tokenizer(tokenizer)
    # a transformers tokenizer names its own special tokens: they win over the name lookup
    # (mpnet's vocabulary holds BERT's "[CLS]" beside its real "<s>")
    own = {"cls": "cls_token_id", "bos": "bos_token_id", "end": "sep_token_id"}
    if first_token_id is None and first_token in own:
        first_token_id = getattr(tokenizer, own[first_token], None)
    if end_token_id is None and first_token == "cls":
        end_token_id = getattr(tokenizer, own["end"], None)
    head: list[int] = []
    tail: list[int] = []
    if first_token in ("cls", "bos"):
        head = [_special_id(raw, first_token, _FIRST_TOKEN_NAMES[first_token], first_token_id)]
    if first_token == "cls":
        tail = [_special_id(raw, "end", _END_TOKEN_NAMES, end_token_id)]
    body = seq_len - len(head) - len(tail)
    if body < 1:
        raise ProbeError(f"seq_len={seq_len} leaves no room for text after the special tokens.")
    enc = raw.encode(text, add_special_tokens=False)
    ids = np.asarray(enc.ids, dtype=np.int64)
    starts_ok = np.array([s == 0 or text[s - 1].isspace() for s, _ in enc.offsets], dtype=bool)
    word_starts = np.flatnonzero(starts_ok)
    windows: list[int] = []
    pos = 0
    for s in word_starts:  # greedy: each window starts at the first word start after the last one
        if s >= pos and s + body <= len(ids):
            windows.append(int(s))
            pos = s + body
    if len(windows) < n_seq:
        raise ProbeError(
            f"The text gives {len(windows)} non-overlapping windows of {body} tokens "
            f"({len(ids)} tokens in all); n_seq={n_seq} asked for. Use more text or shorter sequences."
        )
    rng = np.random.default_rng(seed)
    chosen = np.sort(rng.choice(len(windows), size=n_seq, replace=False))
    rows = [head + ids[windows[i]:windows[i] + body].tolist() + tail for i in chosen]
    if tokenizer_name is None:
        digest = text_sha256(raw.to_str())[:16]
        tokenizer_name = f"tokenizers.Tokenizer(vocab={raw.get_vocab_size()}, sha256:{digest})"
    return ProbeSet.from_tokens(np.array(rows, dtype=np.int64), tokenizer=tokenizer_name,
                                text_source=text_source, first_token=first_token)


def folder_tokenizer(folder: str | os.PathLike) -> tuple[dict, Any]:
    """A checkpoint folder's ``config.json`` (a dict, read with the bounds of
    :func:`lie_stats._io.read_json`) and its ``tokenizer.json`` (a ``tokenizers.Tokenizer``).

    Raises
    ------
    CheckpointError
        The folder, or either file, is missing or unreadable (the message names the file).
    """
    import tokenizers

    from .._io import path_problem, read_json

    folder = pathlib.Path(folder)
    if not folder.is_dir():
        what = "is not a folder" if folder.exists() else "does not exist"
        raise CheckpointError(f"{folder}: the checkpoint folder {what}; expected a folder with "
                              f"config.json, the weights and tokenizer.json.")
    cfg_path, tok_path = folder / "config.json", folder / "tokenizer.json"
    for path in (cfg_path, tok_path):
        if not path.exists():
            raise CheckpointError(f"{path}: missing; the probe is tokenized with the checkpoint "
                                  f"folder's own {path.name}, and config.json names the model.")
    cfg = read_json(cfg_path, error=CheckpointError, what="a JSON object (the model's configuration)")
    if not isinstance(cfg, dict):
        raise CheckpointError(f"{cfg_path}: expected a JSON object, got {type(cfg).__name__}.")
    problem = path_problem(tok_path)
    if problem is not None:
        raise CheckpointError(f"{tok_path}: {problem}; expected the tokenizer (tokenizers JSON).")
    try:
        return cfg, tokenizers.Tokenizer.from_file(str(tok_path))
    except Exception as e:  # noqa: BLE001 - the Rust library's errors, re-raised with the file named
        raise CheckpointError(f"{tok_path}: cannot load the tokenizer ({type(e).__name__}: "
                              f"{str(e)[:200]}); expected a tokenizers JSON file.") from None


def text_probe(folder: str | os.PathLike, text: str | os.PathLike, *, first_token: str = "bos",
               n_seq: int = 64, seq_len: int = 128, seed: int = 0,
               loaded: tuple[dict, Any] | None = None) -> ProbeSet:
    """A probe set cut from a text file with a checkpoint folder's own tokenizer (METRICS.md §7).

    The text is read as UTF-8 and its lines starting with ``===`` (source headers) are dropped,
    then cut by :func:`build_probe` with the folder's ``tokenizer.json``. For
    ``first_token="bos"`` position 0 is ``config.json``'s ``bos_token_id`` when it has one;
    otherwise (and for ``"cls"``) the special token is looked up by name. ``text_source``
    records the file's name and the first 16 hex digits of its sha256. What ``lie-stats
    sinks`` runs before :func:`lie_stats.extraction.activations.activation_metrics`. ``loaded``: the
    folder's :func:`folder_tokenizer`, when the caller has read it already.

    Raises
    ------
    CheckpointError
        The folder, its ``config.json`` or its ``tokenizer.json`` is missing or unreadable.
    ProbeError
        The text file is missing, not UTF-8, or too short for the probe asked (the message
        names it).

    Examples
    --------
    >>> import tempfile, tokenizers
    >>> from tokenizers import models, pre_tokenizers
    >>> d = pathlib.Path(tempfile.mkdtemp())
    >>> _ = (d / "config.json").write_text(json.dumps({"model_type": "gpt2", "bos_token_id": 0}))
    >>> tok = tokenizers.Tokenizer(models.WordLevel({"<bos>": 0, "<unk>": 1, "a": 2, "b": 3}, unk_token="<unk>"))
    >>> tok.pre_tokenizer = pre_tokenizers.WhitespaceSplit()
    >>> tok.save(str(d / "tokenizer.json"))
    >>> _ = (d / "t.txt").write_text("=== a header\\n" + "a b " * 50)
    >>> p = text_probe(d, d / "t.txt", n_seq=3, seq_len=5)
    >>> p.tokens.shape, p.tokens[:, 0].tolist(), p.text_source
    ((3, 5), [0, 0, 0], 't.txt (sha256:...)')
    """
    from .._io import path_problem

    cfg, tok = loaded if loaded is not None else folder_tokenizer(folder)
    text_path = pathlib.Path(text)
    expected = "expected a UTF-8 text file (--text)"
    problem = path_problem(text_path)
    if problem is not None:
        raise ProbeError(f"{text_path}: {problem}; {expected}.")
    try:
        raw = text_path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise ProbeError(f"{text_path}: the text file does not exist; {expected}.") from None
    except UnicodeDecodeError as e:
        raise ProbeError(f"{text_path}: not UTF-8 (byte {e.start}: {e.reason}); {expected}.") from None
    except OSError as e:
        raise ProbeError(f"{text_path}: cannot read it ({e.strerror}); {expected}.") from None
    body = "\n".join(line for line in raw.splitlines() if not line.startswith("==="))
    first_id = cfg.get("bos_token_id") if first_token == "bos" else None
    if first_id is not None and (isinstance(first_id, bool) or not isinstance(first_id, int)):
        raise CheckpointError(f"{pathlib.Path(folder) / 'config.json'}: field 'bos_token_id' is "
                              f"{str(first_id)[:40]!r}; expected an integer token id.")
    try:
        return build_probe(body, tok, n_seq=n_seq, seq_len=seq_len, seed=seed, first_token=first_token,
                           first_token_id=first_id,
                           text_source=f"{text_path.name} (sha256:{text_sha256(raw)[:16]})")
    except ProbeError as e:  # too little text, a special token the vocabulary lacks
        raise ProbeError(f"{text_path} (tokenized with {pathlib.Path(folder) / 'tokenizer.json'}): {e}") from None


# ----------------------------------------------------------------------------- files
def _one_probe(probe: Any) -> Any:
    """A probe file as a path string; a ProbeSet as is; token ids (a 2-d integer numpy array
    or torch tensor) as a ProbeSet; anything else None (not a probe)."""
    if isinstance(probe, (str, os.PathLike)):
        return os.fspath(probe)
    if isinstance(probe, ProbeSet):
        return probe
    if isinstance(probe, np.ndarray) or type(probe).__module__.startswith("torch"):
        arr = probe.detach().cpu().numpy() if hasattr(probe, "detach") else np.asarray(probe)
        return ProbeSet.from_tokens(arr, tokenizer="unknown (token ids given in memory)",
                                    text_source="unknown (token ids given in memory)",
                                    first_token=UNKNOWN_FIRST_TOKEN)
    return None


def probe_option(probe: Any) -> Any:
    """An extraction's ``probe`` option, normalized (:class:`lie_stats.extraction.pipeline.ExtractOptions`):
    ``None``; a file (a path string); a :class:`ProbeSet`, or token ids (a 2-d integer numpy
    array or torch tensor, made a ProbeSet whose tokenizer, text source and first token are
    "unknown"); or a per-model mapping / pairs -> sorted ``(model, file or ProbeSet)`` pairs.

    Raises
    ------
    ValueError
        Not one of those; a model given two probes; an empty mapping.

    Examples
    --------
    >>> probe_option({"b": "pb.npz", "a": "pa.npz"})
    (('a', 'pa.npz'), ('b', 'pb.npz'))
    >>> probe_option(np.array([[5, 6, 7]])).first_token
    'unknown'
    """
    if probe is None:
        return None
    single = _one_probe(probe)
    if single is not None:
        return single
    items = list(probe.items()) if isinstance(probe, dict) else list(probe)
    pairs: dict[str, Any] = {}
    for item in items:
        value = _one_probe(item[1]) if isinstance(item, (tuple, list)) and len(item) == 2 else None
        if not (value is not None and isinstance(item[0], str) and item[0]):
            raise ValueError(
                f"probe={probe!r}: expected a probe file, a ProbeSet or token ids, or "
                f"{{model: probe}} / (model, probe) pairs."
            )
        if item[0] in pairs:
            raise ValueError(f"probe: model {item[0]!r} is given two probes ({pairs[item[0]]}, {item[1]}).")
        pairs[item[0]] = value
    if not pairs:
        raise ValueError("probe: an empty per-model mapping; give a probe file or {model: file}.")
    return tuple(sorted(pairs.items()))



def save_probe(probe: ProbeSet, path: str | os.PathLike) -> pathlib.Path:
    """Write a probe set to ``path`` (``.npz``: ``tokens`` int64 and ``meta``, a JSON string),
    atomically (:func:`lie_stats._io.atomic_write`: an earlier file survives a failed write).

    Examples
    --------
    >>> import tempfile
    >>> p = ProbeSet.from_tokens(np.arange(6).reshape(2, 3), tokenizer="t", text_source="s",
    ...                          first_token="bos")
    >>> f = save_probe(p, pathlib.Path(tempfile.mkdtemp()) / "probe.npz")
    >>> load_probe(f) == p
    True
    """
    if not isinstance(probe, ProbeSet):
        raise ProbeError(f"save_probe needs a ProbeSet, got {type(probe).__name__}.")
    path = pathlib.Path(path)
    if path.suffix != ".npz":
        raise ProbeError(f"{path}: probe files end in .npz.")
    meta = json.dumps(probe.metadata(), sort_keys=True)

    def write(tmp: pathlib.Path) -> None:
        with open(tmp, "wb") as fh:  # a file object: np.savez would add ".npz" to a name
            np.savez(fh, tokens=probe.tokens, meta=np.array(meta))

    return atomic_write(path, write)


def load_probe(path: str | os.PathLike) -> ProbeSet:
    """Read a probe file written by :func:`save_probe`, checking its hash.

    Raises
    ------
    ProbeError
        The file is missing, not an ``.npz`` of the expected two arrays (nothing is
        unpickled), its metadata is incomplete, or the tokens do not match the recorded
        sha256 (the file was altered).
    """
    path = pathlib.Path(path)
    if not path.is_file():
        raise ProbeError(f"{path}: probe file not found.")
    try:
        with np.load(path, allow_pickle=False) as z:
            names = set(z.files)
            if names != {"tokens", "meta"}:
                raise ProbeError(f"{path}: expected arrays 'tokens' and 'meta', found {sorted(names)}.")
            tokens = z["tokens"]
            meta_text = str(z["meta"])
    except ProbeError:
        raise
    except Exception as e:  # zipfile / format errors, pickled objects refused
        raise ProbeError(f"{path}: not a readable probe .npz ({type(e).__name__}: {e}).") from e
    try:
        meta = json.loads(meta_text)
    except json.JSONDecodeError as e:
        raise ProbeError(f"{path}: 'meta' is not JSON ({e}).") from e
    if not isinstance(meta, dict) or set(_META_FIELDS) - set(meta):
        missing = sorted(set(_META_FIELDS) - set(meta)) if isinstance(meta, dict) else list(_META_FIELDS)
        raise ProbeError(f"{path}: 'meta' lacks fields {missing}.")
    if meta["format"] != _FORMAT:
        raise ProbeError(f"{path}: format {meta['format']!r}, expected {_FORMAT!r}.")
    if list(np.shape(tokens)) != list(meta["shape"]):
        raise ProbeError(f"{path}: tokens have shape {list(np.shape(tokens))}, meta records {meta['shape']}.")
    if tokens.dtype != np.int64:
        raise ProbeError(f"{path}: tokens are {tokens.dtype}, expected int64.")
    actual = probe_hash(tokens)
    if actual != meta["sha256"]:
        raise ProbeError(
            f"{path}: tokens hash to sha256 {actual}, but the file records {meta['sha256']}: "
            f"the probe was altered after it was written; rebuild it with build_probe."
        )
    return ProbeSet(tokens, meta["tokenizer"], meta["text_source"], meta["sha256"], meta["first_token"])
