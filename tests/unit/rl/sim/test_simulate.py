"""The seeded discrete-event simulator against the analytical model (issue 5): a grid of 24 scenarios over
all five modes, response sigma 0.3 and 1.2, oversampling 0 and 0.5 (synchronous modes), with and without
tool calls; useful samples/s within 10% and trainer idle within 5 points."""

import itertools
import math

import pytest

import tcocalc as tc
from tcocalc.scenario import loads_scenario
from tests.conftest import ROOT

GRID_BASE = """
[model]
name = "Qwen3-8B"
[trainer]
hardware = "H100"
gpus = 8
[generator]
hardware = "H100"
gpus = 8
[workload]
prompts_per_step = 32
group_size = 8
prompt_tokens = 500
response_tokens_mean = 3000
response_tokens_sigma = {sigma}
response_tokens_max = 16384
turns = {turns}
observation_tokens_per_turn = 200
[workload.solve_rate]
never = 0.1
always = 0.1
[orchestration]
mode = "{mode}"
max_staleness = 2
oversampling = {over}
filter_zero_advantage = true    # the grid's regime (dynamic sampling); plain GRPO: see the test below
[sandbox]
tool_call_s = {tool}
startup_s = 1.0
"""

GRID = [(mode, sigma, over, tools)
        for mode, sigma, over, tools in itertools.product(["colocated", "sync", "one_step_off", "async", "inflight"],
                                                          [0.3, 1.2], [0.0, 0.5], [False, True])
        if not (over > 0 and mode in ("async", "inflight"))]


def grid_scenario(mode, sigma, over, tools):
    return loads_scenario(GRID_BASE.format(mode=mode, sigma=sigma, over=over, turns=4 if tools else 1,
                                           tool=5.0 if tools else 0.0))


def test_grid_has_at_least_24_scenarios_covering_every_mode():
    assert len(GRID) >= 24
    assert {g[0] for g in GRID} == {"colocated", "sync", "one_step_off", "async", "inflight"}


#: Regimes where the two disagree by design, with the tolerance that holds and why (docs/validation.md, "The
#: simulator against the closed form"). None since the closed form's tail rule follows the trainer's gate
#: (docs/rl-modeling.md §5.4): the heavy-tailed async regimes that ran 12-21% slower in the simulator agree within
#: 10%.
NAMED_REGIMES: dict = {}


def test_plain_grpo_async_heavy_tail_agrees():
    """Plain GRPO with a heavy tail under a bound of 2: the simulator holds the bound (finished members waiting
    for their group count against AReaL's admission, as in AReaL; before, they leaked and lags reached 7)."""
    scn = grid_scenario("async", 1.2, 0.0, False).with_values({"orchestration.filter_zero_advantage": False})
    ana = tc.evaluate(scn).metrics
    sim = tc.simulate(scn, steps=60, seed=0)
    assert sim.metrics["max_staleness_steps"] <= 2
    assert sim.metrics["useful_samples_per_s"] == pytest.approx(ana["useful_samples_per_s"], rel=0.10)


@pytest.mark.parametrize("mode,sigma,over,tools", GRID, ids=lambda v: str(v))
def test_simulation_agrees_with_the_analytical_model(mode, sigma, over, tools):
    scn = grid_scenario(mode, sigma, over, tools)
    sim = tc.simulate(scn, steps=40, seed=3)
    ana = sim.details["analytical"]
    assert sim.source == "simulation"
    tol, _why = NAMED_REGIMES.get((mode, sigma, over, tools), (0.10, ""))
    assert sim.metrics["useful_samples_per_s"] == pytest.approx(ana["useful_samples_per_s"], rel=tol)
    assert sim.metrics["trainer_idle_fraction"] == pytest.approx(ana["trainer_idle_fraction"], abs=0.05)


def test_deterministic_for_a_seed_and_different_across_seeds():
    scn = grid_scenario("async", 1.2, 0.0, True)
    a = tc.simulate(scn, steps=15, seed=7).metrics
    b = tc.simulate(scn, steps=15, seed=7).metrics
    c = tc.simulate(scn, steps=15, seed=8).metrics
    assert a == b
    assert a["step_time_s"] != c["step_time_s"]


