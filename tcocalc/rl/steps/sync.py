"""The synchronous step model (``colocated``, ``sync``, ``one_step_off``; docs/rl-modeling.md §4.5, §5.1):
generation of the whole batch, its tail included, then training and the weight push (overlapped one step off).

The batch's tail: with ``N`` trajectories on ``S`` slots and ``t(b) = t0 + t1·b``, ``T_dec = K·t0 + t1·W/n_rep``
over the ``K`` decode steps the batch takes: ``E[max R]`` when all fit at once, beyond them the list schedule's
makespan (:func:`~tcocalc.rl.rollouts.list_makespan_tokens`; Graham's midpoint ``W/S + ½·E[max R]`` with
oversampling, whose round ends at its first needed groups), less the tool time the other trajectories' decoding
hides (:func:`_tool_overlap_s`), at least a sandbox limit's round, plus the expected refill round of a batch that
falls short (:func:`_refill_s`); ``T = t_gen + t_train + t_sync``, or ``max(t_gen, t_train) + t_sync`` one step
off."""

from __future__ import annotations

import math

import numpy as np
from scipy.special import gammaln, ndtri

from ...scenario import Scenario
from ..capacity import GeneratorCapacity
from ..phases import WorkloadStats
from ..rates import Flow, Rates, sync_dispatched
from ..rollouts import expected_max, group_quantile_z, list_makespan_tokens, sync_dispatch_groups
from .common import batch_decode_s, batch_flow

__all__ = ["sync_step", "sync_generation", "sync_env_s", "clear_overlap_rows"]


def _longest_tokens(scn: Scenario, ws: WorkloadStats, n_disp: float, keep: float) -> float:
    """Tokens of the batch's last needed trajectory: ``E[max R]`` of ``n_disp`` draws, or, with oversampling,
    the group quantile at which the first needed groups have finished (§4.5, §4.6)."""
    if scn.orchestration.oversampling > 0:
        needed = ws.samples_per_step * (1.0 - ws.oversample_waste) / (keep * ws.group_size)
        alpha_eff = n_disp / ws.group_size / needed - 1.0
        longest = math.exp(ws.mu + ws.sigma * group_quantile_z(alpha_eff, ws.group_size))
        return min(longest, ws.cap) if ws.cap is not None else longest
    return float(expected_max(n_disp, ws.mu, ws.sigma, ws.cap))


def sync_env_s(scn: Scenario, ws: WorkloadStats, n_disp: float, r: Rates):
    """Tool time plus sandbox start-up of a synchronous batch, in waves of ``max_starting`` (§7), plus its tool
    calls' wait for an executor (``r.tool_wait_s``, ``[sandbox] max_executing``, §7.1)."""
    sb = scn.sandbox
    if ws.uses_sandbox and sb.max_starting > 0:
        return ws.tool_s + math.ceil(n_disp / sb.max_starting) * r.startup_s + r.tool_wait_s
    return ws.tool_s + r.startup_s + r.tool_wait_s


_OVERLAP_NODES = (np.arange(48) + 0.5) / 48
"""Quantiles of the response-length distribution at which :func:`_tool_overlap_s` places the other trajectories."""


