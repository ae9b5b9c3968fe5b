"""The reservation tracker against a brute-force reference on integer times.

With integer starts, durations and amounts every breakpoint is an integer, so
checking each unit [u, u + 1) decides every question exactly; beyond the last
breakpoint nothing changes any more.
"""
import math

from conftest import found
from hypothesis import given, settings
from hypothesis import strategies as st
from procset import ProcSet
import pytest

from batio.errors import InvalidValue
from batio.schedulers.reservation import OVERRUN_GRACE, OverAllocation, ReservationTracker, RunningJob, Slot

HOSTS = ProcSet((0, 2), (5, 6), 9)  # gaps between ids exercise the id <-> bit mapping
LIMITS = {"io": 10.0, "net": 6.0}


class Reference:
    """Reservations as plain tuples; every question answered unit by unit."""

    def __init__(self):
        self.reservations = {}  # key -> (start, end, hosts, bandwidth)

    def horizon(self, *times):
        finite = [t for r in self.reservations.values() for t in r[:2] if t < math.inf]
        return int(max([0, *finite, *times])) + 1

    def units(self, start, end, horizon):
        """The units of [start, end) up to the first one past every breakpoint."""
        return range(int(start), int(min(end, max(horizon, start + 1))))

    def overlapping(self, start, end):
        return [r for r in self.reservations.values() if r[0] < end and r[1] > start]

    def free_over(self, start, end):
        busy = set().union(*(r[2] for r in self.overlapping(start, end)))
        return [host for host in HOSTS if host not in busy]

    def used(self, name, unit):
        return sum(r[3].get(name, 0) for r in self.reservations.values() if r[0] <= unit < r[1])

    def fits(self, start, duration, nb_hosts, bandwidth, horizon):
        end = start + duration
        return len(self.free_over(start, end)) >= nb_hosts and all(
            self.used(name, unit) + need <= LIMITS[name]
            for name, need in bandwidth.items() for unit in self.units(start, end, horizon))

    def earliest(self, nb_hosts, duration, bandwidth, after, latest=None):
        horizon = self.horizon(after)
        for start in range(after, horizon + 1):
            if latest is not None and start > latest:
                return None
            if self.fits(start, duration, nb_hosts, bandwidth, horizon):
                return start, ProcSet(*self.free_over(start, start + duration)[:nb_hosts])
        return None


def assert_same_state(tracker, reference):
    assert {key: (r.start, r.end, r.hosts, dict(r.bandwidth))
            for key, r in tracker.reservations().items()} == {
        key: (start, end, ProcSet(*hosts), bandwidth)
        for key, (start, end, hosts, bandwidth) in reference.reservations.items()}
    for unit in range(reference.horizon() + 1):
        holders = [r[2] for r in reference.reservations.values() if r[0] <= unit < r[1]]
        assert tracker.free_host_count(unit) == len(HOSTS) - sum(len(h) for h in holders)
        for name in LIMITS:
            assert tracker.bandwidth_in_use(name, unit) == reference.used(name, unit)


def assert_never_over_allocated(reference):
    for unit in range(reference.horizon() + 1):
        holders = [r[2] for r in reference.reservations.values() if r[0] <= unit < r[1]]
        assert sum(len(h) for h in holders) == len(set().union(*holders)), "host double-booked"
        for name, limit in LIMITS.items():
            assert reference.used(name, unit) <= limit


finite_durations = st.integers(1, 12).map(float)
durations = st.one_of(finite_durations, finite_durations, finite_durations, st.just(math.inf))
needs = st.dictionaries(st.sampled_from(sorted(LIMITS)), st.integers(0, 12).map(float), max_size=2)
plans = st.tuples(st.just("plan"), st.integers(0, 4) | st.integers(0, 7), durations, needs,
                  st.integers(0, 10), st.one_of(st.none(), st.integers(0, 40)))
repeated_plans = st.tuples(  # the same requests again, as queues of alike jobs make
    st.just("plan"), st.sampled_from([1, 2]), st.sampled_from([3.0, 8.0]),
    st.sampled_from([{}, {"io": 4.0}]), st.just(0), st.none())
operations = st.lists(st.one_of(  # mostly plans, which crowd the schedule
    plans, plans, repeated_plans, repeated_plans,
    st.tuples(st.just("reserve"), st.integers(0, 30), durations,
              st.sets(st.sampled_from(list(HOSTS)), max_size=4), needs),
    st.tuples(st.just("release"), st.integers(0, 30), st.integers(0, 60)),
    st.tuples(st.just("cancel"), st.integers(0, 30)),
), min_size=15, max_size=40)


