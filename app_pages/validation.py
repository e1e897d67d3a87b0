"""Validation: predicted vs published for every validation case, so users see how far to trust the model."""

from __future__ import annotations

import streamlit as st

import tcocalc as tc
from tcocalc.figures import validation_figure
from tcocalc.reports import to_csv_text


@st.cache_data(show_spinner=False)
def _table():
    return tc.validation_table()


st.title("Validation")
st.caption("Published throughput and latency measurements (TensorRT-LLM, Megatron-Bridge, aiconfigurator, "
           "DeepSeek) against our predictions. Known misses are kept and explained.")
with st.spinner("Running the validation cases…"):
    table = _table()
err = table["error [%]"].abs()
k = st.columns(3)
k[0].metric("Cases", f"{len(table)}")
k[1].metric("Median |error|", f"{err.median():.1f} %")
k[2].metric("Within tolerance", f"{int(table['within'].sum())} of {len(table)}")
st.plotly_chart(validation_figure(table), key="validation_chart")
st.dataframe(table, hide_index=True)
st.download_button("Download validation (CSV)", to_csv_text(table), "validation.csv", "text/csv", key="dl_val")
misses = table[table["known_miss"] != ""]
if not misses.empty:
    st.subheader("Known misses")
    for _, r in misses.iterrows():
        st.markdown(f"- **{r['id']}** ({r['error [%]']:+.0f}%): {r['known_miss']}")
