"""Rewrite the generated blocks of the docs pages from the code: ``python docs/generate.py``.

Each generated block sits between two marker comments::

    <!-- BEGIN GENERATED name: python docs/generate.py rewrites this block; edit the generator, not the block -->
    ...
    <!-- END GENERATED name -->

and everything outside the markers is hand-written. ``python docs/generate.py --check`` rewrites nothing and
exits 1 naming the stale pages; ``tests/docs/test_docs_generated.py`` runs the same check, so a model change that
moves a published figure fails until the pages are regenerated (in the same commit as the change).

Blocks (what prints them):

* ``docs/validation.md``: the headline summary, ``tcocalc validate --groups`` (the RL model by groups: NeMo RL
  in-sample, other frameworks, stages, leave-one-framework-out), ``tcocalc validate --markdown`` (roofline cases),
  ``tcocalc validate --long-output --markdown``, ``tcocalc validate --rl --markdown``, the on/off-policy pairs
  (``tc.rl_speedup_pairs``), the refit timings (``tc.rl_refit_table``) and the shipped scenarios' metrics;
* ``docs/scenario-schema.md``: every key of :class:`tcocalc.scenario.Scenario` (description, default, bounds,
  choices) and the framework presets (``tc.framework_presets``);
* ``docs/metrics.md``: every key of ``tc.METRIC_UNITS`` with its unit, meaning and the functions computing it;
* ``docs/calibration.md``: the leave-one-out summary of ``tc.calibrate`` (and its pairs in ``docs/validation.md``);
* ``docs/guide.md``: the sizing example's table (``tc.size_cluster``);
* ``README.md``: what ``tcocalc run scenarios/semianalysis_qwen3_235b_h200.toml --solve`` prints.
"""

from __future__ import annotations

import argparse
import contextlib
import functools
import importlib
import io
import re
import sys
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

BEGIN = ("<!-- BEGIN GENERATED {name}: python docs/generate.py rewrites this block; edit the generator, "
         "not the block -->")
END = "<!-- END GENERATED {name} -->"
BLOCK = re.compile(r"<!-- BEGIN GENERATED ([\w-]+):[^\n]*-->\n(.*?)<!-- END GENERATED \1 -->", re.S)


# ------------------------------------------------------------------------------------------------ helpers


def _cli(*argv: str) -> str:
    """What ``tcocalc ARGV`` prints."""
    from tcocalc.cli.main import main

    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        rc = main(list(argv))
    if rc:
        raise RuntimeError(f"tcocalc {' '.join(argv)} exited {rc}")
    return out.getvalue()


def _cell(v) -> str:
    text = "" if v is None else str(v)
    return text.replace("|", "\\|").replace("\n", " ")


def _table(header: list[str], rows: list[list], align: list[str] | None = None) -> str:
    """A Markdown table; ``align`` holds "l" or "r" per column."""
    align = align or ["l"] * len(header)
    rule = ["---:" if a == "r" else "---" for a in align]
    lines = ["| " + " | ".join(header) + " |", "| " + " | ".join(rule) + " |"]
    lines += ["| " + " | ".join(_cell(c) for c in row) + " |" for row in rows]
    return "\n".join(lines) + "\n"


def _num(v: float) -> str:
    return f"{v:,.0f}" if abs(v) >= 1000 else f"{v:.4g}"


def _pct(v: float) -> str:
    return f"{100 * v:.0f}%"


# ------------------------------------------------------------------------------------------ docs/validation.md


@functools.cache
def _rl():
    import tcocalc as tc

    table = tc.rl_validation_table()
    pairs = tc.rl_speedup_pairs(table)
    return table, pairs, tc.rl_validation_summary(table, pairs)


