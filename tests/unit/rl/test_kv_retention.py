"""A multi-turn trajectory's KV across its tool calls (docs/rl-modeling.md §4.12; issue 32 item 1): the LRU prefix
cache's steady state by hand, the engines' documented behaviour it stands for, the framework presets, and the
simulator against the closed form on agentic multi-turn runs with few engines."""

from __future__ import annotations

import math

import numpy as np
import pytest

import tcocalc as tc
from tcocalc.errors import ScenarioError
from tcocalc.rl.cluster import resolve
from tcocalc.rl.kv_retention import TurnShape, lru_residency, miss_tokens
from tcocalc.rl.rollouts import multiturn_prefill_tokens
from tcocalc.scenario import loads_scenario

AGENTIC = """
[model]
name = "Qwen3-8B"
[trainer]
hardware = "H100"
gpus = 8
[generator]
hardware = "H100"
gpus = {gpus}
tp = 1
kv_retention = "{retention}"
[workload]
prompts_per_step = 64
group_size = 8
prompt_tokens = 4000
response_tokens_mean = 8000
response_tokens_p99 = 24000
response_tokens_max = 32768
turns = 10
observation_tokens_per_turn = 1500
steps = 200
[workload.solve_rate]
never = 0.15
always = 0.15
[orchestration]
mode = "{mode}"
max_staleness = 2
{extra}
[sandbox]
tool_call_s = 5.0
startup_s = 1.0
"""


def agentic(mode="sync", gpus=2, retention="lru", extra=""):
    return loads_scenario(AGENTIC.format(mode=mode, gpus=gpus, retention=retention, extra=extra))


def _rates(report):
    return report.details["run"]["rates"]


SHAPE = TurnShape(slots=100.0, context=20_000.0, turns=10, tool_s=5.0, generated=8_000.0, cached=17_500.0,
                  missed=miss_tokens(4_000.0, 800.0 + 1_500.0, 10), t0=0.01, t1=0.0002,
                  prefill_tokens_per_s=40_000.0)


def test_missed_history_is_the_uncached_less_the_cached_prefill():
    """Every return from a tool that misses prefills its history again: Σ_{k=1}^{K−1} (P0 + (k−1)Δ) =
    (K−1)·P0 + Δ(K−1)(K−2)/2, Fireworks' multi-turn cost without caching less the one with it (MT-01). Hand:
    P0 = 4,000, Δ = 2,300, K = 10: 9·4,000 + 2,300·36 = 118,800 tokens."""
    assert miss_tokens(4_000.0, 2_300.0, 10) == pytest.approx(118_800.0)
    assert miss_tokens(4_000.0, 2_300.0, 10) == pytest.approx(
        multiturn_prefill_tokens(4_000.0, 2_300.0, 10, caching=False)
        - multiturn_prefill_tokens(4_000.0, 2_300.0, 10, caching=True))
    assert miss_tokens(4_000.0, 2_300.0, 1) == 0.0


def test_a_pool_that_holds_every_history_keeps_them_all():
    """20 trajectories on 100 KV slots: a turn runs 800 tokens at t(b) and waits 5 s, so b = 20·φ; the free queue
    holds 100 − b slots of 20,000 tokens against the instance's few thousand tokens allocated per tool wait, so
    every return hits (h = 1 to 1e-9) and no history is prefilled again: the "pinned" state (§4.7)."""
    res = lru_residency(SHAPE, np.array([20.0]))
    b = float(res.decoding[0])
    t_run = 800.0 * (0.01 + 0.0002 * b)
    assert b == pytest.approx(20.0 * t_run / (t_run + 5.0), rel=1e-9)
    assert float(res.hit[0]) == pytest.approx(1.0, abs=1e-9)
    assert float(res.miss_s[0]) == pytest.approx(0.0, abs=1e-6)


