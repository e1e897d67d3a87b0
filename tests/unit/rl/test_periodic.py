"""Periodic asynchrony (issue 15, item 4; arXiv 2511.18871, docs/rl-modeling.md §5.5): on-policy batches with
the trainer consuming rollouts as they finish. It sits strictly between sync and one_step_off on a long-tailed
workload, its trajectory staleness is 0, and the simulator agrees with the closed form (useful samples/s within
10%, trainer idle within 5 points, as tests/unit/rl/sim/test_simulate.py's grid)."""

import math

import numpy as np
import pytest

import tcocalc as tc
from tcocalc.rl.cluster import resolve
from tcocalc.rl.solve import phase_results
from tcocalc.scenario import Scenario, loads_scenario

# A long-tailed math workload (sigma 1.2) with a small trainer, so training and generation both matter. The
# published claim: periodic asynchrony gives about 2x the throughput of synchronous RL on NPUs (arXiv
# 2511.18871); here the gain over sync is ~1.33x (the trainer idles ~60% even in sync).
LONG_TAIL = """
[model]
name = "Qwen3-8B"
[trainer]
hardware = "H100"
gpus = 2
[generator]
hardware = "H100"
gpus = 16
[workload]
prompts_per_step = 32
group_size = 8
prompt_tokens = 500
response_tokens_mean = 3000
response_tokens_sigma = {sigma}
response_tokens_max = 16384
[workload.solve_rate]
never = 0.1
always = 0.1
[orchestration]
mode = "{mode}"
[sandbox]
startup_s = 1.0
"""


def scenario(mode: str, sigma: float = 1.2):
    return loads_scenario(LONG_TAIL.format(mode=mode, sigma=sigma))


def test_periodic_is_a_mode():
    assert "periodic" in Scenario.choices("orchestration.mode")


@pytest.mark.parametrize("sigma", [1.2, 0.3])
def test_periodic_sits_strictly_between_sync_and_one_step_off(sigma):
    x = {m: tc.evaluate(scenario(m, sigma)).metrics["useful_samples_per_s"]
         for m in ("sync", "periodic", "one_step_off")}
    assert x["sync"] < x["periodic"] < x["one_step_off"]


def test_long_tail_gain_over_sync_hand_derived():
    """At this split (hand check of §5.5): periodic ≈ 1.33x sync, one_step_off ≈ 1.44x."""
    x = {m: tc.evaluate(scenario(m)).metrics["useful_samples_per_s"] for m in ("sync", "periodic", "one_step_off")}
    assert x["periodic"] / x["sync"] == pytest.approx(1.33, abs=0.03)
    assert x["one_step_off"] / x["sync"] == pytest.approx(1.44, abs=0.03)


def test_step_time_bounds_from_the_parts():
    """max(t_gen, t_train) + t_sync < T_step ≤ t_gen + t_train + t_sync (§5.5)."""
    scn = scenario("periodic")
    res = phase_results(scn, resolve(scn), [2], [16])[0]
    r, f = res.rates, res.flow
    t_gen = r.batch / f.generator_capacity
    assert np.all(f.step_s > np.maximum(t_gen, r.t_train) + r.t_sync)
    assert np.all(f.step_s <= t_gen + r.t_train + r.t_sync + 1e-9)
    assert np.all(np.isfinite(f.step_s))


def test_trajectory_staleness_is_zero():
    m = tc.evaluate(scenario("periodic")).metrics
    assert m["mean_staleness_steps"] == 0.0
    assert m["max_staleness_steps"] == 0.0


def test_simulation_agrees_with_the_closed_form():
    sim = tc.simulate(scenario("periodic"), steps=40, seed=3)
    ana = sim.details["analytical"]
    assert sim.metrics["useful_samples_per_s"] == pytest.approx(ana["useful_samples_per_s"], rel=0.10)
    assert sim.metrics["trainer_idle_fraction"] == pytest.approx(ana["trainer_idle_fraction"], abs=0.05)
    assert sim.metrics["mean_staleness_steps"] == 0.0
    assert all(math.isfinite(v) for v in sim.metrics.values() if isinstance(v, float))


def test_simulated_periodic_beats_simulated_sync():
    x = {m: tc.simulate(scenario(m), steps=30, seed=1).metrics["useful_samples_per_s"] for m in ("sync", "periodic")}
    assert x["periodic"] > 1.2 * x["sync"]


#: As tests/unit/rl/sim/test_simulate.py's named regime for one_step_off: with tool calls and a light tail the round
#: is set by the slowest trajectory's interleaved decode and tool time, which the closed form adds once; here the
#: simulation runs ~11% faster (sync: ~9% faster in the same regime).
NAMED = {(0.3, 0.5, True): 0.15}


@pytest.mark.parametrize("sigma,over,tools", [(s, o, t) for s in (0.3, 1.2) for o in (0.0, 0.5) for t in (False, True)])
def test_simulation_grid_agrees_with_the_closed_form(sigma, over, tools):
    from tests.unit.rl.sim.test_simulate import grid_scenario

    sim = tc.simulate(grid_scenario("periodic", sigma, over, tools), steps=40, seed=3)
    ana = sim.details["analytical"]
    tol = NAMED.get((sigma, over, tools), 0.10)
    assert sim.metrics["useful_samples_per_s"] == pytest.approx(ana["useful_samples_per_s"], rel=tol)
    assert sim.metrics["trainer_idle_fraction"] == pytest.approx(ana["trainer_idle_fraction"], abs=0.05)
