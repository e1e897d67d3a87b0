"""The asynchronous step model (``async``, ``inflight``; docs/rl-modeling.md §5.4, §5.6): the generator streams
under the staleness bound ``η``.

``X = min(λ_g·(1 − t_sync·X/B), μ_eff, keep·((η+1)·B − Q)/W_gen, k·B/(T_end + t_train + t_sync))`` (AReaL's
admission rule through Little's law and the trainer's gate on the last admission, ``k = ⌊η⌋ + 1``, one more with
partial rollout, §5.4), solved as a fixed point over the decoding batch and ``X`` (:func:`_async_throughput`), since
a throttled generator finishes each trajectory sooner; with the trainer streaming mini-batches and partial rollout
(verl fully-async, §5.6) the bound only limits admission and the last two terms give way to the window cap
``(1 + ⌊η⌋)·B/(t_sync + T_fill + t_train/g)`` (:func:`streamed_window_fill_s`)."""

from __future__ import annotations

import math

import numpy as np

from ...scenario import Scenario
from ..capacity import GeneratorCapacity
from ..kv_retention import lru_residency
from ..phases import WorkloadStats
from ..rates import Flow, Rates, interruptible, turn_shape
from ..rollouts import blom_z, capped_moment, expected_max, group_quantile_z, staleness_throughput_cap
from .common import batch_decode_s
from .tail import burst_tail_table, chain_window_s, refill_chain_table

__all__ = ["async_step", "streamed_window_fill_s", "group_hold_tokens", "lru_admitted_group_wait"]


def group_hold_tokens(ws: WorkloadStats) -> float:
    """Tokens by which a group's slowest member outlasts the mean one, ``E[max_G R] − E[R]`` [token] (§5.4).

    GRPO scores a prompt's ``G`` samples together, so a framework submits them as one task and counts it as
    running until the last finishes (AReaL 1.0.4: ``GroupedRolloutWorkflow`` gathers the group's episodes in
    ``areal/infra/remote_inf_engine.py`` and the ``StalenessManager`` counts each submitted task running until
    it returns, ``areal/infra/staleness_manager.py``). A finished member thus holds its admission slot for
    ``E[max_G R] − R`` more tokens of decode; the members share the prompt, the turns and the tool calls, so only
    the decode differs. Order statistic as :func:`~tcocalc.rl.rollouts.expected_max` (Blom)."""
    longest = float(expected_max(ws.group_size, ws.mu, ws.sigma, ws.cap))
    return max(0.0, longest - capped_moment(1, ws.mu, ws.sigma, ws.cap))


def streamed_window_fill_s(scn: Scenario, ws: WorkloadStats, gcap: GeneratorCapacity, r: Rates):
    """Time from a weight push until a streamed step's last mini-batch is in (§5.6) [s, per split].

    The trainer takes each of the step's ``g`` mini-batches as soon as the queue holds it (verl fully-async)
    and, with partial rollout, never waits for running trajectories: the staleness bound ``η`` only admits
    ``(η + 1)·B`` samples per version (AReaL's rule; verl's ``staleness_threshold`` resets its count to the
    samples in flight and queued at each push, the same bound). The last samples of step ``v`` are admitted
    when version ``v − ⌊η⌋`` goes live (the caller divides by ``1 + ⌊η⌋``, the steps they have); they share the
    replicas with everything the bound lets in, ``(η+1)·B/keep`` dispatched, and the step's last mini-batch is in
    when the first needed groups of its admission have finished: the oversampling cut of §4.6 with ``α`` the
    fractional part of ``η``, ``τ = exp(μ + σ·z)``, ``Φ(z)^G = 1/(1+α)`` (for whole ``η`` the batch's longest,
    ``E[max R]``). Decoding to ``τ`` takes :func:`~.common.batch_decode_s` with every trajectory's tokens up to ``τ``,
    ``E[min(R, τ)]``; prefill and tool time add once."""
    frac = scn.orchestration.max_staleness % 1.0
    keep, B, rep = r.keep, r.batch, np.maximum(r.n_rep, 1)
    if frac > 0:
        tau = math.exp(ws.mu + ws.sigma * group_quantile_z(frac, ws.group_size))
        tau = min(tau, ws.cap) if ws.cap is not None else tau
    else:
        tau = float(expected_max(B / keep, ws.mu, ws.sigma, ws.cap))
    per_rep = (1.0 + scn.orchestration.max_staleness) * B / keep / rep
    decoded = capped_moment(1, ws.mu, ws.sigma, tau)
    step_op = gcap.t0 + gcap.t1 * r.b_op
    w_env = r.rollout_latency_s - gcap.prefill_s - r.generated_per_dispatched * step_op
    return gcap.prefill_s + np.maximum(w_env, 0.0) + batch_decode_s(gcap, per_rep, r.slots, tau, per_rep * decoded)


