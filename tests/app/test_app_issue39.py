"""Issue 39 on the Plan page (AppTest): the audit's N1, N6, N7, N10, N19 and the missing knobs (run length,
sandboxes, the start tail, like-for-like MFU). Each test fails on the code the audit tried (cb9980d)."""

import pytest
from streamlit.testing.v1 import AppTest

import tcocalc as tc
from tcocalc.reports import sandbox_start_tail_s
from tests.conftest import ROOT

SEMI = "semianalysis_qwen3_235b_h200"
PLAN = str(ROOT / "tcocalc" / "app" / "plan.py")


def run(params: dict | None = None) -> AppTest:
    at = AppTest.from_file(PLAN, default_timeout=180)
    if params:
        at.query_params.update(params)
    return at.run()


def metric(at, label):
    return next(m for m in at.metric if m.label == label)


def test_n1_the_first_element_is_the_title_not_developer_text():
    at = run()
    assert not at.exception
    first = at.main.children[0]
    assert getattr(first, "type", "") == "title" or first.value == "Plan an RL run"
    assert not any("Most events the page simulates" in md.value for md in at.markdown)


def test_n6_a_hardware_swap_shows_the_price_in_use_and_the_files_price_comes_back():
    at = run()
    at.selectbox(key="scenario_file").select(SEMI).run()
    assert at.number_input(key="usd_gpu_h").value == pytest.approx(1.59)
    at.selectbox(key="trainer_hw").select("B200").run()
    at.selectbox(key="generator_hw").select("B200").run()
    b200 = tc.pool_pricing(tc.load_scenario(SEMI).with_cluster(trainer_hardware="B200", generator_hardware="B200"))
    assert at.number_input(key="usd_gpu_h").value == pytest.approx(b200[0].usd_per_gpu_hour, abs=1e-4)  # not 1.59
    priced = next(c.value for c in at.caption if c.value.startswith("Priced:"))
    assert "its ownership cost" in priced  # the box's value is the price in use, not a typed one
    at.number_input(key="usd_gpu_h").set_value(3.2).run()
    assert "B200 at 3.2 USD/GPU-h" in next(c.value for c in at.caption if c.value.startswith("Priced:"))
    at.selectbox(key="trainer_hw").select("H200-SXM").run()
    at.selectbox(key="generator_hw").select("H200-SXM").run()
    assert at.number_input(key="usd_gpu_h").value == pytest.approx(1.59)  # the file's own, not 3.2 nor 1.595
    assert "the scenario's price" in next(c.value for c in at.caption if c.value.startswith("Priced:"))
    at.selectbox(key="trainer_hw").select("B200").run()
    at.selectbox(key="generator_hw").select("B200").run()
    assert at.number_input(key="usd_gpu_h").value == pytest.approx(3.2)  # the price typed for B200 comes back


def test_n6_a_link_that_swaps_the_hardware_shows_its_price():
    at = run({"scenario": SEMI, "trainer_hw": "B200", "generator_hw": "B200"})
    assert not at.exception and not at.error
    b200 = tc.pool_pricing(tc.load_scenario(SEMI).with_cluster(trainer_hardware="B200", generator_hardware="B200"))
    assert at.number_input(key="usd_gpu_h").value == pytest.approx(b200[0].usd_per_gpu_hour, abs=1e-4)
    assert "its ownership cost" in next(c.value for c in at.caption if c.value.startswith("Priced:"))


def test_n7_solving_shows_what_moved():
    at = run()
    at.selectbox(key="scenario_file").select(SEMI).run()
    before = tc.evaluate(tc.load_scenario(SEMI)).metrics
    at.toggle(key="solve").set_value(True).run()
    assert not at.exception and not at.error
    idle = metric(at, "Trainer idle")
    assert idle.delta and f"was {before['trainer_idle_fraction']:.0%}" in idle.delta  # was 31%
    assert f"was {before['useful_samples_per_s']:.3g}" in metric(at, "Useful samples/s").delta


def test_knobs_run_length_and_sandboxes_reach_the_plan():
    at = run()
    at.selectbox(key="scenario_file").select("gb300_agentic_960").run()
    scn = tc.load_scenario("gb300_agentic_960")
    assert at.number_input(key="steps").value == scn.workload.steps
    assert at.number_input(key="sb_starting").value == scn.sandbox.max_starting
    tail = next(c.value for c in at.caption if c.value.startswith("Sandbox start tail"))
    assert f"{sandbox_start_tail_s(scn) / 60:.3g} min" in tail  # 85.7 min: SemiAnalysis' hour-long start tail
    at.number_input(key="steps").set_value(600).run()
    at.number_input(key="sb_starting").set_value(512).run()
    at.number_input(key="sb_failure").set_value(0.1).run()
    at.number_input(key="sb_startup").set_value(60.0).run()
    at.number_input(key="sb_live").set_value(2000).run()
    assert not at.exception and not at.error
    want = tc.evaluate(scn.with_values({"workload.steps": 600, "sandbox.max_starting": 512,
                                        "sandbox.failure_rate": 0.1, "sandbox.startup_s": 60.0,
                                        "sandbox.max_concurrency": 2000})).metrics
    shown = metric(at, "Run duration").value
    assert shown == (f"{want['run_hours']:,.0f} h" if want["run_hours"] >= 1000 else f"{want['run_hours']:.3g} h")
    assert dict(at.query_params)["steps"] == "600"


