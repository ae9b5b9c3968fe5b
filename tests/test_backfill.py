"""Slurm backfill (Algorithm 1): hand-computed schedules, fairness properties
over simulated runs, option validation, and the pybatsim glue."""
import heapq
import math

from batsim.batsim import Job
from conftest import FakeBatsim
from hypothesis import given, settings
from hypothesis import strategies as st
from procset import ProcSet
import pytest

from batio.schedulers.backfill import Backfill, backfill, time_limit
from batio.schedulers.options import Option, OptionError, parse_options
from batio.schedulers.reservation import ReservationTracker, RunningJob


def job(name, hosts, walltime, submit=0.0):
    return Job(f"w0!{name}", submit, walltime, hosts, "p", {})




def scheduler(nb_hosts=4, nb_storage=0, **options):
    sched = Backfill(options)
    sched.bs = FakeBatsim(nb_hosts, [f"pfs{nb_hosts + i}" for i in range(nb_storage)])
    sched.onSimulationBegins()
    return sched


def plan_of(options, running, waiting, nb_hosts=4, now=0.0):
    """One round: ``running`` is [(job, start, hosts)], ``waiting`` the queue."""
    sched = scheduler(nb_hosts, **options)
    for running_job, start, hosts in running:
        sched.mark_running(running_job, hosts, start)
    sched.waiting = list(waiting)
    sched.bs.now = now
    plan = sched.schedule()
    started = {j.id: hosts for j, hosts in plan.started}
    reserved = {j.id: (slot.start, slot.hosts) for j, slot in plan.reserved}
    return started, reserved


# -- hand-computed schedules ----------------------------------------------
#
# 4 hosts, now = 0. Running: R0 on hosts 0-1 until 10, R1 on host 2 until 4;
# host 3 is free. Waiting, in submission order:
#   A: 4 hosts, walltime 10    B: 2 hosts, walltime 6
#   C: 1 host,  walltime 8     D: 1 host,  walltime 3
#
# A needs every host: earliest 10 (R0 ends), on 0-3, for [10, 20).
# B needs 2 hosts for 6 s: hosts 2-3 are free over [4, 10), before A: B@4 on 2-3.
# C (1 host, 8 s) could run on host 3 over [0, 8) if only A is protected
#   (A starts at 10); if B is protected too, host 3 is free only over
#   [0, 4), and the first 8 s free on any host start at 20 (after A), on host 0.
# D (1 host, 3 s) fits host 3 over [0, 3) before B, unless C took host 3.
#
#   FCFS (0):          A cannot start: the round stops. Nothing starts.
#   EASY (1):          A@10 reserved; B skipped; C starts on 3; D skipped
#                      (no host free now).
#   backfill_max 2:    A@10, B@4 reserved; C skipped (it would delay B);
#                      D starts on 3.
#   conservative:      A@10, B@4 reserved; C@20 on host 0; D starts on 3.

def example():
    running = [(job("R0", 2, 10), 0.0, ProcSet((0, 1))), (job("R1", 1, 4), 0.0, ProcSet(2))]
    waiting = [job("A", 4, 10, 1), job("B", 2, 6, 2), job("C", 1, 8, 3), job("D", 1, 3, 4)]
    return running, waiting


@pytest.mark.parametrize("options, started, reserved", [
    ({"backfill_max": 0}, {}, {}),
    ({"backfill_max": 1}, {"w0!C": ProcSet(3)}, {"w0!A": (10.0, ProcSet((0, 3)))}),
    ({"backfill_max": 2}, {"w0!D": ProcSet(3)},
     {"w0!A": (10.0, ProcSet((0, 3))), "w0!B": (4.0, ProcSet((2, 3)))}),
    ({}, {"w0!D": ProcSet(3)},
     {"w0!A": (10.0, ProcSet((0, 3))), "w0!B": (4.0, ProcSet((2, 3))), "w0!C": (20.0, ProcSet(0))}),
    ({"backfill_max": None}, {"w0!D": ProcSet(3)},
     {"w0!A": (10.0, ProcSet((0, 3))), "w0!B": (4.0, ProcSet((2, 3))), "w0!C": (20.0, ProcSet(0))}),
    ({"backfill_max": "inf"}, {"w0!D": ProcSet(3)},
     {"w0!A": (10.0, ProcSet((0, 3))), "w0!B": (4.0, ProcSet((2, 3))), "w0!C": (20.0, ProcSet(0))}),
])
def test_backfill_max(options, started, reserved):
    assert plan_of(options, *example()) == (started, reserved)


