"""CATIOS (seed 002) and its TIOAS baseline: the time-resolved load and its
admission check against a brute-force A[t], the cases where an average-based
check wrongly admits (overlapping bursts) or wrongly refuses (complementary
bursts), the clip, each priority order, the first deferred job's
reservation, predicted demand, and a hand-computed run on the embedded
engine."""
import json
import math
from pathlib import Path

from batsim.batsim import Job
from conftest import FakeBatsim
import numpy as np
import pytest

from batio.errors import InputError
from batio.schedulers import __file__ as schedulers_init
from batio.schedulers.catios.catios import Catios, normalised
from batio.schedulers.catios.demandload import DemandLoad, clip
from batio.schedulers.catios.iodemand import encode
from batio.schedulers.catios.tioas import IO, Tioas
from batio.schedulers.options import OptionError

B = 10.0  # bytes/s: small numbers keep the hand computations readable
SCHEDULERS = Path(schedulers_init).parent


# -- helpers ------------------------------------------------------------------

class Fake(FakeBatsim):
    """FakeBatsim with CALL_ME_LATER, and storage hosts with properties."""

    def __init__(self, nb_hosts, storage_properties=()):
        super().__init__(nb_hosts)
        self.storage_resources = {nb_hosts + i: {"id": nb_hosts + i, "name": f"pfs{i}", "properties": props}
                                  for i, props in enumerate(storage_properties)}
        self.calls = []

    def wake_me_up_at(self, at):
        self.calls.append(at)


def job(name, demand=None, hosts=1, walltime=100.0, submit=0.0, command=None):
    fields = {"id": f"w0!{name}", "command": command or f"./app {name}"}
    if demand is not None:
        fields["io_demand"] = encode(np.asarray(demand, dtype=float))
    return Job(f"w0!{name}", submit, walltime, hosts, "p", fields)


def make(cls, nb_hosts=4, storage=({"bandwidth": str(B)},), **options):
    options.setdefault("demand", "oracle")
    sched = cls(options)
    sched.bs = Fake(nb_hosts, storage)
    sched.onSimulationBegins()
    return sched


def submit(sched, *jobs):
    for j in jobs:
        sched.bs.now = max(sched.bs.now, j.submit_time)
        sched.onJobSubmission(j)


def run_round(sched, now):
    """One round at ``now``: {started job id: hosts}."""
    sched.bs.now = now
    plan = sched.schedule()
    return {j.id: hosts for j, hosts in plan.started}


def end(sched, job_id, now):
    sched.bs.now = now
    finished, _ = sched.running[job_id]
    sched.onJobCompletion(finished)


def brute_force_fits(profiles, demand, t0, bandwidth):
    """A[t] from scratch: every admitted (D, start) summed second by second."""
    horizon = max([start + len(D) for D, start in profiles] + [t0 + len(demand)])
    load = np.zeros(horizon)
    for D, start in profiles:
        load[start:start + len(D)] += D
    return bool(np.all(load[t0:t0 + len(demand)] + demand <= bandwidth))


# -- DemandLoad ---------------------------------------------------------------

def test_fits_agrees_with_brute_force_and_admitted_load_never_exceeds_B():
    rng = np.random.default_rng(2)
    admitted: list
    load, admitted = DemandLoad(capacity=8), []
    now = 0
    for step in range(300):
        now += int(rng.integers(0, 3))
        load.advance(now)
        n = int(rng.integers(1, 40))
        D = rng.choice([0.0, 1.0, 3.0, 6.0], size=n)
        t0 = now + int(rng.integers(0, 20))
        expected = brute_force_fits(admitted, D, t0, B)
        assert load.fits(D, t0, B) == expected
        if expected:
            load.add(step, D, t0)
            admitted.append((D, t0))
        window = load.load(now, load.horizon)
        assert window.max(initial=0) <= B + 1e-9
    assert len(load) == len(admitted)


