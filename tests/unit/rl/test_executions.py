"""The cap on tool calls executing at once, ``[sandbox] max_executing`` (tcocalc/rl/sandboxes.py, docs/rl-modeling.md
§7.1): the Erlang-C wait against hand-derived values, the throughput cap, the refusal of a bad value, and the
simulator's FIFO queue against the closed form on a small scenario with the cap binding."""

import math
import tomllib

import numpy as np
import pytest

import tcocalc as tc
from tcocalc.rl.sandboxes import erlang_c, execution_wait_s
from tests.conftest import ROOT

CASE = ROOT / "data" / "validation" / "frameworks"


def retool(name: str, cap: int) -> tc.Scenario:
    """A ReTool development-set case (3 tool calls of 2 s per trajectory) with ``max_executing = cap``."""
    with open(CASE / f"{name}.toml", "rb") as f:
        data = tomllib.load(f)
    data["sandbox"]["max_executing"] = cap
    return tc.scenario_from_dict(data)


def test_erlang_c_reproduces_a_hand_derived_queue():
    """c = 3 executors, a = 2 erlang: Erlang B = (2³/3!)/(1 + 2 + 2 + 2³/3!) = 4/19, Erlang C = (4/19)/(1 − (2/3)
    (15/19)) = 4/9; calls of s = 2 s at λ = 1/s wait C·s/(c − a) = 8/9 s on average (Kleinrock Vol. 1 §3.5).
    Tolerance 1e-12 on the probability, 1e-6 s on the wait."""
    assert float(erlang_c(3, 2.0)) == pytest.approx(4 / 9, abs=1e-12)
    assert float(execution_wait_s(3, 1.0, 2.0, 1e9)) == pytest.approx(8 / 9, abs=1e-6)


def test_erlang_c_matches_the_sum_at_a_large_cap():
    """At ReTool's 128 executors and 120 erlang the closed form (incomplete gamma) equals Erlang C summed term by
    term in logarithms, within 1e-9 relative; no load gives 0."""
    c, a = 128, 120.0
    logs = [k * math.log(a) - math.lgamma(k + 1) for k in range(c + 1)]
    top = max(logs)
    b = math.exp(logs[-1] - top) / math.fsum(math.exp(v - top) for v in logs)
    expected = b / (1 - a / c * (1 - b))
    assert float(erlang_c(c, a)) == pytest.approx(expected, rel=1e-9)
    assert float(erlang_c(c, 0.0)) == 0.0


def test_the_wait_is_finite_at_and_above_the_cap():
    """At and above a = c the open queue has no steady state; the wait is the finite population's: ``L_max/λ``
    (here 100 calls waiting at most, λ = 10/s: 10 s), never inf or NaN."""
    w = execution_wait_s(4, np.array([2.0, 4.0, 40.0]), 1.0, 100.0)
    assert np.all(np.isfinite(w))
    assert w[1] == pytest.approx(100 / 4.0) and w[2] == pytest.approx(100 / 40.0)


def test_no_cap_and_a_cap_far_above_the_load_leave_the_step_unchanged():
    """0 (the default) is no cap; a cap of 100 million executors adds a wait below 1e-9 s."""
    base = tc.evaluate(retool("verl-retool-7b-h20-coloc-32", 0)).metrics["step_time_s"]
    far = tc.evaluate(retool("verl-retool-7b-h20-coloc-32", 100_000_000)).metrics["step_time_s"]
    assert far == pytest.approx(base, abs=1e-9)


@pytest.mark.parametrize("name", ["verl-retool-7b-h20-coloc-32", "verl-retool-7b-h20-async-16x16"])
def test_the_executors_cap_throughput_and_are_named(name):
    """16 executors serve at most 16/(3·2 s) = 2.67 trajectories/s: useful samples/s stay at or below that
    (keep = 1, within 1e-9), and the binding limit is ``sandbox_executions``; the advice names the key."""
    rep = tc.evaluate(retool(name, 16))
    assert rep.metrics["useful_samples_per_s"] <= 16 / (3 * 2.0) * (1 + 1e-9)
    assert "sandbox_executions" in rep.diagnosis.binding_limits["run"]
    assert any("sandbox.max_executing" in line for line in rep.advice)


def test_a_synchronous_round_takes_at_least_its_calls_over_the_executors():
    """Colocated, 1,024 trajectories × 3 calls × 2 s on 16 executors: generation alone takes at least
    1024·6/16 = 384 s, so the step exceeds it."""
    rep = tc.evaluate(retool("verl-retool-7b-h20-coloc-32", 16))
    assert rep.metrics["step_time_s"] >= 1024 * 6 / 16


@pytest.mark.parametrize("bad", [-1, 2.5, True, "128"])
def test_a_bad_cap_is_refused_naming_the_field(bad):
    with pytest.raises(tc.ScenarioError) as e:
        retool("verl-retool-7b-h20-coloc-32", bad)
    assert e.value.field == "sandbox.max_executing"


@pytest.mark.parametrize("cap", [128, 64, 16])
def test_the_simulator_queue_agrees_with_the_closed_form(cap):
    """The simulator runs at most ``max_executing`` calls at once and queues the rest first come first served.
    On the colocated ReTool case (1,024 trajectories a step; near the cap at 128, binding at 64 and 16) its step
    time is within 10% of the closed form's (measured: 1%, 7%, 6%), and its throughput stays under the cap."""
    scn = retool("verl-retool-7b-h20-coloc-32", cap)
    a = tc.evaluate(scn).metrics
    s = tc.simulate(scn, steps=6, seed=1).metrics
    assert s["step_time_s"] == pytest.approx(a["step_time_s"], rel=0.10)
    assert s["useful_samples_per_s"] <= cap / (3 * 2.0) * (1 + 1e-9)


@pytest.mark.parametrize("mode", ["colocated", "sync", "one_step_off", "async", "inflight", "periodic"])
def test_every_mode_stays_finite_under_the_cap_and_slows_with_it(mode):
    """gb300_agentic_96 (96 live sandboxes) in each mode: a tighter cap never speeds the step (8 ≥ 64 ≥ none,
    within 1e-9), every metric stays finite, useful samples/s stay under the executors' c/((K − 1)·s)
    trajectories/s, and at 8 executors the binding limit names them."""
    from tcocalc.rl.phases import workload_stats

    scn = tc.load_scenario(ROOT / "scenarios" / "gb300_agentic_96.toml").with_values({"orchestration.mode": mode})
    ws = workload_stats(scn)
    calls, s = ws.turns - 1, ws.tool_s / (ws.turns - 1)
    steps = []
    for cap in (0, 64, 8):
        rep = tc.evaluate(scn.with_values({"sandbox.max_executing": cap}))
        m = rep.metrics
        assert all(math.isfinite(v) for v in m.values() if isinstance(v, float))
        if cap:
            assert m["useful_samples_per_s"] <= cap / (calls * s) * (1 + 1e-9)
        steps.append(m["step_time_s"])
    assert steps[0] <= steps[1] * (1 + 1e-9) and steps[1] <= steps[2] * (1 + 1e-9)
    assert "sandbox_executions" in rep.diagnosis.binding_limits["run"]
