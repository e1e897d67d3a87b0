"""Per-operation roofline of a transformer forward pass: prefill and decode steps.

Each layer is split into operations (attention projections, attention core, dense MLP or MoE
experts, shared experts and router, element-wise kernels, LM head). Every operation costs
``max(compute, memory)``:

* compute = FLOPs / (peak · η_gemm(M, N, K)), with η_gemm = η_max(precision) · Π f(x),
  f(x) = x / (x + x_half) over the GEMM's three dimensions (calculon's size-dependent efficiency
  curves, calculon-ai/calculon@caa4b11; aiconfigurator's shape-keyed utilisation, docs/sources.md §C.13, without
  profiling tables); attention runs at the KV precision's peak · η_attn (FlashAttention-3);
* memory = bytes / (HBM bandwidth · η_bw) (aiconfigurator's 0.8);

plus exposed communication: tensor-parallel all-reduce (ring, ``2(n-1)/n·S/B``), expert-parallel
all-to-all (dispatch + combine, over the scale-up domain or the scale-out NIC), a fixed launch
cost per operation (aiconfigurator's 3 µs), all divided by the runtime efficiency of the
generation (data/calibration.toml). MoE weights read in a step scale with the share of experts the
batch touches, ``1 - (1 - k/E)^b`` (docs/rl-modeling.md §4.2).

Pipeline parallelism: a step of ``batch`` sequences runs as ``pp`` micro-batches of ``batch/pp`` in
flight, one per stage; a token's step latency is ``pp`` stage times.

All functions here work on numpy arrays of batch sizes so that searches are vectorised.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..catalog.accelerators import Accelerator, hardware
from ..catalog.calibration import Calibration, calibration_of
from ..catalog.models import ModelArch, model
from ..errors import ScenarioError
from ..units import bytes_per_element
from .parallel import Parallelism

__all__ = ["KernelTime", "prefill", "decode", "forward_cost",
           "check_positive", "check_whole", "resolve_inputs", "check_inputs", "default_kv_precision"]

ACT_BYTES = 2.0  # activations travel in bf16 between kernels
ELEMENTWISE_HIDDEN_PASSES = 10.0  # hidden-sized reads + writes per token and layer (norms, residuals); see op 4
SWIGLU_PASSES = 3.0  # intermediate-sized reads + writes per token and layer (SwiGLU); see op 4
GELU_PASSES = 2.0
"""Intermediate-sized reads + writes per token and layer of a non-gated MLP's activation (Megatron's fused bias-GELU
reads the ``fc1`` output and writes the ``fc2`` input: ``I + I``), against :data:`SWIGLU_PASSES` (gate, up, out)."""


def mlp_activation_passes(m) -> float:
    """Intermediate-sized element-wise passes of ``m``'s MLP activation: 3 gated (SwiGLU), 2 non-gated (GELU)."""
    return SWIGLU_PASSES if m.mlp_gated else GELU_PASSES


@dataclass(frozen=True)
class KernelTime:
    """Time of one prefill or decode step of a serving instance.

    ``seconds`` = (Σ_ops max(compute, memory) + exposed comm + launch overhead) / runtime efficiency.
    ``compute_s``, ``memory_s`` and ``comm_s`` are the summed components before the max, per step;
    ``bound`` names the largest of compute-bound op time, memory-bound op time and communication.
    ``tier`` is "calibrated" or "theoretical" (pure datasheet roofline).
    """

    seconds: float
    compute_s: float
    memory_s: float
    comm_s: float
    overhead_s: float
    bound: str
    tokens: float
    tokens_per_s: float
    flops: float
    bytes: float
    tier: str

    @property
    def arithmetic_intensity(self) -> float:
        """FLOPs per HBM byte of the step [FLOP/B]."""
        return self.flops / self.bytes if self.bytes else 0.0


def _f(x, half):
    x = np.asarray(x, dtype=float)
    return x / (x + half) if half else np.ones_like(x)


_SCALAR = (int, float, np.float64)


