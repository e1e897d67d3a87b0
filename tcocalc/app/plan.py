"""Plan: pick or build a scenario, see the split, throughput, idle, staleness and cost, and fix the split.

The inputs live in the page's URL too (query parameters, rewritten on every change), so a reconnect after a
server restart, a reload or a shared link starts from them instead of from the file's values.
"""

from __future__ import annotations

import math

import streamlit as st

import tcocalc as tc
from tcocalc.app import shared as ui
from tcocalc.figures import split_sweep_figure, timeline_figure
from tcocalc.reports import (
    XLSX_MIME,
    display_table,
    metrics_table,
    phase_changes,
    pricing_text,
    readable_metrics,
    sandbox_start_tail_s,
    sweep_table,
    to_csv_text,
)

OBJECTIVE = "usd_per_useful_sample"
SIM_STEPS, SIM_SEED = 12, 0
MIN_SIM_STEPS = 5  # fewest steps the page simulates when 12 would take too long (a phase takes at least 5 too)
# Most events the page simulates (about 15 s on 2 cores; the shipped scenarios take at most 1.6 million at 12 steps):
# a run estimated above it simulates fewer steps (at least 5), or is not started and the page says what it would
# take (``tcocalc run FILE --simulate`` has no such bound). A comment, not a docstring: Streamlit's "magic" draws a
# bare string at the top of the page (audit N1).
SIM_MAX_EVENTS = 5_000_000
#: Numeric inputs: key -> (type, min, max), shared by the widgets and the check of the URL's values.
NUMBERS = {key: ui.number_limits(key) for key in ui.FIELDS}
TOGGLES = ("solve", "simulate")
SCENARIO_PARAM = "scenario"  # the URL parameter naming the scenario (a file's stem, or an uploaded file's name)
# Scenario fields the page edits -> the label of their widget: an error names what the planner sees, never a class
LABELS = {"model.name": "Model", "trainer.hardware": "Trainer hardware", "trainer.gpus": "Trainer GPUs",
          "orchestration.mode": "Mode", "generator.hardware": "Generator hardware",
          "generator.gpus": "Generator GPUs", "generator.precision": "Generator precision",
          "orchestration.max_staleness": "Max staleness [steps]", "workload.prompts_per_step": "Prompts per step",
          "workload.group_size": "Group size (samples per prompt)", "workload.prompt_tokens": "Prompt [tokens]",
          "workload.response_tokens_mean": "Mean response [tokens]", "workload.turns": "Turns per trajectory",
          "sandbox.tool_call_s": "Tool call [s]", "economics.usd_per_gpu_hour": "GPU cost [USD/GPU-h]",
          "orchestration.framework": "Framework preset", "generator.disaggregated": "Prefill/decode",
          "generator.prefill_gpus": "Prefill/decode", "trainer.multinode_nvlink": "NVLink between servers",
          "generator.multinode_nvlink": "NVLink between servers",
          "generator.speculative_tokens": "Draft tokens (speculative)", "generator.acceptance_rate": "Draft acceptance",
          "workload.steps": "Run length [rollout steps]", "sandbox.max_concurrency": "Sandboxes live at most",
          "sandbox.max_starting": "Sandboxes starting at once", "sandbox.failure_rate": "Sandbox start failures",
          "sandbox.startup_s": "Sandbox start-up [s]", "sandbox.max_executing": "Tool calls executing at most",
          "trainer.mfu_carry": "Measured MFU on other hardware", "trainer.recompute": "Activation recompute",
          "trainer.minibatch_balance": "Mini-batch balance"}
# Activation recompute the framework runs (trainer.recompute): the box's words -> the field's values (None: the
# lightest mode that fits, the model's search)
RECOMPUTE = {"the lightest that fits": None, "none": "none", "selective": "selective", "full": "full"}
# How a mini-batch's sequences fall on the trainer's data-parallel ranks (trainer.minibatch_balance): words -> values
MINIBATCH_BALANCE = {"balanced (equal shares)": "balanced", "random (waits for the fullest rank)": "random"}
# A measured trainer MFU on other hardware (trainer.mfu_carry): the box's words -> the field's values
MFU_CARRY = {"carry its ratio to the model": "ratio", "model on every chip": "model"}
# Phases' response lengths when the mean response is edited: scale with it (the file's rule) or keep their own
PHASE_RESPONSES = ("scale with the mean response", "keep the file's lengths")
#: The per-step times the calibration panel takes by hand (tc.calibrate's keys) and their labels.
MEASURED_TIMES = {"step_time_s": "Step [s]", "generation_s": "Generation [s]", "training_s": "Training [s]",
                  "logprob_s": "Log-prob passes [s]", "weight_sync_s": "Weight sync [s]",
                  "switching_s": "Switching [s]"}
CALIBRATION_FRAMEWORKS = ("verl", "nemo-rl", "slime", "areal", "prime-rl", "open-instruct", "trl")
SERVING = ("aggregated", "disaggregated")  # the Prefill/decode box: generator.disaggregated false / true
# The NVLink box: both pools' multinode_nvlink true / false; a file that sets them differently keeps its own
NVLINK = ("multi-node", "per server")
NVLINK_MIXED = "as in the file"


def nvlink_choice(scn) -> str:
    """The NVLink box's value for a scenario: both pools alike, or the file's own mix."""
    both = {scn.trainer.multinode_nvlink, scn.generator.multinode_nvlink}
    return NVLINK_MIXED if len(both) > 1 else NVLINK[0] if both == {True} else NVLINK[1]