def test_remove_subtracts_what_remains_and_advance_drops_the_past():
    load = DemandLoad(capacity=2)
    load.add("a", np.array([1.0, 2, 3, 4, 5, 6]), 10.7)  # anchored at second 10
    load.add("b", np.array([1.0, 1]), 12)
    assert load.load(9, 17).tolist() == [0, 1, 2, 4, 5, 5, 6, 0]
    load.advance(12.5)
    assert load.origin == 12 and load.horizon == 16
    load.remove("a", at=13.2)  # ended during second 13: seconds 13-15 freed
    assert load.load(12, 17).tolist() == [4, 1, 0, 0, 0]
    load.remove("b", at=30)  # outlived its demand: nothing left to remove
    assert load.load(12, 17).tolist() == [4, 1, 0, 0, 0]
    with pytest.raises(ValueError, match="before the load's origin"):
        load.fits(np.ones(1), 11, B)


def test_clip_caps_each_second_at_three_quarters_of_B():
    assert clip(np.array([2.0, 7.5, 8.0, 30.0]), B).tolist() == [2.0, 7.5, 7.5, 7.5]
    assert clip(np.array([8.0]), B, 0.5).tolist() == [5.0]


def test_earliest_fit_tries_the_ends_of_admitted_demands():
    load = DemandLoad()
    load.add("a", np.array([8.0] * 5 + [0.0] * 5), 0)   # burst over 0-4, ends at 10
    load.add("b", np.array([0.0] * 3 + [8.0] * 9), 0)   # burst over 3-11, ends at 12
    burst = np.array([5.0, 5.0])
    assert load.earliest_fit(burst, 0, B) == 12          # 10 still has b's burst
    assert load.earliest_fit(np.array([1.0]), 0, B) == 0
    assert load.earliest_fit(np.array([11.0]), 0, B) == math.inf


# -- the average-based blind spots ---------------------------------------------
#
# Two hosts free; job a runs from 0; job b is the candidate at 0.

OVERLAPPING = ([8.0, 8.0] + [0.0] * 8,           # a: a 2-second burst, mean 1.6
               [8.0, 8.0] + [0.0] * 8)           # b: the same burst, mean 1.6
COMPLEMENTARY = ([9.0] * 5,                       # a: mean 9 (clipped to 7.5)
                 [0.0] * 5 + [9.0] * 5)           # b: mean 4.5, bursts when a is done


def start_a_then_try_b(cls, a_demand, b_demand, **options):
    sched = make(cls, nb_hosts=2, **options)
    a, b = job("a", a_demand), job("b", b_demand, submit=1.0)
    submit(sched, a)
    assert set(run_round(sched, 0.0)) == {a.id}
    submit(sched, b)
    return sched, run_round(sched, 1.0)


def test_overlapping_bursts_averages_admit_catios_refuses():
    # Averages: 1.6 + 1.6 <= 10. Time-resolved at t0 = 1: second 1 holds
    # a's 7.5 (8 clipped) + b's 7.5 = 15 > 10.
    catios, started = start_a_then_try_b(Catios, *OVERLAPPING, reserve_first=False)
    assert started == {}
    tioas, started = start_a_then_try_b(Tioas, *OVERLAPPING, backfill_max=1)
    assert set(started) == {"w0!b"}
    # CATIOS starts b once a's burst is over (second 2: 0 + 7.5).
    assert set(run_round(catios, 2.0)) == {"w0!b"}
    assert catios.load.load(2, 20).tolist() == [7.5, 7.5] + [0.0] * 16


def test_complementary_bursts_averages_refuse_catios_admits():
    # Averages: 9 + 4.5 > 10 over b's window. Time-resolved at t0 = 1: a's
    # 7.5 over seconds 1-4, then b's 7.5 over 6-10: at most 7.5.
    catios, started = start_a_then_try_b(Catios, *COMPLEMENTARY)
    assert set(started) == {"w0!b"}
    assert catios.load.load(1, 12).tolist() == [7.5] * 4 + [0.0] + [7.5] * 5 + [0.0]
    tioas, started = start_a_then_try_b(Tioas, *COMPLEMENTARY, backfill_max=1)
    assert started == {}
    assert tioas.bandwidth_need(tioas.waiting[0], 1.0) == {IO: 4.5}


