"""The two real verl GSM8k logs read stage by stage (issue 36 item 3; docs/rl-modeling.md §3.10): the figures derived
by hand there, recomputed from the logs' per-step timers (tests/data/logs/real/verl_gpg_stage_timers.csv, extracted
from diqiuzhuanzhuan/verldata@42e31cd07ea0:run_logs/qwen2-7b_math.log and qwen2-7b_math_megatron.log)."""

from __future__ import annotations

import csv
import statistics

import pytest

import tcocalc as tc
from tcocalc.catalog import framework_cases as fc
from tcocalc.catalog.framework_cases import case_scenario
from tcocalc.rl.cluster import resolve
from tcocalc.rl.phases import workload_stats
from tcocalc.rl.pipeline import evaluate_splits
from tests.conftest import ROOT

TIMERS = ROOT / "tests" / "data" / "logs" / "real" / "verl_gpg_stage_timers.csv"


#: The steps of one workload, without validation (docs/rl-modeling.md §3.10): the FSDP run's responses grow from step
#: 156 on (about 216 -> 614 tokens), so its rows and scenario read steps 3-155; the Megatron run's stay 135-187.
WINDOW = {"fsdp": (3, 155), "megatron": (3, 10**9)}


def _rows(run: str) -> list[dict]:
    with TIMERS.open() as fh:
        return [r for r in csv.DictReader(line for line in fh if not line.startswith("#")) if r["run"] == run]


def _steady(run: str) -> list[dict]:
    """The run's steps of one workload without validation (:data:`WINDOW`)."""
    lo, hi = WINDOW[run]
    return [r for r in _rows(run) if lo <= int(r["step"]) <= hi and r["validation"] == "0"]


def test_the_fsdp_runs_responses_grow_after_step_155_and_its_scenario_describes_the_steps_before():
    """The FSDP log's response_length/mean stays 200-271 tokens over steps 3-155 (median 216.2, clip ratio at most
    2.3%) and runs 614 tokens over steps 158 on (median; 44% clipped at the 1,024 cap), with the step 1.6x longer:
    two workloads, so its scenario (response mean 216.2, to 0.1 token) and the rows citing it (ST-05, LOG-01: step
    229.33 s, to 0.01 s) take the steps before. The Megatron log has one workload (135-187 tokens over all its
    steps)."""
    early, late = _steady("fsdp"), [r for r in _rows("fsdp") if int(r["step"]) >= 158 and r["validation"] == "0"]
    assert max(float(r["response_length_mean"]) for r in early) < 275.0
    assert max(float(r["response_length_clip_ratio"]) for r in early) < 0.025
    assert _median(early, "response_length_mean") == pytest.approx(216.2, abs=0.05)
    assert _median(late, "response_length_mean") == pytest.approx(614.4, abs=0.1)
    assert _median(late, "response_length_clip_ratio") == pytest.approx(0.44, abs=0.005)
    assert _median(late, "step_s") / _median(early, "step_s") > 1.6
    assert case_scenario("verl-gpg-qwen2-7b-fsdp-8").workload.response_tokens_mean == pytest.approx(216.2, abs=0.05)
    assert _stage_row("ST-05")["step_time_s"] == pytest.approx(_median(early, "step_s"), abs=0.01)
    log01 = next(c for c in fc.framework_cases() if c["id"] == "LOG-01")
    assert log01["published"] == pytest.approx(_median(early, "step_s"), abs=0.01)
    megatron = [float(r["response_length_mean"]) for r in _steady("megatron")]
    assert 130.0 < min(megatron) and max(megatron) < 190.0


def _median(rows: list[dict], key: str) -> float:
    return statistics.median(float(r[key]) for r in rows)


def _stage_row(case_id: str) -> dict:
    return fc.stage_case(case_id)


