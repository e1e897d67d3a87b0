"""The log formats, in the order detection walks them, and :func:`read_log`, the one entry point.

Detection, on the content (never the suffix alone), streamed:

1. A folder: the first format whose ``folder`` predicate claims it (event files, an MLflow run, per-tag CSVs).
2. A file: a format claiming its name (``events.out.tfevents.*``); otherwise the first 64 KB are looked at: an
   empty file and binary data (NUL bytes) are refused by name.
3. The first non-blank line: a format whose ``head`` predicate claims it (JSON, JSONL, the CSV formats).
4. Otherwise every line, streamed to the end if need be, is offered to the console formats; the first line one
   claims decides (real console logs print hundreds of lines of Ray, Hydra and vLLM start-up first).

A file no format claims is refused with a message that says what it looked like (a format's ``near_miss`` first:
e.g. verl's timer pieces without their step line's start) and lists the formats read. Adding
a format is one module in ``formats/`` and one line in :data:`REGISTRY`.
"""

from __future__ import annotations

import re
from collections.abc import Collection
from pathlib import Path

from ..errors import MeasurementError
from .formats import (
    areal_console,
    areal_stats,
    dict_console,
    json_document,
    jsonl,
    mlflow,
    nemo_console,
    prime_console,
    slime_console,
    tensorboard_csv,
    tensorboard_events,
    tensorboard_tags,
    verl_console,
    wandb_csv,
    wandb_panel_csv,
)
from .formats.base import Ctx, Format
from .formats.csvs import header_of
from .source import Lines, check_path, error, head_bytes
from .table import META_COLUMNS, RawLog

__all__ = ["REGISTRY", "FORMATS", "read_log", "detect_format", "tag_from_filename"]

REGISTRY: tuple[Format, ...] = (
    tensorboard_events.FORMAT, mlflow.FORMAT, tensorboard_tags.FORMAT,
    jsonl.FORMAT, json_document.FORMAT, wandb_panel_csv.FORMAT, tensorboard_csv.FORMAT, wandb_csv.FORMAT,
    verl_console.FORMAT, nemo_console.FORMAT, slime_console.FORMAT, prime_console.FORMAT, dict_console.FORMAT,
    areal_console.FORMAT, areal_stats.FORMAT,
)
#: every ``format`` a :class:`~tcocalc.logs.table.RawLog` can carry (a JSON document names its shape)
FORMATS: tuple[str, ...] = (*(f.name for f in REGISTRY), "trl-trainer-state", "json-runs")

tag_from_filename = tensorboard_tags.tag_from_filename


def _read_list() -> str:
    return "; ".join(f.what for f in REGISTRY)


def _first_lines(path: Path, shown: str) -> tuple[str | None, bool]:
    """(the first non-blank line, whether another non-blank line follows)."""
    first = None
    for _, line in Lines(path, shown):
        if line.strip():
            if first is not None:
                return first, True
            first = line
    return first, False


def _console(path: Path, shown: str) -> Format | None:
    line_formats = [f for f in REGISTRY if f.line is not None]
    for _, line in Lines(path, shown):
        for f in line_formats:
            if f.line(line):
                return f
    return None


def _near_miss(path: Path, shown: str) -> str | None:
    """What a format's ``near_miss`` finds in the first line it finds anything in (streamed; only on a refusal)."""
    probes = [f.near_miss for f in REGISTRY if f.near_miss is not None]
    for _, line in Lines(path, shown):
        for probe in probes:
            if (said := probe(line)) is not None:
                return said
    return None


# a tqdm bar: "| 841/4096 [1:03:43<4:06:33, 4.54s/it"
_TQDM = re.compile(r"\|\s*\d+/\d+\s*\[[\d:]+<[\d:?]+,\s*[\d.?]+\s*(?:s/it|it/s)")
_RAY_PREFIX = re.compile(r"^\s*\((?:\w+ )?pid=\d+")  # "(TaskRunner pid=285358)", "(pid=123)"


