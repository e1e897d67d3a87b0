"""How far to trust a report (issue 28 item 6): data/prediction_errors.toml holds the validation's typical step-time
errors, and every report states the one that applies to it."""

from __future__ import annotations

import numpy as np
import pytest

import tcocalc as tc
from tcocalc.catalog.calibration import parse_prediction_errors, prediction_errors
from tcocalc.catalog.regimes import regime_errors, regime_of
from tests.conftest import ROOT


def test_the_shipped_errors_are_what_the_validation_gives():
    """The uncalibrated figure is the median |error| of `tcocalc validate --rl`, the calibrated one the leave-one-out
    check's (docs/calibration.md §5), each within a point of the recomputation: a model change that moves them
    fails here until the data file is updated."""
    from tcocalc.studies.calibration_validation import calibration_validation_summary

    shipped = prediction_errors()
    t = tc.rl_validation_table()
    err = t["error [%]"].dropna().abs() / 100.0
    assert shipped["uncalibrated"]["rows"] == len(err)
    assert shipped["uncalibrated"]["median_abs_error"] == pytest.approx(float(np.median(err)), abs=0.005)
    assert shipped["uncalibrated"]["within_25pct"] == pytest.approx(float((err <= 0.25).mean()), abs=0.01)
    loo = calibration_validation_summary(framework=None)
    assert shipped["calibrated"]["rows"] == loo["pairs"]
    assert shipped["calibrated"]["median_abs_error"] == pytest.approx(loo["calibrated_median_abs_error"], abs=0.005)
    assert shipped["calibrated"]["within_25pct"] == pytest.approx(loo["calibrated_within_25pct"], abs=0.01)


def test_every_report_states_its_typical_error():
    scn = tc.load_scenario(ROOT / "scenarios" / "default.toml")
    rep = tc.evaluate(scn)
    assert rep.details["trust"]["basis"] == "uncalibrated"
    # out of sample: the figure of the scenario's regime (tests/unit/studies/test_validation_groups.py), or none
    regime = regime_of(scn)
    stated = regime_errors().get(regime)
    assert rep.details["trust"]["regime"] == regime
    assert rep.details["trust"]["typical_error"] == (None if stated is None else stated["median_abs_error"])
    assert set(rep.details["trust"]["metrics"]) <= set(rep.metrics)
    cal = tc.calibrate(scn, {"step_time_s": rep.metrics["step_time_s"] * 1.2})
    assert tc.solve_split(cal.scenario).details["trust"]["basis"] == "calibrated"


def test_a_bad_entry_names_the_field():
    text = (ROOT / "data" / "prediction_errors.toml").read_text().replace("within_25pct = 0.82", "within_25pct = 82")
    with pytest.raises(tc.DataFileError, match="uncalibrated.*within_25pct"):
        parse_prediction_errors(text)
