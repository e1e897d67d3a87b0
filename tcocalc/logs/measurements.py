"""A pilot run's measured step and phase times, read from the metrics its RL framework logged.

:func:`load_measurements` reads a log (:mod:`tcocalc.logs.registry`, one module per format), maps the framework's
keys to tcocalc's measurement names through ``data/run_metrics.toml`` (:mod:`tcocalc.catalog.run_metrics`), leaves
out validation steps, skips (and counts) steps whose values are unsound, drops the warm-up steps and returns
:class:`Measurements`: the per-step table and, for each measurement found, its median over the steps kept. The
result is a ``Mapping[str, float]`` over that summary, so it goes wherever a plain dict of measurements does.
docs/run-logs.md has the formats, the key tables, the nesting rules and the errors.
"""

from __future__ import annotations

import html
import math
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from types import MappingProxyType

import numpy as np
import pandas as pd

from ..catalog.run_metrics import (
    LARGEST_OVER_STEPS,
    MEASUREMENT_UNITS,
    FrameworkMetrics,
    MetricVariant,
    framework_metrics,
    log_limits,
    run_metric_table,
)
from ..errors import MeasurementError
from .registry import read_log
from .table import RawLog

__all__ = ["Measurements", "load_measurements", "guess_framework", "warmup_step_count", "parse_steps",
           "WARMUP_SHARE", "WARMUP_MAX_STEPS"]

#: Share of the logged steps dropped as warm-up (at least one step, at most :data:`WARMUP_MAX_STEPS`).
WARMUP_SHARE = 0.10
WARMUP_MAX_STEPS = 20

_Column = tuple[str, str | None, str]  # (logged key, rows_with, merge)


@dataclass(frozen=True, eq=False)
class Measurements(Mapping[str, float]):
    """What a pilot run measured: a read-only mapping of measurement name -> steady-state value (``summary``).

    Attributes
    ----------
    summary
        Measurement name (:data:`~tcocalc.catalog.run_metrics.MEASUREMENT_UNITS`: ``step_time_s`` [s], ...,
        ``response_tokens_mean`` [tokens], ``samples_per_step`` [samples]) -> the median over the steps kept, for
        each measurement the log has at one kept step or more. Never NaN.
    per_step
        One row per step kept (index ``step``, the logged step number), one column per measurement in ``summary``;
        ``<NA>`` where a sparse log has no value at that step.
    framework, source, format
        The framework whose keys were read, the path as given, and the format read (``wandb-csv``, ``jsonl``,
        ``verl-console``, ``tensorboard-csv``, ``tensorboard-tag-csv``).
    steps_used
        (first, last) logged step number kept.
    warmup_steps
        Steps dropped at the start as warm-up (0 when ``steps=`` chose the steps).
    keys_used, formulas
        Measurement -> the logged keys it was computed from, and how (``"a + b - c"``; docs/run-logs.md).
    exposed
        Measurements whose key times only the part of the phase the trainer waits for (an asynchronous run's
        exposed generation), not the whole phase.
    rank_mean
        Measurements read from a timer averaged over the engines' ranks while the phase ends with the slowest
        engine (verl's ``generate_sequences``; a switch taken as the wall time less it): calibrate compares them
        with one engine's own generation, and the switch with the switch plus the last engine's excess.
    ignored_keys
        Logged keys the framework's mapping does not name, sorted (at most ``max_unmapped_keys`` of
        data/log_limits.toml; the warnings count the rest).
    warnings
        What the numbers do or do not include (the mapping's caveats), and anything skipped (bad lines, unsound
        steps, validation steps), with counts.
    validation_steps
        Logged steps that ran a validation or test pass (a framework's ``validation_keys``), left out of the
        medians unless ``keep_validation=True``.
    skipped_steps
        Steps left out because a value they use is not a finite number, negative, a zero time, or an inner timer
        longer than the one containing it (the warnings say which and why).

    ``response_tokens_longest`` is the longest response logged over the kept steps (the largest of verl's per-step
    ``response_length/max``; every other summary figure is the median over the steps), not the configured response
    cap: no log carries the cap, which stays the scenario's ``workload.response_tokens_max``.
    """

    summary: Mapping[str, float]
    per_step: pd.DataFrame
    framework: str
    source: str
    format: str
    steps_used: tuple[int, int]
    warmup_steps: int
    keys_used: Mapping[str, tuple[str, ...]]
    formulas: Mapping[str, str]
    exposed: tuple[str, ...]
    ignored_keys: tuple[str, ...]
    warnings: tuple[str, ...]
    validation_steps: tuple[int, ...] = ()
    skipped_steps: tuple[int, ...] = ()
    rank_mean: tuple[str, ...] = ()

    def __getitem__(self, name: str) -> float:
        return self.summary[name]

    def __iter__(self) -> Iterator[str]:
        return iter(self.summary)

    def __len__(self) -> int:
        return len(self.summary)

    # read-only views do not pickle (st.cache_data pickles results): store them as dicts, wrap them again
    _VIEWS = ("summary", "keys_used", "formulas")

    def __getstate__(self) -> dict:
        return {k: dict(v) if k in self._VIEWS else v for k, v in self.__dict__.items()}

    def __setstate__(self, state: dict) -> None:
        for k, v in state.items():
            object.__setattr__(self, k, MappingProxyType(v) if k in self._VIEWS else v)

    def _lines(self) -> list[tuple[str, str, str, str, str]]:
        rows = []
        for name, value in self.summary.items():
            unit = MEASUREMENT_UNITS[name]
            shown = f"{value:,.3f}" if unit == "s" else f"{value:,.1f}"
            rows.append((name, f"{shown} {unit}", "exposed" if name in self.exposed else
                         "mean" if name in self.rank_mean else "largest" if name in LARGEST_OVER_STEPS else "",
                         f"{int(self.per_step[name].count())} steps", self.formulas.get(name, "")))
        return rows

    def __str__(self) -> str:
        first, last = self.steps_used
        head = [f"Measurements from {self.source} ({self.framework}, {self.format})",
                f"steps {first}..{last}: {len(self.per_step)} kept, {self.warmup_steps} dropped as warm-up"]
        body = [f"  {n:22s} {v:>16s}  {e:7s}  {c:>9s}  {k}" for n, v, e, c, k in self._lines()]
        tail = [f"  ! {w}" for w in self.warnings]
        if self.ignored_keys:
            tail.append(f"  {len(self.ignored_keys)} logged keys not mapped (.ignored_keys)")
        return "\n".join(head + body + tail)

    __repr__ = __str__

    def _repr_html_(self) -> str:
        first, last = self.steps_used
        esc = html.escape
        cells = "".join(f"<tr><td><code>{esc(n)}</code></td><td style='text-align:right'>{esc(v)}</td>"
                        f"<td>{esc(e)}</td><td>{esc(c)}</td><td><code>{esc(k)}</code></td></tr>"
                        for n, v, e, c, k in self._lines())
        warns = "".join(f"<li>{esc(w)}</li>" for w in self.warnings)
        return (f"<div><b>Measurements</b> from <code>{esc(self.source)}</code> ({esc(self.framework)}, "
                f"{esc(self.format)}); steps {first}..{last}, {len(self.per_step)} kept, {self.warmup_steps} "
                "dropped as warm-up<table><tr><th>measurement</th><th>value</th><th></th><th>steps</th>"
                f"<th>logged keys</th></tr>{cells}</table>" + (f"<ul>{warns}</ul>" if warns else "") + "</div>")


