"""KV-block granularity (issue 13 item 1): a paged KV cache hands a request whole blocks, so fewer requests fit
than token-granular accounting says. Block sizes are the engines' documented defaults (data/frameworks.toml:
vLLM 16, MLA 64 / 128 on Blackwell; TensorRT-LLM tokens_per_block 32; SGLang's page of 1)."""

import math

import pytest

import tcocalc as tc
from tcocalc.catalog.frameworks import benchmark_defaults, engine_kv_block_tokens
from tcocalc.roofline.serving import kv_tokens_held
from tests.conftest import ROOT


def test_tokens_held_hand_derived():
    # TensorRT-LLM GUARANTEED_NO_EVICT: ceil((1000 + 1000) / 32) = 63 blocks = 2,016 tokens for a 2,000-token request
    assert kv_tokens_held(1500.0, 1000, 1000, "full", 32) == 2016.0
    assert kv_tokens_held(1500.0, 1024, 8192, "full", 32) == 9216.0  # a whole number of blocks already
    # vLLM, admission against current tokens: the mean context plus half a block less one token, (16 - 1)/2
    assert kv_tokens_held(5120.0, 1024, 8192, "current", 16) == 5127.5
    assert kv_tokens_held(5120.0, 1024, 8192, "current", 1) == 5120.0  # SGLang's token-granular page


def test_engine_blocks_follow_the_documented_defaults():
    h100, b200 = tc.hardware("H100"), tc.hardware("B200")
    gqa, mla = tc.model("Llama-3.1-8B"), tc.model("DeepSeek-V3")
    assert engine_kv_block_tokens("vllm", gqa, h100) == 16
    assert engine_kv_block_tokens("vllm", mla, h100) == 64    # FlashMLA
    assert engine_kv_block_tokens("vllm", mla, b200) == 128   # CUTLASS MLA on Blackwell
    assert engine_kv_block_tokens("sglang", mla, b200) == 1
    assert benchmark_defaults("trtllm-bench")["kv_block_tokens"] == 32


def test_whole_blocks_lower_the_kv_bound_concurrency():
    """At 1000/1000 with full reservation a request holds 2,016 tokens in 32-token blocks instead of 2,000, so the
    KV-bound concurrency falls by the ratio (floored per rank), and a block of 1 changes nothing."""
    kw = dict(gpus=1, prompt_tokens=1000, response_tokens=1000, precision="fp8", kv_reservation="full")
    token = tc.generation_throughput("Llama-3.1-8B", "H100", **kw)
    assert tc.generation_throughput("Llama-3.1-8B", "H100", kv_block_tokens=1, **kw) == token
    blocks = tc.generation_throughput("Llama-3.1-8B", "H100", kv_block_tokens=32, **kw)
    assert blocks.max_concurrency == math.floor(token.max_concurrency * 2000 / 2016) or \
        blocks.max_concurrency == math.floor(token.max_concurrency * 2000 / 2016) + 1
    assert blocks.max_concurrency < token.max_concurrency
    with pytest.raises(tc.ScenarioError, match="kv_block_tokens"):
        tc.generation_throughput("Llama-3.1-8B", "H100", kv_block_tokens=0, **kw)
    with pytest.raises(tc.ScenarioError, match="kv_block_tokens"):
        tc.generation_throughput("Llama-3.1-8B", "H100", kv_block_tokens=2.5, **kw)


def test_the_rl_generator_takes_its_engines_block():
    """The RL generator's instance holds vLLM's 16-token blocks by default and SGLang's single-token pages under
    engine = "sglang"; the two KV-bound slot counts differ by the half block a trajectory wastes."""

    from tcocalc.rl.capacity import generator_capacity
    from tcocalc.rl.cluster import resolve
    from tcocalc.rl.phases import phase_list, workload_stats

    scn = tc.load_scenario(ROOT / "scenarios" / "default.toml")
    name, start, steps, over = phase_list(scn)[0]
    ws = workload_stats(scn, over, name, start, steps)
    vllm = generator_capacity(scn, resolve(scn), ws)
    sg = scn.with_values({"generator.engine": "sglang"})
    sglang = generator_capacity(sg, resolve(sg), workload_stats(sg, over, name, start, steps))
    assert vllm.instance == sglang.instance
    assert vllm.b_max <= sglang.b_max
    assert vllm.b_max >= math.floor(sglang.b_max * ws.context_tokens / (ws.context_tokens + 7.5)) - 1


def test_scenario_key_sets_the_block():
    """[generator] kv_block_tokens overrides the engine's default: a 4,096-token block makes each trajectory of the
    default scenario hold about 2,048 tokens more, so fewer fit; a bad value is a ScenarioError naming the key."""

    from tcocalc.rl.capacity import generator_capacity
    from tcocalc.rl.cluster import resolve
    from tcocalc.rl.phases import phase_list, workload_stats

    scn = tc.load_scenario(ROOT / "scenarios" / "default.toml")
    name, start, steps, over = phase_list(scn)[0]
    ws = workload_stats(scn, over, name, start, steps)
    big = scn.with_values({"generator.kv_block_tokens": 4096})
    base_cap, big_cap = generator_capacity(scn, resolve(scn), ws), generator_capacity(big, resolve(big), ws)
    assert big_cap.b_max < base_cap.b_max
    assert big_cap.b_max == pytest.approx(base_cap.b_max * (ws.context_tokens + 7.5) / (ws.context_tokens + 2047.5),
                                          abs=1.0)
    with pytest.raises(tc.ScenarioError, match="kv_block_tokens"):
        scn.with_values({"generator.kv_block_tokens": 0})
