"""Strings from files are data wherever they are shown, and paths built from them stay inside
their folders.

One hostile project is built once (tmp folder): a dataset card's title, build command and
cube file name, a second card's build command (quoted by the skip reason of its absent
cube), a cube's model name and family label, and a hypothesis module's claim, source, notes
and ids all carry a newline with a forged line, ``<script>``, a ``](javascript:...)`` link,
an ANSI colour, table pipes, backticks, a ``$...$`` that matplotlib would parse as mathtext
and a long run of characters; one id also climbs out with ``../`` and one is absolute, and
two specs select a family the cube lacks (one as its selection, one as a choice of its
specification curve), so that the family labels reach a reason. Then every writer runs on it
as a user runs it: ``lie-stats run`` as a process (console, report.md, report.html,
results.json), ``export``, ``datasets``, ``info``, ``kinds`` (a kind registered with a
hostile description), ``diagnose``, ``extract`` of a run folder with a hostile name (its
failure log), and the results.json consumers (the verdict table, a failure's row text).

:func:`test_every_output_shows_hostile_strings_as_data` checks each output by the rules of
its medium (terminal, log, Markdown, HTML); :func:`test_no_writer_leaves_its_folder` checks that
nothing was written outside the folders the user named.
"""

from __future__ import annotations

import contextlib
import io
import json
import logging
import re
from html.parser import HTMLParser
from pathlib import Path

import numpy as np
import pytest

from lie_stats import cli, cube
from lie_stats._io import inside
from lie_stats.errors import LieStatsError
from lie_stats.report import result_row_text, verdict_table

from .._checkpoints import make_run
from .._spec_cubes import synth_cube
from ._run_helpers import lie

FORGED = "valid: yes (forged)"
#: What every hostile string carries (file names: the same without "/" and "\\").
EVIL = (f"\n  {FORGED}\n<script>alert(1)</script> <img src=x onerror=alert(2)> [a](javascript:alert(3)) "
        f"\x1b[31mred\x1b[0m\x1b]0;title\x07 | `tick` | \u202e $\\undefinedcmd$ ")
EVIL_FILE = EVIL.replace("</script>", "<-script>").replace("\\", "")  # netCDF-C cannot open a path with "\\"
LONG = "L" * 300

MODULE = """
from lie_stats.spec import HypothesisSpec, Prediction, Select
FAST = {{"n_perm": 99, "n_boot": 20}}
EVIL = {evil!r}
ROLES = {{"x": Select("value_norm"), "y": Select("change_from_init")}}
X1 = HypothesisSpec(id="X1", claim="claim" + EVIL, source="source" + EVIL, notes="notes" + EVIL + {long!r},
                    datasets=("hostile", "absent"), test="correlation", selection=ROLES, params=FAST,
                    prediction=Prediction("negative"), gate="report")
X2 = HypothesisSpec(id="X2/../../../escape" + EVIL + {long!r}, claim="claim" + EVIL, source="s",
                    datasets=("hostile",), test="correlation", selection=ROLES, params=FAST,
                    prediction=Prediction("negative"), gate="report")
X3 = HypothesisSpec(id="/abs/X3", claim="claim" + EVIL, source="s", datasets=("hostile",),
                    test="correlation", params=FAST, prediction=Prediction("negative"), gate="report",
                    selection={{"x": Select("killing_self", family="V", projection="none"),
                                "y": Select("change_from_init")}})
X4 = HypothesisSpec(id="X4", claim="claim", source="s", datasets=("hostile",), test="correlation",
                    params=FAST, prediction=Prediction("negative"), gate="report", choices={{"family": ["Q", "V"]}},
                    selection={{"x": Select("killing_self", family="Q", projection="none"),
                                "y": Select("change_from_init")}})
"""