# ---------------------------------------------------------------- framework, steps, warm-up


#: The keys verl's SFT trainer logs each step (volcengine/verl@b178a3cd:verl/trainer/fsdp_sft_trainer.py lines
#: 527-530): a log of them is named as what it is instead of "no key of any framework".
_VERL_SFT = frozenset({"train/loss", "train/lr(1e-3)", "train/time(s)"})


def _sft_log(shown: str) -> MeasurementError:
    return MeasurementError("path", f"{shown}: this looks like verl's SFT trainer console (train/loss, "
                                    f"train/lr(1e-3), train/time(s): volcengine/verl@b178a3cd:verl/trainer/"
                                    f"fsdp_sft_trainer.py), a supervised fine-tuning run, not an RL run: it has no "
                                    f"generation, log-prob or weight-sync timer, so it cannot calibrate an RL pilot's "
                                    f"stages; its train/time(s) per step can inform the trainer's MFU (trainer.mfu) "
                                    f"by hand", path=shown)


def guess_framework(keys: frozenset[str], shown: str = "the log") -> str:
    """The framework most of whose mapped keys are in ``keys``.

    Raises
    ------
    MeasurementError
        ``framework``: no framework's key is there, or two frameworks tie; lists the scores and the choices.
    """
    table = run_metric_table()
    scores = {name: len(fw.known_keys & keys) for name, fw in table.items()}
    best = max(scores.values())
    winners = [name for name, score in scores.items() if score == best]
    if best == 0 and _VERL_SFT <= keys:
        raise _sft_log(shown)
    if best == 0 or len(winners) > 1:
        why = "has no key of any framework" if best == 0 else f"matches {' and '.join(winners)} equally"
        listed = ", ".join(f"{n} {s}" for n, s in sorted(scores.items(), key=lambda t: -t[1]))
        raise MeasurementError("framework", f"{shown}: cannot tell the framework: it {why} (keys matched: {listed});"
                                            f" pass framework= one of {', '.join(table)}", path=shown)
    return winners[0]


def warmup_step_count(n_steps: int) -> int:
    """Steps dropped as warm-up from a log of ``n_steps`` usable steps: ceil(10 %), at least 1, at most 20, and never
    so many that no step is left (a one-step log keeps its step)."""
    if n_steps <= 1:
        return 0
    return min(WARMUP_MAX_STEPS, max(1, math.ceil(WARMUP_SHARE * n_steps)), n_steps - 1)


