"""The RL model as named stages over candidate splits, one phase at a time (docs/rl-modeling.md §5).

``pool rates → flow (the mode's step model) → staleness → sandbox load → cluster cost → contract metrics``;
each stage is a pure function with a frozen, typed result (:class:`~tcocalc.rl.rates.Rates`,
:class:`~tcocalc.rl.rates.Flow`, :class:`~tcocalc.rl.staleness.Staleness`), so each can be called and
tested on its own and the simulator can hand its own measured :class:`~tcocalc.rl.rates.Flow` to the same
metric builder.
"""

from __future__ import annotations

import dataclasses

import numpy as np

from ..economics.tco import PoolPrice, cluster_usd_per_hour, gpus_paid
from ..scenario import Scenario
from . import capacity
from .capacity import GeneratorCapacity, generator_capacities
from .cluster import Cluster
from .phases import WorkloadStats, phase_list, workload_stats
from .rates import Flow, Rates, interruptible, pool_rates
from .report import contract_metrics
from .results import PhaseResult
from .rollouts import clear_makespan_memo
from .sandboxes import sandbox_load
from .staleness import Staleness, staleness
from .steps.registry import STEP_MODELS
from .steps.tail import clear_tail_tables

__all__ = ["PhaseResult", "evaluate_splits", "phase_results", "finish", "reprice", "same_flow", "clear_caches"]


def evaluate_splits(cluster: Cluster, scn: Scenario, ws: WorkloadStats, n_t, n_g, flows: dict | None = None
                    ) -> PhaseResult:
    """All stages for splits ``(n_t[i], n_g[i])`` of one phase; infeasible splits are flagged, never NaN.

    The generator's instance is the steady-state throughput-best one unless an alternative on the same GPUs
    (:func:`~tcocalc.rl.capacity.generator_capacities`) trains more samples/s through this run's flow at that
    split: the instance a planner would pick for this run on that split (docs/rl-modeling.md §4.4), chosen split by
    split, so every split of a sweep gets what :func:`~tcocalc.evaluate` gives it alone. Where splits choose
    different instances, every stage's arrays hold each split's own and ``generator`` is the first split's.

    ``flows``: a dict the caller keeps, which stores each instance's pool rates and flow on these splits and hands
    them back when asked again, for a caller that evaluates plans with the same rates and flows (:func:`same_flow`;
    the sizing study's async and inflight at one staleness bound): the stages after the flow run for each."""
    step_model = STEP_MODELS[scn.orchestration.mode]
    # max_gpus: a pool too small for the usual instance gets the best that fits
    gcap, *alternatives = generator_capacities(scn, cluster, ws, max_gpus=int(np.max(n_g)))

    def staged(g: GeneratorCapacity, over=None) -> tuple[Rates, Flow | None, np.ndarray]:
        """The instance's rates, its flow (always without ``over``; None where no split's ceiling is above
        ``over``) and the splits that may take it (feasible, ceiling above ``over``)."""
        key = (ws, g, np.asarray(n_t).tobytes(), np.asarray(n_g).tobytes())
        if flows is not None and key in flows:
            g_rates, g_flow = flows[key]
        else:
            g_rates, g_flow = pool_rates(cluster, scn, ws, g, n_t, n_g), None
        may = g_rates.feasible if over is None else g_rates.feasible & (_ceiling(g_rates, g) > over)
        if g_flow is None and (over is None or np.any(may)):
            g_flow = step_model(scn, ws, g, g_rates)
        if flows is not None:
            flows[key] = (g_rates, g_flow)
        return g_rates, g_flow, may

    rates, flow, _ = staged(gcap)
    prices = cluster.prices
    result = finish(scn, ws, gcap, rates, flow, prices=prices)
    for alt in alternatives:
        # a split whose ceiling on this instance is not above its flow cannot take it; no split: no flow computed
        alt_rates, alt_flow, may = staged(alt, over=result.flow.trained_per_s)
        if alt_flow is None:
            continue
        wins = may & (alt_flow.trained_per_s > result.flow.trained_per_s)
        if wins.all():
            result = finish(scn, ws, alt, alt_rates, alt_flow, prices=prices)
        elif wins.any():
            result = _merged(wins, finish(scn, ws, alt, alt_rates, alt_flow, prices=prices), result)
    return result


