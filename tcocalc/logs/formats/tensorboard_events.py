"""``tensorboard-events``: TensorBoard event files (``events.out.tfevents.*``) as written by verl's, NeMo RL's and
slime's tensorboard loggers (``add_scalar(tag, value, step)``), read directly through the ``tensorboard``
package's own reader (tensorflow/tensorboard: tensorboard/backend/event_processing/event_file_loader.py), record by
record: a file, or a folder holding them (its sub-folders too, one run). Scalars logged as ``simple_value`` or as a
scalar tensor are read; other summaries are not. The package is an optional extra:
``pip install 'tcocalc[tensorboard]'``."""

from __future__ import annotations

from pathlib import Path

from ..source import check_path, limits, megabytes
from .base import Ctx, Format

PATTERN = "events.out.tfevents.*"


def claims_name(name: str) -> bool:
    return name.startswith("events.out.tfevents.")


def _files(path: Path) -> list[Path]:
    if not path.is_dir():
        return [path]
    found = []
    for f in path.rglob(PATTERN):
        found.append(f)
        if len(found) > limits().max_files:
            break
    return sorted(found)


def claims_folder(path: Path) -> bool:
    return next(iter(path.rglob(PATTERN)), None) is not None


def _loader():
    try:
        from tensorboard.backend.event_processing.event_file_loader import LegacyEventFileLoader
        from tensorboard.util import tensor_util
    except ImportError:
        return None
    return LegacyEventFileLoader, tensor_util


def _value(v, tensor_util):
    kind = v.WhichOneof("value")
    if kind == "simple_value":
        return v.simple_value
    if kind == "tensor":
        try:
            array = tensor_util.make_ndarray(v.tensor)
        except Exception:  # noqa: BLE001 (a malformed tensor proto is one skipped point)
            return None
        return float(array) if array.size == 1 and array.dtype.kind in "fiu" else None
    return None


def _events(path: Path, loader, tensor_util, cols, keep) -> tuple[int, bool]:
    """Add the scalars of one event file; (points read, whether the file ended cleanly)."""
    points = 0
    try:
        for event in loader(str(path)).Load():
            for v in event.summary.value:
                if v.tag not in keep:
                    cols.put(0, v.tag, None)
                    continue
                value = _value(v, tensor_util)
                if value is not None:
                    cols.add((("step", event.step), (v.tag, value), ("_timestamp", event.wall_time)))
                    points += 1
    except Exception:  # noqa: BLE001 (a cut-off or corrupt record ends the file; what was read stays)
        return points, False
    return points, True


def read(ctx: Ctx):
    tools = _loader()
    if tools is None:
        raise ctx.error("TensorBoard event files need the tensorboard package: pip install 'tcocalc[tensorboard]' "
                        "(or export the scalars as CSV: tag, step, value)")
    files = _files(ctx.path)
    if len(files) > limits().max_files:
        raise ctx.error(f"holds more than {limits().max_files:,} event files (data/log_limits.toml max_files)")
    total = sum(check_path(f, str(f)).st_size for f in files)
    if total > limits().max_bytes:
        raise ctx.error(f"its event files hold {megabytes(total)}, above the {megabytes(limits().max_bytes)} limit "
                        "for a log (data/log_limits.toml max_bytes)")
    cols, broken = ctx.columns(), []
    for f in files:
        _, clean = _events(f, *tools, cols, ctx.keep)
        if not clean:
            broken.append(f.name)
    notes = [f"{len(broken)} event files end in a cut-off or corrupt record; the events before it were read "
             f"({', '.join(broken[:3])})"] if broken else []
    return cols.raw(ctx.shown, FORMAT.name, "step", notes)


FORMAT = Format("tensorboard-events", "TensorBoard event files (events.out.tfevents.*)", read,
                folder=claims_folder, file_name=claims_name)
