"""The RL step model judged in groups (issue 36; ``tcocalc validate --groups``, docs/validation.md).

:func:`validate` compares the model with every published RL figure the project carries and reports in groups:

* **NeMo RL (in-sample)**: NeMo RL's 51 modelled step times and its 32 on/off-policy pairs
  (:func:`~tcocalc.studies.rl_validation.rl_validation_table`). In-sample: the RL mechanisms were developed against
  these tables, and the colocated refit and reshard constants are fitted on NeMo RL's rows.
* **verl fully-async study (in-sample)**: the nine verl rows of the same table; the weight-sync constants are
  fitted on that study's checkpoint-engine rows.
* **Other frameworks (development set)**: the runs of data/validation/framework_cases.csv (verl recipes, AReaL
  v0.1 and v0.3, checkpoint-engine, two real verl logs), each a scenario file under data/validation/frameworks/:
  absolute step and weight-sync times (pass within ±25%) and speed-ups (useful samples/s of one run over another,
  pass inside the published band), with the shipped constants.
* **Stages**: published per-stage times (generation, training, log-prob passes, the colocated switch:
  data/validation/stage_cases.csv;
  weight sync and the colocated refit: data/rl_cases_refit.csv and the checkpoint-engine row) against the model's
  stage times (:func:`tcocalc.calibrate`'s uncalibrated figures, the same stage split a run log is compared with).
* **Leave-one-framework-out**: the development set again, each row predicted with no constant fitted on its
  frameworks' rows: data/validation/fitted_constants.csv names what is fitted on which framework; those constants are
  refitted on the other frameworks' rows (the NCCL-broadcast pair, :func:`lofo_calibration`), and a row whose
  transport reads a constant that cannot be refitted without its framework has no leave-out prediction.

Each group gives its median |error|, share within ±25% (speed-ups: inside their band), worst rows and speed-ups with
their side of 1. The verl study's note also names its input-limited rows (the run's published update needs a busy MFU
above the ceiling under the study's assumed workload) and how much each run of verl's fully-async document changes
its own step over its 100-step windows (:func:`window_table`, from the published cumulative wall times). The
out-of-sample step-time error of each regime (:func:`~tcocalc.catalog.regimes.regime_of`) comes from the
leave-one-framework-out rows; ``python benchmarks/trust_figures.py`` writes it to
data/prediction_errors.toml, where every report's stated typical error is read (``report.diagnosis.trust``).
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass

from ..catalog.accelerators import hardware
from ..catalog.calibration import shipped_calibration
from ..catalog.framework_cases import (
    STAGE_KEYS,
    case_scenario,
    disk_reloads,
    fitted_constants,
    framework_cases,
    pass_pairs,
    stage_case,
    stage_cases,
    study_windows,
)
from ..catalog.models import model
from ..catalog.regimes import regime_of
from ..catalog.rl_cases import refit_cases
from ..errors import TcocalcError
from ..rl.cluster import resolve
from ..rl.solve import evaluate, solve_split
from ..rl.switching import checkpoint_tensors, colocated_refit_seconds, per_tensor_seconds
from ..rl.weight_sync import weight_sync_seconds
from .rl_validation import RL_TOLERANCE, rl_refit_table, rl_speedup_pairs, rl_validation_table

__all__ = ["Validation", "validate", "framework_table", "stage_table", "lofo_table", "lofo_calibration",
           "regime_table", "fitted_table", "group_table", "window_table", "pass_pair_table", "GROUPS",
           "PASS_AGREEMENT", "update_length_table", "update_length_speedups", "update_length_stages",
           "UPDATE_LENGTH_RANGE"]

GROUPS = ("NeMo RL (in-sample)", "verl fully-async study (in-sample)", "other frameworks (development set)",
          "stages", "leave-one-framework-out")
_PRESET_FRAMEWORK = {"verl-fsdp": "verl", "verl-megatron": "verl", "areal": "AReaL", "nemo-rl": "NeMo RL",
                     "prime-rl": "prime-rl", "slime": "slime"}
"""The framework a preset belongs to (the names of data/validation/fitted_constants.csv)."""
PASS_AGREEMENT = 0.05
"""How far apart (relative) the two passes' per-GPU, per-sample cost ratios of a pass pair may lie and still be read
as one per-token factor (:func:`pass_pair_table`): the published cells are rounded to 3-5 digits (at most 1% in a
ratio of four cells) and each is a mean over a run's steps, so a few percent is read as the same; PP-02, whose
only stated difference is the batch, agrees to 0.03% and PP-01 to 4.1%, the pass pairs' widest agreement."""


@dataclass(frozen=True)
class Validation:
    """Every group's rows (DataFrames) and the summary of each (:data:`GROUPS`; module docstring)."""

    nemo: object
    nemo_pairs: object
    verl_study: object
    frameworks: object
    stages: object
    lofo: object
    fitted: object
    regimes: object
    groups: object
    windows: object = None
    rl: object = None
    """The whole RL step table (``rl_validation_table()``: NeMo RL and verl's study, every row) the groups above
    were cut from, so that a caller showing it (the app's in-sample section) need not evaluate it again."""
    passes: object = None
    """The pass pairs (:func:`pass_pair_table`): two published runs of one recipe compared pass by pass."""
    update_lengths: object = None
    """The stage cases with assumed response lengths at the lengths each run's own update implies
    (:func:`update_length_table`)."""
    update_speedups: object = None
    """The speed-ups whose two runs are such cases, at those lengths (:func:`update_length_speedups`)."""


def _na(v) -> bool:
    import pandas as pd

    return v is None or bool(pd.isna(v))


def _err(pred, pub) -> float:
    return math.nan if _na(pred) else 100.0 * (pred / pub - 1.0)


def _case_frameworks(case: dict) -> frozenset:
    names = {case["framework"]}
    for name in (case["scenario"], case.get("baseline")):
        if name:
            preset = case_scenario(name, case["id"]).orchestration.framework
            names.add(_PRESET_FRAMEWORK.get(preset, case["framework"] if preset == "generic" else preset))
    return frozenset(names)


def _predict(case: dict, calibration) -> float:
    """The model's figure for one development-set case (step or weight-sync time [s], or a speed-up)."""
    scn = case_scenario(case["scenario"], case["id"])
    if case["kind"] == "speedup":
        fast = (solve_split(scn, case["solve"], calibration=calibration) if case["solve"]
                else evaluate(scn, calibration=calibration, advice=False))
        slow = evaluate(case_scenario(case["baseline"], case["id"]), calibration=calibration, advice=False)
        return fast.metrics["useful_samples_per_s"] / slow.metrics["useful_samples_per_s"]
    rep = evaluate(scn, calibration=calibration, advice=False)
    if case["kind"] == "weight_sync":
        return _weight_update_seconds(scn, rep, calibration)
    return float(rep.metrics["step_time_s"])


def _weight_update_seconds(scn, rep, calibration) -> float:
    """The model's weight-update stage [s], like for like with a published update time: a separate pool's weight
    sync, or on a shared pool the in-process refit alone (with the per-tensor load of an unbucketed engine), without
    the engine's sleep/wake and the trainer's offload that the colocated switch adds around it
    (:func:`~tcocalc.rl.switching.colocated_refit_seconds`; checkpoint-engine's "Update" column times the update
    with the engine awake and no trainer, its examples/update.py)."""
    phase = rep.phase_results[0]
    if not scn.orchestration.traits.shared_pool:
        return float(phase.rates.t_sync[0])
    cluster = resolve(scn, calibration)
    st = cluster.settings
    per_tensor = (0.0 if st.bucketed_weight_load else
                  checkpoint_tensors(cluster.model) * per_tensor_seconds(cluster.rl_cal) * cluster.run.weight_sync)
    return float(colocated_refit_seconds(phase.generator.weights_per_gpu_bytes, calibration=cluster.rl_cal,
                                         refit=cluster.run.weight_sync)) + per_tensor


