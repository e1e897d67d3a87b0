"""Excel workbooks of results (openpyxl), and the one header convention of every exported table.

Header convention (CSV, Excel, the app's downloads): a column of numbers in one unit is labelled
``name [unit]`` (:func:`label`), the unit parsing with ``tc.get_registry()`` ("1" for a fraction); a column
without a unit (text, flags) keeps its bare name; a long table whose rows have different units carries them in
a ``unit`` column instead (the metrics sheet: metric, value, unit, meaning).

A workbook (:func:`write_workbook`) holds, in this order, the sheets it has of:

* ``plan``: a report's planner's sheet: each pool's GPUs and price, the cost lines, the cluster's $/hour, the run's
  cost and the cost per M trained tokens as live Excel formulas over the ``inputs`` sheet (change
  ``economics.usd_per_gpu_hour`` there and $/Mtok follows); the model's outputs they use (run time, trained tokens
  per hour) are values;
* ``inputs``: every scenario field set (dotted path, value, unit), and for a sweep the grid (a ``swept`` column).
  It reads back: ``tc.load_scenario("plan.xlsx")`` and ``tcocalc run plan.xlsx`` validate it as a TOML file
  (:func:`read_inputs`), so a plan edited in Excel comes home;
* ``metrics``: metric, value, unit, meaning (for a sweep: the units of its metric columns);
* ``phases``: the per-phase metrics;
* ``sweep``: the candidate splits of a solved report, or the points of a :func:`tcocalc.sweep`;
* ``cost lines``: what the cluster's $/hour is made of (values, for programs; the plan sheet recalculates);
* ``advice``: what to change, one line a row;
* ``provenance``: tcocalc version, date and time (UTC), scenario name and file, where the numbers come from.

Cells that have no value (a metric Tinker does not offer, a sweep point that failed) are empty, never NaN. Every
sheet has a bold, frozen header row, columns as wide as their text (up to 60 characters) and number formats by
unit (shares as %, multiples as 0.60x, money with two decimals, counts with separators). Text a spreadsheet cannot
hold (control characters such as NUL) is dropped from every cell (:func:`sanitize`).
"""

from __future__ import annotations

import datetime as _dt
import json
import math
import os
import re
from dataclasses import dataclass
from pathlib import Path

from .errors import ScenarioError

__all__ = ["label", "labelled", "inputs_frame", "provenance_frame", "write_workbook", "report_sheets", "SHEETS",
           "COLUMN_UNITS", "FormulaSheet", "read_inputs", "sanitize", "output_path"]

SHEETS = ("plan", "inputs", "metrics", "phases", "sweep", "cost lines", "advice", "provenance")
#: Characters a spreadsheet cell cannot hold (XML 1.0 forbids C0 controls other than tab, newline and return)
_ILLEGAL = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f]")
#: Units as people write them in the inputs sheet (the scenario schema's own spelling -> the sheet's)
_UNIT_WORDS = {"steps": "step", "USD/h": "USD/GPU-h"}


def sanitize(text):
    """``text`` without the control characters a spreadsheet (or a CSV opened in one) cannot hold; other values
    as they are."""
    return _ILLEGAL.sub("", text) if isinstance(text, str) else text


def output_path(path, what: str = "path"):
    """A writer's target: ``path`` as a :class:`~pathlib.Path` (a str or an ``os.PathLike``), or a binary buffer
    (anything with ``write``) as it is; anything else is a :class:`ScenarioError` naming it."""
    if hasattr(path, "write"):
        return path
    if isinstance(path, str | os.PathLike) and not isinstance(path, bytes):
        return Path(path)
    raise ScenarioError(what, f"expected a file path (str or os.PathLike) or a binary buffer, got "
                              f"{type(path).__name__} {path!r}"[:300])


@dataclass(frozen=True)
class FormulaSheet:
    """A sheet of live formulas: rows of (item, value or formula, unit, how). A formula (text starting with ``=``)
    may name a scenario field's value cell as ``{in:trainer.gpus}`` (the inputs sheet) and another row's value as
    ``{row:KEY}``, where KEY is that row's item; :func:`write_workbook` resolves both."""

    rows: tuple[tuple, ...]

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

    def unit(path):
        u = scenario.field_unit(path) or ""
        return _UNIT_WORDS.get(u, u)

    rows = []
    for path, value in _flatten(scenario.to_dict()):
        rows.append({"path": path, "value": _cell(value), "unit": unit(path), "swept": False})
    for path, values in (grid or {}).items():
        row = {"path": path, "value": ", ".join(str(v) for v in values), "unit": unit(path), "swept": True}
        rows = [r for r in rows if r["path"] != path] + [row]
    cols = ["path", "value", "unit", "swept"] if grid else ["path", "value", "unit"]  # "swept" only for a sweep
    return pd.DataFrame(rows, columns=["path", "value", "unit", "swept"])[cols]


