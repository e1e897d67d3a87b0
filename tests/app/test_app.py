"""The planner app, headless (AppTest): every page renders, widgets drive the KPIs, bad input shows st.error."""

import json

import pytest
from streamlit.runtime.memory_media_file_storage import MemoryMediaFileStorage
from streamlit.testing.v1 import AppTest

import tcocalc as tc
from tests.conftest import ROOT

PAGES = ["app.py", "tcocalc/app/plan.py", "tcocalc/app/hardware.py", "tcocalc/app/cost.py", "tcocalc/app/compare.py",
         "tcocalc/app/size.py", "tcocalc/app/validation.py"]


def run(page: str) -> AppTest:
    return AppTest.from_file(str(ROOT / page), default_timeout=180).run()


@pytest.mark.parametrize("page", PAGES)
def test_every_page_renders_without_exception(page):
    at = run(page)
    assert not at.exception, [e.value for e in at.exception]
    assert not at.error


def metric(at, label):
    return next(m.value for m in at.metric if m.label == label)


def test_plan_kpis_follow_the_gpu_count():
    at = run("tcocalc/app/plan.py")
    before = metric(at, "Useful samples/s")
    assert at.number_input(key="trainer_gpus").value == 8
    at.number_input(key="generator_gpus").set_value(24).run()
    assert not at.exception and not at.error
    after = metric(at, "Useful samples/s")
    assert after != before
    assert float(after.split()[0]) > float(before.split()[0])
    assert at.subheader[0].value.startswith("Split 8 trainer : 24 generator")


def test_plan_solve_shows_the_sweep_and_advice():
    at = run("tcocalc/app/plan.py")
    at.toggle(key="solve").set_value(True).run()
    assert not at.exception
    assert any("Split " in i.value for i in at.info)
    assert any(b.label == "Download sweep (CSV)" for b in at.get("download_button"))


def test_plan_scenario_switch_resets_widgets():
    at = run("tcocalc/app/plan.py")
    at.selectbox(key="scenario_file").select("semianalysis_qwen3_235b_h200").run()
    assert at.number_input(key="trainer_gpus").value == 64
    assert at.number_input(key="generator_gpus").value == 192
    assert metric(at, "Trainer idle") == "31%"


def test_plan_speculative_decoding_moves_the_run_as_the_library_does():
    """Draft tokens and acceptance reach [generator] speculative_tokens / acceptance_rate: on the SemiAnalysis run
    one draft token at 0.8 takes the trainer's idle from 31% to the library's figure for the same scenario."""
    at = run("tcocalc/app/plan.py")
    at.selectbox(key="scenario_file").select("semianalysis_qwen3_235b_h200").run()
    assert at.number_input(key="acceptance").disabled  # off until draft tokens are set
    at.number_input(key="draft_tokens").set_value(1).run()
    at.number_input(key="acceptance").set_value(0.8).run()
    assert not at.exception and not at.error
    scn = tc.load_scenario(ROOT / "scenarios" / "semianalysis_qwen3_235b_h200.toml").with_values(
        {"generator.speculative_tokens": 1, "generator.acceptance_rate": 0.8})
    idle = tc.evaluate(scn).metrics["trainer_idle_fraction"]
    assert metric(at, "Trainer idle") == f"{idle:.0%}" != "31%"


def test_plan_infeasible_input_shows_an_error_not_a_traceback():
    at = run("tcocalc/app/plan.py")
    at.selectbox(key="scenario_file").select("glm5_h200_drift").run()
    at.number_input(key="trainer_gpus").set_value(8).run()
    assert not at.exception
    assert at.error and "trainer" in at.error[0].value and "InfeasibleError" not in at.error[0].value
    # the smallest count is said once (issue 29 item 4: no text repeats itself), from the library's message
    assert "at least 32 GPUs fit" in at.error[0].value and at.error[0].value.count("32 GPUs") == 1


def test_plan_simulated_timeline():
    at = run("tcocalc/app/plan.py")
    at.toggle(key="simulate").set_value(True).run()
    assert not at.exception and not at.error
    assert any(b.label == "Download timeline (CSV)" for b in at.get("download_button"))


def test_cost_page_reproduces_the_h200_tco_and_reacts():
    at = run("tcocalc/app/cost.py")
    assert metric(at, "Ownership cost").startswith("1.59")
    assert metric(at, "Capex share") == "72.5%"
    at.number_input(key="kwh").set_value(0.20).run()
    assert float(metric(at, "Ownership cost").split()[0]) > 1.59


def test_hardware_page_roofline_without_choices_is_not_broken():
    at = run("tcocalc/app/hardware.py")
    at.multiselect(key="roof_hw").set_value([]).run()
    assert not at.exception
    assert any("Pick at least one" in i.value for i in at.info)


