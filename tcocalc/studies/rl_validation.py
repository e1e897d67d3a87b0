"""Predicted vs published RL step times: NeMo RL's 52 rows and verl's fully-async study.

``rl_validation_table()`` builds each published run as a scenario (its recipe's model, hardware, layouts,
batch, lengths, engine memory and CUDA-graph settings, framework preset), evaluates it and compares the step
time; ``rl_speedup_pairs()`` compares each published on-policy (colocated) run with its off-policy (async)
twin: the speed-up ``T_colocated / T_async`` and whether the model puts it on the same side of 1.0. Targets
(issue 12, benchmarks not tests): NeMo RL median |error| at most 15%, at least 80% of rows within ±25%,
every pair on the right side.

Each NeMo row's scenario follows its recipe (docs/sources.md §N): on-policy rows are colocated,
N-step-off rows async with ``max_staleness = N``; ``prompts x generations`` per step,
``prompts x generations / train_global_batch`` optimizer updates; the generator pinned to the published vLLM
TP with the recipe's ``gpu_memory_utilization``, CUDA graphs and ``max_num_seqs``; the trainer pinned to the
published TP/CP/EP/PP; the ``nemo-rl`` preset (log-prob recompute, reference pass, colocated offload,
per-tensor weight loading, no async scheduling). Lengths: the row's mean generated length G-avg, lognormal
with the row's sigma capped at T-max less the prompt (assumptions stated per row in the data file).
"""

from __future__ import annotations

import math

from .._data import scenarios_dir
from ..catalog.accelerators import hardware
from ..catalog.calibration import rl_calibration
from ..catalog.frameworks import framework_presets
from ..catalog.models import model
from ..catalog.rl_cases import nemo_rl_cases, refit_cases, verl_rl_cases
from ..errors import TcocalcError
from ..modes import MODES
from ..rl import rollouts as wl
from ..rl.solve import evaluate
from ..rl.switching import checkpoint_tensors, per_tensor_seconds
from ..rl.weight_sync import weight_sync_seconds
from ..scenario import Scenario, loads_scenario, scenario_from_dict

__all__ = ["RL_TOLERANCE", "nemo_case_scenario", "verl_case_scenario", "rl_validation_table", "rl_speedup_pairs",
           "rl_validation_summary", "rl_refit_table", "fit_ipc_refit"]

RL_TOLERANCE = 0.25
"""A row counts as reproduced within ±25% of its published step time (issue 12's target band)."""


