"""The roofline engine (layer 2): one serving instance or one training job; knows nothing of RL.

Files:

* ``forward.py``: per-operation roofline of a transformer forward pass (prefill and decode steps).
* ``parallel.py``: parallel layouts: tensor (TP), pipeline (PP), expert (EP) and data (DP) parallelism.
* ``engine_config.py``: what an inference engine is asked to serve, as frozen hashable values.
* ``serving.py``: steady-state generation throughput with continuous batching (``generation_throughput``).
* ``disaggregated.py``: prefill/decode disaggregated serving, two pools joined by a KV transfer.
* ``speculative.py``: speculative decoding with a one-layer draft (multi-token prediction, EAGLE heads).
* ``training.py``: trainer throughput, memory and MFU for a TP/PP/EP/DP layout.
* ``sweep.py``: vectorised sweeps of decode steps over (model, hardware, layout, batch) grids.
* ``charts.py``: ridge points and operating points for the roofline chart.
* ``validation.py``: predicted vs published for every case of data/validation_cases.toml (``tcocalc validate``).
"""
