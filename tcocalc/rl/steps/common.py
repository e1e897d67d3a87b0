"""What several step models share (docs/rl-modeling.md §4.5, §5.1): the decode time of trajectories put on a
replica at once (:func:`batch_decode_s`) and the flow of a step that generates one whole batch (:func:`batch_flow`,
the synchronous and the periodic step)."""

from __future__ import annotations

import numpy as np

from ..capacity import GeneratorCapacity
from ..phases import WorkloadStats
from ..rates import Flow, Rates

__all__ = ["batch_decode_s", "batch_flow"]


def batch_decode_s(gcap: GeneratorCapacity, per_rep, slots, longest, work, steps=None):
    """Decode time of ``per_rep`` trajectories put on a replica at once until the longest has ``longest`` tokens,
    ``work`` tokens decoded in all (§4.5): ``K·t0 + t1·work`` over the ``K`` decode steps the batch takes (every
    running sequence advances once per step): ``longest`` when all fit the ``slots``; beyond, ``steps`` where the
    caller has the list schedule's makespan (:func:`~tcocalc.rl.rollouts.list_makespan_tokens`), else Graham's
    midpoint ``work/S + ½·longest``."""
    beyond = work / slots + 0.5 * longest if steps is None else steps
    return np.where(per_rep <= slots, longest, beyond) * gcap.t0 + gcap.t1 * work


def batch_flow(ws: WorkloadStats, gcap: GeneratorCapacity, r: Rates, step, t_gen, n_disp: float,
               trainer_busy) -> Flow:
    """The :class:`~tcocalc.rl.rates.Flow` of a step of ``step`` seconds that generates one whole batch in ``t_gen``
    (``n_disp`` trajectories dispatched, none queued) while the trainer is busy ``trainer_busy`` seconds of it: the
    synchronous step (§4.5) and the periodic one (§5.5)."""
    B, keep = r.batch, r.keep
    x = B / step
    # a sandbox is live from a successful start to the trajectory's end: its latency less the start-up
    hold = np.minimum(1.0, (gcap.latency_s - ws.startup_s) / step)
    return Flow(trained_per_s=x, step_s=step, trainer_idle=np.clip(1.0 - trainer_busy / step, 0.0, 1.0),
                generator_idle=np.clip(1.0 - t_gen / step, 0.0, 1.0), trainer_capacity=r.trainer_samples_per_s,
                generator_capacity=B / t_gen, in_flight=np.full_like(step, n_disp), queued=np.zeros_like(step),
                group_wait=np.zeros_like(step),
                rollout_latency_s=np.broadcast_to(r.rollout_latency_s, step.shape).astype(float),
                training_share=x * r.t_train / B, generated_tokens_per_s=x * r.generated_per_trained,
                discarded_fraction=np.full_like(step, 1.0 - keep), sandbox_share=hold,
                prefix_hit=np.broadcast_to(r.hit, step.shape).astype(float))
