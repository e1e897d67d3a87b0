"""Read a pilot run's logged metrics into one table of rows, whatever the export format.

Formats (detected from the content; a ``.log``/``.txt``/``.out`` file is searched for console lines first):

- ``wandb-csv``: a W&B run-history CSV (``run.history()`` / ``run.scan_history()`` written out, or the run's
  history export): one column per key plus ``_step``, ``_runtime``, ``_timestamp``; a key is empty where it was
  not logged (https://docs.wandb.ai/models/track/log).
- ``jsonl``: one JSON object a line; verl's ``file`` backend writes ``{"step": N, "data": {...}}``
  (verl-project/verl@1dda039b9c63:verl/utils/tracking.py), prime-rl's FileMonitor flat ``{"step": N, "time": t,
  <key>: value, ...}`` rows, several a step (PrimeIntellect-ai/prime-rl@559b44772e47:src/prime_rl/monitors/).
- ``verl-console``: verl's console logger, ``step:N - key:value - key:value ...`` a line, numpy values possibly
  printed as ``np.float64(...)`` (verl-project/verl@1dda039b9c63:verl/utils/logger/aggregate_logger.py); other
  lines (and a prefix before ``step:``) are skipped.
- ``tensorboard-csv``: TensorBoard scalars in long form, columns ``tag``, ``step``, ``value`` and optionally
  ``wall_time`` and ``run`` (any case), as written from the tensorboard package's ``EventAccumulator``
  (``(wall_time, step, value)`` per tag).
- ``tensorboard-tag-csv``: a folder of TensorBoard's per-tag CSV downloads (header ``Wall time,Step,Value``), one file a
  tag; a single such file reads the same way. See :func:`tag_from_filename` for how the tag is recovered.

A log holds one run: a ``run`` column (or ``run-<name>-tag-`` file names) with two runs is refused.

Cells: a number; empty where the key was not logged (``NaN``); a cell that was logged but is not a finite number
(``NaN``, ``inf``, text) reads as ``inf``, so the caller can refuse it at the step it is used.
"""

from __future__ import annotations

import csv
import functools
import io
import json
import math
import re
from collections.abc import Collection
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import unquote

import numpy as np
import pandas as pd

from ..errors import MeasurementError

__all__ = ["MAX_LOG_BYTES", "RawLog", "read_log", "detect_format", "tag_from_filename", "FORMATS"]

#: Largest log read, in bytes (a folder: its CSV files together); a 10,000-step W&B export of 200 keys is ~20 MB.
MAX_LOG_BYTES = 200_000_000
FORMATS = ("wandb-csv", "jsonl", "verl-console", "tensorboard-csv", "tensorboard-tag-csv")
#: W&B's own columns, and prime-rl's FileMonitor time stamp: never logged keys
META_COLUMNS = frozenset({"_step", "_runtime", "_timestamp", "_wandb", "step", "time"})

_CONSOLE = re.compile(r"(?:^|[\s|)\]])step:(\d+) - (.+)$", re.MULTILINE)
_NUMPY = re.compile(r"^(?:np|numpy)\.\w+\((.*)\)$")
_TB_HEADER = ["wall time", "step", "value"]
_CONSOLE_SUFFIXES = {".log", ".txt", ".out", ".err"}


@dataclass(frozen=True)
class RawLog:
    """Every record of a log: ``rows`` has one row per logged record and one float column per key (``NaN`` = not
    logged; ``inf`` = logged but not a finite number) plus the format's step column ``step_column`` and, where the
    format has them, W&B's ``_step``/``_runtime``/``_timestamp`` (TensorBoard wall times read as ``_timestamp``)."""

    path: str
    format: str
    rows: pd.DataFrame
    step_column: str

    @functools.cached_property
    def keys(self) -> frozenset[str]:
        """The logged keys: columns with at least one value, W&B's own columns and the step columns left out."""
        present = self.rows.columns[self.rows.notna().any().to_numpy()]
        return frozenset(str(c) for c in present) - META_COLUMNS - {self.step_column}


def _error(path: str, message: str) -> MeasurementError:
    return MeasurementError("path", f"{path}: {message}", path=path)


def _size(path: Path) -> int:
    if path.is_dir():
        return sum(f.stat().st_size for f in path.glob("*.csv"))
    return path.stat().st_size


def _text(path: Path, shown: str) -> str:
    try:
        return path.read_text(encoding="utf-8-sig")
    except UnicodeDecodeError as exc:
        raise _error(shown, f"not UTF-8 text ({exc.reason} at byte {exc.start})") from None
    except OSError as exc:
        raise _error(shown, f"cannot be read ({exc.strerror or exc})") from None