def _async_throughput(scn, ws, gcap, r: Rates, mu_eff):
    """The fixed point of :func:`async_step`: (X, W_gen, held, generator rate with pauses, caps, generator rate,
    prefix-cache hit share) per split, ``held`` the time a finished member holds its admission slot beyond its own
    latency (until its group's slowest member ends, §5.4). Under ``"lru"`` KV retention (§4.12) the hit share
    follows the trajectories the fixed point keeps in flight, and with it the misses' re-prefill in the generator's
    rate and in ``W``; the ``held`` returned then counts the replica's re-prefill stalls too
    (:meth:`_LRUFeed.token_s`), which the fixed point's own hold (its staleness cap and its fill) leaves out."""
    B, keep, sb, orch = r.batch, r.keep, scn.sandbox, scn.orchestration
    eta = orch.max_staleness
    rep = np.maximum(r.n_rep, 1)
    lam_g = r.generator_samples_per_s
    # Per weight update the generator pauses for the sync; with partial rollout (interruptible, AReaL) it also
    # discards the in-flight KV and re-prefills those contexts (§4.6).
    reprefill = interruptible(scn)
    lam_paused = lam_g / (1.0 + lam_g * r.t_sync / B)
    step_op = gcap.t0 + gcap.t1 * r.b_op
    w_env = r.rollout_latency_s - gcap.prefill_s - r.generated_per_dispatched * step_op
    phi_share = gcap.b_op / gcap.b_max if gcap.b_max else 1.0   # decoding share of resident trajectories
    lru = _LRUFeed(ws, gcap, r) if r.resident is not None else None
    hit, b_top = r.hit, r.b_op
    if lru:
        w_base = w_env - r.miss_s  # the tools' and start-up's share of W, without the misses
    hold_tokens = group_hold_tokens(ws)
    limit = ws.cap if orch.oversampling <= 0 else (min(ws.cap, ws.tau) if ws.cap is not None else ws.tau)
    # The trainer may not start the version that leaves a running trajectory more than η behind (⌊η⌋ + 1 versions
    # after its dispatch; one more with partial rollout, which pauses and resumes it across the update). A version
    # is live a step T after the one before, and its training and push take the last t_train + t_sync of it, so the
    # version's last admission must finish within k·T − t_train − t_sync of that version going live, pausing for
    # the k − 1 pushes between. It finishes at E[Y] decode tokens (tail.py, _burst_tail_tokens: B admitted when the
    # version goes live, the dropped groups' refills spread over the step).
    k_steps = math.floor(eta) + 1.0 + (1.0 if orch.partial_rollout else 0.0)
    spread_grid, tail_grid = burst_tail_table(ws.mu, ws.sigma, B, B * (1.0 / keep - 1.0), limit)
    # under one step (k = 1) nothing is admitted while the trainer trains: the window is a chain of refills
    chain = (refill_chain_table(ws, keep, limit, eta * B >= ws.group_size)
             if k_steps == 1.0 and keep < 1.0 - 1e-12 else None)
    if chain is not None:
        chain_s = chain_window_s(chain, gcap, r, w_env)
    b = np.array(r.b_op, dtype=float)
    x = np.minimum(lam_paused, mu_eff) * np.ones_like(b)
    pause_s = r.t_sync
    caps: dict = {}
    # a trainer that streams mini-batches with partial rollout never waits for running trajectories: the step is
    # held only by its window (§5.6), not by the in-flight count or the tail
    window_cap = None
    if r.streamed:
        window_cap = B * (1.0 + math.floor(eta)) / (r.t_sync + streamed_window_fill_s(scn, ws, gcap, r)
                                                    + r.t_train / scn.trainer.minibatches_per_step
                                                    + r.t_fixed)
    settling = _SETTLE_START
    for it in range(_SECANT_ITERATIONS + _BISECTION_ITERATIONS):
        w = gcap.prefill_s + r.generated_per_dispatched * (gcap.t0 + gcap.t1 * b) + w_env
        w_hold = w + hold_tokens * (gcap.t0 + gcap.t1 * b)
        if lru:
            b_top, lam_g, fill_paused, under, by_sandboxes = lru.feed(scn, x, w_hold - w)
            if not reprefill:
                lam_paused = lam_g / (1.0 + lam_g * r.t_sync / B)
        if reprefill:
            pause = r.t_sync + b * rep / phi_share * ws.context_tokens / (gcap.prefill_tokens_per_s * rep)
            lam_paused = lam_g / (1.0 + lam_g * pause / B)
            pause_s = pause
        tok_s = gcap.t0 + gcap.t1 * b
        x_prev = x
        if chain is None:
            tail_tok = np.interp((B / x_prev) / tok_s, spread_grid, tail_grid)
            t_tail = gcap.prefill_s + tail_tok * tok_s + w_env + (k_steps - 1.0) * pause_s
        else:
            t_tail = chain_s
        # half a batch waits in the buffer on average while the next one assembles (Q = B/2)
        hold_cap = keep * staleness_throughput_cap(eta, B, w_hold, queued=B / 2.0)
        tail_cap = k_steps * B / (t_tail + r.t_trainer + r.t_sync)
        caps = {"generator": lam_paused, "trainer": mu_eff,
                "staleness": window_cap if window_cap is not None else np.minimum(hold_cap, tail_cap)}
        if lru:  # a fill that leaves slots empty is the admission's limit (or the sandboxes'), not the generator's
            caps["staleness"] = np.where(under & ~by_sandboxes, np.minimum(caps["staleness"], fill_paused),
                                         caps["staleness"])
        x = np.minimum(np.minimum(lam_paused, mu_eff), caps["staleness"])
        if ws.uses_sandbox and sb.max_concurrency > 0:
            caps["sandbox_concurrency"] = keep * sb.max_concurrency / w  # (a fill the sandboxes set: this cap)
            x = np.minimum(x, caps["sandbox_concurrency"])
        if ws.uses_sandbox and sb.max_starting > 0 and r.startup_s > 0:
            caps["sandbox_start"] = np.broadcast_to(keep * sb.max_starting / r.startup_s, x.shape)
            x = np.minimum(x, caps["sandbox_start"])
        # resident trajectories per replica (KV held through tool calls, at most b_max); the share decoding is
        # the LLM part of a trajectory's life at the current step time
        resident = np.minimum((x / keep) * w / rep, r.slots if lru is None else lru.n)
        if lru:  # the histories the trajectories now in flight leave cached, and a trajectory's misses; while
            # generation paces, the admission's fill (the surplus waits for a slot inside the engine)
            paced = x >= np.where(under & by_sandboxes, lam_paused, np.minimum(lam_paused, fill_paused)) * (1 - 1e-9)
            resident, hit = lru.in_flight(paced, resident, hit)
            w_env = w_base + (1.0 - hit) * lru.miss_all
        b_new = np.clip(resident * (w - w_env) / w, 1.0, b_top)
        settling, b_next = _settle(settling, it, b, b_new, np.all(np.abs(x - x_prev) <= 1e-10 * np.abs(x)), b_top)
        if b_next is None:
            break
        b = b_next
    # the finished members a count holds (async_step): under "lru" at the replica's time per token, its re-prefill
    # stalls at the state's hit share included (the fixed point above holds them at t(b), its fill too)
    held_s = w_hold - w if lru is None else hold_tokens * lru.token_s(b, hit)
    return x, w, held_s, lam_paused, caps, lam_g, hit


