"""The RL model judged in groups (issue 36 items 1-2): NeMo RL in-sample, other frameworks' published runs, stages,
leave-one-framework-out; and every report's stated typical error measured out of sample in its regime."""

from __future__ import annotations

import io
import re

import pytest

import tcocalc as tc
from tcocalc.catalog import framework_cases as fc
from tcocalc.catalog.calibration import parse_rl_calibration
from tcocalc.catalog.regimes import parse_regime_errors, regime_errors, regime_of
from tcocalc.cli.main import main
from tcocalc.studies import validation_groups as vg
from tests.conftest import ROOT, csv_with


@pytest.fixture(scope="module")
def v():
    """The whole validation, recomputed (about 10 s)."""
    return vg.validate()


def test_every_development_source_loads_and_a_broken_one_fails_by_name(tmp_path, monkeypatch):
    """Each case's scenario files load; a missing or broken one raises naming the file and the case."""
    for case in fc.framework_cases():
        for name in (case["scenario"], case["baseline"]):
            if name:
                assert fc.case_scenario(name, case["id"]).workload.prompts_per_step > 0
    for case in fc.stage_cases():
        fc.case_scenario(case["scenario"], case["id"])
    (tmp_path / "validation" / "frameworks").mkdir(parents=True)
    (tmp_path / "validation" / "frameworks" / "broken.toml").write_text("[model]\nname = 'no-such-model'\n")
    monkeypatch.setattr(fc, "data_dir", lambda: tmp_path)
    fc.case_scenario.cache_clear()
    try:
        for name in ("broken", "gone"):
            with pytest.raises(tc.DataFileError, match=rf"{name}\.toml.*'XX-1'.*no longer loads"):
                fc.case_scenario(name, "XX-1")
    finally:
        fc.case_scenario.cache_clear()


def test_scenario_files_cite_their_original_source():
    """Each development-set file opens with a comment header naming a public source, never this machine's folders."""
    for path in sorted((ROOT / "data" / "validation" / "frameworks").glob("*.toml")):
        text = path.read_text()
        header = "".join(line for line in text.splitlines(True) if line.startswith("#"))
        assert "@" in header or "https://" in header, path.name
        assert "/work/" not in text and "../shared" not in text, path.name


def test_a_bad_case_row_names_the_field():
    text = csv_with(ROOT / "data" / "validation" / "framework_cases.csv", {("S1-1", "kind"): "throughput"})
    with pytest.raises(tc.DataFileError, match="S1-1.*kind"):
        fc.parse_framework_cases(text)


def test_a_rank_mean_stage_row_needs_the_engines_generation_and_a_switch():
    """``generation_rank_mean`` compares the engines' own generation and the rest of the wall time: a row without a
    switching_s, or whose generation is the trainer's wait, is refused naming the field."""
    path = ROOT / "data" / "validation" / "stage_cases.csv"
    # ST-03 publishes no switching_s
    with pytest.raises(tc.DataFileError, match="ST-03.*generation_rank_mean"):
        fc.parse_stage_cases(csv_with(path, {("ST-03", "generation_rank_mean"): "true"}))
    with pytest.raises(tc.DataFileError, match="ST-01.*generation_rank_mean"):
        fc.parse_stage_cases(csv_with(path, {("ST-01", "generation_exposed"): "true"}))


def test_the_development_set_is_every_published_figure(v):
    """Sets 1-3 and the two real verl logs: 20 step times, 1 weight-sync time, 12 speed-ups; the published
    figures as the sources give them (spot checks against the cited tables)."""
    fw = v.frameworks.set_index("id")
    assert (v.frameworks["kind"].value_counts().to_dict()) == {"step": 20, "speedup": 12, "weight_sync": 1}
    assert fw.loc["S1-4", "published"] == 749 and fw.loc["S1-5", "published"] == 520  # verl one-step-off README
    assert fw.loc["S1-11", "published"] == 699 and fw.loc["S1-12", "published"] == 566  # its VLLM+Megatron rows
    assert fw.loc["S1-10", "published"] == pytest.approx((512 * 12 / 566) / (512 * 16 / 699), abs=5e-4)
    assert fw.loc["AR-07", "published"] == 2260  # AReaL v0.1 log: mean of six steps
    assert fw.loc["CE-01", "published"] == pytest.approx(11.33)
    for sid, lo, hi in (("S1-1", 1.15, 1.9), ("S1-2", 1.3, 2.4), ("S1-3", 1.8, 3.8)):
        assert fw.loc[sid, "band"] == f"{lo:g}-{hi:g}"


