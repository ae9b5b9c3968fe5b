"""Events of Batsim's protocol, checked on hand-computed schedules.

On cluster512_pfs a message from the master host to itself takes L = 0.6 ms
and one from a compute host 1.6 ms (see batio/engines/embedded/server.py): a decision
dated t takes effect at t + L.
"""

from conftest import TINY, workload
import pytest

from batio.errors import SchedulerError

L = 0.0006
DELAY10 = {"d": {"type": "delay", "delay": 10}}


def delay_jobs(*specs):
    return [{"id": name, "subtime": 0, "walltime": walltime, "res": 1, "profile": "d"} for name, walltime in specs]


def test_delay_equal_to_walltime_is_killed_by_walltime(simulate_workload):
    run = simulate_workload(workload(delay_jobs(("A", 10), ("B", 10.5)), DELAY10),
                            options={"execute": {"w0!A": {"alloc": "0"}, "w0!B": {"alloc": "1"}}})
    jobs = run.jobs
    # Batsim: a delay is cut when it is not strictly shorter than the walltime.
    assert jobs.loc["A", "final_state"] == "COMPLETED_WALLTIME_REACHED"
    assert jobs.loc["B", "final_state"] == "COMPLETED_SUCCESSFULLY"
    assert jobs.loc["A", "execution_time"] == pytest.approx(10.0, abs=1e-6)


def test_ptask_walltime(simulate_workload):
    profiles = {"c": {"type": "parallel_homogeneous", "cpu": 5e10, "com": 0}}  # 50 s alone
    run = simulate_workload(workload([{"id": "A", "subtime": 0, "walltime": 20, "res": 2, "profile": "c"}],
                                     profiles), options={"execute": {"w0!A": {"alloc": "0-1"}}})
    job = run.jobs.loc["A"]
    assert job["final_state"] == "COMPLETED_WALLTIME_REACHED"
    assert job["execution_time"] == pytest.approx(20.0, abs=1e-6)
    assert job["success"] == 0
    completed = [e for e in run.log if e["event"] == "completed"]
    assert completed[0]["return_code"] == -1


def test_kill_delay_and_ptask(simulate_workload):
    profiles = {"d": {"type": "delay", "delay": 100},
                "c": {"type": "parallel_homogeneous", "cpu": 1e11, "com": 0},
                "seq": {"type": "composed", "seq": ["d", "c"], "repeat": 2}}
    jobs = [{"id": "D", "subtime": 0, "walltime": 500, "res": 1, "profile": "d"},
            {"id": "S", "subtime": 0, "walltime": 500, "res": 1, "profile": "seq"}]
    run = simulate_workload(workload(jobs, profiles), options={
        "execute": {"w0!D": {"alloc": "0"}, "w0!S": {"alloc": "1"}},
        "kill": {"w0!D": 40, "w0!S": 150}})
    jobs = run.jobs
    # The scheduler hears its CALL_ME_LATER(40) at 40 + L and kills then; the
    # kill reaches the killer one message later, at 40 + 2L, and ends the job.
    assert jobs.loc["D", "final_state"] == "COMPLETED_KILLED"
    assert jobs.loc["D", "finish_time"] == pytest.approx(40 + 2 * L, abs=1e-6)
    assert jobs.loc["S", "finish_time"] == pytest.approx(150 + 2 * L, abs=1e-6)
    killed = [e for e in run.log if e["event"] == "killed"]
    assert killed[0]["progress"]["w0!D"]["profile_name"] == "d"
    assert killed[0]["progress"]["w0!D"]["progress"] == pytest.approx((40 + 2 * L - jobs.loc["D", "starting_time"])
                                                                     / 100, abs=1e-9)
    # S slept 100 s, then computed 1e11 flops (100 s): about 50 % done at 150.
    progress = killed[1]["progress"]["w0!S"]
    assert progress["profile_name"] == "seq" and progress["current_task_index"] == 1
    assert progress["current_task"]["profile_name"] == "c"
    assert progress["current_task"]["progress"] == pytest.approx(0.5, abs=1e-3)
    completions = {e["job"]: e for e in run.log if e["event"] == "completed"}
    assert completions["w0!D"]["state"] == "COMPLETED_KILLED"
    assert completions["w0!D"]["return_code"] == -1   # Batsim: a killed delay keeps -1
    assert completions["w0!S"]["return_code"] == -2   # a cancelled ptask returns -2


