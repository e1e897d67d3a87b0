"""Parallel layouts: tensor (TP), pipeline (PP), expert (EP) and data (DP) parallelism.

One :class:`Parallelism` describes

* for **generation**: one serving instance of ``tp·pp·dp`` GPUs. ``dp`` is attention data
  parallelism inside the instance (TensorRT-LLM's "DEP4" = ``dp=4, ep=4``); the MoE experts of a
  pipeline stage are spread over its ``tp·dp`` GPUs with ``ep`` expert-parallel groups. A cluster
  runs ``gpus / (tp·pp·dp)`` independent replicas.
* for **training**: the whole job, ``tp·pp·dp·cp = gpus``; ``ep`` divides ``tp·dp·cp`` (Megatron-Core folds
  expert parallelism into data and context parallelism); ``vp`` is the virtual-pipeline (interleaving)
  factor; ``cp`` splits each sequence over ``cp`` GPUs (context parallelism, ring attention).
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field, model_validator

__all__ = ["Parallelism"]


class Parallelism(BaseModel):
    """A TP/PP/EP/DP layout (all degrees ≥ 1)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    tp: int = Field(default=1, ge=1, description="tensor-parallel degree")
    pp: int = Field(default=1, ge=1, description="pipeline-parallel stages")
    ep: int = Field(default=1, ge=1, description="expert-parallel degree")
    dp: int = Field(default=1, ge=1, description="data-parallel degree (attention-DP inside a serving instance)")
    vp: int = Field(default=1, ge=1, description="virtual pipeline stages per GPU (training only)")
    cp: int = Field(default=1, ge=1, description="context-parallel degree: each sequence split over cp GPUs "
                                                 "(training only)")

    @model_validator(mode="after")
    def _check(self):
        if self.stage_gpus % self.ep:
            raise ValueError(f"ep={self.ep} must divide tp*dp*cp={self.stage_gpus}")
        return self

    @property
    def gpus(self) -> int:
        """GPUs in the layout: ``tp·pp·dp·cp``."""
        return self.tp * self.pp * self.dp * self.cp

    @property
    def stage_gpus(self) -> int:
        """GPUs of one pipeline stage (``tp·dp·cp``), over which the experts of a layer are spread."""
        return self.tp * self.dp * self.cp

    @property
    def expert_tp(self) -> int:
        """Tensor-parallel degree inside each expert: ``tp·dp / ep``."""
        return self.stage_gpus // self.ep

    def label(self) -> str:
        """Short text such as ``"TP2 PP1 EP4 DP4"``."""
        vp = f" VP{self.vp}" if self.vp > 1 else ""
        cp = f" CP{self.cp}" if self.cp > 1 else ""
        return f"TP{self.tp}{cp} PP{self.pp}{vp} EP{self.ep} DP{self.dp}"
