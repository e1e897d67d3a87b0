"""Non-gated (GPT) MLPs and forced activation recompute: what validation TRN-09 and TRN-10 need
(Megatron-LM's GPT-3-175B, MT-NLG-530B and 1T on A100/H100; Korthikanti et al. 2022, arXiv 2205.05198)."""

import pytest

import tcocalc as tc
from tcocalc.catalog.calibration import calibration_for
from tcocalc.roofline.forward import GELU_PASSES, SWIGLU_PASSES, gemm_efficiency, mlp_activation_passes
from tcocalc.roofline.training import activation_bytes_per_layer
from tests.conftest import ROOT

A100_64 = dict(gpus=64, seq_tokens=2048, precision="bf16", parallel=tc.Parallelism(tp=8, pp=8, dp=1),
               global_batch_tokens=64 * 2048)


def test_gpt3_175b_params_hand_derived():
    """12·L·h² (4h² attention + 2·h·4h MLP) + V·h (tied embedding) + 2h norms per layer + the final norm:
    96 layers, h 12288, V 51200 -> 174.58e9 (position embeddings and biases not counted)."""
    m = tc.model("GPT-3-175B")
    L, h, V = 96, 12288, 51200
    assert not m.mlp_gated and m.tie_word_embeddings
    assert m.dense_mlp_params == 2 * h * 4 * h + h
    assert m.params_total == 12 * L * h**2 + V * h + 2 * L * h + h
    assert 174e9 <= m.params_total <= 175e9


@pytest.mark.parametrize("name,published", [("GPT-3-175B", 175e9), ("MT-NLG-530B", 530e9), ("Megatron-1T", 1e12)])
def test_megatron_gpt_labels_within_one_percent(name, published):
    assert tc.model(name).params_total == pytest.approx(published, rel=0.01)


def test_gating_from_the_config():
    base = {"hidden_size": 1024, "num_hidden_layers": 4, "num_attention_heads": 16, "intermediate_size": 4096,
            "vocab_size": 50432}
    assert tc.ModelArch.from_hf_config({**base, "model_type": "llama"}).mlp_gated
    assert not tc.ModelArch.from_hf_config({**base, "model_type": "gpt_neox"}).mlp_gated
    assert not tc.ModelArch.from_hf_config({**base, "gated_linear_unit": False}).mlp_gated
    assert tc.ModelArch.from_hf_config({**base, "model_type": "gpt_neox", "gated_linear_unit": True}).mlp_gated
    gated = tc.ModelArch.from_hf_config(base)
    plain = tc.ModelArch.from_hf_config({**base, "gated_linear_unit": False})
    assert gated.dense_mlp_params - plain.dense_mlp_params == 1024 * 4096
    with pytest.raises(tc.ScenarioError, match="gated_linear_unit"):
        tc.ModelArch.from_hf_config({**base, "gated_linear_unit": "no"})


def test_gelu_makes_two_intermediate_passes():
    assert mlp_activation_passes(tc.model("GPT-3-175B")) == GELU_PASSES == 2.0
    assert mlp_activation_passes(tc.model("Llama-3.1-70B")) == SWIGLU_PASSES == 3.0


@pytest.mark.parametrize("tp", [1, 8])
def test_activation_bytes_are_korthikanti_34_sh(tp):
    """Korthikanti section 4.1 (flash attention, no 5as/h term): 34·s·h/tp per layer at I = 4h without recompute
    (11h attention + 19h MLP + 4h LayerNorms); 2·s·h/tp with full recompute."""
    m = tc.model("GPT-3-175B")
    s, h = 2048, 12288
    assert activation_bytes_per_layer(m, s, tp, "none") == pytest.approx(34 * s * h / tp, rel=1e-12)
    assert activation_bytes_per_layer(m, s, tp, "full") == pytest.approx(2 * s * h / tp, rel=1e-12)
    gated_at_4h = tc.model("GPT-3-175B").model_copy(update={"mlp_gated": True})
    assert activation_bytes_per_layer(gated_at_4h, s, tp, "none") == pytest.approx(34 * s * h / tp, rel=1e-12)


