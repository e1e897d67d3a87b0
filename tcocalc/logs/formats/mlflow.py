"""``mlflow``: an MLflow run folder as NeMo RL's mlflow logger leaves it (mlflow's file store:
``mlruns/<experiment>/<run>/metrics/<key>``, a key with ``/`` as sub-folders, one ``<timestamp ms> <value>
<step>`` line per point; https://mlflow.org/docs/latest/tracking/backend-stores). The path is the run folder (it
holds ``metrics/``), or an experiment folder or ``mlruns`` holding several runs, one chosen with ``run=`` (the run
folder's name or its ``tags/mlflow.runName``). Metric files no reader maps are counted, not read."""

from __future__ import annotations

import os
from pathlib import Path

from ..source import Lines, check_path, limits, megabytes
from .base import Ctx, Format, one_run


def _runs(path: Path) -> dict[str, Path]:
    """name -> run folder, for the run folders at or below ``path`` (at most two levels down)."""
    if (path / "metrics").is_dir():
        return {path.name: path}
    found = {}
    for metrics in [*path.glob("*/metrics"), *path.glob("*/*/metrics")]:
        run = metrics.parent
        name_file = run / "tags" / "mlflow.runName"
        found[run.name] = run
        if name_file.is_file() and name_file.stat().st_size < 1000:
            found[name_file.read_text(errors="replace").strip() or run.name] = run
    return found


def claims_folder(path: Path) -> bool:
    return bool(_runs(path))


def _metric_files(run: Path) -> list[tuple[str, Path]]:
    root, out = run / "metrics", []
    for folder, _, names in os.walk(root):
        for name in names:
            f = Path(folder) / name
            out.append((f.relative_to(root).as_posix(), f))
            if len(out) > limits().max_files:
                raise ValueError
    return sorted(out)


def _choose(ctx: Ctx) -> Path:
    if (ctx.path / "metrics").is_dir():
        return ctx.path
    runs = _runs(ctx.path)
    folders = set(runs.values())
    if len(folders) == 1:
        return folders.pop()
    by_folder = {p.name: p for p in folders}
    if ctx.run is None:
        one_run(by_folder, None, ctx.shown)  # several runs: a named error listing them
    return runs[one_run(runs, ctx.run, ctx.shown)]


def read(ctx: Ctx):
    run = _choose(ctx)
    try:
        files = _metric_files(run)
    except ValueError:
        raise ctx.error(f"its run holds more than {limits().max_files:,} metric files "
                        "(data/log_limits.toml max_files)") from None
    cols, bad = ctx.columns(), 0
    wanted = [(k, f) for k, f in files if k in ctx.keep]
    for key, _ in files:
        if key not in ctx.keep:
            cols.put(0, key, None)
    total = sum(check_path(f, str(f)).st_size for _, f in wanted)
    if total > limits().max_bytes:
        raise ctx.error(f"its metric files hold {megabytes(total)}, above the {megabytes(limits().max_bytes)} "
                        "limit for a log (data/log_limits.toml max_bytes)")
    for key, f in wanted:
        for _, line in Lines(f, str(f)):
            parts = line.split()
            if len(parts) != 3:
                bad += int(bool(parts))
                continue
            stamp, value, step = parts
            try:
                cols.add((("step", int(step)), (key, value), ("_timestamp", float(stamp) / 1000.0)))
            except ValueError:
                bad += 1
    notes = [f"{bad} metric lines that are not 'timestamp value step' were skipped"] if bad else []
    return cols.raw(ctx.shown, FORMAT.name, "step", notes)


FORMAT = Format("mlflow", "an MLflow run folder (mlruns/<experiment>/<run>/metrics/<key>)", read,
                folder=claims_folder)
