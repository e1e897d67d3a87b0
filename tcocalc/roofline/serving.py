"""Steady-state generation throughput with continuous batching (offline, max-throughput serving).

RL rollout is offline max-throughput generation (validation cases §2), so this is the generator's
capacity model. For fixed prompt length ``P`` and response length ``R``:

* concurrency per instance is bounded by the KV pool: ``b_max = dp · ⌊pool / kv(P + R/2)⌋`` where the
  pool is ``u_kv · (HBM − weights − workspace)`` per GPU (TensorRT-LLM's KV fraction of free memory)
  and a running sequence holds on average ``P + R/2`` tokens of KV (docs/rl-modeling.md §4.1);
* each step decodes one token for each of ``b`` sequences at mean context ``P + R/2`` and, since
  ``b/R`` sequences finish per step, prefills ``b·P/R`` prompt tokens of newcomers (in-flight batching
  with chunked prefill mixes both into one forward pass);
* output tokens/s per instance = ``b / TPOT`` with ``TPOT`` the step time (:mod:`tcocalc.kernels`).

Unless given, the layout (TP, attention-DP, EP, PP) and the concurrency are chosen to maximise output
tokens/s per GPU; the search is vectorised over concurrency.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..catalog.calibration import Calibration, calibration_of
from ..catalog.frameworks import benchmark_defaults
from ..catalog.models import ModelArch
from ..errors import InfeasibleError, ScenarioError
from ..units import bytes_per_element
from .engine_config import EngineConfig, Lengths
from .forward import (
    check_positive,
    check_whole,
    forward_cost,
    resolve_inputs,
)
from .parallel import Layouts, Parallelism
from .speculative import speculation

__all__ = ["GenerationEstimate", "generation_throughput", "serve", "best_instance", "continuous_batching_step",
           "StepBudget", "candidate_serving_layouts", "fewest_stages",
           "kv_pool_per_gpu", "check_kv_reservation", "kv_tokens_held", "inference_memory_per_gpu",
           "kv_bytes_per_seq_per_gpu"]

_POW2 = (1, 2, 4, 8, 16, 32, 64)


@dataclass(frozen=True)
class GenerationEstimate:
    """Steady-state generation on ``gpus`` GPUs.

    Attributes: ``output_tokens_per_s`` (all replicas), ``output_tokens_per_s_per_gpu``, ``concurrency``
    (sequences in flight over all replicas), ``ttft_s`` (time to first token under load), ``tpot_s``
    (time per output token = step time), ``parallel`` (one instance), ``replicas``,
    ``memory_per_gpu_bytes`` (weights + KV in use + workspace), ``max_concurrency`` (KV-bound),
    ``bound``, ``tier`` ("calibrated" or "theoretical") and ``tokens_per_step`` (tokens a decoding sequence gains
    per step: 1, more with speculative decoding, where ``tpot_s`` is the step time over it).
    """

    output_tokens_per_s: float
    output_tokens_per_s_per_gpu: float
    concurrency: float
    ttft_s: float
    tpot_s: float
    parallel: Parallelism
    replicas: int
    memory_per_gpu_bytes: float
    max_concurrency: float
    weights_per_gpu_bytes: float
    bound: str
    tier: str
    tokens_per_step: float = 1.0


def candidate_serving_layouts(m, acc, gpus: int | None = None) -> list[Parallelism]:
    """Serving-instance layouts worth searching: TP and attention-DP inside the scale-up domain
    (powers of two), EP over the stage for MoE models, PP when a stage alone cannot hold the model."""
    out = []
    dom = acc.scaleup_domain_gpus
    for tp in _POW2:
        if tp > dom or m.num_attention_heads % tp:
            continue
        for dp in _POW2 if m.is_moe else (1,):
            if tp * dp > dom:
                continue
            eps = sorted({1, tp * dp}) if m.is_moe else [1]
            for ep in eps:
                if m.is_moe and m.num_experts % ep:
                    continue
                for pp in _POW2[:6]:
                    if pp > m.num_layers:
                        continue
                    par = Parallelism(tp=tp, dp=dp, ep=ep, pp=pp)
                    if gpus is not None and gpus % par.gpus:
                        continue
                    out.append(par)
    return out


def fewest_stages(layouts, m, acc, cal, precision, kv_precision, seq_tokens):
    """Keep, for each (TP, DP, EP), only the smallest PP that holds the weights and one full sequence:
    serving runtimes add pipeline stages only when a stage cannot hold the model."""
    chosen: dict[tuple[int, int, int], Parallelism] = {}
    for par in sorted(layouts, key=lambda q: q.pp):
        key = (par.tp, par.dp, par.ep)
        if key in chosen:
            continue
        _, pool = kv_pool_per_gpu(m, acc, cal, par, precision)
        if pool > float(kv_bytes_per_seq_per_gpu(m, par, kv_precision, seq_tokens)):
            chosen[key] = par
    return list(chosen.values())


def kv_bytes_per_seq_per_gpu(m: ModelArch, par: Parallelism, kv_precision: str, ctx) -> np.ndarray:
    """KV bytes one sequence of ``ctx`` tokens holds on each GPU of its attention rank [B].

    GQA heads are split over TP (replicated once TP exceeds the KV heads); the MLA latent is replicated
    over TP; layers are split over PP.
    """
    split = 1 if m.attention == "mla" else np.minimum(par.tp, m.num_kv_heads)
    return m.kv_bytes_per_token(kv_precision) * np.asarray(ctx, dtype=float) / (split * par.pp)


def inference_memory_per_gpu(m: ModelArch, par: Parallelism, precision: str, extra_layers: float = 0.0) -> float:
    """Weight bytes on the most loaded GPU of a serving instance [B].

    Attention and dense MLP weights are split over TP (replicated over attention-DP); routed experts are
    spread over the ``tp·dp`` GPUs of a stage; layers over PP; the larger of embedding and LM head (split
    over TP) sits on an end stage, with ``extra_layers`` more layers of the model's shape (a speculative draft
    module next to the LM head it shares, :mod:`tcocalc.roofline.speculative`).
    """
    beta = bytes_per_element(precision)
    layers = m.num_layers / par.pp + extra_layers
    dense_share = m.num_dense_layers / m.num_layers
    per_layer = m.attention_params_per_layer / par.tp
    per_layer += dense_share * (m.dense_mlp_params if m.num_dense_layers else 0.0) / par.tp
    if m.is_moe:
        per_layer += (1 - dense_share) * (m.moe_always_on_params_per_layer / par.tp
                                          + m.num_experts * m.expert_params / par.stage_gpus)
    ends = max(m.embedding_params, m.lm_head_params) / par.tp
    return float((layers * per_layer + ends) * beta)


def kv_pool_per_gpu(m, acc, cal, par, precision, draft_layers=0.0):
    """(weight bytes, KV pool bytes) on the most loaded GPU of instance ``par``: the pool is ``kv_memory_fraction``
    of what weights and workspace leave (data/calibration.toml; module docstring). ``draft_layers``: a speculative
    draft module's layers, whose weights sit there too."""
    weights = inference_memory_per_gpu(m, par, precision, draft_layers)
    free = acc.hbm_bytes - weights - cal.inference_workspace_bytes
    return weights, cal.kv_memory_fraction * free


