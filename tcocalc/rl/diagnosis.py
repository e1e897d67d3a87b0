"""What limits a split, as typed numbers (no sentences): the side that cannot hold the model, the limits that
bind each phase, the workload warnings, and the other arrangements of the same split that would deliver more
(disaggregated or aggregated serving, multi-node NVLink, a wider tensor-parallel generator instance). The words
are :mod:`tcocalc.rl.advice`'s, written from these values with no model call.

Cost: :func:`binding_limits` re-runs the model once where the staleness bound binds (one more step of staleness);
:func:`serving_alternative` and :func:`nvlink_alternative` re-run it once each, and only
:func:`~tcocalc.rl.solve.evaluate` and :func:`~tcocalc.rl.solve.solve_split` with advice call them (``advice=False``
skips them: a sweep's points); :func:`wider_tp_alternative`, a few more evaluations, only ``solve_split`` pays.
"""

from __future__ import annotations

import functools
import tomllib
from dataclasses import dataclass

import numpy as np

from ..economics.tco import PoolPrice, amortisation_text
from ..errors import TcocalcError
from ..scenario import Scenario
from .cluster import Cluster, resolve
from .pipeline import phase_results
from .report import combine_phases
from .results import PhaseResult, ReportWarning
from .search import SPLIT_TOLERANCE

__all__ = ["Arrangement", "binding_limits", "group_warnings",
           "calibration_warnings", "pricing", "pricing_warnings", "mfu_warnings", "input_warnings",
           "outcome_warnings", "discard_causes", "useful_at_split", "arrangement_gain", "serving_alternative",
           "nvlink_alternative", "wider_tp_alternative", "better_arrangements", "USEFUL_GROUP_FLOOR", "CAP_ORDER",
           "WORLD_GDP_USD", "IMPLAUSIBLE_STEP_S", "LOW_UTILIZATION"]

#: A phase in which fewer groups than this share carry signal (rewards not all equal, §6) gets a warning:
#: its step time and run cost are those of a run that discards or wastes nearly all it generates.
USEFUL_GROUP_FLOOR = 0.05
_RTOL = 1e-6  # a throughput within this of a cap is held by it (the async fixed point converges to 1e-10)
CAP_ORDER = ("sandbox_start", "sandbox_concurrency", "trainer", "staleness", "generator")
"""The caps a streaming step names (``flow.caps``), in the order the binding limits list them."""


@dataclass(frozen=True)
class Arrangement:
    """Another arrangement of the same split that delivers more useful samples/s than :data:`SPLIT_TOLERANCE` more:
    ``kind`` (``"aggregated"``, ``"disaggregated"``, ``"multinode_nvlink"``, ``"generator_tp"``), useful samples/s
    now and with it, the scenario ``keys`` it sets, and what the words need of it (the prefill pool's GPUs and
    instances, the NVLink domain, the instances' decode step at batch 1 [s])."""

    kind: str
    useful_before: float
    useful_after: float
    keys: tuple[str, ...]
    generator_gpus: int | None = None
    prefill_gpus: int | None = None
    prefill_instance: str | None = None
    decode_instance: str | None = None
    server_gpus: int | None = None
    domain_gpus: int | None = None
    tp: int | None = None
    t0_s: float | None = None
    t0_before_s: float | None = None
    instance_before: str | None = None


