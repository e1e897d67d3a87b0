"""Workload statistics for RL rollouts: length distribution, useful groups, tails, multi-turn, staleness.

Pure, vectorisable functions; each cites its formula in docs/rl-modeling.md (§ numbers
below) and is reproduced by a test (tests/unit/rl/test_rollouts.py, validation ID-*, TAIL-*, MT-*).
"""

from __future__ import annotations

import collections
import functools
import math
import threading

import numpy as np
from scipy.optimize import brentq
from scipy.special import ndtr, ndtri

from ..errors import ScenarioError

__all__ = [
    "Z99", "lognormal_from_mean_p99", "lognormal_mu", "lognormal_partial_moment", "capped_moment",
    "truncated_share", "useful_probability", "useful_group_fraction", "blom_z", "expected_max",
    "oversampling_cutoff", "multiturn_prefill_tokens", "cache_hit_fraction", "staleness_means",
    "intra_step_lag", "staleness_throughput_cap", "group_quantile_z", "sync_dispatch_groups",
    "areal_admission_capacity", "verl_stale_fraction_bound", "uncapped_mean", "refill_chain_window_tokens",
    "list_makespan_tokens",
]

Z99 = float(ndtri(0.99))  # 2.3263


def lognormal_from_mean_p99(mean: float, p99: float) -> float:
    """σ of a lognormal with the given mean and 99th percentile (docs/rl-modeling.md §2.1).

    ``ln p99 − ln mean = z·σ − σ²/2`` with ``z = Φ⁻¹(0.99)``; the smaller root
    ``σ = z − sqrt(z² − 2·ln(p99/mean))``. Needs ``mean ≤ p99 ≤ e^{z²/2}·mean ≈ 14.97·mean``.
    """
    if p99 < mean:
        raise ScenarioError("workload.response_tokens_p99", f"{p99:g} is below the mean {mean:g}")
    disc = Z99 ** 2 - 2.0 * math.log(p99 / mean)
    if disc < 0:
        raise ScenarioError("workload.response_tokens_p99",
                            f"p99/mean = {p99 / mean:.1f} exceeds the lognormal's limit "
                            f"{math.exp(Z99 ** 2 / 2):.2f}; give response_tokens_sigma instead")
    return Z99 - math.sqrt(disc)


def lognormal_mu(mean: float, sigma: float) -> float:
    """μ from the (uncapped) mean: ``μ = ln m − σ²/2``."""
    return math.log(mean) - sigma ** 2 / 2.0


def lognormal_partial_moment(j: float, mu: float, sigma: float, cap: float) -> float:
    """``E[R^j; R ≤ L] = exp(jμ + j²σ²/2)·Φ((ln L − μ − jσ²)/σ)`` (docs/rl-modeling.md §2.1)."""
    full = math.exp(j * mu + j * j * sigma * sigma / 2.0)
    if sigma == 0:
        return full if math.exp(mu) <= cap else 0.0
    return full * float(ndtr((math.log(cap) - mu - j * sigma * sigma) / sigma))


def truncated_share(mu: float, sigma: float, cap: float | None) -> float:
    """Share of responses that hit the cap: ``1 − Φ((ln L − μ)/σ)``."""
    if cap is None:
        return 0.0
    if sigma == 0:
        return 1.0 if math.exp(mu) > cap else 0.0
    return float(1.0 - ndtr((math.log(cap) - mu) / sigma))


def capped_moment(j: float, mu: float, sigma: float, cap: float | None) -> float:
    """``E[min(R, L)^j] = E[R^j; R ≤ L] + L^j·(1 − Φ((ln L − μ)/σ))`` (docs/rl-modeling.md §2.1)."""
    if cap is None:
        return math.exp(j * mu + j * j * sigma * sigma / 2.0)
    return lognormal_partial_moment(j, mu, sigma, cap) + cap ** j * truncated_share(mu, sigma, cap)


