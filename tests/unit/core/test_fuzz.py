"""Fuzzed input through every door (issue 8 item 2): the library's TOML loader, the command line and (in
tests/e2e/test_e2e.py) the app's upload. Only typed errors come out, and they say WHAT is wrong: a ScenarioError
names the offending key (``.field``), and anything accepted evaluates to finite metrics (or None). Reaches
a custom model's ``[model.config]`` key by key, and nesting of arrays, inline tables and tables around the
MAX_NESTING_DEPTH limit. Hypothesis runs derandomized (same examples every run).

Issue 31 item 8 adds a generator of 2,641 hostile variants of five shipped scenarios (type confusion at every key,
each numeric field at and past its bounds, unknown and missing keys, 17 contradictions, huge sizes; 654 of them load
and are evaluated, every fifth solved too) and 243 command lines (every 12th variant through ``tcocalc run``, a
quarter of those with ``--solve``, and bad values of run's, size's and calibrate's flags): every error names its
field, pool or flag (54 library errors and 10 command-line lines named none before). The file takes about 30 s."""

import math
import re
import subprocess
import sys

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import tcocalc as tc
from tcocalc.scenario import MAX_NESTING_DEPTH, MAX_SCENARIO_BYTES, loads_scenario
from tests.conftest import ROOT

SETTINGS = dict(derandomize=True, database=None, deadline=None, suppress_health_check=list(HealthCheck))
VALID = (ROOT / "scenarios" / "default.toml").read_text()


def _only_typed(text: str):
    try:
        scn = loads_scenario(text)
    except tc.ScenarioError:
        return None
    return scn


@settings(max_examples=300, **SETTINGS)
@given(st.binary(max_size=2000))
def test_random_bytes(data):
    _only_typed(data.decode("utf-8", errors="replace"))


@settings(max_examples=300, **SETTINGS)
@given(st.text(max_size=2000))
def test_random_text(text):
    _only_typed(text)


KEYS = re.findall(r"^(\w+) = ", VALID, flags=re.M)
VALUES = ["-1", "0", "1e308", "-1e308", "nan", "inf", "-inf", '"nan"', '"inf"', '"x"', "true", "[]", "{}",
          '"\U0001F600\u202e"', "1.5", "99999999999999999999", '"' + "a" * 5000 + '"']


def _section_of(key: str) -> str:
    """The dotted section of the first ``key = `` line of VALID (the one the fuzzers replace)."""
    section = ""
    for line in VALID.splitlines():
        if m := re.match(r"^\[([\w.]+)\]", line):
            section = m.group(1)
        elif line.startswith(f"{key} = "):
            return section
    raise AssertionError(key)


def _assert_finite(metrics: dict):
    for k, v in metrics.items():
        assert v is None or math.isfinite(v), (k, v)


def _assert_names(exc: tc.ScenarioError, key_path: str):
    """The error's field is the key, or (a check across fields, e.g. p99 below the mean) its section or a key
    beside it in that section."""
    section = key_path.rpartition(".")[0]
    assert exc.field == key_path or section and (exc.field == section or exc.field.startswith(section + ".")), \
        (key_path, exc.field, str(exc)[:300])


def _evaluate_or_typed(scn, *, key_path: str | None):
    """Evaluate an accepted scenario: finite metrics, or a ScenarioError naming ``key_path`` (None: the input
    was valid, so none is expected), or an InfeasibleError (a valid request that does not fit)."""
    try:
        _assert_finite(tc.evaluate(scn).metrics)
    except tc.ScenarioError as exc:
        assert key_path is not None, str(exc)
        _assert_names(exc, key_path)
    except tc.InfeasibleError as exc:  # names no input field: says what does not fit and what would
        assert str(exc)


@settings(max_examples=400, **SETTINGS)
@given(st.sampled_from(KEYS), st.sampled_from(VALUES))
def test_every_key_with_hostile_values(key, value):
    text = re.sub(rf"^{key} = .*$", f"{key} = {value}", VALID, count=1, flags=re.M)
    section = _section_of(key)
    key_path = f"{section}.{key}" if section else key
    try:
        scn = loads_scenario(text)
    except tc.ScenarioError as exc:
        _assert_names(exc, key_path)
        return
    _evaluate_or_typed(scn, key_path=key_path)


