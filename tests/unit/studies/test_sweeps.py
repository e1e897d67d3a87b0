"""Issue 30 item 1: tc.sweep over dotted scenario paths, numpy values, and evaluate without advice."""

import math

import numpy as np
import pandas as pd
import pytest

import tcocalc as tc
from tcocalc.figures import sweep_figure

DEFAULT = tc.load_scenario("default")  # Qwen3-8B, 8 + 8 H100, async; no sandboxes, so $/h = 16 GPUs x price
PRICES = [1.0, 2.0, 4.0]
MEANS = [4000.0, 8000.0]


@pytest.fixture(scope="module")
def result():
    return tc.sweep(DEFAULT, {"economics.usd_per_gpu_hour": PRICES, "workload.response_tokens_mean": MEANS})


def test_one_row_per_point_of_the_product_first_path_slowest(result):
    assert isinstance(result, tc.SweepResult) and len(result) == 6
    assert list(result["economics.usd_per_gpu_hour"]) == [1.0, 1.0, 2.0, 2.0, 4.0, 4.0]
    assert list(result["workload.response_tokens_mean"]) == MEANS * 3
    assert list(result.columns[:4]) == ["economics.usd_per_gpu_hour", "workload.response_tokens_mean", "error",
                                        "binding_limit"]
    assert list(result.columns[4:]) == list(tc.METRIC_UNITS)
    assert result["error"].isna().all()


def test_every_row_is_evaluate_of_its_point(result):
    """Price-only neighbours reuse the physics: still exactly what tc.evaluate gives for each point."""
    for _, row in result.iterrows():
        point = DEFAULT.with_values({"economics.usd_per_gpu_hour": row["economics.usd_per_gpu_hour"],
                                     "workload.response_tokens_mean": row["workload.response_tokens_mean"]})
        report = tc.evaluate(point)
        for key, value in report.metrics.items():
            assert (pd.isna(row[key]) if value is None else row[key] == value), key
        (only,) = report.details["binding_limits"].values()  # one phase
        assert row["binding_limit"] == ", ".join(only)


def test_cost_follows_the_price_by_hand(result):
    """No sandbox CPUs: cluster $/h = 16 GPUs x $/GPU-h, and $/Mtok scales with the price; physics unchanged."""
    ok = result.set_index(["economics.usd_per_gpu_hour", "workload.response_tokens_mean"])
    for price in PRICES:
        for mean in MEANS:
            assert ok.loc[(price, mean), "usd_per_hour"] == pytest.approx(16 * price, rel=1e-12)
            assert ok.loc[(price, mean), "usd_per_mtok_trained"] == pytest.approx(
                price * ok.loc[(1.0, mean), "usd_per_mtok_trained"], rel=1e-12)
            assert ok.loc[(price, mean), "step_time_s"] == ok.loc[(1.0, mean), "step_time_s"]
    assert ok.loc[(1.0, 8000.0), "step_time_s"] > ok.loc[(1.0, 4000.0), "step_time_s"]  # longer responses


def test_bad_points_are_rows_with_the_error_and_empty_metrics():
    res = tc.sweep(DEFAULT, {"workload.response_tokens_mean": [1000.0, 4000.0], "trainer.gpus": [8, 100_000]})
    errors = list(res["error"])
    # default p99 is 16,000 tokens: 16x a 1,000-token mean is past the lognormal's limit (p99/mean <= 14.97)
    assert errors[0].startswith("ScenarioError: workload.response_tokens_p99") and errors[1].startswith(
        "ScenarioError: workload.response_tokens_p99")
    assert errors[2] is None
    assert res.loc[0, "binding_limit"] is None and res[list(tc.METRIC_UNITS)].iloc[0].isna().all()
    assert res["trainer_gpus"].iloc[2] == 8.0 and res["trainer_gpus"].iloc[3] == 100_000.0
    for col in tc.METRIC_UNITS:  # never NaN or inf: pandas NA where there is no value
        values = res[col].dropna().astype(float)
        assert str(res[col].dtype) == "Float64" and np.isfinite(values).all()


def test_an_infeasible_point_is_a_row():
    glm = tc.load_scenario("glm5_h200_drift")
    res = tc.sweep(glm, {"trainer.gpus": [8, 96], "economics.usd_per_gpu_hour": [1.0, 2.0]})
    assert list(res["error"].isna()) == [False, False, True, True]
    assert res["error"].iloc[0].startswith("InfeasibleError: trainer: 8 x H200 cannot train")
    assert res["error"].iloc[1] == res["error"].iloc[0]  # the same at every price


@pytest.mark.parametrize("grid,field,says", [
    ({"economics.usd_per_gpuhour": [1.0]}, "economics.usd_per_gpuhour", "unknown key"),
    ({"trainer.gpu": [8]}, "trainer.gpu", "unknown key"),
    ({"economics.usd_per_gpu_hour": ["cheap"]}, "economics.usd_per_gpu_hour", "'cheap' is refused"),
    ({"trainer.gpus": [8, True]}, "trainer.gpus", "True is refused"),
    ({"trainer.gpus": [8, 8.5]}, "trainer.gpus", "8.5 is refused"),
    ({"trainer.gpus": [0]}, "trainer.gpus", "greater than or equal to 1"),
    ({"orchestration.mode": ["async", "fast"]}, "orchestration.mode", "'fast' is refused"),
    ({"economics.usd_per_gpu_hour": [math.nan]}, "economics.usd_per_gpu_hour", "refused"),
    ({"economics.usd_per_gpu_hour": 2.0}, "economics.usd_per_gpu_hour", "needs a list of values"),
    ({"model.name": "Qwen3-8B"}, "model.name", "needs a list of values"),
    ({"economics.usd_per_gpu_hour": []}, "economics.usd_per_gpu_hour", "has no values"),
    ({"trainer.gpus.count": [1]}, "trainer.gpus.count", "trainer.gpus is a value"),
    ({"phases.0.turns": [2]}, "phases.0.turns", "phases are a list"),
    ({}, "grid", "is empty"),
    ({"economics.usd_per_gpu_hour": np.linspace(1, 2, 1000), "workload.steps": list(range(1, 102))}, "grid",
     "101,000 points"),
])
def test_a_bad_grid_names_the_path_before_any_point_runs(grid, field, says):
    calls = []
    with pytest.raises(tc.ScenarioError) as err:
        tc.sweep(DEFAULT, grid, progress=lambda done, total: calls.append(done))
    assert err.value.field == field and says in str(err.value)
    assert calls == []  # nothing ran