def price_edit(scn, price: float, typed_for) -> dict:
    """The edit that sets the page's GPU price: ``economics.usd_per_gpu_hour`` for the hardware chosen when it was
    typed (``typed_for``: trainer and generator hardware; None: the hardware shown), for each pool without a price
    of its own (docs/scenario-schema.md, "Prices and measurements follow the hardware")."""
    hw = dict(zip(("trainer", "generator"), typed_for or (scn.trainer.hardware, scn.generator.hardware), strict=True))
    econ = scn.economics
    old = econ.priced_for.model_dump(exclude_none=True) if econ.priced_for is not None else {}
    priced = {side: (hw[side] if getattr(econ, f"{side}_usd_per_gpu_hour") is None else old.get(side))
              for side in ("trainer", "generator")}
    priced = {side: name for side, name in priced.items() if name and name != getattr(scn, side).hardware}
    return {"economics.usd_per_gpu_hour": price, "economics.priced_for": priced or None}


def keep_phase_lengths(scn, base):
    """``scn`` with each ``[[phases]]`` entry's responses as long as in ``base`` (the file), whatever the mean
    response: its ``response_scale`` times the file's mean over the edited one (audit N19)."""
    f = base.workload.response_tokens_mean / scn.workload.response_tokens_mean
    if not scn.phases or f == 1:
        return scn
    return scn.with_values({"phases": [{**p.model_dump(exclude_none=True), "response_scale": p.response_scale * f}
                                       for p in scn.phases]})


def price_in_use(scn) -> float:
    """The trainer pool's $/GPU-hour as the library prices ``scn`` (its own, or the chip's ownership cost after a
    swap): what the GPU-cost box shows when no price was typed."""
    try:
        price = float(tc.pool_pricing(scn)[0].usd_per_gpu_hour)
    except tc.TcocalcError:
        price = float(scn.economics.usd_per_gpu_hour)
    return round(price, PRICE_DIGITS)  # as the box shows it: 2.229, not 2.22900361949859


PRICE_DIGITS = 4  # decimals of a price the box shows; a price within half a unit of the last is the price in use


def follow_price() -> None:
    """A hardware box changed: the GPU-cost box shows the price typed for that hardware, else the price in use there
    (the file's own back on its hardware, the chip's ownership cost elsewhere); audit N6."""
    pair = (ss["trainer_hw"], ss["generator_hw"])
    typed = ss.setdefault("_typed_prices", {})
    if pair in typed:
        ss["usd_gpu_h"], ss["_price_for"] = typed[pair], pair
        return
    ss.pop("_price_for", None)
    try:
        moved = scn0.with_cluster(trainer_hardware=as_written(pair[0], scn0.trainer.hardware),
                                  generator_hardware=as_written(pair[1], scn0.generator.hardware))
        ss["usd_gpu_h"] = price_in_use(moved)
    except (tc.TcocalcError, ValueError):
        pass  # the page names the fault when it evaluates


def type_price() -> None:
    """The GPU-cost box was typed in: the price is for the hardware shown now."""
    pair = (ss["trainer_hw"], ss["generator_hw"])
    ss["_price_for"] = pair
    ss.setdefault("_typed_prices", {})[pair] = ss["usd_gpu_h"]


def canonical(name: str) -> str:
    """An accelerator's catalog name (``H100`` is ``H100-SXM``), or the name as written when the catalog lacks it."""
    try:
        return tc.hardware(name).name
    except (tc.TcocalcError, KeyError):
        return name


def as_written(chosen: str, written: str) -> str:
    """The file's own spelling when the box holds the same chip, so a scenario is not edited by a name alone."""
    return written if canonical(written) == chosen else chosen


def limits(key: str) -> dict:
    """A number input's bounds, and its starting value on a session's first run (see :func:`initial`)."""
    _, lo, hi = NUMBERS[key]
    return {"min_value": lo, "max_value": hi, **initial(key)}


def to_param(value) -> str:
    """A widget value as URL text; ints and floats round-trip exactly ("4000", "0.5"), toggles as "true"/"false"."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float):
        text = repr(value)
        return text[:-2] if text.endswith(".0") else text
    return str(value)


def from_params(params: dict[str, str], choices: dict[str, list]) -> tuple[dict, list[str]]:
    """The inputs the URL carries, checked as the widgets check them; and those that cannot be restored."""
    values, bad = {}, []
    for key, raw in params.items():
        if key == SCENARIO_PARAM:
            continue
        ok = False
        try:
            if key in NUMBERS:
                kind, lo, hi = NUMBERS[key]
                value = kind(raw)
                ok = math.isfinite(value) and lo <= value <= hi
            elif key in choices:
                value = canonical(raw) if key in ("trainer_hw", "generator_hw") else raw
                ok = value in choices[key]
            elif key in TOGGLES:
                value, ok = raw == "true", raw in ("true", "false")
        except ValueError:
            pass
        if ok:
            values[key] = value
        else:
            bad.append(f"{key}={raw}")
    return values, bad


st.title("Plan an RL run")
st.caption("Choose a published scenario or your own TOML, change the split and the workload, and read what "
           "follows. Each input and result names its unit; hover the help icons for definitions.")

files = ui.scenario_files()
ss = st.session_state
# A session's first run starts the widgets from its URL (a reload, a shared link, or a reconnect after a server
# restart, all new sessions) through their default values, never through st.session_state: after a reconnect
# the browser sends its widgets' values with the rerun request of the edit that reconnected it, and those must
# win over the URL (written before that edit), as a default loses to them where a session-state value would not.
first = "_loaded" not in ss
refill = ss.pop("_refill", None)  # a first run's inputs, but the solved split: its rerun kept no widget (see below)
if refill and "scenario_file" in refill:
    ss["scenario_file"] = refill.pop("scenario_file")
if "_link" not in ss:
    ss["_link"] = st.query_params.to_dict()
defaults: dict = {}  # a session's first run: the widgets' starting values, which the browser's own values override
if first and ss["_link"].get(SCENARIO_PARAM) in files:
    defaults["scenario_file"] = ss["_link"][SCENARIO_PARAM]


def initial(key: str) -> dict:
    """The keyword a widget starts from on a session's first run (``index=`` for a selectbox), else nothing."""
    if key not in defaults:
        return {}
    options = list(files) if key == "scenario_file" else choices.get(key)  # a selectbox's, else None
    return {"value": defaults[key]} if options is None else {"index": options.index(defaults[key])}


