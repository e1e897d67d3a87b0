"""Issue 12 mechanisms, each against a published or hand-derived figure: framework presets, the decode-step
floor, colocated switching, weight sync that scales with the receiving side, engine memory and sequence caps,
pinned trainer layouts with context parallelism, and plain GRPO as the default."""

from __future__ import annotations

import tomllib
import typing

import pytest

import tcocalc as tc
from tcocalc._data import data_dir
from tcocalc.catalog.accelerators import hardware
from tcocalc.catalog.calibration import calibration_for, rl_calibration
from tcocalc.catalog.frameworks import FRAMEWORK_KEYS, engine_defaults, framework_presets, parse_frameworks
from tcocalc.catalog.models import model
from tcocalc.errors import DataFileError, InfeasibleError, ScenarioError
from tcocalc.rl.cluster import resolve
from tcocalc.rl.decode_floor import allreduce_latency, decode_floor_seconds
from tcocalc.rl.switching import checkpoint_tensors, colocated_switch_seconds
from tcocalc.rl.weight_sync import weight_sync_seconds
from tcocalc.roofline.parallel import Parallelism
from tcocalc.roofline.training import training_step
from tcocalc.scenario import Orchestration
from tcocalc.studies.rl_validation import fit_ipc_refit, rl_refit_table
from tests.conftest import ROOT

H100, GB200 = hardware("H100"), hardware("GB200-NVL72")


def _scn(**over):
    base = tc.load_scenario("scenarios/default.toml")
    return base.with_values(over)


# ---------------------------------------------------------------- presets
def test_every_preset_has_every_key_with_a_source_and_the_schema_lists_them_all():
    raw = tomllib.loads((data_dir() / "frameworks.toml").read_text())
    presets = framework_presets()
    assert set(presets) == set(typing.get_args(Orchestration.model_fields["framework"].annotation))
    for name, p in presets.items():
        assert set(p) == set(FRAMEWORK_KEYS)
        for key in FRAMEWORK_KEYS:
            assert raw["framework"][name]["sources"][key].strip(), (name, key)
    assert engine_defaults("vllm") == {"max_num_seqs": 1024, "max_num_batched_tokens": 16384,
                                       "cuda_graph_max_batch": 512, "max_num_seqs_small_gpu": 256,
                                       "small_gpu_below_gib": 70, "max_num_batched_tokens_small_gpu": 8192,
                                       "max_num_batched_tokens_large_gpu": 16384,
                                       "large_gpu_from_gib": 160, "kv_block_tokens": 16, "kv_block_tokens_mla": 64,
                                       "kv_block_tokens_mla_blackwell": 128}  # serving-engines.md A.1


def test_a_preset_without_a_source_is_refused_naming_the_field():
    text = (data_dir() / "frameworks.toml").read_text().replace('cuda_graphs = "assumption: neutral default;',
                                                                  'cuda_graphs_x = "', 1)
    with pytest.raises(DataFileError, match="sources.cuda_graphs"):
        parse_frameworks(text)


def test_unknown_framework_lists_the_presets():
    with pytest.raises(ScenarioError) as exc:
        _scn(**{"orchestration.framework": "deepspeed-chat"})
    assert exc.value.field == "orchestration.framework"
    for name in ("nemo-rl", "verl-fsdp", "slime", "areal", "prime-rl", "generic"):
        assert name in str(exc.value)


