"""The schedulers of paper 000: the history-based estimator (Section III),
I/O-aware backfill (Section VI, Algorithms 2-4) and workload-adaptive
scheduling with the two-group approximation (Section VII, eqs. 1-5,
Algorithms 5-7): hand-computed parameters, invariants over random states,
equivalence with Backfill under zero estimates, options, and runs through
the embedded engine."""
import json
import math

from batsim.batsim import Job
from conftest import FakeBatsim, found
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
import pandas as pd
from procset import ProcSet
import pytest

from batio.cli import main
from batio.schedulers.backfill import Backfill
from batio.schedulers.options import OptionError
from batio.schedulers.reservation import ReservationTracker
from batio.schedulers.workload_adaptive.estimator import (
    Estimate,
    Estimator,
    EstimatorError,
    load_history,
    similarity_key,
)
from batio.schedulers.workload_adaptive.ioAware import GIB, LUSTRE, R_NOW_KEY, IoAware
from batio.schedulers.workload_adaptive.pretrain import pretrain
from batio.schedulers.workload_adaptive.workloadAdaptive import (
    ADJUSTED,
    AdaptiveTracker,
    AdjustedTracker,
    JobShare,
    WorkloadAdaptive,
    adjusted_rate,
    adjusted_target,
    allowed_level,
    target_throughput,
    threshold,
    zero_mean,
)

# -- helpers ------------------------------------------------------------------

PROFILES = {
    "write": {"type": "parallel_homogeneous_pfs", "bytes_to_write": 8 * GIB, "storage": "pfs"},
    "read": {"type": "parallel_homogeneous_pfs", "bytes_to_read": 2 * GIB, "storage": "pfs"},
    "sleep": {"type": "delay", "delay": 10},
}




def job(name, hosts=1, walltime=100.0, submit=0.0, app="write", profile=None):
    extra = {"id": f"w0!{name}"} | ({} if app is None else {"app": app})
    return Job(f"w0!{name}", submit, walltime, hosts, profile or (app if app in PROFILES else "write"), extra)


class Recording(Backfill):
    """Keeps the tracker of the last round (a mixin before a Backfill policy)."""

    def initialize_reservation_tracker(self, now):
        self.tracker = super().initialize_reservation_tracker(now)
        return self.tracker


class RecIoAware(Recording, IoAware):
    pass


class RecAdaptive(Recording, WorkloadAdaptive):
    pass


def make(cls, nb_hosts=4, **options):
    sched = cls(options)
    sched.bs = FakeBatsim(nb_hosts, ["pfs"], PROFILES)
    sched.onSimulationBegins()
    return sched


def one_round(sched, running, waiting, now=0.0):
    """``running``: [(job, start, hosts)]. Returns ({id: hosts} started, {id: (start, hosts)} reserved)."""
    for running_job, start, hosts in running:
        sched.mark_running(running_job, ProcSet(*hosts) if not isinstance(hosts, ProcSet) else hosts, start)
    sched.waiting = list(waiting)
    sched.bs.now = now
    plan = sched.schedule()
    return ({j.id: hosts for j, hosts in plan.started},
            {j.id: (slot.start, slot.hosts) for j, slot in plan.reserved})


# -- the pure computations of Section VII ---------------------------------------
#
# N = 4 hosts, t_now = 0. Queue (r in GiB/s, d in s):
#   A: r=4, n=1, d=10   per node 4, node-s 10
#   B: r=6, n=2, d=5    per node 3, node-s 10
#   C: r=0, n=1, d=20   per node 0, node-s 20
#   D: r=1, n=1, d=10   per node 1, node-s 10
# Eq. 1: sum r d = 40 + 30 + 0 + 10 = 80, sum n d = 10 + 10 + 20 + 10 = 50,
#   R~ = N * 80 / 50 = 6.4.
# Eq. 2: by per-node rate C(0) D(1) B(3) A(4); node-s 20, 30, 40, 50;
#   half of 50 is 25, first reached at D: r* = 1. Zero jobs C, D (20 + 10 = 30
#   node-s >= 20 of the regular A, B).
# Eq. 3: r_zero = (0*20 + 1*10) / (1*20 + 1*10) = 1/3 per node.
# Eq. 4: R~' = 6.4 - 4 * 1/3 = 5.0667.
# Eq. 5: r_A' = 4 - 1/3 = 11/3, r_B' = 6 - 2 * 1/3 = 16/3, r_C' = r_D' = 0.
# With running jobs E (r=2, n=1, b=-5, d=15: 10 s left) and F (r=3, b=-20,
# d=10: past its estimate, left out): V_IO = 80 + 2*10 = 100,
# T_nodes = (50 + 10) / 4 = 15, R~ = 100 / 15 = 6.667.
QUEUE = [JobShare(4, 1, 10), JobShare(6, 2, 5), JobShare(0, 1, 20), JobShare(1, 1, 10)]