left, right = st.columns([2, 1])
upload = right.file_uploader("…or upload a scenario TOML", type=["toml"], key="upload",
                             help=f"at most {tc.MAX_SCENARIO_BYTES:,} bytes")
# An uploaded file wins over the scenario box, which is then disabled and says why.
choice = left.selectbox("Scenario", list(files), key="scenario_file", disabled=upload is not None,
                        **initial("scenario_file"),
                        help="scenarios/*.toml; each file documents its assumptions")
if upload is not None:
    st.info(f"The uploaded file {upload.name} is in use; remove it to use the scenario box.")

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
    ui.show_error(exc, {})  # a file's own field is named by its TOML path
    st.stop()

# Widgets start from the chosen scenario; switching scenario resets them, and so does coming back from another
# page (Streamlit drops the state of widgets a page did not draw). On a session's first run the URL's values
# (written below on every change) replace the file's: a reconnect or a reload keeps what the user had.
start = {
    "model": scn0.model.name, "trainer_hw": canonical(scn0.trainer.hardware), "trainer_gpus": scn0.trainer.gpus,
    "generator_hw": canonical(scn0.generator.hardware), "generator_gpus": scn0.generator.gpus,
    "generator_precision": scn0.generator.precision, "mode": scn0.orchestration.mode,
    "max_staleness": float(scn0.orchestration.max_staleness), "prompts": scn0.workload.prompts_per_step,
    "group": scn0.workload.group_size, "prompt_tokens": float(scn0.workload.prompt_tokens),
    "resp_mean": float(scn0.workload.response_tokens_mean), "turns": scn0.workload.turns,
    "tool_s": float(scn0.sandbox.tool_call_s), "usd_gpu_h": float(scn0.economics.usd_per_gpu_hour),
    "framework": scn0.orchestration.framework,
    "serving": SERVING[int(scn0.generator.disaggregated)],
    "nvlink": nvlink_choice(scn0),
    "draft_tokens": scn0.generator.speculative_tokens or 0,
    "acceptance": float(scn0.generator.acceptance_rate if scn0.generator.acceptance_rate is not None
                        else tc.DEEPSEEK_V3_MTP_ACCEPTANCE[0]),  # the box starts at the lower measured MTP acceptance
    "steps": scn0.workload.steps, "sb_live": scn0.sandbox.max_concurrency, "sb_starting": scn0.sandbox.max_starting,
    "sb_failure": float(scn0.sandbox.failure_rate), "sb_startup": float(scn0.sandbox.startup_s),
    "sb_exec": scn0.sandbox.max_executing,
    "mfu_carry": next(k for k, v in MFU_CARRY.items() if v == scn0.trainer.mfu_carry),
    "phase_responses": PHASE_RESPONSES[0],
    "recompute": next(k for k, v in RECOMPUTE.items() if v == scn0.trainer.recompute),
    "balance": next(k for k, v in MINIBATCH_BALANCE.items() if v == scn0.trainer.minibatch_balance),
}
hw_names = list(ui.hardware_table()["name"])
models = ui.model_names()
choices = {
    # one entry per chip: the catalog's name ("H100" is "H100-SXM"); a name the catalog lacks comes first
    "trainer_hw": hw_names if start["trainer_hw"] in hw_names else [start["trainer_hw"], *hw_names],
    "generator_hw": hw_names if start["generator_hw"] in hw_names else [start["generator_hw"], *hw_names],
    "mode": list(tc.Scenario.choices("orchestration.mode")),
    "generator_precision": list(tc.Scenario.choices("generator.precision")),
    "framework": list(tc.Scenario.choices("orchestration.framework")),
    "serving": list(SERVING),
    "nvlink": [*NVLINK, *([NVLINK_MIXED] if start["nvlink"] == NVLINK_MIXED else [])],
    "mfu_carry": list(MFU_CARRY), "phase_responses": list(PHASE_RESPONSES), "recompute": list(RECOMPUTE),
    "balance": list(MINIBATCH_BALANCE),
}
if scn0.model.config is None:  # a model given by its [model.config] is not chosen from the catalog
    choices["model"] = models if scn0.model.name in models else [scn0.model.name, *models]
link = ss["_link"]
linked = link.get(SCENARIO_PARAM, source)
if ss.get("_loaded") != source or any(key not in ss for key in start):
    values = dict(start)
    if link and linked == source:
        restored, bad = from_params(link, choices)
        values.update(restored)
        if "usd_gpu_h" not in restored and (values["trainer_hw"], values["generator_hw"]) != (
                start["trainer_hw"], start["generator_hw"]):  # a link that swaps the hardware: its price in use
            try:
                values["usd_gpu_h"] = price_in_use(scn0.with_cluster(
                    trainer_hardware=as_written(values["trainer_hw"], scn0.trainer.hardware),
                    generator_hardware=as_written(values["generator_hw"], scn0.generator.hardware)))
            except (tc.TcocalcError, ValueError):
                pass
        if bad:
            st.warning(f"These inputs in the page's URL could not be restored, so they start from {source}'s "
                       f"values: {', '.join(bad)}.")
        ss["_link"] = {}
    elif link and (not first or not linked.endswith(".toml")):
        if first and linked not in files:  # a shipped one the browser's scenario box switched from is no news
            st.warning(f"The page's URL names the scenario {linked!r}, which is not one of the shipped scenarios: "
                       f"its inputs are not restored.")
        ss["_link"] = {}
    if ss["_link"]:  # the URL's inputs are for an uploaded file that is not here (a reload, a server restart)
        values.update(from_params(link, choices)[0])  # the tab's inputs, as far as this file's boxes hold them
        ss["_waiting"] = dict(values)
    if first and (not link or linked == source or ss["_link"]):  # the browser's values (a reconnect) win
        defaults.update(values)
    else:  # another scenario: its values replace the widgets' (the browser's, after a reconnect, are the old one's)
        ss.update(values)
    ss["_loaded"] = source
    ss.pop("_price_for", None)  # a price typed for the previous scenario's hardware
    ss.pop("_typed_prices", None)
