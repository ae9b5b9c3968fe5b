"""EquilibrIO (seed 003): the poster's formulas, its algorithm end to end,
partial knowledge, its metrics, its platform and workload."""
import json
import math
from pathlib import Path

from batsim.batsim import Job
from conftest import TINY
import numpy as np
import pandas as pd
import pytest

from batio.engines.embedded.run import simulate
from batio.inputs.spec import RunSpec
from batio.schedulers.equilibrio.equilibrio import (
    Equilibrio,
    IntensitySet,
    candidate_priorities,
    fairness_priority,
    intensity_delta,
    io_intensity,
    knowledge_draw,
    normalise,
    system_io_intensity_with,
    visible_fraction,
    weighted_priority,
)
from batio.schedulers.equilibrio.metrics import (
    THETA_QUARTER,
    AloneModel,
    intensity_timeline,
    job_metrics,
    mean_distance,
    summary,
    workload_jobs,
)
from batio.schedulers.jobio import bytes_moved
from batio.schedulers.options import OptionError
from batio.workloads.equilibrio import equilibrio_workload

ROOT = Path(__file__).resolve().parent.parent
SCHEDULERS = ROOT / "schedulers"
THETA = ROOT / "platforms" / "theta_quarter.xml"
CLUSTER16 = ROOT / "platforms" / "cluster16_pfs.xml"


# -- the poster's formulas on a hand-built queue ------------------------------------------

def test_lambda_is_the_normalised_arrival_time():
    assert list(fairness_priority([10.0, 20.0, 40.0])) == pytest.approx([0, 1 / 3, 1])
    # equal values: nothing to tell apart, no division by zero
    assert list(fairness_priority([5.0, 5.0, 5.0])) == [0, 0, 0]
    assert list(fairness_priority([7.0])) == [0]
    assert len(normalise([])) == 0


def test_delta_against_the_system_intensity_if_admitted():
    # RJ: two jobs, sum 1.0 (io_intensity(S) = 0.5); io_intensity(W) = 0.4
    candidates = [0.0, 0.2, 1.0, 0.2]
    # io_intensity(S)_c = (1 + c) / 3 = 1/3, 0.4, 2/3, 0.4; delta' = 1/15, 0, 4/15, 0
    assert list(system_io_intensity_with(np.array(candidates), 1.0, 2)) == pytest.approx([1 / 3, 0.4, 2 / 3, 0.4])
    assert list(intensity_delta(candidates, 0.4, 1.0, 2)) == pytest.approx([0.25, 0, 1, 0])
    # the slide's formula as printed: delta' = |W - io_intensity_c| = 0.4, 0.2, 0.6, 0.2
    assert list(intensity_delta(candidates, 0.4, 1.0, 2, versus="job")) == pytest.approx([0.5, 0, 1, 0])
    # equal deltas (here: equal candidates), and an empty system
    assert list(intensity_delta([0.3, 0.3], 0.4, 1.0, 2)) == [0, 0]
    assert list(intensity_delta([0.1, 0.5], 0.3, 0.0, 0)) == [0, 0]  # |0.3 - 0.1| = |0.3 - 0.5|
    with pytest.raises(ValueError):
        intensity_delta([0.1], 0.3, 0.0, 0, versus="other")


def test_weighted_priority_and_hidden_jobs():
    assert weighted_priority(0.0, 0.7, 0.1) == pytest.approx(0.7)
    assert weighted_priority(1.0, 0.7, 0.1) == pytest.approx(0.1)
    assert weighted_priority(0.25, 0.8, 0.4) == pytest.approx(0.7)
    # arrivals 0, 10, 20 -> lambda 0, 0.5, 1; the first job's I/O is hidden
    wp = candidate_priorities(0.5, [0.0, 10.0, 20.0], [None, 0.4, 2.0], workload_intensity=1.0,
                              running_total=0.0, running_count=0)
    # visible: io_intensity(S)_c = c, delta' = 0.6, 1.0 -> delta 0, 1; hidden: delta = lambda
    assert list(wp) == pytest.approx([0.0, 0.25, 1.0])
    # nobody visible: wp = lambda for every alpha (FCFS)
    assert list(candidate_priorities(1.0, [3.0, 1.0, 2.0], [None] * 3, 0.0, 0.0, 0)) == \
        pytest.approx([1.0, 0.0, 0.5])


