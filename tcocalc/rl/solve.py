"""Evaluate a trainer/generator split, and solve for the best one (docs/rl-modeling.md §5).

:func:`evaluate` runs the staged model (:func:`~tcocalc.rl.pipeline.phase_results`) for the scenario's split, phase
by phase, and combines the phases (:func:`~tcocalc.rl.report.combine_phases`). :func:`solve_split` runs the same
stages over every candidate split at once (:mod:`tcocalc.rl.search`), combines phases the same way, and picks the
best feasible split for the objective, keeping the scenario's own split unless another gains more than
:data:`SPLIT_TOLERANCE`. A colocated scenario has one candidate (its single pool) and goes through the same path.

What limits the split is diagnosed as numbers (:mod:`tcocalc.rl.diagnosis`: ``report.diagnosis``, a
:class:`~tcocalc.rl.results.Diagnosis` with the binding limits and warnings; the other arrangements of the split)
and said in words (:mod:`tcocalc.rl.advice`: ``report.advice``); :func:`solve_split` also names what stops a
further move (the neighbouring splits) and the smallest total GPU count that would reach 99% of the best throughput
(cluster sizing).
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np

from ..catalog.calibration import prediction_errors, rl_calibration
from ..catalog.regimes import regime_errors, regime_of, regime_on
from ..economics.tco import gpus_paid, paid_pools
from ..errors import InfeasibleError, ScenarioError
from ..scenario import Scenario
from . import advice as words
from . import diagnosis
from .capacity import carried_mfu_ratio, check_sides
from .cluster import Cluster, resolve
from .diagnosis import USEFUL_GROUP_FLOOR, better_arrangements
from .phases import workload_stats
from .pipeline import phase_results
from .report import OBJECTIVES, assert_finite, combine_phases_at, outside_prices_on, scalar_metrics
from .results import CalibrationStatus, Diagnosis, PhaseResult, RLReport, Sizing, Trust
from .search import MAX_CANDIDATES, SIZING_SHARE, SPLIT_TOLERANCE, gain, score, search, smallest_total, sweep_frame

__all__ = ["evaluate", "solve_split", "phase_results", "calibration_status", "trust", "trust_of", "TRUST_METRICS",
           "SPLIT_TOLERANCE", "USEFUL_GROUP_FLOOR", "SIZING_SHARE", "MAX_CANDIDATES"]

TRUST_METRICS = ("step_time_s", "useful_samples_per_s", "usd_per_mtok_trained", "run_hours", "run_usd")
"""The figures a planner acts on; each carries the step time's relative error (data/prediction_errors.toml)."""


def _phase_table(parts: list[tuple], results: list[PhaseResult]):
    import pandas as pd

    rows = []
    for (ws, met), res in zip(parts, results, strict=True):
        row = {"phase": ws.phase, "start_step": ws.start_step, "steps": ws.steps,
               "duration [h]": ws.steps * met["step_time_s"] / 3600, **met,
               "generator_instance": res.generator.instance.label()}
        if res.generator.prefill_pool is not None:  # disaggregated: the prefill pool inside the generator GPUs
            row["prefill_gpus"] = int(res.generator.prefill_gpus(res.rates.n_g[:1])[0])
            row["prefill_instance"] = res.generator.prefill_pool.instance.label()
        rows.append(row)
    return pd.DataFrame(rows)


@dataclass(frozen=True)
class _Assessed:
    """One split evaluated: the report's parts, the stage results behind them, and the facts the words need."""

    metrics: dict
    phases: object
    diagnosis: Diagnosis
    results: tuple[PhaseResult, ...]
    facts: words.Facts