def test_clip_lets_a_spiky_job_run_alone_and_limits_what_joins_it():
    sched = make(Catios, nb_hosts=2)
    spiky, small = job("a", [30.0, 1.0]), job("b", [3.0])  # a comes first
    submit(sched, spiky, small)
    # Unclipped, 30 > B would never fit; clipped, 7.5 + 3 > 10 at second 0.
    assert set(run_round(sched, 0.0)) == {"w0!a"}
    assert sched.load.load(0, 2).tolist() == [7.5, 1.0]
    assert set(run_round(sched, 1.0)) == {"w0!b"}


# -- priorities ---------------------------------------------------------------
#
# At t = 100: a waited 100 s and runs n = 10 s; b 50 s and 100 s; c 10 s and
# 1000 s (its profile's length); d has no prediction (predicted mode below).
# norm_wait = 1, 0.5, 0.1; norm_runtime = 0.01, 0.1, 1.

QUEUE = [("a", 0.0, 10), ("b", 50.0, 100), ("c", 90.0, 1000)]


@pytest.mark.parametrize("options, order", [
    ({"priority": "fcfs"}, "abc"),
    ({"priority": "ljf"}, "cba"),
    # P = 0.95 w + 0.05 r: a 0.9505, b 0.48, c 0.145.
    ({"priority": "mix"}, "abc"),
    # P = 0.5 w + 0.5 r: a 0.505, b 0.3, c 0.55.
    ({"priority": "mix", "alpha": 0.5, "beta": 0.5}, "cab"),
    # P = 0.6 w + 0.4 r: a 0.604, b 0.34, c 0.46.
    ({"priority": "mix", "alpha": 0.6, "beta": 0.4}, "acb"),
])
def test_priority_orders(options, order):
    sched = make(Catios, nb_hosts=1, **options)
    jobs = [job(name, [0.0] * n, submit=t, walltime=5000) for name, t, n in QUEUE]
    submit(sched, *jobs[::-1])  # submission order must not matter
    sched.bs.now = 100.0
    assert "".join(j.id[-1] for j in sched.prioritised(100.0)) == order
    # With one host, the head of the order is the job that starts.
    assert set(run_round(sched, 100.0)) == {f"w0!{order[0]}"}


def test_normalised_handles_zero_and_infinite_values():
    assert normalised([0.0, 0.0]) == [0.0, 0.0]
    assert normalised([2.0, 4.0]) == [0.5, 1.0]
    assert normalised([3.0, math.inf]) == [0.0, 1.0]


# -- the first deferred job's reservation ---------------------------------------

def wide_head_and_long_filler(**options):
    """4 hosts; r runs on 2 (walltime 50); head needs 4; filler needs 1 for 100 s."""
    sched = make(Catios, nb_hosts=4, **options)
    running = job("r", [0.0] * 10, hosts=2, walltime=50)
    submit(sched, running)
    run_round(sched, 0.0)
    head = job("head", [0.0] * 10, hosts=4, walltime=100, submit=1)
    filler = job("filler", [0.0] * 10, hosts=1, walltime=100, submit=2)
    submit(sched, head, filler)
    return sched, run_round(sched, 2.0)


def test_first_deferred_job_reserved_so_later_jobs_cannot_delay_it():
    sched, started = wide_head_and_long_filler()
    # head's hosts are reserved from 50 (r's walltime); filler would hold one until 102.
    assert started == {}
    [(head, slot)] = sched.last_plan.reserved
    assert (head.id, slot.start) == ("w0!head", 50.0)
    # Without the reservation (the poster's greedy pass) the filler jumps ahead.
    sched, started = wide_head_and_long_filler(reserve_first=False)
    assert set(started) == {"w0!filler"}


def reserved_head_and_two_bursts(**options):
    """5 hosts; r runs on 3 with 7 B/s over 0-19 (walltime 20); at 3, head
    needs 3 hosts (only at 20) and bursts 7 over its first 5 seconds."""
    sched = make(Catios, nb_hosts=5, **options)
    running = job("r", [7.0] * 20, hosts=3, walltime=20)
    submit(sched, running)
    run_round(sched, 0.0)
    head = job("head", [7.0] * 5, hosts=3, walltime=30, submit=1)
    early = job("early", [3.0] * 5, hosts=1, walltime=10, submit=2)           # 7 + 3 over 3-7
    late = job("late", [0.0] * 19 + [4.0] * 5, hosts=1, walltime=30, submit=3)  # bursts over 22-26
    submit(sched, head, early, late)
    return sched, run_round(sched, 3.0)


