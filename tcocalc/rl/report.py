"""The contract's metrics: built from the stages' hand-offs in one place, combined over phases in one place.

:func:`contract_metrics` turns one phase's :class:`~tcocalc.rl.rates.Rates`, :class:`~tcocalc.rl.rates.Flow`,
:class:`~tcocalc.rl.staleness.Staleness`, live sandboxes and cluster cost into the contract's per-phase
metrics (docs/metrics.md, generated; units in :data:`METRIC_UNITS`). :func:`combine_phases` weights
phases by their wall time and adds the run-level figures (Tinker's price for the same token mix, run hours
with the sandbox start-up ramp, run cost). The analytical model (:mod:`tcocalc.rl.solve`) and the simulator
(:mod:`tcocalc.rl.sim.simulate`) both go through these two functions, so their figures mean the same thing.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from ..catalog.accelerators import Accelerator
from ..economics.semianalysis import (
    rental_cluster_usd_per_hour,
    rental_usd_per_gpu_hour,
    semianalysis_usd_per_gpu_hour,
    tinker_mix_usd_per_mtok,
)
from ..economics.tinker import offered_row
from ..errors import InfeasibleError
from ..scenario import Scenario
from .phases import WorkloadStats
from .rates import Flow, Rates
from .rollouts import multiturn_prefill_tokens
from .sandboxes import ramp_hours
from .staleness import Staleness

__all__ = ["METRIC_UNITS", "RUN_METRICS", "OBJECTIVES", "contract_metrics", "combine_phases",
           "tinker_usd_per_mtok", "semianalysis_metrics", "OutsidePrices", "outside_prices", "outside_prices_on",
           "combine_phases_at", "scalar_metrics", "assert_finite", "metric_quantities",
           "binding_text", "HEADLINE_METRICS"]

#: Every metric key with its unit and meaning (docs/metrics.md is generated from this table).
METRIC_UNITS: dict[str, tuple[str, str]] = {
    "trainer_gpus": ("GPU", "trainer GPUs"),
    "generator_gpus": ("GPU", "generator GPUs (colocated: the same pool)"),
    "step_time_s": ("s", "wall time per optimizer step in steady state"),
    "useful_samples_per_s": ("sample/s", "trajectories with non-zero advantage reaching the trainer"),
    "trainer_capacity_samples_per_s": ("sample/s", "what the trainer could consume if never starved"),
    "generator_capacity_samples_per_s": ("sample/s", "useful samples/s the generator could deliver if never blocked"),
    "trainer_idle_fraction": ("1", "share of wall time the trainer waits for data"),
    "generator_idle_fraction": ("1", "share of wall time the generator waits (throttled or paused)"),
    "trainer_mfu": ("1", "MFU over wall time"),
    "trainer_mfu_busy": ("1", "MFU while training"),
    "generator_output_tokens_per_s_per_gpu": ("token/s/GPU", "decode output per generator GPU, over wall time"),
    "prefix_cache_hit_fraction": ("1", "returns from a tool call whose history the engine still holds in its prefix "
                                  "cache (1: single-turn, pinned KV)"),
    "useful_group_fraction": ("1", "groups whose rewards are not all equal"),
    "discarded_fraction": ("1", "dispatched rollouts thrown away (filtering, oversampling aborts, sandbox loss)"),
    "mean_staleness_steps": ("step", "mean policy-version lag of trained trajectories"),
    "max_staleness_steps": ("step", "largest policy-version lag of a trained trajectory"),
    "token_staleness_steps": ("step", "token-weighted lag (differs under in-flight updates, partial rollouts)"),
    "env_state_stale_fraction": ("1", "trajectories resumed in a sandbox whose state an older policy produced"),
    "sandbox_concurrency": ("sandbox", "live sandboxes"),
    "sandbox_cpu_cores": ("core", "CPU cores the live sandboxes hold"),
    "usd_per_hour": ("USD/h", "cluster cost, GPUs and sandbox CPUs included"),
    "usd_per_gpu_hour": ("USD/GPU-h", "cluster cost per GPU-hour, sandbox CPUs included"),
    "usd_per_step": ("USD", "cost of one optimizer step"),
    "usd_per_mtok_trained": ("USD/Mtoken", "cost per million tokens the trainer learns from"),
    "tinker_usd_per_mtok": ("USD/Mtoken", "our accounting of Tinker's list price: the same token mix, discarded "
                            "rollouts billed (None: not offered)"),
    "cost_ratio_vs_tinker": ("1", "our cost per trained token over Tinker's (None: not offered)"),
    "run_hours": ("h", "the whole run of workload.steps steps, sandbox start-up ramp included"),
    "run_usd": ("USD", "cost of the whole run"),
    "semianalysis_usd_per_mtok": ("USD/Mtoken", "SemiAnalysis-style: GPU-hours at the study's rental price per "
                                  "trained Mtoken (None: no such price for the hardware)"),
    "semianalysis_tinker_usd_per_mtok": ("USD/Mtoken", "SemiAnalysis-style accounting of Tinker's list price: "
                                         "prompt at prefill, "
                                         "response at sample + train, discards not billed (None: not offered)"),
    "semianalysis_cost_ratio_vs_tinker": ("1", "SemiAnalysis-style cost over SemiAnalysis-style Tinker "
                                          "(None: either is None)"),
}

#: Metrics that belong to the whole run, added by :func:`combine_phases`.
RUN_METRICS = ("tinker_usd_per_mtok", "cost_ratio_vs_tinker", "run_hours", "run_usd", "semianalysis_usd_per_mtok",
               "semianalysis_tinker_usd_per_mtok", "semianalysis_cost_ratio_vs_tinker")
OBJECTIVES = ("usd_per_useful_sample", "useful_samples_per_s")


#: The metrics a report's notebook card shows first (all of them are in ``metrics``).
HEADLINE_METRICS = ("trainer_gpus", "generator_gpus", "step_time_s", "useful_samples_per_s", "trainer_idle_fraction",
                    "generator_idle_fraction", "trainer_mfu", "mean_staleness_steps", "usd_per_hour",
                    "usd_per_mtok_trained", "cost_ratio_vs_tinker", "run_hours", "run_usd")


def metric_quantities(metrics: dict) -> dict:
    """Contract metrics (``report.metrics``, or one row of a sweep as a dict) as pint quantities in their
    :data:`METRIC_UNITS` units; keys without a unit entry are left out, None stays None."""
    from ..units import quantities

    return quantities({k: v for k, v in metrics.items() if k in METRIC_UNITS}, METRIC_UNITS)


def binding_text(limits: dict) -> str:
    """``report.diagnosis.binding_limits`` (phase -> limits) as text: ``"staleness"``, or per phase where they
    differ (``"base: trainer; drift: generator"``)."""
    kinds = {phase: ", ".join(k) or "none" for phase, k in limits.items()}
    if len(set(kinds.values())) <= 1:
        return next(iter(kinds.values()), "")
    return "; ".join(f"{phase}: {k}" for phase, k in kinds.items())


def contract_metrics(scn: Scenario, ws: WorkloadStats, rates: Rates, flow: Flow, stale: Staleness, live,
                     usd_per_hour, paid_gpus) -> dict:
    """One phase's contract metrics (every key of :data:`METRIC_UNITS` but :data:`RUN_METRICS`), arrays over
    candidate splits; ``usd_per_hour`` the cluster's cost and ``paid_gpus`` the GPUs it pays for
    (:func:`~tcocalc.economics.tco.gpus_paid`), per split. Useful samples count only groups with signal (§6);
    cost per trained token divides the cluster's cost by the trained tokens per hour (§8)."""
    useful_per_trained = 1.0 if scn.orchestration.filter_zero_advantage else ws.useful_group_fraction
    x, step = flow.trained_per_s, flow.step_s
    gen_gpus = rates.n_t if scn.orchestration.traits.shared_pool else rates.n_g
    cores = live * scn.sandbox.cpu_cores
    return dict(
        trainer_gpus=rates.n_t.astype(float), generator_gpus=rates.n_g.astype(float), step_time_s=step,
        useful_samples_per_s=x * useful_per_trained, trainer_capacity_samples_per_s=flow.trainer_capacity,
        generator_capacity_samples_per_s=flow.generator_capacity * useful_per_trained,
        trainer_idle_fraction=flow.trainer_idle, generator_idle_fraction=flow.generator_idle,
        trainer_mfu=rates.mfu_busy * np.clip(flow.training_share, 0, 1), trainer_mfu_busy=rates.mfu_busy,
        generator_output_tokens_per_s_per_gpu=flow.generated_tokens_per_s / gen_gpus,
        prefix_cache_hit_fraction=np.broadcast_to(flow.prefix_hit, np.shape(step)).astype(float),
        useful_group_fraction=np.full_like(step, ws.useful_group_fraction),
        discarded_fraction=flow.discarded_fraction,
        mean_staleness_steps=stale.mean, max_staleness_steps=stale.max, token_staleness_steps=stale.token,
        env_state_stale_fraction=stale.env_state_stale, sandbox_concurrency=live, sandbox_cpu_cores=cores,
        usd_per_hour=usd_per_hour, usd_per_gpu_hour=usd_per_hour / paid_gpus,
        usd_per_step=usd_per_hour * step / 3600.0,
        usd_per_mtok_trained=usd_per_hour / (x * ws.traj_tokens * 3600.0 / 1e6),
    )