def _case_row(case: dict, pred: float, note: str) -> dict:
    pub = case["published"]
    err = _err(pred, pub)
    speedup = case["kind"] == "speedup"
    if speedup:
        within = False if _na(pred) else bool(case["low"] <= pred <= case["high"])
    else:
        within = bool(abs(err) <= 100 * RL_TOLERANCE) if err == err else False
    scn = case_scenario(case["scenario"], case["id"])
    return {"id": case["id"], "set": case["set"], "framework": case["framework"], "kind": case["kind"],
            "case": case["scenario"] + (f" over {case['baseline']}" if speedup else ""),
            "regime": "" if speedup else regime_of(scn), "published": pub, "predicted": pred, "error [%]": err,
            "band": f"{case['low']:g}-{case['high']:g}" if speedup else "±25%", "within": within,
            "side of 1": ("right" if (pred > 1.0) == (pub > 1.0) else "WRONG") if speedup and not _na(pred) else "",
            "note": note, "source": case["source"], "date": case["date"]}


def _frame(rows: list[dict]):
    import pandas as pd

    df = pd.DataFrame(rows)
    for col in ("predicted", "error [%]"):  # a case the model cannot represent: NA, never NaN
        if col in df:
            df[col] = df[col].astype("Float64").mask(df[col].isna())
    return df


def framework_table(calibration=None):
    """The development set with the shipped constants (or ``calibration``): one row per published figure with its
    regime, published and predicted value, error [%], pass band and whether inside it (DataFrame)."""
    rows = []
    for case in framework_cases():
        implied = math.nan
        try:
            pred, note = _predict(case, calibration), ""
            if case["kind"] == "step":
                implied, note = _implied_step_mfu(case, calibration)
        except TcocalcError as exc:  # a valid scenario the model cannot run: a miss with its reason, never dropped
            pred, note = math.nan, f"{type(exc).__name__}: {exc}"
        if case["independent"]:  # a published run of the same configuration by others that disagrees
            note = (f"{note}; " if note else "") + f"an independent run disagrees: {case['independent']}"
        rows.append({**_case_row(case, pred, note), "implied busy MFU >=": implied})
    return _frame(rows)


def _implied_step_mfu(case: dict, calibration) -> tuple[float, str]:
    """The least busy MFU the trainer needs to fit its work for the assumed workload into the published step (the
    model's busy MFU x its trainer time per step / the published step: in every mode the trainer's busy time is at
    most the step, and its FLOPs are the model's), and, where that is above the highest a calibrated trainer may
    show (data/rl_calibration.toml ``calibrate_mfu_ceiling``), why the row misses: the run trained fewer tokens per
    step than the scenario assumes ("" otherwise)."""
    scn = case_scenario(case["scenario"], case["id"])
    rep = evaluate(scn, calibration=calibration, advice=False)
    mfu = float(rep.metrics["trainer_mfu_busy"])
    t_train = float(rep.phase_results[0].rates.t_train[0])
    implied = mfu * t_train / case["published"]
    ceiling = shipped_calibration().rl["calibrate_mfu_ceiling"]
    if not implied > ceiling:
        return implied, ""
    return implied, (f"input-limited: the trainer's work for the assumed workload ({t_train:,.0f} s per step at "
                     f"the model's {mfu:.0%} busy MFU) fits the published {case['published']:,.0f} s step only at "
                     f"{implied:.0%}, above the {ceiling:.0%} ceiling (calibrate_mfu_ceiling): the run trained fewer "
                     f"tokens per step than the scenario assumes")


# ---------------------------------------------------------------- leave one framework out
def _held_out(row: dict, frameworks: frozenset) -> bool:
    text = f"{row['what']} {row['source']}".lower()
    return any(f.lower() in text for f in frameworks)


def _refit_broadcast(frameworks: frozenset):
    """``(weight_sync_efficiency, weight_sync_fixed_s)`` fitted, as the shipped pair was, on the NCCL-broadcast rows
    of data/rl_cases_refit.csv that no framework in ``frameworks`` published (``t = fixed + bytes/(eta·NIC)``, least
    squares on the relative error; where the rows give no positive slope and intercept, the efficiency alone with
    no fixed term); None with fewer than two such rows."""
    import numpy as np

    base = shipped_calibration().rl.with_overrides(weight_sync_efficiency=1.0, weight_sync_fixed_s=0.0)
    rows = [c for c in refit_cases() if c["transport"] == "nccl-broadcast" and not _held_out(c, frameworks)]
    if len(rows) < 2:
        return None
    a, ids = [], []
    for c in rows:
        acc = hardware(c["hardware"])
        b = weight_sync_seconds(model(c["model"]).params_total, acc, acc, c["trainer_gpus"], c["generator_gpus"],
                                instance_gpus=c["instance_gpus"], transport="nccl-broadcast", calibration=base)
        inside = c["trainer_gpus"] + c["generator_gpus"] <= acc.scaleup_domain_gpus
        a.append([0.0 if inside else 1.0 / c["published_s"], b / c["published_s"]])
        ids.append(c["id"])
    a = np.array(a)
    (fixed, x), *_ = np.linalg.lstsq(a, np.ones(len(rows)), rcond=None)
    if not (x > 0 and fixed >= 0):  # the rows do not support an intercept (REFIT-01 and -06: more bytes, less time)
        fixed, x = 0.0, float(a[:, 1].sum() / (a[:, 1] ** 2).sum())  # the bandwidth alone, through the origin
    return float(1.0 / x), float(fixed), tuple(ids)


def _refit_disk(frameworks: frozenset):
    """``(weight_sync_disk_fixed_s, engine_disk_load_bytes_per_s, row ids)`` refitted on the published engine
    reloads of data/validation/disk_reloads.csv not of ``frameworks``, as data/rl_calibration.toml fits them
    (``t = fixed + bytes per GPU / rate``, least squares on the relative error); None with fewer than two rows or a
    fit without a positive rate and a non-negative floor."""
    import numpy as np

    rows = [r for r in disk_reloads() if r["framework"] not in frameworks]
    if len(rows) < 2:
        return None
    t = np.array([r["published_s"] for r in rows])
    b = np.array([r["bytes_per_gpu"] for r in rows])
    (fixed, x), *_ = np.linalg.lstsq(np.stack([1.0 / t, b / t], axis=1), np.ones_like(t), rcond=None)
    if not (x > 0 and fixed >= 0):
        return None
    return float(fixed), float(1.0 / x), tuple(r["id"] for r in rows)


#: Each weight-sync transport whose constants can be refitted without a framework: the refit (returning the values
#: in the order named, then the rows used) and the constants it sets.
_REFITS = {"nccl-broadcast": (_refit_broadcast, ("weight_sync_efficiency", "weight_sync_fixed_s")),
           "disk": (_refit_disk, ("weight_sync_disk_fixed_s", "engine_disk_load_bytes_per_s"))}


@functools.cache
def lofo_calibration(frameworks: frozenset):
    """The shipped constants with every one fitted on a framework in ``frameworks`` refitted without it:
    ``(CalibrationSet, refitted {constant: (value, rows)}, transports whose constants could not be refitted)``."""
    fitted = [c for c in fitted_constants() if set(c["frameworks"]) & frameworks]
    transports = {c["transport"] for c in fitted}
    changes, refitted, lost = {}, {}, set()
    for transport in sorted(transports):
        refit, names = _REFITS.get(transport, (None, ()))
        fit = refit(frameworks) if refit is not None else None
        if fit is None:
            lost.add(transport)
            continue
        *values, ids = fit
        changes.update(zip(names, values, strict=True))
        refitted.update({name: (value, ids) for name, value in zip(names, values, strict=True)})
    label = "without " + ", ".join(sorted(frameworks))
    cal = shipped_calibration().with_rl(label, **changes) if changes else shipped_calibration()
    return cal, refitted, frozenset(lost)


