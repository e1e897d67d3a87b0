"""Issue 32 mechanisms, each against a published component figure or a hand-derived number (docs/sources.md
§M.6-§M.9): weight sync through shared storage or host memory, FSDP / ZeRO-3 trainers, FP8 rollout, and the
re-prefill of interrupted generation."""

from __future__ import annotations

import typing

import numpy as np
import pytest

import tcocalc as tc
from tcocalc._data import data_dir
from tcocalc.catalog.accelerators import hardware
from tcocalc.catalog.calibration import calibration_for, parse_rl_calibration, rl_calibration
from tcocalc.catalog.framework_cases import disk_reloads
from tcocalc.catalog.models import model
from tcocalc.errors import DataFileError, ScenarioError
from tcocalc.rl.cluster import resolve
from tcocalc.rl.weight_sync import (
    WEIGHT_SYNC_TRANSPORTS,
    checkpoint_save_seconds,
    disk_reload_seconds,
    disk_sync_seconds,
    host_copy_seconds,
    storage,
    weight_sync_seconds,
)
from tcocalc.roofline.parallel import Layouts, Parallelism
from tcocalc.roofline.training import (
    candidate_degrees,
    fsdp_comm_s,
    fsdp_link_rate,
    fsdp_state_bytes,
    training_steps,
    training_throughput,
)
from tcocalc.scenario import Orchestration

H100, H200, B300 = hardware("H100"), hardware("H200"), hardware("B300")


def _scn(**over):
    return tc.load_scenario("scenarios/default.toml").with_values(over)


# ---------------------------------------------------------------- weight sync through disk (§3.8)
# (bytes per engine GPU [B], published reload [s], source): data/validation/disk_reloads.csv (docs/sources.md §M.6)
RELOADS = [(r["bytes_per_gpu"], r["published_s"], f"{r['id']} {r['framework']}") for r in disk_reloads()]


def test_the_shipped_disk_reload_constants_are_the_fit_of_the_six_published_reloads():
    b = np.array([r[0] for r in RELOADS])
    t = np.array([r[1] for r in RELOADS])
    (f, x), *_ = np.linalg.lstsq(np.stack([1.0 / t, b / t], axis=1), np.ones_like(t), rcond=None)
    cal = rl_calibration()
    assert cal["weight_sync_disk_fixed_s"] == pytest.approx(f, rel=0.01)
    assert cal["engine_disk_load_bytes_per_s"] == pytest.approx(1.0 / x, rel=0.01)


@pytest.mark.parametrize("per_gpu, published, what", RELOADS, ids=[r[2] for r in RELOADS])
def test_each_published_engine_reload_from_disk_is_reproduced_within_35_percent(per_gpu, published, what):
    assert float(disk_reload_seconds(per_gpu)) == pytest.approx(published, rel=0.35), what


def test_the_disk_reloads_median_error_is_under_15_percent():
    err = [abs(float(disk_reload_seconds(b)) / t - 1.0) for b, t, _ in RELOADS]
    assert float(np.median(err)) < 0.15


def test_a_disk_sync_of_an_8b_model_takes_tens_of_seconds_as_derived():
    """docs/rl-modeling.md §3.8 worked example: Qwen3-8B, 8 + 8 H100, one GPU per engine: save 2.4 s, reload
    2.86 + 16.4/0.86 = 21.9 s, the storage's read bound (8 x 16.4 / 20 = 6.6 s) does not bind: 24.3 s."""
    nbytes = 2.0 * model("Qwen3-8B").params_total
    store = storage()
    assert float(checkpoint_save_seconds(nbytes, 8, store)) == pytest.approx(nbytes / (8 * 0.861e9), rel=1e-6)
    t = weight_sync_seconds(model("Qwen3-8B").params_total, H100, H100, 8, 8, transport="disk")
    assert t == pytest.approx(2.378 + 2.86 + nbytes / 0.861e9, rel=1e-3)
    assert t == pytest.approx(24.3, abs=0.1)
    assert 10.0 < t < 100.0
    assert t > 5 * weight_sync_seconds(model("Qwen3-8B").params_total, H100, H100, 8, 8)  # NCCL broadcast 2.3 s


