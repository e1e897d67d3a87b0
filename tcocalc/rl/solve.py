"""Evaluate a trainer/generator split, and solve for the best one (docs/rl-modeling.md §5).

:func:`evaluate` runs the staged model (:func:`~tcocalc.rl.pipeline.evaluate_splits`) for the scenario's
split, phase by phase, and combines the phases (:func:`~tcocalc.rl.report.combine_phases`).
:func:`solve_split` runs the same stages over every candidate split at once (vectorised), combines phases
the same way, and picks the best feasible split for the objective. A colocated scenario has one candidate
(its single pool) and goes through the same path.
"""

from __future__ import annotations

import numpy as np

from ..economics.tco import gpus_paid
from ..errors import InfeasibleError, ScenarioError
from ..scenario import Scenario
from .capacity import trainer_min_gpus
from .cluster import Cluster, resolve
from .flow import SYNC_MODES
from .phases import phase_list, workload_stats
from .pipeline import PhaseResult, evaluate_splits
from .report import OBJECTIVES, RLReport, assert_finite, combine_phases, scalar_metrics

__all__ = ["evaluate", "solve_split", "phase_results"]


def phase_results(scn: Scenario, cluster: Cluster, n_t, n_g) -> list[PhaseResult]:
    """The staged model for every phase of the run over candidate splits ``(n_t[i], n_g[i])``."""
    return [evaluate_splits(cluster, scn, workload_stats(scn, over, name, start, steps), n_t, n_g)
            for name, start, steps, over in phase_list(scn)]


def _check_sides(scn: Scenario, cluster: Cluster, res: PhaseResult, n_t: int, n_g: int) -> None:
    """InfeasibleError naming the side that cannot hold the model, with the smallest count that can."""
    m, gcap, ws = cluster.model, res.generator, res.workload
    if n_g < gcap.instance_gpus:
        raise InfeasibleError(
            f"generator: {n_g} x {scn.generator.hardware} cannot hold {m.name} ({scn.generator.precision}); "
            f"the smallest instance is {gcap.instance_gpus} GPUs ({gcap.instance.label()})",
            min_gpus=gcap.instance_gpus, layout=gcap.instance)
    if not bool(res.feasible[0]):
        need = trainer_min_gpus(scn, cluster, ws)
        raise InfeasibleError(
            f"trainer: {n_t} x {scn.trainer.hardware} cannot train {m.name} ({scn.model.precision}) on "
            f"{ws.traj_tokens:,.0f}-token trajectories; " + (f"at least {need} GPUs fit" if need else
                                                               "no GPU count up to 32,768 fits"), min_gpus=need)


def _phase_table(parts: list[tuple], results: list[PhaseResult]):
    import pandas as pd

    rows = []
    for (ws, met), res in zip(parts, results, strict=True):
        rows.append({"phase": ws.phase, "start_step": ws.start_step, "steps": ws.steps,
                     "duration [h]": ws.steps * met["step_time_s"] / 3600, **met,
                     "generator_instance": res.generator.instance.label()})
    return pd.DataFrame(rows)


def _evaluate_split(scn: Scenario, cluster: Cluster, n_t: int, n_g: int):
    results = phase_results(scn, cluster, [n_t], [n_g])
    for res in results:
        _check_sides(scn, cluster, res, n_t, n_g)
    parts = [(res.workload, scalar_metrics(res.metrics)) for res in results]
    metrics = scalar_metrics(combine_phases(scn, parts))
    assert_finite(metrics)
    details = {res.workload.phase: {"cluster": cluster, "workload": res.workload, "generator": res.generator,
                                    "flow": res.flow,
                                    "rates": res.rates, "staleness": res.staleness,
                                    "weight_sync_s": float(res.rates.t_sync[0]),
                                    "rollout_latency_s": float(res.flow.rollout_latency_s[0]),
                                    "trained_samples_per_s": float(res.flow.trained_per_s[0])}
               for res in results}
    return metrics, _phase_table(parts, results), details


def evaluate(scenario: Scenario) -> RLReport:
    """Metrics of the split given in the scenario (``trainer.gpus`` : ``generator.gpus``).

    Raises :class:`InfeasibleError` naming the side that cannot hold the model and the GPUs that would
    (``min_gpus``, and ``layout`` where a serving instance is meant).
    """
    scn = scenario
    metrics, phases, details = _evaluate_split(scn, resolve(scn), scn.trainer.gpus, scn.generator.gpus)
    return RLReport(scenario=scn, metrics=metrics, details=details, phases=phases,
                    advice=tuple(_advice(scn, metrics)))


