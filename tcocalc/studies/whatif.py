"""What-if studies over whole RL scenarios, above the RL model: build vs rent vs Tinker, sensitivity
(tornado data), multi-tenancy of the generator pool and the cost gap to Tinker (waterfall data)."""

from __future__ import annotations

import math

from pydantic import ValidationError

from ..economics.semianalysis import semianalysis_usd_per_gpu_hour
from ..economics.tco import (
    GOODPUT_FACTOR,
    cloud_prices,
    cluster_usd_per_hour,
    gpu_hour_cost,
    gpus_paid,
    paid_pools,
    pricing_text,
)
from ..errors import ScenarioError
from ..rl.cluster import resolve
from ..rl.solve import calibration_status, evaluate, trust_of

__all__ = ["calibration_of", "build_rent_tinker", "sensitivity", "multitenancy", "tinker_gap", "GAP_RUNS",
           "GAP_HARDWARE",
           "TINKER_ACCOUNTING", "SEMIANALYSIS_TINKER_ACCOUNTING"]

#: Defaults of :func:`tinker_gap`: tenants sharing a generator pool, and the newer generation compared.
GAP_RUNS = 4
GAP_HARDWARE = "B200"


#: How each option of :func:`build_rent_tinker` is counted (its ``accounting`` column).
TINKER_ACCOUNTING = ("our accounting: Tinker's list price for the run's token mix, prefill, sampling and training, "
                     "discarded rollouts billed (tinker_usd_per_mtok)")
SEMIANALYSIS_TINKER_ACCOUNTING = ("SemiAnalysis-style: list price with the prompt at prefill and the response at "
                                  "sample + train, discarded rollouts not billed (semianalysis_tinker_usd_per_mtok)")


def calibration_of(scenario) -> dict:
    """Whether a study's figures are calibrated: ``{"calibration": ..., "trust": ...}`` as an evaluation's
    mappings (``report.diagnosis.calibration`` and ``.trust`` as dicts: :func:`~tcocalc.rl.solve.calibration_status`,
    :func:`~tcocalc.rl.solve.trust`).
    Every study here carries it: a DataFrame in ``df.attrs``, :func:`multitenancy`'s dict as keys."""
    run = resolve(scenario).run
    return {"calibration": calibration_status(run).as_dict(), "trust": trust_of(run, scenario).as_dict()}


def _prices(report) -> tuple[float, float]:
    """($/GPU-hour trainer, $/GPU-hour generator) an evaluation charged (``report.cluster.prices``, resolved once;
    the paid pools' are ``report.diagnosis.pricing``)."""
    t, g = report.cluster.prices
    return t.usd_per_gpu_hour, g.usd_per_gpu_hour


def _calibration_in(report) -> dict:
    """:func:`calibration_of` as an evaluation of the scenario already gives it (no second resolve)."""
    d = report.diagnosis
    return {"calibration": d.calibration.as_dict(), "trust": d.trust.as_dict()}