def lofo_table(shipped=None):
    """The development set with no constant fitted on the row's frameworks (module docstring); ``shipped``: the
    :func:`framework_table` already computed, reused where none of the constants the row's weight-sync transport
    reads is fitted on the row's frameworks (DataFrame)."""
    shipped = framework_table() if shipped is None else shipped
    by_id = shipped.set_index("id")
    transport_of = {c["constant"]: c["transport"] for c in fitted_constants()}
    rows = []
    for case in framework_cases():
        fws = _case_frameworks(case)
        cal, refitted, lost = lofo_calibration(fws)
        scn = case_scenario(case["scenario"], case["id"])
        uses = resolve(scn).settings.weight_sync
        if uses in lost:
            pred, note = math.nan, f"no leave-out prediction: its {uses} constants are fitted on {', '.join(fws)}"
        elif not (reads := {k: v for k, v in refitted.items() if transport_of[k] == uses}):
            pred = by_id.loc[case["id"], "predicted"]
            pred, note = (math.nan if _na(pred) else float(pred)), "no constant it reads is fitted on its frameworks"
        else:
            names = ", ".join(f"{k} {v:.3g}" for k, (v, _ids) in reads.items())
            names += f" (from {', '.join(sorted({i for _v, ids in reads.values() for i in ids}))})"
            try:
                pred, note = _predict(case, cal), f"refitted without {', '.join(sorted(fws))}: {names}"
            except TcocalcError as exc:
                pred, note = math.nan, f"{type(exc).__name__}: {exc}"
        row = _case_row(case, pred, note)
        row["frameworks held out"] = ", ".join(sorted(fws))
        rows.append(row)
    return _frame(rows)


# ---------------------------------------------------------------- stages
class _Measured(dict):
    """Stage measurements for :func:`tcocalc.calibrate`, with the keys logged as the trainer's wait and those
    logged as the engines' mean (``Measurements.rank_mean``)."""

    def __init__(self, values: dict, exposed: set, rank_mean=()):
        super().__init__(values)
        self.exposed = frozenset(exposed)
        self.rank_mean = tuple(rank_mean)


def _stage_rows(case: dict) -> list[dict]:
    from .calibrate import calibrate

    meas = {"step_time_s": case["step_time_s"], **{k: case[k] for k in STAGE_KEYS if case[k] is not None}}
    exposed, rank = _case_timers(case)
    scn = _case_split(case)
    split = "" if case["trainer_gpus"] is None else f" at {case['trainer_gpus']}:{case['generator_gpus']}"
    base = {"id": case["id"], "framework": case["framework"], "case": case["scenario"] + split,
            "in-sample": case["in_sample"], "source": case["source"]}
    names = {"generation_s": "generation (trainer's wait)" if exposed else "generation", "training_s": "training",
             "logprob_s": "log-prob", "switching_s": "switching (colocated)"}
    try:
        fitted = calibrate(scn, _Measured(meas, exposed, rank), source=case["id"])
    except TcocalcError as exc:  # published times the model's step cannot hold: shown with the reason
        return [{**base, "stage": names[k], "published [s]": v, "predicted [s]": math.nan, "note": str(exc)}
                for k, v in meas.items() if k != "step_time_s"]
    implied, note = _implied_mfu(scn, fitted.stages)
    rows = [{**base, "stage": names[s.stage], "published [s]": s.measured_s, "predicted [s]": s.before_s,
             "implied busy MFU": implied if s.stage == "training_s" else math.nan,
             "note": note if s.stage in _TOKEN_STAGES else ""}
            for s in fitted.stages if s.stage != "step_time_s"]
    if case["generation_rank_mean"]:
        _rank_mean_rows(scn, rows, names, fitted.factor("responses"), limited=bool(note))
    return rows


#: The response-length factors searched for the lengths a run's published update implies (x0.05 to x5 of the
#: scenario's assumed mean and p99; the cap stays).
UPDATE_LENGTH_RANGE = (0.05, 5.0)
_STAGE_NAMES = {"generation_s": "generation", "training_s": "training", "logprob_s": "log-prob",
                "switching_s": "switching (colocated)", "step_time_s": "step"}


def _case_timers(case: dict) -> tuple[set[str], set[str]]:
    """The stages a stage case's log times as the trainer's wait (``exposed``) and as the engines' mean
    (``rank_mean``), as :func:`~tcocalc.studies.calibrate.calibrate` compares them."""
    exposed = {"generation_s"} if case["generation_exposed"] else set()
    rank = {"generation_s", "switching_s"} if case["generation_rank_mean"] else set()
    return exposed, rank


def _case_split(case: dict):
    """A stage case's scenario at the case's split where it gives one."""
    scn = case_scenario(case["scenario"], case["id"])
    if case["trainer_gpus"] is not None:
        scn = scn.with_split(case["trainer_gpus"], case["generator_gpus"])
    return scn


def _case_times(case: dict, scn, responses: float) -> dict[str, float]:
    """The model's stage times of a stage case at its response lengths x ``responses``, timed as the case's log
    times them (the trainer's wait, the engines' mean)."""
    from .calibrate import run_stage_times

    exposed, rank = _case_timers(case)
    return run_stage_times(scn, responses, exposed=exposed, rank_mean=rank)


def _update_lengths(case: dict) -> float:
    """The responses factor at which the model's update of a stage case equals its published update (NaN where no
    factor in :data:`UPDATE_LENGTH_RANGE` does, or the model cannot run the case)."""
    from scipy.optimize import brentq

    scn = _case_split(case)

    def miss(r: float) -> float:
        return _case_times(case, scn, r)["training_s"] / case["training_s"] - 1.0

    lo, hi = UPDATE_LENGTH_RANGE
    try:
        ends = miss(lo) * miss(hi)
        if not math.isfinite(ends) or ends > 0:  # no sign change (or no update time) over the range: no factor
            return math.nan
        return float(brentq(miss, lo, hi, xtol=1e-5))
    except TcocalcError:
        return math.nan


def update_length_table():
    """Every stage case whose response lengths are assumed (data/validation/stage_cases.csv ``lengths``) and whose
    update is published, at the lengths its own update implies (DataFrame, one row per other published stage): the
    responses factor that makes the model's update equal the published one (the scenario's mean and p99 x it, the
    cap kept; NaN where none in :data:`UPDATE_LENGTH_RANGE` does), the mean response that gives, and each other
    stage's predicted/published ratio as assumed and at those lengths.

    What it measures: the response lengths are the one input most development-set runs do not publish, and every
    token-bound stage scales with them; the update's time per token is the stage the model was validated on most
    (NeMo RL's tables), so the update pins the lengths and the generation, log-prob passes and switch are then judged
    on their own. It fits no constant of the model; each run's unpublished input is read off its own published
    update, as a calibration's responses factor is (docs/calibration.md), and the update itself is not judged."""
    import pandas as pd

    rows = []
    for case in stage_cases():
        if case["lengths"] != "assumed" or case["training_s"] is None:
            continue
        scn = _case_split(case)
        r = _update_lengths(case)
        try:
            base = _case_times(case, scn, 1.0)
            at = _case_times(case, scn, r) if r == r else None
        except TcocalcError:  # a valid scenario the model cannot run: the stage table says why; nothing to scale
            continue
        for key in ("generation_s", "logprob_s", "switching_s", "step_time_s"):
            pub = case[key]
            if pub is None:
                continue
            name = _STAGE_NAMES[key] + (" (trainer's wait)" if key == "generation_s" and case["generation_exposed"]
                                        else "")
            rows.append({"id": case["id"], "stage": name, "in-sample": case["in_sample"], "published [s]": pub,
                         "responses factor": r, "mean response [tokens]": scn.workload.response_tokens_mean * r,
                         "ratio as assumed": base[key] / pub,
                         "ratio at the update's lengths": math.nan if at is None else at[key] / pub,
                         "case": case["scenario"]})
    cols = ["id", "stage", "in-sample", "published [s]", "responses factor", "mean response [tokens]",
            "ratio as assumed", "ratio at the update's lengths", "case"]
    df = pd.DataFrame(rows, columns=cols)
    for col in ("responses factor", "mean response [tokens]", "ratio at the update's lengths"):
        df[col] = df[col].astype("Float64").mask(df[col].isna())
    return df