def test_hand_computed_two_group_parameters():
    R_target = target_throughput([], QUEUE, 0.0, 4, default=99)
    assert R_target == pytest.approx(6.4)
    r_star = threshold(QUEUE)
    assert r_star == 1
    r_zero_mean = zero_mean(QUEUE, r_star)
    assert r_zero_mean == pytest.approx(1 / 3)
    assert adjusted_target(R_target, 4, r_zero_mean) == pytest.approx(6.4 - 4 / 3)
    assert [adjusted_rate(j.r, j.n, r_star, r_zero_mean) for j in QUEUE] == pytest.approx([11 / 3, 16 / 3, 0, 0])
    running = [JobShare(2, 1, 15, -5.0), JobShare(3, 1, 10, -20.0)]
    assert target_throughput(running, QUEUE, 0.0, 4, default=99) == pytest.approx(100 / 15)


def test_eq3_is_per_node_and_edge_cases():
    # X: r=2 on 2 hosts (1 per node, 20 node-s), Y: r=10 on 1 host (10 node-s).
    # Half of 30 is 15, reached at X: r* = 1; r_zero = 2*10 / (2*10) = 1 per
    # node (the printed r_j n_j d_j / sum n_j d_j would give 2, per job).
    queue = [JobShare(2, 2, 10), JobShare(10, 1, 10)]
    assert threshold(queue) == 1 and zero_mean(queue, 1) == 1
    # Identical jobs: r* is their rate, so all are zero jobs.
    assert threshold([JobShare(5, 1, 3)] * 4) == 5
    # Empty queue: r* = 0, r_zero = 0; no node time: the default target.
    assert threshold([]) == 0 and zero_mean([], 0) == 0
    assert target_throughput([], [], 0.0, 4, default=7.0) == 7.0
    # Jobs of unknown length (d = inf) are left out of every sum.
    assert target_throughput([], [JobShare(3, 1, math.inf), JobShare(1, 1, 4)], 0, 2, 9) == pytest.approx(2)
    assert threshold([JobShare(3, 1, math.inf), JobShare(1, 1, 4)]) == 1


def test_allowed_level():
    # R~' = 10, r_j' = 4: theta 1 -> 10 (Algorithm 7 as printed), 0.5 -> 8, 0 -> 6.
    assert [allowed_level(10, 4, theta) for theta in (1, 0.5, 0)] == [10, 8, 6]
    # A job above the whole target (r_j' = 30): theta 0 -> it may start only alone (level <= 0).
    assert allowed_level(10, 30, 0) == 0
    # A non-positive target: the target itself.
    assert allowed_level(-3, 4, 0.5) == -3


# -- AT and Algorithms 6-7 ------------------------------------------------------
#
# AT from 0: a +3 over [0, 10), b +2 over [5, 20), c -1 from -3 (clipped to 0)
# forever. Levels: [0,5) 2, [5,10) 4, [10,20) 1, [20,inf) -1.

def adjusted_example():
    AT = AdjustedTracker(0.0)
    AT.reserve("a", 0, 10, 3)
    AT.reserve("b", 5, 20, 2)
    AT.reserve("c", -3, math.inf, -1)
    return AT


def test_adjusted_tracker_levels_and_earliest_time():
    AT = adjusted_example()
    assert [AT.level(t) for t in (0, 4.9, 5, 9.9, 10, 19.9, 20, 1e9)] == [2, 2, 4, 4, 1, 1, -1, -1]
    assert AT.peak(0, 10) == 4 and AT.peak(10, 30) == 1
    assert AT.earliest_at_most(2, 0, 5) == 0        # [0, 5) at level 2
    assert AT.earliest_at_most(2, 0, 6) == 10       # [5, 10) is at 4
    assert AT.earliest_at_most(2, 0, 6, latest=5) is None
    assert AT.earliest_at_most(0, 0, 1) == 20
    assert AT.earliest_at_most(-2, 0, 1) is None    # never that low
    assert AT.earliest_at_most(1, 0, math.inf) == 10
    with pytest.raises(KeyError):
        AT.reserve("a", 0, 1, 1)