def detect_format(text: str, suffix: str = "") -> str:
    """The format of a log file's ``text`` (one of :data:`FORMATS`), or ``""`` when it is
    none of them. ``suffix`` (``".log"``, ...) makes console lines win over a first line that looks like CSV."""
    lines = [line for line in text.splitlines()[:200] if line.strip()]
    if not lines:
        return ""
    console = any(_CONSOLE.search(line) for line in lines)
    if console and suffix.lower() in _CONSOLE_SUFFIXES:
        return "verl-console"
    first = lines[0].strip()
    if first.startswith("{"):
        return "jsonl"
    if console:
        return "verl-console"
    if "," in first:
        header = [c.strip().lower() for c in next(csv.reader([first]))]
        if header == _TB_HEADER:
            return "tensorboard-tag-csv"
        return "tensorboard-csv" if {"tag", "step", "value"} <= set(header) else "wandb-csv"
    return ""


# ---------------------------------------------------------------- cells


def _numeric(column: pd.Series, parse=None) -> pd.Series:
    """Floats: empty -> NaN (not logged); logged but not a finite number -> inf. ``parse`` (text -> float) is tried
    on the cells that are not plain numbers."""
    present = column.notna()
    try:
        values = pd.to_numeric(column, errors="coerce").astype(float)
    except (TypeError, ValueError):  # lists or tables in a cell
        values = pd.to_numeric(column.map(lambda v: v if isinstance(v, int | float | str) else None),
                               errors="coerce").astype(float)
    if parse is not None:
        retry = present & values.isna()
        if retry.any():
            values[retry] = column[retry].map(parse)
    bad = present.to_numpy() & ~np.isfinite(values.to_numpy())
    if bad.any():
        values = values.where(~bad, math.inf)
    return values


def _console_number(text: str) -> float:
    """A console value as a float (``np.float64(1.5)`` -> 1.5); not a finite number -> inf."""
    try:
        number = float(text)
    except ValueError:
        m = _NUMPY.match(text.strip())
        try:
            number = float(m.group(1)) if m else math.inf
        except ValueError:
            number = math.inf
    return number if math.isfinite(number) else math.inf


def _csv(text: str, shown: str) -> pd.DataFrame:
    try:
        frame = pd.read_csv(io.StringIO(text), keep_default_na=False, na_values=[""], low_memory=False)
    except (pd.errors.ParserError, ValueError) as exc:
        raise _error(shown, f"not a readable CSV ({str(exc).strip()})") from None
    return frame


def _numeric_frame(frame: pd.DataFrame) -> pd.DataFrame:
    return pd.DataFrame({c: _numeric(frame[c]) for c in frame.columns}, index=frame.index)


# ---------------------------------------------------------------- formats


def _read_wandb(text: str, shown: str) -> RawLog:
    frame = _csv(text, shown)
    if "_step" not in frame.columns and "step" not in frame.columns:
        raise _error(shown, "a CSV without a _step column (a W&B history export) or tag/step/value columns "
                            "(TensorBoard scalars)")
    return RawLog(shown, "wandb-csv", _numeric_frame(frame), "_step" if "_step" in frame.columns else "step")


def _read_jsonl(text: str, shown: str) -> RawLog:
    records = []
    decoder = json.JSONDecoder(parse_constant=lambda _: math.inf)  # NaN, Infinity: logged, but not finite
    for number, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        try:
            obj = decoder.decode(line)
        except json.JSONDecodeError as exc:
            raise _error(shown, f"line {number} is not JSON ({exc.msg})") from None
        if not isinstance(obj, dict):
            raise _error(shown, f"line {number} is not a JSON object")
        if isinstance(obj.get("data"), dict) and "step" in obj:  # verl's file backend
            obj = {"step": obj["step"], **obj["data"]}
        records.append(obj)
    frame = _numeric_frame(pd.DataFrame.from_records(records))
    return RawLog(shown, "jsonl", frame, "step" if "step" in frame.columns else "_step")


def _read_console(text: str, shown: str) -> RawLog:
    records = []
    for m in _CONSOLE.finditer(text):
        record = dict(pair.rpartition(":")[::2] for pair in m.group(2).split(" - "))
        record["step"] = m.group(1)
        records.append(record)
    frame = pd.DataFrame.from_records(records)
    frame = frame.drop(columns=[c for c in frame.columns if not str(c).strip()])
    frame = pd.DataFrame({c: _numeric(frame[c], _console_number) for c in frame.columns}, index=frame.index)
    return RawLog(shown, "verl-console", frame, "step")


def _column(frame: pd.DataFrame, *names: str) -> str | None:
    lower = {str(c).strip().lower().replace(" ", "_"): c for c in frame.columns}
    return next((lower[n] for n in names if n in lower), None)


def _one_run(runs, shown: str) -> None:
    distinct = sorted({str(r) for r in runs if isinstance(r, str) or not pd.isna(r)})
    if len(distinct) > 1:
        listed = ", ".join(distinct[:5]) + (", ..." if len(distinct) > 5 else "")
        raise _error(shown, f"holds {len(distinct)} runs ({listed}); export one run")