def update_length_speedups(lengths=None, frameworks=None):
    """The development set's speed-ups whose two runs are both stage cases with assumed lengths, each run at the
    lengths its own update implies (:func:`update_length_table`): useful samples/s of the first over the second with
    each scenario's mean response x its factor (DataFrame: id, published, band, as assumed, at the updates'
    lengths, inside). ``frameworks``: the :func:`framework_table` already computed (its prediction is the "as
    assumed" figure; evaluated here without it)."""
    import pandas as pd

    table = update_length_table() if lengths is None else lengths
    assumed = {} if frameworks is None else {k: math.nan if pd.isna(x) else float(x)  # NA: the model cannot run it
                                             for k, x in frameworks.set_index("id")["predicted"].items()}
    factor = table.drop_duplicates("id").set_index("case")["responses factor"]
    by_case = {c["scenario"]: c for c in stage_cases() if c["trainer_gpus"] is None}
    rows = []
    for case in framework_cases():
        if case["kind"] != "speedup" or case["solve"] or not {case["scenario"], case["baseline"]} <= set(by_case):
            continue
        if not {case["scenario"], case["baseline"]} <= set(factor.index):
            continue
        rates = []
        for name in (case["scenario"], case["baseline"]):
            scn, r = case_scenario(name, case["id"]), factor[name]
            if pd.isna(r):
                rates = []
                break
            scaled = scn.with_response_mean(scn.workload.response_tokens_mean * float(r))
            rates.append(float(evaluate(scaled, advice=False).metrics["useful_samples_per_s"]))
        at = rates[0] / rates[1] if rates else math.nan
        rows.append({"id": case["id"], "published": case["published"], "band": f"{case['low']:g}-{case['high']:g}",
                     "as assumed": assumed[case["id"]] if case["id"] in assumed else _predict(case, None),
                     "at the updates' lengths": at,
                     "inside": bool(case["low"] <= at <= case["high"]) if at == at else False})
    return pd.DataFrame(rows, columns=["id", "published", "band", "as assumed", "at the updates' lengths", "inside"])


def _engine_spread(scn, responses: float = 1.0) -> tuple[float, float] | None:
    """(the batch's generation over all the generator's engines, one engine's own) [s per step] of a colocated or
    synchronous scenario, its response lengths x ``responses``: the model's generation stage ends with the last
    of the engines (``list_makespan_tokens(..., replicas)``, docs/rl-modeling.md §4.5), and one engine with its
    share of the batch is the same model on ``tp`` GPUs with ``1/replicas`` of the prompts (its slots, lengths and
    step times the same). None where the engine's TP is not pinned, the prompts do not divide over the engines or
    the model cannot run either (a TcocalcError: the rows then keep the batch's figures)."""
    from .calibrate import one_engine_scenario, run_stage_times

    one = one_engine_scenario(scn)
    if one is None:
        return None
    try:
        gen = [run_stage_times(s, responses)["generation_s"] for s in (scn, one)]
    except TcocalcError:  # one engine's share, or these lengths, the hardware cannot hold: no like-for-like split
        return None
    return float(gen[0]), float(gen[1])


def _rank_mean_rows(scn, rows: list[dict], names: dict, responses: float, limited: bool) -> None:
    """The note on the switch of a run whose logged generation is the engines' mean and whose switch is the rest
    of a wall time that ends with the slowest engine (verl: ``generate_sequences`` all-reduced with
    ``ReduceOp.AVG``, ``gen`` the driver's wall time; docs/rl-modeling.md §3.10). The rows already compare like
    with like (calibrate's ``rank_mean``: one engine's generation, the switch plus the last engine's excess). The
    excess grows with the response lengths' spread; where the run is input-limited its size under the lengths the
    run's published times imply (``responses``, the run's own calibration) is the evidence: within 2x of the
    published switch, the row is named input-limited (explained), else it stays unexplained with the figures in
    its note."""
    sw = next((r for r in rows if r["stage"] == names["switching_s"]), None)
    spread = _engine_spread(scn)
    if sw is None or spread is None or math.isnan(sw["predicted [s]"]):
        return
    excess = spread[0] - spread[1]
    switch = sw["predicted [s]"] - excess  # the model's switch alone
    text = (f"the published switch is verl's gen less the engines' mean generate_sequences: the switch and the last "
            f"engine's excess over the mean; the model's excess {excess:,.1f} s under the assumed lengths")
    implied = _engine_spread(scn, responses) if limited and responses != 1.0 else None
    if implied is not None:
        at = switch + implied[0] - implied[1]
        text += (f", {implied[0] - implied[1]:,.1f} s at the lengths the run's published times imply (responses "
                 f"x{responses:.2f}): switch + excess {at:,.1f} s")
        if 0.5 < at / sw["published [s]"] < 2.0:
            text = "input-limited: " + text
    sw["note"] = text


#: The stages whose time scales with the tokens a step generates and trains (not the switch or the push).
_TOKEN_STAGES = ("generation_s", "training_s", "logprob_s")


def _implied_mfu(scn, stages) -> tuple[float, str]:
    """The trainer's busy MFU the published update time implies under the scenario's workload (the model's busy MFU
    x its update time / the published one: the update's FLOPs are the model's, so MFU is inversely proportional to
    the time), NaN without a published update; and, where it is above the highest a calibrated trainer may show
    (data/rl_calibration.toml ``calibrate_mfu_ceiling``), why the run's token-bound stages are off: the published
    update cannot be run on these GPUs at the workload's token count, so the assumed workload (response lengths,
    samples per step) is larger than the run's, and its generation, update and log-prob scale with it ("" otherwise;
    the switch and the push do not scale with the tokens)."""
    upd = next((s for s in stages if s.stage == "training_s"), None)
    if upd is None or not upd.before_s > 0:
        return math.nan, ""
    mfu = float(evaluate(scn, advice=False).metrics["trainer_mfu_busy"])
    implied = mfu * upd.before_s / upd.measured_s
    ceiling = shipped_calibration().rl["calibrate_mfu_ceiling"]
    if not implied > ceiling:
        return implied, ""
    return implied, (f"input-limited: the published update needs a busy MFU of {implied:.0%} under the assumed "
                     f"workload (the model's {mfu:.0%} x {upd.before_s:,.0f} s / {upd.measured_s:,.0f} s), above the "
                     f"{ceiling:.0%} ceiling (calibrate_mfu_ceiling): the run trained fewer tokens per step than the "
                     f"scenario assumes, and its generation, update and log-prob times scale with them")


