"""Predicted vs published for every validation case in ``data/validation_cases.toml``
(read and checked by :mod:`tcocalc.catalog.cases`).

``validation_table()`` is what ``tcocalc validate`` prints and what the tests assert: for each case the
published value, our prediction, the signed error ``pred/published - 1`` and whether it is within the
case's tolerance. Known misses are listed with their reason, never hidden.
"""

from __future__ import annotations

import numpy as np

from ..catalog.calibration import calibration_of
from ..catalog.cases import long_output_cases, validation_cases
from ..catalog.frameworks import benchmark_defaults, engine_kv_block_tokens
from ..errors import DataFileError
from .disaggregated import decode_pool_rate, engine_caps, prefill_pool_rate
from .engine_config import EngineConfig, Lengths
from .forward import forward_cost, resolve_inputs
from .parallel import Parallelism
from .serving import TRTLLM_BENCH, generation_throughput
from .speculative import speculation
from .training import training_throughput

__all__ = ["validation_cases", "predict_case", "validation_table", "long_output_table", "predict_long_output",
           "LONG_OUTPUT_TOLERANCE"]

LONG_OUTPUT_TOLERANCE = 0.25
"""Issue 13's band for every public generation row."""


def predict_case(case: dict, *, calibration=None) -> float:
    """Our prediction for one case, in the case's unit. ``calibration`` overrides the shipped factors
    (used by the calibration fit)."""
    par = Parallelism(**case["parallel"]) if "parallel" in case else None
    kind = case["kind"]
    if kind in ("prefill_pool", "decode_pool"):
        return _predict_pool(case, par, calibration)
    if kind in ("static_batch", "prefill_latency", "speculative_speedup"):
        return _predict_kernels(case, par, calibration)
    if kind in ("generation", "tpot", "ttft"):
        gpus = par.gpus if par else case.get("gpus", 1)
        budget = case.get("max_batched_tokens")
        block = case.get("kv_block_tokens", _bench_block() if budget == "trtllm-bench" else None)
        est = generation_throughput(case["model"], case["hardware"], gpus=gpus,
                                    prompt_tokens=case["prompt_tokens"], response_tokens=case["response_tokens"],
                                    precision=case["precision"], parallel=par, concurrency=case.get("concurrency"),
                                    kv_reservation=case.get("kv_reservation", "current"),
                                    max_batched_tokens=budget, kv_block_tokens=block, calibration=calibration)
        return {"generation": est.output_tokens_per_s_per_gpu, "tpot": est.tpot_s, "ttft": est.ttft_s}[kind]
    est = training_throughput(case["model"], case["hardware"], gpus=case["gpus"], seq_tokens=case["seq_tokens"],
                              precision=case["precision"], parallel=par,
                              global_batch_tokens=case["global_batch"] * case["seq_tokens"],
                              recompute=case.get("recompute"), calibration=calibration)
    if kind == "training":
        return est.tokens_per_s_per_gpu
    if kind == "step_s":  # seconds per optimizer step
        return est.global_batch_tokens / (est.tokens_per_s_per_gpu * case["gpus"])
    if kind == "mfu":
        return est.mfu
    if kind == "gpu_hours":
        return case["tokens"] / est.tokens_per_s_per_gpu / 3600.0
    raise DataFileError("data/validation_cases.toml", case["id"], "kind", f"unknown kind {kind!r}")


def _predict_kernels(case: dict, par, calibration) -> float:
    """Cases measured on fixed batches rather than in steady state:

    * ``static_batch``: output tokens/s of one static batch (TensorRT-LLM v0.5's gptSessionBenchmark): the batch's
      prefill, then ``response_tokens - 1`` decode steps at the growing context (each a
      :func:`~tcocalc.roofline.forward.forward_cost` step, as :func:`~tcocalc.roofline.forward.prefill` and
      :func:`~tcocalc.roofline.forward.decode` cost them; summed by :func:`_decode_sum`);
    * ``prefill_latency``: seconds to prefill ``batch`` prompts of ``prompt_tokens`` (time to first token alone);
    * ``speculative_speedup``: time per output token without speculation over with it, at ``concurrency``
      sequences on the pinned instance (:func:`~tcocalc.roofline.serving.generation_throughput`,
      ``speculative_tokens`` and ``acceptance_rate`` from the case)."""
    m, acc, precision, kv, par = resolve_inputs(case["model"], case["hardware"], case["precision"], None, par)
    cal = calibration_of(acc, calibration)
    p = float(case["prompt_tokens"])

    def seconds(**step) -> float:  # one step of the instance: its stage time over every pipeline stage
        return float(forward_cost(m, acc, cal, par, precision=precision, kv_precision=kv, **step)["stage_s"]) * par.pp

    if case["kind"] == "prefill_latency":
        return seconds(pre_seqs=case["batch"], pre_tokens=p)
    if case["kind"] == "static_batch":
        b, r = case["batch"], case["response_tokens"]
        decode = _decode_sum(lambda c: seconds(dec_seqs=b, dec_ctx=c), p, r - 1)
        return b * r / (seconds(pre_seqs=b, pre_tokens=p) + decode)
    gen = dict(gpus=par.gpus, prompt_tokens=p, response_tokens=case["response_tokens"], precision=precision,
               parallel=par, concurrency=case["concurrency"], calibration=cal)
    plain = generation_throughput(m, acc, **gen)
    spec = generation_throughput(m, acc, speculative_tokens=case["speculative_tokens"],
                                 acceptance_rate=case["acceptance_rate"], **gen)
    return plain.tpot_s / spec.tpot_s


