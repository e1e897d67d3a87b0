"""Fluid continuous-batching generator replicas on a virtual token clock (the simulator's serving model).

Between events every decoding sequence on a replica advances at ``1/t(b)`` tokens per second, with
``t(b) = t0 + t1·b`` the step-time line of the analytical model (:class:`~tcocalc.rl.capacity.GeneratorCapacity`,
docs/rl-modeling.md §4.2). A replica keeps a virtual clock ``V`` (tokens decoded by each running sequence
since the replica started); a sequence that needs ``n`` more tokens finishes when ``V`` reaches ``V_now + n``,
so its finish is one heap entry, not one event per token. When the set of decoding sequences changes, the
replica's next finish is rescheduled; stale heap entries are skipped by a per-replica version number.

A replica that prefills a trajectory's evicted history again (docs/rl-modeling.md §4.12) stalls: its clock stands
still until ``busy_until``, every sequence on it waiting. Under ``"lru"`` KV retention each replica keeps the
histories of trajectories waiting on a tool in an LRU cache (:meth:`Replicas.park`, :meth:`Replicas.reclaim`) in a
KV pool of ``pool_tokens``, evicting the least recently parked when an allocation needs the room.
"""

from __future__ import annotations

import heapq
from collections import OrderedDict

__all__ = ["Replicas"]


DECODE_DONE = 0
"""The event kind a replica's next finish is pushed with (:class:`tcocalc.rl.sim.engine.Ev`)."""


class Replicas:
    """``n`` identical replicas. Each replica's next finish goes on ``events`` (a heap of ``(time, tick(),
    DECODE_DONE, replica, version)``; ``tick`` numbers the engine's pushes)."""

    def __init__(self, n: int, t0: float, t1: float, events: list, tick, pool_tokens: float = 0.0):
        self.n, self.t0, self.t1, self.events, self.tick = n, t0, t1, events, tick
        self.busy_until = [0.0] * n     # a replica prefilling an evicted history again stalls until then [s]
        self.pool_tokens = pool_tokens  # KV pool per replica [token] (LRU retention only)
        self.run_kv = [0.0] * n         # KV of the sequences holding a slot [token]
        self.cache = [OrderedDict() for _ in range(n)]  # waiting trajectory -> its cached history [token], LRU first
        self.cache_kv = [0.0] * n
        self.V = [0.0] * n              # virtual token clock per replica [token]
        self.t_last = [0.0] * n         # wall time the clock was last advanced [s]
        self.decoding = [0] * n         # sequences decoding now
        self.resident = [0] * n         # sequences holding a slot (decoding or in a tool call)
        self.heaps = [[] for _ in range(n)]  # (finish V, seq, trajectory)
        self.version = [0] * n
        self.total_resident = 0
        self.paused = False
        self.dirty: set = set()

    def step_s(self, b: int) -> float:
        """Decode step time with ``b`` running sequences [s]."""
        return self.t0 + self.t1 * b

    def advance(self, r: int, now: float) -> None:
        """Bring replica ``r``'s virtual clock to ``now``."""
        d = self.decoding[r]
        if d > 0 and not self.paused:
            start, busy = self.t_last[r], self.busy_until[r]
            if busy > start:
                start = busy
            if now > start:  # (no max(): this runs once per event and replica touched)
                self.V[r] += (now - start) / (self.t0 + self.t1 * d)
        self.t_last[r] = now

    def stall(self, r: int, now: float, seconds: float) -> None:
        """Replica ``r`` spends ``seconds`` prefilling (an evicted history) before it decodes again."""
        self.advance(r, now)
        self.busy_until[r] = max(self.busy_until[r], now) + seconds
        self.dirty.add(r)

    def allocate(self, r: int, tokens: float) -> None:
        """KV for ``tokens`` more on replica ``r``, evicting the least recently parked histories to make room."""
        cache = self.cache[r]
        while cache and self.run_kv[r] + self.cache_kv[r] + tokens > self.pool_tokens:
            _, t = cache.popitem(last=False)
            self.cache_kv[r] -= t
        self.run_kv[r] += tokens

    def park(self, r: int, tr, tokens: float) -> None:
        """``tr`` waits on a tool: its ``tokens`` of history leave the running set for the LRU cache."""
        self.run_kv[r] -= tokens
        self.cache[r][tr] = tokens
        self.cache_kv[r] += tokens

    def reclaim(self, r: int, tr) -> bool:
        """``tr`` is back from its tool: its history returns to the running set if still cached (a hit)."""
        t = self.cache[r].pop(tr, None)
        if t is None:
            return False
        self.cache_kv[r] -= t
        self.run_kv[r] += t
        return True

    def drop(self, r: int, tr) -> None:
        """``tr`` left while waiting on a tool: its cached history, if any, is freed."""
        t = self.cache[r].pop(tr, None)
        if t is not None:
            self.cache_kv[r] -= t

    def free(self, r: int, tokens: float) -> None:
        """A finished trajectory's KV leaves replica ``r``."""
        self.run_kv[r] -= tokens

    def begin(self, tr, tokens: float, now: float, extra: float = 0.0) -> None:
        """Trajectory ``tr`` (on ``tr.replica``) starts decoding ``tokens`` more tokens (plus ``extra``
        decode-token equivalents, e.g. its prefill)."""
        r = tr.replica
        self.advance(r, now)
        self.decoding[r] += 1
        tr.decoding = True
        heapq.heappush(self.heaps[r], (self.V[r] + tokens + extra, tr.seq, tr))
        self.dirty.add(r)

    def pop_finished(self, r: int, now: float):
        """Replica ``r``'s earliest sequence has finished: remove and return it."""
        self.advance(r, now)
        _, _, tr = heapq.heappop(self.heaps[r])
        self.decoding[r] -= 1
        self.dirty.add(r)
        return tr

    def flush(self, now: float) -> None:
        """Reschedule the next finish of every replica whose decoding set changed."""
        if not self.dirty:
            return
        version, heaps, decoding, busy_until, V = self.version, self.heaps, self.decoding, self.busy_until, self.V
        paused, events, tick = self.paused, self.events, self.tick
        for r in self.dirty:
            v = version[r] + 1
            version[r] = v
            h = heaps[r]
            while h and h[0][2].dead:
                heapq.heappop(h)
            if h and not paused and decoding[r] > 0:
                start, left = busy_until[r], h[0][0] - V[r]
                heapq.heappush(events, ((now if now > start else start) + (left if left > 0.0 else 0.0)
                                        * (self.t0 + self.t1 * decoding[r]), tick(), DECODE_DONE, r, v))
        self.dirty.clear()

    def set_paused(self, flag: bool, now: float) -> None:
        """Pause (weight sync) or resume every replica."""
        for r in range(self.n):
            self.advance(r, now)
        self.paused = flag
        for r in range(self.n):
            self.t_last[r] = now
            self.dirty.add(r)

    def drop_all(self, now: float) -> list:
        """Abort every decoding sequence: returns them (each marked dead); clocks stay consistent."""
        out = []
        for r in range(self.n):
            self.advance(r, now)
            for _, _, tr in self.heaps[r]:
                if not tr.dead:
                    tr.dead = True
                    self.decoding[r] -= 1
                    out.append(tr)
            self.heaps[r] = []
            self.dirty.add(r)
        return out