def accuracy_summary() -> dict:
    """The headline accuracy figures, from the same functions as ``tcocalc validate`` (README and
    docs/validation.md quote them; tests/docs/test_readme_figures.py checks the README's copy)."""
    import tcocalc as tc

    val = tc.validation_table()
    err = val["error [%]"].abs()
    clean = val["known_miss"] == ""
    lo = tc.long_output_table()
    lo_err = lo["error [%]"].dropna().abs()
    lo_check = lo.loc[~lo["case"].str.contains("RTX-PRO-6000"), "error [%]"].dropna().abs()
    table, _pairs, s = _rl()
    refit = tc.rl_refit_table()
    return {
        "cases": len(val), "median": float(err.median()), "misses": int((~clean).sum()),
        "median_clean": float(err[clean].median()), "within": int(val["within"].sum()),
        "lo_rows": len(lo), "lo_modelled": len(lo_err), "lo_median": float(lo_err.median()),
        "lo_within": int((lo_err <= 25).sum()),
        # the RTX PRO 6000 rows calibrated that card's serving factors: a fit, not a check
        "lo_fit_rows": int(lo["case"].str.contains("RTX-PRO-6000").sum()),
        "lo_check_median": float(lo_check.median()), "lo_check_rows": len(lo_check),
        "lo_check_within": int((lo_check <= 25).sum()),
        "nemo_rows": s["nemo_rows"], "nemo_median": s["nemo_median_abs_error_pct"],
        "nemo_within": int(round(s["nemo_within_share"] * s["nemo_rows"])),
        "verl_rows": int((table["framework"] == "verl").sum()), "verl_median": s["verl_median_abs_error_pct"],
        "pairs": s["pairs"], "pairs_right": s["pairs_right_side"],
        "refit_rows": len(refit), "refit_within": int(refit["within"].sum()),
    }


@functools.cache
def _groups():
    import tcocalc as tc

    return tc.validate()


def groups_summary() -> str:
    """The summary's bullet for ``tcocalc validate --groups`` (issue 36)."""
    v = _groups()
    g = v.groups.set_index("group")
    fw = v.frameworks.set_index("id")
    s1 = ", ".join(f"{fw.loc[i, 'predicted']:.2f}x against {fw.loc[i, 'published']:.2f}x"
                   + ("" if fw.loc[i, "within"] else " (outside its band)") for i in ("S1-1", "S1-2", "S1-3"))

    def line(name: str) -> str:
        return f"{g.loc[name, 'median |error| [%]']:.1f}% ({g.loc[name, 'within']} within)"

    return (f"* **RL model by groups** (`tcocalc validate --groups`): NeMo RL (in-sample) "
            f"{line('NeMo RL (in-sample)')}; other frameworks' published runs (development set) "
            f"**{line('other frameworks (development set)')}**; leave one framework out "
            f"{line('leave-one-framework-out')}; stages {line('stages')}; set-1 speed-ups {s1}.\n"
            + _update_length_bullet())


def _update_length_stats() -> dict:
    """The update-length view's figures (docs/validation.md, "Stages at the response lengths each run's own update
    implies"): its stage rows' median |error| and count within ±25%, and its speed-ups."""
    from tcocalc.studies.validation_groups import update_length_stages

    v = _groups()
    ratio = update_length_stages(v.stages, v.update_lengths)
    err = (ratio - 1.0).abs()
    return {"median": 100 * float(err.median()), "within": int((err <= 0.25).sum()), "rows": len(ratio),
            "speedups": v.update_speedups}


def _update_length_bullet() -> str:
    u = _update_length_stats()
    at = "at the updates' lengths"
    sp = ", ".join(f"{r['id']} {r[at]:.2f}x against {r['published']:.2f}x"
                   + ("" if r["inside"] else " (outside its band)") for _, r in u["speedups"].iterrows())
    return (f"* **Stages at each run's own response lengths** (the lengths most runs do not publish, read off each "
            f"run's published update; no constant fitted, the update not judged): median \\|error\\| "
            f"{u['median']:.1f}% ({u['within']} of {u['rows']} within ±25%); speed-ups {sp}.\n")


