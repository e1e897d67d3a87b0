"""RL framework presets and serving-engine defaults (``data/frameworks.toml``).

A preset is the set of defaults that differ between RL frameworks (NeMo RL, verl, slime, AReaL, Prime RL):
the inference engine, CUDA graphs, colocated offload, the extra log-prob passes, the weight-sync transport
and whether the trainer waits for the push. Every value carries a source string (a repository file, a doc
page, or "assumption: ..."); the reader refuses a value without one. A scenario's own keys override its
preset (:mod:`tcocalc.rl.settings`).
"""

from __future__ import annotations

import functools

from .._data import parse_shipped
from ..errors import DataFileError
from .provenance import parse_toml

__all__ = ["FRAMEWORK_KEYS", "ENGINE_KEYS", "BENCHMARK_KEYS", "framework_presets", "engine_defaults",
           "engine_max_num_seqs", "engine_max_num_batched_tokens", "engine_kv_block_tokens", "benchmark_defaults",
           "parse_frameworks"]

#: preset key -> the type its value must have
FRAMEWORK_KEYS: dict[str, type] = {
    "engine": str, "cuda_graphs": bool, "colocated_offload": bool, "old_logprob_pass": bool,
    "reference_model": bool, "weight_sync": str, "sync_blocks_trainer": bool, "async_scheduling": bool,
    "bucketed_weight_load": bool, "trainer_overhead": float, "stream_minibatches": bool, "trainer_sharding": str,
    "kv_cache_fp8": bool, "dispatch_s_per_sample": float, "kv_retention": str,
}
#: engine key -> type
ENGINE_KEYS: dict[str, type] = {"max_num_seqs": int, "max_num_batched_tokens": int, "cuda_graph_max_batch": int,
                                "max_num_seqs_small_gpu": int, "small_gpu_below_gib": int,
                                "max_num_batched_tokens_small_gpu": int, "max_num_batched_tokens_large_gpu": int,
                                "large_gpu_from_gib": int, "kv_block_tokens": int, "kv_block_tokens_mla": int,
                                "kv_block_tokens_mla_blackwell": int}
#: benchmark key -> type (a benchmark tool that sizes the engine's caps itself)
BENCHMARK_KEYS: dict[str, type] = {"min_num_tokens": int, "max_num_tokens": int, "kv_block_tokens": int}
#: float keys' allowed range (the others: 1.0 to 10.0, a multiplier such as trainer_overhead)
_RANGES = {"dispatch_s_per_sample": (0.0, 1.0)}
_CHOICES = {"engine": ("vllm", "sglang"), "weight_sync": ("nccl-broadcast", "p2p", "disk", "host"),
            "trainer_sharding": ("megatron", "fsdp"), "kv_retention": ("lru", "pinned")}


def _check_table(file: str, entry: str, table: dict, keys: dict[str, type]) -> dict:
    if not isinstance(table, dict):
        raise DataFileError(file, entry, "", "expected a table")
    sources = table.get("sources")
    if not isinstance(sources, dict):
        raise DataFileError(file, entry, "sources", "missing: every value needs a source string")
    out = {}
    for key, typ in keys.items():
        if key not in table:
            raise DataFileError(file, entry, key, "missing")
        value = table[key]
        lo, hi = _RANGES.get(key, (1.0, 10.0))
        if type(value) is not typ or (typ is int and value < 1) or (typ is float and not lo <= value <= hi):
            want = {int: "a positive integer", float: f"a number from {lo:g} to {hi:g}"}.get(typ, typ.__name__)
            raise DataFileError(file, entry, key, f"expected {want}, got {value!r}")
        if key in _CHOICES and value not in _CHOICES[key]:
            raise DataFileError(file, entry, key, f"expected one of {list(_CHOICES[key])}, got {value!r}")
        src = sources.get(key)
        if not isinstance(src, str) or not src.strip():
            raise DataFileError(file, entry, f"sources.{key}", "missing or empty source")
        out[key] = value
    extra = set(table) - set(keys) - {"sources", "label"}
    if extra:
        raise DataFileError(file, entry, sorted(extra)[0], f"unknown key; expected {sorted(keys)}")
    return out


