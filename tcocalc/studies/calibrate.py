"""Calibrate the RL model from a measured run: a pilot's logged times become per-stage factors (docs/calibration.md).

:func:`calibrate` takes the scenario of the measured run and its steady-state figures (a mapping, or the
:class:`~tcocalc.catalog.measurements.Measurements` :func:`~tcocalc.load_measurements` reads from a log):

1. the measured workload (mean and longest response, prompt, samples per step) replaces the scenario's assumed
   one: these are inputs, not factors (a logged mean response counts truncated responses at the cap, so the
   lognormal's mean before the cap is solved for, :func:`~tcocalc.rl.rollouts.uncapped_mean`);
2. the model's stage times for that run are compared with the measured ones: the step, the generation, the
   trainer's update, its log-prob passes, the weight push and, colocated, the pool's switch;
3. six named factors (:data:`~tcocalc.rl.run_factors.FACTOR_NAMES`: multipliers of the generator's, the update's,
   the log-prob passes', the push's and the switch's times, and a fixed per-step cost of the trainer loop) are
   fitted by least squares in log space with a prior on each (a maximum a posteriori estimate, the prior widths
   in data/rl_calibration.toml ``calibrate_*``): a measured stage pins its factor, and a residual only the step
   time shows is shared among the stages by prior variance x sensitivity (docs/calibration.md §2).

The result (:class:`RunCalibration`) says each factor and what moved it, the measured run's identity and, per
measured stage, the model before and after. ``scenario.with_run_calibration(cal)`` carries the factors into any
other plan, where they apply as far as its stack matches (:mod:`tcocalc.rl.run_factors`).
"""

from __future__ import annotations

import datetime as dt
import math
from collections.abc import Mapping
from dataclasses import dataclass, replace

import numpy as np

from ..errors import MeasurementError, ScenarioError
from ..rl.cluster import Cluster, resolve
from ..rl.phases import phase_list, workload_stats
from ..rl.pipeline import PhaseResult, evaluate_splits
from ..rl.rollouts import uncapped_mean
from ..rl.run_factors import FACTOR_NAMES, RunFactors
from ..rl.settings import settings
from ..rl.solve import evaluate
from ..scenario import CalibratedRun, CalibrationFactors, CalibrationSection, Scenario

__all__ = ["calibrate", "RunCalibration", "Factor", "StageFit", "TIME_KEYS", "WORKLOAD_KEYS", "MEASUREMENT_KEYS",
           "stage_times"]

TIME_KEYS = ("step_time_s", "generation_s", "training_s", "logprob_s", "weight_sync_s", "switching_s")
"""Measured times :func:`calibrate` fits [s per optimizer step, steady state]."""
WORKLOAD_KEYS = ("response_tokens_mean", "response_tokens_max", "prompt_tokens", "samples_per_step")
"""Measured workload figures that replace the scenario's assumed ones [tokens; samples per step]."""
MEASUREMENT_KEYS = TIME_KEYS + WORKLOAD_KEYS

#: The stage each factor scales, in words (for the printed calibration and docs/calibration.md).
SCALES = {
    "generation": "the generator engine's decode step line and prefill (time x factor)",
    "training": "the trainer's forward, backward and optimizer time (x factor)",
    "logprob": "the old-policy and reference log-prob passes (x factor)",
    "weight_sync": "the weight push to the generator (colocated: the in-process refit) (x factor)",
    "switching": "colocated: the pool's switch between trainer and engine (x factor)",
    "step_overhead_s": "a fixed per-step cost of the trainer loop (+ seconds)",
}
#: Which measured times move each factor directly (the step time moves them all).
_STAGE_OF = {"generation": "generation_s", "training": "training_s", "logprob": "logprob_s",
             "weight_sync": "weight_sync_s", "switching": "switching_s", "step_overhead_s": "step_time_s"}


@dataclass(frozen=True)
class Factor:
    """One fitted factor: its ``value`` (``unit`` "1" for a multiplier, "s" for the fixed cost), what it ``scales``,
    the measurements that moved it (``fitted_from``; empty when none did and it stays neutral) and whether the
    measured run's mode has the stage at all (``applies``)."""

    name: str
    value: float
    unit: str
    scales: str
    fitted_from: tuple[str, ...]
    applies: bool = True


