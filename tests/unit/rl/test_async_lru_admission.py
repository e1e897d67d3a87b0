"""Issue 40 item 3: under "lru" KV retention the async step's admission fills and its group wait carries the
replicas' re-prefill stalls and the spread of a full replica's occupancy (docs/rl-modeling.md §7)."""

from __future__ import annotations

import numpy as np
import pytest

import tcocalc as tc
from tcocalc.rl.rollouts import blom_z
from tcocalc.rl.steps.async_ import group_hold_tokens, lru_admitted_group_wait

GROUP16 = "tests/data/agreement/glm5_group16.toml"


def test_the_group_wait_solves_the_quadrature_of_decode_and_occupancy_spread():
    """Hand-derived: G = 8 (Blom z = Φ⁻¹(7.625/8.25) = 1.4342, z² = 2.0569), 15 replicas, c = 30.85; decode wait
    500, admitted 2,000, served 600: H² + c·H − (500² + c·2,000) = 0, H = (−c + √(c² + 4·(250,000 + 61,708)))/2 =
    543.1, and H² = 500² + c·(2,000 − H) to 1e-9."""
    c = blom_z(8) ** 2 * 15
    h = float(lru_admitted_group_wait(8, np.array([15]), 2000.0, np.array([500.0]), np.array([600.0]))[0])
    assert c == pytest.approx(30.85, abs=0.01)
    assert h == pytest.approx(543.1, abs=0.1)
    assert h * h == pytest.approx(500.0 ** 2 + c * (2000.0 - h), rel=1e-9)


def test_without_a_surplus_the_group_wait_is_the_decodes_and_it_never_crowds_out_the_served():
    """No surplus (admitted − decode wait ≤ served): no replica is full, H is the decode's alone; a small surplus
    clips H so that the served trajectories stay (H ≤ admitted − served); no decode spread (σ = 0): H > 0 from the
    occupancy alone."""
    rep = np.array([15])
    assert float(lru_admitted_group_wait(8, rep, 1000.0, np.array([300.0]), np.array([800.0]))[0]) == 300.0
    h = float(lru_admitted_group_wait(8, rep, 1000.0, np.array([300.0]), np.array([680.0]))[0])
    assert 300.0 <= h <= 1000.0 - 680.0 + 1e-9
    assert float(lru_admitted_group_wait(8, rep, 2138.0, np.array([0.0]), np.array([500.0]))[0]) > 200.0


def test_lru_admission_fills_the_bound_less_the_buffer_the_batch_in_training_and_the_held_members():
    """glm5_group16 (η = 8, B = 512): both phases are paced by the generator under "lru", so running + finished
    members waiting + the buffer (B/2) + the batch being trained and pushed (X·(t_trainer + t_sync), Little's law)
    is (η + 1)·B = 4,608 to 1e-9 (the simulator: within 1%). Before, the surplus was capped at one generator's
    slots (the drift phase's in-flight count was 1,449 of a room of 3,490)."""
    r = tc.evaluate(tc.load_scenario(GROUP16))
    for res in r.phase_results:
        f, rates = res.flow, res.rates
        x = float(f.trained_per_s[0])
        total = (float(f.in_flight[0]) + float(f.group_wait[0]) + float(f.queued[0])
                 + x * float(rates.t_trainer[0] + rates.t_sync[0]))
        assert total == pytest.approx(9 * 512, rel=1e-9)
        assert float(f.in_flight[0]) > 2000.0


def test_a_members_hold_runs_at_the_replicas_time_per_token_with_its_stalls():
    """glm5_group16's drift phase: every return misses (hit 0), so the replica stalls miss_s per trajectory it
    completes and a decoding sequence's time per token is t(b) + b·miss_s/R_gen (Little's law on the replica),
    about twice t(b) (the simulator: 0.119 s against t(b) = 0.061 s). The decode part of the group wait is
    X/keep·hold_tokens·that, and the flow's group wait H solves H² = decode² + z_G²·n_rep·(admitted − H) to 1e-9."""
    res = tc.evaluate(tc.load_scenario(GROUP16)).phase_results[1]
    f, rates, gcap, ws = res.flow, res.rates, res.generator, res.workload
    b = float(rates.b_op[0])
    t_b = gcap.t0 + gcap.t1 * b
    token_s = t_b + float(np.ravel(rates.miss_s)[0]) * b / rates.generated_per_dispatched
    assert 1.8 < token_s / t_b < 2.2
    x = float(f.trained_per_s[0])
    decode = x / rates.keep * group_hold_tokens(ws) * token_s
    c = blom_z(ws.group_size) ** 2 * float(rates.n_rep[0])
    admitted = 9 * 512 - float(f.queued[0]) - x * float(rates.t_trainer[0] + rates.t_sync[0])
    h = float(f.group_wait[0])
    assert h > decode * 1.05  # the occupancy spread adds
    assert h * h == pytest.approx(decode ** 2 + c * (admitted - h), rel=1e-9)