def _bound(text, steps) -> int | None:
    if text is None or (isinstance(text, str) and not text.strip()):
        return None
    if isinstance(text, bool):
        raise MeasurementError("steps", f"expected 'A:B', (A, B) or slice(A, B) of step numbers, got {steps!r}")
    try:
        value = int(text.strip()) if isinstance(text, str) else text
    except ValueError:
        value = None
    if not isinstance(value, int | np.integer):
        raise MeasurementError("steps", f"expected 'A:B', (A, B) or slice(A, B) of step numbers, got {steps!r}")
    return int(value)


def parse_steps(steps) -> tuple[int | None, int | None]:
    """``steps`` as (start, stop) logged step numbers, start included, stop excluded, like a Python slice: ``"10:50"``
    keeps steps 10 to 49, ``"10:"`` from 10 on, ``":50"`` up to 49. Accepts that text, a (start, stop) pair (either
    may be None) or a ``slice`` without a step.

    Raises
    ------
    MeasurementError
        ``steps``: anything else, or start >= stop.
    """
    if isinstance(steps, slice):
        if steps.step not in (None, 1):
            raise MeasurementError("steps", f"a slice of steps takes no stride, got {steps!r}")
        parts = (steps.start, steps.stop)
    elif isinstance(steps, str) and steps.count(":") == 1:
        parts = tuple(steps.split(":"))
    elif isinstance(steps, tuple | list) and len(steps) == 2:
        parts = tuple(steps)
    else:
        raise MeasurementError("steps", f"expected 'A:B', (A, B) or slice(A, B) of step numbers, got {steps!r}")
    start, stop = (_bound(p, steps) for p in parts)
    if start is not None and stop is not None and start >= stop:
        raise MeasurementError("steps", f"{steps!r} selects no step: start {start} is not below stop {stop}")
    return start, stop


# ---------------------------------------------------------------- rows -> one value per step


def _step_numbers(raw: RawLog, fw: FrameworkMetrics) -> tuple[pd.Series, str, list[str]]:
    """(step number of each row, NaN where the row has none; the step column; warnings)."""
    rows = raw.rows
    column = raw.step_column
    if fw.step_column and fw.step_column in rows.columns and rows[fw.step_column].notna().any():
        column = fw.step_column
    if column not in rows.columns:
        raise MeasurementError("path", f"{raw.path}: no step column (looked for "
                                       f"{', '.join(c for c in (fw.step_column, raw.step_column) if c)})",
                               path=raw.path)
    steps = rows[column].astype(float)
    bad = steps.notna() & ((~np.isfinite(steps)) | (steps != np.floor(steps)))
    if bad.any():
        i = int(bad.to_numpy().argmax())
        raise MeasurementError("path", f"{raw.path}: step column {column!r} holds {rows[column].iloc[i]!r}, not a "
                                       f"whole step number (row {i + 1})", path=raw.path, key=column)
    warnings = []
    keys = [k for k in fw.known_keys if k in rows.columns]
    missing = steps.isna()
    stepless = int(rows.loc[missing, keys].notna().any(axis=1).sum()) if keys and missing.any() else 0
    if stepless:
        warnings.append(f"{stepless} rows with mapped keys but no {column} value were skipped")
    return steps, column, warnings


def _has_key(keys: frozenset[str], name: str) -> bool:
    """Whether a log with ``keys`` has ``name`` (a name ending in "/" is a prefix: any key under it)."""
    return any(k.startswith(name) for k in keys) if name.endswith("/") else name in keys


def _choose(fw: FrameworkMetrics, keys: frozenset[str], has_timestamp: bool) -> dict[str, MetricVariant]:
    """Measurement -> the first variant that applies to this log (its ``when`` keys and its keys are there)."""
    def there(name: str) -> bool:
        return _has_key(keys, name)

    def applies(v: MetricVariant) -> bool:
        if not all(there(w) for w in v.when) or any(there(u) for u in v.unless):
            return False
        if v.op == "step_period":
            return has_timestamp
        return all(map(there, v.keys)) if v.op == "product" else any(map(there, v.keys))

    chosen = {}
    for measurement, variants in fw.measures.items():
        v = next((v for v in variants if applies(v)), None)
        if v is not None:
            chosen[measurement] = v
    return chosen


def _gaps(index: pd.Index) -> np.ndarray:
    """Optimizer steps from each logged step to the next (the last repeats the one before; 1 for a single step)."""
    steps = index.to_numpy(dtype=float)
    if len(steps) < 2:
        return np.ones(len(steps))
    gaps = np.diff(steps)
    return np.append(gaps, gaps[-1])


def _by(values: pd.Series, steps: pd.Series, index: pd.Index, how: str) -> pd.Series:
    """``values`` per step (``how``: last, sum or max of a step's rows); a log of one row a step, in order, is taken
    as it is (no grouping, no copy)."""
    if len(index) == len(steps) and steps.is_monotonic_increasing:
        return pd.Series(values.to_numpy(), index=index)
    group = values.groupby(steps)
    return (group.sum(min_count=1) if how == "sum" else group.max() if how == "max" else group.last()).reindex(index)


