"""The locality-aware policies of paper 004 (``schedulers/locality/locality.py``) and
their node model (``batio.schedulers.locality.nodememory``, ``coreplan``, ``fileplan``): hand-computed cases, then whole
runs on the embedded engine."""

import math
import random

from batsim.batsim import Job
from hypothesis import given, settings
from hypothesis import strategies as st
import numpy as np
import pytest

from batio.errors import BatioError, SchedulerError
from batio.schedulers.locality import fileplan, locality, placement, scores
from batio.schedulers.locality.authorsholes import AuthorsHoles, HoleGate
from batio.schedulers.locality.coreplan import CoreAvailability, CoreProfile, _first_windows, plan_cores
from batio.schedulers.locality.deadlines import CALL_MARGIN, DeadlineCalls
from batio.schedulers.locality.fileplan import FilePlan
from batio.schedulers.locality.jobs import UserJob, WaitingQueue
from batio.schedulers.locality.locality import Locality
from batio.schedulers.locality.models import AuthorsCode, ExpectedCompletions
from batio.schedulers.locality.nodememory import CoreLedger, LoadCase, NodeMemory, load_seconds, truncated_load_seconds
from batio.schedulers.locality.plan import PinnedRows, Plan
from batio.schedulers.locality.scores import NodeScores
from batio.schedulers.locality.walk import QueueWalk
from batio.schedulers.reservation import Slot

SCHEDULER = locality.__file__
BANDWIDTH = 100.0      # bytes/s: a 1000-byte file loads in 10 s
MEMORY = 4000.0
CORES = 4


# -- the node model -------------------------------------------------------------

def test_three_file_availability_cases_on_one_node():
    memory = NodeMemory(1, MEMORY, BANDWIDTH)
    # Case 2: not in memory, loaded from t_k = 0: t'_k = 0 + 1000 / 100.
    assert memory.start_job(0, "a", "F", 1000, now=0, planned_end=100)[0] == LoadCase.NOT_IN_MEMORY
    plan = FilePlan(memory, now=5)
    t_k = np.array([5.0])
    # Case 3: being loaded by a job started at 0: t'_k = 0 + 10, not 5 + 10.
    assert plan.case(0, "F", 5) == LoadCase.BEING_LOADED
    assert plan.availability("F", 1000, t_k)[0] == 10
    assert plan.availability("G", 1000, t_k)[0] == 15          # case 2 for another file
    assert memory.start_job(0, "b", "F", 1000, now=5, planned_end=100)[0] == LoadCase.BEING_LOADED
    assert memory.load_finished(0, "F") == ["a", "b"]
    # Case 1: in memory, t'_k = t_k.
    plan = FilePlan(memory, now=20)
    assert plan.case(0, "F", 20) == LoadCase.IN_MEMORY
    assert plan.availability("F", 1000, np.array([20.0]))[0] == 20
    assert memory.start_job(0, "c", "F", 1000, now=20, planned_end=100)[0] == LoadCase.IN_MEMORY


def test_eviction_frees_cached_files_of_other_jobs_at_the_next_start():
    memory = NodeMemory(1, MEMORY, BANDWIDTH)
    for job, file in (("f", "F"), ("g", "G")):
        memory.start_job(0, job, file, 1000, now=0, planned_end=100)
        memory.load_finished(0, file)
    memory.end_job(0, "f", "F", now=50)
    # F is cached, G in use: both stay in memory while no job starts, even idle.
    assert memory.files(0) == {"F", "G"} and memory.bytes_used(0) == 2000
    case, evicted = memory.start_job(0, "h", "H", 1500, now=500, planned_end=600)
    # Section 3: a job started in between evicts the cached F, not G in use.
    assert (case, evicted) == (LoadCase.NOT_IN_MEMORY, ["F"])
    assert memory.files(0) == {"G", "H"} and memory.bytes_used(0) == 2500
    memory.end_job(0, "g", "G", now=600)
    # A job of the cached file re-uses it, and still evicts the other cached ones.
    memory.load_finished(0, "H")
    memory.end_job(0, "h", "H", now=610)
    memory.start_job(0, "g2", "G", 1000, now=700, planned_end=800)
    assert memory.files(0) == {"G"}


def test_plan_keeps_a_cached_file_until_a_job_of_another_file_is_planned_on_the_node():
    memory = NodeMemory(1, MEMORY, BANDWIDTH)
    memory.start_job(0, "f", "F", 1000, now=0, planned_end=100)
    memory.load_finished(0, "F")
    memory.end_job(0, "f", "F", now=50)
    plan = FilePlan(memory, now=60)
    assert plan.case(0, "F", 300) == LoadCase.IN_MEMORY
    plan.record(0, "G", 1000, t_k=200, t_prime=210, end=250)
    assert plan.case(0, "F", 150) == LoadCase.IN_MEMORY
    assert plan.case(0, "F", 300) == LoadCase.NOT_IN_MEMORY


def test_a_planned_start_evicts_a_file_whose_planned_use_ends_at_that_instant():
    memory = NodeMemory(1, MEMORY, BANDWIDTH)
    memory.start_job(0, "f", "F", 1000, now=0, planned_end=100)
    memory.load_finished(0, "F")
    plan = FilePlan(memory, now=60)
    plan.record(0, "F", 1000, t_k=100, t_prime=100, end=200)   # F in use until 200
    plan.record(0, "G", 1000, t_k=200, t_prime=210, end=250)   # F no longer in use: G's start evicts it
    plan.record(0, "K", 1000, t_k=220, t_prime=230, end=260)   # a later start does not keep it longer
    assert plan.case(0, "F", 200) == LoadCase.IN_MEMORY
    assert plan.case(0, "F", 201) == LoadCase.NOT_IN_MEMORY
    plan.record(0, "H", 1000, t_k=199, t_prime=209, end=300)   # F still in use at 199: not evicted then
    assert plan.case(0, "F", 200) == LoadCase.IN_MEMORY


def test_a_copy_planned_before_a_start_of_another_file_planned_earlier_is_evicted_there():
    """Backfilling plans out of time order: F's copy, planned after G's start
    at 300 was, stays cached after its use until that start (the planned
    starts, ``PlannedStarts.first_other``)."""
    memory = NodeMemory(1, MEMORY, BANDWIDTH)
    plan = FilePlan(memory, now=0)
    plan.record(0, "G", 1000, t_k=300, t_prime=310, end=400)
    plan.record(0, "F", 1000, t_k=100, t_prime=110, end=200)
    assert plan.case(0, "F", 299) == LoadCase.IN_MEMORY
    assert plan.case(0, "F", 300) == LoadCase.NOT_IN_MEMORY


# -- the authors' code (``file_retention: in_use``, ``authors_code``) -------------------

