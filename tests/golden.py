"""Golden numbers of every shipped scenario (and the agreement grid's variants): what a refactoring must keep.

``python tests/golden.py`` or ``python -m tests.golden`` (from the repository root) rewrites the files under
tests/data/golden/, which tests/golden/test_golden.py checks (``python -m tests.golden NAME ...``: those files only);
do that only in a commit that changes numbers on purpose, and say why in its message.
"""

from __future__ import annotations

import math
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
GOLDEN_DIR = ROOT / "tests" / "data" / "golden"
SCENARIOS = sorted((ROOT / "scenarios").glob("*.toml"))
AGREEMENT = sorted((ROOT / "tests" / "data" / "agreement").glob("*.toml"))
"""Variants of shipped scenarios the simulator-agreement grid also walks (tests/unit/rl/sim/test_shipped_agreement.py),
pinned here like the shipped ones."""
CASES = SCENARIOS + AGREEMENT
SIM_STEPS = 50
SIM_SEED = 0


def _metrics_frame(metrics: dict):
    import pandas as pd

    return pd.DataFrame({"metric": list(metrics),
                         "value": [math.nan if v is None else float(v) for v in metrics.values()]})


def compute(path: Path) -> dict:
    """{"evaluate": frame, "sweep": frame, "simulate": frame} for one scenario file."""
    import tcocalc as tc

    scn = tc.load_scenario(path)
    sweep = tc.solve_split(scn).sweep.reset_index(drop=True)
    return {"evaluate": _metrics_frame(tc.evaluate(scn).metrics), "sweep": sweep,
            "simulate": _metrics_frame(tc.simulate(scn, steps=SIM_STEPS, seed=SIM_SEED).metrics)}


def golden_path(path: Path, kind: str) -> Path:
    return GOLDEN_DIR / f"{path.stem}.{kind}.csv"


def main(paths=None) -> None:
    GOLDEN_DIR.mkdir(parents=True, exist_ok=True)
    for path in CASES if paths is None else paths:
        for kind, frame in compute(path).items():
            frame.to_csv(golden_path(path, kind), index=False, float_format="%.17g")
        print("wrote", path.stem)


if __name__ == "__main__":
    import sys

    main([p for p in CASES if p.stem in sys.argv[1:]] if len(sys.argv) > 1 else None)