# ----------------------------------------------------------------------------- [model.config], key by key
# Small configs of the three shapes from_hf_config reads (dense GQA, Qwen3 MoE, DeepSeek MLA + MoE): each
# fits the default 8 + 8 H100 scenario, so a valid variant evaluates.
DENSE = {"model_type": '"qwen3"', "hidden_size": "4096", "num_hidden_layers": "36", "num_attention_heads": "32",
         "num_key_value_heads": "8", "head_dim": "128", "intermediate_size": "12288", "vocab_size": "151936",
         "tie_word_embeddings": "false", "max_position_embeddings": "40960"}
QWEN_MOE = {"model_type": '"qwen3_moe"', "hidden_size": "2048", "num_hidden_layers": "48",
            "num_attention_heads": "32", "num_key_value_heads": "4", "head_dim": "128", "vocab_size": "151936",
            "num_experts": "128", "num_experts_per_tok": "8", "moe_intermediate_size": "768",
            "intermediate_size": "6144", "decoder_sparse_step": "1", "mlp_only_layers": "[]"}
MLA_MOE = {"model_type": '"deepseek_v3"', "hidden_size": "2048", "num_hidden_layers": "27",
           "num_attention_heads": "16", "num_key_value_heads": "16", "kv_lora_rank": "512",
           "qk_nope_head_dim": "128", "qk_rope_head_dim": "64", "v_head_dim": "128", "n_routed_experts": "64",
           "num_experts_per_tok": "6", "moe_intermediate_size": "1408", "n_shared_experts": "2",
           "first_k_dense_replace": "1", "intermediate_size": "10944", "vocab_size": "102400",
           "index_topk": "0"}
BASES = {"dense": DENSE, "qwen_moe": QWEN_MOE, "mla_moe": MLA_MOE}
# every key ModelArch.from_hf_config reads (aliases included); a hostile value goes into each, present or not
CONFIG_KEYS = sorted({*DENSE, *QWEN_MOE, *MLA_MOE, "_name_or_path", "num_local_experts", "q_lora_rank",
                      "attention_bias", "qkv_bias", "use_qk_norm", "moe_topk", "num_shared_experts",
                      "index_n_heads", "index_head_dim"})
CONFIG_VALUES = ["0", "-1", "1.5", "inf", "-inf", "nan", '"x"', '"32"', '""', "true", "false",
                 "99999999999999999999", "9223372036854775807", "-9223372036854775808", "[]", "[1, 2]", "{}",
                 "{ a = 1 }", '"' + "a" * 5000 + '"', "1979-05-27"]


def _with_config(cfg: dict[str, str]) -> str:
    body = "".join(f"{k} = {v}\n" for k, v in cfg.items())
    return VALID.replace('name = "Qwen3-8B"', 'name = "fuzzed-model"', 1).replace(
        "[trainer]", f"[model.config]\n{body}\n[trainer]", 1)


def _model_or_typed(cfg: dict[str, str], key: str):
    """Load the scenario and build its model: the model, or None after checking the error names ``key``."""
    scn = loads_scenario(_with_config(cfg))  # [model.config] is free-form data here: it must load
    try:
        m = tc.ModelArch.from_hf_config(scn.model.config, name=scn.model.name)
    except tc.ScenarioError as exc:
        assert exc.field == f"model.config.{key}", (exc.field, str(exc))
        assert len(str(exc)) < 300 and "\n" not in str(exc)
        return scn, None
    for figure in (m.params_total, m.params_active, m.weight_bytes("fp8"), m.kv_bytes_per_token("bf16"),
                   m.forward_flops_per_token(32768), m.training_flops_per_token(32768)):
        assert math.isfinite(figure) and figure > 0
    return scn, m


@pytest.mark.parametrize("base", sorted(BASES))
def test_every_config_key_with_hostile_values(base):
    """Exhaustive on the model: each key of each config shape, with every hostile value."""
    for key in CONFIG_KEYS:
        for value in CONFIG_VALUES:
            _model_or_typed({**BASES[base], key: value}, key)