def stage_table(frameworks=None):
    """Every published stage time beside the model's uncalibrated stage time, with the error [%], the ratio
    predicted/published and whether the row fitted a constant (``in-sample``) (DataFrame). ``frameworks``: the
    :func:`framework_table` already computed (its weight-sync rows join the table). A row of a run in an alike
    pass pair (:func:`pass_pair_table`) notes the published difference between the two runs and, in ``beyond pass
    pair``, its ratio with that difference taken out."""
    import pandas as pd

    rows = [r for case in stage_cases() for r in _stage_rows(case)]
    for _, r in rl_refit_table().iterrows():
        rows.append({"id": r["id"], "framework": r["case"].split(":")[0], "case": r["case"],
                     "stage": "switching (colocated refit)" if r["transport"] == "colocated" else "weight sync",
                     "in-sample": r["role"] == "fit", "published [s]": r["published [s]"],
                     "predicted [s]": r["predicted [s]"], "note": r["known_miss"], "source": r["source"]})
    fw = framework_table() if frameworks is None else frameworks
    for _, r in fw[fw["kind"] == "weight_sync"].iterrows():
        rows.append({"id": r["id"], "framework": r["framework"], "case": r["case"], "stage": "weight sync",
                     "in-sample": False, "published [s]": r["published"], "predicted [s]": r["predicted"],
                     "note": r["note"], "source": r["source"]})
    df = _frame(rows)
    df["predicted [s]"] = df["predicted [s]"].astype("Float64")
    df["error [%]"] = (100.0 * (df["predicted [s]"] / df["published [s]"] - 1.0)).astype("Float64")
    df["ratio"] = (df["predicted [s]"] / df["published [s]"]).astype("Float64")
    df["within"] = (df["error [%]"].abs() <= 100 * RL_TOLERANCE).fillna(False).astype(bool)
    df["beyond pass pair"] = pd.array([math.nan] * len(df), dtype="Float64")
    passes = pass_pair_table(df)
    _note_pass_pairs(df, passes)
    df.attrs["pass_pairs"] = passes  # read again by validate(), not recomputed
    return df


_FORWARD_STAGE, _UPDATE_STAGE = "log-prob", "training"


def _forward_passes(case_id: str) -> int:
    """Forward-only log-prob passes per trained sample of a stage case's scenario (old policy, reference)."""
    case = stage_case(case_id)
    return resolve(case_scenario(case["scenario"], case_id)).settings.extra_forward_passes


def pass_pair_table(stages=None):
    """Each pass pair of data/validation/pass_pairs.csv (two published runs of one recipe, a forward-only pass and
    the update published on both sides) read pass by pass (DataFrame): the cost of each pass per trainer GPU and per
    sample of the first run over the second's (``forward ratio``, ``update ratio``: stage time x GPUs / samples,
    first over second), whether the two agree within :data:`PASS_AGREEMENT` (``alike``), and the model's own ratios
    from the stage table ``stages`` (its log-prob stage divided by the scenario's forward passes; NaN where the
    stage table has no prediction).

    Why it tells something: the forward-only pass has no gradient reduction, no optimizer step and no mini-batch
    synchronisation, so a difference between the runs that lives in what only the update does at scale (its
    data-parallel collectives, the optimizer, the ranks waiting for each other at every mini-batch) changes the
    update's ratio and not the forward pass's; a difference in the tokens each sample carries, or in the speed of
    every token (the parallel layout), changes both alike. Alike pairs are read as one per-token factor (the
    geometric mean of the two), which a model given one workload for both runs cannot show: the model's ratio
    beside it says how much of it the model already has (its trainer's own scaling)."""
    import pandas as pd

    st = stage_table() if stages is None else stages

    def predicted(case_id: str, stage: str) -> float:
        hit = st[(st["id"] == case_id) & (st["stage"] == stage)]
        return float(hit["predicted [s]"].iloc[0]) if len(hit) and pd.notna(hit["predicted [s]"].iloc[0]) \
            else math.nan

    rows = []
    for p in pass_pairs():
        per = {side: p[f"{side}_gpus"] / p[f"{side}_samples"] for side in ("first", "second")}
        fwd = per["first"] * p["first_forward_s"] / (per["second"] * p["second_forward_s"])
        upd = per["first"] * p["first_update_s"] / (per["second"] * p["second_update_s"])
        m_fwd = (per["first"] * predicted(p["first_case"], _FORWARD_STAGE) / _forward_passes(p["first_case"])) / (
            per["second"] * predicted(p["second_case"], _FORWARD_STAGE) / _forward_passes(p["second_case"]))
        m_upd = per["first"] * predicted(p["first_case"], _UPDATE_STAGE) / (
            per["second"] * predicted(p["second_case"], _UPDATE_STAGE))
        alike = abs(fwd / upd - 1.0) <= PASS_AGREEMENT
        factor = math.sqrt(fwd * upd)
        mine = math.sqrt(m_fwd * m_upd)
        model = (f"the model's trainer gives {mine:.2f}x" if math.isfinite(mine) and mine > 0 else
                 "the model has no trainer time for one of the two runs")
        if alike and abs(factor - 1.0) <= PASS_AGREEMENT:
            reading = (f"the runs cost the same per GPU and sample in both passes ({p['forward_pass']} {fwd:.3f}x, "
                       f"update {upd:.3f}x) on {p['first_gpus']} and {p['second_gpus']} trainer GPUs: no loss or gain "
                       f"of the trainer between the two; {model}")
        elif alike:
            reading = (f"both passes cost {factor:.2f}x per GPU and sample in {p['first_case']} what they cost in "
                       f"{p['second_case']} ({p['forward_pass']} {fwd:.3f}x, update {upd:.3f}x): a per-token "
                       f"difference between the runs (the tokens each sample carries, or each token's speed), not one "
                       f"of what only the update does at scale (gradient reduction, the optimizer, mini-batch "
                       f"synchronisation); {model}")
        else:
            reading = (f"the passes differ ({p['forward_pass']} {fwd:.2f}x, update {upd:.2f}x per GPU and sample): "
                       f"no one per-token factor; what changes between the runs acts on one pass more than the other")
        rows.append({"id": p["id"], "recipe": p["recipe"], "first": p["first_case"], "second": p["second_case"],
                     "forward pass": p["forward_pass"], "forward ratio": fwd, "update ratio": upd,
                     "alike": alike, "factor": factor if alike else math.nan,
                     "model forward ratio": m_fwd, "model update ratio": m_upd, "reading": reading,
                     "source": p["source"]})
    return pd.DataFrame(rows, columns=["id", "recipe", "first", "second", "forward pass", "forward ratio",
                                       "update ratio", "alike", "factor", "model forward ratio",
                                       "model update ratio", "reading", "source"])


def _note_pass_pairs(st, pairs) -> None:
    """Note, on each stage row of an alike pass pair's runs, the published difference between the runs and what is
    left: with one workload for both runs, the model's error on one run's pass (its update, its single forward
    pass) is its error on the other run's times the published per-GPU, per-sample ratio of that pass over the
    model's own (``forward ratio / model forward ratio``, ``update ratio / model update ratio``; inverted for the
    first run), an identity of the four times. A row already noted input-limited keeps its note; a log-prob row of
    a run with two forward passes (old policy and reference), of which the pair publishes one, is not noted."""
    for _, p in pairs[pairs["alike"]].iterrows():
        for stage, pub, mod in ((_UPDATE_STAGE, "update ratio", "model update ratio"),
                                (_FORWARD_STAGE, "forward ratio", "model forward ratio")):
            per = p[pub] / p[mod]
            if not per > 0:
                continue
            for case, other, f in ((p["second"], p["first"], per), (p["first"], p["second"], 1.0 / per)):
                if stage == _FORWARD_STAGE and _forward_passes(case) != 1:
                    continue
                at = st.index[(st["id"] == case) & (st["stage"] == stage)]
                if len(at) != 1 or str(st.at[at[0], "note"] or "").startswith("input-limited"):
                    continue
                ratio = float(st.at[at[0], "ratio"])
                st.at[at[0], "beyond pass pair"] = ratio / f
                st.at[at[0], "note"] = (
                    f"runs differ (pass pair {p['id']}): the published {p['first']} and {p['second']} differ per GPU "
                    f"and sample by {p['factor']:.2f}x in both passes ({p['forward pass']} {p['forward ratio']:.3f}x, "
                    f"update {p['update ratio']:.3f}x), the model's trainer by {p[mod]:.2f}x, so with one workload "
                    f"for both the model's {stage} error here is {f:.2f}x its error on {other}: {ratio:.2f}x = "
                    f"{f:.2f}x x {ratio / f:.2f}x")


