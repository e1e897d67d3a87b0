"""Helpers shared by the app's pages: cached library calls and scenario I/O. Only the app imports this.

Pages import it as ``from tcocalc.app import shared as ui`` (the installed package), so no page edits
``sys.path`` and the app runs the same from a checkout (``streamlit run app.py``) and from a wheel
(``tcocalc app``).

The cached calls return the library's :class:`tcocalc.RLReport` itself (``st.cache_data`` pickles it); they
are keyed by the scenario's TOML text, and take the validated :class:`tcocalc.Scenario` as an unhashed
argument, so nothing is parsed twice. Simulations are kept in a store of their own (:func:`simulate`): their
progress callback draws on the page, which ``st.cache_data`` would record and fail to replay.
"""

from __future__ import annotations

import inspect
import math
import re
from collections import OrderedDict

import streamlit as st

import tcocalc as tc
from tcocalc.reports import human, workbook_bytes

#: The Plan page's numeric inputs: key -> the scenario field they set. Their limits are the field's own
#: (Scenario.field_bounds): one source, so a file the library accepts is shown as it is (a 1,000-step limit once
#: turned a file's bound of 10,000 into 0). ``draft_tokens`` 0 means off (no generator.speculative_tokens).
FIELDS = {
    "trainer_gpus": "trainer.gpus", "generator_gpus": "generator.gpus", "max_staleness": "orchestration.max_staleness",
    "prompts": "workload.prompts_per_step", "group": "workload.group_size", "prompt_tokens": "workload.prompt_tokens",
    "resp_mean": "workload.response_tokens_mean", "turns": "workload.turns", "tool_s": "sandbox.tool_call_s",
    "usd_gpu_h": "economics.usd_per_gpu_hour", "draft_tokens": "generator.speculative_tokens",
    "acceptance": "generator.acceptance_rate", "steps": "workload.steps",
    "sb_live": "sandbox.max_concurrency", "sb_starting": "sandbox.max_starting",
    "sb_failure": "sandbox.failure_rate", "sb_startup": "sandbox.startup_s", "sb_exec": "sandbox.max_executing",
}
WHOLE = {"trainer_gpus", "generator_gpus", "prompts", "group", "turns", "draft_tokens", "steps", "sb_live",
         "sb_starting", "sb_exec"}


def number_limits(key: str) -> tuple[type, float, float]:
    """(type, min, max) of a numeric input: its field's bounds, an exclusive one moved to the next value inside."""
    low, high, low_in, high_in = tc.Scenario.field_bounds(FIELDS[key])
    kind = int if key in WHOLE else float
    if key == "draft_tokens":
        low, low_in = 0, True  # 0: speculative decoding off
    if not low_in:
        low = low + 1 if kind is int else math.nextafter(float(low), math.inf)
    if not high_in:
        high = high - 1 if kind is int else math.nextafter(float(high), -math.inf)
    return kind, kind(low), kind(high)


def scenario_files() -> dict[str, str]:
    """Shipped scenarios (``tc.scenarios()``: packaged with the library, so the app runs from a wheel too) by
    display name, default first; each value is the name ``tc.load_scenario`` reads."""
    return {name: name for name in tc.scenarios()}


@st.cache_data(show_spinner=False)
def scenario_text(name: str) -> str:
    """A shipped scenario as TOML text (``Scenario.to_toml()``, which ``tc.loads_scenario`` reads back)."""
    return tc.load_scenario(name).to_toml()


@st.cache_data(show_spinner=False)
def load_scenario(path: str) -> tc.Scenario:
    """A shipped scenario, validated (cached: each file is read once per server process)."""
    return tc.load_scenario(path)


def evaluate(scn: tc.Scenario) -> tc.RLReport:
    """``tc.evaluate``, cached by the scenario's TOML."""
    return _evaluate(scn, scn.to_toml())


def solve(scn: tc.Scenario, objective: str) -> tc.RLReport:
    """``tc.solve_split``, cached by the scenario's TOML and the objective."""
    return _solve(scn, scn.to_toml(), objective)


SIMULATIONS_KEPT = 64


def simulate(scn: tc.Scenario, steps: int, seed: int, progress=None) -> tc.RLReport:
    """``tc.simulate``, kept by the scenario's TOML, steps and seed (the last SIMULATIONS_KEPT runs).

    ``progress(done, total)`` is passed on when the library's ``simulate`` takes it; a kept run calls nothing.
    The report is shared, not copied: callers only read it.
    """
    key = (scn.to_toml(), steps, seed)
    store = _simulations()
    report = store.get(key)
    if report is None:
        takes = progress is not None and simulate_takes_progress()
        report = tc.simulate(scn, steps=steps, seed=seed, **({"progress": progress} if takes else {}))
        store[key] = report
        while len(store) > SIMULATIONS_KEPT:
            store.popitem(last=False)
    return report


def calibrate(scn: tc.Scenario, log, framework: str | None, steps: str | None, typed: dict) -> tc.RunCalibration:
    """``tc.calibrate`` of the page's scenario on an uploaded log (read by ``tc.load_measurements`` from a
    temporary copy with the upload's name, which tells its format) and figures typed by hand, which win over the
    log's. ScenarioError (a MeasurementError) when neither gives a time."""
    import tempfile
    from pathlib import Path

    if log is None:
        return tc.calibrate(scn, typed, source="figures typed on the Plan page")
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / Path(log.name).name
        path.write_bytes(log.getvalue())
        m = tc.load_measurements(path, framework=framework, steps=steps)
    first, last = m.steps_used
    source = (f"{log.name} ({m.framework}, steps {first}-{last})"
              + (" and figures typed on the Plan page" if typed else ""))
    return tc.calibrate(scn, {**dict(m), **typed} if typed else m, source=source)


