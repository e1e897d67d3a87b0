"""Calibrate the RL model from a measured run: a pilot's logged times become per-stage factors (docs/calibration.md).

:func:`calibrate` takes the scenario of the measured run and its steady-state figures (a mapping, or the
:class:`~tcocalc.catalog.measurements.Measurements` :func:`~tcocalc.load_measurements` reads from a log):

1. the measured workload (mean and longest response, prompt, samples per step) replaces the scenario's assumed
   one: these are inputs, not factors (a logged mean response counts truncated responses at the cap, so the
   lognormal's mean before the cap is solved for, :func:`~tcocalc.rl.rollouts.uncapped_mean`);
2. the model's stage times for that run are compared with the measured ones: the step, the generation, the
   trainer's update, its log-prob passes, the weight push and, colocated, the pool's switch;
3. eight named factors (:data:`~tcocalc.rl.run_factors.FACTOR_NAMES`: multipliers of the generator engine's time,
   of a synchronous batch's wait for its slowest trajectories beyond it (the tail), of the update's, the log-prob
   passes', the push's and the switch's times, a fixed per-step cost of the trainer loop, and, when no response
   length was measured, a multiplier of the assumed response lengths) are
   fitted by least squares in log space with a prior on each (a maximum a posteriori estimate, the prior widths
   in data/rl_calibration.toml ``calibrate_*``): a measured stage pins its factor, and a residual only the step
   time shows is shared among the stages and the lengths by prior variance x sensitivity (docs/calibration.md §2).

The result (:class:`RunCalibration`) says each factor and what moved it, the measured run's identity and, per
measured stage, the model before and after. ``scenario.with_run_calibration(cal)`` carries the factors into any
other plan, where they apply as far as its stack matches (:mod:`tcocalc.rl.run_factors`).
"""

from __future__ import annotations

import datetime as dt
import math
import re
import warnings as _warnings
from collections.abc import Mapping
from dataclasses import dataclass, replace

import numpy as np

from ..errors import MeasurementError, ScenarioError, TcocalcError
from ..rl.capacity import extra_pass_units
from ..rl.cluster import Cluster, resolve
from ..rl.phases import phase_list, workload_stats
from ..rl.pipeline import PhaseResult, evaluate_splits
from ..rl.rollouts import uncapped_mean
from ..rl.run_factors import FACTOR_NAMES, RunFactors
from ..rl.solve import evaluate
from ..scenario import CalibratedRun, CalibrationFactors, CalibrationSection, Scenario

__all__ = ["calibrate", "RunCalibration", "Factor", "StageFit", "TIME_KEYS", "WORKLOAD_KEYS", "MEASUREMENT_KEYS",
           "EXPOSED_KEY", "EXPOSABLE", "stage_times", "run_stage_times", "calibrated_toml"]

TIME_KEYS = ("step_time_s", "generation_s", "training_s", "logprob_s", "weight_sync_s", "switching_s")
"""Measured times :func:`calibrate` fits [s per optimizer step, steady state]."""
WORKLOAD_KEYS = ("response_tokens_mean", "response_tokens_max", "prompt_tokens", "samples_per_step")
"""Measured workload figures that replace the scenario's assumed ones [tokens; samples per step]."""
MEASUREMENT_KEYS = TIME_KEYS + WORKLOAD_KEYS
EXPOSED_KEY = "exposed_generation_s"
"""The trainer's wait for the generation [s per step] (NeMo RL's ``exposed_generation``, verl's fully-async
``timing_s/wait``...): the part of the generation a streaming run does not hide, compared with the model's trainer
wait rather than with the whole generation (the same as ``generation_s`` marked exposed)."""
EXPOSABLE = ("generation_s",)
"""The measured times that may be given as exposed time (:func:`calibrate`'s ``exposed``)."""