def test_intensity_sets():
    assert io_intensity(0.2, 10.0) == pytest.approx(2.0)
    jobs = IntensitySet()
    assert jobs.io_intensity == 0.0  # empty set
    jobs.add("a", 0.5)
    jobs.add("b", None)  # hidden: not counted
    jobs.add("c", 1.5)
    assert (jobs.count, jobs.io_intensity) == (2, pytest.approx(1.0))
    jobs.remove("a")
    jobs.remove("b")
    assert (jobs.count, jobs.io_intensity) == (1, pytest.approx(1.5))
    jobs.remove("c")
    assert (jobs.count, jobs.total) == (0, 0.0)


# -- the scheduler object, without the engine ----------------------------------------------

class FakeBatsim:
    def __init__(self, nb_hosts):
        self.now = 0.0
        self.compute_resources = {host: {"id": host} for host in range(nb_hosts)}
        self.storage_resources = {}
        self.profiles = {"w0": {"p": {"type": "delay", "delay": 1}}}
        self.executed = []

    def time(self):
        return self.now

    def execute_jobs(self, jobs):
        self.executed += [j.id for j in jobs]

    def reject_jobs(self, jobs):
        pass


def ejob(name, hosts, walltime, submit, share=None, bw=None):
    fields = {"id": f"w0!{name}"}
    if share is not None:
        fields.update(io_walltime_share=share, average_bw=bw)
    return Job(f"w0!{name}", submit, walltime, hosts, "p", fields)


def equilibrio(nb_hosts=4, **options):
    sched = Equilibrio(options)
    sched.bs = FakeBatsim(nb_hosts)
    sched.onSimulationBegins()
    return sched


def test_events_update_the_intensities_and_the_best_candidate_is_recomputed():
    # 4 hosts; a: 1 host, intensity 0.1; b: 1 host, 2.0; c: 3 hosts, 0.5; all at t = 0 (lambda 0)
    sched = equilibrio(4, alpha=1.0, backfill="none")
    a, b, c = ejob(1, 1, 100, 0, 0.1, 1.0), ejob(2, 1, 100, 0, 0.2, 10.0), ejob(3, 3, 100, 0, 0.5, 1.0)
    for job in (a, b, c):
        sched.onJobSubmission(job)  # submission: io_intensity(W) only
    assert sched.io_intensities() == (0.0, pytest.approx(2.6 / 3))
    sched.onNoMoreEvents()
    # W = 0.867. Empty system, io_intensity(S)_c = c: delta' = 0.767, 1.133, 0.367: c first.
    # Then S = 0.5: admitting a gives S_c = 0.3 (delta' 0.567), b gives 1.25 (0.383): b.
    # No host left: a waits.
    assert sched.bs.executed == ["w0!3", "w0!2"]
    assert sched.io_intensities() == (pytest.approx(1.25), pytest.approx(2.6 / 3))  # admission: S
    assert sched.reservations == {"w0!3": 100.0, "w0!2": 100.0}
    sched.bs.now = 50.0
    sched.onJobCompletion(b)  # completion: S and W, and the reservation
    assert sched.io_intensities() == (pytest.approx(0.5), pytest.approx(0.3))
    assert sched.reservations == {"w0!3": 100.0}
    sched.onNoMoreEvents()
    assert sched.bs.executed[-1] == "w0!1" and sched.reservations == {"w0!3": 100.0, "w0!1": 150.0}


