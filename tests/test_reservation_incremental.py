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


@settings(max_examples=300, deadline=None)
@given(operations)
def test_incremental_tracker_equals_a_rebuild_after_any_starts_and_ends(steps):
    now = 0.0
    running: dict  # key -> RunningJob; keys are ints, RunningJob.key any hashable
    incremental, running, key = RunningJobsTracker(HOSTS, now), {}, 0
    kept = incremental.at(now)  # a round's copy kept for later: nothing done since may change it
    kept_state = state(kept)
    for operation, *arguments in steps:
        if operation == "advance":
            # Not asked for yet: jobs may start after the tracker's origin.
            now += arguments[0]
            continue
        if operation == "start":
            size, age, walltime, estimate = arguments
            busy = set().union(*(set(job.hosts) for job in running.values()))
            free = [host for host in HOSTS if host not in busy][:size]
            if not free:
                continue
            job = RunningJob(key, now - age, ProcSet(*free), walltime, estimate)
            incremental.start(job)
            running[key], key = job, key + 1
        elif operation == "end":
            if not running:
                continue
            gone = sorted(running)[arguments[0] % len(running)]
            incremental.end(gone)
            del running[gone]
        elif operation == "round":
            # A round starts jobs now on its copy (and may plan one later);
            # the kept tracker takes the copy over or starts them anew.
            sizes, walltime, delayed = arguments
            round_tracker, started = incremental.at(now), []
            for size in sizes:
                slot = round_tracker.earliest_start(size, walltime, latest=now)
                if slot is not None:
                    round_tracker.reserve(key, slot, walltime)
                    started.append(RunningJob(key, now, slot.hosts, walltime))
                    key += 1
            if delayed:
                slot = round_tracker.earliest_start(len(HOSTS), 1.0)
                if slot is not None:
                    round_tracker.reserve("planned", slot, 1.0)
            taken = incremental.take_over(round_tracker, started)
            assert taken == ("planned" not in round_tracker)
            if not taken:
                for job in started:
                    incremental.start(job)
            running.update((job.key, job) for job in started)
        else:
            # A round plans on its copy; the kept tracker must not see it.
            nb_hosts, duration = arguments
            round_tracker = incremental.at(now)
            slot = round_tracker.earliest_start(nb_hosts, duration)
            if slot is not None:
                round_tracker.reserve("planned", slot, duration)
                round_tracker.release("planned", slot.start + duration / 2)
            if running:
                some = next(iter(running))
                round_tracker.release(some, now + 0.25)
                round_tracker.cancel(some)
        assert_same_as_rebuilt(incremental, running, now)
        assert state(kept) == kept_state
        if operation == "advance" or len(running) % 2:
            kept = incremental.at(now)
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
