"""Strings read from files, made safe to show: one function per output medium.

A model name, a claim, a note, a dataset card's title, a cube file name, a family label or a
reason is data. Wherever lie_stats shows one, it goes through the function of that medium,
so that it shows as the text it is and cannot add markup, a link, a line or a terminal
command:

=====================  ========================  =================================================
medium                 function                  what cannot pass
=====================  ========================  =================================================
terminal line          :func:`terminal_line`     control characters, ANSI escapes (``\\x1b[31m``),
                                                 bidirectional overrides, newlines: each shown as
                                                 its escape (``\\x1b``, ``\\n``, ``\\u202e``)
terminal table cell    :func:`terminal_cell`     as a line, and longer than the cell's width (cut,
                                                 ``...`` marks the cut)
several lines          :func:`terminal_lines`    a message lie_stats wrote over several lines:
                                                 each line escaped as a terminal line
log line               :func:`log_text`          as a terminal line (a log file is read in a
                                                 terminal, and one record must stay one line)
Markdown               :func:`md_text`           raw HTML, entities, links and images
                                                 (``](``, ``][``, ``]:``), code spans, table
                                                 pipes, line breaks, a block marker (``#``,
                                                 ``>``, ``-``, ``1.``) at the start
Markdown link target   :func:`md_link_target`    any scheme but http(s) (``javascript:``,
                                                 ``data:``), ``//host``: such a target becomes
                                                 ``#``
HTML                   :func:`html_text`         tags, entities, quotes (``html.escape``); control
                                                 characters shown as their escapes
HTML link target       :func:`html_link_target`  as a Markdown link target, then escaped
figure (PNG)           ``PLAIN_TEXT``            mathtext (``$\\frac$``): matplotlib draws every
                       (``report.figures``)      string as plain text
=====================  ========================  =================================================

This module imports only the standard library, so that any module may use it (the layer
table of DESIGN.md).
"""

from __future__ import annotations

import html
import re
from typing import Any
from urllib.parse import quote

__all__ = ["terminal_line", "terminal_cell", "terminal_lines", "log_text", "md_text",
           "md_link_target", "html_text", "html_link_target", "MAX_CELL"]

#: Widest terminal table cell, in characters (:func:`terminal_cell`).
MAX_CELL = 60


def _visible(text: str, keep: str = "") -> str:
    """``text`` with every character ``str.isprintable`` rejects, except those in ``keep``,
    replaced by its Python escape."""
    if text.isprintable():
        return text
    return "".join(ch if ch.isprintable() or ch in keep else ch.encode("unicode_escape").decode("ascii")
                   for ch in text)


def terminal_line(text: Any) -> str:
    """``text`` as one terminal line: every non-printable character shown as its escape, so
    an ANSI escape, a window-title command, a bidirectional override or a newline in a model
    name cannot restyle the screen or forge a line of its own.

    Examples
    --------
    >>> terminal_line("run\\x1b]0;pwned\\x07\\n  valid: yes")
    'run\\\\x1b]0;pwned\\\\x07\\\\n  valid: yes'
    >>> terminal_line("pythia-70m / step 1000 é")
    'pythia-70m / step 1000 é'
    """
    return _visible(str(text))


def terminal_cell(text: Any, width: int = MAX_CELL) -> str:
    """``text`` as a terminal table cell: a :func:`terminal_line` of at most ``width``
    characters (a longer one is cut, ``...`` marking the cut), so one string cannot push the
    table's other columns off the screen.

    >>> terminal_cell("a|b\\x1b[31m\\nc"), terminal_cell("x" * 200, width=10)
    ('a|b\\\\x1b[31m\\\\nc', 'xxxxxxx...')
    """
    line = terminal_line(text)
    return line if len(line) <= width else line[: max(width - 3, 0)] + "..."


def terminal_lines(text: Any) -> str:
    """A message lie_stats wrote over several lines (an error, a description): its line
    breaks kept, each line a :func:`terminal_line`.

    >>> print(terminal_lines("error in x.nc:\\n  model \\x1b[2Jm"))
    error in x.nc:
      model \\x1b[2Jm
    """
    return "\n".join(terminal_line(line) for line in str(text).split("\n"))


def log_text(text: Any) -> str:
    """``text`` as (part of) a log record: a :func:`terminal_line`, so one record stays one
    line of the log and cannot drive the terminal the log is read in.

    >>> log_text("checkpoint m\\n2026-01-01 INFO forged")
    'checkpoint m\\\\n2026-01-01 INFO forged'
    """
    return terminal_line(text)