class _LRUFeed:
    """The generator under ``"lru"`` KV retention inside :func:`_async_throughput` (§4.12): the engine takes every
    trajectory admitted (a waiting one holds no slot), so while generation paces the run AReaL's count fills it,
    ``(η + 1)·B`` less the queue (``B/2``) and the finished members waiting for their group, at most the
    framework's cap and the sandboxes; the generator's rate is that state's, its decoding batch and the misses its
    histories overflow into. The last state is kept while the fill does not move."""

    def __init__(self, ws: WorkloadStats, gcap: GeneratorCapacity, r: Rates):
        self.ws, self.gcap, self.r = ws, gcap, r
        self.shape = turn_shape(ws, gcap)
        self.miss_all = self.shape.missed / self.shape.prefill_tokens_per_s  # every return missed [s]
        self.rep = np.maximum(r.n_rep, 1)
        self.hit, self.fed, self.at, self.n = r.hit, None, None, None

    def feed(self, scn: Scenario, x, held_s):
        """(decoding batch, generator rate, the fill's rate with pauses, whether the fill leaves slots empty, whether
        the sandboxes set it) at throughput ``x`` with members held ``held_s`` beyond their own latency."""
        r, gcap, ws, sb = self.r, self.gcap, self.ws, scn.sandbox
        B, keep = r.batch, r.keep
        n = np.clip(((scn.orchestration.max_staleness + 1.0) * B - B / 2.0 - (x / keep) * held_s) / self.rep,
                    1.0, r.resident)
        by_sandboxes = np.zeros(np.shape(n), dtype=bool)
        if ws.uses_sandbox and sb.max_concurrency > 0:
            by_sandboxes = max(sb.max_concurrency, 1) / self.rep < n
            n = np.minimum(n, max(sb.max_concurrency, 1) / self.rep)
        if self.fed is None or np.any(np.abs(n - self.at) > 1e-9 * n):
            self.hit = lru_residency(self.shape, n, passes=30, start=self.hit).hit
            self.fed, self.at = lru_residency(self.shape, n, hit=self.hit), n
        self.n = n
        b = self.fed.decoding
        fill = self.rep * keep / (r.generated_per_dispatched * (gcap.t0 + gcap.t1 * b) / b + self.fed.miss_s)
        under = b < gcap.b_max - 1e-9  # the generator could do what its slots do without evicting
        lam = np.where(under, self.rep * keep * gcap.b_max / (r.generated_per_dispatched
                                                              * (gcap.t0 + gcap.t1 * gcap.b_max)), fill)
        return b, lam, fill / (1.0 + fill * r.t_sync / B), under, by_sandboxes

    def token_s(self, b, hit):
        """A decoding sequence's time per token at decoding batch ``b`` and hit share ``hit``, its replica's stalls
        included [s]: ``t(b) + b·miss_s/R_gen``, ``miss_s = (1 − hit)·`` every return's re-prefill. By Little's law on
        the replica a sequence's time per token is ``b`` over the replica's token rate, ``R_gen·b/(R_gen·t(b) +
        b·miss_s)`` (as the fill's rate, :meth:`feed`): the replica also stalls while the histories of the others it
        runs are prefilled again (the simulator's ``Replicas.stall``), so a member's decode, and its group's wait for
        the slowest (§5.4), stretch by the misses of all ``b``."""
        return self.gcap.t0 + self.gcap.t1 * b + (1.0 - hit) * self.miss_all * b / self.r.generated_per_dispatched

    def in_flight(self, paced, little, hit):
        """(trajectories in flight per replica, their hit share): the fill where generation paces, else Little's."""
        resident = np.where(paced, self.n, little)
        if np.all(paced):
            return resident, self.hit
        return resident, np.where(paced, self.hit, lru_residency(self.shape, resident, passes=30, start=hit).hit)