def uncapped_mean(capped_mean: float, sigma: float, cap: float) -> float:
    """The lognormal mean before the cap ``L`` whose capped mean ``E[min(R, L)]`` is ``capped_mean`` (what a run
    logs: the mean generated length, truncated responses counted at the cap), solved by bracketing
    (:func:`capped_moment` rises with the mean). ScenarioError naming ``response_tokens_mean`` when the capped mean
    is not below the cap (no lognormal has it)."""
    if capped_mean >= cap:
        raise ScenarioError("response_tokens_mean", f"mean generated length {capped_mean:g} is not below the cap "
                                                    f"{cap:g}")

    def gap(m):
        return capped_moment(1, lognormal_mu(m, sigma), sigma, cap) - capped_mean

    if gap(capped_mean) >= 0:  # no spread (or too little to truncate anything): the capped mean is the mean
        return float(capped_mean)
    hi = capped_mean * 2.0
    while gap(hi) < 0:
        hi *= 2.0
    return brentq(gap, capped_mean, hi, xtol=1e-6)


def useful_probability(p, group_size: int):
    """``P(useful | p, G) = 1 − p^G − (1 − p)^G`` for binary rewards (docs/rl-modeling.md §2.2)."""
    p = np.asarray(p, dtype=float)
    return 1.0 - p ** group_size - (1.0 - p) ** group_size


def useful_group_fraction(group_size: int, *, never: float = 0.0, always: float = 0.0, beta_a: float = 1.0,
                          beta_b: float = 1.0) -> float:
    """Share of groups whose rewards are not all equal, for the solve-rate mixture (docs/rl-modeling.md §2.2).

    ``f_u = (1 − z0 − z1)·(1 − E[p^G] − E[(1−p)^G])`` with the Beta closed forms
    ``E[p^G] = Π_{i<G} (a+i)/(a+b+i)`` and ``E[(1−p)^G] = Π_{i<G} (b+i)/(a+b+i)``.
    Uniform p gives ``(G−1)/(G+1)``.
    """
    if group_size < 1:
        raise ScenarioError("workload.group_size", "must be at least 1")
    i = np.arange(group_size, dtype=float)
    # products in log space: stable for large G
    e_pg = math.exp(float(np.sum(np.log(beta_a + i) - np.log(beta_a + beta_b + i))))
    e_qg = math.exp(float(np.sum(np.log(beta_b + i) - np.log(beta_a + beta_b + i))))
    return max(0.0, (1.0 - never - always) * (1.0 - e_pg - e_qg))


def blom_z(n) -> np.ndarray:
    """Blom's normal score for the maximum of ``n`` draws: ``Φ⁻¹((n − 0.375)/(n + 0.25))``."""
    n = np.asarray(n, dtype=float)
    return ndtri((n - 0.375) / (n + 0.25))


def expected_max(n, mu: float, sigma: float, cap: float | None):
    """``E[max_n R] ≈ min(L, exp(μ + σ·z_n))`` (docs/rl-modeling.md §4.5; order statistics, Blom)."""
    m = np.exp(mu + sigma * blom_z(np.maximum(n, 1.0)))
    return np.minimum(m, cap) if cap is not None else m


#: Nodes per longest-length of the renewal grid of :func:`list_makespan_tokens` (ages and residuals on the same step).
_MAKESPAN_NODES = 128
#: The renewal function is tabulated over this many longest lengths, then continued at its asymptotic slope 1/E[R].
_MAKESPAN_SPAN = 4
#: Upper quantile that stands for the longest length when responses are not capped.
_MAKESPAN_TAIL = 1e-7


def _length_cdf(x, mu: float, sigma: float, cap: float | None) -> np.ndarray:
    """``F(x) = P(min(R, L) ≤ x)`` of the capped lognormal (0 below one token's length 0, 1 from the cap on)."""
    x = np.asarray(x, dtype=float)
    with np.errstate(divide="ignore"):
        f = ndtr((np.log(np.maximum(x, 1e-300)) - mu) / sigma) if sigma > 0 else (x >= math.exp(mu)).astype(float)
    f = np.where(x <= 0.0, 0.0, f)
    return np.where(x >= cap, 1.0, f) if cap is not None else f


