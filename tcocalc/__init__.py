"""tcocalc: plan RL post-training clusters (trainer/generator split, throughput, staleness, cost).

Import as ``import tcocalc as tc``. The public names (pinned by tests/unit/core/test_public_api.py) are listed in
``__all__`` and resolved lazily, so ``import tcocalc`` costs almost nothing until a name is used.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING

from ._version import __version__  # noqa: F401  (the one place the version is written)

# public name -> defining module
_EXPORTS: dict[str, str] = {
    # catalogs
    "Accelerator": "catalog.accelerators",
    "hardware": "catalog.accelerators",
    "hardware_table": "catalog.accelerators",
    "hardware_names": "catalog.accelerators",
    "ModelArch": "catalog.models",
    "model": "catalog.models",
    "model_table": "catalog.models",
    "model_names": "catalog.models",
    "Measurements": "logs.measurements",
    "load_measurements": "logs.measurements",
    "MAX_LOG_BYTES": "logs.source",
    # errors
    "TcocalcError": "errors",
    "UnknownEntryError": "errors",
    "InfeasibleError": "errors",
    "ScenarioError": "errors",
    "MeasurementError": "errors",
    "MissingSpecError": "errors",
    "DataFileError": "errors",
    # performance (roofline)
    "Parallelism": "roofline.parallel",
    "KernelTime": "roofline.forward",
    "prefill": "roofline.forward",
    "decode": "roofline.forward",
    "GenerationEstimate": "roofline.serving",
    "generation_throughput": "roofline.serving",
    "disaggregated_throughput": "roofline.disaggregated",
    "DEEPSEEK_V3_MTP_ACCEPTANCE": "roofline.speculative",
    "DisaggregatedEstimate": "roofline.disaggregated",
    "TrainingEstimate": "roofline.training",
    "training_throughput": "roofline.training",
    "ridge_table": "roofline.charts",
    "operating_points": "roofline.charts",
    "attainable_flops_per_s": "roofline.charts",
    "validation_table": "roofline.validation",
    "long_output_table": "roofline.validation",
    "decode_sweep": "roofline.sweep",
    # RL scenarios
    "MODES": "modes",
    "ModeTraits": "modes",
    "Scenario": "scenario",
    "load_scenario": "scenario",
    "loads_scenario": "scenario",
    "scenario_from_dict": "scenario",
    "scenarios": "scenario",
    "MAX_SCENARIO_BYTES": "scenario",
    "METRIC_UNITS": "rl.report",
    "RLReport": "rl.results",
    "evaluate": "rl.solve",
    "solve_split": "rl.solve",
    "size_cluster": "studies.sizing",
    "SizingOptions": "studies.sizing",
    "SizingResult": "studies.sizing",
    "simulate": "rl.sim.simulate",
    "simulated_events_estimate": "rl.sim.simulate",
    "simulated_steps": "rl.sim.simulate",
    "rl_validation_table": "studies.rl_validation",
    "validate": "studies.validation_groups",
    "Validation": "studies.validation_groups",
    "rl_speedup_pairs": "studies.rl_validation",
    "rl_validation_summary": "studies.rl_validation",
    "rl_refit_table": "studies.rl_validation",
    "framework_presets": "catalog.frameworks",
    # calibration (the factors every model run reads, as one value)
    "Calibration": "catalog.calibration",
    "CalibrationSet": "catalog.calibration",
    "shipped_calibration": "catalog.calibration",
    # cost
    "CostInputs": "economics.tco",
    "CostBreakdown": "economics.tco",
    "default_cost_inputs": "economics.tco",
    "cost_lines": "economics.tco",
    "cost_default_hardware": "economics.tco",
    "pool_pricing": "economics.tco",
    "PoolPrice": "economics.tco",
    "gpu_hour_cost": "economics.tco",
    "cloud_prices": "economics.tco",
    "build_rent_tinker": "studies.whatif",
    "calibration_of": "studies.whatif",
    "calibration_line": "rl.advice",
    # calibration from a measured run
    "calibrate": "studies.calibrate",
    "RunCalibration": "studies.calibrate",
    "sensitivity": "studies.whatif",
    "multitenancy": "studies.whatif",
    "tinker_gap": "studies.whatif",
    "sweep": "sweeps",  # not a module named sweep: importing it would shadow tc.sweep
    "SweepResult": "sweeps",
    "metric_quantities": "rl.report",
    "TinkerQuote": "economics.tinker",
    "tinker_cost": "economics.tinker",
    # units
    "Q_": "units",
    "get_registry": "units",
}

__all__ = sorted(_EXPORTS)

if TYPE_CHECKING:  # pragma: no cover - for type checkers and IDEs only
    from .catalog.accelerators import Accelerator, hardware, hardware_names, hardware_table  # noqa: F401
    from .catalog.calibration import Calibration, CalibrationSet, shipped_calibration  # noqa: F401
    from .catalog.frameworks import framework_presets  # noqa: F401
    from .catalog.models import ModelArch, model, model_names, model_table  # noqa: F401
    from .economics.tco import (  # noqa: F401
        CostBreakdown,
        CostInputs,
        PoolPrice,
        cloud_prices,
        cost_default_hardware,
        cost_lines,
        default_cost_inputs,
        gpu_hour_cost,
        pool_pricing,
    )
    from .economics.tinker import TinkerQuote, tinker_cost  # noqa: F401
    from .errors import (  # noqa: F401
        DataFileError,
        InfeasibleError,
        MeasurementError,
        MissingSpecError,
        ScenarioError,
        TcocalcError,
        UnknownEntryError,
    )
    from .logs.measurements import Measurements, load_measurements  # noqa: F401
    from .logs.source import MAX_LOG_BYTES  # noqa: F401
    from .modes import MODES, ModeTraits  # noqa: F401
    from .rl.advice import calibration_line  # noqa: F401
    from .rl.report import METRIC_UNITS, metric_quantities  # noqa: F401
    from .rl.results import RLReport  # noqa: F401
    from .rl.sim.simulate import simulate, simulated_events_estimate, simulated_steps  # noqa: F401
    from .rl.solve import evaluate, solve_split  # noqa: F401
    from .roofline.charts import attainable_flops_per_s, operating_points, ridge_table  # noqa: F401
    from .roofline.disaggregated import DisaggregatedEstimate, disaggregated_throughput  # noqa: F401
    from .roofline.forward import KernelTime, decode, prefill  # noqa: F401
    from .roofline.parallel import Parallelism  # noqa: F401
    from .roofline.serving import GenerationEstimate, generation_throughput  # noqa: F401
    from .roofline.speculative import DEEPSEEK_V3_MTP_ACCEPTANCE  # noqa: F401
    from .roofline.sweep import decode_sweep  # noqa: F401
    from .roofline.training import TrainingEstimate, training_throughput  # noqa: F401
    from .roofline.validation import long_output_table, validation_table  # noqa: F401
    from .scenario import (  # noqa: F401
        MAX_SCENARIO_BYTES,
        Scenario,
        load_scenario,
        loads_scenario,
        scenario_from_dict,
        scenarios,
    )
    from .studies.calibrate import RunCalibration, calibrate  # noqa: F401
    from .studies.rl_validation import (  # noqa: F401
        rl_refit_table,
        rl_speedup_pairs,
        rl_validation_summary,
        rl_validation_table,
    )
    from .studies.validation_groups import Validation, validate  # noqa: F401
    from .studies.whatif import build_rent_tinker, calibration_of, multitenancy, sensitivity, tinker_gap  # noqa: F401
    from .sweeps import SweepResult, sweep  # noqa: F401
    from .units import Q_, get_registry  # noqa: F401


def __getattr__(name: str):
    try:
        module = _EXPORTS[name]
    except KeyError:
        raise AttributeError(f"module 'tcocalc' has no attribute {name!r}") from None
    value = getattr(importlib.import_module(f".{module}", __name__), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    """The public names and the version: not the facade's own imports, nor the subpackages importing one loads."""
    return sorted({*__all__, "__version__"})
