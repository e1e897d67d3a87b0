"""The public surface of ../shared/CONTRACT.md is pinned: names exist and resolve."""

import subprocess
import sys

import tcocalc as tc

# Every public name of ../shared/CONTRACT.md (later work may add names, never remove these).
CONTRACT_NAMES = {
    "hardware", "hardware_table", "Accelerator", "model", "model_table", "ModelArch",
    "Parallelism", "prefill", "decode", "generation_throughput", "training_throughput",
    "KernelTime", "GenerationEstimate", "TrainingEstimate",
    "CostInputs", "default_cost_inputs", "gpu_hour_cost", "CostBreakdown", "tinker_cost", "TinkerQuote",
    "Scenario", "load_scenario", "evaluate", "solve_split", "simulate", "RLReport",
    "UnknownEntryError", "InfeasibleError", "ScenarioError",
}


def test_all_holds_every_contract_name():
    assert CONTRACT_NAMES <= set(tc.__all__)


def test_every_exported_name_resolves():
    for name in tc.__all__:
        assert getattr(tc, name) is not None, name


def test_error_hierarchy():
    assert issubclass(tc.UnknownEntryError, KeyError)
    for err in (tc.UnknownEntryError, tc.InfeasibleError, tc.ScenarioError, tc.MissingSpecError):
        assert issubclass(err, tc.TcocalcError)


def test_import_is_lazy():
    """`import tcocalc` must not pull in pandas, pint or pydantic (start-up cost; issue 2 item 4)."""
    code = "import sys, tcocalc; print(sorted(m for m in ('pandas', 'pint', 'pydantic') if m in sys.modules))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"