def test_preset_defaults_and_explicit_keys_override_them():
    nemo = resolve(_scn(**{"orchestration.framework": "nemo-rl"})).settings
    assert (nemo.old_logprob_pass, nemo.reference_model, nemo.async_scheduling, nemo.bucketed_weight_load,
            nemo.trainer_overhead) == (True, True, False, False, 1.2)
    generic = resolve(_scn()).settings
    assert (generic.old_logprob_pass, generic.reference_model, generic.sync_blocks_trainer) == (False, False, True)
    over = resolve(_scn(**{"orchestration.framework": "nemo-rl", "trainer.reference_model": False,
                            "generator.cuda_graphs": False})).settings
    assert over.reference_model is False and over.cuda_graphs is False and over.old_logprob_pass is True
    assert resolve(_scn(**{"orchestration.framework": "prime-rl"})).settings.sync_blocks_trainer is False
    every = resolve(_scn(**{"orchestration.framework": "nemo-rl", "generator.async_scheduling": True,
                             "generator.bucketed_weight_load": True, "trainer.framework_overhead": 1.0})).settings
    assert (every.async_scheduling, every.bucketed_weight_load, every.trainer_overhead) == (True, True, 1.0)


def test_a_reference_pass_costs_a_third_of_a_training_pass():
    """F_sample·(1 + n_extra/3): the reference pass alone lowers the trainer's samples/s by 1/(1 + 1/3)."""
    scn = _scn(**{"orchestration.mode": "colocated"})
    a = tc.evaluate(scn).details["run"]["rates"].trainer_samples_per_s[0]
    b = tc.evaluate(scn.with_values({"trainer.reference_model": True})).details["run"]["rates"].trainer_samples_per_s[0]
    assert b / a == pytest.approx(3.0 / 4.0, rel=1e-9)


# ---------------------------------------------------------------- decode floor
def test_allreduce_latency_by_group():
    cal = rl_calibration()
    assert allreduce_latency(H100, 8) == cal["allreduce_latency_scaleup_s"] == pytest.approx(10e-6)
    assert allreduce_latency(H100, 16) == pytest.approx(88e-6)          # spans two HGX servers: measured IB
    assert allreduce_latency(GB200, 16) == pytest.approx(6.6e-6 + 30 * 0.6e-6)  # NCCL ring LL, NVL72
    assert allreduce_latency(GB200, 8) == pytest.approx(6.6e-6 + 14 * 0.6e-6)   # two trays: no CUDA IPC
    assert allreduce_latency(GB200, 4) == pytest.approx(10e-6)                  # one tray: custom all-reduce
    assert allreduce_latency(GB200, 32) == pytest.approx(43.8e-6)


def test_decode_floor_counts_layers_collectives_and_eager_steps():
    m = model("DeepSeek-V3")
    graphs = decode_floor_seconds(m, H100, Parallelism(tp=32), [1.0, 600.0], cuda_graphs=True, graph_max_batch=512)
    # 122 all-reduces across 4 servers: the measured 2-server 88 us grown as NCCL's tree LL model with the servers,
    # (6.8 + 2·(7·0.6 + 2·5.0)) / (6.8 + 2·(7·0.6 + 1·5.0)) = 35.2 / 25.2
    assert graphs[0] == pytest.approx(2 * 61 * 88e-6 * 35.2 / 25.2)
    assert graphs[1] - graphs[0] == pytest.approx(61 * 69e-6)          # batch 600 > 512 runs without graphs
    eager = decode_floor_seconds(m, H100, Parallelism(tp=32), [1.0], cuda_graphs=False, graph_max_batch=512)
    assert eager[0] - graphs[0] == pytest.approx(61 * 304e-6)


