"""The engine of a hypothesis run: collect -> evaluate -> diagnosis -> gate -> multiplicity.

One place runs a hypothesis run; ``lie-stats run`` (through the pytest plugin), ``lie-stats
export`` and :func:`lie_stats.run` are shells over it:

- :class:`Engine` holds what a run accumulates (the registries it read, the pins to write,
  the declarations whose hash changed) as explicit state, never as module globals;
- :meth:`Engine.declare` registers each declaration of the run with its datasets, so that a
  multiplicity family is known whole before any of its members is decided (a ``-k``
  selection does not change a family);
- :meth:`Engine.evaluate` takes one declaration on one dataset through evaluation
  (:func:`lie_stats.spec.evaluate`; a selection that matches nothing in a present cube raises),
  the decision within its multiplicity family (:func:`lie_stats.spec.evaluation.decide_in_family`:
  the first member asked for evaluates the whole family), the cached design diagnosis
  (:func:`lie_stats.diagnosis.cached_diagnosis`) and the gate (:func:`lie_stats.gates.check`),
  and returns an :class:`Evaluated`: the frozen result and its gate. The pytest plugin calls
  it once per item, so pytest reports each item;
- :meth:`Engine.out_of_scope` does the same for an :class:`~lie_stats.spec.OutOfScope` record;
- :meth:`Engine.write_pins` re-pins, and retires the pins of results no longer evaluated
  (:meth:`Engine.retirements`: a claim now declared out of scope; a declaration removed, known
  only when the run collected every module beside the registry);
- :meth:`Engine.finish` writes the pins and returns the :class:`ResultsTable`, in which the
  multiplicity of every result is computed, once (:func:`lie_stats.spec.results.assign_multiplicity`);
- :func:`run` is the whole loop without pytest (collection by :func:`lie_stats.collect.collect`).

A result is never changed in place: each stage returns a new one.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ._stop import raise_if_stopped
from .errors import SpecError, did_you_mean
from . import columns as C

__all__ = ["Engine", "Evaluated", "ResultsTable", "run", "check_paths"]


@dataclass(frozen=True)
class Evaluated:
    """One declaration on one dataset after the engine: the result and its gate's outcome."""

    result: Any
    gate: Any


@dataclass(frozen=True)
class ResultsTable:
    """The results of a run, sorted by id and dataset: a table, as pingouin returns one.

    Attributes
    ----------
    results : tuple of lie_stats.spec.Result
        Frozen results, with their gate's outcome, pin and diagnosis.
    failures : tuple of str
        One line per failure of the run: ``<id>::<dataset>: <why>`` (a gate that failed, a
        result that could not be evaluated) or a module that could not be collected.
    errors : tuple of str
        The failures that are errors, not a gate's verdict.
    retired : tuple of dict
        The retired pins of the registries of the run (:func:`lie_stats.gates.read_retired`),
        each with its ``key`` and ``registry``: results no longer evaluated, not rows.
    sections : tuple of lie_stats.report.ReportSection
        The report sections the run's modules declare (``REPORT_SECTIONS``), in collection
        order: what :func:`lie_stats.report.write_reports` adds after the results.
    cubes : lie_stats.datasets.CubeCache, optional
        The cubes the results were computed from (the engine's cache), for their export.

    :meth:`records` are the rows of ``results.json`` (multiplicity within each family
    computed there, the one place); :meth:`to_dataframe` has one row per result with those
    columns; :meth:`to_json` is the list of rows as JSON.
    """

    results: tuple = ()
    failures: tuple = ()
    errors: tuple = ()
    retired: tuple = ()
    sections: tuple = ()
    cubes: Any = field(default=None, compare=False, repr=False)

    def __post_init__(self) -> None:
        ordered = tuple(sorted(self.results, key=lambda r: (str(r.id), str(r.dataset))))
        object.__setattr__(self, "results", ordered)

    def __len__(self) -> int:
        return len(self.results)

    def __iter__(self) -> Iterator[Any]:
        return iter(self.results)

    def __getitem__(self, key: int | str) -> Any:
        """A result by position, or by ``"<id>::<dataset>"``."""
        if isinstance(key, str):
            for r in self.results:
                if r.key == key:
                    return r
            raise KeyError(f"no result {key!r} in this table{did_you_mean(key, [r.key for r in self.results])}")
        return self.results[key]

    @property
    def status(self) -> int:
        """As pytest's exit status of the same run: 1 when anything failed, else 0."""
        return 1 if self.failures else 0

    def records(self) -> list[dict[str, Any]]:
        """The rows of ``results.json`` (full precision; multiplicity filled in)."""
        from .report import results_records

        return results_records(self.results)

    def to_json(self, *, indent: int | None = 2) -> str:
        """The rows as JSON, as ``results.json`` holds them (12 significant digits)."""
        from .report import stable_numbers

        return json.dumps(stable_numbers(self.records()), indent=indent, sort_keys=True, allow_nan=False)

    def to_dataframe(self) -> Any:
        """One tidy row per result (a :class:`pandas.DataFrame`), the columns of
        ``results.json``; nested fields (``magnitude``, ``multiplicity``, ``diagnosis``,
        ...) stay dictionaries in their cells, and the most used of them also get flat
        columns (``p_holm``, ``decided_by``, ``magnitude_status``, ``fpr``, ``power``)."""
        import pandas as pd

        rows = []
        for rec in self.records():
            diag = rec.get("diagnosis") or {}
            rows.append({**rec, "decided_by": (rec.get("multiplicity") or {}).get("decided_by"),
                         "magnitude_status": (rec.get("magnitude") or {}).get("status"),
                         "fpr": diag.get("fpr"), "power": diag.get("power")})
        lead = ["id", "dataset", "verdict", "test", C.STATISTIC, C.P_VALUE, C.P_HOLM, C.EFFECT,
                C.CI_LOW, C.CI_HIGH, C.N, "decided_by", "magnitude_status", "fpr", "power"]
        frame = pd.DataFrame(rows)
        if frame.empty:
            return pd.DataFrame(columns=lead)
        return frame[[c for c in lead if c in frame] + [c for c in frame if c not in lead]]