def test_algorithm_7_regular_jobs_wait_for_the_target_zero_jobs_do_not():
    # 4 hosts free, Lustre limit 100 with 96 reserved over [8, 14) in RT; AT as
    # above; R~' = 2, theta = 1 (a regular job may start where AT <= 2).
    RT = ReservationTracker(ProcSet((0, 3)), {LUSTRE: 100.0}, 0.0)
    RT.reserve("big", found(RT.earliest_start(0, 6, {LUSTRE: 96}, after=8)), 6, {LUSTRE: 96})
    tracker = AdaptiveTracker(RT, adjusted_example(), r_star=1, r_zero_mean=0, R_target_adjusted=2,
                              overshoot=1.0)
    # A zero job (no ADJUSTED need) of 6 s: RT alone decides, now.
    assert found(tracker.earliest_start(1, 6, {LUSTRE: 1})).start == 0
    # A regular job of 6 s needing 5: RT says 0, AT (over 2 on [5, 10)) says
    # 10, RT from 10 says 14 (96 + 5 > 100 until 14), AT agrees at 14 (level 1).
    slot = found(tracker.earliest_start(1, 6, {LUSTRE: 5, ADJUSTED: 5}))
    assert slot.start == 14
    tracker.reserve("j", slot, 6, {LUSTRE: 5, ADJUSTED: 5})    # Algorithm 6
    assert tracker.AT.level(14) == 6 and tracker.AT.level(20) == -1
    assert tracker.RT.reservation("j").bandwidth == {LUSTRE: 5}
    assert tracker.AT.records["j"] == (14.0, 20.0, 5)
    # Nothing regular fits [0, 30) with more than the level 2 left... except
    # where AT is low enough: a 1-s regular job fits at 0 (level 2).
    assert found(tracker.earliest_start(1, 1, {LUSTRE: 1, ADJUSTED: 1})).start == 0
    assert tracker.earliest_start(1, 1, {LUSTRE: 1, ADJUSTED: 1}, latest=-1) is None


# -- the estimator ----------------------------------------------------------------

def test_decaying_average_by_hand():
    # decay 0.5; one app moving 8 bytes in 1, 2, 4 s: rates 8, 4, 2.
    # Weights 0.25, 0.5, 1 (newest last): r = (2 + 2 + 2) / 1.75 = 3.4286,
    # d = (0.25 + 1 + 4) / 1.75 = 3.
    estimator = Estimator(decay=0.5)
    for runtime in (1, 2, 4):
        estimator.observe("app", 8, 10.0, 10.0 + runtime)
    estimate = estimator.estimate("app")
    assert (estimate.rate, estimate.runtime) == pytest.approx((6 / 1.75, 3.0))
    assert estimator.observations("app") == 3
    # d is capped by the walltime.
    assert estimator.estimate("app", walltime=2.5).runtime == 2.5
    # decay 1: the plain mean; decay 0: the last observation.
    for decay, rate in ((1.0, 14 / 3), (0.0, 2.0)):
        other = Estimator(decay)
        for runtime in (1, 2, 4):
            other.observe("app", 8, 0, runtime)
        assert other.estimate("app").rate == pytest.approx(rate)


def test_congestion_lowers_the_rate_and_unknown_jobs_default():
    estimator = Estimator(decay=0.8, alone={"write": Estimate(10.0, 2.0)})   # pre-trained: 20 bytes in 2 s
    estimator.observe("write", 20, 0, 4)       # the same bytes took twice as long: rate 5
    # (0.8 * 10 + 5) / (0.8 + 1) = 7.222; d = (0.8 * 2 + 4) / 1.8 = 3.111
    assert estimator.estimate("write").rate == pytest.approx(13 / 1.8)
    assert estimator.estimate("write").runtime == pytest.approx(5.6 / 1.8)
    assert estimator.estimate("write").rate < 10
    # Unknown type: r = 0, d = walltime.
    assert estimator.estimate("never", walltime=50) == Estimate(0.0, 50)
    assert estimator.estimate("never") == Estimate(0.0, math.inf)
    with pytest.raises(EstimatorError, match="decay"):
        Estimator(decay=1.5)