@pytest.mark.reference
@pytest.mark.parametrize("name, tp, measured", [
    ("LLaMA-7B", 1, 104.9), ("LLaMA-7B", 2, 168.8), ("LLaMA-7B", 4, 254.0), ("LLaMA-7B", 8, 328.4),
    ("Llama-2-70B", 2, 21.3), ("Llama-2-70B", 4, 38.0), ("Llama-2-70B", 8, 62.5),
])
def test_batch1_decode_speed_matches_gpt_fast_on_a100(name, tp, measured):
    """rl-mechanisms.md section 3 (pytorch-labs/gpt-fast@0f925b5d README): one sequence decoded with torch.compile
    and CUDA graphs on 8 A100-80GB (power-capped at 330 W, 5-token prompt), Llama-2-7B at TP1/2/4/8 and Llama-2-70B at
    TP2/4/8 in tokens/s. The speed a synchronous RL batch's last trajectory decodes at is the decode kernel's
    roofline plus the floor (:func:`decode_floor_seconds`: two all-reduces per layer); within 15% across the sweep
    (2026-12-01: -9%, -7%, -2%, +7%; -12%, -8%, -3%): the floor's fixed per-layer terms carry the TP scaling, which
    weights / bandwidth alone gets wrong at TP8 (+39% for the 7B without the floor)."""
    m, a100, par = model(name), hardware("A100"), Parallelism(tp=tp)
    kernel = tc.decode(m, a100, parallel=par, batch=1, context_tokens=64, precision="bf16").seconds
    floor = float(decode_floor_seconds(m, a100, par, [1.0], cuda_graphs=True, graph_max_batch=512)[0])
    assert 1.0 / (kernel + floor) == pytest.approx(measured, rel=0.15)


def test_cross_server_allreduce_latency_grows_with_the_servers_as_nccls_tree_model():
    """Hand-derived from NCCL's tree LL model (tuning.cc: 6.8 + 2·((D − 1)·0.6 + log2(k)·5.0) us for k domains of D
    GPUs) anchored at the measured 88 us over 2 servers of 8 H100: 4 servers 88·35.2/25.2 = 122.9 us, 8 servers
    88·45.2/25.2 = 157.8 us; a GB200 instance without multi-node NVLink counts 4-GPU trays (D = 4): TP16 over 4 trays
    88·(6.8 + 2·(1.8 + 10))/(6.8 + 2·(1.8 + 5)) = 88·30.4/20.4 = 131.1 us. Inside a domain nothing changes."""
    from tcocalc.rl.cluster import single_server_domain

    assert allreduce_latency(H100, 16) == pytest.approx(88e-6)
    assert allreduce_latency(H100, 32) == pytest.approx(122.9e-6, rel=1e-3)
    assert allreduce_latency(H100, 64) == pytest.approx(157.8e-6, rel=1e-3)
    assert allreduce_latency(single_server_domain(GB200), 16) == pytest.approx(131.1e-6, rel=1e-3)
    assert allreduce_latency(GB200, 16) == pytest.approx((6.6 + 2 * 15 * 0.6) * 1e-6)


def test_eager_engine_and_exposed_cpu_slow_the_generator():
    base = tc.evaluate(_scn()).details["run"]["generator"]
    eager = tc.evaluate(_scn(**{"generator.cuda_graphs": False})).details["run"]["generator"]
    assert eager.t0 - base.t0 == pytest.approx(model("Qwen3-8B").num_layers * 304e-6, rel=1e-6)
    ray = tc.evaluate(_scn(**{"orchestration.framework": "nemo-rl"})).details["run"]["generator"]
    assert ray.t0 > base.t0 * 1.5   # CPU work of every step exposed (0.763 of the GPU time, OH-01)


def test_max_num_seqs_caps_the_decoding_batch():
    capped = tc.evaluate(_scn(**{"generator.max_num_seqs": 32})).details["run"]["generator"]
    assert capped.b_max == 32


def test_gpu_memory_utilization_sets_the_kv_budget():
    """vLLM: KV = u·memory − weights − activations; Qwen3-235B bf16 on 8 H100 at u = 0.8 leaves
    0.8·80·2^30/1e9·... less 58.75 GB of weights per GPU; halving u below the weights fails to fit."""
    scn = tc.load_scenario("scenarios/semianalysis_qwen3_235b_h200.toml").with_values(
        {"generator.tp": 8, "generator.gpu_memory_utilization": 0.9})
    hi = tc.evaluate(scn).details["run"]["generator"].b_max
    lo = tc.evaluate(scn.with_values({"generator.gpu_memory_utilization": 0.6})).details["run"]["generator"].b_max
    total = hardware("H200").hbm_bytes * 2**30 / 1e9
    kv_hi, kv_lo = 0.9 * total - 58.75e9 - 2.68e9, 0.6 * total - 58.75e9 - 2.68e9
    assert lo / hi == pytest.approx(kv_lo / kv_hi, rel=0.05)
    with pytest.raises(InfeasibleError):
        tc.evaluate(scn.with_values({"generator.gpu_memory_utilization": 0.3}))


