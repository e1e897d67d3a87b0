"""The simulator's fluid continuous-batching replicas, tested alone (hand-derived times)."""

import itertools

import pytest

from tcocalc.rl.sim.replicas import Replicas


class _Seq:
    def __init__(self, seq, replica=0):
        self.seq, self.replica, self.dead, self.decoding = seq, replica, False, False


class _Pushed(list):
    """The engine's event heap as the replicas push onto it, read back in push order as (time, replica, version)."""

    def __getitem__(self, i):
        return [(t, r, v) for t, _, _, r, v in sorted(list.__iter__(self), key=lambda e: e[1])][i]


def _replicas(t0=0.01, t1=0.001, n=1):
    scheduled = _Pushed()
    reps = Replicas(n, t0, t1, scheduled, itertools.count(1).__next__)
    return reps, scheduled


def test_two_sequences_finish_after_tokens_times_step_at_two():
    """Two 100-token sequences decode together at t(2) = 0.01 + 0.001·2 = 0.012 s per token: both finish at 1.2 s."""
    reps, scheduled = _replicas()
    reps.begin(_Seq(1), 100.0, 0.0)
    reps.begin(_Seq(2), 100.0, 0.0)
    reps.flush(0.0)
    assert scheduled[-1][0] == pytest.approx(100 * 0.012, rel=1e-12)


def test_a_finish_speeds_up_the_survivor():
    """50 and 100 tokens: the first finishes at 50·t(2) = 0.6 s; the second then has 50 tokens left at t(1) = 0.011 s,
    finishing at 0.6 + 0.55 = 1.15 s."""
    reps, scheduled = _replicas()
    reps.begin(_Seq(1), 50.0, 0.0)
    reps.begin(_Seq(2), 100.0, 0.0)
    reps.flush(0.0)
    t_first = scheduled[-1][0]
    assert t_first == pytest.approx(0.6, rel=1e-12)
    done = reps.pop_finished(0, t_first)
    assert done.seq == 1
    reps.flush(t_first)
    assert scheduled[-1][0] == pytest.approx(1.15, rel=1e-12)


def test_pause_stops_the_clock():
    """A 100-token sequence paused from 0.5 s to 2.5 s finishes 2 s later than 100·t(1) = 1.1 s."""
    reps, scheduled = _replicas()
    reps.begin(_Seq(1), 100.0, 0.0)
    reps.flush(0.0)
    reps.set_paused(True, 0.5)
    reps.flush(0.5)
    reps.set_paused(False, 2.5)
    reps.flush(2.5)
    assert scheduled[-1][0] == pytest.approx(3.1, rel=1e-12)
    assert reps.version[0] == 3  # every reschedule supersedes the replica's earlier finish event


def test_drop_all_aborts_every_decoding_sequence():
    reps, _ = _replicas(n=2)
    a, b = _Seq(1, 0), _Seq(2, 1)
    reps.begin(a, 10.0, 0.0)
    reps.begin(b, 10.0, 0.0)
    dropped = reps.drop_all(0.1)
    assert {s.seq for s in dropped} == {1, 2} and a.dead and b.dead
    assert reps.decoding == [0, 0]
