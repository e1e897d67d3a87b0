"""``verl-console``: verl's console logger, ``step:N - key:value - key:value ...`` a line, numpy values possibly
printed as ``np.float64(...)`` (verl-project/verl@1dda039b9c63:verl/utils/logger/aggregate_logger.py); older verl
prints ``timing/*`` instead of ``timing_s/*`` keys (its docs/start/quickstart.rst). Any prefix before ``step:``
(Ray's ``(TaskRunner pid=...)``, ANSI colours) and every other line (Ray, Hydra and vLLM start-up) are skipped.
A step line hard-wrapped by an issue tracker or a terminal is joined with the lines that continue it."""

from __future__ import annotations

import re

from .base import Ctx, Format

_STEP = re.compile(r"(?:^|[\s|)\]])step:(\d+) - (.+)$")
# "k:v - k:v" pieces: printable ASCII (verl's keys and numbers) and no other whitespace, so that a line of prose
# without spaces (a heading in another script, "初始参数说明") is not taken for a continuation
_FRAGMENT = re.compile(r"\s*-?\s*[!-~]*(?:\s+-\s+[!-~]*)*\s*-?\s*")
_TIMER_PIECE = re.compile(r"(?:^|[\s-])(timing(?:_s)?/[\w/.@-]+):\s*[-+]?(?:\d|np\.float)")
_SEPARATOR = re.compile(r"\s+-\s*|\s*-\s+")  # a " - " a wrap may have split; never "key:-0.5" (no space)


def claims(line: str) -> bool:
    return "step:" in line and " - " in line and _STEP.search(line) is not None


def _continues(line: str) -> bool:
    """A line that carries on a wrapped step line: pieces of ``key:value - key:value`` and nothing else (a log
    line of its own has other words or a prefix, with spaces that are not " - " separators)."""
    return bool(line.strip()) and _FRAGMENT.fullmatch(line) is not None and _STEP.search(line) is None


def _add(cols, step: str, body: str, joined: bool = False) -> None:
    parts = _SEPARATOR.split(body.strip()) if joined else body.split(" - ")
    pairs = [p.rpartition(":")[::2] for p in parts]
    if joined:
        pairs = [(k.strip(), v) for k, v in pairs]
    pairs.append(("step", step))
    cols.add(pairs)


def read(ctx: Ctx):
    lines, cols = ctx.lines(), ctx.columns()
    pending: list[str] | None = None
    step = ""
    joined = last_at = 0
    for number, line in lines:
        if pending is not None and _continues(line):
            pending.append(line)  # a hard wrap only inserted a line end: join as it is
            joined, last_at = joined + 1, number
            continue
        if pending is not None:
            _add(cols, step, "".join(pending), len(pending) > 1)
            pending = None
        if "step:" in line:
            m = _STEP.search(line)
            if m:
                step, pending, last_at = m.group(1), [m.group(2)], number
    cut = pending is not None and not lines.last_complete and last_at == lines.number
    if pending is not None and not cut:
        _add(cols, step, "".join(pending), len(pending) > 1)
    notes = lines.skipped_note()
    if cut:
        notes.append(f"the last line (step {step}) was cut off (no line end) and was skipped")
    if joined:
        notes.append(f"{joined} hard-wrapped lines were joined to the step line they continue")
    return cols.raw(ctx.shown, FORMAT.name, "step", notes)


def near_miss(line: str) -> str | None:
    """A line with verl's timer pieces (``timing_s/gen:5.46``) that no step line claims: a paste that lost the
    start of its step line (``step:N - ``), which says which step the figures belong to."""
    m = _TIMER_PIECE.search(line)
    if m is None:
        return None
    return (f"verl console pieces ({m.group(1)}: ...) without the start of their step line ('step:N - key:value "
            f"- ...'): the paste lost the line's beginning, which says which step its figures belong to; paste "
            f"the step lines whole, or type the figures with `tcocalc calibrate --measured KEY=VALUE` "
            f"(e.g. step_time_s=310 generation_s=200)")


FORMAT = Format("verl-console", "verl console lines 'step:N - key:value - ...'", read, line=claims,
                near_miss=near_miss)
