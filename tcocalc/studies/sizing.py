"""Size the cluster for a target: hardware per pool, GPUs per pool, mode, staleness bound and supply (issue 15).

The inverse of :func:`~tcocalc.rl.solve.solve_split`: given a scenario's workload and a target (useful
samples/s, run hours for the scenario's steps, or a run budget in USD), every combination of the discrete
choices is evaluated exactly — trainer accelerator x generator accelerator x mode x staleness bound x supply —
and, for each, GPU counts per pool on a half-octave ladder in steps of the granularity (``g·{1, 2, 3, 4, 6, 8,
11, 16, ...}`` per pool, both pools together at most ``max_gpus``), all at once through the staged model
(:func:`~tcocalc.rl.pipeline.phase_results`, vectorised over splits). Memory minimums prune early: counts where a
pool cannot hold the model (found once per hardware pair) are not evaluated in any mode.

Supply only changes the price, so it is applied after the model: ``own`` prices each pool at the ownership
engine's $/GPU-h (:func:`~tcocalc.economics.tco.gpu_hour_cost` on the accelerator's documented defaults,
docs/rl-modeling.md §8), and each provider of ``data/cloud_prices.csv`` that lists both pools' accelerators
at its on-demand price times the ClusterMAX goodput factor of its tier
(:data:`~tcocalc.economics.tco.GOODPUT_FACTOR`: a 1.10x effective-cost cluster needs 10% more GPU-hours).
Sandbox CPU cost is kept from the scenario. The cost of a run is ``usd_per_hour x run_hours``.

Tinker, where its list has the model, is the third supply: it bills per token (the same token mix as
:func:`~tcocalc.rl.report.tinker_usd_per_mtok`, discarded sampling paid), so its run costs the list price times
the run's trained tokens and meets a budget target if that fits; its run time is not published, so it stands
beside the GPU plans (:attr:`SizingResult.tinker`), not on the cost-vs-time front.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field, fields

import numpy as np

from ..catalog.accelerators import hardware
from ..display import format_value
from ..economics.tco import (
    GOODPUT_FACTOR,
    amortisation_text,
    cloud_prices,
    default_cost_inputs,
    gpu_hour_cost,
)
from ..errors import MissingSpecError, ScenarioError, TcocalcError
from ..modes import MODES
from ..rl.advice import calibration_line
from ..rl.cluster import plan_prices, resolve
from ..rl.phases import phase_list, workload_stats
from ..rl.pipeline import phase_results, same_flow
from ..rl.report import METRIC_UNITS, combine_phases, tinker_usd_per_mtok
from ..rl.solve import calibration_status, evaluate, trust_of
from ..scenario import Scenario
from ..workbook import label

__all__ = ["SizingOptions", "SizingResult", "size_cluster", "SIZING_TARGETS", "SIZING_MODES", "gpu_ladder",
           "supply_prices", "own_prices", "DEFAULT_STALENESS_BOUNDS"]

#: The targets :func:`size_cluster` accepts (exactly one): a pace, a deadline, or a budget.
SIZING_TARGETS = ("useful_samples_per_s", "run_hours", "budget_usd")
#: The staleness bounds searched besides the scenario's own (``SizingOptions.staleness_bounds = None``).
DEFAULT_STALENESS_BOUNDS = (1.0, 2.0, 4.0)
#: Two-pool modes the search covers (colocated has one pool: use solve_split).
SIZING_MODES = ("sync", "one_step_off", "periodic", "async", "inflight")


@dataclass(frozen=True)
class SizingOptions:
    """What the search may choose (``None``: the scenario's own hardware; the default bounds and the scenario's own;
    every supply)."""

    trainer_hardware: tuple[str, ...] | None = None
    generator_hardware: tuple[str, ...] | None = None
    granularity: int = 8                 # GPUs per step of a pool: 8 per node, 72 per NVL72 rack
    max_gpus: int = 4096                 # both pools together
    modes: tuple[str, ...] = SIZING_MODES
    staleness_bounds: tuple[float, ...] | None = None  # async, inflight: max_staleness values (None: 1, 2, 4 and
    #                                                    the scenario's own orchestration.max_staleness)
    supplies: tuple[str, ...] | None = None  # "own" and/or provider names of data/cloud_prices.csv


@dataclass(frozen=True)
class SizingResult:
    """Every feasible candidate (``candidates``: meeting the target first, best first), the Pareto front of
    run cost against run time (``pareto``), the best plan meeting the target (``best``, None when none does)
    and a one-paragraph ``message`` (what was found, or what limited the closest candidate, and whether the figures
    are calibrated). ``calibration`` and ``trust`` are ``report.diagnosis``'s, as mappings, for the scenario: the
    run calibration and where it came from, the typical error of the figures; a candidate's ``calibrated`` column
    says whether the measured run's factors carry over to its hardware."""

    target: tuple[str, float]
    candidates: object   # pandas.DataFrame
    pareto: object       # pandas.DataFrame
    best: dict | None
    message: str
    options: SizingOptions = field(default_factory=SizingOptions)
    tinker: dict | None = None  # the run on Tinker: usd_per_mtok, trained_mtok, run_usd, meets_target; None: not listed
    calibration: dict = field(default_factory=dict)  # the run calibration on the scenario's hardware (as evaluate's)
    trust: dict = field(default_factory=dict)  # the typical error of its figures (report.diagnosis.trust)

    @property
    def met(self) -> bool:
        return self.best is not None

    def _repr_html_(self) -> str:
        from ..display import metrics_card, table_html

        units = {**{k: u for k, (u, _) in METRIC_UNITS.items()}, **_CANDIDATE_UNITS}
        shown = [c for c in _CANDIDATE_UNITS if c in self.candidates.columns] if len(self.candidates) else []
        top = self.candidates[shown].head(5)
        extra = table_html([[format_value(v, units.get(c, "")) for c, v in row.items()] for _, row in top.iterrows()],
                           tuple(label(c, units.get(c)) for c in shown)) if shown else ""
        name, value = self.target
        return metrics_card(f"Sizing: {name} {format_value(value)}", self.best or {}, units,
                            subtitle=f"{'met' if self.met else 'not met'}; {len(self.candidates):,} candidates; "
                                     f"{'calibrated' if self.calibration.get('calibrated') else 'uncalibrated'}",
                            highlight=self.message, extra_html=extra)

    def scenario_for(self, scenario: Scenario, row: int = 0) -> Scenario:
        """The scenario with candidate ``row``'s hardware, GPUs, mode and bound, and a provider's prices when it
        is rented (for "open in Plan"): :func:`~tcocalc.evaluate` of it gives the row's figures."""
        return _plan_of(scenario, self.candidates.iloc[row])


