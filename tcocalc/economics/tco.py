"""Cost engine: capex and opex to $/GPU-hour, the price of each pool, and a cluster's cost per hour.

Ownership cost per GPU-hour (validation COST-06; SemiAnalysis-style TCO):

* capex per server = server + network + storage + installation, recovered as an annuity:
  capital recovery factor ``CRF = r·(1+r)^n / ((1+r)^n − 1)`` for cost of capital ``r`` over ``n``
  depreciation years (``1/n`` when ``r = 0``) — the standard annuity formula;
* power = IT power (GPU TDP × GPUs + host) × PUE × 8,760 h × $/kWh; colocation = IT kW × $/kW-month × 12;
  maintenance = share of the server price per year;
* per GPU-hour = yearly cost / (GPUs per server × 8,760 h × utilization).

Defaults per accelerator live in ``data/cost_defaults.toml`` with a source (or "assumption") each, read and
checked by :mod:`tcocalc.catalog.prices` like every price table.

A scenario's pools (docs/rl-modeling.md §8): each pool's $/GPU-hour is its explicit price, else this engine
on ``[economics.cost_inputs]``, else ``usd_per_gpu_hour`` (:func:`pool_pricing`); a colocated run pays one
pool (:func:`gpus_paid`); sandbox CPU cores are paid per core-hour (:func:`cluster_usd_per_hour`). The
what-if studies over whole scenarios (build/rent/Tinker, sensitivity, multi-tenancy) live above the RL
layer, in :mod:`tcocalc.studies.whatif`.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from ..catalog.accelerators import Accelerator, hardware, hardware_entries
from ..catalog.prices import cloud_price_rows, cost_defaults
from ..errors import MissingSpecError, ScenarioError
from ..scenario import Scenario

__all__ = ["CostInputs", "CostBreakdown", "default_cost_inputs", "cost_default_hardware", "gpu_hour_cost",
           "capital_recovery_factor", "cloud_prices", "pool_pricing", "pool_prices", "priced_chips", "PoolPrice",
           "PRICE_BASES", "ownership_usd_per_gpu_hour", "amortisation_text", "pricing_text", "paid_pools", "gpus_paid",
           "cluster_usd_per_hour", "cost_lines", "GOODPUT_FACTOR", "HOURS_PER_YEAR"]

HOURS_PER_YEAR = 8760.0


class CostInputs(BaseModel):
    """Ownership-cost inputs of one server (or rack) type. Money in USD, power in kW, rates per year. Strict, as the
    scenario's sections are: a boolean or a string is never a number (``pue = true`` in ``[economics.cost_inputs]``
    was taken as 1.0)."""

    model_config = ConfigDict(frozen=True, extra="forbid", allow_inf_nan=False, strict=True)

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

    @property
    def usd_per_server_year(self) -> float:
        """Ownership cost of one server (or rack) per calendar year [USD/year].

        ``usd_per_gpu_hour × gpus_per_server × HOURS_PER_YEAR × utilization``: :func:`gpu_hour_cost` divides
        the yearly cost (capex annuity + power + colocation + maintenance) by the charged GPU-hours
        ``gpus_per_server × 8,760 h × utilization``, so this multiplies them back; it does not depend on
        ``utilization``.
        """
        i = self.inputs
        return self.usd_per_gpu_hour * i.gpus_per_server * HOURS_PER_YEAR * i.utilization


def capital_recovery_factor(rate: float, years: float) -> float:
    """Annuity factor ``r(1+r)^n / ((1+r)^n − 1)`` [1/year] (the standard capital recovery factor, e.g. NREL's
    "Simple Levelized Cost of Energy" documentation); ``1/n`` at ``r = 0``. Where ``(1+r)^n − 1`` loses its digits
    (``|r·n| < 1e-6``; it rounds to zero below about 1e-16) the same factor is computed as
    ``r / (1 − e^{−n·ln(1+r)})`` with ``log1p``/``expm1``, which tends to ``1/n`` as ``r → 0`` and stays finite."""
    if years <= 0:
        raise ScenarioError("depreciation_years", f"must be > 0, got {years!r}")
    if rate == 0:
        return 1.0 / years
    if abs(rate * years) < 1e-6:
        x = years * math.log1p(rate)
        if x == 0.0:  # underflow: the limit r/x + r/2 with x = n·r
            return 1.0 / years + rate / 2.0
        return rate / -math.expm1(-x)
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


def cost_default_hardware() -> list[str]:
    """Accelerators with default cost inputs in ``data/cost_defaults.toml`` (every table but ``common``)."""
    return [k for k in cost_defaults() if k != "common"]


def default_cost_inputs(hardware_name: str, **overrides) -> CostInputs:
    """The documented defaults for an accelerator (``data/cost_defaults.toml``), each with its source.

    Accelerators without a row raise :class:`MissingSpecError` listing those that have one.
    ``overrides`` replace individual inputs (validated; a bad value raises ScenarioError naming it).
    """
    return _default_cost_inputs(hardware(hardware_name), overrides)


def _default_cost_inputs(acc: Accelerator, overrides: Mapping) -> CostInputs:
    """:func:`default_cost_inputs` of a catalog entry already looked up."""
    raw = cost_defaults()
    if acc.name not in raw:
        have = ", ".join(cost_default_hardware())
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
#: Effective-cost multipliers for cluster quality (SemiAnalysis ClusterMAX TCO, via buzzberg.ai summary:
#: large pretrain gold 1.00x, hyperscaler 1.10x, silver 1.15x; docs/sources.md §F.4). Neoclouds are taken as gold,
#: marketplaces as silver.
GOODPUT_FACTOR = {"neocloud": 1.00, "hyperscaler-class neocloud": 1.00, "hyperscaler": 1.10, "marketplace": 1.15}


def cloud_prices(hardware_name: str | None = None):
    """Dated on-demand $/GPU-hour by provider (``data/cloud_prices.csv``), optionally for one accelerator."""
    import pandas as pd

    df = pd.DataFrame(list(cloud_price_rows()))
    if hardware_name is not None:
        df = df[df["accelerator"] == hardware(hardware_name).name]
    return df.reset_index(drop=True)


# ------------------------------------------------------------------------------- a scenario's pools
#: What a pool's $/GPU-hour is (:attr:`PoolPrice.basis`), in the order :func:`pool_pricing` tries them.
PRICE_BASES = {
    "pool price": "the pool's own price (economics.<pool>_usd_per_gpu_hour)",
    "accelerator price": "your price for the accelerator (economics.hardware_prices)",
    "cost inputs": "the ownership cost of its hardware on [economics.cost_inputs]",
    "scenario price": "the scenario's price (economics.usd_per_gpu_hour)",
    "ownership cost": "the ownership cost of its hardware (data/cost_defaults.toml), the scenario's price being "
                      "for other hardware",
}


@dataclass(frozen=True)
class PoolPrice:
    """One pool's $/GPU-hour and why (``report.diagnosis.pricing``): ``side``, ``hardware`` (catalog name),
    ``usd_per_gpu_hour``, ``basis`` (a key of :data:`PRICE_BASES`), ``set_for`` (the accelerator the scenario's
    price was set for, where it no longer applies; else None) and ``text``, one sentence saying it."""

    side: str
    hardware: str
    usd_per_gpu_hour: float
    basis: str
    set_for: str | None = None
    text: str = ""

    def as_dict(self) -> dict:
        return {"side": self.side, "hardware": self.hardware, "usd_per_gpu_hour": self.usd_per_gpu_hour,
                "basis": self.basis, "set_for": self.set_for, "text": self.text}


def _canonical(chips: Mapping[str, Accelerator | KeyError], name: str) -> str:
    """The catalog name of ``name`` in ``chips`` (:func:`priced_chips`); a name the catalog does not know is
    compared as written."""
    acc = chips[name]
    return name if isinstance(acc, KeyError) else acc.name


def ownership_usd_per_gpu_hour(hardware_name: str) -> float | None:
    """The ownership cost of an accelerator on its documented defaults (:func:`default_cost_inputs`,
    :func:`gpu_hour_cost`) [USD/GPU-h]; None where ``data/cost_defaults.toml`` has no row for it."""
    try:
        return _ownership(hardware(hardware_name))
    except KeyError:  # UnknownEntryError: no defaults for a chip the catalog does not know
        return None


@functools.lru_cache(maxsize=64)
def _ownership(acc: Accelerator) -> float | None:
    try:
        return gpu_hour_cost(_default_cost_inputs(acc, {})).usd_per_gpu_hour
    except (MissingSpecError, KeyError):
        return None


def amortisation_text(hardware_name: str) -> str:
    """How an ownership cost recovers the capex, for the accelerator's documented defaults
    (``data/cost_defaults.toml``): "capex recovered over 5 years at 4% cost of capital with 100% of calendar hours
    charged (data/cost_defaults.toml)"."""
    return _amortisation(hardware(hardware_name))


