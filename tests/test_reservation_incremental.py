"""RunningJobsTracker, InitializeReservationTracker kept across rounds,
against ``ReservationTracker.from_running`` rebuilt from scratch."""
import math

from conftest import found
from hypothesis import given, settings
from hypothesis import strategies as st
from procset import ProcSet
import pytest

from batio.errors import InvalidValue
from batio.schedulers.reservation import (
    OVERRUN_GRACE,
    OverAllocation,
    ReservationTracker,
    RunningJob,
)
from batio.schedulers.running import RunningJobsTracker

HOSTS = ProcSet((0, 2), (5, 6), 9, (12, 15))  # gaps between ids exercise the id <-> bit mapping


def state(tracker):
    """Everything a round's answers depend on."""
    size = len(tracker._times)
    return (tracker.origin, list(tracker._times), list(tracker._free), tracker._profile[:, :size + 1].tolist(),
            {key: (r.start, r.end, r.hosts, dict(r.bandwidth)) for key, r in tracker.reservations().items()})


def assert_same_as_rebuilt(incremental, running, now):
    rebuilt = ReservationTracker.from_running(HOSTS, {}, running.values(), now)
    assert state(incremental.at(now)) == state(rebuilt)
    assert len(incremental) == len(running)


# Times on a 0.5 s grid, so ends often coincide and jobs pass their estimate,
# walltime and grace (1 s) between rounds.
steps = st.integers(0, 6).map(lambda halves: halves / 2)
limits = st.one_of(st.integers(1, 12).map(float), st.just(math.inf))
operations = st.lists(st.one_of(
    st.tuples(st.just("advance"), steps),
    st.tuples(st.just("start"), st.integers(1, 4), st.integers(0, 4).map(lambda halves: halves / 2),
              limits, st.one_of(st.none(), st.integers(1, 8).map(float))),
    st.tuples(st.just("end"), st.integers(0, 50)),
    st.tuples(st.just("plan"), st.integers(1, 6), st.integers(1, 10).map(float)),
    st.tuples(st.just("round"), st.lists(st.integers(1, 4), min_size=1, max_size=3), limits, st.booleans()),
), max_size=40)


class Rounds:
    """The operations a scheduler makes on a RunningJobsTracker (``incremental``),
    mirrored in the jobs they leave running; each answers whether the tracker
    is to be compared with a rebuild now."""

    def __init__(self):
        self.now = 0.0
        self.incremental, self.running, self.key = RunningJobsTracker(HOSTS, self.now), {}, 0

    def advance(self, step):
        # Not asked for yet: jobs may start after the tracker's origin.
        self.now += step
        return False

    def start(self, size, age, walltime, estimate):
        busy = set().union(*(set(job.hosts) for job in self.running.values()))
        free = [host for host in HOSTS if host not in busy][:size]
        if not free:
            return False
        job = RunningJob(self.key, self.now - age, ProcSet(*free), walltime, estimate)
        self.incremental.start(job)
        self.running[self.key], self.key = job, self.key + 1
        return True

    def end(self, index):
        if not self.running:
            return False
        gone = sorted(self.running)[index % len(self.running)]
        self.incremental.end(gone)
        del self.running[gone]
        return True

    def round(self, sizes, walltime, delayed):
        """A round starts jobs now on its copy (and may plan one later);
        the kept tracker takes the copy over or starts them anew."""
        round_tracker, started = self.incremental.at(self.now), []
        for size in sizes:
            slot = round_tracker.earliest_start(size, walltime, latest=self.now)
            if slot is not None:
                round_tracker.reserve(self.key, slot, walltime)
                started.append(RunningJob(self.key, self.now, slot.hosts, walltime))
                self.key += 1
        if delayed:
            slot = round_tracker.earliest_start(len(HOSTS), 1.0)
            if slot is not None:
                round_tracker.reserve("planned", slot, 1.0)
        taken = self.incremental.take_over(round_tracker, started)
        assert taken == ("planned" not in round_tracker)
        if not taken:
            for job in started:
                self.incremental.start(job)
        self.running.update((job.key, job) for job in started)
        return True

    def plan(self, nb_hosts, duration):
        """A round plans on its copy; the kept tracker must not see it."""
        round_tracker = self.incremental.at(self.now)
        slot = round_tracker.earliest_start(nb_hosts, duration)
        if slot is not None:
            round_tracker.reserve("planned", slot, duration)
            round_tracker.release("planned", slot.start + duration / 2)
        if self.running:
            some = next(iter(self.running))
            round_tracker.release(some, self.now + 0.25)
            round_tracker.cancel(some)
        return True


