"""Published RL step times the step model is checked against (``tcocalc validate``, the Validation page).

* ``data/rl_cases_nemo.csv``: NVIDIA NeMo RL's 52 published step times (v0.4-v0.6) with their recipes, as
  collected in docs/sources.md §N (the public calibration set of the RL step model);
* ``data/rl_cases_verl.csv``: verl's fully-async study (validation RL-01, and RL-05's staleness_threshold sweep
  with ``max_staleness``; empty: the scenario's own), as splits of the shipped verl scenarios;
* ``data/rl_cases_refit.csv``: published weight-sync and refit timings (NeMo RL, miles, verl), each with its
  transport and layout; ``role`` says whether a row calibrated a constant (``fit``) or only checks it.

Every row is checked on read (:func:`~tcocalc.catalog.provenance.check_entry`): its numbers finite, counts
whole, published times and GPU counts above zero, its source present. A row the model cannot
represent carries ``known_miss`` with the reason; it is shown, never dropped.
"""

from __future__ import annotations

import functools

from .._data import parse_shipped
from ..errors import DataFileError
from .provenance import check_entry, parse_csv

__all__ = ["nemo_rl_cases", "verl_rl_cases", "refit_cases", "parse_nemo_rl_cases", "parse_verl_rl_cases",
           "parse_refit_cases"]

_NEMO_WHOLE = ("max_trajectory_age", "max_seq_tokens", "generated_mean_tokens", "trainer_gpus", "generator_gpus",
               "prompts_per_step", "group_size", "train_global_batch", "generator_tp", "train_tp", "train_cp",
               "train_ep", "train_pp")
_NEMO_FLOAT = ("gpu_memory_utilization", "step_time_s", "tokens_per_s_per_gpu", "response_sigma")
_BOOL = {"true": True, "false": False}


def parse_nemo_rl_cases(text: str, file: str = "data/rl_cases_nemo.csv") -> tuple[dict, ...]:
    """The NeMo RL rows as typed dictionaries (see the module docstring)."""
    out = []
    for _line, row in parse_csv(text, file):
        numbers = check_entry(file, row.get("id", "?"), row, require=("id", "model", "hardware", "mode", "source"),
                              value_fields=_NEMO_FLOAT, optional_values=("prompt_tokens",),
                              whole_fields=_NEMO_WHOLE,
                              optional_wholes=("max_num_seqs", "dynamic_sampling_multiplier"),
                              positive=("step_time_s", "trainer_gpus", "generator_gpus", "generator_tp"))
        rec = {**row, **numbers}
        for k in ("cuda_graphs", "activation_recompute", "sequence_packing"):
            if row[k] not in _BOOL:
                raise DataFileError(file, row["id"], k, f"expected true or false, got {row[k]!r}")
            rec[k] = _BOOL[row[k]]
        nvlink = row.get("multinode_nvlink") or "true"  # empty: the accelerator's whole NVLink domain
        if nvlink not in _BOOL:
            raise DataFileError(file, row["id"], "multinode_nvlink", f"expected true, false or empty, got {nvlink!r}")
        rec["multinode_nvlink"] = _BOOL[nvlink]
        if rec["mode"] not in ("colocated", "async"):
            raise DataFileError(file, row["id"], "mode", f"expected colocated or async, got {row['mode']!r}")
        if rec["prompt_tokens"] is None and not rec["known_miss"]:
            raise DataFileError(file, row["id"], "prompt_tokens", "missing (only a known miss may leave it empty)")
        out.append(rec)
    return tuple(out)


def parse_verl_rl_cases(text: str, file: str = "data/rl_cases_verl.csv") -> tuple[dict, ...]:
    """The verl rows as typed dictionaries."""
    out = []
    for _line, row in parse_csv(text, file):
        numbers = check_entry(file, row.get("id", "?"), row, require=("id", "scenario", "mode", "source"),
                              value_fields=("step_time_s",), optional_values=("max_staleness",),
                              whole_fields=("trainer_gpus", "generator_gpus"),
                              positive=("step_time_s", "trainer_gpus", "generator_gpus"))
        out.append({**row, **numbers})
    return tuple(out)


def parse_refit_cases(text: str, file: str = "data/rl_cases_refit.csv") -> tuple[dict, ...]:
    """The refit rows as typed dictionaries."""
    out = []
    for _line, row in parse_csv(text, file):
        numbers = check_entry(file, row.get("id", "?"), row,
                              require=("id", "model", "hardware", "transport", "role", "source"),
                              value_fields=("published_s", "low_s", "high_s"),
                              whole_fields=("trainer_gpus", "generator_gpus", "instance_gpus"),
                              positive=("published_s", "trainer_gpus", "generator_gpus", "instance_gpus"))
        rec = {**row, **numbers}
        if rec["transport"] not in ("nccl-broadcast", "p2p", "colocated"):
            raise DataFileError(file, row["id"], "transport", f"unknown transport {row['transport']!r}")
        if rec["role"] not in ("fit", "check"):
            raise DataFileError(file, row["id"], "role", f"expected fit or check, got {row['role']!r}")
        out.append(rec)
    return tuple(out)


@functools.cache
def refit_cases() -> tuple[dict, ...]:
    """The shipped refit rows (read once)."""
    return parse_shipped("rl_cases_refit.csv", parse_refit_cases)


@functools.cache
def nemo_rl_cases() -> tuple[dict, ...]:
    """The shipped NeMo RL rows (read once)."""
    return parse_shipped("rl_cases_nemo.csv", parse_nemo_rl_cases)


@functools.cache
def verl_rl_cases() -> tuple[dict, ...]:
    """The shipped verl rows (read once)."""
    return parse_shipped("rl_cases_verl.csv", parse_verl_rl_cases)