# Same machine and jobs, other orders.
#   sjf: D(3) B(6) C(8) A(10).
#     EASY: D starts on 3 (nothing reserved yet). B: host 3 frees at 3, host 2
#     at 4: B@4 on 2-3 (the one reservation). C, A: no host free now: skipped.
#   ljf: A(10) C(8) B(6) D(3).
#     conservative: A@10 on 0-3. C starts on 3 over [0, 8), before A.
#     B (2 hosts, 6 s): host 2 is free over [4, 10) but host 3 only from 8:
#     B@20 on 0-1, after A. D (1 host, 3 s): host 2 over [4, 7): D@4 on 2.
@pytest.mark.parametrize("options, started, reserved", [
    ({"backfill_max": 1, "order": "sjf"}, {"w0!D": ProcSet(3)}, {"w0!B": (4.0, ProcSet((2, 3)))}),
    ({"order": "ljf"}, {"w0!C": ProcSet(3)},
     {"w0!A": (10.0, ProcSet((0, 3))), "w0!B": (20.0, ProcSet((0, 1))), "w0!D": (4.0, ProcSet(2))}),
])
def test_queue_orders(options, started, reserved):
    assert plan_of(options, *example()) == (started, reserved)


def test_order_ties_by_submission_then_natural_id():
    # 1 host, nothing running; all walltimes 5: FCFS start at 0, 5, 10, 15.
    waiting = [job("10", 1, 5, 1), job("9", 1, 5, 1), job("x", 1, 5, 0), job("late", 1, 5, 2)]
    for order in ("fcfs", "sjf", "ljf"):
        started, reserved = plan_of({"order": order}, [], waiting, nb_hosts=1)
        assert started == {"w0!x": ProcSet(0)}
        assert reserved == {"w0!9": (5.0, ProcSet(0)), "w0!10": (10.0, ProcSet(0)),
                            "w0!late": (15.0, ProcSet(0))}


def test_job_without_walltime_is_planned_forever():
    # Conservative, 2 hosts, nothing running. F has no walltime (-1) and
    # takes host 0 forever; G (2 hosts) can then never start; H runs on 1.
    waiting = [job("F", 1, -1, 0), job("G", 2, 10, 1), job("H", 1, 10, 2)]
    started, reserved = plan_of({}, [], waiting, nb_hosts=2)
    assert (started, reserved) == ({"w0!F": ProcSet(0), "w0!H": ProcSet(1)}, {})
    assert time_limit(waiting[0]) == math.inf
    # Running without walltime, it holds its host forever: G never fits,
    # and a 1-host job goes to the free host.
    started, reserved = plan_of({}, [(job("F", 1, -1), 0.0, ProcSet(0))],
                                [job("G", 2, 10, 1), job("K", 1, 10, 2)], nb_hosts=2, now=50.0)
    assert (started, reserved) == ({"w0!K": ProcSet(1)}, {})


def test_conservative_replanning_can_delay_a_later_job_after_an_early_end():
    # Slurm replans from scratch each round; it does not "compress" the
    # old plan. 2 hosts. R0 on host 0 until 10, R1 on host 1 until 5.
    # Round at 0: A (2 hosts, 10 s) @10 on 0-1; B (1 host, 5 s) @5 on 1, in
    # the hole [5, 10). R0 ends early, at 2. Round at 2: A@5 on 0-1 (host 1
    # frees at 5); B's hole is gone: B@15, after A.
    running = [(job("R0", 1, 10), 0.0, ProcSet(0)), (job("R1", 1, 5), 0.0, ProcSet(1))]
    waiting = [job("A", 2, 10, 1), job("B", 1, 5, 2)]
    assert plan_of({}, running, waiting, nb_hosts=2)[1] == {
        "w0!A": (10.0, ProcSet((0, 1))), "w0!B": (5.0, ProcSet(1))}
    assert plan_of({}, running[1:], waiting, nb_hosts=2, now=2.0)[1] == {
        "w0!A": (5.0, ProcSet((0, 1))), "w0!B": (15.0, ProcSet(0))}