def _grouped(rows: pd.DataFrame, steps: pd.Series, column: _Column, index: pd.Index) -> pd.Series:
    key, rows_with, merge = column
    values = rows[key] if key in rows.columns else pd.Series(np.nan, index=rows.index)
    if rows_with is not None:
        values = values.where(rows[rows_with].notna()) if rows_with in rows.columns else values * np.nan
    out = _by(values, steps, index, "sum" if merge == "window_sum" else "last")
    return out / _gaps(index) if merge == "window_sum" else out


def _columns(chosen: Mapping[str, MetricVariant]) -> dict[str, list[_Column]]:
    return {m: [(k, v.rows_with, v.merge) for k in v.logged_keys] for m, v in chosen.items() if v.op != "step_period"}


def _step_period(rows: pd.DataFrame, steps: pd.Series, index: pd.Index) -> pd.Series:
    stamps = _by(rows["_timestamp"], steps, index, "max")
    return stamps.diff() / pd.Series(index.to_numpy(dtype=float), index=index).diff()


# ---------------------------------------------------------------- checks and values


def _fail(shown: str, field: str, message: str, step, key: str | None = None) -> MeasurementError:
    return MeasurementError(field, f"{shown}: {message} at step {int(step)}", path=shown, key=key or field,
                            step=int(step))


class _Unsound:
    """The kept steps whose values cannot be used, each with the first reason found (field, key, message)."""

    def __init__(self, kept: pd.Index):
        self.kept = kept
        self.why: dict[int, tuple[str, str, str]] = {}

    def mark(self, bad: pd.Series, field: str, key: str, message) -> None:
        for step in bad.index[bad.to_numpy(dtype=bool)]:
            self.why.setdefault(int(step), (field, key, message(step)))

    def error(self, shown: str) -> MeasurementError:
        step = min(self.why)
        field, key, message = self.why[step]
        more = f" ({len(self.why)} of {len(self.kept)} steps kept are unsound)" if len(self.why) > 1 else ""
        return _fail(shown, field, message + more, step, key)

    def warning(self) -> str:
        shown = "; ".join(f"step {s}: {self.why[s][2]}" for s in sorted(self.why)[:3])
        more = ", ..." if len(self.why) > 3 else ""
        return f"{len(self.why)} of {len(self.kept)} steps skipped as unsound ({shown}{more})"


def _check_logged(values: Mapping[_Column, pd.Series], unsound: _Unsound) -> None:
    """Every logged value a kept step uses is a finite number >= 0 (empty cells are not values)."""
    for (key, _, _), series in values.items():
        v = series.reindex(unsound.kept)
        bad = v.notna() & (~np.isfinite(v) | (v < 0))
        unsound.mark(bad, key, key, lambda s, v=v, key=key: f"{key} is " + (
            "not a finite number" if not np.isfinite(v[s]) else f"negative ({v[s]:g})"))


def _value(v: MetricVariant, values: Mapping[_Column, pd.Series], period: pd.Series | None) -> pd.Series:
    if v.op == "step_period":
        return period * v.scale
    terms = pd.concat([values[(k, v.rows_with, v.merge)] for k in v.keys], axis=1)
    if v.op == "product":
        total = terms.prod(axis=1, min_count=len(v.keys)).where(terms.notna().all(axis=1))
    else:
        total = terms.sum(axis=1, min_count=1)
    for k in v.minus:
        total = total - values[(k, v.rows_with, v.merge)].fillna(0.0)
    return total * v.scale


def _check_value(name: str, v: MetricVariant, series: pd.Series, unsound: _Unsound) -> None:
    is_time = MEASUREMENT_UNITS[name] == "s"
    finite = series.notna() & np.isfinite(series.astype(float))
    bad = finite & ((series < 0) | ((series == 0) & is_time & (not v.allow_zero)))
    if v.op == "step_period":
        unsound.mark(bad, name, "_timestamp", lambda s: "_timestamp does not increase")
        return
    formula = " + ".join(v.keys) + "".join(f" - {k}" for k in v.minus)
    key = v.keys[0] if len(v.keys) == 1 and not v.minus else name
    unsound.mark(bad, name, key, lambda s: f"{name} = {formula} is {series[s]:g} {MEASUREMENT_UNITS[name]}" + (
        " (a timer is longer than the one that contains it)" if v.minus and series[s] < 0 else ""))


def _check_nesting(fw: FrameworkMetrics, series_of, unsound: _Unsound, there=lambda key: False) -> None:
    """Per step, an inner timer (the ``contains`` table) is never longer than the one containing it, within the
    reading tolerance of data/log_limits.toml (console values are printed rounded); an outer timer that the log's
    ``waits`` markers (``there(key)``: the log has it) make only the trainer's wait contains nothing and is not
    checked."""
    lim = log_limits()
    for outer, inners in fw.contains.items():
        whole = series_of(outer)
        if whole is None or any(there(k) for k in fw.waits.get(outer, ())):
            continue
        for inner in inners:
            part = series_of(inner)
            if part is None:
                continue
            bad = whole.notna() & part.notna() & (part > whole * (1 + lim.nesting_rel_tolerance)
                                                  + lim.nesting_abs_tolerance)
            unsound.mark(bad, inner, inner, lambda s, o=outer, i=inner, w=whole, p=part:
                         f"{i} ({p[s]:g}) is longer than {o} ({w[s]:g}), which contains it")


