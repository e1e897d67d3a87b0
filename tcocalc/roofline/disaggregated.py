"""Prefill/decode disaggregated serving: separate prefill and decode pools joined by a KV transfer.

Splitwise (Patel et al., ISCA 2024), DistServe (Zhong et al., OSDI 2024) and the serving engines built on them
(SGLang with Mooncake/NIXL, TensorRT-LLM and Dynamo) run a request's prefill on one pool of instances, ship its
KV cache over the scale-out network, and decode it on another pool. Each pool then runs one kind of step:

* **prefill pool**: steps of ``C`` prompt tokens per attention rank (the engine's chunk / batched-token budget,
  data/frameworks.toml ``max_num_batched_tokens``); input tokens/s per GPU =
  ``dp·pp·⌈C/P⌉·P / (pp·t_stage)`` (:func:`~tcocalc.roofline.forward.forward_cost` with prefill only);
* **decode pool**: steps of ``b`` decoding sequences only (no interleaved prefill), ``b`` bounded by the KV pool
  at the running context (as :func:`~tcocalc.roofline.serving.generation_throughput`) and by the engine's running
  cap ``max_num_seqs`` per attention-DP rank; output tokens/s per GPU = ``b / (pp·t_stage)`` at the best ``b``;
* **KV transfer**: a request's cache, ``kv_bytes_per_token · P`` [B], leaves the ``pp·s`` GPUs that hold distinct
  shards (``s`` = the GQA KV heads' TP split; 1 for MLA, whose latent every TP rank replicates) over their
  scale-out NICs at ``scaleout_bandwidth · scaleout_efficiency`` (data/calibration.toml): that time adds to the
  time to first token, and all transfers together must fit in the pools' NICs.

With ``n_p`` prefill and ``n_d`` decode GPUs for prompts of ``P`` and responses of ``R`` tokens the pools carry
``X = min(n_p·x_p·R/P, n_d·x_d, NIC·R/(P·kv))`` output tokens/s (the slower pool binds; Splitwise §4); the split
is solved by scanning every whole number of prefill instances. Handshake and scheduling latencies of the
transfer are not modelled (no published figure in the reference files).
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np

from ..catalog.calibration import calibration_of
from ..catalog.frameworks import engine_kv_block_tokens, engine_max_num_batched_tokens, engine_max_num_seqs
from ..errors import InfeasibleError, ScenarioError
from .engine_config import EngineConfig, Lengths
from .forward import check_positive, check_whole, forward_cost, resolve_inputs
from .parallel import Layouts, Parallelism
from .serving import (
    candidate_serving_layouts,
    check_kv_reservation,
    fewest_stages,
    kv_bytes_per_seq_per_gpu,
    kv_pool_per_gpu,
    serve,
)
from .speculative import speculation

__all__ = ["DisaggregatedEstimate", "PoolRate", "disaggregated_throughput", "prefill_pool_rate",
           "decode_pool_rate", "decode_pool_rates", "kv_transfer_seconds", "engine_caps"]


@dataclass(frozen=True)
class PoolRate:
    """One pool's instance and its steady rate per GPU: input tokens/s for prefill, output tokens/s for decode.
    ``step_s`` is one step of the instance [s], ``batch`` the sequences it holds per step, ``tokens_per_step`` the
    tokens a decoding sequence gains per step (1; more with speculative decoding)."""

    parallel: Parallelism
    tokens_per_s_per_gpu: float
    step_s: float
    batch: float
    tokens_per_step: float = 1.0


@dataclass(frozen=True)
class DisaggregatedEstimate:
    """Steady-state disaggregated serving on ``prefill_gpus + decode_gpus`` GPUs.

    ``idle_gpus``: what is left over when neither pool's instance fits the rest.
    ``output_tokens_per_s`` [token/s] over both pools and ``output_tokens_per_s_per_gpu`` over all their GPUs;
    ``input_tokens_per_s`` [token/s] prefilled; each pool's capacity per GPU (``prefill``, ``decode``);
    ``kv_bytes_per_request`` [B] and ``kv_transfer_s`` [s] per request; ``ttft_s`` = prefill step + KV transfer +
    one decode step [s]; ``tpot_s`` = decode step [s]; ``bound`` is "prefill pool", "decode pool" or "kv transfer";
    ``aggregated_output_tokens_per_s_per_gpu`` the same GPUs serving aggregated (prefill interleaved with decode,
    :func:`generation_throughput`), ``None`` where no aggregated instance fits them.
    """

    output_tokens_per_s: float
    output_tokens_per_s_per_gpu: float
    input_tokens_per_s: float
    prefill_gpus: int
    decode_gpus: int
    idle_gpus: int
    prefill: PoolRate
    decode: PoolRate
    kv_bytes_per_request: float
    kv_transfer_s: float
    ttft_s: float
    tpot_s: float
    bound: str
    aggregated_output_tokens_per_s_per_gpu: float | None
    tier: str

    @property
    def speedup_vs_aggregated(self) -> float | None:
        """Output per GPU disaggregated / aggregated on the same GPUs (``None`` when aggregated does not fit)."""
        agg = self.aggregated_output_tokens_per_s_per_gpu
        return None if not agg else self.output_tokens_per_s_per_gpu / agg


def _layouts(m, acc, cal, precision, kv, seq_tokens, parallel, max_gpus):
    if parallel is not None:
        return [parallel]
    cands = [q for q in candidate_serving_layouts(m, acc) if max_gpus is None or q.gpus <= max_gpus]
    return fewest_stages(cands, m, acc, cal, precision, kv, seq_tokens)


def prefill_pool_rate(m, acc, cal, *, prompt_tokens, precision, kv_precision, chunk_tokens,
                      parallel=None, max_gpus=None) -> PoolRate | None:
    """The prefill instance with the most input tokens/s per GPU (or the pinned one) running steps of
    ``⌈chunk/P⌉`` prompts per attention rank, each holding the batch's KV; ``None`` when none fits."""
    p = float(prompt_tokens)
    cands = []  # (layout, prompts per step) of each layout that holds a step
    for par in _layouts(m, acc, cal, precision, kv_precision, p, parallel, max_gpus):
        _, pool = kv_pool_per_gpu(m, acc, cal, par, precision)
        per_seq = float(kv_bytes_per_seq_per_gpu(m, par, kv_precision, p))
        seqs_rank = max(1.0, np.ceil(chunk_tokens / p))
        seqs_rank = min(seqs_rank, np.floor(pool / per_seq) if per_seq > 0 else seqs_rank)
        if pool <= 0 or seqs_rank < 1:
            continue
        cands.append((par, seqs_rank * par.dp * par.pp))
    if not cands:
        return None
    lay = Layouts.of([c[0] for c in cands]).column()
    res = forward_cost(m, acc, cal, lay, precision=precision, kv_precision=kv_precision,
                       pre_seqs=np.array([[c[1]] for c in cands], dtype=float), pre_tokens=p)  # all layouts at once
    best = None
    for j, (par, seqs) in enumerate(cands):
        step = float(res["stage_s"][j, 0]) * par.pp
        rate = seqs * p / step / par.gpus
        if best is None or rate > best.tokens_per_s_per_gpu:
            best = PoolRate(parallel=par, tokens_per_s_per_gpu=float(rate), step_s=step, batch=float(seqs))
    return best


