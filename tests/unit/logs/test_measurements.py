"""tc.load_measurements: a pilot run's logged metrics read through data/run_metrics.toml.

The fixtures in tests/data/logs/ are synthetic logs written from the documented key names (one per framework and
per format); their values are chosen so that every expected median below can be worked out by hand, as the
comments show.
"""

from __future__ import annotations

import dataclasses
import json
import math
import pickle
from collections.abc import Mapping
from pathlib import Path

import pandas as pd
import pytest

import tcocalc as tc
from tcocalc.catalog import run_metrics
from tcocalc.logs import measurements, registry, source, table
from tcocalc.logs.measurements import parse_steps, warmup_step_count
from tests.conftest import ROOT

LOGS = ROOT / "tests" / "data" / "logs"
DOC = ROOT / "docs" / "run-logs.md"
TOML = ROOT / "data" / "run_metrics.toml"

# fixture -> (framework, format, steps kept, warm-up dropped, summary); hand-derived, see each fixture's comment
EXPECTED = {
    # steps 1..12, ceil(10 % of 12) = 2 dropped; steps 3..12 log step 70..79, gen 40..49, update_actor 18..27
    "verl_wandb.csv": ("verl", "wandb-csv", (3, 12), 2, {
        "step_time_s": 74.5, "generation_s": 44.5, "training_s": 22.5, "logprob_s": 5.0 + 4.0,
        "weight_sync_s": 3.0, "response_tokens_mean": 1845.0, "response_tokens_longest": 4096.0,
        "prompt_tokens": 200.0}),
    # steps 1..5, 1 dropped; step times 80, 60, 70, 90 -> 75; gen = step - 30; old_log_prob printed np.float64(6.0)
    "verl_console.log": ("verl", "verl-console", (2, 5), 1, {
        "step_time_s": 75.0, "generation_s": 45.0, "training_s": 18.0, "logprob_s": 6.0 + 5.0, "weight_sync_s": 3.0,
        "response_tokens_mean": 1810.5, "response_tokens_longest": 4096.0, "prompt_tokens": 212.4}),
    # verl since 2025-08-12 (volcengine/verl@45b4ce910): generate_sequences is the mean over ranks, generation_timing/
    # max the slowest rank's, which is the generation; steps 1..5, 1 dropped; max 46, 47, 48, 50 -> 47.5; switching =
    # gen - max = 6, 6, 7, 8 -> 6.5 (the rank mean's 10, 12, 12, 14 would give 12); step 82..88 -> 85
    "verl_console_longtail.log": ("verl", "verl-console", (2, 5), 1, {
        "step_time_s": 85.0, "generation_s": 47.5, "training_s": 21.5, "logprob_s": 6.0, "switching_s": 6.5,
        "response_tokens_mean": 512.0, "response_tokens_longest": 1024.0, "prompt_tokens": 100.0}),
    # steps 1..3 of 10, 20, 30 s; 1 dropped
    "verl_file.jsonl": ("verl", "jsonl", (2, 3), 1, {
        "step_time_s": 25.0, "generation_s": 12.5, "response_tokens_mean": 1002.5}),
    # steps 1..11, 2 dropped; total 90..98 -> 94; switching = 4.4 - 3.0 + 0.5 + 0.7
    "nemo_rl_wandb.csv": ("nemo-rl", "wandb-csv", (3, 11), 2, {
        "step_time_s": 94.0, "generation_s": 50.0, "training_s": 22.1, "logprob_s": 9.8, "weight_sync_s": 3.0,
        "switching_s": 2.6, "response_tokens_mean": 1500.0, "response_tokens_longest": 8000.0, "prompt_tokens": 300.0,
        "samples_per_step": 512.0}),
    # async, steps 1..6, 1 dropped; exposed generation 10, 12, 11, 13, 14 -> 12; step = 60 + that
    "nemo_rl_async_tb.csv": ("nemo-rl", "tensorboard-csv", (2, 6), 1, {
        "step_time_s": 72.0, "generation_s": 12.0, "training_s": 30.0, "logprob_s": 8.0, "weight_sync_s": 2.5,
        "switching_s": 0.4 + 0.3 + 0.3, "response_tokens_mean": 900.0}),
    # rollouts 0..4 on rollout/step, 1 dropped; step 97, 99, 101, 103 -> 100; rollout 58..64 -> 61
    "slime_wandb.csv": ("slime", "wandb-csv", (1, 4), 1, {
        "step_time_s": 100.0, "generation_s": 61.0, "training_s": 22.8, "logprob_s": 5.9 + 5.1,
        "weight_sync_s": 2.7, "switching_s": 1.0 + 1.5, "response_tokens_mean": 1794.0,
        "response_tokens_longest": 8192.0, "prompt_tokens": 2000.0 - 1790.0}),
    # steps 0..5, 1 dropped; _timestamp periods of steps 1..5: 100, 60, 60, 70, 50 -> 60; rollout 15..19 -> 17
    "areal_wandb.csv": ("areal", "wandb-csv", (1, 5), 1, {
        "step_time_s": 60.0, "generation_s": 17.0, "training_s": 24.0, "logprob_s": 6.0 + 5.5,
        "weight_sync_s": 2.2, "switching_s": 1.0 + 2.0, "response_tokens_mean": 2011.5 - 208.5,
        "prompt_tokens": 208.5, "samples_per_step": 512.0}),
    # steps 0..3, 1 dropped; wall-time periods 40, 50, 30 -> 40; rollout 12, 10, 11 -> 11
    "areal_tb_tags": ("areal", "tensorboard-tag-csv", (1, 3), 1, {
        "step_time_s": 40.0, "generation_s": 11.0, "training_s": 21.0, "weight_sync_s": 2.0,
        "samples_per_step": 256.0}),
    # steps 1..5, 1 dropped; trainer time/step 31, 30, 32, 29 -> 30.5 (the orchestrator's 50 s is not used)
    "prime_rl_metrics.jsonl": ("prime-rl", "jsonl", (2, 5), 1, {
        "step_time_s": 30.5, "generation_s": 4.0, "training_s": 24.0, "weight_sync_s": 1.9,
        "response_tokens_mean": 1764.0, "response_tokens_longest": 16384.0, "prompt_tokens": 250.0,
        "samples_per_step": 512.0}),
    # steps 1..4, 1 dropped; training - waiting = 45, 48, 45 -> 45; weight sync missing at step 3: (5 + 6) / 2;
    # the longest response is the largest of the kept steps' 16,384, 16,000 and 15,000 (their median was 16,000)
    "open_instruct_wandb.csv": ("open-instruct", "wandb-csv", (2, 4), 1, {
        "step_time_s": 90.0, "generation_s": 63.0, "training_s": 45.0, "weight_sync_s": 5.5,
        "response_tokens_mean": 1700.0, "response_tokens_longest": 16384.0}),
    # logged every 10 steps, global steps 10..40, 1 dropped; generate calls per label summed / 10 steps:
    # 20 / 10, 22 / 10, 24 / 10 -> 2.2; sync 1.0 / 10; log-prob calls (2 + 3) / 10
    "trl_wandb.csv": ("trl", "wandb-csv", (20, 40), 1, {
        "step_time_s": 15.0, "generation_s": 2.2, "logprob_s": 0.5, "weight_sync_s": 0.1,
        "response_tokens_mean": 630.0, "response_tokens_longest": 1024.0}),
}