def binding_limits(scn: Scenario, cluster: Cluster, results: list[PhaseResult],
                   looser: bool = True) -> tuple[dict, float | None]:
    """Per phase, the limits that hold its throughput at this split; and the run's useful samples/s with
    ``max_staleness + 1`` where the staleness bound holds a phase (None otherwise).

    Async modes: the throughput equals the trainer's capacity, the sandbox start-rate cap
    ``keep·max_starting/t_start`` or the concurrency cap ``keep·max_concurrency/W_gen`` (§5.4, §7); otherwise
    one more step of staleness raises it (the staleness bound) or not (generation). Synchronous modes: the
    longer of generation and training, and sandbox concurrency when a step dispatches more rollouts than it.
    Either: ``sandbox_executions`` where the generator offers at least ``[sandbox] max_executing`` tool calls at
    once (§7.1), in place of the generator and the staleness bound in a streaming step.
    ``looser=False`` skips the re-evaluation at one more step of staleness (only the advice quotes it).
    """
    out: dict[str, list[str]] = {}
    if scn.orchestration.traits.synchronous:
        for res in results:
            f, r, ws, sb = res.flow, res.rates, res.workload, scn.sandbox
            kinds = ["sandbox_concurrency"] if (ws.uses_sandbox and 0 < sb.max_concurrency < f.in_flight[0]) else []
            kinds += ["sandbox_executions"] if _executions_bind(r) else []
            kinds.append("generator" if r.batch / f.generator_capacity[0] >= r.t_train[0] else "trainer")
            out[ws.phase] = kinds
        return out, None
    for res in results:  # the step model names every cap on X (flow.caps); those within _RTOL of X bind
        f = res.flow
        kinds = [k for k in CAP_ORDER if k in f.caps and f.caps[k][0] <= f.trained_per_s[0] * (1 + _RTOL)]
        if kinds != ["staleness"] and "staleness" in kinds:
            kinds.remove("staleness")  # the bound only binds alone: another cap at X holds it there anyway
        if "generator" in kinds and len(kinds) > 1:
            kinds.remove("generator")  # a sandbox or trainer cap at the same rate is what to change
        if _executions_bind(res.rates):  # the generator's capacity is the executors' (§7.1): they hold it
            kinds = ["sandbox_executions"] + [k for k in kinds if k not in ("generator", "staleness")]
        out[res.workload.phase] = kinds
    if not looser or not any(kinds == ["staleness"] for kinds in out.values()):
        return out, None
    o = scn.orchestration  # what one more step of staleness would give, for the advice
    looser = scn.model_copy(update={"orchestration": o.model_copy(update={"max_staleness": o.max_staleness + 1})})
    loose = phase_results(looser, cluster, results[0].rates.n_t, results[0].rates.n_g)
    return out, float(combine_phases(looser, [(r.workload, r.metrics) for r in loose])["useful_samples_per_s"][0])


def _executions_bind(r) -> bool:
    """The generator offers at least ``[sandbox] max_executing`` tool calls at once (§7.1, ``r.execution_load``)."""
    return float(np.ravel(r.execution_load)[0]) >= 1.0


def group_warnings(scn: Scenario, results: list[PhaseResult]) -> list[ReportWarning]:
    """Workloads in which no group, or hardly any (under :data:`USEFUL_GROUP_FLOOR`), carries signal (§6)."""
    filt = scn.orchestration.filter_zero_advantage
    if scn.workload.group_size == 1:
        effect = ("zero-advantage filtering discards every rollout, and step time and run cost are those of a "
                  "run that never fills a batch" if filt else
                  "every sample has zero advantage and useful samples/s is 0 (no cost per useful sample)")
        return [ReportWarning("group_size_1", f"No group can carry signal: with workload.group_size 1 each group "
                                              f"has a single reward, so none has reward variance; {effect}. Use "
                                              f"group_size 2 or more.",
                              numbers={"useful_group_fraction": 0.0, "floor": USEFUL_GROUP_FLOOR})]
    out = []
    for res in results:
        f = res.workload.useful_group_fraction
        if f >= USEFUL_GROUP_FLOOR:
            continue
        where = "" if len(results) == 1 else f" in phase {res.workload.phase}"
        effect = ("zero-advantage filtering discards nearly every rollout, so step time and run cost are extreme"
                  if filt else "nearly every trained sample has zero advantage")
        out.append(ReportWarning("few_useful_groups", f"Only {f:.1%} of groups carry signal{where}, under the "
                                                      f"{USEFUL_GROUP_FLOOR:.0%} floor: nearly all prompts are always "
                                                      f"or never solved (workload.solve_rate), so {effect}. Filter "
                                                      f"the prompt set by difficulty first.",
                                 phase=res.workload.phase,
                                 numbers={"useful_group_fraction": f, "floor": USEFUL_GROUP_FLOOR}))
    return out


