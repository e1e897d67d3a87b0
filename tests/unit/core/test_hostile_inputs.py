"""Hostile input, round 2 (issue 31 items 5-6): values that loaded and evaluated without a word. Wrong types in
``[economics.cost_inputs]`` are refused naming the key, as in every other section; settings a mode cannot use,
trajectories beyond the model's context, a near-zero utilization, sandbox starts that nearly always fail and results
no plan should act on (a step of years, a run dearer than the world's GDP) are warned about in
``report.details["warnings"]``, each naming its keys, and said first in the advice. Variants are generated (every
cost input x every wrong type, every shipped scenario x every mode, a grid of contexts), not listed."""

from __future__ import annotations

import pytest

import tcocalc as tc
from tcocalc.economics.tco import CostInputs

DEFAULT = tc.load_scenario("default")
NUMERIC_COST_INPUTS = [name for name, f in CostInputs.model_fields.items() if f.annotation in (float, int)]
WRONG_TYPES = [True, False, "1.5", "2", "", [1.0], {"a": 1}]


def test_the_cost_input_grid_is_large():
    assert len(NUMERIC_COST_INPUTS) >= 14 and len(NUMERIC_COST_INPUTS) * len(WRONG_TYPES) >= 98


@pytest.mark.parametrize("key", NUMERIC_COST_INPUTS)
def test_wrong_types_in_cost_inputs_are_refused_naming_the_key(key):
    for value in WRONG_TYPES:
        scn = DEFAULT.with_values({"economics.cost_inputs": {key: value}})  # a free-form table: it loads
        with pytest.raises(tc.ScenarioError) as err:
            tc.evaluate(scn)
        assert err.value.field == f"economics.cost_inputs.{key}", (key, value, str(err.value))


def test_numbers_of_either_kind_are_still_cost_inputs():
    for key, value in (("pue", 1.3), ("pue", 2), ("gpus_per_server", 8), ("utilization", 1)):
        tc.evaluate(DEFAULT.with_values({"economics.cost_inputs": {key: value}}))
    with pytest.raises(tc.ScenarioError, match="economics.cost_inputs.gpus_per_server"):
        tc.evaluate(DEFAULT.with_values({"economics.cost_inputs": {"gpus_per_server": 8.5}}))


def _kinds(report) -> dict:
    return {w["kind"]: w for w in report.details["warnings"]}


@pytest.mark.parametrize("name", sorted(tc.scenarios()))
def test_a_staleness_bound_in_a_mode_without_one_is_warned_not_refused(name):
    """Every shipped scenario in every mode loads and evaluates; the modes without a bound warn about the one the
    file sets, naming the key (the streaming modes do not)."""
    for mode, t in tc.MODES.items():
        scn = tc.load_scenario(name)
        if mode == "colocated" and scn.generator.disaggregated:  # one pool has no separate prefill GPUs
            scn = scn.with_values({"generator.disaggregated": False, "generator.prefill_gpus": None})
        scn = scn.with_cluster(mode=mode)
        report = tc.evaluate(scn)
        unused = [w for w in report.details["warnings"] if w["kind"] == "unused_setting"]
        keys = {k for w in unused for k in w["keys"]}
        default = type(scn.orchestration).model_fields["max_staleness"].default
        assert ("orchestration.max_staleness" in keys) == (not t.streaming and scn.orchestration.max_staleness
                                                            != default), (name, mode, keys)
        assert all(w["message"] in report.advice for w in unused)


def test_partial_rollout_without_oversampling_in_a_synchronous_mode_is_warned():
    for mode in ("colocated", "sync", "one_step_off", "periodic"):
        scn = DEFAULT.with_cluster(mode=mode).with_values({"orchestration.partial_rollout": True})
        keys = {k for w in tc.evaluate(scn).details["warnings"] for k in w["keys"]}
        assert "orchestration.partial_rollout" in keys, mode
        over = scn.with_values({"orchestration.oversampling": 0.25})  # the oversampled tail resumes: used
        keys = {k for w in tc.evaluate(over).details["warnings"] for k in w["keys"]}
        assert "orchestration.partial_rollout" not in keys, mode


SMALL_MODEL = {"model_type": "qwen3", "hidden_size": 1024, "num_hidden_layers": 8, "num_attention_heads": 16,
               "num_key_value_heads": 8, "head_dim": 64, "intermediate_size": 3072, "vocab_size": 32000}


@pytest.mark.parametrize("context", [16, 600, 4_600, 20_000, 40_960])
def test_trajectories_beyond_the_models_context_are_warned_naming_the_key(context):
    """A grid of contexts against the default workload (500-token prompts, 4,000-token mean, 16,384 cap): below
    the prompt, below the mean trajectory, below the cap, and above all of it."""
    scn = DEFAULT.with_values({"model.name": "ctx", "model.config": {**SMALL_MODEL,
                                                                     "max_position_embeddings": context}})
    warned = _kinds(tc.evaluate(scn)).get("beyond_context")
    w = scn.workload
    if context < w.prompt_tokens:
        assert warned["keys"] == ["workload.prompt_tokens"]
    elif context < w.prompt_tokens + w.response_tokens_mean:
        assert "workload.response_tokens_mean" in warned["keys"]
    elif context < w.prompt_tokens + w.response_tokens_max:
        assert warned["keys"] == ["workload.response_tokens_max"]
    else:
        assert warned is None
    if warned:
        assert f"{context:,}" in warned["message"] and all(k in warned["message"] for k in warned["keys"][:1])


