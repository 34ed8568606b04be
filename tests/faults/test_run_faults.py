"""``lie-stats run`` under faults, each a real process on real files: interrupted (SIGINT,
SIGTERM) while evaluating and while writing the report, unwritable or file reports paths,
a 300-character id, a folder not named ``hypotheses``, a selection that matches nothing, and
``pytest`` without ``--lie-reports`` (``make test``) leaving the tree unchanged."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys

import pytest

from tests._spec_cubes import make_datasets

from ._run_helpers import REPO, env, lie, spec_text, start, wait_for, write_module

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def datasets(tmp_path_factory):
    return make_datasets(tmp_path_factory.mktemp("datasets"))


def earlier_report(folder):
    """A complete report of an earlier run, byte for byte what the test checks is kept."""
    (folder / "figures").mkdir(parents=True)
    (folder / "results.json").write_text('[{"id": "EARLIER"}]\n')
    (folder / "report.md").write_text("# earlier\n")
    (folder / "report.html").write_text("<p>earlier</p>\n")
    (folder / "figures" / "EARLIER__synth.png").write_bytes(b"\x89PNG earlier")
    return {p.relative_to(folder).as_posix(): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}


def snapshot(folder):
    return {p.relative_to(folder).as_posix(): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}


WAIT_IN_ITEM = """
def test_waits_for_the_signal():  # a plain test item after the specs: the run is mid-session
    import pathlib, time
    pathlib.Path({marker!r}).write_text("running")
    time.sleep(600)
"""

WAIT_IN_REPORT = """
from lie_stats.report import ReportSection


def _slow_section(results, reports_dir, datasets_dir):  # the report is being written
    import pathlib, time
    (reports_dir / "figures").mkdir(parents=True, exist_ok=True)
    (reports_dir / "figures" / "S__section.png").write_bytes(b"half")
    pathlib.Path({marker!r}).write_text(str(reports_dir))
    time.sleep(600)