WORLD_GDP_USD = 1.05e14
"""The world's yearly GDP, about 105 trillion USD (IMF World Economic Outlook, 2023 at current prices): a run that
costs more is not a plan, whatever produced it (:func:`outcome_warnings`)."""
IMPLAUSIBLE_STEP_S = 1e6
"""A step longer than this (11.6 days) is reported as implausible, with its cause (:func:`outcome_warnings`)."""
LOW_UTILIZATION = 0.05
"""``economics.cost_inputs.utilization`` below this charges each used GPU-hour for 20 or more calendar hours."""
_FEW_STARTS = 10.0  # sandbox start attempts per start (1/(1 - failure_rate)) from which a warning names them
_GROUP_LOSS = 0.5   # share of groups lost to failed sandbox starts from which a warning names it


def _warning(kind: str, keys: list[str], message: str, phase: str | None = None, **numbers) -> ReportWarning:
    return ReportWarning(kind, message, tuple(keys), phase, numbers)


def input_warnings(scn: Scenario, cluster: Cluster) -> list[ReportWarning]:
    """Settings a good scenario may carry but this one cannot use or should not trust, each naming its keys
    (``keys``): a staleness bound or partial rollout in a mode that has no use for them (warned, not refused:
    switching a shipped async scenario to sync keeps its bound), trajectories beyond the model's context
    (``max_position_embeddings``), and an ownership-cost utilization that charges a used GPU-hour many times."""
    o, out = scn.orchestration, []
    default = type(o).model_fields["max_staleness"].default
    if not o.traits.streaming and o.max_staleness != default:
        out.append(_warning("unused_setting", ["orchestration.max_staleness", "orchestration.mode"],
                            f"orchestration.max_staleness = {o.max_staleness:g} has no effect in {o.mode} mode: only "
                            f"the streaming modes (async, inflight) bound staleness; {o.mode} trains on the policy "
                            f"that generated its batch (staleness {o.traits.fixed_lag:g})."))
    if not o.traits.streaming and o.partial_rollout and o.oversampling <= 0:
        out.append(_warning("unused_setting", ["orchestration.partial_rollout", "orchestration.oversampling"],
                            f"orchestration.partial_rollout = true has no effect in {o.mode} mode without "
                            f"orchestration.oversampling: the closed form resumes only an oversampled tail in the "
                            f"next step (the simulator also resumes the over-provisioned groups of dynamic "
                            f"sampling, which makes some samples one step stale)."))
    out += _context_warnings(scn, cluster)
    u = (scn.economics.cost_inputs or {}).get("utilization")
    if isinstance(u, int | float) and not isinstance(u, bool) and 0 < u < LOW_UTILIZATION:
        out.append(_warning("low_utilization", ["economics.cost_inputs.utilization"],
                            f"economics.cost_inputs.utilization = {u:.3g} charges each GPU-hour used for "
                            f"{1 / u:,.3g} calendar hours of ownership: the $/GPU-hour and every cost follow it "
                            f"(a cluster in use a tenth of the time has 0.1).", utilization=u))
    return out


def _context_warnings(scn: Scenario, cluster: Cluster) -> list[ReportWarning]:
    """Trajectories longer than the model's context (``max_position_embeddings``; none when it is not known)."""
    w, limit = scn.workload, cluster.model.max_position_embeddings
    if not limit:
        return []
    fixed = w.prompt_tokens + (w.turns - 1) * w.observation_tokens_per_turn
    where = f"{cluster.model.name}'s context of {limit:,} tokens (max_position_embeddings)"
    if w.prompt_tokens > limit:
        return [_warning("beyond_context", ["workload.prompt_tokens"],
                         f"workload.prompt_tokens = {w.prompt_tokens:,.0f} exceeds {where}: no response fits; "
                         f"the engine would refuse every prompt.", context_tokens=limit)]
    if fixed + w.response_tokens_mean > limit:
        keys = ["workload.response_tokens_mean", "workload.prompt_tokens"] + (
            ["workload.observation_tokens_per_turn", "workload.turns"] if w.turns > 1 else [])
        return [_warning("beyond_context", keys,
                         f"A mean trajectory ({fixed:,.0f} prompt and tool tokens + {w.response_tokens_mean:,.0f} "
                         f"response tokens) exceeds {where}: the engine stops responses at the context, so the "
                         f"lengths here are not what would run ({', '.join(keys)}).", context_tokens=limit)]
    cap = w.response_tokens_max
    if cap is not None and fixed + cap > limit:
        return [_warning("beyond_context", ["workload.response_tokens_max"],
                         f"workload.response_tokens_max = {cap:,.0f} with {fixed:,.0f} prompt and tool tokens "
                         f"exceeds {where}: the longest responses would stop at {limit - fixed:,.0f} tokens.",
                         context_tokens=limit)]
    return []