def test_many_replicas_wait_on_the_storage_and_the_bound_follows_the_scenario_key():
    m = model("Qwen3-235B-A22B")
    nbytes = 2.0 * m.params_total
    slow = storage(read_gb_per_s=5.0)
    t = disk_sync_seconds(nbytes, 64, 256, instance_gpus=8, store=slow)
    save = float(checkpoint_save_seconds(nbytes, 64, slow))
    assert float(t) == pytest.approx(save + 2.86 + 32 * nbytes / 5e9, rel=1e-3)  # 32 replicas read it all
    # a larger storage rate takes the loader's rate back
    fast = storage(write_gb_per_s=1e4, read_gb_per_s=1e4)
    t_fast = disk_sync_seconds(nbytes, 64, 256, instance_gpus=8, store=fast)
    assert float(t_fast) == pytest.approx(nbytes / (64 * 0.861e9) + 2.86 + nbytes / 8 / 0.861e9, rel=1e-3)
    # the scenario's key reaches the step model
    scn = _scn(**{"orchestration.weight_sync": "disk", "orchestration.storage_read_gb_per_s": 0.5})
    assert tc.evaluate(scn).metrics["step_time_s"] > tc.evaluate(_scn(**{"orchestration.weight_sync": "disk"})
                                                                 ).metrics["step_time_s"]


def test_the_six_published_reloads_are_the_data_file():
    """The reloads the disk constants are fitted on live in data/validation/disk_reloads.csv with their sources
    (moved out of this file 2026-12-07, values unchanged): prime-rl 0.988 GB 4.0 s, AReaL 15.266 GB 30 s, stitch
    27.2 / 189.4 / 151.0 / 207.5 GB in 27.15 / 239.6 / 165.1 / 300.4 s."""
    assert [(r[0], r[1]) for r in RELOADS] == [(0.494e9 * 2, 4.0), (2.0 * 30.532e9 / 4, 30.0), (27.2e9, 27.15),
                                               (189.4e9, 239.6), (151.0e9, 165.1), (207.5e9, 300.4)]
    assert {r["framework"] for r in disk_reloads()} == {"prime-rl", "AReaL", "stitch"}


def test_the_engines_of_one_server_read_the_checkpoint_once():
    """docs/rl-modeling.md §3.8: engines on one server load the checkpoint through its page cache, so the storage
    serves each byte once per server. Hand-derived, Qwen3-8B (16.4 GB) on 64 one-GPU engines, 8-GPU servers, a
    store of 5 GB/s: 8 servers x 16.4 GB / 5 GB/s = 26.2 s of reads (64 x 16.4 / 5 = 210 s if every engine read its
    own copy); TP16 engines over two 8-GPU servers read half the checkpoint per server: 4 servers x 8.2 GB / 5."""
    nbytes = 2.0 * model("Qwen3-8B").params_total
    slow = storage(read_gb_per_s=5.0)
    save = float(checkpoint_save_seconds(nbytes, 8, slow))
    own = disk_sync_seconds(nbytes, 8, 64, instance_gpus=1, store=slow)
    cached = disk_sync_seconds(nbytes, 8, 64, instance_gpus=1, store=slow, server_gpus=8)
    assert float(own) == pytest.approx(save + 2.86 + 64 * nbytes / 5e9, rel=1e-3)
    assert float(cached) == pytest.approx(save + 2.86 + 8 * nbytes / 5e9, rel=1e-3)
    wide = disk_sync_seconds(nbytes, 8, 32, instance_gpus=16, store=slow, server_gpus=8)
    assert float(wide) == pytest.approx(save + 2.86 + max(nbytes / 16 / 0.861e9, 4 * nbytes / 2 / 5e9), rel=1e-3)
    # the step model passes the generator's server size (H100 SXM: 8 GPUs)
    p = model("Qwen3-8B").params_total
    t = weight_sync_seconds(p, H100, H100, 8, 64, transport="disk", store=slow)
    assert t == pytest.approx(float(cached), rel=1e-9)


def test_disk_and_host_do_not_take_the_scale_up_shortcut():
    p = model("Qwen3-8B").params_total
    assert weight_sync_seconds(p, H100, H100, 4, 4) < 0.1  # NCCL inside one NVLink domain
    assert weight_sync_seconds(p, H100, H100, 4, 4, transport="disk") > 10.0
    assert weight_sync_seconds(p, H100, H100, 4, 4, transport="host") > 0.3