def _tool_overlap_s(gcap: GeneratorCapacity, ws: WorkloadStats, per_rep, slots, longest):
    """Tool time of a synchronous round's last trajectory that the other trajectories' decoding hides [s] (§4.5).

    ``T_dec = longest·t0 + t1·W`` charges every token's batch cost once and the tool calls on top; but while the
    last trajectory waits ``τ`` on a tool, the ``b_m`` others still decoding run ``b_m·τ/t(b_m)`` tokens whose
    cost ``t1·W`` already counts. Each call hides ``τ·t1·b_m/(t0 + t1·b_m)``. In the fluid clock ``V`` (tokens per
    running sequence) a trajectory of length ``ℓ`` decodes ``ℓ/k`` tokens per turn and a tool call lasts
    ``ν = τ/t(b)`` tokens of ``V``; the last one's ``m``-th call spans ``[m·ℓ_max/k + (m−1)·ν, + ν]``, and
    ``b_m`` is the other trajectories' share of that span spent decoding (their turns at the quantiles
    :data:`_OVERLAP_NODES` of the length distribution; equal lengths call their tools together and hide
    nothing). ``ν`` and ``b`` are solved together (a few fixed-point passes)."""
    per_rep = np.asarray(per_rep, dtype=float)
    k = ws.turns
    if k <= 1 or ws.tool_s <= 0:
        return np.zeros_like(per_rep)
    # each split's figure depends on (others, last) alone, and a sweep's splits share a few generator sizes: the
    # distinct pairs are computed once (row by row the same arithmetic, so the same numbers)
    others = np.maximum(np.minimum(per_rep, slots) - 1.0, 0.0)
    last = np.broadcast_to(np.asarray(longest, dtype=float), per_rep.shape)
    shape = np.broadcast_shapes(others.shape, last.shape)
    # the pairs as complex numbers (others + i·last, both exact): numpy's 1-d unique sorts them as the rows'
    # lexicographic unique does, at a fraction of its cost
    pairs = np.broadcast_to(others, shape).ravel() + 1j * np.broadcast_to(last, shape).ravel()
    unique, back = np.unique(pairs, return_inverse=True)
    # the rows are cached too: sizing asks the same generator sizes of every trainer and every synchronous mode
    key = (gcap.t0, gcap.t1, k, ws.tool_s, ws.mu, ws.sigma, ws.cap)
    rows = list(zip(unique.real.tolist(), unique.imag.tolist(), strict=True))
    known = _OVERLAP_ROWS.get(key, {})
    todo = [i for i, row in enumerate(rows) if row not in known]
    if todo:
        if sum(map(len, _OVERLAP_ROWS.values())) + len(todo) > MAX_OVERLAP_ROWS:
            _OVERLAP_ROWS.clear()
        known = _OVERLAP_ROWS.setdefault(key, known)
        found = _tool_overlap_rows(gcap, ws, unique.real[todo], unique.imag[todo])
        known.update(zip([rows[i] for i in todo], found.tolist(), strict=True))
    return np.array([known[row] for row in rows], dtype=float)[back.ravel()].reshape(shape)


#: Rows of :func:`_tool_overlap_s` kept (per generator step line and workload: the hidden tool time of each
#: (others, longest) pair); emptied when full. :func:`clear_overlap_rows` forgets them.
MAX_OVERLAP_ROWS = 100_000
_OVERLAP_ROWS: dict = {}


def clear_overlap_rows() -> None:
    """Forget the hidden tool time's rows (:func:`_tool_overlap_s`; :func:`~tcocalc.rl.steps.tail.clear_tail_tables`
    calls this)."""
    _OVERLAP_ROWS.clear()


def _tool_overlap_rows(gcap: GeneratorCapacity, ws: WorkloadStats, others, last):
    """:func:`_tool_overlap_s` of distinct rows: ``others`` trajectories decoding beside the last one, ``last``
    tokens long (1-d arrays) [s]."""
    k = ws.turns
    tau = ws.tool_s / (k - 1)
    lengths = np.exp(ws.mu + ws.sigma * ndtri(_OVERLAP_NODES))
    if ws.cap is not None:
        lengths = np.minimum(lengths, ws.cap)
    others, last = others[:, None], last[:, None]                                  # (U, 1)
    calls = np.arange(1, k, dtype=float)                                           # m = 1..k-1
    seg = lengths[None, :, None] / k                                               # (1, N, 1) tokens per turn
    near = np.arange(-1.0, 3.0)[:, None, None, None]                               # (4, 1, 1, 1)
    b = others * np.ones_like(calls)
    for _ in range(4):
        nu = tau / (gcap.t0 + gcap.t1 * b.mean(axis=-1, keepdims=True))            # (U, 1)
        period = seg + nu[:, None, :]                                              # (U, N, 1)
        begin = (calls * last / k + (calls - 1.0) * nu)[:, None, :]                # (U, 1, k-1)
        # turn j decodes over [j·period, j·period + seg]; a call's span [begin, begin + ν] is as long as the gap
        # between two turns, so only the turn whose period holds ``begin`` or the next overlaps it: those two and
        # one either side (rounding) are summed, in turn order: the sum over every turn less its exact zeros, so
        # the same numbers at O(k) instead of O(k²) per node
        turn = np.floor(begin / period)[None] + near                               # (4, U, N, k-1)
        turn = np.where((turn >= 0) & (turn < k), turn, np.nan)                    # past the last turn: none
        start = turn * period[None]
        overlap = np.clip(np.minimum(start + seg, begin + nu[:, None, :]) - np.maximum(start, begin), 0.0, None)
        b = others * np.nansum(overlap, axis=0).mean(axis=-2) / nu                   # (U, k-1)
    return (tau * gcap.t1 * b / (gcap.t0 + gcap.t1 * b)).sum(axis=-1)


