"""Trainer throughput, memory and MFU for a TP/PP/EP/DP layout (Megatron-Core style).

Per micro-batch (one sequence of ``seq_tokens``) and GPU, each layer costs

* GEMMs, forward + backward = ``6·rows·params`` FLOPs at the training precision with the same
  shape-aware efficiency as inference (:mod:`tcocalc.kernels`); MoE experts see
  ``rows = ep·s·k/E`` tokens each;
* causal attention core ``3 x`` its forward FLOPs in BF16 (Transformer Engine keeps attention in BF16
  under FP8 recipes) at the FlashAttention efficiency;
* element-wise traffic (norms, residuals, the MLP activation: SwiGLU or GELU), three passes (forward,
  backward);
* exposed communication: sequence-parallel TP collectives (four all-reduce equivalents per layer,
  a calibrated share exposed), MoE all-to-all (dispatch + combine, forward and backward), pipeline
  hand-offs, and once per step the distributed-optimizer gradient reduce-scatter and parameter
  all-gather (a calibrated share exposed);
* activation recompute when memory requires it (selective, then full: one more forward), or the mode the caller
  names (``recompute=``).

The step adds the 1F1B pipeline bubble ``(pp-1)/(m·vp)`` for ``m`` micro-batches per data-parallel
rank (Narayanan et al. 2021, arXiv 2104.04473), and the Adam update (memory-bound).

Uneven pipeline stages (Megatron-Core ``account_for_embedding_in_pipeline_split`` /
``account_for_loss_in_pipeline_split``; the Llama 3 recipe, arXiv 2407.21783 section 3.3.2): when ``pp·vp``
does
not divide the ``L`` layers, the embedding and the LM head count as one layer each and the ``L + 2`` units
are split evenly, so the first and last stages hold fewer transformer layers. Every stage then carries
``vp·⌈(L + 2)/(pp·vp)⌉`` units at most; the step and memory follow that bottleneck stage (126 layers on
PP16: 8 per stage, the first and last 7 plus the embedding or the head).

Memory per GPU: bf16 weights (2 B/param), fp32 gradient buffer (4 B/param), Adam master weights and
moments (12 B/param) sharded over data parallelism (distributed optimizer / ZeRO-1, Rajbhandari et al.
2020), and activations ``s·(15h + 4.75·I)/tp`` bytes per layer and in-flight micro-batch for a gated MLP
(Korthikanti et al. 2022, arXiv 2205.05198, eq. for sequence parallelism with flash attention:
``34·s·h/tp`` at ``I = 4h``), ``s·(18h + 4·I)/tp`` for a non-gated GELU MLP (Korthikanti's own derivation,
section 4.1, with the MLP width kept: ``34·s·h/tp`` exactly at ``I = 4h``); full recompute keeps only each layer's
``2·s·h/tp`` input.

MFU (docs/metrics.md) = ``training_flops_per_token(seq, causal) · tokens/s / (GPUs · dense peak)``.
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass, replace

import numpy as np
from scipy.special import ndtr

from ..catalog.calibration import Calibration, calibration_of
from ..errors import InfeasibleError, ScenarioError
from ..units import bytes_per_element
from .forward import (
    ACT_BYTES,
    ELEMENTWISE_HIDDEN_PASSES,
    check_positive,
    check_whole,
    gemm_efficiency,
    link_rate,
    mlp_activation_passes,
    resolve_inputs,
)
from .parallel import Layouts, Parallelism

__all__ = ["TrainingJob", "TrainingEstimate", "Layouts", "training_throughput", "training_step", "training_steps",
           "SHARDINGS", "check_sharding", "check_fsdp_layout", "fsdp_state_bytes", "fsdp_link_rate", "fsdp_comm_s",
           "fsdp_exposed_comm_s", "job_rates", "layout_rates", "pinned_layout", "clear_rate_caches",
           "MAX_CACHED_COUNTS"]

_POW2 = (1, 2, 4, 8, 16, 32, 64, 128, 256)
_VP = (1, 2, 3, 4, 5, 6, 8)  # virtual-pipeline (interleaving) factors searched
DEFAULT_GLOBAL_BATCH_TOKENS = 1_048_576  # Megatron-Bridge Llama3-70B recipe: GBS 128 x 8192 tokens


@dataclass(frozen=True)
class TrainingEstimate:
    """Trainer throughput for one layout.

    ``mfu`` uses the dense peak at ``precision`` and causal attention FLOPs (``mfu_convention`` says so);
    ``memory_per_gpu_bytes`` is the most loaded GPU; ``recompute`` is "none", "selective" or "full".
    """

    tokens_per_s: float
    tokens_per_s_per_gpu: float
    mfu: float
    step_time_s: float
    parallel: Parallelism
    memory_per_gpu_bytes: float
    recompute: str
    optimizer_offload: bool
    global_batch_tokens: float
    bubble_fraction: float
    compute_s: float
    comm_s: float
    tier: str
    mfu_convention: str


def stage_layers(num_layers: int, pp, vp):
    """Transformer layers on the busiest pipeline rank: ``L/pp`` when ``pp·vp`` divides ``L``, else
    ``vp·⌈(L + 2)/(pp·vp)⌉`` (uneven stages; see the module docstring). ``pp`` and ``vp`` may be arrays."""
    layers = np.where(num_layers % (pp * vp) == 0, num_layers / pp, vp * np.ceil((num_layers + 2) / (pp * vp)))
    return float(layers) if np.ndim(layers) == 0 else layers


def _params_per_gpu(m, lay: Layouts) -> tuple[np.ndarray, np.ndarray]:
    """(non-expert, expert) parameters on one GPU. Uneven stages: the heaviest of a middle rank's
    :func:`stage_layers` layers and the first (last) rank's one layer fewer plus the embedding (LM head)."""
    # uneven stages
    layers = stage_layers(m.num_layers, lay.pp, lay.vp)
    dense = m.num_layers * m.attention_params_per_layer + m.num_dense_layers * m.dense_mlp_params
    dense += m.num_moe_layers * m.moe_always_on_params_per_layer if m.is_moe else 0.0
    per_layer = dense / m.num_layers
    ends = max(m.embedding_params, 0.0 if m.tie_word_embeddings else m.lm_head_params)
    busiest = np.maximum(layers * per_layer, (layers - 1) * per_layer + ends)
    uneven = (busiest / lay.tp, m.routed_expert_params_total * layers / m.num_layers / (lay.ep * _expert_tp(lay)))
    # even stages
    dense = m.num_layers * m.attention_params_per_layer + m.num_dense_layers * (
        m.dense_mlp_params if m.num_dense_layers else 0.0)
    dense += m.num_moe_layers * m.moe_always_on_params_per_layer if m.is_moe else 0.0
    dense += m.embedding_params + (0.0 if m.tie_word_embeddings else m.lm_head_params)
    expert = m.routed_expert_params_total
    even = (dense / (lay.tp * lay.pp), expert / (lay.ep * _expert_tp(lay) * lay.pp))
    split = m.num_layers % (lay.pp * lay.vp) != 0
    return np.where(split, uneven[0], even[0]), np.where(split, uneven[1], even[1])