def _wide(long: pd.DataFrame, fmt: str, shown: str) -> RawLog:
    """TensorBoard scalars (columns tag, step, value, wall_time) as one row a step, a column a tag."""
    steps = pd.to_numeric(long["step"], errors="coerce")
    if steps.isna().any():
        raise _error(shown, f"a step that is not a number at row {int(steps.isna().to_numpy().argmax()) + 1}")
    long = long.assign(step=steps, value=_numeric(long["value"]))
    rows = long.groupby(["step", "tag"], sort=True)["value"].last().unstack("tag")
    rows.columns = [str(c) for c in rows.columns]
    if "wall_time" in long.columns:
        rows["_timestamp"] = pd.to_numeric(long["wall_time"], errors="coerce").groupby(long["step"]).max()
    return RawLog(shown, fmt, rows.reset_index(), "step")


def _read_tb_long(text: str, shown: str) -> RawLog:
    frame = _csv(text, shown)
    run = _column(frame, "run")
    if run is not None:
        _one_run(frame[run], shown)
    cols = {"tag": _column(frame, "tag"), "step": _column(frame, "step"), "value": _column(frame, "value"),
            "wall_time": _column(frame, "wall_time", "walltime")}
    long = pd.DataFrame({name: frame[c] for name, c in cols.items() if c is not None})
    long["tag"] = long["tag"].astype(str)
    return _wide(long, "tensorboard-csv", shown)


def _flat(key: str) -> str:
    return re.sub(r"[^A-Za-z0-9._-]", "_", key)


def tag_from_filename(stem: str, known_keys: Collection[str] = ()) -> tuple[str, str | None]:
    """(tag, run) of a per-tag TensorBoard CSV named ``stem`` (without ``.csv``).

    The name is percent-decoded (``timing_s%2Fstep`` -> ``timing_s/step``). A name of the form
    ``run-<run>-tag-<tag>`` gives the run and the tag. A tag in which ``/``, ``:`` and spaces were written as ``_``
    (``timing_s_step``) is matched to the one known key written that way; any other name is the tag as it is.
    """
    name, run = unquote(stem), None
    if "-tag-" in name:
        head, _, name = name.rpartition("-tag-")
        run = head[4:] if head.startswith("run-") else head
    if name in known_keys:
        return name, run
    flat: dict[str, list[str]] = {}
    for key in known_keys:
        flat.setdefault(_flat(key), []).append(key)
    match = flat.get(name, [])
    return (match[0] if len(match) == 1 else name), run


def _read_tb_dir(path: Path, shown: str, known_keys: Collection[str]) -> RawLog:
    files = sorted(path.glob("*.csv")) if path.is_dir() else [path]
    if not files:
        raise _error(shown, "a folder without .csv files (TensorBoard per-tag downloads, Wall time,Step,Value)")
    parts, runs = [], []
    for f in files:
        text = _text(f, str(f))
        header = [c.strip().lower() for c in next(csv.reader([text.partition("\n")[0]]), [])]
        if header != _TB_HEADER:
            raise _error(str(f), f"header {header} is not TensorBoard's per-tag download (Wall time,Step,Value)")
        tag, run = tag_from_filename(f.stem, known_keys)
        runs.append(run)
        frame = _csv(text, str(f))
        frame.columns = ["wall_time", "step", "value"]
        parts.append(frame.assign(tag=tag))
    _one_run([r for r in runs if r is not None], shown)
    return _wide(pd.concat(parts, ignore_index=True), "tensorboard-tag-csv", shown)


def read_log(path: str | Path, known_keys: Collection[str] = ()) -> RawLog:
    """Every record of the log at ``path`` (a file, or a folder of per-tag TensorBoard CSVs).

    ``known_keys`` are the key names the caller can map, used to recover tags from per-tag file names.

    Raises
    ------
    MeasurementError
        Field ``path``, naming the file: missing, unreadable, above :data:`MAX_LOG_BYTES`, or in no format above.
    """
    p, shown = Path(path), str(path)
    if not p.exists():
        raise _error(shown, "no such file or folder")
    try:
        size = _size(p)
    except OSError as exc:
        raise _error(shown, f"cannot be read ({exc.strerror or exc})") from None
    if size > MAX_LOG_BYTES:
        raise _error(shown, f"{size / 1e6:,.1f} MB is above the {MAX_LOG_BYTES / 1e6:,.0f} MB limit for a log; "
                            "export fewer keys or steps")
    if p.is_dir():
        return _read_tb_dir(p, shown, known_keys)
    text = _text(p, shown)
    fmt = detect_format(text, p.suffix)
    readers = {"wandb-csv": _read_wandb, "jsonl": _read_jsonl, "verl-console": _read_console,
               "tensorboard-csv": _read_tb_long}
    if fmt == "tensorboard-tag-csv":
        return _read_tb_dir(p, shown, known_keys)
    if not fmt:
        raise _error(shown, "not a log format tcocalc reads (a W&B history CSV, JSONL, verl console lines "
                            "'step:N - key:value', TensorBoard scalars as CSV)")
    return readers[fmt](text, shown)
