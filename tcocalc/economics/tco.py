"""Cost engine: capex and opex to $/GPU-hour, and build vs rent vs Tinker for an RL scenario.

Ownership cost per GPU-hour (validation COST-06; SemiAnalysis-style TCO):

* capex per server = server + network + storage + installation, recovered as an annuity:
  capital recovery factor ``CRF = r·(1+r)^n / ((1+r)^n − 1)`` for cost of capital ``r`` over ``n``
  depreciation years (``1/n`` when ``r = 0``) — the standard annuity formula;
* power = IT power (GPU TDP × GPUs + host) × PUE × 8,760 h × $/kWh; colocation = IT kW × $/kW-month × 12;
  maintenance = share of the server price per year;
* per GPU-hour = yearly cost / (GPUs per server × 8,760 h × utilization).

Defaults per accelerator live in ``data/cost_defaults.toml`` with a source (or "assumption") each.
"""

from __future__ import annotations

import csv
import functools
import math
import tomllib
from dataclasses import dataclass

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from .._data import data_dir
from ..errors import MissingSpecError, ScenarioError

__all__ = ["CostInputs", "CostBreakdown", "default_cost_inputs", "gpu_hour_cost", "capital_recovery_factor",
           "cloud_prices", "build_rent_tinker", "sensitivity", "multitenancy", "HOURS_PER_YEAR"]

HOURS_PER_YEAR = 8760.0


class CostInputs(BaseModel):
    """Ownership-cost inputs of one server (or rack) type. Money in USD, power in kW, rates per year."""

    model_config = ConfigDict(frozen=True, extra="forbid", allow_inf_nan=False)

    hardware: str = Field("custom", description="accelerator name (for TDP and labels)")
    server_price_usd: float = Field(gt=0, le=1e9, description="server or rack price [USD]")
    gpus_per_server: int = Field(ge=1, le=100_000, description="GPUs per server or rack")
    network_capex_usd_per_server: float = Field(0.0, ge=0, le=1e9, description="scale-out fabric share [USD]")
    storage_capex_usd_per_server: float = Field(0.0, ge=0, le=1e9, description="storage share [USD]")
    installation_usd_per_server: float = Field(0.0, ge=0, le=1e9, description="installation, integration [USD]")
    depreciation_years: float = Field(gt=0, le=50, description="capital recovery period [years]")
    cost_of_capital: float = Field(0.0, ge=0, le=1, description="annual cost of capital [1/year]")
    gpu_power_kw: float = Field(gt=0, le=100, description="GPU board power (TDP) [kW per GPU]")
    host_power_kw_per_server: float = Field(0.0, ge=0, le=1e4, description="host, NICs, fans, switches [kW]")
    pue: float = Field(1.25, ge=1, le=5, description="power usage effectiveness")
    electricity_usd_per_kwh: float = Field(ge=0, le=10, description="electricity [USD/kWh]")
    colocation_usd_per_kw_month: float = Field(0.0, ge=0, le=1e5, description="colocation per kW of IT power [USD]")
    maintenance_share_per_year: float = Field(0.0, ge=0, le=1, description="support and spares, share of server price")
    utilization: float = Field(1.0, gt=0, le=1, description="share of calendar hours charged (0, 1]")
    sources: dict[str, str] = Field(default_factory=dict, description="input name -> source")

    @property
    def it_power_kw(self) -> float:
        """IT power of one server [kW]."""
        return self.gpu_power_kw * self.gpus_per_server + self.host_power_kw_per_server

    @property
    def upfront_usd(self) -> float:
        return (self.server_price_usd + self.network_capex_usd_per_server + self.storage_capex_usd_per_server
                + self.installation_usd_per_server)


@dataclass(frozen=True)
class CostBreakdown:
    """$/GPU-hour by line; ``capex_share`` of the total."""

    inputs: CostInputs
    lines: dict  # (group, line) -> USD per GPU-hour
    usd_per_gpu_hour: float
    capex_usd_per_gpu_hour: float
    opex_usd_per_gpu_hour: float
    capex_share: float

    def to_frame(self):
        """One row per line: group (capex/opex), line, USD per GPU-hour, share of the total."""
        import pandas as pd

        rows = [{"group": g, "line": name, "usd_per_gpu_hour": v, "share": v / self.usd_per_gpu_hour}
                for (g, name), v in self.lines.items()]
        return pd.DataFrame(rows)


def capital_recovery_factor(rate: float, years: float) -> float:
    """Annuity factor ``r(1+r)^n / ((1+r)^n − 1)`` [1/year]; ``1/n`` at ``r = 0``."""
    if years <= 0:
        raise ScenarioError("depreciation_years", f"must be > 0, got {years!r}")
    if rate == 0:
        return 1.0 / years
    g = (1.0 + rate) ** years
    return rate * g / (g - 1.0)


def gpu_hour_cost(inputs: CostInputs) -> CostBreakdown:
    """Ownership cost per GPU-hour with each capex and opex line (see the module docstring)."""
    i = inputs
    crf = capital_recovery_factor(i.cost_of_capital, i.depreciation_years)
    hours = i.gpus_per_server * HOURS_PER_YEAR * i.utilization
    capex = {
        ("capex", "server"): i.server_price_usd * crf / hours,
        ("capex", "network"): i.network_capex_usd_per_server * crf / hours,
        ("capex", "storage"): i.storage_capex_usd_per_server * crf / hours,
        ("capex", "installation"): i.installation_usd_per_server * crf / hours,
    }
    opex = {
        ("opex", "power"): i.it_power_kw * i.pue * HOURS_PER_YEAR * i.electricity_usd_per_kwh / hours,
        ("opex", "colocation"): i.it_power_kw * i.colocation_usd_per_kw_month * 12.0 / hours,
        ("opex", "maintenance"): i.server_price_usd * i.maintenance_share_per_year / hours,
    }
    c, o = sum(capex.values()), sum(opex.values())
    return CostBreakdown(inputs=i, lines=capex | opex, usd_per_gpu_hour=c + o, capex_usd_per_gpu_hour=c,
                         opex_usd_per_gpu_hour=o, capex_share=c / (c + o))


