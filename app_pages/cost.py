"""Cost: $/GPU-hour from capex and opex, build vs rent vs Tinker, and what moves $/Mtok most."""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import _shared as ui  # noqa: E402
import streamlit as st  # noqa: E402

import tcocalc as tc  # noqa: E402
from tcocalc.figures import tornado_figure, waterfall_figure  # noqa: E402
from tcocalc.reports import cost_table, to_csv_text  # noqa: E402

st.title("Cost")
st.caption("Ownership cost per GPU-hour (capex recovered as an annuity, plus power, colocation and "
           "maintenance), then the same RL run owned, rented and on Tinker.")

HW = ["H200", "H100", "B200", "GB200", "GB300"]
hw = st.selectbox("Accelerator", HW, key="cost_hw")
defaults = tc.default_cost_inputs(hw)
c1, c2, c3, c4 = st.columns(4)
price = c1.number_input("Server price [USD]", min_value=1.0, value=float(defaults.server_price_usd), step=10_000.0,
                        key="server_price")
years = c2.number_input("Depreciation [years]", min_value=0.5, max_value=20.0, value=float(defaults.depreciation_years),
                        key="years")
rate = c3.number_input("Cost of capital [1/yr]", min_value=0.0, max_value=0.5, value=float(defaults.cost_of_capital),
                       step=0.01, key="rate")
kwh = c4.number_input("Electricity [USD/kWh]", min_value=0.0, max_value=2.0,
                      value=float(defaults.electricity_usd_per_kwh), step=0.01, key="kwh")
try:
    inputs = tc.default_cost_inputs(hw, server_price_usd=price, depreciation_years=years, cost_of_capital=rate,
                                    electricity_usd_per_kwh=kwh)
    b = tc.gpu_hour_cost(inputs)
except tc.TcocalcError as exc:
    ui.show_error(exc)
    st.stop()
k = st.columns(3)
k[0].metric("Ownership cost", f"{b.usd_per_gpu_hour:.3f} USD/GPU-h")
k[1].metric("Capex share", f"{b.capex_share:.1%}")
k[2].metric("Per 8-GPU server-year", ui.fmt(b.usd_per_gpu_hour * 8 * 8760, "USD"))
st.plotly_chart(waterfall_figure(b.to_frame()), key="waterfall")
frame = cost_table(b)
st.dataframe(frame, hide_index=True)
st.download_button("Download cost breakdown (CSV)", to_csv_text(frame), "cost_breakdown.csv", "text/csv",
                   key="dl_cost")
with st.expander("Where each default comes from"):
    st.dataframe([{"input": k2, "source": v} for k2, v in inputs.sources.items()], hide_index=True)

st.subheader("Build vs rent vs Tinker")
files = ui.scenario_files()
name = st.selectbox("Scenario", list(files), key="cost_scenario")
scn = tc.load_scenario(files[name])
with st.spinner("Pricing the run…"):
    try:
        brt = tc.build_rent_tinker(scn)
        sens = tc.sensitivity(scn)
    except tc.TcocalcError as exc:
        ui.show_error(exc)
        st.stop()
st.dataframe(brt, hide_index=True)
st.download_button("Download build/rent/Tinker (CSV)", to_csv_text(brt), "build_rent_tinker.csv", "text/csv",
                   key="dl_brt")
if "Tinker" not in set(brt["option"]):
    st.caption(f"Tinker does not offer {scn.model.name}: no price is made up for it.")
st.subheader("What moves the cost most (±20%)")
st.plotly_chart(tornado_figure(sens), key="tornado")
st.download_button("Download sensitivity (CSV)", to_csv_text(sens), "sensitivity.csv", "text/csv", key="dl_sens")
