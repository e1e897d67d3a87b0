"""Studies over the RL model (layer 5: above tcocalc.rl, below the presentation layer).

Files:

* ``sizing.py``: :func:`size_cluster`: hardware per pool, GPUs per pool, mode, staleness bound and supply for a
  target, with the Pareto front over the options tried.
* ``whatif.py``: build vs rent vs Tinker, sensitivity (tornado data), multi-tenancy of the generator pool and the
  cost gap to Tinker (waterfall data).
* ``rl_validation.py``: predicted vs published RL step times (NeMo RL's rows, verl's fully-async study) and the
  refit fit behind data/rl_calibration.toml.
* ``calibrate.py``: :func:`calibrate` fits a measured pilot run's stage times to per-stage factors
  (:class:`RunCalibration`), the calibration every other plan of that stack then carries (docs/calibration.md).
* ``calibration_validation.py``: :func:`calibration_validation` checks it leave-one-out on the published NeMo RL
  rows.
"""
