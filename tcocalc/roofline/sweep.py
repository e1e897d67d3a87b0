"""Vectorised sweeps of decode steps over (model, hardware, layout, batch) grids.

One :func:`~tcocalc.kernels.forward_cost` call evaluates a whole vector of batch sizes, so a grid of
100,000 points costs a few hundred numpy calls rather than 100,000 Python ones.
"""

from __future__ import annotations

import numpy as np

from ..catalog.accelerators import hardware
from ..catalog.calibration import calibration_for
from ..catalog.models import model
from ..errors import ScenarioError
from .forward import forward_cost
from .parallel import Parallelism

__all__ = ["decode_sweep"]


def decode_sweep(models, accelerators, layouts, batches, *, context_tokens=2000, precision="fp8"):
    """Decode-step time and throughput for every (model, accelerator, layout, batch) combination.

    Parameters
    ----------
    models, accelerators : iterables of names (or catalog entries).
    layouts : iterable of :class:`Parallelism` (one serving instance each).
    batches : 1-D array of sequences per instance.
    context_tokens : [tokens] context of every sequence; precision : weights/GEMMs (KV at fp8 for fp4).

    Returns a DataFrame with one row per point: ``step [s]``, ``tokens/s/GPU``, ``bound``. Combinations a
    layout cannot run (heads not divisible, precision missing) are skipped, not filled with zeros.
    """
    import pandas as pd

    b = np.asarray(batches, dtype=float)
    if b.ndim != 1 or b.size == 0 or not np.all(np.isfinite(b)) or np.any(b <= 0):
        raise ScenarioError("batches", "must be a non-empty 1-D array of positive batch sizes")
    kv = "fp8" if precision == "fp4" else precision
    frames = []
    for mname in models:
        m = model(mname)
        for aname in accelerators:
            acc = hardware(aname)
            if precision not in acc.precisions:
                continue
            cal = calibration_for(acc)
            for par in layouts:
                par = par if isinstance(par, Parallelism) else Parallelism(**par)
                if m.num_attention_heads % par.tp or (m.is_moe and m.num_experts % par.ep):
                    continue
                res = forward_cost(m, acc, cal, par, precision=precision, kv_precision=kv, dec_seqs=b,
                                   dec_ctx=context_tokens)
                step = res["stage_s"] * par.pp
                bound = np.where(res["comm_s"] > np.maximum(res["cbound_s"], res["mbound_s"]), "comm",
                                 np.where(res["cbound_s"] >= res["mbound_s"], "compute", "memory"))
                frames.append(pd.DataFrame({
                    "model": m.name, "accelerator": acc.name, "layout": par.label(), "batch": b,
                    "step [s]": step, "tokens/s/GPU": b / step / par.gpus, "bound": bound}))
    if not frames:
        raise ScenarioError("layouts", "no (model, accelerator, layout) combination can run")
    return pd.concat(frames, ignore_index=True)
