"""A scenario's model and accelerators, resolved once (names to catalog objects) and passed down.

Every stage below takes the :class:`Cluster` instead of re-reading ``scn.trainer.hardware`` and
``scn.model.name``; the catalog objects are frozen and hashable, so per-object caches still work.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..catalog.accelerators import Accelerator, hardware
from ..catalog.models import ModelArch, model
from ..errors import ScenarioError
from ..scenario import Scenario

__all__ = ["Cluster", "resolve", "single_server_domain"]


@dataclass(frozen=True)
class Cluster:
    """The model and the trainer and generator accelerators of one scenario."""

    model: ModelArch
    trainer: Accelerator
    generator: Accelerator


def _model(scn: Scenario) -> ModelArch:
    if scn.model.config is not None:
        return ModelArch.from_hf_config(scn.model.config, name=scn.model.name)
    try:
        return model(scn.model.name)
    except KeyError as exc:  # UnknownEntryError (a KeyError) names the closest entries
        raise ScenarioError("model.name", str(exc)) from None


def _accelerator(scn: Scenario, side: str) -> Accelerator:
    try:
        acc = hardware(getattr(scn, side).hardware)
    except KeyError as exc:  # UnknownEntryError (a KeyError) names the closest entries
        raise ScenarioError(f"{side}.hardware", str(exc)) from None
    return acc if getattr(scn, side).multinode_nvlink else single_server_domain(acc)


def single_server_domain(acc: Accelerator) -> Accelerator:
    """The accelerator as a job sees it without multi-node NVLink: its scale-up domain is one server.

    An NVL72 rack joins 18 trays of 4 GPUs by NVLink switches, but NCCL crosses a tray over NVLink only when the
    job holds an IMEX channel (multi-node NVLink, NCCL's MNNVL transport: NVIDIA/nccl docs, environment variable
    ``NCCL_MNNVL_ENABLE``; NVIDIA IMEX guide). Without it, tensor-, expert- and pipeline-parallel traffic between
    trays takes the scale-out NICs, as between the servers of an 8-GPU cluster (docs/rl-modeling.md §3.7). A
    server as large as the domain (DGX H100) is unchanged."""
    if acc.server_gpus is None or acc.server_gpus >= acc.scaleup_domain_gpus:
        return acc
    return acc.model_copy(update={"scaleup_domain_gpus": acc.server_gpus})


def resolve(scn: Scenario) -> Cluster:
    """Resolve the scenario's names; ScenarioError names the field that does not resolve or whose precision
    the accelerator lacks."""
    m = _model(scn)
    acc_t, acc_g = _accelerator(scn, "trainer"), _accelerator(scn, "generator")
    for fld, acc, precision in (("model.precision", acc_t, scn.model.precision),
                                ("generator.precision", acc_g, scn.generator.precision)):
        if precision not in acc.precisions:
            raise ScenarioError(fld, f"{acc.name} has no {precision}; it supports {', '.join(acc.precisions)}")
    return Cluster(model=m, trainer=acc_t, generator=acc_g)
