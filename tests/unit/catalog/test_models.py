"""Model catalog: parameter counts, KV bytes and FLOPs per token (validation MOD-*, KV-*, MEM-01, TRN-02)."""

import json

import pytest

import tcocalc as tc

# Reference counts: ../shared/reference/models.csv (params_*_b_computed, which facts.md §2.1 checks
# against the official totals) and the official model cards (params_*_b).
REFERENCE = {  # name: (computed total B, computed active B, official total B, official active B)
    "Qwen3-235B-A22B": (235.09, 22.19, 235, 22),          # MOD-01
    "Llama-3.1-70B": (70.55, 70.55, 70.6, 70.6),          # MOD-02
    "DeepSeek-V3": (671.03, 37.55, 671, 37),              # MOD-03
    "Qwen3-30B-A3B": (30.53, 3.35, 30.5, 3.3),            # MOD-04
    "Qwen3-8B": (8.19, 8.19, 8.2, 8.2),
    "Qwen3-32B": (32.76, 32.76, 32.8, 32.8),
    "GLM-4.5": (352.8, 33.6, 355, 32),
    "GLM-4.5-Air": (106.85, 13.42, 106, 12),
    "GLM-5": (743.9, 41.78, 744, 40),
    "Llama-3.1-8B": (8.03, 8.03, 8.03, 8.03),
    "Qwen2.5-1.5B": (1.54, 1.54, 1.54, 1.54),
    "Qwen2.5-7B": (7.62, 7.62, 7.61, 7.61),
    "Qwen2.5-32B": (32.76, 32.76, 32.5, 32.5),
}


@pytest.mark.reference
@pytest.mark.parametrize("name", sorted(REFERENCE))
def test_params_within_one_percent_of_published(name):
    total, active, official_total, _ = REFERENCE[name]
    m = tc.model(name)
    assert m.params_total / 1e9 == pytest.approx(total, rel=0.01)
    assert m.params_active / 1e9 == pytest.approx(active, rel=0.01)
    # official totals are rounded labels (GLM-4.5's 355B includes its MTP layer): still within 1%
    assert m.params_total / 1e9 == pytest.approx(official_total, rel=0.01)


@pytest.mark.reference
def test_mod02_llama_70b_exact_count():
    """MOD-02: 70,553,706,496 parameters (public HF config; test fixture)."""
    assert tc.model("Llama-3.1-70B").params_total == 70_553_706_496


@pytest.mark.reference
@pytest.mark.parametrize("name,official_active", [("Qwen3-235B-A22B", 22e9), ("DeepSeek-V3", 37e9)])
def test_official_active_labels_within_rounding(name, official_active):
    """Official actives are labels rounded down to the billion ("22B", "37B")."""
    assert official_active <= tc.model(name).params_active < official_active + 1e9


@pytest.mark.reference
@pytest.mark.parametrize("name,kv", [
    ("Qwen3-235B-A22B", 192_512), ("Qwen3-30B-A3B", 98_304), ("Qwen3-8B", 147_456), ("Qwen3-32B", 262_144),
    ("Llama-3.1-8B", 131_072), ("Llama-3.1-70B", 327_680), ("GLM-4.5", 376_832), ("GLM-4.5-Air", 188_416),
    ("DeepSeek-V3", 61 * 576 * 2), ("GLM-5", 78 * 576 * 2),
])
def test_kv01_kv02_bytes_per_token_exact(name, kv):
    """KV-01 (GQA 2·L·H_kv·d_h·β) and KV-02 (MLA L·(d_c+d_r)·β), bf16."""
    assert tc.model(name).kv_bytes_per_token("bf16") == kv


@pytest.mark.reference
def test_kv03_fp8_halves_kv():
    assert tc.model("Qwen3-235B-A22B").kv_bytes_per_token("fp8") == 96_256