def test_the_tool_execution_cap_reaches_the_plan():
    """[sandbox] max_executing on the Plan page: the file's value shows, an edit reaches the plan (gb300_agentic_960 at
    64 executors: 0.0995 -> 0.0915 useful samples/s, the calls' wait for an executor) and the link keeps it."""
    at = run()
    at.selectbox(key="scenario_file").select("gb300_agentic_960").run()
    scn = tc.load_scenario("gb300_agentic_960")
    assert at.number_input(key="sb_exec").value == scn.sandbox.max_executing == 0
    at.number_input(key="sb_exec").set_value(64).run()
    assert not at.exception and not at.error
    want = tc.evaluate(scn.with_values({"sandbox.max_executing": 64})).metrics["useful_samples_per_s"]
    assert want < 0.95 * tc.evaluate(scn).metrics["useful_samples_per_s"]  # the cap binds here: not a no-op
    assert metric(at, "Useful samples/s").value == f"{want:.3g}"
    assert dict(at.query_params)["sb_exec"] == "64"


VERL_STUDY = "verl_fully_async_qwen25_7b_h20"


def _trainer_box_reaches_the_plan(key: str, shown: str, pick: str, field: str, value: str, *, at_most: float):
    """The Plan page's box ``key`` on the verl study scenario shows ``shown``; picking ``pick`` gives no error, the KPI
    is evaluate's with ``field = value``, which moves useful samples/s below ``at_most`` of the file's (a real change,
    not a no-op), and the link keeps the pick."""
    at = run()
    at.selectbox(key="scenario_file").select(VERL_STUDY).run()
    scn = tc.load_scenario(VERL_STUDY)
    assert at.selectbox(key=key).value == shown
    at.selectbox(key=key).select(pick).run()
    assert not at.exception and not at.error
    want = tc.evaluate(scn.with_values({field: value})).metrics["useful_samples_per_s"]
    assert want < at_most * tc.evaluate(scn).metrics["useful_samples_per_s"]
    assert metric(at, "Useful samples/s").value == f"{want:.3g}"
    assert dict(at.query_params)[key] == pick


def test_activation_recompute_reaches_the_plan():
    """[trainer] recompute on the Plan page: the file's (none named: 'the lightest that fits') shows, 'full' reaches the
    plan (verl_fully_async_qwen25_7b_h20: useful samples/s 26.3 -> 24.7, the update's compute x 4/3) and the link
    keeps it."""
    assert tc.load_scenario(VERL_STUDY).trainer.recompute is None
    _trainer_box_reaches_the_plan("recompute", "the lightest that fits", "full", "trainer.recompute", "full",
                                  at_most=0.97)


def test_minibatch_balance_reaches_the_plan():
    """[trainer] minibatch_balance on the Plan page: the file's ('balanced') shows, 'random' reaches the plan
    (verl_fully_async_qwen25_7b_h20 on 128 H20: every optimizer step waits for the fullest rank, useful samples/s
    26.3 -> 15.5 on 2026-12-07) and the link keeps it."""
    assert tc.load_scenario(VERL_STUDY).trainer.minibatch_balance == "balanced"
    _trainer_box_reaches_the_plan("balance", "balanced (equal shares)", "random (waits for the fullest rank)",
                                  "trainer.minibatch_balance", "random", at_most=0.9)


def test_n19_phases_say_what_changes_and_responses_double_without_compounding():
    at = run()
    at.selectbox(key="scenario_file").select("glm5_h200_drift").run()
    table = at.dataframe[-1].value if at.dataframe else None
    phases = next(d.value for d in at.dataframe if "changes" in d.value.columns)
    assert list(phases["changes"]) == ["as in the file", "responses x2, 52 turns"]
    scn = tc.load_scenario("glm5_h200_drift")
    base = scn.workload.response_tokens_mean
    at.number_input(key="resp_mean").set_value(2 * base).run()
    at.selectbox(key="phase_responses").select("keep the file's lengths").run()
    assert not at.exception and not at.error
    # the drift phase keeps its 2x of the file's mean: "responses double" is asked once, not twice
    want = tc.evaluate(scn.with_response_mean(2 * base).with_values(
        {"phases": [{**scn.phases[0].model_dump(exclude_none=True), "response_scale": 1.0}]})).metrics
    assert metric(at, "Run duration").value.split()[0] == (f"{want['run_hours']:,.0f}" if want["run_hours"] >= 1000
                                                           else f"{want['run_hours']:.3g}")
    assert table is not None


