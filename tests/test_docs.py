"""The users' documentation (docs/, mkdocs.yml): it builds, its tutorial runs, its generated
page is current, and every definition the code cites is there.

- the site builds with ``mkdocs build --strict`` (broken links or anchors, pages missing from
  the nav, API objects that do not resolve all fail it);
- the tutorial's code blocks run, in order, from the repository's root, and print what the
  page says they print;
- ``docs/kinds.md`` is what ``scripts/generate_kinds_doc.py`` writes from the registry now;
- every ``METRICS.md §N`` the library, the hypotheses and the dataset cards cite, and every
  cube variable's ``definition``, has its section (anchor ``#sN``) in ``docs/METRICS.md``;
- README.md and the pages link only to files inside the repository.
"""

from __future__ import annotations

import doctest
import importlib.util
import re
import subprocess
import sys
import types
from pathlib import Path

import pytest

from lie_stats import schema

ROOT = Path(__file__).resolve().parents[1]
DOCS = ROOT / "docs"
METRICS = DOCS / "METRICS.md"


def _generator() -> types.ModuleType:
    path = ROOT / "scripts" / "generate_kinds_doc.py"
    spec = importlib.util.spec_from_file_location("generate_kinds_doc", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


# ------------------------------------------------------------------------------- site
def test_site_builds_strict(tmp_path):
    pytest.importorskip("mkdocs", reason="mkdocs is in the dev extra")
    pytest.importorskip("mkdocstrings", reason="mkdocstrings is in the dev extra")
    site = tmp_path / "site"
    proc = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "--config-file",
         str(ROOT / "mkdocs.yml"), "--site-dir", str(site)],
        cwd=ROOT, capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, f"mkdocs build --strict failed:\n{proc.stdout}\n{proc.stderr}"
    for page in ("index", "tutorial", "METRICS", "DESIGN", "CLAIMS", "kinds", "api/spec"):
        assert (site / f"{page}.html").is_file(), f"the site has no {page}.html"
    metrics = (site / "METRICS.html").read_text(encoding="utf-8")
    assert 'id="s4.1"' in metrics
    api = (site / "api" / "spec.html").read_text(encoding="utf-8")
    assert 'id="lie_stats.spec.HypothesisSpec"' in api, "the API reference lacks HypothesisSpec"


# ------------------------------------------------------------------------------- tutorial
_BLOCK = re.compile(r"^```(pycon|python)\n(.*?)^```", re.S | re.M)


def code_blocks(path: Path) -> list[tuple[str, str]]:
    """The ``pycon`` and ``python`` fenced blocks of a Markdown page, in order."""
    return [(m.group(1), m.group(2)) for m in _BLOCK.finditer(path.read_text(encoding="utf-8"))]


def test_code_blocks_are_found():
    blocks = code_blocks(DOCS / "tutorial.md")
    assert len(blocks) >= 8, f"docs/tutorial.md: expected its code blocks, found {len(blocks)}"
    assert code_blocks(DOCS / "index.md") == [], "index.md holds shell, not Python"


def test_tutorial_runs_and_prints_what_it_says(monkeypatch):
    monkeypatch.chdir(ROOT)  # the tutorial runs from the repository's root
    globs: dict = {"__name__": "tutorial"}
    parser = doctest.DocTestParser()
    runner = doctest.DocTestRunner(optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE)
    n_examples = 0
    for i, (lang, code) in enumerate(code_blocks(DOCS / "tutorial.md")):
        name = f"docs/tutorial.md, block {i + 1}"
        if lang == "python":
            exec(compile(code, name, "exec"), globs)
            continue
        test = parser.get_doctest(code, globs, name, str(DOCS / "tutorial.md"), 0)
        n_examples += len(test.examples)
        runner.run(test, clear_globs=False)
        globs = test.globs
    result = runner.summarize(verbose=False)
    assert n_examples >= 15, f"docs/tutorial.md: only {n_examples} examples found"
    assert result.failed == 0, f"{result.failed} example(s) of docs/tutorial.md failed (see above)"


