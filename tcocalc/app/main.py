"""tcocalc planner: the router. The pages are the modules next to this one; the library does every calculation.

Started by ``tcocalc app`` (an installed wheel) or ``streamlit run app.py`` (a checkout's thin shim, which runs
this file). Pages are given by absolute path, so either way finds them.
"""

from pathlib import Path

import streamlit as st

HERE = Path(__file__).resolve().parent

st.set_page_config(page_title="tcocalc: RL post-training planner", layout="wide")
pages = [
    st.Page(HERE / "plan.py", title="Plan", icon=":material/insights:", default=True),
    st.Page(HERE / "hardware.py", title="Hardware", icon=":material/memory:"),
    st.Page(HERE / "cost.py", title="Cost", icon=":material/payments:"),
    st.Page(HERE / "compare.py", title="Compare", icon=":material/compare:"),
    st.Page(HERE / "size.py", title="Size", icon=":material/straighten:"),
    st.Page(HERE / "validation.py", title="Validation", icon=":material/fact_check:"),
]
st.navigation(pages).run()
