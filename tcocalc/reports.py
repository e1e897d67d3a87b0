"""CSV report tables with units in the column names, and their readers (round-trip tested).

One header convention (:mod:`tcocalc.workbook`): a column of numbers in one unit is ``name [unit]``, where
``name`` is the library's own column (the key of ``report.sweep``, ``report.phases`` or ``report.metrics``) and
the unit parses with ``tc.get_registry()``; strip `` [unit]`` to get the key back.
"""

from __future__ import annotations

from .rl.report import METRIC_UNITS
from .workbook import COLUMN_UNITS, labelled

__all__ = ["metrics_table", "sweep_table", "phases_table", "timeline_table", "cost_table", "gap_table",
           "to_csv_text", "error_text", "TABLE_UNITS", "workbook_bytes", "XLSX_MIME"]

XLSX_MIME = "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet"

#: Units of every column the report tables label: the contract metrics and the split sweep's / phases' own.
TABLE_UNITS = {**{k: unit for k, (unit, _) in METRIC_UNITS.items()}, **COLUMN_UNITS}

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
    return gap.rename(columns={"usd_per_mtok": "usd_per_mtok [USD/Mtoken]",
                               "cumulative_usd_per_mtok": "cumulative [USD/Mtoken]"})


def workbook_bytes(report, scenario_file: str | None = None) -> bytes:
    """The report's Excel workbook (``report.to_excel``: inputs, metrics, phases, sweep, cost lines, advice,
    provenance) as bytes, for a download button."""
    import io

    buffer = io.BytesIO()
    report.to_excel(buffer, scenario_file=scenario_file)
    return buffer.getvalue()


def to_csv_text(frame) -> str:
    """CSV text of a table (what the app's download buttons serve)."""
    return frame.to_csv(index=False)


def error_text(value) -> str:
    """A signed error in percent as text (``+12%``), or "not modelled" for a row the model cannot represent."""
    import pandas as pd

    return "not modelled" if pd.isna(value) else f"{float(value):+.0f}%"
