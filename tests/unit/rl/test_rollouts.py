"""Workload identities of ../shared/validation/cases.md §6, §8, §9 (exact or to the stated tolerance)."""

import math

import numpy as np
import pytest

from tcocalc.rl import rollouts as w


@pytest.mark.reference
@pytest.mark.parametrize("g,expected", [(8, 0.777778), (16, 0.882353), (32, 0.939394)])
def test_id01_uniform_solve_rate(g, expected):
    assert w.useful_group_fraction(g) == pytest.approx(expected, abs=1e-6)
    assert w.useful_group_fraction(g) == pytest.approx((g - 1) / (g + 1), abs=1e-12)


@pytest.mark.reference
@pytest.mark.parametrize("g,p,expected", [(8, 0.5, 0.992188), (16, 0.9, 0.814698), (16, 0.95, 0.559873)])
def test_id02_fixed_solve_rate(g, p, expected):
    assert float(w.useful_probability(p, g)) == pytest.approx(expected, abs=1e-5)


@pytest.mark.reference
def test_id03_beta_half_half():
    assert w.useful_group_fraction(16, beta_a=0.5, beta_b=0.5) == pytest.approx(0.720100, abs=1e-5)


@pytest.mark.reference
def test_rl15_always_solved_bounds_useful_fraction():
    """RL-15: 55% of problems solved by every sample -> f_u ≤ 0.45."""
    assert w.useful_group_fraction(16, always=0.55) <= 0.45


@pytest.mark.reference
def test_id06_staleness_means():
    s = w.staleness_means(1024, 512, 512, 0.8)
    assert float(s["sample"]) == pytest.approx(3.0, abs=1e-3)
    assert float(s["token"]) == pytest.approx(4.793, abs=1e-3)
    assert float(s["inflight_token"]) == pytest.approx(2.896, abs=1e-3)


@pytest.mark.reference
def test_id07_intra_step_lag():
    assert w.intra_step_lag(16) == (7.5, 15.0)


@pytest.mark.reference
@pytest.mark.parametrize("alpha,z", [(0.5, 0.430727), (0.25, 0.841621)])
def test_id08_oversampling_quantile(alpha, z):
    mu, sigma = 8.0, 1.0
    tau = w.oversampling_cutoff(alpha, mu, sigma, None)
    # τ = exp(μ + σ·Φ⁻¹(1/(1+α))): Φ⁻¹(2/3) = 0.430727, Φ⁻¹(0.8) = 0.841621
    assert (math.log(tau) - mu) / sigma == pytest.approx(z, abs=1e-5)


@pytest.mark.reference
def test_tail02_laminar_sigma():
    """TAIL-02: p99/median = 10 -> σ = ln 10 / 2.3263 = 0.990."""
    assert math.log(10) / w.Z99 == pytest.approx(0.990, abs=1e-3)


@pytest.mark.reference
def test_tail01_applied_compute_sigma_from_order_statistics():
    """TAIL-01: 1,280 samples, 99% done at 40 s, all at 120 s, latency ∝ length -> σ = ln 3/(z_max − z_0.99)
    ≈ 1.13 with Blom's z_max = 3.297; must land in [1.0, 1.3]."""
    z_max = float(w.blom_z(1280))
    assert z_max == pytest.approx(3.297, abs=0.005)
    sigma = math.log(3) / (z_max - w.Z99)
    assert 1.0 <= sigma <= 1.3 and sigma == pytest.approx(1.13, abs=0.01)


@pytest.mark.reference
def test_tail04_sync_step_hits_the_cap():
    """TAIL-04: P(step hits cap) = 1 − F(L)^N -> ≈1 for large N, so E[max] = the cap."""
    mu, sigma, cap = w.lognormal_mu(4000, 1.0), 1.0, 28_000
    share = w.truncated_share(mu, sigma, cap)
    assert 1 - (1 - share) ** 8192 > 0.999
    assert float(w.expected_max(8192, mu, sigma, cap)) == cap


@pytest.mark.reference
@pytest.mark.parametrize("turns,expected", [(8, 0.77), (20, 0.90)])
def test_mt01_mt02_fireworks_cache_hit(turns, expected):
    """MT-01: P0 8,000, Δ 12,000, K 8 -> 400,000 prefill tokens, 0.77 cache-hit; MT-02: K 20 -> 0.90
    (Fireworks' '>95% at 20+ turns' is not reproduced with these defaults)."""
    if turns == 8:
        assert w.multiturn_prefill_tokens(8000, 12000, 8, caching=False) == 400_000
    assert w.cache_hit_fraction(8000, 12000, turns) == pytest.approx(expected, abs=0.01 if turns == 20 else 0.03)


def test_lognormal_from_mean_and_p99_round_trips():
    sigma = w.lognormal_from_mean_p99(12_000, 32_000)
    mu = w.lognormal_mu(12_000, sigma)
    assert math.exp(mu + sigma ** 2 / 2) == pytest.approx(12_000)
    assert math.exp(mu + w.Z99 * sigma) == pytest.approx(32_000)


def test_capped_moments_against_monte_carlo():
    rng = np.random.default_rng(0)
    mu, sigma, cap = 9.0, 0.9, 20_000.0
    r = np.minimum(rng.lognormal(mu, sigma, 2_000_000), cap)
    assert w.capped_moment(1, mu, sigma, cap) == pytest.approx(r.mean(), rel=0.005)
    assert w.capped_moment(2, mu, sigma, cap) == pytest.approx((r ** 2).mean(), rel=0.01)
    assert w.truncated_share(mu, sigma, cap) == pytest.approx((r >= cap).mean(), abs=0.002)


def test_bad_tail_inputs_name_the_field():
    from tcocalc import ScenarioError

    with pytest.raises(ScenarioError, match="response_tokens_p99"):
        w.lognormal_from_mean_p99(1000, 500)
    with pytest.raises(ScenarioError, match="sigma"):
        w.lognormal_from_mean_p99(1000, 20_000)


@pytest.mark.reference
def test_id04_areal_admission():
    """ID-04: η=2, v=5, B=512, accepted+running 3000, max_concurrent 1024, running 200 -> 824."""
    assert w.areal_admission_capacity(2, 5, 512, 3000, 1024, 200) == 824


@pytest.mark.reference
def test_id05_staleness_throughput_cap():
    assert float(w.staleness_throughput_cap(2, 512, 600)) == pytest.approx(2.56)


@pytest.mark.reference
def test_id09_verl_stale_fraction():
    assert w.verl_stale_fraction_bound(0.5) == pytest.approx(1 / 3)
