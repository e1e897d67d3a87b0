"""The report's typed fields (tcocalc/rl/results.py, issue 38) and the ``details`` mapping kept for compatibility."""

from pathlib import Path

import pytest

import tcocalc as tc
from tcocalc.economics.tco import PoolPrice, pricing_text
from tcocalc.rl.results import CalibrationStatus, Diagnosis, PhaseResult, ReportWarning, SimulationRun, Trust

pytestmark = pytest.mark.unit

SCENARIOS = Path(__file__).resolve().parents[3] / "scenarios"
PHASE_KEYS = {"cluster", "workload", "generator", "flow", "rates", "staleness", "weight_sync_s", "rollout_latency_s",
              "trained_samples_per_s"}
REPORT_KEYS = {"binding_limits", "warnings", "discards", "pricing", "calibration", "trust"}


@pytest.fixture(scope="module")
def drift():
    return tc.evaluate(tc.load_scenario(SCENARIOS / "glm5_h200_drift.toml"))


def test_evaluate_gives_typed_fields(drift):
    assert [r.workload.phase for r in drift.phase_results] == ["initial", "drift"]
    assert all(isinstance(r, PhaseResult) for r in drift.phase_results)
    d = drift.diagnosis
    assert isinstance(d, Diagnosis) and d.sizing is None
    assert all(isinstance(p, PoolPrice) for p in d.pricing) and {p.side for p in d.pricing} == {"trainer", "generator"}
    assert all(isinstance(w, ReportWarning) for w in d.warnings)
    assert isinstance(d.calibration, CalibrationStatus) and d.calibration.calibrated is False
    assert isinstance(d.trust, Trust) and d.trust.basis == "uncalibrated" and 0 < d.trust.typical_error < 1
    assert set(d.binding_limits) == {"initial", "drift"}
    assert drift.simulation is None


def test_details_assembles_the_earlier_mapping_from_the_fields(drift):
    details = drift.details
    assert set(details) == {"initial", "drift"} | REPORT_KEYS
    assert set(details["drift"]) == PHASE_KEYS
    res = drift.phase_results[1]
    assert details["drift"]["flow"] is res.flow and details["drift"]["cluster"] is drift.cluster
    assert details["drift"]["trained_samples_per_s"] == float(res.flow.trained_per_s[0])
    assert details["pricing"] == [p.as_dict() for p in drift.diagnosis.pricing]
    assert details["calibration"] == {"calibrated": False, "source": None, "factors": {}, "dropped": {}, "misfit": "",
                                      "across_modes": ""}
    assert details["trust"]["typical_error"] == drift.diagnosis.trust.typical_error
    assert details["binding_limits"] is drift.diagnosis.binding_limits


def test_a_warning_as_the_earlier_dict():
    w = ReportWarning("few_useful_groups", "Only 1% of groups ...", phase="drift",
                      numbers={"useful_group_fraction": 0.01, "floor": 0.05})
    assert w.as_dict() == {"kind": "few_useful_groups", "phase": "drift", "message": "Only 1% of groups ...",
                           "useful_group_fraction": 0.01, "floor": 0.05}
    keyed = ReportWarning("unused_setting", "m", keys=("orchestration.max_staleness",))
    assert keyed.as_dict()["keys"] == ["orchestration.max_staleness"]


def test_repr_is_a_short_summary_with_the_content_one_attribute_away(drift):
    text = repr(drift)
    assert len(text) < 400, len(text)
    assert "glm5-h200-drift" in text and "diagnosis" in text and "128:128" in text


def test_solve_and_simulate_fill_sizing_and_the_simulation():
    scn = tc.load_scenario(SCENARIOS / "default.toml")
    solved = tc.solve_split(scn)
    s = solved.diagnosis.sizing
    assert s is not None and s.total <= s.of_total
    assert solved.details["smallest_split_99pct"] == (s.trainer_gpus, s.generator_gpus)
    sim = tc.simulate(scn, steps=10, seed=0)
    assert isinstance(sim.simulation, SimulationRun) and sim.simulation.steps == 10
    assert len(sim.simulation.timeline) == 10
    assert sim.details["steps"] == 10 and sim.details["timeline"] is sim.simulation.timeline
    assert sim.details["phase_metrics"]["step_time_s"] == pytest.approx(sim.metrics["step_time_s"], rel=1e-12)
    assert pricing_text(solved.diagnosis.pricing).startswith("trainer and generator ")
