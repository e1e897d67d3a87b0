"""Hardware: the accelerator table with sources, and the roofline (Hopper vs Blackwell)."""

from __future__ import annotations

import pandas as pd
import streamlit as st

import tcocalc as tc
from tcocalc.app import shared as ui
from tcocalc.figures import roofline_figure
from tcocalc.reports import display_table, to_csv_text

st.title("Hardware")
st.caption("Datasheet figures, dense (no sparsity), each with its source and date. A precision a chip lacks "
           "is empty, never zero.")
table = ui.hardware_table()
with_sources = st.toggle("Show sources and dates", key="sources", value=False)
shown = table if with_sources else table[[c for c in table.columns if not c.endswith((" source", " date"))]]
st.dataframe(display_table(shown, exact=True), hide_index=True)
st.download_button("Download accelerators (CSV)", to_csv_text(table), "hardware.csv", "text/csv", key="dl_hw")

st.subheader("Roofline")
names = list(table["name"])
c1, c2, c3 = st.columns(3)
chosen = c1.multiselect("Accelerators", names, default=["H200-SXM", "B200"], key="roof_hw")
precision = c2.selectbox("Precision", ["bf16", "fp8", "fp4"], index=1, key="roof_precision")
model = c3.selectbox("Model", ui.model_names(), index=ui.model_names().index("Qwen3-32B"), key="roof_model")
if not chosen:
    st.info("Pick at least one accelerator.")
    st.stop()
ridge = tc.ridge_table(chosen)
ridge = ridge[ridge["precision"] == precision]
if ridge.empty:
    st.warning(f"None of the chosen accelerators has {precision} tensor cores.")
    st.stop()
points = []
for name in ridge["accelerator"]:
    try:
        points.append(tc.operating_points(model, name, precision=precision))
    except tc.TcocalcError as exc:
        st.warning(f"{name}: {exc}")
pts = pd.concat(points) if points else None
st.plotly_chart(roofline_figure(ridge, pts), key="roofline")
st.caption("Below its ridge point (where the roof bends) a step is memory-bound: decode sits left of it, "
           "prefill and training right. Points are the calibrated model's attained FLOP/s per GPU.")
st.dataframe(display_table(ridge), hide_index=True)
if pts is not None:
    st.dataframe(display_table(pts), hide_index=True)
