"""A scenario's effective framework settings: its own keys where given, else its framework preset
(``[orchestration] framework``, data/frameworks.toml), else the engine's documented defaults.

:func:`~tcocalc.rl.cluster.resolve` derives them once per scenario (:func:`settings`) into ``cluster.settings``,
which every stage reads instead of the raw scenario fields, so a preset and an explicit key mean the same thing
everywhere (model, simulator, report).
"""

from __future__ import annotations

from dataclasses import dataclass

from ..catalog.accelerators import Accelerator
from ..catalog.calibration import RLCalibration
from ..catalog.frameworks import (
    engine_defaults,
    engine_kv_block_tokens,
    engine_max_num_batched_tokens,
    engine_max_num_seqs,
    framework_presets,
)
from ..errors import ScenarioError
from ..roofline.engine_config import EngineConfig
from ..roofline.speculative import speculation
from ..scenario import Scenario
from .weight_sync import Storage, storage

__all__ = ["Settings", "settings", "engine_config", "rollout_kv_precision"]


@dataclass(frozen=True)
class Settings:
    """Effective framework and engine settings of a scenario (see the module docstring)."""

    framework: str
    engine: str
    cuda_graphs: bool
    colocated_offload: bool
    old_logprob_pass: bool
    reference_model: bool
    weight_sync: str
    sync_blocks_trainer: bool
    async_scheduling: bool       # the engine's CPU work per step overlaps the GPU's (else exposed)
    bucketed_weight_load: bool   # weights reach the engine in buckets (else a per-tensor handling cost)
    trainer_overhead: float      # framework time over the roofline trainer's, forward and backward [1]
    max_num_seqs: int            # per engine instance [sequences]
    cuda_graph_max_batch: int    # larger decode batches run without CUDA graphs [sequences]
    max_num_batched_tokens: int  # tokens one engine step takes in (the prefill chunk) [tokens]
    stream_minibatches: bool     # async: the trainer takes each mini-batch as it fills (verl fully-async)
    storage: Storage             # the shared storage of a "disk" weight sync (its aggregate rates)
    trainer_sharding: str        # "megatron" (TP/PP/EP, distributed optimizer) or "fsdp" (ZeRO-3 over DP)
    kv_cache_fp8: bool           # the engine stores its KV cache in FP8 unless [generator] kv_precision says
    dispatch_s_per_sample: float = 0.0  # the controller's cost per dispatched sample and step [s]
    kv_retention: str = "lru"    # a waiting trajectory's KV: "lru" (evictable prefix cache) or "pinned" (§4.12)

    @property
    def extra_forward_passes(self) -> int:
        """Forward-only log-prob passes per trained sample (old policy, reference model)."""
        return int(self.old_logprob_pass) + int(self.reference_model)


def _pick(explicit, preset):
    return preset if explicit is None else explicit


def settings(scn: Scenario, generator: Accelerator, rl_cal: RLCalibration) -> Settings:
    """The scenario's keys over its framework preset over the engine's defaults, on the resolved ``generator``
    accelerator (its engine defaults by GPU) and RL factors ``rl_cal`` (the shared storage of a disk weight sync).
    Called once per scenario, by :func:`~tcocalc.rl.cluster.resolve`; every stage reads ``cluster.settings``."""
    presets = framework_presets()
    name = scn.orchestration.framework
    if name not in presets:  # the schema's choices and the data file disagree: a packaging error, named
        raise ScenarioError("orchestration.framework", f"no preset {name!r} in data/frameworks.toml; presets: "
                                                       f"{', '.join(sorted(presets))}")
    p = presets[name]
    t, g, o = scn.trainer, scn.generator, scn.orchestration
    engine = _pick(g.engine, p["engine"])
    eng = engine_defaults(engine)
    return Settings(
        framework=name, engine=engine, cuda_graphs=_pick(g.cuda_graphs, p["cuda_graphs"]),
        colocated_offload=_pick(t.colocated_offload, p["colocated_offload"]),
        old_logprob_pass=_pick(t.old_logprob_pass, p["old_logprob_pass"]),
        reference_model=_pick(t.reference_model, p["reference_model"]),
        weight_sync=_pick(o.weight_sync, p["weight_sync"]),
        sync_blocks_trainer=_pick(o.sync_blocks_trainer, p["sync_blocks_trainer"]),
        async_scheduling=_pick(g.async_scheduling, p["async_scheduling"]),
        bucketed_weight_load=_pick(g.bucketed_weight_load, p["bucketed_weight_load"]),
        trainer_overhead=_pick(t.framework_overhead, p["trainer_overhead"]),
        max_num_seqs=_pick(g.max_num_seqs, engine_max_num_seqs(engine, generator)),
        cuda_graph_max_batch=eng["cuda_graph_max_batch"],
        max_num_batched_tokens=_pick(g.max_num_batched_tokens, engine_max_num_batched_tokens(engine, generator)),
        stream_minibatches=_pick(o.stream_minibatches, p["stream_minibatches"]),
        storage=storage(rl_cal, write_gb_per_s=o.storage_write_gb_per_s,
                        read_gb_per_s=o.storage_read_gb_per_s),
        trainer_sharding=_sharding(t, p), kv_cache_fp8=p["kv_cache_fp8"],
        dispatch_s_per_sample=_pick(o.dispatch_s_per_sample, p["dispatch_s_per_sample"]),
        kv_retention=_pick(g.kv_retention, p["kv_retention"]))