@dataclass(frozen=True)
class StageFit:
    """One measured stage: the measured time and the model's before and after calibration [s per step];
    ``exposed``: the log times only the part the trainer waits for (compared with the model's trainer wait)."""

    stage: str
    measured_s: float
    before_s: float
    after_s: float
    exposed: bool = False

    @property
    def error_before(self) -> float:
        """Model over measured, less 1, before calibration [1]."""
        return self.before_s / self.measured_s - 1.0

    @property
    def error_after(self) -> float:
        """Model over measured, less 1, after calibration [1]."""
        return self.after_s / self.measured_s - 1.0


@dataclass(frozen=True)
class RunCalibration:
    """A calibration from a measured run (:func:`calibrate`): frozen and printable.

    ``factors`` (each with the measurement it came from), ``run`` (the measured run's identity: model, each pool's
    hardware and precision, engine, framework, mode, split, transport), ``stages`` (per measured stage, the model
    before and after), ``measured`` and ``workload`` (the measured figures, and the scenario keys they replaced),
    ``scenario`` (the measured run with its measured workload and this calibration applied), ``source``, ``date``
    and ``warnings``."""

    factors: tuple[Factor, ...]
    stages: tuple[StageFit, ...]
    run: CalibratedRun
    measured: tuple[tuple[str, float], ...]
    workload: tuple[tuple[str, float], ...]
    scenario: Scenario
    source: str
    date: str
    warnings: tuple[str, ...] = ()

    def factor(self, name: str) -> float:
        """The value of factor ``name`` (:data:`~tcocalc.rl.run_factors.FACTOR_NAMES`)."""
        for f in self.factors:
            if f.name == name:
                return f.value
        raise ScenarioError("factor", f"no factor {name!r}; factors: {', '.join(FACTOR_NAMES)}")

    def section(self) -> CalibrationSection:
        """The ``[calibration]`` table a scenario carries (:meth:`Scenario.with_run_calibration`)."""
        return CalibrationSection(source=self.source, date=self.date, run=self.run,
                                  factors=CalibrationFactors(**{f.name: f.value for f in self.factors}),
                                  measured=dict(self.measured))

    def to_frame(self):
        """Per measured stage: measured, model before and after [s], errors [%] (DataFrame)."""
        import pandas as pd

        return pd.DataFrame([{"stage": s.stage, "measured [s]": s.measured_s, "model before [s]": s.before_s,
                              "model after [s]": s.after_s, "error before [%]": 100.0 * s.error_before,
                              "error after [%]": 100.0 * s.error_after, "exposed only": s.exposed}
                             for s in self.stages])

    def factors_frame(self):
        """Every factor: value, unit, what it scales and the measurements it came from (DataFrame)."""
        import pandas as pd

        return pd.DataFrame([{"factor": f.name, "value": f.value, "unit": f.unit, "scales": f.scales,
                              "fitted from": ", ".join(f.fitted_from) or "(no measurement: neutral)",
                              "applies to the measured run": f.applies} for f in self.factors])

    def __str__(self) -> str:
        r = self.run
        lines = [f"Calibration from {self.source} ({self.date}): {r.model}, {r.trainer_gpus} x {r.trainer_hardware} "
                 f"trainer ({r.trainer_precision}), {r.generator_gpus} x {r.generator_hardware} generator "
                 f"({r.generator_precision}, KV {r.kv_precision}, {r.engine}), {r.framework}, {r.mode}",
                 f"{'stage':<16}{'measured [s]':>14}{'before [s]':>12}{'after [s]':>12}{'before':>9}{'after':>9}"]
        for s in self.stages:
            lines.append(f"{s.stage + (' (exposed)' if s.exposed else ''):<16}{s.measured_s:>14,.2f}"
                         f"{s.before_s:>12,.2f}{s.after_s:>12,.2f}{s.error_before:>+9.0%}{s.error_after:>+9.0%}")
        lines.append("factors:")
        for f in self.factors:
            value = f"{f.value:,.3g} s" if f.unit == "s" else f"x{f.value:.3g}"
            lines.append(f"  {f.name:<16}{value:>10}  {f.scales}; from "
                         f"{', '.join(f.fitted_from) or 'no measurement (neutral)'}")
        lines += [f"warning: {w}" for w in self.warnings]
        return "\n".join(lines)

    def _repr_html_(self) -> str:
        from html import escape

        head = escape(str(self).splitlines()[0])
        return (f"<div><b>{head}</b>{self.to_frame().to_html(index=False, float_format='{:,.3g}'.format)}"
                f"{self.factors_frame().to_html(index=False, float_format='{:,.3g}'.format)}"
                + "".join(f"<p>warning: {escape(w)}</p>" for w in self.warnings) + "</div>")