#: Units of the candidate table's own columns (the others are contract metrics), for displays and exports.
_CANDIDATE_UNITS = {"trainer_hardware": "", "trainer_gpus": "GPU", "generator_hardware": "", "generator_gpus": "GPU",
                    "mode": "", "same_as_modes": "", "staleness_bound_steps": "step", "supply": "",
                    "trainer_usd_per_gpu_hour": "USD/GPU-h", "generator_usd_per_gpu_hour": "USD/GPU-h",
                    "useful_samples_per_s": "sample/s", "run_hours": "h", "run_usd": "USD",
                    "usd_per_useful_sample": "USD/sample", "total_gpus": "GPU"}


def gpu_ladder(granularity: int, max_gpus: int) -> np.ndarray:
    """GPU counts of one pool: the granularity times ``round(2^(k/2))`` (half-octave steps), up to
    ``max_gpus − granularity`` (the other pool needs at least one step), that top included."""
    top = max_gpus // granularity - 1
    if top < 1:
        raise ScenarioError("options.max_gpus", f"must allow two pools of at least {granularity} GPUs "
                                                f"(options.granularity); got {max_gpus}")
    units = np.unique(np.round(np.exp2(np.arange(0, 2 * math.log2(top) + 1.0) / 2.0)).astype(int))
    return granularity * np.union1d(units[units <= top], [top])


def _price_table(supplies: tuple[str, ...] | None, accelerators) -> dict[str, dict[str, float]]:
    """supply -> {accelerator: effective $/GPU-h}: ``own`` from the ownership engine (accelerators with cost
    defaults), each provider's on-demand price x the goodput factor of its tier."""
    table: dict[str, dict[str, float]] = {}
    if supplies is None or "own" in supplies:
        own = {}
        for acc in accelerators:
            try:
                own[acc] = gpu_hour_cost(default_cost_inputs(acc)).usd_per_gpu_hour
            except MissingSpecError:
                continue
        table["own"] = own
    df = cloud_prices()
    for provider, acc, price, tier in zip(df["provider"], df["accelerator"], df["usd_per_gpu_hour"], df["tier"],
                                          strict=True):
        if supplies is None or provider in supplies:
            table.setdefault(str(provider), {})[acc] = float(price) * GOODPUT_FACTOR.get(tier, 1.0)
    return table


def supply_prices(hw_t: str, hw_g: str, supplies: tuple[str, ...] | None, table: dict | None = None,
                  scenario: Scenario | None = None) -> list[tuple[str, float, float]]:
    """(supply, trainer $/GPU-h, generator $/GPU-h) for each supply that offers both accelerators: ``own``
    and each provider (price x goodput factor of its tier), ``own`` first then providers by name.

    ``own`` without a ``scenario`` is the ownership engine on each accelerator's cost defaults; with one, it is
    what the scenario pays for that hardware (:func:`own_prices`), so that a plan costs in the sizer what it
    costs in :func:`~tcocalc.evaluate` (one price per plan)."""
    table = _price_table(supplies, {hw_t, hw_g}) if table is None else table
    names = sorted(table, key=lambda k: (k != "own", k))
    found = [(k, table[k][hw_t], table[k][hw_g]) for k in names if hw_t in table[k] and hw_g in table[k]]
    if scenario is None or (supplies is not None and "own" not in supplies):
        return found
    own = own_prices(scenario, hw_t, hw_g)
    return ([("own", *own)] if own is not None else []) + [row for row in found if row[0] != "own"]


def own_prices(scn: Scenario, hw_t: str, hw_g: str) -> tuple[float, float] | None:
    """(trainer, generator) $/GPU-h the scenario pays on these accelerators (:func:`~tcocalc.economics.tco.
    pool_pricing` of the scenario moved to them: its price where it was set for that hardware, your price for
    the accelerator, else its ownership cost); None where a pool has no price (no cost defaults)."""
    try:
        return tuple(p.usd_per_gpu_hour for p in plan_prices(_on_hardware(scn, hw_t, hw_g)))
    except ScenarioError:
        return None


