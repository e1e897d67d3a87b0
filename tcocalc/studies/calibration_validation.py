"""Leave-one-out check of :func:`~tcocalc.calibrate` on NeMo RL's published step times (docs/calibration.md §5).

Each published row in turn is the "pilot": the model is calibrated on its step time (the one time a performance
table gives) and, where the table gives it (NeMo RL's), its mean generated length, which its scenario already
assumes (so the lengths are measured, not a factor to fit; verl's study gives none, so there the fit also corrects
the assumed lengths, the responses factor), then predicts every sibling row,
the same model on the same hardware, precision and NeMo RL version in the other mode or at another GPU count (and,
for verl's rows, the same scenario file at another GPU count or staleness bound). Three predictions of each sibling
are compared with its published step time: the uncalibrated model, the calibrated one, and the baseline a
calibration has to beat, the uncalibrated prediction rescaled by the pilot's measured-over-modelled step ratio (a
calibration that only rescales the whole step). Rows marked as known misses (data/rl_cases_nemo.csv ``known_miss``)
are neither pilots nor targets: the model cannot represent them.
"""

from __future__ import annotations

import math
from collections import defaultdict

import numpy as np

from ..catalog.rl_cases import nemo_rl_cases, verl_rl_cases
from ..errors import TcocalcError
from ..rl.solve import evaluate
from .calibrate import calibrate
from .rl_validation import RL_TOLERANCE, nemo_case_scenario, verl_case_scenario

__all__ = ["calibration_pairs_table", "calibration_validation_summary", "CALIBRATED_TARGET"]

CALIBRATED_TARGET = {"median_abs_error": 0.08, "within_25pct": 0.90}
"""Issue 28's target for calibrated sibling predictions: median |error| at most 8%, at least 90% within ±25%."""


def _cases() -> tuple[list[dict], dict]:
    """The rows that can be pilots and targets, each with its framework, stack key and scenario."""
    out, scenarios = [], {}
    for c in nemo_rl_cases():
        if not c["known_miss"] and c["prompt_tokens"] is not None:
            out.append({**c, "framework": "NeMo RL", "stack": (c["model"], c["hardware"], c["precision"],
                                                                c["version"])})
            scenarios[c["id"]] = nemo_case_scenario(c)
    for c in verl_rl_cases():
        if not c.get("known_miss"):
            scn = verl_case_scenario(c)
            out.append({**c, "framework": "verl", "stack": ("verl", c["scenario"]), "model": scn.model.name,
                        "hardware": scn.trainer.hardware, "version": "", "precision": scn.model.precision})
            scenarios[c["id"]] = scn
    return out, scenarios


def _run(case: dict, scn) -> str:
    bound = "" if case.get("max_staleness") is None else f", staleness {case['max_staleness']:g}"
    return f"{case['mode']} {case['trainer_gpus']}:{case['generator_gpus']}{bound}"


def calibration_pairs_table():
    """One row per (pilot, sibling): ids, framework, what changes (mode, GPUs, staleness), the sibling's published
    step time and the three predictions with their signed errors [%] (module docstring). DataFrame."""
    import pandas as pd

    cases, scenarios = _cases()
    by_stack = defaultdict(list)
    for c in cases:
        by_stack[c["stack"]].append(c)
    plain = {}
    for c in cases:
        try:
            plain[c["id"]] = float(evaluate(scenarios[c["id"]], advice=False).metrics["step_time_s"])
        except TcocalcError:
            plain[c["id"]] = math.nan
    rows = []
    for group in by_stack.values():
        for pilot in group:
            if not math.isfinite(plain[pilot["id"]]):
                continue
            figures = {"step_time_s": pilot["step_time_s"]}
            if pilot.get("generated_mean_tokens"):  # NeMo RL's table gives the mean generated length beside the step
                figures["response_tokens_mean"] = float(pilot["generated_mean_tokens"])
            cal = calibrate(scenarios[pilot["id"]], figures, source=f"{pilot['id']} (published step time)")
            scale = pilot["step_time_s"] / plain[pilot["id"]]
            for target in group:
                if target is pilot or not math.isfinite(plain[target["id"]]):
                    continue
                calibrated = scenarios[target["id"]].with_run_calibration(cal)
                pred = float(evaluate(calibrated, advice=False).metrics["step_time_s"])
                pub = target["step_time_s"]
                rows.append({"pilot": pilot["id"], "target": target["id"], "framework": target["framework"],
                             "model": target["model"], "hardware": target["hardware"], "version": target["version"],
                             "pilot run": _run(pilot, scenarios[pilot["id"]]),
                             "target run": _run(target, scenarios[target["id"]]),
                             "published [s]": pub,
                             "uncalibrated [s]": plain[target["id"]],
                             "calibrated [s]": pred,
                             "rescaled step [s]": plain[target["id"]] * scale,
                             "uncalibrated error [%]": 100.0 * (plain[target["id"]] / pub - 1.0),
                             "calibrated error [%]": 100.0 * (pred / pub - 1.0),
                             "rescaled error [%]": 100.0 * (plain[target["id"]] * scale / pub - 1.0)})
    return pd.DataFrame(rows)


def calibration_validation_summary(table=None, framework: str | None = "NeMo RL") -> dict:
    """Median |error| [1] and share within ±25% of each prediction over the pairs of ``framework`` (``None``: every
    pair), the pair count, and whether the calibrated predictions meet :data:`CALIBRATED_TARGET`."""
    t = calibration_pairs_table() if table is None else table
    if framework is not None:
        t = t[t["framework"] == framework]
    out = {"framework": framework or "all", "pairs": len(t)}
    for name in ("uncalibrated", "calibrated", "rescaled"):
        err = np.abs(t[f"{name} error [%]"].to_numpy(float)) / 100.0
        out[f"{name}_median_abs_error"] = float(np.median(err)) if len(err) else math.nan
        out[f"{name}_within_25pct"] = float(np.mean(err <= RL_TOLERANCE)) if len(err) else math.nan
    out["meets_target"] = bool(out["calibrated_median_abs_error"] <= CALIBRATED_TARGET["median_abs_error"]
                               and out["calibrated_within_25pct"] >= CALIBRATED_TARGET["within_25pct"])
    return out