def test_without_retention_a_file_serves_only_a_start_in_the_second_its_last_user_ends():
    memory = NodeMemory(1, MEMORY, BANDWIDTH, retain_cached=False)
    memory.start_job(0, "f", "F", 1000, now=0, planned_end=100)
    memory.load_finished(0, "F")
    memory.end_job(0, "f", "F", now=50)
    assert memory.start_job(0, "g", "F", 1000, now=50, planned_end=150)[0] == LoadCase.IN_MEMORY
    memory.end_job(0, "g", "F", now=60)
    assert FilePlan(memory, now=60).case(0, "F", 60) == LoadCase.IN_MEMORY       # still there in the second g ended...
    assert FilePlan(memory, now=61).case(0, "F", 61) == LoadCase.NOT_IN_MEMORY   # ...gone one second later
    # and not counted by EvictionPenalty any more: 1000 B x (2000 / 4000) / 100 B/s = 5 s, then 0.
    assert list(FilePlan(memory, now=60).eviction_penalty("G", 2000, np.array([60.0]), np.array([0]))) == [5]
    assert list(FilePlan(memory, now=61).eviction_penalty("G", 2000, np.array([61.0]), np.array([0]))) == [0]
    assert memory.start_job(0, "h", "F", 1000, now=61, planned_end=200)[0] == LoadCase.NOT_IN_MEMORY
    assert memory.files(0) == {"F"}          # the stale copy was dropped, F loads again


def test_without_retention_a_plan_sees_a_file_until_its_last_planned_use_only():
    memory = NodeMemory(1, MEMORY, BANDWIDTH, retain_cached=False)
    memory.start_job(0, "g", "G", 1000, now=0, planned_end=100)
    memory.load_finished(0, "G")
    plan = FilePlan(memory, now=20)
    assert plan.case(0, "G", 100) == LoadCase.IN_MEMORY
    assert plan.case(0, "G", 101) == LoadCase.NOT_IN_MEMORY
    # The authors' EvictionPenalty counts G once its use has ended by t_k:
    # 1000 B x (2000 / 4000) / 100 B/s = 5 s at t_k = 150, nothing at 50.
    penalty = plan.eviction_penalty
    assert list(penalty("F", 2000, np.array([150.0]), np.array([0]))) == [5]
    assert list(penalty("F", 2000, np.array([50.0]), np.array([0]))) == [0]


def test_the_authors_use_of_a_file_ends_at_the_latest_planned_end_of_any_job_since_its_load():
    # src/basic_functions.c, add_data_in_node: a copy's end_time only grows
    # while it has users, even past the planned end of a user that ended.
    def with_early_end(stale):
        memory = NodeMemory(1, MEMORY, BANDWIDTH, retain_cached=False, stale_use_end=stale)
        memory.start_job(0, "long", "F", 1000, now=0, planned_end=500)
        memory.start_job(0, "short", "F", 1000, now=0, planned_end=100)
        memory.load_finished(0, "F")
        memory.end_job(0, "long", "F", now=20)      # ended long before its walltime
        return memory
    # Planned at t_k = 200, a job of G sees F in use by the authors' rule
    # (until 500: nothing to evict) and F ended by batio's (1000 B x 2000 /
    # 4000 / 100 B/s = 5 s of EvictionPenalty).
    for stale, penalty in ((True, 0), (False, 5)):
        plan = FilePlan(with_early_end(stale), now=20)
        assert list(plan.eviction_penalty("G", 2000, np.array([200.0]), np.array([0]))) == [penalty]
    # Once its last user ends, the copy's use ends then, as in batio.
    memory = with_early_end(True)
    memory.end_job(0, "short", "F", now=30)
    assert FilePlan(memory, now=30).case(0, "F", 30) == LoadCase.IN_MEMORY
    assert FilePlan(memory, now=31).case(0, "F", 31) == LoadCase.NOT_IN_MEMORY
    # A copy started again in that second counts from its new users only.
    memory.start_job(0, "next", "F", 1000, now=30, planned_end=60)
    assert list(FilePlan(memory, now=30).eviction_penalty("G", 2000, np.array([200.0]), np.array([0]))) == [5]


def test_authors_code_reads_each_jobs_delay_and_names_a_job_without_a_profile():
    from types import SimpleNamespace

    def user_job(profile_name, profile):
        return SimpleNamespace(id="w0!7", job=SimpleNamespace(profile=profile_name, profile_dict=profile))
    assert AuthorsCode.run_time(user_job("delay12", {"type": "delay", "delay": 12})) == 12
    assert AuthorsCode.run_time(user_job("io", {"type": "parallel_homogeneous_pfs"})) == math.inf
    with pytest.raises(SchedulerError, match=r"job w0!7: .* no profile 'delay12'"):
        AuthorsCode.run_time(user_job("delay12", {}))


def test_the_authors_load_time_is_truncated_in_single_precision():
    # 13 cores of 20 x 128 GB = 83.2 GB at 0.1 GB/s: 831.99994 s in float, 831 s in their int.
    assert truncated_load_seconds(1e8)(83.2e9) == 831
    assert truncated_load_seconds(1e8)(128e9) == 1280
    assert load_seconds(1e8)(83.2e9) == pytest.approx(832)


def test_the_authors_case_3_overhead_counts_from_now():
    memory = NodeMemory(1, MEMORY, BANDWIDTH)
    memory.start_job(0, "a", "F", 1000, now=0, planned_end=100)     # loading F until 10
    t_k = np.array([8.0])
    assert FilePlan(memory, now=5).availability("F", 1000, t_k)[0] == 10          # the paper: 10
    assert FilePlan(memory, now=5, overhead_from_now=True).availability("F", 1000, t_k)[0] == 8 + 10 - 5


def test_leo_in_the_authors_code_scores_every_node_after_the_first_free_one_like_eft():
    # Node 0 free now, node 1 busy until 130 (file absent), node 2 free now;
    # F (20 s to load) nowhere. The paper scores node 1 as LEA: 130 + 500 x 20.
    memory, ledger = NodeMemory(3, MEMORY, BANDWIDTH), CoreLedger(3, CORES)
    ledger.start("x", 1, 4, 130.0)
    plan = plan_at(memory, ledger, 100)
    paper = NodeScores(scheduler(policy="leo"), plan, job_j(), 100, "leo").score()
    authors = NodeScores(scheduler(policy="leo", authors_code=True), plan, job_j(), 100, "leo").score()
    assert list(paper) == [120, 130 + 500 * 20, 120]
    assert list(authors) == [120, 130 + 20, 120]


# -- scores on a hand-built cluster (3 nodes of 4 cores) ---------------------------

def hand_built_cluster():
    """At now = 100: node 0 idle with H (1000 B) cached; node 1 runs x (4
    cores, F) until 130; node 2 runs y (2 cores, G) until 110, 2 cores free."""
    memory, ledger = NodeMemory(3, MEMORY, BANDWIDTH), CoreLedger(3, CORES)
    for node, job, file, size, cores, start, end in ((0, "h", "H", 1000, 1, 0, 60), (1, "x", "F", 2000, 4, 60, 130),
                                                     (2, "y", "G", 2000, 2, 90, 110)):
        memory.start_job(node, job, file, size, now=start, planned_end=end)
        memory.load_finished(node, file)
        ledger.start(job, node, cores, end)
    memory.end_job(0, "h", "H", now=50)
    ledger.end("h")
    return memory, ledger


def scheduler(**options):
    sched = Locality(options)
    sched.host_ids = [0, 1, 2]
    return sched


def job_j():
    """J: 2 cores, file F (2000 B: 20 s to load), walltime 50."""
    job = Job("w0!j", 0, 50, 1, "p", {})
    return UserJob(job, cores=2, walltime=50.0, file="F", size=2000.0, history_node=None)


def plan_at(memory, ledger, now, backfill=False):
    return Plan(plan_cores(ledger, now, backfill), FilePlan(memory, now), ledger.busy_nodes(), [])