def _column_names(header: list[str]) -> bool:
    """Cells a CSV header would hold: short names, none a printed mapping, bar or sentence fragment."""
    return all(0 < len(c) <= 256 and ": " not in c and "|" not in c and "{" not in c for c in header)


def _looked_like(first: str) -> str:
    header = header_of(first)
    if first.lstrip().startswith(("{", "[")):
        return "text that starts like JSON but is neither a JSON document nor JSONL"
    if _TQDM.search(first):
        return ("a progress bar (tqdm): its postfix (e.g. 'glen=770, tlen=862') is a smoothed display, not a step's "
                "timers; read the run's W&B, TensorBoard or JSONL metrics instead")
    if _RAY_PREFIX.match(first):
        return ("a Ray console log ('(<actor> pid=...)' lines) in which no step's metrics were printed in a shape "
                "tcocalc reads: the run may have stopped before its first step (look for a traceback), or its "
                "metrics went to another logger (verl: trainer.logger=['console', ...])")
    if len(header) >= 2 and "," in first and _column_names(header):
        shown = ", ".join(header[:4]) + (", ..." if len(header) > 4 else "")
        return (f"a CSV whose header ({shown}) has no step column (_step, step, train/global_step, rollout/step) "
                "and is not TensorBoard's (tag, step, value or Wall time, Step, Value)")
    return "text in which no line is in a console format tcocalc reads"


def _folder(path: Path, shown: str) -> Format:
    for f in REGISTRY:
        if f.folder is not None and f.folder(path):
            return f
    raise error(shown, "a folder with no log a reader takes: neither TensorBoard event files "
                       "(events.out.tfevents.*), an MLflow run (metrics/), nor TensorBoard per-tag CSV downloads")


def detect_format(path: str | Path) -> Format:
    """The format of the log at ``path`` (a file or a folder).

    Raises
    ------
    MeasurementError
        ``path``: missing, not a regular file or folder, empty, binary, or in no format, naming what it looked like
        and the formats read.
    """
    p, shown = Path(path), str(path)
    st = check_path(p, shown)
    if p.is_dir():
        return _folder(p, shown)
    named = next((f for f in REGISTRY if f.file_name is not None and f.file_name(p.name)), None)
    if named is not None:
        return named
    head = head_bytes(p, shown)
    if not head.strip():
        raise error(shown, "an empty file" if st.st_size == 0 else "a file of blank lines only")
    if (nul := head.count(b"\x00")) > 0:
        raise error(shown, f"binary data ({nul:,} NUL bytes in the first {len(head):,}), not a text "
                           "log; TensorBoard event files are read by their name, events.out.tfevents.*")
    first, more = _first_lines(p, shown)
    claimed = next((f for f in REGISTRY if f.head is not None and f.head(first, more)), None)
    if claimed is not None:
        return claimed
    console = _console(p, shown)
    if console is not None:
        return console
    raise error(shown, f"not a log format tcocalc reads: it looks like {_near_miss(p, shown) or _looked_like(first)}"
                       f". Formats read: {_read_list()}")


def read_log(path: str | Path, keep: Collection[str] = (), run: str | None = None,
             known_keys: Collection[str] = ()) -> RawLog:
    """Every record of the log at ``path``: values of the keys in ``keep`` (step and time columns are always
    kept), the other key names counted. ``run`` picks one run of a file or folder that holds several.

    Raises
    ------
    MeasurementError
        ``path``: as :func:`detect_format`, or the chosen reader's named error (a line or a file above its cap, a
        JSON document nested too deep, two runs without ``run=``, a trainer-only benchmark).
    """
    fmt = detect_format(path)
    step_columns = {"train/global_step", "rollout/step"}
    ctx = Ctx(Path(path), str(path), frozenset(keep) | META_COLUMNS | step_columns, run,
              frozenset(known_keys) or frozenset(keep))
    try:
        return fmt.read(ctx)
    except MeasurementError:
        raise
    except (RecursionError, MemoryError):
        raise error(str(path), f"read as {fmt.name}: too deeply nested or too large to read within the reader's "
                               "bounds (data/log_limits.toml)") from None