def validation_summary() -> str:
    a = accuracy_summary()
    return (f"* **Roofline engine** (`tcocalc validate`): median \\|error\\| **{a['median']:.1f}%** over "
            f"{a['cases']} published cases, {a['median_clean']:.1f}% without the {a['misses']} known misses; "
            f"{a['within']} of {a['cases']} within their tolerance.\n"
            f"* **Long outputs** (`tcocalc validate --long-output`): {a['lo_modelled']} of {a['lo_rows']} "
            f"TensorRT-LLM rows modelled, median \\|error\\| **{a['lo_median']:.1f}%**, {a['lo_within']} within "
            f"±25%; without the {a['lo_fit_rows']} RTX PRO 6000 rows, which are a fit, {a['lo_check_median']:.1f}% and "
            f"{a['lo_check_within']} of {a['lo_check_rows']}.\n"
            f"* **RL step times** (`tcocalc validate --rl`): NeMo RL {a['nemo_rows']} rows modelled, median "
            f"\\|error\\| **{a['nemo_median']:.1f}%**, {a['nemo_within']} of {a['nemo_rows']} within ±25%; verl "
            f"median **{a['verl_median']:.1f}%** over {a['verl_rows']} runs; {a['pairs_right']} of {a['pairs']} "
            f"on/off-policy pairs predicted on the published side of 1.0.\n"
            f"* **Weight sync and refit timings**: {a['refit_within']} of {a['refit_rows']} within ±25%.\n"
            + groups_summary())


def validation_pairs() -> str:
    _table_, pairs, _s = _rl()
    rows = [[r["on-policy"], r["off-policy"], r["case"], r["on GPUs"], r["off GPUs"],
             f"{r['published speed-up']:.2f}", f"{r['predicted speed-up']:.2f}", "yes" if r["right side"] else "NO"]
            for _, r in pairs.iterrows()]
    return _table(["on-policy", "off-policy", "case", "on GPUs", "off GPUs", "published T_on/T_off",
                   "predicted T_on/T_off", "right side"], rows, ["l"] * 5 + ["r", "r", "l"])


def validation_refit() -> str:
    import tcocalc as tc

    rows = []
    for _, r in tc.rl_refit_table().iterrows():
        ok = "yes" if r["within"] else ("known miss" if r["known_miss"] else "NO")
        rows.append([r["id"], r["case"], r["transport"], f"{r['published [s]']:.4g}", r["range [s]"],
                     f"{r['predicted [s]']:.4g}", f"{r['error [%]']:+.1f}%", ok, r["role"]])
    return _table(["id", "case", "transport", "published [s]", "range [s]", "predicted [s]", "error", "within ±25%",
                   "role"], rows, ["l", "l", "l", "r", "r", "r", "r", "l", "l"])


SCENARIO_COLUMNS = ("trainer_gpus", "generator_gpus", "step_time_s", "useful_samples_per_s", "trainer_idle_fraction",
                    "trainer_mfu", "usd_per_mtok_trained", "cost_ratio_vs_tinker")


def validation_scenarios() -> str:
    """Every shipped scenario's headline metrics as evaluated, and the split ``solve_split`` moves it to."""
    import tcocalc as tc

    rows = []
    for path in sorted((ROOT / "scenarios").glob("*.toml")):
        scn = tc.load_scenario(path)
        m = tc.evaluate(scn).metrics
        solved = tc.solve_split(scn).metrics
        ratio = m["cost_ratio_vs_tinker"]
        rows.append([f"`{path.stem}`", scn.orchestration.mode,
                     f"{m['trainer_gpus']:.0f}:{m['generator_gpus']:.0f}" if scn.orchestration.mode != "colocated"
                     else f"{m['trainer_gpus']:.0f} colocated",
                     f"{m['step_time_s']:.1f}", f"{m['useful_samples_per_s']:.3g}", _pct(m["trainer_idle_fraction"]),
                     f"{100 * m['trainer_mfu']:.1f}%", f"{m['usd_per_mtok_trained']:.2f}",
                     "not offered" if ratio is None else f"{ratio:.2f}x",
                     f"{solved['trainer_gpus']:.0f}:{solved['generator_gpus']:.0f}"
                     if scn.orchestration.mode != "colocated" else "-",
                     f"{solved['useful_samples_per_s']:.3g}", _pct(solved["trainer_idle_fraction"])])
    return _table(["scenario", "mode", "split", "step [s]", "useful samples/s", "trainer idle", "MFU",
                   "$/Mtok trained", "vs Tinker", "`--solve` split", "useful samples/s solved", "idle solved"], rows,
                  ["l", "l", "l", "r", "r", "r", "r", "r", "r", "l", "r", "r"])


# -------------------------------------------------------------------------------------- docs/scenario-schema.md

#: Keys whose pydantic field carries no description (the table shows these words instead).
UNDESCRIBED = {
    "name": "scenario label",
    "description": "free text",
    "workload.solve_rate": "the solve-rate mixture: the `[workload.solve_rate]` rows below",
    "phases.name": "phase label",
    "phases.turns": "overrides workload.turns from this phase on",
    "phases.tool_call_s": "overrides sandbox.tool_call_s from this phase on",
}