def check_kv_reservation(value) -> str:
    """``kv_reservation`` checked: "current" or "full" (:func:`generation_throughput`), else ScenarioError."""
    if value not in ("current", "full"):
        raise ScenarioError("kv_reservation", f"must be 'current' or 'full', got {value!r}")
    return value


TRTLLM_BENCH = "trtllm-bench"
"""``max_batched_tokens`` value: TensorRT-LLM's benchmark sizes the budget itself (:func:`_rank_budget`)."""


def _rank_budget(budget, seqs_per_rank: float, prompt_tokens: float, response_tokens: float) -> float:
    """Tokens per step one rank's scheduler may batch [tokens]: ``budget`` itself, or for ``"trtllm-bench"`` the
    benchmark's heuristic ``max_num_tokens = min(max(bs·(1 + ISL/OSL), 2048), 32768)`` with ``bs`` the KV-bound
    requests per rank (NVIDIA/TensorRT-LLM@a7e572fb ``tensorrt_llm/bench/build/tuning.py``; docs/sources.md
    §A.3; the rounding steps are left out; the bounds from data/frameworks.toml ``[benchmark.trtllm-bench]``)."""
    if budget != TRTLLM_BENCH:
        return float(budget)
    caps = benchmark_defaults(TRTLLM_BENCH)
    return float(min(max(seqs_per_rank * (1.0 + prompt_tokens / response_tokens), caps["min_num_tokens"]),
                     caps["max_num_tokens"]))