def build_rent_tinker(scenario, *, ownership=None):
    """The scenario's cost per million trained tokens and per run, owned (its economics) vs rented at each
    listed provider (list price x the tier's goodput factor) vs Tinker's list price (DataFrame).

    One price per plan: ``build (own)`` is what :func:`~tcocalc.evaluate` charges (each pool's price and why:
    ``report.diagnosis.pricing``, :func:`~tcocalc.economics.tco.pool_pricing`), the same figure the Plan and Size
    pages show. ``ownership`` (a :class:`~tcocalc.economics.tco.CostInputs`, e.g. the Cost page's) adds a row
    ``build (ownership cost)``: the pools on its accelerator at :func:`~tcocalc.economics.tco.gpu_hour_cost` of it,
    the others at the scenario's price. ``usd_per_gpu_hour`` is the GPUs' price alone (sandbox CPUs, the same for
    every option, are in the $/Mtok and run cost); ``accounting`` says how each option is counted."""
    import pandas as pd

    base = evaluate(scenario, advice=False)
    m = base.metrics
    scn = scenario
    gpu_hours_per_hour = gpus_paid(scn, m["trainer_gpus"], m["generator_gpus"])
    cpu_h = m["sandbox_cpu_cores"] * scn.economics.usd_per_cpu_core_hour
    tokens_per_hour = (m["usd_per_hour"] / m["usd_per_mtok_trained"]) * 1e6
    pricing = base.diagnosis.pricing

    def owned(option: str, prices: tuple[float, float], accounting: str, source: str) -> dict:
        gpu_usd_h = cluster_usd_per_hour(scn, m["trainer_gpus"], m["generator_gpus"], 0.0, prices)
        usd_h = gpu_usd_h + cpu_h
        return {"option": option, "provider": "", "tier": "", "usd_per_gpu_hour": gpu_usd_h / gpu_hours_per_hour,
                "goodput_factor": 1.0, "usd_per_mtok_trained": usd_h / tokens_per_hour * 1e6,
                "run_usd": usd_h * m["run_hours"], "date": "", "source": source, "accounting": accounting}

    rows = [owned("build (own)", _prices(base), f"the plan's price: {pricing_text(pricing)}",
                  "scenario economics")]
    rows[0].update(usd_per_mtok_trained=m["usd_per_mtok_trained"], run_usd=m["run_usd"])  # evaluate's, exactly
    if ownership is not None:
        own = gpu_hour_cost(ownership).usd_per_gpu_hour
        hw = normalize_hw(ownership.hardware)
        sides = [side for side, _ in paid_pools(scn, 0, 0) if normalize_hw(getattr(scn, side).hardware) == hw]
        if sides:
            prices = tuple(own if normalize_hw(getattr(scn, side).hardware) == hw else p
                           for side, p in zip(("trainer", "generator"), _prices(base), strict=True))
            rows.append(owned("build (ownership cost)", prices,
                              f"{' and '.join(sides)} {hw} at the ownership cost {own:.4g} USD/GPU-h (capex recovered "
                              f"over {ownership.depreciation_years:g} years at {ownership.cost_of_capital:.0%}, "
                              f"{ownership.utilization:.0%} of calendar hours charged): you pay for the hardware's "
                              f"life, not only for this run's {m['run_hours']:,.0f} h",
                              "tc.gpu_hour_cost of the given inputs"))
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
                     "run_usd": usd_h * m["run_hours"], "date": r["date"], "source": r["source"],
                     "accounting": f"on-demand list price for the run's hours x the {r['tier']} goodput factor "
                                   f"{gf:.2f} (SemiAnalysis ClusterMAX)"})
    if m["tinker_usd_per_mtok"] is not None:
        rows.append({"option": "Tinker", "provider": "Thinking Machines", "tier": "managed",
                     "usd_per_gpu_hour": float("nan"), "goodput_factor": 1.0,
                     "usd_per_mtok_trained": m["tinker_usd_per_mtok"],
                     "run_usd": m["tinker_usd_per_mtok"] * tokens_per_hour / 1e6 * (m["run_hours"]),
                     "date": scn.economics.tinker_price_date, "source": "data/tinker_prices.csv",
                     "accounting": TINKER_ACCOUNTING})
    df = pd.DataFrame(rows)
    df["usd_per_gpu_hour"] = df["usd_per_gpu_hour"].astype(object).where(df["usd_per_gpu_hour"].notna(), None)
    df.attrs.update(_calibration_in(base))
    return df


def sensitivity(scenario, *, delta: float = 0.2):
    """Change in $/M trained tokens for ±``delta`` on each cost and workload input (tornado data); whether the
    figures are calibrated in ``df.attrs`` (:func:`calibration_of`)."""
    import pandas as pd

    report = evaluate(scenario, advice=False)  # metrics only: no advice is read here
    base = report.metrics["usd_per_mtok_trained"]
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
                out[sign] = evaluate(vary(section, field, f), advice=False).metrics["usd_per_mtok_trained"]
            except (ScenarioError, ValidationError, ValueError):
                out[sign] = None
        rows.append({"input": label, "field": f"{section}.{field}", "base_usd_per_mtok": base,
                     "low_usd_per_mtok": out["low"], "high_usd_per_mtok": out["high"],
                     "swing_usd_per_mtok": (abs(out["high"] - out["low"]) if None not in out.values() else None)})
    df = pd.DataFrame(rows).sort_values("swing_usd_per_mtok", ascending=False, na_position="last")
    df = df.reset_index(drop=True)
    df.attrs.update(_calibration_in(report))
    return df