@settings(max_examples=300, deadline=None)
@given(operations)
def test_tracker_matches_brute_force(operations):
    tracker, reference = ReservationTracker(HOSTS, LIMITS, 0.0), Reference()
    for key, (kind, *args) in enumerate(operations):
        if kind == "plan":
            nb_hosts, duration, bandwidth, after, latest = args
            slot = tracker.earliest_start(nb_hosts, duration, bandwidth, after=after, latest=latest)
            expected = reference.earliest(nb_hosts, duration, bandwidth, after, latest)
            assert (slot and (slot.start, slot.hosts)) == expected
            if slot is not None:
                tracker.reserve(key, slot, duration, bandwidth)
                reference.reservations[key] = (slot.start, slot.start + duration,
                                               set(slot.hosts), bandwidth)
        elif kind == "reserve":
            start, duration, hosts, bandwidth = args
            horizon = reference.horizon(start)
            free = set(reference.free_over(start, start + duration))
            fits = hosts <= free and reference.fits(start, duration, 0, bandwidth, horizon)
            if fits:
                tracker.reserve(key, Slot(start, ProcSet(*hosts)), duration, bandwidth)
                reference.reservations[key] = (start, start + duration, hosts, bandwidth)
            else:
                with pytest.raises(OverAllocation):
                    tracker.reserve(key, Slot(start, ProcSet(*hosts)), duration, bandwidth)
        elif reference.reservations:
            victim = sorted(reference.reservations)[args[0] % len(reference.reservations)]
            start, end, hosts, bandwidth = reference.reservations[victim]
            if kind == "cancel":
                tracker.cancel(victim)
                del reference.reservations[victim]
            else:
                tracker.release(victim, args[1])
                if args[1] <= start:
                    del reference.reservations[victim]
                else:
                    reference.reservations[victim] = (start, min(end, args[1]), hosts, bandwidth)
        assert_never_over_allocated(reference)
        assert_same_state(tracker, reference)


float_requests = st.lists(st.tuples(
    st.integers(0, 6), st.floats(0.01, 50) | st.just(math.inf),
    st.dictionaries(st.sampled_from(sorted(LIMITS)), st.floats(0, 7), max_size=2),
    st.floats(0, 100)), min_size=1, max_size=40)


@settings(max_examples=200, deadline=None)
@given(float_requests)
def test_float_times_never_over_allocate(requests):
    """With float times and amounts, planned reservations never share a host
    and never exceed a limit (beyond the rounding tolerance)."""
    tracker = ReservationTracker(HOSTS, LIMITS, 0.0)
    for key, (nb_hosts, duration, bandwidth, after) in enumerate(requests):
        slot = tracker.earliest_start(nb_hosts, duration, bandwidth, after=after)
        if slot is not None:
            assert slot.start >= after and len(slot.hosts) == nb_hosts
            tracker.reserve(key, slot, duration, bandwidth)
    reservations = list(tracker.reservations().values())
    for a in reservations:
        overlapping = [b for b in reservations if b.start < a.end and a.start < b.end]
        assert all(b is a or not a.hosts & b.hosts for b in overlapping)
        for name, limit in LIMITS.items():  # peak usage is reached at some start
            in_use = sum(b.bandwidth.get(name, 0) for b in overlapping if b.start <= a.start)
            assert in_use <= limit * (1 + 1e-9)


running_jobs = st.lists(st.tuples(
    st.integers(1, 3),                                        # hosts
    st.integers(-20, 0),                                      # start
    st.one_of(st.integers(1, 30).map(float), st.just(math.inf)),  # walltime
    st.one_of(st.none(), st.integers(1, 30).map(float)),      # estimate
    needs,
), max_size=4)
queries = st.lists(st.tuples(st.integers(0, 7), durations, needs, st.integers(0, 20)), max_size=5)


def expected_end(start, walltime, estimate, now=0.0):
    if estimate is not None and start + estimate > now:
        return start + estimate
    return start + walltime if start + walltime > now else now + OVERRUN_GRACE


@settings(max_examples=200, deadline=None)
@given(running_jobs, queries)
def test_from_running_matches_brute_force(jobs, queries):
    hosts, running, reference = list(HOSTS), [], Reference()
    for key, (size, start, walltime, estimate, bandwidth) in enumerate(jobs):
        taken, hosts = hosts[:size], hosts[size:]
        if not taken:
            break
        running.append(RunningJob(key, start, ProcSet(*taken), walltime, estimate, bandwidth))
        reference.reservations[key] = (0.0, expected_end(start, walltime, estimate),
                                       set(taken), bandwidth)
    tracker = ReservationTracker.from_running(HOSTS, LIMITS, running, 0.0)
    # Running jobs may exceed a limit: only the state is compared here.
    assert_same_state(tracker, reference)
    for key, (nb_hosts, duration, bandwidth, after) in enumerate(queries, start=len(running)):
        slot = tracker.earliest_start(nb_hosts, duration, bandwidth, after=after)
        assert (slot and (slot.start, slot.hosts)) == reference.earliest(
            nb_hosts, duration, bandwidth, after)
        if slot is not None:
            tracker.reserve(key, slot, duration, bandwidth)
            reference.reservations[key] = (slot.start, slot.start + duration,
                                           set(slot.hosts), bandwidth)
    assert_same_state(tracker, reference)