@dataclass(frozen=True)
class OutsidePrices:
    """The outside prices a run's cost is read against, looked up once: Tinker's list row for the model on the
    scenario's price date (``tinker``, :func:`~tcocalc.economics.tinker.price_row`; None: not offered) and the
    SemiAnalysis-style rental $/GPU-hour of each pool's accelerator (``rentals``, trainer then generator,
    :mod:`tcocalc.economics.semianalysis`; None: the study has none)."""

    tinker: dict | None
    rentals: tuple[float | None, float | None]


def _tinker_row(scn: Scenario) -> dict | None:
    return offered_row(scn.model.name, scn.economics.tinker_price_date)  # None: not offered


def outside_prices(scn: Scenario) -> OutsidePrices:
    """:class:`OutsidePrices` of a scenario, its accelerators looked up by name."""
    return OutsidePrices(_tinker_row(scn), (semianalysis_usd_per_gpu_hour(scn.trainer.hardware),
                                            semianalysis_usd_per_gpu_hour(scn.generator.hardware)))


def outside_prices_on(scn: Scenario, trainer: Accelerator, generator: Accelerator) -> OutsidePrices:
    """:class:`OutsidePrices` of a scenario whose pools' accelerators are already resolved (a
    :class:`~tcocalc.rl.cluster.Cluster`'s ``trainer`` and ``generator``)."""
    return OutsidePrices(_tinker_row(scn), (rental_usd_per_gpu_hour(trainer), rental_usd_per_gpu_hour(generator)))