def multitenancy(scenario, runs: int):
    """What-if: ``runs`` independent copies of the scenario share one generator pool.

    Approximation (documented assumptions): the runs are statistically independent and identical, the
    shared pool is packed perfectly (a busy fraction ``u`` per run adds up to ``min(1, n·u)``), sharing adds
    no interference, and each run keeps its own trainer. The pool then needs ``ceil(n·u·N_g)`` GPUs instead
    of ``n·N_g``; this is the tail-idle advantage a managed service such as Tinker is believed to have.
    """
    if not isinstance(runs, int) or runs < 1:
        raise ScenarioError("runs", f"must be a whole number >= 1, got {runs!r}")
    report = evaluate(scenario, advice=False)
    m = report.metrics
    if scenario.orchestration.traits.shared_pool:
        raise ScenarioError("orchestration.mode", "colocated runs have no separate generator pool to share")
    busy = 1.0 - m["generator_idle_fraction"]
    n_g = m["generator_gpus"]
    shared = _shared_pool_gpus(m, runs)
    p_g = _prices(report)[1]
    saved_usd_h = (runs * n_g - shared) * p_g
    per_run_usd_h = m["usd_per_hour"] - saved_usd_h / runs
    return {
        "runs": runs, "generator_gpus_separate": runs * n_g, "generator_gpus_shared": shared,
        "generator_busy_fraction": busy, "usd_per_hour_per_run": per_run_usd_h,
        "usd_per_mtok_trained": m["usd_per_mtok_trained"] * per_run_usd_h / m["usd_per_hour"],
        "usd_per_mtok_trained_alone": m["usd_per_mtok_trained"], **_calibration_in(report),
    }


def _shared_pool_gpus(m: dict, runs: int) -> float:
    """Generator GPUs ``runs`` copies need in one perfectly packed pool: ``max(N_g, ceil(n·u·N_g))``."""
    n_g = m["generator_gpus"]
    return max(n_g, math.ceil(runs * (1.0 - m["generator_idle_fraction"]) * n_g))


def _ideal_savings(scn, m: dict, r_t: float, r_g: float, best_mfu: float, runs: int) -> list[tuple[str, float]]:
    """Hourly savings [USD/h] at per-GPU-hour prices ``r_t``/``r_g``, one per cause, switched off in turn.

    docs/rl-modeling.md §8 attributes idle cost as ``N·p·idle`` per pool. In turn: multi-tenancy (generator
    GPU-hours other runs fill, :func:`multitenancy`'s packing), the generator idle left, trainer idle, the
    generator's busy time spent on discarded rollouts (``× discarded_fraction``) and the trainer's busy time
    lost to an MFU below ``best_mfu`` (``× (1 − MFU/best)``). Colocated: one pool, idle only where it neither
    trains nor generates, no tenants.
    """
    n_t, n_g = m["trainer_gpus"], m["generator_gpus"]
    idle_t, idle_g, d = m["trainer_idle_fraction"], m["generator_idle_fraction"], m["discarded_fraction"]
    mfu_loss = max(0.0, 1.0 - m["trainer_mfu_busy"] / best_mfu) if best_mfu > 0 else 0.0
    if scn.orchestration.traits.shared_pool:
        pool = n_t * r_t
        return [("multi-tenancy", 0.0), ("generator idle", 0.0),
                ("trainer idle", pool * max(0.0, idle_t + idle_g - 1.0)),
                ("discarded rollouts", pool * (1.0 - idle_g) * d),
                ("MFU below the trainer's best", pool * (1.0 - idle_t) * mfu_loss)]
    tenants = (runs * n_g - _shared_pool_gpus(m, runs)) / runs * r_g
    return [("multi-tenancy", tenants), ("generator idle", max(0.0, n_g * r_g * idle_g - tenants)),
            ("trainer idle", n_t * r_t * idle_t), ("discarded rollouts", n_g * r_g * (1.0 - idle_g) * d),
            ("MFU below the trainer's best", n_t * r_t * (1.0 - idle_t) * mfu_loss)]