def gemm_efficiency(cal: Calibration, precision: str, m, n, k):
    """η_gemm = η_max · m/(m + min(m, tile)/2) · f(n) · f(k).

    Rows ``m``: tile quantisation, a GEMM pads its rows to the tile height (128 on Hopper/Blackwell
    CUTLASS kernels), half a tile wasted on average (grouped MoE GEMMs pad every expert); below one
    tile, kernels pick smaller tiles (or swap operands), so the waste shrinks with ``m``. Columns and
    depth: small matrices fill the GPU's waves poorly, ``f(x) = x/(x + x_half)`` with ``x_half`` fitted.
    """
    if type(m) in _SCALAR and type(n) in _SCALAR and type(k) in _SCALAR:  # the same arithmetic without numpy's
        tile, half = cal.gemm_tile_rows, cal.gemm_half_dim                 # per-call cost (layout searches)
        rows_s = m / (m + min(m, tile) / 2.0) if tile else 1.0
        return (cal.gemm_efficiency(precision) * rows_s * (n / (n + half) if half else 1.0)
                * (k / (k + half) if half else 1.0))
    m = np.asarray(m, dtype=float)
    rows = m / (m + np.minimum(m, cal.gemm_tile_rows) / 2.0) if cal.gemm_tile_rows else np.ones_like(m)
    half = cal.gemm_half_dim
    if type(n) in _SCALAR and type(k) in _SCALAR:  # the usual case: one shape, rows over a batch grid
        return cal.gemm_efficiency(precision) * rows * (n / (n + half) if half else 1.0) * (
            k / (k + half) if half else 1.0)
    return cal.gemm_efficiency(precision) * rows * _f(n, half) * _f(k, half)


def _attn_precision(m: ModelArch, acc: Accelerator, kv_precision: str) -> str:
    """Precision of the attention math.

    GQA: the KV precision (TensorRT-LLM's FP8 context/generation FMHA on FP8 KV; FP4 KV is
    dequantised to FP8). MLA: BF16 (FlashMLA; DeepSeek's inference overview: "BF16 MLA core").
    """
    if m.attention == "mla":
        return "bf16"
    p = "fp8" if kv_precision == "fp4" else kv_precision
    return p if p in acc.precisions else "bf16"


def link_rate(acc: Accelerator, cal: Calibration, group_gpus):
    """Per-GPU one-direction bandwidth for a collective over ``group_gpus`` GPUs [B/s] (an array of group sizes
    gives an array)."""
    if np.ndim(group_gpus):
        return np.where(group_gpus <= acc.scaleup_domain_gpus, acc.scaleup_bytes_per_s * cal.scaleup_efficiency,
                        acc.scaleout_bytes_per_s * cal.scaleout_efficiency)
    if group_gpus <= acc.scaleup_domain_gpus:
        return acc.scaleup_bytes_per_s * cal.scaleup_efficiency
    return acc.scaleout_bytes_per_s * cal.scaleout_efficiency


def _a2a_latency(acc: Accelerator, cal: Calibration, group_gpus):
    """Fixed latency of one MoE dispatch + combine [s]: scale-up or scale-out figure by group size."""
    if np.ndim(group_gpus):
        return np.where(group_gpus <= acc.scaleup_domain_gpus, cal.alltoall_latency_scaleup_s,
                        cal.alltoall_latency_scaleout_s)
    if group_gpus <= acc.scaleup_domain_gpus:
        return cal.alltoall_latency_scaleup_s
    return cal.alltoall_latency_scaleout_s


def _when(cond, value):
    """``value()`` where ``cond`` holds, else 0: a plain branch for one layout, ``np.where`` over layouts (the
    value is then computed for all and kept where the condition holds)."""
    if np.ndim(cond) == 0:
        return value() if cond else 0.0
    return np.where(cond, value(), 0.0)