@pytest.mark.reference
@pytest.mark.parametrize("layers,expected", [(80, 327_680), (126, 516_096)])
def test_kv04_cross_check_published_kv(layers, expected):
    """KV-04 (arXiv 2505.09343): Qwen-2.5-72B "328 KB", Llama-3.1-405B "516 KB" (8 KV heads, d_h 128)."""
    cfg = {"hidden_size": 8192, "num_hidden_layers": layers, "num_attention_heads": 64,
           "num_key_value_heads": 8, "head_dim": 128, "intermediate_size": 28672, "vocab_size": 128256}
    assert tc.ModelArch.from_hf_config(cfg).kv_bytes_per_token("bf16") == pytest.approx(expected, rel=0.01)


@pytest.mark.reference
def test_mem01_qwen3_235b_weights_and_trainer_state():
    """MEM-01: bf16 weights ≈ 470 GB; 16 B/param trainer state ≈ 3.76 TB -> ≥ 30 H200 at u_mem 0.9."""
    m = tc.model("Qwen3-235B-A22B")
    assert m.weight_bytes("bf16") == pytest.approx(470e9, rel=0.01)
    assert 16 * m.params_total == pytest.approx(3.76e12, rel=0.01)
    assert 16 * m.params_total / (0.9 * tc.hardware("H200").hbm_bytes) == pytest.approx(29.6, abs=0.5)


@pytest.mark.reference
def test_trn02_llama70b_flops_per_token():
    """TRN-02 (Megatron-Bridge): 6·N_fl + 6·L·H_q·d_h·T at T=8192, N_fl = 69.50e9 -> 4.492e11 FLOP/token;
    x 1,602 tok/s = 719.7 TFLOP/s (reported 719)."""
    m = tc.model("Llama-3.1-70B")
    assert m.flop_params == pytest.approx(69.50e9, rel=0.001)
    f = m.training_flops_per_token(8192)
    assert f == pytest.approx(4.492e11, rel=0.01)
    assert f * 1602 / 1e12 == pytest.approx(719, rel=0.01)


@pytest.mark.reference
def test_rl12_qwen3_235b_flop_params_and_sample_flops():
    """RL-12 / rl-modeling §3.1: N_fl = 21.57e9; causal attention coefficient 6·L·H_q·d_h = 4.62e6;
    F_sample at T = 16.5k = 3.39e15 FLOP."""
    m = tc.model("Qwen3-235B-A22B")
    assert m.flop_params == pytest.approx(21.57e9, rel=0.001)
    t = 16_500
    assert m.training_flops_per_token(t) * t == pytest.approx(3.39e15, rel=0.01)


@pytest.mark.reference
def test_trn11_deepseek_v3_training_flops_per_token():
    """TRN-11 (DeepSeek-V3 report, secondary quote): about 250 GFLOP per training token at 4K context."""
    assert tc.model("DeepSeek-V3").training_flops_per_token(4096) == pytest.approx(250e9, rel=0.02)


def test_noncausal_attention_doubles_the_attention_term():
    m = tc.model("Llama-3.1-8B")
    dense = 6 * m.flop_params
    assert (m.training_flops_per_token(8192, causal=False) - dense) == pytest.approx(
        2 * (m.training_flops_per_token(8192) - dense))


def test_dsa_caps_attended_context():
    glm5 = tc.model("GLM-5")
    assert glm5.attended_context(100_000) == 2048
    assert tc.model("DeepSeek-V3").attended_context(100_000) == 100_000


@pytest.mark.parametrize("alias,name", [("Llama-3.3-70B", "Llama-3.1-70B"), ("deepseek-r1", "DeepSeek-V3"),
                                        ("qwen3-235b-a22b-instruct-2507", "Qwen3-235B-A22B")])
def test_aliases(alias, name):
    assert tc.model(alias).name == name


def test_unknown_model_suggests():
    with pytest.raises(tc.UnknownEntryError) as err:
        tc.model("Qwen3-253B-A22B")
    assert "Qwen3-235B-A22B" in err.value.matches


