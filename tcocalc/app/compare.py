"""Compare: several scenarios side by side."""

from __future__ import annotations

import pandas as pd
import streamlit as st

import tcocalc as tc
from tcocalc.app import shared as ui
from tcocalc.figures import compare_figure
from tcocalc.reports import to_csv_text

st.title("Compare scenarios")
files = ui.scenario_files()
chosen = st.multiselect("Scenarios", list(files), default=list(files)[:3], key="compare_set")
if not chosen:
    st.info("Pick one or more scenarios to compare.")
    st.stop()
rows = []
for name in chosen:
    try:
        report = ui.evaluate(ui.load_scenario(str(files[name])))
    except tc.TcocalcError as exc:
        ui.show_error(exc)
        continue
    rows.append({"scenario": name, **report.metrics})
frame = pd.DataFrame(rows)
metric = st.selectbox("Metric", list(tc.METRIC_UNITS), index=list(tc.METRIC_UNITS).index("usd_per_mtok_trained"),
                      key="compare_metric")
if frame.empty:
    st.stop()
fig = compare_figure(frame, metric, tc.METRIC_UNITS[metric][0])
# A value a scenario does not have (Tinker does not offer its model) has no bar: say so where the bar would be.
missing = list(frame.loc[frame[metric].isna(), "scenario"])
for name in missing:
    fig.add_annotation(x=name, y=0, yref="y", text="not offered", showarrow=False, yanchor="bottom",
                       font=dict(color="gray"))
st.plotly_chart(fig, key="compare_chart")
if missing:
    st.caption(f"{metric}: not offered for {', '.join(missing)}, so no bar is drawn and no number is made up.")
st.dataframe(frame.set_index("scenario").T, key="compare_table")
st.download_button("Download comparison (CSV)", to_csv_text(frame), "compare.csv", "text/csv", key="dl_compare")