def _advice(scn: Scenario, metrics: dict) -> list[str]:
    out = []
    ti, gi = metrics["trainer_idle_fraction"], metrics["generator_idle_fraction"]
    mode = scn.orchestration.mode
    if mode in ("async", "inflight"):
        if ti > 0.1 and gi < 0.05:
            out.append(f"Generation-bound: the trainer waits {ti:.0%} of the time. Move GPUs from the trainer "
                       f"to the generator (tc.solve_split finds the balance), cut response length or oversampling, "
                       f"or raise generator precision/KV capacity.")
        elif gi > 0.1:
            out.append(f"The generator is throttled {gi:.0%} of the time (trainer-bound or by the staleness cap "
                       f"{scn.orchestration.max_staleness}): move GPUs to the trainer or allow more staleness.")
    elif mode in SYNC_MODES and ti > 0.3:
        out.append(f"{mode}: the trainer idles {ti:.0%} of each step while rollouts finish (long tail). "
                   f"Asynchronous orchestration (one_step_off or async) overlaps the two.")
    if metrics["discarded_fraction"] > 0.4:
        out.append(f"{metrics['discarded_fraction']:.0%} of dispatched rollouts are thrown away (zero-advantage "
                   f"groups, oversampling, sandbox loss): curriculum filtering of always/never-solved prompts "
                   f"saves that generation.")
    return out


def _candidates(scn: Scenario, cluster: Cluster, granularity: int | None) -> tuple[np.ndarray, np.ndarray]:
    """Candidate (trainer, generator) GPU counts: every split in steps of ``granularity``; one shared pool
    when colocated."""
    if scn.orchestration.mode == "colocated":
        return np.array([scn.trainer.gpus]), np.array([scn.generator.gpus])
    total = scn.trainer.gpus + scn.generator.gpus
    if granularity is None:  # whole 8-GPU servers on real clusters; single GPUs on small ones
        granularity = 1 if total <= 64 else min(8, cluster.trainer.scaleup_domain_gpus,
                                                cluster.generator.scaleup_domain_gpus)
    if granularity < 1:
        raise ScenarioError("granularity", "must be at least 1")
    n_t = np.arange(granularity, total, granularity)
    if n_t.size == 0:
        raise InfeasibleError(f"{total} GPUs cannot be split into two pools in steps of {granularity}",
                              min_gpus=2 * granularity)
    return n_t, total - n_t


def _sweep_frame(n_t, n_g, paid, feasible, ok, combined: dict, peak_sandboxes, objective: str, best: int):
    """Every candidate with its run-level figures. Metric cells of infeasible splits are empty (pandas
    ``Float64`` NA, an empty CSV cell; flagged by ``feasible``), as is the cost per useful sample where no
    sample is useful: never a zero that sorts first, never a NaN."""
    import pandas as pd

    useful, usd_h = combined["useful_samples_per_s"], combined["usd_per_hour"]
    per_useful = np.divide(usd_h / 3600.0, useful, out=np.full(useful.shape, np.nan), where=useful > 0)
    metrics = {"step_time_s": combined["step_time_s"], "useful_samples_per_s": useful,
               "usd_per_useful_sample": per_useful, "usd_per_hour": usd_h,
               "mean_staleness_steps": combined["mean_staleness_steps"], "sandbox_concurrency": peak_sandboxes}
    for k in ("trainer_capacity_samples_per_s", "generator_capacity_samples_per_s", "trainer_idle_fraction",
              "generator_idle_fraction", "trainer_mfu"):
        metrics[k] = combined[k]
    cols = {"trainer_gpus": n_t, "generator_gpus": n_g, "trainer_share": n_t / paid, "feasible": feasible,
            "meets_constraints": ok}
    cols.update({k: pd.array(np.where(feasible, v, np.nan), dtype="Float64") for k, v in metrics.items()})
    sweep = pd.DataFrame(cols)
    sweep["objective"] = objective
    sweep["best"] = np.arange(len(n_t)) == best
    return sweep