def test_n10_staleness_counts_policy_versions_not_rollout_steps():
    at = run()
    at.selectbox(key="scenario_file").select("verl_fully_async_qwen25_7b_h20").run()
    tile = metric(at, "Mean staleness [policy versions]")
    assert "optimizer updates" in tile.help and "rollout steps" in tile.help


def test_mfu_choice_on_the_page():
    at = run()
    at.selectbox(key="scenario_file").select(SEMI).run()
    at.selectbox(key="mfu_carry").select("model on every chip").run()
    assert not at.exception
    assert any("Measured MFU not used" in i.value for i in at.info)
    want = tc.evaluate(tc.load_scenario(SEMI).with_values({"trainer.mfu_carry": "model"})).metrics
    assert f"{want['trainer_mfu_busy']:.1%}" in metric(at, "Trainer MFU (wall / busy)").value


def test_compare_takes_the_plan_pages_inputs_and_uploads_and_a_bad_upload_keeps_its_column():
    at = run()
    at.selectbox(key="scenario_file").select(SEMI).run()
    at.selectbox(key="trainer_hw").select("B200").run()
    at.selectbox(key="generator_hw").select("B200").run()
    variant = at.session_state["_plan_variant"]  # what the Plan page leaves for Compare (session state)
    at = AppTest.from_file(str(ROOT / "tcocalc" / "app" / "compare.py"), default_timeout=180)
    at.session_state["_plan_variant"] = variant
    at.run()
    assert not at.exception
    at.checkbox(key="compare_plan").check().run()
    table = at.dataframe[0].value
    plan_col = f"Plan: {tc.load_scenario(SEMI).name}"
    assert plan_col in table.columns
    want = tc.evaluate(tc.load_scenario(SEMI).with_cluster(trainer_hardware="B200", generator_hardware="B200"))
    semi = tc.evaluate(tc.load_scenario(SEMI))
    assert want.metrics["useful_samples_per_s"] != semi.metrics["useful_samples_per_s"]
    from tcocalc.reports import display_metrics
    assert list(table[plan_col]) == list(display_metrics({"x": want.metrics})["x"])


def test_compare_upload_error_shows_in_its_column(monkeypatch):
    # AppTest cannot upload a file: the page's uploader is given two files, one that loads and one that does not
    import types

    from streamlit.delta_generator import DeltaGenerator

    good = tc.load_scenario("default").with_values({"name": "mine", "workload.group_size": 8}).to_toml()
    files = [types.SimpleNamespace(name="mine.toml", getvalue=lambda: good.encode()),
             types.SimpleNamespace(name="bad.toml", getvalue=lambda: b"[trainer]\ngpus = 'x'\n")]
    monkeypatch.setattr(DeltaGenerator, "file_uploader", lambda self, *a, **k: files)
    at = AppTest.from_file(str(ROOT / "tcocalc" / "app" / "compare.py"), default_timeout=180).run()
    assert not at.exception
    table = at.dataframe[0].value
    assert "mine.toml" in table.columns and "bad.toml" in table.columns
    assert table["bad.toml"].iloc[0].startswith("not loaded:") and "trainer.gpus" in table["bad.toml"].iloc[0]
    assert any("bad.toml" in e.value for e in at.error)
    assert table["mine.toml"].iloc[0] != ""


SIZE = str(ROOT / "tcocalc" / "app" / "size.py")


def test_n18_the_size_target_value_follows_its_kind():
    at = AppTest.from_file(SIZE, default_timeout=180).run()
    assert at.number_input(key="size_target_value").value == 2.0
    at.selectbox(key="size_target_kind").select("Budget for the run [USD]").run()
    assert at.number_input(key="size_target_value").value == 50_000.0  # not a $2 budget
    at.selectbox(key="size_target_kind").select("Run hours (the scenario's steps)").run()
    assert at.number_input(key="size_target_value").value == 48.0
    assert not at.exception and not at.error