class _OpSum:
    """One forward step's ops, summed on demand (:meth:`totals`): compute and memory time, the time of compute-
    and memory-bound ops, FLOPs and bytes (arrays over the step's token counts)."""

    def __init__(self, like, bw: float, cal: Calibration, precision: str, peak: float, beta_w: float):
        self.shape = np.shape(like)
        self.ops: list[tuple] = []
        self.bw, self.cal, self.precision, self.peak, self.beta_w = bw, cal, precision, peak, beta_w

    def op(self, flops, nbytes, t_compute, weight=1.0) -> None:
        """An op's roofline: it takes the larger of its compute and memory time."""
        self.ops.append((weight, t_compute, nbytes / self.bw, flops, nbytes))

    def _stack(self, values) -> np.ndarray:
        """The ops' values as one (ops, *shape) array (scalars broadcast)."""
        if all(np.shape(v) == self.shape for v in values):
            return np.array(values, dtype=float)
        return np.array([np.broadcast_to(v, self.shape) for v in values], dtype=float)

    def totals(self) -> dict:
        """``compute``, ``memory``, ``cbound``, ``mbound`` [s], ``flops``, ``bytes`` summed over the ops, each
        weighted (layers it runs in); an op counts as compute-bound when its compute time is at least its memory
        time (one vectorised pass over all ops)."""
        weights = [o[0] for o in self.ops]
        if all(np.ndim(x) == 0 for x in weights):
            w = np.array(weights, dtype=float).reshape((-1,) + (1,) * len(self.shape))
        else:  # per-layout weights (layers per stage), a column against the batch grid
            w = self._stack(weights)
        tc, tm, fl, by = (self._stack([o[i] for o in self.ops]) for i in range(1, 5))
        cb = tc >= tm
        return dict(compute=(w * tc).sum(0), memory=(w * tm).sum(0), cbound=(w * np.where(cb, tc, 0.0)).sum(0),
                    mbound=(w * np.where(cb, 0.0, tm)).sum(0), flops=(w * fl).sum(0), bytes=(w * by).sum(0))

    def gemm(self, rows, params, n_dim, k_dim, weight=1.0, params_div=1.0) -> None:
        """A weight GEMM of ``rows`` tokens at the shape-aware efficiency (:func:`gemm_efficiency`)."""
        fl = 2.0 * rows * params / params_div
        by = params * self.beta_w / params_div + ACT_BYTES * rows * (n_dim + k_dim)
        eff = gemm_efficiency(self.cal, self.precision, np.maximum(rows, 1e-9), n_dim, k_dim)
        self.op(fl, by, np.where(rows > 0, fl / (self.peak * eff), 0.0), weight)


def _moe_ops(ops: _OpSum, m: ModelArch, acc: Accelerator, cal: Calibration, par: Parallelism, precision: str,
             tok, layers: float):
    """Routed experts (grouped GEMM over the experts the step's tokens touch), always-on experts and the
    expert-parallel all-to-all under attention DP; returns the all-to-all time per stage step [s]."""
    tp, dp, h = par.tp, par.dp, m.hidden_size
    moe_layers = layers * m.num_moe_layers / m.num_layers
    g = par.stage_gpus
    tok_stage = tok * dp
    touched = 1.0 - (1.0 - m.experts_per_token / m.num_experts) ** tok_stage
    rows_per_expert = tok_stage * m.experts_per_token / m.num_experts
    fl = 2.0 * tok_stage * m.experts_per_token * m.expert_params / g
    by = touched * m.num_experts * m.expert_params * ops.beta_w / g + ACT_BYTES * tok_stage * m.experts_per_token * (
        2 * h) / g
    eff = gemm_efficiency(cal, precision, np.maximum(rows_per_expert, 1e-9), m.moe_intermediate_size / par.expert_tp, h)
    ops.op(fl, by, np.where(tok > 0, fl / (ops.peak * eff), 0.0), moe_layers)
    ops.gemm(tok, m.moe_always_on_params_per_layer, max(m.moe_intermediate_size, m.num_experts) / tp, h,
             weight=moe_layers, params_div=tp)
    if np.ndim(dp) == 0 and dp <= 1:
        return np.zeros_like(tok)
    # Attention-DP ranks hold different tokens: each token goes to the min(k, ep) expert-parallel groups that
    # own its experts, and to every one of the etp GPUs sharding those experts (dispatch in the GEMM precision,
    # combine in bf16; DeepSeek inference overview).
    dispatch = 1.0 if precision in ("fp8", "fp4") else ACT_BYTES
    fan_out = np.minimum(m.experts_per_token, par.ep) * par.expert_tp * (g - 1) / g
    per_token = (tok / tp) * h * (dispatch + ACT_BYTES)
    latency = np.where(tok > 0, _a2a_latency(acc, cal, g), 0.0)
    inside = g <= acc.scaleup_domain_gpus

    def within():
        return moe_layers * (per_token * fan_out / link_rate(acc, cal, g) + latency)

    def across():
        return moe_layers * (per_token * _cross_node_sends(m, acc, g) / link_rate(acc, cal, g)
                             + per_token * fan_out / link_rate(acc, cal, acc.scaleup_domain_gpus) + latency)

    if np.ndim(inside) == 0:
        return within() if inside else across()
    with np.errstate(divide="ignore", invalid="ignore"):  # the branch not taken may divide by zero
        a2a = np.where(inside, within(), across())
    return np.where(dp > 1, a2a, 0.0)