def _on_hardware(scn: Scenario, hw_t: str, hw_g: str) -> Scenario:
    """The scenario moved to these accelerators as two pools (its prices and measured MFU follow the hardware)."""
    values = {"trainer.hardware": hw_t, "generator.hardware": hw_g}
    if scn.orchestration.traits.shared_pool:
        values["orchestration.mode"] = SIZING_MODES[-1]
    return scn.with_values(values)


def _check_options(scn: Scenario, options: SizingOptions | dict | None) -> SizingOptions:
    if options is None:
        options = SizingOptions()
    elif isinstance(options, dict):
        known = {f.name for f in fields(SizingOptions)}
        bad = sorted(set(options) - known)
        if bad:
            raise ScenarioError(f"options.{bad[0]}", f"unknown option; known: {', '.join(sorted(known))}")
        options = SizingOptions(**{k: tuple(v) if isinstance(v, list) else v for k, v in options.items()})
    hw = {}
    for side in ("trainer", "generator"):
        names = getattr(options, f"{side}_hardware")
        names = (getattr(scn, side).hardware,) if names is None else tuple(names)
        if not names:
            raise ScenarioError(f"options.{side}_hardware", "is empty: give at least one accelerator")
        try:
            hw[side] = tuple(dict.fromkeys(hardware(n).name for n in names))
        except TcocalcError as exc:
            raise ScenarioError(f"options.{side}_hardware", str(exc)) from None
    bounds = options.staleness_bounds
    if bounds is None:
        bounds = (*DEFAULT_STALENESS_BOUNDS, scn.orchestration.max_staleness)
        options = SizingOptions(**{**{f.name: getattr(options, f.name) for f in fields(SizingOptions)},
                                   "staleness_bounds": bounds})
    for name in ("modes", "staleness_bounds"):
        if not tuple(getattr(options, name)):
            raise ScenarioError(f"options.{name}", "is empty: give at least one")
    bad_modes = [m for m in options.modes if MODES.get(m) is None or MODES[m].shared_pool]
    if bad_modes:
        raise ScenarioError("options.modes", f"unknown or unsupported mode {bad_modes[0]!r}; choose from "
                                             f"{', '.join(SIZING_MODES)} (colocated: use solve_split)")
    if any(not (isinstance(b, int | float) and math.isfinite(b) and b >= 0) for b in options.staleness_bounds):
        raise ScenarioError("options.staleness_bounds", "must be finite numbers >= 0")
    if not isinstance(options.granularity, int) or options.granularity < 1:
        raise ScenarioError("options.granularity", f"must be an integer >= 1, got {options.granularity!r}")
    if not isinstance(options.max_gpus, int) or options.max_gpus < 2 * options.granularity:
        raise ScenarioError("options.max_gpus", f"must be an integer >= 2 x granularity "
                                                f"({2 * options.granularity}), got {options.max_gpus!r}")
    if options.supplies is not None:
        sup = tuple(options.supplies)
        if not sup:
            raise ScenarioError("options.supplies", "is empty: give 'own' and/or provider names")
        known = {"own", *cloud_prices()["provider"].unique().tolist()}
        bad = [s for s in sup if s not in known]
        if bad:
            raise ScenarioError("options.supplies", f"unknown supply {bad[0]!r}; known: {', '.join(sorted(known))}")
    return SizingOptions(trainer_hardware=hw["trainer"], generator_hardware=hw["generator"],
                         granularity=options.granularity, max_gpus=options.max_gpus,
                         modes=tuple(dict.fromkeys(options.modes)),
                         staleness_bounds=tuple(sorted({float(b) for b in options.staleness_bounds})),
                         supplies=None if options.supplies is None else tuple(options.supplies))


def _target_text(kind: str, value: float) -> str:
    """A target in words: "a pace of 2 useful samples/s", "a run time of 48 h", "a budget of $5,000"."""
    if kind == "useful_samples_per_s":
        return f"a pace of {format_value(value)} useful samples/s"
    if kind == "run_hours":
        return f"a run time of {format_value(value)} h"
    return f"a budget of ${format_value(value)}"


def _check_target(target) -> tuple[str, float]:
    if not isinstance(target, dict) or len(target) != 1:
        raise ScenarioError("target", f"give exactly one of {', '.join(SIZING_TARGETS)}, e.g. "
                                      f"{{'useful_samples_per_s': 2.0}}")
    (kind, value), = target.items()
    if kind not in SIZING_TARGETS:
        raise ScenarioError("target", f"unknown target {kind!r}; one of {', '.join(SIZING_TARGETS)}")
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value) or value <= 0:
        raise ScenarioError(f"target.{kind}", f"must be a finite number > 0, got {value!r}")
    return kind, float(value)


def _plans(opt: SizingOptions) -> list[tuple[str, float]]:
    """The (mode, staleness bound) evaluated for each hardware pair: every bound of a streaming mode, the fixed lag
    of the others."""
    return [(mode, bound) for mode in opt.modes
            for bound in (opt.staleness_bounds if MODES[mode].streaming else (MODES[mode].fixed_lag,))]


