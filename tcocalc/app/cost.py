"""Cost: $/GPU-hour from capex and opex, build vs rent vs Tinker, and what moves $/Mtok most."""

from __future__ import annotations

import streamlit as st

import tcocalc as tc
from tcocalc.app import shared as ui
from tcocalc.figures import tinker_gap_figure, tornado_figure, waterfall_figure
from tcocalc.reports import (
    cost_table,
    display_table,
    gap_table,
    options_table,
    sensitivity_table,
    to_csv_text,
)

st.title("Cost")
st.caption("Ownership cost per GPU-hour (capex recovered as an annuity, plus power, colocation and "
           "maintenance), then the same RL run owned, rented and on Tinker.")

hw = st.selectbox("Accelerator", tc.cost_default_hardware(), key="cost_hw",
                  help="accelerators with documented default cost inputs (data/cost_defaults.toml)")
# The inputs start from the accelerator's documented defaults; switching accelerator resets them, and so does
# coming back from another page (Streamlit drops the state of widgets a page did not draw).
defaults = tc.default_cost_inputs(hw)
if st.session_state.get("_cost_loaded") != hw or "server_price" not in st.session_state:
    st.session_state["_cost_loaded"] = hw
    st.session_state.update(server_price=float(defaults.server_price_usd), years=float(defaults.depreciation_years),
                            rate=float(defaults.cost_of_capital), kwh=float(defaults.electricity_usd_per_kwh))
# Errors name an input by the label it has on this page, not by its CostInputs field.
LABELS = {"server_price_usd": "Server price [USD]", "depreciation_years": "Depreciation [years]",
          "cost_of_capital": "Cost of capital [1/yr]", "electricity_usd_per_kwh": "Electricity [USD/kWh]"}
c1, c2, c3, c4 = st.columns(4)
price = c1.number_input(LABELS["server_price_usd"], min_value=1.0, step=10_000.0, key="server_price", format="%.0f",
                        help=f"one server (or rack) of {defaults.gpus_per_server} GPUs")
years = c2.number_input(LABELS["depreciation_years"], min_value=0.5, max_value=20.0, key="years", format="%g")
rate = c3.number_input(LABELS["cost_of_capital"], min_value=0.0, max_value=0.5, step=0.01, key="rate", format="%g")
kwh = c4.number_input(LABELS["electricity_usd_per_kwh"], min_value=0.0, max_value=2.0, step=0.01, key="kwh",
                      format="%g")
try:
    inputs = tc.default_cost_inputs(hw, server_price_usd=price, depreciation_years=years, cost_of_capital=rate,
                                    electricity_usd_per_kwh=kwh)
    b = tc.gpu_hour_cost(inputs)
except tc.TcocalcError as exc:
    ui.show_error(exc, LABELS)
    st.stop()
k = st.columns(3)
k[0].metric("Ownership cost", f"{b.usd_per_gpu_hour:.3f} USD/GPU-h")
k[1].metric("Capex share", f"{b.capex_share:.1%}")
k[2].metric(f"Per server-year ({b.inputs.gpus_per_server} GPUs)", ui.fmt(b.usd_per_server_year, "USD"),
            help="ownership cost of one server (or rack) per calendar year")
st.plotly_chart(waterfall_figure(b.to_frame()), key="waterfall")
frame = cost_table(b)
st.dataframe(display_table(b.to_frame(), {"share": "1"}, {"usd_per_gpu_hour": "cost"}), hide_index=True)
st.download_button("Download cost breakdown (CSV)", to_csv_text(frame), "cost_breakdown.csv", "text/csv",
                   key="dl_cost")
with st.expander("Where each default comes from"):
    fields = tc.CostInputs.model_fields  # each input by its description, not its field name
    st.dataframe([{"input": fields[k2].description if k2 in fields else k2, "source": v}
                  for k2, v in inputs.sources.items()], hide_index=True)

st.subheader("Build vs rent vs Tinker")
files = ui.scenario_files()
name = st.selectbox("Scenario", list(files), key="cost_scenario")
with st.spinner("Pricing the run…"):
    try:
        scn = ui.load_scenario(str(files[name]))
        brt = tc.build_rent_tinker(scn, ownership=inputs)
        sens = tc.sensitivity(scn)
        gap = tc.tinker_gap(scn)
    except tc.TcocalcError as exc:
        ui.show_error(exc, LABELS)
        st.stop()
st.dataframe(display_table(brt, labels={"usd_per_gpu_hour": "GPU price", "usd_per_mtok_trained":
                                       "per M trained tokens", "run_usd": "run cost"}), hide_index=True)
st.caption(ui.calibration_text(brt.attrs))  # whether the run's figures are calibrated (tc.calibration_of)
st.caption("The two Tinker prices are counted differently: this table's (our accounting) bills the run's token mix "
           "with its discarded rollouts; the waterfall below starts from the SemiAnalysis-style list price (prompt at "
           "prefill, response at sample + train, discarded rollouts not billed).")
st.download_button("Download build/rent/Tinker (CSV)", to_csv_text(options_table(brt)), "build_rent_tinker.csv",
                   "text/csv", key="dl_brt")
if "build (ownership cost)" not in set(brt["option"]):
    st.caption(f"The ownership cost above is for {inputs.hardware}; {scn.name} runs on {scn.trainer.hardware} "
               f"(trainer) and {scn.generator.hardware} (generator): choose its accelerator above to price it owned "
               "at those inputs.")
if "Tinker" not in set(brt["option"]):
    st.caption(f"Tinker does not offer {scn.model.name}: no price is made up for it.")
st.subheader("What moves the cost most (±20%)")
st.plotly_chart(tornado_figure(sens), key="tornado")
st.download_button("Download sensitivity (CSV)", to_csv_text(sensitivity_table(sens)), "sensitivity.csv", "text/csv",
                   key="dl_sens")

st.subheader("Where the gap to Tinker comes from")
st.caption("From Tinker's list price (discards not billed) to this run's cost per trained Mtoken: each bar is "
           "that cause switched off in the model (GPU-hour price own vs the SemiAnalysis-style rental price, "
           "multi-tenancy of the generator pool, idle, discarded rollouts, MFU, hardware generation on B200). "
           "What is left beside Tinker is its margin and what the model leaves out.")
if gap.attrs.get("note"):
    st.info(gap.attrs["note"])
st.plotly_chart(tinker_gap_figure(gap), key="tinker_gap")
gap_frame = gap_table(gap)
st.dataframe(display_table(gap, labels={"usd_per_mtok": "bar", "cumulative_usd_per_mtok": "running total"}),
             hide_index=True)
st.download_button("Download cost gap (CSV)", to_csv_text(gap_frame), "tinker_gap.csv", "text/csv", key="dl_gap")