# ---------------------------------------------------------------- summaries
def fitted_table():
    """What the RL model fits on which framework's rows (data/validation/fitted_constants.csv), with the
    constant's shipped value (DataFrame)."""
    import pandas as pd

    rl = shipped_calibration().rl
    return pd.DataFrame([{"constant": c["constant"], "value": rl[c["constant"]],
                          "fitted on": ", ".join(c["frameworks"]), "rows": ", ".join(c["rows"]),
                          "transport": c["transport"]} for c in fitted_constants()])


def regime_table(lofo):
    """Out-of-sample step-time error by regime: the leave-one-framework-out step rows grouped by
    :func:`~tcocalc.catalog.regimes.regime_of` (median |error| and share within ±25% as fractions) (DataFrame)."""
    import pandas as pd

    steps = lofo[(lofo["kind"] == "step") & lofo["predicted"].notna()]
    rows = []
    for regime, g in steps.groupby("regime", sort=True):
        err = g["error [%]"].astype(float).abs() / 100.0
        rows.append({"regime": regime, "rows": len(g), "median_abs_error": float(err.median()),
                     "within_25pct": float((err <= RL_TOLERANCE).mean()),
                     "frameworks": ", ".join(sorted(set(g["framework"]))), "ids": ", ".join(g["id"])})
    return pd.DataFrame(rows, columns=["regime", "rows", "median_abs_error", "within_25pct", "frameworks", "ids"])


def window_table():
    """Each run of verl's fully-async document (the study's nine, the 30B and ReTool pairs): its mean step [s] in
    every window between two published cumulative wall times (data/validation/verl_study_windows.csv: 100-step
    windows), and the largest window over the smallest: how much a run's own step changes over its course, which a
    scenario's one workload cannot follow (DataFrame)."""
    import pandas as pd

    rows = []
    for r in study_windows():
        means = [w[2] for w in r["windows"]]
        rows.append({"run": r["run"], "case": r["case"],
                     "windows": ", ".join(f"{a}-{b}: {m:,.0f}" for a, b, m in r["windows"]),
                     "largest / smallest": max(means) / min(means), "source": r["source"]})
    return pd.DataFrame(rows, columns=["run", "case", "windows", "largest / smallest", "source"])


def _study_limited(st) -> dict[str, float]:
    """The verl study rows (data/rl_cases_verl.csv) whose run's published update needs a busy MFU above the
    ceiling under the study's assumed workload (their stage rows of data/validation/stage_cases.csv, matched by
    scenario and split, are noted input-limited by :func:`_implied_mfu`): id -> that MFU."""
    from ..catalog.rl_cases import verl_rl_cases

    limited = st[st["note"].fillna("").str.startswith("input-limited") & st["implied busy MFU"].notna()]
    by_split = {}
    for c in stage_cases():
        if c["id"] in set(limited["id"]) and c["trainer_gpus"] is not None:
            key = (c["scenario"].removeprefix("shipped/"), c["trainer_gpus"], c["generator_gpus"])
            by_split[key] = _implied_of(st, c["id"])
    return {c["id"]: by_split[k] for c in verl_rl_cases()
            if (k := (c["scenario"], c["trainer_gpus"], c["generator_gpus"])) in by_split}


def _summary(group: str, basis: str, err, ids, within=None, speedups=None, note: str = "") -> dict:
    """One group's line: median |error|, share within its band, the three worst rows, speed-ups."""
    import pandas as pd

    err = pd.Series(err, dtype="Float64").reset_index(drop=True)
    ids = pd.Series(list(ids)).reset_index(drop=True)
    ok = err.notna()
    absent = int((~ok).sum())
    within = (err[ok].abs() <= 100 * RL_TOLERANCE) if within is None else pd.Series(list(within))[ok.to_numpy()]
    worst = err[ok].abs().sort_values(ascending=False).index[:3]
    line = {"group": group, "basis": basis, "rows": int(ok.sum()),
            "median |error| [%]": float(err[ok].abs().median()) if ok.any() else math.nan,
            "within": f"{int(within.sum())} of {int(ok.sum())}" + (f" ({absent} not modelled)" if absent else ""),
            "within share": float(within.mean()) if ok.any() else math.nan,
            "worst": ", ".join(f"{ids[i]} {err[i]:+.0f}%" for i in worst), "speed-ups": "", "note": note}
    if speedups is not None and len(speedups):
        inside = int(speedups["within"].sum())
        right = int((speedups["side of 1"] == "right").sum())
        line["speed-ups"] = (f"{inside} of {len(speedups)} inside their band, {right} on the published side of 1: "
                             + ", ".join(f"{r['id']} {r['predicted']:.2f}x ({r['published']:.2f}x)"
                                         for _, r in speedups.iterrows() if pd.notna(r["predicted"])))
    return line