def finish(scn: Scenario, ws: WorkloadStats, gcap: GeneratorCapacity, rates: Rates, flow: Flow, *,
           prices: tuple[PoolPrice, PoolPrice], stale: Staleness | None = None, live=None) -> PhaseResult:
    """The stage tail of one instance's flow: staleness, sandbox load, cluster cost at the pools' ``prices``
    (``cluster.prices``) and the contract metrics. ``stale`` and ``live`` (live sandboxes) are taken as given where
    measured (the simulator's run), else derived from the flow; every caller that turns stages into metrics goes
    through here (evaluate, a sweep's re-pricing, the simulator)."""
    stale = staleness(scn, ws, gcap, flow, rates.settings) if stale is None else stale
    live = sandbox_load(scn, ws, flow) if live is None else live
    usd_h = cluster_usd_per_hour(scn, rates.n_t, rates.n_g, live * scn.sandbox.cpu_cores,
                                 tuple(p.usd_per_gpu_hour for p in prices))
    paid = gpus_paid(scn, rates.n_t, rates.n_g)
    metrics = contract_metrics(scn, ws, rates, flow, stale, live, usd_h, paid)
    return PhaseResult(workload=ws, generator=gcap, rates=rates, flow=flow, staleness=stale, sandboxes=live,
                       usd_per_hour=usd_h, metrics=metrics)


def reprice(scn: Scenario, result: PhaseResult, prices: tuple[PoolPrice, PoolPrice]) -> PhaseResult:
    """``result`` (one phase's stages) under ``scn``, a scenario that differs from the one evaluated only in
    economics, whose pools cost ``prices`` (:func:`~tcocalc.rl.cluster.plan_prices`): the same workload, rates, flow
    and staleness, then sandbox load, cluster cost and contract metrics again (:func:`finish`)."""
    return finish(scn, result.workload, result.generator, result.rates, result.flow, prices=prices,
                  stale=result.staleness)


def _pick(mask: np.ndarray, a, b):
    """``a`` where ``mask``, else ``b``, for one stage value: arrays and numbers split by split (equal numbers stay
    numbers), dicts key by key (a key only one side has is no limit on the other: infinite), frozen stage results
    field by field."""
    if a is b:
        return a
    if dataclasses.is_dataclass(a):
        return dataclasses.replace(a, **{f.name: _pick(mask, getattr(a, f.name), getattr(b, f.name))
                                         for f in dataclasses.fields(a)})
    if isinstance(a, dict):
        return {k: _pick(mask, a.get(k, np.inf), b.get(k, np.inf)) for k in {**a, **b}}
    if np.ndim(a) == 0 and np.ndim(b) == 0 and a == b:
        return a
    return np.where(mask, a, b)


def _merged(mask: np.ndarray, a: PhaseResult, b: PhaseResult) -> PhaseResult:
    """Split by split, ``a``'s stages where ``mask``, else ``b``'s (the first split's instance as ``generator``)."""
    return PhaseResult(workload=b.workload, generator=a.generator if mask.reshape(-1)[0] else b.generator,
                       rates=_pick(mask, a.rates, b.rates), flow=_pick(mask, a.flow, b.flow),
                       staleness=_pick(mask, a.staleness, b.staleness),
                       sandboxes=_pick(mask, a.sandboxes, b.sandboxes), usd_per_hour=_pick(mask, a.usd_per_hour,
                                                                                             b.usd_per_hour),
                       metrics=_pick(mask, a.metrics, b.metrics))


