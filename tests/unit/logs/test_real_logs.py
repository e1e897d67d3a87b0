"""tc.load_measurements on real logs written by people outside the project (tests/data/logs/real/, sources in its
SOURCES.md): one test per real format, each pinning the medians worked out by hand from the file.

The hand medians below were computed outside tcocalc (a plain regex / json read of the file and statistics.median
over the steps the documented rules keep: validation steps out, then ceil(10 %) of the training steps dropped as
warm-up); each comment says which steps.
"""

from __future__ import annotations

import statistics

import pytest

import tcocalc as tc
from tests.conftest import ROOT

REAL = ROOT / "tests" / "data" / "logs" / "real"

pytestmark = pytest.mark.reference


def load(name: str, **kw) -> tc.Measurements:
    return tc.load_measurements(REAL / name, **kw)


def summary(m: tc.Measurements) -> dict[str, float]:
    return {k: round(v, 4) for k, v in m.items()}


# ---------------------------------------------------------------- verl


def test_verl_fsdp_console_after_954_lines_of_start_up():
    """954 lines of Ray/Hydra/vLLM start-up, ANSI colours, '(TaskRunner pid=...)' prefixes; steps 0..39 printed,
    step 0 validation only, steps 5, 10, ..., 35 also validate (timing_s/testing); 32 training steps, 4 dropped as
    warm-up, medians over steps 6..39 without 10, 15, ... (28 steps)."""
    m = load("verl_fsdp_qwen2-7b_math.log")
    assert (m.framework, m.format, m.steps_used, m.warmup_steps) == ("verl", "verl-console", (6, 39), 4)
    assert m.validation_steps == (5, 10, 15, 20, 25, 30, 35) and len(m.per_step) == 28
    assert summary(m) == pytest.approx({
        "step_time_s": 219.112, "generation_s": 48.336, "training_s": 126.9865, "logprob_s": 31.291,
        "switching_s": 11.059, "response_tokens_mean": 225.319, "response_tokens_longest": 1024.0,
        "prompt_tokens": 101.881})
    # the legacy trainer's gen (median 59.2265) holds the engine's generate_sequences and the colocated switch
    # (reshard, wake-up, sleep): generation is the engine's own timer, switching the rest (medians checked by a
    # regex over the file's step lines, 2026-12-06)
    assert m.keys_used["generation_s"] == ("timing_s/generate_sequences",)
    assert any("7 validation steps" in w and "left out of the medians" in w for w in m.warnings)
    assert "response_tokens_max" not in m  # the longest response is not the configured cap
    assert m.skipped_steps == () and m.exposed == ()
    # generate_sequences is all-reduced with ReduceOp.AVG (the engines' mean) while gen ends with the slowest
    # engine: both the generation and the switch taken from them are marked for calibrate's like-with-like
    assert m.rank_mean == ("generation_s", "switching_s")


def test_verl_validation_steps_are_kept_when_asked():
    m = load("verl_fsdp_qwen2-7b_math.log", keep_validation=True)
    assert m.validation_steps == (5, 10, 15, 20, 25, 30, 35) and len(m.per_step) == 35  # 39 steps, 4 warm-up
    slow = load("verl_fsdp_qwen2-7b_math.log")["step_time_s"]
    assert m["step_time_s"] > slow  # validation runs inside timing_s/step


def test_verl_megatron_console():
    """793 lines of start-up; steps 1..34 with a timer, validation at 5, ..., 30: 28 training steps, 3 dropped,
    medians over steps 4..34 without 5, 10, ... (25 steps)."""
    m = load("verl_megatron_qwen2-7b_math.log")
    assert (m.format, m.steps_used, m.warmup_steps, len(m.per_step)) == ("verl-console", (4, 34), 3, 25)
    assert summary(m) == pytest.approx({
        "step_time_s": 211.683, "generation_s": 38.105, "training_s": 109.24, "logprob_s": 53.327,
        "switching_s": 9.073, "response_tokens_mean": 171.223, "response_tokens_longest": 1024.0,
        "prompt_tokens": 93.475})  # gen 46.962 = generate_sequences + the switch, as in the FSDP log


def test_verl_older_timing_keys_of_its_own_docs():
    """verl's quickstart prints timing/* keys and no whole-step timer; step 0 is warm-up, step 1 is read. A PPO run:
    the critic's value pass (timing/values) counts with the log-prob passes, its update with the actor's."""
    m = load("verl_docs_quickstart.log")
    assert (m.steps_used, m.format) == ((1, 1), "verl-console")
    assert summary(m) == pytest.approx({"generation_s": 23.02, "training_s": 20.526 + 15.646,
                                        "logprob_s": 4.322 + 5.953,  # timing/ref + timing/values (the critic)
                                        "response_tokens_mean": 232.242, "response_tokens_longest": 256.0,
                                        "prompt_tokens": 102.398})
    assert m.keys_used["training_s"] == ("timing/update_actor", "timing/update_critic")


def test_a_verl_log_read_as_nemo_rl_names_verl():
    with pytest.raises(tc.MeasurementError, match="read with framework='nemo-rl', but it looks like a verl log") as e:
        load("verl_megatron_qwen2-7b_math.log", framework="nemo-rl")
    assert e.value.field == "framework"


def test_a_hard_wrapped_paste_reads_as_the_unwrapped_lines(tmp_path):
    lines = [line for line in (REAL / "verl_fsdp_qwen2-7b_math.log").read_text(errors="replace").splitlines()
             if "step:" in line and "timing_s/step" in line][:6]
    wrapped = "\n".join(line[i:i + 80] for line in lines for i in range(0, len(line), 80)) + "\n"
    path = tmp_path / "paste.log"
    path.write_text(wrapped)
    m, whole = tc.load_measurements(path), tc.load_measurements(REAL / "verl_fsdp_qwen2-7b_math.log", steps="2:7")
    assert m.steps_used == (2, 6) and m.validation_steps == (5,) and list(m.per_step.index) == [2, 3, 4, 6]
    assert m.per_step.equals(whole.per_step)
    assert any("hard-wrapped lines were joined" in w for w in m.warnings)