def discard_causes(results: list[PhaseResult]) -> dict:
    """The worst phase's shares of dispatched rollouts thrown away, by cause: ``zero_advantage`` (groups whose
    rewards are all equal, dropped by dynamic sampling), ``sandbox_loss`` (groups that lost a member to a failed
    sandbox start) and ``oversampling`` (the aborted tail); ``keep = (1 − oversampling)(1 − sandbox_loss)(1 −
    zero_advantage)``."""
    ws = min((r.workload for r in results), key=lambda w: w.keep_fraction)
    rest = max((1.0 - ws.oversample_waste) * (1.0 - ws.sandbox_loss), 1e-300)
    return {"zero_advantage": max(0.0, 1.0 - ws.keep_fraction / rest), "sandbox_loss": ws.sandbox_loss,
            "oversampling": ws.oversample_waste}


def _sandbox_warning(scn: Scenario, results: list[PhaseResult]) -> list[ReportWarning]:
    """Sandbox starts that fail so often that start-up attempts or lost groups dominate (§7)."""
    sb, ws = scn.sandbox, max((r.workload for r in results), key=lambda w: w.sandbox_loss)
    if not ws.uses_sandbox or sb.failure_rate <= 0:
        return []
    attempts = 1.0 / (1.0 - sb.failure_rate)
    if attempts < _FEW_STARTS and ws.sandbox_loss < _GROUP_LOSS:
        return []
    return [_warning("sandbox_failures", ["sandbox.failure_rate", "sandbox.retries"],
                     f"sandbox.failure_rate = {sb.failure_rate:.6g}: each sandbox start takes {attempts:,.3g} "
                     f"attempts on average, and with sandbox.retries = {sb.retries} a rollout is lost with "
                     f"probability {sb.failure_rate ** (sb.retries + 1):.3g}, which discards "
                     f"{ws.sandbox_loss:.1%} of groups (GRPO needs every member): fix the sandbox starts before "
                     f"sizing the cluster.", attempts=attempts, sandbox_loss=ws.sandbox_loss)]