def _cross_node_sends(m: ModelArch, acc: Accelerator, group_gpus: int) -> float:
    """Scale-out copies of one token in an expert-parallel group spanning ``n`` scale-up domains (nodes).

    DeepEP's inter-node kernels (deepseek-ai/DeepEP README, "normal kernels"; DeepSeek-V3 technical report
    arXiv:2412.19437, section 3.2.2) send a token once per destination node over RDMA and forward it to the GPUs of its
    experts over NVLink, so the scale-out bytes follow the distinct remote nodes its ``k`` experts sit on, not the
    ``k`` experts: ``n·(1 - (1 - 1/n)^k)`` distinct nodes for uniform routing, of which ``(n - 1)/n`` remote. The
    NVLink forwarding is charged as the in-domain fan-out (caller). Group-limited routing (DeepSeek's at most
    ``topk_group`` nodes) would lower it further and is not modelled."""
    n = group_gpus / acc.scaleup_domain_gpus
    k = m.experts_per_token
    return n * (1.0 - (1.0 - 1.0 / n) ** k) * (n - 1.0) / n


def forward_cost(m: ModelArch, acc: Accelerator, cal: Calibration, par: Parallelism, *, precision: str,
                 kv_precision: str, dec_seqs=0.0, dec_ctx=0.0, pre_seqs=0.0, pre_tokens=0.0, pre_ctx=0.0,
                 dec_tokens=1.0, layers=None):
    """Cost of one forward step of a serving instance, per pipeline stage (arrays broadcast).

    ``par``: one :class:`Parallelism`, or :class:`~tcocalc.roofline.parallel.Layouts` as a column
    (:meth:`~tcocalc.roofline.parallel.Layouts.column`) against a row of batch sizes: every layout's costs at
    once, one row each.

    ``dec_seqs`` sequences decode ``dec_tokens`` tokens each at context ``dec_ctx`` (1; ``1 + n`` when a
    speculative step verifies ``n`` draft tokens: every token runs the GEMMs and attends, the sequence's KV is read
    once, logits come for every position; :mod:`tcocalc.roofline.speculative`); ``pre_seqs`` sequences prefill
    ``pre_tokens`` new tokens on top of ``pre_ctx`` cached ones. Counts are per instance and per step;
    each stage processes ``1/pp`` of them at a time. ``layers``: transformer layers per stage (default the
    model's ``L/pp``; a draft module's one layer for a speculative draft pass).

    Returns a dict of numpy arrays: ``stage_s`` (time of one stage step), ``compute_s``, ``memory_s``,
    ``comm_s``, ``overhead_s``, ``cbound_s``, ``mbound_s``, ``flops``, ``bytes`` (per GPU per stage step).
    """
    tp, dp, pp = par.tp, par.dp, par.pp
    beta_w = bytes_per_element(precision)
    peak = acc.peak_flops_per_s(precision)
    attn_prec = _attn_precision(m, acc, kv_precision)
    attn_peak = acc.peak_flops_per_s(attn_prec) * cal.attention_efficiency
    bw = acc.hbm_bytes_per_s * cal.hbm_efficiency
    h, L = m.hidden_size, m.num_layers

    dec_seqs = np.asarray(dec_seqs, dtype=float) / pp
    pre_seqs = np.asarray(pre_seqs, dtype=float) / pp
    n_dec = dec_seqs / dp                                   # decoding sequences per attention rank
    n_pre = pre_seqs * pre_tokens / dp                      # prefill tokens per attention rank
    tok = n_dec * dec_tokens + n_pre
    seqs_rank = (dec_seqs * dec_tokens + pre_seqs) / dp     # positions that need logits
    layers = L / pp if layers is None else layers

    ops = _OpSum(tok, bw, cal, precision, peak, beta_w)
    op, gemm = ops.op, ops.gemm

    q_dim = m.num_attention_heads * m.qk_head_dim
    # 1. attention projections (QKV, O; MLA LoRA projections; DSA indexer projections)
    gemm(tok, m.attention_params_per_layer, q_dim / tp, h, weight=layers, params_div=tp)
    # 2. attention core
    kv_layer = m.kv_bytes_per_token(kv_precision) / L
    kv_split = 1 if m.attention == "mla" else np.minimum(tp, m.num_kv_heads)
    idx_bytes = m.index_head_dim * 1.0  # DSA indexer keys are FP8 (1 B per element)
    if np.any(n_dec > 0):
        ctx_att = m.attended_context(dec_ctx)
        fl = n_dec * dec_tokens * m.attention_flops_per_token(dec_ctx, absorbed=True) / L / tp
        by = n_dec * (ctx_att * kv_layer / kv_split + float(dec_ctx) * idx_bytes)
        op(fl, by, fl / attn_peak, layers)
    if np.any(n_pre > 0):
        mean_ctx = pre_ctx + pre_tokens / 2.0  # causal: the average new token sees half the new span
        fl = n_pre * m.attention_flops_per_token(mean_ctx) / L / tp
        by = (pre_seqs / dp) * float(pre_ctx) * kv_layer / kv_split + n_pre * kv_layer / kv_split
        op(fl, by, fl / attn_peak, layers)
    # 3. MLP
    if m.num_dense_layers:
        dense_layers = layers * m.num_dense_layers / L
        gemm(tok, m.dense_mlp_params, m.intermediate_size / tp, h, weight=dense_layers, params_div=tp)
    comm = np.zeros_like(tok)
    n_ops_layer = 9.0
    if m.is_moe:
        comm = comm + _moe_ops(ops, m, acc, cal, par, precision, tok, layers)
        n_ops_layer += 3.0
    # 4. element-wise kernels, memory only, not split by TP [derived by counting tensor reads and writes]:
    #    two RMSNorms (read h, write h: 4h) and two residual adds (read 2h, write h: 6h) = 10h per token;
    #    SwiGLU reads gate and up (2I) and writes I = 3I per token, a GELU reads and writes I = 2I (split by TP)
    act_width = (m.intermediate_size if not m.is_moe else m.experts_per_token * m.moe_intermediate_size)
    by = ACT_BYTES * tok * (ELEMENTWISE_HIDDEN_PASSES * h + mlp_activation_passes(m) * act_width / tp)
    op(0.0 * tok, by, 0.0 * tok, layers)
    # 5. LM head: logits only for the last position of each sequence
    gemm(seqs_rank, m.lm_head_params, m.vocab_size / tp, h, params_div=tp)
    # 6. tensor-parallel all-reduce, twice per layer
    comm = comm + _when(tp > 1, lambda: 2.0 * layers * (ACT_BYTES * tok * h * 2.0 * (tp - 1) / tp)
                        / link_rate(acc, cal, tp))
    # 7. pipeline hand-off: activations of the micro-batch to the next stage
    comm = comm + _when(pp > 1, lambda: ACT_BYTES * tok * h / link_rate(acc, cal, 2) + cal.op_overhead_s)
    overhead = np.where(tok > 0, np.broadcast_to(n_ops_layer * layers * cal.op_overhead_s, np.shape(tok)), 0.0)
    t = ops.totals()
    stage = (t["cbound"] + t["mbound"] + comm + overhead) / cal.inference_runtime_efficiency
    return dict(stage_s=stage, compute_s=t["compute"], memory_s=t["memory"], comm_s=comm, overhead_s=overhead,
                cbound_s=t["cbound"], mbound_s=t["mbound"], flops=t["flops"], bytes=t["bytes"])