def test_a_cut_off_last_line_and_bad_bytes_are_counted(tmp_path):
    data = (REAL / "verl_megatron_qwen2-7b_math.log").read_bytes()
    cut = data[:data.rindex(b"timing_s/step:") + 16]  # the last step line ends inside its step time
    path = tmp_path / "cut.log"
    path.write_bytes(cut[:5000] + b"\xff\xfe garbage \x80\n" + cut[5000:])
    m = tc.load_measurements(path)
    last = load("verl_megatron_qwen2-7b_math.log").per_step.index[-1]
    assert m.per_step.index[-1] < last
    assert any("was cut off (no line end) and was skipped" in w for w in m.warnings)
    assert any("1 lines held bytes that are not UTF-8" in w for w in m.warnings)


# ---------------------------------------------------------------- NeMo RL, slime, prime-rl, TRL


def test_nemo_rl_console_timing_block():
    """An async GRPO step: exposed_generation is the trainer's wait, flagged exposed, not the generation."""
    m = load("nemo_rl_pr1052_timing.log")
    assert (m.framework, m.format) == ("nemo-rl", "nemo-rl-console")
    assert summary(m) == pytest.approx({"step_time_s": 66.55, "generation_s": 32.52, "training_s": 25.05,
                                        "logprob_s": 4.78, "weight_sync_s": 0.13, "switching_s": 1.34 + 1.06})
    assert m.exposed == ("generation_s",)
    assert m.keys_used["generation_s"] == ("timing/train/exposed_generation",)


def test_slime_console_perf_dict():
    m = load("slime_issue1837_console.log")
    assert (m.framework, m.format, m.steps_used) == ("slime", "slime-console", (0, 0))
    assert summary(m) == pytest.approx({"generation_s": 371.1797, "response_tokens_mean": 2773.7148,
                                        "response_tokens_longest": 4096.0})


def test_slime_json_summary_of_runs():
    with pytest.raises(tc.MeasurementError, match=r"holds 6 runs \(async_1eng, async_2eng, async_3eng, sync_1eng, "
                                                  r"sync_2eng, sync_3eng\); pass run="):
        load("slime_skypilot_metrics_trimmed.json")
    m = load("slime_skypilot_metrics_trimmed.json", run="sync_1eng")  # step 1 warm-up, step 2 as published
    assert (m.framework, m.format, m.steps_used) == ("slime", "json-runs", (2, 2))
    assert summary(m) == pytest.approx({"step_time_s": 1697.5, "generation_s": 1267.9, "weight_sync_s": 31.6})


def test_prime_rl_orchestrator_console():
    """Steps 28..31 printed; 28 dropped; Time 72.73, 79.39, 79.28 -> 79.28 (the orchestrator's cycle)."""
    m = load("prime_rl_pr1318_orchestrator.log")
    assert (m.framework, m.format, m.steps_used) == ("prime-rl", "prime-rl-console", (29, 31))
    assert summary(m) == pytest.approx({"step_time_s": 79.28})
    assert any("no trainer rows in the log: time/step is the orchestrator's" in w for w in m.warnings)


def test_prime_rl_trainer_benchmark_is_named_and_refused():
    with pytest.raises(tc.MeasurementError, match=r"a trainer-only benchmark \(prime-rl benchmarks/baselines: rl "
                                                  r"trainer on 8 GPUs.*mean step 7.92 s, MFU 15.3 %\), not a pilot "
                                                  r"RL run's log.*cannot calibrate a pilot run's stages") as e:
        load("prime_rl_benchmark_8xh100_qwen3_30b_rl.json")
    assert e.value.field == "path"


def test_trl_trainer_state_without_timers_is_named_as_such():
    """40 log_history entries at steps 5..200; 4 dropped; medians over steps 25..200."""
    m = load("trl_chaos_economy_trainer_state.json")
    assert (m.framework, m.format, m.steps_used) == ("trl", "trl-trainer-state", (25, 200))
    assert summary(m) == pytest.approx({"response_tokens_mean": 501.325, "response_tokens_longest": 512.0})
    assert any(w.startswith("no timer in this log (trl-trainer-state)") and "cannot calibrate any stage time" in w
               for w in m.warnings)


def test_trl_console_dicts():
    """Four printed dicts, no step: windows 1..4, 1 dropped; completion_length 237.0375, 233.45, 235.6."""
    m = load("trl_issue3452_console.log")
    assert (m.framework, m.format, m.steps_used) == ("trl", "trl-console", (2, 4))
    assert summary(m) == pytest.approx({"response_tokens_mean": 235.6})
    assert any("dict n is read as logging window n" in w for w in m.warnings)


def test_every_real_file_has_a_source_line():
    sources = (REAL / "SOURCES.md").read_text()
    for path in REAL.iterdir():
        if path.name != "SOURCES.md":
            assert f"`{path.name}`" in sources, path.name


def _quarters(m: tc.Measurements, name: str) -> tuple[float, float]:
    """The medians of the first and the last quarter of a measurement's kept steps, computed here from the
    per-step values (statistics.median), independently of the reader's drift report."""
    import statistics

    s = [float(v) for v in m.per_step[name].dropna()]
    q = len(s) // 4
    return statistics.median(s[:q]), statistics.median(s[-q:])


def test_a_run_that_drifts_over_its_kept_steps_says_so():
    """TRL's chaos-economy trainer_state.json: the mean completion grows over the run, and the verl GSM8k FSDP
    excerpt's engine falls into its quicker regime, so the first and last quarters' medians differ by more than the
    10% a calibrated stage may miss (data/log_limits.toml drift_tolerance): the warning names each with both
    medians and gives the steps of the last quarter; the Megatron excerpt, NeMo RL's timing block and the verl
    quickstart stay below it and say nothing."""
    trl = load("trl_chaos_economy_trainer_state.json")
    first, last = _quarters(trl, "response_tokens_mean")
    assert last / first > 1.10
    drift = [w for w in trl.warnings if w.startswith("the run drifts")]
    assert len(drift) == 1 and f"response_tokens_mean {first:,.4g} -> {last:,.4g} tokens" in drift[0]
    q = len(trl.per_step) // 4
    assert f"steps={int(trl.per_step.index[-q])}:{int(trl.per_step.index[-1]) + 1} reads the last quarter" in drift[0]
    fsdp = load("verl_fsdp_qwen2-7b_math.log")
    first, last = _quarters(fsdp, "generation_s")
    assert last / first < 1 / 1.10
    assert any(f"generation_s {first:,.4g} -> {last:,.4g} s" in w for w in fsdp.warnings)
    for quiet in ("verl_megatron_qwen2-7b_math.log", "nemo_rl_pr1052_timing.log", "verl_docs_quickstart.log"):
        assert not any(w.startswith("the run drifts") for w in load(quiet).warnings), quiet


