"""The async tail rule's tables (docs/rl-modeling.md §5.4): the token clock at which one version's last admission
finishes (:func:`burst_tail_table`, tabulated from :func:`_burst_tail_tokens`), and under one step the chain of
refills that makes the admission window (:func:`refill_chain_table`, :func:`chain_window_s`). Memoised;
:func:`clear_tail_tables` forgets them."""

from __future__ import annotations

import functools
import math

import numpy as np
from scipy.special import ndtr, ndtri

from ..capacity import GeneratorCapacity
from ..phases import WorkloadStats
from ..rates import Rates
from ..rollouts import capped_moment, refill_chain_window_tokens
from .common import batch_decode_s
from .sync import clear_overlap_rows

__all__ = ["burst_tail_table", "refill_chain_table", "chain_window_s", "clear_tail_tables"]


@functools.lru_cache(maxsize=256)
def burst_tail_table(mu: float, sigma: float, n_burst: float, n_refill: float, limit: float | None):
    """:func:`_burst_tail_tokens` tabulated over the step's length in tokens (0, and 10^-2 to 10^2 times the longest
    response, 10 points a decade), for interpolation inside the fixed point (read-only arrays); a step outside that
    range takes the nearest end's value."""
    spread = np.concatenate([[0.0], _longest_tokens_bound(mu, sigma, n_burst + n_refill, limit)
                             * np.geomspace(1e-2, 1e2, 41)])
    tail = _burst_tail_tokens(mu, sigma, n_burst, n_refill, spread, limit)
    spread.flags.writeable = tail.flags.writeable = False
    return spread, tail


@functools.lru_cache(maxsize=64)
def _refill_chain_rows(mu: float, sigma: float, group_size: int, keep: float, n_slots: float, limit: float | None,
                       cut: bool):
    offsets = np.concatenate([[0.0], capped_moment(1, mu, sigma, limit) * np.geomspace(1e-3, 1e3, 25)])
    window = refill_chain_window_tokens(mu, sigma, group_size, keep, n_slots, limit, offsets, cut=cut)
    offsets.flags.writeable = window.flags.writeable = False
    return offsets, window


def refill_chain_table(ws: WorkloadStats, keep: float, limit: float | None, cut: bool):
    """:func:`~tcocalc.rl.rollouts.refill_chain_window_tokens` of the phase's workload (one batch of ``B/G`` group
    slots, each group kept with probability ``keep/(1 − waste)``) tabulated over the per-attempt offset ``c``
    (0, and 10^-3 to 10^3 times the mean response, 4 points a decade; read-only arrays). ``cut``: the bound carries
    at least one group's samples into the next version (``η·B ≥ G``), so the last chain may be cut."""
    p_group = keep / max(1.0 - ws.oversample_waste, 1e-12)
    return _refill_chain_rows(ws.mu, ws.sigma, ws.group_size, min(p_group, 1.0),
                              ws.samples_per_step / ws.group_size, limit, cut)


def chain_window_s(table, gcap: GeneratorCapacity, r: Rates, w_env):
    """The admission window of a bound under one step [s, per split] (:func:`refill_chain_table`): as a synchronous
    batch's decode (:func:`~.common.batch_decode_s`), the longest chain's tokens at ``t0`` (each attempt's prefill and
    environment time ``c`` as ``c/t0`` tokens) plus ``t1`` times the tokens a replica decodes in the window, every
    dispatched trajectory's ``B/keep·R̄/n_rep``: the batch drains as chains end, so the longest runs mostly at
    the small batch (charging it the step's mean batch, or spreading the refills over the whole step, ran away:
    26,306 s for the 2,500 s the simulator counts for scenarios/semianalysis_qwen3_235b_h200.toml at a bound of 0.5
    with dynamic sampling)."""
    rep = np.maximum(r.n_rep, 1)
    longest = _chain_window(table, (gcap.prefill_s + w_env) / gcap.t0)
    per_rep = r.batch / rep
    return batch_decode_s(gcap, per_rep, r.slots, longest, per_rep / r.keep * r.generated_per_dispatched)


