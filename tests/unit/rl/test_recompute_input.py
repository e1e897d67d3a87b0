"""Issue 36 item 3: the activation recompute a framework runs whatever memory needs (``[trainer] recompute``;
docs/rl-modeling.md §3.11), each check against a hand-derived number or a published figure (docs/sources.md §M.15).
"""

from __future__ import annotations

from pathlib import Path

import pytest

import tcocalc as tc
from tcocalc.errors import ScenarioError
from tcocalc.rl.capacity import extra_pass_units, recompute_flops_ratio, trainer_capacity
from tcocalc.rl.cluster import resolve
from tcocalc.rl.phases import phase_list, workload_stats
from tcocalc.rl.run_factors import RunFactors
from tcocalc.studies.calibrate import _RunModel

CASES = Path(__file__).resolve().parents[3] / "data" / "validation" / "frameworks"


def _case(name: str) -> tc.Scenario:
    return tc.load_scenario(CASES / f"{name}.toml")


def _parts(scn):
    cluster = resolve(scn)
    name, start, steps, over = phase_list(scn)[0]
    return cluster, workload_stats(scn, over, name, start, steps)


def test_full_recompute_costs_one_more_forward_and_the_logprob_pass_none():
    """verl's ReTool recipe trains with enable_gradient_checkpointing=True (docs/sources.md §M.15). Hand-derived:
    full recompute runs each layer's forward again in the backward pass, ``(6 + 2)/6 = 4/3`` of the update's
    compute; the old-policy log-prob pass is a forward pass and recomputes nothing, so it is ``1/(3·4/3) = 1/4`` of
    the recomputing update. On the colocated ReTool case (32 H20, FSDP, its collectives hidden under compute) the
    update grows by 4/3 on its compute alone: between 1.25 and 4/3 (+0.5%); the log-prob pass stays within 2.5%
    (the update's optimizer step and exposed copies, which are not recomputed, move it slightly)."""
    scn = _case("verl-retool-7b-h20-coloc-32")
    assert scn.trainer.recompute == "full"
    plain = scn.with_values({"trainer.recompute": None})
    cluster, ws = _parts(scn)
    assert recompute_flops_ratio(scn, cluster, ws) == pytest.approx(4.0 / 3.0, rel=1e-12)
    assert extra_pass_units(scn, cluster, ws) == pytest.approx(0.75, rel=1e-12)  # one pass, 3/4 of a third
    assert extra_pass_units(plain, *_parts(plain)) == pytest.approx(1.0, rel=1e-12)
    full = _RunModel.of(scn, resolve(scn)).stages(RunFactors())
    none = _RunModel.of(plain, resolve(plain)).stages(RunFactors())
    ratio = full["training_s"] / none["training_s"]
    assert 1.25 <= ratio <= 4.0 / 3.0 * 1.005, ratio
    assert full["logprob_s"] == pytest.approx(none["logprob_s"], rel=0.025)


def test_selective_recompute_adds_a_third_of_the_attention_scores():
    """Selective recompute runs the attention scores' forward again: ``r = 1 + A·E[T²]/(3·F)`` with ``F`` the
    trajectory's training FLOPs and ``A·E[T²]`` their attention part (hand-derived from the FLOP coefficients,
    exact to 1e-12); it lies between 1 and 4/3."""
    from tcocalc.rl.capacity import sample_flops, trajectory_flops_coefficients

    scn = _case("verl-retool-7b-h20-coloc-32").with_values({"trainer.recompute": "selective"})
    cluster, ws = _parts(scn)
    square = trajectory_flops_coefficients(cluster.model)[1]
    want = 1.0 + square * ws.traj_tokens_m2 / (3.0 * sample_flops(cluster.model, ws))
    got = recompute_flops_ratio(scn, cluster, ws)
    assert got == pytest.approx(want, rel=1e-12)
    assert 1.0 < got < 4.0 / 3.0


def test_a_bad_recompute_is_refused_naming_the_field():
    scn = _case("verl-retool-7b-h20-coloc-32")
    with pytest.raises(ScenarioError, match="trainer.recompute"):
        scn.with_values({"trainer.recompute": "everything"})


def test_deepseek_v3_on_h20_reproduces_verls_published_actor_mfu():
    """verl's DeepSeek-V3 671B recipe on 96 H20 (docs/perf/dpsk.md @b178a3cd: MFU 0.19, Megatron TP8 PP12 EP8,
    recompute_granularity full; docs/sources.md §M.15): with the published layout and recompute the roofline's busy
    MFU (Hopper's factors, nothing fitted on the H20) is within 15% of 0.19. Without them the search's layout and
    the lightest recompute that fits give 0.31 (+63%), so the check fails if either is lost."""
    scn = _case("verl-dsv3-h20-coloc-96")
    assert (scn.trainer.tp, scn.trainer.pp, scn.trainer.ep, scn.trainer.recompute) == (8, 12, 8, "full")
    cluster, ws = _parts(scn)
    mfu = float(trainer_capacity(scn, cluster, ws, [scn.trainer.gpus]).mfu_busy[0])
    assert mfu == pytest.approx(0.19, rel=0.15)
    free = scn.with_values({"trainer.tp": None, "trainer.pp": None, "trainer.ep": None, "trainer.recompute": None})
    loose = float(trainer_capacity(free, *_parts(free), [free.trainer.gpus]).mfu_busy[0])
    assert loose > 0.19 * 1.15


def test_areal01_colocated_speedup_inside_its_band():
    """AReaL v0.1's one-node 1.5B run generates with vLLM in eager mode (hybrid_train needs enforce_eager),
    128 sequences per engine (examples/train_batch_1.5B_n1.sh -> train_tiny_on_ray.sh @bc6567dd; docs/sources.md
    §M.15): the published 4-node over 1-node speed-up, 3.47x (band 2.776-4.3375), is then reproduced (SU-08; 1.30x
    with the CUDA-graph engine of 256 sequences assumed before)."""
    from tcocalc.studies.validation_groups import framework_table

    row = framework_table().set_index("id").loc["SU-08"]
    assert 2.776 <= float(row["predicted"]) <= 4.3375, row["predicted"]
