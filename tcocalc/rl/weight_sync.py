"""Weight synchronisation from a separate trainer pool to the generator pool after each optimizer step.

``t_sync = t_fixed + bytes_received / (η·B_NIC)`` (docs/rl-modeling.md §3.3), calibrated on verl's
checkpoint-engine measurements (validation SYNC-01, data/rl_calibration.toml):

* trainer and generator inside one scale-up domain (same hardware, ``N_t + N_g`` within it): each GPU pair
  moves its shard over the scale-up link, ``bytes / min(N_t, N_g) / (η·B_up)``, no fixed cost (the NCCL
  transports only);
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
  - ``"disk"`` (a checkpoint on shared storage, reloaded by the engine: prime-rl's filesystem broadcast, SGLang
    ``update_weights_from_disk``; docs/rl-modeling.md §3.8): the trainer saves the bytes at its aggregate write
    rate, bounded by the storage's, then every engine GPU reloads its share through the engine's loader, bounded
    by what the storage can serve all replicas at once (:func:`disk_sync_seconds`).
  - ``"host"`` (pushed from pinned host memory: checkpoint-engine from CPU, stitch's RAM destination, Mooncake
    store): device-to-host on the trainer, the host-to-host hop over the NICs, host-to-device on the generator
    (:func:`host_sync_seconds`).

Weights travel in bf16 (2 B/param): the generator re-quantises them to its own precision. Colocated runs refit in
process instead (:mod:`tcocalc.rl.switching`).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..catalog.calibration import RLCalibration, rl_calibration
from ..errors import MissingSpecError, ScenarioError

__all__ = ["weight_sync_seconds", "rl_calibration", "WEIGHT_SYNC_TRANSPORTS", "Storage", "storage",
           "disk_sync_seconds", "disk_reload_seconds", "checkpoint_save_seconds", "host_sync_seconds",
           "host_copy_seconds", "host_link_rate"]

WEIGHT_SYNC_TRANSPORTS = ("nccl-broadcast", "p2p", "disk", "host")
"""The weight-sync transports, as ``[orchestration] weight_sync`` and the framework presets name them."""


@dataclass(frozen=True)
class Storage:
    """The shared storage a ``"disk"`` weight sync goes through: its aggregate write and read rates [B/s]
    (:func:`storage` builds it, checking both)."""

    write_bytes_per_s: float
    read_bytes_per_s: float


def host_link_rate(acc) -> float:
    """The accelerator's host-link copy rate [B/s]; MissingSpecError naming the figure when its spec lacks it."""
    if acc.host_link_bytes_per_s is None:
        raise MissingSpecError(f"{acc.name} has no host_link_bandwidth in its spec file; colocated RL moves "
                               "weights and optimizer state over it every step (add the measured host-to-device "
                               "copy rate, GB/s)")
    return acc.host_link_bytes_per_s


def _positive(value: float, field: str, what: str) -> float:
    """``value`` as a float when it is above zero; ScenarioError naming ``field`` otherwise."""
    v = float(value)
    if not v > 0 or not np.isfinite(v):
        raise ScenarioError(field, f"{what} must be a positive finite rate, got {value!r}")
    return v


def storage(calibration: RLCalibration | None = None, *, write_gb_per_s: float | None = None,
            read_gb_per_s: float | None = None) -> Storage:
    """The shared storage of a disk weight sync: the scenario's ``[orchestration] storage_write_gb_per_s`` and
    ``storage_read_gb_per_s`` [GB/s] where given, else the RL factors' ``shared_storage_write_bytes_per_s`` and
    ``shared_storage_read_bytes_per_s`` (data/rl_calibration.toml; ``calibration`` default the shipped ones).
    A rate of zero or below raises ScenarioError naming the key it came from."""
    cal = rl_calibration() if calibration is None else calibration
    out = []
    for given, key, factor in ((write_gb_per_s, "storage_write_gb_per_s", "shared_storage_write_bytes_per_s"),
                               (read_gb_per_s, "storage_read_gb_per_s", "shared_storage_read_bytes_per_s")):
        if given is None:
            out.append(_positive(cal[factor], f"calibration.{factor}", "a shared-storage rate"))
        else:
            out.append(1e9 * _positive(given, f"orchestration.{key}", "a shared-storage rate"))
    return Storage(write_bytes_per_s=out[0], read_bytes_per_s=out[1])


