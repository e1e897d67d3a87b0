"""A trainer that streams its mini-batches (verl fully-async, docs/rl-modeling.md §5.6): the closed form's window
cap, the simulator's per-mini-batch trainer, the preset and the scenario key."""

import math

import numpy as np
import pytest

import tcocalc as tc
from tcocalc.rl import rollouts as wl
from tcocalc.rl.cluster import resolve
from tcocalc.rl.rates import streamed
from tcocalc.rl.solve import phase_results
from tcocalc.rl.steps.async_ import streamed_window_fill_s
from tests.golden import SCENARIOS

VERL = next(p for p in SCENARIOS if p.stem == "verl_fully_async_qwen25_7b_h20_64x64")


def _stages(scn):
    pr = phase_results(scn, resolve(scn), [scn.trainer.gpus], [scn.generator.gpus])[0]
    return pr.workload, pr.generator, pr.rates


def _streamed(scn) -> bool:
    return streamed(scn, resolve(scn).settings)


def test_verl_presets_stream_and_a_scenario_key_overrides():
    scn = tc.load_scenario(VERL)
    assert resolve(scn).settings.stream_minibatches and _streamed(scn)
    off = scn.with_values({"orchestration.stream_minibatches": False})
    assert not resolve(off).settings.stream_minibatches and not _streamed(off)
    generic = scn.with_values({"orchestration.framework": "generic"})
    assert not _streamed(generic)
    assert _streamed(generic.with_values({"orchestration.stream_minibatches": True}))
    # a streamed step needs partial rollout and more than one mini-batch
    assert not _streamed(scn.with_values({"orchestration.partial_rollout": False}))
    assert not _streamed(scn.with_values({"trainer.minibatches_per_step": 1}))


def test_window_fill_reproduces_the_hand_derived_oversampling_cut():
    """η = 0.5, G = 16: the step's last mini-batch is in when the first needed groups finish, Φ(z)^16 = 1/1.5,
    Φ(z) = 0.97498 (z = 1.9596), τ = exp(μ + σz); every replica holds (1+η)·B/keep/n_rep trajectories at once,
    decoded to τ: ``τ·t0 + t1·n·E[min(R, τ)]`` (all fit the KV slots)."""
    scn = tc.load_scenario(VERL)
    ws, gcap, r = _stages(scn)
    z = 1.9596  # Φ⁻¹(0.97498) from a normal table; (1/1.5)^(1/16) = 0.97498
    assert wl.group_quantile_z(0.5, 16) == pytest.approx(z, abs=1e-3)
    tau = math.exp(ws.mu + ws.sigma * z)
    n = 1.5 * 8192 / r.keep / 64
    assert n <= float(r.slots[0])
    by_hand = gcap.prefill_s + tau * gcap.t0 + gcap.t1 * n * wl.capped_moment(1, ws.mu, ws.sigma, tau)
    assert float(streamed_window_fill_s(scn, ws, gcap, r)[0]) == pytest.approx(by_hand, rel=1e-3)


def test_a_zero_bound_waits_for_the_batch_longest():
    """η = 0 admits one batch per version: the window runs to the batch's longest response (here the cap)."""
    scn = tc.load_scenario(VERL).with_values({"orchestration.max_staleness": 0.0})
    ws, gcap, r = _stages(scn)
    assert float(wl.expected_max(8192 / r.keep, ws.mu, ws.sigma, ws.cap)) == ws.cap
    assert float(streamed_window_fill_s(scn, ws, gcap, r)[0]) > ws.cap * gcap.t0


@pytest.mark.reference
def test_streamed_window_gives_the_published_staleness_trend_within_a_fifth():
    """verl RL-05 (cases.md): staleness_threshold 0 / 0.1 / 0.3 / 0.5 -> 231.34 / 171.30 / 146.11 / 150.63 s."""
    base = tc.load_scenario(VERL)
    published = {0.0: 231.34, 0.1: 171.30, 0.3: 146.11, 0.5: 150.63}
    for s, step in published.items():
        got = tc.evaluate(base.with_values({"orchestration.max_staleness": s})).metrics["step_time_s"]
        assert got == pytest.approx(step, rel=0.20), s


def test_the_simulator_streams_and_agrees_where_a_whole_batch_trainer_waits():
    """The simulated trainer takes each mini-batch as it fills: the verl run agrees with the closed form (10%);
    the same run with a whole-batch trainer (the key off) waits for half a batch after every push under the
    bound 0.5 and is over a fifth slower."""
    scn = tc.load_scenario(VERL)
    ana = tc.evaluate(scn).metrics["useful_samples_per_s"]
    sim = tc.simulate(scn, steps=20, seed=0).metrics["useful_samples_per_s"]
    assert sim == pytest.approx(ana, rel=0.10)
    whole = tc.simulate(scn.with_values({"orchestration.stream_minibatches": False}), steps=20, seed=0)
    assert whole.metrics["useful_samples_per_s"] < 0.8 * sim


def test_a_whole_bound_gives_the_last_samples_that_many_more_steps():
    """η = 2: a step's last samples are admitted two versions ahead, so the window cap is
    ``3·B/(t_sync + T_fill + t_train/g)``, T_fill decoding the batch's longest (α = 0) with (1+η)·B/keep
    trajectories on the replicas (§5.6)."""
    from tcocalc.rl.steps import async_

    scn = tc.load_scenario(VERL).with_values({"orchestration.max_staleness": 2.0})
    ws, gcap, r = _stages(scn)
    n = 3 * 8192 / r.keep / 64
    tau = float(wl.expected_max(8192 / r.keep, ws.mu, ws.sigma, ws.cap))
    decode = (tau * gcap.t0 + gcap.t1 * n * wl.capped_moment(1, ws.mu, ws.sigma, tau) if n <= float(r.slots[0])
              else n * wl.capped_moment(1, ws.mu, ws.sigma, tau) * (gcap.t0 + gcap.t1 * float(r.slots[0]))
              / float(r.slots[0]) + 0.5 * tau * gcap.t0)
    fill = gcap.prefill_s + decode
    assert float(streamed_window_fill_s(scn, ws, gcap, r)[0]) == pytest.approx(fill, rel=1e-3)
    caps = async_._async_throughput(scn, ws, gcap, r, 8192 / (r.t_train + r.t_sync))[4]
    expected = 3 * 8192 / (float(r.t_sync[0]) + fill + float(r.t_train[0]) / 16 + float(np.ravel(r.t_fixed)[0]))
    assert float(caps["staleness"][0]) == pytest.approx(expected, rel=1e-3)


def test_a_window_bound_run_is_explained_as_admission_not_the_longest_rollout():
    """Advice for a streamed step held by its window names admission per version and the partial rollout, not
    the longest rollout (which nobody waits for), and suggests the looser bound with its figure."""
    scn = tc.load_scenario(VERL).with_values({"orchestration.max_staleness": 0.1})
    report = tc.evaluate(scn)
    assert report.details["binding_limits"]["run"] == ["staleness"]
    line = next(a for a in report.advice if a.startswith("The staleness bound caps throughput"))
    assert "1.1 batches of samples are admitted per policy version" in line
    assert "nothing waits for the longest rollout" in line and "longest rollout must finish" not in line
    looser = tc.evaluate(scn.with_values({"orchestration.max_staleness": 1.1})).metrics["useful_samples_per_s"]
    assert f"would give {looser:.3g} useful samples/s" in line
