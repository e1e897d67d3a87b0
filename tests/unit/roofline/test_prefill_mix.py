"""Continuous batching with whole-prompt prefill (serving.continuous_batching_step, docs/rl-modeling.md §4.3).

With an engine token budget, a newcomer's prompt is prefilled whole (or in budget-sized chunks) in the step it
arrives in, and the steps between only decode. The mix keeps the prefill's mean FLOPs, and charges what spreading
its tokens over every step hides: a prefill step is compute-bound and reads nearly every expert of a MoE layer,
while a small batch's decode steps read only the experts their tokens touch.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

import tcocalc as tc
from tcocalc.catalog.calibration import calibration_for
from tcocalc.roofline.engine_config import EngineConfig, Lengths
from tcocalc.roofline.forward import resolve_inputs
from tcocalc.roofline.parallel import Layouts, Parallelism
from tcocalc.roofline.serving import StepBudget, _rank_budget, continuous_batching_step
from tests.conftest import ROOT


def _step(model, hw, par, precision, b, p, r, budget, segments=1.0, prefill=True):
    """One step's expected costs; ``prefill=False``: the same decode step without newcomers."""
    m, acc, precision, kv, par = resolve_inputs(model, hw, precision, None, par)
    lay = Layouts.of([par]).column()
    engine = EngineConfig(precision=precision, kv_precision=kv, interleaved_prefill=prefill)
    lengths = Lengths(prompt=p, response=r, context=p + r / 2.0, segments=segments)
    res = continuous_batching_step(m, acc, calibration_for(acc), lay, engine, lengths, np.array([[float(b)]]),
                                   None if budget is None else StepBudget(np.array([[float(budget)]])))
    return {k: float(np.asarray(v).ravel()[0]) for k, v in res.items()}


@pytest.mark.parametrize("b", [1, 16, 256])
@pytest.mark.parametrize("budget", [2048, 8192, 1e9])
def test_the_mix_keeps_the_prefills_mean_flops(b, budget):
    """Hand-derived: the mix moves prefill tokens between steps, it neither adds nor drops any: mean FLOPs per
    step equal the spread-out mean's (decode FLOPs + b/R prompts' FLOPs) for any budget."""
    par = Parallelism(tp=1)
    spread = _step("Qwen3-30B-A3B", "H100", par, "bf16", b, 1024, 1024, None)
    mixed = _step("Qwen3-30B-A3B", "H100", par, "bf16", b, 1024, 1024, budget)
    assert mixed["flops"] == pytest.approx(spread["flops"], rel=1e-9)


def test_a_small_moe_batch_reads_fewer_experts_between_prompts():
    """Qwen3-30B-A3B (128 experts, top-8) at 16 sequences, 1,024/1,024 tokens: a prompt arrives every 64 steps
    (λ = 16/1024), so a share 1 - e^-λ = 1.55% of steps prefill [hand-derived]. Between them a step's 16 tokens
    touch 1 - (120/128)^16 = 64% of the experts, where the spread-out mean (32 tokens per step) would read
    1 - (120/128)^32 = 87%: the mixed step reads fewer bytes than the spread-out one, and only slightly more
    than a decode-only step."""
    par = Parallelism(tp=1)
    spread = _step("Qwen3-30B-A3B", "H100", par, "bf16", 16, 1024, 1024, None)
    mixed = _step("Qwen3-30B-A3B", "H100", par, "bf16", 16, 1024, 1024, 8192)
    decode = _step("Qwen3-30B-A3B", "H100", par, "bf16", 16, 1024, 1024, None, prefill=False)
    assert 1 - (120 / 128) ** 16 == pytest.approx(0.644, abs=1e-3)
    assert 1 - math.exp(-16 / 1024) == pytest.approx(0.0155, abs=1e-4)
    assert mixed["bytes"] < 0.9 * spread["bytes"]
    assert decode["bytes"] < mixed["bytes"] < 1.1 * decode["bytes"]


def test_a_budget_below_the_demand_prefills_in_every_step():
    """When the budget left beside the decode tokens is smaller than the prefill demand per step, every step
    prefills and the mix is the spread-out mean: the same FLOPs up to the LM head, which the model charges per
    prefill request (a chunk here, a whole prompt there; under 1e-4 of the step), and the chunk reads the cached
    prefix it attends to, so bytes may only grow."""
    par = Parallelism(tp=1)
    spread = _step("Llama-3.1-8B", "H100", par, "fp8", 200, 20000, 2000, None)
    tight = _step("Llama-3.1-8B", "H100", par, "fp8", 200, 20000, 2000, 2100)  # room 1,900 < demand 2,000
    assert tight["flops"] == pytest.approx(spread["flops"], rel=1e-4)
    assert tight["compute_s"] == pytest.approx(spread["compute_s"], rel=1e-4)
    assert tight["bytes"] >= spread["bytes"]