def load(name: str, **kw) -> tc.Measurements:
    return tc.load_measurements(LOGS / name, **kw)


def write(tmp_path: Path, name: str, text: str) -> Path:
    path = tmp_path / name
    path.write_text(text)
    return path


# ---------------------------------------------------------------- every fixture, by hand


@pytest.mark.reference
@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_fixture_summary(name):
    framework, fmt, used, warmup, summary = EXPECTED[name]
    m = load(name)
    assert (m.framework, m.format, m.steps_used, m.warmup_steps) == (framework, fmt, used, warmup)
    assert dict(m) == pytest.approx(summary)
    assert list(m) == [k for k in run_metrics.MEASUREMENT_UNITS if k in summary]  # canonical order


def test_every_framework_and_format_has_a_fixture():
    assert {v[0] for v in EXPECTED.values()} == set(run_metrics.framework_names())
    assert {v[1] for v in EXPECTED.values()} <= set(registry.FORMATS)


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_named_framework_gives_the_same_result(name):
    framework = EXPECTED[name][0]
    assert dict(load(name, framework=framework)) == dict(load(name))


def test_framework_aliases():
    for alias in ("NeMo RL", "nemo_rl", "NEMO-RL"):
        assert load("nemo_rl_wandb.csv", framework=alias).framework == "nemo-rl"
    assert load("prime_rl_metrics.jsonl", framework="prime_rl").framework == "prime-rl"


# ---------------------------------------------------------------- the result


def test_measurements_is_a_read_only_mapping():
    m = load("verl_wandb.csv")
    assert isinstance(m, Mapping)
    assert dict(m) == dict(m.summary)
    assert m == dict(m.summary)
    assert len(m) == 8 and "step_time_s" in m and "samples_per_step" not in m
    assert m.get("samples_per_step") is None
    with pytest.raises(TypeError):
        m.summary["step_time_s"] = 1.0
    with pytest.raises(AttributeError):
        m.framework = "slime"


def test_pickles():
    """st.cache_data pickles what the app's cached calls return."""
    m = load("nemo_rl_wandb.csv")
    back = pickle.loads(pickle.dumps(m))
    assert dict(back) == dict(m) and back.exposed == m.exposed and back.formulas == m.formulas
    assert back.per_step.equals(m.per_step)
    with pytest.raises(TypeError):
        back.summary["step_time_s"] = 1.0


def test_per_step_table():
    m = load("verl_wandb.csv")
    assert list(m.per_step.index) == list(range(3, 13)) and m.per_step.index.name == "step"
    assert list(m.per_step.columns) == list(m)
    assert m.per_step["step_time_s"].tolist() == [70.0 + k for k in range(10)]
    assert m.per_step.median().to_dict() == pytest.approx(dict(m))


def test_sparse_steps_are_missing_not_nan():
    m = load("open_instruct_wandb.csv")
    column = m.per_step["weight_sync_s"]
    assert str(column.dtype) == "Float64" and column.isna().tolist() == [False, True, False]
    assert column[3] is pd.NA
    assert not any(math.isnan(v) for v in m.values())


def test_ignored_keys_and_keys_used():
    m = load("verl_wandb.csv")
    assert m.ignored_keys == ("perf/mfu/actor", "perf/throughput", "training/global_step")
    assert m.keys_used["logprob_s"] == ("timing_s/old_log_prob", "timing_s/ref")
    assert m.keys_used["training_s"] == ("timing_s/update_actor",)  # no critic logged
    slime = load("slime_wandb.csv")
    assert "rollout/step" not in slime.ignored_keys and "train/step" in slime.ignored_keys
    assert slime.formulas["prompt_tokens"] == "rollout/total_lengths - rollout/response_lengths"


