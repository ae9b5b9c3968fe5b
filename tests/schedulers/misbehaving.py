"""A pybatsim scheduler that misbehaves on purpose, to test how batio reports it.

Option "do" picks the misbehaviour; any other job is started on host 0 at once
(one job at a time), so that a well-formed run ends normally:
- "raise_in_init", "raise_in_begins": raise in the constructor / onSimulationBegins;
- "exit_in_callback": sys.exit(3) when a job is submitted;
- "loop_forever": an endless loop when a job is submitted;
- "call_me_later_forever": never starts a job, asks to be called 10 s later, forever;
- "reject_all": rejects every job;
- "raw": sends the events of option "events" (timestamps relative to now; a
  "job" field of data is the submitted job's id) when the first job is submitted,
  which is then queued like the others only if option "queue" is true;
- "many_calls": asks, in one reply, to be called "count" times (default 20,000),
  spread over now+"first" ... now+"first"+"span" (default now+1 s ... now+21 s), and
  runs the jobs normally; with option "threads_file", writes there how many threads
  its process has when the first call comes;
- "complete_running": starts the job, then CHANGE_JOB_STATE to COMPLETED_SUCCESSFULLY
  while it runs;
- "slow": sleeps "seconds" (wall clock) on each submission, and runs the jobs normally;
- "spawn": starts the command of option "command" when the simulation begins, as a
  child, or daemonised (double fork, its own session) with option "daemonise",
  and runs the jobs normally.
"""

import os
import subprocess
import sys
import time

from batsim.batsim import BatsimScheduler
from procset import ProcSet


class Misbehaving(BatsimScheduler):
    def __init__(self, options):
        super().__init__(options)
        self.do = self.options.get("do", "")
        if self.do == "raise_in_init":
            raise ValueError("misbehaving on purpose in __init__")
        self.queue = []
        self.running = None
        self.sent_raw = False

    def onSimulationBegins(self):
        if self.do == "raise_in_begins":
            raise ValueError("misbehaving on purpose in onSimulationBegins")
        if self.do == "spawn":
            command = self.options["command"]
            if not self.options.get("daemonise"):
                subprocess.Popen(command)
            elif os.fork() == 0:
                os.setsid()
                if os.fork() == 0:
                    os.execvp(command[0], command)
                os._exit(0)

    def onJobSubmission(self, job):
        if self.do == "exit_in_callback":
            sys.exit(3)
        if self.do == "loop_forever":
            while True:
                pass
        if self.do == "slow":
            time.sleep(self.options["seconds"])
        if self.do == "reject_all":
            self.bs.reject_jobs([job])
            return
        if self.do == "raw" and not self.sent_raw:
            self.sent_raw = True
            for event in self.options.get("events", []):
                data = dict(event.get("data", {}))
                if data.get("job") == "submitted":
                    del data["job"]
                    data["job_id"] = job.id
                self.bs._events_to_send.append({"timestamp": self.bs.time() + event["timestamp"],
                                                "type": event["type"], "data": data})
            if not self.options.get("queue"):
                return
        if self.do == "many_calls" and not self.sent_raw:
            self.sent_raw = True
            count = self.options.get("count", 20000)
            first, span = self.options.get("first", 1), self.options.get("span", 20)
            for index in range(count):
                self.bs.wake_me_up_at(self.bs.time() + first + span * index / count)
        self.queue.append(job)

    def onJobCompletion(self, job):
        self.running = None

    def onRequestedCall(self):
        if "threads_file" in self.options and not os.path.exists(self.options["threads_file"]):
            with open(self.options["threads_file"], "w") as threads:
                threads.write(str(len(os.listdir("/proc/self/task"))))

    def onNoMoreEvents(self):
        if self.do == "call_me_later_forever":
            self.bs.wake_me_up_at(self.bs.time() + 10)
            return
        if self.running is None and self.queue:
            job = self.queue.pop(0)
            job.allocation = ProcSet(*range(job.requested_resources))
            self.bs.execute_jobs([job])
            self.running = job
            if self.do == "complete_running":
                self.bs.change_job_state(job, job.State.COMPLETED_SUCCESSFULLY)