REPORT_SECTIONS = [ReportSection("S", _slow_section, name="slow-section")]
"""


@pytest.mark.parametrize("sig, word, where", [(signal.SIGINT, "interrupted", "item"),
                                              (signal.SIGTERM, "terminated (SIGTERM)", "item"),
                                              (signal.SIGINT, "interrupted", "report")])
def test_an_interrupted_run_keeps_the_earlier_report_and_exits_130(tmp_path, datasets, sig, word, where):
    marker = tmp_path / "marker"
    body = (WAIT_IN_ITEM if where == "item" else WAIT_IN_REPORT).format(marker=str(marker))
    write_module(tmp_path / "claims", "S1_claim", spec_text(), body)
    reports = tmp_path / "reports"
    before = earlier_report(reports)
    proc = start("run", "claims", "--datasets", datasets, "--reports", reports, cwd=tmp_path)
    wait_for(marker.exists, proc, "the run reached the " + where)
    proc.send_signal(sig)
    out, err = proc.communicate(timeout=300)
    assert proc.returncode == 130, out[-2000:] + err[-2000:]
    assert f"lie-stats run: {word}; no report was written, the earlier report in {reports}" in err
    assert "Traceback" not in err
    assert snapshot(reports) == before  # not a byte of the earlier report changed
    # nothing staged is left beside the reports (the lock file may be, when the write began)
    assert sorted(p.name for p in tmp_path.iterdir() if p.name != ".reports.lock") == ["claims", "marker", "reports"]


def test_a_reports_path_that_is_a_file_fails_before_any_evaluation(tmp_path, datasets):
    write_module(tmp_path / "claims", "S1_claim", spec_text())
    (tmp_path / "notes.txt").write_text("mine")
    res = lie("run", "claims", "--datasets", datasets, "--reports", tmp_path / "notes.txt", cwd=tmp_path)
    assert res.returncode == 2, res.stdout[-2000:] + res.stderr[-2000:]
    assert "the reports path is a file, not a folder" in res.stderr and "Traceback" not in res.stderr
    assert "collected" not in res.stdout  # nothing was evaluated
    assert (tmp_path / "notes.txt").read_text() == "mine"


def read_only_folder(tmp_path):
    """A reports folder this process cannot write: chmod 555, or (as root, who ignores the
    mode) a sysfs folder; None when neither exists here."""
    folder = tmp_path / "ro_reports"
    folder.mkdir()
    folder.chmod(0o555)
    try:
        (folder / "probe").write_text("x")
    except OSError:
        return folder
    (folder / "probe").unlink()
    for candidate in ("/sys/kernel", "/sys"):
        if os.path.isdir(candidate) and not os.access(candidate, os.W_OK | os.X_OK):
            return candidate
        try:
            with open(os.path.join(candidate, ".lie_stats_probe"), "w"):
                pass
        except OSError:
            return candidate
    return None


def test_a_read_only_reports_folder_fails_before_any_evaluation(tmp_path, datasets):
    folder = read_only_folder(tmp_path)
    if folder is None:
        pytest.skip("no read-only folder on this machine")
    write_module(tmp_path / "claims", "S1_claim", spec_text())
    res = lie("run", "claims", "--datasets", datasets, "--reports", folder, cwd=tmp_path)
    assert res.returncode == 2, res.stdout[-2000:] + res.stderr[-2000:]
    assert "is not writable" in res.stderr and "Traceback" not in res.stderr
    assert "collected" not in res.stdout


def test_a_300_character_id_gets_a_bounded_figure_name_and_a_report(tmp_path, datasets):
    long_id = "L" + "-very-long-identifier" * 15  # 316 characters
    write_module(tmp_path / "claims", "long_claim", spec_text("LONG", long_id), spec_text("S1", "S1"))
    res = lie("run", "claims", "--datasets", datasets, "--reports", tmp_path / "rep", cwd=tmp_path)
    assert res.returncode == 0, res.stdout[-3000:] + res.stderr[-3000:]
    records = {r["id"]: r for r in json.loads((tmp_path / "rep" / "results.json").read_text())}
    assert set(records) == {long_id, "S1"}
    figure = tmp_path / "rep" / records[long_id]["figure"]
    assert figure.is_file() and len(figure.name) <= 120
    assert (tmp_path / "rep" / records["S1"]["figure"]).is_file()


def test_run_collects_a_folder_of_any_name_and_a_file_in_it(tmp_path, datasets):
    write_module(tmp_path / "my claims", "first", spec_text("S1", "S1"))
    write_module(tmp_path / "my claims" / "more", "second", spec_text("S2", "S2"))
    (tmp_path / "my claims" / "_helpers.py").write_text("raise RuntimeError('not a hypothesis module')\n")
    res = lie("run", "my claims", "--datasets", datasets, "--reports", tmp_path / "rep", cwd=tmp_path)
    assert res.returncode == 0, res.stdout[-3000:] + res.stderr[-3000:]
    assert "collected 2 items" in res.stdout
    assert {r["id"] for r in json.loads((tmp_path / "rep" / "results.json").read_text())} == {"S1", "S2"}
    res = lie("run", "my claims/more/second.py", "--datasets", datasets, "--reports", tmp_path / "r2", cwd=tmp_path)
    assert res.returncode == 0 and "collected 1 item" in res.stdout, res.stdout[-3000:]


def test_run_from_a_checkout_prints_no_warning_of_pytest(tmp_path, datasets):
    """``lie-stats run`` imports lie_stats before it starts pytest; with the checkout on the
    path pytest marks the package for assertion rewriting and warned that it was already
    imported (PytestAssertRewriteWarning) until the package opted out."""
    write_module(tmp_path / "claims", "first", spec_text("S1", "S1"))
    res = lie("run", "claims", "--datasets", datasets, "--reports", tmp_path / "rep", cwd=tmp_path)
    assert res.returncode == 0, res.stdout[-3000:] + res.stderr[-3000:]
    assert str(REPO) in env()["PYTHONPATH"].split(os.pathsep)  # the case that warned
    assert "PytestAssertRewriteWarning" not in res.stdout + res.stderr, res.stdout[-3000:]
    assert "warnings summary" not in res.stdout, res.stdout[-3000:]


@pytest.mark.parametrize("select_x, lacks", [('Select("value_norm", layers=(99,))', "holds no finite value"),
                                              ('Select("killing_self", family="V", projection="none")', "has no family 'V'")])
def test_a_selection_that_matches_nothing_fails_its_item(tmp_path, datasets, select_x, lacks):
    write_module(tmp_path / "claims", "bad", spec_text("BAD", "BAD", select_x=select_x), spec_text("S1", "S1"))
    res = lie("run", "claims", "--datasets", datasets, "--reports", tmp_path / "rep", cwd=tmp_path)
    out = res.stdout
    assert res.returncode == 1, out[-3000:] + res.stderr[-3000:]
    assert "1 failed, 1 passed" in out and "skipped" not in out.split("short test summary")[-1]
    assert "SelectionError" in out and "the selection matches nothing in the cube" in out
    assert lacks in out and "Build it with" not in out and "rebuilding the data cannot help" in out


def test_pytest_without_lie_reports_leaves_the_project_folder_unchanged(tmp_path, datasets):
    """``make test`` runs ``pytest tests hypotheses``: its report goes to the temp folder."""
    project = tmp_path / "project"
    write_module(project / "hypotheses", "S1_claim", spec_text())
    (project / "reports").mkdir()
    (project / "reports" / "results.json").write_text("committed\n")
    before = snapshot(project)
    res = subprocess.run([sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "hypotheses",
                          "--lie-datasets", str(datasets)], cwd=project, env=env(),
                         capture_output=True, text=True, timeout=600)
    assert res.returncode == 0, res.stdout[-3000:] + res.stderr[-3000:]
    after = {k: v for k, v in snapshot(project).items() if "__pycache__" not in k}
    assert after == before
    line = next(ln for ln in res.stdout.splitlines() if ln.startswith("reports written to "))
    written = line.removeprefix("reports written to ").strip()
    assert not written.startswith(str(project)) and REPO.as_posix() not in written
    assert json.loads(open(os.path.join(written, "results.json")).read())[0]["id"] == "S1"