def _extreme_causes(scn: Scenario, results: list[PhaseResult]) -> list[tuple[str, list[str]]]:
    """What makes a run implausibly long or dear, as (words, keys), the largest factor first."""
    w, sb, econ = scn.workload, scn.sandbox, scn.economics
    ws = min((r.workload for r in results), key=lambda x: x.keep_fraction)
    found = []
    if ws.uses_sandbox and sb.failure_rate > 0 and (1.0 / (1.0 - sb.failure_rate) >= _FEW_STARTS
                                                    or ws.sandbox_loss >= _GROUP_LOSS):
        found.append((1.0 / max(1.0 - ws.sandbox_loss, 1e-300) / (1.0 - sb.failure_rate),
                      f"failed sandbox starts (sandbox.failure_rate = {sb.failure_rate:.6g} with sandbox.retries = "
                      f"{sb.retries}: {1 / (1 - sb.failure_rate):,.3g} attempts a start, {ws.sandbox_loss:.1%} of "
                      f"groups lost)", ["sandbox.failure_rate", "sandbox.retries"]))
    if scn.orchestration.filter_zero_advantage and w.group_size == 1:
        found.append((float("inf"), "workload.group_size = 1 with dynamic sampling: no group is ever kept",
                      ["workload.group_size", "orchestration.filter_zero_advantage"]))
    elif scn.orchestration.filter_zero_advantage and ws.useful_group_fraction < USEFUL_GROUP_FLOOR:
        found.append((1.0 / max(ws.useful_group_fraction, 1e-300),
                      f"zero-advantage groups dropped by dynamic sampling ({ws.useful_group_fraction:.2%} of groups "
                      f"carry signal)", ["workload.solve_rate", "orchestration.filter_zero_advantage"]))
    u = (econ.cost_inputs or {}).get("utilization")
    if isinstance(u, int | float) and not isinstance(u, bool) and 0 < u < LOW_UTILIZATION:
        found.append((1.0 / u, f"economics.cost_inputs.utilization = {u:.3g}", ["economics.cost_inputs.utilization"]))
    env = ws.tool_s + ws.startup_s
    if env > IMPLAUSIBLE_STEP_S / 10:
        found.append((env / 3600, f"{env:,.3g} s of tool calls and sandbox start-up per trajectory",
                      ["sandbox.tool_call_s", "sandbox.startup_s", "workload.turns"]))
    if ws.traj_tokens > 1e7:
        found.append((ws.traj_tokens / 1e5, f"{ws.traj_tokens:,.3g}-token trajectories",
                      ["workload.prompt_tokens", "workload.response_tokens_mean"]))
    if w.samples_per_step > 1e6:
        found.append((w.samples_per_step / 1e4, f"{w.samples_per_step:,} samples a step",
                      ["workload.prompts_per_step", "workload.group_size"]))
    price = max(econ.usd_per_gpu_hour, econ.trainer_usd_per_gpu_hour or 0, econ.generator_usd_per_gpu_hour or 0)
    if price > 1e3:
        found.append((price / 10, f"{price:,.3g} USD a GPU-hour", ["economics.usd_per_gpu_hour"]))
    if w.steps > 1e6:
        found.append((w.steps / 1e4, f"{w.steps:,} steps", ["workload.steps"]))
    return [(text if all(k in text for k in keys) else f"{text} ({', '.join(keys)})", keys)
            for _, text, keys in sorted(found, key=lambda f: -f[0])]


@functools.cache
def plausibility_limits() -> dict[str, float]:
    """The limits of data/plausibility.toml by name (``run_hours``, ``usd_per_mtok``), each with its source there."""
    from .._data import parse_shipped

    return parse_shipped("plausibility.toml", lambda text, _: {k: float(v["value"]) for k, v in
                                                              tomllib.loads(text).items()})


def outcome_warnings(scn: Scenario, results: list[PhaseResult], metrics: dict,
                     said: list[ReportWarning] = ()) -> list[ReportWarning]:
    """Results that no plan should act on, with their cause: a step longer than :data:`IMPLAUSIBLE_STEP_S`, a run
    dearer than the world's GDP (:data:`WORLD_GDP_USD`), longer than a century or dearer per trained token than any
    price ever published (:func:`plausibility_limits`), the largest factors named by their keys; and sandbox
    starts that fail so often that they dominate (before, the advice blamed zero-advantage groups). ``said``: the
    warnings already given (:func:`group_warnings`); when their keys hold the largest cause, they say it."""
    out = _sandbox_warning(scn, results)
    step, usd, hours = metrics["step_time_s"], metrics["run_usd"], metrics["run_hours"]
    lim = plausibility_limits()
    per_mtok = max((metrics.get(k) or 0.0) for k in ("usd_per_mtok_trained", "semianalysis_usd_per_mtok"))
    if not (step > IMPLAUSIBLE_STEP_S or usd > WORLD_GDP_USD or hours > lim["run_hours"]
            or per_mtok > lim["usd_per_mtok"]):
        return out
    causes = _extreme_causes(scn, results)[:3]
    if causes and said and causes[0][1][0] in {"workload.group_size", "workload.solve_rate"}:
        return out  # the group warning names the cause and says the step and cost are extreme
    why = ("; ".join(text for text, _ in causes) if causes else
           f"the workload's size for {metrics['trainer_gpus']:,.0f} + {metrics['generator_gpus']:,.0f} GPUs "
           f"(workload.prompts_per_step, workload.response_tokens_mean, trainer.gpus, generator.gpus)")
    keys = [k for _, ks in causes for k in ks] or ["workload.prompts_per_step", "workload.response_tokens_mean",
                                                   "trainer.gpus", "generator.gpus"]
    gdp = f", {usd / WORLD_GDP_USD:,.3g} times the world's yearly GDP" if usd > WORLD_GDP_USD else ""
    if per_mtok > lim["usd_per_mtok"]:
        gdp += (f", {per_mtok:,.3g} USD per trained million tokens (no per-token price ever published exceeds "
                f"{lim['usd_per_mtok']:,.0f}; data/plausibility.toml)")
    return [_warning("implausible", keys, f"Not a plan to act on: {step:,.3g} s a step, {hours / 8766.0:,.3g} years "
                                          f"and {usd:,.3g} USD for the run's {scn.workload.steps:,} steps{gdp}. "
                                          f"Cause: {why}.", step_time_s=step, run_usd=usd, run_hours=hours,
                     usd_per_mtok=per_mtok)] + out