#: Iterations of the secant/damped step on the decoding batch before the bisection safeguard, and of the bisection.
_SECANT_ITERATIONS, _BISECTION_ITERATIONS = 80, 60
#: :func:`_settle`'s state before the first step: (the secant phase's (b, f(b)) tried, the bisection's bracket, the
#: previous b and f(b)).
_SETTLE_START = ((), None, None, None)


def _settle(state, it: int, b, f_b, x_settled: bool, upper):
    """(state, the next decoding batch per split, or ``None`` when the fixed point is reached) of
    :func:`_async_throughput`'s iteration on ``b``: :func:`_fixed_point_step` until ``f(b) = b`` within
    ``1e-10`` (``np.allclose`` without its overhead) with ``X`` settled, or for :data:`_SECANT_ITERATIONS` steps;
    then bisection on ``f(b) − b`` over the splits still moving (:func:`_jump_bracket`, :func:`_bisected`) until
    each bracket is within ``1e-13`` of its upper end."""
    tried, bracket, b_prev, f_prev = state
    still = np.abs(f_b - b) > 1e-8 + 1e-10 * np.abs(b)
    if bracket is None:
        if not np.any(still) and x_settled:
            return state, None
        tried = (*tried, (b, f_b))
        if it + 1 < _SECANT_ITERATIONS:
            return (tried, None, b, f_b), _fixed_point_step(b, f_b, b_prev, f_prev, upper)
        bracket = _jump_bracket(tried, still, upper)
    else:
        bracket = _bisected(bracket, b, f_b)
        lo, hi, active = bracket
        if not np.any(active & (hi - lo > 1e-13 * hi)):
            return (tried, bracket, b_prev, f_prev), None
    lo, hi, active = bracket
    return (tried, bracket, b_prev, f_prev), np.where(active, 0.5 * (lo + hi), b)