def continuous_batching_step(m, acc, cal, lay, engine: EngineConfig, lengths: Lengths, dec_seqs,
                             budget: StepBudget | None = None) -> dict:
    """Expected cost of one step of continuous batching (:func:`~tcocalc.roofline.forward.forward_cost`'s keys):
    ``dec_seqs`` sequences decode at the running context ``lengths.context`` while newcomers' prompts are
    prefilled inside the steps (docs/rl-modeling.md §4.3); ``engine.interleaved_prefill = False`` leaves them out
    (a decode instance of a disaggregated deployment, whose prompts arrive prefilled).

    ``budget=None``: every step prefills its share of the prompts, ``b·P/R`` tokens (the spread-out mean).

    ``budget`` (:class:`StepBudget`) = the engine's tokens per step (vLLM ``max_num_batched_tokens``, SGLang
    ``chunked_prefill_size``, TensorRT-LLM ``max_num_tokens``; docs/sources.md §A.1-§A.3): prompts arrive whole and
    are prefilled in as few steps as the budget allows [derived]. A sequence finishes every ``R`` steps, so a
    pipeline stage's step admits ``λ = b·s/(R·pp)`` prompt pieces on average (``s`` = ``lengths.segments`` pieces of
    ``P/s`` tokens, the turns of an agentic trajectory), their count Poisson; the prefill demand is ``λ·P/s`` tokens
    per step. A step that prefills carries ``τ`` tokens: the pieces that arrived together, ``(P/s)·λ/(1 - e^-λ)`` on
    average, or a chunk of what the budget leaves beside the decode tokens (``budget - b/pp``) when that is smaller.
    Such steps are a share ``demand/τ`` (at most 1: a budget at or below the demand prefills in every step, the
    spread-out mean) and the rest only decode. Each op costs max(compute, memory) in its step, so this charges what
    the mean hides: a step that prefills a prompt is compute-bound and reads nearly all of a MoE layer's experts,
    while the steps between read only what the decode tokens touch. A piece attends to the cached context before it,
    ``(P - P/s)/2`` on average. ``budget.per_instance`` is per instance (one per layout row; attention-DP ranks each
    schedule their own); ``budget.chunk_cap`` [tokens] is the largest piece one rank prefills in a step.

    ``engine.speculation`` (a :class:`~tcocalc.roofline.speculative.Speculation`): every step verifies ``1 + n``
    positions per decoding sequence after ``n`` draft passes (:mod:`tcocalc.roofline.speculative`), and a sequence
    gains ``E`` tokens per step (the caller divides), so a sequence finishes, and a newcomer's prompt arrives,
    every ``R/E`` steps."""
    pp = lay.pp
    spec = engine.speculation
    prec = dict(precision=engine.precision, kv_precision=engine.kv_precision)
    dec_seqs = np.asarray(dec_seqs, dtype=float)
    dec_ctx = lengths.context
    draft = None
    if spec is not None:  # n draft passes of the draft module, one token per sequence each
        one = forward_cost(m, acc, cal, lay, **prec, dec_seqs=dec_seqs, dec_ctx=dec_ctx, layers=spec.draft_layers)
        draft = {k: spec.draft_tokens * v for k, v in one.items()}

    def step(**prefill):
        res = forward_cost(m, acc, cal, lay, **prec, dec_seqs=dec_seqs, dec_ctx=dec_ctx,
                           dec_tokens=1.0 if spec is None else 1.0 + spec.draft_tokens, **prefill)
        return res if draft is None else {k: v + draft[k] for k, v in res.items()}

    prompt_tokens = lengths.prompt if engine.interleaved_prefill else 0.0
    response_tokens = lengths.response / engine.tokens_per_step  # steps a sequence stays
    if not prompt_tokens:
        return step()
    if budget is None:
        return step(pre_seqs=dec_seqs / response_tokens, pre_tokens=prompt_tokens)
    per_instance = budget.per_instance
    piece = prompt_tokens / lengths.segments
    lam = dec_seqs * lengths.segments / (response_tokens * pp)
    demand = lam * piece
    with np.errstate(divide="ignore", invalid="ignore"):
        together = np.where(lam > 0, piece * lam / -np.expm1(-lam), piece)
    rows = 1.0 if spec is None else 1.0 + spec.draft_tokens  # a verifying sequence takes 1 + n of the budget
    room = np.maximum(per_instance - dec_seqs * rows / pp, 1.0)
    tau = np.minimum(together, room)
    busy = np.minimum(demand / tau, 1.0)
    tau = np.where(busy >= 1.0, demand, tau)
    decode_only = step()
    cap = budget.chunk_cap if budget.chunk_cap is not None else float(np.min(per_instance))
    chunk = min(piece, float(cap))  # one request's tokens in a step
    mixed = step(pre_seqs=tau / chunk * pp, pre_tokens=chunk, pre_ctx=(prompt_tokens - chunk) / 2.0)
    return {k: (1.0 - busy) * decode_only[k] + busy * mixed[k] for k in decode_only}


