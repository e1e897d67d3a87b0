"""Trainer and generator capacity of an RL scenario as functions of their GPU counts (vectorised).

Generator (docs/rl-modeling.md §4): the best serving instance for the workload's prompt, response and
length-biased context comes from :func:`~tcocalc.generation.generation_throughput`; a decode step of
``b`` running trajectories per instance is fitted as ``t(b) = t0 + t1·b`` between ``b = 1`` and the
KV-bound ``b_max`` (§4.2, the "latency curve" form), interleaved prefill included. ``N_g`` GPUs run
``⌊N_g / instance⌋`` replicas. For tool-using trajectories whose KV stays resident while the tool runs,
only the share ``φ = t_llm / (t_llm + t_env)`` of resident trajectories decodes (§4.7).

Trainer (§3): training tokens/s from :func:`~tcocalc.training.training_throughput` at sequences of the
mean trajectory length (sequence packing), for the few layout families that win at each GPU count at the default
batch (every layout where none of them fits the run's job), so a count's rate is the same in a sweep and alone
(the search is the training model's: :func:`~tcocalc.roofline.training.job_rates`); per-sample FLOPs use ``E[T²]``
for causal attention.
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING

import numpy as np

from ..catalog.calibration import Calibration, RLCalibration
from ..catalog.models import ModelArch
from ..errors import InfeasibleError, ScenarioError
from ..roofline.disaggregated import kv_transfer_seconds, prefill_pool_rate
from ..roofline.engine_config import EngineConfig, Lengths
from ..roofline.forward import check_inputs, forward_cost
from ..roofline.forward import prefill as prefill_kernel
from ..roofline.parallel import Layouts, Parallelism
from ..roofline.serving import best_instance, serve
from ..roofline.training import TrainingJob, clear_rate_caches, job_rates, layout_rates, pinned_layout
from .cluster import Cluster
from .decode_floor import decode_floor_seconds
from .phases import WorkloadStats
from .settings import engine_config

if TYPE_CHECKING:  # rl/results.py imports this module
    from .results import PhaseResult

__all__ = ["GeneratorCapacity", "PrefillPool", "RolloutShape", "ServingSetup", "generator_capacity",
           "check_sides", "pinned_layout_error",
           "generator_capacities", "trainer_capacity", "trainer_min_gpus", "sample_flops",
           "trajectory_flops_coefficients", "TrainerRates", "smallest_fitting_layout", "training_job",
           "memory_calibration"]


@dataclass(frozen=True)
class PrefillPool:
    """The prefill pool of a disaggregated generator (docs/rl-modeling.md §4.9): its instance, input tokens/s per
    GPU at the engine's chunk (:func:`~tcocalc.roofline.disaggregated.prefill_pool_rate`), the prefill tokens/s
    one decode replica consumes at its steady batch, the KV transfer of one trajectory's prefill [s] and the
    pinned pool size (``None``: solved for each generator size)."""

    instance: Parallelism
    instance_gpus: int
    tokens_per_s_per_gpu: float
    demand_per_replica: float
    kv_transfer_s: float
    pinned_gpus: int | None

    def split(self, n_g, decode_instance_gpus: int) -> tuple[np.ndarray, np.ndarray]:
        """(prefill GPUs, decode replicas kept busy) for generator sizes ``n_g``. Solved: the whole number of
        prefill instances nearest the balance ``n_p = n_g·D/(d·x + D)`` (``D`` demand per replica, ``x`` rate
        per GPU, ``d`` decode instance) that keeps the most replicas fed; a replica counts only when both its
        decode instance and its share of the prefill pool exist."""
        n_g = np.asarray(n_g, dtype=int)
        a, d = self.instance_gpus, decode_instance_gpus
        x, dem = self.tokens_per_s_per_gpu, self.demand_per_replica

        def fed(k):
            n_p = k * a
            return n_p, np.minimum(np.maximum(n_g - n_p, 0) // d, np.floor(n_p * x / dem + 1e-9)).astype(int)

        if self.pinned_gpus is not None:
            return fed(np.full(n_g.shape, self.pinned_gpus // a))
        k_f = n_g * dem / (d * x + dem) / a
        lo, hi = np.maximum(np.floor(k_f), 1).astype(int), np.maximum(np.ceil(k_f), 1).astype(int)
        (p_lo, r_lo), (p_hi, r_hi) = fed(lo), fed(hi)
        take_hi = r_hi > r_lo
        return np.where(take_hi, p_hi, p_lo), np.where(take_hi, r_hi, r_lo)


@dataclass(frozen=True)
class GeneratorCapacity:
    """One serving instance for a phase: its KV-bound slots, step-time line ``t0 + t1·b`` [s], latency and rate."""

    instance: Parallelism
    instance_gpus: int
    b_max: float            # KV-bound running trajectories per instance
    b_op: float             # decoding trajectories per instance in steady state
    t0: float               # step time at b = 1 [s]
    t1: float               # step time per extra running trajectory [s]
    prefill_s: float        # one trajectory's prefill on an idle instance [s]
    tokens_per_s_per_gpu: float  # steady-state model tokens/s per GPU at b_op
    latency_s: float        # one trajectory dispatch -> done, tools included [s]
    weights_per_gpu_bytes: float
    prefill_tokens_per_s: float  # bulk prefill rate of one instance at the running context [token/s]
    prefill_pool: PrefillPool | None = None  # disaggregated: prompts are prefilled on a pool of their own

    def replicas(self, n_g) -> np.ndarray:
        """Decode replicas (serving instances) ``n_g`` generator GPUs run; disaggregated, those the prefill pool
        keeps fed after its own GPUs (:meth:`PrefillPool.split`)."""
        n_g = np.asarray(n_g, dtype=int)
        if self.prefill_pool is None:
            return n_g // self.instance_gpus
        return self.prefill_pool.split(n_g, self.instance_gpus)[1]

    def prefill_gpus(self, n_g) -> np.ndarray:
        """GPUs of the prefill pool out of ``n_g`` generator GPUs (0 when aggregated)."""
        n_g = np.asarray(n_g, dtype=int)
        if self.prefill_pool is None:
            return np.zeros_like(n_g)
        return self.prefill_pool.split(n_g, self.instance_gpus)[0]

    @property
    def min_gpus(self) -> int:
        """The fewest generator GPUs that run one replica: one instance, plus, disaggregated, the prefill pool
        (pinned) or enough prefill instances to feed it."""
        if self.prefill_pool is None:
            return self.instance_gpus
        p = self.prefill_pool
        if p.pinned_gpus is not None:
            return p.pinned_gpus + self.instance_gpus
        k = max(int(np.ceil(p.demand_per_replica / (p.tokens_per_s_per_gpu * p.instance_gpus) - 1e-9)), 1)
        return k * p.instance_gpus + self.instance_gpus

    def step_s(self, b):
        """Decode step time with ``b`` running trajectories [s]."""
        return self.t0 + self.t1 * np.asarray(b, dtype=float)


@dataclass(frozen=True)
class RolloutShape:
    """What one trajectory of a phase asks of a serving instance: ``prefill`` tokens (its prompt and tool
    outputs), ``generated`` model tokens (kept trajectories), the length-biased running KV ``context``
    (docs/rl-modeling.md §4.1), ``env_s`` of tool calls and sandbox start-up, its ``turns``, and whether the engine
    keeps the KV of earlier turns (``prefix_caching``) [tokens, s]."""

    prefill: float
    generated: float
    context: float
    env_s: float
    turns: int
    prefix_caching: bool

    @classmethod
    def of(cls, scn, ws: WorkloadStats) -> RolloutShape:
        return cls(prefill=ws.prefill_tokens, generated=ws.generated_per_kept, context=ws.context_tokens,
                   env_s=ws.tool_s + ws.startup_s, turns=ws.turns, prefix_caching=scn.workload.prefix_caching)

    @property
    def lengths(self) -> Lengths:
        """The request the engine sees: the prefill as its prompt in ``turns`` pieces, the generated tokens as its
        response (at least one token each)."""
        return Lengths(prompt=max(self.prefill, 1.0), response=max(self.generated, 1.0), context=self.context,
                       segments=float(max(self.turns, 1)))


@dataclass(frozen=True)
class ServingSetup:
    """One phase's generator as the capacity model sees it: model ``m`` on accelerator ``acc`` under calibration
    ``cal`` (with the engine's memory budget applied, :func:`memory_calibration`), the RL factors ``rl_cal``, the
    engine (:class:`~tcocalc.roofline.engine_config.EngineConfig`) and the trajectory's :class:`RolloutShape`.
    Frozen and hashable: the key of the cached capacity."""

    m: ModelArch
    acc: object
    cal: Calibration
    rl_cal: RLCalibration
    engine: EngineConfig
    shape: RolloutShape

    @classmethod
    def of(cls, scn, cluster: Cluster, ws: WorkloadStats) -> ServingSetup:
        """The phase's setup: :func:`~tcocalc.rl.settings.engine_config` and :class:`RolloutShape` of the scenario
        on the resolved cluster."""
        eng = engine_config(scn, cluster)
        return cls(m=cluster.model, acc=cluster.generator,
                   cal=memory_calibration(cluster.generator, cluster.generator_cal, eng.gpu_memory_utilization,
                                          cluster.rl_cal),
                   rl_cal=cluster.rl_cal, engine=eng, shape=RolloutShape.of(scn, ws))


def _fit(setup: ServingSetup, par, b_max: float, one, full, floor, weights, prefill_s=None) -> GeneratorCapacity:
    """Step-time line, latency and steady-state rate of one serving instance ``par`` holding ``b_max`` trajectories
    (the engine's ``max_num_seqs`` at most), from its serving estimates with one and with ``b_max`` trajectories in
    flight (``one``, ``full``: :func:`~tcocalc.roofline.serving.serve`) and the decode floor at those batches
    (``floor``: :func:`~tcocalc.rl.decode_floor.decode_floor_seconds`, CUDA graphs up to the engine's
    ``graph_max_batch``); without async scheduling each step also pays its CPU work (``cpu_factor``;
    docs/rl-modeling.md §4.8). ``prefill_s``: a trajectory's prefill latency when it is not the instance's own
    (disaggregated, §4.9)."""
    m, acc, cal, eng, shape = setup.m, setup.acc, setup.cal, setup.engine, setup.shape
    inst = par.gpus
    gain = one.tokens_per_step  # a speculative step yields this many tokens per sequence (1 without)
    cpu = eng.cpu_factor
    t0 = cpu * one.tpot_s + float(floor[0]) / gain
    t1 = max((cpu * full.tpot_s + float(floor[1]) / gain - t0) / max(b_max - 1.0, 1.0), 0.0)
    prefill_s = max(one.ttft_s - one.tpot_s * gain, 0.0) if prefill_s is None else prefill_s
    b_op, step, latency = _operating_point(shape, b_max, t0, t1, prefill_s)
    bulk = prefill_kernel(m, acc, parallel=par, batch=max(par.dp * par.pp, 1) * 8,
                          prompt_tokens=max(shape.context, 1.0), precision=eng.precision,
                          kv_precision=eng.kv_precision, calibration=cal)
    return GeneratorCapacity(instance=par, instance_gpus=inst, b_max=b_max, b_op=b_op, t0=t0, t1=t1,
                             prefill_s=prefill_s, tokens_per_s_per_gpu=b_op / step / inst, latency_s=latency,
                             weights_per_gpu_bytes=weights, prefill_tokens_per_s=bulk.tokens_per_s)


def _operating_point(shape: RolloutShape, b_max: float, t0: float, t1: float, prefill_s: float):
    """(decoding trajectories per instance, step time [s], trajectory latency [s]) of an instance holding ``b_max``
    trajectories on the step line ``t0 + t1·b``: tool-using trajectories whose KV stays resident while the tool
    runs decode a share ``φ = t_llm / (t_llm + t_env)`` of the time (docs/rl-modeling.md §4.7)."""
    b_op = b_max
    generated, env_s = shape.generated, shape.env_s
    t_llm = prefill_s + generated * (t0 + t1 * b_max)
    if shape.turns > 1 and shape.prefix_caching and env_s > 0:
        phi = t_llm / (t_llm + env_s)
        b_op = max(1.0, b_max * phi)
    step = t0 + t1 * b_op
    return b_op, step, prefill_s + generated * step + env_s


def timed(cap: GeneratorCapacity, factor: float, shape: RolloutShape) -> GeneratorCapacity:
    """``cap`` with the engine's compute time multiplied by a run calibration's ``generation`` factor
    (docs/calibration.md): the decode step line ``t0 + t1·b``, a trajectory's prefill, the bulk prefill rate and a
    disaggregated prefill pool's rate; the KV-bound slots stay (memory does not change with speed), the operating
    batch and the latency follow (:func:`_operating_point`). ``factor == 1`` returns ``cap`` itself."""
    if factor == 1.0:
        return cap
    t0, t1, prefill_s = cap.t0 * factor, cap.t1 * factor, cap.prefill_s * factor
    b_op, step, latency = _operating_point(shape, cap.b_max, t0, t1, prefill_s)
    out = replace(cap, t0=t0, t1=t1, prefill_s=prefill_s, b_op=b_op, latency_s=latency,
                  tokens_per_s_per_gpu=b_op / step / cap.instance_gpus,
                  prefill_tokens_per_s=cap.prefill_tokens_per_s / factor)
    if cap.prefill_pool is None:
        return out
    demand = b_op / step / max(shape.generated, 1.0) * max(shape.prefill, 1.0)
    pool = replace(cap.prefill_pool, tokens_per_s_per_gpu=cap.prefill_pool.tokens_per_s_per_gpu / factor,
                   demand_per_replica=demand)
    return replace(out, prefill_pool=pool, prefill_tokens_per_s=demand)


GIB_PER_GB = 2**30 / 1e9
"""Datasheet HBM capacities are binary: an "80 GB" H100 reports 79.19 GiB = 85.0e9 B to vLLM
(docs/sources.md §A.5), so ``gpu_memory_utilization`` applies to the capacity read as GiB."""


def memory_calibration(acc, cal: Calibration, mem_util: float | None, rl_cal: RLCalibration) -> Calibration:
    """``cal`` with the KV budget of an engine given ``gpu_memory_utilization`` ``u`` (vLLM's rule: weights,
    activations and KV within ``u`` of the GPU's memory, so KV = ``u·HBM − weights − activations``, the
    activations ``engine_activation_bytes`` of data/rl_calibration.toml); ``None`` keeps the calibrated budget
    (data/calibration.toml kv_memory_fraction)."""
    if mem_util is None:
        return cal
    total = acc.hbm_bytes * GIB_PER_GB  # vLLM reads the device's total: an "80 GB" H100 reports 79.19 GiB
    return replace(cal, kv_memory_fraction=1.0, inference_workspace_bytes=acc.hbm_bytes - mem_util * total
                   + rl_cal["engine_activation_bytes"])


@functools.lru_cache(maxsize=256)
def _generator_capacity(setup: ServingSetup, pinned_tp: int | None = None,
                        max_gpus: int | None = None, expert_parallel: bool = True) -> GeneratorCapacity:
    """The serving instance: the throughput-best one (highest steady-state output per GPU within KV memory;
    :func:`~tcocalc.roofline.serving.best_instance`, ``max_gpus`` the pool when it is smaller than that instance), or
    the pinned tensor-parallel degree ``pinned_tp`` (the scenario's ``generator.tp``, or the tensor/expert-parallel
    alternative :func:`generator_capacities` tries); a pinned instance of a mixture-of-experts model spreads whole
    experts over its GPUs where they divide evenly, or with ``expert_parallel`` false (``generator.expert_parallel``,
    vLLM's default without ``enable_expert_parallel``) shards every expert across the tensor-parallel group.
    ``solve_split`` tries the wider tensor-parallel instances and says when one pays. A disaggregated engine runs
    decode-only instances beside a prefill pool (:func:`_prefill_pool`). An aggregated instance prefills each turn's
    new tokens whole, in as few steps as the engine's token budget allows
    (:func:`~tcocalc.roofline.serving.continuous_batching_step`); a trajectory holds whole KV blocks; speculative
    decoding as the engine says (:mod:`tcocalc.roofline.speculative`). The instance's step line is fitted
    (:func:`_fit`) to its serving estimates with one and with ``b_max`` trajectories in flight and the decode floor
    at both, made here once."""
    m, eng = setup.m, setup.engine
    pool = _prefill_pool(setup) if eng.disaggregated else None
    if pinned_tp is not None:
        spread = expert_parallel and m.is_moe and m.num_experts % pinned_tp == 0
        par = Parallelism(tp=pinned_tp, ep=pinned_tp if spread else 1)
        check_inputs(m, setup.acc, eng.precision, eng.kv_precision, par)  # ScenarioError naming parallel.tp
        est = serve(m, setup.acc, setup.cal, setup.shape.lengths, eng, gpus=pinned_tp, parallel=par)
    else:
        est = best_instance(m, setup.acc, setup.cal, setup.shape.lengths, eng, max_gpus)
    # the step line's two ends: one trajectory and the KV-bound batch (the engine's max_num_seqs at most) in flight
    par, b_max = est.parallel, est.max_concurrency / est.replicas
    b_max = float(b_max if eng.max_num_seqs is None else min(b_max, eng.max_num_seqs))
    one = serve(m, setup.acc, setup.cal, setup.shape.lengths, eng, gpus=par.gpus, parallel=par, concurrency=1)
    full = serve(m, setup.acc, setup.cal, setup.shape.lengths, eng, gpus=par.gpus, parallel=par, concurrency=b_max)
    floor = decode_floor_seconds(m, setup.acc, par, np.array([1.0, b_max]), cuda_graphs=eng.cuda_graphs,
                                 graph_max_batch=eng.graph_max_batch, calibration=setup.rl_cal)
    cap = _fit(setup, par, b_max, one, full, floor, est.weights_per_gpu_bytes,
               prefill_s=None if pool is None else pool[1])
    if pool is None:
        return cap
    # one decode replica consumes the prefill of the trajectories it finishes (§4.9)
    shape = setup.shape
    demand = cap.b_op / float(cap.step_s(cap.b_op)) / max(shape.generated, 1.0) * max(shape.prefill, 1.0)
    return replace(cap, prefill_pool=replace(pool[0], demand_per_replica=demand), prefill_tokens_per_s=demand)


def _prefill_pool(setup: ServingSetup) -> tuple[PrefillPool, float]:
    """The prefill pool of a disaggregated generator and one trajectory's prefill latency [s]: the throughput-best
    prefill instance at the engine's chunk (:func:`~tcocalc.roofline.disaggregated.prefill_pool_rate`) for
    prompts of ``prefill/turns`` tokens (each turn's new tokens are one prefill request), each turn's prefill
    alone on it plus the KV transfer of all ``prefill`` tokens (:func:`kv_transfer_seconds`; docs §4.9)."""
    m, acc, cal, eng, shape = setup.m, setup.acc, setup.cal, setup.engine, setup.shape
    precision, kv = eng.precision, eng.kv_precision
    turns = max(shape.turns, 1)
    per_turn = max(shape.prefill, 1.0) / turns
    rate = prefill_pool_rate(m, acc, cal, prompt_tokens=per_turn, precision=precision, kv_precision=kv,
                             chunk_tokens=eng.max_batched_tokens)
    if rate is None:
        raise InfeasibleError(f"generator.disaggregated: no prefill instance of {m.name} ({precision}) on "
                              f"{acc.name} holds a {per_turn:,.0f}-token prompt")
    par, pinned = rate.parallel, eng.prefill_gpus
    if pinned is not None and pinned % par.gpus:
        raise ScenarioError("generator.prefill_gpus", f"must be a multiple of the prefill instance ({par.gpus} "
                                                      f"GPUs, {par.label()}), got {pinned}")
    one = forward_cost(m, acc, cal, par, precision=precision, kv_precision=kv, pre_seqs=1.0, pre_tokens=per_turn)
    t_kv = kv_transfer_seconds(m, acc, cal, par, kv, max(shape.prefill, 1.0))
    latency = turns * float(one["stage_s"]) * par.pp + t_kv
    return PrefillPool(instance=par, instance_gpus=par.gpus, tokens_per_s_per_gpu=rate.tokens_per_s_per_gpu,
                       demand_per_replica=0.0, kv_transfer_s=t_kv, pinned_gpus=pinned), latency


def generator_capacity(scn, cluster: Cluster, ws: WorkloadStats, max_gpus: int | None = None) -> GeneratorCapacity:
    """The generator's serving instance, step-time fit and steady-state rate for this phase (cached).

    ``max_gpus``: the largest generator pool it serves; when even that cannot hold the usual instance (a
    1-GPU generator, say), the best instance that fits in it is used instead."""
    setup = ServingSetup.of(scn, cluster, ws)
    return timed(_named(scn, ws, lambda: _steady_best(scn, setup, max_gpus), setup), cluster.run.generation,
                 setup.shape)


def _steady_best(scn, setup: ServingSetup, max_gpus: int | None) -> GeneratorCapacity:
    """The scenario's pinned instance (``generator.tp``) or the throughput-best one, searched again within
    ``max_gpus`` when the pool is smaller than it."""
    pinned = scn.generator.tp
    cap = _generator_capacity(setup, pinned, None, scn.generator.expert_parallel is not False)
    if max_gpus is not None and pinned is None and cap.instance_gpus > max_gpus:
        cap = _generator_capacity(setup, None, int(max_gpus))
    return cap


def trajectory_length_keys(scn, ws: WorkloadStats) -> str:
    """The workload keys that make a trajectory as long as it is, the largest part first: what an error about a
    context no layout holds tells the planner to change."""
    w = scn.workload
    parts = [(w.prompt_tokens, "workload.prompt_tokens"),
             ((w.turns - 1) * w.observation_tokens_per_turn, "workload.observation_tokens_per_turn x workload.turns"),
             (w.response_tokens_max if w.response_tokens_max is not None else ws.response_mean,
              "workload.response_tokens_max" if w.response_tokens_max is not None else "workload.response_tokens_mean")]
    return ", ".join(key for size, key in sorted(parts, key=lambda p: -p[0]) if size > 0)


def _named(scn, ws: WorkloadStats, call, setup: ServingSetup | None = None):
    """``call()``, its roofline errors named for the scenario: a pinned degree the model refuses is
    ``generator.tp`` (not the roofline's ``parallel.tp``); a context no layout holds names the generator pool, the
    length and the keys that make it (:func:`trajectory_length_keys`), and the inputs that pinned the instance
    (``generator.tp``) or shrank its memory (``generator.gpu_memory_utilization``) with the value that would fit
    (:func:`pinned_inputs_hint`)."""
    try:
        return call()
    except ScenarioError as exc:
        if exc.field.startswith("parallel.") and scn.generator.tp is not None:
            raise ScenarioError("generator.tp", f"{scn.generator.tp}: {exc.message}") from None
        raise
    except InfeasibleError as exc:
        if str(exc).startswith("generator"):
            raise
        hint = "" if setup is None else pinned_inputs_hint(scn, setup, None)
        raise InfeasibleError(f"generator: {exc} ({hint or 'generator.precision, generator.hardware'}); or shorten "
                              f"the trajectories ({trajectory_length_keys(scn, ws)})",
                              min_gpus=exc.min_gpus, layout=exc.layout) from None


def pinned_inputs_hint(scn, setup: ServingSetup, gpus: int | None) -> str:
    """What the scenario's own generator inputs do to an instance that does not fit (on ``gpus`` GPUs; ``None``:
    as pinned): ``generator.tp = 1`` pins a layout too small, ``generator.gpu_memory_utilization = 0.051`` leaves
    too little memory; each with the value that fits (searched with the capacity model itself), or "" when the
    scenario pins neither. Issue 40 item 5: an infeasibility names the input that causes it and what would fit."""
    g, parts = scn.generator, []
    if g.tp is not None:
        tps = [t for t in (1, 2, 4, 8, 16, 32, 64) if t <= max(getattr(setup.acc, "scaleup_domain_gpus", 8), 8)]
        fit = next((t for t in tps if t != g.tp and (gpus is None or t <= gpus) and _fits(setup, t, gpus)), None)
        parts.append(f"generator.tp = {g.tp} pins the instance; " + (
            f"generator.tp = {fit} fits, or leave generator.tp out to search the instance" if fit is not None else
            "no tensor-parallel degree up to the NVLink domain fits"))
    u = g.gpu_memory_utilization
    if u is not None:
        fit_u = _fitting_utilization(setup, g.tp, gpus, u)
        parts.append(f"generator.gpu_memory_utilization = {u:g} leaves the engine {u * setup.acc.hbm_bytes / 1e9:,.1f} "
                     f"GB of each GPU's {setup.acc.hbm_bytes / 1e9:,.0f} GB for weights, activations and KV cache; "
                     + (f"{fit_u:.2f} fits" if fit_u is not None else "even 1.0 does not fit")
                     + (f" on {gpus} GPUs" if gpus is not None else ""))
    return "; ".join(parts)


def _fits(setup: ServingSetup, tp: int | None, gpus: int | None) -> bool:
    """Whether ``setup`` serves the model with the instance pinned to ``tp`` (or searched within ``gpus``)."""
    try:
        cap = _generator_capacity(setup, tp, None if tp is not None else gpus)
    except (InfeasibleError, ScenarioError):
        return False
    return gpus is None or cap.instance_gpus <= gpus


def _fitting_utilization(setup: ServingSetup, tp: int | None, gpus: int | None, u: float) -> float | None:
    """The smallest ``gpu_memory_utilization`` above ``u``, in hundredths, at which the instance fits
    (:func:`_fits`); None when even 1.0 does not (bisection: about seven capacity searches, on the error path)."""
    def at(hundredths: int) -> bool:
        share = hundredths / 100
        cal = memory_calibration(setup.acc, setup.cal, share, setup.rl_cal)  # sets the budget afresh
        return _fits(replace(setup, cal=cal, engine=replace(setup.engine, gpu_memory_utilization=share)), tp, gpus)

    lo, hi = int(u * 100), 100  # lo: does not fit (the scenario's own value or below)
    if not at(hi):
        return None
    while hi - lo > 1:
        mid = (lo + hi) // 2
        lo, hi = (lo, mid) if at(mid) else (mid, hi)
    return hi / 100


def generator_capacities(scn, cluster: Cluster, ws: WorkloadStats, max_gpus: int | None = None) -> tuple:
    """The serving instances the RL flow should be tried on: :func:`generator_capacity`'s steady-state
    throughput-best first, then, when it spreads attention over data-parallel ranks, the tensor- and
    expert-parallel instance on the same GPUs (docs/rl-modeling.md §4.4). Attention DP wins fixed-length steady
    state (more sequences per GPU, no attention all-reduce) but decodes each sequence slower at a small batch,
    which an RL step's tail, staleness window and tool turns wait on: the Qwen3-235B-A22B generator of the
    SemiAnalysis scenario is one. No alternative when the instance is pinned (``generator.tp``) or disaggregated,
    or when it does not fit. The engine settings are resolved once for both."""
    setup = ServingSetup.of(scn, cluster, ws)
    g = cluster.run.generation
    cap = _named(scn, ws, lambda: _steady_best(scn, setup, max_gpus), setup)
    if scn.generator.tp is not None or setup.engine.disaggregated or cap.instance.dp <= 1:
        return (timed(cap, g, setup.shape),)
    try:  # the same GPUs as one tensor- and expert-parallel instance
        alt = _generator_capacity(setup, cap.instance_gpus)
    except (InfeasibleError, ScenarioError):
        return (timed(cap, g, setup.shape),)
    return (timed(cap, g, setup.shape), timed(alt, g, setup.shape))


def trajectory_flops_coefficients(m: ModelArch) -> tuple[float, float]:
    """(linear, square) with ``F(T) = linear·T + square·T²`` model FLOPs to train one ``T``-token trajectory:
    ``6·N_fl`` and ``3·L·H_q·(d_qk + d_v)`` (causal attention; docs/rl-modeling.md §3.1)."""
    width = m.qk_head_dim + m.value_head_dim
    return 6.0 * m.flop_params, 3.0 * m.num_layers * m.num_attention_heads * width


def sample_flops(m: ModelArch, ws: WorkloadStats) -> float:
    """Expected model FLOPs to train one trajectory: ``6·N_fl·E[T] + 3·L·H_q·(d_qk + d_v)·E[T²]``
    (:func:`trajectory_flops_coefficients` on the moments of ``T``; docs/rl-modeling.md §3.1)."""
    linear, square = trajectory_flops_coefficients(m)
    return linear * ws.traj_tokens + square * ws.traj_tokens_m2


def clear_caches() -> None:
    """Forget every generator and trainer rate computed so far (:func:`tcocalc.rl.pipeline.clear_caches` clears
    these and the step models' tables): what a cold start measures. No calibration needs it: the calibration is
    part of every key."""
    _generator_capacity.cache_clear()
    clear_rate_caches()


def training_job(scn, cluster: Cluster, ws: WorkloadStats) -> TrainingJob:
    """The trainer's job in a phase: the model on the trainer accelerator under its calibration, packed sequences
    of the mean trajectory length (at least 256 tokens), a mini-batch's tokens per optimizer step; under
    ``[trainer] minibatch_balance = "random"`` the trajectories' length spread (:func:`trajectory_cv`), whose
    unequal shares each optimizer step waits for (docs/rl-modeling.md §3.12)."""
    return TrainingJob(m=cluster.model, acc=cluster.trainer, cal=cluster.trainer_cal,
                       seq=float(max(256, round(ws.traj_tokens))),
                       global_batch_tokens=ws.samples_per_step * ws.traj_tokens / scn.trainer.minibatches_per_step,
                       precision=scn.model.precision, sharding=cluster.settings.trainer_sharding,
                       recompute=scn.trainer.recompute,
                       seq_cv=trajectory_cv(ws) if scn.trainer.minibatch_balance == "random" else 0.0)


def trajectory_cv(ws: WorkloadStats) -> float:
    """The coefficient of variation of a trained trajectory's tokens, ``sqrt(E[T²]/E[T]² - 1)`` (0 for fixed
    lengths): how unequal the trainer's data-parallel shares are (:func:`tcocalc.roofline.training.dp_imbalance`)."""
    if ws.traj_tokens <= 0:
        return 0.0
    return math.sqrt(max(ws.traj_tokens_m2 / ws.traj_tokens**2 - 1.0, 0.0))


def recompute_flops_ratio(scn, cluster: Cluster, ws: WorkloadStats) -> float:
    """Hardware over model FLOPs of one update under the scenario's named ``[trainer] recompute`` (1 when it names
    none): ``4/3`` for full recompute (each layer's forward runs again in the backward pass: Korthikanti et al. 2022,
    arXiv 2205.05198 §5, as :func:`tcocalc.roofline.training.training_steps` charges it); for selective, one more
    forward of the attention scores, ``1 + square·E[T²] / (3·F_sample)`` (:func:`trajectory_flops_coefficients`;
    docs/rl-modeling.md §3.11)."""
    recompute = scn.trainer.recompute
    if recompute is None or recompute == "none":
        return 1.0
    if recompute == "full":
        return 4.0 / 3.0
    square = trajectory_flops_coefficients(cluster.model)[1]
    return 1.0 + square * ws.traj_tokens_m2 / (3.0 * sample_flops(cluster.model, ws))


def extra_pass_units(scn, cluster: Cluster, ws: WorkloadStats) -> float:
    """The extra forward passes (old-policy log-probs, reference model) in units of a third of an update:
    ``n_extra / r`` with ``r`` = :func:`recompute_flops_ratio`. A forward pass is a third of the update's model FLOPs
    and recomputes nothing, so when the update recomputes its forward (the trainer's rate then includes ``r``) each
    pass costs ``1/(3·r)`` of the update's time (docs/rl-modeling.md §3.11); ``n_extra`` unchanged without a named
    recompute."""
    return cluster.settings.extra_forward_passes / recompute_flops_ratio(scn, cluster, ws)


def smallest_fitting_layout(scn, cluster: Cluster, ws: WorkloadStats, n: int) -> Parallelism | None:
    """The fitting trainer layout on ``n`` GPUs with the fewest model-parallel GPUs (``tp·pp``, then ``tp``):
    what to suggest when a pinned layout does not divide or fit; ``None`` when nothing fits."""
    job = training_job(scn, cluster, ws)
    order = sorted(job.candidates(n),
                   key=lambda q: (q[0] * q[1] * q[5], q[0], q[1], q[3], q[4]))
    if not order:
        return None
    lay = Layouts.of(order)
    tps = layout_rates(job, lay)[:, 0]
    return lay.at(int(np.argmax(tps > 0))) if (tps > 0).any() else None


@dataclass(frozen=True)
class TrainerRates:
    """What the trainer does on its own per GPU count (arrays over counts)."""

    samples_per_s: np.ndarray   # trainable samples/s if never starved, all passes included (0 where nothing fits)
    mfu_busy: np.ndarray        # model FLOPs utilisation while training [1]
    state_bytes: np.ndarray     # weights, gradients and optimizer state per GPU [B] (what colocated offload moves)


def trainer_capacity(scn, cluster: Cluster, ws: WorkloadStats, n_t) -> TrainerRates:
    """Trainer samples/s if never starved, busy MFU and state per GPU for each trainer GPU count in ``n_t``.

    ``samples/s = tokens/s · flops_per_token(E[T]) / (F_sample · (1 + n_extra/3) · o_RL)``: the extra forward
    passes (old-policy log-probs, reference model; the framework preset's defaults) cost a third of a training
    pass each (their measured share of the update, 0.12-0.64 with a median near 1/3: docs/sources.md §M.4), and
    the RL framework runs forward and backward ``o_RL`` slower than standalone Megatron (the preset's
    ``trainer_overhead``: 1.2 for NeMo RL, NVIDIA-NeMo/RL issue 2129; docs/rl-modeling.md §3.6). A run calibration
    multiplies the update by its ``training`` factor and the passes by its ``logprob`` factor
    (``(k_train + k_logprob·n_extra/3)`` in place of ``1 + n_extra/3``; docs/calibration.md). A pinned layout
    (``[trainer] tp, pp, ep, cp, vp``) replaces the search. Infeasible counts give 0.
    """
    t = scn.trainer
    job = training_job(scn, cluster, ws)
    m, hw, precision, seq = job.m, job.acc, job.precision, job.seq
    st = cluster.settings
    extra, overhead = extra_pass_units(scn, cluster, ws), st.trainer_overhead
    run = cluster.run  # a run calibration's factors on the update and on the log-prob passes (1: none)
    flop_rate_per_token = m.training_flops_per_token(seq)
    f_sample = sample_flops(m, ws) * (run.training + run.logprob * extra / 3.0) * overhead
    # On other hardware a measured MFU carries as its measured-over-modelled ratio (mfu_measurement "carried")
    ratio = carried_mfu_ratio(scn, cluster, ws)[0] if cluster.mfu_source == "carried" else 1.0
    n_t = np.atleast_1d(np.asarray(n_t, dtype=int))
    rates = job_rates(job, t, n_t)
    fits = rates[:, 0] > 0
    mfu = cluster.mfu_busy
    if mfu is not None:  # a measured MFU replaces the training model; memory feasibility still applies
        peak = hw.peak_flops_per_s(precision)
        return TrainerRates(np.where(fits, n_t * peak * mfu / (f_sample / overhead), 0.0),
                            np.where(fits, mfu / run.training, 0.0), rates[:, 2])
    samples = rates[:, 0] * flop_rate_per_token / f_sample * ratio
    return TrainerRates(samples, rates[:, 1] * ratio / (overhead * run.training), rates[:, 2])


def _measured_cluster(cluster: Cluster) -> Cluster:
    """The cluster with the trainer pool on the chip ``trainer.mfu_busy`` was measured on (``mfu_source``
    ``"carried"``: ``cluster.mfu_chip``, under its calibration ``cluster.mfu_chip_cal``): where its modelled MFU is
    taken for the measured-over-modelled ratio."""
    return replace(cluster, trainer=cluster.mfu_chip, trainer_cal=cluster.mfu_chip_cal)


def carried_mfu_ratio(scn, cluster: Cluster, ws: WorkloadStats) -> tuple[float, float]:
    """(ratio, modelled MFU): a measured ``trainer.mfu_busy`` over the roofline training model's busy MFU on the
    chip it was measured on (``trainer.mfu_measured_on``), at the scenario's trainer GPU count (the fewest that hold
    the model there when that count does not). The ratio carries what the roofline misses of the framework and
    the run (kernels, communication overlap, stalls) to another chip: its modelled MFU times the ratio (issue 39
    item 1; docs/rl-modeling.md §3.2). (1, 0) when nothing fits on the measured chip."""
    meas = _measured_cluster(cluster)
    job = training_job(scn, meas, ws)
    overhead = meas.settings.trainer_overhead
    mfu = job_rates(job, scn.trainer, [scn.trainer.gpus])[0, 1]
    if mfu <= 0:
        need = job.fewest_gpus()  # trainer_min_gpus on the measured chip
        mfu = job_rates(job, scn.trainer, [need])[0, 1] if need else 0.0
    modelled = mfu / overhead
    return (scn.trainer.mfu_busy / modelled, modelled) if modelled > 0 else (1.0, 0.0)


def trainer_min_gpus(scn, cluster: Cluster, ws: WorkloadStats) -> int | None:
    """Smallest trainer GPU count that holds the model (the training model's ``min_gpus``; None if none)."""
    return training_job(scn, cluster, ws).fewest_gpus()


def check_sides(scn, cluster: Cluster, res: PhaseResult, n_t: int, n_g: int) -> None:
    """InfeasibleError naming the side that cannot hold the model, with the smallest count that can."""
    m, gcap, ws = cluster.model, res.generator, res.workload
    if n_g < gcap.instance_gpus:
        raise InfeasibleError(
            f"generator: {n_g} x {scn.generator.hardware} cannot hold {m.name} ({scn.generator.precision}) with "
            f"{ws.context_tokens:,.0f}-token contexts; the smallest instance is {gcap.instance_gpus} GPUs "
            f"({gcap.instance.label()}): raise generator.gpus, or shorten the trajectories "
            f"({trajectory_length_keys(scn, ws)})" + _pinned(scn, cluster, ws, n_g),
            min_gpus=gcap.instance_gpus, layout=gcap.instance)
    if gcap.prefill_pool is not None and int(gcap.replicas(n_g)) < 1:
        pool = gcap.prefill_pool
        field = "generator.prefill_gpus" if pool.pinned_gpus is not None else "generator.gpus"
        raise InfeasibleError(
            f"{field}: {n_g} disaggregated generator GPUs do not run one fed decode instance ({gcap.instance_gpus} "
            f"GPUs, {gcap.instance.label()}) next to its prefill pool (instances of {pool.instance_gpus} GPUs, "
            f"{pool.instance.label()}); the smallest that works is {gcap.min_gpus} GPUs", min_gpus=gcap.min_gpus)
    if not bool(res.feasible[0]) and scn.trainer.pinned_layout:
        pinned_layout_error(scn, cluster, ws, n_t)
    if not bool(res.feasible[0]):
        need = trainer_min_gpus(scn, cluster, ws)
        raise InfeasibleError(
            f"trainer: {n_t} x {scn.trainer.hardware} cannot train {m.name} ({scn.model.precision}) on "
            f"{ws.traj_tokens:,.0f}-token trajectories; " + (f"at least {need} GPUs fit (trainer.gpus)" if need else
                                                               "no GPU count up to 32,768 fits") +
            f"; or shorten the trajectories ({trajectory_length_keys(scn, ws)})", min_gpus=need)


def _pinned(scn, cluster: Cluster, ws, n_g: int) -> str:
    """"; <the generator inputs that cause it, and what fits>" (:func:`pinned_inputs_hint`)."""
    hint = pinned_inputs_hint(scn, ServingSetup.of(scn, cluster, ws), n_g)
    return f"; {hint}" if hint else ""


def pinned_layout_error(scn, cluster: Cluster, ws, n_t: int) -> None:
    """InfeasibleError naming the pinned trainer layout (its fields) and the smallest layout that fits."""
    t, m = scn.trainer, cluster.model
    pins = {k: getattr(t, k) for k in ("tp", "pp", "ep", "cp", "vp") if getattr(t, k) is not None}
    fields = ", ".join(f"trainer.{k} = {v}" for k, v in pins.items())
    par = pinned_layout(t, m, n_t)
    if par is None:
        why = (f"does not divide {n_t} GPUs or does not fit {m.name} (tp must divide its {m.num_attention_heads} "
               f"heads, ep its experts and tp·dp·cp)")
    else:
        why = f"({par.label()}) does not fit in {scn.trainer.hardware} memory"
    alt = smallest_fitting_layout(scn, cluster, ws, n_t)
    hint = (f"; the smallest layout that fits {n_t} GPUs is {alt.label()} (trainer.tp = {alt.tp}, trainer.pp = "
            f"{alt.pp}, trainer.ep = {alt.ep})") if alt is not None else "; no layout fits this many GPUs"
    raise InfeasibleError(f"trainer layout {fields} {why}{hint}", layout=alt)