@settings(max_examples=60, **SETTINGS)
@given(st.sampled_from(sorted(BASES)), st.sampled_from(CONFIG_KEYS), st.sampled_from(CONFIG_VALUES))
def test_hostile_config_through_evaluate(base, key, value):
    """Sampled, through the whole pipeline: the same field from evaluate, or finite metrics."""
    scn, m = _model_or_typed({**BASES[base], key: value}, key)
    if m is None:  # evaluate meets the same bad key
        with pytest.raises(tc.ScenarioError) as err:
            tc.evaluate(scn)
        assert err.value.field == f"model.config.{key}"
    else:
        _evaluate_or_typed(scn, key_path=None)


def test_the_bad_configs_of_the_bug_report():
    for key, value in (("num_attention_heads", "0"), ("hidden_size", "inf"), ("num_attention_heads", '"x"')):
        with pytest.raises(tc.ScenarioError) as err:
            tc.evaluate(loads_scenario(_with_config({**DENSE, key: value})))
        assert err.value.field == f"model.config.{key}"


# ------------------------------------------------------------------------------------------------ nesting
NEST_KINDS = st.lists(st.sampled_from(["array", "inline"]), max_size=24)


def _nested_value(kinds: list[str]) -> str:
    text = "1"
    for i, kind in reversed(list(enumerate(kinds))):
        text = f"[{text}]" if kind == "array" else f"{{ k{i} = {text} }}"
    return text


@settings(max_examples=200, **SETTINGS)
@given(st.sampled_from(["model.config", "economics.cost_inputs"]), st.integers(0, 20), NEST_KINDS)
def test_nesting_at_any_depth(where, tables, kinds):
    """Tables, then arrays and inline tables: up to the limit it loads and writes back; one level more is a
    ScenarioError naming the path down to the first level too deep."""
    header = ".".join([where, *(f"t{i}" for i in range(tables))])
    text = VALID + f"\n[{header}]\nv = {_nested_value(kinds)}\n"
    depth = len(where.split(".")) + tables + 1 + len(kinds)  # levels of the innermost value's key path
    if depth <= MAX_NESTING_DEPTH:
        scn = loads_scenario(text)
        assert loads_scenario(scn.to_toml()) == scn
        return
    with pytest.raises(tc.ScenarioError) as err:
        loads_scenario(text)
    parts = err.value.field.split(".")
    assert len(parts) == MAX_NESTING_DEPTH + 1 and err.value.field.startswith(where + ".")
    assert parts[: min(len(parts), len(header.split(".")))] == header.split(".")[: len(parts)]
    assert str(MAX_NESTING_DEPTH) in str(err.value)


@pytest.mark.parametrize("section", ["model", "trainer", "generator", "workload"])
def test_missing_sections(section):
    text = re.sub(rf"\[{section}\][^\[]*", "", VALID)
    with pytest.raises(tc.ScenarioError) as err:
        loads_scenario(text)
    assert err.value.field.startswith(section)  # the section, or its first missing field


def test_unicode_names_and_deep_nesting():
    scn = loads_scenario(VALID.replace('name = "default"', 'name = "pläne 计划 🚀"'))
    assert scn.name == "pläne 计划 🚀"
    with pytest.raises(tc.ScenarioError, match=str(MAX_NESTING_DEPTH)):  # tomllib would recurse on it
        loads_scenario("a = " + "[" * 90_000 + "]" * 90_000)
    with pytest.raises(tc.ScenarioError, match=str(MAX_NESTING_DEPTH)):
        loads_scenario("a = " + "{b=" * 40_000 + "1" + "}" * 40_000)
    with pytest.raises(tc.ScenarioError) as err:  # deep tables: refused on reading, not later in to_toml
        loads_scenario(VALID + "\n[model.config]\n" + "".join(f"[model.config{'.y' * i}]\n" for i in range(1, 200)))
    assert err.value.field == "model.config" + ".y" * (MAX_NESTING_DEPTH - 1)  # the first path one level too deep