def test_a_storage_rate_of_zero_or_below_is_refused_naming_the_key():
    with pytest.raises(ScenarioError, match="orchestration.storage_write_gb_per_s"):
        _scn(**{"orchestration.storage_write_gb_per_s": 0.0})
    with pytest.raises(ScenarioError, match="orchestration.storage_read_gb_per_s"):
        _scn(**{"orchestration.storage_read_gb_per_s": -1.0})
    with pytest.raises(ScenarioError, match="orchestration.storage_read_gb_per_s"):
        storage(read_gb_per_s=0.0)
    zero = rl_calibration().with_overrides(shared_storage_write_bytes_per_s=0.0)
    with pytest.raises(ScenarioError, match="calibration.shared_storage_write_bytes_per_s"):
        weight_sync_seconds(1e9, H100, H100, 8, 8, transport="disk", calibration=zero)
    with pytest.raises(ScenarioError, match="calibration.engine_disk_load_bytes_per_s"):
        disk_reload_seconds(1e9, rl_calibration().with_overrides(engine_disk_load_bytes_per_s=0.0))
    text = (data_dir() / "rl_calibration.toml").read_text()
    broken = text.replace("[shared_storage_read_bytes_per_s]\nvalue = 20e9", "[shared_storage_read_bytes_per_s]\n"
                                                                           "value = 0")
    assert broken != text
    with pytest.raises(DataFileError, match="shared_storage_read_bytes_per_s"):
        parse_rl_calibration(broken)


def test_an_unknown_transport_is_refused_listing_the_choices():
    assert typing.get_args(typing.get_args(Orchestration.model_fields["weight_sync"].annotation)[0]) == \
        WEIGHT_SYNC_TRANSPORTS
    with pytest.raises(ScenarioError, match="orchestration.weight_sync") as exc:
        _scn(**{"orchestration.weight_sync": "nfs"})
    for choice in WEIGHT_SYNC_TRANSPORTS:
        assert repr(choice) in str(exc.value)
    with pytest.raises(ScenarioError, match="orchestration.weight_sync") as exc:
        weight_sync_seconds(1e9, H100, H100, 8, 8, transport="nfs")
    assert all(choice in str(exc.value) for choice in WEIGHT_SYNC_TRANSPORTS)


# ---------------------------------------------------------------- weight sync from host memory (§3.8)
def test_the_h200_host_memory_commit_is_reproduced():
    """stitch: GLM-4.5-Air FP8 TP4 on H200, 27.2 GB per rank committed from CPU RAM in 0.99 s."""
    cal = rl_calibration()
    t = cal["weight_sync_host_fixed_s"] + float(host_copy_seconds(27.2e9, H200))
    assert t == pytest.approx(0.99, rel=0.02)


@pytest.mark.parametrize("per_gpu, published", [(189.4e9, 3.44), (151.0e9, 2.82), (207.5e9, 3.84)])
def test_the_b300_host_memory_commits_are_a_known_miss_of_about_1_8x(per_gpu, published):
    """The B300 commits run at the whole host link the B300 spec assumes; the H200's concurrent-copy share puts
    them 1.7-1.8x slow (docs/rl-modeling.md §3.8, known miss)."""
    t = rl_calibration()["weight_sync_host_fixed_s"] + float(host_copy_seconds(per_gpu, B300))
    assert 1.6 < t / published < 1.9


def test_a_host_sync_adds_the_trainer_copy_the_wire_and_the_generator_copy():
    p = model("Qwen3-235B-A22B").params_total
    nbytes = 2.0 * p
    cal = rl_calibration()
    eta_h = cal["host_sync_copy_efficiency"] * H100.host_link_bytes_per_s
    d2h, h2d = nbytes / 64 / eta_h, nbytes / 8 / eta_h
    wire = max(nbytes / 8 / (cal["weight_sync_efficiency"] * H100.scaleout_bytes_per_s),
               nbytes * 8 / (64 * H100.scaleout_bytes_per_s) / cal["weight_sync_efficiency"])
    t = weight_sync_seconds(p, H100, H100, 64, 64, instance_gpus=8, transport="host")
    assert t == pytest.approx(cal["weight_sync_host_fixed_s"] + d2h + wire + h2d, rel=1e-9)
    # in one server the pools share host memory: no wire
    q = model("Qwen3-8B").params_total
    one = weight_sync_seconds(q, H100, H100, 4, 4, transport="host")
    assert one == pytest.approx(cal["weight_sync_host_fixed_s"] + 2 * q / 4 / eta_h + 2 * q / eta_h, rel=1e-9)