def _type_text(annotation) -> str:
    from types import NoneType, UnionType
    from typing import Annotated, Literal, Union, get_args, get_origin

    origin = get_origin(annotation)
    if origin is Annotated:  # a constrained type (scenario.Name): the type it constrains
        return _type_text(get_args(annotation)[0])
    if origin is Literal:
        return " / ".join(f"`{a}`" for a in get_args(annotation))
    if origin in (Union, UnionType):
        return " or ".join(_type_text(a) for a in get_args(annotation) if a is not NoneType)
    if origin is tuple:
        return "array of tables"
    if origin is dict:
        return "table"
    if hasattr(annotation, "model_fields"):
        return "table"
    return getattr(annotation, "__name__", str(annotation))


def _default_text(field) -> str:
    from pydantic_core import PydanticUndefined

    if field.is_required():
        return "required"
    if field.default_factory is not None:
        return "(table)" if not isinstance(field.default_factory(), tuple) else "none"
    d = field.default
    if d is None or d is PydanticUndefined:
        return "none"
    if isinstance(d, bool):
        return str(d).lower()
    if isinstance(d, str):
        return f'"{d}"'
    return f"{d:g}" if isinstance(d, float) else str(d)


def _bounds_text(field) -> str:
    import typing

    import annotated_types as at

    out = []
    inner = [m for a in typing.get_args(field.annotation) if typing.get_origin(a) is typing.Annotated
             for m in a.__metadata__]  # an optional constrained type (Name | None) keeps its constraints inside
    for m in [*field.metadata, *inner]:
        if getattr(m, "strip_whitespace", False) and getattr(m, "min_length", None) == 1:
            out.append("not blank (surrounding whitespace stripped)")
        for cls, attr, sign in ((at.Ge, "ge", "≥"), (at.Gt, "gt", ">"), (at.Le, "le", "≤"), (at.Lt, "lt", "<")):
            if isinstance(m, cls):
                v = getattr(m, attr)
                integral = isinstance(v, int) or (float(v).is_integer() and abs(v) < 1e15)
                out.append(f"{sign} {int(v):,}" if integral else f"{sign} {v:g}")
        if isinstance(m, at.MinLen):
            out.append(f"≥ {m.min_length} characters")
        if isinstance(m, at.MaxLen):
            out.append(f"≤ {m.max_length:,} characters")
    return ", ".join(out)


def _schema_rows(section: str, model, prefix: str, keys=None) -> list[list]:
    rows = []
    for key, f in model.model_fields.items():
        if keys is not None and key not in keys:
            continue
        path = f"{prefix}{key}"
        meaning = f.description or UNDESCRIBED.get(path)
        if meaning is None:
            raise KeyError(f"{path} has no description: give the field one (tcocalc/scenario.py) or add it to "
                           "UNDESCRIBED in docs/generate.py")
        rows.append([section, f"`{key}`", _type_text(f.annotation), _default_text(f), _bounds_text(f), meaning])
    return rows


def _section_model(annotation):
    """The pydantic model of a section's annotation (``Section`` or ``Section | None``), else None."""
    import typing

    if hasattr(annotation, "model_fields"):
        return annotation
    args = [a for a in typing.get_args(annotation) if hasattr(a, "model_fields")]
    return args[0] if args else None


def scenario_schema() -> str:
    from tcocalc.scenario import Phase, Scenario

    rows = []
    top = []
    for name, f in Scenario.model_fields.items():
        section = _section_model(f.annotation)
        if name == "phases":
            continue
        if section is None:
            top.append(name)
            continue
        rows += _schema_rows(f"[{name}]", section, f"{name}.")
        for key, g in section.model_fields.items():
            if _section_model(g.annotation) is not None:
                rows += _schema_rows(f"[{name}.{key}]", _section_model(g.annotation), f"{name}.{key}.")
    rows = _schema_rows("(top level)", Scenario, "", keys=top) + rows + _schema_rows("[[phases]]", Phase, "phases.")
    return _table(["section", "key", "type", "default", "bounds", "meaning (unit)"], rows)