@pytest.mark.parametrize("late, warned", [(115.0, True), (109.0, False)])
def test_the_drift_report_takes_the_calibrations_tolerance(late, warned):
    """Eight steps of 100 s then 115 s (or 109 s): quarter medians 100 and 115 differ by 15%, over the 10%
    tolerance, and are reported; 9% is not; under eight steps nothing is checked."""
    import pandas as pd

    from tcocalc.logs.measurements import _drift

    frame = pd.DataFrame({"step_time_s": [100.0] * 4 + [late] * 4}, index=pd.Index(range(10, 18), name="step"))
    out = _drift(frame)
    assert bool(out) == warned
    if warned:
        assert "step_time_s 100 -> 115 s (1.15x)" in out[0] and "steps=16:18" in out[0]
    assert _drift(frame.iloc[:7]) == []


def test_a_paste_that_lost_the_start_of_its_step_line_is_refused_saying_so():
    """A real paste (RLDecisionAgent docs/Error.md): one verl step line hard-wrapped by a Markdown editor whose
    beginning ('step:N - ' and the first metrics) was not copied. No line says which step the figures belong to,
    so nothing is read; the refusal names verl's timer pieces, the missing start and what works instead, not
    "no line is in a console format"."""
    with pytest.raises(tc.MeasurementError) as e:
        load("verl_issue_paste_hardwrapped.log")
    text = str(e.value)
    assert "verl console pieces (timing_s/start_profile: ...) outside any step line" in text
    assert "--measured KEY=VALUE" in text and "no line is in a console format" not in text


def test_a_line_of_prose_after_a_step_line_is_not_joined_to_it(tmp_path):
    """A wrapped continuation is printable ASCII pieces ('key:value - key:value'); a heading in another script
    right after a step line (a tuning note pasting one verl step, then '初始参数说明') stays a line of its own: the
    step's figures and no "joined" warning."""
    line = next(line for line in (REAL / "verl_fsdp_qwen2-7b_math.log").read_text(errors="replace").splitlines()
                if "step:6 -" in line and "timing_s/step" in line)
    path = tmp_path / "note.md"
    path.write_text("已知强化学习第六步的性能如下：\n" + line + "\n初始参数说明\n")
    m = tc.load_measurements(path)
    whole = load("verl_fsdp_qwen2-7b_math.log", steps="6:7")
    assert m.per_step.equals(whole.per_step)
    assert not any("joined" in w for w in m.warnings)


def test_verl_one_key_a_line_as_a_readme_prints_it():
    """llm-d's verl README prints a step as '(TaskRunner pid=15930, ip=10.4.1.33) step:1' and then one ' - key:value'
    line per key (81 lines): read as the step's line, with a note saying so. Hand-read: step 93.524, gen 24.533 of
    which the agent loop's slowest trajectory 20.618 in the engine and 0 in tools (the generation) and 3.915 the rest
    (replicas put to sleep, dispatch: the switch), update_actor 35.834, old_log_prob 13.6356 + ref 12.5479,
    update_weights 5.458, response mean 424.55, prompt 111.12."""
    m = load("verl_readme_one_key_a_line.log")
    assert (m.framework, m.format, m.steps_used) == ("verl", "verl-console", (1, 1))
    assert summary(m) == pytest.approx({
        "step_time_s": 93.5243, "generation_s": 20.6181, "switching_s": 24.5334 - 20.6181, "training_s": 35.8338,
        "logprob_s": 26.1834, "weight_sync_s": 5.458, "response_tokens_mean": 424.5494,
        "response_tokens_longest": 1024.0, "prompt_tokens": 111.1162})
    assert m.keys_used["generation_s"] == ("timing_s/agent_loop/slowest/generate_sequences",
                                           "timing_s/agent_loop/slowest/tool_calls")
    assert any("printed one key a line" in w and "81 key lines" in w for w in m.warnings)


def test_verl_one_key_a_line_without_its_step_line_is_refused_saying_so(tmp_path):
    path = tmp_path / "no_step.log"
    path.write_text("".join((REAL / "verl_readme_one_key_a_line.log").read_text().splitlines(True)[1:]))
    with pytest.raises(tc.MeasurementError, match="no step line, only verl console pieces"):
        tc.load_measurements(path)


def test_prime_rl_steps_printed_several_to_a_line():
    """PR 1630 pastes the orchestrator's output as a Python list: 'Step 13 | Time: 7.47s | ...' and 'Step 14 | Time:
    0.58s | ...' sit on one physical line (step 15 is cut before its time). Both are read (step 13 then dropped as
    warm-up by the documented rule); no field of the next list item leaks in as a key."""
    m = load("prime_rl_pr1630_list_repr.log", steps="13:15")
    assert list(m.per_step.index) == [13, 14]
    assert list(m.per_step["step_time_s"]) == pytest.approx([7.47, 0.58])
    assert set(m.ignored_keys) == {"Async Level", "Max. Off-Policy Level", "Reward", "Seq. Length", "Throughput"}


def test_a_tqdm_bar_is_refused_as_a_progress_bar():
    """OpenRLHF's tqdm postfix (pg=..., glen=770) is a smoothed display without a step's timers: the refusal says so
    instead of calling the line a CSV header."""
    with pytest.raises(tc.MeasurementError) as e:
        load("openrlhf_simplerl_issue24_tqdm.log")
    assert "a progress bar (tqdm)" in str(e.value) and "CSV" not in str(e.value).split("Formats read")[0]


