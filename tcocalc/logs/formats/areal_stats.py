"""``areal-stats-console``: AReaL's StatsLogger on the console (areal/utils/stats_logger.py, AReaL-lite): after each
train step a line ``... StatsLogger INFO: Epoch 1/5 Step 1/935 Train step 1/4675 done.`` and then a box table of
the step's statistics, several ``key │ value`` pairs a row::

    │ grpo_actor/actor_loss/avg        │  7.1497e-05 │ grpo_actor/entropy/min │  2.4334e-07 │ ...
    │ timeperf/rollout                 │ 5.1638e+00 │ ...

(inclusionAI/AReaL@a838ce5bc1f4:examples/cloud_gsm8k/logs_h200.txt, a real run in AReaL's own repository). The
step is the train step; the keys are read as printed (the names AReaL logs to W&B), and the time the "done" line
was printed (``YYYYMMDD-HH:MM:SS.mmm``) is the row's ``_timestamp``, so a step period gives the step time as it does
for a W&B history."""

from __future__ import annotations

import re
from datetime import UTC, datetime

from .base import Ctx, Format

_DONE = re.compile(r"(\d{8}-\d{2}:\d{2}:\d{2}\.\d+) StatsLogger INFO: .*?Train step (\d+)/\d+ done\.")
_CELL_ROW = re.compile(r"│(.*)│\s*$")


def claims(line: str) -> bool:
    return "StatsLogger" in line and "Train step" in line and _DONE.search(line) is not None


def _stamp(text: str) -> float | None:
    try:
        return datetime.strptime(text, "%Y%m%d-%H:%M:%S.%f").replace(tzinfo=UTC).timestamp()
    except ValueError:
        return None


def _pairs(row: str) -> list[tuple[str, str]]:
    """The ``key │ value`` pairs of one table row (an odd cell left over, a cut row, is dropped)."""
    cells = [c.strip() for c in row.split("│")]
    return [(cells[i], cells[i + 1]) for i in range(0, len(cells) - 1, 2) if cells[i]]


def read(ctx: Ctx):
    lines, cols = ctx.lines(), ctx.columns()
    record: list | None = None
    tables = 0
    for _, line in lines:
        if "StatsLogger" in line and (m := _DONE.search(line)):
            if record is not None:
                cols.add(record)
            stamp = _stamp(m.group(1))
            record = [("step", m.group(2)), *((("_timestamp", stamp),) if stamp is not None else ())]
            continue
        if record is not None and "│" in line and (m := _CELL_ROW.search(line)):
            record.extend(_pairs(m.group(1)))
            tables += 1
        elif record is not None and "╘" in line:  # the table's last border: the step's record is whole
            cols.add(record)
            record = None
    if record is not None:
        cols.add(record)
    return cols.raw(ctx.shown, FORMAT.name, "step", lines.skipped_note())


FORMAT = Format("areal-stats-console", "AReaL StatsLogger tables", read, line=claims)