@pytest.mark.parametrize(("case_id", "run", "engine", "gen", "reshard", "rest", "switch"), [
    ("ST-05", "fsdp", 56.20, 69.11, 4.56, 7.98, 12.58),
    ("ST-06", "megatron", 36.34, 45.83, 3.07, 6.25, 9.32),
])
def test_generation_row_is_the_engines_generate_sequences(case_id, run, engine, gen, reshard, rest, switch):
    """The stage row's generation is the median of ``timing_s/generate_sequences`` (to 0.01 s); the log's ``gen``
    holds it, the reshard and the rest of the colocated switch (each median to 0.01 s); the row's switching is the
    median of each step's ``gen`` less its ``generate_sequences`` (to 0.01 s)."""
    rows = _steady(run)
    per_step = [float(r["gen"]) - float(r["generate_sequences"]) for r in rows]
    assert statistics.median(per_step) == pytest.approx(switch, abs=0.01)
    assert _stage_row(case_id)["switching_s"] == pytest.approx(switch, abs=0.01)
    assert _median(rows, "generate_sequences") == pytest.approx(engine, abs=0.01)
    assert _stage_row(case_id)["generation_s"] == pytest.approx(engine, abs=0.01)
    assert _median(rows, "gen") == pytest.approx(gen, abs=0.01)
    assert _median(rows, "reshard") == pytest.approx(reshard, abs=0.01)
    switch = [float(r["gen"]) - float(r["generate_sequences"]) - float(r["reshard"]) for r in rows]
    assert statistics.median(switch) == pytest.approx(rest, abs=0.01)


def test_megatron_micro_batch_figures():
    """ST-06 per micro-batch (§3.10): 640 micro-batches of 4 sequences per data-parallel rank in each pass; log-prob
    81.7 ms and update 170.1 ms each (to 0.1 ms) on about 1,002 tokens (to 1 token); the busiest stage's forward
    3.8e12 FLOP, 12.2 ms at 312 TFLOP/s (to 0.1 ms); a fixed 37.4 ms and 44.2 ms of forward per micro-batch solve
    both passes (to 0.1 ms)."""
    scn = case_scenario("verl-gpg-qwen2-7b-megatron-8")
    t = scn.trainer
    dp = t.gpus // (t.tp * t.pp)
    seqs = scn.workload.prompts_per_step * scn.workload.group_size
    micro = 4  # ppo_micro_batch_size_per_gpu = log_prob_micro_batch_size_per_gpu (the log's launch line)
    n_logprob = seqs / dp / micro
    n_update = t.minibatches_per_step * (seqs / t.minibatches_per_step / dp / micro)
    assert (dp, n_logprob, n_update) == (2, 640, 640)
    row = _stage_row("ST-06")
    logprob_ms, update_ms = 1e3 * row["logprob_s"] / n_logprob, 1e3 * row["training_s"] / n_update
    assert (logprob_ms, update_ms) == (pytest.approx(81.7, abs=0.05), pytest.approx(170.1, abs=0.05))
    tokens = _median(_steady("megatron"), "total_num_tokens") / (seqs / micro)
    assert tokens == pytest.approx(1002, abs=1)
    m = tc.model(scn.model.name)
    stage = 14 * (m.attention_params_per_layer + m.dense_mlp_params) + m.lm_head_params  # 28 layers over PP2
    flops = 2.0 * stage / t.tp * tokens
    assert flops == pytest.approx(3.8e12, rel=0.01)
    assert 1e3 * flops / 312e12 == pytest.approx(12.2, abs=0.05)
    f = (update_ms - logprob_ms) / 2.0
    assert (logprob_ms - f, f) == (pytest.approx(37.4, abs=0.05), pytest.approx(44.2, abs=0.05))


def test_logprob_share_of_the_update_in_both_logs():
    """Log-prob over update: 0.48 in the Megatron log (no recompute: a forward alone would be 1/3) and 0.25 in the
    FSDP log (full recompute: 1/4) (to 0.005)."""
    assert _median(_steady("megatron"), "old_log_prob") / _median(_steady("megatron"), "update_actor") == \
        pytest.approx(0.48, abs=0.005)
    assert _median(_steady("fsdp"), "old_log_prob") / _median(_steady("fsdp"), "update_actor") == \
        pytest.approx(0.247, abs=0.005)


@pytest.mark.parametrize(("name", "t_gen", "t_sync"), [
    ("verl-gpg-qwen2-7b-fsdp-8", 35.85, 6.41),
    ("verl-gpg-qwen2-7b-megatron-8", 30.97, 6.83),
])
def test_models_generation_leaves_the_switch_to_t_sync(name, t_gen, t_sync):
    """The model's generation stage (the batch over the generator's capacity) is the engine's alone, and the
    colocated switch is ``t_sync`` (§3.10: 35.85 / 30.97 s and 6.41 / 6.83 s, to 1%; 30.93 / 25.53 s before
    the list schedule's makespan of §4.5, 2026-12-07), which is why the stage rows publish ``generate_sequences``."""
    scn = case_scenario(name)
    cl, ws = resolve(scn), workload_stats(scn)
    res = evaluate_splits(cl, scn, ws, [scn.trainer.gpus], [scn.generator.gpus])
    gen = float(res.rates.batch / res.flow.generator_capacity[0])
    assert gen == pytest.approx(t_gen, rel=0.01)
    assert float(res.rates.t_sync[0]) == pytest.approx(t_sync, rel=0.01)