def decode_pool_rate(m, acc, cal, lengths: Lengths, engine: EngineConfig, **kw) -> PoolRate | None:
    """The decode instance with the most output tokens/s per GPU (or the pinned one), ``None`` when none holds a
    sequence (or meets the TPOT limit): the best of :func:`decode_pool_rates`, which takes the same arguments."""
    return _fastest(decode_pool_rates(m, acc, cal, lengths, engine, **kw))


def _fastest(rates: dict) -> PoolRate | None:
    """The instance of ``rates`` (size -> PoolRate) with the most tokens/s per GPU, ``None`` when it is empty."""
    return max(rates.values(), key=lambda q: q.tokens_per_s_per_gpu, default=None)


def decode_pool_rates(m, acc, cal, lengths: Lengths, engine: EngineConfig, *, parallel=None, max_gpus=None,
                      max_tpot_s=None) -> dict[int, PoolRate]:
    """The decode instance of each size [GPUs] with the most output tokens/s per GPU (or the pinned one): decode-only
    steps of ``b`` sequences at the running context ``lengths.context`` (``P + R/2``), ``b`` within the KV pool
    (reserving the running context, or prompt + whole output with ``engine.kv_reservation="full"``, in whole
    ``engine.kv_block_tokens`` blocks) and ``engine.max_seqs_per_rank`` per attention-DP rank
    (:func:`~tcocalc.roofline.serving.serve` per instance, the engine's ``interleaved_prefill`` turned off), at
    most ``max_tpot_s`` per output token when given, speculating as ``engine.speculation`` says."""
    decode = replace(engine, interleaved_prefill=False)
    best: dict[int, PoolRate] = {}
    for par in _layouts(m, acc, cal, engine.precision, engine.kv_precision, lengths.sequence, parallel, max_gpus):
        try:
            est = serve(m, acc, cal, lengths, decode, gpus=par.gpus, parallel=par, max_tpot_s=max_tpot_s)
        except InfeasibleError:  # not even one sequence fits this instance (or meets the TPOT limit)
            continue
        if par.gpus not in best or est.output_tokens_per_s_per_gpu > best[par.gpus].tokens_per_s_per_gpu:
            best[par.gpus] = PoolRate(parallel=par, tokens_per_s_per_gpu=est.output_tokens_per_s_per_gpu,
                                      step_s=est.tpot_s * est.tokens_per_step, batch=est.concurrency,
                                      tokens_per_step=est.tokens_per_step)
    return best


