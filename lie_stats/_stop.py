"""Whether this process was asked to stop (SIGINT, SIGTERM), readable from any layer.

The signal handlers themselves live in :mod:`lie_stats.executors` (``stop_on_signals``); they
record each stop signal here. Code below the executors reads this state where a library may
hand back an interrupt wrapped in its own error (a safetensors read interrupted by Ctrl-C can
surface as a ``SafetensorError``): once a stop was requested, that error is the interruption,
not a bad file.
"""

from __future__ import annotations

import signal

__all__ = ["Terminated", "record_signal", "signals_received", "stop_requested", "raise_if_stopped"]

_signalled: list[int] = []  # the stop signals received, in order


class Terminated(KeyboardInterrupt):
    """SIGTERM (``kill``, a batch scheduler's time limit), handled as Ctrl-C."""


def record_signal(signum: int) -> int:
    """Record a stop signal; how many have been received so far."""
    _signalled.append(signum)
    return len(_signalled)


def signals_received() -> tuple[int, ...]:
    """The stop signals received, in order."""
    return tuple(_signalled)


def stop_requested() -> bool:
    """Whether this process received SIGINT or SIGTERM under ``stop_on_signals``."""
    return bool(_signalled)


def raise_if_stopped() -> None:
    """Raise :class:`KeyboardInterrupt` (:class:`Terminated` for SIGTERM) if a stop signal came."""
    if _signalled:
        raise Terminated() if _signalled[0] == signal.SIGTERM else KeyboardInterrupt()
