"""Calibration pairs C-01..C-07 (issue 37 item 3): calibrate on a published run, carry the calibration to its published
sibling, compare the predicted step with the published one (tests/data/calibration_pairs/pairs.toml: the published
figures; the scenarios are the development set's own, data/validation/frameworks/, each citing its run's source and
assumed inputs, so that a sourced input set there is the one the pairs use).

A synchronous pilot's generation is split into the engine at its steady-state throughput (the generation factor,
which carries to any plan) and the wait for the batch's slowest trajectories beyond it (the tail factor, which carries
only to a plan that generates in synchronous batches); before the split one factor took both, and a streaming target
paid the pilot's tail as a slower engine.

What the pairs say (2026-12-07; before the responses factor in brackets, 2026-12-06): scaling a synchronous run out
(C-06, C-07) carries within ±25%: -20% (-16%), -16% (-15%). A colocated or synchronous pilot carried to a plan whose
step is built otherwise: C-01 +36% (+58%), C-02 +129% (+84%), C-03 +16% (+66%), C-04 +55% (+12%), C-05 -26% (+47%);
median 36% (58%), one of five within ±25% (one). C-03 was +23% and C-05 +13% until AReaL's scenarios paid the disk
weight reload AReaL's code does (2026-12-07, docs/calibration.md). None of the seven pilots gives its response
lengths, so the fit also corrects the lengths its scenario assumed (the responses factor, prior
calibrate_prior_responses): C-01, C-03 and C-05 come out with shorter responses (x0.46, x0.66, x0.37) and trainers
below the MFU ceiling where they sat at it before. What is left is the trainer of verl's split and asynchronous runs:
the published stages show it 1.2-1.7x faster per GPU than the same recipe's colocated trainer at the same batch (C-01,
C-02, C-04), where the model's trainer scales linearly with its GPUs (C-02's runs differ alike in the reference pass
and the update, a per-token difference between the runs, not a loss of the update to scale: pass pair PP-03,
docs/validation.md); C-04, whose pilot's stages all took longer than
the model's, now reads that as longer responses, which its asynchronous target pays in its trainer. Such a plan states
the error measured on these pairs (data/rl_calibration.toml ``calibrate_across_modes_error``) and says it was carried
across modes. The test recomputes every error, so the stated figure can never understate them."""

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


def _stated_against_pairs(results, pairs: tuple[str, ...], key: str) -> float:
    """The pairs' recomputed median |error|, after checking the stated figure of data/rl_calibration.toml
    (``<key>_error``) is at least it and within 5 points of it, and ``<key>_within_25pct`` is their share within
    ±25%."""
    errors = [abs(results[pid][0]) for pid in pairs]
    rl = rl_calibration()
    median = statistics.median(errors)
    assert rl[f"{key}_error"] >= median - 0.005
    assert rl[f"{key}_error"] == pytest.approx(median, abs=0.05)
    assert rl[f"{key}_within_25pct"] == pytest.approx(sum(e <= 0.25 for e in errors) / len(errors))
    return median


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


def test_a_plan_calibrated_in_its_own_mode_states_at_least_the_error_measured_out_of_sample(results):
    """C-06, C-07 are the out-of-sample pairs of one mode (AReaL: no constant the model reads is fitted on its rows):
    the stated within-mode figure (data/rl_calibration.toml calibrate_within_mode_error) is at least their recomputed
    median |error| and within 5 points of it, its share within ±25% is theirs, and a plan calibrated within its mode
    states the larger of it and the in-sample sibling pairs' figure (8.6%, data/prediction_errors.toml), with both
    named in its source."""
    from tcocalc.catalog.calibration import prediction_errors
    from tcocalc.rl.solve import WITHIN_MODE_PAIRS

    assert WITHIN_MODE_PAIRS == WITHIN
    rl, median = rl_calibration(), _stated_against_pairs(results, WITHIN, "calibrate_within_mode")
    stated = max(rl["calibrate_within_mode_error"], prediction_errors()["calibrated"]["median_abs_error"])
    for pid in WITHIN:
        trust = results[pid][2].details["trust"]
        assert trust["basis"] == "calibrated" and trust["typical_error"] == stated, (pid, trust)
        assert trust["typical_error"] >= median - 0.005
        assert "C-06" in trust["source"] and "in-sample" in trust["source"]


def test_a_plan_carried_across_modes_says_so_and_states_the_error_measured_on_these_pairs(results):
    """C-01..C-05: every plan that applies the factors says it was carried across modes and states the pairs'
    median |error|; the stated figure (data) is at least the recomputed median and within 5 points of it, and its
    share within ±25% is the recomputed one."""
    rl = rl_calibration()
    _stated_against_pairs(results, ACROSS, "calibrate_across_modes")
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


def test_pilots_without_lengths_correct_the_assumed_responses_and_keep_their_trainers_below_the_ceiling(results):
    """C-01's and C-05's pilots (verl colocated 7B on 16 H20, 749 s; AReaL v0.3 synchronous 7B on 96 + 96 H800,
    207.7 s) run in half the model's step under the lengths their scenarios assume (means 3,000 and 8,000 tokens, no
    source gives them). With stage factors only, the fit put both trainers at the MFU ceiling (0.75) and the rest in
    the engine, and the trainer-bound targets came out +58% and +47%. The responses factor (their logs give no length)
    takes the part every stage shares: the lengths come out about half the assumed ones, the trainers stay below the
    ceiling, and the carried plans land within ±36% and ±26% (C-05 +13% until its AReaL scenario paid the disk
    reload its code does, 2026-12-07: about 19 s of the pilot's step, and its weakly determined responses factor went
    x0.59 -> x0.37; docs/calibration.md, Across modes). A length factor changes the tokens, not the time per
    token, so the target's busy MFU under the carried factors is the pilot's calibrated one where the training
    factor carries (same model, trainer hardware and framework) [hand-derived: MFU = FLOPs(tokens) / (t(tokens) x
    k_train), both linear in the tokens]."""
    ceiling = rl_calibration()["calibrate_mfu_ceiling"]
    for pid, bound in (("C-01", 0.40), ("C-05", 0.27)):
        err, cal, report = results[pid]
        assert cal.calibrated, (pid, cal.misfit)
        assert 0.3 < cal.factor("responses") < 0.8, pid
        assert report.details["calibration"]["factors"]["responses"] == pytest.approx(cal.factor("responses"))
        pilot = tc.evaluate(cal.scenario, advice=False).metrics["trainer_mfu_busy"]
        assert pilot < 0.9 * ceiling, pid
        assert report.metrics["trainer_mfu_busy"] == pytest.approx(pilot, rel=0.02), pid  # C-05: 0.550, 0.554
        assert abs(err) < bound, (pid, err)


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