if not ss["_link"]:
    ss.pop("_waiting", None)
if refill:  # set before the widgets are drawn; a rerun of a first run keeps no widget state
    ss.update(refill)
if "_fill" in ss:  # Find the best split moved the split: the inputs take it (before their widgets are drawn)
    ss["_solved_from"] = ss.pop("_fill")  # (trainer GPUs, generator GPUs, the split before solving)
    ss["trainer_gpus"], ss["generator_gpus"] = ss["_solved_from"][:2]

with st.expander("Cluster and workload", expanded=True):
    c1, c2, c3, c4 = st.columns(4)
    if "model" in choices:
        c1.selectbox("Model", choices["model"], key="model", **initial("model"))
    else:
        c1.text_input("Model (from [model.config])", key="model", disabled=True, **initial("model"))
    c2.selectbox("Trainer hardware", choices["trainer_hw"], key="trainer_hw", **initial("trainer_hw"),
                 on_change=follow_price)
    c3.number_input("Trainer GPUs", step=8, key="trainer_gpus", **limits("trainer_gpus"))
    c4.selectbox("Mode", choices["mode"], key="mode", **initial("mode"),
                 help="colocated: one pool alternates; sync: two pools alternate; one_step_off: generator one "
                      "step ahead; async: bounded staleness; inflight: async with in-flight weight updates")
    c1, c2, c3, c4 = st.columns(4)
    c1.selectbox("Generator hardware", choices["generator_hw"], key="generator_hw", **initial("generator_hw"),
                 on_change=follow_price)
    c2.number_input("Generator GPUs", step=8, key="generator_gpus", **limits("generator_gpus"),
                    help="colocated: ignored (like the generator hardware), the trainer's pool generates")
    c3.selectbox("Generator precision", choices["generator_precision"], key="generator_precision",
                 **initial("generator_precision"))
    c4.number_input("Max staleness [steps]", step=0.5, key="max_staleness", format="%g", **limits("max_staleness"),
                    help="async/inflight: how many policy versions a trained sample may lag")
    c1, c2, c3, c4 = st.columns(4)
    c1.number_input("Prompts per step", key="prompts", **limits("prompts"))
    c2.number_input("Group size (samples per prompt)", key="group", **limits("group"))
    c3.number_input("Prompt [tokens]", step=100.0, key="prompt_tokens", format="%g", **limits("prompt_tokens"))
    c4.number_input("Mean response [tokens]", step=500.0, key="resp_mean", format="%g", **limits("resp_mean"),
                    help="model tokens per trajectory (all turns), before the cap")
    c1, c2, c3, c4 = st.columns(4)
    c1.number_input("Turns per trajectory", key="turns", **limits("turns"), help="tool calls = turns - 1")
    c2.number_input("Tool call [s]", step=1.0, key="tool_s", format="%g", **limits("tool_s"))
    c3.number_input("GPU cost [USD/GPU-h]", step=0.1, key="usd_gpu_h", format="%g", **limits("usd_gpu_h"),
                    on_change=type_price,
                    help="all-in cost per GPU-hour of the hardware it was set for (the file's, or the hardware "
                         "chosen when you type it); other hardware is priced at its ownership cost (data/"
                         "cost_defaults.toml). The Cost page derives one from capex and opex")
    solve = c4.toggle("Find the best split", key="solve", **initial("solve"))
    c1, c2, c3, c4 = st.columns(4)
    c4.number_input("Draft tokens (speculative)", key="draft_tokens", **limits("draft_tokens"),
                    help="speculative decoding: tokens a one-layer draft module (MTP, EAGLE) proposes per decode "
                         "step, verified in one pass; 0 = off (docs/rl-modeling.md §4.10)")
    c3.selectbox("NVLink between servers", choices["nvlink"], key="nvlink", **initial("nvlink"),
                 help="multi-node: an NVL72 rack's 4-GPU trays reach each other over NVLink (the job holds an IMEX "
                      "channel); per server: traffic between servers takes the scale-out network, as without "
                      "multi-node NVLink (docs/rl-modeling.md §3.7). Changes nothing where a server is the whole "
                      "NVLink domain (DGX H100, B200)")
    c2.selectbox("Prefill/decode", choices["serving"], key="serving", **initial("serving"),
                 help="disaggregated: the generator's GPUs split into a prefill pool and a decode pool joined by a "
                      "KV transfer, the split solved for each generator size (docs/rl-modeling.md §4.9)")
    c1.selectbox("Framework preset", choices["framework"], key="framework", **initial("framework"),
                 help="sets what differs between RL frameworks: CUDA graphs, colocated offload, log-prob and "
                      "reference passes, weight-sync transport and loading, async scheduling (data/frameworks.toml); "
                      "keys in the scenario file override it")
    c1, c2, c3, c4 = st.columns(4)
    c1.number_input("Draft acceptance", step=0.05, key="acceptance", **limits("acceptance"),
                    disabled=not ss.get("draft_tokens"),
                    help="probability a draft token is accepted (DeepSeek-V3's MTP measured 0.85-0.90); used when "
                         "draft tokens > 0")
    c2.number_input("Run length [rollout steps]", step=100, key="steps", **limits("steps"),
                    help="rollout steps in the whole run (workload.steps): each generates a batch and ends in a "
                         "weight update; run time and cost follow it")
    c3.selectbox("Measured MFU on other hardware", choices["mfu_carry"], key="mfu_carry", **initial("mfu_carry"),
                 disabled=scn0.trainer.mfu_busy is None,
                 help="a trainer MFU measured on one chip (trainer.mfu_busy): carry its measured-over-modelled "
                      "ratio to another chip's modelled MFU, or compare every chip, the measured one too, on the "
                      "roofline model (trainer.mfu_carry); only a scenario with a measured MFU has the choice")
    c4.selectbox("Phases' responses", choices["phase_responses"], key="phase_responses",
                 **initial("phase_responses"), disabled=not scn0.phases,
                 help="when you edit Mean response: each [[phases]] entry's lengths scale with it (the file's "
                      "response_scale), or keep the file's own, so 'what if responses double' does not double the "
                      "drift again")
    c1, c2, _, _ = st.columns(4)
    c1.selectbox("Activation recompute", choices["recompute"], key="recompute", **initial("recompute"),
                 help="trainer.recompute: the activation recompute the framework runs whatever memory needs ('full': "
                      "each layer's forward again in the backward pass, 4/3 of the update's compute; verl's "
                      "enable_gradient_checkpointing, Megatron recompute_granularity full); 'the lightest that fits': "
                      "the model's search")
    c2.selectbox("Mini-batch balance", choices["balance"], key="balance", **initial("balance"),
                 help="trainer.minibatch_balance: 'random' when a mini-batch's variable-length sequences fall on the "
                      "data-parallel ranks in arrival order (verl before PR 3605, 2025-10-23), so every optimizer "
                      "step waits for the rank with the most tokens (docs/rl-modeling.md §3.12); 'balanced': equal "
                      "shares")
    st.markdown("**Sandboxes** (agentic runs: one per trajectory while it runs tools)")
    c1, c2, c3, c4 = st.columns(4)
    c1.number_input("Sandboxes live at most", step=64, key="sb_live", **limits("sb_live"),
                    help="sandbox.max_concurrency: cap on live sandboxes; 0 = unlimited")
    c2.number_input("Sandboxes starting at once", step=16, key="sb_starting", **limits("sb_starting"),
                    help="sandbox.max_starting: the start rate's cap; 0 = unlimited")
    c3.number_input("Sandbox start failures", step=0.05, key="sb_failure", format="%g", **limits("sb_failure"),
                    help="sandbox.failure_rate: probability a start fails (retried up to sandbox.retries times)")
    c4.number_input("Sandbox start-up [s]", step=10.0, key="sb_startup", format="%g", **limits("sb_startup"),
                    help="sandbox.startup_s: cold start per sandbox")
    c5 = st.columns(4)[0]
    c5.number_input("Tool calls executing at most", step=16, key="sb_exec", **limits("sb_exec"),
                    help="sandbox.max_executing: cap on tool calls running at once across the cluster (a "
                         "sandbox service's worker pool or rate limit); a call beyond it waits; 0 = unlimited")