def _expert_tp(lay: Layouts) -> np.ndarray:
    """Tensor parallelism inside an expert: Megatron-Core's expert-TP, ``min(tp, tp·dp/ep)``."""
    return np.minimum(lay.tp, lay.stage_gpus // lay.ep)


def _expert_dp(lay: Layouts) -> np.ndarray:
    """Data-parallel replicas of each expert: ``tp·dp / (ep·etp)``."""
    return np.maximum(lay.stage_gpus // (lay.ep * _expert_tp(lay)), 1)


def _cp_comm(m, cal, lay: Layouts, seq_local, layers, rate) -> np.ndarray:
    """Exposed context-parallel traffic per micro-batch [s]: ring attention passes every other rank's K and V
    (``cp − 1`` blocks of ``seq/cp`` tokens) per layer, forward and backward (3 passes), a calibrated share
    exposed as for tensor parallelism (Megatron-Core overlaps it with attention; Liu et al., Ring Attention,
    arXiv 2310.01889). ``rate``: the per-GPU link rate over the ``cp·tp`` GPUs of the ring [B/s]."""
    kv = m.kv_bytes_per_token("bf16") / m.num_layers / np.minimum(lay.tp, max(m.num_kv_heads, 1))
    ring = cal.tp_comm_exposed * layers * 3.0 * (lay.cp - 1) * seq_local * kv / rate
    return np.where(lay.cp > 1, ring, 0.0)


def activation_bytes_per_layer(m, seq, tp, recompute: str):
    """Activation memory one layer keeps for the backward pass per GPU [B] (Korthikanti et al. 2022,
    arXiv 2205.05198: ``34·s·h`` per sequence without recompute, ``2·s·h`` with full recompute, split by TP).

    Non-gated (GPT) MLP, Korthikanti section 4.1 per token in bytes, with the MLP width ``I`` kept: attention
    ``11h`` (LayerNorm output 2h, Q and K 4h, V 2h, projection input 2h, dropout mask h; the ``5as/h`` score
    term is left out, as flash attention does), MLP ``3h + 4I`` (input 2h, GELU input 2I, ``fc2`` input 2I,
    dropout mask h), two LayerNorm inputs ``4h``: ``18h + 4I``, ``34h`` at ``I = 4h``. The gated form
    ``15h + 4.75·I`` also gives ``34h`` at ``I = 4h``."""
    h = m.hidden_size
    if recompute == "full":
        return ACT_BYTES * seq * h / tp
    i_eff = m.experts_per_token * m.moe_intermediate_size if m.is_moe else m.intermediate_size
    per_token = 15.0 * h + 4.75 * i_eff if m.mlp_gated else 18.0 * h + 4.0 * i_eff
    return seq * per_token / tp * (1.0 if recompute == "none" else 0.9)


RECOMPUTE_MODES = ("none", "selective", "full")


def check_recompute(recompute) -> int | None:
    """Index into :data:`RECOMPUTE_MODES` of a named mode, ``None`` for ``None`` (the lightest that fits);
    ScenarioError naming ``recompute`` otherwise."""
    if recompute is None:
        return None
    if not isinstance(recompute, str) or recompute not in RECOMPUTE_MODES:
        raise ScenarioError("recompute", f"must be one of {list(RECOMPUTE_MODES)} or None (the lightest that "
                                         f"fits), got {recompute!r}")
    return RECOMPUTE_MODES.index(recompute)


def _recompute_choice(fitting, forced: int | None):
    """(fits, recompute index) per layout from whether each mode fits: the lightest that fits, or the forced one."""
    if forced is None:
        return fitting[0] | fitting[1] | fitting[2], np.where(fitting[0], 0, np.where(fitting[1], 1, 2))
    fits = np.asarray(fitting[forced])
    return fits, np.full(np.shape(fits), forced)


def training_step(m, acc, cal, par: Parallelism, *, seq: float, global_batch: float, precision: str,
                  offload: bool = False, recompute: str | None = None, sharding: str = "megatron") -> dict | None:
    """Cost of one optimizer step for a fixed layout (:func:`training_steps` for one layout, as floats); ``None``
    when it does not fit in memory."""
    res = training_steps(m, acc, cal, Layouts.of([par]), seq=seq, global_batch=global_batch, precision=precision,
                         offload=offload, recompute=recompute, sharding=sharding)
    return _step_row(res, 0, offload)


def _step_row(res: dict, i: int, offload: bool) -> dict | None:
    """Layout ``i`` of :func:`training_steps`' result as floats (``None`` when it does not fit)."""
    if not res["fits"][i]:
        return None
    out = {k: float(v[i]) for k, v in res.items() if k not in ("fits", "recompute")}
    return dict(out, recompute=RECOMPUTE_MODES[int(res["recompute"][i])], offload=offload)


def training_steps(m, acc, cal, lay: Layouts, *, seq: float, global_batch, precision: str,
                   offload: bool = False, recompute: str | None = None, sharding: str = "megatron",
                   seq_cv: float = 0.0) -> dict:
    """Cost of one optimizer step for each layout of ``lay`` (arrays, vectorised over layouts).

    Returns ``fits`` (the layout fits in memory), ``step_s`` (inf where it does not), ``memory``, ``state``
    [B per GPU], ``recompute`` (index into :data:`RECOMPUTE_MODES`), ``bubble``, ``compute_s``, ``comm_s``.
    ``global_batch`` [sequences] is a number or one per layout. ``offload``: Adam master weights and moments live
    in host memory (DeepSpeed/verl "optimizer offload", as in verl's DeepSeek-V3 run on 96 H20, validation RL-08);
    the GPU keeps bf16 weights and gradients (4 B/param) and each step moves gradients down and weights up
    (4 B/param) at the host link rate. ``recompute``: ``None`` picks the lightest mode that fits for each layout; a
    name of :data:`RECOMPUTE_MODES` forces it (a layout fits only if it fits with that mode).

    ``sharding``: ``"megatron"`` (the distributed optimizer above) or ``"fsdp"`` (FSDP / ZeRO-3: parameters,
    gradients and optimizer state sharded over the data-parallel group, the parameters gathered layer by layer in
    forward and backward and the gradients reduce-scattered every micro-batch; :func:`fsdp_state_bytes`,
    :func:`fsdp_exposed_comm_s`; docs/rl-modeling.md §3.9).

    ``seq_cv``: the sequences' length spread (coefficient of variation; 0: all ``seq`` tokens, the calibration's
    benchmarks); the compute waits for the fullest data-parallel rank, :func:`dp_imbalance` (§3.12)."""
    forced = check_recompute(recompute)
    fsdp = check_sharding(sharding) == "fsdp"
    tp, pp, dp, ep, cp = lay.tp, lay.pp, lay.dp, lay.ep, lay.cp
    h, L = m.hidden_size, m.num_layers
    seq_full, seq = seq, seq / cp                   # context parallelism: each GPU holds seq/cp of a sequence
    micro = np.maximum(global_batch / dp, 1.0)      # micro-batches (one sequence each) per DP rank; a rank
    #                                                 with less than one sequence still runs a whole one
    dense_p, expert_p = _params_per_gpu(m, lay)
    layers = stage_layers(L, pp, lay.vp)
    state = _state_bytes(lay, (dense_p, expert_p), layers, offload=offload, fsdp=fsdp)
    cap = cal.training_memory_fraction * acc.hbm_bytes
    even = L % (pp * lay.vp) == 0
    in_flight = np.minimum(pp, micro) * layers
    acts = [in_flight * activation_bytes_per_layer(m, seq, tp, mode) for mode in RECOMPUTE_MODES]
    fitting = [state + a <= cap for a in acts]
    fits, recompute = _recompute_choice(fitting, forced)
    act = np.choose(recompute, acts)
    mem = state + act

    peak = acc.peak_flops_per_s(precision)
    bw = acc.hbm_bytes_per_s * cal.hbm_efficiency
    # per-GPU link rates of the step's collectives, looked up once: tensor, pipeline (point to point), context
    # (the cp·tp ring) and data parallelism (over all the layout's GPUs)
    tp_rate, pp_rate, cp_rate, dp_rate = (link_rate(acc, cal, g) for g in (tp, 2, cp * tp, lay.gpus))
    t_compute = 0.0

    def gemm(rows, params, n_dim, k_dim, count):
        eff = gemm_efficiency(cal, precision, rows, n_dim, k_dim)
        fl = 6.0 * rows * params / tp
        t_c = fl / (peak * eff)
        t_m = 3.0 * params * bytes_per_element(precision) / tp / bw
        return count * np.maximum(t_c, t_m)

    q_dim = m.num_attention_heads * m.qk_head_dim
    t_compute += gemm(seq, m.attention_params_per_layer, q_dim / tp, h, layers)
    if m.num_dense_layers:
        t_compute += gemm(seq, m.dense_mlp_params, m.intermediate_size / tp, h, layers * m.num_dense_layers / L)
    attn_fl = 3.0 * seq_full * m.attention_flops_per_token(seq_full / 2.0) / L / tp / cp
    attn_peak = acc.peak_flops_per_s("bf16") * cal.attention_efficiency
    t_attn = layers * attn_fl / attn_peak
    t_compute += t_attn
    comm = 0.0
    moe_layers = layers * m.num_moe_layers / L if m.is_moe else 0.0
    if m.is_moe:
        etp = _expert_tp(lay)
        group = ep * etp
        rows = group * (seq / tp) * m.experts_per_token / m.num_experts
        eff = gemm_efficiency(cal, precision, rows, m.moe_intermediate_size / etp, h)
        fl = 6.0 * seq * m.experts_per_token * m.expert_params / tp
        t_compute += moe_layers * fl / (peak * eff)
        t_compute += gemm(seq, m.moe_always_on_params_per_layer, m.moe_intermediate_size / tp, h, moe_layers)
        dispatch = 1.0 if precision in ("fp8", "fp4") else ACT_BYTES
        vol = 2.0 * (seq / tp) * h * (dispatch + ACT_BYTES) * np.minimum(m.experts_per_token, ep) * etp * (
            group - 1) / group
        comm += np.where(ep > 1, cal.ep_comm_exposed * moe_layers * vol / link_rate(acc, cal, group), 0.0)
    i_eff = m.experts_per_token * m.moe_intermediate_size if m.is_moe else m.intermediate_size
    # element-wise traffic: the inference count (kernels op 4) for forward, backward (x2)
    t_compute += layers * 3.0 * ACT_BYTES * (seq / tp) * (ELEMENTWISE_HIDDEN_PASSES * h
                                                           + mlp_activation_passes(m) * i_eff) / bw
    t_compute = np.where(recompute == 1, t_compute + t_attn / 3.0,
                         np.where(recompute == 2, t_compute * (4.0 / 3.0), t_compute))
    # LM head on the last stage; uneven stages give that stage one layer fewer, and the slower of it and a
    # middle stage paces the pipeline
    head_eff = gemm_efficiency(cal, precision, seq, m.vocab_size / tp, h)
    t_head = 6.0 * seq * m.lm_head_params / tp / (peak * head_eff)
    t_compute = np.where(even, t_compute + t_head, np.maximum(t_compute, t_compute * (layers - 1) / layers + t_head))
    comm += np.where(tp > 1, cal.tp_comm_exposed * layers * 4.0 * 2.0 * (tp - 1) / tp * ACT_BYTES * seq * h
                     / tp_rate, 0.0)
    comm += np.where(pp > 1, 2.0 * ACT_BYTES * seq * h / tp / pp_rate, 0.0)
    comm += _cp_comm(m, cal, lay, seq, layers, cp_rate)
    n_ops = (12.0 if m.is_moe else 9.0) * layers * 3.0
    if fsdp:  # the layer-by-layer gathers and reduce-scatters of every micro-batch, beyond what compute hides
        comm = comm + fsdp_exposed_comm_s(acc, cal, dense_p + expert_p, lay, t_compute)
    per_micro = (t_compute + comm + n_ops * cal.op_overhead_s) / cal.training_runtime_efficiency
    bubble = np.where(pp > 1, (pp - 1) / (micro * lay.vp), 0.0)
    step = per_micro * micro * (1.0 + bubble) * dp_imbalance(micro, dp, seq_cv)
    for term in _optimizer_step_s(acc, cal, (dense_p, expert_p), lay, dp_rate, offload=offload, fsdp=fsdp):
        step = step + term
    return dict(fits=fits, step_s=np.where(fits, step, np.inf), memory=mem, state=state, recompute=recompute,
                bubble=bubble, compute_s=t_compute * micro, comm_s=comm * micro)


_Z = np.linspace(-6.0, 9.0, 301)                   # standard-normal abscissae for dp_imbalance's expectation
_PHI, _CDF = np.exp(-0.5 * _Z**2), ndtr(_Z)


def dp_imbalance(n, ranks, cv):
    """How much longer a data-parallel optimizer step takes than its mean rank's share when each of ``ranks``
    ranks gets ``n`` sequences whose work has coefficient of variation ``cv``: ``E[max_r S_r] / E[S]`` with
    ``S_r`` the sum of a rank's ``n`` sequences (every rank waits at the step's gradient reduction for the
    fullest). ``S`` is taken as log-normal with the sum's mean ``n`` and variance ``n·cv²`` (Fenton 1960, IRE
    Trans. Commun. Syst. 8(1):57-67: the sum of independent log-normals matched in its first two moments), and
    ``E[max of D] = ∫ x d(F(x)^D)``, the largest order statistic of ``D`` independent draws (David & Nagaraja,
    *Order Statistics*, 3rd ed., §4.2). 1 when ``ranks`` is 1 or ``cv`` is 0. Checked against sampling in
    tests/unit/roofline/test_dp_imbalance.py: within 2.5% from 16 sequences per rank, 8% below (``ranks`` ≤ 64,
    ``cv`` ≤ 1.1). Arrays broadcast (vectorised over layouts); docs/rl-modeling.md §3.12."""
    if not cv > 0.0:  # fixed lengths (the default): no grid to integrate
        return 1.0
    n = np.maximum(np.asarray(n, dtype=float), 1.0)
    d = np.maximum(np.asarray(ranks, dtype=float), 1.0)
    s2 = np.log1p(float(cv) ** 2 / n)
    s = np.sqrt(s2)[..., None]
    # density of the largest of D standard normals on the grid: D·Φ(z)^(D-1)·φ(z), normalised on the grid
    w = d[..., None] * np.power(np.maximum(_CDF, 1e-300), d[..., None] - 1.0) * _PHI
    mean_max = (w * np.exp(s * _Z - 0.5 * s * s)).sum(-1) / w.sum(-1)
    return np.where((d > 1.0) & (s2 > 0.0), mean_max, 1.0)


def _state_bytes(lay: Layouts, params, layers, *, offload: bool, fsdp: bool):
    """Weights, gradients and optimizer state per GPU [B]: under FSDP :func:`fsdp_state_bytes`; else bf16 weights,
    fp32 gradients and the distributed optimizer's share (12 B/param over DP x CP, experts over their own
    data-parallel width), or with ``offload`` the GPU's 4 B/param. ``params``: (non-expert, expert) per GPU."""
    dense_p, expert_p = params
    if fsdp:
        return fsdp_state_bytes(dense_p + expert_p, lay.dp * lay.cp, layers, offload=offload)
    if offload:
        return (dense_p + expert_p) * 4.0
    return dense_p * (2 + 4 + 12 / (lay.dp * lay.cp)) + expert_p * (2 + 4 + 12 / _expert_dp(lay))


def _optimizer_step_s(acc, cal, params, lay: Layouts, dp_rate, *, offload: bool, fsdp: bool) -> tuple:
    """Once per optimizer step [s], two terms: the distributed optimizer's gradient reduce-scatter and parameter
    all-gather (bf16, a calibrated share exposed; none under FSDP, whose collectives run every micro-batch), and the
    Adam update, memory-bound over each GPU's shard (34 B/param), or with ``offload`` the gradients down and the
    weights up over the host link (4 B/param). ``params``: (non-expert, expert) parameters per GPU; ``dp_rate``: the
    per-GPU link rate over all the layout's GPUs [B/s]."""
    dense_p, expert_p = params
    dp, cp, edp = lay.dp, lay.cp, _expert_dp(lay)
    if fsdp:
        shard = (dense_p + expert_p) / (dp * cp)
        comm = 0.0
    else:
        shard = dense_p / (dp * cp) + expert_p / edp
        grads = dense_p * ACT_BYTES * 2.0 * (dp - 1) / dp / dp_rate
        grads = grads + np.where((expert_p != 0) & (edp > 1),
                                 expert_p * ACT_BYTES * 2.0 * (edp - 1) / edp / dp_rate, 0.0)
        comm = np.where(dp > 1, cal.dp_comm_exposed * grads, 0.0)
    if offload:
        return comm, 4.0 * (shard if fsdp else dense_p + expert_p) / cal.host_offload_bytes_per_s
    bw = acc.hbm_bytes_per_s * cal.hbm_efficiency
    return comm, 34.0 * (shard if fsdp else dense_p / (dp * cp) + expert_p / edp) / bw


SHARDINGS = ("megatron", "fsdp")
"""How a trainer lays out its state: ``"megatron"`` (tensor/pipeline/expert parallelism with the distributed
optimizer) or ``"fsdp"`` (FSDP / FSDP2 / ZeRO-3 full sharding over data parallelism)."""

FSDP_GATHERED_UNITS = 2
"""Layers whose parameters an FSDP rank holds unsharded at once: the one being computed and the next, prefetched
(PyTorch FSDP's forward/backward prefetch; Zhao et al. 2023, arXiv 2304.11277, section 3.3)."""


def check_sharding(sharding) -> str:
    """``sharding`` when it is one of :data:`SHARDINGS`; ScenarioError naming ``sharding`` with the choices
    otherwise."""
    if not isinstance(sharding, str) or sharding not in SHARDINGS:
        raise ScenarioError("sharding", f"must be one of {list(SHARDINGS)}, got {sharding!r}")
    return sharding


def check_fsdp_layout(par: Parallelism, sharding: str, field: str) -> None:
    """FSDP shards over data parallelism and keeps tensor (FSDP2 + TP) and context parallelism, but neither
    pipeline stages nor expert parallelism: ScenarioError naming ``<field>.pp`` (``parallel.pp``, ``trainer.pp``)
    when ``par`` has them under ``sharding = "fsdp"``."""
    if check_sharding(sharding) != "fsdp":
        return
    for degree in ("pp", "ep", "vp"):
        if getattr(par, degree) > 1:
            raise ScenarioError(f"{field}.{degree}", f"{degree}={getattr(par, degree)}: sharding = 'fsdp' shards "
                                                     f"the model over data parallelism and has no {degree}; use "
                                                     f"sharding = 'megatron' or {degree} = 1")


def fsdp_state_bytes(params_per_gpu, shards, layers, *, offload: bool = False):
    """Weights, gradients and optimizer state per GPU under FSDP full sharding [B] (docs/rl-modeling.md §3.9):
    fp32 parameters, fp32 gradients and Adam's two moments, 16 B/param, sharded over the ``shards`` GPUs of the
    data-parallel group (ZeRO-3, Rajbhandari et al. 2020, arXiv 1910.02054), plus the bf16 parameters and
    gradients of the :data:`FSDP_GATHERED_UNITS` layers held unsharded (``params_per_gpu / layers`` each). With
    ``offload`` the fp32 master weights and Adam state live in host memory and the GPU keeps its bf16 shard of
    parameters and gradients (4 B/param), as the Megatron path's optimizer offload. Arrays broadcast."""
    shard = (4.0 if offload else 16.0) * params_per_gpu / shards
    return shard + FSDP_GATHERED_UNITS * 2.0 * ACT_BYTES * params_per_gpu / np.maximum(layers, 1.0)


def fsdp_link_rate(acc, cal, lay: Layouts):
    """Per-GPU rate of an FSDP collective over the shard group [B/s]: the scale-up rate inside the NVLink domain;
    beyond it NCCL runs one ring per channel, each crossing the network at a different GPU's NIC, so the
    ``k = min(dp·cp, domain/tp)`` members of the group in a domain share their ``k`` NICs and each moves its
    ``M·(n − 1)/n`` at ``min(B_up, k·B_NIC)`` [derived: the ring all-gather's per-link traffic split over the
    channels; NCCL's bus bandwidth, https://github.com/NVIDIA/nccl-tests/blob/master/doc/PERFORMANCE.md]. With
    ``tp = domain`` (FSDP2 + TP8 on 8-GPU servers) every GPU is alone in its domain and gets its own NIC, as the
    distributed optimizer's data-parallel rings do."""
    n = lay.dp * lay.cp
    up = acc.scaleup_bytes_per_s * cal.scaleup_efficiency
    k = np.maximum(np.minimum(n, acc.scaleup_domain_gpus // lay.tp), 1)
    out = np.minimum(up, k * acc.scaleout_bytes_per_s * cal.scaleout_efficiency)
    return np.where(lay.gpus <= acc.scaleup_domain_gpus, up, out)


def fsdp_comm_s(acc, cal, params_per_gpu, lay: Layouts):
    """FSDP's collectives per micro-batch and GPU [s]: all-gather of the parameters in forward and again in
    backward and reduce-scatter of the gradients, 3 x M with M the bf16 bytes of the GPU's parameters before
    sharding (DeepSpeed ZeRO++: "3M" per step, deepspeedai/DeepSpeed@862edef46a04:blogs/zeropp/chinese/README.md),
    each a ring over the ``n = dp·cp`` shards moving ``M·(n − 1)/n`` per GPU at :func:`fsdp_link_rate`.
    Frameworks that do not skip the reduce-scatter under gradient accumulation (verl's FSDP workers) pay it every
    micro-batch."""
    n = lay.dp * lay.cp
    volume = 3.0 * ACT_BYTES * params_per_gpu * (n - 1) / n
    return np.where(n > 1, volume / fsdp_link_rate(acc, cal, lay), 0.0)


def fsdp_exposed_comm_s(acc, cal, params_per_gpu, lay: Layouts, compute_s):
    """What FSDP's collectives add to a micro-batch of ``compute_s`` seconds of compute [s]:
    ``max(0, t_comm − o·t_compute)``. They are prefetched a layer ahead and overlap the layer before, so up to the
    share ``o`` of the compute time hides them (``fsdp_comm_overlap``, data/calibration.toml: llm-foundry's FSDP1
    13B rows on H100, flat at 39.6-39.9% MFU from 8 to 64 GPUs at 4,096 tokens per GPU, need at least 0.4); with
    few tokens per micro-batch (short RL trajectories) the micro-batch turns communication-bound
    (docs/rl-modeling.md §3.9)."""
    return np.maximum(fsdp_comm_s(acc, cal, params_per_gpu, lay) - cal.fsdp_comm_overlap * compute_s, 0.0)


CP_MIN_TOKENS_PER_RANK = 8192
"""Context parallelism is searched only while every rank keeps at least this many tokens of a sequence: Llama 3's
131,072-token stage ran CP16, 8,192 tokens per rank (arXiv 2407.21783 section 3.3.2); shorter shards shrink the
GEMMs and add ring traffic for nothing."""
_CP = (1, 2, 4, 8, 16)


def candidate_layouts(m, acc, gpus: int, seq: float | None = None, sharding: str = "megatron"):
    """Every (TP, CP, PP, DP, EP, VP) layout of ``gpus`` GPUs the training search considers; context parallelism
    only for sequences of ``seq`` tokens long enough (:data:`CP_MIN_TOKENS_PER_RANK` per rank). Under
    ``sharding = "fsdp"`` only data and context parallelism (FSDP with Ulysses-style sequence parallelism, as verl's
    FSDP workers run; a pinned layout may add tensor parallelism, FSDP2 + TP)."""
    for tp, pp, dp, ep, vp, cp in candidate_degrees(m, acc, gpus, seq, sharding):
        yield Parallelism(tp=tp, pp=pp, dp=dp, ep=ep, vp=vp, cp=cp)


def candidate_degrees(m, acc, gpus: int, seq: float | None = None,
                      sharding: str = "megatron") -> list[tuple[int, int, int, int, int, int]]:
    """:func:`candidate_layouts` as ``(tp, pp, dp, ep, vp, cp)`` tuples, in the same order (for :class:`Layouts`)."""
    if check_sharding(sharding) == "fsdp":
        return [d for d in candidate_degrees(m, acc, gpus, seq) if d[0] == d[1] == d[3] == 1]
    out = []
    cps = [cp for cp in _CP if cp == 1 or (seq is not None and seq / cp >= CP_MIN_TOKENS_PER_RANK)]
    for tp in _POW2:
        if tp > acc.scaleup_domain_gpus or m.num_attention_heads % tp or gpus % tp:
            continue
        for cp in cps:
            for pp in _POW2[:7]:
                if pp > m.num_layers or gpus % (tp * pp * cp):
                    continue
                dp = gpus // (tp * pp * cp)
                for ep in (_POW2 if m.is_moe else (1,)):
                    if (tp * dp * cp) % ep or (m.is_moe and m.num_experts % ep):
                        continue
                    for vp in _VP if pp > 1 else (1,):
                        # even chunks, or uneven stages (embedding and head as a layer each) of >= 2 layers a chunk
                        if m.num_layers % (pp * vp) == 0 or m.num_layers + 2 >= 2 * pp * vp:
                            out.append((tp, pp, dp, ep, vp, cp))
    return out


def _check_cp_divides(par: Parallelism, seq: float) -> None:
    """Context parallelism splits each sequence into ``2·cp`` chunks (two per rank, for a balanced causal mask:
    NVIDIA/Megatron-LM megatron/training/utils.py ``get_batch_on_this_cp_rank``), so a fixed ``seq_tokens`` must be
    a multiple of ``2·cp``; ScenarioError naming ``parallel.cp`` with the degrees that divide it and the padded
    length otherwise. (RL trajectories of varying length are padded per sequence by the frameworks, so the RL
    model, which passes a mean length, does not call this.)"""
    if par.cp <= 1 or seq != int(seq) or int(seq) % (2 * par.cp) == 0:
        return
    ok = [c for c in (1, 2, 4, 8, 16, 32) if int(seq) % (2 * c) == 0 or c == 1]
    padded = -(-int(seq) // (2 * par.cp)) * 2 * par.cp
    raise ScenarioError("parallel.cp", f"cp={par.cp} splits each sequence into {2 * par.cp} chunks, but seq_tokens = "
                                       f"{int(seq):,} is not a multiple of {2 * par.cp}; cp in {ok} divides it, or pad "
                                       f"seq_tokens to {padded:,}")


def training_throughput(model, hw, *, gpus, seq_tokens, precision="bf16", parallel=None,
                        global_batch_tokens=None, theoretical=False, optimizer_offload=None, recompute=None,
                        calibration=None, sharding="megatron") -> TrainingEstimate:
    """Training tokens/s, MFU and memory for ``gpus`` GPUs on sequences of ``seq_tokens``.

    Parameters
    ----------
    gpus : int [GPUs]; seq_tokens : [tokens] per training sequence.
    precision : "bf16" | "fp8" | "fp4"  GEMM precision (MFU uses its dense peak).
    parallel : Parallelism with ``tp·pp·dp == gpus``; default: the fastest layout that fits.
    global_batch_tokens : tokens per optimizer step (default 1,048,576, at least one sequence per DP rank).
    theoretical : pure datasheet roofline.
    optimizer_offload : keep Adam state in host memory; ``None`` (default) offloads only when no layout fits
        on the GPUs alone, ``False`` never, ``True`` always.
    recompute : None | "none" | "selective" | "full"  activation recompute; ``None`` (default) the lightest that
        fits each layout; a named mode forces it (the search then keeps only layouts that fit with it).
    calibration : a Calibration for ``hw`` or a CalibrationSet (default: the shipped factors; not with
        ``theoretical``), as :func:`~tcocalc.roofline.serving.generation_throughput`'s.
    sharding : "megatron" | "fsdp"  the distributed optimizer over TP/PP/EP layouts (default), or FSDP / ZeRO-3
        full sharding over data (and context) parallelism (docs/rl-modeling.md §3.9); a ``parallel`` layout under
        FSDP may have ``tp`` but not ``pp`` or ``ep``.

    Raises ScenarioError for bad arguments (naming ``recompute`` when the named mode fits no layout but a heavier
    one would, with the modes that fit) and InfeasibleError (with the smallest GPU count that fits)
    when no layout holds the model.
    """
    gpus = check_whole("gpus", gpus)
    seq = check_positive("seq_tokens", seq_tokens)
    check_recompute(recompute)
    check_sharding(sharding)
    m, acc, precision, _, par0 = resolve_inputs(model, hw, precision, None, parallel)
    cal = calibration_of(acc, calibration, theoretical=theoretical)
    gbt = DEFAULT_GLOBAL_BATCH_TOKENS if global_batch_tokens is None else check_positive(
        "global_batch_tokens", global_batch_tokens)
    if parallel is not None:
        if par0.gpus != gpus:
            raise ScenarioError("parallel", f"tp*pp*dp*cp = {par0.gpus} must equal gpus = {gpus}")
        _check_cp_divides(par0, seq)
        check_fsdp_layout(par0, sharding, "parallel")
        layouts = [par0]
    else:
        layouts = list(candidate_layouts(m, acc, gpus, seq, sharding))
    lay = Layouts.of(layouts)
    job = TrainingJob(m=m, acc=acc, cal=cal, seq=seq, global_batch_tokens=gbt, precision=precision,
                      sharding=sharding)
    offloads = (False, True) if optimizer_offload is None else (bool(optimizer_offload),)
    best = _fastest(job, lay, offloads, recompute)
    if best is None and recompute is not None:
        fitting = [other for other in RECOMPUTE_MODES
                   if other != recompute and _fastest(job, lay, offloads, other) is not None]
        if fitting:
            where = f"layout {parallel.label()}" if parallel is not None else f"any layout of {gpus} GPUs"
            raise ScenarioError("recompute", f"recompute={recompute!r} does not fit in memory on {where} "
                                             f"({m.name}, {acc.name}, {seq:,.0f}-token sequences); "
                                             f"{' or '.join(repr(x) for x in fitting)} fits")
    if best is None:
        raise _no_fit(job, gpus, parallel, optimizer_offload is not False)
    tps, par, res, gb = best
    peak = acc.peak_flops_per_s(precision)
    mfu = m.training_flops_per_token(seq) * tps / (gpus * peak)
    return TrainingEstimate(
        tokens_per_s=tps, tokens_per_s_per_gpu=tps / gpus, mfu=mfu, step_time_s=res["step_s"], parallel=par,
        memory_per_gpu_bytes=res["memory"], recompute=res["recompute"], optimizer_offload=res["offload"],
        global_batch_tokens=gb * seq,
        bubble_fraction=res["bubble"], compute_s=res["compute_s"], comm_s=res["comm_s"], tier=cal.tier,
        mfu_convention=f"6·N_fl + causal attention FLOPs over dense {precision} peak "
                       f"({peak / 1e12:,.0f} TFLOP/s per GPU)")


@dataclass(frozen=True)
class TrainingJob:
    """What a training search is asked: model ``m`` on accelerator ``acc`` under calibration ``cal``, sequences of
    ``seq`` tokens, ``global_batch_tokens`` per optimizer step, at ``precision``, its state laid out by
    ``sharding`` (:data:`SHARDINGS`; the values the searches below take), with activation ``recompute`` (a name of
    :data:`RECOMPUTE_MODES` the framework runs whatever memory needs, or ``None``: the lightest that fits)."""

    m: object
    acc: object
    cal: Calibration
    seq: float
    global_batch_tokens: float
    precision: str
    sharding: str = "megatron"
    recompute: str | None = None
    seq_cv: float = 0.0

    def candidates(self, gpus: int) -> list[tuple[int, int, int, int, int, int]]:
        """:func:`candidate_degrees` of ``gpus`` GPUs for this job's model, accelerator, sequence and sharding."""
        return candidate_degrees(self.m, self.acc, gpus, self.seq, self.sharding)

    def global_batch(self, lay: Layouts) -> np.ndarray:
        """Sequences per step for each layout: the batch tokens over ``seq``, at least one per DP rank."""
        return np.maximum(self.global_batch_tokens / self.seq, lay.dp.astype(float))

    def steps(self, lay: Layouts, *, offload: bool, recompute=None) -> dict:
        """:func:`training_steps` of every layout of ``lay`` at the job's batch (``recompute``: the job's unless
        named)."""
        return training_steps(self.m, self.acc, self.cal, lay, seq=self.seq, global_batch=self.global_batch(lay),
                              precision=self.precision, offload=offload,
                              recompute=self.recompute if recompute is None else recompute, sharding=self.sharding,
                              seq_cv=self.seq_cv)

    def fewest_gpus(self) -> int | None:
        """The smallest GPU count that holds this job's model and sequences (the lightest recompute that fits,
        optimizer offload when nothing fits without), at the default global batch: the ``min_gpus`` that
        :func:`training_throughput` on one GPU reports; 1 when one GPU holds it, ``None`` when no count up to
        32,768 does."""
        job = replace(self, global_batch_tokens=DEFAULT_GLOBAL_BATCH_TOKENS)
        if _fastest(job, Layouts.of(list(candidate_layouts(job.m, job.acc, 1, job.seq, job.sharding))),
                    (False, True), None) is not None:
            return 1
        found = _smallest_count(job, 2, True)
        return None if found is None else found[0]


def _fastest(job: TrainingJob, lay: Layouts, offloads, recompute):
    """(tokens/s, layout, step row, global batch [sequences]) of the fastest layout of ``lay`` that fits, trying
    the offload options in order (offload only when nothing fits on the GPUs alone); ``None`` when none fits."""
    gbs, seq = job.global_batch(lay), job.seq
    for offload in offloads:
        if not len(lay):
            break
        steps = job.steps(lay, offload=offload, recompute=recompute)
        if steps["fits"].any():
            i = int(np.argmax(gbs * seq / steps["step_s"]))  # the first of the fastest
            gb = float(gbs[i])
            return gb * seq / float(steps["step_s"][i]), lay.at(i), _step_row(steps, i, offload), gb
    return None


def _no_fit(job: TrainingJob, gpus, parallel, offload: bool) -> InfeasibleError:
    m, acc = job.m, job.acc
    what = f"training {m.name} ({job.precision}) on {gpus} x {acc.name} with {job.seq:,.0f}-token sequences"
    if parallel is not None:
        prefix = f"{what}: layout {parallel.label()} does not fit in memory"
    else:
        prefix = f"{what}: no layout fits in memory even with full recompute" + (
            " and optimizer offload" if offload else "")
    start = 1 if parallel is not None else gpus + 1
    found = _smallest_count(job, start, offload)
    if found is None:
        return InfeasibleError(f"{prefix}; nothing up to {_MAX_GPUS:,} GPUs fits")
    n, par = found
    return InfeasibleError(f"{prefix}; the smallest count that fits is {n} GPUs ({par.label()})", min_gpus=n,
                           layout=par)


_MAX_GPUS = 32_768


def _fitting_layout(job: TrainingJob, n: int, offload: bool) -> Parallelism | None:
    lay = Layouts.of(job.candidates(n))
    if not len(lay):
        return None
    fits = job.steps(lay, offload=offload)["fits"]
    return lay.at(int(np.argmax(fits))) if fits.any() else None


def _smallest_count(job: TrainingJob, start: int, offload: bool) -> tuple[int, Parallelism] | None:
    """The smallest GPU count ``>= start`` with a layout that fits in memory, and that layout.

    Bounded work. Memory falls as DP widens with TP, PP and EP fixed (the optimizer state is sharded
    further, fewer micro-batches are in flight; VP does not matter), and TP and PP are powers of two, so
    a layout of ``n`` GPUs that fits also fits at the next power of two: the first power of two that fits,
    ``P``, bounds the answer to ``(P/2, P]``. Each (TP, PP, EP) family of ``P``'s candidate layouts then
    gives its smallest fitting DP in that range by bisection (DP a multiple of what EP needs)."""
    p = 1
    while p < start:
        p *= 2
    while p <= _MAX_GPUS:
        par = _fitting_layout(job, p, offload)
        if par is not None:
            break
        p *= 2
    else:
        return None
    best_n, best_par = p, par
    lowest = max(start, p // 2 + 1)
    families: dict[tuple[int, int, int, int], int] = {}
    for q in candidate_layouts(job.m, job.acc, p, job.seq, job.sharding):
        families.setdefault((q.tp, q.pp, q.ep, q.cp), q.vp)

    def fits(tp, pp, ep, cp, vp, dp):
        q = Parallelism(tp=tp, pp=pp, dp=dp, ep=ep, vp=vp, cp=cp)
        ok = training_step(job.m, job.acc, job.cal, q, seq=job.seq, global_batch=max(job.global_batch_tokens /
                                                                                     job.seq, dp),
                           precision=job.precision, offload=offload, sharding=job.sharding) is not None
        return q if ok else None

    for (tp, pp, ep, cp), vp in families.items():
        unit, step = tp * pp * cp, ep // math.gcd(ep, tp * cp)  # tp·dp·cp divisible by ep <=> dp a multiple of step
        lo = -(-lowest // (unit * step))               # in multiples of step
        hi = (best_n - 1) // (unit * step)             # only counts below the best so far
        found = None
        while lo <= hi:
            mid = (lo + hi) // 2
            q = fits(tp, pp, ep, cp, vp, mid * step)
            if q is None:
                lo = mid + 1
            else:
                found, hi = q, mid - 1
        if found is not None:
            best_n, best_par = found.gpus, found
    return best_n, best_par


# ---------------------------------------------------------------- the trainer's rate at each GPU count (RL)
# What an RL trainer pool does at many GPU counts at once (:func:`tcocalc.rl.capacity.trainer_capacity`): the
# scenario's pinned layout, or the fastest of the few layout families that win at each count at the default batch
# (every layout where none of them fits the run's job), so a count's rate is the same in a sweep and alone.


def pinned_layout(trainer, m, n: int) -> Parallelism | None:
    """The scenario's pinned trainer layout on ``n`` GPUs (unpinned degrees 1, ``dp`` the rest); ``None`` when
    ``tp·pp·cp`` does not divide ``n`` or the degrees do not fit the model (heads, experts, ``ep | tp·dp·cp``)."""
    tp, pp, cp, vp, ep = (getattr(trainer, k) or 1 for k in ("tp", "pp", "cp", "vp", "ep"))
    if n % (tp * pp * cp) or m.num_attention_heads % tp or (m.is_moe and m.num_experts % ep) or pp > m.num_layers:
        return None
    if not m.is_moe and ep > 1:
        return None
    try:
        return Parallelism(tp=tp, pp=pp, cp=cp, vp=vp, ep=ep, dp=n // (tp * pp * cp))
    except ValueError:
        return None


@functools.lru_cache(maxsize=4096)
def _pinned_rate(job: TrainingJob, par: Parallelism | None) -> tuple[float, float, float]:
    """(tokens/s, MFU, state bytes per GPU) of one pinned layout; zeros when there is none or it does not fit."""
    if par is None:
        return (0.0, 0.0, 0.0)
    return tuple(float(x) for x in layout_rates(job, Layouts.of([par]))[0])


def job_rates(job: TrainingJob, t, n_t) -> np.ndarray:
    """(tokens/s, MFU, state bytes per GPU) per count of ``n_t``: the pinned layout's (``t``: the scenario's
    ``[trainer]``, :func:`pinned_layout`), else the best layout's (:func:`_count_rates`)."""
    if t.pinned_layout:
        return np.array([_pinned_rate(job, pinned_layout(t, job.m, int(n))) for n in n_t])
    return _count_rates(job, tuple(int(n) for n in n_t))


def layout_rates(job: TrainingJob, lay: Layouts) -> np.ndarray:
    """(tokens/s, MFU, state bytes per GPU) of each layout of ``lay`` (rows) for the training job; zeros where it
    does not fit. A layout that does not fit on the GPUs alone offloads the optimizer (verl RL-08)."""
    m, acc, seq, precision = job.m, job.acc, job.seq, job.precision
    gb = job.global_batch(lay)
    res = job.steps(lay, offload=False)
    step, state = res["step_s"], res["state"]
    if not res["fits"].all():
        off = job.steps(lay, offload=True)
        step, state = np.where(res["fits"], step, off["step_s"]), np.where(res["fits"], state, off["state"])
    tps = np.where(np.isfinite(step), gb * seq / step, 0.0)
    mfu = m.training_flops_per_token(seq) * tps / (lay.gpus * acc.peak_flops_per_s(precision))
    return np.stack([tps, mfu, np.where(tps > 0, state, 0.0)], axis=-1)


def _families(job: TrainingJob, ns: list[int]) -> list[tuple[tuple[int, int, int, int, int], ...]]:
    """The (tp, pp, ep, vp, cp) families that win at each GPU count of ``ns``: the three fastest layouts at that
    count (the first of equals first) for the job at the training model's default batch
    (:data:`~tcocalc.roofline.training.DEFAULT_GLOBAL_BATCH_TOKENS`, whatever the run's). The counts not cached yet
    are searched in one vectorised call (every count's candidates scored together: the same rows as alone)."""
    known, todo = _COUNT_FAMILIES.missing(job, ns)
    if todo:
        base = replace(job, global_batch_tokens=DEFAULT_GLOBAL_BATCH_TOKENS)
        cands = [base.candidates(n) for n in todo]
        every = [c for cs in cands for c in cs]
        lay = Layouts.of(every) if every else None
        tps = layout_rates(base, lay)[:, 0] if every else np.zeros(0)
        start = 0
        for n, cs in zip(todo, cands, strict=True):
            mine = tps[start:start + len(cs)]
            fit = np.flatnonzero(mine > 0)
            fams = {(int(lay.tp[i]), int(lay.pp[i]), int(lay.ep[i]), int(lay.vp[i]), int(lay.cp[i]))
                    for i in start + fit[np.argsort(-mine[fit], kind="stable")][:3]}
            known[n] = tuple(sorted(fams))
            start += len(cs)
    return [known[n] for n in ns]


@functools.lru_cache(maxsize=1024)
def _count_rates(job: TrainingJob, ns: tuple[int, ...]) -> np.ndarray:
    """(tokens/s, MFU, state bytes per GPU) of the trainer on each GPU count of ``ns`` (rows): the fastest member of
    the layout families that win at that count at the default batch (:func:`_families`), or, where none fits the
    run's job, the fastest of every layout (:func:`_any_layout_rate`). A count's rate depends on the count alone, so
    a sweep's row is what the count gives alone (:func:`~tcocalc.evaluate`); counts that share their families are
    scored in one call. Cached per (job, counts): the array is read-only."""
    rates = np.zeros((len(ns), 3))
    groups: dict[tuple, list[int]] = {}
    for i, fams in enumerate(_families(job, ns)):
        groups.setdefault(fams, []).append(i)
    for fams, idx in groups.items():
        rates[idx] = _trainer_rates(job, [ns[i] for i in idx], fams)
    for i in np.flatnonzero(rates[:, 0] == 0):
        rates[i] = _any_layout_rate(job, ns[i])
    rates.flags.writeable = False
    return rates


@functools.lru_cache(maxsize=1024)
def _any_layout_rate(job: TrainingJob, n: int) -> tuple[float, float, float]:
    """(tokens/s, MFU, state bytes per GPU) of the fastest layout of every candidate on ``n`` GPUs under the run's
    own job: where the families that win at the default batch do not fit the run's (longer sequences, a larger
    batch), a count is infeasible only when no layout at all fits (zeros)."""
    lay = Layouts.of(candidate_degrees(job.m, job.acc, n, job.seq))
    if not len(lay):
        return (0.0, 0.0, 0.0)
    rates = layout_rates(job, lay)
    best = int(np.argmax(rates[:, 0]))
    return tuple(float(x) for x in rates[best]) if rates[best, 0] > 0 else (0.0, 0.0, 0.0)


class _RateCache(dict):
    """Figures per key (a training job, with its families for the rates), each a dict by GPU count, filled a sweep
    at a time (:func:`_trainer_rates`, :func:`_families`); emptied when it would hold more than
    :data:`MAX_CACHED_COUNTS` counts."""

    size = 0

    def cache_clear(self) -> None:
        self.clear()
        self.size = 0

    def missing(self, key, ns) -> tuple[dict, list[int]]:
        """(the key's dict by count, the counts of ``ns`` it lacks, sorted): the caller fills those. When they would
        not fit, the cache is emptied first and every count of ``ns`` is missing (none of them is left behind)."""
        known = self.get(key)
        todo = sorted({n for n in ns if known is None or n not in known})
        if todo and self.size + len(todo) > MAX_CACHED_COUNTS:
            self.cache_clear()
            todo = sorted(set(ns))
        self.size += len(todo)
        return self.setdefault(key, {}), todo


MAX_CACHED_COUNTS = 4096
_TRAINER_RATES = _RateCache()
_COUNT_FAMILIES = _RateCache()  # the winning families per (training job) and GPU count (:func:`_families`)


def _trainer_rates(job: TrainingJob, ns, fams) -> np.ndarray:
    """(tokens/s, MFU, state bytes per GPU) of the best family member at each GPU count of ``ns`` (rows); zeros
    where nothing fits. The counts not cached yet are scored in one vectorised call; when the cache must be emptied
    to make room, every count of ``ns`` is scored again (none of them is left behind)."""
    ns = [int(n) for n in ns]
    known, todo = _TRAINER_RATES.missing((job, fams), ns)
    if todo:
        for n, best in zip(todo, _score_counts(job, todo, fams), strict=True):
            known[n] = best
    return np.array([known[n] for n in ns], dtype=float).reshape(-1, 3)


def _score_counts(job: TrainingJob, counts: list[int], fams) -> list[tuple[float, float, float]]:
    """The best family member's (tokens/s, MFU, state bytes per GPU) at each GPU count, scored in one call."""
    m = job.m
    members, owner = [], []
    for j, n in enumerate(counts):
        for tp, pp, ep, vp, cp in fams:
            if n % (tp * pp * cp):
                continue
            dp = n // (tp * pp * cp)
            if (tp * dp * cp) % ep or (m.is_moe and m.num_experts % ep):
                continue
            members.append((tp, pp, dp, ep, vp, cp))
            owner.append(j)
    rates = layout_rates(job, Layouts.of(members)) if members else np.zeros((0, 3))
    owner = np.array(owner, dtype=int)
    out = []
    for j in range(len(counts)):
        mine = np.flatnonzero(owner == j)
        best = (0.0, 0.0, 0.0)
        if len(mine) and rates[mine, 0].max() > 0:
            best = tuple(float(x) for x in rates[mine[int(np.argmax(rates[mine, 0]))]])
        out.append(best)
    return out


def clear_rate_caches() -> None:
    """Forget every trainer rate computed so far (:func:`tcocalc.rl.capacity.clear_caches` calls it): what a cold
    start measures. No calibration needs it: the calibration is part of every key."""
    for cache in (_COUNT_FAMILIES, _TRAINER_RATES, _count_rates, _pinned_rate, _any_layout_rate):
        cache.cache_clear()