@dataclass
class Engine:
    """The state of one hypothesis run (see the module docstring).

    Parameters
    ----------
    datasets_dir : path, optional
        The dataset cards' folder (None: :func:`lie_stats.datasets.default_datasets_dir`).
    update : bool
        Re-pin: every evaluated verdict is written to its registry with its hash.
    registry : path, optional
        One registry for every module (``--lie-verdicts``); by default ``verdicts.json``
        beside each hypothesis module.
    pin_reason : str
        Re-pinning: why, recorded with each pin whose verdict or declaration it changes.
    cubes : lie_stats.datasets.CubeCache, optional
        The datasets' cubes, each opened once for the run (a new cache by default); the
        export of the run reads its cubes from here too.
    """

    datasets_dir: Path | None = None
    update: bool = False
    registry: Path | None = None
    pin_reason: str = ""
    members: dict = field(default_factory=dict)  # family -> {key: (spec, dataset, module path)}
    decided: dict = field(default_factory=dict)  # key -> Result decided in its family, or the error
    registries: dict = field(default_factory=dict)  # registry path -> its pins, read once
    pins: dict = field(default_factory=dict)  # registry path -> {key: entry} to write
    changed: dict = field(default_factory=dict)  # key -> (pinned hash, hash now)
    modules: dict = field(default_factory=dict)  # module path -> collected whole, without an error
    out_of_scope_ids: dict = field(default_factory=dict)  # registry path -> {id: why}
    retired_now: dict = field(default_factory=dict)  # registry path -> {key: why} this run retired
    sections: dict = field(default_factory=dict)  # report section name -> (ReportSection, module path)
    cubes: Any = None  # the run's CubeCache


    def __post_init__(self) -> None:
        from .datasets import CubeCache, default_datasets_dir

        self.datasets_dir = Path(self.datasets_dir or default_datasets_dir()).resolve()
        if self.cubes is None:
            self.cubes = CubeCache()
        if self.registry is not None:
            self.registry = Path(self.registry).resolve()

    def registry_path(self, module_path: str | os.PathLike) -> Path:
        from .gates import REGISTRY_FILE

        return self.registry or (Path(module_path).parent / REGISTRY_FILE)

    def _registry(self, path: Path) -> dict:
        if path not in self.registries:
            from .gates import read_registry

            self.registries[path] = read_registry(path)
        return self.registries[path]

    def declare(self, spec: Any, datasets: Sequence[str], module_path: str | os.PathLike) -> None:
        """Register a declaration of this run on its datasets (its family's members)."""
        from .spec.results import claim_family

        family = spec.multiplicity_family or claim_family(spec.id)
        for ds in datasets:
            self.members.setdefault(family, {})[f"{spec.id}::{ds}"] = (spec, ds, Path(module_path))

    def collected(self, module_path: str | os.PathLike, *, ok: bool = True, sections: Any = None) -> None:
        """Record a hypothesis module this run collected whole (every declaration of it
        declared; ``ok`` False: it, or one of its declarations, failed to collect), and the
        report sections it declares (:meth:`add_sections`).

        Raises
        ------
        SpecError
            As :meth:`add_sections` (the module is then recorded as not collected whole).
        """
        path = Path(module_path).resolve()
        try:
            self.add_sections(path, sections)
        except SpecError:
            self.modules[path] = False
            raise
        self.modules[path] = self.modules.get(path, True) and ok

    def add_sections(self, module_path: str | os.PathLike, sections: Any) -> None:
        """Add the report sections a module of this run declares (its ``REPORT_SECTIONS``),
        whether the run takes all of its declarations or some.

        Raises
        ------
        SpecError
            ``sections`` is not a list or tuple of :class:`lie_stats.report.ReportSection`, or
            names a section another module of the run declares.
        """
        from .report.sections import SECTIONS_ATTR, sections_of

        path = Path(module_path).resolve()
        declared = sections_of(sections, path)
        for section in declared:
            other = self.sections.get(section.name)
            if other is not None and other[1] != path:
                raise SpecError(f"{path}: {SECTIONS_ATTR}: the report section {section.name!r} is "
                                f"declared by {other[1]} too; give one of them another name.")
        self.sections.update({section.name: (section, path) for section in declared})

    def declare_out_of_scope(self, record: Any, module_path: str | os.PathLike) -> None:
        """Register an out-of-scope record of this run: re-pinning retires its id's pins."""
        why = str(getattr(record, "reason", "") or "")
        why = why if why.startswith("out of scope") else f"out of scope: {why}"
        self.out_of_scope_ids.setdefault(self.registry_path(Path(module_path).resolve()), {})[record.id] = why

    def _covers(self, registry: Path) -> bool:
        """Whether this run collected, whole and without errors, every hypothesis module
        beside ``registry`` (then a pin no declaration of them names was removed)."""
        from .collect import is_module_file

        if self.registry is not None:  # one registry for modules anywhere: never known whole
            return False
        files = [p.resolve() for p in registry.parent.glob("*.py") if is_module_file(p)]
        return bool(files) and all(self.modules.get(p) is True for p in files)

    def retirements(self) -> dict[Path, dict[str, str]]:
        """The live pins to retire, by registry (key -> why): those of an id this run declares
        out of scope, and, in a registry whose modules this run collected whole
        (:meth:`collected`), those of a result no declaration names (removed, or no longer on
        that dataset). Only pins this run read when it first used the registry: a pin another
        run writes meanwhile (a declaration this run did not collect) is left live."""
        declared: dict[Path, set[str]] = {}
        for family in self.members.values():
            for key, (_, _, module_path) in family.items():
                declared.setdefault(self.registry_path(module_path), set()).add(key)
        out: dict[Path, dict[str, str]] = {}
        paths = {self.registry_path(m) for m in self.modules} | set(self.out_of_scope_ids)
        for path in sorted(paths):
            scope = self.out_of_scope_ids.get(path, {})
            covered = self._covers(path)
            for key in self._registry(path):
                ident, _, dataset = key.rpartition("::")
                if ident in scope:
                    out.setdefault(path, {})[key] = scope[ident]
                elif covered and key not in declared.get(path, set()):
                    out.setdefault(path, {})[key] = (f"declaration removed: no module of "
                                                     f"{path.parent.name}/ declares {ident!r} on {dataset!r}")
        return out

    def _decide_family(self, family: str) -> None:
        """Evaluate every member of ``family`` and decide each within it."""
        from .spec import evaluate
        from .spec.evaluation import decide_in_family
        from .spec.results import family_adjusted_p

        raw: dict[str, tuple[Any, Any]] = {}
        for key, (spec, ds, _) in self.members[family].items():
            try:
                raw[key] = (spec, evaluate(spec, self.datasets_dir, datasets=[ds], cubes=self.cubes)[0])
            except Exception as e:  # noqa: BLE001 - this member fails alone; the family goes on without it
                raise_if_stopped()  # an interrupt wrapped in a library's own error stops the run
                self.decided[key] = e
        primaries: dict[str, list[str]] = {}
        for key, (spec, res) in raw.items():
            if getattr(spec, "primary", False):
                primaries.setdefault(res.dataset, []).append(spec.id)
        clash = {ds: ids for ds, ids in primaries.items() if len(ids) > 1}
        adjusted, sizes = family_adjusted_p([res for _, res in raw.values()])
        for key, (spec, res) in raw.items():
            if res.dataset in clash and spec.primary:
                self.decided[key] = SpecError(
                    f"{spec.module}: HypothesisSpec {spec.id!r}, field 'primary': the family "
                    f"{family!r} declares {len(clash[res.dataset])} primary tests on dataset "
                    f"{res.dataset!r} ({', '.join(clash[res.dataset])}); a family has at most one "
                    f"primary per dataset.")
                continue
            self.decided[key] = decide_in_family(spec, res, adjusted.get(key), sizes.get(key, 0))

    def evaluate(self, spec: Any, dataset: str, module_path: str | os.PathLike) -> Evaluated:
        """One spec on one dataset: evaluation, selection check, decision within its
        family, diagnosis, gate. A spec not declared before is declared now (a family of
        what this engine has seen).

        Raises
        ------
        SelectionError
            The dataset's cube is present and the selection matches nothing.
        LieStatsError
            The registry could not be read; two primaries in one family on one dataset.
        """
        from . import diagnosis, gates
        from .diagnosis.calibration import limit_to_calibrated
        from .spec.results import claim_family

        key = f"{spec.id}::{dataset}"
        family = spec.multiplicity_family or claim_family(spec.id)
        if key not in self.members.get(family, {}):
            self.declare(spec, [dataset], module_path)
            self.decided = {k: v for k, v in self.decided.items() if k not in self.members[family]}
        if key not in self.decided:
            self._decide_family(family)
        result = self.decided[key]
        if isinstance(result, BaseException):
            raise result
        result = result.evolve(diagnosis=diagnosis.cached_diagnosis(  # `lie-stats diagnose`'s cache
            result.id, result.dataset, result.spec_hash, Path(module_path).parent / diagnosis.DIAGNOSIS_FILE,
            self.datasets_dir, test=result.test, magnitude=bool(result.prediction.get("magnitude"))))
        # a rule that says "supported" too often under an alternative null does not say it here
        result = limit_to_calibrated(result)
        path = self.registry_path(module_path)
        pinned = self._registry(path).get(result.key)
        retired = None if pinned else gates.read_retired(path).get(result.key)
        gate = gates.check(result, pinned, update=self.update, registry=path, reason=self.pin_reason,
                           retired=retired)
        if gate.changed is not None:
            self.changed[result.key] = gate.changed
        if gate.pin is not None:  # re-pin every gate's verdict; only the pinned gate's check is skipped
            self.pins.setdefault(path, {})[result.key] = gate.pin
        return Evaluated(gate.annotate(result), gate)

    def out_of_scope(self, record: Any, module_path: str | os.PathLike | None = None) -> Any:
        """The result of an out-of-scope record: skipped with its reason, nothing diagnosed
        (``module_path``: its module, so that re-pinning retires its id's pins)."""
        if module_path is not None:
            self.declare_out_of_scope(record, module_path)
        from .diagnosis import empty_diagnosis

        return record.result().evolve(diagnosis=empty_diagnosis("out of scope: nothing is tested"),
                                      outcome="skipped")

    def write_pins(self) -> dict[Path, dict]:
        """Write the pins of this run (merged under each registry's lock) and, when
        re-pinning, retire the pins of results no longer evaluated (:meth:`retirements`);
        returns the pins written."""
        from .gates import update_registry

        retire = self.retirements() if self.update else {}
        self.retired_now = retire
        for path in sorted(set(self.pins) | set(retire)):
            update_registry(path, self.pins.get(path, {}), retire=retire.get(path))
        return self.pins

    def retired_pins(self) -> tuple[dict[str, Any], ...]:
        """The retired pins of every registry of this run, each with its ``key`` and
        ``registry`` (sorted by registry and key)."""
        from .gates import read_retired

        paths = set(self.registries) | set(self.pins) | {self.registry_path(m) for m in self.modules}
        paths |= set(self.out_of_scope_ids)
        return tuple({**entry, "key": key, "registry": str(path)}
                     for path in sorted(paths) for key, entry in sorted(read_retired(path).items()))

    def finish(self, results: Sequence[Any], *, outcomes: Mapping[str, str] | None = None,
               failures: Sequence[str] = (), errors: Sequence[str] = ()) -> ResultsTable:
        """Write the pins and return the run's table; ``outcomes`` (key -> pytest's
        outcome) replace the gates' outcomes where given."""
        self.write_pins()
        if outcomes is not None:
            results = [r.evolve(outcome=outcomes.get(r.key, "")) for r in results]
        return ResultsTable(tuple(results), tuple(failures), tuple(errors), self.retired_pins(),
                            tuple(section for section, _ in self.sections.values()), cubes=self.cubes)


