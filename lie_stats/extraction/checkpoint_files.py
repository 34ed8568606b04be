"""What is in a checkpoint or run folder, checked before it is trusted: a safetensors header
bounded in size and nesting before any parser sees it (:func:`check_st_header`); two weight
layouts of one folder (``model.safetensors`` beside ``pytorch_model.bin``) compared tensor by
tensor (:func:`disagreement`), so that an ambiguous folder is refused rather than read
through whichever file is looked for first; entries of a run folder that look like steps but
are not (:func:`left_out`), listed rather than dropped; and why a symbolic link does not lead
where it should (:func:`bad_link`). Used by :mod:`lie_stats.extraction.checkpoint` and :mod:`lie_stats.extraction.sources`.
"""

from __future__ import annotations

import os
import pathlib
import re
from collections.abc import Callable, Iterable

import torch

from .._io import loads_json, path_problem
from ..errors import CheckpointError

__all__ = ["ST_HEADER_MAX", "check_st_header", "layout_kind", "disagreement", "left_out", "bad_link"]

#: Names that look like checkpoint folders of a run (``step_-1``, ``step_abc``) but whose step
#: cannot be parsed: listed as left out (a notice, and the cube's provenance), never silently.
_STEP_LIKE_RE = re.compile(r"^(?:step|checkpoint-|global_step)", re.IGNORECASE)

#: The largest safetensors header read (the format's own readers stop at 100 MB).
ST_HEADER_MAX = 100 * 2**20


def check_st_header(path: pathlib.Path, where: str) -> None:
    """A safetensors file's JSON header, bounded in size and nesting before any parser sees
    it (:func:`lie_stats._io.loads_json`), and a JSON object; else a
    :class:`~lie_stats.errors.CheckpointError` naming ``where``."""
    import struct

    try:
        with open(path, "rb") as fh:
            head = fh.read(8)
            if len(head) < 8:
                raise CheckpointError(f"{where}: not a readable safetensors file ({len(head)} bytes; "
                                      f"expected an 8-byte header length, then a JSON header)")
            (n,) = struct.unpack("<Q", head)
            if n > ST_HEADER_MAX:
                raise CheckpointError(f"{where}: not a readable safetensors file (its header "
                                      f"claims {n} bytes; expected at most {ST_HEADER_MAX})")
            raw = fh.read(n)
    except OSError as e:
        raise CheckpointError(f"{where}: cannot read it ({e.strerror})") from e
    if len(raw) < n:
        raise CheckpointError(f"{where}: not a readable safetensors file (the header claims {n} "
                              f"bytes; the file holds {len(raw)} after the length)")
    header = loads_json(raw.rstrip(b" \x00"), where=where, error=CheckpointError,
                        what="a safetensors header {tensor name: {dtype, shape, data_offsets}}",
                        max_bytes=ST_HEADER_MAX, max_depth=4)
    if not isinstance(header, dict):
        raise CheckpointError(f"{where}: not a readable safetensors file (its header is a JSON "
                              f"{type(header).__name__}; expected an object)")


def layout_kind(layout: str | None) -> str:
    """``"bin"`` for the ``pytorch_model.bin`` layouts, else ``"safetensors"``.

    >>> layout_kind("pytorch_model.bin.index.json"), layout_kind("model.safetensors")
    ('bin', 'safetensors')
    """
    return "bin" if layout is not None and layout.startswith("pytorch_model") else "safetensors"


def disagreement(t: torch.Tensor, other: torch.Tensor, ours: str, theirs: str) -> str | None:
    """How one tensor read through two layouts differs (None when the values agree, whatever
    the stored dtypes).

    >>> disagreement(torch.ones(2), torch.ones(2, dtype=torch.bfloat16), "a", "b") is None
    True
    >>> disagreement(torch.ones(2), torch.zeros(2), "a", "b")
    'values differ by up to 1'
    """
    if other.shape != t.shape:
        return f"shape {tuple(t.shape)} in {ours}, {tuple(other.shape)} in {theirs}"
    a, b = t.to(torch.float64), other.to(torch.float64)
    if not torch.equal(a, b):
        return f"values differ by up to {(a - b).abs().max().item():.3g}"
    return None


def left_out(root: pathlib.Path, parse_step: Callable[[str], int | None],
             entries: Iterable[pathlib.Path]) -> tuple[str, ...]:
    """The entries of run folder ``root`` that look like checkpoint folders but are not taken,
    each with why: a folder whose step is not a non-negative integer (``step_-1``,
    ``step_abc``), or an entry of a step's name (``entries``) that is not a folder."""
    return tuple(sorted(
        [f"{p.name} (not a step number: expected step_N, stepN, checkpoint-N or global_stepN "
         f"with N a non-negative integer)"
         for p in root.iterdir() if parse_step(p.name) is None and _STEP_LIKE_RE.match(p.name)
         and p.is_dir()]
        + [f"{p.name} ({path_problem(p, 'a folder')})" for p in entries if not p.is_dir()]))


def bad_link(path: pathlib.Path, expected: str = "a regular file") -> str:
    """Why a symbolic link does not lead to ``expected`` (loop, dangling, other kind)."""
    try:
        os.stat(path)
    except OSError as e:
        import errno

        if e.errno == errno.ELOOP:
            return f"a symbolic link loop; expected {expected} (or a link to one)"
        return f"a dangling symbolic link to {os.readlink(path)!r}; expected {expected} (or a link to one)"
    return f"a symbolic link to something else; expected {expected}"
