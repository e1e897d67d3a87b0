"""tcocalc planner: the router. Pages live in app_pages/; the library (tcocalc/) does every calculation.

Start with ``streamlit run app.py``.
"""

import streamlit as st

st.set_page_config(page_title="tcocalc: RL post-training planner", layout="wide")
pages = [
    st.Page("app_pages/plan.py", title="Plan", icon=":material/insights:", default=True),
    st.Page("app_pages/hardware.py", title="Hardware", icon=":material/memory:"),
    st.Page("app_pages/cost.py", title="Cost", icon=":material/payments:"),
    st.Page("app_pages/compare.py", title="Compare", icon=":material/compare:"),
    st.Page("app_pages/size.py", title="Size", icon=":material/straighten:"),
    st.Page("app_pages/validation.py", title="Validation", icon=":material/fact_check:"),
]
st.navigation(pages).run()