# ---------------------------------------------------------------- checking what was measured
def _measured(measurements) -> tuple[dict[str, float], set[str], list[str]]:
    """(figures by key, keys logged as exposed time only, warnings) of a measurements mapping; MeasurementError
    naming the key for a value that is not a finite number above zero, or when no time is given."""
    if not isinstance(measurements, Mapping):
        raise MeasurementError("measurements", f"expected a mapping of measured figures (or tc.load_measurements' "
                                               f"result), got {type(measurements).__name__}")
    out, warnings = {}, []
    # the longest response a log shows is information, not the cap (tcocalc/logs: response_tokens_longest)
    unknown = sorted(str(k) for k in measurements if k not in MEASUREMENT_KEYS and k != "response_tokens_longest")
    if unknown:
        warnings.append(f"measurements: ignored unknown key{'s' if len(unknown) > 1 else ''} "
                        f"{', '.join(unknown)}; known: {', '.join(MEASUREMENT_KEYS)}")
    for key in MEASUREMENT_KEYS:
        if key not in measurements:
            continue
        value = measurements[key]
        if isinstance(value, bool) or not isinstance(value, int | float | np.number):
            raise MeasurementError(f"measurements.{key}", f"expected a number, got {value!r}", key=key)
        value = float(value)
        if not math.isfinite(value) or value <= 0:
            raise MeasurementError(f"measurements.{key}", f"must be a finite number above zero, got {value!r}",
                                   key=key)
        out[key] = value
    if not any(k in out for k in TIME_KEYS):
        raise MeasurementError("measurements", f"no time measured: give at least one of {', '.join(TIME_KEYS)} "
                                               "[s per step]")
    exposed = {k for k in getattr(measurements, "exposed", ()) if k in out}
    warnings += [str(w) for w in getattr(measurements, "warnings", ())]
    return out, exposed, warnings


def _with_workload(scn: Scenario, meas: dict[str, float], warnings: list[str]) -> tuple[Scenario, dict]:
    """The scenario with the measured workload (module docstring, step 1) and the scenario keys it set."""
    w, values = scn.workload, {}
    if "prompt_tokens" in meas:
        values["workload.prompt_tokens"] = meas["prompt_tokens"]
    if "response_tokens_max" in meas:
        values["workload.response_tokens_max"] = max(meas["response_tokens_max"], meas.get("response_tokens_mean",
                                                                                          0.0))
    if "samples_per_step" in meas:
        prompts = meas["samples_per_step"] / w.group_size
        whole = max(1, round(prompts))
        if abs(prompts - whole) > 1e-6 * prompts:
            warnings.append(f"measurements: samples_per_step {meas['samples_per_step']:g} is not a whole number of "
                            f"groups of {w.group_size}; {whole} prompts per step ({whole * w.group_size} samples)")
        values["workload.prompts_per_step"] = int(whole)
    out = scn.with_values(values) if values else scn
    if "response_tokens_mean" in meas:
        cap = out.workload.response_tokens_max
        mean = meas["response_tokens_mean"]
        if cap is not None:
            if mean >= cap:
                raise MeasurementError("measurements.response_tokens_mean", f"the mean response {mean:,.0f} is "
                                       f"not below the cap {cap:,.0f} (workload.response_tokens_max or the "
                                       f"measured response_tokens_max)", key="response_tokens_mean")
            name, start, steps, over = phase_list(out)[0]
            mean = uncapped_mean(mean, workload_stats(out, over, name, start, steps).sigma, cap)
        out = out.with_response_mean(mean)
        values["workload.response_tokens_mean"] = out.workload.response_tokens_mean
    return out, values