def scenario_presets() -> str:
    import tcocalc as tc
    from tcocalc.catalog.frameworks import FRAMEWORK_KEYS

    presets = tc.framework_presets()
    order = ["generic"] + [n for n in presets if n != "generic"]
    rows = []
    for name in order:
        p = presets[name]
        label = f"`{name}` (default)" if name == "generic" else f"`{name}`"
        rows.append([label] + [str(p[k]).lower() if isinstance(p[k], bool) else str(p[k]) for k in FRAMEWORK_KEYS])
    return _table(["preset", *FRAMEWORK_KEYS], rows)


# --------------------------------------------------------------------------------------------- docs/metrics.md

#: metric -> (functions that compute it, in the order the value is built; derivation section of
#: docs/rl-modeling.md). Dotted paths from ``tcocalc``; tests/docs/test_docs_generated.py checks that each resolves.
METRIC_SOURCES: dict[str, tuple[tuple[str, ...], str]] = {
    "trainer_gpus": (("rl.rates.pool_rates",), "§5.1"),
    "generator_gpus": (("rl.rates.pool_rates",), "§5.1"),
    "step_time_s": (("rl.steps.registry.STEP_MODELS", "rl.report.combine_phases"), "§5.1"),
    "useful_samples_per_s": (("rl.steps.registry.STEP_MODELS", "rl.rollouts.useful_group_fraction",
                              "rl.report.contract_metrics"), "§6"),
    "trainer_capacity_samples_per_s": (("rl.capacity.trainer_capacity", "rl.steps.registry.STEP_MODELS"), "§3.2"),
    "generator_capacity_samples_per_s": (("rl.capacity.generator_capacities", "rl.steps.registry.STEP_MODELS"), "§4.4"),
    "trainer_idle_fraction": (("rl.steps.registry.STEP_MODELS",), "§5.2"),
    "generator_idle_fraction": (("rl.steps.registry.STEP_MODELS",), "§5.2"),
    "trainer_mfu": (("rl.rates.pool_rates", "rl.steps.registry.STEP_MODELS", "rl.report.contract_metrics"), "§3.2"),
    "trainer_mfu_busy": (("rl.capacity.trainer_capacity", "rl.rates.pool_rates"), "§3.2"),
    "generator_output_tokens_per_s_per_gpu": (("rl.steps.registry.STEP_MODELS", "rl.report.contract_metrics"), "§4.4"),
    "prefix_cache_hit_fraction": (("rl.kv_retention.lru_residency", "rl.steps.registry.STEP_MODELS"), "§4.12"),
    "useful_group_fraction": (("rl.rollouts.useful_group_fraction", "rl.phases.workload_stats"), "§2.2"),
    "discarded_fraction": (("rl.steps.registry.STEP_MODELS",), "§4.6"),
    "mean_staleness_steps": (("rl.staleness.staleness",), "§5.3"),
    "max_staleness_steps": (("rl.staleness.staleness", "rl.report.combine_phases"), "§5.3"),
    "token_staleness_steps": (("rl.staleness.staleness",), "§5.3"),
    "env_state_stale_fraction": (("rl.staleness.staleness",), "§5.3"),
    "sandbox_concurrency": (("rl.sandboxes.sandbox_load",), "§7"),
    "sandbox_cpu_cores": (("rl.sandboxes.sandbox_load", "rl.report.contract_metrics"), "§7"),
    "usd_per_hour": (("economics.tco.cluster_usd_per_hour",), "§8"),
    "usd_per_gpu_hour": (("economics.tco.cluster_usd_per_hour", "economics.tco.gpus_paid"), "§8"),
    "usd_per_step": (("rl.report.contract_metrics", "rl.report.combine_phases"), "§8"),
    "usd_per_mtok_trained": (("rl.report.contract_metrics", "rl.report.combine_phases"), "§8"),
    "tinker_usd_per_mtok": (("rl.report.tinker_usd_per_mtok", "rl.report.combine_phases"), "§8"),
    "cost_ratio_vs_tinker": (("rl.report.combine_phases",), "§8"),
    "run_hours": (("rl.report.combine_phases", "rl.sandboxes.ramp_hours"), "§7"),
    "run_usd": (("rl.report.combine_phases", "rl.sandboxes.ramp_hours"), "§8"),
    "semianalysis_usd_per_mtok": (("rl.report.semianalysis_metrics",
                                   "economics.semianalysis.semianalysis_usd_per_gpu_hour"), "§8"),
    "semianalysis_tinker_usd_per_mtok": (("rl.report.semianalysis_metrics",
                                          "economics.semianalysis.semianalysis_tinker_usd_per_mtok"), "§8"),
    "semianalysis_cost_ratio_vs_tinker": (("rl.report.semianalysis_metrics",), "§8"),
}