def _assess(scn: Scenario, cluster: Cluster, looser: bool = True) -> _Assessed:
    """The scenario's own split through every stage, with its :class:`Diagnosis` (warnings, binding limits,
    prices, calibration and typical error); ``looser=False`` skips the re-evaluation at one more step of staleness
    (only the advice quotes it)."""
    regime = regime_on(scn, cluster.trainer, cluster.generator)  # the trust figure's, on the resolved pools' chips
    n_t, n_g = scn.trainer.gpus, scn.generator.gpus
    results = phase_results(scn, cluster, [n_t], [n_g])
    for res in results:
        check_sides(scn, cluster, res, n_t, n_g)
    # a measured MFU carried to this chip: its ratio on the scenario's own workload (what the warning quotes)
    carried = carried_mfu_ratio(scn, cluster, workload_stats(scn)) if cluster.mfu_source == "carried" else None
    parts = [(res.workload, scalar_metrics(res.metrics)) for res in results]
    outside = outside_prices_on(scn, cluster.trainer, cluster.generator)
    metrics = scalar_metrics(combine_phases_at(scn, parts, outside))
    assert_finite(metrics)
    paid = [side for side, _ in paid_pools(scn, n_t, n_g)]  # one pool when colocated
    prices = diagnosis.pricing(cluster, paid)
    groups = diagnosis.group_warnings(scn, results)
    warnings = (diagnosis.outcome_warnings(scn, results, metrics, groups)
                + diagnosis.input_warnings(scn, cluster) + groups + diagnosis.pricing_warnings(prices)
                + diagnosis.mfu_warnings(scn, cluster, metrics, carried) + diagnosis.calibration_warnings(cluster))
    discards = diagnosis.discard_causes(results)
    limits, loose = diagnosis.binding_limits(scn, cluster, results, looser)  # re-evaluates at looser staleness
    found = Diagnosis(binding_limits=limits, warnings=tuple(warnings), discards=discards, pricing=prices,
                      calibration=calibration_status(cluster.run), trust=_run_trust(cluster.run, regime))
    return _Assessed(metrics, _phase_table(parts, results), found, tuple(results),
                     words.Facts(metrics, results[0], limits, loose))


def trust(calibrated: bool, regime: str | None = None) -> Trust:
    """How far to trust the headline figures (``report.diagnosis.trust``): the typical relative error of a step
    time predicted this way (``typical_error``; ``within_25pct``, the share of the validation rows within ±25%),
    whether that is the calibrated or the uncalibrated figure (``basis``), the validation it comes from, and the
    metrics it applies to (:data:`TRUST_METRICS`: each follows the step time one for one).

    Uncalibrated, the figure is the leave-one-framework-out error of the published runs of the scenario's
    ``regime`` (:func:`~tcocalc.catalog.regimes.regime_of`; data/prediction_errors.toml ``[regimes]``, from
    ``tcocalc validate --groups``), with the ``frameworks`` behind it; a regime without such runs (or no regime
    given) has ``typical_error`` and ``within_25pct`` None and ``rows`` 0: no out-of-sample evidence, never another
    regime's figure. Calibrated, it is the larger of the in-sample sibling pairs' and the out-of-sample pairs' of one
    mode (:func:`_calibrated_trust`)."""
    kind = "calibrated" if calibrated else "uncalibrated"
    e = prediction_errors()[kind]
    if calibrated:
        return _calibrated_trust(e, regime)
    r = regime_errors().get(regime) if regime is not None else None
    if r is None:
        return Trust(basis=kind, typical_error=None, within_25pct=None, rows=0,
                     source=f"no out-of-sample evidence for this regime ({regime or 'unknown'}): no published run of "
                            f"it in the leave-one-framework-out validation", metrics=TRUST_METRICS, regime=regime)
    return Trust(basis=kind, typical_error=r["median_abs_error"], within_25pct=r["within_25pct"], rows=r["rows"],
                 source=r["source"], metrics=TRUST_METRICS, regime=regime, frameworks=tuple(r["frameworks"]))


#: The calibration pairs behind ``calibrate_within_mode_error`` (data/rl_calibration.toml; one mode, scaled out).
WITHIN_MODE_PAIRS = ("C-06", "C-07")