def test_printable():
    m = load("nemo_rl_async_tb.csv")
    text = str(m)
    assert "nemo_rl_async_tb.csv" in text and "nemo-rl" in text and "tensorboard-csv" in text
    assert "step_time_s" in text and "72.000 s" in text and "exposed" in text
    assert repr(m) == text
    page = m._repr_html_()
    assert page.startswith("<div>") and "<table>" in page and "generation_s" in page and "&#x27;" not in text


def test_warnings_carry_the_caveats_used():
    m = load("verl_wandb.csv")
    assert any(w.startswith("generation_s: timing_s/gen is the whole rollout phase") for w in m.warnings)
    assert not any(w.startswith("step_time_s") for w in m.warnings)  # timing_s/step has no caveat


# ---------------------------------------------------------------- nesting


@pytest.mark.reference
def test_nemo_switching_does_not_count_the_weight_transfer_twice():
    m = load("nemo_rl_wandb.csv")
    # prepare_for_generation/total (4.4) holds the transfer (3.0), which is weight_sync_s
    assert m["weight_sync_s"] == pytest.approx(3.0)
    assert m["switching_s"] == pytest.approx(4.4 - 3.0 + 0.5 + 0.7)
    assert m["switching_s"] + m["weight_sync_s"] == pytest.approx(4.4 + 0.5 + 0.7)


def test_sub_timers_are_not_added():
    assert load("nemo_rl_wandb.csv")["logprob_s"] == pytest.approx(9.8)  # get_logprobs/shard_data (0.2) inside


def test_a_step_timer_is_not_summed_with_its_parts():
    # slime logs perf/step_time = train_wait + train; the step time is the one key, not their sum on top
    assert load("slime_wandb.csv")["step_time_s"] == pytest.approx(100.0)


def test_fallback_sum_when_the_whole_is_not_logged(tmp_path):
    text = (LOGS / "slime_wandb.csv").read_text()
    header, *rows = text.splitlines()
    cols = header.split(",")
    i = cols.index("perf/step_time")
    cut = "\n".join(",".join(c for j, c in enumerate(line.split(",")) if j != i) for line in [header, *rows])
    m = tc.load_measurements(write(tmp_path, "slime.csv", cut + "\n"))
    assert m["step_time_s"] == pytest.approx(100.0)  # perf/train_wait_time + perf/train_time
    assert m.formulas["step_time_s"] == "perf/train_wait_time + perf/train_time"


def test_open_instruct_training_leaves_out_the_wait_for_data():
    m = load("open_instruct_wandb.csv")
    assert m.per_step["training_s"].tolist() == pytest.approx([86.0 - 41.0, 88.0 - 40.0, 90.0 - 45.0])


def test_no_shipped_sum_adds_a_timer_to_one_that_contains_it():
    """The reader refuses such a sum, so the shipped table loading is the proof; here the refusal itself."""
    assert run_metrics.parse_run_metrics(TOML.read_text())
    # the reader enforces it: a sum of an outer and an inner timer is refused
    bad = TOML.read_text().replace(
        'keys = ["timing/train/prepare_for_generation/total", "timing/train/logprob_inference_prep",',
        'keys = ["timing/train/prepare_for_generation/total", '
        '"timing/train/prepare_for_generation/transfer_and_update_weights", "timing/train/logprob_inference_prep",')
    with pytest.raises(tc.DataFileError, match="transfer_and_update_weights.*counts it twice") as err:
        run_metrics.parse_run_metrics(bad)
    assert err.value.entry == "framework.nemo-rl.measure.switching_s[2]" and err.value.field == "keys"


def test_a_subtracted_key_must_lie_inside_an_added_one():
    bad = TOML.read_text().replace('minus = ["time/trainer_waiting_for_data"]', 'minus = ["time/weight_sync"]')
    with pytest.raises(tc.DataFileError, match="time/weight_sync.*lies inside none") as err:
        run_metrics.parse_run_metrics(bad)
    assert (err.value.entry, err.value.field) == ("framework.open-instruct.measure.training_s[1]", "minus")


def test_inner_timer_longer_than_outer_skips_the_step(tmp_path):
    text = (LOGS / "open_instruct_wandb.csv").read_text().replace("88.0,40.0", "38.0,40.0")
    m = tc.load_measurements(write(tmp_path, "oi.csv", text))
    assert m.skipped_steps == (3,) and 3 not in m.per_step.index
    assert any("1 of 3 steps skipped" in w and "training_s = " in w and "contains it" in w for w in m.warnings)
    assert m["training_s"] == 45.0  # steps 2 and 4: 45 and 45 (step 3, 38 - 40 s, skipped)


def test_inner_timer_longer_than_outer_at_most_steps_is_an_error(tmp_path):
    text = (LOGS / "open_instruct_wandb.csv").read_text().replace("88.0,40.0", "38.0,40.0")
    with pytest.raises(tc.MeasurementError, match="training_s = .* is -2 s .*contains it.* at step 3") as err:
        tc.load_measurements(write(tmp_path, "oi.csv", text), steps="3:4")
    assert (err.value.field, err.value.step) == ("training_s", 3)