@functools.lru_cache(maxsize=64)
def _renewal_table(mu: float, sigma: float, cap: float | None):
    """What :func:`list_makespan_tokens` needs of one length law, read-only: the renewal grid ``u`` [token] and the
    renewal function ``m(u)`` on it, the mean ``E[min(R, L)]``, the residual grid ``x`` and the survival matrix
    ``1 − F(a + x)`` over residuals ``x`` (rows) and age-bin midpoints ``a`` (columns), and the bins' edges."""
    hi = _longest_length(mu, sigma, cap)
    h = hi / _MAKESPAN_NODES
    u = np.arange(_MAKESPAN_SPAN * _MAKESPAN_NODES + 1) * h
    F = _length_cdf(u, mu, sigma, cap)
    f = np.diff(F)                           # P(R in (u_{k-1}, u_k]), k = 1..G
    m = np.zeros_like(u)                     # m_i = F_i + sum_k f_k·m_{i-k}: the discretised renewal equation
    for i in range(1, u.size):
        m[i] = F[i] + np.dot(f[:i], m[i - 1::-1])
    edges = np.arange(_MAKESPAN_NODES + 1) * h
    ages = 0.5 * (edges[1:] + edges[:-1])
    x = edges.copy()
    survive = 1.0 - _length_cdf(ages[None, :] + x[:, None], mu, sigma, cap)
    for a in (u, m, edges, x, survive):
        a.flags.writeable = False
    return u, m, capped_moment(1, mu, sigma, cap), x, survive, edges


def _renewals(table, t) -> np.ndarray:
    """The renewal function ``m(t)`` (0 for ``t ≤ 0``): the table, then its asymptote at slope ``1/E[R]``."""
    u, m, mean = table[0], table[1], table[2]
    t = np.asarray(t, dtype=float)
    return np.where(t <= 0.0, 0.0, np.where(t <= u[-1], np.interp(t, u, m), m[-1] + (t - u[-1]) / mean))


#: Results of :func:`list_makespan_tokens` kept for a repeated call (a sizing search or sweep that meets the same
#: splits again; a 13 x 13 accelerator sizing search holds 567 of them, 3.8 MB), least recently used first out;
#: :func:`clear_makespan_memo` forgets them. The lock keeps it whole when app sessions evaluate in threads.
_MAKESPAN_MEMO: collections.OrderedDict = collections.OrderedDict()
_MAKESPAN_MEMO_SIZE = 4096
_MAKESPAN_LOCK = threading.Lock()


def clear_makespan_memo() -> None:
    """Forget the results :func:`list_makespan_tokens` keeps (a cold start measures without them)."""
    with _MAKESPAN_LOCK:
        _MAKESPAN_MEMO.clear()


def list_makespan_tokens(n, slots, mu: float, sigma: float, cap: float | None, replicas=1) -> np.ndarray:
    """Expected decode steps until ``n`` trajectories put on ``slots`` at once have all finished, each freed slot
    taking the next waiting one (list scheduling; docs/rl-modeling.md §4.5) [token]; lengths ``min(R, L)``,
    ``R`` lognormal(``mu``, ``sigma``); ``replicas`` such instances side by side, the batch ending with the last of
    them. Arrays broadcast; where ``n ≤ slots`` the batch's longest, ``E[max R]`` of its ``replicas·n``.

    Each slot is a renewal process of trajectory lengths until the queue is empty, at ``T_q`` where the slots have
    finished ``n − S`` of them: ``S·m(T_q) = n − S``, with ``m`` the renewal function (``m = F + m * dF``, solved on
    a grid of 128 nodes per longest length, continued at slope ``1/E[R]`` beyond four). A slot then holds a job of
    age ``a`` with residual law ``P(res > x) = 1 − F(T_q + x) + ∫ (1 − F(a + x)) dm(T_q − a)`` (renewal theory), and
    the batch ends at ``T_q + E[max res]`` over the ``replicas·S`` slots (each replica's ``T_q`` the same: the
    queue's end is a sum of many lengths), ``E[max res] = ∫ (1 − (1 − P(res > x))^{replicas·S}) dx``. At least the
    batch's longest and within Graham's bounds ``max(W/S, E[max R]) ≤ K ≤ W/S + E[max R]``. A law whose mean the
    grid does not resolve (fewer than 8 nodes in it: a cap or a tail thousands of means long) takes the many-waves
    limit instead (:func:`_stationary_makespan`). Graham's midpoint ``W/S + ½·E[max R]`` (what §4.5 took before
    2026-12-07) is 29-34% short of a list-scheduling simulation at 1,280 trajectories on 1,024 slots with a
    1,024-token cap: the longest ones start late, and ``K ≥ max R``; this is within 5%
    (tests/unit/rl/test_list_makespan.py)."""
    n_arr, s_arr, r_arr = np.broadcast_arrays(np.asarray(n, dtype=float), np.asarray(slots, dtype=float),
                                              np.maximum(np.asarray(replicas, dtype=float), 1.0))
    key = (n_arr.shape, n_arr.tobytes(), s_arr.tobytes(), r_arr.tobytes(), float(mu), float(sigma),
           None if cap is None else float(cap))
    with _MAKESPAN_LOCK:
        hit = _MAKESPAN_MEMO.get(key)
        if hit is not None:
            _MAKESPAN_MEMO.move_to_end(key)
            return hit.copy()
    out = _list_makespan(n_arr, s_arr, r_arr, mu, sigma, cap)
    with _MAKESPAN_LOCK:
        _MAKESPAN_MEMO[key] = out.copy()
        if len(_MAKESPAN_MEMO) > _MAKESPAN_MEMO_SIZE:
            _MAKESPAN_MEMO.popitem(last=False)
    return out