def _sync_round_s(scn: Scenario, ws: WorkloadStats, gcap: GeneratorCapacity, r: Rates, n_disp: float, longest):
    """Generation time of one synchronous round of ``n_disp`` trajectories put on the replicas at once, the
    last needed one ``longest`` tokens long (§4.5): its decode, tool time and sandbox start-up, less the tool
    time the other trajectories' decoding hides (:func:`_tool_overlap_s`), plus its tool calls' wait for an
    executor (``r.tool_wait_s``, §7.1); at least the round a sandbox concurrency limit allows
    (:func:`_sandbox_round_s`)."""
    sb = scn.sandbox
    per_rep = n_disp / np.maximum(r.n_rep, 1)
    steps = None  # with oversampling the round ends at its first needed groups: Graham's midpoint stays (§4.5)
    if scn.orchestration.oversampling <= 0:
        steps = list_makespan_tokens(per_rep, r.slots, ws.mu, ws.sigma, ws.cap, replicas=r.n_rep)
    t_dec = batch_decode_s(gcap, per_rep, r.slots, longest, per_rep * r.generated_per_dispatched, steps)
    t_gen = (t_dec + per_rep * r.miss_s + sync_env_s(scn, ws, n_disp, r)
             - _tool_overlap_s(gcap, ws, per_rep, r.slots, longest))
    if ws.uses_sandbox and sb.max_concurrency > 0 and n_disp > sb.max_concurrency:
        t_gen = np.maximum(t_gen, _sandbox_round_s(scn, gcap, r, n_disp, longest))
    if ws.uses_sandbox and sb.max_executing > 0:  # every call of the round on the executors at most (§7.1)
        t_gen = np.maximum(t_gen, n_disp * ws.tool_s / sb.max_executing)
    return t_gen


def _sandbox_round_s(scn: Scenario, gcap: GeneratorCapacity, r: Rates, n_disp: float, longest):
    """A synchronous round of ``n_disp`` trajectories on ``C = max_concurrency`` sandboxes (§7): each holds one
    for its whole life ``W(b) = prefill + R·t(b) + t_env`` (start-up attempts and tool calls included), a freed
    sandbox takes the next, so the round is list-scheduled on ``C`` machines (Graham): ``n_disp·E[W]/C`` plus
    half the last one's ``W``, as :func:`~.common.batch_decode_s` beyond its slots. Only ``C/n_rep`` trajectories
    live on a replica, of which the share ``dec/W`` decodes: the decoding batch ``b = (C/n_rep)·R̄·t(b)/W(b)`` is solved
    by a few fixed-point passes (it was charged as waves of the whole round, each at the full round's batch and
    with the batch's longest tail: 2.7x the simulated step of scenarios/gb300_agentic_96.toml in sync mode)."""
    c = scn.sandbox.max_concurrency
    live = np.minimum(c / np.maximum(r.n_rep, 1), r.slots)
    w_env = np.maximum(r.rollout_latency_s - gcap.prefill_s - r.generated_per_dispatched
                       * (gcap.t0 + gcap.t1 * r.b_op), 0.0)
    b = live
    for _ in range(8):
        dec = gcap.prefill_s + r.generated_per_dispatched * (gcap.t0 + gcap.t1 * b)
        b = np.clip(live * dec / (dec + w_env), 1.0, None)
    tok_s = gcap.t0 + gcap.t1 * b
    w_mean = gcap.prefill_s + r.generated_per_dispatched * tok_s + w_env
    return n_disp * w_mean / c + 0.5 * (gcap.prefill_s + longest * tok_s + w_env)