@pytest.mark.parametrize("utilization", [1e-300, 1e-9, 0.01, 0.049])
def test_a_near_zero_utilization_is_warned(utilization):
    report = tc.evaluate(DEFAULT.with_values({"economics.cost_inputs": {"utilization": utilization}}))
    warned = _kinds(report)["low_utilization"]
    assert warned["keys"] == ["economics.cost_inputs.utilization"]
    assert "economics.cost_inputs.utilization" in report.advice[0] or "economics.cost_inputs.utilization" in \
        report.advice[1]
    assert "low_utilization" not in _kinds(tc.evaluate(DEFAULT.with_values({"economics.cost_inputs": {
        "utilization": 0.5}})))


AGENTIC = DEFAULT.with_values({"workload.turns": 4, "sandbox.tool_call_s": 5.0, "sandbox.startup_s": 2.0})


@pytest.mark.parametrize("rate", [0.9, 0.99, 0.999999])
def test_sandbox_starts_that_nearly_always_fail_are_named(rate):
    """Not the zero-advantage groups the advice used to blame: the warning names sandbox.failure_rate, and the
    discarded-rollouts line its cause."""
    report = tc.evaluate(AGENTIC.with_values({"sandbox.failure_rate": rate}))
    warned = _kinds(report)["sandbox_failures"]
    assert warned["keys"] == ["sandbox.failure_rate", "sandbox.retries"]
    discard = [line for line in report.advice if "thrown away" in line]
    assert all("sandbox" in line and "curriculum" not in line for line in discard)


def test_a_run_no_plan_should_act_on_says_so_and_names_the_cause():
    """A sandbox failing 99.9999% of the time: 8e14 s a step and $1.4e15, said first with its cause."""
    report = tc.evaluate(AGENTIC.with_values({"sandbox.failure_rate": 0.999999}))
    warned = _kinds(report)["implausible"]
    assert report.advice[0] == warned["message"]
    assert "sandbox.failure_rate" in warned["message"] and "world's yearly GDP" in warned["message"]
    assert warned["keys"][0] == "sandbox.failure_rate"
    for over, key in (({"economics.usd_per_gpu_hour": 1e5, "workload.steps": 100_000_000,
                        "workload.prompts_per_step": 10_000}, "workload.steps"),
                      ({"economics.cost_inputs": {"utilization": 1e-300}}, "economics.cost_inputs.utilization")):
        warned = _kinds(tc.evaluate(DEFAULT.with_values(over)))["implausible"]
        assert key in warned["keys"] and key in warned["message"]


@pytest.mark.parametrize("name", sorted(tc.scenarios()))
def test_no_shipped_scenario_as_shipped_warns(name):
    assert tc.evaluate(tc.load_scenario(name)).details["warnings"] == []


# ------------------------------------------------------------------ issue 31 item 7: bounded work on the command line
def _cli(argv: list[str]) -> tuple[int, str]:
    import contextlib
    import io

    from tcocalc.cli.main import main

    err = io.StringIO()
    with contextlib.redirect_stderr(err), contextlib.redirect_stdout(io.StringIO()):
        rc = main(argv)
    return rc, err.getvalue()


def test_a_fifo_nobody_writes_to_is_refused_in_bounded_time(tmp_path, monkeypatch):
    import os
    import threading
    import time

    import tcocalc.scenario as scenario_module

    monkeypatch.setattr(scenario_module, "PIPE_WAIT_S", 0.5)
    fifo = tmp_path / "in.toml"
    os.mkfifo(fifo)
    start = time.monotonic()
    with pytest.raises(tc.ScenarioError) as err:
        tc.load_scenario(fifo)
    assert err.value.field == "path" and "named pipe" in str(err.value) and time.monotonic() - start < 5
    rc, text = _cli(["run", str(fifo)])
    assert rc == 3 and "path: in.toml is a named pipe" in text
    writer = threading.Thread(target=lambda: fifo.write_text(tc.load_scenario("default").to_toml()))
    writer.start()  # a pipe that is written to (as <(cat file) is) loads
    assert tc.load_scenario(fifo).name == "default"
    writer.join()


@pytest.mark.parametrize("command", [["run", "default"], ["size", "default", "--target-samples-per-s", "1"]])
def test_an_output_folder_that_cannot_be_made_names_the_flag(command):
    rc, text = _cli([*command, "--csv", "/dev/null"])
    assert rc == 2 and text.startswith("tcocalc: error: --csv: cannot create the folder /dev/null")
