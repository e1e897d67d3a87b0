"""A fixed corpus of hostile scenarios through every door (issue 16, "Done when"): the library
(loads_scenario, evaluate, solve_split), the command line (``python -m tcocalc run``) and the app's upload
(AppTest on tcocalc/app/plan.py). About 140 TOML texts are built here from scenarios/default.toml (nothing is
committed as files): bad and extreme GPU counts, impossible lengths, p99 below the mean, unknown names,
wrong types, deep nesting, huge numbers, hostile ``[model.config]`` values, colocated pools of unequal size,
missing sections, an empty file and binary junk.

Contract: every input ends in a :class:`tcocalc.TcocalcError` subclass (a ScenarioError names its
``.field``) or in finite metrics (or None); the command line exits 0 or 2 without a traceback; the app shows
an error or the plan, never an exception. tests/unit/core/test_fuzz.py fuzzes the same doors with Hypothesis; this
corpus is the fixed, named regression set."""

from __future__ import annotations

import concurrent.futures
import functools
import math
import random
import re
import subprocess
import sys
from pathlib import Path

import pytest

import tcocalc as tc
from tcocalc.scenario import MAX_NESTING_DEPTH, MAX_SCENARIO_BYTES
from tests.conftest import ROOT

VALID = (ROOT / "scenarios" / "default.toml").read_text()


# --------------------------------------------------------------------------------------------- the corpus
def with_key(section: str, key: str, value: str, text: str = VALID) -> str:
    """``text`` with ``key = value`` in ``[section]`` ("" for the top level): replaced where the key is,
    else added as the section's first key (the section is created at the end if missing)."""
    lines = text.splitlines()
    current, header_at = "", 0 if section == "" else None
    for i, line in enumerate(lines):
        if m := re.match(r"^\[([\w.]+)\]\s*$", line):
            current = m.group(1)
            if current == section:
                header_at = i + 1
        elif current == section and re.match(rf"^{re.escape(key)}\s*=", line):
            lines[i] = f"{key} = {value}"
            return "\n".join(lines) + "\n"
    if header_at is None:
        return text + f"\n[{section}]\n{key} = {value}\n"
    lines.insert(header_at, f"{key} = {value}")
    return "\n".join(lines) + "\n"


def without_section(section: str, text: str = VALID) -> str:
    """``text`` without ``[section]`` and its keys (sub-tables such as [workload.solve_rate] stay)."""
    return re.sub(rf"^\[{re.escape(section)}\]\n(?:(?!\[).*\n?)*", "", text, flags=re.M)


def edits(*pairs: tuple[str, str, str]) -> str:
    text = VALID
    for section, key, value in pairs:
        text = with_key(section, key, value, text)
    return text


def model_config(**values: str) -> str:
    """A custom model (``[model.config]``, a small dense Qwen3-like shape) with ``values`` replaced."""
    cfg = {"model_type": '"qwen3"', "hidden_size": "4096", "num_hidden_layers": "36", "num_attention_heads": "32",
           "num_key_value_heads": "8", "head_dim": "128", "intermediate_size": "12288", "vocab_size": "151936",
           "tie_word_embeddings": "false"} | values
    body = "".join(f"{k} = {v}\n" for k, v in cfg.items() if v is not None)
    return VALID.replace('name = "Qwen3-8B"', 'name = "corpus-model"', 1).replace(
        "[trainer]", f"[model.config]\n{body}\n[trainer]", 1)


def nested(depth: int) -> str:
    """An array value nested ``depth`` levels deep."""
    return "[" * depth + "1" + "]" * depth


def junk(seed: int, size: int) -> str:
    """Random bytes as the app and the command line would read them (invalid UTF-8 replaced)."""
    return random.Random(seed).randbytes(size).decode("utf-8", errors="replace")