def check_positive(name: str, value, *, allow_zero: bool = False) -> float:
    """``value`` as a finite float > 0 (or >= 0), else ScenarioError naming ``name``."""
    try:
        v = float(value)
    except (TypeError, ValueError):
        raise ScenarioError(name, f"expected a number, got {value!r}") from None
    if not np.isfinite(v) or v < 0 or (v == 0 and not allow_zero):
        raise ScenarioError(name, f"must be {'≥' if allow_zero else '>'} 0 and finite, got {value!r}")
    return v


def check_whole(name: str, value) -> int:
    """``value`` as a whole number > 0, else ScenarioError naming ``name``."""
    v = check_positive(name, value)
    if v != int(v):
        raise ScenarioError(name, f"must be a whole number, got {value!r}")
    return int(v)


def default_kv_precision(precision: str) -> str:
    """The KV-cache precision an engine uses unless told: the weights', but FP8 for FP4 weights (NVFP4
    checkpoints serve with an FP8 KV cache: the TensorRT-LLM perf-overview rows)."""
    return "fp8" if precision == "fp4" else precision


def resolve_inputs(model_, hw, precision, kv_precision, parallel):
    """(ModelArch, Accelerator, precision, KV precision, Parallelism) from names or objects, precisions checked
    (ScenarioError naming the argument): the catalog look-ups, then :func:`check_inputs`."""
    return check_inputs(model(model_), hardware(hw), precision, kv_precision, parallel)


