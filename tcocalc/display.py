"""Notebook displays: small, self-contained HTML cards for results (``_repr_html_``).

Jupyter shows an object by calling its ``_repr_html_()``; :class:`~tcocalc.Scenario`, :class:`~tcocalc.RLReport`,
:class:`~tcocalc.SizingResult` and sweep results return :func:`card` HTML built here. The helpers take plain
values and units, so any result class (a run calibration, a measurements table) can show itself the same way::

    class Measurements:
        def _repr_html_(self):
            return metrics_card("Measured run", {"step_time_s": 96.7, "trainer_idle_fraction": 0.31},
                                {"step_time_s": ("s", "wall time per step"), "trainer_idle_fraction": ("1", "")},
                                notes=["12 steps logged"])

Every piece of text is HTML-escaped; no script, no style sheet beyond inline styles, so the card renders the
same in Jupyter, VS Code and GitHub's notebook viewer.
"""

from __future__ import annotations

import html
import math
from collections.abc import Iterable, Mapping

__all__ = ["format_value", "format_cell", "is_ratio", "human", "header", "LABELS", "RATIO_NAMES", "card",
           "metrics_card", "table_html"]

#: Dimensionless figures that are multiples (shown as 0.60x, as published), not shares (shown as %).
RATIO_NAMES = frozenset({"cost_ratio_vs_tinker", "semianalysis_cost_ratio_vs_tinker", "goodput_factor",
                         "speedup_vs_aggregated"})

#: What a reader calls each column and metric of the library's tables (the app's tables, charts and cards); the
#: unit is added by :func:`header`. Names not listed read as their words (:func:`human`).
LABELS: dict[str, str] = {
    # contract metrics (tc.METRIC_UNITS)
    "trainer_gpus": "trainer GPUs", "generator_gpus": "generator GPUs", "step_time_s": "step time",
    "useful_samples_per_s": "useful throughput", "trainer_capacity_samples_per_s": "trainer capacity",
    "generator_capacity_samples_per_s": "generator capacity", "trainer_idle_fraction": "trainer idle",
    "generator_idle_fraction": "generator idle", "trainer_mfu": "trainer MFU (wall)",
    "trainer_mfu_busy": "trainer MFU (busy)", "generator_output_tokens_per_s_per_gpu": "generator output per GPU",
    "useful_group_fraction": "groups with signal", "discarded_fraction": "discarded rollouts",
    "mean_staleness_steps": "mean staleness", "max_staleness_steps": "max staleness",
    "token_staleness_steps": "token-weighted staleness", "env_state_stale_fraction": "stale sandbox state",
    "sandbox_concurrency": "live sandboxes", "sandbox_cpu_cores": "sandbox CPU cores",
    "usd_per_hour": "cluster cost per hour", "usd_per_gpu_hour": "cost per GPU-hour", "usd_per_step": "cost per step",
    "usd_per_mtok_trained": "cost per M trained tokens (ours)",
    "tinker_usd_per_mtok": "Tinker per M trained tokens (ours: discards billed)",
    "cost_ratio_vs_tinker": "vs Tinker (ours)", "run_hours": "run time", "run_usd": "run cost",
    "semianalysis_usd_per_mtok": "cost per M tokens (SemiAnalysis-style)",
    "semianalysis_tinker_usd_per_mtok": "Tinker per M tokens (SemiAnalysis-style: discards not billed)",
    "semianalysis_cost_ratio_vs_tinker": "vs Tinker (SemiAnalysis-style)",
    # sizing candidates
    "trainer_hardware": "trainer", "generator_hardware": "generator", "mode": "mode", "same_as_modes": "same as",
    "staleness_bound_steps": "staleness bound", "supply": "supply", "trainer_usd_per_gpu_hour": "trainer price",
    "generator_usd_per_gpu_hour": "generator price", "usd_per_useful_sample": "cost per useful sample",
    "total_gpus": "GPUs", "meets_target": "meets the target",
    # build / rent / Tinker, sensitivity, cost lines, the split sweep
    "option": "option", "provider": "provider", "tier": "tier", "goodput_factor": "goodput factor",
    "accounting": "how it is counted", "base_usd_per_mtok": "base", "low_usd_per_mtok": "input -20%",
    "high_usd_per_mtok": "input +20%", "swing_usd_per_mtok": "swing", "trainer_share": "trainer share",
    "feasible": "fits", "meets_constraints": "meets the constraints",
}


def is_ratio(name: str) -> bool:
    """Whether a dimensionless figure named ``name`` is a multiple (``0.60x``) rather than a share (``60%``)."""
    return name in RATIO_NAMES or "ratio" in name or "speed-up" in name or "speedup" in name


def human(name: str) -> str:
    """A column or metric name as a reader says it: :data:`LABELS`, else its words (``usd`` as USD, ``gpus`` as
    GPUs, ``mtok`` as M tokens, ``mfu`` as MFU); a name already carrying a bracketed unit keeps it."""
    if name in LABELS:
        return LABELS[name]
    words = {"usd": "USD", "gpu": "GPU", "gpus": "GPUs", "mtok": "M tokens", "mfu": "MFU", "cpu": "CPU", "s": "s",
             "kv": "KV", "tp": "TP", "pp": "PP", "ep": "EP", "dp": "DP"}
    return " ".join(words.get(w, w) for w in str(name).split("_"))