@pytest.mark.parametrize("options, expected", [
    ({"backfill_order": "fixed", "backfill_guard": False}, ["w0!2", "w0!3"]),
    ({"backfill_order": "recomputed", "backfill_guard": False}, ["w0!2", "w0!4"]),
    # guarded: after H1, |W - S| = 0.136; H2 would make it 0.452, L1 0.181: both skipped
    ({}, ["w0!2"]),
])
def test_backfill_pass_order_and_guard(options, expected):
    # 6 hosts; R (4 hosts, intensity 0.1) runs. Queued: X (6 hosts, 2.0, t=0), H1, H2
    # (1 host, 2.0, t=1), L1-L3 (1 host, 0.1, t=2). W = (0.1 + 3 x 2 + 3 x 0.1) / 7 = 0.914;
    # S_c = 1.05 for X, H1, H2 (delta' 0.136), 0.1 for the L (0.814): C = X, H1, H2, L1, L2, L3.
    # X is blocked; two hosts are free for the backfill pass. After H1 (S = 1.05), admitting
    # H2 gives S = 1.367 (delta' 0.452), L1 gives 0.733 (0.181): recomputed, L1 comes next.
    sched = equilibrio(6, alpha=1.0, **options)
    running = ejob("R", 4, 1000, 0.0, 0.1, 1.0)
    sched.onJobSubmission(running)
    sched.onNoMoreEvents()
    queue = [ejob(1, 6, 100, 0.0, 0.2, 10.0), ejob(2, 1, 100, 1.0, 0.2, 10.0), ejob(3, 1, 100, 1.0, 0.2, 10.0),
             *[ejob(i, 1, 100, 2.0, 0.1, 1.0) for i in (4, 5, 6)]]
    sched.bs.now = 2.0
    for job in queue:
        sched.onJobSubmission(job)
    sched.onNoMoreEvents()
    assert sched.bs.executed == ["w0!R", *expected]


def test_alpha_zero_ranks_by_arrival_then_id():
    sched = equilibrio(1, alpha=0.0)
    jobs = [ejob(10, 1, 100, 5.0, 0.3, 10.0), ejob(2, 1, 100, 5.0, 0.0, 0.0), ejob(1, 1, 100, 7.0, 0.1, 1.0)]
    for job in jobs:
        sched.onJobSubmission(job)
    assert [j.id for j in sched.get_best_candidates(jobs)] == ["w0!2", "w0!10", "w0!1"]


def test_hidden_io_falls_back_to_fcfs():
    # knowledge 0: nothing visible; alpha 1 still gives FCFS, and W counts nobody
    sched = equilibrio(1, alpha=1.0, knowledge=0.0)
    jobs = [ejob(1, 1, 100, 0.0, 0.01, 0.1), ejob(2, 1, 100, 1.0, 0.3, 10.0), ejob(3, 1, 100, 2.0, 0.2, 1.0)]
    for job in jobs:
        sched.onJobSubmission(job)
    assert [j.id for j in sched.get_best_candidates(jobs)] == ["w0!1", "w0!2", "w0!3"]
    assert sched.workload.count == 0
    # a job without the fields is hidden at any knowledge: not in W, ranked by lambda alone
    sched = equilibrio(1, alpha=1.0)
    jobs = [ejob(1, 1, 100, 0.0, 0.3, 10.0), ejob(4, 1, 100, 0.0, 0.05, 1.0), ejob(2, 1, 100, 10.0, 0.2, 1.0),
            ejob(3, 1, 100, 20.0)]
    for job in jobs:
        sched.onJobSubmission(job)
    assert sched.intensity["w0!3"] is None and sched.workload.count == 3
    # W = (3 + 0.2 + 0.05) / 3 = 1.083; S_c = c: delta' = 1.917, 0.883, 1.033 -> 1, 0, 0.145;
    # the hidden job 3 has lambda = delta = 1: last, as in FCFS, though alpha = 1
    assert [j.id for j in sched.get_best_candidates(jobs)] == ["w0!2", "w0!4", "w0!1", "w0!3"]
    # the backfill guard (|W - S| = 1.083 with nobody running) checks visible jobs only
    assert [sched.keeps_balance(j) for j in jobs] == [False, True, True, True]


