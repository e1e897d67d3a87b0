"""Stages at the response lengths each run's own update implies (issue 36 item 3: stages right on their own;
docs/validation.md "Stages at the lengths each run's update implies"). Most development-set runs do not publish their
response lengths, and every token-bound stage scales with them; the update's time per token is what the model was
validated on most (NeMo RL), so each run's published update pins its lengths and its other stages are judged then.
No constant of the model is fitted; each run's unpublished input is read off its own published update."""

from __future__ import annotations

import pytest

import tcocalc as tc
from tcocalc.catalog import framework_cases as fc
from tcocalc.studies import validation_groups as vg
from tcocalc.studies.calibrate import run_stage_times
from tests.conftest import ROOT, csv_with


@pytest.fixture(scope="module")
def lengths():
    return vg.update_length_table()


@pytest.fixture(scope="module")
def speedups(lengths):
    return vg.update_length_speedups(lengths).set_index("id")


def _case(case_id: str) -> dict:
    return fc.stage_case(case_id)


def test_the_update_is_matched_and_only_assumed_lengths_move(lengths):
    """Each factor makes the model's update the published one (to 1e-4); the runs whose lengths their source states
    (the two GPG logs, DeepSeek-V3's published 1,960) are not in the view."""
    for case_id, r in lengths.drop_duplicates("id").set_index("id")["responses factor"].items():
        case = _case(case_id)
        scn = vg._case_split(case)
        assert vg._case_times(case, scn, float(r))["training_s"] == pytest.approx(case["training_s"], rel=1e-4)
    assert {c["id"] for c in fc.stage_cases() if c["lengths"] == "published"} == {"ST-05", "ST-06", "ST-11"}
    assert not set(lengths["id"]) & {"ST-05", "ST-06", "ST-11"}


def test_one_step_off_colocated_at_its_updates_lengths(lengths):
    """verl's one-step-off colocated 7B run (ST-01): its 286 s update on 16 H20 is the model's at x0.338 of the
    assumed 3,000-token mean, about 1,015 tokens (a run the uncalibrated model has 2.3-2.7x slow on every stage:
    input-limited); there its generation (the engines' mean) is 0.81x and its log-prob pass 1.08x the published, from
    2.33x and 2.74x. A log-prob pass is a third of an update without recompute (docs/rl-modeling.md §3.11), and
    88 / 286 = 0.31 published, so 1.08x is that ratio's 0.333 / 0.308."""
    rows = lengths[lengths["id"] == "ST-01"].set_index("stage")
    assert float(rows["responses factor"].iloc[0]) == pytest.approx(0.338, abs=0.002)
    assert float(rows["mean response [tokens]"].iloc[0]) == pytest.approx(1015, abs=6)
    assert float(rows.loc["log-prob", "ratio at the update's lengths"]) == pytest.approx((1 / 3) / (88 / 286),
                                                                                        rel=0.01)
    assert float(rows.loc["generation", "ratio at the update's lengths"]) == pytest.approx(0.81, abs=0.02)
    assert float(rows.loc["generation", "ratio as assumed"]) == pytest.approx(2.33, abs=0.02)


def test_set_1_speedups_at_each_runs_own_update_lengths(speedups):
    """With each run at its own update's lengths (both updates then the published ones, so what is judged is each
    mode's generation, overlap and switch), verl's three set-1 speed-ups and ReTool's come inside their bands: S1-1
    1.24x (published 1.44x, band 1.15-1.9), S1-2 1.39x (1.76x, 1.3-2.4), S1-10 0.96x (0.93x, 0.74-1.22), SU-04 1.41x
    (1.70x, 1.24-2.125); as assumed S1-1 and S1-2 sit on the wrong side of 1 (0.96x, 0.81x)."""
    assert list(speedups.index) == ["S1-1", "S1-2", "SU-04", "S1-10"]
    assert speedups["inside"].all()
    expect = {"S1-1": 1.24, "S1-2": 1.39, "SU-04": 1.41, "S1-10": 0.96}
    for case_id, at in expect.items():
        assert float(speedups.loc[case_id, "at the updates' lengths"]) == pytest.approx(at, abs=0.02), case_id
    assert float(speedups.loc["S1-1", "as assumed"]) < 1.0 and float(speedups.loc["S1-2", "as assumed"]) < 1.0


def test_the_stage_view_counts_every_other_row(lengths):
    """The view's rows: the assumed-length runs' other stages at their update's lengths (no update, no step), every
    other out-of-sample stage row as the stage table has it; 31 rows on 2026-12-07, median 21.4%, 17 within ±25%."""
    stages = vg.stage_table()
    ratio = vg.update_length_stages(stages, lengths)
    assert not any(k.endswith(" training") and k.split()[0] in set(lengths["id"]) for k in ratio.index)
    assert not any(k.endswith(" step") for k in ratio.index)
    assert "ST-05 training" in ratio.index and "REFIT-06 weight sync" in ratio.index
    assert not any(k.startswith("VS-") for k in ratio.index)
    err = (ratio - 1.0).abs()
    assert len(ratio) == 31
    assert float(err.median()) == pytest.approx(0.214, abs=0.005)
    assert int((err <= 0.25).sum()) == 17