# ------------------------------------------------------------------------------- own-model guide
_GUIDE_BLOCK = re.compile(r"^```(pycon|python|console)\n(.*?)^```", re.S | re.M)
_FILE = re.compile(r"# file: (\S+)\n")


def guide_blocks(path: Path) -> list[tuple[str, str]]:
    """The ``pycon``, ``python`` and ``console`` fenced blocks of a guide, in order."""
    return [(m.group(1), m.group(2)) for m in _GUIDE_BLOCK.finditer(path.read_text(encoding="utf-8"))]


def run_console(block: str, name: str) -> list[str]:
    """Run each ``$ command`` of a console block in the current folder (the commands of the
    Python environment the tests run in first on PATH) and check its exit status 0 and its
    stdout against the lines below it (doctest's ELLIPSIS and NORMALIZE_WHITESPACE).
    Returns the failures."""
    import os
    import shlex

    checker = doctest.OutputChecker()
    flags = doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE
    env = {k: v for k, v in os.environ.items() if not k.startswith("PYTEST_")}
    env["PATH"] = f"{Path(sys.executable).parent}{os.pathsep}{env.get('PATH', '')}"
    env["OMP_NUM_THREADS"] = "1"
    # the commands import the lie_stats these tests import (a relative PYTHONPATH would not
    # reach it from the guide's folder)
    import lie_stats

    here = str(Path(lie_stats.__file__).resolve().parents[1])
    env["PYTHONPATH"] = os.pathsep.join([here, *[p for p in env.get("PYTHONPATH", "").split(os.pathsep) if p]])
    commands: list[tuple[str, list[str]]] = []
    for line in block.splitlines():
        if line.startswith("$ "):
            commands.append((line[2:], []))
        elif commands:
            commands[-1][1].append(line)
    failures = []
    for command, want in commands:
        proc = subprocess.run(shlex.split(command), env=env, capture_output=True, text=True, timeout=600)
        expected = "\n".join(want) + "\n" if want else ""
        if proc.returncode != 0 or (expected and not checker.check_output(expected, proc.stdout, flags)):
            failures.append(f"{name}: $ {command}\nexit {proc.returncode}\nexpected:\n{expected}"
                            f"got:\n{proc.stdout[-3000:]}\nstderr:\n{proc.stderr[-3000:]}")
    return failures


@pytest.mark.slow  # trains and extracts a tiny model, runs pytest and four lie-stats commands: ~60 s
def test_own_model_guide_runs_and_prints_what_it_says(monkeypatch, tmp_path):
    import tempfile

    page = DOCS / "own-model.md"
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))  # the guide's own folder lands here
    globs: dict = {"__name__": "own_model_guide"}
    parser = doctest.DocTestParser()
    runner = doctest.DocTestRunner(optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE)
    failures: list[str] = []
    kinds = [lang for lang, _ in guide_blocks(page)]
    assert kinds.count("console") >= 5 and kinds.count("pycon") >= 3, kinds
    for i, (lang, code) in enumerate(guide_blocks(page)):
        name = f"docs/own-model.md, block {i + 1}"
        if lang == "console":
            failures += run_console(code, name)
        elif lang == "python" and _FILE.match(code):
            target = Path(_FILE.match(code).group(1))
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_text(code, encoding="utf-8")
        elif lang == "python":
            exec(compile(code, name, "exec"), globs)
        else:
            test = parser.get_doctest(code, globs, name, str(page), 0)
            runner.run(test, clear_globs=False)
            globs = test.globs
    assert Path.cwd().parent == tmp_path, "the guide did not move to a folder of its own"
    result = runner.summarize(verbose=False)
    assert result.failed == 0 and not failures, (
        f"{result.failed} example(s) of docs/own-model.md failed (see above)\n\n" + "\n\n".join(failures))


