"""Excel workbooks of results (openpyxl), and the one header convention of every exported table.

Header convention (CSV, Excel, the app's downloads): a column of numbers in one unit is labelled
``name [unit]`` (:func:`label`), the unit parsing with ``tc.get_registry()`` ("1" for a fraction); a column
without a unit (text, flags) keeps its bare name; a long table whose rows have different units carries them in
a ``unit`` column instead (the metrics sheet: metric, value, unit, meaning).

A workbook (:func:`write_workbook`) holds, in this order, the sheets it has of:

* ``inputs``: every scenario field set (dotted path, value, unit), and for a sweep the grid;
* ``metrics``: metric, value, unit, meaning (for a sweep: the units of its metric columns);
* ``phases``: the per-phase metrics;
* ``sweep``: the candidate splits of a solved report, or the points of a :func:`tcocalc.sweep`;
* ``cost lines``: what the cluster's $/hour is made of;
* ``advice``: what to change, one line a row;
* ``provenance``: tcocalc version, date and time (UTC), scenario name and file, where the numbers come from.

Cells that have no value (a metric Tinker does not offer, a sweep point that failed) are empty, never NaN.
"""

from __future__ import annotations

import datetime as _dt
import math
import re
from pathlib import Path

from .errors import ScenarioError

__all__ = ["label", "labelled", "inputs_frame", "provenance_frame", "write_workbook", "report_sheets", "SHEETS",
           "COLUMN_UNITS"]

SHEETS = ("inputs", "metrics", "phases", "sweep", "cost lines", "advice", "provenance")

#: Units of the table columns that are not contract metrics (those are in ``tc.METRIC_UNITS``): the split
#: sweep's and the phase table's own columns.
COLUMN_UNITS: dict[str, str] = {"trainer_share": "1", "usd_per_useful_sample": "USD/sample", "start_step": "step",
                                "steps": "step", "prefill_gpus": "GPU"}
_LABELLED = re.compile(r"^.* \[[^\]]+\]$")


def label(name: str, unit: str | None) -> str:
    """``name [unit]`` (a name already carrying a bracketed unit, or no unit, as it is)."""
    if not unit or _LABELLED.match(name):
        return name
    return f"{name} [{unit}]"


def labelled(frame, units: dict):
    """``frame`` with every column named in ``units`` (a unit string, or a (unit, meaning) tuple as in
    ``tc.METRIC_UNITS``) relabelled ``name [unit]``; other columns unchanged."""
    def unit_of(col):
        spec = units.get(col)
        return spec[0] if isinstance(spec, tuple) else spec

    return frame.rename(columns={c: label(c, unit_of(c)) for c in frame.columns if unit_of(c)})


def _flatten(data, prefix: str = ""):
    if isinstance(data, dict):
        for key, value in data.items():
            yield from _flatten(value, f"{prefix}.{key}" if prefix else str(key))
    elif isinstance(data, list | tuple) and any(isinstance(v, dict) for v in data):
        for i, value in enumerate(data):
            yield from _flatten(value, f"{prefix}.{i}")
    else:
        yield prefix, data


def inputs_frame(scenario, grid: dict | None = None):
    """The scenario's fields as rows (path, value, unit) in TOML order; a swept path's value is the list of
    values it takes (``grid``), marked ``swept``."""
    import pandas as pd

    rows = []
    for path, value in _flatten(scenario.to_dict()):
        rows.append({"path": path, "value": _cell(value), "unit": scenario.field_unit(path) or "",
                     "swept": False})
    for path, values in (grid or {}).items():
        row = {"path": path, "value": ", ".join(str(v) for v in values), "unit": scenario.field_unit(path) or "",
               "swept": True}
        rows = [r for r in rows if r["path"] != path] + [row]
    return pd.DataFrame(rows, columns=["path", "value", "unit", "swept"])


def _cell(value):
    if isinstance(value, list | tuple):
        return ", ".join(str(v) for v in value)
    if isinstance(value, float) and not math.isfinite(value):
        return None
    return value