def _amortisation(acc: Accelerator) -> str:
    i = _default_cost_inputs(acc, {})
    return (f"capex recovered over {i.depreciation_years:g} years at {i.cost_of_capital:.0%} cost of capital with "
            f"{i.utilization:.0%} of calendar hours charged (data/cost_defaults.toml)")


def _pool_price(scn: Scenario, side: str, chips: Mapping[str, Accelerator | KeyError]) -> PoolPrice:
    econ = scn.economics
    hw_name = getattr(scn, side).hardware
    hw = _canonical(chips, hw_name)
    set_for = getattr(econ.priced_for, side, None) if econ.priced_for is not None else None
    set_for = None if set_for is None else _canonical(chips, set_for)
    applies = set_for is None or set_for == hw
    own = getattr(econ, f"{side}_usd_per_gpu_hour")
    listed = {_canonical(chips, k): v for k, v in (econ.hardware_prices or {}).items()}
    if own is not None and applies:
        return PoolPrice(side, hw, own, "pool price", text=f"{side} {hw} at {own:.4g} USD/GPU-h, the pool's own price "
                                                          f"(economics.{side}_usd_per_gpu_hour)")
    if hw in listed:
        return PoolPrice(side, hw, float(listed[hw]), "accelerator price",
                         text=f"{side} {hw} at {listed[hw]:.4g} USD/GPU-h, your price for {hw} "
                              f"(economics.hardware_prices)")
    if econ.cost_inputs is not None:
        p = gpu_hour_cost(_scenario_cost_inputs(scn, side, chips)).usd_per_gpu_hour
        return PoolPrice(side, hw, p, "cost inputs", text=f"{side} {hw} at {p:.4g} USD/GPU-h, its ownership cost on "
                                                          f"[economics.cost_inputs]")
    if applies:
        p = econ.usd_per_gpu_hour
        return PoolPrice(side, hw, p, "scenario price", text=f"{side} {hw} at {p:.4g} USD/GPU-h, the scenario's price "
                                                             f"(economics.usd_per_gpu_hour)")
    old = own if own is not None else econ.usd_per_gpu_hour
    which = f"economics.{side}_usd_per_gpu_hour" if own is not None else "economics.usd_per_gpu_hour"
    acc = chips[hw_name]
    p = None if isinstance(acc, KeyError) else _ownership(acc)
    if p is None:
        raise ScenarioError(which, f"{old:.4g} USD/GPU-h is the price of {set_for} and the {side} pool "
                                   f"now runs on {hw}, which has no ownership-cost defaults in "
                                   f"data/cost_defaults.toml: give {hw} a price (this field, "
                                   f"economics.hardware_prices, or [economics.cost_inputs])")
    return PoolPrice(side, hw, p, "ownership cost", set_for=set_for,
                     text=f"{side} {hw} at {p:.4g} USD/GPU-h, its ownership cost: {_amortisation(acc)}; the "
                          f"scenario's {old:.4g} USD/GPU-h ({which}) was set for {set_for}")