def kv_transfer_seconds(m, acc, cal, par: Parallelism, kv_precision: str, prompt_tokens: float) -> float:
    """Seconds to ship one request's ``prompt_tokens`` of KV cache from a prefill instance ``par``: the bytes
    over the ``pp·s`` GPUs holding distinct shards (``s`` = GQA heads' TP split, 1 for MLA), each on its
    scale-out NIC at ``scaleout_bandwidth · scaleout_efficiency`` (module docstring)."""
    senders = par.pp * (1 if m.attention == "mla" else min(par.tp, m.num_kv_heads))
    nic = acc.scaleout_bytes_per_s * cal.scaleout_efficiency
    return m.kv_bytes_per_token(kv_precision) * float(prompt_tokens) / (senders * nic)


def engine_caps(engine: str, acc) -> tuple[float, float]:
    """(tokens per prefill step, sequences per attention-DP rank) of ``engine`` on ``acc`` from its documented
    defaults (data/frameworks.toml): :func:`~tcocalc.catalog.frameworks.engine_max_num_batched_tokens` and
    :func:`~tcocalc.catalog.frameworks.engine_max_num_seqs`."""
    return float(engine_max_num_batched_tokens(engine, acc)), float(engine_max_num_seqs(engine, acc))


def _pinned(m, acc, precision, kv, par):
    """A pinned instance as a Parallelism, checked against the model (ScenarioError naming the degree)."""
    if isinstance(par, dict):
        par = Parallelism(**par)
    if par is not None:
        resolve_inputs(m, acc, precision, kv, par)
    return par


def _smallest(rate_fn, m, acc, cal, precision, kv, seq, pinned) -> int | None:
    """GPUs of the smallest instance of a pool that holds the model and its batch (``None``: none does)."""
    for q in sorted(_layouts(m, acc, cal, precision, kv, seq, pinned, None), key=lambda q: (q.gpus, q.pp)):
        if rate_fn(q) is not None:
            return q.gpus
    return None


def _best_split(g: int, prefill_gpus, pre: PoolRate, decs: dict, nic_out: float, out_per_in: float) -> tuple:
    """(output tokens/s, prefill GPUs, decode GPUs, each side's output tokens/s, decode pool rate) of the best
    whole-instance split of ``g`` GPUs, over every prefill count (:func:`_prefill_counts`) and every decode instance
    size in ``decs`` (size -> best instance of that size): the instance with the most output per GPU can leave too
    few GPUs for the prefill its replicas need (DeepSeek-V3 at 8,192/1,024 on 72 GB200: an EP64 decode instance
    leaves 8 GPUs to prefill), so smaller ones are weighed too. ``nic_out``: output tokens/s one GPU's NIC share
    carries in KV transfers; ``out_per_in``: output over prompt tokens per request. The first split error is
    raised when none fits."""
    best, error = None, None
    for dec in sorted(decs.values(), key=lambda q: -q.tokens_per_s_per_gpu):
        try:
            counts = _prefill_counts(prefill_gpus, g, pre.parallel, dec.parallel.gpus)
        except InfeasibleError as exc:
            error = error or exc
            continue
        n_p = counts * pre.parallel.gpus
        n_d = (g - n_p) // dec.parallel.gpus * dec.parallel.gpus
        by_pre = n_p * pre.tokens_per_s_per_gpu * out_per_in
        by_dec = n_d * dec.tokens_per_s_per_gpu
        by_nic = np.minimum(n_p, n_d) * nic_out  # requests/s the smaller side's NICs carry, in output tokens
        out = np.minimum(np.minimum(by_pre, by_dec), by_nic)
        i = int(np.argmax(out))
        if best is None or out[i] > best[0]:
            parts = {"prefill pool": by_pre[i], "decode pool": by_dec[i], "kv transfer": by_nic[i]}
            best = (float(out[i]), int(n_p[i]), int(n_d[i]), parts, dec)
    if best is None:
        raise error
    return best


