"""Compare: several scenarios side by side: shipped ones, the Plan page's current inputs and your own uploads.

An upload that does not load keeps its column, which names the fault; the others still compare.
"""

from __future__ import annotations

import pandas as pd
import streamlit as st

import tcocalc as tc
from tcocalc.app import shared as ui
from tcocalc.figures import compare_figure
from tcocalc.reports import compare_table, display_metrics, to_csv_text

st.title("Compare scenarios")
st.caption("Shipped scenarios, the Plan page's current inputs and your own TOML files, side by side.")
files = ui.scenario_files()
ss = st.session_state
c1, c2 = st.columns([2, 1])
chosen = c1.multiselect("Scenarios", list(files), default=list(files)[:3], key="compare_set")
uploads = c2.file_uploader("Your variants (TOML)", type=["toml"], accept_multiple_files=True, key="compare_uploads",
                           help=f"at most {tc.MAX_SCENARIO_BYTES:,} bytes each; one column per file")
plan = ss.get("_plan_variant")  # (name, TOML) of the Plan page's inputs, written by the Plan page on every run
with_plan = st.checkbox(f"Add the Plan page's inputs ({plan[0]})" if plan else "Add the Plan page's inputs (open the "
                        "Plan page first)", key="compare_plan", disabled=plan is None)

runs: list[tuple[str, object]] = []  # (column name, scenario or the error that stopped it)
for name in chosen:
    runs.append((name, ui.load_scenario(str(files[name]))))
if with_plan and plan:
    runs.append((f"Plan: {plan[0]}", tc.loads_scenario(plan[1], source="the Plan page")))
for up in uploads or []:
    try:
        runs.append((up.name, tc.loads_scenario(up.getvalue().decode("utf-8"), source=up.name)))
    except UnicodeDecodeError as exc:
        runs.append((up.name, ValueError(f"{up.name} is not UTF-8 text: {exc}")))
    except tc.TcocalcError as exc:
        runs.append((up.name, exc))
if not runs:
    st.info("Pick one or more scenarios, add the Plan page's inputs or upload your own to compare.")
    st.stop()

rows, metrics, failed = [], {}, {}
names = set()
for name, scn in runs:
    while name in names:  # two uploads of one name keep two columns
        name += " (2)"
    names.add(name)
    if not isinstance(scn, tc.Scenario):
        failed[name] = ui.error_text(scn, {})
        continue
    try:
        report = ui.evaluate(scn)
    except (tc.TcocalcError, ValueError) as exc:
        failed[name] = ui.error_text(exc, {})
        continue
    rows.append({"scenario": name, **report.metrics})
    metrics[name] = report.metrics
for name, text in failed.items():
    st.error(f"{name}: {text}")
frame = pd.DataFrame(rows)
keys = list(tc.METRIC_UNITS)
metric = st.selectbox("Metric", keys, index=keys.index("usd_per_mtok_trained"), key="compare_metric",
                      format_func=lambda k: ui.metric_label(k))
if not frame.empty:
    fig = compare_figure(frame, metric, tc.METRIC_UNITS[metric][0], label=ui.metric_label(metric))
    # A value a scenario does not have (Tinker does not offer its model) has no bar: say so where the bar would be.
    missing = list(frame.loc[frame[metric].isna(), "scenario"])
    for name in missing:
        fig.add_annotation(x=name, y=0, yref="y", text="not offered", showarrow=False, yanchor="bottom",
                           font=dict(color="gray"))
    st.plotly_chart(fig, key="compare_chart")
    if missing:
        st.caption(f"{ui.metric_label(metric)}: not offered for {', '.join(missing)}, so no bar is drawn and no "
                   "number is made up.")
table = display_metrics(metrics)
for name, text in failed.items():  # a variant that does not load keeps its column, which says why
    table[name] = [f"not loaded: {text}", *[""] * (len(table) - 1)]
st.dataframe(table, key="compare_table")
if not frame.empty:
    st.download_button("Download comparison (CSV)", to_csv_text(compare_table(frame)), "compare.csv", "text/csv",
                       key="dl_compare")
