"""The discrete-event simulator (layer 4, inside :mod:`tcocalc.rl`): the same scenario run event by event, measured
as the analytical model's Flow and Staleness so that its metrics compare like with like.

Files:

* ``simulate.py``: ``simulate``, ``simulated_steps``, ``simulated_events_estimate``: a run built, bounded and
  measured into an RLReport.
* ``engine.py``: the event engine, one handler per event kind (admission, dispatch, tools, training, weight pushes).
* ``replicas.py``: fluid continuous-batching generator replicas on a virtual token clock, with their KV caches.
"""
