"""What every reader returns (:class:`RawLog`) and the bounded column store it is built in (:class:`Columns`).

A reader hands each logged record (key -> value) to :meth:`Columns.add`. Values are kept only for the keys some
framework's mapping reads (``keep``: mapped keys, nesting timers, validation markers, step and time columns); any
other key name is remembered up to ``data/log_limits.toml`` ``max_unmapped_keys`` and counted beyond, so memory
does not grow with the number of distinct keys a log holds.

Cells: a number; absent where the key was not logged (``NaN``); a value that was logged but is not a finite number
(``NaN``, ``inf``, text) reads as ``inf``, so the measurement step can skip that step and say so.
"""

from __future__ import annotations

import functools
import math
import re
from array import array
from collections.abc import Collection, Iterable, Mapping
from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from .source import error, limits

__all__ = ["RawLog", "Columns", "number", "META_COLUMNS"]

#: W&B's own columns, and prime-rl's FileMonitor time stamp: never logged keys
META_COLUMNS = frozenset({"_step", "_runtime", "_timestamp", "_wandb", "step", "time"})

_INFINITE = (math.inf, -math.inf)
_WRAPPED = re.compile(r"^\s*(?:np|numpy|torch)?\.?\w*\((.*?)(?:,\s*\w+=.*)?\)\s*$")


def number(value) -> float:
    """A logged value as a float: ``np.float64(1.5)`` and ``tensor(1.5)`` -> 1.5; a bool, text or a value that is not
    finite -> inf (logged, but not a number)."""
    if isinstance(value, bool) or value is None:
        return math.inf
    if isinstance(value, int | float):
        x = float(value) if -1e300 < value < 1e300 else math.inf
    else:
        text = str(value).strip()
        try:
            x = float(text)
        except ValueError:
            m = _WRAPPED.match(text)
            try:
                x = float(m.group(1)) if m else math.inf
            except ValueError:
                x = math.inf
    return x if math.isfinite(x) else math.inf


@dataclass(frozen=True)
class RawLog:
    """Every record of a log: ``rows`` has one row per logged record and one float column per kept key (``NaN`` =
    not logged; ``inf`` = logged but not a finite number), the format's step column ``step_column`` and, where the
    format has them, ``_step``/``_runtime``/``_timestamp``.

    ``unmapped`` holds the names of logged keys no reader maps (at most ``max_unmapped_keys``; ``unmapped_more``
    counts those past it); ``notes`` says what a reader skipped or assumed (bad lines, a cut-off last line).
    """

    path: str
    format: str
    rows: pd.DataFrame
    step_column: str
    unmapped: frozenset[str] = frozenset()
    unmapped_more: int = 0
    notes: tuple[str, ...] = ()

    @functools.cached_property
    def keys(self) -> frozenset[str]:
        """The logged keys: kept columns with at least one value and the unmapped names, W&B's own columns and the
        step column left out."""
        present = self.rows.columns[self.rows.notna().any().to_numpy()]
        return (frozenset(str(c) for c in present) | self.unmapped) - META_COLUMNS - {self.step_column}