# -- hand examples ------------------------------------------------------------

def test_counts_can_fit_where_no_fixed_hosts_do():
    # Host 0 is free over [0, 5) and from 10, host 1 over [5, 10) and from
    # 20: one host is free at every instant, yet no single host is for 10 s
    # before t = 10.
    tracker = ReservationTracker(ProcSet((0, 1)))
    tracker.reserve("a", Slot(5, ProcSet(0)), 5)
    tracker.reserve("b", Slot(0, ProcSet(1)), 5)
    tracker.reserve("c", Slot(10, ProcSet(1)), 10)
    start, hosts = found(tracker.earliest_start(1, 10))
    assert (start, hosts) == (10.0, ProcSet(0))
    start, hosts = found(tracker.earliest_start(1, 5))
    assert (start, hosts) == (0.0, ProcSet(0))


def test_bandwidth_delays_a_start_until_it_fits():
    tracker = ReservationTracker(ProcSet((0, 3)), {"io": 10.0})
    tracker.reserve("writer", found(tracker.earliest_start(1, 100, {"io": 7.0})), 100, {"io": 7.0})
    slot = found(tracker.earliest_start(1, 10, {"io": 4.0}))
    assert (slot.start, slot.hosts) == (100.0, ProcSet(0))
    slot = found(tracker.earliest_start(1, 10, {"io": 3.0}))  # exactly at the limit fits
    assert (slot.start, slot.hosts) == (0.0, ProcSet(1))


def test_rounding_does_not_refuse_an_exact_fill():
    tracker = ReservationTracker(ProcSet(0), {"io": 0.3})
    tracker.reserve("a", Slot(0, ProcSet()), 10, {"io": 0.1})
    tracker.reserve("b", Slot(0, ProcSet()), 10, {"io": 0.2})  # 0.1 + 0.2 > 0.3 in floats
    assert found(tracker.earliest_start(0, 1, {"io": 0.01})).start == 10.0


def test_free_hosts_over_a_window():
    tracker = ReservationTracker(ProcSet((0, 3)))
    tracker.reserve("a", Slot(10, ProcSet(1)), 10)
    tracker.reserve("b", Slot(0, ProcSet(2)), 5)
    assert tracker.free_hosts(0, 5) == ProcSet(0, 1, 3)
    assert tracker.free_hosts(5, 10) == ProcSet(0, 2, 3)
    assert tracker.free_hosts(0, 30) == ProcSet(0, 3)


def test_infinite_reservation_blocks_forever():
    tracker = ReservationTracker(ProcSet((0, 1)))
    tracker.reserve("forever", Slot(5, ProcSet(0)), math.inf)
    assert found(tracker.earliest_start(2, 1)).start == 0.0
    assert tracker.earliest_start(2, 10) is None
    assert found(tracker.earliest_start(1, math.inf)).hosts == ProcSet(1)
    assert tracker.free_host_count(1e12) == 1


def test_latest_gives_up_after_it():
    tracker = ReservationTracker(ProcSet(0))
    tracker.reserve("a", Slot(0, ProcSet(0)), 10)
    assert tracker.earliest_start(1, 5, latest=9.0) is None
    assert found(tracker.earliest_start(1, 5, latest=10.0)).start == 10.0


def test_a_release_lets_the_same_request_start_earlier():
    tracker = ReservationTracker(ProcSet(0))
    tracker.reserve("a", Slot(0, ProcSet(0)), 10)
    assert found(tracker.earliest_start(1, 5)).start == 10.0
    tracker.release("a", 2)
    assert found(tracker.earliest_start(1, 5)).start == 2.0
    tracker.cancel("a")
    assert found(tracker.earliest_start(1, 5)).start == 0.0


def test_release_and_cancel():
    tracker = ReservationTracker(ProcSet((0, 1)))
    tracker.reserve("a", Slot(0, ProcSet((0, 1))), 100)
    tracker.reserve("b", Slot(100, ProcSet(0)), 50)
    tracker.release("a", 30)  # ended early
    assert tracker.reservation("a").end == 30.0
    assert found(tracker.earliest_start(2, 70)).start == 30.0
    tracker.release("a", 40)  # later than its end: nothing to do
    assert tracker.reservation("a").end == 30.0
    tracker.release("b", 100)  # at its start: gone
    assert "b" not in tracker
    tracker.cancel("a")
    assert tracker.reservations() == {}
    assert tracker.free_host_count(0) == 2