def test_trtllm_bench_budget_heuristic():
    """serving-engines.md A.3 (tuning.py): max_num_tokens = min(max(bs·(1 + ISL/OSL), 2048), 32768)."""
    assert _rank_budget("trtllm-bench", 42, 20000, 2000) == 2048          # 42·11 = 462 -> the 2,048 floor
    assert _rank_budget("trtllm-bench", 240, 8192, 1024) == 240 * 9        # 2,160
    assert _rank_budget("trtllm-bench", 4096, 8192, 1024) == 32768        # the cap
    assert _rank_budget(8192, 42, 20000, 2000) == 8192


@pytest.mark.reference
@pytest.mark.parametrize("case_id", ["LAT-01-TPOT", "LAT-02-TPOT"])
def test_closed_loop_tpot_with_whole_prompt_prefill(case_id):
    """The two published TPOT points (aiconfigurator silicon refs; vLLM 0.12 and TensorRT-LLM 1.0 at 32
    concurrent requests, budget 8,192) come within ±10% once prompts are prefilled whole; the spread-out mean
    put LAT-02 (1,024/128: a prompt every 4 steps) at -21%."""
    row = tc.validation_table().set_index("id").loc[case_id]
    assert abs(row["error [%]"]) <= 10.0


def test_generation_throughput_rejects_a_bad_budget():
    with pytest.raises(tc.ScenarioError, match="max_batched_tokens"):
        tc.generation_throughput("Llama-3.1-8B", "H100", gpus=1, prompt_tokens=100, response_tokens=100,
                                 max_batched_tokens=-5)
    with pytest.raises(tc.ScenarioError, match="trtllm-bench"):
        tc.generation_throughput("Llama-3.1-8B", "H100", gpus=1, prompt_tokens=100, response_tokens=100,
                                 max_batched_tokens="vllm")
    with pytest.raises(tc.ScenarioError, match="prompt_segments"):
        tc.generation_throughput("Llama-3.1-8B", "H100", gpus=1, prompt_tokens=100, response_tokens=100,
                                 max_batched_tokens=8192, prompt_segments=0)


def test_scenario_key_sets_the_engine_budget():
    """[generator] max_num_batched_tokens overrides the engine's default budget (vLLM 16,384 for the RL
    frameworks' offline engine, data/frameworks.toml). A budget far below a turn's tool output spreads every
    prefill over all steps, the old mean: GLM-5's MoE decode steps then read more experts (slower, -9%), while the
    GB300 agentic run's compute-bound prefill steps overlap its decode steps' memory time (faster, +4.5%; with 960
    sandboxes, since at the shipped 96 the sandboxes cap it either way). Both with the FP8 KV cache that was the
    rollout default before 2026-12-02 (with BF16 KV the GB300 run's smaller KV pool, not its prefill steps, sets its
    pace); GLM-5 as its scenario shipped before 2026-12-02 (96:32 aggregated, staleness bound 3, KV pinned through
    tool calls: its shipped disaggregated decode instances take no prefill into their steps)."""

    from tcocalc.rl.cluster import resolve

    root = ROOT / "scenarios"
    fp8_kv = {"generator.kv_precision": "fp8"}
    old_glm5 = {"generator.disaggregated": False, "orchestration.max_staleness": 3, "generator.kv_retention": "pinned"}
    for stem, direction, extra in (("glm5_h200_drift", -1, {**fp8_kv, **old_glm5}),
                                   ("gb300_agentic_96", +1, {"sandbox.max_concurrency": 960, **fp8_kv})):
        base = tc.load_scenario(root / f"{stem}.toml").with_values(extra)
        if stem.startswith("glm5"):
            base = base.with_split(96, 32)
        tight = base.with_values({"generator.max_num_batched_tokens": 16})
        assert resolve(base).settings.max_num_batched_tokens == 16384
        assert resolve(tight).settings.max_num_batched_tokens == 16
        a = tc.evaluate(base).metrics["useful_samples_per_s"]
        b = tc.evaluate(tight).metrics["useful_samples_per_s"]
        assert direction * (b / a - 1) > 0.03, (stem, a, b)
    with pytest.raises(tc.ScenarioError, match="max_num_batched_tokens"):
        tc.load_scenario(root / "default.toml").with_values({"generator.max_num_batched_tokens": 0})


def test_engine_budget_follows_the_documented_gpu_gates():
    """serving-engines.md A.1/A.2: vLLM's offline engine batches 16,384 tokens per step on >= 70 GiB GPUs and
    8,192 on smaller ones or an A100; SGLang's chunked_prefill_size is 8,192 on 60-160 GiB GPUs and 16,384 from
    160 GiB (B200, MI300X)."""
    from tcocalc.catalog.frameworks import engine_max_num_batched_tokens as budget

    assert [budget("vllm", tc.hardware(h)) for h in ("H100", "A100", "B200")] == [16384, 8192, 16384]
    assert [budget("sglang", tc.hardware(h)) for h in ("H100", "H200", "B200", "MI300X")] == [8192, 8192, 16384,
                                                                                                16384]