def phase_results(scn: Scenario, cluster: Cluster, n_t, n_g, flows: dict | None = None) -> list[PhaseResult]:
    """The staged model for every phase of the run over candidate splits ``(n_t[i], n_g[i])``. Phases with the same
    workload (all but their name, first step and length, which no stage reads) share one evaluation: a file of
    1,000 phases that repeat a few workloads costs a few. ``flows``: as :func:`evaluate_splits`'."""
    done: dict[WorkloadStats, PhaseResult] = {}
    out = []
    for name, start, steps, over in phase_list(scn):
        ws = workload_stats(scn, over, name, start, steps)
        key = dataclasses.replace(ws, phase="", start_step=0, steps=0)
        if key not in done:
            done[key] = evaluate_splits(cluster, scn, ws, n_t, n_g, flows)
        out.append(done[key] if done[key].workload == ws else dataclasses.replace(done[key], workload=ws))
    return out


def same_flow(a: Scenario, a_cluster: Cluster, b: Scenario, b_cluster: Cluster) -> bool:
    """Whether plan ``b`` gets plan ``a``'s pool rates and flow on every split, so that ``a``'s can stand for ``b``'s
    (:func:`evaluate_splits`' ``flows``): scenarios alike but for ``orchestration.mode``, whose modes run the same
    step model (:data:`~tcocalc.rl.steps.registry.STEP_MODELS`) with the same traits but for
    ``in_flight_updates``, which reaches the rates and the flow only through
    :func:`~tcocalc.rl.rates.interruptible` (the staleness stage, which reads it too, runs for each plan); resolved
    to clusters alike but for the run calibration's words about the mode (``across_modes``, ``warnings``). ``async``
    and ``inflight`` without partial rollout are such a pair."""
    ta, tb, oa = a.orchestration.traits, b.orchestration.traits, a.orchestration
    if (STEP_MODELS[oa.mode] is not STEP_MODELS[b.orchestration.mode] or interruptible(a) != interruptible(b)
            or dataclasses.replace(ta, name=tb.name, in_flight_updates=tb.in_flight_updates) != tb):
        return False
    if a.model_copy(update={"orchestration": oa.model_copy(update={"mode": b.orchestration.mode})}) != b:
        return False
    words = {"across_modes": "", "warnings": ()}
    return (dataclasses.replace(a_cluster, run=dataclasses.replace(a_cluster.run, **words))
            == dataclasses.replace(b_cluster, run=dataclasses.replace(b_cluster.run, **words)))


def _ceiling(rates: Rates, gcap: GeneratorCapacity) -> np.ndarray:
    """The most samples/s each split could train on this instance, whatever the step model [sample/s]: no more
    than the trainer's capacity ``μ_t`` (every step model's step holds a batch's training, ``B/μ_t``), and no more
    than the generator with every slot decoding and nothing prefilled again,
    ``n_rep·keep·S/(ḡ·(t0 + t1·S))`` (``S`` the slots, ``ḡ`` model tokens per dispatched trajectory): a replica
    decodes ``b/t(b)`` tokens/s, which grows with its decoding batch ``b ≤ S``, and every step model's decode runs on
    that step line (tails, tool time, re-prefill and pauses only lower it). ``rates.generator_samples_per_s`` is
    not a ceiling under an LRU prefix cache: it is the generator at the admission's full count, which thrashes the
    cache, while the async flow keeps fewer in flight (the queue and the finished group members hold no slot) and
    runs faster (§4.12). Infeasible splits: 0."""
    slots = np.maximum(np.asarray(rates.slots, dtype=float), 1.0)
    full = (np.maximum(rates.n_rep, 0) * rates.keep * slots
            / (rates.generated_per_dispatched * (gcap.t0 + gcap.t1 * slots)))
    gen = np.maximum(rates.generator_samples_per_s, full)
    return np.where(rates.feasible, np.minimum(rates.trainer_samples_per_s, gen), 0.0)


def clear_caches() -> None:
    """Forget everything the staged model caches: generator and trainer rates (:mod:`.capacity`), the tail
    rule's tables (:mod:`.steps.tail`) and the list-schedule makespans (:mod:`.rollouts`) - what a cold start
    measures, and what a trial calibration must drop."""
    capacity.clear_caches()
    clear_tail_tables()
    clear_makespan_memo()