@dataclass(frozen=True)
class StepBudget:
    """The engine's token budget per step as :func:`continuous_batching_step` applies it: ``per_instance``
    [tokens] per layout row (rows of an ``(n, 1)`` array, or a scalar) and ``chunk_cap`` [tokens], the largest
    piece one rank prefills in a step (``None``: the smallest ``per_instance``)."""

    per_instance: np.ndarray
    chunk_cap: float | None = None


@dataclass(frozen=True)
class _Job:
    """What :func:`serve` is asked: the model on ``gpus`` accelerators under ``cal``, one request's lengths and the
    engine's settings (the values every private helper below takes)."""

    m: object
    acc: object
    cal: Calibration
    lengths: Lengths
    engine: EngineConfig
    gpus: int


def _best_candidate(job: _Job, cands, max_tpot=None):
    """The candidate layout and concurrency with the most output per GPU: ``(output/s per GPU, layout, its step
    costs, index of the best concurrency, grid, KV-bound concurrency, weight bytes, replicas)``, or ``None`` when
    no layout fits (or none meets ``max_tpot`` [s per output token] at any of its batch sizes). ``cands``: (layout,
    weight bytes, KV-bound concurrency, replicas, batch grid) of each layout; every layout's grid is costed at once
    (rows; a shorter grid padded with its last size, which argmax never prefers)."""
    if not cands:
        return None
    eng, ln = job.engine, job.lengths
    width = max(len(c[4]) for c in cands)
    grids = np.array([np.pad(c[4], (0, width - len(c[4])), mode="edge") for c in cands])
    lay = Layouts.of([c[0] for c in cands]).column()
    budget = None
    if eng.max_batched_tokens is not None:
        ranks = [_rank_budget(eng.max_batched_tokens, c[2] / c[0].dp, ln.prompt, ln.response) for c in cands]
        budget = StepBudget(per_instance=np.array([[q * c[0].dp] for q, c in zip(ranks, cands, strict=True)]),
                            chunk_cap=min(ranks))
    res = continuous_batching_step(job.m, job.acc, job.cal, lay, eng, ln, grids, budget)
    tpot = res["stage_s"] * lay.pp / eng.tokens_per_step
    rates = grids / tpot if max_tpot is None else np.where(tpot <= max_tpot, grids / tpot, -np.inf)
    best = None
    for j, (par, weights, b_max, replicas, grid) in enumerate(cands):
        i = int(np.argmax(rates[j]))
        if not np.isfinite(rates[j, i]):
            continue  # no batch of this layout meets the TPOT limit
        per_gpu = float(rates[j, i]) * replicas / job.gpus
        if best is None or per_gpu > best[0]:
            best = (per_gpu, par, {k: v[j] for k, v in res.items()}, i, grid, b_max, weights, replicas)
    return best


