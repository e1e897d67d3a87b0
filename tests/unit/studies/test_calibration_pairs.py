"""Calibration pairs C-01..C-07 (issue 37 item 3): calibrate on a published run, carry the calibration to its published
sibling, compare the predicted step with the published one (tests/data/calibration_pairs/pairs.toml: the published
figures; the scenarios are the development set's own, data/validation/frameworks/, each citing its run's source and
assumed inputs, so that a sourced input set there is the one the pairs use).

A synchronous pilot's generation is split into the engine at its steady-state throughput (the generation factor,
which carries to any plan) and the wait for the batch's slowest trajectories beyond it (the tail factor, which carries
only to a plan that generates in synchronous batches); before the split one factor took both, and a streaming target
paid the pilot's tail as a slower engine.

What the pairs say (2026-12-06; before the split in brackets): scaling a synchronous run out (C-06, C-07) carries within
±25%: -14% (-14%), -16% (-16%). A colocated or synchronous pilot carried to a plan whose step is built otherwise: C-01
+58% (+49%), C-02 +88% (+90%), C-03 +66% (+64%), C-04 +12% (+36%), C-05 +47% (refused, counted as the uncalibrated
+116%); median 58% (64%), one of five within ±25% (none). (C-01 and C-02 were +51% and +81% on the pairs' former copies
of their scenarios, which lacked the engine settings the sources state.) What is left is mostly the trainer: the targets
of C-01, C-02, C-03 and C-05 are trainer-bound, C-01's and C-05's pilots already put their trainers at the MFU ceiling
under the assumed responses, and C-02's pilot runs slower than the model while its target runs faster. Such a plan
states the error measured on these pairs (data/rl_calibration.toml ``calibrate_across_modes_error``) and says it was
carried across modes. The test recomputes every error, so the stated figure can never understate them."""

from __future__ import annotations

import statistics
import tomllib
from pathlib import Path

import pytest

import tcocalc as tc
from tcocalc._data import data_dir
from tcocalc.catalog.calibration import rl_calibration
from tcocalc.catalog.framework_cases import case_scenario

pytestmark = pytest.mark.unit

PAIRS_DIR = Path(__file__).resolve().parents[2] / "data" / "calibration_pairs"
PAIRS = tomllib.loads((PAIRS_DIR / "pairs.toml").read_text())
ACROSS = ("C-01", "C-02", "C-03", "C-04", "C-05")
WITHIN = ("C-06", "C-07")


def _predict(pair: dict) -> tuple[float, tc.RunCalibration, tc.RLReport]:
    measured = case_scenario(pair["measured"])
    cal = tc.calibrate(measured, pair["figures"])
    report = tc.evaluate(case_scenario(pair["target"]).with_run_calibration(cal), advice=False)
    return report.metrics["step_time_s"] / pair["published_step_s"] - 1.0, cal, report


@pytest.fixture(scope="module")
def results():
    return {pid: _predict(pair) for pid, pair in PAIRS.items()}


def test_pairs_are_the_seven_published_ones():
    assert sorted(PAIRS) == [f"C-0{i}" for i in range(1, 8)]
    for pair in PAIRS.values():
        for name in (pair["measured"], pair["target"]):
            head = (data_dir() / "validation" / "frameworks" / f"{name}.toml").read_text().splitlines()[:12]
            assert any("Source" in ln or "http" in ln or "@" in ln for ln in head), name


def test_scaling_a_synchronous_run_out_carries_within_25pct(results):
    """C-06, C-07 (AReaL v0.1 16x16 -> 64x64 H800): the same mode, four times the GPUs: -14% and -16% (±25%)."""
    for pid in WITHIN:
        err, cal, report = results[pid]
        assert cal.calibrated and report.details["calibration"]["calibrated"]
        assert not report.details["calibration"]["across_modes"]
        assert abs(err) <= 0.25, (pid, err)