def test_full_recompute_costs_one_more_forward():
    """Forcing "full" at the same layout: the per-layer compute is 4/3 of "none" (the LM head is not recomputed)."""
    none = tc.training_throughput("GPT-3-175B", "A100", recompute="none", **A100_64)
    full = tc.training_throughput("GPT-3-175B", "A100", recompute="full", **A100_64)
    assert (none.recompute, full.recompute) == ("none", "full")
    acc, m = tc.hardware("A100"), tc.model("GPT-3-175B")
    cal = calibration_for(acc)
    s, tp, micro = 2048, 8, 64
    head = micro * 6.0 * s * m.lm_head_params / tp / (acc.peak_flops_per_s("bf16")
                                                      * gemm_efficiency(cal, "bf16", s, m.vocab_size / tp, 12288))
    assert full.compute_s - head == pytest.approx(4.0 / 3.0 * (none.compute_s - head), rel=1e-9)
    assert full.step_time_s > none.step_time_s


def test_forcing_the_mode_the_search_picks_changes_nothing():
    auto = tc.training_throughput("Llama-3.1-70B", "H100", gpus=64, seq_tokens=8192, precision="fp8")
    forced = tc.training_throughput("Llama-3.1-70B", "H100", gpus=64, seq_tokens=8192, precision="fp8",
                                    recompute=auto.recompute)
    assert forced == auto


@pytest.mark.parametrize("bad", ["partial", "Full", 1, ""])
def test_bad_recompute_names_the_field(bad):
    with pytest.raises(tc.ScenarioError, match="recompute") as err:
        tc.training_throughput("GPT-3-175B", "A100", recompute=bad, **A100_64)
    assert err.value.field == "recompute"


def test_a_forced_mode_that_does_not_fit_says_what_would():
    args = dict(A100_64, seq_tokens=8192, global_batch_tokens=64 * 8192, optimizer_offload=False)
    with pytest.raises(tc.ScenarioError, match="'none' does not fit.*'full' fits") as err:
        tc.training_throughput("GPT-3-175B", "A100", recompute="none", **args)
    assert err.value.field == "recompute"
    assert tc.training_throughput("GPT-3-175B", "A100", recompute="full", **args).recompute == "full"


def test_step_s_and_mfu_cases():
    from tcocalc.roofline.validation import predict_case

    case = {"id": "X", "kind": "step_s", "model": "GPT-3-175B", "hardware": "A100", "precision": "bf16", "gpus": 64,
            "parallel": {"tp": 8, "pp": 8, "dp": 1}, "seq_tokens": 2048, "global_batch": 64, "recompute": "full"}
    est = tc.training_throughput("GPT-3-175B", "A100", recompute="full", **A100_64)
    assert predict_case(case) == pytest.approx(est.step_time_s, rel=1e-12)
    assert predict_case({**case, "kind": "mfu"}) == est.mfu


def test_a_case_with_a_bad_recompute_is_named(root):
    from tcocalc.catalog import cases

    text = (root / "data" / "validation_cases.toml").read_text()
    with pytest.raises(tc.DataFileError, match="TRN-10a.*recompute"):
        cases.parse_validation_cases(text.replace('recompute = "full"', 'recompute = "most"', 1))


def test_ampere_training_efficiency_is_what_the_documented_fit_gives():
    """data/calibration.toml's Ampere training runtime efficiency (0.974, kind "fitted") is what
    ``benchmarks/fit_calibration.py`` fits on Ampere's rows, the six TRN-10 iteration times, on today's model (within
    1%); the fit frees only that factor (GENERATION_PARAMS), and Ampere's other fitted-kind factors stay borrowed."""
    import importlib.util

    path = ROOT / "benchmarks" / "fit_calibration.py"
    spec = importlib.util.spec_from_file_location("fit_calibration", path)
    fit = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(fit)
    rows, res = fit.fit_generation("ampere")
    assert sorted(c["id"] for c in rows) == [f"TRN-10{x}" for x in "abcdef"]
    shipped = calibration_for(tc.hardware("A100"))
    assert res.x[0] == pytest.approx(shipped.training_runtime_efficiency, rel=0.01)
    assert shipped.provenance["training_runtime_efficiency"]["kind"] == "fitted"
    assert shipped.provenance["inference_runtime_efficiency"]["kind"] == "borrowed"


def test_the_data_file_check_knows_the_same_recompute_modes():
    """catalog.cases checks a case's ``recompute`` against its own copy of the modes (the catalog layer may not import
    the roofline one): the copy must stay the training model's."""
    from tcocalc.catalog import cases
    from tcocalc.roofline.training import RECOMPUTE_MODES

    assert cases._RECOMPUTE == RECOMPUTE_MODES