def _build(root: Path) -> dict[str, Path]:
    ds = synth_cube()
    ds = ds.assign_coords(model=np.array(["model" + EVIL], dtype=object),
                          family=np.array(["Q", "K" + EVIL_FILE], dtype=object))
    cards = root / "datasets"
    folder = cards / "hostile"
    folder.mkdir(parents=True)
    cube_file = folder / f"cube{EVIL_FILE}.nc"
    cube.write_cube(ds, cube_file)
    (folder / "dataset.toml").write_text(  # JSON strings are TOML basic strings
        f"name = \"hostile\"\ntitle = {json.dumps('title' + EVIL)}\ncubes = [{json.dumps(cube_file.name)}]\n"
        f"build = {json.dumps('make' + EVIL)}\n", encoding="utf-8")
    (cards / "absent").mkdir()  # its cube is absent: a skip whose reason quotes the build command
    (cards / "absent" / "dataset.toml").write_text(
        f"name = \"absent\"\ntitle = \"absent\"\ncubes = [{json.dumps(f'absent{EVIL_FILE}.nc')}]\n"
        f"build = {json.dumps('build' + EVIL)}\n", encoding="utf-8")
    hyp = root / "hyp"
    hyp.mkdir()
    (hyp / "X_hostile.py").write_text(MODULE.format(evil=EVIL, long=LONG), encoding="utf-8")
    run = root / "runs" / f"run{EVIL_FILE}"
    make_run(run, "gpt2", [0, 10], head=False, n_layers=1)
    (run / "step_10" / "model.safetensors").write_bytes(b"\xff" * 64)  # fails: a FAILED line and a log record
    return {"datasets": cards, "hyp": hyp, "cube": cube_file, "run": run, "work": root / "w"}


def _in_process(argv: list[str], *, stderr: bool = True) -> str:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        cli.main(argv)
    return out.getvalue() + (err.getvalue() if stderr else "")


def _hostile_kind() -> str:
    from lie_stats.spec.registry import register_test

    def decide(result, context):
        return "inconclusive", ""

    name = "hostile_kind"
    register_test(name, lambda data: None, decide, roles=("x",), description="computes" + EVIL,
                  rule="rule" + EVIL)
    return name


@pytest.fixture(scope="module")
def project(tmp_path_factory):
    root = tmp_path_factory.mktemp("hostile")
    p = _build(root)
    before = {q for q in root.rglob("*")}
    w = p["work"]
    outputs: dict[str, tuple[str, str]] = {}
    done = lie("run", p["hyp"], "--datasets", p["datasets"], "--reports", w / "reports", cwd=root)
    assert done.returncode == 1, done.stdout[-3000:] + done.stderr[-3000:]  # X3's selection fails its item
    outputs["run console"] = ("terminal", done.stdout + done.stderr)
    reports = w / "reports"
    outputs["report.md"] = ("markdown", (reports / "report.md").read_text(encoding="utf-8"))
    outputs["report.html"] = ("html", (reports / "report.html").read_text(encoding="utf-8"))
    records = json.loads((reports / "results.json").read_text(encoding="utf-8"))
    outputs["results.json: verdict table"] = ("terminal", verdict_table(records))
    outputs["results.json: row text"] = ("terminal", "\n".join(result_row_text(r) for r in records))
    outputs["export"] = ("terminal", _in_process(["export", str(p["hyp"]), "--datasets", str(p["datasets"]),
                                                  "-o", str(w / "exports")]))
    outputs["datasets"] = ("terminal", _in_process(["datasets", "--datasets", str(p["datasets"]),
                                                    "--hypotheses", str(p["hyp"])]))
    outputs["info"] = ("terminal", _in_process(["info", str(p["cube"])]))
    log = io.StringIO()
    handler = logging.StreamHandler(log)
    handler.setFormatter(logging.Formatter("%(levelname)s %(name)s %(message)s"))
    logging.getLogger("lie_stats").addHandler(handler)
    try:
        extracted = w / "extracted.nc"
        outputs["extract console"] = ("terminal", _in_process(["extract", str(p["run"]), "-o", str(extracted),
                                                               "--families", "Q", "--quiet"]))
    finally:
        logging.getLogger("lie_stats").removeHandler(handler)
    outputs["extract log"] = ("log", log.getvalue())
    outputs["info of the extracted cube"] = ("terminal", _in_process(["info", str(extracted)]))
    name = _hostile_kind()
    try:
        outputs["kinds"] = ("terminal", _in_process(["kinds", name]))
    finally:
        from lie_stats.spec.registry import unregister_test

        unregister_test(name)
    outputs["kinds, unknown name"] = ("terminal", _in_process(["kinds", "kind" + EVIL]))
    outputs["diagnose"] = ("terminal", _in_process(["diagnose", str(p["hyp"]), "--datasets", str(p["datasets"]),
                                                    "--n-sims", "2"], stderr=False))  # not tqdm's \r
    after = {q for q in root.rglob("*")}
    return {"outputs": outputs, "paths": p, "written": sorted(after - before), "root": root}


