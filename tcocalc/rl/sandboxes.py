"""Sandbox load: live sandboxes, their CPU cores and the start-up ramp of a run (docs/rl-modeling.md §7).

Little's law: live sandboxes = trajectories in flight × the share of that time each holds a started
sandbox, capped by ``max_concurrency``. A run starts its ``C`` sandboxes in waves of ``max_starting``:
``⌈C/K_start⌉ · t_start`` per attempt (validation SBX-02).
"""

from __future__ import annotations

import math

import numpy as np

from ..scenario import Scenario
from .phases import WorkloadStats
from .rates import Flow, sandbox_attempts

__all__ = ["sandbox_load", "ramp_hours"]


def sandbox_load(scn: Scenario, ws: WorkloadStats, flow: Flow) -> np.ndarray:
    """Live sandboxes per candidate split [sandbox] (0 when the workload uses none)."""
    if not ws.uses_sandbox:
        return np.zeros_like(flow.step_s)
    live = flow.in_flight * flow.sandbox_share
    if scn.sandbox.max_concurrency > 0:
        live = np.minimum(live, scn.sandbox.max_concurrency)
    return live


def ramp_hours(scn: Scenario, ws: WorkloadStats, live: float) -> float:
    """Hours to start the first phase's ``live`` sandboxes before the run reaches steady state."""
    sb = scn.sandbox
    if not ws.uses_sandbox or sb.startup_s <= 0:
        return 0.0
    waves = math.ceil(live / sb.max_starting) if sb.max_starting > 0 else 1
    return waves * sb.startup_s * sandbox_attempts(scn, ws) / 3600.0