_MD_SPECIAL = str.maketrans({"\\": "\\\\", "&": "&amp;", "<": "&lt;", ">": "&gt;", "|": "\\|",
                             "`": "\\`", "\n": " ", "\r": " ", "\t": " "})
# a link or an image needs "](" (inline), "][" (reference) or "]:" (a reference's
# definition): in a text holding one, every bracket is escaped (an unescaped "[" could
# still open a link that a "](" the template writes later closes); brackets alone, as in
# the interval "[0.1, 0.5]", are left as they are
_MD_LINK = re.compile(r"\][(\[:]")
_MD_BRACKETS = str.maketrans({"[": "\\[", "]": "\\]"})
# what starts a block when it starts a line: a heading, a quote, a list item, a rule, a
# setext underline, a code fence (backticks are escaped anyway)
_MD_BLOCK = re.compile(r"^(\s*)(#{1,6}(?=\s|$)|[-+*](?=\s)|\d{1,9}[.)](?=\s)|={2,}\s*$|-{2,}\s*$"
                       r"|[*_]{3,}\s*$|~{3,})")


def md_text(text: Any) -> str:
    """``text`` as literal inline Markdown (a paragraph's text or a table cell): raw HTML
    (``<script>``, ``<img onerror>``), entities, links and images (``[x](javascript:...)``),
    code spans and table pipes are escaped, line breaks become spaces, control characters
    show as their escapes, and a block marker at its start is escaped; a string from a file
    shows as the text it is and cannot add markup.

    >>> print(md_text("<script>alert(1)</script> [x](javascript:alert(1)) a|b"))
    &lt;script&gt;alert(1)&lt;/script&gt; \\[x\\](javascript:alert(1)) a\\|b
    >>> print(md_text("# not a heading\\n[r]: javascript:alert(1)"), md_text("[0.1, 0.5]"))
    \\# not a heading \\[r\\]: javascript:alert(1) [0.1, 0.5]
    """
    out = _visible(str(text), keep="\n\r\t").translate(_MD_SPECIAL)
    if _MD_LINK.search(out):
        out = out.translate(_MD_BRACKETS)
    return _MD_BLOCK.sub(_escape_block, out, count=1)


def _escape_block(m: re.Match) -> str:
    marker = m.group(2)
    if marker[0].isdigit():  # "1." or "1)": a backslash escapes punctuation, not a digit
        return f"{m.group(1)}{marker[:-1]}\\{marker[-1]}"
    return f"{m.group(1)}\\{marker}"


_SCHEME = re.compile(r"^([A-Za-z][A-Za-z0-9+.-]*):")


def md_link_target(target: Any) -> str:
    """``target`` as the target of a Markdown link or image: a relative path (``figures/a.png``,
    ``#anchor``) or an ``http(s)`` address, with spaces, brackets, angle brackets and control
    characters percent-encoded; anything else (``javascript:``, ``data:``, ``file:``,
    ``//host``, a backslash path) becomes ``#``, an inert link.

    >>> md_link_target("figures/X1__toy.png"), md_link_target("https://arxiv.org/abs/1 (v2)")
    ('figures/X1__toy.png', 'https://arxiv.org/abs/1%20%28v2%29')
    >>> md_link_target("javascript:alert(1)"), md_link_target(" JavaScript:x"), md_link_target("//evil")
    ('#', '#', '#')
    """
    text = str(target).strip()
    scheme = _SCHEME.match(text)
    if scheme and scheme.group(1).lower() not in ("http", "https"):
        return "#"
    if not scheme and (text.startswith("//") or "\\" in text or ":" in text.split("/", 1)[0]):
        return "#"
    if any(not ch.isprintable() for ch in text):
        return "#"
    return quote(text, safe="/#?&=%.,;:+~@!$*'-_")


def html_text(text: Any) -> str:
    """``text`` as HTML text or an attribute's value: ``html.escape`` (tags, entities,
    both quotes), after control characters are made visible as their escapes (line breaks
    and tabs are HTML whitespace and stay).

    >>> html_text('<img src=x onerror="alert(1)"> \\x1b[31m')
    '&lt;img src=x onerror=&quot;alert(1)&quot;&gt; \\\\x1b[31m'
    """
    return html.escape(_visible(str(text), keep="\n\t"), quote=True)


def html_link_target(target: Any) -> str:
    """``target`` as an ``href`` or ``src`` value: :func:`md_link_target`, then escaped.

    >>> html_link_target("javascript:alert(1)"), html_link_target("figures/a.png?x=1&y=2")
    ('#', 'figures/a.png?x=1&amp;y=2')
    """
    return html.escape(md_link_target(target), quote=True)
