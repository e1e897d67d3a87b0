"""The RL pipeline model (layer 4): a scenario resolved, its pools' rates, one step model per mode, staleness,
sandboxes and the contract's metrics; the split solver; the simulator in :mod:`tcocalc.rl.sim`.

Files:

* ``cluster.py``: a scenario's model, accelerators and calibrations, resolved once and passed down.
* ``settings.py``: a scenario's effective framework settings (its own keys, else its preset, else defaults).
* ``phases.py``: per-phase workload statistics of a scenario (what the pipeline needs per phase).
* ``rollouts.py``: rollout statistics: length distribution, useful groups, tails, multi-turn, staleness lags.
* ``capacity.py``: trainer and generator capacity as functions of their GPU counts (vectorised).
* ``decode_floor.py``: the decode-step floor of an inference engine beyond its kernels' roofline.
* ``kv_retention.py``: a multi-turn trajectory's KV while it waits on a tool (kept, or evicted and re-prefilled).
* ``weight_sync.py``: weight synchronisation from a separate trainer pool to the generator pool.
* ``switching.py``: colocated switching, the hand-over of the GPUs between trainer and engine every step.
* ``rates.py``: each pool's rates on its own (stage 1), and the step's flow they hand to the step models.
* ``steps/``: the steady-state flow of one step, one step model per orchestration mode (one file each) and
  ``steps/registry.py``'s ``STEP_MODELS``.
* ``staleness.py``: staleness of trained samples at trajectory, token and environment-state level.
* ``sandboxes.py``: sandbox load: live sandboxes, their CPU cores and the start-up ramp.
* ``run_factors.py``: the run calibration a scenario carries (``[calibration]``), as factors.
* ``pipeline.py``: the model as named stages over candidate splits, one phase at a time.
* ``report.py``: the contract's metrics, built from the stages' hand-offs and combined over phases.
* ``search.py``: the split search behind ``solve_split`` (numbers only).
* ``diagnosis.py``: what limits a split, as typed numbers (binding limits, warnings, other arrangements).
* ``advice.py``: the sentences of ``report.advice``, written from the diagnosis (no model call).
* ``solve.py``: ``evaluate`` (one split) and ``solve_split`` (the best split).
* ``sim/``: the discrete-event simulator that cross-checks the analytical model.
"""
