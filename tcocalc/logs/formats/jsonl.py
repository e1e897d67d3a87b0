"""``jsonl``: one JSON object a line. verl's ``file`` backend writes ``{"step": N, "data": {...}}``
(verl-project/verl@1dda039b9c63:verl/utils/tracking.py), prime-rl's FileMonitor flat ``{"step": N, "time": t,
<key>: value, ...}`` rows, several a step (PrimeIntellect-ai/prime-rl@559b44772e47:src/prime_rl/monitors/).
A line that is not a JSON object (a cut-off last line, a stray print) is skipped and counted; nested values other
than verl's ``data`` are not keys. Lines of the HF Trainer's logs that carry their step only as
``"global_step/max_steps": "N/M"`` (ms-swift's GRPO trainer, modelscope/ms-swift issue 9261) are read at step N with
their keys as TRL's W&B names ``train/<key>``."""

from __future__ import annotations

import json

from ..source import limits
from .base import Ctx, Format, json_depth


def _object(line: str):
    text = line.strip()
    if not text.startswith("{"):
        return None
    if len(text) > 200 and text.count("{") + text.count("[") > limits().max_json_depth \
            and json_depth(text) > limits().max_json_depth:
        return None
    try:
        obj = json.loads(text)
    except (json.JSONDecodeError, RecursionError):
        return None
    return obj if isinstance(obj, dict) else None


def claims(first: str, more: bool) -> bool:
    """A first line that is a whole JSON object: followed by more lines, or a flat record on its own (verl's
    ``{"step": N, "data": {...}}`` included), not a one-line JSON document holding lists."""
    obj = _object(first)
    if obj is None:
        return False
    return more or isinstance(obj.get("data"), dict) or not any(isinstance(v, list | dict) for v in obj.values())


_BATCH = 4096


def _decoded(batch: list[str]) -> list:
    """The lines of ``batch`` as JSON values, decoded in one call where they all parse (None for a line that does
    not parse, or nests too deep)."""
    try:
        return json.loads("[" + ",".join(batch) + "]")
    except (json.JSONDecodeError, RecursionError):
        return [_object(text) for text in batch]


def _of_steps(value) -> int | None:
    """N of an HF Trainer progress string "N/M", or None."""
    if not isinstance(value, str):
        return None
    done, _, of = value.partition("/")
    return int(done) if done.strip().isdigit() and of.strip().isdigit() else None


def _add(cols, obj) -> bool:
    if not isinstance(obj, dict):
        return False
    if isinstance(obj.get("data"), dict) and "step" in obj:  # verl's file backend
        obj = {"step": obj["step"], **obj["data"]}
    elif "step" not in obj and (n := _of_steps(obj.get("global_step/max_steps"))) is not None:
        obj = {"train/global_step": n, **{f"train/{k}": v for k, v in obj.items()}}  # the HF Trainer's, TRL's keys
    cols.add(obj)  # nested values are skipped by add
    return True


def read(ctx: Ctx):
    lines, cols, bad, last_bad, batch = ctx.lines(), ctx.columns(), 0, False, []
    cap = limits().max_json_depth
    for _, line in lines:
        text = line.strip()
        if not text:
            continue
        if not text.startswith("{") or (len(text) > 200 and text.count("{") + text.count("[") > cap
                                        and json_depth(text) > cap):
            bad, last_bad = bad + 1, True
            continue
        batch.append(text)
        last_bad = False
        if len(batch) == _BATCH:
            bad += sum(not _add(cols, obj) for obj in _decoded(batch))
            batch = []
    if batch:
        decoded = _decoded(batch)
        bad += sum(not _add(cols, obj) for obj in decoded)
        last_bad = last_bad or not isinstance(decoded[-1], dict)
    notes = lines.skipped_note()
    if bad:
        cut = " (the last one cut off)" if last_bad and not lines.last_complete else ""
        notes.append(f"{bad} lines that are not a JSON object were skipped{cut}")
    step = next((c for c in ("step", "_step", "train/global_step") if cols.has(c)), "step")
    return cols.raw(ctx.shown, FORMAT.name, step, notes)


FORMAT = Format("jsonl", "JSONL, one JSON object a line (verl file backend, prime-rl metrics.jsonl)", read,
                head=claims)