def corpus() -> dict[str, str]:
    """Named hostile scenario texts (about 130)."""
    c: dict[str, str] = {}
    # GPU counts: bad, tiny, odd, at and over the limit, wrong types
    gpus = [("negative", "-8"), ("zero", "0"), ("one", "1"), ("three", "3"), ("limit", "1000000"),
            ("huge", "1" + "0" * 30), ("float", "2.5"), ("string", '"8"')]
    for side, extra in (("trainer", [("nan", "nan"), ("array", "[8]"), ("odd_big", "1001")]),
                        ("generator", [("inf", "inf"), ("bool", "true"), ("over_limit", "1000001")])):
        for label, value in gpus + extra:
            c[f"{side}_gpus_{label}"] = with_key(side, "gpus", value)
    c["both_one_gpu"] = edits(("trainer", "gpus", "1"), ("generator", "gpus", "1"))
    c["big_cluster_tiny_model"] = edits(("model", "name", '"Qwen2.5-1.5B"'), ("trainer", "gpus", "4096"),
                                        ("generator", "gpus", "12288"))
    c["huge_model_one_gpu"] = edits(("model", "name", '"DeepSeek-V3"'), ("trainer", "gpus", "1"),
                                    ("generator", "gpus", "1"))
    c["huge_model_few_gpus"] = edits(("model", "name", '"GLM-5"'), ("trainer", "gpus", "12"),
                                     ("generator", "gpus", "5"))
    c["generator_tp_pinned_above_pool"] = edits(("generator", "gpus", "2"), ("generator", "tp", "8"))
    c["generator_tp_not_dividing_heads"] = with_key("generator", "tp", "3")
    c["generator_tp_64"] = edits(("generator", "gpus", "64"), ("generator", "tp", "64"))
    # lengths: zero, impossible, the tail inconsistent
    for key, value in [("prompt_tokens", "0"), ("prompt_tokens", "1e8"), ("prompt_tokens", "1e9"),
                       ("response_tokens_mean", "0"), ("response_tokens_mean", "1e8"),
                       ("response_tokens_mean", "1e-300"), ("response_tokens_max", "1"),
                       ("response_tokens_max", "0.5"), ("response_tokens_p99", "100"),
                       ("response_tokens_p99", "1e9"), ("response_tokens_sigma", "5"), ("turns", "10000")]:
        c[f"workload_{key}_{value}"] = with_key("workload", key, value)
    c["p99_below_mean_and_max_below_p99"] = edits(("workload", "response_tokens_p99", "1000"),
                                                  ("workload", "response_tokens_max", "10"))
    c["million_token_trajectories"] = edits(("workload", "prompt_tokens", "1e6"),
                                            ("workload", "response_tokens_mean", "1e6"),
                                            ("workload", "response_tokens_p99", "1e8"),
                                            ("workload", "response_tokens_max", "1e9"))
    c["many_turns_with_tools"] = edits(("workload", "turns", "10000"), ("sandbox", "tool_call_s", "1e6"),
                                       ("sandbox", "startup_s", "1e6"), ("sandbox", "failure_rate", "0.999999"))
    c["sandbox_failure_rate_one"] = with_key("sandbox", "failure_rate", "1.0")
    c["sandbox_caps_tiny"] = edits(("workload", "turns", "8"), ("sandbox", "tool_call_s", "30"),
                                   ("sandbox", "max_concurrency", "1"), ("sandbox", "max_starting", "1"))
    # unknown names and keys
    for label, (section, key, value) in {
            "model": ("model", "name", '"NoSuchModel-9000B"'), "model_empty": ("model", "name", '""'),
            "model_5000_chars": ("model", "name", '"' + "a" * 5000 + '"'),
            "trainer_hardware": ("trainer", "hardware", '"Z9000"'),
            "generator_hardware_spaced": ("generator", "hardware", '"h100 "'),
            "model_precision": ("model", "precision", '"int4"'), "generator_precision": ("generator", "precision",
                                                                                         '"fp3"'),
            "mode": ("orchestration", "mode", '"sideways"'),
            "tinker_price_date": ("economics", "tinker_price_date", '"1999-01-01"'),
            "trainer_key": ("trainer", "bogus_key", "1"), "section": ("bogus_section", "x", "1"),
            "top_level_key": ("", "nmae", '"typo"')}.items():
        c[f"unknown_{label}"] = with_key(section, key, value)
    # wrong types
    for section, key, value in [("workload", "prompts_per_step", '"64"'), ("workload", "group_size", "[8]"),
                                ("workload", "steps", "{ a = 1 }"), ("orchestration", "max_staleness", '"two"'),
                                ("economics", "usd_per_gpu_hour", "true"), ("workload", "prompt_tokens", "1979-05-27"),
                                ("workload", "prefix_caching", '"yes"'), ("", "name", "42"), ("", "phases", "7"),
                                ("economics", "cost_inputs", "[1, 2]"), ("model", "config", '"config.json"')]:
        c[f"type_{section or 'top'}_{key}"] = with_key(section, key, value)
    c["type_solve_rate_number"] = with_key("workload", "solve_rate", "5", without_section("workload.solve_rate"))
    c["type_workload_number"] = "workload = 3\n" + without_section("workload.solve_rate", without_section("workload"))
    c["type_model_string"] = "model = \"Qwen3-8B\"\n" + without_section("model")
    # nesting around the limit, and far past it
    for depth in (MAX_NESTING_DEPTH - 2, MAX_NESTING_DEPTH, MAX_NESTING_DEPTH + 5):
        c[f"nesting_config_{depth}"] = VALID + f"\n[model.config]\nv = {nested(depth)}\n"
    c["nesting_cost_inputs_deep_tables"] = VALID + "\n" + "".join(
        f"[economics.cost_inputs{'.t' * i}]\n" for i in range(1, 40))
    c["nesting_90k_brackets"] = "a = " + nested(90_000)
    c["nesting_inline_tables"] = "a = " + "{b=" * 40_000 + "1" + "}" * 40_000
    # huge numbers
    for section, key, value in [("workload", "group_size", "1e308"), ("workload", "prompts_per_step", "10000000"),
                                ("workload", "prompts_per_step", str(10**18)), ("workload", "steps", "100000000"),
                                ("workload", "group_size", "100000"), ("orchestration", "max_staleness", "1e300"),
                                ("orchestration", "max_staleness", "10000"), ("economics", "usd_per_gpu_hour", "1e308"),
                                ("workload", "prompt_tokens", "9" * 5000), ("orchestration", "oversampling", "10"),
                                ("trainer", "mfu_busy", "1e-300")]:
        c[f"huge_{key}_{value[:12]}"] = with_key(section, key, value)
    c["everything_at_its_limit"] = edits(("workload", "prompts_per_step", "10000000"),
                                         ("workload", "group_size", "100000"), ("workload", "steps", "100000000"),
                                         ("trainer", "gpus", "1000000"), ("generator", "gpus", "1000000"))
    # [model.config] hostile values
    for key, value in [("hidden_size", "0"), ("hidden_size", "-4096"), ("hidden_size", "1e308"),
                       ("hidden_size", "inf"), ("hidden_size", "8"), ("num_attention_heads", "0"),
                       ("num_attention_heads", '"x"'), ("num_key_value_heads", "5"),
                       ("num_hidden_layers", "1000000000"), ("vocab_size", str(2**63)), ("intermediate_size", "[]")]:
        c[f"config_{key}_{value[:10]}"] = model_config(**{key: value})
    c["config_empty"] = VALID.replace('name = "Qwen3-8B"', 'name = "corpus-model"', 1).replace(
        "[trainer]", "[model.config]\n\n[trainer]", 1)
    c["config_moe_without_experts"] = model_config(model_type='"qwen3_moe"', num_experts="0",
                                                   num_experts_per_tok="8", moe_intermediate_size="768")
    c["config_moe_topk_above_experts"] = model_config(model_type='"qwen3_moe"', num_experts="4",
                                                      num_experts_per_tok="8", moe_intermediate_size="768")
    # colocated with unequal pools, and every mode with a one-GPU generator
    c["colocated_unequal_pools"] = edits(("orchestration", "mode", '"colocated"'), ("generator", "gpus", "16"))
    c["colocated_unequal_hardware"] = edits(("orchestration", "mode", '"colocated"'),
                                            ("generator", "hardware", '"B200"'))
    c["colocated_one_and_three"] = edits(("orchestration", "mode", '"colocated"'), ("trainer", "gpus", "1"),
                                         ("generator", "gpus", "3"))
    c["colocated_huge_model"] = edits(("orchestration", "mode", '"colocated"'), ("model", "name", '"GLM-5"'))
    for mode in ("sync", "one_step_off", "inflight"):
        c[f"mode_{mode}_one_generator_gpu"] = edits(("orchestration", "mode", f'"{mode}"'), ("generator", "gpus", "1"))
    # prefill/decode disaggregation (issue 13): a pool too small, a pinned pool that is not whole, the key alone
    c["disaggregated_one_generator_gpu"] = edits(("generator", "disaggregated", "true"), ("generator", "gpus", "1"))
    c["disaggregated_prefill_all_gpus"] = edits(("generator", "disaggregated", "true"),
                                                ("generator", "prefill_gpus", "8"))
    c["disaggregated_prefill_not_whole"] = edits(("generator", "disaggregated", "true"),
                                                 ("generator", "prefill_gpus", "3"))
    c["prefill_gpus_without_disaggregated"] = with_key("generator", "prefill_gpus", "2")
    c["disaggregated_colocated"] = edits(("generator", "disaggregated", "true"),
                                         ("orchestration", "mode", '"colocated"'), ("generator", "gpus", "8"))
    # the streamed trainer (verl fully-async, docs/rl-modeling.md §5.6) at its edges
    streamed = (("orchestration", "framework", '"verl-fsdp"'), ("orchestration", "partial_rollout", "true"),
                ("trainer", "minibatches_per_step", "16"))
    c["streamed_key_a_string"] = with_key("orchestration", "stream_minibatches", '"yes"')
    c["streamed_bound_10000"] = edits(*streamed, ("orchestration", "max_staleness", "10000"))
    c["streamed_bound_0_nearly_all_dropped"] = edits(*streamed, ("orchestration", "max_staleness", "0"),
                                                     ("orchestration", "filter_zero_advantage", "true"),
                                                     ("workload.solve_rate", "always", "0.84"))
    c["streamed_more_minibatches_than_samples"] = edits(*streamed[:2], ("trainer", "minibatches_per_step", "100000"),
                                                        ("orchestration", "max_staleness", "0.5"))
    # missing sections, phases, empty and junk files
    for section in ("model", "trainer", "generator", "workload", "workload.solve_rate"):
        c[f"missing_{section}"] = without_section(section)
    c["phases_unsorted"] = VALID + ('\n[[phases]]\nname = "b"\nstart_step = 50\n'
                                    '\n[[phases]]\nname = "a"\nstart_step = 10\n')
    c["phase_after_the_run"] = VALID + '\n[[phases]]\nname = "late"\nstart_step = 100000000\n'
    c["phase_scale_1000"] = VALID + '\n[[phases]]\nname = "long"\nstart_step = 100\nresponse_scale = 1000\n'
    c["empty"] = ""
    c["whitespace"] = " \n\t\n"
    c["comment_only"] = "# nothing here\n"
    c["not_toml"] = "this is not toml at all = = ["
    c["duplicate_key"] = VALID.replace("gpus = 8", "gpus = 8\ngpus = 8", 1)
    c["duplicate_section"] = VALID + '\n[trainer]\nhardware = "H100"\ngpus = 8\n'
    c["nul_byte"] = VALID.replace("[trainer]", "[trainer]\x00", 1)
    c["utf8_bom"] = "\ufeff" + VALID
    c["lone_surrogate"] = VALID.replace('"default"', '"\ud800"', 1)
    c["over_the_size_limit"] = VALID + "#" * MAX_SCENARIO_BYTES
    c["crlf_line_ends"] = VALID.replace("\n", "\r\n")
    for seed, size in ((1, 16), (2, 300), (3, 5000), (4, 65_536)):
        c[f"binary_junk_{size}"] = junk(seed, size)
    c["junk_after_valid"] = VALID + junk(5, 200)
    return c


