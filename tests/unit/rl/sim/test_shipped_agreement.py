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

KNOWN: dict = {  # (scenario stem, check) -> why the two models disagree
    # Found when issue 40 item 3 put the GLM-5 variants on the grid (2026-12-06): throughput and trainer idle agree
    # (useful samples/s -1.6% and +3.6%), live sandboxes do not. Group size 16: 3,289 live in the simulator against
    # 1,793 in the closed form (+83%); no length spread: 1,879 against 1,659 (+13%). Cause (2026-12-06, helper
    # "sim"): the closed form. Both models count a trajectory's sandbox from its start to its last turn, and in
    # both phases the simulator fills AReaL's admission count (running + finished members waiting for their group +
    # the buffer: 4,546 of (eta + 1)·B = 4,608). rl/steps/async_.py async_step counts the admitted surplus beyond the
    # trajectories served (Little's law at the latency without waits) as a dispatch queue of at most one generator's
    # slots (n_rep·slots = 930 in the drift phase, where room was 3,490). Under "lru" retention, though, a
    # trajectory is placed whenever its prompt fits the KV pool net of running sequences. The surplus therefore
    # waits inside the engine: in the drift phase 2,157 tool returns wait for KV room (Engine.pending) and 251 for
    # a first placement, each holding its sandbox. The closed form's group wait, taken at that same latency
    # without waits, is 1,366 against the simulator's 2,053 (initial phase), so it overcounts the initial phase
    # (2,837 against 2,245 live) and undercounts the drift (1,448 against 3,530). Without length spread the same
    # mechanism is smaller (916 returns waiting). Open until rl/steps/async_.py changes, named so that a fix is noticed.
    # Measured 2026-12-06 (time averages over each phase after 5 of its steps, simulate(steps=50,
    # seed=0)): running + held + buffer is (eta + 1)·B less the batch being trained and pushed, x·(t_train + t_sync),
    # to within 1% (group 16: 2,246 + 2,053 + 232 initially, 3,530 + 765 + 247 in the drift, of 4,608; GLM-5 drift
    # 1,503 + 650 + 118 of 2,304), and the buffer holds B/2. What remains is the group wait: held 2,053 / 765 (group
    # 16) against the closed form's 1,366 / 343; 1,011 / 650 (GLM-5 drift) against 939 / 341; 344 / 298 without length
    # spread, where the closed form has none: a member's latency spreads beyond its decode length through its waits for
    # KV room on the replica it was placed on (Engine._resume). A trajectory's total wait for room varies as much as it
    # averages (drift from step 0: mean 2,225 s, standard deviation 2,491 s over 51 returns, where independent waits
    # would give ~310 s; no length spread, drift: 4,815 s and 5,661 s), 19% and 44% of its variance between replicas
    # (their means deviate by 1,083 s and 3,746 s), and it is uncorrelated with the member's length (r = 0.05, 0.00),
    # so it neither averages out over the returns nor stretches with the tokens. Tried, not shipped (live sandboxes,
    # sim against closed form): dropping the cap alone: -12% here, -14% without spread, and two agreeing cases break
    # (GLM-5 drift -14%, drift from step 0 -17%); the fill above plus a group wait whose members add independent
    # exponential waits per return (root sum of squares with the decode spread): -0.5% here, -0.3% without spread, but
    # GLM-5 drift -9%, drift from step 0 -12%, and the phases offset (initial group wait 1,499 against 2,053). The fix
    # needs a model of that per-replica wait spread.
    ("glm5_group16", "sandboxes"): "live sandboxes +83% in the simulator at group size 16: the closed form caps "
                                   "the admitted surplus at one generator's slots (open, issue 40 item 3)",
    ("glm5_no_spread", "sandboxes"): "live sandboxes +13% in the simulator without length spread: the same cap "
                                     "(open, issue 40 item 3)",
}
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