def useful_at_split(scn: Scenario, other: Scenario, cluster: Cluster):
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


def arrangement_gain(scn: Scenario, other: Scenario, cluster: Cluster, metrics: dict):
    """(phase results, useful samples/s now, with ``other``) when ``other`` (an arrangement of the same split)
    delivers more useful samples/s than :data:`SPLIT_TOLERANCE` more; None otherwise (:func:`useful_at_split`)."""
    alt, x0 = useful_at_split(scn, other, cluster), metrics["useful_samples_per_s"]
    if alt is None or not (x0 > 0 and alt[1] > x0 * (1.0 + SPLIT_TOLERANCE)):
        return None
    return alt[0], x0, alt[1]


def pricing(cluster: Cluster, paid: list[str]) -> tuple[PoolPrice, ...]:
    """Each paid pool's $/GPU-hour and why (``report.diagnosis.pricing``): the prices of ``cluster.prices``
    (:func:`~tcocalc.economics.tco.pool_pricing`: ``side``, ``hardware``, ``usd_per_gpu_hour``, ``basis``,
    ``set_for``, ``text``) whose side is one of ``paid``, the pools the run pays for
    (:func:`~tcocalc.economics.tco.paid_pools`)."""
    return tuple(p for p in cluster.prices if p.side in paid)


def pricing_warnings(prices: tuple[PoolPrice, ...]) -> list[ReportWarning]:
    """Paid pools (``prices``: :func:`pricing`) whose scenario price was set for other hardware, now priced at their
    own ownership cost (``kind`` ``"price_not_for_hardware"``; one warning per accelerator, naming its pools)."""
    moved: dict[tuple, list[PoolPrice]] = {}
    for p in prices:
        if p.basis == "ownership cost":
            moved.setdefault((p.hardware, p.set_for), []).append(p)
    out = []
    for (hw, was), pools in moved.items():
        sides = [p.side for p in pools]
        which = "the trainer and generator pools run" if len(sides) == 2 else f"the {sides[0]} pool runs"
        price = pools[0].usd_per_gpu_hour
        out.append(ReportWarning("price_not_for_hardware",
                                 f"Price no longer applies: the scenario's GPU price was set for {was}, and {which} "
                                 f"on {hw}, priced at {hw}'s ownership cost instead: {price:.3g} USD/GPU-h, "
                                 f"{amortisation_text(hw)}. Set economics.hardware_prices.{hw} to use your own.",
                                 numbers={"sides": tuple(sides), "hardware": hw, "set_for": was,
                                          "usd_per_gpu_hour": price}))
    return out


