"""Other frameworks' published RL runs: the development set of the RL step model (issue 36; docs/validation.md).

* ``data/validation/frameworks/*.toml``: each published run as a scenario file, its comment header citing the
  original source (repository@commit:path or URL), the published configuration and every assumed input;
* ``data/validation/framework_cases.csv``: the published figures compared with them: a step time (``step``), a
  weight-sync time (``weight_sync``) or a speed-up of one run over another (``speedup``: useful samples/s of
  ``scenario`` over ``baseline``, with its pass band ``low``-``high``), each with its source and date;
* ``data/validation/stage_cases.csv``: published per-stage times of some of those runs (generation, training,
  log-prob passes), compared stage by stage;
* ``data/validation/fitted_constants.csv``: which RL constants of data/rl_calibration.toml were fitted on which
  framework's rows (data/rl_cases_refit.csv), so that a leave-one-framework-out check knows what to refit.

A scenario file that no longer loads raises :class:`~tcocalc.errors.DataFileError` naming the file and the case.
"""

from __future__ import annotations

import functools

from .._data import data_dir, display_path, parse_shipped, scenarios_dir
from ..errors import DataFileError, TcocalcError
from ..scenario import Scenario, loads_scenario
from .provenance import check_entry, parse_csv

__all__ = ["framework_cases", "stage_cases", "fitted_constants", "disk_reloads", "case_scenario",
           "parse_disk_reloads", "parse_framework_cases",
           "parse_stage_cases", "parse_fitted_constants", "CASE_KINDS", "STAGE_KEYS"]

CASE_KINDS = ("step", "weight_sync", "speedup")
STAGE_KEYS = ("generation_s", "training_s", "logprob_s", "switching_s")
_BOOL = {"true": True, "false": False}


def parse_framework_cases(text: str, file: str = "data/validation/framework_cases.csv") -> tuple[dict, ...]:
    """The development set's published figures as typed dictionaries (module docstring)."""
    out = []
    for _line, row in parse_csv(text, file):
        rid = row.get("id", "?")
        nums = check_entry(file, rid, row, require=("id", "set", "framework", "kind", "scenario", "source"),
                           value_fields=("published",), optional_values=("low", "high"), date_fields=("date",),
                           positive=("published",))
        if row["kind"] not in CASE_KINDS:
            raise DataFileError(file, rid, "kind", f"one of {CASE_KINDS}, got {row['kind']!r}")
        if row["kind"] == "speedup" and (not row.get("baseline") or nums["low"] is None or nums["high"] is None
                                         or not nums["low"] <= nums["published"] <= nums["high"]):
            raise DataFileError(file, rid, "baseline", "a speed-up needs a baseline scenario and a band low <= "
                                                       "published <= high")
        if row.get("solve") not in ("", None, "useful_samples_per_s", "usd_per_useful_sample"):
            raise DataFileError(file, rid, "solve", f"empty or an objective of tc.solve_split, got {row['solve']!r}")
        out.append({**row, **nums, "baseline": row.get("baseline") or None, "solve": row.get("solve") or None})
    return tuple(out)


def parse_stage_cases(text: str, file: str = "data/validation/stage_cases.csv") -> tuple[dict, ...]:
    """Published per-stage times [s per step]: the step and any of :data:`STAGE_KEYS` (empty: not published);
    ``generation_exposed``: the generation figure is the trainer's wait for rollouts, not the generation;
    ``scenario``: a development-set file, or ``shipped/<name>`` for a shipped scenario, at the split
    ``trainer_gpus``:``generator_gpus`` where given; ``in_sample``: the run belongs to a study the model was
    developed on (shown, not counted); ``generation_rank_mean``: the generation is the mean of the engines' own
    times and the switch is the rest of a wall time that ends with the slowest engine (verl's
    ``generate_sequences`` and ``gen``, docs/rl-modeling.md §3.10)."""
    out = []
    for _line, row in parse_csv(text, file):
        rid = row.get("id", "?")
        nums = check_entry(file, rid, row, require=("id", "framework", "scenario", "source"),
                           value_fields=("step_time_s",), optional_values=STAGE_KEYS, date_fields=("date",),
                           optional_wholes=("trainer_gpus", "generator_gpus"), positive=("step_time_s",))
        for flag in ("generation_exposed", "in_sample", "generation_rank_mean"):
            if row.get(flag) not in _BOOL:
                raise DataFileError(file, rid, flag, "true or false")
        if (nums["trainer_gpus"] is None) != (nums["generator_gpus"] is None):
            raise DataFileError(file, rid, "generator_gpus", "give both trainer_gpus and generator_gpus, or neither")
        if _BOOL[row["generation_rank_mean"]] and (nums["switching_s"] is None or nums["generation_s"] is None
                                                   or _BOOL[row["generation_exposed"]]):
            raise DataFileError(file, rid, "generation_rank_mean", "true only with a generation_s that is the "
                                                                   "engines' own (generation_exposed false) and a "
                                                                   "switching_s (the rest of the wall time)")
        out.append({**row, **nums, "generation_exposed": _BOOL[row["generation_exposed"]],
                    "in_sample": _BOOL[row["in_sample"]], "generation_rank_mean": _BOOL[row["generation_rank_mean"]]})
    return tuple(out)


