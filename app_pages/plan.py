"""Plan: pick or build a scenario, see the split, throughput, idle, staleness and cost, and fix the split."""

from __future__ import annotations

import streamlit as st

import tcocalc as tc
from app_pages import _shared as ui
from tcocalc.figures import split_sweep_figure, timeline_figure
from tcocalc.reports import metrics_table, sweep_table, to_csv_text

st.title("Plan an RL run")
st.caption("Choose a published scenario or your own TOML, change the split and the workload, and read what "
           "follows. Every number is per the contract's units; hover the help icons for definitions.")

files = ui.scenario_files()
left, right = st.columns([2, 1])
choice = left.selectbox("Scenario", list(files), key="scenario_file",
                        help="scenarios/*.toml; each file documents its assumptions")
upload = right.file_uploader("…or upload a scenario TOML", type=["toml"], key="upload",
                             help=f"at most {tc.MAX_SCENARIO_BYTES:,} bytes")

# The TOML is parsed once per rerun: the library checks size, syntax and every field.
text, source = ui.scenario_text(str(files[choice])), choice
if upload is not None:
    source = upload.name
    try:
        text = upload.getvalue().decode("utf-8")
    except UnicodeDecodeError as exc:
        st.error(f"{upload.name} is not UTF-8 text: {exc}")
        st.stop()
try:
    scn0 = tc.loads_scenario(text, source=source)
except tc.TcocalcError as exc:
    ui.show_error(exc)
    st.stop()

# Widgets start from the chosen scenario; switching scenario resets them, and so does coming back from another
# page (Streamlit drops the state of widgets a page did not draw).
start = {
    "model": scn0.model.name, "trainer_hw": scn0.trainer.hardware, "trainer_gpus": scn0.trainer.gpus,
    "generator_hw": scn0.generator.hardware, "generator_gpus": scn0.generator.gpus,
    "generator_precision": scn0.generator.precision, "mode": scn0.orchestration.mode,
    "max_staleness": float(scn0.orchestration.max_staleness), "prompts": scn0.workload.prompts_per_step,
    "group": scn0.workload.group_size, "prompt_tokens": float(scn0.workload.prompt_tokens),
    "resp_mean": float(scn0.workload.response_tokens_mean), "turns": scn0.workload.turns,
    "tool_s": float(scn0.sandbox.tool_call_s), "usd_gpu_h": float(scn0.economics.usd_per_gpu_hour),
}
if st.session_state.get("_loaded") != source or any(key not in st.session_state for key in start):
    st.session_state["_loaded"] = source
    st.session_state.update(start)

hw_names = list(ui.hardware_table()["name"])
models = ui.model_names()
with st.expander("Cluster and workload", expanded=True):
    c1, c2, c3, c4 = st.columns(4)
    if scn0.model.config is None:
        c1.selectbox("Model", models if scn0.model.name in models else [scn0.model.name, *models], key="model")
    else:
        c1.text_input("Model (from [model.config])", key="model", disabled=True)
    c2.selectbox("Trainer hardware", hw_names if scn0.trainer.hardware in hw_names else
                 [scn0.trainer.hardware, *hw_names], key="trainer_hw")
    c3.number_input("Trainer GPUs", min_value=1, max_value=100_000, step=8, key="trainer_gpus")
    c4.selectbox("Mode", tc.Scenario.choices("orchestration.mode"), key="mode",
                 help="colocated: one pool alternates; sync: two pools alternate; one_step_off: generator one "
                      "step ahead; async: bounded staleness; inflight: async with in-flight weight updates")
    c1, c2, c3, c4 = st.columns(4)
    c1.selectbox("Generator hardware", hw_names if scn0.generator.hardware in hw_names else
                 [scn0.generator.hardware, *hw_names], key="generator_hw")
    c2.number_input("Generator GPUs", min_value=1, max_value=100_000, step=8, key="generator_gpus",
                    help="colocated: ignored (like the generator hardware), the trainer's pool generates")
    c3.selectbox("Generator precision", tc.Scenario.choices("generator.precision"), key="generator_precision")
    c4.number_input("Max staleness [steps]", min_value=0.0, max_value=1000.0, step=0.5, key="max_staleness",
                    help="async/inflight: how many policy versions a trained sample may lag")
    c1, c2, c3, c4 = st.columns(4)
    c1.number_input("Prompts per step", min_value=1, max_value=1_000_000, key="prompts")
    c2.number_input("Group size (samples per prompt)", min_value=1, max_value=10_000, key="group")
    c3.number_input("Prompt [tokens]", min_value=1.0, max_value=1e7, step=100.0, key="prompt_tokens")
    c4.number_input("Mean response [tokens]", min_value=1.0, max_value=1e7, step=500.0, key="resp_mean",
                    help="model tokens per trajectory (all turns), before the cap")
    c1, c2, c3, c4 = st.columns(4)
    c1.number_input("Turns per trajectory", min_value=1, max_value=10_000, key="turns",
                    help="tool calls = turns - 1")
    c2.number_input("Tool call [s]", min_value=0.0, max_value=1e5, step=1.0, key="tool_s")
    c3.number_input("GPU cost [USD/GPU-h]", min_value=0.01, max_value=1e4, step=0.1, key="usd_gpu_h",
                    help="all-in cost per GPU-hour; the Cost page derives one from capex and opex")
    solve = c4.toggle("Find the best split", key="solve", value=False)

