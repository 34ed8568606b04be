"""pytest plugin: hypothesis modules as science tests (DESIGN.md, "Gates").

``pytest hypotheses/`` collects every module-level :class:`lie_stats.spec.HypothesisSpec`
as test items, one per spec and dataset (:mod:`lie_stats.collect` finds them, as it does
for ``lie-stats export``), evaluates them on the dataset cubes
(:func:`lie_stats.spec.evaluate`) and passes, fails or skips each item as its gate says
(:func:`lie_stats.gates.check`):

``replication``
    fails unless the verdict is ``supported``.
``pinned``
    fails when the verdict differs from the one pinned in the registry (``verdicts.json``
    beside the module), when no verdict is pinned yet, or when the declaration changed
    since it was pinned (its pre-registration hash differs). A changed declaration fails
    rather than passing with a warning: re-pinning is then an explicit step
    (``--update-verdicts``) whose diff of ``verdicts.json`` is the audit trail of the
    change, as a snapshot test's would be.
``report``
    never fails.

``--update-verdicts`` re-pins every evaluated verdict (any gate) with its declaration hash;
it passes pinned items but still fails a replication that is not supported. Skipped items
keep their earlier pin.

A dataset whose cubes are absent makes the item skip, with the reason and the command that
builds the data. Under every gate, a declaration whose hash differs from the pinned one is
flagged: a line in the terminal summary and ``declaration_changed`` in the report.
An :class:`lie_stats.spec.OutOfScope` record becomes an item that always skips with its
reason and is reported. Items are named ``<spec id>[<dataset>]`` and also match ``-k`` on
the module attribute, the dataset and the gate; two specs with one id are an error.

Options (group ``lie-stats``): ``--lie-datasets DIR``, ``--lie-reports DIR``,
``--lie-verdicts FILE``, ``--lie-no-figures``, ``--update-verdicts``. Files that do not
match ``python_files`` are collected as hypothesis modules when they sit in a folder named
in the ini option ``lie_hypothesis_dirs`` (default ``hypotheses``). A module that fails to
import (syntax error) becomes one failing item for that module; the other modules still
run. A declaration whose fields fail their checks (:class:`~lie_stats.errors.SpecError`)
becomes one failing item named by its id; the module's other declarations still run. At the end of a session that ran spec items,
the reports are written (:func:`lie_stats.report.write_reports`).

This module is loaded in every pytest run of the environment (``pytest11`` entry point): it
imports nothing heavy at import time and does nothing unless it collected its own items.
"""

from __future__ import annotations

import fnmatch
import os
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from . import collect
from ._stop import raise_if_stopped
from .errors import SpecError
from .gates import REGISTRY_FILE

__all__ = ["run", "SpecItem", "OutOfScopeItem", "HypothesisModule", "ModuleErrorItem", "REGISTRY_FILE"]


@dataclass
class _State:
    """The session's state, in ``config.stash``: the engine and what pytest adds to it."""

    engine: Any  # lie_stats.engine.Engine
    reports: Path
    figures: bool = True
    results: list = field(default_factory=list)
    outcomes: dict = field(default_factory=dict)  # result key -> pytest outcome
    declarations: collect.Declarations = field(default_factory=collect.Declarations)
    roots: tuple = ()  # with --lie-paths-are-hypotheses: the command line's paths
    scan: tuple = ()  # paths whose modules are hypothesis modules when they declare specs
    #: The session ended by Ctrl-C (pytest's exit status 2 also means a collection error):
    #: set by pytest_keyboard_interrupt, read at session end.
    interrupted: BaseException | None = None

    @property
    def datasets(self) -> Path:
        return self.engine.datasets_dir


_STATE = pytest.StashKey[_State]()
_WATCH = pytest.StashKey["_InterruptWatch"]()


class _InterruptWatch:
    """Records a Ctrl-C (not ``pytest.exit()``) of the session it is registered with."""

    def __init__(self) -> None:
        self.interrupted: BaseException | None = None

    def pytest_keyboard_interrupt(self, excinfo: Any) -> None:
        if isinstance(excinfo.value, KeyboardInterrupt):
            self.interrupted = excinfo.value


