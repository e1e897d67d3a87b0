"""tcocalc planner (placeholder until the app issue): the accelerator and model catalogs.

Start with ``streamlit run app.py``. The page only renders what the library returns.
"""

import streamlit as st

import tcocalc as tc

st.set_page_config(page_title="tcocalc", layout="wide")
st.title("tcocalc: RL post-training planner")
st.caption("The planner pages (split solver, cost, compare) arrive with later releases. "
           "For now: the sourced catalogs every estimate will stand on.")


@st.cache_data
def _tables():
    return tc.hardware_table(), tc.model_table()


hw, models = _tables()
st.subheader("Accelerators (dense peaks, per GPU)")
st.dataframe(hw, hide_index=True)
st.download_button("Download accelerators as CSV", hw.to_csv(index=False), "hardware.csv", "text/csv")
st.subheader("Models (derived from config.json)")
st.dataframe(models, hide_index=True)
st.download_button("Download models as CSV", models.to_csv(index=False), "models.csv", "text/csv")