def test_numpy_values_and_progress():
    calls = []
    res = tc.sweep(DEFAULT, {"trainer.gpus": np.arange(4, 13, 4), "economics.usd_per_gpu_hour": np.array([1.5])},
                   progress=lambda done, total: calls.append((done, total)))
    assert calls == [(0, 3), (1, 3), (2, 3), (3, 3)]
    assert list(res["trainer_gpus"]) == [4.0, 8.0, 12.0] and res["error"].isna().all()
    assert type(res["trainer.gpus"].iloc[0]) in (int, np.int64)


def test_solved_points_are_solve_split_of_each_point():
    res = tc.sweep(DEFAULT, {"economics.usd_per_gpu_hour": [1.0, 3.0]}, solve=True, objective="useful_samples_per_s")
    best = tc.solve_split(DEFAULT, "useful_samples_per_s")
    assert list(res["trainer_gpus"]) == [best.metrics["trainer_gpus"]] * 2
    assert res["useful_samples_per_s"].iloc[1] == best.metrics["useful_samples_per_s"]
    with pytest.raises(tc.ScenarioError, match="objective"):
        tc.sweep(DEFAULT, {"economics.usd_per_gpu_hour": [1.0]}, solve=True, objective="speed")


def test_evaluate_without_advice_has_the_same_numbers():
    full, bare = tc.evaluate(DEFAULT), tc.evaluate(DEFAULT, advice=False)
    assert full.advice and bare.advice == ()
    assert bare.metrics == full.metrics and bare.details["binding_limits"] == full.details["binding_limits"]
    pd.testing.assert_frame_equal(bare.phases, full.phases)


def test_a_filtered_result_stays_a_sweep_result(result, tmp_path):
    cheap = result[result["economics.usd_per_gpu_hour"] == 1.0].sort_values("step_time_s")
    assert isinstance(cheap, tc.SweepResult) and cheap.attrs["scenario"] == DEFAULT
    assert type(pd.DataFrame(cheap)) is pd.DataFrame
    book = pd.read_excel(cheap.to_excel(tmp_path / "cheap.xlsx"), sheet_name=None)
    assert list(book) == ["inputs", "metrics", "sweep", "provenance"]
    assert len(book["sweep"]) == 2
    sheet = book["sweep"]
    assert "workload.response_tokens_mean [token]" in sheet and "step_time_s [s]" in sheet
    assert "economics.usd_per_gpu_hour [USD/h]" in sheet and "trainer_idle_fraction [1]" in sheet
    assert list(sheet["step_time_s [s]"]) == pytest.approx(list(cheap["step_time_s"]), rel=1e-14)  # 15 digits
    inputs = book["inputs"].set_index("path")
    assert inputs.loc["economics.usd_per_gpu_hour", "value"] == "1.0, 2.0, 4.0"  # the grid, not one point
    assert bool(inputs.loc["economics.usd_per_gpu_hour", "swept"]) and inputs.loc["trainer.gpus", "value"] == 8
    prov = dict(zip(book["provenance"]["key"], book["provenance"]["value"], strict=True))
    assert prov["tcocalc version"] == tc.__version__ and prov["points"] == "2" and prov["scenario"] == "default"


def test_sweep_csv_and_html(result, tmp_path):
    result.to_csv(tmp_path / "s.csv")
    back = pd.read_csv(tmp_path / "s.csv")
    assert list(back.columns[:2]) == ["economics.usd_per_gpu_hour [USD/h]", "workload.response_tokens_mean [token]"]
    assert back["usd_per_hour [USD/h]"].tolist() == pytest.approx([16, 16, 32, 32, 64, 64])
    html = result._repr_html_()
    assert "Sweep" in html and "economics.usd_per_gpu_hour" in html and "<table" in html


def test_an_unwritable_workbook_path_is_named(result, tmp_path):
    target = tmp_path / "missing" / "out.xlsx"
    with pytest.raises(tc.ScenarioError, match="missing/out.xlsx"):
        result.to_excel(target)


def test_sweep_figure_draws_one_line_per_price(result):
    fig = sweep_figure(result, x="workload.response_tokens_mean")
    assert [t.name for t in fig.data] == [f"economics.usd_per_gpu_hour = {p}" for p in PRICES]
    assert list(fig.data[1].y) == pytest.approx(list(result["usd_per_mtok_trained"].iloc[2:4]))
    assert fig.layout.yaxis.title.text == "usd_per_mtok_trained [USD/Mtoken]"
    with pytest.raises(KeyError, match="not a column"):
        sweep_figure(result, x="workload.turns")