def test_similarity_keys():
    assert similarity_key({"app": "write8"}, "w0", "p") == "write8"
    assert similarity_key({"app": 7}, "w0", "p") == "7"
    assert similarity_key({}, "w1", "p3") == "w1!p3"            # no app: the profile
    for bad in (None, "", [1], True):
        with pytest.raises(EstimatorError, match="field 'app'"):
            similarity_key({"id": "w0!1", "app": bad}, "w0", "p")


def test_history_files(tmp_path):
    path = tmp_path / "h.json"
    path.write_text(json.dumps({"apps": {"write": {"rate": 5.0, "runtime": 2}}}))
    assert load_history(str(path)) == {"write": Estimate(5.0, 2.0)}
    assert load_history({"write": {"rate": 0, "runtime": 1}}) == {"write": Estimate(0.0, 1.0)}
    with pytest.raises(EstimatorError, match="cannot read"):
        load_history(str(tmp_path / "missing.json"))
    path.write_text("{nope")
    with pytest.raises(EstimatorError, match="not JSON"):
        load_history(str(path))
    for bad in ({"write": {"rate": 5}}, {"write": {"rate": -1, "runtime": 2}}, {"write": 3}, [1]):
        with pytest.raises(EstimatorError):
            load_history(bad)


# -- the schedulers: learning, options, Algorithm 2 --------------------------------

def complete(sched, done, now, state=Job.State.COMPLETED_SUCCESSFULLY):
    sched.bs.now = now
    done.job_state = state
    sched.onJobCompletion(done)


def test_scheduler_learns_from_completions():
    # 8 GiB written in 4 s: 2 GiB/s; the next one takes 8 s (congestion):
    # 1 GiB/s; with decay 0.5: (0.5 * 2 + 1) / 1.5 = 1.333 GiB/s, lower.
    sched = make(IoAware, decay=0.5)
    first, second, third = job("1"), job("2"), job("3")
    for j in (first, second, third):
        sched.onJobSubmission(j)
    assert sched.estimate(first) == Estimate(0.0, 100.0)       # untrained
    sched.onNoMoreEvents()                                    # all three start at 0
    complete(sched, first, 4.0)
    assert sched.estimate(third).rate == pytest.approx(2 * GIB)
    complete(sched, second, 8.0)
    assert sched.estimate(third).rate == pytest.approx(4 / 3 * GIB)
    assert sched.estimate(third).runtime == pytest.approx((0.5 * 4 + 8) / 1.5)
    # Killed or failed jobs teach nothing (their bytes moved are unknown).
    complete(sched, third, 9.0, Job.State.COMPLETED_WALLTIME_REACHED)
    assert sched.estimator.observations("write") == 2


def test_job_without_app_uses_its_profile_and_bad_app_is_an_error():
    sched = make(IoAware, estimator="pretrained", history={"w0!read": {"rate": 3 * GIB, "runtime": 5}})
    plain = job("1", app=None, profile="read")
    sched.onJobSubmission(plain)
    assert sched.estimate(plain) == Estimate(3 * GIB, 5.0)
    with pytest.raises(EstimatorError, match="w0!2: field 'app'"):
        sched.onJobSubmission(Job("w0!2", 0, 10, 1, "write", {"id": "w0!2", "app": None}))


@pytest.mark.parametrize("cls", [IoAware, WorkloadAdaptive])
@pytest.mark.parametrize("options, message", [
    ({"limt": 3}, "unknown option 'limt'"),
    ({"limit": "fast"}, "option 'limit' = \"fast\" is not allowed"),
    ({"limit": 0}, "option 'limit' = 0.0 is not allowed: expected a number > 0"),
    ({"limit": -2}, "option 'limit' = -2 is not allowed"),
    ({"decay": 1.5}, "option 'decay' = 1.5 is not allowed"),
    ({"estimator": "trained"}, "option 'estimator' = \"trained\" is not allowed: expected one of"),
    ({"estimator": "pretrained"}, "estimator 'pretrained' needs a history"),
    ({"history": {"a": {"rate": 1, "runtime": 1}}}, "only used by estimator 'pretrained'"),
    ({"estimator": "pretrained", "history": "/nonexistent/h.json"}, "cannot read"),
    ({"backfill_max": -1}, "option 'backfill_max' = -1 is not allowed"),
    ({"order": "random"}, "option 'order'"),
])
def test_bad_options(cls, options, message):
    with pytest.raises(OptionError, match=message.replace("(", r"\(")):
        cls(options)


