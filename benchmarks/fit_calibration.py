"""Fit the per-generation factors marked ``kind = "fitted"`` in data/calibration.toml.

For each hardware generation with validation rows (Hopper: H100/H200/H800; Blackwell: B200/GB200/
GB300) it fits ``gemm_half_dim``, ``inference_runtime_efficiency``, ``training_runtime_efficiency`` and
``alltoall_latency_scaleup_s`` (Ampere, A100, whose rows are training only: its training runtime efficiency alone,
:data:`GENERATION_PARAMS`) jointly over ALL of that generation's cases in data/validation_cases.toml
(generation, latency and training rows, every model), minimising a robust (soft-L1) loss on
log(predicted/published). Nothing is fitted per model or per case. Cases marked ``known_miss`` (with the
reason) are left out of the fit and still reported by ``tcocalc validate``.

``--with-rl`` adds NeMo RL's published step times of the same generation (data/rl_cases_nemo.csv, the public
calibration set of the RL step model; known misses left out), evaluated through the whole RL pipeline under each
trial calibration: the fit then uses every public calibration row. On 2026-11-30 it landed next to the shipped
factors (Hopper 695 / 0.848 / 0.860 / 345 us, Blackwell 2181 / 0.723 / 1.0 / 127 us), while the validation
rows alone move Hopper to 130 / 0.819 / 0.764 / 397 us at the cost of NeMo RL's accuracy (docs/changes.md,
refits not taken). On 2026-12-01 (after the joint IPC/per-tensor refit and the synchronous tool overlap)
it gives Hopper 739 / 0.867 / 0.867 / 360 us and Blackwell 2234 / 0.760 / 1.0 / 168 us: medians fall (validation
10.7% -> 9.4%, long-output 10.1% -> 8.9%) but LO-101 leaves the ±25% band, GEN-07a and LO-28 grow, NeMo RL goes
11.3% -> 11.6% and verl 12.7% -> 13.2%, so the shipped factors were kept (docs/changes.md, refits not
taken). After prompts were prefilled whole (same day) it gives Hopper 625 / 0.877 / 0.840 / 380 us and Blackwell
2239 / 0.761 / 1.0 / 170 us: validation 8.3% over the 40 cases of that day, long-output 9.3%, but the SemiAnalysis
reconstruction drops from 1.83 to 1.23 useful samples/s (trainer idle 54% against the published 29%), so again
the shipped factors stay.

``--band`` holds the fit to issue 13's target that every public row stays in its band: each validation row and each
long-output row of the generation (known misses left out) adds a steep penalty for any excess beyond its tolerance
(:func:`fit_generation`). On 2026-12-01 (after the dense GPT rows and the RL flow's instance choice)
``--with-rl --band`` gives Hopper 872 / 0.897 / 0.903 / 367 us and Blackwell 2144 / 0.735 / 0.989 / 147 us: every
validation and long-output row stays in its band, the validation median goes 11.0% -> 9.6% over 55 cases (7.8%
without the known misses), long-output 8.8% -> 8.1%, NeMo RL 11.3% -> 11.4% (NEMO-34 leaves its band at -25.2%),
verl 12.5% -> 14.7%, and the SemiAnalysis reconstruction comes to 1.91 useful samples/s at 28% trainer idle against
the published 1.95 and ~30% (1.83 and 31% now); but the known misses grow (GEN-07a +69% -> +74%, LO-28 -25.5% ->
-29.1%, LAT-05's TPOT -35% -> -37%), which the issue rules out, so the shipped factors stay. Without ``--band`` the
same fit (Hopper 1196 / 0.924 / 0.972 / 346 us) puts GEN-08a at +25.1% and TRN-09a outside its ±3 points.

``--with-long-output`` adds TensorRT-LLM's long-output rows of the same generation (data/validation_long_output.csv,
at their published layouts; known misses left out). Not used for the shipped factors. Checked on 2026-12-01 with
``--with-rl --with-long-output`` (79 Hopper and 117 Blackwell rows): Hopper 1018 / 0.912 / 0.924 / 380 us,
Blackwell 2143 / 0.776 / 0.979 / 165 us; median |error| 10.7% -> 9.1% over the 40 validation cases, 10.1% -> 8.3%
over the 131 long-output rows, NeMo RL 11.3% -> 10.7%; but GEN-09b (+28%) and two TensorRT-LLM v0.20 B200 rows
(Llama-3.3-70B TP2 and TP8 at 128/4096, +31% and +28%) leave the ±25% band, verl's median goes 12.7% -> 14.2%, and
labelling the rows that leave and refitting moves Blackwell further the same way (in a trial two more rows left):
the label set feeds the fit. Fitted on the long-output and NeMo RL rows alone, the 40 validation cases (then held
out) come out at a median of 14.3%, while the shipped factors, fitted without the long-output rows, hold those
out at 10.1%: the two sets pull the factors apart, so the long-output rows stay checks.

``--accelerator NAME`` fits one chip's two serving factors (``gemm_half_dim``, ``inference_runtime_efficiency``) as
per-chip overrides on that chip's long-output rows and cross-validates them group by group. Used for the RTX PRO
6000 (sm120), whose generation factors come from other silicon and whose only public measurements are those rows
(2026-12-01: 356 / 0.794; data/calibration.toml says why, docs/validation.md that those rows are then a fit).
The long-output rows are predicted as ``tcocalc validate --long-output`` predicts them (trtllm-bench's token budget
since 2026-12-01; the 2026-12-01 ``--with-long-output`` figures above predate it).

Run: ``.venv/bin/python benchmarks/fit_calibration.py [--with-rl] [--with-long-output] [--band]
[--accelerator NAME]``; it prints the fitted values and the resulting errors; copy the values into
data/calibration.toml.
"""