def test_reservation_holds_the_first_deferred_jobs_io_too():
    sched, started = reserved_head_and_two_bursts()
    # late has a host, but its burst would meet head's planned 7 over 22-24: 11 > 10.
    assert set(started) == {"w0!early"}
    [(reserved, slot)] = sched.last_plan.reserved
    assert (reserved.id, slot.start) == ("w0!head", 20.0)
    # The planned demand is withdrawn after the round; only running jobs load.
    assert sched.load.load(3, 30).tolist() == [10.0] * 5 + [7.0] * 12 + [0.0] * 10
    sched, started = reserved_head_and_two_bursts(reserve_first=False)
    assert set(started) == {"w0!early", "w0!late"}


def test_waiting_jobs_get_periodic_rounds_and_calls_are_not_duplicated():
    sched = make(Catios, nb_hosts=1, priority_period=10)
    submit(sched, job("a", [1.0] * 50, walltime=50), job("b", [1.0], walltime=5))
    run_round(sched, 0.0)
    # b waits for a's host: reserved at 50, called back within the period.
    assert sched.bs.calls == [10.0]
    run_round(sched, 4.0)  # e.g. a submission: the call at 10 is still pending
    assert sched.bs.calls == [10.0]
    sched.bs.now = 10.0
    sched.onRequestedCall()
    sched.onNoMoreEvents()
    assert sched.bs.calls == [10.0, 20.0]


def test_job_end_removes_the_rest_of_its_demand():
    sched = make(Catios, nb_hosts=2)
    long_job, blocked = job("a", [8.0] * 100, walltime=200), job("b", [5.0] * 10)
    submit(sched, long_job, blocked)
    assert set(run_round(sched, 0.0)) == {"w0!a"}  # b: 7.5 + 5 > 10
    end(sched, "w0!a", 30.0)
    assert sched.load.load(30, 100).max() == 0.0
    assert set(run_round(sched, 30.0)) == {"w0!b"}


# -- inputs -------------------------------------------------------------------

def test_bandwidth_from_the_platform_or_the_option():
    assert make(Catios).B == B
    assert make(Catios, storage=(), bandwidth=4e9).B == 4e9
    with pytest.raises(OptionError, match="'bandwidth' .* required.*no storage host"):
        make(Catios, storage=({},))
    with pytest.raises(OptionError, match="'pfs0' has bandwidth = 'fast'"):
        make(Catios, storage=({"bandwidth": "fast"},))
    with pytest.raises(OptionError, match="'clip'"):
        Catios({"demand": "oracle", "clip": 1.5})
    with pytest.raises(OptionError, match="'history' is required"):
        Catios({})


def test_oracle_without_io_demand_names_the_job_and_field():
    sched = make(Catios)
    with pytest.raises(InputError, match="job 'w0!x'.*field 'io_demand'"):
        submit(sched, job("x"))


def write_history(path, jobs):
    path.write_text(json.dumps({"nb_res": 8, "profiles": {}, "jobs": [
        {"id": i, "subtime": 0, "res": nodes, "profile": "p", "command": command,
         "io_demand": encode(np.asarray(demand, dtype=float))}
        for i, (command, nodes, demand) in enumerate(jobs)]}))
    return str(path)


def test_predicted_demand_comes_from_the_closest_history_job(tmp_path, caplog):
    history = write_history(tmp_path / "h.json", [("./ior -w", 2, [9.0] * 3), ("./ior -w", 8, [4.0] * 6)])
    sched = make(Catios, nb_hosts=8, demand="predicted", history=history, matcher_backend="exact")
    # The true demand in the job's field is ignored: only its command and node count count.
    known = job("known", [0.0], hosts=7, command="./ior  -w")
    unknown = job("unknown", [0.0], hosts=1, walltime=300, command="./never-seen")
    submit(sched, known, unknown)
    assert sched.D(known).tolist() == [4.0] * 6           # the 8-node run is closer to 7 nodes
    assert sched.runtime_estimate(known) == 6 and sched.runtime_estimate(unknown) == 300
    assert sched.D(unknown).size == 0                       # no prediction: no I/O demand
    assert set(run_round(sched, 0.0)) == {"w0!known", "w0!unknown"}
    sched.onSimulationEnds()
    log = caplog.text  # the scheduler logs through `logging` (batio.schedulers.catios.catios)
    assert "no similar history for job w0!unknown" in log
    assert "1 of 2 jobs had no prediction" in log


