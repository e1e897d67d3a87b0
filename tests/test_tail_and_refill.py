"""The async tail rule's last-admission clock, the synchronous refill round and the async fixed point's step
(docs/rl-modeling.md §4.5 and §5.4): hand-derived and independently computed figures."""

import math

import numpy as np
import pytest
from scipy.stats import binom

from tcocalc.rl.cluster import resolve
from tcocalc.rl.flow import _burst_tail_tokens, _fixed_point_step, _refill_s, _sync_dispatched, _sync_round_s
from tcocalc.rl.rollouts import expected_max, sync_dispatch_groups
from tcocalc.rl.solve import phase_results
from tests.test_simulate import grid_scenario


def test_last_admission_of_fixed_lengths_is_the_length_plus_the_refills_uniform_maximum():
    """Every response L tokens long (sigma -> 0): the burst ends at L, a refill admitted s ~ U[0, u] into the step
    at s + L, so E[Y] = L + u·n/(n + 1) (the maximum of n uniforms): 1,000 + 500·4/5 = 1,400 tokens."""
    y = _burst_tail_tokens(math.log(1000.0), 1e-6, 256, 4, [500.0], None)
    assert float(y[0]) == pytest.approx(1400.0, rel=2e-3)
    assert float(_burst_tail_tokens(math.log(1000.0), 1e-6, 256, 0, [500.0], None)[0]) == pytest.approx(1000.0,
                                                                                                        rel=1e-3)


def test_last_admission_matches_a_monte_carlo_of_burst_and_spread_refills():
    """Heavy tail (sigma 1.2) capped at 16,384 tokens, 256 admitted at once and 155 refills spread over a
    6,000-token step: E[max(max_i R_i, max_j (s_j + R_j))] by sampling, within 1%."""
    mu, sigma, cap, u, n_b, n_r = math.log(3000.0) - 0.72, 1.2, 16_384.0, 6_000.0, 256, 155
    rng = np.random.default_rng(7)
    draws = 20_000
    burst = np.minimum(rng.lognormal(mu, sigma, (draws, n_b)), cap).max(axis=1)
    refill = (rng.uniform(0.0, u, (draws, n_r)) + np.minimum(rng.lognormal(mu, sigma, (draws, n_r)), cap)).max(axis=1)
    sampled = float(np.maximum(burst, refill).mean())
    assert float(_burst_tail_tokens(mu, sigma, n_b, n_r, [u], cap)[0]) == pytest.approx(sampled, rel=0.01)


def test_without_refills_the_last_admission_is_the_burst_maximum():
    """Plain GRPO (no refills): E[Y] is E[max of B capped draws], whatever the step's length (Blom's order
    statistic within 3%)."""
    mu, sigma, cap = math.log(3000.0) - 0.72, 1.2, 16_384.0
    y = _burst_tail_tokens(mu, sigma, 256, 0, [0.0, 1e3, 1e5], cap)
    assert np.ptp(y) == pytest.approx(0.0, abs=1e-6 * y[0])
    assert float(y[0]) == pytest.approx(float(expected_max(256, mu, sigma, cap)), rel=0.03)


def test_secant_step_lands_on_a_linear_maps_fixed_point():
    """f(b) = 0.8·b + 24 has its fixed point at 120; from b = 150 (f = 144) and b = 147 (f = 141.6) the slope is
    0.8 and the secant step lands on 120 exactly; the damped step from 147 alone would give 144.3."""
    b = _fixed_point_step(np.array([147.0]), np.array([141.6]), np.array([150.0]), np.array([144.0]), 500.0)
    assert float(b[0]) == pytest.approx(120.0, rel=1e-12)
    damped = _fixed_point_step(np.array([147.0]), np.array([141.6]), None, None, 500.0)
    assert float(damped[0]) == pytest.approx(144.3, rel=1e-12)


def test_refill_round_is_the_binomial_shortfall_times_its_round():
    """One step off with tool calls (the grid): 63 groups dispatched for 32 needed, each useful with p = keep;
    the expected extra time is sum_{u<32} Bin(u; 63, p)·t_round(N2(u)), with the binomial from scipy
    (independent of the closed form's log-pmf) and P(short) about 2.4%."""
    scn = grid_scenario("one_step_off", 0.3, 0.0, True)
    res = phase_results(scn, resolve(scn), [8], [8])[0]
    ws, gcap, r = res.workload, res.generator, res.rates
    p = r.keep / (1.0 - ws.oversample_waste)
    n1 = math.ceil(_sync_dispatched(ws, r.keep) / ws.group_size - 1e-9)
    need = math.ceil(ws.samples_per_step / ws.group_size - 1e-9)
    assert (n1, need) == (63, 32)
    assert binom.cdf(need - 1, n1, p) == pytest.approx(0.024, abs=0.003)
    want = 0.0
    for u in range(need):
        n2 = ws.group_size * math.ceil(sync_dispatch_groups((need - u) / p, p) - 1e-9)
        longest = float(expected_max(n2, ws.mu, ws.sigma, ws.cap))
        want += binom.pmf(u, n1, p) * float(np.ravel(_sync_round_s(scn, ws, gcap, r, float(n2), longest))[0])
    got = float(np.ravel(_refill_s(scn, ws, gcap, r, _sync_dispatched(ws, r.keep)))[0])
    assert got == pytest.approx(want, rel=1e-6)
    assert 0.5 < got < 5.0  # seconds a step, against a ~110 s round
    plain = grid_scenario("one_step_off", 0.3, 0.0, True).with_values({"orchestration.filter_zero_advantage": False})
    pres = phase_results(plain, resolve(plain), [8], [8])[0]
    assert float(np.ravel(_refill_s(plain, pres.workload, pres.generator, pres.rates,
                                    _sync_dispatched(pres.workload, pres.rates.keep)))[0]) == 0.0