def _check_consistency(scn: Scenario, meas: dict[str, float], tol: float) -> None:
    """MeasurementError naming the phases when they cannot fit in the measured step: a step whose phases run one
    after another (colocated, sync) shorter than their sum, or any step shorter than the trainer's own work."""
    step = meas.get("step_time_s")
    if step is None:
        return
    if scn.orchestration.traits.alternates:
        keys, what = [k for k in TIME_KEYS[1:] if k in meas], "phases, which run one after another in this mode"
    else:
        keys, what = [k for k in ("training_s", "logprob_s") if k in meas], "trainer's own work"
    total = sum(meas[k] for k in keys)
    if keys and total > step * (1.0 + tol):
        raise MeasurementError("measurements.step_time_s", f"step_time_s {step:,.3g} s is shorter than the {what} "
                               f"({' + '.join(keys)} = {total:,.3g} s): check the timers' nesting or the "
                               f"orchestration mode ({scn.orchestration.mode})", key="step_time_s")


# ---------------------------------------------------------------- the model's stage times
@dataclass(frozen=True)
class _RunModel:
    """The measured run's model, cheap to re-run under trial factors: its first phase's workload, the split, the
    uncalibrated cluster, the extra forward passes, and the colocated push's switch part (``switch_s``, linear in
    its factor)."""

    scn: Scenario
    cluster: Cluster
    ws: object
    extra: int
    switch_s: float

    @classmethod
    def of(cls, scn: Scenario, cluster: Cluster) -> _RunModel:
        name, start, steps, over = phase_list(scn)[0]
        ws = workload_stats(scn, over, name, start, steps)
        model = cls(scn, cluster, ws, settings(scn, cluster).extra_forward_passes, 0.0)
        if scn.orchestration.traits.shared_pool:  # t_sync = S·k_switch + W·k_sync: S from two evaluations
            one = float(model.result(RunFactors()).rates.t_sync[0])
            two = float(model.result(RunFactors(switching=2.0)).rates.t_sync[0])
            model = replace(model, switch_s=two - one)
        return model

    def result(self, f: RunFactors) -> PhaseResult:
        return evaluate_splits(replace(self.cluster, run=f), self.scn, self.ws, [self.scn.trainer.gpus],
                               [self.scn.generator.gpus])

    def stages(self, f: RunFactors, exposed: set[str] = frozenset()) -> dict[str, float]:
        """The model's time per step of every stage the calibration can compare (module docstring)."""
        return stage_times(self.scn, self.result(f), f, self.extra, self.switch_s, exposed)


def stage_times(scn: Scenario, res: PhaseResult, f: RunFactors, extra: int, switch_s: float,
                exposed=frozenset()) -> dict[str, float]:
    """Per-step stage times [s] of one evaluated split (index 0) as a log would time them: the step; the generation
    (the batch's generation in a synchronous or periodic step; the generator's busy time per step when it streams;
    with ``exposed``, the trainer's wait); the update and the log-prob passes (the trainer's time split by their
    factors, ``k_train : k_logprob·n_extra/3``); the push and, colocated, the switch (``switch_s·k_switch``)."""
    flow, rates, traits = res.flow, res.rates, scn.orchestration.traits
    step = float(flow.step_s[0])
    if "generation_s" in exposed:
        gen = step * float(flow.trainer_idle[0])
    elif traits.streaming:
        gen = step * (1.0 - float(flow.generator_idle[0]))
    else:
        gen = float(rates.batch / flow.generator_capacity[0])
    t_train = float(rates.t_train[0])
    passes = f.logprob * extra / 3.0
    switch = switch_s * f.switching
    return {"step_time_s": step, "generation_s": gen, "training_s": t_train * f.training / (f.training + passes),
            "logprob_s": t_train * passes / (f.training + passes), "weight_sync_s": float(rates.t_sync[0]) - switch,
            "switching_s": switch}