from __future__ import annotations

import argparse

import numpy as np
from scipy.optimize import least_squares

import tcocalc as tc
from tcocalc.catalog.calibration import CalibrationSet, shipped_calibration
from tcocalc.catalog.cases import long_output_cases
from tcocalc.catalog.rl_cases import nemo_rl_cases
from tcocalc.roofline.validation import LONG_OUTPUT_TOLERANCE, predict_case, predict_long_output, validation_cases
from tcocalc.studies.rl_validation import nemo_case_scenario

PARAMS = ("gemm_half_dim", "inference_runtime_efficiency", "training_runtime_efficiency", "alltoall_latency_scaleup_s")
LOWER = (1.0, 0.2, 0.2, 0.0)
UPPER = (4096.0, 1.0, 1.0, 500e-6)
GENERATION_PARAMS = {"hopper": PARAMS, "blackwell": PARAMS, "ampere": ("training_runtime_efficiency",)}
TRAINING_KINDS = ("training", "step_s", "mfu", "gpu_hours")
"""Validation kinds predicted by the training model (tcocalc.roofline.validation.predict_case); the others are
serving rows, which a generation whose serving factors stay borrowed (Ampere) does not fit."""
"""What each generation's rows can fit: Ampere's only rows are training iterations (TRN-10, Megatron-LM on A100
since 2026-12-01), which constrain its training runtime efficiency and nothing else; its other factors stay
borrowed from Hopper."""


def _trial(generation: str, values, params=PARAMS) -> CalibrationSet:
    """The shipped calibration with ``values`` (of ``params``) as the generation's factors: a frozen value passed
    to every prediction as ``calibration=`` (the caches key on it, so nothing needs clearing)."""
    return shipped_calibration().with_factors(generation, dict(zip(params, (float(v) for v in values), strict=True)))


def _log_errors(rows, calibration: CalibrationSet | None = None) -> list[float]:
    """``log(predicted/published)`` of long-output rows (as ``tcocalc validate --long-output`` predicts them) under
    ``calibration`` (default: the shipped factors)."""
    return [float(np.log(predict_long_output(c, calibration=calibration) / c["published_tok_s_per_gpu"]))
            for c in rows]


