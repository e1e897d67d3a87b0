"""Prices and ownership cost (layer 3: below the RL layer).

Files:

* ``tco.py``: capex and opex to $/GPU-hour, the price of each pool and a cluster's cost per hour.
* ``tinker.py``: Tinker list prices and the cost of one RL trajectory on it.
* ``semianalysis.py``: SemiAnalysis' "RL Systems Mind the Gap" accounting, reconstructed to read our numbers
  next to the study's.
"""
