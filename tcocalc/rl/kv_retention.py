"""A multi-turn trajectory's KV while it waits on a tool: kept, or evicted and prefilled again (docs/rl-modeling.md
§4.12).

An agentic trajectory decodes a turn, calls a tool, and comes back with the tool's output for the next turn. Two
engine behaviours are modelled (``[generator] kv_retention``, the framework preset's by default):

* ``"lru"``, what vLLM's automatic prefix caching and SGLang's radix cache do by default: the finished turn holds no
  reference to its blocks; they sit in the engine's free queue in LRU order, are reused when the next turn hits
  them and are evicted when another allocation needs a block (https://docs.vllm.ai/en/latest/design/prefix_caching/;
  https://github.com/verl-project/uni-agent/issues/122). A waiting trajectory holds no running slot, so the engine
  decodes up to its KV slots at once however many trajectories wait on tools; a turn whose history was evicted is
  prefilled whole again.
* ``"pinned"``: the trajectory keeps its KV and its slot until its last turn (SGLang's streaming sessions; an
  orchestrator that caps its episodes in flight at the engines' KV capacity, prime-rl's admission control), so at
  most the KV slots are in flight per instance and a share ``φ`` of them decodes (§4.7); every turn hits.

:func:`lru_residency` is the steady state of one instance under ``"lru"``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

__all__ = ["TurnShape", "Residency", "lru_residency", "miss_tokens"]


def miss_tokens(first_prompt: float, per_turn_growth: float, turns: int) -> float:
    """Extra prefill tokens of one trajectory when every return from a tool misses the cache [token]: the history
    before each of the ``K − 1`` later turns, ``Σ_{k=1}^{K−1} (P0 + (k−1)·Δ) = (K−1)·P0 + Δ·(K−1)(K−2)/2``, the
    difference between :func:`~tcocalc.rl.rollouts.multiturn_prefill_tokens` without and with caching
    (Fireworks' multi-turn cost: ``K·P0 + Δ·K(K−1)/2`` against ``P0 + (K−1)·Δ``)."""
    k = float(max(turns, 1))
    return (k - 1.0) * first_prompt + per_turn_growth * (k - 1.0) * (k - 2.0) / 2.0


@dataclass(frozen=True)
class TurnShape:
    """What one instance's steady state under ``"lru"`` needs [tokens, s]:

    ``slots`` — trajectories whose KV the instance holds at the slot context ``context`` (the KV pool is
    ``slots·context`` tokens); ``turns`` and ``tool_s`` (one tool call); ``generated`` model tokens and ``cached``
    prefill tokens of a trajectory whose turns all hit (:func:`~tcocalc.rl.rollouts.multiturn_prefill_tokens`
    with caching); ``missed`` the extra prefill when every return misses (:func:`miss_tokens`); the decode step
    line ``t0 + t1·b`` and the instance's bulk prefill rate ``prefill_tokens_per_s``."""

    slots: float
    context: float
    turns: int
    tool_s: float
    generated: float
    cached: float
    missed: float
    t0: float
    t1: float
    prefill_tokens_per_s: float


@dataclass(frozen=True)
class Residency:
    """One instance's steady state under ``"lru"`` (arrays over the offered trajectories): ``decoding``
    trajectories decode (or prefill) at once, a share ``hit`` of the returns from a tool find their history still
    cached, and each trajectory costs the instance ``miss_s`` of prefill again on top of its decode [s]."""

    decoding: np.ndarray
    hit: np.ndarray
    miss_s: np.ndarray


def lru_residency(shape: TurnShape, offered, passes: int = 60, hit=None, start=None) -> Residency:
    """The steady state of an instance offered ``offered`` trajectories in flight under an LRU prefix cache.

    Per turn a trajectory runs ``T_run = (g/1)·t(b) + (1 − h)·H/r_pf`` (its ``g = R/K`` tokens at the batch, and
    the re-prefill of its history ``H = missed/(K − 1)`` on a miss at the bulk rate) and then waits ``τ`` on its
    tool, so the share ``φ = T_run/(T_run + τ)`` of the offered ``n`` is running: ``b = min(S, n·φ)`` with ``S``
    the KV slots. The free queue holds what the running sequences do not, ``F = (S − b)·c`` tokens; blocks reach
    its head after ``F/A`` seconds, ``A`` the tokens the instance allocates per second (a trajectory's cached
    prefill, its decode and its misses' re-prefill, ``C + R + (1 − h)·M``, at its rate ``λ = 1/(R·t(b)/b +
    (1 − h)·M/r_pf)``). A waiting trajectory's history survives when its tool returns first: with exponential
    tool waits of mean ``τ`` (their tails are heavy: ms to tens of seconds in ROLLART, OSDI'26), at most what the
    queue can hold of the ``n − b`` waiting histories, ``h = min(F/((n − b)·c), 1 − exp(−F/(A·τ)))``. The map is
    increasing in ``h``, so iterating from ``h = 1`` (a warm engine) falls monotonically to its largest fixed
    point; ``passes`` iterations. ``hit`` given (per entry of ``offered``): that share, held fixed; ``start``:
    the iteration starts there (a fixed point's neighbour, as the async fixed point passes its last share).

    Limits: ``n·c ≤ S·c`` with short tools keeps every history (``h → 1``; the decoding share is ``n·φ``, as
    ``"pinned"``); offering more than ``S/φ`` fills the pool with running sequences, ``F → 0``, and every return
    prefills its history again (``h → 0``), the collapse prime-rl's admission control exists to avoid
    (PrimeIntellect-ai/prime-rl@559b44772e47:docs/inference.md)."""
    n = np.maximum(np.asarray(offered, dtype=float), 1.0)
    k = max(int(shape.turns), 1)
    if k <= 1 or shape.tool_s <= 0 or shape.missed <= 0:
        b = np.minimum(n, shape.slots)
        return Residency(decoding=b, hit=np.ones_like(n), miss_s=np.zeros_like(n))
    per_turn = shape.generated / k
    miss_turn = shape.missed / (k - 1.0) / max(shape.prefill_tokens_per_s, 1e-9)  # a missed return's prefill [s]
    miss_all = shape.missed / max(shape.prefill_tokens_per_s, 1e-9)             # every return missed [s]
    fixed = hit is not None
    first = hit if fixed else start
    h = np.ones_like(n) if first is None else np.broadcast_to(np.asarray(first, dtype=float), n.shape).copy()
    if n.size == 1:  # one split (evaluate): the same iteration on Python floats, ~50x cheaper than on 1-arrays
        b1, h1 = _iterate(float(n.flat[0]), float(h.flat[0]), shape, (per_turn, miss_turn, miss_all), fixed,
                          passes, _SCALAR)
        b, h = np.full(n.shape, b1), np.full(n.shape, h1)
    else:
        b, h = _iterate(n, h, shape, (per_turn, miss_turn, miss_all), fixed, passes, _VECTOR)
    r_pf = max(shape.prefill_tokens_per_s, 1e-9)
    return Residency(decoding=b, hit=h, miss_s=(1.0 - h) * shape.missed / r_pf)


#: The operations :func:`_iterate` runs on: numpy's for arrays, the builtins' for one float (same IEEE arithmetic).
_VECTOR = (np.minimum, np.maximum, np.expm1, np.ndarray.all)  # the method: np.all's wrapper costs ~3x the check
_SCALAR = (min, max, math.expm1, bool)


def _iterate(n, h, shape: TurnShape, per: tuple[float, float, float], fixed: bool, passes: int, ops):
    """:func:`lru_residency`'s iteration from the hit share ``h``: (decoding, hit) at its fixed point, on arrays or
    on floats (``ops``: minimum, maximum, expm1 and all of :data:`_VECTOR` or :data:`_SCALAR`)."""
    lo, hi, expm1, every = ops
    per_turn, miss_turn, miss_all = per
    b = lo(n, shape.slots)
    for _ in range(passes):
        lost = 1.0 - h
        t_run = per_turn * (shape.t0 + shape.t1 * b) + lost * miss_turn
        b_new = lo(hi(n * t_run / (t_run + shape.tool_s), 1.0), shape.slots)
        settled = every(abs(b_new - b) <= 1e-9 * b_new)
        b = b_new
        if fixed:
            if settled:
                break
            continue
        rate = 1.0 / (shape.generated * (shape.t0 + shape.t1 * b) / b + lost * miss_all)      # trajectories/s
        alloc = rate * (shape.cached + shape.generated + lost * shape.missed)                 # tokens/s
        free = hi(shape.slots - b, 0.0) * shape.context
        h_new = lo(free / (hi(n - b, 1e-9) * shape.context), -expm1(-free / hi(alloc * shape.tool_s, 1e-300)))
        done = settled and every(abs(h_new - h) <= 1e-12)
        h = h_new
        if done:
            break
    return b, h