def _calibrated_trust(in_sample: dict, regime: str | None) -> Trust:
    """The figure a plan calibrated on a run of its own mode states: the larger of the in-sample sibling pairs'
    median (data/prediction_errors.toml ``[calibrated]``: NeMo RL's and verl's study tables, on which the model's RL
    factors were fitted) and the out-of-sample pairs' (data/rl_calibration.toml ``calibrate_within_mode_error``,
    pairs :data:`WITHIN_MODE_PAIRS` of a framework no constant is fitted on), so that the stated error is never below
    the one measured out of sample (issue 36)."""
    rl = rl_calibration()
    oos = rl["calibrate_within_mode_error"]
    if not oos > in_sample["median_abs_error"]:
        return Trust(basis="calibrated", typical_error=in_sample["median_abs_error"],
                     within_25pct=in_sample["within_25pct"], rows=in_sample["rows"], source=in_sample["source"],
                     metrics=TRUST_METRICS, regime=regime)
    return Trust(basis="calibrated", typical_error=oos, within_25pct=rl["calibrate_within_mode_within_25pct"],
                 rows=len(WITHIN_MODE_PAIRS),
                 source=(f"data/rl_calibration.toml calibrate_within_mode_error (pairs {', '.join(WITHIN_MODE_PAIRS)}, "
                         f"out of sample: a run calibrated on its step time, carried to its scaled-out sibling of the "
                         f"same mode); in-sample sibling pairs {in_sample['median_abs_error']:.1%} over "
                         f"{in_sample['rows']} (data/prediction_errors.toml [calibrated])"),
                 metrics=TRUST_METRICS, regime=regime)


def trust_of(run, scenario: Scenario | None = None) -> Trust:
    """:func:`trust` of a resolved run calibration and the scenario's regime: the calibrated figure only where the
    calibration applies whole. The validation's calibrated rows share the measured run's model, hardware and
    framework, so no factor of theirs was dropped; a calibration that carries only some factors to this stack
    (another chip: the stage factors drop, the fixed per-step cost stays) is as good as the uncalibrated model on
    the stages it lost. Factors carried from a run of another mode (``run.across_modes``) get the error measured on
    such pairs (data/rl_calibration.toml ``calibrate_across_modes_error``)."""
    return _run_trust(run, None if scenario is None else regime_of(scenario))


def _run_trust(run, regime: str | None) -> Trust:
    """:func:`trust_of` in a regime already named (:func:`~tcocalc.catalog.regimes.regime_on` a resolved cluster)."""
    out = trust(run.calibrated and not run.dropped, regime)
    if run.calibrated and run.across_modes:  # a pilot of another mode: the error measured on such pairs
        rl = rl_calibration()
        out = replace(out, basis="calibrated across modes", typical_error=rl["calibrate_across_modes_error"],
                      within_25pct=rl["calibrate_across_modes_within_25pct"], rows=5,
                      source="data/rl_calibration.toml calibrate_across_modes_error (pairs C-01..C-05)")
    return out


def calibration_status(run) -> CalibrationStatus:
    """Whether a run calibration applies and from what (``report.diagnosis.calibration``): ``calibrated``,
    ``source``, the ``factors`` that apply, the ``dropped`` ones with the keys that differ and, when the calibration's
    fit did not hold on its own measured run, why (``misfit``: the stage and its residual; then nothing applies)."""
    return CalibrationStatus(calibrated=run.calibrated, source=run.source,
                             factors=run.applied() if run.calibrated else {},
                             dropped={name: tuple(keys) for name, keys in run.dropped}, misfit=run.misfit,
                             across_modes=run.across_modes)