def test_each_row_is_compared_honestly(v):
    """The error is the prediction against the published figure; a step row is inside at ±25%, a speed-up inside its
    band; the side of 1 is the prediction's against the published one's."""
    for _, r in v.frameworks.iterrows():
        assert r["error [%]"] == pytest.approx(100 * (r["predicted"] / r["published"] - 1))
        if r["kind"] == "speedup":
            lo, hi = map(float, r["band"].split("-"))
            assert r["within"] == (lo <= r["predicted"] <= hi)
            assert (r["side of 1"] == "right") == ((r["predicted"] > 1) == (r["published"] > 1))
        else:
            assert r["within"] == (abs(r["error [%]"]) <= 25)


def test_groups_give_median_share_worst_rows_and_speedups(v):
    g = v.groups.set_index("group")
    assert list(g.index) == list(vg.GROUPS)
    nemo = g.loc["NeMo RL (in-sample)"]
    assert nemo["rows"] == 51 and nemo["basis"] == "in-sample"
    assert nemo["median |error| [%]"] == pytest.approx(tc.rl_validation_summary()["nemo_median_abs_error_pct"])
    assert "32 of 32" in nemo["note"]
    dev = g.loc["other frameworks (development set)"]
    err = v.frameworks["error [%]"].astype(float).abs()
    assert dev["median |error| [%]"] == pytest.approx(err.median())
    assert dev["within"].startswith(f"{int(v.frameworks['within'].sum())} of {len(v.frameworks)}")
    worst = v.frameworks.loc[err.idxmax(), "id"]
    assert dev["worst"].startswith(worst)
    for sid in ("S1-1", "S1-2", "S1-3"):
        assert sid in dev["speed-ups"]
    assert "off by 2x" in g.loc["stages", "note"]


def test_stage_rows_are_the_models_uncalibrated_stage_times(v):
    """A stage row's prediction is what the uncalibrated model gives for that stage (tc.calibrate's 'before')."""
    st = v.stages
    row = st[(st["id"] == "ST-03") & (st["stage"] == "training")].iloc[0]
    scn = fc.case_scenario("verl-retool-7b-h20-coloc-32")
    fit = tc.calibrate(scn, {"step_time_s": 375.47, "training_s": 111.84})
    assert row["predicted [s]"] == pytest.approx(next(s.before_s for s in fit.stages if s.stage == "training_s"))
    assert set(st["stage"]) >= {"generation", "training", "log-prob", "weight sync", "switching (colocated refit)",
                                "switching (colocated)"}
    assert st.loc[st["id"] == "REFIT-07", "in-sample"].all()  # a row that fitted a constant is marked


def test_a_run_whose_published_update_needs_more_than_the_mfu_ceiling_is_input_limited(v):
    """The busy MFU a published update implies under the scenario's workload is the model's busy MFU x its update
    time / the published one (the update's FLOPs are the model's) [hand-derived]: ST-01's colocated verl run
    (volcengine/verl recipe/one_step_off_policy/README.md: update 286 s on 16 H20 for 512 x 12 responses of the
    assumed 3,000 tokens) needs about 136%, above the 75% ceiling, so its generation, update and log-prob rows are
    marked input-limited (the run trained fewer tokens than assumed) and the summary says so; a switch only where
    its published figure holds the slowest engine's excess and the model's switch and excess at the lengths the
    run's times imply come within 2x of it (test_a_rank_mean_switch_holds_the_last_engines_excess); ST-03's update
    (about 28%) is not input-limited."""
    st = v.stages
    row = st[(st["id"] == "ST-01") & (st["stage"] == "training")].iloc[0]
    mfu = tc.evaluate(fc.case_scenario("verl-onestep-7b-coloc"), advice=False).metrics["trainer_mfu_busy"]
    assert row["implied busy MFU"] == pytest.approx(mfu * row["predicted [s]"] / 286.0, rel=1e-9)
    assert 1.2 < row["implied busy MFU"] < 1.5
    ceiling = tc.shipped_calibration().rl["calibrate_mfu_ceiling"]
    marked = st["note"].fillna("").str.startswith("input-limited")
    for case_id, rows in st[st["id"].str.startswith("ST-")].groupby("id"):
        implied = rows["implied busy MFU"].dropna()
        over = len(implied) and float(implied.iloc[0]) > ceiling
        for _, r in rows.iterrows():
            evidence = r["stage"] == "switching (colocated)" and "at the lengths the run's" in str(r["note"])
            assert marked[r.name] == bool(over and (r["stage"] in ("generation", "training", "log-prob")
                                                    or (evidence and 0.5 < _at(r) / r["published [s]"] < 2.0))), (
                case_id, r["stage"])
    assert not marked[(st["id"] == "ST-03")].any()
    note = v.groups.set_index("group").loc["stages", "note"]
    assert "input-limited" in note and "ST-01 136%" in note and "not explained: " in note