def group_table(v: dict):
    """One line per group of :data:`GROUPS` from the tables ``v`` (keys of :class:`Validation`) (DataFrame)."""
    import pandas as pd

    nemo, pairs, verl, fw, st, lofo = (v[k] for k in ("nemo", "nemo_pairs", "verl_study", "frameworks", "stages",
                                                      "lofo"))
    lines = [_summary(GROUPS[0], "in-sample", nemo["error [%]"], nemo["id"],
                      note=f"{int(pairs['right side'].sum())} of {len(pairs)} on/off-policy pairs on the published "
                           f"side of 1 ({int(pairs['on-policy'].str.startswith('NEMO').sum())} NeMo RL, the rest "
                           f"verl's study)"),
             _summary(GROUPS[1], "in-sample", verl["error [%]"], verl["id"], note=_study_note(v))]
    limited_ids = set(fw.loc[fw["note"].fillna("").str.startswith("input-limited"), "id"])
    for name, t, basis in ((GROUPS[2], fw, "development set, shipped constants"),
                           (GROUPS[4], lofo, "out of sample: nothing fitted on the row's frameworks")):
        sp = t[t["kind"] == "speedup"]
        parts = [(f"set {s}", g) for s, g in t.groupby("set", sort=False)]
        parts.append(("sets 2 and 3 (the 19 rows measured before)", t[t["set"].isin(["2", "3"])]))
        rest = t[~t["id"].isin(limited_ids)]
        parts.append((f"without the {len(limited_ids)} input-limited step rows ({', '.join(sorted(limited_ids))}: the "
                      f"published step is shorter than the assumed workload's update at the MFU ceiling)", rest))
        note = "; ".join(f"{label}: median {g['error [%]'].astype(float).abs().median():.0f}%, "
                         f"{int(g['within'].sum())} of {len(g)} within" for label, g in parts)
        if contested := [c["id"] for c in framework_cases() if c["independent"]]:
            note += (f"; contested by an independent run of the same configuration (still counted; the development "
                     f"set's table gives the report and its source): {', '.join(contested)}")
        lines.append(_summary(name, basis, t["error [%]"], t["id"], t["within"], sp, note=note))
    out = st[~st["in-sample"]]
    off = out[(out["ratio"] >= 2.0) | (out["ratio"] <= 0.5)]
    limited = off["note"].fillna("").str.startswith("input-limited")
    beyond = off["beyond pass pair"].astype(float)
    paired = ~limited & (beyond > 0.5) & (beyond < 2.0)
    runs = off[limited].drop_duplicates("id")
    rest = out.loc[~out["note"].fillna("").str.startswith("input-limited"), "error [%]"].astype(float).abs()

    def listed(rows):
        return ", ".join(f"{r['id']} {r['stage']} {r['ratio']:.2f}x" for _, r in rows.iterrows())
    pairs_listed = ", ".join(f"{r['id']} {r['stage']} {r['ratio']:.2f}x ({r['beyond pass pair']:.2f}x beyond the "
                             f"pair)" for _, r in off[paired].iterrows())
    pair_note = (f"{int(paired.sum())} of them where two published runs of the recipe differ per GPU and sample "
                 f"alike in the forward-only pass and the update (pass pairs: a per-token difference, their tokens "
                 f"per sample or an unpublished layout, which one workload per run cannot show): {pairs_listed}; ")
    lines.append(_summary(GROUPS[3], "published stage times (in-sample rows shown, not counted)", out["error [%]"],
                          out["id"] + " " + out["stage"],
                          note=f"{len(off)} stage rows off by 2x or more; {int(limited.sum())} of them input-limited "
                               f"(the run's published update needs a busy MFU above the ceiling under the assumed "
                               f"workload: " + ", ".join(f"{r['id']} {_implied_of(st, r['id']):.0%}"
                                                         for _, r in runs.iterrows())
                               + f"): {listed(off[limited])}; " + (pair_note if paired.any() else "")
                               + f"not explained: {listed(off[~limited & ~paired])}; the rows of "
                                 f"runs not input-limited: median {rest.median():.0f}%, {int((rest <= 25).sum())} "
                                 f"of {len(rest)} within" + _update_length_note(v)))
    return pd.DataFrame(sorted(lines, key=lambda line: GROUPS.index(line["group"])))


def update_length_stages(stages, lengths):
    """The stage rows as the update-length view counts them (Series of predicted/published ratios by "id stage"):
    the runs with assumed response lengths at the lengths each one's own update implies, without their update
    (pinned) and their step; every other row (published lengths, weight sync, refits) as the stage table has it; no
    in-sample row."""
    import pandas as pd

    out = stages[~stages["in-sample"]]
    assumed = set(lengths["id"])
    keep = out[~out["id"].isin(assumed)]
    moved = lengths[(~lengths["in-sample"]) & (lengths["stage"] != "step")]
    return pd.concat([pd.Series(keep["ratio"].astype(float).to_numpy(), index=keep["id"] + " " + keep["stage"]),
                      pd.Series(moved["ratio at the update's lengths"].astype(float).to_numpy(),
                                index=moved["id"] + " " + moved["stage"])])


def _update_length_note(v: dict) -> str:
    """The stage group's sentence on the update-length view (:func:`update_length_table`), "" without it."""
    lengths, speedups = v.get("update_lengths"), v.get("update_speedups")
    if lengths is None or not len(lengths):
        return ""
    ratio = update_length_stages(v["stages"], lengths)
    err = (ratio - 1.0).abs()
    off = ratio[(ratio >= 2.0) | (ratio <= 0.5)]
    runs = lengths[~lengths["in-sample"]].drop_duplicates("id")
    text = (f"; at the response lengths each run's own update implies ({len(runs)} runs whose lengths are assumed, "
            f"their update then matched by construction and not counted; mean response x"
            + ", x".join(f"{r['responses factor']:.2f} ({r['id']})" for _, r in runs.iterrows())
            + f"): median {100 * err.median():.0f}%, {int((err <= RL_TOLERANCE).sum())} of {len(ratio)} within, "
              f"{len(off)} off by 2x or more ({', '.join(f'{k} {x:.2f}x' for k, x in off.items())})")
    if speedups is not None and len(speedups):
        at = "at the updates' lengths"
        text += ("; speed-ups at those lengths: " + ", ".join(
            f"{r['id']} {r[at]:.2f}x ({r['published']:.2f}x, band {r['band']}, "
            f"{'inside' if r['inside'] else 'outside'})" for _, r in speedups.iterrows()))
    return text


def _study_note(v: dict) -> str:
    """The verl study group's note: its input-limited rows and the group without them, and how much its runs'
    own steps change between 100-step windows (:func:`window_table`)."""
    verl, st, win = v["verl_study"], v["stages"], v["windows"]
    limited = _study_limited(st)
    rest = verl[~verl["id"].isin(limited)]
    err = rest["error [%]"].astype(float).abs()
    text = ""
    if limited:
        text = ("input-limited (the run's published update needs a busy MFU above the ceiling under the study's "
                "assumed workload): " + ", ".join(f"{k} {m:.0%}" for k, m in limited.items())
                + f"; without them: median {err.median():.1f}%, {int((err <= 100 * RL_TOLERANCE).sum())} of "
                  f"{len(rest)} within; ")
    if win is not None and len(win):
        top = win.sort_values("largest / smallest", ascending=False).iloc[0]
        low = win.sort_values("largest / smallest").iloc[0]
        text += (f"a run's own mean step differs between its 100-step windows by up to "
                 f"{top['largest / smallest']:.2f}x ({top['run']}: {top['windows']} s) and by as little as "
                 f"{low['largest / smallest']:.2f}x ({low['run']}), so the tables' per-step means compare runs of "
                 f"different response-length histories, which one assumed workload per run cannot follow")
    return text


def _implied_of(st, case_id: str) -> float:
    """The busy MFU a stage case's published update implies (:func:`_implied_mfu`)."""
    return float(st.loc[(st["id"] == case_id) & st["implied busy MFU"].notna(), "implied busy MFU"].iloc[0])


def validate() -> Validation:
    """Every group (module docstring) computed once: the tables and one summary line per group."""
    table = rl_validation_table()
    nemo = table[(table["framework"] == "NeMo RL") & table["predicted [s]"].notna()].reset_index(drop=True)
    pairs = rl_speedup_pairs(table)
    verl = table[table["framework"] == "verl"].reset_index(drop=True)
    fw = framework_table()
    lofo = lofo_table(fw)
    st = stage_table(fw)
    lengths = update_length_table()
    v = {"nemo": nemo, "nemo_pairs": pairs, "verl_study": verl, "frameworks": fw, "stages": st, "lofo": lofo,
         "windows": window_table(), "update_lengths": lengths, "update_speedups": update_length_speedups(lengths, fw)}
    return Validation(**v, fitted=fitted_table(), regimes=regime_table(lofo), groups=group_table(v), rl=table,
                      passes=st.attrs["pass_pairs"] if "pass_pairs" in st.attrs else pass_pair_table(st))


REGIMES_MARKER = "# ---------------------------------------------------------------- out of sample, by regime"