def test_knowledge_picks_a_fixed_nested_fraction_of_jobs():
    ids = [f"w0!{i}" for i in range(4000)]
    for knowledge in (0.1, 0.25, 0.55, 0.85):
        assert visible_fraction(ids, knowledge) == pytest.approx(knowledge, abs=0.03)
    low = {j for j in ids if knowledge_draw(j) < 0.25}
    high = {j for j in ids if knowledge_draw(j) < 0.4}
    assert low < high  # nested
    assert knowledge_draw("w0!7") == knowledge_draw("w3!7")  # the workload name does not matter
    assert knowledge_draw("w0!7", seed=1) != knowledge_draw("w0!7")
    sched = equilibrio(1, knowledge=0.4)
    jobs = [ejob(i, 1, 100, float(i), 0.1, 1.0) for i in range(200)]
    for job in jobs:
        sched.onJobSubmission(job)
    assert {j for j, v in sched.intensity.items() if v is not None} == \
        {j.id for j in jobs if knowledge_draw(j.id) < 0.4}


@pytest.mark.parametrize("options, message", [
    ({"alpha": 1.5}, r"'alpha' = 1.5 is not allowed: expected a number >= 0.0 and <= 1.0"),
    ({"alpha": "0.5"}, r"'alpha' = \"0.5\" is not allowed"),
    ({"knowledge": -0.1}, r"'knowledge' = -0.1 is not allowed"),
    ({"knowledge_seed": 1.5}, r"'knowledge_seed' = 1.5 is not allowed: expected an integer"),
    ({"backfill": "slurm"}, r"'backfill' = \"slurm\" is not allowed: expected one of \"poster\", \"none\""),
    ({"delta": "queue"}, r"'delta' = \"queue\" is not allowed"),
    ({"backfill_order": "lifo"}, r"'backfill_order' = \"lifo\" is not allowed"),
    ({"backfill_guard": 1}, r"'backfill_guard' = 1 is not allowed: expected true or false"),
    ({"alpah": 0.5}, r"unknown option 'alpah' = 0.5; "
                     r"known options: alpha, backfill, backfill_guard, backfill_order, delta, knowledge"),
    ({"backfill_max": 1}, r"unknown option 'backfill_max'"),
])
def test_bad_options_are_refused(options, message):
    with pytest.raises(OptionError, match=message) as error:
        Equilibrio(options)
    assert str(error.value).startswith("Equilibrio: ")


def test_option_defaults():
    sched = Equilibrio({})
    assert (sched.alpha, sched.knowledge, sched.knowledge_seed, sched.backfill_rule, sched.delta_versus,
            sched.backfill_order, sched.backfill_guard) == (0.5, 1.0, 0, "poster", "system", "recomputed", True)
    assert Equilibrio({"alpha": 0, "knowledge": 1}).alpha == 0.0  # integers are numbers
    assert Equilibrio({"backfill": "easy"}).backfill_max == 1
    assert Equilibrio({"backfill": "conservative"}).backfill_max == math.inf


# -- end to end through the engine ----------------------------------------------------------

def run(tmp_path, name, work, scheduler, options, platform=CLUSTER16):
    path = tmp_path / f"{name}.json"
    path.write_text(json.dumps(work))
    prefix = tmp_path / name / "out"
    simulate(RunSpec(str(platform), [str(path)], str(SCHEDULERS / scheduler), str(prefix), options=options))
    return pd.read_csv(f"{prefix}_jobs.csv").set_index("job_id").sort_index()


def small_workload(seed=5, count=70, nb_hosts=16):
    """Compute-then-write jobs with I/O fields, arriving faster than they run."""
    rng = np.random.default_rng(seed)
    jobs, profiles, t = [], {}, 0.0
    for i in range(1, count + 1):
        t += float(rng.exponential(12.0))
        hosts = int(rng.choice([1, 2, 3, 4, 8, 12, 16], p=[0.25, 0.2, 0.1, 0.2, 0.15, 0.05, 0.05]))
        compute = float(rng.uniform(20, 150))
        write = float(rng.uniform(0.1, 2.0)) * 1e9
        profiles[f"c{i}"] = {"type": "parallel_homogeneous", "cpu": compute * 1e9, "com": 0}
        profiles[f"w{i}"] = {"type": "parallel_homogeneous_pfs", "bytes_to_write": write, "storage": "pfs"}
        profiles[f"j{i}"] = {"type": "composed", "seq": [f"c{i}", f"w{i}"]}
        io_time = hosts * write / 1e9
        jobs.append({"id": i, "subtime": round(t, 2), "walltime": float(np.ceil(3 * (compute + io_time))),
                     "res": hosts, "profile": f"j{i}",
                     "io_walltime_share": io_time / (compute + io_time), "average_bw": 1.0})
    return {"nb_res": nb_hosts, "jobs": jobs, "profiles": profiles}