OUTPUTS = ["run console", "report.md", "report.html", "results.json: verdict table",
           "results.json: row text", "export", "datasets", "info", "extract console", "extract log",
           "info of the extracted cube", "kinds", "kinds, unknown name", "diagnose"]


def _unescaped_pipes(line: str) -> int:
    """The pipes of a Markdown table line that split cells (not preceded by an odd number of
    backslashes)."""
    return sum(1 for m in re.finditer(r"(\\*)\|", line) if len(m.group(1)) % 2 == 0)


class _Tags(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.tags: list[tuple[str, dict]] = []

    def handle_starttag(self, tag, attrs):
        self.tags.append((tag, dict(attrs)))


def _check_targets(tags: list[tuple[str, dict]]) -> None:
    for tag, attrs in tags:
        assert not [k for k in attrs if k.startswith("on")], (tag, attrs)
        for key in ("href", "src"):
            if key in attrs:
                value = attrs[key]
                assert value.startswith("#") or re.fullmatch(r"figures/[A-Za-z0-9._-]+\.png", value), (tag, attrs)


@pytest.mark.parametrize("output", OUTPUTS)
def test_every_output_shows_hostile_strings_as_data(project, output):
    medium, text = project["outputs"][output]
    # the hostile strings reached this output (else the check below proves nothing) ...
    assert FORGED in text, f"{output}: no hostile string was shown:\n{text[:2000]}"
    # ... and forged no line of their own (in HTML a line break is a space), drove no terminal
    if medium != "html":
        assert not [line for line in text.splitlines() if line.lstrip().startswith(FORGED)], text
    bad = sorted({repr(ch) for ch in text if not ch.isprintable() and ch != "\n"})
    assert bad == [], f"{output}: control characters got through: {bad}"
    if medium == "log":
        records = [line for line in text.splitlines() if line.startswith(("ERROR ", "WARNING ", "INFO "))]
        assert records and len(records) == len(text.splitlines()), text  # one record, one line
    if medium == "markdown":
        assert not re.search(r"<[A-Za-z!/]", text)  # no tag of any kind
        assert "&lt;script&gt;" in text and "\\[a\\](javascript:alert(3))" in text
        lines = text.splitlines()
        for i, line in enumerate(lines):  # every table row has its header's cells
            if line.startswith("|") and (i == 0 or not lines[i - 1].startswith("|")):
                width = _unescaped_pipes(line)
                j = i
                while j < len(lines) and lines[j].startswith("|"):
                    assert _unescaped_pipes(lines[j]) == width, lines[j]
                    j += 1
        from markdown_it import MarkdownIt

        rendered = MarkdownIt("commonmark").enable("table").render(text)
        tags = _Tags()
        tags.feed(rendered)
        assert not [t for t, _ in tags.tags if t in ("script", "iframe", "object", "embed", "b")]
        _check_targets(tags.tags)
        assert [a for t, a in tags.tags if t == "img"], "the figures are still linked"
    if medium == "html":
        tags = _Tags()
        tags.feed(text)
        assert [t for t, _ in tags.tags].count("script") == 1  # the page's own
        _check_targets(tags.tags)
        assert "&lt;script&gt;alert(1)&lt;/script&gt;" in text


def test_the_terminal_table_cuts_long_cells(project):
    """A hostile id is cut at 60 characters and wraps within its column, each continuation
    line marked, in a table of at most 100 columns."""
    _, table = project["outputs"]["results.json: verdict table"]
    lines = table.splitlines()
    start = next(k for k, line in enumerate(lines) if line.startswith("X2/"))
    parts = [line.split("  ")[0] for line in lines[start:start + 3]]
    assert all(p.startswith("..") for p in parts[1:]), parts  # continuation lines, marked
    # the cell cut at 60 characters ("..." at the cut), wrapped where it had spaces
    assert parts[0] + "".join(p[2:] for p in parts[1:]) == "X2/../../../escape\\nvalid: yes (forged)\\n<script>alert(...", parts
    assert max(len(line) for line in lines) <= 100
    assert not re.search("L{61}", table) and not re.search("L{61}", table.replace("\n..", ""))


def test_no_writer_leaves_its_folder(project):
    """The ids ``X2/../../../escape...`` and ``/abs/X3``, the names with newlines and markup:
    every file written lies in a folder the user named (the reports, the export, the cube and
    its shard store, the diagnosis cache beside the modules), and the one file beside the
    reports folder is its lock (``lie-stats run`` ran in ``root``: no ``.pytest_cache`` there)."""
    root, w = project["root"], project["paths"]["work"]
    allowed = [w / "reports", w / "exports", project["paths"]["hyp"] / "diagnosis.json"]
    beside = {w / ".reports.lock", w / "extracted.nc", w / "extracted.nc.shards", w, w / "reports", w / "exports"}
    stray = [p for p in project["written"]
             if p not in beside and not any(p == a or a in p.parents for a in allowed)
             and (w / "extracted.nc.shards") not in p.parents]
    assert stray == [], stray
    assert not [p for p in root.rglob("*escape*") if (w / "reports") not in p.parents and (w / "exports") not in p.parents]
    assert not Path("/abs").exists()
    figures = sorted(p.name for p in (w / "reports" / "figures").iterdir())
    assert any(n.startswith("X2_.._.._.._escape") for n in figures), figures  # drawn, inside
    exports = json.loads((w / "exports" / "index.json").read_text())["exports"]
    assert [Path(e["file"]).name == e["file"] for e in exports if e["file"]] == [True, True, True]  # X1, X2, X4


@pytest.mark.parametrize("parts", [("../x.png",), ("figures", "../../x.png"), ("/etc/x.png",), ("a\0b",), ("",)])
def test_the_one_path_helper_refuses_what_leaves_the_folder(tmp_path, parts):
    with pytest.raises(LieStatsError, match="folder"):
        inside(tmp_path / "reports", *parts, what="figure")
    (tmp_path / "reports").mkdir()
    (tmp_path / "reports" / "link").symlink_to(tmp_path)  # a link out of the folder counts as out
    with pytest.raises(LieStatsError):
        inside(tmp_path / "reports", "link", "x.png")
    assert inside(tmp_path / "reports", "figures", "a/../b.png") == tmp_path / "reports" / "figures" / "a/../b.png"


def test_a_report_section_cannot_draw_outside_the_reports_folder(tmp_path):
    """A section's image path comes from a claim module's text: it goes through the helper too."""
    from lie_stats import report
    from lie_stats.spec import Result

    def section(results, reports_dir, datasets_dir):
        return "## S\n\n![S](../outside.png)\n[x](javascript:alert(1))\n"

    r = Result(id="S1", claim="c", source="s", dataset="toy", verdict="skipped", reason="r",
               gate="report", test="correlation", spec_hash="0" * 64, reference={})
    with pytest.raises(LieStatsError, match="outside.png' leaves its folder"):
        report.write_reports([r], tmp_path / "rep", datasets_dir=tmp_path,
                             sections=[report.ReportSection("S", section)])
    assert not (tmp_path / "rep").exists()  # nothing half-written

    def inert(results, reports_dir, datasets_dir):
        return "## S\n\n[x](javascript:alert(1)) ![y](data:image/png;base64,AAAA)\n"

    out = report.write_reports([r], tmp_path / "rep", datasets_dir=tmp_path,
                               sections=[report.ReportSection("S", inert)])
    md, html = out["markdown"].read_text(), out["html"].read_text()
    assert "[x](#) ![y](#)" in md and "javascript:" not in md and "data:" not in md
    assert "javascript:" not in html