# ------------------------------------------------------------------------------- kinds page
def test_kinds_page_is_generated_from_the_registry():
    gen = _generator()
    committed = (DOCS / "kinds.md").read_text(encoding="utf-8")
    assert committed == gen.render(), (
        "docs/kinds.md differs from the registry of test kinds: run "
        "python scripts/generate_kinds_doc.py and commit the result")
    import lie_stats

    for name in lie_stats.test_kinds():
        assert f'<a id="{gen.anchor(name)}"></a>' in committed


def test_kinds_check_mode_reports_a_stale_page(tmp_path):
    gen = _generator()
    page = tmp_path / "kinds.md"
    page.write_text(gen.render() + "a hand edit\n", encoding="utf-8")
    assert gen.main(["--check", "-o", str(page)]) == 1
    assert gen.main(["-o", str(page)]) == 0
    assert gen.main(["--check", "-o", str(page)]) == 0


def test_kind_text_is_escaped_for_markdown():
    gen = _generator()
    kind = types.SimpleNamespace(
        name="evil", roles=("x|y",), optional_roles=(), role_pattern=None,
        description="a | b <script>alert(1)</script> [link](http://x) *bold*",
        rule="`tick` and\nnewline", directions=("positive",), reference=(),
        params={"alpha": 0.05, "bound": "<b>"}, required_params=(), all_enums=lambda: {})
    text = "\n".join(gen._kind_section(kind))
    assert "<script>" not in text and "&lt;script&gt;" in text
    assert "\\[link\\]" in text and "\\*bold\\*" in text and "a \\| b" in text
    assert "`x\\|y`" in text
    assert "\\`tick\\` and newline" in text
    # every table row still has its three cells
    rows = [line for line in text.splitlines() if line.startswith("| `")]
    assert rows and all(len(re.findall(r"(?<!\\)\|", r)) == 4 for r in rows)


# ------------------------------------------------------------------------------- metrics
_CITE = re.compile(r"METRICS(?:\.md)?((?:\s*(?:,|-|–|and|or)?\s*§\s*\d+(?:\.\d+)*)+)")
_SECTION = re.compile(r"§\s*(\d+(?:\.\d+)*)")


def cited_sections(text: str) -> set[str]:
    """The METRICS.md sections ``text`` cites: ``METRICS.md §3.2``, ``METRICS §6.3``,
    ``METRICS.md §3-§5``, ``METRICS.md §7.2, §7.4``.

    >>> sorted(cited_sections("see METRICS.md §3-§5 and METRICS §6.3, not §9"))
    ['3', '5', '6.3']
    """
    return {s for m in _CITE.finditer(text) for s in _SECTION.findall(m.group(1))}


def metrics_anchors() -> set[str]:
    return set(re.findall(r'<a id="s(\d+(?:\.\d+)*)"></a>', METRICS.read_text(encoding="utf-8")))


def _cited_files() -> list[Path]:
    files = sorted((ROOT / "lie_stats").rglob("*.py")) + sorted((ROOT / "hypotheses").rglob("*.py"))
    files += sorted((ROOT / "datasets").glob("*/*.md")) + sorted((ROOT / "datasets").glob("*/*.toml"))
    files += sorted((ROOT / "datasets").glob("*/*.py")) + [ROOT / "README.md"]
    return files


def test_every_cited_metrics_section_is_defined():
    anchors = metrics_anchors()
    missing = {}
    n = 0
    for path in _cited_files():
        for section in cited_sections(path.read_text(encoding="utf-8")):
            n += 1
            if section not in anchors:
                missing.setdefault(section, []).append(str(path.relative_to(ROOT)))
    assert n > 50, f"found only {n} citations of METRICS.md: is the pattern right?"
    assert not missing, f"cited METRICS.md sections without a section in docs/METRICS.md: {missing}"


