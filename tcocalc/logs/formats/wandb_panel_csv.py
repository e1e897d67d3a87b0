"""``wandb-panel-csv``: what W&B's "Export panel data / CSV" of a chart writes: the chart's x-axis in the first
column (``Step``, or the custom x-axis it was drawn against), then one column per run and plotted key, named
``<run> - <key>``, each with its ``<run> - <key>__MIN`` and ``__MAX`` (the bounds of the points W&B's chart sampled
into one x bucket; befocuss/Deep-GRPO@7158a967c61c:recipe/DEEP_GRPO/paper_draw/data/training_dynamics/
response_length.csv is one). A panel may hold several runs: one is read, the only one or the one ``run=`` names;
``__MIN``/``__MAX`` are left out. A panel holds the keys plotted on it, so a calibration needs one export per key
(or the run's whole history, a ``wandb-csv``).
"""

from __future__ import annotations

import re

from .base import Ctx, Format, one_run
from .csvs import header_of
from .wandb_csv import rows_read, scan

_RUN_KEY = re.compile(r"^(?P<run>.+?) - (?P<key>\S+?)(?P<bound>__MIN|__MAX)?$")


def _columns(header: list[str]) -> list[tuple[int, str, str, bool]] | None:
    """(column, run, key, is a bound) of every column after the x-axis, or None where one is not ``<run> - <key>``."""
    out = []
    for i, cell in enumerate(header[1:], 1):
        m = _RUN_KEY.match(cell)
        if m is None:
            return None
        out.append((i, m["run"], m["key"], m["bound"] is not None))
    return out


def claims(first: str, _more: bool) -> bool:
    header = header_of(first)
    return len(header) >= 2 and " - " in first and _columns(header) is not None


def read(ctx: Ctx):
    header, header_line, lines_in, lines = scan(ctx)
    columns = _columns(header) or []
    runs = sorted({run for _, run, _, _ in columns})
    run = one_run(runs, ctx.run, ctx.shown) or (runs[0] if runs else None)
    mine = [(i, key) for i, r, key, bound in columns if r == run and not bound]
    cols = ctx.columns()
    for _, key in mine:
        if key not in ctx.keep:
            cols.put(0, key, None)
    picked = [(0, "_step"), *((i, key) for i, key in mine if key in ctx.keep)]
    notes = rows_read(ctx, picked, cols, header, header_line, lines_in, lines)
    notes.append(f"a W&B chart export: run {run!r}" + (f" of its {len(runs)}" if len(runs) > 1 else "")
                 + f", x-axis {header[0]!r} read as the step, the __MIN/__MAX bucket bounds left out; it holds the "
                   f"keys plotted on that chart only ({', '.join(k for _, k in mine[:6])}"
                 + (", ..." if len(mine) > 6 else "") + ")")
    return cols.raw(ctx.shown, FORMAT.name, "_step", notes)


FORMAT = Format("wandb-panel-csv", "a W&B chart CSV export ('<run> - <key>' columns)",
                read, head=claims)
