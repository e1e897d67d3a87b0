"""The decode-step floor of an inference engine: what a step costs beyond its kernels' roofline.

A synchronous RL batch ends at small batch (its longest trajectories decode nearly alone), where a step
costs far more than weights / HBM bandwidth (docs/rl-modeling.md §4.8). The roofline
(:mod:`tcocalc.roofline.forward`) already charges each kernel a 3 µs launch (aiconfigurator's constant, valid
with CUDA graphs), which also covers the engine's per-step work at small batch: verl's tail-bound generation
(validation RL-04, Qwen2.5-Math-7B on H20: 177.85 s for a 28,672-token longest response, 6.2 ms per token)
matches the roofline's 6.1 ms without more. The floor adds, per decode step:

* the latency of the two tensor-parallel all-reduces of every layer, ``2·L·ℓ_AR`` (:func:`allreduce_latency`:
  vLLM's custom all-reduce up to 8 GPUs, NCCL's ring model above that inside one NVLink domain, a measured
  InfiniBand figure when the instance spans two servers, growing with more as NCCL's tree model does);
* eager execution, ``L·eager_layer_overhead_s``, when the engine runs without CUDA graphs (``cuda_graphs =
  false``); ``L·uncaptured_layer_overhead_s`` when the decode batch exceeds the engine's largest captured graph
  (vLLM 512 by default, data/frameworks.toml), whose steps run compiled code launched kernel by kernel.

Constants: data/rl_calibration.toml (sources there; docs/sources.md §M.3 and
§A.4).
"""

from __future__ import annotations

import math

import numpy as np

from ..catalog.calibration import RLCalibration, rl_calibration
from ..roofline.parallel import Parallelism

__all__ = ["decode_floor_seconds", "allreduce_latency"]

CUSTOM_ALLREDUCE_MAX_GPUS = 8
"""vLLM's custom (one-shot) all-reduce serves tensor parallelism up to 8 GPUs (sgl-project/sglang PR 2904
compares it at TP 2/4/8); larger groups fall back to NCCL."""


def allreduce_latency(acc, gpus: int, calibration: RLCalibration | None = None) -> float:
    """Latency of one small all-reduce over an instance of ``gpus`` GPUs [s]: vLLM's custom all-reduce up to 8
    GPUs of one host (it shares buffers by CUDA IPC), NCCL's ring LL model ``6.6 + 2(n−1)·0.6`` µs above that or
    across the trays of an NVLink domain (an NVL72 tray has 4 GPUs); beyond the domain, the measured 2-node
    InfiniBand figure ``ℓ_2`` scaled as NCCL's tree LL model grows with the ``k = ⌈n/D⌉`` domains spanned,
    ``ℓ_2·τ(k)/τ(2)`` with ``τ(k) = 6.8 + 2·((D − 1)·0.6 + log2(k)·5.0)`` µs (NVIDIA/nccl src/graph/tuning.cc; D the
    GPUs per domain): 88 µs over 2 servers of 8 H100, 123 µs over 4 (data/rl_calibration.toml; ``calibration``: the
    RL factors to use, default the shipped ones)."""
    cal = rl_calibration() if calibration is None else calibration
    dom = acc.scaleup_domain_gpus
    if gpus > dom:
        def tree(k: int) -> float:
            return cal["nccl_tree_ll_base_s"] + 2.0 * ((dom - 1) * cal["nccl_ring_ll_hop_s"]
                                                       + math.log2(k) * cal["nccl_tree_ll_net_hop_s"])
        return cal["allreduce_latency_scaleout_s"] * tree(max(math.ceil(gpus / dom), 2)) / tree(2)
    if gpus <= CUSTOM_ALLREDUCE_MAX_GPUS and gpus <= (acc.server_gpus or gpus):
        return cal["allreduce_latency_scaleup_s"]  # custom all-reduce: CUDA IPC between GPUs of one host
    return cal["nccl_ring_ll_base_s"] + 2.0 * (gpus - 1) * cal["nccl_ring_ll_hop_s"]


def decode_floor_seconds(m, acc, par: Parallelism, batch, *, cuda_graphs: bool, graph_max_batch: int,
                         calibration: RLCalibration | None = None):
    """Floor added to a decode step of ``batch`` sequences per instance [s] (arrays broadcast); ``calibration``: the
    RL factors (the cluster's ``rl_cal``; default the shipped ones)."""
    cal = rl_calibration() if calibration is None else calibration
    b = np.asarray(batch, dtype=float)
    layers = float(m.num_layers)
    floor = np.zeros_like(b)
    if par.tp > 1:
        floor = floor + 2.0 * layers * allreduce_latency(acc, par.gpus, cal)
    if not cuda_graphs:
        return floor + layers * cal["eager_layer_overhead_s"]
    return floor + np.where(b > graph_max_batch, layers * cal["uncaptured_layer_overhead_s"], 0.0)