@pytest.mark.parametrize(("name", "layout", "sequences", "recompute", "update_s"), [
    ("verl-gpg-qwen2-7b-fsdp-8", dict(dp=8), 16, "full", 62.3),
    ("verl-gpg-qwen2-7b-megatron-8", dict(tp=2, pp=2, dp=2), 4, "none", 43.6),
])
def test_training_model_at_the_logs_micro_batches(name, layout, sequences, recompute, update_s):
    """The roofline training model at each log's own micro-batch (``sequences`` packed sequences of the mean length)
    and recompute (FSDP: full gradient checkpointing; Megatron: none) gives the update in ``update_s`` (to 2%): 62.3
    against 125.33 s logged (FSDP) and 43.6 against 108.85 s (Megatron), both about half the logged time
    (docs/rl-modeling.md §3.10): at verl's micro-batches both backends are slow by about the same factor, and the
    FSDP row's agreement today comes from the model's one-sequence micro-batch."""
    from tcocalc.roofline.parallel import Layouts, Parallelism
    from tcocalc.roofline.training import TrainingJob

    scn = case_scenario(name)
    cl, ws = resolve(scn), workload_stats(scn)
    seq = float(max(256, round(ws.traj_tokens)))  # the trainer's packed sequence (rl/capacity.py training_job)
    job = TrainingJob(m=cl.model, acc=cl.trainer, cal=cl.trainer_cal, seq=seq * sequences,
                      global_batch_tokens=ws.samples_per_step * ws.traj_tokens / scn.trainer.minibatches_per_step,
                      precision=scn.model.precision, sharding=cl.settings.trainer_sharding)
    steps = job.steps(Layouts.of([Parallelism(**layout)]), offload=False, recompute=recompute)
    tokens_per_s = float(job.global_batch(Layouts.of([Parallelism(**layout)]))[0] * job.seq / steps["step_s"][0])
    assert ws.samples_per_step * ws.traj_tokens / tokens_per_s == pytest.approx(update_s, rel=0.02)


def test_the_fsdp_switch_follows_its_engines_regime():
    """verl logs ``generate_sequences`` and ``reshard`` as means over ranks and ``gen`` as the slowest rank's wall
    time (§3.10 "What the two timers average"): in the FSDP log's steps of one workload (3-155) the rest of ``gen``
    moves with the engine's two regimes (correlation 0.72 to 0.02; 51 steps whose engine ran under 52 s, median
    47.2 s, switch 11.12 s and rest 6.54 s; 71 others, median 73.6 s, switch 14.64 and rest 10.01 s, each median to
    0.01 s), at the same response lengths (median 215.9 and 217.5 tokens); in the Megatron log, whose engine runs
    steady, it does not (|correlation| below 0.2). Over steps 3 on the late long-response steps joined the slow
    regime (correlation 0.80, switch 17.45 s) until 2026-12-07."""
    import numpy as np

    def split(rows):
        engine = np.array([float(r["generate_sequences"]) for r in rows])
        switch = np.array([float(r["gen"]) for r in rows]) - engine
        rest = switch - np.array([float(r["reshard"]) for r in rows])
        return engine, switch, rest

    engine, switch, rest = split(_steady("fsdp"))
    assert np.corrcoef(rest, engine)[0, 1] == pytest.approx(0.72, abs=0.02)
    quick = engine < 52.0
    assert quick.sum() == 51 and (~quick).sum() == 71
    assert float(np.median(engine[quick])) == pytest.approx(47.2, abs=0.05)
    assert float(np.median(engine[~quick])) == pytest.approx(73.6, abs=0.05)
    assert float(np.median(switch[quick])) == pytest.approx(11.12, abs=0.01)
    assert float(np.median(rest[quick])) == pytest.approx(6.54, abs=0.01)
    assert float(np.median(switch[~quick])) == pytest.approx(14.64, abs=0.01)
    assert float(np.median(rest[~quick])) == pytest.approx(10.01, abs=0.01)
    resp = np.array([float(r["response_length_mean"]) for r in _steady("fsdp")])
    assert float(np.median(resp[~quick])) / float(np.median(resp[quick])) == pytest.approx(1.0, abs=0.01)
    engine, _, rest = split(_steady("megatron"))
    assert abs(np.corrcoef(rest, engine)[0, 1]) < 0.2