def resolve(dotted: str):
    """The object ``tcocalc.<dotted>`` names (a module attribute); ImportError/AttributeError when it moved."""
    module, _, name = f"tcocalc.{dotted}".rpartition(".")
    return getattr(importlib.import_module(module), name)


def metrics_table() -> str:
    import tcocalc as tc

    missing = sorted(set(tc.METRIC_UNITS) - set(METRIC_SOURCES))
    extra = sorted(set(METRIC_SOURCES) - set(tc.METRIC_UNITS))
    if missing or extra:
        raise KeyError(f"METRIC_SOURCES in docs/generate.py is out of step with tc.METRIC_UNITS: missing {missing}, "
                       f"not metrics {extra}")
    from tcocalc.rl.report import RUN_METRICS

    run = set(RUN_METRICS)
    rows = []
    for key, (unit, meaning) in tc.METRIC_UNITS.items():
        funcs, section = METRIC_SOURCES[key]
        for f in funcs:
            resolve(f)
        level = "run" if key in run else "phase"
        rows.append([f"`{key}`", "1 (fraction)" if unit == "1" else unit, meaning, level,
                     ", ".join(f"`{f}`" for f in funcs), section])
    return _table(["metric", "unit", "meaning", "level", "computed by (`tcocalc.`…)", "docs/rl-modeling.md"], rows)


# ----------------------------------------------------------------------------------------------- docs/guide.md

SIZING_FAMILIES = (("Hopper", ("H100", "H200")), ("Blackwell", ("B200", "B300", "GB200-NVL72")))


def sizing_table() -> str:
    """The guide's sizing example: the cheapest plan meeting 2 useful samples/s for the SemiAnalysis workload,
    Hopper vs Blackwell, owned vs rented (the guide's own loop)."""
    import tcocalc as tc

    scn = tc.load_scenario(ROOT / "scenarios" / "semianalysis_qwen3_235b_h200.toml")
    providers = list(tc.cloud_prices()["provider"].unique())
    rows = []
    for family, hw in SIZING_FAMILIES:
        for supply, supplies in (("own", ["own"]), ("rent", providers)):
            best = tc.size_cluster(scn, {"useful_samples_per_s": 2.0},
                                   {"trainer_hardware": list(hw), "generator_hardware": list(hw),
                                    "supplies": supplies}).best
            label = supply if supply == "own" else f"rent ({best['supply']})"
            plan = (f"{best['trainer_gpus']:.0f} {best['trainer_hardware']} trainer + {best['generator_gpus']:.0f} "
                    f"{best['generator_hardware']} generator, {best['mode']}")
            if best["mode"] in ("async", "inflight"):
                plan += f", max_staleness {best['staleness_bound_steps']:g}"
            rows.append([family, label, plan, f"{best['run_hours']:.1f} h", f"${best['run_usd']:,.0f}"])
    return _table(["family", "supply", "plan (cheapest meeting 2 useful samples/s)", "run", "cost"], rows,
                  ["l", "l", "l", "r", "r"])


# ----------------------------------------------------------------------------------- calibration from a run


@functools.cache
def _calibration_pairs():
    from tcocalc.studies.calibration_validation import calibration_pairs_table

    return calibration_pairs_table()