# Waiting for an uploaded file that a server restart or a reload did not keep: nothing is evaluated (the widgets hold
# the tab's inputs, not this file's); every input that differs from where the widgets started, the edit whose rerun
# reconnected the tab among them, joins the URL's inputs, restored when the file is uploaded again (before, the page
# fell back to the scenario box's file and dropped that edit).
if "_waiting" in ss:
    edits = {key: to_param(ss[key]) for key, value in ss["_waiting"].items() if key in ss and ss[key] != value}
    ss["_link"] = {**ss["_link"], **edits}
    if st.query_params.to_dict() != ss["_link"]:
        st.query_params.from_dict(ss["_link"])  # a reload keeps them too
    st.warning(f"This tab's inputs are for the uploaded file {linked}, which a server restart or a reload does not "
               f"keep: upload it again to see its plan with them (every change since is kept), or choose a scenario "
               f"in the box.")
    st.stop()

# The URL keeps the scenario, the inputs that differ from its values and the toggles that are on. It is left
# alone while it still holds inputs for an uploaded file that has not been uploaded again.
# A toggle drawn further down has no value yet on a session's first run: its starting value (a link's
# simulate=true) counts, or the rewritten URL would drop it.
params = {SCENARIO_PARAM: source, **{key: to_param(ss[key]) for key in start if ss[key] != start[key]},
          **{key: "true" for key in TOGGLES if (ss[key] if key in ss else defaults.get(key))}}
if not ss["_link"] and st.query_params.to_dict() != params:
    st.query_params.from_dict(params)

