"""A pybatsim scheduler that follows a script, to test the engine.

Options (all optional):
- "execute": {job_id: {"alloc": "0-1", "at": t, "storage_mapping": {...}, "mapping": {...}}}
  starts the job at the first decision at or after t (CALL_ME_LATER is used to get there);
- "reject": [job_id, ...] rejects them on submission;
- "kill": {job_id: t} kills the job at t;
- "call_me_later": [t, ...];
- "register": [{"profile": name, "profile_def": {...}, "job": {...}, "at": t}] (dynamic jobs);
- "metadata": {job_id: text} sets the job's metadata when it starts;
- "crash_on": job_id raises when that job is submitted; "stall_on": job_id sleeps 30 s;
- "log": a path where every callback is appended as a JSON line.
"""

import json
import time

from batsim.batsim import BatsimScheduler
from procset import ProcSet


class Scripted(BatsimScheduler):
    def __init__(self, options):
        super().__init__(options)
        self.plan = self.options.get("execute", {})
        self.kills = dict(self.options.get("kill", {}))
        self.registrations = list(self.options.get("register", []))
        self.waiting = {}
        self.log_path = self.options.get("log")

    def log(self, **entry):
        if self.log_path:
            with open(self.log_path, "a") as stream:
                stream.write(json.dumps(dict(entry, now=self.bs.time())) + "\n")

    def onSimulationBegins(self):
        self.log(event="begins", compute=self.bs.compute_resources, storage=self.bs.storage_resources)
        for date in self.options.get("call_me_later", []):
            self.bs.wake_me_up_at(date)
        for date in sorted(set(self.kills.values()) | {r["at"] for r in self.registrations}):
            self.bs.wake_me_up_at(date)
        if self.registrations and not self.bs.dynamic_job_registration_enabled:
            raise RuntimeError("registrations need dynamic jobs")

    def onJobSubmission(self, job):
        self.log(event="submitted", job=job.id, data=job.json_dict)
        if job.id == self.options.get("crash_on"):
            raise RuntimeError(f"scripted crash on {job.id}")
        if job.id == self.options.get("stall_on"):
            time.sleep(30)
        if job.id in self.options.get("reject", []):
            self.bs.reject_jobs([job])
        elif job.id in self.plan:
            self.waiting[job.id] = job
            at = self.plan[job.id].get("at", 0)
            if at > self.bs.time():
                self.bs.wake_me_up_at(at)

    def onJobCompletion(self, job):
        self.log(event="completed", job=job.id, state=job.job_state.name, return_code=job.return_code)

    def onJobsKilled(self, jobs):
        self.log(event="killed", jobs=[j.id for j in jobs], progress={j.id: j.progress for j in jobs})

    def onRequestedCall(self):
        self.log(event="requested_call")

    def onNoMoreJobsInWorkloads(self):
        self.log(event="no_more_static_jobs")

    def onNoMoreEvents(self):
        now = self.bs.time()
        for job_id, job in list(self.waiting.items()):
            step = self.plan[job_id]
            if step.get("at", 0) <= now:
                job.allocation = ProcSet.from_str(step["alloc"])
                if "storage_mapping" in step:
                    job.storage_mapping = step["storage_mapping"]
                if "mapping" in step:
                    job.mapping = step["mapping"]
                self.bs.execute_jobs([job])
                if job_id in self.options.get("metadata", {}):
                    self.bs.set_job_metadata(job_id, self.options["metadata"][job_id])
                del self.waiting[job_id]
        due = [job_id for job_id, date in self.kills.items() if date <= now]
        if due:
            self.bs.kill_jobs([self.bs.jobs[job_id] for job_id in due])
            for job_id in due:
                del self.kills[job_id]
        for registration in [r for r in self.registrations if r["at"] <= now]:
            self.registrations.remove(registration)
            if registration.get("profile_def"):
                self.bs.register_profiles("dyn", {registration["profile"]: registration["profile_def"]})
            job = registration["job"]
            self.bs.register_job(job["id"], job["res"], job["walltime"], job["profile"])
            if registration.get("last"):
                self.bs.notify_registration_finished()