def test_size_settings_survive_leaving_the_page_and_a_reload():
    at = AppTest.from_file(SIZE, default_timeout=180).run()
    at.selectbox(key="size_scenario").select(SEMI).run()
    at.selectbox(key="size_target_kind").select("Run hours (the scenario's steps)").run()
    at.number_input(key="size_target_value").set_value(100.0).run()
    assert not at.exception and not at.error
    # leaving the page: Streamlit drops the state of the widgets it did not draw, and keeps the rest of the session
    back = AppTest.from_file(SIZE, default_timeout=180)
    for key in ("_size_kept", "_size_loaded", "_size_values"):
        back.session_state[key] = at.session_state[key]
    back.run()
    assert back.selectbox(key="size_scenario").value == SEMI
    assert back.number_input(key="size_target_value").value == 100.0
    assert back.multiselect(key="size_trainer_hw").value == ["H200-SXM"]
    # a reload (a new session) starts from the URL
    fresh = AppTest.from_file(SIZE, default_timeout=180)
    fresh.query_params.update(dict(at.query_params))
    fresh.run()
    assert not fresh.exception
    assert fresh.selectbox(key="size_scenario").value == SEMI
    assert fresh.selectbox(key="size_target_kind").value == "Run hours (the scenario's steps)"
    assert fresh.number_input(key="size_target_value").value == 100.0
    assert fresh.multiselect(key="size_trainer_hw").value == ["H200-SXM"]


def test_size_runs_on_its_button():
    at = AppTest.from_file(SIZE, default_timeout=180).run()
    assert any(b.label == "Size" for b in at.button)


def test_d17_the_gb300_960_comment_says_what_the_tool_says():
    import re

    text = (ROOT / "scenarios" / "gb300_agentic_960.toml").read_text()
    said = int(re.search(r"about (\d+)% less useful work than the 96 variant", text).group(1))
    x96 = tc.evaluate(tc.load_scenario("gb300_agentic_96")).metrics["useful_samples_per_s"]
    x960 = tc.evaluate(tc.load_scenario("gb300_agentic_960")).metrics["useful_samples_per_s"]
    assert said == pytest.approx(100 * (1 - x960 / x96), abs=1)  # 18%, not 2%


def test_n12_n13_n15_cli_words(capsys):
    from tcocalc.cli.main import main

    assert main(["hardware", "--sources"]) == 0
    out = capsys.readouterr().out
    assert max(len(line) for line in out.splitlines()) < 300  # rows were thousands of characters wide
    assert "Sources (figure: source, date):" in out
    assert main(["run", "gb300_agentic_96"]) == 0
    line = next(x for x in capsys.readouterr().out.splitlines() if "semianalysis_usd_per_mtok " in x)
    assert "no rental price" in line and "not offered" not in line
    guide = (ROOT / "docs" / "guide.md").read_text()
    assert "exit with status 2." not in guide and "3 a bad scenario" in guide


def test_n16_d12_d13_tables_read_like_the_tiles():
    at = run()
    at.selectbox(key="scenario_file").select(SEMI).run()
    table = next(d.value for d in at.dataframe if "meaning" in d.value.columns)
    row = table.set_index("metric").loc["trainer idle"]
    want = tc.evaluate(tc.load_scenario(SEMI)).metrics["trainer_idle_fraction"]
    assert row["value"] == f"{100 * want:.3g}%" and row["unit"] == ""  # 30.8%, not 0.3083 with unit "1"
    assert "trainer_idle_fraction" not in set(table["metric"])
    assert "contract's units" not in at.caption[0].value
    assert "samp" not in metric(at, "Useful samples/s").value  # the tile no longer truncates its unit


def test_n11_measured_takes_several_pairs_as_the_synopsis_reads(capsys):
    from tcocalc.cli.main import main

    assert main(["calibrate", "default", "--measured", "step_time_s=120", "response_tokens_mean=3000"]) == 0
    assert "usage:" not in capsys.readouterr().err


def test_size_link_with_names_the_boxes_do_not_offer_is_not_a_traceback():
    at = AppTest.from_file(SIZE, default_timeout=180)
    at.query_params.update({"size_scenario": "default", "size_trainer_hw": ["H100-SXM", "TPU-v9"],
                            "size_bounds": ["3.5", "2.0"], "size_max_gpus": "-5", "size_granularity": "7"})
    at.run()
    assert not at.exception
    assert at.multiselect(key="size_trainer_hw").value == ["H100-SXM"]
    assert at.multiselect(key="size_bounds").value == [2.0]


def test_size_link_naming_only_the_accelerators_starts_the_other_options_from_the_scenario():
    """Hand test 2026-12-06: a link with the accelerators but no staleness bounds answered 'options.staleness_bounds:
    is empty' (the options were kept from the link, the missing ones never started)."""
    at = AppTest.from_file(SIZE, default_timeout=300)
    at.query_params.update({"size_scenario": "default", "size_trainer_hw": ["H100-SXM", "H200-SXM"]})
    at.run()
    assert not at.exception and not at.error
    assert at.multiselect(key="size_trainer_hw").value == ["H100-SXM", "H200-SXM"]
    own = tc.hardware(tc.load_scenario("default").generator.hardware).name
    assert at.multiselect(key="size_generator_hw").value == [own]
    assert at.multiselect(key="size_bounds").value  # the scenario's bounds, not an empty list