def _evaluate_pair(scn: Scenario, hw_t: str, hw_g: str, opt: SizingOptions, n_t, n_g, calibration=None,
                   tick=None) -> list[dict]:
    """Every mode and bound for one hardware pair over the splits; memory-infeasible splits pruned after the
    first evaluation. Returns one block of arrays per (mode, bound); ``tick()`` after each (mode, bound). Plans
    whose pool rates and flows are the same (:func:`~tcocalc.rl.pipeline.same_flow`: async and inflight at one
    bound without partial rollout) compute them once; the stages after the flow run for each."""
    blocks = []
    keep = None
    plans = _plans(opt)
    done: list[tuple[Scenario, object, dict]] = []  # (plan, its cluster, its rates and flows) evaluated so far
    for j, (mode, bound) in enumerate(plans):
        streaming = MODES[mode].streaming
        # the physics of the plan; its price is the supply's (the CPU cost is what is left of the cluster's)
        values = {"trainer.hardware": hw_t, "generator.hardware": hw_g, "orchestration.mode": mode,
                  "trainer.gpus": int(n_t[0]), "generator.gpus": int(n_g[0]), "economics.priced_for": None}
        if streaming:
            values["orchestration.max_staleness"] = bound
        s = scn.with_values(values)
        cluster = resolve(s, calibration)
        flows = next((f for d, c, f in done if same_flow(d, c, s, cluster)), None)
        if flows is None:
            flows = {}
            done.append((s, cluster, flows))
        if keep is None:
            res = phase_results(s, cluster, n_t, n_g, flows)
            keep = np.logical_and.reduce([r.feasible for r in res])
            if not keep.any():
                for _ in plans[j:] if tick is not None else ():
                    tick()
                return []
            n_t, n_g = n_t[keep], n_g[keep]
            if not keep.all():
                res = phase_results(s, cluster, n_t, n_g, flows)
        else:
            res = phase_results(s, cluster, n_t, n_g, flows)
        c = combine_phases(s, [(r.workload, r.metrics) for r in res])
        p_t, p_g = (p.usd_per_gpu_hour for p in cluster.prices)
        blocks.append({"mode": mode, "bound": bound, "n_t": n_t, "n_g": n_g,
                       "useful": np.asarray(c["useful_samples_per_s"], float) * np.ones(n_t.shape),
                       "hours": np.asarray(c["run_hours"], float) * np.ones(n_t.shape),
                       "cpu_usd_h": np.asarray(c["usd_per_hour"], float) - (n_t * p_t + n_g * p_g),
                       "idle": np.asarray(c["trainer_idle_fraction"], float) * np.ones(n_t.shape),
                       "stale": np.asarray(c["mean_staleness_steps"], float) * np.ones(n_t.shape),
                       "calibrated": cluster.run.calibrated,
                       "dropped": ", ".join(name for name, _ in cluster.run.dropped)})
        if tick is not None:
            tick()
    return blocks


class _Progress:
    """``progress(done, total)`` over the search's evaluations (each hardware pair's modes and bounds), called at
    the start and after each one; nothing when ``progress`` is None."""

    def __init__(self, progress, total: int):
        self.progress, self.done, self.total = progress, 0, total
        if progress is not None:
            progress(0, total)

    def tick(self) -> None:
        self.done += 1
        if self.progress is not None:
            self.progress(self.done, self.total)


def _frame(scn: Scenario, opt: SizingOptions, kind: str, calibration=None, progress=None):
    """Every candidate as a DataFrame (finite rows only); ``progress`` as :func:`size_cluster`'s."""
    import pandas as pd

    ladder = gpu_ladder(opt.granularity, opt.max_gpus)
    n_t, n_g = (a.ravel() for a in np.meshgrid(ladder, ladder, indexing="ij"))
    within = n_t + n_g <= opt.max_gpus
    n_t, n_g = n_t[within], n_g[within]
    cols: dict[str, list] = {k: [] for k in ("trainer_hardware", "generator_hardware", "trainer_gpus",
                                             "generator_gpus", "mode", "staleness_bound_steps", "supply",
                                             "trainer_usd_per_gpu_hour", "generator_usd_per_gpu_hour",
                                             "useful_samples_per_s", "run_hours", "usd_per_hour",
                                             "trainer_idle_fraction", "mean_staleness_steps", "calibrated",
                                             "calibration_dropped")}
    table = _price_table(opt.supplies, set(opt.trainer_hardware) | set(opt.generator_hardware))
    plans = len(_plans(opt))
    bar = _Progress(progress, len(opt.trainer_hardware) * len(opt.generator_hardware) * plans)
    for hw_t in opt.trainer_hardware:
        for hw_g in opt.generator_hardware:
            supplies = supply_prices(hw_t, hw_g, opt.supplies, table, scenario=scn)
            if not supplies:
                for _ in range(plans):
                    bar.tick()
                continue
            for b in _evaluate_pair(scn, hw_t, hw_g, opt, n_t.copy(), n_g.copy(), calibration, bar.tick):
                m = b["n_t"].size
                for supply, p_t, p_g in supplies:
                    cols["trainer_hardware"].append(np.full(m, hw_t, dtype=object))
                    cols["generator_hardware"].append(np.full(m, hw_g, dtype=object))
                    cols["trainer_gpus"].append(b["n_t"])
                    cols["generator_gpus"].append(b["n_g"])
                    cols["mode"].append(np.full(m, b["mode"], dtype=object))
                    cols["staleness_bound_steps"].append(np.full(m, b["bound"]))
                    cols["supply"].append(np.full(m, supply, dtype=object))
                    cols["trainer_usd_per_gpu_hour"].append(np.full(m, p_t))
                    cols["generator_usd_per_gpu_hour"].append(np.full(m, p_g))
                    cols["useful_samples_per_s"].append(b["useful"])
                    cols["run_hours"].append(b["hours"])
                    cols["usd_per_hour"].append(b["n_t"] * p_t + b["n_g"] * p_g + b["cpu_usd_h"])
                    cols["trainer_idle_fraction"].append(b["idle"])
                    cols["mean_staleness_steps"].append(b["stale"])
                    cols["calibrated"].append(np.full(m, b["calibrated"], dtype=bool))
                    cols["calibration_dropped"].append(np.full(m, b["dropped"], dtype=object))
    if not cols["mode"]:
        return pd.DataFrame({k: [] for k in cols})
    df = pd.DataFrame({k: np.concatenate(v) for k, v in cols.items()})
    df["total_gpus"] = df["trainer_gpus"] + df["generator_gpus"]
    df["run_usd"] = df["usd_per_hour"] * df["run_hours"]
    df["usd_per_useful_sample"] = df["usd_per_hour"] / 3600.0 / df["useful_samples_per_s"].where(
        df["useful_samples_per_s"] > 0)
    finite = np.isfinite(df[["run_hours", "run_usd", "usd_per_useful_sample"]].to_numpy(float)).all(axis=1)
    return df[finite].reset_index(drop=True)