def test_over_allocation_messages_name_the_culprits():
    tracker = ReservationTracker(ProcSet((0, 3)), {"io": 10.0})
    tracker.reserve("job1", Slot(0, ProcSet((0, 1))), 10, {"io": 8.0})
    with pytest.raises(OverAllocation, match=r"'job2' over \[5.0, 15.0\): hosts 1 already reserved by 'job1'"):
        tracker.reserve("job2", Slot(5, ProcSet((1, 2))), 10)
    with pytest.raises(OverAllocation, match=r"io would reach 11.0 > limit 10.0"):
        tracker.reserve("job3", Slot(5, ProcSet(3)), 10, {"io": 3.0})


def test_bad_requests_are_refused():
    tracker = ReservationTracker(ProcSet((0, 3)), {"io": 10.0})
    with pytest.raises(InvalidValue, match="unknown bandwidth resource 'net'"):
        tracker.earliest_start(1, 10, {"net": 1.0})
    with pytest.raises(InvalidValue, match="must be >= 0"):
        tracker.earliest_start(1, 10, {"io": -1.0})
    with pytest.raises(InvalidValue, match="duration must be > 0"):
        tracker.earliest_start(1, 0)
    with pytest.raises(InvalidValue, match="not tracked"):
        tracker.reserve("a", Slot(0, ProcSet(7)), 10)
    tracker.reserve("a", Slot(0, ProcSet(0)), 10)
    with pytest.raises(InvalidValue, match="already exists"):
        tracker.reserve("a", Slot(20, ProcSet(0)), 10)
    assert tracker.earliest_start(5, 10) is None  # more hosts than tracked
    assert tracker.earliest_start(1, 10, {"io": 11.0}) is None  # need above the limit


def test_running_jobs_hold_until_estimate_then_walltime_then_grace():
    now = 100.0
    tracker = ReservationTracker.from_running(ProcSet((0, 3)), {}, [
        RunningJob("on-estimate", 90, ProcSet(0), walltime=50, estimate=20),
        RunningJob("past-estimate", 50, ProcSet(1), walltime=80, estimate=20),
        RunningJob("past-walltime", 0, ProcSet(2), walltime=100),
        RunningJob("no-walltime", 0, ProcSet(3)),
    ], now)
    ends = {key: r.end for key, r in tracker.reservations().items()}
    assert ends == {"on-estimate": 110.0, "past-estimate": 130.0,
                    "past-walltime": now + OVERRUN_GRACE, "no-walltime": math.inf}
    assert found(tracker.earliest_start(1, 1)).start == now + OVERRUN_GRACE


def test_running_bandwidth_over_the_limit_blocks_only_who_names_it():
    tracker = ReservationTracker.from_running(ProcSet((0, 3)), {"io": 10.0}, [
        RunningJob("heavy", 0, ProcSet(0), walltime=50, bandwidth={"io": 12.0})], 10.0)
    assert found(tracker.earliest_start(1, 5)).start == 10.0
    assert found(tracker.earliest_start(1, 5, {"io": 0.0})).start == 50.0


def test_running_jobs_sharing_a_host_are_a_bug():
    with pytest.raises(OverAllocation, match="hosts 1"):
        ReservationTracker.from_running(ProcSet((0, 3)), {}, [
            RunningJob("a", 0, ProcSet((0, 1)), 10), RunningJob("b", 0, ProcSet((1, 2)), 10)], 5)


def test_history_before_the_origin_is_not_kept():
    tracker = ReservationTracker(ProcSet(0), origin=100.0)
    tracker.reserve("a", Slot(50, ProcSet(0)), 100)
    assert tracker.reservation("a").start == 100.0
    assert found(tracker.earliest_start(1, 10, after=0)).start == 150.0
    with pytest.raises(InvalidValue, match="before the origin"):
        tracker.reserve("b", Slot(0, ProcSet(0)), 100)


def test_a_stale_slot_is_checked_again():
    tracker = ReservationTracker(ProcSet((0, 1)), {"io": 10.0})
    slot = found(tracker.earliest_start(1, 10, {"io": 6.0}))
    tracker.reserve("first", slot, 10, {"io": 6.0})
    with pytest.raises(OverAllocation, match="hosts 0 already reserved"):
        tracker.reserve("second", slot, 10)
    fresh = found(tracker.earliest_start(1, 10))
    with pytest.raises(OverAllocation, match="io would reach 12.0"):
        tracker.reserve("third", fresh, 10, {"io": 6.0})  # found without bandwidth