CORPUS = corpus()


def test_the_corpus_is_large_and_varied():
    assert 110 <= len(CORPUS) <= 150
    assert len(set(CORPUS.values())) == len(CORPUS)  # every case differs


# --------------------------------------------------------------------------------------------- the library
def finite(metrics: dict) -> None:
    for key, value in metrics.items():
        if value is not None and not isinstance(value, str):
            assert math.isfinite(value), (key, value)


# solve_split's default step on a cluster of a million GPUs or more is 8 GPUs, a quarter of a million splits
# (tens of seconds with every split evaluated): such clusters are solved on a coarser grid here, so the file
# stays quick; their evaluate runs as is.
BIG_CLUSTER = 100_000
BIG_GRANULARITY = 1024


def through_the_library(text: str) -> str:
    """loads_scenario, evaluate, solve_split: what each ended in (``ok`` or the error's class name)."""
    outcomes = []
    try:
        scn = tc.loads_scenario(text, source="corpus.toml")
    except tc.TcocalcError as exc:
        return check_typed(exc)
    solve = tc.solve_split
    if scn.trainer.gpus + scn.generator.gpus > BIG_CLUSTER:
        solve = functools.partial(tc.solve_split, granularity=BIG_GRANULARITY)
    for run in (tc.evaluate, solve):
        try:
            finite(run(scn).metrics)
            outcomes.append("ok")
        except tc.TcocalcError as exc:
            outcomes.append(check_typed(exc))
    return " / ".join(outcomes)


