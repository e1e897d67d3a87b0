"""Pool rates and the steady-state flow of one RL step, one step model per orchestration mode.

Stage 1, :func:`pool_rates`: what each pool can do on its own — the trainer's samples/s if never starved
(docs/rl-modeling.md §3.2), the generator's replicas and trainable samples/s at its operating batch
(§4.4), the weight push ``t_sync`` (§3.3) and the sandbox start-up per attempt (§7).

Stage 2, a step model from :data:`STEP_MODELS` keyed by ``orchestration.mode`` (§5.1):

* :func:`sync_step` (``colocated``, ``sync``, ``one_step_off``): the batch's tail (§4.5) — with ``N``
  trajectories on ``S`` slots and ``t(b) = t0 + t1·b``, ``T_dec = E[max R]·t0 + t1·W/n_rep`` when all fit at
  once and ``W/S·t(b_max) + ½·E[max R]·t0`` beyond (Graham's list scheduling); ``T = t_gen + t_train + t_sync``,
  or ``max(t_gen, t_train) + t_sync`` one step off;
* :func:`async_step` (``async``, ``inflight``): ``X = min(λ_g·(1 − t_sync·X/B), μ_eff, keep·((η+1)·B − Q)/W_gen,
  k·B/(T_end + t_train + t_sync))`` (AReaL's admission rule through Little's law and the trainer's gate on
  the last admission, ``k = ⌊η⌋ + 1``, one more with partial rollout, §5.4), solved as a fixed point over the
  decoding batch and ``X``, since a throttled generator finishes each trajectory sooner;
  with the trainer streaming mini-batches and partial rollout (verl fully-async, §5.6) the bound only limits
  admission and the last two terms give way to the window cap ``(1 + ⌊η⌋)·B/(t_sync + T_fill + t_train/g)``
  (:func:`streamed_window_fill_s`);
* :func:`periodic_step` (``periodic``, arXiv 2511.18871, §5.5): the synchronous batch, with the trainer
  consuming groups as they finish: ``T = max_t [t + t_train·(1 − F(t⁻))] + t_sync``.

A run calibration's fixed per-step cost ``t_fixed`` (:attr:`Rates.t_fixed`, docs/calibration.md) adds to the
trainer loop's time per step wherever ``t_train`` stands for it (``t_train + t_fixed``: the synchronous step, the
trainer's gate and capacity ``μ_eff``, the periodic step), never to the training share behind MFU.

Everything broadcasts over candidate splits (arrays of trainer and generator GPU counts).
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass, field

import numpy as np
from scipy.special import gammaln, ndtr, ndtri

from ..scenario import Scenario
from .capacity import GeneratorCapacity, trainer_capacity
from .cluster import Cluster
from .kv_retention import TurnShape, lru_residency, miss_tokens
from .phases import WorkloadStats
from .rollouts import (
    capped_moment,
    expected_max,
    group_quantile_z,
    lognormal_partial_moment,
    refill_chain_window_tokens,
    staleness_throughput_cap,
    sync_dispatch_groups,
)
from .settings import Settings
from .switching import checkpoint_tensors, colocated_switch_seconds, per_tensor_seconds
from .weight_sync import checkpoint_save_seconds, weight_sync_seconds

__all__ = ["Rates", "Flow", "pool_rates", "lru_retention", "turn_shape", "offered_per_replica", "sync_step",
           "async_step", "periodic_step", "STEP_MODELS", "sandbox_attempts", "streamed", "interruptible",
           "streamed_window_fill_s"]


@dataclass(frozen=True)
class Rates:
    """What each pool delivers on its own, per candidate split (arrays) [units in the comments]."""

    n_t: np.ndarray                 # trainer GPUs
    n_g: np.ndarray                 # generator GPUs
    n_rep: np.ndarray               # generator replicas (serving instances)
    feasible: np.ndarray            # both sides hold the model
    trainer_samples_per_s: np.ndarray  # mu_t: trainer capacity if never starved [sample/s] (1.0 where infeasible)
    mfu_busy: np.ndarray            # trainer MFU while training [1]
    t_sync: np.ndarray              # weight push per step [s]; colocated: the switch and in-process refit
    t_train: np.ndarray             # training time of one batch B / mu_t [s]
    generator_samples_per_s: np.ndarray  # lam_g: trainable samples/s at the operating batch [sample/s]
    slots: np.ndarray               # running trajectories per replica at most: KV, max_num_seqs, framework cap
    b_op: np.ndarray                # decoding trajectories per replica in steady state (at most slots)
    batch: float                    # B [sample/step]
    keep: float                     # trained / dispatched trajectories [1]
    generated_per_dispatched: float  # model tokens per dispatched trajectory [token]
    generated_per_trained: float    # model tokens generated per trained trajectory, waste included [token]
    startup_s: float                # sandbox start-up per trajectory, retries included [s]
    rollout_latency_s: np.ndarray | float  # W_gen of one trajectory on an unthrottled instance, retries included [s]
    t_fixed: np.ndarray | float = 0.0  # the trainer loop's fixed per-step cost (§5.7, with a calibration's) [s]
    resident: np.ndarray | None = None  # trajectories in flight per replica at most (None: slots; §4.12)
    miss_s: np.ndarray | float = 0.0    # a trajectory's prefill again after evicted histories, per replica [s]
    hit: np.ndarray | float = 1.0       # share of returns from a tool whose history is still cached [1]
    settings: Settings | None = None    # the framework settings they were derived with (``cluster.settings``)
    tail: float = 1.0                   # a run calibration's factor on a synchronous batch's tail [1]

    @property
    def t_trainer(self) -> np.ndarray:
        """The trainer loop's time per step: the batch's training plus the fixed per-step cost [s]."""
        return self.t_train + self.t_fixed


@dataclass(frozen=True)
class Flow:
    """Steady state of one step per candidate split (arrays broadcast over candidates)."""

    trained_per_s: np.ndarray       # X [sample/s]
    step_s: np.ndarray              # T_step [s]
    trainer_idle: np.ndarray        # [1]
    generator_idle: np.ndarray      # [1]
    trainer_capacity: np.ndarray    # mu_eff [sample/s]
    generator_capacity: np.ndarray  # trainable samples/s if never blocked [sample/s]
    in_flight: np.ndarray           # C: dispatched trajectories not yet finished [trajectory]
    queued: np.ndarray              # Q: accepted samples waiting for the trainer [sample]
    group_wait: np.ndarray          # finished trajectories waiting for their group's slowest member [trajectory]
    rollout_latency_s: np.ndarray   # W_gen [s]
    training_share: np.ndarray      # share of wall time the trainer computes [1]
    generated_tokens_per_s: np.ndarray  # model tokens generated per second, waste included [token/s]
    discarded_fraction: np.ndarray  # dispatched rollouts not trained [1]
    sandbox_share: np.ndarray       # share of its time in flight a trajectory holds a started sandbox [1]
    caps: dict = field(default_factory=dict)  # streaming modes: each limit on X by name [sample/s]; X is their min
    prefix_hit: np.ndarray | float = 1.0  # returns from a tool whose history is still cached (§4.12) [1]


def sandbox_attempts(scn: Scenario, ws: WorkloadStats) -> float:
    """Expected start attempts per sandbox, ``1/(1 − p_fail)`` (§7; retries until one starts)."""
    return 1.0 / (1.0 - scn.sandbox.failure_rate) if ws.uses_sandbox else 1.0


def pool_rates(cluster: Cluster, scn: Scenario, ws: WorkloadStats, gcap: GeneratorCapacity, n_t, n_g) -> Rates:
    """Each pool's rate for splits ``(n_t[i], n_g[i])``; a side that cannot hold the model is flagged in
    ``feasible`` (its rate is a NaN-free placeholder)."""
    n_t = np.asarray(n_t, dtype=int)
    n_g = np.asarray(n_g, dtype=int)
    keep = ws.keep_fraction
    gen_per_dispatched = ws.generated_per_dispatched
    tr = trainer_capacity(scn, cluster, ws, n_t)
    mu_t, mfu_busy = tr.samples_per_s, tr.mfu_busy
    n_rep = gcap.replicas(n_g)  # disaggregated: the decode replicas its prefill pool keeps fed (§4.9)
    feasible = (mu_t > 0) & (n_rep > 0)
    mu_safe = np.where(feasible, mu_t, 1.0)
    st = cluster.settings
    rl_cal, run = cluster.rl_cal, cluster.run
    # an engine that loads weights tensor by tensor pays a fixed time per checkpoint tensor (§3.5)
    per_tensor = (0.0 if st.bucketed_weight_load else
                  checkpoint_tensors(cluster.model) * per_tensor_seconds(rl_cal) * run.weight_sync)
    if scn.orchestration.traits.shared_pool:  # the shared pool switches between trainer and engine every step
        t_sync = colocated_switch_seconds(cluster.generator, gcap.weights_per_gpu_bytes, tr.state_bytes,
                                          offload=st.colocated_offload, calibration=rl_cal,
                                          switching=run.switching, refit=run.weight_sync) + per_tensor
    else:
        t_sync = weight_sync_seconds(cluster.model.params_total, cluster.trainer, cluster.generator, n_t, n_g,
                                     instance_gpus=gcap.instance_gpus, transport=st.weight_sync,
                                     calibration=rl_cal, store=st.storage) * run.weight_sync + per_tensor
    # the framework's cap on trajectories in flight spreads over the replicas (AReaL max concurrent rollouts)
    cap = scn.orchestration.max_rollouts_in_flight
    slots = np.full(n_rep.shape, gcap.b_max) if cap is None else np.clip(cap / np.maximum(n_rep, 1), 1.0, gcap.b_max)
    b_op = np.minimum(gcap.b_op, slots)
    step_op = gcap.t0 + gcap.t1 * b_op
    lam_raw = np.maximum(n_rep, 1) * b_op / step_op / gen_per_dispatched   # dispatched trajectories/s
    startup = ws.startup_s * sandbox_attempts(scn, ws)
    latency = gcap.latency_s + (startup - ws.startup_s)
    resident, miss_s, hit = None, 0.0, 1.0
    if lru_retention(scn, ws, st):  # a waiting trajectory frees its slot; an evicted history is prefilled again
        # the framework's cap bounds what is in flight, not what runs: the engine runs up to its KV slots
        slots = np.full(n_rep.shape, gcap.b_max)
        # the histories cached follow what is really in flight (sandboxes included); the capacity, what the
        # generator does when fed as the framework allows (a sandbox limit is a cap of its own, §7)
        live = offered_per_replica(scn, ws, n_rep)
        resident = offered_per_replica(scn, ws, n_rep, sandboxes=False)
        shape = turn_shape(ws, gcap)
        hit = lru_residency(shape, live).hit
        fed = lru_residency(shape, resident, hit=hit)
        b_op, miss_s = fed.decoding, fed.miss_s
        # at the operating batch, as the step models read it (their w_env subtracts the decode at b_op)
        latency = latency + ws.generated_per_kept * gcap.t1 * (b_op - gcap.b_op) + miss_s
        step_op = gcap.t0 + gcap.t1 * b_op
        lam_raw = np.maximum(n_rep, 1) / (gen_per_dispatched * step_op / b_op + miss_s)
    return Rates(n_t=n_t, n_g=n_g, n_rep=n_rep, feasible=feasible, trainer_samples_per_s=mu_safe, mfu_busy=mfu_busy,
                 t_sync=t_sync, t_train=float(ws.samples_per_step) / mu_safe, generator_samples_per_s=lam_raw * keep,
                 slots=slots, b_op=b_op,
                 batch=float(ws.samples_per_step), keep=keep, generated_per_dispatched=gen_per_dispatched,
                 generated_per_trained=ws.generated_per_trained, startup_s=startup,
                 rollout_latency_s=latency,
                 t_fixed=fixed_step_seconds(scn, cluster, st, ws, n_t) + run.step_overhead_s,
                 resident=resident, miss_s=miss_s, hit=hit, settings=st, tail=run.tail)


def lru_retention(scn: Scenario, ws: WorkloadStats, st) -> bool:
    """A multi-turn phase whose engine keeps waiting histories in an evictable prefix cache (§4.12)."""
    return st.kv_retention == "lru" and scn.workload.prefix_caching and ws.turns > 1 and ws.tool_s > 0


def turn_shape(ws: WorkloadStats, gcap: GeneratorCapacity) -> TurnShape:
    """The phase's :class:`~tcocalc.rl.kv_retention.TurnShape` on ``gcap``'s instances (their KV slots)."""
    growth = ws.response_mean / ws.turns + ws.observation_tokens
    # disaggregated: a missed history is prefilled again on a prefill instance, its time charged to the replica
    # (the pool itself is sized for the cached prefill: docs/rl-modeling.md §4.12 names the approximation)
    pool = gcap.prefill_pool
    rate = gcap.prefill_tokens_per_s if pool is None else pool.tokens_per_s_per_gpu * pool.instance_gpus
    return TurnShape(slots=gcap.b_max, context=ws.context_tokens, turns=ws.turns,
                     tool_s=ws.tool_s / (ws.turns - 1), generated=ws.generated_per_kept,
                     cached=ws.prefill_tokens, missed=miss_tokens(ws.prompt_tokens, growth, ws.turns),
                     t0=gcap.t0, t1=gcap.t1, prefill_tokens_per_s=rate)


def offered_per_replica(scn: Scenario, ws: WorkloadStats, n_rep, sandboxes: bool = True) -> np.ndarray:
    """Trajectories the framework keeps in flight per replica (§4.12): a synchronous batch's dispatch
    (:func:`_sync_dispatched`), or the staleness bound's admission ``(η + 1)·B`` of a streaming mode; at most
    ``[orchestration] max_rollouts_in_flight`` and (``sandboxes``), for sandboxed trajectories, ``[sandbox]
    max_concurrency``."""
    o, sb = scn.orchestration, scn.sandbox
    if o.traits.streaming:
        total = (o.max_staleness + 1.0) * ws.samples_per_step
    else:
        total = _sync_dispatched(ws, ws.keep_fraction)
    if o.max_rollouts_in_flight is not None:
        total = min(total, float(o.max_rollouts_in_flight))
    if sandboxes and ws.uses_sandbox and sb.max_concurrency > 0:
        total = min(total, float(sb.max_concurrency))
    return total / np.maximum(np.asarray(n_rep, dtype=float), 1.0)


def fixed_step_seconds(scn: Scenario, cluster: Cluster, st, ws: WorkloadStats, n_t):
    """The trainer loop's fixed per-step cost ``t_fixed`` [s] (docs/rl-modeling.md §5.7): the dispatched samples
    ``B/keep`` at the controller's ``dispatch_s_per_sample`` (the preset's), a checkpoint's save time over its
    interval (``[orchestration] checkpoint_every_steps``: ``checkpoint_bytes_per_param`` bytes per parameter
    written at the disk-sync rates, :func:`~tcocalc.rl.weight_sync.checkpoint_save_seconds`), and
    ``[orchestration] step_fixed_s``. A float, or an array over the trainer counts ``n_t`` with a checkpoint."""
    o = scn.orchestration
    fixed = st.dispatch_s_per_sample * ws.samples_per_step / ws.keep_fraction + o.step_fixed_s
    if o.checkpoint_every_steps is None:
        return fixed
    nbytes = cluster.rl_cal["checkpoint_bytes_per_param"] * cluster.model.params_total
    return fixed + checkpoint_save_seconds(nbytes, n_t, st.storage, cluster.rl_cal) / o.checkpoint_every_steps


def _sync_dispatched(ws: WorkloadStats, keep: float) -> float:
    """Trajectories a synchronous step dispatches (over-provisioned groups, §4.6)."""
    return ws.group_size * sync_dispatch_groups(ws.samples_per_step / (keep * ws.group_size), keep)


def _longest_tokens(scn: Scenario, ws: WorkloadStats, n_disp: float, keep: float) -> float:
    """Tokens of the batch's last needed trajectory: ``E[max R]`` of ``n_disp`` draws, or, with oversampling,
    the group quantile at which the first needed groups have finished (§4.5, §4.6)."""
    if scn.orchestration.oversampling > 0:
        needed = ws.samples_per_step * (1.0 - ws.oversample_waste) / (keep * ws.group_size)
        alpha_eff = n_disp / ws.group_size / needed - 1.0
        longest = math.exp(ws.mu + ws.sigma * group_quantile_z(alpha_eff, ws.group_size))
        return min(longest, ws.cap) if ws.cap is not None else longest
    return float(expected_max(n_disp, ws.mu, ws.sigma, ws.cap))


def _sync_env_s(scn: Scenario, ws: WorkloadStats, n_disp: float, startup: float) -> float:
    """Tool time plus sandbox start-up of a synchronous batch, in waves of ``max_starting`` (§7)."""
    sb = scn.sandbox
    if ws.uses_sandbox and sb.max_starting > 0:
        return ws.tool_s + math.ceil(n_disp / sb.max_starting) * startup
    return ws.tool_s + startup


def _batch_decode_s(gcap: GeneratorCapacity, per_rep, slots, longest, work):
    """Decode time of ``per_rep`` trajectories put on a replica at once until the longest has ``longest`` tokens,
    ``work`` tokens decoded in all (§4.5): ``longest·t0 + t1·work`` when all fit the ``slots`` (every running
    sequence advances once per step), ``work/S·t(S) + ½·longest·t0`` beyond (Graham's list scheduling)."""
    return np.where(per_rep <= slots, longest * gcap.t0 + gcap.t1 * work,
                    work * (gcap.t0 + gcap.t1 * slots) / slots + 0.5 * longest * gcap.t0)


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
    ``E[max R]``). Decoding to ``τ`` takes :func:`_batch_decode_s` with every trajectory's tokens up to ``τ``,
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
    return gcap.prefill_s + np.maximum(w_env, 0.0) + _batch_decode_s(gcap, per_rep, r.slots, tau, per_rep * decoded)


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
    pairs = np.stack([np.broadcast_to(others, shape).ravel(), np.broadcast_to(last, shape).ravel()], axis=-1)
    unique, back = np.unique(pairs, axis=0, return_inverse=True)
    # the rows are cached too: sizing asks the same generator sizes of every trainer and every synchronous mode
    key = (gcap.t0, gcap.t1, k, ws.tool_s, ws.mu, ws.sigma, ws.cap)
    rows = [(float(o), float(v)) for o, v in unique]
    known = _OVERLAP_ROWS.get(key, {})
    todo = [i for i, row in enumerate(rows) if row not in known]
    if todo:
        if sum(map(len, _OVERLAP_ROWS.values())) + len(todo) > MAX_OVERLAP_ROWS:
            _OVERLAP_ROWS.clear()
        known = _OVERLAP_ROWS.setdefault(key, known)
        found = _tool_overlap_rows(gcap, ws, unique[todo, 0], unique[todo, 1])
        known.update(zip([rows[i] for i in todo], found.tolist(), strict=True))
    return np.array([known[row] for row in rows], dtype=float)[back.ravel()].reshape(shape)


