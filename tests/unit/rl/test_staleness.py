"""The staleness stage (tcocalc/rl/staleness.py, docs/rl-modeling.md §5.3), tested on its own: hand-made pool
flows go in, the lags its docstring states come out."""

import math
from types import SimpleNamespace

import numpy as np
import pytest

import tcocalc as tc
from tcocalc.rl.cluster import resolve
from tcocalc.rl.staleness import partial_rollout_carry, staleness
from tests.conftest import ROOT


def load(name):
    return tc.load_scenario(ROOT / "scenarios" / f"{name}.toml")


def _ws(**kw):
    """The workload statistics the stage reads: no partial rollout, no sandbox, lognormal σ 0.5, no cap."""
    base = dict(tau=math.inf, uses_sandbox=False, samples_per_step=512, sigma=0.5, keep_fraction=1.0, cap=0,
                response_mean=1000.0, mu=math.log(1000.0) - 0.125)
    return SimpleNamespace(**{**base, **kw})


def _flow(**kw):
    base = dict(step_s=np.array([100.0]), in_flight=np.array([1024.0]), group_wait=np.array([0.0]),
                queued=np.array([512.0]), rollout_latency_s=np.array([200.0]))
    return SimpleNamespace(**{**base, **kw})


def test_one_step_off_lags_one_version_plus_the_intra_step_lag():
    """A synchronous mode's lag is its fixed one (one_step_off: 1); ``g`` optimizer updates per step add
    ``(g−1)/2`` to the mean and ``g−1`` to the maximum: with g = 4, mean 1 + 1.5 = 2.5 and max 1 + 3 = 4."""
    scn = load("default").with_values({"orchestration.mode": "one_step_off", "trainer.minibatches_per_step": 4})
    s = staleness(scn, _ws(), None, _flow(), resolve(scn).settings)
    assert (s.mean[0], s.max[0], s.token[0], s.env_state_stale[0]) == (2.5, 4.0, 2.5, 0.0)


def test_sync_trains_on_its_own_policy():
    scn = load("default").with_values({"orchestration.mode": "sync"})
    s = staleness(scn, _ws(), None, _flow(), resolve(scn).settings)
    assert (s.mean[0], s.max[0], s.token[0]) == (0.0, 0.0, 0.0)


def test_async_lag_is_littles_law_on_what_is_in_flight_and_queued():
    """Async, bound η = 8: sample lag (C + Q)/B = (1024 + 512)/512 = 3; token-weighted (C·e^{σ²} + Q)/B
    = 2·e^{0.25} + 1 ≈ 3.568 (decode time grows with length, so long samples carry more of the tokens)."""
    scn = load("default").with_values({"orchestration.max_staleness": 8})
    gcap = SimpleNamespace(latency_s=np.array([200.0]))
    s = staleness(scn, _ws(), gcap, _flow(), resolve(scn).settings)
    assert s.mean[0] == pytest.approx(3.0)
    assert s.token[0] == pytest.approx(2 * math.exp(0.25) + 1)
    assert s.mean[0] <= s.max[0] <= 8


def test_the_bound_caps_the_async_lag():
    """The same flow under η = 2 (the default scenario's bound): mean, token-weighted and maximum lag are all 2."""
    gcap = SimpleNamespace(latency_s=np.array([200.0]))
    scn = load("default")
    s = staleness(scn, _ws(), gcap, _flow(), resolve(scn).settings)
    assert (s.mean[0], s.token[0], s.max[0]) == (2.0, 2.0, 2.0)


def test_no_partial_rollout_carries_nothing():
    assert partial_rollout_carry(load("default"), _ws(tau=3000.0)) == (0.0, 0.0)


def test_partial_rollout_adds_token_and_env_staleness():
    scn = load("gb300_agentic_960")
    o = scn.orchestration.model_copy(update={"mode": "one_step_off", "oversampling": 0.3, "partial_rollout": True})
    m = tc.evaluate(scn.model_copy(update={"orchestration": o})).metrics
    assert m["token_staleness_steps"] > m["mean_staleness_steps"]
    assert m["env_state_stale_fraction"] > 0
