"""Wide expert-parallel serving instances for an MoE generator (docs/rl-modeling.md §4.4; issue 36 item 4): attention
DP over several NVLink domains with the experts spread over every GPU of the instance, what SGLang's large-scale EP
deployment (validation DIS-01b) and slime's 32-GPU rollout engines run, and the running cap per DP rank."""

from __future__ import annotations

from pathlib import Path

import pytest

import tcocalc as tc
from tcocalc.catalog.accelerators import hardware
from tcocalc.catalog.models import model
from tcocalc.rl import capacity
from tcocalc.rl.cluster import resolve
from tcocalc.rl.phases import phase_list, workload_stats
from tcocalc.roofline.forward import kv_bytes_per_seq_per_gpu
from tcocalc.roofline.parallel import Parallelism
from tcocalc.roofline.serving import candidate_serving_layouts, kv_pool_per_gpu

GLM5 = Path(__file__).resolve().parents[3] / "scenarios" / "glm5_h200_drift.toml"


def _setup(scn):
    cluster = resolve(scn)
    name, start, steps, over = phase_list(scn)[0]
    ws = workload_stats(scn, over, name, start, steps)
    return scn, cluster, ws


def test_layouts_cross_the_domain_only_for_moe_instances_that_span_it():
    h200 = hardware("H200")
    moe = model("GLM-5")
    wide = [p for p in candidate_serving_layouts(moe, h200, 32) if p.tp * p.dp > h200.scaleup_domain_gpus]
    assert wide, "a 32-GPU MoE instance may spread attention DP over four domains"
    assert all(p.ep == p.tp * p.dp for p in wide)            # the experts over every GPU of the stage
    assert Parallelism(tp=1, dp=32, ep=32, pp=1) in wide
    # within one domain (no instance size asked) and for a dense model nothing crosses the domain
    assert all(p.tp * p.dp <= 8 for p in candidate_serving_layouts(moe, h200))
    assert all(p.tp * p.dp <= 8 for p in candidate_serving_layouts(model("Qwen2.5-7B"), h200, 32))


def test_spreading_the_experts_frees_the_kv_pool_by_hand():
    # GLM-5 FP8 on H200: 744B params at 1 B each. One domain without PP cannot hold it with KV room; over 32 GPUs
    # each GPU holds 1/32 of the experts plus its replicated attention and dense layers
    scn, cluster, ws = _setup(tc.load_scenario(GLM5))
    m, acc, cal = cluster.model, cluster.generator, cluster.generator_cal
    w8, pool8 = kv_pool_per_gpu(m, acc, cal, Parallelism(tp=1, pp=8), "fp8")
    w32, pool32 = kv_pool_per_gpu(m, acc, cal, Parallelism(tp=1, dp=32, ep=32), "fp8")
    assert w8 == pytest.approx(744e9 / 8, rel=0.05)            # a PP8 stage holds an eighth of every weight
    experts = m.num_moe_layers * m.num_experts * m.expert_params
    assert w32 == pytest.approx(744e9 - experts + experts / 32, rel=0.05)  # the rest replicated per DP rank
    assert pool32 > 2.0 * pool8
    ctx = 31_000
    per8 = float(kv_bytes_per_seq_per_gpu(m, Parallelism(tp=1, pp=8), "bf16", ctx))
    per32 = float(kv_bytes_per_seq_per_gpu(m, Parallelism(tp=1, dp=32, ep=32), "bf16", ctx))
    assert per32 == pytest.approx(8 * per8)                   # a DP rank holds all layers of its sequences


def test_the_glm5_generator_offers_a_wide_instance_that_the_flow_takes_when_it_pays():
    scn, cluster, ws = _setup(tc.load_scenario(GLM5).with_values({"generator.disaggregated": False}))
    caps = capacity.generator_capacities(scn, cluster, ws, max_gpus=96)
    base, wide = caps[0], caps[-1]
    assert base.instance_gpus == 8 and wide.instance_gpus in (16, 32, 64)
    assert wide.instance.dp * wide.instance.tp > 8 and wide.instance.ep == wide.instance_gpus
    assert wide.tokens_per_s_per_gpu > 2.0 * base.tokens_per_s_per_gpu   # about 460 against 150 [token/s/GPU]
    assert 96 % wide.instance_gpus == 0                       # scored by the pool it fills with whole instances
    # before the drift the in-flight trajectories fit the wide instance's slots: the flow takes it
    report = tc.evaluate(scn.with_split(32, 96))
    first = report.phases.iloc[0]
    assert first["prefix_cache_hit_fraction"] == pytest.approx(1.0)
    assert first["generator_output_tokens_per_s_per_gpu"] > 1.5 * base.tokens_per_s_per_gpu  # 275 against 142


def test_dense_models_and_pinned_instances_get_no_wide_alternative():
    scn = tc.load_scenario(GLM5).with_values({"generator.disaggregated": False, "generator.tp": 8})
    scn, cluster, ws = _setup(scn)
    assert len(capacity.generator_capacities(scn, cluster, ws, max_gpus=96)) == 1
    verl = Path(__file__).resolve().parents[3] / "scenarios" / "verl_fully_async_qwen25_7b_h20.toml"
    scn, cluster, ws = _setup(tc.load_scenario(verl))
    setup = capacity.ServingSetup.of(scn, cluster, ws)
    base = capacity.generator_capacity(scn, cluster, ws)
    assert capacity._wide_instance(setup, 64, base) is None


def test_the_running_cap_holds_per_attention_dp_rank():
    # vLLM runs one engine core (scheduler) per DP rank; a DP32 instance under max_num_seqs 16 runs up to 512
    scn = tc.load_scenario(GLM5).with_values({"generator.disaggregated": False, "generator.max_num_seqs": 16})
    scn, cluster, ws = _setup(scn)
    setup = capacity.ServingSetup.of(scn, cluster, ws)
    par = Parallelism(tp=1, dp=32, ep=32, pp=1)
    cap = capacity._fit(setup, par, 5_000.0, 0.0)
    assert cap.b_max == pytest.approx(16 * 32)
    one = capacity._fit(setup, Parallelism(tp=1, pp=8), 5_000.0, 0.0)
    assert one.b_max == pytest.approx(16)
