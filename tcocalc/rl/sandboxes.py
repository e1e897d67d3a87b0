"""Sandbox load: live sandboxes, their CPU cores, the start-up ramp of a run and the queue for tool-call
executors (docs/rl-modeling.md §7).

Little's law: live sandboxes = trajectories in flight × the share of that time each holds a started
sandbox, capped by ``max_concurrency``. A run starts its ``C`` sandboxes in waves of ``max_starting``:
``⌈C/K_start⌉ · t_start`` per attempt (validation SBX-02). A sandbox service runs at most ``max_executing``
tool calls at once (§7.1): a call beyond them waits, the mean wait of an M/M/c queue (Erlang C,
:func:`execution_wait_s`), at most what the trajectories in flight can queue.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

import numpy as np
from scipy.special import gammaincc, gammaln

from ..scenario import Scenario
from .phases import WorkloadStats

if TYPE_CHECKING:
    from .rates import Flow

__all__ = ["sandbox_load", "ramp_hours", "sandbox_attempts", "erlang_c", "execution_wait_s", "execution_queue"]


def sandbox_load(scn: Scenario, ws: WorkloadStats, flow: Flow) -> np.ndarray:
    """Live sandboxes per candidate split [sandbox] (0 when the workload uses none)."""
    if not ws.uses_sandbox:
        return np.zeros_like(flow.step_s)
    live = flow.in_flight * flow.sandbox_share
    if scn.sandbox.max_concurrency > 0:
        live = np.minimum(live, scn.sandbox.max_concurrency)
    return live


def sandbox_attempts(scn: Scenario, ws: WorkloadStats) -> float:
    """Expected start attempts per sandbox, ``1/(1 − p_fail)`` (§7; retries until one starts)."""
    return 1.0 / (1.0 - scn.sandbox.failure_rate) if ws.uses_sandbox else 1.0


def ramp_hours(scn: Scenario, ws: WorkloadStats, live: float) -> float:
    """Hours to start the first phase's ``live`` sandboxes before the run reaches steady state."""
    sb = scn.sandbox
    if not ws.uses_sandbox or sb.startup_s <= 0:
        return 0.0
    waves = math.ceil(live / sb.max_starting) if sb.max_starting > 0 else 1
    return waves * sb.startup_s * sandbox_attempts(scn, ws) / 3600.0


def erlang_c(servers: int, load) -> np.ndarray:
    """Probability that a call waits for one of ``servers`` executors under an offered ``load`` ``a = λ·s``
    [erlang] below ``servers`` (Erlang's C formula; Kleinrock, *Queueing Systems* Vol. 1, Wiley 1975, §3.5, the
    M/M/m queue) [1].

    ``B = (aᶜ/c!) / Σ_{k≤c} aᵏ/k!`` (Erlang B), written ``exp(c·ln a − a − ln c!) / Q(c + 1, a)`` with ``Q`` the
    regularized upper incomplete gamma function (the Poisson distribution's ``P(N ≤ c)``), so that large ``c``
    neither overflows nor loops; then ``C = B / (1 − ρ·(1 − B))`` with ``ρ = a/c``. ``load`` at or above
    ``servers`` is the caller's to exclude (the queue has no steady state there)."""
    a = np.asarray(load, dtype=float)
    c = float(servers)
    pos = a > 0
    a_pos = np.where(pos, a, 1.0)
    b = np.where(pos, np.exp(c * np.log(a_pos) - a_pos - gammaln(c + 1.0)) / gammaincc(c + 1.0, a_pos), 0.0)
    rho = np.minimum(a / c, 1.0)
    return b / (1.0 - rho * (1.0 - b))


def execution_wait_s(servers: int, calls_per_s, call_s: float, queue_max) -> np.ndarray:
    """Mean wait of one tool call for an executor [s] (docs/rl-modeling.md §7.1): ``servers`` executors, calls
    arriving at ``calls_per_s`` [call/s], each ``call_s`` long, at most ``queue_max`` of them waiting at once.

    ``W_q = C(c, a)·s / (c − a)`` with ``a = λ·s`` (the M/M/c mean wait, Kleinrock Vol. 1 §3.5), and at most
    ``L_max/λ`` (Little's law, ``L_q = λ·W_q``): the calls come from a finite number of trajectories in flight, so
    no more than ``L_max`` can wait (:func:`execution_queue`). That bound is what holds at and above ``a = c``,
    where the open queue grows without end but a finite population does not: the wait of a closed queue at
    saturation. Finite everywhere; 0 with no calls or no room to wait."""
    lam = np.asarray(calls_per_s, dtype=float)
    c = float(servers)
    a = lam * call_s
    below = a < c
    a_in = np.where(below, a, 0.0)
    bound = np.maximum(np.asarray(queue_max, dtype=float), 0.0) / np.maximum(lam, 1e-300)
    open_wait = erlang_c(servers, a_in) * call_s / np.where(below, c - a_in, 1.0)
    return np.where(below, np.minimum(open_wait, bound), bound)


def execution_queue(scn: Scenario, ws: WorkloadStats, dispatched_per_s, arrivals_per_s, in_flight, latency_s):
    """The ``[sandbox] max_executing`` cap on a phase whose generator can dispatch ``dispatched_per_s``
    trajectories/s, of which ``arrivals_per_s`` reach their tool calls (the generator's rate while it generates;
    a streaming step's, at most what the trainer takes), with ``in_flight`` trajectories out, each
    ``latency_s`` long without the queue (§7.1). Returns ``(dispatched_per_s, wait_s, load)``: the dispatch rate
    at most what the executors serve, ``c/((K − 1)·s)``; the queue wait of one trajectory's ``K − 1`` calls [s]
    at the arrival rate ``λ`` so capped; and the offered load over the cap, ``(K − 1)·λ·s/c`` (at or above 1 the
    executors bind). At most ``N − λ·W₀`` calls wait at once: of the ``N`` trajectories in flight, ``λ·W₀``
    decode, start or execute (Little's law). No cap, no tool calls: unchanged, 0, 0."""
    c, calls = scn.sandbox.max_executing, ws.turns - 1
    if not ws.uses_sandbox or c <= 0 or calls <= 0 or ws.tool_s <= 0:
        return dispatched_per_s, 0.0, 0.0
    call_s = ws.tool_s / calls
    served = c / (calls * call_s)
    load = calls * np.asarray(arrivals_per_s, dtype=float) * call_s / c
    lam = np.minimum(arrivals_per_s, served)
    wait = calls * execution_wait_s(c, calls * lam, call_s, np.asarray(in_flight, dtype=float) - lam * latency_s)
    return np.minimum(dispatched_per_s, served), wait, load