def test_nesting_is_checked_per_step_from_the_contains_table(tmp_path):
    """data/run_metrics.toml: timing_s/step contains timing_s/gen; a step whose gen is longer is skipped."""
    lines = [f"step:{s} - timing_s/gen:{40 + s} - timing_s/step:{70 + s}" for s in range(1, 11)]
    lines[6] = "step:7 - timing_s/gen:90.0 - timing_s/step:77.0"
    lines[7] = "step:8 - timing_s/gen:78.5 - timing_s/step:78.0"  # within the 1 % + 0.01 s reading tolerance
    m = tc.load_measurements(write(tmp_path, "v.log", "\n".join(lines) + "\n"))
    assert m.skipped_steps == (7,)
    assert any("timing_s/gen (90) is longer than timing_s/step (77)" in w for w in m.warnings)


# ---------------------------------------------------------------- exposed times and modes


def test_exposed_generation_is_flagged():
    assert load("nemo_rl_async_tb.csv").exposed == ("generation_s",)
    assert load("prime_rl_metrics.jsonl").exposed == ("generation_s",)
    assert load("areal_wandb.csv").exposed == ("generation_s",)
    assert load("nemo_rl_wandb.csv").exposed == ()
    assert load("slime_wandb.csv").exposed == ()


def test_verl_fully_async_reads_the_rollout_side_time(tmp_path):
    rows = [{"step": s, "data": {"timing_s/step": 50.0, "timing_s/gen": 5.0, "fully_async/trainer/idle_ratio": 0.1,
                                 "fully_async/rollouter/active_time": 45.0, "timing_s/timing_s/param_sync": 2.0}}
            for s in range(1, 4)]
    path = write(tmp_path, "fa.jsonl", "\n".join(json.dumps(r) for r in rows))
    m = tc.load_measurements(path)
    assert m["generation_s"] == 45.0 and m.exposed == () and m["weight_sync_s"] == 2.0
    # without the rollouter key, timing_s/gen is only the trainer's exposed wait
    rows = [{"step": r["step"], "data": {k: v for k, v in r["data"].items() if "rollouter" not in k}} for r in rows]
    m = tc.load_measurements(write(tmp_path, "fa2.jsonl", "\n".join(json.dumps(r) for r in rows)))
    assert m["generation_s"] == 5.0 and m.exposed == ("generation_s",)


def test_prime_rl_takes_the_trainer_step_time():
    m = load("prime_rl_metrics.jsonl")
    assert m.per_step["step_time_s"].tolist() == [31.0, 30.0, 32.0, 29.0]  # never the orchestrator's 50.0


def test_zero_is_accepted_where_the_framework_logs_zero_for_a_skipped_phase():
    m = load("prime_rl_metrics.jsonl")
    assert m.per_step["generation_s"].tolist() == [4.0, 0.0, 4.0, 4.0]  # time/wait_for_batch 0 at step 3


def test_trl_rows_before_the_first_log_are_skipped_with_a_warning():
    m = load("trl_wandb.csv")
    assert any("1 rows with mapped keys but no train/global_step" in w for w in m.warnings)
    assert m.per_step["generation_s"].tolist() == pytest.approx([2.0, 2.2, 2.4])


# ---------------------------------------------------------------- framework guessing


def test_guess_ties_and_misses_are_errors():
    with pytest.raises(tc.MeasurementError, match="no key of any framework.*pass framework= one of verl, nemo-rl"):
        measurements.guess_framework(frozenset({"loss", "lr"}))
    with pytest.raises(tc.MeasurementError, match="matches verl and slime equally") as err:
        measurements.guess_framework(frozenset({"timing_s/step", "perf/step_time"}))
    assert err.value.field == "framework"


def test_guess_on_a_log_without_framework_keys(tmp_path):
    path = write(tmp_path, "x.csv", "_step,loss\n1,0.5\n2,0.4\n")
    with pytest.raises(tc.MeasurementError, match="x.csv: cannot tell the framework"):
        tc.load_measurements(path)


def test_guess_picks_the_framework_with_most_keys():
    assert measurements.guess_framework(frozenset({"time/step", "time/forward_backward", "perf/step_time"})) == \
        "prime-rl"


# ---------------------------------------------------------------- warm-up and steps


@pytest.mark.parametrize(("n", "dropped"), [(1, 0), (2, 1), (5, 1), (10, 1), (11, 2), (20, 2), (21, 3),
                                            (150, 15), (200, 20), (201, 20), (10_000, 20)])
def test_warmup_rule(n, dropped):
    assert warmup_step_count(n) == dropped


def test_one_step_log_keeps_its_step(tmp_path):
    m = tc.load_measurements(write(tmp_path, "one.jsonl", json.dumps({"step": 7, "data": {"timing_s/step": 9.0}})))
    assert (m.steps_used, m.warmup_steps, m["step_time_s"]) == ((7, 7), 0, 9.0)
    assert any("one usable step" in w for w in m.warnings)


@pytest.mark.parametrize("steps", ["5:9", (5, 9), [5, 9], slice(5, 9), " 5 : 9 "])
def test_steps_select_by_logged_step_number(steps):
    m = load("verl_wandb.csv", steps=steps)
    assert (m.steps_used, m.warmup_steps) == ((5, 8), 0)  # stop excluded, like a slice
    assert m["step_time_s"] == pytest.approx((72 + 73 + 74 + 75) / 4)


def test_open_ended_steps_and_no_warmup():
    assert load("verl_wandb.csv", steps="1:").steps_used == (1, 12)
    assert load("verl_wandb.csv", steps=":3").steps_used == (1, 2)
    assert load("verl_wandb.csv", steps=(None, None)).warmup_steps == 0
    assert load("verl_wandb.csv", steps="1:")["step_time_s"] == pytest.approx(75.5)  # 300, 150, 70..79


