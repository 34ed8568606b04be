"""Report sections by hook: sections that read several results together.

A claim whose results only make sense read together (a table across results, a figure
across cubes) registers a section writer with :func:`register_section`, in its own
module under ``hypotheses/``; :func:`lie_stats.report.write_reports` calls it after the
per-result sections. The library itself knows no claim.
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from .text import result_field

__all__ = ["SectionWriter", "register_section", "unregister_section", "report_sections", "write_sections",
           "linked_images"]


#: A section writer: ``writer(results, reports_dir, datasets_dir) -> markdown or None``.
SectionWriter = Callable[[Sequence[Any], Path, Path], "str | None"]
_SECTIONS: dict[str, tuple[Callable[[Any], bool], SectionWriter]] = {}


def register_section(match: str | Callable[[Any], bool], writer: SectionWriter, *,
                     name: str | None = None) -> str:
    """Add a section to the reports: one that reads several results together.

    After the per-result figures, :func:`write_reports` calls ``writer(results, reports_dir,
    datasets_dir)`` when at least one result matches; the writer draws its figures under
    ``reports_dir`` (the staging folder the whole report is written into before it replaces
    the reports folder: write only below it) and returns the section's Markdown (headings, pipe tables, images,
    paragraphs; the HTML report renders the same subset), or ``None`` for no section. The
    Markdown is the writer's own: a string it quotes from a result or a cube (a name, a
    reason) goes through :func:`lie_stats.report.md_text`; every link's target is made inert
    unless it is a relative path or an http(s) address, and an image that is not inside the
    reports folder stops the report with an error naming the section.
    Sections follow the per-result sections in the order registered. They are written
    with the figures (``figures=True``) when ``datasets_dir`` is given. A claim's module
    registers its section when imported; registering a name again replaces the earlier
    writer (a module imported twice adds its section once).

    Parameters
    ----------
    match : str or callable
        An id prefix (a result matches when its id starts with it), or a predicate on one
        result (a :class:`~lie_stats.spec.Result`).
    writer : callable
        ``(results, reports_dir, datasets_dir) -> str | None``; ``results`` are every result
        of the report, sorted by id and dataset.
    name : str, optional
        The section's name (default: the prefix, or the writer's qualified name); the key
        of its figure in :func:`write_reports`' return value.

    Returns
    -------
    str
        The name (for :func:`unregister_section`).

    Examples
    --------
    >>> import tempfile
    >>> from lie_stats.report import write_reports
    >>> from lie_stats.spec import Result
    >>> def count(results, reports_dir, datasets_dir):
    ...     return f"## Toy claims\\n\\n{sum(r.id.startswith('T') for r in results)} result(s)\\n"
    >>> register_section("T", count)
    'T'
    >>> r = Result(id="T1", claim="c", source="s", dataset="toy", verdict="skipped", reason="none",
    ...            gate="report", test="correlation", spec_hash="0" * 64, reference={})
    >>> out = write_reports([r], tempfile.mkdtemp(), datasets_dir=tempfile.mkdtemp())
    >>> out["markdown"].read_text().splitlines()[-3:]
    ['## Toy claims', '', '1 result(s)']
    >>> unregister_section("T")
    """
    if isinstance(match, str):
        prefix = match
        predicate: Callable[[Any], bool] = lambda r: str(result_field(r, "id", "")).startswith(prefix)  # noqa: E731
        key = name or prefix
    elif callable(match):
        predicate = match
        key = name or getattr(writer, "__qualname__", repr(writer))
    else:
        raise TypeError(f"register_section: match {match!r}: expected an id prefix (str) or a "
                        f"predicate on a result.")
    if not callable(writer):
        raise TypeError(f"register_section {key!r}: writer {writer!r} is not callable; expected "
                        f"writer(results, reports_dir, datasets_dir) -> markdown or None.")
    _SECTIONS[key] = (predicate, writer)
    return key


def unregister_section(name: str) -> None:
    """Remove a section added by :func:`register_section` (nothing when absent)."""
    _SECTIONS.pop(name, None)


def report_sections() -> tuple[str, ...]:
    """The names of the registered sections, in the order they are written.

    Examples
    --------
    >>> isinstance(report_sections(), tuple)
    True
    """
    return tuple(_SECTIONS)


def write_sections(results: Sequence[Any], reports_dir: Path, datasets_dir: str | os.PathLike
                    ) -> list[tuple[str, str]]:
    """The Markdown of each registered section some result matches: ``(name, markdown)``
    pairs in the order registered (the writers draw their figures)."""
    out = []
    for name, (predicate, writer) in list(_SECTIONS.items()):
        if not any(predicate(r) for r in results):
            continue
        section = writer(results, reports_dir, Path(datasets_dir))
        if section is not None:
            out.append((name, section))
    return out


_IMAGE = re.compile(r"!\[[^\]]*\]\(([^)\s]+)\)")


def linked_images(markdown: str) -> list[str]:
    """The image paths a section's Markdown links (``![alt](path)``), in order.

    >>> linked_images("text\\n![A](figures/a.png)\\n![B](figures/b.png)")
    ['figures/a.png', 'figures/b.png']
    """
    return _IMAGE.findall(markdown)