@pytest.mark.parametrize("backfill_rule, backfill_max", [("none", 0), ("easy", 1), ("conservative", None)])
def test_alpha_zero_is_fcfs_with_the_same_backfill(tmp_path, backfill_rule, backfill_max):
    work = small_workload()
    ours = run(tmp_path, "eq", work, "equilibrio/equilibrio.py", {"alpha": 0, "backfill": backfill_rule})
    theirs = run(tmp_path, "bf", work, "backfill.py", {"backfill_max": backfill_max, "order": "fcfs"})
    assert (ours["waiting_time"] > 100).any()  # a queue did build up
    pd.testing.assert_series_equal(ours["starting_time"], theirs["starting_time"])
    pd.testing.assert_series_equal(ours["allocated_resources"], theirs["allocated_resources"])


def test_no_knowledge_is_alpha_zero_and_alpha_reorders(tmp_path):
    work = small_workload()
    fcfs = run(tmp_path, "a0", work, "equilibrio/equilibrio.py", {"alpha": 0})
    blind = run(tmp_path, "blind", work, "equilibrio/equilibrio.py", {"alpha": 1, "knowledge": 0})
    pd.testing.assert_series_equal(fcfs["starting_time"], blind["starting_time"])
    seeing = run(tmp_path, "a1", work, "equilibrio/equilibrio.py", {"alpha": 1})
    assert not np.allclose(seeing["starting_time"], fcfs["starting_time"])


# On tiny.xml (4 hosts, no message latency):
#   1: 2 hosts, runs 100, walltime 101, t=0     2: 1 host, runs 250, walltime 300, t=0
#   3: 3 hosts, runs 50, walltime 51, t=1       4: 1 host, runs 150, walltime 151, t=2
# Poster (alpha 0): 1 and 2 start at 0 (reservations 101 and 300). At 2, job 3
#   is blocked (1 host free); job 4 ends by 2 + 151 = 153 <= reservation_max
#   = 300: backfilled at 2. At 100 only 2 hosts are free; job 4 ends at 152:
#   job 3 starts then.
# EASY: job 3's reservation is at 101 on the 3 hosts then free, which include
#   the free one: job 4 may not start at 2. Job 3 starts at 100, job 4 at 150.
POSTER_JOBS = [(1, 2, 100, 101, 0), (2, 1, 250, 300, 0), (3, 3, 50, 51, 1), (4, 1, 150, 151, 2)]


@pytest.mark.parametrize("backfill_rule, expected", [("poster", [0, 0, 152, 2]), ("easy", [0, 0, 100, 150])])
def test_poster_backfill_pass_hand_computed(tmp_path, backfill_rule, expected):
    jobs = [{"id": i, "subtime": t, "walltime": wall, "res": res, "profile": f"d{run_s}",
             "io_walltime_share": 0.1, "average_bw": 1.0} for i, res, run_s, wall, t in POSTER_JOBS]
    profiles = {f"d{run_s}": {"type": "delay", "delay": run_s} for _, _, run_s, _, _ in POSTER_JOBS}
    out = run(tmp_path, backfill_rule, {"nb_res": 4, "jobs": jobs, "profiles": profiles}, "equilibrio/equilibrio.py",
              {"alpha": 0, "backfill": backfill_rule}, platform=TINY)
    assert list(out["starting_time"]) == pytest.approx(expected, abs=1e-9)


# -- metrics on a hand-computed schedule ------------------------------------------------------

MODEL = AloneModel(node_speed=1e9, node_bw=1e9, read_bw=2e9, write_bw=1e9)


