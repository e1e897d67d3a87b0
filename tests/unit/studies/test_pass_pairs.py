"""Pass pairs (issue 36 item 3, docs/validation.md "Pass pairs"): two published runs of one recipe whose phase tables
give a forward-only pass and the update on both sides, read pass by pass per trainer GPU and per sample. A
difference in what only the update does at scale (gradient reduction, the optimizer, mini-batch synchronisation)
moves the update's ratio alone; a difference in the tokens per sample, or in each token's speed, moves both alike."""

from __future__ import annotations

import pytest

import tcocalc as tc
from tcocalc.catalog import framework_cases as fc
from tcocalc.studies import validation_groups as vg
from tests.conftest import ROOT, csv_with

CSV = ROOT / "data" / "validation" / "pass_pairs.csv"


@pytest.fixture(scope="module")
def stages():
    """The stage table (a few seconds)."""
    return vg.stage_table()


@pytest.fixture(scope="module")
def pairs(stages):
    return vg.pass_pair_table(stages).set_index("id")


def test_published_ratios_derived_by_hand(pairs):
    """Per GPU and sample, first over second, from the published cells:
    PP-02 (verl one-step-off, Megatron): old_log_prob 16 x 119 / 8,192 over 12 x 120 / 6,144 = 0.99167, update
    16 x 344 / 8,192 over 12 x 347 / 6,144 = 0.99136: the runs' only stated difference is the batch (16 answers
    against 12), and both passes cost the same per GPU and sample on 16 and 12 GPUs.
    PP-03 (verl fully-async, Qwen3-30B-A3B): ref 128 x 20.86 over 32 x 50.05 = 2,670.08 / 1,601.60 = 1.66713, update
    128 x 86.27 over 32 x 206.63 = 11,042.56 / 6,612.16 = 1.67004 (same 8,192 samples).
    PP-04 (the 7B colocated study, 128 over 32 H20): old_log_prob 6,901.76 / 3,446.72 = 2.00241, update
    14,567.68 / 10,041.92 = 1.45069: the passes differ by 38%, so no one per-token factor."""
    assert pairs.loc["PP-02", "forward ratio"] == pytest.approx(0.99167, abs=5e-5)
    assert pairs.loc["PP-02", "update ratio"] == pytest.approx(0.99136, abs=5e-5)
    assert pairs.loc["PP-03", "forward ratio"] == pytest.approx(1.66713, abs=5e-5)
    assert pairs.loc["PP-03", "update ratio"] == pytest.approx(1.67004, abs=5e-5)
    assert pairs.loc["PP-04", "forward ratio"] == pytest.approx(2.00241, abs=5e-5)
    assert pairs.loc["PP-04", "update ratio"] == pytest.approx(1.45069, abs=5e-5)
    assert list(pairs["alike"]) == [True, True, True, False]
    assert pairs.loc["PP-03", "factor"] == pytest.approx((1.66713 * 1.67004) ** 0.5, abs=5e-5)
    assert "no loss or gain" in pairs.loc["PP-02", "reading"]
    assert "not one of what only the update does at scale" in pairs.loc["PP-03", "reading"]
    assert "no one per-token factor" in pairs.loc["PP-04", "reading"]


def test_the_pairs_figures_are_their_stage_rows(stages):
    """Each pair's cells are its stage cases' (the update is the row's training_s; the forward pass its logprob_s
    where the run has that one forward pass, and within it where it has two: ST-09's 49.59 s is old_log_prob 28.73
    + ref 20.86); its GPUs are the rows' trainer GPUs and its samples the scenarios' prompts x answers."""
    rows = {c["id"]: c for c in fc.stage_cases()}
    for p in fc.pass_pairs():
        for side in ("first", "second"):
            case = rows[p[f"{side}_case"]]
            scn = fc.case_scenario(case["scenario"], case["id"])
            gpus = case["trainer_gpus"] if case["trainer_gpus"] is not None else scn.trainer.gpus
            assert p[f"{side}_gpus"] == gpus, (p["id"], side)
            assert p[f"{side}_samples"] == scn.workload.prompts_per_step * scn.workload.group_size, (p["id"], side)
            assert p[f"{side}_update_s"] == pytest.approx(case["training_s"], abs=1e-9), (p["id"], side)
            if vg._forward_passes(case["id"]) == 1:
                assert p[f"{side}_forward_s"] == pytest.approx(case["logprob_s"], abs=1e-9), (p["id"], side)
            else:
                assert p[f"{side}_forward_s"] < case["logprob_s"], (p["id"], side)