def evaluate(scenario: Scenario, *, calibration=None, advice: bool = True) -> RLReport:
    """Metrics of the split given in the scenario (``trainer.gpus`` : ``generator.gpus``).

    ``report.phase_results`` holds each phase's stage results (:class:`~tcocalc.rl.results.PhaseResult`) and
    ``report.diagnosis`` (:class:`~tcocalc.rl.results.Diagnosis`) what they mean: ``binding_limits`` maps each phase
    to the limits that cap its throughput (``"trainer"``, ``"generator"``, ``"staleness"``, ``"sandbox_start"``,
    ``"sandbox_concurrency"``); ``warnings`` (:class:`~tcocalc.rl.results.ReportWarning` values: ``kind``,
    ``message``, ``keys``, ``phase``, ``numbers``) names workloads in which hardly any group carries signal,
    settings that cannot be used, prices and calibration factors that do not carry over; ``pricing`` each paid
    pool's price (:class:`~tcocalc.economics.tco.PoolPrice`); ``calibration`` whether a run calibration applies
    and from what, ``trust`` the typical error of the headline figures; ``report.advice`` says it all in words
    (``report.details``, the earlier mapping, is kept for compatibility). Raises :class:`InfeasibleError`
    naming the side that cannot hold the model and the GPUs that would (``min_gpus``, and ``layout`` where a serving
    instance is meant). ``calibration``: a :class:`~tcocalc.catalog.calibration.CalibrationSet` (trial factors,
    e.g. the fit script's) instead of the shipped ones, carried in the resolved cluster to every stage.

    ``advice=False`` writes no advice (``report.advice`` is empty) and skips the evaluations only the advice needs
    (the other prefill/decode arrangement, multi-node NVLink, one more step of staleness): the metrics, phases,
    binding limits and warnings are the same (what a sweep's points and a calibration fit run). With advice,
    ``evaluate`` pays for those two alternative arrangements; the wider generator instances only
    :func:`solve_split` tries.
    """
    scn = scenario
    cluster = resolve(scn, calibration)
    a = _assess(scn, cluster, looser=advice)
    report = RLReport(scenario=scn, metrics=a.metrics, phase_results=a.results, cluster=cluster,
                      diagnosis=a.diagnosis, phases=a.phases)
    if not advice:
        return report
    lines = [w.message for w in a.diagnosis.warnings] + words.limit_lines(scn, a.facts, solved=False)
    general = words.general_advice(scn, a.metrics, a.diagnosis.discards)
    found = better_arrangements(scn, cluster, a.metrics)
    return replace(report, advice=tuple(lines + [words.arrangement_line(x) for x in found] + general))