def test_every_transport_runs_through_the_step_model_and_the_simulator():
    for transport in WEIGHT_SYNC_TRANSPORTS:
        scn = _scn(**{"orchestration.weight_sync": transport, "workload.steps": 4})
        res = tc.evaluate(scn)
        assert np.isfinite(res.metrics["step_time_s"]) and res.metrics["step_time_s"] > 0
        sim = tc.simulate(scn, steps=6)
        assert np.isfinite(sim.metrics["step_time_s"]) and sim.metrics["step_time_s"] > 0


# ---------------------------------------------------------------- FSDP / ZeRO-3 trainers (§3.9)
def _llama2_13b():
    """Llama-2-13B from its Hugging Face config (meta-llama/Llama-2-13b-hf config.json: hidden 5120, 40 layers, 40
    heads, MLP 13,824, vocabulary 32,000), the model of llm-foundry's 13B benchmark rows."""
    return tc.ModelArch.from_hf_config({
        "architectures": ["LlamaForCausalLM"], "model_type": "llama", "hidden_size": 5120, "num_hidden_layers": 40,
        "num_attention_heads": 40, "num_key_value_heads": 40, "intermediate_size": 13824, "vocab_size": 32000,
        "max_position_embeddings": 4096, "tie_word_embeddings": False, "hidden_act": "silu", "rms_norm_eps": 1e-5,
        "torch_dtype": "bfloat16"}, name="Llama-2-13B")


def _fsdp(m, hw, gpus, tokens, *, recompute="full", **kw):
    """FSDP over ``gpus`` GPUs, one ``tokens``-token micro-batch per GPU and step."""
    return training_throughput(m, hw, gpus=gpus, seq_tokens=tokens, global_batch_tokens=gpus * tokens,
                               sharding="fsdp", parallel=Parallelism(dp=gpus), optimizer_offload=False,
                               recompute=recompute, **kw)


def test_fsdp_shards_parameters_gradients_and_optimizer_state_over_data_parallelism():
    """ZeRO-3: 16 B/param (fp32 weights and gradients, Adam's two moments) over the n shards, plus the bf16 weights
    and gradients of the two layers held whole (the one computed, the one prefetched): Llama-3.1-70B on 64 GPUs,
    16 x 70.6e9 / 64 = 17.6 GB + 2 x 4 B x 70.6e9 / 80 = 7.1 GB."""
    m = model("Llama-3.1-70B")
    p = m.params_total
    assert float(fsdp_state_bytes(p, 64, m.num_layers)) == pytest.approx(16 * p / 64 + 8 * p / 80, rel=1e-9)
    assert float(fsdp_state_bytes(p, 64, m.num_layers, offload=True)) == pytest.approx(4 * p / 64 + 8 * p / 80)
    lay = Layouts.of([(1, 1, 64, 1, 1, 1)])
    acc = hardware("A100")
    cal = calibration_for(acc)
    kw = dict(seq=4096.0, global_batch=64.0, precision="bf16", recompute="full")
    fsdp = training_steps(m, acc, cal, lay, sharding="fsdp", **kw)
    mega = training_steps(m, acc, cal, lay, **kw)
    assert float(fsdp["state"][0]) == pytest.approx(float(fsdp_state_bytes(p, 64, m.num_layers)), rel=1e-6)
    assert bool(fsdp["fits"][0]) and not bool(mega["fits"][0])  # 6 B/param unsharded do not fit an 80 GB GPU


def test_fsdp_moves_3m_per_micro_batch_at_the_rate_of_every_nic_in_the_domain():
    """3 x M (two all-gathers, one reduce-scatter; ZeRO++), M·(n−1)/n per GPU each: Llama-3.1-8B (16.1 GB bf16)
    on 128 H100 moves 3 x 16.1 x 127/128 = 47.8 GB per GPU at min(0.8 x 450, 8 x 0.8 x 50) = 320 GB/s, 0.149 s; on
    8 GPUs inside NVLink at 360 GB/s, 0.117 s; with TP8 each GPU is alone in its domain and gets its own NIC."""
    m = model("Llama-3.1-8B")
    cal = calibration_for(H100)
    p = 2.0 * m.params_total
    wide = Layouts.of([(1, 1, 128, 1, 1, 1)])
    assert float(fsdp_link_rate(H100, cal, wide)[0]) == pytest.approx(320e9)
    assert float(fsdp_comm_s(H100, cal, m.params_total, wide)[0]) == pytest.approx(3 * p * 127 / 128 / 320e9)
    node = Layouts.of([(1, 1, 8, 1, 1, 1)])
    assert float(fsdp_comm_s(H100, cal, m.params_total, node)[0]) == pytest.approx(3 * p * 7 / 8 / 360e9)
    tp8 = Layouts.of([(8, 1, 16, 1, 1, 1)])
    assert float(fsdp_link_rate(H100, cal, tp8)[0]) == pytest.approx(40e9)
    assert float(fsdp_comm_s(H100, cal, m.params_total, Layouts.of([(1, 1, 1, 1, 1, 1)]))[0]) == 0.0