def test_a_plan_carried_across_modes_says_so_and_states_the_error_measured_on_these_pairs(results):
    """C-01..C-05: every plan that applies the factors says it was carried across modes and states the pairs'
    median |error|; the stated figure (data) is at least the recomputed median and within 5 points of it, and its
    share within ±25% is the recomputed one."""
    errors = [abs(results[pid][0]) for pid in ACROSS]
    rl = rl_calibration()
    median = statistics.median(errors)
    assert rl["calibrate_across_modes_error"] >= median - 0.005
    assert rl["calibrate_across_modes_error"] == pytest.approx(median, abs=0.05)
    assert rl["calibrate_across_modes_within_25pct"] == pytest.approx(sum(e <= 0.25 for e in errors) / len(errors))
    for pid in ACROSS:
        _, cal, report = results[pid]
        status, trust = report.details["calibration"], report.details["trust"]
        if not cal.calibrated:  # refused on its own run: the target plan is the uncalibrated model and says so
            assert status["misfit"] and not status["calibrated"]
            assert tc.calibration_line(status, trust).startswith("Not calibrated:")
            continue
        assert status["calibrated"] and "carried across modes" in status["across_modes"]
        assert trust["typical_error"] == rl["calibrate_across_modes_error"]
        assert "carried across modes" in tc.calibration_line(status, trust)


def test_c05_pilot_calibrates_once_its_tail_is_its_own_and_its_trainer_sits_at_the_ceiling(results):
    """C-05's synchronous step (207.7 s on 96 + 96 H800) is 108% below the model under the assumed responses (mean
    8,000 tokens, p99 28,000, cap 31,744). With one generation factor for engine and tail, the decode step would have
    had to beat the HBM roofline and the fit was refused; split, the batch's wait for its slowest trajectories comes
    out shorter than the lognormal tail assumed (tail factor below 1: the pilot's own batch) and the fit holds with
    the trainer at the MFU ceiling (1%). The asynchronous target is trainer-bound, so its error (+47%) is what the
    assumed workload leaves when the trainer cannot run faster than the ceiling. C-01, bounded the same way, also
    calibrates with its trainer at the ceiling."""
    ceiling = rl_calibration()["calibrate_mfu_ceiling"]
    for pid in ("C-05", "C-01"):
        _, cal, _ = results[pid]
        assert cal.calibrated, (pid, cal.misfit)
        mfu = tc.evaluate(cal.scenario, advice=False).metrics["trainer_mfu_busy"]
        assert mfu == pytest.approx(ceiling, rel=0.01), pid
    assert results["C-05"][1].factor("tail") < 1.0


def test_a_synchronous_pilot_s_generation_is_split_into_engine_and_tail(results):
    """C-04's colocated ReTool pilot logs generation 228.03 s (volcengine/verl@b178a3cd docs/advance/fully_async.md):
    the calibrated model puts part of it at the engine's steady-state throughput (the step's generated tokens over
    the generator's tokens/s, what a streaming plan pays at the same engine speed) and the rest on the wait for the
    batch's slowest trajectories; the two add up to the calibrated generation, and a streaming run has no such
    split."""
    _, cal, _ = results["C-04"]
    parts = dict(cal.generation_parts)
    engine, tail = parts["engine at its steady-state throughput"], parts["wait for the batch's slowest trajectories"]
    after = next(s.after_s for s in cal.stages if s.stage == "generation_s")
    assert engine + tail == pytest.approx(after, rel=1e-9)
    assert 0.2 * after < engine < 0.8 * after  # a multi-turn batch of 64 x 16 with 16K responses: a long tail
    assert "generation phase (model, calibrated): engine at its steady-state throughput" in str(cal)
    streaming = tc.calibrate(case_scenario("verl-retool-7b-h20-async-16x16"), {"step_time_s": 221.36})
    assert streaming.generation_parts == ()


def test_the_tail_carries_only_to_a_plan_that_waits_for_a_synchronous_batch(results):
    """The tail factor is the pilot's synchronous batch's: a streaming target (C-04's fully-async ReTool run) drops it,
    naming why, and keeps the engine's speed (generation); a synchronous target (C-06's 64 x 64 AReaL run) and a one
    step off one (C-01's 12 : 4 verl run) apply it, since they wait for their own batch's slowest trajectories."""
    _, cal, report = results["C-04"]
    status = report.details["calibration"]
    assert cal.factor("tail") != 1.0 and status["dropped"]["tail"] == ["batches"]
    assert "generation" in status["factors"] and "tail" not in status["factors"]
    said = [w["message"] for w in report.details["warnings"] if "tail (" in w["message"]]
    assert said and "no batch waits for its slowest trajectories" in said[0]
    for pid in ("C-06", "C-01"):
        _, cal, report = results[pid]
        assert report.details["calibration"]["factors"]["tail"] == pytest.approx(cal.factor("tail"))
