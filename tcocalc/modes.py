"""The orchestration modes and what each one implies, in one table.

A mode's name is read once: every stage that needs to know how a mode behaves reads its :class:`ModeTraits` from
:data:`MODES` (``MODES[scn.orchestration.mode].streaming``) instead of comparing the name, the way pvlib's
``ModelChain`` looks a model name up once and then calls the method it chose
(pvlib/pvlib-python@6382338:pvlib/modelchain.py, ``ModelChain.dc_model``). The one other place that keys on the
name is the step-model table :data:`tcocalc.rl.steps.registry.STEP_MODELS` (which function computes a
step).

The modes (docs/rl-modeling.md §5.1):

* ``colocated``: trainer and generator time-share one pool of GPUs (NeMo RL, verl's default);
* ``sync``: two pools that alternate: generate a batch, train on it, push the weights;
* ``one_step_off``: the generator makes batch ``n + 1`` while the trainer trains on batch ``n`` (one step of lag);
* ``async``: the generator streams under a staleness bound ``max_staleness`` (AReaL, slime, prime-rl);
* ``inflight``: ``async`` whose weight updates reach trajectories while they run (PipelineRL);
* ``periodic``: an on-policy batch whose groups the trainer takes as they finish (arXiv 2511.18871).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from .errors import ScenarioError

__all__ = ["Mode", "ModeTraits", "MODES", "MODE_NAMES", "traits"]

Mode = Literal["colocated", "sync", "one_step_off", "async", "inflight", "periodic"]


@dataclass(frozen=True)
class ModeTraits:
    """What an orchestration mode implies for the model, the simulator, the cost and the advice.

    * ``pools``: GPU pools paid for: 1 when trainer and generator share the GPUs (colocated), else 2;
    * ``synchronous``: a step generates its whole batch with one policy version and waits for its slowest
      trajectory (the batch-tail step model, §4.5; colocated, sync, one_step_off);
    * ``alternates``: generation stops while the trainer trains (colocated, sync);
    * ``streaming``: the generator streams trajectories under the staleness bound ``max_staleness`` (async,
      inflight; §5.4);
    * ``fixed_lag``: the policy lag built into the mode [steps]: 1 for one_step_off, 0 for the other non-streaming
      modes, ``None`` for streaming modes (their lag is set by ``max_staleness``);
    * ``push_blocks_trainer``: the weight push (colocated: the pool's switch) counts as trainer busy time whatever
      the framework (colocated, sync); in the other modes the framework's ``sync_blocks_trainer`` decides;
    * ``in_flight_updates``: new weights reach trajectories while they run, keeping their KV (inflight);
    * ``accumulates``: the trainer takes the batch's groups as they finish, one policy version per step (periodic).
    """

    name: str
    pools: int
    synchronous: bool
    alternates: bool
    streaming: bool
    fixed_lag: float | None
    push_blocks_trainer: bool
    in_flight_updates: bool
    accumulates: bool

    @property
    def shared_pool(self) -> bool:
        """Trainer and generator are one pool of GPUs (the same hardware and count)."""
        return self.pools == 1


MODES: dict[str, ModeTraits] = {
    t.name: t for t in (
        ModeTraits("colocated", pools=1, synchronous=True, alternates=True, streaming=False, fixed_lag=0.0,
                   push_blocks_trainer=True, in_flight_updates=False, accumulates=False),
        ModeTraits("sync", pools=2, synchronous=True, alternates=True, streaming=False, fixed_lag=0.0,
                   push_blocks_trainer=True, in_flight_updates=False, accumulates=False),
        ModeTraits("one_step_off", pools=2, synchronous=True, alternates=False, streaming=False, fixed_lag=1.0,
                   push_blocks_trainer=False, in_flight_updates=False, accumulates=False),
        ModeTraits("async", pools=2, synchronous=False, alternates=False, streaming=True, fixed_lag=None,
                   push_blocks_trainer=False, in_flight_updates=False, accumulates=False),
        ModeTraits("inflight", pools=2, synchronous=False, alternates=False, streaming=True, fixed_lag=None,
                   push_blocks_trainer=False, in_flight_updates=True, accumulates=False),
        ModeTraits("periodic", pools=2, synchronous=False, alternates=False, streaming=False, fixed_lag=0.0,
                   push_blocks_trainer=False, in_flight_updates=False, accumulates=True),
    )
}
"""Every orchestration mode's traits, by name (the order of :data:`Mode`)."""

MODE_NAMES: tuple[str, ...] = tuple(MODES)


def traits(mode: str) -> ModeTraits:
    """The traits of ``mode`` (a name of :data:`MODES`); ScenarioError naming ``orchestration.mode`` and the modes
    for any other."""
    try:
        return MODES[mode]
    except (KeyError, TypeError):
        raise ScenarioError("orchestration.mode", f"unknown mode {mode!r}; one of {', '.join(MODES)}") from None