def _ideal(scn, runs: int):
    """(metrics, rental prices, best MFU, savings, ideal $/Mtok, notes) of one scenario (see :func:`tinker_gap`)."""
    report = evaluate(scn, advice=False)
    m = report.metrics
    notes = []
    p_t, p_g = _prices(report)
    r_t = semianalysis_usd_per_gpu_hour(scn.trainer.hardware)
    r_g = semianalysis_usd_per_gpu_hour(scn.generator.hardware)
    if r_t is None or r_g is None:
        notes.append(f"no rental reference price for {scn.trainer.hardware}/{scn.generator.hardware} in "
                     "data/semianalysis_accounting.csv: the scenario's own price is kept")
        r_t, r_g = (p_t if r_t is None else r_t), (p_g if r_g is None else r_g)
    best = m["trainer_mfu_busy"]
    if scn.trainer.mfu_busy is not None:  # a measured MFU: the roofline training model's is the trainer's best
        roofline = evaluate(scn.with_values({"trainer.mfu_busy": None}), advice=False)
        best = max(best, roofline.metrics["trainer_mfu_busy"])
    mtok_h = m["usd_per_hour"] / m["usd_per_mtok_trained"]
    rent_h = cluster_usd_per_hour(scn, m["trainer_gpus"], m["generator_gpus"], m["sandbox_cpu_cores"], (r_t, r_g))
    savings = _ideal_savings(scn, m, r_t, r_g, best, runs)
    ideal = (rent_h - math.fsum(v for _, v in savings)) / mtok_h
    return m, (p_t, p_g, r_t, r_g), best, savings, rent_h / mtok_h, ideal, notes


