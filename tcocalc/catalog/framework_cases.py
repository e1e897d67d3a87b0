"""Other frameworks' published RL runs: the development set of the RL step model (issue 36; docs/validation.md).

* ``data/validation/frameworks/*.toml``: each published run as a scenario file, its comment header citing the
  original source (repository@commit:path or URL), the published configuration and every assumed input;
* ``data/validation/framework_cases.csv``: the published figures compared with them: a step time (``step``), a
  weight-sync time (``weight_sync``) or a speed-up of one run over another (``speedup``: useful samples/s of
  ``scenario`` over ``baseline``, with its pass band ``low``-``high``), each with its source and date, and where
  someone outside the run's authors published a run of the same configuration that disagrees with the figure,
  that report with its source (``independent``; shown beside the row, the row still counted);
* ``data/validation/stage_cases.csv``: published per-stage times of some of those runs (generation, training,
  log-prob passes), compared stage by stage;
* ``data/validation/pass_pairs.csv``: two runs of one recipe whose published stage tables give a forward-only pass
  (old-policy or reference log-probs) and the update on both sides, with each run's trainer GPUs and samples per
  step: what the two passes' cost per GPU and sample says about how the runs differ (docs/validation.md, "Pass
  pairs");
* ``data/validation/fitted_constants.csv``: which RL constants of data/rl_calibration.toml were fitted on which
  framework's rows (data/rl_cases_refit.csv), so that a leave-one-framework-out check knows what to refit.

A scenario file that no longer loads raises :class:`~tcocalc.errors.DataFileError` naming the file and the case.
"""

from __future__ import annotations

import functools

from .._data import data_dir, display_path, parse_shipped, scenarios_dir
from ..errors import DataFileError, ScenarioError, TcocalcError
from ..scenario import Scenario, loads_scenario
from .provenance import check_entry, parse_csv

__all__ = ["framework_cases", "stage_cases", "stage_case", "fitted_constants", "disk_reloads", "case_scenario",
           "pass_pairs", "parse_disk_reloads", "parse_framework_cases", "parse_pass_pairs",
           "parse_stage_cases", "parse_fitted_constants", "CASE_KINDS", "STAGE_KEYS", "LENGTHS"]

CASE_KINDS = ("step", "weight_sync", "speedup")
STAGE_KEYS = ("generation_s", "training_s", "logprob_s", "switching_s")
LENGTHS = ("published", "assumed")
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
        out.append({**row, **nums, "baseline": row.get("baseline") or None, "solve": row.get("solve") or None,
                    "independent": (row.get("independent") or "").strip() or None})
    return tuple(out)


def parse_stage_cases(text: str, file: str = "data/validation/stage_cases.csv") -> tuple[dict, ...]:
    """Published per-stage times [s per step]: the step and any of :data:`STAGE_KEYS` (empty: not published);
    ``generation_exposed``: the generation figure is the trainer's wait for rollouts, not the generation;
    ``scenario``: a development-set file, or ``shipped/<name>`` for a shipped scenario, at the split
    ``trainer_gpus``:``generator_gpus`` where given; ``in_sample``: the run belongs to a study the model was
    developed on (shown, not counted); ``generation_rank_mean``: the generation is the mean of the engines' own
    times and the switch is the rest of a wall time that ends with the slowest engine (verl's
    ``generate_sequences`` and ``gen``, docs/rl-modeling.md §3.10); ``lengths``: whether the scenario's response
    lengths are the run's own (``published``: its log or its source states them) or ``assumed``."""
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
        if row.get("lengths") not in LENGTHS:
            raise DataFileError(file, rid, "lengths", f"one of {', '.join(LENGTHS)}: whether the scenario's response "
                                                      f"lengths are the run's own or assumed")
        if _BOOL[row["generation_rank_mean"]] and (nums["switching_s"] is None or nums["generation_s"] is None
                                                   or _BOOL[row["generation_exposed"]]):
            raise DataFileError(file, rid, "generation_rank_mean", "true only with a generation_s that is the "
                                                                   "engines' own (generation_exposed false) and a "
                                                                   "switching_s (the rest of the wall time)")
        out.append({**row, **nums, "generation_exposed": _BOOL[row["generation_exposed"]],
                    "in_sample": _BOOL[row["in_sample"]], "generation_rank_mean": _BOOL[row["generation_rank_mean"]]})
    return tuple(out)


_PASS_TIMES = ("first_forward_s", "second_forward_s", "first_update_s", "second_update_s")