def _jump_bracket(tried, still, upper):
    """(lo, hi, active) per split for :func:`_bisected` once the secant phase has not converged: the splits still
    moving are active, bracketed by the largest ``b`` the phase tried with ``f(b) > b`` (else 1, where ``f(1) ≥ 1``)
    and the smallest above it with ``f(b) < b`` (else ``upper``, which ``f`` never exceeds). The map can jump (under
    ``"lru"`` the hit share of the histories in flight falls from 1 to near 0 where the pool starts to thrash,
    docs/rl-modeling.md §4.12) and then has no fixed point: the iteration cycles between the branches (GLM-5's drift
    scenario, a 5-cycle), and the step settles at the jump, where ``f(b) − b`` changes sign."""
    bs = np.array([np.broadcast_to(t[0], np.shape(still)) for t in tried], dtype=float)
    fs = np.array([np.broadcast_to(t[1], np.shape(still)) for t in tried], dtype=float)
    top = np.broadcast_to(np.asarray(upper, dtype=float), np.shape(still))
    lo = np.max(np.where(fs > bs, bs, 1.0), axis=0, initial=1.0)
    hi = np.min(np.where((fs < bs) & (bs > lo), bs, np.inf), axis=0, initial=np.inf)
    return lo, np.where(np.isfinite(hi), hi, np.maximum(top, lo)), np.asarray(still, dtype=bool)


def _bisected(bracket, b, f_b):
    """The bracket after trying ``b`` (its midpoint) on the active splits: ``f(b) > b`` moves ``lo`` up, else
    ``hi`` down (bisection on ``f(b) − b``, which changes sign across the bracket)."""
    lo, hi, active = bracket
    up = active & (f_b > b)
    down = active & ~(f_b > b)
    return np.where(up, b, lo), np.where(down, b, hi), active


def _fixed_point_step(b, f_b, b_prev, f_prev, upper):
    """The next iterate of ``b = f(b)`` (per split): the secant step ``b + (f(b) − b)/(1 − f')`` with ``f'`` from
    the last two iterates where that slope is a contraction's (``−3 < f' < 0.95``), else the damped step
    ``(b + f(b))/2``; kept within ``[1, upper]``. The damped step alone converges at ``(1 + f')/2`` a step, which
    for the shipped scenarios' ``f' ≈ 0.8`` did not reach the tolerance in 80 iterations."""
    step = 0.5 * (f_b - b)
    if b_prev is not None:
        db = b - b_prev
        with np.errstate(divide="ignore", invalid="ignore"):
            slope = np.where(np.abs(db) > 1e-12 * np.abs(b), (f_b - f_prev) / db, np.nan)
            secant = (f_b - b) / (1.0 - slope)
        step = np.where(np.isfinite(secant) & (slope > -3.0) & (slope < 0.95), secant, step)
    return np.clip(b + step, 1.0, upper)


def lru_admitted_group_wait(group_size: int, n_rep, admitted, decode_wait, served):
    """Finished members waiting for their group's slowest while the admission's surplus waits for KV room inside
    the engine (``"lru"``, generation pacing; docs/rl-modeling.md §7) [trajectory].

    AReaL's count fills up (``admitted``: ``(η + 1)·B`` less the queue and the batch being trained and pushed), so
    a replica keeps ``N = (admitted − H)/n_rep`` trajectories, more than its KV pool runs at once: its pool is full
    and it completes ``ρ = (X/keep)/n_rep`` trajectories a second whatever ``N``, so each trajectory more on a
    member's replica delays that member ``1/ρ`` (the replica serves the others' turns first). Trajectories arrive
    at a replica and leave after random lives, a population whose count is Poisson (M/G/∞; Kleinrock, *Queueing
    Systems* vol. 1, 1975), variance ``N``: a member's latency spreads ``σ = √N/ρ`` beyond its decode, the members
    independently (placed round robin, each on another replica; the simulator puts a group of the GLM-5 variants
    on 1.3-7.7 distinct replicas of 15 on average, so this is an approximation). By Little's law the finished
    members waiting number ``(X/keep)·(E[max_G L] − E[L])``; with independent normal spreads the group's excess is
    ``z_G·σ`` (Blom's normal score, :func:`~tcocalc.rl.rollouts.blom_z`) and adds to the decode's in quadrature
    (exact for normal parts): ``H² = H_dec² + z_G²·n_rep·(admitted − H)``, the positive root. Where the admission
    leaves no surplus (``admitted − H ≤ served``) no replica is full and ``H`` is the decode's alone; in between it
    is clipped to leave the ``served`` trajectories (Little's law at the latency without waits)."""
    c = blom_z(group_size) ** 2 * np.maximum(n_rep, 1)
    admitted = np.maximum(admitted, 0.0)  # a split whose training and push outlast the admission's share: none
    root = 0.5 * (np.sqrt(c * c + 4.0 * (decode_wait ** 2 + c * admitted)) - c)
    return np.clip(root, decode_wait, np.maximum(decode_wait, admitted - served))