def _list_makespan(n_arr, s_arr, r_arr, mu: float, sigma: float, cap: float | None) -> np.ndarray:
    """:func:`list_makespan_tokens` on broadcast arrays, without its memo."""
    longest = np.asarray(expected_max(n_arr * r_arr, mu, sigma, cap), dtype=float)
    beyond = n_arr > s_arr
    if not beyond.any():
        return longest
    pairs, back = np.unique(np.stack([n_arr[beyond], s_arr[beyond], r_arr[beyond]]), axis=1, return_inverse=True)
    nn, ss, rr = pairs
    out = longest.copy()
    # Graham's bounds hold for any list schedule: max(W/S, max R) <= K <= W/S + max R (in expectation)
    work, top = nn * capped_moment(1, mu, sigma, cap) / ss, expected_max(nn * rr, mu, sigma, cap)
    low, high = np.maximum(work, top), work + top
    if not _resolved(mu, sigma, cap):  # a tail far beyond the mean: the stationary residuals, within the bounds
        out[beyond] = np.clip(_stationary_makespan(nn, ss, rr, mu, sigma, cap), low, high)[back.ravel()]
        return out
    table = _renewal_table(float(mu), float(sigma), None if cap is None else float(cap))
    u, m, _, x, survive, edges = table
    # T_q: S·m(T_q) = n − S on the table (m rises), or past it on the asymptote
    need = (nn - ss) / ss
    slope_t = u[-1] + (need - m[-1]) * table[2]
    tq = np.where(need <= m[-1], np.interp(need, m, u), slope_t)
    # renewals of each age bin at T_q: m(T_q − a_lo) − m(T_q − a_hi)
    dm = _renewals(table, tq[None, :] - edges[:-1, None]) - _renewals(table, tq[None, :] - edges[1:, None])
    original = 1.0 - _length_cdf(tq[None, :] + x[:, None], mu, sigma, cap)     # the first job, age T_q
    residual = np.clip(original + survive @ dm, 0.0, 1.0)                       # P(res > x), (x, pairs)
    with np.errstate(divide="ignore"):
        below = np.exp((ss * rr)[None, :] * np.log1p(-np.minimum(residual, 1.0 - 1e-16)))
    tail = np.trapezoid(1.0 - below, x, axis=0)
    out[beyond] = np.clip(tq + tail, low, high)[back.ravel()]
    return out


#: Grid nodes per mean length below which the renewal grid does not resolve the law (a cap or tail far beyond it).
_MAKESPAN_NODES_PER_MEAN = 8


def _longest_length(mu: float, sigma: float, cap: float | None) -> float:
    """The grid's top: the length only a share ``_MAKESPAN_TAIL`` exceeds, at most the cap [token] (equal lengths:
    the length itself, so a law without spread is always resolved)."""
    top = math.exp(mu + sigma * float(ndtri(1.0 - _MAKESPAN_TAIL)))
    return min(top, cap) if cap is not None else top