def mfu_warnings(scn: Scenario, cluster: Cluster, metrics: dict,
                 carried: tuple[float, float] | None) -> list[ReportWarning]:
    """How a measured ``trainer.mfu_busy`` reached this trainer (``cluster.mfu_source``): carried to other hardware
    as its measured-over-modelled ratio (``kind`` ``"measured_mfu_carried"``; ``carried``: that ratio and the
    modelled MFU on the measured chip, :func:`~tcocalc.rl.capacity.carried_mfu_ratio` on the scenario's own
    workload, None unless the MFU is carried), set aside for the roofline model on every chip
    (``trainer.mfu_carry = "model"``, ``"measured_mfu_not_used"``), or dropped for the roofline training model's
    where it was taken with another model (``"measured_mfu_dropped"``)."""
    how = cluster.mfu_source
    if how not in ("carried", "model", "dropped"):
        return []
    on, t = scn.trainer.mfu_measured_on, scn.trainer
    where = f"{on.hardware} with {on.model}" if on is not None else f"{cluster.trainer.name} with {scn.model.name}"
    numbers = {"mfu_busy": t.mfu_busy, "measured_on": on.hardware if on else cluster.trainer.name,
               "measured_model": on.model if on else scn.model.name}
    busy = metrics["trainer_mfu_busy"]
    if how == "carried":
        ratio, modelled = carried
        return [ReportWarning("measured_mfu_carried",
                              f"Measured MFU carried like for like: trainer.mfu_busy {t.mfu_busy:.1%} was measured on "
                              f"{where}, where the roofline training model gives {modelled:.1%}; that ratio "
                              f"({ratio:.2f}x) applies to {cluster.trainer.name}'s modelled MFU, so it trains at "
                              f"{busy:.1%} while busy. Set trainer.mfu_carry = \"model\" to compare every chip on "
                              f"the model instead.",
                              numbers={**numbers, "ratio": ratio, "modelled_mfu_busy": modelled})]
    if how == "model":
        return [ReportWarning("measured_mfu_not_used",
                              f"Measured MFU not used (trainer.mfu_carry = \"model\"): every trainer chip, "
                              f"{where.split(' with ')[0]} included, uses the roofline training model's MFU "
                              f"({busy:.1%} while busy here) in place of the measured {t.mfu_busy:.1%}.",
                              numbers=numbers)]
    return [ReportWarning("measured_mfu_dropped",
                          f"Measured MFU no longer applies: trainer.mfu_busy {t.mfu_busy:.3g} was measured on "
                          f"{where}, and the trainer now runs {cluster.trainer.name} with "
                          f"{scn.model.name}, so the roofline training model's MFU ({busy:.1%} "
                          f"while busy) is used. Measure it there and set trainer.mfu_busy to use yours.",
                          numbers=numbers)]


def calibration_warnings(cluster: Cluster) -> list[ReportWarning]:
    """What the run calibration says about this scenario (:mod:`tcocalc.rl.run_factors`): each factor that does not
    carry over (kind ``calibration_dropped``), and the rest (carried across modes, lengths scaled alike, a fit that
    did not hold: kind ``calibration``)."""
    return [ReportWarning("calibration_dropped" if " is dropped" in w else "calibration", w)
            for w in cluster.run.warnings]


def serving_alternative(scn: Scenario, cluster: Cluster, metrics: dict) -> Arrangement | None:
    """The other prefill/decode arrangement (docs/rl-modeling.md §4.9) when it delivers more useful samples/s at
    this split than :data:`SPLIT_TOLERANCE` more; None where it does not fit, gains less, or the pool is shared."""
    g = scn.generator
    if scn.orchestration.traits.shared_pool:
        return None
    other = scn.model_copy(update={"generator": g.model_copy(update={"disaggregated": not g.disaggregated,
                                                                     "prefill_gpus": None})})
    gain = arrangement_gain(scn, other, cluster, metrics)
    if gain is None:
        return None
    results, x0, x1 = gain
    if g.disaggregated:
        return Arrangement("aggregated", x0, x1, ("generator.disaggregated",))
    gen = results[0].generator
    return Arrangement("disaggregated", x0, x1, ("generator.disaggregated",), generator_gpus=g.gpus,
                       prefill_gpus=int(gen.prefill_gpus(g.gpus)), prefill_instance=gen.prefill_pool.instance.label(),
                       decode_instance=gen.instance.label())