def test_a_ray_log_without_a_step_says_the_run_may_have_stopped(tmp_path):
    """A verl run that died before its first step prints only Ray lines ('(TaskRunner pid=...)', one of them a dict
    with commas): the refusal says no step's metrics were printed, not that it is a CSV without a step column."""
    lines = [line for line in (REAL / "verl_fsdp_qwen2-7b_math.log").read_text(errors="replace").splitlines()
             if line.startswith("(TaskRunner pid=") and "step:" not in line][:20]
    path = tmp_path / "crash.log"
    path.write_text("(TaskRunner pid=285358) test_gen_batch meta info: {'eos_token_id': 32021, 'pad_token_id': 32014}\n"
                    + "\n".join(lines) + "\n")
    with pytest.raises(tc.MeasurementError, match="a Ray console log .* no step's metrics were printed"):
        tc.load_measurements(path)


def test_trl_dicts_printed_after_a_tqdm_bar_are_read(tmp_path):
    """A captured console loses the bar's carriage return, so a logging dict follows the bar on its line
    ('... 3.02s/it]{'loss': ...}'): read like a dict on a line of its own."""
    dicts = (REAL / "trl_issue3452_console.log").read_text().splitlines()
    bars = [f" {10 * i}%|█         | {i}/10 [00:{10 + i}<00:40,  3.0{i}s/it]" for i in range(1, len(dicts) + 1)]
    path = tmp_path / "tqdm.log"
    path.write_text("\n".join(b + d for b, d in zip(bars, dicts, strict=True)) + "\n")
    glued, whole = tc.load_measurements(path), load("trl_issue3452_console.log")
    assert glued.per_step.drop(columns="step_time_s").equals(whole.per_step)
    assert {k: v for k, v in glued.summary.items() if k != "step_time_s"} == dict(whole.summary)
    # the bar's rate before each dict is the step's pace (console/progress_s_per_it): 3.02, 3.03, 3.04 s/it kept
    assert list(glued.per_step["step_time_s"]) == [3.02, 3.03, 3.04] and "step_time_s" not in whole.summary


def test_a_slime_perf_dict_printed_over_several_lines_is_gathered(tmp_path):
    """slime's perf dict pretty-printed ('perf 0: {', one "'key': value," a line, '}') reads as the one-line dict."""
    text = (REAL / "slime_issue1837_console.log").read_text()
    line = next(line for line in text.splitlines() if " - perf 0: {" in line)
    head, body = line.split("perf 0: {", 1)
    items = [item.strip() for item in body.rstrip().rstrip("}").split(", '")]
    spread = head + "perf 0: {\n" + ",\n".join(("  " if i == 0 else "  '") + item for i, item in enumerate(items)) \
        + "\n}\n"
    path = tmp_path / "spread.log"
    path.write_text(spread)
    m, whole = tc.load_measurements(path), load("slime_issue1837_console.log")
    assert m.summary == whole.summary
    assert any("printed over several lines were gathered" in w for w in m.warnings)


@pytest.mark.parametrize("width", [200, 97])
def test_a_slime_perf_dict_hard_wrapped_by_a_paste_is_joined_again(tmp_path, width):
    """slime's perf line as an issue tracker or a terminal wraps it, every ``width`` characters even inside a key or
    a number (THUDM/slime PR 1102 pastes one so, wrapped at about 200): the pieces join again and read as the
    one-line dict, with a note; a wrapped dict that never closes is counted as cut off."""
    text = (REAL / "slime_issue1837_console.log").read_text()
    wrapped = "\n".join(line if " - perf 0: {" not in line else
                         "\n".join(line[i:i + width] for i in range(0, len(line), width))
                         for line in text.splitlines()) + "\n"
    path = tmp_path / "wrapped.log"
    path.write_text(wrapped)
    m, whole = tc.load_measurements(path), load("slime_issue1837_console.log")
    assert m.format == "slime-console" and m.summary == whole.summary
    assert any("hard-wrapped over several lines" in w for w in m.warnings)
    cut = tmp_path / "cut.log"
    cut.write_text(wrapped.rsplit("}", 1)[0] + "\n")
    with pytest.raises(tc.MeasurementError):
        tc.load_measurements(cut)


def test_nemo_rl_mean_generation_length_of_the_results_block(tmp_path):
    """grpo.py prints '• Mean Generation Length: <mean_gen_tokens_per_sample>' in the Training Results block before
    the timing block: it is the step's response_tokens_mean."""
    block = (REAL / "nemo_rl_pr1052_timing.log").read_text()
    path = tmp_path / "with_results.log"
    path.write_text("📊 Training Results:\n  • Loss: 0.0000\n  • Mean Generation Length: 201.2197\n\n" + block)
    m = tc.load_measurements(path)
    assert m.summary["response_tokens_mean"] == pytest.approx(201.2197)
    assert m.keys_used["response_tokens_mean"] == ("train/mean_gen_tokens_per_sample",)
    rest = {k: v for k, v in m.summary.items() if k != "response_tokens_mean"}
    assert rest == load("nemo_rl_pr1052_timing.log").summary


def test_a_one_step_off_log_whose_gen_is_only_the_wait_keeps_its_steps(tmp_path):
    """In one-step-off (verl's one_step_off_policy trainer) timing_s/gen is the trainer's residual wait while the
    batch's own timers (generate_sequences, timing_s/generate_async) run beside it, so gen 'contains' nothing: the
    per-step nesting check leaves it out (data/run_metrics.toml waits) and no gen-less-generation switch is formed.
    The real FSDP log's step lines, rewritten as one-step-off lines: gen a 5 s wait, generate_async the old gen."""
    import re

    lines = [line for line in (REAL / "verl_fsdp_qwen2-7b_math.log").read_text(errors="replace").splitlines()
             if "step:" in line and "timing_s/step" in line and "timing_s/testing" not in line][:12]
    out, gens = [], []
    for line in lines:
        gen = float(re.search(r"timing_s/gen:([\d.]+)", line).group(1))
        gens.append(gen)
        out.append(re.sub(r"timing_s/gen:[\d.]+", "timing_s/gen:5.0", line) + f" - timing_s/generate_async:{gen}")
    path = tmp_path / "one_step_off.log"
    path.write_text("\n".join(out) + "\n")
    m = tc.load_measurements(path)
    assert not any("unsound" in w for w in m.warnings)
    assert m.keys_used["generation_s"] == ("timing_s/generate_async",) and "switching_s" not in m.summary
    assert m.summary["generation_s"] == pytest.approx(statistics.median(gens[m.warmup_steps:]))


