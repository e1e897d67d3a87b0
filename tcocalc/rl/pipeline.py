"""The RL model as named stages over candidate splits, one phase at a time (docs/rl-modeling.md §5).

``pool rates → flow (the mode's step model) → staleness → sandbox load → cluster cost → contract metrics``;
each stage is a pure function with a frozen, typed result (:class:`~tcocalc.rl.flow.Rates`,
:class:`~tcocalc.rl.flow.Flow`, :class:`~tcocalc.rl.staleness.Staleness`), so each can be called and
tested on its own and the simulator can hand its own measured :class:`~tcocalc.rl.flow.Flow` to the same
metric builder.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..economics.tco import cluster_usd_per_hour
from ..scenario import Scenario
from . import capacity
from .capacity import GeneratorCapacity, generator_alternatives, generator_capacity
from .cluster import Cluster
from .flow import STEP_MODELS, Flow, Rates, clear_tail_tables, pool_rates
from .phases import WorkloadStats
from .report import contract_metrics
from .sandboxes import sandbox_load
from .staleness import Staleness, staleness

__all__ = ["PhaseResult", "evaluate_splits", "clear_caches"]


@dataclass(frozen=True)
class PhaseResult:
    """Every stage's result for one phase over the candidate splits."""

    workload: WorkloadStats
    generator: GeneratorCapacity
    rates: Rates
    flow: Flow
    staleness: Staleness
    sandboxes: np.ndarray      # live sandboxes [sandbox]
    usd_per_hour: np.ndarray   # cluster cost [USD/h]
    metrics: dict              # contract metrics of the phase (arrays over splits)

    @property
    def feasible(self) -> np.ndarray:
        return self.rates.feasible


def evaluate_splits(cluster: Cluster, scn: Scenario, ws: WorkloadStats, n_t, n_g) -> PhaseResult:
    """All stages for splits ``(n_t[i], n_g[i])`` of one phase; infeasible splits are flagged, never NaN.

    The generator's instance is the steady-state throughput-best one unless an alternative on the same GPUs
    (:func:`~tcocalc.rl.capacity.generator_alternatives`) delivers more useful samples/s through this run's flow
    at the best of these splits: the instance a planner would pick for this run (docs/rl-modeling.md §4.4)."""
    gcap = generator_capacity(scn, cluster, ws, max_gpus=int(np.max(n_g)))  # a pool too small for the usual instance
    best = _stages(cluster, scn, ws, gcap, n_t, n_g)
    for alt in generator_alternatives(scn, cluster, ws, gcap):
        other = _stages(cluster, scn, ws, alt, n_t, n_g)
        if _best_useful(other) > _best_useful(best):
            best = other
    return best


def _best_useful(res: PhaseResult) -> float:
    """The most useful samples/s any feasible split of ``res`` delivers (0 when none is feasible)."""
    useful = np.where(res.feasible, res.metrics["useful_samples_per_s"], 0.0)
    return float(np.max(useful)) if np.size(useful) else 0.0


def _stages(cluster: Cluster, scn: Scenario, ws: WorkloadStats, gcap: GeneratorCapacity, n_t, n_g) -> PhaseResult:
    """The stages after the generator's capacity: pool rates, flow, staleness, sandboxes, cost and metrics."""
    rates = pool_rates(cluster, scn, ws, gcap, n_t, n_g)
    flow = STEP_MODELS[scn.orchestration.mode](scn, ws, gcap, rates)
    stale = staleness(scn, ws, gcap, flow)
    live = sandbox_load(scn, ws, flow)
    usd_h = cluster_usd_per_hour(scn, rates.n_t, rates.n_g, live * scn.sandbox.cpu_cores)
    metrics = contract_metrics(scn, ws, rates, flow, stale, live, usd_h)
    return PhaseResult(workload=ws, generator=gcap, rates=rates, flow=flow, staleness=stale, sandboxes=live,
                       usd_per_hour=usd_h, metrics=metrics)


def clear_caches() -> None:
    """Forget everything the staged model caches: generator and trainer rates (:mod:`.capacity`) and the tail
    rule's tables (:mod:`.flow`) - what a cold start measures, and what a trial calibration must drop."""
    capacity.clear_caches()
    clear_tail_tables()