def _at(row) -> float:
    """The switch + excess a rank-mean switching row's note gives at the implied lengths [s]."""
    return float(re.search(r"switch \+ excess ([0-9.,]+) s", row["note"]).group(1).replace(",", ""))


def test_a_rank_mean_switch_holds_the_last_engines_excess(v):
    """verl logs ``generate_sequences`` as the mean over its ranks (``reduce_timing``, ``ReduceOp.AVG``) and ``gen``
    as the driver's wall time, which ends with the slowest engine (volcengine/verl@e55d1431:verl/workers/
    fsdp_workers.py and megatron_workers.py ``generate_sequences``; docs/rl-modeling.md §3.10): the stage table
    compares one engine's own generation with the published generation and the switch plus the last engine's
    excess over it with the rest of ``gen``. Hand-derived checks: one engine with 1/engines of the prompts is
    the model on ``tp`` GPUs (its generation at most the whole batch's, within 1.5% on the GPG logs, where every
    engine's 1,280 responses reach the 1,024 cap); the assumed 3,000-token mean puts every one-step-off engine's
    longest at the 20,480 cap, so no excess; at the lengths ST-01's published times imply the slowest of its 8
    engines ends about 50 s after the mean, against the README's 74 s of gen less generate_sequences (within 2x,
    so named input-limited); ST-07's 17 s against 45 s is not (left unexplained)."""
    st = v.stages
    for cid, name in (("ST-05", "verl-gpg-qwen2-7b-fsdp-8"), ("ST-06", "verl-gpg-qwen2-7b-megatron-8")):
        scn = fc.case_scenario(name)
        last, mean = vg._engine_spread(scn)
        assert 0.985 * last < mean <= last
        rows = st[st["id"] == cid].set_index("stage")
        assert rows.loc["generation", "predicted [s]"] == pytest.approx(mean, rel=1e-9)
        case = fc.stage_case(cid)
        fit = tc.calibrate(scn, {k: case[k] for k in ("step_time_s", "generation_s", "training_s", "logprob_s",
                                                       "switching_s")})
        switch = next(s.before_s for s in fit.stages if s.stage == "switching_s")
        assert rows.loc["switching (colocated)", "predicted [s]"] == pytest.approx(switch + last - mean, rel=1e-6)
    last, mean = vg._engine_spread(fc.case_scenario("verl-onestep-7b-coloc"))
    assert last - mean == pytest.approx(0.0, abs=1e-6 * last)
    sw = st[(st["stage"] == "switching (colocated)")].set_index("id")
    assert sw.loc["ST-01", "note"].startswith("input-limited") and 37.0 < _at(sw.loc["ST-01"]) < 74.0 * 2
    assert not str(sw.loc["ST-07", "note"]).startswith("input-limited") and _at(sw.loc["ST-07"]) < 45.0 / 2
    unpinned = fc.case_scenario("verl-onestep-7b-coloc").with_values({"generator.tp": None})
    assert vg._engine_spread(unpinned) is None  # the engines are the model's choice: not split


