"""The sentences of ``report.advice``, written from numbers the model and the diagnosis already computed
(:mod:`tcocalc.rl.diagnosis`, :mod:`tcocalc.rl.search`): no model call here. Each function says one thing: what
limits a split, another serving arrangement, multi-node NVLink, a wider generator instance, the split kept or moved
and its neighbours, a smaller cluster, and the general advice on synchronous tails and discarded rollouts.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from ..scenario import Scenario
from .diagnosis import Arrangement
from .results import CalibrationStatus, PhaseResult, Sizing, Trust
from .search import OBJECTIVE_LABEL, SIDE_MAX, SPLIT_TOLERANCE, Sweep, gain, objective_values

__all__ = ["Facts", "limit_lines", "arrangement_line", "general_advice", "split_line", "infeasible_side",
           "neighbour_line", "sizing_advice", "calibration_line"]


@dataclass(frozen=True)
class Facts:
    """What the words about a split need: its run ``metrics``, its first phase's stage results (``first``), the
    binding limits per phase and the useful samples/s with one more step of staleness (``looser``, None where the
    bound does not bind)."""

    metrics: dict
    first: PhaseResult
    limits: dict
    looser: float | None


def limit_lines(scn: Scenario, a: Facts, solved: bool) -> list[str]:
    """One line per binding limit (phases named where they differ); GPU moves suggested only before a solve."""
    by_kind: dict[str, list[str]] = {}
    for phase, kinds in a.limits.items():
        for kind in kinds:
            by_kind.setdefault(kind, []).append(phase)
    every = list(a.limits)
    lines = []
    for kind, phases in by_kind.items():
        where = "" if phases == every else f" in phase {', '.join(phases)}"
        line = _limit_line(scn, a, kind, where, solved)
        if line and line not in lines:
            lines.append(line)
    return lines


def _limit_line(scn: Scenario, a: Facts, kind: str, where: str, solved: bool) -> str | None:
    """The line for one binding ``kind`` (:func:`~tcocalc.rl.diagnosis.binding_limits`), ``None`` when a solved
    synchronous split or a lightly waiting pool needs none."""
    m, sb, orch = a.metrics, scn.sandbox, scn.orchestration
    x, ti, gi = m["useful_samples_per_s"], m["trainer_idle_fraction"], m["generator_idle_fraction"]
    split = f"{m['trainer_gpus']:.0f}:{m['generator_gpus']:.0f}"
    no_gpus = "; more GPUs on either side do not."
    if kind == "sandbox_start":
        fails = f" ({sb.failure_rate:.0%} of attempts fail)" if sb.failure_rate > 0 else ""
        return (f"The sandbox start rate caps throughput{where} at {x:.3g} useful samples/s whatever the split: "
                f"at most {sb.max_starting:,} sandboxes start at once and each start takes "
                f"{a.first.rates.startup_s:,.0f} s with retries{fails}. A higher sandbox.max_starting or a "
                f"faster start raises it{no_gpus}")
    if kind == "sandbox_concurrency":
        if orch.traits.synchronous:
            return (f"Sandbox concurrency stretches each step{where} whatever the split: "
                    f"{a.first.flow.in_flight[0]:,.0f} rollouts share at most {sb.max_concurrency:,} live "
                    f"sandboxes, so they run in waves. A higher sandbox.max_concurrency shortens the step{no_gpus}")
        return (f"Sandbox concurrency caps throughput{where} at {x:.3g} useful samples/s whatever the split: at "
                f"most {sb.max_concurrency:,} sandboxes are live and each trajectory holds one for about "
                f"{a.first.flow.rollout_latency_s[0]:,.0f} s. A higher sandbox.max_concurrency or shorter "
                f"trajectories raise it{no_gpus}")
    if kind == "sandbox_executions":
        return (f"Tool-call executors cap throughput{where}: at most {sb.max_executing:,} calls of "
                f"{sb.tool_call_s:g} s run at once, fewer than the generator offers, so calls queue. A higher "
                f"sandbox.max_executing or shorter calls raise it{no_gpus}")
    if kind == "staleness" and a.first.rates.streamed:
        eta = orch.max_staleness
        return (f"The staleness bound caps throughput{where}: with max_staleness {eta:g} at most "
                f"{eta + 1:g} batches of samples are admitted per policy version, so the trainer waits for "
                f"samples admitted at a recent weight push (with partial rollout nothing waits for the longest "
                f"rollout) and idles {ti:.0%} of the time; "
                f"max_staleness {eta + 1:g} would give {a.looser:.3g} useful samples/s instead of {x:.3g}.")
    if kind == "staleness":
        eta = orch.max_staleness
        return (f"The staleness bound caps throughput{where}: with max_staleness {eta:g} the generator may run at "
                f"most {eta:g} policy versions ahead of the trainer and each batch's longest rollout must finish "
                f"within that window, so the generator waits {gi:.0%} of the time; max_staleness {eta + 1:g} "
                f"would give {a.looser:.3g} useful samples/s instead of {x:.3g}.")
    if orch.traits.shared_pool:
        split = f"the {m['trainer_gpus']:,.0f}-GPU pool"
    if orch.traits.synchronous:
        return (f"What limits {split}{where}: a synchronous step waits for its slowest rollout, so the trainer "
                f"idles {ti:.0%} and the generator {gi:.0%} of it.") if solved else None
    if kind == "trainer":
        if solved:
            return (f"What limits {split}{where}: the trainer sets the pace "
                    f"({m['trainer_capacity_samples_per_s']:.3g} samples/s when never starved).")
        return (f"Trainer-bound{where}: the generator waits {gi:.0%} of the time. Move GPUs from the generator "
                f"to the trainer (a solved split finds the balance).") if gi > 0.1 else None
    if solved:
        return (f"What limits {split}{where}: generation "
                f"({m['generator_capacity_samples_per_s']:.3g} useful samples/s when never blocked); shorter "
                f"responses, less oversampling or more KV capacity per generator GPU raise it.")
    return (f"Generation-bound{where}: the trainer waits {ti:.0%} of the time. Move GPUs from the trainer to the "
            f"generator (a solved split finds the balance), cut response length or oversampling, or raise "
            f"generator precision/KV capacity.") if ti > 0.1 else None


def arrangement_line(a: Arrangement) -> str:
    """The line for another arrangement of the split (:class:`~tcocalc.rl.diagnosis.Arrangement`)."""
    x0, x1 = a.useful_before, a.useful_after
    change = f"useful samples/s {x0:.3g} -> {x1:.3g} (+{x1 / x0 - 1:.0%}) at this split"
    if a.kind == "aggregated":
        return (f"Aggregated serving (generator.disaggregated = false) would raise {change}: the prefill pool "
                f"takes more decode replicas than its shorter steps give back.")
    if a.kind == "disaggregated":
        return (f"Disaggregated prefill/decode (generator.disaggregated = true) would raise {change}: "
                f"{a.prefill_gpus} of the {a.generator_gpus} generator GPUs prefilling in "
                f"{a.prefill_instance} instances, decode in {a.decode_instance} instances.")
    if a.kind == "multinode_nvlink":
        keys = " and ".join(a.keys)
        return (f"Multi-node NVLink ({keys} = true: the job holds an IMEX channel, so NCCL crosses the "
                f"{a.server_gpus}-GPU servers of the {a.domain_gpus}-GPU NVLink domain over NVLink instead of "
                f"the scale-out network) would raise useful samples/s {x0:.3g} -> {x1:.3g} (+{x1 / x0 - 1:.0%}) at "
                f"this split.")
    return (f"A TP{a.tp} generator instance (generator.tp = {a.tp}) would raise useful samples/s {x0:.3g} -> "
            f"{x1:.3g} (+{x1 / x0 - 1:.0%}) at this split: its decode step at batch 1 takes {a.t0_s * 1e3:.3g} ms "
            f"against {a.t0_before_s * 1e3:.3g} ms on {a.instance_before}, the throughput-best instance, and this "
            f"run waits on per-token latency (the batch tail, the staleness window or tool turns).")


#: What each cause of discarded rollouts (:func:`~tcocalc.rl.diagnosis.discard_causes`) is and what saves it.
DISCARD_WORDS = {
    "zero_advantage": ("zero-advantage groups dropped by dynamic sampling", "curriculum filtering of always/never-"
                                                                             "solved prompts (workload.solve_rate)"),
    "sandbox_loss": ("groups that lost a member to a failed sandbox start", "reliable sandbox starts "
                                                                           "(sandbox.failure_rate, sandbox.retries)"),
    "oversampling": ("the oversampled tail aborted each step", "less oversampling (orchestration.oversampling)"),
}


def general_advice(scn: Scenario, metrics: dict, discards: dict | None = None) -> list[str]:
    """The synchronous tail, and discarded rollouts by their largest cause (``discards``, shares of dispatched
    rollouts by cause; without it the causes are listed)."""
    out = []
    mode, ti = scn.orchestration.mode, metrics["trainer_idle_fraction"]
    if scn.orchestration.traits.synchronous and ti > 0.3:
        out.append(f"{mode}: the trainer idles {ti:.0%} of each step while rollouts finish (long tail). "
                   f"Asynchronous orchestration (one_step_off or async) overlaps the two.")
    if metrics["discarded_fraction"] > 0.4:
        if not discards or max(discards.values()) <= 0:
            out.append(f"{metrics['discarded_fraction']:.0%} of dispatched rollouts are thrown away (zero-advantage "
                       f"groups, oversampling, sandbox loss): curriculum filtering of always/never-solved prompts "
                       f"saves that generation.")
        else:
            cause = max(discards, key=discards.get)
            what, fix = DISCARD_WORDS[cause]
            out.append(f"{metrics['discarded_fraction']:.0%} of dispatched rollouts are thrown away, most of them "
                       f"{what} ({discards[cause]:.0%} of those dispatched): {fix} saves that generation.")
    return out


def split_line(scn: Scenario, sw: Sweep, score, objective: str, given: int, chosen: int, best: int,
                after: dict) -> str:
    """The scenario's split against the chosen one: kept (and why), moved (and what it gains), or cannot run."""
    c = sw.combined
    here = f"Split {sw.n_t[given]}:{sw.n_g[given]}"
    to = f"{int(after['trainer_gpus'])}:{int(after['generator_gpus'])}"
    if not sw.feasible[given]:
        return (f"{here} cannot run: {infeasible_side(scn, sw, given)}. Solved {to} (trainer:generator): useful "
                f"samples/s {after['useful_samples_per_s']:.3g}, $/useful sample "
                f"{_per_useful(after['usd_per_hour'], after['useful_samples_per_s'])}.")
    label = OBJECTIVE_LABEL[objective]
    if chosen == given:
        if best == given:
            return f"{here} kept (trainer:generator): no other split does better for {label}."
        value = objective_values(objective, c)
        return (f"{here} kept (trainer:generator): the best other split, {sw.n_t[best]}:{sw.n_g[best]}, improves "
                f"{label} by only {_pct(gain(score[given], score[best]))} ({value[given]:.3g} -> {value[best]:.3g}), "
                f"within the {SPLIT_TOLERANCE:.0%} tolerance.")
    unmet = "" if sw.ok[given] else " (it does not meet the constraints)"
    return (f"{here} -> {to} (trainer:generator){unmet}: trainer idle {c['trainer_idle_fraction'][given]:.0%} -> "
            f"{after['trainer_idle_fraction']:.0%}, useful samples/s {c['useful_samples_per_s'][given]:.3g} -> "
            f"{after['useful_samples_per_s']:.3g}, $/useful sample "
            f"{_per_useful(c['usd_per_hour'][given], c['useful_samples_per_s'][given])} -> "
            f"{_per_useful(after['usd_per_hour'], after['useful_samples_per_s'])}.")


