"""Studies over the RL model (layer 5: above tcocalc.rl, below the presentation layer).

Files:

* ``calibrate.py``: :func:`calibrate` fits a measured pilot run's stage times to per-stage factors
  (:class:`RunCalibration`), the calibration every other plan of that stack then carries (docs/calibration.md);
  :func:`calibration_validation` checks it leave-one-out on the published NeMo RL rows.
"""