def check_inputs(m: ModelArch, acc: Accelerator, precision, kv_precision, parallel):
    """:func:`resolve_inputs` of a model and an accelerator already resolved (a
    :class:`~tcocalc.rl.cluster.Cluster`'s): the precisions and the parallel degrees checked against them
    (ScenarioError naming the argument), the KV precision defaulted, ``parallel`` as a Parallelism."""
    if precision not in ("bf16", "fp8", "fp4"):
        raise ScenarioError("precision", f"must be 'bf16', 'fp8' or 'fp4', got {precision!r}")
    if kv_precision is None:
        kv_precision = default_kv_precision(precision)
    if kv_precision not in ("bf16", "fp8", "fp4"):
        raise ScenarioError("kv_precision", f"must be 'bf16', 'fp8' or 'fp4', got {kv_precision!r}")
    if precision not in acc.precisions:
        raise ScenarioError("precision", f"{acc.name} has no {precision} tensor cores; it supports "
                                         f"{', '.join(acc.precisions)}")
    if parallel is None:
        parallel = Parallelism()
    elif isinstance(parallel, dict):
        parallel = Parallelism(**parallel)
    if m.is_moe and m.num_experts % parallel.ep:
        raise ScenarioError("parallel.ep", f"ep={parallel.ep} must divide the {m.num_experts} experts")
    if m.num_attention_heads % parallel.tp:
        raise ScenarioError("parallel.tp", f"tp={parallel.tp} must divide {m.num_attention_heads} attention heads")
    return m, acc, precision, kv_precision, parallel


def _kernel_time(res: dict, pp: int, tokens: float, tier: str) -> KernelTime:
    seconds = float(res["stage_s"]) * pp
    parts = {"compute": float(res["cbound_s"]), "memory": float(res["mbound_s"]), "comm": float(res["comm_s"])}
    return KernelTime(
        seconds=seconds, compute_s=float(res["compute_s"]) * pp, memory_s=float(res["memory_s"]) * pp,
        comm_s=float(res["comm_s"]) * pp, overhead_s=float(res["overhead_s"]) * pp,
        bound=max(parts, key=parts.get), tokens=tokens, tokens_per_s=tokens / seconds if seconds else 0.0,
        flops=float(res["flops"]), bytes=float(res["bytes"]), tier=tier)


def prefill(model, hw, *, parallel=None, batch=1, prompt_tokens, context_tokens=0, precision="bf16",
            kv_precision=None, theoretical=False, calibration=None) -> KernelTime:
    """One prefill step: ``batch`` sequences each process ``prompt_tokens`` new tokens on top of
    ``context_tokens`` already in the KV cache (prefix caching, multi-turn).

    Parameters
    ----------
    model, hw : str or ModelArch / Accelerator
    parallel : Parallelism, optional
        One serving instance (default: a single GPU).
    batch : int [sequences]; prompt_tokens, context_tokens : int [tokens]
    precision : "bf16" | "fp8" | "fp4"   weights and GEMM math; ``kv_precision`` defaults to it (fp8 for fp4).
    theoretical : bool
        Pure datasheet roofline (every efficiency 1) instead of the calibrated one.
    calibration : Calibration or CalibrationSet, optional
        Other factors than the shipped ones (not with ``theoretical``).

    Returns
    -------
    KernelTime ; ``tokens_per_s`` counts prompt tokens.
    """
    m, acc, precision, kv_precision, par = resolve_inputs(model, hw, precision, kv_precision, parallel)
    b = check_positive("batch", batch)
    p = check_positive("prompt_tokens", prompt_tokens)
    c = check_positive("context_tokens", context_tokens, allow_zero=True)
    cal = calibration_of(acc, calibration, theoretical=theoretical)
    res = forward_cost(m, acc, cal, par, precision=precision, kv_precision=kv_precision,
                       pre_seqs=b, pre_tokens=p, pre_ctx=c)
    return _kernel_time(res, par.pp, b * p, cal.tier)


def decode(model, hw, *, parallel=None, batch, context_tokens, precision="bf16", kv_precision=None,
           theoretical=False, calibration=None) -> KernelTime:
    """One decode step: ``batch`` sequences [sequences] each produce one token at ``context_tokens``
    of context [tokens]. ``tokens_per_s`` counts output tokens. See :func:`prefill` for the arguments."""
    m, acc, precision, kv_precision, par = resolve_inputs(model, hw, precision, kv_precision, parallel)
    b = check_positive("batch", batch)
    c = check_positive("context_tokens", context_tokens)
    cal = calibration_of(acc, calibration, theoretical=theoretical)
    res = forward_cost(m, acc, cal, par, precision=precision, kv_precision=kv_precision, dec_seqs=b, dec_ctx=c)
    return _kernel_time(res, par.pp, b, cal.tier)