def test_st10s_reference_pass_is_the_pairs_difference_times_the_models_miss_on_st09(stages, pairs):
    """With one workload for both runs, the model's error on ST-10 is its error on ST-09 times the published
    per-GPU, per-sample factor over the model's own (1.67 / 0.97 = 1.73): its update 1.74x = 1.73 x 1.01, its
    reference pass 2.39x = 1.73 x 1.39 (ST-09's reference pass predicted as half its two-pass log-prob, 57.9 / 2 =
    28.9 s, against 20.86 s). The stage group counts the row as a published difference between runs, not
    unexplained."""
    st = stages.set_index(["id", "stage"])
    upd = pairs.loc["PP-03", "update ratio"] / pairs.loc["PP-03", "model update ratio"]
    fwd = pairs.loc["PP-03", "forward ratio"] / pairs.loc["PP-03", "model forward ratio"]
    assert (upd, fwd) == (pytest.approx(1.73, abs=0.01), pytest.approx(1.73, abs=0.01))
    assert float(st.loc[("ST-10", "training"), "ratio"]) == pytest.approx(
        upd * float(st.loc[("ST-09", "training"), "ratio"]), rel=1e-9)
    ref_09 = float(st.loc[("ST-09", "log-prob"), "predicted [s]"]) / 2 / 20.86
    assert ref_09 == pytest.approx(1.39, abs=0.01)
    assert float(st.loc[("ST-10", "log-prob"), "ratio"]) == pytest.approx(fwd * ref_09, rel=1e-9)
    assert float(st.loc[("ST-10", "log-prob"), "beyond pass pair"]) == pytest.approx(ref_09, rel=1e-6)
    assert str(st.loc[("ST-10", "log-prob"), "note"]).startswith("runs differ (pass pair PP-03)")
    assert pd_isna(st.loc[("ST-09", "log-prob"), "beyond pass pair"])  # two forward passes: not noted
    assert str(st.loc[("ST-01", "training"), "note"]).startswith("input-limited")  # kept, not overwritten
    note = vg.group_table({**_tables(stages)}).set_index("group").loc["stages", "note"]
    assert "ST-10 log-prob 2.39x (1.39x beyond the pair)" in note
    assert "ST-10 log-prob" not in note.split("not explained: ")[1]


def pd_isna(x) -> bool:
    import pandas as pd

    return bool(pd.isna(x))


def _tables(stages) -> dict:
    v = vg.validate()
    return {"nemo": v.nemo, "nemo_pairs": v.nemo_pairs, "verl_study": v.verl_study, "frameworks": v.frameworks,
            "stages": stages, "lofo": v.lofo, "windows": v.windows}


@pytest.mark.parametrize(("field", "value", "match"), [
    ("second_forward_s", "", r"PP-01.*second_forward_s"),
    ("first_update_s", "0", r"PP-01.*first_update_s"),
    ("second_gpus", "0", r"PP-01.*second_gpus.*at least 1"),
    ("second_case", "ST-01", r"PP-01.*second_case.*two different runs"),
    ("source", "", r"PP-01.*source"),
])
def test_a_bad_pass_pair_row_names_the_field(field, value, match):
    with pytest.raises(tc.DataFileError, match=match):
        fc.parse_pass_pairs(csv_with(CSV, {("PP-01", field): value}))


def test_the_report_and_the_validation_carry_the_pairs():
    """`tcocalc validate --groups` prints the pass pairs; tc.validate() holds them."""
    v = vg.validate()
    assert list(v.passes["id"]) == ["PP-01", "PP-02", "PP-03", "PP-04"]
    text = vg.groups_report(v)
    assert "### Pass pairs" in text and "| PP-03 | ST-09 | ST-10 | ref |" in text


def test_a_pair_whose_run_the_model_cannot_predict_says_so(stages):
    """Where the stage table holds no prediction for a pair's run (a scenario the model refuses), the pair still
    reads the published passes and says the model has none, never "nanx"."""
    import pandas as pd

    st = stages.copy()
    st.loc[st["id"] == "ST-10", "predicted [s]"] = pd.NA
    pairs = vg.pass_pair_table(st).set_index("id")
    row = pairs.loc["PP-03"]
    assert row["alike"] and row["forward ratio"] == pytest.approx(1.66713, abs=5e-5)
    assert "the model has no trainer time for one of the two runs" in row["reading"]
    assert "nan" not in row["reading"].lower()
