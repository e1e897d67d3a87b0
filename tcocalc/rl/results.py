"""What the model hands back, as values (issue 38): one phase's stage results, the diagnosis of a split, a
simulated run, and the report that carries them (pvlib's ModelChainResult, Vidur's ExecutionTime).

Every field can be read and jumped to: ``report.phase_results[0].flow``, ``report.diagnosis.warnings``,
``report.diagnosis.pricing`` (:class:`~tcocalc.economics.tco.PoolPrice` values), ``report.simulation.timeline``.
``report.details`` assembles the mapping that earlier versions returned, built from these fields and kept for
compatibility (docs/changes.md); new code reads the fields.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from ..economics.tco import PoolPrice
from ..scenario import Scenario
from .capacity import GeneratorCapacity
from .phases import WorkloadStats
from .rates import Flow, Rates
from .report import HEADLINE_METRICS, METRIC_UNITS, binding_text, metric_quantities
from .staleness import Staleness

__all__ = ["PhaseResult", "ReportWarning", "CalibrationStatus", "Trust", "Sizing", "Diagnosis", "SimulationRun",
           "RLReport"]


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


@dataclass(frozen=True)
class ReportWarning:
    """Something the planner should know before acting on the figures: ``kind`` (e.g. ``"few_useful_groups"``,
    ``"price_not_for_hardware"``), ``message`` (one sentence or more), the scenario ``keys`` that would change it
    (empty where none is named), the ``phase`` it concerns (None: the whole run) and the ``numbers`` it quotes
    (e.g. ``useful_group_fraction``, ``floor``)."""

    kind: str
    message: str
    keys: tuple[str, ...] = ()
    phase: str | None = None
    numbers: dict = field(default_factory=dict)

    def as_dict(self) -> dict:
        """The warning as the ``warnings`` of ``report.details`` gave it (``keys`` only where it names keys)."""
        keys = {"keys": list(self.keys)} if self.keys else {}
        return {"kind": self.kind, "phase": self.phase, **keys, "message": self.message, **self.numbers}


@dataclass(frozen=True)
class CalibrationStatus:
    """Whether a run calibration applies and from what: ``calibrated``, the ``source`` (None when uncalibrated),
    the ``factors`` that apply (name -> value; empty when uncalibrated), the ``dropped`` ones (name -> the keys
    whose stack differs), ``misfit`` (when the calibration's fit did not hold on its own measured run: the stage
    and its residual; then nothing applies, "" otherwise) and ``across_modes`` (why factors taken on a run of
    another mode carry a wider error; "" when the modes match)."""

    calibrated: bool
    source: str | None = None
    factors: dict = field(default_factory=dict)
    dropped: dict = field(default_factory=dict)
    misfit: str = ""
    across_modes: str = ""

    def as_dict(self) -> dict:
        return {"calibrated": self.calibrated, "source": self.source, "factors": dict(self.factors),
                "dropped": {name: list(keys) for name, keys in self.dropped.items()}, "misfit": self.misfit,
                "across_modes": self.across_modes}


@dataclass(frozen=True)
class Trust:
    """How far to trust the headline figures: ``typical_error`` (the median relative |error| of a step time
    predicted this way; uncalibrated, the leave-one-framework-out figure of the scenario's ``regime``, None where
    that regime has no out-of-sample evidence), ``within_25pct`` (the share of validation rows within ±25%, None
    likewise), ``basis`` (``"calibrated"`` or ``"uncalibrated"``), ``rows`` (validation rows), ``source`` (where the
    validation comes from), ``metrics`` (the figures it applies to, each following the step time one for one),
    ``regime`` (:func:`~tcocalc.catalog.regimes.regime_of`) and the ``frameworks`` behind the figure."""

    basis: str
    typical_error: float | None
    within_25pct: float | None
    rows: int
    source: str
    metrics: tuple[str, ...]
    regime: str | None = None
    frameworks: tuple[str, ...] = ()

    def as_dict(self) -> dict:
        return {"basis": self.basis, "typical_error": self.typical_error, "within_25pct": self.within_25pct,
                "rows": self.rows, "source": self.source, "metrics": self.metrics, "regime": self.regime,
                "frameworks": self.frameworks}


@dataclass(frozen=True)
class Sizing:
    """The smallest total GPU count whose best split reaches 99% of the best useful samples/s of ``of_total``
    GPUs (:func:`~tcocalc.solve_split`): ``total``, its split (``trainer_gpus``, ``generator_gpus``), that split's
    ``useful_samples_per_s`` and ``usd_per_hour``, and ``best_useful_samples_per_s`` of all the GPUs."""

    total: int
    trainer_gpus: int
    generator_gpus: int
    useful_samples_per_s: float
    usd_per_hour: float
    best_useful_samples_per_s: float
    of_total: int


@dataclass(frozen=True)
class Diagnosis:
    """What limits the split and what to know about the figures: ``binding_limits`` (phase -> the limits that cap
    its throughput: ``"trainer"``, ``"generator"``, ``"staleness"``, ``"sandbox_start"``,
    ``"sandbox_concurrency"``), ``warnings``, ``discards`` (the worst phase's shares of dispatched rollouts
    thrown away, by cause), ``pricing`` (each paid pool's price and why), ``calibration``, ``trust``, and
    ``sizing`` (:func:`~tcocalc.solve_split` only; None where no sample is useful or not solved)."""

    binding_limits: dict
    warnings: tuple[ReportWarning, ...]
    discards: dict
    pricing: tuple[PoolPrice, ...]
    calibration: CalibrationStatus
    trust: Trust
    sizing: Sizing | None = None


@dataclass(frozen=True)
class SimulationRun:
    """What a simulated run measured beside its metrics: the ``timeline`` (DataFrame, a row per step),
    ``staleness`` (Series: trained samples per staleness), the ``seed``, the ``steps`` simulated, the ``events``
    handled and the ``analytical`` metrics of the same scenario. A run without phases also gives ``warmup_steps``
    (left out of the steady state), ``aborted`` rollouts, rollouts ``lost_to_sandboxes``, ``dispatched`` rollouts
    and ``prefix_cache_hits`` (hits, returns); with phases, ``phases`` maps each phase to its simulated metrics."""

    timeline: object
    staleness: object
    seed: int
    steps: int
    events: int
    analytical: dict
    warmup_steps: int | None = None
    aborted: int | None = None
    lost_to_sandboxes: int | None = None
    dispatched: int | None = None
    prefix_cache_hits: tuple[int, int] | None = None
    phases: dict | None = None


@dataclass(frozen=True, repr=False)
class RLReport:
    """Result of :func:`~tcocalc.evaluate`, :func:`~tcocalc.solve_split` or :func:`~tcocalc.simulate`.

    ``metrics`` has exactly the contract's keys (:data:`~tcocalc.rl.report.METRIC_UNITS`); ``phase_results``
    each phase's stage results (:class:`PhaseResult`: workload, generator, rates, flow, staleness, cost; the
    simulator's measured ones for a simulated run without phases); ``cluster`` the resolved catalog objects;
    ``diagnosis`` (:class:`Diagnosis`) the binding limits, warnings, prices, calibration and trust; ``simulation``
    (:class:`SimulationRun`) what a simulated run measured; ``phases`` (DataFrame) the per-phase metrics and the
    split each phase wants; ``sweep`` (DataFrame) every candidate split when solved; ``advice`` says what to change.
    """

    scenario: Scenario
    metrics: dict
    phase_results: tuple[PhaseResult, ...] = ()
    cluster: object = None
    diagnosis: Diagnosis | None = None
    simulation: SimulationRun | None = None
    phases: object = None
    sweep: object = None
    advice: tuple[str, ...] = ()
    source: str = "analytical"

    @property
    def details(self) -> dict:
        """The mapping earlier versions returned, assembled from the fields (kept for compatibility; read the
        fields). Evaluated or solved: each phase's name -> its stage results (``cluster``, ``workload``,
        ``generator``, ``flow``, ``rates``, ``staleness``, ``weight_sync_s``, ``rollout_latency_s``,
        ``trained_samples_per_s``), and ``binding_limits``, ``warnings`` (dicts), ``discards``, ``pricing``
        (dicts), ``calibration``, ``trust``; solved also ``smallest_total_gpus_99pct`` and
        ``smallest_split_99pct``. Simulated: ``timeline``, ``staleness``, ``seed``, ``steps``, ``events``,
        ``analytical``, and per run without phases ``phase_metrics``, ``workload``, ``generator``, ``flow``,
        ``aborted``, ``lost_to_sandboxes``, ``dispatched``, ``warmup_steps``, ``prefix_cache_hits``; with phases
        ``phases`` (phase -> simulated metrics)."""
        if self.simulation is not None:
            return _simulation_details(self)
        out: dict = {res.workload.phase: {"cluster": self.cluster, "workload": res.workload,
                                          "generator": res.generator, "flow": res.flow, "rates": res.rates,
                                          "staleness": res.staleness, "weight_sync_s": float(res.rates.t_sync[0]),
                                          "rollout_latency_s": float(res.flow.rollout_latency_s[0]),
                                          "trained_samples_per_s": float(res.flow.trained_per_s[0])}
                     for res in self.phase_results}
        d = self.diagnosis
        if d is None:
            return out
        out.update(binding_limits=d.binding_limits, warnings=[w.as_dict() for w in d.warnings],
                   discards=d.discards, pricing=[p.as_dict() for p in d.pricing],
                   calibration=d.calibration.as_dict(), trust=d.trust.as_dict())
        if self.sweep is not None:
            s = d.sizing
            out["smallest_total_gpus_99pct"] = s and s.total
            out["smallest_split_99pct"] = s and (s.trainer_gpus, s.generator_gpus)
        return out

    def __repr__(self) -> str:
        m = self.metrics
        split = f"{m.get('trainer_gpus', 0):,.0f}:{m.get('generator_gpus', 0):,.0f} GPUs"
        head = ", ".join(f"{k} {m[k]:,.4g}" for k in ("step_time_s", "useful_samples_per_s", "usd_per_mtok_trained")
                         if m.get(k) is not None)
        fields = "metrics, phase_results, diagnosis, " + ("simulation, " if self.simulation else "") + \
            ("sweep, " if self.sweep is not None else "") + "phases, advice"
        return f"<RLReport ({self.source}) {self.scenario.name}: {split}, {head}; fields: {fields}>"

    def to_frame(self):
        """Metrics as a DataFrame: metric, value, unit, meaning."""
        import pandas as pd

        rows = [{"metric": k, "value": v, "unit": METRIC_UNITS[k][0], "meaning": METRIC_UNITS[k][1]}
                for k, v in self.metrics.items()]
        return pd.DataFrame(rows)

    def to_csv(self, path) -> None:
        """Write the metrics table as CSV (``value`` empty where Tinker does not offer the model) to a path (str or
        ``os.PathLike``) or a text buffer; ScenarioError names a path that is not one or cannot be written."""
        from ..errors import ScenarioError
        from ..workbook import output_path, sanitize

        target = output_path(path)
        frame = self.to_frame()
        text = frame.assign(**{c: frame[c].map(sanitize) for c in ("metric", "unit", "meaning")}).to_csv(index=False)
        if hasattr(target, "write"):
            target.write(text)
            return
        try:
            target.write_text(text, encoding="utf-8")
        except OSError as exc:
            raise ScenarioError("path", f"cannot write {str(path)!r}: {exc.strerror or exc}") from None

    def quantities(self) -> dict:
        """The metrics as pint quantities of ``tc.get_registry()`` (units of :data:`METRIC_UNITS`; None stays
        None): ``report.quantities()["step_time_s"].to("min")``."""
        return metric_quantities(self.metrics)

    def to_excel(self, path, *, scenario_file: str | None = None):
        """Write the report as an .xlsx workbook (:mod:`tcocalc.workbook`): inputs, metrics with units, phases,
        the split sweep when solved, cost lines and provenance; returns the path. ScenarioError names a path
        that cannot be written."""
        from ..economics.tco import cost_lines
        from ..workbook import report_sheets, write_workbook

        m = self.metrics
        costs = cost_lines(self.scenario, m["trainer_gpus"], m["generator_gpus"], m["sandbox_cpu_cores"],
                           self.cluster.prices)
        return write_workbook(path, report_sheets(self, METRIC_UNITS, costs, scenario_file=scenario_file))

    def _repr_html_(self) -> str:
        from ..display import metrics_card

        limits = self.diagnosis.binding_limits if self.diagnosis is not None else {}
        return metrics_card(f"RLReport ({self.source}): {self.scenario.name}", self.metrics, METRIC_UNITS,
                            keys=HEADLINE_METRICS, subtitle=self.scenario.description,
                            highlight=f"Binding limit: {binding_text(limits)}" if limits else "",
                            notes=self.advice)


def _simulation_details(report: RLReport) -> dict:
    s = report.simulation
    base = {"timeline": s.timeline, "staleness": s.staleness}
    if s.phases is not None:
        return {**base, "phases": s.phases, "seed": s.seed, "steps": s.steps, "events": s.events,
                "analytical": s.analytical}
    res = report.phase_results[0]
    return {**base, "events": s.events, "seed": s.seed,
            "phase_metrics": {k: float(np.ravel(v)[0]) for k, v in res.metrics.items()},
            "workload": res.workload, "generator": res.generator, "flow": res.flow, "aborted": s.aborted,
            "lost_to_sandboxes": s.lost_to_sandboxes, "dispatched": s.dispatched, "steps": s.steps,
            "warmup_steps": s.warmup_steps, "prefix_cache_hits": s.prefix_cache_hits, "analytical": s.analytical}
