"""Stage 1 of the RL step: what each pool can do on its own, and the hand-off the step models fill in.

:func:`pool_rates`: the trainer's samples/s if never starved (docs/rl-modeling.md §3.2), the generator's replicas and
trainable samples/s at its operating batch (§4.4), the weight push ``t_sync`` (§3.3), the sandbox start-up per
attempt (§7) and the tool calls' wait for ``[sandbox] max_executing`` executors (§7.1), as a :class:`Rates`; a
step model of :data:`~tcocalc.rl.steps.registry.STEP_MODELS` (§5.1) turns them into a :class:`Flow`.

A run calibration's fixed per-step cost ``t_fixed`` (:attr:`Rates.t_fixed`, :func:`fixed_step_seconds`,
docs/calibration.md) adds to the trainer loop's time per step wherever ``t_train`` stands for it (``t_train +
t_fixed``: the synchronous step, the trainer's gate and capacity ``μ_eff``, the periodic step), never to the training
share behind MFU.

Also here, the scenario's readings every stage shares: :func:`lru_retention` and :func:`turn_shape` (§4.12),
:func:`interruptible` and :func:`streamed` (§4.6, §5.6), :func:`sync_dispatched` (§4.6).

Everything broadcasts over candidate splits (arrays of trainer and generator GPU counts).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from ..scenario import Scenario
from .capacity import GeneratorCapacity, trainer_capacity
from .cluster import Cluster
from .kv_retention import TurnShape, lru_residency, miss_tokens
from .phases import WorkloadStats
from .rollouts import sync_dispatch_groups
from .sandboxes import execution_queue, sandbox_attempts  # sandbox_attempts: re-exported here
from .settings import Settings
from .switching import checkpoint_tensors, colocated_switch_seconds, per_tensor_seconds
from .weight_sync import checkpoint_save_seconds, weight_sync_seconds

__all__ = ["Rates", "Flow", "pool_rates", "lru_retention", "turn_shape", "offered_per_replica", "fixed_step_seconds",
           "sandbox_attempts", "sync_dispatched", "interruptible", "streamed"]


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
    streamed: bool = False              # an async step whose trainer streams its mini-batches (:func:`streamed`)
    tool_wait_s: np.ndarray | float = 0.0  # a trajectory's tool calls' wait for an executor, all its calls (§7.1) [s]
    execution_load: np.ndarray | float = 0.0  # tool calls offered over ``[sandbox] max_executing`` (≥ 1: binds) [1]

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
    # at most [sandbox] max_executing tool calls run at once: a call beyond waits (M/M/c), and the generator
    # dispatches no faster than the executors serve (§7.1). Calls arrive at the generator's rate while it
    # generates: a synchronous batch's, all of it; a streaming step's, at most what the trainer takes; either, at
    # most what max_concurrency live sandboxes let through, C/W (Little)
    arrivals = np.minimum(lam_raw, mu_safe / keep) if scn.orchestration.traits.streaming else lam_raw
    if ws.uses_sandbox and scn.sandbox.max_concurrency > 0:
        arrivals = np.minimum(arrivals, scn.sandbox.max_concurrency / np.maximum(latency, 1e-300))
    lam_raw, tool_wait, exec_load = execution_queue(scn, ws, lam_raw, arrivals,
                                                    offered_per_replica(scn, ws, n_rep) * np.maximum(n_rep, 1),
                                                    latency)
    latency = latency + tool_wait
    stream = streamed(scn, st)
    return Rates(n_t=n_t, n_g=n_g, n_rep=n_rep, feasible=feasible, trainer_samples_per_s=mu_safe, mfu_busy=mfu_busy,
                 t_sync=t_sync, t_train=float(ws.samples_per_step) / mu_safe, generator_samples_per_s=lam_raw * keep,
                 slots=slots, b_op=b_op,
                 batch=float(ws.samples_per_step), keep=keep, generated_per_dispatched=gen_per_dispatched,
                 generated_per_trained=ws.generated_per_trained, startup_s=startup,
                 rollout_latency_s=latency,
                 t_fixed=fixed_step_seconds(scn, cluster, st, ws, n_t) + run.step_overhead_s,
                 resident=resident, miss_s=miss_s, hit=hit, settings=st, tail=run.tail, streamed=stream,
                 tool_wait_s=tool_wait, execution_load=exec_load)


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
    (:func:`sync_dispatched`), or the staleness bound's admission ``(η + 1)·B`` of a streaming mode; at most
    ``[orchestration] max_rollouts_in_flight`` and (``sandboxes``), for sandboxed trajectories, ``[sandbox]
    max_concurrency``."""
    o, sb = scn.orchestration, scn.sandbox
    if o.traits.streaming:
        total = (o.max_staleness + 1.0) * ws.samples_per_step
    else:
        total = sync_dispatched(ws, ws.keep_fraction)
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


def sync_dispatched(ws: WorkloadStats, keep: float) -> float:
    """Trajectories a synchronous step dispatches (over-provisioned groups, §4.6)."""
    return ws.group_size * sync_dispatch_groups(ws.samples_per_step / (keep * ws.group_size), keep)


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