def test_validation_page_counts_cases():
    at = run("tcocalc/app/validation.py")
    assert metric(at, "Cases") == str(len(tc.validation_table()))  # 40 on 2026-11-30 (LMSYS rows added)


def test_validation_page_leads_the_rl_model_with_its_out_of_sample_groups():
    """The RL section opens with the groups of ``tc.validate()`` (issue 36: trust measured out of sample): the
    development set's, leave-one-framework-out and stages medians as headline figures, the groups table with every
    group and the regime table; NeMo RL's tables follow, headed as in-sample."""
    at = run("tcocalc/app/validation.py")
    v = tc.validate()
    by = v.groups.set_index("group")
    assert metric(at, "Other frameworks median |error|") == \
        f"{by.loc['other frameworks (development set)', 'median |error| [%]']:.1f} %"
    assert metric(at, "Leave-one-framework-out median |error|") == \
        f"{by.loc['leave-one-framework-out', 'median |error| [%]']:.1f} %"
    assert metric(at, "Stages median |error|") == f"{by.loc['stages', 'median |error| [%]']:.1f} %"
    shown = [df.value for df in at.dataframe]
    assert any("group" in t.columns and set(t["group"]) == set(vg_groups()) for t in shown)
    regimes = next(t for t in shown if "regime" in t.columns)
    shown_pct = [float(x) for x in regimes["median |error| [%]"]]  # display_table's four significant figures
    assert shown_pct == pytest.approx(list(100 * v.regimes["median_abs_error"]), rel=1e-3)
    headers = [h.value for h in at.header]
    assert headers.index("RL model, judged out of sample") < \
        headers.index("RL step times (in-sample: NeMo RL and verl's study)")
    pairs = next(t for t in shown if "forward ratio" in t.columns)  # the pass pairs, in their expander
    assert list(pairs["id"]) == list(v.passes["id"])
    lengths = next(t for t in shown if "responses factor" in t.columns)  # the update-length view
    assert list(lengths["id"]) == list(v.update_lengths["id"])
    speedups = next(t for t in shown if "at the updates' lengths" in t.columns)
    assert list(speedups["id"]) == list(v.update_speedups["id"])
    chart = at.get("plotly_chart")
    assert any("at the run's update lengths" in c.proto.spec for c in chart)  # the before/after figure is drawn


def vg_groups():
    from tcocalc.studies.validation_groups import GROUPS

    return GROUPS


@pytest.mark.parametrize("scenario", sorted(p.stem for p in (ROOT / "scenarios").glob("*.toml")))
def test_plan_every_shipped_scenario_solves_and_simulates(scenario):
    at = run("tcocalc/app/plan.py")
    at.selectbox(key="scenario_file").select(scenario).run()
    at.toggle(key="solve").set_value(True).run()
    at.toggle(key="simulate").set_value(True).run()
    assert not at.exception, [e.value for e in at.exception]
    assert not at.error, [e.value for e in at.error]


@pytest.fixture
def downloads(monkeypatch):
    """The bytes behind every download button AppTest renders, by media file id (AppTest exposes only the URL)."""
    files = {}
    original = MemoryMediaFileStorage.load_and_get_id

    def keep(self, path_or_data, mimetype, kind, filename=None):
        file_id = original(self, path_or_data, mimetype, kind, filename)
        files[file_id] = path_or_data
        return file_id

    monkeypatch.setattr(MemoryMediaFileStorage, "load_and_get_id", keep)
    return files


def download_text(at, downloads, label) -> str:
    url = next(b.proto.url for b in at.get("download_button") if b.label == label)
    data = downloads[url.rsplit("/", 1)[-1].split(".")[0]]
    return data.decode() if isinstance(data, bytes) else data


def evaluated_scenario(at, downloads) -> tc.Scenario:
    """The scenario the Plan page evaluated, read back from its TOML download."""
    return tc.loads_scenario(download_text(at, downloads, "Download this scenario (TOML)"))


def test_plan_response_length_keeps_the_tails_shape(downloads):
    at = run("tcocalc/app/plan.py")
    w0 = evaluated_scenario(at, downloads).workload
    assert (w0.response_tokens_mean, w0.response_tokens_p99) == (4000.0, 16000.0)  # scenarios/default.toml
    before = metric(at, "Useful samples/s")
    at.number_input(key="resp_mean").set_value(6000.0).run()
    assert not at.exception and not at.error
    w = evaluated_scenario(at, downloads).workload
    assert w.response_tokens_mean == 6000.0
    assert w.response_tokens_p99 == pytest.approx(24000.0)  # p99 / mean stays 4 (Scenario.with_response_mean)
    assert w.response_tokens_max == w0.response_tokens_max  # the cap is a limit, not part of the shape
    assert metric(at, "Useful samples/s") != before