def _factor(cal: RLCalibration, key: str) -> float:
    """An RL factor that divides (a rate): ScenarioError naming ``calibration.<key>`` when it is not above zero."""
    return _positive(cal[key], f"calibration.{key}", "a rate")


def checkpoint_save_seconds(nbytes: float, trainer_gpus, store: Storage, calibration: RLCalibration | None = None):
    """Seconds the trainer takes to write ``nbytes`` of weights to shared storage: every trainer rank writes its
    shard (torch.distributed.checkpoint's per-rank files, https://pytorch.org/docs/stable/distributed.checkpoint.html)
    at ``disk_write_bytes_per_s_per_gpu``, the ranks together at most at the storage's write rate:
    ``bytes / min(N_t·w_gpu, W_storage)`` (docs/rl-modeling.md §3.8). ``trainer_gpus`` may be an array."""
    cal = rl_calibration() if calibration is None else calibration
    ranks = np.maximum(np.asarray(trainer_gpus, dtype=float), 1.0)
    return nbytes / np.minimum(ranks * _factor(cal, "disk_write_bytes_per_s_per_gpu"), store.write_bytes_per_s)


def disk_reload_seconds(bytes_per_gpu, calibration: RLCalibration | None = None):
    """Seconds an inference engine takes to reload ``bytes_per_gpu`` of weights per GPU from storage (the engine's
    pause): ``t_fixed,disk + bytes_per_gpu / r_load`` (``weight_sync_disk_fixed_s``, ``engine_disk_load_bytes_per_s``,
    fitted on six published reloads from 1 to 208 GB per GPU: prime-rl, AReaL, stitch; docs/sources.md §M.6). The
    loader, not the storage, sets the rate (≈0.9 GB/s per GPU); the aggregate storage bound is applied by
    :func:`disk_sync_seconds`."""
    cal = rl_calibration() if calibration is None else calibration
    return cal["weight_sync_disk_fixed_s"] + np.asarray(bytes_per_gpu, dtype=float) / _factor(
        cal, "engine_disk_load_bytes_per_s")


