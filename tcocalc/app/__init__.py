"""The planner app (Streamlit), shipped inside the package: ``tcocalc app`` starts it, as does
``streamlit run app.py`` from a checkout. ``main`` routes to one module per page (plan, hardware, cost,
compare, size, validation); ``shared`` holds the pages' cached library calls. The library never imports this
subpackage (it needs Streamlit); the pages use only tcocalc's public names, tcocalc.figures and tcocalc.reports.
"""

__all__ = ["shared"]
