"""The report documents from their templates (``templates/report.html.j2`` and
``templates/report.md.j2``, jinja2).

Every value a template prints goes through the escaping function of its medium
(:mod:`lie_stats._text`), as the engine's ``finalize``: :func:`~lie_stats._text.html_text`
in HTML (autoescape stays on beneath it), :func:`~lie_stats._text.md_text` in Markdown, so a
string of a results row, a dataset card or a file name shows as text. A link's or an
image's target goes through the ``link`` filter (:func:`~lie_stats._text.md_link_target`,
:func:`~lie_stats._text.html_link_target`): a relative path or an http(s) address, else
``#``. Only the Markdown of registered sections (written by the claims' own modules and
already meant as Markdown, their link targets made inert by
``lie_stats.report._inert_link_targets``) and, in HTML, their rendering by
``lie_stats.report._markdown_to_html`` pass as they are.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from functools import lru_cache
from pathlib import Path
from typing import Any

from .._text import html_link_target, html_text, md_link_target, md_text
from .view import GATE_LEGEND, P_LEGEND, VERDICT_ORDER, change_views, claim_views, summary_counts

__all__ = ["render_html", "render_markdown", "TEMPLATES"]

#: The folder of the report templates.
TEMPLATES = Path(__file__).resolve().parent / "templates"


def _verdict_class(verdict: str) -> str:
    return f"v-{verdict}" if verdict in VERDICT_ORDER else "v-other"


@lru_cache(maxsize=2)
def _environment(kind: str) -> Any:
    import jinja2
    from markupsafe import Markup

    escape, target = (html_text, html_link_target) if kind == "html" else (md_text, md_link_target)

    def finalize(value: Any) -> Any:
        return value if isinstance(value, Markup) else Markup(escape(value))

    env = jinja2.Environment(loader=jinja2.FileSystemLoader(TEMPLATES), autoescape=kind == "html",
                             undefined=jinja2.StrictUndefined, keep_trailing_newline=True,
                             finalize=finalize)
    env.filters["link"] = lambda value: Markup(target(value))
    env.globals["verdict_class"] = _verdict_class
    return env


def _context(records: Sequence[Mapping[str, Any]], data: Sequence[Sequence[str]],
             magnitude_figure: str | None) -> dict[str, Any]:
    return {"counts": summary_counts(records), "claims": claim_views(records), "data": list(data),
            "changes": change_views(records),
            "magnitude_figure": magnitude_figure, "p_legend": P_LEGEND, "gate_legend": GATE_LEGEND}


def render_markdown(records: Sequence[Mapping[str, Any]], data: Sequence[Sequence[str]] = (),
                    extra: Sequence[str] = (), *, magnitude_figure: str | None = None) -> str:
    """``report.md``: the summary by claim, the legend, the cross-claim figure, the data,
    one section per claim with each result's details, then the registered sections."""
    from markupsafe import Markup

    text = _environment("md").get_template("report.md.j2").render(
        **_context(records, data, magnitude_figure), extra=[Markup(s.rstrip("\n")) for s in extra])
    return text.rstrip() + "\n"


def render_html(records: Sequence[Mapping[str, Any]], data: Sequence[Sequence[str]] = (),
                extra_html: Sequence[str] = (), *, magnitude_figure: str | None = None) -> str:
    """``report.html``: as :func:`render_markdown`, with coloured verdict badges, links
    and each result's details collapsed; ``extra_html`` is the registered sections'
    Markdown already rendered as HTML."""
    from markupsafe import Markup

    text = _environment("html").get_template("report.html.j2").render(
        **_context(records, data, magnitude_figure), extra=[Markup(s) for s in extra_html])
    return text.rstrip() + "\n"