def test_offering_more_than_the_slots_fill_evicts_every_history():
    """1,000 trajectories on 100 slots: running sequences fill the pool (b = 100), the free queue is empty and every
    return prefills its history again (h = 0), 118,800 tokens a trajectory at 40,000 tokens/s = 2.97 s of the
    instance's time: the collapse prime-rl's admission control is there to avoid (PrimeIntellect-ai/prime-rl
    @559b44772e47:docs/inference.md: "engines evict prefix cache, re-prefill the evicted work, and throughput
    collapses"; verl-project/uni-agent#122: the next turn re-prefills the whole history)."""
    res = lru_residency(SHAPE, np.array([1_000.0]))
    assert float(res.decoding[0]) == pytest.approx(100.0)
    assert float(res.hit[0]) == 0.0
    assert float(res.miss_s[0]) == pytest.approx(118_800.0 / 40_000.0)


def test_hits_fall_as_the_offered_load_passes_the_slots():
    """Between the two, the hit rate falls monotonically with what is offered, and a fixed hit rate is honoured."""
    offered = np.array([10.0, 50.0, 90.0, 100.0, 104.0, 110.0, 200.0])
    h = lru_residency(SHAPE, offered).hit
    assert np.all(np.diff(h) <= 1e-12) and h[0] == pytest.approx(1.0) and h[-1] == 0.0
    fixed = lru_residency(SHAPE, offered, hit=0.5)
    assert np.all(fixed.hit == 0.5)
    assert np.all(fixed.miss_s == pytest.approx(0.5 * SHAPE.missed / SHAPE.prefill_tokens_per_s))


def test_single_turn_and_tool_free_trajectories_never_miss():
    one = TurnShape(**{**SHAPE.__dict__, "turns": 1})
    assert np.all(lru_residency(one, np.array([500.0])).hit == 1.0)
    instant = TurnShape(**{**SHAPE.__dict__, "tool_s": 0.0})
    assert np.all(lru_residency(instant, np.array([500.0])).miss_s == 0.0)


def test_presets_keep_what_their_engines_and_orchestrators_do():
    """vLLM and SGLang free a waiting trajectory's blocks into an evictable LRU queue (every preset's engine);
    prime-rl's orchestrator caps its episodes in flight at the engines' KV capacity, so they stay resident
    ("pinned"). The scenario key overrides; a value that does not exist is a ScenarioError naming the field."""
    scn = agentic()
    assert resolve(scn.with_values({"generator.kv_retention": None})).settings.kv_retention == "lru"
    prime = scn.with_values({"generator.kv_retention": None, "orchestration.framework": "prime-rl"})
    assert resolve(prime).settings.kv_retention == "pinned"
    assert resolve(prime.with_values({"generator.kv_retention": "lru"})).settings.kv_retention == "lru"
    with pytest.raises(ScenarioError) as err:
        scn.with_values({"generator.kv_retention": "ttl"})
    assert "kv_retention" in str(err.value)


def test_prefix_caching_off_is_not_lru():
    """``[workload] prefix_caching = false`` prefills every turn whole (MT-01) whatever the retention: no hit rate
    is modelled on top."""
    r = tc.evaluate(agentic(extra="").with_values({"workload.prefix_caching": False}))
    assert _rates(r).resident is None and float(np.ravel(_rates(r).hit)[0]) == 1.0