def _score(objective: str, ok, metrics: dict):
    useful = metrics["useful_samples_per_s"]
    if objective == "usd_per_useful_sample":
        return np.where(ok, metrics["usd_per_hour"] / 3600.0 / np.maximum(useful, 1e-30), np.inf)
    return np.where(ok, -useful, np.inf)


def solve_split(scenario: Scenario, objective: str = "usd_per_useful_sample", *, granularity: int | None = None,
                max_staleness: float | None = None, max_sandboxes: int | None = None) -> RLReport:
    """Best trainer/generator split of the scenario's GPUs (``trainer.gpus + generator.gpus``).

    Every split in steps of ``granularity`` GPUs (default: 1 up to 64 GPUs, else the smaller scale-up
    domain, at most 8) is evaluated at once; splits where a side cannot hold the model are skipped.
    ``objective`` is ``"usd_per_useful_sample"`` (minimise) or ``"useful_samples_per_s"`` (maximise).
    Constraints: ``max_staleness`` [steps] on the mean staleness and ``max_sandboxes`` on live sandboxes
    (the peak over phases). With phases, the split is chosen for the whole run (time-weighted) and
    ``report.phases`` names the split each phase alone would want. ``report.sweep`` holds every candidate.
    A colocated scenario has one candidate: its single pool.
    """
    if objective not in OBJECTIVES:
        raise ScenarioError("objective", f"must be one of {OBJECTIVES}, got {objective!r}")
    scn = scenario
    cluster = resolve(scn)
    n_t, n_g = _candidates(scn, cluster, granularity)
    results = phase_results(scn, cluster, n_t, n_g)
    feasible = np.logical_and.reduce([res.feasible for res in results])
    combined = combine_phases(scn, [(res.workload, res.metrics) for res in results])
    peak_sandboxes = np.max([res.sandboxes for res in results], axis=0)
    ok = feasible.copy()
    if max_staleness is not None:
        ok &= combined["mean_staleness_steps"] <= max_staleness
    if max_sandboxes is not None:
        ok &= peak_sandboxes <= max_sandboxes
    if not ok.any():
        if scn.orchestration.mode == "colocated":
            evaluate(scn)  # the typed error naming the side that cannot hold the model
        why = "no split holds the model on both sides" if not feasible.any() else "no split meets the constraints"
        raise InfeasibleError(f"{why} with {int(n_t[0] + n_g[0])} GPUs ({scn.trainer.hardware} trainer, "
                              f"{scn.generator.hardware} generator)")
    best = int(np.argmin(_score(objective, ok, combined)))
    sweep = _sweep_frame(n_t, n_g, gpus_paid(scn, n_t, n_g), feasible, ok, combined, peak_sandboxes, objective, best)
    chosen = scn.with_split(int(n_t[best]), int(n_g[best]))
    report = evaluate(chosen)
    advice = list(report.advice)
    if scn.orchestration.mode == "colocated":
        advice.append("colocated: one pool, nothing to split")
    else:
        advice[:0] = _split_move(scn, report)
    phases_df = report.phases
    if len(results) > 1:
        wants = [int(np.argmin(_score(objective, ok, res.metrics))) for res in results]
        phases_df = phases_df.assign(wants_split=[f"{int(n_t[i])}:{int(n_g[i])}" for i in wants])
    return RLReport(scenario=chosen, metrics=report.metrics, details=report.details, phases=phases_df, sweep=sweep,
                    advice=tuple(advice))


def _split_move(scn: Scenario, report: RLReport) -> list[str]:
    """One line comparing the scenario's split with the solved one (nothing if the given split cannot run)."""
    try:
        before = evaluate(scn).metrics
    except InfeasibleError:
        return []
    after = report.metrics
    return [f"Split {scn.trainer.gpus}:{scn.generator.gpus} -> {int(after['trainer_gpus'])}:"
            f"{int(after['generator_gpus'])} (trainer:generator): trainer idle {before['trainer_idle_fraction']:.0%} "
            f"-> {after['trainer_idle_fraction']:.0%}, useful samples/s {before['useful_samples_per_s']:.3g} -> "
            f"{after['useful_samples_per_s']:.3g}, $/useful sample "
            f"{before['usd_per_hour'] / 3600 / before['useful_samples_per_s']:.3g} -> "
            f"{after['usd_per_hour'] / 3600 / after['useful_samples_per_s']:.3g}."]