# ----------------------------------------------------------------------------- options


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("lie-stats", "lie_stats hypotheses (science tests)")
    group.addoption("--lie-datasets", metavar="DIR", default=None,
                    help="folder of dataset cards and cubes. Default: ./datasets when the folder "
                         "pytest runs from has one, else the datasets/ of the checkout lie_stats "
                         "runs from (the bundled datasets)")
    group.addoption("--lie-reports", metavar="DIR", default=None,
                    help="folder the reports are written to. Default: a folder under the "
                         "system's temporary folder, one per project folder, so that a test "
                         "run never changes the committed reports (lie-stats run writes "
                         "reports/)")
    group.addoption("--lie-verdicts", metavar="FILE", default=None,
                    help="registry of pinned verdicts; by default verdicts.json beside each "
                         "hypothesis module. Default: %(default)r")
    group.addoption("--lie-no-figures", action="store_true", default=False,
                    help="write the reports without figures (faster). Default: %(default)r")
    group.addoption("--update-verdicts", action="store_true", default=False,
                    help="re-pin: write each evaluated verdict and declaration hash to the "
                         "registry instead of comparing. Default: %(default)r")
    group.addoption("--lie-pin-reason", metavar="TEXT", default="",
                    help="with --update-verdicts: why, recorded with each pin whose verdict or "
                         "declaration this re-pinning changes (the report's 'changed' table shows it)")
    group.addoption("--lie-paths-are-hypotheses", action="store_true", default=False,
                    help="every .py file under the paths given (not _*.py, not conftest.py) is "
                         "a hypothesis module, whatever its folder's name (lie-stats run sets "
                         "it). Default: %(default)r")
    parser.addini("lie_hypothesis_dirs", type="linelist", default=["hypotheses"],
                  help="names of folders whose *.py files are hypothesis modules")
    parser.addini("lie_hypotheses", type="paths", default=[],
                  help="folders (or files) whose modules that declare hypotheses are collected "
                       "as hypothesis modules, whatever their folders' names; a folder or file "
                       "given on the command line is always one")


def default_reports_dir(project: str | os.PathLike) -> Path:
    """Where a pytest session writes its reports without ``--lie-reports``: a folder of the
    system's temporary folder named after the project folder, outside any checkout, so that
    ``pytest`` never rewrites the committed ``reports/`` (``lie-stats run`` does, on purpose).

    >>> default_reports_dir("/srv/project").name.startswith("lie_stats-reports-project-")
    True
    """
    import hashlib
    import tempfile

    project = Path(project).resolve()
    tag = hashlib.sha256(str(project).encode("utf-8", "surrogatepass")).hexdigest()[:10]
    safe = "".join(c if c.isalnum() or c in "._-" else "_" for c in project.name)[:40] or "root"
    return Path(tempfile.gettempdir()) / f"lie_stats-reports-{safe}-{tag}"


def pytest_configure(config: pytest.Config) -> None:
    from .engine import Engine

    base = Path(config.invocation_params.dir)
    override = config.getoption("--lie-verdicts")
    given_datasets = config.getoption("--lie-datasets")
    if given_datasets is not None:
        datasets = (base / given_datasets).resolve()
    else:  # ./datasets of the folder pytest runs from, else the bundled ones
        from .datasets import CHECKOUT

        datasets = base / "datasets" if (base / "datasets").is_dir() else CHECKOUT / "datasets"
        datasets = datasets.resolve()
    given = config.getoption("--lie-reports")
    if given is not None:  # fail now, not after every item ran
        from .errors import LieStatsError
        from .report.writing import check_reports_dir

        try:
            check_reports_dir(base / given)
        except LieStatsError as e:
            raise pytest.UsageError(f"--lie-reports {given}: {e}") from e
    roots: tuple = ()
    if config.getoption("--lie-paths-are-hypotheses"):
        roots = tuple((base / str(a).split("::")[0]).resolve() for a in config.args)
    # the command line's paths and the ini's lie_hypotheses: modules declaring hypotheses
    scan = tuple((base / str(a).split("::")[0]).resolve() for a in config.args)
    scan += tuple(Path(p).resolve() for p in config.getini("lie_hypotheses"))
    engine = Engine(datasets, update=bool(config.getoption("--update-verdicts")),
                    pin_reason=str(config.getoption("--lie-pin-reason") or ""),
                    registry=(base / override).resolve() if override else None)
    config.stash[_STATE] = _State(
        engine=engine,
        reports=(base / given).resolve() if given is not None else default_reports_dir(base),
        roots=roots,
        scan=scan,
        figures=not config.getoption("--lie-no-figures"),
        declarations=collect.Declarations(datasets),
    )
    watch = _InterruptWatch()
    config.stash[_WATCH] = watch
    config.pluginmanager.register(watch, "lie-stats-interrupt-watch")