def generation_throughput(model, hw, *, gpus, prompt_tokens, response_tokens, precision="bf16",
                          concurrency=None, parallel=None, kv_precision=None, theoretical=False,
                          context_tokens=None, kv_reservation="current", interleaved_prefill=True,
                          max_seqs_per_rank=None, prompt_segments=1, max_batched_tokens=None,
                          kv_block_tokens=None, max_tpot_s=None, speculative_tokens=None, acceptance_rate=None,
                          draft_layers=1.0, calibration=None) -> GenerationEstimate:
    """Steady-state output tokens/s of ``gpus`` GPUs generating ``response_tokens`` after ``prompt_tokens``.

    Parameters
    ----------
    model, hw : names or catalog entries.
    gpus : int [GPUs]                      all generator GPUs; replicas = gpus / instance size.
    prompt_tokens, response_tokens : [tokens]  fixed lengths (the RL model handles distributions).
    precision : "bf16" | "fp8" | "fp4"     weights and GEMMs; ``kv_precision`` defaults to it.
    concurrency : sequences in flight over all replicas; default: the best within KV memory.
    parallel : Parallelism of one instance; default: searched.
    theoretical : pure datasheet roofline instead of the calibrated model.
    context_tokens : mean KV context of a running sequence [tokens]; default ``P + R/2``. The RL model
        passes the length-biased ``P + E[R²]/(2·E[R])`` (docs/rl-modeling.md §4.1).
    kv_reservation : "current" | "full"    what a request holds against the KV pool, which sets the
        concurrency: "current" its tokens so far (vLLM admits against current tokens and preempts on
        shortfall; docs/sources.md §A.1), so the bound uses the mean context; "full" its prompt plus its
        whole output from admission (TensorRT-LLM's default GUARANTEED_NO_EVICT capacity scheduler, which
        trtllm-bench's batch heuristic also sizes by ISL + OSL; docs/sources.md §A.3). For long outputs
        "full" admits about half as many sequences.
    interleaved_prefill : newcomers' prompts are prefilled inside the decode steps (aggregated serving, the
        default); ``False`` for a decode instance of a disaggregated deployment, whose prompts arrive prefilled
        (:mod:`tcocalc.roofline.disaggregated`).
    max_seqs_per_rank : the engine's cap on running sequences per attention-DP rank (``max_num_seqs``); default:
        KV memory alone bounds the batch.
    max_batched_tokens : [tokens] the engine's token budget per step and attention rank (vLLM
        ``max_num_batched_tokens``, SGLang ``chunked_prefill_size``, TensorRT-LLM ``max_num_tokens``), or
        ``"trtllm-bench"`` for the budget that benchmark derives: newcomers' prompts are prefilled whole, in as
        few steps as it allows, and the steps between only decode (:func:`continuous_batching_step`). Default:
        every step carries its share of the prompts' tokens.
    prompt_segments : with ``max_batched_tokens``, the prompt reaches the engine in this many equal pieces, each
        prefilled when it arrives (an agentic trajectory's turns; default 1, the whole prompt at once).
    kv_block_tokens : [tokens] the engine's KV-cache block (vLLM 16, MLA 64/128; TensorRT-LLM 32; SGLang 1): a
        request holds whole blocks (:func:`kv_tokens_held`), which lowers the KV-bound concurrency. Default 1
        (token-granular).
    max_tpot_s : [s] a latency target per output token (an interactivity SLA, ``1 / (tokens/s per user)``): the
        search keeps only batches whose step meets it, so throughput is the most the layouts deliver at that
        per-user speed (the largest batch under the limit, refined between grid points). Default: none.
    speculative_tokens, acceptance_rate, draft_layers : speculative decoding (:mod:`tcocalc.roofline.speculative`):
        each step drafts ``speculative_tokens`` tokens with a ``draft_layers``-layer module (MTP, EAGLE: 1) and
        verifies them in one pass, each accepted with probability ``acceptance_rate`` (DeepSeek-V3's MTP:
        0.85-0.90); ``tpot_s`` is then the step time over the tokens a sequence gains per step. Default: none.
    calibration : a :class:`~tcocalc.catalog.calibration.Calibration` for ``hw`` or a
        :class:`~tcocalc.catalog.calibration.CalibrationSet` (a trial set of factors, as the fit script builds);
        default: the shipped factors (data/calibration.toml). Not with ``theoretical``.

    Raises
    ------
    ScenarioError   bad argument (names it).
    InfeasibleError the model does not fit; names the smallest instance that would.
    """
    check_kv_reservation(kv_reservation)
    gpus = check_whole("gpus", gpus)
    segments = check_positive("prompt_segments", prompt_segments)
    budget = _check_budget(max_batched_tokens)
    p = check_positive("prompt_tokens", prompt_tokens)
    r = check_positive("response_tokens", response_tokens)
    if concurrency is not None:
        check_positive("concurrency", concurrency)
    block = 1 if kv_block_tokens is None else check_whole("kv_block_tokens", kv_block_tokens)
    max_tpot = None if max_tpot_s is None else check_positive("max_tpot_s", max_tpot_s)
    spec = speculation(speculative_tokens, acceptance_rate, draft_layers)
    m, acc, precision, kv_precision, par0 = resolve_inputs(model, hw, precision, kv_precision, parallel)
    cal = calibration_of(acc, calibration, theoretical=theoretical)
    ctx = p + r / 2.0 if context_tokens is None else check_positive("context_tokens", context_tokens)
    engine = EngineConfig(precision=precision, kv_precision=kv_precision, kv_reservation=kv_reservation,
                          kv_block_tokens=block, max_batched_tokens=budget, max_seqs_per_rank=max_seqs_per_rank,
                          interleaved_prefill=interleaved_prefill, speculation=spec)
    return serve(m, acc, cal, Lengths(prompt=p, response=r, context=ctx, segments=segments), engine, gpus=gpus,
                 parallel=par0 if parallel is not None else None, concurrency=concurrency, max_tpot_s=max_tpot)