@settings(max_examples=300, deadline=None)
@given(operations)
def test_incremental_tracker_equals_a_rebuild_after_any_starts_and_ends(steps):
    rounds = Rounds()
    kept = rounds.incremental.at(rounds.now)  # a round's copy kept for later: nothing done since may change it
    kept_state = state(kept)
    for operation, *arguments in steps:
        if getattr(rounds, operation)(*arguments):
            assert_same_as_rebuilt(rounds.incremental, rounds.running, rounds.now)
            assert state(kept) == kept_state
            if len(rounds.running) % 2:  # now and then a newer copy is the one kept
                kept = rounds.incremental.at(rounds.now)
                kept_state = state(kept)


def test_a_round_s_tracker_is_taken_over_only_while_the_kept_one_is_unchanged():
    incremental = RunningJobsTracker(HOSTS, 0.0)
    stale = incremental.at(0.0)
    stale.reserve("a", found(stale.earliest_start(1, 10.0)), 10.0)
    incremental.start(RunningJob("b", 0.0, ProcSet(15), 5.0))
    # The copy predates "b": taking it over would lose b.
    assert not incremental.take_over(stale, [RunningJob("a", 0.0, ProcSet(0), 10.0)])
    fresh = incremental.at(0.0)
    fresh.reserve("a", found(fresh.earliest_start(1, 10.0)), 10.0)
    # Booked for 10 s, announced for 20 s: not what ``start`` would book.
    assert not incremental.take_over(fresh, [RunningJob("a", 0.0, ProcSet(0), 20.0)])
    assert incremental.take_over(fresh, [RunningJob("a", 0.0, ProcSet(0), 10.0)])
    assert_same_as_rebuilt(incremental, {"a": RunningJob("a", 0.0, ProcSet(0), 10.0),
                                         "b": RunningJob("b", 0.0, ProcSet(15), 5.0)}, 0.0)


def test_running_jobs_are_re_held_as_they_pass_estimate_walltime_and_grace():
    incremental = RunningJobsTracker(ProcSet((0, 1)), 0.0)
    incremental.start(RunningJob("estimated", 0.0, ProcSet(0), walltime=50, estimate=20))
    incremental.start(RunningJob("plain", 0.0, ProcSet(1), walltime=30))

    def ends(now):
        return {key: r.end for key, r in incremental.at(now).reservations().items()}

    assert ends(10) == {"estimated": 20.0, "plain": 30.0}
    assert ends(20) == {"estimated": 50.0, "plain": 30.0}
    assert ends(30) == {"estimated": 50.0, "plain": 30 + OVERRUN_GRACE}
    assert ends(30.5) == {"estimated": 50.0, "plain": 30.5 + OVERRUN_GRACE}
    incremental.end("plain")
    assert found(incremental.at(31).earliest_start(2, 1)).start == 50.0
    assert incremental.at(31).reservation("estimated").start == 31.0  # seen from the origin


def test_clashes_duplicates_bandwidth_and_going_back_are_refused():
    incremental = RunningJobsTracker(ProcSet((0, 3)), 5.0)
    incremental.start(RunningJob("a", 0, ProcSet((0, 1)), 10))
    with pytest.raises(OverAllocation, match="'a'.*hosts 1"):
        incremental.start(RunningJob("b", 0, ProcSet((1, 2)), 10))
    with pytest.raises(InvalidValue, match="twice"):
        incremental.start(RunningJob("a", 0, ProcSet(3), 10))
    with pytest.raises(InvalidValue, match="bandwidth"):
        incremental.start(RunningJob("c", 0, ProcSet(3), 10, bandwidth={"io": 1.0}))
    incremental.at(8.0)
    with pytest.raises(InvalidValue, match="time went back"):
        incremental.at(7.0)