def _resolved(mu: float, sigma: float, cap: float | None) -> bool:
    """Whether :func:`_renewal_table`'s grid (``_MAKESPAN_NODES`` nodes per longest length) puts at least
    ``_MAKESPAN_NODES_PER_MEAN`` nodes in a mean length."""
    mean = capped_moment(1, mu, sigma, cap)
    return mean * _MAKESPAN_NODES >= _MAKESPAN_NODES_PER_MEAN * _longest_length(mu, sigma, cap)


def _stationary_makespan(n, slots, replicas, mu: float, sigma: float, cap: float | None) -> np.ndarray:
    """:func:`list_makespan_tokens` in its many-waves limit, for laws the renewal grid cannot resolve (``sigma > 0``:
    a law without spread always is): the queue empties at ``T_q = (n − S)/S·E[R]`` (the renewal function's slope)
    and each slot's residual follows the equilibrium law ``P(res > x) = E[(min(R, L) − x)⁺]/E[min(R, L)]`` (renewal
    theory), closed form from the lognormal's partial moments; the maximum over the ``replicas·S`` slots on a
    geometric grid of ``x`` [token]."""
    mean = capped_moment(1, mu, sigma, cap)
    x = np.concatenate([[0.0], np.geomspace(mean * 1e-4, _longest_length(mu, sigma, cap), 600)])
    # E[min(R, y)] = E[R; R <= y] + y·P(R > y) at y = min(x, L)
    lim = np.minimum(x, cap) if cap is not None else x
    with np.errstate(divide="ignore"):
        z = (np.log(np.maximum(lim, 1e-300)) - mu) / sigma
    below = math.exp(mu + sigma * sigma / 2.0) * ndtr(z - sigma) + lim * (1.0 - ndtr(z))
    survive = np.clip((mean - np.where(x > 0, below, 0.0)) / mean, 0.0, 1.0)
    count = np.asarray(slots, dtype=float) * np.asarray(replicas, dtype=float)
    with np.errstate(divide="ignore"):
        none_left = np.exp(count[None, :] * np.log1p(-np.minimum(survive, 1.0 - 1e-16))[:, None])
    tail = np.trapezoid(1.0 - none_left, x, axis=0)
    return (np.asarray(n, dtype=float) - np.asarray(slots, dtype=float)) / np.asarray(slots, dtype=float) * mean + tail


_CHAIN_POINTS = 1 << 13  # lattice nodes of :func:`refill_chain_window_tokens` (half of its FFT length)


def _group_max_quantiles(mu: float, sigma: float, group_size: int, limit: float | None, n_slots: float):
    """Point masses (values, weights) for a group's slowest member, ``D = max_G R`` [token]: ``F_D(x) = F(x)^G``
    (capped at ``limit``), at the midpoints of its quantile intervals, the upper ones refined geometrically down to
    a share ``10^-6/n_slots`` (where the longest of ``n_slots`` chains lives)."""
    tail = max(min(1e-9, 1e-6 / max(n_slots, 1.0)), 1e-300)
    edges = np.unique(np.concatenate([np.linspace(0.0, 1.0, 2049), 1.0 - np.geomspace(tail, 1.0 / 2048, 160),
                                      [1.0]]))
    q = 0.5 * (edges[1:] + edges[:-1])
    values = np.exp(mu + sigma * ndtri(q ** (1.0 / group_size)))
    if limit is not None:
        values = np.minimum(values, limit)
    return values, np.diff(edges)