def test_fsdp2_weak_scaling_of_an_8b_model_is_reproduced():
    """torchtitan FSDP2, Llama-3.1-8B, local batch 2 x 8,192 tokens: 5,762 tok/s/GPU on 8 H100, 5,605 on 128
    (−2.7%). The model loses under 1% (its 0.15 s of collectives hide under 2.5 s of compute): within 4 points.
    The absolute rate is +20% (the published H100s ran at 500 W; ours is the 700 W SXM), within 25%."""
    m = model("Llama-3.1-8B")
    small, large = _fsdp(m, "H100", 8, 16384), _fsdp(m, "H100", 128, 16384)
    ratio = large.tokens_per_s_per_gpu / small.tokens_per_s_per_gpu
    assert ratio == pytest.approx(5605 / 5762, abs=0.04)
    assert small.tokens_per_s_per_gpu == pytest.approx(5762, rel=0.25)


def test_fsdp1_mfu_of_a_13b_model_stays_flat_from_8_to_64_h100():
    """llm-foundry FULL_SHARD, 13B, micro-batch 2 x 2,048 tokens: 39.6-39.9% MFU from 8 to 64 GPUs (docs/sources.md
    §M.7). The model: within 10% of both, and flat within 3%."""
    m = _llama2_13b()
    at8, at64 = _fsdp(m, "H100", 8, 4096), _fsdp(m, "H100", 64, 4096)
    assert at8.mfu == pytest.approx(0.396, rel=0.10)
    assert at64.mfu == pytest.approx(0.399, rel=0.10)
    assert at64.mfu / at8.mfu == pytest.approx(1.0, abs=0.03)


def test_the_fsdp_overlap_is_what_keeps_the_13b_rows_flat():
    """With no overlap (fsdp_comm_overlap = 0) the same rows fall 22-25% below the published MFU: the overlap
    bound of data/calibration.toml."""
    m = _llama2_13b()
    cal = calibration_for(H100).with_overrides(fsdp_comm_overlap=0.0)
    assert _fsdp(m, "H100", 64, 4096, calibration=cal).mfu < 0.8 * 0.399


def test_short_micro_batches_turn_fsdp_communication_bound():
    """Per micro-batch the gathers move 3M whatever the sequence, while compute follows its tokens: Llama-3.1-70B on
    64 H100 at 1,024-token micro-batches exposes 0.62 s of collectives per step against 0.69 s of compute (3 x
    141 GB x 63/64 / 320 GB/s = 1.30 s, less the compute it hides under); at 8,192 tokens none is exposed."""
    m = model("Llama-3.1-70B")
    short, long_ = _fsdp(m, "H100", 64, 1024, recompute=None), _fsdp(m, "H100", 64, 8192)
    comm = 3 * 2 * m.params_total * 63 / 64 / 320e9
    assert short.comm_s == pytest.approx(comm - short.compute_s, rel=0.02)
    assert long_.comm_s == 0.0
    assert short.mfu < 0.7 * long_.mfu


def test_the_70b_a100_pair_is_a_known_miss():
    """llm-foundry 70B on A100: 35.9% MFU at 64 GPUs (4,096 tokens per GPU) against 48.9% at 128 (8,192), a ratio of
    0.73. The model's 141 GB x 3 per micro-batch at 8 x 0.8 x 25 = 160 GB/s per GPU (2.6 s) hides under 10 s of
    compute, so it keeps the two within 5% (docs/rl-modeling.md §3.9): FSDP traffic does not explain the drop."""
    m = model("Llama-3.1-70B")
    ratio = _fsdp(m, "A100", 64, 4096).mfu / _fsdp(m, "A100", 128, 8192).mfu
    assert 0.95 < ratio < 1.05