def _sharding(t, preset: dict) -> str:
    """The trainer's state layout, ``[trainer] sharding`` over the preset's ``trainer_sharding``; ScenarioError
    naming ``trainer.pp`` (``ep``, ``vp``) when FSDP meets a pinned degree it does not have (docs/rl-modeling.md
    §3.9)."""
    sharding = _pick(t.sharding, preset["trainer_sharding"])
    if sharding == "fsdp":
        for degree in ("pp", "ep", "vp"):
            if (getattr(t, degree) or 1) > 1:
                raise ScenarioError(f"trainer.{degree}", f"{degree} = {getattr(t, degree)} with sharding = 'fsdp' "
                                                         f"(from the scenario or its framework preset): FSDP shards "
                                                         f"the model over data parallelism and has no {degree}; set "
                                                         f"trainer.sharding = 'megatron' or {degree} = 1")
    return sharding


def rollout_kv_precision(st: Settings) -> str:
    """The KV-cache precision of the RL generator unless ``[generator] kv_precision`` sets one: FP8 where the
    framework's rollout recipe turns an FP8 KV cache on (preset ``kv_cache_fp8``), else BF16 whatever the weights'
    precision (docs/rl-modeling.md §4.11). FP8 and FP4 rollout recipes keep the engine's default KV dtype, the
    model's activation dtype (vLLM and SGLang ``kv_cache_dtype = "auto"``): miles keeps BF16 KV unless
    ``--rollout-attn-fp8`` and NeMo RL's FP8 generation sets none (docs/sources.md §M.8)."""
    return "fp8" if st.kv_cache_fp8 else "bf16"


def engine_config(scn: Scenario, cluster) -> EngineConfig:
    """The generator's engine as one value (:class:`~tcocalc.roofline.engine_config.EngineConfig`), built once per
    phase from the scenario's ``[generator]`` keys, its framework preset and the engine's documented defaults
    (``cluster.settings``, :func:`settings`), on the resolved ``cluster`` (its generator accelerator and RL
    factors):

    * CUDA graphs up to ``min(cuda_graph_max_batch, 2·max_num_seqs)`` sequences (vLLM: ``min(2 x max_num_seqs,
      512)``, vllm-project/vllm ``vllm/config`` ``max_cudagraph_capture_size``), the engine's running cap;
    * without async scheduling the engine's CPU work adds ``engine_cpu_share`` of the GPU time to each step
      (data/rl_calibration.toml; docs/rl-modeling.md §4.8);
    * the engine's token budget per step (the prefill chunk), its KV block (``kv_block_tokens``, default the
      engine's for the model's attention), speculative decoding, ``gpu_memory_utilization`` and disaggregated
      prefill as the scenario gives them."""
    g = scn.generator
    st = cluster.settings
    m, acc = cluster.model, cluster.generator
    block = g.kv_block_tokens if g.kv_block_tokens is not None else engine_kv_block_tokens(st.engine, m, acc)
    cpu = 1.0 if st.async_scheduling else 1.0 + cluster.rl_cal["engine_cpu_share"]
    return EngineConfig(
        precision=g.precision, kv_precision=g.kv_precision or rollout_kv_precision(st),
        kv_block_tokens=int(block), max_batched_tokens=float(st.max_num_batched_tokens),
        interleaved_prefill=not g.disaggregated,
        speculation=speculation(g.speculative_tokens, g.acceptance_rate, g.draft_layers),
        cuda_graphs=st.cuda_graphs, graph_max_batch=min(st.cuda_graph_max_batch, 2 * st.max_num_seqs),
        max_num_seqs=st.max_num_seqs, cpu_factor=cpu, gpu_memory_utilization=g.gpu_memory_utilization,
        disaggregated=g.disaggregated, prefill_gpus=g.prefill_gpus)
