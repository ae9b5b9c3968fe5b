"""The I/O-aware policies of paper 000 on jobs that state their own I/O:
a job without history is estimated from its fields
``read_bytes``, ``written_bytes`` and ``io_alone_s`` (README.md of
schedulers/workload_adaptive, "A job's own I/O"), a job with history keeps
using it, and a binding limit then changes the schedule of jobs that each
have their own profile (as a ``batio import jobsio`` week)."""
import json
import logging
import math
from pathlib import Path
import re

from batsim.batsim import Job
from conftest import FakeBatsim
import pandas as pd
from procset import ProcSet
import pytest

from batio.cli import main
from batio.schedulers.workload_adaptive.estimator import Estimate, EstimatorError, stated_estimate
from batio.schedulers.workload_adaptive.ioAware import GIB, IoAware
from batio.schedulers.workload_adaptive.workloadAdaptive import WorkloadAdaptive

PROFILES = {
    "write": {"type": "parallel_homogeneous_pfs", "bytes_to_write": 8 * GIB, "storage": "pfs"},
    "p_read": {"type": "parallel_homogeneous_pfs", "storage": "pfs", "bytes_to_read": 5e8},
    "p_rest": {"type": "delay", "delay": 8},
    "p": {"type": "composed", "seq": ["p_read", "p_rest"]},
}


def make(cls, **options):
    sched = cls(options)
    sched.bs = FakeBatsim(4, ["pfs"], PROFILES)
    sched.onSimulationBegins()
    return sched


def job(name, profile="p", walltime=100.0, app=None, **fields):
    extra = {"id": f"w0!{name}"} | ({} if app is None else {"app": app}) | fields
    return Job(f"w0!{name}", 0.0, walltime, 1, profile, extra)


# -- the estimate a job's fields give ---------------------------------------------

def test_the_fields_give_the_average_over_the_run_alone():
    # 1e9 + 1e9 bytes, transfers alone 2 s, 8 s of delay: alone 10 s, r_j = 2e9 / 10 = 2e8 B/s, d_j = 10 s.
    fields = {"read_bytes": 1e9, "written_bytes": 1e9, "io_alone_s": 2.0}
    assert stated_estimate(fields, 8.0, 100.0) == Estimate(2e8, 10.0)
    # d_j is capped by the walltime, r_j is not: the job moves its bytes over its run alone.
    assert stated_estimate(fields, 8.0, 5.0) == Estimate(2e8, 5.0)
    # Without io_alone_s: the bytes over the walltime, d_j = L_j (r_j d_j = the job's bytes).
    assert stated_estimate({"read_bytes": 1e9, "written_bytes": 1e9}, 8.0, 100.0) == Estimate(2e7, 100.0)
    assert stated_estimate({"written_bytes": 3e9}, 0.0, math.inf) == Estimate(0.0, math.inf)
    # A job stating no bytes states no I/O: the estimator's default applies.
    assert stated_estimate({"id": "w0!1", "app": "x"}, 8.0, 100.0) is None


@pytest.mark.parametrize("fields, message", [
    ({"read_bytes": 1e9, "written_bytes": 0, "io_alone_s": 0},
     "field 'io_alone_s' must be a number of seconds > 0, got 0"),
    ({"read_bytes": 1e9, "written_bytes": 0, "io_alone_s": -1.5}, "got -1.5"),
    ({"read_bytes": 1e9, "written_bytes": 0, "io_alone_s": "2"}, "got \"2\""),
    ({"read_bytes": 1e9, "written_bytes": 0, "io_alone_s": True}, "got true"),
    ({"read_bytes": -1, "written_bytes": 0}, "field 'read_bytes' must be a number of bytes >= 0, got -1"),
    ({"read_bytes": 1e9, "written_bytes": None}, "field 'written_bytes' must be a number of bytes >= 0, got null"),
    ({"io_alone_s": 2.0}, "field 'io_alone_s' needs the bytes it moves beside it "
                          "(fields 'read_bytes' and 'written_bytes')"),
])
def test_bad_io_fields_are_one_clear_error_at_submission(fields, message):
    sched = make(IoAware)
    with pytest.raises(EstimatorError, match=f"^job w0!1: .*{re.escape(message)}$"):
        sched.onJobSubmission(job("1", **fields))


# -- history first ------------------------------------------------------------------

def test_a_job_with_history_keeps_it_whatever_its_fields_say():
    history = {"write": {"rate": 3 * GIB, "runtime": 5}}
    sched = make(IoAware, estimator="pretrained", history=history)
    without = job("1", profile="write", app="write", read_bytes=0, written_bytes=8 * GIB)
    with_alone = job("2", profile="write", app="write", read_bytes=0, written_bytes=8 * GIB, io_alone_s=1.0)
    for known in (without, with_alone):
        sched.onJobSubmission(known)
        assert sched.estimate(known) == Estimate(3 * GIB, 5.0)
    # A type without history: the job's own fields, 5e8 / (1 + 8).
    own = job("3", read_bytes=5e8, written_bytes=0, io_alone_s=1.0)
    sched.onJobSubmission(own)
    estimate = sched.estimate(own)
    assert (estimate.rate, estimate.runtime) == (pytest.approx(5e8 / 9), 9.0)


