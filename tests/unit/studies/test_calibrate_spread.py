"""How well the measured times determine each fitted factor (``RunCalibration.spread``, issue 37 item 2: a fit that
never pretends): the linearised posterior standard deviation of each factor, shown beside it and around the mean
response the times imply."""

from __future__ import annotations

import math

import pytest

import tcocalc as tc
from tcocalc.catalog.calibration import rl_calibration
from tcocalc.catalog.framework_cases import case_scenario

pytestmark = pytest.mark.unit


@pytest.fixture(scope="module")
def step_only():
    """AReaL v0.1's 7B run on 16 + 16 H800 calibrated on its published step alone (7,380 s; inclusionAI/AReaL
    examples/README.md, development-set row AR-06)."""
    return tc.calibrate(case_scenario("areal01-7b-h800-sync-16x16"), {"step_time_s": 7380.0})


def test_a_step_only_fit_spreads_its_factors_as_the_closed_form_says(step_only):
    """Hand-derived: with one measurement (the step, log-sd sigma_m) and independent priors p_i, the linearised
    posterior variance of factor i is p_i^2 - p_i^4 a_i^2 / (sigma_m^2 + sum_j p_j^2 a_j^2) (Sherman-Morrison),
    a_i = d log(step) / d log(factor_i) at the estimate (for the fixed cost, per second). The sensitivities are taken
    here through the public API (the calibrated scenario's factors moved by 1%, the fixed cost by 1 s), not from the
    solver's Jacobian; the reported spread agrees within 1%. A factor the step hardly moves keeps its prior width
    (the push: 0.7), the engine's and the lengths' are cut (about 0.31 and 0.34 of 0.35 and 0.75)."""
    rl = rl_calibration()
    spread = dict(step_only.spread)
    base = step_only.scenario

    def step(name, value):
        scn = base.with_values({f"calibration.factors.{name}": value})
        return float(tc.evaluate(scn, advice=False).metrics["step_time_s"])

    s0 = float(tc.evaluate(base, advice=False).metrics["step_time_s"])
    a = {}
    for f in step_only.factors:
        if f.name not in spread:
            continue
        if f.unit == "s":
            a[f.name] = math.log(step(f.name, f.value + 1.0) / s0)
        else:
            a[f.name] = math.log(step(f.name, f.value * math.exp(0.01)) / s0) / 0.01
    p = {n: rl[f"calibrate_prior_{n}"] for n in a}
    den = rl["calibrate_measurement_sigma"] ** 2 + sum(p[n] ** 2 * a[n] ** 2 for n in a)
    for n in a:
        want = math.sqrt(p[n] ** 2 - p[n] ** 4 * a[n] ** 2 / den)
        assert spread[n] == pytest.approx(want, rel=0.01), n
    assert spread["weight_sync"] == pytest.approx(rl["calibrate_prior_weight_sync"], rel=0.001)
    assert spread["responses"] < 0.5 * rl["calibrate_prior_responses"]


def test_a_measured_stage_pins_its_factor_more_than_the_step_alone():
    """verl's ReTool colocated pilot with its stages (volcengine/verl@b178a3cd docs/advance/fully_async.md: step
    375.47, generation 228.03, log-prob 35.19, update 111.84 s): the update's own figure narrows the training factor
    below what a step alone leaves it (0.215 against about 0.34 of its 0.35 prior)."""
    scn = case_scenario("verl-retool-7b-h20-coloc-32")
    staged = dict(tc.calibrate(scn, {"step_time_s": 375.47, "generation_s": 228.03, "logprob_s": 35.19,
                                     "training_s": 111.84}).spread)
    alone = dict(tc.calibrate(scn, {"step_time_s": 375.47}).spread)
    assert staged["training"] < 0.7 * alone["training"]
    assert alone["training"] == pytest.approx(rl_calibration()["calibrate_prior_training"], rel=0.1)


def test_the_inferred_mean_response_states_its_range_and_the_factors_theirs(step_only):
    """The one-standard-deviation range goes with the inferred mean (the responses factor x the assumed 9,000
    tokens, times exp(-/+ sd)), in the printed calibration and in the factor table; a factor no measurement moved
    shows none."""
    k, sd = step_only.factor("responses"), dict(step_only.spread)["responses"]
    line = step_only.inferred_response_line
    assert f"one standard deviation {k * 9000 * math.exp(-sd):,.0f}-{k * 9000 * math.exp(sd):,.0f}" in line
    assert line in str(step_only)
    frame = step_only.factors_frame().set_index("factor")
    assert frame.loc["responses", "one standard deviation"] == (f"x{k * math.exp(-sd):.3g}-"
                                                                f"x{k * math.exp(sd):.3g}")
    unmoved = [f.name for f in step_only.factors if not f.fitted_from]
    assert unmoved and all(frame.loc[n, "one standard deviation"] == "" for n in unmoved)
