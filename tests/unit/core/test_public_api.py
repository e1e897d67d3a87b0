"""The public surface of ../shared/CONTRACT.md is pinned: names exist and resolve."""

import ast
import importlib
import subprocess
import sys

import tcocalc as tc
from tests.conftest import ROOT

APP_FILES = [ROOT / "app.py", *sorted((ROOT / "tcocalc" / "app").glob("*.py"))]

# Every public name of ../shared/CONTRACT.md (later work may add names, never remove these).
CONTRACT_NAMES = {
    "hardware", "hardware_table", "Accelerator", "model", "model_table", "ModelArch",
    "Parallelism", "prefill", "decode", "generation_throughput", "training_throughput",
    "KernelTime", "GenerationEstimate", "TrainingEstimate",
    "CostInputs", "default_cost_inputs", "gpu_hour_cost", "CostBreakdown", "tinker_cost", "TinkerQuote",
    "Scenario", "load_scenario", "evaluate", "solve_split", "simulate", "RLReport",
    "UnknownEntryError", "InfeasibleError", "ScenarioError",
    "sweep", "scenarios",  # issue 30 (the contract's planned tc.sweep and tc.scenarios)
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


# Every tcocalc name the app's pages use (`tc.<name>`), pinned like CONTRACT_NAMES: a page uses the public API
# only, so each of these stays in __all__; a page that needs another name adds it to __all__ and here.
APP_NAMES = {
    "InfeasibleError", "MAX_SCENARIO_BYTES", "METRIC_UNITS", "RLReport", "Scenario", "TcocalcError",
    "build_rent_tinker", "cost_default_hardware", "default_cost_inputs", "evaluate", "gpu_hour_cost", "hardware",
    "CostInputs",
    "hardware_table", "load_scenario", "loads_scenario", "model_names", "operating_points", "ridge_table",
    "sensitivity", "simulate", "size_cluster", "solve_split", "tinker_gap", "validation_table",
    "rl_validation_table", "rl_speedup_pairs", "rl_validation_summary", "rl_refit_table",
    "long_output_table", "DEEPSEEK_V3_MTP_ACCEPTANCE", "scenarios", "MODES", "RunCalibration", "calibrate",
    "load_measurements", "simulated_events_estimate", "simulated_steps", "calibration_line",
    "pool_pricing",  # the Plan page's GPU-cost box shows the price in use after a hardware swap (issue 39, N6)
    "validate",  # the Validation page's out-of-sample groups (issue 36)
}
# Besides `import tcocalc as tc`, pages import only these library modules (figure and table builders, and the
# app's own helper module, tcocalc.app.shared).
APP_MODULES = {"tcocalc.figures", "tcocalc.reports", "tcocalc.app"}


def _app_uses() -> tuple[set[str], list[str]]:
    """(names used as `tc.<name>`, imports from tcocalc other than the facade, figures and reports)."""
    names, bad = set(), []
    for path in APP_FILES:
        tree = ast.parse(path.read_text(), filename=str(path))
        aliases = {"tcocalc"}
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                for a in node.names:
                    if a.name == "tcocalc":
                        aliases.add(a.asname or a.name)
                    elif a.name.startswith("tcocalc."):
                        bad.append(f"{path.name}: import {a.name}")
            elif isinstance(node, ast.ImportFrom) and (node.module or "").split(".")[0] == "tcocalc":
                module = node.module
                if module not in APP_MODULES:
                    bad.append(f"{path.name}: from {module} import {', '.join(a.name for a in node.names)}")
                    continue
                public = importlib.import_module(module).__all__
                bad += [f"{path.name}: {module}.{a.name} is not in its __all__" for a in node.names
                        if a.name not in public]
        for node in ast.walk(tree):
            if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id in aliases:
                names.add(node.attr)
    return names, bad


def test_app_pages_use_only_the_public_api():
    names, bad = _app_uses()
    assert not bad, bad
    assert names <= set(tc.__all__), sorted(names - set(tc.__all__))
    assert names <= APP_NAMES, f"pin these in APP_NAMES: {sorted(names - APP_NAMES)}"


def test_every_name_the_app_needs_is_public():
    assert APP_NAMES <= set(tc.__all__), sorted(APP_NAMES - set(tc.__all__))
    assert tc.MAX_SCENARIO_BYTES == 200_000


def test_app_pages_do_not_edit_sys_path():
    """Pages import their helper as `tcocalc.app.shared` (the installed package): no page edits sys.path."""
    for path in APP_FILES:
        imported = {a.name for node in ast.walk(ast.parse(path.read_text())) if isinstance(node, ast.Import)
                    for a in node.names}
        assert "sys" not in imported, path.name