# The scenario the page evaluates: the chosen one with the widgets' values. The library keeps its rules (the
# response distribution keeps its shape; a colocated run has one pool) and refuses bad combinations.
try:
    scn = (scn0.with_values({
        "model.name": ss["model"], "generator.precision": ss["generator_precision"],
        "orchestration.max_staleness": float(ss["max_staleness"]), "workload.prompts_per_step": int(ss["prompts"]),
        "workload.group_size": int(ss["group"]), "workload.prompt_tokens": float(ss["prompt_tokens"]),
        "workload.turns": int(ss["turns"]), "sandbox.tool_call_s": float(ss["tool_s"]),
        "workload.steps": int(ss["steps"]), "sandbox.max_concurrency": int(ss["sb_live"]),
        "sandbox.max_starting": int(ss["sb_starting"]), "sandbox.failure_rate": float(ss["sb_failure"]),
        "sandbox.startup_s": float(ss["sb_startup"]), "sandbox.max_executing": int(ss["sb_exec"]),
        "trainer.mfu_carry": MFU_CARRY[ss["mfu_carry"]], "trainer.recompute": RECOMPUTE[ss["recompute"]],
        "trainer.minibatch_balance": MINIBATCH_BALANCE[ss["balance"]],
        "orchestration.framework": ss["framework"],
        "generator.disaggregated": ss["serving"] == "disaggregated",
        **({} if ss["serving"] == "disaggregated" else {"generator.prefill_gpus": None}),
        "generator.speculative_tokens": int(ss["draft_tokens"]) or None,
        "generator.acceptance_rate": float(ss["acceptance"]) if ss["draft_tokens"] else None,
        **({} if ss["nvlink"] == NVLINK_MIXED else {"trainer.multinode_nvlink": ss["nvlink"] == NVLINK[0],
                                                    "generator.multinode_nvlink": ss["nvlink"] == NVLINK[0]})})
        .with_response_mean(float(ss["resp_mean"]))
        .with_cluster(mode=ss["mode"], trainer_hardware=as_written(ss["trainer_hw"], scn0.trainer.hardware),
                      trainer_gpus=int(ss["trainer_gpus"]),
                      generator_hardware=as_written(ss["generator_hw"], scn0.generator.hardware),
                      generator_gpus=int(ss["generator_gpus"])))
    if ss["phase_responses"] == PHASE_RESPONSES[1]:
        scn = keep_phase_lengths(scn, scn0)
    # The box shows the price in use for the hardware shown (audit N6); a price differs from it only when typed
    if ss.get("_price_for") or abs(ss["usd_gpu_h"] - price_in_use(scn)) > 0.5 * 10 ** -PRICE_DIGITS:  # typed here
        scn = scn.with_values(price_edit(scn, float(ss["usd_gpu_h"]), ss.get("_price_for")))
except (tc.TcocalcError, ValueError) as exc:
    ui.show_error(exc, LABELS)
    st.stop()

# Calibrate from a run: the page's inputs describe the measured run; its logged (or typed) figures fit per-stage
# factors (tc.calibrate, docs/calibration.md), which then apply to every plan the page shows.
with st.expander("Calibrate from a run", expanded="_calibration" in ss):
    st.caption("Set the inputs above to the pilot run you measured, then give its log or its steady-state times "
               "per step. The fitted factors apply to every split, mode and price this page plans (where the "
               "stack differs, the factors that do not carry over are dropped and named).")
    c1, c2, c3 = st.columns([2, 1, 1])
    cal_log = c1.file_uploader("Run log: console output, W&B or TensorBoard CSV, JSON / JSONL, a TensorBoard event "
                               "file", type=None, key="cal_log",  # read by content: a slurm .out or a .md paste too
                               help="any name or extension: the format is told from the content (docs/run-logs.md)")
    cal_fw = c2.selectbox("Log's framework", ["(guess)", *CALIBRATION_FRAMEWORKS], key="cal_fw")
    cal_steps = c3.text_input("Steps (A:B)", key="cal_steps", help="logged steps to use, A included, B excluded; "
                                                                  "empty: all after the warm-up")
    typed_cols = st.columns(len(MEASURED_TIMES))
    typed = {key: typed_cols[i].number_input(label, min_value=0.0, max_value=1e7, value=0.0, key=f"cal_{key}",
                                             help="0: not measured")
             for i, (key, label) in enumerate(MEASURED_TIMES.items())}
    b1, b2, _ = st.columns([1, 1, 2])
    if b1.button("Calibrate", key="cal_go"):
        try:
            with st.spinner("Fitting the factors…"):
                cal = ui.calibrate(scn, cal_log, None if cal_fw == "(guess)" else cal_fw, cal_steps.strip() or None,
                                   {k: v for k, v in typed.items() if v > 0})
            ss["_calibration"], ss["_calibration_view"] = cal.section().model_dump(), (
                cal.to_frame(), cal.factors_frame(), cal.warnings, dict(cal.workload), cal.inferred_response_line)
        except (tc.TcocalcError, ValueError, OSError) as exc:
            ui.show_error(exc, {})
    if "_calibration" in ss and b2.button("Remove the calibration", key="cal_clear"):
        ss.pop("_calibration", None)
        ss.pop("_calibration_view", None)
    if "_calibration_view" in ss:
        stages, factors, warned, workload, inferred = ss["_calibration_view"]
        st.markdown("**Measured against the model, before and after**")
        st.dataframe(display_table(stages), hide_index=True)
        st.dataframe(display_table(factors), hide_index=True)
        if inferred:
            st.caption(inferred[0].upper() + inferred[1:])
        if workload:
            st.caption("Measured workload (inputs, not factors; set the inputs above to plan this run): "
                       + ", ".join(f"{k.split('.')[-1]} {v:,.4g}" for k, v in workload.items()))
        for line in warned:
            st.warning(line)
if "_calibration" in ss:
    scn = scn.with_run_calibration(ss["_calibration"])
ss["_plan_variant"] = (scn.name, scn.to_toml())  # the Compare page offers the Plan page's inputs as a column
try:
    with st.spinner("Solving the split…" if solve else "Evaluating…"):
        report = ui.solve(scn, OBJECTIVE) if solve else ui.evaluate(scn)
except (tc.TcocalcError, ValueError) as exc:
    ui.show_error(exc, LABELS)
    st.stop()