def pool_pricing(scn: Scenario) -> tuple[PoolPrice, PoolPrice]:
    """(trainer, generator) :class:`PoolPrice`: each pool's $/GPU-hour and why (docs/rl-modeling.md §8;
    docs/scenario-schema.md, "Prices and measurements follow the hardware"). A price is for the hardware it was
    set for (``economics.priced_for``; a scenario as written sets it for its own pools). In order: the pool's own
    price (``<pool>_usd_per_gpu_hour``) where it applies, your price for its accelerator
    (``economics.hardware_prices``), this engine on ``[economics.cost_inputs]`` (each pool's hardware defaults
    plus the overrides), ``usd_per_gpu_hour`` where it applies, else the ownership cost of the pool's hardware
    on its documented defaults; hardware without those is a :class:`ScenarioError` naming the price that no longer
    applies (a price is never taken from another chip)."""
    return pool_prices(scn, hardware_entries(priced_chips(scn)))


def priced_chips(scn: Scenario) -> tuple[str, ...]:
    """The accelerator names a scenario's prices read: each pool's hardware, the chips its prices were set for
    (``economics.priced_for``) and those it prices (``economics.hardware_prices``)."""
    econ = scn.economics
    set_for = () if econ.priced_for is None else (econ.priced_for.trainer, econ.priced_for.generator)
    return (scn.trainer.hardware, scn.generator.hardware,
            *(n for n in set_for if n is not None), *(econ.hardware_prices or {}))


def pool_prices(scn: Scenario, chips: Mapping[str, Accelerator | KeyError]) -> tuple[PoolPrice, PoolPrice]:
    """:func:`pool_pricing` on names already looked up: ``chips`` maps each of :func:`priced_chips` to its catalog
    entry or the catalog's error (:func:`~tcocalc.catalog.accelerators.hardware_entries`), as
    :func:`~tcocalc.rl.cluster.resolve` holds them."""
    return _pool_price(scn, "trainer", chips), _pool_price(scn, "generator", chips)