def test_trl_log_history_saved_as_a_bare_list():
    """A GRPO run's log_history dumped on its own (a list of HF Trainer entries, not a trainer_state.json): read as
    TRL's, keys as train/<key>. Hand-read with json + statistics.median: 40 entries with step_time (steps 5..200),
    ceil(10%) = 4 dropped, medians over steps 25..200: step_time 32.0841 s, completions/mean_length 512."""
    m = load("trl_log_history_list.json")
    assert (m.framework, m.format, m.steps_used, m.warmup_steps) == ("trl", "trl-trainer-state", (25, 200), 4)
    assert summary(m)["step_time_s"] == pytest.approx(32.0841) and summary(m)["response_tokens_mean"] == 512.0
    assert any("read as a trainer_state.json's log_history" in w for w in m.warnings)


def test_a_steps_mapping_keyed_by_step_number_is_read(tmp_path):
    """{"steps": {"1": {...}, ...}} (an AReaL stats summary's shape) reads one record a step; a document whose only
    list holds per-sample records without a step (its "rollouts") is refused naming the shapes read, never read as
    steps."""
    import json

    steps = {str(n): {"timeperf/train_step": t, "timeperf/rollout": 0.01, "ppo_actor/n_seqs": 8.0}
             for n, t in ((1, 3.55), (2, 0.361), (3, 0.339))}
    path = tmp_path / "summary.json"
    path.write_text(json.dumps({"steps": steps, "rollouts": [{"reward": 1.0}, {"reward": 0.0}], "note": "x"}))
    m = tc.load_measurements(path, framework="areal")
    assert list(m.per_step.index) == [2, 3] and m.summary["training_s"] == pytest.approx((0.361 + 0.339) / 2)
    assert any("read the document's steps mapping (3 steps); not read: note, rollouts" in w for w in m.warnings)
    only_rollouts = tmp_path / "rollouts.json"
    only_rollouts.write_text(json.dumps({"rollouts": [{"reward": 1.0}, {"reward": 0.0}]}))
    with pytest.raises(tc.MeasurementError, match="no shape a reader takes .*each with a step or _step"):
        tc.load_measurements(only_rollouts)


def test_a_wandb_chart_export_needs_its_run_and_reads_its_keys():
    """W&B's chart export (Deep-GRPO's response-length panel, two verl runs): several runs need run=, which names
    them; with run= the run's plotted key is read under its own name against the Step column, its __MIN/__MAX bucket
    bounds left out (its key, response_length/main_chain/mean, is that repository's own, which no reader maps)."""
    from tcocalc.logs.registry import read_log

    with pytest.raises(tc.MeasurementError, match=r"holds 2 runs \(Qwen2.5-0.5B-Instruct-GSM8K-CRPO-sp-p1-b8-gamma2"):
        load("wandb_panel_export_two_runs.csv")
    raw = read_log(REAL / "wandb_panel_export_two_runs.csv", run="qwen2.5-0.5b-instruct-gsm8k-crpo-no-branch")
    assert raw.format == "wandb-panel-csv" and list(raw.rows["_step"][:3]) == [1.0, 2.0, 3.0] and len(raw.rows) == 200
    assert raw.unmapped == {"response_length/main_chain/mean"}
    with pytest.raises(tc.MeasurementError, match="has no run 'nope'; its runs: Qwen2.5"):
        read_log(REAL / "wandb_panel_export_two_runs.csv", run="nope")


def test_a_wandb_chart_export_of_mapped_keys_reads_like_the_run(tmp_path):
    """The two real verl logs' step times and response means laid out as W&B's chart export of two runs (x-axis
    Step, '<run> - <key>' columns with __MIN/__MAX): each run reads as its console log does."""
    import csv as csv_module

    runs = {"fsdp": load("verl_fsdp_qwen2-7b_math.log", keep_validation=True),
            "megatron": load("verl_megatron_qwen2-7b_math.log", keep_validation=True)}
    keys = {"timing_s/step": "step_time_s", "response_length/mean": "response_tokens_mean"}
    steps = sorted(set(runs["fsdp"].per_step.index) | set(runs["megatron"].per_step.index))
    header = ["Step"] + [f"{r} - {k}{b}" for r in runs for k in keys for b in ("", "__MIN", "__MAX")]
    path = tmp_path / "panel.csv"
    with path.open("w", newline="") as f:
        out = csv_module.writer(f, quoting=csv_module.QUOTE_ALL)
        out.writerow(header)
        for s in steps:
            row = [s]
            for m in runs.values():
                for name in keys.values():
                    v = m.per_step[name].get(s) if s in m.per_step.index else None
                    row += ["" if v is None else float(v)] * 3
            out.writerow(row)
    for run, whole in runs.items():
        kept = whole.per_step.index  # the console read's kept steps, read here with no further warm-up drop
        m = tc.load_measurements(path, run=run, framework="verl", keep_validation=True,
                                 steps=f"{kept[0]}:{kept[-1] + 1}")
        assert m.format == "wandb-panel-csv"
        assert m.summary == pytest.approx({n: whole.summary[n] for n in keys.values()})


def test_run_on_a_one_run_history_csv_is_refused_not_ignored():
    with pytest.raises(tc.MeasurementError, match="holds one run, so run='other' picks nothing"):
        tc.load_measurements(ROOT / "tests" / "data" / "logs" / "verl_wandb.csv", run="other")


