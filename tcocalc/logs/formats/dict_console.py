"""``trl-console``: the dicts the HF Trainer (under TRL) prints once per logging step, ``{'loss': 0.0, ...,
'completion_length': 232.8, 'epoch': 0.31}`` (huggingface/transformers@0101dc058f69:src/transformers/trainer.py,
``Trainer.log``). Keys are read as the W&B names ``train/<key>``; the lines carry no step, so the n-th dict is
logging window n (a warning says so). Read as Python literals, never evaluated. A dict printed right after a tqdm
progress bar on the same line (``... 3.02s/it]{'loss': ...}``, the bar's carriage return lost in a capture) is
read as well. Where the training loop's progress bar (``| 10/29790 [01:29<...``, the bar of iterations with the
largest total) was printed before every dict, and its counts rise from dict to dict, the count is the dict's step
(the Trainer logs after the bar has moved to the step, transformers' ``Trainer._inner_training_loop``); otherwise
dict n is window n. The training bar's rate drawn before a dict (tqdm's smoothed seconds per optimizer step) is kept as
``console/progress_s_per_it``, the step time of a console that logs no timer (data/run_metrics.toml)."""

from __future__ import annotations

import re

from .base import Ctx, Format
from .slime_console import literal

_BAR_END = re.compile(r"(?:s/it|it/s)\]$")  # the end of a tqdm bar: "... 3.02s/it]" or "... 17.17it/s]"
_COUNT = re.compile(r"\|\s*(\d+)/(\d+)\s*\[([^\]|{]*)(\]?)")  # a tqdm bar's count: "| 10/29790 [01:29<..., 3.0s/it]"
_ITERATIONS = re.compile(r"(?:s/it|it/s)$")  # a bar counting iterations (the Trainer's), not examples or batches
_RATE = re.compile(r"([\d.]+)\s*(s/it|it/s)$")  # the bar's rate: "81.39s/it" or "17.17it/s"
#: The column holding the training bar's seconds per iteration printed before each dict (tqdm's smoothed rate).
RATE_KEY = "console/progress_s_per_it"


def _dict_text(line: str) -> str | None:
    """The printed dict of a line: the whole line, or what follows a tqdm bar on it; None otherwise."""
    text = line.strip()
    if text.startswith("{'"):
        return text
    at = text.find("{'")
    return text[at:] if at > 0 and _BAR_END.search(text[:at].rstrip()) else None


def _bars(text: str, total: int, count: int | None, rate: float | None) -> tuple[int, int | None, float | None]:
    """The training bar's (total, latest count, latest seconds per iteration) after the tqdm bars drawn in ``text``:
    of the bars that count iterations (their rate in ``it/s`` or ``s/it``, or cut before it), the one with the
    largest total is the training loop's (shard loading and evaluation bars are shorter; the ``datasets`` library's
    ``Map`` and ``Filter`` bars count examples, ``examples/s``, and can be longer: JuncyLu/trl_DAPO@625c53684a59,
    training_logs/20251022_181457/run_terminal.md, 1,400 examples against 43 steps). A longer bar resets the count
    and the rate; a bar cut before its rate keeps the last rate."""
    if "/" not in text or "[" not in text:
        return total, count, rate
    for m in _COUNT.finditer(text):
        unit = m.group(3).strip()
        if m.group(4) and not _ITERATIONS.search(unit):
            continue  # a closed bar whose rate is not per iteration
        done, of = int(m.group(1)), int(m.group(2))
        if of > total:
            total, count, rate = of, None, None
        if of == total:
            count = done
            if m.group(4) and (r := _RATE.search(unit)) and float(r.group(1)) > 0:
                rate = float(r.group(1)) if r.group(2) == "s/it" else 1.0 / float(r.group(1))
    return total, count, rate


def claims(line: str) -> bool:
    text = _dict_text(line) if "{'" in line else None
    return text is not None and text.endswith("}") and "': " in text


def read(ctx: Ctx):
    lines, cols, bad, n = ctx.lines(), ctx.columns(), 0, 0
    total, count = 0, None  # the training bar's total (the largest seen) and its latest count
    counts: list[int | None] = []  # the training bar's count before each dict
    rate: float | None = None  # the training bar's latest seconds per iteration
    summaries = 0
    for _, physical in lines:
        # a capture of a terminal keeps a bar's carriage returns: each piece is a line the terminal drew over
        for line in physical.split("\r") if "\r" in physical else (physical,):
            total, count, rate = _bars(line.split("{'", 1)[0], total, count, rate)
            text = _dict_text(line) if "{'" in line else None
            if text is None:
                continue
            tail = ""
            if not text.endswith("}") and (end := text.find("}")) > 0 and _COUNT.search(text[end:]):
                text, tail = text[:end + 1], text[end + 1:]  # bars drawn after the dict on its line
            values = literal(text)
            total, count, _ = _bars(tail, total, count, rate)  # the rate a dict gets is the one drawn before it
            if values is None:
                bad += 1
                continue
            if "train_runtime" in values:  # the Trainer's closing summary: whole-run means, not a logging window
                summaries += 1
                continue
            n += 1
            counts.append(count)
            logged = ((f"train/{k}", v) for k, v in values.items() if isinstance(k, str) and not isinstance(v, dict))
            cols.add([("train/global_step", n), *([(RATE_KEY, rate)] if rate is not None else []), *logged])
    if n and None not in counts and all(a < b for a, b in zip(counts, counts[1:], strict=False)):
        cols.renumber("train/global_step", counts)
        notes = lines.skipped_note() + [f"each dict's step is the training progress bar's count printed before it "
                                        f"(steps {counts[0]}..{counts[-1]} of {total})"]
    else:
        notes = lines.skipped_note() + [f"the printed dicts carry no step: dict n is read as logging window n "
                                        f"(1..{n})"]
    if bad:
        notes.append(f"{bad} printed dicts that do not parse (cut off?) were skipped")
    if summaries:
        notes.append("the Trainer's closing summary (train_runtime, whole-run means) is not a logging window: left out")
    return cols.raw(ctx.shown, FORMAT.name, "train/global_step", notes)


FORMAT = Format("trl-console", "TRL console dicts {'loss': ...}", read, line=claims)