def tinker_usd_per_mtok(scn: Scenario, ws: WorkloadStats) -> float | None:
    """Tinker's $/M trained tokens for the phase's token mix, discarded sampling paid too (§8); None when
    Tinker does not offer the model."""
    return _tinker_usd(_tinker_row(scn), ws)


def _tinker_usd(row: dict | None, ws: WorkloadStats) -> float | None:
    """:func:`tinker_usd_per_mtok` on Tinker's price row (None: not offered)."""
    if row is None:
        return None
    delta = ws.response_mean / ws.turns + ws.observation_tokens
    full = multiturn_prefill_tokens(ws.prompt_tokens, delta, ws.turns, caching=False)
    new = multiturn_prefill_tokens(ws.prompt_tokens, delta, ws.turns, caching=True)
    share = float(row["cached_prefill_share"]) if row["cached_prefill_share"] else 1.0
    prefill_cost = (new + (full - new) * share) * row["prefill_usd_per_mtok"] / ws.keep_fraction
    usd = (prefill_cost + ws.generated_per_trained * row["sample_usd_per_mtok"]
           + ws.traj_tokens * row["train_usd_per_mtok"])
    return usd / ws.traj_tokens


def _weighted(vals: list, weights: list, total):
    """Time-weighted mean; where every phase has the same value, that value (no averaging round-off)."""
    same = np.logical_and.reduce([np.asarray(v) == np.asarray(vals[0]) for v in vals])
    mean = sum(v * w for v, w in zip(vals, weights, strict=True)) / total
    return np.where(same, vals[0], mean)


def combine_phases(scn: Scenario, parts: list[tuple[WorkloadStats, dict]]) -> dict:
    """Whole-run metrics from each phase's (statistics, :func:`contract_metrics`), arrays or scalars.

    Phases weigh by wall time (``steps × step time``); step time and cost per step by steps; cost per
    trained token from the run's totals; the max staleness is the largest; Tinker's price weighs by trained
    tokens (None if any phase's model is not offered); the run adds the first phase's sandbox start-up ramp.
    The outside prices are looked up by name (:func:`outside_prices`; :func:`combine_phases_at` takes them).
    """
    return combine_phases_at(scn, parts, outside_prices(scn))