def _prefill_counts(prefill_gpus, g: int, pre: Parallelism, d: int) -> np.ndarray:
    """Prefill instances to try: the pinned pool's (checked: a whole multiple of the instance, leaving a decode
    instance) or every whole number that leaves one; InfeasibleError when one of each does not fit ``g``."""
    a = pre.gpus
    if a + d > g:
        raise InfeasibleError(f"gpus: {g} GPUs cannot hold a prefill instance ({a} GPUs, {pre.label()}) and a "
                              f"decode instance ({d} GPUs); use at least {a + d}", min_gpus=a + d)
    if prefill_gpus is None:
        return np.arange(1, (g - d) // a + 1)
    n_p = check_positive("prefill_gpus", prefill_gpus)
    if n_p != int(n_p) or int(n_p) % a:
        raise ScenarioError("prefill_gpus", f"must be a whole multiple of the prefill instance ({a} GPUs, "
                                            f"{pre.label()}), got {prefill_gpus!r}")
    if g - int(n_p) < d:
        raise InfeasibleError(f"prefill_gpus: {int(n_p)} of {g} GPUs leave fewer than one decode instance "
                              f"({d} GPUs); use at most {(g - d) // a * a}", min_gpus=int(n_p) + d)
    return np.array([int(n_p) // a])


def disaggregated_throughput(model, hw, *, gpus, prompt_tokens, response_tokens, precision="bf16",
                             kv_precision=None, prefill_gpus=None, prefill_parallel=None, decode_parallel=None,
                             engine="vllm", kv_reservation="current", theoretical=False,
                             max_tpot_s=None, speculative_tokens=None, acceptance_rate=None,
                             draft_layers=1.0, calibration=None) -> DisaggregatedEstimate:
    """Steady-state output tokens/s of ``gpus`` GPUs split into a prefill and a decode pool (module docstring).

    Parameters
    ----------
    model, hw : names or catalog entries.
    gpus : int [GPUs]                   both pools together.
    prompt_tokens, response_tokens : [tokens]
    precision, kv_precision : as :func:`~tcocalc.roofline.serving.generation_throughput`.
    prefill_gpus : int [GPUs], optional the prefill pool, a multiple of its instance; default: solved for the
        most output per GPU (every whole number of prefill instances is tried).
    prefill_parallel, decode_parallel : Parallelism of one instance of each pool; default: searched per pool.
    engine : "vllm" | "sglang"          whose documented chunk (``max_num_batched_tokens``) sizes the prefill step
        and whose running cap (``max_num_seqs``, per attention-DP rank) bounds the decode batch.
    kv_reservation : "current" | "full" as :func:`generation_throughput`.
    max_tpot_s : [s] per output token, optional: the decode pool (and the aggregated comparison) keeps only batches
        that meet it (:func:`~tcocalc.roofline.serving.generation_throughput`'s ``max_tpot_s``).
    speculative_tokens, acceptance_rate, draft_layers : speculative decoding in the decode pool and the aggregated
        comparison (:func:`~tcocalc.roofline.serving.generation_throughput`; default none).
    calibration : a Calibration for ``hw`` or a CalibrationSet, as
        :func:`~tcocalc.roofline.serving.generation_throughput`'s (default: the shipped factors).

    Raises
    ------
    ScenarioError   a bad argument (names it).
    InfeasibleError too few GPUs for one instance of each pool, or a pinned pool that leaves none for the other;
        names the smallest count that works.
    """
    g = check_whole("gpus", gpus)
    p = check_positive("prompt_tokens", prompt_tokens)
    r = check_positive("response_tokens", response_tokens)
    check_kv_reservation(kv_reservation)
    max_tpot = None if max_tpot_s is None else check_positive("max_tpot_s", max_tpot_s)
    spec = speculation(speculative_tokens, acceptance_rate, draft_layers)
    m, acc, precision, kv, _ = resolve_inputs(model, hw, precision, kv_precision, None)
    prefill_parallel, decode_parallel = (_pinned(m, acc, precision, kv, q) for q in (prefill_parallel, decode_parallel))
    cal = calibration_of(acc, calibration, theoretical=theoretical)
    chunk, max_seqs = engine_caps(engine, acc)
    eng = EngineConfig(precision=precision, kv_precision=kv, kv_reservation=kv_reservation,
                       kv_block_tokens=engine_kv_block_tokens(engine, m, acc), max_seqs_per_rank=max_seqs,
                       speculation=spec)
    lengths = Lengths(prompt=p, response=r, context=p + r / 2.0)

    def pre_rate(par, max_gpus):
        return prefill_pool_rate(m, acc, cal, prompt_tokens=p, precision=precision, kv_precision=kv,
                                 chunk_tokens=chunk, parallel=par, max_gpus=max_gpus)

    def dec_rates(par, max_gpus, tpot=max_tpot):
        return decode_pool_rates(m, acc, cal, lengths, eng, parallel=par, max_gpus=max_gpus, max_tpot_s=tpot)

    def dec_rate(par, max_gpus):
        return _fastest(dec_rates(par, max_gpus))

    decs = dec_rates(decode_parallel, g - 1)
    pre, dec = pre_rate(prefill_parallel, g - 1), _fastest(decs)
    if dec is None and max_tpot is not None and _fastest(dec_rates(decode_parallel, g - 1, None)) is not None:
        raise InfeasibleError(f"max_tpot_s: no decode instance of {m.name} ({precision}) on {acc.name} within "
                              f"{g - 1} GPUs decodes within {max_tpot * 1e3:.3g} ms per output token; relax it or "
                              f"use a faster GPU (generation_throughput names the fastest layout)")
    if pre is None or dec is None:
        if (pre is None and prefill_parallel is not None) or (dec is None and decode_parallel is not None):
            which = "prefill_parallel" if pre is None else "decode_parallel"
            raise InfeasibleError(f"{m.name} ({precision}) on {acc.name}: the pinned {which} does not hold the "
                                  f"model and one sequence; leave it unset to search")
        a_min = _smallest(lambda q: pre_rate(q, None), m, acc, cal, precision, kv, p, prefill_parallel)
        d_min = _smallest(lambda q: dec_rate(q, None), m, acc, cal, precision, kv, p + r, decode_parallel)
        need = None if a_min is None or d_min is None else a_min + d_min
        hint = f"use at least {need} GPUs" if need else "use a lower precision or hardware with more memory"
        raise InfeasibleError(f"gpus: {m.name} ({precision}) on {g} x {acc.name}: no prefill and decode instance "
                              f"fit together in {g} GPUs; {hint}", min_gpus=need)
    kv_req = m.kv_bytes_per_token(kv) * p
    nic = acc.scaleout_bytes_per_s * cal.scaleout_efficiency
    out, n_p, n_d, parts, dec = _best_split(g, prefill_gpus, pre, decs, nic / kv_req * r, r / p)
    t_kv = kv_transfer_seconds(m, acc, cal, pre.parallel, kv, p)
    try:  # the same GPUs aggregated: the same engine (its chunk as the step budget), the same SLA
        agg = serve(m, acc, cal, lengths, replace(eng, max_batched_tokens=float(chunk)), gpus=g, max_tpot_s=max_tpot)
        agg_rate = agg.output_tokens_per_s_per_gpu
    except InfeasibleError:
        agg_rate = None
    return DisaggregatedEstimate(
        output_tokens_per_s=out, output_tokens_per_s_per_gpu=out / g,
        input_tokens_per_s=out * p / r, prefill_gpus=n_p, decode_gpus=n_d, idle_gpus=g - n_p - n_d,
        prefill=pre, decode=dec, kv_bytes_per_request=float(kv_req), kv_transfer_s=t_kv,
        ttft_s=pre.step_s + t_kv + dec.step_s, tpot_s=dec.step_s / dec.tokens_per_step,
        bound=min(parts, key=parts.get),
        aggregated_output_tokens_per_s_per_gpu=agg_rate, tier=cal.tier)
