"""``wandb-csv``: a W&B run-history CSV (``run.history()`` / ``run.scan_history()`` written out, or the run's history
export): one column per key plus ``_step``, ``_runtime``, ``_timestamp``; a key is empty where it was not logged
(https://docs.wandb.ai/models/track/log). A CSV whose header has a step column (``_step``, or a framework's own
x-axis such as ``train/global_step``) is read this way."""

from __future__ import annotations

from ..table import number
from .base import Ctx, Format
from .csvs import CsvRows, header_of

STEP_COLUMNS = ("_step", "step", "train/global_step", "rollout/step")


def claims(first: str, _more: bool) -> bool:
    header = header_of(first)
    lower = {c.lower() for c in header}
    return len(header) >= 2 and any(s in header for s in STEP_COLUMNS) and not {"tag", "value"} <= lower


def read(ctx: Ctx):
    rows = CsvRows(ctx.lines())
    cols = ctx.columns()
    picked: list[tuple[int, str]] | None = None
    for row in rows:
        if picked is None:
            picked = [(i, c) for i, c in enumerate(rows.header) if c in ctx.keep]
            for c in rows.header:
                if c not in ctx.keep:
                    cols.put(0, c, None)
        r = cols.n
        cols.n += 1
        for i, key in picked:
            cell = row[i]
            if cell != "":
                cols.put(r, key, number(cell))
    header = rows.header or []
    step = next((s for s in STEP_COLUMNS if s in header), "_step")
    return cols.raw(ctx.shown, FORMAT.name, step, rows.notes())


FORMAT = Format("wandb-csv", "a W&B run-history CSV (a _step column, one column a key)", read, head=claims)