def _chain_window(table, offset_tokens):
    """The tabulated chain window at ``offset_tokens`` [token, per split]: interpolated, and beyond the table's
    last offset continued along its last slope (the window grows linearly in ``c``, by the longest chain's
    attempts)."""
    offsets, window = table
    c = np.asarray(offset_tokens, dtype=float)
    slope = (window[-1] - window[-2]) / (offsets[-1] - offsets[-2])
    return np.where(c <= offsets[-1], np.interp(c, offsets, window), window[-1] + slope * (c - offsets[-1]))


def _longest_tokens_bound(mu: float, sigma: float, n: float, limit: float | None) -> float:
    """A length none of ``n`` responses exceeds but with probability 10^-4 (their ``1 − 10^-4/n`` quantile),
    at most the cap ``limit`` [token]: the top of :func:`_burst_tail_tokens`' integral."""
    top = math.exp(mu + max(sigma, 1e-9) * float(ndtri(1.0 - 1e-4 / max(n, 1.0))))
    return min(top, limit) if limit is not None else top


def clear_tail_tables() -> None:
    """Forget the tabulated last-admission clocks (:func:`burst_tail_table`, :func:`_refill_chain_rows`) and the
    hidden tool time's rows (:func:`~tcocalc.rl.steps.sync.clear_overlap_rows`)."""
    burst_tail_table.cache_clear()
    _refill_chain_rows.cache_clear()
    clear_overlap_rows()


def _burst_tail_tokens(mu: float, sigma: float, n_burst: float, n_refill: float, spread_tokens,
                       limit: float | None):
    """Expected token clock at which the last of one version's admissions finishes, ``E[Y]`` [token] (§5.4).

    While the staleness bound holds admission closed, room opens in two ways: by ``B`` when a version goes live
    (``n_burst`` trajectories admitted at once) and, through the version, as dropped groups end (``n_refill =
    B·(1/keep − 1)`` admitted at times spread evenly over the step). On a replica every running sequence advances
    in lockstep, so in decode tokens a trajectory admitted ``s`` tokens into the step ends at ``s + R``; with the
    step ``u`` tokens long (``spread_tokens``), ``P(Y ≤ y) = F(y)^{n_burst}·[(G(y) − G(y − u))/u]^{n_refill}``,
    ``G(y) = ∫_0^y F = y − E[min(R, y)]``, ``F`` the lognormal response length capped at ``limit``.
    ``E[Y] = ∫ (1 − P(Y ≤ y)) dy`` on a grid. Vectorised over ``spread_tokens``."""
    sigma = max(sigma, 1e-9)
    u = np.atleast_1d(np.asarray(spread_tokens, dtype=float))
    top = _longest_tokens_bound(mu, sigma, n_burst + n_refill, limit)
    # nodes even in the response's z-score below the top (where F^n turns over) and even on [top, top + u] (the
    # refills' spread); the capped CDF jumps to 1 at the cap, the top when the cap binds, so the lower nodes stop
    # just short of it
    z_top = (math.log(top) - mu) / sigma
    lower = np.concatenate([[0.0], np.exp(mu + sigma * np.linspace(z_top - 6.0, z_top, 160)) * (1.0 - 1e-12)])
    y = np.concatenate([np.broadcast_to(lower[None, :], (len(u), len(lower))),
                        top + np.linspace(0.0, 1.0, 81)[None, :] * u[:, None]], axis=1)  # (spread, grid)
    mean_full = math.exp(mu + sigma * sigma / 2.0)

    def cdf(v):
        z = (np.log(np.maximum(v, 1e-300)) - mu) / sigma
        f = np.where(v > 0, ndtr(z), 0.0)
        return np.where(v >= limit, 1.0, f) if limit is not None else f

    def g(v):  # ∫_0^v F = v − E[min(R_capped, v)]
        v = np.maximum(v, 0.0)
        vv = np.minimum(v, limit) if limit is not None else v
        z = (np.log(np.maximum(vv, 1e-300)) - mu) / sigma
        e_min = np.where(vv > 0, mean_full * ndtr(z - sigma) + vv * (1.0 - ndtr(z)), 0.0)
        return v - e_min

    uu = np.maximum(u[:, None], 1e-9)
    f_y = cdf(y)
    spread = np.where(u[:, None] > 0, (g(y) - g(y - uu)) / uu, f_y) if n_refill else 1.0
    prob = f_y ** n_burst * np.clip(spread, 0.0, 1.0) ** n_refill
    return np.trapezoid(1.0 - prob, y, axis=1)
