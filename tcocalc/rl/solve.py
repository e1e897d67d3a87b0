"""The RL pipeline model: step time, throughput, idle, MFU, staleness, sandboxes and cost of a
trainer/generator split, and the solver that picks the split.

The queue view of rl-modeling.md §5: a generator producing trajectories at ``λ`` and a trainer consuming
them at ``μ``. Per orchestration mode (§5.1):

* ``colocated``: one pool alternates, ``T = t_gen + t_train + t_sync``;
* ``sync``: separate pools alternate, ``T = t_gen(N_g) + t_train(N_t) + t_sync``;
* ``one_step_off``: ``T = max(t_gen, t_train) + t_sync`` (staleness exactly 1);
* ``async`` (bound ``η``) and ``inflight``: ``X = min(λ_g·(1 − t_sync·X/B), μ_eff, keep·(η+1)·B/W_gen)``
  (AReaL's admission rule through Little's law, §5.4; the generator pauses ``t_sync`` per step).

``t_gen`` of a synchronous step follows the tail (§4.5): with ``N`` trajectories on ``S`` slots and the
step-time fit ``t(b) = t0 + t1·b``, ``T_dec = E[max R]·t0 + t1·W/n_rep`` when all fit at once (the
integral of the shrinking batch) and ``W/S·t(b_max) + ½·E[max R]·t0`` beyond (Graham's list-scheduling
default), where ``W`` is the step's generated tokens. Idle, staleness (§5.3: trajectory, token and
environment-state levels), sandboxes (§7: Little's law, start-rate limit, failures) and cost (§8) follow.
Everything is vectorised over candidate splits; :func:`evaluate` is the one-split case.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

from ..catalog.accelerators import hardware
from ..catalog.models import ModelArch, model
from ..errors import InfeasibleError, MissingSpecError, ScenarioError
from ..scenario import Scenario
from .capacity import GeneratorCapacity, generator_capacity, trainer_capacity, trainer_min_gpus
from .phases import WorkloadStats, phase_list, workload_stats
from .rollouts import (
    Z99,
    expected_max,
    intra_step_lag,
    multiturn_prefill_tokens,
    staleness_throughput_cap,
    sync_dispatch_groups,
)
from .weight_sync import weight_sync_seconds

__all__ = ["RLReport", "evaluate", "solve_split", "METRIC_UNITS", "OBJECTIVES"]

#: Every metric key of the contract with its unit and meaning (CONTRACT.md "Metric names").
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
    "tinker_usd_per_mtok": ("USD/Mtoken", "Tinker list price for the same token mix (None: not offered)"),
    "cost_ratio_vs_tinker": ("1", "our cost per trained token over Tinker's (None: not offered)"),
    "run_hours": ("h", "the whole run of workload.steps steps, sandbox start-up ramp included"),
    "run_usd": ("USD", "cost of the whole run"),
}

OBJECTIVES = ("usd_per_useful_sample", "useful_samples_per_s")
SYNC_MODES = ("colocated", "sync", "one_step_off")


@dataclass(frozen=True)
class RLReport:
    """Result of :func:`evaluate`, :func:`solve_split` or :func:`~tcocalc.simulate`.

    ``metrics`` has exactly the contract's keys (:data:`METRIC_UNITS`); ``details`` holds the
    intermediate quantities; ``phases`` (DataFrame) the per-phase metrics and the split each phase
    wants; ``sweep`` (DataFrame) every candidate split when solved; ``advice`` says what to change.
    """

    scenario: Scenario
    metrics: dict
    details: dict = field(default_factory=dict)
    phases: object = None
    sweep: object = None
    advice: tuple[str, ...] = ()
    source: str = "analytical"

    def to_frame(self):
        """Metrics as a DataFrame: metric, value, unit, meaning."""
        import pandas as pd

        rows = [{"metric": k, "value": v, "unit": METRIC_UNITS[k][0], "meaning": METRIC_UNITS[k][1]}
                for k, v in self.metrics.items()]
        return pd.DataFrame(rows)

    def to_csv(self, path) -> None:
        """Write the metrics table as CSV (``value`` empty where Tinker does not offer the model)."""
        self.to_frame().to_csv(path, index=False)


# ----------------------------------------------------------------------------------------- pipeline
def _resolve_model(scn: Scenario) -> ModelArch:
    if scn.model.config is not None:
        return ModelArch.from_hf_config(scn.model.config, name=scn.model.name)
    try:
        return model(scn.model.name)
    except KeyError as exc:
        raise ScenarioError("model.name", str(exc)) from None


def _resolve_hw(scn: Scenario):
    out = []
    for side in ("trainer", "generator"):
        try:
            out.append(hardware(getattr(scn, side).hardware))
        except KeyError as exc:
            raise ScenarioError(f"{side}.hardware", str(exc)) from None
    acc_t, acc_g = out
    if scn.model.precision not in acc_t.precisions:
        raise ScenarioError("model.precision", f"{acc_t.name} has no {scn.model.precision}; it supports "
                                               f"{', '.join(acc_t.precisions)}")
    if scn.generator.precision not in acc_g.precisions:
        raise ScenarioError("generator.precision", f"{acc_g.name} has no {scn.generator.precision}; it supports "
                                                   f"{', '.join(acc_g.precisions)}")
    return acc_t, acc_g


def _tinker(scn: Scenario, m: ModelArch, ws: WorkloadStats, gen_tokens_per_trained: float):
    """Tinker $/M trained tokens for the same token mix (discarded sampling paid too); None if not offered."""
    from ..economics.tinker import _price_row

    try:
        row = _price_row(scn.model.name, scn.economics.tinker_price_date)
    except MissingSpecError:
        return None
    delta = ws.response_mean / ws.turns + ws.observation_tokens
    full = multiturn_prefill_tokens(ws.prompt_tokens, delta, ws.turns, caching=False)
    new = multiturn_prefill_tokens(ws.prompt_tokens, delta, ws.turns, caching=True)
    share = float(row["cached_prefill_share"]) if row["cached_prefill_share"] else 1.0
    prefill_cost = (new + (full - new) * share) * row["prefill_usd_per_mtok"] / ws.keep_fraction
    usd = (prefill_cost + gen_tokens_per_trained * row["sample_usd_per_mtok"]
           + ws.traj_tokens * row["train_usd_per_mtok"])
    return usd / ws.traj_tokens


def _pipeline(scn: Scenario, m: ModelArch, ws: WorkloadStats, gcap: GeneratorCapacity, n_t, n_g) -> dict:
    """Vectorised metrics for splits (n_t[i], n_g[i]); entries with an infeasible side are NaN-free zeros
    flagged by ``feasible``."""
    acc_t, acc_g = _resolve_hw(scn)
    mode = scn.orchestration.mode
    n_t = np.asarray(n_t, dtype=int)
    n_g = np.asarray(n_g, dtype=int)
    B = float(ws.samples_per_step)
    keep = ws.keep_fraction
    useful_per_trained = 1.0 if scn.orchestration.filter_zero_advantage else ws.useful_group_fraction
    gen_per_dispatched = ws.generated_per_kept * (1.0 - ws.oversample_waste)
    gen_per_trained = gen_per_dispatched / keep

    mu_t, mfu_busy = trainer_capacity(scn, m, ws, n_t)
    n_rep = n_g // gcap.instance_gpus
    feasible = (mu_t > 0) & (n_rep > 0)
    mu_safe = np.where(feasible, mu_t, 1.0)
    rep_safe = np.maximum(n_rep, 1)
    t_sync = np.array([weight_sync_seconds(m.params_total, acc_t, acc_g, int(a), int(b), colocated=mode == "colocated")
                       for a, b in zip(n_t, n_g, strict=True)])

    step_op = gcap.t0 + gcap.t1 * gcap.b_op
    lam_raw = rep_safe * gcap.b_op / step_op / gen_per_dispatched         # dispatched trajectories/s
    lam_g = lam_raw * keep                                                # trainable samples/s

    # sandbox limits (§7): live sandboxes, start rate, failures
    sb = scn.sandbox
    attempts = 1.0 / (1.0 - sb.failure_rate) if ws.uses_sandbox else 1.0
    startup = ws.startup_s * attempts
    w_gen = gcap.latency_s + (startup - ws.startup_s)

    t_train = B / mu_safe
    n_disp = B / keep
    if mode in SYNC_MODES:
        # a synchronous batch over-provisions groups so that one round fills it (DAPO gen_batch_size)
        n_disp = ws.group_size * sync_dispatch_groups(B / (keep * ws.group_size), keep)
        per_rep = n_disp / rep_safe
        if scn.orchestration.oversampling > 0:
            # the batch fills when the first B/(keep·G) of the dispatched groups have finished
            from .rollouts import group_quantile_z

            needed = B * (1.0 - ws.oversample_waste) / (keep * ws.group_size)  # groups that must finish
            alpha_eff = n_disp / ws.group_size / needed - 1.0
            longest = math.exp(ws.mu + ws.sigma * group_quantile_z(alpha_eff, ws.group_size))
            longest = np.full(per_rep.shape, min(longest, ws.cap) if ws.cap is not None else longest)
        else:
            longest = expected_max(n_disp, ws.mu, ws.sigma, ws.cap) * np.ones_like(per_rep)
        work = per_rep * gen_per_dispatched
        fits = per_rep <= gcap.b_max
        t_dec = np.where(fits, longest * gcap.t0 + gcap.t1 * work,
                         work * (gcap.t0 + gcap.t1 * gcap.b_max) / gcap.b_max + 0.5 * longest * gcap.t0)
        t_env = ws.tool_s + startup
        if ws.uses_sandbox and sb.max_starting > 0:
            t_env = ws.tool_s + math.ceil(n_disp / sb.max_starting) * startup
        t_gen = t_dec + t_env
        if ws.uses_sandbox and sb.max_concurrency > 0 and n_disp > sb.max_concurrency:
            t_gen = t_gen * n_disp / sb.max_concurrency
        if mode == "one_step_off":
            step = np.maximum(t_gen, t_train) + t_sync
        else:
            step = t_gen + t_train + t_sync
        x = B / step
        trainer_idle = 1.0 - t_train / step
        gen_busy = t_gen / step
        gen_idle = 1.0 - gen_busy
        gen_cap_samples = B / t_gen
        inflight = np.full_like(step, n_disp)
        queued = np.zeros_like(step)
    else:
        eta = scn.orchestration.max_staleness
        mu_eff = B / (t_train + (t_sync if scn.orchestration.sync_blocks_trainer else 0.0))
        # Per weight update the generator pauses for the sync; with partial rollout (interruptible, AReaL)
        # it also discards the in-flight KV and re-prefills those contexts (rl-modeling §4.6).
        reprefill = scn.orchestration.partial_rollout and mode == "async"
        lam_paused = lam_g / (1.0 + lam_g * t_sync / B)
        # Fixed point: a throttled generator runs fewer trajectories per replica, so each finishes sooner
        # (W_gen falls), which relaxes the staleness cap (η+1)·B/W_gen (Little's law, §5.4).
        w_env = w_gen - gcap.prefill_s - gen_per_dispatched * step_op
        phi_share = gcap.b_op / gcap.b_max if gcap.b_max else 1.0   # decoding share of resident trajectories
        tail_tokens = float(expected_max(n_disp, ws.mu, ws.sigma, ws.cap))
        tail_slack = 0.0 if scn.orchestration.partial_rollout else 0.5
        if scn.orchestration.oversampling > 0:
            tail_tokens = min(tail_tokens, ws.tau)
        b = np.full(n_t.shape, gcap.b_op)
        for _ in range(80):
            w = gcap.prefill_s + gen_per_dispatched * (gcap.t0 + gcap.t1 * b) + w_env
            if reprefill:
                pause = t_sync + b * rep_safe / phi_share * ws.context_tokens / (gcap.prefill_tokens_per_s * rep_safe)
                lam_paused = lam_g / (1.0 + lam_g * pause / B)
            # The trainer may not move more than η versions past a running trajectory, so the batch's
            # longest trajectory must finish within about η + ½ step times of its dispatch (dispatched,
            # on average, half-way through a step): T_step ≥ T_tail/(η + ½). With partial rollout it is
            # paused and resumed across the update instead, gaining one more step: T_tail/(η + 1).
            # A small bound makes the trainer wait for the tail (verl RL-05); a large one hides it.
            t_tail = gcap.prefill_s + tail_tokens * (gcap.t0 + gcap.t1 * b) + w_env
            # half a batch waits in the buffer on average while the next one assembles (Q = B/2)
            x = np.minimum(np.minimum(lam_paused, mu_eff),
                           np.minimum(keep * staleness_throughput_cap(eta, B, w, queued=B / 2.0),
                                      staleness_throughput_cap(eta - tail_slack, B, t_tail)))
            if ws.uses_sandbox and sb.max_concurrency > 0:
                x = np.minimum(x, keep * sb.max_concurrency / w)
            if ws.uses_sandbox and sb.max_starting > 0 and startup > 0:
                x = np.minimum(x, keep * sb.max_starting / startup)
            # resident trajectories per replica (KV held through tool calls, at most b_max); the share
            # decoding is the LLM part of a trajectory's life at the current step time
            resident = np.minimum((x / keep) * w / rep_safe, gcap.b_max)
            b_new = np.clip(resident * (w - w_env) / w, 1.0, gcap.b_op)
            if np.allclose(b_new, b, rtol=1e-10):
                break
            b = 0.5 * (b + b_new)
        w_gen = w
        step = B / x
        trainer_idle = 1.0 - x / mu_eff
        gen_idle = 1.0 - x / lam_g
        gen_cap_samples = lam_g
        mu_safe = mu_eff  # capacity if never starved includes the per-step weight push it must make
        inflight = (x / keep) * w_gen
        trainer_bound = np.isclose(x, mu_eff) & (mu_eff < lam_paused)
        queued = np.where(trainer_bound, np.maximum(B / 2.0, (eta + 1) * B - inflight * keep), B / 2.0)

    trainer_idle = np.clip(trainer_idle, 0.0, 1.0)
    gen_idle = np.clip(gen_idle, 0.0, 1.0)
    # staleness (§5.3)
    lag_mean, lag_max = intra_step_lag(scn.trainer.minibatches_per_step)
    bias = math.exp(ws.sigma ** 2)
    tail_share, carry_lag = _partial_rollout(scn, ws)
    if mode in ("colocated", "sync"):
        s_mean = np.zeros_like(step)
        s_tok = np.full_like(step, carry_lag)
        s_max = np.zeros_like(step) + (1.0 if carry_lag > 0 else 0.0)
        env_stale = np.full_like(step, tail_share if ws.uses_sandbox else 0.0)
    elif mode == "one_step_off":
        s_mean = np.ones_like(step)
        s_tok = 1.0 + np.full_like(step, carry_lag)
        s_max = np.ones_like(step) + (1.0 if carry_lag > 0 else 0.0)
        env_stale = np.full_like(step, tail_share if ws.uses_sandbox else 0.0)
    else:
        eta = float(scn.orchestration.max_staleness)
        c_trained = inflight * keep
        s_mean = np.minimum(eta, (c_trained + queued) / B)
        if mode == "inflight":
            s_tok = np.minimum(eta, queued / B + (c_trained / B) * bias / 2.0)
        else:
            s_tok = np.minimum(eta, (c_trained * bias + queued) / B) + carry_lag
        # the longest trajectory: the cap, or (uncapped) the lognormal's p99 relative to its mean
        longest_lat = gcap.latency_s * (ws.cap / ws.response_mean if ws.cap else math.exp(Z99 * ws.sigma))
        s_max = np.minimum(eta, np.ceil(longest_lat / step + queued / B))
        spans = np.minimum(1.0, w_gen / step)
        env_stale = np.where(ws.uses_sandbox and mode == "inflight", spans, 0.0) + (
            tail_share if ws.uses_sandbox else 0.0)
        env_stale = np.minimum(env_stale, 1.0)
    s_mean = s_mean + lag_mean
    s_tok = s_tok + lag_mean
    s_max = s_max + lag_max

    # sandboxes (§7)
    if ws.uses_sandbox:
        disp_rate = x / keep
        live = disp_rate * w_gen if mode not in SYNC_MODES else np.full_like(step, n_disp) * np.minimum(
            1.0, (ws.tool_s + startup + gcap.latency_s) / step)
        if sb.max_concurrency > 0:
            live = np.minimum(live, sb.max_concurrency)
    else:
        live = np.zeros_like(step)
    cores = live * sb.cpu_cores

    # cost (§8)
    p_t, p_g = gpu_prices(scn)
    econ = scn.economics
    gpus_paid = n_t if mode == "colocated" else n_t + n_g
    gpu_usd_h = n_t * p_t if mode == "colocated" else n_t * p_t + n_g * p_g
    usd_h = gpu_usd_h + cores * econ.usd_per_cpu_core_hour
    tokens_h = x * ws.traj_tokens * 3600.0
    gen_tok_per_gpu = x * gen_per_trained / (n_g if mode != "colocated" else n_t)
    out = dict(
        trainer_gpus=n_t.astype(float), generator_gpus=n_g.astype(float), step_time_s=step,
        useful_samples_per_s=x * useful_per_trained, trainer_capacity_samples_per_s=mu_safe,
        generator_capacity_samples_per_s=gen_cap_samples * useful_per_trained,
        trainer_idle_fraction=trainer_idle, generator_idle_fraction=gen_idle,
        trainer_mfu=mfu_busy * np.clip(x * t_train / B, 0, 1), trainer_mfu_busy=mfu_busy,
        generator_output_tokens_per_s_per_gpu=gen_tok_per_gpu,
        useful_group_fraction=np.full_like(step, ws.useful_group_fraction),
        discarded_fraction=np.full_like(step, 1.0 - keep),
        mean_staleness_steps=s_mean, max_staleness_steps=s_max, token_staleness_steps=s_tok,
        env_state_stale_fraction=env_stale, sandbox_concurrency=live, sandbox_cpu_cores=cores,
        usd_per_hour=usd_h, usd_per_gpu_hour=usd_h / gpus_paid, usd_per_step=usd_h * step / 3600.0,
        usd_per_mtok_trained=usd_h / (tokens_h / 1e6),
    )
    out["feasible"] = feasible
    out["trained_samples_per_s"] = x
    out["weight_sync_s"] = t_sync
    out["rollout_latency_s"] = np.broadcast_to(w_gen, step.shape).astype(float)
    return out


def gpu_prices(scn: Scenario) -> tuple[float, float]:
    """($/GPU-hour trainer, $/GPU-hour generator): explicit per-pool prices, else the cost engine on
    ``[economics.cost_inputs]`` (each pool's hardware defaults plus the overrides), else ``usd_per_gpu_hour``."""
    econ = scn.economics
    prices = []
    for side, explicit in (("trainer", econ.trainer_usd_per_gpu_hour), ("generator", econ.generator_usd_per_gpu_hour)):
        if explicit is not None:
            prices.append(explicit)
        elif econ.cost_inputs is not None:
            from ..economics.tco import default_cost_inputs, gpu_hour_cost

            try:
                inputs = default_cost_inputs(getattr(scn, side).hardware, **econ.cost_inputs)
            except ScenarioError as exc:
                raise ScenarioError(f"economics.cost_inputs.{exc.field}", str(exc).split(": ", 1)[-1]) from None
            except TypeError as exc:
                raise ScenarioError("economics.cost_inputs", str(exc)) from None
            prices.append(gpu_hour_cost(inputs).usd_per_gpu_hour)
        else:
            prices.append(econ.usd_per_gpu_hour)
    return prices[0], prices[1]


def _partial_rollout(scn: Scenario, ws: WorkloadStats) -> tuple[float, float]:
    """(share of trajectories carried over a step boundary, extra token-weighted lag) under partial rollout.

    A response of ``R > τ`` tokens spans about ``R/τ`` versions; its token-weighted lag is
    ``(E[R²; R>τ]/τ − E[R; R>τ]) / (2·E[R])`` [derived, rl-modeling §4.6]."""
    from .rollouts import capped_moment, lognormal_partial_moment, truncated_share

    if not (scn.orchestration.partial_rollout and scn.orchestration.oversampling > 0 and math.isfinite(ws.tau)):
        return 0.0, 0.0
    tau, mu, sigma, cap = ws.tau, ws.mu, ws.sigma, ws.cap
    share = truncated_share(mu, sigma, tau)
    upper = cap if cap is not None else None
    e1 = capped_moment(1, mu, sigma, upper) - lognormal_partial_moment(1, mu, sigma, tau)
    e2 = capped_moment(2, mu, sigma, upper) - lognormal_partial_moment(2, mu, sigma, tau)
    lag = max(0.0, (e2 / tau - e1) / (2.0 * ws.response_mean))
    return share, lag


# ----------------------------------------------------------------------------------------- public API
def _phase_eval(scn, m, ws, n_t, n_g):
    gcap = generator_capacity(scn, m, ws)
    return gcap, _pipeline(scn, m, ws, gcap, n_t, n_g)


def _check_sides(scn: Scenario, m: ModelArch, ws: WorkloadStats, gcap: GeneratorCapacity, n_t: int, n_g: int, res):
    if n_g < gcap.instance_gpus:
        raise InfeasibleError(
            f"generator: {n_g} x {scn.generator.hardware} cannot hold {m.name} ({scn.generator.precision}); "
            f"the smallest instance is {gcap.instance_gpus} GPUs ({gcap.instance.label()})",
            suggestion=gcap.instance_gpus)
    if not bool(res["feasible"][0]):
        need = trainer_min_gpus(scn, m, ws)
        raise InfeasibleError(
            f"trainer: {n_t} x {scn.trainer.hardware} cannot train {m.name} ({scn.model.precision}) on "
            f"{ws.traj_tokens:,.0f}-token trajectories; at least {need} GPUs fit", suggestion=need)


def _scalar(res: dict, i: int = 0) -> dict:
    return {k: float(res[k][i]) for k in METRIC_UNITS if k in res}


def _finish(scn, m, per_phase: list[tuple[WorkloadStats, dict, GeneratorCapacity]]) -> tuple[dict, object]:
    """Whole-run metrics (time-weighted over phases) and the per-phase table."""
    import pandas as pd

    rows = []
    total_s = 0.0
    for ws, met, gcap in per_phase:
        dur = ws.steps * met["step_time_s"]
        total_s += dur
        rows.append({"phase": ws.phase, "start_step": ws.start_step, "steps": ws.steps, "duration [h]": dur / 3600,
                     **met, "generator_instance": gcap.instance.label()})
    weights = [r["duration [h]"] for r in rows]
    tot = sum(weights) or 1.0
    metrics = {}
    for k in METRIC_UNITS:
        if k in ("tinker_usd_per_mtok", "cost_ratio_vs_tinker", "run_hours", "run_usd"):
            continue
        vals = [r[k] for r in rows]
        if len(set(vals)) == 1:  # the same in every phase (GPU counts, prices): no averaging round-off
            metrics[k] = float(vals[0])
            continue
        metrics[k] = float(sum(v * w for v, w in zip(vals, weights, strict=True)) / tot)
    steps_total = sum(r["steps"] for r in rows)
    metrics["step_time_s"] = total_s / steps_total
    metrics["max_staleness_steps"] = max(r["max_staleness_steps"] for r in rows)
    metrics["usd_per_step"] = sum(r["usd_per_step"] * r["steps"] for r in rows) / steps_total
    trained_tok = sum(r["steps"] * scn.workload.samples_per_step * ws.traj_tokens for (ws, _, _), r in
                      zip(per_phase, rows, strict=True))
    run_usd_gpu = sum(r["usd_per_step"] * r["steps"] for r in rows)
    metrics["usd_per_mtok_trained"] = run_usd_gpu / (trained_tok / 1e6)
    # tinker, with each phase's own token mix, weighted by trained tokens
    tk = []
    for ws, _met, _ in per_phase:
        gen_per_trained = ws.generated_per_kept * (1.0 - ws.oversample_waste) / ws.keep_fraction
        tk.append(_tinker(scn, m, ws, gen_per_trained))
    if all(v is not None for v in tk):
        tw = [r["steps"] * ws.traj_tokens for (ws, _, _), r in zip(per_phase, rows, strict=True)]
        tinker = sum(v * w for v, w in zip(tk, tw, strict=True)) / sum(tw)
        metrics["tinker_usd_per_mtok"] = tinker
        metrics["cost_ratio_vs_tinker"] = metrics["usd_per_mtok_trained"] / tinker
    else:
        metrics["tinker_usd_per_mtok"] = None
        metrics["cost_ratio_vs_tinker"] = None
    ramp_h = _ramp_hours(scn, per_phase)
    metrics["run_hours"] = total_s / 3600.0 + ramp_h
    metrics["run_usd"] = run_usd_gpu + ramp_h * metrics["usd_per_hour"]
    ordered = {k: metrics[k] for k in METRIC_UNITS}
    return ordered, pd.DataFrame(rows)


def _ramp_hours(scn: Scenario, per_phase) -> float:
    """Sandbox start-up ramp at the start of the run: ``⌈C/K_start⌉ · t_start`` per attempt (§7, SBX-02)."""
    sb = scn.sandbox
    ws, met, _ = per_phase[0]
    if not ws.uses_sandbox or sb.startup_s <= 0:
        return 0.0
    live = met["sandbox_concurrency"]
    waves = math.ceil(live / sb.max_starting) if sb.max_starting > 0 else 1
    attempts = 1.0 / (1.0 - sb.failure_rate)
    return waves * sb.startup_s * attempts / 3600.0


def _evaluate_split(scn: Scenario, n_t: int, n_g: int) -> tuple[dict, object, list, dict]:
    m = _resolve_model(scn)
    _resolve_hw(scn)
    per_phase = []
    details = {}
    for name, start, steps, over in phase_list(scn):
        ws = workload_stats(scn, over, name, start, steps)
        gcap, res = _phase_eval(scn, m, ws, [n_t], [n_g])
        _check_sides(scn, m, ws, gcap, n_t, n_g, res)
        met = _scalar(res)
        per_phase.append((ws, met, gcap))
        details[name] = {"workload": ws, "generator": gcap, "weight_sync_s": float(res["weight_sync_s"][0]),
                         "rollout_latency_s": float(res["rollout_latency_s"][0]),
                         "trained_samples_per_s": float(res["trained_samples_per_s"][0])}
    metrics, phases = _finish(scn, m, per_phase)
    _assert_finite(metrics)
    return metrics, phases, per_phase, details


def _assert_finite(metrics: dict) -> None:
    for k, v in metrics.items():
        if v is not None and not math.isfinite(v):
            raise InfeasibleError(f"{k} is not finite for this scenario; check the workload and GPU counts")


def evaluate(scenario: Scenario) -> RLReport:
    """Metrics of the split given in the scenario (``trainer.gpus`` : ``generator.gpus``).

    Raises :class:`InfeasibleError` naming the side that cannot hold the model and the GPUs that would.
    """
    scn = scenario
    metrics, phases, per_phase, details = _evaluate_split(scn, scn.trainer.gpus, scn.generator.gpus)
    advice = _advice(scn, metrics)
    return RLReport(scenario=scn, metrics=metrics, details=details, phases=phases, advice=tuple(advice))


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


def solve_split(scenario: Scenario, objective: str = "usd_per_useful_sample", *, granularity: int | None = None,
                max_staleness: float | None = None, max_sandboxes: int | None = None) -> RLReport:
    """Best trainer/generator split of the scenario's GPUs (``trainer.gpus + generator.gpus``).

    Every split in steps of ``granularity`` GPUs (default: 1 up to 64 GPUs, else the smaller scale-up
    domain, at most 8) is
    evaluated at once; splits where a side cannot hold the model are skipped. ``objective`` is
    ``"usd_per_useful_sample"`` (minimise) or ``"useful_samples_per_s"`` (maximise). Constraints:
    ``max_staleness`` [steps] on the mean staleness and ``max_sandboxes`` on live sandboxes. With phases,
    the split is chosen for the whole run (time-weighted) and ``report.phases`` names the split each
    phase alone would want. ``report.sweep`` holds every candidate.
    """
    import pandas as pd

    if objective not in OBJECTIVES:
        raise ScenarioError("objective", f"must be one of {OBJECTIVES}, got {objective!r}")
    scn = scenario
    if scn.orchestration.mode == "colocated":
        report = evaluate(scn)
        m = report.metrics
        row = {k: m[k] for k in ("trainer_gpus", "generator_gpus", "step_time_s", "useful_samples_per_s",
                                 "usd_per_hour", "mean_staleness_steps", "sandbox_concurrency",
                                 "trainer_capacity_samples_per_s", "generator_capacity_samples_per_s",
                                 "trainer_idle_fraction", "generator_idle_fraction", "trainer_mfu")}
        row.update(trainer_share=1.0, feasible=True, meets_constraints=True, objective=objective, best=True,
                   usd_per_useful_sample=m["usd_per_hour"] / 3600.0 / m["useful_samples_per_s"])
        order = ["trainer_gpus", "generator_gpus", "trainer_share", "feasible", "meets_constraints", "step_time_s",
                 "useful_samples_per_s", "usd_per_useful_sample", "usd_per_hour", "mean_staleness_steps",
                 "sandbox_concurrency", "trainer_capacity_samples_per_s", "generator_capacity_samples_per_s",
                 "trainer_idle_fraction", "generator_idle_fraction", "trainer_mfu", "objective", "best"]
        sweep = pd.DataFrame([row])[order]  # the same columns, in the same order, as every other sweep
        return RLReport(scenario=scn, metrics=report.metrics, details=report.details, phases=report.phases,
                        sweep=sweep, advice=report.advice + ("colocated: one pool, nothing to split",))
    m = _resolve_model(scn)
    acc_t, acc_g = _resolve_hw(scn)
    total = scn.trainer.gpus + scn.generator.gpus
    if granularity is None:  # whole 8-GPU servers on real clusters; single GPUs on small ones
        granularity = 1 if total <= 64 else min(8, acc_t.scaleup_domain_gpus, acc_g.scaleup_domain_gpus)
    g = granularity
    if g < 1:
        raise ScenarioError("granularity", "must be at least 1")
    n_t = np.arange(g, total, g)
    if n_t.size == 0:
        raise InfeasibleError(f"{total} GPUs cannot be split into two pools in steps of {g}", suggestion=2 * g)
    n_g = total - n_t
    phases = phase_list(scn)
    per_phase = []
    for name, start, steps, over in phases:
        ws = workload_stats(scn, over, name, start, steps)
        gcap, res = _phase_eval(scn, m, ws, n_t, n_g)
        per_phase.append((ws, res, gcap))
    feasible = np.logical_and.reduce([r["feasible"] for _, r, _ in per_phase])
    weights = np.array([ws.steps for ws, _, _ in per_phase], dtype=float)
    step_time = sum(ws.steps * r["step_time_s"] for ws, r, _ in per_phase) / weights.sum()
    useful = sum(ws.steps * scn.workload.samples_per_step * (r["useful_samples_per_s"] / r["trained_samples_per_s"])
                 for ws, r, _ in per_phase) / (weights.sum() * step_time)
    usd_h = sum(ws.steps * r["step_time_s"] * r["usd_per_hour"] for ws, r, _ in per_phase) / (
        weights.sum() * step_time)
    usd_per_useful = usd_h / 3600.0 / useful
    ok = feasible.copy()
    mean_stale = sum(ws.steps * r["step_time_s"] * r["mean_staleness_steps"] for ws, r, _ in per_phase) / (
        weights.sum() * step_time)
    sandboxes = np.max([r["sandbox_concurrency"] for _, r, _ in per_phase], axis=0)
    if max_staleness is not None:
        ok &= mean_stale <= max_staleness
    if max_sandboxes is not None:
        ok &= sandboxes <= max_sandboxes
    if not ok.any():
        why = "no split holds the model on both sides" if not feasible.any() else "no split meets the constraints"
        raise InfeasibleError(f"{why} with {total} GPUs ({scn.trainer.hardware} trainer, {scn.generator.hardware} "
                              f"generator)", suggestion=None)
    score = np.where(ok, usd_per_useful if objective == "usd_per_useful_sample" else -useful, np.inf)
    best = int(np.argmin(score))
    sweep = pd.DataFrame({
        "trainer_gpus": n_t, "generator_gpus": n_g, "trainer_share": n_t / total, "feasible": feasible,
        "meets_constraints": ok, "step_time_s": np.where(feasible, step_time, 0.0),
        "useful_samples_per_s": np.where(feasible, useful, 0.0),
        "usd_per_useful_sample": np.where(feasible, usd_per_useful, 0.0),
        "usd_per_hour": np.where(feasible, usd_h, 0.0),
        "mean_staleness_steps": np.where(feasible, mean_stale, 0.0),
        "sandbox_concurrency": np.where(feasible, sandboxes, 0.0),
    })
    for k in ("trainer_capacity_samples_per_s", "generator_capacity_samples_per_s", "trainer_idle_fraction",
              "generator_idle_fraction", "trainer_mfu"):
        combined = sum(ws.steps * r["step_time_s"] * r[k] for ws, r, _ in per_phase) / (weights.sum() * step_time)
        sweep[k] = np.where(feasible, combined, 0.0)
    sweep["objective"] = objective
    sweep["best"] = np.arange(n_t.size) == best
    chosen = scn.with_split(int(n_t[best]), int(n_g[best]))
    report = evaluate(chosen)
    before = None
    try:
        before = evaluate(scn).metrics
    except InfeasibleError:
        pass
    advice = list(report.advice)
    if before is not None:
        advice.insert(0, f"Split {scn.trainer.gpus}:{scn.generator.gpus} -> {int(n_t[best])}:{int(n_g[best])} "
                         f"(trainer:generator): trainer idle {before['trainer_idle_fraction']:.0%} -> "
                         f"{report.metrics['trainer_idle_fraction']:.0%}, useful samples/s "
                         f"{before['useful_samples_per_s']:.3g} -> {report.metrics['useful_samples_per_s']:.3g}, "
                         f"$/useful sample {before['usd_per_hour'] / 3600 / before['useful_samples_per_s']:.3g} -> "
                         f"{report.metrics['usd_per_hour'] / 3600 / report.metrics['useful_samples_per_s']:.3g}.")
    phases_df = report.phases
    if len(per_phase) > 1:
        wants = []
        for _ws, r, _ in per_phase:
            u = r["useful_samples_per_s"]
            s = np.where(ok, r["usd_per_hour"] / 3600 / np.maximum(u, 1e-30) if objective == "usd_per_useful_sample"
                         else -u, np.inf)
            i = int(np.argmin(s))
            wants.append(f"{int(n_t[i])}:{int(n_g[i])}")
        phases_df = phases_df.assign(wants_split=wants)
    return RLReport(scenario=chosen, metrics=report.metrics, details=report.details, phases=phases_df, sweep=sweep,
                    advice=tuple(advice))