def async_step(scn: Scenario, ws: WorkloadStats, gcap: GeneratorCapacity, r: Rates) -> Flow:
    """Asynchronous step (async with bound η, inflight): the generator streams under the staleness bound."""
    B, keep, eta = r.batch, r.keep, scn.orchestration.max_staleness
    mu_eff = B / (r.t_trainer + (r.t_sync if r.settings.sync_blocks_trainer else 0.0))
    x, w_gen, held_s, lam_paused, caps, lam_g, hit = _async_throughput(scn, ws, gcap, r, mu_eff)
    step = B / x
    served = (x / keep) * w_gen  # Little's law on the trajectories a replica is serving
    # finished members waiting for their group's slowest still count against the bound (§5.4)
    group_wait = (x / keep) * held_s
    counted = served + group_wait
    # Accepted samples wait for the trainer: half a batch when generation paces the run; when the trainer or
    # the staleness bound does, admission fills the buffer up to (eta + 1)·B less what is in flight (§5.4).
    held = ((np.isclose(x, mu_eff) & (mu_eff < lam_paused))
            | (np.isclose(x, caps["staleness"]) & (caps["staleness"] < lam_paused)))
    queued = np.where(held, np.maximum(B / 2.0, (eta + 1) * B - counted), B / 2.0)
    # When generation paces the run, admission still lets (eta + 1)·B accepted-plus-running in: the surplus
    # waits for a KV slot, its sandboxes started, under "pinned" retention in a dispatch queue of at most one
    # generator's slots (as the simulator's), under "lru" inside the engine (below).
    room = np.maximum(0.0, (eta + 1) * B - queued - counted)  # AReaL counts running trajectories one for one
    paced = np.isclose(x, lam_paused) & ~held  # generation itself (not a sandbox limit) paces the run
    if r.resident is not None:
        # "lru": the engine takes every trajectory admitted and the surplus waits inside it for KV room (§7), so
        # admission fills (eta + 1)·B less the queue, the batch being trained and pushed (Little's law:
        # X·(t_trainer + t_sync)) and the finished members waiting, those spread by the waits
        admitted = (eta + 1) * B - queued - x * (r.t_trainer + r.t_sync)
        group_wait = np.where(paced, lru_admitted_group_wait(ws.group_size, r.n_rep, admitted, group_wait, served),
                              group_wait)
        waiting = np.where(paced, np.maximum(0.0, admitted - group_wait - served), 0.0)
    else:
        waiting = np.where(paced, np.minimum(room, np.maximum(r.n_rep, 1) * r.slots), 0.0)
    inflight = served + waiting
    share = np.where(inflight > 0, (served * np.clip((w_gen - r.startup_s) / w_gen, 0.0, 1.0) + waiting)
                     / np.maximum(inflight, 1e-30), 0.0)
    return Flow(trained_per_s=x, step_s=step, trainer_idle=np.clip(1.0 - x / mu_eff, 0.0, 1.0),
                generator_idle=np.clip(1.0 - x / lam_g, 0.0, 1.0),
                # capacity if never starved includes the per-step weight push it must make
                trainer_capacity=mu_eff, generator_capacity=lam_g * np.ones_like(x), in_flight=inflight,
                queued=queued, group_wait=group_wait,
                rollout_latency_s=np.broadcast_to(w_gen, step.shape).astype(float),
                training_share=x * r.t_train / B, generated_tokens_per_s=x * r.generated_per_trained,
                discarded_fraction=np.full_like(step, 1.0 - keep),
                # a sandbox is live once started: its start-up attempts (retries included) are not
                sandbox_share=share, caps=caps, prefix_hit=np.broadcast_to(hit, step.shape).astype(float))