def test_report_shape_timeline_and_staleness():
    scn = grid_scenario("async", 0.3, 0.0, False)
    r = tc.simulate(scn, steps=12, seed=1)
    assert list(r.metrics) == list(tc.METRIC_UNITS)
    for k, v in r.metrics.items():
        assert v is None or math.isfinite(v), k
    tl = r.details["timeline"]
    assert len(tl) == 12 and {"step", "start [s]", "end [s]", "step_time [s]", "trainer_busy [s]"} <= set(tl.columns)
    assert (tl["end [s]"] > tl["start [s]"]).all()
    st = r.details["staleness"]
    assert st.sum() == 12 * scn.workload.samples_per_step
    assert st.index.max() <= scn.orchestration.max_staleness + 1


def test_sync_staleness_is_zero_and_one_step_off_is_one():
    sync = tc.simulate(grid_scenario("sync", 0.3, 0.0, False), steps=10, seed=1)
    off = tc.simulate(grid_scenario("one_step_off", 0.3, 0.0, False), steps=10, seed=1)
    assert set(sync.details["staleness"].index) == {0}
    assert sync.metrics["mean_staleness_steps"] == 0.0
    assert off.metrics["mean_staleness_steps"] == pytest.approx(1.0, abs=0.05)


@pytest.mark.parametrize("steps", [0, -3, 2.5, True])
def test_bad_steps(steps):
    with pytest.raises(tc.ScenarioError, match="steps"):
        tc.simulate(grid_scenario("sync", 0.3, 0.0, False), steps=steps, seed=0)


def test_event_bound_names_the_limit():
    with pytest.raises(tc.InfeasibleError, match="event bound of 1,000"):
        tc.simulate(grid_scenario("async", 0.3, 0.0, False), steps=50, seed=0, max_events=1000)


def _refuse_to_run(monkeypatch):
    from tcocalc.rl.sim import engine as sim_engine

    def run(*_a, **_k):
        raise AssertionError("the engine ran")
    monkeypatch.setattr(sim_engine.Engine, "run", run)


@pytest.mark.parametrize("name,steps", [("gb300_agentic_960", 1_000_000),   # ran for hours; 2.5 GB, MemoryError
                                        ("glm5_h200_drift", 200_000)])      # phases: the whole run is estimated
def test_event_bound_is_checked_before_running(monkeypatch, name, steps):

    _refuse_to_run(monkeypatch)
    scn = tc.load_scenario(ROOT / "scenarios" / f"{name}.toml")
    with pytest.raises(tc.InfeasibleError, match=r"would simulate about [\d,]+ events .*raise max_events.*fewer "
                                                  r"steps \(about [\d,]+ fit\)"):
        tc.simulate(scn, steps=steps, seed=0)


def test_event_estimate_is_within_a_factor_of_two_of_the_run():
    from tcocalc.rl.sim.simulate import _estimated_events, _prepare

    for args in (("async", 0.3, 0.0, False), ("sync", 1.2, 0.5, True), ("one_step_off", 0.3, 0.0, True)):
        scn = grid_scenario(*args)
        run = tc.simulate(scn, steps=20, seed=0).details["events"]
        est = _estimated_events(scn, _prepare(scn).ws, 20)
        assert 0.5 <= run / est <= 2.0, (args, run, est)


def test_event_bound_still_holds_while_running(monkeypatch):
    from tcocalc.rl.sim import simulate as sim_module

    monkeypatch.setattr(sim_module, "_estimated_events", lambda *_a: 0.0)  # an estimate that is far too low
    with pytest.raises(tc.InfeasibleError, match="exceeded the event bound of 1,000 events after 1 of 50 steps"):
        tc.simulate(grid_scenario("async", 0.3, 0.0, False), steps=50, seed=0, max_events=1000)


@pytest.mark.parametrize("bound", [0, -1, 2.5, True])
def test_bad_max_events(bound):
    with pytest.raises(tc.ScenarioError, match="max_events"):
        tc.simulate(grid_scenario("sync", 0.3, 0.0, False), steps=5, seed=0, max_events=bound)


