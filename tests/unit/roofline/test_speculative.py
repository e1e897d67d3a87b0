"""Speculative decoding with a one-layer draft module (MTP, EAGLE): tokens per step, the verification step's cost,
DeepSeek-V3's published speed-up, the production decode row it is needed for (GEN-11), the RL scenario keys and
their errors (tcocalc.roofline.speculative)."""

import math

import pytest

import tcocalc as tc
from tcocalc.catalog.calibration import calibration_for
from tcocalc.roofline.forward import forward_cost, resolve_inputs
from tcocalc.roofline.parallel import Parallelism
from tcocalc.roofline.speculative import DEEPSEEK_V3_MTP_ACCEPTANCE, tokens_per_step
from tcocalc.scenario import loads_scenario
from tests.unit.core.test_scenario import MINIMAL


def test_tokens_per_step_hand_derived():
    """Leviathan et al. 2023 eq. 1: E = (1 - a^(n+1)) / (1 - a)."""
    assert tokens_per_step(1, 0.875) == pytest.approx(1.875, rel=1e-12)
    assert tokens_per_step(3, 0.8) == pytest.approx(1 + 0.8 + 0.64 + 0.512, rel=1e-12)
    assert tokens_per_step(2, 1.0) == 3.0   # every draft accepted
    assert tokens_per_step(4, 0.0) == 1.0   # none accepted: the target's own token only


def test_verification_reads_the_kv_once_and_computes_every_position():
    """A verification pass of 1 + n positions per sequence multiplies a dense model's FLOPs by exactly 1 + n (GEMMs,
    attention math and logits all scale with the positions) while the KV cache is read once: at 64 sequences of
    4,000 tokens on Llama-3.1-8B (33.6 GB of BF16 KV per step) the bytes grow by the activations alone, < 1%."""
    m, acc, p, kv, par = resolve_inputs("Llama-3.1-8B", "H100", "bf16", None, Parallelism())
    cal = calibration_for(acc)
    kw = dict(precision=p, kv_precision=kv, dec_seqs=64.0, dec_ctx=4000.0)
    plain, verify = forward_cost(m, acc, cal, par, **kw), forward_cost(m, acc, cal, par, dec_tokens=2.0, **kw)
    assert float(verify["flops"]) == pytest.approx(2.0 * float(plain["flops"]), rel=1e-12)
    assert 1.0 < float(verify["bytes"]) / float(plain["bytes"]) < 1.01


def test_step_time_is_verify_plus_drafts_over_tokens_gained():
    """generation_throughput's TPOT = (verification pass + n one-layer draft passes) / E, from forward_cost directly
    (a decode-only instance at a pinned batch)."""
    m, acc, p, kv, par = resolve_inputs("Llama-3.1-8B", "H100", "bf16", None, Parallelism())
    cal = calibration_for(acc)
    est = tc.generation_throughput(m, acc, gpus=1, prompt_tokens=1000, response_tokens=1000, parallel=par,
                                   concurrency=32, interleaved_prefill=False, speculative_tokens=2,
                                   acceptance_rate=0.7)
    kw = dict(precision=p, kv_precision=kv, dec_seqs=32.0, dec_ctx=1500.0)
    step = float(forward_cost(m, acc, cal, par, dec_tokens=3.0, **kw)["stage_s"]) + 2.0 * float(
        forward_cost(m, acc, cal, par, layers=1.0, **kw)["stage_s"])
    gain = 1 + 0.7 + 0.49
    assert est.tokens_per_step == pytest.approx(gain)
    assert est.tpot_s == pytest.approx(step / gain, rel=1e-9)
    assert est.output_tokens_per_s == pytest.approx(32 * gain / step, rel=1e-9)


def test_deepseek_v3_mtp_speedup_at_light_load():
    """DeepSeek-V3 technical report (arXiv:2412.19437, section 5.4.3): one MTP draft token accepted 85-90% of the
    time gives "1.8 times TPS". At light load (one sequence per attention rank, decode bandwidth-bound) the model's
    speed-up for both ends of the range is within 10% of 1.8 (the report does not state its batch)."""
    par = Parallelism(dp=128, ep=128)
    kw = dict(gpus=128, prompt_tokens=1000, response_tokens=1000, precision="fp8", parallel=par, concurrency=128)
    plain = tc.generation_throughput("DeepSeek-V3", "H800", **kw)
    for a in DEEPSEEK_V3_MTP_ACCEPTANCE:
        mtp = tc.generation_throughput("DeepSeek-V3", "H800", speculative_tokens=1, acceptance_rate=a, **kw)
        assert plain.tpot_s / mtp.tpot_s == pytest.approx(1.8, rel=0.10)


def test_rejected_drafts_cost_time_and_heavy_batches_gain_less():
    """Physics, not a discount: at acceptance 0 the drafts and the wider pass are pure cost, and the speed-up shrinks
    as the batch grows and the verification pass turns compute-bound."""
    kw = dict(gpus=1, prompt_tokens=1000, response_tokens=1000, precision="fp8")
    plain = tc.generation_throughput("Llama-3.1-8B", "H100", concurrency=8, **kw)
    wasted = tc.generation_throughput("Llama-3.1-8B", "H100", concurrency=8, speculative_tokens=1,
                                      acceptance_rate=0.0, **kw)
    assert wasted.tpot_s > plain.tpot_s
    gains = []
    for b in (1, 256):
        a = tc.generation_throughput("Llama-3.1-8B", "H100", concurrency=b, **kw)
        s = tc.generation_throughput("Llama-3.1-8B", "H100", concurrency=b, speculative_tokens=1,
                                     acceptance_rate=0.8, **kw)
        gains.append(a.tpot_s / s.tpot_s)
    assert 1.0 < gains[1] < gains[0] < 1.8


