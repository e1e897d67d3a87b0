"""Size: the cheapest hardware, GPU count, split, mode and supply for a target (tc.size_cluster, issue 15).

The target (useful samples/s, run hours for the scenario's steps, or a run budget), the options, the Pareto
chart of run cost against run time coloured by hardware pair, the best plans with "open in Plan" links, and
the candidates as CSV.
"""

from __future__ import annotations

from collections import OrderedDict
from urllib.parse import urlencode

import plotly.express as px
import streamlit as st

import tcocalc as tc
from tcocalc.app import shared as ui
from tcocalc.reports import candidates_table, display_table, header, to_csv_text

UNITS = {"run_hours": "h", "run_usd": "USD", "staleness_bound_steps": "step", "useful_samples_per_s": "sample/s",
         "usd_per_useful_sample": "USD/sample", "trainer_gpus": "GPU", "generator_gpus": "GPU"}
TARGETS = {"Useful samples/s": "useful_samples_per_s", "Run hours (the scenario's steps)": "run_hours",
           "Budget for the run [USD]": "budget_usd"}
#: Each target kind's starting value (audit N18: a value of 2 kept from samples/s meant a $2 budget or 2 hours)
TARGET_START = {"useful_samples_per_s": 2.0, "run_hours": 48.0, "budget_usd": 50_000.0}
#: The page's settings: kept across pages (Streamlit drops a page's widget state when you leave it) and in the URL
#: (a reload or a shared link), restored when the page is drawn again.
KEPT = ("size_scenario", "size_target_kind", "size_target_value", "size_trainer_hw", "size_generator_hw",
        "size_modes", "size_bounds", "size_granularity", "size_max_gpus")
LISTS = {"size_trainer_hw", "size_generator_hw", "size_modes", "size_bounds"}
MODES = ["sync", "one_step_off", "periodic", "async", "inflight"]
COLUMNS = ["trainer_hardware", "trainer_gpus", "generator_hardware", "generator_gpus", "mode", "same_as_modes",
           "staleness_bound_steps", "supply", "trainer_usd_per_gpu_hour", "generator_usd_per_gpu_hour",
           "useful_samples_per_s", "run_hours", "run_usd", "usd_per_useful_sample",
           "trainer_idle_fraction", "meets_target"]


#: Sizings kept per server process, by (scenario file, target, options): a page change or a reload answers at once.
SIZINGS_KEPT = 8


@st.cache_resource(show_spinner=False)
def _sizings() -> OrderedDict:
    """Sizing results by (scenario file, target, options), oldest first: one store per server process (not
    ``st.cache_data``, which would record the progress bar drawn while a search runs and fail to replay it)."""
    return OrderedDict()


def _size(path: str, target: tuple, options: tuple):
    """``tc.size_cluster`` with a progress bar while it searches (its ``progress`` hook), kept by its inputs."""
    key, store = (path, target, options), _sizings()
    if key not in store:
        bar = st.progress(0.0, text="Sizing…")
        store[key] = tc.size_cluster(ui.load_scenario(path), dict([target]), dict(options),
                                     progress=lambda done, total: bar.progress(
                                         min(1.0, done / max(total, 1)), text=f"Sizing: {done} of {total} evaluations"))
        bar.empty()
        while len(store) > SIZINGS_KEPT:
            store.popitem(last=False)
    return store[key]


def _plan_link(scenario: str, row) -> str:
    params = {"scenario": scenario, "trainer_hw": row["trainer_hardware"], "trainer_gpus": int(row["trainer_gpus"]),
              "generator_hw": row["generator_hardware"], "generator_gpus": int(row["generator_gpus"]),
              "mode": row["mode"]}
    if tc.MODES[row["mode"]].streaming:
        params["max_staleness"] = float(row["staleness_bound_steps"])
    if row["supply"] != "own":  # a provider's price (own: the scenario's, which Plan applies by itself)
        params["usd_gpu_h"] = float(row["trainer_usd_per_gpu_hour"])
    return "/?" + urlencode(params)