def parse_frameworks(text: str, file: str = "data/frameworks.toml") -> tuple[dict, dict, dict]:
    """(presets by framework name, engine defaults by engine name, benchmark-tool defaults by tool name), every
    value and source checked."""
    raw = parse_toml(text, file)
    presets = {name: _check_table(file, f"framework.{name}", t, FRAMEWORK_KEYS)
               for name, t in raw.get("framework", {}).items()}
    engines = {name: _check_table(file, f"engine.{name}", t, ENGINE_KEYS) for name, t in raw.get("engine", {}).items()}
    benchmarks = {name: _check_table(file, f"benchmark.{name}", t, BENCHMARK_KEYS)
                  for name, t in raw.get("benchmark", {}).items()}
    if "generic" not in presets:
        raise DataFileError(file, "framework.generic", "", "missing: the neutral default preset")
    for name, p in presets.items():
        if p["engine"] not in engines:
            raise DataFileError(file, f"framework.{name}", "engine", f"no [engine.{p['engine']}] defaults")
    return presets, engines, benchmarks


@functools.cache
def _shipped() -> tuple[dict, dict, dict]:
    return parse_shipped("frameworks.toml", parse_frameworks)


def framework_presets() -> dict[str, dict]:
    """Framework name -> its preset (engine, cuda_graphs, colocated_offload, old_logprob_pass, reference_model,
    weight_sync, sync_blocks_trainer)."""
    return dict(_shipped()[0])


def engine_defaults(engine: str) -> dict:
    """The documented defaults of a serving engine (max_num_seqs, max_num_batched_tokens, cuda_graph_max_batch,
    and the smaller max_num_seqs below a GPU-memory gate: max_num_seqs_small_gpu, small_gpu_below_gib).
    An unknown engine is a ScenarioError naming ``engine`` and the known ones."""
    engines = _shipped()[1]
    if engine not in engines:
        from ..errors import ScenarioError
        raise ScenarioError("engine", f"unknown engine {engine!r}; known: {', '.join(sorted(engines))}")
    return dict(engines[engine])


def benchmark_defaults(tool: str) -> dict:
    """The documented caps of a benchmark tool that sizes the engine itself (``trtllm-bench``: the bounds of its
    ``max_num_tokens`` heuristic). A missing tool is a DataFileError naming data/frameworks.toml."""
    benches = _shipped()[2]
    if tool not in benches:
        raise DataFileError("data/frameworks.toml", f"benchmark.{tool}", "", "missing")
    return dict(benches[tool])


def engine_max_num_seqs(engine: str, acc) -> int:
    """The engine's default sequences per instance on accelerator ``acc``: vLLM gives 1024 on GPUs of 70 GiB or
    more whose name lacks "a100", 256 otherwise (docs/sources.md §A.1). The datasheet capacity is read as GiB,
    as vLLM reads the device (an "80 GB" H100 reports 79.19 GiB)."""
    eng = engine_defaults(engine)
    return eng["max_num_seqs_small_gpu"] if _small_gpu(eng, acc) else eng["max_num_seqs"]


def _small_gpu(eng: dict, acc) -> bool:
    return acc.hbm_bytes / 1e9 < eng["small_gpu_below_gib"] or "a100" in acc.name.lower()


def engine_max_num_batched_tokens(engine: str, acc) -> int:
    """The engine's default tokens per step (the prefill chunk) on accelerator ``acc``: below the small-GPU gate
    (vLLM: under 70 GiB, or an A100) ``max_num_batched_tokens_small_gpu``, from ``large_gpu_from_gib`` (SGLang:
    160 GiB, B200 and MI300X) ``max_num_batched_tokens_large_gpu``, else ``max_num_batched_tokens`` (vLLM's
    offline LLM class 16,384 / 8,192, SGLang's ``chunked_prefill_size`` 8,192 / 16,384; docs/sources.md §A.1,
    A.2; data/frameworks.toml)."""
    eng = engine_defaults(engine)
    if _small_gpu(eng, acc):
        return eng["max_num_batched_tokens_small_gpu"]
    if acc.hbm_bytes / 1e9 >= eng["large_gpu_from_gib"]:
        return eng["max_num_batched_tokens_large_gpu"]
    return eng["max_num_batched_tokens"]


def engine_kv_block_tokens(engine: str, m, acc) -> int:
    """Tokens per KV-cache block of ``engine`` for model ``m`` on accelerator ``acc``: a request holds whole blocks
    (vLLM 16, MLA 64, MLA on Blackwell 128; SGLang's token-granular page of 1; docs/sources.md §A.1, §A.2)."""
    eng = engine_defaults(engine)
    if m.attention != "mla":
        return eng["kv_block_tokens"]
    return eng["kv_block_tokens_mla_blackwell" if acc.generation == "blackwell" else "kv_block_tokens_mla"]
