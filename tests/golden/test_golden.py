"""Every shipped scenario's evaluate() metrics, solve_split() sweep and simulate(50 steps, seed 0) metrics
stay what tests/data/golden/ pins (relative tolerance 1e-9: refactorings may reorder floating-point sums,
nothing more). A deliberate change of numbers regenerates the files (``python -m tests.golden``) in a
commit of its own that says why.

This folder has no ``__init__.py`` on purpose: ``tests.golden`` is the regenerator, tests/golden.py, which a
package of the same name would shadow."""

import pandas as pd
import pytest

from tests.golden import CASES, compute, golden_path

RTOL = 1e-9


@pytest.mark.parametrize("path", CASES, ids=[p.stem for p in CASES])
def test_shipped_scenario_numbers_unchanged(path):
    got = compute(path)
    for kind, frame in got.items():
        want = pd.read_csv(golden_path(path, kind))
        have = pd.read_csv(pd.io.common.StringIO(frame.to_csv(index=False, float_format="%.17g")))
        pd.testing.assert_frame_equal(have, want, check_exact=False, rtol=RTOL, atol=0.0, obj=f"{path.stem} {kind}")
