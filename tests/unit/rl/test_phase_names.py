"""Phases named like the report's own keys (issue 38): ``report.details`` keeps the phase names beside the report
fields, so a phase called ``warnings`` or ``pricing`` would have its stage details overwritten and broke the sweep
(IndexError). Such names are refused with a ScenarioError naming the field; other names evaluate, solve, sweep and
simulate."""

from pathlib import Path

import pytest

import tcocalc as tc
from tcocalc.errors import ScenarioError

pytestmark = pytest.mark.unit

DRIFT = Path(__file__).resolve().parents[3] / "scenarios" / "glm5_h200_drift.toml"


def _with_phase_names(*names):
    data = tc.load_scenario(DRIFT).to_dict()
    data["workload"]["steps"] = 40
    data["phases"] = [{"name": n, "start_step": 10 * (i + 1)} for i, n in enumerate(names)]
    return tc.scenario_from_dict(data)


@pytest.mark.parametrize("name", ["warnings", "pricing", "binding_limits", "calibration", "trust", "discards"])
def test_a_phase_named_like_a_report_key_is_refused_naming_the_field(name):
    with pytest.raises(ScenarioError) as err:
        _with_phase_names("early", name)
    assert err.value.field == "phases.1.name"
    assert "report.details" in str(err.value)


def test_phases_with_other_names_evaluate_solve_sweep_and_simulate():
    scn = _with_phase_names("warnings_phase", "pricing_phase")
    report = tc.evaluate(scn)
    assert list(report.phases["phase"]) == ["initial", "warnings_phase", "pricing_phase"]
    assert tc.solve_split(scn).metrics["useful_samples_per_s"] > 0
    rows = tc.sweep(scn, {"economics.usd_per_gpu_hour": [2.0, 3.0]})
    assert list(rows["error"]) == [None, None]
    assert rows["usd_per_hour"][1] == pytest.approx(1.5 * rows["usd_per_hour"][0], rel=0.2)
    sim = tc.simulate(scn, steps=15, seed=0)
    assert sim.metrics["useful_samples_per_s"] > 0