def test_fsdp_searches_only_data_and_context_parallel_layouts_and_refuses_pipelines():
    m = model("Qwen3-30B-A3B")
    degrees = candidate_degrees(m, H100, 64, 65536, "fsdp")
    assert degrees and all(d[0] == d[1] == d[3] == d[4] == 1 for d in degrees)
    assert any(d[5] > 1 for d in degrees)  # Ulysses-style sequence parallelism kept
    with pytest.raises(ScenarioError, match="parallel.pp"):
        training_throughput(m, H100, gpus=16, seq_tokens=4096, sharding="fsdp", parallel=Parallelism(pp=2, dp=8))
    with pytest.raises(ScenarioError, match="sharding") as exc:
        training_throughput(m, H100, gpus=16, seq_tokens=4096, sharding="zero3")
    assert "megatron" in str(exc.value) and "fsdp" in str(exc.value)
    with pytest.raises(ScenarioError, match="trainer.sharding"):
        _scn(**{"trainer.sharding": "zero3"})
    with pytest.raises(ScenarioError, match="trainer.pp"):
        tc.evaluate(_scn(**{"trainer.sharding": "fsdp", "trainer.pp": 2}))


def test_the_scenario_key_reaches_the_trainer():
    """[trainer] sharding = "fsdp" over the preset: the trainer's state per GPU (what colocated offload moves) is
    the ZeRO-3 shard."""
    base = _scn(**{"trainer.sharding": "megatron"})
    fsdp = _scn(**{"trainer.sharding": "fsdp"})
    assert resolve(base).settings.trainer_sharding == "megatron" and resolve(fsdp).settings.trainer_sharding == "fsdp"
    r_m, r_f = tc.evaluate(base).details["run"]["rates"], tc.evaluate(fsdp).details["run"]["rates"]
    assert np.all(r_f.trainer_samples_per_s > 0)
    assert not np.allclose(r_m.trainer_samples_per_s, r_f.trainer_samples_per_s)


def test_fsdp_against_megatron_at_short_rl_micro_batches():
    """NeMo RL v0.3's policy training, DTensor (FSDP2) against Megatron: 1.36x slower for Llama-3.1-8B on 8 GPUs,
    3.5x for 70B on 64 (docs/sources.md §M.4). At 1,024-token micro-batches on H100 the model gives 1.34x (within
    10%) and 1.59x: the 70B gap is larger, as published, but most of it is outside the sharding model (known miss,
    docs/rl-modeling.md §3.9)."""
    def ratio(name, gpus):
        r = {sh: training_throughput(name, "H100", gpus=gpus, seq_tokens=1024, global_batch_tokens=512 * 1024,
                                     sharding=sh).tokens_per_s for sh in ("fsdp", "megatron")}
        return r["megatron"] / r["fsdp"]

    small, large = ratio("Llama-3.1-8B", 8), ratio("Llama-3.1-70B", 64)
    assert small == pytest.approx(38 / 28, rel=0.10)
    assert 1.0 < small < large < 97 / 28


# ---------------------------------------------------------------- FP8 rollout (§4.11)
# vLLM PR 17126 (docs/sources.md §M.8): BF16 vs FP8 GEMM TFLOP/s on the Llama-3.1-8B shape (N 6,144, K 4,096), H100,
# activation quantisation included: M -> (bf16, fp8)
FP8_GEMM = {1: (2.5, 4.3), 16: (39.0, 70.0), 64: (161.0, 308.0), 128: (308.0, 534.0), 256: (544.0, 761.0)}


@pytest.mark.parametrize("batch", sorted(FP8_GEMM))
def test_the_fp8_decode_gain_follows_the_measured_gemm_gain_and_never_passes_the_weight_bytes(batch):
    """A short-context decode step is its GEMMs: memory-bound, FP8 halves the weight bytes, so the gain is at most
    2x, falling toward the FP8/BF16 compute ratio once the batch makes the GEMMs compute-bound. The model's step
    gain at 128 tokens of context is within 15% of the measured GEMM gain at each batch (1.72x at M=1 to 1.40x at
    M=256)."""
    kw = dict(batch=batch, context_tokens=128)
    bf16 = tc.decode("Llama-3.1-8B", "H100", precision="bf16", **kw)
    fp8 = tc.decode("Llama-3.1-8B", "H100", precision="fp8", kv_precision="bf16", **kw)
    gain = bf16.seconds / fp8.seconds
    assert 1.0 < gain <= 2.0
    assert gain == pytest.approx(FP8_GEMM[batch][1] / FP8_GEMM[batch][0], rel=0.15)