def disk_sync_seconds(nbytes: float, trainer_gpus, generator_gpus, *, instance_gpus: int, store: Storage,
                      calibration: RLCalibration | None = None, server_gpus: int | None = None):
    """Seconds of a weight sync through shared storage (docs/rl-modeling.md §3.8): the trainer's save
    (:func:`checkpoint_save_seconds`), then every engine GPU's reload of its share ``bytes / instance_gpus``
    (:func:`disk_reload_seconds`), the servers' reads together at most at the storage's read rate:
    ``t_save + t_fixed,disk + max(bytes/g / r_load, S·bytes·min(1, s/g) / R_storage)``, ``S = ⌈N_g/s⌉`` servers of
    ``s = server_gpus`` GPUs. The engines of one server read the checkpoint through that server's page cache (the
    loaders map the safetensors files, and a page a process has read is served to every other process of the host
    from memory: https://docs.kernel.org/admin-guide/mm/concepts.html "Page Cache"), so storage serves each byte once
    per server, and a server holding part of an instance only that part. ``server_gpus`` None: every replica reads
    its own copy (``n_rep·bytes``, the bound before 2026-12-07). Arrays of splits broadcast."""
    cal = rl_calibration() if calibration is None else calibration
    inst = max(int(instance_gpus), 1)
    n_g = np.asarray(generator_gpus)
    if server_gpus is None:
        read = np.maximum(n_g // inst, 1) * nbytes
    else:
        s = max(int(server_gpus), 1)
        read = np.maximum(np.ceil(n_g / s), 1) * nbytes * min(1.0, s / inst)
    load = np.maximum(nbytes / inst / _factor(cal, "engine_disk_load_bytes_per_s"), read / store.read_bytes_per_s)
    return checkpoint_save_seconds(nbytes, trainer_gpus, store, cal) + cal["weight_sync_disk_fixed_s"] + load


def host_copy_seconds(bytes_per_gpu, acc, calibration: RLCalibration | None = None):
    """Seconds to copy ``bytes_per_gpu`` between pinned host memory and each GPU of a server, every GPU at once:
    ``bytes / (η_h·B_host)`` with ``B_host`` the accelerator's measured single-GPU host-link rate (hardware_specs
    ``host_link_bandwidth``) and ``η_h`` (``host_sync_copy_efficiency``) the share a server's GPUs reach together
    (stitch's RAM-to-GPU commit of 27.2 GB per H200 in 0.99 s; docs/sources.md §M.6)."""
    cal = rl_calibration() if calibration is None else calibration
    return np.asarray(bytes_per_gpu, dtype=float) / (_factor(cal, "host_sync_copy_efficiency") * host_link_rate(acc))


def host_sync_seconds(nbytes: float, trainer_acc, generator_acc, trainer_gpus, generator_gpus, *,
                      instance_gpus: int, calibration: RLCalibration | None = None):
    """Seconds of a weight sync pushed from pinned host memory (docs/rl-modeling.md §3.8):
    ``t_fixed,host + D2H(bytes/N_t) + wire + H2D(bytes/g)``: each trainer GPU copies its share to host memory, the
    host-to-host hop moves every generator GPU's share over its own NIC, bounded by what the trainer's NICs send in
    all (the p2p rule, none when both pools sit in one server, whose host memory they share), and each generator GPU
    copies its share in (:func:`host_copy_seconds`). The stages run one after the other (a rank image is complete in
    host memory before the engine commits it). Arrays of splits broadcast."""
    cal = rl_calibration() if calibration is None else calibration
    eta = cal["weight_sync_efficiency"]
    inst = max(int(instance_gpus), 1)
    n_t, n_g = np.asarray(trainer_gpus), np.asarray(generator_gpus)
    d2h = host_copy_seconds(nbytes / np.maximum(n_t, 1), trainer_acc, cal)
    h2d = host_copy_seconds(nbytes / inst, generator_acc, cal)
    replicas = np.maximum(n_g // inst, 1)
    send = nbytes * replicas / (np.maximum(n_t, 1) * trainer_acc.scaleout_bytes_per_s)
    wire = np.maximum(nbytes / inst / (eta * generator_acc.scaleout_bytes_per_s), send / eta)
    server = trainer_acc.server_gpus or trainer_acc.scaleup_domain_gpus
    one_server = (trainer_acc.name == generator_acc.name) & (n_t + n_g <= server)
    return cal["weight_sync_host_fixed_s"] + d2h + np.where(one_server, 0.0, wire) + h2d


def _check_transport(transport: str) -> None:
    if transport not in WEIGHT_SYNC_TRANSPORTS:
        raise ScenarioError("orchestration.weight_sync", f"unknown transport {transport!r}; choices: "
                                                         f"{', '.join(WEIGHT_SYNC_TRANSPORTS)}")


def weight_sync_seconds(params_total: float, trainer_acc, generator_acc, trainer_gpus, generator_gpus,
                        *, instance_gpus: int = 1, transport: str = "nccl-broadcast",
                        calibration: RLCalibration | None = None, store: Storage | None = None):
    """Seconds to push ``params_total`` bf16 weights from the trainer pool to the generator pool; ``trainer_gpus``
    and ``generator_gpus`` may be arrays of splits (an array comes back), else a float. ``calibration``: the RL
    factors (the cluster's ``rl_cal``; default the shipped ones); ``store``: the shared storage of a ``"disk"``
    sync (default :func:`storage` of the factors). An unknown ``transport`` raises ScenarioError listing
    :data:`WEIGHT_SYNC_TRANSPORTS`."""
    _check_transport(transport)
    cal = rl_calibration() if calibration is None else calibration
    nbytes = 2.0 * params_total
    inst = max(int(instance_gpus), 1)
    if transport == "disk":
        out = disk_sync_seconds(nbytes, trainer_gpus, generator_gpus, instance_gpus=inst,
                                store=storage(cal) if store is None else store, calibration=cal,
                                server_gpus=generator_acc.server_gpus or generator_acc.scaleup_domain_gpus)
        return float(out) if np.ndim(out) == 0 else out
    if transport == "host":
        out = host_sync_seconds(nbytes, trainer_acc, generator_acc, trainer_gpus, generator_gpus,
                                instance_gpus=inst, calibration=cal)
        return float(out) if np.ndim(out) == 0 else out
    eta = cal["weight_sync_efficiency"]
    n_t, n_g = np.asarray(trainer_gpus), np.asarray(generator_gpus)
    inside = (trainer_acc.name == generator_acc.name) & (n_t + n_g <= trainer_acc.scaleup_domain_gpus)
    scaleup = nbytes / np.maximum(np.minimum(n_t, n_g), 1) / (eta * trainer_acc.scaleup_bytes_per_s)
    nic = min(trainer_acc.scaleout_bytes_per_s, generator_acc.scaleout_bytes_per_s)
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