def _kept(usable: pd.Index, steps, shown: str) -> tuple[pd.Index, int]:
    """(the steps kept, how many were dropped as warm-up)."""
    if steps is None:
        drop = warmup_step_count(len(usable))
        return usable[drop:], drop
    start, stop = parse_steps(steps)
    mask = np.ones(len(usable), dtype=bool)
    if start is not None:
        mask &= usable >= start
    if stop is not None:
        mask &= usable < stop
    if not mask.any():
        raise MeasurementError("steps", f"{shown}: steps={steps!r} keeps none of the logged steps "
                                        f"{usable[0]}..{usable[-1]}", path=shown)
    return usable[mask], 0


def _no_step(shown: str, fw: FrameworkMetrics) -> MeasurementError:
    keys = sorted(fw.known_keys)
    listed = ", ".join(keys[:15]) + (f", ... ({len(keys)} in all; docs/run-logs.md)" if len(keys) > 15 else "")
    return MeasurementError("path", f"{shown}: no step with a {fw.name} measurement; looked for {listed}", path=shown)


# ---------------------------------------------------------------- the entry point


@dataclass(frozen=True)
class _Steps:
    """A log's rows by step: the rows with a step, their step numbers, the steps, the chosen variants and the
    per-step values of every key they read."""

    rows: pd.DataFrame
    step_of: pd.Series
    index: pd.Index
    chosen: dict[str, MetricVariant]
    values: dict[_Column, pd.Series]
    period: pd.Series | None
    warnings: list[str]

    def series_of(self, key: str) -> pd.Series | None:
        """The per-step value of ``key``: as a chosen variant reads it, else the last logged at the step."""
        for (k, _, _), series in self.values.items():
            if k == key:
                return series
        if key not in self.rows.columns or not self.rows[key].notna().any():
            return None
        return _by(self.rows[key], self.step_of, self.index, "last")


def _by_step(raw: RawLog, fw: FrameworkMetrics) -> _Steps:
    step_of, _, warnings = _step_numbers(raw, fw)
    stepped = step_of.notna()
    rows = raw.rows if stepped.all() else raw.rows[stepped]  # no copy of a log whose every row has its step
    step_of = step_of[stepped].astype(np.int64)
    index = pd.Index(np.unique(step_of.to_numpy()), name="step")
    has_stamp = "_timestamp" in rows.columns and rows["_timestamp"].notna().any()
    chosen = _choose(fw, raw.keys, has_stamp)
    values = {c: _grouped(rows, step_of, c, index) for cs in _columns(chosen).values() for c in cs}
    period = _step_period(rows, step_of, index) if has_stamp else None
    if len(index) < len(step_of):
        warnings += _relogged(rows, step_of, chosen)
    return _Steps(rows, step_of, index, chosen, values, period, warnings)


def _relogged(rows: pd.DataFrame, step_of: pd.Series, chosen: Mapping[str, MetricVariant]) -> list[str]:
    """A warning where a step's measurement is logged more than once with different values (a key merged as the
    last value of its step, not a per-call timer summed over it): two runs in one file, or a run resumed from a
    checkpoint that logs its steps again. The last value of each step is read, as before; the warning names the
    steps and the first key's values, so that the user can cut the file to one run. Rows of one step that log
    different keys (a W&B history row per call) or repeat a value are not counted."""
    twice = step_of.duplicated(keep=False).to_numpy()
    sub = {}
    for key, rows_with, merge in dict.fromkeys(c for cs in _columns(chosen).values() for c in cs):
        if merge == "window_sum" or key not in rows.columns or key in sub:
            continue
        values = rows.loc[twice, key]
        if rows_with is not None:  # the rows the variant reads (prime-rl: the trainer's time/step)
            values = values.where(rows.loc[twice, rows_with].notna()) if rows_with in rows.columns else values * np.nan
        sub[key] = values
    if not sub:
        return []
    keys, sub, at = list(sub), pd.DataFrame(sub), step_of[twice]
    distinct = sub.groupby(at.to_numpy()).nunique()
    bad = distinct.index[(distinct > 1).any(axis=1).to_numpy()]
    if not len(bad):
        return []
    step = int(bad[0])
    key = next(k for k in keys if distinct.loc[step, k] > 1)
    seen = [float(x) for x in sub.loc[at.to_numpy() == step, key].dropna()]
    listed = ", ".join(str(int(b)) for b in bad[:5]) + (", ..." if len(bad) > 5 else "")
    return [f"{len(bad)} step{'s' if len(bad) != 1 else ''} logged more than once with different values (step "
            f"{listed}; step {step}'s {key}: {', '.join(f'{x:,.6g}' for x in seen)}): two runs in one file, or a "
            f"run resumed from a checkpoint that logged its steps again; the last value of each step is read (a "
            f"resumed run's own); to read one run alone, cut the file to it (steps= cannot tell two runs' step "
            f"{step} apart)"]


