"""Typed errors of the public API (every error a user can cause is one of these, raised by name).

Every error a user can meet is one of these, so callers (the app, the command line, notebooks)
can tell "you typed a name we do not know" from "this does not fit" from "this input is bad".
"""

from __future__ import annotations

__all__ = [
    "TcocalcError",
    "UnknownEntryError",
    "InfeasibleError",
    "ScenarioError",
    "MeasurementError",
    "MissingSpecError",
    "DataFileError",
    "shown",
    "ECHO_LIMIT",
    "MESSAGE_LIMIT",
]

ECHO_LIMIT = 120
"""Most characters of a key, name or value an error message echoes (a 10,000-character key used to come back whole)."""
MESSAGE_LIMIT = 1_000
"""Most characters of an error's message text."""


def shown(text: object, limit: int = ECHO_LIMIT) -> str:
    """``text`` as an error message echoes it: at most ``limit`` characters, then how many there were."""
    text = str(text)
    return text if len(text) <= limit else f"{text[:limit]}... ({len(text):,} characters)"


class TcocalcError(Exception):
    """Base class of every error raised by tcocalc."""


class UnknownEntryError(TcocalcError, KeyError):
    """A catalog name (hardware, model, price list) that does not exist.

    ``matches`` lists the closest known names, best first.
    """

    def __init__(self, kind: str, name: str, matches: list[str] | tuple[str, ...] = ()):
        self.kind = kind
        self.name = name
        self.matches = tuple(matches)
        hint = f"; did you mean {', '.join(repr(shown(m)) for m in self.matches)}?" if self.matches else ""
        super().__init__(f"unknown {kind} {shown(repr(name))}{hint}")

    def __str__(self) -> str:  # KeyError would print the repr of the message
        return self.args[0]


class InfeasibleError(TcocalcError, ValueError):
    """A request that cannot run: it does not fit in memory, or no layout divides the GPUs.

    Where an alternative exists it is carried as typed attributes, never only in the message:
    ``min_gpus`` (int or None) is the smallest GPU count that would fit, and ``layout``
    (:class:`~tcocalc.roofline.parallel.Parallelism` or None) the layout that would.
    """

    def __init__(self, message: str, *, min_gpus: int | None = None, layout: object | None = None):
        self.min_gpus = None if min_gpus is None else int(min_gpus)
        self.layout = layout
        super().__init__(message)


class ScenarioError(TcocalcError, ValueError):
    """Bad input: names the offending ``field`` (a dotted path such as ``workload.group_size``).

    Input with several faults found at once (a scenario file's fields) carries all of them in ``problems``,
    ``(field, message)`` pairs, the first being ``field`` and ``message``; the text lists them all, fields with the
    same message together ("trainer.gpus, generator.gpus: Input should be greater than or equal to 1; ...")."""

    def __init__(self, field: str, message: str, *, problems: tuple[tuple[str, str], ...] = ()):
        self.field = field  # whole, for code; the text echoes at most ECHO_LIMIT characters of it
        self.message = message  # the text without the field, for re-raising under a longer path
        self.problems = tuple(problems) or ((field, message),)
        if len(self.problems) > 1:
            grouped: dict[str, list[str]] = {}
            for f, m in self.problems:
                grouped.setdefault(shown(m, MESSAGE_LIMIT), []).append(shown(f))
            super().__init__(shown("; ".join(f"{', '.join(fs)}: {m}" for m, fs in grouped.items()), MESSAGE_LIMIT))
        else:
            text = shown(message, MESSAGE_LIMIT)
            super().__init__(f"{shown(field)}: {text}" if field else text)


class MeasurementError(ScenarioError):
    """A pilot-run log that gives no measurements: ``field`` is ``path``, ``framework``, ``steps`` or the logged key
    at fault; ``path``, ``key`` and ``step`` are set where known (the message names them too)."""

    def __init__(self, field: str, message: str, *, path: str | None = None, key: str | None = None,
                 step: int | None = None):
        self.path, self.key, self.step = path, key, step
        super().__init__(field, message)


class MissingSpecError(TcocalcError, LookupError):
    """A figure the hardware (or a data table) does not have, e.g. FP4 peak on a Hopper GPU.

    Raised instead of assuming or extrapolating a value.
    """


class DataFileError(TcocalcError, ValueError):
    """A shipped or user data file that fails validation; names the file, entry and field."""

    def __init__(self, path: str, entry: str, field: str, message: str):
        self.path, self.entry, self.field = path, entry, field
        super().__init__(f"{path}: entry {entry!r}, field {field!r}: {message}")