#: Rows of :func:`_tool_overlap_s` kept (per generator step line and workload: the hidden tool time of each
#: (others, longest) pair); emptied when full. :func:`clear_tail_tables` forgets them.
MAX_OVERLAP_ROWS = 100_000
_OVERLAP_ROWS: dict = {}


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
    time the other trajectories' decoding hides (:func:`_tool_overlap_s`); at least the round a sandbox
    concurrency limit allows (:func:`_sandbox_round_s`)."""
    sb = scn.sandbox
    per_rep = n_disp / np.maximum(r.n_rep, 1)
    t_dec = _batch_decode_s(gcap, per_rep, r.slots, longest, per_rep * r.generated_per_dispatched)
    t_gen = (t_dec + per_rep * r.miss_s + _sync_env_s(scn, ws, n_disp, r.startup_s)
             - _tool_overlap_s(gcap, ws, per_rep, r.slots, longest))
    if ws.uses_sandbox and sb.max_concurrency > 0 and n_disp > sb.max_concurrency:
        t_gen = np.maximum(t_gen, _sandbox_round_s(scn, gcap, r, n_disp, longest))
    return t_gen


def _sandbox_round_s(scn: Scenario, gcap: GeneratorCapacity, r: Rates, n_disp: float, longest):
    """A synchronous round of ``n_disp`` trajectories on ``C = max_concurrency`` sandboxes (§7): each holds one
    for its whole life ``W(b) = prefill + R·t(b) + t_env`` (start-up attempts and tool calls included), a freed
    sandbox takes the next, so the round is list-scheduled on ``C`` machines (Graham): ``n_disp·E[W]/C`` plus
    half the last one's ``W``, as :func:`_batch_decode_s` beyond its slots. Only ``C/n_rep`` trajectories live on
    a replica, of which the share ``dec/W`` decodes: the decoding batch ``b = (C/n_rep)·R̄·t(b)/W(b)`` is solved
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