def calibration_summary() -> str:
    """Leave-one-out summary of tc.calibrate on the published step times (docs/calibration.md §5)."""
    from tcocalc.studies.calibration_validation import CALIBRATED_TARGET, calibration_validation_summary

    rows = []
    for fw in ("NeMo RL", "verl"):
        s = calibration_validation_summary(_calibration_pairs(), fw)
        rows.append([fw, str(s["pairs"])] + [f"{100 * s[f'{k}_median_abs_error']:.1f}% / "
                                              f"{100 * s[f'{k}_within_25pct']:.0f}%"
                                              for k in ("uncalibrated", "calibrated", "rescaled")])
    s = calibration_validation_summary(_calibration_pairs(), "NeMo RL")
    med, share = s["calibrated_median_abs_error"], s["calibrated_within_25pct"]
    verdict = (f"Target on NeMo RL: calibrated median ≤ {100 * CALIBRATED_TARGET['median_abs_error']:.0f}% "
               f"({'met' if med <= CALIBRATED_TARGET['median_abs_error'] else 'not met'}: {100 * med:.1f}%) and ≥ "
               f"{100 * CALIBRATED_TARGET['within_25pct']:.0f}% within ±25% "
               f"({'met' if share >= CALIBRATED_TARGET['within_25pct'] else 'not met'}: {100 * share:.0f}%).")
    return _table(["framework", "pairs", "uncalibrated median / within ±25%", "calibrated", "whole-step rescale"],
                  rows, ["l", "r", "r", "r", "r"]) + "\n" + verdict + "\n"


def calibration_pairs() -> str:
    """Every (pilot, sibling) pair of the leave-one-out check with its three errors."""
    t = _calibration_pairs()
    rows = [[r["pilot"], r["target"], r["framework"], r["model"], r["hardware"], r["pilot run"], r["target run"],
             f"{r['published [s]']:,.1f}", f"{r['uncalibrated error [%]']:+.1f}", f"{r['calibrated error [%]']:+.1f}",
             f"{r['rescaled error [%]']:+.1f}"] for _, r in t.iterrows()]
    return _table(["pilot", "sibling", "framework", "model", "hardware", "pilot run", "sibling run", "published [s]",
                   "uncalibrated [%]", "calibrated [%]", "rescaled [%]"], rows,
                  ["l", "l", "l", "l", "l", "l", "l", "r", "r", "r", "r"])


# ------------------------------------------------------------------------------------------------- README.md

README_RUN = ("run", "scenarios/semianalysis_qwen3_235b_h200.toml", "--solve")


def readme_accuracy() -> str:
    """The README's "How accurate" bullets, from :func:`accuracy_summary` and the calibration's leave-one-out."""
    from tcocalc.catalog.calibration import rl_calibration
    from tcocalc.studies.calibration_validation import calibration_validation_summary

    a = accuracy_summary()
    c = calibration_validation_summary(_calibration_pairs(), "NeMo RL")
    rl = rl_calibration()
    return (f"* the roofline engine's median |error| is {a['median']:.1f}% over {a['cases']} published serving, "
            f"latency and training cases ({a['median_clean']:.1f}% without the {a['misses']} known misses);\n"
            f"* TensorRT-LLM's long-output throughput: median {a['lo_median']:.1f}%, {a['lo_within']} of "
            f"{a['lo_rows']} rows within ±25%;\n"
            f"* NeMo RL's published step times: median {a['nemo_median']:.1f}% over {a['nemo_rows']} runs, "
            f"{a['nemo_within']} within ±25%; verl's fully-async study {a['verl_median']:.1f}% over "
            f"{a['verl_rows']} runs; all {a['pairs']} on/off-policy pairs predicted on the right side"
            + ("" if a["pairs_right"] == a["pairs"] else f" but {a['pairs'] - a['pairs_right']}") + ";\n"
            f"* calibrated on one published run's step time (`tc.calibrate`), its {c['pairs']} NeMo RL siblings "
            f"(another mode or GPU count) are predicted with a median |error| of "
            f"{100 * c['calibrated_median_abs_error']:.1f}%, {100 * c['calibrated_within_25pct']:.0f}% within ±25% "
            f"(uncalibrated {100 * c['uncalibrated_median_abs_error']:.1f}%; docs/calibration.md); out of sample, "
            f"carried to a sibling of the same mode (AReaL scaled out 4x, pairs C-06 and C-07) it misses by a median "
            f"of {100 * rl['calibrate_within_mode_error']:.1f}%, to a sibling of another mode (pairs C-01..C-05) by "
            f"{100 * rl['calibrate_across_modes_error']:.0f}%, and those are the figures a calibrated report states;\n"
            + _readme_out_of_sample())


