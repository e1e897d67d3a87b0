"""Helpers shared by the app's pages: cached library calls and scenario I/O. Only the app imports this."""

from __future__ import annotations

from pathlib import Path

import streamlit as st

import tcocalc as tc
from tcocalc.scenario import loads_scenario

ROOT = Path(__file__).resolve().parents[1]
SCENARIOS = ROOT / "scenarios"
MAX_UPLOAD_BYTES = 200_000  # a scenario is a few kB; the app refuses larger uploads


def scenario_files() -> dict[str, Path]:
    """Shipped scenarios by display name, default first."""
    files = sorted(SCENARIOS.glob("*.toml"), key=lambda p: (p.stem != "default", p.stem))
    return {p.stem: p for p in files}


@st.cache_data(show_spinner=False)
def scenario_text(path: str) -> str:
    return Path(path).read_text()


@st.cache_data(show_spinner=False)
def evaluate_text(text: str) -> tuple:
    scn = loads_scenario(text)
    r = tc.evaluate(scn)
    return r.metrics, r.phases, r.advice


@st.cache_data(show_spinner=False)
def solve_text(text: str, objective: str) -> tuple:
    scn = loads_scenario(text)
    r = tc.solve_split(scn, objective=objective)
    return r.metrics, r.sweep, r.advice, r.phases


@st.cache_data(show_spinner=False)
def simulate_text(text: str, steps: int, seed: int):
    scn = loads_scenario(text)
    r = tc.simulate(scn, steps=steps, seed=seed)
    return r.metrics, r.details["timeline"]


@st.cache_data(show_spinner=False)
def hardware_table():
    return tc.hardware_table()


@st.cache_data(show_spinner=False)
def model_names():
    return tc.model_names()


def fmt(value, unit: str = "", digits: int = 3) -> str:
    """A number with its unit for st.metric (None -> 'not offered')."""
    if value is None:
        return "not offered"
    if abs(value) >= 1000:
        s = f"{value:,.0f}"
    else:
        s = f"{value:.{digits}g}"
    return f"{s} {unit}".strip()


def show_error(exc: Exception) -> None:
    """A library error as one clear message, never a traceback."""
    field = getattr(exc, "field", "")
    hint = ""
    sugg = getattr(exc, "suggestion", None)
    if sugg is not None:
        hint = f" Suggestion: {sugg}."
    st.error(f"{type(exc).__name__}: {exc}{hint}" + (f" (field: {field})" if field else ""))
