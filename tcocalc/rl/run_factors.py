"""The run calibration a scenario carries (``[calibration]``), as the factors that apply to this scenario.

A calibration fitted on a measured run (:func:`tcocalc.calibrate`, docs/calibration.md) holds per-stage factors:
the generator's decode and prefill time, the wait for a synchronous batch's slowest trajectories beyond it (the
tail), the trainer's update and log-prob passes, the weight push, the colocated switch (multipliers of the model's
own stage times) and a fixed per-step cost. They describe how a software
stack runs on its hardware, so they carry over to any split, GPU count, staleness bound and, within the rules
below, mode; a factor whose stack differs in the target scenario does not carry over and is dropped, with a
warning that names it (:func:`run_factors`; docs/calibration.md, "What transfers"):

============== ===========================================================================================
factor         kept when the target has the measured run's ...
============== ===========================================================================================
generation     model, generator accelerator, generator precision, KV-cache precision and engine
tail           as generation, in a target that generates in synchronous batches (not a streaming one)
training       model, trainer accelerator, trainer precision and framework
logprob        model, trainer accelerator, trainer precision and framework
weight_sync    model, trainer and generator accelerators, transport, and one pool or two as measured
switching      model, accelerator and framework, in a colocated target (only one pool switches)
step_overhead  framework and model
responses      model (the factor corrects the lengths a scenario assumes for it, fitted only when the log gave no
               response length; a plan that assumes other lengths than the measured run's scenario gets them
               scaled alike, with a warning naming both, so that a sweep over lengths stays monotonic)
============== ===========================================================================================

The responses factor is not a stage's: it scales the workload's response lengths (mean and p99) wherever the
workload's statistics are derived (:func:`response_scale`, applied by :func:`tcocalc.rl.phases.workload_stats`),
so every stage that depends on them (generation, its tail, the update, the log-prob passes) follows.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..modes import MODES
from ..scenario import Scenario

__all__ = ["RunFactors", "UNCALIBRATED", "run_factors", "response_scale", "FACTOR_NAMES", "TRANSFER_KEYS"]

FACTOR_NAMES = ("generation", "tail", "training", "logprob", "weight_sync", "switching", "step_overhead_s",
                "responses")

#: What each factor needs to match between the measured run and the target (keys of :func:`stack_identity`).
TRANSFER_KEYS: dict[str, tuple[str, ...]] = {
    "generation": ("model", "generator_hardware", "generator_precision", "kv_precision", "engine"),
    "tail": ("model", "generator_hardware", "generator_precision", "kv_precision", "engine", "batches"),
    "training": ("model", "trainer_hardware", "trainer_precision", "framework"),
    "logprob": ("model", "trainer_hardware", "trainer_precision", "framework"),
    "weight_sync": ("model", "trainer_hardware", "generator_hardware", "weight_sync", "pools"),
    "switching": ("model", "trainer_hardware", "framework", "pools"),
    "step_overhead_s": ("framework", "model"),
    "responses": ("model",),
}


@dataclass(frozen=True)
class RunFactors:
    """The calibration factors that apply to one scenario (1 and 0 s: the uncalibrated model), where they came
    from (``source``; ``None`` when uncalibrated), the factors dropped because the stack differs and why
    (``dropped``: name -> the keys that differ), the warnings to report and, for a calibration whose fit did not
    hold on its own measured run, why (``misfit``: then no factor applies); ``across_modes``: why factors from a
    measured run of another kind of step predict this plan less well ("" when the modes' steps are built alike)."""

    generation: float = 1.0
    tail: float = 1.0
    training: float = 1.0
    logprob: float = 1.0
    weight_sync: float = 1.0
    switching: float = 1.0
    step_overhead_s: float = 0.0
    responses: float = 1.0
    source: str | None = None
    dropped: tuple[tuple[str, tuple[str, ...]], ...] = ()
    warnings: tuple[str, ...] = ()
    misfit: str = ""
    across_modes: str = ""

    @property
    def calibrated(self) -> bool:
        """A calibration applies: it fitted its measured run (no ``misfit``) and at least one of its factors (other
        than neutral ones) carries over."""
        return self.source is not None and not self.misfit and bool(self.applied())

    def applied(self) -> dict[str, float]:
        """The factors that apply and change something, by name (neutral ones left out)."""
        return {k: getattr(self, k) for k in FACTOR_NAMES
                if getattr(self, k) != (0.0 if k == "step_overhead_s" else 1.0)}


UNCALIBRATED = RunFactors()


def stack_identity(scn: Scenario, cluster, engine: str, weight_sync: str) -> dict:
    """The keys a factor's transfer is judged on (:data:`TRANSFER_KEYS`), for a resolved scenario: canonical catalog
    names (the cluster's), precisions, engine, framework, transport, the pools (1 colocated, 2 otherwise) and whether
    the mode generates in synchronous batches (``batches``: "synchronous" or "streaming")."""
    g = scn.generator
    kv = g.kv_precision or ("fp8" if g.precision == "fp4" else g.precision)
    return {"model": cluster.model.name, "trainer_hardware": cluster.trainer.name,
            "generator_hardware": cluster.generator.name, "trainer_precision": scn.model.precision,
            "generator_precision": g.precision, "kv_precision": kv, "engine": engine,
            "framework": scn.orchestration.framework, "weight_sync": weight_sync,
            "pools": scn.orchestration.traits.pools, "batches": _batches(scn.orchestration.mode),
            "workload": _workload(scn.workload.response_tokens_mean, scn.workload.response_tokens_max)}


def _workload(mean, cap) -> str:
    """The assumed response lengths a responses factor corrects, in words (compared between runs)."""
    if mean is None:
        return "no assumed mean response recorded"
    return f"mean response {mean:,.6g} tokens, " + ("uncapped" if cap is None else f"cap {cap:,.6g}")


def response_scale(scn: Scenario) -> float:
    """The calibration's responses factor where it carries to ``scn`` (module docstring: the same model, a fit that
    held), else 1. Needs no resolved cluster, so that the workload's statistics
    (:func:`tcocalc.rl.phases.workload_stats`) can apply it; the model is compared by its catalog name, as
    :func:`run_factors` does (an unknown model: 1, the resolver names it)."""
    cal = scn.calibration
    if cal is None or cal.fit or cal.run is None or cal.factors.responses == 1.0:
        return 1.0
    from ..catalog.models import model
    from ..errors import TcocalcError

    try:
        name = model(scn.model.name).name
    except TcocalcError:
        return 1.0
    return cal.factors.responses if name == cal.run.model else 1.0


def run_factors(scn: Scenario, cluster, engine: str, weight_sync: str) -> RunFactors:
    """The factors of the scenario's ``[calibration]`` that apply to it (module docstring); uncalibrated when it has
    none."""
    cal = scn.calibration
    if cal is None:
        return UNCALIBRATED
    if cal.fit:  # the fit did not hold on its own measured run: nothing of it applies (docs/calibration.md)
        return RunFactors(source=cal.source or "a measured run", misfit=cal.fit,
                          warnings=(f"not calibrated: {cal.fit}",))
    run = cal.run
    measured = {"model": run.model, "trainer_hardware": run.trainer_hardware,
                "generator_hardware": run.generator_hardware, "trainer_precision": run.trainer_precision,
                "generator_precision": run.generator_precision, "kv_precision": run.kv_precision,
                "engine": run.engine, "framework": run.framework, "weight_sync": run.weight_sync,
                "pools": MODES[run.mode].pools, "batches": _batches(run.mode),
                "workload": _workload(run.response_tokens_mean, run.response_tokens_max)}
    target = stack_identity(scn, cluster, engine, weight_sync)
    values, dropped, warnings = {}, [], []
    for name in FACTOR_NAMES:
        differ = tuple(k for k in TRANSFER_KEYS[name] if measured[k] != target[k])
        if name == "responses" and not differ and response_scale(scn) == 1.0:  # what workload_stats applies
            differ = ("model",)
        if name == "switching" and target["pools"] > 1:
            differ = differ or ("pools",)
        value = getattr(cal.factors, name)
        if value == (0.0 if name == "step_overhead_s" else 1.0):
            continue  # a neutral factor changes nothing, kept or not
        if differ == ("batches",):  # the tail factor, into a plan that streams: nothing of its kind to scale
            dropped.append((name, differ))
            warnings.append(f"calibration: tail ({_show(name, value)}, the wait for the measured batch's slowest "
                            f"trajectories) is dropped: this {scn.orchestration.mode} plan streams its generation, "
                            f"so no batch waits for its slowest trajectories; the engine's speed carries as the "
                            f"generation factor")
        elif differ:
            dropped.append((name, differ))
            warnings.append(f"calibration: {name} ({_show(name, value)}) is dropped: the measured run's "
                            + ", ".join(f"{k} {measured[k]} differs from this scenario's {target[k]}"
                                        for k in differ))
        else:
            values[name] = value
            if name == "responses" and measured["workload"] != target["workload"]:
                warnings.append(f"calibration: responses ({_show(name, value)}: the measured run's times imply "
                                f"responses {_show(name, value)} the lengths its scenario assumed, "
                                f"{measured['workload']}) scales this plan's assumed lengths alike "
                                f"({target['workload']}); if this plan's lengths are measured, not assumed, "
                                f"calibrate with the measured length (response_tokens_mean) instead")
    across = _across_modes(run.mode, scn.orchestration.mode) if values else ""
    if across:
        warnings.append(f"calibration: {across}")
    return RunFactors(**values, source=cal.source or "a measured run", dropped=tuple(dropped),
                      warnings=tuple(warnings), across_modes=across)


def _across_modes(measured: str, target: str) -> str:
    """Why factors from a run of mode ``measured`` predict a ``target`` plan less well, or "": a run whose
    generation and training alternate (colocated, sync) or that does not stream carries to a plan whose step is built
    otherwise. Its measured generation is the engine at its throughput plus the wait for the batch's slowest
    trajectories (and, colocated, the pool's switch); the fit splits it into the generation factor (the engine's
    speed, which carries) and the tail factor (which carries only to a plan that generates in synchronous batches),
    but a log of the step or of the whole generation cannot tell the two apart: the split follows the model and the
    factors' priors, so the step-time error is wider (issue 37; data/rl_calibration.toml
    ``calibrate_across_modes_error``, measured on pairs C-01..C-05)."""
    a, b = MODES[measured], MODES[target]
    if (a.alternates, a.streaming) == (b.alternates, b.streaming):
        return ""
    how = ("alternates generation and training" if a.alternates else
           "streams generation" if a.streaming else "generates in synchronous batches")
    return (f"carried across modes: the measured {measured} run {how}, this {target} plan does not; its logged "
            f"generation is split into the engine's speed (carried) and the wait for the batch's slowest "
            f"trajectories and the switch (not carried where the plan has none), but a step-time log cannot tell "
            f"them apart, so the step-time error is wider")


def _batches(mode: str) -> str:
    """Whether a run of ``mode`` generates in synchronous batches ("synchronous": colocated, sync, one_step_off,
    periodic) or streams under a staleness bound ("streaming": async, inflight)."""
    return "streaming" if MODES[mode].streaming else "synchronous"


def _show(name: str, value: float) -> str:
    return f"{value:,.3g} s per step" if name == "step_overhead_s" else f"x{value:.3g}"
