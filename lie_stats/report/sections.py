"""Report sections: sections that read several results together.

A claim whose results only make sense read together (a table across results, a figure
across cubes) declares a :class:`ReportSection` in its own module under ``hypotheses/``, in
the module's ``REPORT_SECTIONS`` (:data:`SECTIONS_ATTR`). Nothing is registered by importing
a module: the run's engine reads ``REPORT_SECTIONS`` of each module it collects
(:meth:`lie_stats.engine.Engine.collected`) and hands the sections to
:func:`lie_stats.report.write_reports`, which calls them after the per-result sections.
The library itself knows no claim.
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..errors import SpecError
from .text import result_field

__all__ = ["SectionWriter", "ReportSection", "SECTIONS_ATTR", "sections_of", "write_sections",
           "linked_images"]

#: The module attribute that holds a hypothesis module's report sections.
SECTIONS_ATTR = "REPORT_SECTIONS"

#: A section writer: ``writer(results, reports_dir, datasets_dir) -> markdown or None``.
SectionWriter = Callable[[Sequence[Any], Path, Path], "str | None"]


@dataclass(frozen=True)
class ReportSection:
    """A section of the reports that reads several results together.

    After the per-result figures, :func:`~lie_stats.report.write_reports` calls ``writer(results,
    reports_dir, datasets_dir)`` when at least one result matches; the writer draws its figures
    under ``reports_dir`` (the staging folder the whole report is written into before it
    replaces the reports folder: write only below it) and returns the section's Markdown
    (headings, pipe tables, images, paragraphs; the HTML report renders the same subset), or
    ``None`` for no section. The Markdown is the writer's own: a string it quotes from a
    result or a cube (a name, a reason) goes through :func:`lie_stats.report.md_text`; every
    link's target is made inert unless it is a relative path or an http(s) address, and an
    image that is not inside the reports folder stops the report with an error naming the
    section. Sections are written with the figures (``figures=True``) when ``datasets_dir``
    is given, in the order the run collected them.

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
        of its figure in :func:`~lie_stats.report.write_reports`' return value.

    Examples
    --------
    >>> import tempfile
    >>> from lie_stats.report import write_reports
    >>> from lie_stats.spec import Result
    >>> def count(results, reports_dir, datasets_dir):
    ...     return f"## Toy claims\\n\\n{sum(r.id.startswith('T') for r in results)} result(s)\\n"
    >>> toy = ReportSection("T", count)
    >>> toy.name
    'T'
    >>> r = Result(id="T1", claim="c", source="s", dataset="toy", verdict="skipped", reason="none",
    ...            gate="report", test="correlation", spec_hash="0" * 64, reference={})
    >>> out = write_reports([r], tempfile.mkdtemp(), datasets_dir=tempfile.mkdtemp(), sections=[toy])
    >>> out["markdown"].read_text().splitlines()[-3:]
    ['## Toy claims', '', '1 result(s)']
    """

    match: str | Callable[[Any], bool]
    writer: SectionWriter
    name: str = ""

    def __post_init__(self) -> None:
        if isinstance(self.match, str):
            default = self.match
        elif callable(self.match):
            default = getattr(self.writer, "__qualname__", repr(self.writer))
        else:
            raise TypeError(f"ReportSection: match {self.match!r}: expected an id prefix (str) or a "
                            f"predicate on a result.")
        if not callable(self.writer):
            raise TypeError(f"ReportSection {self.name or default!r}: writer {self.writer!r} is not "
                            f"callable; expected writer(results, reports_dir, datasets_dir) -> markdown or None.")
        if not self.name:
            object.__setattr__(self, "name", default)

    def matches(self, result: Any) -> bool:
        """Whether ``result`` is one this section reads."""
        if isinstance(self.match, str):
            return str(result_field(result, "id", "")).startswith(self.match)
        return bool(self.match(result))


def sections_of(value: Any, where: str | os.PathLike) -> tuple[ReportSection, ...]:
    """A module's ``REPORT_SECTIONS`` checked: a sequence of :class:`ReportSection` (``None``
    when the module declares none).

    Raises
    ------
    SpecError
        Anything else, naming the module (``where``) and the attribute.

    Examples
    --------
    >>> sections_of(None, "m.py")
    ()
    >>> sections_of("A10", "m.py")
    Traceback (most recent call last):
    ...
    lie_stats.errors.SpecError: m.py: REPORT_SECTIONS: expected a list or tuple of lie_stats.report.ReportSection, got str.
    """
    if value is None:
        return ()
    if not isinstance(value, (list, tuple)) or not all(isinstance(v, ReportSection) for v in value):
        got = type(value).__name__ if not isinstance(value, (list, tuple)) else \
            ", ".join(sorted({type(v).__name__ for v in value if not isinstance(v, ReportSection)}))
        raise SpecError(f"{where}: {SECTIONS_ATTR}: expected a list or tuple of "
                        f"lie_stats.report.ReportSection, got {got}.")
    return tuple(value)


def write_sections(results: Sequence[Any], reports_dir: Path, datasets_dir: str | os.PathLike,
                   sections: Sequence[ReportSection]) -> list[tuple[str, str]]:
    """The Markdown of each section some result matches: ``(name, markdown)`` pairs in the
    order given (the writers draw their figures)."""
    out = []
    for section in sections:
        if not any(section.matches(r) for r in results):
            continue
        text = section.writer(results, reports_dir, Path(datasets_dir))
        if text is not None:
            out.append((section.name, text))
    return out


_IMAGE = re.compile(r"!\[[^\]]*\]\(([^)\s]+)\)")


def linked_images(markdown: str) -> list[str]:
    """The image paths a section's Markdown links (``![alt](path)``), in order.

    >>> linked_images("text\\n![A](figures/a.png)\\n![B](figures/b.png)")
    ['figures/a.png', 'figures/b.png']
    """
    return _IMAGE.findall(markdown)