def infeasible_side(scn: Scenario, sw: Sweep, j: int) -> str:
    """Which side of candidate ``j`` cannot hold the model (memory)."""
    for res in sw.results:
        if res.rates.n_rep[j] == 0:
            if res.generator.prefill_pool is not None:
                return (f"{sw.n_g[j]} generator GPUs cannot run one decode instance next to its prefill pool "
                        f"(at least {res.generator.min_gpus} GPUs)")
            return (f"{sw.n_g[j]} generator GPUs cannot hold one serving instance "
                    f"({res.generator.instance_gpus} GPUs, {res.generator.instance.label()})")
    return f"{sw.n_t[j]} trainer GPUs cannot hold {scn.model.name} for training (memory)"


def neighbour_line(scn: Scenario, sw: Sweep, score, objective: str, g: int, i: int, cons: tuple) -> str:
    """Why the chosen split is not moved one search step either way: worse (or better only within the
    tolerance), a side out of memory, a constraint broken, or no such split."""
    value = objective_values(objective, sw.combined)
    parts = []
    for j, side in ((i - 1, "generator"), (i + 1, "trainer")):
        if not 0 <= j < sw.n_t.size:
            full = (sw.n_g[i] if side == "generator" else sw.n_t[i]) + g > SIDE_MAX
            parts.append(f"no split gives the {side} more GPUs" + (f" (a pool holds at most {SIDE_MAX:,})"
                                                                   if full else ""))
            continue
        label = f"{sw.n_t[j]}:{sw.n_g[j]} ({abs(int(sw.n_t[j]) - int(sw.n_t[i]))} more to the {side})"
        if not sw.feasible[j]:
            parts.append(f"{label}: {infeasible_side(scn, sw, j)}")
        elif not sw.ok[j]:
            max_staleness, max_sandboxes = cons
            broken = (f"mean staleness {sw.combined['mean_staleness_steps'][j]:.2g} over max_staleness "
                      f"{max_staleness:g}" if max_staleness is not None and
                      sw.combined["mean_staleness_steps"][j] > max_staleness else
                      f"{sw.peak_sandboxes[j]:,.0f} sandboxes over max_sandboxes {max_sandboxes:,}")
            parts.append(f"{label}: {broken}")
        else:
            rel = (score[j] - score[i]) / abs(score[i]) if score[i] != 0 else math.inf
            verdict = ("about the same" if abs(rel) < 0.0005 else f"{rel:.1%} worse" if rel > 0 else
                       f"{-rel:.1%} better, within the {SPLIT_TOLERANCE:.0%} tolerance")
            parts.append(f"{label} gives {OBJECTIVE_LABEL[objective]} {value[j]:.3g} ({verdict})")
    return f"Neighbouring splits in the search ({g}-GPU granularity): " + "; ".join(parts) + "."


