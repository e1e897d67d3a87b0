"""``prime-rl-console``: prime-rl's orchestrator console (loguru), one line a step
(PrimeIntellect-ai/prime-rl@559b44772e47:src/prime_rl/orchestrator/orchestrator.py)::

    02:33:26 SUCCESS Step 28 | Time: 73.77s | Reward: 0.3887 | Throughput: 2408.9 tokens/s | Seq. Length: ...

``Time`` is the orchestrator's ``time/step`` (the cycle between shipped batches); the other fields are kept by
their printed names (no reader maps them). A line may hold several such entries (a console captured as a Python
list of lines, PrimeIntellect-ai/prime-rl PR 1630): each is read, up to the quote that ends its list item."""

from __future__ import annotations

import re

from .base import Ctx, Format

_LINE = re.compile(r"\bStep (\d+) \| Time: ([-+\w.]+?)s \|([^'\"]*)")  # an entry ends at a list item's quote
_FIELD = re.compile(r"\s*([^:|]+?):\s*([-+\w.]+)")


def claims(line: str) -> bool:
    return "| Time:" in line and _LINE.search(line) is not None


def read(ctx: Ctx):
    lines, cols = ctx.lines(), ctx.columns()
    for _, line in lines:
        if "| Time:" not in line:
            continue
        for m in _LINE.finditer(line):
            fields = [(f.group(1).strip(), f.group(2)) for part in m.group(3).split("|") if (f := _FIELD.match(part))]
            cols.add([("step", m.group(1)), ("time/step", m.group(2)), *fields])
    return cols.raw(ctx.shown, FORMAT.name, "step", lines.skipped_note())


FORMAT = Format("prime-rl-console", "prime-rl console 'Step N | Time: ...'", read, line=claims)