def _meets(df, kind: str, value: float):
    col = {"useful_samples_per_s": "useful_samples_per_s", "run_hours": "run_hours", "budget_usd": "run_usd"}[kind]
    return df[col] >= value * (1 - 1e-9) if kind == "useful_samples_per_s" else df[col] <= value * (1 + 1e-9)


def pareto_front(df):
    """Candidates no other beats on both run cost and run time (cheapest first)."""
    order = df.take(np.lexsort((df["run_hours"].to_numpy(float), df["run_usd"].to_numpy(float))))
    best_h = np.minimum.accumulate(order["run_hours"].to_numpy())
    prev = np.concatenate([[np.inf], best_h[:-1]])
    return order[order["run_hours"].to_numpy() < prev].reset_index(drop=True)


def _plan_line(r) -> str:
    bound = f", max_staleness {r['staleness_bound_steps']:g}" if MODES[r["mode"]].streaming else ""
    same = f" (the same as {r['same_as_modes']})" if r.get("same_as_modes") else ""
    return (f"{int(r['trainer_gpus'])} {r['trainer_hardware']} trainer + {int(r['generator_gpus'])} "
            f"{r['generator_hardware']} generator, {r['mode']}{same}{bound}, {r['supply']}: "
            f"{r['useful_samples_per_s']:.3g} useful samples/s, {r['run_hours']:,.1f} h, ${r['run_usd']:,.0f} "
            f"(${r['usd_per_hour']:,.0f}/h)")


def _merged(df):
    """Plans that differ only in their mode and give the same figures in every column (async and inflight often
    do) as one row: the first mode in :data:`SIZING_MODES` order in ``mode``, the others in ``same_as_modes``
    (comma-separated; empty when none). Rows keep their order; the work is on index arrays, the frame is taken
    once."""
    import pandas as pd

    if df.empty:
        return df.assign(same_as_modes=[])
    codes, names = pd.factorize(df["mode"])
    rank = np.array([SIZING_MODES.index(m) for m in names])[codes]
    order = np.argsort(rank, kind="stable")  # by mode rank, then row
    gid = _row_groups(df, [c for c in df.columns if c != "mode"])[order]
    first = ~pd.Series(gid).duplicated().to_numpy()
    same = [""] * (int(gid.max()) + 1)
    modes = np.asarray(names, dtype=object)[codes[order]]
    for g, mode in zip(gid[~first].tolist(), modes[~first].tolist(), strict=True):
        same[g] = f"{same[g]}, {mode}" if same[g] else mode  # a Python loop over the merged rows only
    out = df.iloc[np.sort(order[first])].reset_index(drop=True)
    out["same_as_modes"] = _first_modes(order[first], gid[first], same)
    return out


def _first_modes(rows: np.ndarray, groups: np.ndarray, same: list[str]) -> list[str]:
    """``same[group]`` of each kept row, in row order (``rows`` and ``groups`` paired, in mode-rank order)."""
    return [same[g] for g in groups[np.argsort(rows, kind="stable")].tolist()]


def _row_groups(df, columns: list[str]) -> np.ndarray:
    """A group number per row: rows equal in every one of ``columns`` (NaN equal to NaN) share it. Each column's
    values are numbered (pandas.factorize) and the numbers folded into one mixed-radix key, renumbered only when
    the next fold could overflow: exact equality, a fraction of a groupby over the columns."""
    import pandas as pd

    key, radix = np.zeros(len(df), dtype=np.int64), 1
    for c in columns:
        codes, uniques = pd.factorize(df[c], use_na_sentinel=False)
        base = len(uniques) + 1
        if radix * base >= 2 ** 62:
            key, firsts = pd.factorize(key)
            radix = len(firsts) + 1
        key = key * base + codes
        radix *= base
    return pd.factorize(key)[0]


def _plan_of(scn: Scenario, r) -> Scenario:
    """The scenario of candidate ``r`` (as :meth:`SizingResult.scenario_for`)."""
    plan = scn.with_cluster(mode=r["mode"], trainer_hardware=r["trainer_hardware"], trainer_gpus=int(r["trainer_gpus"]),
                            generator_hardware=r["generator_hardware"], generator_gpus=int(r["generator_gpus"]))
    values = {}
    if MODES[r["mode"]].streaming:
        values["orchestration.max_staleness"] = float(r["staleness_bound_steps"])
    if r["supply"] != "own":  # a provider's prices, pinned to this hardware (own: the scenario's already)
        values.update({"economics.trainer_usd_per_gpu_hour": float(r["trainer_usd_per_gpu_hour"]),
                       "economics.generator_usd_per_gpu_hour": float(r["generator_usd_per_gpu_hour"])})
    return plan.with_values(values) if values else plan