def _cell(value):
    if isinstance(value, list | tuple):
        return json.dumps(list(value))  # reads back (read_scenario)
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
    """A copy that Excel can hold: pandas NA, NaN and infinities as empty cells, text without control characters
    (:func:`sanitize`), column names too."""
    import numpy as np
    import pandas as pd

    out = frame.copy()
    out.columns = [sanitize(str(c)) for c in out.columns]
    for col in out.columns:
        s = out[col]
        if pd.api.types.is_float_dtype(s.dtype):
            values = s.to_numpy(dtype=float, na_value=np.nan)
            out[col] = pd.Series([float(v) if math.isfinite(v) else None for v in values], index=s.index,
                                 dtype=object)
        elif s.dtype == object or pd.api.types.is_string_dtype(s.dtype):
            out[col] = pd.Series([None if _missing(v) else sanitize(v) for v in s], index=s.index, dtype=object)
    return out


def _missing(v) -> bool:
    import pandas as pd

    return v is None or v is pd.NA or (isinstance(v, float) and not math.isfinite(v))


_UNIT_IN_HEADER = re.compile(r"^(.*) \[([^\]]+)\]$")


def number_format(unit: str | None, name: str = "") -> str | None:
    """The Excel number format of a value in ``unit``: shares as %, multiples as 0.60x, money with two decimals,
    GPUs and steps as whole counts with separators, other numbers with up to three decimals."""
    from .display import is_ratio

    if unit is None:
        return None
    if unit == "1":
        return '0.00"x"' if is_ratio(name) else "0.0%"
    if unit.startswith("USD"):
        return "#,##0.00"
    if unit in ("GPU", "step", "core"):
        return "#,##0"
    return "#,##0.0##"


def _format_sheet(ws, frame) -> None:
    """Bold frozen header, column widths, number formats by the unit in a header (``name [unit]``) or, for a long
    table, in its ``unit`` column."""
    from openpyxl.styles import Font
    from openpyxl.utils import get_column_letter

    ws.freeze_panes = "A2"
    bold = Font(bold=True)
    for cell in ws[1]:
        cell.font = bold
    n = ws.max_row
    cols = list(frame.columns)
    per_row = "unit" in cols and "value" in cols  # metrics, inputs: each row its own unit
    for j, col in enumerate(cols, start=1):
        letter = get_column_letter(j)
        sample = [str(col)] + [str(v) for v in frame[col].head(200) if v is not None]
        ws.column_dimensions[letter].width = min(60, max(8, max(len(t) for t in sample) + 2))
        m = _UNIT_IN_HEADER.match(str(col))
        fmt = number_format(m.group(2), m.group(1)) if m else None
        if fmt and not per_row:
            for (cell,) in ws.iter_rows(min_row=2, max_row=n, min_col=j, max_col=j):
                if isinstance(cell.value, int | float) and not isinstance(cell.value, bool):
                    cell.number_format = fmt
    if per_row:
        jv, ju = cols.index("value") + 1, cols.index("unit") + 1
        name_col = cols.index("metric") + 1 if "metric" in cols else cols.index("path") + 1 if "path" in cols else 1
        for row in ws.iter_rows(min_row=2, max_row=n):
            value, unit = row[jv - 1], row[ju - 1].value
            if isinstance(value.value, int | float) and not isinstance(value.value, bool):
                fmt = number_format(unit or "", str(row[name_col - 1].value or ""))
                if fmt and unit:
                    value.number_format = fmt


def _write_formulas(ws, sheet: FormulaSheet, inputs_rows: dict[str, int]) -> None:
    """The plan sheet: item, value (a formula where the row has one), unit, how; references resolved."""
    from openpyxl.styles import Font

    header = ("item", "value", "unit", "how")
    ws.append(header)
    keys = {row[0]: i + 2 for i, row in enumerate(sheet.rows)}

    def resolve(text: str) -> str:
        text = re.sub(r"\{in:([^}]+)\}", lambda m: f"inputs!$B${inputs_rows[m.group(1)]}", text)
        return re.sub(r"\{row:([^}]+)\}", lambda m: f"$B${keys[m.group(1)]}", text)

    for item, value, unit, how in sheet.rows:
        ws.append([sanitize(item), resolve(value) if isinstance(value, str) and value.startswith("=") else value,
                   unit, sanitize(how)])
        ws.cell(ws.max_row, 2).number_format = number_format(unit, item) or "General"
    ws.freeze_panes = "A2"
    for cell in ws[1]:
        cell.font = Font(bold=True)
    for letter, width in zip("ABCD", (44, 16, 14, 80), strict=True):
        ws.column_dimensions[letter].width = width