def test_fifty_megabyte_file_is_refused_without_reading(tmp_path):
    big = tmp_path / "big.toml"
    with big.open("wb") as f:
        f.seek(50 * 1024 * 1024)
        f.write(b"\n")
    with pytest.raises(tc.ScenarioError, match=f"{MAX_SCENARIO_BYTES:,} bytes or under"):
        tc.load_scenario(big)


@pytest.mark.parametrize("content", [b"\xff\xfe\x00garbage", b"[model]\nname = 1\n", b"x" * 10,
                                     VALID.replace("gpus = 8", "gpus = 0", 1).encode(),
                                     VALID.replace("group_size = 8", "group_size = nan").encode()])
def test_cli_one_line_exit_3(tmp_path, content):
    p = tmp_path / "s.toml"
    p.write_bytes(content)
    res = subprocess.run([sys.executable, "-m", "tcocalc", "run", str(p), "--json"], capture_output=True, text=True)
    assert res.returncode == 3  # a bad scenario (docs/cli.md, exit status)
    assert res.stderr.startswith("tcocalc: error:") and len(res.stderr.strip().splitlines()) == 1
    assert "Traceback" not in res.stderr and res.stdout == ""


def test_no_code_path_evaluates_user_input():
    """TOML is parsed as data only: the package and the app never eval, exec, pickle or yaml-load."""
    pattern = re.compile(r"\b(eval|exec)\(|pickle\.loads?|yaml\.load\(|__import__\(")
    for path in [*(ROOT / "tcocalc").rglob("*.py"), ROOT / "app.py"]:
        assert not pattern.search(path.read_text()), path


# ------------------------------------------------------------------------------- issue 31 item 8: errors name it
# A generator of hostile variants of several shipped scenarios (two pools, agentic tools, phases, a streamed verl
# run, one colocated pool): type confusion at every key, boundary values of every numeric field and just outside,
# unknown and missing keys, contradictions between fields, huge sizes. Every error from the library names what it
# concerns: a ScenarioError's field is a dotted scenario path (or ``path``/``toml`` for the file), an
# InfeasibleError's message the pool ("trainer: ...", "generator: ...") or a dotted path; every command-line error
# line a field, a pool or a flag.
import copy  # noqa: E402
import io  # noqa: E402
from contextlib import redirect_stderr, redirect_stdout  # noqa: E402

from tcocalc.scenario import scenario_from_dict  # noqa: E402

HOSTILE_BASES = {"default": tc.load_scenario("default"), "agentic": tc.load_scenario("gb300_agentic_96"),
                 "phases": tc.load_scenario("glm5_h200_drift"),
                 "streamed": tc.load_scenario("verl_fully_async_qwen25_7b_h20_64x64"),
                 "colocated": tc.load_scenario("default").with_cluster(mode="colocated")}
WRONG = ("x", True, [1], {"a": 1}, 1.5, -1, 0)
SECTIONS = ("model", "trainer", "generator", "workload", "orchestration", "sandbox", "economics", "phases",
            "calibration")
PATH = re.compile(rf"\b({'|'.join(SECTIONS)})\.[a-z_0-9.]+")
CONTRADICTIONS = {
    "colocated, unequal pools": {"orchestration.mode": "colocated", "generator.gpus": 16},
    "colocated, other hardware": {"orchestration.mode": "colocated", "generator.hardware": "B200"},
    "colocated, disaggregated": {"orchestration.mode": "colocated", "generator.disaggregated": True},
    "p99 below the mean": {"workload.response_tokens_p99": 10.0},
    "p99 and sigma": {"workload.response_tokens_sigma": 0.5},
    "prefill pool alone": {"generator.prefill_gpus": 2},
    "prefill pool of every GPU": {"generator.disaggregated": True, "generator.prefill_gpus": 1_000_000},
    "draft tokens alone": {"generator.speculative_tokens": 1},
    "more updates than samples": {"trainer.minibatches_per_step": 100_000},
    "never and always over 1": {"workload.solve_rate.never": 0.7, "workload.solve_rate.always": 0.7},
    "phase after the run": {"workload.steps": 1},
    "generator TP above its pool": {"generator.gpus": 2, "generator.tp": 64},
    "generator TP not dividing heads": {"generator.tp": 3},
    "trainer TP not dividing heads": {"trainer.tp": 3},
    "trainer layout over its pool": {"trainer.tp": 8, "trainer.pp": 64},
    "cost inputs of the wrong type": {"economics.cost_inputs": {"pue": True}},
    "cost input unknown": {"economics.cost_inputs": {"colour": 1}},
}
HUGE = {"trainer.gpus": 1_000_000, "generator.gpus": 1_000_000, "workload.prompts_per_step": 10_000_000,
        "workload.group_size": 100_000, "workload.prompt_tokens": 1e8, "workload.turns": 10_000,
        "workload.observation_tokens_per_turn": 1e8}


