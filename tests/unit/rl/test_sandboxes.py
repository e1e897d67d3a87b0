"""The sandbox stage (tcocalc/rl/sandboxes.py, docs/rl-modeling.md §7), tested on its own with hand-made flows,
and SBX-02 through the whole model."""

import math
from types import SimpleNamespace

import numpy as np
import pytest

import tcocalc as tc
from tcocalc.rl.sandboxes import ramp_hours, sandbox_load
from tests.conftest import ROOT


def load(name):
    return tc.load_scenario(ROOT / "scenarios" / f"{name}.toml")


FLOW = SimpleNamespace(step_s=np.array([10.0, 10.0]), in_flight=np.array([100.0, 400.0]),
                       sandbox_share=np.array([0.5, 0.5]))
USES = SimpleNamespace(uses_sandbox=True)


def test_live_sandboxes_are_littles_law_capped_by_the_concurrency_limit():
    """Live = in flight × the share of its life a trajectory holds a started sandbox: 100·0.5 = 50 and
    400·0.5 = 200, the second capped at max_concurrency = 96."""
    scn = load("gb300_agentic_96")
    assert scn.sandbox.max_concurrency == 96
    assert sandbox_load(scn, USES, FLOW).tolist() == [50.0, 96.0]
    uncapped = scn.with_values({"sandbox.max_concurrency": 0})
    assert sandbox_load(uncapped, USES, FLOW).tolist() == [50.0, 200.0]


def test_a_workload_without_sandboxes_holds_none():
    assert sandbox_load(load("default"), SimpleNamespace(uses_sandbox=False), FLOW).tolist() == [0.0, 0.0]


def test_the_ramp_starts_sandboxes_in_waves():
    """⌈C/K_start⌉ waves of t_start, each start tried 1/(1 − p_fail) times: ⌈300/128⌉ = 3 waves of 60 s with a
    quarter failing, 3·60/0.75 = 240 s."""
    scn = load("gb300_agentic_96").with_values({"sandbox.startup_s": 60.0, "sandbox.failure_rate": 0.25})
    assert scn.sandbox.max_starting == 128
    assert ramp_hours(scn, USES, 300.0) == pytest.approx(240.0 / 3600)
    assert ramp_hours(scn.with_values({"sandbox.startup_s": 0.0}), USES, 300.0) == 0.0


@pytest.mark.reference
def test_sbx02_gb300_960_start_tail_about_an_hour():
    """SBX-02: ⌈960/128⌉·300 s = 40 min before retries, ≈1 h with failures (a third of starts fail:
    1.5 attempts each). In steady state the 960 scenario is bound by the start rate (128 starting at once,
    450 s per successful start), so fewer than 960 sandboxes are ever live; the run's ramp follows the same
    rule for the sandboxes it does bring up."""
    attempts = 1 / (1 - 0.33)
    assert math.ceil(960 / 128) * 300 == 2400
    assert math.ceil(960 / 128) * 300 * attempts / 3600 == pytest.approx(1.0, abs=0.15)
    r960 = tc.evaluate(load("gb300_agentic_960"))
    m = r960.metrics
    keep = 1 - m["discarded_fraction"]
    start_rate_cap = keep * 128 / (300 * attempts)           # trained samples/s the start limit allows
    assert m["useful_samples_per_s"] == pytest.approx(start_rate_cap, rel=1e-6)
    live = m["sandbox_concurrency"]
    assert 96 < live < 960
    steady_h = m["step_time_s"] * r960.scenario.workload.steps / 3600
    ramp_h = m["run_hours"] - steady_h
    assert ramp_h == pytest.approx(math.ceil(live / 128) * 300 * attempts / 3600, rel=1e-3)
    r96 = tc.evaluate(load("gb300_agentic_96"))
    # At 96 the concurrency cap binds: 96 sandboxes starting or started, each trajectory spending its 1.5 s
    # start-up of a W_gen-long life starting, so 96·(1 − 1.5/W_gen) are live (the simulator gives the same).
    w_gen = r96.details["run"]["rollout_latency_s"]
    assert 290 < w_gen < 10_000  # 29 tool calls of 10 s plus decoding
    assert r96.metrics["sandbox_concurrency"] == pytest.approx(96 * (1 - 1.5 / w_gen), rel=1e-9)
    assert r96.metrics["sandbox_cpu_cores"] == pytest.approx(r96.metrics["sandbox_concurrency"] * 2)
    # The stall: ten times the sandboxes give less useful work than 96, since a third of the starts fail and a
    # group that loses a member after 1 + 2 retries is discarded whole: 1 - (1 - 0.33^3)^8 = 25% of rollouts.
    assert m["discarded_fraction"] >= 1 - (1 - 0.33 ** 3) ** 8 - 1e-9
    assert m["useful_samples_per_s"] < r96.metrics["useful_samples_per_s"]
