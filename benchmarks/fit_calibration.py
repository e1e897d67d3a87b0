"""Fit the per-generation factors marked ``kind = "fitted"`` in data/calibration.toml.

For each hardware generation with validation rows (Hopper: H100/H200/H800; Blackwell: B200/GB200/
GB300) it fits ``gemm_half_dim``, ``inference_runtime_efficiency`` and ``training_runtime_efficiency``
jointly over ALL of that generation's cases in data/validation_cases.toml (generation, latency and
training rows, every model), minimising a robust (soft-L1) loss on log(predicted/published). Nothing
is fitted per model or per case. Cases marked ``known_miss`` (with the reason) are left out of the fit
and still reported by ``tcocalc validate``.

Run: ``.venv/bin/python benchmarks/fit_calibration.py``; it prints the fitted values and the
resulting errors; copy the values into data/calibration.toml.
"""

from __future__ import annotations

import numpy as np
from scipy.optimize import least_squares

import tcocalc as tc
from tcocalc.catalog.calibration import calibration_for
from tcocalc.roofline.validation import predict_case, validation_cases

PARAMS = ("gemm_half_dim", "inference_runtime_efficiency", "training_runtime_efficiency", "alltoall_latency_scaleup_s")
LOWER = (1.0, 0.2, 0.2, 0.0)
UPPER = (4096.0, 1.0, 1.0, 500e-6)


def fit_generation(generation: str):
    cases = [c for c in validation_cases()
             if tc.hardware(c["hardware"]).generation == generation and not c.get("known_miss")]
    base = {c["hardware"]: calibration_for(tc.hardware(c["hardware"])) for c in cases}

    def residuals(x):
        out = []
        for c in cases:
            cal = base[c["hardware"]].with_overrides(**dict(zip(PARAMS, x, strict=True)))
            out.append(np.log(predict_case(c, calibration=cal) / c["published"]))
        return np.array(out)

    x0 = [getattr(next(iter(base.values())), p) for p in PARAMS]
    res = least_squares(residuals, x0, bounds=(LOWER, UPPER), loss="soft_l1", f_scale=0.2, diff_step=1e-3)
    return cases, res


def main() -> None:
    for gen in ("hopper", "blackwell"):
        cases, res = fit_generation(gen)
        print(f"[{gen}] " + ", ".join(f"{p} = {v:.4g}" for p, v in zip(PARAMS, res.x, strict=True)))
        errs = np.expm1(res.fun) * 100
        for c, e in zip(cases, errs, strict=True):
            print(f"   {c['id']:12s} {e:+7.1f}%")
        print(f"   median |error| {np.median(np.abs(errs)):.1f}%  over {len(cases)} cases")


if __name__ == "__main__":
    main()
