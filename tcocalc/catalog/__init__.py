"""Catalogs (layer 1): every read of data/ and hardware_specs/, each entry checked for its source.

Files:

* ``accelerators.py``: the accelerator catalog (hardware_specs/*.toml), datasheet figures with unit, source, date.
* ``calibration.py``: achievable-efficiency factors per hardware generation and the RL constants
  (data/calibration.toml, data/rl_calibration.toml), as one frozen value.
* ``cases.py``: the published serving and training measurements the roofline must reproduce
  (data/validation_cases.toml).
* ``frameworks.py``: RL framework presets and serving-engine defaults (data/frameworks.toml).
* ``models.py``: model architectures from a config.json: parameter counts, FLOPs per token, KV-cache bytes.
* ``prices.py``: ownership-cost defaults, cloud on-demand prices and Tinker list prices (data/cost_defaults.toml,
  data/cloud_prices.csv, data/tinker_prices.csv).
* ``provenance.py``: the one provenance check every reader runs, on a TOML entry and a CSV row alike.
* ``rl_cases.py``: published RL step and refit times the model is checked against (data/rl_cases_*.csv).
* ``run_metrics.py``: which logged key of each RL framework carries which measurement (data/run_metrics.toml), and
  the bounds of the log readers (data/log_limits.toml); the readers themselves are ``tcocalc/logs/``.
"""
