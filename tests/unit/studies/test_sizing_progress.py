"""tc.size_cluster's progress hook and shared work (issue 39 item 2): ``progress(done, total)`` from 0 to the
search's evaluations, and the work a synchronous round's hidden tool time costs shared between trainers and modes
(counts of work; the seconds are benchmarks/run.py's)."""

import numpy as np

import tcocalc as tc
from tcocalc.rl import pipeline as rl_pipeline
from tcocalc.rl.steps import sync

OPTIONS = {"trainer_hardware": ["H100", "H200"], "generator_hardware": ["H200"], "max_gpus": 256,
           "modes": ["sync", "periodic", "async"], "staleness_bounds": [1, 2], "supplies": ["own"]}


def test_progress_runs_from_zero_to_every_evaluation():
    scn = tc.load_scenario("default")
    seen = []
    res = tc.size_cluster(scn, {"useful_samples_per_s": 1.0}, OPTIONS, progress=lambda d, t: seen.append((d, t)))
    total = 2 * 1 * (1 + 1 + 2)  # 2 x 1 hardware pairs x (sync, periodic, async at 2 bounds)
    assert seen[0] == (0, total) and seen[-1] == (total, total)
    assert [d for d, _ in seen] == list(range(total + 1)) and {t for _, t in seen} == {total}
    plain = tc.size_cluster(scn, {"useful_samples_per_s": 1.0}, OPTIONS)
    assert res.message == plain.message and res.candidates.equals(plain.candidates)


def test_a_pair_the_supplies_do_not_price_still_counts():
    """A hardware pair no supply offers is skipped, and its evaluations still count, so the bar ends full."""
    scn = tc.load_scenario("default")
    seen = []
    options = {**OPTIONS, "trainer_hardware": ["H100", "MI300X"], "generator_hardware": ["H100"], "modes": ["sync"],
               "supplies": ["Lambda"]}  # Lambda rents no MI300X
    tc.size_cluster(scn, {"useful_samples_per_s": 1.0}, options, progress=lambda d, t: seen.append((d, t)))
    assert seen[0] == (0, 2) and seen[-1] == (2, 2)


def test_synchronous_rounds_share_their_hidden_tool_time_between_trainers_and_modes(monkeypatch):
    """The agentic GLM-5 workload: sync and periodic on two trainer accelerators ask the same generator rows; each
    distinct row is computed once (the second trainer and the second mode compute none), and the candidates are
    what they are without the sharing."""
    scn = tc.load_scenario("glm5_h200_drift")
    options = {**OPTIONS, "modes": ["sync", "periodic"], "max_gpus": 512}
    rl_pipeline.clear_caches()
    rows = []
    real = sync._tool_overlap_rows
    monkeypatch.setattr(sync, "_tool_overlap_rows", lambda g, w, o, last: rows.append(len(o)) or real(g, w, o, last))
    shared = tc.size_cluster(scn, {"useful_samples_per_s": 0.05}, options)
    once = sum(rows)
    rows.clear()
    rl_pipeline.clear_caches()
    alone = tc.size_cluster(scn, {"useful_samples_per_s": 0.05}, {**options, "trainer_hardware": ["H100"],
                                                                  "modes": ["sync"]})
    assert sum(rows) == once  # one trainer in one mode asks every row the four plans ask
    h100_sync = shared.candidates[(shared.candidates["trainer_hardware"] == alone.candidates["trainer_hardware"][0])
                                  & (shared.candidates["mode"] == "sync")]
    assert len(h100_sync) == len(alone.candidates)
    cols = ["trainer_gpus", "generator_gpus", "useful_samples_per_s", "run_usd"]
    np.testing.assert_array_equal(h100_sync.sort_values(cols[:2])[cols].to_numpy(float),
                                  alone.candidates.sort_values(cols[:2])[cols].to_numpy(float))