def hand_run(tmp_path):
    profiles = {"cA": {"type": "parallel_homogeneous", "cpu": 1e10, "com": 0},
                "wA": {"type": "parallel_homogeneous_pfs", "bytes_to_write": 1e9},
                "A": {"type": "composed", "seq": ["cA", "wA"]},
                "wB": {"type": "parallel_homogeneous_pfs", "bytes_to_write": 2e9, "bytes_to_read": 1e9},
                "dB": {"type": "delay", "delay": 4},
                "B": {"type": "composed", "seq": ["wB", "dB"]},
                "C": {"type": "delay", "delay": 5}}
    jobs = [{"id": 1, "subtime": 0, "res": 1, "profile": "A", "io_walltime_share": 1 / 11, "average_bw": 1.0},
            {"id": 2, "subtime": 1, "res": 2, "profile": "B", "io_walltime_share": 0.5, "average_bw": 1.0},
            {"id": 3, "subtime": 0.5, "res": 1, "profile": "C"}]
    # A alone: 10 s compute + 1e9 B at min(1 x 1e9, 1e9) = 1 s -> 11 s.
    # B alone: writes 4e9 B at min(2e9, 1e9) (4 s), reads 2e9 B at min(2e9, 2e9)
    #   (1 s) in the same phase: 4 s; then 4 s of delay -> 8 s. C: 5 s, no I/O.
    rows = [(1, 0.0, 0.0, 12.0), (2, 1.0, 2.0, 10.0), (3, 0.5, 12.0, 5.0)]
    frame = pd.DataFrame([{"job_id": i, "workload_name": "w0", "submission_time": sub, "starting_time": start,
                           "execution_time": run_s, "finish_time": start + run_s, "waiting_time": start - sub,
                           "final_state": "COMPLETED_SUCCESSFULLY", "requested_number_of_resources": 1}
                          for i, sub, start, run_s in rows])
    frame.to_csv(tmp_path / "out_jobs.csv", index=False)
    return str(tmp_path / "out"), {"nb_res": 2, "jobs": jobs, "profiles": profiles}


def test_metrics_on_a_hand_computed_schedule(tmp_path):
    prefix, work = hand_run(tmp_path)
    alone = workload_jobs(work, MODEL)
    assert list(alone["runtime_alone"]) == pytest.approx([11, 8, 5])
    assert list(alone["transfer_alone"]) == pytest.approx([1, 4, 0])
    jobs = job_metrics(prefix, work, MODEL)
    assert list(jobs["job_slowdown"]) == pytest.approx([100 / 11, 25, 0])
    # I/O: A's transfer took 12 - 10 = 2 s for 1 s alone; B's 10 - 4 = 6 s for 4 s
    assert list(jobs["io_slowdown"][:2]) == pytest.approx([100, 50]) and math.isnan(jobs["io_slowdown"].iloc[2])
    # not in I/O: A (1 - 1/11) x 11 = 10 s of 12; B 0.5 x 8 = 4 s of 10; C (no field): its 5 s of delay
    assert list(jobs["utilisation"]) == pytest.approx([10 / 12, 0.4, 1.0])
    # arrival order A, C, B; start order A, B, C
    assert list(jobs["displacement"]) == [0, 1, 1]
    # S, W: [0, 1) A alone: 1/11 both; [1, 2) W = (1/11 + 1/2) / 2, S = 1/11; [2, 12) both A and B
    timeline = intensity_timeline(prefix, work, MODEL)
    assert list(timeline["time"]) == [0, 1, 2, 12]
    assert list(timeline["W"]) == pytest.approx([1 / 11, (1 / 11 + 0.5) / 2, (1 / 11 + 0.5) / 2, 0])
    assert list(timeline["S"]) == pytest.approx([1 / 11, 1 / 11, (1 / 11 + 0.5) / 2, 0])
    assert mean_distance(timeline) == pytest.approx((0.5 - 1 / 11) / 2 / 12)
    assert mean_distance(timeline, start=1, end=2) == pytest.approx((0.5 - 1 / 11) / 2)
    result = summary(prefix, work, MODEL)
    assert result["all_io_slowdown_median"] == pytest.approx(75)
    assert result["all_displacement_mean"] == pytest.approx(2 / 3)