def test_steps_skip_gaps_in_the_log():
    assert load("trl_wandb.csv", steps="15:35").steps_used == (20, 30)


@pytest.mark.parametrize("steps", ["5", "a:b", "1:2:3", (1, 2, 3), slice(1, 9, 2), 5, (1.5, 3), (True, 3)])
def test_bad_steps(steps):
    with pytest.raises(tc.MeasurementError, match="steps") as err:
        load("verl_wandb.csv", steps=steps)
    assert err.value.field == "steps"


def test_steps_in_the_wrong_order():
    with pytest.raises(tc.MeasurementError, match="start 9 is not below stop 5"):
        parse_steps("9:5")


def test_steps_that_keep_nothing():
    with pytest.raises(tc.MeasurementError, match=r"verl_wandb.csv: steps='50:60' keeps none of .* 1\.\.12") as e:
        load("verl_wandb.csv", steps="50:60")
    assert e.value.field == "steps"


# ---------------------------------------------------------------- errors


def test_missing_file():
    with pytest.raises(tc.MeasurementError, match="nope.csv: no such file") as err:
        tc.load_measurements(LOGS / "nope.csv")
    assert err.value.field == "path" and isinstance(err.value, tc.ScenarioError)


def test_bad_bytes_are_counted_and_the_sound_values_read(tmp_path):
    path = tmp_path / "bad.csv"
    path.write_bytes(b"_step,timing_s/step\n" + b"".join(b"%d,%d\n" % (s, 10 + s) for s in range(1, 9))
                     + b"9,\xff\xfe\n10,20\n")
    m = tc.load_measurements(path)
    assert m.skipped_steps == (9,) and m["step_time_s"] == 15.5  # steps 2..8 and 10: 12..18 and 20
    assert any("1 lines held bytes that are not UTF-8" in w for w in m.warnings)
    assert any("step 9: timing_s/step is not a finite number" in w for w in m.warnings)


def test_unknown_format(tmp_path):
    with pytest.raises(tc.MeasurementError, match="notes.txt: not a log format tcocalc reads"):
        tc.load_measurements(write(tmp_path, "notes.txt", "hello\nworld\n"))
    with pytest.raises(tc.MeasurementError, match="empty.csv: an empty file"):
        tc.load_measurements(write(tmp_path, "empty.csv", ""))


def test_bad_jsonl_lines_are_skipped_and_counted(tmp_path):
    rows = "".join(json.dumps({"step": s, "data": {"timing_s/step": 10.0 + s}}) + "\n" for s in range(1, 6))
    path = write(tmp_path, "m.jsonl", rows + "oops, a stray print\n" + '{"step": 6, "data": {"timing_s/st')
    m = tc.load_measurements(path)
    assert m.steps_used == (2, 5) and m["step_time_s"] == 13.5
    assert any("2 lines that are not a JSON object were skipped (the last one cut off)" in w for w in m.warnings)


def test_csv_without_a_step_column(tmp_path):
    with pytest.raises(tc.MeasurementError, match=r"h.csv: not a log format tcocalc reads: it looks like a CSV whose "
                                                  r"header \(timing_s/step, timing_s/gen\) has no step column.*"
                                                  r"Formats read: .*verl console"):
        tc.load_measurements(write(tmp_path, "h.csv", "timing_s/step,timing_s/gen\n1,2\n"))


def test_folder_without_csv_files(tmp_path):
    with pytest.raises(tc.MeasurementError, match="a folder with no log a reader takes: neither TensorBoard event "
                                                  "files"):
        tc.load_measurements(tmp_path)


def test_folder_with_a_csv_that_is_not_a_tag_download(tmp_path):
    write(tmp_path, "a.csv", "_step,x\n1,2\n")
    with pytest.raises(tc.MeasurementError, match="a.csv: header is not TensorBoard's per-tag download"):
        tc.load_measurements(tmp_path)


def _limits(monkeypatch, **caps):
    small = dataclasses.replace(run_metrics.log_limits(), **caps)
    monkeypatch.setattr(source, "log_limits", lambda: small)
    monkeypatch.setattr(table, "limits", lambda: small)


def test_size_limit_is_checked_before_reading(tmp_path, monkeypatch):
    _limits(monkeypatch, max_bytes=100)
    path = write(tmp_path, "big.csv", "_step,timing_s/step\n" + "".join(f"{i},1.0\n" for i in range(1, 40)))
    with pytest.raises(tc.MeasurementError, match=r"big.csv: \d+ bytes is above the 100 bytes limit for a log "
                                                  r"\(data/log_limits.toml max_bytes\)"):
        tc.load_measurements(path)


def test_size_limit_is_public_and_in_the_data_file():
    assert tc.MAX_LOG_BYTES == run_metrics.log_limits().max_bytes == 200_000_000
    assert "max_bytes = 200_000_000" in (ROOT / "data" / "log_limits.toml").read_text()


def test_a_log_read_as_another_framework_names_the_one_it_looks_like():
    with pytest.raises(tc.MeasurementError, match=r"slime_wandb.csv: read with framework='verl', but it looks like a "
                                                  r"slime log \(14 of its keys, against 0 of verl's\); pass "
                                                  r"framework='slime'") as err:
        load("slime_wandb.csv", framework="verl")
    assert err.value.field == "framework"