def test_trl_dicts_take_their_step_from_the_training_bar(tmp_path):
    """The HF Trainer logs a dict after its progress bar has moved to the step, so a console that prints the bar
    (its largest total: the training loop's, not shard loading's) before each dict gives the dicts' steps; where a
    count is missing or does not rise, dict n stays logging window n."""
    dicts = (REAL / "trl_issue3452_console.log").read_text().splitlines()
    shards = "Loading checkpoint shards: 100%|##########| 2/2 [00:00<00:00,  8.66it/s]\n"
    bars = [f" {i}%|█         | {10 * i}/120 [00:{10 + i}<04:00,  3.0{i}s/it]" for i in range(1, len(dicts) + 1)]
    path = tmp_path / "bars.log"
    path.write_text(shards + "".join(f"{b}\n{d}\n" for b, d in zip(bars, dicts, strict=True)))
    m = tc.load_measurements(path, steps="1:1000")
    assert list(m.per_step.index) == [10 * i for i in range(1, len(dicts) + 1)]
    assert any("training progress bar's count printed before it (steps 10..40 of 120)" in w for w in m.warnings)
    assert list(m.per_step["response_tokens_mean"]) == list(load("trl_issue3452_console.log", steps="1:1000")
                                                           .per_step["response_tokens_mean"])
    path.write_text("".join(f"{b}\n{d}\n" for b, d in zip(reversed(bars), dicts, strict=True)))  # counts fall
    assert list(tc.load_measurements(path, steps="1:1000").per_step.index) == list(range(1, len(dicts) + 1))


def test_prime_rl_trainer_console_lines_are_the_trainers_steps():
    """prime-rl's trainer prints 'Step N | Time: ... | Loss: ... | MFU: ...' (PR 999, steps 0-4): its Time is the
    trainer's step, read as such (the orchestrator's lines carry no Loss). Hand-read: steps 1..4 after the warm-up
    step 0: 0.60, 0.35, 0.36, 0.36 s, median 0.36 s."""
    m = load("prime_rl_pr999_trainer_console.log")
    assert (m.framework, m.steps_used) == ("prime-rl", (1, 4)) and summary(m) == {"step_time_s": 0.36}
    assert m.keys_used["step_time_s"] == ("time/step",)
    assert any("the trainer's console lines" in w for w in m.warnings)
    assert not any("orchestrator's, the cycle" in w for w in m.warnings)


def test_areal_legacy_master_worker_console():
    """Legacy AReaL (realhf) prints '(global step 14) finishes. #End to end# execution time: *706.147*s.' at each
    step's end (issue 145's paste): read as timeperf/e2e, the key the same function logs, i.e. the step time."""
    m = load("areal_legacy_issue145_master_worker.log")
    assert (m.framework, m.format, m.steps_used) == ("areal", "areal-console", (14, 14))
    assert summary(m) == {"step_time_s": 706.147} and m.keys_used["step_time_s"] == ("timeperf/e2e",)


def test_hf_trainer_json_lines_with_only_a_progress_string_for_a_step():
    """ms-swift's GRPO log lines (issue 9261) carry TRL's keys without train/ and the step only as
    "global_step/max_steps": "2/10000": read as TRL's at step N. Hand-read: steps 1 and 2, step 1 dropped as
    warm-up; step_time 1.57797493 s at step 2."""
    m = load("msswift_issue9261_logging.jsonl")
    assert (m.framework, m.format, m.steps_used) == ("trl", "jsonl", (2, 2))
    assert summary(m) == {"step_time_s": 1.578}


def test_step_times_of_two_kinds_say_so(tmp_path):
    """A TRL GRPO run generates in one step of each cycle and reuses the rollouts in the others, so its step times
    come in two kinds (a real paste: 244.4, 35.5 and 180.5 s after warm-up): the reader names the spread (10th and
    90th percentiles past data/log_limits.toml spread_ratio) and the mean a calibration wants; the real logs of one
    kind of step (every file in tests/data/logs/real) stay quiet."""
    dicts = [{"loss": 0.0, "step_time": t, "epoch": 0.1 * i} for i, t in enumerate((17.7, 244.38, 35.51, 180.53))]
    path = tmp_path / "alternating.log"
    path.write_text("".join(f"{d}\n" for d in dicts))
    m = tc.load_measurements(path)
    spread = [w for w in m.warnings if w.startswith("step_time_s spreads")]
    assert len(spread) == 1 and "the run paces at the mean, 153.5 s" in spread[0]
    quiet = []
    for f in sorted(REAL.iterdir()):
        try:
            if any(w.startswith("step_time_s spreads") for w in tc.load_measurements(f).warnings):
                quiet.append(f.name)
        except tc.MeasurementError:
            continue
    assert quiet == []


def test_nemo_rl_validation_inside_a_step_is_left_out():
    """Step 10 of a real NeMo RL run validates and checkpoints (80.85 s against 40.59 and 38.99 s): its "Validation
    Timing" block's total (30.49 s) is timing/train/validation, which marks it a validation step, out of the
    medians. Hand-read over steps 9 and 11: step 39.79 s, generation 30.98 s."""
    m = load("nemo_rl_b200_steps9_11_validation.log", steps="9:12")
    assert m.validation_steps == (10,) and list(m.per_step.index) == [9, 11]
    assert summary(m)["step_time_s"] == pytest.approx((40.59 + 38.99) / 2)
    assert summary(m)["generation_s"] == pytest.approx((31.02 + 30.94) / 2)
    kept = load("nemo_rl_b200_steps9_11_validation.log", steps="9:12", keep_validation=True)
    assert kept.per_step.loc[10, "step_time_s"] == pytest.approx(80.85)


def test_trl_console_under_nohup():
    """A whole TRL run captured with nohup (Ning-Guo/hotpotqa-agent logs/grpo.log): bars drawn over with carriage
    returns, three dicts with bars after them on their line, and the Trainer's closing train_runtime summary (whole-
    run means). Every logging dict is read (93), the summary is not; hand median of completion_length over windows
    11..93 (10 dropped as warm-up): 109.206 (the summary's own 112.117 left out)."""
    m = load("trl_hotpotqa_grpo_nohup.log")
    assert (m.steps_used, m.warmup_steps) == ((11, 93), 10) and len(m.per_step) == 83
    assert summary(m)["response_tokens_mean"] == pytest.approx(109.2062, abs=1e-3)
    assert not any("do not parse" in w for w in m.warnings)
    assert any("closing summary (train_runtime" in w for w in m.warnings)


def test_a_last_step_line_without_a_line_end_is_read_when_whole(tmp_path):
    """A log whose file ends right after its last step line (no newline) keeps that step where the line ends with
    the key every step line ends with; a line cut inside (test above) is still skipped."""
    text = (REAL / "verl_fsdp_qwen2-7b_math.log").read_text(errors="replace")
    last = text.rindex("timing_s/step:")
    end = text.index("\n", last)
    path = tmp_path / "no_newline.log"
    path.write_text(text[:end])
    m, whole = tc.load_measurements(path), load("verl_fsdp_qwen2-7b_math.log")
    assert m.per_step.index[-1] == whole.per_step.index[-1]
    assert any("has no line end but ends with" in w for w in m.warnings)