@pytest.mark.parametrize("steps", [1, 7, 50, 120])
def test_progress_reports_about_every_two_percent_and_changes_nothing(steps):
    scn = grid_scenario("async", 0.3, 0.0, True)
    calls = []
    with_bar = tc.simulate(scn, steps=steps, seed=4, progress=lambda done, total: calls.append((done, total)))
    assert with_bar.metrics == tc.simulate(scn, steps=steps, seed=4).metrics
    done = [d for d, _ in calls]
    assert {t for _, t in calls} == {steps}
    assert done[0] == 0 and done[-1] == steps and done == sorted(set(done))
    assert len(calls) <= 51
    assert max(b - a for a, b in itertools.pairwise(done)) <= max(1, -(-steps // 50))  # every ~2%: no long gap


def test_progress_spans_the_phases():
    text = GRID_BASE.format(mode="async", sigma=0.3, over=0.0, turns=1, tool=0.0)
    scn = loads_scenario(text.replace("group_size = 8", "group_size = 8\nsteps = 100", 1)
                         + "[[phases]]\nname = 'longer'\nstart_step = 40\nresponse_scale = 1.5\n")
    calls = []
    sim = tc.simulate(scn, steps=150, seed=0, progress=lambda done, total: calls.append((done, total)))
    assert set(sim.details["phases"]) == {"initial", "longer"}
    total = sim.details["steps"]
    assert {t for _, t in calls} == {total}
    done = [d for d, _ in calls]
    assert done[0] == 0 and done[-1] == total and done == sorted(set(done)) and len(calls) <= 51


def test_sandbox_failures_lose_rollouts():
    scn = grid_scenario("async", 0.3, 0.0, True)
    sb = scn.sandbox.model_copy(update={"failure_rate": 0.5, "retries": 0})
    r = tc.simulate(scn.model_copy(update={"sandbox": sb}), steps=10, seed=2)
    assert r.metrics["discarded_fraction"] > tc.simulate(scn, steps=10, seed=2).metrics["discarded_fraction"]
    assert r.metrics["sandbox_concurrency"] > 0


def test_phases_are_simulated_each_and_combined_like_the_analytical_report():

    scn = tc.load_scenario(ROOT / "scenarios" / "glm5_h200_drift.toml")
    sim = tc.simulate(scn, steps=20, seed=0)
    ana = sim.details["analytical"]
    assert set(sim.details["phases"]) == {"initial", "drift"}
    assert set(sim.details["timeline"]["phase"]) == {"initial", "drift"}
    # 2.6% apart at 20 steps since both count finished members of open groups against the bound (they were 10.2%
    # apart when only the simulator did)
    assert sim.metrics["useful_samples_per_s"] == pytest.approx(ana["useful_samples_per_s"], rel=0.10)
    assert sim.metrics["trainer_idle_fraction"] == pytest.approx(ana["trainer_idle_fraction"], abs=0.05)
    drift, initial = sim.details["phases"]["drift"], sim.details["phases"]["initial"]
    assert drift["step_time_s"] > initial["step_time_s"]


#: Issue 12's regimes beyond the grid (heavy tail, sigma 1.2): useful samples/s within 10% and trainer idle within
#: 5 points, unless named with the tolerance that holds and why.
STREAMED = {"orchestration.stream_minibatches": True, "orchestration.partial_rollout": True,
            "orchestration.max_staleness": 0.5, "trainer.minibatches_per_step": 4}
ISSUE12_REGIMES = {
    "fractional bound 0.5 with partial rollout": ("async", {"orchestration.max_staleness": 0.5,
                                                            "orchestration.partial_rollout": True}),
    "bound 4, long cap": ("async", {"orchestration.max_staleness": 4, "workload.response_tokens_max": 32768}),
    "4 optimizer updates per step": ("async", {"trainer.minibatches_per_step": 4}),
    "plain GRPO, sync": ("sync", {"orchestration.filter_zero_advantage": False}),
    "plain GRPO, colocated": ("colocated", {"orchestration.filter_zero_advantage": False}),
    "plain GRPO, one step off": ("one_step_off", {"orchestration.filter_zero_advantage": False}),
    "3:1 generator:trainer, async": ("async", {"generator.gpus": 24}),
    "3:1 generator:trainer, one step off": ("one_step_off", {"generator.gpus": 24}),
    # the trainer streams mini-batches with partial rollout (verl fully-async, docs/rl-modeling.md §5.6)
    "streamed mini-batches, bound 0.5": ("async", STREAMED),
    "streamed mini-batches, bound 2": ("async", {**STREAMED, "orchestration.max_staleness": 2.0}),
    "streamed mini-batches, bound 0": ("async", {**STREAMED, "orchestration.max_staleness": 0.0}),
    "streamed mini-batches, bound 0.5, plain GRPO": ("async", {**STREAMED,
                                                                "orchestration.filter_zero_advantage": False}),
}
ISSUE12_NAMED = {
    "streamed mini-batches, bound 2": (0.16, "the window counts the step's last samples as admitted one version "
                                             "per whole step of the bound, all at once; the simulator admits them as "
                                             "room opens and runs 14% slower"),
    "streamed mini-batches, bound 0": (0.60, "a bound of 0 admits exactly one batch per version, so with dynamic "
                                             "sampling every dropped group is regenerated after it ends, round after "
                                             "round; the window counts one round (the batch's longest) and the "
                                             "simulator runs 55% slower (verl's published bound-0 step, RL-05, lies "
                                             "between: +7% for the closed form, +36% for the simulator)"),
    "streamed mini-batches, bound 0.5, plain GRPO": (0.30, "the window decodes the step's samples from its push, "
                                                           "but a third of them were admitted in the step before "
                                                           "and are partly decoded: the simulator runs 20-29% "
                                                           "faster (with dynamic sampling its regenerated groups "
                                                           "offset the head start: within 6%)"),
}


@pytest.mark.parametrize("name", sorted(ISSUE12_REGIMES))
def test_issue12_regimes_agree(name):
    mode, over = ISSUE12_REGIMES[name]
    scn = grid_scenario(mode, 1.2, 0.0, False).with_values(over)
    ana = tc.evaluate(scn).metrics
    sim = tc.simulate(scn, steps=60, seed=0)
    tol = ISSUE12_NAMED.get(name, (0.10, ""))[0]
    idle = 0.07 if name in ISSUE12_NAMED else 0.05  # a named regime's idle follows its throughput gap
    assert sim.metrics["useful_samples_per_s"] == pytest.approx(ana["useful_samples_per_s"], rel=tol)
    assert sim.metrics["trainer_idle_fraction"] == pytest.approx(ana["trainer_idle_fraction"], abs=idle)


# Issue 31 item 3: two regimes where the closed form and the simulator were 3-15x apart, now on the grid.
#: A staleness bound under one step with dynamic sampling (async, inflight): nothing is admitted while the trainer
#: trains, so the window is a chain of refills per group slot (rollouts.refill_chain_window_tokens); the closed form
#: spread the refills over the whole step and ran away (12-15x slower than the simulator on this grid).
UNDER_ONE_STEP = [(mode, sigma, tools, eta) for mode, sigma, tools, eta in
                  itertools.product(["async"], [0.3, 1.2], [False, True], [0.0, 0.5])] + [("inflight", 1.2, True, 0.5)]
#: A sandbox concurrency cap below a synchronous round (every synchronous mode): the round is list-scheduled on the
#: cap's sandboxes (steps/sync.py, _sandbox_round_s); the closed form multiplied the whole round, its tail included,
#: by the waves (1.5-4.7x slower than the simulator on this grid).
SANDBOX_CAPPED = list(itertools.product(["colocated", "sync", "one_step_off", "periodic"], [0.3, 1.2]))


@pytest.mark.parametrize("mode,sigma,tools,eta", UNDER_ONE_STEP, ids=lambda v: str(v))
def test_a_bound_under_one_step_with_dynamic_sampling_agrees(mode, sigma, tools, eta):
    scn = grid_scenario(mode, sigma, 0.0, tools).with_values({"orchestration.max_staleness": eta})
    sim = tc.simulate(scn, steps=60, seed=3)
    ana = sim.details["analytical"]
    assert sim.metrics["useful_samples_per_s"] == pytest.approx(ana["useful_samples_per_s"], rel=0.10)
    assert sim.metrics["trainer_idle_fraction"] == pytest.approx(ana["trainer_idle_fraction"], abs=0.05)


@pytest.mark.parametrize("mode,sigma", SANDBOX_CAPPED, ids=lambda v: str(v))
def test_a_sandbox_cap_below_a_synchronous_round_agrees(mode, sigma):
    scn = grid_scenario(mode, sigma, 0.0, True).with_values({"sandbox.max_concurrency": 32})
    sim = tc.simulate(scn, steps=40, seed=3)
    ana = sim.details["analytical"]
    assert sim.metrics["useful_samples_per_s"] == pytest.approx(ana["useful_samples_per_s"], rel=0.10)
    assert sim.metrics["trainer_idle_fraction"] == pytest.approx(ana["trainer_idle_fraction"], abs=0.05)


def test_the_shipped_scenarios_of_the_report_agree():
    """The two cases of the report: the agentic GB300 rack in sync mode (analytical 0.036 useful samples/s against
    0.095 simulated, above the report's own generator capacity) and the SemiAnalysis run in async with a bound of
    0.5 and dynamic sampling (26,306 s a step against 2,466 s simulated, 1,203 s in sync)."""
    agentic = tc.load_scenario("gb300_agentic_96").with_cluster(mode="sync")
    sim = tc.simulate(agentic, steps=12, seed=0)
    ana = sim.details["analytical"]
    assert sim.metrics["useful_samples_per_s"] == pytest.approx(ana["useful_samples_per_s"], rel=0.10)
    assert sim.metrics["useful_samples_per_s"] <= ana["generator_capacity_samples_per_s"] * 1.10
    semi = tc.load_scenario("semianalysis_qwen3_235b_h200").with_values({"orchestration.max_staleness": 0.5})
    sim = tc.simulate(semi, steps=40, seed=0)
    ana = sim.details["analytical"]
    assert sim.metrics["step_time_s"] == pytest.approx(ana["step_time_s"], rel=0.10)
    sync = tc.evaluate(semi.with_cluster(mode="sync")).metrics["step_time_s"]
    assert ana["step_time_s"] < 3 * sync  # no cliff: about 2.2x the synchronous step, as the simulator says


def test_the_refill_chain_against_monte_carlo():
    """E[max of n chains of Geometric(keep) groups, each its slowest of G lengths plus c]: the lattice law against a
    seeded Monte Carlo, and its two limits (keep = 1: the batch's longest; keep -> 0: exponential, E[A]/keep·H_n)."""
    import numpy as np

    from tcocalc.rl.rollouts import refill_chain_window_tokens

    rng = np.random.default_rng(0)
    for mu, sigma, g, keep, n, cap, c in [(8.0, 0.3, 8, 0.62, 32, 16384.0, 130.0), (7.3, 1.2, 8, 0.5, 4, 16384.0, 0.0),
                                          (9.5, 0.4, 16, 0.39, 64, 32768.0, 0.0), (8.0, 0.0, 4, 0.9, 10, None, 0.0)]:
        ends = []
        for _ in range(1500):
            total, active = np.zeros(n), np.ones(n, bool)
            while active.any():
                d = np.exp(mu + sigma * rng.standard_normal((int(active.sum()), g))).max(axis=1)
                total[active] += (np.minimum(d, cap) if cap else d) + c
                active[np.flatnonzero(active)[rng.random(int(active.sum())) < keep]] = False
            ends.append(total.max())
        exact = refill_chain_window_tokens(mu, sigma, g, keep, n, cap, [c])[0]
        assert exact == pytest.approx(np.mean(ends), rel=0.03), (mu, sigma, keep)
    assert refill_chain_window_tokens(8.0, 0.0, 4, 1.0, 10, None, [0.0])[0] == pytest.approx(math.exp(8.0), rel=1e-3)
    mean_a = math.exp(8.0)
    harmonic = sum(1.0 / k for k in range(1, 101))
    assert refill_chain_window_tokens(8.0, 0.0, 4, 1e-4, 100, None, [0.0])[0] == pytest.approx(
        mean_a / 1e-4 * harmonic, rel=0.02)
