"""Trainer and generator capacity of an RL scenario as functions of their GPU counts (vectorised).

Generator (docs/rl-modeling.md §4): the best serving instance for the workload's prompt, response and
length-biased context comes from :func:`~tcocalc.generation.generation_throughput`; a decode step of
``b`` running trajectories per instance is fitted as ``t(b) = t0 + t1·b`` between ``b = 1`` and the
KV-bound ``b_max`` (§4.2, the "latency curve" form), interleaved prefill included. ``N_g`` GPUs run
``⌊N_g / instance⌋`` replicas. For tool-using trajectories whose KV stays resident while the tool runs,
only the share ``φ = t_llm / (t_llm + t_env)`` of resident trajectories decodes (§4.7).

Trainer (§3): training tokens/s from :func:`~tcocalc.training.training_throughput` at sequences of the
mean trajectory length (sequence packing), for the few layout families that win at anchor sizes and
every data-parallel width in between; per-sample FLOPs use ``E[T²]`` for causal attention.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass, replace

import numpy as np

from ..catalog.calibration import calibration_for, rl_calibration
from ..catalog.frameworks import engine_kv_block_tokens
from ..catalog.models import ModelArch
from ..errors import InfeasibleError, ScenarioError
from ..roofline.parallel import Layouts, Parallelism
from ..roofline.serving import generation_throughput
from ..roofline.training import candidate_degrees, training_steps
from .cluster import Cluster
from .decode_floor import decode_floor_seconds
from .phases import WorkloadStats
from .settings import settings

__all__ = ["GeneratorCapacity", "PrefillPool", "generator_capacity", "generator_capacities", "trainer_capacity",
           "trainer_min_gpus", "sample_flops", "trajectory_flops_coefficients", "TrainerRates", "pinned_layout",
           "smallest_fitting_layout"]


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


def _fit(m, acc, par, kw, generated, ctx, env_s, turns, caching, precision, kv, b_max, weights,
         engine, prefill_s=None) -> GeneratorCapacity:
    """Step-time line, latency and steady-state rate of one serving instance. ``engine`` is (CUDA graphs,
    largest graphed batch, max_num_seqs, CPU factor): the batch is capped at the engine's maximum concurrent
    sequences, each step pays the decode floor (:func:`~tcocalc.rl.decode_floor.decode_floor_seconds`) and,
    without async scheduling, its CPU work ``engine_cpu_share`` of the GPU time (docs/rl-modeling.md §4.8).
    ``prefill_s``: a trajectory's prefill latency when it is not the instance's own (disaggregated, §4.9)."""
    graphs, graph_max, max_seqs, cpu = engine
    b_max = float(min(b_max, max_seqs))
    inst = par.gpus
    one = generation_throughput(m, acc, gpus=inst, parallel=par, concurrency=1, **kw)
    full = generation_throughput(m, acc, gpus=inst, parallel=par, concurrency=b_max, **kw)
    floor = decode_floor_seconds(m, acc, par, np.array([1.0, b_max]), cuda_graphs=graphs, graph_max_batch=graph_max)
    gain = one.tokens_per_step  # a speculative step yields this many tokens per sequence (1 without)
    t0 = cpu * one.tpot_s + float(floor[0]) / gain
    t1 = max((cpu * full.tpot_s + float(floor[1]) / gain - t0) / max(b_max - 1.0, 1.0), 0.0)
    prefill_s = max(one.ttft_s - one.tpot_s * gain, 0.0) if prefill_s is None else prefill_s
    b_op = b_max
    t_llm = prefill_s + generated * (t0 + t1 * b_max)
    if turns > 1 and caching and env_s > 0:
        phi = t_llm / (t_llm + env_s)
        b_op = max(1.0, b_max * phi)
    step = t0 + t1 * b_op
    latency = prefill_s + generated * step + env_s
    from ..roofline.forward import prefill as prefill_kernel

    bulk = prefill_kernel(m, acc, parallel=par, batch=max(par.dp * par.pp, 1) * 8, prompt_tokens=max(ctx, 1.0),
                          precision=precision, kv_precision=kv)
    return GeneratorCapacity(instance=par, instance_gpus=inst, b_max=b_max, b_op=b_op, t0=t0, t1=t1,
                             prefill_s=prefill_s, tokens_per_s_per_gpu=b_op / step / inst, latency_s=latency,
                             weights_per_gpu_bytes=weights, prefill_tokens_per_s=bulk.tokens_per_s)


def _best_instance(m, acc, kw, max_gpus: int | None):
    """The serving instance to use: the throughput-best one searched at the scale-up domain (every split of a
    sweep gets the same one), or the smallest that fits when the model needs more than a domain. A pool of
    ``max_gpus`` GPUs too small for it gets the best instance that fits in it: every instance size up to
    ``max_gpus``, scored by output per pool GPU with ``⌊max_gpus / size⌋`` replicas; the truly smallest
    instance when nothing fits (so the caller's "smallest instance" names it)."""
    try:
        best = generation_throughput(m, acc, gpus=acc.scaleup_domain_gpus, **kw)
    except InfeasibleError as exc:
        if exc.min_gpus is None:
            raise
        best = generation_throughput(m, acc, gpus=exc.min_gpus, **kw)
    if max_gpus is None or best.parallel.gpus <= max_gpus:
        return best
    pick, score, smallest = None, 0.0, None
    size = 1
    while size <= max_gpus:  # instance sizes are powers of two (candidate_serving_layouts)
        try:
            est = generation_throughput(m, acc, gpus=size, **kw)
        except InfeasibleError as exc:
            smallest = exc.min_gpus
        else:
            per_pool_gpu = est.output_tokens_per_s / est.replicas * (max_gpus // est.parallel.gpus) / max_gpus
            if per_pool_gpu > score:
                pick, score = est, per_pool_gpu
        size *= 2
    if pick is not None:
        return pick
    return best if smallest is None else generation_throughput(m, acc, gpus=smallest, **kw)


GIB_PER_GB = 2**30 / 1e9
"""Datasheet HBM capacities are binary: an "80 GB" H100 reports 79.19 GiB = 85.0e9 B to vLLM
(docs/sources.md §A.5), so ``gpu_memory_utilization`` applies to the capacity read as GiB."""


def _memory_calibration(acc, mem_util: float | None):
    """The KV budget of an engine given ``gpu_memory_utilization`` ``u`` (vLLM's rule: weights, activations and
    KV within ``u`` of the GPU's memory, so KV = ``u·HBM − weights − activations``, data/rl_calibration.toml);
    ``None`` keeps the calibrated budget (data/calibration.toml kv_memory_fraction)."""
    cal = calibration_for(acc)
    if mem_util is None:
        return None
    total = acc.hbm_bytes * GIB_PER_GB  # vLLM reads the device's total: an "80 GB" H100 reports 79.19 GiB
    return replace(cal, kv_memory_fraction=1.0, inference_workspace_bytes=acc.hbm_bytes - mem_util * total
                   + rl_calibration()["engine_activation_bytes"])


@functools.lru_cache(maxsize=256)
def _generator_capacity(m, acc, precision, kv, prefill, generated, ctx, env_s, turns,
                        caching, pinned_tp=None, max_gpus=None, engine=(True, 512, 1024, 1.0),
                        mem_util=None, disagg=None, budget=None, kv_block=1, spec=None) -> GeneratorCapacity:
    """The serving instance: the throughput-best one (highest steady-state output per GPU within KV memory;
    :func:`_best_instance`, ``max_gpus`` the pool when it is smaller than that instance), or the pinned
    tensor-parallel degree. The pipeline also tries the tensor/expert-parallel instance of the same GPUs when this
    one uses attention DP (:func:`generator_capacities`); a wider automatic search is an open item (docs/validation.md,
    "Assumptions and known limits"); ``solve_split`` tries the wider tensor-parallel instances and says when one
    pays. ``disagg`` = (chunk tokens, pinned prefill GPUs)
    for a disaggregated generator: decode-only instances and a prefill pool (:func:`_prefill_pool`). ``budget``:
    the engine's tokens per step; an aggregated instance prefills each turn's new tokens whole, in as few steps
    as it allows (:func:`~tcocalc.roofline.serving.generation_throughput`, ``max_batched_tokens``). ``kv_block``: the
    engine's KV block in tokens (a trajectory holds whole blocks; ``kv_block_tokens``). ``spec``: speculative
    decoding as (draft tokens, acceptance rate, draft layers) (:mod:`tcocalc.roofline.speculative`)."""
    kw = dict(prompt_tokens=max(prefill, 1.0), response_tokens=max(generated, 1.0), precision=precision,
              kv_precision=kv, context_tokens=ctx, prompt_segments=max(turns, 1), max_batched_tokens=budget,
              kv_block_tokens=kv_block)
    if spec is not None:
        kw.update(speculative_tokens=spec[0], acceptance_rate=spec[1], draft_layers=spec[2])
    cal = _memory_calibration(acc, mem_util)
    if cal is not None:
        kw["_calibration"] = cal
    pool = None
    if disagg is not None:
        kw["interleaved_prefill"] = False
        pool = _prefill_pool(m, acc, cal or calibration_for(acc), precision, kv, prefill, turns, *disagg)
    if pinned_tp is not None:
        par = Parallelism(tp=pinned_tp, ep=pinned_tp if m.is_moe and m.num_experts % pinned_tp == 0 else 1)
        est = generation_throughput(m, acc, gpus=pinned_tp, parallel=par, **kw)
        b_max, weights = est.max_concurrency / est.replicas, est.weights_per_gpu_bytes
    else:
        best = _best_instance(m, acc, kw, max_gpus)
        par, b_max, weights = best.parallel, best.max_concurrency / best.replicas, best.weights_per_gpu_bytes
    cap = _fit(m, acc, par, kw, generated, ctx, env_s, turns, caching, precision, kv, b_max, weights, engine,
               prefill_s=None if pool is None else pool[1])
    if pool is None:
        return cap
    # one decode replica consumes the prefill of the trajectories it finishes (§4.9)
    demand = cap.b_op / float(cap.step_s(cap.b_op)) / max(generated, 1.0) * max(prefill, 1.0)
    return replace(cap, prefill_pool=replace(pool[0], demand_per_replica=demand), prefill_tokens_per_s=demand)


def _prefill_pool(m, acc, cal, precision, kv, prefill, turns, chunk, pinned) -> tuple[PrefillPool, float]:
    """The prefill pool of a disaggregated generator and one trajectory's prefill latency [s]: the throughput-best
    prefill instance at the engine's chunk (:func:`~tcocalc.roofline.disaggregated.prefill_pool_rate`) for
    prompts of ``prefill/turns`` tokens (each turn's new tokens are one prefill request), each turn's prefill
    alone on it plus the KV transfer of all ``prefill`` tokens (:func:`kv_transfer_seconds`; docs §4.9)."""
    from ..roofline.disaggregated import kv_transfer_seconds, prefill_pool_rate
    from ..roofline.forward import forward_cost, resolve_inputs

    _, _, precision, kv, _ = resolve_inputs(m, acc, precision, kv, None)  # the KV precision's default
    per_turn = max(prefill, 1.0) / max(turns, 1)
    rate = prefill_pool_rate(m, acc, cal, prompt_tokens=per_turn, precision=precision, kv_precision=kv,
                             chunk_tokens=chunk)
    if rate is None:
        raise InfeasibleError(f"generator.disaggregated: no prefill instance of {m.name} ({precision}) on "
                              f"{acc.name} holds a {per_turn:,.0f}-token prompt")
    par = rate.parallel
    if pinned is not None and pinned % par.gpus:
        raise ScenarioError("generator.prefill_gpus", f"must be a multiple of the prefill instance ({par.gpus} "
                                                      f"GPUs, {par.label()}), got {pinned}")
    one = forward_cost(m, acc, cal, par, precision=precision, kv_precision=kv, pre_seqs=1.0, pre_tokens=per_turn)
    t_kv = kv_transfer_seconds(m, acc, cal, par, kv, max(prefill, 1.0))
    latency = max(turns, 1) * float(one["stage_s"]) * par.pp + t_kv
    return PrefillPool(instance=par, instance_gpus=par.gpus, tokens_per_s_per_gpu=rate.tokens_per_s_per_gpu,
                       demand_per_replica=0.0, kv_transfer_s=t_kv, pinned_gpus=pinned), latency


def _capacity_args(scn, cluster: Cluster, ws: WorkloadStats) -> tuple:
    """The arguments of :func:`_generator_capacity` for this phase, in order (``pinned_tp`` at index 10, ``max_gpus``
    at index 11)."""
    g = scn.generator
    st = settings(scn)
    graph_max = min(st.cuda_graph_max_batch, 2 * st.max_num_seqs)  # vLLM: min(2 x max_num_seqs, 512)
    cpu = 1.0 if st.async_scheduling else 1.0 + rl_calibration()["engine_cpu_share"]
    engine = (st.cuda_graphs, graph_max, st.max_num_seqs, cpu)
    return (cluster.model, cluster.generator, g.precision, g.kv_precision, ws.prefill_tokens, ws.generated_per_kept,
            ws.context_tokens, ws.tool_s + ws.startup_s, ws.turns, scn.workload.prefix_caching, g.tp, None, engine,
            g.gpu_memory_utilization, (st.max_num_batched_tokens, g.prefill_gpus) if g.disaggregated else None,
            st.max_num_batched_tokens, g.kv_block_tokens if g.kv_block_tokens is not None
            else engine_kv_block_tokens(st.engine, cluster.model, cluster.generator),
            None if g.speculative_tokens is None else (g.speculative_tokens, g.acceptance_rate, g.draft_layers))


def generator_capacity(scn, cluster: Cluster, ws: WorkloadStats, max_gpus: int | None = None) -> GeneratorCapacity:
    """The generator's serving instance, step-time fit and steady-state rate for this phase (cached).

    ``max_gpus``: the largest generator pool it serves; when even that cannot hold the usual instance (a
    1-GPU generator, say), the best instance that fits in it is used instead."""
    return _steady_best(scn, _capacity_args(scn, cluster, ws), max_gpus)


def _steady_best(scn, args: tuple, max_gpus: int | None) -> GeneratorCapacity:
    cap = _generator_capacity(*args)
    if max_gpus is not None and scn.generator.tp is None and cap.instance_gpus > max_gpus:
        cap = _generator_capacity(*args[:11], int(max_gpus), *args[12:])
    return cap


def generator_capacities(scn, cluster: Cluster, ws: WorkloadStats, max_gpus: int | None = None) -> tuple:
    """The serving instances the RL flow should be tried on: :func:`generator_capacity`'s steady-state
    throughput-best first, then, when it spreads attention over data-parallel ranks, the tensor- and
    expert-parallel instance on the same GPUs (docs/rl-modeling.md §4.4). Attention DP wins fixed-length steady
    state (more sequences per GPU, no attention all-reduce) but decodes each sequence slower at a small batch,
    which an RL step's tail, staleness window and tool turns wait on: the Qwen3-235B-A22B generator of the
    SemiAnalysis scenario is one. No alternative when the instance is pinned (``generator.tp``) or disaggregated,
    or when it does not fit. The engine settings are resolved once for both."""
    args = _capacity_args(scn, cluster, ws)
    cap = _steady_best(scn, args, max_gpus)
    g = scn.generator
    if g.tp is not None or g.disaggregated or cap.instance.dp <= 1:
        return (cap,)
    try:
        return (cap, _generator_capacity(*args[:10], cap.instance_gpus, *args[11:]))
    except (InfeasibleError, ScenarioError):
        return (cap,)


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


def _layout_rates(m, acc, precision, seq, gbt, lay: Layouts) -> np.ndarray:
    """(tokens/s, MFU, state bytes per GPU) of each layout of ``lay`` (rows); zeros where it does not fit. A layout
    that does not fit on the GPUs alone offloads the optimizer (verl RL-08)."""
    cal = calibration_for(acc)
    gb = np.maximum(gbt / seq, lay.dp.astype(float))
    res = training_steps(m, acc, cal, lay, seq=seq, global_batch=gb, precision=precision)
    step, state = res["step_s"], res["state"]
    if not res["fits"].all():
        off = training_steps(m, acc, cal, lay, seq=seq, global_batch=gb, precision=precision, offload=True)
        step, state = np.where(res["fits"], step, off["step_s"]), np.where(res["fits"], state, off["state"])
    tps = np.where(np.isfinite(step), gb * seq / step, 0.0)
    mfu = m.training_flops_per_token(seq) * tps / (lay.gpus * acc.peak_flops_per_s(precision))
    return np.stack([tps, mfu, np.where(tps > 0, state, 0.0)], axis=-1)


@functools.lru_cache(maxsize=256)
def _families(m, acc, precision, seq, anchors: tuple[int, ...]) -> tuple[tuple[int, int, int, int, int], ...]:
    """(tp, pp, ep, vp, cp) families that win at the anchor GPU counts."""
    from ..roofline.training import DEFAULT_GLOBAL_BATCH_TOKENS

    fams = set()
    for n in anchors:
        lay = Layouts.of(candidate_degrees(m, acc, n, seq))
        if not len(lay):
            continue
        tps = _layout_rates(m, acc, precision, seq, DEFAULT_GLOBAL_BATCH_TOKENS, lay)[:, 0]
        fit = np.flatnonzero(tps > 0)
        for i in fit[np.argsort(-tps[fit], kind="stable")][:3]:  # the three fastest, the first of equals first
            fams.add((int(lay.tp[i]), int(lay.pp[i]), int(lay.ep[i]), int(lay.vp[i]), int(lay.cp[i])))
    return tuple(sorted(fams))


def _layout_rate(m, acc, precision, seq, gbt, par: Parallelism) -> tuple[float, float, float]:
    """(tokens/s, MFU, state bytes per GPU) of one layout; zeros when it does not fit."""
    return tuple(float(x) for x in _layout_rates(m, acc, precision, seq, gbt, Layouts.of([par]))[0])


class _RateCache(dict):
    """Trainer rates per (model, accelerator, precision, sequence, batch tokens, families), each a dict by GPU count,
    filled a sweep at a time (:func:`_trainer_rates`); emptied when it holds more than 4,096 counts."""

    size = 0

    def cache_clear(self) -> None:
        self.clear()
        self.size = 0


_TRAINER_RATES = _RateCache()


def _trainer_rates(m, acc, precision, seq, gbt, ns, fams) -> np.ndarray:
    """(tokens/s, MFU, state bytes per GPU) of the best family member at each GPU count of ``ns`` (rows); zeros
    where nothing fits. The counts not cached yet are scored in one vectorised call."""
    ns = [int(n) for n in ns]
    key = (m, acc, precision, seq, gbt, fams)
    known = _TRAINER_RATES.get(key)
    todo = sorted({n for n in ns if known is None or n not in known})
    if todo:
        if _TRAINER_RATES.size + len(todo) > 4096:
            _TRAINER_RATES.cache_clear()
        known = _TRAINER_RATES.setdefault(key, {})
        members, owner = [], []
        for j, n in enumerate(todo):
            for tp, pp, ep, vp, cp in fams:
                if n % (tp * pp * cp):
                    continue
                dp = n // (tp * pp * cp)
                if (tp * dp * cp) % ep or (m.is_moe and m.num_experts % ep):
                    continue
                members.append((tp, pp, dp, ep, vp, cp))
                owner.append(j)
        rates = _layout_rates(m, acc, precision, seq, gbt, Layouts.of(members)) if members else np.zeros((0, 3))
        owner = np.array(owner, dtype=int)
        for j, n in enumerate(todo):
            mine = np.flatnonzero(owner == j)
            best = (0.0, 0.0, 0.0)
            if len(mine) and rates[mine, 0].max() > 0:
                best = tuple(float(x) for x in rates[mine[int(np.argmax(rates[mine, 0]))]])
            known[n] = best
        _TRAINER_RATES.size += len(todo)
    return np.array([known[n] for n in ns], dtype=float).reshape(-1, 3)


def clear_caches() -> None:
    """Forget every generator and trainer rate computed so far (:func:`tcocalc.rl.pipeline.clear_caches` clears
    these and the step models' tables)."""
    for cache in (_generator_capacity, _families, _TRAINER_RATES, _pinned_rate):
        cache.cache_clear()


def pinned_layout(trainer, m, n: int) -> Parallelism | None:
    """The scenario's pinned trainer layout on ``n`` GPUs (unpinned degrees 1, ``dp`` the rest); ``None`` when
    ``tp·pp·cp`` does not divide ``n`` or the degrees do not fit the model (heads, experts, ``ep | tp·dp·cp``)."""
    tp, pp, cp, vp, ep = (getattr(trainer, k) or 1 for k in ("tp", "pp", "cp", "vp", "ep"))
    if n % (tp * pp * cp) or m.num_attention_heads % tp or (m.is_moe and m.num_experts % ep) or pp > m.num_layers:
        return None
    if not m.is_moe and ep > 1:
        return None
    try:
        return Parallelism(tp=tp, pp=pp, cp=cp, vp=vp, ep=ep, dp=n // (tp * pp * cp))
    except ValueError:
        return None


def smallest_fitting_layout(scn, cluster: Cluster, ws: WorkloadStats, n: int) -> Parallelism | None:
    """The fitting trainer layout on ``n`` GPUs with the fewest model-parallel GPUs (``tp·pp``, then ``tp``):
    what to suggest when a pinned layout does not divide or fit; ``None`` when nothing fits."""
    m, acc = cluster.model, cluster.trainer
    seq = float(max(256, round(ws.traj_tokens)))
    gbt = ws.samples_per_step * ws.traj_tokens / scn.trainer.minibatches_per_step
    order = sorted(candidate_degrees(m, acc, n, seq), key=lambda q: (q[0] * q[1] * q[5], q[0], q[1], q[3], q[4]))
    if not order:
        return None
    lay = Layouts.of(order)
    tps = _layout_rates(m, acc, scn.model.precision, seq, gbt, lay)[:, 0]
    return lay.at(int(np.argmax(tps > 0))) if (tps > 0).any() else None


@functools.lru_cache(maxsize=4096)
def _pinned_rate(m, acc, precision, seq, gbt, n, par) -> tuple[float, float, float]:
    return (0.0, 0.0, 0.0) if par is None else _layout_rate(m, acc, precision, seq, gbt, par)


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
    pass each (their measured share of the update, 0.12-0.64 with a median near 1/3: docs/sources.md
    §M.4), and the RL framework runs forward and backward ``o_RL`` slower than standalone Megatron (the preset's
    ``trainer_overhead``: 1.2 for NeMo RL, NVIDIA-NeMo/RL issue 2129; docs/rl-modeling.md §3.6). A pinned
    layout (``[trainer] tp, pp, ep, cp, vp``) replaces the search. Infeasible counts give 0.
    """
    t = scn.trainer
    m, hw = cluster.model, cluster.trainer
    precision = scn.model.precision
    seq = float(max(256, round(ws.traj_tokens)))
    gbt = ws.samples_per_step * ws.traj_tokens / scn.trainer.minibatches_per_step
    n_t = np.atleast_1d(np.asarray(n_t, dtype=int))
    if t.pinned_layout:
        rates = np.array([_pinned_rate(m, hw, precision, seq, gbt, int(n), pinned_layout(t, m, int(n)))
                          for n in n_t])
    else:
        lo, hi = int(n_t.min()), int(n_t.max())
        pow2 = [2 ** i for i in range(0, 20) if lo <= 2 ** i <= hi]
        anchors = tuple(sorted({lo, hi, int(np.median(n_t)), *pow2}))
        fams = _families(m, hw, precision, seq, anchors)
        rates = _trainer_rates(m, hw, precision, seq, gbt, n_t, fams)
        for i in np.flatnonzero(rates[:, 0] == 0):  # no winning family divides this count: search it fully
            rates[i] = _trainer_rates(m, hw, precision, seq, gbt, n_t[i:i + 1],
                                      _families(m, hw, precision, seq, (int(n_t[i]),)))[0]
    st = settings(scn)
    extra, overhead = st.extra_forward_passes, st.trainer_overhead
    flop_rate_per_token = m.training_flops_per_token(seq)
    f_sample = sample_flops(m, ws) * (1.0 + extra / 3.0) * overhead
    fits = rates[:, 0] > 0
    if t.mfu_busy is not None:  # a measured MFU replaces the training model; memory feasibility still applies
        peak = hw.peak_flops_per_s(precision)
        return TrainerRates(np.where(fits, n_t * peak * t.mfu_busy / (f_sample / overhead), 0.0),
                            np.where(fits, t.mfu_busy, 0.0), rates[:, 2])
    samples = rates[:, 0] * flop_rate_per_token / f_sample
    return TrainerRates(samples, rates[:, 1] / overhead, rates[:, 2])


def trainer_min_gpus(scn, cluster: Cluster, ws: WorkloadStats) -> int | None:
    """Smallest trainer GPU count that holds the model (the training model's ``min_gpus``; None if none)."""
    from ..roofline.training import training_throughput

    seq = float(max(256, round(ws.traj_tokens)))
    m, acc = cluster.model, cluster.trainer
    try:
        training_throughput(m, acc, gpus=1, seq_tokens=seq, precision=scn.model.precision)
        return 1
    except InfeasibleError as exc:
        return exc.min_gpus
