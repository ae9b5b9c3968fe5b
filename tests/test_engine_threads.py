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