def serve(m, acc, cal, lengths: Lengths, engine: EngineConfig, *, gpus: int, parallel=None, concurrency=None,
          max_tpot_s=None) -> GenerationEstimate:
    """:func:`generation_throughput` on checked values: model ``m`` and accelerator ``acc`` (catalog entries) under
    calibration ``cal``, the request's :class:`~tcocalc.roofline.engine_config.Lengths` and the engine's
    :class:`~tcocalc.roofline.engine_config.EngineConfig`, on ``gpus`` GPUs, with the instance ``parallel`` pinned
    or searched, the ``concurrency`` over all replicas pinned or searched, and an optional TPOT limit [s]. What the
    RL generator and the disaggregated pools call."""
    if parallel is not None and gpus % parallel.gpus:
        raise ScenarioError("gpus", f"{gpus} GPUs cannot be divided into instances of {parallel.gpus} "
                                    f"({parallel.label()})")
    job = _Job(m=m, acc=acc, cal=cal, lengths=lengths, engine=engine, gpus=gpus)
    layouts = [parallel] if parallel is not None else fewest_stages(
        candidate_serving_layouts(m, acc, gpus), m, acc, cal, engine.precision, engine.kv_precision, lengths.sequence)
    held = kv_tokens_held(lengths.context, lengths.prompt, lengths.response, engine.kv_reservation,
                          engine.kv_block_tokens)
    cands = _candidates(job, layouts, held, concurrency)
    best = _best_candidate(job, cands, max_tpot_s)
    if best is None and max_tpot_s is not None and _best_candidate(job, cands) is not None:
        raise _tpot_unmet(job, cands, max_tpot_s, concurrency)
    if best is None:
        raise _no_fit(job, concurrency, parallel)
    if max_tpot_s is not None and concurrency is None:
        best = _refine_under_tpot(job, best, max_tpot_s)
    per_gpu, par, res, i, grid, b_max, weights, replicas = best
    b, step_s = float(grid[i]), float(res["stage_s"][i]) * par.pp
    tpot = step_s / engine.tokens_per_step
    one = forward_cost(m, acc, cal, par, precision=engine.precision, kv_precision=engine.kv_precision, pre_seqs=1.0,
                       pre_tokens=lengths.prompt)
    ttft = float(one["stage_s"]) * par.pp + step_s
    parts = {"compute": float(res["cbound_s"][i]), "memory": float(res["mbound_s"][i]), "comm": float(res["comm_s"][i])}
    kv_used = float(kv_bytes_per_seq_per_gpu(m, par, engine.kv_precision, lengths.context)) * b / (par.dp * par.pp)
    return GenerationEstimate(
        output_tokens_per_s=b / tpot * replicas, output_tokens_per_s_per_gpu=per_gpu,
        concurrency=b * replicas, ttft_s=ttft, tpot_s=tpot, parallel=par, replicas=replicas,
        memory_per_gpu_bytes=weights + kv_used + cal.inference_workspace_bytes,
        max_concurrency=float(b_max) * replicas, weights_per_gpu_bytes=weights,
        bound=max(parts, key=parts.get), tier=cal.tier, tokens_per_step=engine.tokens_per_step)


