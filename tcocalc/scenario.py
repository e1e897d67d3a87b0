"""RL scenario: what is trained (model), on what (trainer and generator pools), on which workload,
orchestrated how, with which sandboxes, at what price. Validated once, then frozen.

The TOML layout is documented key by key in docs/scenario-schema.md (generated from this module) plus
documented extensions. Every field carries its unit and default in its description; unknown keys are
refused naming the key; :func:`load_scenario` turns every problem into a :class:`~tcocalc.errors.ScenarioError`
naming the dotted field (``workload.group_size``). TOML is parsed as data only (``tomllib``).
"""

from __future__ import annotations

import difflib
import math
import re
import stat
import sys
import tomllib
from pathlib import Path
from types import UnionType
from typing import Annotated, Any, Literal, Union, get_args, get_origin

from pydantic import BaseModel, ConfigDict, Field, StringConstraints, ValidationError, field_validator, model_validator

from .errors import ScenarioError, shown
from .modes import Mode, ModeTraits, traits

__all__ = ["Scenario", "load_scenario", "loads_scenario", "scenario_from_dict", "scenarios", "MAX_SCENARIO_BYTES",
           "MAX_NESTING_DEPTH", "MAX_PHASE_WORKLOADS", "plain_values"]

MAX_SCENARIO_BYTES = 200_000
"""Largest scenario accepted, in UTF-8 bytes (a file of exactly this size is read; one byte more is not).
A scenario is a few kB; :func:`load_scenario` refuses a larger file unread and :func:`loads_scenario`
larger text. The app's upload limit is the same figure."""

MAX_NESTING_DEPTH = 16
"""Most levels a key path may have: ``workload.solve_rate.never`` has 3, ``model.config.rope_scaling.factor``
4; every table, inline table and array adds one (array items count as a level). Scenarios need 4 or 5; the
limit stops pathological nesting before anything recurses on it (validation, :meth:`Scenario.to_toml`)."""

MAX_PHASE_WORKLOADS = 32
"""Most different phase workloads (``[[phases]]`` override sets) a scenario may have: each costs a full evaluation
of the model, of every candidate split when solving (0.1-0.2 s for an agentic GLM-5 phase on 2 cores), so
evaluate and solve_split stay within seconds (issue 40 item 7; benchmarks/run.py). Phases that repeat a workload
share its evaluation and do not count twice."""

Precision = Literal["bf16", "fp8", "fp4"]

Name = Annotated[str, StringConstraints(strip_whitespace=True, min_length=1)]
"""A string that must name something (a catalog entry, a phase, a price list): surrounding whitespace is stripped
and an empty or blank string is refused naming the field (issue 40 item 4); free text (descriptions, a
calibration's source) stays a plain ``str``."""