def test_a_bf16_kv_cache_caps_the_fp8_gain_at_long_context():
    """With the KV cache in BF16 a long-context decode step reads mostly KV, which FP8 weights do not shrink: at
    32K tokens and 64 sequences the gain is under 1.1x; an FP8 KV cache takes it back to nearly 2x. Prefill stays
    under the compute ratio 2 x 0.709 / 0.803 = 1.77 (data/calibration.toml Hopper GEMM efficiencies)."""
    kw = dict(batch=64, context_tokens=32768)
    bf16 = tc.decode("Llama-3.1-8B", "H100", precision="bf16", **kw).seconds
    assert bf16 / tc.decode("Llama-3.1-8B", "H100", precision="fp8", kv_precision="bf16", **kw).seconds < 1.1
    assert bf16 / tc.decode("Llama-3.1-8B", "H100", precision="fp8", kv_precision="fp8", **kw).seconds > 1.9
    p = dict(batch=8, prompt_tokens=4096)
    gain = (tc.prefill("Llama-3.1-8B", "H100", precision="bf16", **p).seconds
            / tc.prefill("Llama-3.1-8B", "H100", precision="fp8", kv_precision="bf16", **p).seconds)
    assert 1.0 < gain <= 2 * 0.709 / 0.803


def test_fp8_weights_with_a_bf16_kv_cache_gain_little_end_to_end_as_measured():
    """Qwen3-8B vs Qwen3-8B-FP8 on one H100, 1,024 in / 2,048 out, vLLM's defaults (BF16 KV): 4,482 vs 4,868 output
    tok/s on vLLM 0.8.5 (+8.6%), 5,409 vs 5,304 on 0.10.2 (-1.9%) (docs/sources.md §M.8). The model: BF16 within
    15% of their mean; the FP8 gain with a BF16 KV cache under 20% (+14%), where an FP8 KV cache would nearly double
    the running batch and the output."""
    kw = dict(gpus=1, prompt_tokens=1024, response_tokens=2048, max_seqs_per_rank=1024, max_batched_tokens=16384,
              kv_block_tokens=16)
    bf16 = tc.generation_throughput("Qwen3-8B", "H100", precision="bf16", **kw).output_tokens_per_s
    fp8 = tc.generation_throughput("Qwen3-8B", "H100", precision="fp8", kv_precision="bf16", **kw).output_tokens_per_s
    fp8_kv = tc.generation_throughput("Qwen3-8B", "H100", precision="fp8", kv_precision="fp8",
                                      **kw).output_tokens_per_s
    assert bf16 == pytest.approx((4482 + 5409) / 2, rel=0.15)
    assert 0.95 < fp8 / bf16 < 1.20
    assert fp8_kv / bf16 > 1.8


def test_the_rollout_kv_cache_is_bf16_under_fp8_weights_unless_asked_and_the_slots_follow_it():
    """FP8 rollout recipes keep a BF16 KV cache (miles unless --rollout-attn-fp8; NeMo RL sets none; vLLM's
    "auto"): the RL generator's default whatever the weights, FP8 where the preset or the scenario says. A BF16 KV
    token takes twice the bytes, so the instance holds about half the trajectories."""
    from dataclasses import replace

    from tcocalc.rl.capacity import generator_capacity
    from tcocalc.rl.cluster import resolve
    from tcocalc.rl.phases import workload_stats
    from tcocalc.rl.settings import engine_config, rollout_kv_precision

    fp8 = _scn(**{"generator.precision": "fp8", "generator.tp": 1})  # one instance shape for both
    assert all(not p["kv_cache_fp8"] for p in tc.framework_presets().values())
    assert rollout_kv_precision(resolve(fp8).settings) == "bf16"
    assert rollout_kv_precision(replace(resolve(fp8).settings, kv_cache_fp8=True)) == "fp8"
    cluster = resolve(fp8)
    assert engine_config(fp8, cluster).kv_precision == "bf16"
    fp8_kv = fp8.with_values({"generator.kv_precision": "fp8"})
    assert engine_config(fp8_kv, resolve(fp8_kv)).kv_precision == "fp8"
    slots = [generator_capacity(s, resolve(s), workload_stats(s)).b_max for s in (fp8, fp8_kv)]
    assert slots[1] / slots[0] == pytest.approx(2.0, rel=0.05)