def test_bandwidth_hook_reserves_bandwidth_like_hosts():
    class IOBackfill(Backfill):
        def bandwidth_need(self, job, now):
            return {"io": job.json_dict.get("io", 0.0)}

        def bandwidth_limits(self, now):
            return {"io": 10.0}

    # 4 hosts, io limit 10, nothing running. W1 (io 6) starts; W2 (io 6)
    # would exceed the limit until W1 ends at 10: W2@10; S (no io) starts.
    sched = IOBackfill({"backfill_max": 1})
    sched.bs = FakeBatsim(4)
    sched.onSimulationBegins()
    sched.waiting = [Job("w0!W1", 0, 10, 1, "p", {"io": 6.0}),
                     Job("w0!W2", 1, 10, 1, "p", {"io": 6.0}), job("S", 1, 10, 2)]
    plan = sched.schedule()
    assert [(j.id, hosts) for j, hosts in plan.started] == [("w0!W1", ProcSet(0)), ("w0!S", ProcSet(1))]
    assert [(j.id, slot.start, slot.hosts) for j, slot in plan.reserved] == [("w0!W2", 10.0, ProcSet(0))]


def test_hooks_of_the_round_for_policies_built_on_it():
    """backfill()'s hooks, on the hand-computed case above (A blocked, then B, C, D):
    ``first_fit`` goes on past A with BackfillMax 0, ``eligible`` skips a job
    before any search, ``on_start`` sees each start before the next job is
    taken, so that Q may change its order."""
    def round_of(Q, backfill_max, **hooks):
        RT = ReservationTracker.from_running(ProcSet((0, 3)), {}, [
            RunningJob("R0", 0, ProcSet((0, 1)), 10), RunningJob("R1", 0, ProcSet(2), 4)], 0.0)
        plan = backfill(RT, Q, 0.0, backfill_max, time_limit, lambda j: {}, **hooks)
        return [j.id for j, _ in plan.started], [j.id for j, _ in plan.reserved]

    A, B, C, D = job("A", 4, 10), job("B", 2, 6), job("C", 1, 8), job("D", 1, 3)
    assert round_of([A, B, C, D], 0) == ([], [])
    assert round_of([A, B, C, D], 0, first_fit=True) == (["w0!C"], [])
    assert round_of([A, B, C, D], 0, first_fit=True, eligible=lambda j: j is not C) == (["w0!D"], [])
    started: list = []

    def walk():  # D first (it starts on host 3), then the others in the reverse order
        left = [D, A, B, C]
        while left:
            yield left.pop(0)
            if started and left and left[0] is A:
                left.reverse()

    assert round_of(walk(), math.inf, on_start=lambda j, hosts: started.append((j.id, hosts))) == (
        ["w0!D"], ["w0!C", "w0!B", "w0!A"])
    assert started == [("w0!D", ProcSet(3))]


# -- properties over simulated runs ------------------------------------------

def simulate(sched, jobs):
    """Feed submissions (job, runtime) and completions to ``sched`` in time
    order, one round per instant. Returns {job id: start} and, per job, the
    reservation starts it got, round after round."""
    runtime = {j.id: r for j, r in jobs}
    arrivals = sorted(jobs, key=lambda item: item[0].submit_time)
    completions: list
    reservations: dict
    completions, starts, reservations = [], {}, {}  # completions: heap of (time, id, job)
    while arrivals or completions:
        now = min([a[0].submit_time for a in arrivals[:1]] + [c[0] for c in completions[:1]])
        sched.bs.now = now
        while completions and completions[0][0] == now:
            sched.onJobCompletion(heapq.heappop(completions)[2])
        while arrivals and arrivals[0][0].submit_time == now:
            sched.onJobSubmission(arrivals.pop(0)[0])
        sched.onNoMoreEvents()
        for j, _hosts in sched.last_plan.started:
            starts[j.id] = now
            heapq.heappush(completions, (now + runtime[j.id], j.id, j))
        for j, slot in sched.last_plan.reserved:
            reservations.setdefault(j.id, []).append(slot.start)
    return starts, reservations


