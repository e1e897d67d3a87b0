"""The split search behind :func:`~tcocalc.rl.solve.solve_split`: candidate splits through every stage at once
(vectorised), the objective as a score, the sweep table and the smallest cluster that reaches the best throughput
(docs/rl-modeling.md §5). Numbers only; the sentences about them are :mod:`tcocalc.rl.advice`'s.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from ..errors import InfeasibleError, ScenarioError
from ..scenario import GeneratorSection, Scenario, TrainerSection
from .cluster import Cluster
from .pipeline import PhaseResult, phase_results
from .report import combine_phases

__all__ = ["Sweep", "sweep", "granularity_of", "search", "objective_values", "score", "gain", "sweep_frame",
           "smallest_total", "SPLIT_TOLERANCE", "SIZING_SHARE", "MAX_CANDIDATES", "SIDE_MAX", "OBJECTIVE_LABEL"]

#: :func:`~tcocalc.rl.solve.solve_split` keeps the scenario's own split unless the best split improves the
#: objective by more than this share of the given split's value: smaller gains are below what the model can
#: resolve, and a move of GPUs for them is noise, not advice.
SPLIT_TOLERANCE = 0.01
#: Cluster sizing: the smallest total GPU count whose best split reaches this share of the best throughput.
SIZING_SHARE = 0.99
#: :func:`~tcocalc.rl.solve.solve_split` evaluates at most about this many splits in one pass; a larger cluster is
#: searched on a coarser grid first, then in full granularity between the coarse best's neighbours.
MAX_CANDIDATES = 1024
SIDE_MAX = min(next(m.le for m in sec.model_fields["gpus"].metadata if hasattr(m, "le"))
               for sec in (TrainerSection, GeneratorSection))  # the scenario's limit on either pool [GPU]
OBJECTIVE_LABEL = {"usd_per_useful_sample": "$/useful sample", "useful_samples_per_s": "useful samples/s"}


@dataclass(frozen=True)
class Sweep:
    """Candidate splits through every stage, phases combined, constraints applied."""

    n_t: np.ndarray
    n_g: np.ndarray
    results: list[PhaseResult]
    feasible: np.ndarray
    ok: np.ndarray              # feasible and within max_staleness / max_sandboxes
    combined: dict
    peak_sandboxes: np.ndarray


def sweep(scn: Scenario, cluster: Cluster, n_t, n_g, cons: tuple) -> Sweep:
    max_staleness, max_sandboxes = cons
    n_t, n_g = np.asarray(n_t, dtype=int), np.asarray(n_g, dtype=int)
    results = phase_results(scn, cluster, n_t, n_g)
    feasible = np.logical_and.reduce([res.feasible for res in results])
    combined = combine_phases(scn, [(res.workload, res.metrics) for res in results])
    peak = np.max([res.sandboxes for res in results], axis=0)
    ok = feasible.copy()
    if max_staleness is not None:
        ok &= combined["mean_staleness_steps"] <= max_staleness
    if max_sandboxes is not None:
        ok &= peak <= max_sandboxes
    return Sweep(n_t, n_g, results, feasible, ok, combined, peak)


def granularity_of(scn: Scenario, cluster: Cluster, granularity: int | None, total: int) -> int:
    if granularity is None:  # whole 8-GPU servers on real clusters; single GPUs on small ones
        granularity = 1 if total <= 64 else min(8, cluster.trainer.scaleup_domain_gpus,
                                                cluster.generator.scaleup_domain_gpus)
    if granularity < 1:
        raise ScenarioError("granularity", "must be at least 1")
    return granularity


def search(scn: Scenario, cluster: Cluster, granularity: int | None, objective: str, cons: tuple):
    """(granularity, sweep): every split in steps of the granularity, each side within the scenario's limit,
    plus the scenario's own split; coarse-to-fine above :data:`MAX_CANDIDATES` splits. Colocated: the pool."""
    if scn.orchestration.traits.shared_pool:
        return None, sweep(scn, cluster, [scn.trainer.gpus], [scn.generator.gpus], cons)
    total = scn.trainer.gpus + scn.generator.gpus
    g = granularity_of(scn, cluster, granularity, total)
    units = np.arange(max(1, -(-(total - SIDE_MAX) // g)), min((total - 1) // g, SIDE_MAX // g) + 1)
    if units.size == 0:
        raise InfeasibleError(f"{total} GPUs cannot be split into two pools in steps of {g}",
                              min_gpus=2 * g)
    step = -(-units.size // MAX_CANDIDATES)
    n_t = np.union1d(g * np.union1d(units[::step], units[-1:]), [scn.trainer.gpus])
    sw = sweep(scn, cluster, n_t, total - n_t, cons)
    if step > 1 and sw.ok.any():  # refine between the coarse best's neighbours
        i = int(np.argmin(score(objective, sw.ok, sw.combined)))
        lo, hi = n_t[max(i - 1, 0)], n_t[min(i + 1, n_t.size - 1)]
        n_t = np.union1d(n_t, g * units[(g * units > lo) & (g * units < hi)])
        sw = sweep(scn, cluster, n_t, total - n_t, cons)
    return g, sw


def objective_values(objective: str, metrics: dict):
    useful = metrics["useful_samples_per_s"]
    if objective == "usd_per_useful_sample":
        return metrics["usd_per_hour"] / 3600.0 / np.maximum(useful, 1e-30)
    return useful


def score(objective: str, ok, metrics: dict):
    """The objective as a score to minimise; infinite where the split is not allowed."""
    value = objective_values(objective, metrics)
    return np.where(ok, value if objective == "usd_per_useful_sample" else -value, np.inf)


def gain(before: float, after: float) -> float:
    """Relative improvement of a score (lower is better) from ``before`` to ``after``."""
    if not math.isfinite(before):
        return math.inf
    if after >= before:
        return 0.0
    return (before - after) / abs(before) if before != 0 else math.inf


def sweep_frame(sw: Sweep, paid, objective: str, best: int, chosen: int, given: int | None):
    """Every candidate with its run-level figures. Metric cells of infeasible splits are empty (pandas
    ``Float64`` NA, an empty CSV cell; flagged by ``feasible``), as is the cost per useful sample where no
    sample is useful. ``best``: the objective's optimum; ``chosen``: the split reported (the scenario's own
    when the optimum gains no more than :data:`SPLIT_TOLERANCE`); ``given``: the scenario's own split."""
    import pandas as pd

    c = sw.combined
    useful, usd_h = c["useful_samples_per_s"], c["usd_per_hour"]
    per_useful = np.divide(usd_h / 3600.0, useful, out=np.full(useful.shape, np.nan), where=useful > 0)
    metrics = {"step_time_s": c["step_time_s"], "useful_samples_per_s": useful, "usd_per_useful_sample": per_useful,
               "usd_per_hour": usd_h, "mean_staleness_steps": c["mean_staleness_steps"],
               "sandbox_concurrency": sw.peak_sandboxes}
    for k in ("trainer_capacity_samples_per_s", "generator_capacity_samples_per_s", "trainer_idle_fraction",
              "generator_idle_fraction", "trainer_mfu"):
        metrics[k] = c[k]
    cols = {"trainer_gpus": sw.n_t, "generator_gpus": sw.n_g, "trainer_share": sw.n_t / paid,
            "feasible": sw.feasible, "meets_constraints": sw.ok}
    cols.update({k: pd.array(np.where(sw.feasible, v, np.nan), dtype="Float64") for k, v in metrics.items()})
    sweep = pd.DataFrame(cols)
    sweep["objective"] = objective
    rows = np.arange(len(sw.n_t))
    sweep["best"] = rows == best
    sweep["chosen"] = rows == chosen
    sweep["given"] = rows == given
    return sweep


def smallest_total(scn: Scenario, cluster: Cluster, g: int | None, sw: Sweep, cons: tuple) -> dict | None:
    """The smallest total GPU count whose best split reaches :data:`SIZING_SHARE` of the sweep's best useful
    samples/s, trying the total and quarter-octave steps down (stopping at the first that falls short).
    Each smaller total tries trainer counts on a ladder of eight per octave (whole steps of the granularity)
    plus the best split's trainer share, all in one vectorised pass. None when no sample is useful."""
    useful = np.where(sw.ok, sw.combined["useful_samples_per_s"], 0.0)
    top = int(np.argmax(useful))
    x_best = float(useful[top])
    if x_best <= 0:
        return None
    colocated = g is None
    step = 1 if colocated else g
    total = int(sw.n_t[0]) if colocated else int(sw.n_t[0] + sw.n_g[0])
    found = {"total": total, "trainer_gpus": int(sw.n_t[top]), "generator_gpus": int(sw.n_g[top]),
             "useful_samples_per_s": x_best, "usd_per_hour": float(sw.combined["usd_per_hour"][top]),
             "best_useful_samples_per_s": x_best, "of_total": total}
    totals = sorted({int(total * 2.0 ** (-j / 4)) // step * step for j in range(1, 4 * total.bit_length() + 1)}
                    - {0}, reverse=True)
    totals = [t for t in totals if t < total and (colocated or t >= 2 * g)]
    if not totals:
        return found
    if colocated:
        pairs = np.array([(t, t) for t in totals])
    else:
        ladder = g * np.unique(np.round(2.0 ** (np.arange(8 * (total // g).bit_length() + 1) / 8)).astype(int))
        share = sw.n_t[top] / total
        pairs = np.array([(a, t - a) for t in totals
                          for a in np.union1d(ladder[ladder < t], [min(max(round(share * t / g), 1), t // g - 1) * g])
                          if a <= SIDE_MAX and t - a <= SIDE_MAX])
    small = sweep(scn, cluster, pairs[:, 0], pairs[:, 1], cons)
    x = np.where(small.ok, small.combined["useful_samples_per_s"], 0.0)
    sizes = pairs[:, 0] if colocated else pairs.sum(axis=1)
    for t in totals:
        idx = np.flatnonzero(sizes == t)
        k = int(idx[np.argmax(x[idx])])
        if x[k] < SIZING_SHARE * x_best:
            break
        found = {**found, "total": t, "trainer_gpus": int(pairs[k, 0]), "generator_gpus": int(pairs[k, 1]),
                 "useful_samples_per_s": float(x[k]), "usd_per_hour": float(small.combined["usd_per_hour"][k])}
    return found