def test_no_usable_step_names_the_keys(tmp_path):
    with pytest.raises(tc.MeasurementError, match=r"no step with a verl measurement; looked for .*timing_s/gen") as e:
        tc.load_measurements(write(tmp_path, "v.csv", "_step,timing_s/testing,critic/score/mean\n1,3.0,0.5\n"),
                             framework="verl", keep_validation=True)
    assert e.value.field == "path"
    with pytest.raises(tc.MeasurementError, match="no step with a trl measurement"):
        tc.load_measurements(write(tmp_path, "t.csv", "_step,train/global_step,train/loss\n1,10,0.5\n"),
                             framework="trl")


def test_unknown_framework():
    with pytest.raises(tc.MeasurementError, match="unknown framework 'deepspeed-chat'; choose one of verl, nemo-rl, "
                                                  "slime, areal, prime-rl, open-instruct, trl") as err:
        load("verl_wandb.csv", framework="deepspeed-chat")
    assert err.value.field == "framework"


def _verl_csv(tmp_path, cell: str, step: int = 5) -> Path:
    lines = (LOGS / "verl_wandb.csv").read_text().splitlines()
    cols = lines[step].split(",")
    cols[lines[0].split(",").index("timing_s/gen")] = cell
    lines[step] = ",".join(cols)
    return write(tmp_path, "v.csv", "\n".join(lines) + "\n")


@pytest.mark.parametrize(("cell", "what"), [("-1.5", "negative"), ("NaN", "not a finite number"),
                                            ("inf", "not a finite number"), ("oops", "not a finite number")])
def test_one_bad_value_skips_its_step_with_a_count(tmp_path, cell, what):
    m = tc.load_measurements(_verl_csv(tmp_path, cell))
    assert m.skipped_steps == (5,) and 5 not in m.per_step.index
    assert any(w.startswith("1 of 10 steps skipped as unsound (step 5: timing_s/gen is " + what) for w in m.warnings)
    # the median is over the 9 sound steps: gen 40, 41, 43, ..., 49 (42 at step 5 left out)
    assert m["generation_s"] == 45.0 and m["step_time_s"] == 75.0


@pytest.mark.parametrize(("cell", "what"), [("-1.5", "negative"), ("NaN", "not a finite number")])
def test_a_bad_value_at_most_kept_steps_names_key_and_step(tmp_path, cell, what):
    with pytest.raises(tc.MeasurementError, match=f"v.csv: timing_s/gen is {what}.* at step 5") as err:
        tc.load_measurements(_verl_csv(tmp_path, cell), steps="5:6")
    assert (err.value.field, err.value.key, err.value.step) == ("timing_s/gen", "timing_s/gen", 5)


def test_zero_time_skips_the_step(tmp_path):
    m = tc.load_measurements(_verl_csv(tmp_path, "0"))
    assert m.skipped_steps == (5,)
    assert any("step 5: generation_s = timing_s/gen is 0 s" in w for w in m.warnings)
    with pytest.raises(tc.MeasurementError, match="generation_s = timing_s/gen is 0 s at step 5") as err:
        tc.load_measurements(_verl_csv(tmp_path, "0"), steps="5:6")
    assert (err.value.key, err.value.step) == ("timing_s/gen", 5)


def test_bad_values_outside_the_kept_steps_are_not_checked(tmp_path):
    m = tc.load_measurements(_verl_csv(tmp_path, "NaN", step=1))  # step 1 is warm-up
    assert m["generation_s"] == pytest.approx(44.5) and m.skipped_steps == ()
    with pytest.raises(tc.MeasurementError, match="at step 1"):
        tc.load_measurements(_verl_csv(tmp_path, "NaN", step=1), steps="1:2")


def test_empty_cells_are_skipped_not_errors():
    m = load("slime_wandb.csv")  # every row of this export is sparse
    assert m.per_step.notna().all().all()


def test_json_nan_is_an_error(tmp_path):
    rows = [json.dumps({"step": s, "data": {"timing_s/step": 5.0}}) for s in (1, 2)] + \
        ['{"step": 3, "data": {"timing_s/step": NaN}}']
    with pytest.raises(tc.MeasurementError, match="timing_s/step is not a finite number at step 3"):
        tc.load_measurements(write(tmp_path, "n.jsonl", "\n".join(rows)), steps="3:")


def test_decreasing_time_stamps(tmp_path):
    text = (LOGS / "areal_wandb.csv").read_text().replace(",1290.0,", ",1100.0,").replace(",390.0,", ",200.0,")
    with pytest.raises(tc.MeasurementError, match="_timestamp does not increase at step 4"):
        tc.load_measurements(write(tmp_path, "a.csv", text), steps="4:5")
    m = tc.load_measurements(write(tmp_path, "a.csv", text))
    assert m.skipped_steps == (4,) and any("step 4: _timestamp does not increase" in w for w in m.warnings)


def test_two_runs_in_one_file(tmp_path):
    text = (LOGS / "nemo_rl_async_tb.csv").read_text()
    lines = text.splitlines()
    lines[-1] = lines[-1].replace("grpo-async", "other-run")
    with pytest.raises(tc.MeasurementError, match="holds 2 runs .*pass run= one of them.*export one run"):
        tc.load_measurements(write(tmp_path, "tb.csv", "\n".join(lines) + "\n"))
    m = tc.load_measurements(write(tmp_path, "tb.csv", "\n".join(lines) + "\n"), run="grpo-async")
    assert m.framework == "nemo-rl"


def test_step_that_is_not_a_whole_number(tmp_path):
    with pytest.raises(tc.MeasurementError, match="not a whole step number"):
        tc.load_measurements(write(tmp_path, "s.csv", "_step,timing_s/step\n1,3\n1.5,4\n"))