def refill_chain_window_tokens(mu: float, sigma: float, group_size: int, keep: float, n_slots: float,
                               limit: float | None, offsets, *, cut: bool = False) -> np.ndarray:
    """Expected length of the admission window of a staleness bound under one step, in decode tokens [token]
    (docs/rl-modeling.md §5.4): ``E[max_{i ≤ n} S_i]``, ``S_i = Σ_{j ≤ N_i} (D_ij + c)``.

    With ``η < 1`` (no partial rollout) the trainer may not start the next version while a trajectory admitted
    under this one runs, so nothing is admitted while it trains: the version goes live with room for one batch,
    ``n = B/G`` groups, and DAPO's dynamic sampling refills each dropped group as it ends. Each of the ``n`` slots
    is a chain of attempts, every one a group whose slowest member ``D`` (``F(x)^G``, capped) ends it plus ``c``
    tokens of prefill and environment (``offsets``, per attempt), until one is kept (probability ``keep``):
    ``N ~ Geometric(keep)``. The window closes when the last chain does. ``S``'s law is
    ``φ_S = keep·φ_A/(1 − (1 − keep)·φ_A)`` on a lattice (FFT; each point mass of ``A = D + c`` split between its
    two nodes so that means are kept exactly, which holds for lattices far coarser than ``A`` when ``keep`` is
    small), then ``E[max] = Σ (1 − F_S^n)·dx``. ``keep = 1`` is the batch's longest, ``E[max_{nG} R] + c``;
    ``keep → 0`` tends to the exponential law (Rényi), ``E[A]/keep·H_n``. Vectorised over ``offsets``.

    ``cut``: a bound in (0, 1) carries a share ``η·B`` of kept samples into the next version, so the trainer has its
    batch before the last chain is kept and starts at the first moment nothing runs: the end of the attempt the
    last chain runs when the others are in (a dropped attempt's refill then goes out under the next version). The
    window is then ``min(E[max S], E[S_(n−1)] + E[A²]/(2·E[A]))``: the second-longest chain and the mean residual
    of the last one's attempt then (renewal theory's excess at an independent time)."""
    keep = min(max(float(keep), 1e-12), 1.0)
    values, weights = _group_max_quantiles(mu, sigma, group_size, limit, n_slots)
    offsets = np.atleast_1d(np.asarray(offsets, dtype=float))
    out = np.empty_like(offsets)
    for i, c in enumerate(offsets):
        a = values + c
        mean_a = float(np.dot(a, weights))
        span = float(a[-1]) + mean_a / keep * (math.log(max(n_slots, 1.0)) + 30.0)
        dx = span / _CHAIN_POINTS
        pos = a / dx
        lo = np.floor(pos).astype(int)
        frac = pos - lo
        pmf = (np.bincount(lo, weights * (1.0 - frac), minlength=2 * _CHAIN_POINTS + 1)
               + np.bincount(lo + 1, weights * frac, minlength=2 * _CHAIN_POINTS + 1))[: 2 * _CHAIN_POINTS]
        phi = np.fft.rfft(pmf)
        pmf_s = np.clip(np.fft.irfft(keep * phi / (1.0 - (1.0 - keep) * phi), n=2 * _CHAIN_POINTS), 0.0, None)
        survival = np.clip(np.cumsum(pmf_s[::-1])[::-1] / max(pmf_s.sum(), 1e-300), 0.0, 1.0)  # P(S >= s_k)
        below = np.concatenate([survival[1:], [0.0]])  # P(S > s_k) = P(S >= s_{k+1}) on the lattice
        log_f = np.log1p(-np.minimum(below, 1.0 - 1e-16))
        longest = float(np.sum(-np.expm1(n_slots * log_f)) * dx)
        if cut and n_slots >= 2:
            below_two = np.exp(n_slots * log_f) + n_slots * np.exp((n_slots - 1.0) * log_f) * below
            second = float(np.sum(np.clip(1.0 - below_two, 0.0, 1.0)) * dx)
            longest = min(longest, second + float(np.dot(a * a, weights)) / (2.0 * mean_a))
        out[i] = longest
    return out


def oversampling_cutoff(alpha: float, mu: float, sigma: float, cap: float | None) -> float:
    """Step length in tokens when ``(1+α)·N`` are dispatched and the first ``N`` kept:
    ``τ = exp(μ + σ·Φ⁻¹(1/(1+α)))`` (docs/rl-modeling.md §4.6; validation ID-08)."""
    if alpha <= 0:
        return math.inf if cap is None else cap
    tau = math.exp(mu + sigma * float(ndtri(1.0 / (1.0 + alpha))))
    return min(tau, cap) if cap is not None else tau


def multiturn_prefill_tokens(first_prompt: float, per_turn_growth: float, turns: int, *, caching: bool) -> float:
    """Prefill tokens of one episode.

    Without prefix caching every turn re-prefills the whole context:
    ``K·P0 + Δ·K(K−1)/2`` (Fireworks multi-turn cost doc; validation MT-01). With caching only the new
    tokens: ``P0 + (K−1)·Δ``.
    """
    k = float(turns)
    if caching:
        return first_prompt + (k - 1.0) * per_turn_growth
    return k * first_prompt + per_turn_growth * k * (k - 1.0) / 2.0


