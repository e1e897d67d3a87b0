"""``verl-console``: verl's console logger, ``step:N - key:value - key:value ...`` a line, numpy values possibly
printed as ``np.float64(...)`` (verl-project/verl@1dda039b9c63:verl/utils/logger/aggregate_logger.py); older verl
prints ``timing/*`` instead of ``timing_s/*`` keys (its docs/start/quickstart.rst). Any prefix before ``step:``
(Ray's ``(TaskRunner pid=...)``, ANSI colours) and every other line (Ray, Hydra and vLLM start-up) are skipped.
A step line hard-wrapped by an issue tracker or a terminal is joined with the lines that continue it, and a step
printed one key a line (``step:N`` alone, then `` - key:value`` lines, as in llm-d-incubation/py-inference-scheduler
@1529b6d4:integration/verl/README.md) is read as its line."""

from __future__ import annotations

import re

from ..source import error
from .base import Ctx, Format

_STEP = re.compile(r"(?:^|[\s|)\]])step:(\d+) - (.+)$")
_BARE = re.compile(r"(?:^|[\s|)\]])step:(\d+)\s*$")  # a step whose keys follow one a line
_TIMER_LINE = re.compile(r"^\s*-\s+timing(?:_s)?/[\w/.@-]+:\s*[-+]?(?:\d|np\.float)")  # " - timing_s/gen:24.5"
# "k:v - k:v" pieces: printable ASCII (verl's keys and numbers) and no other whitespace, so that a line of prose
# without spaces (a heading in another script, "初始参数说明") is not taken for a continuation
_FRAGMENT = re.compile(r"\s*-?\s*[!-~]*(?:\s+-\s+[!-~]*)*\s*-?\s*")
_TIMER_PIECE = re.compile(r"(?:^|[\s-])(timing(?:_s)?/[\w/.@-]+):\s*[-+]?(?:\d|np\.float)")
_SEPARATOR = re.compile(r"\s+-\s*|\s*-\s+")  # a " - " a wrap may have split; never "key:-0.5" (no space)


def claims(line: str) -> bool:
    """A step line, or one of verl's timers printed on a line of its own (the one-key-a-line layout, whose
    ``step:N`` line alone says too little to claim a file)."""
    if "step:" in line and " - " in line and _STEP.search(line) is not None:
        return True
    return "timing" in line and _TIMER_LINE.match(line) is not None


def _continues(line: str) -> bool:
    """A line that carries on a wrapped step line: pieces of ``key:value - key:value`` and nothing else (a log
    line of its own has other words or a prefix, with spaces that are not " - " separators)."""
    return bool(line.strip()) and _FRAGMENT.fullmatch(line) is not None and _STEP.search(line) is None


def _add(cols, step: str, body: str, joined: bool = False) -> None:
    parts = [p for p in _SEPARATOR.split(body.strip()) if p.strip()] if joined else body.split(" - ")
    pairs = [p.rpartition(":")[::2] for p in parts]
    if joined:  # a hard wrap's or a one-key-a-line step's pieces; a bare 'step:N' with no key line holds nothing
        pairs = [(k.strip(), v) for k, v in pairs if k.strip()]
    pairs.append(("step", step))
    cols.add(pairs)


def read(ctx: Ctx):
    lines, cols = ctx.lines(), ctx.columns()
    pending: list[str] | None = None
    step = ""
    joined = last_at = 0
    bare = vertical = 0  # steps printed one key a line, and their key lines
    orphan = None  # the first timer piece outside any step line
    ends = None  # the key the last step line read ends with (verl prints its keys in one order every step)
    capped = 0  # step lines exactly 4,096 characters long: W&B's console capture cuts its lines there
    for number, line in lines:
        if pending is not None and _continues(line):
            pending.append(line)  # a hard wrap only inserted a line end: join as it is
            if pending[0]:
                joined += 1
            else:
                vertical += 1
            last_at = number
            continue
        if pending is not None:
            _add(cols, step, body := "".join(pending), len(pending) > 1)
            ends, pending = _last_key(body), None
        if "step:" in line:
            m = _STEP.search(line)
            if m:
                step, pending, last_at = m.group(1), [m.group(2)], number
                capped += len(line.rstrip("\r\n")) == _WANDB_LINE_CAP
            elif m := _BARE.search(line):
                step, pending, last_at, bare = m.group(1), [""], number, bare + 1
        elif orphan is None and pending is None and "timing" in line:
            orphan = near_miss(line)
    cut = pending is not None and not lines.last_complete and last_at == lines.number
    whole = cut and ends is not None and _last_key("".join(pending)) == ends  # no line end, yet the line is whole
    if pending is not None and (not cut or whole):
        _add(cols, step, "".join(pending), len(pending) > 1)
    if cols.n == 0 and orphan is not None:
        raise error(ctx.shown, f"read as verl-console: no step line, only {orphan}")
    notes = lines.skipped_note()
    if whole:
        notes.append(f"the last line (step {step}) has no line end but ends with {ends}, as every step line does: read")
    elif cut:
        notes.append(f"the last line (step {step}) was cut off (no line end) and was skipped")
    if capped:
        notes.append(f"{capped} step lines are exactly {_WANDB_LINE_CAP:,} characters long, where W&B's console "
                     f"capture (output.log) cuts a line: their keys past the cut are lost (a validation step's "
                     f"timing_s/testing among them); read the run's console or its history instead")
    if joined:
        notes.append(f"{joined} hard-wrapped lines were joined to the step line they continue")
    if bare:
        notes.append(f"{bare} step(s) printed one key a line ('step:N', then ' - key:value' lines: {vertical} key "
                     f"lines) were read as step lines")
    return cols.raw(ctx.shown, FORMAT.name, "step", notes)


# W&B's output.log keeps a console line's first 4,096 characters: a real run folder's validation step lines all stop
# there (jianghoucheng/Agent_On_Policy_Distillation@5ce4586b:wandb/run-20251129_221801-i80f2v90/files/output.log)
_WANDB_LINE_CAP = 4096
_NUMBER = re.compile(r"[-+]?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?$|np\.float\d*\([^()]*\)$")


def _last_key(body: str) -> str | None:
    """The key of a step line's last ``key:value`` piece where its value is a whole number, else None."""
    key, _, value = body.rstrip().rpartition(" - ")[2].rpartition(":")
    return key.strip() or None if _NUMBER.match(value.strip()) else None


def near_miss(line: str) -> str | None:
    """A line with verl's timer pieces (``timing_s/gen:5.46``) that no step line claims: a paste that lost the
    start of its step line (``step:N - ``), which says which step the figures belong to."""
    m = _TIMER_PIECE.search(line)
    if m is None:
        return None
    return (f"verl console pieces ({m.group(1)}: ...) outside any step line ('step:N - key:value - ...' as verl "
            f"prints it), so no line says which step they belong to (a paste that lost the line's start, or keys "
            f"regrouped by hand); paste the step lines as verl printed them, or type the figures with `tcocalc "
            f"calibrate --measured KEY=VALUE` (e.g. step_time_s=310 generation_s=200)")


FORMAT = Format("verl-console", "verl console lines 'step:N - key:value - ...'", read, line=claims,
                near_miss=near_miss)
