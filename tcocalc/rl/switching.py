"""Colocated switching: what a colocated step pays, every step, to hand the GPUs from the trainer to the
inference engine and back (docs/rl-modeling.md §3.5).

Per step, on every GPU of the shared pool (all GPUs work in parallel, so the time follows the bytes per GPU):

* a fixed part, ``switch_fixed_s`` (process groups and allocator work around the hand-over);
* the engine's sleep and wake (vLLM sleep level 1: weights to host memory and back, KV cache freed and
  re-allocated): ``2·(engine_wake_fixed_s + W_g / (η_e·B_host))`` with ``W_g`` the engine's weights per GPU;
* where the framework offloads (``colocated_offload``; NeMo RL does, docs/sources.md §N.3.2), the trainer's state
  (bf16 weights, fp32 gradients, the distributed optimizer's share of master weights and Adam moments) to
  host memory and back: ``2·S_t / (η_o·B_host)``;
* the in-process refit (CUDA IPC): ``refit_ipc_fixed_s + W_g / r_IPC`` — each engine GPU receives its full
  share of the weights, whatever the pool size.

An engine that loads weights tensor by tensor (``bucketed_weight_load = false``, NeMo RL through v0.6) pays,
on every refit or weight sync, a fixed handling time per checkpoint tensor (name mapping, IPC handle, the
engine's per-tensor load): ``n_tensors·t_tensor`` (:func:`checkpoint_tensors`; DeepSeek-V3 sends 45,395
tensors per rank, 3 per routed expert).

``B_host`` is the accelerator's measured host-link copy rate (hardware_specs ``host_link_bandwidth``: PCIe
Gen5 x16 ≈ 55 GB/s, NVLink-C2C ≈ 360 GB/s); the constants are in data/rl_calibration.toml with their sources
(docs/sources.md §M.1-§M.2).
"""

from __future__ import annotations

import numpy as np

from ..catalog.calibration import RLCalibration, rl_calibration
from .weight_sync import host_link_rate

__all__ = ["colocated_switch_seconds", "colocated_refit_seconds", "host_link_rate", "checkpoint_tensors"]


def checkpoint_tensors(m) -> int:
    """Tensors in a Hugging Face checkpoint of ``m``: per layer 4 attention projections and 2 norms, a dense MLP's
    3 matrices or, in MoE layers, 3 per routed and shared expert plus the router; embedding, final norm and LM
    head. DeepSeek-V3: 61·6 + 3·3 + 58·(3·257 + 1) + 3 = 45,154 (its vLLM ranks receive 45,395, NeMo RL
    docs/guides/checkpoint-engine-refit.md; MLA's extra projections make the difference)."""
    per_layer = 6 * m.num_layers + 3 * m.num_dense_layers
    if m.is_moe:
        per_layer += m.num_moe_layers * (3 * (m.num_experts + m.num_shared_experts) + 1)
    return per_layer + 3


def per_tensor_seconds(calibration: RLCalibration | None = None) -> float:
    """Handling time per checkpoint tensor when an engine loads weights tensor by tensor [s]
    (``bucketed_weight_load = false``; data/rl_calibration.toml refit_ipc_per_tensor_s; ``calibration``: the RL
    factors, default the shipped ones)."""
    return (rl_calibration() if calibration is None else calibration)["refit_ipc_per_tensor_s"]


def colocated_switch_seconds(acc, engine_weights_per_gpu: float, trainer_state_per_gpu, *, offload: bool,
                             calibration: RLCalibration | None = None, switching: float = 1.0, refit: float = 1.0):
    """Seconds a colocated step spends switching the pool between trainer and engine (module docstring);
    ``trainer_state_per_gpu`` may be an array over pool sizes. ``calibration``: the RL factors (the cluster's
    ``rl_cal``; default the shipped ones). ``switching`` and ``refit``: a run calibration's factors on the switch
    (engine sleep/wake, trainer offload/onload, the fixed switch) and on the in-process refit of the weights
    (docs/calibration.md; 1: uncalibrated)."""
    cal = rl_calibration() if calibration is None else calibration
    host = host_link_rate(acc)
    state = np.asarray(trainer_state_per_gpu, dtype=float)
    engine = 2.0 * (cal["engine_wake_fixed_s"] + engine_weights_per_gpu / (cal["engine_copy_efficiency"] * host))
    trainer = 2.0 * state / (cal["offload_copy_efficiency"] * host) if offload else np.zeros_like(state)
    return (cal["switch_fixed_s"] * switching + engine * switching
            + colocated_refit_seconds(engine_weights_per_gpu, calibration=cal, refit=refit) + trainer * switching)


def colocated_refit_seconds(engine_weights_per_gpu, *, calibration: RLCalibration | None = None, refit: float = 1.0):
    """The in-process refit alone, the weight-update stage of a colocated switch (module docstring):
    ``(refit_ipc_fixed_s + W_g / r_IPC)·refit`` [s], without the engine's sleep/wake, the trainer's offload or the
    fixed switch (the per-tensor load of an unbucketed engine is charged beside it, by the caller)."""
    cal = rl_calibration() if calibration is None else calibration
    return (cal["refit_ipc_fixed_s"] + engine_weights_per_gpu / cal["refit_ipc_bytes_per_s"]) * refit