# ---------------------------------------------------------------- the fit
def _free(model: _RunModel, meas: dict[str, float]) -> list[str]:
    """The factors the fit moves: those whose stage the measured run has (no log-prob factor without extra passes,
    no switch factor with two pools); the fixed per-step cost only when the step was measured."""
    out = ["generation", "training", "weight_sync"]
    if model.extra > 0:
        out.insert(2, "logprob")
    if model.switch_s > 0:
        out.append("switching")
    if "step_time_s" in meas:
        out.append("step_overhead_s")
    return out


def _factors(free: list[str], x) -> RunFactors:
    values = {name: (float(v) if name == "step_overhead_s" else math.exp(float(v))) for name, v in zip(free, x,
                                                                                                      strict=True)}
    return RunFactors(**values)


def _fit(model: _RunModel, meas: dict[str, float], exposed: set[str], free: list[str]) -> RunFactors:
    """The MAP factors: least squares over log factors (and the fixed cost in units of its prior scale) of the
    measured stages' log errors over the measurement's log-sd, plus each factor's prior term."""
    from scipy.optimize import least_squares

    cal = model.cluster.rl_cal
    sigma_m = cal["calibrate_measurement_sigma"]
    prior = {name: cal[f"calibrate_prior_{name}"] for name in free}
    keys = [k for k in TIME_KEYS if k in meas]
    scale = np.array([prior[n] if n == "step_overhead_s" else 1.0 for n in free])

    def residuals(u):
        f = _factors(free, u * scale)
        m = model.stages(f, exposed)
        fit = [(math.log(max(m[k], 1e-12)) - math.log(meas[k])) / sigma_m for k in keys]
        return np.array(fit + [v / prior[n] for n, v in zip(free, u * scale, strict=True)])

    lo = np.array([0.0 if n == "step_overhead_s" else math.log(0.02) for n in free]) / scale
    hi = np.array([meas["step_time_s"] if n == "step_overhead_s" else math.log(50.0) for n in free]) / scale
    res = least_squares(residuals, np.zeros(len(free)), bounds=(lo, hi), method="trf", diff_step=1e-4,
                        xtol=1e-10, ftol=1e-10, gtol=1e-10)
    x = res.x * scale
    if "step_overhead_s" in free and x[free.index("step_overhead_s")] < 1e-6:  # at its bound: no fixed cost
        x[free.index("step_overhead_s")] = 0.0
    return _factors(free, x)