def test_lea_terms_on_a_hand_computed_example():
    memory, ledger = hand_built_cluster()
    plan = plan_at(memory, ledger, 100)
    t_k = plan.cores.earliest(2, 50)
    assert list(t_k) == [100, 130, 100]
    t_prime = plan.files.availability("F", 2000, t_k)
    assert list(t_prime) == [120, 130, 120]       # F loaded on node 1, in use until 130
    # EvictionPenalty = (sum of the evictable files) x 2000 / 4000 / 100:
    # node 0 drops the cached H (1000 B); G on node 2 is in use at 100.
    penalty = plan.files.eviction_penalty("F", 2000, t_k, np.arange(3))
    assert list(penalty) == [5, 0, 0]
    # score = t_k + W x LoadOverhead + EvictionPenalty; with W = 500 the
    # penalty is only computed where it can change the choice (node 1 wins).
    score = NodeScores(scheduler(policy="lea", W=1), plan, job_j(), 100, "lea").score()
    assert list(score) == [100 + 20 + 5, 130, 100 + 20]
    score = NodeScores(scheduler(policy="lea"), plan, job_j(), 100, "lea").score()
    assert score[1] == 130 and score.min() == 130 and list(score[[0, 2]]) >= [100 + 500 * 20] * 2


@pytest.mark.parametrize("options, node", [
    ({"policy": "fcfs"}, 0),                      # smallest t_k, first node
    ({"policy": "eft"}, 0),                       # smallest t'_k = 120, first node
    ({"policy": "lea"}, 1),                       # re-use F at 130: score 130
    ({"policy": "lea", "W": 1}, 2),               # 120 + 0 beats 120 + 5 (penalty) and 130
    ({"policy": "lea", "W": 1, "eviction_weight": 0}, 0),
    ({"policy": "leo"}, 0),                       # t_k = now on nodes 0 and 2: score t'_k
    ({"policy": "lem"}, 0),                       # 2 of 3 nodes busy < 80 %: EFT
    ({"policy": "lem", "busy_threshold": 0.6}, 1),   # 67 % >= 60 %: LEA
])
def test_each_policy_chooses_the_hand_computed_node(options, node):
    memory, ledger = hand_built_cluster()
    sched, plan = scheduler(**options), plan_at(memory, ledger, 100)
    chosen, t_k, t_prime = NodeScores(sched, plan, job_j(), 100, sched.policy_now(plan)).best()
    assert chosen == node
    assert (t_k, t_prime) == {0: (100, 120), 1: (130, 130), 2: (100, 120)}[node]


# -- conservative backfilling --------------------------------------------------------

def usage(held_until, reservations, node, t, now):
    """Cores of ``node`` busy at t: started jobs, then planned reservations."""
    started = sum(1 for end in held_until[node] if end > t and end > now)
    return started + sum(cores for k, cores, start, end in reservations if k == node and start <= t < end)


@settings(max_examples=60, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 2), st.integers(1, 4), st.integers(0, 40)), max_size=12),
       st.lists(st.tuples(st.integers(1, 4), st.integers(1, 30)), min_size=1, max_size=25))
def test_backfilling_never_delays_an_earlier_reservation(running, jobs):
    """Jobs planned in turn each get the earliest window that fits beside
    the started jobs and every earlier reservation, which all keep theirs."""
    now, ledger = 0.0, CoreLedger(3, CORES)
    for i, (node, cores, end) in enumerate(running):
        if (ledger.held[node] == -math.inf).sum() >= cores and end > now:
            ledger.start(f"r{i}", node, cores, float(end))
    profile = plan_cores(ledger, now, backfill=True)
    reservations: list
    held, reservations = ledger.held.copy(), []
    for cores, walltime in jobs:
        t_k = profile.earliest(cores, walltime)
        for node in range(3):
            instants = sorted({now, *(end for row in held for end in row if end > now),
                               *(t for r in reservations for t in r[2:])})

            def fits(start, node=node, cores=cores, instants=instants, walltime=walltime):
                return all(usage(held, reservations, node, t, now) + cores <= CORES
                           for t in instants + [start] if start <= t < start + walltime)
            earliest = min(t for t in instants if fits(t))
            assert t_k[node] == earliest
        node = int(np.argmin(t_k))
        profile.reserve(node, cores, float(t_k[node]), float(t_k[node]) + walltime)
        reservations.append((node, cores, float(t_k[node]), float(t_k[node]) + walltime))
        for k in range(3):
            assert all(usage(held, reservations, k, t, now) <= CORES
                       for t in {now, *(r[2] for r in reservations)})


def test_without_backfilling_a_job_takes_the_earliest_cores_from_later_jobs():
    ledger = CoreLedger(1, CORES)
    ledger.start("r", 0, 2, 300.0)
    cores = CoreAvailability(ledger.availability(0), 0)
    assert cores.earliest(4, 50)[0] == 300
    cores.reserve(0, 4, 300, 350)
    assert cores.earliest(2, 50)[0] == 350         # the 2 idle cores went to the reservation
    profile = CoreProfile(ledger.availability(0), 0)
    profile.reserve(0, 4, 300, 350)
    assert profile.earliest(2, 50)[0] == 0         # ...but fit before it with backfilling


def test_a_core_profile_holes_and_a_row_put_back():
    """hole_lengths: per number of cores, how long the longest hole open now
    lasts; put_rows: a row kept at an earlier now comes back with that now
    moved to the plan's."""
    profile = CoreProfile(np.array([[0.0, 0.0, 10.0, 20.0], [0.0, 0.0, 0.0, 0.0]]), 0.0)
    profile.reserve(1, 3, 5.0, 15.0)
    # Node 0 keeps 1 and 2 cores for good, has 3 only from 10; node 1 has 4
    # until 5, then 1 until 15.
    assert profile.hole_lengths().tolist() == [0, math.inf, math.inf, 5, 5]
    kept = profile.row(1)
    later = CoreProfile(np.array([[2.0] * 4, [2.0, 50.0, 50.0, 50.0]]), 2.0)
    later.put_rows(np.array([0]), CoreProfile.gather_rows([kept], [0.0]))
    assert later.earliest(3, 3.0)[0] == 2.0    # 3 cores from 2 to 5...
    assert later.earliest(3, 4.0)[0] == 15.0   # ...not for 4 s
    assert later.hole_lengths().tolist() == [0, math.inf, 3, 3, 3]


def test_the_authors_backfilling_fills_only_holes_opening_now():
    # One node of 4 cores: cores 0 and 1 busy until 100, 2 and 3 free.
    held = np.array([[100.0, 100.0, -math.inf, -math.inf]])
    holes = AuthorsHoles(held, 0.0, HoleGate())
    assert holes.earliest(4, 50.0)[0] == 100                  # A: the 4th earliest core
    assert holes.reserve(0, 4, 100.0, 150.0) == [0, 1, 2, 3]   # lowest ids; 2 and 3 now a hole until 100
    assert holes.holes[0] == [(100.0, 2), (100.0, 3)]
    assert holes.earliest(2, 120.0)[0] == 150                 # C: longer than the hole, after A
    assert holes.earliest(2, 60.0)[0] == 0                    # B: fits in the hole
    assert holes.reserve(0, 2, 0.0, 60.0) == [2, 3]
    assert holes.holes[0] == [] and holes.avail[0].tolist() == [150, 150, 150, 150]   # A keeps its cores