def nvlink_alternative(scn: Scenario, cluster: Cluster, metrics: dict) -> Arrangement | None:
    """Multi-node NVLink (``multinode_nvlink = true`` for the pools that run without it, on an accelerator whose
    NVLink domain spans several servers) when it delivers more useful samples/s at this split than
    :data:`SPLIT_TOLERANCE` more (docs/rl-modeling.md §3.7): what an IMEX channel for the job is worth. None where
    every pool has it, where a server is the whole domain, or where it gains less."""
    # the pools without it whose accelerator's domain was cut to a server (rl/cluster.py:single_server_domain):
    # resolved with it, their domain is the catalog's again (a pool whose server is its whole domain is unchanged)
    without = [side for side in ("trainer", "generator") if not getattr(scn, side).multinode_nvlink
               and getattr(cluster, side).server_gpus == getattr(cluster, side).scaleup_domain_gpus]
    if not without:
        return None
    other = scn.with_values({f"{side}.multinode_nvlink": True for side in without})
    wide = resolve(other, cluster.calibration)
    off = {side: getattr(wide, side) for side in without
           if getattr(wide, side).scaleup_domain_gpus > getattr(cluster, side).scaleup_domain_gpus}
    if not off:
        return None
    gain = arrangement_gain(scn, other, wide, metrics)
    if gain is None:
        return None
    _, x0, x1 = gain
    hw = next(iter(off.values()))
    return Arrangement("multinode_nvlink", x0, x1, tuple(f"{side}.multinode_nvlink" for side in off),
                       server_gpus=hw.server_gpus, domain_gpus=hw.scaleup_domain_gpus)


def wider_tp_alternative(scn: Scenario, cluster: Cluster, results: list[PhaseResult],
                         metrics: dict) -> Arrangement | None:
    """The wider tensor-parallel generator instance (``generator.tp``) that delivers the most useful samples/s at
    this split, when that is more than :data:`SPLIT_TOLERANCE` more (only the solver tries it: a few more
    evaluations, which would double a warm :func:`~tcocalc.rl.solve.evaluate`). The automatic instance is the
    steady-state throughput-best one (§4.4); an RL step also waits on per-token latency (the batch tail, the
    staleness window, tool turns), which a wider instance shortens. Only wider pure-TP instances within the
    scale-up domain are tried (a narrower one has the higher step time); none when ``tp`` is pinned or the
    generator is disaggregated."""
    g = scn.generator
    if g.tp is not None or g.disaggregated:
        return None
    now = results[0].generator
    x0, best = metrics["useful_samples_per_s"], None
    tp = now.instance.tp * 2
    while tp <= min(cluster.generator.scaleup_domain_gpus, g.gpus):
        alt = useful_at_split(scn, scn.model_copy(update={"generator": g.model_copy(update={"tp": tp})}), cluster)
        if alt is not None and (best is None or alt[1] > best[1]):
            best = (tp, alt[1], alt[0][0].generator)
        tp *= 2
    if best is None or not (x0 > 0 and best[1] > x0 * (1.0 + SPLIT_TOLERANCE)):
        return None
    tp, x1, gen = best
    return Arrangement("generator_tp", x0, x1, ("generator.tp",), tp=tp, t0_s=gen.t0, t0_before_s=now.t0,
                       instance_before=now.instance.label())


def better_arrangements(scn: Scenario, cluster: Cluster, metrics: dict,
                        results: list[PhaseResult] | None = None) -> list[Arrangement]:
    """The other arrangements of this split that pay, in the order the advice names them: the other prefill/decode
    arrangement (:func:`serving_alternative`), with the split's ``results`` the wider tensor-parallel generator
    instance (:func:`wider_tp_alternative`, which only the solver tries), and multi-node NVLink
    (:func:`nvlink_alternative`); a model run or a few each."""
    found = [serving_alternative(scn, cluster, metrics)]
    if results is not None:
        found.append(wider_tp_alternative(scn, cluster, results, metrics))
    found.append(nvlink_alternative(scn, cluster, metrics))
    return [a for a in found if a is not None]