@pytest.mark.parametrize("options, message", [
    ({"two_group": "yes"}, "option 'two_group' = \"yes\" is not allowed: expected true or false"),
    ({"target_overshoot": 2}, "option 'target_overshoot' = 2 is not allowed"),
])
def test_bad_adaptive_options(options, message):
    with pytest.raises(OptionError, match=message):
        WorkloadAdaptive(options)
    with pytest.raises(OptionError, match="unknown option 'two_group'"):
        IoAware({"two_group": True})


def test_defaults():
    sched = WorkloadAdaptive({})
    assert sched.R_limit == 20 * GIB and sched.two_group and sched.overshoot == 0.5
    assert sched.estimator.decay == 0.8 and sched.backfill_max == math.inf


def test_io_aware_hand_computed_round():
    # 4 hosts, limit 10 GiB/s; writers estimated at 4 GiB/s, sleeps at 0.
    # Running: W0 on host 0 since -5, walltime 20 (holds 4 over [0, 15)).
    # Queue: W1, W2 (walltime 10), S (sleep), W3.
    # W1 starts (4 + 4 = 8 <= 10). W2 would reach 12: earliest 10 (W1 ends)
    # on host 1, reserved (conservative). S starts on host 2. W3: needs 4,
    # free Lustre only from 15 (W0 and the W2 reservation end at 15, 20):
    # over [0, 10) 8 reserved, [10, 15) W0 + W2 = 8, [15, 20) 4: W3 @15.
    history = {"write": {"rate": 4 * GIB, "runtime": 10}, "sleep": {"rate": 0, "runtime": 10}}
    sched = make(RecIoAware, limit=10, estimator="pretrained", history=history)
    running = [(job("W0", walltime=20), -5.0, [0])]
    waiting = [job("W1", walltime=10, submit=1), job("W2", walltime=10, submit=2),
               job("S", walltime=10, submit=3, app="sleep"), job("W3", walltime=10, submit=4)]
    started, reserved = one_round(sched, running, waiting)
    assert started == {"w0!W1": ProcSet(1), "w0!S": ProcSet(2)}
    assert reserved == {"w0!W2": (10.0, ProcSet(1)), "w0!W3": (15.0, ProcSet(0))}
    assert sched.tracker.reservation("w0!S").bandwidth == {}
    assert sched.tracker.bandwidth_in_use(LUSTRE, 0) == 8 * GIB


def test_algorithm_2_lines_7_8_measured_throughput():
    class Measured(IoAware):
        R_now = None

        def measured_throughput(self, now):
            return self.R_now

    sched = make(Measured, limit=10, estimator="pretrained", history={"write": {"rate": 2 * GIB, "runtime": 5}})
    for key, (start, hosts) in {"A": (0.0, [0]), "B": (-4.0, [1])}.items():
        j = job(key, walltime=30 if key == "A" else 50)
        j.allocation = ProcSet(*hosts)
        sched.running[j.id] = (j, start)
    sched.R_now = 7 * GIB     # 3 GiB/s more than the estimates explain
    tracker = sched.reservation_tracker(0.0)
    extra = tracker.reservation(R_NOW_KEY)
    # Reserved over [t_now, max(b_j + L_j)) = [0, max(30, 46)).
    assert (extra.start, extra.end, extra.bandwidth) == (0.0, 46.0, {LUSTRE: 3 * GIB})
    assert len(extra.hosts) == 0
    sched.R_now = 3 * GIB     # below the sum of estimates: nothing added
    assert R_NOW_KEY not in sched.reservation_tracker(0.0)
    sched.R_now = None        # not measured (batio's default)
    assert R_NOW_KEY not in sched.reservation_tracker(0.0)