# -- the early stop of a round is exact ---------------------------------------------

def random_state(rng, nb_nodes=6):
    memory, ledger = NodeMemory(nb_nodes, MEMORY, BANDWIDTH), CoreLedger(nb_nodes, CORES)
    files = [f"f{i}" for i in range(5)]
    for i in range(rng.randint(0, 14)):
        node, cores = rng.randrange(nb_nodes), rng.randint(1, CORES)
        if (ledger.held[node] == -math.inf).sum() < cores:
            continue
        file, end = rng.choice(files), float(rng.randint(1, 400))
        case, _ = memory.start_job(node, f"r{i}", file, 1000.0 * cores, now=0, planned_end=end)
        if case == LoadCase.NOT_IN_MEMORY and rng.random() < 0.7:
            memory.load_finished(node, file)
        ledger.start(f"r{i}", node, cores, end)
    queue: list = []
    for _ in range(rng.choice([0, 0, 1, 3])):   # category -2 jobs, pinned to their history node, come first
        cores, file = rng.randint(1, CORES), rng.choice(files)
        queue.append(UserJob(Job(f"w0!{len(queue)}", len(queue), 0, 1, "p", {}), cores=cores,
                             walltime=float(rng.randint(5, 300)), file=file, size=1000.0 * cores,
                             history_node=rng.randrange(nb_nodes), history_start=-1.0))
    while len(queue) < 25 and rng.random() < 0.9:   # bursts of alike jobs, as users submit them
        cores, walltime, file = rng.randint(1, CORES), float(rng.randint(5, 300)), rng.choice(files)
        queue += [UserJob(Job(f"w0!{len(queue) + i}", len(queue) + i, 0, 1, "p", {}), cores=cores,
                          walltime=walltime, file=file, size=1000.0 * cores, history_node=None)
                  for i in range(rng.randint(1, 4))]
    return memory, ledger, queue


def fresh_windows(profile, cores, walltime):
    """CoreProfile.earliest without the answers it keeps between calls."""
    return _first_windows(profile.times[:, :profile.used], profile.free[:, :profile.used], cores, walltime)


def pinned_scored_on_every_node(placement, job, latest):
    """``Placement.pinned_start`` the long way: the job scored on every
    node, its t_k infinite but on its history node."""
    cores, node = placement.plan.cores, job.history_node
    t_k = np.full(len(placement.plan.busy), math.inf)
    t_k[node] = cores.earliest_on(node, job.cores, job.walltime)
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(cores, "earliest", lambda cores_needed, walltime: t_k.copy())
        scores = NodeScores(placement.scheduler, placement.plan, job, placement.now,
                            placement.scheduler.policy_now(placement.plan))
    placement.scores = None
    placement.node, start, placement.t_prime = scores.best()
    if placement.node is None or (latest is not None and start > latest):
        return None
    return Slot(start, placement.scheduler.node_hosts[placement.node])


@pytest.mark.parametrize("policy", ["fcfs", "eft", "lea", "leo", "lem"])
@pytest.mark.parametrize("backfill", [False, True])
@pytest.mark.parametrize("authors_code", [False, True])
def test_the_shortcuts_of_a_round_change_no_decision(policy, backfill, authors_code, monkeypatch):
    """Stopping once no job left can start now, re-scoring alike jobs on one
    node (keeping the other nodes' scores, the smallest score and LEO's
    sticky switch), computing EvictionPenalty only where it can win,
    keeping the core windows found for earlier jobs, and placing a pinned
    job on its history node unscored decide as planning every job on every
    node from scratch would."""
    rng = random.Random(f"{policy}{backfill}{authors_code}")
    for _ in range(20):
        memory, ledger, queue = random_state(rng)
        sched = scheduler(policy=policy, backfill=backfill, W=rng.choice([1, 500]),
                          busy_threshold=rng.choice([0.3, 0.8]), authors_code=authors_code)
        sched.host_ids = list(range(len(memory.copies)))
        sched.ledger, sched.memory = ledger, memory
        outcomes = []
        # All shortcuts; none but the early stop; none at all.
        for shortcuts, early_stop in ((True, True), (False, True), (False, False)):
            sched.hole_gate = HoleGate()   # the authors' gate outlives a plan: start each way afresh
            sched.pinned_rows = PinnedRows()   # so do the rows kept after pinned jobs
            plan = Plan(sched.core_plan(1.0), FilePlan(memory, 1.0), ledger.busy_nodes(), list(queue))
            with monkeypatch.context() as patch:
                if shortcuts:   # a burst's heaps from its first rescore: the bursts here are short
                    patch.setattr(scores, "HEAP_AFTER", 0)
                if not early_stop:
                    patch.setattr(type(plan.cores), "last_candidate", lambda self, cores, walltimes: len(cores) - 1,
                                  raising=False)
                if not early_stop:
                    patch.setattr(QueueWalk, "__iter__", lambda self: self.walk(cut=False))
                if not shortcuts:
                    patch.setattr(NodeScores, "alike", lambda self, job, policy: False)
                    patch.setattr(placement.Placement, "pinned_start", pinned_scored_on_every_node)
                    patch.setattr(fileplan, "FEW_NODES", 0)   # every EvictionPenalty the numpy way
                    patch.setattr(FilePlan, "eviction_penalty_bound", lambda self, size: math.inf)
                    patch.setattr(CoreProfile, "earliest", fresh_windows)
                    patch.setattr(CoreProfile, "earliest_on",
                                  lambda self, node, cores, walltime: float(fresh_windows(self, cores, walltime)[node]))
                examined, to_start = sched.plan_queue(plan, 1.0)
            cores = plan.cores   # every reservation made, not only the jobs started now
            if isinstance(cores, CoreProfile):
                reserved = (cores.times[:, :cores.used].tolist(), cores.free[:, :cores.used].tolist())
            else:
                reserved = (cores.avail.tolist(), getattr(cores, "holes", None))
            outcomes.append(([(job.id, node, ids) for job, (node, ids) in to_start], examined, reserved))
        assert outcomes[0] == outcomes[1]
        assert outcomes[0][0] == outcomes[2][0]


def plan_state(plan):
    """Every reservation of a plan: its cores, its files' slots, the jobs left."""
    cores, files = plan.cores, plan.files
    if isinstance(cores, CoreProfile):
        core_state = (cores.times[:, :cores.used].tolist(), cores.free[:, :cores.used].tolist())
    else:
        core_state = cores.avail.tolist()
    if isinstance(files, FilePlan):
        starts = [(times.tolist(), ids.tolist()) for times, ids in map(files.starts.row, range(len(plan.busy)))]
        file_state = ([getattr(files.slots, name).tolist() for name, _ in files.slots.FIELDS], files.new_slots,
                      starts, files.row_bytes_max)
    else:
        file_state = None
    return core_state, file_state, [job.id for job in plan.pending]