def test_a_step_shorter_than_the_assumed_update_at_the_mfu_ceiling_is_input_limited(v):
    """A development-set step row's least implied busy MFU is the model's busy MFU x its trainer time per step / the
    published step (the trainer's busy time is at most the step in every mode) [hand-derived]. AReaL v0.3's 7B
    asynchronous run (91.4 s on 48 trainer H800; inclusionAI/AReaL blog/AReaL_v0_3.md Table 2) needs about 103%
    under the assumed 8,000-token mean responses, so the row is named input-limited; verl's colocated ReTool run
    (about 11%) is not; the group's note gives the figures without them."""
    fw = v.frameworks.set_index("id")
    scn = fc.case_scenario("areal-7b-h800-async-48x144")
    rep = tc.evaluate(scn, advice=False)
    expected = rep.metrics["trainer_mfu_busy"] * float(rep.phase_results[0].rates.t_train[0]) / 91.4
    assert fw.loc["AR-01", "implied busy MFU >="] == pytest.approx(expected, rel=1e-9)
    ceiling = tc.shipped_calibration().rl["calibrate_mfu_ceiling"]
    for rid, r in fw.iterrows():
        limited = str(r["note"]).startswith("input-limited")
        if r["kind"] != "step":
            assert not limited and r["implied busy MFU >="] != r["implied busy MFU >="], rid  # NA off step rows
        else:
            assert limited == bool(r["implied busy MFU >="] > ceiling), rid
    assert str(fw.loc["AR-01", "note"]).startswith("input-limited") and not str(fw.loc["VE-01", "note"])
    note = v.groups.set_index("group").loc["other frameworks (development set)", "note"]
    assert "input-limited step rows (AR-01, S1-11, S1-12, S1-5" in note


def test_every_fitted_rl_constant_is_attributed_to_its_frameworks():
    """data/validation/fitted_constants.csv names every constant of data/rl_calibration.toml of kind "fitted",
    and the refit rows it names exist with role fit."""
    text = (ROOT / "data" / "rl_calibration.toml").read_text()
    parse_rl_calibration(text)
    import tomllib

    fitted = {k for k, e in tomllib.loads(text).items() if isinstance(e, dict) and e.get("kind") == "fitted"}
    listed = {c["constant"] for c in fc.fitted_constants()}
    assert fitted == listed
    refit = {c["id"]: c for c in tc.catalog.rl_cases.refit_cases()}
    for c in fc.fitted_constants():
        for rid in c["rows"]:
            if rid.startswith("REFIT-"):
                assert refit[rid]["role"] == "fit", rid


def test_leave_one_framework_out_refits_without_the_framework():
    """verl's rows are predicted with the NCCL-broadcast constants fitted on other frameworks' rows only."""
    cal, refitted, lost = vg.lofo_calibration(frozenset({"verl"}))
    assert set(refitted) == {"weight_sync_efficiency", "weight_sync_fixed_s"}
    for _value, ids in refitted.values():
        assert ids and not {"REFIT-07", "REFIT-08"} & set(ids)
    assert cal.rl["weight_sync_efficiency"] == pytest.approx(refitted["weight_sync_efficiency"][0])
    shipped, none, _ = vg.lofo_calibration(frozenset({"checkpoint-engine"}))
    assert none == {} and shipped == tc.catalog.calibration.shipped_calibration()


def test_leave_one_framework_out_refits_the_disk_constants_without_the_framework():
    """The disk-reload constants (data/rl_calibration.toml) are the least-squares fit on the relative error of
    data/validation/disk_reloads.csv's six reloads (2.86 s, 0.861 GB/s); without AReaL's reload (DR-02) the five
    others give 2.79 s and 0.90 GB/s [recomputed], and a row whose transport is not disk keeps its shipped
    prediction with a note that says so."""
    fixed, rate, ids = vg._refit_disk(frozenset())
    cal = tc.catalog.calibration.shipped_calibration().rl
    assert (fixed, rate) == (pytest.approx(cal["weight_sync_disk_fixed_s"], rel=0.01),
                             pytest.approx(cal["engine_disk_load_bytes_per_s"], rel=0.01))
    fixed, rate, ids = vg._refit_disk(frozenset({"AReaL"}))
    assert "DR-02" not in ids and len(ids) == 5
    assert (fixed, rate) == (pytest.approx(2.79, abs=0.01), pytest.approx(0.900e9, rel=0.01))
    lofo_cal, refitted, lost = vg.lofo_calibration(frozenset({"AReaL"}))
    assert "disk" not in lost and refitted["engine_disk_load_bytes_per_s"][0] == pytest.approx(rate)
    assert lofo_cal.rl["weight_sync_disk_fixed_s"] == pytest.approx(fixed)
    assert vg._refit_disk(frozenset({"prime-rl", "AReaL", "stitch"})) is None