def _sync_generation(scn: Scenario, ws: WorkloadStats, gcap: GeneratorCapacity, r: Rates):
    """(t_gen, dispatched trajectories, trajectories per replica, longest tokens, expected refill time) of a
    synchronous batch (§4.5): the first round's generation plus :func:`_refill_s`; ``t_gen`` includes both. A run
    calibration's tail factor (``r.tail``, docs/calibration.md "Across modes") multiplies what the batch takes
    beyond the engine at its steady-state throughput (``B`` over the generator's trainable samples/s): the wait
    for its slowest trajectories; the engine's own speed is the generation factor's."""
    keep = r.keep
    n_disp = _sync_dispatched(ws, keep)
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
    B, keep = r.batch, r.keep
    t_gen, n_disp, _, _, _ = _sync_generation(scn, ws, gcap, r)
    if scn.orchestration.traits.fixed_lag:  # the generator runs a step ahead: generation overlaps training
        step = np.maximum(t_gen, r.t_trainer) + r.t_sync
    else:
        step = t_gen + r.t_trainer + r.t_sync
    x = B / step
    # a sandbox is live from a successful start to the trajectory's end: its latency less the start-up
    hold = np.minimum(1.0, (gcap.latency_s - ws.startup_s) / step)
    # the trainer is not waiting for data while it pushes weights or switches the pool (as the simulator counts)
    pushes = scn.orchestration.traits.push_blocks_trainer or r.settings.sync_blocks_trainer
    busy = r.t_trainer + (r.t_sync if pushes else 0.0)
    return Flow(trained_per_s=x, step_s=step, trainer_idle=np.clip(1.0 - busy / step, 0.0, 1.0),
                generator_idle=np.clip(1.0 - t_gen / step, 0.0, 1.0), trainer_capacity=r.trainer_samples_per_s,
                generator_capacity=B / t_gen, in_flight=np.full_like(step, n_disp), queued=np.zeros_like(step),
                group_wait=np.zeros_like(step),
                rollout_latency_s=np.broadcast_to(r.rollout_latency_s, step.shape).astype(float),
                training_share=x * r.t_train / B, generated_tokens_per_s=x * r.generated_per_trained,
                discarded_fraction=np.full_like(step, 1.0 - keep), sandbox_share=hold,
                prefix_hit=np.broadcast_to(r.hit, step.shape).astype(float))