@pytest.mark.parametrize("policy", ["eft", "lea", "lem"])
@pytest.mark.parametrize("backfill", [False, True])
def test_a_cut_walk_and_its_rest_plan_as_the_whole_walk(policy, backfill):
    """batio's walk, cut where no job left can start now, starts the same
    jobs as the whole walk; its rest, planned at the next round after the
    started jobs changed the nodes' memory (loads, evictions), leaves the
    plan the whole walk left: every core and file reservation, the jobs
    left."""
    rng = random.Random(f"cut{policy}{backfill}")
    cuts = 0
    for _ in range(40):
        memory, ledger, queue = random_state(rng)
        for node, copies in enumerate(memory.copies):   # some files only cached: a start evicts them
            for file, copy in list(copies.items()):
                for job_id in [job_id for job_id in copy.users if rng.random() < 0.5]:
                    memory.end_job(node, job_id, file, 0.5)
                    ledger.end(job_id)
        sched = scheduler(policy=policy, backfill=backfill, W=rng.choice([1, 500]), busy_threshold=0.5)
        sched.host_ids = list(range(len(memory.copies)))
        sched.ledger, sched.memory = ledger, memory
        whole = Plan(sched.core_plan(1.0), FilePlan(memory, 1.0), ledger.busy_nodes(), list(queue))
        with pytest.MonkeyPatch.context() as patch:
            patch.setattr(QueueWalk, "__iter__", lambda self: self.walk(cut=False))
            examined_whole, started_whole = sched.plan_queue(whole, 1.0)
        expected = plan_state(whole)
        sched.pinned_rows = PinnedRows()
        plan = Plan(sched.core_plan(1.0), FilePlan(memory, 1.0), ledger.busy_nodes(), list(queue))
        examined, started = sched.plan_queue(plan, 1.0)
        assert [(job.id, where) for job, where in started] == [(job.id, where) for job, where in started_whole]
        if plan.cut_walk is None:
            assert examined == examined_whole
            continue
        plan.files.freeze([node for _, (node, _) in started], [job.file for job, _ in started])
        for job, (node, _) in started:   # what launch does to the memory
            memory.start_job(node, job.id, job.file, job.size, 1.0, 1.0 + job.walltime)
        rest = sched.plan_rest(plan)
        assert examined + rest == examined_whole
        assert plan_state(plan) == expected
        cuts += rest > 0 and len(started) > 0
    assert cuts >= 5


@pytest.mark.parametrize("policy", ["fcfs", "lea", "lem"])
@pytest.mark.parametrize("backfill", [False, True])
def test_rows_kept_after_pinned_jobs_are_the_rows_planned_again(policy, backfill):
    """A node's row kept after its waiting category -2 jobs (``PinnedRows``)
    and put back at a later round equals planning them again there: the
    whole plan and the jobs started are the same, whether the node's jobs
    ended, its copies loaded, or its jobs passed their planned end
    between the two rounds."""
    class CountedRows(PinnedRows):
        put = gathered_again = 0

        def put_back(self, *args):
            gathered = self.gathered
            reused = super().put_back(*args)
            self.put += len(reused)
            self.gathered_again += bool(reused) and self.gathered is gathered
            return reused

    rng = random.Random(f"pinned{policy}{backfill}")
    put_back = gathered_again = 0
    for _ in range(40):
        memory, ledger, queue = random_state(rng)
        nb_nodes = len(memory.copies)
        pinned = [UserJob(Job(f"w0!p{i}", 0, 0, 1, "p", {}), cores=rng.randint(2, CORES),
                          walltime=float(rng.randint(5, 300)), file=rng.choice(["f0", "f1", "f9"]),
                          size=rng.choice([1000.0, 2500.0]), history_node=rng.randrange(nb_nodes), history_start=-1.0)
                  for i in range(rng.randint(1, 12))]
        queue = pinned + [job for job in queue if job.history_node is None]
        sched = scheduler(policy=policy, backfill=backfill, W=rng.choice([1, 500]), busy_threshold=0.5)
        sched.host_ids = list(range(nb_nodes))
        sched.ledger, sched.memory, sched.pinned_rows = ledger, memory, CountedRows()
        sched.plan_queue(Plan(sched.core_plan(1.0), sched.file_plan(1.0), ledger.busy_nodes(), list(queue)), 1.0)
        for node, copies in enumerate(memory.copies):   # between the rounds, on some nodes
            for file, copy in list(copies.items()):
                if not copy.loaded and rng.random() < 0.3:
                    memory.load_finished(node, file)
                for job_id in [job_id for job_id in copy.users if rng.random() < 0.15]:
                    memory.end_job(node, job_id, file, 2.0)
                    ledger.end(job_id)
        now = rng.choice([1.0, 3.5, 60.0, 250.0])
        outcomes, kept = [], sched.pinned_rows
        # The kept rows three times (the rows put back are gathered once, then
        # reused while the same), then none kept.
        for rows in (kept, kept, kept, CountedRows()):
            sched.pinned_rows = rows
            plan = Plan(sched.core_plan(now), sched.file_plan(now), ledger.busy_nodes(), list(queue))
            _, started = sched.plan_queue(plan, now)
            outcomes.append(([(job.id, where) for job, where in started], plan_state(plan)))
        assert outcomes[0] == outcomes[1] == outcomes[2] == outcomes[3]
        put_back += kept.put > 0
        gathered_again += kept.gathered_again
    assert put_back >= 10
    assert gathered_again >= 10


def test_pinned_jobs_are_grouped_again_once_they_change():
    """``PinnedRows.group`` reuses its grouping while the same jobs wait
    pinned, and groups them again once one has left (it started) or
    another came, even one with the same id."""
    def pinned(name, node):
        return UserJob(Job(f"w0!{name}", 0, 0, 1, "p", {}), cores=2, walltime=10.0, file="f", size=1.0,
                       history_node=node, history_start=-1.0)
    a, b, c = pinned("a", 0), pinned("b", 1), pinned("c", 0)
    rows = PinnedRows()
    assert rows.group([a, b, c]) == {0: ("w0!a", "w0!c"), 1: ("w0!b",)}
    assert rows.group([a, b, c]) == {0: ("w0!a", "w0!c"), 1: ("w0!b",)}
    assert rows.group([a, c]) == {0: ("w0!a", "w0!c")}
    assert rows.group([a]) == {0: ("w0!a",)}
    assert rows.group([a, pinned("c", 1)]) == {0: ("w0!a",), 1: ("w0!c",)}


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_waiting_queue_stays_in_queue_order(seed):
    """``WaitingQueue`` keeps its jobs in queue order as they come and
    leave: what sorting them by ``queue_key`` afresh gives, category -2
    jobs first."""
    rng = random.Random(f"queue{seed}")
    queue, made = WaitingQueue(), 0
    for _ in range(400):
        if queue.by_id and rng.random() < 0.4:
            queue.remove(rng.choice(list(queue.by_id.values())))
        else:
            made += 1
            running = rng.random() < 0.2
            job = Job(f"w{rng.randrange(2)}!{made}", rng.randrange(20), 0, 1, "p", {})
            queue.add(UserJob(job, cores=1, walltime=1.0, file="f", size=1.0,
                              history_node=0 if running else None,
                              history_start=float(rng.randrange(-20, 0)) if running else None))
        assert queue.ordered() == sorted(queue.by_id.values(), key=lambda job: job.queue_key)
        assert len(queue) == len(queue.by_id) and all(job_id in queue for job_id in queue.by_id)