def check_typed(exc: tc.TcocalcError) -> str:
    message = str(exc)
    assert message and "Traceback" not in message
    if isinstance(exc, tc.ScenarioError):
        assert isinstance(exc.field, str) and exc.field, message  # names what is wrong
    return type(exc).__name__


@pytest.mark.parametrize("name", sorted(CORPUS))
def test_library_ends_in_a_typed_error_or_finite_metrics(name):
    """Any exception other than a TcocalcError fails the test (pytest reports it with its traceback)."""
    through_the_library(CORPUS[name])


def test_the_corpus_reaches_the_model_not_only_the_reader():
    """A third or more of the corpus loads, and some of it evaluates: the hostile values reach the model."""
    loaded = evaluated = 0
    for text in CORPUS.values():
        try:
            scn = tc.loads_scenario(text)
        except tc.TcocalcError:
            continue
        loaded += 1
        try:
            tc.evaluate(scn)
            evaluated += 1
        except tc.TcocalcError:
            pass
    assert loaded >= len(CORPUS) // 3 and evaluated >= 20, (loaded, evaluated)


# ------------------------------------------------------------------------------------------ the command line
CLI_SAMPLE = sorted({*sorted(CORPUS)[::8], "binary_junk_5000", "empty", "lone_surrogate", "over_the_size_limit"})