def header(name: str, unit: str | None = "") -> str:
    """``human(name)`` with its unit in brackets (``run cost [USD]``), except for shares and multiples (their
    cells carry ``%`` and ``x``) and names that carry a unit already."""
    text = human(name)
    if not unit or unit == "1" or text.endswith("]"):
        return text
    return f"{text} [{unit}]"


def format_cell(value, unit: str = "", name: str = "") -> str:
    """A table cell as people read it (:func:`format_value`), empty where there is no value (None, NaN, pandas NA)
    and a multiple as ``0.60x`` when ``name`` is one (:func:`is_ratio`)."""
    if value is None or value is _pd_na() or (isinstance(value, float) and math.isnan(value)):
        return ""
    return format_value(value, unit, ratio=is_ratio(name))


def _pd_na():
    import sys

    pd = sys.modules.get("pandas")
    return pd.NA if pd is not None else None

_STYLE = ("font-family:system-ui,sans-serif;font-size:13px;border:1px solid #ccc;border-radius:6px;"
          "padding:8px 12px;max-width:60em")


def format_value(value, unit: str = "", *, ratio: bool = False) -> str:
    """A value as people read it: multiples (``ratio``) as ``0.60x``, fractions (unit ``"1"``) as percentages with
    three significant figures, other numbers with four significant figures and thousands separators from 1,000
    up, None as "not offered", booleans as yes/no, anything else as text. Never "nan" or "inf": a non-finite
    number shows as "n/a"."""
    if value is None:
        return "not offered"
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, int | float) or hasattr(value, "__float__") and not isinstance(value, str):
        try:
            v = float(value)
        except (TypeError, ValueError):
            return str(value)
        if not math.isfinite(v):
            return "n/a"
        if ratio:
            return f"{v:.2f}x"
        if unit == "1":
            return f"{100 * v:.3g}%"
        if float(v).is_integer() and abs(v) < 1e15:
            return f"{int(v):,}"
        return f"{v:,.0f}" if abs(v) >= 10_000 else f"{v:,.4g}"
    return str(value)


def _unit_text(unit: str) -> str:
    return "" if unit in ("1", "") else unit


def table_html(rows: Iterable[tuple], header: tuple[str, ...] = ()) -> str:
    """An HTML table of already-formatted cells (each cell escaped)."""
    esc = html.escape
    head = "".join(f"<th style='text-align:left;padding:2px 8px'>{esc(str(h))}</th>" for h in header)
    body = "".join("<tr>" + "".join(f"<td style='padding:2px 8px'>{esc(str(c))}</td>" for c in row) + "</tr>"
                   for row in rows)
    return f"<table style='border-collapse:collapse'>{f'<tr>{head}</tr>' if head else ''}{body}</table>"


def card(title: str, rows: Iterable[tuple[str, str, str]], *, subtitle: str = "", highlight: str = "",
         notes: Iterable[str] = (), notes_title: str = "Advice", extra_html: str = "") -> str:
    """An HTML card: a title, an optional subtitle, a table of (label, value, unit) rows, an optional
    highlighted line (e.g. the binding limit), a list of notes (e.g. the advice) and trusted ``extra_html``
    (built by :func:`table_html` or pandas) at the end."""
    esc = html.escape
    parts = [f"<div style='{_STYLE}'><div style='font-weight:600;font-size:15px'>{esc(title)}</div>"]
    if subtitle:
        parts.append(f"<div style='color:#555'>{esc(subtitle)}</div>")
    parts.append(table_html(rows))
    if highlight:
        parts.append(f"<div style='margin-top:6px'><b>{esc(highlight)}</b></div>")
    notes = list(notes)
    if notes:
        items = "".join(f"<li>{esc(n)}</li>" for n in notes)
        parts.append(f"<div style='margin-top:6px'>{esc(notes_title)}:<ul style='margin:2px 0'>{items}</ul></div>")
    parts.append(extra_html)
    parts.append("</div>")
    return "".join(parts)


def metrics_card(title: str, values: Mapping[str, object], units: Mapping[str, object], *, keys: Iterable[str] = (),
                 subtitle: str = "", highlight: str = "", notes: Iterable[str] = (), notes_title: str = "Advice",
                 extra_html: str = "") -> str:
    """:func:`card` of named values with their units: ``units[name]`` is a unit string or a (unit, meaning)
    tuple as in ``tc.METRIC_UNITS`` (the meaning shows as a tooltip-free fourth column). ``keys`` picks and
    orders the rows (default: every value); a key without a value is left out."""
    rows = []
    for key in list(keys) or list(values):
        if key not in values:
            continue
        spec = units.get(key, "")
        unit, meaning = (spec[0], spec[1]) if isinstance(spec, tuple) else (str(spec), "")
        rows.append((key, format_value(values[key], unit, ratio=is_ratio(key)), _unit_text(unit), meaning))
    return card(title, rows, subtitle=subtitle, highlight=highlight, notes=notes, notes_title=notes_title,
                extra_html=extra_html)