def _usable(by: _Steps, fw: FrameworkMetrics, shown: str) -> pd.Index:
    present = [s.notna() for s in by.values.values()]
    if any(v.op == "step_period" for v in by.chosen.values()):
        present.append(by.period.notna())
    if not present or not (usable := by.index[np.logical_or.reduce([p.to_numpy() for p in present])]).size:
        raise _no_step(shown, fw)
    return usable


def _validation(by: _Steps, fw: FrameworkMetrics, usable: pd.Index) -> pd.Index:
    marked = [by.series_of(k) for k in fw.validation_keys]
    flags = [m.reindex(usable).notna().to_numpy() for m in marked if m is not None]
    return usable[np.logical_or.reduce(flags)] if flags else usable[:0]


def _sound(raw: RawLog, fw: FrameworkMetrics, by: _Steps, kept: pd.Index) -> tuple[dict[str, pd.Series], _Unsound]:
    unsound = _Unsound(kept)
    _check_logged(by.values, unsound)
    table = {}
    for name, v in by.chosen.items():
        series = _value(v, by.values, by.period).reindex(kept)
        _check_value(name, v, series, unsound)
        table[name] = series
    _check_nesting(fw, lambda k: None if (s := by.series_of(k)) is None else s.reindex(kept), unsound,
                   lambda k: _has_key(raw.keys, k))
    if unsound.why and (len(unsound.why) * 2 > len(kept) or len(unsound.why) == len(kept)):
        raise unsound.error(raw.path)
    good = kept.difference(pd.Index(sorted(unsound.why), dtype=kept.dtype))
    return {n: s.reindex(good) for n, s in table.items() if s.reindex(good).notna().any()}, unsound


def _notes(raw: RawLog, fw: FrameworkMetrics, table: Mapping[str, pd.Series], validation: pd.Index,
           keep_validation: bool) -> list[str]:
    notes = list(raw.notes)
    if len(validation):
        listed = ", ".join(str(s) for s in validation[:5]) + (", ..." if len(validation) > 5 else "")
        keys = " or ".join(fw.validation_keys)
        notes.append(f"{len(validation)} validation steps ({keys} logged: steps {listed}) "
                     + ("kept, as asked (keep_validation=True)" if keep_validation
                        else "left out of the medians; keep_validation=True keeps them"))
    if not any(MEASUREMENT_UNITS[n] == "s" for n in table):
        notes.append(f"no timer in this log ({raw.format}): it gives the workload's lengths "
                     f"({', '.join(table) or 'none'}) but cannot calibrate any stage time; give a log with step "
                     "or phase times (docs/run-logs.md)")
    return notes


#: What the drift report watches: the step, the stages a calibration judges within ``calibrate_tolerance_compute``
#: (data/rl_calibration.toml, the share ``drift_tolerance`` takes) and the mean response that drives them; not the
#: push and the switch (seconds in a step of minutes, judged within ±25%: calibrate_tolerance_transfer).
_DRIFT_KEYS = ("step_time_s", "generation_s", "training_s", "logprob_s", "response_tokens_mean")


def _spread(per_step: pd.DataFrame) -> list[str]:
    """A warning where the kept step times are of two kinds: their 90th percentile more than data/log_limits.toml
    ``spread_ratio`` times their 10th (at least 3 steps). The median then stands for one kind of step; a run whose
    steps alternate (a TRL GRPO step that generates, then steps that reuse its rollouts) paces at the mean."""
    if "step_time_s" not in per_step.columns:
        return []
    s = per_step["step_time_s"].dropna().to_numpy(float)
    if len(s) < 3:
        return []
    low, high = np.percentile(s, [10, 90])
    if not (low > 0 and high / low > log_limits().spread_ratio):
        return []
    return [f"step_time_s spreads from {low:,.4g} to {high:,.4g} s over the kept steps (10th and 90th percentiles, "
            f"{high / low:.1f}x): the median {np.median(s):,.4g} s stands for one kind of step; where steps "
            f"alternate (a TRL GRPO step that generates, then steps that reuse its rollouts) the run paces at the "
            f"mean, {s.mean():,.4g} s: calibrate on it (tcocalc calibrate ... --measured step_time_s={s.mean():.4g}; "
            f"tc.calibrate(scenario, {{**m, 'step_time_s': {s.mean():.4g}}})), or pick steps= of one kind"]


