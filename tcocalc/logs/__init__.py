"""Pilot-run log readers: an input adapter that turns the metrics an RL framework logged into tcocalc's measurements.

* ``source.py``: the one way a log is opened (file type, size and line-length caps, bad bytes, ANSI codes).
* ``table.py``: :class:`~tcocalc.logs.table.RawLog` and the bounded column store every reader fills.
* ``formats/``: one module per format; ``registry.py`` lists them in the order detection walks.
* ``measurements.py``: :func:`~tcocalc.logs.measurements.load_measurements` (``tc.load_measurements``).

The bounds are data (``data/log_limits.toml``), the key mappings too (``data/run_metrics.toml``).
"""
