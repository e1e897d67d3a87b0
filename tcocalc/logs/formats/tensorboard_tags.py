"""``tensorboard-tag-csv``: a folder of TensorBoard's per-tag CSV downloads (header ``Wall time,Step,Value``), one
file a tag; a single such file reads the same way. See :func:`tag_from_filename` for how the tag is recovered.
Files whose tag no reader maps are counted, not read."""

from __future__ import annotations

import re
from collections.abc import Collection
from pathlib import Path
from urllib.parse import unquote

from ..source import check_path, limits, megabytes
from ..table import number
from .base import Ctx, Format, one_run
from .csvs import CsvRows, header_of

HEADER = ["wall time", "step", "value"]


def _flat(key: str) -> str:
    return re.sub(r"[^A-Za-z0-9._-]", "_", key)


def tag_from_filename(stem: str, known_keys: Collection[str] = ()) -> tuple[str, str | None]:
    """(tag, run) of a per-tag TensorBoard CSV named ``stem`` (without ``.csv``).

    The name is percent-decoded (``timing_s%2Fstep`` -> ``timing_s/step``). A name of the form
    ``run-<run>-tag-<tag>`` gives the run and the tag. A tag in which ``/``, ``:`` and spaces were written as ``_``
    (``timing_s_step``) is matched to the one known key written that way; any other name is the tag as it is.
    """
    name, run = unquote(stem), None
    if "-tag-" in name:
        head, _, name = name.rpartition("-tag-")
        run = head[4:] if head.startswith("run-") else head
    if name in known_keys:
        return name, run
    flat: dict[str, list[str]] = {}
    for key in known_keys:
        flat.setdefault(_flat(key), []).append(key)
    match = flat.get(name, [])
    return (match[0] if len(match) == 1 else name), run


def claims(first: str, _more: bool) -> bool:
    return [c.lower() for c in header_of(first)] == HEADER


def _is_tag_csv(path: Path) -> bool:
    try:
        with open(path, "rb") as f:
            first = f.readline(4096).decode("utf-8-sig", errors="replace")
    except OSError:
        return False
    return claims(first, False)


def claims_folder(path: Path) -> bool:
    return any(path.glob("*.csv"))


def _files(ctx: Ctx) -> list[Path]:
    if not ctx.path.is_dir():
        return [ctx.path]
    files = sorted(ctx.path.glob("*.csv"))
    if len(files) > limits().max_files:
        raise ctx.error(f"holds {len(files):,} CSV files; a log reader reads at most {limits().max_files:,} "
                        "(data/log_limits.toml max_files)")
    total = sum(check_path(f, str(f)).st_size for f in files)
    if total > limits().max_bytes:
        raise ctx.error(f"its CSV files hold {megabytes(total)}, above the {megabytes(limits().max_bytes)} limit "
                        "for a log (data/log_limits.toml max_bytes)")
    return files


def read(ctx: Ctx):
    cols, runs, notes = ctx.columns(), [], []
    for f in _files(ctx):
        tag, run = tag_from_filename(f.stem, ctx.known)
        if run is not None:
            runs.append(run)
        if ctx.run is not None and run is not None and run != ctx.run:
            continue
        rows = CsvRows(Ctx(f, str(f), ctx.keep).lines())
        if tag not in ctx.keep:
            cols.put(0, tag, None)
            if not _is_tag_csv(f):
                raise Ctx(f, str(f), ctx.keep).error("header is not TensorBoard's per-tag download "
                                                     "(Wall time,Step,Value)")
            continue
        for row in rows:
            if [c.lower() for c in rows.header] != HEADER:
                raise Ctx(f, str(f), ctx.keep).error(f"header {rows.header} is not TensorBoard's per-tag download "
                                                     "(Wall time,Step,Value)")
            cols.add((("step", number(row[1])), (tag, row[2]), ("_timestamp", row[0])))
        if rows.header is not None and [c.lower() for c in rows.header] != HEADER:
            raise Ctx(f, str(f), ctx.keep).error(f"header {rows.header} is not TensorBoard's per-tag download "
                                                 "(Wall time,Step,Value)")
        notes += rows.notes()
    one_run(runs, ctx.run, ctx.shown)
    return cols.raw(ctx.shown, FORMAT.name, "step", notes)


FORMAT = Format("tensorboard-tag-csv", "TensorBoard per-tag CSV downloads (Wall time,Step,Value)",
                read, folder=claims_folder, head=claims)