def write_workbook(path, sheets: dict) -> Path:
    """Write ``sheets`` (sheet name -> DataFrame, or a :class:`FormulaSheet`; :data:`SHEETS` order, others after)
    to an .xlsx file (a str or ``os.PathLike``), or a binary buffer such as ``io.BytesIO``.

    Returns the path written (the buffer, for a buffer). Raises :class:`~tcocalc.errors.ScenarioError` naming
    the path when it cannot be written (a missing folder, no permission, a folder of that name) or is not a path."""
    import pandas as pd

    target = output_path(path)
    order = [s for s in SHEETS if s in sheets] + [s for s in sheets if s not in SHEETS]
    inputs_rows = ({p: i + 2 for i, p in enumerate(sheets["inputs"]["path"])}
                   if isinstance(sheets.get("inputs"), pd.DataFrame) else {})
    try:
        with pd.ExcelWriter(target, engine="openpyxl") as writer:
            for name in order:
                sheet = sheets[name]
                if isinstance(sheet, FormulaSheet):
                    ws = writer.book.create_sheet(name[:31])
                    _write_formulas(ws, sheet, inputs_rows)
                    continue
                frame = _sheet_frame(sheet)
                frame.to_excel(writer, sheet_name=name[:31], index=False)
                _format_sheet(writer.sheets[name[:31]], frame)
    except OSError as exc:
        raise ScenarioError("path", f"cannot write {str(path)!r}: {exc.strerror or exc}") from None
    return target


def plan_sheet(report, costs, metric_units: dict) -> FormulaSheet | None:
    """A report's planner's sheet (:class:`FormulaSheet`): each cost line's quantity and price, the cluster's
    $/hour, the run's cost and the cost per M trained tokens as formulas over the inputs sheet. A pool priced by
    ``economics.usd_per_gpu_hour`` (or its own ``<pool>_usd_per_gpu_hour``) takes it from there; a pool priced
    otherwise (a chip's ownership cost after a hardware swap) has its price as a value, named in ``how``.
    The model's outputs (run time, trained tokens per hour) are values: they do not depend on the price."""
    scn, m = report.scenario, report.metrics
    econ = scn.economics
    if costs is None or not m.get("usd_per_hour") or not m.get("usd_per_mtok_trained"):
        return None
    sides = ("trainer", "generator")
    rows, cost_keys = [], []
    for line, qty, unit, price in costs[["line", "quantity", "unit", "price [USD/unit-h]"]].itertuples(index=False):
        side = line.split(" ", 1)[0]
        q, how_q = float(qty), "the model's"
        if side in sides and unit == "GPU" and qty == getattr(scn, side).gpus:
            q, how_q = f"={{in:{side}.gpus}}", f"{side}.gpus on the inputs sheet"
        elif line == "sandbox CPU cores":
            how_q = "live sandboxes x sandbox.cpu_cores (the model's)"
        p, how_p = float(price), "a value: " + line[line.find("(") + 1:-1] if "(" in line else "a value"
        own = getattr(econ, f"{side}_usd_per_gpu_hour", None) if side in sides else None
        if line.endswith(", scenario price)") and "GPUs (" in line:  # the basis cost_lines names (tco.pool_pricing)
            field = f"economics.{side}_usd_per_gpu_hour" if own is not None else "economics.usd_per_gpu_hour"
            p, how_p = f"={{in:{field}}}", f"{field} on the inputs sheet"
        elif line == "sandbox CPU cores":
            p, how_p = "={in:economics.usd_per_cpu_core_hour}", "economics.usd_per_cpu_core_hour on the inputs sheet"
        rows.append((f"{line}: quantity", q, unit, how_q))
        rows.append((f"{line}: price", p, f"USD/{unit}-h" if unit != "GPU" else "USD/GPU-h", how_p))
        rows.append((f"{line}: cost", f"={{row:{line}: quantity}}*{{row:{line}: price}}", "USD/h",
                     "quantity x price"))
        cost_keys.append(f"{line}: cost")
    mtok_h = m["usd_per_hour"] / m["usd_per_mtok_trained"]
    rows += [
        ("cluster cost", "=" + "+".join(f"{{row:{k}}}" for k in cost_keys), "USD/h", "the cost lines' sum"),
        ("run time", m["run_hours"], "h", f"the model's, for workload.steps = {scn.workload.steps:,}"),
        ("run cost", "={row:cluster cost}*{row:run time}", "USD", "cluster cost x run time"),
        ("trained tokens per hour", mtok_h, "Mtoken/h", "the model's: prompt and response tokens of trained "
                                                       "trajectories, in millions per hour"),
        ("cost per M trained tokens", "={row:cluster cost}/{row:trained tokens per hour}", "USD/Mtoken",
         "cluster cost / trained tokens per hour (our accounting)"),
    ]
    if m.get("tinker_usd_per_mtok"):
        rows += [("Tinker's price per M trained tokens", m["tinker_usd_per_mtok"], "USD/Mtoken",
                  "Tinker's list price for the run's token mix, discarded rollouts billed"),
                 ("vs Tinker", "={row:cost per M trained tokens}/{row:Tinker's price per M trained tokens}", "1",
                  "ours over Tinker's")]
    return FormulaSheet(tuple(rows))