def test_plan_colocated_keeps_one_pool(downloads):
    at = run("tcocalc/app/plan.py")
    at.number_input(key="generator_gpus").set_value(24)
    at.selectbox(key="generator_hw").select("B200")
    at.selectbox(key="mode").select("colocated").run()
    assert not at.exception and not at.error, [e.value for e in at.error]
    scn = evaluated_scenario(at, downloads)
    assert scn.orchestration.mode == "colocated"
    assert (scn.generator.gpus, scn.generator.hardware) == (scn.trainer.gpus, scn.trainer.hardware) == (8, "H100")
    assert at.subheader[0].value == "8 GPUs (one colocated pool)"
    at.selectbox(key="mode").select("async").run()  # two pools again: the generator widgets count
    scn = evaluated_scenario(at, downloads)
    assert (scn.generator.gpus, scn.generator.hardware) == (24, "B200")


def test_plan_metrics_table_is_the_reports(downloads):
    at = run("tcocalc/app/plan.py")
    frame = at.dataframe[0].value
    report = tc.evaluate(evaluated_scenario(at, downloads))
    # the table reads like the tiles (issue 39, N16); the metrics CSV download keeps the numbers
    from tcocalc.reports import readable_metrics

    assert frame.equals(readable_metrics(report))


def test_plan_upload_errors_are_the_librarys():
    at = run("tcocalc/app/plan.py")
    at.file_uploader(key="upload").set_value(("big.toml", b"# " + b"x" * 300_000 + b"\n", "application/toml")).run()
    assert not at.exception
    assert f"{tc.MAX_SCENARIO_BYTES:,} bytes or under" in at.error[0].value
    at.file_uploader(key="upload").set_value(("bad.toml", b"[model]\nname = 'Qwen3-8B'\n[trainer]\nhardware = 'H100'\n"
                                                        b"gpus = -4\n", "application/toml")).run()
    assert not at.exception and "trainer.gpus" in at.error[0].value
    at.file_uploader(key="upload").set_value(("bin.toml", b"\xff\xfe\x00", "application/toml")).run()
    assert not at.exception and "UTF-8" in at.error[0].value


def test_cost_server_year_of_an_nvl72_rack():
    at = run("tcocalc/app/cost.py")
    at.selectbox(key="cost_hw").select("GB200-NVL72").run()
    assert not at.exception and not at.error
    b = tc.gpu_hour_cost(tc.default_cost_inputs("GB200-NVL72"))
    assert at.number_input(key="server_price").value == b.inputs.server_price_usd  # the rack's, not the H200's
    value = metric(at, "Per server-year (72 GPUs)")
    assert value.endswith(" USD")
    expected = b.usd_per_gpu_hour * 72 * 8760 * b.inputs.utilization
    assert float(value.split()[0].replace(",", "")) == pytest.approx(expected, abs=0.5)
    assert metric(at, "Ownership cost") == f"{b.usd_per_gpu_hour:.3f} USD/GPU-h"


def test_cost_page_offers_the_accelerators_with_cost_defaults():
    at = run("tcocalc/app/cost.py")
    assert at.selectbox(key="cost_hw").options == tc.cost_default_hardware()


def test_pages_keep_sane_inputs_across_page_switches():
    """Streamlit drops the state of widgets a page did not draw: coming back starts from the defaults again."""
    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=180).run()
    at.switch_page("tcocalc/app/cost.py").run()
    price = at.number_input(key="server_price").value
    at.switch_page("tcocalc/app/plan.py").run()
    at.switch_page("tcocalc/app/cost.py").run()
    assert at.number_input(key="server_price").value == price
    at.switch_page("tcocalc/app/plan.py").run()
    assert not at.exception and not at.error
    assert at.number_input(key="trainer_gpus").value == 8
    assert at.subheader[0].value.startswith("Split 8 trainer : 8 generator")


# ---------------------------------------------------------------- issue 16 item 3: the app follows what it shows
DEFAULT = ROOT / "scenarios" / "default.toml"


