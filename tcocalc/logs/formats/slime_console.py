"""``slime-console``: slime's console ``perf <rollout_id>: {<python dict>}`` lines, printed once by the rollout
manager and once by the actor (THUDM/slime@624b824a898a:slime/observability/logging_utils.py, slime/ray/rollout.py).
The dict is read as a Python literal (never evaluated), its depth capped; ``rollout_id`` is ``rollout/step``; the
actor's ``rollout <rollout_id>: {...}`` dict (its per-sample lengths: the prompt's, by difference) is read too. A dict
pretty-printed over several lines (``perf 0: {`` alone, one ``'key': value,`` a line, then ``}``) is gathered up to
its closing brace (at most 64 KB); so is a dict whose line a paste hard-wrapped at a fixed width, its pieces joined
as they are (the cut may fall inside a key or a number)."""

from __future__ import annotations

import ast
import re

from ..source import limits
from .base import Ctx, Format, json_depth

# the rollout manager's and the actor's perf dicts, and the actor's rollout dict (its per-sample means of the batch's
# lengths: THUDM/slime actor.py, logger.info(f"rollout {rollout_id}: {log_dict}")), all keyed by the rollout id
_PERF = re.compile(r"\b(?:perf|rollout) (\d+): (\{.*\})\s*$")
_OPEN = re.compile(r"\b(?:perf|rollout) (\d+): \{\s*$")  # a dict printed over the lines that follow
# a dict whose line ends before its closing brace: a paste hard-wrapped at a fixed width (an issue tracker, a terminal),
# cut anywhere, even inside a key or a number ('perf/wake_up_ti' / "me': 1.94..."), so its pieces join without a space
_WRAPPED = re.compile(r"\b(?:perf|rollout) (\d+): (\{[^{}]*[^{}\s])\s*$")


def claims(line: str) -> bool:
    """A perf dict's line (a rollout dict alone holds no timer, so it does not claim a file)."""
    if "perf " not in line or ": {" not in line:
        return False
    m = _PERF.search(line) or _OPEN.search(line) or _WRAPPED.search(line)
    return m is not None and m.group(0).startswith("perf")


_QUOTED = r"'(?:[^'\\]|\\.)*'|\"(?:[^\"\\]|\\.)*\""
# key: value, the value a quoted string, a wrapped number such as np.float64(1.5), or anything up to , or }
_ITEM = re.compile(rf"({_QUOTED})\s*:\s*({_QUOTED}|[\w.]+\([^()]*\)|[^,}}]+)")
_LITERAL_BYTES = 65_536


def literal(text: str):
    """A printed Python dict as a dict, or None (not a dict, too deep, too large, or cut off). A flat dict is read
    with one regular expression (linear in its length, no syntax tree: a 4 MB line costs a few MB, where
    ``ast.literal_eval`` would take hundreds); a dict with nested values is read as a Python literal (never
    evaluated) up to 64 KB."""
    body = text.strip()
    if not (body.startswith("{") and body.endswith("}")):
        return None
    inner = body[1:-1]
    if "{" not in inner and "[" not in inner:
        return {k[1:-1]: v.strip() for k, v in _ITEM.findall(inner)}
    if len(body) > _LITERAL_BYTES or json_depth(body) > limits().max_json_depth:
        return None
    try:
        value = ast.literal_eval(body)
    except (ValueError, SyntaxError, MemoryError, RecursionError, TypeError):
        return None
    return value if isinstance(value, dict) else None


def _add(cols, step: str, text: str) -> bool:
    values = literal(text)
    if values is None:
        return False
    cols.add([("rollout/step", step),
              *((k, v) for k, v in values.items() if isinstance(k, str) and not isinstance(v, dict | list))])
    return True


def read(ctx: Ctx):
    lines, cols, bad, spread, joined = ctx.lines(), ctx.columns(), 0, 0, 0
    # (step, the dict's pieces so far, their bytes, wrapped: pieces of one hard-wrapped line, joined as they are)
    gathering: tuple[str, list[str], int, bool] | None = None
    for _, line in lines:
        if gathering is not None and gathering[3] and ": {" in line and (
                _PERF.search(line) or _OPEN.search(line) or _WRAPPED.search(line)):
            bad, gathering = bad + 1, None  # a new dict before the wrapped one closed: that one was cut off
        if gathering is not None:
            step, parts, size, wrapped = gathering
            piece = line.rstrip("\r\n") if wrapped else line.strip()
            parts.append(piece)
            size += len(line)
            if (piece.rstrip().endswith("}") if wrapped else piece.startswith("}")):
                ok = _add(cols, step, "".join(parts) if wrapped else "{" + " ".join(parts))
                bad, gathering = bad + (not ok), None
                spread, joined = spread + (ok and not wrapped), joined + (ok and wrapped)
            elif size > _LITERAL_BYTES:  # no closing brace within the bound: not a dict to read
                bad, gathering = bad + 1, None
            else:
                gathering = (step, parts, size, wrapped)
            continue
        if ": {" in line and (m := _PERF.search(line)):
            bad += not _add(cols, m.group(1), m.group(2))
        elif ": {" in line and (m := _OPEN.search(line)):
            gathering = (m.group(1), [], 0, False)
        elif ": {" in line and (m := _WRAPPED.search(line)):
            gathering = (m.group(1), [m.group(2)], len(m.group(2)), True)
    bad += gathering is not None  # a dict still open at the end of the file
    notes = lines.skipped_note() + ([f"{bad} perf dicts that do not parse (cut off?) were skipped"] if bad else [])
    if spread:
        notes.append(f"{spread} perf dicts printed over several lines were gathered up to their closing brace")
    if joined:
        notes.append(f"{joined} perf dicts hard-wrapped over several lines (a paste cut at a fixed width) were "
                     f"joined again up to their closing brace")
    return cols.raw(ctx.shown, FORMAT.name, "rollout/step", notes)


FORMAT = Format("slime-console", "slime console 'perf N: {...}' dicts", read, line=claims)