def test_adaptive_hand_computed_round():
    # 4 hosts, limit 20 GiB/s, theta 1 (Algorithm 7 as printed), two-group.
    # Estimates: write 4 GiB/s for 10 s, read 1 GiB/s for 10 s, sleep 0 for 10 s.
    # Running: nothing. Queue: W1, W2, W3 (write), R1 (read), S1, S2 (sleep), all 1 host.
    # Node-s: 60 in all; by per-node rate: S1 S2 (0) 20, R1 (1) 30 >= 30: r* = 1.
    # r_zero = (0 + 0 + 1*10) / 30 = 1/3 GiB/s.  R~ = 4 * (3*40 + 10) / 60 = 8.667;
    # R~' = 8.667 - 4/3 = 7.333. Regular: writers, r' = 4 - 1/3 = 3.667.
    # W1: AT level 0 <= 7.333: starts. W2: level 3.667 <= 7.333: starts.
    # W3: level 7.333 <= 7.333: starts (the target is not exceeded before it).
    # Then no host is free: R1 (zero job) waits for a host; S1, S2 likewise.
    # With theta 0.5: allowed = 7.333 - 3.667/2 = 5.5: W1 starts, W2 (3.667 <= 5.5)
    # starts, W3 (7.333 > 5.5) waits; R1 (a zero job) takes the host.
    history = {"write": {"rate": 4 * GIB, "runtime": 10}, "read": {"rate": 1 * GIB, "runtime": 10},
               "sleep": {"rate": 0, "runtime": 10}}
    waiting = [job("W1", walltime=10, submit=1), job("W2", walltime=10, submit=2),
               job("W3", walltime=10, submit=3), job("R1", walltime=10, submit=4, app="read"),
               job("S1", walltime=10, submit=5, app="sleep"), job("S2", walltime=10, submit=6, app="sleep")]
    sched = make(RecAdaptive, limit=20, estimator="pretrained", history=history, target_overshoot=1.0,
                 backfill_max=0)
    started, _ = one_round(sched, [], waiting)
    assert sched.r_star == 1 * GIB and sched.r_zero_mean == pytest.approx(GIB / 3)
    assert sched.R_target == pytest.approx(4 * 130 / 60 * GIB)
    assert sched.R_target_adjusted == pytest.approx((4 * 130 / 60 - 4 / 3) * GIB)
    assert set(started) == {"w0!W1", "w0!W2", "w0!W3", "w0!R1"}
    sched = make(RecAdaptive, limit=20, estimator="pretrained", history=history, backfill_max=0)
    started, _ = one_round(sched, [], waiting)
    # FCFS (backfill_max 0) stops at W3, which cannot start now.
    assert set(started) == {"w0!W1", "w0!W2"}
    sched = make(RecAdaptive, limit=20, estimator="pretrained", history=history, backfill_max=1)
    started, reserved = one_round(sched, [], waiting)
    assert set(started) == {"w0!W1", "w0!W2", "w0!R1", "w0!S1"}
    assert reserved == {"w0!W3": (10.0, ProcSet(0))}    # when W1 and W2 end


# -- invariants over random states ---------------------------------------------------

APPS = ("write", "read", "sleep")


@st.composite
def states(draw):
    nb_hosts = draw(st.integers(2, 6))
    history = {app: {"rate": draw(st.sampled_from([0, 0.5, 1, 3, 7, 25])) * GIB,
                     "runtime": draw(st.sampled_from([1, 5, 20, 60]))} for app in APPS}
    running, free = [], list(range(nb_hosts))
    for index in range(draw(st.integers(0, nb_hosts))):
        size = draw(st.integers(1, 2))
        if size > len(free):
            break
        hosts, free = free[:size], free[size:]
        running.append((job(f"R{index}", size, draw(st.sampled_from([5, 20, 40, -1])),
                            app=draw(st.sampled_from(APPS))),
                        -draw(st.sampled_from([0, 1, 3, 10])), hosts))
    waiting = [job(f"Q{index}", draw(st.integers(1, 3)), draw(st.sampled_from([2, 10, 30, -1])), submit=index,
                   app=draw(st.sampled_from(APPS))) for index in range(draw(st.integers(1, 10)))]
    options = {"limit": draw(st.sampled_from([2, 5, 10, 30])), "estimator": "pretrained", "history": history,
               "backfill_max": draw(st.sampled_from([0, 1, 2, None]))}
    return nb_hosts, running, waiting, options


def naive_level(records, at):
    return sum(amount for start, end, amount in records.values() if start <= at < end)