def test_step_lines_cut_at_wandbs_4096_characters_say_so(tmp_path):
    """W&B's output.log keeps a console line's first 4,096 characters, so a long step line (a validation step's)
    loses its last keys: the reader counts such lines."""
    import re

    plain = re.sub(r"\x1b\[[0-9;]*m", "", (REAL / "verl_fsdp_qwen2-7b_math.log").read_text(errors="replace"))
    lines = [line.strip() for line in plain.splitlines() if "step:" in line and "timing_s/step" in line][:8]
    cut = lines[:7] + [(lines[7] + " - " + " - ".join(f"val-aux/k{i}:0.5" for i in range(400)))[:4096]]
    path = tmp_path / "output.log"
    path.write_text("\n".join(cut) + "\n")
    m = tc.load_measurements(path)
    assert any(w.startswith("1 step lines are exactly 4,096 characters long") for w in m.warnings)


def test_areal_lite_stats_tables_on_the_console():
    """AReaL-lite's StatsLogger prints 'Train step N/M done.' and a box table of key │ value pairs (a real run in
    AReaL's own repository, train steps 1-4). Hand-read: the 'done' lines at 20:32:41.821, 47.812, 55.384 and
    20:33:01.199 give step periods 5.991, 7.572, 5.815 s; timeperf/train_step 3.5399, 1.0697, 2.0690, 0.80973 s;
    grpo_actor/seq_len/avg - prompt_len/avg is the response (the older actor scope's names)."""
    m = load("areal_lite_stats_steps1_4.log", steps="1:5")
    assert (m.framework, m.format) == ("areal", "areal-stats-console")
    assert list(m.per_step["step_time_s"].dropna()) == pytest.approx([5.991, 7.572, 5.815])
    assert list(m.per_step["training_s"]) == pytest.approx([3.5399, 1.0697, 2.0690, 0.80973])
    assert m.keys_used["response_tokens_mean"] == ("grpo_actor/seq_len/avg", "grpo_actor/prompt_len/avg")
    assert m.per_step.loc[1, "prompt_tokens"] == pytest.approx(99.375)


def test_areal_lite_evaluation_steps_leave_the_medians(tmp_path):
    """AReaL-lite records the evaluation's reward under the "eval-rollout" scope and exports it with the stats of the
    step that ran the evaluator only (inclusionAI/AReaL@a838ce5bc1f4:examples/math/gsm8k_grpo.py), while
    timeperf/eval is logged at every step (2.5e-05 s at step 1 of the real run, which evaluated nowhere in these four
    steps): eval-rollout/reward marks the step (data/run_metrics.toml validation_keys). The real excerpt with that row
    added to step 3's table, as such a step prints it: step 3 (its 7.572 s period) leaves the medians, with a
    warning, and keep_validation=True keeps it."""
    lines = (REAL / "areal_lite_stats_steps1_4.log").read_text().splitlines(keepends=True)
    at = next(i for i, line in enumerate(lines) if "Train step 3/4675 done" in line)
    row = next(i for i in range(at, len(lines)) if "rollout/reward" in lines[i])
    stamp = lines[row].split(" ", 1)[0]
    lines.insert(row + 1, f"{stamp} │ eval-rollout/reward              │  7.5000e-01 │\n")
    path = tmp_path / "with_eval.log"
    path.write_text("".join(lines))
    m = tc.load_measurements(path, steps="1:5")
    assert m.validation_steps == (3,)
    assert list(m.per_step.index) == [1, 2, 4]
    assert list(m.per_step["step_time_s"].dropna()) == pytest.approx([5.991, 5.815])
    assert any("1 validation steps (eval-rollout/reward logged: steps 3)" in w for w in m.warnings)
    kept = tc.load_measurements(path, steps="1:5", keep_validation=True)
    assert list(kept.per_step["step_time_s"].dropna()) == pytest.approx([5.991, 7.572, 5.815])
    assert load("areal_lite_stats_steps1_4.log", steps="1:5").validation_steps == ()


def test_slime_actor_rollout_dicts_give_the_prompt_length(tmp_path):
    """slime's actor prints 'rollout N: {...}' with its per-sample means of the batch's lengths (actor.py
    logger.info(f"rollout {rollout_id}: {log_dict}")): read with the perf dicts of the same rollout id, they give
    prompt_tokens = rollout/total_lengths - rollout/response_lengths; the perf dict's figures are unchanged."""
    text = (REAL / "slime_issue1837_console.log").read_text()
    actor = ("(MegatronTrainRayActor pid=10122) [2026-04-15 07:58:10] data.py:193 - rollout 0: "
             "{'rollout/response_lengths': 2773.71484375, 'rollout/total_lengths': 2900.25, 'rollout/kl': 0.0}\n")
    path = tmp_path / "with_actor.log"
    path.write_text(text + actor)
    m, perf_only = tc.load_measurements(path), load("slime_issue1837_console.log")
    assert m.summary["prompt_tokens"] == pytest.approx(2900.25 - 2773.71484375)
    assert {k: v for k, v in m.summary.items() if k != "prompt_tokens"} == dict(perf_only.summary)