@functools.cache
def _defaults() -> dict:
    return tomllib.loads((data_dir() / "cost_defaults.toml").read_text())


def default_cost_inputs(hardware_name: str, **overrides) -> CostInputs:
    """The documented defaults for an accelerator (``data/cost_defaults.toml``), each with its source.

    Accelerators without a row raise :class:`MissingSpecError` listing those that have one.
    ``overrides`` replace individual inputs (validated; a bad value raises ScenarioError naming it).
    """
    from ..catalog.accelerators import hardware

    acc = hardware(hardware_name)
    raw = _defaults()
    if acc.name not in raw:
        have = ", ".join(k for k in raw if k != "common")
        raise MissingSpecError(f"no default cost inputs for {acc.name}; defaults exist for {have}; "
                               f"build tc.CostInputs(...) with your own figures")
    values, sources = {}, {}
    for table in (raw["common"], raw[acc.name]):
        for k, entry in table.items():
            values[k] = entry["value"]
            sources[k] = entry["source"]
    values["gpu_power_kw"] = acc.tdp_w / 1000.0
    sources["gpu_power_kw"] = f"TDP of {acc.name}: {acc.source_of('tdp').source}"
    values.update(overrides)
    try:
        return CostInputs(hardware=acc.name, sources=sources, **values)
    except ValidationError as exc:
        err = exc.errors()[0]
        raise ScenarioError(".".join(str(p) for p in err["loc"]), err["msg"]) from None


# ------------------------------------------------------------------------------- rent and compare
@functools.cache
def _cloud_rows() -> tuple[dict, ...]:
    with (data_dir() / "cloud_prices.csv").open() as f:
        rows = tuple(csv.DictReader(f))
    for r in rows:
        r["usd_per_gpu_hour"] = float(r["usd_per_gpu_hour"])
    return rows


#: Effective-cost multipliers for cluster quality (SemiAnalysis ClusterMAX TCO, via buzzberg.ai summary:
#: large pretrain gold 1.00x, hyperscaler 1.10x, silver 1.15x; facts.md §4). Neoclouds are taken as gold,
#: marketplaces as silver.
GOODPUT_FACTOR = {"neocloud": 1.00, "hyperscaler-class neocloud": 1.00, "hyperscaler": 1.10, "marketplace": 1.15}


def cloud_prices(hardware_name: str | None = None):
    """Dated on-demand $/GPU-hour by provider (``data/cloud_prices.csv``), optionally for one accelerator."""
    import pandas as pd

    from ..catalog.accelerators import hardware

    df = pd.DataFrame(list(_cloud_rows()))
    if hardware_name is not None:
        df = df[df["accelerator"] == hardware(hardware_name).name]
    return df.reset_index(drop=True)


def build_rent_tinker(scenario):
    """The scenario's cost per million trained tokens and per run, owned (its economics) vs rented at each
    listed provider (list price x the tier's goodput factor) vs Tinker's list price (DataFrame)."""
    import pandas as pd

    from ..rl.solve import evaluate

    base = evaluate(scenario)
    m = base.metrics
    scn = scenario
    gpu_hours_per_hour = m["trainer_gpus"] + (0 if scn.orchestration.mode == "colocated" else m["generator_gpus"])
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
        n_t = m["trainer_gpus"]
        n_g = 0.0 if scn.orchestration.mode == "colocated" else m["generator_gpus"]
        usd_h = (n_t * p_t + n_g * p_g) * gf + cpu_h
        rows.append({"option": "rent", "provider": r["provider"], "tier": r["tier"],
                     "usd_per_gpu_hour": (n_t * p_t + n_g * p_g) / gpu_hours_per_hour, "goodput_factor": gf,
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

    from ..rl.solve import evaluate

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
    from ..rl.solve import evaluate

    if not isinstance(runs, int) or runs < 1:
        raise ScenarioError("runs", f"must be a whole number >= 1, got {runs!r}")
    m = evaluate(scenario).metrics
    if scenario.orchestration.mode == "colocated":
        raise ScenarioError("orchestration.mode", "colocated runs have no separate generator pool to share")
    busy = 1.0 - m["generator_idle_fraction"]
    n_g = m["generator_gpus"]
    shared = max(n_g, math.ceil(runs * busy * n_g))
    from ..rl.solve import gpu_prices

    p_g = gpu_prices(scenario)[1]
    saved_usd_h = (runs * n_g - shared) * p_g
    per_run_usd_h = m["usd_per_hour"] - saved_usd_h / runs
    return {
        "runs": runs, "generator_gpus_separate": runs * n_g, "generator_gpus_shared": shared,
        "generator_busy_fraction": busy, "usd_per_hour_per_run": per_run_usd_h,
        "usd_per_mtok_trained": m["usd_per_mtok_trained"] * per_run_usd_h / m["usd_per_hour"],
        "usd_per_mtok_trained_alone": m["usd_per_mtok_trained"],
    }
