"""tcocalc: plan RL post-training clusters (trainer/generator split, throughput, staleness, cost).

Import as ``import tcocalc as tc``. The public names (../shared/CONTRACT.md) are listed in
``__all__`` and resolved lazily, so ``import tcocalc`` costs almost nothing until a name is used.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING

__version__ = "0.1.0"

# public name -> defining module
_EXPORTS: dict[str, str] = {
    # catalogs
    "Accelerator": "accelerators",
    "hardware": "accelerators",
    "hardware_table": "accelerators",
    "hardware_names": "accelerators",
    "ModelArch": "models",
    "model": "models",
    "model_table": "models",
    "model_names": "models",
    # errors
    "TcocalcError": "errors",
    "UnknownEntryError": "errors",
    "InfeasibleError": "errors",
    "ScenarioError": "errors",
    "MissingSpecError": "errors",
    "DataFileError": "errors",
    # performance (roofline)
    "Parallelism": "parallel",
    "KernelTime": "kernels",
    "prefill": "kernels",
    "decode": "kernels",
    "GenerationEstimate": "generation",
    "generation_throughput": "generation",
    "TrainingEstimate": "training",
    "training_throughput": "training",
    "ridge_table": "ridge",
    "operating_points": "ridge",
    "attainable_flops_per_s": "ridge",
    "validation_table": "validation",
    "decode_sweep": "sweep",
    # RL scenarios
    "Scenario": "scenario",
    "load_scenario": "scenario",
    "RLReport": "rl",
    "evaluate": "rl",
    "solve_split": "rl",
    "simulate": "simulate",
    # cost
    "CostInputs": "cost",
    "CostBreakdown": "cost",
    "default_cost_inputs": "cost",
    "gpu_hour_cost": "cost",
    "cloud_prices": "cost",
    "build_rent_tinker": "cost",
    "sensitivity": "cost",
    "multitenancy": "cost",
    "TinkerQuote": "tinker",
    "tinker_cost": "tinker",
    # units
    "Q_": "units",
    "get_registry": "units",
}

__all__ = sorted(_EXPORTS)

if TYPE_CHECKING:  # pragma: no cover - for type checkers and IDEs only
    from .accelerators import Accelerator, hardware, hardware_names, hardware_table  # noqa: F401
    from .cost import (  # noqa: F401
        CostBreakdown,
        CostInputs,
        build_rent_tinker,
        cloud_prices,
        default_cost_inputs,
        gpu_hour_cost,
        multitenancy,
        sensitivity,
    )
    from .errors import (  # noqa: F401
        DataFileError,
        InfeasibleError,
        MissingSpecError,
        ScenarioError,
        TcocalcError,
        UnknownEntryError,
    )
    from .generation import GenerationEstimate, generation_throughput  # noqa: F401
    from .kernels import KernelTime, decode, prefill  # noqa: F401
    from .models import ModelArch, model, model_names, model_table  # noqa: F401
    from .parallel import Parallelism  # noqa: F401
    from .ridge import attainable_flops_per_s, operating_points, ridge_table  # noqa: F401
    from .rl import RLReport, evaluate, solve_split  # noqa: F401
    from .scenario import Scenario, load_scenario  # noqa: F401
    from .simulate import simulate  # noqa: F401
    from .sweep import decode_sweep  # noqa: F401
    from .tinker import TinkerQuote, tinker_cost  # noqa: F401
    from .training import TrainingEstimate, training_throughput  # noqa: F401
    from .units import Q_, get_registry  # noqa: F401
    from .validation import validation_table  # noqa: F401


def __getattr__(name: str):
    try:
        module = _EXPORTS[name]
    except KeyError:
        raise AttributeError(f"module 'tcocalc' has no attribute {name!r}") from None
    value = getattr(importlib.import_module(f".{module}", __name__), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))
