"""The engine process uses the kernel's global futex hash (batio/engine/threads.py):
with Linux's small per-process hash, every live actor thread slowed every hand-over."""

import ctypes
import json

from conftest import workload
import pytest

PR_FUTEX_HASH, GET_SLOTS = 78, 2

PROBE = '''
import ctypes, json
from batsim.batsim import BatsimScheduler

class Probe(BatsimScheduler):
    def onSimulationBegins(self):
        slots = ctypes.CDLL(None, use_errno=True).prctl(78, 2, 0, 0, 0)
        with open(self.options["probe"], "w") as out:
            json.dump({"slots": slots}, out)

    def onJobSubmission(self, job):
        self.bs.reject_jobs([job])
'''


def _private_hash_slots():
    return ctypes.CDLL(None, use_errno=True).prctl(PR_FUTEX_HASH, GET_SLOTS, 0, 0, 0)


@pytest.mark.skipif(_private_hash_slots() < 0, reason="kernel before 6.16: no private futex hash to avoid")
def test_the_engine_process_uses_the_global_futex_hash(simulate_workload, tmp_path):
    assert _private_hash_slots() > 0  # what a process gets by default, the test runner included
    scheduler = tmp_path / "probe.py"
    scheduler.write_text(PROBE)
    probe = tmp_path / "probe.json"
    work = workload([{"id": "1", "subtime": 0, "walltime": 10, "res": 1, "profile": "p"}],
                    {"p": {"type": "delay", "delay": 1}})
    run = simulate_workload(work, scheduler=scheduler, options={"probe": str(probe)})
    assert json.loads(probe.read_text()) == {"slots": 0}  # 0: the global hash
    assert run.jobs["final_state"].tolist() == ["REJECTED"]


COUNTER = '''
import json
from batsim.batsim import BatsimScheduler
from procset import ProcSet

def _status(field):
    with open("/proc/self/status") as status:
        return int(next(line.split()[1] for line in status if line.startswith(field + ":")))

class Counter(BatsimScheduler):
    """Starts each job at once on host 0; notes the engine process's threads
    and memory mappings at every submission."""
    def onSimulationBegins(self):
        self.samples = []

    def onJobSubmission(self, job):
        with open("/proc/self/maps") as maps:
            self.samples.append((_status("Threads"), sum(1 for _ in maps)))
        job.allocation = ProcSet(0)
        self.bs.execute_jobs([job])

    def onJobCompletion(self, job):
        pass

    def onNoMoreEvents(self):
        pass

    def onSimulationEnds(self):
        with open(self.options["probe"], "w") as out:
            json.dump(self.samples, out)
'''


def test_threads_and_mappings_follow_the_running_jobs_not_the_finished_ones(simulate_workload, tmp_path):
    """Every job is an actor, hence an OS thread with a mapped stack. A job
    ends before the next arrives, so at most one runs at once: what the
    process holds must stay flat over 600 jobs, not grow with each finished
    one (a whole trace day would then pass Linux's default vm.max_map_count)."""
    scheduler = tmp_path / "counter.py"
    scheduler.write_text(COUNTER)
    probe = tmp_path / "probe.json"
    jobs = [{"id": str(i), "subtime": 2 * i, "walltime": 10, "res": 1, "profile": "p"} for i in range(600)]
    run = simulate_workload(workload(jobs, {"p": {"type": "delay", "delay": 1}}), scheduler=scheduler,
                            options={"probe": str(probe)})
    assert (run.jobs["final_state"] == "COMPLETED_SUCCESSFULLY").all()
    samples = json.loads(probe.read_text())
    assert len(samples) == 600
    threads, mappings = zip(*samples)
    # After the first hundred jobs (warm-up: allocator arenas, libraries), nothing grows.
    assert max(threads[100:]) <= max(threads[:100]) + 2, threads
    assert max(mappings[100:]) <= max(mappings[:100]) + 8, (mappings[100], mappings[-1])