def test_a_run_no_length_can_match_gives_no_factor(monkeypatch):
    """An update no response length from x0.05 to x5 can reproduce (here 0.01 s published): the factor is NA, the
    stage ratios at it NA, and a speed-up on such a run is NA and not inside its band, never a crash or a NaN."""
    import pandas as pd

    cases = tuple({**c, "training_s": 0.01} if c["id"] == "ST-02" else c for c in fc.stage_cases())
    monkeypatch.setattr(vg, "stage_cases", lambda: cases)
    t = vg.update_length_table()
    rows = t[t["id"] == "ST-02"]
    assert rows["responses factor"].isna().all() and rows["ratio at the update's lengths"].isna().all()
    sp = vg.update_length_speedups(t).set_index("id")
    assert pd.isna(sp.loc["S1-1", "at the updates' lengths"]) and not sp.loc["S1-1", "inside"]


def test_run_stage_times_times_stages_as_the_stage_table_does():
    """At factor 1 the view's stage times are the stage table's predictions (the engines' mean where verl logs it,
    the trainer's wait where the log times only that)."""
    stages = vg.stage_table()
    for case in fc.stage_cases():
        if case["lengths"] != "assumed" or case["in_sample"]:
            continue
        times = vg._case_times(case, vg._case_split(case), 1.0)
        for key, name in (("generation_s", "generation"), ("logprob_s", "log-prob")):
            if case[key] is None:
                continue
            name += " (trainer's wait)" if key == "generation_s" and case["generation_exposed"] else ""
            hit = stages[(stages["id"] == case["id"]) & (stages["stage"] == name)]
            assert times[key] == pytest.approx(float(hit["predicted [s]"].iloc[0]), rel=1e-9, abs=1e-9)
    scn = fc.case_scenario("verl-onestep-7b")
    assert run_stage_times(scn)["generation_s"] == pytest.approx(
        run_stage_times(scn, exposed=frozenset(), rank_mean=frozenset())["generation_s"])


def test_a_stage_case_without_its_lengths_flag_names_the_field():
    text = csv_with(ROOT / "data" / "validation" / "stage_cases.csv", {("ST-01", "lengths"): "guessed"})
    with pytest.raises(tc.DataFileError, match=r"ST-01.*lengths.*published, assumed"):
        fc.parse_stage_cases(text)


def test_the_report_prints_the_view_and_the_stage_note_sums_it():
    v = vg.validate()
    text = vg.groups_report(v)
    assert "### Stages at the response lengths each run's own update implies" in text
    assert "| S1-2 |" in text.split("### Stages at the response lengths")[1]
    note = v.groups.set_index("group").loc["stages", "note"]
    assert "at the response lengths each run's own update implies" in note
    assert "S1-1 1.24x (1.44x, band 1.15-1.9, inside)" in note


def test_the_figure_draws_every_out_of_sample_stage_before_and_after(lengths):
    """update_length_figure: one grey point (as assumed) and one blue point (at the update's lengths) per
    out-of-sample stage row of the view, no step row, the ±25% band; a row without a factor keeps its grey point
    and has no blue one."""
    import pandas as pd

    from tcocalc.figures import update_length_figure

    fig = update_length_figure(lengths)
    named = {t.name: t for t in fig.data if t.name}
    rows = lengths[(lengths["stage"] != "step") & ~lengths["in-sample"]]
    assert len(named["as assumed"].y) == len(rows) == len(named["at the run's update lengths"].y)
    assert not any(str(y).endswith(" step") for y in named["as assumed"].y)
    got = dict(zip(named["at the run's update lengths"].y, named["at the run's update lengths"].x, strict=True))
    assert got["ST-01 log-prob"] == pytest.approx(float(rows.set_index(["id", "stage"]).loc[
        ("ST-01", "log-prob"), "ratio at the update's lengths"]))
    band = [s for s in fig.layout.shapes if s.type == "rect"]
    assert band and (band[0].x0, band[0].x1) == (0.75, 1.25)
    gone = lengths.copy()
    gone.loc[gone["id"] == "ST-02", "ratio at the update's lengths"] = pd.NA
    lone = update_length_figure(gone)
    after = next(t for t in lone.data if t.name == "at the run's update lengths")
    assert [x for y, x in zip(after.y, after.x, strict=True) if y.startswith("ST-02")] == [None, None]