workloads = st.lists(st.tuples(
    st.integers(1, 4),    # hosts
    st.integers(1, 10),   # walltime
    st.integers(0, 30),   # submission time
    st.floats(0.1, 1.0),  # runtime / walltime
), min_size=1, max_size=25)


def make_jobs(workload, exact):
    return [(job(i, hosts, float(walltime), float(submit)),
             float(walltime) if exact else max(1.0, round(walltime * share)))
            for i, (hosts, walltime, submit, share) in enumerate(workload)]


@settings(max_examples=150, deadline=None)
@given(workloads)
def test_easy_never_delays_the_head_job(workload):
    # Runtimes up to the walltime: jobs may end early, never late.
    starts, reservations = simulate(scheduler(6, backfill_max=1), make_jobs(workload, exact=False))
    assert len(starts) == len(workload)
    for job_id, planned in reservations.items():
        assert all(later <= earlier for earlier, later in zip(planned, planned[1:])), planned
        assert starts[job_id] <= planned[-1]


@settings(max_examples=150, deadline=None)
@given(workloads)
def test_conservative_never_delays_a_reservation(workload):
    # Exact runtimes: with early ends, replanning may delay (see above).
    starts, reservations = simulate(scheduler(6), make_jobs(workload, exact=True))
    assert len(starts) == len(workload)
    for job_id, planned in reservations.items():
        assert all(later <= earlier for earlier, later in zip(planned, planned[1:])), planned
        assert starts[job_id] <= planned[0]


@settings(max_examples=100, deadline=None)
@given(workloads, st.sampled_from([0, 1, 2, None]), st.sampled_from(["fcfs", "sjf", "ljf"]))
def test_every_job_runs_and_hosts_never_overlap(workload, backfill_max, order):
    jobs = make_jobs(workload, exact=False)
    sched = scheduler(6, backfill_max=backfill_max, order=order)
    starts, _ = simulate(sched, jobs)
    assert len(starts) == len(jobs)
    placed = [(starts[j.id], starts[j.id] + runtime, j.allocation) for j, runtime in jobs]
    for (j, _), (start, end, hosts) in zip(jobs, placed):
        assert len(hosts) == j.requested_resources and hosts <= ProcSet((0, 5))
        for other_start, other_end, other_hosts in placed:
            if other_hosts is not hosts and start < other_end and other_start < end:
                assert not hosts & other_hosts


def plans_of(cls, options, jobs):
    """Starts, reservations and allocations of ``jobs`` simulated under ``cls(options)`` on 6 hosts."""
    sched = cls(options)
    sched.bs = FakeBatsim(6, [])
    sched.onSimulationBegins()
    starts, reservations = simulate(sched, jobs)
    return starts, reservations, {j.id: j.allocation for j, _ in jobs}


class RebuildingBackfill(Backfill):
    """Backfill rebuilding its tracker from every running job in each round,
    as Algorithm 1 reads: the reference for the tracker Backfill keeps."""

    def initialize_reservation_tracker(self, now):
        return ReservationTracker.from_running(self.hosts, {}, self.running_jobs(now), now)


@settings(max_examples=100, deadline=None)
@given(workloads, st.sampled_from([0, 1, 2, None]), st.sampled_from(["fcfs", "sjf", "ljf"]),
       st.booleans())
def test_kept_tracker_plans_as_a_rebuilt_one(workload, backfill_max, order, exact):
    options = {"backfill_max": backfill_max, "order": order}
    assert (plans_of(Backfill, options, make_jobs(workload, exact))
            == plans_of(RebuildingBackfill, options, make_jobs(workload, exact)))
    assert Backfill({}).holds_hosts_only and not RebuildingBackfill({}).holds_hosts_only


class SortingBackfill(Backfill):
    """Backfill sorting its whole waiting queue in every round (a priority
    key of its own): the reference for the queue Backfill keeps in order."""

    def priority_key(self, job, now):
        return super().priority_key(job, now)