def test_the_first_completion_of_a_type_replaces_the_fields():
    # Untrained: two jobs of profile p (key w0!p) at first estimated from their fields;
    # once one completes (moving p's 5e8 bytes in 20 s), the history's 2.5e7 B/s and 20 s apply.
    sched = make(WorkloadAdaptive)
    first, second = (job(name, read_bytes=5e8, written_bytes=0, io_alone_s=0.5) for name in "12")
    for queued in (first, second):
        sched.onJobSubmission(queued)
        assert sched.estimate(queued) == Estimate(5e8 / 8.5, 8.5)
    sched.mark_running(first, ProcSet(0), 0.0)
    sched.bs.now = 20.0
    first.job_state = Job.State.COMPLETED_SUCCESSFULLY
    sched.onJobCompletion(first)
    assert sched.estimate(second) == Estimate(2.5e7, 20.0)
    assert sched.share(second) == (2.5e7, 1, 20.0, None)


def test_pretrained_warns_only_for_jobs_that_state_no_io(caplog):
    sched = make(IoAware, estimator="pretrained", history={"other": {"rate": 0, "runtime": 1}})
    with caplog.at_level(logging.WARNING):
        sched.onJobSubmission(job("1", read_bytes=5e8, written_bytes=0))
        assert "no history" not in caplog.text
        sched.onJobSubmission(job("2", profile="write"))
    assert "no history for job type 'w0!write' (job w0!2)" in caplog.text


# -- a binding limit through the embedded engine ---------------------------------------

def own_io_workload(path):
    """Four one-type-each jobs at 0 on cluster16_pfs (its storage link: 1 GB/s),
    as a jobsio import writes them (composed profiles, bytes and io_alone_s fields,
    no ``app``):

    ====  =====  =======================================  =======================  =================
    job   hosts  phases                                   fields                   r_j = bytes / alone
    ====  =====  =======================================  =======================  =================
    A     2      read 1e9, delay 8, write 1e9             2e9 B, io_alone_s 2      2e9 / 10 = 2e8
    B     1      delay 9, write 1e9                       1e9 B, io_alone_s 1      1e9 / 10 = 1e8
    C     1      delay 15                                 none                     0
    D     1      read 5e8, delay 4.5                      5e8 B, io_alone_s 0.5    5e8 / 5 = 1e8
    ====  =====  =======================================  =======================  =================
    """
    def phase(direction, nb_bytes):
        return {"type": "parallel_homogeneous_pfs", "storage": "pfs", f"bytes_to_{direction}": nb_bytes}

    profiles = {"A_read": phase("read", 5e8), "A_rest": {"type": "delay", "delay": 8}, "A_write": phase("write", 5e8),
                "A": {"type": "composed", "seq": ["A_read", "A_rest", "A_write"]},
                "B_rest": {"type": "delay", "delay": 9}, "B_write": phase("write", 1e9),
                "B": {"type": "composed", "seq": ["B_rest", "B_write"]},
                "C": {"type": "delay", "delay": 15},
                "D_read": phase("read", 5e8), "D_rest": {"type": "delay", "delay": 4.5},
                "D": {"type": "composed", "seq": ["D_read", "D_rest"]}}
    io = {"A": (1e9, 1e9, 2.0), "B": (0, 1e9, 1.0), "D": (5e8, 0, 0.5)}
    jobs = [{"id": name, "subtime": 0, "walltime": 100, "res": 2 if name == "A" else 1, "profile": name}
            | ({"read_bytes": io[name][0], "written_bytes": io[name][1], "io_alone_s": io[name][2]}
               if name in io else {})
            for name in "ABCD"]
    path.write_text(json.dumps({"nb_res": 16, "jobs": jobs, "profiles": profiles}))
    return path


def starts(out):
    jobs = pd.read_csv(out / "out_jobs.csv")
    assert set(jobs["final_state"]) == {"COMPLETED_SUCCESSFULLY"}
    return dict(zip(jobs["job_id"].astype(str), jobs["starting_time"]))


@pytest.fixture(scope="module")
def own_io_runs(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("own_io")
    workload = own_io_workload(tmp / "w.json")
    io_aware = "schedulers/workload_adaptive/ioAware.py"
    runs = {"conservative": ("conservative", {}), "huge": (io_aware, {"limit": 1000}),
            "low": (io_aware, {"limit": 0.25})}
    outs = {}
    for name, (scheduler, options) in runs.items():
        if scheduler.endswith(".py"):
            scheduler = str(Path(__file__).resolve().parent.parent / scheduler)
        out = tmp / name
        assert main(["run", "--platform", "cluster16_pfs", "--workload", str(workload), "--scheduler", scheduler,
                     "--options", json.dumps(options), "--out", str(out), "--quiet"]) == 0
        outs[name] = starts(out)
    return outs


def test_a_binding_limit_changes_the_schedule_of_jobs_with_their_own_io(own_io_runs):
    # Limit 1000 GiB/s never binds: every job starts at 0, as under conservative backfill.
    # Limit 0.25 GiB/s = 2.68e8 B/s: A (2e8) starts at 0 and C (0) beside it; B (1e8) and D (1e8)
    # would take the sum to 3e8 while A runs, so they wait for A's end: read 1e9 alone at the
    # storage link's 1 GB/s (1 s), delay 8 s, write 1e9 (1 s), about 10 s; then B + D = 2e8 fits.
    # (Before jobs' own I/O fields were read, every estimate was 0 here and both limits gave
    # conservative's schedule.)
    expected = {"conservative": {"A": 0, "B": 0, "C": 0, "D": 0}, "huge": {"A": 0, "B": 0, "C": 0, "D": 0},
                "low": {"A": 0, "B": 10, "C": 0, "D": 10}}
    for name, by_job in expected.items():
        assert own_io_runs[name] == {job_id: pytest.approx(start, abs=0.02) for job_id, start in by_job.items()}, name