class _Section(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid", allow_inf_nan=False, validate_default=True, strict=True)


class ModelSection(_Section):
    """``[model]``: what is trained (a catalog name, or a label plus ``[model.config]``)."""

    name: Name = Field(description="catalog name (tc.model_table()), or a label when config is given")
    precision: Precision = Field("bf16", description="trainer precision (weights and GEMMs)")
    config: dict[str, Any] | None = Field(None, description="Hugging Face config.json for a model outside the catalog")


_MULTINODE_NVLINK = ("NCCL reaches the other servers of the accelerator's NVLink domain over NVLink (an NVL72 "
                     "rack's 4-GPU trays; multi-node NVLink needs an IMEX channel in the job); false: traffic "
                     "between servers takes the scale-out NICs (docs/rl-modeling.md §3.7)")


class MeasuredOn(_Section):
    """``[trainer.mfu_measured_on]``: where a measured ``trainer.mfu_busy`` was taken (docs/scenario-schema.md,
    "Prices and measurements follow the hardware")."""

    hardware: Name = Field(description="trainer accelerator of the measurement")
    model: Name = Field(description="model of the measurement")


class TrainerSection(_Section):
    """``[trainer]``: the training pool and its per-step passes."""

    hardware: Name = Field(description="accelerator name (tc.hardware_table())")
    gpus: int = Field(ge=1, le=1_000_000, description="trainer GPUs [GPU]")
    old_logprob_pass: bool | None = Field(None, description="recompute old-policy log-probs (one extra forward "
                                                            "pass); default: the framework preset")
    reference_model: bool | None = Field(None, description="KL to a reference model (one extra forward pass); "
                                                           "default: the framework preset")
    colocated_offload: bool | None = Field(None, description="colocated: optimizer state, gradients and weights go "
                                                             "to host memory and back every step (default: preset)")
    minibatches_per_step: int = Field(1, ge=1, le=100_000, description="optimizer updates per rollout step (g_mb); "
                                      "at most the step's samples (prompts_per_step x group_size)")
    mfu_busy: float | None = Field(None, ge=0.001, le=1, description="measured MFU while training, to use instead "
                                                                "of the roofline training model "
                                                                "(docs/rl-modeling.md §3.2)")
    mfu_measured_on: MeasuredOn | None = Field(None, description="the trainer hardware and model mfu_busy was "
                                               "measured on; it applies only there (default: the scenario's own; "
                                               "written by with_values / with_cluster when either changes)")
    mfu_carry: Literal["ratio", "model"] = Field("ratio", description="a measured mfu_busy on other trainer "
                                                 "hardware: 'ratio' carries its measured-over-modelled ratio to the "
                                                 "new chip's modelled MFU; 'model' uses the roofline training model "
                                                 "on every chip, the measured one too (like-for-like comparisons)")
    framework_overhead: float | None = Field(None, ge=1.0, le=10.0, description="the framework's trainer time over "
                                             "the roofline training model's, forward and backward (default: preset; "
                                             "NeMo RL 1.2)")
    tp: int | None = Field(None, ge=1, le=1024, description="pin the trainer layout: tensor-parallel degree "
                                                            "(with pp, ep, cp, vp; default: searched)")
    pp: int | None = Field(None, ge=1, le=1024, description="pinned pipeline-parallel stages")
    ep: int | None = Field(None, ge=1, le=4096, description="pinned expert-parallel degree")
    cp: int | None = Field(None, ge=1, le=1024, description="pinned context-parallel degree (long sequences)")
    vp: int | None = Field(None, ge=1, le=64, description="pinned virtual pipeline stages per GPU")
    sharding: Literal["megatron", "fsdp"] | None = Field(None, description="trainer state layout: Megatron "
                                                         "TP/PP/EP with the distributed optimizer, or FSDP / ZeRO-3 "
                                                         "full sharding over data parallelism (docs/rl-modeling.md "
                                                         "§3.9; default: preset)")
    recompute: Literal["none", "selective", "full"] | None = Field(None, description="activation recompute the "
                                                                   "framework runs whatever memory needs: 'full' "
                                                                   "recomputes each layer's forward in the backward "
                                                                   "pass (verl's enable_gradient_checkpointing, "
                                                                   "Megatron recompute_granularity full); default: "
                                                                   "the lightest mode that fits (docs/rl-modeling.md "
                                                                   "§3.11)")
    multinode_nvlink: bool = Field(True, description=_MULTINODE_NVLINK)
    minibatch_balance: Literal["balanced", "random"] = Field(
        "balanced", description="how an optimizer mini-batch's variable-length sequences fall on the data-parallel "
        "ranks: 'balanced' (equal token shares, the model's assumption) or 'random' (in arrival order, as verl "
        "before volcengine/verl PR 3605 of 2025-10-23: each optimizer step waits for the fullest rank, "
        "docs/rl-modeling.md §3.12)")

    @property
    def pinned_layout(self) -> bool:
        """Whether the scenario pins any trainer parallel degree."""
        return any(v is not None for v in (self.tp, self.pp, self.ep, self.cp, self.vp))


class GeneratorSection(_Section):
    """``[generator]``: the rollout pool (hardware may differ from the trainer's)."""

    hardware: Name = Field(description="accelerator name; may differ from the trainer's")
    gpus: int = Field(ge=1, le=1_000_000, description="generator GPUs [GPU] (colocated: equals trainer.gpus)")
    precision: Precision = Field("bf16", description="generator weights and GEMMs")
    kv_precision: Precision | None = Field(None, description="KV cache precision (default: bf16 whatever the "
                                                             "weights', as FP8 rollout recipes run; fp8 where the "
                                                             "framework preset's kv_cache_fp8 says; "
                                                             "docs/rl-modeling.md §4.11)")
    tp: int | None = Field(None, ge=1, le=64, description="pin the serving instance to this tensor-parallel "
                                                          "degree (default: the best instance is searched)")
    multinode_nvlink: bool = Field(True, description=_MULTINODE_NVLINK)
    expert_parallel: bool | None = Field(None, description="a pinned instance (generator.tp) of a mixture-of-experts "
                                         "model spreads whole experts over its GPUs (vLLM enable_expert_parallel); "
                                         "false shards every expert across the tensor-parallel group, vLLM's own "
                                         "default (default: experts spread, where they divide evenly)")
    kv_retention: Literal["lru", "pinned"] | None = Field(None, description="a multi-turn trajectory's KV while it "
                                                         "waits on a tool: 'lru' (the engine's prefix cache, "
                                                         "evicted under memory pressure, then re-prefilled) or "
                                                         "'pinned' (kept with its slot; at most the KV slots in "
                                                         "flight); docs/rl-modeling.md §4.12 (default: preset)")
    engine: Literal["vllm", "sglang"] | None = Field(None, description="inference engine (default: the "
                                                                       "framework preset's)")
    cuda_graphs: bool | None = Field(None, description="engine runs decode with CUDA graphs; false = eager "
                                                      "(default: preset)")
    max_num_seqs: int | None = Field(None, ge=1, le=1_000_000, description="most sequences one engine instance "
                                     "decodes at once (default: the engine's documented default)")
    max_num_batched_tokens: int | None = Field(None, ge=1, le=1_048_576, description="tokens one engine step "
                                               "takes in, the prefill chunk (vLLM max_num_batched_tokens, SGLang "
                                               "chunked_prefill_size; default: the engine's documented default)")
    kv_block_tokens: int | None = Field(None, ge=1, le=4096, description="tokens per KV-cache block, of which a "
                                        "trajectory holds whole blocks (vLLM block_size, SGLang page_size; default: "
                                        "the engine's documented default for the model's attention)")
    async_scheduling: bool | None = Field(None, description="the engine prepares step N+1 on the CPU while step N "
                                          "runs; false exposes its CPU work every step (default: preset)")
    bucketed_weight_load: bool | None = Field(None, description="weights reach the engine in large buckets; false "
                                              "costs a fixed time per checkpoint tensor (default: preset)")
    gpu_memory_utilization: float | None = Field(None, gt=0.05, le=1.0, description="share of GPU memory the engine "
                                                 "may use for weights, activations and KV cache (vLLM; default: "
                                                 "the calibrated KV budget)")
    disaggregated: bool = Field(False, description="prefill and decode run on separate pools of the generator's "
                                "GPUs joined by a KV transfer (docs/rl-modeling.md §4.9)")
    prefill_gpus: int | None = Field(None, ge=1, le=1_000_000, description="GPUs of the prefill pool, a multiple "
                                     "of its instance (disaggregated only; default: solved with the split)")
    speculative_tokens: int | None = Field(None, ge=1, le=16, description="speculative decoding: draft tokens "
                                           "per step, verified in one pass (DeepSeek-V3 MTP, EAGLE: 1; default: "
                                           "none)")
    acceptance_rate: float | None = Field(None, ge=0, le=1, description="probability a draft token is accepted "
                                          "(required with speculative_tokens; DeepSeek-V3's MTP: 0.85-0.90)")
    draft_layers: float = Field(1.0, gt=0, le=64, description="transformer layers of the draft module, of the "
                                "target's shape (MTP, EAGLE: 1)")

    @field_validator("prefill_gpus")
    @classmethod
    def _prefill_pool(cls, v, info):
        if v is None:
            return v
        if not info.data.get("disaggregated", False):
            raise ScenarioError("generator.prefill_gpus", "needs generator.disaggregated = true (a prefill pool exists "
                                                          "only in a disaggregated generator)")
        gpus = info.data.get("gpus")
        if gpus is not None and v >= gpus:
            raise ScenarioError("generator.prefill_gpus", f"{v} must leave decode GPUs out of generator.gpus ({gpus}); "
                                                          f"at most {gpus - 1}")
        return v

    @model_validator(mode="after")
    def _experts(self):
        if self.expert_parallel is not None and self.tp is None:
            raise ScenarioError("generator.expert_parallel", "applies to a pinned instance: give generator.tp too, "
                                                             "or leave expert_parallel out (the searched instance "
                                                             "chooses its own expert layout)")
        return self

    @model_validator(mode="after")
    def _speculation(self):
        if (self.speculative_tokens is None) != (self.acceptance_rate is None):
            missing = "generator.acceptance_rate" if self.acceptance_rate is None else "generator.speculative_tokens"
            raise ScenarioError(missing, "speculative_tokens and acceptance_rate go together: give both "
                                         "(DeepSeek-V3's MTP: 1 and 0.85-0.90) or neither")
        return self


class SolveRate(_Section):
    """``[workload.solve_rate]``: the per-prompt solve-rate mixture (docs/rl-modeling.md §2.2)."""

    never: float = Field(0.0, ge=0, le=1, description="share of prompts never solved (p = 0)")
    always: float = Field(0.0, ge=0, le=1, description="share of prompts always solved (p = 1)")
    beta_a: float = Field(1.0, gt=0, le=1e6, description="the rest have p ~ Beta(a, b)")
    beta_b: float = Field(1.0, gt=0, le=1e6, description="the rest have p ~ Beta(a, b)")

    @model_validator(mode="after")
    def _shares(self):
        if self.never + self.always > 1:
            raise ScenarioError("workload.solve_rate.always", f"never + always must not exceed 1 (never "
                                                               f"{self.never:g} + always {self.always:g})")
        return self


class Workload(_Section):
    """``[workload]``: prompts, groups, lengths (lognormal with a cap), turns and run length."""

    prompts_per_step: int = Field(ge=1, le=10_000_000, description="prompts per optimizer step")
    group_size: int = Field(ge=1, le=100_000, description="responses per prompt (G)")
    prompt_tokens: float = Field(gt=0, le=1e8, description="prompt tokens per trajectory incl. system/tools [token]")
    response_tokens_mean: float = Field(gt=0, le=1e8, description="mean model tokens per trajectory, all turns, "
                                                                  "before the cap (lognormal) [token]")
    response_tokens_p99: float | None = Field(None, gt=0, le=1e9, description="99th percentile [token]; sets sigma")
    response_tokens_sigma: float | None = Field(None, ge=0, le=5, description="lognormal sigma (instead of p99)")
    response_tokens_max: float | None = Field(None, gt=0, le=1e9, description="cap [token] (default: no cap)")
    turns: int = Field(1, ge=1, le=10_000, description="model turns per trajectory (tool calls = turns - 1)")
    observation_tokens_per_turn: float = Field(0.0, ge=0, le=1e8,
                                               description="tool output tokens per tool call [token]")
    prefix_caching: bool = Field(True, description="reuse the KV of earlier turns (else re-prefill every turn)")
    steps: int = Field(100, ge=1, le=100_000_000, description="optimizer steps in the whole run (default 100)")
    solve_rate: SolveRate = Field(default_factory=SolveRate)

    @model_validator(mode="after")
    def _tail(self):
        if self.response_tokens_p99 is not None and self.response_tokens_sigma is not None:
            raise ScenarioError("workload.response_tokens_sigma", "give workload.response_tokens_p99 or "
                                                                  "response_tokens_sigma, not both")
        if self.response_tokens_p99 is not None and self.response_tokens_p99 < self.response_tokens_mean:
            raise ScenarioError("workload.response_tokens_p99",
                                f"{self.response_tokens_p99:g} is below the mean (workload.response_tokens_mean "
                                f"{self.response_tokens_mean:g}); a lognormal's p99 exceeds its mean")
        if self.response_tokens_max is not None and self.response_tokens_max < 1:
            raise ScenarioError("workload.response_tokens_max", "must be at least 1 token")
        return self

    @property
    def samples_per_step(self) -> int:
        """Trajectories the trainer consumes per step: prompts x group size."""
        return self.prompts_per_step * self.group_size


class Orchestration(_Section):
    """``[orchestration]``: the mode and its staleness, oversampling and weight-sync rules."""

    mode: Mode = Field("async", description="colocated | sync | one_step_off | async | inflight | periodic "
                                 "(on-policy batch, trainer consumes rollouts as they finish; arXiv 2511.18871)")
    max_staleness: float = Field(1.0, ge=0, le=10_000, description="async/inflight: max policy-version lag [steps]; "
                                 "fractional values bound the share of stale samples (verl staleness_threshold)")
    oversampling: float = Field(0.0, ge=0, le=10, description="extra share of rollouts dispatched and dropped")
    partial_rollout: bool = Field(False, description="resume unfinished rollouts next step instead of dropping")
    sync_blocks_trainer: bool | None = Field(None, description="async modes: the trainer waits while it pushes "
                                             "weights (NCCL broadcast, slime/verl); false when the generator "
                                             "reloads a checkpoint on its own (Prime RL); default: preset")
    stream_minibatches: bool | None = Field(None, description="async modes: the trainer takes each optimizer "
                                            "mini-batch from the queue as soon as it is full (verl fully-async); "
                                            "with partial rollout the staleness bound only limits admission; "
                                            "default: preset")
    filter_zero_advantage: bool = Field(False, description="drop groups whose rewards are all equal and generate "
                                        "more (DAPO dynamic sampling); default false: plain GRPO trains every group")
    framework: Literal["generic", "nemo-rl", "verl-fsdp", "verl-megatron", "slime", "areal", "prime-rl"] = Field(
        "generic", description="framework preset: its defaults for CUDA graphs, offload, log-prob passes, weight "
                               "sync (data/frameworks.toml); any key given in the scenario overrides it")
    weight_sync: Literal["nccl-broadcast", "p2p", "disk", "host"] | None = Field(
        None, description="weight-sync transport: NCCL broadcast, per-GPU p2p (RDMA), a checkpoint on shared "
                          "storage reloaded by the engine, or pinned host memory (docs/rl-modeling.md §3.3, §3.8; "
                          "default: preset)")
    storage_write_gb_per_s: float | None = Field(None, gt=0, le=1e6, description="weight_sync = \"disk\": "
                                                 "aggregate write rate of the shared storage [GB/s] (default: "
                                                 "data/rl_calibration.toml)")
    storage_read_gb_per_s: float | None = Field(None, gt=0, le=1e6, description="weight_sync = \"disk\": "
                                                "aggregate read rate of the shared storage [GB/s] (default: "
                                                "data/rl_calibration.toml)")
    checkpoint_every_steps: int | None = Field(None, ge=1, le=100_000_000, description="the trainer saves a "
                                               "checkpoint (weights and optimizer state) every this many steps, "
                                               "its save time amortised over them (docs/rl-modeling.md §5.7; "
                                               "default: not charged)")
    step_fixed_s: float = Field(0.0, ge=0, le=1e6, description="other fixed per-step work on the trainer loop "
                                "(driver-side reward scoring, metrics, logging) [s] (docs/rl-modeling.md §5.7)")
    dispatch_s_per_sample: float | None = Field(None, ge=0, le=1.0, description="the controller's cost per "
                                                "dispatched sample and step [s] (default: preset)")
    max_rollouts_in_flight: int | None = Field(None, ge=1, le=100_000_000, description="framework cap on "
                                               "trajectories in flight over the whole generator (AReaL max "
                                               "concurrent rollouts); default: none")

    @property
    def traits(self) -> ModeTraits:
        """What the mode implies (:data:`tcocalc.modes.MODES`)."""
        return traits(self.mode)


class Sandbox(_Section):
    """``[sandbox]``: tool-call environments (times, CPU, concurrency and start limits, failures)."""

    tool_call_s: float = Field(0.0, ge=0, le=1e6, description="mean sandbox execution per tool call [s]")
    startup_s: float = Field(0.0, ge=0, le=1e6, description="cold start per sandbox [s]")
    cpu_cores: float = Field(1.0, ge=0, le=1e4, description="CPU cores per live sandbox")
    max_concurrency: int = Field(0, ge=0, le=100_000_000, description="cap on live sandboxes (0 = unlimited)")
    max_starting: int = Field(0, ge=0, le=100_000_000, description="cap on sandboxes starting at once (0 = unlimited)")
    max_executing: int = Field(0, ge=0, le=100_000_000,
                               description="cap on tool calls executing at once over the whole cluster, the sandbox "
                                           "service's workers (0 = unlimited); a call beyond it waits in a queue")
    failure_rate: float = Field(0.0, ge=0, lt=1, description="probability a sandbox start fails")
    retries: int = Field(2, ge=0, le=100, description="start retries before the rollout is lost")


class PricedFor(_Section):
    """``[economics.priced_for]``: the accelerator each pool's price was set for (docs/scenario-schema.md, "Prices
    and measurements follow the hardware")."""

    trainer: Name | None = Field(None, description="accelerator the trainer pool's price is for")
    generator: Name | None = Field(None, description="accelerator the generator pool's price is for")


class Economics(_Section):
    """``[economics]``: GPU and CPU prices (or cost-engine inputs) and the Tinker list to compare with."""

    usd_per_gpu_hour: float = Field(1.59, gt=0, le=1e5, description="all-in cost per GPU-hour [USD/h] "
                                                                  "(SemiAnalysis H200 TCO, unconfirmed)")
    trainer_usd_per_gpu_hour: float | None = Field(None, gt=0, le=1e5, description="override for the trainer pool")
    generator_usd_per_gpu_hour: float | None = Field(None, gt=0, le=1e5, description="override for the generator pool")
    usd_per_cpu_core_hour: float = Field(0.04, ge=0, le=1e4, description="sandbox CPU [USD/core-hour]")
    tinker_price_date: Name = Field("2026-01-05", description="Tinker price list to compare with")
    cost_inputs: dict[str, Any] | None = Field(None, strict=False, description="ownership-cost inputs "
                                               "(tc.CostInputs fields) overriding each pool's hardware defaults; "
                                               "when given, they set the $/GPU-hour instead of usd_per_gpu_hour")
    hardware_prices: dict[Name, float] | None = Field(None, description="your price per accelerator "
                                                     "[USD/GPU-h], e.g. {B200 = 3.2}: a pool on a listed "
                                                     "accelerator pays it (ahead of cost_inputs and "
                                                     "usd_per_gpu_hour; a pool's own price still wins)")
    priced_for: PricedFor | None = Field(None, description="the accelerators the GPU prices above were set for, per "
                                         "pool; a price applies only to its own hardware (default: the pools' "
                                         "hardware; written by with_values / with_cluster when a pool's hardware "
                                         "changes)")

    @field_validator("hardware_prices")
    @classmethod
    def _prices(cls, v):
        for name, price in (v or {}).items():
            if not (math.isfinite(price) and 0 < price <= 1e5):
                raise ScenarioError(f"economics.hardware_prices.{name}", f"must be a price in (0, 100000] "
                                                                         f"USD/GPU-h, got {price!r}")
        return v


REPORT_KEYS = ("binding_limits", "warnings", "discards", "pricing", "calibration", "trust",
               "smallest_total_gpus_99pct", "smallest_split_99pct")
"""The report fields that ``report.details`` (kept for compatibility) holds beside the phase names: no phase may be
called so."""


class Phase(_Section):
    """``[[phases]]``: a change of workload from ``start_step`` on (e.g. longer responses, more tool calls)."""

    name: Name = Field(description="what the phase is called (reports and the timeline name it)")
    start_step: int = Field(ge=0, le=100_000_000, description="first optimizer step of this phase")
    response_scale: float = Field(1.0, gt=0, le=1000, description="multiplies response mean and p99")
    turns: int | None = Field(None, ge=1, le=10_000)
    tool_call_s: float | None = Field(None, ge=0, le=1e6)
    always_solved: float | None = Field(None, ge=0, le=1, description="overrides workload.solve_rate.always")


class CalibratedRun(_Section):
    """``[calibration.run]``: the measured run a calibration was fitted on (canonical catalog names), which decides
    which factors carry over to another scenario (docs/calibration.md, "What transfers")."""

    model: Name = Field(description="model of the measured run (catalog name)")
    trainer_hardware: Name = Field(description="trainer accelerator of the measured run")
    trainer_precision: Precision = Field(description="trainer precision of the measured run")
    generator_hardware: Name = Field(description="generator accelerator of the measured run")
    generator_precision: Precision = Field(description="generator precision of the measured run")
    kv_precision: Precision = Field(description="KV-cache precision of the measured run")
    engine: Name = Field(description="inference engine of the measured run")
    framework: Name = Field(description="framework preset of the measured run")
    mode: Mode = Field(description="orchestration mode of the measured run")
    trainer_gpus: int = Field(ge=1, le=1_000_000, description="trainer GPUs of the measured run [GPU]")
    generator_gpus: int = Field(ge=1, le=1_000_000, description="generator GPUs of the measured run [GPU]")
    weight_sync: Name = Field(description="weight-sync transport of the measured run")
    response_tokens_mean: float | None = Field(None, gt=0, le=1e9, description="the mean response the measured "
                                               "run's scenario assumed [token]: what the responses factor corrects "
                                               "(a plan that assumes another is told so)")
    response_tokens_max: float | None = Field(None, gt=0, le=1e9, description="the response cap of the measured "
                                              "run's scenario [token] (none: uncapped)")


class CalibrationFactors(_Section):
    """``[calibration.factors]``: what a measured run says the model's stages take, as multipliers of the model's
    own stage times (1 = the uncalibrated model) and a fixed per-step cost (docs/calibration.md)."""

    generation: float = Field(1.0, gt=0, le=100, description="the generator's decode and prefill time x this [1]")
    tail: float = Field(1.0, gt=0, le=100, description="a synchronous batch's wait for its slowest trajectories "
                        "(its generation beyond the engine's throughput) x this [1]")
    training: float = Field(1.0, gt=0, le=100, description="the trainer's forward, backward and optimizer time x "
                                                          "this [1]")
    logprob: float = Field(1.0, gt=0, le=100, description="the old-policy and reference log-prob passes x this [1]")
    weight_sync: float = Field(1.0, gt=0, le=100, description="the weight push (colocated: the in-process refit) "
                                                             "x this [1]")
    switching: float = Field(1.0, gt=0, le=100, description="colocated: the pool's switch between trainer and "
                                                           "engine (sleep/wake, offload/onload) x this [1]")
    step_overhead_s: float = Field(0.0, ge=0, le=1e6, description="fixed per-step cost of the trainer loop that "
                                   "no stage holds (dispatch, data loading, rewards, logging) [s]")
    responses: float = Field(1.0, gt=0, le=100, description="the assumed response lengths (mean and p99) x this: "
                             "inferred from the measured run's times when its log gave no response length "
                             "(tc.calibrate; docs/calibration.md) [1]")


class CalibrationSection(_Section):
    """``[calibration]``: a calibration from a measured run (:func:`tcocalc.calibrate`), carried with the scenario
    and applied wherever it transfers (:meth:`Scenario.with_run_calibration`)."""

    source: str = Field("", max_length=2_000, description="what the calibration came from (a log file, steps)")
    date: str = Field("", max_length=40, description="when it was fitted (ISO date)")
    run: CalibratedRun | None = Field(None, description="the measured run's identity: [calibration.run] (required "
                                      "unless the table changes nothing: identity factors, nothing measured)")
    factors: CalibrationFactors = Field(default_factory=CalibrationFactors,
                                        description="the fitted factors: [calibration.factors]")
    measured: dict[str, float] = Field(default_factory=dict, strict=False, description="the measured run's "
                                       "steady-state figures the factors came from (keys of tc.calibrate)")
    fit: str = Field("", max_length=2_000, description="empty when the fitted model matched every measured stage "
                     "within its tolerance; otherwise why it does not hold (the stage and its residual, or the "
                     "factor that breaks the physics): the factors then do not apply and no plan is called "
                     "calibrated (tc.calibrate, docs/calibration.md)")

    @field_validator("measured")
    @classmethod
    def _finite(cls, v):
        for key, value in v.items():
            if isinstance(value, bool) or not math.isfinite(value) or value <= 0:
                raise ValueError(f"{key}: must be a finite number > 0, got {value!r}")
        return v

    @property
    def changes_nothing(self) -> bool:
        """Identity factors and nothing measured: the table says nothing a run calibration would apply."""
        return self.factors == CalibrationFactors() and not self.measured

    @model_validator(mode="after")
    def _run_given(self):
        """The measured run's identity decides which factors transfer (docs/calibration.md, "What transfers"): a
        table whose factors or measurements say something needs it; one written with every documented default
        (identity factors, nothing measured) is no calibration and is dropped by :class:`Scenario`."""
        if self.run is None and not self.changes_nothing:
            given = [f"calibration.factors.{k} = {v:g}" for k, v in self.factors.model_dump().items()
                     if v != CalibrationFactors.model_fields[k].default]
            given += ["calibration.measured"] if self.measured else []
            raise ScenarioError("calibration.run", f"missing: {', '.join(given)} came from a measured run, and "
                                f"[calibration.run] names it (model, trainer_hardware, trainer_precision, "
                                f"generator_hardware, generator_precision, kv_precision, engine, framework, mode, "
                                f"trainer_gpus, generator_gpus, weight_sync) so that the factors apply only where "
                                f"they transfer; tc.calibrate writes it (docs/calibration.md)")
        return self


class Scenario(_Section):
    """A validated RL post-training scenario (see the module docstring and scenarios/*.toml)."""

    name: Name = Field("scenario", max_length=200)
    description: str = Field("", max_length=10_000)
    model: ModelSection
    trainer: TrainerSection
    generator: GeneratorSection
    workload: Workload
    orchestration: Orchestration = Field(default_factory=Orchestration)
    sandbox: Sandbox = Field(default_factory=Sandbox)
    economics: Economics = Field(default_factory=Economics)
    phases: tuple[Phase, ...] = Field((), strict=False)  # TOML arrays arrive as lists
    calibration: CalibrationSection | None = Field(None, description="a calibration from a measured run "
                                                   "(tc.calibrate; docs/calibration.md); default: none")

    @field_validator("calibration")
    @classmethod
    def _calibration_says_something(cls, v):
        """A ``[calibration]`` table with every documented default and no ``run`` is no calibration (None)."""
        return None if v is not None and v.run is None else v

    @field_validator("phases")
    @classmethod
    def _phases_sorted(cls, v):
        for i, p in enumerate(v):  # report.details keeps phase names beside these keys (tcocalc.rl.results)
            if p.name in REPORT_KEYS:
                raise ScenarioError(f"phases.{i}.name", f"{p.name!r} is a key of report.details "
                                                        f"({', '.join(REPORT_KEYS)}); give the phase another name, "
                                                        f"e.g. {p.name + '_phase'!r}")
        starts = [p.start_step for p in v]
        for i in range(1, len(starts)):
            if starts[i] <= starts[i - 1]:
                raise ScenarioError(f"phases.{i}.start_step", f"{starts[i]:,} after {starts[i - 1]:,}: phases must "
                                                              f"have distinct start_step values in increasing order")
        workloads = {tuple(sorted(p.model_dump(exclude={"name", "start_step"}, exclude_none=True).items())) for p in v}
        if len(workloads) > MAX_PHASE_WORKLOADS:
            raise ScenarioError("phases", f"{len(workloads):,} different workloads (response_scale, turns, "
                                          f"tool_call_s, always_solved); at most {MAX_PHASE_WORKLOADS}: each is a "
                                          f"full evaluation of the model (of every split when solving), and more "
                                          f"would not answer within seconds; merge phases whose overrides nearly "
                                          f"agree (phases that repeat a workload cost nothing more)")
        return v

    @model_validator(mode="after")
    def _check(self):
        shared = self.orchestration.traits.shared_pool
        if shared and self.generator.gpus != self.trainer.gpus:
            raise ScenarioError("generator.gpus", f"colocated: generator.gpus ({self.generator.gpus:,}) must equal "
                                                  f"trainer.gpus ({self.trainer.gpus:,}) (one shared pool)")
        if shared and self.generator.hardware != self.trainer.hardware:
            raise ScenarioError("generator.hardware", "colocated: generator.hardware must equal trainer.hardware (one "
                                                      "shared pool)")
        if shared and self.generator.disaggregated:
            raise ScenarioError("generator.disaggregated", "colocated: generator.disaggregated needs separate "
                                                           "generator GPUs; use another mode or disaggregated = false")
        if self.phases and self.phases[0].start_step >= self.workload.steps:
            raise ScenarioError("phases.0.start_step", f"the first phase starts at step {self.phases[0].start_step:,}, "
                                                       f"after the run's last (workload.steps = "
                                                       f"{self.workload.steps:,})")
        samples = self.workload.prompts_per_step * self.workload.group_size
        if self.trainer.minibatches_per_step > samples:
            raise ScenarioError("trainer.minibatches_per_step",
                                f"{self.trainer.minibatches_per_step:,} optimizer updates per step exceed the "
                                f"{samples:,} samples a step trains (workload.prompts_per_step x group_size); "
                                f"at most {samples:,}")
        return self

    def with_split(self, trainer_gpus: int, generator_gpus: int) -> Scenario:
        """A copy with another trainer/generator split, validated as a whole (a colocated scenario must keep
        one pool: ScenarioError naming the field otherwise). Whole numbers only: ``with_split(16, 48)`` and
        ``with_split(np.int64(16), 48)`` are the same; ``with_split(16.5, 48)`` is a ScenarioError naming
        ``trainer.gpus`` (never silently truncated)."""
        return self.with_values({"trainer.gpus": _whole(trainer_gpus, "trainer.gpus"),
                                 "generator.gpus": _whole(generator_gpus, "generator.gpus")})

    @classmethod
    def choices(cls, path: str) -> tuple[str, ...]:
        """The values a field with a fixed set of choices accepts, in the schema's order, by dotted path:
        ``Scenario.choices("orchestration.mode")`` is ``("colocated", "sync", "one_step_off", "async",
        "inflight", "periodic")``. Raises :class:`ScenarioError` for an unknown path or a field without fixed
        choices."""
        model: Any = cls
        annotation: Any = None
        for key in str(path).split("."):
            fields = getattr(model, "model_fields", None)
            if fields is None or key not in fields:
                raise ScenarioError(str(path), "unknown key (check the spelling; see the documented schema)")
            annotation = model = fields[key].annotation
        values: list[str] = []
        pending = [annotation]
        while pending:
            t = pending.pop(0)
            if get_origin(t) is Literal:
                values.extend(get_args(t))
            elif get_origin(t) in (Union, UnionType):
                pending[:0] = [a for a in get_args(t) if a is not type(None)]
        if not values:
            raise ScenarioError(str(path), "has no fixed set of choices")
        return tuple(values)

    @classmethod
    def field_bounds(cls, path: str) -> tuple[float | None, float | None, bool, bool]:
        """The numeric limits of a field by dotted path, from its validation rule (the one source the app's widgets
        and URL check take theirs from): ``(low, high, low_inclusive, high_inclusive)``, ``None`` where a side has
        no limit. ``Scenario.field_bounds("trainer.gpus")`` is ``(1, 1000000, True, True)``,
        ``"workload.prompt_tokens"`` ``(0, 1e8, False, True)``. Raises :class:`ScenarioError` for an unknown path
        or a field that is not a number."""
        model: Any = cls
        info = None
        for key in str(path).split("."):
            fields = getattr(model, "model_fields", None)
            if fields is None or key not in fields:
                raise ScenarioError(str(path), "unknown key (check the spelling; see the documented schema)")
            info = fields[key]
            model = info.annotation
        kinds = {a for a in (get_args(info.annotation) or (info.annotation,)) if a is not type(None)}
        if not kinds or not kinds <= {int, float}:
            raise ScenarioError(str(path), "is not a number")
        low = high = None
        low_in = high_in = True
        for rule in info.metadata:
            for attr, inclusive, is_low in (("ge", True, True), ("gt", False, True), ("le", True, False),
                                            ("lt", False, False)):
                if getattr(rule, attr, None) is not None:
                    if is_low:
                        low, low_in = getattr(rule, attr), inclusive
                    else:
                        high, high_in = getattr(rule, attr), inclusive
        return low, high, low_in, high_in

    @classmethod
    def field_unit(cls, path: str) -> str | None:
        """The unit of a field by dotted path, from its documented description (the ``[...]`` in it):
        ``Scenario.field_unit("trainer.gpus")`` is ``"GPU"``, ``"workload.prompt_tokens"`` ``"token"``; None for
        a field without a unit (a count of prompts, a name, a flag), inside a free-form table
        (``model.config``) or a path that is not a field. ``phases.0.tool_call_s`` reads ``[[phases]]``'s field."""
        model: Any = cls
        info = None
        for key in str(path).split("."):
            if key.isdigit() and info is not None and model is cls.model_fields["phases"].annotation:
                model = Phase
                continue
            fields = getattr(model, "model_fields", None)
            if fields is None or key not in fields:
                return None
            info = fields[key]
            model = info.annotation
        found = re.search(r"\[([^\]\s][^\]]*)\]", (info.description or "") if info else "")
        return found.group(1) if found else None

    def _repr_html_(self) -> str:
        """The scenario as a notebook card: model, pools, mode, workload and price, each with its unit."""
        from .display import card, format_value

        t, g, w, o = self.trainer, self.generator, self.workload, self.orchestration
        colocated = o.traits.shared_pool
        rows = [("model", f"{self.model.name} ({self.model.precision})", ""),
                ("trainer", f"{t.gpus:,} x {t.hardware}", "GPU"),
                ("generator", "the trainer's pool (colocated)" if colocated else
                 f"{g.gpus:,} x {g.hardware} ({g.precision})", "" if colocated else "GPU"),
                ("mode", o.mode + (f", max_staleness {format_value(o.max_staleness)}" if o.traits.streaming
                                   else ""), ""),
                ("samples per step", f"{w.prompts_per_step:,} prompts x {w.group_size:,}", "sample"),
                ("prompt", format_value(w.prompt_tokens), "token"),
                ("response mean", format_value(w.response_tokens_mean), "token"),
                ("turns", format_value(w.turns), ""),
                ("steps", format_value(w.steps), "step"),
                ("GPU price", format_value(self.economics.usd_per_gpu_hour) + _price_note(self.economics),
                 "USD/GPU-h")]
        if w.response_tokens_p99 is not None:
            rows.insert(7, ("response p99", format_value(w.response_tokens_p99), "token"))
        if self.phases:
            rows.append(("phases", ", ".join(f"{p.name} from step {p.start_step:,}" for p in self.phases), ""))
        return card(f"Scenario {self.name}", rows, subtitle=self.description)

    def with_values(self, values: dict[str, Any]) -> Scenario:
        """A copy with fields replaced by dotted path, e.g. ``{"workload.group_size": 16}``; ``None`` removes
        a field (it takes its default). The result is validated as a whole, like a loaded TOML file: a bad
        value, an unknown path or a combination the scenario refuses raises :class:`ScenarioError` naming
        the field.

        Fields that follow a rule have their own methods: :meth:`with_response_mean` (the response
        distribution keeps its shape) and :meth:`with_cluster` (a colocated run keeps one pool). Prices and a
        measured MFU follow the hardware: an edit that moves a pool to other hardware records the hardware its price
        was set for (``economics.priced_for``) and, for the trainer or the model, where ``trainer.mfu_busy`` was
        measured (``trainer.mfu_measured_on``), so neither is taken for the new chip; a price or MFU set in the same
        edit is for the new hardware (docs/scenario-schema.md, "Prices and measurements follow the hardware").
        NumPy scalars are accepted wherever numbers go (:func:`plain_values`).

        Example::

            scn = tc.load_scenario("default")
            cheaper = scn.with_values({"economics.usd_per_gpu_hour": 1.5, "workload.group_size": 8})
            cheaper.economics.usd_per_gpu_hour        # 1.5; every other field as in scn
            scn.with_values({"trainer.gpus": 0})      # ScenarioError: trainer.gpus: Input should be greater
                                                      # than or equal to 1
        """
        if not isinstance(values, dict):
            raise ScenarioError("values", f"expected a dict of dotted path -> value, got {type(values).__name__}")
        data = self.to_dict()
        for path, value in values.items():
            *parents, leaf = str(path).split(".")
            node = data
            for i, key in enumerate(parents):
                node = node.setdefault(key, {})
                if not isinstance(node, dict):
                    raise ScenarioError(".".join(parents[:i + 1]), "is a value, not a table of fields")
            if value is None:
                node.pop(leaf, None)
            else:
                node[leaf] = plain_values(value)
        _follow_hardware(self, data, {str(p) for p in values})
        return _validated(data)  # to_dict() holds Python values only: no need to walk it for NumPy scalars

    def with_run_calibration(self, calibration) -> Scenario:
        """A copy carrying a calibration from a measured run (``[calibration]``): a
        :class:`~tcocalc.studies.calibrate.RunCalibration` (what :func:`tcocalc.calibrate` returns), its
        :class:`CalibrationSection`, the same as a dict, or ``None`` to remove it. Its factors apply wherever the
        scenario's stack matches the measured run's (docs/calibration.md, "What transfers"); the report says which
        were dropped. Re-validated (:class:`ScenarioError` naming the field)."""
        if calibration is None:
            return self.with_values({"calibration": None})
        section = calibration.section() if hasattr(calibration, "section") else calibration
        if isinstance(section, CalibrationSection):
            section = section.model_dump(mode="python")
        if not isinstance(section, dict):
            raise ScenarioError("calibration", f"expected a RunCalibration, a CalibrationSection or a table, got "
                                               f"{type(calibration).__name__}")
        return self.with_values({"calibration": section})

    def with_response_mean(self, mean: float) -> Scenario:
        """A copy whose mean response length is ``mean`` [token], the length distribution keeping its shape.

        The p99 (``workload.response_tokens_p99``), when given, scales by the same factor
        ``mean / response_tokens_mean``, so p99/mean and hence the lognormal's sigma are unchanged; a
        given sigma stays as it is. The cap (``response_tokens_max``) is a limit, not part of the shape,
        and stays where it is. This is the rule a ``[[phases]]`` entry's ``response_scale`` applies
        (``tcocalc.rl.phases.workload_stats``, ``tcocalc.rl.phases.phase_scenario``). Re-validated:
        a mean that is not a positive finite number raises :class:`ScenarioError` naming
        ``workload.response_tokens_mean``.
        """
        w = self.workload
        values: dict[str, Any] = {"workload.response_tokens_mean": mean}
        if w.response_tokens_p99 is not None and isinstance(mean, int | float) and not isinstance(mean, bool):
            # mean x (p99 / mean): the ratio is >= 1, so rounding never puts the new p99 below the new mean
            values["workload.response_tokens_p99"] = mean * (w.response_tokens_p99 / w.response_tokens_mean)
        return self.with_values(values)

    def with_cluster(self, *, mode: Mode | None = None, trainer_hardware: str | None = None,
                     trainer_gpus: int | None = None, generator_hardware: str | None = None,
                     generator_gpus: int | None = None) -> Scenario:
        """A copy with another orchestration mode and/or pools (``None`` keeps the current value).

        A colocated run has one pool that both trains and generates: in colocated mode (the one given,
        else the scenario's) the generator pool is the trainer's, hardware and GPUs, so
        ``generator_hardware`` and ``generator_gpus`` are not used. A pool moved to other hardware is no longer
        priced at the scenario's price (it was set for the old chip) nor trained at a measured MFU taken on the old
        chip (:meth:`with_values`). Re-validated (:class:`ScenarioError` naming the field).

        Example::

            scn = tc.load_scenario("default")                         # async, 8 + 8 H100
            scn.with_cluster(mode="colocated", trainer_gpus=16)      # one pool of 16 H100 (generator = trainer)
            scn.with_cluster(generator_hardware="H200", generator_gpus=24)   # async, 8 H100 + 24 H200
        """
        mode = self.orchestration.mode if mode is None else mode
        t_hw = self.trainer.hardware if trainer_hardware is None else trainer_hardware
        t_n = self.trainer.gpus if trainer_gpus is None else trainer_gpus
        if traits(mode).shared_pool:
            g_hw, g_n = t_hw, t_n
        else:
            g_hw = self.generator.hardware if generator_hardware is None else generator_hardware
            g_n = self.generator.gpus if generator_gpus is None else generator_gpus
        return self.with_values({"orchestration.mode": mode, "trainer.hardware": t_hw, "trainer.gpus": t_n,
                                 "generator.hardware": g_hw, "generator.gpus": g_n})

    def to_dict(self) -> dict:
        """Plain data (no None values), the TOML layout."""
        return _strip_none(self.model_dump(mode="python"))

    def to_toml(self, path: str | Path | None = None) -> str:
        """The scenario as TOML text (written to ``path`` when given); :func:`load_scenario` reads it back."""
        import tomli_w

        data = self.to_dict()
        phases = data.pop("phases", [])
        if phases:
            data["phases"] = phases
        text = tomli_w.dumps(data)
        if path is not None:
            Path(path).write_text(text)
        return text


def _follow_hardware(old: Scenario, data: dict, paths: set[str]) -> None:
    """Keep a price and a measured MFU with the hardware they were set for (docs/scenario-schema.md, "Prices and
    measurements follow the hardware"), in ``data``, the edited copy of ``old`` by ``paths``.

    A pool whose hardware the edit changes gets ``economics.priced_for.<pool>`` = its old hardware (unless the
    edit writes ``priced_for`` itself, or already had one), so its old price is not taken for the new chip; an
    edit that sets a pool's price (``economics.<pool>_usd_per_gpu_hour``, or ``economics.usd_per_gpu_hour`` for a
    pool without its own price, or the whole ``economics`` table) sets it for the pool's hardware after the edit.
    ``trainer.mfu_measured_on`` likewise keeps the trainer hardware and model a measured ``trainer.mfu_busy``
    was taken on. An entry equal to the current value says nothing and is dropped."""
    def sets(field: str) -> bool:  # the edit writes this field: by its path or a table above it
        return any(field == p or field.startswith(p + ".") for p in paths)

    def near(field: str) -> bool:  # the edit writes this field, a table above it or an entry in it
        return sets(field) or any(p.startswith(field + ".") for p in paths)

    econ, trainer = data.get("economics", {}), data.get("trainer", {})
    if not all(isinstance(x, dict) for x in (econ, trainer, data.get("generator", {}), data.get("model", {}))):
        return  # a section replaced by a value: validation names it
    if not near("economics.priced_for"):
        priced = dict(econ.get("priced_for") or {})
        for side in ("trainer", "generator"):
            hw = data.get(side, {}).get("hardware")
            own = econ.get(f"{side}_usd_per_gpu_hour") is not None
            if sets(f"economics.{side}_usd_per_gpu_hour" if own else "economics.usd_per_gpu_hour"):
                priced.pop(side, None)  # a price set now is for the hardware after the edit
            elif hw != getattr(old, side).hardware and side not in priced:
                priced[side] = getattr(old, side).hardware
            if priced.get(side) == hw:
                priced.pop(side)
        if priced:
            data["economics"] = {**econ, "priced_for": priced}
        else:
            econ.pop("priced_for", None)
    if trainer.get("mfu_busy") is None or sets("trainer.mfu_busy"):
        if not near("trainer.mfu_measured_on"):
            trainer.pop("mfu_measured_on", None)  # no measurement, or one given now: for the scenario as edited
        return
    if near("trainer.mfu_measured_on"):
        return
    now = {"hardware": trainer.get("hardware"), "model": data.get("model", {}).get("name")}
    taken = trainer.get("mfu_measured_on") or {"hardware": old.trainer.hardware, "model": old.model.name}
    if taken == now:
        trainer.pop("mfu_measured_on", None)
    else:
        trainer["mfu_measured_on"] = taken


def _price_note(econ: Economics) -> str:
    """What overrides ``usd_per_gpu_hour`` in a scenario card: cost inputs, or a pool's own price."""
    if econ.cost_inputs:
        return " (cost_inputs given: the TCO engine sets it)"
    own = [f"{side} {v:.4g}" for side, v in (("trainer", econ.trainer_usd_per_gpu_hour),
                                             ("generator", econ.generator_usd_per_gpu_hour)) if v]
    note = f" ({' and '.join(own)} {'overrides' if len(own) == 1 else 'override'} it)" if own else ""
    if econ.priced_for is not None:
        was = ", ".join(f"{side} {hw}" for side, hw in econ.priced_for.model_dump(exclude_none=True).items())
        note += f" (set for {was}: a pool on other hardware pays its ownership cost)"
    return note


def _whole(value: Any, field: str) -> Any:
    """A GPU count as a whole number: integral floats and NumPy integers become ``int``; anything else goes to
    validation unchanged, which names ``field`` (a fractional count is refused, never truncated)."""
    value = plain_values(value)
    if isinstance(value, float) and value.is_integer():
        return int(value)
    return value


def _strip_none(obj):
    if isinstance(obj, dict):
        return {k: _strip_none(v) for k, v in obj.items() if v is not None and not (k == "phases" and not v)}
    if isinstance(obj, list | tuple):
        return [_strip_none(v) for v in obj]
    return obj


def _field_path(loc: tuple) -> str:
    return ".".join(str(p) for p in loc if not isinstance(p, int) or True)


def scenario_from_dict(data: Any) -> Scenario:
    """Validate plain data (a parsed TOML document) into a :class:`Scenario`.

    NumPy scalars are taken as the Python values they hold (:func:`plain_values`): ``np.int64(64)`` is the
    whole number 64, ``np.float64(1.5)`` the number 1.5, ``np.bool_(True)`` the boolean ``True``. Validation
    is as strict for them as for Python values: a boolean is never a number, a float never a whole number.

    Raises :class:`ScenarioError` naming the offending field, e.g. ``workload.group_size`` (every fault found at
    once in ``problems``, the first as ``field``), or the first key path nested deeper than
    :data:`MAX_NESTING_DEPTH`.
    """
    if not isinstance(data, dict):
        raise ScenarioError("", "a scenario must be a table of sections ([model], [trainer], ...)")
    _check_depth(data)
    return _validated(plain_values(data))


def _validated(data: dict) -> Scenario:
    """:func:`scenario_from_dict` of data holding no NumPy scalars. Every fault validation finds is named
    (:attr:`ScenarioError.problems`), not only the first."""
    _check_depth(data)
    try:
        return Scenario.model_validate(data)
    except ValidationError as exc:
        problems = list(dict.fromkeys(_problem(err) for err in exc.errors()))
        field, message = problems[0]
        raise ScenarioError(field, message, problems=tuple(problems)) from None


_TOGETHER = {
    "calibration.run": ": the transfer rule compares each key of the measured run with this scenario's to decide "
                       "which factors carry over, so a [calibration.run] table gives them all (docs/calibration.md, "
                       "\"What transfers\")",
    "trainer.mfu_measured_on": ": a measured trainer.mfu_busy applies only on the hardware and model it was taken on, "
                               "so [trainer.mfu_measured_on] gives both",
}
"""Nested tables whose keys are required together, and why (a missing key's message says it)."""


def _problem(err: dict) -> tuple[str, str]:
    """One pydantic error as (dotted field, message)."""
    loc = ".".join(str(p) for p in err["loc"])
    if err["type"] == "extra_forbidden":
        return loc, "unknown key (check the spelling; see the documented schema)"
    if err["type"] == "missing":
        why = next((w for table, w in _TOGETHER.items() if loc.startswith(table + ".")), "")
        return loc, f"missing (required{why})"
    if err["type"] == "string_too_short" and isinstance(err.get("input"), str) and not err["input"].strip():
        return loc, "must name something; an empty or blank string names nothing"
    inner = (err.get("ctx") or {}).get("error")
    if isinstance(inner, ScenarioError):  # a cross-section check that names its own field
        return inner.field, inner.message
    msg = err["msg"].removeprefix("Value error, ")
    if err["type"] in ("finite_number",) or (isinstance(err.get("input"), float) and not
                                             math.isfinite(err["input"])):
        msg = "must be a finite number"
    return loc or "scenario", msg


def plain_values(obj: Any) -> Any:
    """``obj`` with every NumPy scalar (``np.int64``, ``np.float64``, ``np.bool_``, ``np.str_``, a 0-d array)
    replaced by the Python value it holds (``.item()``), through dicts, lists and tuples; anything else as it is.

    Notebook values often come out of numpy or pandas (``np.linspace``, a DataFrame cell); the scenario model is
    strict (a bool is never a number), so they are converted here, at the root, and then validated like any
    Python value: ``np.bool_(True)`` becomes ``True`` and is still refused where a number goes. NumPy is not
    imported for this: values from it exist only once it has been imported by someone else."""
    np = sys.modules.get("numpy")
    if np is None:
        return obj
    return _plain(obj, np)


def _plain(obj: Any, np) -> Any:
    if isinstance(obj, dict):
        return {k: _plain(v, np) for k, v in obj.items()}
    if isinstance(obj, list | tuple):
        return type(obj)(_plain(v, np) for v in obj)
    if isinstance(obj, np.generic) or (isinstance(obj, np.ndarray) and obj.ndim == 0):
        return obj.item()
    return obj


def _check_depth(data: dict) -> None:
    """Refuse any key path longer than :data:`MAX_NESTING_DEPTH`, naming the first one (document order):
    a table or array at the deepest level allowed may hold nothing.

    Iterative, so that no depth of input can make it recurse; it stops at the limit, so a cyclic
    structure (possible in Python data, not in TOML) is refused too.
    """
    stack: list[tuple[Any, tuple]] = [(data, ())]
    while stack:
        node, path = stack.pop()
        children = list(node.items() if isinstance(node, dict) else enumerate(node))
        if children and len(path) >= MAX_NESTING_DEPTH:
            deeper = ".".join(str(p) for p in (*path, children[0][0]))
            raise ScenarioError(deeper, f"nested deeper than {MAX_NESTING_DEPTH} levels (every table, inline "
                                        "table and array adds one); a scenario needs far fewer")
        stack.extend((value, (*path, key)) for key, value in reversed(children)
                     if isinstance(value, dict | list | tuple))


def _too_large(source: str, size: int, *, at_least: bool = False) -> ScenarioError:
    return ScenarioError("path", f"{source} is {'at least ' if at_least else ''}{size:,} bytes; a scenario must be "
                                 f"{MAX_SCENARIO_BYTES:,} bytes or under (tcocalc.scenario.MAX_SCENARIO_BYTES)")


def load_scenario(path: str | Path) -> Scenario:
    """Read a scenario TOML file, a tcocalc workbook's inputs sheet (``.xlsx``, a plan edited in Excel), or a
    shipped scenario by name.

    ``path`` is a file, or the name of a shipped scenario (:func:`scenarios` lists them): a string without a
    path separator and without the ``.toml`` suffix that is not an existing file, e.g. ``"default"``, reads
    the packaged ``scenarios/default.toml`` (in a checkout and from an installed wheel alike). An unknown name
    is a :class:`ScenarioError` listing the closest shipped names.

    Every problem (missing file, size, bad TOML, bad values) is a :class:`ScenarioError` naming the file or
    field. Files over :data:`MAX_SCENARIO_BYTES` are refused unread; at most that many bytes (plus one) are
    ever read, even from a device such as /dev/zero."""
    if _is_scenario_name(path):
        return _load_shipped(str(path))
    p = Path(path)
    if p.suffix.lower() in (".xlsx", ".xlsm"):  # a tcocalc workbook's inputs sheet, validated as a TOML is
        from .workbook import read_inputs

        data, rows = read_inputs(p)
        try:
            return scenario_from_dict(data)
        except ScenarioError as exc:  # the field, and the sheet's row it is on
            at = f" (inputs sheet, row {rows[exc.field]})" if exc.field in rows else " (inputs sheet)"
            raise ScenarioError(exc.field, f"{exc.message}{at}", problems=exc.problems) from None
    try:
        info = p.stat()
        if stat.S_ISFIFO(info.st_mode):  # opening a pipe blocks until a writer comes: wait a bounded time
            raw = _read_pipe(p)
        else:
            if info.st_size > MAX_SCENARIO_BYTES:
                raise _too_large(p.name, info.st_size)
            with p.open("rb") as f:
                raw = f.read(MAX_SCENARIO_BYTES + 1)
    except OSError as exc:
        raise ScenarioError("path", f"cannot read {shown(str(path))!r}: {exc.strerror or exc}") from None
    if len(raw) > MAX_SCENARIO_BYTES:  # grew since stat, or a device reporting size 0
        raise _too_large(p.name, len(raw), at_least=True)
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise ScenarioError("path", f"cannot read {p.name} as UTF-8 text: {exc}") from None
    return loads_scenario(text, source=p.name)


PIPE_WAIT_S = 10.0
"""How long :func:`load_scenario` waits for a named pipe (FIFO) to deliver a scenario before it gives up [s]: a path
such as ``<(cat file)`` is written at once; a FIFO nobody writes to used to hang the command line silently."""


def _read_pipe(p: Path) -> bytes:
    """At most ``MAX_SCENARIO_BYTES + 1`` bytes of a named pipe, opened without blocking; ScenarioError naming
    ``path`` when nothing arrives within :data:`PIPE_WAIT_S` (no writer, or a writer that sends nothing)."""
    import os
    import select
    import time

    fd = os.open(p, os.O_RDONLY | os.O_NONBLOCK)
    try:
        poll, chunks, size = select.poll(), [], 0
        poll.register(fd, select.POLLIN)
        deadline = time.monotonic() + PIPE_WAIT_S
        while size <= MAX_SCENARIO_BYTES:
            left = deadline - time.monotonic()
            if left <= 0 or not poll.poll(left * 1000):
                if not chunks:
                    raise ScenarioError("path", f"{p.name} is a named pipe (FIFO) and nothing was written to it in "
                                                f"{PIPE_WAIT_S:g} s; give a file, or - to read standard input")
                break  # a writer that stalls: what arrived is the file
            try:
                chunk = os.read(fd, MAX_SCENARIO_BYTES + 1 - size)
            except BlockingIOError:
                continue
            if not chunk:  # the writer closed its end
                if chunks:
                    break
                time.sleep(0.01)  # no writer yet (a closed pipe reads as empty): keep waiting for one
                continue
            chunks.append(chunk)
            size += len(chunk)
        return b"".join(chunks)
    finally:
        os.close(fd)


def _is_scenario_name(path: str | Path) -> bool:
    """A shipped scenario's name rather than a file: a plain string, no separator, no .toml, not a file."""
    if not isinstance(path, str) or not path or path.endswith(".toml") or "/" in path or "\\" in path:
        return False
    return not Path(path).is_file()


def _shipped_files() -> dict:
    """Shipped scenario files by name (file stem), ``default`` first, then alphabetical."""
    from ._data import scenarios_dir

    files = [f for f in scenarios_dir().iterdir() if f.name.endswith(".toml")]
    files.sort(key=lambda f: (f.name != "default.toml", f.name))
    return {f.name.removesuffix(".toml"): f for f in files}


def _load_shipped(name: str) -> Scenario:
    files = _shipped_files()
    if name not in files:
        close = difflib.get_close_matches(name, list(files), n=3, cutoff=0.5)
        hint = f"; did you mean {', '.join(repr(c) for c in close)}?" if close else ""
        raise ScenarioError("path", f"{name!r} is neither a file nor a shipped scenario{hint} (shipped: "
                                    f"{', '.join(files)}; tc.scenarios() describes them)")
    return loads_scenario(files[name].read_text(encoding="utf-8"), source=f"{name}.toml")


def scenarios() -> dict[str, str]:
    """The shipped scenarios: name -> description (``default`` first, then alphabetical).

    Each name loads with ``tc.load_scenario(name)`` (and runs with ``tcocalc run NAME``); the description is
    the file's own ``description`` (read from the TOML, not validated here)."""
    out = {}
    for name, f in _shipped_files().items():
        try:
            out[name] = str(tomllib.loads(f.read_text(encoding="utf-8")).get("description", ""))
        except tomllib.TOMLDecodeError:  # pragma: no cover - shipped files are checked by the test suite
            out[name] = ""
    return out


def loads_scenario(text: str, *, source: str = "<text>") -> Scenario:
    """Parse scenario TOML text (as :func:`load_scenario`): at most :data:`MAX_SCENARIO_BYTES` in UTF-8,
    key paths at most :data:`MAX_NESTING_DEPTH` levels deep."""
    if len(text) > MAX_SCENARIO_BYTES:  # every character is at least one byte: no need to encode it all
        raise _too_large(source, len(text), at_least=True)
    size = len(text.encode("utf-8", "surrogatepass"))
    if size > MAX_SCENARIO_BYTES:
        raise _too_large(source, size)
    if not text.strip():
        raise ScenarioError("toml", f"{source} is empty: a scenario needs at least [model], [trainer], [generator] and "
                                    f"[workload] (tc.scenarios() lists shipped examples)")
    try:
        data = tomllib.loads(text.removeprefix("\ufeff"))  # a byte-order mark, as Windows editors write
    except tomllib.TOMLDecodeError as exc:
        at = re.search(r"at line (\d+)", str(exc))
        last = len(text.rstrip("\r\n").splitlines())
        if "end of document" in str(exc) or (_cut_off(text) and at is not None and int(at.group(1)) >= last):
            raise _truncated(text, source, str(exc), "is not valid TOML and looks truncated") from None
        raise ScenarioError("toml", f"{source} is not valid TOML: {exc}") from None
    except RecursionError:  # tomllib recurses once per array / inline-table level: far past the limit
        raise ScenarioError("toml", f"{source} nests arrays or inline tables far deeper than the limit of "
                                    f"{MAX_NESTING_DEPTH} levels") from None
    except ValueError as exc:  # e.g. int() refusing a number of more than 4,300 digits
        raise ScenarioError("toml", f"{source} holds a value that cannot be read: "
                                    f"{str(exc).split(':')[0][:200]}") from None
    try:
        return scenario_from_dict(data)
    except ScenarioError as exc:
        if _cut_off(text):  # what is missing or wrong is most likely what the cut took away
            raise _truncated(text, source, str(exc)) from None
        if all(key not in data for key in _REQUIRED_TABLES):
            tables = ", ".join(f"[{t}]" for t in _REQUIRED_TABLES)
            raise ScenarioError("toml", f"{source} holds none of the tables a scenario needs ({tables}): it was cut "
                                        f"off before them, or it is not a scenario (tc.scenarios() lists shipped "
                                        f"examples)") from None
        raise


_REQUIRED_TABLES = ("model", "trainer", "generator", "workload")


def _cut_off(text: str) -> bool:
    """Whether ``text`` ends inside its last line: every editor and :meth:`Scenario.to_toml` end a file with a
    newline; a file cut short (a partial copy or download, a size limit) ends wherever the cut fell."""
    return bool(text) and not text.endswith(("\n", "\r"))


def _truncated(text: str, source: str, problem: str, what: str = "looks truncated") -> ScenarioError:
    """A ScenarioError (field ``toml``) saying the file looks cut off, where it ends (the last table and line) and
    what that left wrong (``problem``)."""
    lines = text.rstrip("\r\n").splitlines() or [""]
    tables = [m.group(1).strip() for m in re.finditer(r"^[ \t]*\[\[?([^\]\n]*)\]", text, re.MULTILINE)]
    inside = f"inside [{shown(tables[-1], 60)}]" if tables else "before its first table"
    return ScenarioError("toml", f"{source} {what}: it ends {inside}, in the middle of line {len(lines)} "
                                 f"({shown(lines[-1].strip(), 60)!r}) with no final newline, so the rest of the file "
                                 f"is missing; restore the whole file ({shown(problem, 400)})")