# ---------------------------------------------------------------- formats


@pytest.mark.parametrize(("text", "fmt"), [
    ('{"step": 1}\n', "jsonl"), ('{"step": 1}\n{"step": 2}\n', "jsonl"),
    ('{\n  "log_history": [{"step": 1}]\n}\n', "json"), ('[{"step": 1}]', "json"),
    ("step:1 - timing_s/step:3.0\n", "verl-console"),
    ("loading, please wait\nstep:1 - a:1\n", "verl-console"),
    ("Generating: 100%|###| 512/512 [01:13<00:00,  6.97it/s]\nstep:1 - a:1\n", "verl-console"),
    ("_step,a\n1,2\n", "wandb-csv"), ("train/global_step,train/loss\n1,2\n", "wandb-csv"),
    ("Run,Tag,Step,Value\nr,a,1,2\n", "tensorboard-csv"), ("Wall time,Step,Value\n1.0,1,2\n", "tensorboard-tag-csv"),
    ("x\n  • Total step time: 5.0s\n", "nemo-rl-console"), ("(A pid=1) perf 3: {'a': 1}\n", "slime-console"),
    ("12:00 SUCCESS Step 2 | Time: 3.0s | Reward: 1\n", "prime-rl-console"), ("{'loss': 0.1}\n", "trl-console"),
])
def test_format_detection(tmp_path, text, fmt):
    assert registry.detect_format(write(tmp_path, "log", text)).name == fmt


def test_console_lines_are_found_past_any_start_up_noise(tmp_path):
    noise = "".join(f"(TaskRunner pid=1) INFO vLLM start-up line {i}, nothing to read\n" for i in range(5000))
    steps = "".join(f"step:{s} - timing_s/step:{60 + s}\n" for s in range(1, 6))
    m = tc.load_measurements(write(tmp_path, "run.log", noise + steps))
    assert (m.format, m.steps_used, m["step_time_s"]) == ("verl-console", (2, 5), 63.5)


def test_single_tag_download_file(tmp_path):
    path = write(tmp_path, "run-x-tag-timing_s_step.csv", "Wall time,Step,Value\n1.0,1,10\n2.0,2,20\n3.0,3,30\n")
    m = tc.load_measurements(path)
    assert (m.framework, m.format, m["step_time_s"]) == ("verl", "tensorboard-tag-csv", 25.0)


def test_tag_from_filename():
    known = run_metrics.run_metric_table()["trl"].known_keys | {"timing_s/step"}
    assert registry.tag_from_filename("run-exp_1-tag-timing_s_step", known) == ("timing_s/step", "exp_1")
    assert registry.tag_from_filename("timing_s%2Fstep", known) == ("timing_s/step", None)
    assert registry.tag_from_filename("profiling_Time_taken__GRPOTrainer.sync_weights", known)[0] == \
        "profiling/Time taken: GRPOTrainer.sync_weights"
    assert registry.tag_from_filename("my_own_tag", known) == ("my_own_tag", None)


def test_no_two_mapped_keys_share_a_file_name():
    keys = set().union(*(fw.known_keys for fw in run_metrics.run_metric_table().values()))
    flat = {}
    for key in keys:
        flat.setdefault(registry.tag_from_filename(key.replace("/", "_"), keys)[0], set()).add(key)
    assert all(len(v) == 1 for v in flat.values()), [v for v in flat.values() if len(v) > 1]


def test_console_values_with_numpy_wrappers(tmp_path):
    path = write(tmp_path, "c.txt", "step:1 - timing_s/step:np.float64(12.5) - timing_s/gen:np.int64(7)\n"
                                    "step:2 - timing_s/step:np.float32(13.5) - timing_s/gen:8\n")
    m = tc.load_measurements(path, steps="1:")
    assert m.per_step["step_time_s"].tolist() == [12.5, 13.5] and m["generation_s"] == 7.5


def test_wandb_rows_with_one_step_are_merged(tmp_path):
    path = write(tmp_path, "w.csv", "_step,timing_s/step,timing_s/gen\n1,10,\n1,,4\n2,12,\n2,,6\n3,14,\n3,,8\n")
    m = tc.load_measurements(path, steps="1:")
    assert m.per_step.to_dict("list") == {"step_time_s": [10.0, 12.0, 14.0], "generation_s": [4.0, 6.0, 8.0]}


def test_jsonl_ignores_nested_values(tmp_path):
    rows = [{"step": s, "time/step": 3.0, "time/forward_backward": 2.0, "hist": [1, 2], "cfg": {"a": 1}}
            for s in (1, 2)]
    m = tc.load_measurements(write(tmp_path, "p.jsonl", "\n".join(map(json.dumps, rows))), steps="1:")
    assert m.framework == "prime-rl" and m["step_time_s"] == 3.0


# ---------------------------------------------------------------- the data file and the doc page


def test_shipped_table_covers_every_framework():
    table = run_metrics.run_metric_table()
    assert list(table) == ["verl", "nemo-rl", "slime", "areal", "prime-rl", "open-instruct", "trl"]
    for fw in table.values():
        assert "step_time_s" in fw.measures and "generation_s" in fw.measures
        for variants in fw.measures.values():
            for v in variants:
                # repo@commit:path of the framework itself, or the real log a key was seen in
                assert v.source.startswith((fw.source + ":", "https://github.com/")), v
                assert v.kind in ("published", "assumption")