def interruptible(scn: Scenario) -> bool:
    """Streaming generation whose weight updates interrupt the running trajectories (partial rollout without
    in-flight updates, AReaL's interruptible generation): each update discards their KV, which is prefilled
    again under the new weights (§4.6)."""
    t = scn.orchestration.traits
    return t.streaming and not t.in_flight_updates and scn.orchestration.partial_rollout


def streamed(scn: Scenario, st: Settings) -> bool:
    """An async step whose trainer streams its mini-batches with partial rollout (§5.6); ``st`` the scenario's
    settings (``cluster.settings``)."""
    return (interruptible(scn) and scn.trainer.minibatches_per_step > 1 and st.stream_minibatches)


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


@functools.lru_cache(maxsize=256)
def _burst_tail_table(mu: float, sigma: float, n_burst: float, n_refill: float, limit: float | None):
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


def _refill_chain_table(ws: WorkloadStats, keep: float, limit: float | None, cut: bool):
    """:func:`~tcocalc.rl.rollouts.refill_chain_window_tokens` of the phase's workload (one batch of ``B/G`` group
    slots, each group kept with probability ``keep/(1 − waste)``) tabulated over the per-attempt offset ``c``
    (0, and 10^-3 to 10^3 times the mean response, 4 points a decade; read-only arrays). ``cut``: the bound carries
    at least one group's samples into the next version (``η·B ≥ G``), so the last chain may be cut."""
    p_group = keep / max(1.0 - ws.oversample_waste, 1e-12)
    return _refill_chain_rows(ws.mu, ws.sigma, ws.group_size, min(p_group, 1.0),
                              ws.samples_per_step / ws.group_size, limit, cut)


