"""Gates: the registry of pinned verdicts, and whether a result passes its gate.

Pure: no pytest, no session state. The pytest plugin turns a :class:`GateOutcome` into an
item's pass, failure or skip; ``lie-stats export`` records it as the result's ``outcome``.

``replication``
    fails unless the verdict is ``supported``.
``pinned``
    fails when no verdict is pinned for the result, when the pinned verdict differs, or
    when the declaration changed since it was pinned (its pre-registration hash differs
    from the pinned one): re-pinning is an explicit step whose diff of the registry is the
    audit trail, as a snapshot test's would be.
``report``
    never fails.

A result is ``skipped`` only when its dataset's cube is absent (then the message gives the
command that builds it). A selection that matches nothing in a cube that is present (a
layer, family, projection or variable the cube lacks) is the declaration's error, not a
skip: evaluation raises :class:`lie_stats.spec.SelectionError`, and the item fails whatever
its gate, so a mistyped selection cannot pass CI with nothing tested.

Under every gate a declaration whose hash differs from the pinned one is flagged
(``declaration_changed``). A skipped result (its data are absent) is skipped whatever the
gate and is never re-pinned. Re-pinning (``update=True``) records every other verdict with
its hash and gate, passes the ``pinned`` gate and still fails a replication that is not
supported.

The registry (``verdicts.json`` beside the hypothesis modules) is a JSON object
``{"<id>::<dataset>": {"verdict", "spec_hash", "gate"[, "previous"][, "history"]}}``;
``previous`` is the pin that the last re-pinning replaced, ``{"verdict", "spec_hash"}``, when
that re-pinning changed the verdict or the declaration (kept until the next such change, so
that the report can say what the current version changed). ``history`` is the record of every
change to the result's declaration or rule, oldest first, ``[{"on": "YYYY-MM-DD", "change":
text}]``: a declaration reads as it stands, and what it was, and why it changed (and whether
its verdict had been seen), lives here and in git. A re-pinning that changes the verdict or
the declaration with a reason (``--pin-reason``) appends that reason, dated. The file is
written sorted and indented, each
write atomic (:func:`lie_stats._io.write_text_atomic`); re-pinning (:func:`update_registry`)
reads and writes it under a lock file beside it, so concurrent runs do not lose pins.

Its section ``"retired"`` (:data:`RETIRED`; no result's key, those hold ``::``) keeps the
pins of results that are no longer evaluated, each with its last verdict and
``retired_on`` (the UTC date) and ``retired_reason``: a claim now declared out of scope, or
a declaration removed. A retired pin is no live pin: no gate compares with it (a pinned
result declared again fails until it is re-pinned, its message naming the retirement), and
re-pinning the result brings it back as the pin it replaces (``previous``). The engine
retires while re-pinning (:meth:`lie_stats.engine.Engine.write_pins`).
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from . import columns as C
from .errors import SpecError

__all__ = [
    "REGISTRY_FILE",
    "RETIRED",
    "result_key",
    "read_registry",
    "read_retired",
    "retired_entry",
    "write_registry",
    "update_registry",
    "pin_entry",
    "with_previous",
    "declaration_changed",
    "GateOutcome",
    "check",
]

#: Name of the registry of pinned verdicts, beside the hypothesis modules.
REGISTRY_FILE = "verdicts.json"
#: The registry's section of retired pins (``{"<id>::<dataset>": {..., "retired_on",
#: "retired_reason"}}``).
RETIRED = "retired"
_SUPPORTED, _SKIPPED = C.SUPPORTED, C.SKIPPED
_REPLICATION, _PINNED = C.GATE_REPLICATION, C.GATE_PINNED
_DATE = re.compile(r"\d{4}-\d{2}-\d{2}")  # a history entry's "on"


def result_key(result: Any) -> str:
    """The registry key of a result: ``<id>::<dataset>``.

    Examples
    --------
    >>> result_key({"id": "X1", "dataset": "pico_pythia"})
    'X1::pico_pythia'
    """
    get = result.get if isinstance(result, Mapping) else lambda name: getattr(result, name)
    return f"{get('id')}::{get('dataset')}"


def read_registry(path: str | os.PathLike) -> dict[str, dict[str, Any]]:
    """The pinned verdicts of ``path`` (its live pins, not the retired ones: :func:`read_retired`);
    ``{}`` when the file does not exist.

    Raises
    ------
    SpecError
        The file is not JSON, not an object of objects, or an entry's ``verdict`` or
        ``spec_hash`` is missing or malformed (the message names the file and the key).

    Examples
    --------
    >>> import tempfile, pathlib
    >>> p = pathlib.Path(tempfile.mkdtemp()) / "verdicts.json"
    >>> read_registry(p)
    {}
    >>> _ = p.write_text('{"X1::toy": {"verdict": "supported", "spec_hash": "ab"}}')
    >>> read_registry(p)["X1::toy"]["verdict"]
    'supported'
    >>> _ = p.write_text('{"X1::toy": {"verdict": "true"}}')
    >>> read_registry(p)
    Traceback (most recent call last):
    ...
    lie_stats.errors.SpecError: ...verdicts.json: entry 'X1::toy', field 'verdict': 'true' is not a verdict; expected one of supported, refuted, inconclusive, skipped.
    """
    return _read(path)[0]


def read_retired(path: str | os.PathLike) -> dict[str, dict[str, Any]]:
    """The retired pins of ``path`` (its section :data:`RETIRED`); ``{}`` when there are none.

    Raises
    ------
    SpecError
        As :func:`read_registry`; a retired entry without its ``retired_on`` or
        ``retired_reason`` (a string each).

    Examples
    --------
    >>> import tempfile, pathlib
    >>> p = pathlib.Path(tempfile.mkdtemp()) / "verdicts.json"
    >>> _ = p.write_text('{"retired": {"X1::toy": {"verdict": "refuted", "spec_hash": "ab", '
    ...                  '"retired_on": "2026-12-05", "retired_reason": "out of scope: r"}}}')
    >>> read_registry(p), read_retired(p)["X1::toy"]["retired_reason"]
    ({}, 'out of scope: r')
    """
    return _read(path)[1]


def _read(path: str | os.PathLike) -> tuple[dict[str, dict[str, Any]], dict[str, dict[str, Any]]]:
    """The live pins and the retired ones of the registry at ``path``, each entry checked."""
    from ._io import path_problem, read_json

    path = Path(path)
    problem = path_problem(path)
    if problem is not None:  # a folder or a FIFO where the registry belongs: not "no pins"
        raise SpecError(f"{path}: {problem}; expected the registry of pinned verdicts (JSON).")
    if not path.is_file():
        return {}, {}
    try:
        data = read_json(path, what="the registry of pinned verdicts", error=SpecError)
    except SpecError as e:
        raise SpecError(f"{path}: the registry of pinned verdicts is not JSON "
                        f"({str(e).removeprefix(f'{path}: ')}).") from None
    if not isinstance(data, dict):
        raise SpecError(f"{path}: the registry must be a JSON object of "
                        f"'<id>::<dataset>' -> {{verdict, spec_hash}}.")
    retired = data.pop(RETIRED, {})
    if not isinstance(retired, dict):
        raise SpecError(f"{path}: section {RETIRED!r}: expected an object of '<id>::<dataset>' -> "
                        f"the retired pin, got {type(retired).__name__}.")
    for key, entry in data.items():
        _check_entry(entry, f"{path}: entry {key!r}")
    for key, entry in retired.items():
        where = f"{path}: retired entry {key!r}"
        _check_entry(entry, where)
        for name in ("retired_on", "retired_reason"):
            if not isinstance(entry.get(name), str):
                raise SpecError(f"{where}, field {name!r}: expected a string (the date of the "
                                f"retirement, and why), got {entry.get(name)!r}.")
    return data, retired


def _check_entry(entry: Any, where: str) -> None:
    if not isinstance(entry, dict):
        raise SpecError(f"{where}: expected an object {{verdict, spec_hash, gate}}, "
                        f"got {type(entry).__name__}.")
    verdict = entry.get("verdict")
    if verdict not in C.VERDICTS:
        raise SpecError(f"{where}, field 'verdict': {verdict!r} is not a verdict; expected "
                        f"one of {', '.join(C.VERDICTS)}.")
    if not isinstance(entry.get("spec_hash"), str):
        raise SpecError(f"{where}, field 'spec_hash': expected the declaration's hash (a "
                        f"string), got {entry.get('spec_hash')!r}.")
    if entry.get("gate") is not None and entry.get("gate") not in C.GATES:
        raise SpecError(f"{where}, field 'gate': {entry.get('gate')!r} is not a gate; expected "
                        f"one of {', '.join(C.GATES)}.")
    prev = entry.get("previous")
    if prev is not None and not (isinstance(prev, dict) and prev.get("verdict") in C.VERDICTS
                                 and isinstance(prev.get("spec_hash"), str)):
        raise SpecError(f"{where}, field 'previous': expected the replaced pin "
                        f"{{verdict, spec_hash}}, got {prev!r}.")
    history = entry.get("history")
    if history is not None and not (isinstance(history, list) and all(
            isinstance(h, dict) and set(h) == {"on", "change"} and isinstance(h["on"], str)
            and _DATE.fullmatch(h["on"]) and isinstance(h["change"], str) and h["change"].strip()
            for h in history)):
        raise SpecError(f"{where}, field 'history': expected a list of changes "
                        f"{{\"on\": \"YYYY-MM-DD\", \"change\": text}}, got {history!r:.200}.")


def write_registry(path: str | os.PathLike, data: Mapping[str, Mapping[str, Any]],
                   retired: Mapping[str, Mapping[str, Any]] | None = None) -> Path:
    """Write the whole registry atomically (sorted keys, two-space indent, final newline):
    the live pins ``data`` and, when there are any, the ``retired`` ones (section :data:`RETIRED`).

    Examples
    --------
    >>> import tempfile, pathlib
    >>> p = write_registry(pathlib.Path(tempfile.mkdtemp()) / "verdicts.json",
    ...                    {"X1::toy": {"verdict": "refuted", "spec_hash": "ab", "gate": "pinned"}})
    >>> print(p.read_text(), end="")
    {
      "X1::toy": {
        "gate": "pinned",
        "spec_hash": "ab",
        "verdict": "refuted"
      }
    }
    """
    from ._io import write_text_atomic

    doc = {k: dict(v) for k, v in data.items()}
    if RETIRED in doc:
        raise SpecError(f"{path}: {RETIRED!r} is the registry's section of retired pins, not a result's key.")
    if retired:
        doc[RETIRED] = {k: dict(v) for k, v in retired.items()}
    text = json.dumps(doc, indent=2, sort_keys=True) + "\n"
    return write_text_atomic(path, text)


def update_registry(path: str | os.PathLike, pins: Mapping[str, Mapping[str, Any]],
                    retire: Mapping[str, str] | None = None) -> dict[str, dict[str, Any]]:
    """Re-pin: the registry at ``path`` with ``pins`` replacing or adding their keys, written
    atomically; the other pins are kept. Returns the live pins written.

    ``retire`` (key -> why) moves those live pins to the section of retired pins
    (:func:`retired_entry`, dated today, UTC); a key ``pins`` re-pins is not retired. A key
    re-pinned that was retired comes back: the retired pin is the one it replaces.

    The file is read, merged and written while holding an ``fcntl`` lock on
    ``.verdicts.json.lock`` beside it (:func:`lie_stats._io.file_lock`), so concurrent
    re-pinning runs never lose each other's pins.

    Examples
    --------
    >>> import tempfile, pathlib
    >>> p = pathlib.Path(tempfile.mkdtemp()) / "verdicts.json"
    >>> _ = update_registry(p, {"A::d": {"verdict": "refuted", "spec_hash": "1", "gate": "pinned"}})
    >>> sorted(update_registry(p, {"B::d": {"verdict": "supported", "spec_hash": "2", "gate": "report"}}))
    ['A::d', 'B::d']
    >>> sorted(update_registry(p, {}, retire={"A::d": "out of scope: r"})), sorted(read_retired(p))
    (['B::d'], ['A::d'])
    >>> update_registry(p, {"A::d": {"verdict": "supported", "spec_hash": "1", "gate": "pinned"}})["A::d"]["previous"]
    {'verdict': 'refuted', 'spec_hash': '1'}
    >>> read_retired(p)
    {}
    """
    from ._io import file_lock

    # read, merge and write under the registry's lock: two runs re-pinning different
    # modules at once each keep the other's pins (read at write time, not session start)
    Path(path).parent.mkdir(parents=True, exist_ok=True)
    with file_lock(path):
        data, retired = _read(path)
        for key, pin in pins.items():
            old = data.get(key) if key in data else retired.pop(key, None)
            data[key] = with_previous(old, pin)
        for key, why in (retire or {}).items():
            if key in data and key not in pins:
                retired[key] = retired_entry(data.pop(key), why)
        write_registry(path, data, retired)
    return data


def retired_entry(pin: Mapping[str, Any], reason: str, on: str | None = None) -> dict[str, Any]:
    """``pin`` retired: its fields (the last verdict, its hash, gate and ``previous``) with
    ``retired_on`` (``on``, default today's UTC date) and ``retired_reason``.

    Examples
    --------
    >>> retired_entry({"verdict": "refuted", "spec_hash": "ab", "gate": "pinned"}, "why", "2026-12-05")
    {'verdict': 'refuted', 'spec_hash': 'ab', 'gate': 'pinned', 'retired_on': '2026-12-05', 'retired_reason': 'why'}
    """
    return {**{k: v for k, v in pin.items() if k not in ("retired_on", "retired_reason")},
            "retired_on": on or _today(), "retired_reason": str(reason)}


def _today() -> str:
    """Today's UTC date, ``YYYY-MM-DD`` (a retirement's and a history entry's date)."""
    import datetime as dt

    return dt.datetime.now(dt.timezone.utc).date().isoformat()


def with_previous(old: Mapping[str, Any] | None, pin: Mapping[str, Any], on: str | None = None) -> dict[str, Any]:
    """``pin`` with the pin it replaces as ``previous`` when the verdict or the declaration's
    hash changed; an unchanged re-pin keeps the earlier ``previous``. The ``history`` of
    ``old`` is kept; a change made with a reason appends it, dated ``on`` (default today, UTC).

    Examples
    --------
    >>> old = {"verdict": "supported", "spec_hash": "ab", "gate": "pinned"}
    >>> with_previous(old, {"verdict": "refuted", "spec_hash": "ab", "gate": "pinned"})["previous"]
    {'verdict': 'supported', 'spec_hash': 'ab'}
    >>> new = with_previous(old, {"verdict": "refuted", "spec_hash": "ab", "gate": "pinned"})
    >>> with_previous(new, {"verdict": "refuted", "spec_hash": "ab", "gate": "pinned"})["previous"]["verdict"]
    'supported'
    >>> "previous" in with_previous(None, old)
    False
    >>> with_previous(old, {"verdict": "refuted", "spec_hash": "ab", "gate": "pinned", "reason": "rule"})["previous"]
    {'verdict': 'supported', 'spec_hash': 'ab', 'reason': 'rule'}
    >>> old["history"] = [{"on": "2026-12-02", "change": "the band is declared"}]
    >>> with_previous(old, {"verdict": "refuted", "spec_hash": "cd", "gate": "pinned", "reason": "n_boot 30"},
    ...               on="2026-12-05")["history"][-1]
    {'on': '2026-12-05', 'change': 'n_boot 30'}
    """
    out = {k: v for k, v in pin.items() if k not in ("previous", "reason", "history")}
    if old is None:
        return out
    history = [dict(h) for h in old.get("history") or ()]
    if (old.get("verdict"), old.get("spec_hash")) != (out.get("verdict"), out.get("spec_hash")):
        out["previous"] = {"verdict": old.get("verdict"), "spec_hash": old.get("spec_hash")}
        if pin.get("reason"):  # why this re-pinning changed it (--pin-reason)
            out["previous"]["reason"] = str(pin["reason"])
            history.append({"on": on or _today(), "change": str(pin["reason"])})
    elif old.get("previous"):
        out["previous"] = dict(old["previous"])
    if history:
        out["history"] = history
    return out


def pin_entry(result: Any) -> dict[str, Any]:
    """The registry entry that pins ``result``: its verdict, declaration hash and gate.

    Examples
    --------
    >>> pin_entry({"verdict": "refuted", "spec_hash": "ab", "gate": "pinned", "p_value": 0.2})
    {'verdict': 'refuted', 'spec_hash': 'ab', 'gate': 'pinned'}
    """
    get = result.get if isinstance(result, Mapping) else lambda name: getattr(result, name)
    return {"verdict": get("verdict"), "spec_hash": get("spec_hash"), "gate": get("gate")}


def declaration_changed(pinned: Mapping[str, Any] | None, spec_hash: str) -> bool:
    """Whether a declaration changed after its verdict was pinned (the hashes differ).

    Examples
    --------
    >>> declaration_changed({"verdict": "refuted", "spec_hash": "ab"}, "ab")
    False
    >>> declaration_changed({"verdict": "refuted", "spec_hash": "ab"}, "cd"), declaration_changed(None, "cd")
    (True, False)
    """
    return bool(pinned) and pinned.get("spec_hash") != spec_hash


@dataclass(frozen=True)
class GateOutcome:
    """What a result's gate says about it.

    Attributes
    ----------
    outcome : str
        ``"passed"``, ``"failed"`` or ``"skipped"`` (as pytest's outcome of its item).
    message : str
        Why it failed or was skipped (``""`` when it passed).
    pinned_verdict, pinned_hash : str or None
        The registry's pin of the result, if any.
    declaration_changed : bool
        The declaration's hash differs from the pinned one.
    changed : tuple of str, or None
        ``(pinned hash, hash now)`` when the declaration changed and is not being
        re-pinned: the flag a run shows.
    pin : dict or None
        The entry to write to the registry (re-pinning a result that was not skipped).
    previous_pin : dict or None
        The pin the last re-pinning replaced (``{"verdict", "spec_hash"}``), if it changed
        the verdict or the declaration.
    history : list of dict, or None
        The pin's record of changes (``[{"on", "change"}]``, oldest first), if any.
    """

    outcome: str
    message: str = ""
    pinned_verdict: str | None = None
    pinned_hash: str | None = None
    declaration_changed: bool = False
    changed: tuple[str, str] | None = None
    pin: dict[str, Any] | None = None
    previous_pin: dict[str, Any] | None = None
    history: list[dict[str, str]] | None = None

    @property
    def failed(self) -> bool:
        return self.outcome == "failed"

    def annotate(self, result: Any) -> Any:
        """``result`` with the pin, the flag and the outcome (``pinned_verdict``,
        ``pinned_hash``, ``declaration_changed``, ``previous_pin``, ``pin_history``,
        ``outcome``, as results.json reports them): a new result, ``result`` is left as it is."""
        return result.evolve(pinned_verdict=self.pinned_verdict, pinned_hash=self.pinned_hash,
                             declaration_changed=self.declaration_changed,
                             previous_pin=self.previous_pin, pin_history=self.history,
                             outcome=self.outcome)


def check(result: Any, pinned: Mapping[str, Any] | None, *, update: bool = False,
          registry: str | os.PathLike = REGISTRY_FILE, reason: str = "",
          retired: Mapping[str, Any] | None = None) -> GateOutcome:
    """The gate's outcome for one evaluated result and its pin (see the module docstring).

    Parameters
    ----------
    result : lie_stats.spec.Result
        With ``id``, ``dataset``, ``gate``, ``verdict``, ``reason``, ``build`` and
        ``spec_hash``.
    pinned : mapping or None
        The result's entry in the registry (:func:`read_registry`), if any.
    update : bool
        Re-pinning: the outcome carries the entry to write and the ``pinned`` gate passes.
    registry : path
        The registry's file, named in the message of a missing pin.
    reason : str
        Re-pinning: why, recorded in the ``previous`` entry of a pin this re-pinning changes.
    retired : mapping or None
        The result's retired pin (:func:`read_retired`), if it has one and no live pin: it
        is compared with nothing; a ``pinned`` gate's message names the retirement.

    Returns
    -------
    GateOutcome

    Examples
    --------
    >>> from lie_stats.spec import Result
    >>> r = Result(id="P1", claim="c", source="s", dataset="toy", verdict="refuted", reason="r",
    ...            gate="pinned", test="correlation", spec_hash="ab" * 32, reference={})
    >>> check(r, None).message
    "pinned gate: no verdict pinned for P1::toy in verdicts.json; run with --update-verdicts to pin 'refuted'"
    >>> check(r, {"verdict": "refuted", "spec_hash": "ab" * 32}).outcome
    'passed'
    >>> out = check(r, {"verdict": "refuted", "spec_hash": "cd" * 32})
    >>> out.outcome, out.declaration_changed, out.changed[0][:4]
    ('failed', True, 'cdcd')
    >>> check(r, None, update=True).pin["verdict"]
    'refuted'
    """
    key = result_key(result)
    spec_hash = result.spec_hash
    changed = declaration_changed(pinned, spec_hash)
    now = _pin_now(pinned, result, update, reason)
    previous = dict(now["previous"]) if now.get("previous") else None
    history = now.get("history")
    fields = dict(pinned_verdict=pinned.get("verdict") if pinned else None,
                  pinned_hash=pinned.get("spec_hash") if pinned else None,
                  # against the pin, or, once re-pinned, against the pin it replaced
                  declaration_changed=changed or bool(previous and previous.get("spec_hash") != spec_hash),
                  changed=(pinned.get("spec_hash"), spec_hash) if changed and not update else None,
                  previous_pin=previous, history=list(history) if history else None)
    if result.verdict == _SKIPPED:
        build = f" Build it with: {result.build}" if getattr(result, "build", "") else ""
        return GateOutcome("skipped", f"{key}: {result.reason}.{build}", **fields)
    fields["pin"] = ({**pin_entry(result), **({"reason": reason} if reason else {})}
                     if update else None)
    gate = result.gate
    if gate == _REPLICATION and result.verdict != _SUPPORTED:
        return GateOutcome("failed", f"replication gate: verdict {result.verdict!r}, needs "
                                     f"'supported' ({result.reason})", **fields)
    if gate == _PINNED and not update:
        if pinned is None and retired:
            return GateOutcome("failed", f"pinned gate: the pin of {key} in {registry} was retired on "
                                         f"{retired.get('retired_on')} ({retired.get('retired_reason')}; "
                                         f"its last verdict {retired.get('verdict')!r}); the result is "
                                         f"declared again: run with --update-verdicts to pin "
                                         f"{result.verdict!r}", **fields)
        if pinned is None:
            return GateOutcome("failed", f"pinned gate: no verdict pinned for {key} in {registry}; "
                                         f"run with --update-verdicts to pin {result.verdict!r}", **fields)
        if pinned.get("verdict") != result.verdict:
            return GateOutcome("failed", f"pinned gate: verdict changed: pinned "
                                         f"{pinned.get('verdict')!r} -> now {result.verdict!r}", **fields)
        if changed:
            return GateOutcome("failed", "pinned gate: the declaration changed after pinning "
                                         f"(hash {str(pinned.get('spec_hash'))[:12]} -> "
                                         f"{spec_hash[:12]}); review and re-pin with "
                                         f"--update-verdicts", **fields)
    return GateOutcome("passed", **fields)


def _pin_now(pinned: Mapping[str, Any] | None, result: Any, update: bool, reason: str = "") -> Mapping[str, Any]:
    """The result's pin as it stands after this check: the registry's, or, while re-pinning,
    the one :func:`update_registry` will write (its ``previous`` and ``history`` included);
    empty when there is none."""
    if not pinned:
        return {}
    return with_previous(pinned, {**pin_entry(result), "reason": reason}) if update else pinned
