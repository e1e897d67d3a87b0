"""The trainer-rate cache of tcocalc.roofline.training (issue 31 item 1: a KeyError when it emptied itself mid-call)."""

from __future__ import annotations

import numpy as np

import tcocalc as tc
from tcocalc.rl import capacity
from tcocalc.rl.cluster import resolve
from tcocalc.rl.phases import workload_stats
from tcocalc.roofline import training
from tests.conftest import ROOT

SCN = ROOT / "scenarios"


def test_a_cache_that_empties_itself_still_answers_every_count(monkeypatch):
    """Counts cached by one call and asked again with new ones by the next, when the new ones overflow the cache: it
    empties and scores every count asked for (before, the old ones were gone: KeyError). The answers equal a cold
    computation's."""
    scn = tc.load_scenario(SCN / "default.toml")
    cluster, ws = resolve(scn), workload_stats(scn)
    cold = capacity.trainer_capacity(scn, cluster, ws, [8, 16, 24, 32, 40, 48]).samples_per_s
    capacity.clear_caches()
    monkeypatch.setattr(training, "MAX_CACHED_COUNTS", 4)
    capacity.trainer_capacity(scn, cluster, ws, [8, 16, 24])
    again = capacity.trainer_capacity(scn, cluster, ws, [8, 16, 24, 32, 40, 48]).samples_per_s
    capacity.clear_caches()
    assert np.array_equal(again, cold)