def test_no_stated_error_is_below_the_measured_out_of_sample_error(v):
    """The figures every uncalibrated report states (data/prediction_errors.toml [regimes]) are each at least the
    leave-one-framework-out median of their regime as recomputed now; no regime without evidence states a figure,
    and every regime with evidence states one (rerun benchmarks/trust_figures.py when this fails)."""
    stated = regime_errors()
    measured = v.regimes.set_index("regime")
    assert set(stated) == set(measured.index), "run: .venv/bin/python benchmarks/trust_figures.py"
    for regime, m in measured.iterrows():
        assert stated[regime]["median_abs_error"] >= m["median_abs_error"] - 1e-9, regime
        # and not stale: the file holds today's figure rounded up to 0.1 point (a model change reruns the script)
        assert stated[regime]["median_abs_error"] <= m["median_abs_error"] + 0.001 + 1e-9, (
            f"{regime}: run .venv/bin/python benchmarks/trust_figures.py")
        assert stated[regime]["rows"] == m["rows"], regime


def test_reports_state_their_regimes_figure_or_that_there_is_none():
    dev = tc.load_scenario(ROOT / "data" / "validation" / "frameworks" / "areal01-7b-h800-sync-64x64.toml")
    regime = regime_of(dev)
    assert regime == "synchronous split, single-turn, hopper"
    t = tc.evaluate(dev, advice=False).details["trust"]
    assert t["regime"] == regime and t["typical_error"] == regime_errors()[regime]["median_abs_error"]
    line = tc.calibration_line({"calibrated": False}, t)
    assert f"±{int(-(-100 * t['typical_error'] // 1))}%" in line and regime in line
    blackwell = tc.load_scenario(ROOT / "scenarios" / "gb300_agentic_96.toml")
    t = tc.evaluate(blackwell, advice=False).details["trust"]
    assert regime_of(blackwell) not in regime_errors()
    assert t["typical_error"] is None and t["within_25pct"] is None and t["rows"] == 0
    line = tc.calibration_line({"calibrated": False}, t)
    assert "no out-of-sample evidence for this regime" in line and "±" not in line


def test_a_bad_regime_entry_names_the_field():
    text = '[regimes."colocated, single-turn, hopper"]\nmedian_abs_error = 0.5\nwithin_25pct = 0.1\nrows = 2\n' \
           'kind = "measured"\n'
    with pytest.raises(tc.DataFileError, match="colocated, single-turn, hopper.*source"):
        parse_regime_errors(text)
    with pytest.raises(tc.DataFileError, match="mode family"):
        parse_regime_errors(text.replace("colocated,", "sideways,") + 'source = "x"\n')


def test_cli_prints_every_group(capsys):
    assert main(["validate", "--groups"]) == 0
    out = capsys.readouterr().out
    for group in vg.GROUPS:
        assert group in out
    assert "Out-of-sample step-time error by regime" in out and "| S1-2 |" in out


def test_cli_groups_as_csv_is_the_summary(capsys, v):
    """`--groups --csv` prints the groups' summary as CSV (it printed the Markdown report, ignoring --csv): one
    row a group, the median |error| as a number."""
    import pandas as pd

    assert main(["validate", "--groups", "--csv"]) == 0
    got = pd.read_csv(io.StringIO(capsys.readouterr().out))
    assert list(got["group"]) == list(v.groups["group"])
    assert list(got["median |error| [%]"]) == pytest.approx(list(v.groups["median |error| [%]"]), abs=1e-6)