def test_tioas_uses_the_mean_of_the_same_prediction(tmp_path):
    history = write_history(tmp_path / "h.json", [("./ior -w", 2, [9.0, 3.0])])
    sched = make(Tioas, demand="predicted", history=history, matcher_backend="exact")
    known, unknown = job("k", hosts=2, command="./ior -w"), job("u", command="./other")
    submit(sched, known, unknown)
    assert sched.bandwidth_need(known, 0.0) == {IO: 6.0}
    assert sched.bandwidth_need(unknown, 0.0) == {}
    assert sched.bandwidth_limits(0.0) == {IO: B}


# -- end to end on the embedded engine -------------------------------------------
#
# A 4-host platform whose storage host gives B = 10e9 as its "bandwidth"
# property (clip at 7.5e9). Delay profiles, so each job runs exactly n = 20 s
# whatever the I/O; the scheduler sees only the io_demand fields (oracle).
#   j1 burst 8e9 over seconds 0-9; j2 the same; j3 6e9 over seconds 10-19.
#   One host each, all submitted at 0; FCFS; priority_period 5.
# t=0: j1 starts. j2: second 0 would hold 7.5 + 7.5 > 10: deferred, reserved
#   at 20 (the end of j1's demand). j3: 7.5 + 0 over 0-9, 0 + 6 over 10-19:
#   starts. t=5: j2 overlaps j1's burst. t=10, 15: j2's burst would meet j3's
#   (7.5 + 6). t=20: j1 and j3 end, j2 starts; it ends at 40.
# TIOAS (EASY): means 4e9, 4e9, 3e9: j1 and j2 start at 0 (4 + 4 <= 10, their
#   bursts overlapping), j3 (8 + 3 > 10) waits for one of them: 20.
GB = 1e9
E2E_JOBS = {1: [8 * GB] * 10 + [0.0] * 10, 2: [8 * GB] * 10 + [0.0] * 10, 3: [0.0] * 10 + [6 * GB] * 10}
E2E_PLATFORM = """<?xml version='1.0'?>
<!DOCTYPE platform SYSTEM "https://simgrid.org/simgrid.dtd">
<platform version="4.1"><zone id="z" routing="Full">
  <host id="master_host" speed="1Gf"/>
  <host id="n0" speed="1Gf"/><host id="n1" speed="1Gf"/><host id="n2" speed="1Gf"/><host id="n3" speed="1Gf"/>
  <host id="pfs" speed="1Gf"><prop id="role" value="storage"/><prop id="bandwidth" value="10e9"/></host>
</zone></platform>"""


@pytest.mark.parametrize("scheduler, options, starts", [
    ("catios/catios.py", {"demand": "oracle", "priority_period": 5}, {1: 0, 2: 20, 3: 0}),
    ("catios/tioas.py", {"demand": "oracle", "backfill_max": 1}, {1: 0, 2: 0, 3: 20}),
])
def test_hand_computed_schedule_on_the_embedded_engine(simulate_workload, tmp_path, scheduler, options, starts):
    platform = tmp_path / "b10.xml"
    platform.write_text(E2E_PLATFORM)
    work = {"nb_res": 4, "profiles": {"d20": {"type": "delay", "delay": 20}},
            "jobs": [{"id": i, "subtime": 0, "walltime": 100, "res": 1, "profile": "d20",
                      "command": f"./app{i}", "io_demand": encode(np.array(D))} for i, D in E2E_JOBS.items()]}
    run = simulate_workload(work, platform=platform, scheduler=SCHEDULERS / scheduler, options=options)
    jobs = run.jobs
    assert {int(i): t for i, t in jobs["starting_time"].items()} == pytest.approx(starts, abs=1e-3)
    assert set(jobs["final_state"]) == {"COMPLETED_SUCCESSFULLY"}