def test_reject_sends_nothing_back_and_is_written(simulate_workload):
    run = simulate_workload(workload(delay_jobs(("A", 100), ("B", 100)), DELAY10),
                            options={"reject": ["w0!A"], "execute": {"w0!B": {"alloc": "3"}}})
    jobs = run.jobs
    assert jobs.loc["A", "final_state"] == "REJECTED"
    assert jobs.loc["A", "starting_time"] == "" and jobs.loc["A", "allocated_resources"] == ""
    assert [e["job"] for e in run.log if e["event"] == "completed"] == ["w0!B"]
    schedule = run.csv("schedule")
    assert schedule.loc[0, "nb_jobs_rejected"] == 1 and schedule.loc[0, "nb_jobs"] == 2
    # Batsim divides the means by all jobs, rejected ones included.
    assert schedule.loc[0, "mean_turnaround_time"] == pytest.approx(float(jobs.loc["B", "turnaround_time"]) / 2,
                                                                    abs=1e-6)


def test_call_me_later_arrives_one_message_later(simulate_workload):
    run = simulate_workload(workload(delay_jobs(("A", 100)), DELAY10),
                            options={"execute": {"w0!A": {"alloc": "0"}}, "call_me_later": [3.0, 50.0]})
    calls = [e["now"] for e in run.log if e["event"] == "requested_call"]
    assert calls == pytest.approx([3.0 + L, 50.0 + L], abs=1e-6)


def test_jobs_start_one_message_apart_and_no_more_jobs_notified(simulate_workload):
    run = simulate_workload(workload(delay_jobs(("A", 100), ("B", 100), ("C", 100)), DELAY10),
                            options={"execute": {f"w0!{n}": {"alloc": str(i)} for i, n in enumerate("ABC")}})
    starts = sorted(run.jobs["starting_time"])
    # All submitted at 3L. The three decisions, dated 3L, queue behind the
    # submitter's goodbye (3L-4L) and apply one message after another.
    assert starts == pytest.approx([5 * L, 6 * L, 7 * L], abs=1e-6)
    assert [e["event"] for e in run.log][:5] == ["begins", "submitted", "submitted", "submitted",
                                                 "no_more_static_jobs"]


def test_machine_states_and_idle_time(simulate_workload):
    run = simulate_workload(workload(delay_jobs(("A", 100), ("B", 100)), DELAY10, 4), platform=TINY,
                            options={"execute": {"w0!A": {"alloc": "0"}, "w0!B": {"alloc": "0", "at": 20}}})
    states = run.csv("machine_states")
    # tiny.xml has plain hosts: messages cost nothing; A runs 0-10, B 20-30 on host 0.
    assert list(states["nb_computing"]) == [1, 0, 1, 0]
    assert list(states["time"]) == pytest.approx([0, 10, 20, 30], abs=1e-6)
    schedule = run.csv("schedule")
    assert schedule.loc[0, "time_computing"] == pytest.approx(20.0)
    # Idle time counts only periods that ended with a job start (Batsim 4.2).
    assert schedule.loc[0, "time_idle"] == pytest.approx(10.0)


def test_mapping_runs_two_executors_on_one_host(simulate_workload):
    profiles = {"c": {"type": "parallel_homogeneous", "cpu": 1e10, "com": 0}}
    run = simulate_workload(workload([{"id": "A", "subtime": 0, "walltime": 100, "res": 2, "profile": "c"}],
                                     profiles, 4), platform=TINY,
                            options={"execute": {"w0!A": {"alloc": "0", "mapping": {"0": 0, "1": 0}}}})
    # Two executors of 1e10 flops each share host 0's 1 Gflop/s: 20 s.
    assert run.jobs.loc["A", "execution_time"] == pytest.approx(20.0, abs=1e-6)