def cache_hit_fraction(first_prompt: float, per_turn_growth: float, turns: int) -> float:
    """Share of re-prefilled tokens a prefix cache would serve:
    ``1 − (P0 + (K−1)Δ)/(K·P0 + Δ·K(K−1)/2)`` (validation MT-01/MT-02)."""
    total = multiturn_prefill_tokens(first_prompt, per_turn_growth, turns, caching=False)
    return 1.0 - multiturn_prefill_tokens(first_prompt, per_turn_growth, turns, caching=True) / total


def staleness_means(in_flight, queued, batch, sigma: float) -> dict:
    """Mean policy-version lag from Little's law (docs/rl-modeling.md §5.3; validation ID-06).

    sample-weighted ``(C + Q)/B``; token-weighted ``(C·e^{σ²} + Q)/B`` (decode duration ∝ length, so
    ``1 + CV² = e^{σ²}``); with in-flight weight updates the token-weighted lag is
    ``Q/B + (C/B)·e^{σ²}/2``.
    """
    c, q, b = (np.asarray(x, dtype=float) for x in (in_flight, queued, batch))
    bias = math.exp(sigma * sigma)
    return {"sample": (c + q) / b, "token": (c * bias + q) / b, "inflight_token": q / b + (c / b) * bias / 2.0}


def intra_step_lag(minibatches: int) -> tuple[float, float]:
    """(mean, max) lag from ``g_mb`` optimizer updates per rollout step: ``(g−1)/2`` and ``g−1``
    (PipelineRL's definition; validation ID-07)."""
    return (minibatches - 1) / 2.0, float(minibatches - 1)


def staleness_throughput_cap(max_staleness, batch, latency_s, queued=0.0):
    """``X ≤ ((η + 1)·B − Q) / E[W_gen]`` [samples/s]: Little's law on AReaL's admission rule, which bounds
    running plus accepted-but-unconsumed samples by ``(η + 1)·B`` (docs/rl-modeling.md §5.4; validation ID-05 with
    ``Q = 0``). ``Q`` is the mean number of accepted samples waiting in the buffer."""
    return ((np.asarray(max_staleness, dtype=float) + 1.0) * batch - queued) / np.asarray(latency_s, dtype=float)


def group_quantile_z(alpha: float, group_size: int) -> float:
    """Normal score of the per-sample quantile at which the first ``N`` of ``(1+α)·N`` *groups* finish:
    a group completes when its slowest member does, ``F(τ)^G = 1/(1+α)`` [derived; docs/rl-modeling.md §4.6 with
    GRPO's whole-group requirement]."""
    return float(ndtri((1.0 / (1.0 + alpha)) ** (1.0 / group_size)))


def sync_dispatch_groups(groups_needed: float, keep: float) -> float:
    """Groups a synchronous step dispatches to fill its batch: the expectation plus two standard deviations of
    the binomial shortfall, as DAPO's over-provisioned ``gen_batch_size`` does, so a second generation round
    (another tail) is rare [derived]."""
    if groups_needed <= 0:
        return 0.0
    return groups_needed + 2.0 * math.sqrt(max(groups_needed * (1.0 - keep), 0.0) / max(keep, 1e-3))


def areal_admission_capacity(eta: int, version: int, batch: int, accepted_running: int, max_concurrent: int,
                             running: int) -> int:
    """Rollouts AReaL may still admit: ``min(max_concurrent − running, (η + v + 1)·B − (accepted + running))``
    (inclusionAI/AReaL ``areal/core/staleness_manager.py``; validation ID-04)."""
    return max(0, min(max_concurrent - running, (eta + version + 1) * batch - accepted_running))


def verl_stale_fraction_bound(threshold: float) -> float:
    """verl fully-async ``staleness_threshold = s`` generates at most ``(1+s)·B`` samples per sync period, so at
    most ``s/(1+s)`` of trained samples are stale (docs/rl-modeling.md §5.1, derived; validation ID-09)."""
    return threshold / (1.0 + threshold)
