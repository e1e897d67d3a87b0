"""``tcocalc run``'s files and JSON: ``--csv DIR`` (metrics, sweep, phases, cost breakdown, the gap waterfall and
with ``--simulate`` the simulated metrics and timeline), ``--xlsx FILE`` (tcocalc.workbook) and the ``--json``
record (docs/cli.md); ``tcocalc size`` shares the JSON conversion."""

from __future__ import annotations

import json
import math
from pathlib import Path

from ..errors import ScenarioError
from .common import STDIN, UsageError, exit_code, output_dir

#: The ``--json`` output's shape version (docs/cli.md): bumped when a key changes meaning or goes away.
JSON_SCHEMA_VERSION = 2


def write_outputs(runs: list[dict], args) -> None:
    """``--csv``, ``--xlsx`` and ``--gap`` for the scenarios that ran (folder and file names follow every file
    given, so a failing one does not rename the others' outputs)."""
    dirs = _csv_dirs(runs, args.csv) if args.csv else [None] * len(runs)
    books = _xlsx_paths(runs, args.xlsx) if args.xlsx else [None] * len(runs)
    for run, out, book in zip(runs, dirs, books, strict=True):
        if "error" in run:
            continue
        if out is not None:
            _write_csv(run, out)
        if book is not None:
            _write_xlsx(run, book)
            run["xlsx"] = book
        if getattr(args, "gap", False):
            from .. import tinker_gap

            run["gap"] = tinker_gap(run["report"].scenario)
            if out is not None:
                from ..reports import gap_table

                gap_table(run["gap"]).to_csv(out / "tinker_gap.csv", index=False)


def _write_csv(run: dict, out) -> None:
    from .. import cost_lines
    from ..reports import metrics_table, phases_table, sweep_table, timeline_table

    output_dir("--csv", out)
    report, sim = run["report"], run["sim"]
    metrics_table(report).to_csv(out / "metrics.csv", index=False)
    met = report.metrics
    cost_lines(report.scenario, met["trainer_gpus"], met["generator_gpus"], met["sandbox_cpu_cores"],
               report.cluster.prices).to_csv(
        out / "cost_breakdown.csv", index=False)
    phases_table(report.phases).to_csv(out / "phases.csv", index=False)
    if report.sweep is not None:
        sweep_table(report.sweep).to_csv(out / "sweep.csv", index=False)
    if sim is not None:
        metrics_table(sim).to_csv(out / "metrics_simulated.csv", index=False)
        timeline_table(sim.simulation.timeline).to_csv(out / "timeline.csv", index=False)


def _stems(runs: list[dict]) -> list[str]:
    """Each run's file stem (``stdin`` for ``-``), deduplicated in order: ``default``, ``default-2``."""
    seen: dict[str, int] = {}
    stems = []
    for run in runs:
        stem = "stdin" if run["file"] == STDIN else (Path(run["file"]).stem or "scenario")
        seen[stem] = seen.get(stem, 0) + 1
        stems.append(stem if seen[stem] == 1 else f"{stem}-{seen[stem]}")
    return stems


def _csv_dirs(runs: list[dict], root: str) -> list:
    """``--csv DIR``: one scenario writes into DIR, several into DIR/<file stem> each (deduplicated)."""
    if len(runs) == 1:
        return [Path(root)]
    return [Path(root) / stem for stem in _stems(runs)]


def _xlsx_paths(runs: list[dict], target: str) -> list:
    """``--xlsx FILE``: one scenario writes FILE; several write one workbook each, FILE's stem, a hyphen and
    the scenario file's stem (deduplicated), next to FILE: ``out.xlsx`` -> ``out-default.xlsx``."""
    path = Path(target)
    if len(runs) == 1:
        return [path]
    suffix = path.suffix or ".xlsx"
    return [path.with_name(f"{path.stem}-{stem}{suffix}") for stem in _stems(runs)]


def _write_xlsx(run: dict, path) -> None:
    """The run's workbook (tcocalc.workbook): the report's sheets, and with --simulate the simulated metrics
    and the timeline."""
    from .. import METRIC_UNITS, cost_lines
    from ..workbook import report_sheets, write_workbook

    report, sim = run["report"], run["sim"]
    met = report.metrics
    costs = cost_lines(report.scenario, met["trainer_gpus"], met["generator_gpus"], met["sandbox_cpu_cores"],
                       report.cluster.prices)
    sheets = report_sheets(report, METRIC_UNITS, costs, scenario_file=run["file"])
    if sim is not None:
        sheets["simulated metrics"] = sim.to_frame()
        sheets["timeline"] = sim.simulation.timeline
    try:
        write_workbook(path, sheets)
    except ScenarioError as exc:
        raise UsageError("--xlsx", exc.message) from None


def json_value(v):
    """JSON has no NaN or infinity: those become null."""
    if isinstance(v, float) and not math.isfinite(v):
        return None
    if isinstance(v, dict):
        return {k: json_value(x) for k, x in v.items()}
    if isinstance(v, list | tuple):
        return [json_value(x) for x in v]
    return v


def json_record(run: dict) -> dict:
    """One scenario's JSON object (docs/cli.md); the same keys with and without ``--simulate`` ("simulation" is
    null without) and for a file that failed (``error`` set, the results null or empty)."""
    if "error" in run:
        exc = run["error"]
        return {"schema_version": JSON_SCHEMA_VERSION, "scenario": None, "file": run["file"], "analytical": None,
                "simulation": None, "advice": [], "phases": [],
                "error": {"type": type(exc).__name__, "message": str(exc), "exit_code": exit_code(exc)}}
    report, sim = run["report"], run["sim"]
    return json_value({
        "schema_version": JSON_SCHEMA_VERSION, "scenario": run["scenario"].name, "file": run["file"],
        "analytical": report.metrics, "simulation": None if sim is None else sim.metrics,
        "advice": list(report.advice), "phases": json.loads(report.phases.to_json(orient="records")), "error": None,
    })