def test_from_hf_config_names_missing_key():
    with pytest.raises(tc.ScenarioError) as err:
        tc.ModelArch.from_hf_config({"hidden_size": 4096, "num_attention_heads": 32})
    assert err.value.field == "model.config.num_hidden_layers"


def test_from_hf_config_rejects_inconsistent_heads():
    cfg = {"hidden_size": 4096, "num_hidden_layers": 2, "num_attention_heads": 32, "num_key_value_heads": 5,
           "intermediate_size": 100, "vocab_size": 10}
    with pytest.raises(tc.ScenarioError, match="multiple"):
        tc.ModelArch.from_hf_config(cfg)


def test_from_hf_config_rejects_negative_sizes():
    cfg = {"hidden_size": -4096, "num_hidden_layers": 2, "num_attention_heads": 32,
           "intermediate_size": 100, "vocab_size": 10}
    with pytest.raises(tc.ScenarioError, match="hidden_size"):
        tc.ModelArch.from_hf_config(cfg)


def test_catalog_config_round_trips_through_from_hf_config(root):
    raw = json.loads((root / "data" / "models" / "qwen3_235b_a22b.json").read_text())
    assert tc.ModelArch.from_hf_config(raw["config"]).params_total == tc.model("Qwen3-235B-A22B").params_total


def test_model_table():
    df = tc.model_table()
    assert len(df) == len(tc.model_names()) >= 14
    assert {"params_total [B]", "kv_bf16 [B/token]", "source", "date"} <= set(df.columns)


# ---------------------------------------------------------------- from_hf_config validates every key it reads
DENSE = {"model_type": "qwen3", "hidden_size": 4096, "num_hidden_layers": 36, "num_attention_heads": 32,
         "num_key_value_heads": 8, "head_dim": 128, "intermediate_size": 12288, "vocab_size": 151936,
         "tie_word_embeddings": False, "max_position_embeddings": 40960}
MLA_MOE = {"model_type": "deepseek_v3", "hidden_size": 2048, "num_hidden_layers": 27, "num_attention_heads": 16,
           "num_key_value_heads": 16, "kv_lora_rank": 512, "q_lora_rank": None, "qk_nope_head_dim": 128,
           "qk_rope_head_dim": 64, "v_head_dim": 128, "n_routed_experts": 64, "num_experts_per_tok": 6,
           "moe_intermediate_size": 1408, "n_shared_experts": 2, "first_k_dense_replace": 1,
           "intermediate_size": 10944, "vocab_size": 102400}


@pytest.mark.parametrize("base,key,value", [
    (DENSE, "num_attention_heads", 0),                # was ZeroDivisionError
    (DENSE, "hidden_size", float("inf")),             # was OverflowError
    (DENSE, "hidden_size", float("nan")),
    (DENSE, "num_attention_heads", "x"),              # was a bare ValueError naming no field
    (DENSE, "num_attention_heads", "32"),             # a count is a number, not a string
    (DENSE, "num_attention_heads", True),             # booleans are not counts
    (DENSE, "num_hidden_layers", 36.5),               # not a whole number
    (DENSE, "num_hidden_layers", -1),
    (DENSE, "vocab_size", 10**30),                    # beyond any real config
    (DENSE, "intermediate_size", [12288]),
    (DENSE, "num_key_value_heads", 0),
    (DENSE, "num_key_value_heads", 5),                # 32 heads are not a multiple of 5
    (DENSE, "head_dim", 0),
    (DENSE, "tie_word_embeddings", "false"),          # a truthy string must not read as True
    (DENSE, "tie_word_embeddings", 1),
    (DENSE, "use_qk_norm", "yes"),
    (DENSE, "model_type", 3),
    (DENSE, "max_position_embeddings", float("-inf")),
    (MLA_MOE, "kv_lora_rank", -1),
    (MLA_MOE, "kv_lora_rank", "512"),
    (MLA_MOE, "qk_rope_head_dim", 0),
    (MLA_MOE, "v_head_dim", None),                    # null is "absent": MLA needs it
    (MLA_MOE, "q_lora_rank", -5),
    (MLA_MOE, "n_routed_experts", -1),
    (MLA_MOE, "num_experts_per_tok", 65),             # more than the 64 experts
    (MLA_MOE, "num_experts_per_tok", 0),
    (MLA_MOE, "moe_intermediate_size", 0),
    (MLA_MOE, "first_k_dense_replace", 28),           # more dense layers than layers
    (MLA_MOE, "n_shared_experts", float("nan")),
], ids=lambda v: ("dense" if v is DENSE else "mla_moe") if isinstance(v, dict) else None)
def test_from_hf_config_names_the_bad_key(base, key, value):
    with pytest.raises(tc.ScenarioError) as err:
        tc.ModelArch.from_hf_config({**base, key: value})
    assert err.value.field == f"model.config.{key}"
    assert len(str(err.value)) < 300