# ---------------------------------------------------------------- interruptible generation (§4.6, §5.4)
def _qwen25_72b():
    """Qwen2.5-72B from its Hugging Face config (Qwen/Qwen2.5-72B config.json: hidden 8192, 80 layers, 64 query and
    8 KV heads, MLP 29,568, vocabulary 152,064), the model of the re-prefill rate anchors."""
    return tc.ModelArch.from_hf_config({
        "architectures": ["Qwen2ForCausalLM"], "model_type": "qwen2", "hidden_size": 8192, "num_hidden_layers": 80,
        "num_attention_heads": 64, "num_key_value_heads": 8, "intermediate_size": 29568, "vocab_size": 152064,
        "max_position_embeddings": 32768, "tie_word_embeddings": False, "hidden_act": "silu", "rms_norm_eps": 1e-6,
        "torch_dtype": "bfloat16"}, name="Qwen2.5-72B")


@pytest.mark.parametrize("prompt, published", [(1024, 7.9e3), (4096, 8.1e3), (8192, 7.7e3)])
def test_the_re_prefill_rate_of_a_72b_pair_is_reproduced(prompt, published):
    """vLLM on 2x H100, Qwen2.5-72B, concurrency 1: 7.9K / 8.1K / 7.7K prefill tokens/s at 1K / 4K / 8K input
    (docs/sources.md §M.9). The model: 6.7-6.9K, within 20%."""
    est = tc.prefill(_qwen25_72b(), "H100", parallel=Parallelism(tp=2), batch=1, prompt_tokens=prompt)
    assert est.tokens_per_s == pytest.approx(published, rel=0.20)


def test_re_prefilling_a_thousand_interrupted_8k_requests_takes_the_reported_minutes():
    """§6's derived figure: 1,000 in-flight requests of 8K tokens, 8.2M tokens, at about 8K tok/s is about 17 min
    on one 72B TP2 pair, the order of slime's "10-20 minute lag" report. The model's bulk prefill rate gives 20 min,
    within 25% of the derivation and inside the report's range."""
    bulk = tc.prefill(_qwen25_72b(), "H100", parallel=Parallelism(tp=2), batch=8, prompt_tokens=8192)
    minutes = 1000 * 8192 / bulk.tokens_per_s / 60.0
    assert minutes == pytest.approx(17.0, rel=0.25)
    assert 10.0 <= minutes <= 20.5


def test_an_interrupting_weight_update_re_prefills_every_resident_trajectory():
    """Async with partial rollout and no in-flight updates (AReaL's interruptible generation): each weight update
    pauses the generator for the push and for re-prefilling the KV of every trajectory it held,
    ``t_pause = t_sync + (b/φ)·C / r_prefill`` per replica (docs/rl-modeling.md §4.6), read back from the paused
    generator rate ``λ/(1 + λ·t_pause/B)``. Without partial rollout, or with in-flight updates that keep the KV
    (PipelineRL, vLLM "keep"), the pause is the push alone."""
    from tcocalc.rl.rates import interruptible

    def pause_of(scn):
        run = tc.evaluate(scn).details["run"]
        r, f = run["rates"], run["flow"]
        lam, paused = float(r.generator_samples_per_s[0]), float(f.caps["generator"][0])
        return (lam / paused - 1.0) * r.batch / lam, run

    scn = _scn(**{"orchestration.partial_rollout": True})
    assert interruptible(scn)
    pause, run = pause_of(scn)
    r, f, g, ws = run["rates"], run["flow"], run["generator"], run["workload"]
    resident = float(f.trained_per_s[0] / r.keep * f.rollout_latency_s[0]) / float(r.n_rep[0])  # Little's law
    reprefill = resident / (g.b_op / g.b_max) * ws.context_tokens / g.prefill_tokens_per_s
    assert pause == pytest.approx(float(r.t_sync[0]) + reprefill, rel=1e-6)
    assert reprefill > float(r.t_sync[0])  # at these batches the re-prefill outweighs the push
    for other in (_scn(**{"orchestration.partial_rollout": False}),
                  _scn(**{"orchestration.mode": "inflight", "orchestration.partial_rollout": True})):
        assert not interruptible(other)
        p, run = pause_of(other)
        assert p == pytest.approx(float(run["rates"].t_sync[0]), rel=1e-6)