@dataclass
class Columns:
    """A bounded column store: ``add`` one record at a time, ``frame`` at the end."""

    keep: Collection[str]
    rename: Mapping[str, str] = field(default_factory=dict)
    path: str = ""
    n: int = 0
    unmapped_more: int = 0
    _cols: dict[str, tuple[array, array]] = field(default_factory=dict)
    _unmapped: dict[str, None] = field(default_factory=dict)
    _dense: dict[str, list[tuple[int, np.ndarray]]] = field(default_factory=dict)

    def add(self, record: Mapping[str, object] | Iterable[tuple[str, object]]) -> None:
        """One logged record (key -> value, or pairs); values of kept keys become floats (:func:`number`)."""
        row = self.n
        self.n = row + 1
        if not row & 0xFFFF:
            self.check_size()
        keep, cols, rename, unmapped = self.keep, self._cols, self.rename, self._unmapped
        for key, value in (record.items() if type(record) is dict or isinstance(record, Mapping) else record):
            if rename:
                key = rename.get(key, key)
            if key in keep:
                if type(value) is int:
                    value = float(value) if -1e300 < value < 1e300 else math.inf
                elif type(value) is not float or value != value or value in _INFINITE:
                    if isinstance(value, dict | list):
                        continue  # a nested value is not a key's value
                    value = number(value)
                col = cols.get(key)
                if col is None:
                    col = cols[key] = (array("i"), array("d"))
                col[0].append(row)
                col[1].append(value)
            elif key not in unmapped:
                self._unmapped_key(key)

    def put(self, row: int, key: str, value) -> None:
        """One value at a row already counted (``add`` counts the rows)."""
        key = self.rename.get(key, key)
        if key in self.keep:
            col = self._cols.get(key)
            if col is None:
                col = self._cols[key] = (array("i"), array("d"))
            col[0].append(row)
            col[1].append(number(value))
        elif key not in self._unmapped:
            self._unmapped_key(key)

    def _unmapped_key(self, key) -> None:
        if len(self._unmapped) < limits().max_unmapped_keys:
            if isinstance(key, str) and key.strip():
                self._unmapped[key] = None
        else:
            self.unmapped_more += 1

    def block(self, start: int, columns: Mapping[str, np.ndarray]) -> None:
        """Values of kept keys for the rows ``start, start + 1, ...`` (one float array a key, NaN = not logged), kept
        as they are: 8 bytes a cell, no row numbers."""
        for key, values in columns.items():
            self._dense.setdefault(key, []).append((start, np.asarray(values, dtype=np.float64)))
        self.check_size()

    def cells(self) -> int:
        """Values held, and the cells of the frame they make (rows x kept keys): the larger."""
        held = sum(len(v) for _, v in self._cols.values()) + sum(len(a) for c in self._dense.values() for _, a in c)
        return max(held, self.n * len(set(self._cols) | set(self._dense)))

    def check_size(self) -> None:
        """Refuse a log that would hold more than ``max_cells`` values (data/log_limits.toml): the bound on memory
        that no byte cap gives, since a dense CSV of mapped keys keeps every cell it reads."""
        if self.path and self.cells() > limits().max_cells:
            keys = len(set(self._cols) | set(self._dense))
            raise error(self.path, f"holds more than {limits().max_cells:,} values of the keys a reader maps "
                                   f"({self.n:,} rows x {keys} keys so far; data/log_limits.toml max_cells); a "
                                   "pilot needs tens of steps: export fewer steps, or the mapped keys only")

    def drop_last_row(self) -> None:
        """Forget the last row added (a cut-off last line)."""
        if self.n == 0:
            return
        self.n -= 1
        for rows, values in self._cols.values():
            while rows and rows[-1] >= self.n:
                rows.pop()
                values.pop()

    def renumber(self, key: str, values: list[float]) -> None:
        """Replace the values of ``key``, a kept key added once a row (a step column written while reading, before
        the real step numbers were known), in the order they were added."""
        rows, old = self._cols[key]
        if len(values) != len(old):
            raise ValueError(f"{key}: {len(values)} values for {len(old)} rows")
        self._cols[key] = (rows, array("d", (float(v) for v in values)))

    def has(self, key: str) -> bool:
        """Whether a value of the kept key ``key`` was added."""
        return key in self._cols or key in self._dense

    def frame(self) -> pd.DataFrame:
        """The rows as a frame, one float column a kept key; the store is emptied column by column as it goes, so
        the two are never both whole in memory."""
        self.check_size()
        out = {}
        for key in [*self._cols, *(k for k in self._dense if k not in self._cols)]:
            col = np.full(self.n, np.nan)
            if key in self._cols:
                rows, values = self._cols.pop(key)
                col[np.frombuffer(rows, dtype=np.int32)] = np.frombuffer(values, dtype=np.float64)
                del rows, values
            for start, values in self._dense.pop(key, []):
                col[start:start + len(values)] = values[:max(0, self.n - start)]
            out[key] = col
        return pd.DataFrame(out, index=pd.RangeIndex(self.n), copy=False)

    def raw(self, path: str, fmt: str, step_column: str, notes: Iterable[str] = ()) -> RawLog:
        notes = list(notes)
        if self.unmapped_more:
            notes.append(f"more than {limits().max_unmapped_keys:,} distinct unmapped keys: {self.unmapped_more:,} "
                         "more key occurrences were counted, not kept (data/log_limits.toml max_unmapped_keys)")
        return RawLog(path, fmt, self.frame(), step_column, frozenset(self._unmapped), self.unmapped_more,
                      tuple(notes))