def nemo_case_scenario(case: dict) -> Scenario:
    """The scenario of one NeMo RL row (see the module docstring)."""
    prompt = float(case["prompt_tokens"])
    sigma = case["response_sigma"]
    cap = case["max_seq_tokens"] - prompt
    batch = case["prompts_per_step"] * case["group_size"]
    generator = {"hardware": case["hardware"], "gpus": case["generator_gpus"], "precision": case["precision"],
                 "tp": case["generator_tp"], "cuda_graphs": case["cuda_graphs"],
                 "gpu_memory_utilization": case["gpu_memory_utilization"],
                 "multinode_nvlink": case["multinode_nvlink"]}
    if case["max_num_seqs"]:
        generator["max_num_seqs"] = case["max_num_seqs"]
    async_ = MODES[case["mode"]].streaming  # the NeMo RL tables: colocated or async
    return scenario_from_dict({
        "name": case["id"], "description": f"NeMo RL {case['version']} {case['recipe']}",
        "model": {"name": case["model"], "precision": case["precision"]},
        "trainer": {"hardware": case["hardware"], "gpus": case["trainer_gpus"],
                    "minibatches_per_step": max(1, batch // case["train_global_batch"]),
                    "tp": case["train_tp"], "pp": case["train_pp"], "ep": case["train_ep"], "cp": case["train_cp"],
                    "multinode_nvlink": case["multinode_nvlink"]},
        "generator": generator,
        "workload": {"prompts_per_step": case["prompts_per_step"], "group_size": case["group_size"],
                     "prompt_tokens": prompt, "response_tokens_sigma": sigma, "response_tokens_max": cap,
                     "response_tokens_mean": wl.uncapped_mean(case["generated_mean_tokens"], sigma, cap)},
        "orchestration": {"framework": "nemo-rl", "mode": "async" if async_ else "colocated",
                          "max_staleness": float(case["max_trajectory_age"]) if async_ else 1.0,
                          "filter_zero_advantage": bool(case["dynamic_sampling_multiplier"])},
    })


def verl_case_scenario(case: dict) -> Scenario:
    """The scenario of one verl row: its shipped scenario file at the row's split (and staleness bound, where the
    row gives one: RL-05's ``staleness_threshold`` sweep)."""
    f = scenarios_dir() / f"{case['scenario']}.toml"
    scn = loads_scenario(f.read_text()).with_split(case["trainer_gpus"], case["generator_gpus"])
    if case.get("max_staleness") is not None:
        scn = scn.with_values({"orchestration.max_staleness": case["max_staleness"]})
    return scn


def _row(case: dict, framework: str, scn: Scenario | None, what: str) -> dict:
    published = case["step_time_s"]
    pred = math.nan
    note = case.get("known_miss") or ""
    if scn is not None:
        try:
            pred = float(evaluate(scn).metrics["step_time_s"])
        except TcocalcError as exc:  # shown in the table as a miss with its reason, never dropped
            note = note or f"{type(exc).__name__}: {exc}"
    err = pred / published - 1.0 if pred == pred else math.nan
    mode = case["mode"]
    split = (f"colocated {case['trainer_gpus']}" if MODES[mode].shared_pool
             else f"{case['trainer_gpus']}:{case['generator_gpus']}")
    return {"id": case["id"], "framework": framework, "case": what, "mode": mode, "gpus": split,
            "published [s]": published, "predicted [s]": pred, "error [%]": 100.0 * err,
            "within": bool(abs(err) <= RL_TOLERANCE) if err == err else False, "known_miss": note,
            "source": case["source"]}


def rl_validation_table():
    """Every NeMo RL and verl row: published and predicted step time, error, within ±25% (DataFrame)."""
    import pandas as pd

    rows = []
    for c in nemo_rl_cases():
        scn = None if c["known_miss"] and c["prompt_tokens"] is None else nemo_case_scenario(c)
        what = (f"{c['model']} {c['hardware']} {c['precision']} {c['version']} {c['algorithm']}"
                + (f", {c['max_trajectory_age']}-step off" if MODES[c["mode"]].streaming else ", on-policy"))
        rows.append(_row(c, "NeMo RL", scn, what))
    for c in verl_rl_cases():
        bound = "" if c.get("max_staleness") is None else f", staleness {c['max_staleness']:g}"
        rows.append(_row(c, "verl", verl_case_scenario(c), f"Qwen2.5-Math-7B H20 bf16 DAPO, {c['mode']}{bound}"))
    df = pd.DataFrame(rows)
    for col in ("predicted [s]", "error [%]"):  # a row the model cannot represent: NA, never NaN
        df[col] = df[col].astype("Float64").mask(df[col].isna())
    return df


def _pair_key(case_row) -> tuple:
    return case_row["framework"], case_row["case"].split(",")[0]


def rl_speedup_pairs(table=None):
    """Each published on-policy run beside its off-policy twin (same framework version, model, hardware,
    precision; for verl the same total GPUs): speed-up ``T_on / T_off`` published and predicted, and whether the
    prediction is on the same side of 1.0 (DataFrame)."""
    import pandas as pd

    t = rl_validation_table() if table is None else table
    rows = []
    ok = t[t["predicted [s]"].notna()]
    on_policy = ok["mode"].map(lambda m: MODES[m].synchronous)  # the published tables: colocated against async
    for _, on in ok[on_policy].iterrows():
        twins = ok[ok["mode"].map(lambda m: MODES[m].streaming) & (ok.apply(_pair_key, axis=1) == _pair_key(on))]
        if on["framework"] == "verl":
            total = int(on["gpus"].split()[-1])
            sizes = twins["gpus"].map(lambda g: sum(int(x) for x in g.split(":")))
            twins = twins[sizes == total]
        for _, off in twins.iterrows():
            pub = on["published [s]"] / off["published [s]"]
            pred = on["predicted [s]"] / off["predicted [s]"]
            rows.append({"on-policy": on["id"], "off-policy": off["id"], "case": on["case"].split(",")[0],
                         "on GPUs": on["gpus"], "off GPUs": off["gpus"], "published speed-up": pub,
                         "predicted speed-up": pred, "right side": (pub > 1.0) == (pred > 1.0)})
    return pd.DataFrame(rows)


def rl_validation_summary(table=None, pairs=None) -> dict:
    """NeMo RL median |error| [%], share within ±25%, and pairs on the right side of 1.0 (counts)."""
    t = rl_validation_table() if table is None else table
    p = rl_speedup_pairs(t) if pairs is None else pairs
    nemo = t[(t["framework"] == "NeMo RL") & t["predicted [s]"].notna()]
    err = nemo["error [%]"].abs()
    return {"nemo_rows": int(len(nemo)), "nemo_median_abs_error_pct": float(err.median()),
            "nemo_within_share": float((err <= 100 * RL_TOLERANCE).mean()),
            "verl_median_abs_error_pct": float(t[t["framework"] == "verl"]["error [%]"].abs().median()),
            "pairs": int(len(p)), "pairs_right_side": int(p["right side"].sum()) if len(p) else 0}


def _ipc_refit_terms(case: dict) -> tuple[float, float]:
    """A colocated refit row's bf16 bytes per engine GPU [B] and checkpoint tensors per engine rank (count)."""
    m = model(case["model"])
    return 2.0 * m.params_total / case["instance_gpus"], float(checkpoint_tensors(m))


def _refit_prediction(case: dict) -> float:
    """Our weight-sync or in-process refit time for one published timing [s] (bf16 weights).

    Colocated rows are NeMo RL's CUDA-IPC refits (v0.3), the in-process refit term of the colocated switch
    (docs/rl-modeling.md §3.5) with the per-tensor load the ``nemo-rl`` preset charges on every refit
    (``bucketed_weight_load = false``): ``refit_ipc_fixed_s + W_g / r_IPC + n_tensors·t_tensor``, as the RL
    model charges it in a NeMo RL colocated step."""
    m, acc = model(case["model"]), hardware(case["hardware"])
    if case["transport"] == "colocated":
        cal = rl_calibration()
        per_gpu, tensors = _ipc_refit_terms(case)
        per_tensor = 0.0 if framework_presets()["nemo-rl"]["bucketed_weight_load"] else per_tensor_seconds()
        return cal["refit_ipc_fixed_s"] + per_gpu / cal["refit_ipc_bytes_per_s"] + tensors * per_tensor
    return weight_sync_seconds(m.params_total, acc, acc, case["trainer_gpus"], case["generator_gpus"],
                               instance_gpus=case["instance_gpus"], transport=case["transport"])


def fit_ipc_refit() -> dict:
    """Refit the colocated CUDA-IPC refit's rate and per-tensor cost from the refit rows marked ``fit`` with
    transport ``colocated`` (data/rl_cases_refit.csv: NeMo RL v0.3's Llama-3.1-8B and -70B refits, PR 638's
    DeepSeek-V3 refit).

    The model ``t = f + W_g·x + n·y`` (``f = refit_ipc_fixed_s``, ``x = 1/r_IPC``, ``y = t_tensor``) is linear
    in ``(x, y)``; dividing each row by its published time makes the residual the relative error
    ``t_pred/t − 1``, so the least-squares solution weighs a 5 s and a 35 s row alike (the table's ±25% band is
    relative). Returns ``{"refit_ipc_bytes_per_s": 1/x, "refit_ipc_per_tensor_s": y}``; the shipped values in
    data/rl_calibration.toml are this fit (tests check it)."""
    import numpy as np

    fixed = rl_calibration()["refit_ipc_fixed_s"]
    rows = [c for c in refit_cases() if c["transport"] == "colocated" and c["role"] == "fit"]
    if len(rows) < 2:
        raise TcocalcError("the colocated refit fit needs at least two rows with role fit in data/rl_cases_refit.csv")
    a = np.array([[b / c["published_s"], n / c["published_s"]] for c in rows for b, n in [_ipc_refit_terms(c)]])
    rhs = np.array([1.0 - fixed / c["published_s"] for c in rows])
    (x, y), *_ = np.linalg.lstsq(a, rhs, rcond=None)
    return {"refit_ipc_bytes_per_s": float(1.0 / x), "refit_ipc_per_tensor_s": float(y)}


def rl_refit_table():
    """Every published weight-sync and refit timing (data/rl_cases_refit.csv) beside the model's, with the
    error against the published midpoint and whether the row calibrated a constant (``role`` fit) (DataFrame)."""
    import pandas as pd

    rows = []
    for c in refit_cases():
        pred = _refit_prediction(c)
        err = pred / c["published_s"] - 1.0
        rows.append({"id": c["id"], "case": f"{c['model']} on {c['hardware']}: {c['what']}",
                     "transport": c["transport"],
                     "published [s]": c["published_s"], "range [s]": f"{c['low_s']:g}-{c['high_s']:g}",
                     "predicted [s]": pred, "error [%]": 100.0 * err, "within": bool(abs(err) <= RL_TOLERANCE),
                     "role": c["role"], "known_miss": c["known_miss"] or "", "source": c["source"]})
    return pd.DataFrame(rows)