def _chain_window_s(table, gcap: GeneratorCapacity, r: Rates, w_env):
    """The admission window of a bound under one step [s, per split] (:func:`_refill_chain_table`): as a synchronous
    batch's decode (:func:`_batch_decode_s`), the longest chain's tokens at ``t0`` (each attempt's prefill and
    environment time ``c`` as ``c/t0`` tokens) plus ``t1`` times the tokens a replica decodes in the window, every
    dispatched trajectory's ``B/keep·R̄/n_rep``: the batch drains as chains end, so the longest runs mostly at
    the small batch (charging it the step's mean batch, or spreading the refills over the whole step, ran away:
    26,306 s for the 2,500 s the simulator counts for scenarios/semianalysis_qwen3_235b_h200.toml at a bound of 0.5
    with dynamic sampling)."""
    rep = np.maximum(r.n_rep, 1)
    longest = _chain_window(table, (gcap.prefill_s + w_env) / gcap.t0)
    per_rep = r.batch / rep
    return _batch_decode_s(gcap, per_rep, r.slots, longest, per_rep / r.keep * r.generated_per_dispatched)


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
    """Forget the tabulated last-admission clocks (:func:`_burst_tail_table`, :func:`_refill_chain_rows`) and the
    hidden tool time's rows (:func:`_tool_overlap_s`)."""
    _burst_tail_table.cache_clear()
    _refill_chain_rows.cache_clear()
    _OVERLAP_ROWS.clear()


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


