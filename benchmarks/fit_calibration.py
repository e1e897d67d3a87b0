"""Fit the per-generation factors marked ``kind = "fitted"`` in data/calibration.toml.

For each hardware generation with validation rows (Hopper: H100/H200/H800; Blackwell: B200/GB200/
GB300) it fits ``gemm_half_dim``, ``inference_runtime_efficiency``, ``training_runtime_efficiency`` and
``alltoall_latency_scaleup_s`` jointly over ALL of that generation's cases in data/validation_cases.toml
(generation, latency and training rows, every model), minimising a robust (soft-L1) loss on
log(predicted/published). Nothing is fitted per model or per case. Cases marked ``known_miss`` (with the
reason) are left out of the fit and still reported by ``tcocalc validate``.

``--with-rl`` adds NeMo RL's published step times of the same generation (data/rl_cases_nemo.csv, the public
calibration set of the RL step model; known misses left out), evaluated through the whole RL pipeline under each
trial calibration: the fit then uses every public calibration row. On 2026-11-30 it landed next to the shipped
factors (Hopper 695 / 0.848 / 0.860 / 345 us, Blackwell 2181 / 0.723 / 1.0 / 127 us), while the validation
rows alone move Hopper to 130 / 0.819 / 0.764 / 397 us at the cost of NeMo RL's accuracy (README, "How far to
trust the RL step model").

Run: ``.venv/bin/python benchmarks/fit_calibration.py [--with-rl]``; it prints the fitted values and the
resulting errors; copy the values into data/calibration.toml.
"""

from __future__ import annotations

import argparse
import copy

import numpy as np
from scipy.optimize import least_squares

import tcocalc as tc
import tcocalc.catalog.calibration as calibration_module
from tcocalc.catalog.calibration import calibration_for
from tcocalc.catalog.rl_cases import nemo_rl_cases
from tcocalc.rl import pipeline as rl_pipeline
from tcocalc.rl.validation import nemo_case_scenario
from tcocalc.roofline.validation import predict_case, validation_cases

PARAMS = ("gemm_half_dim", "inference_runtime_efficiency", "training_runtime_efficiency", "alltoall_latency_scaleup_s")
LOWER = (1.0, 0.2, 0.2, 0.0)
UPPER = (4096.0, 1.0, 1.0, 500e-6)
_SHIPPED = calibration_module._raw


def _trial(generation: str, values) -> None:
    """Make ``values`` (of :data:`PARAMS`) the generation's calibration for everything the library computes next:
    the parsed data file is swapped for a copy with them, and the caches that hold results computed under the
    old factors are cleared."""
    raw = copy.deepcopy(_SHIPPED())
    for p, v in zip(PARAMS, values, strict=True):
        raw[generation][p]["value"] = float(v)
    calibration_module._raw = lambda: raw
    calibration_module._calibration.cache_clear()
    rl_pipeline.clear_caches()


def _restore() -> None:
    calibration_module._raw = _SHIPPED
    calibration_module._calibration.cache_clear()


def fit_generation(generation: str, with_rl: bool = False):
    cases = [c for c in validation_cases()
             if tc.hardware(c["hardware"]).generation == generation and not c.get("known_miss")]
    rl = [(c, nemo_case_scenario(c)) for c in nemo_rl_cases()
          if with_rl and tc.hardware(c["hardware"]).generation == generation and not c.get("known_miss")]

    def residuals(x):
        _trial(generation, x)
        out = [np.log(predict_case(c, calibration=calibration_for(tc.hardware(c["hardware"]))) / c["published"])
               for c in cases]
        out += [np.log(tc.evaluate(scn).metrics["step_time_s"] / c["step_time_s"]) for c, scn in rl]
        return np.array(out)

    x0 = [_SHIPPED()[generation][p]["value"] for p in PARAMS]
    try:
        res = least_squares(residuals, x0, bounds=(LOWER, UPPER), loss="soft_l1", f_scale=0.2, diff_step=1e-3)
    finally:
        _restore()
    return cases + [c for c, _ in rl], res


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--with-rl", action="store_true", help="also fit NeMo RL's published step times")
    args = ap.parse_args()
    for gen in ("hopper", "blackwell"):
        cases, res = fit_generation(gen, with_rl=args.with_rl)
        print(f"[{gen}] " + ", ".join(f"{p} = {v:.4g}" for p, v in zip(PARAMS, res.x, strict=True)))
        errs = np.expm1(res.fun) * 100
        for c, e in zip(cases, errs, strict=True):
            print(f"   {c['id']:12s} {e:+7.1f}%")
        print(f"   median |error| {np.median(np.abs(errs)):.1f}%  over {len(cases)} cases")


if __name__ == "__main__":
    main()