def best_instance(m, acc, cal, lengths: Lengths, engine: EngineConfig,
                  max_gpus: int | None = None) -> GenerationEstimate:
    """The serving instance to use (the RL generator's, rl/capacity.py): the throughput-best one :func:`serve`
    searches at the scale-up domain (every split of a sweep gets the same one), or the smallest that fits when the
    model needs more than a domain. A pool of
    ``max_gpus`` GPUs too small for it gets the best instance that fits in it: every instance size up to
    ``max_gpus``, scored by output per pool GPU with ``⌊max_gpus / size⌋`` replicas; the truly smallest
    instance when nothing fits (so the caller's "smallest instance" names it)."""
    def on(gpus):
        return serve(m, acc, cal, lengths, engine, gpus=gpus)

    try:
        best = on(acc.scaleup_domain_gpus)
    except InfeasibleError as exc:
        if exc.min_gpus is None:
            raise
        best = on(exc.min_gpus)
    if max_gpus is None or best.parallel.gpus <= max_gpus:
        return best
    pick, score, smallest = None, 0.0, None
    size = 1
    while size <= max_gpus:  # instance sizes are powers of two (candidate_serving_layouts)
        try:
            est = on(size)
        except InfeasibleError as exc:
            smallest = exc.min_gpus
        else:
            per_pool_gpu = est.output_tokens_per_s / est.replicas * (max_gpus // est.parallel.gpus) / max_gpus
            if per_pool_gpu > score:
                pick, score = est, per_pool_gpu
        size *= 2
    if pick is not None:
        return pick
    return best if smallest is None else on(smallest)


def kv_tokens_held(ctx, prompt_tokens, response_tokens, kv_reservation: str, block: int) -> float:
    """KV tokens one running request holds against the pool [tokens]. Paged KV caches allocate whole blocks of
    ``block`` tokens (vLLM's block, TensorRT-LLM's ``tokens_per_block``, SGLang's page; data/frameworks.toml):
    ``"full"`` reservation takes ``⌈(P + R)/block⌉·block`` (TensorRT-LLM's capacity scheduler reserves
    ``ceil((prompt + max_tokens)/block)`` blocks); ``"current"`` takes the mean context plus the mean unfilled
    part of its last block, ``(block − 1)/2`` [derived: the context's position within a block is uniform over
    a request's life]. ``block = 1`` is token-granular."""
    if kv_reservation == "full":
        return float(np.ceil((prompt_tokens + response_tokens) / block) * block)
    return float(ctx) + (block - 1) / 2.0


def _candidates(job: _Job, layouts, held, concurrency) -> list:
    """(layout, weight bytes, KV-bound concurrency, replicas, batch grid) of each layout that holds a sequence of
    ``held`` KV tokens: the grid spans 1 to the KV-bound concurrency (24 geometric steps), or is the pinned
    ``concurrency`` per replica where it fits. The engine's speculative draft module's layers sit in memory."""
    eng = job.engine
    cands = []
    for par in layouts:
        weights, pool = kv_pool_per_gpu(job.m, job.acc, job.cal, par, eng.precision, eng.draft_layers)
        if pool <= 0:
            continue
        per_seq = float(kv_bytes_per_seq_per_gpu(job.m, par, eng.kv_precision, held))
        per_rank = np.floor(pool / per_seq)  # per_seq already spans the pp stages
        cap = eng.max_seqs_per_rank
        b_max = par.dp * (per_rank if cap is None else min(per_rank, float(cap)))
        replicas = job.gpus // par.gpus
        if b_max < 1:
            continue
        if concurrency is not None:
            b = float(concurrency) / replicas
            if b > b_max:
                continue
            grid = np.array([b])
        else:
            grid = np.unique(np.concatenate([np.geomspace(1, b_max, 24), [b_max]]))
        cands.append((par, weights, b_max, replicas, grid))
    return cands


def _refine_under_tpot(job: _Job, best, max_tpot):
    """The chosen layout re-searched on a fine batch grid between the best grid size under ``max_tpot`` and the next
    (the step time grows with the batch, so the largest batch under the limit lies in that bracket)."""
    per_gpu, par, res, i, grid, b_max, weights, replicas = best
    upper = float(grid[i + 1]) if i + 1 < len(grid) else float(grid[i])
    if upper <= float(grid[i]):
        return best
    fine = np.linspace(float(grid[i]), upper, 33)
    refined = _best_candidate(job, [(par, weights, b_max, replicas, fine)], max_tpot)
    return refined if refined is not None and refined[0] >= per_gpu else best


def _tpot_unmet(job: _Job, cands, max_tpot, concurrency=None) -> InfeasibleError:
    """InfeasibleError for a TPOT target no layout meets at the pinned concurrency or even at one sequence per
    instance, naming the fastest layout and its step at one sequence."""
    m, acc = job.m, job.acc
    if concurrency is not None:
        return InfeasibleError(f"max_tpot_s: at concurrency {concurrency:g} no layout of {job.gpus} x "
                               f"{acc.name} decodes {m.name} within {max_tpot * 1e3:.3g} ms per output token; "
                               f"lower the concurrency or leave it unset to search")
    one = [(c[0], c[1], c[2], c[3], np.array([1.0])) for c in cands]
    fastest = min((_best_candidate(job, [c]) for c in one), key=lambda b: b[2]["stage_s"][0] * b[1].pp)
    t1 = float(fastest[2]["stage_s"][0]) * fastest[1].pp / job.engine.tokens_per_step
    return InfeasibleError(f"max_tpot_s: no layout of {job.gpus} x {acc.name} decodes {m.name} within "
                           f"{max_tpot * 1e3:.3g} ms per output token; the fastest, {fastest[1].label()}, takes "
                           f"{t1 * 1e3:.3g} ms at one sequence per instance", layout=fastest[1])


def _check_budget(budget):
    """``max_batched_tokens`` checked: ``None``, ``"trtllm-bench"`` or a positive number (ScenarioError naming it)."""
    if isinstance(budget, str) and budget != TRTLLM_BENCH:
        raise ScenarioError("max_batched_tokens", f"expected a number of tokens or {TRTLLM_BENCH!r}, got {budget!r}")
    if budget is not None and budget != TRTLLM_BENCH:
        return check_positive("max_batched_tokens", budget)
    return budget


def _fits_one_sequence(job: _Job, par) -> bool:
    eng = job.engine
    _, pool = kv_pool_per_gpu(job.m, job.acc, job.cal, par, eng.precision)
    return pool > 0 and pool >= float(kv_bytes_per_seq_per_gpu(job.m, par, eng.kv_precision, job.lengths.context))


def _smallest_layout(job: _Job) -> Parallelism | None:
    """The smallest instance (fewest GPUs, then fewest stages) the automatic search can use: the stages
    :func:`fewest_stages` keeps for whole sequences of the job's lengths, holding one sequence at the running
    context. :func:`generation_throughput` with ``gpus`` = its size finds a layout and no smaller count does;
    ``None`` when no layout up to the largest searched fits."""
    m, acc, eng = job.m, job.acc, job.engine
    kept = fewest_stages(candidate_serving_layouts(m, acc), m, acc, job.cal, eng.precision, eng.kv_precision,
                         job.lengths.sequence)
    fits = [par for par in kept if _fits_one_sequence(job, par)]
    return min(fits, key=lambda q: (q.gpus, q.pp), default=None)


def _no_fit(job: _Job, concurrency, parallel) -> InfeasibleError:
    """Name the smallest instance that would hold the model and one sequence."""
    m, acc, gpus = job.m, job.acc, job.gpus
    smallest = _smallest_layout(job)
    what = f"{m.name} ({job.engine.precision}) with {job.lengths.context:,.0f}-token contexts on {gpus} x {acc.name}"
    if concurrency is not None and smallest is not None and gpus % smallest.gpus == 0:
        return InfeasibleError(f"{what}: concurrency {concurrency:g} does not fit in KV memory; lower it or add GPUs",
                               min_gpus=smallest.gpus, layout=smallest)
    if smallest is None:
        return InfeasibleError(f"{what}: does not fit in any layout up to {acc.scaleup_domain_gpus * 32} GPUs per "
                               f"instance; use a lower precision or hardware with more memory")
    hint = f"the smallest instance that fits is {smallest.gpus} GPUs ({smallest.label()})"
    if parallel is not None:
        return InfeasibleError(f"{what}: layout {parallel.label()} does not fit; {hint}",
                               min_gpus=smallest.gpus, layout=smallest)
    return InfeasibleError(f"{what}: does not fit; {hint}; use a multiple of {smallest.gpus} GPUs",
                           min_gpus=smallest.gpus, layout=smallest)