# ----------------------------------------------------------------------------- collection


def _is_hypothesis_file(file_path: Path, config: pytest.Config) -> bool:
    if collect.is_hypothesis_file(file_path, config.getini("lie_hypothesis_dirs")):
        return True
    state = config.stash[_STATE]
    if state.roots and collect.is_module_file(file_path) and collect.under(file_path, state.roots):
        return True
    if any(fnmatch.fnmatch(file_path.name, pat) for pat in config.getini("python_files")):
        return False  # a test module: pytest's own rules
    return bool(state.scan) and collect.under(file_path, state.scan) and collect.declares_specs(file_path)


def pytest_collect_file(file_path: Path, parent: pytest.Collector) -> Any:
    config = parent.config
    if not _is_hypothesis_file(file_path, config):
        return None
    if parent.session.isinitpath(file_path) or any(
        fnmatch.fnmatch(file_path.name, pat) for pat in config.getini("python_files")
    ):
        return None  # pytest's python plugin collects it, through pytest_pycollect_makemodule
    return HypothesisModule.from_parent(parent, path=file_path)


def pytest_pycollect_makemodule(module_path: Path, parent: Any) -> Any:
    if _is_hypothesis_file(module_path, parent.config):
        return HypothesisModule.from_parent(parent, path=module_path)
    return None


class HypothesisModule(pytest.Module):
    """A hypothesis module; an import failure becomes one failing item, not a session stop.

    It is imported under :func:`lie_stats.spec.declaration.deferred_declaration_errors`: a
    declaration that fails its checks becomes one failing item (named by its id), and the
    module's other declarations are collected and run."""

    def _getobj(self) -> Any:
        from .spec.declaration import deferred_declaration_errors

        with deferred_declaration_errors():
            return super()._getobj()

    def collect(self) -> Any:
        engine = self.config.stash[_STATE].engine
        try:
            items = list(super().collect())
        except Exception as e:  # noqa: BLE001 - reported as this module's failure
            raise_if_stopped()
            engine.collected(self.path, ok=False)
            return [ModuleErrorItem.from_parent(self, name="<import>", text=_describe(e))]
        # collected whole (the engine retires a removed declaration's pin only then), with
        # the report sections the module declares
        try:
            engine.collected(self.path, ok=not any(isinstance(i, ModuleErrorItem) for i in items),
                             sections=getattr(self.obj, "REPORT_SECTIONS", None))
        except SpecError as e:
            return [*items, ModuleErrorItem.from_parent(self, name="<REPORT_SECTIONS>", text=str(e))]
        return items


def _describe(e: BaseException) -> str:
    """One readable message for a module that failed to import or declare."""
    if isinstance(e, pytest.Collector.CollectError):
        ctx = e.__context__
        if isinstance(ctx, SyntaxError):
            return collect.describe_error(ctx)
        return str(e)  # pytest's short traceback of the import error
    return collect.describe_error(e)