def _decode_sum(step, first: float, n: int) -> float:
    """``Σ step(first + i)`` for ``i < n`` [s]: exact up to 65 steps, else the trapezoid rule over 65 contexts plus
    the end correction (Euler-Maclaurin), exact for a step time linear in its context and within 0.01% on GEN-15's
    static batches, whose step times are piecewise linear (each op is compute- or memory-bound)."""
    if n <= 65:
        return float(sum(step(first + i) for i in range(n)))
    ctx = np.linspace(first, first + n - 1, 65)
    t = np.array([step(c) for c in ctx])
    return float(np.sum((t[1:] + t[:-1]) / 2.0 * np.diff(ctx)) + (t[0] + t[-1]) / 2.0)


def _bench_block() -> int:
    """trtllm-bench's KV block (TensorRT-LLM ``tokens_per_block``, data/frameworks.toml)."""
    return benchmark_defaults("trtllm-bench")["kv_block_tokens"]


def predict_long_output(c: dict, *, calibration=None) -> float:
    """One long-output row's output tokens/s per GPU at its published layout, as trtllm-bench runs it: the capacity
    scheduler's full KV reservation (GUARANTEED_NO_EVICT) in whole ``tokens_per_block`` blocks and the benchmark's
    ``max_num_tokens`` heuristic (docs/sources.md §A.3)."""
    par = Parallelism(tp=c["tp"], pp=c["pp"], ep=c["ep"], dp=c["dp"])
    return generation_throughput(c["catalog_model"], c["hardware"], gpus=par.gpus, prompt_tokens=c["isl"],
                                 response_tokens=c["osl"], precision=c["precision"], parallel=par,
                                 kv_reservation="full", max_batched_tokens=TRTLLM_BENCH,
                                 kv_block_tokens=_bench_block(), calibration=calibration).output_tokens_per_s_per_gpu


def _predict_pool(case: dict, par, calibration) -> float:
    """One pool of a disaggregated deployment at its published instance: input tokens/s per GPU of a prefill
    instance, output tokens/s per GPU of a decode instance (:mod:`tcocalc.roofline.disaggregated`)."""
    m, acc, precision, kv, par = resolve_inputs(case["model"], case["hardware"], case["precision"],
                                                case.get("kv_precision"), par)
    cal = calibration_of(acc, calibration)
    chunk, max_seqs = engine_caps(case.get("engine", "vllm"), acc)
    if case["kind"] == "prefill_pool":
        rate = prefill_pool_rate(m, acc, cal, prompt_tokens=case["prompt_tokens"], precision=precision,
                                 kv_precision=kv, chunk_tokens=chunk, parallel=par)
    else:
        p, r = float(case["prompt_tokens"]), float(case["response_tokens"])
        engine = EngineConfig(precision=precision, kv_precision=kv, max_seqs_per_rank=max_seqs,
                              kv_block_tokens=engine_kv_block_tokens(case.get("engine", "vllm"), m, acc),
                              speculation=speculation(case.get("speculative_tokens"), case.get("acceptance_rate")))
        rate = decode_pool_rate(m, acc, cal, Lengths(prompt=p, response=r, context=p + r / 2.0), engine,
                                parallel=par, max_tpot_s=case.get("max_tpot_s"))
    if rate is None:
        raise DataFileError("data/validation_cases.toml", case["id"], "parallel", "the instance does not fit")
    return rate.tokens_per_s_per_gpu


def validation_table():
    """Every case: id, what, published, predicted, error and whether it is within tolerance (DataFrame)."""
    import pandas as pd

    rows = []
    for c in validation_cases():
        pred = predict_case(c)
        err = pred / c["published"] - 1.0
        what = f"{c['model']} on {c['hardware']} {c['precision']}"
        if "prompt_tokens" in c:
            what += f", {c['prompt_tokens']}" + (f"/{c['response_tokens']}" if "response_tokens" in c else "")
        if c["kind"] in ("prefill_pool", "decode_pool"):
            what += f", {c['kind'].replace('_', ' ')} (disaggregated)"
        if "batch" in c:
            what += f", {'static batch' if c['kind'] == 'static_batch' else 'prefill of'} {c['batch']}"
        if c["kind"] == "speculative_speedup":
            what += f", MTP speed-up at {c['acceptance_rate']:g} acceptance"
        rows.append({
            "id": c["id"], "kind": c["kind"], "case": what, "unit": c["unit"], "published": c["published"],
            "predicted": pred, "error [%]": 100.0 * err, "tolerance [%]": 100.0 * c["tolerance"],
            "within": abs(err) <= c["tolerance"], "known_miss": c.get("known_miss", ""), "source": c["source"],
        })
    return pd.DataFrame(rows)


def long_output_table():
    """TensorRT-LLM's 131 published long-output rows (data/validation_long_output.csv) at their published layout:
    published and predicted output tokens/s per GPU, error, within ±25%, known miss (DataFrame; a row the catalog
    cannot represent has NA, never NaN)."""
    import pandas as pd

    rows = []
    for c in long_output_cases():
        pred = predict_long_output(c) if c["catalog_model"] and c["hardware"] else None
        err = None if pred is None else pred / c["published_tok_s_per_gpu"] - 1.0
        rows.append({"id": c["id"], "case": f"{c['model']} on {c['hardware'] or '(not in the catalog)'} "
                                           f"{c['precision']}, "
                                           f"{c['isl']}/{c['osl']}, TP{c['tp']} PP{c['pp']} EP{c['ep']} DP{c['dp']}",
                     "page": c["page_version"], "published": c["published_tok_s_per_gpu"], "predicted": pred,
                     "error [%]": None if err is None else 100.0 * err,
                     "within": err is not None and abs(err) <= LONG_OUTPUT_TOLERANCE,
                     "known_miss": c["known_miss"], "source": c["source"]})
    df = pd.DataFrame(rows)
    for col in ("predicted", "error [%]"):
        df[col] = df[col].astype("Float64")
    return df
