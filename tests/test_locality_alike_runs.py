"""Runs of alike jobs planned in compiled code (``schedulers/locality/
alike_runs.py``) against the same plan made job by job in Python."""
import random

from batsim.batsim import Job
import pytest
from test_locality import CORES, plan_state, random_state, scheduler

from batio.schedulers.locality import alike_runs, placement
from batio.schedulers.locality.fileplan import FilePlan
from batio.schedulers.locality.jobs import UserJob
from batio.schedulers.locality.plan import Plan


def long_bursts(rng, queue):
    """The queue's pinned jobs, then bursts of 1 to 12 alike jobs (10 a file), of 5
    files or of 12 (more than a node's 8 slots: its row must grow)."""
    pinned = [job for job in queue if job.history_node is not None]
    jobs = list(pinned)
    files = [f"f{index}" for index in range(rng.choice([5, 12]))]
    while len(jobs) < len(files) * 10:
        cores, walltime, file = rng.randint(1, CORES), float(rng.randint(5, 300)), rng.choice(files)
        jobs += [UserJob(Job(f"w0!{len(jobs) + i}", len(jobs) + i, 0, 1, "p", {}), cores=cores, walltime=walltime,
                         file=file, size=1000.0 * cores, history_node=None)
                 for i in range(rng.randint(1, 12))]
    return jobs


@pytest.mark.parametrize("policy", ["fcfs", "eft", "lea", "leo", "lem"])
@pytest.mark.parametrize("retain_cached", [True, False])
@pytest.mark.parametrize("backfill", [False, True])
def test_a_run_planned_in_compiled_code_plans_as_python_does(policy, retain_cached, backfill, monkeypatch):
    """Every job started now and every reservation left (cores, file slots,
    planned starts, the jobs left and the jobs examined) are the same with
    the runs compiled as with every job planned in Python, cut walks and
    LEM's switch between EFT and LEA included."""
    rng = random.Random(f"runs{policy}{retain_cached}{backfill}")
    planned_compiled = []
    original = alike_runs.plan_run

    def counted(*args):
        outcome = original(*args)
        planned_compiled.append(outcome[0])
        return outcome

    monkeypatch.setattr(alike_runs, "plan_run", counted)
    for _ in range(25):
        memory, ledger, queue = random_state(rng, nb_nodes=8)
        memory.retain_cached = retain_cached
        queue = long_bursts(rng, queue)
        W, eviction_weight, busy_threshold = rng.choice([1, 500]), rng.choice([0, 1, 1]), rng.choice([0.3, 0.6])
        outcomes = []
        for compiled in (True, False):
            sched = scheduler(policy=policy, W=W, eviction_weight=eviction_weight, busy_threshold=busy_threshold,
                              compiled_runs=compiled, backfill=backfill)
            sched.host_ids = list(range(len(memory.copies)))
            sched.ledger, sched.memory = ledger, memory
            plan = Plan(sched.core_plan(1.0), sched.file_plan(1.0), ledger.busy_nodes(), list(queue))
            examined, started = sched.plan_queue(plan, 1.0)
            outcomes.append(([(job.id, where) for job, where in started], examined, plan_state(plan),
                             plan.busy_count))
        assert outcomes[0] == outcomes[1]
    assert sum(planned_compiled) >= 100   # the runs did go to compiled code


def test_runs_are_compiled_only_where_alike_runs_covers_the_plan():
    """The authors' code plans in Python."""
    for options, covered in (({}, True), ({"backfill": True}, True), ({"authors_code": True}, False),
                             ({"compiled_runs": False}, False)):
        sched = scheduler(policy="lea", **options)
        memory, ledger, _ = random_state(random.Random(0), nb_nodes=4)
        sched.host_ids = list(range(4))
        sched.ledger, sched.memory = ledger, memory
        plan = Plan(sched.core_plan(1.0), FilePlan(memory, 1.0), ledger.busy_nodes(), [])
        assert (placement.Placement(sched, plan, 1.0).run_planner() is not None) == covered, options