def parse_pass_pairs(text: str, file: str = "data/validation/pass_pairs.csv") -> tuple[dict, ...]:
    """Pairs of published runs of one recipe (module docstring): the stage cases of data/validation/stage_cases.csv
    they are (``first_case``, ``second_case``), each run's trainer GPUs and samples per step, the forward-only pass
    both publish (``forward_pass``, e.g. ``old_log_prob`` or ``ref``) and its time and the update's on each side
    [s per step], as the source writes them. DataFileError naming the row for a missing or non-positive figure or a
    pair of one case with itself."""
    out = []
    for _line, row in parse_csv(text, file):
        rid = row.get("id", "?")
        nums = check_entry(file, rid, row, require=("id", "recipe", "first_case", "second_case", "forward_pass",
                                                    "source"),
                           value_fields=_PASS_TIMES, positive=_PASS_TIMES, date_fields=("date",),
                           whole_fields=("first_gpus", "second_gpus", "first_samples", "second_samples"))
        for key in ("first_gpus", "second_gpus", "first_samples", "second_samples"):
            if nums[key] < 1:
                raise DataFileError(file, rid, key, f"must be at least 1, got {nums[key]}")
        if row["first_case"] == row["second_case"]:
            raise DataFileError(file, rid, "second_case", "a pair needs two different runs")
        out.append({**row, **nums})
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


def stage_case(case_id: str) -> dict:
    """The row of data/validation/stage_cases.csv with this ``id`` (ScenarioError naming the known ids if none)."""
    for case in stage_cases():
        if case["id"] == case_id:
            return case
    raise ScenarioError("id", f"no stage case {case_id!r}; stage cases: "
                              f"{', '.join(c['id'] for c in stage_cases())}")


@functools.cache
def pass_pairs() -> tuple[dict, ...]:
    """data/validation/pass_pairs.csv (read once)."""
    return parse_shipped("validation/pass_pairs.csv", parse_pass_pairs)


@functools.cache
def disk_reloads() -> tuple[dict, ...]:
    """data/validation/disk_reloads.csv (read once)."""
    return parse_shipped("validation/disk_reloads.csv", parse_disk_reloads)


def _duration_s(text: str) -> float:
    """``"1d 3h 43m"`` (days, hours, minutes as published tables write them) in seconds; ValueError otherwise."""
    units = {"d": 86400.0, "h": 3600.0, "m": 60.0}
    parts = text.split()
    if not parts or any(len(p) < 2 or p[-1] not in units or not p[:-1].isdigit() for p in parts):
        raise ValueError(f"{text!r} is not a duration like '1d 3h 43m'")
    return sum(int(p[:-1]) * units[p[-1]] for p in parts)


def parse_study_windows(text: str, file: str = "data/validation/verl_study_windows.csv") -> tuple[dict, ...]:
    """Published cumulative wall times of whole runs (``total`` at ``steps``, ``;``-separated, as the tables write
    them, e.g. ``13h 44m;1d 3h 43m``) and each window's mean step [s]: ``windows`` is a tuple of ``(first step,
    last step, mean step [s])``, the time between two published totals over the steps between them. DataFileError
    naming the row where the counts differ, a total does not parse or the totals do not grow with the steps."""
    out = []
    for _line, row in parse_csv(text, file):
        run = row.get("run", "?")
        check_entry(file, run, row, require=("run", "case", "steps", "total", "source"))
        try:
            steps = [int(x) for x in row["steps"].split(";")]
            totals = [_duration_s(x.strip()) for x in row["total"].split(";")]
        except ValueError as exc:
            raise DataFileError(file, run, "steps/total", str(exc)) from None
        if len(steps) != len(totals):
            raise DataFileError(file, run, "total", f"{len(totals)} totals for {len(steps)} step counts")
        marks = list(zip([0, *steps], [0.0, *totals], strict=True))
        if any(b[0] <= a[0] or b[1] <= a[1] for a, b in zip(marks, marks[1:], strict=False)):
            raise DataFileError(file, run, "total", "the steps and their totals must both increase")
        windows = tuple((a[0] + 1, b[0], (b[1] - a[1]) / (b[0] - a[0])) for a, b in zip(marks, marks[1:], strict=False))
        out.append({**row, "steps": tuple(steps), "windows": windows})
    return tuple(out)


@functools.cache
def study_windows() -> tuple[dict, ...]:
    """data/validation/verl_study_windows.csv (read once)."""
    return parse_shipped("validation/verl_study_windows.csv", parse_study_windows)


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
