"""CSV report tables with units in the column names, and their readers (round-trip tested).

One header convention (:mod:`tcocalc.workbook`): a column of numbers in one unit is ``name [unit]``, where
``name`` is the library's own column (the key of ``report.sweep``, ``report.phases`` or ``report.metrics``) and
the unit parses with ``tc.get_registry()``; strip `` [unit]`` to get the key back.
"""

from __future__ import annotations

from .display import format_cell, header, human
from .economics.tco import pricing_text
from .rl.report import METRIC_UNITS
from .workbook import COLUMN_UNITS, labelled

__all__ = ["metrics_table", "sweep_table", "phases_table", "timeline_table", "cost_table", "gap_table",
           "options_table", "sensitivity_table", "candidates_table", "compare_table", "display_table",
           "display_metrics", "human", "header", "pricing_text", "to_csv_text", "error_text", "TABLE_UNITS",
           "workbook_bytes", "XLSX_MIME", "readable_metrics", "phase_changes", "sandbox_start_tail_s"]

XLSX_MIME = "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet"

#: Units of every column the report tables label: the contract metrics, the split sweep's / phases' own, the
#: sizing candidates', build/rent/Tinker's and the sensitivity table's.
TABLE_UNITS = {**{k: unit for k, (unit, _) in METRIC_UNITS.items()}, **COLUMN_UNITS,
               "staleness_bound_steps": "step", "trainer_usd_per_gpu_hour": "USD/GPU-h",
               "generator_usd_per_gpu_hour": "USD/GPU-h", "total_gpus": "GPU", "goodput_factor": "1",
               **{k: "USD/Mtoken" for k in ("base_usd_per_mtok", "low_usd_per_mtok", "high_usd_per_mtok",
                                            "swing_usd_per_mtok", "usd_per_mtok", "cumulative_usd_per_mtok")}}


def display_table(frame, units: dict | None = None, labels: dict | None = None, *, exact: bool = False):
    """A table for a reader (the app's pages): headers in words with their unit (``run cost [USD]``,
    :func:`tcocalc.display.header`), each cell formatted by its kind (shares as %, multiples as ``0.60x``, counts
    with separators, four significant figures; :func:`tcocalc.display.format_cell`) and empty where there is no
    value. Columns already named ``name [unit]`` keep their header; ``labels`` names columns where the general
    words do not fit the table; ``exact`` shows numbers as written (datasheet figures: ``1,978.9``, up to six
    significant figures) instead of four. Text, for reading: the CSV downloads keep the numbers (``name [unit]``
    headers)."""
    import pandas as pd

    units = {**TABLE_UNITS, **(units or {})}
    out = {}
    for col in frame.columns:
        unit = units.get(col, "")
        name = (labels or {}).get(col)
        title = header(col, unit) if name is None else (name if unit in ("", "1") else f"{name} [{unit}]")
        out[title] = [_exact(v) if exact and _plain_number(v) else format_cell(v, unit, col) for v in frame[col]]
    return pd.DataFrame(out, index=frame.index)


def _plain_number(v) -> bool:
    import math

    return isinstance(v, int | float) and not isinstance(v, bool) and math.isfinite(v)


def _exact(v) -> str:
    return f"{v:,.6g}" if abs(v) >= 1 or v == 0 else f"{v:.6g}"


def display_metrics(rows: dict[str, dict]):
    """Several runs' contract metrics side by side for a reader (the Compare page): one row per metric, its label
    and unit (``step time [s]``), one column per run (``rows``: name -> metrics), cells formatted by kind and
    empty where a run has no value (a model Tinker does not offer)."""
    import pandas as pd

    data = {name: [format_cell(m.get(k), unit, k) for k, (unit, _) in METRIC_UNITS.items()]
            for name, m in rows.items()}
    return pd.DataFrame(data, index=[header(k, unit) for k, (unit, _) in METRIC_UNITS.items()])


def options_table(brt):
    """:func:`tcocalc.build_rent_tinker` with units in the column names (``run_usd [USD]``)."""
    return labelled(brt, TABLE_UNITS)


def sensitivity_table(sens):
    """:func:`tcocalc.sensitivity` with units in the column names (``swing_usd_per_mtok [USD/Mtoken]``)."""
    return labelled(sens, TABLE_UNITS)


def candidates_table(candidates):
    """:func:`tcocalc.size_cluster`'s candidates (or Pareto front) with units in the column names."""
    return labelled(candidates, TABLE_UNITS)


def compare_table(frame):
    """Scenarios' metrics, one row each (``scenario`` and the contract metrics), units in the column names."""
    return labelled(frame, TABLE_UNITS)