def test_storage_mapping_and_data_staging(tmp_path, simulate_workload):
    platform = tmp_path / "two_storages.xml"
    platform.write_text("""<?xml version='1.0'?>
<!DOCTYPE platform SYSTEM "https://simgrid.org/simgrid.dtd">
<platform version="4.1"><zone id="z" routing="Full">
  <host id="master_host" speed="1Gf"/><host id="n0" speed="1Gf"/>
  <host id="s0" speed="1Gf"><prop id="role" value="storage"/></host>
  <host id="s1" speed="1Gf"><prop id="role" value="storage"/></host>
  <link id="l0" bandwidth="100MBps" latency="0"/><link id="l1" bandwidth="50MBps" latency="0"/>
  <route src="n0" dst="s0"><link_ctn id="l0"/></route>
  <route src="n0" dst="s1"><link_ctn id="l1"/></route>
  <route src="s0" dst="s1"><link_ctn id="l1"/></route>
</zone></platform>""")
    profiles = {"read": {"type": "parallel_homogeneous_pfs", "bytes_to_read": 1e9, "storage": "scratch"},
                "stage": {"type": "data_staging", "nb_bytes": 5e8, "from": "a", "to": "b"}}
    jobs = [{"id": "R", "subtime": 0, "walltime": 100, "res": 1, "profile": "read"},
            {"id": "S", "subtime": 100, "walltime": 100, "res": 1, "profile": "stage"}]
    run = simulate_workload(workload(jobs, profiles, 1), platform=platform, options={"execute": {
        "w0!R": {"alloc": "0", "storage_mapping": {"scratch": 2}},
        "w0!S": {"alloc": "0", "storage_mapping": {"a": 1, "b": 2}}}})
    assert run.jobs.loc["R", "execution_time"] == pytest.approx(1e9 / 50e6, abs=1e-6)  # s1 through l1
    assert run.jobs.loc["S", "execution_time"] == pytest.approx(5e8 / 50e6, abs=1e-6)
    io = run.csv("io")
    s1 = io[io["storage"] == "s1"]
    assert s1["read_bytes_per_s"].iloc[0] == pytest.approx(50e6)


def test_dynamic_jobs_are_acknowledged_and_run(simulate_workload):
    registrations = [{"at": 5, "profile": "p", "profile_def": {"type": "delay", "delay": 7},
                      "job": {"id": "dyn!1", "res": 1, "walltime": 100, "profile": "p"}, "last": True}]
    run = simulate_workload(workload(delay_jobs(("A", 100)), DELAY10), dynamic_jobs=True,
                            acknowledge_dynamic_jobs=True,
                            options={"execute": {"w0!A": {"alloc": "0"}, "dyn!1": {"alloc": "1"}},
                                     "register": registrations})
    jobs = run.jobs
    assert set(jobs["workload_name"]) == {"w0", "dyn"}
    dyn = jobs[jobs["workload_name"] == "dyn"].iloc[0]
    assert dyn["final_state"] == "COMPLETED_SUCCESSFULLY" and dyn["execution_time"] == pytest.approx(7)
    assert any(e["event"] == "submitted" and e["job"] == "dyn!1" for e in run.log)


def _register(at, job_id, profile, profile_def=None, last=False):
    return {"at": at, "profile": profile, "profile_def": profile_def, "last": last,
            "job": {"id": job_id, "res": 1, "walltime": 100, "profile": profile}}


# The scheduler's allocations of the static job A and the first dynamic job.
EXECUTE_A_DYN1 = {"w0!A": {"alloc": "0"}, "dyn!1": {"alloc": "1"}}


def test_a_profile_is_dropped_once_a_job_using_it_has_ended_as_in_batsim(simulate_workload):
    # Batsim 4.2.1 (Jobs::delete_job) drops an ended job's profile: a job
    # registered later on that name aborts Batsim ("... no longer accessible").
    registrations = [_register(1, "dyn!1", "p", {"type": "delay", "delay": 2}),
                     _register(10, "dyn!2", "p", last=True)]
    with pytest.raises(SchedulerError, match="job 'dyn!2' names profile 'p' of workload 'dyn'.*no longer"):
        simulate_workload(workload(delay_jobs(("A", 100)), DELAY10), dynamic_jobs=True,
                          acknowledge_dynamic_jobs=True, options={"execute": EXECUTE_A_DYN1, "register": registrations})


def test_a_dropped_profile_name_cannot_be_registered_again(simulate_workload):
    registrations = [_register(1, "dyn!1", "p", {"type": "delay", "delay": 2}),
                     _register(10, "dyn!2", "p", {"type": "delay", "delay": 3}, last=True)]
    with pytest.raises(SchedulerError, match="profile 'p' already exists in workload 'dyn'.*new name"):
        simulate_workload(workload(delay_jobs(("A", 100)), DELAY10), dynamic_jobs=True,
                          acknowledge_dynamic_jobs=True, options={"execute": EXECUTE_A_DYN1, "register": registrations})


