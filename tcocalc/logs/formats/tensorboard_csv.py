"""``tensorboard-csv``: TensorBoard scalars in long form, columns ``tag``, ``step``, ``value`` and optionally
``wall_time`` and ``run`` (any case), as written from the tensorboard package's ``EventAccumulator``
(``(wall_time, step, value)`` per tag). Each point is one record; the measurement step merges a step's records.
A file with two runs needs ``run=``."""

from __future__ import annotations

from ..table import number
from .base import Ctx, Format, one_run
from .csvs import CsvRows, header_of


def _names(header: list[str]) -> dict[str, int]:
    lower = {c.strip().lower().replace(" ", "_"): i for i, c in enumerate(header)}
    out = {n: lower[n] for n in ("tag", "step", "value", "run") if n in lower}
    wall = next((lower[n] for n in ("wall_time", "walltime") if n in lower), None)
    if wall is not None:
        out["wall_time"] = wall
    return out


def claims(first: str, _more: bool) -> bool:
    return {"tag", "step", "value"} <= set(_names(header_of(first)))


def read(ctx: Ctx):
    rows, cols, runs = CsvRows(ctx.lines()), ctx.columns(), set()
    at = None
    bad_steps = 0
    for row in rows:
        at = at or _names(rows.header)
        if "run" in at:
            runs.add(row[at["run"]])
            if ctx.run is not None and row[at["run"]] != ctx.run:
                continue
        step = number(row[at["step"]])
        if step == float("inf"):
            bad_steps += 1
            continue
        record = [("step", step), (row[at["tag"]], row[at["value"]] if row[at["value"]] != "" else None)]
        if "wall_time" in at:
            record.append(("_timestamp", row[at["wall_time"]]))
        cols.add(record)
    one_run(runs, ctx.run, ctx.shown)
    notes = rows.notes() + ([f"{bad_steps} points whose step is not a number were skipped"] if bad_steps else [])
    return cols.raw(ctx.shown, FORMAT.name, "step", notes)


FORMAT = Format("tensorboard-csv", "TensorBoard scalars as CSV (tag, step, value columns)", read, head=claims)
