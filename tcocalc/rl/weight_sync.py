"""Weight synchronisation from a separate trainer pool to the generator pool after each optimizer step.

``t_sync = t_fixed + bytes_received / (η·B_NIC)`` (docs/rl-modeling.md §3.3), calibrated on verl's
checkpoint-engine measurements (validation SYNC-01, data/rl_calibration.toml):

* trainer and generator inside one scale-up domain (same hardware, ``N_t + N_g`` within it): each GPU pair
  moves its shard over the scale-up link, ``bytes / min(N_t, N_g) / (η·B_up)``, no fixed cost;
* otherwise over the scale-out network, at the slower side's per-GPU NIC, by transport
  (``[orchestration] weight_sync``, default from the framework preset):

  - ``"nccl-broadcast"``: each generator server receives the share of the weights its instances hold,
    ``bytes·min(1, server_gpus / instance_gpus)``, through one NIC-rate broadcast ring. An instance that spans
    servers (DeepSeek-V3 on vLLM TP32: four H100 servers) splits the bytes between them; a server holding whole
    instances receives the whole model (the verl fit). Check: NeMo RL's NCCL refit of DeepSeek-V3 to vLLM TP32
    measured 14.2 s (docs/sources.md §M.5); this gives 17.3 s.
  - ``"p2p"`` (RDMA writes, NIXL, NCCL reshard): every generator GPU receives its own shard over its own NIC,
    ``bytes / instance_gpus``, bounded by what the trainer's NICs can send in total, after a smaller fixed cost
    (``weight_sync_p2p_fixed_s``, fitted on NeMo RL's reshard timings).

Weights travel in bf16 (2 B/param): the generator re-quantises to its own precision. Colocated runs refit in
process instead (:mod:`tcocalc.rl.switching`).
"""

from __future__ import annotations

import numpy as np

from ..catalog.calibration import RLCalibration, rl_calibration

__all__ = ["weight_sync_seconds", "rl_calibration"]


def weight_sync_seconds(params_total: float, trainer_acc, generator_acc, trainer_gpus, generator_gpus,
                        *, instance_gpus: int = 1, transport: str = "nccl-broadcast",
                        calibration: RLCalibration | None = None):
    """Seconds to push ``params_total`` bf16 weights from the trainer pool to the generator pool; ``trainer_gpus``
    and ``generator_gpus`` may be arrays of splits (an array comes back), else a float. ``calibration``: the RL
    factors (the cluster's ``rl_cal``; default the shipped ones)."""
    cal = rl_calibration() if calibration is None else calibration
    eta = cal["weight_sync_efficiency"]
    nbytes = 2.0 * params_total
    n_t, n_g = np.asarray(trainer_gpus), np.asarray(generator_gpus)
    inside = (trainer_acc.name == generator_acc.name) & (n_t + n_g <= trainer_acc.scaleup_domain_gpus)
    scaleup = nbytes / np.maximum(np.minimum(n_t, n_g), 1) / (eta * trainer_acc.scaleup_bytes_per_s)
    nic = min(trainer_acc.scaleout_bytes_per_s, generator_acc.scaleout_bytes_per_s)
    inst = max(int(instance_gpus), 1)
    if transport == "p2p":
        per_gpu = nbytes / inst
        replicas = np.maximum(n_g // inst, 1)
        send = nbytes * replicas / (np.maximum(n_t, 1) * trainer_acc.scaleout_bytes_per_s)
        out = cal["weight_sync_p2p_fixed_s"] + np.maximum(per_gpu / (eta * generator_acc.scaleout_bytes_per_s),
                                                          send / eta)
    else:
        server = generator_acc.server_gpus or inst  # unknown server size: the whole model per server, as before
        out = cal["weight_sync_fixed_s"] + nbytes * min(1.0, server / inst) / (eta * nic)
    out = np.where(inside, scaleup, out)  # shaped like the splits
    return float(out) if out.ndim == 0 else out
