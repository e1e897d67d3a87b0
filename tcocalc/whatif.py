"""What-if studies over whole RL scenarios, above the RL model: build vs rent vs Tinker, sensitivity
(tornado data) and multi-tenancy of the generator pool."""

from __future__ import annotations

import math

from pydantic import ValidationError

from .economics.tco import GOODPUT_FACTOR, cloud_prices, cluster_usd_per_hour, gpus_paid, pool_prices
from .errors import ScenarioError
from .rl.solve import evaluate

__all__ = ["build_rent_tinker", "sensitivity", "multitenancy"]


def build_rent_tinker(scenario):
    """The scenario's cost per million trained tokens and per run, owned (its economics) vs rented at each
    listed provider (list price x the tier's goodput factor) vs Tinker's list price (DataFrame)."""
    import pandas as pd

    base = evaluate(scenario)
    m = base.metrics
    scn = scenario
    gpu_hours_per_hour = gpus_paid(scn, m["trainer_gpus"], m["generator_gpus"])
    cpu_h = m["sandbox_cpu_cores"] * scn.economics.usd_per_cpu_core_hour
    tokens_per_hour = (m["usd_per_hour"] / m["usd_per_mtok_trained"]) * 1e6
    rows = [{"option": "build (own)", "provider": "", "tier": "", "usd_per_gpu_hour": m["usd_per_gpu_hour"],
             "goodput_factor": 1.0, "usd_per_mtok_trained": m["usd_per_mtok_trained"], "run_usd": m["run_usd"],
             "date": "", "source": "scenario economics"}]
    t_hw, g_hw = scn.trainer.hardware, scn.generator.hardware
    prices_t = cloud_prices(t_hw)
    prices_g = cloud_prices(g_hw)
    for _, r in prices_t.iterrows():
        match = prices_g[prices_g["provider"] == r["provider"]]
        if match.empty:
            continue  # a provider must offer both pools' hardware
        p_t, p_g = r["usd_per_gpu_hour"], float(match.iloc[0]["usd_per_gpu_hour"])
        gf = GOODPUT_FACTOR.get(r["tier"], 1.0)
        gpu_usd_h = cluster_usd_per_hour(scn, m["trainer_gpus"], m["generator_gpus"], 0.0, (p_t, p_g))
        usd_h = gpu_usd_h * gf + cpu_h
        rows.append({"option": "rent", "provider": r["provider"], "tier": r["tier"],
                     "usd_per_gpu_hour": gpu_usd_h / gpu_hours_per_hour, "goodput_factor": gf,
                     "usd_per_mtok_trained": usd_h / tokens_per_hour * 1e6,
                     "run_usd": usd_h * m["run_hours"], "date": r["date"], "source": r["source"]})
    if m["tinker_usd_per_mtok"] is not None:
        rows.append({"option": "Tinker", "provider": "Thinking Machines", "tier": "managed",
                     "usd_per_gpu_hour": float("nan"), "goodput_factor": 1.0,
                     "usd_per_mtok_trained": m["tinker_usd_per_mtok"],
                     "run_usd": m["tinker_usd_per_mtok"] * tokens_per_hour / 1e6 * (m["run_hours"]),
                     "date": scn.economics.tinker_price_date, "source": "data/tinker_prices.csv"})
    df = pd.DataFrame(rows)
    df["usd_per_gpu_hour"] = df["usd_per_gpu_hour"].astype(object).where(df["usd_per_gpu_hour"].notna(), None)
    return df


def sensitivity(scenario, *, delta: float = 0.2):
    """Change in $/M trained tokens for ±``delta`` on each cost and workload input (tornado data)."""
    import pandas as pd

    base = evaluate(scenario).metrics["usd_per_mtok_trained"]
    scn = scenario
    w, e = scn.workload, scn.economics

    def vary(section: str, field: str, factor: float):
        sec = getattr(scn, section)
        if field == "response_length":  # scale mean, p99 and cap together: same shape, longer responses
            upd = {k: getattr(sec, k) * factor for k in ("response_tokens_mean", "response_tokens_p99",
                                                         "response_tokens_max") if getattr(sec, k) is not None}
            return scn.model_copy(update={section: sec.model_copy(update=upd)})
        val = getattr(sec, field)
        new = type(val)(max(1, round(val * factor))) if isinstance(val, int) else val * factor
        return scn.model_copy(update={section: sec.model_copy(update={field: new})})

    knobs = [("economics", "usd_per_gpu_hour", "GPU cost [USD/GPU-h]"),
             ("economics", "usd_per_cpu_core_hour", "sandbox CPU cost [USD/core-h]"),
             ("workload", "response_length", "response length, whole distribution [token]"),
             ("workload", "prompt_tokens", "prompt [token]"),
             ("workload", "group_size", "group size"),
             ("workload", "prompts_per_step", "prompts per step")]
    if w.response_tokens_p99 is not None:
        knobs.append(("workload", "response_tokens_p99", "response p99 [token]"))
    if scn.sandbox.tool_call_s > 0:
        knobs.append(("sandbox", "tool_call_s", "tool call [s]"))
    rows = []
    for section, field, label in knobs:
        if section == "economics" and field == "usd_per_gpu_hour" and (e.trainer_usd_per_gpu_hour or
                                                                         e.generator_usd_per_gpu_hour):
            continue
        out = {}
        for sign, f in (("low", 1 - delta), ("high", 1 + delta)):
            try:
                out[sign] = evaluate(vary(section, field, f)).metrics["usd_per_mtok_trained"]
            except (ScenarioError, ValidationError, ValueError):
                out[sign] = None
        rows.append({"input": label, "field": f"{section}.{field}", "base_usd_per_mtok": base,
                     "low_usd_per_mtok": out["low"], "high_usd_per_mtok": out["high"],
                     "swing_usd_per_mtok": (abs(out["high"] - out["low"]) if None not in out.values() else None)})
    df = pd.DataFrame(rows)
    return df.sort_values("swing_usd_per_mtok", ascending=False, na_position="last").reset_index(drop=True)


def multitenancy(scenario, runs: int):
    """What-if: ``runs`` independent copies of the scenario share one generator pool.

    Approximation (documented assumptions): the runs are statistically independent and identical, the
    shared pool is packed perfectly (a busy fraction ``u`` per run adds up to ``min(1, n·u)``), sharing adds
    no interference, and each run keeps its own trainer. The pool then needs ``ceil(n·u·N_g)`` GPUs instead
    of ``n·N_g``; this is the tail-idle advantage a managed service such as Tinker is believed to have.
    """
    if not isinstance(runs, int) or runs < 1:
        raise ScenarioError("runs", f"must be a whole number >= 1, got {runs!r}")
    m = evaluate(scenario).metrics
    if scenario.orchestration.mode == "colocated":
        raise ScenarioError("orchestration.mode", "colocated runs have no separate generator pool to share")
    busy = 1.0 - m["generator_idle_fraction"]
    n_g = m["generator_gpus"]
    shared = max(n_g, math.ceil(runs * busy * n_g))
    p_g = pool_prices(scenario)[1]
    saved_usd_h = (runs * n_g - shared) * p_g
    per_run_usd_h = m["usd_per_hour"] - saved_usd_h / runs
    return {
        "runs": runs, "generator_gpus_separate": runs * n_g, "generator_gpus_shared": shared,
        "generator_busy_fraction": busy, "usd_per_hour_per_run": per_run_usd_h,
        "usd_per_mtok_trained": m["usd_per_mtok_trained"] * per_run_usd_h / m["usd_per_hour"],
        "usd_per_mtok_trained_alone": m["usd_per_mtok_trained"],
    }