def test_a_jump_in_the_responses_is_located_and_each_stretch_given_its_steps():
    """The whole verl GSM8k FSDP log (its per-step response means in tests/data/logs/real/verl_gpg_stage_timers.csv,
    from diqiuzhuanzhuan/verldata@42e31cd07ea0:run_logs/qwen2-7b_math.log; the non-validation steps 22 on, the 151
    steps the reader keeps after its warm-up) averages about 216 tokens to step 155 and 614 from step 165. The drift
    report names the step where the mean log response changes most between the stretches before and after it (each
    at least a tenth of the steps), recomputed here by brute force: step 161, medians 215.9 and 614.7 tokens, and
    the two windows that read each stretch alone."""
    import csv
    import math
    import statistics

    import pandas as pd

    from tcocalc.logs.measurements import _drift

    with (REAL / "verl_gpg_stage_timers.csv").open() as fh:
        rows = [r for r in csv.DictReader(ln for ln in fh if not ln.startswith("#"))
                if r["run"] == "fsdp" and r["validation"] == "0" and int(r["step"]) >= 22]
    steps = [int(r["step"]) for r in rows]
    resp = [float(r["response_length_mean"]) for r in rows]
    assert len(rows) == 151
    logs, n = [math.log(x) for x in resp], len(resp)
    side = n // 10
    best = max(range(side, n - side + 1),
               key=lambda k: abs(sum(logs[:k]) / k - sum(logs[k:]) / (n - k)))
    assert steps[best] == 161
    frame = pd.DataFrame({"response_tokens_mean": resp}, index=pd.Index(steps, name="step"))
    out = _drift(frame)
    assert len(out) == 1
    a, b = statistics.median(resp[:best]), statistics.median(resp[best:])
    assert (round(a, 1), round(b, 1)) == (215.9, 614.7)
    assert (f"response_tokens_mean changes most at step 161: median {a:,.4g} tokens over steps 22-159 ({best} steps), "
            f"{b:,.4g} tokens over steps 161-209 ({n - best} steps); steps=22:161 and steps=161:210") in out[0]


def test_two_runs_appended_to_one_log_are_named_not_merged_silently(tmp_path):
    """Two real verl runs appended to one file (a launch script's ``tee -a $logfile``, or two step lines pasted one
    after the other): the FSDP and the Megatron GSM8k excerpts, both logging steps 1..39. Every step both logged with
    its own timers is named in a warning (with the first one's timing_s/step from each run, in file order) and, as
    the documented merge rule says, the last value is read: each such step's step time is the Megatron excerpt's.
    One run alone says nothing of the kind."""
    import re

    fsdp, megatron = (REAL / "verl_fsdp_qwen2-7b_math.log").read_bytes(), (REAL / "verl_megatron_qwen2-7b_math.log")
    both = tmp_path / "appended.log"
    both.write_bytes(fsdp + megatron.read_bytes())

    def steps_of(raw: bytes) -> dict[int, float]:
        out = {}
        for line in raw.decode("utf-8", "replace").splitlines():
            m = re.search(r"step:(\d+) - .*timing_s/step:([\d.]+)", line)
            if m:
                out[int(m.group(1))] = float(m.group(2))
        return out

    a, b = steps_of(fsdp), steps_of(megatron.read_bytes())
    shared = sorted(s for s in set(a) & set(b) if a[s] != b[s])
    m = tc.load_measurements(both, framework="verl")
    said = [w for w in m.warnings if "logged more than once with different values" in w]
    assert len(said) == 1 and said[0].startswith(f"{len(shared)} steps logged more than once")
    first = shared[0]
    assert f"step {first}'s timing_s/step: {a[first]:,.6g}, {b[first]:,.6g}" in said[0]
    kept = [s for s in shared if s in m.per_step.index]
    assert kept and all(float(m.per_step.loc[s, "step_time_s"]) == pytest.approx(b[s]) for s in kept)
    alone = tc.load_measurements(megatron)
    assert not any("logged more than once" in w for w in alone.warnings)


def test_trl_console_whose_dataset_bars_count_more_examples_than_the_run_has_steps():
    """JuncyLu/trl_DAPO's captured console: the ``datasets`` Map/Filter bars count 1,400 examples (``examples/s``),
    the training bar 43 steps (``s/it``); the dicts follow the training bar at 10, 20 and 30. Only bars that count
    iterations are the training loop's, so the dicts are steps 10, 20, 30 (window 1 dropped as warm-up) and
    ``steps="20:31"`` keeps two; completions/mean_length 253.8 and 255.7640625 -> median 254.78 tokens (by hand). The
    log has no timer, but the training bar's rate printed before each dict is the steps' pace: 77.50 and 77.09 s/it
    at steps 20 and 30 -> step time 77.295 s, with a caveat saying what it is."""
    m = load("trl_dapo_vl_console_tqdm.log")
    assert (m.framework, m.format) == ("trl", "trl-console")
    assert list(m.per_step.index) == [20, 30] and m.warmup_steps == 1
    assert m["response_tokens_mean"] == pytest.approx(statistics.median([253.8, 255.7640625]), abs=1e-9)
    assert any("steps 10..30 of 43" in w for w in m.warnings)
    assert list(load("trl_dapo_vl_console_tqdm.log", steps="20:31").per_step.index) == [20, 30]
    assert m["step_time_s"] == pytest.approx(statistics.median([77.50, 77.09]), abs=1e-9)
    assert m.keys_used["step_time_s"] == ("console/progress_s_per_it",)
    assert any(w.startswith("step_time_s: no step timer in this console") for w in m.warnings)


def test_verl_sft_trainer_console_is_named_as_what_it_is():
    """A verl SFT trainer's console (train/loss, train/lr(1e-3), train/time(s): verl/trainer/fsdp_sft_trainer.py) in a
    ReTool replication README is not an RL pilot: refused, with or without framework='verl', saying it is verl's SFT
    trainer, why it cannot calibrate an RL plan's stages and what its step time can inform."""
    for kw in ({}, {"framework": "verl"}):
        with pytest.raises(tc.MeasurementError, match="verl's SFT trainer console.*not an RL run.*trainer.mfu") as e:
            load("verl_sft_trainer_console_readme.log", **kw)
        assert e.value.field == "path"


def test_the_training_bars_rate_agrees_with_the_trainers_own_runtime():
    """Ning-Guo/hotpotqa-agent's GRPO console logs no step timer; its training bar's rate before each of its 93
    dicts gives the step time (console/progress_s_per_it). The Trainer's closing summary of the same run,
    train_runtime 139,862.48 s over the bar's 1,875 steps, is a mean step of 74.59 s; the median of the kept rates
    is within 6% of it (the rate is a pace of the recent steps, and the run's steps quicken towards its end: the
    bar's last rate is 63.94 s/it)."""
    m = load("trl_hotpotqa_grpo_nohup.log")
    assert m.keys_used["step_time_s"] == ("console/progress_s_per_it",)
    mean_step = 139862.4789 / 1875
    assert m["step_time_s"] == pytest.approx(mean_step, rel=0.06)