@pytest.mark.parametrize("seed", [0, 1])
def test_counts_kept_by_a_plan_equal_counts_made_afresh(seed):
    """What a core plan keeps up to date as jobs are planned equals what it
    would count afresh: the nodes with a core free now (``free_now``, which
    both stops read) and the authors' ``biggest_hole`` after a job is
    planned on its node."""
    rng = random.Random(f"counts{seed}")
    for _ in range(30):
        _, ledger, queue = random_state(rng)
        now = rng.choice([1.0, 150.0])
        nb_nodes = len(ledger.held)
        gate = HoleGate()
        for cores in (CoreAvailability(ledger.availability(now), now), AuthorsHoles(ledger.held, now, gate)):
            for job in queue:
                node = rng.choice([0, 0, rng.randrange(nb_nodes)])   # ties go to node 0
                t_k = max(float(cores.earliest_core(job.cores)[node]), now)
                gate_node = gate.node
                cores.reserve(node, job.cores, t_k, t_k + job.walltime)
                assert cores.free_now == int((cores.earliest_core(1) <= now).sum())
                if isinstance(cores, AuthorsHoles) and node == gate_node:   # the authors' biggest_hole, recounted
                    counts = [len(cores.holes.get(other, ())) for other in range(nb_nodes)]
                    assert (gate.biggest, gate.node) == (max(counts), counts.index(max(counts)))
        profile = CoreProfile(ledger.availability(now), now)   # with backfilling: column 0 is now
        for job in queue:
            node = rng.randrange(nb_nodes)
            t_k = profile.earliest_on(node, job.cores, job.walltime)
            if t_k < math.inf:
                profile.reserve(node, job.cores, t_k, t_k + job.walltime)
            assert profile.free_now == int((profile.free[:, :profile.used][:, 0] > 0).sum())


@pytest.mark.parametrize("retain_cached", [False, True])
def test_eviction_penalty_node_by_node_equals_the_vector_way(retain_cached, monkeypatch):
    """EvictionPenalty computed node by node in Python floats (few nodes)
    equals numpy's on all nodes at once, to the last bit, at now and later,
    for files on some nodes, planned there or absent."""
    rng = random.Random(f"penalty{retain_cached}")
    compared = 0
    for _ in range(30):
        memory, ledger, queue = random_state(rng)
        memory.retain_cached = retain_cached
        ends = [float(end) for end in ledger.held.ravel() if end > 0]
        now = rng.choice([1.0, 150.0] + ends[:1])   # at a running job's end, a copy's use ends now
        files = FilePlan(memory, now)
        nodes = np.arange(len(memory.copies))
        for job in queue:   # planned copies beside the real ones
            node, t_k = rng.randrange(len(nodes)), now + rng.choice([0.0, 12.5, 200.0])
            files.record(node, job.file, job.size, t_k, t_k + 10.0, t_k + job.walltime)
            t_ks = np.array([rng.choice([now, now + 7.25, now + 180.0, math.inf]) for _ in nodes])
            reachable = nodes[t_ks < math.inf]
            file, size = rng.choice(["f0", "f3", "new"]), rng.choice([1000.0, 3000.0])
            node_by_node = files.eviction_penalty(file, size, t_ks, reachable)
            monkeypatch.setattr(fileplan, "FEW_NODES", 0)
            at_once = files.eviction_penalty(file, size, t_ks, reachable)
            monkeypatch.undo()
            np.testing.assert_array_equal(node_by_node, at_once)
            compared += int((at_once > 0).sum())
    assert compared > 0


@pytest.mark.parametrize("policy", ["fcfs", "eft", "lea", "leo"])
@pytest.mark.parametrize("backfill", [False, True])
@pytest.mark.parametrize("authors_code", [False, True])
def test_kept_scores_equal_scores_made_afresh(policy, backfill, authors_code):
    """``NodeScores.rescore`` after each job of a burst is planned leaves
    t_k, t'_k, the scores without EvictionPenalty and the chosen node equal
    to those of scoring the next job on every node afresh, and each score
    whose penalty both know equal too: the kept scores of the other nodes
    and the one-node arithmetic (``rescore_one``) are those of the vector
    methods, score by score, not only where a decision shows it."""
    rng = random.Random(f"kept{policy}{backfill}{authors_code}")
    compared = 0
    for _ in range(40):
        memory, ledger, _ = random_state(rng)
        sched = scheduler(policy=policy, backfill=backfill, W=rng.choice([1, 500]), authors_code=authors_code)
        sched.host_ids = list(range(len(memory.copies)))
        sched.ledger = ledger
        now = rng.choice([1.0, 2.5])
        # Loads of a fractional number of seconds, so that the authors' floor matters.
        job = UserJob(Job("w0!b", 0, 0, 1, "p", {}), cores=rng.randint(1, CORES), walltime=rng.choice([7.5, 120.0]),
                      file=f"f{rng.randrange(5)}", size=rng.choice([1050.0, 2730.0]), history_node=None)
        plan = Plan(sched.core_plan(now), FilePlan(memory, now, overhead_from_now=authors_code),
                    ledger.busy_nodes(), [])
        kept = NodeScores(sched, plan, job, now, policy)
        for _ in range(6):
            node, t_k, t_prime = kept.best()
            if node is None:
                break
            plan.cores.reserve(node, job.cores, t_k, t_k + job.walltime)
            plan.files.record(node, job.file, job.size, t_k, t_prime, t_k + job.walltime)
            kept.rescore(node)
            fresh = NodeScores(sched, plan, job, now, policy)
            for name in ("t_k", "t_prime", "base"):
                np.testing.assert_array_equal(getattr(kept, name), getattr(fresh, name), err_msg=name)
            assert kept.best() == fresh.best()
            both = kept.known & fresh.known if kept.penalised else np.ones(len(kept.scores), dtype=bool)
            np.testing.assert_array_equal(kept.scores[both], fresh.scores[both])
            compared += int(both.sum())
    assert compared > 0


# -- whole runs on the embedded engine -----------------------------------------------

# Batsim's 1-byte messages from a job's host to the server cross the node's
# link too: bytes are scaled up so that they take a microsecond, not 10 ms.
SCALE = 1e4

PLATFORM = f"""<?xml version='1.0'?>
<!DOCTYPE platform SYSTEM "https://simgrid.org/simgrid.dtd">
<platform version="4.1">
  <zone id="world" routing="Full">
    <cluster id="nodes" prefix="node" suffix="" radical="0-1" speed="1Gf" core="{CORES}"
             bw="{BANDWIDTH * SCALE:.0f}Bps" lat="0us" bb_bw="1TBps" bb_lat="0us">
      <prop id="cores" value="{CORES}"/>
      <prop id="memory_bytes" value="{MEMORY * SCALE:.0f}"/>
      <prop id="link_bandwidth" value="{BANDWIDTH * SCALE:.0f}"/>
    </cluster>
    <zone id="storage" routing="Full">
      <host id="pfs" speed="1Gf"><prop id="role" value="storage"/></host>
    </zone>
    <zone id="control" routing="Full">
      <host id="master_host" speed="1Gf"/>
    </zone>
    <link id="interconnect" bandwidth="1TBps" latency="0us"/>
    <zoneRoute src="nodes" dst="storage" gw_src="nodenodes_router" gw_dst="pfs">
      <link_ctn id="interconnect"/>
    </zoneRoute>
    <zoneRoute src="nodes" dst="control" gw_src="nodenodes_router" gw_dst="master_host">
      <link_ctn id="interconnect"/>
    </zoneRoute>
    <zoneRoute src="storage" dst="control" gw_src="pfs" gw_dst="master_host"><link_ctn id="interconnect"/></zoneRoute>
  </zone>
</platform>
"""


