"""The ends of delay jobs, from one actor and one SimGrid sleep instead of one actor and sleep per job.

Why: under ptask_L07 (Batsim's model) every sleep is an action of the
sharing model, which SimGrid visits at every step of the simulation, and a
job's actor is an OS thread under the Python bindings. With a thousand delay
jobs running, those visits and the threads' creation and hand-overs were
most of a run's time (docs/performance.md).

What stays as in Batsim, so that job times do not change:

- the dates: a job whose profile is a ``delay`` ends ``delay`` seconds (or its
  walltime, if shorter) after it started, and SimGrid ends in one step every
  sleep whose remaining time falls below its timing precision: so do the
  due ends here (``TIMING_PRECISION``);
- the grouping: Batsim's job actors whose sleeps end in one step are woken
  in one scheduling round, in the order their sleeps began, and post their
  JOB_COMPLETED before the server, which needs a message's latency to take
  the first, can see an empty mailbox. This actor posts every end of the
  step, in that order, at that same simulated instant, before it sleeps
  again: the server then finds them together in its mailbox and the
  scheduler is called once, with them in Batsim's order;
- the messages' route: each JOB_COMPLETED leaves from the job's first host,
  as its actor's would, so it takes the same simulated time to reach the
  server. SimGrid routes a mailbox message from its sender's host when the
  receiver takes it, which may be after its sender moved on: so one poster
  actor per host sends the ends of the jobs that started on it, woken in
  the step's order, each doing what Batsim's job actor does after its sleep.
  Two jobs ending together on one host (compute sharing) would post in
  another order: that case keeps a job actor each (``applies``).
"""

from collections import deque
import heapq
import math

import simgrid as sg

from batio.engines.embedded.execution import WALLTIME_REACHED

# SimGrid 3.32's surf/precision (sg_surf_precision): a sleep whose remaining
# duration falls below it ends in the current step (Action::update_max_duration).
TIMING_PRECISION = 1e-9


def applies(profile, config):
    """Whether a job of this profile ends from ``DelayEnds``: a delay, on hosts no other job shares."""
    return profile["type"] == "delay" and not (config.compute_sharing and config.storage_sharing) \
        and not config.delays_in_model


class DelayEnds:
    """The pending ends of the running delay jobs, the actor that wakes when they are due,
    and a poster actor per host that posts them."""

    def __init__(self, sim):
        self.sim = sim
        self._pending = []  # heap of (end date, order begun, record, return code)
        self._begun = 0
        self._cancelled = set()  # job ids killed before their end
        self._earlier = sg.Semaphore(0)  # released when an end comes before the date slept until
        self._sleeping_until = None
        self._actor = None
        self._posters = {}  # host name -> (its queue of (record, code), its semaphore)

    def begin(self, record, delay, ret):
        """Job ``record`` (just started) ends after ``delay`` seconds with code ``ret``, or
        at its walltime, if sooner, as Batsim's ``do_delay_task`` decides."""
        walltime = record.job.walltime if record.job.has_walltime else math.inf
        duration, code = (delay, ret) if delay < walltime else (walltime, WALLTIME_REACHED)
        record.execution.delay_started = sg.Engine.clock
        end = sg.Engine.clock + duration
        heapq.heappush(self._pending, (end, self._begun, record, code))
        self._begun += 1
        host = record.execution.hosts[0]
        # A SimGrid call where Batsim's server creates the job's actor: the server then
        # reaches its next message in the same scheduling round as Batsim's.
        called = False
        if self._actor is None:
            self._actor = self.sim.spawn("delay ends", self.sim.master, self._wake_when_due)
            called = True
        if host.name not in self._posters:
            self._posters[host.name] = (deque(), sg.Semaphore(0))
            self.sim.spawn(f"delay ends of {host.name}", host, self._post, *self._posters[host.name])
            called = True
        if self._sleeping_until is not None and end < self._sleeping_until:
            self._sleeping_until = None
            self._earlier.release()
        elif not called:
            sg.this_actor.yield_()

    def cancel(self, record):
        """Job ``record`` was killed: its end is not posted."""
        self._cancelled.add(record.job.id)

    def _wake_when_due(self):
        sg.Actor.self().daemonize()  # it waits for ends forever: it must not hold the simulation's end
        while True:
            if not self._pending:
                self._sleeping_until = math.inf
                self._earlier.acquire()
                continue
            date = self._pending[0][0]
            if date - sg.Engine.clock >= TIMING_PRECISION:
                self._sleeping_until = date
                woken_early = not self._earlier.acquire_timeout(date - sg.Engine.clock)
                self._sleeping_until = None
                if woken_early:
                    continue
            due = []
            while self._pending and self._pending[0][0] - sg.Engine.clock < TIMING_PRECISION:
                _, begun, record, code = heapq.heappop(self._pending)
                if record.job.id in self._cancelled:
                    self._cancelled.discard(record.job.id)
                else:
                    due.append((begun, record, code))
            # SimGrid ends the sleeps of one step in the order they began.
            for _, record, code in sorted(due, key=lambda entry: entry[0]):
                queue, ready = self._posters[record.execution.hosts[0].name]
                queue.append((record, code))
                ready.release()

    def _post(self, queue, ready):
        """A host's poster: what Batsim's job actor does once its sleep ends."""
        sg.Actor.self().daemonize()
        while True:
            ready.acquire()
            record, code = queue.popleft()
            # Killed in the instant of its end, before its actor ran: Batsim's killer ends that actor.
            if record.job.id in self._cancelled:
                self._cancelled.discard(record.job.id)
            else:
                self.sim.delay_ended(record, code)