def _leaves(d: dict, prefix: tuple = ()):
    for k, v in d.items():
        if isinstance(v, dict) and k not in ("config", "cost_inputs"):
            yield from _leaves(v, (*prefix, k))
        elif k != "phases":
            yield (*prefix, k), v


def _set(data: dict, path: tuple, value) -> dict:
    out = copy.deepcopy(data)
    node = out
    for k in path[:-1]:
        node = node.setdefault(k, {})
    if value is _DROP:
        node.pop(path[-1], None)
    else:
        node[path[-1]] = value
    return out


_DROP = object()


def hostile_variants():
    """(label, data): about 2,700 variants of the five bases, each a plain TOML-like table."""
    for base, scn in HOSTILE_BASES.items():
        data = scn.to_dict()
        for path, _ in _leaves(data):
            dotted = ".".join(path)
            for bad in WRONG:
                yield f"{base}: {dotted} = {bad!r}", _set(data, path, bad)
            yield f"{base}: {dotted} missing", _set(data, path, _DROP)
            try:
                low, high, _, _ = tc.Scenario.field_bounds(dotted)
            except tc.ScenarioError:
                continue
            for value in (low, high, None if low is None else low - 1, None if high is None else high + 1, 1e308):
                if value is not None:
                    yield f"{base}: {dotted} = {value!r}", _set(data, path, value)
        for section in SECTIONS[:7]:
            yield f"{base}: unknown key in {section}", _set(data, (section, "no_such_key"), 1)
        yield f"{base}: no phases list", _set(data, ("phases",), 3)
        for label, over in CONTRADICTIONS.items():
            edited = data
            for dotted, value in over.items():
                edited = _set(edited, tuple(dotted.split(".")), value)
            yield f"{base}: {label}", edited
        for dotted, value in HUGE.items():
            yield f"{base}: huge {dotted}", _set(data, tuple(dotted.split(".")), value)


def _names(exc: tc.TcocalcError) -> bool:
    if isinstance(exc, tc.ScenarioError):
        return exc.field in ("path", "toml", "name", "description") or exc.field.split(".")[0] in SECTIONS
    return bool(re.match(r"^(trainer|generator)\b", str(exc)) or PATH.search(str(exc)))


HOSTILE = list(hostile_variants())


def test_the_hostile_generator_is_large_and_reaches_the_model():
    assert len(HOSTILE) >= 2_500
    loaded = 0
    for _, data in HOSTILE:
        try:
            scenario_from_dict(data)
            loaded += 1
        except tc.ScenarioError:
            pass
    assert loaded >= 500  # a fifth or more load: the hostile values reach evaluate too


def test_every_library_error_names_its_field_or_pool():
    unnamed = []
    for i, (label, data) in enumerate(HOSTILE):
        try:
            scn = scenario_from_dict(data)
        except tc.TcocalcError as exc:
            if not _names(exc):
                unnamed.append(f"{label} (load): {exc}")
            continue
        runs = [tc.evaluate]
        if i % 5 == 0 and scn.trainer.gpus + scn.generator.gpus <= 4096:
            runs.append(tc.solve_split)
        for fn in runs:
            try:
                fn(scn)
            except tc.TcocalcError as exc:
                if not _names(exc):
                    unnamed.append(f"{label} ({fn.__name__}): {str(exc)[:300]}")
    assert not unnamed, f"{len(unnamed)} errors name no field or pool:\n" + "\n".join(unnamed[:40])