@pytest.fixture
def run(simulate_workload, tmp_path):
    platform = tmp_path / "two_nodes.xml"
    platform.write_text(PLATFORM)

    def simulate(jobs, **options):
        profiles = {f"d{job['delay']}": {"type": "delay", "delay": job["delay"]} for job in jobs}
        work = {"nb_res": 2, "profiles": profiles,
                "jobs": [{"id": job["id"], "subtime": job["subtime"], "walltime": job["walltime"], "res": 1,
                          "profile": f"d{job['delay']}", "cores": job["cores"], "file": job["file"],
                          "file_bytes": 1000 * SCALE, "category": 1, **job.get("extra", {})} for job in jobs]}
        result = simulate_workload(work, platform=platform, scheduler=SCHEDULER, options=options,
                                   compute_sharing=True, dynamic_jobs=True)
        table = result.jobs
        users = table[table.workload_name == "w0"]
        users.index = users.job_id.astype(str)
        loads = table[table.workload_name == "loads"]
        return users, loads

    return simulate


def approx(expected):
    return pytest.approx(expected, abs=1e-3)


def job(id, subtime, cores, file, delay, walltime, **extra):
    return {"id": id, "subtime": subtime, "cores": cores, "file": file, "delay": delay, "walltime": walltime,
            "extra": extra}


def meta(users, job_id):
    return dict(item.split("=") for item in users.loc[job_id, "metadata"].split(";"))


def test_a_file_loaded_once_is_reused_by_the_next_job_on_the_node(run):
    users, loads = run([job(1, 0, 2, "F", 100, 1000), job(2, 50, 2, "F", 100, 1000)], policy="lea")
    assert len(loads) == 1 and loads.iloc[0].execution_time == approx(10)
    assert users.loc["1", "starting_time"] == approx(10)      # after its 10 s load
    assert users.loc["2", "starting_time"] == approx(50)      # at once: F is in node 0's memory
    first, second = meta(users, "1"), meta(users, "2")
    assert float(first.pop("decided")) == approx(0) and float(second.pop("decided")) == approx(50)
    assert first == {"node": "0", "case": "2", "load": "loads!1", "reused": "0"}
    assert second == {"node": "0", "case": "1", "load": "", "reused": "1"}


def test_a_job_started_during_the_load_of_its_file_waits_for_that_load_only(run):
    users, loads = run([job(1, 0, 2, "F", 100, 1000), job(2, 4, 2, "F", 100, 1000)], policy="lea")
    assert len(loads) == 1
    assert users.loc["2", "starting_time"] == approx(10)
    assert meta(users, "2")["case"] == "3" and meta(users, "2")["load"] == "loads!1"


def test_rounds_are_at_least_round_interval_apart(run):
    # Rounds at 0 (job 1), then 30 (job 2, which arrived at 5), then 60 (job 3,
    # arrived at 40 < 30 + 30); loads ending in between trigger no round.
    users, _ = run([job(1, 0, 1, "F", 100, 1000), job(2, 5, 1, "G", 100, 1000), job(3, 40, 1, "H", 100, 1000)],
                   policy="fcfs", round_interval=30)
    assert [float(meta(users, str(i))["decided"]) for i in (1, 2, 3)] == approx([0, 30, 60])


def test_decision_times_keep_full_precision_in_the_metadata(run):
    users, _ = run([job(1, 123456.75, 1, "F", 100, 1000)], policy="fcfs")
    assert float(meta(users, "1")["decided"]) == approx(123456.75)


def test_two_loads_sharing_a_node_link_take_twice_as_long(run):
    users, loads = run([job(1, 0, 2, "F", 100, 1000), job(2, 0, 2, "G", 100, 1000)], policy="fcfs")
    assert {meta(users, "1")["node"], meta(users, "2")["node"]} == {"0"}
    assert list(loads.execution_time) == approx([20, 20])     # two files share one link
    assert list(users.starting_time) == approx([20, 20])


def test_with_the_papers_fixed_load_model_concurrent_loads_do_not_slow_each_other(run):
    users, loads = run([job(1, 0, 2, "F", 100, 1000), job(2, 0, 2, "G", 100, 1000)], policy="fcfs",
                       load_model="fixed")
    assert {meta(users, "1")["node"], meta(users, "2")["node"]} == {"0"}
    assert list(loads.execution_time) == approx([10, 10])     # S / B each
    assert list(users.starting_time) == approx([10, 10])


# A (4 cores, F) runs on node 0 over [10, 110), walltime to 200. B (4 cores,
# F) arrives at 1: node 1 can load F by 11, node 0 has F but its cores are
# reserved until 200. FCFS, EFT, LEO and LEM below 80 % busy nodes start B on
# node 1 at 1 (load, run over [11, 61)); LEA waits for node 0 and, replanned
# when A completes at 110, re-uses F there over [110, 160).
REUSE_CASE = [job(1, 0, 4, "F", 100, 200), job(2, 1, 4, "F", 50, 100)]


@pytest.mark.parametrize("options, start, node, decided", [
    ({"policy": "fcfs"}, 11, "1", 1),
    ({"policy": "eft"}, 11, "1", 1),
    ({"policy": "leo"}, 11, "1", 1),
    ({"policy": "lem"}, 11, "1", 1),
    ({"policy": "lea"}, 110, "0", 110),
    ({"policy": "lem", "busy_threshold": 0.5}, 110, "0", 110),
    ({"policy": "lea", "backfill": True}, 110, "0", 110),
    ({"policy": "eft", "backfill": True}, 11, "1", 1),
])
def test_schedule_of_each_policy_on_a_hand_computed_case(run, options, start, node, decided):
    users, loads = run(REUSE_CASE, **options)
    assert users.loc["1", "starting_time"] == approx(10)
    assert users.loc["2", "starting_time"] == approx(start)
    assert users.loc["2", "finish_time"] == approx(start + 50)
    assert meta(users, "2")["node"] == node and float(meta(users, "2")["decided"]) == approx(decided)
    assert len(loads) == (1 if node == "0" else 2)


# A (4 cores) holds node 0 until 400, A2 (2 cores) half of node 1 until 300
# (it runs over [10, 110)). B (4 cores) is reserved on node 1 at 300. C (2
# cores, walltime 50, at 12, once A2's load is over) fits beside B's
# reservation with backfilling: decided at 12, it runs over [22, 32);
# without, B's reservation took node 1's idle cores and C waits behind B.
# B is decided at 110, when A2 completes, in both.
BACKFILL_CASE = [job(1, 0, 4, "F", 300, 400), job(2, 0, 2, "G", 100, 300),
                 job(3, 1, 4, "H", 10, 50), job(4, 12, 2, "K", 10, 50)]


@pytest.mark.parametrize("backfill, c_start", [(True, 22), (False, 140)])
def test_conservative_backfilling_starts_a_job_early_without_delaying_the_reservation(run, backfill, c_start):
    users, _ = run(BACKFILL_CASE, policy="fcfs", backfill=backfill)
    assert users.loc["3", "starting_time"] == approx(120)     # B: decided at 110, loaded by 120
    assert users.loc["4", "starting_time"] == approx(c_start)