def read_inputs(path) -> tuple[dict, dict[str, int]]:
    """The scenario data of a workbook's ``inputs`` sheet (path, value, unit rows, as :func:`inputs_frame` writes
    them) as nested plain data, and each dotted path's row; ``tc.load_scenario("plan.xlsx")`` validates it as a
    TOML file is, naming the field and the row. :class:`ScenarioError` names the file when it is not a workbook of
    tcocalc's."""
    try:
        from openpyxl import load_workbook

        book = load_workbook(path, read_only=True, data_only=True)
    except (OSError, ValueError, KeyError) as exc:
        raise ScenarioError("path", f"cannot read {str(path)!r} as an Excel workbook: {exc}") from None
    except Exception as exc:  # zipfile.BadZipFile and openpyxl's own: not a workbook
        raise ScenarioError("path", f"{str(path)!r} is not an Excel workbook ({type(exc).__name__})") from None
    try:
        if "inputs" not in book.sheetnames:
            raise ScenarioError("path", f"{str(path)!r} has no 'inputs' sheet (tcocalc's workbooks have one: "
                                        f"path, value, unit)")
        rows = list(book["inputs"].iter_rows(values_only=True))
    finally:
        book.close()
    if not rows or [str(c).strip() if c is not None else "" for c in rows[0][:2]] != ["path", "value"]:
        raise ScenarioError("path", f"{str(path)!r}: the inputs sheet's first row must be 'path', 'value', 'unit'")
    data: dict = {}
    where: dict[str, int] = {}
    for i, row in enumerate(rows[1:], start=2):
        key, value = (row + (None, None))[:2]
        if key is None or value is None or (isinstance(value, str) and not value.strip()):
            continue
        key = str(key).strip()
        where[key] = i
        if isinstance(value, str) and value.startswith("[") and value.endswith("]"):
            try:
                value = json.loads(value)
            except ValueError:
                pass
        _put(data, key.split("."), value)
    return _lists(data), where


def _put(data: dict, keys: list[str], value) -> None:
    for k in keys[:-1]:
        data = data.setdefault(k, {})
        if not isinstance(data, dict):
            raise ScenarioError(".".join(keys), "a value and a table at the same path")
    data[keys[-1]] = value


def _lists(data):
    """Tables whose keys are 0, 1, 2 ... (``phases.0.name``) as lists, as the inputs sheet flattened them."""
    if not isinstance(data, dict):
        return data
    out = {k: _lists(v) for k, v in data.items()}
    if out and all(k.isdigit() for k in out):
        return [out[k] for k in sorted(out, key=int)]
    return out


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
    inputs = inputs_frame(report.scenario)
    if report.sweep is not None:  # solved: the file's description names the split before solving (audit N14)
        scn = report.scenario
        said = f"Split solved by tcocalc: {scn.trainer.gpus:,} trainer + {scn.generator.gpus:,} generator GPUs. "
        at = inputs["path"] == "description"
        inputs.loc[at, "value"] = [(said + str(v))[:10_000] if v and not str(v).startswith(said) else v
                                   for v in inputs.loc[at, "value"]]
    sheets = {"inputs": inputs, "metrics": report.to_frame()}
    if report.phases is not None:
        sheets["phases"] = labelled(report.phases, units)
    if report.sweep is not None:
        sheets["sweep"] = labelled(report.sweep, units)
    if cost_lines is not None:
        sheets["cost lines"] = cost_lines
        plan = plan_sheet(report, cost_lines, metric_units)
        if plan is not None:
            sheets["plan"] = plan
    sheets["advice"] = pd.DataFrame({"advice": list(report.advice)})
    sheets["provenance"] = provenance_frame(scenario_name=report.scenario.name, scenario_file=scenario_file,
                                            source=report.source, extra={"calibration": _calibration_cell(report)})
    return sheets