#: The stage each factor scales, in words (for the printed calibration and docs/calibration.md).
SCALES = {
    "generation": "the generator engine's decode step line and prefill (time x factor)",
    "tail": "a synchronous batch's wait for its slowest trajectories, beyond the engine's throughput (x factor)",
    "training": "the trainer's forward, backward and optimizer time (x factor)",
    "logprob": "the old-policy and reference log-prob passes (x factor)",
    "weight_sync": "the weight push to the generator (colocated: the in-process refit) (x factor)",
    "switching": "colocated: the pool's switch between trainer and engine (x factor)",
    "step_overhead_s": "a fixed per-step cost of the trainer loop (+ seconds)",
    "responses": "the assumed response lengths, mean and p99 (x factor; fitted only when no length was measured)",
}
#: Which measured times move each factor directly (the step time moves them all).
_STAGE_OF = {"generation": "generation_s", "tail": "generation_s", "training": "training_s", "logprob": "logprob_s",
             "weight_sync": "weight_sync_s", "switching": "switching_s", "step_overhead_s": "step_time_s",
             "responses": None}  # the response lengths move every stage: every measured time moves it


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
    ``exposed``: the log times only the part the trainer waits for (compared with the model's trainer wait);
    ``rank_mean``: the log's timer is the engines' mean (compared with one engine's generation, a switch with the
    switch plus the last engine's excess: :func:`one_engine_scenario`)."""

    stage: str
    measured_s: float
    before_s: float
    after_s: float
    exposed: bool = False
    rank_mean: bool = False

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
    ``scenario`` (the measured run with its measured workload and this calibration applied), ``source``, ``date``,
    ``warnings``, ``misfit`` (why it is not calibrated; "" when it is), for a run that generates in synchronous
    batches, ``generation_parts``: the calibrated model's generation per step split into what it is made of
    (:func:`_generation_parts`) [s], and ``spread``: each fitted factor's posterior standard deviation (log units for
    a multiplier, seconds for the fixed cost; :func:`_posterior_sd`), so a factor the measured times hardly
    determine (a spread near its prior width, data/rl_calibration.toml ``calibrate_prior_*``) reads as such."""

    factors: tuple[Factor, ...]
    stages: tuple[StageFit, ...]
    run: CalibratedRun
    measured: tuple[tuple[str, float], ...]
    workload: tuple[tuple[str, float], ...]
    scenario: Scenario
    source: str
    date: str
    warnings: tuple[str, ...] = ()
    misfit: str = ""
    generation_parts: tuple[tuple[str, float], ...] = ()
    spread: tuple[tuple[str, float], ...] = ()

    @property
    def calibrated(self) -> bool:
        """The fit holds: every measured stage within its tolerance and the calibrated run within the physics
        (``misfit`` empty). When not, the factors are kept for inspection but apply nowhere."""
        return not self.misfit

    @property
    def status(self) -> str:
        """One line: "calibrated" or "not calibrated: <why>" (what every door says)."""
        return "calibrated" if self.calibrated else f"not calibrated: {self.misfit}"

    def factor(self, name: str) -> float:
        """The value of factor ``name`` (:data:`~tcocalc.rl.run_factors.FACTOR_NAMES`)."""
        for f in self.factors:
            if f.name == name:
                return f.value
        raise ScenarioError("factor", f"no factor {name!r}; factors: {', '.join(FACTOR_NAMES)}")

    @property
    def inferred_response_line(self) -> str:
        """One sentence on the mean response the measured times imply (the responses factor x the scenario's
        assumed mean), "" when the lengths were measured or left as assumed."""
        k, assumed = self.factor("responses"), self.run.response_tokens_mean
        if k == 1.0 or assumed is None:
            return ""
        low_high = self._one_sd_range("responses")
        band = (f" (one standard deviation {low_high[0] * assumed:,.0f}-{low_high[1] * assumed:,.0f}, the fit's "
                f"linearised posterior)" if low_high else "")
        return (f"responses: the measured times imply a mean response of about {k * assumed:,.0f} tokens before "
                f"the cap{band}, where the scenario assumes {assumed:,.0f} (inferred, not measured: a logged "
                f"response length, response_tokens_mean, replaces the inference)")

    def section(self) -> CalibrationSection:
        """The ``[calibration]`` table a scenario carries (:meth:`Scenario.with_run_calibration`)."""
        return CalibrationSection(source=self.source, date=self.date, run=self.run,
                                  factors=CalibrationFactors(**{f.name: f.value for f in self.factors}),
                                  measured=dict(self.measured), fit=self.misfit)

    def to_frame(self):
        """Per measured stage: measured, model before and after [s], errors [%] (DataFrame)."""
        import pandas as pd

        return pd.DataFrame([{"stage": s.stage, "measured [s]": s.measured_s, "model before [s]": s.before_s,
                              "model after [s]": s.after_s, "error before [%]": 100.0 * s.error_before,
                              "error after [%]": 100.0 * s.error_after, "exposed only": s.exposed,
                              "engines' mean": s.rank_mean}
                             for s in self.stages])

    def _one_sd_range(self, name: str) -> tuple[float, float] | None:
        """Factor ``name``'s range of one posterior standard deviation (``spread``): ``value·exp(∓sd)`` for a
        multiplier (fitted in log units), ``value ∓ sd`` (not below 0) for the fixed cost; None without a finite
        spread."""
        sd = dict(self.spread).get(name)
        if sd is None or not math.isfinite(sd):
            return None
        f = next(f for f in self.factors if f.name == name)
        if f.unit == "s":
            return max(f.value - sd, 0.0), f.value + sd
        return f.value * math.exp(-sd), f.value * math.exp(sd)

    def _one_sd(self, f: Factor) -> str:
        """A fitted factor's range of one posterior standard deviation as text, "" for one no measurement moved."""
        low_high = self._one_sd_range(f.name) if f.fitted_from else None
        if low_high is None:
            return ""
        if f.unit == "s":
            return f"{low_high[0]:,.3g}-{low_high[1]:,.3g} s"
        return f"x{low_high[0]:.3g}-x{low_high[1]:.3g}"

    def factors_frame(self):
        """Every factor: value, unit, what it scales, the measurements it came from and, for a fitted one, its range
        of one posterior standard deviation (``spread``) (DataFrame)."""
        import pandas as pd

        return pd.DataFrame([{"factor": f.name, "value": f.value, "unit": f.unit,
                              "one standard deviation": self._one_sd(f), "scales": f.scales,
                              "fitted from": ", ".join(f.fitted_from) or "(no measurement: neutral)",
                              "applies to the measured run": f.applies} for f in self.factors])

    def __str__(self) -> str:
        r = self.run
        lines = [f"Calibration from {self.source} ({self.date}): {r.model}, {r.trainer_gpus} x {r.trainer_hardware} "
                 f"trainer ({r.trainer_precision}), {r.generator_gpus} x {r.generator_hardware} generator "
                 f"({r.generator_precision}, KV {r.kv_precision}, {r.engine}), {r.framework}, {r.mode}",
                 self.status[:1].upper() + self.status[1:] + ("" if self.calibrated else
                                                              ": the factors below apply to no plan")]
        label = {s.stage: s.stage + (" (exposed)" if s.exposed else " (engines' mean)" if s.rank_mean else "")
                 for s in self.stages}
        w = max([16, *(len(v) + 1 for v in label.values())])
        lines.append(f"{'stage':<{w}}{'measured [s]':>14}{'before [s]':>12}{'after [s]':>12}{'before':>9}{'after':>9}")
        for s in self.stages:
            lines.append(f"{label[s.stage]:<{w}}{s.measured_s:>14,.2f}"
                         f"{s.before_s:>12,.2f}{s.after_s:>12,.2f}{s.error_before:>+9.0%}{s.error_after:>+9.0%}")
        lines.append("factors:")
        for f in self.factors:
            value = f"{f.value:,.3g} s" if f.unit == "s" else f"x{f.value:.3g}"
            band = self._one_sd(f)
            lines.append(f"  {f.name:<16}{value:>10}  {f.scales}; from "
                         f"{', '.join(f.fitted_from) or 'no measurement (neutral)'}"
                         + (f" (one standard deviation {band})" if band else ""))
        if self.inferred_response_line:
            lines.append(self.inferred_response_line)
        if self.generation_parts:
            lines.append("generation phase (model, calibrated): " + " + ".join(f"{name} {sec:,.3g} s"
                                                                         for name, sec in self.generation_parts)
                         + " (engine and tail split by the model and the priors: a log of the step or of the whole "
                           "generation cannot tell them apart)")
        lines += [f"warning: {w}" for w in self.warnings if w != f"not calibrated: {self.misfit}"]
        return "\n".join(lines)

    def _repr_html_(self) -> str:
        from html import escape

        head = escape(str(self).splitlines()[0])
        return (f"<div><b>{head}</b>{self.to_frame().to_html(index=False, float_format='{:,.3g}'.format)}"
                f"{self.factors_frame().to_html(index=False, float_format='{:,.3g}'.format)}"
                + "".join(f"<p>warning: {escape(w)}</p>" for w in self.warnings) + "</div>")


# ---------------------------------------------------------------- checking what was measured
def _measured(measurements, extra_exposed=()) -> tuple[dict[str, float], set[str], set[str], list[str]]:
    """(figures by key, keys logged as exposed time only, keys logged as the engines' mean, warnings) of a
    measurements mapping (the engines' mean: the Measurements' ``rank_mean`` keys); MeasurementError
    naming the key for a value that is not a finite number above zero, or when no time is given. Exposed time: the
    Measurements' ``exposed`` keys, :data:`EXPOSED_KEY` (the trainer's wait, typed under its own key) and
    ``extra_exposed`` (keys the caller marks, e.g. ``--exposed generation_s``)."""
    if not isinstance(measurements, Mapping):
        raise MeasurementError("measurements", f"expected a mapping of measured figures (or tc.load_measurements' "
                                               f"result), got {type(measurements).__name__}")
    out, warnings = {}, []
    # a log's longest response (tcocalc/logs: response_tokens_longest) is read below as the longest logged
    unknown = sorted(str(k) for k in measurements
                     if k not in MEASUREMENT_KEYS and k not in (EXPOSED_KEY, "response_tokens_longest"))
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
        if key in TIME_KEYS and value > _TIME_MAX:
            raise MeasurementError(f"measurements.{key}", f"{value:,.4g} s per step is beyond any RL step (at most "
                                   f"{_TIME_MAX:,.0f} s, {_TIME_MAX / 86400:.1f} days): check the unit (seconds "
                                   f"per optimizer step)", key=key)
        out[key] = value
    longest = measurements.get("response_tokens_longest")
    if "response_tokens_max" not in out and isinstance(longest, int | float) and math.isfinite(longest) \
            and longest > 0:  # what _with_workload takes as the longest response logged, never over a set cap
        out["response_tokens_max"] = float(longest)
    if not any(k in out for k in TIME_KEYS) and EXPOSED_KEY not in measurements:
        raise MeasurementError("measurements", f"no time measured: give at least one of {', '.join(TIME_KEYS)} "
                                               "[s per step]")
    exposed = {k for k in getattr(measurements, "exposed", ()) if k in out}
    if EXPOSED_KEY in measurements:  # the trainer's wait for generation, typed under its own key
        if "generation_s" in out:
            raise MeasurementError(f"measurements.{EXPOSED_KEY}", f"give generation_s (the generation's whole time) "
                                   f"or {EXPOSED_KEY} (the trainer's wait for it), not both", key=EXPOSED_KEY)
        value = measurements[EXPOSED_KEY]
        if isinstance(value, bool) or not isinstance(value, int | float | np.number) or not (
                math.isfinite(float(value)) and 0 < float(value) <= _TIME_MAX):
            raise MeasurementError(f"measurements.{EXPOSED_KEY}", f"must be a number of seconds above zero and at "
                                   f"most {_TIME_MAX:,.0f}, got {value!r}", key=EXPOSED_KEY)
        out["generation_s"] = float(value)
        exposed.add("generation_s")
    for key in sorted(set(extra_exposed)):
        if key not in EXPOSABLE:
            raise MeasurementError("exposed", f"{key!r} cannot be marked as exposed time: only "
                                              f"{', '.join(EXPOSABLE)} (the trainer's wait for the generation)")
        if key not in out:
            raise MeasurementError("exposed", f"{key} is marked as exposed time but not measured")
        exposed.add(key)
    warnings += [str(w) for w in getattr(measurements, "warnings", ())]
    rank_mean = {k for k in getattr(measurements, "rank_mean", ()) if k in out and k not in exposed}
    return out, exposed, rank_mean, warnings


def _with_workload(scn: Scenario, meas: dict[str, float], warnings: list[str]) -> tuple[Scenario, dict]:
    """The scenario with the measured workload (module docstring, step 1) and the scenario keys it set."""
    w, values = scn.workload, {}
    if "prompt_tokens" in meas:
        values["workload.prompt_tokens"] = meas["prompt_tokens"]
    if "response_tokens_max" in meas:  # the longest response logged: the cap only where the scenario sets none
        longest = max(meas["response_tokens_max"], meas.get("response_tokens_mean", 0.0))
        if w.response_tokens_max is None:
            values["workload.response_tokens_max"] = longest
        elif longest > w.response_tokens_max:
            warnings.append(f"measurements: the longest response logged ({longest:,.0f} tokens) is above the "
                            f"configured cap workload.response_tokens_max {w.response_tokens_max:,.0f}: the cap is "
                            f"kept; check the run's max_response_length")
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
    uncalibrated cluster, the extra forward passes (in thirds of an update: ``rl.capacity.extra_pass_units``), and
    the colocated push's switch part (``switch_s``, linear in its factor)."""

    scn: Scenario
    cluster: Cluster
    ws: object
    extra: float
    switch_s: float
    engine: _RunModel | None = None

    @classmethod
    def of(cls, scn: Scenario, cluster: Cluster, responses: float = 1.0, engine: bool = False) -> _RunModel:
        """The model of the run, its response lengths (mean and p99) x ``responses`` (the responses factor); with
        ``engine``, also the model of one engine's share of the batch (``engine``: :func:`one_engine_scenario`;
        None where the run has none or the model cannot run it)."""
        name, start, steps, over = phase_list(scn)[0]
        if responses != 1.0:
            over = {**over, "response_scale": over.get("response_scale", 1.0) * responses}
        ws = workload_stats(scn, over, name, start, steps)
        model = cls(scn, cluster, ws, extra_pass_units(scn, cluster, ws), 0.0)
        if scn.orchestration.traits.shared_pool:  # t_sync = S·k_switch + W·k_sync: S from two evaluations
            one = float(model.result(RunFactors()).rates.t_sync[0])
            two = float(model.result(RunFactors(switching=2.0)).rates.t_sync[0])
            model = replace(model, switch_s=two - one)
        one = one_engine_scenario(scn) if engine else None
        if one is not None:
            try:
                model = replace(model, engine=cls.of(one, resolve(one, cluster.calibration), responses))
            except TcocalcError:  # one engine's share the hardware cannot hold: no like-for-like comparison
                pass
        return model

    def result(self, f: RunFactors) -> PhaseResult:
        return evaluate_splits(replace(self.cluster, run=f), self.scn, self.ws, [self.scn.trainer.gpus],
                               [self.scn.generator.gpus])

    def stages(self, f: RunFactors, exposed: set[str] = frozenset(),
               rank_mean: set[str] = frozenset()) -> dict[str, float]:
        """The model's time per step of every stage the calibration can compare (module docstring); the stages in
        ``rank_mean`` as a log that averages the engines' timers has them (a generation: one engine's own; a switch:
        the switch plus the batch's generation less one engine's), where the run has a one-engine model."""
        out = stage_times(self.scn, self.result(f), f, self.extra, self.switch_s, exposed)
        if rank_mean and self.engine is not None:
            one = self.engine.stages(f)["generation_s"]
            excess = max(0.0, out["generation_s"] - one)
            if "generation_s" in rank_mean:
                out["generation_s"] = one
            if "switching_s" in rank_mean:
                out["switching_s"] += excess
        return out


def one_engine_scenario(scn: Scenario) -> Scenario | None:
    """One engine of a synchronous or colocated batch with its share of the prompts: the scenario on ``tp`` GPUs
    with ``1/engines`` of the prompts (its slots, lengths and step times the same; the trainer shrunk with it, its
    layout searched). A log whose generation timer is averaged over the engines' ranks (verl's
    ``generate_sequences``, all-reduced with ``ReduceOp.AVG``: docs/rl-modeling.md §3.10) times this engine's
    generation, while the batch ends with the slowest engine (``list_makespan_tokens(..., replicas)``, §4.5). None
    where the engine's TP is not pinned, the run has one engine, or the prompts do not divide over the engines."""
    tp = scn.generator.tp
    if tp is None or scn.generator.gpus % tp:
        return None
    engines = scn.generator.gpus // tp
    prompts = scn.workload.prompts_per_step
    if engines < 2 or prompts % engines:
        return None
    try:
        return scn.with_values({"generator.gpus": tp, "trainer.gpus": tp, "trainer.tp": None, "trainer.pp": None,
                                "trainer.cp": None, "trainer.ep": None,
                                "workload.prompts_per_step": prompts // engines})
    except TcocalcError:
        return None


def run_stage_times(scn: Scenario, responses: float = 1.0, calibration=None, *, exposed=frozenset(),
                    rank_mean=frozenset()) -> dict[str, float]:
    """The model's uncalibrated time per step [s] of every stage a calibration compares (:func:`stage_times`: the
    step, generation, update, log-prob passes, push and colocated switch) for ``scn`` as it stands, its response
    lengths (mean and p99) x ``responses``; ``calibration``: a roofline CalibrationSet (default the shipped one);
    ``exposed`` and ``rank_mean``: the stages a log times as the trainer's wait or as the engines' mean, compared
    as :func:`calibrate` compares them."""
    model = _RunModel.of(scn, resolve(scn, calibration), responses, engine=bool(rank_mean))
    return model.stages(RunFactors(), set(exposed), set(rank_mean))


def stage_times(scn: Scenario, res: PhaseResult, f: RunFactors, extra: float, switch_s: float,
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
    no switch factor with two pools, no tail factor in a run that streams its generation, where no batch waits for
    its slowest trajectories); the fixed per-step cost only when the step was measured; the responses factor (the
    assumed response lengths) only when no response length was measured, since a measured one replaces the
    assumed one (module docstring, step 1)."""
    out = ["generation", "training", "weight_sync"]
    if not model.scn.orchestration.traits.streaming:
        out.insert(1, "tail")
    if model.extra > 0:
        out.insert(2, "logprob")
    if model.switch_s > 0:
        out.append("switching")
    if "step_time_s" in meas:
        out.append("step_overhead_s")
    if "response_tokens_mean" not in meas:
        out.append("responses")
    return out


def _factors(free: list[str], x) -> RunFactors:
    values = {name: (float(v) if name == "step_overhead_s" else math.exp(float(v))) for name, v in zip(free, x,
                                                                                                      strict=True)}
    return RunFactors(**values)


class _Models:
    """The run's model as a smooth function of the responses factor: built once per point of a grid of
    :data:`_RESPONSES_GRID` in log space (the workload's statistics depend on the lengths, and each new value
    re-runs the serving search; the other factors only scale stage times), each stage's log time interpolated
    linearly between the two grid points around the trial value, so the fit sees a continuous function of the
    factor instead of the model's small discrete steps (slots, waves, layouts)."""

    def __init__(self, model: _RunModel):
        self.base, self.cache = model, {0: model}

    def _at(self, key: int) -> _RunModel:
        if key not in self.cache:
            self.cache[key] = _RunModel.of(self.base.scn, self.base.cluster, math.exp(key * _RESPONSES_GRID),
                                           engine=self.base.engine is not None)
        return self.cache[key]

    def stages(self, f: RunFactors, exposed, nearest: bool = False, rank_mean=frozenset()) -> dict[str, float]:
        """The model's stage times under ``f`` (its responses factor interpolated on the grid; ``nearest``: the
        nearest grid point's, for a derivative along another factor, which the lengths barely change within a
        cell)."""
        pos = math.log(f.responses) / _RESPONSES_GRID
        if nearest:
            return self._at(round(pos)).stages(f, exposed, rank_mean)
        low = math.floor(pos)
        t = pos - low
        a = self._at(low).stages(f, exposed, rank_mean)
        if t < 1e-9:
            return a
        b = self._at(low + 1).stages(f, exposed, rank_mean)
        return {k: math.exp((1 - t) * math.log(max(a[k], 1e-12)) + t * math.log(max(b[k], 1e-12))) if a[k] > 0
                and b[k] > 0 else (1 - t) * a[k] + t * b[k] for k in a}


#: The responses factor's grid [log units] (:class:`_Models`): 2% of the lengths.
_RESPONSES_GRID = 0.02
#: The step of the responses factor's finite difference [log units]: half a grid cell (the interpolated model is
#: linear in the log factor within a cell).
_RESPONSES_STEP = _RESPONSES_GRID / 2


def _fit(model: _RunModel, meas: dict[str, float], exposed: set[str], free: list[str], floors: dict[str, float],
         rank_mean: set[str] = frozenset()) -> tuple[RunFactors | None, str, dict[str, float]]:
    """(the MAP factors, "", each free factor's posterior spread) or (None, why the solver stopped, {}): least squares
    over log factors (and the fixed cost in
    units of its prior scale) of the measured stages' log errors over the measurement's log-sd, plus each factor's
    prior term, started strictly inside the bounds; a factor may not go below its physical floor (``floors``,
    :func:`_floors`). The responses factor, where free, re-derives the workload (:class:`_Models`) and takes its
    derivative over a 1% step."""
    from scipy.optimize import least_squares

    cal = model.cluster.rl_cal
    sigma_m = cal["calibrate_measurement_sigma"]
    prior = {name: cal[f"calibrate_prior_{name}"] for name in free}
    keys = [k for k in TIME_KEYS if k in meas]
    scale = np.array([prior[n] if n == "step_overhead_s" else 1.0 for n in free])
    models = _Models(model)

    def residuals(u, nearest=False):
        f = _factors(free, u * scale)
        try:
            m = models.stages(f, exposed, nearest, rank_mean)
        except TcocalcError:  # lengths the run's hardware cannot hold: as far from the measurement as can be
            return np.full(len(keys) + len(free), 1e6)
        fit = [(math.log(max(m[k], 1e-12)) - math.log(meas[k])) / sigma_m for k in keys]
        return np.array(fit + [v / prior[n] for n, v in zip(free, u * scale, strict=True)])

    lo = np.array([0.0 if n == "step_overhead_s" else math.log(cal["calibrate_responses_low"]) if n == "responses"
                   else math.log(max(0.02, floors.get(n, 0.0))) for n in free]) / scale
    hi = np.array([min(meas["step_time_s"], _OVERHEAD_MAX) if n == "step_overhead_s" else
                   math.log(cal["calibrate_responses_high"]) if n == "responses" else math.log(50.0)
                   for n in free]) / scale
    # start strictly inside the bounds: on a bound (the fixed cost at 0 s) the trust-region step is clipped to nothing
    # and the solver stops at once with every factor at 1 (issue 37)
    x0 = np.clip(np.zeros(len(free)), lo + _INSIDE * (hi - lo), hi - _INSIDE * (hi - lo))
    jac = "2-point"
    if "responses" in free:
        j = free.index("responses")

        def jac(u):  # forward differences: 1e-4 (relative) for the stage factors at the nearest grid point's
            #         lengths, half a grid cell for the responses factor on the interpolated model (_Models)
            f0, near = residuals(u), residuals(u, nearest=True)
            out = np.empty((f0.size, u.size))
            for i in range(u.size):
                h = _RESPONSES_STEP if i == j else 1e-4 * max(1.0, abs(u[i]))
                h = h if u[i] + h <= hi[i] else -h
                v = u.copy()
                v[i] += h
                out[:, i] = (residuals(v) - f0) / h if i == j else (residuals(v, nearest=True) - near) / h
            return out
    try:
        with np.errstate(all="ignore"), _warnings.catch_warnings():  # extreme figures: the check below names them
            _warnings.simplefilter("ignore", RuntimeWarning)
            res = least_squares(residuals, x0, jac=jac, bounds=(lo, hi), method="trf", diff_step=1e-4, xtol=1e-10,
                                ftol=1e-10, gtol=1e-10, max_nfev=_MAX_EVALUATIONS)
    except (ValueError, FloatingPointError, ArithmeticError, np.linalg.LinAlgError) as exc:  # never a solver's text
        return None, f"the least-squares solver stopped ({type(exc).__name__})", {}
    x = res.x * scale
    if "step_overhead_s" in free and x[free.index("step_overhead_s")] < 1e-6:  # at its bound: no fixed cost
        x[free.index("step_overhead_s")] = 0.0
    if not np.all(np.isfinite(x)):
        return None, "the least-squares solver returned no finite factors", {}
    return _factors(free, x), "", _posterior_sd(res.jac, free, scale)


def _posterior_sd(jac, free: list[str], scale) -> dict[str, float]:
    """Each free factor's posterior standard deviation in the units it is fitted in (log of a multiplier; seconds
    for the fixed cost), from the residuals' Jacobian at the estimate: the residuals are the measurements' and the
    priors' log errors over their standard deviations, so ``(JᵀJ)⁻¹`` is the linearised posterior covariance (the
    Laplace approximation, Bishop 2006, §4.4). Empty where the Jacobian is not finite."""
    j = np.asarray(jac, dtype=float)
    if j.ndim != 2 or not np.all(np.isfinite(j)):
        return {}
    cov = np.linalg.pinv(j.T @ j)
    return {n: float(math.sqrt(max(cov[i, i], 0.0)) * scale[i]) for i, n in enumerate(free)}


#: The largest fixed per-step cost a [calibration] table holds (CalibrationFactors.step_overhead_s) [s].
_OVERHEAD_MAX = next(m.le for m in CalibrationFactors.model_fields["step_overhead_s"].metadata
                     if getattr(m, "le", None) is not None)
#: The longest measured time per step accepted [s]: the [calibration] table's own limit on a fixed cost.
_TIME_MAX = 1e6
#: Where the fit starts, as a share of each bound's range from the bound (strictly inside).
_INSIDE = 0.01
#: The most model evaluations one fit may take (each about 5-20 ms; a converged fit takes 10-40).
_MAX_EVALUATIONS = 200


def _misfit(stages, cal) -> str:
    """Why the calibrated model does not hold on its own measured run: each measured stage it misses beyond the
    stage's tolerance (data/rl_calibration.toml ``calibrate_tolerance_*``), with its residual; "" when none."""
    misses = []
    for s in stages:
        tol = cal["calibrate_tolerance_transfer" if s.stage in _TRANSFER_STAGES else "calibrate_tolerance_compute"]
        if not math.isfinite(s.after_s) or abs(s.error_after) > tol:
            off = (f"{s.error_after:+.0%}" if abs(s.error_after) < 10 else f"{s.after_s / s.measured_s:.3g} times "
                   f"the measured")
            misses.append(f"{s.stage}: model {s.after_s:,.3g} s against {s.measured_s:,.3g} s measured, {off}, "
                          f"tolerance ±{tol:.0%}")
    return f"the fit did not converge ({'; '.join(misses)})" if misses else ""


#: Stages measured in seconds of a step of minutes, whose timers differ most between frameworks.
_TRANSFER_STAGES = ("weight_sync_s", "switching_s")


def _unphysical(mfu_busy: float, training: float, cal) -> str:
    """Why a calibrated measured run breaks the physics, naming the factor: the trainer's busy MFU (model FLOPs over
    the datasheet peak while it trains) above the published ceiling (``calibrate_mfu_ceiling``); "" when it holds.
    The roofline is the hard bound (an MFU of 100% is the datasheet's peak); the ceiling is the best any published
    run reached, so a factor beyond it says the pilot's times or the scenario's layout are not what ran."""
    ceiling = cal["calibrate_mfu_ceiling"]
    if math.isfinite(mfu_busy) and mfu_busy <= ceiling:
        return ""
    bound = "faster than the trainer's datasheet peak allows" if mfu_busy > 1.0 else "above every published run"
    return (f"the calibration breaks the physics (training factor x{training:.3g} gives a busy trainer MFU of "
            f"{mfu_busy:.0%}, {bound}; ceiling {ceiling:.0%}, data/rl_calibration.toml calibrate_mfu_ceiling): "
            f"check the trainer's GPU count, the samples per step and the response lengths against the run")


#: Why each factor has a floor (:func:`_floors`).
_FLOOR_WHY = {"training": "the trainer's busy MFU at the ceiling calibrate_mfu_ceiling",
              "generation": "a decode step as fast as the datasheet's HBM bandwidth reads the weights"}


def _floors(model: _RunModel, mfu_busy: float, cal) -> dict[str, float]:
    """The smallest factor the physics allows: training, the uncalibrated busy MFU over the ceiling (the calibrated
    MFU is the uncalibrated one over the factor); generation, the batch-1 decode step's HBM floor over the model's
    step (:func:`_faster_than_hbm`). Where a floor is not finite or not positive the factor keeps its range."""
    from ..rl.capacity import generator_capacity

    out = {}
    if math.isfinite(mfu_busy) and mfu_busy > 0:
        out["training"] = mfu_busy / cal["calibrate_mfu_ceiling"]
    gcap = generator_capacity(model.scn, model.cluster, model.ws)
    m = model.cluster.model
    floor = gcap.weights_per_gpu_bytes * m.params_active / m.params_total / model.cluster.generator.hbm_bytes_per_s
    if math.isfinite(floor) and floor > 0 and gcap.t0 > 0:
        out["generation"] = floor / gcap.t0
    return {k: v for k, v in out.items() if math.isfinite(v) and 0 < v < 50.0}


def _generation_parts(model: _RunModel, f: RunFactors, after: dict[str, float]) -> tuple[tuple[str, float], ...]:
    """What a synchronous batch's generation is made of, in the calibrated model [s per step]: the engine at its
    steady-state throughput (the batch over the generator's trainable samples/s: the step's generated tokens at the
    engine's tokens/s, what a streaming plan pays at the same engine speed; the generation factor's), the wait for
    the batch's slowest trajectories as the batch drains (the rest of the batch's generation, what a streaming plan
    does not pay; the tail factor's) and, colocated, the pool's switch. Empty for a streaming run. A log that times
    the whole generation, or only the step, cannot tell the engine from the tail: the fit splits them by the model
    and the factors' priors, which is why a plan carried across modes states a wider error (docs/calibration.md,
    "Across modes")."""
    if model.scn.orchestration.traits.streaming:
        return ()
    rates = model.result(f).rates
    rate = float(np.ravel(rates.generator_samples_per_s)[0])
    if not (rate > 0 and math.isfinite(rate)):
        return ()
    engine = min(float(rates.batch) / rate, after["generation_s"])
    parts = [("engine at its steady-state throughput", engine),
             ("wait for the batch's slowest trajectories", max(0.0, after["generation_s"] - engine))]
    if after["switching_s"] > 0:
        parts.append(("the pool's switch", after["switching_s"]))
    return tuple(parts)


def _faster_than_hbm(model: _RunModel, generation: float) -> str:
    """Why the calibrated generator breaks the roofline, naming the factor, or "": a decode step of one trajectory
    must read the weights its token touches (the active share of each GPU's weights, ``weights_per_gpu_bytes x
    params_active / params_total``) at no more than the datasheet's HBM bandwidth (hardware_specs/), so the
    calibrated step time at batch 1 (``t0 x generation``) cannot be shorter (docs/rl-modeling.md §4.2's decode
    roofline with every efficiency 1)."""
    from ..rl.capacity import generator_capacity

    gcap = generator_capacity(model.scn, model.cluster, model.ws)
    m = model.cluster.model
    touched = gcap.weights_per_gpu_bytes * m.params_active / m.params_total  # [B per GPU per decode step]
    floor = touched / model.cluster.generator.hbm_bytes_per_s
    step = gcap.t0 * generation
    if not (math.isfinite(step) and step < floor):
        return ""
    return (f"the calibration breaks the physics (generation factor x{generation:.3g} gives a decode step of "
            f"{1e3 * step:.3g} ms at batch 1, faster than reading the {touched / 1e9:.3g} GB "
            f"of weights a token touches per GPU at {model.cluster.generator.name}'s datasheet HBM bandwidth allows "
            f"({1e3 * floor:.3g} ms)): check the generator's GPUs, its parallelism and the response lengths")


def calibrate(scenario: Scenario, measurements, *, source: str | None = None, calibration=None,
              exposed=()) -> RunCalibration:
    """Fit the RL model's per-stage factors to a measured run (module docstring; docs/calibration.md).

    Parameters
    ----------
    scenario : the measured run (model, hardware, GPUs, mode, framework, workload); a ``[calibration]`` it carries
        is not used (the fit starts from the uncalibrated model).
    measurements : a mapping of steady-state figures, any subset of :data:`MEASUREMENT_KEYS` with at least one of
        :data:`TIME_KEYS` [s per optimizer step; tokens; samples per step], or what
        :func:`~tcocalc.load_measurements` returns (its keys logged as exposed time are compared with the model's
        trainer wait, those logged as the engines' mean with one engine's generation: :func:`one_engine_scenario`).
    source : what the figures came from (default: the Measurements' file and steps, else "measurements").
    calibration : a :class:`~tcocalc.catalog.calibration.CalibrationSet` instead of the shipped roofline factors.
    exposed : measured keys that time only the part the trainer waits for (:data:`EXPOSABLE`: ``generation_s``),
        e.g. a figure typed off a console's "exposed generation"; the key :data:`EXPOSED_KEY` says the same.

    The result is calibrated only when the fitted model matches every measured stage within its tolerance and the
    calibrated run keeps the trainer's busy MFU under the published ceiling (data/rl_calibration.toml
    ``calibrate_tolerance_*``, ``calibrate_mfu_ceiling``); otherwise ``RunCalibration.misfit`` names the stage and
    its residual (or the factor), the scenario's ``[calibration]`` carries it as ``fit``, and no factor applies
    anywhere (every report, the CLI, the app and sizing say "not calibrated: ...").

    Raises MeasurementError (a ScenarioError) naming the key for a value that is not a finite number above zero, for
    no time at all, or for phase times that do not fit in the measured step for the mode; InfeasibleError when the
    measured run does not fit its hardware. Unknown keys are ignored with a warning, as are stages the mode does
    not have; a fitted factor outside the plausible range (data/rl_calibration.toml) adds a warning.
    """
    meas, exposed, rank_mean, warnings = _measured(measurements, exposed)
    base = scenario.with_values({"calibration": None}) if scenario.calibration is not None else scenario
    scn, workload = _with_workload(base, meas, warnings)
    cluster = resolve(scn, calibration)
    cal = cluster.rl_cal
    _check_consistency(scn, meas, cal["calibrate_consistency_tolerance"])
    plain = evaluate(scn, calibration=calibration, advice=False)  # the typed error naming a side that cannot hold it
    model = _RunModel.of(scn, cluster, engine=bool(rank_mean))
    if rank_mean and model.engine is None:
        warnings.append(f"{', '.join(sorted(rank_mean))}: logged as the engines' mean while the batch ends with the "
                        f"slowest engine, but this run has no one-engine share the model can run (the generator's "
                        f"tp is not set, it has one engine, the prompts do not divide over its engines, or the model "
                        f"cannot run one engine's share): compared "
                        f"with the batch's end, which overstates the engines' mean by the last engine's excess")
        rank_mean = set()
    meas = _applicable(model, meas, warnings)
    rank_mean = {k for k in rank_mean if k in meas}
    if not any(k in meas for k in TIME_KEYS):
        raise MeasurementError("measurements", f"no time this {scn.orchestration.mode} run has a stage for: give at "
                                               f"least one of step_time_s, generation_s, training_s, weight_sync_s")
    free = _free(model, meas)
    floors = _floors(model, float(plain.metrics["trainer_mfu_busy"]), cal)
    fitted, stopped, spread = _fit(model, meas, exposed, free, floors, rank_mean)
    before = model.stages(RunFactors(), exposed, rank_mean)
    fitted = fitted or RunFactors()
    model_after = (_RunModel.of(scn, cluster, fitted.responses, engine=bool(rank_mean)) if fitted.responses != 1.0
                   else model)
    after = model_after.stages(fitted, exposed, rank_mean)
    stages = tuple(StageFit(k, meas[k], before[k], after[k], k in exposed, k in rank_mean) for k in TIME_KEYS
                   if k in meas)
    misfit = (f"the fit did not converge ({stopped})" if stopped else "") or _misfit(stages, cal)
    if misfit and fitted is not None:  # say which factors the physics held back
        held = [f"{n} x{getattr(fitted, n):.3g} at its floor ({_FLOOR_WHY[n]})" for n in floors
                if n in free and getattr(fitted, n) <= floors[n] * 1.001]
        if held:
            misfit += "; " + "; ".join(held)
    factors = tuple(_factor(name, fitted, free, meas) for name in FACTOR_NAMES)
    warnings += _implausible(factors, cal)
    st = cluster.settings
    g = scn.generator
    run = CalibratedRun(model=cluster.model.name, trainer_hardware=cluster.trainer.name,
                        trainer_precision=scn.model.precision, generator_hardware=cluster.generator.name,
                        generator_precision=g.precision,
                        kv_precision=g.kv_precision or ("fp8" if g.precision == "fp4" else g.precision),
                        engine=st.engine, framework=scn.orchestration.framework, mode=scn.orchestration.mode,
                        trainer_gpus=scn.trainer.gpus, generator_gpus=scn.generator.gpus, weight_sync=st.weight_sync,
                        response_tokens_mean=scn.workload.response_tokens_mean,
                        response_tokens_max=scn.workload.response_tokens_max)
    out = RunCalibration(factors=factors, stages=stages, run=run, measured=tuple(sorted(meas.items())),
                         workload=tuple(sorted(workload.items())), scenario=scn, source=source or _source(measurements),
                         date=dt.date.today().isoformat(), warnings=tuple(warnings), misfit=misfit,
                         generation_parts=_generation_parts(model_after, fitted,
                                                            model_after.stages(fitted, exposed)),
                         spread=tuple(sorted(spread.items())))
    if not misfit:  # the fit holds on its stages: does the calibrated run still obey the physics?
        mfu = evaluate(scn.with_run_calibration(out), calibration=calibration, advice=False).metrics
        misfit = (_unphysical(float(mfu["trainer_mfu_busy"]), fitted.training, cal)
                  or _faster_than_hbm(model_after, fitted.generation))
        out = replace(out, misfit=misfit)
    if misfit:
        out = replace(out, warnings=(f"not calibrated: {misfit}",) + out.warnings)
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
    moved = [k for k in TIME_KEYS if k in meas and (stage is None or k == stage or k == "step_time_s")] \
        if name in free else []
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


# ---------------------------------------------------------------- writing the calibrated scenario
def calibrated_toml(cal: RunCalibration, original: str | None = None) -> str:
    """The calibrated measured run as TOML text: with ``original`` (the measured run's scenario file), that text
    with its comments and layout kept, the measured workload's values written in place in ``[workload]`` (a
    trailing comment kept) and the ``[calibration]`` table (any old one removed) appended; else, or where the text
    cannot be edited so that it reads back as the same scenario, :meth:`Scenario.to_toml`."""
    from ..scenario import loads_scenario

    if original is None:
        return cal.scenario.to_toml()
    try:
        text = _edited(cal, original)
        same = loads_scenario(text).model_dump() == cal.scenario.model_dump()
    except (ScenarioError, ValueError, KeyError):
        same = False
    return text if same else cal.scenario.to_toml()


#: How the comment lines -o writes above [calibration] begin (dropped with an old table when re-calibrating).
_NOTE = ("# tcocalc calibrate, ", "# (the measured workload")
_HEADER = re.compile(r"^\s*\[\[?\s*([A-Za-z0-9_.\-\" ]+?)\s*\]\]?\s*(#.*)?$")


def _edited(cal: RunCalibration, original: str) -> str:
    import tomli_w

    lines, out, table = original.splitlines(), [], ""
    for line in lines:  # drop an old [calibration] and its sub-tables
        m = _HEADER.match(line)
        if m:
            table = m.group(1).replace('"', "").replace(" ", "")
        if table == "calibration" or table.startswith("calibration.") or line.startswith(_NOTE):
            continue
        out.append(line)
    from ..scenario import loads_scenario

    old_w = loads_scenario(original).workload.model_dump(mode="json", exclude_none=True)
    changed = {k: v for k, v in cal.scenario.workload.model_dump(mode="json", exclude_none=True).items()
               if not isinstance(v, dict) and v != old_w.get(k)}
    out = _set_in_table(out, "workload", changed)
    section = cal.scenario.calibration.model_dump(mode="json", exclude_defaults=False, exclude_none=True)
    block = tomli_w.dumps({"calibration": section}).rstrip("\n")
    status = cal.status
    note = [f"{_NOTE[0]}{cal.date}: {status}", f"{_NOTE[1]} above and this table were written by tcocalc "
            "calibrate; docs/calibration.md)"]
    return "\n".join(out).rstrip("\n") + "\n\n" + "\n".join(note) + "\n" + block + "\n"


def _set_in_table(lines: list[str], table: str, values: dict) -> list[str]:
    """``lines`` with each ``key = value`` of ``values`` set inside ``[table]`` (in place, a trailing comment kept;
    else added after the header). KeyError when the text has no such header (the caller falls back)."""
    import tomli_w

    start = next((i for i, ln in enumerate(lines) if (m := _HEADER.match(ln)) and m.group(1).strip() == table), None)
    if start is None:
        raise KeyError(table)
    end = next((i for i in range(start + 1, len(lines)) if _HEADER.match(lines[i])), len(lines))
    out = list(lines)
    for key, value in values.items():
        shown = tomli_w.dumps({key: value}).strip()
        pattern = re.compile(rf"^(\s*){re.escape(key)}\s*=\s*[^#]*?(\s*#.*)?$")
        for i in range(start + 1, end):
            m = pattern.match(out[i])
            if m:
                out[i] = f"{m.group(1)}{shown}{m.group(2) or ''}"
                break
        else:
            out.insert(start + 1, shown)
            end += 1
    return out