def metrics_table(report):
    """Metric, value, unit, meaning (one row per contract metric)."""
    return report.to_frame()


def sweep_table(sweep):
    """The split sweep (``report.sweep``) with units in the column names: ``step_time_s [s]``."""
    return labelled(sweep, TABLE_UNITS)


def phases_table(phases):
    """The per-phase metrics (``report.phases``) with units in the column names."""
    return labelled(phases, TABLE_UNITS)


def timeline_table(timeline):
    """The simulator's per-step timeline (already unit-labelled)."""
    return timeline.copy()


def cost_table(breakdown):
    """A CostBreakdown as group, line, cost [USD/GPU-h], share [1]."""
    return breakdown.to_frame().rename(columns={"usd_per_gpu_hour": "cost [USD/GPU-h]", "share": "share [1]"})


def gap_table(gap):
    """The cost-gap waterfall (:func:`tcocalc.tinker_gap`) with units in the column names."""
    return labelled(gap, TABLE_UNITS)


def workbook_bytes(report, scenario_file: str | None = None) -> bytes:
    """The report's Excel workbook (``report.to_excel``: inputs, metrics, phases, sweep, cost lines, advice,
    provenance) as bytes, for a download button."""
    import io

    buffer = io.BytesIO()
    report.to_excel(buffer, scenario_file=scenario_file)
    return buffer.getvalue()


def to_csv_text(frame) -> str:
    """CSV text of a table (what the app's download buttons serve), without the control characters a spreadsheet
    cannot hold (:func:`tcocalc.workbook.sanitize`: a NUL in a scenario name)."""
    from .workbook import sanitize

    out = frame.rename(columns=lambda c: sanitize(c) if isinstance(c, str) else c)
    text_cols = [c for c in out.columns if out[c].dtype == object or str(out[c].dtype).startswith("str")]
    if text_cols:
        out = out.assign(**{c: out[c].map(sanitize) for c in text_cols})
    return out.to_csv(index=False)


def error_text(value) -> str:
    """A signed error in percent as text (``+12%``), or "not modelled" for a row the model cannot represent."""
    import pandas as pd

    return "not modelled" if pd.isna(value) else f"{float(value):+.0f}%"


def phase_changes(scenario) -> list[str]:
    """What each phase changes, in the phases table's order (the run's first phase, then each ``[[phases]]``
    entry): ``"as in the file"`` for the first, then ``"responses x2, 52 turns"`` (a phase's overrides in words)."""
    out = ["as in the file"]
    for p in scenario.phases or ():
        parts = []
        if p.response_scale != 1.0:
            parts.append(f"responses x{p.response_scale:g}")
        if p.turns is not None:
            parts.append(f"{p.turns:,} turns")
        if p.tool_call_s is not None:
            parts.append(f"tool call {p.tool_call_s:g} s")
        if p.always_solved is not None:
            parts.append(f"always solved {p.always_solved:.0%}")
        out.append(", ".join(parts) or "nothing")
    return out


def sandbox_start_tail_s(scenario) -> float | None:
    """How long one step's sandboxes take to start (the start tail; SemiAnalysis' "hour-long start tail" at 960
    rollouts) in the run's first phase: the rollouts dispatched per step (trained samples over the kept share),
    each starting ``1/(1 - failure_rate)`` times on average (retries until one starts; docs/rl-modeling.md §7), at
    most ``sandbox.max_starting`` at once, each start taking ``sandbox.startup_s``:
    ``dispatched x startup_s / (1 - failure_rate) / max_starting``, or one start (``startup_s / (1 - p)``) when the
    start rate is unlimited. None for a scenario without sandboxes."""
    from .rl.phases import workload_stats
    from .rl.rates import sandbox_attempts

    ws = workload_stats(scenario)
    if not ws.uses_sandbox:
        return None
    start = ws.startup_s * sandbox_attempts(scenario, ws)
    cap = scenario.sandbox.max_starting
    if cap <= 0:
        return start
    return ws.samples_per_step / ws.keep_fraction * start / cap


def readable_metrics(report):
    """The metrics table for a reader (the Plan page's All metrics): each metric in words, its value formatted by
    its kind (shares as %, multiples as 0.60x, four significant figures), its unit as people write it and its
    meaning; the CSV download keeps the numbers (:func:`metrics_table`)."""
    import pandas as pd

    rows = []
    for key, value in report.metrics.items():
        unit, meaning = METRIC_UNITS[key]
        shown_unit = "" if unit == "1" else unit
        rows.append({"metric": human(key), "value": format_cell(value, unit, key), "unit": shown_unit,
                     "meaning": meaning})
    return pd.DataFrame(rows)