def check_paths(paths: Sequence[str | os.PathLike]) -> None:
    """Each path is a hypothesis module (``.py``), a folder, or a ``file.py::node`` id.

    Raises
    ------
    SpecError
        A path does not exist (with a suggestion), or is a file that is not ``.py``.
    """
    for p in (Path(str(x).split("::")[0]) for x in paths):  # a pytest node id names its file
        if p.exists():
            if p.is_file() and p.suffix != ".py":
                raise SpecError(f"{p}: not a hypothesis module; expected a .py file or a folder "
                                f"of hypothesis modules.")
            continue
        parent = p.parent if str(p.parent) else Path(".")
        near = ([c.name for c in parent.iterdir()] if parent.is_dir() else [])
        raise SpecError(f"{p}: no such hypothesis module or folder.{did_you_mean(p.name, near)} "
                        f"Expected a .py file or a folder of hypothesis modules (default: hypotheses).")


def run(paths: Sequence[str | os.PathLike] = ("hypotheses",), *,
        datasets_dir: str | os.PathLike | None = None, update_verdicts: bool = False,
        registry: str | os.PathLike | None = None, strict: bool = False) -> ResultsTable:
    """Evaluate hypothesis modules without pytest: the same collection, evaluation,
    diagnosis, gates and pins as ``lie-stats run``, returned as a :class:`ResultsTable`
    (no report is written: :func:`lie_stats.report.write_reports` does that).

    Parameters
    ----------
    paths : sequence of path
        Hypothesis modules, folders (any name) or ``file.py::<id>[<dataset>]`` node ids.
    datasets_dir : path, optional
        The dataset cards' folder; by default ``./datasets`` when the current folder has
        one, else the bundled one.
    update_verdicts : bool
        Re-pin, as ``lie-stats run --update-verdicts``.
    registry : path, optional
        One registry for every module instead of ``verdicts.json`` beside each.
    strict : bool
        A module that cannot be collected is an error (nothing is evaluated); otherwise it
        is a failure of the table and the other modules run.

    Raises
    ------
    SpecError
        A path does not exist; with ``strict``, a module could not be collected.

    Examples
    --------
    >>> run(["no_such_folder"])
    Traceback (most recent call last):
    ...
    lie_stats.errors.SpecError: no_such_folder: no such hypothesis module or folder. Expected a .py file or a folder of hypothesis modules (default: hypotheses).
    """
    from . import collect

    check_paths(paths)
    engine = Engine(Path(datasets_dir) if datasets_dir is not None else None, update=update_verdicts,
                    registry=Path(registry) if registry is not None else None)
    found = collect.collect(paths, datasets_dir=engine.datasets_dir, dirs=None)
    errors = [str(e) for e in found.errors]
    failed = {e.path for e in found.errors}
    for module_path in [*found.modules, *(p for p in found.sections if p not in found.modules)]:
        try:  # a module the paths select part of gives its sections, but is not collected whole
            if module_path in found.modules:
                engine.collected(module_path, ok=module_path not in failed, sections=found.sections.get(module_path))
            else:
                engine.add_sections(module_path, found.sections[module_path])
        except SpecError as e:
            errors.append(str(e))
    if strict and errors:  # evaluate nothing: a partial run would look complete
        raise SpecError("hypothesis module(s) could not be collected:\n" + "\n".join(errors))
    results: list[Any] = []
    failures = list(errors)
    for decl in found.declarations:
        if decl.out_of_scope:
            engine.declare_out_of_scope(decl.obj, decl.path)
        else:
            engine.declare(decl.obj, decl.datasets, decl.path)
    for decl in found.declarations:
        if decl.out_of_scope:
            results.append(engine.out_of_scope(decl.obj))
            continue
        for ds in decl.datasets:
            key = f"{decl.obj.id}::{ds}"
            try:
                done = engine.evaluate(decl.obj, ds, decl.path)
            except Exception as e:  # noqa: BLE001 - this item fails; the others still run
                raise_if_stopped()
                failures.append(f"{key}: {type(e).__name__}: {e}")
                errors.append(failures[-1])
                continue
            results.append(done.result)
            if done.gate.failed:
                failures.append(f"{key}: {done.gate.message}")
    return engine.finish(results, failures=failures, errors=errors)