# The split shown, simulated and downloaded: the solved one when solving (report.scenario), else the inputs'.
shown, m = report.scenario, report.metrics
if solve and (shown.trainer.gpus, shown.generator.gpus) != (scn.trainer.gpus, scn.generator.gpus) \
        and ss.get("_filled") != shown.to_toml():  # the solved split fills the inputs, once per solution
    ss["_filled"] = shown.to_toml()
    fill = (shown.trainer.gpus, shown.generator.gpus, ui.split_text(
        {"trainer_gpus": scn.trainer.gpus, "generator_gpus": scn.generator.gpus}, shown.orchestration.mode),
        scn.trainer.gpus, scn.generator.gpus)  # the split before solving, to show what moved
    if first:  # a first run's inputs live in the widgets' defaults, which a rerun drops: run it again as a first
        ss["_refill"] = {**{k: ss[k] for k in [*start, *TOGGLES, "scenario_file"] if k in ss},
                         "trainer_gpus": fill[0], "generator_gpus": fill[1]}
        ss["_solved_from"] = fill
    else:
        ss["_fill"] = fill
    st.rerun()
mode = shown.orchestration.mode
split = ui.split_text(m, mode)
found = report.diagnosis
calibrated = found.calibration.calibrated
st.subheader(("" if tc.MODES[mode].shared_pool else "Split ") + split + (" (solved)" if solve else "")
             + (", calibrated" if calibrated else ""))
st.caption(tc.calibration_line(found.calibration, found.trust))
moved = ss.get("_solved_from")
if solve and moved and tuple(moved[:2]) == (scn.trainer.gpus, scn.generator.gpus):
    st.caption(f"*Find the best split* filled the inputs with this split; before solving: {moved[2]}.")
st.caption(f"Priced: {pricing_text(found.pricing)}.")
if report.phases is not None and "prefill_gpus" in report.phases.columns:  # disaggregated: the generator's pools
    pools = report.phases.iloc[0]
    st.caption(f"Generator pools: {ui.plural(int(pools['prefill_gpus']), 'prefill GPU')} in "
               f"{pools['prefill_instance']} instances; decode in {pools['generator_instance']} instances.")
# After Find the best split moved the split, the tiles say what it gained against the split before (audit N7)
was = None
if solve and moved and tuple(moved[:2]) == (scn.trainer.gpus, scn.generator.gpus) and len(moved) > 3:
    try:
        was = ui.evaluate(scn.with_cluster(trainer_gpus=moved[3], generator_gpus=moved[4])).metrics
    except (tc.TcocalcError, ValueError):
        was = None
k = st.columns(4)
k[0].metric("Useful samples/s", ui.fmt(m["useful_samples_per_s"]),  # the label has the unit: no truncation
            delta=None if was is None else f"{m['useful_samples_per_s'] - was['useful_samples_per_s']:+.3g} "
                                           f"(was {was['useful_samples_per_s']:.3g})",
            help="trajectories with non-zero advantage reaching the trainer")
k[1].metric("Trainer idle", f"{m['trainer_idle_fraction']:.0%}", help="share of wall time the trainer waits",
            delta=None if was is None else f"{(m['trainer_idle_fraction'] - was['trainer_idle_fraction']) * 100:+.0f} "
                                           f"points (was {was['trainer_idle_fraction']:.0%})", delta_color="inverse")
k[2].metric("Trainer MFU (wall / busy)", f"{m['trainer_mfu']:.1%} / {m['trainer_mfu_busy']:.1%}")
updates = shown.trainer.minibatches_per_step  # staleness counts policy versions: optimizer updates (audit N10)
k[3].metric("Mean staleness [policy versions]", ui.fmt(m["mean_staleness_steps"]),
            help=f"how many policy versions (optimizer updates; {ui.plural(updates, 'update')} per rollout step "
                 f"here) a trained sample lags: max {m['max_staleness_steps']:.2g}, token-weighted "
                 f"{m['token_staleness_steps']:.2g}. Run length and step time count rollout steps")
k = st.columns(4)
k[0].metric("Cost per M trained tokens (ours)", ui.fmt(m["usd_per_mtok_trained"], "USD"),
            help="our accounting: the scenario's own $/GPU-hour; Tinker charged for discarded rollouts too")
ratio = m["cost_ratio_vs_tinker"]
k[1].metric("vs Tinker (ours)", "not offered" if ratio is None else f"{ratio:.2f}x",
            help="our cost per trained token over Tinker's list price for the same token mix, discards billed")
k[2].metric("Run cost", ui.fmt(m["run_usd"], "USD"), help=ui.plural(shown.workload.steps, "rollout step"))
k[3].metric("Run duration", ui.fmt(m["run_hours"], "h"), help=ui.plural(shown.workload.steps, "rollout step"))
tail = sandbox_start_tail_s(shown)
if tail is not None:  # agentic runs: how long one step's sandboxes take to start (SemiAnalysis' start tail)
    sb = shown.sandbox
    st.caption(f"Sandbox start tail: {ui.fmt(tail / 60, 'min') if tail >= 120 else ui.fmt(tail, 's')} to start "
               f"one step's sandboxes ("
               + (f"at most {sb.max_starting:,} at once, " if sb.max_starting else "no cap on starts, ")
               + f"{sb.startup_s:g} s each, {sb.failure_rate:.0%} of starts fail and retry).")
k = st.columns(2)  # wider tiles: their labels say which accounting they are, in full
sa, sa_ratio = m["semianalysis_usd_per_mtok"], m["semianalysis_cost_ratio_vs_tinker"]
k[0].metric("Cost per M tokens (SemiAnalysis-style)", "no rental price" if sa is None else ui.fmt(sa, "USD"),
            help="the study's accounting: GPU-hours at its rental price, prompt + response tokens of trained "
                 "trajectories (docs/validation.md: Reading our numbers next to SemiAnalysis')")