@settings(max_examples=100, deadline=None)
@given(workloads, st.sampled_from([0, 1, None]), st.sampled_from(["fcfs", "sjf", "ljf"]), st.booleans())
def test_queue_kept_in_order_plans_as_a_sorted_one(workload, backfill_max, order, ids_descending):
    # Descending ids make jobs submitted at one instant arrive out of FCFS order.
    def jobs():
        made = make_jobs(workload, exact=False)
        if not ids_descending:
            return made
        return [(job(len(made) - i, j.requested_resources, j.requested_time, j.submit_time), runtime)
                for i, (j, runtime) in enumerate(made)]

    options = {"backfill_max": backfill_max, "order": order}
    assert plans_of(Backfill, options, jobs()) == plans_of(SortingBackfill, options, jobs())
    assert Backfill({}).static_order and not SortingBackfill({}).static_order


class ScanningBackfill(Backfill):
    """Backfill looking at every waiting job in every round, even with no
    host free past BackfillMax: the reference for the round that stops."""

    stops_when_full = False


@settings(max_examples=150, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 4), st.integers(1, 10), st.integers(0, 30), st.floats(0.1, 1.0)),
                min_size=1, max_size=25),
       st.sampled_from([0, 1, 2, None]), st.sampled_from(["fcfs", "sjf", "ljf"]))
def test_a_round_stopped_on_a_full_machine_plans_as_one_that_looks_at_every_job(workload, backfill_max, order):
    # Jobs asking for no host (Batsim accepts res = 0) start even on a full machine.
    options = {"backfill_max": backfill_max, "order": order}
    assert (plans_of(Backfill, options, make_jobs(workload, exact=False))
            == plans_of(ScanningBackfill, options, make_jobs(workload, exact=False)))


def test_past_backfill_max_a_full_machine_ends_the_round_without_looking_at_the_queue():
    sched = scheduler(2, backfill_max=1)
    for i in range(2):
        sched.mark_running(job(f"R{i}", 1, 10), ProcSet(i), 0.0)
    sched.waiting = [job(i, 1, 5, submit=1.0) for i in range(1000)]
    calls = []
    tracker_at = sched.running_tracker.at

    def counting_tracker(now):
        tracker = tracker_at(now)
        earliest_start = tracker.earliest_start

        def counted(*args, **kwargs):
            calls.append(args)
            return earliest_start(*args, **kwargs)
        tracker.earliest_start = counted
        return tracker

    sched.running_tracker.at = counting_tracker
    sched.bs.now = 1.0
    plan = sched.schedule()
    assert [(j.id, slot.start) for j, slot in plan.reserved] == [("w0!0", 10.0)] and not plan.started
    assert len(calls) == 1  # the head's reservation; nothing else could start
    sched.waiting.append(job("hostless", 0, 5, submit=1.0))
    sched.waiting = list(sched.waiting)  # set from outside: the round finds the job without hosts
    assert [j.id for j, _ in sched.schedule().started] == ["w0!hostless"]


def test_running_jobs_set_around_mark_running_are_refused():
    sched = scheduler(4)
    running = job("R", 2, 10)
    running.allocation = ProcSet((0, 1))
    sched.running[running.id] = (running, 0.0)
    sched.waiting = [job("A", 4, 10)]
    with pytest.raises(RuntimeError, match="1 running jobs, 0 tracked"):
        sched.schedule()


# -- options -----------------------------------------------------------------

@pytest.mark.parametrize("options, message", [
    ({"bakfill_max": 1}, "Backfill: unknown option 'bakfill_max' = 1; known options: backfill_max, order"),
    ({"backfill_max": "1"}, "Backfill: option 'backfill_max' = \"1\" is not allowed: expected an integer >= 0"),
    ({"backfill_max": 1.5}, "option 'backfill_max' = 1.5 is not allowed"),
    ({"backfill_max": True}, "option 'backfill_max' = true is not allowed"),
    ({"backfill_max": -1}, "option 'backfill_max' = -1 is not allowed: expected an integer >= 0, or null or \"inf\""),
    ({"order": "lifo"}, "option 'order' = \"lifo\" is not allowed: expected one of \"fcfs\", \"sjf\", \"ljf\""),
])
def test_bad_options_are_refused(options, message):
    with pytest.raises(OptionError) as error:
        Backfill(options)
    assert message in str(error.value)


def test_number_options():
    spec = {"limit": Option(float, 1.0, minimum=0, maximum=2, help="GB/s")}
    assert parse_options("Sched", spec, {"limit": 2}) == {"limit": 2.0}  # JSON integers are numbers
    for value in (2.5, -0.1, float("nan"), "1", False, None):
        with pytest.raises(OptionError, match=r"Sched: option 'limit' = .* is not allowed: "
                                              r"expected a number >= 0 and <= 2 \(GB/s\)"):
            parse_options("Sched", spec, {"limit": value})