# ---------------------------------------------------------------- colocated switching
def test_colocated_switch_hand_derived():
    """Llama-3.1-8B bf16 (16.06 GB per engine GPU), no offload: 1.35 + 2·(0.2 + 16.06/(0.82·55.4)) + 0.5 +
    16.06/3.25 = 8.48 s."""
    want = 1.35 + 2 * (0.2 + 16.06 / (0.82 * 55.4)) + 0.5 + 16.06 / 3.25
    assert colocated_switch_seconds(H100, 16.06e9, 0.0, offload=False) == pytest.approx(want, rel=1e-9)
    with_state = colocated_switch_seconds(H100, 16.06e9, 40e9, offload=True)
    assert with_state - want == pytest.approx(2 * 40 / 55.4, rel=1e-9)   # out and back over PCIe Gen5
    c2c = colocated_switch_seconds(GB200, 16.06e9, 40e9, offload=True)
    assert c2c < with_state                                              # NVLink-C2C host link


def test_in_process_refit_reproduces_nemo_rl_v03_llama_8b():
    """NeMo RL v0.3 blog: Llama-3.1-8B colocated refit 5 s (Megatron); the IPC refit term with the per-tensor load
    (291 tensors) gives 0.5 + 16.06/3.25 + 291 x 0.622 ms = 5.62 s (+12%)."""
    cal = rl_calibration()
    n = checkpoint_tensors(model("Llama-3.1-8B"))
    assert n == 32 * 9 + 3
    refit = cal["refit_ipc_fixed_s"] + 16.06e9 / cal["refit_ipc_bytes_per_s"] + n * cal["refit_ipc_per_tensor_s"]
    assert refit == pytest.approx(5.62, rel=0.01)
    assert refit == pytest.approx(5.0, rel=0.25)


def test_checkpoint_tensors_and_per_tensor_refit_reproduce_deepseek_v3():
    """NeMo RL: each vLLM rank receives 45,395 DeepSeek-V3 tensors; its colocated refit to TP64 took about 35 s
    beyond offload (PR 638)."""
    n = checkpoint_tensors(model("DeepSeek-V3"))
    assert n == pytest.approx(45_395, rel=0.01)
    cal = rl_calibration()
    refit = cal["refit_ipc_fixed_s"] + 21e9 / cal["refit_ipc_bytes_per_s"] + n * cal["refit_ipc_per_tensor_s"]
    assert refit == pytest.approx(35.0, rel=0.05)