def _blocked(r, pool: str, opt: SizingOptions) -> str:
    """", the GPU limit ... stops the <pool> pool at N" when its next step would exceed ``options.max_gpus``."""
    ladder = gpu_ladder(opt.granularity, opt.max_gpus)
    n, other = int(r[f"{pool}_gpus"]), int(r["total_gpus"] - r[f"{pool}_gpus"])
    bigger = ladder[ladder > n]
    if bigger.size and bigger[0] + other <= opt.max_gpus:
        return ""
    return f"; the GPU limit (options.max_gpus = {opt.max_gpus:,}) stops the {pool} pool at {n:,} GPUs"


def _binding_words(scn: Scenario, df, r, opt: SizingOptions, calibration=None) -> str:
    """What holds the closest candidate's throughput, from its own evaluation's binding limits
    (:func:`~tcocalc.rl.diagnosis.binding_limits`): the staleness bound, generation, the trainer or the sandboxes."""
    try:
        limits = evaluate(_plan_of(scn, r), advice=False, calibration=calibration).diagnosis.binding_limits
    except TcocalcError:
        limits = {}
    kinds = list(dict.fromkeys(k for phase in limits.values() for k in phase))
    plan = ["trainer_hardware", "generator_hardware", "mode", "staleness_bound_steps", "generator_gpus", "supply"]
    same = df[df[plan].eq(r[plan]).all(axis=1)  # the same plan but for the trainer's GPUs
              & np.isclose(df["useful_samples_per_s"], r["useful_samples_per_s"], rtol=1e-9, atol=0)]
    counts = sorted(int(n) for n in same["trainer_gpus"])
    flat = (f"{', '.join(f'{n:,}' for n in counts[:-1])} and {counts[-1]:,} trainer GPUs with "
            f"{int(r['generator_gpus']):,} generator GPUs give the same {r['useful_samples_per_s']:.3g} useful "
            f"samples/s, so more trainer GPUs do not raise it") if len(counts) > 1 else ""
    words = []
    for kind in kinds:
        if kind == "staleness":
            words.append(f"the staleness bound (max_staleness {r['staleness_bound_steps']:g}) binds: the generator "
                         f"may run only that many policy versions ahead and each batch's longest rollout must finish "
                         f"within the window; " + (flat + "; " if flat else "") + "a looser bound raises it (what "
                         "staleness costs in learning is not modelled)" + _blocked(r, "generator", opt))
        elif kind == "generator":
            words.append("generation binds: the generator delivers less than the trainer could take"
                         + (f" ({flat})" if flat else "") + _blocked(r, "generator", opt))
        elif kind == "trainer":
            words.append("the trainer binds: its scaling flattens (data parallel and communication limits)"
                         + _blocked(r, "trainer", opt))
        elif kind == "sandbox_start":
            words.append("the sandbox start rate binds (sandbox.max_starting and the start time): more GPUs do not "
                         "help")
        elif kind == "sandbox_concurrency":
            words.append("sandbox concurrency binds (sandbox.max_concurrency): more GPUs do not help")
    if not words:
        return ("more GPUs do not help: " + flat) if flat else f"the GPU limit (options.max_gpus = {opt.max_gpus:,})"
    return "; ".join(words)


def _limit_reason(scn: Scenario, df, kind: str, opt: SizingOptions, calibration=None) -> tuple[object, str]:
    """The candidate closest to the target and what limited it."""
    if kind == "budget_usd":
        r = df.loc[df["run_usd"].idxmin()]
        return r, (f"the cheapest plan found costs ${r['run_usd']:,.0f}; fewer GPUs hold the model too "
                   f"slowly or not at all, and cheaper supply is not in the options")
    r = df.loc[df["useful_samples_per_s"].idxmax()]
    return r, _binding_words(scn, df, r, opt, calibration)


def _bound_note(df, kind: str, met: bool) -> str:
    """When the staleness bound drives the answer: the best plan at each bound searched, as a multiple of the
    best overall (cost when the target is met, else the closest figure); and that staleness's cost to learning is
    not modelled. Empty when every bound gives within 10% of the best."""
    if met:
        col, better_low = ("run_hours", True) if kind == "budget_usd" else ("run_usd", True)
        pool = df[df["meets_target"]]
    else:
        col, better_low = ({"useful_samples_per_s": ("useful_samples_per_s", False), "run_hours": ("run_hours", True),
                            "budget_usd": ("run_usd", True)}[kind])
        pool = df
    best_by = pool.groupby("staleness_bound_steps")[col].agg("min" if better_low else "max")
    searched = sorted(df["staleness_bound_steps"].unique())
    if len(searched) < 2:
        return ""
    top = best_by.min() if better_low else best_by.max()
    top_bound = float(best_by.idxmin() if better_low else best_by.idxmax())
    parts = []
    for b in searched:
        if b == top_bound:
            continue
        if b not in best_by.index:
            parts.append(f"none meets it at a bound of {b:g}")
            continue
        ratio = best_by[b] / top if better_low else top / best_by[b]
        if ratio >= 1.1:
            what = {"run_usd": f"the cheapest plan costs {ratio:.2f}x as much",
                    "run_hours": f"the fastest plan takes {ratio:.2f}x as long",
                    "useful_samples_per_s": f"the fastest plan delivers {1 / ratio:.2f}x the useful samples/s"}[col]
            parts.append(f"at a bound of {b:g} {what}")
    if not parts:
        return ""
    return (f" The staleness bound drives this answer (best at max_staleness {top_bound:g}; sync modes count as 0): "
            + "; ".join(parts) + ". What staleness costs in learning (slower or less stable progress per step at a "
            "larger policy lag) is not modelled: allow only the bounds your algorithm tolerates.")