def test_nothing_shipped_cites_the_shared_folder():
    files = [TOML, DOC, ROOT / "data" / "log_limits.toml", ROOT / "tcocalc" / "catalog" / "run_metrics.py",
             *(ROOT / "tcocalc" / "logs").rglob("*.py"), *(LOGS / "real").iterdir()]
    for path in files:
        assert "../shared" not in path.read_text() and "/work/" not in path.read_text(), path


@pytest.mark.parametrize(("old", "new", "entry", "field"), [
    ('source = "THUDM/slime@624b824a898a:slime/ray/rollout.py"\n', "", "framework.slime.measure.generation_s[1]",
     "source"),
    ('keys = ["perf/rollout_time"]\nunit = "s"', 'keys = ["perf/rollout_time"]\nunit = "tokens"',
     "framework.slime.measure.generation_s[1]", "unit"),
    ('keys = ["perf/rollout_time"]\nunit = "s"', 'keys = ["perf/rollout_time"]\nunit = "s"\ncolour = "red"',
     "framework.slime.measure.generation_s[1]", "colour"),
    ('keys = ["perf/rollout_time"]\nunit = "s"', 'keys = ["perf/rollout_time"]\nunit = "s"\nexposed = "yes"',
     "framework.slime.measure.generation_s[1]", "exposed"),
    ('keys = ["perf/rollout_time"]\nunit = "s"', 'keys = ["perf/rollout_time"]\nunit = "s"\nrank_mean = 1',
     "framework.slime.measure.generation_s[1]", "rank_mean"),
    ('keys = ["perf/rollout_time"]\n', 'keys = []\n', "framework.slime.measure.generation_s[1]", "keys"),
    ('op = "product"\nunit = "samples"', 'op = "ratio"\nunit = "samples"',
     "framework.nemo-rl.measure.samples_per_step[1]", "op"),
    ('date = "2026-08-21"\nstep_column = "rollout/step"', 'date = "Aug 2026"\nstep_column = "rollout/step"',
     "framework.slime", "date"),
    ('[[framework.slime.measure.training_s]]', '[[framework.slime.measure.training_time]]',
     "framework.slime.measure.training_time", ""),
])
def test_bad_data_file_entries_are_named(old, new, entry, field):
    text = TOML.read_text()
    assert old in text
    with pytest.raises(tc.DataFileError) as err:
        run_metrics.parse_run_metrics(text.replace(old, new, 1))
    assert (err.value.path, err.value.entry, err.value.field) == ("data/run_metrics.toml", entry, field)


def test_bad_kind_is_refused():
    text = TOML.read_text().replace('kind = "published"', 'kind = "documented"', 1)
    with pytest.raises(tc.DataFileError, match="kind.*unknown kind 'documented'"):
        run_metrics.parse_run_metrics(text)


def test_doc_page_key_tables_match_the_data_file():
    page = DOC.read_text()
    start, end = "<!-- key-table:start -->\n", "<!-- key-table:end -->"
    assert start in page and end in page
    shown = page[page.index(start) + len(start):page.index(end)]
    assert shown == run_metrics.key_table_markdown(), (
        "docs/run-logs.md is out of date: paste the output of "
        "`python -c 'from tcocalc.catalog.run_metrics import key_table_markdown; print(key_table_markdown())'` "
        "between the key-table markers")


def test_doc_page_states_the_warmup_rule():
    page = DOC.read_text()
    assert "ceil(10 %) of the usable steps\n(validation steps left out), at least 1, at most 20" in page
    assert (measurements.WARMUP_SHARE, measurements.WARMUP_MAX_STEPS) == (0.10, 20)


def test_waits_names_an_outer_timer_of_contains():
    """``waits`` (outer timer -> markers of the modes where it is only the trainer's wait) must name a timer the
    ``contains`` table nests others in; a stray one is refused naming the field."""
    text = TOML.read_text().replace('[framework.verl.waits]\n"timing_s/gen"', '[framework.verl.waits]\n"timing_s/gne"')
    with pytest.raises(tc.DataFileError, match=r"framework\.verl.*waits\.timing_s/gne"):
        run_metrics.parse_run_metrics(text)


def test_unless_rules_a_way_out():
    """A way with ``unless`` keys applies only to logs without them: verl's colocated switch (gen less the
    generation) is not formed in a one-step-off log, where gen is the trainer's wait."""
    verl = run_metrics.run_metric_table()["verl"]
    switch = next(v for v in verl.measures["switching_s"] if "timing_s/generate_sequences" in v.minus)
    assert set(switch.unless) == {"timing_s/generate_async", "fully_async/", "timing_s/switch_to_rollout"}
    assert "fully_async/" in verl.prefixes and verl.waits["timing_s/gen"] == switch.unless


def test_slime_step_time_needs_both_its_parts(tmp_path):
    """slime's step is perf/train_wait_time + perf/train_time: a log with the wait alone (miles' quick-start prints
    an abridged perf dict) has no step time, rather than the wait taken for the step."""
    path = tmp_path / "slime.log"
    path.write_text("".join(f"perf {i}: {{'perf/rollout_time': 98.6, 'perf/train_wait_time': 101.2, "
                            f"'perf/actor_train_time': 41.3}}\n" for i in range(3)))
    m = tc.load_measurements(path)
    assert "step_time_s" not in m.summary and m.summary["training_s"] == pytest.approx(41.3)
    path.write_text("".join(f"perf {i}: {{'perf/train_wait_time': 101.2, 'perf/train_time': 45.0}}\n"
                            for i in range(3)))
    assert tc.load_measurements(path).summary["step_time_s"] == pytest.approx(146.2)
