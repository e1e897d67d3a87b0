"""Issue 40 item 7: a simulation is bounded before it runs. The event estimate
(:func:`tcocalc.simulated_events_estimate`) bounds the events a run handles from above (within 2%, its stated
band), so the CLI's default steps (:func:`tcocalc.cli.run.default_sim_steps`, within ``DEFAULT_SIM_EVENTS``) keep their
budget and a request over ``max_events`` is refused before anything runs, naming the bound and the steps that fit.
Until the estimate counted a synchronous round's over-provisioning, GLM-5 in sync mode ran 33 default steps and 3.97 M
events against a 3.5 M budget (estimated 3.30 M). No timing here: benchmarks/run.py ``bounded()`` times the run."""

import re

import pytest

import tcocalc as tc
from tcocalc.cli.run import DEFAULT_SIM_EVENTS, default_sim_steps
from tcocalc.rl.sim import simulate as sim_module
from tcocalc.rl.sim.engine import THROUGHPUT_TOLERANCE, Engine, rate_standard_error
from tests.unit.rl.sim.test_simulate import grid_scenario

ESTIMATE_SLACK = 0.02
"""How far the events counted may exceed the estimate [1] (its stated band: 0.44-1.02x the estimate)."""


def glm5_sync():
    return tc.load_scenario("scenarios/glm5_h200_drift.toml").with_values({"orchestration.mode": "sync"})


def test_glm5_sync_default_steps_keep_the_event_budget_and_their_tolerance():
    """The bounded path: the CLI's default steps of GLM-5 in sync mode handle at most the estimate (+2%) and the
    budget, and the run is long enough for the simulator's stated tolerance: two batch-means standard errors of
    each phase's steady-state step time within :data:`THROUGHPUT_TOLERANCE`."""
    scn = glm5_sync()
    steps = default_sim_steps(scn)
    estimate = tc.simulated_events_estimate(scn, steps)
    assert estimate <= DEFAULT_SIM_EVENTS
    rep = tc.simulate(scn, steps=steps, seed=0)
    assert rep.simulation.events <= estimate * (1.0 + ESTIMATE_SLACK), (rep.simulation.events, estimate)
    assert rep.simulation.events <= DEFAULT_SIM_EVENTS
    timeline = rep.details["timeline"]
    for phase, rows in timeline.groupby("phase"):
        t = rows["step_time [s]"].to_numpy()
        assert 0 < 2 * rate_standard_error(t[max(1, t.size // 5):]) <= THROUGHPUT_TOLERANCE, phase


@pytest.mark.parametrize("mode", ["sync", "colocated", "one_step_off"])
def test_the_estimate_bounds_a_synchronous_round_from_above(mode):
    """A synchronous round dispatches two standard deviations of the shortfall more than B/keep (the grid's agentic
    scenario with oversampling 0: 1.22x the old estimate was counted)."""
    scn = grid_scenario(mode, 1.2, 0.0, True)
    rep = tc.simulate(scn, steps=10, seed=0)
    estimate = tc.simulated_events_estimate(scn, 10)
    assert rep.simulation.events <= estimate * (1.0 + ESTIMATE_SLACK), (rep.simulation.events, estimate)
    assert rep.simulation.events >= 0.44 * estimate  # the band's lower end: not a blanket overestimate either


def test_more_steps_than_the_budget_are_refused_before_running(monkeypatch):
    """33 steps of GLM-5 sync (the old default) under the 3.5 M budget: InfeasibleError before any event, naming
    the bound and how many steps fit (and those do fit)."""
    def never(*_a, **_k):
        raise AssertionError("the engine ran: the bound was not checked before running")

    monkeypatch.setattr(Engine, "run", never)
    scn = glm5_sync()
    with pytest.raises(tc.InfeasibleError, match="event bound of 3,500,000") as err:
        sim_module.simulate(scn, steps=33, max_events=DEFAULT_SIM_EVENTS)
    fit = int(re.search(r"about ([\d,]+) fit", str(err.value)).group(1).replace(",", ""))
    assert 0 < fit < 33
    assert tc.simulated_events_estimate(scn, fit) <= DEFAULT_SIM_EVENTS