def test_plan_simulates_and_downloads_the_solved_split(downloads):
    """Solve + simulate: the simulation and the TOML download are the split shown, not the unsolved one."""
    at = run("tcocalc/app/plan.py")
    at.toggle(key="solve").set_value(True)
    at.toggle(key="simulate").set_value(True).run()
    assert not at.exception and not at.error, [e.value for e in at.error]
    scn0 = tc.load_scenario(DEFAULT)
    solved = tc.solve_split(scn0, objective="usd_per_useful_sample").scenario
    assert (solved.trainer.gpus, solved.generator.gpus) != (scn0.trainer.gpus, scn0.generator.gpus)
    split = f"{solved.trainer.gpus} trainer : {solved.generator.gpus} generator GPUs"
    assert at.subheader[0].value == f"Split {split} (solved)"
    sim = tc.simulate(solved, steps=12, seed=0).metrics
    caption = next(c.value for c in at.caption if c.value.startswith("Simulated"))
    assert caption.startswith(f"Simulated on {split}: {sim['useful_samples_per_s']:.3g} useful samples/s, "
                              f"trainer idle {sim['trainer_idle_fraction']:.0%} (analytical")
    saved = evaluated_scenario(at, downloads)
    assert (saved.trainer.gpus, saved.generator.gpus) == (solved.trainer.gpus, solved.generator.gpus)
    assert saved.name == f"{scn0.name}-solved"
    assert saved.description.startswith(f"Split solved by tcocalc for usd_per_useful_sample: {split} (before "
                                        f"solving: 8 trainer : 8 generator GPUs).")
    assert saved.description.endswith(scn0.description)
    assert saved.with_values({"name": solved.name, "description": solved.description}) == solved


def test_plan_inputs_come_back_from_the_url_in_a_new_session():
    """A reconnect after a server restart (or a reload) is a new session: the inputs come from the URL."""
    at = run("tcocalc/app/plan.py")
    at.number_input(key="trainer_gpus").set_value(16)
    at.number_input(key="resp_mean").set_value(6000.0)
    at.selectbox(key="mode").select("sync")
    at.toggle(key="solve").set_value(True).run()
    assert not at.exception and not at.error
    params = dict(at.query_params)
    # the solved split filled the inputs (issue 29 item 4), so the URL holds it
    n_t, n_g = at.number_input(key="trainer_gpus").value, at.number_input(key="generator_gpus").value
    assert (n_t, n_g) != (16, 8) and n_t + n_g == 24
    assert params == {"scenario": "default", "trainer_gpus": str(n_t), "generator_gpus": str(n_g), "resp_mean": "6000",
                      "mode": "sync", "solve": "true"}
    fresh = AppTest.from_file(str(ROOT / "tcocalc/app/plan.py"), default_timeout=180)
    fresh.query_params.update(params)
    fresh.run()
    assert not fresh.exception and not fresh.error and not fresh.warning
    assert fresh.number_input(key="trainer_gpus").value == n_t
    assert fresh.number_input(key="resp_mean").value == 6000.0
    assert fresh.selectbox(key="mode").value == "sync" and fresh.toggle(key="solve").value
    assert fresh.subheader[0].value == at.subheader[0].value
    assert metric(fresh, "Useful samples/s") == metric(at, "Useful samples/s")
    fresh.number_input(key="prompts").set_value(32).run()  # the first edit keeps every other input
    assert fresh.number_input(key="resp_mean").value == 6000.0 and fresh.selectbox(key="mode").value == "sync"
    assert dict(fresh.query_params)["prompts"] == "32"


def reconnect(at: AppTest) -> AppTest:
    """What a server restart does to ``at``'s tab: a new session whose first run gets the page's URL and the
    browser's widget values, among them an edit not yet run (AppTest has no public way to send them to a fresh
    session, hence its ``_run``; tests/e2e/test_e2e.py restarts a real server)."""
    fresh = AppTest.from_file(str(ROOT / "tcocalc/app/plan.py"), default_timeout=180)
    fresh.query_params.update(dict(at.query_params))
    return fresh._run(at._tree.get_widget_states())


def test_plan_a_reconnect_keeps_the_edit_that_sent_it():
    """The edit whose rerun reconnects the tab wins over the URL, written before it; the other inputs stay."""
    at = run("tcocalc/app/plan.py")
    at.number_input(key="trainer_gpus").set_value(16).run()
    at.number_input(key="resp_mean").set_value(6000.0).run()
    at.number_input(key="generator_gpus").set_value(24)  # the edit, run by the new session
    fresh = reconnect(at)
    assert not fresh.exception and not fresh.error and not fresh.warning
    assert fresh.number_input(key="generator_gpus").value == 24
    assert fresh.number_input(key="trainer_gpus").value == 16 and fresh.number_input(key="resp_mean").value == 6000.0
    assert fresh.subheader[0].value == "Split 16 trainer : 24 generator GPUs"
    assert dict(fresh.query_params) == {"scenario": "default", "trainer_gpus": "16", "generator_gpus": "24",
                                        "resp_mean": "6000"}
    at.selectbox(key="scenario_file").select("semianalysis_qwen3_235b_h200")  # or the edit switches the scenario
    fresh = reconnect(at)
    assert not fresh.exception and not fresh.error and not fresh.warning
    ref = run("tcocalc/app/plan.py").selectbox(key="scenario_file").select("semianalysis_qwen3_235b_h200").run()
    assert fresh.subheader[0].value == ref.subheader[0].value  # the new file's values, not the old URL's
    assert dict(fresh.query_params) == dict(ref.query_params) == {"scenario": "semianalysis_qwen3_235b_h200"}


