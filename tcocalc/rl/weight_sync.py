"""Weight synchronisation from trainer to generator after each optimizer step.

``t_sync = t_fixed + β_w·N_tot / BW_sync`` (docs/rl-modeling.md §3.3), calibrated on verl's checkpoint-engine
measurements (validation SYNC-01, data/rl_calibration.toml):

* trainer and generator inside one scale-up domain (same hardware, ``N_t + N_g`` within it, or colocated):
  each GPU pair moves its shard over the scale-up link, ``bytes / min(N_t, N_g) / (η·B_up)``, no fixed cost;
* otherwise over the scale-out network, bounded by the slower side's per-GPU NIC:
  ``t_fixed + bytes / (η·min(NIC_t, NIC_g))``. A Blackwell trainer feeding a Hopper or AMD generator
  pays this path.

Weights travel in bf16 (2 B/param): the generator re-quantises to its own precision.
"""

from __future__ import annotations

from ..catalog.calibration import rl_calibration

__all__ = ["weight_sync_seconds", "rl_calibration"]


def weight_sync_seconds(params_total: float, trainer_acc, generator_acc, trainer_gpus: int, generator_gpus: int,
                        *, colocated: bool = False) -> float:
    """Seconds to push ``params_total`` bf16 weights from the trainer to the generator pool."""
    cal = rl_calibration()
    eta = cal["weight_sync_efficiency"]
    nbytes = 2.0 * params_total
    same = trainer_acc.name == generator_acc.name
    inside = colocated or (same and trainer_gpus + generator_gpus <= trainer_acc.scaleup_domain_gpus)
    if inside:
        return nbytes / min(trainer_gpus, generator_gpus) / (eta * trainer_acc.scaleup_bytes_per_s)
    nic = min(trainer_acc.scaleout_bytes_per_s, generator_acc.scaleout_bytes_per_s)
    return cal["weight_sync_fixed_s"] + nbytes / (eta * nic)