def _async_throughput(scn, ws, gcap, r: Rates, mu_eff):
    """The fixed point of :func:`async_step`: (X, W_gen, W_hold, generator rate with pauses, caps, generator rate,
    prefix-cache hit share) per split, ``W_hold`` the time a trajectory holds its admission slot (its group's
    slowest member, §5.4). Under ``"lru"`` KV retention (§4.12) the hit share follows the trajectories the fixed
    point keeps in flight, and with it the misses' re-prefill in the generator's rate and in ``W``."""
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
    # the k − 1 pushes between. It finishes at E[Y] decode tokens (_burst_tail_tokens: B admitted when the version
    # goes live, the dropped groups' refills spread over the step).
    k_steps = math.floor(eta) + 1.0 + (1.0 if orch.partial_rollout else 0.0)
    spread_grid, tail_grid = _burst_tail_table(ws.mu, ws.sigma, B, B * (1.0 / keep - 1.0), limit)
    # under one step (k = 1) nothing is admitted while the trainer trains: the window is a chain of refills
    chain = (_refill_chain_table(ws, keep, limit, eta * B >= ws.group_size)
             if k_steps == 1.0 and keep < 1.0 - 1e-12 else None)
    if chain is not None:
        chain_s = _chain_window_s(chain, gcap, r, w_env)
    b = np.array(r.b_op, dtype=float)
    x = np.minimum(lam_paused, mu_eff) * np.ones_like(b)
    pause_s = r.t_sync
    caps: dict = {}
    # a trainer that streams mini-batches with partial rollout never waits for running trajectories: the step is
    # held only by its window (§5.6), not by the in-flight count or the tail
    window_cap = None
    if streamed(scn, r.settings):
        window_cap = B * (1.0 + math.floor(eta)) / (r.t_sync + streamed_window_fill_s(scn, ws, gcap, r)
                                                    + r.t_train / scn.trainer.minibatches_per_step
                                                    + r.t_fixed)
    b_prev = f_prev = None
    for _ in range(80):
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
        if (np.all(np.abs(b_new - b) <= 1e-8 + 1e-10 * np.abs(b))  # np.allclose(rtol=1e-10), without its overhead
                and np.all(np.abs(x - x_prev) <= 1e-10 * np.abs(x))):
            break
        b, b_prev, f_prev = _fixed_point_step(b, b_new, b_prev, f_prev, b_top), b, b_new
    return x, w, w_hold, lam_paused, caps, lam_g, hit


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

    def in_flight(self, paced, little, hit):
        """(trajectories in flight per replica, their hit share): the fill where generation paces, else Little's."""
        resident = np.where(paced, self.n, little)
        if np.all(paced):
            return resident, self.hit
        return resident, np.where(paced, self.hit, lru_residency(self.shape, resident, passes=30, start=hit).hit)


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