def naive_peak(records, start, end):
    points = {start} | {t for s, e, _ in records.values() for t in (s, e) if start < t < end}
    return max(naive_level(records, t) for t in points)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(states(), st.booleans(), st.sampled_from([0.0, 0.5, 1.0]))
def test_adaptive_never_starts_a_regular_job_over_the_target(state, two_group, theta):
    nb_hosts, running, waiting, options = state
    sched = make(RecAdaptive, nb_hosts, two_group=two_group, target_overshoot=theta, **options)
    started, reserved = one_round(sched, running, waiting)
    tracker = sched.tracker
    AT = tracker.AT
    # Replay the round in queue order on AT's records, checking each started
    # regular job against the level the reservations made before it give.
    running_ids = {j.id for j, _, _ in running}
    replay = {key: record for key, record in AT.records.items() if key in running_ids}
    assert set(replay) == running_ids
    queue = sorted(waiting, key=lambda j: sched.priority_key(j, 0.0))
    for j in queue:
        r_j = sched.estimate(j).rate
        regular = r_j / j.requested_resources > sched.r_star
        if j.id in started or j.id in reserved:
            assert (j.id in AT.records) == regular
        if j.id in started and regular:
            start, end, r_adjusted = AT.records[j.id]
            assert start == 0.0
            assert r_adjusted == pytest.approx(r_j - j.requested_resources * sched.r_zero_mean)
            level = naive_peak(replay, 0.0, end)
            assert level <= allowed_level(sched.R_target_adjusted, r_adjusted, theta) + 1e-6 * GIB
            assert level <= sched.R_target_adjusted + 1e-6 * GIB
        if j.id in AT.records:
            replay[j.id] = AT.records[j.id]
    check_limit(sched, tracker.RT, running_ids, waiting)


def check_limit(sched, RT, running_ids, waiting):
    """Planned jobs (started or reserved this round) never take the Lustre
    throughput over the limit: wherever one reserves throughput, the total is
    within the limit; each reserves min(r_j, R_limit)."""
    reservations = RT.reservations()
    planned = {key for key in reservations if key not in running_ids and key != R_NOW_KEY}
    points = {r.start for r in reservations.values()} | {r.end for r in reservations.values()}
    for t in points:
        holders = [r for r in reservations.values() if r.start <= t < r.end]
        if any(r.key in planned and LUSTRE in r.bandwidth for r in holders):
            assert sum(r.bandwidth.get(LUSTRE, 0) for r in holders) <= sched.R_limit * (1 + 1e-9)
    for key in planned:
        j = next(j for j in waiting if j.id == key)
        assert reservations[key].bandwidth.get(LUSTRE, 0) == min(sched.estimate(j).rate, sched.R_limit)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(states())
def test_io_aware_never_plans_over_the_limit(state):
    nb_hosts, running, waiting, options = state
    sched = make(RecIoAware, nb_hosts, **options)
    one_round(sched, running, waiting)
    check_limit(sched, sched.tracker, {j.id for j, _, _ in running}, waiting)


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(states(), st.booleans())
def test_zero_estimates_behave_as_backfill(state, pretrained_zero):
    nb_hosts, running, waiting, options = state
    backfill_options = {"backfill_max": options["backfill_max"]}
    if pretrained_zero:   # every type known, at rate 0
        zero = {app: dict(values, rate=0) for app, values in options["history"].items()}
        io_options = dict(backfill_options, estimator="pretrained", history=zero)
    else:                 # untrained: nothing known yet
        io_options = dict(backfill_options)
    expected = one_round(make(Backfill, nb_hosts, **backfill_options), running, waiting)
    for cls in (IoAware, WorkloadAdaptive):
        assert one_round(make(cls, nb_hosts, **io_options), running, waiting) == expected


# -- through the embedded engine --------------------------------------------------------

def writers_and_sleepers(path):
    """8 one-host writers (2 GB to the 1 GB/s storage host) and 8 20-s sleeps, all at 0."""
    jobs = [{"id": i, "subtime": 0.0, "walltime": 100, "res": 1, "profile": "write", "app": "write"}
            for i in range(8)]
    jobs += [{"id": 8 + i, "subtime": 0.0, "walltime": 100, "res": 1, "profile": "sleep", "app": "sleep"}
             for i in range(8)]
    profiles = {"write": {"type": "parallel_homogeneous_pfs", "bytes_to_write": 2e9, "storage": "pfs"},
                "sleep": {"type": "delay", "delay": 20}}
    path.write_text(json.dumps({"nb_res": 16, "jobs": jobs, "profiles": profiles}))