def test_without_retention_a_file_is_loaded_again_after_its_node_was_idle(run):
    jobs = [job(1, 0, 2, "F", 100, 1000), job(2, 200, 2, "F", 100, 1000)]
    users, _ = run(jobs, policy="lea", load_model="fixed")
    assert meta(users, "2")["case"] == "1"                    # the paper: F stayed in memory
    users, loads = run(jobs, policy="lea", load_model="fixed", file_retention="in_use")
    assert meta(users, "2")["case"] == "2" and len(loads) == 2
    assert users.loc["2", "starting_time"] == approx(210)


# Job 1 (category -2) holds all 4 cores of its history node 0 until its
# walltime 1000; job 2 (-2, same node) cannot start there before 1000; job 3
# starts on node 1 at 0 and completes at 10 + 5. Pinned until the first
# completion (the authors' code), job 2 then starts on node 1; pinned always,
# it waits for node 0, free when job 1 completes at 10 + 100.
HISTORY_CASE = [job(1, 0, 4, "F", 100, 1000, category=-2, history_node=0, history_start=-50),
                job(2, 0, 2, "G", 100, 1000, category=-2, history_node=0, history_start=-20),
                job(3, 0, 1, "H", 5, 1000)]


@pytest.mark.parametrize("pinning, decided, node", [("until_replan", 15, "1"), ("always", 110, "0")])
def test_running_jobs_stay_on_their_history_node_until_the_first_completion(run, pinning, decided, node):
    users, _ = run(HISTORY_CASE, policy="fcfs", history_pinning=pinning)
    assert float(meta(users, "2")["decided"]) == approx(decided) and meta(users, "2")["node"] == node


def test_running_jobs_are_queued_first_in_order_of_history_start(run):
    # Both -2 jobs want node 0 whole: the one history started first goes first.
    jobs = [job(1, 0, 4, "F", 100, 1000, category=-2, history_node=0, history_start=-20),
            job(2, 0, 4, "G", 100, 1000, category=-2, history_node=0, history_start=-50)]
    users, _ = run(jobs, policy="fcfs")
    assert float(meta(users, "2")["decided"]) == approx(0)
    assert float(meta(users, "1")["decided"]) == approx(110)


def test_jobs_past_their_window_are_killed_at_t_k_plus_walltime(run):
    # Walltime 30 covers the 10 s load and 20 s of the 100 s run.
    users, _ = run([job(1, 0, 2, "F", 100, 30)], policy="fcfs")
    assert users.loc["1", "final_state"] == "COMPLETED_KILLED"
    assert users.loc["1", "finish_time"] == approx(30)


def test_a_job_still_waiting_for_its_load_ends_at_t_k_plus_walltime(run):
    # Walltime 6 ends before the 10 s load: the job ends at 6, as the
    # authors' simulator ends it at t_k + min(load + run time, walltime).
    users, _ = run([job(1, 0, 2, "F", 100, 6)], policy="fcfs", load_model="fixed")
    assert users.loc["1", "final_state"] == "COMPLETED_KILLED"
    assert users.loc["1", "finish_time"] == approx(6)


def test_a_deadline_asked_only_when_an_earlier_call_came_still_kills_at_its_time(run):
    # Job 1 ends at 15, long before its deadline 1000, which alone is asked at
    # t=0; jobs 2 and 3 (deadlines 1030, 1030.5) are asked when that call comes.
    users, _ = run([job(1, 0, 1, "F", 5, 1000), job(2, 0, 1, "G", 2000, 1030), job(3, 0, 1, "H", 2000, 1030.5)],
                   policy="fcfs")
    assert users.loc["1", "final_state"] == "COMPLETED_SUCCESSFULLY"
    assert users.loc["2", "final_state"] == users.loc["3", "final_state"] == "COMPLETED_KILLED"
    assert users.loc["2", "finish_time"] == approx(1030)
    assert users.loc["3", "finish_time"] == approx(1030.5)


def test_a_round_waits_for_the_completions_expected_in_its_second():
    expected = ExpectedCompletions()
    expected.expect("a", 100.000002)
    expected.expect("b", 100.000004)
    expected.expect("c", 250.0)
    assert expected.due_this_second(100.0)
    expected.ended("a")
    assert expected.due_this_second(100.0)        # b is still to come in second 100
    expected.ended("b")
    assert not expected.due_this_second(100.0)    # c ends in another second
    expected.expect("c", 99.0)                     # a later guess replaces the former one
    assert not expected.due_this_second(100.0)    # and one in a past second is never waited for
    assert not expected.due_this_second(250.0)


def test_each_deadline_is_called_at_its_time_and_only_the_nearest_are_asked_ahead():
    """A fake Batsim: calls come in date order; jobs end or get deadlines between them."""
    asked = []   # (asked at, date)
    clock = [0.0]
    deadlines = DeadlineCalls(lambda date: asked.append((clock[0], date)))
    deadlines.add("a", 100.0)
    deadlines.add("b", 100.5)    # within ASK_AHEAD (1 s) of a's call: asked at once
    deadlines.add("c", 300.0)
    deadlines.add("d", 200.0)
    deadlines.add("e", 100.5)    # b's call serves it too
    assert asked == [(0.0, 100.0), (0.0, 100.5)]
    deadlines.drop("d")          # d ended early: never called
    clock[0] = 50.0
    deadlines.add("f", 60.0)     # nearer than every call pending
    assert asked[-1] == (50.0, 60.0)
    called: dict = {}
    while len(asked) > len(called):
        date = min(date for _, date in asked if date not in called)
        clock[0] = date + 1e-6   # a call comes a message latency after its date
        called[date] = deadlines.came(clock[0])
    assert called == {60.0: ["f"], 100.0: ["a"], 100.5: ["b", "e"], 300.0: ["c"]}
    assert (100.5 + 1e-6, 300.0) in asked   # c asked only once b's call came
    assert all(date > at + CALL_MARGIN for at, date in asked)
    assert not deadlines.of


def test_a_job_launched_at_its_deadline_is_due_then():
    deadlines = DeadlineCalls(lambda date: None)
    deadlines.add("a", 100.0)
    assert not deadlines.due("a", 99.0)
    assert deadlines.due("a", 100.0 - CALL_MARGIN / 2)
    assert "a" not in deadlines.of


def test_refuses_to_run_without_dynamic_jobs_and_compute_sharing(simulate_workload, tmp_path):
    platform = tmp_path / "two_nodes.xml"
    platform.write_text(PLATFORM)
    work = {"nb_res": 2, "profiles": {"d": {"type": "delay", "delay": 1}},
            "jobs": [{"id": 1, "subtime": 0, "walltime": 10, "res": 1, "profile": "d", "cores": 1,
                      "file": "F", "file_bytes": 10 * SCALE}]}
    with pytest.raises(SchedulerError, match="--enable-dynamic-jobs --enable-compute-sharing"):
        simulate_workload(work, platform=platform, scheduler=SCHEDULER, options={"policy": "lea"})


@pytest.mark.parametrize("file_bytes", [-5, "10", float("nan"), 1e30])
def test_a_file_size_that_is_not_bytes_of_node_memory_is_reported_with_its_field(run, file_bytes):
    with pytest.raises(BatioError, match=r"job 'w0!1'.*field 'file_bytes'"):
        run([job(1, 0, 2, "F", 10, 100, file_bytes=file_bytes)], policy="lea")


def test_a_job_asking_more_cores_than_a_node_has_is_reported_with_its_field(run):
    with pytest.raises(BatioError, match=r"job 'w0!1'.*field 'cores'"):
        run([job(1, 0, 9, "F", 10, 100)], policy="lea")
