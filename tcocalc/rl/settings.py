"""A scenario's effective framework settings: its own keys where given, else its framework preset
(``[orchestration] framework``, data/frameworks.toml), else the engine's documented defaults.

Every stage reads these through :func:`settings` instead of the raw scenario fields, so a preset and an
explicit key mean the same thing everywhere (model, simulator, report).
"""

from __future__ import annotations

from dataclasses import dataclass

from ..catalog.accelerators import hardware
from ..catalog.frameworks import engine_defaults, engine_max_num_batched_tokens, engine_max_num_seqs, framework_presets
from ..errors import ScenarioError
from ..scenario import Scenario

__all__ = ["Settings", "settings"]


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

    @property
    def extra_forward_passes(self) -> int:
        """Forward-only log-prob passes per trained sample (old policy, reference model)."""
        return int(self.old_logprob_pass) + int(self.reference_model)


def _pick(explicit, preset):
    return preset if explicit is None else explicit


def _engine_default(by_gpu, key: str, engine: str, hardware_name: str) -> int:
    """``by_gpu(engine, acc)`` (:func:`~tcocalc.catalog.frameworks.engine_max_num_seqs`,
    :func:`~tcocalc.catalog.frameworks.engine_max_num_batched_tokens`) on the named GPU; the engine's H100-class
    ``key`` while the name is unknown (the cluster stage resolves and names it)."""
    try:
        acc = hardware(hardware_name)
    except KeyError:
        return engine_defaults(engine)[key]
    return by_gpu(engine, acc)


def settings(scn: Scenario) -> Settings:
    """The scenario's keys over its framework preset over the engine's defaults."""
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
        max_num_seqs=_pick(g.max_num_seqs, _engine_default(engine_max_num_seqs, "max_num_seqs", engine, g.hardware)),
        cuda_graph_max_batch=eng["cuda_graph_max_batch"],
        max_num_batched_tokens=_pick(g.max_num_batched_tokens, _engine_default(
            engine_max_num_batched_tokens, "max_num_batched_tokens", engine, g.hardware)),
        stream_minibatches=_pick(o.stream_minibatches, p["stream_minibatches"]))