def test_gen11_needs_speculation_at_its_tpot():
    """GEN-11 (DeepSeek's production decode, ~1,850 output tok/s per H800 at 20-22 tok/s per user): without MTP the
    TPOT limit holds the batch down and the model falls 41% short; with it the row is within its ±30%."""
    from tcocalc.roofline.validation import predict_case, validation_cases

    case = next(c for c in validation_cases() if c["id"] == "GEN-11")
    with_mtp = predict_case(case)
    without = predict_case({k: v for k, v in case.items() if k not in ("speculative_tokens", "acceptance_rate")})
    assert abs(with_mtp / case["published"] - 1) <= case["tolerance"]
    assert without / case["published"] - 1 < -case["tolerance"]


@pytest.mark.parametrize("kw, field", [
    (dict(acceptance_rate=0.8), "acceptance_rate"),
    (dict(speculative_tokens=1), "acceptance_rate"),
    (dict(speculative_tokens=1, acceptance_rate=1.5), "acceptance_rate"),
    (dict(speculative_tokens=1, acceptance_rate=math.nan), "acceptance_rate"),
    (dict(speculative_tokens=-1, acceptance_rate=0.8), "speculative_tokens"),
    (dict(speculative_tokens=1.5, acceptance_rate=0.8), "speculative_tokens"),
    (dict(speculative_tokens=True, acceptance_rate=0.8), "speculative_tokens"),
    (dict(speculative_tokens=1, acceptance_rate=0.8, draft_layers=0), "draft_layers"),
])
def test_bad_speculation_names_the_argument(kw, field):
    with pytest.raises(tc.ScenarioError) as err:
        tc.generation_throughput("Llama-3.1-8B", "H100", gpus=1, prompt_tokens=1000, response_tokens=1000, **kw)
    assert err.value.field == field


SPECULATIVE = MINIMAL.replace("gpus = 8\n[workload]", "gpus = 8\nspeculative_tokens = 1\nacceptance_rate = 0.8\n"
                                                      "[workload]")


def test_rl_scenario_speculation_raises_generator_capacity_at_most_by_the_tokens_gained():
    plain = tc.evaluate(loads_scenario(MINIMAL)).metrics["generator_capacity_samples_per_s"]
    spec = tc.evaluate(loads_scenario(SPECULATIVE)).metrics["generator_capacity_samples_per_s"]
    assert plain < spec <= 1.8 * plain


@pytest.mark.parametrize("text", [
    SPECULATIVE.replace("acceptance_rate = 0.8\n", ""),
    SPECULATIVE.replace("speculative_tokens = 1\n", ""),
])
def test_scenario_speculation_keys_go_together(text):
    with pytest.raises(tc.ScenarioError) as err:
        loads_scenario(text)
    assert err.value.field.startswith("generator")
    assert "speculative_tokens and acceptance_rate go together" in str(err.value)


def test_scenario_acceptance_out_of_range_names_the_field():
    with pytest.raises(tc.ScenarioError) as err:
        loads_scenario(SPECULATIVE.replace("acceptance_rate = 0.8", "acceptance_rate = 1.2"))
    assert err.value.field == "generator.acceptance_rate"


def test_disaggregated_decode_pool_speculates():
    """The decode pool of a disaggregated deployment takes the same arguments: its step is the verify + draft step,
    its TPOT that step over E, and it decodes faster per user than without speculation."""
    kw = dict(gpus=16, prompt_tokens=2000, response_tokens=1000, precision="fp8", max_tpot_s=0.03)
    plain = tc.disaggregated_throughput("Llama-3.1-8B", "H100", **kw)
    spec = tc.disaggregated_throughput("Llama-3.1-8B", "H100", speculative_tokens=1, acceptance_rate=0.8, **kw)
    assert spec.decode.tokens_per_step == pytest.approx(1.8) and plain.decode.tokens_per_step == 1.0
    assert spec.tpot_s == pytest.approx(spec.decode.step_s / 1.8, rel=1e-12)
    assert spec.decode.tokens_per_s_per_gpu > plain.decode.tokens_per_s_per_gpu
    with pytest.raises(tc.ScenarioError) as err:
        tc.disaggregated_throughput("Llama-3.1-8B", "H100", speculative_tokens=1, acceptance_rate=2.0, **kw)
    assert err.value.field == "acceptance_rate"


def test_the_draft_module_weights_take_kv_memory():
    """The draft module (one layer of the target's shape beside the LM head) is held in memory: Llama-3.1-8B BF16 on
    one H100 holds one more layer's attention and MLP weights (218.1M parameters, 436 MB) and fits fewer sequences."""
    m = tc.model("Llama-3.1-8B")
    kw = dict(gpus=1, prompt_tokens=1000, response_tokens=1000, parallel=Parallelism())
    plain = tc.generation_throughput(m, "H100", **kw)
    spec = tc.generation_throughput(m, "H100", speculative_tokens=1, acceptance_rate=0.8, **kw)
    layer = (m.attention_params_per_layer + m.dense_mlp_params) * 2.0
    assert layer == pytest.approx(436.2e6, rel=1e-3)
    assert spec.weights_per_gpu_bytes - plain.weights_per_gpu_bytes == pytest.approx(layer, rel=1e-9)
    assert spec.max_concurrency < plain.max_concurrency