def sizing_advice(sizing: Sizing | None, chosen: dict) -> list[str]:
    if sizing is None or sizing.total >= sizing.of_total:
        return []
    s = sizing
    split = ("one pool" if s.trainer_gpus == s.generator_gpus == s.total else
             f"{s.trainer_gpus:,}:{s.generator_gpus:,}")
    reach = s.useful_samples_per_s / s.best_useful_samples_per_s
    return [f"Cluster size: {s.total:,} GPUs ({split}) reach {reach:.1%} of the "
            f"{s.best_useful_samples_per_s:.3g} useful samples/s that the best split of all {s.of_total:,} "
            f"GPUs reaches, at $/useful sample {_per_useful(s.usd_per_hour, s.useful_samples_per_s)} instead "
            f"of {_per_useful(chosen['usd_per_hour'], chosen['useful_samples_per_s'])}: the other "
            f"{s.of_total - s.total:,} GPUs add cost, not throughput."]


def _pct(share: float) -> str:
    return f"{share:.1%}" if share >= 0.0005 else "under 0.1%"


def _per_useful(usd_per_hour: float, useful: float) -> str:
    return f"{usd_per_hour / 3600 / useful:.3g}" if useful > 0 else "n/a"


def _error_text(trust: Trust | dict) -> str:
    """The typical step-time error in words: the out-of-sample figure of the scenario's regime (rounded up), the
    calibrated figure, or that the regime has no out-of-sample evidence (never another regime's figure)."""
    trust = trust.as_dict() if isinstance(trust, Trust) else trust
    regime = trust.get("regime")
    if trust.get("typical_error") is None:
        return (f"no out-of-sample evidence for this regime ({regime or 'unknown'}), so its step-time error is "
                f"unmeasured")
    pct = math.ceil(100 * trust["typical_error"] - 1e-9)
    where = ""
    if trust.get("basis") == "uncalibrated" and regime:
        n, fws = trust["rows"], " and ".join(trust.get("frameworks") or ())
        where = (f"measured out of sample on {n} published run{'s' if n != 1 else ''}" + (f" of {fws}" if fws else "")
                 + f" in its regime, {regime}; ")
    return f"typical step-time error ±{pct}% ({where}samples/s, $/Mtok and the run's time and cost follow it)"


