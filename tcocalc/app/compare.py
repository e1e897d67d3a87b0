"""Compare: several scenarios side by side."""

from __future__ import annotations

import pandas as pd
import streamlit as st

import tcocalc as tc
from tcocalc.app import shared as ui
from tcocalc.figures import compare_figure
from tcocalc.reports import compare_table, display_metrics, to_csv_text

st.title("Compare scenarios")
files = ui.scenario_files()
chosen = st.multiselect("Scenarios", list(files), default=list(files)[:3], key="compare_set")
if not chosen:
    st.info("Pick one or more scenarios to compare.")
    st.stop()
rows, metrics = [], {}
for name in chosen:
    try:
        report = ui.evaluate(ui.load_scenario(str(files[name])))
    except tc.TcocalcError as exc:
        ui.show_error(exc)
        continue
    rows.append({"scenario": name, **report.metrics})
    metrics[name] = report.metrics
frame = pd.DataFrame(rows)
keys = list(tc.METRIC_UNITS)
metric = st.selectbox("Metric", keys, index=keys.index("usd_per_mtok_trained"), key="compare_metric",
                      format_func=lambda k: ui.metric_label(k))
if frame.empty:
    st.stop()
fig = compare_figure(frame, metric, tc.METRIC_UNITS[metric][0], label=ui.metric_label(metric))
# A value a scenario does not have (Tinker does not offer its model) has no bar: say so where the bar would be.
missing = list(frame.loc[frame[metric].isna(), "scenario"])
for name in missing:
    fig.add_annotation(x=name, y=0, yref="y", text="not offered", showarrow=False, yanchor="bottom",
                       font=dict(color="gray"))
st.plotly_chart(fig, key="compare_chart")
if missing:
    st.caption(f"{ui.metric_label(metric)}: not offered for {', '.join(missing)}, so no bar is drawn and no number is "
               "made up.")
st.dataframe(display_metrics(metrics), key="compare_table")
st.download_button("Download comparison (CSV)", to_csv_text(compare_table(frame)), "compare.csv", "text/csv",
                   key="dl_compare")