def calibration_text(attrs: dict) -> str:
    """Whether a study is calibrated (from what, which factors, which dropped) and the typical step-time error
    that goes with it (its ``attrs["calibration"]`` and ``["trust"]``, tc.calibration_of; tc.calibration_line)."""
    return tc.calibration_line(attrs.get("calibration") or {}, attrs.get("trust"))


def simulate_takes_progress() -> bool:
    """Whether ``tc.simulate`` reports its progress (``progress=callable(done, total)``)."""
    return "progress" in inspect.signature(tc.simulate).parameters


@st.cache_data(show_spinner=False)
def _evaluate(_scn: tc.Scenario, key: str) -> tc.RLReport:
    return tc.evaluate(_scn)


@st.cache_data(show_spinner=False)
def _solve(_scn: tc.Scenario, key: str, objective: str) -> tc.RLReport:
    return tc.solve_split(_scn, objective=objective)


@st.cache_resource(show_spinner=False)
def _simulations() -> OrderedDict:
    """Simulation reports by (TOML, steps, seed), oldest first: one store per server process."""
    return OrderedDict()


@st.cache_data(show_spinner=False)
def hardware_table():
    return tc.hardware_table()


@st.cache_data(show_spinner=False)
def model_names():
    return tc.model_names()


def metric_label(key: str) -> str:
    """A contract metric in words (``cost per M trained tokens (ours)``), for pickers and captions."""
    return human(key)


def fmt(value, unit: str = "", digits: int = 3) -> str:
    """A number with its unit for st.metric (None -> 'not offered')."""
    if value is None:
        return "not offered"
    if abs(value) >= 1000:
        s = f"{value:,.0f}"
    else:
        s = f"{value:.{digits}g}"
    return f"{s} {unit}".strip()


def plural(value, one: str, many: str | None = None) -> str:
    """``value`` with its unit, singular for exactly 1 ("1 step", "0 steps", "1.5 steps"; None -> 'not offered')."""
    unit = one if value == 1 else (many or f"{one}s")
    return fmt(value, unit)


def split_text(metrics: dict, mode: str) -> str:
    """The pools a report ran on: "8 trainer : 24 generator GPUs", or "16 GPUs (one colocated pool)"."""
    if tc.MODES[mode].shared_pool:
        return f"{metrics['trainer_gpus']:,.0f} GPUs (one colocated pool)"
    return f"{metrics['trainer_gpus']:,.0f} trainer : {metrics['generator_gpus']:,.0f} generator GPUs"


def error_text(exc: Exception, labels: dict[str, str] | None = None) -> str:
    """A library error as one line; an InfeasibleError adds the smallest GPU count (and layout) that fits.

    With ``labels`` (a ScenarioError's field -> the label of the widget on the page) the text is plain: no
    exception class name, and a field the page shows by its label is named by that label, in the message too
    (a rule across fields, e.g. "colocated: generator.gpus must equal trainer.gpus").
    """
    if labels is None:
        text = f"{type(exc).__name__}: {exc}"
    else:
        field, message = getattr(exc, "field", None), getattr(exc, "message", None)
        text = f"{labels[field]}: {message}" if field in labels and message else str(exc)
        for path in sorted(labels, key=len, reverse=True):  # a rule across fields names them in its message too
            text = re.sub(rf"(?<![\w.]){re.escape(path)}(?![\w.])", f"'{labels[path]}'", text)
    if isinstance(exc, tc.InfeasibleError) and exc.min_gpus is not None:
        layout = f" ({exc.layout.label()})" if exc.layout is not None else ""
        if f"{exc.min_gpus:,} GPUs" not in text and f"{exc.min_gpus} GPUs" not in text:  # said once, not twice
            text = f"{text.rstrip('.')}. Smallest that fits: {exc.min_gpus:,} GPUs{layout}."
    return text


def show_error(exc: Exception, labels: dict[str, str] | None = None) -> None:
    """A library error as one clear message, never a traceback. A ScenarioError's text names its field (by its
    widget label where ``labels`` has it)."""
    st.error(error_text(exc, labels))


def workbook(report: tc.RLReport, scenario_file: str) -> bytes:
    """The report's Excel workbook (``tcocalc.reports.workbook_bytes``), cached by what the report is of: its
    scenario's TOML and whether it was solved (writing one takes about 50 ms, too long for every rerun)."""
    return _workbook(report, report.scenario.to_toml(), report.sweep is not None, scenario_file)


@st.cache_data(show_spinner=False, max_entries=32)
def _workbook(_report: tc.RLReport, toml: str, solved: bool, scenario_file: str) -> bytes:
    return workbook_bytes(_report, scenario_file)


def sandbox_share(report: tc.RLReport) -> float | None:
    """The modelled share of a rollout's time spent in sandboxes (tool calls and starts) in the run's first phase,
    for the timeline's sandbox lane; None without sandboxes."""
    try:
        share = float(report.phase_results[0].flow.sandbox_share[0])
    except (TypeError, AttributeError, IndexError):
        return None
    return share if share > 0 else None
