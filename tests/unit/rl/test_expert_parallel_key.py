"""``[generator] expert_parallel``: a pinned instance of a mixture-of-experts model either spreads whole experts over
its GPUs (the default, as before) or shards every expert across its tensor-parallel group (vLLM without
``enable_expert_parallel``, what verl runs unless rollout.expert_parallel_size > 1)."""

from __future__ import annotations

from pathlib import Path

import pytest

import tcocalc as tc
from tcocalc.catalog.framework_cases import case_scenario
from tcocalc.errors import ScenarioError
from tcocalc.rl.capacity import generator_capacity
from tcocalc.rl.cluster import resolve
from tcocalc.rl.phases import workload_stats
from tcocalc.rl.run_factors import RunFactors
from tcocalc.studies.calibrate import _RunModel

pytestmark = pytest.mark.unit


def _instance(scn):
    cap = generator_capacity(scn, resolve(scn), workload_stats(scn))
    return cap.instance, cap


def test_the_key_sets_the_pinned_instance_s_expert_layout():
    """Qwen3-30B-A3B (128 experts) on a pinned TP4 instance: experts spread 4 ways by default, and sharded (ep 1)
    with expert_parallel = false; both hold the same weights per GPU (every expert's bytes over 4 GPUs)."""
    scn = case_scenario("verl-async-30b-coloc")
    assert scn.generator.tp == 4 and scn.generator.expert_parallel is False
    sharded, cap_sharded = _instance(scn)
    spread, cap_spread = _instance(scn.with_values({"generator.expert_parallel": None}))
    assert (sharded.tp, sharded.ep) == (4, 1)
    assert (spread.tp, spread.ep) == (4, 4)
    assert cap_sharded.weights_per_gpu_bytes == pytest.approx(cap_spread.weights_per_gpu_bytes, rel=1e-9)


def test_the_layout_moves_the_verl_30b_generation_it_was_set_for():
    """ST-09 (verl's colocated Qwen3-30B-A3B on 128 H20, published generation 348.05 s): 197.9 s with experts
    spread, 238.0 s sharded as verl runs them (2026-12-07, to 1%)."""
    scn = case_scenario("verl-async-30b-coloc")

    def generation(s):
        return _RunModel.of(s, resolve(s)).stages(RunFactors())["generation_s"]

    assert generation(scn) == pytest.approx(238.0, rel=0.01)
    assert generation(scn.with_values({"generator.expert_parallel": None})) == pytest.approx(197.9, rel=0.01)


def test_without_a_pinned_instance_the_key_is_refused_naming_it():
    scn = tc.load_scenario(Path(__file__).resolve().parents[3] / "scenarios" / "default.toml")
    with pytest.raises(ScenarioError) as err:
        scn.with_values({"generator.tp": None, "generator.expert_parallel": False})
    assert err.value.field == "generator.expert_parallel"
    assert "generator.tp" in str(err.value)


def test_a_dense_model_ignores_it():
    scn = case_scenario("verl-gpg-qwen2-7b-fsdp-8")
    base, _ = _instance(scn)
    flagged, _ = _instance(scn.with_values({"generator.expert_parallel": False}))
    assert (base.tp, base.ep) == (flagged.tp, flagged.ep) == (2, 1)
    assert tc.evaluate(scn, advice=False).metrics["step_time_s"] == pytest.approx(
        tc.evaluate(scn.with_values({"generator.expert_parallel": False}), advice=False).metrics["step_time_s"],
        rel=1e-12)