def _kind_changed() -> None:
    """A new target kind starts from its own value (the last one sized for it, else :data:`TARGET_START`)."""
    kind = TARGETS[st.session_state["size_target_kind"]]
    st.session_state["size_target_value"] = st.session_state.get("_size_values", {}).get(kind, TARGET_START[kind])


def _restore(files) -> None:
    """Bring back the settings kept from an earlier visit (session) or the URL (a reload, a link)."""
    ss = st.session_state
    kept = ss.get("_size_kept")
    if kept is None:  # a new session: the URL's settings, where they are valid
        q = st.query_params
        kept = {}
        if q.get("size_scenario") in files:
            kept["size_scenario"] = q["size_scenario"]
        if q.get("size_target_kind") in TARGETS:
            kept["size_target_kind"] = q["size_target_kind"]
        try:
            if "size_target_value" in q and 0 < float(q["size_target_value"]) <= 1e12:
                kept["size_target_value"] = float(q["size_target_value"])
        except ValueError:
            pass
        names = set(ui.hardware_table()["name"])
        for key, allowed in (("size_trainer_hw", names), ("size_generator_hw", names), ("size_modes", set(MODES))):
            if key in q:  # a name the boxes do not offer is left out, never passed to them
                kept[key] = [v for v in q.get_all(key) if v in allowed]
        if "size_bounds" in q:
            try:
                kept["size_bounds"] = [float(v) for v in q.get_all("size_bounds")]
            except ValueError:
                pass
        if q.get("size_granularity") in ("1", "4", "8", "72"):
            kept["size_granularity"] = int(q["size_granularity"])
        if q.get("size_max_gpus", "").isdigit() and 2 <= int(q["size_max_gpus"]) <= 100_000:
            kept["size_max_gpus"] = int(q["size_max_gpus"])
        if kept.get("size_scenario"):
            ss["_size_loaded"] = kept["size_scenario"]
    for key, value in kept.items():
        if key not in ss:
            ss[key] = value


def _keep() -> None:
    """Keep the settings for the next visit and in the URL."""
    ss = st.session_state
    ss["_size_kept"] = {key: ss[key] for key in KEPT if key in ss}
    params = {key: ([str(v) for v in ss[key]] if key in LISTS else str(ss[key])) for key in KEPT if key in ss}
    if st.query_params.to_dict() != {k: v[-1] if isinstance(v, list) and v else v for k, v in params.items()}:
        st.query_params.from_dict(params)


st.title("Size a cluster")
st.caption("Which accelerators, how many, how split, in which mode, owned or rented, for a target pace, deadline "
           "or budget. Every combination of hardware per pool, mode, staleness bound and supply is evaluated; GPU "
           "counts per pool on half-octave steps of the granularity.")
files = ui.scenario_files()
_restore(files)
c1, c2, c3 = st.columns(3)
name = c1.selectbox("Scenario (its workload and steps)", list(files), key="size_scenario")
label = c2.selectbox("Target", list(TARGETS), key="size_target_kind", on_change=_kind_changed)
if "size_target_value" not in st.session_state:
    st.session_state["size_target_value"] = TARGET_START[TARGETS[label]]
value = c3.number_input("Target value", min_value=1e-6, max_value=1e12, key="size_target_value", format="%g",
                        help="useful samples/s, hours for the scenario's steps, or USD for the whole run")
hw_names = list(ui.hardware_table()["name"])
scn0 = ui.load_scenario(str(files[name]))
own_bound = float(scn0.orchestration.max_staleness)
bound_choices = sorted({0.5, 1.0, 2.0, 4.0, 8.0, own_bound})
# The options start from the chosen scenario (its accelerators, the default bounds and its own); choosing another
# scenario, or coming back from another page, starts them again.
# A link that names only some options (e.g. the accelerators) starts the others from the scenario too.
starts = {"size_trainer_hw": [tc.hardware(scn0.trainer.hardware).name],
         "size_generator_hw": [tc.hardware(scn0.generator.hardware).name],
         "size_bounds": sorted({1.0, 2.0, 4.0, own_bound})}