def regimes_toml(regimes, date: str) -> str:
    """The ``[regimes]`` tables of data/prediction_errors.toml for :attr:`Validation.regimes` (each figure rounded
    up to the next 0.1 point, so that a stated error is never below the measured one), starting at
    :data:`REGIMES_MARKER`; ``python benchmarks/trust_figures.py`` writes it."""
    lines = [REGIMES_MARKER,
             "# Written by `python benchmarks/trust_figures.py` from tcocalc.studies.validation_groups.validate();",
             "# do not edit by hand. An uncalibrated report states the figure of its scenario's regime",
             "# (tcocalc.catalog.regimes): the median |step-time error| of the development set's published runs of",
             "# that regime, each predicted with no constant fitted on its framework's rows (leave-one-framework-out).",
             "# A regime missing here has no out-of-sample evidence, and the report says so.", ""]
    for _, r in regimes.iterrows():
        up = math.ceil(1000 * r["median_abs_error"] - 1e-9) / 1000
        lines += [f'[regimes."{r["regime"]}"]', f"median_abs_error = {up:.3f}",
                  f"within_25pct = {math.floor(100 * r['within_25pct'] + 1e-9) / 100:.2f}", f"rows = {int(r['rows'])}",
                  "frameworks = [" + ", ".join(f'"{f}"' for f in r["frameworks"].split(", ")) + "]",
                  'kind = "measured"',
                  f'source = "tcocalc validate --groups ({date}), leave-one-framework-out: median |step-time error| of '
                  f'the published runs {r["ids"]} (data/validation/framework_cases.csv), none of them predicted with a '
                  f'constant fitted on its framework"', ""]
    return "\n".join(lines)


# ---------------------------------------------------------------- the printed report
def _cell(v) -> str:
    import pandas as pd

    if isinstance(v, bool):
        return "yes" if v else "NO"
    if v is None or (not isinstance(v, str) and pd.isna(v)):
        return "-"
    if isinstance(v, float):
        return f"{v:,.0f}" if abs(v) >= 1000 else f"{v:.4g}"
    return str(v).replace("|", "\\|").replace("\n", " ")


def _md(df, cols: dict) -> str:
    """A Markdown table of ``df``'s columns ``cols`` (column -> header; a header ending in `` %`` prints a number
    as a signed percentage)."""
    lines = ["| " + " | ".join(cols.values()) + " |", "|" + "|".join(" --- " for _ in cols) + "|"]
    for _, r in df.iterrows():
        cells = [(f"{r[c]:+.1f}%" if str(h).endswith(" %") and isinstance(r[c], int | float) and _cell(r[c]) != "-"
                  else _cell(r[c])) for c, h in cols.items()]
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"


def _contested() -> str:
    """The development set's figures that a published run of the same configuration by others disagrees with
    (data/validation/framework_cases.csv ``independent``), each with that report; "" without any."""
    cases = [c for c in framework_cases() if c["independent"]]
    if not cases:
        return ""
    return ("\nContested by an independent run of the same configuration (the row is still counted):\n\n"
            + "".join(f"* {c['id']} (published {c['published']:g}): {c['independent']}\n" for c in cases))


def _lengths(v: Validation, speedups: bool = False):
    """The update-length table of ``v`` (or its speed-ups), computed where ``v`` predates the fields."""
    if speedups:
        return v.update_speedups if v.update_speedups is not None else update_length_speedups(_lengths(v))
    return v.update_lengths if v.update_lengths is not None else update_length_table()


def _passes(v: Validation):
    """The pass-pair table of ``v`` (computed from its stage table where ``v`` predates the field)."""
    return v.passes if v.passes is not None else pass_pair_table(v.stages)


def groups_report(v: Validation | None = None) -> str:
    """``tcocalc validate --groups``: the groups' summary, the development set with the shipped constants and left
    out by framework, what is fitted on which framework, the out-of-sample error by regime, the windows of verl's
    fully-async runs, the pass pairs, the stages at the response lengths each run's own update implies (and the
    speed-ups there), and the stages (Markdown tables, as docs/validation.md shows them)."""
    v = validate() if v is None else v
    g = v.groups.assign(**{"median |error| [%]": v.groups["median |error| [%]"].map(lambda x: f"{x:.1f}%")})
    row = {"id": "id", "set": "set", "framework": "framework", "kind": "kind", "case": "case", "regime": "regime",
           "published": "published", "predicted": "predicted", "error [%]": "error %", "band": "band",
           "within": "inside", "side of 1": "side of 1"}
    out = ["### Groups\n", _md(g, {"group": "group", "basis": "basis", "rows": "rows",
                                     "median |error| [%]": "median \\|error\\|", "within": "within ±25% (band)",
                                     "worst": "worst rows", "speed-ups": "speed-ups", "note": "note"}),
           "\n### Other frameworks (development set), shipped constants\n",
           "Step and weight-sync times in seconds, speed-ups as useful samples/s of the first run over the second.\n\n",
           _md(v.frameworks, {**row, "implied busy MFU >=": "implied busy MFU ≥"}),
           _contested(),
           "\n### What is fitted on which framework's rows\n", _md(v.fitted, {c: c for c in v.fitted.columns}),
           "\nThe roofline factors of data/calibration.toml are fitted on serving and training benchmarks "
           "(data/validation_cases.toml), none of them an RL framework's run.\n",
           "\n### Leave one framework out\n",
           _md(v.lofo, {**{k: h for k, h in row.items() if k not in ("kind", "case", "regime")},
                        "frameworks held out": "held out", "note": "note"}),
           "\n### Out-of-sample step-time error by regime (what reports state)\n",
           _md(v.regimes.assign(median_abs_error=100 * v.regimes["median_abs_error"],
                                within_25pct=(100 * v.regimes["within_25pct"]).map(lambda x: f"{x:.0f}%")),
               {"regime": "regime", "rows": "rows", "median_abs_error": "median \\|error\\| %",
                "within_25pct": "within ±25%", "frameworks": "frameworks", "ids": "runs"}),
           "\nA regime not listed has no out-of-sample evidence; its reports say so.\n",
           "\n### verl's fully-async document: each run's mean step by 100-step window\n",
           "From the published cumulative wall times (validation every 20 steps included); seconds per step.\n\n",
           _md(v.windows, {"run": "run", "case": "case", "windows": "steps: mean step [s]",
                           "largest / smallest": "largest / smallest"}),
           "\n### Pass pairs: two published runs of one recipe, pass by pass\n",
           "Each pass's cost per trainer GPU and sample, the first run over the second (stage time x GPUs / samples); "
           "alike: the two ratios within " f"{PASS_AGREEMENT:.0%}" ".\n\n",
           _md(_passes(v), {"id": "id", "first": "first", "second": "second", "forward pass": "forward pass",
                            "forward ratio": "forward ratio", "update ratio": "update ratio", "alike": "alike",
                            "model forward ratio": "model forward", "model update ratio": "model update",
                            "reading": "reading"}),
           "\n### Stages at the response lengths each run's own update implies\n",
           "The runs whose response lengths are assumed, each with its mean (and p99) response scaled until the "
           "model's update equals the published update; the other stages then judged as published (ratios "
           "predicted / published; the update itself is matched, not judged).\n\n",
           _md(_lengths(v), {"id": "id", "stage": "stage", "published [s]": "published [s]",
                             "responses factor": "responses factor", "mean response [tokens]": "mean response [tokens]",
                             "ratio as assumed": "as assumed",
                             "ratio at the update's lengths": "at the update's lengths", "in-sample": "in-sample"}),
           "\nSpeed-ups whose two runs are both such runs, each at its own update's lengths:\n\n",
           _md(_lengths(v, speedups=True), {"id": "id", "published": "published", "band": "band",
                                            "as assumed": "as assumed",
                                            "at the updates' lengths": "at the updates' lengths", "inside": "inside"}),
           "\n### Stages\n", _md(v.stages, {"id": "id", "framework": "framework", "stage": "stage",
                                            "published [s]": "published [s]", "predicted [s]": "predicted [s]",
                                            "error [%]": "error %", "ratio": "predicted / published",
                                            "implied busy MFU": "implied busy MFU",
                                            "in-sample": "fitted a constant", "case": "case"})]
    return "".join(out)
