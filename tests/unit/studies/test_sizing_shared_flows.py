"""Plans with the same pool rates and flow share them in the sizing search (issue 39 item 2): async and inflight
at one staleness bound, without partial rollout, run the async step model once; the stages after the flow run for
each, and every figure is what it is without the sharing (exact equality: the same arithmetic, done once)."""

import numpy as np
import pytest

import tcocalc as tc
from tcocalc.rl import pipeline
from tcocalc.rl.cluster import resolve
from tcocalc.rl.phases import phase_list, workload_stats
from tcocalc.studies import sizing

OPTIONS = {"trainer_hardware": ["H200"], "generator_hardware": ["H100", "H200"], "max_gpus": 512,
           "modes": ["sync", "async", "inflight"], "staleness_bounds": [1, 8], "supplies": ["own"]}


def _plan(scn, **values):
    s = scn.with_values({f"orchestration.{k}": v for k, v in values.items()})
    return s, resolve(s)


@pytest.fixture(scope="module")
def glm():
    return tc.load_scenario("glm5_h200_drift")


def test_same_flow_holds_for_async_and_inflight_only(glm):
    a = _plan(glm, mode="async", max_staleness=4.0)
    assert pipeline.same_flow(*a, *_plan(glm, mode="inflight", max_staleness=4.0))
    assert pipeline.same_flow(*a, *a)
    assert not pipeline.same_flow(*a, *_plan(glm, mode="inflight", max_staleness=2.0))  # another bound
    assert not pipeline.same_flow(*a, *_plan(glm, mode="periodic", max_staleness=4.0))  # another step model
    # partial rollout interrupts async's trajectories at each update (re-prefill), not inflight's
    partial = _plan(glm, mode="async", max_staleness=4.0, partial_rollout=True)
    assert not pipeline.same_flow(*partial, *_plan(glm, mode="inflight", max_staleness=4.0, partial_rollout=True))


@pytest.mark.parametrize("name", ["glm5_h200_drift", "default"])
def test_inflight_from_async_flows_equals_inflight_alone(name):
    """evaluate_splits of inflight handed async's rates and flows gives, split by split, exactly the figures of
    inflight evaluated on its own (the LRU-fed GLM-5 workload and the default one), and computes no flow."""
    scn = tc.load_scenario(name)
    n_t, n_g = np.array([128, 256, 512, 128]), np.array([128, 512, 256, 1024])
    s_a, c_a = _plan(scn, mode="async", max_staleness=2.0)
    s_i, c_i = _plan(scn, mode="inflight", max_staleness=2.0)
    assert pipeline.same_flow(s_a, c_a, s_i, c_i)
    flows = {}
    pipeline.phase_results(s_a, c_a, n_t, n_g, flows)
    calls = []
    step = pipeline.STEP_MODELS["inflight"]
    pipeline.STEP_MODELS["inflight"] = lambda *a: calls.append(a) or step(*a)
    try:
        shared = pipeline.phase_results(s_i, c_i, n_t, n_g, flows)
    finally:
        pipeline.STEP_MODELS["inflight"] = step
    alone = pipeline.phase_results(s_i, c_i, n_t, n_g)
    assert not calls
    for got, want in zip(shared, alone, strict=True):
        assert got.metrics.keys() == want.metrics.keys()
        for k in want.metrics:
            np.testing.assert_array_equal(got.metrics[k], want.metrics[k], err_msg=k)


def test_sizing_shares_flows_and_gives_the_same_candidates(glm, monkeypatch):
    """GLM-5 on two hardware pairs, async and inflight at two bounds: half the async step models run, and the
    candidates, front and message are what they are when every plan computes its own flow."""
    calls = []
    step = pipeline.STEP_MODELS["async"]
    counted = lambda *a: calls.append(1) or step(*a)  # noqa: E731 (one step model for both, as STEP_MODELS has)
    monkeypatch.setitem(pipeline.STEP_MODELS, "async", counted)
    monkeypatch.setitem(pipeline.STEP_MODELS, "inflight", counted)
    shared = tc.size_cluster(glm, {"useful_samples_per_s": 0.05}, OPTIONS)
    n_shared = len(calls)
    calls.clear()
    monkeypatch.setattr(sizing, "same_flow", lambda *a: False)
    alone = tc.size_cluster(glm, {"useful_samples_per_s": 0.05}, OPTIONS)
    assert n_shared > 0 and 2 * n_shared == len(calls)
    assert shared.candidates.equals(alone.candidates) and shared.pareto.equals(alone.pareto)
    assert shared.message == alone.message
    phases = [workload_stats(glm, over, n, s, k).phase for n, s, k, over in phase_list(glm)]
    assert len(phases) == 2  # the drift phase runs the LRU feed's overflow, so both regimes are covered
