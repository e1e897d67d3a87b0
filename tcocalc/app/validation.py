"""Validation: predicted vs published for every validation case, so users see how far to trust the model."""

from __future__ import annotations

import streamlit as st

import tcocalc as tc
from tcocalc.figures import rl_validation_figure, speedup_figure, update_length_figure, validation_figure
from tcocalc.reports import display_table, error_text, to_csv_text


@st.cache_data(show_spinner=False)
def _table():
    return tc.validation_table()


def _kpis(*pairs: tuple[str, str]) -> None:
    """One row of headline figures: (label, value text) each."""
    for col, (label, value) in zip(st.columns(len(pairs)), pairs, strict=True):
        col.metric(label, value)


def _misses(table, heading: str | None = None) -> None:
    """Each known miss of a validation table with its error and cause, under ``heading`` when there is one."""
    misses = table[table["known_miss"] != ""]
    if misses.empty:
        return
    if heading:
        st.subheader(heading)
    for _, r in misses.iterrows():
        st.markdown(f"- **{r['id']}** ({error_text(r['error [%]'])}): {r['known_miss']}")


st.title("Validation")
st.caption("Published throughput and latency measurements (TensorRT-LLM, Megatron-Bridge, Megatron-LM, "
           "aiconfigurator, DeepSeek) against our predictions. Known misses are kept and explained. The Hopper, "
           "Blackwell and Ampere rows also fit their generation's few efficiency factors (data/calibration.toml), "
           "so this table is partly in-sample.")
with st.spinner("Running the validation cases…"):
    table = _table()
err = table["error [%]"].abs()
_kpis(("Cases", f"{len(table)}"), ("Median |error|", f"{err.median():.1f} %"),
      ("Within tolerance", f"{int(table['within'].sum())} of {len(table)}"))
st.plotly_chart(validation_figure(table), key="validation_chart")
st.dataframe(display_table(table), hide_index=True)
st.download_button("Download validation (CSV)", to_csv_text(table), "validation.csv", "text/csv", key="dl_val")
_misses(table, "Known misses")


@st.cache_data(show_spinner=False)
def _long_output():
    return tc.long_output_table()


st.subheader("Long outputs: TensorRT-LLM's published throughput rows")
st.caption("131 rows from four versions of TensorRT-LLM's performance overview (1,000 to 32,768 output tokens), "
           "each at its published layout; rows on hardware outside the catalog are kept and marked. The 18 RTX PRO "
           "6000 rows also fit that card's two serving factors (its only public measurements), so for them this "
           "is a fit, not a check.")
lo = _long_output()
lo_err = lo["error [%]"].dropna().abs()
_kpis(("Rows modelled", f"{len(lo_err)} of {len(lo)}"), ("Median |error|", f"{lo_err.median():.1f} %"),
      ("Within ±25%", f"{100 * (lo_err <= 25).mean():.0f} %"))
st.dataframe(display_table(lo), hide_index=True)
st.download_button("Download long-output validation (CSV)", to_csv_text(lo), "long_output_validation.csv",
                   "text/csv", key="dl_lo")


@st.cache_data(show_spinner=False)
def _groups():
    return tc.validate()


st.header("RL model, judged out of sample")
st.caption("Every published RL figure the project carries, in groups (`tcocalc validate --groups`, "
           "docs/validation.md): NeMo RL's tables and verl's fully-async study are in-sample (the RL mechanisms "
           "were developed on them); other frameworks' runs (verl recipes, AReaL, checkpoint-engine, real verl logs) "
           "are the development set, with the shipped constants and again with every constant fitted on the row's "
           "own framework refitted without it (leave one framework out); stages compare each published stage time "
           "on its own. The typical error a report states is the leave-one-framework-out error of its regime.")
with st.spinner("Judging the RL model in groups…"):
    groups = _groups()
by = groups.groups.set_index("group")
_kpis(*((f"{label} median |error|", f"{by.loc[name, 'median |error| [%]']:.1f} %")
        for label, name in (("Other frameworks", "other frameworks (development set)"),
                            ("Leave-one-framework-out", "leave-one-framework-out"), ("Stages", "stages"))))
st.dataframe(display_table(groups.groups.drop(columns=["within share"])), hide_index=True)
st.download_button("Download the groups (CSV)", to_csv_text(groups.groups), "rl_groups.csv", "text/csv",
                   key="dl_rl_groups")
