"""Issue 16 item 4: the simulator and the closed form agree on every shipped scenario and on the GLM-5 variants of
tests/data/agreement/ (issue 40 item 3: group size 16, no length spread, the drift from step 0), within the grid's
tolerances (useful samples/s within 10%, trainer idle within 5 points; live sandboxes within 10%), a simulated run
never exceeds its staleness bound, and never the closed form's capacity (the trainer's and the generator's minimum)
by more than the simulator's stated statistical tolerance (:data:`tcocalc.rl.sim.engine.THROUGHPUT_TOLERANCE`).
The figures are the golden ones (tests/data/golden/:
evaluate() and simulate(steps=50, seed=0)), which tests/golden/test_golden.py keeps current, so this walk costs
nothing. Known disagreements are strict xfails naming their cause: a fix makes them fail and be noticed."""

import math

import pandas as pd
import pytest

import tcocalc as tc
from tcocalc.rl.cluster import resolve
from tcocalc.rl.rates import streamed
from tcocalc.rl.sim.engine import THROUGHPUT_TOLERANCE
from tests.golden import CASES, golden_path

KNOWN: dict = {}  # (scenario stem, check) -> why the two models disagree
# Live sandboxes on the GLM-5 variants agree since 2026-12-06 (issue 40 item 3; docs/rl-modeling.md §7): under "lru"
# retention the surplus admission waits inside the engine, so AReaL's count fills, (eta + 1)·B less the buffer (B/2),
# the batch being trained and pushed (x·(t_trainer + t_sync)) and the finished members waiting for their group (the
# simulator: running + held + buffer within 1% of that); the group wait counts a member's decode at its replica's
# time per token, re-prefill stalls of all b decoding included (simulated 0.137 / 0.119 s per token against the
# closed form's 0.135 / 0.124, where t(b) alone is 0.092 / 0.061), and the spread a full replica's Poisson count of
# trajectories adds to each member's latency (sqrt(N)/rho, in quadrature). Before, the closed form capped the
# surplus at one generator's slots and held members only for t(b): group size 16 was 1,793 live against 3,289
# simulated (+83% in the simulator), no length spread 1,659 against 1,879 (+13%). Held members per phase (initial /
# drift), simulated against closed form: group 16 2,056 / 765 against 2,033 / 801; GLM-5 drift 1,007 / 633 against
# 939 / 719; no spread 295 / 295 against 242 / 242 (20-30-step runs). What is left: the closed form's members wait for
# their group about 14% too long in GLM-5's drift phase (its misses: 0% of returns hit against 19% simulated), and
# its mean staleness, Little's law over the fuller admission, now runs 0.4-0.6 steps above the simulator's on all
# four GLM-5 cases (before: -0.7 to +0.3; not a check here).
# GLM-5 agrees since the closed form counts a finished trajectory against the staleness bound until its group's
# slowest member finishes, as the simulator and AReaL do (docs/rl-modeling.md §5.4): it was 13% fast with 638
# live sandboxes against 406 simulated
# verl 64:64 (fractional bound with partial rollout) agrees since its trainer streams mini-batches in both models
# (docs/rl-modeling.md §5.6): the simulator's trainer used to wait for every trajectory dispatched before the
# current version, the closed form let the tail run (eta + 1) steps; verl does neither
# verl 64:64's resumed-lag overrun and default's bound overrun are gone since issue 12's admission fix
# (finished members waiting for their group's slowest now count against AReaL's admission bound in the
# simulator; they were counted nowhere, so admission leaked)


def _pair(path):
    def read(kind):
        return pd.read_csv(golden_path(path, kind)).set_index("metric")["value"]

    return read("evaluate"), read("simulate")


def _cases(check):
    return [pytest.param(p, id=p.stem, marks=pytest.mark.xfail(strict=True, reason=KNOWN[(p.stem, check)]))
            if (p.stem, check) in KNOWN else pytest.param(p, id=p.stem) for p in CASES]


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
    """Streaming modes bound the policy lag by max_staleness, plus g - 1 from g optimizer updates per step; a
    streamed step with partial rollout bounds the share of samples an older version started."""
    scn = tc.load_scenario(path)
    if scn.orchestration.mode not in ("async", "inflight"):
        pytest.skip("synchronous modes have no staleness bound to keep")
    if streamed(scn, resolve(scn).settings):
        # verl: the bound only limits admission, (eta + 1)·B per version, so at most eta·B of a step's B samples
        # were started by an older version (§5.6); a long trajectory itself runs on across pushes
        lags = tc.simulate(scn, steps=20, seed=0).details["staleness"]
        assert lags[lags.index >= 1].sum() / lags.sum() <= min(scn.orchestration.max_staleness, 1.0)
        return
    _, s = _pair(path)
    bound = scn.orchestration.max_staleness + scn.trainer.minibatches_per_step - 1
    assert s["max_staleness_steps"] <= math.ceil(bound)


@pytest.mark.parametrize("path", _cases("capacity"))
def test_simulated_throughput_never_exceeds_the_capacity_bound(path):
    """Issue 40 item 3: the closed form's capacity (trainer and generator minimum, useful samples/s) bounds what the
    simulator reports, within its statistical tolerance; the corpus found GLM-5 variants 0.0987-0.129 against a
    0.077-0.100 bound."""
    a, s = _pair(path)
    bound = min(a["trainer_capacity_samples_per_s"], a["generator_capacity_samples_per_s"])
    assert s["useful_samples_per_s"] <= bound * (1.0 + THROUGHPUT_TOLERANCE), (s["useful_samples_per_s"], bound)


def test_the_grid_holds_the_glm5_variants():
    assert {p.stem for p in CASES} >= {"glm5_group16", "glm5_no_spread", "glm5_drift_from_step_0"}
