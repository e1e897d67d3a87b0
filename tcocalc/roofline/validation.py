"""Predicted vs published for every validation case in ``data/validation_cases.toml``
(read and checked by :mod:`tcocalc.catalog.cases`).

``validation_table()`` is what ``tcocalc validate`` prints and what the tests assert: for each case the
published value, our prediction, the signed error ``pred/published - 1`` and whether it is within the
case's tolerance. Known misses are listed with their reason, never hidden.
"""

from __future__ import annotations

from ..catalog.cases import validation_cases
from ..errors import DataFileError

__all__ = ["validation_cases", "predict_case", "validation_table"]


def predict_case(case: dict, *, calibration=None) -> float:
    """Our prediction for one case, in the case's unit. ``calibration`` overrides the shipped factors
    (used by the calibration fit)."""
    from .parallel import Parallelism
    from .serving import generation_throughput
    from .training import training_throughput

    par = Parallelism(**case["parallel"]) if "parallel" in case else None
    kind = case["kind"]
    if kind in ("generation", "tpot", "ttft"):
        gpus = par.gpus if par else case.get("gpus", 1)
        est = generation_throughput(case["model"], case["hardware"], gpus=gpus,
                                    prompt_tokens=case["prompt_tokens"], response_tokens=case["response_tokens"],
                                    precision=case["precision"], parallel=par, concurrency=case.get("concurrency"),
                                    _calibration=calibration)
        return {"generation": est.output_tokens_per_s_per_gpu, "tpot": est.tpot_s, "ttft": est.ttft_s}[kind]
    est = training_throughput(case["model"], case["hardware"], gpus=case["gpus"], seq_tokens=case["seq_tokens"],
                              precision=case["precision"], parallel=par,
                              global_batch_tokens=case["global_batch"] * case["seq_tokens"], _calibration=calibration)
    if kind == "training":
        return est.tokens_per_s_per_gpu
    if kind == "gpu_hours":
        return case["tokens"] / est.tokens_per_s_per_gpu / 3600.0
    raise DataFileError("data/validation_cases.toml", case["id"], "kind", f"unknown kind {kind!r}")


def validation_table():
    """Every case: id, what, published, predicted, error and whether it is within tolerance (DataFrame)."""
    import pandas as pd

    rows = []
    for c in validation_cases():
        pred = predict_case(c)
        err = pred / c["published"] - 1.0
        what = f"{c['model']} on {c['hardware']} {c['precision']}"
        if "prompt_tokens" in c:
            what += f", {c['prompt_tokens']}/{c['response_tokens']}"
        rows.append({
            "id": c["id"], "kind": c["kind"], "case": what, "unit": c["unit"], "published": c["published"],
            "predicted": pred, "error [%]": 100.0 * err, "tolerance [%]": 100.0 * c["tolerance"],
            "within": abs(err) <= c["tolerance"], "known_miss": c.get("known_miss", ""), "source": c["source"],
        })
    return pd.DataFrame(rows)
