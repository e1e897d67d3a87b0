"""Stage 2 of the RL step: one step model per orchestration mode, one file each (the way vidur keeps one
replica scheduler a file, vidur/scheduler/replica_scheduler/, with a registry beside them). Each takes the pools'
:class:`~tcocalc.rl.rates.Rates` and returns the step's :class:`~tcocalc.rl.rates.Flow`; :data:`registry.STEP_MODELS`
picks the model by ``orchestration.mode`` (docs/rl-modeling.md §5.1).

* ``sync.py``: :func:`~tcocalc.rl.steps.sync.sync_step` (``colocated``, ``sync``, ``one_step_off``): the batch's
  tail (§4.5) — with ``N`` trajectories on ``S`` slots and ``t(b) = t0 + t1·b``, ``T_dec = E[max R]·t0 + t1·W/n_rep``
  when all fit at once and ``W/S·t(b_max) + ½·E[max R]·t0`` beyond (Graham's list scheduling); ``T = t_gen +
  t_train + t_sync``, or ``max(t_gen, t_train) + t_sync`` one step off.
* ``async_.py``: :func:`~tcocalc.rl.steps.async_.async_step` (``async``, ``inflight``): ``X = min(λ_g·(1 −
  t_sync·X/B), μ_eff, keep·((η+1)·B − Q)/W_gen, k·B/(T_end + t_train + t_sync))`` (AReaL's admission rule through
  Little's law and the trainer's gate on the last admission, ``k = ⌊η⌋ + 1``, one more with partial rollout, §5.4),
  solved as a fixed point over the decoding batch and ``X``, since a throttled generator finishes each trajectory
  sooner; with the trainer streaming mini-batches and partial rollout (verl fully-async, §5.6) the bound only limits
  admission and the last two terms give way to the window cap ``(1 + ⌊η⌋)·B/(t_sync + T_fill + t_train/g)``
  (:func:`~tcocalc.rl.steps.async_.streamed_window_fill_s`).
* ``periodic.py``: :func:`~tcocalc.rl.steps.periodic.periodic_step` (``periodic``, arXiv 2511.18871, §5.5): the
  synchronous batch, with the trainer consuming groups as they finish: ``T = max_t [t + t_train·(1 − F(t⁻))] +
  t_sync``.
* ``tail.py``: the async tail rule's tables (the last admission's clock, §5.4; the refill chain under one step).
* ``common.py``: what several step models share (a batch's decode time, the flow of a synchronous batch).
* ``registry.py``: :data:`~tcocalc.rl.steps.registry.STEP_MODELS`, the step model of each mode.

Everything broadcasts over candidate splits (arrays of trainer and generator GPU counts).
"""