k[1].metric("vs Tinker (SemiAnalysis-style)", "not offered" if sa_ratio is None else f"{sa_ratio:.2f}x",
            help="over Tinker's list price for prompt and response tokens, discarded rollouts not billed")
for line in report.advice:
    st.info(line)

with st.expander("All metrics", expanded=False):
    frame = metrics_table(report)
    st.dataframe(readable_metrics(report), hide_index=True)  # words and % here; the CSV keeps the numbers
    st.download_button("Download metrics (CSV)", to_csv_text(frame), "metrics.csv", "text/csv", key="dl_metrics")
    st.download_button("Download workbook (Excel)", ui.workbook(report, source if upload else f"{source}.toml"),
                       f"{report.scenario.name}.xlsx", XLSX_MIME, key="dl_xlsx",
                       help="inputs, metrics with units, phases, the split sweep when solved, cost lines, advice "
                            "and provenance, one sheet each")

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
    table = phases[cols].copy()
    changes = phase_changes(shown)
    if len(changes) == len(table):  # what each phase changes against the file's workload (audit N19)
        table.insert(1, "changes", changes)
    st.dataframe(display_table(table), hide_index=True)

def simulation_steps(scn: tc.Scenario) -> tuple[int, str | None]:
    """The steps the page simulates (:data:`SIM_STEPS`, fewer when that is estimated above :data:`SIM_MAX_EVENTS`
    events) and, when even the fewest would exceed it, what the request would take instead (0 steps)."""
    total, events = tc.simulated_steps(scn, SIM_STEPS), tc.simulated_events_estimate(scn, SIM_STEPS)
    if events <= SIM_MAX_EVENTS:
        return SIM_STEPS, None
    fit = int(SIM_STEPS * SIM_MAX_EVENTS / events)
    if not scn.phases and fit >= MIN_SIM_STEPS:
        return fit, None
    phases = (f" ({len(scn.phases) + 1:,} phases, at least {MIN_SIM_STEPS} steps each)" if scn.phases
              and total > SIM_STEPS else "")
    return 0, (f"Simulating {ui.plural(SIM_STEPS, 'step')} of this scenario means {total:,} simulated steps{phases} "
               f"and about {events:,.0f} events, more than this page simulates ({SIM_MAX_EVENTS:,} events, about "
               f"15 s). Run it where it may take longer: tcocalc run FILE --simulate --sim-steps {SIM_STEPS} "
               f"--max-events {int(events * 1.5)}.")


st.subheader("Step timeline (simulated)")
if st.toggle(f"Simulate {ui.plural(SIM_STEPS, 'step')}", key="simulate", **initial("simulate"),
             help="a seeded discrete-event run of the split shown above (a few seconds)"):
    try:
        sim_steps, too_much = simulation_steps(shown)
        if too_much:
            raise tc.InfeasibleError(too_much)
        if sim_steps < SIM_STEPS:
            st.caption(f"{ui.plural(sim_steps, 'step')} simulated: {SIM_STEPS} would take more than "
                       f"{SIM_MAX_EVENTS:,} events.")
        if ui.simulate_takes_progress():  # a progress bar while it runs, gone when it is done
            bar = st.empty()
            sim = ui.simulate(shown, sim_steps, SIM_SEED, progress=lambda done, total: bar.progress(
                min(done / total, 1.0) if total else 1.0, text=f"Simulating: step {done:,} of {total:,}"))
            bar.empty()
        else:
            with st.spinner("Simulating…"):
                sim = ui.simulate(shown, sim_steps, SIM_SEED)
        sim_metrics, timeline = sim.metrics, sim.simulation.timeline
        rate = m["generator_output_tokens_per_s_per_gpu"] * m["generator_gpus"]
        share = ui.sandbox_share(report)
        st.plotly_chart(timeline_figure(timeline, generator_tokens_per_s=rate, sandbox_share=share),
                        key="timeline_chart")
        st.caption("Trainer lane: simulated. Generator lane: each step's simulated tokens over the pool's modelled "
                   "output rate" + ("; sandbox lane: the modelled share of a rollout spent in sandboxes (tool calls, "
                                    "starts)" if share else "") + ". A generator busy for the whole step is what the "
                   "trainer waits on.")
        st.caption(f"Simulated on {ui.split_text(sim_metrics, mode)}: {sim_metrics['useful_samples_per_s']:.3g} "
                   f"useful samples/s, trainer idle {sim_metrics['trainer_idle_fraction']:.0%} (analytical "
                   f"{m['useful_samples_per_s']:.3g}, {m['trainer_idle_fraction']:.0%}).")
        st.download_button("Download timeline (CSV)", to_csv_text(timeline), "timeline.csv", "text/csv",
                           key="dl_timeline")
    except (tc.TcocalcError, ValueError) as exc:
        ui.show_error(exc, LABELS)

# The download is the split shown; a solved one says so in its name and description.
saved = shown
if solve:
    filled = ss.get("_solved_from")
    before = filled[2] if filled and tuple(filled[:2]) == (scn.trainer.gpus, scn.generator.gpus) else ui.split_text(
        {"trainer_gpus": scn.trainer.gpus, "generator_gpus": scn.generator.gpus}, mode)
    try:
        saved = shown.with_values({
            "name": f"{scn.name[:193]}-solved",
            "description": f"Split solved by tcocalc for {OBJECTIVE}: {split} (before solving: {before}). "
                           f"{scn.description}"[:10_000]})
    except (tc.TcocalcError, ValueError) as exc:
        ui.show_error(exc, LABELS)
st.download_button("Download this scenario (TOML)", saved.to_toml(), f"{saved.name}.toml", "application/toml",
                   key="dl_toml")