def test_plan_url_values_that_cannot_be_restored_are_named():
    at = AppTest.from_file(str(ROOT / "tcocalc/app/plan.py"), default_timeout=180)
    at.query_params.update({"scenario": "semianalysis_qwen3_235b_h200", "trainer_gpus": "48", "turns": "abc",
                            "prompts": "0", "mode": "warp", "colour": "red"})
    at.run()
    assert not at.exception and not at.error
    assert at.selectbox(key="scenario_file").value == "semianalysis_qwen3_235b_h200"
    assert at.number_input(key="trainer_gpus").value == 48  # restored
    assert at.number_input(key="generator_gpus").value == 192  # the file's
    (warning,) = at.warning
    for bad in ("turns=abc", "prompts=0", "mode=warp", "colour=red"):
        assert bad in warning.value
    assert "trainer_gpus" not in warning.value
    at = AppTest.from_file(str(ROOT / "tcocalc/app/plan.py"), default_timeout=180)
    at.query_params.update({"scenario": "no_such_scenario", "trainer_gpus": "48"})
    at.run()
    assert not at.exception and "'no_such_scenario'" in at.warning[0].value
    assert at.number_input(key="trainer_gpus").value == 8


def test_plan_url_inputs_of_an_uploaded_file_wait_for_the_file():
    toml = DEFAULT.read_bytes()
    at = run("tcocalc/app/plan.py")
    at.file_uploader(key="upload").set_value(("mine.toml", toml, "application/toml")).run()
    at.number_input(key="trainer_gpus").set_value(24).run()
    params = dict(at.query_params)
    assert params == {"scenario": "mine.toml", "trainer_gpus": "24"}
    fresh = AppTest.from_file(str(ROOT / "tcocalc/app/plan.py"), default_timeout=180)
    fresh.query_params.update(params)
    fresh.run()
    assert not fresh.exception and not fresh.error
    assert "mine.toml" in fresh.warning[0].value and "upload it again" in fresh.warning[0].value
    assert fresh.number_input(key="trainer_gpus").value == 24  # the tab's inputs, waiting for their file
    assert not fresh.metric  # no plan of another file meanwhile (issue 31)
    assert dict(fresh.query_params) == params  # kept for the file
    fresh.file_uploader(key="upload").set_value(("mine.toml", toml, "application/toml")).run()
    assert not fresh.warning
    assert fresh.number_input(key="trainer_gpus").value == 24


def test_plan_scenario_box_is_off_while_a_file_is_uploaded():
    at = run("tcocalc/app/plan.py")
    text = (ROOT / "scenarios" / "semianalysis_qwen3_235b_h200.toml").read_bytes()
    at.file_uploader(key="upload").set_value(("mine.toml", text, "application/toml")).run()
    assert at.selectbox(key="scenario_file").disabled
    assert any(i.value == "The uploaded file mine.toml is in use; remove it to use the scenario box."
               for i in at.info)
    assert at.number_input(key="trainer_gpus").value == 64  # the uploaded file's
    at.file_uploader(key="upload").set_value(None).run()  # removed: the scenario box counts again
    assert not at.selectbox(key="scenario_file").disabled
    assert not any("uploaded file" in i.value for i in at.info)
    assert at.number_input(key="trainer_gpus").value == 8


def test_plan_colocated_shows_one_pool_and_one_step_is_singular():
    at = run("tcocalc/app/plan.py")
    at.number_input(key="trainer_gpus").set_value(16)
    at.selectbox(key="mode").select("colocated").run()
    assert not at.exception and not at.error
    assert at.subheader[0].value == "16 GPUs (one colocated pool)"
    at.selectbox(key="mode").select("one_step_off").run()
    assert metric(at, "Mean staleness [policy versions]") == "1"  # staleness counts policy versions (N10)
    assert at.toggle(key="simulate").label == "Simulate 12 steps"
    at.toggle(key="simulate").set_value(True).run()
    assert not at.error
    assert any(c.value.startswith("Simulated on 16 trainer : 8 generator GPUs:") for c in at.caption)