# -- platform and workload --------------------------------------------------------------------

def test_theta_quarter_bandwidths(tmp_path):
    profiles = {"w1": {"type": "parallel_homogeneous_pfs", "bytes_to_write": 12.5e9},
                "w8": {"type": "parallel_homogeneous_pfs", "bytes_to_write": 43e9 / 8},
                "r8": {"type": "parallel_homogeneous_pfs", "bytes_to_read": 60e9 / 8},
                "c": {"type": "parallel_homogeneous", "cpu": 2.66e12 * 10, "com": 0}}
    jobs = [{"id": 1, "subtime": 0, "walltime": 100, "res": 1, "profile": "w1"},       # node link: 1 s
            {"id": 2, "subtime": 10, "walltime": 100, "res": 8, "profile": "w8"},      # PFS write: 1 s
            {"id": 3, "subtime": 10, "walltime": 100, "res": 8, "profile": "r8"},      # PFS read: 1 s, no contention
            {"id": 4, "subtime": 20, "walltime": 100, "res": 8, "profile": "w8"},      # two writers share: 2 s
            {"id": 5, "subtime": 20, "walltime": 100, "res": 8, "profile": "w8"},
            {"id": 6, "subtime": 30, "walltime": 100, "res": 1098, "profile": "c"}]    # every node
    out = run(tmp_path, "theta", {"nb_res": 1098, "jobs": jobs, "profiles": profiles}, "backfill.py",
              {"backfill_max": 1}, platform=THETA)
    assert list(out["execution_time"]) == pytest.approx([1, 1, 1, 2, 2, 10], abs=2e-3)
    assert list(out["starting_time"]) == pytest.approx([0, 10, 10, 20, 20, 30], abs=1e-3)


def test_workload_shape_and_alone_times():
    work = equilibrio_workload(seed=7, nb_jobs=300)
    jobs = work["jobs"]
    assert len(jobs) == 300 and sum(j["io_class"] == "high" for j in jobs) == 40
    assert work["nb_res"] == 1098 and max(j["res"] for j in jobs) <= 1098
    high = [j for j in jobs if j["io_class"] == "high"]
    assert min(j["io_walltime_share"] for j in high) >= 0.1 and 8 <= np.mean([j["average_bw"] for j in high]) <= 12
    assert max(io_intensity(j["io_walltime_share"], j["average_bw"]) for j in jobs if j not in high) < 0.5
    assert max(j["subtime"] for j in high) - min(j["subtime"] for j in high) <= 1800
    assert sum(j["subtime"] < 60 for j in jobs) >= 250  # the backlog (capped at the low-to-medium jobs)
    alone = workload_jobs(work, THETA_QUARTER)
    profiles = work["profiles"]
    for job in jobs:
        # the fields describe what the profile does alone: its run time, and
        # io_intensity = bytes moved / run time
        assert alone.at[str(job["id"]), "runtime_alone"] == pytest.approx(job["total_walltime"], abs=1e-3)
        moved = sum(bytes_moved(profiles[job["profile"]], profiles, job["res"]))
        assert moved / job["total_walltime"] / 1e9 == pytest.approx(io_intensity(job["io_walltime_share"],
                                                                                 job["average_bw"]), rel=1e-3)
        assert job["walltime"] >= 2 * job["total_walltime"] - 1e-6
    assert equilibrio_workload(seed=7, nb_jobs=300) == work  # seeded
    assert sum(j["io_class"] == "high" for j in equilibrio_workload(seed=1, nb_jobs=2580)["jobs"]) == 80
    with pytest.raises(ValueError):
        equilibrio_workload(nb_jobs=30)


def test_bundled_workload_is_the_seeded_full_one():
    bundled = json.loads((ROOT / "workloads" / "equilibrio_theta.json").read_text())
    jobs = bundled["jobs"]
    assert len(jobs) == 5160 and sum(j["io_class"] == "high" for j in jobs) == 160
    assert sorted({j["peak"] for j in jobs if "peak" in j}) == [0, 1, 2, 3]
    assert equilibrio_workload(seed=3) == bundled
