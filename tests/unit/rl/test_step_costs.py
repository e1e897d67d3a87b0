"""Fixed per-step costs of the trainer loop (docs/rl-modeling.md §5.7; tcocalc.rl.rates.fixed_step_seconds)."""

from __future__ import annotations

import pytest

import tcocalc as tc
from tcocalc.rl.cluster import resolve
from tcocalc.rl.phases import workload_stats
from tcocalc.rl.rates import fixed_step_seconds
from tests.conftest import ROOT

SCN = ROOT / "scenarios"


def _parts(scn):
    cluster = resolve(scn)
    return cluster, cluster.settings, workload_stats(scn)


def test_the_controller_pays_per_dispatched_sample():
    """verl-fsdp's preset: 0.46 ms per dispatched sample, the slope of vime's measured single-controller overhead
    (13.5 ms at 16 samples, 124.9 ms at 256: (124.9 - 13.5)/(256 - 16) = 0.464 ms) [hand-derived]; B/keep samples."""
    scn = tc.load_scenario(SCN / "verl_fully_async_qwen25_7b_h20.toml")
    cluster, st, ws = _parts(scn)
    assert (124.9 - 13.5) / (256 - 16) == pytest.approx(st.dispatch_s_per_sample * 1e3, rel=0.01)
    assert fixed_step_seconds(scn, cluster, st, ws, 64) == pytest.approx(
        0.46e-3 * ws.samples_per_step / ws.keep_fraction, rel=1e-12)
    generic = scn.with_values({"orchestration.framework": "generic"})
    assert fixed_step_seconds(generic, *_parts(generic), 64) == 0.0


def test_a_checkpoint_is_its_save_time_over_its_interval():
    """Qwen3-8B (8.19e9 parameters) every 50 steps on 8 trainer GPUs: 14 B/param = 114.7 GB written at
    min(8 x 0.861 GB/s, 20 GB/s) = 6.89 GB/s takes 16.6 s, 0.333 s a step [hand-derived from
    data/rl_calibration.toml], plus the 2.5 s of other fixed work given; the synchronous step grows by exactly that."""
    base = tc.load_scenario(SCN / "default.toml").with_cluster(mode="sync")
    scn = base.with_values({"orchestration.checkpoint_every_steps": 50, "orchestration.step_fixed_s": 2.5})
    cluster, st, ws = _parts(scn)
    rl = cluster.rl_cal
    nbytes = rl["checkpoint_bytes_per_param"] * cluster.model.params_total
    rate = min(8 * rl["disk_write_bytes_per_s_per_gpu"], rl["shared_storage_write_bytes_per_s"])
    want = nbytes / rate / 50 + 2.5
    assert nbytes == pytest.approx(14 * 8.19e9, rel=0.01)
    assert float(fixed_step_seconds(scn, cluster, st, ws, 8)) == pytest.approx(want, rel=1e-9)
    grown = tc.evaluate(scn).metrics["step_time_s"] - tc.evaluate(base).metrics["step_time_s"]
    assert grown == pytest.approx(want, rel=1e-6)


def test_the_simulator_pays_it_too():
    scn = tc.load_scenario(SCN / "default.toml").with_cluster(mode="sync")
    slow = scn.with_values({"orchestration.step_fixed_s": 15.0})
    sim0 = tc.simulate(scn, steps=20, seed=2).metrics["step_time_s"]
    sim1 = tc.simulate(slow, steps=20, seed=2).metrics["step_time_s"]
    assert sim1 - sim0 == pytest.approx(15.0, rel=0.05)


@pytest.mark.parametrize("key, value", [("orchestration.step_fixed_s", -1.0),
                                        ("orchestration.checkpoint_every_steps", 0),
                                        ("orchestration.dispatch_s_per_sample", 2.0)])
def test_bad_values_name_the_key(key, value):
    with pytest.raises(tc.ScenarioError) as err:
        tc.load_scenario(SCN / "default.toml").with_values({key: value})
    assert err.value.field == key
