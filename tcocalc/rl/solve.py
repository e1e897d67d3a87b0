"""Evaluate a trainer/generator split, and solve for the best one (docs/rl-modeling.md §5).

:func:`evaluate` runs the staged model (:func:`~tcocalc.rl.pipeline.evaluate_splits`) for the scenario's
split, phase by phase, and combines the phases (:func:`~tcocalc.rl.report.combine_phases`).
:func:`solve_split` runs the same stages over every candidate split at once (vectorised), combines phases
the same way, and picks the best feasible split for the objective, keeping the scenario's own split unless
another gains more than :data:`SPLIT_TOLERANCE`. A colocated scenario has one candidate (its single pool)
and goes through the same path.

Both say in ``report.advice`` what limits the split: the trainer, generation, the staleness bound, the
sandbox start rate or sandbox concurrency (``report.details["binding_limits"]``, per phase), and warn when
hardly any group can carry signal (``report.details["warnings"]``). :func:`solve_split` also names what
stops a further move (the neighbouring splits: worse, out of memory, or breaking a constraint) and the
smallest total GPU count that would reach 99% of the best throughput (cluster sizing).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from ..catalog.accelerators import hardware as catalog_hardware
from ..economics.tco import gpus_paid
from ..errors import InfeasibleError, ScenarioError, TcocalcError
from ..scenario import GeneratorSection, Scenario, TrainerSection
from .capacity import pinned_layout, smallest_fitting_layout, trainer_min_gpus
from .cluster import Cluster, resolve
from .flow import SYNC_MODES, streamed
from .phases import phase_list, workload_stats
from .pipeline import PhaseResult, evaluate_splits
from .report import OBJECTIVES, RLReport, assert_finite, combine_phases, scalar_metrics

__all__ = ["evaluate", "solve_split", "phase_results", "SPLIT_TOLERANCE", "USEFUL_GROUP_FLOOR", "SIZING_SHARE",
           "MAX_CANDIDATES"]

#: :func:`solve_split` keeps the scenario's own split unless the best split improves the objective by more
#: than this share of the given split's value: smaller gains are below what the model can resolve, and a
#: move of GPUs for them is noise, not advice.
SPLIT_TOLERANCE = 0.01
#: A phase in which fewer groups than this share carry signal (rewards not all equal, §6) gets a warning:
#: its step time and run cost are those of a run that discards or wastes nearly all it generates.
USEFUL_GROUP_FLOOR = 0.05
#: Cluster sizing: the smallest total GPU count whose best split reaches this share of the best throughput.
SIZING_SHARE = 0.99
#: :func:`solve_split` evaluates at most about this many splits in one pass; a larger cluster is searched on
#: a coarser grid first, then in full granularity between the coarse best's neighbours.
MAX_CANDIDATES = 1024

_RTOL = 1e-6  # a throughput within this of a cap is held by it (the async fixed point converges to 1e-10)
_CAP_ORDER = ("sandbox_start", "sandbox_concurrency", "trainer", "staleness", "generator")
_SIDE_MAX = min(next(m.le for m in sec.model_fields["gpus"].metadata if hasattr(m, "le"))
                for sec in (TrainerSection, GeneratorSection))  # the scenario's limit on either pool [GPU]
_OBJECTIVE_LABEL = {"usd_per_useful_sample": "$/useful sample", "useful_samples_per_s": "useful samples/s"}


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
    if gcap.prefill_pool is not None and int(gcap.replicas(n_g)) < 1:
        pool = gcap.prefill_pool
        field = "generator.prefill_gpus" if pool.pinned_gpus is not None else "generator.gpus"
        raise InfeasibleError(
            f"{field}: {n_g} disaggregated generator GPUs do not run one fed decode instance ({gcap.instance_gpus} "
            f"GPUs, {gcap.instance.label()}) next to its prefill pool (instances of {pool.instance_gpus} GPUs, "
            f"{pool.instance.label()}); the smallest that works is {gcap.min_gpus} GPUs", min_gpus=gcap.min_gpus)
    if not bool(res.feasible[0]) and scn.trainer.pinned_layout:
        _pinned_layout_error(scn, cluster, ws, n_t)
    if not bool(res.feasible[0]):
        need = trainer_min_gpus(scn, cluster, ws)
        raise InfeasibleError(
            f"trainer: {n_t} x {scn.trainer.hardware} cannot train {m.name} ({scn.model.precision}) on "
            f"{ws.traj_tokens:,.0f}-token trajectories; " + (f"at least {need} GPUs fit" if need else
                                                               "no GPU count up to 32,768 fits"), min_gpus=need)


def _pinned_layout_error(scn: Scenario, cluster: Cluster, ws, n_t: int) -> None:
    """InfeasibleError naming the pinned trainer layout (its fields) and the smallest layout that fits."""
    t, m = scn.trainer, cluster.model
    pins = {k: getattr(t, k) for k in ("tp", "pp", "ep", "cp", "vp") if getattr(t, k) is not None}
    fields = ", ".join(f"trainer.{k} = {v}" for k, v in pins.items())
    par = pinned_layout(t, m, n_t)
    if par is None:
        why = (f"does not divide {n_t} GPUs or does not fit {m.name} (tp must divide its {m.num_attention_heads} "
               f"heads, ep its experts and tp·dp·cp)")
    else:
        why = f"({par.label()}) does not fit in {scn.trainer.hardware} memory"
    alt = smallest_fitting_layout(scn, cluster, ws, n_t)
    hint = (f"; the smallest layout that fits {n_t} GPUs is {alt.label()} (trainer.tp = {alt.tp}, trainer.pp = "
            f"{alt.pp}, trainer.ep = {alt.ep})") if alt is not None else "; no layout fits this many GPUs"
    raise InfeasibleError(f"trainer layout {fields} {why}{hint}", layout=alt)


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
    """One split evaluated: the report's parts, the stage results behind them, and the run's useful samples/s
    with one more step of staleness allowed (None where the staleness bound does not bind)."""

    metrics: dict
    phases: object
    details: dict
    results: list[PhaseResult]
    looser_useful: float | None


def _assess(scn: Scenario, cluster: Cluster, looser: bool = True) -> _Assessed:
    """The scenario's own split through every stage, with its warnings and binding limits in ``details``;
    ``looser=False`` skips the re-evaluation at one more step of staleness (only the advice quotes it)."""
    n_t, n_g = scn.trainer.gpus, scn.generator.gpus
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
    limits, looser = _binding_limits(scn, cluster, results, looser)
    details["binding_limits"] = limits
    details["warnings"] = _warnings(scn, results)
    return _Assessed(metrics, _phase_table(parts, results), details, results, looser)


def evaluate(scenario: Scenario, *, advice: bool = True) -> RLReport:
    """Metrics of the split given in the scenario (``trainer.gpus`` : ``generator.gpus``).

    ``advice=False`` writes no advice (``report.advice`` is empty) and skips the evaluations only the advice
    needs (the other prefill/decode arrangement, multi-node NVLink, one more step of staleness): the metrics,
    phases, binding limits and warnings are the same (what :func:`tcocalc.sweep` runs per point).

    ``report.details["binding_limits"]`` maps each phase to the limits that cap its throughput
    (``"trainer"``, ``"generator"``, ``"staleness"``, ``"sandbox_start"``, ``"sandbox_concurrency"``);
    ``report.details["warnings"]`` lists workloads in which hardly any group carries signal (dicts with
    ``kind``, ``phase``, ``useful_group_fraction``, ``floor``, ``message``); ``report.advice`` says both in words.
    Raises :class:`InfeasibleError` naming the side that cannot hold the model and the GPUs that would
    (``min_gpus``, and ``layout`` where a serving instance is meant).
    """
    scn = scenario
    cluster = resolve(scn)
    a = _assess(scn, cluster, looser=advice)
    if not advice:
        return RLReport(scenario=scn, metrics=a.metrics, details=a.details, phases=a.phases)
    lines = [w["message"] for w in a.details["warnings"]] + _limit_advice(scn, a, solved=False)
    lines += _serving_advice(scn, cluster, a.metrics) + _nvlink_advice(scn, a.metrics)
    return RLReport(scenario=scn, metrics=a.metrics, details=a.details, phases=a.phases,
                    advice=tuple(lines + _general_advice(scn, a.metrics)))


# ------------------------------------------------------------------ what limits a split
def _binding_limits(scn: Scenario, cluster: Cluster, results: list[PhaseResult],
                    looser: bool = True) -> tuple[dict, float | None]:
    """Per phase, the limits that hold its throughput at this split; and the run's useful samples/s with
    ``max_staleness + 1`` where the staleness bound holds a phase (None otherwise, or when ``looser`` is false).

    Async modes: the throughput equals the trainer's capacity, the sandbox start-rate cap
    ``keep·max_starting/t_start`` or the concurrency cap ``keep·max_concurrency/W_gen`` (§5.4, §7); otherwise
    one more step of staleness raises it (the staleness bound) or not (generation). Synchronous modes: the
    longer of generation and training, and sandbox concurrency when a step dispatches more rollouts than it.
    """
    out: dict[str, list[str]] = {}
    if scn.orchestration.mode in SYNC_MODES:
        for res in results:
            f, r, ws, sb = res.flow, res.rates, res.workload, scn.sandbox
            kinds = ["sandbox_concurrency"] if (ws.uses_sandbox and 0 < sb.max_concurrency < f.in_flight[0]) else []
            kinds.append("generator" if r.batch / f.generator_capacity[0] >= r.t_train[0] else "trainer")
            out[ws.phase] = kinds
        return out, None
    for res in results:  # the step model names every cap on X (flow.caps); those within _RTOL of X bind
        f = res.flow
        kinds = [k for k in _CAP_ORDER if k in f.caps and f.caps[k][0] <= f.trained_per_s[0] * (1 + _RTOL)]
        if kinds != ["staleness"] and "staleness" in kinds:
            kinds.remove("staleness")  # the bound only binds alone: another cap at X holds it there anyway
        if "generator" in kinds and len(kinds) > 1:
            kinds.remove("generator")  # a sandbox or trainer cap at the same rate is what to change
        out[res.workload.phase] = kinds
    if not looser or not any(kinds == ["staleness"] for kinds in out.values()):
        return out, None
    o = scn.orchestration  # what one more step of staleness would give, for the advice
    looser = scn.model_copy(update={"orchestration": o.model_copy(update={"max_staleness": o.max_staleness + 1})})
    loose = phase_results(looser, cluster, results[0].rates.n_t, results[0].rates.n_g)
    return out, float(combine_phases(looser, [(r.workload, r.metrics) for r in loose])["useful_samples_per_s"][0])


def _limit_advice(scn: Scenario, a: _Assessed, solved: bool) -> list[str]:
    """One line per binding limit (phases named where they differ); GPU moves suggested only before a solve."""
    by_kind: dict[str, list[str]] = {}
    for phase, kinds in a.details["binding_limits"].items():
        for kind in kinds:
            by_kind.setdefault(kind, []).append(phase)
    every = list(a.details["binding_limits"])
    lines = []
    for kind, phases in by_kind.items():
        where = "" if phases == every else f" in phase {', '.join(phases)}"
        line = _limit_line(scn, a, kind, where, solved)
        if line and line not in lines:
            lines.append(line)
    return lines


def _limit_line(scn: Scenario, a: _Assessed, kind: str, where: str, solved: bool) -> str | None:
    m, sb, orch = a.metrics, scn.sandbox, scn.orchestration
    x, ti, gi = m["useful_samples_per_s"], m["trainer_idle_fraction"], m["generator_idle_fraction"]
    split = f"{m['trainer_gpus']:.0f}:{m['generator_gpus']:.0f}"
    no_gpus = "; more GPUs on either side do not."
    if kind == "sandbox_start":
        fails = f" ({sb.failure_rate:.0%} of attempts fail)" if sb.failure_rate > 0 else ""
        return (f"The sandbox start rate caps throughput{where} at {x:.3g} useful samples/s whatever the split: "
                f"at most {sb.max_starting:,} sandboxes start at once and each start takes "
                f"{a.results[0].rates.startup_s:,.0f} s with retries{fails}. A higher sandbox.max_starting or a "
                f"faster start raises it{no_gpus}")
    if kind == "sandbox_concurrency":
        if orch.mode in SYNC_MODES:
            return (f"Sandbox concurrency stretches each step{where} whatever the split: "
                    f"{a.results[0].flow.in_flight[0]:,.0f} rollouts share at most {sb.max_concurrency:,} live "
                    f"sandboxes, so they run in waves. A higher sandbox.max_concurrency shortens the step{no_gpus}")
        return (f"Sandbox concurrency caps throughput{where} at {x:.3g} useful samples/s whatever the split: at "
                f"most {sb.max_concurrency:,} sandboxes are live and each trajectory holds one for about "
                f"{a.results[0].flow.rollout_latency_s[0]:,.0f} s. A higher sandbox.max_concurrency or shorter "
                f"trajectories raise it{no_gpus}")
    if kind == "staleness" and streamed(scn):
        eta = orch.max_staleness
        return (f"The staleness bound caps throughput{where}: with max_staleness {eta:g} at most "
                f"{eta + 1:g} batches of samples are admitted per policy version, so the trainer waits for "
                f"samples admitted at a recent weight push (with partial rollout nothing waits for the longest "
                f"rollout) and idles {ti:.0%} of the time; "
                f"max_staleness {eta + 1:g} would give {a.looser_useful:.3g} useful samples/s instead of {x:.3g}.")
    if kind == "staleness":
        eta = orch.max_staleness
        return (f"The staleness bound caps throughput{where}: with max_staleness {eta:g} the generator may run at "
                f"most {eta:g} policy versions ahead of the trainer and each batch's longest rollout must finish "
                f"within that window, so the generator waits {gi:.0%} of the time; max_staleness {eta + 1:g} "
                f"would give {a.looser_useful:.3g} useful samples/s instead of {x:.3g}.")
    if orch.mode == "colocated":
        split = f"the {m['trainer_gpus']:,.0f}-GPU pool"
    if orch.mode in SYNC_MODES:
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


def _useful_at_split(scn: Scenario, other: Scenario, cluster: Cluster):
    """(phase results, useful samples/s) of ``other``, another arrangement of ``scn``'s split; None when it does
    not fit, cannot be evaluated or gives a non-finite rate."""
    try:
        results = phase_results(other, cluster, [scn.trainer.gpus], [scn.generator.gpus])
        if not all(bool(r.feasible[0]) for r in results):
            return None
        x1 = float(combine_phases(other, [(r.workload, r.metrics) for r in results])["useful_samples_per_s"][0])
    except TcocalcError:
        return None
    return (results, x1) if np.isfinite(x1) else None


def _arrangement_gain(scn: Scenario, other: Scenario, cluster: Cluster, metrics: dict):
    """(phase results, useful samples/s now, with ``other``) when ``other`` (an arrangement of the same split)
    delivers more useful samples/s than :data:`SPLIT_TOLERANCE` more; None otherwise (:func:`_useful_at_split`)."""
    alt, x0 = _useful_at_split(scn, other, cluster), metrics["useful_samples_per_s"]
    if alt is None or not (x0 > 0 and alt[1] > x0 * (1.0 + SPLIT_TOLERANCE)):
        return None
    return alt[0], x0, alt[1]


def _serving_advice(scn: Scenario, cluster: Cluster, metrics: dict) -> list[str]:
    """A line when the other prefill/decode arrangement (docs/rl-modeling.md §4.9) would deliver more useful
    samples/s at this split than :data:`SPLIT_TOLERANCE` more; nothing where it does not fit or gains less."""
    g = scn.generator
    if scn.orchestration.mode == "colocated":
        return []
    other = scn.model_copy(update={"generator": g.model_copy(update={"disaggregated": not g.disaggregated,
                                                                     "prefill_gpus": None})})
    gain = _arrangement_gain(scn, other, cluster, metrics)
    if gain is None:
        return []
    results, x0, x1 = gain
    change = f"useful samples/s {x0:.3g} -> {x1:.3g} (+{x1 / x0 - 1:.0%}) at this split"
    if g.disaggregated:
        return [f"Aggregated serving (generator.disaggregated = false) would raise {change}: the prefill pool "
                f"takes more decode replicas than its shorter steps give back."]
    gen = results[0].generator
    return [f"Disaggregated prefill/decode (generator.disaggregated = true) would raise {change}: "
            f"{int(gen.prefill_gpus(g.gpus))} of the {g.gpus} generator GPUs prefilling in "
            f"{gen.prefill_pool.instance.label()} instances, decode in {gen.instance.label()} instances."]


def _nvlink_advice(scn: Scenario, metrics: dict) -> list[str]:
    """A line when multi-node NVLink (``multinode_nvlink = true`` for the pools that run without it, on an
    accelerator whose NVLink domain spans several servers) would deliver more useful samples/s at this split than
    :data:`SPLIT_TOLERANCE` more (docs/rl-modeling.md §3.7): what an IMEX channel for the job is worth. Nothing
    where every pool has it, where a server is the whole domain, or where it gains less."""
    # the catalog accelerator (the cluster's has its domain cut to a server already); the names resolved upstream
    off = {side: hw for side in ("trainer", "generator")
           if not getattr(scn, side).multinode_nvlink
           and (hw := catalog_hardware(getattr(scn, side).hardware)).server_gpus is not None
           and hw.server_gpus < hw.scaleup_domain_gpus}
    if not off:
        return []
    other = scn.with_values({f"{side}.multinode_nvlink": True for side in off})
    gain = _arrangement_gain(scn, other, resolve(other), metrics)
    if gain is None:
        return []
    _, x0, x1 = gain
    hw = next(iter(off.values()))
    keys = " and ".join(f"{side}.multinode_nvlink" for side in off)
    return [f"Multi-node NVLink ({keys} = true: the job holds an IMEX channel, so NCCL crosses the "
            f"{hw.server_gpus}-GPU servers of the {hw.scaleup_domain_gpus}-GPU NVLink domain over NVLink instead of "
            f"the scale-out network) would raise useful samples/s {x0:.3g} -> {x1:.3g} (+{x1 / x0 - 1:.0%}) at "
            f"this split."]


def _instance_advice(scn: Scenario, cluster: Cluster, results: list[PhaseResult], metrics: dict) -> list[str]:
    """:func:`solve_split`'s line when a wider tensor-parallel generator instance (``generator.tp``) would deliver
    more useful samples/s at the solved split than :data:`SPLIT_TOLERANCE` more (only the solver tries it: a few
    more evaluations, which would double a warm :func:`evaluate`). The automatic instance is the steady-state
    throughput-best one (§4.4); an RL step also waits on per-token latency (the batch tail, the staleness
    window, tool turns), which a wider instance shortens. Only wider pure-TP instances within the scale-up
    domain are tried (a narrower one has the higher step time); nothing when ``tp`` is pinned or the generator
    is disaggregated."""
    g = scn.generator
    if g.tp is not None or g.disaggregated:
        return []
    now = results[0].generator
    x0, best = metrics["useful_samples_per_s"], None
    tp = now.instance.tp * 2
    while tp <= min(cluster.generator.scaleup_domain_gpus, g.gpus):
        alt = _useful_at_split(scn, scn.model_copy(update={"generator": g.model_copy(update={"tp": tp})}), cluster)
        if alt is not None and (best is None or alt[1] > best[1]):
            best = (tp, alt[1], alt[0][0].generator)
        tp *= 2
    if best is None or not (x0 > 0 and best[1] > x0 * (1.0 + SPLIT_TOLERANCE)):
        return []
    tp, x1, gen = best
    return [f"A TP{tp} generator instance (generator.tp = {tp}) would raise useful samples/s {x0:.3g} -> {x1:.3g} "
            f"(+{x1 / x0 - 1:.0%}) at this split: its decode step at batch 1 takes {gen.t0 * 1e3:.3g} ms against "
            f"{now.t0 * 1e3:.3g} ms on {now.instance.label()}, the throughput-best instance, and this run waits on "
            f"per-token latency (the batch tail, the staleness window or tool turns)."]


def _general_advice(scn: Scenario, metrics: dict) -> list[str]:
    out = []
    mode, ti = scn.orchestration.mode, metrics["trainer_idle_fraction"]
    if mode in SYNC_MODES and ti > 0.3:
        out.append(f"{mode}: the trainer idles {ti:.0%} of each step while rollouts finish (long tail). "
                   f"Asynchronous orchestration (one_step_off or async) overlaps the two.")
    if metrics["discarded_fraction"] > 0.4:
        out.append(f"{metrics['discarded_fraction']:.0%} of dispatched rollouts are thrown away (zero-advantage "
                   f"groups, oversampling, sandbox loss): curriculum filtering of always/never-solved prompts "
                   f"saves that generation.")
    return out


def _warnings(scn: Scenario, results: list[PhaseResult]) -> list[dict]:
    """Workloads in which no group, or hardly any (under :data:`USEFUL_GROUP_FLOOR`), carries signal (§6)."""
    filt = scn.orchestration.filter_zero_advantage
    if scn.workload.group_size == 1:
        effect = ("zero-advantage filtering discards every rollout, and step time and run cost are those of a "
                  "run that never fills a batch" if filt else
                  "every sample has zero advantage and useful samples/s is 0 (no cost per useful sample)")
        return [{"kind": "group_size_1", "phase": None, "useful_group_fraction": 0.0, "floor": USEFUL_GROUP_FLOOR,
                 "message": f"No group can carry signal: with workload.group_size 1 each group has a single "
                            f"reward, so none has reward variance; {effect}. Use group_size 2 or more."}]
    out = []
    for res in results:
        f = res.workload.useful_group_fraction
        if f >= USEFUL_GROUP_FLOOR:
            continue
        where = "" if len(results) == 1 else f" in phase {res.workload.phase}"
        effect = ("zero-advantage filtering discards nearly every rollout, so step time and run cost are extreme"
                  if filt else "nearly every trained sample has zero advantage")
        out.append({"kind": "few_useful_groups", "phase": res.workload.phase, "useful_group_fraction": f,
                    "floor": USEFUL_GROUP_FLOOR,
                    "message": f"Only {f:.1%} of groups carry signal{where}, under the {USEFUL_GROUP_FLOOR:.0%} "
                               f"floor: nearly all prompts are always or never solved (workload.solve_rate), so "
                               f"{effect}. Filter the prompt set by difficulty first."})
    return out


# ------------------------------------------------------------------ the split search
@dataclass(frozen=True)
class _Sweep:
    """Candidate splits through every stage, phases combined, constraints applied."""

    n_t: np.ndarray
    n_g: np.ndarray
    results: list[PhaseResult]
    feasible: np.ndarray
    ok: np.ndarray              # feasible and within max_staleness / max_sandboxes
    combined: dict
    peak_sandboxes: np.ndarray


def _sweep(scn: Scenario, cluster: Cluster, n_t, n_g, cons: tuple) -> _Sweep:
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
    return _Sweep(n_t, n_g, results, feasible, ok, combined, peak)


def _granularity(scn: Scenario, cluster: Cluster, granularity: int | None, total: int) -> int:
    if granularity is None:  # whole 8-GPU servers on real clusters; single GPUs on small ones
        granularity = 1 if total <= 64 else min(8, cluster.trainer.scaleup_domain_gpus,
                                                cluster.generator.scaleup_domain_gpus)
    if granularity < 1:
        raise ScenarioError("granularity", "must be at least 1")
    return granularity


def _search(scn: Scenario, cluster: Cluster, granularity: int | None, objective: str, cons: tuple):
    """(granularity, sweep): every split in steps of the granularity, each side within the scenario's limit,
    plus the scenario's own split; coarse-to-fine above :data:`MAX_CANDIDATES` splits. Colocated: the pool."""
    if scn.orchestration.mode == "colocated":
        return None, _sweep(scn, cluster, [scn.trainer.gpus], [scn.generator.gpus], cons)
    total = scn.trainer.gpus + scn.generator.gpus
    g = _granularity(scn, cluster, granularity, total)
    units = np.arange(max(1, -(-(total - _SIDE_MAX) // g)), min((total - 1) // g, _SIDE_MAX // g) + 1)
    if units.size == 0:
        raise InfeasibleError(f"{total} GPUs cannot be split into two pools in steps of {g}",
                              min_gpus=2 * g)
    step = -(-units.size // MAX_CANDIDATES)
    n_t = np.union1d(g * np.union1d(units[::step], units[-1:]), [scn.trainer.gpus])
    sw = _sweep(scn, cluster, n_t, total - n_t, cons)
    if step > 1 and sw.ok.any():  # refine between the coarse best's neighbours
        i = int(np.argmin(_score(objective, sw.ok, sw.combined)))
        lo, hi = n_t[max(i - 1, 0)], n_t[min(i + 1, n_t.size - 1)]
        n_t = np.union1d(n_t, g * units[(g * units > lo) & (g * units < hi)])
        sw = _sweep(scn, cluster, n_t, total - n_t, cons)
    return g, sw


def _objective_values(objective: str, metrics: dict):
    useful = metrics["useful_samples_per_s"]
    if objective == "usd_per_useful_sample":
        return metrics["usd_per_hour"] / 3600.0 / np.maximum(useful, 1e-30)
    return useful


def _score(objective: str, ok, metrics: dict):
    """The objective as a score to minimise; infinite where the split is not allowed."""
    value = _objective_values(objective, metrics)
    return np.where(ok, value if objective == "usd_per_useful_sample" else -value, np.inf)


def _gain(before: float, after: float) -> float:
    """Relative improvement of a score (lower is better) from ``before`` to ``after``."""
    if not math.isfinite(before):
        return math.inf
    if after >= before:
        return 0.0
    return (before - after) / abs(before) if before != 0 else math.inf


def _sweep_frame(sw: _Sweep, paid, objective: str, best: int, chosen: int, given: int | None):
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


def solve_split(scenario: Scenario, objective: str = "usd_per_useful_sample", *, granularity: int | None = None,
                max_staleness: float | None = None, max_sandboxes: int | None = None) -> RLReport:
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
    ``report.details["smallest_total_gpus_99pct"]`` is the smallest total GPU count (the scenario's total,
    then quarter-octave steps down) whose best split reaches :data:`SIZING_SHARE` (99%) of the best useful
    samples/s of all the GPUs, and ``details["smallest_split_99pct"]`` that split (None when no sample is
    useful). ``details["binding_limits"]`` and ``details["warnings"]`` are as in :func:`evaluate`.
    """
    if objective not in OBJECTIVES:
        raise ScenarioError("objective", f"must be one of {OBJECTIVES}, got {objective!r}")
    scn = scenario
    cluster = resolve(scn)
    cons = (max_staleness, max_sandboxes)
    g, sw = _search(scn, cluster, granularity, objective, cons)
    if not sw.ok.any():
        if scn.orchestration.mode == "colocated":
            evaluate(scn)  # the typed error naming the side that cannot hold the model
        why = "no split holds the model on both sides" if not sw.feasible.any() else "no split meets the constraints"
        raise InfeasibleError(f"{why} with {int(sw.n_t[0] + sw.n_g[0])} GPUs ({scn.trainer.hardware} trainer, "
                              f"{scn.generator.hardware} generator)")
    score = _score(objective, sw.ok, sw.combined)
    best = int(np.argmin(score))
    given = int(np.flatnonzero(sw.n_t == scn.trainer.gpus)[0])
    chosen = given if _gain(score[given], score[best]) <= SPLIT_TOLERANCE else best
    chosen_scn = scn if chosen == given else scn.with_split(int(sw.n_t[chosen]), int(sw.n_g[chosen]))
    a = _assess(chosen_scn, cluster)
    sizing = _smallest_total(scn, cluster, g, sw, cons)
    details = {**a.details, "smallest_total_gpus_99pct": sizing and sizing["total"],
               "smallest_split_99pct": sizing and (sizing["trainer_gpus"], sizing["generator_gpus"])}
    advice = [w["message"] for w in a.details["warnings"]]
    if scn.orchestration.mode == "colocated":
        advice.append("colocated: one pool, nothing to split")
        advice += _limit_advice(scn, a, solved=True)
    else:
        advice.append(_split_line(scn, sw, score, objective, given, chosen, best, a.metrics))
        advice += _limit_advice(scn, a, solved=True)
        advice.append(_neighbour_line(scn, cluster, sw, score, objective, g, chosen, cons))
        advice += _serving_advice(chosen_scn, cluster, a.metrics)
        advice += _instance_advice(chosen_scn, cluster, a.results, a.metrics)
    advice += _nvlink_advice(chosen_scn, a.metrics)
    advice += _sizing_advice(sizing, a.metrics) + _general_advice(scn, a.metrics)
    phases_df = a.phases
    if len(sw.results) > 1:
        wants = [int(np.argmin(_score(objective, sw.ok, res.metrics))) for res in sw.results]
        phases_df = phases_df.assign(wants_split=[f"{int(sw.n_t[i])}:{int(sw.n_g[i])}" for i in wants])
    sweep = _sweep_frame(sw, gpus_paid(scn, sw.n_t, sw.n_g), objective, best, chosen, given)
    return RLReport(scenario=chosen_scn, metrics=a.metrics, details=details, phases=phases_df, sweep=sweep,
                    advice=tuple(advice))


def _pct(share: float) -> str:
    return f"{share:.1%}" if share >= 0.0005 else "under 0.1%"


def _per_useful(usd_per_hour: float, useful: float) -> str:
    return f"{usd_per_hour / 3600 / useful:.3g}" if useful > 0 else "n/a"


def _split_line(scn: Scenario, sw: _Sweep, score, objective: str, given: int, chosen: int, best: int,
                after: dict) -> str:
    """The scenario's split against the chosen one: kept (and why), moved (and what it gains), or cannot run."""
    c = sw.combined
    here = f"Split {sw.n_t[given]}:{sw.n_g[given]}"
    to = f"{int(after['trainer_gpus'])}:{int(after['generator_gpus'])}"
    if not sw.feasible[given]:
        return (f"{here} cannot run: {_infeasible_side(scn, sw, given)}. Solved {to} (trainer:generator): useful "
                f"samples/s {after['useful_samples_per_s']:.3g}, $/useful sample "
                f"{_per_useful(after['usd_per_hour'], after['useful_samples_per_s'])}.")
    label = _OBJECTIVE_LABEL[objective]
    if chosen == given:
        if best == given:
            return f"{here} kept (trainer:generator): no other split does better for {label}."
        value = _objective_values(objective, c)
        return (f"{here} kept (trainer:generator): the best other split, {sw.n_t[best]}:{sw.n_g[best]}, improves "
                f"{label} by only {_pct(_gain(score[given], score[best]))} ({value[given]:.3g} -> {value[best]:.3g}), "
                f"within the {SPLIT_TOLERANCE:.0%} tolerance.")
    unmet = "" if sw.ok[given] else " (it does not meet the constraints)"
    return (f"{here} -> {to} (trainer:generator){unmet}: trainer idle {c['trainer_idle_fraction'][given]:.0%} -> "
            f"{after['trainer_idle_fraction']:.0%}, useful samples/s {c['useful_samples_per_s'][given]:.3g} -> "
            f"{after['useful_samples_per_s']:.3g}, $/useful sample "
            f"{_per_useful(c['usd_per_hour'][given], c['useful_samples_per_s'][given])} -> "
            f"{_per_useful(after['usd_per_hour'], after['useful_samples_per_s'])}.")


def _infeasible_side(scn: Scenario, sw: _Sweep, j: int) -> str:
    """Which side of candidate ``j`` cannot hold the model (memory)."""
    for res in sw.results:
        if res.rates.n_rep[j] == 0:
            if res.generator.prefill_pool is not None:
                return (f"{sw.n_g[j]} generator GPUs cannot run one decode instance next to its prefill pool "
                        f"(at least {res.generator.min_gpus} GPUs)")
            return (f"{sw.n_g[j]} generator GPUs cannot hold one serving instance "
                    f"({res.generator.instance_gpus} GPUs, {res.generator.instance.label()})")
    return f"{sw.n_t[j]} trainer GPUs cannot hold {scn.model.name} for training (memory)"


def _neighbour_line(scn: Scenario, cluster: Cluster, sw: _Sweep, score, objective: str, g: int, i: int,
                    cons: tuple) -> str:
    """Why the chosen split is not moved one search step either way: worse (or better only within the
    tolerance), a side out of memory, a constraint broken, or no such split."""
    value = _objective_values(objective, sw.combined)
    parts = []
    for j, side in ((i - 1, "generator"), (i + 1, "trainer")):
        if not 0 <= j < sw.n_t.size:
            full = (sw.n_g[i] if side == "generator" else sw.n_t[i]) + g > _SIDE_MAX
            parts.append(f"no split gives the {side} more GPUs" + (f" (a pool holds at most {_SIDE_MAX:,})"
                                                                   if full else ""))
            continue
        label = f"{sw.n_t[j]}:{sw.n_g[j]} ({abs(int(sw.n_t[j]) - int(sw.n_t[i]))} more to the {side})"
        if not sw.feasible[j]:
            parts.append(f"{label}: {_infeasible_side(scn, sw, j)}")
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
            parts.append(f"{label} gives {_OBJECTIVE_LABEL[objective]} {value[j]:.3g} ({verdict})")
    return f"Neighbouring splits in the search ({g}-GPU granularity): " + "; ".join(parts) + "."


# ------------------------------------------------------------------ cluster sizing
def _smallest_total(scn: Scenario, cluster: Cluster, g: int | None, sw: _Sweep, cons: tuple) -> dict | None:
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
                          if a <= _SIDE_MAX and t - a <= _SIDE_MAX])
    small = _sweep(scn, cluster, pairs[:, 0], pairs[:, 1], cons)
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


def _sizing_advice(sizing: dict | None, chosen: dict) -> list[str]:
    if sizing is None or sizing["total"] >= sizing["of_total"]:
        return []
    s = sizing
    split = ("one pool" if s["trainer_gpus"] == s["generator_gpus"] == s["total"] else
             f"{s['trainer_gpus']:,}:{s['generator_gpus']:,}")
    reach = s["useful_samples_per_s"] / s["best_useful_samples_per_s"]
    return [f"Cluster size: {s['total']:,} GPUs ({split}) reach {reach:.1%} of the "
            f"{s['best_useful_samples_per_s']:.3g} useful samples/s that the best split of all {s['of_total']:,} "
            f"GPUs reaches, at $/useful sample {_per_useful(s['usd_per_hour'], s['useful_samples_per_s'])} instead "
            f"of {_per_useful(chosen['usd_per_hour'], chosen['useful_samples_per_s'])}: the other "
            f"{s['of_total'] - s['total']:,} GPUs add cost, not throughput."]