def test_from_hf_config_names_the_key_actually_read():
    cfg = {**MLA_MOE, "num_local_experts": 8}
    del cfg["n_routed_experts"]
    assert tc.ModelArch.from_hf_config(cfg).num_experts == 8
    with pytest.raises(tc.ScenarioError) as err:
        tc.ModelArch.from_hf_config({**cfg, "num_local_experts": "8"})
    assert err.value.field == "model.config.num_local_experts"


def test_from_hf_config_heads_must_leave_a_head_dim():
    cfg = {**DENSE, "hidden_size": 16}
    del cfg["head_dim"]  # hidden_size // num_attention_heads would be 0
    with pytest.raises(tc.ScenarioError) as err:
        tc.ModelArch.from_hf_config(cfg)
    assert err.value.field == "model.config.num_attention_heads"


def test_from_hf_config_qwen_interleaved_layers_name_their_key():
    moe = {**DENSE, "model_type": "qwen3_moe", "num_experts": 8, "num_experts_per_tok": 2,
           "moe_intermediate_size": 768}
    for key, value in (("decoder_sparse_step", 2), ("mlp_only_layers", [0, 3]), ("decoder_sparse_step", 0),
                       ("mlp_only_layers", "0")):
        with pytest.raises(tc.ScenarioError) as err:
            tc.ModelArch.from_hf_config({**moe, key: value})
        assert err.value.field == f"model.config.{key}"


def test_from_hf_config_accepts_whole_floats_and_nulls_as_before():
    a = tc.ModelArch.from_hf_config(DENSE)
    assert tc.ModelArch.from_hf_config({**DENSE, "hidden_size": 4096.0, "max_position_embeddings": None}) == \
        a.model_copy(update={"max_position_embeddings": 0})
    assert tc.ModelArch.from_hf_config(MLA_MOE).q_lora_rank == 0


def test_from_hf_config_is_unchanged_for_every_catalog_model(root):
    for path in sorted((root / "data" / "models").glob("*.json")):
        raw = json.loads(path.read_text())
        built = tc.ModelArch.from_hf_config(raw["config"], name=raw["name"])
        cat = tc.model(raw["name"])
        assert built.summary() == cat.summary(), path.name
        assert built.forward_flops_per_token(8192) == cat.forward_flops_per_token(8192)


def test_cached_parameter_counts_follow_a_copy_with_changes():
    """The derived counts are cached per instance; a copy with changed fields recomputes them (a notebook what-if:
    Qwen3-235B-A22B with 64 experts instead of 128), equal to a model built from the same fields."""
    m = tc.model("Qwen3-235B-A22B")
    before = m.params_total
    fewer = m.model_copy(update={"num_experts": 64})
    fresh = tc.ModelArch.model_validate({**m.model_dump(), "num_experts": 64})
    assert fewer.params_total == fresh.params_total < before
    assert fewer.routed_expert_params_total == pytest.approx(m.routed_expert_params_total / 2)
    assert m.params_total == before and fewer == fresh
