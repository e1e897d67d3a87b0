"""Issue 36 (the wide-EP revert, 69d9349): evaluate_splits decides each split's generator instance on that split's own
figures. A split tries an alternative instance only where its ceiling on it (pipeline._ceiling) is above the flow it
has; the ceiling is an upper bound of every step model's flow, LRU prefix cache included, where the generator's
rate at the admission's full count is not (GLM-5's async flow runs above it: fewer trajectories in flight thrash the
cache less)."""

import numpy as np
import pytest

import tcocalc as tc
from tcocalc.rl import pipeline
from tcocalc.rl.capacity import generator_capacities
from tcocalc.rl.cluster import resolve
from tcocalc.rl.phases import phase_list, workload_stats
from tcocalc.rl.rates import pool_rates
from tcocalc.rl.steps.registry import STEP_MODELS
from tests.conftest import ROOT

SCENARIOS = sorted((ROOT / "scenarios").glob("*.toml"))
LADDER = np.array([8, 32, 128, 512, 2048])
N_T, N_G = (a.ravel() for a in np.meshgrid(LADDER, LADDER, indexing="ij"))


def _phases(scn):
    return [workload_stats(scn, over, name, start, steps) for name, start, steps, over in phase_list(scn)]


@pytest.mark.parametrize("path", SCENARIOS, ids=[p.stem for p in SCENARIOS])
def test_no_flow_exceeds_its_ceiling(path):
    """Every shipped scenario in every mode it can run, every instance offered, 25 splits: the flow is at most the
    ceiling (relative 1e-9, the fixed point's tolerance is 1e-10)."""
    scn = tc.load_scenario(path)
    modes = ["colocated"] if scn.orchestration.traits.shared_pool else ["sync", "one_step_off", "periodic", "async"]
    for mode in modes:
        s = scn.with_values({"orchestration.mode": mode})
        cluster = resolve(s)
        for ws in _phases(s):
            for gcap in generator_capacities(s, cluster, ws, max_gpus=int(N_G.max())):
                rates = pool_rates(cluster, s, ws, gcap, N_T, N_G)
                x = STEP_MODELS[mode](s, ws, gcap, rates).trained_per_s
                ceiling = pipeline._ceiling(rates, gcap)
                over = rates.feasible & (x > ceiling * (1 + 1e-9))
                assert not over.any(), (mode, ws.phase, N_T[over], N_G[over], x[over], ceiling[over])


def test_the_generators_rate_at_full_admission_is_no_ceiling_under_lru():
    """Why the ceiling is not rates.generator_samples_per_s: GLM-5's async flow exceeds it on some splits."""
    scn = tc.load_scenario("glm5_h200_drift")
    cluster = resolve(scn)
    above = []
    for ws in _phases(scn):
        gcap, = generator_capacities(scn, cluster, ws, max_gpus=int(N_G.max()))
        rates = pool_rates(cluster, scn, ws, gcap, N_T, N_G)
        x = STEP_MODELS["async"](scn, ws, gcap, rates).trained_per_s
        above.append(rates.feasible & (x > rates.generator_samples_per_s * (1 + 1e-6)))
    assert np.any(above)


def test_each_split_decides_its_instance_on_its_own(monkeypatch):
    """Qwen3-235B generating on B200: the tensor- and expert-parallel alternative trains faster than the attention-DP
    instance at 256:256 and 512:512. With the ceiling held at 0 on 256 generator GPUs, 256:256 keeps the usual instance
    in a sweep beside 512:512 (whose ceiling lets it try the alternative) exactly as alone: the sweep's row is the
    split's own evaluation."""
    scn = tc.load_scenario("semianalysis_qwen3_235b_h200").with_values({"generator.hardware": "B200"})
    cluster = resolve(scn)
    ws = _phases(scn)[0]
    n_t, n_g = np.array([256, 512]), np.array([256, 512])
    usual, alt = generator_capacities(scn, cluster, ws, max_gpus=512)
    step = STEP_MODELS[scn.orchestration.mode]
    flows = [step(scn, ws, g, pool_rates(cluster, scn, ws, g, n_t, n_g)).trained_per_s for g in (usual, alt)]
    assert (flows[1] > flows[0]).all()  # the alternative wins on both splits when it is tried
    real = pipeline._ceiling
    monkeypatch.setattr(pipeline, "_ceiling", lambda r, g: np.where(r.n_g == 256, 0.0, real(r, g)))
    both = pipeline.evaluate_splits(cluster, scn, ws, n_t, n_g)
    alone = pipeline.evaluate_splits(cluster, scn, ws, n_t[:1], n_g[:1])
    assert both.flow.trained_per_s[0] == pytest.approx(alone.flow.trained_per_s[0], rel=1e-9)
    assert both.flow.trained_per_s[0] == pytest.approx(flows[0][0], rel=1e-9)  # the usual instance's flow
    assert both.flow.trained_per_s[1] == pytest.approx(flows[1][1], rel=1e-9)  # 512:512 took the alternative