def test_every_cube_variable_cites_a_defined_section_and_is_in_the_table():
    anchors = metrics_anchors()
    text = METRICS.read_text(encoding="utf-8")
    table = text.split("## Where each cube variable is defined", 1)[1]
    rows = {line for line in table.splitlines() if line.startswith("|")}
    for name, info in schema.VARIABLES.items():
        m = re.fullmatch(r"METRICS\.md §(\d+(?:\.\d+)*)", info.definition)
        assert m, f"lie_stats.schema: {name}.definition {info.definition!r} is not 'METRICS.md §N'"
        section = m.group(1)
        assert section in anchors, f"{name}: {info.definition} has no section in docs/METRICS.md"
        row = [r for r in rows if f"`{name}`" in r.split("|")[1]]
        assert row, f"docs/METRICS.md: variable {name!r} is missing from the table of variables"
        assert f"(#s{section})" in row[0], (
            f"docs/METRICS.md: the table gives {name!r} another section than {info.definition}")


def test_metrics_sections_are_numbered_as_anchored():
    """Each anchor sits right above the heading with its number, so ``#s4.1`` is §4.1."""
    text = METRICS.read_text(encoding="utf-8")
    pairs = re.findall(r'<a id="s(\d+(?:\.\d+)*)"></a>\n#+ (\d+(?:\.\d+)*)\.? ', text)
    assert len(pairs) == len(metrics_anchors()) >= 30
    assert all(a == b for a, b in pairs), [p for p in pairs if p[0] != p[1]]


# ------------------------------------------------------------------------------- links
_LINK = re.compile(r"(?<!!)\[[^\]]*\]\(([^)\s]+)(?:\s+\"[^\"]*\")?\)|<a\s+href=\"([^\"]+)\"")


def local_links(path: Path) -> list[str]:
    """The link targets of a Markdown file that are not web addresses or in-page anchors."""
    text = re.sub(r"```.*?```", "", path.read_text(encoding="utf-8"), flags=re.S)
    out = []
    for m in _LINK.finditer(text):
        target = m.group(1) or m.group(2)
        if re.match(r"[a-z][a-z0-9+.-]*:", target) or target.startswith("#"):
            continue
        out.append(target)
    return out


@pytest.mark.parametrize("page", ["README.md", *(f"docs/{p.relative_to(DOCS)}" for p in sorted(DOCS.rglob("*.md")))])
def test_links_stay_inside_the_repository(page):
    path = ROOT / page
    for target in local_links(path):
        file_part = target.split("#", 1)[0]
        resolved = (path.parent / file_part).resolve()
        assert resolved.is_relative_to(ROOT), f"{page}: link {target!r} leaves the repository"
        assert resolved.exists(), f"{page}: link {target!r} points to a file the repository lacks"


def test_readme_links_the_definitions():
    assert "docs/METRICS.md" in local_links(ROOT / "README.md")


def test_examples_of_the_generator_and_of_this_module_run():
    for module in (_generator(), sys.modules[__name__]):
        result = doctest.testmod(module, optionflags=doctest.ELLIPSIS)
        assert result.attempted > 0 and result.failed == 0, module.__name__


def test_readme_documents_every_exit_code_of_the_cli():
    """Every status the CLI returns (its EXIT_* constants, the literal returns of cli.py, and
    pytest's codes that ``lie-stats run`` passes through) has a row of README's exit table."""
    import ast

    from lie_stats import cli

    source = (ROOT / "lie_stats" / "cli.py").read_text()
    codes = {v for k, v in vars(cli).items() if k.startswith("EXIT_") and isinstance(v, int)}
    codes |= {node.value.value for node in ast.walk(ast.parse(source))
              if isinstance(node, ast.Return) and isinstance(node.value, ast.Constant)
              and isinstance(node.value.value, int) and not isinstance(node.value.value, bool)}
    codes |= {int(c) for c in pytest.ExitCode if c != pytest.ExitCode.INTERRUPTED}  # run passes them on
    readme = (ROOT / "README.md").read_text()
    table = readme[readme.index("### Exit status"):]
    documented = {int(m) for m in re.findall(r"^\| (\d+) \|", table, flags=re.M)}
    assert codes - documented == set(), f"exit codes missing from README's table: {sorted(codes - documented)}"