class ModuleErrorItem(pytest.Item):
    """Stands for a hypothesis module that could not be imported or declared a bad spec."""

    def __init__(self, *, text: str, declaration: bool = False, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.text = text
        self.declaration = declaration

    def runtest(self) -> None:
        raise _ModuleError(self.text)

    def repr_failure(self, excinfo: Any, style: Any = None) -> str:
        from ._text import terminal_line, terminal_lines

        if self.declaration:  # one declaration of the module; the others were collected
            return (f"declaration {terminal_line(self.name)} of {terminal_line(self.path)} could not be "
                    f"collected (the module's other declarations run):\n{terminal_lines(self.text)}")
        return f"hypothesis module {terminal_line(self.path)} could not be collected:\n{terminal_lines(self.text)}"

    def reportinfo(self) -> tuple[Any, int | None, str]:
        from ._text import terminal_line

        if self.declaration:
            return self.path, 0, f"{terminal_line(self.name)}: declaration error"
        return self.path, 0, f"{terminal_line(self.path.name)}: collection error"


class _ModuleError(Exception):
    pass


def pytest_pycollect_makeitem(collector: pytest.Collector, name: str, obj: Any) -> Any:
    state = collector.config.stash[_STATE]
    got = state.declarations.declare(obj, name, collector.path, where=f"{collector.nodeid}::{name}")
    if got is None:
        return None  # not a declaration (or one already collected): pytest's own rules apply
    if isinstance(got, collect.CollectionError):
        return [ModuleErrorItem.from_parent(collector, name=_item_name(got.name), text=got.text,
                                            declaration=got.declaration)]
    if got.out_of_scope:
        state.engine.declare_out_of_scope(obj, collector.path)  # re-pinning retires its pins
        return [OutOfScopeItem.from_parent(collector, name=got.item_name(), record=obj, attr=name)]
    state.engine.declare(obj, got.datasets, collector.path)  # its family, whatever -k selects
    return [SpecItem.from_parent(collector, name=got.item_name(ds), spec=obj, dataset=ds, attr=name)
            for ds in got.datasets]


def _item_name(name: str) -> str:
    from ._text import terminal_line  # an id read from a module: shown escaped

    return terminal_line(name)


# ----------------------------------------------------------------------------- items


class GateFailure(Exception):
    """An item failed its gate; carries the result for :meth:`SpecItem.repr_failure`."""

    def __init__(self, result: Any, message: str) -> None:
        super().__init__(message)
        self.result = result
        self.message = message


class SpecItem(pytest.Item):
    """One hypothesis evaluated on one dataset."""

    def __init__(self, *, spec: Any, dataset: str, attr: str, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.spec = spec
        self.dataset = dataset
        self.attr = attr
        self.result: Any = None
        self.user_properties.append(("spec_id", spec.id))
        self.extra_keyword_matches.update({attr, dataset, spec.gate})  # -k B5, -k pinned, ...

    @property
    def key(self) -> str:
        return f"{self.spec.id}::{self.dataset}"

    def registry_path(self) -> Path:
        return self.config.stash[_STATE].engine.registry_path(self.path)

    def runtest(self) -> None:
        # the engine evaluates, diagnoses and gates (lie_stats.engine); a changed declaration
        # is flagged in the terminal summary and the report (not a Python warning: the
        # project turns lie_stats warnings into errors, which would fail report gates)
        state = self.config.stash[_STATE]
        done = state.engine.evaluate(self.spec, self.dataset, self.path)
        self.result = done.result
        state.results.append(done.result)
        if done.gate.outcome == "skipped":
            _skip(done.gate.message)
        if done.gate.failed:
            raise GateFailure(done.result, done.gate.message)

    def repr_failure(self, excinfo: Any, style: Any = None) -> Any:
        from ._text import terminal_line  # messages quote ids, names and reasons from files

        if isinstance(excinfo.value, GateFailure):
            from . import report

            return f"{terminal_line(excinfo.value.message)}\n{report.result_row_text(excinfo.value.result)}"
        err = excinfo.value
        from .errors import LieStatsError

        if isinstance(err, LieStatsError):
            return f"{type(err).__name__}: {terminal_line(err)}"
        return super().repr_failure(excinfo, style=style)

    def reportinfo(self) -> tuple[Any, int | None, str]:
        from ._text import terminal_line

        return self.path, 0, terminal_line(f"{self.spec.id} on {self.dataset} [{self.spec.gate}]")


class OutOfScopeItem(pytest.Item):
    """A claim recorded as not testable here: always skipped, with its reason, and reported."""

    def __init__(self, *, record: Any, attr: str, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.record = record
        self.extra_keyword_matches.add(attr)
        self.result: Any = None

    @property
    def key(self) -> str:
        return self.result.key if self.result is not None else self.record.id

    def runtest(self) -> None:
        state = self.config.stash[_STATE]
        self.result = state.engine.out_of_scope(self.record)
        state.results.append(self.result)
        _skip(f"{self.record.id}: {self.result.reason}")

    def reportinfo(self) -> tuple[Any, int | None, str]:
        from ._text import terminal_line

        return self.path, 0, terminal_line(f"{self.record.id} (out of scope)")


def _skip(reason: str) -> None:
    """Skip the running item, reported at the item's location (not this module's line); the
    reason (it quotes ids, names and reasons from files) is shown as a terminal line."""
    from ._text import terminal_line

    reason = terminal_line(reason)
    try:
        raise pytest.skip.Exception(reason, _use_item_location=True)
    except TypeError:  # pragma: no cover - a pytest without the keyword
        pytest.skip(reason)


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: Any) -> Any:
    rep = yield
    if isinstance(item, (SpecItem, OutOfScopeItem)) and item.result is not None and (
        rep.when == "call" or rep.skipped
    ):
        state = item.config.stash[_STATE]
        state.outcomes[item.key] = rep.outcome
    return rep


# ----------------------------------------------------------------------------- session end


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    state = session.config.stash.get(_STATE, None)
    if state is None or not state.results:
        return
    from . import report

    if session.config.stash[_WATCH].interrupted:  # nothing is written: the earlier report and pins are kept
        return
    # pins re-read under the lock: a concurrent run's pins are kept
    table = state.engine.finish(state.results, outcomes=state.outcomes)
    report.write_reports(table.results, state.reports, figures=state.figures, datasets_dir=state.datasets,
                         retired=table.retired, sections=table.sections)


def pytest_terminal_summary(terminalreporter: Any, exitstatus: int, config: pytest.Config) -> None:
    state = config.stash.get(_STATE, None)
    if state is None or not state.results:
        return
    from . import report
    from ._text import terminal_line

    tr = terminalreporter
    if config.stash[_WATCH].interrupted is not None:
        tr.write_line(f"interrupted: no report written; the earlier report in {state.reports} "
                      f"and the pinned verdicts are kept", yellow=True)
        return
    tr.write_sep("=", "lie_stats verdicts")
    for line in report.verdict_table(state.results, outcomes=state.outcomes).splitlines():
        tr.write_line(line)
    for key, (old, new) in sorted(state.engine.changed.items()):
        tr.write_line(f"DECLARATION CHANGED after pinning: {terminal_line(key)} (hash {str(old)[:12]} -> {new[:12]})",
                      yellow=True)
    pins = state.engine.pins
    if state.engine.update and pins:
        n = sum(len(p) for p in pins.values())
        tr.write_line(f"re-pinned {n} verdict(s) in {', '.join(map(str, pins))}")
    # pins of results no longer evaluated: retired when re-pinning, else named as stale
    gone = state.engine.retired_now if state.engine.update else state.engine.retirements()
    if gone:
        n, where = sum(len(p) for p in gone.values()), ", ".join(map(str, gone))
        if state.engine.update:
            tr.write_line(f"retired {n} pin(s) of results no longer evaluated in {terminal_line(where)}")
        else:
            tr.write_line(f"{n} pin(s) in {terminal_line(where)} name results no longer evaluated (out of "
                          f"scope, or declaration removed): lie-stats run --update-verdicts retires them",
                          yellow=True)
    tr.write_line(f"reports written to {state.reports}")


# ----------------------------------------------------------------------------- entry point


def run(
    paths: Sequence[str] = ("hypotheses",),
    *,
    datasets_dir: str | os.PathLike = "datasets",
    reports_dir: str | os.PathLike = "reports",
    update_verdicts: bool = False,
    pytest_args: Sequence[str] = (),
) -> int:
    """Evaluate hypothesis modules with pytest and write the reports (``lie-stats run``).

    Parameters
    ----------
    paths : sequence of str
        Hypothesis modules or folders (default ``hypotheses``).
    datasets_dir, reports_dir : path
        Passed as ``--lie-datasets`` and ``--lie-reports``. Every ``.py`` file under
        ``paths`` is a hypothesis module, whatever its folder's name
        (``--lie-paths-are-hypotheses``).
    update_verdicts : bool
        Re-pin the verdicts (``--update-verdicts``).
    pytest_args : sequence of str
        Further pytest arguments (``-q``, ``-k B5``, ...).

    Returns
    -------
    int
        pytest's exit status (0 all gates pass, 1 a gate failed, 5 nothing collected, ...).

    Raises
    ------
    KeyboardInterrupt
        The run was interrupted (Ctrl-C; SIGTERM under ``lie-stats run``): nothing was
        written, the earlier report and pins are kept (``lie-stats run`` exits 130).

    Examples
    --------
    >>> import tempfile
    >>> run([tempfile.mkdtemp()], pytest_args=["-q", "-p", "no:cacheprovider"])  # doctest: +SKIP
    5
    """
    # option=value in one token: pytest takes a separate value that is a path for a path of
    # the run, and would put its rootdir above the datasets folder (the checkout), naming
    # the user's modules relative to it ("../checkout/K1.py")
    args = [*map(str, paths), f"--lie-datasets={datasets_dir}", f"--lie-reports={reports_dir}",
            "--lie-paths-are-hypotheses"]
    if update_verdicts:
        args.append("--update-verdicts")
    args.extend(pytest_args)
    watch = _InterruptWatch()
    status = int(pytest.main(args, plugins=[watch]))
    if watch.interrupted is not None:
        raise watch.interrupted  # the caller says what was kept (lie-stats run: exit 130)
    return status