def _own_note(scn: Scenario, df, r, met: bool) -> str:
    """How ``own`` is priced for plan ``r`` (the scenario's price, or the ownership cost and its amortisation), and
    the best plan of the other kind of supply beside it (rented beside owned, owned beside rented)."""
    note = ""
    if r["supply"] == "own":
        try:
            prices = [p for p in plan_prices(_plan_of(scn, r))
                      if p.side == "trainer" or not MODES[r["mode"]].shared_pool]
        except TcocalcError:
            prices = []
        said = []
        for p in prices:
            if p.basis in ("ownership cost", "cost inputs"):
                text = (f"{p.hardware} at its ownership cost, {p.usd_per_gpu_hour:.3g} USD/GPU-h: "
                        + (amortisation_text(p.hardware) if p.basis == "ownership cost" else "[economics.cost_inputs]")
                        + f", a price for GPUs kept busy, or paid for, over that whole life, not only for this "
                          f"{r['run_hours']:,.0f}-hour run")
            else:
                text = f"{p.hardware} at {p.usd_per_gpu_hour:.3g} USD/GPU-h, the {p.basis}"
            if text not in said:
                said.append(text)
        note = f" Own prices {'; '.join(said)}." if said else ""
    other = df[(df["supply"] != "own") if r["supply"] == "own" else (df["supply"] == "own")]
    if met:
        other = other[other["meets_target"]]
    if len(other):
        note += (f" Beside it, {'rented' if r['supply'] == 'own' else 'owned'}: {_plan_line(other.iloc[0])}.")
    return note


def tinker_run(scenario: Scenario, kind: str, value: float) -> dict | None:
    """The scenario's run on Tinker (per-token list price, phases weighted by trained tokens), or None when
    Tinker does not list the model. Meets a budget target when its cost fits; a pace or deadline cannot be
    judged (Tinker's run time is not published)."""
    parts = [workload_stats(scenario, over, name, start, n) for name, start, n, over in phase_list(scenario)]
    prices = [tinker_usd_per_mtok(scenario, ws) for ws in parts]
    if any(p is None for p in prices):
        return None
    mtok = [ws.steps * ws.samples_per_step * ws.traj_tokens / 1e6 for ws in parts]
    run_usd = sum(p * t for p, t in zip(prices, mtok, strict=True))
    return {"usd_per_mtok": run_usd / sum(mtok), "trained_mtok": sum(mtok), "run_usd": run_usd,
            "meets_target": (run_usd <= value * (1 + 1e-9)) if kind == "budget_usd" else None}