def _drift(per_step: pd.DataFrame) -> list[str]:
    """A warning where the run drifts over the kept steps: for the step, the compute stages and the mean response
    (:data:`_DRIFT_KEYS`), the median of the first quarter of its steps against the last, named where they differ
    by more than data/log_limits.toml ``drift_tolerance`` (with at least ``drift_min_steps`` steps); the medians
    then mix the run's stretches, and the warning gives the ``steps=A:B`` that reads the last quarter alone."""
    lim = log_limits()
    moved, last = [], None
    for name in (n for n in _DRIFT_KEYS if n in per_step.columns):
        s = per_step[name].dropna()
        if len(s) < lim.drift_min_steps:
            continue
        q = len(s) // 4
        a, b = float(np.median(s.to_numpy(float)[:q])), float(np.median(s.to_numpy(float)[-q:]))
        if not (a > 0 and b > 0) or max(a, b) / min(a, b) - 1.0 <= lim.drift_tolerance:
            continue
        unit = MEASUREMENT_UNITS[name]
        moved.append(f"{name} {a:,.4g} -> {b:,.4g} {unit} ({b / a:.2f}x)")
        last = (int(s.index[-q]), int(s.index[-1]) + 1) if last is None else last
    if not moved:
        return []
    shift = _level_change(per_step, [m.split(" ", 1)[0] for m in moved])
    return [f"the run drifts over the kept steps (median of the first quarter of the steps -> of the last): "
            f"{'; '.join(moved)}: the medians mix its stretches, which a calibration on them represents with one "
            f"workload; steps={last[0]}:{last[1]} reads the last quarter alone" + shift]