def _cli_errors(argv: list[str]) -> list[str]:
    from tcocalc.cli.main import main

    err = io.StringIO()
    with redirect_stderr(err), redirect_stdout(io.StringIO()):
        try:
            main(argv)
        except SystemExit:
            pass
    return [line for line in err.getvalue().splitlines() if "error:" in line]


def _line_names(line: str) -> bool:
    body = line.split("error:", 1)[1].strip()
    return bool(PATH.search(body) or re.search(r"--[a-z]", body) or re.search(r"\[\d+\] .*: error: ", line)
                or re.match(r"^(trainer|generator|path|toml|name|description|log|target|unrecognized arguments)\b",
                            body) or all(part.split(".")[0] in SECTIONS for part in body.split(":")[0].split(", ")))


CLI_FLAGS = [["run", "default", "--sim-steps", "0", "--simulate"], ["run", "default", "--sim-steps", "5"],
             ["run", "default", "--seed", "-1", "--simulate"], ["run", "default", "--max-events", "10", "--simulate"],
             ["run", "default", "--csv", "/dev/null"], ["run", "default", "--xlsx", "/nonexistent/x.xlsx"],
             ["run", "/nonexistent.toml"], ["run", "no_such_name"], ["run", "/dev/null"],
             ["size", "default", "--csv", "/dev/null", "--target-samples-per-s", "1"],
             ["size", "default", "--target-samples-per-s", "-1"], ["size", "default", "--target-hours", "nan"],
             ["size", "default", "--budget-usd", "0"], ["size", "default", "--target-samples-per-s", "1",
                                                         "--max-gpus", "0"],
             ["size", "default", "--target-samples-per-s", "1", "--granularity", "0"],
             ["size", "default", "--target-samples-per-s", "1", "--hardware", "Z9000"],
             ["size", "default", "--target-samples-per-s", "1", "--modes", "sideways"],
             ["size", "default", "--target-samples-per-s", "1", "--staleness-bounds", "-1"],
             ["size", "default", "--target-samples-per-s", "1", "--supplies", "nobody"], ["size", "default"],
             ["calibrate", "default"], ["calibrate", "default", "/nonexistent.csv"]]


def test_every_command_line_error_names_a_field_a_pool_or_a_flag(tmp_path):
    """Every 12th hostile variant through ``tcocalc run`` (every 48th with --solve), and each flag of run, size and
    calibrate given a bad value."""
    import tomli_w

    cases = [list(argv) for argv in CLI_FLAGS]
    for i, (_label, data) in enumerate(HOSTILE[::12]):
        path = tmp_path / f"v{i}.toml"
        try:
            path.write_text(tomli_w.dumps(data))
        except (TypeError, ValueError):  # a value TOML cannot hold (None)
            continue
        cases.append(["run", str(path)] + (["--solve"] if i % 4 == 0 else []))
    unnamed, lines = [], 0
    for argv in cases:
        for line in _cli_errors(argv):
            lines += 1
            if not _line_names(line):
                unnamed.append(f"{' '.join(argv)}: {line[:300]}")
    assert lines >= 150
    assert not unnamed, f"{len(unnamed)} error lines name no field, pool or flag:\n" + "\n".join(unnamed[:40])


def test_errors_echo_at_most_a_bounded_part_of_a_key_or_value():
    """A 10,000-character key or name comes back as its first characters and its length."""
    key = "k" * 10_000
    with pytest.raises(tc.ScenarioError) as err:
        loads_scenario(VALID.replace("[trainer]", f"[trainer]\n{key} = 1", 1))
    assert err.value.field == f"trainer.{key}" and len(str(err.value)) < 400 and "10,008 characters" in str(err.value)
    with pytest.raises(tc.TcocalcError) as err:
        tc.evaluate(tc.load_scenario("default").with_values({"model.name": "m" * 10_000}))
    assert len(str(err.value)) < 1_200
    line = _cli_errors(["run", "x" * 10_000])[0]
    assert len(line) < 600
