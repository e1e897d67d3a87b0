"""Fluid continuous-batching generator replicas on a virtual token clock (the simulator's serving model).

Between events every decoding sequence on a replica advances at ``1/t(b)`` tokens per second, with
``t(b) = t0 + t1·b`` the step-time line of the analytical model (:class:`~tcocalc.rl.capacity.GeneratorCapacity`,
docs/rl-modeling.md §4.2). A replica keeps a virtual clock ``V`` (tokens decoded by each running sequence
since the replica started); a sequence that needs ``n`` more tokens finishes when ``V`` reaches ``V_now + n``,
so its finish is one heap entry, not one event per token. When the set of decoding sequences changes, the
replica's next finish is rescheduled; stale heap entries are skipped by a per-replica version number.
"""

from __future__ import annotations

import heapq

__all__ = ["Replicas"]


class Replicas:
    """``n`` identical replicas. ``schedule(time, replica, version)`` is called for each replica's next finish."""

    def __init__(self, n: int, t0: float, t1: float, schedule):
        self.n, self.t0, self.t1, self.schedule = n, t0, t1, schedule
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
        if not self.paused and self.decoding[r] > 0:
            self.V[r] += (now - self.t_last[r]) / (self.t0 + self.t1 * self.decoding[r])
        self.t_last[r] = now

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
        for r in self.dirty:
            self.version[r] += 1
            h = self.heaps[r]
            while h and h[0][2].dead:
                heapq.heappop(h)
            if h and not self.paused and self.decoding[r] > 0:
                self.schedule(now + max(h[0][0] - self.V[r], 0.0) * (self.t0 + self.t1 * self.decoding[r]), r,
                              self.version[r])
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