def run_cli(path: Path) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "tcocalc", "run", str(path)], capture_output=True, text=True,
                          timeout=120, cwd=ROOT)


def test_cli_exits_0_3_or_4_without_a_traceback(tmp_path):
    """A sample of ~20 (every 8th name, and junk), run as files by ``python -m tcocalc run``, four at a time:
    success, a bad scenario (3) or an infeasible one (4), never a crash (docs/cli.md, exit status)."""
    paths = []
    for name in CLI_SAMPLE:
        path = tmp_path / f"{name}.toml"
        path.write_bytes(CORPUS[name].encode("utf-8", errors="surrogatepass"))
        paths.append(path)
    with concurrent.futures.ThreadPoolExecutor(max_workers=4) as pool:
        results = list(pool.map(run_cli, paths))
    bad = {name: (res.returncode, res.stderr[-2000:]) for name, res in zip(CLI_SAMPLE, results, strict=True)
           if res.returncode not in (0, 3, 4) or "Traceback" in res.stderr}
    assert not bad, bad
    assert {0, 3} <= {res.returncode for res in results}  # the sample holds good and bad files


# --------------------------------------------------------------------------------------------- the app
APP_SAMPLE = ["binary_junk_300", "generator_gpus_one", "colocated_unequal_pools", "config_num_attention_heads_0",
              "nesting_90k_brackets"]


@pytest.mark.parametrize("name", APP_SAMPLE)
def test_app_upload_shows_an_error_or_the_plan(name):
    """The plan page with the file uploaded (AppTest simulates the upload widget): no exception."""
    from streamlit.testing.v1 import AppTest

    at = AppTest.from_file(str(ROOT / "tcocalc" / "app" / "plan.py"), default_timeout=180).run()
    data = CORPUS[name].encode("utf-8", errors="surrogatepass")
    at.file_uploader(key="upload").set_value((f"{name}.toml", data, "application/toml")).run()
    assert not at.exception, [e.value for e in at.exception]
    assert any(f"{name}.toml is in use" in i.value for i in at.info)  # the upload, not the scenario box
    assert at.error or at.metric, name  # an error says why, or the plan is shown