def test_a_runs_windows_are_the_steps_between_its_published_totals():
    """verl's fully-async document gives each run's total wall time at 100, 200, 300 and 400 steps
    (volcengine/verl@b178a3cd:docs/advance/fully_async.md): the colocated 32-GPU 7B run's 13h 44m, 1d 3h 43m,
    2d 9h 22m and 3d 17h 5m are 49,440, 99,780, 206,520 and 320,700 s, so its windows average 494.4, 503.4, 1,067.4
    and 1,141.8 s per step [hand-derived]: its steps more than double after step 200, while the 64-GPU run's stay
    at 372.6-375.6 s. The table's per-step means (790.10 s and 365.28 s) average different length histories."""
    rows = {r["run"]: r for r in fc.study_windows()}
    assert [w[:2] for w in rows["VERL-01"]["windows"]] == [(1, 100), (101, 200), (201, 300), (301, 400)]
    assert [w[2] for w in rows["VERL-01"]["windows"]] == pytest.approx([494.4, 503.4, 1067.4, 1141.8], abs=0.01)
    assert [w[2] for w in rows["VERL-02"]["windows"]] == pytest.approx([373.2, 373.8, 372.6, 375.6], abs=0.01)
    table = vg.window_table().set_index("run")
    assert table.loc["VERL-01", "largest / smallest"] == pytest.approx(1141.8 / 494.4, rel=1e-4)


@pytest.mark.parametrize("total, field", [("13h 44m;1d 3x", "steps/total"), ("13h 44m;10h 0m", "total"),
                                          ("13h 44m", "total")])
def test_a_bad_window_row_names_the_field(total, field):
    text = f'run,case,steps,total,source\nX-01,a run,100;200,{total},"a source"\n'
    with pytest.raises(tc.DataFileError, match=re.escape(field)):
        fc.parse_study_windows(text)


def test_the_verl_study_names_its_input_limited_rows(v):
    """The study's fully-async 16:16 and 32:32 updates (269.80 s and 156.98 s, VS-04 and VS-05) need a busy MFU
    above the 75% ceiling under the study's assumed workload (106% and 91%): the group's note names VERL-04 and
    VERL-05 with those figures and gives the group without them; no other study row is named."""
    ceiling = tc.shipped_calibration().rl["calibrate_mfu_ceiling"]
    limited = vg._study_limited(v.stages)
    assert set(limited) == {"VERL-04", "VERL-05"}
    assert all(m > ceiling for m in limited.values())
    st = v.stages.set_index(["id", "stage"])
    assert limited["VERL-04"] == pytest.approx(float(st.loc[("VS-04", "training"), "implied busy MFU"]), rel=1e-9)
    note = v.groups.set_index("group").loc[vg.GROUPS[1], "note"]
    rest = v.verl_study[~v.verl_study["id"].isin(limited)]["error [%]"].astype(float).abs()
    assert f"without them: median {rest.median():.1f}%" in note and "VERL-04 106%" in note
    assert "100-step windows by up to" in note


def test_a_contested_figure_keeps_its_row_and_shows_the_independent_report(v):
    """``independent`` (framework_cases.csv): a published run of the same configuration by others that disagrees
    with the figure is carried with its source (S1-1: verl-project/verl issue 3250, the two launch scripts gave
    "basically no difference" in step time); the row stays counted, its note, the group's note and the printed
    report name it, and a row without the column reads as None."""
    s11 = next(c for c in fc.framework_cases() if c["id"] == "S1-1")
    assert "verl-project/verl issue 3250" in s11["independent"]
    assert all(c["independent"] is None for c in fc.framework_cases() if c["id"] != "S1-1")
    fw = v.frameworks.set_index("id")
    assert "an independent run disagrees: verl-project/verl issue 3250" in fw.loc["S1-1", "note"]
    assert len(v.frameworks) == 33 and not fw.loc["S1-1", "within"]  # counted, and still a miss
    for group in ("other frameworks (development set)", "leave-one-framework-out"):
        note = v.groups.set_index("group").loc[group, "note"]
        assert note.endswith("contested by an independent run of the same configuration (still counted; the "
                             "development set's table gives the report and its source): S1-1")
    assert "* S1-1 (published 1.44): verl-project/verl issue 3250" in vg.groups_report(v)
    text = "id,set,framework,kind,scenario,baseline,published,low,high,solve,source,date\n" \
           "X-1,1,verl,step,verl-onestep-7b,,749,,,,somewhere@abc:README.md,2025-07-17\n"
    assert fc.parse_framework_cases(text)[0]["independent"] is None