BAND_WEIGHT = 20.0
"""``--band``: weight of a row's excess beyond its band, ``max(0, |log(pred/pub)| - log(1 + tol - margin))``, in the
residuals (large against the soft-L1 scale 0.2, so the fit gives up median accuracy before a row leaves its band)."""
BAND_MARGIN = 0.01
"""``--band``: the band is kept one point inside each row's tolerance (a row at the edge is not "within")."""


def fit_generation(generation: str, with_rl: bool = False, with_long_output: bool = False, band: bool = False):
    """Fit ``generation``'s factors (:data:`GENERATION_PARAMS`). ``band``: the fit is held to issue 13's target that
    every public row stays in its band: the generation's validation rows and its long-output rows (known misses left
    out) add a penalty residual (:data:`BAND_WEIGHT`) for any excess beyond their tolerance (validation) or ±25%
    (long output), while the loss itself stays over the fitted rows. The long-output rows then bound the fit
    without being fitted."""
    def ours(hw):
        return bool(hw) and tc.hardware(hw).generation == generation

    params = GENERATION_PARAMS[generation]
    serving = "inference_runtime_efficiency" in params  # a training-only fit (Ampere) leaves the serving rows out
    cases = [c for c in validation_cases() if ours(c["hardware"]) and not c.get("known_miss")
             and (serving or c["kind"] in TRAINING_KINDS)]
    long_rows = [c for c in long_output_cases()
                 if with_long_output and c["catalog_model"] and ours(c["hardware"]) and not c["known_miss"]]
    bounded = [c for c in long_output_cases()
               if band and c["catalog_model"] and ours(c["hardware"]) and not c["known_miss"]]
    lo_rows = list({c["id"]: c for c in long_rows + bounded}.values())  # each row predicted once per trial
    rl = [(c, nemo_case_scenario(c)) for c in nemo_rl_cases()
          if with_rl and ours(c["hardware"]) and not c.get("known_miss")]
    tol = np.log1p(np.array([c["tolerance"] for c in cases] + [LONG_OUTPUT_TOLERANCE] * len(bounded)) - BAND_MARGIN)

    def residuals(x):
        cal = _trial(generation, x, params)
        val = [np.log(predict_case(c, calibration=cal) / c["published"]) for c in cases]
        lo = dict(zip((c["id"] for c in lo_rows), _log_errors(lo_rows, cal), strict=True))
        out = val + [lo[c["id"]] for c in long_rows]
        out += [np.log(tc.evaluate(scn, calibration=cal).metrics["step_time_s"] / c["step_time_s"]) for c, scn in rl]
        if band:
            edge = np.abs(val + [lo[c["id"]] for c in bounded])
            out += list(BAND_WEIGHT * np.maximum(edge - tol, 0.0))
        return np.array(out)

    x0 = [shipped_calibration().raw()[generation][p]["value"] for p in params]
    lower, upper = zip(*[(LOWER[PARAMS.index(p)], UPPER[PARAMS.index(p)]) for p in params], strict=True)
    res = least_squares(residuals, x0, bounds=(lower, upper), loss="soft_l1", f_scale=0.2, diff_step=1e-3)
    res.fun = res.fun[:len(cases) + len(long_rows) + len(rl)]  # the rows' residuals; the band penalties follow
    return cases + long_rows + [c for c, _ in rl], res


ACCELERATOR_PARAMS = ("gemm_half_dim", "inference_runtime_efficiency")
"""The per-chip fit (``--accelerator``): the two factors a serving row constrains."""


def _trial_accelerator(name: str, values) -> CalibrationSet:
    """The shipped calibration with ``values`` (of :data:`ACCELERATOR_PARAMS`) as chip ``name``'s overrides."""
    return shipped_calibration().with_factors(f'accelerator."{name}"',
                                              dict(zip(ACCELERATOR_PARAMS, (float(v) for v in values), strict=True)))


