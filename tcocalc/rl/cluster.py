"""A scenario's model, accelerators and calibrations, resolved once (names to catalog objects) and passed down.

Every stage below takes the :class:`Cluster` instead of re-reading ``scn.trainer.hardware`` and
``scn.model.name``, and reads the factors it needs from the cluster's calibrations (``trainer_cal``,
``generator_cal``, ``rl_cal``), never from a global: a trial :class:`~tcocalc.catalog.calibration.CalibrationSet`
passed to :func:`resolve` reaches every formula, and since the catalog objects and calibrations are frozen and
hashable, every cache keyed on them keeps results of different calibrations apart.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from ..catalog.accelerators import Accelerator, hardware_entries
from ..catalog.calibration import Calibration, CalibrationSet, RLCalibration, shipped_calibration
from ..catalog.models import ModelArch, model
from ..economics.tco import PoolPrice, pool_prices, pool_pricing
from ..errors import ScenarioError
from ..scenario import Scenario
from .run_factors import UNCALIBRATED, RunFactors, run_factors
from .settings import Settings, settings

__all__ = ["Cluster", "resolve", "plan_prices", "single_server_domain"]


@dataclass(frozen=True)
class Cluster:
    """The model, the trainer and generator accelerators of one scenario, each pool's roofline calibration, the RL
    pipeline's factors, the calibration set they come from (``calibration``, for re-resolving a variant), the
    framework settings (``settings``, :mod:`tcocalc.rl.settings`), each pool's price (``prices``, trainer then
    generator, :func:`~tcocalc.economics.tco.pool_pricing`), the measured trainer MFU where it applies
    (``mfu_busy``, None elsewhere: on other hardware the trainer's capacity carries its measured-over-modelled
    ratio, or the roofline training model stands in, docs/rl-modeling.md §3.2; ``mfu_source`` says which:
    ``"none"``, ``"applies"``, ``"carried"``, ``"model"`` or ``"dropped"``; ``mfu_chip`` the chip it was measured
    on, ``mfu_chip_cal`` that chip's calibration where the MFU carries, None elsewhere) and
    the factors of the scenario's run calibration that apply to it (``run``, :mod:`tcocalc.rl.run_factors`); all
    derived once, in :func:`resolve`."""

    model: ModelArch
    trainer: Accelerator
    generator: Accelerator
    trainer_cal: Calibration
    generator_cal: Calibration
    rl_cal: RLCalibration
    calibration: CalibrationSet
    settings: Settings
    prices: tuple[PoolPrice, PoolPrice]
    mfu_busy: float | None = None
    mfu_source: str = "none"
    mfu_chip: Accelerator | None = None
    mfu_chip_cal: Calibration | None = None
    run: RunFactors = UNCALIBRATED


def _model(scn: Scenario) -> ModelArch:
    if scn.model.config is not None:
        return ModelArch.from_hf_config(scn.model.config, name=scn.model.name)
    try:
        return model(scn.model.name)
    except KeyError as exc:  # UnknownEntryError (a KeyError) names the closest entries
        raise ScenarioError("model.name", str(exc)) from None


def _chip_names(scn: Scenario) -> tuple[str, ...]:
    """Every accelerator name the scenario writes, for :func:`resolve` to look up once: the names the prices read
    (:func:`~tcocalc.economics.tco.priced_chips`: each pool's hardware, ``economics.priced_for``,
    ``economics.hardware_prices``) and where ``trainer.mfu_busy`` was measured."""
    econ, on = scn.economics, scn.trainer.mfu_measured_on
    set_for = () if econ.priced_for is None else (econ.priced_for.trainer, econ.priced_for.generator)
    return (scn.trainer.hardware, scn.generator.hardware, *(n for n in set_for if n is not None),
            *(econ.hardware_prices or {}), *(() if on is None else (on.hardware,)))


def _accelerator(scn: Scenario, side: str, chips: dict) -> Accelerator:
    acc = chips[getattr(scn, side).hardware]
    if isinstance(acc, KeyError):  # UnknownEntryError (a KeyError) names the closest entries
        raise ScenarioError(f"{side}.hardware", str(acc))
    return acc if getattr(scn, side).multinode_nvlink else single_server_domain(acc)


def _measured_on(scn: Scenario, chips: dict) -> Accelerator | None:
    """The chip ``trainer.mfu_busy`` was measured on (``trainer.mfu_measured_on.hardware``), as a job sees it (one
    server's domain without multi-node NVLink); None where none is named or the catalog does not know it."""
    on = scn.trainer.mfu_measured_on
    if scn.trainer.mfu_busy is None or on is None:
        return None
    acc = chips[on.hardware]
    if isinstance(acc, KeyError):  # UnknownEntryError: a name the catalog does not know is not this chip
        return None
    return acc if scn.trainer.multinode_nvlink else single_server_domain(acc)


def _mfu_source(scn: Scenario, trainer: Accelerator, m: ModelArch, on_chip: Accelerator | None) -> str:
    """``"none"`` (no measured MFU), ``"applies"`` (its own chip and model), ``"carried"`` (the same model on other
    hardware: the measured-over-modelled ratio of the chip it was measured on carries), ``"model"`` (the roofline
    model on every chip, ``trainer.mfu_carry = "model"``) or ``"dropped"`` (another model, or a chip the catalog
    does not know); ``on_chip`` the chip it was measured on (:func:`_measured_on`)."""
    t = scn.trainer
    if t.mfu_busy is None:
        return "none"
    if t.mfu_carry == "model":
        return "model"
    on = t.mfu_measured_on
    if on is None:
        return "applies"
    if on_chip is None or on.model not in (scn.model.name, m.name):
        return "dropped"
    return "applies" if on_chip.name == trainer.name else "carried"


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


def resolve(scn: Scenario, calibration: CalibrationSet | None = None) -> Cluster:
    """Resolve the scenario's names and each pool's calibration in ``calibration`` (default: the shipped set,
    :func:`~tcocalc.catalog.calibration.shipped_calibration`); ScenarioError names the field that does not resolve
    or whose precision the accelerator lacks, or ``calibration`` when it is not a CalibrationSet."""
    if calibration is None:
        calibration = shipped_calibration()
    elif not isinstance(calibration, CalibrationSet):
        raise ScenarioError("calibration", f"expected a tcocalc CalibrationSet, got {type(calibration).__name__}")
    m = _model(scn)
    chips = hardware_entries(_chip_names(scn))  # each name's entry, or the catalog's error (raised where it must)
    acc_t, acc_g = _accelerator(scn, "trainer", chips), _accelerator(scn, "generator", chips)
    for fld, acc, precision in (("model.precision", acc_t, scn.model.precision),
                                ("generator.precision", acc_g, scn.generator.precision)):
        if precision not in acc.precisions:
            raise ScenarioError(fld, f"{acc.name} has no {precision}; it supports {', '.join(acc.precisions)}")
    on_chip = _measured_on(scn, chips)
    source = _mfu_source(scn, acc_t, m, on_chip)
    st = settings(scn, acc_g, calibration.rl)
    on_cal = calibration.for_accelerator(on_chip) if source == "carried" else None
    cluster = Cluster(model=m, trainer=acc_t, generator=acc_g, trainer_cal=calibration.for_accelerator(acc_t),
                      generator_cal=calibration.for_accelerator(acc_g), rl_cal=calibration.rl,
                      calibration=calibration, settings=st, prices=pool_prices(scn, chips),
                      mfu_busy=scn.trainer.mfu_busy if source == "applies" else None, mfu_source=source,
                      mfu_chip=on_chip, mfu_chip_cal=on_cal)
    if scn.calibration is None:
        return cluster
    return replace(cluster, run=run_factors(scn, cluster, st.engine, st.weight_sync))


def plan_prices(scn: Scenario) -> tuple[PoolPrice, PoolPrice]:
    """(trainer, generator) :class:`~tcocalc.economics.tco.PoolPrice` of a plan priced without being resolved (the
    sizing study's candidate hardware, a sweep's re-priced point): what :func:`resolve` puts in ``cluster.prices``."""
    return pool_pricing(scn)