def pricing_text(prices: Sequence[PoolPrice]) -> str:
    """Each paid pool's price and why in one line (``report.diagnosis.pricing``), pools priced alike said once:
    "trainer and generator H200-SXM at 1.59 USD/GPU-h, the scenario's price (...)"."""
    said: dict[str, list[str]] = {}
    for p in prices:
        said.setdefault(p.text.removeprefix(f"{p.side} "), []).append(p.side)
    return "; ".join(f"{' and '.join(sides)} {text}" for text, sides in said.items())


def _scenario_cost_inputs(scn: Scenario, side: str, chips: Mapping[str, Accelerator | KeyError]) -> CostInputs:
    acc = chips[getattr(scn, side).hardware]
    if isinstance(acc, KeyError):  # UnknownEntryError naming the closest entries
        raise acc
    try:
        return _default_cost_inputs(acc, scn.economics.cost_inputs)
    except ScenarioError as exc:
        raise ScenarioError(f"economics.cost_inputs.{exc.field}", exc.message) from None
    except TypeError as exc:
        raise ScenarioError("economics.cost_inputs", str(exc)) from None
    except MissingSpecError as exc:  # named: the key that asked for them and the pool whose hardware has none
        raise MissingSpecError(f"economics.cost_inputs ({side} pool): {exc}") from None


def paid_pools(scn: Scenario, n_t, n_g) -> list[tuple[str, object]]:
    """The pools the run pays for, ``(side, GPUs)``: the trainer's, and the generator's unless the mode shares one
    pool (colocated: ``MODES[mode].pools == 1``, :mod:`tcocalc.modes`). The one home of "colocated pays one
    pool": :func:`gpus_paid`, :func:`cluster_usd_per_hour` and :func:`cost_lines` read it."""
    pools = [("trainer", n_t)]
    if scn.orchestration.traits.pools > 1:
        pools.append(("generator", n_g))
    return pools


def gpus_paid(scn: Scenario, n_t, n_g):
    """GPUs the run pays for: one shared pool when colocated, both pools otherwise [GPU]."""
    pools = paid_pools(scn, n_t, n_g)
    return pools[0][1] if len(pools) == 1 else pools[0][1] + pools[1][1]


def cluster_usd_per_hour(scn: Scenario, n_t, n_g, cpu_cores, prices: tuple[float, float]):
    """Cluster cost per hour [USD/h]: each pool's GPUs at its price, ``prices`` ($/GPU-hour trainer, generator:
    ``cluster.prices``, :func:`pool_pricing` resolved once), one pool when colocated, plus the sandbox CPU cores
    (docs/rl-modeling.md §8)."""
    price = dict(zip(("trainer", "generator"), prices, strict=True))
    pools = paid_pools(scn, n_t, n_g)
    gpu_usd_h = pools[0][1] * price["trainer"]
    if len(pools) > 1:
        gpu_usd_h = gpu_usd_h + pools[1][1] * price["generator"]
    return gpu_usd_h + cpu_cores * scn.economics.usd_per_cpu_core_hour


def cost_lines(scn: Scenario, trainer_gpus: float, generator_gpus: float, sandbox_cpu_cores: float,
               prices: tuple[PoolPrice, PoolPrice] | None = None):
    """Hourly cost lines of a split (GPUs per pool, or each pool's capex/opex lines under
    ``[economics.cost_inputs]``, and sandbox CPUs) as a DataFrame with units in the headers [USD/h]; ``prices``
    the pools' (``report.cluster.prices``), by default :func:`pool_pricing` of ``scn``."""
    import pandas as pd

    econ = scn.economics
    pools = paid_pools(scn, trainer_gpus, generator_gpus)
    rows = []
    chips = hardware_entries(priced_chips(scn))
    for (side, n), price in zip(pools, pool_prices(scn, chips) if prices is None else prices, strict=False):
        if price.basis == "cost inputs":
            for (group, line), v in gpu_hour_cost(_scenario_cost_inputs(scn, side, chips)).lines.items():
                rows.append({"line": f"{side} {group}: {line}", "quantity": n, "unit": "GPU",
                             "price [USD/unit-h]": v, "cost [USD/h]": v * n})
        else:
            rows.append({"line": f"{side} GPUs ({price.hardware}, {price.basis})", "quantity": n, "unit": "GPU",
                         "price [USD/unit-h]": price.usd_per_gpu_hour, "cost [USD/h]": n * price.usd_per_gpu_hour})
    rows.append({"line": "sandbox CPU cores", "quantity": sandbox_cpu_cores, "unit": "core",
                 "price [USD/unit-h]": econ.usd_per_cpu_core_hour,
                 "cost [USD/h]": sandbox_cpu_cores * econ.usd_per_cpu_core_hour})
    return pd.DataFrame(rows)