def fit_accelerator(name: str, rows=None):
    """Per-chip serving factors fitted on the chip's own long-output rows (all of them, known misses included:
    the soft-L1 loss bounds an outlier's pull, and leaving rows out by label would let the labels feed the fit).
    For a chip whose generation factors were fitted on other silicon and whose only public measurements are these
    rows (the RTX PRO 6000, sm120): they then stop being an independent check, which docs/validation.md says. Returns
    (rows, least-squares result)."""
    acc = tc.hardware(name)
    rows = rows if rows is not None else [c for c in long_output_cases()
                                          if c["catalog_model"] and c["hardware"] == acc.name]
    if not rows:
        raise SystemExit(f"no long-output rows for {acc.name}")
    base = shipped_calibration().for_accelerator(acc)

    def residuals(x):
        return np.array(_log_errors(rows, _trial_accelerator(acc.name, x)))

    x0 = [getattr(base, p) for p in ACCELERATOR_PARAMS]
    res = least_squares(residuals, x0, bounds=((1.0, 0.2), (4096.0, 1.0)), loss="soft_l1", f_scale=0.2,
                        diff_step=1e-3)
    return rows, res


def cross_validate_accelerator(name: str, rows) -> None:
    """Leave one (model, ISL/OSL) group of ``rows`` (the chip's, as :func:`fit_accelerator` returns them) out, fit
    on the rest, print the held-out errors."""
    groups: dict[tuple, list] = {}
    for c in rows:
        groups.setdefault((c["catalog_model"], c["isl"], c["osl"]), []).append(c)
    for key, held in groups.items():
        _, res = fit_accelerator(name, [c for c in rows if c not in held])
        errs = list(100 * np.expm1(_log_errors(held, _trial_accelerator(tc.hardware(name).name, res.x))))
        print(f"   held out {key[0]} {key[1]}/{key[2]}: fit " + ", ".join(f"{v:.4g}" for v in res.x) + "; "
              + " ".join(f"{c['id']} {e:+.1f}%" for c, e in zip(held, errs, strict=True)))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--with-rl", action="store_true", help="also fit NeMo RL's published step times")
    ap.add_argument("--with-long-output", action="store_true",
                    help="also fit TensorRT-LLM's long-output rows (not used for the shipped factors)")
    ap.add_argument("--band", action="store_true",
                    help="hold every validation and long-output row of the generation inside its band")
    ap.add_argument("--accelerator", metavar="NAME",
                    help="fit one chip's serving overrides on its long-output rows (and cross-validate) instead")
    args = ap.parse_args()
    if args.accelerator:
        rows, res = fit_accelerator(args.accelerator)
        print(f"[{args.accelerator}] " + ", ".join(f"{p} = {v:.4g}" for p, v in zip(ACCELERATOR_PARAMS, res.x,
                                                                                  strict=True)))
        errs = np.expm1(res.fun) * 100
        for c, e in zip(rows, errs, strict=True):
            print(f"   {c['id']:12s} {e:+7.1f}%")
        print(f"   median |error| {np.median(np.abs(errs)):.1f}%  over {len(rows)} rows; cross-validation:")
        cross_validate_accelerator(args.accelerator, rows)
        return
    for gen, params in GENERATION_PARAMS.items():
        cases, res = fit_generation(gen, with_rl=args.with_rl, with_long_output=args.with_long_output, band=args.band)
        print(f"[{gen}] " + ", ".join(f"{p} = {v:.4g}" for p, v in zip(params, res.x, strict=True)))
        errs = np.expm1(res.fun) * 100
        for c, e in zip(cases, errs, strict=True):
            print(f"   {c['id']:12s} {e:+7.1f}%")
        print(f"   median |error| {np.median(np.abs(errs)):.1f}%  over {len(cases)} rows")


if __name__ == "__main__":
    main()