def test_compare_labels_what_is_not_offered():
    at = run("tcocalc/app/compare.py")
    at.selectbox(key="compare_metric").select("cost_ratio_vs_tinker").run()
    assert not at.exception
    frame = at.dataframe[0].value.T  # metrics in words (issue 29 item 4): an empty cell where there is no value
    missing = sorted(frame.index[frame["vs Tinker (ours)"] == ""])
    assert missing  # the GB300 scenarios' model is not on Tinker
    spec = json.loads(at.get("plotly_chart")[0].proto.spec)
    notes = spec["layout"].get("annotations", [])
    assert sorted(a["x"] for a in notes if a["text"] == "not offered") == missing
    assert any("vs Tinker (ours): not offered for " + ", ".join(missing) in c.value for c in at.caption)


def test_cost_errors_name_the_input_by_its_label():
    at = run("tcocalc/app/cost.py")
    at.number_input(key="server_price").set_value(2e9).run()
    assert not at.exception
    (error,) = at.error
    assert error.value.startswith("Server price [USD]: ")
    assert "server_price_usd" not in error.value and "Error" not in error.value


def test_plan_shows_the_simulations_progress(monkeypatch):
    """tc.simulate(..., progress=callable(done, total)) drives a progress bar, cleared when the run is done."""
    real, given = tc.simulate, []

    def simulate(scenario, *, steps, seed=0, max_events=50_000_000, progress=None):
        given.append(progress)
        for done in (0, steps // 2, steps):
            progress(done, steps)
        return real(scenario, steps=steps, seed=seed)

    monkeypatch.setattr(tc, "simulate", simulate)
    at = run("tcocalc/app/plan.py")
    at.number_input(key="prompts").set_value(37)  # a run no other test has kept
    at.toggle(key="simulate").set_value(True).run()
    assert not at.exception and not at.error, [e.value for e in at.exception]
    assert len(given) == 1 and callable(given[0])
    assert not at.get("progress")
    assert any(c.value.startswith("Simulated on 8 trainer : 8 generator GPUs:") for c in at.caption)


def test_plan_names_which_accounting_each_cost_is():
    """Issue 14 item 3: our accounting and the SemiAnalysis-style one side by side, each tile saying which it is;
    the values are the library's (Prime RL scenario: SemiAnalysis-style cost and ratio)."""
    at = run("tcocalc/app/plan.py")
    at.selectbox(key="scenario_file").set_value("semianalysis_qwen3_235b_h200").run()
    assert not at.exception and not at.error
    report = tc.evaluate(tc.load_scenario(ROOT / "scenarios" / "semianalysis_qwen3_235b_h200.toml"))
    m = report.metrics
    assert metric(at, "vs Tinker (ours)") == f"{m['cost_ratio_vs_tinker']:.2f}x"
    assert metric(at, "vs Tinker (SemiAnalysis-style)") == f"{m['semianalysis_cost_ratio_vs_tinker']:.2f}x"
    assert metric(at, "Cost per M tokens (SemiAnalysis-style)").startswith(f"{m['semianalysis_usd_per_mtok']:.3g}")


def test_plan_disaggregated_generator_shows_its_pools_and_errors_by_label():
    """Issue 13 item 3 in the app: the Prefill/decode box sets generator.disaggregated; the page names the pools,
    and a colocated run, which has no separate generator GPUs, is refused naming the boxes, not a field."""
    at = run("tcocalc/app/plan.py")
    at.selectbox(key="scenario_file").select("gb300_agentic_96").run()
    at.selectbox(key="serving").select("disaggregated").run()
    assert not at.exception and not at.error, [e.value for e in at.error]
    assert any("prefill GPU" in c.value and "decode in" in c.value for c in at.caption)
    assert dict(at.query_params).get("serving") == "disaggregated"
    at.selectbox(key="mode").select("colocated").run()
    assert at.error and "'Prefill/decode'" in at.error[0].value, at.error[0].value
    assert "generator.disaggregated" not in at.error[0].value


def test_plan_nvlink_box_sets_both_pools_and_the_trainer_follows(downloads):
    """The NVLink box sets [trainer] and [generator] multinode_nvlink (docs/rl-modeling.md §3.7): on the GB300
    agentic scenario, per server the trainer's EP and PP traffic between 4-GPU trays takes the scale-out network and
    its capacity falls (2.95 -> 2.80 samples/s); the download carries both keys and the URL keeps the choice."""
    at = run("tcocalc/app/plan.py")
    at.selectbox(key="scenario_file").select("gb300_agentic_96").run()
    assert at.selectbox(key="nvlink").value == "multi-node"

    def capacity():  # the metrics CSV keeps the numbers (the table on the page reads like the tiles)
        import io

        import pandas as pd

        frame = pd.read_csv(io.StringIO(download_text(at, downloads, "Download metrics (CSV)")))
        return dict(zip(frame["metric"], frame["value"], strict=True))["trainer_capacity_samples_per_s"]

    before = capacity()
    at.selectbox(key="nvlink").select("per server").run()
    assert not at.exception and not at.error, [e.value for e in at.error]
    scn = evaluated_scenario(at, downloads)
    assert (scn.trainer.multinode_nvlink, scn.generator.multinode_nvlink) == (False, False)
    assert capacity() == pytest.approx(tc.evaluate(scn).metrics["trainer_capacity_samples_per_s"], rel=1e-9)
    assert capacity() < before
    assert dict(at.query_params).get("nvlink") == "per server"


def test_plan_calibrates_from_typed_times_and_labels_the_plan():
    """The Plan page's "Calibrate from a run": a step time typed by hand fits the factors, the before/after table
    shows, the KPIs are labelled calibrated with the calibrated typical error, and the plan's step time is the
    library's tc.calibrate of the same scenario; removing the calibration restores the uncalibrated page."""
    at = run("tcocalc/app/plan.py")
    assert any("Uncalibrated model" in c.value for c in at.caption)
    before = metric(at, "Useful samples/s")
    at.number_input(key="cal_step_time_s").set_value(150.0).run()
    at.button(key="cal_go").click().run()
    assert not at.exception and not at.error
    assert at.subheader[0].value.endswith(", calibrated")
    assert any("Calibrated from figures typed on the Plan page" in c.value for c in at.caption)
    cal = tc.calibrate(tc.load_scenario("default"), {"step_time_s": 150.0})
    expected = tc.evaluate(tc.load_scenario("default").with_run_calibration(cal)).metrics["useful_samples_per_s"]
    assert float(metric(at, "Useful samples/s").split()[0]) == pytest.approx(expected, rel=0.01)  # 3 digits shown
    assert metric(at, "Useful samples/s") != before
    # no length typed: the responses factor is fitted and the page says what mean the times imply
    assert cal.factor("responses") != 1.0
    assert any(c.value == cal.inferred_response_line[0].upper() + cal.inferred_response_line[1:] for c in at.caption)
    assert "one standard deviation" in cal.inferred_response_line
    # each fitted factor shows how well the times determine it (RunCalibration.spread)
    shown = [d.value for d in at.dataframe if "one standard deviation" in d.value.columns]
    assert shown, [list(d.value.columns) for d in at.dataframe]
    want = cal.factors_frame().set_index("factor")["one standard deviation"]
    table = shown[0]
    got = table.set_index(table.columns[0])["one standard deviation"]
    assert list(got) == list(want) and got.iloc[-1].startswith("x")
    at.button(key="cal_clear").click().run()
    assert metric(at, "Useful samples/s") == before and not at.subheader[0].value.endswith(", calibrated")


def test_plan_calibration_errors_name_the_key():
    at = run("tcocalc/app/plan.py")
    at.button(key="cal_go").click().run()
    assert not at.exception
    assert any("measurements" in e.value and "no time measured" in e.value for e in at.error)


# ---------------------------------------------------------------- issue 31 item 2: the page shows the file uploaded
def _upload(at: AppTest, name: str, text: str) -> AppTest:
    return at.file_uploader(key="upload").set_value((name, text.encode(), "application/toml")).run()


def test_plan_input_limits_are_the_scenario_models():
    """One source of limits: each numeric input's bounds are its field's (Scenario.field_bounds)."""
    from tcocalc.app import shared

    for key, path in shared.FIELDS.items():
        low, high, low_in, high_in = tc.Scenario.field_bounds(path)
        kind, lo, hi = shared.number_limits(key)
        assert hi == high if high_in else hi < high, key
        assert lo == (0 if key == "draft_tokens" else low) if low_in or key == "draft_tokens" else low < lo, key


#: The fields the Plan page edits, each set in an uploaded file to values the old widget limits (100,000 GPUs, a
#: 1,000-step bound, groups of 10,000, 1e7 tokens, $1e4/GPU-h) turned into the widget's minimum.
BEYOND_OLD_LIMITS = {"trainer.gpus": 200_000, "workload.group_size": 20_000, "orchestration.max_staleness": 10_000.0,
                     "workload.prompt_tokens": 2e7, "economics.usd_per_gpu_hour": 5e4, "sandbox.tool_call_s": 5e5,
                     "workload.prompts_per_step": 2_000_000, "generator.gpus": 150_000}


@pytest.mark.parametrize("path", sorted(BEYOND_OLD_LIMITS))
def test_plan_shows_an_uploaded_files_values_as_they_are(path, downloads):
    """Either the plan of exactly the file's values (its TOML download carries them) or a red error; the widget
    shows the file's value, never its minimum."""
    from tcocalc.app import shared

    value = BEYOND_OLD_LIMITS[path]
    scn = tc.load_scenario("default").with_values({path: value})
    at = _upload(run("tcocalc/app/plan.py"), "beyond.toml", scn.to_toml())
    assert not at.exception, [e.value for e in at.exception]
    key = next(k for k, f in shared.FIELDS.items() if f == path)
    assert at.number_input(key=key).value == value
    if not at.error:
        section, field = path.split(".")
        assert getattr(getattr(evaluated_scenario(at, downloads), section), field) == value


def test_plan_a_reconnect_with_an_uploaded_file_keeps_the_edit():
    """A server restart loses the uploaded file: the tab says so at once, shows no other file's plan, and keeps
    every input, the edit that reconnected it included, for when the file is uploaded again."""
    toml = (ROOT / "scenarios" / "semianalysis_qwen3_235b_h200.toml").read_bytes()
    at = run("tcocalc/app/plan.py")
    at.file_uploader(key="upload").set_value(("mine.toml", toml, "application/toml")).run()
    at.number_input(key="trainer_gpus").set_value(48).run()
    at.number_input(key="generator_gpus").set_value(200)  # the edit, run by the new session
    fresh = reconnect(at)
    assert not fresh.exception and not fresh.error
    assert "mine.toml" in fresh.warning[0].value and "upload it again" in fresh.warning[0].value
    assert not fresh.metric
    assert dict(fresh.query_params)["generator_gpus"] == "200"  # a reload keeps the edit too
    fresh.number_input(key="turns").set_value(3).run()  # another change while waiting: kept as well
    fresh.file_uploader(key="upload").set_value(("mine.toml", toml, "application/toml")).run()
    assert not fresh.exception and not fresh.error and not fresh.warning
    assert (fresh.number_input(key="trainer_gpus").value, fresh.number_input(key="generator_gpus").value,
            fresh.number_input(key="turns").value) == (48, 200, 3)
    assert fresh.subheader[0].value == "Split 48 trainer : 200 generator GPUs"


def test_plan_a_link_with_simulate_keeps_it_on_reload():
    fresh = AppTest.from_file(str(ROOT / "tcocalc/app/plan.py"), default_timeout=180)
    fresh.query_params.update({"scenario": "default", "simulate": "true"})
    fresh.run()
    assert not fresh.exception and not fresh.error
    assert fresh.toggle(key="simulate").value
    assert any(c.value.startswith("Simulated on") for c in fresh.caption)
    assert dict(fresh.query_params) == {"scenario": "default", "simulate": "true"}


# ---------------------------------------------------------------- issue 31 item 7: bounded work
def test_plan_a_4000_phase_file_is_not_simulated_for_20000_steps(monkeypatch):
    """12 steps of a file with many phases are at least 5 a phase: the page bounds the work up front and says what
    it would take, and never starts the simulator."""
    def refuse(*_a, **_k):
        raise AssertionError("the simulator ran")

    monkeypatch.setattr(tc, "simulate", refuse)
    text = DEFAULT.read_text().replace("steps = 200", "steps = 100000") + "".join(
        f"[[phases]]\nname=\"{i}\"\nstart_step={i}\n" for i in range(1, 1100))
    at = _upload(run("tcocalc/app/plan.py"), "phases.toml", text)
    at.toggle(key="simulate").set_value(True).run()
    assert not at.exception, [e.value for e in at.exception]
    (error,) = at.error
    steps = tc.simulated_steps(tc.loads_scenario(text), 12)
    assert steps == 5 * 1099 + 12  # the last phase, most of the run, takes its share of the 12
    assert f"{steps:,} simulated steps (1,100 phases, at least 5 steps each)" in error.value
    assert "tcocalc run FILE --simulate" in error.value


def test_plan_a_long_simulation_runs_fewer_steps_and_says_so(monkeypatch):
    real = tc.simulated_events_estimate
    monkeypatch.setattr(tc, "simulated_events_estimate", lambda scn, steps: real(scn, steps) * 1000)
    at = run("tcocalc/app/plan.py")
    at.number_input(key="prompts").set_value(35)  # a run no other test has kept
    at.toggle(key="simulate").set_value(True).run()
    assert not at.exception and not at.error, [e.value for e in at.error]
    assert any(c.value.startswith("5 steps simulated: 12 would take more than") or
               "steps simulated: 12 would take" in c.value for c in at.caption)
