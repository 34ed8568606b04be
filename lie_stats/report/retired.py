"""The report's section of retired pins: results no longer evaluated (a claim now declared out of
scope, a declaration removed) whose pins :mod:`lie_stats.gates` keeps in the registry's section
``retired`` with their last verdict. They are not rows of the report: its counts and tables
hold the results evaluated; this section, after the findings, says what was pinned before.

Every string of an entry comes from the registry file and is escaped for its medium
(:func:`lie_stats._text.md_text`, :func:`lie_stats._text.html_text`).
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from .._text import html_text, md_text
from .text import relative_path

__all__ = ["retired_rows", "retired_section"]

_HEAD = ("result", "last verdict", "gate", "retired on", "why")


def retired_rows(retired: Sequence[Mapping[str, Any]]) -> list[tuple[str, ...]]:
    """One row per retired pin (:data:`_HEAD`'s columns), sorted by key.

    >>> retired_rows([{"key": "B4-pico::pico_pythia", "verdict": "refuted", "gate": "pinned",
    ...                "retired_on": "2026-12-05", "retired_reason": "out of scope: no sinks"}])
    [('B4-pico on pico_pythia', 'refuted', 'pinned', '2026-12-05', 'out of scope: no sinks')]
    """
    rows = []
    for entry in sorted(retired, key=lambda e: str(e.get("key"))):
        ident, _, dataset = str(entry.get("key")).rpartition("::")
        rows.append((f"{ident} on {dataset}", str(entry.get("verdict")), str(entry.get("gate") or "-"),
                     str(entry.get("retired_on")), str(entry.get("retired_reason"))))
    return rows


def retired_section(retired: Sequence[Mapping[str, Any]], base: str | os.PathLike | None = None
                    ) -> tuple[str, str]:
    """The section "Retired pins" as Markdown and as HTML (``("", "")`` when there are none);
    ``base``: the folder the registries are named relative to.

    >>> md, html = retired_section([{"key": "A9::panel", "verdict": "inconclusive", "gate": "pinned",
    ...     "retired_on": "2026-12-05", "retired_reason": "declaration removed <b>", "registry": "v.json"}])
    >>> print(md.splitlines()[-1])
    | A9 on panel | inconclusive | pinned | 2026-12-05 | declaration removed &lt;b&gt; |
    >>> "<td>declaration removed &lt;b&gt;</td>" in html
    True
    """
    if not retired:
        return "", ""
    registries = sorted({relative_path(str(e.get("registry") or ""), Path(base).resolve()) if base
                         else str(e.get("registry") or "") for e in retired} - {""})
    where = ", ".join(registries) or "the registry"
    many = len(retired) != 1
    text = (f"{len(retired)} pin{'s' if many else ''} of {where} {'are' if many else 'is'} retired: their results are no longer evaluated (a claim "
            f"now declared out of scope, or a declaration removed). They are not rows of this report and "
            f"no gate compares with them; each keeps the verdict it had when it was retired.")
    rows = retired_rows(retired)
    md = ["## Retired pins", "", md_text(text), "", "| " + " | ".join(_HEAD) + " |",
          "|" + "---|" * len(_HEAD)]
    md += ["| " + " | ".join(md_text(c) for c in row) + " |" for row in rows]
    html = ["<h2>Retired pins</h2>", f"<p>{html_text(text)}</p>", "<table>",
            "<tr>" + "".join(f"<th>{html_text(h)}</th>" for h in _HEAD) + "</tr>"]
    html += ["<tr>" + "".join(f"<td>{html_text(c)}</td>" for c in row) + "</tr>" for row in rows]
    html.append("</table>")
    return "\n".join(md) + "\n", "\n".join(html)