def size_cluster(scenario: Scenario, target: dict, options: SizingOptions | dict | None = None, *,
                 calibration=None, progress=None) -> SizingResult:
    """The cheapest plan meeting ``target`` (one of ``{"useful_samples_per_s": X}``, ``{"run_hours": H}`` for
    the scenario's steps, ``{"budget_usd": B}`` for the run), and every feasible candidate.

    ``candidates``: one row per hardware pair x GPUs per pool x mode x staleness bound x supply (columns
    ``trainer_hardware``, ``generator_hardware``, ``trainer_gpus``, ``generator_gpus``, ``mode``,
    ``staleness_bound_steps`` (0 sync/periodic, 1 one_step_off, max_staleness for async/inflight), ``supply``,
    ``trainer_usd_per_gpu_hour``, ``generator_usd_per_gpu_hour`` (the supply's effective prices),
    ``useful_samples_per_s``, ``run_hours``, ``run_usd``, ``usd_per_hour``, ``usd_per_useful_sample``,
    ``trainer_idle_fraction``, ``mean_staleness_steps``, ``calibrated`` (a factor of the scenario's run calibration
    applies on this hardware pair), ``calibration_dropped`` (its factors that do not carry over to this pair,
    comma-separated), ``total_gpus``, ``same_as_modes`` (other modes giving
    exactly this row, merged into it), ``meets_target``), those meeting the target first, each group best first:
    cheapest run for a pace or a deadline, fastest run for a budget (when none meets it: closest to the target
    first). ``own`` is what the scenario pays on that hardware (:func:`own_prices`). The staleness bounds default
    to :data:`DEFAULT_STALENESS_BOUNDS` and the scenario's own. The message names the plan, how ``own`` is priced
    (its amortisation where it is the ownership cost) and the best plan of the other supply, and when the staleness
    bound drives the answer, the best at each other bound (staleness's cost to learning is not modelled); with no
    plan meeting the target, the limit that binds the closest (its evaluation's binding limits).
    ``pareto``: the front of run USD against run hours. Bad options raise :class:`ScenarioError` naming the
    option; a target no candidate meets gives ``best = None``. Nothing is NaN: candidates without a finite cost
    are dropped. ``calibration``: a :class:`~tcocalc.catalog.calibration.CalibrationSet` instead of the shipped
    factors (as :func:`evaluate`).

    ``progress``, if given, is called as ``progress(done, total)`` at the start and after each of the search's
    ``total`` evaluations (one per hardware pair, mode and staleness bound; ``done == total`` when the search is
    over, before the message is written), e.g. to drive a progress bar.
    """
    kind, value = _check_target(target)
    opt = _check_options(scenario, options)
    df = _frame(scenario, opt, kind, calibration, progress)
    if df.empty:
        raise ScenarioError("options", "no candidate holds the model: every allowed hardware pair and GPU count "
                                       "is too small, or no supply offers the allowed accelerators (options."
                                       "supplies; 'own' needs cost defaults)")
    df = _merged(df)
    df["meets_target"] = _meets(df, kind, value).to_numpy()
    key = ["run_hours", "run_usd"] if kind == "budget_usd" else ["run_usd", "run_hours"]
    df = df.take(np.lexsort((df[key[1]].to_numpy(float), df[key[0]].to_numpy(float),
                             ~df["meets_target"].to_numpy(bool)))).reset_index(drop=True)
    front = pareto_front(df)
    goal_text = _target_text(kind, value)
    if bool(df["meets_target"].iloc[0]):
        best = df.iloc[0].to_dict()
        goal = "fastest" if kind == "budget_usd" else "cheapest"
        message = (f"{goal} plan for {goal_text}, of {int(df['meets_target'].sum()):,} that meet it "
                   f"({len(df):,} candidates): {_plan_line(df.iloc[0])}.")
        message += _own_note(scenario, df, df.iloc[0], True) + _bound_note(df, kind, True)
    else:
        best = None
        r, why = _limit_reason(scenario, df, kind, opt, calibration)
        closest = {"useful_samples_per_s": ("useful_samples_per_s", False), "run_hours": ("run_hours", True),
                   "budget_usd": ("run_usd", True)}[kind]
        df = df.sort_values(closest[0], ascending=closest[1], kind="stable").reset_index(drop=True)
        message = (f"no candidate meets {goal_text} within the options ({len(df):,} candidates); the closest is "
                   f"{_plan_line(r)}. What limited it: {why}.")
        message += _own_note(scenario, df, r, False) + _bound_note(df, kind, False)
    status, trusted, note = _calibration_note(scenario, df, calibration)
    message += note + _mfu_note(scenario, opt)
    tinker = tinker_run(scenario, kind, value)
    message += (" Tinker does not list this model." if tinker is None else
                f" On Tinker (our accounting: its list price for the run's token mix, discarded rollouts billed; "
                f"run time not published): ${tinker['run_usd']:,.0f} for the "
                f"run (${tinker['usd_per_mtok']:.2f}/M trained tokens).")
    return SizingResult(target=(kind, value), candidates=df, pareto=front, best=best, message=message, options=opt,
                        tinker=tinker, calibration=status, trust=trusted)


def _calibration_note(scn: Scenario, df, calibration) -> tuple[dict, dict, str]:
    """Whether the sizing is calibrated: the run calibration's status on the scenario's own hardware
    (:func:`~tcocalc.rl.solve.calibration_status`), the typical error that goes with it
    (:func:`~tcocalc.rl.solve.trust_of`) and the message's sentences, one per set of factors that do not carry over
    to some hardware pairs, naming up to :data:`PAIRS_NAMED` of them (every candidate's in its
    ``calibration_dropped`` column; the transfer rule of docs/calibration.md)."""
    run = resolve(scn, calibration).run
    status, own = calibration_status(run), trust_of(run, scn)
    text = " " + calibration_line(status, own)
    if status.source is not None:
        mine, lost = set(status.dropped), {}
        pairs = df.loc[:, ["trainer_hardware", "generator_hardware", "calibration_dropped"]].drop_duplicates()
        for t, g, dropped in pairs.itertuples(index=False):
            if dropped and set(dropped.split(", ")) != mine:
                lost.setdefault(dropped, []).append(f"{t} + {g}")
        for dropped, where in lost.items():
            named = ", ".join(where[:PAIRS_NAMED]) + (f" and {len(where) - PAIRS_NAMED} more" if len(where) >
                                                       PAIRS_NAMED else "")
            text += (f" On {named} the measured run's {dropped} factors do not carry over (column "
                     f"calibration_dropped).")
    return status.as_dict(), own.as_dict(), text


def _mfu_note(scn: Scenario, opt) -> str:
    """The sentence that says how a measured trainer MFU reached the other trainer chips (issue 39 item 1)."""
    t = scn.trainer
    if t.mfu_busy is None:
        return ""
    on = t.mfu_measured_on.hardware if t.mfu_measured_on is not None else t.hardware
    try:
        others = {hardware(h).name for h in opt.trainer_hardware or ()} - {hardware(on).name}
    except KeyError:
        others = {"?"}
    if not others:  # only the measured chip trains: nothing is carried
        return ""
    if t.mfu_carry == "model":
        return (f" Every trainer chip uses the roofline training model's MFU (trainer.mfu_carry = \"model\"), "
                f"{on} included, not the measured {t.mfu_busy:.1%}.")
    return (f" The measured trainer MFU ({t.mfu_busy:.1%} on {on}) carries to the other trainer chips as its ratio to "
            f"the roofline model's MFU there (like for like; trainer.mfu_carry = \"model\" compares every chip on "
            f"the model).")


#: Hardware pairs a sizing message names for one set of factors that do not carry over (the rest are counted).
PAIRS_NAMED = 3