def test_per_tensor_cost_cross_checks_against_the_full_expert_loader():
    """Not fitted on it: NeMo RL's DeepSeek-V3 refit with the full-expert loader took 36.812 s, 10.923 s with
    each rank loading only its experts (docs/guides/checkpoint-engine-refit.md): 25.9 s for the expert tensors a
    TP32 (EP32) rank does not own, 58 MoE layers x 3 x (256 - 256/32) = 43,152, within 5% of 43,152 x 0.622 ms
    = 26.8 s."""
    m = model("DeepSeek-V3")
    extra = m.num_moe_layers * 3 * (m.num_experts - m.num_experts // 32)
    assert extra == 43_152
    assert extra * rl_calibration()["refit_ipc_per_tensor_s"] == pytest.approx(36.812 - 10.923, rel=0.05)


def test_ipc_refit_constants_are_the_fit_through_the_published_colocated_refits():
    """The shipped IPC rate and per-tensor cost are fit_ipc_refit()'s least squares (relative error) through
    NeMo RL's three colocated refits (5 s, 14 s, 35 s), rounded to three figures; hand-solved from the same
    normal equations: 3.253 GB/s and 0.6219 ms. Every colocated row then lands within ±25%."""
    fit = fit_ipc_refit()
    cal = rl_calibration()
    assert fit["refit_ipc_bytes_per_s"] == pytest.approx(3.2533e9, rel=1e-3)
    assert fit["refit_ipc_per_tensor_s"] == pytest.approx(0.62188e-3, rel=1e-3)
    for k in fit:
        assert cal[k] == pytest.approx(fit[k], rel=2e-3), k
    table = rl_refit_table()
    colocated = table[table["transport"] == "colocated"]
    assert len(colocated) == 3 and colocated["within"].all()
    assert colocated.set_index("id").loc["REFIT-09", "predicted [s]"] == pytest.approx(5.62, rel=0.01)


def test_colocated_steps_pay_the_switch_every_step():
    scn = _scn(**{"orchestration.mode": "colocated"})
    rates = tc.evaluate(scn).details["run"]["rates"]
    assert rates.t_sync[0] > 5.0                  # sleep, wake, offload and refit: seconds, not NVLink milliseconds
    off = tc.evaluate(scn.with_values({"trainer.colocated_offload": False})).details["run"]["rates"]
    assert off.t_sync[0] < rates.t_sync[0]


# ---------------------------------------------------------------- weight sync
def test_weight_sync_follows_bytes_per_receiving_server():
    """NCCL broadcast of DeepSeek-V3 (bf16) to vLLM TP32: each of the instance's four servers receives a quarter;
    NeMo RL measured 14.21 s (docs/guides/checkpoint-engine-refit.md); the model gives 17.3 s (+22%)."""
    m = model("DeepSeek-V3")
    t = weight_sync_seconds(m.params_total, H100, H100, 256, 32, instance_gpus=32)
    assert t == pytest.approx(14.21, rel=0.25)
    whole = weight_sync_seconds(m.params_total, H100, H100, 256, 32, instance_gpus=8)
    assert whole - rl_calibration()["weight_sync_fixed_s"] == pytest.approx(
        4 * (t - rl_calibration()["weight_sync_fixed_s"]), rel=1e-9)


def test_p2p_weight_sync_uses_every_nic():
    """P2P: each generator GPU receives its own shard. DeepSeek-V3 to TP32: 2.5 s (NeMo RL's reshard refit
    measured 2.39-2.83 s on H100, 1.93-2.59 on GB200); Qwen3-235B to TP8 on 8 nodes: 3.3 s (miles measured
    3.16 s)."""
    m = model("DeepSeek-V3")
    p2p = weight_sync_seconds(m.params_total, H100, H100, 256, 256, instance_gpus=32, transport="p2p")
    assert p2p == pytest.approx(2.61, rel=0.10)
    assert weight_sync_seconds(m.params_total, GB200, GB200, 256, 256, instance_gpus=32,
                               transport="p2p") == pytest.approx(2.26, rel=0.25)
    q = model("Qwen3-235B-A22B")
    assert weight_sync_seconds(q.params_total, H100, H100, 64, 64, instance_gpus=8,
                               transport="p2p") == pytest.approx(3.16, rel=0.10)
    assert p2p < weight_sync_seconds(m.params_total, H100, H100, 256, 256, instance_gpus=32)


def test_refit_table_rows_within_25pct_or_named():
    t = tc.rl_refit_table()
    assert len(t) == 11
    assert (t["known_miss"] != "").sum() == 1       # REFIT-06 only
    clean = t[t["known_miss"] == ""]
    assert (clean["error [%]"].abs() <= 25).all(), clean[["id", "error [%]"]].to_string()
    assert (t[t["known_miss"] != ""]["error [%]"].abs() > 25).all()


# ---------------------------------------------------------------- trainer layouts and context parallelism
def test_pinned_layout_is_used_and_bad_pins_are_named():
    scn = _scn()                                   # Qwen3-8B on 8 H100: the search picks its best layout
    searched = tc.evaluate(scn).details["run"]["rates"].trainer_samples_per_s[0]
    pinned = tc.evaluate(scn.with_values({"trainer.tp": 8})).details["run"]["rates"].trainer_samples_per_s[0]
    assert 0 < pinned < searched                   # TP8 on 8 GPUs is slower than the searched layout
    with pytest.raises(InfeasibleError, match=r"trainer\.tp = 3 does not divide 8 GPUs.*smallest layout that fits"):
        tc.evaluate(scn.with_values({"trainer.tp": 3}))


def test_context_parallelism_splits_the_sequence():
    """CP2 halves each GPU's tokens: per-GPU activation memory halves, attention FLOPs per GPU halve."""
    m, cal = model("Llama-3.1-8B"), calibration_for(H100)
    one = training_step(m, H100, cal, Parallelism(tp=1, dp=8), seq=16384, global_batch=64, precision="bf16")
    two = training_step(m, H100, cal, Parallelism(tp=1, dp=4, cp=2), seq=16384, global_batch=64, precision="bf16")
    assert two["memory"] - two["state"] == pytest.approx((one["memory"] - one["state"]) / 2, rel=1e-9)
    assert two["state"] == one["state"]          # the distributed optimizer shards over DP x CP = 8 in both
    assert Parallelism(tp=2, cp=4, dp=2).gpus == 16 and "CP4" in Parallelism(cp=4).label()


# ---------------------------------------------------------------- GRPO by default
def test_plain_grpo_is_the_default_and_counts_only_groups_with_signal():
    assert Orchestration().filter_zero_advantage is False
    rep = tc.evaluate(_scn(**{"workload.solve_rate.always": 0.5}))
    m = rep.metrics
    assert m["useful_samples_per_s"] < m["trained_samples_per_s"] if "trained_samples_per_s" in m else True
    filt = tc.evaluate(_scn(**{"workload.solve_rate.always": 0.5, "orchestration.filter_zero_advantage": True}))
    assert filt.metrics["useful_samples_per_s"] != m["useful_samples_per_s"]


# ---------------------------------------------------------------- caps on rollouts in flight
def test_framework_cap_on_rollouts_in_flight_limits_the_decoding_batch():
    """AReaL-style max concurrent rollouts over the generator: per replica at most cap / replicas decode."""
    scn = _scn()
    free = tc.evaluate(scn).details["run"]
    capped = tc.evaluate(scn.with_values({"orchestration.max_rollouts_in_flight": 64})).details["run"]
    n_rep = int(capped["rates"].n_rep[0])
    assert capped["rates"].slots[0] == pytest.approx(min(64 / n_rep, free["generator"].b_max))
    assert capped["rates"].generator_samples_per_s[0] < free["rates"].generator_samples_per_s[0]
    sim = tc.simulate(scn.with_values({"orchestration.max_rollouts_in_flight": 64}), steps=20, seed=0)
    ana = tc.evaluate(scn.with_values({"orchestration.max_rollouts_in_flight": 64})).metrics
    assert sim.metrics["useful_samples_per_s"] == pytest.approx(ana["useful_samples_per_s"], rel=0.15)


def test_preset_table_matches_the_data():
    """docs/scenario-schema.md's framework preset table (generated) carries every preset's values."""

    readme = (ROOT / "docs" / "scenario-schema.md").read_text()
    presets = framework_presets()
    for name, p in presets.items():
        row = next(line for line in readme.splitlines() if line.strip().startswith(f"| `{name}`"))
        cells = [c.strip() for c in row.strip().strip("|").split("|")][1:]
        want = [str(p[k]).lower() if isinstance(p[k], bool) else str(p[k]) for k in FRAMEWORK_KEYS]
        assert cells == want, name


def test_vllm_max_num_seqs_default_follows_the_gpu():
    """vLLM: 1024 sequences on GPUs of 70 GiB or more, 256 on A100 (excluded by name) and smaller GPUs
    (serving-engines.md A.1)."""
    assert resolve(_scn()).settings.max_num_seqs == 1024
    a100 = {"generator.hardware": "A100-80GB-SXM", "economics.hardware_prices": {"A100-80GB-SXM": 1.5}}
    assert resolve(_scn(**a100)).settings.max_num_seqs == 256
    pinned = _scn(**a100, **{"generator.max_num_seqs": 64})
    assert resolve(pinned).settings.max_num_seqs == 64


# ------------------------------------------------------------------ a group holds its admission slots
def test_group_hold_is_the_groups_slowest_member_beyond_the_mean():
    """§5.4: a prompt's G samples are one task that counts as running until its last member finishes (AReaL
    1.0.4 GroupedRolloutWorkflow), so a member holds its slot E[max_G R] − E[R] tokens of decode beyond its own.
    Hand-derived: mean 1,000 tokens, σ 0.5, G 8: Blom z = Φ⁻¹(7.625/8.25) = 1.4338, E[max] = 1000·e^(−0.125 +
    0.5·1.4338) = 1,807 tokens, so 807 tokens of hold (the cap of 65,536 tokens is 8.4σ out: no effect)."""
    from tcocalc.rl.phases import workload_stats
    from tcocalc.rl.steps.async_ import group_hold_tokens

    scn = _scn(**{"workload.response_tokens_mean": 1000, "workload.response_tokens_sigma": 0.5,
                  "workload.response_tokens_p99": None, "workload.response_tokens_max": 65536,
                  "workload.group_size": 8})
    assert group_hold_tokens(workload_stats(scn)) == pytest.approx(807.4, abs=1.0)


def test_a_staleness_bound_run_counts_finished_members_until_their_group_ends():
    """GLM-5's first phase, as the scenario shipped before 2026-12-02 (96:32 aggregated), is held by its bound
    (η = 3, B = 256): AReaL's count, running plus finished members
    waiting for their group plus accepted samples (half a batch queued), fills (η + 1)·B = 1,024, and the
    finished members waiting are the hold's Little's-law share, X/keep·(W_hold − W) > 0. Before, the closed form
    let the same slots run new trajectories and ran 13% faster than the simulator. (With an FP8 KV cache, the
    default before 2026-12-02: with the BF16 default the generator's smaller KV pool binds first; and with the
    trajectories keeping their KV through tool calls, "pinned": under the default "lru" the 256 trajectories in
    flight per replica overflow its 111 KV slots and every return prefills its history again, docs/rl-modeling.md
    §4.12, so the generator binds.)"""
    r = tc.evaluate(tc.load_scenario("scenarios/glm5_h200_drift.toml").with_split(96, 32).with_values(
        {"generator.kv_precision": "fp8", "generator.kv_retention": "pinned", "generator.disaggregated": False,
         "orchestration.max_staleness": 3}))
    assert r.details["binding_limits"]["initial"] == ["staleness"]
    d = r.details["initial"]
    f, rates = d["flow"], d["rates"]
    running = float(f.trained_per_s[0] / rates.keep * f.rollout_latency_s[0])
    assert float(f.group_wait[0]) > 0.2 * running
    assert running + float(f.group_wait[0]) + float(f.queued[0]) == pytest.approx(4 * 256, rel=1e-6)


# ------------------------------------------------------------------ multi-node NVLink
def test_without_multinode_nvlink_the_scale_up_domain_is_one_server():
    """An NVL72 rack's trays (4 GPUs) reach each other over NVLink only with multi-node NVLink: without it a TP8
    instance's two all-reduces per layer take the measured scale-out latency (88 us) instead of NCCL's ring LL
    over NVLink (6.6 + 2·7·0.6 = 15 us); a DGX H100 (server = domain = 8) does not change."""
    from tcocalc.rl.cluster import resolve, single_server_domain

    assert single_server_domain(GB200).scaleup_domain_gpus == 4
    assert single_server_domain(H100) is H100
    scn = _scn(**{"trainer.hardware": "GB200-NVL72", "generator.hardware": "GB200-NVL72", "generator.tp": 8})
    on = resolve(scn).generator
    off = resolve(scn.with_values({"generator.multinode_nvlink": False})).generator
    assert on.scaleup_domain_gpus == 72 and off.scaleup_domain_gpus == 4
    assert allreduce_latency(on, 8) == pytest.approx(15e-6)
    assert allreduce_latency(off, 8) == pytest.approx(88e-6)
    assert resolve(scn.with_values({"trainer.multinode_nvlink": False})).trainer.scaleup_domain_gpus == 4
    slower = tc.evaluate(scn.with_values({"generator.multinode_nvlink": False})).metrics["step_time_s"]
    assert slower > tc.evaluate(scn).metrics["step_time_s"]


def test_nemo_gb200_rows_that_cross_a_tray_are_the_ones_full_nvlink_predicts_fast():
    """The evidence for the NeMo RL GB200 rows' multi-node NVLink assumption (data/rl_cases_nemo.csv): with NVLink
    across the rack, every GB200 row whose trainer or generator layout spans more than a 4-GPU tray is predicted
    fast (median 32%), every row inside a tray is not (within 20%)."""
    from tcocalc.catalog.rl_cases import nemo_rl_cases
    from tcocalc.studies.rl_validation import nemo_case_scenario

    crossing, inside = [], []
    for case in nemo_rl_cases():
        if not case["hardware"].startswith("GB200"):
            continue
        assert case["multinode_nvlink"] is False
        scn = nemo_case_scenario(case).with_values({"trainer.multinode_nvlink": True,
                                                     "generator.multinode_nvlink": True})
        err = tc.evaluate(scn).metrics["step_time_s"] / case["step_time_s"] - 1.0
        spans = max(case["generator_tp"], case["train_tp"] * case["train_ep"] * case["train_pp"]) > 4
        (crossing if spans else inside).append(err)
    assert len(crossing) == 14 and len(inside) == 4
    assert max(crossing) < 0 and sorted(crossing)[7] < -0.25
    assert max(abs(e) for e in inside) < 0.20


def test_advice_says_what_multinode_nvlink_would_be_worth():
    """evaluate and solve_split name the gain of multi-node NVLink where a pool runs without it on a rack whose
    NVLink domain spans several servers (NEMO-29, Qwen3-235B 64:64 on GB200: TP8 instances across two trays),
    with the figure evaluate gives with the keys set; no line where it gains nothing (the GB300 agentic scenario is
    held by its sandboxes) or where a server is the whole domain (H100)."""
    from tcocalc.catalog.rl_cases import nemo_rl_cases
    from tcocalc.studies.rl_validation import nemo_case_scenario

    scn = nemo_case_scenario(next(c for c in nemo_rl_cases() if c["id"] == "NEMO-29"))
    off = tc.evaluate(scn)
    on = tc.evaluate(scn.with_values({"trainer.multinode_nvlink": True, "generator.multinode_nvlink": True}))
    x0, x1 = off.metrics["useful_samples_per_s"], on.metrics["useful_samples_per_s"]
    line = next(a for a in off.advice if a.startswith("Multi-node NVLink"))
    assert f"{x0:.3g} -> {x1:.3g} (+{x1 / x0 - 1:.0%})" in line and "4-GPU servers" in line
    assert not any("Multi-node NVLink" in a for a in on.advice)
    assert any(a.startswith("Multi-node NVLink") for a in tc.solve_split(scn).advice)
    agentic = tc.load_scenario("scenarios/gb300_agentic_96.toml").with_values(
        {"trainer.multinode_nvlink": False, "generator.multinode_nvlink": False})
    assert not any("Multi-node NVLink" in a for a in tc.evaluate(agentic).advice)
    h100 = _scn(**{"trainer.multinode_nvlink": False, "generator.multinode_nvlink": False})
    assert not any("Multi-node NVLink" in a for a in tc.evaluate(h100).advice)