def provenance_frame(*, scenario_name: str, scenario_file: str | None = None, source: str,
                     extra: dict | None = None):
    """Key/value rows: tcocalc version, created (UTC, ISO 8601), scenario name and file, source."""
    import pandas as pd

    from ._version import __version__

    rows = {"tcocalc version": __version__,
            "created (UTC)": _dt.datetime.now(_dt.UTC).replace(microsecond=0).isoformat(),
            "scenario": scenario_name, "scenario file": scenario_file or "", "source": source, **(extra or {})}
    return pd.DataFrame({"key": list(rows), "value": [str(v) for v in rows.values()]})


def _sheet_frame(frame):
    """A copy that Excel can hold: pandas NA, NaN and infinities as empty cells."""
    import numpy as np
    import pandas as pd

    out = frame.copy()
    for col in out.columns:
        s = out[col]
        if pd.api.types.is_float_dtype(s.dtype):
            values = s.to_numpy(dtype=float, na_value=np.nan)
            out[col] = pd.Series([float(v) if math.isfinite(v) else None for v in values], index=s.index,
                                 dtype=object)
        elif s.dtype == object or pd.api.types.is_string_dtype(s.dtype):
            out[col] = pd.Series([None if _missing(v) else v for v in s], index=s.index, dtype=object)
    return out


def _missing(v) -> bool:
    import pandas as pd

    return v is None or v is pd.NA or (isinstance(v, float) and not math.isfinite(v))


def write_workbook(path, sheets: dict) -> Path:
    """Write ``sheets`` (sheet name -> DataFrame; :data:`SHEETS` order, others after) to an .xlsx file (or a
    binary buffer such as ``io.BytesIO``).

    Returns the path written (the buffer, for a buffer). Raises :class:`~tcocalc.errors.ScenarioError` naming
    the path when it cannot be written (a missing folder, no permission, a folder of that name)."""
    import pandas as pd

    target = path if hasattr(path, "write") else Path(path)  # a binary buffer (io.BytesIO) as it is
    order = [s for s in SHEETS if s in sheets] + [s for s in sheets if s not in SHEETS]
    try:
        with pd.ExcelWriter(target, engine="openpyxl") as writer:
            for name in order:
                _sheet_frame(sheets[name]).to_excel(writer, sheet_name=name[:31], index=False)
    except OSError as exc:
        raise ScenarioError("path", f"cannot write {str(path)!r}: {exc.strerror or exc}") from None
    return target


def _calibration_cell(report) -> str:
    """Whether the plan is calibrated, from what, or why not (``report.diagnosis.calibration`` and ``.trust``): the
    same words as tc.calibration_line, "not calibrated: <why>" whenever the calibration's fit does not hold."""
    if report.diagnosis is None:
        return "uncalibrated"
    status, trust = report.diagnosis.calibration, report.diagnosis.trust
    err = ("; no out-of-sample evidence for this regime" if trust.typical_error is None
           else f"; typical step-time error ±{math.ceil(100 * trust.typical_error - 1e-9)}%")
    if status.misfit:
        return f"not calibrated: {status.misfit}{err}"
    if status.calibrated:
        across = f"; {status.across_modes}" if status.across_modes else ""
        return f"calibrated from {status.source}{across}{err}"
    return f"uncalibrated{err}"


def report_sheets(report, metric_units: dict, cost_lines=None, *, scenario_file: str | None = None) -> dict:
    """The sheets of an :class:`~tcocalc.RLReport`'s workbook (``metric_units``: ``tc.METRIC_UNITS``)."""
    import pandas as pd

    units = {**metric_units, **COLUMN_UNITS}
    sheets = {"inputs": inputs_frame(report.scenario), "metrics": report.to_frame()}
    if report.phases is not None:
        sheets["phases"] = labelled(report.phases, units)
    if report.sweep is not None:
        sheets["sweep"] = labelled(report.sweep, units)
    if cost_lines is not None:
        sheets["cost lines"] = cost_lines
    sheets["advice"] = pd.DataFrame({"advice": list(report.advice)})
    sheets["provenance"] = provenance_frame(scenario_name=report.scenario.name, scenario_file=scenario_file,
                                            source=report.source, extra={"calibration": _calibration_cell(report)})
    return sheets