# The scenario the page evaluates: the chosen one with the widgets' values. The library keeps its rules (the
# response distribution keeps its shape; a colocated run has one pool) and refuses bad combinations.
ss = st.session_state
try:
    scn = (scn0.with_values({
        "model.name": ss["model"], "generator.precision": ss["generator_precision"],
        "orchestration.max_staleness": float(ss["max_staleness"]), "workload.prompts_per_step": int(ss["prompts"]),
        "workload.group_size": int(ss["group"]), "workload.prompt_tokens": float(ss["prompt_tokens"]),
        "workload.turns": int(ss["turns"]), "sandbox.tool_call_s": float(ss["tool_s"]),
        "economics.usd_per_gpu_hour": float(ss["usd_gpu_h"])})
        .with_response_mean(float(ss["resp_mean"]))
        .with_cluster(mode=ss["mode"], trainer_hardware=ss["trainer_hw"], trainer_gpus=int(ss["trainer_gpus"]),
                      generator_hardware=ss["generator_hw"], generator_gpus=int(ss["generator_gpus"])))
    with st.spinner("Solving the split…" if solve else "Evaluating…"):
        report = ui.solve(scn, "usd_per_useful_sample") if solve else ui.evaluate(scn)
except (tc.TcocalcError, ValueError) as exc:
    ui.show_error(exc)
    st.stop()

m = report.metrics
st.subheader(f"Split {m['trainer_gpus']:.0f} trainer : {m['generator_gpus']:.0f} generator GPUs"
             + (" (solved)" if solve else ""))
k = st.columns(4)
k[0].metric("Useful samples/s", ui.fmt(m["useful_samples_per_s"], "sample/s"),
            help="trajectories with non-zero advantage reaching the trainer")
k[1].metric("Trainer idle", f"{m['trainer_idle_fraction']:.0%}", help="share of wall time the trainer waits")
k[2].metric("Trainer MFU (wall / busy)", f"{m['trainer_mfu']:.1%} / {m['trainer_mfu_busy']:.1%}")
k[3].metric("Mean staleness", ui.fmt(m["mean_staleness_steps"], "steps"),
            help=f"max {m['max_staleness_steps']:.2g}, token-weighted {m['token_staleness_steps']:.2g}")
k = st.columns(4)
k[0].metric("Cost per M trained tokens", ui.fmt(m["usd_per_mtok_trained"], "USD"))
ratio = m["cost_ratio_vs_tinker"]
k[1].metric("vs Tinker list price", "not offered" if ratio is None else f"{ratio:.2f}x",
            help="our cost per trained token over Tinker's for the same token mix")
k[2].metric("Run cost", ui.fmt(m["run_usd"], "USD"), help=f"{scn.workload.steps} steps")
k[3].metric("Run duration", ui.fmt(m["run_hours"], "h"))
for line in report.advice:
    st.info(line)

with st.expander("All metrics", expanded=False):
    frame = metrics_table(report)
    st.dataframe(frame, hide_index=True)
    st.download_button("Download metrics (CSV)", to_csv_text(frame), "metrics.csv", "text/csv", key="dl_metrics")

if report.sweep is not None:
    st.subheader("Split sweep")
    st.plotly_chart(split_sweep_figure(report.sweep), key="sweep_chart")
    st.download_button("Download sweep (CSV)", to_csv_text(sweep_table(report.sweep)), "sweep.csv", "text/csv",
                       key="dl_sweep")
else:
    st.caption("Turn on *Find the best split* to see every trainer/generator split and the balance point.")

phases = report.phases
if phases is not None and len(phases) > 1:
    st.subheader("Phases")
    cols = [c for c in ("phase", "start_step", "steps", "step_time_s", "trainer_idle_fraction",
                        "useful_samples_per_s", "wants_split") if c in phases.columns]
    st.dataframe(phases[cols], hide_index=True)

st.subheader("Step timeline (simulated)")
if st.toggle("Simulate 12 steps", key="simulate", value=False,
             help="a seeded discrete-event run of the same scenario (a few seconds)"):
    try:
        with st.spinner("Simulating…"):
            sim = ui.simulate(scn, 12, 0)
        sim_metrics, timeline = sim.metrics, sim.details["timeline"]
        st.plotly_chart(timeline_figure(timeline), key="timeline_chart")
        st.caption(f"Simulated: {sim_metrics['useful_samples_per_s']:.3g} useful samples/s, trainer idle "
                   f"{sim_metrics['trainer_idle_fraction']:.0%} (analytical {m['useful_samples_per_s']:.3g}, "
                   f"{m['trainer_idle_fraction']:.0%}).")
        st.download_button("Download timeline (CSV)", to_csv_text(timeline), "timeline.csv", "text/csv",
                           key="dl_timeline")
    except (tc.TcocalcError, ValueError) as exc:
        ui.show_error(exc)

st.download_button("Download this scenario (TOML)", scn.to_toml(), f"{scn.name}.toml", "application/toml",
                   key="dl_toml")
