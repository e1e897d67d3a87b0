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

from dataclasses import dataclass

import numpy as np
from pydantic import BaseModel, ConfigDict, Field, model_validator

__all__ = ["Parallelism", "Layouts"]


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


@dataclass(frozen=True)
class Layouts:
    """Layouts as arrays of degrees, one entry per layout: the vectorised step models score a whole search at
    once (:func:`tcocalc.roofline.training.training_steps`; serving instances through
    :func:`tcocalc.roofline.forward.forward_cost` with :meth:`column`)."""

    tp: np.ndarray
    pp: np.ndarray
    dp: np.ndarray
    ep: np.ndarray
    vp: np.ndarray
    cp: np.ndarray

    @classmethod
    def of(cls, layouts) -> Layouts:
        """From :class:`Parallelism` objects or ``(tp, pp, dp, ep, vp, cp)`` tuples."""
        rows = [(q.tp, q.pp, q.dp, q.ep, q.vp, q.cp) if isinstance(q, Parallelism) else q for q in layouts]
        return cls(*np.array(rows, dtype=np.int64).reshape(-1, 6).T)

    def __len__(self) -> int:
        return len(self.tp)

    def at(self, i: int) -> Parallelism:
        """Layout ``i`` as a :class:`Parallelism`."""
        return Parallelism(tp=int(self.tp[i]), pp=int(self.pp[i]), dp=int(self.dp[i]), ep=int(self.ep[i]),
                           vp=int(self.vp[i]), cp=int(self.cp[i]))

    @property
    def stage_gpus(self) -> np.ndarray:
        """``tp·dp·cp`` of each layout."""
        return self.tp * self.dp * self.cp

    @property
    def gpus(self) -> np.ndarray:
        """``tp·pp·dp·cp`` of each layout."""
        return self.stage_gpus * self.pp

    @property
    def expert_tp(self) -> np.ndarray:
        """:attr:`Parallelism.expert_tp` of each layout."""
        return self.stage_gpus // self.ep

    def column(self) -> Layouts:
        """The same layouts as column vectors, to broadcast against a row of batch sizes (serving grids)."""
        return Layouts(*(x.reshape(-1, 1) for x in (self.tp, self.pp, self.dp, self.ep, self.vp, self.cp)))