def max_concurrent_writers(out):
    jobs = pd.read_csv(out / "out_jobs.csv")
    assert set(jobs["final_state"]) == {"COMPLETED_SUCCESSFULLY"}
    writers = jobs[jobs["profile"] == "write"]
    events = sorted([(t, 1) for t in writers["starting_time"]] + [(t, -1) for t in writers["finish_time"]],
                    key=lambda event: (event[0], event[1]))
    level = peak = 0
    for _, step in events:
        level += step
        peak = max(peak, level)
    return peak


@pytest.fixture(scope="module")
def engine_runs(tmp_path_factory):
    """Pretrain on the workload, then run EASY, IoAware and WorkloadAdaptive."""
    from batio.catalog import platform_path
    tmp = tmp_path_factory.mktemp("ioaware")
    workload = tmp / "w.json"
    writers_and_sleepers(workload)
    platform = str(platform_path("cluster16_pfs"))
    history = pretrain(platform, [str(workload)], out=str(tmp / "history.json"))
    pretrained = {"estimator": "pretrained", "history": str(tmp / "history.json")}
    runs = {"easy": ("easy", {}),
            "io_aware": ("schedulers/workload_adaptive/ioAware.py", dict(pretrained, limit=1.5, backfill_max=1)),
            # R_limit at its default (Stria's), given: cluster16_pfs is not the platform it describes.
            "adaptive_naive": ("schedulers/workload_adaptive/workloadAdaptive.py",
                               dict(pretrained, two_group=False, limit=20)),
            "adaptive": ("schedulers/workload_adaptive/workloadAdaptive.py", dict(pretrained, limit=20))}
    outs = {}
    for name, (scheduler, options) in runs.items():
        out = tmp / name
        assert main(["run", "--platform", platform, "--workload", str(workload), "--scheduler", _here(scheduler),
                     "--options", json.dumps(options), "--out", str(out), "--quiet"]) == 0
        outs[name] = out
    return history, outs


def _here(scheduler):
    from pathlib import Path
    return str(Path(__file__).resolve().parent.parent / scheduler) if scheduler.endswith(".py") else scheduler


def test_pretrain_runs_each_app_alone(engine_runs):
    history, _ = engine_runs
    apps = history["apps"]
    assert set(apps) == {"write", "sleep"}
    # Alone, a writer has the 1 GB/s storage link to itself: about 2 s.
    assert apps["write"]["rate"] == pytest.approx(1e9, rel=0.01)
    assert apps["write"]["runtime"] == pytest.approx(2.0, rel=0.01)
    assert apps["sleep"] == {"rate": 0.0, "runtime": pytest.approx(20.0), "bytes": 0.0, "job": "w0!8"}


def test_io_aware_keeps_fewer_writers_concurrent_than_easy(engine_runs):
    # Limit 1.5 GiB/s = 1.61e9 B/s; a writer is estimated at ~1e9 B/s: one at a time.
    _, outs = engine_runs
    assert max_concurrent_writers(outs["easy"]) == 8
    assert max_concurrent_writers(outs["io_aware"]) == 1


def test_adaptive_target_throttles_writers_through_the_engine(engine_runs):
    # Limit 20 GiB/s never binds. At t=0: R~ = 16 * 8 * (1e9 * 2) / (8 * 2 + 8 * 20)
    # = 1.45e9 B/s; the sleeps hold 160 of 176 node-s, so r* = 0 and R~' = R~;
    # theta 0.5 admits a writer (r' = 1e9) while AT <= 1.45e9 - 0.5e9: one writer.
    # Naive (two_group false): at each later round the 7, 6, ... queued
    # writers give R~ ~ 1.4e9 again: one writer at a time.
    # Two-group: once only writers are queued they are all "zero jobs" (eq. 2:
    # they hold all the queued node-hours), so the 7 left start together.
    _, outs = engine_runs
    assert max_concurrent_writers(outs["adaptive_naive"]) == 1
    assert max_concurrent_writers(outs["adaptive"]) == 7