def test_option_defaults_and_aliases():
    assert (Backfill().backfill_max, Backfill().order) == (math.inf, "fcfs")
    assert Backfill({"backfill_max": None}).backfill_max == math.inf
    assert Backfill({"backfill_max": "inf", "order": "sjf"}).order == "sjf"
    assert Backfill({"backfill_max": 3}).backfill_max == 3


def test_options_are_parsed_once_for_the_whole_class_hierarchy(monkeypatch):
    """WorkloadAdaptive -> IoAware -> Backfill: one parse of the options all
    three declare, each level reading its own from ``settings``."""
    from batio.schedulers import options
    from batio.schedulers.workload_adaptive.workloadAdaptive import WorkloadAdaptive
    calls = []

    def counted(*args):
        calls.append(args)
        return parse_options(*args)
    monkeypatch.setattr(options, "parse_options", counted)
    sched = WorkloadAdaptive({"backfill_max": 1, "limit": 10, "two_group": False})
    assert len(calls) == 1
    assert (sched.backfill_max, sched.R_limit, sched.two_group) == (1, 10 * 2 ** 30, False)
    with pytest.raises(OptionError, match="^WorkloadAdaptive: unknown option 'lmit' = 10; known options: "
                                          "backfill_max, decay, estimator, history, limit, order, "
                                          "target_overshoot, two_group$"):
        WorkloadAdaptive({"lmit": 10})


# -- pybatsim glue -----------------------------------------------------------

def test_one_round_per_message_on_compute_hosts_only():
    sched = scheduler(nb_hosts=4, nb_storage=1)  # host 4 is storage
    sched.onJobSubmission(job("big", 5, 10))
    sched.onJobSubmission(job("a", 2, 10))
    sched.onJobSubmission(job("b", 2, 10))
    sched.onJobSubmission(job("c", 1, 10))
    assert sched.bs.executed == []  # decisions wait for the end of the message
    sched.onNoMoreEvents()
    assert sched.bs.rejected == ["w0!big"]
    assert sched.bs.executed == [(0.0, [("w0!a", ProcSet((0, 1))), ("w0!b", ProcSet((2, 3)))])]
    sched.onNoMoreEvents()  # nothing changed: no new round
    assert len(sched.bs.executed) == 1


def test_completion_and_kill_free_hosts():
    sched = scheduler(nb_hosts=2)
    first, second, third = job("1", 2, 10), job("2", 2, 10, 1), job("3", 2, 10, 2)
    for j in (first, second, third):
        sched.onJobSubmission(j)
    sched.onNoMoreEvents()
    sched.bs.now = 4.0
    sched.onJobCompletion(first)
    sched.onNoMoreEvents()
    sched.bs.now = 6.0
    sched.onJobsKilled([second])
    sched.onNoMoreEvents()
    assert sched.bs.executed == [(0.0, [("w0!1", ProcSet((0, 1)))]),
                                 (4.0, [("w0!2", ProcSet((0, 1)))]),
                                 (6.0, [("w0!3", ProcSet((0, 1)))])]
    assert sched.waiting == [] and list(sched.running) == ["w0!3"]


def test_requested_call_triggers_a_round():
    sched = scheduler(nb_hosts=1)
    sched.waiting = [job("a", 1, 10)]
    sched.onRequestedCall()
    sched.onNoMoreEvents()
    assert sched.bs.executed == [(0.0, [("w0!a", ProcSet(0))])]


def test_planning_is_a_plain_function():
    running, waiting = example()
    tracker = ReservationTracker.from_running(
        ProcSet((0, 3)), {}, [RunningJob(j.id, start, hosts, time_limit(j)) for j, start, hosts in running], 0.0)
    plan = backfill(tracker, waiting, 0.0, 1, time_limit, lambda j: {})
    assert [(j.id, hosts) for j, hosts in plan.started] == [("w0!C", ProcSet(3))]
    assert tracker.reservation("w0!A").hosts == ProcSet((0, 3))
    assert "w0!C" in tracker and "w0!B" not in tracker