def _refill_s(scn: Scenario, ws: WorkloadStats, gcap: GeneratorCapacity, r: Rates, n_disp: float):
    """Expected time of the extra round a synchronous batch needs when its over-provisioned groups fall short
    of the batch (DAPO's dynamic sampling generates again for the missing groups, §4.5) [s, per split].

    Each of the ``N₁ = ⌈n_disp/G⌉`` groups dispatched is trained with probability ``p = keep/(1 − waste)``
    (useful and no member lost to a sandbox), so the useful groups are ``U ~ Bin(N₁, p)``; with ``u`` below the
    ``n = ⌈B/G⌉`` needed, a round of ``G·⌈sync_dispatch_groups((n − u)/p, p)⌉`` trajectories goes out once the
    first has finished, and lasts its own tail: :func:`_sync_round_s` with ``E[max R]`` of its draws.
    ``E[extra] = Σ_{u<n} P(U = u)·t_round(u)`` (a second shortfall, ``P²``, is left out)."""
    p = r.keep / max(1.0 - ws.oversample_waste, 1e-12)
    zero = np.zeros(np.shape(r.n_rep))
    if p >= 1.0 - 1e-12:
        return zero
    G = ws.group_size
    n1 = math.ceil(n_disp / G - 1e-9)
    needed = math.ceil(ws.samples_per_step / G - 1e-9)
    u = np.arange(min(needed, n1 + 1))
    log_pmf = (gammaln(n1 + 1) - gammaln(u + 1) - gammaln(n1 - u + 1)
               + u * math.log(max(p, 1e-300)) + (n1 - u) * math.log1p(-p))
    pmf = np.exp(log_pmf)
    by_size: dict = {}  # refill groups -> probability of a shortfall that sends that many
    for k, w in zip(u.tolist(), pmf.tolist(), strict=True):
        if w > 1e-9:
            groups = math.ceil(sync_dispatch_groups((needed - k) / p, p) - 1e-9)
            by_size[groups] = by_size.get(groups, 0.0) + w
    extra = zero
    for groups, share in by_size.items():
        n2 = float(groups * G)
        longest = float(expected_max(n2, ws.mu, ws.sigma, ws.cap))
        extra = extra + share * _sync_round_s(scn, ws, gcap, r, n2, longest)
    return extra


def sync_generation(scn: Scenario, ws: WorkloadStats, gcap: GeneratorCapacity, r: Rates):
    """(t_gen, dispatched trajectories, trajectories per replica, longest tokens, expected refill time) of a
    synchronous batch (§4.5): the first round's generation plus :func:`_refill_s`; ``t_gen`` includes both. A run
    calibration's tail factor (``r.tail``, docs/calibration.md "Across modes") multiplies what the batch takes
    beyond the engine at its steady-state throughput (``B`` over the generator's trainable samples/s): the wait
    for its slowest trajectories; the engine's own speed is the generation factor's."""
    keep = r.keep
    n_disp = sync_dispatched(ws, keep)
    per_rep = n_disp / np.maximum(r.n_rep, 1)
    longest = _longest_tokens(scn, ws, n_disp, keep) * np.ones_like(per_rep)
    refill = _refill_s(scn, ws, gcap, r, n_disp)
    t_gen = _sync_round_s(scn, ws, gcap, r, n_disp, longest) + refill
    if r.tail != 1.0:  # a run calibration's tail factor: on what the batch takes beyond its engine's throughput
        engine = r.batch / r.generator_samples_per_s
        t_gen = engine + r.tail * np.maximum(t_gen - engine, 0.0) + np.minimum(t_gen - engine, 0.0)
    return t_gen, n_disp, per_rep, longest, refill


def sync_step(scn: Scenario, ws: WorkloadStats, gcap: GeneratorCapacity, r: Rates) -> Flow:
    """Synchronous step (colocated, sync, one_step_off): generation of the whole batch, its tail included."""
    t_gen, n_disp, _, _, _ = sync_generation(scn, ws, gcap, r)
    if scn.orchestration.traits.fixed_lag:  # the generator runs a step ahead: generation overlaps training
        step = np.maximum(t_gen, r.t_trainer) + r.t_sync
    else:
        step = t_gen + r.t_trainer + r.t_sync
    # the trainer is not waiting for data while it pushes weights or switches the pool (as the simulator counts)
    pushes = scn.orchestration.traits.push_blocks_trainer or r.settings.sync_blocks_trainer
    busy = r.t_trainer + (r.t_sync if pushes else 0.0)
    return batch_flow(ws, gcap, r, step, t_gen, n_disp, busy)