def calibration_line(calibration: CalibrationStatus | dict, trust: Trust | dict | None = None) -> str:
    """One sentence: whether a plan is calibrated, from what run, with which factors (and which did not carry over
    to this stack), and the typical step-time error that goes with it. ``calibration`` is
    ``report.diagnosis.calibration`` (:func:`~tcocalc.rl.solve.calibration_status`), ``trust``
    ``report.diagnosis.trust`` (:func:`~tcocalc.rl.solve.trust`: uncalibrated, the leave-one-framework-out median
    |error| of the scenario's regime, or that the regime has none; calibrated, the larger of the in-sample
    sibling pairs' and the out-of-sample pairs' median |error|, or the across-modes pairs'); the mappings
    ``report.details`` gives are taken too. The one sentence the CLI, the app, sizing and the workbook print."""
    cal = calibration if isinstance(calibration, CalibrationStatus) else CalibrationStatus(
        calibrated=bool(calibration.get("calibrated")), source=calibration.get("source"),
        factors=calibration.get("factors") or {}, dropped=calibration.get("dropped") or {},
        misfit=calibration.get("misfit") or "", across_modes=calibration.get("across_modes") or "")
    err = _error_text(trust) if trust else ""
    dropped = f"; not carried over to this stack: {', '.join(cal.dropped)}" if cal.dropped else ""
    if cal.misfit:
        return (f"Not calibrated: {cal.misfit} (calibration from {cal.source}); the uncalibrated model"
                + (f": {err}." if err else "."))
    if not cal.calibrated:
        text = "Uncalibrated model" + (f" (a run calibration from {cal.source} does not apply{dropped})"
                                       if cal.source else "")
        return text + (f": {err}." if err else ".")
    factors = ", ".join(f"{k} {v:,.3g} s" if k == "step_overhead_s" else f"{k} x{v:.3g}"
                        for k, v in cal.factors.items())
    across = f"; {cal.across_modes}" if cal.across_modes else ""
    return f"Calibrated from {cal.source} ({factors}{dropped}{across})" + (f"; {err}." if err else ".")