def test_few_engines_thrash_and_pay_for_their_histories_in_the_sync_round():
    """Two H100 engines for a 64 x 8 synchronous batch (plain GRPO: every trajectory kept): 256 trajectories each
    against their KV slots, so the running sequences fill the pool and every return misses (h = 0). The sync round
    then adds each replica's re-prefill work to the pinned round, ``per_rep·M/r_pf`` with ``M`` the trajectory's
    missed history (:func:`miss_tokens` of its prompt, per-turn growth and turns) at the replica's bulk prefill
    rate: hand-derived, to 1e-6."""
    lru, pinned = tc.evaluate(agentic()), tc.evaluate(agentic(retention="pinned"))
    r, ws, gcap = _rates(lru), lru.details["run"]["workload"], lru.details["run"]["generator"]
    per_rep = 512 / 2
    assert float(r.resident[0]) == pytest.approx(per_rep) and per_rep > float(r.slots[0])
    assert float(np.ravel(r.hit)[0]) == 0.0
    missed = miss_tokens(4_000.0, ws.response_mean / 10 + 1_500.0, 10)
    assert float(np.ravel(r.miss_s)[0]) == pytest.approx(missed / gcap.prefill_tokens_per_s, rel=1e-9)
    assert lru.metrics["step_time_s"] - pinned.metrics["step_time_s"] == pytest.approx(
        per_rep * missed / gcap.prefill_tokens_per_s, rel=1e-6)


@pytest.mark.parametrize("mode,gpus,retention", [(m, g, k) for m in ("sync", "one_step_off", "async")
                                                 for g in (2, 4) for k in ("lru", "pinned")])
def test_simulator_agrees_on_agentic_runs_with_few_engines(mode, gpus, retention):
    """The agreement grid (tests/unit/rl/sim/test_simulate.py) on agentic multi-turn runs with two and four engines,
    each KV policy: the simulator's replicas keep each waiting history in an LRU cache of their KV pool (evicting the
    least recently parked) and stall while an evicted one is prefilled again; within 10% of the closed form."""
    scn = agentic(mode=mode, gpus=gpus, retention=retention)
    sim = tc.simulate(scn, steps=20, seed=1)
    ana = sim.details["analytical"]
    assert sim.metrics["useful_samples_per_s"] == pytest.approx(ana["useful_samples_per_s"], rel=0.10)
    hits, returns = sim.details["prefix_cache_hits"]
    if retention == "lru":
        assert returns > 0 and hits / returns < 0.35  # the closed form says every return misses (h = 0)
    else:
        assert returns == 0


def test_simulator_keeps_histories_when_the_framework_caps_what_is_in_flight():
    """With 32 trajectories in flight on two engines (16 each, against their 23 KV slots at the run's 20k-token
    contexts), the histories fit: the closed form's hit rate is 1 and the simulator's above 0.9 (0.998 at seed 1);
    the two agree within 10%. (At 48 in flight, 24 each, the closed form keeps 74% and the simulator 62%; from
    64 both evict nearly everything.)"""
    scn = agentic(mode="async", extra="max_rollouts_in_flight = 32")
    sim = tc.simulate(scn, steps=20, seed=1)
    r = _rates(tc.evaluate(scn))
    assert float(r.slots[0]) == 23.0 and float(r.resident[0]) == 16.0
    assert float(np.ravel(r.hit)[0]) == pytest.approx(1.0, abs=1e-6)
    hits, returns = sim.details["prefix_cache_hits"]
    assert hits / returns > 0.9
    assert sim.metrics["useful_samples_per_s"] == pytest.approx(sim.details["analytical"]["useful_samples_per_s"],
                                                                 rel=0.10)


def test_simulator_follows_fixed_per_step_costs():
    """The trainer loop's fixed per-step cost (§5.7; issue 32 item 2) in both: 60 s a step on top of a
    synchronous step moves the simulated step by the same 60 s as the closed form's (within 10%)."""
    scn = agentic(mode="sync", gpus=8)
    fixed = scn.with_values({"orchestration.step_fixed_s": 60.0})
    a0, a1 = tc.evaluate(scn).metrics["step_time_s"], tc.evaluate(fixed).metrics["step_time_s"]
    s0 = tc.simulate(scn, steps=12, seed=2).metrics["step_time_s"]
    s1 = tc.simulate(fixed, steps=12, seed=2).metrics["step_time_s"]
    assert a1 - a0 == pytest.approx(60.0, rel=1e-6)
    assert s1 - s0 == pytest.approx(60.0, rel=0.10)
    assert math.isfinite(s1)
