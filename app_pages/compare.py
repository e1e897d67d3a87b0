"""Compare: several scenarios side by side."""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import _shared as ui  # noqa: E402
import pandas as pd  # noqa: E402
import streamlit as st  # noqa: E402

import tcocalc as tc  # noqa: E402
from tcocalc.figures import compare_figure  # noqa: E402
from tcocalc.reports import to_csv_text  # noqa: E402

st.title("Compare scenarios")
files = ui.scenario_files()
chosen = st.multiselect("Scenarios", list(files), default=list(files)[:3], key="compare_set")
if not chosen:
    st.info("Pick one or more scenarios to compare.")
    st.stop()
rows = []
for name in chosen:
    try:
        metrics, _, _ = ui.evaluate_text(ui.scenario_text(str(files[name])))
    except tc.TcocalcError as exc:
        ui.show_error(exc)
        continue
    rows.append({"scenario": name, **metrics})
frame = pd.DataFrame(rows)
metric = st.selectbox("Metric", list(tc.METRIC_UNITS), index=list(tc.METRIC_UNITS).index("usd_per_mtok_trained"),
                      key="compare_metric")
if frame.empty:
    st.stop()
st.plotly_chart(compare_figure(frame, metric, tc.METRIC_UNITS[metric][0]), key="compare_chart")
st.dataframe(frame.set_index("scenario").T, key="compare_table")
st.download_button("Download comparison (CSV)", to_csv_text(frame), "compare.csv", "text/csv", key="dl_compare")
