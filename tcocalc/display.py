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

__all__ = ["format_value", "card", "metrics_card", "table_html"]

_STYLE = ("font-family:system-ui,sans-serif;font-size:13px;border:1px solid #ccc;border-radius:6px;"
          "padding:8px 12px;max-width:60em")


def format_value(value, unit: str = "") -> str:
    """A value as people read it: fractions (unit ``"1"``) as percentages with three significant figures,
    other numbers with four significant figures and thousands separators from 10,000 up, None as
    "not offered", booleans as yes/no, anything else as text. Never "nan" or "inf": a non-finite number
    shows as "n/a"."""
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
        if unit == "1":
            return f"{100 * v:.3g}%"
        if float(v).is_integer() and abs(v) < 1e15:
            return f"{int(v):,}"
        return f"{v:,.0f}" if abs(v) >= 10_000 else f"{v:.4g}"
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
        rows.append((key, format_value(values[key], unit), _unit_text(unit), meaning))
    return card(title, rows, subtitle=subtitle, highlight=highlight, notes=notes, notes_title=notes_title,
                extra_html=extra_html)