def solve_split(scenario: Scenario, objective: str = "usd_per_useful_sample", *, granularity: int | None = None,
                max_staleness: float | None = None, max_sandboxes: int | None = None,
                calibration=None) -> RLReport:
    """Best trainer/generator split of the scenario's GPUs (``trainer.gpus + generator.gpus``).

    Every split in steps of ``granularity`` GPUs (default: 1 up to 64 GPUs, else the smaller scale-up
    domain, at most 8), each side within the scenario's per-pool limit, and the scenario's own split are
    evaluated at once (above :data:`MAX_CANDIDATES` splits: a coarser grid, then full granularity around its
    best); splits where a side cannot hold the model are skipped. ``objective`` is
    ``"usd_per_useful_sample"`` (minimise) or ``"useful_samples_per_s"`` (maximise). The scenario's own split
    is kept unless the best split improves the objective by more than ``SPLIT_TOLERANCE`` (1%) of its value.
    Constraints: ``max_staleness`` [steps] on the mean staleness and ``max_sandboxes`` on live sandboxes
    (the peak over phases). With phases, the split is chosen for the whole run (time-weighted) and
    ``report.phases`` names the split each phase alone would want. ``report.sweep`` holds every candidate
    (``best``, ``chosen`` and ``given`` flag rows). A colocated scenario has one candidate: its single pool.

    ``report.advice`` compares the scenario's split with the chosen one, names what limits the chosen one and
    why neither neighbouring split is taken, and, when fewer GPUs would do, the cluster size:
    ``report.diagnosis.sizing`` (:class:`~tcocalc.rl.results.Sizing`) is the smallest total GPU count (the
    scenario's total, then quarter-octave steps down) whose best split reaches :data:`SIZING_SHARE` (99%) of the best
    useful samples/s of all the GPUs, with that split (None when no sample is useful). The rest of
    ``report.diagnosis`` is as in :func:`evaluate`, and so is ``calibration``.
    """
    if objective not in OBJECTIVES:
        raise ScenarioError("objective", f"must be one of {OBJECTIVES}, got {objective!r}")
    scn = scenario
    cluster = resolve(scn, calibration)
    cons = (max_staleness, max_sandboxes)
    g, sw = search(scn, cluster, granularity, objective, cons)
    if not sw.ok.any():
        total = int(sw.n_t[0] + sw.n_g[0])
        if sw.feasible.any():
            named = " and ".join(f"{k} = {v:g}" for k, v in (("max_staleness", max_staleness),
                                                             ("max_sandboxes", max_sandboxes)) if v is not None)
            raise InfeasibleError(f"no split of the {total} GPUs (trainer.gpus + generator.gpus) meets the constraints "
                                  f"({named}); loosen them or add GPUs")
        try:  # the scenario's own split names the side that cannot hold the model, and what would
            evaluate(scn, calibration=calibration, advice=False)
        except InfeasibleError as exc:
            if scn.orchestration.traits.shared_pool:
                raise
            raise InfeasibleError(f"no split of the {total} GPUs (trainer.gpus + generator.gpus) holds the model on "
                                  f"both sides; at {scn.trainer.gpus}:{scn.generator.gpus}, {exc}",
                                  min_gpus=exc.min_gpus, layout=exc.layout) from None
        raise InfeasibleError(f"no split of the {total} GPUs (trainer.gpus + generator.gpus) holds the model on both "
                              f"sides ({scn.trainer.hardware} trainer, {scn.generator.hardware} generator)")
    scores = score(objective, sw.ok, sw.combined)
    best = int(np.argmin(scores))
    given = int(np.flatnonzero(sw.n_t == scn.trainer.gpus)[0])
    chosen = given if gain(scores[given], scores[best]) <= SPLIT_TOLERANCE else best
    chosen_scn = scn if chosen == given else scn.with_split(int(sw.n_t[chosen]), int(sw.n_g[chosen]))
    a = _assess(chosen_scn, cluster)
    found = smallest_total(scn, cluster, g, sw, cons)
    sizing = found and Sizing(**found)
    advice = [w.message for w in a.diagnosis.warnings]
    if scn.orchestration.traits.shared_pool:
        advice.append("colocated: one pool, nothing to split")
        advice += words.limit_lines(scn, a.facts, solved=True)
        advice += [words.arrangement_line(x) for x in better_arrangements(chosen_scn, cluster, a.metrics)]
    else:
        advice.append(words.split_line(scn, sw, scores, objective, given, chosen, best, a.metrics))
        advice += words.limit_lines(scn, a.facts, solved=True)
        advice.append(words.neighbour_line(scn, sw, scores, objective, g, chosen, cons))
        advice += [words.arrangement_line(x) for x in better_arrangements(chosen_scn, cluster, a.metrics,
                                                                              a.results)]
    advice += words.sizing_advice(sizing, a.metrics) + words.general_advice(scn, a.metrics, a.diagnosis.discards)
    phases_df = a.phases
    if len(sw.results) > 1:
        wants = [int(np.argmin(score(objective, sw.ok, res.metrics))) for res in sw.results]
        phases_df = phases_df.assign(wants_split=[f"{int(sw.n_t[i])}:{int(sw.n_g[i])}" for i in wants])
    table = sweep_frame(sw, gpus_paid(scn, sw.n_t, sw.n_g), objective, best, chosen, given)
    return RLReport(scenario=chosen_scn, metrics=a.metrics, phase_results=a.results, cluster=cluster,
                    diagnosis=replace(a.diagnosis, sizing=sizing), phases=phases_df, sweep=table,
                    advice=tuple(advice))