if st.session_state.get("_size_loaded") != name:
    st.session_state["_size_loaded"] = name
    st.session_state.update(starts)
for key, first in starts.items():
    st.session_state.setdefault(key, first)
if "size_bounds" in st.session_state:  # bounds kept from a link or a visit: those this scenario offers
    st.session_state["size_bounds"] = [b for b in st.session_state["size_bounds"] if b in bound_choices]
if "size_modes" not in st.session_state:
    st.session_state["size_modes"] = list(MODES)
if "size_granularity" not in st.session_state:
    st.session_state["size_granularity"] = 8
if "size_max_gpus" not in st.session_state:
    st.session_state["size_max_gpus"] = 1024
# The options are a form: the search runs on the button, not on every click of a multiselect (audit N5)
form = st.form("size_options", border=False)
c1, c2 = form.columns(2)
t_hw = c1.multiselect("Trainer accelerators", hw_names, key="size_trainer_hw")
g_hw = c2.multiselect("Generator accelerators", hw_names, key="size_generator_hw")
c1, c2, c3, c4 = form.columns(4)
modes = c1.multiselect("Modes", MODES, key="size_modes")
bounds = c2.multiselect("Staleness bounds (async, inflight)", bound_choices, key="size_bounds",
                        format_func=lambda v: f"{v:g}",
                        help=f"max_staleness values tried; {scn0.name}'s own is {own_bound:g}")
gran = c3.selectbox("Granularity [GPUs]", [1, 4, 8, 72], key="size_granularity",
                    help="8: whole nodes; 72: NVL72 racks")
max_gpus = c4.number_input("Max GPUs (both pools)", min_value=2, max_value=100_000, step=64, key="size_max_gpus")
form.form_submit_button("Size", type="primary", help="search with these accelerators and options")
_keep()
st.session_state.setdefault("_size_values", {})[TARGETS[label]] = float(value)
try:
    res = _size(str(files[name]), (TARGETS[label], float(value)),
                (("trainer_hardware", tuple(t_hw)), ("generator_hardware", tuple(g_hw)), ("modes", tuple(modes)),
                 ("staleness_bounds", tuple(bounds)), ("granularity", int(gran)), ("max_gpus", int(max_gpus))))
except tc.TcocalcError as exc:
    ui.show_error(exc)
    st.stop()
(st.success if res.met else st.warning)(res.message)
df = res.candidates
plot = df.assign(pair=df["trainer_hardware"] + " → " + df["generator_hardware"])
front = res.pareto.assign(pair=res.pareto["trainer_hardware"] + " → " + res.pareto["generator_hardware"])
HOVER = ["trainer_gpus", "generator_gpus", "mode", "staleness_bound_steps", "supply", "useful_samples_per_s",
         "usd_per_useful_sample"]
fig = px.scatter(front, x="run_hours", y="run_usd", color="pair", symbol="supply", hover_data=HOVER,
                 labels={c: header(c, UNITS.get(c, "")) for c in ["run_hours", "run_usd", "pair", *HOVER]}
                 | {"pair": "trainer → generator"},
                 title=f"Pareto front of run cost vs run time ({len(front)} of {len(plot):,} candidates)")
st.plotly_chart(fig, key="size_chart")
st.subheader("Best plans")
top = df[COLUMNS].head(20)
st.dataframe(display_table(top), hide_index=True, key="size_table")
links = [f"[{i + 1}. {int(r['trainer_gpus'])} {r['trainer_hardware']} + {int(r['generator_gpus'])} "
         f"{r['generator_hardware']}, {r['mode']}, {r['supply']}]({_plan_link(name, r)})"
         for i, r in top.head(5).iterrows()
         if r["supply"] == "own" or r["trainer_usd_per_gpu_hour"] == r["generator_usd_per_gpu_hour"]]
st.markdown("Open in Plan: " + " · ".join(links))
st.download_button("Download all candidates (CSV)", to_csv_text(candidates_table(df)), "candidates.csv", "text/csv",
                   key="dl_size")