def parse_disk_reloads(text: str, file: str = "data/validation/disk_reloads.csv") -> tuple[dict, ...]:
    """Published engine reloads of weights from storage: bytes each engine GPU loads [B] and the published reload
    [s], each with the framework and the source (the rows ``weight_sync_disk_fixed_s`` and
    ``engine_disk_load_bytes_per_s`` are fitted on, data/rl_calibration.toml)."""
    out = []
    for _line, row in parse_csv(text, file):
        nums = check_entry(file, row.get("id", "?"), row, require=("id", "framework", "source"),
                           value_fields=("bytes_per_gpu", "published_s"), positive=("bytes_per_gpu", "published_s"))
        out.append({**row, **nums})
    return tuple(out)


def parse_fitted_constants(text: str, file: str = "data/validation/fitted_constants.csv") -> tuple[dict, ...]:
    """Each fitted RL constant with the frameworks and the rows it was fitted on (``;``-separated: ids of
    data/rl_cases_refit.csv where the rows are there) and the weight-sync transport whose time it sets."""
    out = []
    for _line, row in parse_csv(text, file):
        check_entry(file, row.get("constant", "?"), row, require=("constant", "frameworks", "rows", "transport",
                                                                   "source"))
        out.append({**row, "rows": tuple(r.strip() for r in row["rows"].split(";") if r.strip()),
                    "frameworks": tuple(r.strip() for r in row["frameworks"].split(";") if r.strip())})
    return tuple(out)


@functools.cache
def framework_cases() -> tuple[dict, ...]:
    """data/validation/framework_cases.csv (read once)."""
    return parse_shipped("validation/framework_cases.csv", parse_framework_cases)


@functools.cache
def stage_cases() -> tuple[dict, ...]:
    """data/validation/stage_cases.csv (read once)."""
    return parse_shipped("validation/stage_cases.csv", parse_stage_cases)


@functools.cache
def disk_reloads() -> tuple[dict, ...]:
    """data/validation/disk_reloads.csv (read once)."""
    return parse_shipped("validation/disk_reloads.csv", parse_disk_reloads)


@functools.cache
def fitted_constants() -> tuple[dict, ...]:
    """data/validation/fitted_constants.csv (read once)."""
    return parse_shipped("validation/fitted_constants.csv", parse_fitted_constants)


@functools.cache
def case_scenario(name: str, case: str = "?") -> Scenario:
    """The development-set scenario ``data/validation/frameworks/<name>.toml`` (``shipped/<name>``: the shipped
    ``scenarios/<name>.toml``); DataFileError naming the file and the case when it is missing or no longer loads
    (a validation source must never drop out silently)."""
    shipped = name.startswith("shipped/")
    f = (scenarios_dir() / f"{name.removeprefix('shipped/')}.toml" if shipped
         else data_dir() / "validation" / "frameworks" / f"{name}.toml")
    try:
        return loads_scenario(f.read_text())
    except (OSError, TcocalcError) as exc:
        raise DataFileError(display_path(f), case, "scenario", f"the validation source no longer loads: "
                                                               f"{type(exc).__name__}: {exc}") from None