def test_with_profile_reuse_a_later_job_may_name_an_ended_jobs_profile(simulate_workload):
    # With --enable-profile-reuse the second job may name the first one's profile.
    registrations = [_register(1, "dyn!1", "p", {"type": "delay", "delay": 2}),
                     _register(10, "dyn!2", "p", last=True)]
    execute = {**EXECUTE_A_DYN1, "dyn!2": {"alloc": "1"}}
    run = simulate_workload(workload(delay_jobs(("A", 100)), DELAY10), dynamic_jobs=True, profile_reuse=True,
                            acknowledge_dynamic_jobs=True, options={"execute": execute, "register": registrations})
    dyn = run.jobs[run.jobs["workload_name"] == "dyn"]
    assert list(dyn["execution_time"].round(6)) == [2.0, 2.0]


def test_extra_job_fields_and_profiles_are_forwarded(simulate_workload):
    jobs = delay_jobs(("A", 100))
    jobs[0]["app"] = "write8"
    run = simulate_workload(workload(jobs, DELAY10), forward_profiles=True,
                            options={"execute": {"w0!A": {"alloc": "0"}}})
    submitted = [e for e in run.log if e["event"] == "submitted"][0]
    assert submitted["data"] == {"id": "w0!A", "subtime": 0, "walltime": 100, "res": 1, "profile": "d",
                                 "app": "write8"}


def test_several_workloads_in_one_run(tmp_path):
    import json

    from conftest import SCRIPTED, Run

    from batio.engines.embedded.run import simulate
    from batio.inputs.spec import RunSpec
    paths = []
    for index, subtime in enumerate((0, 5)):
        path = tmp_path / f"w{index}.json"
        path.write_text(json.dumps(workload([{"id": "A", "subtime": subtime, "walltime": 100, "res": 1,
                                              "profile": "d"}], DELAY10)))
        paths.append(str(path))
    log = tmp_path / "log"
    simulate(RunSpec(str(TINY), paths, str(SCRIPTED), str(tmp_path / "out" / "out"), options={
        "log": str(log), "execute": {"w0!A": {"alloc": "0"}, "w1!A": {"alloc": "1"}}}))
    run = Run(tmp_path / "out" / "out", log)
    jobs = run.jobs
    assert sorted(zip(jobs["workload_name"], jobs["starting_time"].round(6))) == [("w0", 0.0), ("w1", 5.0)]
    events = [e["event"] for e in run.log]
    # NOTIFY comes once, after the last workload's jobs were submitted.
    assert events.index("no_more_static_jobs") > max(i for i, e in enumerate(events) if e == "submitted")


def test_job_metadata_reaches_jobs_csv(simulate_workload):
    run = simulate_workload(workload(delay_jobs(("A", 100)), DELAY10),
                            options={"execute": {"w0!A": {"alloc": "0"}}, "metadata": {"w0!A": "phase one"}})
    assert 'COMPLETED_SUCCESSFULLY' in run.text("jobs") and ',"phase one"' in run.text("jobs")


def test_compute_sharing_splits_a_host_and_storage_sharing_off_forbids_it(simulate_workload):
    profiles = {"c": {"type": "parallel_homogeneous", "cpu": 1e10, "com": 0}}
    jobs = [{"id": n, "subtime": 0, "walltime": 100, "res": 1, "profile": "c"} for n in "AB"]
    plan = {"execute": {"w0!A": {"alloc": "0"}, "w0!B": {"alloc": "0"}}}
    run = simulate_workload(workload(jobs, profiles, 4), platform=TINY, options=plan, compute_sharing=True)
    # Each ptask uses at most one core of host 0 (1 Gflop/s): sharing it, both take 20 s.
    assert list(run.jobs["execution_time"]) == pytest.approx([20.0, 20.0], abs=1e-6)
    from batio.errors import SchedulerError
    with pytest.raises(SchedulerError, match="compute sharing is off"):
        simulate_workload(workload(jobs, profiles, 4), platform=TINY, options=plan, compute_sharing=True,
                          storage_sharing=False)


def test_times_reach_the_scheduler_rounded_to_the_microsecond_as_batsim_writes_them(simulate_workload):
    # Batsim 4.2.1's protocol writer prints doubles with "%6f": a job
    # submitted at 10.1234567 is seen at 10.123457 plus the message's delay.
    jobs = [{"id": "A", "subtime": 10.1234567, "walltime": 100, "res": 1, "profile": "d"}]
    run = simulate_workload(workload(jobs, DELAY10), options={"execute": {"w0!A": {"alloc": "0"}}})
    seen = [e["now"] for e in run.log if e["event"] == "submitted"][0]
    assert seen == round(seen, 6) and abs(seen - (10.1234567 + L)) < 1e-6