st.subheader("Out-of-sample step-time error by regime (what reports state)")
st.caption("A regime not listed has no out-of-sample evidence; its reports say so instead of borrowing a figure.")
regimes = groups.regimes.assign(median_abs_error=100 * groups.regimes["median_abs_error"],
                                within_25pct=100 * groups.regimes["within_25pct"])
st.dataframe(display_table(regimes.rename(columns={"median_abs_error": "median |error| [%]",
                                                   "within_25pct": "within ±25% [%]", "ids": "runs"})),
             hide_index=True)
_HOW = {  # what the newer tables measure, in a line each (docs/validation.md has the whole reading)
    "rl_pass_pairs.csv": "Each pass's cost per trainer GPU and sample, first run over second. A forward-only pass "
                         "reduces no gradients and steps no optimizer, so a difference both passes share is per "
                         "token (tokens per sample, or each token's speed), not the update losing to scale.",
    "rl_update_lengths.csv": "Runs whose response lengths are assumed: the mean and p99 response scaled until the "
                             "model's update equals the published one, then the other stages compared. No constant "
                             "is fitted; the update is matched, not judged.",
    "rl_update_length_speedups.csv": "Speed-ups whose two runs are both such runs, each at its own update's lengths.",
}
for title, frame, name in (("Other frameworks (development set), shipped constants", groups.frameworks,
                            "rl_development_set.csv"),
                           ("Leave one framework out", groups.lofo, "rl_leave_one_framework_out.csv"),
                           ("Stages", groups.stages, "rl_stages.csv"),
                           ("Pass pairs: two published runs of one recipe, each pass per GPU and sample",
                            groups.passes, "rl_pass_pairs.csv"),
                           ("Stages at the response lengths each run's own update implies",
                            groups.update_lengths, "rl_update_lengths.csv"),
                           ("Speed-ups with each run at its own update's response lengths", groups.update_speedups,
                            "rl_update_length_speedups.csv"),
                           ("verl's fully-async document: each run's mean step by 100-step window", groups.windows,
                            "rl_windows.csv")):
    with st.expander(title):
        if name in _HOW:
            st.caption(_HOW[name])
        if name == "rl_update_lengths.csv" and len(frame):
            st.plotly_chart(update_length_figure(frame), key="update_length_chart")
        st.dataframe(display_table(frame.drop(columns=["source"], errors="ignore")), hide_index=True)
        st.download_button("Download (CSV)", to_csv_text(frame), name, "text/csv", key=f"dl_{name}")

st.header("RL step times (in-sample: NeMo RL and verl's study)")
st.caption("NVIDIA NeMo RL's 52 published step times (v0.4-v0.6 recipes: on-policy colocated and 1- or 8-step "
           "off-policy) and verl's fully-async study, each rebuilt as a scenario from its recipe and evaluated. "
           "The RL mechanisms were developed on these tables, so they are in-sample (the groups above give the "
           "out-of-sample figures). Targets: median |error| at most 15%, at least 80% of NeMo RL rows within ±25%, "
           "every on-policy vs off-policy speed-up on the published side of 1.0.")
rl_table, pairs = groups.rl, groups.nemo_pairs  # the groups' own RL table and its pairs: evaluated once above
summary = tc.rl_validation_summary(rl_table, pairs)
_kpis(("NeMo RL median |error|", f"{summary['nemo_median_abs_error_pct']:.1f} %"),
      ("Within ±25%", f"{100 * summary['nemo_within_share']:.0f} % of {summary['nemo_rows']}"),
      ("Speed-up pairs on the right side", f"{summary['pairs_right_side']} of {summary['pairs']}"))
st.plotly_chart(rl_validation_figure(rl_table), key="rl_validation_chart")
st.dataframe(display_table(rl_table), hide_index=True)
st.download_button("Download RL validation (CSV)", to_csv_text(rl_table), "rl_validation.csv", "text/csv",
                   key="dl_rl_val")
st.subheader("On-policy vs off-policy: which mode wins")
st.plotly_chart(speedup_figure(pairs), key="speedup_chart")
st.dataframe(display_table(pairs), hide_index=True)
_misses(rl_table, "RL known misses")
st.subheader("Weight sync and refit timings")
st.caption("Published trainer-to-generator transfers (NeMo RL, miles, verl) and colocated refits beside the "
           "model; rows marked fit calibrated a constant, the others only check it.")
refit = tc.rl_refit_table()
st.dataframe(display_table(refit), hide_index=True)
_misses(refit)