def _level_change(per_step: pd.DataFrame, moved: list[str]) -> str:
    """Where the drift is largest: the kept step that splits a drifted measurement (the mean response where it
    moved, the workload, else the first that moved) into the two stretches whose mean log values differ most, each
    at least a tenth of the steps (and ``drift_min_steps`` / 2), found in one pass over cumulative sums; the text
    gives each stretch's steps, median and ``steps=`` window ("" where no split leaves both stretches long
    enough). A run whose responses jump (the verl GSM8k FSDP log: about 216 tokens to step 155, 614 from step 165)
    is then read one workload at a time; a gradual drift gets the split at its steepest part."""
    name = "response_tokens_mean" if "response_tokens_mean" in moved else moved[0]
    s = per_step[name].dropna()
    v = s.to_numpy(float)
    n, side = len(v), max(log_limits().drift_min_steps // 2, len(v) // 10)
    if n < 2 * side or not (v > 0).all():
        return ""
    c = np.concatenate(([0.0], np.cumsum(np.log(v))))
    k = np.arange(side, n - side + 1)
    gap = np.abs(c[k] / k - (c[n] - c[k]) / (n - k))
    at = int(k[int(np.argmax(gap))])
    steps = s.index.to_numpy()
    unit = MEASUREMENT_UNITS[name]
    a, b = float(np.median(v[:at])), float(np.median(v[at:]))
    first, split, end = int(steps[0]), int(steps[at]), int(steps[-1])
    return (f"; {name} changes most at step {split}: median {a:,.4g} {unit} over steps {first}-{int(steps[at - 1])} "
            f"({at} steps), {b:,.4g} {unit} over steps {split}-{end} ({n - at} steps); steps={first}:{split} and "
            f"steps={split}:{end + 1} read each stretch alone")


def _measure(raw: RawLog, fw: FrameworkMetrics, steps, keep_validation: bool = False) -> Measurements:
    by = _by_step(raw, fw)
    usable = _usable(by, fw, raw.path)
    validation = _validation(by, fw, usable)
    training = usable if keep_validation else usable.difference(validation)
    if not len(training):
        raise MeasurementError("path", f"{raw.path}: every step with a {fw.name} measurement ran validation "
                                       f"({', '.join(fw.validation_keys)}); keep_validation=True reads them",
                               path=raw.path)
    kept, drop = _kept(training, steps, raw.path)
    table, unsound = _sound(raw, fw, by, kept)
    good = kept.difference(pd.Index(sorted(unsound.why), dtype=kept.dtype))
    per_step = pd.DataFrame({n: pd.array(s.to_numpy(dtype=float), dtype="Float64") for n, s in table.items()},
                            index=good.rename("step"))
    warnings = list(by.warnings)
    if steps is None and len(training) == 1:
        warnings.append("the log has one usable step: no warm-up step was dropped")
    warnings += [unsound.warning()] if unsound.why else []
    warnings += _notes(raw, fw, table, validation, keep_validation)
    warnings += _drift(per_step)
    warnings += _spread(per_step)
    warnings += [f"{n}: {by.chosen[n].caveat}" for n in table if by.chosen[n].caveat]
    logged = raw.keys | {"_timestamp"}
    return Measurements(
        summary=MappingProxyType({n: _summary(n, s) for n, s in table.items()}),
        per_step=per_step, framework=fw.name, source=raw.path, format=raw.format,
        steps_used=(int(good[0]), int(good[-1])), warmup_steps=drop,
        keys_used=MappingProxyType({n: tuple(k for k in by.chosen[n].logged_keys if k in logged) for n in table}),
        formulas=MappingProxyType({n: by.chosen[n].formula(logged) for n in table}),
        exposed=tuple(n for n in table if by.chosen[n].exposed),
        rank_mean=tuple(n for n in table if by.chosen[n].rank_mean),
        ignored_keys=tuple(sorted(raw.keys - fw.read_keys - {raw.step_column, fw.step_column or ""})),
        warnings=tuple(warnings), validation_steps=tuple(int(s) for s in validation),
        skipped_steps=tuple(sorted(unsound.why)))


def _summary(name: str, steps: pd.Series) -> float:
    """One figure for a measurement over the kept steps: their median, or their largest for the measurements of
    :data:`~tcocalc.catalog.run_metrics.LARGEST_OVER_STEPS` (the run's longest response)."""
    values = steps.dropna().to_numpy(dtype=float)
    return float(values.max() if name in LARGEST_OVER_STEPS else np.median(values))


def _looks_like(raw: RawLog, fw: FrameworkMetrics) -> None:
    """Refuse a log read with ``framework=`` of one framework when its keys are another's."""
    table = run_metric_table()
    scores = {name: len(f.known_keys & raw.keys) for name, f in table.items()}
    best = max(scores, key=scores.get)
    if best != fw.name and scores[best] > 2 * scores[fw.name]:
        raise MeasurementError("framework", f"{raw.path}: read with framework={fw.name!r}, but it looks like a "
                                            f"{table[best].label} log ({scores[best]} of its keys, against "
                                            f"{scores[fw.name]} of {fw.name}'s); pass framework={best!r}, or leave "
                                            "framework out to guess it", path=raw.path)


def load_measurements(path: str | Path, framework: str | None = None, steps=None, *, run: str | None = None,
                      keep_validation: bool = False) -> Measurements:
    """Read a pilot run's logged metrics into :class:`Measurements` (step and phase times, lengths, samples).

    Parameters
    ----------
    path
        A log file or folder, whatever its name: a W&B history CSV, JSONL (verl ``file`` backend, prime-rl
        ``metrics.jsonl``), a JSON document (TRL's ``trainer_state.json``, a summary of runs), TensorBoard scalars
        (event files, a long CSV ``tag,step,value``, or per-tag CSV downloads), an MLflow run folder, or the console
        output of verl, NeMo RL, slime, prime-rl's orchestrator or TRL. The format is read from the content
        (docs/run-logs.md). At most ``data/log_limits.toml`` ``max_bytes`` (200 MB).
    framework
        ``"verl"``, ``"nemo-rl"``, ``"slime"``, ``"areal"``, ``"prime-rl"``, ``"open-instruct"`` or ``"trl"``; None
        guesses it from the key names (the framework with most of its mapped keys in the log). A log whose keys
        are clearly another framework's is refused, naming the one it looks like.
    steps
        Logged step numbers to use, ``"A:B"``, ``(A, B)`` or ``slice(A, B)``: A included, B excluded, like a Python
        slice; either end may be left out. No warm-up is dropped then.
    run
        The run to read in a file or folder that holds several (a TensorBoard CSV's ``run`` column, per-tag file
        names, an MLflow experiment, a JSON summary of runs).
    keep_validation
        Keep the steps that ran a validation pass in the medians (left out by default; they are slower).

    Warm-up rule: without ``steps``, the first ceil(10 %) of the usable steps (validation steps left out) are
    dropped, at least 1 and at most 20, and never the last one (a one-step log keeps its step). The first steps of a
    run carry one-off costs (CUDA-graph capture, kernel compilation, allocator growth, cold caches, the first
    weight push) that a steady state does not; 10 % removes them from short pilots without discarding most of a
    long run, where 20 steps cover any warm-up seen, and the median then absorbs the odd checkpoint step.

    A kept step whose value is not a finite number, negative, a zero time, or an inner timer longer than the timer
    containing it is skipped and counted in the warnings; when most kept steps are so, the log is refused.

    Returns
    -------
    Measurements
        A ``Mapping[str, float]``: ``dict(result)`` is the median of each measurement over the steps kept.

    Raises
    ------
    MeasurementError
        A :class:`~tcocalc.errors.ScenarioError` whose ``field`` is ``path`` (missing, not a regular file or folder,
        empty, binary, too big, a line too long, unknown format, a trainer-only benchmark, no usable step; the
        message names the file, what it looked like and the formats read), ``framework`` (unknown name, it cannot
        be guessed, or the log is another framework's), ``steps`` (bad range, or one that keeps no step), or the
        logged key or measurement whose values are unsound at most kept steps (``.key`` and ``.step`` set).
    """
    fw = framework_metrics(framework) if framework is not None else None
    table = run_metric_table()
    keep = frozenset().union(*(f.read_keys for f in table.values()))
    known = frozenset().union(*(f.known_keys for f in table.values()))
    raw = read_log(path, keep, run=run, known_keys=known)
    if raw.rows.empty:
        raise _no_step(raw.path, fw) if fw else MeasurementError("path", f"{raw.path}: holds no logged row "
                                                                         f"({raw.format})", path=raw.path)
    if fw is None:
        fw = framework_metrics(guess_framework(raw.keys, raw.path))
    else:
        if _VERL_SFT <= raw.keys and not fw.known_keys & raw.keys:
            raise _sft_log(raw.path)
        _looks_like(raw, fw)
    return _measure(raw, fw, steps, keep_validation)