def _readme_out_of_sample() -> str:
    """The README's bullet for other frameworks' published runs (``tcocalc validate --groups``)."""
    g = _groups().groups.set_index("group")
    dev, lofo = g.loc["other frameworks (development set)"], g.loc["leave-one-framework-out"]
    return (f"* out of sample, on other frameworks' published runs (verl recipes, AReaL, checkpoint-engine, real verl "
            f"logs; `tcocalc validate --groups`): median {dev['median |error| [%]']:.1f}%, {dev['within']} within "
            f"their band ({lofo['median |error| [%]']:.1f}% with nothing fitted on the predicted framework); this, "
            f"per regime, is the typical error every uncalibrated report states. Their stages (generation, update, "
            f"log-prob passes, switch): median {g.loc['stages', 'median |error| [%]']:.1f}% with the response "
            f"lengths the scenarios assume, {_update_length_stats()['median']:.1f}% with each run's lengths read off "
            f"its own published update (docs/validation.md).\n")


def readme_solve() -> str:
    """What the README's one command prints (the tour's second step)."""
    return "```text\n" + _cli(*README_RUN) + "```\n"


# ------------------------------------------------------------------------------------------------- the pages

BLOCKS: dict[str, Callable[[], str]] = {
    "validation-summary": validation_summary,
    "validation-roofline": lambda: _cli("validate", "--markdown"),
    "validation-long-output": lambda: _cli("validate", "--long-output", "--markdown"),
    "validation-rl": lambda: _cli("validate", "--rl", "--markdown"),
    "validation-groups": lambda: _cli("validate", "--groups"),
    "validation-pairs": validation_pairs,
    "validation-refit": validation_refit,
    "validation-scenarios": validation_scenarios,
    "scenario-schema": scenario_schema,
    "scenario-presets": scenario_presets,
    "metrics": metrics_table,
    "guide-sizing": sizing_table,
    "readme-solve": readme_solve,
    "readme-accuracy": readme_accuracy,
    "calibration-summary": calibration_summary,
    "validation-calibration": calibration_pairs,
}

PAGES: dict[str, tuple[str, ...]] = {
    "docs/validation.md": ("validation-summary", "validation-groups", "validation-roofline", "validation-long-output",
                           "validation-rl",
                           "validation-pairs", "validation-refit", "validation-calibration", "validation-scenarios"),
    "docs/calibration.md": ("calibration-summary",),
    "docs/scenario-schema.md": ("scenario-schema", "scenario-presets"),
    "docs/metrics.md": ("metrics",),
    "docs/guide.md": ("guide-sizing",),
    "README.md": ("readme-solve", "readme-accuracy"),
}


@functools.cache
def block(name: str) -> str:
    """The text of one generated block (computed once per process)."""
    text = BLOCKS[name]()
    return text if text.endswith("\n") else text + "\n"


def render(page: str, text: str | None = None) -> str:
    """The page with every generated block rewritten; ValueError when a marker is missing or unknown."""
    text = (ROOT / page).read_text(encoding="utf-8") if text is None else text
    found = BLOCK.findall(text)
    names = [n for n, _ in found]
    want = list(PAGES[page])
    if sorted(names) != sorted(want):
        raise ValueError(f"{page}: generated blocks {names}, expected {want} (markers: {BEGIN.format(name='NAME')})")
    return BLOCK.sub(lambda m: BEGIN.format(name=m.group(1)) + "\n" + block(m.group(1)) + END.format(name=m.group(1)),
                     text)


def stale_pages() -> list[str]:
    return [page for page in PAGES if render(page) != (ROOT / page).read_text(encoding="utf-8")]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--check", action="store_true", help="rewrite nothing; exit 1 if a page is stale")
    parser.add_argument("pages", nargs="*", help=f"pages to rewrite (default: all of {', '.join(PAGES)})")
    args = parser.parse_args(argv)
    pages = args.pages or list(PAGES)
    stale = []
    for page in pages:
        path = ROOT / page
        new = render(page)
        if new != path.read_text(encoding="utf-8"):
            stale.append(page)
            if not args.check:
                path.write_text(new, encoding="utf-8")
    verb = "stale" if args.check else "rewritten"
    print(f"{verb}: {', '.join(stale)}" if stale else "every page is up to date")
    return 1 if (args.check and stale) else 0


if __name__ == "__main__":
    sys.exit(main())
