"""Issue 16 item 4: the simulator and the closed form agree on every shipped scenario, within the grid's
tolerances (useful samples/s within 10%, trainer idle within 5 points; live sandboxes within 10%), and a
simulated run never exceeds its staleness bound. The figures are the golden ones (tests/data/golden/:
evaluate() and simulate(steps=50, seed=0)), which tests/test_golden.py keeps current, so this walk costs
nothing. Known disagreements are strict xfails naming their cause: a fix makes them fail and be noticed."""

import math

import pandas as pd
import pytest

import tcocalc as tc
from tests.golden import SCENARIOS, golden_path

FRACTIONAL_BOUND = ("fractional (verl-style) staleness bound with partial rollout: the simulator's trainer waits "
                    "for every trajectory dispatched before the current version, the closed form lets the tail run "
                    "(eta + 1) steps; which one verl does is the RL-fidelity issue's question")
BOUND_OVERRUN = ("AReaL's admission rule with oldest-first consumption lets a batch fill with newer samples while "
                 "older ones still run; those older ones then outnumber the next batch and train eta + 1 steps "
                 "late. Dropping them holds the bound but costs ~9% of rollouts; waiting for them does not prevent it")
RESUMED_LAG = ("partial rollout: a trajectory resumed across weight updates is counted from the version that "
               "started it, which a fractional bound (0.5) does not cap: the lag counts the versions it spanned")
KNOWN = {("verl_fully_async_qwen25_7b_h20_64x64", "flow"): FRACTIONAL_BOUND,
         ("verl_fully_async_qwen25_7b_h20_64x64", "bound"): RESUMED_LAG,
         ("default", "bound"): BOUND_OVERRUN}


def _pair(path):
    def read(kind):
        return pd.read_csv(golden_path(path, kind)).set_index("metric")["value"]

    return read("evaluate"), read("simulate")


def _cases(check):
    return [pytest.param(p, id=p.stem, marks=pytest.mark.xfail(strict=True, reason=KNOWN[(p.stem, check)]))
            if (p.stem, check) in KNOWN else pytest.param(p, id=p.stem) for p in SCENARIOS]


@pytest.mark.parametrize("path", _cases("flow"))
def test_useful_samples_and_trainer_idle_agree(path):
    a, s = _pair(path)
    assert s["useful_samples_per_s"] == pytest.approx(a["useful_samples_per_s"], rel=0.10)
    assert abs(s["trainer_idle_fraction"] - a["trainer_idle_fraction"]) <= 0.05


@pytest.mark.parametrize("path", _cases("sandboxes"))
def test_live_sandboxes_and_stale_environments_agree(path):
    a, s = _pair(path)
    assert s["sandbox_concurrency"] == pytest.approx(a["sandbox_concurrency"], rel=0.10, abs=1.0)
    assert abs(s["env_state_stale_fraction"] - a["env_state_stale_fraction"]) <= 0.05


@pytest.mark.parametrize("path", _cases("bound"))
def test_simulated_staleness_never_exceeds_the_bound(path):
    """Streaming modes bound the policy lag by max_staleness, plus g - 1 from g optimizer updates per step."""
    scn = tc.load_scenario(path)
    if scn.orchestration.mode not in ("async", "inflight"):
        pytest.skip("synchronous modes have no staleness bound to keep")
    _, s = _pair(path)
    bound = scn.orchestration.max_staleness + scn.trainer.minibatches_per_step - 1
    assert s["max_staleness_steps"] <= math.ceil(bound)
