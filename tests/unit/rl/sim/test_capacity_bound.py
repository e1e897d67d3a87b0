"""Issue 40 item 3: the simulator states its statistical tolerance on a throughput
(:data:`~tcocalc.rl.sim.engine.THROUGHPUT_TOLERANCE`), and the tolerance is what its runs show: the batch-means
standard error (:func:`~tcocalc.rl.sim.engine.rate_standard_error`) reproduces hand-derived values, and two of them
stay within the tolerance on a 50-step run of the grid's agentic async scenario. The bound itself is checked on
every golden case in test_shipped_agreement.py."""

import math

import pytest

import tcocalc as tc
from tcocalc.rl.sim.engine import THROUGHPUT_TOLERANCE, rate_standard_error
from tests.unit.rl.sim.test_simulate import grid_scenario


def test_batch_means_standard_error_by_hand():
    assert rate_standard_error([5.0] * 12) == 0.0
    # batches of 3: means 1, 2, 3, 4 (overall mean 2.5); their sample std is sqrt(5/3), over sqrt(4) and 2.5
    steps = [1, 1, 1, 2, 2, 2, 3, 3, 3, 4, 4, 4]
    assert rate_standard_error(steps) == pytest.approx(math.sqrt(5 / 3) / 2 / 2.5, rel=1e-12)
    # a long step followed by a short one averages out within a batch of two
    assert rate_standard_error([1, 3] * 6, batch=2) == 0.0
    assert math.isnan(rate_standard_error([1.0, 2.0, 3.0]))


@pytest.mark.parametrize("args", [("async", 1.2, 0.0, True), ("sync", 0.3, 0.0, True)])
def test_the_stated_tolerance_covers_two_standard_errors_of_a_50_step_run(args):
    rep = tc.simulate(grid_scenario(*args), steps=50, seed=0)
    steps = rep.details["timeline"]["step_time [s]"].to_numpy()[rep.details["warmup_steps"]:]
    assert 0 < 2 * rate_standard_error(steps) <= THROUGHPUT_TOLERANCE
