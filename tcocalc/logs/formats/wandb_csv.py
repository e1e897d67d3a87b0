"""``wandb-csv``: a W&B run-history CSV (``run.history()`` / ``run.scan_history()`` written out, or the run's history
export): one column per key plus ``_step``, ``_runtime``, ``_timestamp``; a key is empty where it was not logged
(https://docs.wandb.ai/models/track/log). A CSV whose header has a step column (``_step``, or a framework's own
x-axis such as ``train/global_step``) is read this way.

Read in two streamed passes: the lines (their length capped, bad bytes counted), then pandas' C parser in blocks of
rows, only the columns some reader maps; a row with too many cells is skipped and counted, a cut-off last row too.
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd

from .base import Ctx, Format
from .csvs import header_of

STEP_COLUMNS = ("_step", "step", "train/global_step", "rollout/step")
_BLOCK = 200_000


def claims(first: str, _more: bool) -> bool:
    header = header_of(first)
    lower = {c.lower() for c in header}
    return len(header) >= 2 and any(s in header for s in STEP_COLUMNS) and not {"tag", "value"} <= lower


def numbers(cells: pd.Series) -> np.ndarray:
    """CSV cells as floats: empty (NaN as parsed) -> NaN, not logged; logged but not a finite number -> inf."""
    if cells.dtype.kind in "fiub":
        values = cells.to_numpy(dtype=float, copy=True)
        values[np.isinf(values)] = math.inf
        return values
    values = pd.to_numeric(cells.astype(object), errors="coerce").to_numpy(dtype=float, copy=True)
    values[~np.isfinite(values) & cells.notna().to_numpy()] = math.inf
    return values


def scan(ctx: Ctx):
    """(the header, the header's line number, data lines that are not blank, the Lines pass) after one streamed
    pass over the file."""
    lines, header, at, rows = ctx.lines(), None, 0, 0
    for number, line in lines:
        if line.strip():
            if header is None:
                header, at = header_of(line), number
            else:
                rows += 1
    return header or [], at, rows, lines


def read_blocks(ctx: Ctx, picked: list[tuple[int, str]], cols, header_line: int, width: int) -> int:
    """Add the picked columns' values, a block of rows at a time; the rows read. The header is skipped, not
    parsed (pandas renames duplicate header names in quadratic time: 30,000 columns took a minute)."""
    options = dict(header=None, names=range(width), skiprows=header_line, usecols=[i for i, _ in picked],
                   keep_default_na=False, na_values=[""], chunksize=_BLOCK, on_bad_lines="skip",
                   encoding="utf-8-sig", encoding_errors="replace", skip_blank_lines=True, engine="c")
    positions = {i: n for n, (i, _) in enumerate(sorted(picked))}
    names = dict(picked)
    read = 0
    for block in _blocks(ctx, options):
        block.columns = [names[i] for i in sorted(positions)]
        cols.n = read + len(block)
        cols.block(read, {name: numbers(block[name]) for name in block.columns})
        read += len(block)
    cols.n = read
    return read


def _blocks(ctx: Ctx, options: dict):
    """pandas' blocks of rows; a file with no data row gives none; pandas' own errors become a named one."""
    try:
        with pd.read_csv(ctx.path, **options) as reader:
            yield from reader
    except pd.errors.EmptyDataError:
        return
    except (pd.errors.ParserError, ValueError) as exc:
        raise ctx.error(f"not a readable CSV ({str(exc).strip()[:200]})") from None


def rows_read(ctx: Ctx, picked, cols, header, header_line: int, lines_in: int, lines) -> list[str]:
    """Read the picked columns' rows (:func:`read_blocks`) and say what was skipped: the format's line notes, rows with
    more cells than the header, a cut-off last row (dropped)."""
    rows = read_blocks(ctx, picked, cols, header_line, len(header)) if picked else 0
    notes = lines.skipped_note()
    if lines_in > rows:
        notes.append(f"{lines_in - rows} CSV rows with more cells than the header were skipped")
    if not lines.last_complete and rows and lines_in == rows:
        cols.drop_last_row()
        notes.append("the last row was cut off (no line end) and was skipped")
    return notes


def read(ctx: Ctx):
    if ctx.run is not None:  # one run's history: a run name would be silently ignored
        raise ctx.error(f"a W&B run-history CSV holds one run, so run={ctx.run!r} picks nothing; leave run= out "
                        "(run= picks a run of a file with several: a W&B chart export, a JSON summary of runs)")
    header, header_line, lines_in, lines = scan(ctx)
    cols = ctx.columns()
    last = {c: i for i, c in enumerate(header) if c in ctx.keep}  # a name twice: its last column
    picked = sorted((i, c) for c, i in last.items())
    for c in header:
        if c not in ctx.keep:
            cols.put(0, c, None)
    notes = rows_read(ctx, picked, cols, header, header_line, lines_in, lines)
    step = next((s for s in STEP_COLUMNS if s in header), "_step")
    return cols.raw(ctx.shown, FORMAT.name, step, notes)


FORMAT = Format("wandb-csv", "a W&B run-history CSV (a _step column, one column a key)", read, head=claims)
