"""The step model of each orchestration mode (docs/rl-modeling.md §5.1), the one place besides
:mod:`tcocalc.modes` that keys on a mode's name (a table, not a comparison)."""

from __future__ import annotations

from .async_ import async_step
from .periodic import periodic_step
from .sync import sync_step

__all__ = ["STEP_MODELS"]

#: The step model of each orchestration mode (``Scenario.orchestration.mode``).
STEP_MODELS = {"colocated": sync_step, "sync": sync_step, "one_step_off": sync_step,
               "async": async_step, "inflight": async_step, "periodic": periodic_step}