def calibrate(scenario: Scenario, measurements, *, source: str | None = None, calibration=None) -> RunCalibration:
    """Fit the RL model's per-stage factors to a measured run (module docstring; docs/calibration.md).

    Parameters
    ----------
    scenario : the measured run (model, hardware, GPUs, mode, framework, workload); a ``[calibration]`` it carries
        is not used (the fit starts from the uncalibrated model).
    measurements : a mapping of steady-state figures, any subset of :data:`MEASUREMENT_KEYS` with at least one of
        :data:`TIME_KEYS` [s per optimizer step; tokens; samples per step], or what
        :func:`~tcocalc.load_measurements` returns (its keys logged as exposed time are compared with the model's
        trainer wait).
    source : what the figures came from (default: the Measurements' file and steps, else "measurements").
    calibration : a :class:`~tcocalc.catalog.calibration.CalibrationSet` instead of the shipped roofline factors.

    Raises MeasurementError (a ScenarioError) naming the key for a value that is not a finite number above zero, for
    no time at all, or for phase times that do not fit in the measured step for the mode; InfeasibleError when the
    measured run does not fit its hardware. Unknown keys are ignored with a warning, as are stages the mode does
    not have; a fitted factor outside the plausible range (data/rl_calibration.toml) adds a warning.
    """
    meas, exposed, warnings = _measured(measurements)
    base = scenario.with_values({"calibration": None}) if scenario.calibration is not None else scenario
    scn, workload = _with_workload(base, meas, warnings)
    cluster = resolve(scn, calibration)
    cal = cluster.rl_cal
    _check_consistency(scn, meas, cal["calibrate_consistency_tolerance"])
    evaluate(scn, calibration=calibration, advice=False)  # the typed error naming a side that cannot hold the model
    model = _RunModel.of(scn, cluster)
    meas = _applicable(model, meas, warnings)
    free = _free(model, meas)
    fitted = _fit(model, meas, exposed, free)
    before, after = model.stages(RunFactors(), exposed), model.stages(fitted, exposed)
    stages = tuple(StageFit(k, meas[k], before[k], after[k], k in exposed) for k in TIME_KEYS if k in meas)
    factors = tuple(_factor(name, fitted, free, meas) for name in FACTOR_NAMES)
    warnings += _implausible(factors, cal)
    st = settings(scn, cluster)
    g = scn.generator
    run = CalibratedRun(model=cluster.model.name, trainer_hardware=cluster.trainer.name,
                        trainer_precision=scn.model.precision, generator_hardware=cluster.generator.name,
                        generator_precision=g.precision,
                        kv_precision=g.kv_precision or ("fp8" if g.precision == "fp4" else g.precision),
                        engine=st.engine, framework=scn.orchestration.framework, mode=scn.orchestration.mode,
                        trainer_gpus=scn.trainer.gpus, generator_gpus=scn.generator.gpus, weight_sync=st.weight_sync)
    out = RunCalibration(factors=factors, stages=stages, run=run, measured=tuple(sorted(meas.items())),
                         workload=tuple(sorted(workload.items())), scenario=scn, source=source or _source(measurements),
                         date=dt.date.today().isoformat(), warnings=tuple(warnings))
    return replace(out, scenario=scn.with_run_calibration(out))


def _applicable(model: _RunModel, meas: dict[str, float], warnings: list[str]) -> dict[str, float]:
    """The measured times the model has a stage for: log-prob passes the framework does not run join the update
    (the trainer spent that time), a switch of a run with two pools is left out; each with a warning."""
    meas = dict(meas)
    if "logprob_s" in meas and model.extra == 0:
        warnings.append("measurements: logprob_s given but the framework preset runs no log-prob pass "
                        "(trainer.old_logprob_pass, trainer.reference_model): counted with training_s")
        meas["training_s"] = meas.get("training_s", 0.0) + meas.pop("logprob_s")
    if "switching_s" in meas and model.switch_s <= 0:
        warnings.append(f"measurements: switching_s given but a {model.scn.orchestration.mode} run has two pools "
                        "and no switch: left out")
        meas.pop("switching_s")
    return meas


def _factor(name: str, f: RunFactors, free: list[str], meas: dict[str, float]) -> Factor:
    stage = _STAGE_OF[name]
    moved = [k for k in TIME_KEYS if k in meas and (k == stage or k == "step_time_s")] if name in free else []
    return Factor(name=name, value=float(getattr(f, name)), unit="s" if name == "step_overhead_s" else "1",
                  scales=SCALES[name], fitted_from=tuple(moved), applies=name in free or name == "step_overhead_s")


def _implausible(factors, cal) -> list[str]:
    low, high = cal["calibrate_plausible_low"], cal["calibrate_plausible_high"]
    return [f"calibration: the fitted {f.name} factor x{f.value:.3g} is outside {low:g}-{high:g}: the run and the "
            f"scenario disagree beyond what calibration should absorb; check the response lengths, the layout "
            f"and the engine settings" for f in factors if f.unit == "1" and not low <= f.value <= high]


def _source(measurements) -> str:
    path = getattr(measurements, "source", None)
    if path is None:
        return "measurements"
    steps = getattr(measurements, "steps_used", None)
    if not steps:
        return str(path)
    return f"{path} (step {steps[0]})" if steps[0] == steps[1] else f"{path} (steps {steps[0]}-{steps[1]})"