def combine_phases_at(scn: Scenario, parts: list[tuple[WorkloadStats, dict]], prices: OutsidePrices) -> dict:
    """:func:`combine_phases` with the outside prices already looked up (:func:`outside_prices_on` a resolved
    cluster)."""
    durations = [ws.steps * np.asarray(met["step_time_s"], dtype=float) for ws, met in parts]
    weights = [d / 3600 for d in durations]
    total_w = sum(weights)
    total_w = np.where(total_w > 0, total_w, 1.0)
    out = {k: _weighted([met[k] for _, met in parts], weights, total_w)
           for k in METRIC_UNITS if k not in RUN_METRICS}
    steps_total = sum(ws.steps for ws, _ in parts)
    out["step_time_s"] = sum(durations) / steps_total
    out["max_staleness_steps"] = np.maximum.reduce([np.asarray(met["max_staleness_steps"]) for _, met in parts])
    run_usd_gpu = sum(met["usd_per_step"] * ws.steps for ws, met in parts)
    out["usd_per_step"] = run_usd_gpu / steps_total
    trained_tok = sum(ws.steps * scn.workload.samples_per_step * ws.traj_tokens for ws, _ in parts)
    out["usd_per_mtok_trained"] = run_usd_gpu / (trained_tok / 1e6)
    tinker = [_tinker_usd(prices.tinker, ws) for ws, _ in parts]
    if all(v is not None for v in tinker):
        tw = [ws.steps * ws.traj_tokens for ws, _ in parts]
        out["tinker_usd_per_mtok"] = sum(v * w for v, w in zip(tinker, tw, strict=True)) / sum(tw)
        out["cost_ratio_vs_tinker"] = out["usd_per_mtok_trained"] / out["tinker_usd_per_mtok"]
    else:
        out["tinker_usd_per_mtok"] = out["cost_ratio_vs_tinker"] = None
    ws0, met0 = parts[0]
    ramp_h = np.vectorize(lambda live: ramp_hours(scn, ws0, float(live)), otypes=[float])(met0["sandbox_concurrency"])
    out["run_hours"] = sum(durations) / 3600.0 + ramp_h
    out["run_usd"] = run_usd_gpu + ramp_h * out["usd_per_hour"]
    out.update(_semianalysis(scn, parts, durations, trained_tok, prices))
    return {k: out[k] for k in METRIC_UNITS}


def semianalysis_metrics(scn: Scenario, parts: list[tuple[WorkloadStats, dict]], durations: list,
                         trained_tok) -> dict:
    """The SemiAnalysis-style pair and ratio (:mod:`tcocalc.economics.semianalysis`; docs/validation.md "Reading our
    numbers next to SemiAnalysis'"): the same GPU-hours and trained tokens as ``usd_per_mtok_trained``, each
    pool at the study's rental $/GPU-hour, sandbox CPUs as in the scenario; Tinker at list price for the
    trained tokens (prompt and observations at prefill, response at sample + train), weighted by trained tokens.
    Reproduces Prime RL $6.90 / 2.01x and slime $16.23 / 4.86x within 10% (tests/unit/studies/test_tinker_gap.py).
    """
    return _semianalysis(scn, parts, durations, trained_tok, outside_prices(scn))


def _semianalysis(scn: Scenario, parts: list[tuple[WorkloadStats, dict]], durations: list, trained_tok,
                  prices: OutsidePrices) -> dict:
    tinker = [None if prices.tinker is None else
              tinker_mix_usd_per_mtok(prices.tinker, ws.traj_tokens - ws.response_mean, ws.response_mean)
              for ws, _ in parts]
    if all(v is not None for v in tinker):
        tw = [ws.steps * ws.traj_tokens for ws, _ in parts]
        t_usd = sum(v * w for v, w in zip(tinker, tw, strict=True)) / sum(tw)
    else:
        t_usd = None
    usd_hs = [rental_cluster_usd_per_hour(scn, met["trainer_gpus"], met["generator_gpus"], met["sandbox_cpu_cores"],
                                          prices.rentals) for _, met in parts]
    if any(usd_h is None for usd_h in usd_hs):
        usd = None
    else:
        run = 0.0
        for usd_h, d in zip(usd_hs, durations, strict=True):
            run = run + usd_h * d / 3600.0
        usd = run / (trained_tok / 1e6)
    ratio = None if usd is None or t_usd is None else usd / t_usd
    return {"semianalysis_usd_per_mtok": usd, "semianalysis_tinker_usd_per_mtok": t_usd,
            "semianalysis_cost_ratio_vs_tinker": ratio}


def scalar_metrics(metrics: dict) -> dict:
    """One candidate's metrics as plain floats (None stays None)."""
    return {k: (None if v is None else float(np.asarray(v).reshape(-1)[0])) for k, v in metrics.items()}


def assert_finite(metrics: dict) -> None:
    """No NaN or infinity reaches a user: InfeasibleError naming the metric."""
    for k, v in metrics.items():
        if v is not None and not math.isfinite(v):
            raise InfeasibleError(f"{k} is not finite for this scenario; check the workload and GPU counts")