def tinker_gap(scenario, *, hardware: str = GAP_HARDWARE, runs: int = GAP_RUNS):
    """Cost-gap waterfall (DataFrame) from Tinker's list price to the scenario's ``usd_per_mtok_trained``.

    One bar per cause, each the change in $/M trained tokens when that cause is switched off in the model,
    in this order from the scenario down (a telescoping chain, so the bars sum to the difference exactly up
    to float rounding): the GPU-hour price (the scenario's own vs the SemiAnalysis-style rental price,
    ``data/semianalysis_accounting.csv``), multi-tenancy (generator capacity ``runs − 1`` other runs could
    fill, :func:`multitenancy`), the generator idle left, trainer idle, discarded rollouts, MFU below the
    trainer's best (the roofline training model's MFU where the scenario gives a measured one), then the
    hardware generation (the same run, same GPU counts, on ``hardware``, its ideal at its rental price).
    What is left between that ideal and Tinker's list price (SemiAnalysis-style, discards not billed:
    ``semianalysis_tinker_usd_per_mtok``) is Tinker's margin and what the model leaves out
    (prefill/decode disaggregation among them). Costs per GPU-hour follow docs/rl-modeling.md §8.

    Columns: ``cause``, ``measure`` (absolute | relative | total, plotly's waterfall), ``usd_per_mtok``,
    ``cumulative_usd_per_mtok``, ``note``. ``attrs["note"]`` says what was left out: a model Tinker does not
    list starts from the ideal self-built cost instead, with no Tinker bar and no made-up price.
    """
    import pandas as pd

    if not isinstance(runs, int) or runs < 1:
        raise ScenarioError("runs", f"must be a whole number >= 1, got {runs!r}")
    scn = scenario
    m, (p_t, p_g, r_t, r_g), best, savings, rent_cost, ideal, notes = _ideal(scn, runs)
    c0 = m["usd_per_mtok_trained"]
    tinker = m["semianalysis_tinker_usd_per_mtok"]
    hw_now = scn.generator.hardware
    same_hw = normalize_hw(hardware) == normalize_hw(scn.trainer.hardware) == normalize_hw(hw_now)
    hw_bar, ideal_final = 0.0, ideal
    if same_hw:
        notes.append(f"the run is already on {hardware}: no hardware-generation bar")
    else:
        other = scn.with_cluster(trainer_hardware=hardware, generator_hardware=hardware)
        if semianalysis_usd_per_gpu_hour(hardware) is None:
            notes.append(f"no rental reference price for {hardware}: no hardware-generation bar")
        else:
            ideal_final = _ideal(other, runs)[5]
            hw_bar = ideal - ideal_final
    mtok_h = m["usd_per_hour"] / c0
    rows = []
    if tinker is not None:
        rows.append(("Tinker list price (SemiAnalysis-style: discards not billed)", "absolute", tinker,
                     f"{scn.model.name}, list of {scn.economics.tinker_price_date}; prompt at prefill, response at "
                     "sample + train, discards not billed"))
        rows.append(("Tinker margin and what the model leaves out", "relative", ideal_final - tinker,
                     "ideal self-built cost minus Tinker's price (prefill/decode disaggregation, Tinker's margin)"))
    else:
        notes.append(f"Tinker does not list {scn.model.name}: the waterfall starts from the ideal self-built "
                     "cost, without a Tinker bar (no price is made up)")
        rows.append((f"ideal self-built on {hardware if hw_bar else hw_now} (rented, no idle, no discards, best MFU)",
                     "absolute", ideal_final, "every paid GPU-second does useful work"))
    if hw_bar:
        rows.append((f"hardware generation: {hw_now} instead of {hardware}", "relative", hw_bar,
                     "same run, same GPU counts, each at its rental price"))
    labels = {"multi-tenancy": f"multi-tenancy: idle generator capacity {runs - 1} other runs could fill",
              "generator idle": "generator idle (not filled by other tenants)",
              "MFU below the trainer's best": f"MFU below the trainer's best ({m['trainer_mfu_busy']:.1%} "
                                              f"vs {best:.1%})",
              "discarded rollouts": f"discarded rollouts ({m['discarded_fraction']:.0%})",
              "trainer idle": f"trainer idle ({m['trainer_idle_fraction']:.0%})"}
    for cause, usd_h in reversed(savings):
        rows.append((labels[cause], "relative", usd_h / mtok_h, "switched off in the model (rl-modeling §8)"))
    rows.append((f"GPU-hour price: own ({p_t:.2f}/{p_g:.2f}) vs rent ({r_t:.2f}/{r_g:.2f}) USD/GPU-h", "relative",
                 c0 - rent_cost, "scenario economics vs data/semianalysis_accounting.csv"))
    if tinker is not None:  # close exactly: the margin bar takes the float rounding of the chain
        others = math.fsum(r[2] for r in rows[2:])
        rows[1] = (rows[1][0], "relative", (c0 - tinker) - others, rows[1][3])
    rows.append(("this run: cost per M trained tokens (ours)", "total", c0, scn.name))
    df = pd.DataFrame(rows, columns=["cause", "measure", "usd_per_mtok", "note"])
    cum, acc = [], 0.0
    for meas, v in zip(df["measure"], df["usd_per_mtok"], strict=True):
        acc = v if meas in ("absolute", "total") else acc + v
        cum.append(acc)
    df.insert(3, "cumulative_usd_per_mtok", cum)
    df.attrs["note"] = "; ".join(notes)
    df.attrs.update(calibration_of(scenario))
    return df


def normalize_hw(name: str) -> str:
    """Canonical accelerator name (catalog), or the name as given."""
    from ..catalog.accelerators import hardware
    from ..errors import UnknownEntryError

    try:
        return hardware(name).name
    except UnknownEntryError:
        return name
