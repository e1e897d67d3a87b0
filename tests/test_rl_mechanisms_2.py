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
from tcocalc.catalog.calibration import parse_rl_calibration, rl_calibration
from tcocalc.catalog.models import model
from tcocalc.errors import DataFileError, ScenarioError
from tcocalc.rl.weight_sync import (
    WEIGHT_SYNC_TRANSPORTS,
    checkpoint_save_seconds,
    disk_reload_seconds,
    disk_sync_seconds,
    host_copy_seconds,
    storage,
    weight_sync_seconds,
)
from tcocalc.scenario import Orchestration

H100, H200, B300 = hardware("H100"), hardware("H200"), hardware("B300")


def _scn(**over):
    return tc.load_scenario("scenarios/default.toml").with_values(over)


# ---------------------------------------------------------------- weight sync through disk (§3.8)
# (bytes per engine GPU [B], published reload [s], source): docs/sources.md §M.6
RELOADS = [
    (0.494e9 * 2, 4.0, "prime-rl PR 651: Qwen2.5-0.5B, vLLM one GPU, mmap loader"),
    (2.0 * 30.532e9 / 4, 30.0, "AReaL PR 324: Qwen3-30B-A3B, SGLang TP4, fast loader"),
    (27.2e9, 27.15, "stitch: GLM-4.5-Air FP8 TP4 H200, disk destination"),
    (189.4e9, 239.6, "stitch: GLM-5.2 FP8 TP4 B300"),
    (151.0e9, 165.1, "stitch: Kimi K2.6 NVFP4 TP4 B300"),
    (207.5e9, 300.4, "stitch: Kimi K3 MXFP4 TP8"),
]


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