def async_step(scn: Scenario, ws: WorkloadStats, gcap: GeneratorCapacity, r: Rates) -> Flow:
    """Asynchronous step (async with bound η, inflight): the generator streams under the staleness bound."""
    B, keep, eta = r.batch, r.keep, scn.orchestration.max_staleness
    mu_eff = B / (r.t_trainer + (r.t_sync if r.settings.sync_blocks_trainer else 0.0))
    x, w_gen, w_hold, lam_paused, caps, lam_g, hit = _async_throughput(scn, ws, gcap, r, mu_eff)
    step = B / x
    served = (x / keep) * w_gen  # Little's law on the trajectories a replica is serving
    # finished members waiting for their group's slowest still count against the bound (§5.4)
    group_wait = (x / keep) * (w_hold - w_gen)
    counted = served + group_wait
    # Accepted samples wait for the trainer: half a batch when generation paces the run; when the trainer or
    # the staleness bound does, admission fills the buffer up to (eta + 1)·B less what is in flight (§5.4).
    held = ((np.isclose(x, mu_eff) & (mu_eff < lam_paused))
            | (np.isclose(x, caps["staleness"]) & (caps["staleness"] < lam_paused)))
    queued = np.where(held, np.maximum(B / 2.0, (eta + 1) * B - counted), B / 2.0)
    # When generation paces the run, admission still lets (eta + 1)·B accepted-plus-running in: the surplus
    # waits for a KV slot, in a dispatch queue of at most one generator's slots (as the simulator's), its
    # sandboxes started.
    room = np.maximum(0.0, (eta + 1) * B - queued - counted)  # AReaL counts running trajectories one for one
    paced = np.isclose(x, lam_paused) & ~held  # generation itself (not a sandbox limit) paces the run
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


