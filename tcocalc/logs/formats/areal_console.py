"""``areal-console``: the legacy AReaL (realhf) master worker's line at the end of each step
(inclusionAI/AReaL@149a61b2aa07:realhf/system/master_worker.py, ``_log_training_stats``)::

    ... master worker INFO: Epoch 2/5 step 2/12 (global step 14) finishes. #End to end# execution time: *706.147*s.

The step is the global step; the end-to-end time is the key the same function logs to W&B and TensorBoard,
``timeperf/e2e``. Every other line (Ray prefixes, model-function calls) is skipped."""

from __future__ import annotations

import re

from .base import Ctx, Format

_LINE = re.compile(r"\(global step (\d+)\) finishes\..*?#End to end# execution time: \*([-+\w.]+?)\*s")


def claims(line: str) -> bool:
    return "#End to end#" in line and _LINE.search(line) is not None


def read(ctx: Ctx):
    lines, cols = ctx.lines(), ctx.columns()
    for _, line in lines:
        if "#End to end#" in line and (m := _LINE.search(line)):
            cols.add([("step", m.group(1)), ("timeperf/e2e", m.group(2))])
    return cols.raw(ctx.shown, FORMAT.name, "step", lines.skipped_note())


FORMAT = Format("areal-console", "AReaL (realhf) master worker step lines", read,
                line=claims)
