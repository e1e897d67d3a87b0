"""What an inference engine is asked to serve, as two frozen, hashable values built once by the caller.

:class:`Lengths` is the request (prompt, response, the running KV context, the pieces the prompt arrives in);
:class:`EngineConfig` is how the engine runs it (precisions, KV reservation and block, token budget per step,
the running cap, prefill interleaving, speculative decoding) and, for the RL generator, its runtime (CUDA
graphs, the engine's running cap, its CPU share, its memory budget, disaggregated prefill). The public
keyword functions (:func:`~tcocalc.roofline.serving.generation_throughput`,
:func:`~tcocalc.roofline.disaggregated.disaggregated_throughput`) check their arguments and build these;
everything below them (the layout search, the step model, the RL generator's capacity) takes the values, so a
setting keeps one name from the scenario down to the formula that reads it. The pattern is Vidur's replica and
scheduler configs (microsoft/vidur@7d47513:vidur/execution_time_predictor/base_execution_time_predictor.py).
"""

from __future__ import annotations

from dataclasses import dataclass

from .speculative import Speculation

__all__ = ["Lengths", "EngineConfig"]


@dataclass(frozen=True)
class Lengths:
    """One request's lengths [tokens]: ``prompt`` ``P``, ``response`` ``R``, the mean KV ``context`` of a running
    sequence (``P + R/2`` for fixed lengths; the RL model passes the length-biased context, docs/rl-modeling.md
    §4.1) and ``segments``, the equal pieces the prompt reaches the engine in (an agentic trajectory's turns)."""

    prompt: float
    response: float
    context: float
    segments: float = 1.0

    @property
    def sequence(self) -> float:
        """``P + R``: the tokens a finished sequence holds [tokens]."""
        return self.prompt + self.response


@dataclass(frozen=True)
class EngineConfig:
    """How an inference engine runs a model (units in the comments; defaults: the plain serving model).

    Serving (read by :mod:`tcocalc.roofline.serving` and :mod:`tcocalc.roofline.disaggregated`):

    * ``precision``, ``kv_precision``: weights and GEMMs; the KV cache (already resolved: never ``None``);
    * ``kv_reservation``: ``"current"`` or ``"full"`` (what a request holds against the KV pool);
    * ``kv_block_tokens``: the KV block a request holds whole blocks of [tokens] (1: token-granular);
    * ``max_batched_tokens``: the engine's tokens per step per attention rank [tokens], ``"trtllm-bench"``, or
      ``None`` (every step carries its share of the prompts);
    * ``max_seqs_per_rank``: the running cap per attention-DP rank [sequences] (``None``: KV memory alone);
    * ``interleaved_prefill``: newcomers are prefilled inside the decode steps (``False``: a decode instance of a
      disaggregated deployment);
    * ``speculation``: speculative decoding, or ``None``.

    RL generator runtime (read by :mod:`tcocalc.rl.capacity`, docs/rl-modeling.md §4.8-§4.9):

    * ``cuda_graphs``, ``graph_max_batch`` [sequences]: decode under CUDA graphs up to this batch;
    * ``max_num_seqs``: the engine's cap on running sequences per instance [sequences] (``None``: none);
    * ``cpu_factor``: step time over GPU time when the engine's CPU work is exposed (1: async scheduling);
    * ``gpu_memory_utilization``: vLLM's memory budget share (``None``: the calibrated KV budget);
    * ``disaggregated``, ``prefill_gpus``: a prefill pool of its own (pinned size, or ``None``: solved).
    """

    precision: str = "bf16"
    kv_precision: str = "bf16"
    kv_reservation: str = "current"
    kv_block_tokens: int = 1
    max_batched_tokens: float | str | None = None
    max_seqs_per_rank: float | None = None
    interleaved_prefill: bool = True
    speculation: Speculation | None = None
    cuda_graphs: bool = True
    graph_max_batch: int = 512
    max_num_seqs: int | None = None
    cpu_factor: float = 1.0
    gpu_memory_utilization: float | None = None
    disaggregated: bool = False
    prefill_gpus: int | None = None

    @property
    def tokens_per_step(self) -> float:
        """Tokens a decoding sequence gains per step: 1, or the speculative expectation."""
        return 1.0 if self.speculation is None else self.speculation.tokens_per_step

    @property
    def draft_layers(self) -> float:
        """Layers of the speculative draft module held in memory beside the target (0 without speculation)."""
        return 0.0 if self.speculation is None else self.speculation.draft_layers