def _periodic_train_end(scn: Scenario, ws: WorkloadStats, gcap: GeneratorCapacity, r: Rates, t_gen, per_rep,
                        longest):
    """When the trainer finishes a batch it trains as groups arrive (fluid queue, §5.5).

    A trajectory of ``R`` response tokens finishes at ``τ(R) = t_env + R·t0 + t1·W·E[min(L, R)]/E[L]`` when the
    replica holds its whole share at once (every sequence decodes once per step, so the decoding batch at
    token ``k`` is the number still running; ``W`` the replica's tokens), and at
    ``τ(R) = t_bulk·E[min(L, R)]/E[L] + ½·R·t0`` beyond ``b_max`` (Graham's list scheduling), both equal to
    ``t_gen`` at the batch's longest. A group is accepted when its last member finishes; with oversampling
    (``N`` dispatched for ``B/keep`` needed, §4.6) the batch's share in by then is ``F(R) = min(1,
    Φ(z)^G·N·keep/B)``, without it ``Φ(z)^G``.
    The trainer (capacity ``B/t_train``) ends at ``max_t [t + t_train·(1 − F(t⁻))]`` (a fluid single server
    fed by an arrival curve), at least ``t_gen + t_train·G/B`` (the last group's training)."""
    mu, sigma, G = ws.mu, ws.sigma, ws.group_size
    work = per_rep * r.generated_per_dispatched
    all_at_once = per_rep <= r.slots

    def decode_to(length: float, share: float):
        return np.where(all_at_once, length * gcap.t0 + gcap.t1 * work * share,
                        work * (gcap.t0 + gcap.t1 * r.slots) / r.slots * share + 0.5 * length * gcap.t0)

    n_disp = _sync_dispatched(ws, r.keep)
    env = _sync_env_s(scn, ws, n_disp, r.startup_s)
    # oversampling: the batch is cut at the first B accepted; otherwise it needs about every group dispatched
    # (the over-provisioning only covers the variance of the useful share)
    supply = n_disp * r.keep / r.batch if scn.orchestration.oversampling > 0 else 1.0
    top = float(longest[0])
    waves = t_gen / (decode_to(top, 1.0) + env)    # sandbox-concurrency waves stretch every time alike
    mean = capped_moment(1, mu, sigma, ws.cap)
    z_top = (math.log(max(top, 1.0)) - mu) / max(sigma, 1e-9)
    end = t_gen + r.t_train * G / r.batch
    f_prev = 0.0
    for z in np.linspace(min(-4.0, z_top - 1.0), z_top, 96):
        length = math.exp(mu + sigma * z)
        e_min = lognormal_partial_moment(1, mu, sigma, length) + length * (1.0 - float(ndtr(z)))
        tau = np.minimum((decode_to(length, min(e_min / mean, 1.0)) + env) * waves, t_gen)
        end = np.maximum(end, tau + r.t_train * (1.0 - f_prev))
        f_prev = min(1.0, float(ndtr(z)) ** G * supply)
    return end


def periodic_step(scn: Scenario, ws: WorkloadStats, gcap: GeneratorCapacity, r: Rates) -> Flow:
    """Periodic asynchrony (arXiv 2511.18871; docs/rl-modeling.md §5.5): weights sync once at the start of
    each iteration, the whole batch is generated by that policy (trajectory staleness 0), and the trainer
    accumulates gradients over finished groups as they stream in, so training overlaps generation.

    ``T = T_end + t_fixed + t_sync`` with ``T_end`` from :func:`_periodic_train_end` (``t_fixed``: the trainer
    loop's fixed per-step cost, :attr:`Rates.t_fixed`); since every ``τ ≤ t_gen`` and the
    remaining training ``≤ t_train``, ``max(t_gen, t_train) < T_end ≤ t_gen + t_train``: between one step
    off and synchronous."""
    B, keep = r.batch, r.keep
    t_gen, n_disp, per_rep, longest, refill = _sync_generation(scn, ws, gcap, r)
    # a batch that falls short waits for its extra round's groups, which the trainer then takes (§4.5)
    step = _periodic_train_end(scn, ws, gcap, r, t_gen - refill, per_rep, longest) + refill + r.t_fixed + r.t_sync
    x = B / step
    hold = np.minimum(1.0, (gcap.latency_s - ws.startup_s) / step)
    return Flow(trained_per_s=x, step_s=step, trainer_idle=np.clip(1.0 - r.t_trainer / step, 0.0, 1.0),
                generator_idle=np.clip(1.0 - t_gen / step, 0.0, 1.0), trainer_capacity=r.trainer_samples_per_s,
                generator_capacity=B / t_gen, in_flight=np.full_like(step, n_disp), queued=np.zeros_like(step),
                group_wait=np.zeros_like(step),
                rollout_latency_s=np.broadcast_to(r.rollout_latency_s, step.shape).astype(float),
                training_share=x * r.t_train / B, generated_tokens_per_s=x * r.generated_per_trained,
                discarded_fraction=np.full_like(step, 1.0 - keep), sandbox_share=hold,
                prefix_hit=np.broadcast_to(r.hit, step.shape).astype(float))


#: The step model of each orchestration mode (``Scenario.orchestration.mode``).
STEP_MODELS = {"colocated": sync_step, "sync": sync_step, "one_step_off": sync_step,
               "async": async_step, "inflight": async_step, "periodic": periodic_step}
